"""FileStore specifics: root escapes, atomic writes, listing hygiene, locking, coalesced reads."""

from __future__ import annotations

import errno
import itertools
import multiprocessing
import os
import pickle
import shutil
import threading
import time

import pytest
from _forked import in_child

from zarrkit.errors import InvalidKeyError, ReadOnlyError, SpecError, StoreError
from zarrkit.kvstore import ByteRange, FileStore, _file_batch


@pytest.fixture
def root(tmp_path):
    return tmp_path / "root"


@pytest.fixture
def store(root):
    return FileStore(root)


@pytest.fixture(params=["set", "replace", "replace_many"])
def put(request, store):
    """Each way a whole value is written: `set`, `replace` (which also takes the lock) and a
    batch of one (`replace_many`: its own directory handling and range locks)."""
    if request.param == "replace_many":
        return lambda key, value: store.replace_many([key], [value])
    return getattr(store, request.param)


@pytest.fixture
def outside(tmp_path):
    """A directory next to the root, holding a secret that must stay untouched."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret").write_bytes(b"secret")
    return path


def _tree(path) -> list[str]:
    """Every file and directory below `path`, relative, sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            found.append(os.path.relpath(os.path.join(dirpath, name), path))
    return sorted(found)


def _data_tree(path) -> list[str]:
    """`_tree` without the lock files (made by `replace`, which locks)."""
    return [p for p in _tree(path) if not p.startswith(".zarrkit-locks")]


# -- layout --------------------------------------------------------------------------------
def test_keys_are_plain_files(store, root):
    store.set("a/b/c", b"abc")
    assert (root / "a" / "b" / "c").read_bytes() == b"abc"
    (root / "x").mkdir()
    (root / "x" / "y").write_bytes(b"external")
    assert store.get("x/y") == b"external"


def test_to_json_and_repr(store, root):
    assert store.to_json() == {"driver": "file", "path": str(root) + "/"}
    assert str(root) in repr(store)


def test_relative_root_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = FileStore("rel")
    assert store.root == str(tmp_path / "rel")


def test_directory_key_reads_as_missing(store):
    store.set("a/b", b"1")
    assert store.get("a") is None
    assert store.get("a", ByteRange(0, 1)) is None
    assert not store.exists("a") and store.size("a") is None
    store.delete("a")  # a directory is not a value: nothing happens
    assert store.get("a/b") == b"1"


def test_writing_over_a_directory_fails_cleanly(store, root):
    store.set("a/b", b"1")
    with pytest.raises(StoreError, match="'a'"):
        store.set("a", b"x")
    assert _tree(root) == ["a", "a/b"]


def test_writing_below_a_value_fails_cleanly(store, root, put):
    store.set("a", b"1")
    with pytest.raises(StoreError):
        put("a/b", b"x")
    assert _data_tree(root) == ["a"]


def test_lock_dir_is_reserved(store, put):
    with pytest.raises(InvalidKeyError):
        put(".zarrkit-locks/x", b"1")
    with pytest.raises(InvalidKeyError):
        store.delete(".zarrkit-locks/keys.lock")
    with pytest.raises(InvalidKeyError):
        store.replace(".zarrkit-locks/keys.lock", None)
    with pytest.raises(InvalidKeyError):
        store.get(".zarrkit-locks")
    store.set(".zarrkit-locksmith", b"ok")  # only the exact segment is reserved
    assert store.get(".zarrkit-locksmith") == b"ok"


def test_fifo_is_not_a_value_and_does_not_block(store, root):
    root.mkdir()
    os.mkfifo(root / "pipe")
    assert store.get("pipe") is None
    assert list(store.list_prefix("")) == []


# -- escaping the root ---------------------------------------------------------------------
@pytest.mark.parametrize("key", ["../outside/secret", "/abs/secret", "a\\..\\..\\outside",
                                 "x\x00y", "a/./b"])
def test_lexical_escapes_refused(store, root, outside, key, strategy):
    for op in (lambda: store.get(key), lambda: store.set(key, b"pwned"),
               lambda: store.delete(key), lambda: store.size(key)):
        with pytest.raises(InvalidKeyError):
            op()
    assert _tree(outside) == ["secret"]
    assert (outside / "secret").read_bytes() == b"secret"
    assert not root.exists()


@pytest.fixture
def dir_link(root, outside):
    root.mkdir()
    os.symlink(outside, root / "link")
    return root / "link"


def test_directory_symlink_outside_refused_for_reads(store, dir_link, outside, strategy):
    with pytest.raises(InvalidKeyError, match="outside"):
        store.get("link/secret")
    with pytest.raises(InvalidKeyError):
        store.get("link/secret", ByteRange(0, 2))
    with pytest.raises(InvalidKeyError):
        store.get_many([("link/secret", ByteRange(0, 1)), ("link/secret", ByteRange(1, 1))])
    with pytest.raises(InvalidKeyError):
        store.exists("link/secret")
    with pytest.raises(InvalidKeyError):
        store.size("link/secret")


def test_directory_symlink_outside_refused_for_writes(store, dir_link, outside, strategy, put):
    for key in ("link/new", "link/secret", "link/deep/er/new"):
        with pytest.raises(InvalidKeyError):
            put(key, b"pwned")
    with pytest.raises(InvalidKeyError):
        store.delete("link/secret")
    with pytest.raises(InvalidKeyError):
        store.delete_prefix("link/")
    assert _tree(outside) == ["secret"]
    assert (outside / "secret").read_bytes() == b"secret"


def test_directory_symlink_outside_hidden_from_listing(store, dir_link, strategy):
    store.set("real", b"1")
    assert list(store.list_prefix("")) == ["real"]
    assert store.list_dir("") == (["real"], [])
    with pytest.raises(InvalidKeyError):
        list(store.list_prefix("link/"))


def test_file_symlink_outside_refused(store, root, outside, strategy, put):
    root.mkdir()
    os.symlink(outside / "secret", root / "alias")
    with pytest.raises(InvalidKeyError):
        store.get("alias")
    assert list(store.list_prefix("")) == []
    put("alias", b"replaced")  # replaces the link itself, never writes through it
    assert (outside / "secret").read_bytes() == b"secret"
    assert store.get("alias") == b"replaced"


def test_symlinks_inside_root_are_followed(store, root, strategy, put):
    store.set("real/x", b"1")
    os.symlink(root / "real", root / "alias")
    os.symlink("real/x", root / "xlink")  # relative link
    assert store.get("alias/x") == b"1"
    assert store.get("xlink") == b"1"
    put("alias/y", b"2")
    assert (root / "real" / "y").read_bytes() == b"2"
    assert sorted(store.list_prefix("")) == ["alias/x", "alias/y", "real/x", "real/y", "xlink"]


def test_symlink_loop_does_not_hang_listing(store, root):
    store.set("a/x", b"1")
    os.symlink(root, root / "a" / "up")  # a/up -> root
    os.symlink(root / "a", root / "a" / "self")
    assert sorted(store.list_prefix("")) == ["a/x"]


# -- atomic writes -------------------------------------------------------------------------
def _failing(exc_type):
    def fail(*args, **kwargs):
        raise exc_type("injected failure")
    return fail


@pytest.fixture
def per_value(monkeypatch):
    """Values written one by one in Python: the failures these tests inject into `os` calls do
    not reach the C batches (test_file_batches.py fails those for real)."""
    monkeypatch.setattr(_file_batch, "AVAILABLE", False)


@pytest.mark.parametrize("target,exc_type", [
    ("replace", OSError), ("replace", KeyboardInterrupt), ("write", OSError),
    ("close", OSError),
])
def test_failed_write_keeps_old_value_and_no_temp(store, root, monkeypatch, target, exc_type,
                                                  strategy, put, per_value):
    store.set("d/k", b"old value")
    if target == "write":
        real_write = os.write

        def half_write(fd, data):
            real_write(fd, bytes(data)[:3])
            raise exc_type("disk full")
        monkeypatch.setattr(os, "write", half_write)
    elif target == "close":
        real_close = os.close

        def close_fails_for_temp(fd):
            is_temp = ".partial" in os.readlink(f"/proc/self/fd/{fd}")
            real_close(fd)
            if is_temp:
                raise exc_type("close failed")
        monkeypatch.setattr(os, "close", close_fails_for_temp)
    else:
        monkeypatch.setattr(os, target, _failing(exc_type))
    with pytest.raises(exc_type):
        put("d/k", b"new value that must not appear")
    monkeypatch.undo()
    assert store.get("d/k") == b"old value"
    assert _data_tree(root) == ["d", "d/k"]


def test_failed_first_write_leaves_no_file(store, root, monkeypatch, strategy, put, per_value):
    monkeypatch.setattr(os, "replace", _failing(OSError))
    with pytest.raises(OSError):
        put("k", b"v")
    monkeypatch.undo()
    assert store.get("k") is None
    assert _data_tree(root) == []


def test_write_errors_are_store_errors_naming_the_key(store, monkeypatch, strategy, put,
                                                      per_value):
    monkeypatch.setattr(os, "replace", _failing(PermissionError))
    with pytest.raises(StoreError, match="'some/key'"):
        put("some/key", b"v")


def test_new_files_get_the_usual_permissions(store, root, strategy, put):
    umask = os.umask(0o022)
    try:
        put("a/b/c", b"v")
        put("top", b"v")
    finally:
        os.umask(umask)
    for path in (root / "a" / "b" / "c", root / "top"):
        assert os.stat(path).st_mode & 0o777 == 0o644


def test_temp_files_hidden_but_dot_keys_listed(store, root):
    store.set(".zattrs", b"{}")
    store.set("a/.zarray", b"{}")
    (root / "a" / ".0.0123456789abcdef.partial").write_bytes(b"half")  # a crashed writer's temp
    (root / ".zattrs.fedcba9876543210.partial").write_bytes(b"half")
    assert sorted(store.list_prefix("")) == [".zattrs", "a/.zarray"]
    assert store.list_dir("") == ([".zattrs"], ["a"])
    assert store.list_dir("a/") == ([".zarray"], [])


def _aged(path, seconds=7200):
    """`path` with its modification time set `seconds` back (the link's own, for a link)."""
    when = time.time() - seconds
    os.utime(path, (when, when), follow_symlinks=False)
    return path


def _file(path, data=b"half"):
    path.write_bytes(data)
    return path


def test_remove_temp_files_deletes_only_old_temp_files(store, root, outside):
    store.set("zarr.json", b"{}")
    store.set("c/0/1", b"chunk")
    store.set("c/0/.2", b"a dot key")
    old = [_aged(_file(root / ".zarr.json.0123456789abcdef.partial")),  # killed writers' temps
           _aged(_file(root / "c" / "0" / ".1.fedcba9876543210.partial"))]
    young = _file(root / "c" / ".0.00000000000000aa.partial")  # maybe a write in progress
    not_temp = [_aged(root / "c" / "0" / ".2"),  # a key whose name starts with a dot
                _aged(_file(root / "c" / ".x.0123456789abcdef.partial.bak"))]
    temp_dir = root / ".d.0123456789abcdef.partial"  # a directory, not a temp file
    temp_dir.mkdir()
    _aged(temp_dir)
    _aged(_file(outside / ".s.0123456789abcdef.partial"))  # reachable only through a link
    (root / "link").symlink_to(outside, target_is_directory=True)
    link = root / "c" / ".l.0123456789abcdef.partial"  # a link with a temp file's name
    link.symlink_to(outside / "secret")
    _aged(link)
    with store.lock("c/0/1"):  # makes the lock directory, which is skipped
        pass
    assert store.remove_temp_files() == [".zarr.json.0123456789abcdef.partial",
                                         "c/0/.1.fedcba9876543210.partial"]
    assert not any(p.exists() for p in old)
    assert young.exists() and temp_dir.is_dir() and link.is_symlink()
    assert all(p.exists() for p in not_temp)
    assert (outside / ".s.0123456789abcdef.partial").exists()
    assert (outside / "secret").read_bytes() == b"secret"
    assert sorted(store.list_prefix("")) == ["c/.x.0123456789abcdef.partial.bak", "c/0/.2",
                                             "c/0/1", "zarr.json"]
    assert store.get("c/0/1") == b"chunk"
    assert store.remove_temp_files(older_than=0) == ["c/.0.00000000000000aa.partial"]
    assert store.remove_temp_files(older_than=0) == []


@pytest.mark.parametrize("bad", [-1, float("nan"), "60", True, None])
def test_remove_temp_files_refuses_bad_ages(store, bad):
    with pytest.raises(SpecError, match="older_than"):
        store.remove_temp_files(bad)


def test_remove_temp_files_needs_a_writable_store(tmp_path):
    (tmp_path / ".0.0123456789abcdef.partial").write_bytes(b"half")
    with pytest.raises(ReadOnlyError):
        FileStore(tmp_path, read_only=True).remove_temp_files(0)
    assert (tmp_path / ".0.0123456789abcdef.partial").exists()


def test_long_key_segment_writes(store):
    key = "x" * 250
    store.set(key, b"1")
    assert store.get(key) == b"1"
    assert list(store.list_prefix("")) == [key]


def test_fsync_option(root, monkeypatch, per_value):
    calls = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real_fsync(fd)))
    FileStore(root).set("a", b"1")
    assert calls == []
    FileStore(root, fsync=True).set("b", b"2")
    assert len(calls) == 2  # the file, then its directory (so the rename is durable)


def test_large_value_roundtrip(store):
    value = os.urandom(3 << 20)
    store.set("big", memoryview(value))
    assert store.get("big") == value
    assert store.get("big", ByteRange((3 << 20) - 5)) == value[-5:]


# -- deleting ------------------------------------------------------------------------------
def test_delete_prunes_empty_dirs_but_keeps_root(store, root):
    store.set("a/b/c/d", b"1")
    store.set("a/x", b"2")
    store.delete("a/b/c/d")
    assert _tree(root) == ["a", "a/x"]
    store.delete("a/x")
    assert root.is_dir() and _tree(root) == []


def test_delete_prefix_keeps_root_and_locks(store, root):
    store.set("a/b", b"1")
    store.set("c", b"2")
    with store.lock("c"):
        pass
    store.delete_prefix("a/")
    assert sorted(p for p in _tree(root) if not p.startswith(".zarrkit-locks/")) == [
        ".zarrkit-locks", "c"]
    store.delete_prefix("")
    assert root.is_dir()
    assert [p for p in _tree(root) if not p.startswith(".zarrkit-locks/")] == [".zarrkit-locks"]


def test_delete_prefix_removes_empty_leftover_dirs(store, root):
    store.set("a/b/k", b"1")
    (root / "a" / "empty" / "deeper").mkdir(parents=True)
    store.delete_prefix("a/")
    assert _tree(root) == []


def test_concurrent_delete_and_set_in_same_directory(store):
    errors = []

    def setter(n: int) -> None:
        try:
            for i in range(150):
                store.set(f"d/e/{n}-{i}", b"x")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def deleter() -> None:
        for _ in range(300):
            for key in list(store.list_prefix("d/")):
                store.delete(key)

    threads = [threading.Thread(target=setter, args=(n,)) for n in range(3)]
    threads.append(threading.Thread(target=deleter))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    store.set("d/e/final", b"ok")
    assert store.get("d/e/final") == b"ok"


def test_a_directory_removed_while_another_writer_makes_it_is_made_again(store, root,
                                                                        monkeypatch):
    """os.makedirs raises FileExistsError when its mkdir finds the directory (another writer
    made it) and a concurrent delete removes it before its check: the write makes it again."""
    real, raced = os.makedirs, []

    def racing(path, exist_ok=False):
        if not raced:
            raced.append(path)
            raise FileExistsError(errno.EEXIST, "File exists", path)
        real(path, exist_ok=exist_ok)

    monkeypatch.setattr(os, "makedirs", racing)
    store.set("d/e/k", b"v")
    assert raced and store.get("d/e/k") == b"v"
    (root / "f").write_bytes(b"a file where a directory must be")
    with pytest.raises(StoreError, match="'f/k'"):
        store.set("f/k", b"v")


# -- read-only -----------------------------------------------------------------------------
def test_read_only_creates_nothing(tmp_path):
    root = tmp_path / "missing"
    store = FileStore(root, read_only=True)
    assert store.get("a") is None and store.get("a/b", ByteRange(0, 1)) is None
    assert list(store.list_prefix("")) == [] and store.list_dir("") == ([], [])
    assert store.get_many([("a", None), ("a", ByteRange(0, 1))]) == [None, None]
    with pytest.raises(ReadOnlyError):
        store.set("a", b"1")
    with pytest.raises(ReadOnlyError):
        store.lock("a")
    with pytest.raises(ReadOnlyError):
        store.delete_prefix("")
    assert not root.exists()
    assert os.listdir(tmp_path) == []


# -- get_many ------------------------------------------------------------------------------
@pytest.fixture
def pread_calls(monkeypatch):
    calls: list[tuple[int, int]] = []
    real, real_v = os.pread, os.preadv

    def counting(fd, n, offset):
        calls.append((offset, n))
        return real(fd, n, offset)

    def counting_v(fd, buffers, offset):
        calls.append((offset, sum(memoryview(b).nbytes for b in buffers)))
        return real_v(fd, buffers, offset)
    monkeypatch.setattr(os, "pread", counting)
    monkeypatch.setattr(os, "preadv", counting_v)
    return calls


def test_get_transient_reuses_a_thread_buffer_for_large_values(store):
    big = bytes(range(256)) * 1024
    store.set("a", big)
    store.set("b", big[::-1])
    store.set("small", b"tiny")
    first = store.get_transient("a")
    assert bytes(first) == big and isinstance(first, memoryview)
    second = store.get_transient("b")
    assert bytes(second) == big[::-1] and second.obj is first.obj  # the same memory, reused
    assert type(store.get_transient("small")) is bytes  # small values: a plain read is cheaper
    other: list = []
    thread = threading.Thread(target=lambda: other.append(store.get_transient("a")))
    thread.start()
    thread.join()
    assert bytes(other[0]) == big and other[0].obj is not first.obj  # one buffer per thread


def test_get_many_coalesces_nearby_ranges(store, pread_calls):
    value = os.urandom(100_000)
    store.set("shard", value)
    ranges = [ByteRange(i * 1000 + 10, 900) for i in range(20)] + [ByteRange.suffix(16)]
    pread_calls.clear()
    got = store.get_many([("shard", r) for r in ranges])
    assert got == [r.slice_of(value) for r in ranges]
    # 20 ranges with 100-byte gaps -> one read; the far-away suffix -> a second read
    assert pread_calls == [(10, 19_900), (100_000 - 16, 16)]


def test_get_many_transient_reuses_a_thread_buffer(store, pread_calls):
    value = os.urandom(50_000)
    store.set("shard", value)
    ranges = [ByteRange(0, 1000), ByteRange(1000, 500), ByteRange(40_000, 100)]
    first = store.get_many_transient([("shard", r) for r in ranges])
    assert [bytes(b) for b in first] == [r.slice_of(value) for r in ranges]
    assert len(pread_calls) == 2  # still coalesced
    store.set("other", bytes(2000))
    second = store.get_many_transient([("other", ByteRange(0, 1000)), ("other", ByteRange(1000, 10))])
    assert bytes(second[0]) == bytes(1000)
    assert bytes(first[0]) == bytes(1000)  # the same memory: consumed before the next read
    # plain get_many results are the caller's to keep
    kept = store.get_many([("shard", r) for r in ranges])
    store.get_many([("other", ByteRange(0, 1000)), ("other", ByteRange(1000, 10))])
    assert [bytes(b) for b in kept] == [r.slice_of(value) for r in ranges]


def test_get_many_keeps_far_ranges_separate(store, pread_calls):
    value = os.urandom(50_000)
    store.set("shard", value)
    pread_calls.clear()
    got = store.get_many([("shard", ByteRange(40_000, 10)), ("shard", ByteRange(0, 10)),
                          ("shard", ByteRange(10_000, 10))])
    assert got == [value[40_000:40_010], value[:10], value[10_000:10_010]]
    assert sorted(pread_calls) == [(0, 10), (10_000, 10), (40_000, 10)]


def test_get_many_mixed_keys(store):
    store.set("a", b"0123456789")
    store.set("b", b"abcdef")
    got = store.get_many([("a", ByteRange(1, 2)), ("b", None), ("a", ByteRange.suffix(3)),
                          ("nope", ByteRange(0, 1)), ("nope", None), ("a", ByteRange(20))])
    assert got == [b"12", b"abcdef", b"789", None, None, b""]


# -- locking -------------------------------------------------------------------------------
def _increment_worker(root: str, count: int) -> None:
    store = FileStore(root)
    for _ in range(count):
        with store.lock("counter"):
            value = int(store.get("counter"))
            time.sleep(0.0002)  # widen the race window: without the lock updates are lost
            store.set("counter", str(value + 1).encode())


def test_lock_excludes_other_processes(store, root):
    store.set("counter", b"0")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_increment_worker, args=(str(root), 200)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert store.get("counter") == b"400"


def test_lock_excludes_threads_and_processes_together(store, root):
    store.set("counter", b"0")
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_increment_worker, args=(str(root), 100))
    proc.start()
    threads = [threading.Thread(target=_increment_worker, args=(str(root), 50)) for _ in range(2)]
    threads.append(threading.Thread(target=_increment_worker, args=(store.root, 50)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    proc.join(120)
    assert proc.exitcode == 0
    assert store.get("counter") == b"250"


def test_lock_is_hidden_and_released(store, root):
    with store.lock("a/b"):
        assert (root / ".zarrkit-locks").is_dir()
    assert list(store.list_prefix("")) == [] and store.list_dir("") == ([], [])
    with pytest.raises(RuntimeError):
        with store.lock("a/b"):
            raise RuntimeError("boom")
    acquired = threading.Event()

    def other() -> None:
        with store.lock("a/b"):
            acquired.set()
    t = threading.Thread(target=other)
    t.start()
    t.join(10)
    assert acquired.is_set()  # released after the exception


def test_lock_blocks_while_held(store):
    entered = threading.Event()

    def other() -> None:
        with store.lock("k"):
            entered.set()
    with store.lock("k"):
        t = threading.Thread(target=other)
        t.start()
        assert not entered.wait(0.2)
    assert entered.wait(10)
    t.join()


def _lock_and_report(root: str, key: str, conn) -> None:
    store = FileStore(root)
    conn.send("trying")
    with store.lock(key):
        conn.send(time.monotonic())


def _held_while_other_process_locks(store, root, key: str, hold) -> tuple[float, float]:
    """(when `hold` stopped holding, when another process got `key`'s lock). `hold(wait)` holds
    its locks, calls `wait()` (which returns once the other process is trying), then lets go."""
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=_lock_and_report, args=(str(root), key, theirs))
    proc.start()
    try:
        def wait() -> None:
            assert ours.poll(60) and ours.recv() == "trying"
            time.sleep(0.5)  # the other process is blocked on the lock (or got it) by now
        released = hold(wait)
        assert ours.poll(60)
        return released, ours.recv()
    finally:
        proc.join(60)


def _batch_holding_run(store, keys: list[str]):
    def hold(wait) -> float:
        stamps = []

        def values():
            for i, key in enumerate(keys):
                if i == len(keys) - 1:
                    wait()
                    stamps.append(time.monotonic())
                yield key.encode()
        store.replace_many(keys, values())
        return stamps[0]
    return hold


def test_replace_many_run_lock_excludes_other_processes(store, root):
    keys = [f"c/0/{i}" for i in range(8)]
    released, got = _held_while_other_process_locks(store, root, "c/0/5", _batch_holding_run(
        store, keys))
    assert got > released  # c/0/5 was locked by the batch while it wrote c/0/7
    assert [store.get(k) for k in keys] == [k.encode() for k in keys]


def test_replace_many_run_lock_covers_only_its_keys(store, root):
    keys = [f"c/0/{i}" for i in range(8)]
    released, got = _held_while_other_process_locks(store, root, "c/0/9", _batch_holding_run(
        store, keys))
    assert got < released


def test_replace_many_keeps_a_neighbouring_lock_of_another_thread(store, root):
    """A run's lock is one range of the process's lock description; releasing it must not
    release a lock another thread of the process holds on the next byte."""
    held, release = threading.Event(), threading.Event()

    def other_thread() -> None:
        with store.lock("c/0/8"):
            held.set()
            release.wait(60)
    t = threading.Thread(target=other_thread)
    t.start()
    assert held.wait(10)
    store.replace_many([f"c/0/{i}" for i in range(8)], [b"x"] * 8)

    def hold(wait) -> float:
        wait()
        stamp = time.monotonic()
        release.set()
        t.join()
        return stamp
    released, got = _held_while_other_process_locks(store, root, "c/0/8", hold)
    assert got > released


def test_lock_runs_are_consecutive_chunk_keys():
    from zarrkit.kvstore.file import _MAX_RUN, _lock_runs, _range_offset

    assert _range_offset("c/0/5") + 1 == _range_offset("c/0/6")
    assert len({_range_offset(k) for k in ["c/0/5", "c/1/5", "c/05", "c/0/05", "zarr.json"]}) == 5
    keys = ["c/0/0", "c/0/1", "c/0/3", "c/1/0", "c/1/1", "a.0.1", "a.0.2", "x"]
    assert [list(r) for r in _lock_runs(keys)] == [
        ["c/0/0", "c/0/1"], ["c/0/3"], ["c/1/0", "c/1/1"], ["a.0.1", "a.0.2"], ["x"]]
    many = [f"c/{i}" for i in range(2 * _MAX_RUN + 5)]
    assert [len(r) for r in _lock_runs(many)] == [_MAX_RUN, _MAX_RUN, 5]


def test_replace_many_writes_again_in_a_directory_removed_meanwhile(store, root):
    def values():
        yield b"0"
        store.delete("d/0")  # empties and prunes d/, the directory the batch holds open
        assert not (root / "d").exists()
        yield b"1"
    # Keys not consecutive: two runs, the first written before the second value is drawn.
    store.replace_many(["d/0", "d/2"], values())
    assert store.get("d/0") is None and store.get("d/2") == b"1"


def test_a_dead_writers_temp_file_of_the_same_name_is_left_alone(store, root, monkeypatch):
    """Temp names are a per-process random tag and a counter: one a dead writer left behind
    under the very same name makes the next write draw another tag, not fail."""
    from zarrkit.kvstore import file

    store.set("d/k", b"old")
    monkeypatch.setattr(file, "_TEMP_COUNT", itertools.count(7))
    stale = root / "d" / file._temp_name("k")
    stale.write_bytes(b"dead writer")
    monkeypatch.setattr(file, "_TEMP_COUNT", itertools.count(7))
    store.set("d/k", b"new")
    assert store.get("d/k") == b"new" and stale.read_bytes() == b"dead writer"


def test_a_forked_child_draws_its_own_temp_tag():
    from zarrkit.kvstore import file

    assert in_child(lambda: file._TEMP_TAG[0]) != file._TEMP_TAG[0]


def test_replace_many_needs_one_value_per_key(store):
    with pytest.raises(ValueError, match="fewer values"):
        store.replace_many(["a", "b"], [b"1"])
    with pytest.raises(ValueError, match="more values"):
        store.replace_many(["c"], [b"1", b"2"])


def test_lock_refuses_bad_keys(store):
    with pytest.raises(InvalidKeyError):
        store.lock("../x")


# -- misc ----------------------------------------------------------------------------------
def test_pickle_roundtrip(root):
    store = FileStore(root, fsync=True)
    store.set("k", b"v")
    copy = pickle.loads(pickle.dumps(store))
    assert copy.root == store.root and copy.fsync and copy.get("k") == b"v"
    ro = pickle.loads(pickle.dumps(FileStore(root, read_only=True)))
    assert ro.read_only


def test_relative_symlink_escape_refused(store, root, outside, strategy):
    root.mkdir()
    os.symlink("../outside", root / "up")
    with pytest.raises(InvalidKeyError):
        store.get("up/secret")
    with pytest.raises(InvalidKeyError):
        store.set("up/new", b"x")
    assert _tree(outside) == ["secret"]


def test_root_replaced_while_open(store, root, strategy):
    store.set("k", b"old")
    assert store.get("k") == b"old"
    os.rename(root, root.with_name("moved"))
    root.mkdir()
    assert store.get("k") is None
    (root / "k").write_bytes(b"new")
    assert store.get("k") == b"new"
    store.set("j", b"1")
    assert (root / "j").read_bytes() == b"1"
    shutil.rmtree(root)
    assert store.get("k") is None
    store.set("k", b"again")
    assert (root / "k").read_bytes() == b"again" and store.get("k") == b"again"


def test_delete_prefix_removes_a_directory_link_not_its_target(store, root):
    # As `rm -r`: deleting a/ removes the links in it, never the keys they lead to elsewhere.
    store.set("real/x", b"1")
    store.set("a/own", b"2")
    os.makedirs(root / "a" / "sub")
    os.symlink(root / "real", root / "a" / "sub" / "dirlink")
    os.symlink("../real/x", root / "a" / "filelink")
    assert sorted(store.list_prefix("a/")) == ["a/filelink", "a/own", "a/sub/dirlink/x"]
    store.delete_prefix("a/")
    assert list(store.list_prefix("a/")) == []
    assert not (root / "a").exists()
    assert store.get("real/x") == b"1"
    assert sorted(store.list_prefix("")) == ["real/x"]


def test_delete_prefix_through_a_link_deletes_the_keys_named(store, root):
    # The prefix itself names the link: its keys are what the caller asked to delete.
    store.set("real/x", b"1")
    os.symlink(root / "real", root / "alias")
    store.delete_prefix("alias/")
    assert store.get("real/x") is None


def test_list_dir_hides_a_link_back_to_a_directory_above(store, root):
    # Walking a hierarchy down by listings must end: s/t/up -> s is no child of s/t.
    store.set("s/t/x", b"1")
    store.set("s/y", b"2")
    os.symlink(root / "s", root / "s" / "t" / "up")
    os.symlink(root, root / "s" / "t" / "top")
    os.symlink(root / "s" / "t", root / "s" / "side")  # not above s: a child like any other
    assert store.list_dir("s/t/") == (["x"], [])
    assert store.list_dir("s/") == (["y"], ["side", "t"])
    assert sorted(store.list_prefix("s/")) == ["s/side/x", "s/t/x", "s/y"]

"""The file store's batches of small values (`kvstore/_file_batch.py`, the C extension
`_fileio`): what they read and write is what value-by-value reads and writes give, every value
they cannot handle is redone with the full handling (links, missing directories, errors naming
the key), failures keep old values and leave no temp files, and the engine's small-chunk reads
and writes through them match numpy."""

from __future__ import annotations

import errno
import os
import sys
import time

import numpy as np
import pytest
from _forked import in_child

import zarrkit
from zarrkit.errors import CorruptDataError, InvalidKeyError, InvalidValueError, StoreError
from zarrkit.kvstore import FileStore, _file_batch, _openat2


def _temps(path) -> list[str]:
    return [name for _, _, files in os.walk(path) for name in files if name.endswith(".partial")]


def _open_to_all(path) -> None:
    """Directories and files below `path` writable by anyone (the lock files root made too)."""
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chmod(os.path.join(top, name), 0o777)


@pytest.fixture
def store(tmp_path):
    return FileStore(tmp_path / "root")


@pytest.fixture(params=["batches", "batches-named", "per-value"])
def both_ways(request, monkeypatch):
    """The same test with the C batches and without them (value by value in Python); and with
    the batches making every file as a temp file renamed over its name, as they do where the
    system has no unnamed files (O_TMPFILE) or no /proc."""
    if request.param == "per-value":
        monkeypatch.setattr(_file_batch, "AVAILABLE", False)
    was = _file_batch._fileio.unnamed_files(request.param != "batches-named")
    yield request.param
    _file_batch._fileio.unnamed_files(was)


def test_the_batches_are_built_and_used_here():
    # The extension is optional for installs without a compiler; on this project's own
    # machines (Linux with openat2) it must be there, or every test below ran the slow path.
    assert sys.platform.startswith("linux") and _openat2.AVAILABLE
    assert _file_batch._fileio is not None and _file_batch.AVAILABLE
    assert FileStore("/tmp/unused").batches_without_gil


# -- reads -------------------------------------------------------------------------------------
def test_batch_reads_give_what_single_reads_give(store, tmp_path, monkeypatch):
    root = tmp_path / "root"
    rng = np.random.default_rng(0)
    values = {f"d{i % 3}/{i}": rng.bytes(int(rng.integers(0, 3000))) for i in range(300)}
    for key, value in values.items():
        store.set(key, value)
    (root / "d0" / "dir").mkdir()  # a directory is no value
    os.mkfifo(root / "d1" / "fifo")  # nor is a FIFO (and reading it must not block)
    os.symlink(root / "d2" / "5", root / "d2" / "link")  # a link inside the root is followed
    keys = [*values, "d0/dir", "d1/fifo", "d2/link", "missing/0", "d0/missing"]
    for transient in (False, True):
        got = (store.get_many_transient if transient else store.get_many)([(k, None) for k in keys])
        assert [None if v is None else bytes(v) for v in got] == \
            [*values.values(), None, None, values["d2/5"], None, None]
    monkeypatch.setattr(_file_batch, "AVAILABLE", False)
    single = store.get_many([(k, None) for k in keys])
    assert [None if v is None else bytes(v) for v in single] == \
        [*values.values(), None, None, values["d2/5"], None, None]


def test_batch_reads_span_several_buffers_and_read_large_values_alone(store, monkeypatch):
    monkeypatch.setattr(_file_batch, "BATCH_BYTES", 10_000)
    values = {f"k{i}": bytes([i]) * (4000 if i % 5 else 25_000) for i in range(40)}
    for key, value in values.items():
        store.set(key, value)
    for transient in (False, True):
        get = store.get_many_transient if transient else store.get_many
        got = get([(k, None) for k in values])
        assert [bytes(v) for v in got] == list(values.values())


def test_batch_reads_refuse_a_link_out_of_the_root(store, tmp_path):
    store.set("d/a", b"a")
    (tmp_path / "secret").write_bytes(b"secret")
    os.symlink(tmp_path / "secret", tmp_path / "root" / "d" / "out")
    with pytest.raises(InvalidKeyError, match="'d/out' resolves outside"):
        store.get_many([("d/a", None), ("d/out", None)])
    os.symlink(tmp_path, tmp_path / "root" / "up")  # a linked directory out of the root
    with pytest.raises(InvalidKeyError, match="'up/secret' resolves outside"):
        store.get_many([("d/a", None), ("up/secret", None)])


def test_batch_reads_follow_a_linked_directory_inside_the_root(store, tmp_path):
    store.set("d/a", b"a")
    store.set("d/b", b"b")
    os.symlink(tmp_path / "root" / "d", tmp_path / "root" / "e")
    got = store.get_many([("e/a", None), ("d/b", None), ("e/b", None)])
    assert [bytes(v) for v in got] == [b"a", b"b", b"b"]


def test_a_batch_read_error_names_the_key(open_dir):
    store = FileStore(open_dir)
    store.set("a/k", b"k")
    store.set("a/secret", b"s")
    os.chmod(os.path.join(open_dir, "a", "secret"), 0o600)
    kind, message = in_child(lambda: store.get_many([("a/k", None), ("a/secret", None)]),
                             as_nobody=True)
    assert kind == "StoreError" and "'a/secret'" in message and "Permission denied" in message


def test_ranges_and_repeated_keys_still_read_as_asked(store):
    store.set("a", b"0123456789")
    store.set("b", b"abcdef")
    from zarrkit.kvstore import ByteRange
    got = store.get_many([("a", None), ("b", ByteRange(2, 2)), ("a", ByteRange(-3)), ("b", None)])
    assert [bytes(v) for v in got] == [b"0123456789", b"cd", b"789", b"abcdef"]


# -- writes ------------------------------------------------------------------------------------
def test_batch_writes_store_every_value_and_leave_no_temp_file(store, tmp_path, both_ways):
    rng = np.random.default_rng(1)
    keys = [f"c/{i}/{j}" for i in range(3) for j in range(100)]
    values = [rng.bytes(int(rng.integers(0, 5000))) for _ in keys]
    values[7] = bytearray(values[7])
    values[8] = memoryview(values[8])
    values[9] = np.frombuffer(values[9], np.uint8)
    values[10] = b"x" * (_file_batch.MAX_BATCHED_VALUE + 1)  # large, but batched uncopied
    store.replace_many(keys, values)
    assert [bytes(store.get(k)) for k in keys] == [bytes(v) for v in values]
    assert _temps(tmp_path) == []


def test_an_overwrite_keeps_the_files_permission_bits(store, tmp_path, both_ways):
    """A user's chmod of a stored value survives its replacement, in a batch and alone, as an
    in-place rewrite would keep it; new files get 0666 less the umask."""
    store.replace_many(["d/0", "d/1", "d/2"], [b"a", b"b", b"c"])
    root = tmp_path / "root" / "d"
    os.chmod(root / "0", 0o640)
    os.chmod(root / "2", 0o600)
    umask = os.umask(0o022)
    try:
        store.replace_many(["d/0", "d/1", "d/2", "d/3"], [b"A", b"B", b"C", b"D"])
        store.set("d/0", b"AA")
    finally:
        os.umask(umask)
    modes = [os.stat(root / name).st_mode & 0o777 for name in "0123"]
    assert modes == [0o640, 0o644, 0o600, 0o644]
    assert [store.get(f"d/{i}") for i in range(4)] == [b"AA", b"B", b"C", b"D"]
    assert _temps(tmp_path) == []


def test_large_values_are_batched_when_kept_and_alone_when_they_would_be_copied(
        store, monkeypatch):
    calls = []
    real = _file_batch._fileio.write_files
    monkeypatch.setattr(_file_batch._fileio, "write_files",
                        lambda *args: (calls.append(len(args[1])), real(*args))[1])
    big = [bytes([i]) * (_file_batch.MAX_BATCHED_VALUE + 1) for i in range(4)]
    keys = [f"c/0/{i}" for i in range(4)]
    store.set("c/0/x", b"")  # the directory made (a file that makes one is written alone)
    calls.clear()
    store.replace_many(keys, list(big))  # a list's values stay as they are: one call
    assert calls == [4]
    calls.clear()
    store.replace_many(keys, (bytearray(v[::-1]) for v in big))  # each would be copied: alone
    assert calls == [1] * 4
    assert [bytes(store.get(k)) for k in keys] == big


def test_deletes_and_repeated_keys_keep_their_order(store, both_ways):
    store.set("d/1", b"old")
    store.set("d/2", b"old")
    store.replace_many(["d/0", "d/0", "d/1", "d/1", "d/2", "d/3"],
                       [b"first", b"second", b"new", None, None, b"three"])
    assert sorted(store.list_prefix("")) == ["d/0", "d/3"]
    assert store.get("d/0") == b"second" and store.get("d/3") == b"three"
    store.replace_many(["d/0", "d/0"], [None, b"again"])
    assert store.get("d/0") == b"again"


def test_transient_values_are_copied_before_the_next_is_drawn(store, both_ways):
    buffer = bytearray(8)
    keys = [f"a/{i}" for i in range(50)]

    def reusing():
        for i in range(len(keys)):
            buffer[:] = bytes([i]) * 8
            yield buffer
    store.replace_many(keys, reusing())
    assert [store.get(k) for k in keys] == [bytes([i]) * 8 for i in range(50)]


@pytest.mark.parametrize("bad", ["value", "generator"])
def test_values_before_a_bad_one_are_stored(store, tmp_path, both_ways, bad):
    """As value by value: what was drawn before a bad value (or an error of the caller's
    iterator) is stored, nothing after it, and no temp file is left."""
    store.set("d/3", b"old")

    def values():
        yield b"0"
        yield bytearray(b"1")
        if bad == "generator":
            raise RuntimeError("the caller's values failed")
        yield object()
        yield b"3"
    with pytest.raises(RuntimeError if bad == "generator" else InvalidValueError):
        store.replace_many(["d/0", "d/1", "d/2", "d/3"], values())
    assert store.get("d/0") == b"0" and store.get("d/1") == b"1"
    assert store.get("d/2") is None and store.get("d/3") == b"old"
    assert _temps(tmp_path) == []


def test_batch_writes_make_missing_directories(store, tmp_path):
    keys = ["x/y/z/0", "x/y/z/1", "x/y/w/0", "top"]
    store.replace_many(keys, [b"0", b"1", b"2", b"3"])
    assert [store.get(k) for k in keys] == [b"0", b"1", b"2", b"3"]
    assert _temps(tmp_path) == []


def test_a_batch_never_writes_through_a_link_out_of_the_root(store, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "root").mkdir()
    os.symlink(outside, tmp_path / "root" / "d")
    with pytest.raises(InvalidKeyError, match="'d/0' resolves outside"):
        store.replace_many(["d/0", "d/1"], [b"0", b"1"])
    assert os.listdir(outside) == []


def test_a_value_the_batch_cannot_rename_fails_naming_its_key(store, tmp_path, both_ways):
    """The key is a non-empty directory: its rename fails, the values before it are stored,
    none after it, the directory is untouched and no temp file is left."""
    store.set("d/2/inner", b"inner")
    with pytest.raises(StoreError, match="'d/2'"):
        store.replace_many(["d/0", "d/1", "d/2", "d/3"], [b"0", b"1", b"2", b"3"])
    assert store.get("d/0") == b"0" and store.get("d/1") == b"1"
    assert store.get("d/3") is None and store.get("d/2/inner") == b"inner"
    assert _temps(tmp_path) == []


def test_a_batch_write_over_the_file_size_limit_keeps_the_old_values(open_dir, both_ways):
    store = FileStore(open_dir)
    store.replace_many(["a/0", "a/1", "a/2"], [b"old0", b"old1", b"old2"])
    _open_to_all(open_dir)
    kind, message = in_child(lambda: store.replace_many(
        ["a/0", "a/1", "a/2"], [b"new", b"n" * 4096, b"new"]), fsize_limit=1000, as_nobody=True)
    assert kind == "StoreError" and "'a/1'" in message and "File too large" in message
    assert [store.get(k) for k in ("a/0", "a/1", "a/2")] == [b"new", b"old1", b"old2"]
    assert _temps(open_dir) == []


def test_a_batch_write_into_a_read_only_directory_keeps_the_old_values(open_dir, both_ways):
    store = FileStore(open_dir)
    store.replace_many(["a/0", "a/1"], [b"old0", b"old1"])
    _open_to_all(open_dir)
    os.chmod(os.path.join(open_dir, "a"), 0o555)
    kind, message = in_child(lambda: store.replace_many(["a/0", "a/1"], [b"n", b"n"]),
                             as_nobody=True)
    assert kind == "StoreError" and "'a/0'" in message and "Permission denied" in message
    assert [store.get(k) for k in ("a/0", "a/1")] == [b"old0", b"old1"]
    assert _temps(open_dir) == []


class _FailingAt:
    """`_fileio` whose write_files writes the first `at` values of a call for real, then
    reports `err` (as a failure in the kernel would be reported)."""

    def __init__(self, real, at: int, err: int) -> None:
        self.read_files, self._real, self._at, self._err = real.read_files, real, at, err
        self.calls = 0

    def write_files(self, dir_fd, names, temps, values, fsync):
        self.calls += 1
        if self.calls > 1:  # only the first call fails
            return self._real.write_files(dir_fd, names, temps, values, fsync)
        done, err = self._real.write_files(dir_fd, names[:self._at], temps[:self._at],
                                           values[:self._at], fsync)
        assert err == 0
        return done, -self._err


def test_the_value_a_batch_stopped_at_is_redone_and_the_rest_written(store, monkeypatch):
    fake = _FailingAt(_file_batch._fileio, 3, errno.EIO)
    monkeypatch.setattr(_file_batch, "_fileio", fake)
    keys = [f"d/{i}" for i in range(8)]
    store.replace_many(keys, [bytes([i]) for i in range(8)])
    assert [store.get(k) for k in keys] == [bytes([i]) for i in range(8)]
    assert fake.calls == 2  # the rest after the redone value went through one more batch


def test_a_failed_directory_sync_is_an_error_naming_the_key(tmp_path, monkeypatch):
    store = FileStore(tmp_path / "root", fsync=True)
    store.set("d/x", b"x")  # the directory exists: the batch writes into it
    monkeypatch.setattr(_file_batch, "_fileio", _FailingAt(_file_batch._fileio, 2, errno.EIO))
    with pytest.raises(StoreError, match="'d/1'.*Input/output error"):
        store.replace_many(["d/0", "d/1"], [b"0", b"1"])


_SYNCED_WRITES = """
import sys
from zarrkit.kvstore import FileStore
store = FileStore(sys.argv[1], fsync=sys.argv[2] == "1")
store.set("d/first", b"0")  # makes the directory
if sys.argv[3] == "set":
    store.set("d/a", b"1")
else:
    store.replace_many(["d/0", "d/1"], [b"1", b"2"])  # one run: one batch
"""


def _unnamed_files_in(path) -> bool:
    """Whether the file system of `path` makes unnamed files (O_TMPFILE; overlayfs before
    Linux 6.6, NFS and others do not, and the writes rename temp files there)."""
    try:
        os.close(os.open(path, os.O_TMPFILE | os.O_WRONLY, 0o600))
    except OSError:
        return False
    return os.path.isdir("/proc/self/fd")


@pytest.mark.parametrize("how", ["set", "replace_many"])
def test_c_writes_sync_the_file_and_then_the_directory(tmp_path, how):
    """Seen from the kernel (strace): with fsync=True each value's file is synced before it is
    given its name (a new file's link, or a rename over an old one), and the directory after
    the last; with fsync=False nothing is."""
    import shutil
    import subprocess
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    for fsync in ("0", "1"):
        out = subprocess.run(["strace", "-f", "-e", "trace=fsync,renameat,renameat2,rename,linkat",
                              sys.executable, "-c", _SYNCED_WRITES, str(tmp_path / fsync),
                              fsync, how], capture_output=True, text=True, check=True)
        calls = [line.split("(")[0].split()[-1] for line in out.stderr.splitlines()
                 if "fsync(" in line or "rename" in line or "linkat(" in line]
        calls = ["name" if c.startswith(("rename", "linkat")) else c for c in calls]
        if fsync == "0":
            assert calls == ["name"] * (2 if how == "set" else 3)
            if _unnamed_files_in(tmp_path):  # new files: linked in once written, no temp file
                assert "rename" not in out.stderr and out.stderr.count("linkat(") == len(calls)
        elif how == "set":  # file, name, directory: per value
            assert calls == ["fsync", "name", "fsync"] * 2
        else:  # the batch's files, each before its name, then its directory once
            assert calls == ["fsync", "name", "fsync"] + ["fsync", "name"] * 2 + ["fsync"]


_BATCH_OF_FOUR = """
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("_fileio", sys.argv[2])  # not all of zarrkit
_fileio = importlib.util.module_from_spec(spec)
spec.loader.exec_module(_fileio)
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)  # the first call strace filters
names = tuple(f"k{i}".encode() for i in range(4))
print(_fileio.write_files(fd, names, tuple(b".t" + n for n in names), names, False))
"""


def test_a_batch_tries_unnamed_files_once_where_the_file_system_refuses_them(tmp_path):
    """On a file system without O_TMPFILE (NFS, older overlayfs; here strace makes the first
    such open fail), a batch's first value finds out and the rest are written as temp files
    renamed, with no failed open each."""
    import shutil
    import subprocess
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    d = tmp_path / "d"
    d.mkdir()
    out = subprocess.run(["strace", "-f", "--seccomp-bpf", "-P", str(d), "-e", "trace=openat",
                          "-e", "inject=openat:error=EOPNOTSUPP:when=2",
                          sys.executable, "-c", _BATCH_OF_FOUR, str(d), _file_batch._fileio.__file__],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(4, 0)"
    assert sorted(os.listdir(d)) == ["k0", "k1", "k2", "k3"]
    assert [(d / f"k{i}").read_bytes() for i in range(4)] == [f"k{i}".encode() for i in range(4)]
    if not os.path.isdir("/proc/self/fd"):  # no unnamed files tried at all
        assert "O_TMPFILE" not in out.stderr
        return
    tried = [line for line in out.stderr.splitlines() if "O_TMPFILE" in line]
    assert tried, out.stderr  # the batch tried an unnamed file first
    if "INJECTED" not in tried[0]:
        pytest.skip("this strace filters or injects otherwise (-P through a directory's fd)")
    assert len(tried) == 1, out.stderr


def test_batches_with_fsync_write_every_value(tmp_path):
    store = FileStore(tmp_path / "root", fsync=True)
    keys = [f"d/{i}" for i in range(20)]
    store.replace_many(keys, [bytes([i]) * 10 for i in range(20)])
    assert [store.get(k) for k in keys] == [bytes([i]) * 10 for i in range(20)]


def test_batches_can_be_turned_off_by_the_environment(tmp_path):
    import subprocess
    code = "from zarrkit.kvstore import _file_batch; print(_file_batch.AVAILABLE)"
    env = {**os.environ, "ZARRKIT_FILE_BATCHES": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


# -- the engine's small chunks through the batches --------------------------------------------
@pytest.mark.parametrize("dtype, endian", [("float32", "little"), ("int16", "big"), ("bool", None),
                                           ("complex128", "little"), ("uint8", None)])
def test_small_chunk_writes_and_reads_match_numpy(tmp_path, both_ways, dtype, endian):
    shape, chunks = (37, 45, 29), (4, 5, 3)  # edge chunks in every dimension
    codec = {"name": "bytes", "configuration": {"endian": endian}} if endian else {"name": "bytes"}
    a = zarrkit.create(tmp_path / "a", shape=shape, dtype=dtype, chunks=chunks, fill_value=0,
                       codecs=[codec])
    rng = np.random.default_rng(2)
    expected = (rng.random(shape) * 100).astype(dtype)
    expected[:8, :10, :6] = 0  # whole chunks of the fill value: not stored
    a[...] = expected
    np.testing.assert_array_equal(a[...], expected)
    assert not a.store.exists("c/0/0/0") and a.store.exists("c/3/4/5")
    expected[5:30, 3:40:2, 7] = 7  # partial chunks: read, merged, written
    a[5:30, 3:40:2, 7] = 7
    expected[..., 9:12] = np.asfortranarray(expected[..., 9:12] + 1)  # an F-ordered value
    a[..., 9:12] = np.asfortranarray(expected[..., 9:12])
    np.testing.assert_array_equal(a[...], expected)
    np.testing.assert_array_equal(zarrkit.open(tmp_path / "a", mode="r")[3:31, ::3], expected[3:31, ::3])


def test_raw_chunks_side_by_side_are_placed_a_run_at_a_time(tmp_path, monkeypatch):
    from zarrkit.engine import chunk_io

    placed: list[tuple[int, bool]] = []
    real = chunk_io._place_run

    def spy(out, run, values, shape, dtype):
        placed.append((len(run), real(out, run, values, shape, dtype)))
        return placed[-1][1]
    monkeypatch.setattr(chunk_io, "_place_run", spy)
    a = zarrkit.create(tmp_path / "a", shape=(40, 130), dtype="int32", chunks=(8, 8), fill_value=-1,
                       codecs=["bytes"])
    expected = np.arange(40 * 130, dtype="int32").reshape(40, 130)
    expected[8:16, 40:48] = -1  # a missing chunk in the middle of a row
    a[...] = expected
    assert not a.store.exists("c/1/5")
    np.testing.assert_array_equal(a[...], expected)
    assert (16, True) in placed  # the 16 whole chunks of a row (the 17th is cut by the edge)
    assert any(not ok for _, ok in placed)  # the row with a missing chunk: chunk by chunk
    placed.clear()
    np.testing.assert_array_equal(a[3:37, 5:121], expected[3:37, 5:121])
    assert (14, True) in placed  # the whole chunks inside the selection; cut ones one by one
    (tmp_path / "a" / "c" / "2" / "3").write_bytes(b"\0" * 100)  # a corrupt chunk in a run
    with pytest.raises(CorruptDataError, match="c/2/3"):
        a[...]


def test_small_chunks_written_with_batches_read_the_same_without(tmp_path, monkeypatch):
    a = zarrkit.create(tmp_path / "a", shape=(300, 260), dtype="float64", chunks=(10, 13),
                       fill_value=np.nan, codecs=["bytes"])
    value = np.random.default_rng(3).random((300, 260))
    value[100:120] = np.nan  # fill-value chunks, bit for bit
    a[...] = value
    a[50, :] = 5.0  # a scalar broadcast over partial chunks
    value[50, :] = 5.0
    monkeypatch.setattr(_file_batch, "AVAILABLE", False)
    b = zarrkit.open(tmp_path / "a", mode="r")
    np.testing.assert_array_equal(b[...], value)
    assert not b.store.exists("c/10/0")  # rows 100-109: all NaN, not stored


def test_write_empty_chunks_stores_fill_value_chunks(tmp_path):
    a = zarrkit.create(tmp_path / "a", shape=(64, 64), dtype="int32", chunks=(8, 8), fill_value=0,
                       codecs=["bytes"], write_empty_chunks=True)
    a[...] = 0
    assert len(list(a.store.list_prefix(""))) == 64 + 1  # every chunk and zarr.json


def test_negative_zero_is_not_the_fill_value_zero(tmp_path):
    a = zarrkit.create(tmp_path / "a", shape=(64, 64), dtype="float32", chunks=(8, 8),
                       fill_value=0.0, codecs=["bytes"])
    a[...] = -0.0
    assert len(list(a.store.list_prefix(""))) == 64 + 1
    assert np.signbit(a[...]).all()


def test_a_failed_small_chunk_write_leaves_nothing_in_flight(open_dir):
    """A batch fails in a pool thread: the write raises that error, after every batch in flight
    has finished (nothing is written behind the caller's back)."""
    a = zarrkit.create(os.path.join(open_dir, "a"), shape=(256, 256), dtype="uint8",
                       chunks=(8, 8), fill_value=0, codecs=["bytes"])
    a[...] = 1
    _open_to_all(open_dir)
    os.chmod(os.path.join(open_dir, "a", "c", "17"), 0o555)

    def write() -> list[int]:
        b = zarrkit.open(os.path.join(open_dir, "a"))
        b[...] = 2
        return []
    kind, message = in_child(write, as_nobody=True)
    assert kind == "StoreError" and "'c/17/" in message and "Permission denied" in message
    np.testing.assert_array_equal(zarrkit.open(os.path.join(open_dir, "a"))[136:144], 1)
    assert _temps(open_dir) == []


# -- a whole value replaced under its lock in one call (`FileStore.replace`) ---------------------
@pytest.fixture
def one_calls(monkeypatch) -> list[bool]:
    """What each one-call replacement (`_file_batch.replace_locked`) returned, in order."""
    calls: list[bool] = []
    real = _file_batch.replace_locked

    def counted(*args) -> bool:
        calls.append(real(*args))
        return calls[-1]
    monkeypatch.setattr(_file_batch, "replace_locked", counted)
    return calls


def _hold_lock(root: str, key: str, seconds: float, conn) -> None:
    store = FileStore(root)
    with store.lock(key):
        conn.send(("held", time.monotonic()))
        time.sleep(seconds)
        conn.send(("released", time.monotonic()))


def test_replace_waits_for_another_process_holding_the_key_lock(tmp_path, one_calls):
    import multiprocessing
    store = FileStore(tmp_path / "root")
    store.set("d/k", b"old")
    ours, theirs = multiprocessing.get_context("spawn").Pipe()
    proc = multiprocessing.get_context("spawn").Process(
        target=_hold_lock, args=(str(tmp_path / "root"), "d/k", 0.5, theirs))
    proc.start()
    try:
        assert ours.poll(60) and ours.recv()[0] == "held"
        store.replace("d/k", b"new")
        done = time.monotonic()
        assert ours.poll(60)
        kind, released = ours.recv()
        assert kind == "released" and done > released
    finally:
        proc.join(60)
    assert store.get("d/k") == b"new" and one_calls == [True]


def test_replace_falls_back_where_one_call_cannot_do_it(tmp_path, one_calls):
    root = tmp_path / "root"
    store = FileStore(root)
    store.replace("new/dir/k", b"1")  # its directory is made the usual way
    assert store.get("new/dir/k") == b"1" and one_calls == [False]
    store.replace("new/dir/k", b"2")
    assert store.get("new/dir/k") == b"2" and one_calls == [False, True]
    store.replace("a/zarr.json", b"{}")  # a node file: the usual way (lock homes change)
    assert store.get("a/zarr.json") == b"{}" and len(one_calls) == 2
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "out")
    with pytest.raises(InvalidKeyError, match="'out/k' resolves outside"):
        store.replace("out/k", b"x")
    assert os.listdir(tmp_path / "outside") == []


def test_replace_after_its_lock_file_was_deleted_locks_the_new_one(tmp_path, one_calls):
    """The lock file deleted with its node (by another process): the one call finds it
    unlinked and gives way; the usual path locks the file at its path now, and the next one
    call uses that."""
    import shutil
    root = tmp_path / "root"
    store = FileStore(root)
    store.set("a/zarr.json", b'{"node_type": "array"}')
    store.set("a/c/0", b"")
    store.replace("a/c/0", b"0")  # opens the array's lock file and keeps it
    lock_file = root / "a" / ".zarrkit-locks" / "keys.lock"
    held = store._lock_files["a/"]._state[0]
    assert os.path.samestat(os.fstat(held), lock_file.stat())
    shutil.rmtree(lock_file.parent)
    store.replace("a/c/0", b"1")
    store.replace("a/c/0", b"2")
    assert store.get("a/c/0") == b"2"
    # The description held now is the file at the path (not the deleted one: an inode number
    # alone could be the old one's again, once that was freed).
    held = store._lock_files["a/"]._state[0]
    assert os.fstat(held).st_nlink == 1 and os.path.samestat(os.fstat(held), lock_file.stat())
    assert one_calls == [True, False, True]


def test_a_failed_replace_names_its_key_and_keeps_the_old_value(tmp_path):
    store = FileStore(tmp_path / "root")
    store.set("d/k/inner", b"inner")  # the key is a non-empty directory: no rename over it
    with pytest.raises(StoreError, match="'d/k'"):
        store.replace("d/k", b"new")
    assert store.get("d/k/inner") == b"inner" and _temps(tmp_path) == []

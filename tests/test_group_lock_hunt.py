"""An adversarial review of the file store's group lock files (docs/concurrency.md, "Groups keep
no lock files"): processes at different roots mixing exclusive and shared locks of groups'
documents, holders killed or forked while holding, nodes made and deleted by another process
under a store that remembers the old ones, planted links, transactions, descriptor leaks and the
flock fallback. Each test states what it found broken before its fix, or what it tried."""

from __future__ import annotations

import fcntl
import gc
import hashlib
import json
import os
import select
import threading
import time

import numpy as np
import pytest
from _workers import Progress
from test_lock_homes import _waits_in_a_thread, needs_fork

import zarrkit
from zarrkit.errors import InvalidKeyError, ReadOnlyError, StoreError
from zarrkit.kvstore import file as file_store
from zarrkit.kvstore.file import LOCK_DIR, LOCK_FILE_PREFIX, FileStore


def _hierarchy(tmp_path, zarr_format=3):
    root = tmp_path / "t.zarr"
    g = zarrkit.open_group(root, mode="w", zarr_format=zarr_format)
    g.create_group("g").create_array("a", shape=(4,), chunks=(2,), dtype="i4")
    return root


def _lock_name(key_below_node: str) -> str:
    return LOCK_FILE_PREFIX + hashlib.sha256(key_below_node.encode()).hexdigest()[:32]


def _zarrkit_entries(root) -> list[str]:
    """Every lock file of a group's document (and lock directory of a non-array) below `root`."""
    found = []
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            is_array = os.path.exists(os.path.join(top, ".zarray")) or _is_v3_array(top)
            if name.startswith(LOCK_FILE_PREFIX) or name == LOCK_DIR and not is_array:
                found.append(os.path.relpath(os.path.join(top, name), root))
        if LOCK_DIR in dirs:
            dirs.remove(LOCK_DIR)
    return found


def _is_v3_array(directory) -> bool:
    try:
        with open(os.path.join(directory, "zarr.json")) as f:
            return json.load(f).get("node_type") == "array"
    except FileNotFoundError:
        return False


def _take_in_a_thread(store: FileStore, key: str) -> tuple[threading.Thread, list]:
    """A thread taking `key`'s lock (entered, left to the caller to exit: `held[0]`), given
    0.3 s to get it."""
    held: list = []
    thread = threading.Thread(target=lambda: held.append(store.lock(key).__enter__()))
    thread.start()
    thread.join(0.3)
    return thread, held


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


#: How long the churn test runs (longer runs by hand: ZARRKIT_LOCK_HUNT_SECONDS=30).
SECONDS = float(os.environ.get("ZARRKIT_LOCK_HUNT_SECONDS", "1.5"))

needs_proc_fd = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")


# -- mutual exclusion under churn ------------------------------------------------------------
@needs_fork
def test_exclusive_and_shared_group_locks_from_processes_at_different_roots(tmp_path, zygote):
    """Tried: 4 processes for 1.5 s (and 30 s by hand), each at random a read-modify-write of a v3 group's
    zarr.json, a v2 group's .zattrs (through stores at the hierarchy and at the group) or the
    root's .zmetadata, or a shared lock that reads the document twice: every increment is
    kept, no reader saw a change, nothing hangs, no lock file is left. Nothing broke."""
    v3 = _hierarchy(tmp_path)
    v2 = tmp_path / "v2.zarr"
    zarrkit.open_group(v2, mode="w", zarr_format=2).create_group("g").attrs["x"] = 0
    zarrkit.consolidate_metadata(str(v2))
    targets = [[str(v3), "g/zarr.json", "n"], [str(v3 / "g"), "zarr.json", "n"],
               [str(v2), "g/.zattrs", "n"], [str(v2 / "g"), ".zattrs", "n"],
               [str(v2), ".zmetadata", "n"]]
    same_file = [0, 0, 1, 1, 2]
    workers, start = 4, time.time() + 0.2
    jobs = [("doc_counter", dict(targets=targets, seconds=SECONDS, seed=w, start_at=start,
                                 progress=str(tmp_path / f"p{w}"))) for w in range(workers)]
    assert zygote.run(jobs, timeout=60 + SECONDS) == [0] * workers, zygote.stderr()
    expected = [0, 0, 0]
    for w in range(workers):
        for i, f in enumerate(same_file):
            expected[f] += Progress.read(str(tmp_path / f"p{w}.{i}"))
    stored = [json.loads((v3 / "g" / "zarr.json").read_text()).get("n", 0),
              json.loads((v2 / "g" / ".zattrs").read_text()).get("n", 0),
              json.loads((v2 / ".zmetadata").read_text()).get("n", 0)]
    assert stored == expected and min(expected) > 10
    assert _zarrkit_entries(v3) == [] and _zarrkit_entries(v2) == []


def test_remove_temp_files_beside_takers_breaks_no_exclusion(tmp_path):
    """Tried: two stores (as two processes) incrementing a counter in a group's document under
    its lock while a third thread runs remove_temp_files() without pause, which deletes every
    free lock file: a taker that opened a file deleted under it starts over. Nothing broke."""
    root = _hierarchy(tmp_path)
    stop, errors = threading.Event(), []

    def count(store, times):
        try:
            for _ in range(times):
                with store.lock("g/zarr.json"):
                    doc = json.loads(store.get("g/zarr.json"))
                    doc["n"] = doc.get("n", 0) + 1
                    store.set("g/zarr.json", json.dumps(doc).encode())
        except BaseException as exc:  # reported below
            errors.append(exc)

    def clean():
        while not stop.is_set():  # (young temp files: writes in progress, kept)
            FileStore(root).remove_temp_files(older_than=3600)
    cleaner = threading.Thread(target=clean)
    counters = [threading.Thread(target=count, args=(FileStore(root), 300)) for _ in range(2)]
    cleaner.start()
    for t in counters:
        t.start()
    for t in counters:
        t.join(60)
    stop.set()
    cleaner.join(60)
    assert not errors
    assert json.loads((root / "g" / "zarr.json").read_text())["n"] == 600
    assert _zarrkit_entries(root) == []


def test_a_lock_file_cleaned_between_a_takers_open_and_its_lock_is_not_held(tmp_path,
                                                                             monkeypatch):
    """Tried: remove_temp_files deletes the lock file a taker has just made, before the taker
    locks it (the window the stress above rarely hits): the taker starts over on a file of the
    name, which another store's taker then waits for. Nothing broke."""
    root = _hierarchy(tmp_path)
    cleaned = []

    class CleaningFirst:  # fcntl, whose first flock is preceded by a clean
        def __getattr__(self, name):
            return getattr(fcntl, name)

        @staticmethod
        def flock(fd, how):
            if not cleaned:
                cleaned.append("cleaning")  # (the clean's own flock goes through here)
                cleaned[:] = FileStore(root).remove_temp_files(older_than=3600)
            return fcntl.flock(fd, how)
    monkeypatch.setattr(file_store, "fcntl", CleaningFirst())
    holder = FileStore(root)
    with holder.lock("g/zarr.json"):
        monkeypatch.undo()
        assert cleaned == ["g/" + _lock_name("zarr.json")]
        assert (root / "g" / _lock_name("zarr.json")).exists()  # made again, held
        thread, got = _take_in_a_thread(FileStore(root), "g/zarr.json")
        assert thread.is_alive() and got == []
    thread.join(30)
    got[0].__exit__(None, None, None)
    assert _zarrkit_entries(root) == []


# -- holders killed ----------------------------------------------------------------------------
@needs_fork
@pytest.mark.parametrize("shared", [False, True])
def test_a_holder_killed_with_its_lock_file_blocks_no_one(tmp_path, zygote, shared):
    """Tried: a process holding a group document's lock is killed with SIGKILL; its lock file
    stays, remove_temp_files leaves it while held and deletes it after; the next taker got it at
    once and deleted it. Nothing broke."""
    root = _hierarchy(tmp_path)
    ready = tmp_path / "ready"
    pid = zygote.fork("hold_lock", root=str(root), key="g/.zattrs", shared=shared,
                      ready=str(ready))
    deadline = time.time() + 30
    while not ready.exists() and time.time() < deadline:
        time.sleep(0.01)
    name = _lock_name(".zattrs")
    assert (root / "g" / name).exists()
    assert FileStore(root).remove_temp_files(older_than=0) == []  # held: kept
    assert _zarrkit_entries(root) == ["g/" + name]
    taken = []

    def take():
        with FileStore(root).lock("g/.zattrs"):
            taken.append(time.monotonic())
    thread = threading.Thread(target=take)
    thread.start()
    thread.join(0.3)
    assert thread.is_alive()  # an exclusive taker waits for the holder
    killed = time.monotonic()
    assert zygote.kill(pid) == -9
    thread.join(30)
    assert taken and taken[0] - killed < 5
    assert _zarrkit_entries(root) == []
    # A lock file a killed holder left (as the kernel keeps it) goes with the next clean.
    (root / "g" / name).write_bytes(b"")
    assert FileStore(root).remove_temp_files(older_than=3600) == ["g/" + name]


# -- forks -------------------------------------------------------------------------------------
@needs_fork
@pytest.mark.parametrize("shared", [False, True])
def test_a_child_forked_while_a_group_lock_is_held_neither_keeps_nor_deletes_it(tmp_path,
                                                                                shared):
    """Tried: fork while holding a group document's lock. The child's copies of the lock's
    descriptors are closed at the fork; leaving the lock in the child releases and deletes
    nothing; the child's own taker waits for the parent and gets the lock once the parent lets
    go; a child still alive then keeps no one out. Nothing broke."""
    root = _hierarchy(tmp_path)
    name = root / "g" / _lock_name("zarr.json")
    store = FileStore(root)
    lock = store.lock_shared("g/zarr.json") if shared else store.lock("g/zarr.json")
    read_end, write_end = os.pipe()
    with lock:
        pid = os.fork()
        if pid == 0:  # the child
            code = 1
            try:
                lock.__exit__(None, None, None)  # the parent's: neither released nor deleted
                os.write(write_end, b"t" if name.exists() else b"d")
                with FileStore(root).lock("g/zarr.json"):
                    os.write(write_end, b"g")
                os.write(write_end, b"r")
                time.sleep(1)  # alive while the parent takes the lock below
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        assert _read_byte(read_end) == b"t"
        time.sleep(0.3)
        assert name.exists()  # the child deleted nothing
        readable, _, _ = select.select([read_end], [], [], 0)
        assert not readable  # the child's taker waits
    try:
        assert _read_byte(read_end) == b"g"  # the child got the lock only now
        assert _read_byte(read_end) == b"r"
        thread, held = _take_in_a_thread(FileStore(root), "g/zarr.json")
        assert not thread.is_alive() and held  # the child, still alive, keeps no one out
        held[0].__exit__(None, None, None)
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(read_end)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _zarrkit_entries(root) == []


def _read_byte(fd: int, timeout: float = 30) -> bytes:
    readable, _, _ = select.select([fd], [], [], timeout)
    assert readable, "the child did not answer"
    return os.read(fd, 1)


# -- nodes made and deleted by another process under a store that remembers the old ones --------
def test_an_array_made_a_group_elsewhere_is_locked_as_a_group(tmp_path):
    """BROKE: a store that had locked an array's document remembered the array; another
    process deleted it and made a group there; the store's shared lock of the document then
    made `.zarrkit-locks` in the group (zarr-python warns about it) and excluded no taker of the
    group's lock file. Fixed: a range lock file's directory is made only after checking its node
    afresh; otherwise the lock starts over on the current node."""
    root = _hierarchy(tmp_path)
    stale = FileStore(root)
    with stale.lock_shared("g/a/zarr.json"):
        pass
    assert stale._lock_place("g/a/zarr.json") == ("g/a/", "range")
    FileStore(root).delete_prefix("g/a/")  # as another process
    zarrkit.open_group(root, path="g/a", mode="w")
    with stale.lock_shared("g/a/zarr.json"):
        assert sorted(os.listdir(root / "g" / "a")) == [_lock_name("zarr.json"), "zarr.json"]
    assert _waits_in_a_thread(FileStore(root), "g/a/zarr.json", stale, "g/a/zarr.json")
    assert _waits_in_a_thread(stale, "g/a/zarr.json", FileStore(root), "g/a/zarr.json")
    assert _zarrkit_entries(root) == []


def test_an_array_made_below_a_remembered_group_is_locked_as_the_array(tmp_path):
    """BROKE: a store that had locked a key below a group before an array was made there
    (`g/new/c/0`: the group's, taken in the process only) kept locking it in the process only
    after another process made the array `g/new`, and its lock of `g/new/zarr.json` stayed the
    group's lock file: neither excluded the array's writers. Fixed: locks taken in the process
    only or with a lock file of their own check the key's node afresh once taken."""
    root = _hierarchy(tmp_path)
    stale = FileStore(root)
    for key in ("g/new/c/0", "g/new/zarr.json", "g/deep/x/c/0"):
        with stale.lock(key):
            pass
    assert stale._lock_place("g/new/c/0") == ("g/", "threads")
    group = zarrkit.open_group(root, path="g", mode="r+")  # as another process
    group.create_array("new", shape=(4,), chunks=(2,), dtype="i4")
    group.create_array("deep/x", shape=(4,), chunks=(2,), dtype="i4")
    for key in ("g/new/c/0", "g/new/zarr.json", "g/deep/x/c/0"):
        assert _waits_in_a_thread(stale, key, FileStore(root), key), key
        assert _waits_in_a_thread(FileStore(root), key, stale, key), key
    assert stale._lock_place("g/new/c/0") == ("g/new/", "range")


def test_a_group_made_below_a_remembered_group_is_locked_in_its_own_directory(tmp_path):
    """BROKE (as above): `g/sub/zarr.json` locked before `g/sub` existed stayed locked with a
    lock file in `g` after another process made the group `g/sub`, whose own takers lock one
    in `g/sub`. Fixed with the above."""
    root = _hierarchy(tmp_path)
    stale = FileStore(root)
    with stale.lock("g/sub/zarr.json"):
        pass
    zarrkit.open_group(root, path="g", mode="r+").create_group("sub")
    assert _waits_in_a_thread(FileStore(root), "g/sub/zarr.json", stale, "g/sub/zarr.json")
    assert _waits_in_a_thread(stale, "g/sub/zarr.json", FileStore(root), "g/sub/zarr.json")
    assert _zarrkit_entries(root) == []


def test_a_group_deleted_while_a_taker_waits_is_locked_where_it_is_made_again(tmp_path):
    """Tried: a taker waits for a group document's lock while the holder's process deletes the
    group (its lock file with it) and makes it again: the waiter, woken on the deleted file,
    starts over on the new group's file, which another store then waits for; the same with the
    group made again as an array (locked by range). Nothing broke."""
    for again in ("group", "array"):
        root = tmp_path / again
        zarrkit.open_group(root, mode="w").create_group("g")
        holder, waiter = FileStore(root), FileStore(root)
        with holder.lock("g/zarr.json"):
            thread, held = _take_in_a_thread(waiter, "g/zarr.json")
            assert thread.is_alive()
            holder.delete_prefix("g/")
            if again == "group":
                zarrkit.open_group(root, path="g", mode="w")
            else:
                zarrkit.open_array(root, path="g", mode="w", shape=(2,), dtype="u1")
        thread.join(30)
        assert len(held) == 1
        assert waiter._lock_place("g/zarr.json")[1] == ("own file" if again == "group"
                                                        else "range")
        thread, other = _take_in_a_thread(FileStore(root), "g/zarr.json")
        assert thread.is_alive() and other == []  # waits for the woken waiter
        held[0].__exit__(None, None, None)
        thread.join(30)
        other[0].__exit__(None, None, None)
        assert _zarrkit_entries(root) == []


def test_a_group_deleted_elsewhere_is_not_made_again_by_a_lock_of_its_document(tmp_path):
    """BROKE: a store that remembered a group deleted by another process made the group's
    directory again (empty: zarr-python then finds a directory without metadata) to hold its
    document's lock file when asked to lock it (attributes of a group deleted meanwhile).
    Fixed: a missing node directory other than the root means the node is gone; the lock
    starts over on the current node (here the root, whose lock file of the key is gone
    after)."""
    root = _hierarchy(tmp_path)
    stale = FileStore(root)
    for key in ("g/zarr.json", "g/x/c/0"):
        with stale.lock(key):
            pass
    FileStore(root).delete_prefix("g/")  # as another process
    for key in ("g/zarr.json", "g/x/c/0"):
        with stale.lock(key):
            assert not (root / "g").exists()
    assert sorted(os.listdir(root)) == ["zarr.json"]
    assert _waits_in_a_thread(FileStore(root), "g/zarr.json", stale, "g/zarr.json")


@pytest.mark.parametrize("root_is", ["group", "array", "nothing", "missing"])
def test_the_root_as_group_array_nothing_or_missing(tmp_path, root_is):
    """Tried: the store's root a group (its document's lock file, gone after), an array (its
    range lock file), a plain directory or a directory not made yet (made by the first lock;
    the document's lock file gone after): the lock of `zarr.json` excludes another store's,
    and a group keeps nothing. Nothing broke."""
    root = tmp_path / "r"
    if root_is == "group":
        zarrkit.open_group(root, mode="w")
    elif root_is == "array":
        zarrkit.open_array(root, mode="w", shape=(2,), dtype="u1")
    elif root_is == "nothing":
        root.mkdir()
    assert _waits_in_a_thread(FileStore(root), "zarr.json", FileStore(root), "zarr.json")
    expected = {"group": ["zarr.json"], "array": [LOCK_DIR, "zarr.json"], "nothing": [],
                "missing": []}[root_is]
    assert sorted(os.listdir(root)) == expected


# -- links, permissions, read-only stores, no process locks ----------------------------------------
def test_a_link_planted_at_a_lock_files_name_is_refused_naming_it(tmp_path):
    """BROKE (unclear): a link at a lock file's name made every lock of the key fail with
    "Too many levels of symbolic links", and `zarrkit clean` could not remove it. Fixed: the
    error names the lock file, and remove_temp_files deletes links at lock files' names (no
    holder can open one). The link's target is never touched."""
    root = _hierarchy(tmp_path)
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    planted = root / "g" / _lock_name("zarr.json")
    planted.symlink_to(victim)
    with pytest.raises(StoreError, match=f"'g/zarr.json'.*lock file 'g/{planted.name}' is a "
                                         "link"):
        with FileStore(root).lock("g/zarr.json"):
            pass
    assert victim.read_bytes() == b"keep"
    assert FileStore(root).remove_temp_files() == [f"g/{planted.name}"]
    assert victim.read_bytes() == b"keep" and not os.path.lexists(planted)
    with FileStore(root).lock("g/zarr.json"):
        pass
    assert _zarrkit_entries(root) == []


def test_group_directories_that_are_links_inside_and_outside_the_root(tmp_path):
    """Tried: a group reached through a link inside the root is locked in its real directory,
    the same lock as through its real path; a group outside the root linked into it is no
    node of the store: its key is locked in the root, nothing is made outside, and the write
    is refused naming the key. Nothing broke."""
    root = _hierarchy(tmp_path)
    (root / "alias").symlink_to(root / "g")
    assert _waits_in_a_thread(FileStore(root), "alias/zarr.json", FileStore(root),
                              "g/zarr.json")
    outside = tmp_path / "outside"
    zarrkit.open_group(outside, mode="w")
    (root / "out").symlink_to(outside)
    store = FileStore(root)
    with store.lock("out/zarr.json"):  # locked in the root (no node of this store's)
        assert sorted(os.listdir(outside)) == ["zarr.json"]
        with pytest.raises(InvalidKeyError, match="'out/zarr.json'"):
            store.set("out/zarr.json", b"{}")
    assert sorted(os.listdir(outside)) == ["zarr.json"]
    assert _zarrkit_entries(root) == []


def test_read_only_and_lockless_stores_make_no_lock_file(tmp_path):
    root = _hierarchy(tmp_path)
    with pytest.raises(ReadOnlyError, match="g/zarr.json"):
        FileStore(root, read_only=True).lock("g/zarr.json")
    with FileStore(root, process_locks=False).lock_shared("g/zarr.json"):
        with FileStore(root, process_locks=False).lock("g/zarr.json"):  # no process lock
            assert sorted(os.listdir(root / "g")) == ["a", "zarr.json"]


@needs_fork
def test_a_group_directory_without_write_permission_fails_naming_the_key(tmp_path):
    """Tried: a user who may not write in the group's directory (root drops to nobody in a
    child) gets a StoreError naming the key at once; nothing hangs. Nothing broke."""
    base = tmp_path / "open"
    base.mkdir()
    for d in (tmp_path, base):
        os.chmod(d, 0o755)
    root = _hierarchy(base)
    os.chmod(root / "g", 0o555)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        message = b"?"
        try:
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            with FileStore(root).lock("g/zarr.json"):
                message = b"locked"
        except StoreError as exc:
            message = str(exc).encode()
        except BaseException as exc:  # reported to the parent
            message = repr(exc).encode()
        os.write(write_end, message)
        os._exit(0)
    os.close(write_end)
    try:
        message = os.read(read_end, 4096).decode()
    finally:
        os.waitpid(pid, 0)
        os.close(read_end)
        os.chmod(root / "g", 0o755)
    assert "cannot lock 'g/zarr.json'" in message and "Permission denied" in message, message


# -- transactions and descriptors ----------------------------------------------------------------
@needs_fork
def test_transactions_making_arrays_under_a_group_beside_other_writers_leave_nothing(
        tmp_path, zygote):
    """Tried: transactions making arrays below a group (directly and below a plain directory)
    commit while other processes update the group's attributes: all attributes kept, every
    array stored, no lock file or lock directory in any group. Nothing broke."""
    root = _hierarchy(tmp_path)
    start = time.time() + 0.2
    jobs = [("attrs", dict(root=str(root), path="g", names=[f"w{w}_{i}" for i in range(15)],
                           start_at=start)) for w in range(2)]
    pids = [zygote.fork(job, **args) for job, args in jobs]
    time.sleep(max(0.0, start - time.time()))
    for i in range(4):
        with zarrkit.Transaction() as txn:
            for path in (f"g/t{i}", f"g/plain/t{i}"):
                spec = {"driver": "zarr3", "kvstore": {"driver": "file",
                                                       "path": str(root / path)},
                        "metadata": {"shape": [4], "data_type": "int32", "chunk_grid": {
                            "name": "regular", "configuration": {"chunk_shape": [2]}}}}
                a = zarrkit.open(spec, create=True, transaction=txn).result()
                a[...] = np.arange(4, dtype="i4") + i
    assert [zygote.wait(pid) for pid in pids] == [0, 0], zygote.stderr()
    g = zarrkit.open_group(root, path="g", mode="r")
    assert sorted(g.attrs.asdict()) == sorted(f"w{w}_{i}" for w in range(2) for i in range(15))
    for i in range(4):
        for path in (f"g/t{i}", f"g/plain/t{i}"):
            np.testing.assert_array_equal(zarrkit.open_array(root / path)[...],
                                          np.arange(4) + i)
    assert _zarrkit_entries(root) == []
    assert sorted(os.listdir(root / "g" / "plain")) == [f"t{i}" for i in range(4)]


@needs_proc_fd
def test_group_locks_and_a_transaction_of_hundreds_of_keys_leak_no_descriptor(tmp_path):
    """Tried: many group document locks taken and released (exclusive, shared, nested, a
    failing one), and a transaction writing an array of 300 chunks below a group: the process's
    open descriptors are what they were. Nothing broke."""
    root = _hierarchy(tmp_path)
    store = FileStore(root)
    with store.lock("zarr.json"):  # the first lock's one-time descriptors, if any
        pass
    gc.collect()  # (earlier tests' stores close their lock files now, not during the test)
    before = _open_fds()
    for _ in range(200):
        with store.lock("g/zarr.json"), store.lock_shared("zarr.json"):
            with FileStore(root).lock_shared("zarr.json"):  # two shared holders
                pass
        with store.lock("g/new/c/0"):  # below the group: in the process only
            pass
    (root / "g" / _lock_name(".zattrs")).mkdir()  # a lock that cannot be taken
    with pytest.raises(StoreError, match="lock file"):
        store.lock("g/.zattrs").__enter__()
    os.rmdir(root / "g" / _lock_name(".zattrs"))
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(root / "g" / "big")},
            "metadata": {"shape": [300], "data_type": "uint8", "chunk_grid": {
                "name": "regular", "configuration": {"chunk_shape": [1]}}}}
    with zarrkit.Transaction() as txn:
        a = zarrkit.open(spec, create=True, transaction=txn).result()
        a[...] = np.arange(300) % 251 + 1
    del a, txn  # (their store keeps the new array's range lock file open: by design)
    gc.collect()
    assert _open_fds() == before
    np.testing.assert_array_equal(zarrkit.open_array(root / "g" / "big")[...],
                                  np.arange(300) % 251 + 1)
    assert _zarrkit_entries(root) == []


# -- the flock fallback (no OFD locks) ----------------------------------------------------------
def test_the_flock_fallback_keeps_the_guarantees(tmp_path, monkeypatch):
    """Tried without OFD locks: group documents' locks exclude another store at either root
    and leave nothing; an array made a group elsewhere is locked as the group (the fix above
    applies to the per-key lock files too); a group made an array is locked as the array."""
    monkeypatch.setattr(file_store, "_OFD_SETLKW", None)
    root = _hierarchy(tmp_path)
    assert _waits_in_a_thread(FileStore(root / "g"), "zarr.json", FileStore(root),
                              "g/zarr.json")
    assert not _waits_in_a_thread(FileStore(root), "g/.zattrs", FileStore(root), "g/zarr.json")
    stale = FileStore(root)
    with stale.lock("g/a/zarr.json"):
        pass
    FileStore(root).delete_prefix("g/a/")
    zarrkit.open_group(root, path="g/a", mode="w")
    assert _waits_in_a_thread(FileStore(root), "g/a/zarr.json", stale, "g/a/zarr.json")
    assert _zarrkit_entries(root) == []
    with stale.lock("g/zarr.json"):
        pass
    FileStore(root).delete_prefix("g/")
    zarrkit.open_array(root, path="g", mode="w", shape=(2,), dtype="u1")
    assert _waits_in_a_thread(stale, "g/zarr.json", FileStore(root), "g/zarr.json")
    assert os.listdir(root / "g" / LOCK_DIR)

"""File-store locks live in the nearest node's directory (an array's in
`<array>/.zarrkit-locks/keys.lock`, a group's documents' in lock files deleted after use), so
processes that open one hierarchy at different roots (`t.zarr` with path "a", and `t.zarr/a`)
lock the same bytes and lose no update; the lock directories of arrays stay out of listings and
go with their array."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import threading
import time
import weakref

import numpy as np
import pytest
from test_kvstore_file import _lock_and_report

import zarrkit
from zarrkit.errors import InvalidKeyError
from zarrkit.kvstore import file as file_store
from zarrkit.kvstore.file import LOCK_DIR, FileStore

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _other_process_waits(root, key: str, holder: FileStore, held_key: str) -> bool:
    """Whether another process locking `key` in a store at `root` waits while `holder` holds
    `held_key`."""
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    with holder.lock(held_key):
        proc = ctx.Process(target=_lock_and_report, args=(str(root), key, theirs))
        proc.start()
        try:
            assert ours.poll(60) and ours.recv() == "trying"
            time.sleep(0.5)  # blocked on the lock by now, or holding it
            released = time.monotonic()
        except BaseException:
            proc.kill()
            raise
    try:
        assert ours.poll(60)
        return ours.recv() > released
    finally:
        proc.join(60)


def _hierarchy(tmp_path):
    root = tmp_path / "t.zarr"
    g = zarrkit.open_group(root, mode="w")
    g.create_array("a", shape=(8,), dtype="uint8", chunks=(4,))
    return root


def test_stores_at_the_hierarchy_and_at_the_array_lock_the_same_chunk(tmp_path):
    root = _hierarchy(tmp_path)
    assert _other_process_waits(root / "a", "c/0", FileStore(root), "a/c/0")
    assert _other_process_waits(root, "a/c/0", FileStore(root / "a"), "c/0")
    assert not _other_process_waits(root, "a/c/1", FileStore(root / "a"), "c/0")
    assert (root / "a" / LOCK_DIR / "keys.lock").is_file()


def test_locks_of_a_node_live_in_its_directory_and_stay_out_of_listings(tmp_path):
    root = _hierarchy(tmp_path)
    (root / "plain").mkdir()  # a directory without metadata: not a node
    store = FileStore(root)
    for key in ("a/c/0", "a/zarr.json", "plain/x/y", "zarr.json"):
        with store.lock(key):
            pass
    assert sorted(os.listdir(root / "a" / LOCK_DIR)) == ["keys.lock"]
    # The root is a group: its document's lock file is gone, and a plain directory below a
    # group holds no array's keys (its keys are locked in the process only).
    assert sorted(os.listdir(root)) == ["a", "plain", "zarr.json"]
    assert not (root / "plain" / LOCK_DIR).exists()
    assert sorted(store.list_prefix("")) == ["a/zarr.json", "zarr.json"]
    assert store.list_dir("a/") == (["zarr.json"], [])
    g = zarrkit.open_group(root, mode="r")
    assert list(g.keys()) == ["a"]


def _open_lock_files(root) -> int:
    """How many of this process's descriptors are open on lock files below `root`."""
    fds = os.listdir("/proc/self/fd")
    links = [os.readlink(f"/proc/self/fd/{fd}") for fd in fds
             if os.path.exists(f"/proc/self/fd/{fd}")]
    return sum(1 for link in links if link.startswith(str(root)) and LOCK_DIR in link)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="lists descriptors in /proc")
def test_a_dropped_store_closes_its_lock_file_without_the_garbage_collector(tmp_path):
    root = _hierarchy(tmp_path)
    gc.collect()
    gc.disable()  # what is left open now waits for no collection
    try:
        a = zarrkit.open(root / "a", mode="r+")
        a[...] = 1
        store = weakref.ref(a.store)
        assert _open_lock_files(root) == 1
        del a
        assert store() is None  # freed when its last reference went, no cycle keeps it
        assert _open_lock_files(root) == 0
    finally:
        gc.enable()


def test_a_v2_array_is_a_node_too(tmp_path):
    root = tmp_path / "t.zarr"
    g = zarrkit.open_group(root, mode="w", zarr_format=2)
    g.create_array("v", shape=(8,), dtype="uint8", chunks=(4,))
    assert (root / "v" / ".zarray").is_file()
    assert _other_process_waits(root / "v", "0", FileStore(root), "v/0")


def test_the_lock_directory_is_reserved_at_any_depth(tmp_path):
    store = FileStore(tmp_path)
    for key in (f"a/{LOCK_DIR}/keys.lock", f"a/b/{LOCK_DIR}", f"{LOCK_DIR}/x"):
        with pytest.raises(InvalidKeyError, match="are the store's lock files"):
            store.set(key, b"x")
    store.set(f"a/{LOCK_DIR}x/k", b"ok")  # only the exact segment is reserved
    assert store.get(f"a/{LOCK_DIR}x/k") == b"ok"


def test_deleting_a_node_takes_its_lock_directory_with_it(tmp_path):
    root = _hierarchy(tmp_path)
    g = zarrkit.open_group(root, mode="r+")
    g["a"][:] = 3
    with FileStore(root).lock("zarr.json"):
        pass
    assert (root / "a" / LOCK_DIR).is_dir()
    del g["a"]
    assert not (root / "a").exists()
    assert os.listdir(root) == ["zarr.json"]  # a group keeps no lock file


def test_remove_temp_files_leaves_nested_lock_directories_alone(tmp_path):
    root = _hierarchy(tmp_path)
    store = FileStore(root)
    with store.lock("a/c/0"):
        pass
    assert store.remove_temp_files(older_than=0) == []
    assert (root / "a" / LOCK_DIR / "keys.lock").is_file()


def test_locks_beyond_the_kept_lock_files_still_exclude(tmp_path, monkeypatch):
    """A store keeps the lock file descriptions of `_MAX_LOCK_FILES` nodes; locks in further
    nodes open their own, and exclude just as well."""
    monkeypatch.setattr(file_store, "_MAX_LOCK_FILES", 1)
    root = tmp_path / "t.zarr"
    g = zarrkit.open_group(root, mode="w")
    for name in ("a", "b"):
        g.create_array(name, shape=(8,), dtype="uint8", chunks=(4,))
    store = FileStore(root)
    with store.lock("a/c/0"):
        pass
    assert list(store._lock_files) == ["a/"]
    assert _other_process_waits(root / "b", "c/0", store, "b/c/0")
    assert list(store._lock_files) == ["a/"]


def test_threads_writing_through_stores_at_different_roots_lose_nothing(tmp_path):
    """Two handles of one array in one process, one opened at the hierarchy (path "a"), one at
    the array: their read-modify-writes of one chunk exclude each other."""
    root = _hierarchy(tmp_path)
    handles = [zarrkit.open_array(root, path="a", mode="r+"),
               zarrkit.open_array(root / "a", mode="r+")]
    errors = []

    def writer(i):
        try:
            for r in range(150):
                handles[i % 2][i] = r + 1
        except BaseException as exc:  # reported below
            errors.append(exc)
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert handles[0][:4].tolist() == [150] * 4


@needs_fork
def test_processes_opening_the_hierarchy_at_different_roots_lose_nothing(tmp_path, zygote):
    """Partial writes of one shard by processes of which half opened the hierarchy's root
    (path "a") and half the array's directory: with locks per store root they lost updates."""
    shape, inner = (32, 32), (4, 4)
    grid = (shape[0] // inner[0], shape[1] // inner[1])
    cells = [[y, x] for y in range(grid[0]) for x in range(grid[1])]
    workers, rounds, trials = 4, 2, 8
    lost = 0
    for trial in range(trials):
        root = tmp_path / f"t{trial}.zarr"
        g = zarrkit.open_group(root, mode="w")
        g.create_array("a", shape=shape, dtype="uint16", chunks=inner, shards=shape,
                       fill_value=0)
        start = time.time() + 0.15
        jobs = []
        for w in range(workers):
            where = dict(root=str(root), path="a") if w % 2 else dict(root=str(root / "a"))
            jobs.append(("cells", dict(where, cells=cells[w::workers], inner=list(inner),
                                       base=100 * (w + 1), rounds=rounds, start_at=start)))
        assert zygote.run(jobs) == [0] * workers, zygote.stderr()
        got = zarrkit.open_array(root, path="a", mode="r")[...]
        firsts = got.reshape(grid[0], inner[0], grid[1], inner[1])[:, 0, :, 0]
        for w in range(workers):
            lost += sum(firsts[y, x] != 100 * (w + 1) + rounds - 1 for y, x in cells[w::workers])
    assert lost == 0


@needs_fork
def test_attribute_updates_through_different_roots_are_all_kept(tmp_path, zygote):
    workers, names_each = 6, 8
    root = tmp_path / "t.zarr"
    g = zarrkit.open_group(root, mode="w")
    g.create_array("arr", shape=(4,), dtype="uint8", chunks=(4,))
    start = time.time() + 0.15
    jobs = []
    for w in range(workers):
        where = dict(root=str(root), path="arr") if w % 2 else dict(root=str(root / "arr"),
                                                                      path="")
        names = [f"w{w}_{i}" for i in range(names_each)]
        jobs.append(("attrs", dict(where, names=names, start_at=start)))
    assert zygote.run(jobs) == [0] * workers, zygote.stderr()
    attrs = zarrkit.open_array(root, path="arr", mode="r").attrs.asdict()
    assert sorted(attrs) == sorted(f"w{w}_{i}" for w in range(workers) for i in range(names_each))
    np.testing.assert_array_equal(zarrkit.open_array(root / "arr", mode="r")[...], 0)


# -- review: lock files of deleted nodes, symlinks, the homes memo ----------------------------
def test_a_node_deleted_and_made_again_is_locked_in_its_new_lock_file(tmp_path):
    """delete_prefix removes a deleted node's lock file; a store that had opened the old one
    (this store, or a store in another process) must not keep locking it: a process opening
    the new file would hold the same key at the same time."""
    root = _hierarchy(tmp_path)
    store = FileStore(root)
    with store.lock("a/c/0"):  # opens a/.zarrkit-locks/keys.lock and keeps it open
        pass
    zarrkit.open_array(root, path="a", mode="w", shape=(8,), dtype="uint8", chunks=(4,))
    # the node was deleted by another store object (as another process would)
    assert _other_process_waits(root, "a/c/0", store, "a/c/0")
    store.delete_prefix("a/")  # now through this store itself
    zarrkit.open_array(root, path="a", mode="w", shape=(8,), dtype="uint8", chunks=(4,))
    assert _other_process_waits(root, "a/c/0", store, "a/c/0")


def test_a_lock_file_deleted_while_waiting_is_not_held(tmp_path):
    """A lock taken on a lock file that was deleted while the taker waited excludes nobody who
    opens the file at the path now: the taker starts over on the current file."""
    root = _hierarchy(tmp_path)
    taken, done = threading.Event(), threading.Event()

    def taker():
        with FileStore(root).lock("a/c/0"):  # waits on the file deleted below
            taken.set()
            done.wait(60)
    thread = threading.Thread(target=taker)
    try:
        with FileStore(root).lock("a/c/0"):
            thread.start()
            time.sleep(0.3)  # the taker waits on the lock file by now
            os.unlink(root / "a" / LOCK_DIR / "keys.lock")  # as another process's delete_prefix
        assert taken.wait(60)

        @contextlib.contextmanager
        def held_by_the_taker(key):
            yield
            done.set()
            thread.join(60)
        holder = type("Holder", (), {"lock": staticmethod(held_by_the_taker)})
        assert _other_process_waits(root, "a/c/0", holder, "a/c/0")
    finally:
        done.set()
        thread.join(60)


def test_lock_home_lookup_does_not_follow_links_out_of_the_root(tmp_path):
    """A directory linked to a hierarchy outside the root is not a node of this store: its
    metadata is not looked at, and the write is refused naming the key (not a lock directory
    the user never named)."""
    outside = tmp_path / "outside"
    zarrkit.open_group(outside, mode="w")
    root = tmp_path / "t.zarr"
    root.mkdir()
    (root / "link").symlink_to(outside)
    store = FileStore(root)
    with pytest.raises(InvalidKeyError) as info:
        store.set("link/c/0", b"x")
    assert "'link/c/0'" in str(info.value) and LOCK_DIR not in str(info.value)
    assert not (outside / LOCK_DIR).exists()
    with store.lock("link/c/0"):  # the root's lock file, as for any key outside a node
        pass
    assert not (outside / LOCK_DIR).exists()


def test_a_home_found_while_a_node_is_made_is_not_remembered(tmp_path):
    """A thread that looked for a key's node just before another thread made the node must
    not leave its answer (the root) in the memo: this store would lock the node's chunks in
    the root's lock file for good, other processes in the node's."""
    root = tmp_path / "t.zarr"
    store = FileStore(root)
    store.set("zarr.json", b"{}")
    real_node_kind = store._node_kind

    def node_kind_while_made(rel):
        found = real_node_kind(rel)
        if rel == "a":
            store.set("a/zarr.json", b"{}")  # another thread makes the node meanwhile
        return found
    store._node_kind = node_kind_while_made
    store._node_of("a/c/0")
    store._node_kind = real_node_kind
    assert store._node_of("a/c/0")[0] == "a/"


def _waits_in_a_thread(store: FileStore, key: str, holder: FileStore, held_key: str) -> bool:
    """Whether a thread locking `key` in `store` waits while `holder` holds `held_key` (two
    store objects: only the lock between processes can exclude)."""
    got = []

    def take():
        with store.lock(key):
            got.append(1)
    with holder.lock(held_key):
        thread = threading.Thread(target=take)
        thread.start()
        thread.join(0.5)
        waited = thread.is_alive()
    thread.join(60)
    return waited and got == [1]


def test_the_flock_fallback_locks_a_node_the_same_at_either_root(tmp_path, monkeypatch):
    """Without OFD locks (macOS, 32-bit): one flock file per key in the node's lock directory,
    named by the key's path below the node, so stores at either root exclude each other."""
    monkeypatch.setattr(file_store, "_OFD_SETLKW", None)
    root = _hierarchy(tmp_path)
    assert _waits_in_a_thread(FileStore(root / "a"), "c/0", FileStore(root), "a/c/0")
    assert not _waits_in_a_thread(FileStore(root / "a"), "c/1", FileStore(root), "a/c/0")
    names = os.listdir(root / "a" / LOCK_DIR)
    assert len(names) == 2 and all(n.endswith(".lock") for n in names)
    assert file_store._lock_runs(["a/c/0", "a/c/1"]) == [("a/c/0",), ("a/c/1",)]

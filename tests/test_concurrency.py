"""Concurrent writers lose nothing: processes and threads writing different inner chunks of one
shard, whole-shard writes racing partial ones, attribute updates, appends, and resizes racing
with writes (the mechanism is described in docs/concurrency.md).

Process tests fork real writer processes (see `_workers.py`) that all start at the same instant.
Figures (trials, lost updates) are printed; run with `-s` to see them.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import SelectionError
from zarrkit.kvstore.file import FileStore
from zarrkit.kvstore.memory import MemoryStore

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")

SHAPE, INNER = (32, 32), (4, 4)
GRID = (SHAPE[0] // INNER[0], SHAPE[1] // INNER[1])  # 8 x 8 inner chunks in one shard


def _start_at() -> float:
    return time.time() + 0.15  # every child is forked by then: they start together


def _one_shard_array(where, **kwargs):
    return zarrkit.create(where, shape=SHAPE, dtype="uint16", chunks=INNER, shards=SHAPE,
                          fill_value=0, **kwargs)


def _owned(worker: int, workers: int, limit: int | None = None) -> list[list[int]]:
    """Inner chunks (row, col) of worker `worker`: every `workers`-th, interleaved."""
    cells = [[y, x] for y in range(GRID[0]) for x in range(GRID[1])]
    mine = cells[worker::workers]
    return mine if limit is None else mine[:limit]


def _inner_values(a) -> np.ndarray:
    data = a[...]
    return data.reshape(GRID[0], INNER[0], GRID[1], INNER[1])[:, 0, :, 0]


# -- inner chunks of one shard -----------------------------------------------------------------
@needs_fork
def test_processes_writing_inner_chunks_of_one_shard_lose_nothing(tmp_path, zygote):
    workers, rounds, trials = 4, 2, 10
    lost = 0
    for trial in range(trials):
        root = str(tmp_path / f"t{trial}.zarr")
        _one_shard_array(root)
        start = _start_at()
        jobs = [("cells", dict(root=root, cells=_owned(w, workers), inner=list(INNER),
                               base=100 * (w + 1), rounds=rounds, start_at=start))
                for w in range(workers)]
        codes = zygote.run(jobs)
        assert codes == [0] * workers, zygote.stderr()
        got = _inner_values(zarrkit.open_array(root, mode="r"))
        for w in range(workers):
            for y, x in _owned(w, workers):
                lost += got[y, x] != 100 * (w + 1) + rounds - 1
    print(f"\nconcurrency [shard, {workers} processes]: trials={trials} "
          f"writes={trials * GRID[0] * GRID[1] * rounds} lost={lost}")
    assert lost == 0


@needs_fork
def test_whole_shard_writes_racing_partial_writes_lose_nothing(tmp_path, zygote):
    """A whole-shard writer and partial writers: inner chunks only the whole-shard writer
    writes must end with its last value (a stale read-modify-write would put back older)."""
    partial_workers, whole_rounds, trials = 3, 6, 6
    lost = 0
    for trial in range(trials):
        root = str(tmp_path / f"w{trial}.zarr")
        _one_shard_array(root)
        start = _start_at()
        owned = [_owned(w, 8, limit=6) for w in range(partial_workers)]
        jobs = [("cells", dict(root=root, cells=owned[w], inner=list(INNER),
                               base=100 * (w + 1), rounds=3, start_at=start))
                for w in range(partial_workers)]
        jobs.append(("cells", dict(root=root, cells=[[0, 0]], inner=list(SHAPE), base=1000,
                                   rounds=whole_rounds, start_at=start)))
        assert zygote.run(jobs) == [0] * len(jobs), zygote.stderr()
        got = _inner_values(zarrkit.open_array(root, mode="r"))
        mine = {tuple(c) for cells in owned for c in cells}
        last = 1000 + whole_rounds - 1
        for y in range(GRID[0]):
            for x in range(GRID[1]):
                if (y, x) not in mine:
                    lost += got[y, x] != last
    print(f"\nconcurrency [whole vs partial shard writes]: trials={trials} lost={lost}")
    assert lost == 0


def _thread_trial(store_factory, threads: int, rounds: int) -> int:
    a = _one_shard_array(store_factory())
    barrier = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def work(w: int) -> None:
        handle = zarrkit.open_array(a.store, mode="r+")  # a handle per thread, one store
        barrier.wait()
        try:
            for r in range(rounds):
                for y, x in _owned(w, threads):
                    handle[y * 4:(y + 1) * 4, x * 4:(x + 1) * 4] = 100 * (w + 1) + r
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    pool = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    for t in pool:
        t.start()
    barrier.wait()
    for t in pool:
        t.join(120)
    assert not errors, errors
    got = _inner_values(a)
    return sum(int(got[y, x] != 100 * (w + 1) + rounds - 1)
               for w in range(threads) for y, x in _owned(w, threads))


@pytest.mark.parametrize("kind", ["memory", "file", "zip"])
def test_threads_writing_inner_chunks_of_one_shard_lose_nothing(tmp_path, kind):
    import zipfile

    from zarrkit.kvstore.zip import ZipStore

    trials, threads, rounds = 6, 8, 2
    counter = iter(range(10**6))

    def factory():
        n = next(counter)
        if kind == "memory":
            return MemoryStore()
        if kind == "file":
            return FileStore(str(tmp_path / f"t{n}.zarr"))
        return ZipStore(str(tmp_path / f"t{n}.zip"), mode="w", compression=zipfile.ZIP_STORED)

    lost = sum(_thread_trial(factory, threads, rounds) for _ in range(trials))
    print(f"\nconcurrency [shard, {threads} threads, {kind}]: trials={trials} lost={lost}")
    assert lost == 0


# -- attributes --------------------------------------------------------------------------------
@needs_fork
def test_attribute_updates_from_many_processes_are_all_kept(tmp_path, zygote):
    workers, names_each, trials = 6, 6, 3
    lost = 0
    for trial in range(trials):
        root = str(tmp_path / f"a{trial}.zarr")
        g = zarrkit.open_group(root, mode="w")
        g.create_array("arr", shape=(20,), dtype="uint8", chunks=(4,))
        start = _start_at()
        jobs = []
        for w in range(workers):
            path = "arr" if w % 2 else ""
            names = [f"w{w}_{i}" for i in range(names_each)]
            jobs.append(("attrs", dict(root=root, path=path, names=names, start_at=start)))
        # Resizes rewrite the array's zarr.json too: they must keep the attributes.
        jobs.append(("resize", dict(root=root, path="arr", start_at=start,
                                    shapes=[[n] for n in (8, 30, 12, 25, 20)])))
        assert zygote.run(jobs) == [0] * len(jobs), zygote.stderr()
        g = zarrkit.open_group(root, mode="r")
        stored = {"": g.attrs.asdict(), "arr": g["arr"].attrs.asdict()}
        for w in range(workers):
            attrs = stored["arr" if w % 2 else ""]
            lost += sum(f"w{w}_{i}" not in attrs for i in range(names_each))
        assert g["arr"].shape == (20,)
    print(f"\nconcurrency [attributes]: trials={trials} "
          f"updates={trials * workers * names_each} lost={lost}")
    assert lost == 0


def test_attribute_updates_from_many_threads_are_all_kept():
    g = zarrkit.open_group(MemoryStore(), mode="w")
    threads, each = 8, 10

    def work(w: int) -> None:
        node = zarrkit.open_group(g.store, mode="r+")
        for i in range(each):
            node.attrs[f"t{w}_{i}"] = i

    pool = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(60)
    attrs = zarrkit.open_group(g.store, mode="r").attrs
    assert len(attrs) == threads * each


# -- append and resize racing with writes ------------------------------------------------------
@needs_fork
def test_concurrent_appends_each_keep_their_rows(tmp_path, zygote):
    workers, blocks, rows, trials = 4, 5, 2, 3
    bad = 0
    for trial in range(trials):
        root = str(tmp_path / f"p{trial}.zarr")
        zarrkit.create(root, shape=(0, 3), dtype="int32", chunks=(3, 3), fill_value=0)
        start = _start_at()
        jobs = [("append", dict(root=root, blocks=[100 * (w + 1) + b for b in range(blocks)],
                                rows=rows, start_at=start)) for w in range(workers)]
        assert zygote.run(jobs) == [0] * workers, zygote.stderr()
        data = zarrkit.open_array(root, mode="r")[...]
        counts = Counter(data[:, 0].tolist())
        expected = {100 * (w + 1) + b: rows for w in range(workers) for b in range(blocks)}
        bad += data.shape[0] != workers * blocks * rows
        bad += sum(counts.get(v, 0) != n for v, n in expected.items())
        bad += int((data != data[:, :1]).any())  # every row is one block's value
    print(f"\nconcurrency [append]: trials={trials} appends={trials * workers * blocks} "
          f"lost_or_mixed={bad}")
    assert bad == 0


@needs_fork
def test_resize_racing_with_writes_leaves_nothing_outside_the_shape(tmp_path, zygote):
    """Writers that opened the array at its old shape keep writing while another process
    shrinks and grows it: nothing may be left beyond the shape (it would reappear as stale data
    when the array grows again), and writes inside it are never torn."""
    trials, full = 4, 48
    shapes = [[8], [40], [4], [30], [12], [48], [6]]
    stale = 0
    for trial in range(trials):
        root = str(tmp_path / f"r{trial}.zarr")
        zarrkit.create(root, shape=(full,), dtype="int32", chunks=(4,), fill_value=0)
        start = _start_at()
        regions = [[s, s + 7] for s in range(0, full, 5)] * 3
        jobs = [("region_writes", dict(root=root, regions=regions, value=w + 1, start_at=start))
                for w in range(3)]
        jobs.append(("resize", dict(root=root, shapes=shapes, start_at=start)))
        assert zygote.run(jobs) == [0] * len(jobs), zygote.stderr()
        a = zarrkit.open_array(root, mode="r+")
        final = a.shape[0]
        assert final == shapes[-1][0]
        a.resize((full,))
        data = a[...]
        stale += int(np.count_nonzero(data[final:]))
        assert set(np.unique(data[:final]).tolist()) <= {0, 1, 2, 3}
    print(f"\nconcurrency [resize vs writes]: trials={trials} stale_elements={stale}")
    assert stale == 0


def test_writes_follow_a_resize_made_through_another_handle():
    store = MemoryStore()
    a = zarrkit.create(store, shape=(10,), dtype="int32", chunks=(4,), fill_value=0)
    b = zarrkit.open_array(store, mode="r+")
    a.resize(4)
    b[:] = 7  # b still believed the shape was 10: the write applies to the shape as stored
    assert b.shape == (4,)
    a.resize(10)
    np.testing.assert_array_equal(a[...], [7, 7, 7, 7, 0, 0, 0, 0, 0, 0])
    with pytest.raises(SelectionError):
        zarrkit.open_array(store, mode="r+").resize("x")


def test_resize_keeps_attributes_set_through_another_handle():
    store = MemoryStore()
    a = zarrkit.create(store, shape=(10,), dtype="int32", chunks=(4,))
    b = zarrkit.open_array(store, mode="r+")
    b.attrs["kept"] = True
    a.resize(20)  # a's metadata did not know the attribute
    assert zarrkit.open_array(store, mode="r").attrs["kept"] is True


# -- zip archives: one writer --------------------------------------------------------------------
def test_zip_archive_refuses_a_second_writer(tmp_path):
    from zarrkit.errors import StoreError
    from zarrkit.kvstore.zip import ZipStore

    path = str(tmp_path / "one.zip")
    with ZipStore(path, "w") as store:
        store.set("k", b"0")
    first, second = ZipStore(path, "a"), ZipStore(path, "a")  # opening to read is fine
    first.set("k", b"1")  # first becomes the writer
    with pytest.raises(StoreError, match="one writer"):
        second.set("k", b"2")
    with pytest.raises(StoreError, match="one writer"):
        ZipStore(path, "w")
    with ZipStore(path, "r") as reader:  # readers see the archive as last closed
        assert reader.get("k") == b"0"
    first.close()
    with pytest.raises(StoreError, match="changed by another writer"):
        second.set("k", b"2")  # its index describes the archive first replaced
    second.close()
    with ZipStore(path, "a") as third:  # free again once the first writer closed
        assert third.get("k") == b"1"
        third.set("k", b"3")
    with ZipStore(path, "r") as reader:
        assert reader.get("k") == b"3"


def test_locking_every_chunk_keeps_no_lock_per_chunk(tmp_path):
    """Every chunk write takes a lock; neither the lock table nor the lock directory grows."""
    from zarrkit.kvstore import file as file_store

    memory = MemoryStore()
    for where in (memory, str(tmp_path / "a.zarr")):
        a = zarrkit.create(where, shape=(64, 64), dtype="uint8", chunks=(4, 4))
        a[...] = 1
        a[1:63, 1:63] = 2  # partial writes of the edge chunks too
    assert len(memory._key_locks) == 0
    if file_store._OFD_SETLKW is not None:
        assert os.listdir(tmp_path / "a.zarr" / ".zarrkit-locks") == ["keys.lock"]


class _NoWholeWriteLocks(MemoryStore):
    """A store whose whole-value replacements need no lock (like object stores): counts the
    exclusive locks taken."""

    lock_whole_writes = False

    def __init__(self) -> None:
        super().__init__()
        self.locked: list[str] = []

    def lock(self, key):
        self.locked.append(key)
        return super().lock(key)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_whole_chunk_writes_take_no_lock_where_the_store_says_so(zarr_format):
    """Also for v2 arrays, whose chunks go through the dimension separator guard."""
    store = _NoWholeWriteLocks()
    a = zarrkit.create(store, shape=(8, 8), dtype="uint8", chunks=(4, 4), fill_value=0,
                       zarr_format=zarr_format)
    store.locked.clear()
    a[...] = 1
    a[:4, :4] = 0  # a whole chunk of fill value: deleted, still without a lock
    assert store.locked == []
    a[1:3, 5:6] = 2  # a partial write is a read-modify-write: locked
    assert len(store.locked) == 1
    expected = np.ones((8, 8), "uint8")
    expected[:4, :4] = 0
    expected[1:3, 5:6] = 2
    np.testing.assert_array_equal(a[...], expected)
    assert sum(k.endswith(("0.0", "0/0")) for k in store.list_prefix("")) == 0


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_shared_locks_coexist_and_exclude_the_exclusive_one(tmp_path, kind):
    store = MemoryStore() if kind == "memory" else FileStore(str(tmp_path / "l.zarr"))
    other = store if kind == "memory" else FileStore(str(tmp_path / "l.zarr"))  # own locks
    with store.lock_shared("k"), other.lock_shared("k"):
        if kind == "memory":
            assert not store.lock("k").acquire(blocking=False)
        taken = threading.Event()

        def exclusive():
            with other.lock("k"):
                taken.set()

        t = threading.Thread(target=exclusive)
        t.start()
        assert not taken.wait(0.2)  # blocked while shared holders remain
    t.join(10)
    assert taken.is_set()

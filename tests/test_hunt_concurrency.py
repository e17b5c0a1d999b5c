"""Bug hunt, concurrency: readers racing writers of sharded arrays must see each inner chunk old
or new, never read a shard's chunks at the offsets of another value's index (a decode error or
wrong values), whatever the store; and a shard replaced during every attempt is still read."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import zarrkit
from zarrkit.kvstore import FileStore, ZipStore
from zarrkit.kvstore.base import ByteRange, GenerationMismatch
from zarrkit.kvstore.foreign import MappingStore

SHAPE = (32, 32)
OLD = np.full(SHAPE, 7, dtype="uint16")  # compresses well: inner chunks at other offsets
NEW = np.random.default_rng(3).integers(0, 60000, SHAPE, dtype="uint16")  # barely at all


def _create(store):
    a = zarrkit.create(store, shape=SHAPE, dtype="uint16", chunks=(4, 4), shards=(16, 16),
                       fill_value=0, compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    a[...] = OLD
    return a


class _Hooked:
    """Runs `hook` after every index read (`get_with_generation`), as if another writer acted
    between the engine's read of a shard's index and of its inner chunks."""

    hook = None

    def get_with_generation(self, key, byte_range=None):
        found = super().get_with_generation(key, byte_range)
        if self.hook is not None and key.startswith("c/"):  # a shard's index
            self.hook()
        return found


class HookedZip(_Hooked, ZipStore):
    pass


class HookedMapping(_Hooked, MappingStore):
    pass


class HookedFile(_Hooked, FileStore):
    pass


def _stores(tmp_path):
    return {"zip": lambda: HookedZip(tmp_path / "a.zip", mode="w"),
            "dict": lambda: HookedMapping({})}


@pytest.mark.parametrize("kind", ["zip", "dict"])
@pytest.mark.parametrize("sel", [np.s_[0:16, 8:24], np.s_[3:5, 3:13]])  # boxes, parts
def test_shard_replaced_between_index_and_chunks_is_read_again(tmp_path, kind, sel):
    store = _stores(tmp_path)[kind]()
    writer = _create(store)
    reader = zarrkit.open_array(store)

    def replace():
        store.hook = None
        writer[...] = NEW

    store.hook = replace
    np.testing.assert_array_equal(reader[sel], NEW[sel])  # not garbage at the old offsets


@pytest.mark.parametrize("kind", ["zip", "dict"])
def test_generations_change_with_each_write(tmp_path, kind):
    store = _stores(tmp_path)[kind]()
    store.set("k", b"0123456789")
    value, generation = store.get_with_generation("k", ByteRange(0, 2))
    assert bytes(value) == b"01" and generation is not None
    assert [bytes(v) for v in store.get_ranges_if("k", [ByteRange(2, 3)], generation)] == [b"234"]
    store.set("k", bytearray(b"0123456789"))  # equal bytes, written again: a new value
    with pytest.raises(GenerationMismatch):
        store.get_ranges_if("k", [ByteRange(2, 3)], generation)
    store.delete("k")
    with pytest.raises(GenerationMismatch):
        store.get_ranges_if("k", [ByteRange(2, 3)], generation)


@pytest.mark.parametrize("sel", [np.s_[0:16, 4:12], np.s_[3:5, 3:13]])  # in one shard
def test_shard_replaced_during_every_attempt_is_read_whole(tmp_path, sel):
    """Writers that keep replacing a shard between index and chunk reads do not make a reader
    fail: after the retries it reads the shard in one go (index and chunks of one value)."""
    store = HookedFile(tmp_path / "a.zarr")
    writer = _create(store)
    reader = zarrkit.open_array(store)
    flip = [OLD, NEW]

    def replace():
        flip.reverse()
        writer[0:16, 0:16] = flip[0][0:16, 0:16]

    store.hook = replace
    got = reader[sel]
    store.hook = None
    np.testing.assert_array_equal(got, flip[0][sel])


@pytest.mark.parametrize("kind", ["zip", "dict"])
def test_threads_reading_while_others_write_never_see_torn_chunks(tmp_path, kind):
    store = _stores(tmp_path)[kind]()
    a = _create(store)
    a[...] = 0
    errors: list[BaseException] = []
    done = threading.Event()

    def write(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(60):  # inner chunks that compress well or not: offsets keep changing
            y, x = rng.integers(0, 8, 2)
            a[y * 4:y * 4 + 4, x * 4:x * 4 + 4] = rng.integers(1, 60000, (4, 4)) \
                if rng.integers(0, 2) else rng.integers(1, 60000)
            if rng.integers(0, 4) == 0:
                a[...] = rng.integers(1, 60000)

    def read() -> None:
        try:
            while not done.is_set():
                a[...]
                a[3:5, 3:13]
        except BaseException as e:  # a decode error: chunks read at another value's offsets
            errors.append(e)

    writers = [threading.Thread(target=write, args=(s,)) for s in range(3)]
    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in writers + readers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    for t in readers:
        t.join()
    assert errors == []

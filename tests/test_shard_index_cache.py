"""Shard indexes cached per array handle, and reads of inner chunks checked against the
generation of the shard their index came from (so a shard replaced meanwhile is never read at
its old offsets)."""

from __future__ import annotations

import os
import types
import uuid

import numpy as np
import pytest

import zarrkit
from zarrkit.engine.cache import ShardIndexCache
from zarrkit.kvstore import ByteRange, FileStore, MemoryStore, open_kvstore
from zarrkit.kvstore.base import GenerationMismatch
from zarrkit.kvstore.foreign import MappingStore

SHAPE = (64, 64)
OLD = np.arange(64 * 64, dtype="uint16").reshape(SHAPE)  # compresses well
NEW = np.random.default_rng(1).integers(0, 60000, SHAPE, dtype="uint16")  # barely at all


class _Spy:
    """A store that counts index reads (the engine's `get_with_generation` calls, and the
    first read of `get_then_ranges`) and can run a hook right after one, as if another writer
    acted at that moment."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.index_reads = 0
        self.after_index_read = None  # called once
        self.after_every_index_read = None

    def get_with_generation(self, key, byte_range=None):
        found = super().get_with_generation(key, byte_range)
        self._index_read()
        return found

    def _index_read(self):
        self.index_reads += 1
        hook, self.after_index_read = self.after_index_read, None
        for fn in (hook, self.after_every_index_read):
            if fn is not None:
                fn()


class SpyMemory(_Spy, MemoryStore):
    pass


class SpyFile(_Spy, FileStore):
    """The file store reads an index and the inner chunks it picks through one descriptor:
    the hook runs in between, while the old file is open."""

    def get_then_ranges(self, key, byte_range, then):
        def spied(first):
            self._index_read()
            return then(first)
        return FileStore.get_then_ranges(self, key, byte_range, spied)


@pytest.fixture(params=["memory", "file"])
def store(request, tmp_path):
    return SpyMemory() if request.param == "memory" else SpyFile(tmp_path / "a")


def _create(store, data=OLD):
    arr = zarrkit.create(store, shape=SHAPE, dtype="uint16", chunks=(8, 8), shards=(32, 32),
                         compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    arr[...] = data
    return arr


# Two kinds of reads take different paths: whole inner chunks (decoded as a box) and parts.
SELECTIONS = [(slice(0, 16), slice(8, 32)), (slice(3, 5), slice(3, 13))]


@pytest.mark.parametrize("sel", SELECTIONS)
def test_a_handle_reads_each_shard_index_once(store, sel):
    _create(store)
    reader = zarrkit.open_array(store)
    store.index_reads = 0
    for _ in range(3):
        np.testing.assert_array_equal(reader[sel], OLD[sel])
    assert store.index_reads == 1
    np.testing.assert_array_equal(reader[40:42, 40:42], OLD[40:42, 40:42])  # another shard
    assert store.index_reads == 2
    assert len(zarrkit.open_array(store)._engine.shard_indexes) == 0  # per handle: cold


@pytest.mark.parametrize("sel", SELECTIONS)
def test_a_shard_replaced_by_another_writer_is_read_anew(store, sel):
    _create(store)
    reader = zarrkit.open_array(store)
    np.testing.assert_array_equal(reader[sel], OLD[sel])  # its index is now cached
    zarrkit.open_array(store)[...] = NEW
    np.testing.assert_array_equal(reader[sel], NEW[sel])
    np.testing.assert_array_equal(reader[...], NEW)


@pytest.mark.parametrize("sel", SELECTIONS)
def test_a_shard_replaced_between_index_and_chunks_is_read_again(store, sel):
    # Read at the old index's offsets, the new shard's bytes are garbage (or wrong values).
    _create(store)
    reader, writer = zarrkit.open_array(store), zarrkit.open_array(store)

    def replace():
        writer[...] = NEW

    store.index_reads, store.after_index_read = 0, replace
    if _reads_through_one_open(store, sel):  # the file it opened: the old value, whole
        np.testing.assert_array_equal(reader[sel], OLD[sel])
        assert store.index_reads == 1
        return
    np.testing.assert_array_equal(reader[sel], NEW[sel])
    assert store.index_reads == 2  # the stale index, then the new one


def _reads_through_one_open(store, sel) -> bool:
    """Whether the engine reads `sel`'s index and inner chunks with one `get_then_ranges` and
    the store does that through one open file (parts of inner chunks, not boxes of them)."""
    return isinstance(store, FileStore) and sel == SELECTIONS[1]


@pytest.mark.parametrize("sel", SELECTIONS)
def test_a_shard_deleted_after_its_index_was_cached_reads_as_fill(store, sel):
    _create(store)
    reader = zarrkit.open_array(store)
    np.testing.assert_array_equal(reader[sel], OLD[sel])
    zarrkit.open_array(store)[0:32, 0:32] = 0  # the fill value: the shard is deleted
    assert not store.exists("c/0/0")
    np.testing.assert_array_equal(reader[sel], 0)


def test_a_shard_deleted_between_index_and_chunks_reads_as_fill(store):
    _create(store)
    reader, writer = zarrkit.open_array(store), zarrkit.open_array(store)

    def delete():
        writer[0:32, 0:32] = 0

    store.after_index_read = delete
    np.testing.assert_array_equal(reader[0:16, 8:32], 0)


@pytest.mark.parametrize("sel", SELECTIONS)
def test_a_shard_replaced_during_every_attempt_is_read_whole(store, sel):
    _create(store)
    reader, writer = zarrkit.open_array(store), zarrkit.open_array(store)
    flip = [OLD, NEW]

    def replace():
        flip.reverse()
        writer[0:32, 0:32] = flip[0][0:32, 0:32]

    store.after_every_index_read = replace
    if _reads_through_one_open(store, sel):  # never a mix of two values to retry
        np.testing.assert_array_equal(reader[sel], OLD[sel])
        return
    store.index_reads = 0
    # Then the whole shard in one read: index and chunks of one value, the one stored by then.
    np.testing.assert_array_equal(reader[sel], flip[0][sel])
    assert store.index_reads == 4


def test_own_writes_drop_the_cached_index(store):
    arr = _create(store)
    np.testing.assert_array_equal(arr[0:8, 0:8], OLD[0:8, 0:8])
    assert len(arr._engine.shard_indexes) == 1
    arr[0:32, 0:32] = NEW[0:32, 0:32]
    assert len(arr._engine.shard_indexes) == 0
    store.index_reads = 0
    np.testing.assert_array_equal(arr[0:8, 0:8], NEW[0:8, 0:8])
    assert store.index_reads == 1


def test_stores_without_generations_read_unchecked():
    data: dict = {}
    _create(MappingStore(data))
    # A mapping other than a dict may make a new object per read: it hands out no generations.
    reader = zarrkit.open_array(MappingStore(types.MappingProxyType(data)))
    assert reader.store.get_with_generation("c/0/0")[1] is None
    for _ in range(2):
        np.testing.assert_array_equal(reader[3:5, 3:13], OLD[3:5, 3:13])
    assert len(reader._engine.shard_indexes) == 0


def test_the_index_cache_is_bounded_least_recently_used_first():
    cache = ShardIndexCache(total_bytes_limit=350)
    index = np.zeros((4, 4, 2), np.uint64)  # 256 bytes
    small = np.zeros((8,), np.uint64)  # 64 bytes
    cache.put("a", small, 1)
    cache.put("b", small, 2)
    cache.put("c", small, 3)
    assert cache.get("a")[1] == 1  # now the most recently used
    cache.put("d", index, 4)  # 3 * 64 + 256 > 350: the least recently used go
    assert cache.get("b") is None and cache.get("c") is None
    assert cache.get("a") is not None and cache.get("d")[1] == 4
    cache.put("huge", np.zeros(1000, np.uint64), 5)  # larger than the whole cache: not kept
    assert cache.get("huge") is None and cache.get("d") is not None
    assert not cache.get("a")[0].flags.writeable  # shared by readers: read-only
    cache.discard(["a", "d", "missing"])
    assert len(cache) == 0


# -- the store contract -----------------------------------------------------------------------

def _check_generations(store, key="k"):
    store.set(key, b"0123456789")
    value, gen = store.get_with_generation(key, ByteRange.suffix(3))
    assert bytes(value) == b"789" and gen is not None
    assert store.get_with_generation(key)[1] == gen  # unchanged value, same generation
    got = store.get_ranges_if(key, [ByteRange(0, 2), ByteRange(8, 5), ByteRange(50, 2)], gen)
    assert [bytes(g) for g in got] == [b"01", b"89", b""]
    store.set(key, b"9876543210")  # same size, other bytes (S3's ETag is their MD5)
    with pytest.raises(GenerationMismatch, match="holds a new value"):
        store.get_ranges_if(key, [ByteRange(0, 2)], gen)
    gen = store.get_with_generation(key)[1]
    store.delete(key)
    with pytest.raises(GenerationMismatch):
        store.get_ranges_if(key, [ByteRange(0, 2)], gen)
    assert store.get_with_generation(key) == (None, None)
    store.set(key, b"abc")
    got = store.get_ranges_if(key, [ByteRange(1, 1)], None)  # None: unchecked
    assert [bytes(g) for g in got] == [b"b"]
    _check_then_ranges(store, key)


def _check_then_ranges(store, key):
    """`get_then_ranges`: the first read, its generation, then the ranges picked from it."""
    store.set(key, b"0123456789")
    seen = []

    def then(first):
        seen.append(bytes(first))
        return [ByteRange(int(chr(first[0])), 2), ByteRange(0, 1), ByteRange(9, 4)]
    first, gen, got = store.get_then_ranges(key, ByteRange.suffix(3), then)
    assert seen == [b"789"] and bytes(first) == b"789"
    assert [bytes(g) for g in got] == [b"78", b"0", b"9"]
    assert gen == store.get_with_generation(key)[1]
    assert store.get_then_ranges("missing", ByteRange.suffix(3), then) == (None, None, [])
    assert seen == [b"789"]  # not called for a missing key
    with pytest.raises(ValueError, match="picked"):
        store.get_then_ranges(key, None, lambda first: (_ for _ in ()).throw(ValueError("picked")))


def test_memory_store_generations():
    _check_generations(MemoryStore())


def test_file_store_generations(tmp_path):
    _check_generations(FileStore(tmp_path / "s"))
    store = FileStore(tmp_path / "s")
    store.set("x", b"abcd")
    gen = store.get_with_generation("x")[1]
    with open(tmp_path / "s" / "x", "r+b") as f:  # another program rewriting it in place
        f.write(b"ABCDE")
    with pytest.raises(GenerationMismatch):
        store.get_ranges_if("x", [ByteRange(0, 1)], gen)


# -- remote stores ----------------------------------------------------------------------------

def test_s3_generations_are_etags():
    pytest.importorskip("obstore")
    pytest.importorskip("moto")
    from _loopback import make_bucket, moto_s3, s3_options

    with moto_s3() as endpoint:
        bucket = f"b-{uuid.uuid4().hex[:12]}"
        make_bucket(endpoint, bucket)
        url = f"s3://{bucket}/root"
        opts = s3_options(endpoint)
        store, _ = open_kvstore(url, storage_options=opts)
        _check_generations(store)
        _create(store)
        reader = zarrkit.open_array(url, storage_options=opts)
        for sel in SELECTIONS:
            np.testing.assert_array_equal(reader[sel], OLD[sel])
        assert len(reader._engine.shard_indexes) == 1
        zarrkit.open_array(url, storage_options=opts)[...] = NEW
        for sel in SELECTIONS:
            np.testing.assert_array_equal(reader[sel], NEW[sel])


@pytest.mark.parametrize("weak", [False, True])
def test_http_generations_are_strong_etags(tmp_path, weak):
    pytest.importorskip("obstore")
    from _loopback import http_server

    root = tmp_path / "served"
    _create(FileStore(root / "a.zarr"))
    with http_server(str(root)) as server:
        server.weak_etags = weak
        url = f"{server.url}/a.zarr"
        http, path = open_kvstore(url)
        gen = http.get_with_generation(f"{path}/c/0/0".lstrip("/"), ByteRange.suffix(8))[1]
        assert (gen is None) == weak  # If-Match never matches a weak tag: not used
        reader = zarrkit.open_array(url)
        for sel in SELECTIONS:
            np.testing.assert_array_equal(reader[sel], OLD[sel])
        assert len(reader._engine.shard_indexes) == (0 if weak else 1)
        zarrkit.open_array(str(root / "a.zarr"))[...] = NEW
        for sel in SELECTIONS:
            np.testing.assert_array_equal(reader[sel], NEW[sel])


def test_file_generations_differ_when_an_inode_number_is_reused(tmp_path):
    # ext4 gives a freed inode number out again at once, and before Linux 6.13 file times tick
    # in milliseconds: a same-size rewrite within one tick would look like the old file but
    # for the inode's generation number, which the file store's generations include.
    from zarrkit.kvstore import file as file_module

    def opened():
        return os.open(tmp_path / "s" / "k", os.O_RDONLY)

    store = FileStore(tmp_path / "s")
    store.set("k", b"a" * 10)
    fd = opened()
    first = os.fstat(fd)
    old = file_module._generation(fd, first)
    os.close(fd)
    for _ in range(300):
        store.set("k", b"b" * 10)
        fd = opened()
        try:
            if os.fstat(fd).st_ino == first.st_ino:
                # Same number, size and (as if one tick) times: only the generation differs.
                assert file_module._generation(fd, first) != old
                return
        finally:
            os.close(fd)
    pytest.skip("this file system did not reuse the inode number in 300 rewrites")

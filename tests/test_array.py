"""Arrays end to end: create, index, write, resize, attributes, errors, on every store."""

import json

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import (
    ChecksumError,
    CorruptDataError,
    NodeExistsError,
    NodeNotFoundError,
    ReadOnlyError,
    SelectionError,
)
from zarrkit.kvstore.memory import MemoryStore

BLOSC = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle"}}


def _data(shape, dtype="int32"):
    return (np.arange(int(np.prod(shape))) % 1000).astype(dtype).reshape(shape)


@pytest.mark.parametrize("shards", [None, (8, 12)])
def test_roundtrip_every_store(any_store, shards):
    data = _data((19, 25))
    a = zarrkit.create(any_store, (19, 25), "int32", chunks=(4, 6), shards=shards,
                       compressors=[BLOSC])
    a[...] = data
    np.testing.assert_array_equal(a[...], data)
    b = zarrkit.open(any_store, mode="r")
    np.testing.assert_array_equal(b[...], data)
    np.testing.assert_array_equal(b[3:17:3, ::-2], data[3:17:3, ::-2])
    assert b.chunks == (4, 6) and b.shards == shards


def test_file_store_layout(tmp_path):
    path = tmp_path / "a.zarr"
    a = zarrkit.create(str(path), (4, 4), "uint8", chunks=(2, 2), fill_value=0)
    a[0:2, 0:2] = 1
    files = [p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()]
    # The hidden lock directory holds one lock file whatever the number of chunks.
    assert sorted(files) == [".zarrkit-locks/keys.lock", "c/0/0", "zarr.json"]
    doc = json.loads((path / "zarr.json").read_text())
    assert doc["shape"] == [4, 4] and doc["chunk_grid"]["configuration"]["chunk_shape"] == [2, 2]


def test_fill_value_chunks_not_stored_and_deleted(counting_store):
    a = zarrkit.create(counting_store, (8,), "float32", chunks=(4,), fill_value=float("nan"))
    a[:] = np.nan
    assert list(counting_store.list_prefix("c/")) == []
    a[:] = 1.0
    assert sorted(counting_store.list_prefix("c/")) == ["c/0", "c/1"]
    a[4:] = np.nan  # overwriting a chunk with the fill value deletes it
    assert sorted(counting_store.list_prefix("c/")) == ["c/0"]
    np.testing.assert_array_equal(a[:], [1, 1, 1, 1] + [np.nan] * 4)


def test_write_empty_chunks_keeps_them():
    store = MemoryStore()
    a = zarrkit.create(store, (8,), "int16", chunks=(4,), write_empty_chunks=True)
    a[:] = 0
    assert sorted(store.list_prefix("c/")) == ["c/0", "c/1"]


def test_negative_zero_is_not_the_fill_value():
    store = MemoryStore()
    a = zarrkit.create(store, (4,), "float64", chunks=(4,), fill_value=0.0)
    a[:] = -0.0
    assert list(store.list_prefix("c/")) == ["c/0"]
    assert np.signbit(a[:]).all()


def test_sharded_read_fetches_only_needed_bytes(counting_store):
    data = _data((128, 128), "uint16")
    a = zarrkit.create(counting_store, (128, 128), "uint16", chunks=(8, 8), shards=(128, 128),
                       compressors=None)
    a[...] = data
    shard_size = counting_store.inner.size("c/0/0")
    counting_store.gets.clear()
    b = zarrkit.open(counting_store, mode="r")
    counting_store.gets.clear()
    np.testing.assert_array_equal(b[10:12, 10:12], data[10:12, 10:12])
    assert counting_store.bytes_read() == 8 * 8 * 2 + 256 * 16 + 4  # one inner chunk + index
    assert counting_store.bytes_read() < shard_size / 8


def test_whole_shard_write_does_not_read(counting_store):
    a = zarrkit.create(counting_store, (32, 32), "int32", chunks=(8, 8), shards=(16, 16))
    a[...] = _data((32, 32))
    counting_store.gets.clear()
    a[0:16, 0:16] = 5  # exactly one shard
    assert not [k for k, _ in counting_store.gets if k.startswith("c/")]
    a[0:4, 0:4] = 6  # part of a shard: read-modify-write
    assert [k for k, _ in counting_store.gets if k.startswith("c/")] == ["c/0/0"]
    expected = _data((32, 32))
    expected[0:16, 0:16] = 5
    expected[0:4, 0:4] = 6
    np.testing.assert_array_equal(a[...], expected)


def test_partial_shard_update_keeps_other_inner_chunks_bytes():
    store = MemoryStore()
    a = zarrkit.create(store, (16,), "int32", chunks=(4,), shards=(16,), compressors=[BLOSC])
    a[:] = np.arange(16)
    a[5] = 100
    expected = np.arange(16)
    expected[5] = 100
    np.testing.assert_array_equal(a[:], expected)
    a[0:8] = 0  # inner chunks 0 and 1 become fill: dropped from the shard
    a[8:16] = 0  # now the whole shard is fill: the key is removed
    assert list(store.list_prefix("c/")) == []


def test_zero_dimensional_array():
    store = MemoryStore()
    a = zarrkit.create(store, (), "float64", fill_value=1.5)
    assert a[...] == 1.5 and a[()] == 1.5
    a[...] = 7
    assert list(store.list_prefix("")) == ["c", "zarr.json"] or \
        sorted(store.list_prefix("")) == ["c", "zarr.json"]
    assert zarrkit.open(store, mode="r")[()] == 7


def test_zero_length_dimension():
    a = zarrkit.create(MemoryStore(), (0, 5), "int8", chunks=(2, 2))
    assert a[...].shape == (0, 5)
    a[...] = np.zeros((0, 5))
    assert a[:, 1:3].shape == (0, 2)


@pytest.mark.parametrize("encoding,expected", [
    ({"name": "default", "configuration": {"separator": "/"}}, "c/1/0"),
    ({"name": "default", "configuration": {"separator": "."}}, "c.1.0"),
    ({"name": "v2", "configuration": {"separator": "."}}, "1.0"),
    ({"name": "v2", "configuration": {"separator": "/"}}, "1/0"),
])
def test_chunk_key_encodings(encoding, expected):
    store = MemoryStore()
    a = zarrkit.create(store, (4, 4), "uint8", chunks=(2, 4), chunk_key_encoding=encoding)
    a[2:4] = 9
    assert [k for k in store.list_prefix("") if k != "zarr.json"] == [expected]
    np.testing.assert_array_equal(zarrkit.open(store, mode="r")[...], [[0] * 4] * 2 + [[9] * 4] * 2)


def test_oindex_vindex_and_fancy():
    data = _data((10, 12))
    a = zarrkit.array(data, MemoryStore(), chunks=(3, 5))
    rows, cols = np.array([7, 1, 1, 9]), np.array([0, 11, 4])
    np.testing.assert_array_equal(a.oindex[rows, cols], data[np.ix_(rows, cols)])
    np.testing.assert_array_equal(a.oindex[rows, 2:9:3], data[rows][:, 2:9:3])
    np.testing.assert_array_equal(a.vindex[rows, np.array([1, 2, 3, 4])],
                                  data[rows, [1, 2, 3, 4]])
    mask = data % 7 == 0
    np.testing.assert_array_equal(a.vindex[mask], data[mask])
    np.testing.assert_array_equal(a[mask], data[mask])
    np.testing.assert_array_equal(a[[1, 3]], data[[1, 3]])
    np.testing.assert_array_equal(a[:, [1, 3]], data[:, [1, 3]])
    a.vindex[mask] = -1
    data[mask] = -1
    a.oindex[[0, 2], [1, 5]] = -2
    data[np.ix_([0, 2], [1, 5])] = -2
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(np.asarray(a), data)


def test_resize_erases_outside_and_append():
    a = zarrkit.array(_data((10, 10)), MemoryStore(), chunks=(4, 4))
    a.resize(5, 7)
    assert a.shape == (5, 7)
    a.resize((10, 10))
    expected = np.zeros((10, 10), dtype="int32")
    expected[:5, :7] = _data((10, 10))[:5, :7]
    np.testing.assert_array_equal(a[...], expected)
    a.append(np.ones((3, 10), dtype="int32"))
    assert a.shape == (13, 10)
    np.testing.assert_array_equal(a[10:], 1)
    with pytest.raises(SelectionError):
        a.append(np.ones((3, 9)))


def test_attributes_persist_and_merge():
    store = MemoryStore()
    a = zarrkit.create(store, (2,), "int8", attributes={"a": 1})
    a.attrs["b"] = [1, 2]
    other = zarrkit.open(store)
    other.attrs["c"] = "x"  # another handle: its update re-reads, so "b" is kept
    a.attrs.update(d=None)
    assert dict(zarrkit.open(store, mode="r").attrs) == {"a": 1, "b": [1, 2], "c": "x", "d": None}
    del a.attrs["a"]
    assert "a" not in zarrkit.open(store, mode="r").attrs


def test_modes(tmp_path):
    path = str(tmp_path / "m.zarr")
    with pytest.raises(NodeNotFoundError):
        zarrkit.open(path, mode="r")
    g = zarrkit.open(path, mode="a")
    assert isinstance(g, zarrkit.Group)
    a = zarrkit.open(path, mode="w", shape=(3,), dtype="i2")
    assert isinstance(a, zarrkit.Array)
    with pytest.raises(NodeExistsError):
        zarrkit.open(path, mode="w-", shape=(3,), dtype="i2")
    ro = zarrkit.open(path, mode="r")
    with pytest.raises(ReadOnlyError):
        ro[0] = 1
    with pytest.raises(ReadOnlyError):
        ro.attrs["x"] = 1
    zarrkit.open(path, mode="r+")[0] = 4
    assert zarrkit.open(path, mode="r")[0] == 4


def test_selection_errors():
    a = zarrkit.create(MemoryStore(), (5, 5), "int8", chunks=(2, 2))
    with pytest.raises(SelectionError, match="out of bounds"):
        a[5, 0]
    with pytest.raises(SelectionError):
        a[0, 0, 0]
    with pytest.raises(SelectionError, match="shape"):
        a[0:2, 0:2] = np.ones((3, 3))
    with pytest.raises(IndexError):  # still an IndexError for generic handlers
        a[-6]


def test_corrupt_chunk_and_checksum_errors():
    store = MemoryStore()
    a = zarrkit.create(store, (4,), "int32", chunks=(4,),
                       codecs=[{"name": "bytes"}, {"name": "crc32c"}])
    a[:] = [1, 2, 3, 4]
    good = bytes(store.get("c/0"))
    store.set("c/0", good[:-1] + bytes([good[-1] ^ 1]))
    with pytest.raises(ChecksumError, match="c/0"):
        a[:]
    store.set("c/0", good[:5])
    with pytest.raises(CorruptDataError, match="c/0"):
        a[:]


def test_corrupt_shard_index():
    store = MemoryStore()
    a = zarrkit.create(store, (16,), "int32", chunks=(4,), shards=(16,), compressors=None)
    a[:] = np.arange(16)
    shard = bytearray(store.get("c/0"))
    shard[-20:-12] = (2**40).to_bytes(8, "little")  # an offset far outside the shard...
    import crc32c
    index = bytes(shard[-68:-4])
    shard[-4:] = crc32c.crc32c(index).to_bytes(4, "little")  # ...with a valid checksum
    store.set("c/0", bytes(shard))
    with pytest.raises(CorruptDataError):
        a[:]


def test_group_hierarchy(any_store):
    root = zarrkit.group(any_store, attributes={"title": "t"})
    sub = root.create_group("a")
    sub.create_array("x", shape=(3,), dtype="u1")
    root.create_array("b/c/y", shape=(2, 2), dtype="f4")  # implicit parents become groups
    assert root.keys() == ["a", "b"]
    assert "a/x" in root and "b/c" in root and "nope" not in root
    assert isinstance(root["b/c"], zarrkit.Group)
    assert root["b/c/y"].shape == (2, 2)
    assert root.attrs["title"] == "t"
    tree = root.tree()
    assert "x (3,) uint8" in tree and "y (2, 2) float32" in tree
    with pytest.raises(NodeNotFoundError):
        root["missing"]
    with pytest.raises(NodeExistsError):
        root.create_group("a")
    with pytest.raises(zarrkit.InvalidNameError):
        root.create_group("__bad")
    with pytest.raises(zarrkit.InvalidNameError):
        root["../up"]


# -- iteration --------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, chunks, shards", [
    ((17,), (5,), None), ((10, 7), (4, 3), None), ((9, 4, 3), (2, 4, 2), None),
    ((10, 7), (2, 3), (4, 6)),
])
def test_iteration_yields_what_numpy_yields(shape, chunks, shards):
    data = np.arange(int(np.prod(shape)), dtype="i4").reshape(shape)
    z = zarrkit.create(None, shape=shape, chunks=chunks, shards=shards, dtype="i4")
    z[...] = data
    got, expected = list(z), list(data)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert np.shape(g) == np.shape(e) and np.asarray(g).dtype == e.dtype
        np.testing.assert_array_equal(g, e)
    for start, end in [(3, 9), (-4, None), (None, 2), (6, 6), (8, 3), (0, 100)]:
        sliced = list(z.islice(start, end))
        np.testing.assert_array_equal(np.asarray(sliced).reshape((-1,) + shape[1:]),
                                      data[start:end])


def test_iteration_reads_each_chunk_once(counting_store):
    z = zarrkit.create(counting_store, shape=(40, 6), chunks=(10, 3), dtype="i2")
    z[...] = 1
    counting_store.gets.clear()
    assert sum(int(row.sum()) for row in z) == 240
    keys = [key for key, _ in counting_store.gets]
    assert sorted(keys) == sorted(set(keys)) and len(keys) == 8  # row by row: 80 reads


def test_islice_bounds_must_be_integers():
    z = zarrkit.create(None, shape=(4,), dtype="i4")
    with pytest.raises(zarrkit.SelectionError, match="integers or None"):
        z.islice("a")


def test_a_0d_array_has_no_length_nor_iteration():
    z = zarrkit.create(None, shape=(), dtype="i4")
    for action in (len, iter, lambda a: a.islice()):
        with pytest.raises(zarrkit.NodeTypeError, match="0-d"):
            action(z)
        with pytest.raises(TypeError):  # as numpy's
            action(z)

"""Write paths of the engine (engine/chunk_io.py): failed writes and errors on sharded arrays,
batches of small chunks."""

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import CodecError, CorruptDataError
from zarrkit.kvstore import MemoryStore

_INDEX = [{"name": "bytes", "configuration": {"endian": "little"}}]


def _sharding(chunk_shape, codecs):
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(chunk_shape), "codecs": codecs, "index_codecs": _INDEX}}


_VLEN = [{"name": "vlen-utf8", "configuration": {}}]


@pytest.mark.parametrize("codecs", [
    [_sharding([2], [_sharding([1], _VLEN)])],  # nested sharding
    [{"name": "transpose", "configuration": {"order": [0]}}, _sharding([2], _VLEN)],
], ids=["nested", "transpose"])
def test_a_bad_string_fails_the_whole_write_before_any_shard_is_stored(codecs):
    """Values were checked up front only when vlen-utf8 was the sharding codec's own serializer:
    with nested sharding or a transpose first, the shards before the bad value were stored."""
    a = zarrkit.create(MemoryStore(), shape=(8,), dtype="str", chunks=(4,), codecs=codecs,
                       fill_value="")
    a[...] = "x"
    value = np.array(["y"] * 8, dtype=object)
    value[7] = None
    with pytest.raises(CodecError, match="at 7 of the values written"):
        a[...] = value
    assert a[...].tolist() == ["x"] * 8


@pytest.mark.parametrize("location", ["start", "end"])
@pytest.mark.parametrize("stored", [b"abc", b"\xff" * 200])
def test_a_corrupt_shard_index_names_the_shard(location, stored):
    store = MemoryStore()
    a = zarrkit.create(store, shape=(8,), dtype="int32", chunks=(2,), shards=(4,),
                       index_location=location)
    a[...] = 1
    store.set("c/0", stored)
    with pytest.raises(CorruptDataError, match="^shard 'c/0': "):
        a[0] = 5  # a partial shard update reads the index
    with pytest.raises(CorruptDataError, match="^shard 'c/0': "):
        a[0:2]
    assert bytes(store.get("c/0")) == stored


@pytest.mark.parametrize("zarr_format", [3, 2])
@pytest.mark.parametrize("file_batches", [False, True])
def test_many_small_chunks_written_in_parts_match_numpy(tmp_path, monkeypatch, zarr_format,
                                                        file_batches):
    """Small chunks go to the store in one contiguous batch per thread (`replace_many`), or,
    where the store writes batches without the GIL, in batches encoded by this thread and stored
    by the pool (`_write_pipelined`): whole chunks, partial ones and chunks that become the fill
    value (deleted) all end up right."""
    from zarrkit.engine import chunk_io
    from zarrkit.engine.executor import concurrency
    from zarrkit.kvstore import _file_batch

    monkeypatch.setattr(_file_batch, "AVAILABLE", file_batches and _file_batch.AVAILABLE)
    monkeypatch.setattr(chunk_io, "WRITE_BATCH_BYTES", 256 * 100)  # 100 chunks of 8 x 8
    batches = []
    name = "_encoded_batch" if file_batches else "_write_inline"
    real = getattr(chunk_io, name)
    monkeypatch.setattr(chunk_io, name, lambda arr, ps, value, *rest: (
        batches.append(len(ps)), real(arr, ps, value, *rest))[1])
    rng = np.random.default_rng(5)
    expected = rng.standard_normal((300, 260)).astype("float32")
    uncompressed = {"codecs": ["bytes"]} if zarr_format == 3 else {"compressor": None}
    a = zarrkit.create(tmp_path / "a", shape=expected.shape, dtype="float32", chunks=(8, 8),
                       zarr_format=zarr_format, fill_value=0, **uncompressed)
    a[...] = expected
    parts = 13 if file_batches else min(concurrency(), 39)
    assert len(batches) == parts and sum(batches) == 38 * 33
    update = rng.standard_normal((150, 131)).astype("float32")
    update[:64, :64] = 0  # whole chunks equal to the fill value: their keys are deleted
    a[3:153, 5:136] = update
    expected[3:153, 5:136] = update
    np.testing.assert_array_equal(a[...], expected)
    stored = sum(1 for k in a.store.list_prefix("") if k[-1].isdigit())
    assert stored == 38 * 33 - 7 * 7  # chunks 1..7 x 1..7 lie inside the zeros


@pytest.mark.parametrize("dtype, good, bad", [(str, "y", b"y"), (bytes, b"y", "y")])
def test_a_bad_v2_vlen_value_fails_the_whole_write_before_any_chunk_is_stored(dtype, good, bad):
    """numcodecs checks v2 vlen values only while encoding each chunk: the chunks before a bad
    value were stored, the write half applied. Now all are checked first, as numcodecs would
    take them (exact str/bytes, and None or 0 for an empty value)."""
    a = zarrkit.create(MemoryStore(), shape=(8,), dtype=dtype, chunks=(2,), zarr_format=2)
    old = np.array(["x" if dtype is str else b"x"] * 8, dtype=object)
    a[...] = old
    value = np.array([good] * 8, dtype=object)
    value[7] = bad
    with pytest.raises(CodecError, match=r"cannot store .* at 7 of the values written"):
        a[...] = value
    assert a[...].tolist() == old.tolist()
    value[6:] = [None, 0]
    a[...] = value
    assert a[...].tolist() == [good] * 6 + [good[:0]] * 2


@pytest.mark.parametrize("zarr_format", [3, 2])
@pytest.mark.parametrize("dtype, scalar", [(str, np.str_), (bytes, np.bytes_)])
def test_numpy_string_scalars_are_stored_as_plain_values(zarr_format, dtype, scalar):
    """numpy's str_/bytes_ (what indexing a U/S array gives) are str/bytes; numcodecs takes only
    the exact types and raised TypeError part-way through the write."""
    a = zarrkit.create(MemoryStore(), shape=(4,), dtype=dtype, chunks=(2,),
                       zarr_format=zarr_format)
    a[...] = np.array([scalar("a"), "b", scalar("c"), "d"] if dtype is str else
                      [scalar(b"a"), b"b", scalar(b"c"), b"d"], dtype=object)
    a[3] = scalar("q" if dtype is str else b"q")
    got = a[...].tolist()
    assert got == (["a", "b", "c", "q"] if dtype is str else [b"a", b"b", b"c", b"q"])
    assert {type(v) for v in got} == {dtype}


# -- shards written whole from a box of the value (`_write_box_shard`) ---------------------------
def _box_shards_only(monkeypatch):
    """Fail if any inner chunk's projection is listed (only the box path may run)."""
    from zarrkit.engine import chunk_io

    def listed(*args):
        raise AssertionError("inner chunks listed for a shard written whole")
    monkeypatch.setattr(chunk_io, "_members", listed)


@pytest.mark.parametrize("order", ["C", "F"])
def test_whole_shards_are_cut_from_the_value_without_listing_inner_chunks(tmp_path, monkeypatch,
                                                                         order):
    a = zarrkit.create(tmp_path / "a", shape=(64, 96), dtype="int32", chunks=(8, 16),
                       shards=(32, 32), fill_value=0)
    rng = np.random.default_rng(7)
    expected = np.asarray(rng.integers(1, 100, (64, 96), dtype="int32"), order=order)
    expected[8:16, 16:32] = 0  # an inner chunk of the fill value: left out of its shard
    _box_shards_only(monkeypatch)
    a[...] = expected
    monkeypatch.undo()
    np.testing.assert_array_equal(a[...], expected)
    from zarrkit.engine.chunk_io import _shard_index
    index, _ = _shard_index(a._engine, a._engine.sharding, (0, 0))
    absent = np.iinfo(np.uint64).max  # the spec's (offset, nbytes) of an empty inner chunk
    assert (index[1, 1] == absent).all() and (index[0, 0] != absent).all()


def test_box_shards_take_broadcast_and_reversed_values(tmp_path, monkeypatch):
    a = zarrkit.create(tmp_path / "a", shape=(64, 64), dtype="float64", chunks=(8, 8),
                       shards=(32, 32), fill_value=np.nan)
    _box_shards_only(monkeypatch)
    a[...] = 2.5  # a scalar, broadcast
    value = np.arange(64 * 64, dtype="float64").reshape(64, 64)
    a[::-1, :] = value  # a reversed selection
    monkeypatch.undo()
    np.testing.assert_array_equal(a[...], value[::-1, :])


def test_shards_cut_by_the_array_edge_or_written_in_part_take_the_listed_path(tmp_path):
    a = zarrkit.create(tmp_path / "a", shape=(50, 70), dtype="uint16", chunks=(8, 8),
                       shards=(16, 32), fill_value=0)
    expected = np.random.default_rng(8).integers(0, 1000, (50, 70), dtype="uint16")
    a[...] = expected  # edge shards: fewer inner chunks, some cut by the edge
    np.testing.assert_array_equal(a[...], expected)
    a[3:40, 10:60] = 9  # whole shards in the middle, partial ones around them
    expected[3:40, 10:60] = 9
    np.testing.assert_array_equal(a[...], expected)
    np.testing.assert_array_equal(zarrkit.open(tmp_path / "a", mode="r")[...], expected)


def test_across_rows_is_a_permutation_down_the_columns():
    from zarrkit.engine.chunk_io import across_rows

    grid = [(i, j) for i in range(5) for j in range(3)]
    order = across_rows(grid, lambda c: c)
    assert sorted(order) == grid
    assert order[:6] == [(0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (0, 1)]
    assert all(a[0] != b[0] for a, b in zip(order, order[1:], strict=False))  # never the same row twice
    assert across_rows(grid[:3], lambda c: c) == grid[:3]  # one row: nothing to spread
    assert across_rows([(0,), (1,)], lambda c: c) == [(0,), (1,)]  # 1-d: one directory anyway
    assert across_rows([()], lambda c: c) == [()]  # a 0-d array's one chunk
    odd = [(0, 0), (0, 1), (1, 0), (2, 3)]  # not a box: still every item once
    assert sorted(across_rows(odd, lambda c: c)) == odd


@pytest.mark.parametrize("shards", [None, (16, 16)])
def test_whole_writes_store_consecutive_chunks_in_different_directories(tmp_path, monkeypatch,
                                                                        shards):
    """Two threads creating files in one directory wait on its lock: the write hands out the
    chunks (or shards) down the columns, so that the next one lies in another directory."""
    from zarrkit.engine import chunk_io

    monkeypatch.setattr(chunk_io, "INLINE_CHUNK_BYTES", 0)  # not the small-chunk batches
    monkeypatch.setattr(chunk_io, "INLINE_READ_BYTES", 0)
    monkeypatch.setattr(chunk_io, "INLINE_SLOW_READ_BYTES", 0)
    monkeypatch.setattr(chunk_io, "run_all", lambda fn, items, width=0: [fn(i) for i in items])
    a = zarrkit.create(str(tmp_path / "a"), shape=(64, 48), dtype="uint16", chunks=(16, 16),
                       shards=shards,  # gzip: no runs of chunks encoded by one call
                       codecs=[{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}])
    stored = []
    real = type(a.store).replace
    monkeypatch.setattr(type(a.store), "replace",
                        lambda self, key, value: (stored.append(key), real(self, key, value)))
    data = np.arange(64 * 48, dtype="uint16").reshape(64, 48)
    a[...] = data
    expected = [f"c/{i}/{j}" for j in range(3) for i in range(4)]
    assert stored == expected
    np.testing.assert_array_equal(a[...], data)


_BLOSC = [{"name": "bytes"}, {"name": "blosc", "configuration": {
    "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2}}]


def _stored_files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in root.rglob("*") if p.is_file() and p.name != "zarr.json"}


@pytest.mark.parametrize("write_empty_chunks", [False, True])
@pytest.mark.parametrize("shape, chunks, selection", [
    ((96, 130), (16, 32), np.s_[...]),            # edge chunks on the right: alone
    ((40, 64, 48), (8, 16, 8), np.s_[...]),
    ((96, 128), (16, 32), np.s_[8:96, 0:128]),    # a partial first row, merged under lock
    ((200,), (8,), np.s_[...]),                  # 1-d: one row of runs
])
def test_chunks_written_in_runs_are_stored_as_chunk_by_chunk(tmp_path, monkeypatch, shape,
                                                             chunks, selection,
                                                             write_empty_chunks):
    """Whole chunks side by side are copied out and compressed by one call and stored by one
    batch per run (`_write_runs`): the same files as chunk by chunk, fill chunks left out
    (or kept) alike."""
    from zarrkit.engine import chunk_io

    monkeypatch.setattr(chunk_io, "INLINE_CHUNK_BYTES", 0)  # not the small-chunk batches
    monkeypatch.setattr(chunk_io, "INLINE_READ_BYTES", 0)
    monkeypatch.setattr(chunk_io, "INLINE_SLOW_READ_BYTES", 0)
    monkeypatch.setattr(chunk_io, "RUN_BYTES", 3 * np.prod(chunks) * 2)  # runs of up to 3
    data = (np.arange(np.prod(shape), dtype="uint64").reshape(shape) * 2654435761 % 4093
            ).astype("uint16")
    data[(slice(16, 32),) + (slice(None),) * (len(shape) - 1)] = 7  # fill chunks in a run
    data[(slice(0, 8),) * len(shape)] = 7
    tasks = []
    real_runs = chunk_io._write_runs
    monkeypatch.setattr(chunk_io, "_write_runs", lambda arr, ps: (
        runs := real_runs(arr, ps), tasks.extend(runs))[0])
    roots = []
    for runs in (True, False):
        if not runs:
            monkeypatch.setattr(chunk_io, "_write_runs", lambda arr, ps: [[p] for p in ps])
        root = tmp_path / f"runs-{runs}"
        a = zarrkit.create(str(root), shape=shape, dtype="uint16", chunks=chunks, codecs=_BLOSC,
                           fill_value=7, write_empty_chunks=write_empty_chunks)
        a[...] = data  # stored before: the partial chunks merge with it
        a[selection] = data[selection] // 2 + 1000 * (data[selection] != 7)
        roots.append(root)
        expected = data.copy()
        expected[selection] = data[selection] // 2 + 1000 * (data[selection] != 7)
        np.testing.assert_array_equal(zarrkit.open(str(root), mode="r")[...], expected)
    assert max(map(len, tasks)) == (3 if a._engine.chain.encodes_many else 1)
    assert all(len(run) <= 3 for run in tasks)
    assert _stored_files(roots[0]) == _stored_files(roots[1])


@pytest.mark.parametrize("threads", [1, 2])
def test_a_run_is_stored_by_one_batch_call(tmp_path, monkeypatch, many_decoder, threads):
    """A run is stored by one call; runs are cut short so that each thread has two or more
    (a row of 4 chunks: one run for one thread, two runs of 2 for two)."""
    from zarrkit.engine import chunk_io
    from zarrkit.kvstore import _file_batch

    monkeypatch.setattr(chunk_io, "run_all", lambda fn, items, width=0: [fn(i) for i in items])
    monkeypatch.setattr(chunk_io, "concurrency", lambda: threads)
    monkeypatch.setattr(chunk_io, "INLINE_READ_BYTES", 0)  # not the small-chunk batches
    a = zarrkit.create(str(tmp_path / "a"), shape=(512, 1024), dtype="uint16",
                       chunks=(256, 256), codecs=_BLOSC)  # 128 KiB chunks: 64 per run
    data = (np.arange(512 * 1024, dtype="uint32").reshape(512, 1024) * 40503 % 65521
            ).astype("uint16")
    a[...] = data + 1  # the directories made (a file that makes one is written alone)
    calls = []
    for name in ("write_files", "replace_file"):
        real = getattr(_file_batch._fileio, name)
        monkeypatch.setattr(_file_batch._fileio, name, lambda *args, name=name, real=real: (
            calls.append((name, len(args[1]) if name == "write_files" else 1)), real(*args))[1])
    a[...] = data
    if many_decoder == "one call":  # a row of 4 chunks holds one run or two
        assert calls == [("write_files", 4 // threads)] * 2 * threads
    else:
        assert calls == [("replace_file", 1)] * 8
    np.testing.assert_array_equal(a[...], data)

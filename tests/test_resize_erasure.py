"""Shrinking erases what lies beyond the new shape: inner chunks of a kept shard that lie wholly
beyond it end absent from the shard's index, also under write_empty_chunks=True (they are
outside the array, not written fill); inner chunks that straddle the new edge keep the stored
state that write_empty_chunks gives them."""

from __future__ import annotations

import numpy as np
import pytest

import zarrkit

EMPTY = 2**64 - 1


def _array(path, shape, chunks, shards, write_empty, data, **kws):
    a = zarrkit.create(str(path), shape=shape, chunks=chunks, shards=shards, dtype="i4",
                       fill_value=-1, compressors=None, overwrite=True,
                       config={"write_empty_chunks": write_empty}, **kws)
    a[...] = data
    return a


def _held(shard_file, grid):
    """Which inner chunks the shard's index (bytes + crc32c, at the end) holds, as 0/1."""
    raw = shard_file.read_bytes()
    n = int(np.prod(grid))
    index = np.frombuffer(raw[-4 - 16 * n:-4], "<u8").reshape(*grid, 2)
    return (index[..., 0] != EMPTY).astype(int)


@pytest.mark.parametrize("write_empty", [True, False])
@pytest.mark.parametrize("fill_data", [True, False])
def test_inner_chunks_beyond_the_new_shape_leave_the_shard(tmp_path, write_empty, fill_data):
    data = np.full((8, 8), -1) if fill_data else np.arange(64).reshape(8, 8)
    a = _array(tmp_path / "a.zarr", (8, 8), (2, 2), (8, 8), write_empty, data)
    shard = tmp_path / "a.zarr" / "c" / "0" / "0"
    if fill_data and not write_empty:
        assert not shard.exists()
        return
    assert _held(shard, (4, 4)).all()
    a.resize((5, 5))
    # inner rows/columns 0-2 lie within or straddle row/column 5; row or column 3 is beyond
    expected = np.zeros((4, 4), int)
    expected[:3, :3] = 1
    np.testing.assert_array_equal(_held(shard, (4, 4)), expected)
    assert a.nchunks_initialized == 9
    a.resize((8, 8))
    values = np.full((8, 8), -1)
    values[:5, :5] = data[:5, :5]
    np.testing.assert_array_equal(a[...], values)


def test_only_the_shrunk_axis_is_erased(tmp_path):
    data = np.arange(4 * 6 * 6).reshape(4, 6, 6)
    a = _array(tmp_path / "a.zarr", (4, 6, 6), (2, 2, 2), (4, 6, 6), True, data)
    a.resize((4, 3, 6))  # inner row 1 straddles (kept), row 2 is beyond (dropped)
    held = _held(tmp_path / "a.zarr" / "c" / "0" / "0" / "0", (2, 3, 3))
    np.testing.assert_array_equal(held.sum(axis=(0, 2)), [6, 6, 0])
    np.testing.assert_array_equal(a[...], data[:, :3, :])


def test_nested_shards_drop_inner_chunks_beyond_at_every_level(tmp_path):
    index = [{"name": "bytes"}]  # 16 bytes per chunk, no checksum
    codecs = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 4], "index_codecs": index, "codecs": [
            {"name": "sharding_indexed", "configuration": {
                "chunk_shape": [2, 2], "codecs": [{"name": "bytes"}], "index_codecs": index}}]}}]
    a = zarrkit.create(str(tmp_path / "n.zarr"), shape=(8, 8), chunks=(8, 8), dtype="i4",
                       fill_value=-1, codecs=codecs, config={"write_empty_chunks": True})
    data = np.arange(64).reshape(8, 8)
    a[...] = data
    a.resize((3, 8))
    a.resize((8, 8))
    expected = np.full((8, 8), -1)
    expected[:3] = data[:3]
    np.testing.assert_array_equal(a[...], expected)
    import zarr

    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "n.zarr"))[...], expected)
    # the shard keeps the two inner shards of rows 0-3 (four 16-byte chunks and a 64-byte index
    # each) and its own 64-byte index; the two of rows 4-7, wholly beyond, are gone
    assert (tmp_path / "n.zarr" / "c" / "0" / "0").stat().st_size == 2 * (4 * 16 + 64) + 64


def test_unsharded_edge_chunks_keep_their_stored_state(tmp_path):
    a = _array(tmp_path / "u.zarr", (6, 6), (4, 4), None, True, np.full((6, 6), -1))
    a.resize((3, 3))  # chunk (0, 0) straddles: stored as fill, as write_empty_chunks asks
    assert (tmp_path / "u.zarr" / "c" / "0" / "0").exists()
    assert a.nchunks_initialized == 1
    np.testing.assert_array_equal(a[...], np.full((3, 3), -1))

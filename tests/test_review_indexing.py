"""Selections on arrays against numpy: point selections on huge grids, integers beside index
arrays, 0-d and n-d index arrays, and a seeded comparison of reads and writes."""

import numpy as np
import pytest

import zarrkit
from zarrkit.kvstore import MemoryStore


def _filled(shape, chunks, **kwargs):
    a = zarrkit.create(MemoryStore(), shape=shape, dtype="int64", chunks=chunks, **kwargs)
    data = np.arange(int(np.prod(shape))).reshape(shape)
    a[...] = data
    return a, data


def test_vindex_on_a_grid_of_more_chunks_than_int64_counts():
    """The points were grouped by a flat chunk number: numpy's ValueError ("invalid dims")."""
    a = zarrkit.create(MemoryStore(), shape=(10**12,) * 3, dtype="int8", chunks=(10,) * 3)
    a.vindex[[5, 1, 5], [3, 2, 3], [9, 3, 9]] = [7, 8, 9]
    np.testing.assert_array_equal(a.vindex[[1, 5, 0], [2, 3, 0], [3, 9, 0]], [8, 9, 0])
    assert a[[1, 5], [2, 3], [3, 9]].tolist() == [8, 9]


@pytest.mark.parametrize("shards", [None, (4, 4, 4)])
def test_index_arrays_with_integers_and_no_slices_are_points_as_in_numpy(shards):
    """numpy broadcasts arrays and integers together; they were refused as "mixing several index
    arrays with slices" though no slice was given (also when `...` stands for no axis)."""
    a, data = _filled((4, 5, 6), (2, 2, 2), shards=shards)
    for sel in [(1, [0, 1], [2, 3]), ([0, 3], [2, 4], -1), ([1], ..., [2], [3]),
                ([[0], [1]], 2, [1, 2, 3])]:
        np.testing.assert_array_equal(a[sel], data[sel])
        a[sel] = -np.ones(data[sel].shape)
        data[sel] = -1
    np.testing.assert_array_equal(a[...], data)
    # with a slice too, as numpy (it was refused as ambiguous)
    np.testing.assert_array_equal(a[..., [1, 2], [3, 4]], data[..., [1, 2], [3, 4]])


def test_zero_d_integer_array_index_is_an_integer():
    """numpy reads np.array(3) as 3; zarrkit said "orthogonal index for axis 0 must be 1-d"."""
    a, data = _filled((6, 5), (4, 2))
    i = np.array(3)
    np.testing.assert_array_equal(a[i], data[i])
    np.testing.assert_array_equal(a[i, 1:], data[i, 1:])
    np.testing.assert_array_equal(a[[0, 2], np.array(-1)], data[[0, 2], -1])
    np.testing.assert_array_equal(a.oindex[np.array(1), [1, 4]], data[1, [1, 4]])
    a[np.array(5), np.array(4)] = 99
    data[5, 4] = 99
    np.testing.assert_array_equal(a[...], data)


@pytest.mark.parametrize("shards", [None, (4, 6, 2)])
def test_n_d_integer_index_array_reads_and_writes_as_numpy(shards):
    """`a[idx]` with a 2-d `idx` (a lookup table) is numpy's; it was refused as not 1-d."""
    a, data = _filled((5, 7, 3), (2, 3, 1), shards=shards)
    idx = np.array([[4, 0, 4], [-1, 2, 1]])
    for sel in [(idx,), (slice(None), idx), (1, slice(None, None, -2), idx[:, :2] % 3),
                (idx, slice(1, None), 2), (np.zeros((0, 2), int), 1), (slice(None), idx.T)]:
        np.testing.assert_array_equal(a[sel], data[sel])
    rng = np.random.default_rng(3)
    for sel in [(idx,), (slice(None), idx % 7, 0), (1, slice(None), idx % 3)]:
        value = rng.integers(100, 200, data[sel].shape)
        a[sel] = value
        data[sel] = value
        np.testing.assert_array_equal(a[...], data)
        a[sel] = value[-1]  # broadcast along the index's axes
        data[sel] = value[-1]
        np.testing.assert_array_equal(a[...], data)


def _random_slice(rng, n):
    def bound():
        return None if rng.integers(0, 4) == 0 else int(rng.integers(-n - 3, n + 4))
    return slice(bound(), bound(), [None, 1, 2, -1, -3, 10**9][rng.integers(0, 6)])


def _random_index(rng, shape):
    """A selection for `[]` as numpy reads it: ints and slices, maybe one index array."""
    sel = [int(rng.integers(-n, n)) if n and rng.integers(0, 3) == 0 else _random_slice(rng, n)
           for n in shape]
    if shape and all(shape) and rng.integers(0, 2):
        ax = int(rng.integers(0, len(shape)))
        n = shape[ax]
        sel[ax] = rng.random(n) < 0.5 if rng.integers(0, 3) == 0 else \
            rng.integers(-n, n, tuple(rng.integers(0, 3, int(rng.integers(1, 3)))))
    return tuple(sel)


def test_random_selections_read_and_write_as_numpy():
    rng = np.random.default_rng(20261123)
    for _ in range(150):
        nd = int(rng.integers(0, 4))
        shape = tuple(int(rng.integers(0, 6)) for _ in range(nd))
        chunks = tuple(int(rng.integers(1, 4)) for _ in range(nd))
        shards = tuple(c * 2 for c in chunks) if nd and rng.integers(0, 3) == 0 else None
        a = zarrkit.create(MemoryStore(), shape=shape, dtype="int16", chunks=chunks,
                           shards=shards, write_empty_chunks=bool(rng.integers(0, 2)))
        data = np.zeros(shape, "int16")
        for _ in range(4):
            sel = _random_index(rng, shape)
            expected = data[sel]
            np.testing.assert_array_equal(a[sel], expected)
            assert np.shape(a[sel]) == np.shape(expected), sel
            value = rng.integers(0, 3, np.shape(expected)).astype("int16")
            a[sel] = value
            data[sel] = value
        np.testing.assert_array_equal(a[...], data)

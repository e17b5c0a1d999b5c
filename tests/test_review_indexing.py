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


# -- review of the numpy_plan routing (988e7c7) -------------------------------------------------

TRUE_SCALARS = [np.s_[True], np.s_[np.True_], np.s_[np.array(True)], np.s_[..., True],
                np.s_[0, True], np.s_[True, :, 0], np.s_[1, :, True], np.s_[:, True, 2, True],
                np.s_[None, True, ..., -1], np.s_[True, True], np.s_[::-2, True]]


@pytest.mark.parametrize("shards", [None, (4, 4, 4)])
@pytest.mark.parametrize("sel", TRUE_SCALARS)
def test_true_scalars_among_basic_indices_take_a_basic_plan(sel, shards):
    """`z[True]` is `z[None]`: it went to the point plan, which built ndim int64 coordinates per
    element of the whole array (a 400x400x50 int8 array: 1.9 s and 640 MiB against 6 ms)."""
    a, data = _filled((4, 5, 6), (2, 2, 2), shards=shards)
    assert not a._plan(sel).is_points
    np.testing.assert_array_equal(a[sel], data[sel])
    assert a[sel].shape == data[sel].shape
    for value in (-data[sel] - 1, np.arange(data[sel].shape[-1]) + 100, 7):
        a[sel] = value
        data[sel] = value
        np.testing.assert_array_equal(a[...], data)


NEW_AXES_BESIDE_ONE_ARRAY = [
    np.s_[None, [0, 2]], np.s_[[3, 0], None], np.s_[:, None, [4, 1], None],
    np.s_[[0, 1], None, 0], np.s_[0, None, [1, 2]], np.s_[None, 1, [[0, 2], [3, 1]]],
    np.s_[..., None, [True, False, True, False, True, False]], np.s_[None, ::-1, [2], 3],
    np.s_[[[1], [2]], None, :, None], np.s_[None, [1, 1, 0], ..., None], np.s_[None, []],
]


@pytest.mark.parametrize("shards", [None, (4, 4, 4)])
@pytest.mark.parametrize("sel", NEW_AXES_BESIDE_ONE_ARRAY)
def test_none_beside_one_index_array_keeps_the_orthogonal_plan(sel, shards):
    """None beside one index array went to the point plan (ndim int64 coordinates per selected
    element: `z[None, idx]` took 200 times the time and 80 times the memory of `z[idx]`); the
    one-array plan takes it, in numpy's layout (new axes among the slices' axes, the array's
    axes in place or first)."""
    a, data = _filled((4, 5, 6), (2, 2, 2), shards=shards)
    assert not a._plan(sel).is_points
    assert a[sel].shape == data[sel].shape
    np.testing.assert_array_equal(a[sel], data[sel])
    targets = np.arange(data.size).reshape(data.shape)[sel]
    expected = data[sel]
    values = [-expected - 1, 9]
    if np.unique(targets).size == targets.size and expected.size:
        values += [np.arange(expected.shape[-1]) + 100,
                   (np.arange(expected.shape[0]) + 200).reshape((-1,) + (1,) * (expected.ndim - 1))]
    for value in values:
        a[sel] = value
        data[sel] = value
        np.testing.assert_array_equal(a[...], data)


def test_true_scalar_and_new_axis_reads_hold_no_coordinates_per_element():
    import tracemalloc

    a = zarrkit.create(MemoryStore(), shape=(100, 100, 40), dtype="int8", chunks=(50, 50, 40),
                       compressors=None)
    a[...] = 1
    for sel in (np.s_[True], np.s_[None, np.arange(0, 100, 2)]):
        tracemalloc.start()
        try:
            a[sel]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 4 * a.nbytes, (sel, peak)  # the points: 3 * 8 bytes per element


def test_a_point_selection_too_large_to_list_is_a_selection_error():
    """Index arrays that broadcast to more points than memory holds: a MemoryError from
    numpy, now a SelectionError saying what to do."""
    from zarrkit.errors import SelectionError

    z = zarrkit.create(MemoryStore(), shape=(2, 10**6, 10**6), dtype="u1", chunks=(1, 10**3, 10**3))
    rows, cols = np.arange(10**6)[:, None], np.arange(10**6)[None, :]  # 10**12 points
    with pytest.raises(SelectionError, match="too many elements to list as points"):
        z[0, rows, cols]
    assert z[[0, 1], 5:7, [0, 1]].tolist() == [[0, 0], [0, 0]]


def test_a_result_too_large_for_memory_is_a_selection_error():
    """Index arrays among slices plan points over their own axes only, so the plan fits; the
    result of 2 * 10**12 elements does not: a SelectionError, not numpy's MemoryError."""
    from zarrkit.errors import SelectionError

    z = zarrkit.create(MemoryStore(), shape=(2, 10**12, 2), dtype="u1", chunks=(1, 10**9, 1))
    with pytest.raises(SelectionError, match="does not fit in memory"):
        z[[0, 1], :, [0, 1]]
    with pytest.raises(SelectionError, match="does not fit in memory"):
        z[...]


@pytest.mark.parametrize("value", [np.float64("nan"), np.float64(1e10), np.int64(70000),
                                   np.uint64(2**64 - 1), np.float32("inf")])
@pytest.mark.parametrize("where", [0, slice(0, 2)])
def test_numpy_scalars_out_of_an_integer_range_are_refused_as_numpy_does(value, where):
    """numpy takes its scalars as the Python values (an error out of range), not wrapped."""
    a = zarrkit.create("memory://", shape=(3,), dtype="int16", chunks=(3,))
    a[...] = 7
    with pytest.raises((OverflowError, ValueError)):
        np.zeros(3, "int16")[where] = value
    with pytest.raises(zarrkit.DataTypeError, match="int16"):
        a[where] = value
    assert a[...].tolist() == [7, 7, 7]
    a[where] = np.float64(3.7)  # in range: cast as numpy casts it
    a.oindex[[2]] = np.int8(-5)
    assert a[...].tolist() == ([3, 3, -5] if where == slice(0, 2) else [3, 7, -5])
    a[0] = np.array(70000)  # a 0-d array is cast as arrays are (numpy wraps it too)
    assert a[0] == np.array(70000).astype("int16")


class _Index:
    def __index__(self):
        return 1

    def __repr__(self):  # a stable test id: xdist workers must collect the same names
        return "_Index()"


@pytest.mark.parametrize("selection", [
    (slice(None), np.array([], bool)), (np.array([], bool),), ([],), ([], []),
    (_Index(),), (_Index(), _Index()), (slice(_Index(), None),), (np.array([], np.uint8),)],
    ids=str)
def test_empty_masks_and_objects_with_index_as_numpy_takes_them(selection):
    x = np.arange(6).reshape(2, 3)
    a = zarrkit.create("memory://", shape=(2, 3), dtype="i8", chunks=(1, 1))
    a[...] = x
    expected = x[selection]
    got = a[selection]
    assert np.shape(got) == expected.shape and np.array_equal(got, expected)
    a[selection] = 9
    x[selection] = 9
    assert a[...].tolist() == x.tolist()


def test_an_empty_float_index_array_is_refused_as_numpy_does():
    a = zarrkit.create("memory://", shape=(4,), dtype="i2", chunks=(2,))
    with pytest.raises(IndexError):
        np.arange(4)[np.array([], float)]
    for read in (lambda: a[np.array([], float)], lambda: a.oindex[np.array([], float)]):
        with pytest.raises(zarrkit.SelectionError, match="integers or booleans"):
            read()
    assert a[[]].shape == a.oindex[[]].shape == (0,)

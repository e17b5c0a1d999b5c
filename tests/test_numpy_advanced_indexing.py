"""`Array[...]` reads and writes numpy's advanced selections as numpy does: several index arrays
among slices, None beside index arrays, boolean masks over some axes, tuples and ranges as index
lists, and boolean scalars. Each was refused with a SelectionError before; numpy on a mirror of
the array is the oracle (result shape, axis order, values, and what an assignment changes)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrkit
from zarrkit.errors import SelectionError
from zarrkit.kvstore import MemoryStore

S3 = (4, 5, 6)
S4 = (3, 4, 5, 6)
_rng = np.random.default_rng(20260511)
M45 = _rng.random((4, 5)) < 0.5
M56 = _rng.random((5, 6)) < 0.5
M456 = _rng.random(S3) < 0.3


def _filled(shape, chunks, where=None, **kwargs):
    a = zarrkit.create(MemoryStore() if where is None else where, shape=shape, dtype="int32",
                       chunks=chunks, **kwargs)
    data = np.arange(int(np.prod(shape)), dtype="int32").reshape(shape)
    a[...] = data
    return a, data


def _chunkings(shape):
    """Whole-array chunks, and chunks of 1, 2 and 3 (the last two mostly not dividing `shape`)."""
    if not shape:
        return [()]
    return [tuple(max(n, 1) for n in shape)] + [(c,) * len(shape) for c in (1, 2, 3)]


def _check(a, data, sel):
    """`a[sel]` against `data[sel]`, then assignments to `a[sel]` against the same on `data`."""
    expected = data[sel]
    got = a[sel]
    assert np.shape(got) == expected.shape
    np.testing.assert_array_equal(got, expected)
    targets = np.arange(data.size).reshape(data.shape)[sel]
    # a value per selected element, the same for a point selected twice: numpy writes repeated
    # points in an unspecified order, so only values that agree there are comparable
    values = [-expected - 1, np.int32(77)]
    if np.unique(targets).size == targets.size and expected.ndim:
        # distinct points: values broadcast along the leading axes, and along the first
        values.append(np.arange(expected.shape[-1], dtype="int32") + 1000)
        values.append((np.arange(expected.shape[0], dtype="int32") + 2000)
                      .reshape((-1,) + (1,) * (expected.ndim - 1)))
    for value in values:
        a[sel] = value
        data[sel] = value
        np.testing.assert_array_equal(a[...], data)


def _cases(table):
    return [pytest.param(shape, chunks, sel, id=f"{shape}-{chunks}-{i}")
            for i, (shape, sel) in enumerate(table) for chunks in _chunkings(shape)]


SEVERAL_ARRAYS = [
    (S3, np.s_[[0, 1], :, [2, 3]]),
    (S3, np.s_[:, [0, 1], [2, 3]]),
    (S3, np.s_[[0, 1], ..., [1, 2]]),
    (S3, np.s_[[[0], [1]], 1:3, [2, 3]]),
    (S3, np.s_[[0, 3], 1:, [[1], [2]]]),
    (S3, np.s_[[-1, 0, -4], ::-2, [-1, 2, 0]]),
    (S3, np.s_[[1, 1, 3], 2:, [0, 0, 5]]),  # a repeated point
    (S3, np.s_[[], :, []]),
    (S3, np.s_[np.zeros((2, 0), int), 1:, [0]]),
    (S3, np.s_[[True, False, True, True], 1:4, [0, 5, -1]]),  # a 1-d mask is an index array
    (S4, np.s_[[0, 2], :, [1, 3], 1:5:2]),
    (S4, np.s_[:, [[0], [3]], :, [5, -1, 2]]),
    (S4, np.s_[1, [0, 2], :, [1, 3]]),
    (S4, np.s_[:, [0, 1], [2, 3], :]),
    (S4, np.s_[..., [0, 1], 2:4, [1, 2]]),
    (S4, np.s_[[2], 1, ::3, [4, 0]]),
]


@pytest.mark.parametrize("shape, chunks, sel", _cases(SEVERAL_ARRAYS))
def test_several_index_arrays_among_slices_and_integers(shape, chunks, sel):
    _check(*_filled(shape, chunks), sel)


NEWAXIS = [
    (S3, np.s_[None, [0, 1]]),
    (S3, np.s_[[0, 1], None, 1:3]),
    (S3, np.s_[[0, 1], None, [0, 1]]),  # None separates the arrays: their axis goes first
    (S3, np.s_[1, :, [[0]], None]),
    (S3, np.s_[..., None, [0, 3]]),
    ((7,), np.s_[None, [0, -1, 3]]),
    ((7,), np.s_[[6, 0], None]),
    ((4, 5), np.s_[None, [2, -1], None]),
    ((4, 5), np.s_[[3, 3], None, ::2]),
    ((4, 5), np.s_[None, []]),
    (S4, np.s_[None, :, [1], None, 2:, [0, 5]]),
]


@pytest.mark.parametrize("shape, chunks, sel", _cases(NEWAXIS))
def test_newaxis_beside_index_arrays(shape, chunks, sel):
    _check(*_filled(shape, chunks), sel)


MASKS = [
    (S3, np.s_[M45]),
    (S3, np.s_[M45, 2:5]),
    (S3, np.s_[M45, ::-1]),
    (S3, np.s_[:, M56]),
    (S3, np.s_[1, M56]),
    (S3, np.s_[-1, M56.tolist()]),  # nested lists of booleans are a mask too
    (S3, np.s_[M45, None]),
    (S3, np.s_[None, M45]),
    (S3, np.s_[M45, ...]),
    (S3, np.s_[..., M56]),
    (S3, np.s_[M456, None]),
    (S3, np.s_[np.zeros((4, 5), bool)]),
    (S4, np.s_[:, M45, :]),
    (S4, np.s_[[1], M45, 2:]),
    ((4, 5), np.s_[M45, None]),
]


@pytest.mark.parametrize("shape, chunks, sel", _cases(MASKS))
def test_boolean_masks_over_some_axes(shape, chunks, sel):
    _check(*_filled(shape, chunks), sel)


TUPLES_AND_RANGES = [
    (S3, np.s_[(0, 2), :]),
    (S3, np.s_[range(1, 3)]),
    (S3, np.s_[:, range(0, 4, 2)]),
    (S3, np.s_[(0, 2), :, (1, -1)]),
    (S3, np.s_[range(3, -1, -1), (1, 1, 0, 4)]),
    (S3, np.s_[range(0)]),
    (S3, np.s_[:, (-1,), range(5, 0, -2)]),
    ((7,), np.s_[(0, 6, 6),]),
    ((7,), np.s_[range(6, 1, -2),]),
    ((4, 5), np.s_[(True, False, True, True),]),  # a tuple of booleans is a mask
]


@pytest.mark.parametrize("shape, chunks, sel", _cases(TUPLES_AND_RANGES))
def test_tuples_and_ranges_are_index_lists(shape, chunks, sel):
    _check(*_filled(shape, chunks), sel)


BOOLEAN_SCALARS = [
    (S3, np.s_[True]),
    (S3, np.s_[False]),
    (S3, np.s_[1, True]),
    (S3, np.s_[True, :, 1]),
    (S3, np.s_[..., True]),
    (S3, np.s_[:, True, 1]),
    (S3, np.s_[1, True, 2]),
    (S3, np.s_[np.True_, [0, 1]]),
    (S3, np.s_[[0, 1], True]),
    (S3, np.s_[True, True]),
    (S3, np.s_[None, False]),
    (S3, np.s_[np.array(False), 2]),
    ((7,), np.s_[0, True]),
    ((7,), np.s_[True, [1, -2]]),
    ((), np.s_[True]),
    ((), np.s_[False]),
    ((), np.s_[None, True]),
    ((), np.s_[..., np.True_]),
]


@pytest.mark.parametrize("shape, chunks, sel", _cases(BOOLEAN_SCALARS))
def test_boolean_scalars_are_0_d_masks(shape, chunks, sel):
    _check(*_filled(shape, chunks), sel)


@pytest.mark.parametrize("sel", [np.s_[:, 1, ..., [1, 2]], np.s_[:, [0, 1], ..., -1]])
def test_an_ellipsis_of_no_axes_separates_advanced_indices(sel):
    """numpy puts the array's axis first: the `...` between it and the integer counts though it
    stands for no axis. The one-array plan judged adjacency after expanding it, and kept the
    slice's axis first."""
    _check(*_filled(S3, (2, 3, 4)), sel)


def test_forms_with_a_fast_plan_keep_it():
    """Index lists given as tuples or ranges take the one-array (orthogonal) plan, not points."""
    a, _ = _filled(S3, (2, 2, 2))
    assert not a._plan(np.s_[(0, 2), :]).is_points
    assert not a._plan(np.s_[range(1, 3), 2]).is_points
    assert not a._plan(np.s_[:, 1, ..., [1, 2]]).is_points
    assert a._plan(np.s_[[0, 1], :, [2, 3]]).is_points


def test_a_point_plan_reads_only_the_chunks_of_the_selected_elements(counting_store):
    a = zarrkit.create(counting_store, shape=(40, 40, 40), dtype="int16", chunks=(10, 10, 10))
    a[...] = 1
    counting_store.gets.clear()
    np.testing.assert_array_equal(a[[0, 39], :5, [0, 39]], np.ones((2, 5)))
    assert sorted(key for key, _ in counting_store.gets) == ["c/0/0/0", "c/3/0/3"]


@pytest.mark.parametrize("sel", [np.s_[:, M56], np.s_[..., [1, 3], [0, 5]],
                                 np.s_[::-2, [[1], [3]], [0, 5]]])
def test_points_over_some_axes_hold_no_coordinates_of_the_sliced_ones(sel):
    """Index arrays by slices plan the points over their own axes only: the point plan held
    ndim int64 per selected element (`z[:, mask2d]` of 100x500x500: 5.3 s and 860 MiB)."""
    import tracemalloc

    long = 5000 * S3[0]
    a = zarrkit.create(MemoryStore(), shape=(long,) + S3[1:], dtype="int8", chunks=(70, 2, 4))
    tracemalloc.start()
    try:
        plan = a._plan(sel)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elements = plan.nitems
    assert elements >= long // 2  # as points, 3 * 8 bytes each
    assert peak < 4 * elements


SOME = [np.s_[[0, 1], :, [2, 3]], np.s_[None, [0, 1]], np.s_[:, M56], np.s_[(0, 3), 1:],
        np.s_[1, True], np.s_[[-1, 0, -4], ::-2, [-1, 2, 0]]]


@pytest.mark.parametrize("sel", SOME)
def test_sharded_array(sel):
    _check(*_filled(S3, (2, 2, 2), shards=(4, 4, 4)), sel)


@pytest.mark.parametrize("sel", SOME)
def test_file_store(tmp_path, sel):
    _check(*_filled(S3, (3, 2, 4), where=tmp_path / "a.zarr"), sel)


ERRORS = [
    (np.s_[None, [1], 5, :], "index 5 is out of bounds for axis 1 with size 5"),
    (np.s_[:, [0, 5], [1, 2]], "index 5 is out of bounds for axis 1 with size 5"),
    (np.s_[[-5], :, [0]], "index -5 is out of bounds for axis 0 with size 4"),
    (np.s_[None, [0, 1], :, 6], "index 6 is out of bounds for axis 2 with size 6"),
    (np.s_[np.ones((4, 4), bool)], r"boolean index for axes 0-1 has shape \(4, 4\), "
                                   r"expected \(4, 5\)"),
    (np.s_[:, np.ones(3, bool), [0]], r"boolean index for axis 1 has shape \(3,\), "
                                      r"expected \(5,\)"),
    (np.s_[None, [True, False]], r"boolean index for axis 0 has shape \(2,\), expected \(4,\)"),
    (np.s_[[0, 1], :, [0, 1, 2]], r"do not broadcast together: shapes \(2,\) \(3,\)"),
    (np.s_[[0, 1], False], r"do not broadcast together: shapes \(2,\) \(0,\)"),
    (np.s_[[0, 1], 1.5, [0, 1]], "unsupported index 1.5 for axis 1"),
    (np.s_[[0.5], :, [1]], "index for axis 0 must be integers or booleans, got float64"),
    (np.s_[(0, 1.5), :], "index for axis 0 must be integers or booleans, got float64"),
    (np.s_[np.ones((4, 5), bool), 0, 0], "too many indices for array: array is 3-dimensional, "
                                         "but 4 were indexed"),
    (np.s_[True, ..., [0], ...], "single ellipsis"),
    (np.s_[True, "a"], "unsupported index 'a' for axis 0"),
]


@pytest.mark.parametrize("sel, message", ERRORS)
def test_errors_name_what_is_wrong(sel, message):
    a, data = _filled(S3, (2, 2, 2))
    with pytest.raises(IndexError):  # numpy refuses them too
        data[sel]
    with pytest.raises(SelectionError, match=message):
        a[sel]
    with pytest.raises(SelectionError, match=message):
        a[sel] = 0
    np.testing.assert_array_equal(a[...], data)


@pytest.mark.parametrize("index", ["getitem", "oindex", "vindex"])
def test_a_ragged_index_list_is_a_selection_error(index):
    """numpy's ValueError for a list it cannot make an array of, named as a SelectionError."""
    a, data = _filled(S3, (2, 2, 2))
    ragged = [[0, 1], [2]]
    with pytest.raises(ValueError):
        np.asarray(ragged)
    target = a if index == "getitem" else getattr(a, index)
    sel = (ragged, [0, 1], [1, 2]) if index == "vindex" else (ragged, slice(None))
    with pytest.raises(SelectionError, match=r"index \[\[0, 1\], \[2\]\] is not an array"):
        target[sel]
    with pytest.raises(SelectionError, match="is not an array of indices"):
        target[sel] = 0
    np.testing.assert_array_equal(a[...], data)


# -- random mixed selections ------------------------------------------------------------------

@st.composite
def _arrays_and_selections(draw):
    """An array's shape and chunks, and a selection mixing integers, slices, index arrays, masks
    over one or two axes, None, boolean scalars and `...`: mostly valid, sometimes not (an index
    out of bounds, masks whose counts do not broadcast), where zarrkit must refuse as numpy does.
    """
    # lengths of 0 (nothing selected) now and then, not most of the time
    lengths = st.sampled_from([0, 1, 2, 3, 4, 5, 3, 4, 5])
    ndim = draw(st.sampled_from([0, 1, 2, 3, 3, 4, 4]))
    shape = tuple(draw(lengths) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    block = tuple(draw(st.lists(lengths.map(lambda n: min(n, 3)), max_size=2)))  # arrays' shape
    sel: list = []
    axis = 0
    while axis < ndim:
        n = shape[axis]
        kind = draw(st.sampled_from(["int", "slice", "array", "mask", "mask2"]))
        if kind == "mask2" and axis + 1 < ndim:
            sel.append(draw(st.lists(st.booleans(), min_size=n * shape[axis + 1],
                                     max_size=n * shape[axis + 1]).map(
                lambda v, s=shape[axis:axis + 2]: np.array(v, bool).reshape(s))))
            axis += 2
            continue
        if kind in ("mask", "mask2"):
            sel.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool))
        elif kind == "int" and n:
            sel.append(draw(st.integers(-n, n - 1)))
        elif kind == "array" and n:
            shape_ = tuple(draw(st.sampled_from([1, b])) for b in block[draw(
                st.integers(0, len(block))):])
            sel.append(np.array(draw(st.lists(st.integers(-n, n - 1), min_size=int(
                np.prod(shape_)), max_size=int(np.prod(shape_)))), int).reshape(shape_))
        else:
            start, stop = draw(st.integers(-n - 1, n + 1)), draw(st.integers(-n - 1, n + 1))
            step = draw(st.sampled_from([None, 1, 2, -1, -2]))
            sel.append(slice(start, stop, step))
        axis += 1
    if draw(st.booleans()) and any(isinstance(s, np.ndarray) for s in sel):
        arrays = [i for i, s in enumerate(sel) if isinstance(s, np.ndarray) and s.dtype != bool]
        if arrays:  # now and then an index out of bounds
            i = draw(st.sampled_from(arrays))
            sel[i] = sel[i] + draw(st.sampled_from([0, 0, 0, 10]))
    for _ in range(draw(st.integers(0, 2))):  # None and boolean scalars anywhere
        sel.insert(draw(st.integers(0, len(sel))),
                   draw(st.sampled_from([None, True, False, None, True])))
    if draw(st.booleans()):  # `...` for a run of whole slices (maybe none), or trailing axes
        at = draw(st.integers(0, len(sel)))
        end = at
        while end < len(sel) and isinstance(sel[end], slice) and sel[end] == slice(None):
            end += 1
        sel[at:end] = [Ellipsis]
    return shape, chunks, tuple(sel)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_arrays_and_selections(), st.booleans())
def test_random_mixed_selections_read_and_write_as_numpy(case, sharded):
    shape, chunks, sel = case
    shards = tuple(2 * c for c in chunks) if sharded and shape else None
    a, data = _filled(shape, chunks, shards=shards)
    try:
        data[sel]
    except IndexError:
        with pytest.raises(SelectionError):
            a[sel]
        with pytest.raises(SelectionError):
            a[sel] = 0
        return
    _check(a, data, sel)

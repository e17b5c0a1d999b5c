"""Selection plans replayed against in-memory chunks must equal numpy indexing."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrkit.errors import SelectionError
from zarrkit.indexing import basic_plan, chunk_region, orthogonal_plan, vectorized_plan


def _chunk(data, coords, chunks, fill=-1):
    """The full-size (padded) chunk at `coords`."""
    out = np.full(chunks, fill, dtype=data.dtype)
    region = chunk_region(coords, chunks, data.shape)
    out[tuple(slice(0, r.stop - r.start) for r in region)] = data[region]
    return out


def replay_read(data, chunks, plan):
    buf = np.zeros(plan.buffer_shape, dtype=data.dtype)
    for p in plan:
        buf[p.out_selection] = _chunk(data, p.coords, chunks)[p.chunk_selection]
    return plan.finish(buf)


def replay_write(data, chunks, plan, value):
    out = data.copy()
    value = plan.prepare_value(np.asarray(value, dtype=data.dtype))
    for p in plan:
        chunk = _chunk(out, p.coords, chunks)
        if p.complete:  # a complete projection must not need the old chunk
            chunk[...] = -7
        chunk[p.chunk_selection] = value[p.out_selection]
        region = chunk_region(p.coords, chunks, data.shape)
        out[region] = chunk[tuple(slice(0, r.stop - r.start) for r in region)]
    return out


@st.composite
def array_and_chunks(draw, max_ndim=3):
    ndim = draw(st.integers(1, max_ndim))
    shape = tuple(draw(st.lists(st.integers(0, 12), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.integers(1, 5)) for _ in range(ndim))
    data = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    return data, chunks


@st.composite
def basic_selection(draw, shape):
    sel = []
    for s in shape:
        kind = draw(st.sampled_from(["slice", "int", "full"] if s else ["slice", "full"]))
        if kind == "int":
            sel.append(draw(st.integers(-s, s - 1)))
        elif kind == "full":
            sel.append(slice(None))
        else:
            start = draw(st.none() | st.integers(-s - 2, s + 2))
            stop = draw(st.none() | st.integers(-s - 2, s + 2))
            step = draw(st.none() | st.integers(-4, 4).filter(lambda x: x != 0))
            sel.append(slice(start, stop, step))
    return tuple(sel)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_basic_read_matches_numpy(data):
    arr, chunks = data.draw(array_and_chunks())
    sel = data.draw(basic_selection(arr.shape))
    got = replay_read(arr, chunks, basic_plan(sel, arr.shape, chunks))
    np.testing.assert_array_equal(got, arr[sel])


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_basic_write_matches_numpy(data):
    arr, chunks = data.draw(array_and_chunks())
    sel = data.draw(basic_selection(arr.shape))
    expected = arr.copy()
    value = -np.arange(expected[sel].size).reshape(expected[sel].shape) - 1
    expected[sel] = value
    got = replay_write(arr, chunks, basic_plan(sel, arr.shape, chunks), value)
    np.testing.assert_array_equal(got, expected)


@st.composite
def orthogonal_selection(draw, shape):
    sel = []
    for s in shape:
        kinds = ["slice", "ints", "bools"] + (["int"] if s else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "int":
            sel.append(draw(st.integers(-s, s - 1)))
        elif kind == "slice":
            sel.append(slice(draw(st.none() | st.integers(0, s)), None,
                             draw(st.none() | st.integers(1, 3))))
        elif kind == "ints":
            sel.append(np.array(draw(st.lists(st.integers(-s, s - 1), max_size=6)) if s else [],
                                dtype=np.int64))
        else:
            sel.append(np.array(draw(st.lists(st.booleans(), min_size=s, max_size=s)), bool))
    return tuple(sel)


def _numpy_oindex(arr, sel):
    out = arr
    for axis in reversed(range(len(sel))):
        s = sel[axis]
        idx = [slice(None)] * out.ndim
        idx[axis] = s
        out = out[tuple(idx)]
    return out


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_orthogonal_read_and_write(data):
    arr, chunks = data.draw(array_and_chunks())
    sel = data.draw(orthogonal_selection(arr.shape))
    plan = orthogonal_plan(sel, arr.shape, chunks)
    np.testing.assert_array_equal(replay_read(arr, chunks, plan), _numpy_oindex(arr, sel))
    # writes: compare with numpy on unique indices (duplicates are order-dependent)
    if all(not isinstance(s, np.ndarray) or s.dtype == bool or
           len(np.unique(np.where(s < 0, s + n, s))) == len(s) for s, n in zip(sel, arr.shape, strict=False)):
        expected = arr.copy()
        ix = tuple(np.flatnonzero(s) if isinstance(s, np.ndarray) and s.dtype == bool else s
                   for s in sel)
        target = _numpy_oindex(expected, ix)
        value = -np.arange(target.size).reshape(target.shape) - 1
        axes = [np.atleast_1d(np.arange(n)[s]) for s, n in zip(ix, arr.shape, strict=False)]
        expected[np.ix_(*axes)] = value.reshape([len(a) for a in axes])
        got = replay_write(arr, chunks, plan, value)
        np.testing.assert_array_equal(got, expected)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_vectorized_points_and_mask(data):
    arr, chunks = data.draw(array_and_chunks())
    if arr.size == 0:
        return
    n = data.draw(st.integers(0, 8))
    coords = tuple(np.array(data.draw(st.lists(st.integers(-s, s - 1), min_size=n, max_size=n)),
                            dtype=np.int64) for s in arr.shape)
    plan = vectorized_plan(coords, arr.shape, chunks)
    np.testing.assert_array_equal(replay_read(arr, chunks, plan), arr[coords])
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=arr.size, max_size=arr.size)),
                    dtype=bool).reshape(arr.shape)
    plan = vectorized_plan(mask, arr.shape, chunks)
    np.testing.assert_array_equal(replay_read(arr, chunks, plan), arr[mask])
    expected = arr.copy()
    expected[mask] = -5
    np.testing.assert_array_equal(replay_write(arr, chunks, plan, -5), expected)


def test_vectorized_broadcast_shape():
    arr = np.arange(100).reshape(10, 10)
    rows = np.array([[1], [5], [9]])
    cols = np.array([0, 3])
    plan = vectorized_plan((rows, cols), arr.shape, (3, 4))
    np.testing.assert_array_equal(replay_read(arr, (3, 4), plan), arr[rows, cols])


def test_zero_dimensional():
    arr = np.array(42)
    plan = basic_plan((), (), ())
    assert [p.coords for p in plan] == [()]
    assert replay_read(arr, (), plan) == 42
    assert replay_read(arr, (), basic_plan(Ellipsis, (), ())) == 42


def test_newaxis():
    arr = np.arange(24).reshape(4, 6)
    sel = (None, slice(1, 3), None, 2)
    np.testing.assert_array_equal(replay_read(arr, (3, 3), basic_plan(sel, arr.shape, (3, 3))),
                                  arr[sel])


@pytest.mark.parametrize("sel", [(5,), (-6,), (0, 0), (slice(0, 1, 0),), ("a",), (1.5,),
                                 (Ellipsis, Ellipsis)])
def test_bad_basic_selections(sel):
    with pytest.raises(SelectionError):
        basic_plan(sel, (5,), (2,))


def test_bad_array_selections():
    with pytest.raises(SelectionError, match="out of bounds"):
        orthogonal_plan((np.array([0, 7]),), (5,), (2,))
    with pytest.raises(SelectionError, match="boolean index"):
        orthogonal_plan((np.array([True, False]),), (5,), (2,))
    with pytest.raises(SelectionError, match="integers or booleans"):
        orthogonal_plan((np.array([0.5]),), (5,), (2,))
    with pytest.raises(SelectionError, match="broadcast"):
        vectorized_plan((np.array([0, 1]), np.array([0, 1, 2])), (5, 5), (2, 2))
    with pytest.raises(SelectionError, match="mask"):
        vectorized_plan((np.ones((2, 2), bool),), (5, 5), (2, 2))


def test_complete_flags():
    plan = basic_plan((slice(0, 10),), (10,), (4,))
    assert [p.complete for p in plan] == [True, True, True]  # last chunk is the 2-element edge
    plan = basic_plan((slice(1, 10),), (10,), (4,))
    assert [p.complete for p in plan] == [False, True, True]
    plan = basic_plan((slice(0, 10, 2),), (10,), (4,))
    assert not any(p.complete for p in plan)

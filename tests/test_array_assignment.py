"""The array API against numpy's assignment and indexing rules: value shapes and casts,
structured elements, huge indices, strided plans, bfloat16 reads, resize arguments."""

import signal
from contextlib import contextmanager

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import DataTypeError, SelectionError
from zarrkit.indexing import basic_plan
from zarrkit.kvstore import MemoryStore


def _array(shape, dtype="int32", chunks=None, **kwargs):
    return zarrkit.create(MemoryStore(), shape=shape, dtype=dtype,
                          chunks=chunks or tuple(max(1, n // 2) for n in shape), **kwargs)


@pytest.mark.parametrize("shards", [None, (4, 6)])
def test_value_with_leading_length_one_axes_is_written_as_numpy_does(shards):
    """numpy drops a value's leading length-1 axes before broadcasting (`x[1:4] = ones((1, 3))`)."""
    a = _array((5, 6), chunks=(2, 3), shards=shards)
    data = np.zeros((5, 6), np.int32)
    for sel, value in [((slice(1, 4), 2), np.arange(3).reshape(1, 3)),
                       ((slice(None), slice(None, None, -2)), np.arange(3).reshape(1, 1, 1, 3)),
                       ((0, slice(0, 1)), np.array([[[9]]]))]:
        a[sel] = value
        data[sel] = value
    a.oindex[[4, 0], [5, 1]] = np.ones((1, 2, 2))
    data[np.ix_([4, 0], [5, 1])] = 1
    a.vindex[[2, 3], [2, 3]] = [[7, 8]]
    data[[2, 3], [2, 3]] = [7, 8]
    np.testing.assert_array_equal(a[...], data)
    z = _array((), chunks=())
    z[...] = np.array([[5]])
    assert z[()] == 5


def test_value_that_does_not_broadcast_to_the_selection_is_a_selection_error():
    """(3, 1) broadcasts with (3,) to (3, 3) but not to (3,): numpy refuses it."""
    a = _array((5,), chunks=(2,))
    for value in (np.ones((3, 1)), np.ones((2, 3))):
        with pytest.raises(SelectionError, match=r"shape \(3,\)"):
            a[1:4] = value
    with pytest.raises(SelectionError):
        a.vindex[[0, 1]] = np.ones((2, 1))


def test_values_outside_the_data_type_are_errors_not_wrapped():
    """numpy (and zarr-python) raise for 300 in a uint8 array; it was stored as 44."""
    a = _array((4,), dtype="uint8", chunks=(2,))
    a[...] = 1
    for sel, value in [(0, 300), (slice(None), [1, 2, 3, -1]), (slice(0, 2), 256)]:
        with pytest.raises(DataTypeError, match="uint8"):
            a[sel] = value
    with pytest.raises(DataTypeError, match="uint8"):
        a.append(np.array([1, 999], dtype=object))
    with pytest.raises(DataTypeError, match="'abc'"):
        a[0] = "abc"
    with pytest.raises(DataTypeError, match="None"):
        a.oindex[[1]] = None
    np.testing.assert_array_equal(a[...], [1, 1, 1, 1])
    a[:2] = np.array([300, 2])  # arrays are cast as numpy casts them (unsafely)
    np.testing.assert_array_equal(a[...], np.array([300, 2, 1, 1]).astype("uint8"))


def test_tuple_is_one_structured_element():
    """A tuple written to a structured array is one element: `s[0:2] = (7, 8.5)` stored
    (7, 7.0), (8, 8.0) and `s[0] = (1, 2.0)` failed with a bare ValueError."""
    dtype = np.dtype([("a", "<i4"), ("b", "<f8")])
    a = _array((3,), dtype=dtype, chunks=(2,), zarr_format=2)
    data = np.zeros(3, dtype)
    for sel, value in [(slice(0, 2), (7, 8.5)), (2, (1, 2.0)),
                       (slice(None, None, -1), [(1, 1.5), (2, 2.5), (3, 3.5)])]:
        a[sel] = value
        data[sel] = value
    np.testing.assert_array_equal(a[...], data)
    a.append([(4, 4.5)])
    assert a[3] == np.array((4, 4.5), dtype)[()]


def test_huge_unsigned_index_is_named_as_given():
    """A uint64 index past int64 was reported as a negative number."""
    a = _array((5,), chunks=(2,))
    big = 2**63 + 5
    with pytest.raises(SelectionError, match=f"index {big} is out of bounds"):
        a.oindex[np.array([1, big], dtype=np.uint64)]
    with pytest.raises(SelectionError, match=f"index {big} is out of bounds"):
        a.vindex[np.array([big], dtype=np.uint64)]


class _TooSlow(Exception):
    pass


def _raise(*_):
    raise _TooSlow


@contextmanager
def _within(seconds: float, what: str):
    """Fail the test (rather than hang it) when the block takes more than `seconds`."""
    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _TooSlow:
        pytest.fail(f"{what} took more than {seconds} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_strided_slice_visits_only_the_chunks_it_touches():
    """`a[::step]` looped over every chunk the slice spans: 10**13 of them here, for 100
    elements (a million-element array with small chunks and a large step: seconds)."""
    with _within(5, "planning a 100-element strided selection"):
        plan = basic_plan((slice(None, None, -10**13),), (10**15,), (100,))
    assert plan.buffer_shape == (100,)
    assert [p.coords for p in plan][:2] == [(10**11 - 1,), (2 * 10**11 - 1,)]
    a = _array((10**12,), chunks=(10,))
    a[::10**10] = np.arange(100)
    np.testing.assert_array_equal(a[99 * 10**10::-10**10], np.arange(99, -1, -1))
    assert a[5 * 10**10 + 1] == 0


def test_resize_refuses_non_integer_lengths():
    """`resize(2.9)` was truncated to 2, erasing the data beyond it."""
    a = _array((5,), chunks=(2,))
    a[...] = np.arange(5)
    for bad in ((2.9,), ("3",), ((4.0, 1),)):
        with pytest.raises(SelectionError, match="expected integers"):
            a.resize(*bad)
    assert a.shape == (5,)
    np.testing.assert_array_equal(a[...], np.arange(5))
    a.resize(np.int64(3))
    np.testing.assert_array_equal(a[...], np.arange(3))


@pytest.mark.parametrize("shards", [None, (4, 4)])
def test_whole_chunk_reads_of_bfloat16(shards):
    """Whole chunks decoded straight into the output took memoryview(out), which the buffer
    protocol refuses for bfloat16: `a[...]` raised a bare ValueError."""
    a = _array((6, 4), dtype="bfloat16", chunks=(2, 4), shards=shards)
    data = (np.arange(24).reshape(6, 4) * 0.5).astype(a.dtype)
    a[...] = data
    for sel in (np.s_[...], np.s_[2:4], np.s_[::-1]):
        np.testing.assert_array_equal(a[sel], data[sel])


def test_asarray_with_copy_false_raises_numpy_s_value_error():
    """numpy 2's `__array__` protocol: copy=False must not copy, and ValueError says it cannot
    be avoided (zarr-python 3 raises it too); a read always makes a new array, and copy=False
    returned one anyway. dtype= converts."""
    a = _array((3, 4), chunks=(2, 2))
    a[...] = np.arange(12).reshape(3, 4)
    for source in (a, a.view[1:]):
        with pytest.raises(ValueError, match="copy=False") as raised:
            np.asarray(source, copy=False)
        assert isinstance(raised.value, zarrkit.ZarrkitError)
        with pytest.raises(ValueError, match="copy=False"):
            np.asarray(source, dtype="float64", copy=False)
        expected = np.arange(12).reshape(3, 4)[1:] if source is not a else \
            np.arange(12).reshape(3, 4)
        for kwargs in ({}, {"copy": True}, {"copy": None}, {"dtype": "float32"}):
            got = np.array(source, **kwargs)
            np.testing.assert_array_equal(got, expected)
            assert got.dtype == np.dtype(kwargs.get("dtype", "int32"))
        with pytest.raises(DataTypeError, match="cannot convert int32"):
            source.__array__("not a dtype")


KEY_LAYOUTS = [
    {},
    {"chunk_key_encoding": {"name": "default", "configuration": {"separator": "."}}},
    {"chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}}},
    {"chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}}},
    {"zarr_format": 2},
    {"zarr_format": 2, "dimension_separator": "/"},
    {"shards": (20, 20)},
]


@pytest.mark.parametrize("path", ["", "grp/arr"])
@pytest.mark.parametrize("layout", KEY_LAYOUTS)
def test_shrinking_a_huge_sparse_grid_lists_the_stored_chunks(layout, path):
    """Shrinking visited every chunk of the old grid in Python (10**10 chunks: hours). Grids
    this large are shrunk from the stored chunk keys; the data after the shrink and after
    growing again is as for a small grid, whatever the key encoding, and keys that are not
    chunk keys of the array are left alone."""
    store = MemoryStore()
    big = (10**6, 10**6)
    a = zarrkit.create(store, big, "int32", path=path, chunks=(10, 10), **layout)
    writes = {(3, 4): 1, (12, 27): 2, (18, 9): 3, (25, 2): 4, (10**6 - 1, 7): 5, (4, 10**5): 6}
    for (i, j), v in writes.items():
        a[i, j] = v
    prefix = f"{path}/" if path else ""
    store.set(prefix + "notes.txt", b"not a chunk")
    store.set(prefix + "c", b"not a chunk either")
    with _within(20, "shrinking a sparse 10**10-chunk grid"):
        a.resize(15, 25)
    expected = np.zeros((15, 25), np.int32)
    expected[3, 4] = 1
    np.testing.assert_array_equal(a[...], expected)
    assert store.get(prefix + "notes.txt") == b"not a chunk"
    assert store.get(prefix + "c") == b"not a chunk either"
    a.resize(*big)
    for (i, j), v in writes.items():
        assert a[i, j] == (v if (i, j) == (3, 4) else 0), (i, j)
    np.testing.assert_array_equal(a[:30, :30][:15, :25], expected)
    assert not a[:30, :30][15:].any() and not a[:30, 25:30].any()
    again = zarrkit.open(store, path=path, mode="r")
    np.testing.assert_array_equal(again[:15, :25], expected)


def test_shrinking_a_10_to_the_12_chunk_grid_takes_moments():
    a = _array((10**7, 10**7), dtype="uint8", chunks=(10, 10))
    a[0, 0], a[10**7 - 1, 10**7 - 1], a[15, 3] = 1, 2, 3
    with _within(20, "shrinking a sparse 10**12-chunk grid"):
        a.resize(12, 10**7)
        a.resize(5, 5)
    a.resize(20, 20)
    expected = np.zeros((20, 20), np.uint8)
    expected[0, 0] = 1
    np.testing.assert_array_equal(a[...], expected)

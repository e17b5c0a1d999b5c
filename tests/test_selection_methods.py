"""zarr-python's named selection methods and `blocks`, checked against numpy and zarr-python 3.

Data is written with zarr-python and read through zarrkit's methods (every result compared with
zarr-python's and numpy's), and written through zarrkit's set_* methods and read with zarr-python.
"""

import math
import warnings

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import DataTypeError, ReadOnlyError, SelectionError

zarr = pytest.importorskip("zarr")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

METHODS = ["basic", "orthogonal", "coordinate", "mask", "block"]

# shape, inner chunks, shards: no shape is a multiple of its grid, so every axis has edge blocks
LAYOUTS = {
    "1d": ((17,), (5,), None),
    "2d": ((10, 7), (4, 3), None),
    "3d": ((5, 6, 7), (2, 4, 3), None),
    "2d-sharded": ((10, 7), (2, 3), (4, 6)),
    "3d-sharded": ((9, 7, 6), (2, 2, 5), (4, 4, 5)),
}

# Without repeated points, so writes have one answer. 3-d layouts are at least (5, 6, 5).
SELECTIONS = {
    "basic": {
        1: [Ellipsis, (), 3, -1, slice(None), slice(2, 13), slice(1, None, 4), (slice(-6, None),)],
        2: [(1, 2), (-1, slice(None)), (slice(3, 9), slice(None, None, 2)), (Ellipsis, 5), 4,
            (slice(8, 20), slice(2, 3))],
        3: [(1, 2, 3), (slice(None), 1), (Ellipsis, slice(1, 5, 2)), (slice(1, 4), slice(3, 6), -1)],
    },
    "orthogonal": {
        1: [[0, 4, 16], np.array([3, 1]), np.arange(17) % 3 == 0, slice(2, 11, 3), -2],
        2: [([1, 5, 9], slice(None)), (slice(2, 8), [6, 0, 3]), (np.arange(10) % 2 == 0, [1, 2]),
            ([9, 0], 4), (2, 3)],
        3: [([0, 4], slice(None), [1, 4]), (slice(1, 4), np.array([5, 0, 2]), 3),
            (Ellipsis, [4, 0])],
    },
    "coordinate": {
        1: [[0, 16, 3], np.array([[1, 2], [15, 0]]), 7, np.array([], dtype=int)],
        2: [([0, 9, 4], [6, 0, 3]), (np.array([[1, 2], [8, 9]]), np.array([0, 6])),
            (5, [0, 1, 2]), (2, 3), (-1, -1)],
        3: [([0, 4, 2], [5, 0, 3], [4, 1, 0]), (np.array([[0], [4]]), np.array([1, 5]), 2)],
    },
}


def full(sel, ndim):
    """`sel` as a tuple of one item per axis (Ellipsis and missing axes become slices)."""
    sel = sel if isinstance(sel, tuple) else (sel,)
    at = next((i for i, s in enumerate(sel) if s is Ellipsis), len(sel))
    rest = sel[at + 1:] if at < len(sel) else ()
    return sel[:at] + (slice(None),) * (ndim - len(sel) + (at < len(sel))) + rest


def outer(sel, shape):
    """A numpy index doing an orthogonal selection (np.ix_ over the non-integer axes)."""
    axes = [np.arange(n)[s] for s, n in zip(full(sel, len(shape)), shape, strict=True)]
    mesh = iter(np.ix_(*[a for a in axes if np.ndim(a)]))
    return tuple(next(mesh) if np.ndim(a) else a for a in axes)


def block_region(sel, shape, grid):
    """The array region of a block selection, from Python's own slicing of block numbers."""
    region = []
    for s, n, c in zip(full(sel, len(shape)), shape, grid, strict=True):
        numbers = range(-(-n // c))[s if isinstance(s, slice) else slice(s, s + 1 or None)]
        start = numbers.start * c if numbers else 0
        region.append(slice(start, min(numbers.stop * c, n) if numbers else 0))
    return tuple(region)


def coordinate_index(sel):
    return sel if isinstance(sel, tuple) else (sel,)


def grid_of(zr):
    return zr.shards or zr.chunks


def selections(method, zr):
    ndim = zr.ndim
    if method in SELECTIONS:
        return SELECTIONS[method][ndim]
    if method == "mask":
        rng = np.random.default_rng(ndim)
        return [rng.random(zr.shape) < 0.3, np.zeros(zr.shape, bool), np.ones(zr.shape, bool)]
    counts = [-(-n // c) for n, c in zip(zr.shape, grid_of(zr), strict=True)]
    every = list(np.ndindex(*counts))  # every block, by positive and by negative index
    negative = [tuple(b - n for b, n in zip(blk, counts, strict=True)) for blk in every]
    slices = [(slice(1, None),) * ndim, (slice(None, -1),) + (-1,) * (ndim - 1),
              (slice(-2, None),), Ellipsis,
              (slice(0, 1),) * ndim, (slice(1, 100),)]
    return every + negative + slices


def numpy_read(method, data, sel, grid):
    if method == "basic":
        return data[sel]
    if method == "orthogonal":
        return data[outer(sel, data.shape)]
    if method == "coordinate":
        result = data[coordinate_index(sel)]
        return np.reshape(result, (1,)) if np.ndim(result) == 0 else result  # points: 1-d
    if method == "mask":
        return data[sel]
    return data[block_region(sel, data.shape, grid)]


def numpy_write(method, data, sel, value, grid):
    if method == "orthogonal":
        index = outer(sel, data.shape)
    elif method == "coordinate":
        index = coordinate_index(sel)
        value = np.reshape(value, np.shape(data[index]))
    elif method == "block":
        index = block_region(sel, data.shape, grid)
    else:
        index = sel
    data[index] = value


def same(ours, expected):
    """Equal values and shape (assert_array_equal alone broadcasts a scalar against (1,))."""
    assert np.shape(ours) == np.shape(expected)
    assert np.asarray(ours).dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(ours, expected)


def zarr_create(path, layout, data=None, **kwargs):
    shape, chunks, shards = LAYOUTS[layout]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zr = zarr.create_array(store=str(path), shape=shape, chunks=chunks, shards=shards,
                               dtype="i4", fill_value=0, **kwargs)
        if data is not None:
            zr[...] = data
    return zr


@pytest.fixture(params=list(LAYOUTS))
def layout(request):
    return request.param


@pytest.fixture
def stored(tmp_path, layout):
    """(zarr-python array, the same store opened by zarrkit, the data)."""
    shape = LAYOUTS[layout][0]
    data = (np.arange(math.prod(shape), dtype="i4") * 7 % 1000).reshape(shape)
    zr = zarr_create(tmp_path / "a.zarr", layout, data)
    return zr, zarrkit.open_array(str(tmp_path / "a.zarr")), data


# -- reads and writes against the oracles -----------------------------------------------------

@pytest.mark.parametrize("method", METHODS)
def test_get_matches_zarr_python_and_numpy(stored, method):
    zr, zk, data = stored
    for sel in selections(method, zr):
        ours = getattr(zk, f"get_{method}_selection")(sel)
        same(ours, getattr(zr, f"get_{method}_selection")(sel))
        same(ours, numpy_read(method, data, sel, grid_of(zr)))


@pytest.mark.parametrize("method", METHODS)
def test_set_is_read_back_by_zarr_python(tmp_path, layout, method):
    shape, chunks, shards = LAYOUTS[layout]
    zk = zarrkit.create(str(tmp_path / "ours.zarr"), shape=shape, chunks=chunks, shards=shards,
                        dtype="i4", fill_value=0)
    zr = zarr_create(tmp_path / "theirs.zarr", layout)
    # zarr-python's orthogonal writes of index arrays into shards fail (zarr-python #2834):
    # there numpy alone is the oracle.
    theirs = not (method == "orthogonal" and shards)
    expected = np.zeros(shape, "i4")
    for k, sel in enumerate(selections(method, zr)):
        n = np.shape(numpy_read(method, expected, sel, grid_of(zr)))
        value = (np.arange(math.prod(n), dtype="i4") + 100 * (k + 1)).reshape(n)
        getattr(zk, f"set_{method}_selection")(sel, value)
        if theirs:
            getattr(zr, f"set_{method}_selection")(sel, value)
        numpy_write(method, expected, sel, value, grid_of(zr))
    back = zarr.open_array(str(tmp_path / "ours.zarr"), mode="r")[...]
    same(back, expected)
    if theirs:
        same(back, zr[...])


def test_blocks_property_reads_and_writes(stored):
    zr, zk, data = stored
    for sel in selections("block", zr):
        same(zk.blocks[sel], zr.blocks[sel])
    last = (-1,) * zk.ndim
    zk.blocks[last] = -5
    expected = data.copy()
    expected[block_region(last, data.shape, grid_of(zr))] = -5
    same(zr[...], expected)


@pytest.mark.parametrize("layout", ["2d-sharded", "3d-sharded"])
def test_blocks_of_a_sharded_array_are_shards(stored):
    zr, zk, _ = stored
    assert zk.blocks[(0,) * zk.ndim].shape == zk.shards  # not the inner chunks
    assert zk.get_block_selection((0,) * zk.ndim).shape == zr.blocks[(0,) * zk.ndim].shape
    edge = zk.blocks[(-1,) * zk.ndim]  # clipped to the shape
    assert edge.shape == tuple(n - (-(-n // s) - 1) * s for n, s in zip(zk.shape, zk.shards,
                                                                          strict=True))


def test_negative_steps_follow_numpy(stored):
    # zarr-python refuses negative steps; zarrkit's indexing takes them as numpy does.
    _, zk, data = stored
    sel = (slice(None, None, -2),) + (slice(None),) * (zk.ndim - 1)
    same(zk.get_basic_selection(sel), data[sel])
    same(zk.get_orthogonal_selection(sel), data[sel])
    zk.set_basic_selection(sel, -data[sel])
    expected = data.copy()
    expected[sel] = -data[sel]
    same(zk[...], expected)


def test_repeated_points_read_in_order(stored):
    zr, zk, data = stored
    sel = tuple([3, 0, 3, 1] for _ in range(zk.ndim))
    same(zk.get_coordinate_selection(sel), zr.get_coordinate_selection(sel))
    same(zk.get_orthogonal_selection(sel), zr.get_orthogonal_selection(sel))
    same(zk.get_coordinate_selection(sel), data[sel])


def test_mask_accepts_a_one_tuple_and_nested_lists(stored):
    zr, zk, data = stored
    mask = data % 3 == 0
    same(zk.get_mask_selection((mask,)), zr.get_mask_selection((mask,)))
    same(zk.get_mask_selection(mask.tolist()), data[mask])


# -- out= ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", METHODS)
def test_out_is_filled_and_returned(stored, method):
    zr, zk, data = stored
    sel = selections(method, zr)[0]
    expected = numpy_read(method, data, sel, grid_of(zr))
    out = np.full(np.shape(expected), -1, "i4")
    result = getattr(zk, f"get_{method}_selection")(sel, out=out)
    if out.ndim:
        assert result is out
    same(out, np.asarray(expected))
    same(result, expected)


def test_out_takes_a_zarr_python_buffer_and_casts(stored):
    from zarr.core.buffer import default_buffer_prototype

    zr, zk, data = stored
    sel = (slice(1, 4),)
    base = np.zeros(data[sel].shape, "f8")
    theirs = np.zeros(data[sel].shape, "f8")
    prototype = default_buffer_prototype()
    result = zk.get_basic_selection(sel, out=prototype.nd_buffer.from_numpy_array(base))
    zr.get_basic_selection(sel, out=prototype.nd_buffer.from_numpy_array(theirs))
    assert result is base
    same(base, theirs)
    same(base, data[sel].astype("f8"))


def test_out_for_a_single_element_gives_the_element(stored):
    _, zk, data = stored
    out = np.zeros((), "i4")
    index = (1,) * zk.ndim
    assert zk.get_basic_selection(index, out=out) == data[index]
    assert out[()] == data[index]


def test_out_errors(stored):
    _, zk, data = stored
    with pytest.raises(SelectionError, match="shape"):
        zk.get_basic_selection(slice(0, 2), out=np.zeros((3,) + data.shape[1:], "i4"))
    with pytest.raises(SelectionError, match="shape"):
        zk.get_block_selection((0,) * zk.ndim, out=np.zeros(data.shape, "i4"))
    with pytest.raises(SelectionError, match="numpy array"):
        zk.get_basic_selection(slice(0, 2), out=[[0] * 7] * 2)
    frozen = np.zeros((2,) + data.shape[1:], "i4")
    frozen.flags.writeable = False
    with pytest.raises(SelectionError, match="read-only"):
        zk.get_basic_selection(slice(0, 2), out=frozen)


# -- fields= and prototype= ---------------------------------------------------------------------

RECORD = np.dtype([("a", "i4"), ("b", "f8"), ("c", "i2", (2,))])


@pytest.fixture
def records():
    data = np.zeros((6, 5), RECORD)
    data["a"] = np.arange(30).reshape(6, 5)
    data["b"] = data["a"] / 4
    data["c"] = np.arange(60).reshape(6, 5, 2)
    # structured data types are Zarr v2 only
    zk = zarrkit.create(None, shape=data.shape, chunks=(4, 2), dtype=RECORD, zarr_format=2)
    zk[...] = data
    return zk, data


def test_fields_select_like_numpy(records):
    zk, data = records
    same(zk.get_basic_selection(slice(1, 5), fields="a"), data[1:5]["a"])
    same(zk.get_basic_selection(slice(1, 5), fields="c"), data[1:5]["c"])  # a subarray field
    assert zk.get_basic_selection((2, 3), fields="b") == data[2, 3]["b"]
    pair = zk.get_orthogonal_selection(([0, 5], [1, 4]), fields=["b", "a"])
    assert pair.dtype.names == ("b", "a") and pair.dtype.itemsize == 12  # packed, as ordered
    same(pair["a"], data[np.ix_([0, 5], [1, 4])]["a"])
    same(pair["b"], data[np.ix_([0, 5], [1, 4])]["b"])
    same(zk.get_coordinate_selection(([0, 5], [1, 4]), fields="a"), data[[0, 5], [1, 4]]["a"])
    same(zk.get_mask_selection(data["a"] % 4 == 0, fields="a"), data["a"][data["a"] % 4 == 0])
    same(zk.get_block_selection((1, -1), fields="a"), data[4:, 4:]["a"])  # chunks (4, 2)
    out = np.zeros((6, 5), "i4")
    assert zk.get_basic_selection(fields="a", out=out) is out
    same(out, data["a"])


def test_fields_errors(records):
    zk, _ = records
    with pytest.raises(SelectionError, match="'x'"):
        zk.get_basic_selection(fields="x")
    with pytest.raises(SelectionError, match="'x'"):
        zk.set_basic_selection(0, 1, fields=["a", "x"])
    with pytest.raises(SelectionError, match="shape"):
        zk.set_basic_selection(slice(0, 2), [1, 2, 3], fields="a")
    with pytest.raises(SelectionError, match="more than once"):
        zk.set_basic_selection(0, (1, 2), fields=["a", "a"])
    with pytest.raises(SelectionError, match="more than once"):
        zk.get_basic_selection(0, fields=["b", "a", "b"])
    with pytest.raises(DataTypeError, match=r"fields \['a'\].*out of bounds"):
        zk.set_basic_selection(0, 2**40, fields="a")
    with pytest.raises(DataTypeError, match=r"fields \['a'\]"):
        zk.set_basic_selection(0, np.zeros(5, [("x", "i4"), ("y", "i4")]), fields=["a"])
    with pytest.raises(SelectionError, match="structured"):
        zarrkit.create(None, shape=(3,), dtype="i4").get_basic_selection(fields="a")
    assert zk[0, 0]["a"] == 0  # the refused write wrote nothing


# (zarrkit's selection, numpy's index of the same elements) per method; chunks are (4, 2).
FIELD_WRITES = {
    "basic": ((slice(1, 5), slice(None, None, 2)), (slice(1, 5), slice(None, None, 2))),
    "orthogonal": (([0, 5, 2], [1, 4]), np.ix_([0, 5, 2], [1, 4])),
    "coordinate": (([0, 5, 3], [1, 4, 0]), ([0, 5, 3], [1, 4, 0])),
    "mask": (np.arange(30).reshape(6, 5) % 7 == 1, np.arange(30).reshape(6, 5) % 7 == 1),
    "block": ((1, slice(0, 2)), (slice(4, 6), slice(0, 4))),
}


@pytest.mark.parametrize("method", METHODS)
def test_field_writes_keep_the_other_fields(records, method):
    zk, data = records
    sel, index = FIELD_WRITES[method]
    write = getattr(zk, f"set_{method}_selection")
    expected = data.copy()
    write(sel, 99, fields="a")
    expected["a"][index] = 99
    same(zk[...], expected)
    # Two fields, in an order of their own, from a structured value (by position, as numpy).
    value = np.zeros(expected[index].shape, [("cc", "i2", (2,)), ("bb", "f8")])
    value["cc"] = np.arange(value.size * 2).reshape(value.shape + (2,)) + 100
    value["bb"] = -np.arange(value.size).reshape(value.shape)
    write(sel, value, fields=["c", "b"])
    expected["c"][index] = value["cc"]
    expected["b"][index] = value["bb"]
    same(zk[...], expected)
    write(sel, [7, 8], fields="c")  # a sub-array field: its own axes last
    expected["c"][index] = [7, 8]
    same(zk[...], expected)


def test_field_writes_read_by_zarr_python(tmp_path):
    flat = np.dtype([("a", "i4"), ("b", "f8")])  # zarr-python reads no sub-array fields
    data = np.zeros((6, 5), flat)
    data["a"] = np.arange(30).reshape(6, 5)
    zk = zarrkit.create(str(tmp_path / "r.zarr"), shape=data.shape, chunks=(4, 2), dtype=flat,
                        zarr_format=2)
    zk[...] = data
    zk.set_orthogonal_selection(([1, 4], slice(None)), 2.5, fields="b")
    data["b"][[1, 4]] = 2.5
    same(zarr.open_array(str(tmp_path / "r.zarr"), mode="r")[...], data)


def test_concurrent_writes_of_other_fields_are_not_lost(tmp_path):
    # Each field write reads, changes and writes back whole chunks under their keys' locks:
    # two threads writing different fields of the same chunks both keep what they wrote.
    import threading

    zk = zarrkit.create(str(tmp_path / "r.zarr"), shape=(4, 40), chunks=(4, 40), dtype=RECORD,
                        zarr_format=2)

    def fill(field, value):
        for col in range(40):
            zk.set_basic_selection((slice(None), col), value, fields=field)

    threads = [threading.Thread(target=fill, args=args) for args in (("a", 5), ("b", 0.5))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result = zk[...]
    assert (result["a"] == 5).all() and (result["b"] == 0.5).all() and (result["c"] == 0).all()


def test_field_writes_refused_read_only(records):
    zk, data = records
    ro = zarrkit.open_array(zk.store, mode="r")
    with pytest.raises(ReadOnlyError):
        ro.set_basic_selection(0, 1, fields="a")
    same(zk[...], data)


@pytest.mark.parametrize("method", METHODS)
def test_prototype_other_than_none_is_refused(stored, method):
    zr, zk, data = stored
    sel = selections(method, zr)[0]
    getattr(zk, f"get_{method}_selection")(sel, prototype=None)
    with pytest.raises(SelectionError, match="prototype"):
        getattr(zk, f"get_{method}_selection")(sel, prototype=object())
    with pytest.raises(SelectionError, match="prototype"):
        getattr(zk, f"set_{method}_selection")(sel, 0, prototype=object())
    same(zk[...], data)


# -- refused selections -------------------------------------------------------------------------

def both_refuse(zk, method, sel, match):
    with pytest.raises(SelectionError, match=match):
        getattr(zk, f"get_{method}_selection")(sel)
    with pytest.raises(SelectionError, match=match):
        getattr(zk, f"set_{method}_selection")(sel, 0)


def test_basic_refuses_arrays_and_newaxis(stored):
    zr, zk, _ = stored
    for sel in ([1, 2], np.array([1, 2]), np.ones(zk.shape[0], bool), None, 1.0, (0, None)):
        both_refuse(zk, "basic", sel, "basic selection")
        with pytest.raises(IndexError):  # zarr-python refuses them too
            zr.get_basic_selection(sel)


def test_coordinate_refuses_slices_masks_and_wrong_counts(stored):
    zr, zk, data = stored
    bad = [(slice(None),) * zk.ndim, (np.zeros(zk.shape[0], bool),) * zk.ndim,
           data % 2 == 0, ([1.5],) * zk.ndim, (Ellipsis, [1])]
    if zk.ndim > 1:
        bad.append(([1],) * (zk.ndim - 1))
    for sel in bad:
        both_refuse(zk, "coordinate", sel, "coordinate selection")
        with pytest.raises(IndexError):
            zr.get_coordinate_selection(sel)
    both_refuse(zk, "coordinate", (zk.shape[0],) * zk.ndim, "out of bounds")


def test_mask_refuses_other_shapes_and_dtypes(stored):
    zr, zk, data = stored
    wrong_shape = np.ones(data.shape[:-1] + (data.shape[-1] - 1,), bool)
    for mask in (wrong_shape, (data % 2).astype(int), np.ones((1,) + data.shape, bool)):
        both_refuse(zk, "mask", mask, "mask selection")
        with pytest.raises(IndexError):
            zr.get_mask_selection(mask)


def test_orthogonal_refuses_newaxis_and_2d_arrays(stored):
    zr, zk, _ = stored
    for sel in (None, ([[1]],) + (slice(None),) * (zk.ndim - 1)):
        both_refuse(zk, "orthogonal", sel, "")
        with pytest.raises(IndexError):
            zr.get_orthogonal_selection(sel)


def test_block_refusals_match_zarr_python(stored):
    zr, zk, data = stored
    counts = [-(-n // c) for n, c in zip(zk.shape, grid_of(zr), strict=True)]
    rest = (0,) * (zk.ndim - 1)
    bad = [(counts[0],) + rest, (-counts[0] - 1,) + rest,  # past either end
           (slice(counts[0], None),), (slice(-counts[0] - 1, None),),  # a start past either end
           (slice(0, 2, 2),), (slice(None, None, -1),),  # steps
           ([0, 1],), (None,), (0.0,), (0,) * (zk.ndim + 1)]
    for sel in bad:
        both_refuse(zk, "block", sel, "")
        with pytest.raises(IndexError):
            zr.get_block_selection(sel)
        with pytest.raises(SelectionError):
            zk.blocks[sel] = 0
    same(zk[...], data)


def test_read_only_arrays_refuse_every_write(stored, tmp_path):
    zr, _, data = stored
    zk = zarrkit.open_array(str(tmp_path / "a.zarr"), mode="r")
    for method in METHODS:
        sel = selections(method, zr)[0]
        with pytest.raises(ReadOnlyError):
            getattr(zk, f"set_{method}_selection")(sel, 0)
        same(getattr(zk, f"get_{method}_selection")(sel),
             getattr(zr, f"get_{method}_selection")(sel))
    with pytest.raises(ReadOnlyError):
        zk.blocks[...] = 0
    same(zr[...], data)


def test_empty_block_slices(stored):
    zr, zk, data = stored
    count = -(-zk.shape[0] // grid_of(zr)[0])
    same(zk.blocks[1:1], zr.blocks[1:1])
    same(zk.blocks[count - 1:0], zr.blocks[count - 1:0])
    # A stop before the first block selects nothing, as in Python (zarr-python 3.1 turns it into
    # a negative element index and returns rows).
    same(zk.blocks[0:-count - 2], data[0:0])
    zk.blocks[0:-count - 2] = 5
    same(zr[...], data)


@pytest.mark.parametrize("method, sel", [
    ("basic", (slice(1, 9), slice(None))), ("orthogonal", ([0, 3, 9], slice(2, 6))),
    ("mask", np.arange(70).reshape(10, 7) % 3 == 0), ("block", (1, slice(None))),
])
def test_out_is_filled_in_place_without_a_second_result(method, sel, monkeypatch):
    """A C-ordered out= of the result's shape and data type is decoded into directly: no result
    array of the read's own is allocated and copied (checked: nothing but `out` is returned,
    and numpy's empty is not called for it)."""
    from zarrkit.engine import chunk_io

    data = (np.arange(70, dtype="i4") * 7).reshape(10, 7)
    zk = zarrkit.create(None, shape=(10, 7), chunks=(4, 3), dtype="i4")
    zk[...] = data
    expected = getattr(zk, f"get_{method}_selection")(sel)
    allocated = []
    real_empty = chunk_io.empty

    def counting_empty(*args, **kwargs):
        allocated.append(args)
        return real_empty(*args, **kwargs)

    monkeypatch.setattr(chunk_io, "empty", counting_empty)
    out = np.full(expected.shape, -1, "i4")
    assert getattr(zk, f"get_{method}_selection")(sel, out=out) is out
    same(out, expected)
    assert allocated == []
    # any other out= (another data type, F order) is still filled, through a copy
    for other in (np.zeros(expected.shape, "i8"), np.zeros(expected.shape, "i4", order="F")):
        if other.flags.c_contiguous and other.dtype == "i4":
            continue
        assert getattr(zk, f"get_{method}_selection")(sel, out=other) is other
        same(other.astype("i4"), expected)

"""Views of TensorStore-style handles compared with TensorStore itself: 0-d boolean indices,
transposes by label, slice members, the data types of written values, and resizing through a
view (with the checks of resize's arguments)."""

from __future__ import annotations

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import DataTypeError, SelectionError

ts = pytest.importorskip("tensorstore")

from _spec_helpers import VIEW_DATA, VIEW_SHAPE, stored_pair  # noqa: E402


def _stored(spec):
    return ts.open(spec).result()


def _outcome(make, *errors):
    try:
        return "ok", make()
    except errors as exc:
        return "error", type(exc).__name__


# -- 0-d boolean indices: numpy's new dimension of size 1 (True) or 0 (False) ---------------

BOOL0 = ["x[True]", "x[np.array(False)]", "x[1, True]", "x[[1, 2], True]", "x[True, [1, 2]]",
         "x[[1, 2], :, True]", "x[True, :, [1, 2]]", "x[True, False]", "x[..., True]",
         "x[None, True, 1]", "x[1, 2, 3, True]", "x[[True, False, True, False], True]",
         "x.oindex[True]", "x.oindex[[0, 1], True, [1, 2]]", "x.oindex[False, 1]",
         "x.vindex[True]", "x.vindex[:, True, [1, 2]]"]


@pytest.mark.parametrize("expression", BOOL0)
def test_0d_boolean_index_like_tensorstore(tmp_path, expression):
    t, a, _ = stored_pair(tmp_path)
    tv = eval(expression, {"x": t, "np": np})  # noqa: S307 - test table
    zv = eval(expression, {"x": a.view, "np": np})  # noqa: S307 - test table
    assert zv.domain.to_json() == tv.domain.to_json()
    expected, actual = tv.read().result(), zv.read().result()
    assert actual.shape == expected.shape and (actual == expected).all()


def test_writes_through_a_0d_boolean_index(tmp_path):
    t, a, spec = stored_pair(tmp_path)
    a.view[1, True, 2].write(np.full((1, 6), -1, np.int32)).result()
    t[1, True, 2].write(np.full((1, 6), -1, np.int32)).result()
    assert (_stored(spec).read().result() == t.read().result()).all()


# -- transpose: indices (negative ones too) and labels, as TensorStore's dimension selections -

@pytest.mark.parametrize("axes", [[-1, 0, 1], ["c", "a", "b"], ["c", 0, "b"], (2, 1, 0), None,
                                  range(3), [np.int64(2), 0, 1]])
def test_transpose_by_index_or_label_like_tensorstore(tmp_path, axes):
    t, a, _ = stored_pair(tmp_path)
    tv = t.label["a", "b", "c"].transpose(axes)
    zv = a.label["a", "b", "c"].transpose(axes)
    assert zv.domain.to_json() == tv.domain.to_json()
    assert (zv.read().result() == tv.read().result()).all()


@pytest.mark.parametrize("axes", ["abc", [1.0, 0, 2], ["c", "a", "a"], [3, 0, 1], [-4, 0, 1],
                                  [2, 0], 1.5])
def test_transpose_refusals_are_selection_errors(tmp_path, axes):
    t, a, _ = stored_pair(tmp_path)
    with pytest.raises((ValueError, TypeError)):
        t.label["a", "b", "c"].transpose(axes)
    with pytest.raises(SelectionError, match="transpose"):
        a.label["a", "b", "c"].transpose(axes)


def test_transpose_of_rank_1_takes_one_dimension():
    z = zarrkit.create(None, shape=(4,), dtype="i4")
    assert z.transpose(0).domain == z.transpose(-1).domain == z.domain


# -- slices take integers only --------------------------------------------------------------

@pytest.mark.parametrize("selection", [slice(1.0, 2), slice(0, 2.5), slice(None, None, 1.0),
                                       slice("1", 3)])
def test_slice_members_must_be_integers(tmp_path, selection):
    t, a, _ = stored_pair(tmp_path)
    with pytest.raises(TypeError):
        t[selection]
    with pytest.raises(SelectionError, match="is not an integer or None"):
        a.view[selection]


def test_slice_members_with_index_are_integers(tmp_path):
    t, a, _ = stored_pair(tmp_path)
    s = slice(np.int32(1), np.int64(3), np.int8(1))
    assert a.view[s].domain.to_json() == t[s].domain.to_json()


# -- the data type of written values ---------------------------------------------------------

UNSAFE = [np.array([1.5, 2]), np.array([1.0, 2.0]), np.array([1, 2], "int64"),
          np.array([1, 2], "uint32"), np.array([1, 2], "float32"), np.array(["1", "2"]),
          np.array([1 + 0j, 2]), np.array([1, 2], object)]


@pytest.mark.parametrize("value", UNSAFE, ids=lambda v: str(v.dtype))
def test_an_array_written_must_cast_safely(tmp_path, value):
    """TensorStore refuses numpy arrays whose values might not fit; nothing is written."""
    t, a, spec = stored_pair(tmp_path)
    with pytest.raises(TypeError):
        t[0, 0, :2].write(value).result()
    with pytest.raises(DataTypeError, match=f"data type {value.dtype} .* int32"):
        a.view[0, 0, :2].write(value)
    with pytest.raises(DataTypeError):
        a.view[0, 0, :2] = value
    assert (_stored(spec).read().result() == VIEW_DATA).all()


@pytest.mark.parametrize("value", [[2**40, 1], 2**40])
def test_an_out_of_range_python_integer_is_refused_not_wrapped(tmp_path, value):
    t, a, spec = stored_pair(tmp_path)
    with pytest.raises(OverflowError):
        t[0, 0, :2].write(value).result()
    with pytest.raises(DataTypeError, match="out of bounds"):
        a.view[0, 0, :2].write(value)
    assert (_stored(spec).read().result() == VIEW_DATA).all()


@pytest.mark.parametrize("value", [np.array([1, 2], "int16"), [1, 2], [1.5, 2], np.int64(3),
                                   3.0, np.array([True, False]), "3", (np.int64(1), 2)],
                         ids=repr)
def test_values_written_like_tensorstore(tmp_path, value):
    t, a, _ = stored_pair(tmp_path)
    t[0, 0, :2].write(value).result()
    a.view[0, 0, :2].write(value).result()
    assert (a.view[0, 0, :2].read().result() == t[0, 0, :2].read().result()).all()


def test_a_written_array_is_taken_when_write_is_called(tmp_path):
    _, a, _ = stored_pair(tmp_path)
    value = np.full((5, 6), 7, np.int32)
    future = a.view[0].write(value)
    value[...] = 9  # the caller reuses its buffer before the write is done
    future.result()
    assert (a[0] == 7).all()


# -- resize through a view -----------------------------------------------------------------

VIEWS = ["x", "x[:, ::-1]", "x[:, ::2]", "x[None]", "x[:, 1:]", "x[:, :5]", "x[1:]", "x[:, :3]",
         "x[:3]", "x[:, ::-1][1:]", "x[:, :, 2:4]",
         "x.translate_to[0]", "x.translate_by[-2]", "x.T", "x[::-1]", "x[1]", "x[:, [0, 1]]",
         "x[:, :, ::-1].translate_to[0]", "x.label['a', 'b', 'c']", "x[::-1][::-1]"]
RESIZES = [dict(exclusive_max=[9, None, None]), dict(exclusive_max=[None, None, 9]),
           dict(inclusive_min=[-9, None, None]), dict(inclusive_min=[0, None, None]),
           dict(exclusive_max=[2, None, None]), dict(exclusive_max=[None, 9, None]),
           dict(exclusive_max=[2, None, None], expand_only=True),
           dict(exclusive_max=[9, 9, 9], shrink_only=True), dict(exclusive_max=[None] * 3),
           dict(exclusive_max=[None, 9, None, None]), dict(inclusive_min=[None, None, -3]),
           dict(exclusive_max=[2, None, None], resize_metadata_only=True),
           dict(exclusive_max=[12, None, None]), dict(exclusive_max=[None] * 4)]


@pytest.mark.parametrize("resize", RESIZES, ids=str)
@pytest.mark.parametrize("view", VIEWS)
def test_resize_of_a_view_like_tensorstore(tmp_path, view, resize):
    """The same refusals, the same returned domain, the same stored shape and data."""
    t, _, t_spec = stored_pair(tmp_path, "t")
    _, a, a_spec = stored_pair(tmp_path, "a")
    tv = eval(view, {"x": t})  # noqa: S307 - test table
    zv = eval(view, {"x": a.view})  # noqa: S307 - test table
    expected = _outcome(lambda: tv.resize(**resize).result().domain.to_json(), ValueError)
    actual = _outcome(lambda: zv.resize(**resize).domain.to_json(), SelectionError)
    assert actual[0] == expected[0], (expected, actual)
    if expected[0] == "ok":
        assert actual[1] == expected[1]
    t_after, a_after = _stored(t_spec), _stored(a_spec)
    assert a_after.domain.to_json() == t_after.domain.to_json()
    assert a.domain.to_json() == t_after.domain.to_json()  # the handle follows its own resize
    if not resize.get("resize_metadata_only"):
        assert (a_after.read().result() == t_after.read().result()).all()


def test_resize_of_a_view_opened_from_a_spec(tmp_path):
    _, _, spec = stored_pair(tmp_path)
    transform = {"input_inclusive_min": [10, 0, 0], "input_exclusive_max": [[14], [5], [6]],
                 "input_labels": ["x", "y", "z"],
                 "output": [{"input_dimension": 0, "offset": -10}, {"input_dimension": 1},
                            {"input_dimension": 2}]}
    v = zarrkit.open({**spec, "transform": transform})
    grown = v.resize(exclusive_max=[16, None, None])
    assert grown.domain.to_json() == ts.open({**spec, "transform": transform}).result(
    ).domain.to_json() | {"exclusive_max": [[16], [5], [6]]}
    assert _stored(spec).shape == (6, 5, 6)
    assert (grown.read().result()[4:] == 0).all()


@pytest.mark.parametrize("kwargs, message", [
    (dict(inclusive_min=[0, None, None]), "lower bound of dimension 0 .* explicit"),
    (dict(inclusive_min=[0], exclusive_max=[5, 5, 5]), "inclusive_min has 1 values"),
    (dict(exclusive_max=[5, 5]), "exclusive_max has 2 values for rank 3"),
    (dict(exclusive_max=[5.5, None, None]), "5.5 is not an integer"),
    (dict(exclusive_max=["5", None, None]), "'5' is not an integer"),
    (dict(exclusive_max=5), "must be a sequence"),
    (dict(exclusive_max=[2**62 + 1, None, None]), "outside"),
    (dict(exclusive_max=[-1, None, None]), r"\[0, -1\), which ends before it starts"),
])
def test_resize_arguments_are_checked_before_anything_changes(tmp_path, kwargs, message):
    """TensorStore refuses these too (a negative exclusive_max it would store as a negative
    shape in zarr.json; an explicit bound even if unchanged)."""
    _, a, spec = stored_pair(tmp_path)
    with pytest.raises(SelectionError, match=message):
        a.resize(**kwargs)
    assert a.shape == VIEW_SHAPE
    assert (_stored(spec).read().result() == VIEW_DATA).all()


def test_resize_of_a_read_only_view_is_refused(tmp_path):
    _, _, spec = stored_pair(tmp_path)
    r = zarrkit.open(spec["kvstore"]["path"], mode="r")
    with pytest.raises(zarrkit.ZarrkitError):
        r.view.resize(exclusive_max=[9, None, None])
    assert _stored(spec).shape == VIEW_SHAPE

"""TensorStore's dimension expressions (`zarrkit.d[...]`) compared with TensorStore itself:
the transforms they build (on bare index transforms, labelled, offset, implicit and unbounded),
the data read and written through views and arrays indexed with them, the dimension selection
each operation leaves for the next, their errors, and `mark_bounds_implicit` with resize."""

from __future__ import annotations

import numpy as np
import pytest

import zarrkit
from zarrkit import IndexTransform, d
from zarrkit.errors import SelectionError, ZarrkitError
from zarrkit.spec.dim_expression import DimExpression

ts = pytest.importorskip("tensorstore")

from _spec_helpers import VIEW_DATA, VIEW_SHAPE, stored_pair  # noqa: E402

# -- transforms: the same expression on a TensorStore and a zarrkit IndexTransform -------------

BASES = {
    "labelled": {"input_shape": [4, 5, 6, 7], "input_labels": ["a", "b", "c", "d"]},
    "offset": {"input_inclusive_min": [-5, 3, [1], 0], "input_exclusive_max": [[7], 11, 9, [10]],
               "input_labels": ["x", "y", "", ""]},
    "unbounded": {"input_rank": 3},
}

# Each: the expression (D is ts.d or zarrkit.d) and the bases it applies to without error.
# `.label[...]` at the end shows which dimensions the expression leaves selected.
EXPRESSIONS = [
    # selection by index, label, range, nesting; one term for all selected dimensions
    "D[2, 0][1:3, 2:4].label['p', 'q']",
    "D[-1, 'b'][1:3].label['p', 'q']",
    "D[::-1][1:3].label['p', 'q', 'r', 's']",
    "D[-2:][1:3].label['p', 'q']",
    "D[1:3][2]",
    "D[:][1]",
    "D[[0, 1], D[2]][1:2].label['p', 'q', 'r']",
    "D[np.int64(1)][np.int64(4)]",
    "D[range(1, 3)].translate_by[1].label['p', 'q']",
    "D[0, 1][4:0:-2, 3:1:-1].label['p', 'q']",
    "D[0, 1][[1, 2]:[3, 4]]",
    "D[0, 1][1:[3, 4]:[1, 2]]",
    "D[1, 3][..., 2].label['p']",
    "D[1, 3][...].label['p', 'q']",
    "D[0][[]].label['p']",
    # integers and index arrays: in place when adjacent, else first
    "D[2, 0][1, 2:4].label['p']",
    "D[2, 0][[1, 2], 2:4].label['p', 'q']",
    "D[2, 0][[1, 2], [0, 1]].label['p']",
    "D[0, 2][[1, 2], [0, 1]].label['p']",
    "D[2, 0][[[1, 2]], 1:3].label['p', 'q', 'r']",
    "D[3][[[1, 2], [0, 0]]].label['p', 'q']",
    "D[3, 0, 2][[1, 2], 1:3, [0, 1]].label['p', 'q']",
    "D[3, 0, 2][[1, 2], [0, 1], 1:3].label['p', 'q']",
    "D[3, 0, 2][1:3, [1, 2], [0, 1]].label['p', 'q']",
    "D[1, 3, 0, 2][1:3, [1, 2], [0, 1], 2:4].label['p', 'q', 'r']",
    "D[1, 3][[[1], [2]], [[3, 4, 5]]].label['p', 'q']",
    "D[1, 2][[[True, False, True, True, False, False], [False] * 6, [True] * 6, "
     "[False] * 6, [True] * 6]].label['p']",
    "D[1, 3][1:3, True, 1].label['p', 'q']",
    "D[1, 3][True, [1, 2], 1:3].label['p', 'q']",
    "D[1, 3][[1, 2], True, 1:3].label['p', 'q']",
    # outer and vectorized indexing
    "D[2, 0].oindex[[1, 2], [0, 1]].label['p', 'q']",
    "D[1, 3].oindex[[True, False, True, False, True], [1, 2]].label['p', 'q']",
    "D[1, 2].oindex[[[True, False, True, True, False, False], [False] * 6, [True] * 6, "
     "[False] * 6, [True] * 6]].label['p']",
    "D[1, 3].oindex[[[1], [2]], 3].label['p', 'q']",
    "D[2, 0].vindex[[1, 2], 1:3].label['p', 'q']",
    "D[2, 0].vindex[1:3, [1, 2]].label['p', 'q']",
    "D[1, 3].vindex[[[1], [2]], [[3, 4, 5]]].label['p', 'q']",
    "D[1, 3].vindex[[1, 2], True, 1:3].label['p', 'q']",
    # new axes: the selection names positions in the result
    "D[1, 3][None].label['p', 'q']",
    "D[-1, 0][None].label['p', 'q']",
    "D[0:2][None].label['p', 'q']",
    "D[-2:][None].label['p', 'q']",
    "D[0, 2][None, 1:3].label['p', 'q']",
    "D[0, 2][1:3, None].label['p', 'q']",
    "D[0, 4, 2][None, 1:3, [0, 1]].label['p', 'q', 'r']",
    "D[-1][None].translate_by[1]",
    # translations, strides, labels, implicit bounds
    "D['b', 'd'].translate_to[10, 20]",
    "D[1, 3].translate_to[None, 3]",
    "D[0, 1].translate_by[-3].label['p', 'q']",
    "D[1, 3].translate_by[2, None]",
    "D[1, 3].translate_backward_by[2, -1]",
    "D[1, 3].translate_backward_by[2, -1].translate_to[0]",
    "D[1, 3].stride[2, 3].label['p', 'q']",
    "D[0, 1].stride[-2, 3]",
    "D[1, 2].stride[-3]",
    "D[0, 2].label['x2', 'z2']",
    "D[1, 3].mark_bounds_implicit[True]",
    "D[1, 2].mark_bounds_implicit[True:None]",
    "D[1, 2].mark_bounds_implicit[None:False]",
    "D[:].mark_bounds_implicit[False]",
    "D[0, 2].mark_bounds_implicit[None]",
    # transpose to target positions, diagonal
    "D[0, 3].transpose[-1].label['p', 'q']",
    "D[0, 3].transpose[-2].label['p', 'q']",
    "D[0, 3].transpose[2]",
    "D[0, 3].transpose[0:2].label['p', 'q']",
    "D[0, 3].transpose[2, 0].label['p', 'q']",
    "D[0].transpose[-1]",
    "D[:].transpose[::-1].label['p', 'q', 'r', 's']",
    "D[0, 1].transpose[-4:-2].label['p', 'q']",
    "D[0, 1].diagonal.label['p']",
    "D[1, 3].diagonal",
    "D[()].diagonal",
    "D[1, 3].diagonal.translate_by[3]",
    # through index arrays made before
    "D[1].oindex[[1, 2, 3]].mark_bounds_implicit[False]",
    "D[1].oindex[[1, 2, 3]].stride[2]",
    "D[1].oindex[[1, 2, 3]].stride[-1]",
    "D[1, 2].oindex[[1, 2, 3], [0, 4]].diagonal",
    "D[1, 2][2:4, 2].translate_by[3].label['p']",
]


def _normalized(json):
    """Transform JSON made comparable: zarrkit keeps index arrays broadcast, and neither
    records TensorStore's index_array_bounds nor its constant for an empty index array."""
    json = dict(json)
    domain = IndexTransform.from_json({k: v for k, v in json.items() if k != "output"}).domain
    shape = [n if n < 2**60 else 1 for n in domain.shape]
    output = []
    for m in json.get("output", []):
        m = {k: v for k, v in m.items() if k != "index_array_bounds"}
        if "index_array" in m:
            array = m.get("offset", 0) + m.get("stride", 1) * np.asarray(m["index_array"])
            m = {} if domain.size == 0 else {
                "index_array": np.broadcast_to(array, shape).tolist()}
        output.append(m)
    if "output" in json:
        json["output"] = output
    return json


def _both(expression, base):
    """(TensorStore's transform JSON or None, zarrkit's or the zarrkit error)."""
    tjson = BASES[base]
    try:
        expected = ts.IndexTransform(json=tjson)[eval(  # noqa: S307 - test table
            expression, {"D": ts.d, "np": np})].to_json()
    except IndexError:
        expected = None
    try:
        actual = eval(expression, {"D": d, "np": np}).apply(  # noqa: S307 - test table
            IndexTransform.from_json(tjson)).to_json()
    except SelectionError as exc:
        actual = exc
    return expected, actual


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_transform_like_tensorstore(expression, base):
    """The same transform, or a SelectionError where TensorStore refuses (an index outside
    explicit bounds, a dimension the base does not have, ...)."""
    expected, actual = _both(expression, base)
    if expected is None:
        assert isinstance(actual, SelectionError)
    else:
        assert not isinstance(actual, Exception), actual
        assert _normalized(actual) == _normalized(expected)


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_each_expression_is_valid_somewhere(expression):
    assert any(_both(expression, base)[0] is not None for base in BASES)


# -- data: views and arrays of a stored array, indexed with the same expression ---------------

def _labelled(t, a):
    return t[ts.d[:].label["x", "y", "z"]], a[d[:].label["x", "y", "z"]]


READS = [
    "D['y'][2:5]",
    "D['x'].translate_to[10]",
    "D['x', 'y'].translate_to[0].transpose[1, 0]",
    "D['z', 'x'][1:5, 2]",
    "D['z', 'x'][[0, 5, 1], [3, 0, 1]]",
    "D['x', 'z'].oindex[[0, 3], [5, 1]]",
    "D['z'].vindex[[[1, 2]]]",
    "D['y'].stride[2]",
    "D['y'].stride[-2]",
    "D['x', 'y'].diagonal",
    "D[0, 2].diagonal.label['diag']",
    "D[1][None].label['new']",
    "D['y'][::-2].translate_backward_by[3]",
    "D['z'].transpose[0]",
    "D['x', 'y', 'z'][1, 2:4, [5, 0]]",
    "D[-1][[True, False, True, False, True, True]]",
    "D['x'].mark_bounds_implicit[False]",
]


@pytest.mark.parametrize("expression", READS)
def test_reads_like_tensorstore(tmp_path, expression):
    t, a, _ = stored_pair(tmp_path)
    tv, zv = _labelled(t, a)
    tv = tv[eval(expression, {"D": ts.d})]  # noqa: S307 - test table
    zv = zv[eval(expression, {"D": d})]  # noqa: S307 - test table
    assert isinstance(zv, zarrkit.View)
    assert zv.domain.to_json() == tv.domain.to_json()
    expected, actual = tv.read().result(), zv.read().result()
    assert actual.shape == expected.shape and (actual == expected).all()


def test_writes_like_tensorstore(tmp_path):
    t, a, spec = stored_pair(tmp_path, "w")
    tv, zv = _labelled(t, a)
    value = np.arange(-12, 0, dtype=np.int32).reshape(4, 1, 3)  # (x, y, z), broadcast
    zv[d["z", "x"][1:4, 0:4]] = value  # through a view: a setitem, as TensorStore's
    tv[ts.d["z", "x"][1:4, 0:4]] = value
    a[d[2, 0].translate_to[0].transpose[0, 1][0, 1]] = np.int32(99)  # through the array
    t[ts.d[2, 0].translate_to[0].transpose[0, 1][0, 1]] = np.int32(99)
    stored = ts.open(spec).result().read().result()
    assert (stored == t.read().result()).all()
    assert (stored[0:4, :, 1:4] != VIEW_DATA[0:4, :, 1:4]).all()


def test_an_array_indexed_with_an_expression_is_a_lazy_view(tmp_path):
    _, a, _ = stored_pair(tmp_path)
    view = a[d[1].translate_by[10][12:14]]
    assert isinstance(view, zarrkit.View)
    assert view.domain.to_json() == a.view[d[1].translate_by[10][12:14]].domain.to_json()
    assert (view.read().result() == VIEW_DATA[:, 2:4]).all()
    assert (np.asarray(a[1:2]) == VIEW_DATA[1:2]).all()  # numpy indexing stays eager


def test_the_selection_follows_each_operation():
    base = IndexTransform.from_json({"input_shape": [2, 3, 4, 5]})

    def labels(expression):
        return list(expression.apply(base).domain.labels)

    # indexing: the dimensions the terms made, in term order; integers drop theirs
    assert labels(d[3, 1][1:3, 2].label["p"]) == ["", "", "p"]
    assert labels(d[3, 1][1:3, 1:2].label["p", "q"]) == ["", "q", "", "p"]
    # leading index array dimensions come first in the selection too
    assert labels(d[2, 0].vindex[1:2, [1, 0]].label["p", "q"]) == ["p", "", "q", ""]
    # transpose: the target positions; diagonal: the new first dimension
    assert labels(d[0, 3].transpose[1].label["p", "q"]) == ["", "p", "q", ""]
    assert labels(d[1, 2].diagonal.label["p"]) == ["p", "", ""]
    # new axes: the positions named
    assert labels(d[0, -1][None].label["p", "q"]) == ["p", "", "", "", "", "q"]


def test_stride_none_leaves_a_dimension_unchanged():
    # As documented (TensorStore 0.1.86 itself reads None as an overflowing stride).
    base = IndexTransform.from_json({"input_shape": [6, 8]})
    assert d[0, 1].stride[2, None].apply(base) == d[0].stride[2].apply(base)


# -- errors -------------------------------------------------------------------------------------

ERRORS = [
    ("d['w'][1:3]", "no dimension is labelled 'w'"),
    ("d[4].translate_by[1]", "dimension 4 is out of range for rank 4"),
    ("d[-5].translate_by[1]", "dimension -5 is out of range"),
    ("d[1:9].translate_by[1]", "stop 9"),
    ("d[3:1].translate_by[1]", "not a valid range"),
    ("d[0, 'a'].translate_by[1]", "[0] given more than once"),
    ("d[0:2, 1].label['p', 'q', 'r']", "[1] given more than once"),
    ("d[0, 1].translate_to[1, 2, 3]", "3 values for 2 dimensions"),
    ("d[0, 1].label['p']", "1 label(s) for 2 selected"),
    ("d[0, 1].label['p', 'c']", "not unique"),
    ("d[0, 1][1:2, 1:2, 1:2]", "use 3 dimension(s), but the selection has 2"),
    ("d[0, 1][[1, 2]]", "use 1 dimension(s), but the selection has 2"),
    ("d['a'][None]", "new dimensions cannot be selected by label"),
    ("d[:][None]", "not determined"),
    ("d[0]", "needs at least one operation"),
    ("d[0, 1].stride[2, 0]", "stride 0"),
    ("d[0, 1].transpose['a', 'b']", "not labels"),
    ("d[0, 1].transpose[1, 1]", "[1] given more than once"),
    ("d[0, 1].transpose[3]", "2 dimension(s) cannot start (or end, if negative) at position 3"),
    ("d[0, 1].transpose[-4]", "at position -4 of 4"),
    ("d[0, 1].transpose[0, 4]", "dimension 4 is out of range for rank 4"),
    ("d[0, 1].transpose[0, 1, 2]", "3 target position(s) for 2"),
    ("d[0, 1].oindex[True, 1, 1]", "zero-rank boolean"),
    ("d[1].oindex[[0, 2]].mark_bounds_implicit[True]", "read by an index array"),
    ("d[1].mark_bounds_implicit['yes']", "expected True, False or None"),
    ("d[1].mark_bounds_implicit[True:False:2]", "expected True, False or None"),
    ("d[0].label[1]", "label: expected strings"),
    ("d[0, 1].label[('p', 2)]", "label: expected strings"),
    ("d[0].translate_to[1.5]", "expected integers, got 1.5"),
    ("d[0][9]", "outside the domain [0, 2)"),
]


@pytest.mark.parametrize(("expression", "message"), ERRORS)
def test_errors_are_selection_errors_naming_the_fault(expression, message):
    base = IndexTransform.from_json({"input_shape": [2, 3, 4, 5], "input_labels": list("abcd")})
    with pytest.raises(SelectionError) as info:
        eval(expression, {"d": d}).apply(base)  # noqa: S307 - test table
    assert message in str(info.value)
    assert isinstance(info.value, IndexError | ZarrkitError)


@pytest.mark.parametrize("make", [lambda: d[1.5], lambda: d[None], lambda: d[...],
                                  lambda: d[0:2:0], lambda: d[0].translate_by[1][None],
                                  lambda: d[d[0].translate_by[1]]])
def test_malformed_expressions_are_refused_when_built(make):
    with pytest.raises(SelectionError):
        make()


def test_errors_through_a_view_leave_it_unchanged(tmp_path):
    _, a, _ = stored_pair(tmp_path)
    view = a.view
    with pytest.raises(SelectionError, match="labelled 'x'"):
        view[d["x"][0]]
    with pytest.raises(SelectionError, match="outside the domain"):
        a[d[0][-1]]  # below the explicit origin (the resizable upper bound is not checked)
    assert view.domain.to_json() == a.domain.to_json()


def test_repr_and_equality():
    expression = d[0, "x", 1:3][2, ..., [1, 2]].translate_by[5].diagonal
    assert repr(expression) == "d[0,'x',1:3][2, Ellipsis, [1, 2]].translate_by[5].diagonal"
    assert expression == d[0, "x", 1:3][2, ..., [1, 2]].translate_by[5].diagonal
    assert expression != d[0, "x", 1:3][2, ..., [1, 2]].translate_by[6].diagonal
    assert isinstance(expression, DimExpression) and zarrkit.d is d


# -- mark_bounds_implicit and resize: only implicit bounds change ------------------------------

RESIZES = [
    ("x[D[0].mark_bounds_implicit[False]]", {"exclusive_max": [8, None, None]}),
    ("x[D[0].mark_bounds_implicit[False]]", {"exclusive_max": [None, 8, None]}),
    ("x[0:4, 0:5, 0:6][D[0].mark_bounds_implicit[:True]]", {"exclusive_max": [8, None, None]}),
    ("x[0:4, 0:5, 0:6][D[0].mark_bounds_implicit[:True]]", {"exclusive_max": [None, 8, None]}),
    ("x[1:3, 0:5, 0:6][D[:].mark_bounds_implicit[True]]", {"exclusive_max": [6, 7, 8]}),
    ("x[D[1].mark_bounds_implicit[None:False]]", {"exclusive_max": [6, 7, 8]}),
    ("x[D[:].mark_bounds_implicit[True]]", {"inclusive_min": [0, 0, 0],
                                            "exclusive_max": [6, 7, 8]}),
    ("x[D[:].mark_bounds_implicit[True]]", {"inclusive_min": [1, 0, 0]}),
    ("x[D[0].translate_to[10]]", {"exclusive_max": [16, 7, None]}),
    ("x[D[0].stride[2]]", {"exclusive_max": [None, 7, None]}),
]


@pytest.mark.parametrize(("expression", "bounds"), RESIZES)
def test_resize_through_marked_bounds_like_tensorstore(tmp_path, expression, bounds):
    """Each library resizes its own copy through the same view: the same refusals, the same
    resolved view, the same stored arrays after."""
    t, _, tspec = stored_pair(tmp_path, "t")
    _, a, zspec = stored_pair(tmp_path, "z")
    try:
        tv = eval(expression, {"x": t, "D": ts.d})  # noqa: S307 - test table
        expected = tv.resize(**bounds).result().domain.to_json()
    except ValueError:
        expected = None
    zv = eval(expression, {"x": a.view, "D": d})  # noqa: S307 - test table
    if expected is None:
        with pytest.raises(SelectionError):
            zv.resize(**bounds)
    else:
        assert zv.resize(**bounds).domain.to_json() == expected
    tstored = ts.open(tspec).result().read().result()
    zstored = ts.open(zspec).result().read().result()
    assert zstored.shape == tstored.shape and (zstored == tstored).all()
    assert (zstored.shape == VIEW_SHAPE) == (expected is None)


def test_marking_a_bound_explicit_keeps_a_view_from_following_a_resize(tmp_path):
    """TensorStore's example: a view made before the array grows keeps its explicit bounds
    and follows the implicit ones."""
    t, _, _ = stored_pair(tmp_path, "t")
    _, a, _ = stored_pair(tmp_path, "z")
    tfixed = t[ts.d[0].mark_bounds_implicit[False]]
    fixed = a.view[d[0].mark_bounds_implicit[False]]
    t.resize(exclusive_max=[6, 7, 6]).result()
    a.resize(exclusive_max=[6, 7, 6])
    tfixed = tfixed.resolve().result()
    assert tfixed.domain.to_json() == {"inclusive_min": [0, 0, 0],
                                       "exclusive_max": [4, [7], [6]]}
    expected, actual = tfixed.read().result(), fixed.read().result()
    assert actual.shape == expected.shape == (4, 7, 6) and (actual == expected).all()

"""TensorStore parity of the view layer: index arrays kept over explicitly empty domains,
the diagonal's one-valued index arrays, the subscript operations `translate_backward_by[...]`
and `mark_bounds_implicit[...]` (and `origin`) on views and arrays, and `zarrkit.Dim`.

TensorStore 0.1.86 serves as the oracle, except where it is wrong: over a domain empty
between explicit bounds it turns index arrays into constants, which read the wrong elements
once `mark_bounds_implicit` lets the domain grow again. There a numpy model evaluating
zarrkit's transform is the reference.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import (
    SelectionError,
    SelectionTypeError,
    SelectionValueError,
    SpecError,
    ZarrkitError,
)
from zarrkit.spec.view import _resolve_bounds

ts = pytest.importorskip("tensorstore")

from _spec_helpers import VIEW_DATA, stored_pair  # noqa: E402
from test_fuzz_ts_views import _step, chain_of  # noqa: E402


def _pair(tmp_path: Any) -> tuple[Any, Any]:
    t, a, _ = stored_pair(tmp_path)
    return t, a.view


def _both(tmp_path: Any, expression: str) -> tuple[Any, Any]:
    t, z = _pair(tmp_path)
    tv = eval(expression, {"x": t, "d": ts.d, "np": np})  # noqa: S307
    zv = eval(expression, {"x": z, "d": zarrkit.d, "np": np})  # noqa: S307
    return tv, zv


def _model(view: Any, data: np.ndarray) -> np.ndarray | None:
    """What the view's transform maps, read from `data` by numpy (None: out of bounds, or
    an index array without values for some of the domain): its implicit bounds resolved
    against the array, then each output map evaluated."""
    transform = _resolve_bounds(view.transform, data.shape)
    json, shape = transform.to_json(), transform.domain.shape
    grid = np.indices(shape, dtype=np.int64) + np.reshape(
        transform.domain.inclusive_min, (-1,) + (1,) * len(shape))
    coords = []
    for m in json.get("output", [{"input_dimension": j} for j in range(len(shape))]):
        if "index_array" in m:
            try:
                # offset and stride apart from the array, as TensorStore writes them
                values = np.broadcast_to(m.get("offset", 0) + m.get("stride", 1) * np.array(
                    m["index_array"], np.int64), shape)
            except ValueError:
                return None
        elif "input_dimension" in m:
            values = m.get("offset", 0) + m.get("stride", 1) * grid[m["input_dimension"]]
        else:
            values = np.full(shape, m.get("offset", 0), np.int64)
        coords.append(values)
    if any(((c < 0) | (c >= n)).any() for c, n in zip(coords, data.shape, strict=True)):
        return None
    return data[tuple(coords)] if coords else data[()]


# -- 1. index arrays over a domain empty between explicit bounds --------------------------------

REGROWN = [
    # An index array composed (stride, diagonal of one dimension) over the empty domain.
    "x[d[1][0:0]].oindex[[0, 2]][d[0].stride[1]][d[1].mark_bounds_implicit[True]]",
    "x[d[1][0:0]].oindex[[0, 2]][d[0].diagonal][d[1].mark_bounds_implicit[True]]",
    "x[d[1][0:0]].oindex[[0, 2]][d[0].stride[1]][d[1].mark_bounds_implicit[None:True]]",
    "x[d[1][0:0]].oindex[[3, 1], :, [5, 0]][d[0].stride[1]][d[1].mark_bounds_implicit[True]]",
    "x[d[2][2:2]].vindex[[1, 0], [4, 2]][d[0].translate_by[3]][d[0].stride[1]]"
    "[d[1].mark_bounds_implicit[True]]",
]


@pytest.mark.parametrize("expression", REGROWN)
def test_index_arrays_composed_over_an_empty_domain_read_their_rows(tmp_path, expression):
    """Seed 2840's bug: composing over the empty domain made the arrays the constant 0, so
    the view read row 0 again where its transform maps rows 0 and 2."""
    tv, zv = _both(tmp_path, expression)
    assert zv.domain.to_json() == tv.domain.to_json()
    assert any("index_array" in m for m in zv.transform.to_json()["output"])
    expected = _model(zv, VIEW_DATA)
    actual = zv.read().result()
    assert actual.size and np.array_equal(actual, expected)
    assert not np.array_equal(tv.read().result(), expected)  # TensorStore's constants


def test_the_first_regrown_view_reads_the_rows_its_mask_chose(tmp_path):
    tv, zv = _both(tmp_path, REGROWN[0])
    assert np.array_equal(zv.read().result(), VIEW_DATA[[0, 2]])
    assert np.array_equal(tv.read().result(), VIEW_DATA[[0, 0]])


@pytest.mark.parametrize("expression", REGROWN)
def test_index_arrays_composed_over_an_empty_domain_write_their_rows(tmp_path, expression):
    t, a, spec = stored_pair(tmp_path)
    view = eval(expression, {"x": a.view, "d": zarrkit.d})  # noqa: S307
    ids = np.arange(VIEW_DATA.size, dtype=np.int32).reshape(VIEW_DATA.shape)
    targets = _model(view, ids)
    view.write(-1 - targets).result()
    expected = VIEW_DATA.copy()
    expected.reshape(-1)[targets.reshape(-1)] = -1 - targets.reshape(-1)
    assert np.array_equal(ts.open(spec).result().read().result(), expected)


def test_kept_index_arrays_survive_resize_and_reopening_from_a_spec(tmp_path):
    """`resize` and opening a spec's transform resolve bounds too (they made the arrays
    constants as well)."""
    t, a, spec = stored_pair(tmp_path)
    empty = a.view[zarrkit.d[1][0:0]].oindex[[0, 2]]
    reopened = zarrkit.open({**spec, "transform": empty.transform.to_json()})
    for view in (empty.resize(), reopened.view if hasattr(reopened, "view") else reopened):
        assert "index_array" in view.transform.to_json()["output"][0]
        grown = view[zarrkit.d[1].mark_bounds_implicit[True]]
        assert np.array_equal(grown.read().result(), VIEW_DATA[[0, 2]])


def test_opening_a_transform_with_an_index_array_over_an_empty_domain(tmp_path):
    """Moved from test_spec_transform_driver_dims: as TensorStore, whose spec() writes the
    array as the constant 0."""
    t, a, spec = stored_pair(tmp_path)
    transform = {"input_inclusive_min": [0, 0, 0], "input_exclusive_max": [2, 0, 6],
                 "output": [{"index_array": [[[0]], [[3]]]}, {"input_dimension": 1},
                            {"input_dimension": 2}]}
    tv = ts.open({**spec, "transform": transform}).result()
    zv = zarrkit.open({**spec, "transform": transform})
    assert zv.domain.to_json() == tv.domain.to_json()
    assert zv.read().result().shape == tv.read().result().shape == (2, 0, 6)
    assert tv.spec().transform.to_json()["output"][0] == {}
    assert zv.spec().to_json()["transform"]["output"][0] == {}


def test_an_array_kept_over_an_empty_dimension_stops_it_growing(tmp_path):
    """The diagonal of the index arrays' dimension and the empty one leaves them without
    values: marking that dimension implicit is allowed (as TensorStore, whose constants then
    read column 0 of row 0), but reading the grown view is refused."""
    tv, zv = _both(tmp_path, "x[d[1][0:0]].vindex[[1, 3], :, [0, 5]][d[0, 1].diagonal]"
                             "[d[0].mark_bounds_implicit[True]]")
    assert zv.domain.to_json() == tv.domain.to_json()
    assert np.array_equal(tv.read().result(), VIEW_DATA[0, :, 0])
    with pytest.raises(SelectionError, match=r"shape \[0\], which does not match"):
        zv.read().result()
    with pytest.raises(SelectionError, match=r"shape \[0\], which does not match"):
        zv.write(0).result()


def test_an_array_left_short_by_resolved_bounds_refuses_further_indexing(tmp_path):
    """`resize()` (and opening the view's spec) resolve the grown dimension into the
    transform: indexing it then is refused too (numpy's IndexError before), except where
    the result is empty again."""
    t, a, spec = stored_pair(tmp_path)
    view = a.view[zarrkit.d[1][0:0]].vindex[[1, 3], :, [0, 5]][zarrkit.d[0, 1].diagonal][
        zarrkit.d[0].mark_bounds_implicit[True]]
    # Its transform JSON (index arrays over implicit bounds) is refused, as by TensorStore;
    # spec() writes those arrays as constants (TensorStore's form), so the reopened view grows.
    with pytest.raises(zarrkit.SpecError, match="implicit"):
        zarrkit.open({**spec, "transform": view.transform.to_json()})
    assert zarrkit.open(view.spec().to_json()).domain.shape == (5,)
    grown = view.resize()
    assert grown.domain.shape == (5,)
    for selection in (slice(0, 2), [0, 1], 3):
        with pytest.raises(SelectionError, match="0 values along dimension 0, which now has 5"):
            grown[selection]
    assert grown[0:0].read().result().shape == (0,)


def test_seed_2840_marks_the_arrays_dimensions_implicit_but_cannot_read_them(tmp_path):
    """Over the empty domain TensorStore's constants let the arrays' dimensions become
    implicit, so zarrkit allows it too (though not over a non-empty domain, as TensorStore);
    the diagonal dimension then grows to 3 indices the array has no values for. TensorStore
    reads rows 1-3 of column 0 of row 0's plane; zarrkit refuses."""
    chain = ("x.vindex[2:2, [1, 2], [[0], [4]]][d[2, 0][1:1].diagonal]"
             "[d[-1, 0].mark_bounds_implicit[None:True]]")
    t, z = _pair(tmp_path)
    tv = eval(chain, {"x": t, "d": ts.d})  # noqa: S307
    zv = eval(chain, {"x": z, "d": zarrkit.d})  # noqa: S307
    assert zv.domain.to_json() == tv.domain.to_json()
    assert _model(zv, VIEW_DATA) is None
    assert np.array_equal(tv.read().result(), VIEW_DATA[1:4, 0, :1].repeat(2, 1))
    with pytest.raises(SelectionError, match=r"shape \[0, 1\], which does not match the "
                                             r"input domain's shape \[3, 2\] \(dimension 0\)"):
        zv.read().result()
    with pytest.raises(IndexError, match="indexes the index array"):  # ValueError directly
        t.vindex[:, [1, 2], [[0], [4]]][ts.d[1].mark_bounds_implicit[True]]
    with pytest.raises(SelectionValueError, match="dimension 1 is read by an index array"):
        z.vindex[:, [1, 2], [[0], [4]]][zarrkit.d[1].mark_bounds_implicit[True]]


@pytest.mark.parametrize("array", [[1, 2, 3], [1, 2, 3, 4], []])
def test_a_transforms_index_array_must_fit_its_domain(array):
    """Else a read would broadcast it wrongly (numpy's error, not zarrkit's)."""
    json = {"input_inclusive_min": [0], "input_exclusive_max": [2],
            "output": [{"index_array": array}]}
    with pytest.raises(ValueError):
        ts.IndexTransform(json=json)
    with pytest.raises(SpecError, match="does not match the input domain's shape"):
        zarrkit.IndexTransform.from_json(json)


@pytest.mark.parametrize("seed", [1112, 1529, 1750, 2278, 2840])
def test_the_seeds_where_tensorstore_reads_constants_read_what_zarrkit_maps(tmp_path, seed):
    """The module docstring of test_fuzz_ts_views: zarrkit reads (and writes) what its
    transform maps, or refuses with its own errors (the casts left out; the chain up to an
    operation zarrkit refuses, as TensorStore does 1750's last one)."""
    case, ops, spec = chain_of(seed, tmp_path / "a")
    view = zarrkit.open(spec).view
    for op in (op for op in ops if not op.startswith("cast(")):
        try:
            view = _step(view, op, "zk")
        except ZarrkitError:
            break
    expected = _model(view, case["values"])
    if expected is None:
        with pytest.raises(SelectionError):
            view.read().result()
        with pytest.raises(SelectionError):
            view.write(0).result()
        return
    assert np.array_equal(view.read().result(), expected)
    view.write(expected).result()  # the same values back: nothing else changes
    assert np.array_equal(ts.open(spec).result().read().result(), case["values"])


# -- 2. the diagonal keeps a one-valued index array (seed 1962) ---------------------------------

def _bare_1962() -> tuple[Any, Any]:
    """The seed's chain on the array's domain [0, 3*) x [0, 1*) up to the diagonal: an
    index array [[0], [-1]] whose values must be >= 0 (the explicit origin it indexed)."""
    json = {"input_inclusive_min": [0, 0], "input_exclusive_max": [[3], [1]]}
    out = []
    for x, d in ((ts.IndexTransform(json=json), ts.d),
                 (zarrkit.IndexTransform.from_json(json), zarrkit.d)):
        out.append(x[d[0].vindex[np.array([0, -1])]][d[1, -2].translate_to[1, 3]])
    return out[0], out[1]


@pytest.mark.parametrize("expression", [
    "x[d[0:2].translate_to[-1, 0].diagonal]",
    "x[d[0:2].translate_to[-1, 0]][d[0:2].diagonal]",
    "x[d[0:2].translate_to[-1, 0].diagonal][d[0].translate_by[1]]",
    "x[d[0:2].translate_to[-1, 0].diagonal].T",
    "x[d[0:2].translate_to[0, 0].diagonal]",
])
def test_diagonal_after_translate_to_on_a_bare_transform(expression):
    """The diagonal re-strides the index array without normalizing it: TensorStore keeps
    `[-1]` (an index outside its bounds, checked only where it is used), zarrkit refused."""
    t, z = _bare_1962()
    expected = eval(expression, {"x": t, "d": ts.d})  # noqa: S307
    actual = eval(expression, {"x": z, "d": zarrkit.d})  # noqa: S307
    assert actual.to_json() == expected.to_json()  # index_array_bounds too
    assert actual.domain.to_json() == expected.domain.to_json()


@pytest.mark.parametrize("expression", [
    "x[d[0:2].translate_to[-1, 0].diagonal].vindex[np.array([0])]",
    "x[d[0:2].translate_to[-1, 0].diagonal][0:1]",
    "x[d[0:2].translate_to[-1, 0].diagonal][d[0].mark_bounds_implicit[True]]",
])
def test_the_one_valued_array_is_checked_and_pins_its_dimension_as_in_tensorstore(expression):
    """Composing checks its value against its bounds (the seed's last step)."""
    t, z = _bare_1962()
    with pytest.raises(IndexError):
        eval(expression, {"x": t, "d": ts.d, "np": np})  # noqa: S307
    with pytest.raises(SelectionError):
        eval(expression, {"x": z, "d": zarrkit.d, "np": np})  # noqa: S307


def test_diagonal_of_a_one_valued_array_on_a_view_reads_as_tensorstore(tmp_path):
    tv, zv = _both(tmp_path, "x[d[0].vindex[[1, 3]]][d[0, 1].translate_to[-1, 0].diagonal]")
    assert zv.domain.to_json() == tv.domain.to_json()
    assert zv.transform.to_json()["output"][0] == {"index_array": [[3]]}
    assert tv.spec().transform.to_json()["output"][0] == {"offset": 3}  # spec() normalizes
    assert np.array_equal(zv.read().result(), tv.read().result())


# -- 3. TensorStore's indexing and domain attributes on views and arrays ------------------------

#: ts.TensorStore's attributes for indexing and the domain (the rest: I/O, spec, schema).
DOMAIN_ATTRIBUTES = ["T", "domain", "label", "mark_bounds_implicit", "ndim", "oindex", "origin",
                     "rank", "shape", "size", "translate_backward_by", "translate_by",
                     "translate_to", "transpose", "vindex"]


def test_views_and_arrays_have_tensorstores_domain_attributes(tmp_path):
    t, a, _ = stored_pair(tmp_path)
    for name in DOMAIN_ATTRIBUTES:
        assert name in dir(ts.TensorStore)
        assert hasattr(a.view, name) and hasattr(a, name), name
    for handle in (a, a.view):
        assert handle.origin == tuple(t.origin) == (0, 0, 0)
        assert handle.rank == handle.ndim == t.rank == t.ndim
        assert tuple(handle.shape) == tuple(t.shape) and handle.size == t.size


OPERATIONS = [
    "x.translate_backward_by[1]", "x.translate_backward_by[1, None, -2]",
    "x.translate_backward_by[[1, 2, 3]]", "x.translate_backward_by[np.array([0, 1, 2])]",
    "x.label['a', 'b', 'c'].translate_backward_by[2]",
    "x.translate_to[3, 4, 5].translate_backward_by[3]",
    "x.mark_bounds_implicit[True]", "x.mark_bounds_implicit[False]",
    "x.mark_bounds_implicit[None]", "x.mark_bounds_implicit[1]",
    "x.mark_bounds_implicit[True:None]", "x.mark_bounds_implicit[None:False]",
    "x.mark_bounds_implicit[True:False]",
    "x.translate_backward_by[1].mark_bounds_implicit[False]",
    "x.T.translate_backward_by[1, 2, 3].origin",
]


@pytest.mark.parametrize("expression", OPERATIONS)
@pytest.mark.parametrize("handle", ["array", "view"])
def test_subscript_operations_on_whole_handles_like_tensorstore(tmp_path, expression, handle):
    t, a, _ = stored_pair(tmp_path)
    z = a if handle == "array" else a.view
    tv = eval(expression, {"x": t, "np": np})  # noqa: S307
    zv = eval(expression, {"x": z, "np": np})  # noqa: S307
    if isinstance(tv, tuple):
        assert zv == tv
        return
    assert zv.domain.to_json() == tv.domain.to_json()
    assert np.array_equal(zv.read().result(), tv.read().result())


@pytest.mark.parametrize("expression", [
    "x[1:3].mark_bounds_implicit[True]", "x[1:3].mark_bounds_implicit[None:True]",
    "x[1:3, 2:4].mark_bounds_implicit[True:False]",
    "x[1:3].translate_backward_by[1].mark_bounds_implicit[False:None]",
    "x[1, 2].translate_backward_by[5]", "x[1, 2].mark_bounds_implicit[True]",
    "x[d[1][1:3]].mark_bounds_implicit[True]",
])
def test_subscript_operations_on_views_like_tensorstore(tmp_path, expression):
    """Implicit bounds resolve against the array when the view reads, as TensorStore's."""
    tv, zv = _both(tmp_path, expression)
    assert zv.domain.to_json() == tv.domain.to_json()
    assert np.array_equal(zv.read().result(), tv.read().result())


def test_writes_through_the_new_operations_like_tensorstore(tmp_path):
    t, a, spec = stored_pair(tmp_path, "t")
    _, b, spec_z = stored_pair(tmp_path, "z")
    value = -np.arange(3 * 6, dtype=np.int32).reshape(3, 6)
    t.translate_backward_by[1][-1:2, 2].write(value).result()
    b.translate_backward_by[1][-1:2, 2].write(value).result()
    t[1:3].mark_bounds_implicit[True][0:1].write(7).result()
    b.view[1:3].mark_bounds_implicit[True][0:1].write(7).result()
    assert np.array_equal(ts.open(spec_z).result().read().result(),
                          ts.open(spec).result().read().result())


@pytest.mark.parametrize(("expression", "builtin", "error"), [
    ("x.translate_backward_by[1, 2]", ValueError, SelectionValueError),
    ("x.translate_by[1, 2, 3, 4]", ValueError, SelectionValueError),
    ("x.translate_to[1, 2]", ValueError, SelectionValueError),
    ("x.translate_backward_by[2**62]", ValueError, SelectionValueError),
    ("x.translate_backward_by[1.5]", TypeError, SelectionTypeError),
    ("x.translate_backward_by['a']", TypeError, SelectionTypeError),
    ("x.mark_bounds_implicit['x']", TypeError, SelectionTypeError),
    ("x.mark_bounds_implicit[True:False:1]", TypeError, SelectionTypeError),
    ("x.label['a']", ValueError, SelectionValueError),
    ("x.label['a', 'a', 'b']", ValueError, SelectionValueError),
    ("x.label['a', 5, 'b']", TypeError, SelectionTypeError),
    ("x.label[5]", TypeError, SelectionTypeError),
    ("x[[0, 2]].mark_bounds_implicit[True]", ValueError, SelectionValueError),
])
@pytest.mark.parametrize("handle", ["array", "view"])
def test_refusals_raise_tensorstores_builtin_types(tmp_path, expression, builtin, error,
                                                   handle):
    t, a, _ = stored_pair(tmp_path)
    z = a if handle == "array" else a.view
    if handle == "array" and expression.startswith("x["):
        z = a.view  # an array's [] reads (numpy's meaning); its view is TensorStore's
    with pytest.raises(builtin):
        eval(expression, {"x": t})  # noqa: S307
    with pytest.raises(error):
        eval(expression, {"x": z})  # noqa: S307


def test_the_subscript_operations_are_not_calls(tmp_path):
    t, a, _ = stored_pair(tmp_path)
    with pytest.raises(TypeError):
        t.translate_backward_by(1)
    with pytest.raises(TypeError):
        a.view.translate_backward_by(1)


def test_a_whole_array_is_the_rank_zero_selection_of_d(tmp_path):
    """`store.op[args]` is `store[d[:].op[args]]`, also on a bare IndexDomain."""
    t, a, _ = stored_pair(tmp_path)
    for x, d in ((t, ts.d), (a.view, zarrkit.d)):
        assert x.translate_backward_by[1, 2, 3].domain == x[d[:].translate_backward_by[
            1, 2, 3]].domain
    domain = zarrkit.IndexDomain.make(inclusive_min=[1, 2], shape=[3, 4])
    assert domain.translate_backward_by[1].to_json() == ts.IndexDomain(
        inclusive_min=[1, 2], shape=[3, 4]).translate_backward_by[1].to_json()


# -- 4. zarrkit.Dim as ts.Dim -------------------------------------------------------------------

UNBOUNDED = [{}, {"inclusive_min": 3}, {"exclusive_max": 5}, {"inclusive_min": -2**62 + 1},
             {"label": "x"}, {"size": None, "inclusive_min": 2}]


@pytest.mark.parametrize("kwargs", UNBOUNDED)
def test_len_of_an_unbounded_dim_is_its_size(kwargs):
    expected = len(ts.Dim(**kwargs))
    assert len(zarrkit.Dim(**kwargs)) == expected == ts.Dim(**kwargs).size
    with pytest.raises(ValueError, match="infinite"):
        iter(ts.Dim(**kwargs))
    with pytest.raises(SelectionValueError, match="unbounded"):
        iter(zarrkit.Dim(**kwargs))


def test_len_of_the_whole_line_is_pythons_largest():
    assert len(zarrkit.Dim()) == len(ts.Dim()) == 2**63 - 1


@pytest.mark.parametrize("lib", [ts, zarrkit])
def test_dims_are_unhashable(lib):
    dim = lib.Dim(1, 4, label="x")
    with pytest.raises(TypeError, match="unhashable"):
        hash(dim)
    with pytest.raises(TypeError):
        {dim}  # noqa: B018
    assert lib.Dim.__hash__ is None


@pytest.mark.parametrize("other", [5, "x", None, (1, 4), [1, 4], 1.0, np.int64(3)])
def test_comparing_a_dim_with_anything_else_is_a_type_error(other):
    for op in ("__eq__", "__ne__"):
        with pytest.raises(TypeError):
            getattr(ts.Dim(1, 4), op)(other)
    with pytest.raises(SelectionTypeError, match="compares only with a Dim"):
        zarrkit.Dim(1, 4) == other  # noqa: B015
    with pytest.raises(SelectionTypeError, match="compares only with a Dim"):
        zarrkit.Dim(1, 4) != other  # noqa: B015


@pytest.mark.parametrize(("a", "b"), [
    ({"inclusive_min": 1, "exclusive_max": 4}, {"inclusive_min": 1, "exclusive_max": 4}),
    ({"inclusive_min": 1, "exclusive_max": 4}, {"size": 3, "inclusive_min": 1}),
    ({"inclusive_min": 1, "exclusive_max": 4}, {"inclusive_min": 1, "inclusive_max": 3}),
    ({"inclusive_min": 1, "exclusive_max": 4}, {"inclusive_min": 1, "exclusive_max": 4,
                                                "label": "x"}),
    ({"inclusive_min": 1, "exclusive_max": 4}, {"inclusive_min": 1, "exclusive_max": 4,
                                                "implicit_upper": True}),
    ({}, {"label": ""}), ({}, {"inclusive_min": 0}),
])
def test_dims_compare_with_dims_as_in_tensorstore(a, b):
    expected = (ts.Dim(**a) == ts.Dim(**b), ts.Dim(**a) != ts.Dim(**b))
    assert (zarrkit.Dim(**a) == zarrkit.Dim(**b), zarrkit.Dim(**a) != zarrkit.Dim(**b)) == \
        expected


@pytest.mark.parametrize("args", [(1, 4, "x"), (1, 4, None), (1, 4, "x", True),
                                  (1, 4, "x", True, False), (1, 4, 5), ("x", 1, 4)])
def test_dim_takes_at_most_two_positional_arguments(args):
    with pytest.raises(TypeError):
        ts.Dim(*args)
    with pytest.raises(SelectionTypeError, match="at most 2 positional"):
        zarrkit.Dim(*args)


@pytest.mark.parametrize(("args", "kwargs"), [
    ((1, 4), {"label": "x"}), ((4, "x"), {}), ((4,), {"label": "x"}), (("x",), {}),
    ((1, 4), {"label": "x", "implicit_lower": True, "implicit_upper": False}),
    ((None, 4), {}), ((1, None), {"label": "y"}),
])
def test_dim_builds_what_tensorstore_builds(args, kwargs):
    assert repr(zarrkit.Dim(*args, **kwargs)) == repr(ts.Dim(*args, **kwargs))


def test_a_domains_dims_hull_and_intersect_still(tmp_path):
    """The domain's `[j]` and the Dim operations no longer use the positional form."""
    t, a, _ = stored_pair(tmp_path)
    for x, lib in ((t, ts), (a.view, zarrkit)):
        x = x.label["a", "b", "c"].translate_to[1, 2, 3]
        dim = x.domain["b"]
        hull = dim.hull(lib.Dim(0, 3, label="b"))
        both = dim.intersect(lib.Dim(3, 10))
        if lib is ts:
            expected = [repr(dim), repr(hull), repr(both)]
        else:
            assert [repr(dim), repr(hull), repr(both)] == expected

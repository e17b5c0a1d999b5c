"""A spec's `transform` beside its own schema, and the transform's bounds, as in TensorStore.

- The JSON `schema` (and top-level dtype) describes the stored array's dimensions even when
  the spec has a transform; keyword constraints to open describe the view (the transform's
  input space) and are mapped through it. The opened object describes itself in the view's
  space either way.
- Implicit (or missing) transform bounds are resolved against the array when it is opened
  or created, as TensorStore's PropagateBoundsToTransform does; explicit bounds stay
  explicit, also when equal to the array's, and must lie within the array's fixed bounds.

Each case runs in both libraries ("file" kvstore in tmp_path) and compares the stored
document, the opened object's domain, chunk layout, units, schema and spec transform, and data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarrkit

ts = pytest.importorskip("tensorstore")

PERM = {"input_inclusive_min": [0, 0], "input_exclusive_max": [30, 40],
        "output": [{"input_dimension": 1}, {"input_dimension": 0}]}
SHIFT = {"input_inclusive_min": [10, 0], "input_exclusive_max": [50, 30],
         "output": [{"input_dimension": 0, "offset": -10}, {"input_dimension": 1}]}
NEWAXIS = {"input_inclusive_min": [0, 0, 0], "input_exclusive_max": [40, 1, 30],
           "output": [{"input_dimension": 0}, {"input_dimension": 2}]}
FLIP = {"input_inclusive_min": [-39, 0], "input_exclusive_max": [1, 30],
        "output": [{"input_dimension": 0, "stride": -1}, {"input_dimension": 1}]}
SHARD = {"driver": "zarr3", "codecs": [{"name": "sharding_indexed",
                                        "configuration": {"chunk_shape": [4, 2]}}]}


def _spec(path: Path, driver: str = "zarr3", **members: Any) -> dict[str, Any]:
    return {"driver": driver, "kvstore": {"driver": "file", "path": str(path)}, **members}


def _ts_keywords(keywords: dict[str, Any]) -> dict[str, Any]:
    out = dict(keywords)
    if "chunk_layout" in out:
        out["chunk_layout"] = ts.ChunkLayout(json=out["chunk_layout"])
    if "domain" in out:
        out["domain"] = ts.IndexDomain(json=out["domain"])
    if "schema" in out:
        out["schema"] = ts.Schema(out["schema"])
    return out


def _document(path: Path) -> Any:
    for name in ("zarr.json", ".zarray"):
        if (path / name).exists():
            return json.loads((path / name).read_text())
    return None


def _units(store: Any) -> list[Any]:
    return [None if u is None else [u.multiplier, u.base_unit] for u in store.dimension_units]


def _describe(store: Any, path: Path) -> dict[str, Any]:
    """What the opened object says of itself (in the view's space) and what was stored."""
    return {"domain": store.domain.to_json(), "chunk_layout": store.chunk_layout.to_json(),
            "dimension_units": _units(store), "schema": store.schema.to_json(),
            "transform": store.spec().to_json().get("transform"),
            "stored": _document(path), "data": _read(store)}


def _read(store: Any) -> Any:
    """The view's data, or "error" where reading it fails (past an explicit bound, ...)."""
    try:
        return np.asarray(store).tolist()
    except zarrkit.ZarrkitError:
        return "error"
    except ValueError:  # TensorStore's errors (zarrkit's are caught above)
        assert isinstance(store, ts.TensorStore)
        return "error"


def _outcome(lib: str, spec: dict[str, Any], keywords: dict[str, Any], path: Path) -> Any:
    try:
        if lib == "ts":
            store = ts.open(spec, **_ts_keywords(keywords)).result()
        else:
            store = zarrkit.open(spec, **keywords)
    except zarrkit.ZarrkitError as exc:
        return "error", type(exc).__name__
    except ValueError:  # TensorStore's errors (zarrkit's are caught above)
        assert lib == "ts"
        return "error", None
    return "ok", _describe(store, path)


def _check(tmp_path: Path, members: dict[str, Any], keywords: dict[str, Any],
           driver: str = "zarr3", before: Any = None) -> Any:
    """Both libraries open the spec alike (or both refuse, zarrkit with `ZarrkitError`)."""
    results = {}
    for lib in ("ts", "zk"):
        path = tmp_path / lib
        if before is not None:
            before(lib, path)
        results[lib] = _outcome(lib, _spec(path, driver, **members), keywords, path)
    expected, actual = results["ts"], results["zk"]
    assert actual[0] == expected[0], (expected, actual)
    if expected[0] == "ok":
        assert actual[1] == expected[1]
    return actual


def _existing(shape: list[int], driver: str = "zarr3", **keywords: Any) -> Any:
    """A `before` hook: the array each library opens, created by that library, with data."""
    def create(lib: str, path: Path) -> None:
        data = np.arange(np.prod(shape), dtype="int32").reshape(shape)
        spec = _spec(path, driver)
        if lib == "ts":
            store = ts.open(spec, create=True, dtype=ts.int32, shape=shape,
                            **_ts_keywords(keywords)).result()
            store.write(data).result()
        else:
            zarrkit.open(spec, create=True, dtype="int32", shape=shape, **keywords)[...] = data
    return create


# -- 1. the JSON schema describes the stored array -------------------------------------------

CREATE = {
    "metadata shape, schema chunk through a permutation": (
        PERM, {"metadata": {"shape": [40, 30]},
               "schema": {"chunk_layout": {"chunk": {"shape": [10, 20]}}}}, {}),
    "schema domain, chunk and units through a permutation": (
        PERM, {"schema": {"domain": {"shape": [40, 30]}, "dimension_units": ["1m", "2s"],
                          "chunk_layout": {"chunk": {"shape": [10, 20]}}}}, {}),
    "schema shape not matching the view's shape": (
        PERM, {"schema": {"domain": {"shape": [30, 40]}}}, {}),
    "schema domain and grid origin through a shift": (
        SHIFT, {"schema": {"domain": {"inclusive_min": [0, 0], "exclusive_max": [40, 30]},
                           "chunk_layout": {"grid_origin": [0, 0]}}}, {}),
    "schema domain given in the view's space": (
        SHIFT, {"schema": {"domain": {"inclusive_min": [10, 0], "exclusive_max": [50, 30]}}},
        {}),
    "schema chunk through a flip": (
        FLIP, {"schema": {"domain": {"shape": [40, 30]},
                          "chunk_layout": {"write_chunk": {"shape": [8, 6]},
                                           "grid_origin": [0, 0]}}}, {}),
    "schema rank and fill value": (
        PERM, {"schema": {"rank": 2, "fill_value": 5, "domain": {"shape": [40, 30]}}}, {}),
    "schema codec with a sharding chunk shape": (
        PERM, {"schema": {"domain": {"shape": [40, 30]}, "codec": SHARD}}, {}),
    "schema dtype": (PERM, {"schema": {"dtype": "int16", "domain": {"shape": [40, 30]}}}, {}),
    "schema labels, transform labels": (
        {**PERM, "input_labels": ["a", "b"]},
        {"schema": {"domain": {"shape": [40, 30], "labels": ["y", "x"]}}}, {}),
    "schema labels, unlabelled transform": (
        PERM, {"schema": {"domain": {"shape": [40, 30], "labels": ["y", "x"]}}}, {}),
    "schema of the array's rank under a new axis": (
        NEWAXIS, {"schema": {"rank": 2, "domain": {"shape": [40, 30]},
                             "chunk_layout": {"chunk": {"shape": [10, 20]}}}}, {}),
    "schema of the view's rank under a new axis": (NEWAXIS, {"schema": {"rank": 3}}, {}),
    "top-level rank is the view's": (
        NEWAXIS, {"rank": 3, "schema": {"domain": {"shape": [40, 30]}}}, {}),
    "top-level rank of the array's rank": (
        NEWAXIS, {"rank": 2, "schema": {"domain": {"shape": [40, 30]}}}, {}),
    "keywords describe the view": (
        PERM, {}, {"shape": [30, 40], "chunk_layout": {"chunk": {"shape": [10, 20]}},
                   "dimension_units": ["1m", "2s"]}),
    "keyword rank is the view's": (
        NEWAXIS, {"schema": {"domain": {"shape": [40, 30]}}}, {"rank": 3}),
    "keyword rank of the array's rank": (
        NEWAXIS, {"schema": {"domain": {"shape": [40, 30]}}}, {"rank": 2}),
    "keyword and schema chunks merge on the array's dimensions": (
        PERM, {"schema": {"chunk_layout": {"chunk": {"shape": [10, None]}}}},
        {"shape": [30, 40], "chunk_layout": {"chunk": {"shape": [None, 10]}}}),
    "keyword and schema chunks conflict on the array's dimensions": (
        PERM, {"schema": {"chunk_layout": {"chunk": {"shape": [10, None]}}}},
        {"shape": [30, 40], "chunk_layout": {"chunk": {"shape": [None, 20]}}}),
}


@pytest.mark.parametrize("name", list(CREATE))
def test_create_reads_the_schema_in_the_arrays_dimensions(tmp_path: Path, name: str) -> None:
    transform, members, keywords = CREATE[name]
    _check(tmp_path, {"dtype": "int32", "transform": transform, **members},
           {"create": True, **keywords})


ZARR2_CREATE = {
    "schema domain and chunk": {"schema": {"domain": {"shape": [40, 30]},
                                           "chunk_layout": {"chunk": {"shape": [10, 20]}}}},
    "metadata": {"metadata": {"shape": [40, 30], "chunks": [10, 20]}},
    "labels": {"schema": {"domain": {"shape": [40, 30], "labels": ["y", "x"]}}},
    "units": {"schema": {"domain": {"shape": [40, 30]}, "dimension_units": ["1m", "2s"]}},
}


@pytest.mark.parametrize("name", list(ZARR2_CREATE))
def test_zarr2_create_reads_the_schema_in_the_arrays_dimensions(tmp_path: Path,
                                                                 name: str) -> None:
    _check(tmp_path, {"dtype": "int32", "transform": PERM, **ZARR2_CREATE[name]},
           {"create": True}, driver="zarr")


OPEN = [
    ({"domain": {"shape": [40, 30]}}, {}), ({"domain": {"shape": [30, 40]}}, {}),
    ({"chunk_layout": {"chunk": {"shape": [10, 20]}}}, {}),
    ({"chunk_layout": {"chunk": {"shape": [20, 10]}}}, {}),
    ({"dimension_units": ["1m", "2s"]}, {}), ({"dimension_units": ["2s", "1m"]}, {}),
    ({"rank": 2, "fill_value": 0}, {}), ({"fill_value": 1}, {}),
    ({}, {"shape": [30, 40]}), ({}, {"shape": [40, 30]}),
    ({}, {"chunk_layout": {"chunk": {"shape": [20, 10]}}}),
    ({}, {"chunk_layout": {"chunk": {"shape": [10, 20]}}}),
    ({}, {"dimension_units": ["2s", "1m"]}), ({}, {"dimension_units": ["1m", "2s"]}),
]


@pytest.mark.parametrize(("schema", "keywords"), OPEN, ids=[json.dumps(c) for c in OPEN])
def test_open_checks_the_schema_in_the_arrays_dimensions(tmp_path: Path, schema: Any,
                                                         keywords: Any) -> None:
    """A [40, 30] array with [10, 20] chunks and units ["1m", "2s"], opened transposed."""
    before = _existing([40, 30], chunk_layout={"chunk": {"shape": [10, 20]}},
                       dimension_units=["1m", "2s"])
    members = {"transform": {"input_rank": 2, "output": PERM["output"]}}
    _check(tmp_path, {**members, "schema": schema} if schema else members, keywords,
           before=before)


@pytest.mark.parametrize(("schema", "keywords"), OPEN[:4] + OPEN[8:12],
                         ids=[json.dumps(c) for c in OPEN[:4] + OPEN[8:12]])
def test_zarr2_open_checks_the_schema_in_the_arrays_dimensions(tmp_path: Path, schema: Any,
                                                               keywords: Any) -> None:
    before = _existing([40, 30], "zarr", chunk_layout={"chunk": {"shape": [10, 20]}})
    members = {"transform": {"input_rank": 2, "output": PERM["output"]}}
    _check(tmp_path, {**members, "schema": schema} if schema else members, keywords,
           driver="zarr", before=before)


def test_schema_rank_not_the_transforms_output_rank_is_refused(tmp_path: Path) -> None:
    with pytest.raises(zarrkit.SpecError, match="output rank 2"):
        zarrkit.open(_spec(tmp_path, dtype="int32", transform=NEWAXIS,
                           schema={"dimension_units": ["1m", None, "2s"]}), create=True)


# -- 2. unbounded and partly implicit transforms are resolved against the array --------------

TRANSFORMS = {
    "rank only": {"input_rank": 2},
    "labels only": {"input_labels": ["x", "y"]},
    "lower bounds only": {"input_inclusive_min": [1, 0]},
    "implicit lower bounds": {"input_inclusive_min": [[1], [0]]},
    "upper bounds only": {"input_exclusive_max": [3, 5]},
    "one implicit upper bound": {"input_exclusive_max": [3, [5]]},
    "one infinite upper bound": {"input_exclusive_max": [3, "+inf"]},
    "one implicit infinite upper bound": {"input_inclusive_min": [0, 0],
                                          "input_exclusive_max": [3, ["+inf"]]},
    "implicit -inf lower bound": {"input_labels": ["x", "y"],
                                  "input_inclusive_min": [["-inf"], 0]},
    "permutation": {"input_rank": 2, "output": [{"input_dimension": 1},
                                                {"input_dimension": 0}]},
    "shift": {"input_rank": 2, "output": [{"input_dimension": 0, "offset": -10},
                                          {"input_dimension": 1}]},
    "stride 2": {"input_rank": 2, "output": [{"input_dimension": 0, "stride": 2},
                                             {"input_dimension": 1}]},
    "stride 3 offset 1": {"input_rank": 2, "output": [
        {"input_dimension": 0, "stride": 3, "offset": 1}, {"input_dimension": 1}]},
    "stride -1": {"input_rank": 2, "output": [{"input_dimension": 0, "stride": -1},
                                              {"input_dimension": 1}]},
    "stride -2 offset 3": {"input_rank": 2, "output": [
        {"input_dimension": 0, "stride": -2, "offset": 3}, {"input_dimension": 1}]},
    "new axis": {"input_rank": 3, "output": [{"input_dimension": 0}, {"input_dimension": 2}]},
    "new axis with implicit bounds": {
        "input_inclusive_min": [0, [3], 0], "input_exclusive_max": [[4], [7], [5]],
        "output": [{"input_dimension": 0}, {"input_dimension": 2}]},
    "constant": {"input_rank": 1, "output": [{"offset": 2}, {"input_dimension": 0}]},
    "constant past the implicit upper bound": {"input_rank": 1, "output": [
        {"offset": 9}, {"input_dimension": 0}]},
    "constant below the lower bound": {"input_rank": 1, "output": [
        {"offset": -1}, {"input_dimension": 0}]},
    "diagonal": {"input_rank": 1, "output": [{"input_dimension": 0}, {"input_dimension": 0}]},
    "diagonal and anti-diagonal": {"input_rank": 1, "output": [
        {"input_dimension": 0}, {"input_dimension": 0, "stride": -1, "offset": 4}]},
    "diagonal and shorter anti-diagonal": {"input_rank": 1, "output": [
        {"input_dimension": 0}, {"input_dimension": 0, "stride": -1, "offset": 2}]},
    "index array": {"input_inclusive_min": [0, 0], "input_exclusive_max": [2, [5]],
                    "output": [{"index_array": [[0], [3]]}, {"input_dimension": 1}]},
    # An index array over an empty domain: tests/test_hunt_view_ops.py (zarrkit keeps it).
    "implicit bounds past the array's": {"input_inclusive_min": [0, 0],
                                         "input_exclusive_max": [[6], [5]]},
    "implicit bounds within the array's": {"input_inclusive_min": [0, 0],
                                           "input_exclusive_max": [[2], [5]]},
    "implicit lower bound below the array's": {"input_inclusive_min": [[-1], 0],
                                               "input_exclusive_max": [4, 5]},
    "explicit bounds past the implicit upper bound": {"input_inclusive_min": [0, 0],
                                                      "input_exclusive_max": [6, 5]},
    "explicit lower bound below the array's": {"input_inclusive_min": [-1, 0],
                                               "input_exclusive_max": [4, 5]},
    "explicit lower bound below the array's, empty": {"input_inclusive_min": [-1, 0],
                                                      "input_exclusive_max": [4, 0]},
    "output rank not the array's": {"input_rank": 3},
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_open_resolves_the_transform_against_the_array(tmp_path: Path, name: str) -> None:
    _check(tmp_path, {"transform": TRANSFORMS[name]}, {}, before=_existing([4, 5]))


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_create_resolves_the_transform_against_the_new_array(tmp_path: Path,
                                                             name: str) -> None:
    """Keyword shapes describe the view, so only some transforms can create [4, 5]."""
    _check(tmp_path, {"dtype": "int32", "transform": TRANSFORMS[name]},
           {"create": True, "shape": [4, 5]})


@pytest.mark.parametrize(("name", "members"), [
    ("metadata shape", {"metadata": {"shape": [4, 5]}}),
    ("schema shape", {"schema": {"domain": {"shape": [4, 5]}}}),
    ("neither", {}),
])
def test_create_resolves_an_unbounded_transform(tmp_path: Path, name: str,
                                                members: dict[str, Any]) -> None:
    transform = {"input_labels": ["x", "y"], "output": [{"input_dimension": 1},
                                                        {"input_dimension": 0}]}
    _check(tmp_path, {"dtype": "int32", "transform": transform, **members}, {"create": True})


@pytest.mark.parametrize("driver", ["zarr3", "zarr"])
@pytest.mark.parametrize("name", ["rank only", "labels only", "permutation", "stride -1",
                                  "explicit bounds past the implicit upper bound"])
def test_zarr2_and_zarr3_resolve_alike(tmp_path: Path, name: str, driver: str) -> None:
    _check(tmp_path, {"transform": TRANSFORMS[name]}, {}, driver=driver,
           before=_existing([4, 5], driver))


@pytest.mark.parametrize("name", ["labels only", "permutation", "stride -2 offset 3",
                                  "new axis", "diagonal and shorter anti-diagonal"])
def test_writes_through_a_resolved_transform(tmp_path: Path, name: str) -> None:
    """Writing the view's whole (resolved) domain stores the same array as TensorStore."""
    stored = {}
    for lib in ("ts", "zk"):
        path = tmp_path / lib
        _existing([4, 5])(lib, path)
        spec = _spec(path, transform=TRANSFORMS[name])
        view = ts.open(spec).result() if lib == "ts" else zarrkit.open(spec)
        shape = tuple(n if n < 2**40 else 1 for n in view.domain.shape)
        if name == "new axis":  # an unbounded new axis: write one index of it
            view = view[:, 0:1, :]
        view[...] = -np.arange(np.prod(shape), dtype="int32").reshape(shape)
        plain = _spec(path)
        stored[lib] = np.asarray(ts.open(plain).result() if lib == "ts"
                                 else zarrkit.open(plain)).tolist()
    assert stored["zk"] == stored["ts"]


def test_implicit_bounds_follow_a_resize(tmp_path: Path) -> None:
    """After a resize the resolved implicit upper bounds still follow the array at I/O."""
    _existing([4, 5])("zk", tmp_path)
    view = zarrkit.open(_spec(tmp_path, transform={"input_labels": ["x", "y"]}))
    assert view.domain.to_json() == {"inclusive_min": [0, 0], "exclusive_max": [[4], [5]],
                                     "labels": ["x", "y"]}
    view.base.resize((6, 5))
    assert np.asarray(view).shape == (6, 5)


def test_explicit_bound_below_the_array_is_refused(tmp_path: Path) -> None:
    _existing([4, 5])("zk", tmp_path)
    transform = {"input_inclusive_min": [-1, 0], "input_exclusive_max": [4, 5]}
    with pytest.raises(zarrkit.SelectionError, match=r"input dimension 0 bounds \[-1, 4\)"):
        zarrkit.open(_spec(tmp_path, transform=transform))


# -- 3. explicit bounds equal to the array's stay explicit -----------------------------------

EXPLICIT = {
    "explicit box": {"input_inclusive_min": [0, 0], "input_exclusive_max": [4, 5]},
    "explicit shape": {"input_shape": [4, 5]},
    "explicit box, labelled": {"input_inclusive_min": [0, 0], "input_exclusive_max": [4, 5],
                               "input_labels": ["x", "y"]},
    "one explicit upper bound": {"input_inclusive_min": [0, 0],
                                 "input_exclusive_max": [4, [5]]},
    "implicit box": {"input_inclusive_min": [0, 0], "input_exclusive_max": [[4], [5]]},
}


@pytest.mark.parametrize("driver", ["zarr3", "zarr"])
@pytest.mark.parametrize("name", list(EXPLICIT))
def test_explicit_bounds_equal_to_the_arrays_stay_explicit(tmp_path: Path, name: str,
                                                           driver: str) -> None:
    _check(tmp_path, {"transform": EXPLICIT[name]}, {}, driver=driver,
           before=_existing([4, 5], driver))


@pytest.mark.parametrize("name", list(EXPLICIT))
def test_created_with_explicit_bounds_equal_to_the_arrays(tmp_path: Path, name: str) -> None:
    _check(tmp_path, {"dtype": "int32", "transform": EXPLICIT[name]},
           {"create": True, "shape": [4, 5]})


def test_explicit_bounds_survive_a_spec_round_trip(tmp_path: Path) -> None:
    """The view's spec reopens the same explicit domain, in zarrkit and in TensorStore."""
    _existing([4, 5])("zk", tmp_path)
    view = zarrkit.open(_spec(tmp_path, transform=EXPLICIT["explicit box"]))
    spec = view.spec().to_json()
    assert spec["transform"] == {"input_inclusive_min": [0, 0], "input_exclusive_max": [4, 5]}
    assert zarrkit.open(spec).domain.to_json() == view.domain.to_json()
    assert ts.open(spec).result().domain.to_json() == view.domain.to_json()

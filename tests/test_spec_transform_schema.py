"""A spec's `transform` with domain constraints (`shape`, `domain`, `schema.domain`): as in
TensorStore, the constraint describes the transform's input space and is mapped through the
transform onto the array's domain before it is checked (or used to create the array)."""

from __future__ import annotations

import itertools
import json

import pytest
import tensorstore as ts

import zarrkit

TRANSFORMS = {
    "sub-box": {"input_inclusive_min": [1, 0], "input_exclusive_max": [3, 5]},
    "labelled": {"input_inclusive_min": [0, 0], "input_exclusive_max": [[4], [5]],
                 "input_labels": ["x", "y"]},
    "translate": {"input_inclusive_min": [10, 0], "input_exclusive_max": [14, 5],
                  "output": [{"input_dimension": 0, "offset": -10}, {"input_dimension": 1}]},
    "transpose": {"input_inclusive_min": [0, 0], "input_exclusive_max": [5, 4],
                  "output": [{"input_dimension": 1}, {"input_dimension": 0}]},
    "stride 2": {"input_inclusive_min": [0, 0], "input_exclusive_max": [2, 5],
                 "output": [{"input_dimension": 0, "stride": 2}, {"input_dimension": 1}]},
    "flip": {"input_inclusive_min": [-3, 0], "input_exclusive_max": [1, 5],
             "output": [{"input_dimension": 0, "stride": -1}, {"input_dimension": 1}]},
    "index array": {"input_inclusive_min": [0, 0], "input_exclusive_max": [2, 5],
                    "output": [{"index_array": [[0], [3]]}, {"input_dimension": 1}]},
    "constant": {"input_inclusive_min": [10], "input_exclusive_max": [12],
                 "output": [{"offset": 2}, {"input_dimension": 0, "offset": -10}]},
    "implicit": {"input_inclusive_min": [[0], [0]], "input_exclusive_max": [[4], [5]]},
}

CONSTRAINTS = [
    {"shape": [4, 5]}, {"shape": [5, 4]}, {"shape": [2, 5]}, {"shape": [2]},
    {"domain": {"inclusive_min": [10, 0], "exclusive_max": [14, 5]}},
    {"domain": {"inclusive_min": [-3, 0], "exclusive_max": [1, 5]}},
    {"domain": {"inclusive_min": [1, 0], "exclusive_max": [3, 5]}},
    {"domain": {"inclusive_min": [0, 0], "exclusive_max": [2, 5]}},
    {"domain": {"labels": ["a", "b"]}},
    {"domain": {"labels": ["x", ""], "shape": [4, 5]}},
    {"schema": {"domain": {"shape": [4, 5]}}},
]


def _ts_keywords(constraint):
    if "shape" in constraint:
        return constraint
    if "domain" in constraint:
        return {"domain": ts.IndexDomain(json=constraint["domain"])}
    return {"schema": ts.Schema(constraint["schema"])}


def _outcome(open_, spec, keywords, errors):
    try:
        return "ok", open_(spec, **keywords).domain.to_json()
    except errors as exc:
        return "error", type(exc).__name__


def _plain(spec):
    return {k: v for k, v in spec.items() if k != "transform"}


def _ts_open(spec, **keywords):
    return ts.open(spec, **keywords).result()


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("transform-schema")
    ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(root / "ts")}},
            create=True, dtype=ts.int32, shape=[4, 5]).result()
    zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(root / "zk")}},
                 create=True, dtype="int32", shape=[4, 5])
    return root


@pytest.mark.parametrize(("name", "constraint"),
                         list(itertools.product(TRANSFORMS, CONSTRAINTS)))
def test_open_checks_constraints_through_the_transform(stores, name, constraint):
    def spec(which):
        return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(stores / which)},
                "transform": TRANSFORMS[name]}

    expected = _outcome(_ts_open, spec("ts"), _ts_keywords(constraint), ValueError)
    actual = _outcome(zarrkit.open, spec("zk"), constraint, zarrkit.ZarrkitError)
    assert actual[0] == expected[0], (expected, actual)
    if expected[0] == "ok":
        assert actual[1] == expected[1]


CREATE = [
    ("translate", {"domain": {"inclusive_min": [10, 0], "exclusive_max": [14, 5]}}),
    ("transpose", {"shape": [5, 4]}),
    ("flip", {"domain": {"inclusive_min": [-3, 0], "exclusive_max": [1, 5]}}),
    ("flip", {"shape": [4, 5]}),
    ("sub-box", {"shape": [4, 5]}),
    ("labelled", {"domain": {"labels": ["x", "y"], "shape": [4, 5]}}),
    ("stride 2", {"shape": [2, 5]}),
    ("constant", {"shape": [2]}),
]


@pytest.mark.parametrize(("name", "constraint"), CREATE)
def test_create_through_the_transform(tmp_path, name, constraint):
    def spec(which):
        return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / which)},
                "transform": TRANSFORMS[name]}

    expected = _outcome(_ts_open, spec("ts"), {**_ts_keywords(constraint), "create": True,
                                               "dtype": ts.int32}, ValueError)
    actual = _outcome(zarrkit.open, spec("zk"), {**constraint, "create": True,
                                                 "dtype": "int32"}, zarrkit.ZarrkitError)
    assert actual[0] == expected[0], (expected, actual)
    if expected[0] == "ok":
        assert actual[1] == expected[1]
        stored = ts.open(_plain(spec("ts"))).result()
        created = zarrkit.open(_plain(spec("zk")))
        assert created.domain.to_json() == stored.domain.to_json()


# -- chunk layout, dimension units and codec through the transform ---------------------------

# Finite, unit-stride transforms of a [40, 30] array (so the domain, too, maps and the array
# can be created through them), given with their input domain.
LAYOUT_TRANSFORMS = {
    "transpose": {"input_inclusive_min": [0, 0], "input_exclusive_max": [30, 40],
                  "output": [{"input_dimension": 1}, {"input_dimension": 0}]},
    "newaxis": {"input_inclusive_min": [0, 0, 0], "input_exclusive_max": [40, 1, 30],
                "output": [{"input_dimension": 0}, {"input_dimension": 2}]},
    "flip+translate": {"input_inclusive_min": [-39, 10], "input_exclusive_max": [1, 40],
                       "output": [{"input_dimension": 0, "stride": -1},
                                  {"input_dimension": 1, "offset": -10}]},
    "3-d permute": {"input_inclusive_min": [0, -19, 0], "input_exclusive_max": [30, 1, 40],
                    "output": [{"input_dimension": 2}, {"input_dimension": 1, "stride": -1},
                               {"input_dimension": 0}]},
}

LAYOUT_CONSTRAINTS = [
    {"dimension_units": ["2m", "3s", None]}, {"dimension_units": ["2m", None, "4ft"]},
    {"chunk_layout": {"write_chunk": {"shape": [8, 4, 2]}}},
    {"chunk_layout": {"write_chunk": {"shape": [8, None, 6]}, "read_chunk": {"shape": [4, None,
                                                                                     3]}}},
    {"chunk_layout": {"write_chunk": {"shape_soft_constraint": [8, 5, 6]}}},
    {"chunk_layout": {"inner_order": [2, 0, 1]}},
    {"chunk_layout": {"inner_order_soft_constraint": [0, 1, 2]}},
    {"chunk_layout": {"grid_origin": [0, 0, 0]}},
    {"chunk_layout": {"grid_origin": [1, None, 10]}},
    {"chunk_layout": {"read_chunk": {"aspect_ratio": [1, None, 3], "elements": 60},
                      "write_chunk": {"shape": [10, None, 30]}}},
    {"codec": {"driver": "zarr3", "codecs": [{"name": "sharding_indexed",
                                              "configuration": {"chunk_shape": [4, 2]}}]}},
]


def _fit(value, rank, key=""):
    """A constraint's per-dimension lists cut to `rank` (the transform's input rank)."""
    if isinstance(value, dict):
        return value if key == "codec" else {k: _fit(v, rank, k) for k, v in value.items()}
    if key.startswith("inner_order"):
        return [v for v in value if v < rank]
    return value[:rank] if isinstance(value, list) else value


def _ts_schema_keywords(constraint):
    out = dict(constraint)
    if "chunk_layout" in out:
        out["chunk_layout"] = ts.ChunkLayout(json=out["chunk_layout"])
    if "codec" in out:
        out["codec"] = ts.CodecSpec(out["codec"])
    return out


def _stored(path):
    return json.loads((path / "zarr.json").read_text())


@pytest.mark.parametrize(("name", "constraint"),
                         list(itertools.product(LAYOUT_TRANSFORMS, LAYOUT_CONSTRAINTS)))
def test_create_maps_layout_units_and_codec_through_the_transform(tmp_path, name,
                                                                   constraint):
    """Created through the transform: the same zarr.json as TensorStore's, or both refuse."""
    transform = LAYOUT_TRANSFORMS[name]
    rank = len(transform["input_inclusive_min"])
    constraint = _fit(constraint, rank)
    domain = {"inclusive_min": transform["input_inclusive_min"],
              "exclusive_max": transform["input_exclusive_max"]}

    def spec(which):
        return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / which)},
                "transform": transform}

    expected = _outcome(_ts_open, spec("ts"), {**_ts_schema_keywords(constraint), "create": True,
                                               "dtype": ts.int32,
                                               "domain": ts.IndexDomain(json=domain)},
                        ValueError)
    actual = _outcome(zarrkit.open, spec("zk"), {**constraint, "create": True, "dtype": "int32",
                                                 "domain": domain}, zarrkit.ZarrkitError)
    assert actual[0] == expected[0], (expected, actual)
    if expected[0] == "ok":
        assert _stored(tmp_path / "zk") == _stored(tmp_path / "ts")


OPEN_TRANSFORMS = {
    **{k: LAYOUT_TRANSFORMS[k] for k in ("transpose", "newaxis")},
    "diagonal": {"input_inclusive_min": [0], "input_exclusive_max": [30],
                 "output": [{"input_dimension": 0}, {"input_dimension": 0}]},
    "stride 2": {"input_inclusive_min": [0, 0], "input_exclusive_max": [20, 30],
                 "output": [{"input_dimension": 0, "stride": 2}, {"input_dimension": 1}]},
    "stride -2": {"input_inclusive_min": [-19, 0], "input_exclusive_max": [1, 30],
                  "output": [{"input_dimension": 0, "stride": -2}, {"input_dimension": 1}]},
    "constant": {"input_inclusive_min": [0], "input_exclusive_max": [30],
                 "output": [{"offset": 3}, {"input_dimension": 0}]},
    "index array": {"input_inclusive_min": [0, 0], "input_exclusive_max": [2, 30],
                    "output": [{"index_array": [[0], [3]]}, {"input_dimension": 1}]},
}

OPEN_CONSTRAINTS = [
    {"dimension_units": ["2m", "2s", None]}, {"dimension_units": ["1m", "2s", None]},
    {"dimension_units": ["2s", None, None]}, {"dimension_units": [None, "2s", None]},
    {"chunk_layout": {"write_chunk": {"shape": [4, 6, 6]}}},
    {"chunk_layout": {"write_chunk": {"shape": [8, 6, 6]}}},
    {"chunk_layout": {"write_chunk": {"shape": [6, None, None]}}},
    {"chunk_layout": {"read_chunk": {"shape": [3, 4, None]}}},
    {"chunk_layout": {"inner_order": [1, 0, 2]}}, {"chunk_layout": {"inner_order": [0, 1, 2]}},
    {"chunk_layout": {"grid_origin": [0, 0, 0]}}, {"chunk_layout": {"grid_origin": [1, 0, 0]}},
    {"chunk_layout": {"grid_origin": [None, 0, None]}},
]


@pytest.fixture(scope="module")
def layout_stores(tmp_path_factory):
    """A [40, 30] array with units, write/read chunks and a Fortran inner order, by each."""
    root = tmp_path_factory.mktemp("transform-layout")
    layout = {"write_chunk": {"shape": [8, 6]}, "read_chunk": {"shape": [4, 3]},
              "inner_order": [1, 0]}
    keywords = {"create": True, "shape": [40, 30], "dimension_units": ["1m", "2s"]}
    ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(root / "ts")}},
            dtype=ts.int32, chunk_layout=ts.ChunkLayout(json=layout), **keywords).result()
    zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(root / "zk")}},
                 dtype="int32", chunk_layout=layout, **keywords)
    assert _stored(root / "zk") == _stored(root / "ts")
    return root


@pytest.mark.parametrize(("name", "constraint"),
                         list(itertools.product(OPEN_TRANSFORMS, OPEN_CONSTRAINTS)))
def test_open_checks_layout_and_units_through_the_transform(layout_stores, name, constraint):
    """Strides scale chunk shapes and units, constant and index array outputs are free, an
    input dimension no output reads takes no hard constraint: opened or refused alike."""
    transform = OPEN_TRANSFORMS[name]
    constraint = _fit(constraint, len(transform["input_inclusive_min"]))

    def spec(which):
        return {"driver": "zarr3", "transform": transform,
                "kvstore": {"driver": "file", "path": str(layout_stores / which)}}

    expected = _outcome(_ts_open, spec("ts"), _ts_schema_keywords(constraint), ValueError)
    actual = _outcome(zarrkit.open, spec("zk"), constraint, zarrkit.ZarrkitError)
    assert actual[0] == expected[0], (expected, actual)

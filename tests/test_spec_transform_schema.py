"""A spec's `transform` with domain constraints (`shape`, `domain`, `schema.domain`): as in
TensorStore, the constraint describes the transform's input space and is mapped through the
transform onto the array's domain before it is checked (or used to create the array)."""

from __future__ import annotations

import itertools

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

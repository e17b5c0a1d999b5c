"""Creating zarr3 arrays from specs: the metadata and chunk layout zarrkit chooses must be
exactly TensorStore's (compared with TensorStore itself), including the driver document's
worked examples, codec defaults, sharding and transpose insertion."""

from __future__ import annotations

import json
import os

import pytest
from _spec_helpers import same_outcome, ts_create, zk_create
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrkit

T10 = {"name": "transpose", "configuration": {"order": [1, 0]}}
T01 = {"name": "transpose", "configuration": {"order": [0, 1]}}
RW = {"read_chunk_shape": [5, 5], "write_chunk_shape": [10, 10]}
BLOSC = {"driver": "zarr3", "codecs": ["blosc"]}

CASES = [
    ({"codecs": ["blosc"]}, {"chunk_layout": {"read_chunk_shape": [5, 5]}}),
    ({"codecs": []}, {"chunk_layout": RW}),
    ({}, {"chunk_layout": RW}),
    ({}, {"chunk_layout": {**RW, "inner_order": [1, 0]}}),
    ({}, {"chunk_layout": {"inner_order": [1, 0]}}),
    ({}, {"chunk_layout": {"inner_order": [0, 1]}}),
    ({}, {"chunk_layout": {"inner_order_soft_constraint": [1, 0]}}),
    ({"codecs": ["blosc"]}, {"chunk_layout": {"inner_order": [1, 0]}}),
    ({"codecs": ["crc32c"]}, {"chunk_layout": {"inner_order_soft_constraint": [1, 0]}}),
    ({"codecs": [{"name": "transpose", "configuration": {"order": "F"}}]}, {}),
    ({"codecs": [{"name": "transpose", "configuration": {"order": "C"}}]}, {}),
    ({"codecs": [T10, "blosc"]}, {}),
    ({"codecs": [T10]}, {"chunk_layout": {"inner_order": [1, 0]}}),
    ({"codecs": [T10]}, {"chunk_layout": {"inner_order": [0, 1]}}),
    ({"codecs": [T01]}, {"chunk_layout": {"inner_order": [0, 1]}}),
    ({"codecs": [T10]}, {"chunk_layout": RW}),
    ({"codecs": [T10]}, {"chunk_layout": {"read_chunk_shape": [2, 2]}}),
    ({"codecs": ["bytes", "blosc"]}, {"dtype": "uint16"}),
    ({"codecs": ["bytes"]}, {"chunk_layout": RW}),
    ({"codecs": ["bytes"]}, {"chunk_layout": {"read_chunk_shape": [5, 5]}}),
    ({"codecs": []}, {"chunk_layout": {"read_chunk_elements": 50}}),
    ({"codecs": ["zstd", "crc32c"]}, {}),
    ({"codecs": ["gzip"]}, {}),
    ({"codecs": [{"name": "bytes", "configuration": {"endian": "big"}}]}, {}),
    ({"codecs": ["sharding_indexed"]}, {}),
    ({"codecs": ["sharding_indexed"]}, {"chunk_layout": {**RW, "inner_order": [1, 0]}}),
    ({"codecs": ["sharding_indexed", "crc32c"]}, {"chunk_layout": RW}),
    ({"codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [5, 5]}}]}, {}),
    ({"codecs": [{"name": "sharding_indexed", "configuration": {"index_location": "start"}}]},
     {}),
    ({"codecs": [{"name": "sharding_indexed", "configuration": {"codecs": ["blosc"]}}]},
     {"chunk_layout": RW}),
    ({"codecs": [{"name": "sharding_indexed", "configuration": {"codecs": [T10]}}]},
     {"chunk_layout": RW}),
    ({"codecs": [{"name": "sharding_indexed", "configuration": {"codecs": ["crc32c"]}}]},
     {"chunk_layout": {**RW, "inner_order": [1, 0]}}),
    ({"codecs": [T10, {"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 2]}}]},
     {}),
    ({"codecs": [T10, {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 2], "codecs": [T10, "bytes"]}}]}, {}),
    ({}, {"chunk_layout": RW, "codec": BLOSC}),
    ({}, {"codec": BLOSC}),
    ({}, {"chunk_layout": {"inner_order": [1, 0]}, "codec": BLOSC}),
    ({}, {"chunk_layout": {"inner_order": [1, 0]}, "codec": {"driver": "zarr3",
                                                             "codecs": [T01, "blosc"]}}),
    ({}, {"chunk_layout": RW, "codec": {"driver": "zarr3", "codecs": [T10, "bytes"]}}),
    ({}, {"chunk_layout": RW, "codec": {"driver": "zarr3", "codecs": []}}),
    ({}, {"chunk_layout": {"write_chunk_shape": [10, 10]},
          "codec": {"driver": "zarr3", "codecs": ["sharding_indexed"]}}),
    ({"codecs": ["zstd"]}, {"codec": BLOSC}),
    ({"codecs": ["zstd"]}, {"codec": {"driver": "zarr3", "codecs": ["zstd"]}}),
    ({"codecs": [{"name": "zstd", "configuration": {"level": 5}}]},
     {"codec": {"driver": "zarr3", "codecs": ["zstd"]}}),
    ({"codecs": ["bytes"]}, {"codec": BLOSC}),
    ({"codecs": []}, {"codec": BLOSC}),
    ({"codecs": ["sharding_indexed"]}, {"codec": BLOSC}),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [10, 10]}}},
     {"chunk_layout": {"read_chunk_shape": [5, 5]}}),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [10, 10]}}},
     {"chunk_layout": {"read_chunk_shape": [3, 3]}}),
    ({"chunk_key_encoding": {"name": "v2"}}, {}),
    ({"chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}}, {}),
    ({"chunk_key_encoding": {"name": "default", "configuration": {"separator": "."}}}, {}),
    ({}, {"fill_value": 7}),
    ({}, {"fill_value": 7, "dtype": "bool"}),
    ({"data_type": "uint16", "fill_value": 5}, {"dtype": None}),
    ({"data_type": "float32", "fill_value": "NaN"}, {"dtype": None}),
    ({"data_type": "float32", "fill_value": 1}, {"fill_value": 2}),
    ({"dimension_names": ["a", None]}, {}),
    ({"dimension_names": ["a", ""]}, {}),
    ({"dimension_names": ["a", "b"]}, {"domain": {"labels": ["a", "c"], "shape": [10, 20]},
                                       "shape": None}),
    ({}, {"domain": {"labels": ["x", "y"], "shape": [10, 20]}, "shape": None}),
    ({}, {"domain": {"labels": ["a", ""], "shape": [10, 20]}, "shape": None}),
    ({}, {"domain": {"inclusive_min": [1, 0], "shape": [10, 20]}, "shape": None}),
    ({"attributes": {"q": 1}}, {}),
    ({}, {"dimension_units": ["4nm", None]}),
    ({}, {"dimension_units": ["4nm", ""]}),
    ({}, {"dimension_units": [None, None]}),
    ({}, {"dimension_units": ["0.1234567 nm", "1e3 s"]}),
    ({"attributes": {"dimension_units": ["4 nm", None]}}, {"dimension_units": [None, "3 s"]}),
    ({}, {"shape": [0, 5]}),
    ({}, {"shape": []}),
    ({}, {"shape": [5, 3], "chunk_layout": {"chunk_shape": [2, -1]}}),
    ({}, {"shape": [5], "chunk_layout": {"read_chunk_shape": [2], "write_chunk_shape": [3]}}),
    ({}, {"dtype": None}),
    ({}, {"shape": None}),
    ({"shape": [3, 4]}, {"shape": [3, 5]}),
    ({"foo": {"must_understand": False}}, {}),
]


def _complete(kw: dict) -> dict:
    kw = dict(kw)
    if kw.get("dtype", "float32") is None:
        del kw["dtype"]
    else:
        kw.setdefault("dtype", "float32")
    if "shape" in kw and kw["shape"] is None:
        del kw["shape"]
    elif "domain" not in kw:
        kw.setdefault("shape", [10, 20])
    return kw


@pytest.mark.parametrize("metadata,kw", CASES, ids=[str(i) for i in range(len(CASES))])
def test_same_metadata_and_layout_as_tensorstore(metadata, kw):
    kw = _complete(kw)
    expected, actual = ts_create(metadata, kw), zk_create(metadata, kw)
    assert same_outcome(expected, actual), (json.dumps(metadata), kw, expected, actual)


def test_worked_examples_of_the_driver_document():
    shape = [1000, 2000, 3000]
    doc, layout = zk_create({}, {"dtype": "uint16", "shape": shape})
    assert layout == {"grid_origin": [0, 0, 0], "inner_order": [0, 1, 2],
                      "read_chunk": {"shape": [101, 101, 101]},
                      "write_chunk": {"shape": [101, 101, 101]}}
    doc, layout = zk_create({}, {"dtype": "uint16", "shape": shape, "chunk_layout": {
        "chunk_aspect_ratio": [2, 1, 1], "read_chunk_elements": 2000000,
        "write_chunk_elements": 1000000000}})
    assert layout["read_chunk"] == {"shape": [200, 100, 100]}
    assert layout["write_chunk"] == {"shape": [1000, 1000, 1000]}
    assert doc["codecs"][0]["name"] == "sharding_indexed"
    doc, layout = zk_create({}, {"dtype": "uint16", "shape": shape, "chunk_layout": {
        "read_chunk_shape": [64, 64, 64], "write_chunk_shape": [512, 512, 512]}})
    assert layout["read_chunk"] == {"shape": [64, 64, 64]}
    assert layout["write_chunk"] == {"shape": [512, 512, 512]}


def test_contradictions_name_the_member():
    def error(metadata, **kw):
        outcome = zk_create(metadata, _complete(kw))
        assert outcome[0] == "error"
        return outcome[1]

    assert "dimension 0" in error({}, chunk_layout={"read_chunk_shape": [3, 4],
                                                    "write_chunk_shape": [10, 8]})
    assert "metadata.shape" in error({"shape": [3, 4]}, shape=[3, 5])
    assert "data_type" in error({"data_type": "int8"}, dtype="uint8")
    assert "metadata.fill_value" in error({"fill_value": 1})
    assert "inner_order" in error({"codecs": ["blosc"]}, chunk_layout={"inner_order": [1, 0]})
    assert "dtype" in error({}, dtype=None)
    assert "zero origin" in error({}, domain={"inclusive_min": [1, 0], "shape": [3, 3]},
                                  shape=None)
    with pytest.raises(zarrkit.SpecError, match="unknown codec"):
        zarrkit.open({"driver": "zarr3", "kvstore": "memory://", "metadata": {
            "codecs": ["lzw"]}}, create=True, dtype="uint8", shape=[2])


# -- random constraints --------------------------------------------------------------------

_DTYPES = ["uint8", "int16", "float32", "float64", "bool", "complex64"]
_CODECS = [None, [], ["blosc"], ["zstd"], ["bytes"], ["sharding_indexed"], [T10],
           [{"name": "transpose", "configuration": {"order": "F"}}, "crc32c"],
           [{"name": "sharding_indexed", "configuration": {"codecs": ["gzip"]}}],
           [{"name": "sharding_indexed", "configuration": {"codecs": [
               {"name": "transpose", "configuration": {"order": "F"}}, "bytes"]}}]]
_SCHEMA_CODECS = [None, ["blosc"], [], ["crc32c"], ["sharding_indexed"], [T10, "bytes"]]


@st.composite
def _requests(draw):
    rank = draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(0, draw(st.sampled_from([8, 400, 3000]))),
                          min_size=rank, max_size=rank))
    dims = st.lists(st.one_of(st.none(), st.integers(1, 60)), min_size=rank, max_size=rank)
    layout = {}
    for key, values in (("read_chunk_shape", dims), ("write_chunk_shape", dims),
                        ("read_chunk_shape_soft_constraint", dims),
                        ("write_chunk_shape_soft_constraint", dims),
                        ("chunk_aspect_ratio", st.lists(st.sampled_from([None, 1, 2, 0.5]),
                                                        min_size=rank, max_size=rank)),
                        ("read_chunk_elements", st.integers(1, 5000)),
                        ("write_chunk_elements", st.integers(1, 200000)),
                        ("chunk_elements", st.integers(1, 100000)),
                        ("write_chunk_aspect_ratio_soft_constraint",
                         st.lists(st.sampled_from([None, 1, 3]), min_size=rank, max_size=rank)),
                        ("inner_order", st.permutations(range(rank)))):
        if draw(st.integers(0, 3)) == 0:
            value = draw(values)
            layout[key] = value if isinstance(value, int) else list(value)
    metadata = {}
    codecs = draw(st.sampled_from(_CODECS))
    if codecs is not None and not (rank != 2 and T10 in codecs):
        metadata["codecs"] = codecs
    if draw(st.integers(0, 4)) == 0:
        metadata["chunk_grid"] = {"name": "regular", "configuration": {
            "chunk_shape": draw(st.lists(st.integers(1, 50), min_size=rank, max_size=rank))}}
    kw = {"dtype": draw(st.sampled_from(_DTYPES)), "shape": shape}
    if layout:
        kw["chunk_layout"] = layout
    schema_codecs = draw(st.sampled_from(_SCHEMA_CODECS))
    if schema_codecs is not None and not (rank != 2 and T10 in schema_codecs):
        kw["codec"] = {"driver": "zarr3", "codecs": schema_codecs}
    return metadata, kw


# The same examples on every run; SPEC_EXAMPLES=N explores N fresh random ones instead.
@settings(max_examples=int(os.environ.get("SPEC_EXAMPLES", 150)), deadline=None,
          derandomize=not os.environ.get("SPEC_EXAMPLES"), suppress_health_check=list(HealthCheck))
@given(_requests())
def test_random_constraints_choose_what_tensorstore_chooses(request):
    metadata, kw = request
    expected, actual = ts_create(metadata, kw), zk_create(metadata, kw)
    assert same_outcome(expected, actual), (json.dumps(metadata), kw, expected, actual)

"""`zarrkit.Spec(json)` describes the array before anything is opened, as `tensorstore.Spec`.

Its `schema` (and `domain`, `rank`, `dtype`, `chunk_layout`, `codec`, `fill_value`,
`dimension_units`, `transform`) is what the driver's metadata constraints imply, merged with the
spec's own `schema`, `dtype` and `rank`, and seen through its `transform`. Each case is given to
both libraries and every accessor compared; where TensorStore refuses the spec (when parsing it
or when asked for one accessor), zarrkit must raise a SpecError naming the member, from `schema`
at least (zarrkit's `Spec(json)` itself only checks the driver and member names).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import SpecError

ts = pytest.importorskip("tensorstore")

ACCESSORS = ("schema", "domain", "rank", "dtype", "chunk_layout", "codec", "fill_value",
             "dimension_units", "transform")
KV = {"driver": "memory"}


def _grid(*shape: int) -> dict[str, Any]:
    return {"name": "regular", "configuration": {"chunk_shape": list(shape)}}


def _shard(chunk_shape: list[int] | None, codecs: list | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {} if chunk_shape is None else {"chunk_shape": chunk_shape}
    if codecs is not None:
        config["codecs"] = codecs
    return {"name": "sharding_indexed", "configuration": config}


T10 = {"name": "transpose", "configuration": {"order": [1, 0]}}


def z3(metadata: dict | None = None, schema: dict | None = None, **members: Any) -> dict:
    return _spec("zarr3", metadata, schema, members)


def v2(metadata: dict | None = None, schema: dict | None = None, **members: Any) -> dict:
    return _spec("zarr", metadata, schema, members)


def _spec(driver: str, metadata: dict | None, schema: dict | None, members: dict) -> dict:
    spec: dict[str, Any] = {"driver": driver, "kvstore": KV, **members}
    if metadata is not None:
        spec["metadata"] = metadata
    if schema is not None:
        spec["schema"] = schema
    return spec


def _plain(value: Any) -> Any:
    """Accessor values of either library as comparable JSON (non-finite floats as text)."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return _plain(value.to_json())  # schema, domain, layout, codec, transform, dtype, unit


def _describe(spec: Any) -> dict[str, Any]:
    """Each accessor's value, or ("error", message): TensorStore raises ValueError, zarrkit
    must raise SpecError."""
    refusal = ValueError if isinstance(spec, ts.Spec) else SpecError
    out = {}
    for name in ACCESSORS:
        try:
            out[name] = _plain(getattr(spec, name))
        except refusal as exc:
            out[name] = ("error", str(exc))
    return out


def _check(json: dict[str, Any], refused_naming: str | None = None) -> dict[str, Any]:
    """Compare all accessors; where TensorStore refuses, zarrkit must refuse naming the member."""
    ours = _describe(zarrkit.Spec(json))
    try:
        theirs = _describe(ts.Spec(json))
    except ValueError:  # TensorStore refuses the spec itself: zarrkit's schema must refuse it
        theirs = {"schema": ("error", "")}
    for name, expected in theirs.items():
        if isinstance(expected, tuple):
            assert isinstance(ours[name], tuple), (name, ours[name])
            assert ours[name][0] == "error"
        else:
            assert ours[name] == expected, name
    if refused_naming is None:
        assert not isinstance(ours["schema"], tuple), ours["schema"]
    else:
        assert isinstance(ours["schema"], tuple) and refused_naming in ours["schema"][1], ours
    return ours


# 1. Metadata alone. zarr3: the data type sets the dtype (and, given, fixes the rank); shape
#    gives [0, shape) with resizable upper bounds ([[4], [8]]); dimension_names label it (when
#    unique); chunk_grid is the write chunk; codecs give the inner order (when the innermost
#    chain names its array -> bytes codec) and the read chunk (a sharding codec's sub-chunks
#    only when its own codecs are given); attributes.dimension_units are the units. Without a
#    shape or names there is no domain, and so no rank from the transform TensorStore derives.

ZARR3_METADATA = {
    "empty": z3(),
    "full": z3({"shape": [4, 8], "data_type": "uint16", "chunk_grid": _grid(2, 4),
                "fill_value": 3, "codecs": [T10, "bytes"], "dimension_names": ["x", "y"],
                "attributes": {"dimension_units": ["nm", "4 s"]}}),
    "shape": z3({"shape": [4, 8]}),
    "huge_shape": z3({"shape": [2**62, 5]}),
    "rank0": z3({"shape": [], "data_type": "int8"}),
    "grid": z3({"chunk_grid": _grid(2, 4)}),
    "grid_and_dtype": z3({"chunk_grid": _grid(2, 4), "data_type": "int16"}),
    "data_type": z3({"data_type": "float32"}),
    "nan_fill": z3({"data_type": "float32", "fill_value": "NaN"}),
    "nan_bits_fill": z3({"data_type": "float32", "fill_value": "0x7fc00001"}),
    "infinite_fill": z3({"data_type": "float64", "fill_value": "-Infinity"}),
    "integral_float_fill": z3({"data_type": "int8", "fill_value": 3.0}),
    "bfloat16_fill": z3({"data_type": "bfloat16", "fill_value": 1}),
    "uint64_fill": z3({"data_type": "uint64", "fill_value": 2**64 - 1}),
    "names": z3({"dimension_names": ["a", None]}),
    "repeated_names": z3({"dimension_names": ["a", "a"]}),
    "names_and_dtype": z3({"dimension_names": ["a", "b"], "data_type": "int16"}),
    "units": z3({"attributes": {"dimension_units": ["nm", None]}}),
    "units_and_shape": z3({"shape": [3, 4], "attributes": {"dimension_units": ["4 nm", "s"]}}),
    "other_attributes": z3({"attributes": {"a": 1}, "chunk_key_encoding": {"name": "v2"}}),
    "codecs_without_rank": z3({"codecs": [T10, "bytes"]}),
    "bytes_with_shape": z3({"shape": [5, 6], "codecs": ["bytes"]}),
    "transpose_with_shape": z3({"shape": [5, 6], "codecs": [T10, "bytes"]}),
    "gzip_only": z3({"chunk_grid": _grid(2, 4), "codecs": [{"name": "gzip"}]}),
    "transpose_only": z3({"chunk_grid": _grid(2, 4), "codecs": [T10]}),
    "transpose_F": z3({"chunk_grid": _grid(2, 4), "codecs": [
        {"name": "transpose", "configuration": {"order": "F"}}, "bytes"]}),
    "blosc": z3({"chunk_grid": _grid(2, 4), "codecs": ["bytes", {"name": "blosc"}]}),
    "sharding": z3({"chunk_grid": _grid(4, 8), "codecs": [_shard([2, 4])]}),
    "sharding_sub_codecs": z3({"chunk_grid": _grid(4, 8), "codecs": [_shard([2, 4],
                                                                             ["bytes"])]}),
    "sharding_empty_sub_codecs": z3({"chunk_grid": _grid(8, 8), "codecs": [_shard([4, 4],
                                                                                   [])]}),
    "sharding_gzip_sub_codecs": z3({"chunk_grid": _grid(8, 8), "codecs": [
        _shard([4, 4], [{"name": "gzip"}])]}),
    "sharding_transposes": z3({"chunk_grid": _grid(4, 6), "codecs": [
        T10, _shard([3, 2], [T10, "bytes"])]}),
    "sharding_no_grid": z3({"shape": [5, 6], "codecs": [_shard([2, 3], ["bytes"])]}),
    "nested_sharding": z3({"chunk_grid": _grid(8, 8), "codecs": [
        _shard([4, 4], [_shard([2, 2], ["bytes"])])]}),
    "nested_sharding_open": z3({"chunk_grid": _grid(8, 8), "codecs": [
        _shard([4, 4], [_shard([2, 2])])]}),
    "sharding_not_dividing": z3({"chunk_grid": _grid(5, 5), "codecs": [_shard([2, 2],
                                                                              ["bytes"])]}),
}

# zarr: the dtype's field gives the dtype; its ranks are the .zarray's plus the field's, so
# without a dtype the shape and chunks describe nothing (unless the spec gives the rank);
# chunks are the read and write chunk; order the inner order; compressor the codec (with its
# defaults); a null fill_value is none.

ZARR2_METADATA = {
    "empty": v2(),
    "full": v2({"shape": [4, 8], "chunks": [2, 4], "dtype": "<u2", "fill_value": 3,
                "compressor": None, "order": "F"}),
    "shape_without_dtype": v2({"shape": [2, 4]}),
    "chunks_without_dtype": v2({"chunks": [2, 4]}),
    "order_without_rank": v2({"order": "F"}),
    "shape_and_rank": v2({"shape": [2, 4]}, rank=2),
    "shape_chunks_order_and_rank": v2({"shape": [2, 4], "chunks": [1, 2], "order": "F"},
                                      rank=2),
    "chunks_with_more_rank": v2({"chunks": [1, 2]}, rank=3),
    "shape_with_more_rank": v2({"shape": [2, 4]}, rank=3),
    "order_and_rank": v2({"order": "F"}, rank=3),
    "dtype": v2({"dtype": "<f4"}),
    "dtype_and_chunks": v2({"dtype": "<i4", "chunks": [2, 3]}),
    "dtype_and_shape": v2({"dtype": "<i4", "shape": [2, 3]}),
    "dtype_rank0": v2({"dtype": "<i4"}, rank=0),
    "fortran_rank3": v2({"dtype": "<i4", "shape": [2, 3, 4], "order": "F"}),
    "one_field_record": v2({"dtype": [["a", "<f4"]], "shape": [3]}),
    "record_fill": v2({"dtype": [["a", "<i2"]], "fill_value": "AQA="}),
    "big_endian_fill": v2({"dtype": ">i4", "fill_value": 7}),
    "null_fill": v2({"dtype": "<i2", "fill_value": None}),
    "bool_fill": v2({"dtype": "|b1", "fill_value": True}),
    "nan_fill": v2({"dtype": "<f4", "fill_value": "NaN"}),
    "infinite_fill": v2({"dtype": "<f8", "fill_value": "-Infinity"}),
    "zlib": v2({"compressor": {"id": "zlib"}}),
    "blosc": v2({"compressor": {"id": "blosc"}}),
    "separator_and_filters": v2({"dimension_separator": "/", "filters": None}),
    "key_encoding": v2(key_encoding="/"),
}


@pytest.mark.parametrize("name", ZARR3_METADATA)
def test_zarr3_metadata_alone(name: str) -> None:
    _check(ZARR3_METADATA[name])


@pytest.mark.parametrize("name", ZARR2_METADATA)
def test_zarr2_metadata_alone(name: str) -> None:
    _check(ZARR2_METADATA[name])


def test_metadata_shape_is_a_resizable_domain() -> None:
    spec = zarrkit.Spec(z3({"shape": [4, 8], "data_type": "uint16"}))
    assert spec.schema.to_json()["domain"] == {"inclusive_min": [0, 0],
                                                "exclusive_max": [[4], [8]]}
    assert (spec.rank, spec.dtype) == (2, "uint16")
    assert spec.transform.to_json() == {"input_inclusive_min": [0, 0],
                                        "input_exclusive_max": [[4], [8]]}


# 2. The spec's own schema alone (and top-level dtype and rank). The driver adds what it always
#    implies: a zarr3 or zarr codec, grid origin 0 once the rank is known, a domain starting
#    at 0 (a schema domain elsewhere is refused) with resizable upper bounds.

SCHEMA_ONLY = {
    f"{driver}_{name}": (spec(None, schema, **members), refused)
    for driver, spec in (("zarr3", z3), ("zarr", v2))
    for name, (schema, members, refused) in {
        "rank": (None, {"rank": 2}, None),
        "schema_rank": ({"rank": 2}, {}, None),
        "rank0": ({"rank": 0}, {}, None),
        "dtype": (None, {"dtype": "int8"}, None),
        "domain": ({"domain": {"shape": [4, 5]}}, {}, None),
        "domain_labels": ({"domain": {"shape": [4, 5], "labels": ["a", "b"]}}, {}, None),
        "domain_implicit": ({"domain": {"inclusive_min": [0, [0]], "exclusive_max": [[4], 5]}},
                            {}, None),
        "domain_implicit_infinite_origin": ({"domain": {"inclusive_min": [["-inf"], 0],
                                                        "exclusive_max": [4, 5]}}, {}, None),
        "domain_origin": ({"domain": {"inclusive_min": [1, 2], "exclusive_max": [4, 5]}}, {},
                          "schema.domain"),
        "domain_explicit_infinite_origin": ({"domain": {"inclusive_min": ["-inf", 0],
                                                        "exclusive_max": [4, 5]}}, {},
                                            "schema.domain"),
        "grid_origin": ({"chunk_layout": {"grid_origin": [1, 2]}}, {}, "chunk_layout"),
        "soft_layout": ({"chunk_layout": {
            "grid_origin_soft_constraint": [1, 2], "inner_order_soft_constraint": [1, 0],
            "write_chunk": {"shape": [4, 6], "elements": 100}}}, {}, None),
        "elements": ({"chunk_layout": {"write_chunk": {"elements": 1000}}}, {}, None),
        "units": ({"dimension_units": ["nm", "s"]}, {}, None),
        "fill": ({"fill_value": 5}, {}, None),
        "fill_and_dtype": ({"fill_value": 5, "dtype": "int8"}, {}, None),
    }.items()
}
SCHEMA_ONLY["zarr3_codec"] = (z3(None, {"codec": {"driver": "zarr3", "codecs": [
    _shard([2, 2], ["bytes"])]}}), None)
SCHEMA_ONLY["zarr3_zarr_codec"] = (z3(None, {"codec": {"driver": "zarr"}}), "schema.codec")
SCHEMA_ONLY["zarr_zarr3_codec"] = (v2(None, {"codec": {"driver": "zarr3"}}), "schema.codec")


@pytest.mark.parametrize("name", SCHEMA_ONLY)
def test_schema_alone(name: str) -> None:
    _check(*SCHEMA_ONLY[name])


# 3. Metadata and schema together: merged, and refused where they disagree (naming the member).
#    Fill values are not compared before opening: the metadata's wins (zarr: even a null one).

BOTH = {
    "zarr3_dtype_conflict": (z3({"data_type": "int16"}, {"dtype": "int32"}),
                             "metadata.data_type"),
    "zarr3_top_dtype_conflict": (z3({"data_type": "int16"}, dtype="int32"),
                                 "metadata.data_type"),
    "zarr3_fill_conflict": (z3({"data_type": "int16", "fill_value": 3}, {"fill_value": 4}),
                            None),
    "zarr3_shape_vs_domain": (z3({"shape": [4, 8]}, {"domain": {"shape": [4, 9]}}),
                              "schema.domain"),
    "zarr3_shape_vs_implicit_domain": (z3({"shape": [4, 8]}, {"domain": {
        "inclusive_min": [0, 0], "exclusive_max": [[5], 8]}}), "schema.domain"),
    "zarr3_shape_and_labels": (z3({"shape": [4, 8]}, {"domain": {"labels": ["a", "b"]}}), None),
    "zarr3_labels_conflict": (z3({"shape": [4, 8], "dimension_names": ["x", "y"]}, {
        "domain": {"labels": ["a", "b"]}}), "schema.domain"),
    "zarr3_rank_less_than_metadata": (z3({"chunk_grid": _grid(1, 2)}, rank=1), "rank"),
    "zarr3_rank_vs_data_type": (z3({"chunk_grid": _grid(1, 2), "data_type": "int8"}, rank=3),
                                "rank"),
    "zarr3_more_rank_than_grid": (z3({"chunk_grid": _grid(2, 2)}, rank=3), "chunk_layout"),
    "zarr3_layout_rank_vs_grid": (z3({"chunk_grid": _grid(1, 2)}, {"chunk_layout": {
        "grid_origin": [0, 0, 0]}}), "chunk_layout"),
    "zarr3_write_chunk_conflict": (z3({"chunk_grid": _grid(2, 4)}, {"chunk_layout": {
        "write_chunk": {"shape": [2, 5]}}}), "chunk_layout"),
    "zarr3_soft_write_chunk": (z3({"chunk_grid": _grid(2, 4)}, {"chunk_layout": {
        "write_chunk": {"shape_soft_constraint": [2, 5]}, "read_chunk": {"elements": 10}}}),
        None),
    "zarr3_inner_order_conflict": (z3({"chunk_grid": _grid(2, 4), "codecs": ["bytes"]}, {
        "chunk_layout": {"inner_order": [1, 0]}}), "chunk_layout"),
    "zarr3_hard_codec_chunk": (z3({"chunk_grid": _grid(4, 4)}, {"chunk_layout": {
        "codec_chunk": {"shape": [2, 2]}}}), None),
    "zarr3_codecs_merged": (z3({"codecs": ["bytes"]}, {"codec": {"driver": "zarr3", "codecs": [
        {"name": "bytes", "configuration": {"endian": "big"}}]}}), None),
    "zarr3_codecs_conflict": (z3({"codecs": ["bytes"]}, {"codec": {"driver": "zarr3", "codecs": [
        "bytes", {"name": "gzip"}]}}), "schema.codec"),
    "zarr3_sharding_codecs_merged": (z3({"codecs": [_shard([2, 2])]}, {"codec": {
        "driver": "zarr3", "codecs": [_shard(None, ["bytes", {"name": "gzip"}])]}}), None),
    "zarr3_schema_codec_with_grid": (z3({"chunk_grid": _grid(4, 4)}, {"codec": {
        "driver": "zarr3", "codecs": [_shard([2, 2], ["bytes"])]}}), None),
    "zarr3_transpose_rank": (z3({"shape": [5, 6, 7], "codecs": [T10, "bytes"]}),
                             "metadata.codecs"),
    "zarr3_sharding_rank": (z3({"shape": [5, 6, 7], "codecs": [_shard([1, 1])]}),
                            "metadata.codecs"),
    "zarr3_units_merged": (z3({"attributes": {"dimension_units": ["nm", None]}}, {
        "dimension_units": [None, "ms"]}), None),
    "zarr3_units_conflict": (z3({"attributes": {"dimension_units": ["nm", "s"]}}, {
        "dimension_units": ["nm", "ms"]}), "dimension_units"),
    "zarr3_units_rank": (z3({"shape": [1, 2, 3], "attributes": {"dimension_units": ["nm", None]}}),
                         "metadata.attributes.dimension_units"),
    "zarr3_units_not_a_list": (z3({"attributes": {"dimension_units": 5}}),
                               "metadata.attributes.dimension_units"),
    "zarr3_fill_without_data_type": (z3({"fill_value": 1}), "metadata.fill_value"),
    "zarr3_string_data_type": (z3({"data_type": "string"}), "metadata.data_type"),
    "zarr_dtype_conflict": (v2({"dtype": "<i2"}, {"dtype": "int32"}), "metadata.dtype"),
    "zarr_fill_conflict": (v2({"dtype": "<i2", "fill_value": 3}, {"fill_value": 4}), None),
    "zarr_null_fill_wins": (v2({"dtype": "<i2", "fill_value": None}, {"fill_value": 4}), None),
    "zarr_shape_vs_domain": (v2({"shape": [4, 8]}, {"domain": {"shape": [4, 9]}}),
                             "schema.domain"),
    "zarr_dtype_and_domain": (v2({"dtype": "<i4"}, {"domain": {"shape": [4, 5],
                                                              "labels": ["a", "b"]}}), None),
    "zarr_dtype_and_unbounded_domain": (v2({"dtype": "<i4"}, {"domain": {"rank": 2}}), None),
    "zarr_rank_vs_dtype": (v2({"dtype": "<i4", "shape": [2, 3]}, rank=3), "rank"),
    "zarr_rank_less_than_shape": (v2({"shape": [2, 3]}, rank=1), "rank"),
    "zarr_chunks_conflict": (v2({"chunks": [2, 4]}, {"chunk_layout": {
        "write_chunk": {"shape": [2, 5]}}}), "chunk_layout"),
    "zarr_read_chunks_conflict": (v2({"chunks": [2, 4]}, {"chunk_layout": {
        "read_chunk": {"shape": [2, 5]}}}), "chunk_layout"),
    "zarr_order_conflict": (v2({"chunks": [2, 4], "order": "C"}, {"chunk_layout": {
        "inner_order": [1, 0]}}), "chunk_layout"),
    "zarr_soft_layout": (v2({"dtype": "<i4", "chunks": [2, 3]}, {"chunk_layout": {
        "write_chunk": {"shape_soft_constraint": [5, 5]}, "read_chunk": {"aspect_ratio": [1, 2]},
        "inner_order_soft_constraint": [1, 0]}}), None),
    "zarr_compressor_merged": (v2({"compressor": {"id": "zlib", "level": 3}}, {"codec": {
        "driver": "zarr", "filters": None}}), None),
    "zarr_compressor_conflict": (v2({"compressor": None}, {"codec": {
        "driver": "zarr", "compressor": {"id": "zlib"}}}), "schema.codec"),
    "zarr_units": (v2({"dtype": "<i4", "shape": [2]}, {"dimension_units": ["nm"]}), None),
    "zarr_several_fields": (v2({"dtype": [["a", "<f4"], ["b", "<i2"]]}), "metadata.dtype"),
}


@pytest.mark.parametrize("name", BOTH)
def test_metadata_and_schema(name: str) -> None:
    _check(*BOTH[name])


# Where TensorStore 0.1.86 aborts the process (a failed check when building the domain from a
# shape of another rank than the schema's), zarrkit refuses.

@pytest.mark.parametrize("json", [z3({"shape": [4, 8]}, {"rank": 3}),
                                  z3({"shape": [1, 2]}, rank=3)])
def test_shape_of_another_rank_is_refused(json: dict[str, Any]) -> None:
    with pytest.raises(SpecError, match="rank"):
        zarrkit.Spec(json).schema.to_json()


# 4. A fill value in the `schema` member is JSON until a dtype of the member's own converts it:
#    with the dtype from the spec's dtype or the metadata, TensorStore keeps it as given (300
#    for uint8, "nan" as text) and converts it only on open.

FILLS = {
    "out_of_range": z3({"data_type": "uint8"}, {"fill_value": 300}),
    "fraction_for_integers": z3({"data_type": "uint8"}, {"fill_value": 1.5}),
    "bool_for_integers": z3({"data_type": "uint8"}, {"fill_value": True}),
    "number_for_bool": z3({"data_type": "bool"}, {"fill_value": 1}),
    "top_level_dtype": z3(None, {"fill_value": 300}, dtype="uint8"),
    "integer_for_float": z3(None, {"fill_value": 5}, dtype="float32"),
    "text": z3(None, {"fill_value": "nan"}, dtype="float32"),
    "zarr": v2({"dtype": "|u1"}, {"fill_value": 300}),
}


@pytest.mark.parametrize("name", FILLS)
def test_schema_fill_value_kept_as_json(name: str) -> None:
    _check(FILLS[name])


def test_schema_fill_value_converted_by_its_own_dtype() -> None:
    _check(z3(None, {"fill_value": "7", "dtype": "int8"}))
    _check(z3(None, {"fill_value": 1.5, "dtype": "uint8"}), "schema.fill_value")


# 5. Through a transform: the domain is the transform's (not bounded by the metadata's shape,
#    so {"rank": 2} when its bounds are implicit); chunk layout and units map to the input
#    dimensions that alone read one output with a nonzero stride (shapes divided by
#    gcd(size, |stride|), origins and aspect ratios scaled, inner order by first reader);
#    codec and fill value are unchanged. A transform that changes the rank makes TensorStore's
#    schema refuse (it keeps the driver's rank beside the transform's domain), while the other
#    accessors still answer.

TRANSFORMS = {
    "permutation": {"input_rank": 2, "output": [{"input_dimension": 1}, {"input_dimension": 0}]},
    "bounded_permutation": {"input_inclusive_min": [0, 0], "input_exclusive_max": [8, 4],
                            "output": [{"input_dimension": 1}, {"input_dimension": 0}]},
    "translation": {"input_inclusive_min": [10, 20], "input_exclusive_max": [14, 28],
                    "output": [{"input_dimension": 0, "offset": -10},
                               {"input_dimension": 1, "offset": -20}]},
    "implicit_translation": {"input_inclusive_min": [[10], [20]],
                             "input_exclusive_max": [[14], [28]],
                             "output": [{"input_dimension": 0, "offset": -10},
                                        {"input_dimension": 1, "offset": -20}]},
    "stride": {"input_inclusive_min": [0, 0], "input_exclusive_max": [2, 8],
               "output": [{"input_dimension": 0, "stride": 2}, {"input_dimension": 1}]},
    "strides_3_and_-4": {"input_rank": 2, "output": [
        {"input_dimension": 0, "stride": 3}, {"input_dimension": 1, "stride": -4, "offset": 7}]},
    "negative_stride": {"input_inclusive_min": [-3, 0], "input_exclusive_max": [1, 8],
                        "output": [{"input_dimension": 0, "stride": -1},
                                   {"input_dimension": 1}]},
    "permutation_with_offsets": {"input_rank": 2, "output": [
        {"input_dimension": 1, "offset": 5}, {"input_dimension": 0, "offset": -3}]},
    "identity": {"input_rank": 2},
    "labels": {"input_rank": 2, "input_labels": ["p", "q"]},
    "explicit_box": {"input_shape": [4, 8]},
    "index_array": {"input_shape": [2, 3], "output": [{"index_array": [[1], [2]]},
                                                      {"input_dimension": 1}]},
    "index_array_2d": {"input_shape": [2, 3], "output": [{"index_array": [[1, 2, 3], [2, 3, 4]]},
                                                         {"input_dimension": 1}]},
    "new_axis": {"input_inclusive_min": [0, 0, 0], "input_exclusive_max": [4, 1, 8],
                 "output": [{"input_dimension": 0}, {"input_dimension": 2}]},
    "new_axis_first": {"input_rank": 3, "output": [{"input_dimension": 1},
                                                   {"input_dimension": 2}]},
    "constant": {"input_inclusive_min": [0], "input_exclusive_max": [8],
                 "output": [{"offset": 1}, {"input_dimension": 0}]},
    "diagonal": {"input_rank": 1, "output": [{"input_dimension": 0}, {"input_dimension": 0}]},
    "stride_zero": {"input_rank": 2, "output": [{"input_dimension": 0, "stride": 0, "offset": 2},
                                                {"input_dimension": 1}]},
}
RANK_CHANGING = ("new_axis", "new_axis_first", "constant", "diagonal")
BASES = {
    "zarr3_metadata": z3({"shape": [4, 8], "data_type": "uint16", "chunk_grid": _grid(2, 4),
                          "fill_value": 3, "codecs": [T10, "bytes"],
                          "dimension_names": ["x", "y"],
                          "attributes": {"dimension_units": ["nm", "s"]}}),
    "zarr_metadata": v2({"shape": [4, 8], "chunks": [2, 4], "dtype": "<u2", "fill_value": 3,
                         "compressor": None, "order": "F"}),
    "zarr3_schema": z3(None, {"dtype": "int16", "fill_value": 5,
                              "dimension_units": ["4nm", "s"], "chunk_layout": {
                                  "grid_origin_soft_constraint": [1, 2],
                                  "inner_order_soft_constraint": [1, 0],
                                  "write_chunk": {"shape": [4, 6], "elements": 100,
                                                  "aspect_ratio_soft_constraint": [1, 3]},
                                  "read_chunk": {"shape_soft_constraint": [2, 3],
                                                 "elements_soft_constraint": 10},
                                  "codec_chunk": {"aspect_ratio": [2, 0]}}}),
}


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("name", TRANSFORMS)
def test_through_transform(base: str, name: str) -> None:
    json = {**BASES[base], "transform": TRANSFORMS[name]}
    _check(json, "transform" if name in RANK_CHANGING else None)


def test_transform_bounds_are_not_the_metadata_shape() -> None:
    spec = zarrkit.Spec({**BASES["zarr3_metadata"], "transform": TRANSFORMS["permutation"]})
    assert spec.domain.to_json() == {"rank": 2}
    schema = spec.schema.to_json()
    assert schema["chunk_layout"]["write_chunk"] == {"shape": [4, 2]}
    assert schema["dimension_units"] == [[1.0, "s"], [1.0, "nm"]]


@pytest.mark.parametrize("json", [
    z3(rank=3, transform={"input_rank": 2}),
    z3(None, {"rank": 3}, transform={"input_rank": 2}),
    z3({"shape": [1, 2, 3]}, transform={"input_rank": 2}),
    z3({"chunk_grid": _grid(1, 2, 3)}, transform={"input_rank": 2}),
    v2({"shape": [1, 2, 3], "dtype": "<i2"}, transform={"input_rank": 2}),
])
def test_transform_rank_must_fit(json: dict[str, Any]) -> None:
    _check(json, "rank")


def test_transform_hides_a_domain_conflict() -> None:
    """TensorStore does not derive the domain when a transform is given, so the metadata and
    schema domains are not merged (or checked) before opening."""
    _check(z3({"shape": [4, 8]}, {"domain": {"shape": [4, 9]}}, transform={"input_rank": 2}))


# 6. An opened array's (or view's) spec() describes it as TensorStore's does.

ARRAYS = {
    "zarr3": {"driver": "zarr3", "metadata": {
        "shape": [10, 20], "data_type": "int16", "chunk_grid": _grid(5, 4), "fill_value": 7,
        "dimension_names": ["x", "y"]}, "schema": {"dimension_units": ["4nm", "s"]}},
    "zarr3_sharded": {"driver": "zarr3", "metadata": {
        "shape": [16, 16], "data_type": "float32", "chunk_grid": _grid(8, 8),
        "codecs": [_shard([4, 4], [T10, "bytes", {"name": "gzip"}])]}},
    "zarr3_chosen": {"driver": "zarr3", "dtype": "uint8", "schema": {
        "domain": {"shape": [100, 200]}, "chunk_layout": {"read_chunk": {"shape": [10, 20]},
                                                          "write_chunk": {"shape": [50, 100]}}}},
    "zarr": {"driver": "zarr", "metadata": {
        "shape": [10, 20], "dtype": "<i4", "chunks": [5, 4], "fill_value": 3, "order": "F",
        "compressor": {"id": "zlib", "level": 2}}},
    "zarr_null_fill": {"driver": "zarr", "metadata": {
        "shape": [10, 20], "dtype": ">f8", "chunks": [5, 4], "fill_value": None}},
    "zarr_labelled": {"driver": "zarr", "dtype": "float32", "schema": {
        "domain": {"shape": [30, 40], "labels": ["a", "b"]}, "fill_value": 1.5}},
}
VIEWS = {
    "whole": lambda a: a,
    "transposed": lambda a: a.T,
    "sliced": lambda a: a[1:5, 2:],
    "strided": lambda a: a[::2, 1::3],
    "flipped": lambda a: a[::-1, :],
    "translated": lambda a: a.translate_to[3, 4],
    "labelled": lambda a: a.label["p", "q"],
    "new_axis": lambda a: a[:, None, :],
    "integer": lambda a: a[2],
    "index_array": lambda a: a[[1, 3], :],
    "outer": lambda a: a.oindex[[1, 3], [0, 2]],
}


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("name", ARRAYS)
def test_opened_spec(tmp_path: Path, name: str, view: str) -> None:
    def spec(lib: str) -> dict[str, Any]:
        return {"kvstore": {"driver": "file", "path": str(tmp_path / lib)}, "create": True,
                **ARRAYS[name]}

    theirs = VIEWS[view](ts.open(spec("ts")).result()).spec()
    opened = zarrkit.open(spec("zk"))
    ours = _describe(VIEWS[view](getattr(opened, "view", opened)).spec())
    for accessor, expected in _describe(theirs).items():
        got = ours[accessor]
        if isinstance(expected, tuple):  # TensorStore's schema refuses a rank-changing view
            assert isinstance(got, tuple) and got[0] == "error", (accessor, got)
        else:
            assert got == expected, accessor


def test_spec_accessors_refuse_a_key_encoding_the_separator_contradicts():
    base = {"driver": "zarr", "kvstore": {"driver": "memory"}, "key_encoding": "/",
            "metadata": {"shape": [4], "chunks": [2], "dtype": "<i4"}}
    assert zarrkit.Spec(base).schema.domain.shape == (4,)
    bad = {**base, "metadata": {**base["metadata"], "dimension_separator": "."}}
    for accessor in ("schema", "domain", "chunk_layout", "codec"):
        with pytest.raises(SpecError, match="key_encoding: '/' does not match"):
            getattr(zarrkit.Spec(bad), accessor)
    with pytest.raises(SpecError, match="key_encoding: expected '.' or '/'"):
        _ = zarrkit.Spec({**base, "key_encoding": "-"}).schema

"""Spec edges where zarrkit must do what TensorStore does: the same stored document, the same
refusal, the same `spec()` and schema JSON. Each case runs both libraries on a "file" kvstore."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import zarrkit
from zarrkit.errors import SpecError

ts = pytest.importorskip("tensorstore")

DOCUMENT = {"zarr3": "zarr.json", "zarr": ".zarray"}


def _open(lib: str, spec: dict[str, Any]) -> Any:
    return ts.open(spec).result() if lib == "ts" else zarrkit.open(spec)


def _both(tmp_path: Path, driver: str, **members: Any) -> dict[str, Any]:
    """Each library's (stored document, schema fill value), or ("refused", message)."""
    out = {}
    for lib in ("ts", "zk"):
        path = tmp_path / lib
        spec = {"driver": driver, "kvstore": {"driver": "file", "path": str(path)},
                "create": True, **members}
        try:
            opened = _open(lib, spec)
        except SpecError as exc:  # before ValueError, its base class
            out[lib] = ("refused", str(exc))
            continue
        except ValueError as exc:
            assert lib == "ts", exc
            out[lib] = ("refused", str(exc))
            continue
        doc = json.loads((path / DOCUMENT[driver]).read_text())
        out[lib] = (doc, opened.schema.to_json().get("fill_value"))
    return out


def _same_or_both_refuse(out: dict[str, Any], naming: str | None = None) -> None:
    if out["ts"][0] == "refused":
        assert out["zk"][0] == "refused", out["zk"]
        assert naming is None or naming in out["zk"][1], out["zk"][1]
    else:
        assert out["zk"] == out["ts"]


@pytest.mark.parametrize("driver", ["zarr3", "zarr"])
def test_spec_of_an_array_opened_with_assume_metadata_says_so(tmp_path, driver):
    base = {"driver": driver, "dtype": "uint16", "schema": {"domain": {"shape": [10, 10]}}}
    specs = {}
    for lib in ("ts", "zk"):
        kvstore = {"driver": "file", "path": str(tmp_path / lib)}
        opened = _open(lib, {**base, "kvstore": kvstore, "assume_metadata": True})
        specs[lib] = opened.spec().to_json()
        specs[lib]["kvstore"].pop("path")
        # The recorded spec reopens as it was opened: without reading (there is no document)
        assert not (tmp_path / lib / DOCUMENT[driver]).exists()
        if lib == "zk":
            assert zarrkit.open(opened.spec()).shape == (10, 10)
    assert specs["zk"]["assume_metadata"] is True
    assert specs["zk"] == specs["ts"]


@pytest.mark.parametrize("driver", ["zarr3", "zarr"])
@pytest.mark.parametrize("existing", ["{not json", '{"zarr_format": 3, "node_type": "array"}',
                                      "[]", '{"zarr_format": 2}'])
def test_delete_existing_replaces_a_malformed_document(tmp_path, driver, existing):
    for lib in ("ts", "zk"):
        path = tmp_path / lib
        path.mkdir()
        (path / DOCUMENT[driver]).write_text(existing)
        (path / "stray").write_text("x")
        spec = {"driver": driver, "kvstore": {"driver": "file", "path": str(path)},
                "dtype": "uint16", "schema": {"domain": {"shape": [4, 4]}},
                "create": True, "delete_existing": True}
        opened = _open(lib, spec)
        assert opened.shape == (4, 4)
        assert sorted(p.name for p in path.iterdir()) == [DOCUMENT[driver]]


@pytest.mark.parametrize(("key_encoding", "separator", "naming"), [
    ("/", ".", "key_encoding"), (".", "/", "key_encoding"), ("/", "/", None), ("/", None, None),
    ("-", None, "key_encoding"), (3, None, "key_encoding")])
def test_v2_key_encoding_must_agree_with_the_dimension_separator(tmp_path, key_encoding,
                                                                  separator, naming):
    metadata: dict[str, Any] = {"shape": [4, 4], "chunks": [2, 2]}
    if separator is not None:
        metadata["dimension_separator"] = separator
    out = _both(tmp_path, "zarr", dtype="uint16", metadata=metadata, key_encoding=key_encoding)
    _same_or_both_refuse(out, naming)
    if naming is None:
        assert out["zk"][0]["dimension_separator"] == "/"


@pytest.mark.parametrize("driver", ["zarr3", "zarr"])
@pytest.mark.parametrize(("dtype", "fill"), [
    ("bool", 1), ("bool", 0), ("bool", 1.0), ("bool", True), ("bool", "true"), ("bool", "false"),
    ("bool", "True"), ("int32", None), ("int32", 3.0), ("int32", 3.5), ("int32", "7"),
    ("int32", " -7"), ("int32", "7e0"), ("int32", True), ("uint8", "255"), ("uint8", "256"),
    ("uint8", "-1"), ("float32", True), ("float32", "1.5"), ("float64", "-inf"),
    ("float32", "Infinity"), ("float64", "1e400"), ("int32", "abc"), ("int64", 1e10)])
def test_schema_fill_values_from_json_as_tensorstore_reads_them(tmp_path, driver, dtype, fill):
    metadata = {"shape": [4]} if driver == "zarr3" else {"shape": [4], "chunks": [2]}
    out = _both(tmp_path, driver, dtype=dtype, metadata=metadata,
                schema={"fill_value": fill})
    _same_or_both_refuse(out, "fill_value")


@pytest.mark.parametrize("driver", ["zarr3", "zarr"])
@pytest.mark.parametrize(("dtype", "fill", "expected"), [
    ("float32", "NaN", math.nan), ("float32", "nan", math.nan), ("float64", "Infinity", math.inf),
    ("float64", "-inf", -math.inf), ("float32", 2.5, 2.5)])
def test_schema_json_gives_float_fill_values_as_numbers(tmp_path, driver, dtype, fill, expected):
    metadata = {"shape": [4]} if driver == "zarr3" else {"shape": [4], "chunks": [2]}
    out = _both(tmp_path, driver, dtype=dtype, metadata=metadata, schema={"fill_value": fill})
    for lib in ("ts", "zk"):
        value = out[lib][1]
        assert isinstance(value, float), (lib, value)
        assert (math.isnan(value) and math.isnan(expected)) or value == expected, (lib, value)
    assert out["zk"][0] == out["ts"][0]


def test_schema_json_decodes_stored_hex_and_complex_fill_values(tmp_path):
    nan_payload = {"data_type": "float32", "fill_value": "0x7fc00001", "shape": [4]}
    out = _both(tmp_path / "hex", "zarr3", metadata=nan_payload)
    assert out["zk"][0] == out["ts"][0]
    assert out["zk"][0]["fill_value"] == "0x7fc00001"  # stored bit for bit
    assert all(math.isnan(out[lib][1]) for lib in ("ts", "zk"))
    complex_fill = {"data_type": "complex64", "fill_value": ["NaN", 1], "shape": [4]}
    out = _both(tmp_path / "complex", "zarr3", metadata=complex_fill)
    assert out["zk"][0] == out["ts"][0]
    for lib in ("ts", "zk"):
        real, imag = out[lib][1]
        assert math.isnan(real) and imag == 1.0, lib


def test_keyword_fill_values_convert_as_numpy_casts_them(tmp_path):
    spec = {"driver": "zarr3", "kvstore": {"driver": "memory"}, "dtype": "bool",
            "schema": {"domain": {"shape": [2]}}}
    assert ts.open(spec, create=True, fill_value=2).result().fill_value == True  # noqa: E712
    assert zarrkit.open(spec, create=True, fill_value=2).fill_value == True  # noqa: E712


def test_schema_with_a_nan_fill_equals_itself():
    a = zarrkit.Schema({"dtype": "float32", "fill_value": "NaN"})
    b = zarrkit.Schema({"dtype": "float32", "fill_value": math.nan})
    assert a == b
    assert a != zarrkit.Schema({"dtype": "float32", "fill_value": "0x7fc00001"})


@pytest.mark.parametrize(("data_type", "fill"), [
    ("int32", 3.0), ("int32", 1e3), ("int32", 3.5), ("int32", "7"), ("uint8", -1.0),
    ("int32", True), ("bool", 1), ("float32", "0x7fc00001"), ("float32", "NaN")])
def test_zarr3_metadata_fill_values_as_tensorstore(tmp_path, data_type, fill):
    out = _both(tmp_path, "zarr3", metadata={"shape": [4], "data_type": data_type,
                                             "fill_value": fill})
    if isinstance(fill, str) and "NaN" in fill or fill == "0x7fc00001":
        assert out["zk"][0] == out["ts"][0]
    else:
        _same_or_both_refuse(out, "fill_value")


@pytest.mark.parametrize(("dtype", "fill"), [("<i4", 3.0), ("|b1", 1), ("|b1", 0), ("|b1", True),
                                             ("<i4", "7"), ("<c8", ["NaN", 1])])
def test_zarr2_metadata_fill_values_as_tensorstore(tmp_path, dtype, fill):
    out = _both(tmp_path, "zarr", metadata={"shape": [4], "chunks": [2], "dtype": dtype,
                                            "fill_value": fill})
    if isinstance(fill, list):
        assert out["zk"][0] == out["ts"][0]
    else:
        _same_or_both_refuse(out, "fill_value")


@pytest.mark.parametrize("driver", ["zarr3", "zarr"])
@pytest.mark.parametrize("dtype", ["<i4", "i4", "int32", ">u2", "float", "bool"])
def test_top_level_and_schema_dtype_take_only_tensorstore_names(tmp_path, driver, dtype):
    metadata = {"shape": [4]} if driver == "zarr3" else {"shape": [4], "chunks": [2]}
    _same_or_both_refuse(_both(tmp_path / "top", driver, dtype=dtype, metadata=metadata), "dtype")
    _same_or_both_refuse(_both(tmp_path / "schema", driver, metadata=metadata,
                               schema={"dtype": dtype}), "dtype")


@pytest.mark.parametrize("metadata", [
    {"data_type": "uint8", "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]},
    {"data_type": "uint8", "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}]},
    {"data_type": "bool", "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
                                     {"name": "bytes", "configuration": {"endian": "little"}},
                                     {"name": "zstd", "configuration": {"level": 1}}]},
    {"data_type": "int8", "codecs": [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2, 2], "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                         {"name": "crc32c"}]}}]},
    {"data_type": "uint16", "codecs": [{"name": "bytes"}]},
    {"data_type": "uint8", "dimension_names": [None, None]},
    {"data_type": "uint8", "dimension_names": ["", ""]},
    {"data_type": "uint8", "dimension_names": ["x", None]}])
def test_stored_zarr_json_normalized_as_tensorstore(tmp_path, metadata):
    out = _both(tmp_path, "zarr3", metadata={"shape": [4, 4], **metadata})
    assert out["zk"][0] == out["ts"][0]
    chunk = zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "file",
                                                         "path": str(tmp_path / "zk")}})
    chunk[...] = 1  # the normalized chain still encodes and decodes
    assert int(chunk[...].sum()) == 16


@pytest.mark.parametrize("offset", [-1, 2, 4])
def test_a_stride_zero_map_is_a_constant_map_as_tensorstore_normalizes_it(tmp_path, offset):
    import numpy as np
    kvstore = {"driver": "file", "path": str(tmp_path / "a")}
    ts.open({"driver": "zarr3", "kvstore": kvstore, "create": True, "dtype": "int32",
             "metadata": {"shape": [4, 5], "chunk_grid": {"name": "regular", "configuration":
                                                           {"chunk_shape": [2, 5]}}}},
            ).result().write(np.arange(20, dtype="int32").reshape(4, 5)).result()
    transform = {"input_inclusive_min": [0], "input_exclusive_max": [5],
                 "output": [{"input_dimension": 0, "stride": 0, "offset": offset},
                            {"input_dimension": 0}]}
    spec = {"driver": "zarr3", "kvstore": kvstore, "transform": transform}
    results = {}
    for lib in ("ts", "zk"):
        try:  # -1 is refused at open, 4 (past the resizable upper bound) at read
            opened = _open(lib, spec)
            results[lib] = (opened.read().result().tolist(), opened.spec().to_json()["transform"])
        except (ValueError, zarrkit.ZarrkitError) as exc:
            assert lib == "ts" or isinstance(exc, zarrkit.ZarrkitError), exc
            results[lib] = "refused"
    assert results["ts"] == results["zk"]
    assert results["zk"] == "refused" or results["zk"][1]["output"][0] == {"offset": offset}


@pytest.mark.parametrize("member", [{"offset": "1"}, {"stride": 1.5, "input_dimension": 0},
                                    {"offset": True}])
def test_output_map_offsets_and_strides_must_be_integers(tmp_path, member):
    transform = {"input_inclusive_min": [0], "input_exclusive_max": [5], "output": [member]}
    with pytest.raises(SpecError, match=r"output\[0\]\.(offset|stride): expected an integer"):
        zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "memory"}, "transform": transform,
                      "create": True, "dtype": "int32", "schema": {"domain": {"shape": [9]}}})

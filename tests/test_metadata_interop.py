"""zarr.json documents written by zarr-python 3 and TensorStore parse, round-trip exactly through
`to_json`, and agree with those libraries on the fill value; documents we write open in both."""

import json
import warnings

import numpy as np
import pytest

from zarrkit.metadata import (
    ArrayMetadataV3,
    GroupMetadataV3,
    json_dumps,
    json_loads,
    parse_v3_node,
)

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")


def bits(value, dtype):
    """Identity of a fill value: its bits (NaN payloads count), or its value for int4, whose
    unused high bits differ between TensorStore (sign-extended) and ml_dtypes (zero)."""
    if np.dtype(dtype).name == "int4":
        return int(np.asarray(value, dtype=dtype))
    return np.asarray(value, dtype=dtype).tobytes()


def nan_bits(dtype, pattern):
    uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]
    return np.array(pattern, dtype=uint).view(dtype)[()]


def read_doc(path):
    with open(path / "zarr.json", "rb") as f:
        return json_loads(f.read(), what=str(path))


def with_default_index_location(doc):
    """TensorStore omits the sharding codec's default "index_location": "end"; our sharding codec
    always writes it. Equal meaning, so compare modulo that one member."""
    if isinstance(doc, list):
        return [with_default_index_location(item) for item in doc]
    if not isinstance(doc, dict):
        return doc
    doc = {key: with_default_index_location(value) for key, value in doc.items()}
    if doc.get("name") == "sharding_indexed":
        doc["configuration"].setdefault("index_location", "end")
    return doc


def check_round_trip(doc, where, normalize=lambda doc: doc):
    md = parse_v3_node(doc, where=where)
    assert md.to_json() == normalize(doc)
    # and through our own JSON text
    assert parse_v3_node(json_loads(json_dumps(md.to_json()), what=where), where=where) == md
    return md


# -- zarr-python ------------------------------------------------------------------------------

ZARR_CASES = {
    **{f"dtype-{name}": {"dtype": name} for name in [
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128"]},
    "fill-nan": {"dtype": "float32", "fill_value": np.nan},
    "fill-inf": {"dtype": "float64", "fill_value": np.inf},
    "fill-neg-inf": {"dtype": "float16", "fill_value": -np.inf},
    "fill-neg-zero": {"dtype": "float32", "fill_value": -0.0},
    "fill-tenth-f4": {"dtype": "float32", "fill_value": 0.1},
    "fill-tenth-f2": {"dtype": "float16", "fill_value": 0.1},
    "fill-uint64-max": {"dtype": "uint64", "fill_value": np.uint64(2**64 - 1)},
    "fill-int64-min": {"dtype": "int64", "fill_value": -(2**63)},
    "fill-bool-true": {"dtype": "bool", "fill_value": True},
    "fill-complex-nan": {"dtype": "complex64", "fill_value": complex(1, np.nan)},
    "fill-complex-inf": {"dtype": "complex128", "fill_value": complex(-np.inf, 2)},
    "raw-bytes": {"dtype": "V3", "fill_value": b"\x01\x02\xff"},
    "raw-bytes-default": {"dtype": "V2"},
    "dimension-names": {"dtype": "int32", "dimension_names": ["x", None]},
    "attributes": {"dtype": "int32", "attributes": {"a": [1, {"b": None}], "c": "é"}},
    "v2-keys": {"dtype": "uint16", "chunk_key_encoding": {"name": "v2", "separator": "."}},
    "v2-keys-slash": {"dtype": "uint16", "chunk_key_encoding": {"name": "v2", "separator": "/"}},
    "default-keys-dot": {"dtype": "uint16",
                         "chunk_key_encoding": {"name": "default", "separator": "."}},
    "sharding": {"dtype": "float32", "shards": (4, 6)},
    "sharding-big-endian": {"dtype": "int16", "shards": (4, 6), "compressors": None,
                            "serializer": "big"},
    "codecs": {"dtype": "int16", "codecs": True},
    "gzip": {"dtype": "uint16", "compressors": "gzip"},
    "zero-length": {"dtype": "float64", "shape": (0, 6)},
}


def make_zarr_array(path, case):
    from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, TransposeCodec

    kwargs = dict(case)
    shape = kwargs.pop("shape", (8, 12))
    kwargs.setdefault("chunks", (2, 3))
    if kwargs.pop("codecs", False):
        kwargs["filters"] = [TransposeCodec(order=(1, 0))]
        kwargs["compressors"] = [BloscCodec(cname="lz4", clevel=3, shuffle="bitshuffle"),
                                 Crc32cCodec()]
    if kwargs.get("compressors") == "gzip":
        kwargs["compressors"] = [GzipCodec(level=2)]
    if kwargs.get("serializer") == "big":
        kwargs["serializer"] = BytesCodec(endian="big")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.create_array(str(path), shape=shape, zarr_format=3, **kwargs)


@pytest.mark.parametrize("case", sorted(ZARR_CASES))
def test_zarr_python_arrays(tmp_path, case):
    array = make_zarr_array(tmp_path, ZARR_CASES[case])
    doc = read_doc(tmp_path)
    md = check_round_trip(doc, where=case)
    assert isinstance(md, ArrayMetadataV3)
    assert md.shape == array.shape and md.chunk_shape == (array.shards or array.chunks)
    assert md.dtype == array.dtype.newbyteorder("=")
    assert bits(md.fill_value, md.dtype) == bits(array.fill_value, md.dtype)
    assert md.dimension_names == array.metadata.dimension_names


def test_zarr_python_groups(tmp_path):
    group = zarr.open_group(str(tmp_path / "g"), mode="w", attributes={"x": [1, 2]})
    group.create_array("a", shape=(2,), dtype="float64")
    group.create_group("sub")
    with warnings.catch_warnings():  # "consolidated metadata is not part of the v3 spec"
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(str(tmp_path / "g"))
    doc = read_doc(tmp_path / "g")
    md = check_round_trip(doc, where="g/zarr.json")
    assert isinstance(md, GroupMetadataV3)
    assert md.attributes == {"x": [1, 2]}
    assert md.extra["consolidated_metadata"]["must_understand"] is False
    check_round_trip(read_doc(tmp_path / "g" / "sub"), where="g/sub/zarr.json")
    # the consolidated copies are valid documents too
    for name, child in doc["consolidated_metadata"]["metadata"].items():
        check_round_trip(child, where=name)


# -- TensorStore ------------------------------------------------------------------------------

TS_CASES = {
    **{f"dtype-{name}": {"data_type": name} for name in [
        "bool", "int4", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]},
    "nan-f16": {"data_type": "float16", "fill_value": "NaN"},
    "nan-payload-f16": {"data_type": "float16", "fill_value": "0x7e01"},
    "nan-payload-bf16": {"data_type": "bfloat16", "fill_value": "0x7fc1"},
    "nan-negative-bf16": {"data_type": "bfloat16", "fill_value": "0xffc0"},
    "nan-payload-f32": {"data_type": "float32", "fill_value": "0x7fc00001"},
    "snan-f32": {"data_type": "float32", "fill_value": "0x7f800001"},
    "nan-negative-f64": {"data_type": "float64", "fill_value": "0xfff8000000000000"},
    "inf-f32": {"data_type": "float32", "fill_value": "Infinity"},
    "neg-inf-bf16": {"data_type": "bfloat16", "fill_value": "-Infinity"},
    "neg-zero": {"data_type": "float64", "fill_value": -0.0},
    "tenth-f32": {"data_type": "float32", "fill_value": 0.1},
    "tenth-bf16": {"data_type": "bfloat16", "fill_value": 0.1},
    "int4-min": {"data_type": "int4", "fill_value": -8},
    "uint64-max": {"data_type": "uint64", "fill_value": 2**64 - 1},
    "int64-min": {"data_type": "int64", "fill_value": -(2**63)},
    "complex-hex": {"data_type": "complex128",
                    "fill_value": ["0x7ff8000000000001", "-Infinity"]},
    "complex-nan": {"data_type": "complex64", "fill_value": [1, "NaN"]},
    "bool-true": {"data_type": "bool", "fill_value": True},
    "dimension-names": {"data_type": "int32", "dimension_names": ["x", None]},
    "dimension-units": {"data_type": "int32", "dimension_names": ["x", "y"],
                        "attributes": {"dimension_units": ["2 nm", None]}},
    "v2-keys": {"data_type": "uint16", "chunk_key_encoding": {"name": "v2"}},
    "v2-keys-slash": {"data_type": "uint16",
                      "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}}},
    "default-keys-dot": {"data_type": "uint16", "chunk_key_encoding": {
        "name": "default", "configuration": {"separator": "."}}},
    "sharding": {"data_type": "bfloat16", "sharded": True},
    "codecs": {"data_type": "int16", "codecs": [
        {"name": "transpose", "configuration": {"order": [1, 0]}},
        {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "gzip", "configuration": {"level": 3}}, {"name": "crc32c"}]},
    "blosc": {"data_type": "float32", "codecs": [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 4,
                                            "shuffle": "shuffle", "typesize": 4}}]},
    "zstd": {"data_type": "uint8", "codecs": ["bytes", {"name": "zstd",
                                                        "configuration": {"level": 2}}]},
    "zero-length": {"data_type": "float64", "shape": [0, 6]},
}


def make_ts_array(path, case):
    metadata = dict(case)
    sharded = metadata.pop("sharded", False)
    metadata.setdefault("shape", [8, 12])
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)},
            "metadata": metadata}
    layout = {}
    if sharded:
        layout = {"chunk_layout": ts.ChunkLayout(read_chunk_shape=[2, 3],
                                                 write_chunk_shape=[4, 6])}
    else:
        metadata["chunk_grid"] = {"name": "regular", "configuration": {"chunk_shape": [2, 3]}}
    return ts.open(spec, create=True, **layout).result()


@pytest.mark.parametrize("case", sorted(TS_CASES))
def test_tensorstore_arrays(tmp_path, case):
    store = make_ts_array(tmp_path, TS_CASES[case])
    doc = read_doc(tmp_path)
    md = check_round_trip(doc, where=case, normalize=with_default_index_location)
    assert md.shape == tuple(store.shape)
    assert md.dtype == store.dtype.numpy_dtype
    assert bits(md.fill_value, md.dtype) == bits(store.fill_value, md.dtype)


def test_tensorstore_raw_fill_values_are_read(tmp_path):
    # TensorStore reads (and would write) raw fill values as base64, not the spec's byte list.
    doc = {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "r16",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": "AQI=",
           "codecs": [{"name": "bytes"}]}
    (tmp_path / "zarr.json").write_bytes(json_dumps(doc))
    store = ts.open({"driver": "zarr3",
                     "kvstore": {"driver": "file", "path": str(tmp_path)}}).result()
    md = ArrayMetadataV3.from_json(read_doc(tmp_path), where="raw")
    assert bytes(md.fill_value) == b"\x01\x02"
    assert store.dtype.numpy_dtype == np.uint8 or store.dtype.name == "byte"


# -- documents we write open in both libraries ------------------------------------------------

OURS = [
    ("bool", True), ("int8", -128), ("uint64", 2**64 - 1), ("int64", -(2**63)),
    ("float16", nan_bits(np.float16, 0x7E01)), ("float32", nan_bits(np.float32, 0x7F800001)),
    ("float64", nan_bits(np.float64, 0xFFF8000000000000)), ("float32", np.inf),
    ("float64", -0.0), ("float32", 0.1), ("complex64", complex(np.nan, -np.inf)),
    ("complex128", complex(1.5, -0.0)), ("bfloat16", nan_bits("bfloat16", 0x7FC1)),
    ("int4", -8), ("uint16", 7),
]


def write_ours(path, data_type, fill, **kwargs):
    md = ArrayMetadataV3.create((8, 12), data_type, (2, 3), fill_value=fill,
                                dimension_names=["y", None], attributes={"k": "v"}, **kwargs)
    path.mkdir(parents=True, exist_ok=True)
    (path / "zarr.json").write_bytes(json_dumps(md.to_json()))
    return md


@pytest.mark.parametrize("data_type, fill", OURS, ids=[f"{d}-{i}" for i, (d, _) in enumerate(OURS)])
def test_tensorstore_opens_our_documents(tmp_path, data_type, fill):
    md = write_ours(tmp_path, data_type, fill)
    store = ts.open({"driver": "zarr3",
                     "kvstore": {"driver": "file", "path": str(tmp_path)}}).result()
    assert store.dtype.numpy_dtype == md.dtype
    assert bits(store.fill_value, md.dtype) == bits(md.fill_value, md.dtype)
    assert list(store.domain.labels) == ["y", ""]


@pytest.mark.parametrize("data_type, fill", [c for c in OURS if c[0] not in ("bfloat16", "int4")])
def test_zarr_python_opens_our_documents(tmp_path, data_type, fill):
    md = write_ours(tmp_path, data_type, fill, chunk_key_encoding="v2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        array = zarr.open_array(str(tmp_path), mode="r")
    assert array.dtype == md.dtype
    expected, actual = np.asarray(md.fill_value), np.asarray(array.fill_value, dtype=md.dtype)
    if np.isnan(expected).any():  # zarr-python keeps NaN-ness, not NaN payloads
        assert np.array_equal(np.isnan(actual.view(actual.dtype)), np.isnan(expected))
    else:
        assert actual.tobytes() == expected.tobytes()
    assert array.attrs.asdict() == {"k": "v"}


def test_raw_bytes_documents_we_write_open_in_zarr_python(tmp_path):
    md = write_ours(tmp_path, "r16", None)
    raw_bytes = ArrayMetadataV3.from_json(
        dict(md.to_json(), data_type={"name": "raw_bytes", "configuration": {"length_bytes": 2}},
             fill_value="AQI="), where="raw")
    (tmp_path / "zarr.json").write_bytes(json_dumps(raw_bytes.to_json()))
    array = zarr.open_array(str(tmp_path), mode="r")
    assert array.dtype == np.dtype("V2")
    assert bytes(array.fill_value) == b"\x01\x02"
    assert json.loads((tmp_path / "zarr.json").read_text())["fill_value"] == "AQI="

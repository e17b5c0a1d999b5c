"""Zarr v2 metadata: data types, fill values, .zarray validation and the errors bad input gets."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import CodecError, DataTypeError, MetadataError
from zarrkit.kvstore.memory import MemoryStore
from zarrkit.metadata.json import json_dumps
from zarrkit.metadata.v2 import ArrayMetadataV2
from zarrkit.metadata.v2_dtype import DataTypeV2

SIMPLE = ["|b1", "|i1", "<i2", ">i2", "<i4", ">i4", "<i8", ">i8", "|u1", "<u2", ">u2", "<u4",
          ">u4", "<u8", ">u8", "<f2", ">f2", "<f4", ">f4", "<f8", ">f8", "<c8", ">c8", "<c16",
          ">c16", "<M8[ns]", ">M8[s]", "<M8[D]", "<m8[us]", ">m8[h]", "<M8[10ms]", "|S1", "|S12",
          "<U1", ">U7", "|V3", "|O", "bfloat16", "int4", "float8_e4m3fn"]
STRUCTURED = [
    [["r", "|u1"], ["g", "|u1"], ["b", "|u1"]],
    [["x", "<f4"], ["y", "<f4"], ["z", "<f4", [2, 2]]],
    [["foo", "<f4"], ["bar", [["baz", "<f4"], ["qux", ">i4", [3]]]]],
    [["a", ">i8"], ["", "|V4"], ["b", "|S3"]],  # NumPy's spelling of padding
]


def zarray(**members):
    doc = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<i4", "compressor": None,
           "fill_value": 0, "order": "C", "filters": None}
    doc.update(members)
    return {k: v for k, v in doc.items() if v is not ...}


@pytest.mark.parametrize("typestr", SIMPLE + STRUCTURED, ids=str)
def test_dtype_round_trip(typestr):
    data_type = DataTypeV2.from_json(typestr, where="dtype")
    assert data_type.to_json() == typestr
    assert DataTypeV2.from_numpy(data_type.stored).to_json() == typestr
    assert data_type.dtype.isnative or data_type.dtype.hasobject or \
        data_type.dtype.names is not None
    fill = data_type.default_fill_value()
    encoded = data_type.fill_value_to_json(fill)
    json.dumps(encoded, allow_nan=False)  # always valid JSON
    again = data_type.parse_fill_value(encoded)
    if data_type.kind == "struct":  # padding bytes are not part of the value
        assert again == fill
    else:
        assert np.asarray(again, data_type.dtype).tobytes() == \
            np.asarray(fill, data_type.dtype).tobytes()


def test_byte_order_is_kept_but_values_are_native():
    data_type = DataTypeV2.from_json(">f8")
    assert data_type.stored == np.dtype(">f8") and data_type.dtype == np.dtype("<f8")
    nested = DataTypeV2.from_json([["a", ">i4"], ["b", [["c", ">u2", [2]]]]])
    assert nested.dtype == np.dtype([("a", "<i4"), ("b", [("c", "<u2", (2,))])])


@pytest.mark.parametrize("value", ["f8", "|i4", "<M8", "<m8", "<i3", "<f16", "|S0", "<U0",
                                   "|O4", "i", 5, [], [["a", "<i4"], ["a", "<i4"]],
                                   [["a", "<i4", [0]]], [["a", "|O"]], [["", "<i4"]],
                                   "<f4[s]", None])
def test_invalid_dtypes(value):
    with pytest.raises(DataTypeError):
        DataTypeV2.from_json(value)


@pytest.mark.parametrize("typestr, json_value, expected", [
    ("<f8", "NaN", math.nan), ("<f4", "Infinity", math.inf), (">f2", "-Infinity", -math.inf),
    ("<f8", -0.0, -0.0), ("<f8", 1e300, 1e300), ("<f4", 0.1, np.float32(0.1)),
    ("<i8", -2**63, -2**63), (">u8", 2**64 - 1, 2**64 - 1), ("|b1", True, True),
    ("<c16", [1.5, "NaN"], complex(1.5, math.nan)), ("<c8", ["-Infinity", 2], complex(-math.inf, 2)),
])
def test_numeric_fill_values(typestr, json_value, expected):
    data_type = DataTypeV2.from_json(typestr)
    value = data_type.parse_fill_value(json_value)
    np.testing.assert_array_equal(np.asarray(value), np.asarray(expected, data_type.dtype))
    again = data_type.parse_fill_value(data_type.fill_value_to_json(value))
    assert np.asarray(again).tobytes() == np.asarray(value).tobytes()


@pytest.mark.parametrize("typestr, json_value, expected", [
    ("|S5", "YWI=", b"ab"), ("|S2", "", b""), ("|V2", "AAE=", np.void(b"\x00\x01")),
    ("<U3", "xy", "xy"), ("|O", "", ""), ("|O", None, None),
    ("<M8[ns]", -2**63, np.datetime64("NaT", "ns")), ("<M8[ns]", "NaT", np.datetime64("NaT", "ns")),
    ("<m8[s]", 5, np.timedelta64(5, "s")), ("<M8[D]", 1, np.datetime64("1970-01-02")),
])
def test_other_fill_values(typestr, json_value, expected):
    data_type = DataTypeV2.from_json(typestr)
    value = data_type.parse_fill_value(json_value)
    if isinstance(expected, np.datetime64) and np.isnat(expected):
        assert np.isnat(value)
    elif expected is None:
        assert value is None
    else:
        assert value == expected


def test_structured_fill_value_is_base64_of_the_stored_bytes():
    data_type = DataTypeV2.from_json([["a", ">i4"], ["b", "<f8", [2]]])
    value = np.array([(1, [2.0, 3.0])], data_type.dtype)[0]
    encoded = data_type.fill_value_to_json(value)
    stored = np.array([(1, [2.0, 3.0])], data_type.stored).tobytes()
    assert encoded == __import__("base64").b64encode(stored).decode()
    assert data_type.parse_fill_value(encoded) == value
    with pytest.raises(DataTypeError, match="bytes"):
        data_type.parse_fill_value("AAAA")  # exactly itemsize bytes are required


@pytest.mark.parametrize("typestr, bad", [
    ("<i4", 1.5), ("<i4", "1"), ("|u1", 256), ("|i1", -129), ("|b1", "true"), ("<f8", "nan"),
    ("<f8", "0x7ff8000000000000"), ("<c8", 1.0), ("|S2", "not base64!"), ("|S2", "YWJj"),
    ("<U2", "abc"), ("<M8[s]", 1.5), ("<M8[s]", 2**63),
])
def test_invalid_fill_values(typestr, bad):
    with pytest.raises(DataTypeError):
        DataTypeV2.from_json(typestr).parse_fill_value(bad)


def test_nan_payloads_are_written_as_NaN_never_invalid_json():
    data_type = DataTypeV2.from_json("<f8")
    payload = np.array(0x7FF8000000000001, np.uint64).view(np.float64)[()]
    assert data_type.fill_value_to_json(payload) == "NaN"
    md = ArrayMetadataV2.from_json(zarray(dtype="<f4", fill_value="Infinity"))
    text = json_dumps(md.to_json()).decode()
    assert '"Infinity"' in text and "NaN" not in text
    json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c}"))


def test_zarray_round_trips_unknown_members_and_absent_separator():
    doc = zarray(dimension_separator=..., custom={"x": 1})
    md = ArrayMetadataV2.from_json(doc)
    assert md.to_json() == doc
    assert md.chunk_key_encoding.encode((1, 2)) == "1.2"
    assert ArrayMetadataV2.from_json(zarray(dimension_separator="/")).chunk_key_encoding.encode(
        (1, 2)) == "1/2"


@pytest.mark.parametrize("change, message", [
    ({"zarr_format": 3}, "zarr_format: expected 2"),
    ({"shape": ...}, "missing required member"),
    ({"filters": ...}, "filters"),
    ({"shape": [4, 4]}, "chunks .* has 1 dimensions, shape .* has 2"),
    ({"chunks": [0]}, "chunks: expected a list of positive integers"),
    ({"shape": [-1]}, "shape"),
    ({"shape": "4"}, "shape"),
    ({"order": "X"}, "order"),
    ({"dimension_separator": "-"}, "dimension_separator"),
    ({"dtype": "<i3"}, "dtype"),
    ({"fill_value": "zero"}, "fill_value"),
    ({"compressor": {"level": 1}}, "compressor.*id"),
    ({"compressor": {"id": "nonexistent"}}, "unsupported codec id 'nonexistent'"),
    ({"filters": [{"id": "foo-filter"}]}, "filters\\[0\\]: unsupported codec id 'foo-filter'"),
    ({"filters": {"id": "zlib"}}, "filters: expected a list"),
    ({"compressor": {"id": "zlib", "bogus": 1}}, "codec 'zlib': invalid configuration"),
    ({"compressor": {"id": "blosc", "cname": "snappy-ish"}}, "cname"),
    ({"dtype": "|O"}, "object codec"),
    ({"compressor": {"id": "pickle"}}, "pickle"),
])
def test_malformed_zarray(change, message):
    with pytest.raises(MetadataError, match=message):
        ArrayMetadataV2.from_json(zarray(**change), where="a/.zarray")


def test_errors_name_the_key_when_opening():
    store = MemoryStore()
    store.set("x/.zarray", json.dumps(zarray(compressor={"id": "brotli-9000"})).encode())
    with pytest.raises(CodecError, match=r"x/\.zarray: compressor: unsupported codec id "
                                         r"'brotli-9000'"):
        zarrkit.open(store, mode="r", path="x")
    store.set("y/.zarray", b"{not json")
    with pytest.raises(MetadataError, match=r"y/\.zarray: malformed JSON"):
        zarrkit.open(store, mode="r", path="y")
    store.set("z/.zarray", json.dumps(zarray(shape=[4, 4], chunks=[2])).encode())
    with pytest.raises(MetadataError, match="chunks"):
        zarrkit.open(store, mode="r", path="z")


def test_unrepresentable_dtypes_are_refused_on_create():
    for dtype in [np.dtype("M8"), np.longdouble if np.dtype(np.longdouble).itemsize > 8 else "M8"]:
        with pytest.raises(DataTypeError):
            zarrkit.create(MemoryStore(), shape=(2,), dtype=dtype, zarr_format=2)


def test_v3_only_keywords_are_refused_for_v2():
    with pytest.raises(MetadataError, match="shards"):
        zarrkit.create(MemoryStore(), shape=(4,), chunks=(2,), shards=(4,), zarr_format=2)
    with pytest.raises(CodecError, match="\"id\""):
        zarrkit.create(MemoryStore(), shape=(4,), zarr_format=2, compressor={"name": "zstd"})


def test_chunk_of_the_wrong_size_is_an_error_naming_it():
    store = MemoryStore()
    store.set("a/.zarray", json.dumps(zarray(shape=[4, 4], chunks=[2, 2])).encode())
    store.set("a/0.0", np.arange(3, dtype="<i4").tobytes())  # 12 bytes, a chunk has 16
    with pytest.raises(zarrkit.CorruptDataError, match=r"'a/0\.0'.*12 bytes.*16"):
        zarrkit.open(store, mode="r", path="a")[...]


def test_info_describes_v2_arrays():
    a = zarrkit.create(MemoryStore(), shape=(4,), dtype=">u2", zarr_format=2,
                       filters=[{"id": "delta", "dtype": ">u2"}], compressor={"id": "zlib"})
    rows = dict(a.info.rows())
    assert rows["Zarr format"] == "2" and rows["Data type"] == ">u2"
    assert rows["Codecs"] == "delta, zlib"


# -- found in review -------------------------------------------------------------------------


def test_text_fill_value_of_fixed_length_bytes_is_the_text_not_base64():
    """zarr-python (and NumPy) take fill_value="abcd" for '|S4' as b"abcd"; it was decoded as
    base64 into b'i\\xb7\\x1d' (and "ab" was refused as invalid base64)."""
    store = MemoryStore()
    a = zarrkit.create(store, shape=(3,), chunks=(2,), dtype="S4", fill_value="abcd",
                       zarr_format=2)
    assert a.fill_value == b"abcd" and a[...].tolist() == [b"abcd"] * 3
    assert json.loads(store.get(".zarray"))["fill_value"] == "YWJjZA=="
    b = zarrkit.create(MemoryStore(), shape=(2,), dtype="S3", fill_value="ab", zarr_format=2)
    assert b[...].tolist() == [b"ab", b"ab"]


@pytest.mark.parametrize("dtype", [
    [["a", "<i4", [2**40]]], [["a", "<i4", [2**20, 2**20, 2**20]]],
    [["a", "|V2000000000"], ["b", "|V2000000000"]]], ids=str)
def test_structured_dtypes_too_large_for_numpy_are_data_type_errors(dtype):
    """NumPy's ValueError ("does not fit into a C int") escaped from opening the array."""
    with pytest.raises(DataTypeError, match=r"dtype"):
        ArrayMetadataV2.from_json(zarray(dtype=dtype, fill_value=None))


@pytest.mark.parametrize("compressor, filters", [
    ({"id": "zlib", "level": 99}, None), ({"id": "bz2", "level": 0}, None),
    ({"id": "blosc", "shuffle": 7}, None), ({"id": "lz4", "acceleration": "x"}, None),
    (None, [{"id": "fixedscaleoffset", "offset": 0, "scale": "a", "dtype": "<i4"}]),
], ids=str)
def test_codec_failing_to_encode_is_a_codec_error_naming_it(compressor, filters):
    """numcodecs checks some settings only when encoding: zlib.error, ValueError or TypeError
    escaped from the write of an array another tool made (creation refuses the compressors)."""
    store = MemoryStore()
    store.set(".zarray", json_dumps(zarray(compressor=compressor, filters=filters)))
    a = zarrkit.open_array(store, mode="r+")
    name = (filters or [compressor])[0]["id"]
    with pytest.raises(CodecError, match=f"'{name}'.*cannot encode"):
        a[...] = np.arange(4)
    if compressor is not None:
        with pytest.raises(CodecError, match=f"'{name}'.*cannot encode"):
            zarrkit.create(MemoryStore(), shape=(4,), chunks=(2,), dtype="<i4", zarr_format=2,
                           compressor=compressor)


def test_non_strings_in_a_string_array_are_a_codec_error():
    a = zarrkit.create(MemoryStore(), shape=(2,), dtype=str, zarr_format=2)
    with pytest.raises(CodecError, match=r"'vlen-utf8' cannot store 1 \(int\) at 1"):
        a[...] = np.arange(2)


def test_null_fill_value_of_datetimes_reads_as_nat():
    """zarr-python reads a missing chunk of a '<M8'/'<m8' array with fill_value null as NaT
    (its default); zarrkit read 1970-01-01 / 0, a valid-looking value."""
    for typestr in ("<M8[s]", ">m8[ms]"):
        md = ArrayMetadataV2.from_json(zarray(dtype=typestr, fill_value=None))
        assert md.fill_value is None and np.isnat(md.effective_fill_value)
    md = ArrayMetadataV2.from_json(zarray(dtype="<i4", fill_value=None))
    assert md.effective_fill_value == 0


def test_vlen_bytes_fill_value_is_base64():
    """zarr-python 3 writes a vlen-bytes fill value in base64 ("eA==" for b"x"); zarrkit read
    it as the bytes b"eA==" and could not write a bytes fill value at all (not JSON)."""
    doc = zarray(dtype="|O", filters=[{"id": "vlen-bytes"}], fill_value="eA==")
    md = ArrayMetadataV2.from_json(doc)
    assert md.effective_fill_value == b"x" and md.to_json()["fill_value"] == "eA=="
    store = MemoryStore()
    a = zarrkit.create(store, shape=(2,), chunks=(1,), dtype=bytes, fill_value=b"\x00\xff",
                       zarr_format=2)
    assert json.loads(store.get(".zarray"))["fill_value"] == "AP8="
    assert zarrkit.open(store, mode="r")[...].tolist() == [b"\x00\xff"] * 2
    a[0] = b"y"
    assert zarrkit.open(store, mode="r")[...].tolist() == [b"y", b"\x00\xff"]

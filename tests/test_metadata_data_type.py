"""metadata.data_type: v3 data type identifiers and exact fill values (data-types.rst)."""

import json
import math
import struct

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrkit.errors import DataTypeError, MetadataError
from zarrkit.metadata import DataType, json_dumps, json_loads
from zarrkit.metadata.data_type import float_bits, round_to_float

CORE = {
    "bool": np.bool_, "int4": ml_dtypes.int4, "int8": np.int8, "int16": np.int16,
    "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16,
    "uint32": np.uint32, "uint64": np.uint64, "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64,
    "complex64": np.complex64, "complex128": np.complex128,
}
FLOATS = ["float16", "bfloat16", "float32", "float64"]
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def dt(name):
    return DataType.from_json(name)


def bits_of(scalar):
    """The stored bytes of a scalar: exact identity, NaN payloads included."""
    return np.asarray(scalar).tobytes()


def from_bits(bits, dtype):
    dtype = np.dtype(dtype)
    return np.array(bits, dtype=UINT[dtype.itemsize]).view(dtype)[()]


# -- identifiers ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CORE))
def test_core_data_types(name):
    data_type = dt(name)
    assert data_type.name == name
    assert data_type.dtype == np.dtype(CORE[name])
    assert data_type.dtype.isnative
    assert data_type.item_size == np.dtype(CORE[name]).itemsize
    assert data_type.to_json() == name
    assert DataType.from_json({"name": name}) == data_type


@pytest.mark.parametrize("name, size", [("r8", 1), ("r16", 2), ("r24", 3), ("r2048", 256)])
def test_raw_data_types(name, size):
    data_type = dt(name)
    assert data_type.dtype == np.dtype(f"V{size}")
    assert data_type.item_size == size
    assert data_type.kind == "raw"
    assert data_type.to_json() == name


@pytest.mark.parametrize("name", ["r0", "r7", "r12", "r08", "r", "R8", "r-8", "r8 ", "r1.0"])
def test_invalid_raw_names(name):
    with pytest.raises(DataTypeError, match=r"data_type: .*" + name[:2]):
        dt(name)


@pytest.mark.parametrize("value", [
    "float128", "str", "Float32", "int", "", "uint4", "float8_e4m3", "float6_e2m3fn",
    {"name": "urn:example:datetime", "configuration": {"unit": "ns"}},
    {"name": "custom", "must_understand": False},
])
def test_unknown_data_types_are_refused_naming_them(value):
    name = value if isinstance(value, str) else value["name"]
    with pytest.raises(DataTypeError, match=f"a/zarr.json: data_type: .*{name}"):
        DataType.from_json(value, where="a/zarr.json: data_type")


@pytest.mark.parametrize("value", [5, None, ["float32"], True, {"configuration": {}},
                                   {"name": 3}, {"name": "float32", "configuration": []},
                                   {"name": "float32", "configuration": {"x": 1}},
                                   {"name": "float32", "extra": 1}])
def test_malformed_data_type_values(value):
    with pytest.raises(DataTypeError, match="data_type"):
        DataType.from_json(value)


def test_data_type_error_is_a_metadata_error():
    with pytest.raises(MetadataError):
        dt("nope")


def test_raw_bytes_extension_as_written_by_zarr_python():
    value = {"name": "raw_bytes", "configuration": {"length_bytes": 3}}
    data_type = DataType.from_json(value)
    assert data_type.dtype == np.dtype("V3") and data_type.kind == "raw"
    assert data_type.to_json() == value
    assert data_type != dt("r24")


@pytest.mark.parametrize("config", [{}, {"length_bytes": 0}, {"length_bytes": "2"},
                                    {"length_bytes": 2, "x": 1}, {"length_bytes": True}])
def test_raw_bytes_extension_needs_a_positive_length(config):
    with pytest.raises(DataTypeError, match="length_bytes"):
        DataType.from_json({"name": "raw_bytes", "configuration": config})


@pytest.mark.parametrize("dtype_like, name", [
    (np.dtype("uint16"), "uint16"), ("uint16", "uint16"), ("<f4", "float32"), (">i8", "int64"),
    (">c16", "complex128"), ("|b1", "bool"), (bool, "bool"), (int, "int64"), (float, "float64"),
    (complex, "complex128"), ("q", "int64"), ("V3", "r24"), (np.dtype("V1"), "r8"),
    (ml_dtypes.bfloat16, "bfloat16"), (ml_dtypes.int4, "int4"), ("bfloat16", "bfloat16"),
    (np.float16, "float16"), (np.dtype(">u8"), "uint64"),
])
def test_from_numpy(dtype_like, name):
    data_type = DataType.from_numpy(dtype_like)
    assert data_type.name == name
    assert data_type.dtype.isnative


@pytest.mark.parametrize("dtype_like", [
    [("a", "i4", (2,))], "(2,)i4", np.longdouble,
    ml_dtypes.float8_e4m3, ml_dtypes.uint4, None, "nonsense",
])
def test_from_numpy_refuses_types_without_v3_equivalent(dtype_like):
    with pytest.raises(DataTypeError):
        DataType.from_numpy(dtype_like)


def test_parse_accepts_every_spelling():
    assert DataType.parse("r16") == DataType.parse("V2") == DataType.parse(np.dtype("V2"))
    assert DataType.parse("float32") == DataType.parse("<f4") == DataType.parse(np.float32)
    assert DataType.parse(dt("int8")) == dt("int8")
    with pytest.raises(DataTypeError, match="multiple of 8"):
        DataType.parse("r12")


def test_constructor_refuses_mismatched_name_and_dtype():
    with pytest.raises(DataTypeError):
        DataType("float32", np.dtype("float64"))
    with pytest.raises(DataTypeError):
        DataType("nope", np.dtype("float64"))


def test_data_types_are_hashable_and_comparable():
    assert len({dt("int8"), dt("int8"), DataType.from_numpy("i1"), dt("uint8")}) == 2


# -- default fill values ----------------------------------------------------------------------


@pytest.mark.parametrize("name, expected", [
    ("bool", False), ("int4", 0), ("int8", 0), ("uint64", 0), ("float16", 0.0),
    ("bfloat16", 0.0), ("float64", 0.0), ("complex64", [0.0, 0.0]), ("r24", [0, 0, 0]),
])
def test_default_fill_value(name, expected):
    data_type = dt(name)
    fill = data_type.default_fill_value()
    assert np.asarray(fill).dtype == data_type.dtype
    assert not np.asarray(fill).tobytes().strip(b"\0")  # all-zero bits: +0.0, not -0.0
    out = data_type.fill_value_to_json(fill)
    assert out == expected and type(out) is type(expected)


# -- bool and integer fill values -------------------------------------------------------------


def test_bool_fill_values():
    assert dt("bool").parse_fill_value(True) is np.True_
    assert dt("bool").parse_fill_value(False) is np.False_
    assert dt("bool").fill_value_to_json(np.True_) is True


@pytest.mark.parametrize("value", [0, 1, "true", None, [True], 0.0])
def test_bool_fill_value_must_be_a_json_boolean(value):
    with pytest.raises(DataTypeError, match="^f: expected true or false"):
        dt("bool").parse_fill_value(value, where="f")


INT_RANGES = {"int4": (-8, 7), "int8": (-128, 127), "int16": (-(2**15), 2**15 - 1),
              "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1),
              "uint8": (0, 255), "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1),
              "uint64": (0, 2**64 - 1)}


@pytest.mark.parametrize("name", sorted(INT_RANGES))
def test_integer_fill_value_range_is_exact(name):
    low, high = INT_RANGES[name]
    data_type = dt(name)
    for value in (low, high, 0, 1 if high else 0):
        fill = data_type.parse_fill_value(value)
        assert np.asarray(fill).dtype == data_type.dtype
        out = data_type.fill_value_to_json(fill)
        assert out == value and type(out) is int
    for value in (low - 1, high + 1):
        with pytest.raises(DataTypeError, match=rf"fill_value: {value} is out of range"):
            data_type.parse_fill_value(value)


def test_uint64_max_and_int64_min_survive_json():
    for name, value in [("uint64", 2**64 - 1), ("int64", -(2**63)), ("int64", 2**53 + 1)]:
        data_type = dt(name)
        text = json_dumps({"fill_value": data_type.fill_value_to_json(
            data_type.parse_fill_value(value))})
        assert json_loads(text, what="k")["fill_value"] == value
        assert str(value).encode() in text


@pytest.mark.parametrize("value", [1.0, 1.5, True, False, "1", None, [1], "0x01"])
def test_integer_fill_value_must_be_a_json_integer(value):
    with pytest.raises(DataTypeError, match="^a: fill_value: expected an integer for int32"):
        dt("int32").parse_fill_value(value, where="a: fill_value")


# -- float fill values ------------------------------------------------------------------------

CANONICAL_NAN = {"float16": 0x7E00, "bfloat16": 0x7FC0, "float32": 0x7FC00000,
                 "float64": 0x7FF8000000000000}


@pytest.mark.parametrize("name", FLOATS)
def test_float_special_strings(name):
    data_type = dt(name)
    nan = data_type.parse_fill_value("NaN")
    assert float_bits(nan, data_type.dtype) == CANONICAL_NAN[name]
    assert data_type.fill_value_to_json(nan) == "NaN"
    assert data_type.parse_fill_value("Infinity") == np.inf
    assert data_type.parse_fill_value("-Infinity") == -np.inf
    assert data_type.fill_value_to_json(data_type.parse_fill_value("Infinity")) == "Infinity"
    assert data_type.fill_value_to_json(data_type.parse_fill_value("-Infinity")) == "-Infinity"


@pytest.mark.parametrize("name, hex_value", [
    ("float16", "0x7e01"), ("float16", "0xfe00"), ("float16", "0x7c01"),
    ("bfloat16", "0x7fc1"), ("bfloat16", "0xffc0"), ("bfloat16", "0x7f81"),
    ("float32", "0x7fc00001"), ("float32", "0xffc00000"), ("float32", "0x7f800001"),
    ("float64", "0x7ff8000000000001"), ("float64", "0xfff8000000000000"),
    ("float64", "0x7ff0000000000001"),
])
def test_nan_payloads_round_trip_exactly(name, hex_value):
    data_type = dt(name)
    fill = data_type.parse_fill_value(hex_value)
    assert float_bits(fill, data_type.dtype) == int(hex_value, 16)
    assert data_type.fill_value_to_json(fill) == hex_value


@pytest.mark.parametrize("name, hex_value, expected", [
    ("float32", "0x3f800000", 1.0), ("float32", "0x80000000", -0.0),
    ("float64", "0x3ff0000000000000", 1.0), ("float16", "0x3C00", 1.0),
    ("bfloat16", "0x3f80", 1.0), ("float32", "0x7f800000", "Infinity"),
])
def test_hex_fill_values_for_ordinary_values_write_back_as_numbers(name, hex_value, expected):
    data_type = dt(name)
    out = data_type.fill_value_to_json(data_type.parse_fill_value(hex_value))
    assert out == expected
    if expected == -0.0:
        assert math.copysign(1, out) == -1


@pytest.mark.parametrize("name, value", [
    ("float32", "0x7fc0"), ("float32", "0x7fc000000"), ("float16", "0x7e00ff"),
    ("float64", "0x7ff80000"), ("float32", "0X7fc00000"), ("float32", "7fc00000"),
    ("float32", "0x7fc0000g"), ("float32", "nan"), ("float32", "inf"), ("float32", "+Infinity"),
    ("float32", "-NaN"), ("float32", "1.5"), ("float32", ""), ("float32", None),
    ("float32", True), ("float32", [1.0]), ("bfloat16", "0x7fc00000"),
])
def test_invalid_float_fill_values(name, value):
    with pytest.raises(DataTypeError, match=r"^z\.json: fill_value: "):
        dt(name).parse_fill_value(value, where="z.json: fill_value")


def test_negative_zero_keeps_its_sign():
    for name in FLOATS:
        data_type = dt(name)
        fill = data_type.parse_fill_value(-0.0)
        assert np.signbit(np.asarray(fill, dtype=np.float64 if name == "bfloat16" else None))
        out = data_type.fill_value_to_json(fill)
        assert out == 0.0 and math.copysign(1.0, out) == -1.0
        assert b"-0.0" in json_dumps(out)


@pytest.mark.parametrize("name, value, expected", [
    ("float32", 0.1, 0.10000000149011612),
    ("float32", 16777217, 16777216.0),  # ties to even
    ("float32", 1e40, "Infinity"), ("float32", -1e40, "-Infinity"),
    ("float32", 1e-46, 0.0), ("float32", 1e-45, 1.401298464324817e-45),
    ("float16", 65520, "Infinity"), ("float16", 65519.99, 65504.0),
    ("float16", 0.1, 0.0999755859375), ("float16", 2**-25, 0.0),  # tie to even -> 0
    ("float16", 2**-25 + 2**-40, 2**-24),
    ("bfloat16", 1.00390625, 1.0),  # exact tie -> even
    ("bfloat16", 1.01171875, 1.015625),  # exact tie -> even
    # Just above the tie: the nearest value is 1.0078125. A cast via float32 would round twice
    # and give 1.0 (TensorStore and ml_dtypes do), the spec asks for the nearest value.
    ("bfloat16", 1.0039062500000002, 1.0078125),
    ("bfloat16", 1e39, "Infinity"), ("bfloat16", 0.1, 0.10009765625),
    ("float64", 2**53 + 1, float(2**53)), ("float64", 10**400, "Infinity"),
    ("float64", -(10**400), "-Infinity"), ("float64", 5e-324, 5e-324),
    ("float64", 1e300, 1e300), ("float32", 3, 3.0),
])
def test_numbers_round_to_nearest(name, value, expected):
    assert dt(name).fill_value_to_json(dt(name).parse_fill_value(value)) == expected


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(["float16", "float32"]))
def test_rounding_matches_numpys_correctly_rounded_casts(value, name):
    # numpy's float64 -> float16/float32 casts are correctly rounded (one IEEE rounding).
    with np.errstate(over="ignore"):
        expected = np.float64(value).astype(name)
    assert bits_of(round_to_float(value, np.dtype(name))) == bits_of(expected)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=-(2**80), max_value=2**80))
def test_large_integers_round_once_to_float64(value):
    # Python's int -> float conversion is correctly rounded.
    assert bits_of(dt("float64").parse_fill_value(value)) == bits_of(np.float64(float(value)))


def test_float32_value_written_by_other_libraries_reads_back_exactly():
    # zarr-python and TensorStore write a float32 fill as the float64 repr of its value.
    fill = dt("float32").parse_fill_value(0.10000000149011612)
    assert fill == np.float32(0.1)


# -- complex fill values ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["complex64", "complex128"])
def test_complex_fill_values(name):
    data_type = dt(name)
    assert data_type.parse_fill_value([1, 2]) == complex(1, 2)
    for value in (["-Infinity", "NaN"], [1.5, "Infinity"], [-0.0, 0.0], ["NaN", "NaN"]):
        assert data_type.fill_value_to_json(data_type.parse_fill_value(value)) == value
    part_hex = "0x7fc00001" if name == "complex64" else "0x7ff8000000000001"
    fill = data_type.parse_fill_value([part_hex, 2.5])
    assert data_type.fill_value_to_json(fill) == [part_hex, 2.5]


@pytest.mark.parametrize("value, field", [
    ([1], "fill_value"), ([1, 2, 3], "fill_value"), (1.0, "fill_value"), ("NaN", "fill_value"),
    ((1, 2), "fill_value"), ([1, "nan"], r"fill_value\[1\]"), (["0x7fc0", 0], r"fill_value\[0\]"),
    ([None, 0], r"fill_value\[0\]"),
])
def test_invalid_complex_fill_values_name_the_component(value, field):
    with pytest.raises(DataTypeError, match=f"^{field}: "):
        dt("complex64").parse_fill_value(value)


# -- raw fill values --------------------------------------------------------------------------


def test_raw_fill_values():
    data_type = dt("r24")
    fill = data_type.parse_fill_value([1, 2, 255])
    assert isinstance(fill, np.void) and fill.dtype == np.dtype("V3")
    assert bytes(fill) == b"\x01\x02\xff"
    assert data_type.fill_value_to_json(fill) == [1, 2, 255]


def test_raw_fill_value_accepts_base64_as_tensorstore_and_zarr_python_write_it():
    assert bytes(dt("r16").parse_fill_value("AQI=")) == b"\x01\x02"
    raw_bytes = DataType.from_json({"name": "raw_bytes", "configuration": {"length_bytes": 2}})
    fill = raw_bytes.parse_fill_value("AQI=")
    assert raw_bytes.fill_value_to_json(fill) == "AQI="
    assert bytes(raw_bytes.parse_fill_value([1, 2])) == b"\x01\x02"


@pytest.mark.parametrize("value", [[1, 2], [1, 2, 3, 4], [0, 0, 256], [0, 0, -1], [0, 0, True],
                                   [0, 0, 1.0], "AQI=", "!!!!", "AQIDBA==", 0, None, {"a": 1}])
def test_invalid_raw_fill_values(value):
    with pytest.raises(DataTypeError, match="^k: fill_value: "):
        dt("r24").parse_fill_value(value, where="k: fill_value")


# -- cast_fill_value (user-supplied values) ---------------------------------------------------


def test_cast_fill_value_accepts_python_numpy_and_json_forms():
    f32 = dt("float32")
    assert f32.cast_fill_value(None) == 0.0
    assert f32.cast_fill_value(1.5) == np.float32(1.5)
    assert np.isnan(f32.cast_fill_value(float("nan")))
    assert f32.cast_fill_value("Infinity") == np.inf
    assert f32.cast_fill_value(np.float64(0.25)) == np.float32(0.25)
    assert f32.cast_fill_value(np.array(2.0)) == np.float32(2.0)
    snan = from_bits(0x7F800001, np.float32)
    assert bits_of(f32.cast_fill_value(snan)) == bits_of(snan)
    assert dt("int8").cast_fill_value(np.int64(-5)) == -5
    assert dt("int8").cast_fill_value(3.0) == 3
    assert dt("uint64").cast_fill_value(np.uint64(2**64 - 1)) == np.uint64(2**64 - 1)
    assert dt("complex64").cast_fill_value(1 + 2j) == np.complex64(1 + 2j)
    assert dt("complex128").cast_fill_value(3) == 3
    assert bytes(dt("r16").cast_fill_value(b"ab")) == b"ab"
    assert bytes(dt("r16").cast_fill_value(np.void(b"cd"))) == b"cd"
    assert dt("bool").cast_fill_value(np.True_) is np.True_
    assert dt("bfloat16").cast_fill_value(1.5) == ml_dtypes.bfloat16(1.5)
    assert dt("int4").cast_fill_value(-8) == ml_dtypes.int4(-8)


@pytest.mark.parametrize("name, value", [
    ("int8", 128), ("int8", 1.5), ("uint8", -1), ("uint8", np.int64(300)), ("bool", 1),
    ("r16", b"abc"), ("int4", 8), ("float32", "nan"), ("complex64", "x"),
])
def test_cast_fill_value_refuses_values_the_type_cannot_hold(name, value):
    with pytest.raises(DataTypeError):
        dt(name).cast_fill_value(value)


# -- property: every bit pattern round-trips through JSON text --------------------------------

ALL_NAMES = sorted(CORE) + ["r8", "r24", "r40"]


def _random_scalar(data_type, raw_bits):
    size = data_type.item_size
    data = raw_bits.to_bytes(16, "little")[:size]
    if data_type.name == "bool":
        data = bytes([data[0] & 1])
    elif data_type.name == "int4":
        data = bytes([data[0] & 0x0F])  # one value per byte, in the low bits
    return np.frombuffer(data, dtype=data_type.dtype)[0]


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(ALL_NAMES), st.integers(min_value=0, max_value=2**128 - 1))
def test_fill_values_round_trip_bit_exactly_through_json_text(name, raw_bits):
    data_type = dt(name)
    scalar = _random_scalar(data_type, raw_bits)
    text = json_dumps({"fill_value": data_type.fill_value_to_json(scalar)})
    parsed = data_type.parse_fill_value(json_loads(text, what="t")["fill_value"])
    assert np.asarray(parsed).dtype == data_type.dtype
    assert bits_of(parsed) == bits_of(scalar)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FLOATS), st.integers(min_value=0, max_value=2**64 - 1))
def test_nan_bit_patterns_round_trip(name, payload):
    data_type = dt(name)
    ebits, mbits = {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23),
                    "float64": (11, 52)}[name]
    sign = payload >> 63
    mantissa = (payload % ((1 << mbits) - 1)) + 1  # non-zero: a NaN, quiet or signalling
    bits = sign << (ebits + mbits) | ((1 << ebits) - 1) << mbits | mantissa
    scalar = from_bits(bits, data_type.dtype)
    out = data_type.fill_value_to_json(scalar)
    assert out == "NaN" if bits == CANONICAL_NAN[name] else out.startswith("0x")
    assert float_bits(data_type.parse_fill_value(json.loads(json.dumps(out))),
                      data_type.dtype) == bits


def test_float_to_json_numbers_are_shortest_float64_reprs():
    out = dt("float64").fill_value_to_json(np.float64(0.1))
    assert json_dumps(out) == b"0.1"
    assert struct.pack("<d", out) == struct.pack("<d", 0.1)

"""TensorStore's small float and integer types (zarr-extensions data types): float8_e3m4,
float8_e4m3fn, float8_e4m3fnuz, float8_e4m3b11fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu,
float4_e2m1fn and int2, in Zarr v3 and v2, with TensorStore 0.1.86 as the oracle both ways.

TensorStore behaviour found on the way (zarrkit follows zarr-extensions and ml_dtypes):

- float8_e8m0fnu numbers (fill values, casts) are converted as 2 ** (bits - 63), not
  2 ** (bits - 127): TensorStore writes the bits 0x7f (1.0) as 1.8446744073709552e+19 and reads
  1.0 as 0x3f. zarrkit writes these fill values as hex bits, which TensorStore reads as such.
- It takes values a type lacks: "Infinity" for float8_e4m3fn becomes NaN, "NaN" for
  float4_e2m1fn -0.0, numbers beyond the range NaN (6.0 for float4_e2m1fn), hex bits beyond
  float4_e2m1fn's four are kept in the byte. zarrkit refuses them all.
- Its zarr (v2) driver writes float4_e2m1fn fill values as base64 of the value's byte, and
  takes int2 fill values in [-128, 127], wrapping (2 reads back as -2); zarrkit refuses those.
- Reading a chunk whose sub-byte values have high bits set, it hands ml_dtypes the bytes as they
  are (ml_dtypes then reads 0xa4 as float4_e2m1fn -2.0); zarrkit ignores the high bits.
- uint2, uint4, float6_e2m3fn, float6_e3m2fn and float8_e4m3 are refused by both drivers.
"""

from __future__ import annotations

import json
import math

import ml_dtypes
import numpy as np
import pytest
from _spec_helpers import ts_create, zk_create

import zarrkit
from zarrkit.errors import CodecError, DataTypeError, SpecError
from zarrkit.metadata.data_type import DataType, float_bits, round_to_float
from zarrkit.metadata.v2_dtype import DataTypeV2

ts = pytest.importorskip("tensorstore")

FLOATS = ["float8_e3m4", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2",
          "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn"]
NAMES = [*FLOATS, "int2"]
#: The bits "NaN" denotes (zarr-extensions); None: the type has no NaN.
NAN = {"float8_e3m4": 0x78, "float8_e4m3fn": 0x7F, "float8_e4m3fnuz": 0x80,
       "float8_e4m3b11fnuz": 0x80, "float8_e5m2": 0x7E, "float8_e5m2fnuz": 0x80,
       "float8_e8m0fnu": 0xFF, "float4_e2m1fn": None}
E8M0 = "float8_e8m0fnu"

#: v3 fill values tried on every type; REFUSED lists those each type has no value for.
INPUTS = [0, -0.0, 0.5, 1.25, 0.3, -2, 448, 1e-9, 1e10, 1e39, "NaN", "Infinity", "-Infinity",
          "0x01", "0x0f", "0x7f", "0x80", "0xff"]
_NO_INF = ["Infinity", "-Infinity"]
REFUSED = {
    "float8_e3m4": [],
    "float8_e5m2": [],
    "float8_e4m3fn": [*_NO_INF, 1e10, 1e39],
    "float8_e4m3fnuz": [*_NO_INF, 448, 1e10, 1e39],
    "float8_e4m3b11fnuz": [*_NO_INF, 448, 1e10, 1e39],
    "float8_e5m2fnuz": [*_NO_INF, 1e10, 1e39],
    "float8_e8m0fnu": [*_NO_INF, -2, 1e39],
    "float4_e2m1fn": ["NaN", *_NO_INF, 448, 1e10, 1e39, "0x7f", "0x80", "0xff"],
    "int2": [v for v in INPUTS if not (isinstance(v, int) and v in (0, -2))],
}


def dtype_of(name):
    return np.dtype(getattr(ml_dtypes, name))


#: The value bits of each byte: TensorStore sign-extends int2/int4 values in memory, ml_dtypes
#: does not, and neither stores the high bits.
MASK = {"int2": 0x3, "int4": 0xF, "float4_e2m1fn": 0xF}


def bits_of(value, name):
    byte = int(np.asarray(value, dtype_of(name)).reshape(1).view(np.uint8)[0])
    return byte & MASK.get(name, 0xFF)


def refused(name, value):
    """Whether `value` is in REFUSED[name], telling 0 from -0.0 and 1 from 1.0."""
    return any(type(v) is type(value) and v == value and str(v) == str(value)
               for v in REFUSED[name])


def every_value(name):
    """Every valid bit pattern of the type (2, 4 or 8 value bits), as an array of it."""
    count = {"int2": 4, "float4_e2m1fn": 16}.get(name, 256)
    side = math.isqrt(count)
    return np.arange(count, dtype=np.uint8).view(dtype_of(name)).reshape(side, side)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    mask = np.uint8(MASK.get(a.dtype.name, 0xFF))
    return np.array_equal(a.view(np.uint8) & mask, b.view(np.uint8) & mask)


def kv(path):
    return {"driver": "file", "path": str(path)}


def ts_memory(metadata, driver="zarr3"):
    """TensorStore's array and the metadata document it wrote, in memory."""
    t = ts.open({"driver": driver, "kvstore": {"driver": "memory"}, "metadata": metadata},
                create=True).result()
    key = "zarr.json" if driver == "zarr3" else ".zarray"
    return t, json.loads(t.kvstore.read(key).result().value)


def ts_read(path, driver="zarr3"):
    return ts.open({"driver": driver, "kvstore": kv(path)}).result().read().result()


# -- names ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_names_are_tensorstores(name):
    t, doc = ts_memory({"data_type": name, "shape": [2]})
    assert doc["data_type"] == name and t.dtype.numpy_dtype == dtype_of(name)
    for spelling in (name, {"name": name}, {"name": name, "configuration": {}}):
        data_type = DataType.from_json(spelling)
        assert data_type.dtype == dtype_of(name) and data_type.to_json() == name
    assert DataType.from_numpy(getattr(ml_dtypes, name)).name == name
    assert DataType.parse(name) == DataType.parse(dtype_of(name)) == DataType.from_json(name)
    assert DataType.from_json(name).kind == ("int" if name == "int2" else "float")
    assert DataType.from_json(name).item_size == 1


@pytest.mark.parametrize("name", ["uint2", "uint4", "float6_e2m3fn", "float6_e3m2fn",
                                  "float8_e4m3"])
def test_names_tensorstore_refuses_are_refused(name):
    with pytest.raises(ValueError, match=name):
        ts_memory({"data_type": name, "shape": [2]})
    with pytest.raises(DataTypeError, match=f"data_type: .*{name}"):
        DataType.from_json(name)
    with pytest.raises(DataTypeError, match=name):
        DataType.from_numpy(getattr(ml_dtypes, name))


def test_opening_tensorstores_array_with_a_config_member_is_refused():
    with pytest.raises(DataTypeError, match="int2.*takes no configuration"):
        DataType.from_json({"name": "int2", "configuration": {"bits": 2}})


# -- v3 fill values ---------------------------------------------------------------------------------

def _ts_fill(name, value):
    """TensorStore's fill value bits and JSON for a fill value, or None if it refuses it."""
    try:
        t, doc = ts_memory({"data_type": name, "shape": [1], "fill_value": value})
    except ValueError:
        return None
    return bits_of(t.fill_value, name), doc["fill_value"]


@pytest.mark.parametrize("name", NAMES)
def test_fill_values_read_and_written_as_tensorstore(name):
    data_type = DataType.from_json(name)
    wrong = []
    for value in INPUTS:
        if refused(name, value):
            with pytest.raises(DataTypeError, match=f"fill_value: .*{name}"):
                data_type.parse_fill_value(value)
            continue
        ours = data_type.parse_fill_value(value)
        theirs = _ts_fill(name, value)
        if name == E8M0 and isinstance(value, int | float) and value != 0:
            continue  # TensorStore's numbers are 2 ** (bits - 63); see test_e8m0fnu_numbers
        bits = bits_of(ours, name)
        if theirs is None or theirs[0] != bits:
            wrong.append((value, bits, theirs))
            continue
        # float8_e8m0fnu: hex bits where TensorStore writes its numbers (it reads them as bits)
        expected = f"0x{bits:02x}" if name == E8M0 and bits != NAN[E8M0] else theirs[1]
        if data_type.fill_value_to_json(ours) != expected:
            wrong.append((value, data_type.fill_value_to_json(ours), expected))
    assert wrong == []


@pytest.mark.parametrize("name", NAMES)
def test_tensorstore_reads_zarrkits_fill_values(tmp_path, name):
    accepted = [v for v in INPUTS if not refused(name, v)]
    for i, value in enumerate(accepted):
        path = tmp_path / str(i)
        a = zarrkit.open({"driver": "zarr3", "kvstore": kv(path), "metadata": {
            "data_type": name, "shape": [3], "fill_value": value}}, create=True)
        t = ts.open({"driver": "zarr3", "kvstore": kv(path)}).result()
        assert bits_of(t.fill_value, name) == bits_of(a.fill_value, name), value
        assert same_bits(t.read().result(), a[...]), value


def test_nan_bits_follow_zarr_extensions():
    for name, nan in NAN.items():
        data_type = DataType.from_json(name)
        if nan is None:
            with pytest.raises(DataTypeError, match="float4_e2m1fn has no NaN"):
                data_type.parse_fill_value("NaN")
            continue
        assert bits_of(data_type.parse_fill_value("NaN"), name) == nan
        assert data_type.fill_value_to_json(data_type.parse_fill_value("NaN")) == "NaN"


def test_other_nan_patterns_are_written_as_hex():
    for name, other in [("float8_e4m3fn", "0xff"), ("float8_e5m2", "0xfe"),
                        ("float8_e3m4", "0x79")]:
        data_type = DataType.from_json(name)
        assert data_type.fill_value_to_json(data_type.parse_fill_value(other)) == other
        assert _ts_fill(name, other)[1] == other


def test_e8m0fnu_numbers():
    """ml_dtypes' (and zarr-extensions') values, written as hex bits TensorStore reads as bits;
    TensorStore's own numbers are 2 ** (bits - 63)."""
    data_type = DataType.from_json(E8M0)
    for value in [1.0, 0.5, 2, 448, 1e-9, 1e10, 2.0**-127, 2.0**127]:
        ours = data_type.parse_fill_value(value)
        assert bits_of(ours, E8M0) == bits_of(np.float32(value).astype(dtype_of(E8M0)), E8M0)
        assert data_type.fill_value_to_json(ours) == f"0x{bits_of(ours, E8M0):02x}"
        assert _ts_fill(E8M0, data_type.fill_value_to_json(ours))[0] == bits_of(ours, E8M0)
    assert _ts_fill(E8M0, 1.0) == (0x3F, 1.0)  # TensorStore 0.1.86: 1.0 is 2 ** -64
    # No zero: 0 is the nearest value, 2 ** -127 (the zero bits, TensorStore's default).
    assert bits_of(data_type.parse_fill_value(0), E8M0) == 0 == _ts_fill(E8M0, 0)[0]
    assert bits_of(data_type.default_fill_value(), E8M0) == 0
    with pytest.raises(DataTypeError, match="float8_e8m0fnu has no negative values"):
        data_type.parse_fill_value(-1.0)


@pytest.mark.parametrize("value", ["0x1", "0x001", "-0x01", "1.5", "nan", True, None, [1]])
def test_malformed_float_fill_values_are_refused(value):
    for name in FLOATS:
        with pytest.raises(DataTypeError, match=f"fill_value: .*{name}"):
            DataType.from_json(name).parse_fill_value(value)


def test_negative_zero_only_where_the_type_has_it():
    has = {"float8_e3m4", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"}
    for name in FLOATS:
        data_type = DataType.from_json(name)
        zero = data_type.parse_fill_value(-0.0)
        assert data_type.fill_value_to_json(zero) == ("0x00" if name == E8M0 else
                                                      -0.0 if name in has else 0.0)
        assert (math.copysign(1, float(zero)) < 0) == (name in has)
        tiny = data_type.parse_fill_value(-1e-30 if name != E8M0 else 1e-60)
        assert bits_of(tiny, name) == bits_of(zero, name)


# -- rounding ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", FLOATS)
def test_rounding_matches_ml_dtypes_from_float32(name):
    """ml_dtypes rounds a float32 once (a float64 it rounds via float32, twice)."""
    dtype = dtype_of(name)
    info = ml_dtypes.finfo(dtype)
    values = np.unique(every_value(name).astype(np.float64))
    values = values[np.isfinite(values)]
    midpoints = (values[1:] + values[:-1]) / 2
    rng = np.random.default_rng(7)
    xs = np.concatenate([values, midpoints, rng.uniform(-float(info.max), float(info.max), 500)])
    xs = xs.astype(np.float32)
    xs = np.concatenate([xs, np.nextafter(xs, np.float32(np.inf)),
                         np.nextafter(xs, np.float32(-np.inf))])
    keep = (np.abs(xs) <= float(info.max)) & ((xs == 0) | (np.abs(xs) >= np.finfo(np.float32).tiny))
    if name == E8M0:
        keep &= xs > 0
    for x in xs[keep].tolist():
        expected = bits_of(np.float32(x).astype(dtype), name)
        assert float_bits(round_to_float(x, dtype), dtype) == expected, x


@pytest.mark.parametrize("name, value, expected", [
    ("float8_e4m3fn", 431.99999999999994, 416.0),  # float32 would first round it to 432
    ("float8_e4m3fn", 464.0, 448.0),  # halfway to 480 (a NaN): ties to the even 448
    ("float8_e4m3fn", -464.0, -448.0),
    ("float8_e5m2", 61440.0, math.inf),  # halfway to infinity, as IEEE
    ("float8_e5m2", 61439.9, 57344.0),
    ("float4_e2m1fn", 0.25, 0.0),
    ("float4_e2m1fn", -0.25, -0.0),
    ("float4_e2m1fn", 6.99, 6.0),
    ("float8_e8m0fnu", 1.5, 2.0),  # no mantissa: 1.1b rounds to the even 10b
    ("float8_e8m0fnu", 1.4999, 1.0),
])
def test_rounding_of_numbers_as_tensorstore(name, value, expected):
    ours = DataType.from_json(name).parse_fill_value(value)
    assert float(ours) == expected and math.copysign(1, float(ours)) == math.copysign(1, expected)
    if name != E8M0:
        assert _ts_fill(name, value)[0] == bits_of(ours, name)


@pytest.mark.parametrize("name, value", [
    ("float8_e4m3fn", 464.00000000000006), ("float4_e2m1fn", 7.0),
    ("float8_e4m3fnuz", 248.0), ("float8_e5m2fnuz", 61440.0), ("float8_e8m0fnu", 2.0**127 * 1.5),
])
def test_numbers_past_the_range_are_refused(name, value):
    with pytest.raises(DataTypeError, match=f"out of range for {name}"):
        DataType.from_json(name).parse_fill_value(value)


# -- Python and numpy fill values -------------------------------------------------------------------

@pytest.mark.parametrize("name", FLOATS)
def test_python_and_numpy_fill_values(tmp_path, name):
    dtype = dtype_of(name)
    for i, value in enumerate([np.float32(0.3), 1.25, 2, dtype.type(0.5)]):
        a = zarrkit.create_array(tmp_path / str(i), shape=(2,), dtype=dtype, fill_value=value)
        expected = DataType.from_json(name).parse_fill_value(float(value))
        assert bits_of(a.fill_value, name) == bits_of(expected, name)
        assert same_bits(ts_read(tmp_path / str(i)), np.full(2, expected, dtype))


@pytest.mark.parametrize("name, value", [("float8_e5m2", -45055.99999999999),
                                         ("float8_e4m3fn", 431.99999999999994)])
def test_python_floats_are_rounded_once(tmp_path, name, value):
    """Not as numpy's astype, which rounds a float64 via float32 (to -49152 and 448 here)."""
    a = zarrkit.create_array(tmp_path, shape=(1,), dtype=dtype_of(name), fill_value=value)
    assert bits_of(a.fill_value, name) == _ts_fill(name, value)[0]
    assert bits_of(a.fill_value, name) != bits_of(np.float64(value).astype(dtype_of(name)), name)


@pytest.mark.parametrize("name, value, message", [
    ("float8_e4m3fn", np.inf, "has no infinity"),
    ("float8_e4m3fnuz", -np.inf, "has no infinity"),
    ("float8_e5m2fnuz", 1e10, "out of range"),
    ("float8_e4m3b11fnuz", np.float32(31), "out of range"),
    ("float4_e2m1fn", np.nan, "has no NaN"),
    ("float4_e2m1fn", "NaN", "has no NaN"),
    ("float8_e8m0fnu", -1.0, "has no negative values"),
    ("int2", 2, "int2"),
    ("int2", -0.5, "int2"),
])
def test_fill_values_the_type_lacks_are_refused(tmp_path, name, value, message):
    with pytest.raises(DataTypeError, match=f"fill_value: .*{message}"):
        zarrkit.create_array(tmp_path, shape=(2,), dtype=dtype_of(name), fill_value=value)


def test_unused_high_bits_of_a_fill_value_are_dropped():
    for name, raw, expected in [("float4_e2m1fn", 0xF3, 0x3), ("int2", 0xFE, 0x2),
                                ("int2", 0x02, 0x2)]:
        data_type = DataType.from_json(name)
        scalar = np.array(raw, np.uint8).view(dtype_of(name))[()]
        cast = data_type.cast_fill_value(scalar)
        assert bits_of(cast, name) == expected
        assert data_type.fill_value_to_json(cast) == data_type.fill_value_to_json(
            data_type.parse_fill_value(data_type.fill_value_to_json(cast)))


# -- chunks ------------------------------------------------------------------------------------------

BLOSC = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle",
                                            "typesize": 1, "blocksize": 0}}
CODECS = {
    "default": None,
    "little": [{"name": "bytes", "configuration": {"endian": "little"}}],
    "big": [{"name": "bytes", "configuration": {"endian": "big"}}],
    "transpose-crc": [{"name": "transpose", "configuration": {"order": [1, 0]}}, "bytes",
                      "crc32c"],
    "blosc": ["bytes", BLOSC],
    "zstd": ["bytes", {"name": "zstd", "configuration": {"level": 3, "checksum": False}}],
    "sharding": [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [1, 2], "codecs": ["bytes", {"name": "zstd", "configuration": {
            "level": 1, "checksum": True}}], "index_codecs": ["bytes", "crc32c"]}}],
}
_UNCOMPRESSED = ("default", "little", "big", "transpose-crc")


def _metadata(name, data, variant):
    metadata = {"data_type": name, "shape": list(data.shape), "chunk_grid": {
        "name": "regular", "configuration": {"chunk_shape": [2, data.shape[1]]}}}
    if CODECS[variant] is not None:
        metadata["codecs"] = CODECS[variant]
    return metadata


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("variant", CODECS)
def test_every_value_both_directions(tmp_path, name, variant):
    data = every_value(name)
    metadata = _metadata(name, data, variant)
    theirs = ts.open({"driver": "zarr3", "kvstore": kv(tmp_path / "t"), "metadata": metadata},
                     create=True).result()
    theirs[...] = data
    assert same_bits(zarrkit.open(tmp_path / "t", mode="r")[...], data)
    ours = zarrkit.open({"driver": "zarr3", "kvstore": kv(tmp_path / "k"), "metadata": metadata},
                        create=True)
    ours[...] = data
    doc = json.loads((tmp_path / "t" / "zarr.json").read_text())
    if name == E8M0:
        doc["fill_value"] = "0x00"  # TensorStore writes 0.0, a number it misreads
    assert json.loads((tmp_path / "k" / "zarr.json").read_text()) == doc
    assert same_bits(ts_read(tmp_path / "k"), data)
    if variant in _UNCOMPRESSED:  # the very bytes TensorStore stores
        for chunk in sorted((tmp_path / "t" / "c").rglob("*")):
            if chunk.is_file():
                twin = tmp_path / "k" / chunk.relative_to(tmp_path / "t")
                assert twin.read_bytes() == chunk.read_bytes(), chunk


@pytest.mark.parametrize("name, values, stored", [
    ("int2", [-2, -1, 0, 1], "02030001"),
    ("int4", [-8, -1, 0, 7], "080f0007"),
    ("float4_e2m1fn", [-6, -0.5, 0, 6], "0f090007"),
])
def test_sub_byte_values_take_the_low_bits_of_a_byte(tmp_path, name, values, stored):
    data = np.array(values).astype(dtype_of(name))
    t = ts.open({"driver": "zarr3", "kvstore": kv(tmp_path / "t"), "metadata": {
        "data_type": name, "shape": [4]}}, create=True).result()
    t[...] = data
    assert (tmp_path / "t" / "c" / "0").read_bytes().hex() == stored
    a = zarrkit.create_array(tmp_path / "k", shape=(4,), dtype=dtype_of(name),
                             compressors=None)
    # Values whose unused high bits are set (as ml_dtypes may hold them) are stored without.
    a[...] = (data.view(np.uint8) | np.uint8(0xF0 if name != "int2" else 0xFC)).view(data.dtype)
    assert (tmp_path / "k" / "c" / "0").read_bytes().hex() == stored
    assert same_bits(ts_read(tmp_path / "k"), data)


@pytest.mark.parametrize("name, expected", [
    ("int2", [0, 1, 1, -2]),
    ("int4", [4, 5, 1, -2]),
    ("float4_e2m1fn", [2.0, 3.0, 0.5, -4.0]),
])
def test_high_bits_of_stored_sub_byte_values_are_ignored(tmp_path, name, expected):
    ts.open({"driver": "zarr3", "kvstore": kv(tmp_path), "metadata": {
        "data_type": name, "shape": [4]}}, create=True).result()
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "0").write_bytes(bytes([0xA4, 0x55, 0xF1, 0x0E]))
    got = zarrkit.open(tmp_path, mode="r")[...]
    assert same_bits(got, np.array(expected).astype(dtype_of(name)))


@pytest.mark.parametrize("name", NAMES)
def test_single_byte_types_take_no_endian(tmp_path, name):
    a = zarrkit.create_array(tmp_path, shape=(4,), dtype=dtype_of(name), compressors=None)
    doc = json.loads((tmp_path / "zarr.json").read_text())
    assert doc["codecs"] == [{"name": "bytes"}] and doc["data_type"] == name
    assert a.dtype == dtype_of(name)


# -- the numpy API and TensorStore-style specs ------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_create_array_with_ml_dtypes(tmp_path, name):
    dtype = dtype_of(name)
    fill = -2 if name == "int2" else 1.0
    a = zarrkit.create_array(tmp_path, shape=(7,), chunks=(3,), dtype=dtype, fill_value=fill)
    values = np.array([1, -1, 0] if name == "int2" else [0.5, 2, 4]).astype(dtype)
    a[1:4] = values
    expected = np.full(7, fill).astype(dtype)
    expected[1:4] = values
    again = zarrkit.open(tmp_path, mode="r")
    assert again.dtype == dtype and same_bits(again[...], expected)
    assert same_bits(ts_read(tmp_path), expected)
    assert not (tmp_path / "c" / "2").exists()  # only fill values: not stored


@pytest.mark.parametrize("name", NAMES)
def test_spec_creation_writes_tensorstores_metadata(name):
    fill = {"int2": -2, "float4_e2m1fn": -0.0, E8M0: "NaN"}.get(name, 0.5)
    for metadata, kw in [({"data_type": name, "shape": [6]}, {}),
                         ({"data_type": name, "shape": [6], "fill_value": fill}, {}),
                         ({}, {"dtype": name, "shape": [6]}),
                         ({"shape": [6]}, {"dtype": name, "chunk_layout": {
                             "write_chunk_shape": [4], "read_chunk_shape": [2]}})]:
        expected, actual = ts_create(metadata, kw), zk_create(metadata, kw)
        if name == E8M0 and "fill_value" not in metadata:
            expected[0]["fill_value"] = "0x00"  # TensorStore writes 0.0, a number it misreads
        assert actual == expected


@pytest.mark.parametrize("name", NAMES)
def test_schema_dtype_names_and_fill_values(name):
    fill = -2 if name == "int2" else 0.5
    ours = zarrkit.Schema(dtype=getattr(ml_dtypes, name), fill_value=fill)
    assert ours.dtype == name == zarrkit.Schema({"dtype": name}).dtype
    theirs = ts.Schema({"dtype": name, "fill_value": fill}).to_json()
    assert ours.to_json() == theirs == zarrkit.Schema(theirs).to_json()


def test_schema_refuses_fill_values_the_type_lacks():
    with pytest.raises(SpecError, match="schema.fill_value: float8_e4m3fn has no infinity"):
        zarrkit.Schema({"dtype": "float8_e4m3fn", "fill_value": "Infinity"})
    with pytest.raises(SpecError, match="float4_e2m1fn has no NaN"):
        zarrkit.Schema(dtype="float4_e2m1fn", fill_value=math.nan)


def test_open_spec_with_fill_value_keyword(tmp_path):
    a = zarrkit.open({"driver": "zarr3", "kvstore": kv(tmp_path)}, create=True,
                     dtype="float4_e2m1fn", shape=[4], fill_value=1.5)
    t = ts.open({"driver": "zarr3", "kvstore": kv(tmp_path)}).result()
    assert json.loads((tmp_path / "zarr.json").read_text())["fill_value"] == 1.5
    assert t.schema.to_json() == a.schema.to_json()
    assert same_bits(t.read().result(), a[...])


# -- Zarr v2 -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("compressor", [None, {"id": "blosc", "cname": "lz4", "clevel": 5,
                                               "shuffle": 1, "blocksize": 0},
                                        {"id": "zlib", "level": 2}], ids=["none", "blosc", "zlib"])
def test_v2_every_value_both_directions(tmp_path, name, compressor):
    data = every_value(name)
    metadata = {"dtype": name, "shape": list(data.shape), "chunks": [2, data.shape[1]],
                "compressor": compressor}
    t = ts.open({"driver": "zarr", "kvstore": kv(tmp_path / "t"), "metadata": metadata},
                create=True).result()
    t[...] = data
    ours = zarrkit.open(tmp_path / "t", mode="r")
    assert ours.metadata["dtype"] == name and same_bits(ours[...], data)
    a = zarrkit.create(tmp_path / "k", shape=data.shape, chunks=(2, data.shape[1]),
                       dtype=dtype_of(name), zarr_format=2, compressor=compressor)
    a[...] = data
    assert json.loads((tmp_path / "k" / ".zarray").read_text())["dtype"] == name
    assert same_bits(ts_read(tmp_path / "k", "zarr"), data)
    if compressor is None:
        for chunk in (tmp_path / "t").glob("[0-9]*"):
            assert (tmp_path / "k" / chunk.name).read_bytes() == chunk.read_bytes()


V2_FILLS = [0, -0.0, 0.5, 1.25, -2, "NaN", "Infinity", "-Infinity"]


@pytest.mark.parametrize("name", [n for n in FLOATS if n not in (E8M0, "float4_e2m1fn")])
def test_v2_fill_values_as_tensorstore(tmp_path, name):
    for i, value in enumerate(V2_FILLS):
        if refused(name, value):
            with pytest.raises(DataTypeError, match=name):
                DataTypeV2.from_json(name).parse_fill_value(value)
            continue
        t, doc = ts_memory({"dtype": name, "shape": [1], "fill_value": value}, "zarr")
        ours = DataTypeV2.from_json(name).parse_fill_value(doc["fill_value"])
        assert bits_of(ours, name) == bits_of(t.fill_value, name), value
        a = zarrkit.create(tmp_path / str(i), shape=(1,), dtype=dtype_of(name), zarr_format=2,
                           fill_value=value)
        assert json.loads((tmp_path / str(i) / ".zarray").read_text())["fill_value"] == \
            doc["fill_value"]
        assert bits_of(ts_read(tmp_path / str(i), "zarr")[0], name) == bits_of(a.fill_value, name)


def test_v2_float4_fill_values_are_base64_of_the_byte(tmp_path):
    for i, (value, text) in enumerate([(1.5, "Aw=="), (-0.0, "CA=="), (-6, "Dw=="), (0, "AA==")]):
        t, doc = ts_memory({"dtype": "float4_e2m1fn", "shape": [1], "fill_value": text}, "zarr")
        assert doc["fill_value"] == text
        data_type = DataTypeV2.from_json("float4_e2m1fn")
        assert bits_of(data_type.parse_fill_value(text), "float4_e2m1fn") == \
            bits_of(t.fill_value, "float4_e2m1fn")
        zarrkit.create(tmp_path / str(i), shape=(1,), dtype=ml_dtypes.float4_e2m1fn,
                       zarr_format=2, fill_value=value)
        assert json.loads((tmp_path / str(i) / ".zarray").read_text())["fill_value"] == text


@pytest.mark.parametrize("name, value, message", [
    ("float4_e2m1fn", "/w==", "sets bits beyond the 4 of float4_e2m1fn"),  # TensorStore: -6
    ("float4_e2m1fn", "AAA=", "1 byte"),
    ("float4_e2m1fn", "NaN", "float4_e2m1fn has no NaN"),
    ("int2", 2, "out of range"),  # TensorStore wraps it to -2
    ("float8_e4m3fn", "Infinity", "float8_e4m3fn has no infinity"),
    ("float8_e5m2", "0x7f", "expected a number"),  # v2 has no hex form
])
def test_v2_fill_values_the_type_lacks_are_refused(name, value, message):
    with pytest.raises(DataTypeError, match=message):
        DataTypeV2.from_json(name).parse_fill_value(value)


@pytest.mark.parametrize("name, fill", [
    ("float4_e2m1fn", 1.5), ("float4_e2m1fn", None), ("int2", -1), ("float8_e5m2", math.nan),
    ("float8_e4m3fn", -0.0), ("float8_e3m4", 0.3), ("float8_e4m3b11fnuz", -30),
    ("float8_e5m2fnuz", math.nan), ("float8_e8m0fnu", math.nan)])
def test_v2_spec_creation_writes_tensorstores_zarray(tmp_path, name, fill):
    kw = {"dtype": name, "shape": [4]} | ({} if fill is None else {"fill_value": fill})
    ts.open({"driver": "zarr", "kvstore": kv(tmp_path / "t")}, create=True, **kw).result()
    zarrkit.open({"driver": "zarr", "kvstore": kv(tmp_path / "k")}, create=True, **kw)
    assert json.loads((tmp_path / "k" / ".zarray").read_text()) == \
        json.loads((tmp_path / "t" / ".zarray").read_text())


def test_v2_int2_and_e8m0_fill_values(tmp_path):
    t, doc = ts_memory({"dtype": "int2", "shape": [1], "fill_value": -1}, "zarr")
    assert DataTypeV2.from_json("int2").parse_fill_value(doc["fill_value"]) == -1
    # The v2 JSON of float8_e8m0fnu is a number: ml_dtypes' value (TensorStore's differs).
    e8m0 = DataTypeV2.from_json(E8M0)
    assert e8m0.fill_value_to_json(e8m0.parse_fill_value(2.0)) == 2.0
    assert bits_of(e8m0.parse_fill_value(2.0), E8M0) == 0x80
    assert e8m0.fill_value_to_json(e8m0.parse_fill_value("NaN")) == "NaN"


# -- other codecs and conversions ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["float8_e4m3fn", "float4_e2m1fn", "int2"])
def test_numcodecs_codecs_take_the_types_as_bytes(tmp_path, name):
    data = every_value(name).reshape(-1)
    for i, codecs in enumerate([[{"name": "numcodecs.zlib", "configuration": {"level": 1}}],
                                [{"name": "numcodecs.shuffle"}, {"name": "numcodecs.zstd"}]]):
        a = zarrkit.create_array(tmp_path / str(i), shape=data.shape, chunks=(5,),
                                 dtype=data.dtype, compressors=codecs)
        a[...] = data
        assert same_bits(zarrkit.open(tmp_path / str(i), mode="r")[...], data)


@pytest.mark.parametrize("name", ["float8_e5m2", "float4_e2m1fn", "int2"])
def test_v2_array_converts_to_v3(tmp_path, name):
    from zarrkit.conversion import convert

    data = every_value(name)
    a = zarrkit.create(tmp_path / "v2", shape=data.shape, dtype=data.dtype, zarr_format=2,
                       fill_value=1)
    a[...] = data
    convert(tmp_path / "v2", tmp_path / "v3", zarr_format=3, progress=False)
    doc = json.loads((tmp_path / "v3" / "zarr.json").read_text())
    assert doc["data_type"] == name and doc["fill_value"] == 1
    assert same_bits(ts_read(tmp_path / "v3"), data)


@pytest.mark.parametrize("codec", [
    {"name": "scale_offset", "configuration": {"offset": 1, "scale": 2}},
    {"name": "cast_value", "configuration": {"data_type": "float32"}},
])
def test_numeric_codecs_name_the_type_they_refuse(tmp_path, codec):
    with pytest.raises(CodecError, match="float8_e4m3fn"):
        zarrkit.create_array(tmp_path, shape=(2,), dtype=ml_dtypes.float8_e4m3fn,
                             filters=[codec])

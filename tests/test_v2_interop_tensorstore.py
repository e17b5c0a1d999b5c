"""Zarr v2 interoperability with TensorStore's `zarr` driver as the oracle, both directions:
its compressors, data types (both byte orders, fixed-length bytes, raw, structured with subarray
fields, its extension types), fill values, C and F order, both separators; and the TensorStore
spec form `{"driver": "zarr", ...}` through `zarrkit.open`.

TensorStore's zarr driver has no filters, no datetime/timedelta, no `U`, no object types and no
nested structured types (those are tested with zarr-python and NumPy). It opens a structured
array one field at a time (`"field"` in the spec), and fixed-length bytes `|Sn` with an extra
dimension of n characters (which its Python binding reads back as empty `|S0` values).
"""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from _v2_helpers import assert_same, sample

import zarrkit
from zarrkit.metadata.v2_dtype import DataTypeV2

ts = pytest.importorskip("tensorstore")

SHAPE, CHUNKS = (7, 5), (4, 3)
COMPRESSORS = [
    None,
    {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": -1, "blocksize": 0},
    {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0},
    {"id": "zstd", "level": 3},
    {"id": "zlib", "level": 2},
    {"id": "gzip", "level": 6},
    {"id": "bz2", "level": 5},
]
DTYPES = ["|b1", "|i1", ">i2", "<i4", ">i8", "|u1", "<u2", ">u4", "<u8", ">f2", "<f4", ">f8",
          ">c8", "<c16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int4",
          [["a", "<i4"], ["b", ">f8", [2]], ["c", "|u1", [2, 3]]]]


def kvstore(path):
    return {"driver": "file", "path": str(path)}


def ts_open(path, field=None, **metadata):
    spec = {"driver": "zarr", "kvstore": kvstore(path)}
    if field is not None:
        spec["field"] = field
    if metadata:
        spec["metadata"] = metadata
    return ts.open(spec, create=bool(metadata), open=not metadata).result()


def _sample(dtype):
    data_type = DataTypeV2.from_json(dtype)
    if data_type.dtype in (np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3fn),
                           np.dtype(ml_dtypes.float8_e5m2)):
        return (np.arange(35).reshape(SHAPE) / 4 - 4).astype(data_type.dtype)
    if data_type.dtype == np.dtype(ml_dtypes.int4):
        return (np.arange(35).reshape(SHAPE) % 16 - 8).astype(data_type.dtype)
    return sample(data_type.dtype, SHAPE)


def _fields(dtype):
    return [f[0] for f in dtype] if isinstance(dtype, list) else [None]


def _ts_values(path, dtype, field):
    values = ts_open(path, field=field).read().result()
    if field is None and DataTypeV2.from_json(dtype).dtype.kind == "V":
        return None  # TensorStore shows raw bytes as an extra byte dimension numpy lacks
    return values


@pytest.mark.parametrize("compressor", COMPRESSORS, ids=lambda c: c and c["id"] +
                         str(c.get("cname", "")) or "none")
@pytest.mark.parametrize("order", ["C", "F"])
def test_compressors_both_directions(tmp_path, compressor, order):
    data = sample(np.dtype(">f4"), SHAPE)
    t = ts_open(tmp_path / "t", shape=list(SHAPE), chunks=list(CHUNKS), dtype=">f4",
                compressor=compressor, order=order)
    t.write(data).result()
    assert_same(zarrkit.open(tmp_path / "t", mode="r")[...], data)
    a = zarrkit.create(tmp_path / "k", shape=SHAPE, chunks=CHUNKS, dtype=">f4", zarr_format=2,
                       compressor=compressor, order=order)
    a[...] = data
    assert_same(ts_open(tmp_path / "k").read().result(), data)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtypes_both_directions(tmp_path, dtype):
    data = _sample(dtype)
    t = ts_open(tmp_path / "t", field=_fields(dtype)[0], shape=list(SHAPE), chunks=list(CHUNKS),
                dtype=dtype)
    assert json.loads((tmp_path / "t" / ".zarray").read_text())["dtype"] == dtype
    for field in _fields(dtype):
        ts_open(tmp_path / "t", field=field).write(data if field is None else data[field]
                                                   ).result()
    ours = zarrkit.open(tmp_path / "t", mode="r")
    assert ours.metadata["dtype"] == dtype
    got = ours[...]
    assert_same(got, data)
    a = zarrkit.create(tmp_path / "k", shape=SHAPE, chunks=CHUNKS,
                       dtype=DataTypeV2.from_json(dtype).stored, zarr_format=2)
    a[...] = data
    assert json.loads((tmp_path / "k" / ".zarray").read_text())["dtype"] == dtype
    for field in _fields(dtype):
        theirs = _ts_values(tmp_path / "k", dtype, field)
        if theirs is not None:
            assert_same(theirs, data if field is None else data[field])
    del t


def test_fixed_length_bytes_both_directions(tmp_path):
    data = np.array([b"", b"a", b"abcd", b"xyz\x00", b"\xff"] * 7, dtype="|S4").reshape(SHAPE)
    t = ts_open(tmp_path / "t", shape=list(SHAPE), chunks=list(CHUNKS), dtype="|S4")
    t.write(np.frombuffer(data.tobytes(), "S1").reshape(SHAPE + (4,))).result()
    assert_same(zarrkit.open(tmp_path / "t", mode="r")[...], data)
    a = zarrkit.create(tmp_path / "k", shape=SHAPE, chunks=CHUNKS, dtype="|S4", zarr_format=2)
    a[...] = data
    # TensorStore's Python binding reads `char` arrays back as `|S0` (empty), so only that it
    # accepts the metadata, fill value included, is checked in this direction.
    assert ts_open(tmp_path / "k").shape == SHAPE + (4,)


FILLS = [(">f8", "NaN"), ("<f4", "Infinity"), ("<f2", "-Infinity"), ("<i4", -5),
         (">u8", 2**64 - 1), ("|b1", True), ("<c8", [1.0, "NaN"]), ("<f8", None),
         ("|V2", "AQI="), ("bfloat16", 1.5),
         ([["a", "<i4"], ["b", ">f8", [2]]], "AQAAAD/wAAAAAAAAQAAAAAAAAAA=")]


@pytest.mark.parametrize("dtype, fill", FILLS, ids=str)
def test_fill_values_both_directions(tmp_path, dtype, fill):
    field = _fields(dtype)[0]
    ts_open(tmp_path / "t", field=field, shape=list(SHAPE), chunks=list(CHUNKS), dtype=dtype,
            fill_value=fill)
    ours = zarrkit.open(tmp_path / "t", mode="r")
    assert ours.metadata["fill_value"] == fill
    expected = _ts_values(tmp_path / "t", dtype, field)
    if expected is not None:
        got = ours[...]
        assert_same(got if field is None else got[field], expected)
    a = zarrkit.create(tmp_path / "k", shape=SHAPE, chunks=CHUNKS, zarr_format=2,
                       dtype=DataTypeV2.from_json(dtype).stored,
                       fill_value=ours.fill_value)
    a[0, 0] = a[1, 1]  # one stored chunk; the others are missing and read as the fill value
    assert json.loads((tmp_path / "k" / ".zarray").read_text())["fill_value"] == fill
    theirs = _ts_values(tmp_path / "k", dtype, field)
    if expected is not None and fill is not None:
        assert_same(theirs, expected)


@pytest.mark.parametrize("separator", [".", "/"])
def test_separators_both_directions(tmp_path, separator):
    data = sample(np.dtype("<u2"), SHAPE)
    ts_open(tmp_path / "t", shape=list(SHAPE), chunks=list(CHUNKS), dtype="<u2",
            dimension_separator=separator).write(data).result()
    assert_same(zarrkit.open(tmp_path / "t", mode="r")[...], data)
    a = zarrkit.create(tmp_path / "k", shape=SHAPE, chunks=CHUNKS, dtype="<u2", zarr_format=2,
                       dimension_separator=separator)
    a[...] = data
    assert_same(ts_open(tmp_path / "k").read().result(), data)


def test_tensorstore_spec_form_creates_what_tensorstore_reads(tmp_path):
    spec = {"driver": "zarr", "kvstore": kvstore(tmp_path), "path": "arr",
            "metadata": {"shape": [10, 6], "dtype": "<i2", "chunks": [4, 4], "order": "F"}}
    a = zarrkit.open(spec, create=True)
    assert a.zarr_format == 2 and a.metadata["compressor"]["id"] == "blosc"
    assert a.metadata["fill_value"] is None
    data = np.arange(60, dtype="<i2").reshape(10, 6)
    a[...] = data
    assert_same(ts.open({"driver": "zarr", "kvstore": kvstore(tmp_path / "arr")}).result()
                .read().result(), data)
    again = zarrkit.open({"driver": "zarr", "kvstore": kvstore(tmp_path), "path": "arr",
                          "metadata": {"dtype": "<i2"}})
    assert_same(again[...], data)
    with pytest.raises(zarrkit.SpecError, match="dtype"):
        zarrkit.open({"driver": "zarr", "kvstore": kvstore(tmp_path), "path": "arr",
                      "metadata": {"dtype": "<f4"}})
    with pytest.raises(zarrkit.NodeExistsError):
        zarrkit.open(spec, create=True, open=False)
    fresh = zarrkit.open(spec, create=True, delete_existing=True, open=False)
    assert (fresh[...] == 0).all()


def test_tensorstore_created_array_opens_through_the_spec(tmp_path):
    t = ts.open({"driver": "zarr", "kvstore": kvstore(tmp_path),
                 "metadata": {"shape": [5], "chunks": [2], "dtype": ">f8",
                              "fill_value": "NaN"}}, create=True).result()
    t[1:3] = [1.0, 2.0]
    a = zarrkit.open({"driver": "zarr", "kvstore": kvstore(tmp_path)}, read_only=True)
    assert_same(a[...], np.array([np.nan, 1.0, 2.0, np.nan, np.nan]))
    with pytest.raises(zarrkit.NodeNotFoundError):
        zarrkit.open({"driver": "zarr", "kvstore": kvstore(tmp_path / "missing")})

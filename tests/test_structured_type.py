"""zarr-python's `structured` v3 data type (numpy records): both ways with zarr-python, byte for
byte; fill values; what has no v3 form; v2 record arrays converted to it."""

import json
import warnings

import numpy as np
import pytest
import zarr

import zarrkit
from zarrkit.metadata import DataType

DTYPES = {
    "plain": [("a", "<i4"), ("b", "<f8")],
    "nested": [("p", [("q", "<i2"), ("r", "<f4")]), ("z", "<i8")],
    "text_and_time": [("x", "u1"), ("s", "S3"), ("t", "<M8[s]")],
}


def _values(dtype):
    values = np.zeros(3, dtype)
    for i, name in enumerate(values.dtype.names):
        kind = values.dtype[name].kind
        values[name][0] = {"S": b"ab", "M": np.datetime64("2020-01-01", "s"),
                           "V": (2, 3.5)}.get(kind, i + 1)
    return values


@pytest.mark.parametrize("name", DTYPES)
def test_both_ways_with_zarr_python(tmp_path, name):
    dtype, values = DTYPES[name], _values(DTYPES[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = zarr.create_array(str(tmp_path / "theirs"), shape=(3,), chunks=(2,),
                                   dtype=dtype, fill_value=np.zeros((), dtype)[()])
        theirs[:2] = values[:2]
    read = zarrkit.open(tmp_path / "theirs", mode="r")
    assert read.dtype == np.dtype(dtype) and read[...].tolist() == values.tolist()

    ours = zarrkit.create(tmp_path / "ours", shape=(3,), chunks=(2,), dtype=dtype)
    ours[:2] = values[:2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert zarr.open_array(str(tmp_path / "ours"))[...].tolist() == values.tolist()
    docs = [json.loads((tmp_path / n / "zarr.json").read_text()) for n in ("theirs", "ours")]
    for key in ("data_type", "fill_value", "codecs"):
        assert docs[0][key] == docs[1][key], key
    assert (tmp_path / "ours" / "c" / "0").read_bytes() == \
        (tmp_path / "theirs" / "c" / "0").read_bytes()


def test_fill_values(tmp_path):
    dtype = np.dtype(DTYPES["plain"])
    for fill in ((7, 2.5), np.array((7, 2.5), dtype)[()], np.array((7, 2.5), dtype).tobytes()):
        a = zarrkit.create(tmp_path / "a", shape=(1,), dtype=dtype, fill_value=fill,
                           overwrite=True)
        assert a[0].tolist() == (7, 2.5)
    data_type = DataType.parse(dtype)
    assert data_type.parse_fill_value(data_type.fill_value_to_json(a.fill_value)) == a.fill_value
    with pytest.raises(zarrkit.DataTypeError, match="raw fill value has 3 bytes"):
        zarrkit.create(tmp_path / "b", shape=(1,), dtype=dtype, fill_value=b"abc")


@pytest.mark.parametrize("json_form, message", [
    ({"name": "structured", "configuration": {"fields": []}}, "needs configuration"),
    ({"name": "structured", "configuration": {"fields": [["a", "int8"], ["a", "int8"]]}},
     "field names repeat"),
    ({"name": "structured", "configuration": {"fields": [["a", "nope"]]}}, "fields\\[0\\]"),
    ({"name": "structured", "configuration": {"fields": [["a"]]}}, "needs configuration"),
])
def test_bad_configurations_are_refused(json_form, message):
    with pytest.raises(zarrkit.DataTypeError, match=message):
        DataType.from_json(json_form)


def test_records_are_packed_and_array_fields_refused(tmp_path):
    aligned = np.dtype([("a", "u1"), ("b", "<i8")], align=True)  # padding after "a"
    a = zarrkit.create(tmp_path, shape=(2,), dtype=aligned)
    assert a.dtype.itemsize == 9 and a.metadata["data_type"]["configuration"]["fields"] == \
        [["a", "uint8"], ["b", "int64"]]
    a[...] = np.array([(1, -2), (3, 4)], aligned)
    assert a[...].tolist() == [(1, -2), (3, 4)]
    with pytest.raises(zarrkit.DataTypeError, match="field 'm' is an array"):
        DataType.from_numpy([("m", "<f4", (2,))])


def test_v2_records_convert_to_v3(tmp_path):
    dtype = [("a", ">i4"), ("b", "<f8")]  # mixed byte orders in v2: native values in v3
    src = zarrkit.create(tmp_path / "v2", shape=(3,), chunks=(2,), dtype=dtype, zarr_format=2)
    src[...] = np.array([(1, 1.5), (2, 2.5), (3, 3.5)], dtype)
    out = zarrkit.convert(tmp_path / "v2", tmp_path / "v3", progress=False)
    assert out.metadata["data_type"]["name"] == "structured"
    assert out[...].tolist() == [(1, 1.5), (2, 2.5), (3, 3.5)]

"""numpy's datetime64 and timedelta64 as v3 data types (zarr-python's `numpy.datetime64` and
`numpy.timedelta64`): both ways with zarr-python, byte for byte; their configurations and fill
values; v2 time arrays converted and upgraded to them."""

import json
import warnings

import numpy as np
import pytest
import zarr

import zarrkit
from zarrkit.metadata import DataType

DTYPES = ["datetime64[ns]", "datetime64[10s]", "datetime64[D]", "timedelta64[s]",
          "timedelta64[us]"]


def _values(dtype):
    if dtype.startswith("datetime"):
        return np.array(["2020-01-01T12", "NaT", "1969-12-31", "2262-01-01"], dtype)
    return np.array([5, "NaT", -3, 10**6], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_both_ways_with_zarr_python(tmp_path, dtype):
    values = _values(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = zarr.create_array(str(tmp_path / "theirs"), shape=(5,), chunks=(2,),
                                   dtype=dtype)
        theirs[:4] = values
    read = zarrkit.open(tmp_path / "theirs", mode="r")
    assert read.dtype == np.dtype(dtype) and np.isnat(read.fill_value)
    np.testing.assert_array_equal(read[:4], values)
    assert np.isnat(read[4])  # never written: the fill value, NaT

    ours = zarrkit.create(tmp_path / "ours", shape=(5,), chunks=(2,), dtype=dtype)
    ours[:4] = values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "ours"))[...],
                                      read[...])
    docs = [json.loads((tmp_path / n / "zarr.json").read_text()) for n in ("theirs", "ours")]
    for key in ("data_type", "fill_value", "codecs"):
        assert docs[0][key] == docs[1][key], key
    for key in ("c/0", "c/1"):
        assert (tmp_path / "ours" / key).read_bytes() == (tmp_path / "theirs" / key).read_bytes()


@pytest.mark.parametrize("json_form, dtype", [
    ({"name": "numpy.datetime64", "configuration": {"unit": "ms", "scale_factor": 1}}, "M8[ms]"),
    ({"name": "datetime64", "configuration": {"unit": "μs", "scale_factor": 5}}, "M8[5us]"),
    ({"name": "timedelta64", "configuration": {"unit": "generic", "scale_factor": 1}}, "m8"),
])
def test_configurations(json_form, dtype):
    data_type = DataType.from_json(json_form)
    assert data_type.dtype == np.dtype(dtype)
    assert data_type.parse_fill_value("NaT") is not None and \
        np.isnat(data_type.parse_fill_value("NaT"))
    assert data_type.fill_value_to_json(data_type.parse_fill_value(7)) == 7


@pytest.mark.parametrize("config", [{"unit": "ns"}, {"unit": "sec", "scale_factor": 1},
                                    {"unit": "s", "scale_factor": 0},
                                    {"unit": "s", "scale_factor": 1, "tz": "UTC"}])
def test_bad_configurations_are_refused(config):
    with pytest.raises(zarrkit.DataTypeError, match="numpy.datetime64 needs configuration"):
        DataType.from_json({"name": "numpy.datetime64", "configuration": config})
    with pytest.raises(zarrkit.DataTypeError, match="expected an integer"):
        DataType.from_json({"name": "numpy.datetime64", "configuration": {
            "unit": "s", "scale_factor": 1}}).parse_fill_value(1.5)


def test_fill_values_of_users(tmp_path):
    a = zarrkit.create(tmp_path / "a", shape=(2,), dtype="datetime64[s]",
                       fill_value="2000-01-01")
    assert a[0] == np.datetime64("2000-01-01T00:00:00")
    assert json.loads((tmp_path / "a" / "zarr.json").read_text())["fill_value"] == 946684800
    b = zarrkit.create(tmp_path / "b", shape=(2,), dtype="datetime64[ms]",
                       fill_value=np.datetime64("1970-01-02"))  # another unit: converted
    assert b.fill_value == np.datetime64(86400000, "ms")
    with pytest.raises(zarrkit.DataTypeError, match="no date or time"):
        zarrkit.create(tmp_path / "c", shape=(2,), dtype="datetime64[s]", fill_value="soon")


def test_v2_time_arrays_convert_and_upgrade(tmp_path):
    values = np.array(["2001-02-03", "NaT", "1999-12-31"], "datetime64[D]")
    for name in ("copy", "in_place"):
        src = zarrkit.create(tmp_path / name, shape=(3,), chunks=(2,), dtype=">M8[D]",
                             zarr_format=2, compressor={"id": "zstd", "level": 1})
        src[...] = values
    converted = zarrkit.convert(tmp_path / "copy", tmp_path / "v3", progress=False)
    upgraded = zarrkit.upgrade_metadata(tmp_path / "in_place")
    for a in (converted, upgraded):
        assert a.zarr_format == 3 and a.metadata["data_type"]["name"] == "numpy.datetime64"
        np.testing.assert_array_equal(a[...], values)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_array_equal(zarr.open_array(str(a.store.root))[...], values)
    assert upgraded.metadata["codecs"][0] == {"name": "bytes", "configuration": {"endian": "big"}}

"""Zarr v2 interoperability bugs found by hunting, each with zarr-python (`zarr_format=2`),
TensorStore's `zarr` driver or the v2 spec as the oracle."""

from __future__ import annotations

import base64
import json
import warnings

import numpy as np
import pytest
from _v2_helpers import assert_same

import zarrkit

zarr = pytest.importorskip("zarr")


def _zarr_read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_array(str(path), mode="r", zarr_format=2)[...]


def _write_zarray(path, **members):
    path.mkdir(parents=True, exist_ok=True)
    doc = {"zarr_format": 2, "compressor": None, "fill_value": 0, "order": "C",
           "filters": None, **members}
    (path / ".zarray").write_text(json.dumps(doc))


# -- fill_value null: chunks equal to the default fill must still be stored --------------------


@pytest.mark.parametrize("dtype, values", [("<i4", 0), ("|S2", b""), ("<f8", 0.0),
                                           (str, "")])
def test_null_fill_value_stores_every_chunk(tmp_path, dtype, values):
    """The spec: with fill_value null, a missing chunk's contents are undefined (zarr-python 2
    reads uninitialized memory). Zeros written must be stored, not dropped as "the fill"."""
    a = zarrkit.create(tmp_path, shape=(4,), chunks=(2,), dtype=dtype, zarr_format=2,
                       fill_value=None)
    a[...] = np.full(4, values, dtype=object if dtype is str else dtype)
    assert json.loads((tmp_path / ".zarray").read_text())["fill_value"] is None
    assert (tmp_path / "0").is_file() and (tmp_path / "1").is_file()
    assert_same(_zarr_read(tmp_path), a[...])


def test_null_fill_value_stores_every_chunk_as_tensorstore_does(tmp_path):
    ts = pytest.importorskip("tensorstore")
    metadata = {"shape": [4], "chunks": [2], "dtype": "<i4", "fill_value": None}
    t = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": str(tmp_path / "t")},
                 "metadata": metadata}, create=True).result()
    t.write(np.zeros(4, "<i4")).result()
    a = zarrkit.create(tmp_path / "k", shape=(4,), chunks=(2,), dtype="<i4", zarr_format=2,
                       fill_value=None)
    a[...] = 0
    stored = sorted(p.name for p in (tmp_path / "t").iterdir() if not p.name.startswith("."))
    assert stored == ["0", "1"]
    assert sorted(p.name for p in (tmp_path / "k").iterdir()
                  if not p.name.startswith(".")) == stored


def test_defined_fill_value_still_skips_fill_chunks(tmp_path):
    a = zarrkit.create(tmp_path, shape=(4,), chunks=(2,), dtype="<i4", zarr_format=2,
                       fill_value=0)
    a[...] = 0
    assert not (tmp_path / "0").exists() and not (tmp_path / "1").exists()


def test_null_fill_value_array_reopened_and_rewritten(tmp_path):
    zarrkit.create(tmp_path, shape=(2, 2), chunks=(1, 2), dtype="<u2", zarr_format=2,
                   fill_value=None)
    a = zarrkit.open(tmp_path, mode="r+")
    a[0] = 7
    a[0] = 0  # overwritten with the default fill: still stored, not deleted
    assert (tmp_path / "0.0").is_file()
    assert_same(_zarr_read(tmp_path)[0], np.zeros(2, "<u2"))


# -- chunks of length 0 for a dimension of length 0 ---------------------------------------------


def test_zero_chunk_length_for_an_empty_dimension_reads(tmp_path):
    """zarr-python 2 (`chunks=(None, 3)`) and dask's `to_zarr` of an empty array write a chunk
    length of 0; zarr-python 3 reads such arrays, so zarrkit does."""
    _write_zarray(tmp_path, shape=[0, 3], chunks=[0, 3], dtype="<i4")
    expected = _zarr_read(tmp_path)
    a = zarrkit.open(tmp_path, mode="r")
    assert a.shape == (0, 3) and a.chunks == (1, 3)
    assert_same(a[...], expected)
    assert a[...].dtype == np.dtype("<i4")


def test_zero_chunk_length_for_a_non_empty_dimension_is_refused(tmp_path):
    _write_zarray(tmp_path, shape=[2, 3], chunks=[0, 3], dtype="<i4")
    with pytest.raises(zarrkit.MetadataError, match="chunks"):
        zarrkit.open(tmp_path, mode="r")


def test_array_with_zero_chunk_length_can_grow(tmp_path):
    _write_zarray(tmp_path, shape=[0], chunks=[0], dtype="<f8")
    a = zarrkit.open(tmp_path, mode="r+")
    a.resize((3,))
    a[...] = [1.0, 2.0, 3.0]
    assert json.loads((tmp_path / ".zarray").read_text())["chunks"] == [1]
    assert_same(_zarr_read(tmp_path), np.array([1.0, 2.0, 3.0]))


# -- fill_value=0 for a structured type -----------------------------------------------------------


def test_structured_fill_value_zero_is_all_zeros(tmp_path):
    """zarr-python 2 (whose default fill value is 0 for every type) and zarr-python 3 take 0 as
    the all-zeros value of a structured type."""
    dtype = np.dtype([("a", "<i4"), ("b", ">f8", (2,))])
    a = zarrkit.create(tmp_path, shape=(3,), chunks=(2,), dtype=dtype, zarr_format=2,
                       fill_value=0)
    fill = json.loads((tmp_path / ".zarray").read_text())["fill_value"]
    assert base64.b64decode(fill) == bytes(dtype.itemsize)
    assert a[...].tobytes() == bytes(3 * dtype.itemsize)
    with pytest.raises(zarrkit.DataTypeError, match="fill_value"):
        zarrkit.create(tmp_path / "one", shape=(3,), dtype=dtype, zarr_format=2, fill_value=1)


def test_structured_fill_value_zero_matches_zarr_python(tmp_path):
    dtype = np.dtype([("x", "<f4"), ("y", ">i8")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(str(tmp_path / "theirs"), shape=(2,), chunks=(1,), dtype=dtype,
                          fill_value=0, zarr_format=2)
    zarrkit.create(tmp_path / "ours", shape=(2,), chunks=(1,), dtype=dtype, zarr_format=2,
                   fill_value=0)
    theirs = json.loads((tmp_path / "theirs" / ".zarray").read_text())["fill_value"]
    ours = json.loads((tmp_path / "ours" / ".zarray").read_text())["fill_value"]
    assert base64.b64decode(theirs) == base64.b64decode(ours)
    assert_same(_zarr_read(tmp_path / "ours"), _zarr_read(tmp_path / "theirs"))


# -- blosc shuffles structured items by their whole size, as numcodecs does for zarr-python -----


@pytest.mark.parametrize("dtype", [np.dtype([("a", "<i4"), ("b", "<f8")]), np.dtype("V12"),
                                   np.dtype([("s", "S3"), ("t", "<M8[s]")])], ids=str)
def test_blosc_typesize_of_structured_and_raw_chunks(tmp_path, dtype):
    """zarr-python hands numcodecs' blosc the structured array, whose item size becomes blosc's
    typesize; zarrkit gave 1, shuffling nothing (five times larger chunks here)."""
    values = np.frombuffer(np.arange(100 * dtype.itemsize, dtype=np.uint8) % 7 + 1,
                           dtype).copy()
    a = zarrkit.create(tmp_path, shape=(100,), chunks=(100,), dtype=dtype, zarr_format=2,
                       compressor={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1,
                                   "blocksize": 0})
    a[...] = values
    chunk = (tmp_path / "0").read_bytes()
    assert chunk[3] == dtype.itemsize  # the blosc header's typesize byte
    assert a[...].tobytes() == values.tobytes()
    if dtype.names is not None and "t" not in dtype.names:  # zarr-python cannot buffer 'M'
        numcodecs = pytest.importorskip("numcodecs")
        expected = numcodecs.Blosc("lz4", 5, 1).encode(values)
        assert chunk == bytes(expected)
        assert _zarr_read(tmp_path).tobytes() == values.tobytes()

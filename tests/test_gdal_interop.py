"""GDAL's Zarr driver both ways (GDAL 3.10, as rasterio's wheel bundles it): the v2 and v3 arrays
it writes read here (its v3 ones lack the `bytes` codec, as GDAL wrote them before 3.11), and
the v2 arrays zarrkit writes read there. (GDAL 3.10 knows no `bytes` codec, so it reads no
v3 array that keeps to the specification; GDAL 3.11 does.)"""

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import zarrkit

pytest.importorskip("rasterio")
HELPER = os.path.join(os.path.dirname(__file__), "_gdal.py")
EXPECTED = np.arange(35, dtype="f4").reshape(5, 7)


def _gdal(*args):
    done = subprocess.run([sys.executable, HELPER, *map(str, args)], capture_output=True,
                          check=False)
    assert done.returncode == 0, done.stderr.decode()
    return pickle.loads(done.stdout) if args[0] == "read" else None


@pytest.mark.parametrize("fmt, compress", [("ZARR_V2", "ZSTD"), ("ZARR_V2", "BLOSC"),
                                           ("ZARR_V3", "GZIP"), ("ZARR_V3", "BLOSC"),
                                           ("ZARR_V3", "NONE")])
def test_what_gdal_writes_reads_here(tmp_path, fmt, compress):
    path = tmp_path / "g.zarr"
    _gdal("write", path, fmt, compress)
    root = zarrkit.open(path, mode="r")
    assert sorted(root) == ["X", "Y", "g"]  # the raster and its coordinate arrays
    a = root["g"]
    assert a.zarr_format == (3 if fmt == "ZARR_V3" else 2) and a.chunks == (2, 3)
    np.testing.assert_array_equal(a[...], EXPECTED)
    assert a.dimension_names == ("Y", "X") and a.fill_value == -1
    assert "wkt" in a.attrs["_CRS"]
    np.testing.assert_array_equal(root["X"][...], np.arange(10.5, 17.5))
    if fmt == "ZARR_V3":  # read as if little-endian `bytes` came first; written back whole
        assert a.metadata["codecs"][0] == {"name": "bytes", "configuration": {"endian": "little"}}
        writable = zarrkit.open(path / "g", mode="r+")
        writable.attrs["checked"] = True
        written = zarrkit.open(path / "g", mode="r")
        assert written.metadata["codecs"][0]["name"] == "bytes"
        np.testing.assert_array_equal(written[...], EXPECTED)


@pytest.mark.parametrize("compressor", [{"id": "zstd", "level": 3},
                                        {"id": "blosc", "cname": "lz4", "clevel": 5,
                                         "shuffle": 1},
                                        {"id": "zlib", "level": 1}, None])
def test_what_zarrkit_writes_reads_in_gdal(tmp_path, compressor):
    path = tmp_path / "z.zarr"
    root = zarrkit.open_group(path, mode="w", zarr_format=2)
    a = root.create_array("t", shape=(5, 7), chunks=(2, 3), dtype="<f4", fill_value=-1.0,
                          dimension_names=["y", "x"], compressor=compressor)
    a[:4] = EXPECTED[:4]  # the last row never written: fill value there
    values, nodata = _gdal("read", path, "t")
    expected = EXPECTED.copy()
    expected[4] = -1
    np.testing.assert_array_equal(values, expected)
    assert nodata == -1


@pytest.mark.parametrize("codecs, expected", [
    (None, ["bytes"]),  # GDAL < 3.11, uncompressed
    ([], ["bytes"]),  # zarrita.js at first
    ([{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "crc32c"}],
     ["transpose", "bytes", "crc32c"]),  # after the array->array codecs
])
def test_documents_without_an_array_to_bytes_codec_read_as_little_endian_bytes(codecs,
                                                                               expected):
    doc = {"zarr_format": 3, "node_type": "array", "shape": [2, 3], "data_type": "int16",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0}
    if codecs is not None:
        doc["codecs"] = codecs
    md = zarrkit.metadata.ArrayMetadataV3.from_json(doc, where="zarr.json")
    assert [c["name"] for c in md.to_json()["codecs"]] == expected
    with pytest.raises(zarrkit.CodecError, match="unknown codec 'nosuch'"):
        zarrkit.metadata.ArrayMetadataV3.from_json({**doc, "codecs": [{"name": "nosuch"}]},
                                                   where="zarr.json")

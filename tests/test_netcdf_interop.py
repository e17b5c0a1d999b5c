"""netCDF-C's Zarr (plain Zarr v2 and NCZarr) both ways: what it writes reads here, value for
value, with its dimensions as dimension names; what zarrkit writes reads there."""

import os
import pickle
import shutil
import subprocess
import sys

import numpy as np
import pytest

import zarrkit

pytest.importorskip("netCDF4")
HELPER = os.path.join(os.path.dirname(__file__), "_netcdf.py")


def _netcdf(*args):
    """Run the netCDF helper in its own process (see _netcdf.py); what `read` pickles."""
    done = subprocess.run([sys.executable, HELPER, *map(str, args)], capture_output=True,
                          check=False)
    assert done.returncode == 0, done.stderr.decode()
    return pickle.loads(done.stdout) if args[0] == "read" else None


@pytest.fixture(scope="module", params=["zarr", "nczarr"])
def written(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("netcdf") / "nc.zarr"
    _netcdf("write", path, request.param)
    return path, request.param, _netcdf("read", path, request.param)


def test_what_netcdf_writes_reads_here(written):
    path, _, theirs = written
    root = zarrkit.open(path, mode="r")
    assert root.attrs["history"] == "written by netCDF-C"
    variables = {name: v for name, v in theirs.items() if name}
    assert len(variables) == 10
    for name, (values, dims, attrs) in variables.items():
        a = root[name]
        np.testing.assert_array_equal(a[...], values, err_msg=name)
        assert a.dimension_names == dims, name
        assert {k: a.attrs[k] for k in ("units",) if k in attrs} == \
            {k: attrs[k] for k in ("units",) if k in attrs}
    assert root["big_shuffled"][...][4, 3] == 19000  # shuffled by the type's 4 bytes


def test_what_zarrkit_writes_over_netcdfs_reads_there(written, tmp_path):
    path, mode, theirs = written
    copy = tmp_path / "copy.zarr"
    shutil.copytree(path, copy)
    a = zarrkit.open(copy / "big_shuffled", mode="r+")
    a[1:3, :] = -np.arange(8).reshape(2, 4)  # chunks encoded here, shuffle by 4 bytes
    expected = theirs["big_shuffled"][0].copy()
    expected[1:3, :] = -np.arange(8).reshape(2, 4)
    np.testing.assert_array_equal(_netcdf("read", copy, mode)["big_shuffled"][0], expected)


def test_what_zarrkit_writes_reads_in_netcdf(tmp_path):
    path = tmp_path / "zk.zarr"
    root = zarrkit.open_group(path, mode="w", zarr_format=2)
    root.attrs.update(title="made by zarrkit", version=3, scale=[1.5, 2.5])
    arrays = {
        "f8_nan_fill": ("<f8", {"fill_value": np.nan, "compressor": {"id": "zlib", "level": 3}}),
        "big_endian": (">i4", {"filters": [{"id": "shuffle", "elementsize": 4}],
                               "compressor": {"id": "zlib", "level": 1}}),
        "zstd": ("<u2", {"compressor": {"id": "zstd", "level": 3}}),
        "blosc": ("<i8", {"compressor": {"id": "blosc", "cname": "lz4", "clevel": 5,
                                         "shuffle": 1}}),
        "raw": ("<f4", {"compressor": None, "fill_value": -1.0}),
    }
    data = np.arange(42).reshape(6, 7)
    for name, (dtype, kwargs) in arrays.items():
        a = root.create_array(name, shape=(6, 7), chunks=(4, 3), dtype=dtype,
                              dimension_names=["y", "x"], **kwargs)
        a[:5, :] = data[:5]  # the last row's chunks partly, some chunks never written
        a.attrs["units"] = "m/s"
    sub = root.create_group("sub")
    sub.attrs["note"] = "nested"
    sub.create_array("t", shape=(3,), chunks=(2,), dtype="<f4",
                     dimension_names=["t"])[...] = [0.5, 1.5, 2.5]

    theirs = _netcdf("read", path, "zarr")
    attrs = theirs[""]
    assert attrs["title"] == "made by zarrkit" and attrs["version"] == 3
    assert list(attrs["scale"]) == [1.5, 2.5]  # netCDF gives lists as arrays
    for name in arrays:
        values, dims, attrs = theirs[name]
        np.testing.assert_array_equal(values, root[name][...], err_msg=name)
        assert dims == ("y", "x") and attrs["units"] == "m/s"
    assert theirs["sub/t"][0].tolist() == [0.5, 1.5, 2.5] and theirs["sub/t"][1] == ("t",)

"""Regression tests from a bug hunt on the integrations and tools: the xarray backend and
writer, conversion, copying from HDF5/netCDF-4, and the command line."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import zarrkit
from zarrkit.cli import main

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

from zarrkit.xarray import to_zarr  # noqa: E402
from zarrkit.xarray_backend import ZarrkitBackendEntrypoint as ENGINE  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning",
                                        "ignore::FutureWarning")


def _open(path, engine, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_dataset(path, engine=engine, **kwargs).load()


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_to_zarr_takes_xarrays_cf_encoding_keys(tmp_path, zarr_format):
    ds = xr.Dataset({"i": ("t", np.array([1, 2, -1], "i2")),
                     "p": ("t", np.array([1.5, np.nan, 3.25]))})
    enc = {"i": {"_FillValue": -1},
           "p": {"dtype": "i2", "scale_factor": 0.25, "add_offset": 1.0, "_FillValue": -999}}
    ours, theirs = str(tmp_path / "ours.zarr"), str(tmp_path / "theirs.zarr")
    to_zarr(ds, ours, zarr_format=zarr_format, encoding=enc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(theirs, zarr_format=zarr_format, encoding=enc)
    a = zarrkit.open(ours, mode="r")
    assert a["p"].dtype == np.int16 and a["p"].attrs["scale_factor"] == 0.25
    for engine in ("zarr", ENGINE):
        xr.testing.assert_identical(_open(ours, engine), _open(theirs, engine))
    assert np.isnan(_open(ours, ENGINE)["i"].values[2])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_reading_and_writing_again_keeps_the_codecs(tmp_path, zarr_format):
    """The backend reports the codecs in the encoding, as xarray's zarr engine does."""
    src, out = str(tmp_path / "src.zarr"), str(tmp_path / "out.zarr")
    ds = xr.Dataset({"v": (("y", "x"), np.arange(1.0, 21.0).reshape(4, 5))})  # no fill 0
    kwargs = {"compressors": [{"name": "gzip", "configuration": {"level": 3}}]} \
        if zarr_format == 3 else {"compressor": {"id": "zlib", "level": 3}}
    group = zarrkit.open_group(src, mode="w", zarr_format=zarr_format)
    a = group.create_array("v", shape=(4, 5), dtype="f8", chunks=(2, 5),
                           dimension_names=["y", "x"], **kwargs)
    a[...] = ds.v.values
    opened = xr.open_dataset(src, engine=ENGINE)
    assert opened.v.encoding["compressors"]
    for target in (zarr_format, 5 - zarr_format):  # the other format: its defaults
        to_zarr(opened, out, mode="w", zarr_format=target)
        copy = zarrkit.open(out, mode="r")["v"]
        assert copy.chunks == (2, 5)
        xr.testing.assert_identical(_open(out, ENGINE), ds)
        if target == zarr_format:
            assert copy.metadata == {**copy.metadata, **{k: a.metadata[k] for k in (
                ["codecs"] if target == 3 else ["compressor", "filters"])}}
    with warnings.catch_warnings():  # and xarray's own writer takes that encoding too
        warnings.simplefilter("ignore")
        opened.to_zarr(out, mode="w", zarr_format=zarr_format)
    xr.testing.assert_identical(_open(out, ENGINE), ds)


def test_strings_read_by_xarrays_engine_write_again_in_v2(tmp_path):
    """The v2 object codec in the encoding is not applied to the fixed-length strings xarray
    encodes (that made unreadable chunks)."""
    src, out = str(tmp_path / "src.zarr"), str(tmp_path / "out.zarr")
    ds = xr.Dataset({"s": ("x", np.array(["a", "bb", ""], dtype=object))})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(src, zarr_format=2)
        opened = xr.open_dataset(src, engine="zarr")
    to_zarr(opened, out, zarr_format=2)
    assert list(_open(out, ENGINE).s.values) == ["a", "bb", ""]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_groups_consolidate_at_the_root_as_xarray_does(tmp_path, zarr_format):
    ds = xr.Dataset({"v": ("y", np.arange(4.0))})
    ours, theirs = str(tmp_path / "ours.zarr"), str(tmp_path / "theirs.zarr")
    for group in ("a", "b/c"):
        to_zarr(ds, ours, group=group, zarr_format=zarr_format)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds.to_zarr(theirs, group=group, zarr_format=zarr_format)
    for path in (ours, theirs):
        for engine in ("zarr", ENGINE):
            for group in ("a", "/b/c"):
                got = _open(path, engine, group=group, consolidated=True)
                xr.testing.assert_identical(got, ds)


def test_convert_refuses_chunks_that_fit_no_array(tmp_path, capsys):
    zarrkit.create(tmp_path / "a.zarr", (8, 8), "i4", chunks=(4, 4))[...] = 1
    with pytest.raises(zarrkit.errors.SpecError, match="dimension"):
        zarrkit.convert(tmp_path / "a.zarr", tmp_path / "b.zarr", chunks=(2,), progress=False)
    assert main(["copy", str(tmp_path / "a.zarr"), str(tmp_path / "c.zarr"), "--shards",
                 "4,4,4", "--quiet"]) == 2
    assert "shards=(4, 4, 4)" in capsys.readouterr().err
    assert not (tmp_path / "b.zarr").exists() and not (tmp_path / "c.zarr").exists()
    g = zarrkit.open_group(tmp_path / "g.zarr", mode="w")  # other ranks keep their chunks
    g.create_array("one", shape=(8,), dtype="i4", chunks=(4,))
    g.create_array("two", shape=(8, 8), dtype="i4", chunks=(4, 4))
    out = zarrkit.convert(tmp_path / "g.zarr", tmp_path / "h.zarr", chunks=(2, 2),
                          progress=False)
    assert out["one"].chunks == (4,) and out["two"].chunks == (2, 2)


def test_cli_output_into_a_closed_pipe_is_no_traceback(tmp_path):
    zarrkit.create(tmp_path / "a.zarr", (4,), "i4")
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written (`zarrkit tree x | head`)
    proc = subprocess.run([sys.executable, "-m", "zarrkit.cli", "info", str(tmp_path / "a.zarr")],
                          stdout=write, stderr=subprocess.PIPE, timeout=60)
    os.close(write)
    assert proc.returncode == 141
    assert b"Traceback" not in proc.stderr


def test_copy_all_from_a_netcdf4_file(tmp_path):
    netcdf4 = pytest.importorskip("netCDF4")
    h5py = pytest.importorskip("h5py")
    path = str(tmp_path / "x.nc")
    with netcdf4.Dataset(path, "w") as nc:
        nc.createDimension("t", 4)
        nc.createDimension("x", 3)
        t = nc.createVariable("t", "f8", ("t",))
        t[:] = np.arange(4)
        t.units = "days since 2000-01-01"
        v = nc.createVariable("v", "i2", ("t", "x"), fill_value=-9, chunksizes=(2, 3))
        v[:] = np.arange(12).reshape(4, 3)
        v[0, 0] = np.ma.masked
        v.scale_factor = 0.5
        s = nc.createVariable("s", str, ("x",))
        s[:] = np.array(["a", "bb", "ccc"], dtype=object)
        nc.title = "nc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = xr.open_dataset(path).load()
    for zarr_format in (3, 2):
        out = str(tmp_path / f"v{zarr_format}.zarr")
        g = zarrkit.open_group(out, mode="w", zarr_format=zarr_format)
        with h5py.File(path, "r") as f:
            zarrkit.copy_all(f, g)  # was: REFERENCE_LIST cannot be written as JSON
        v = g["v"]
        assert v.dimension_names == ("t", "x") and v.chunks == (2, 3) and v.fill_value == -9
        assert "DIMENSION_LIST" not in v.attrs and "_Netcdf4Dimid" not in g["t"].attrs
        assert g["s"][...].tolist() == ["a", "bb", "ccc"]  # text, not h5py's bytes
        got = _open(out, ENGINE, consolidated=False)
        xr.testing.assert_identical(got.drop_vars("x"), want)

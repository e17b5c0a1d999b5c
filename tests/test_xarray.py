"""xarray: the `engine="zarrkit"` backend and the `zarrkit.xarray.to_zarr` writer."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")

import zarrkit  # noqa: E402
from zarrkit.xarray import to_zarr  # noqa: E402
from zarrkit.xarray_backend import ZarrkitBackendEntrypoint  # noqa: E402

ENGINE = ZarrkitBackendEntrypoint  # the class works installed or not; see test_entry_point


def _dataset() -> xr.Dataset:
    rng = np.random.default_rng(0)
    temp = rng.normal(280, 5, (4, 6, 8)).astype("float32")
    temp[0, 0, 0] = np.nan
    return xr.Dataset(
        {"temperature": (("time", "y", "x"), temp, {"units": "K", "long_name": "air"}),
         "counts": (("y", "x"), rng.integers(0, 100, (6, 8)).astype("int16")),
         "flag": ((), np.int8(3))},
        coords={"time": pd.date_range("2024-01-01", periods=4, freq="D"),
                "y": np.linspace(0, 5, 6), "x": np.arange(8)},
        attrs={"title": "test", "version": np.int64(2)},
    )


def _quiet_open_zarr(path: str, **kwargs) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_zarr(path, **kwargs)


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_zarr_python_written_store_opens_lazily(tmp_path, zarr_format):
    ds = _dataset()
    path = str(tmp_path / f"v{zarr_format}.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=zarr_format, consolidated=True)
    got = xr.open_dataset(path, engine=ENGINE)
    assert not got["temperature"].variable._in_memory  # lazy until used
    xr.testing.assert_identical(got.load(), _quiet_open_zarr(path).load())
    xr.testing.assert_equal(got, ds)
    assert got.temperature.attrs["units"] == "K"
    assert np.isnan(got.temperature.values[0, 0, 0])
    assert float(got.temperature.isel(time=2, y=slice(1, 3)).x[1]) == 1.0
    sub = got.temperature[[0, 2], 1:4, [1, 5, 7]].values  # outer indexing
    np.testing.assert_array_equal(sub, ds.temperature.values[[0, 2]][:, 1:4][:, :, [1, 5, 7]])


def test_writer_output_opens_in_xarray_and_zarr_python(tmp_path):
    ds = _dataset()
    path = str(tmp_path / "out.zarr")
    to_zarr(ds, path, encoding={"temperature": {"chunks": (2, 3, 4), "shards": (2, 6, 8)}})
    theirs = _quiet_open_zarr(path, consolidated=True)
    xr.testing.assert_identical(theirs.load(), ds)
    ours = xr.open_dataset(path, engine=ENGINE)
    xr.testing.assert_identical(ours.load(), ds)
    a = zarrkit.open(path, mode="r")["temperature"]
    assert a.shards == (2, 6, 8) and a.dimension_names == ("time", "y", "x")
    import zarr

    assert zarr.open_group(path, mode="r")["temperature"].shape == (4, 6, 8)


def test_writer_v2_and_dask_variables(tmp_path):
    da = pytest.importorskip("dask.array")
    ds = _dataset().chunk({"time": 1, "y": 3})
    assert isinstance(ds.temperature.data, da.Array)
    path = str(tmp_path / "v2.zarr")
    to_zarr(ds, path, zarr_format=2)
    assert zarrkit.open(path, mode="r").zarr_format == 2
    xr.testing.assert_identical(_quiet_open_zarr(path).load(), ds.load())
    xr.testing.assert_identical(xr.open_dataset(path, engine=ENGINE).load(), ds.load())
    with pytest.raises(FileExistsError):
        to_zarr(ds, path, zarr_format=2)
    to_zarr(ds.isel(time=[0]), path, zarr_format=2, mode="w")
    assert xr.open_dataset(path, engine=ENGINE).sizes["time"] == 1


def test_open_datatree(tmp_path):
    tree = xr.DataTree.from_dict({"/": xr.Dataset(attrs={"root": 1}),
                                  "/a": _dataset()[["counts"]],
                                  "/a/b": xr.Dataset({"v": ("z", np.arange(3.0))})})
    path = str(tmp_path / "tree.zarr")
    to_zarr(tree, path)
    got = xr.open_datatree(path, engine=ENGINE)
    assert got.attrs["root"] == 1
    np.testing.assert_array_equal(got["a/b"]["v"].values, np.arange(3.0))
    np.testing.assert_array_equal(got["a"]["counts"].values, tree["a"]["counts"].values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = xr.open_datatree(path, engine="zarr")
    np.testing.assert_array_equal(theirs["a/b"]["v"].values, np.arange(3.0))


def test_entry_point_and_remote_url(tmp_path):
    from importlib.metadata import entry_points

    names = {ep.name for ep in entry_points(group="xarray.backends")}
    if "zarrkit" not in names:
        pytest.skip("zarrkit is not installed (the entry point comes with pip install)")
    path = str(tmp_path / "e.zarr")
    to_zarr(_dataset(), path)
    xr.testing.assert_equal(xr.open_dataset(path, engine="zarrkit"), _dataset())


def test_s3_url_with_storage_options():
    pytest.importorskip("obstore")
    pytest.importorskip("moto")
    from _loopback import make_bucket, moto_s3, s3_options

    with moto_s3() as endpoint:
        make_bucket(endpoint, "xr-bucket")
        opts = s3_options(endpoint)
        to_zarr(_dataset(), "s3://xr-bucket/ds.zarr", storage_options=opts)
        got = xr.open_dataset("s3://xr-bucket/ds.zarr", engine=ENGINE, storage_options=opts,
                              chunks={})
        xr.testing.assert_identical(got.load(), _dataset())

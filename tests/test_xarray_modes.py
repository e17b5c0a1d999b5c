"""`zarrkit.xarray.to_zarr` on existing stores: modes "a", "a-", "r+", `append_dim` and `region`.

Every sequence of writes is done once by xarray itself (`Dataset.to_zarr`, zarr-python) and
once by zarrkit (or mixed, each writer growing the other's store); `xr.open_zarr` and
`engine="zarrkit"` must then read identical datasets from both stores."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

import zarrkit  # noqa: E402
from zarrkit.errors import (  # noqa: E402
    DataTypeError,
    NodeNotFoundError,
    SelectionError,
    SelectionValueError,
    SpecError,
    ZarrkitError,
)
from zarrkit.xarray import to_zarr  # noqa: E402
from zarrkit.xarray_backend import ZarrkitBackendEntrypoint  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning",
                                        "ignore::FutureWarning")

FORMATS = pytest.mark.parametrize("fmt", [3, 2])


def _weather(start: str = "2024-01-01", n: int = 4, seed: int = 0) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    temp = rng.normal(280, 5, (n, 3, 4)).astype("f4")
    temp[0, 1, 2] = np.nan
    return xr.Dataset(
        {"temp": (("time", "y", "x"), temp, {"units": "K"}),
         "rain": (("time", "x"), rng.integers(0, 50, (n, 4)).astype("i2")),
         "elev": (("y", "x"), np.arange(12.0).reshape(3, 4) + seed)},
        coords={"time": pd.date_range(start, periods=n, freq="6h"),
                "y": [0.5, 1.5, 2.5], "x": np.arange(4) * 10,
                "station": ("x", np.array(["a", "bb", "c", "dd"]))},
        attrs={"title": f"weather {seed}"})


def _write(writer: str, ds, path, **kwargs):
    """One write by xarray ("xr", zarr-python) or zarrkit ("zk"), same arguments."""
    if writer == "zk":
        return to_zarr(ds, str(path), **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ds.to_zarr(str(path), **kwargs)


def _run(path, steps, writers) -> None:
    for writer, (ds, kwargs) in zip(writers, steps, strict=True):
        _write(writer, ds, path, **kwargs)


def _readings(path, group: str | None = None) -> list[xr.Dataset]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [xr.open_zarr(str(path), group=group).load(),
                xr.open_dataset(str(path), engine=ZarrkitBackendEntrypoint, group=group).load()]


def assert_same_stores(theirs, ours, group: str | None = None) -> xr.Dataset:
    """Both readers read the same dataset, encoding of times included, from both stores."""
    reference = _readings(theirs, group)[0]
    for got in _readings(theirs, group)[1:] + _readings(ours, group):
        xr.testing.assert_identical(got, reference)
        for name, var in reference.variables.items():
            for key in ("units", "calendar", "dtype", "_FillValue"):
                assert str(got[name].encoding.get(key)) == str(var.encoding.get(key)), \
                    (name, key)
    return reference


def _compare(tmp_path, steps, fmt: int, writers: str = "zk") -> xr.Dataset:
    """`steps` done all by xarray, then with `writers` ("zk": all zarrkit, or one letter per
    step: x = xarray, z = zarrkit); the stores must read the same."""
    theirs, ours = tmp_path / "theirs.zarr", tmp_path / "ours.zarr"
    steps = [(ds, {"zarr_format": fmt, **kw}) for ds, kw in steps]
    _run(theirs, steps, ["xr"] * len(steps))
    mine = ["zk"] * len(steps) if writers == "zk" else \
        [{"x": "xr", "z": "zk"}[w] for w in writers]
    _run(ours, steps, mine)
    return assert_same_stores(theirs, ours)


# -- append_dim ------------------------------------------------------------------------------

@FORMATS
def test_append_datetimes_over_several_calls(tmp_path, fmt):
    steps = [(_weather("2024-01-01", 4, 0), {}),
             (_weather("2024-01-02", 3, 1), {"append_dim": "time"}),
             (_weather("2024-01-02T18", 2, 2), {"append_dim": "time", "mode": "a"}),
             (_weather("2024-01-05T06", 1, 3), {"append_dim": "time"})]
    got = _compare(tmp_path, steps, fmt)
    assert got.sizes["time"] == 10
    want = xr.concat([ds for ds, _ in steps], dim="time", data_vars="minimal",
                     coords="minimal", compat="override")
    np.testing.assert_array_equal(got.time.values, want.time.values)
    np.testing.assert_array_equal(got.temp.values, want.temp.values)  # NaNs where they were
    # mode "a" overwrote the variables without "time" with the last dataset's values
    np.testing.assert_array_equal(got.elev.values, steps[-1][0].elev.values)
    assert got.time.encoding["units"].startswith("hours since 2024-01-01")
    assert got.attrs == {"title": "weather 3"}  # as xarray: the group's attributes replaced


@FORMATS
def test_append_with_stored_encoding_packs_new_values(tmp_path, fmt):
    first = _weather(n=2)
    first.temp.encoding.update({"dtype": "int16", "scale_factor": 0.01, "add_offset": 280.0,
                                "_FillValue": -32768})
    first.time.encoding.update({"units": "days since 2000-01-01", "dtype": "float64"})
    got = _compare(tmp_path, [(first, {}), (_weather("2024-01-01T12", 3, 5),
                                            {"append_dim": "time"})], fmt)
    assert got.temp.encoding["scale_factor"] == 0.01
    assert str(got.time.encoding["units"]) == "days since 2000-01-01"
    stored = zarrkit.open(str(tmp_path / "ours.zarr"), mode="r")["temp"]
    assert stored.dtype == np.int16 and stored.shape == (5, 3, 4)


@FORMATS
def test_append_minus_leaves_variables_without_the_dimension(tmp_path, fmt):
    steps = [(_weather(n=3), {}),
             (_weather("2024-01-01T18", 2, 7), {"append_dim": "time", "mode": "a-"})]
    got = _compare(tmp_path, steps, fmt)
    np.testing.assert_array_equal(got.elev.values, _weather(n=3).elev.values)  # not seed 7's
    assert got.sizes["time"] == 5


@FORMATS
def test_dask_backed_appends_compute_later(tmp_path, fmt):
    pytest.importorskip("dask")
    first = _weather(n=4).chunk({"time": 2})
    later = [_weather("2024-01-02", 4, 1).chunk({"time": 2}),  # xarray needs them aligned
             _weather("2024-01-03", 3, 2).chunk({"time": 2})]
    theirs, ours = tmp_path / "theirs.zarr", tmp_path / "ours.zarr"
    for writer, path in (("xr", theirs), ("zk", ours)):
        _write(writer, first, path, zarr_format=fmt)
        for ds in later:
            delayed = _write(writer, ds, path, zarr_format=fmt, append_dim="time",
                             compute=False)
            assert hasattr(delayed, "compute")  # nothing written yet but the new shapes
            delayed.compute()
    got = assert_same_stores(theirs, ours)
    assert got.sizes["time"] == 11
    np.testing.assert_array_equal(got.rain.values[6:8], later[0].rain.values[2:4])


@FORMATS
def test_append_cftime_calendar_strings_and_masks(tmp_path, fmt):
    pytest.importorskip("cftime")

    def part(start: str, n: int, seed: int) -> xr.Dataset:
        rng = np.random.default_rng(seed)
        times = xr.date_range(start, periods=n, freq="D", calendar="noleap", use_cftime=True)
        return xr.Dataset(
            {"label": ("time", np.array(["ab", "c", "", "de", "f"][:n], "U2")),
             "ok": ("time", rng.random(n) > 0.5),
             "count": ("time", rng.integers(0, 9, n).astype("i4"))},
            coords={"time": times})

    first = part("2024-02-27", 3, 0)  # a leap year, but the calendar has no 29th of February
    first["count"].encoding["_FillValue"] = -1
    got = _compare(tmp_path, [(first, {}), (part("2024-03-01", 5, 1), {"append_dim": "time"}),
                              (part("2024-03-06", 2, 2), {"append_dim": "time"})], fmt)
    assert got.time.encoding["calendar"] == "noleap" and got.sizes["time"] == 10
    assert str(got.time.values[3]) == "2024-03-01 00:00:00"


@pytest.mark.parametrize("layout", [{"chunks": (4, 2)}, {"chunks": (2, 2), "shards": (4, 2)}])
def test_dask_append_cut_at_the_write_grid(tmp_path, layout):
    """Appended after 5 rows, dask blocks of 3 rows are cut at the chunk (shard) edges, so no
    two tasks write one stored object (xarray refuses such blocks; zarrkit rechunks)."""
    pytest.importorskip("dask")
    base = xr.Dataset({"v": (("t", "x"), np.arange(10.0).reshape(5, 2))},
                      coords={"t": np.arange(5)})
    path = str(tmp_path / "g.zarr")
    to_zarr(base, path, encoding={"v": layout})
    extra = xr.Dataset({"v": (("t", "x"), np.arange(100.0, 126.0).reshape(13, 2))},
                       coords={"t": np.arange(5, 18)}).chunk({"t": 3})
    delayed = to_zarr(extra, path, append_dim="t", compute=False)
    grown = zarrkit.open(path, mode="r")["v"]
    assert grown.shape == (18, 2) and np.isnan(grown[5:]).all()  # resized, not written yet
    delayed.compute()
    want = np.concatenate([base.v.values, extra.v.values])
    for got in _readings(path):
        np.testing.assert_array_equal(got.v.values, want)
    stored = zarrkit.open(path, mode="r")["v"]
    assert (stored.chunks, stored.shards) == (layout["chunks"], layout.get("shards"))



# -- modes "a" and "r+" without appending ------------------------------------------------------

@FORMATS
def test_mode_a_adds_variables_and_overwrites_existing(tmp_path, fmt):
    changed = _weather(seed=3)[["temp", "elev"]]
    changed["wind"] = (("time", "x"), np.ones((4, 4), "f8"))
    steps = [(_weather(), {}), (changed, {"mode": "a"}),
             (xr.Dataset({"note": ((), 5)}), {"mode": "a"})]
    got = _compare(tmp_path, steps, fmt)
    np.testing.assert_array_equal(got.temp.values, changed.temp.values)
    np.testing.assert_array_equal(got.rain.values, _weather().rain.values)  # left as it was
    assert int(got.note) == 5 and "wind" in got and got.attrs == {}


@FORMATS
def test_mode_a_creates_a_missing_group(tmp_path, fmt):
    got = _compare(tmp_path, [(_weather(), {"mode": "a"})], fmt)
    xr.testing.assert_identical(got, _weather())


@FORMATS
def test_mode_r_plus_overwrites_values_only(tmp_path, fmt):
    new_values = _weather(seed=4)[["temp", "rain"]]
    new_values.attrs = {"ignored": 1}
    got = _compare(tmp_path, [(_weather(), {}), (new_values, {"mode": "r+"})], fmt)
    np.testing.assert_array_equal(got.rain.values, new_values.rain.values)
    assert got.attrs == {"title": "weather 0"}  # r+ changes no metadata


@FORMATS
def test_transposed_variable_is_written_in_stored_order(tmp_path, fmt):
    flipped = _weather(seed=6).transpose("x", "y", "time")
    got = _compare(tmp_path, [(_weather(), {}), (flipped, {"mode": "a"})], fmt)
    assert got.temp.dims == ("time", "y", "x")
    np.testing.assert_array_equal(got.temp.values, _weather(seed=6).temp.values)


# -- region --------------------------------------------------------------------------------

def _template() -> xr.Dataset:
    """Eight times to be filled: dask-backed, written with compute=False (metadata only)."""
    pytest.importorskip("dask")
    return _weather(n=8).chunk({"time": 2})


NOT_TIME = ["elev", "station", "y", "x"]  # what a region along time only must drop


@FORMATS
def test_region_pieces_fill_an_array_created_without_values(tmp_path, fmt):
    full = _weather(n=8, seed=9)
    steps = [(_template(), {"compute": False})]
    for start in range(0, 8, 2):
        piece = full.isel(time=slice(start, start + 2)).drop_vars(NOT_TIME)
        region = {"time": slice(start, start + 2)} if start < 4 else "auto"
        steps.append((piece, {"region": region}))
    got = _compare(tmp_path, steps, fmt)
    np.testing.assert_array_equal(got.temp.values, full.temp.values)
    np.testing.assert_array_equal(got.rain.values, full.rain.values)
    assert np.isnan(got.elev.values).all()  # dask-backed in the template: never written


@FORMATS
def test_region_in_two_dimensions_and_mode_a(tmp_path, fmt):
    full = _weather(n=4, seed=2)
    steps = [(_weather(n=4), {})]
    for ys, xs in ((slice(0, 2), slice(0, 2)), (slice(2, 3), slice(0, 4)),
                   (slice(0, 2), slice(2, 4))):
        part = full.isel(y=ys, x=xs).drop_vars(["station", "time"])
        steps.append((part, {"region": {"y": ys, "x": xs}, "mode": "a"}))
    got = _compare(tmp_path, steps, fmt)
    np.testing.assert_array_equal(got.elev.values, full.elev.values)
    np.testing.assert_array_equal(got.rain.values[:, 2:], full.rain.values[:, 2:])
    assert got.attrs == full.attrs  # mode "a" replaced them; r+ would not


@FORMATS
def test_region_auto_on_dask_pieces(tmp_path, fmt):
    full = _weather(n=8, seed=11).chunk({"time": 2})
    steps = [(_template(), {"compute": False})]
    for start in (6, 0, 2, 4):  # any order
        piece = full.isel(time=slice(start, start + 2)).drop_vars(["elev", "station"])
        steps.append((piece, {"region": {"time": "auto", "y": slice(None), "x": "auto"}}))
    got = _compare(tmp_path, steps, fmt)
    np.testing.assert_array_equal(got.temp.values, full.temp.values)


# -- DataTree, groups and consolidated metadata --------------------------------------------

def _tree() -> xr.DataTree:
    return xr.DataTree.from_dict({"/": xr.Dataset(attrs={"kind": "tree"}),
                                  "/a": _weather(n=2),
                                  "/a/b": xr.Dataset({"v": ("z", np.arange(3.0))})})


def _trees(path) -> list[xr.DataTree]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [xr.open_datatree(str(path), engine="zarr").load(),
                xr.open_datatree(str(path), engine=ZarrkitBackendEntrypoint).load()]


def _assert_same_trees(theirs, ours) -> xr.DataTree:
    reference = _trees(theirs)[0]
    for got in _trees(theirs)[1:] + _trees(ours):
        xr.testing.assert_identical(got, reference)
    return reference


@FORMATS
def test_datatree_group_grown_with_group_argument(tmp_path, fmt):
    theirs, ours = tmp_path / "theirs.zarr", tmp_path / "ours.zarr"
    more = xr.DataTree.from_dict({"/": xr.Dataset(attrs={"kind": "tree 2"}),
                                  "/a/c": xr.Dataset({"w": ("z", np.ones(2))}),
                                  "/d": xr.Dataset({"u": ((), 1.5)})})
    for writer, path in (("xr", theirs), ("zk", ours)):
        _write(writer, _tree(), path, zarr_format=fmt)
        for start in ("2024-01-01T12", "2024-01-02"):
            _write(writer, _weather(start, 2, 3), path, group="a", append_dim="time")
        _write(writer, more, path, mode="a")
    reference = _assert_same_trees(theirs, ours)
    assert reference["a"].sizes["time"] == 6 and reference.attrs == {"kind": "tree 2"}
    assert_same_stores(theirs, ours, group="a")


@FORMATS
def test_datatree_r_plus_writes_values_in_every_group(tmp_path, fmt):
    theirs, ours = tmp_path / "theirs.zarr", tmp_path / "ours.zarr"
    values = xr.DataTree.from_dict({"/a": _weather(n=2, seed=8)[["temp", "rain"]],
                                    "/a/b": xr.Dataset({"v": ("z", [7.0, 8.0, 9.0])})})
    for writer, path in (("xr", theirs), ("zk", ours)):
        _write(writer, _tree(), path, zarr_format=fmt)
        _write(writer, values, path, mode="r+")
    reference = _assert_same_trees(theirs, ours)
    np.testing.assert_array_equal(reference["a/b"]["v"].values, [7.0, 8.0, 9.0])
    np.testing.assert_array_equal(reference["a"]["rain"].values, values["a"]["rain"].values)
    with pytest.raises(NodeNotFoundError, match="r\\+"):
        to_zarr(xr.DataTree.from_dict({"/e": xr.Dataset({"v": ("z", [1.0])})}), str(ours),
                mode="r+")


@FORMATS
def test_consolidated_metadata_follows_the_writes(tmp_path, fmt):
    theirs, ours = tmp_path / "theirs.zarr", tmp_path / "ours.zarr"
    _write("xr", _weather(), theirs, zarr_format=fmt)
    _write("xr", _weather(), ours, zarr_format=fmt)
    _write("xr", _weather("2024-01-02", 3, 1), theirs, append_dim="time")
    # consolidated=False still leaves no stale record behind
    to_zarr(_weather("2024-01-02", 3, 1), str(ours), append_dim="time", consolidated=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        group = zarr.open_consolidated(str(ours), mode="r", zarr_format=fmt)
        assert group["temp"].shape == (7, 3, 4)
        got = xr.open_zarr(str(ours), consolidated=True).load()
    xr.testing.assert_identical(got, _readings(theirs)[0])
    to_zarr(_weather("2024-01-02T18", 1, 2), str(ours), append_dim="time")
    assert zarrkit.open(str(ours), mode="r")["time"].shape == (8,)
    assert xr.open_zarr(str(ours), consolidated=True).sizes["time"] == 8


# -- one writer growing the other's store ---------------------------------------------------

@FORMATS
@pytest.mark.parametrize("writers", ["xzz", "zxx", "xzx", "zxz"])
def test_cross_writes(tmp_path, fmt, writers):
    steps = [(_weather(), {}), (_weather("2024-01-02", 2, 1), {"append_dim": "time"}),
             (_weather("2024-01-02T12", 3, 2), {"append_dim": "time"})]
    got = _compare(tmp_path, steps, fmt, writers)
    assert got.sizes["time"] == 9


@FORMATS
@pytest.mark.parametrize("writers", ["xzx", "zxz"])
def test_cross_region_writes(tmp_path, fmt, writers):
    full = _weather(n=8, seed=5)
    pieces = [(full.isel(time=slice(i, i + 4)).drop_vars(NOT_TIME), {"region": "auto"})
              for i in (0, 4)]
    got = _compare(tmp_path, [(_template(), {"compute": False})] + pieces, fmt, writers)
    np.testing.assert_array_equal(got.rain.values, full.rain.values)


# -- refusals: xarray refuses them too, zarrkit before writing anything -------------------

def _snapshot(path) -> dict[str, bytes]:
    files = {}
    for folder, _, names in os.walk(path):
        for name in names:
            full = os.path.join(folder, name)
            with open(full, "rb") as f:
                files[os.path.relpath(full, path)] = f.read()
    return files


def _bad_dims():
    ds = _weather("2024-01-02", 2, 1)
    return ds.assign(rain=(("time", "y"), np.zeros((2, 3), "i2")))


def _longer_strings():
    ds = _weather("2024-01-02", 2, 1)
    return ds.assign_coords(station=("x", np.array(["eee", "f", "g", "h"])))


REFUSED = {
    "different dimension names": (_bad_dims, {"append_dim": "time"}, SpecError, "rain"),
    "other sizes without append": (lambda: _weather(n=5), {"mode": "a"}, SelectionValueError,
                                   "temp"),
    "other sizes along another dim": (lambda: _weather("2024-01-02", 2).isel(x=[0, 1]),
                                      {"append_dim": "time"}, SelectionValueError, "along 'x'"),
    "dtype mismatch": (_longer_strings, {"append_dim": "time"}, DataTypeError, "station"),
    "encoding on existing variable": (lambda: _weather("2024-01-02", 2),
                                      {"append_dim": "time",
                                       "encoding": {"temp": {"dtype": "f8"}}},
                                      SpecError, "temp"),
    "r+ adding a variable": (lambda: _weather().assign(new=("x", np.zeros(4))),
                             {"mode": "r+"}, SpecError, "new"),
    "region out of bounds": (lambda: _weather(n=2).drop_vars(NOT_TIME),
                             {"region": {"time": slice(3, 5)}}, SelectionError, "out of bounds"),
    "region of another size": (lambda: _weather(n=2).drop_vars(NOT_TIME),
                               {"region": {"time": slice(0, 3)}}, SelectionValueError, "time"),
    "region with variables lacking its dims": (lambda: _weather(n=2),
                                               {"region": {"time": slice(0, 2)}}, SpecError,
                                               "drop_vars"),
    "region auto with new coordinate values": (
        lambda: _weather("2030-01-01", 2).drop_vars(NOT_TIME), {"region": "auto"},
        SelectionError, "time"),
    "region adding a variable": (
        lambda: _weather(n=2).drop_vars(NOT_TIME).assign(new=("time", np.zeros(2))),
        {"region": {"time": slice(0, 2)}}, SpecError, "new"),
    "unknown append_dim": (lambda: _weather(), {"append_dim": "depth"}, SpecError, "depth"),
    "append_dim and region": (lambda: _weather(n=2).drop_vars(NOT_TIME),
                              {"append_dim": "time", "region": {"time": slice(0, 2)}},
                              SpecError, "both"),
    "append_dim with mode w-": (lambda: _weather(), {"append_dim": "time", "mode": "w-"},
                                SpecError, "append_dim"),
    "region with mode w": (lambda: _weather(), {"region": "auto", "mode": "w"}, SpecError,
                           "region"),
    "unknown mode": (lambda: _weather(), {"mode": "x"}, SpecError, "mode"),
}
#: xarray writes these, wrongly: half hours encoded in minutes into an "hours since" array.
ONLY_ZARRKIT_REFUSES = {
    "times the stored units cannot hold": (
        lambda: _weather("2024-01-02T00:30", 2), {"append_dim": "time"}, SpecError, "units"),
}


@FORMATS
@pytest.mark.parametrize("case", list(REFUSED) + list(ONLY_ZARRKIT_REFUSES))
def test_refused_before_writing(tmp_path, fmt, case):
    make, kwargs, error, named = {**REFUSED, **ONLY_ZARRKIT_REFUSES}[case]
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    _write("zk", _weather(), ours, zarr_format=fmt)
    _write("xr", _weather(), theirs, zarr_format=fmt)
    before = _snapshot(ours)
    with pytest.raises(error, match=named):
        to_zarr(make(), str(ours), **kwargs)
    assert _snapshot(ours) == before
    if case in REFUSED:
        with pytest.raises(Exception):  # noqa: B017 - xarray's own exception types vary
            _write("xr", make(), theirs, **kwargs)


def test_r_plus_needs_an_existing_group(tmp_path):
    path = tmp_path / "none.zarr"
    with pytest.raises(NodeNotFoundError, match="r\\+"):
        to_zarr(_weather(), str(path), mode="r+")
    assert _snapshot(path) == {}


def test_append_dim_needs_a_stored_dimension_even_in_a_new_store(tmp_path):
    path = tmp_path / "new.zarr"
    with pytest.raises(SpecError, match="append_dim='time'"):
        to_zarr(_weather(), str(path), append_dim="time")
    assert _snapshot(path) == {}


def test_datatree_append_dim_refused(tmp_path):
    path = str(tmp_path / "t.zarr")
    to_zarr(_tree(), path)
    with pytest.raises(SpecError, match="DataTree"):
        to_zarr(_tree(), path, append_dim="time")


def test_zarr_format_of_existing_group_is_kept_and_checked(tmp_path):
    path = str(tmp_path / "v2.zarr")
    to_zarr(_weather(), path, zarr_format=2)
    to_zarr(_weather("2024-01-02", 1), path, append_dim="time")  # detected: v2
    assert zarrkit.open(path, mode="r").zarr_format == 2
    assert json.loads((tmp_path / "v2.zarr" / "temp" / ".zarray").read_text())["shape"][0] == 5
    with pytest.raises(ZarrkitError, match="zarr_format=3"):
        to_zarr(_weather("2024-01-02T06", 1), path, append_dim="time", zarr_format=3)


def test_dask_blocks_are_cut_at_grid_lines_from_the_region_start():
    da = pytest.importorskip("dask.array")
    from zarrkit.xarray_modes import _offset_chunks

    data = da.zeros((13, 2), chunks=(3, 2))
    # rows 5..18 of 4-row chunks: 5-8, 8-12, 12-16, 16-18 (blocks near 3 rows become 4)
    assert _offset_chunks(data, (slice(5, 18), slice(0, 2)), (4, 2)) == ((3, 4, 4, 2), (2,))
    big = da.zeros((20,), chunks=(9,))
    assert _offset_chunks(big, (slice(2, 22),), (4,)) == ((6, 8, 6),)

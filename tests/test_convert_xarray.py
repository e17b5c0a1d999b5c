"""Cross-format conversion keeps what xarray reads: datasets written by xarray (zarr-python) in
one Zarr format, converted by zarrkit (`convert`, the CLI, `copy`/`copy_all`,
`upgrade_metadata`), decode in xarray to the identical Dataset, masks and encodings included."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

import zarrkit  # noqa: E402
from zarrkit.cli import main  # noqa: E402
from zarrkit.xarray_backend import ZarrkitBackendEntrypoint  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning",
                                        "ignore::FutureWarning")

#: Encoding keys xarray reads back from the store's metadata and attributes.
ENCODING_KEYS = ("_FillValue", "dtype", "scale_factor", "add_offset", "units", "calendar")


def _dataset() -> xr.Dataset:
    times = pd.date_range("2021-03-01", periods=6, freq="6h").values.copy()
    times[4] = np.datetime64("NaT")
    return xr.Dataset(
        {"nan_float": (("t",), np.array([1.5, np.nan, 3.0, 0.0, np.nan, -2.0])),
         "filled_float": (("t", "x"), np.array([[1, -9999, 3], [0, 5, -9999]] * 3, "f4")),
         "masked_int": (("t",), np.array([4, -1, 0, 7, -1, 2], "i4"), {"long_name": "count"}),
         "plain_int": (("t",), np.array([0, 1, 2, 0, 4, 5], "i8")),
         "unmasked_float": (("t",), np.array([0.0, 1.0, np.nan, 0.0, 4.0, 5.0], "f4")),
         "packed": (("t",), np.array([1.5, np.nan, 2.25, 0.0, -3.0, 1.0])),
         "flag": (("t",), np.array([True, False, True, False, False, True])),
         "label": (("t",), np.array(["a", "bb", "", "ccc", "d", "ee"], "U3")),
         "code": (("t",), np.array([b"ab", b"", b"c", b"dd", b"e", b"f"], "S2")),
         "text": (("t",), np.array(["x", "", "yz", "é", "", "w"], object)),  # vlen strings
         "when": (("t",), times),
         "scalar": ((), 2.5)},
        coords={"t": np.arange(6), "x": ("x", np.array([10.0, 20.0, 30.0]), {"units": "m"})},
        attrs={"title": "converted", "history": ["a", "b"]})


ENCODING = {"filled_float": {"_FillValue": -9999.0},
            "masked_int": {"_FillValue": -1},
            "unmasked_float": {"_FillValue": None},
            "packed": {"dtype": "int16", "scale_factor": 0.25, "add_offset": 1.0,
                       "_FillValue": -32768},
            "when": {"units": "hours since 2021-03-01", "dtype": "int64"}}


def _write(path, fmt: int, consolidated: bool = True, ds: xr.Dataset | None = None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (ds if ds is not None else _dataset()).to_zarr(
            str(path), zarr_format=fmt, encoding=ENCODING, consolidated=consolidated, mode="w")


def _opened(path, group: str | None = None) -> list[xr.Dataset]:
    """The store as xarray reads it: open_zarr, open_dataset(engine="zarr"), and zarrkit's
    engine."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [xr.open_zarr(str(path), group=group).load(),
                xr.open_dataset(str(path), engine="zarr", group=group).load(),
                xr.open_dataset(str(path), engine=ZarrkitBackendEntrypoint, group=group).load()]


def assert_reads_the_same(source, copy, group: str | None = None,
                          copy_group: str | None = None) -> None:
    """Identical datasets (values, NaN masks, dims, coords, attrs) through every reader, with
    the same CF encoding (`_FillValue`, dtype, packing, time units)."""
    copied = _opened(copy, copy_group or group)
    for before, after in zip(_opened(source, group), copied, strict=True):
        xr.testing.assert_identical(after, before)
        for name, var in before.variables.items():
            for key in ENCODING_KEYS:
                _same(after[name].encoding.get(key, "absent"), var.encoding.get(key, "absent"),
                      f"{name}.encoding[{key!r}]")


def _same(got, want, what: str) -> None:
    if isinstance(want, float | np.floating) and np.isnan(want):
        assert isinstance(got, float | np.floating) and np.isnan(got), what
    else:
        # (values only: xarray itself gives v2 masks as numpy scalars, v3's as Python numbers)
        assert got == want, f"{what}: {got!r} != {want!r}"


def _mask_matters(path) -> None:
    """The source holds values that only a mask turns into NaN (so the checks can fail)."""
    ds = _opened(path)[0]
    assert int(ds["masked_int"].isnull().sum()) == 2 and ds["masked_int"].dtype == np.float64
    assert int(ds["filled_float"].isnull().sum()) == 6
    assert int(ds["packed"].isnull().sum()) == 1 and int(ds["when"].isnull().sum()) == 1
    assert ds["plain_int"].dtype == np.int64 and int((ds["plain_int"] == 0).sum()) == 2


def _doc(path, name: str) -> dict:
    v3 = path / name / "zarr.json"
    if v3.exists():
        return json.loads(v3.read_text())
    doc = json.loads((path / name / ".zarray").read_text())
    attrs = path / name / ".zattrs"
    doc["attributes"] = json.loads(attrs.read_text()) if attrs.exists() else {}
    return doc


# -- convert ----------------------------------------------------------------------------------


@pytest.mark.parametrize("consolidated", [True, False])
@pytest.mark.parametrize(("source", "target"), [(2, 3), (3, 2)])
def test_convert_dataset_reads_the_same(tmp_path, source, target, consolidated):
    _write(tmp_path / "src.zarr", source, consolidated)
    _mask_matters(tmp_path / "src.zarr")
    out = zarrkit.convert(tmp_path / "src.zarr", tmp_path / "dst.zarr", zarr_format=target,
                          progress=False)
    assert out.zarr_format == target
    assert_reads_the_same(tmp_path / "src.zarr", tmp_path / "dst.zarr")
    root = tmp_path / "dst.zarr"
    has_consolidated = (root / ".zmetadata").exists() if target == 2 else \
        "consolidated_metadata" in json.loads((root / "zarr.json").read_text())
    assert has_consolidated == consolidated


def test_v2_to_v3_metadata_is_what_xarray_writes(tmp_path):
    """The converted v3 masks and fill values are those xarray writes natively in v3."""
    _write(tmp_path / "v2.zarr", 2)
    _write(tmp_path / "native3.zarr", 3)
    zarrkit.convert(tmp_path / "v2.zarr", tmp_path / "v3.zarr", progress=False)
    for name in ("nan_float", "filled_float", "masked_int", "packed", "plain_int", "flag",
                 "when", "scalar", "t", "unmasked_float"):
        ours, native = _doc(tmp_path / "v3.zarr", name), _doc(tmp_path / "native3.zarr", name)
        assert ours["attributes"] == native["attributes"], name
        assert ours.get("dimension_names") == native.get("dimension_names"), name
    assert _doc(tmp_path / "v3.zarr", "unmasked_float")["fill_value"] == "NaN"  # as xarray
    assert _doc(tmp_path / "v3.zarr", "filled_float")["attributes"]["_FillValue"] == \
        "AAAAAICHw8A="  # -9999.0 as xarray encodes float masks
    assert _doc(tmp_path / "v3.zarr", "masked_int")["fill_value"] == -1  # missing chunks: masked


def test_v3_to_v2_metadata_is_what_xarray_writes(tmp_path):
    _write(tmp_path / "v3.zarr", 3)
    _write(tmp_path / "native2.zarr", 2)
    zarrkit.convert(tmp_path / "v3.zarr", tmp_path / "v2.zarr", zarr_format=2, progress=False)
    for name in ("nan_float", "filled_float", "masked_int", "packed", "plain_int", "flag",
                 "label", "code", "text", "when", "scalar", "t", "unmasked_float"):
        ours, native = _doc(tmp_path / "v2.zarr", name), _doc(tmp_path / "native2.zarr", name)
        assert ours["attributes"] == native["attributes"], name
        _same(ours["fill_value"], native["fill_value"], name)


def test_round_trip_v2_v3_v2_gives_back_the_metadata(tmp_path):
    _write(tmp_path / "a.zarr", 2, consolidated=False)
    zarrkit.convert(tmp_path / "a.zarr", tmp_path / "b.zarr", progress=False)
    zarrkit.convert(tmp_path / "b.zarr", tmp_path / "c.zarr", zarr_format=2, progress=False)
    for name in _dataset().variables:
        before, after = _doc(tmp_path / "a.zarr", name), _doc(tmp_path / "c.zarr", name)
        for key in ("dtype", "shape", "chunks", "attributes"):
            assert after[key] == before[key], (name, key)
        _same(after["fill_value"], before["fill_value"], name)
    assert_reads_the_same(tmp_path / "a.zarr", tmp_path / "c.zarr")


def test_missing_chunks_stay_masked(tmp_path):
    """Chunks never written read as the fill value: after conversion they must still read
    as missing (v2 -> v3) or as data (v3 -> v2), as in the source."""
    for fmt, stored in ((2, -1), (3, 0)):  # the array's fill value: v2 -1 (the mask), v3 0
        ds = xr.Dataset({"v": (("t",), np.full(8, stored, "i4"))})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds.to_zarr(str(tmp_path / f"s{fmt}.zarr"), zarr_format=fmt, mode="w",
                       encoding={"v": {"_FillValue": -1, "chunks": (2,)}})
        chunks = [p for p in (tmp_path / f"s{fmt}.zarr" / "v").rglob("*")
                  if p.is_file() and not p.name.startswith((".z", "zarr.json"))]
        assert not chunks  # every chunk equals the fill value: none stored
        zarrkit.convert(tmp_path / f"s{fmt}.zarr", tmp_path / f"d{fmt}.zarr",
                        zarr_format=5 - fmt, progress=False)
        assert_reads_the_same(tmp_path / f"s{fmt}.zarr", tmp_path / f"d{fmt}.zarr")
        v = _opened(tmp_path / f"d{fmt}.zarr")[0]["v"]
        assert bool(v.isnull().all()) if fmt == 2 else bool((v == 0).all())


def test_v3_unmasked_zeros_stay_data_in_v2(tmp_path):
    """v3's default fill value 0 is no mask: in v2 it must not become one (fill_value null)."""
    _write(tmp_path / "v3.zarr", 3)
    zarrkit.convert(tmp_path / "v3.zarr", tmp_path / "v2.zarr", zarr_format=2, progress=False)
    assert _doc(tmp_path / "v2.zarr", "plain_int")["fill_value"] is None
    assert _doc(tmp_path / "v2.zarr", "masked_int")["fill_value"] == -1
    ds = _opened(tmp_path / "v2.zarr")[0]
    assert ds["plain_int"].dtype == np.int64 and int((ds["plain_int"] == 0).sum()) == 2


@pytest.mark.parametrize(("source", "target"), [(2, 3), (3, 2)])
def test_zarrkit_xarray_writer_output_converts(tmp_path, source, target):
    from zarrkit.xarray import to_zarr

    to_zarr(_dataset(), tmp_path / "src.zarr", zarr_format=source, encoding=ENCODING)
    zarrkit.convert(tmp_path / "src.zarr", tmp_path / "dst.zarr", zarr_format=target,
                    progress=False)
    assert_reads_the_same(tmp_path / "src.zarr", tmp_path / "dst.zarr")


# -- plain arrays -------------------------------------------------------------------------------


def test_plain_arrays_gain_no_xarray_attributes(tmp_path):
    root = zarrkit.open_group(tmp_path / "v2", mode="w", zarr_format=2)
    a = root.create_array("a", shape=(4,), dtype="<i4", fill_value=7)
    a[:2] = [1, 2]
    zarrkit.convert(tmp_path / "v2", tmp_path / "v3", progress=False)
    doc = _doc(tmp_path / "v3", "a")
    assert doc["attributes"] == {} and doc["fill_value"] == 7 and "dimension_names" not in doc
    # a lone v3 array with named dimensions is no dataset variable: its fill value stays
    lone = zarrkit.create(tmp_path / "lone3", shape=(3,), dtype="<f4", fill_value=-1.5,
                          dimension_names=["x"])
    lone[:1] = 1
    v2 = zarrkit.convert(tmp_path / "lone3", tmp_path / "lone2", zarr_format=2, progress=False)
    assert v2.fill_value == -1.5 and dict(v2.attrs) == {"_ARRAY_DIMENSIONS": ["x"]}
    # v3 arrays below a group without named dimensions keep their fill value too
    g = zarrkit.open_group(tmp_path / "g3", mode="w")
    b = g.create_array("b", shape=(2, 2), dtype="<u2", fill_value=5)
    b[0] = 1
    out = zarrkit.convert(tmp_path / "g3", tmp_path / "g2", zarr_format=2, progress=False)
    assert out["b"].fill_value == 5 and dict(out["b"].attrs) == {}
    np.testing.assert_array_equal(out["b"][...], [[1, 1], [5, 5]])


def test_undecodable_fill_attribute_converts_as_plain_zarr(tmp_path):
    g = zarrkit.open_group(tmp_path / "g3", mode="w")
    a = g.create_array("a", shape=(2,), dtype="<f8", fill_value=0.0, dimension_names=["x"],
                       attributes={"_FillValue": -1.0})  # not xarray's base64 encoding
    a[...] = [1.0, -1.0]
    out = zarrkit.convert(tmp_path / "g3", tmp_path / "g2", zarr_format=2, progress=False)
    assert out["a"].fill_value == 0.0 and out["a"].attrs["_FillValue"] == -1.0


# -- other entry points -------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "target"), [(2, 3), (3, 2)])
def test_cli_convert(tmp_path, source, target, capsys):
    _write(tmp_path / "src.zarr", source)
    code = main(["convert", str(tmp_path / "src.zarr"), str(tmp_path / "dst.zarr"),
                 "--zarr-format", str(target), "--quiet"])
    assert code == 0
    assert_reads_the_same(tmp_path / "src.zarr", tmp_path / "dst.zarr")


def test_upgrade_metadata_in_place(tmp_path):
    _write(tmp_path / "src.zarr", 2)
    _write(tmp_path / "in_place.zarr", 2)
    zarrkit.upgrade_metadata(tmp_path / "in_place.zarr")
    assert not (tmp_path / "in_place.zarr" / ".zmetadata").exists()
    root = json.loads((tmp_path / "in_place.zarr" / "zarr.json").read_text())
    assert "consolidated_metadata" in root  # consolidated again, as v3
    assert _doc(tmp_path / "in_place.zarr", "masked_int")["attributes"]["_FillValue"] == -1
    assert_reads_the_same(tmp_path / "src.zarr", tmp_path / "in_place.zarr")


@pytest.mark.parametrize(("source", "target"), [(2, 3), (3, 2)])
@pytest.mark.parametrize("how", ["copy", "copy_all"])
def test_copy_across_formats(tmp_path, source, target, how):
    _write(tmp_path / "src.zarr", source)
    src = zarrkit.open_group(tmp_path / "src.zarr", mode="r")
    dest = zarrkit.open_group(tmp_path / "dst.zarr", mode="w", zarr_format=target)
    if how == "copy_all":
        zarrkit.copy_all(src, dest)
    else:
        inner = dest.create_group("ds")
        for name in src.array_keys():
            zarrkit.copy(src[name], inner)
        inner.attrs.update(dict(src.attrs))
        dest = inner
    zarrkit.consolidate_metadata(tmp_path / "dst.zarr")
    assert_reads_the_same(tmp_path / "src.zarr", tmp_path / "dst.zarr",
                          copy_group=None if how == "copy_all" else "ds")


def test_copy_from_zarr_python_array_across_formats(tmp_path):
    _write(tmp_path / "src.zarr", 2)
    theirs = zarr.open_group(str(tmp_path / "src.zarr"), mode="r")
    dest = zarrkit.open_group(tmp_path / "dst.zarr", mode="w", zarr_format=3)
    zarrkit.copy(theirs["masked_int"], dest, name="masked_int")
    zarrkit.copy(theirs["t"], dest, name="t")
    doc = _doc(tmp_path / "dst.zarr", "masked_int")
    assert doc["attributes"] == {"long_name": "count", "_FillValue": -1}
    assert doc["dimension_names"] == ["t"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = xr.open_zarr(str(tmp_path / "dst.zarr"), consolidated=False).load()
        want = xr.open_zarr(str(tmp_path / "src.zarr"))[["masked_int"]].load()
    want.attrs = {}  # (the group's attributes were not copied)
    xr.testing.assert_identical(got, want)


def test_copy_with_explicit_fill_value_keeps_it(tmp_path):
    _write(tmp_path / "src.zarr", 3)
    src = zarrkit.open_group(tmp_path / "src.zarr", mode="r")
    dest = zarrkit.open_group(tmp_path / "dst.zarr", mode="w", zarr_format=2)
    zarrkit.copy(src["plain_int"], dest, fill_value=3)
    assert dest["plain_int"].fill_value == 3


# -- nested groups ------------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "target"), [(2, 3), (3, 2)])
def test_datatree_converts(tmp_path, source, target):
    tree = xr.DataTree.from_dict({"/": _dataset()[["nan_float", "masked_int"]],
                                  "/inner": _dataset()[["packed", "when", "label"]],
                                  "/inner/deeper": _dataset()[["filled_float", "flag"]]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree.to_zarr(str(tmp_path / "src.zarr"), zarr_format=source, encoding={
            "/": {"masked_int": ENCODING["masked_int"]},
            "/inner": {"packed": ENCODING["packed"]},
            "/inner/deeper": {"filled_float": ENCODING["filled_float"]}})
    zarrkit.convert(tmp_path / "src.zarr", tmp_path / "dst.zarr", zarr_format=target,
                    progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for engine in ("zarr", ZarrkitBackendEntrypoint):
            before = xr.open_datatree(str(tmp_path / "src.zarr"), engine=engine).load()
            after = xr.open_datatree(str(tmp_path / "dst.zarr"), engine=engine).load()
            xr.testing.assert_identical(after, before)
            assert int(after["inner/deeper/filled_float"].isnull().sum()) == 6
            assert after["inner/packed"].encoding["scale_factor"] == 0.25
    for group in ("inner", "inner/deeper"):
        assert_reads_the_same(tmp_path / "src.zarr", tmp_path / "dst.zarr", group=group)

"""Checks found in a review of the public API, the xarray glue, `zarrkit info`, consolidated
metadata and `upgrade_metadata`: each test failed before its fix."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import CodecError, MetadataError, SpecError, ZarrkitError
from zarrkit.kvstore import MemoryStore


# -- open(..., overwrite=) -----------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["a", "r+", "w-", "r"])
def test_open_overwrite_true_contradicting_the_mode_is_refused(tmp_path, mode):
    path = str(tmp_path / "x")
    zarrkit.create(path, shape=(4,), dtype="i2")[...] = 7
    with pytest.raises(SpecError, match="overwrite"):
        zarrkit.open(path, mode=mode, shape=(4,), dtype="i4", overwrite=True)
    assert zarrkit.open(path, mode="r")[...].tolist() == [7] * 4  # untouched


@pytest.mark.parametrize("mode", ["a", "w-"])
def test_open_overwrite_true_on_a_missing_node_is_refused(tmp_path, mode):
    with pytest.raises(SpecError, match="overwrite"):
        zarrkit.open(str(tmp_path / "new"), mode=mode, shape=(4,), dtype="i4", overwrite=True)


def test_open_overwrite_agreeing_with_the_mode_is_accepted(tmp_path):
    path = str(tmp_path / "x")
    zarrkit.create(path, shape=(2,), dtype="i2")
    a = zarrkit.open(path, mode="w", shape=(4,), dtype="i4", overwrite=True)
    assert (a.shape, a.dtype) == ((4,), np.dtype("i4"))
    b = zarrkit.open(str(tmp_path / "y"), mode="a", shape=(3,), dtype="i4", overwrite=False)
    assert b.shape == (3,)
    c = zarrkit.open(str(tmp_path / "y"), mode="a", overwrite=False)
    assert c.shape == (3,)
    with pytest.raises(SpecError, match="overwrite"):
        zarrkit.open(path, mode="w", shape=(4,), dtype="i4", overwrite=False)
    with pytest.raises(SpecError, match="overwrite"):
        zarrkit.open(path, mode="w", shape=(4,), overwrite="yes")


# -- group attributes ----------------------------------------------------------------------------
@pytest.mark.parametrize("attributes", [0, "", [], ()])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_group_attributes_that_are_not_a_mapping_are_refused(attributes, zarr_format):
    with pytest.raises(MetadataError, match="attributes"):
        zarrkit.group(attributes=attributes, zarr_format=zarr_format)
    root = zarrkit.group(zarr_format=zarr_format)
    with pytest.raises(MetadataError, match="attributes"):
        root.create_group("g", attributes=attributes)
    assert "g" not in root
    with pytest.raises(MetadataError, match="attributes"):
        zarrkit.open(mode="w", attributes=attributes, zarr_format=zarr_format)


def test_group_attributes_refused_before_an_overwrite(tmp_path):
    path = str(tmp_path / "g")
    zarrkit.group(path).create_array("a", shape=(2,), dtype="i1")
    with pytest.raises(MetadataError, match="attributes"):
        zarrkit.group(path, overwrite=True, attributes=[])
    assert "a" in zarrkit.open_group(path, mode="r")


# -- xarray writes -------------------------------------------------------------------------------
def _xarray():
    return pytest.importorskip("xarray")


def _refused_datasets(xr):
    good = {"first": ("x", np.arange(3)), "second": ("x", np.ones(3))}
    rec = np.zeros(3, dtype=[("a", "i4", (2,))])  # a record with an array field: no v3 type
    yield "record", xr.Dataset({**good, "zz": ("x", rec)}), 3, None
    yield "attribute", xr.Dataset({**good, "zz": ("x", np.arange(3), {"bad": {1, 2}})}), 2, None
    yield "encoding", xr.Dataset({**good, "zz": ("x", np.arange(3))}), 3, {"zz": {"chunks": (0,)}}


@pytest.mark.parametrize("case", [0, 1, 2])
def test_xarray_refused_variable_leaves_target_untouched(tmp_path, case):
    xr = _xarray()
    from zarrkit.xarray import to_zarr

    what, ds, zarr_format, encoding = list(_refused_datasets(xr))[case]
    fresh = str(tmp_path / "fresh")
    with pytest.raises(ZarrkitError, match="'zz'"):
        to_zarr(ds, fresh, zarr_format=zarr_format, encoding=encoding)
    assert not (tmp_path / "fresh").exists() or not any((tmp_path / "fresh").rglob("*.json")), what
    # mode "w" over existing data: the refusal must come before the old group is deleted
    old = str(tmp_path / "old")
    zarrkit.group(old, zarr_format=zarr_format).create_array("keep", shape=(2,), dtype="i1")
    with pytest.raises(ZarrkitError, match="'zz'"):
        to_zarr(ds, old, mode="w", zarr_format=zarr_format, encoding=encoding)
    assert list(zarrkit.open_group(old, mode="r").keys()) == ["keep"], what
    # nothing blocks a retry without the refused variable
    to_zarr(ds.drop_vars("zz"), fresh, zarr_format=zarr_format)
    assert sorted(zarrkit.open_group(fresh, mode="r").keys()) == ["first", "second"]


# -- xarray backend: dimension names -------------------------------------------------------------
def _open_both(path):
    xr = _xarray()
    import warnings

    from zarrkit.xarray_backend import ZarrkitBackendEntrypoint

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = xr.open_zarr(path, consolidated=False)
    return xr.open_dataset(path, engine=ZarrkitBackendEntrypoint), theirs


def test_xarray_backend_unnamed_dimension_reads_as_xarrays_engine(tmp_path):
    zarr = pytest.importorskip("zarr")
    path = str(tmp_path / "s.zarr")
    g = zarr.open_group(path, mode="w", zarr_format=3)
    g.create_array("v", shape=(2, 3), dtype="i4", dimension_names=["a", None],
                   attributes={"_ARRAY_DIMENSIONS": ["p", "q"]})[...] = np.arange(6).reshape(2, 3)
    ours, theirs = _open_both(path)
    assert ours["v"].dims == theirs["v"].dims == ("a", None)
    assert ours["v"].values.tolist() == theirs["v"].values.tolist()


def test_xarray_backend_missing_dimension_names_message(tmp_path):
    _xarray()
    from zarrkit.xarray_backend import dimensions

    root = zarrkit.group(str(tmp_path / "g"))
    bare = root.create_array("bare", shape=(2, 3), dtype="i1")
    with pytest.raises(MetadataError, match="neither dimension_names nor _ARRAY_DIMENSIONS"):
        dimensions(bare)
    odd = root.create_array("odd", shape=(2, 3), dtype="i1",
                            attributes={"_ARRAY_DIMENSIONS": ["only"]})
    with pytest.raises(MetadataError, match=r"_ARRAY_DIMENSIONS attribute \['only'\] is not"):
        dimensions(odd)


# -- zarrkit info --json -------------------------------------------------------------------------
def _strict_json(text):
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def _info(capsys, path, *flags):
    from zarrkit.cli import main

    assert main(["info", *flags, path]) == 0
    return capsys.readouterr().out


_RECORD = np.dtype([("a", "f8"), ("b", "i4")])
_FILLS = [
    ("record", dict(dtype=_RECORD, fill_value=np.array((np.nan, 1), dtype=_RECORD)[()]), 2,
     {"a": "nan", "b": 1}),
    ("datetime", dict(dtype="M8[s]", fill_value=np.datetime64("2000-01-02T03:04:05")), 2,
     "2000-01-02T03:04:05"),
    ("nat", dict(dtype="M8[s]", fill_value=np.datetime64("NaT")), 2, "NaT"),
    ("timedelta", dict(dtype="m8[s]", fill_value=np.timedelta64(5, "s")), 2, "5 seconds"),
    ("nan", dict(dtype="f4", fill_value=np.nan), 3, "nan"),
    ("inf", dict(dtype="f8", fill_value=-np.inf), 2, "-inf"),
    ("complex", dict(dtype="c16", fill_value=complex(np.nan, np.inf)), 3, ["nan", "inf"]),
    ("bytes", dict(dtype="S3", fill_value=b"ab"), 3, "6162"),
    ("void", dict(dtype="V3", fill_value=b"\x01\x02\x03"), 2, "010203"),
]


@pytest.mark.parametrize("case", _FILLS, ids=[c[0] for c in _FILLS])
def test_info_json_is_strict_json_for_any_fill_value(tmp_path, capsys, case):
    name, kwargs, zarr_format, expected = case
    path = str(tmp_path / name)
    zarrkit.create(path, shape=(2,), zarr_format=zarr_format, **kwargs)
    doc = _strict_json(_info(capsys, path, "--json"))
    assert doc["info"]["fill_value"] == expected
    assert "Fill value" in _info(capsys, path)


# -- v3 consolidated metadata of another kind ----------------------------------------------------
def _group_with_member(tmp_path, member):
    path = tmp_path / "g"
    zarrkit.group(str(path)).create_array("a", shape=(2,), dtype="i1")[...] = 5
    doc = json.loads((path / "zarr.json").read_text())
    doc["consolidated_metadata"] = member
    (path / "zarr.json").write_text(json.dumps(doc))
    return str(path)


def test_unknown_consolidated_kind_marked_must_understand_false_is_ignored(tmp_path):
    path = _group_with_member(tmp_path, {"kind": "something-else", "must_understand": False,
                                         "metadata": {"ghost": {}}})
    g = zarrkit.open_group(path, mode="r")
    assert list(g) == ["a"] and g["a"][...].tolist() == [5, 5]
    g = zarrkit.open_group(path, mode="r+")
    g.attrs["x"] = 1  # the member is kept, unchanged
    kept = json.loads((tmp_path / "g" / "zarr.json").read_text())["consolidated_metadata"]
    assert kept["kind"] == "something-else"


def test_malformed_inline_consolidated_metadata_is_named(tmp_path):
    path = _group_with_member(tmp_path, {"kind": "inline", "must_understand": False,
                                         "metadata": 5})
    with pytest.raises(MetadataError, match="inline"):
        zarrkit.open_group(path, mode="r")


def test_unknown_consolidated_kind_without_must_understand_false_is_refused(tmp_path):
    path = _group_with_member(tmp_path, {"kind": "something-else"})
    with pytest.raises(MetadataError, match="consolidated_metadata"):
        zarrkit.open_group(path, mode="r")


# -- upgrade_metadata of numcodecs' crc32c ------------------------------------------------------
def test_upgrade_v2_crc32c_compressor_in_place(tmp_path):
    zarr = pytest.importorskip("zarr")
    from numcodecs import CRC32C

    path = str(tmp_path / "a")
    data = np.arange(20, dtype=">i4").reshape(4, 5)
    a = zarr.create_array(path, shape=(4, 5), chunks=(3, 2), dtype=">i4", zarr_format=2,
                          compressors=CRC32C(), fill_value=7, order="F")
    a[:3] = data[:3]
    expected = np.where(np.arange(4)[:, None] < 3, data, 7)
    upgraded = zarrkit.upgrade_metadata(path)
    assert upgraded.zarr_format == 3
    assert upgraded.metadata["codecs"][-1] == {"name": "crc32c"}
    assert zarrkit.open(path, mode="r")[...].tolist() == expected.tolist()
    assert zarr.open_array(path, mode="r")[...].tolist() == expected.tolist()


def test_upgrade_v2_crc32c_at_the_start_is_refused(tmp_path):
    zarr = pytest.importorskip("zarr")
    from numcodecs import CRC32C

    from zarrkit.errors import CodecError

    path = str(tmp_path / "a")
    zarr.create_array(path, shape=(4,), dtype="i4", zarr_format=2,
                      compressors=CRC32C(location="start"))[...] = 1
    with pytest.raises(CodecError, match="crc32c"):
        zarrkit.upgrade_metadata(path)
    assert zarrkit.open(path, mode="r").zarr_format == 2


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_array_of_object_bytes_values_is_variable_length_bytes(zarr_format):
    """An object array of bytes was created as a text array, which then refused the values
    (and the empty array stayed behind)."""
    a = zarrkit.array(np.array([b"a", b"bb"], dtype=object), MemoryStore(),
                      zarr_format=zarr_format)
    assert a[...].tolist() == [b"a", b"bb"]


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_array_whose_data_cannot_be_written_leaves_nothing(zarr_format):
    store = MemoryStore()
    with pytest.raises(CodecError, match="cannot store 5"):
        zarrkit.array(np.array(["a", 5], dtype=object), store, zarr_format=zarr_format)
    assert list(store.list_prefix("")) == []


def test_array_keeps_an_explicit_numpy_dtype():
    a = zarrkit.array(np.arange(3), MemoryStore(), dtype=np.dtype("f4"))  # a falsy object
    assert a.dtype == np.dtype("f4") and a[...].tolist() == [0.0, 1.0, 2.0]


def test_save_over_an_array_with_a_bad_text_value_keeps_the_array(tmp_path):
    """save overwrites: a value that cannot be encoded must fail before the old array goes."""
    where = str(tmp_path / "s.zarr")
    zarrkit.save(where, np.array(["a", "b"], dtype=object))
    with pytest.raises(zarrkit.CodecError, match="cannot store 5"):
        zarrkit.save(where, np.array(["x", 5], dtype=object))
    assert zarrkit.load(where).tolist() == ["a", "b"]
    with pytest.raises(zarrkit.CodecError):
        zarrkit.array(np.array([b"x", 5], dtype=object), where, overwrite=True)
    assert zarrkit.load(where).tolist() == ["a", "b"]


def test_open_array_of_nothing_without_a_shape_leaves_nothing_behind(tmp_path):
    where = tmp_path / "missing.zarr"
    with pytest.raises(zarrkit.NodeNotFoundError):
        zarrkit.open_array(str(where))
    assert not where.exists()
    assert zarrkit.open_array(str(where), shape=(3,), dtype="i4").shape == (3,)

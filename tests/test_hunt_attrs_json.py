"""Bug hunt: attributes and metadata JSON at the edges, and file permissions, against
zarr-python 3.1.6 (and TensorStore) as oracles.

NaN and the infinities: zarr-python (2.x and 3.x, both formats, consolidated metadata too)
writes them as the bare literals NaN/Infinity/-Infinity and reads only those back as floats (the
string "NaN" stays a string), so zarrkit writes them the same way. Such a v3 document is not
RFC 8259 JSON: TensorStore refuses it ("Invalid JSON"); its v2 driver ignores `.zattrs`.
File permissions: new files and directories honour the umask (as `open` and zarr-python do);
an overwritten file keeps the mode the user gave it (zarr-python and TensorStore reset it).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import stat

import numpy as np
import pytest
import tensorstore as ts
import zarr

import zarrkit
from zarrkit.errors import MetadataError
from zarrkit.kvstore import FileStore, ZipStore, _file_batch
from zarrkit.metadata.json import json_dumps

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # zarr-python's v3 consolidated

SPECIALS = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf,
            "nested": [1.5, {"deep": [math.nan, -math.inf]}], "text": "NaN"}


def _document(path, zarr_format: int) -> bytes:
    return (path / (".zattrs" if zarr_format == 2 else "zarr.json")).read_bytes()


def _assert_specials(attrs) -> None:
    assert math.isnan(attrs["nan"]) and attrs["inf"] == math.inf and attrs["ninf"] == -math.inf
    assert attrs["nested"][0] == 1.5 and math.isnan(attrs["nested"][1]["deep"][0])
    assert attrs["nested"][1]["deep"][1] == -math.inf
    assert attrs["text"] == "NaN"  # a string stays a string


# -- NaN and the infinities -------------------------------------------------------------------

@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_python_writes_bare_literals_and_zarrkit_reads_them(tmp_path, zarr_format):
    path = tmp_path / "n.zarr"
    zarr.create_array(path, shape=(2,), dtype="f4", zarr_format=zarr_format,
                      attributes=SPECIALS)
    doc = _document(path, zarr_format)
    assert b'"nan": NaN' in doc and b'"ninf": -Infinity' in doc and b'"text": "NaN"' in doc
    _assert_specials(zarrkit.open(path, mode="r").attrs)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("how", ["create", "setitem", "update", "put"])
def test_zarrkit_writes_bare_literals_that_zarr_python_reads_as_floats(tmp_path, zarr_format,
                                                                        how):
    path = tmp_path / "n.zarr"
    a = zarrkit.create(path, shape=(2,), dtype="f4", zarr_format=zarr_format,
                       attributes=SPECIALS if how == "create" else {})
    if how == "setitem":
        for key, value in SPECIALS.items():
            a.attrs[key] = value
    elif how == "update":
        a.attrs.update(SPECIALS)
    elif how == "put":
        a.attrs.put(SPECIALS)
    doc = _document(path, zarr_format)
    assert b"NaN," in doc and b"-Infinity" in doc and b'"NaN"' in doc
    _assert_specials(a.attrs)
    _assert_specials(zarrkit.open(path, mode="r").attrs)
    _assert_specials(zarr.open_array(path, mode="r").attrs)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_numpy_non_finite_values_are_written_as_literals(tmp_path, zarr_format):
    path = tmp_path / "n.zarr"
    g = zarrkit.open_group(path, mode="w", zarr_format=zarr_format,
                           attributes={"f32": np.float32("nan"), "f64": np.float64("-inf"),
                                       "arr": np.array([1.0, np.nan, np.inf], dtype="f2")})
    back = zarr.open_group(path, mode="r").attrs
    assert math.isnan(back["f32"]) and back["f64"] == -math.inf
    assert back["arr"][0] == 1.0 and math.isnan(back["arr"][1]) and back["arr"][2] == math.inf
    assert math.isnan(g.attrs["f32"]) and type(g.attrs["f32"]) is not np.float32


def test_nan_attributes_and_a_nan_fill_value_in_one_v3_document(tmp_path):
    # The fill value keeps the spec's string spelling; only the attribute is a bare literal.
    path = tmp_path / "n.zarr"
    zarrkit.create(path, shape=(2,), dtype="f8", fill_value=math.nan, zarr_format=3,
                   attributes={"missing": math.nan})
    doc = json.loads(_document(path, 3))
    assert doc["fill_value"] == "NaN" and math.isnan(doc["attributes"]["missing"])
    z = zarr.open_array(path, mode="r")
    assert np.isnan(z.fill_value) and math.isnan(z.attrs["missing"])
    assert np.isnan(z[...]).all()


def test_zarr_python_2_documents_with_literals_are_read(tmp_path):
    # zarr-python 2.x: json.dumps(indent=4, sort_keys=True, ensure_ascii=True), allow_nan kept
    # on; xarray wrote such `.zattrs` (e.g. a "missing_value": NaN) through it.
    path = tmp_path / "old.zarr"
    zarrkit.create(path / "a", shape=(2,), dtype="<f8", zarr_format=2, fill_value=None)
    (path / ".zgroup").write_text('{\n    "zarr_format": 2\n}')
    (path / ".zattrs").write_text('{\n    "scale": Infinity,\n    "\\u00e9t\\u00e9": NaN\n}')
    (path / "a" / ".zattrs").write_text('{\n    "_ARRAY_DIMENSIONS": [\n        "x"\n    ],'
                                        '\n    "missing_value": NaN\n}')
    g = zarrkit.open_group(path, mode="r")
    assert g.attrs["scale"] == math.inf and math.isnan(g.attrs["été"])
    assert math.isnan(g["a"].attrs["missing_value"])
    zarrkit.consolidate_metadata(path)
    again = zarr.open_consolidated(path, mode="r", zarr_format=2)
    assert math.isnan(again["a"].attrs["missing_value"]) and again.attrs["scale"] == math.inf


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_consolidated_metadata_with_literals_both_ways(tmp_path, zarr_format):
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    for lib, path in ((zarrkit, ours), (zarr, theirs)):
        g = lib.open_group(path, mode="w", zarr_format=zarr_format, attributes={"g": math.nan})
        g.create_array("a", shape=(2,), dtype="f4", attributes={"x": -math.inf})
        lib.consolidate_metadata(path)
    consolidated = ".zmetadata" if zarr_format == 2 else "zarr.json"
    for path in (ours, theirs):
        assert b"-Infinity" in (path / consolidated).read_bytes()
        # Each member's own documents gone: only the consolidated copy can answer.
        if zarr_format == 2:
            (path / "a" / ".zattrs").unlink()
        else:
            shutil.rmtree(path / "a")
    z = zarr.open_consolidated(ours, mode="r", zarr_format=zarr_format)
    k = zarrkit.open_consolidated(theirs, mode="r")
    for g in (z, k):
        assert math.isnan(g.attrs["g"]) and g["a"].attrs["x"] == -math.inf


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_consolidated_record_of_a_nan_attribute_set_later(tmp_path, zarr_format):
    # The consolidated copy zarrkit keeps up to date is rewritten with the literal too.
    path = tmp_path / "c.zarr"
    g = zarrkit.open_group(path, mode="w", zarr_format=zarr_format)
    g.create_array("a", shape=(2,), dtype="f4")
    zarrkit.consolidate_metadata(path)
    zarrkit.open_group(path, mode="r+")["a"].attrs["nodata"] = math.nan
    z = zarr.open_consolidated(path, mode="r", zarr_format=zarr_format)
    assert math.isnan(z["a"].attrs["nodata"])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_create_hierarchy_takes_nan_attributes_from_zarr_python_metadata(tmp_path, zarr_format):
    # A strict round trip of each whole document refused them ("cannot be written as JSON").
    from zarr.core.group import GroupMetadata

    path = tmp_path / "h.zarr"
    zarrkit.create_hierarchy(path, nodes={
        "": GroupMetadata(attributes={"x": math.nan}, zarr_format=zarr_format),
        "a": {"zarr_format": zarr_format, "node_type": "group", "attributes": {"y": (-math.inf,)}},
    })
    assert math.isnan(zarr.open_group(path, mode="r").attrs["x"])
    assert zarrkit.open_group(path / "a", mode="r").attrs["y"] == [-math.inf]
    with pytest.raises(MetadataError, match="'b/c': attributes: 'y': .*set"):
        zarrkit.create_hierarchy(path, nodes={"b/c": {"zarr_format": zarr_format,
                                                      "node_type": "group",
                                                      "attributes": {"y": {1}}}})


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_xarray_datasets_with_nan_attributes_both_ways(tmp_path, zarr_format):
    xr = pytest.importorskip("xarray")
    from zarrkit.xarray import to_zarr

    ds = xr.Dataset({"v": ("x", np.arange(3.0), {"nodata": np.nan, "vmax": np.inf})},
                    attrs={"g": np.float32("nan")})
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    to_zarr(ds, str(ours), zarr_format=zarr_format)  # refused before: "no JSON form"
    ds.to_zarr(theirs, zarr_format=zarr_format)
    for back in (xr.open_zarr(ours), xr.open_dataset(theirs, engine="zarrkit")):
        assert math.isnan(back.attrs["g"]) and math.isnan(back["v"].attrs["nodata"])
        assert back["v"].attrs["vmax"] == math.inf


def test_tensorstore_v2_driver_opens_arrays_with_nan_attributes(tmp_path):
    path = tmp_path / "n.zarr"
    a = zarrkit.create(path, shape=(3,), dtype="<i2", zarr_format=2, attributes={"x": math.nan})
    a[...] = [1, 2, 3]
    t = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": str(path)}}).result()
    assert t.read().result().tolist() == [1, 2, 3]


def test_other_documents_still_refuse_new_non_finite_floats():
    # Only user attributes may hold the literals: elsewhere they are not the spec's spelling.
    with pytest.raises(MetadataError, match="no JSON form"):
        json_dumps({"configuration": {"offset": math.nan}}, what="zarr.json")
    assert json_dumps({"a": math.inf}, constants=True) == b'{\n  "a": Infinity\n}'


# -- other edge values, both ways ---------------------------------------------------------------

EDGE_VALUES = [
    2**53 + 1, 2**64 + 1, -(2**63) - 1, 10**40, 1.7976931348623157e308, 5e-324, 1e-300,
    "héllo ☃ 𝄞", "\ud800 lone surrogate", "", [], {}, None, True,
    {"": "empty key", "ключ": {"键": [1, "二"]}},
]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("value", EDGE_VALUES, ids=range(len(EDGE_VALUES)))
def test_edge_values_round_trip_both_ways(tmp_path, zarr_format, value):
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    zarrkit.create(ours, shape=(1,), dtype="u1", zarr_format=zarr_format, attributes={"v": value})
    zarr.create_array(theirs, shape=(1,), dtype="u1", zarr_format=zarr_format,
                      attributes={"v": value})
    for got in (zarr.open_array(ours, mode="r").attrs["v"],
                zarrkit.open(theirs, mode="r").attrs["v"], zarrkit.open(ours).attrs["v"]):
        assert got == value and type(got) is type(value)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_negative_zero_keeps_its_sign_both_ways(tmp_path, zarr_format):
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    zarrkit.create(ours, shape=(1,), dtype="u1", zarr_format=zarr_format, attributes={"z": -0.0})
    zarr.create_array(theirs, shape=(1,), dtype="u1", zarr_format=zarr_format,
                      attributes={"z": -0.0})
    for got in (zarr.open_array(ours).attrs["z"], zarrkit.open(theirs).attrs["z"]):
        assert got == 0.0 and math.copysign(1.0, got) == -1.0


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_non_ascii_is_utf8_on_disk_where_zarr_python_escapes(tmp_path, zarr_format):
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    attrs = {"été": "☃ 𝄞"}
    zarrkit.create(ours, shape=(1,), dtype="u1", zarr_format=zarr_format, attributes=attrs)
    zarr.create_array(theirs, shape=(1,), dtype="u1", zarr_format=zarr_format, attributes=attrs)
    assert '"été": "☃ 𝄞"'.encode() in _document(ours, zarr_format)
    assert b'"\\u00e9t\\u00e9": "\\u2603 \\ud834\\udd1e"' in _document(theirs, zarr_format)
    assert zarr.open_array(ours).attrs.asdict() == zarrkit.open(theirs).attrs.asdict() == attrs


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_deep_nesting_both_ways_and_too_deep_a_document(tmp_path, zarr_format):
    deep: object = "bottom"
    for _ in range(500):
        deep = [deep]
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    zarrkit.create(ours, shape=(1,), dtype="u1", zarr_format=zarr_format, attributes={"d": deep})
    zarr.create_array(theirs, shape=(1,), dtype="u1", zarr_format=zarr_format,
                      attributes={"d": deep})
    assert zarr.open_array(ours).attrs["d"] == deep == zarrkit.open(theirs).attrs["d"]
    # Beyond the interpreter's recursion limit: a zarrkit error naming the document.
    name = ".zattrs" if zarr_format == 2 else "zarr.json"
    doc = _document(ours, zarr_format).replace(b'"bottom"', b"[" * 100_000 + b"]" * 100_000)
    (ours / name).write_bytes(doc)
    with pytest.raises(MetadataError, match=rf"{name}: malformed JSON"):
        zarrkit.open(ours, mode="r")


def test_a_circular_attribute_is_refused_by_name(tmp_path):
    loop: list = [1]
    loop.append(loop)
    a = zarrkit.create(tmp_path / "n.zarr", shape=(1,), dtype="u1")
    with pytest.raises(MetadataError, match="'loop'.*[Cc]ircular"):
        a.attrs["loop"] = loop
    with pytest.raises(MetadataError, match="attributes: 'loop'"):
        zarrkit.create(tmp_path / "m.zarr", shape=(1,), dtype="u1", attributes={"loop": loop})


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_tuples_and_numpy_values_become_json_where_zarr_python_refuses_them(tmp_path,
                                                                           zarr_format):
    values = {"t": (1, (2.5, "x")), "i": np.int64(2**62), "u": np.uint64(2**64 - 1),
              "b": np.bool_(True), "s": np.str_("s"), "m": np.arange(4).reshape(2, 2),
              "o": np.array([1, "a", None], dtype=object)}
    path = tmp_path / "n.zarr"
    a = zarrkit.create(path, shape=(1,), dtype="u1", zarr_format=zarr_format,
                       attributes=values)
    expected = {"t": [1, [2.5, "x"]], "i": 2**62, "u": 2**64 - 1, "b": True, "s": "s",
                "m": [[0, 1], [2, 3]], "o": [1, "a", None]}
    assert a.attrs.asdict() == expected == zarr.open_array(path).attrs.asdict()
    assert type(a.attrs["b"]) is bool and type(a.attrs["u"]) is int
    with pytest.raises(TypeError, match="int64 is not JSON serializable"):
        zarr.create_array(tmp_path / "z.zarr", shape=(1,), dtype="u1", zarr_format=zarr_format,
                          attributes={"i": np.int64(1)})


@pytest.mark.parametrize(("value", "named"), [
    (np.datetime64("2020-01-01"), "numpy datetime64"),
    (np.array(["2020-01-01"], dtype="M8[D]"), "numpy array of datetime64"),
    (np.complex64(1j), "numpy complex64"), (np.bytes_(b"x"), "numpy |S1"),
    (1j, "complex"), (b"x", "bytes"), ({1, 2}, "set"),
])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_values_without_a_json_form_are_refused_naming_their_type(tmp_path, zarr_format, value,
                                                                  named):
    a = zarrkit.create(tmp_path / "n.zarr", shape=(1,), dtype="u1", zarr_format=zarr_format,
                       attributes={"keep": 1})
    with pytest.raises(MetadataError, match=rf"'v'.*{named}"):
        a.attrs["v"] = value
    with pytest.raises(MetadataError, match=rf"attributes: 'v'.*{named}"):
        zarrkit.create(tmp_path / "m.zarr", shape=(1,), dtype="u1", zarr_format=zarr_format,
                       attributes={"v": value})
    assert zarrkit.open(tmp_path / "n.zarr").attrs.asdict() == {"keep": 1}


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_non_string_top_level_key_is_named_in_both_formats(tmp_path, zarr_format):
    # zarr-python writes {1: "x"} as {"1": "x"}, which then reads back under another key;
    # zarrkit refuses it, naming the key (v3 said "attributes: expected an object").
    with pytest.raises(MetadataError, match="attributes: key 1 is not a string"):
        zarrkit.create(tmp_path / "n.zarr", shape=(1,), dtype="u1", zarr_format=zarr_format,
                       attributes={1: "x"})
    with pytest.raises(MetadataError, match="attributes: key 1 is not a string"):
        zarrkit.open_group(tmp_path / "g.zarr", mode="w", zarr_format=zarr_format,
                           attributes={1: "x"})
    # Nested keys become the JSON names json.dumps gives them, as zarr-python writes them.
    zarrkit.create(tmp_path / "k.zarr", shape=(1,), dtype="u1", zarr_format=zarr_format,
                   attributes={"n": {1: "a", None: "b", 2.5: "c", False: "d"}})
    zarr.create_array(tmp_path / "z.zarr", shape=(1,), dtype="u1", zarr_format=zarr_format,
                      attributes={"n": {1: "a", None: "b", 2.5: "c", False: "d"}})
    assert zarrkit.open(tmp_path / "k.zarr").attrs["n"] == \
        zarr.open_array(tmp_path / "z.zarr").attrs["n"] == \
        {"1": "a", "null": "b", "2.5": "c", "false": "d"}


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_keys_named_like_metadata_members_stay_attributes(tmp_path, zarr_format):
    names = {"zarr_format": 9, "shape": "s", "node_type": "x", "attributes": {}, ".zarray": 1,
             "dimension_separator": "?", "fill_value": "NaN", "_ARRAY_DIMENSIONS": ["x"]}
    path = tmp_path / "n.zarr"
    a = zarrkit.create(path, shape=(2,), dtype="u1", zarr_format=zarr_format, attributes=names)
    assert a.shape == (2,) and a.fill_value == 0
    for node in (zarr.open_array(path), zarrkit.open(path)):
        assert node.attrs.asdict() == names and node.shape == (2,)
    zarr.open_array(path, mode="r+").attrs["shape"] = "again"
    assert zarrkit.open(path).attrs["shape"] == "again" and zarrkit.open(path).shape == (2,)


# -- file permissions ---------------------------------------------------------------------------

@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    yield 0o027
    os.umask(old)


@pytest.fixture(params=["c-batches", "python"])
def write_path(request, monkeypatch):
    """Each way a file store writes a value: the C batches and the Python code."""
    if request.param == "python":
        monkeypatch.setattr(_file_batch, "AVAILABLE", False)
    elif not _file_batch.AVAILABLE:
        pytest.skip("the C batches are not built here")
    return request.param


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _write_array(lib, path, zarr_format: int):
    if lib is zarr:
        a = zarr.create_array(path, shape=(4,), chunks=(2,), dtype="i4", zarr_format=zarr_format,
                              compressors=None)
    else:
        a = zarrkit.create(path, shape=(4,), chunks=(2,), dtype="i4", zarr_format=zarr_format)
    a[...] = np.arange(4)
    a.attrs["x"] = 1
    return a


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_new_files_and_directories_honour_the_umask_as_zarr_python(tmp_path, umask_027,
                                                                   write_path, zarr_format):
    with open(tmp_path / "plain", "wb"):
        pass
    os.mkdir(tmp_path / "plaindir")
    files, dirs = _mode(tmp_path / "plain"), _mode(tmp_path / "plaindir")
    assert (files, dirs) == (0o640, 0o750)
    for lib in (zarrkit, zarr):
        path = tmp_path / f"{lib.__name__}.zarr"
        _write_array(lib, path, zarr_format)
        for root, _subdirs, names in os.walk(path):
            assert _mode(root) == dirs, root
            for name in names:
                assert _mode(os.path.join(root, name)) == files, (root, name)


def test_new_files_follow_a_changed_umask(tmp_path, write_path):
    old = os.umask(0o077)
    try:
        zarrkit.create(tmp_path / "a.zarr", shape=(2,), chunks=(1,), dtype="u1")[...] = 1
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a.zarr") == 0o700 and _mode(tmp_path / "a.zarr" / "c") == 0o700
    assert _mode(tmp_path / "a.zarr" / "zarr.json") == 0o600
    assert _mode(tmp_path / "a.zarr" / "c" / "0") == 0o600


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("mode", [0o604, 0o660, 0o444, 0o600])
def test_overwritten_chunks_and_metadata_keep_their_mode(tmp_path, umask_027, write_path,
                                                         zarr_format, mode):
    path = tmp_path / "a.zarr"
    a = _write_array(zarrkit, path, zarr_format)
    chunk = path / ("0" if zarr_format == 2 else "c/0")
    documents = [path / ".zarray", path / ".zattrs"] if zarr_format == 2 else [path / "zarr.json"]
    for file in (chunk, *documents):
        os.chmod(file, mode)
    a[0:2] = [7, 8]  # a whole chunk
    a[3] = 9  # part of one: read, then replaced
    a.attrs["y"] = 2
    a.resize((6,))
    assert zarrkit.open(path)[...].tolist() == [7, 8, 2, 9, 0, 0]
    for file in (chunk, *documents):
        assert _mode(file) == mode, file
    assert _mode(path / ("1" if zarr_format == 2 else "c/1")) == 0o640  # not chmodded


@pytest.mark.parametrize("how", ["set", "replace", "replace_many", "batched"])
def test_every_store_write_keeps_the_replaced_mode(tmp_path, umask_027, write_path, how):
    store = FileStore(str(tmp_path))
    keys = [f"d/{i}" for i in range(4)]
    for key in keys:
        store.set(key, b"old")
        os.chmod(tmp_path / key, 0o604)
    store.set("d/new-before", b"x")
    if how == "set":
        for key in keys:
            store.set(key, b"new")
    elif how == "replace":
        for key in keys:
            store.replace(key, b"new")
    else:  # a list of small values: the C batches write them together
        store.replace_many(keys, [b"new"] * len(keys) if how == "batched" else
                           (b"new" for _ in keys))
    assert [store.get(key) for key in keys] == [b"new"] * 4
    assert [_mode(tmp_path / key) for key in keys] == [0o604] * 4
    assert _mode(tmp_path / "d/new-before") == 0o640


@pytest.mark.parametrize("mode", [0o604, 0o444])
def test_zip_store_archives_honour_the_umask_and_keep_their_mode(tmp_path, umask_027, mode):
    archive = tmp_path / "a.zip"
    with ZipStore(str(archive), mode="w") as store:
        zarrkit.create(store, shape=(2,), dtype="u1")[...] = 1
    assert _mode(archive) == 0o640
    os.chmod(archive, mode)
    with ZipStore(str(archive), mode="a") as store:
        a = zarrkit.open(store, mode="r+")
        a[...] = 2  # a chunk replaced: the archive is compacted into a new file on close
        a.attrs["x"] = 1
    assert _mode(archive) == mode
    with ZipStore(str(archive), mode="r") as store:
        assert zarrkit.open(store, mode="r")[...].tolist() == [2, 2]

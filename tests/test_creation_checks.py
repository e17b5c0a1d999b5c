"""Creation and open checks: unstorable v2 attributes refused before an overwrite deletes
anything, dimension_names checked, v3 raw types through `zarrkit.create`, creation keywords in
modes 'a'/'r+' on an existing array, and a node of the other format named as such."""

import json

import numpy as np
import pytest

import zarrkit

UNSTORABLE = [
    ({"a": {1, 2}}, r"attributes: 'a': .*JSON"),
    ({"a": [b"bytes"]}, r"attributes: 'a': .*JSON"),
    ({"a": object()}, r"attributes: 'a': .*JSON"),
    ({1: "x"}, r"attributes: key 1 is not a string"),
]


def _v2_group_with_data(tmp_path):
    root = zarrkit.open_group(tmp_path, mode="w", zarr_format=2)
    a = root.create_array("x", shape=(3,), chunks=(3,), dtype="i4")
    a[...] = [1, 2, 3]
    a.attrs["kept"] = 1
    return root


def _assert_kept(tmp_path):
    a = zarrkit.open(tmp_path / "x", mode="r", zarr_format=2)
    assert a[...].tolist() == [1, 2, 3] and dict(a.attrs) == {"kept": 1}


@pytest.mark.parametrize(("attributes", "match"), UNSTORABLE)
@pytest.mark.parametrize("kind", ["group", "array"])
def test_v2_overwrite_with_unstorable_attributes_keeps_the_old_node(tmp_path, kind, attributes,
                                                                   match):
    root = _v2_group_with_data(tmp_path)
    with pytest.raises(zarrkit.MetadataError, match=match):
        if kind == "group":
            root.create_group("x", attributes=attributes, overwrite=True)
        else:
            root.create_array("x", shape=(2,), dtype="u1", attributes=attributes,
                              overwrite=True)
    _assert_kept(tmp_path)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_create_and_open_group_overwrite_with_unstorable_attributes(tmp_path, zarr_format):
    _v2_group_with_data(tmp_path)
    with pytest.raises(zarrkit.MetadataError, match=r"attributes: 'a'"):
        zarrkit.create(tmp_path / "x", shape=(2,), dtype="u1", zarr_format=zarr_format,
                       attributes={"a": {1, 2}}, overwrite=True)
    _assert_kept(tmp_path)
    with pytest.raises(zarrkit.MetadataError, match=r"attributes: 'a'"):
        zarrkit.open_group(tmp_path / "x", mode="w", zarr_format=zarr_format,
                           attributes={"a": [b"bytes"]})
    _assert_kept(tmp_path)


def test_v2_attributes_that_are_not_a_mapping_are_refused(tmp_path):
    with pytest.raises(zarrkit.MetadataError, match="attributes: expected an object"):
        zarrkit.create(tmp_path / "a", shape=(2,), dtype="u1", zarr_format=2, attributes=5)
    with pytest.raises(zarrkit.MetadataError, match="attributes: expected an object"):
        zarrkit.open_group(tmp_path / "g", mode="w", zarr_format=2, attributes=[("a", 1)])


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("names", ["xy", 5, ["x", 1], b"xy"])
def test_dimension_names_that_are_not_a_list_of_names_are_refused(tmp_path, zarr_format,
                                                                  names):
    with pytest.raises(zarrkit.MetadataError, match="dimension_names"):
        zarrkit.create(tmp_path, shape=(2, 3), dtype="u1", dimension_names=names,
                       zarr_format=zarr_format)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("names", [("x", "y"), np.array(["x", "y"]), ["x", None]])
def test_dimension_names_as_list_tuple_or_numpy_array(tmp_path, names):
    zarrkit.create(tmp_path, shape=(2, 3), dtype="u1", dimension_names=names)
    assert zarrkit.open(tmp_path, mode="r").dimension_names == tuple(
        n if n is None else str(n) for n in names)


@pytest.mark.parametrize(("fill_value", "stored"), [
    (None, [0, 0]), (b"\x01\xff", [1, 255]), ([7, 8], [7, 8]), (np.void(b"\x03\x04"), [3, 4])])
def test_raw_data_types_through_create(tmp_path, fill_value, stored):
    a = zarrkit.create(tmp_path, shape=(4,), chunks=(2,), dtype="r16", fill_value=fill_value)
    doc = json.loads((tmp_path / "zarr.json").read_bytes())
    assert doc["data_type"] == "r16" and doc["fill_value"] == stored  # data-types.rst
    a[1:3] = np.array([b"ab", b"cd"], dtype="V2")
    b = zarrkit.open(tmp_path, mode="r")
    assert b.dtype == np.dtype("V2")
    fill = bytes(stored)
    assert [bytes(v) for v in b[...]] == [fill, b"ab", b"cd", fill]


@pytest.mark.parametrize("fill_value", [b"\x01", 5, 1.5, [1, 2, 3]])
def test_raw_fill_values_of_the_wrong_size_or_kind_are_refused(tmp_path, fill_value):
    with pytest.raises(zarrkit.DataTypeError, match="fill_value"):
        zarrkit.create(tmp_path, shape=(4,), dtype="r16", fill_value=fill_value)


@pytest.mark.parametrize(("dtype", "fill_value"), [("u1", 300), ("i1", 2.5), ("u8", -1),
                                                   ("u1", 2**70)])
def test_fill_values_the_integer_type_cannot_hold_are_refused(tmp_path, dtype, fill_value):
    # numpy's astype wrapped them (300 was stored as 44)
    with pytest.raises(zarrkit.DataTypeError, match="fill_value"):
        zarrkit.create(tmp_path, shape=(4,), dtype=dtype, fill_value=fill_value)


def test_unknown_creation_keywords_are_refused(tmp_path):
    for zarr_format in (2, 3):
        with pytest.raises(zarrkit.SpecError, match="chunk\\b"):
            zarrkit.create(tmp_path, shape=(4,), chunk=2, zarr_format=zarr_format)


@pytest.mark.parametrize("mode", ["a", "r+"])
def test_write_empty_chunks_applies_to_an_existing_array(tmp_path, mode):
    zarrkit.create(tmp_path, shape=(4,), chunks=(2,), dtype="u1")
    a = zarrkit.open(tmp_path, mode=mode, write_empty_chunks=True)
    assert a.write_empty_chunks is True
    a[...] = 0
    assert (tmp_path / "c" / "0").exists()


CREATE = {"shape": (6, 4), "chunks": (2, 2), "shards": (6, 4), "dtype": "f4",
          "fill_value": float("nan"), "dimension_names": ["y", "x"],
          "compressors": None, "chunk_key_encoding": {"name": "default",
                                                      "configuration": {"separator": "."}}}
CREATE_V2 = {"shape": (6, 4), "chunks": (2, 2), "dtype": "f4", "fill_value": float("nan"),
             "dimension_names": ["y", "x"], "compressor": None, "order": "F",
             "dimension_separator": "/"}


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("mode", ["a", "r+"])
def test_creation_keywords_that_agree_with_the_existing_array(tmp_path, zarr_format, mode):
    kwargs = CREATE if zarr_format == 3 else CREATE_V2
    zarrkit.open(tmp_path, mode="w", zarr_format=zarr_format, **kwargs)[...] = 1
    a = zarrkit.open(tmp_path, mode=mode, zarr_format=zarr_format, **kwargs)
    assert a.shape == (6, 4) and float(a[0, 0]) == 1
    b = zarrkit.open(tmp_path, mode=mode, attributes={"only": "on creation"}, chunks="auto")
    assert "only" not in b.attrs


CONTRADICTIONS = [("shape", (6, 5)), ("dtype", "f8"), ("chunks", (3, 2)), ("fill_value", 0),
                  ("dimension_names", ["a", "b"])]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("mode", ["a", "r+"])
@pytest.mark.parametrize(("name", "value"), CONTRADICTIONS + [("compressors", "v")])
def test_creation_keywords_that_contradict_the_existing_array(tmp_path, zarr_format, mode,
                                                              name, value):
    kwargs = CREATE if zarr_format == 3 else CREATE_V2
    zarrkit.open(tmp_path, mode="w", zarr_format=zarr_format, **kwargs)[...] = 1
    if name == "compressors":
        value = ({"name": "zstd", "configuration": {"level": 1, "checksum": False}}
                 if zarr_format == 3 else {"id": "zlib", "level": 1})
    with pytest.raises(zarrkit.SpecError, match=rf"^{name}=.*existing array"):
        zarrkit.open(tmp_path, mode=mode, **{name: value})
    a = zarrkit.open(tmp_path, mode="r")
    assert a.shape == (6, 4) and a.dtype == np.dtype("f4") and float(a[0, 0]) == 1


def test_array_keywords_on_an_existing_group_are_refused(tmp_path):
    zarrkit.open_group(tmp_path, mode="w")
    for kwargs in ({"shape": (2,)}, {"write_empty_chunks": True}):
        with pytest.raises(zarrkit.NodeTypeError, match="is a group"):
            zarrkit.open(tmp_path, mode="a", **kwargs)
    with pytest.raises(zarrkit.SpecError, match="dtype"):
        zarrkit.open(tmp_path / "new", mode="a", dtype="u1")  # a group would ignore it


@pytest.mark.parametrize(("have", "want"), [(3, 2), (2, 3)])
@pytest.mark.parametrize("kind", ["array", "group"])
def test_a_node_of_the_other_format_is_named(tmp_path, have, want, kind):
    if kind == "array":
        zarrkit.create(tmp_path, shape=(2,), dtype="u1", zarr_format=have)[...] = 5
    else:
        zarrkit.open_group(tmp_path, mode="w", zarr_format=have)
    before = sorted(p.name for p in tmp_path.iterdir())
    match = rf"no Zarr v{want} node at '/': a Zarr v{have} node is there"
    for mode, error in (("r", zarrkit.NodeNotFoundError), ("r+", zarrkit.NodeNotFoundError),
                        ("a", zarrkit.NodeExistsError), ("w-", zarrkit.NodeExistsError)):
        with pytest.raises(error, match=match):
            zarrkit.open(tmp_path, mode=mode, zarr_format=want)
        with pytest.raises(error, match=match):
            zarrkit.open_group(tmp_path, mode=mode, zarr_format=want)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing added
    assert zarrkit.open(tmp_path, mode="r", zarr_format=have) is not None


@pytest.mark.parametrize("kwargs", [
    {"zarr_format": 2, "compressor": {"id": "zlib", "level": 99}},
    {"zarr_format": 2, "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 7}},
    {"zarr_format": 2, "compressor": {"id": "bz2", "level": 0}},
    {"zarr_format": 2, "dtype": str, "compressor": {"id": "lzma", "preset": 99}},
    {"compressors": [{"name": "numcodecs.zlib", "configuration": {"level": 99}}]},
    {"shards": (4,), "compressors": [{"name": "numcodecs.bz2", "configuration": {"level": 0}}]},
])
def test_compressor_settings_numcodecs_refuses_are_refused_before_anything_is_stored(kwargs):
    store: dict = {}
    with pytest.raises(zarrkit.CodecError, match="cannot encode"):
        zarrkit.create(store=store, shape=(4,), chunks=(2,), **{"dtype": "i4", **kwargs})
    assert store == {}


@pytest.mark.parametrize(("dtype", "codec"), [("<U2", "vlen-utf8"), ("i4", "json2"),
                                              ("S3", "vlen-bytes")])
def test_v2_object_codecs_in_front_of_other_types_are_refused(dtype, codec):
    store: dict = {}
    with pytest.raises(zarrkit.CodecError, match=f"'{codec}' stores object"):
        zarrkit.create(store=store, shape=(2,), dtype=dtype, zarr_format=2,
                       filters=[{"id": codec}])
    assert store == {}


def test_v2_categorize_of_fixed_length_text_is_kept():
    import numcodecs
    a = zarrkit.create(store={}, shape=(3,), dtype="<U2", zarr_format=2, fill_value="a",
                       filters=[numcodecs.Categorize(["a", "bb"], dtype="<U2")])
    a[...] = ["bb", "a", "bb"]
    assert a[:].tolist() == ["bb", "a", "bb"]

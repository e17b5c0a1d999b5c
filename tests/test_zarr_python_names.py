"""Names zarr-python 3 users expect (Group.members(max_depth), nmembers, update_attributes,
cdata_shape, compressors/filters/serializer, the group creators, open_consolidated,
create_group/create_array, the *_like functions, tree), each checked against zarr-python."""

import json

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import (
    MetadataError,
    NodeExistsError,
    NodeNotFoundError,
    NodeTypeError,
    ReadOnlyError,
    SpecError,
)

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]


def _hierarchy(where, zarr_format=3):
    """/a, /b, /s/x, /s/t/y, /s/t/u/z, /e (empty group), written by zarr-python."""
    g = zarr.open_group(where, mode="w", zarr_format=zarr_format)
    g.create_array("a", shape=(4, 6), chunks=(2, 3), dtype="i4")
    g.create_array("b", shape=(5,), chunks=(2,), dtype="f8")
    g.create_group("e")
    s = g.create_group("s", attributes={"level": 1})
    s.create_array("x", shape=(3,), dtype="i1")
    t = s.create_group("t")
    t.create_array("y", shape=(2, 2), dtype="u1")
    t.create_group("u").create_array("z", shape=(7,), dtype="i2")
    return g


def _described(members):
    return sorted((k, type(v).__name__, getattr(v, "shape", None)) for k, v in members)


# -- Group.members(max_depth), nmembers, array_values, group_values -------------------------

@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("max_depth", [0, 1, 2, 3, None])
def test_members_depth_matches_zarr_python(tmp_path, zarr_format, max_depth):
    oracle = _hierarchy(tmp_path, zarr_format)
    g = zarrkit.open_group(tmp_path, mode="r")
    got = g.members(max_depth)
    expected = oracle.members(max_depth=max_depth)
    assert _described(got) == _described(expected)
    assert g.nmembers(max_depth) == oracle.nmembers(max_depth=max_depth) == len(got)
    for key, node in got:  # each node is the one at that relative path
        assert node.path == key
        assert node.path == g[key].path


def test_members_default_is_children_and_order_is_depth_first(tmp_path):
    _hierarchy(tmp_path)
    g = zarrkit.open_group(tmp_path, mode="r")
    assert [k for k, _ in g.members()] == g.keys() == ["a", "b", "e", "s"]
    assert [k for k, _ in g.members(None)] == ["a", "b", "e", "s", "s/t", "s/t/u", "s/t/u/z",
                                               "s/t/y", "s/x"]
    sub = g["s"]
    assert [k for k, _ in sub.members(1)] == ["t", "t/u", "t/y", "x"]  # relative to s


def test_children_listings_unchanged(tmp_path):
    _hierarchy(tmp_path)
    g = zarrkit.open_group(tmp_path, mode="r")
    assert g.array_keys() == ["a", "b"]
    assert g.group_keys() == ["e", "s"]
    assert [k for k, _ in g.arrays()] == ["a", "b"]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_array_and_group_values_match_zarr_python(tmp_path, zarr_format):
    oracle = _hierarchy(tmp_path, zarr_format)
    g = zarrkit.open_group(tmp_path, mode="r")
    arrays, groups = list(g.array_values()), list(g.group_values())
    assert all(isinstance(a, zarrkit.Array) for a in arrays)
    assert all(isinstance(x, zarrkit.Group) for x in groups)
    assert sorted(a.path for a in arrays) == sorted(a.path for a in oracle.array_values())
    assert sorted(x.path for x in groups) == sorted(x.path for x in oracle.group_values())
    assert sorted(x.path for x in g["s"].group_values()) == ["s/t"]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_members_from_consolidated_metadata_without_listing(tmp_path, monkeypatch,
                                                            zarr_format):
    _hierarchy(tmp_path, zarr_format)
    zarr.consolidate_metadata(tmp_path, zarr_format=zarr_format)
    # Added after consolidating: consolidated readers do not see it, a listing would.
    zarr.open_group(tmp_path / "s", mode="r+").create_array("late", shape=(1,), dtype="i1")
    oracle = zarr.open_consolidated(tmp_path, zarr_format=zarr_format)
    g = zarrkit.open_consolidated(tmp_path)
    listed = zarrkit.open_group(tmp_path, mode="r", use_consolidated=False)

    def no_listing(*args, **kwargs):
        raise AssertionError("the store was listed")

    monkeypatch.setattr(type(g.store), "list_dir", no_listing)
    monkeypatch.setattr(type(g.store), "list_prefix", no_listing)
    with pytest.raises(AssertionError, match="listed"):  # the guard works
        listed.members()
    for depth in (0, 1, None):
        assert _described(g.members(depth)) == _described(oracle.members(max_depth=depth))
    assert "s/late" not in dict(g.members(None))
    assert g.nmembers(None) == 9
    monkeypatch.undo()
    assert "s/late" in dict(listed.members(None))


@pytest.mark.parametrize("bad", [-1, -5, 1.5, "1"])
def test_bad_max_depth(tmp_path, bad):
    oracle = _hierarchy(tmp_path)
    g = zarrkit.open_group(tmp_path, mode="r")
    with pytest.raises(SpecError, match="max_depth"):
        g.members(bad)
    with pytest.raises(SpecError, match="max_depth"):
        g.nmembers(bad)
    if bad == -1:
        with pytest.raises(ValueError):  # zarr-python refuses it too
            oracle.members(max_depth=bad)


# -- update_attributes ----------------------------------------------------------------------

def test_update_attributes_merges_and_returns_the_node(tmp_path):
    oracle = _hierarchy(tmp_path)
    oracle["a"].update_attributes({"keep": 1})
    oracle["s"].update_attributes({"keep": 2})
    g = zarrkit.open_group(tmp_path)
    a = g["a"]
    assert a.update_attributes({"new": [1, 2], "keep": 10}) is a
    sub = g["s"]
    assert sub.update_attributes({"new": "x"}) is sub
    assert dict(a.attrs) == {"keep": 10, "new": [1, 2]}
    # what zarr-python's own update_attributes does to the same starting point
    twin = zarr.open_group(tmp_path, mode="r")
    assert twin["a"].attrs.asdict() == {"keep": 10, "new": [1, 2]}
    assert twin["s"].attrs.asdict() == {"level": 1, "keep": 2, "new": "x"}
    expected = dict(twin["s"].attrs.asdict())
    theirs = zarr.open_group(tmp_path / "s", mode="r+").update_attributes({"new": "y"})
    assert theirs.attrs.asdict() == expected | {"new": "y"}


def test_update_attributes_read_only_and_bad_values(tmp_path):
    _hierarchy(tmp_path)
    g = zarrkit.open_group(tmp_path, mode="r")
    with pytest.raises(ReadOnlyError):
        g.update_attributes({"x": 1})
    with pytest.raises(ReadOnlyError):
        g["a"].update_attributes({"x": 1})
    w = zarrkit.open_group(tmp_path)
    with pytest.raises(MetadataError, match="'bad'"):
        w["a"].update_attributes({"bad": object()})
    assert "bad" not in w["a"].attrs


# -- cdata_shape, compressors, filters, serializer, read_only -------------------------------

@pytest.mark.parametrize("shape, chunks, shards", [
    ((10, 10), (3, 4), None),
    ((10, 10), (2, 5), (4, 10)),
    ((0, 7), (2, 3), None),
    ((9,), (9,), None),
    ((12, 5), (2, 5), (6, 5)),
    ((), (), None),
])
def test_cdata_shape_matches_zarr_python(tmp_path, shape, chunks, shards):
    oracle = zarr.create_array(tmp_path, shape=shape, chunks=chunks, shards=shards, dtype="i2")
    a = zarrkit.open_array(tmp_path, mode="r")
    assert a.cdata_shape == oracle.cdata_shape


def test_cdata_shape_v2_matches_zarr_python(tmp_path):
    oracle = zarr.create_array(tmp_path, shape=(11, 4), chunks=(5, 3), dtype="f4",
                               zarr_format=2)
    assert zarrkit.open_array(tmp_path).cdata_shape == oracle.cdata_shape == (3, 2)


def _json(codecs):
    return json.loads(json.dumps(codecs))  # tuples in zarr-python's dicts -> lists


_V3_CODECS = {
    "default": {},
    "blosc": {"compressors": [zarr.codecs.BloscCodec(cname="lz4", clevel=3,
                                                     shuffle="bitshuffle")]},
    "uncompressed": {"compressors": None},
    "chain": {"filters": [zarr.codecs.TransposeCodec(order=(1, 0))],
              "serializer": zarr.codecs.BytesCodec(endian="big"),
              "compressors": [zarr.codecs.GzipCodec(level=2), zarr.codecs.Crc32cCodec()]},
    "sharded": {"shards": (4, 4), "compressors": [zarr.codecs.GzipCodec(level=1)],
                "filters": [zarr.codecs.TransposeCodec(order=(1, 0))]},
}


@pytest.mark.parametrize("case", sorted(_V3_CODECS))
def test_codec_properties_match_zarr_python(tmp_path, case):
    oracle = zarr.create_array(tmp_path, shape=(8, 8), chunks=(2, 2), dtype="u2",
                               **_V3_CODECS[case])
    a = zarrkit.open_array(tmp_path, mode="r")
    assert _json([c.to_json() for c in a.filters]) == \
        _json([c.to_dict() for c in oracle.filters])
    assert _json(a.serializer.to_json()) == _json(oracle.serializer.to_dict())
    assert _json([c.to_json() for c in a.compressors]) == \
        _json([c.to_dict() for c in oracle.compressors])
    if case == "sharded":  # the inner chunks' codecs, not the sharding codec
        assert a.serializer.name == "bytes"
        assert [c.name for c in a.compressors] == ["gzip"]


@pytest.mark.parametrize("filters, compressor", [
    (None, None),
    ([numcodecs.Delta(dtype="<f8")], numcodecs.Zlib(level=3)),
    (None, numcodecs.Blosc(cname="zstd", clevel=2)),
])
def test_codec_properties_v2_match_zarr_python(tmp_path, filters, compressor):
    oracle = zarr.create_array(tmp_path, shape=(10,), chunks=(3,), dtype="f8", zarr_format=2,
                               filters=filters, compressors=compressor)
    a = zarrkit.open_array(tmp_path)
    assert [c.get_config() for c in a.filters] == [c.get_config() for c in oracle.filters]
    assert [c.get_config() for c in a.compressors] == \
        [c.get_config() for c in oracle.compressors]
    assert a.serializer is None and oracle.serializer is None


def test_read_only(tmp_path):
    zarr.create_array(tmp_path, shape=(3,), dtype="i1")
    assert zarrkit.open_array(tmp_path, mode="r").read_only is True
    assert zarrkit.open_array(tmp_path, mode="r+").read_only is False
    assert zarr.open_array(tmp_path, mode="r").read_only is True


# -- Group creators -------------------------------------------------------------------------

def _same_array(ours, theirs):
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype
    assert ours.chunks == theirs.chunks
    np.testing.assert_array_equal(ours[...], theirs[...])


@pytest.mark.parametrize("method, kwargs", [
    ("zeros", {"shape": (5, 4), "chunks": (2, 2), "dtype": "i4"}),
    ("ones", {"shape": (6,), "chunks": (4,)}),
    ("ones", {"shape": (3,), "chunks": (3,), "dtype": "u1"}),
    ("full", {"shape": (3, 3), "chunks": (2, 2), "fill_value": 7, "dtype": "i2"}),
    ("full", {"shape": (4,), "chunks": (4,), "fill_value": 2.5}),
    ("empty", {"shape": (4,), "chunks": (2,), "dtype": "f4"}),
])
def test_group_creators_match_zarr_python(tmp_path, method, kwargs):
    ours = getattr(zarrkit.open_group(tmp_path / "ours"), method)(name="m/arr", **kwargs)
    theirs = getattr(zarr.open_group(tmp_path / "theirs"), method)(name="m/arr", **kwargs)
    assert ours.path == "m/arr"
    read = zarr.open_array(tmp_path / "ours", path="m/arr", mode="r")  # zarr-python reads ours
    _same_array(read, theirs)
    assert read.fill_value == theirs.fill_value


def test_group_creators_existing_member_and_read_only(tmp_path):
    g = zarrkit.open_group(tmp_path)
    g.zeros(name="z", shape=(2,))
    for make in (lambda: g.zeros(name="z", shape=(2,)),
                 lambda: g.ones(name="z", shape=(2,)),
                 lambda: g.full(name="z", shape=(2,), fill_value=1),
                 lambda: g.empty(name="z", shape=(2,)),
                 lambda: g.zeros_like(name="z", data=np.zeros(2))):
        with pytest.raises(NodeExistsError):
            make()
    assert g.ones(name="z", shape=(3,), overwrite=True)[...].tolist() == [1, 1, 1]
    with pytest.raises(ReadOnlyError):
        zarrkit.open_group(tmp_path, mode="r").zeros(name="w", shape=(2,))


@pytest.mark.parametrize("method", ["zeros_like", "ones_like", "full_like", "empty_like"])
def test_group_like_creators_match_zarr_python(tmp_path, method):
    data = np.arange(12, dtype="u2").reshape(3, 4)
    extra = {"fill_value": 9} if method == "full_like" else {}
    ours = getattr(zarrkit.open_group(tmp_path / "ours"), method)(name="l", data=data, **extra)
    theirs = getattr(zarr.open_group(tmp_path / "theirs"), method)(name="l", data=data, **extra)
    _same_array(zarr.open_array(tmp_path / "ours", path="l", mode="r"), theirs)
    assert ours.fill_value == theirs.fill_value


def test_group_like_from_arrays_takes_shape_dtype_chunks(tmp_path):
    g = zarrkit.open_group(tmp_path)
    src = g.create_array("src", shape=(10, 6), chunks=(4, 3), dtype="i2", fill_value=5)
    assert g.full_like(name="f", data=src)[...].tolist() == np.full((10, 6), 5).tolist()
    z = g.zeros_like(name="z", data=src, dtype="f4", chunks=(5, 6))
    assert (z.shape, z.dtype, z.chunks) == ((10, 6), np.dtype("f4"), (5, 6))
    o = g.ones_like(name="o", data=src, shape=(20,))  # chunks of another rank are dropped
    assert o.shape == (20,) and o[...].sum() == 20
    assert g.zeros_like(name="i", data=src, shape=7).shape == (7,)
    e = g.empty_like(name="e", data=[[1, 2, 3]])  # values numpy takes
    assert (e.shape, e.dtype) == ((1, 3), np.asarray([[1, 2, 3]]).dtype)
    assert g.empty_like(name="e2", data=src).fill_value == 5  # as zarr-python's:
    theirs = zarr.open_group(tmp_path / "theirs")
    theirs_src = theirs.create_array("src", shape=(2,), dtype="i2", fill_value=5)
    assert theirs.empty_like(name="e2", data=theirs_src).fill_value == 5
    oracle = zarr.open_group(tmp_path, mode="r")
    assert oracle["z"].chunks == (5, 6) and oracle["f"].fill_value == 5
    with pytest.raises(SpecError, match="fill_value"):
        g.full_like(name="nofill", data=np.zeros(3))
    assert "nofill" not in g


# -- module functions -----------------------------------------------------------------------

def test_open_consolidated(tmp_path):
    _hierarchy(tmp_path)
    zarr.consolidate_metadata(tmp_path)
    g = zarrkit.open_consolidated(tmp_path)
    assert isinstance(g, zarrkit.Group) and g.read_only
    assert g._consolidated is not None
    oracle = zarr.open_consolidated(tmp_path)
    assert sorted(g.keys()) == sorted(oracle.keys())
    assert g["s"].attrs["level"] == oracle["s"].attrs["level"] == 1
    assert not zarrkit.open_consolidated(tmp_path, mode="r+").read_only
    # zarr-python consolidates at the root only: a subgroup opened alone has none.
    with pytest.raises(MetadataError, match="consolidated metadata"):
        zarrkit.open_consolidated(tmp_path, path="s")
    with pytest.raises(ValueError):
        zarr.open_consolidated(tmp_path, path="s")


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_open_consolidated_without_consolidated_metadata(tmp_path, zarr_format):
    _hierarchy(tmp_path, zarr_format)
    with pytest.raises(MetadataError, match="consolidated metadata"):
        zarrkit.open_consolidated(tmp_path)
    with pytest.raises(ValueError):  # zarr-python refuses too
        zarr.open_consolidated(tmp_path, zarr_format=zarr_format)


def test_open_consolidated_refusals(tmp_path):
    with pytest.raises(NodeNotFoundError):  # mode "a" opens, never creates
        zarrkit.open_consolidated(tmp_path / "missing", mode="a")
    assert not (tmp_path / "missing" / "zarr.json").exists()
    _hierarchy(tmp_path)
    zarr.consolidate_metadata(tmp_path)
    with pytest.raises(SpecError, match="mode 'w'"):
        zarrkit.open_consolidated(tmp_path, mode="w")
    with pytest.raises(SpecError, match="use_consolidated"):
        zarrkit.open_consolidated(tmp_path, use_consolidated=False)
    assert zarr.open_group(tmp_path, mode="r").nmembers(max_depth=None) == 9  # untouched
    with pytest.raises(NodeTypeError):
        zarrkit.open_consolidated(tmp_path, path="a")


def test_create_group(tmp_path):
    g = zarrkit.create_group(tmp_path, path="g", attributes={"k": 1})
    assert zarr.open_group(tmp_path / "g", mode="r").attrs.asdict() == {"k": 1}
    g.create_array("x", shape=(1,), dtype="i1")
    with pytest.raises(NodeExistsError):
        zarrkit.create_group(tmp_path, path="g")
    with pytest.raises(NodeExistsError):
        zarrkit.create_group(tmp_path, path="g/x")
    assert "x" in zarrkit.open_group(tmp_path / "g")  # refusing deleted nothing
    fresh = zarrkit.create_group(tmp_path, path="g", overwrite=True)
    assert fresh.keys() == []
    v2 = zarrkit.create_group(tmp_path / "v2", zarr_format=2)
    assert zarr.open_group(tmp_path / "v2", mode="r").metadata.zarr_format == v2.zarr_format == 2


def test_create_array(tmp_path):
    a = zarrkit.create_array(tmp_path, name="s/arr", shape=(4, 5), dtype="i2", chunks=(2, 5),
                             fill_value=3)
    assert a.path == "s/arr"
    theirs = zarr.open_array(tmp_path / "s" / "arr", mode="r")
    assert (theirs.shape, theirs.dtype, theirs.chunks) == ((4, 5), np.dtype("i2"), (2, 5))
    assert theirs[...].tolist() == np.full((4, 5), 3).tolist()
    with pytest.raises(NodeExistsError):
        zarrkit.create_array(tmp_path, name="s/arr", shape=(4,), dtype="i2")
    assert zarrkit.create_array(tmp_path, name="s/arr", shape=(2,), dtype="u1",
                                overwrite=True).shape == (2,)
    data = np.arange(6, dtype="f4").reshape(2, 3)
    zarrkit.create_array(tmp_path / "d", data=data)
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "d", mode="r")[...], data)


def test_create_array_refusals(tmp_path):
    with pytest.raises(SpecError, match="shape"):
        zarrkit.create_array(tmp_path, data=np.zeros(3), shape=(3,))
    with pytest.raises(SpecError, match="dtype"):
        zarrkit.create_array(tmp_path, data=np.zeros(3), dtype="f8")
    with pytest.raises(SpecError, match="dtype"):
        zarrkit.create_array(tmp_path, shape=(3,))
    with pytest.raises(ValueError):  # zarr-python wants a dtype too
        zarr.create_array(tmp_path, shape=(3,))
    assert not (tmp_path / "zarr.json").exists()


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "full_like", "empty_like"])
def test_module_like_functions_match_zarr_python(tmp_path, name):
    src = zarrkit.create(tmp_path / "src", (9, 4), "i4", chunks=(4, 2), fill_value=6)
    ours = getattr(zarrkit, name)(src, tmp_path / "ours")
    theirs_src = zarr.open_array(tmp_path / "src", mode="r")
    theirs = getattr(zarr, name)(theirs_src, store=tmp_path / "theirs")
    _same_array(zarr.open_array(tmp_path / "ours", mode="r"), theirs)
    assert ours.fill_value == theirs.fill_value
    data = np.ones((2, 3), dtype="u1")
    extra = {"fill_value": 4} if name == "full_like" else {}
    ours = getattr(zarrkit, name)(data, tmp_path / "np", dtype="i8", **extra)
    assert (ours.shape, ours.dtype) == ((2, 3), np.dtype("i8"))


def test_module_full_like_needs_a_fill_value_for_plain_data(tmp_path):
    with pytest.raises(SpecError, match="fill_value"):
        zarrkit.full_like(np.zeros(3), tmp_path)
    with pytest.raises(TypeError):  # zarr-python: full() needs the fill value too
        zarr.full_like(np.zeros(3), store=tmp_path / "theirs")


def test_tree(tmp_path):
    _hierarchy(tmp_path)
    g = zarrkit.open_group(tmp_path, mode="r")
    assert zarrkit.tree(g) == g.tree()
    assert zarrkit.tree(g, level=1) == g.tree(level=1)
    assert zarrkit.tree(g, 1) != zarrkit.tree(g)
    assert "z" in zarrkit.tree(g) and "z" not in zarrkit.tree(g, level=2)
    with pytest.raises(NodeTypeError):
        zarrkit.tree(g["a"])


def test_members_of_all_depths_end_at_a_link_back_up(tmp_path):
    import os

    _hierarchy(tmp_path)
    os.symlink(tmp_path / "s", tmp_path / "s" / "t" / "loop")  # s/t/loop -> s
    g = zarrkit.open_group(tmp_path, mode="r")
    keys = [k for k, _ in g.members(None)]
    assert "s/t/loop" not in keys and "s/t/u/z" in keys


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_group_setitem_stores_an_array_as_zarr_python(tmp_path, zarr_format):
    g = zarrkit.open_group(tmp_path / "k.zarr", mode="w", zarr_format=zarr_format)
    g["a"] = np.arange(10, dtype="i2")
    g["b/c"] = [[1.5, 2.0]]
    g["a"] = np.ones(3, "u1")  # replaces the member
    oracle = zarr.open_group(tmp_path / "o.zarr", mode="w", zarr_format=zarr_format)
    oracle["a"] = np.ones(3, "u1")
    got = zarr.open_group(tmp_path / "k.zarr", mode="r")
    np.testing.assert_array_equal(got["a"][...], oracle["a"][...])
    assert got["a"].dtype == oracle["a"].dtype and got["a"].shape == (3,)
    np.testing.assert_array_equal(got["b/c"][...], [[1.5, 2.0]])


def test_group_setitem_of_bad_values_leaves_no_member(tmp_path):
    g = zarrkit.open_group(tmp_path / "k.zarr", mode="w")
    with pytest.raises(zarrkit.ZarrkitError):
        g["bad"] = np.array(["x", 5], dtype=object)  # text and a number: no one data type
    assert "bad" not in g
    g["kept"] = ["a", "b"]
    with pytest.raises(zarrkit.ZarrkitError):
        g["kept"] = np.array(["x", 5], dtype=object)
    assert g["kept"][...].tolist() == ["a", "b"]  # the member it was to replace is still there
    ro = zarrkit.open_group(tmp_path / "k.zarr", mode="r")
    with pytest.raises(ReadOnlyError):
        ro["a"] = np.zeros(2)

"""Calls a zarr-python 3 user makes, run with both libraries (zarr-python as the oracle): the
same call must give the same result, or a zarrkit exception where zarrkit cannot follow."""

import warnings

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import SpecError

zarr = pytest.importorskip("zarr")

FORMATS = pytest.mark.parametrize("zarr_format", [3, 2])


@FORMATS
@pytest.mark.parametrize("chunks", [True, False])
def test_boolean_chunks_as_zarr_python(tmp_path, zarr_format, chunks):
    # True is "choose them" and False "one chunk"; True was taken as 1 (a chunk per element)
    # and False as 0 (refused).
    kw = {"shape": (100, 100), "dtype": "int32", "chunks": chunks, "zarr_format": zarr_format}
    expected = zarr.create(store=str(tmp_path / "z"), **kw).chunks
    a = zarrkit.create(store=str(tmp_path / "k"), **kw)
    assert a.chunks == expected == (100, 100)
    if chunks:  # larger arrays: some chunking of more than one element per chunk
        big = zarrkit.create(shape=(10_000, 10_000), dtype="int32", chunks=True)
        assert 1 < np.prod(big.chunks) < 10_000 * 10_000
    else:
        assert zarrkit.create(shape=(3000, 7), chunks=False).chunks == (3000, 7)


@pytest.mark.parametrize("entry", ["create", "create_array", "group"])
def test_order_c_accepted_for_v3(tmp_path, entry):
    # zarr-python takes order= for v3 arrays too (stored order is always C there); zarrkit
    # refused the keyword outright.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python warns that it has no effect
        z = zarr.create_array(str(tmp_path / "z"), shape=(4, 3), dtype="i4", order="C")
    if entry == "create":
        a = zarrkit.create(store=str(tmp_path / "k"), shape=(4, 3), dtype="i4", order="C")
    elif entry == "create_array":
        a = zarrkit.create_array(str(tmp_path / "k"), shape=(4, 3), dtype="i4", order="C")
    else:
        a = zarrkit.open_group(str(tmp_path / "k"), mode="w").create_array(
            "x", shape=(4, 3), dtype="i4", order="C")
    assert a.order == z.order == "C" and a.zarr_format == 3
    assert a.metadata == zarrkit.create_array(str(tmp_path / "plain"), shape=(4, 3),
                                              dtype="i4").metadata
    # Opening the existing array with the same keyword agrees with it.
    assert zarrkit.open_array(str(tmp_path / "z"), mode="a", order="C").order == "C"


def test_order_f_for_v3_is_refused_by_name(tmp_path):
    # zarr-python ignores it for v3 (with a warning); reads are C-ordered here, so say so.
    with pytest.raises(SpecError, match="order='F'.*transpose"):
        zarrkit.create_array(str(tmp_path / "k"), shape=(4, 3), dtype="i4", order="F")
    f = zarrkit.create_array(str(tmp_path / "v2"), shape=(4, 3), dtype="i4", order="F",
                             zarr_format=2)
    assert f.order == "F"


@FORMATS
def test_config_keyword_as_zarr_python(tmp_path, zarr_format):
    # zarr-python 3 configures a handle by config={"write_empty_chunks": ..., "order": ...}.
    def stored(where):
        return sorted(p.name for p in (tmp_path / where).rglob("*")
                      if p.is_file() and not p.name.startswith((".z", "zarr.json"))
                      and ".zarrkit" not in str(p))

    for lib, where in ((zarr, "z"), (zarrkit, "k")):
        a = lib.create_array(str(tmp_path / where), shape=(4,), chunks=(2,), dtype="i4",
                             zarr_format=zarr_format, config={"write_empty_chunks": True})
        a[...] = 0
    assert stored("k") == stored("z") and len(stored("k")) == 2
    b = zarrkit.open_array(str(tmp_path / "k"), config={"write_empty_chunks": False})
    assert b.write_empty_chunks is False
    c = zarrkit.open_group(str(tmp_path / "g"), mode="w", zarr_format=zarr_format)
    assert c.create_array("x", shape=(2,), dtype="i1",
                          config={"write_empty_chunks": True}).write_empty_chunks
    assert zarrkit.create(shape=(2,), config={"order": "C"}).write_empty_chunks is False


def test_config_keyword_checked(tmp_path):
    with pytest.raises(SpecError, match="config.*unknown.*colour"):
        zarrkit.create_array(str(tmp_path / "a"), shape=(2,), dtype="i1",
                             config={"colour": "red"})
    with pytest.raises(SpecError, match="order"):
        zarrkit.create_array(str(tmp_path / "b"), shape=(2,), dtype="i1",
                             config={"order": "F"})
    with pytest.raises(SpecError, match="write_empty_chunks"):
        zarrkit.create_array(str(tmp_path / "c"), shape=(2,), dtype="i1",
                             config={"write_empty_chunks": True}, write_empty_chunks=False)


@FORMATS
def test_node_equality_as_zarr_python(tmp_path, zarr_format):
    # zarr-python's nodes are equal when they are the same node with the same metadata. A
    # zarrkit group compared as a mapping of fresh member handles: never equal, not even to
    # itself (and every member was opened to find out).
    where = str(tmp_path / "g")
    g = zarrkit.open_group(where, mode="w", zarr_format=zarr_format)
    g.create_array("x", shape=(2,), dtype="i1")
    g.create_group("sub")
    z = zarr.open_group(where)
    assert (z == z, z == zarr.open_group(where)) == (True, True)
    assert g == g and g == zarrkit.open_group(where) and g["x"] == g["x"]
    assert g["x"] == zarrkit.open_array(where, path="x", mode="r")
    assert g != g["sub"] and g["x"] != g["sub"] and g != {"x": g["x"], "sub": g["sub"]}
    z_stale = zarr.open_array(where, path="x")
    stale = zarrkit.open_array(where, path="x")
    g["x"].resize((5,))
    assert (z_stale == zarr.open_array(where, path="x")) is False
    assert stale != zarrkit.open_array(where, path="x")  # its metadata is out of date
    assert len({g["x"], g["x"]}) == 1  # still hashable, consistently with equality


@pytest.mark.parametrize("make", [
    lambda where: zarrkit.open_group(where, path="new", mode="a"),
    lambda where: zarrkit.create_array(where, name="new", shape=(2,), dtype="i1"),
])
def test_v3_default_under_a_v2_hierarchy_names_the_fix(tmp_path, make):
    # zarr-python writes a v3 zarr.json beside the root's .zgroup (a hierarchy of two formats);
    # zarrkit refuses, and now says which zarr_format would do.
    where = str(tmp_path / "t")
    zarrkit.open_group(where, mode="w", zarr_format=2).create_array("y", shape=(3,), dtype="f8")
    with pytest.raises(zarrkit.MetadataError, match="give zarr_format=2"):
        make(where)
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == [".zgroup", "y"]
    assert zarrkit.open_group(where, path="new", mode="a", zarr_format=2).zarr_format == 2


@FORMATS
def test_nchunks_initialized_is_a_property_as_in_zarr_python(tmp_path, zarr_format):
    # It was a method here: `a.nchunks_initialized == 2` was silently False.
    counts = []
    for lib, where in ((zarr, "z"), (zarrkit, "k")):
        a = lib.create_array(str(tmp_path / where), shape=(10,), chunks=(3,), dtype="i2",
                             zarr_format=zarr_format)
        a[:5] = 1
        counts.append(a.nchunks_initialized)
    assert counts[1] == counts[0] == 2 and str(counts[1]) == "2"
    assert counts[1]() == 2  # zarrkit's earlier spelling still works

"""Bug hunt on hierarchies (groups, consolidated metadata, zip stores), zarr-python as oracle."""

import json
import warnings

import numpy as np
import pytest
import zarr

import zarrkit
from zarrkit.errors import InvalidNameError, NodeNotFoundError, NodeTypeError, SpecError

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _deep(where, zarr_format=3):
    """/a, /a/y, /a/b, /a/b/x, /a/b/c, /a/b/c/d, written by zarr-python."""
    g = zarr.open_group(where, mode="w", zarr_format=zarr_format)
    g.create_array("a/b/x", shape=(4,), chunks=(2,), dtype="i2")
    g.create_array("a/y", shape=(4, 3), chunks=(2, 3), dtype="u1")
    g.create_group("a/b/c/d")
    return g


def test_an_open_zarr_python_zip_store_is_used_through_its_own_methods(tmp_path):
    """A ZipStore zarr-python is writing is no readable archive on disk until closed: zarrkit
    used to open the file by its path (CorruptDataError), and writing beside it would have
    been overwritten by zarr-python's close."""
    path = tmp_path / "z.zip"
    store = zarr.storage.ZipStore(path, mode="w")
    zarr.open_group(store, mode="w").create_array("x", shape=(3,), dtype="i1")[:] = [1, 2, 3]
    ours = zarrkit.open_group(store, mode="r+")
    assert ours["x"][...].tolist() == [1, 2, 3]
    ours.create_group("ours")
    store.close()
    theirs = zarr.open_group(zarr.storage.ZipStore(path, mode="r"), mode="r")
    assert sorted(theirs.keys()) == ["ours", "x"]
    assert sorted(zarrkit.open_group(path, mode="r").keys()) == ["ours", "x"]


def test_tree_level_counts_as_zarr_python_3s(tmp_path):
    """zarr-python 3: `tree(level=n)` shows `members(max_depth=n)`, so level 0 shows the
    members (zarrkit showed nothing, one level fewer at every level)."""
    _deep(tmp_path)
    ours = zarrkit.open_group(tmp_path, mode="r")
    theirs = zarr.open_group(tmp_path, mode="r")
    for level in (None, 0, 1, 2):
        assert ours.tree(level=level) == str(theirs.tree(level=level)).rstrip("\n")
        assert zarrkit.tree(ours, level) == ours.tree(level)
    assert ours.tree(0) == "/\n└── a"
    with pytest.raises(SpecError, match="level must be"):
        ours.tree(level=-1)


def test_consolidate_metadata_takes_zarr_pythons_arguments(tmp_path):
    _deep(tmp_path, zarr_format=2)
    with pytest.raises(NodeNotFoundError, match="Zarr v3"):
        zarrkit.consolidate_metadata(tmp_path, zarr_format=3)
    assert not (tmp_path / ".zmetadata").exists()
    zarrkit.consolidate_metadata(tmp_path, "a", 2)  # zarr-python's positions
    assert sorted(zarr.open_consolidated(tmp_path, path="a", zarr_format=2).keys()) == ["b", "y"]
    with pytest.raises(SpecError, match="zarr_format"):
        zarrkit.consolidate_metadata(tmp_path, zarr_format=4)


def test_members_use_consolidated_for_children(tmp_path):
    """zarr-python's keyword (a TypeError in zarrkit before): as its documentation says,
    groups read from the store ignore their own consolidated metadata (here stale) when it is
    False. (zarr-python 3.1.6 itself still lists the stale record here.)"""
    _deep(tmp_path)
    zarr.consolidate_metadata(tmp_path, path="a")
    zarr.open_group(tmp_path, mode="r+", path="a", use_consolidated=False).create_group("new")
    root = zarrkit.open_group(tmp_path, mode="r")
    stale = [p for p, _ in root.members(max_depth=None)]
    fresh = [p for p, _ in root.members(max_depth=None, use_consolidated_for_children=False)]
    listed = zarr.open_group(tmp_path, mode="r", path="a", use_consolidated=False)
    assert sorted(fresh) == ["a"] + sorted(f"a/{p}" for p, _ in listed.members(max_depth=None))
    assert "a/new" in fresh and "a/new" not in stale
    opened = zarrkit.open_consolidated(tmp_path, path="a")  # its own record: used regardless
    assert "new" not in [p for p, _ in opened.members(use_consolidated_for_children=False)]


@pytest.mark.parametrize("where", ["memory://", "file"])
def test_a_member_named_as_its_groups_metadata_key_is_refused(tmp_path, where):
    """"zarr.json" as a v3 member (".zattrs" etc. as a v2 one) collides with the group's own
    document key: a file store failed with an OSError-like StoreError, the memory store made
    a layout no file system can hold, and a v2 ".zattrs" group blocked the parent's
    attributes for good."""
    root = zarrkit.open_group(tmp_path / "v3" if where == "file" else "memory://hunt-v3",
                              mode="w")
    for make in (lambda n: root.create_group(n), lambda n: root.create_array(
            n, shape=(1,), dtype="i1"), lambda n: root.require_group(n)):
        for name in ("zarr.json", "a/zarr.json/b"):
            with pytest.raises(InvalidNameError, match="'zarr.json' is the key"):
                make(name)
    with pytest.raises(InvalidNameError):
        zarrkit.create_hierarchy(root.store, {"x/zarr.json": {"zarr_format": 3,
                                                              "node_type": "group"}})
    root.create_group("ok")
    with pytest.raises(InvalidNameError):
        root.move("ok", "zarr.json")
    assert sorted(root.keys()) == ["ok"]
    assert root.create_group(".zgroup").path == ".zgroup"  # another format's key: a name
    v2 = zarrkit.open_group(tmp_path / "v2" if where == "file" else "memory://hunt-v2",
                            mode="w", zarr_format=2)
    for name in (".zattrs", ".zgroup", ".zarray", ".zmetadata"):
        with pytest.raises(InvalidNameError, match="key of a group's own metadata"):
            v2.create_group(name)
    v2.attrs["still"] = "writable"
    assert dict(zarrkit.open_group(v2.store, mode="r").attrs) == {"still": "writable"}


def test_use_consolidated_values_are_checked(tmp_path):
    """zarr-python takes True, False, None or a v2 consolidated key; zarrkit took anything,
    by its truth value."""
    _deep(tmp_path, zarr_format=2)
    zarr.consolidate_metadata(tmp_path, zarr_format=2)
    assert zarrkit.open_group(tmp_path, mode="r", use_consolidated=".zmetadata")._consolidated
    assert zarrkit.open_consolidated(tmp_path, use_consolidated=".zmetadata").keys() == ["a"]
    for bad in ("other-key", 1, "yes"):
        with pytest.raises(SpecError, match="use_consolidated must be"):
            zarrkit.open_group(tmp_path, mode="r", use_consolidated=bad)
        with pytest.raises(SpecError, match="use_consolidated must be"):
            zarrkit.open(tmp_path, mode="r", use_consolidated=bad)
        with pytest.raises(SpecError, match="use_consolidated must be"):
            zarrkit.Group.open(tmp_path, use_consolidated=bad)


def test_a_group_or_dict_is_no_array_data():
    """`g[name] = other_group` stored the other group's member names as a string array."""
    g = zarrkit.open_group("memory://hunt-setitem", mode="w")
    other = zarrkit.open_group("memory://hunt-other", mode="w")
    other.create_group("m")
    with pytest.raises(NodeTypeError, match="is a group, not array data"):
        g["y"] = other
    with pytest.raises(SpecError, match="not a dict"):
        g.create_dataset("y", data={"a": 1})
    with pytest.raises(SpecError, match="not a dict"):
        g.array("y", {"a": 1})
    assert g.keys() == []


def test_consolidated_upkeep_reads_back_in_zarr_python(tmp_path):
    """Changes made through zarrkit to a hierarchy zarr-python consolidated (at the root and
    at a subgroup) read back in zarr-python's consolidated view, both formats."""
    for fmt in (2, 3):
        where = tmp_path / f"v{fmt}"
        _deep(where, zarr_format=fmt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            zarr.consolidate_metadata(where, path="a", zarr_format=fmt)
            zarr.consolidate_metadata(where, zarr_format=fmt)
        root = zarrkit.open_group(where, mode="r+")
        root["a/b/x"].resize((9,))
        root["a"].attrs["k"] = fmt
        root.move("a/y", "a/b/c/y")
        del root["a/b/c/d"]
        for path, theirs in (("", "a/b/x"), ("a", "b/x")):
            group = zarr.open_consolidated(where, path=path, zarr_format=fmt)
            assert group[theirs].shape == (9,)
            listed = sorted(p for p, _ in group.members(max_depth=None))
            assert listed == sorted(p for p, _ in zarrkit.open_group(
                where, path=path, mode="r", use_consolidated=False).members(max_depth=None))
        assert zarr.open_consolidated(where, zarr_format=fmt)["a"].attrs["k"] == fmt
    doc = json.loads((tmp_path / "v3" / "zarr.json").read_text())
    assert "a/b/c/y" in doc["consolidated_metadata"]["metadata"]
    assert np.array_equal(zarrkit.open_array(tmp_path / "v3", path="a/b/c/y", mode="r")[...],
                          np.zeros((4, 3), "u1"))

"""Groups and hierarchies, found in a review: deleting through consolidated metadata, names other
writers use, deleting the group itself, overwrites that fail, require_group/require_array."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import zarrkit
from zarrkit.kvstore.memory import MemoryStore

zarr = pytest.importorskip("zarr")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _consolidated_hierarchy(where, zarr_format):
    root = zarrkit.group(where, zarr_format=zarr_format)
    root.create_group("a").create_array("x", shape=(2,), dtype="<i4")
    root.create_group("ab")
    root.create_array("y", shape=(3,), dtype="<i4")
    zarrkit.consolidate_metadata(where)
    return zarrkit.open_group(where)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_deleting_a_member_drops_it_from_consolidated_metadata(tmp_path, zarr_format):
    root = _consolidated_hierarchy(tmp_path, zarr_format)
    del root["a"]["x"]  # below a consolidated ancestor
    assert zarrkit.open_group(tmp_path)["a"].keys() == []
    del root["a"]
    reopened = zarrkit.open_group(tmp_path)
    assert sorted(reopened) == ["ab", "y"] and "a" not in reopened  # "ab" is not under "a"
    with pytest.raises(zarrkit.NodeNotFoundError):
        reopened["a"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = zarr.open_consolidated(str(tmp_path), zarr_format=zarr_format)
        assert sorted(theirs.keys()) == ["ab", "y"]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_overwriting_a_member_replaces_its_consolidated_record(tmp_path, zarr_format):
    root = _consolidated_hierarchy(tmp_path, zarr_format)
    root.create_group("y", overwrite=True)  # an array before
    reopened = zarrkit.open_group(tmp_path)
    assert reopened._consolidated is not None
    # The group, not the deleted array (writing that would put chunks into the group).
    assert isinstance(reopened["y"], zarrkit.Group)


@pytest.mark.parametrize("name", ["", "/"])
def test_deleting_the_group_itself_by_an_empty_name_is_refused(name):
    store = MemoryStore()
    root = zarrkit.group(store)
    a = root.create_group("a")
    a.create_array("x", shape=(2,), dtype="u1")[...] = 7
    for group in (root, a):
        with pytest.raises(zarrkit.InvalidNameError, match="itself"):
            del group[name]
    assert name not in root
    np.testing.assert_array_equal(zarrkit.open(store, path="a/x", mode="r")[...], [7, 7])


def _freely_named(where, zarr_format, consolidate=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = zarr.open_group(str(where), mode="w", zarr_format=zarr_format)
        theirs.create_group("__x")
        theirs.create_array("...", shape=(2,), dtype="<i4")
        theirs.create_group("ok")
        if consolidate:
            zarr.consolidate_metadata(str(where))


@pytest.mark.parametrize("consolidate", [False, True])
def test_v2_members_zarr_python_names_freely_open(tmp_path, consolidate):
    _freely_named(tmp_path, 2, consolidate)  # v2 reserves no names
    root = zarrkit.open_group(tmp_path, mode="a")
    assert sorted(root) == ["...", "__x", "ok"]
    assert [name for name, _ in root.members()] == sorted(root)
    assert "__x" in root and root["..."].shape == (2,) and "__x" in root.tree()
    del root["__x"]
    assert sorted(root) == ["...", "ok"]
    with pytest.raises(zarrkit.InvalidNameError, match="reserved"):  # creating follows v3 rules
        root.create_group("__y")
    with pytest.raises(zarrkit.InvalidNameError):
        root[".."]


@pytest.mark.parametrize("consolidate", [False, True])
def test_v3_listing_leaves_out_names_the_spec_reserves(tmp_path, consolidate):
    _freely_named(tmp_path, 3, consolidate)
    root = zarrkit.open_group(tmp_path, mode="r")
    assert list(root) == ["ok"] and [n for n, _ in root.members()] == ["ok"]  # all of it opens
    assert root.tree() == "/\n└── ok" and "__x" not in root


def test_a_failed_overwrite_deletes_nothing(tmp_path):
    root = zarrkit.group(tmp_path)  # v3
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / ".zgroup").write_text(json.dumps({"zarr_format": 2}))  # another writer's
    zarrkit.create(tmp_path / "a", path="b", shape=(2,), dtype="<i2", zarr_format=2)[...] = 5
    with pytest.raises(zarrkit.MetadataError, match="v2 group"):
        root.create_group("a/b", overwrite=True)
    kept = zarrkit.open(tmp_path / "a", path="b", mode="r")
    np.testing.assert_array_equal(kept[...], [5, 5])


def test_require_group_on_an_array_says_so():
    root = zarrkit.group(MemoryStore())
    root.create_array("x", shape=(1,), dtype="u1")
    with pytest.raises(zarrkit.NodeTypeError, match="/x is an array"):
        root.require_group("x")


def test_require_group_finds_a_member_stale_consolidated_metadata_misses(tmp_path):
    _consolidated_hierarchy(tmp_path, 3)
    with warnings.catch_warnings():  # zarr-python leaves the record as it was
        warnings.simplefilter("ignore")
        zarr.open_group(str(tmp_path), use_consolidated=False).create_group("later").attrs["n"] = 1
    root = zarrkit.open_group(tmp_path)
    assert "later" not in root  # the snapshot does not know it
    assert root.require_group("later").attrs["n"] == 1


def test_require_array():
    root = zarrkit.group(MemoryStore())
    created = root.require_array("x", shape=(3,), dtype="u1")
    created[...] = 4
    again = root.require_array("x", shape=(3,), dtype="u1")
    np.testing.assert_array_equal(again[...], [4, 4, 4])
    with pytest.raises(zarrkit.SpecError, match="shape"):
        root.require_array("x", shape=(4,), dtype="u1")
    root.create_group("g")
    with pytest.raises(zarrkit.NodeTypeError, match="/g is a group"):
        root.require_array("g", shape=(1,))


def test_a_stale_group_handle_does_not_turn_an_array_back_into_a_group():
    store = MemoryStore()
    root = zarrkit.group(store)
    stale = root.create_group("a")
    root.create_array("a", shape=(3,), dtype="<i4", overwrite=True)[...] = 5
    with pytest.raises(zarrkit.NodeTypeError, match="now an array"):
        stale.attrs["x"] = 1
    np.testing.assert_array_equal(zarrkit.open(store, path="a", mode="r")[...], [5, 5, 5])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_use_consolidated_true_requires_consolidated_metadata(tmp_path, zarr_format):
    zarrkit.group(tmp_path, zarr_format=zarr_format).create_group("a")
    with pytest.raises(zarrkit.MetadataError, match="use_consolidated=True"):
        zarrkit.open_group(tmp_path, mode="r", use_consolidated=True)
    zarrkit.consolidate_metadata(tmp_path)
    assert list(zarrkit.open_group(tmp_path, mode="r", use_consolidated=True)) == ["a"]


def test_a_stale_array_handle_does_not_turn_a_group_back_into_an_array(tmp_path):
    from zarrkit.errors import NodeTypeError

    root = zarrkit.open_group(tmp_path / "r", mode="w")
    stale = root.create_array("x", shape=(2,), dtype="i4")
    root.create_group("x", overwrite=True).create_group("child")
    with pytest.raises(NodeTypeError, match="now a group"):
        stale.attrs["k"] = 1
    assert "child" in zarrkit.open_group(tmp_path / "r", mode="r")["x"]


def test_a_failed_array_overwrite_deletes_nothing(tmp_path):
    """The parents are checked before the old array is deleted (a v2 group between a v3 root
    and the array: refused, after the array had been deleted)."""
    import json

    from zarrkit.errors import MetadataError

    root = zarrkit.open_group(tmp_path / "p", mode="w")
    (tmp_path / "p" / "a").mkdir()
    (tmp_path / "p" / "a" / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    old = zarrkit.create(str(tmp_path / "p" / "a"), path="b", shape=(2,), dtype="<i2",
                         zarr_format=2)
    old[...] = [7, 8]
    with pytest.raises(MetadataError):
        root.create_array("a/b", shape=(2,), dtype="u1", overwrite=True)
    assert zarrkit.open(str(tmp_path / "p" / "a"), path="b", mode="r")[...].tolist() == [7, 8]

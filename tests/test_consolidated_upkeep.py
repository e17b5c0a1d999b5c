"""Consolidated metadata kept up to date: a node zarrkit creates, changes (resize, attributes),
replaces or moves below a group with consolidated metadata is recorded there at once, so
readers of the record (zarrkit's default, zarr-python's `open_consolidated`) see the hierarchy
as it is, never a stale shape or a node that is gone."""

import json
import warnings

import numpy as np
import pytest
import zarr

import zarrkit
from zarrkit.kvstore import MemoryStore


def _records(path, zarr_format, group=""):
    where = path / group if group else path
    if zarr_format == 3:
        return json.loads((where / "zarr.json").read_text())["consolidated_metadata"]["metadata"]
    return json.loads((where / ".zmetadata").read_text())["metadata"]


def _hierarchy(path, zarr_format):
    root = zarrkit.open_group(path, mode="w", zarr_format=zarr_format)
    root.create_array("a", shape=(4,), chunks=(2,), dtype="i4")[...] = 1
    root.create_group("sub").create_array("b", shape=(3,), chunks=(3,), dtype="f4")
    zarrkit.consolidate_metadata(path)
    return zarrkit.open_group(path, use_consolidated=False)


def _theirs(path, zarr_format):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_consolidated(str(path), zarr_format=zarr_format)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_changes_after_consolidating_are_recorded(tmp_path, zarr_format):
    g = _hierarchy(tmp_path, zarr_format)
    g["a"].resize((8,))
    g["a"].attrs["units"] = "m"
    g.create_array("new", shape=(2,), chunks=(2,), dtype="u1")
    g["sub"].create_group("deeper/still")  # with its implied parent
    g["sub"]["b"] = np.arange(5.0)  # a replacement: staged, then moved in
    g.move("sub/b", "moved")

    read = zarrkit.open_group(tmp_path, mode="r")
    assert read._consolidated is not None
    assert sorted(read) == ["a", "moved", "new", "sub"]
    assert read["a"].shape == (8,) and read["a"].attrs["units"] == "m"
    assert read["moved"][...].tolist() == [0, 1, 2, 3, 4]
    assert sorted(read["sub"]) == ["deeper"] and "still" in read["sub"]["deeper"]
    assert not any(".zarrkit-replacing-" in k for k in _records(tmp_path, zarr_format))

    theirs = _theirs(tmp_path, zarr_format)
    assert theirs["a"].shape == (8,) and theirs["moved"].shape == (5,)
    assert sorted(theirs.group_keys()) == ["sub"]
    assert sorted(theirs.array_keys()) == ["a", "moved", "new"]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_records_equal_a_fresh_consolidation(tmp_path, zarr_format):
    """What upkeep leaves is what consolidating again would write."""
    g = _hierarchy(tmp_path, zarr_format)
    g["a"].resize((6,))
    g["sub"].attrs["title"] = "t"
    g["sub"]["c"] = np.ones((2, 2), dtype="u2")
    g.move("a", "sub/a2")
    kept = _records(tmp_path, zarr_format)
    zarrkit.consolidate_metadata(tmp_path)
    assert kept == _records(tmp_path, zarr_format)


def test_every_consolidated_ancestor_is_kept_up_to_date(tmp_path):
    g = _hierarchy(tmp_path, 3)
    zarrkit.consolidate_metadata(tmp_path / "sub")  # a record of its own below the root's
    g["sub"]["b"].resize((7,))
    assert _records(tmp_path, 3)["sub/b"]["shape"] == [7]
    assert _records(tmp_path, 3, "sub")["b"]["shape"] == [7]
    # the root's record of "sub" carries no nested copy to go stale
    assert "consolidated_metadata" not in _records(tmp_path, 3)["sub"]


def test_a_failed_replacement_keeps_the_old_record(tmp_path, monkeypatch):
    g = _hierarchy(tmp_path, 3)
    before = _records(tmp_path, 3)

    def disk_full(keys, values):
        raise zarrkit.StoreError("disk full")

    monkeypatch.setattr(g.store, "replace_many", disk_full)  # chunks fail, metadata works
    monkeypatch.setattr(g.store, "replace", disk_full)
    with pytest.raises(zarrkit.StoreError, match="disk full"):
        g["sub"]["b"] = np.arange(5.0)
    assert _records(tmp_path, 3) == before  # the staging node was never recorded
    assert zarrkit.open_group(tmp_path, mode="r")["sub"]["b"].shape == (3,)


def test_create_hierarchy_and_spec_creation_are_recorded():
    store = MemoryStore()
    zarrkit.open_group(store, mode="w")
    zarrkit.consolidate_metadata(store)
    zarrkit.create_hierarchy(store, {"x/y": {"zarr_format": 3, "node_type": "group"}})
    zarrkit.open({"driver": "zarr3", "kvstore": store, "path": "x/arr",
                  "metadata": {"shape": [4], "data_type": "int16"}}, create=True)
    read = zarrkit.open_group(store, mode="r")
    assert read._consolidated is not None
    assert sorted(read["x"]) == ["arr", "y"] and read["x"]["arr"].dtype == np.int16


def test_without_consolidated_metadata_nothing_is_added(tmp_path):
    g = zarrkit.open_group(tmp_path, mode="w")
    g.create_group("sub").create_array("b", shape=(3,), dtype="f4").resize((5,))
    assert "consolidated_metadata" not in json.loads((tmp_path / "zarr.json").read_text())
    assert "consolidated_metadata" not in json.loads((tmp_path / "sub" / "zarr.json").read_text())


def test_a_v2_groups_own_documents_are_kept_up_to_date(tmp_path):
    """A v2 `.zmetadata` records its group's own `.zgroup` and `.zattrs` too."""
    g = _hierarchy(tmp_path, 2)
    g.attrs["title"] = "changed"
    g["sub"].attrs["level"] = 1
    zarrkit.consolidate_metadata(tmp_path / "sub")  # sub's own record, then a change in it
    g["sub"].attrs["level"] = 2
    assert _records(tmp_path, 2)[".zattrs"] == {"title": "changed"}
    assert _records(tmp_path, 2)["sub/.zattrs"] == {"level": 2}
    assert _records(tmp_path, 2, "sub")[".zattrs"] == {"level": 2}
    assert dict(_theirs(tmp_path, 2).attrs) == {"title": "changed"}

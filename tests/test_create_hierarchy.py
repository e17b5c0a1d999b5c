"""zarr-python's create_hierarchy (top level and on a group), and its constructors
Group.open, Group.from_store and Array.open."""

import numpy as np
import pytest
import zarr
from zarr.core.group import GroupMetadata

import zarrkit

INT8 = {"zarr_format": 3, "node_type": "array", "shape": [3], "data_type": "int8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 5,
        "codecs": [{"name": "bytes"}]}


def test_creates_nodes_and_the_groups_they_imply(tmp_path):
    where = str(tmp_path / "h.zarr")
    theirs = zarr.create_array({}, shape=(4,), dtype="f4", chunks=(2,), attributes={"x": 1})
    out = zarrkit.create_hierarchy(where, {
        "a/b/c": theirs.metadata,                      # zarr-python's metadata object
        "g": GroupMetadata(attributes={"k": 2}),
        "h/arr": INT8,                                 # a zarr.json document
    })
    assert list(out) == ["", "a", "g", "h", "a/b", "h/arr", "a/b/c"]  # parents first
    assert isinstance(out["a/b"], zarrkit.Group) and isinstance(out["h/arr"], zarrkit.Array)
    assert (out["h/arr"][...] == 5).all() and out["g"].attrs["k"] == 2
    assert out["a/b/c"].attrs["x"] == 1 and out["a/b/c"].dtype == np.float32
    z = zarr.open_group(where, mode="r")
    assert z["a/b/c"].shape == (4,) and z["g"].attrs["k"] == 2 and isinstance(z["a/b"], zarr.Group)


def test_zarrkit_nodes_and_v2(tmp_path):
    model = zarrkit.zeros({}, (6,), chunks=(3,), dtype="u2", zarr_format=2,
                          attributes={"unit": "m"})
    out = zarrkit.create_hierarchy(str(tmp_path / "v2.zarr"), {"x/y": model})
    assert out["x/y"].zarr_format == 2 and out["x"].zarr_format == 2
    z = zarr.open_group(str(tmp_path / "v2.zarr"), mode="r", zarr_format=2)
    assert z["x/y"].attrs["unit"] == "m" and z["x/y"].chunks == (3,)


def test_refusals_write_nothing(tmp_path):
    where = str(tmp_path / "r.zarr")
    with pytest.raises(zarrkit.MetadataError, match="one hierarchy, one format"):
        zarrkit.create_hierarchy(where, {"a": INT8, "b": {"zarr_format": 2}})
    with pytest.raises(zarrkit.MetadataError, match="below 'a', an array"):
        zarrkit.create_hierarchy(where, {"a": INT8, "a/b": GroupMetadata()})
    with pytest.raises(zarrkit.InvalidNameError):
        zarrkit.create_hierarchy(where, {"__bad": INT8})
    with pytest.raises(zarrkit.MetadataError, match="expected a metadata document"):
        zarrkit.create_hierarchy(where, {"a": 5})
    with pytest.raises(zarrkit.MetadataError):
        zarrkit.create_hierarchy(where, {"a": {**INT8, "shape": "wide"}})
    assert not (tmp_path / "r.zarr").exists()


def test_existing_nodes(tmp_path):
    where = str(tmp_path / "e.zarr")
    root = zarrkit.open_group(where, mode="w")
    root.create_group("keep").attrs["old"] = True
    root.create_array("arr", shape=(2,), dtype="u1")[...] = [7, 8]
    with pytest.raises(zarrkit.NodeExistsError, match="'arr'"):
        zarrkit.create_hierarchy(where, {"arr": INT8, "new": INT8})
    assert "new" not in root and root["arr"][...].tolist() == [7, 8]
    # an implied group that exists stays as it is; a node given there is replaced on overwrite
    out = zarrkit.create_hierarchy(where, {"keep/inner": INT8, "arr": INT8}, overwrite=True)
    assert out["keep"].attrs["old"] is True
    assert root["arr"][...].tolist() == [5, 5, 5]
    with pytest.raises(zarrkit.MetadataError, match="needs a group"):
        zarrkit.create_hierarchy(where, {"arr/below": INT8})


def test_group_create_hierarchy(tmp_path):
    g = zarrkit.open_group(str(tmp_path / "g.zarr"), mode="w").create_group("sub")
    out = g.create_hierarchy({"p/q": INT8})
    assert set(out) == {"", "p", "p/q"} and out[""].path == "sub"
    assert out["p/q"].path == "sub/p/q"
    assert list(g) == ["p"]
    frozen = zarrkit.open_group(str(tmp_path / "g.zarr"), mode="r")
    with pytest.raises(zarrkit.ReadOnlyError):
        frozen.create_hierarchy({"z": INT8})


def test_class_constructors(tmp_path):
    where = str(tmp_path / "c.zarr")
    g = zarrkit.Group.from_store(where, attributes={"a": 1})
    assert g.attrs["a"] == 1
    with pytest.raises(zarrkit.NodeExistsError):
        zarrkit.Group.from_store(where)
    assert zarrkit.Group.from_store(where, overwrite=True).attrs.asdict() == {}
    g.create_array("x", shape=(3,), dtype="u1")
    assert zarrkit.Group.open(where)["x"].shape == (3,)
    assert zarrkit.Array.open(f"{where}/x").shape == (3,)
    with pytest.raises(zarrkit.NodeTypeError):
        zarrkit.Array.open(where)
    with pytest.raises(zarrkit.NodeTypeError):
        zarrkit.Group.open(f"{where}/x")
    with pytest.raises(zarrkit.NodeNotFoundError):
        zarrkit.Group.open(str(tmp_path / "none.zarr"))
    v2 = zarrkit.Group.from_store(str(tmp_path / "v2.zarr"), zarr_format=2)
    assert zarrkit.Group.open(str(tmp_path / "v2.zarr"), zarr_format=2).zarr_format == 2
    assert v2.zarr_format == 2

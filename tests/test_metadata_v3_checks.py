"""v3 metadata, codecs and hierarchies against the spec and the peers (zarr-python 3,
TensorStore): null consolidated_metadata, unstorable attributes, argument checks."""

import json

import numpy as np
import pytest
import zarr

import zarrkit
from zarrkit.codecs import ShardingCodec, TransposeCodec
from zarrkit.group import Group
from zarrkit.kvstore.memory import MemoryStore
from zarrkit.metadata import ArrayMetadataV3, GroupMetadataV3


def _write_json(path, doc):
    path.mkdir(parents=True, exist_ok=True)
    (path / "zarr.json").write_text(json.dumps(doc))


# -- groups -----------------------------------------------------------------------------------


def test_group_with_null_consolidated_metadata_opens(tmp_path):
    """zarr-python <= 3.1.3 wrote "consolidated_metadata": null into every group's zarr.json."""
    doc = {"attributes": {"ome": {}}, "zarr_format": 3, "consolidated_metadata": None,
           "node_type": "group"}
    _write_json(tmp_path, doc)
    _write_json(tmp_path / "sub", {**doc, "attributes": {}})
    group = zarrkit.open(tmp_path)
    assert group.attrs.asdict() == {"ome": {}}
    assert list(group.keys()) == ["sub"]
    assert "consolidated_metadata" not in GroupMetadataV3.from_json(doc, where="k").to_json()
    assert zarr.open_group(tmp_path, mode="r").attrs.asdict() == {"ome": {}}


@pytest.mark.parametrize("kind", ["group", "array"])
def test_overwrite_with_unstorable_attributes_keeps_the_old_node(tmp_path, kind):
    """Attributes that cannot be written as JSON are refused before an overwrite deletes."""
    root = zarrkit.group(tmp_path)
    root.create_group("g").create_array("inner", shape=(2,), dtype="i1")[...] = 5
    root.create_array("a", shape=(2,), dtype="i1")[...] = 7
    name, create = ("g", root.create_group) if kind == "group" else \
        ("a", lambda n, **kw: root.create_array(n, shape=(2,), dtype="i1", **kw))
    with pytest.raises(zarrkit.MetadataError, match=r"attributes: 'bad': .*JSON"):
        create(name, attributes={"ok": 1, "bad": [b"bytes"]}, overwrite=True)
    assert sorted(root.keys()) == ["a", "g"]
    assert root["g/inner"][...].tolist() == [5, 5]
    assert root["a"][...].tolist() == [7, 7]


class _FailingStore(MemoryStore):
    """A store whose existence checks fail, as a remote store does when unreachable."""

    def exists(self, key):
        raise zarrkit.StoreUnreachableError(f"cannot reach the store for {key!r}")


def test_group_contains_does_not_hide_store_errors():
    store = _FailingStore()
    group = Group(store, "", GroupMetadataV3())
    assert "__reserved" not in group and ".." not in group and 3 not in group  # invalid names
    with pytest.raises(zarrkit.StoreUnreachableError, match="cannot reach"):
        "member" in group  # noqa: B015 - the check itself is under test


@pytest.mark.parametrize("call", [
    lambda attrs: attrs.update(5), lambda attrs: attrs.update([1, 2]),
    lambda attrs: attrs.put([1]), lambda attrs: attrs.put(None)])
def test_attributes_that_are_not_a_mapping_raise_metadata_error(tmp_path, call):
    group = zarrkit.group(tmp_path, attributes={"kept": 1})
    with pytest.raises(zarrkit.MetadataError, match="attributes must be a mapping"):
        call(group.attrs)
    group.attrs.put([("a", 1)])  # (name, value) pairs are a mapping, as for dict()
    assert zarrkit.open(tmp_path).attrs.asdict() == {"a": 1}


# -- codecs built in Python ---------------------------------------------------------------------


@pytest.mark.parametrize("build, member", [
    (lambda: TransposeCodec(5), "order"), (lambda: TransposeCodec(None), "order"),
    (lambda: ShardingCodec(5), "chunk_shape"), (lambda: ShardingCodec([2], codecs=5), "codecs"),
    (lambda: ShardingCodec([2], index_codecs=None), "index_codecs")])
def test_codec_constructors_refuse_non_sequences_with_codec_error(build, member):
    with pytest.raises(zarrkit.CodecError, match=f"'{member}'"):
        build()


def test_sharding_codec_takes_a_numpy_chunk_shape_like_transpose_takes_its_order():
    assert ShardingCodec(np.array([2, 3])).chunk_shape == (2, 3)
    assert TransposeCodec(np.array([1, 0])).order == (1, 0)


# -- array metadata built in Python -------------------------------------------------------------


@pytest.mark.parametrize("changes, error, member", [
    ({"shape": 5}, zarrkit.MetadataError, "shape"),
    ({"chunk_shape": 1}, zarrkit.MetadataError, "chunk_shape"),
    ({"codecs": 5}, zarrkit.CodecError, "codecs"),
    ({"codecs": "bytes"}, zarrkit.CodecError, "codecs"),  # not ["b", "y", ...]
    ({"dimension_names": 5}, zarrkit.MetadataError, "dimension_names"),
    ({"dimension_names": "xy"}, zarrkit.MetadataError, "dimension_names")])  # not ["x", "y"]
def test_array_metadata_create_refuses_non_lists_by_member(changes, error, member):
    args = {"shape": (2, 3), "data_type": "float32", "chunk_shape": (1, 1), **changes}
    with pytest.raises(error, match=member):
        ArrayMetadataV3.create(**args)


def test_array_metadata_create_takes_numpy_shapes_and_names():
    md = ArrayMetadataV3.create(np.array([2, 3]), "float32", np.array([1, 3]),
                                dimension_names=np.array(["x", "y"]))
    assert (md.shape, md.chunk_shape, md.dimension_names) == ((2, 3), (1, 3), ("x", "y"))

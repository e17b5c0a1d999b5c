"""Zarr v2 nodes behind the common Array/Group API: groups, attributes, dimension names, format
detection, consolidated metadata (v2 `.zmetadata` and v3 inline), and the separator guard."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from _v2_helpers import assert_same

import zarrkit
from zarrkit.kvstore.base import KvStore
from zarrkit.kvstore.memory import MemoryStore

zarr = pytest.importorskip("zarr")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


class CallCountingStore(KvStore):
    """Counts requests (a `get_many` batch is one request: one round trip to the store)."""

    driver = "counting"
    io_concurrency = 8  # behaves as a remote store: a request is a round trip

    def __init__(self, inner: KvStore) -> None:
        super().__init__()
        self.inner = inner
        self.requests: list[list[str]] = []

    def get(self, key, byte_range=None):
        self.requests.append([key])
        return self.inner.get(key, byte_range)

    def get_many(self, requests):
        self.requests.append([k for k, _ in requests])
        return [self.inner.get(k, r) for k, r in requests]

    def exists(self, key):
        self.requests.append([key])
        return self.inner.exists(key)

    def list_prefix(self, prefix):
        self.requests.append([f"list:{prefix}"])
        return self.inner.list_prefix(prefix)

    def _set(self, key, value):
        self.inner.set(key, value)

    def _delete(self, key):
        self.inner.delete(key)

    def to_json(self):
        return self.inner.to_json()


def _zarr_group(path, zarr_format=2):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)
        root.attrs["title"] = "root"
        sub = root.create_group("sub")
        sub.attrs["level"] = 1
        a = sub.create_array("a", shape=(6, 4), chunks=(3, 2), dtype="<i4", fill_value=-1)
        a[...] = np.arange(24).reshape(6, 4)
        b = root.create_array("b", shape=(5,), chunks=(2,), dtype=">f8")
        b[:3] = [1.5, np.nan, -0.0]
        if zarr_format == 2:
            b.attrs["_ARRAY_DIMENSIONS"] = ["t"]
        root.create_group("sub/deeper/deepest")
    return root


def test_group_api_over_a_zarr_python_v2_hierarchy(tmp_path):
    _zarr_group(tmp_path)
    root = zarrkit.open(tmp_path, mode="r")
    assert isinstance(root, zarrkit.Group) and root.zarr_format == 2
    assert root.metadata == {"zarr_format": 2}
    assert sorted(root) == ["b", "sub"] and root.attrs["title"] == "root"
    assert root.group_keys() == ["sub"] and root.array_keys() == ["b"]
    a = root["sub/a"]
    assert a.zarr_format == 2 and a.fill_value == -1
    assert_same(a[...], np.arange(24).reshape(6, 4))
    b = root["b"]
    assert b.dimension_names == ("t",) and b.attrs["_ARRAY_DIMENSIONS"] == ["t"]
    assert_same(b[...], np.array([1.5, np.nan, -0.0, 0, 0]))
    assert "sub/deeper/deepest" in root and "nothing" not in root
    assert "deepest" in root.tree()


def test_writing_a_v2_hierarchy_zarr_python_reads(tmp_path):
    root = zarrkit.group(tmp_path, zarr_format=2, attributes={"title": "ours"})
    a = root.create_group("g").create_array("a", shape=(5, 3), chunks=(2, 2), dtype="<u2",
                                              dimension_names=["y", "x"], fill_value=7)
    a[1:4] = 3
    a.attrs["units"] = "m"
    root.create_array("deep/er/b", shape=(2,), dtype="<f4", zarr_format=2)
    assert json.loads((tmp_path / ".zgroup").read_text()) == {"zarr_format": 2}
    assert (tmp_path / "deep" / "er" / ".zgroup").exists()  # the spec's implicit parents
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = zarr.open_group(str(tmp_path), mode="r")
        assert theirs.attrs["title"] == "ours"
        assert theirs["g/a"].attrs.asdict() == {"_ARRAY_DIMENSIONS": ["y", "x"], "units": "m"}
        assert_same(theirs["g/a"][...], a[...])
        assert sorted(theirs.group_keys()) == ["deep", "g"]


def test_attribute_updates_touch_only_zattrs(tmp_path):
    a = zarrkit.create(tmp_path, shape=(4,), chunks=(2,), dtype=">i2", zarr_format=2)
    before = (tmp_path / ".zarray").read_bytes()
    assert not (tmp_path / ".zattrs").exists()  # none written for no attributes
    a.attrs["k"] = [1, 2]
    del a.attrs["k"]
    assert (tmp_path / ".zarray").read_bytes() == before
    assert json.loads((tmp_path / ".zattrs").read_text()) == {}


def test_resize_and_append_v2(tmp_path):
    a = zarrkit.open({"driver": "zarr", "kvstore": {"driver": "file", "path": str(tmp_path)},
                      "metadata": {"shape": [5], "chunks": [2], "dtype": "<i8",
                                   "compressor": None}}, create=True)  # TensorStore: null fill
    assert a.fill_value is None
    a[...] = np.arange(5) + 1
    a.resize(3)
    a.append(np.array([9, 9]))
    assert json.loads((tmp_path / ".zarray").read_text())["shape"] == [5]
    assert json.loads((tmp_path / ".zarray").read_text())["fill_value"] is None
    assert_same(zarrkit.open(tmp_path, mode="r")[...], np.array([1, 2, 3, 9, 9]))


def test_format_detection_and_forcing(tmp_path):
    zarrkit.create(tmp_path / "v2", shape=(2,), dtype="<i4", zarr_format=2)
    zarrkit.create(tmp_path / "v3", shape=(2,), dtype="<i4")
    assert zarrkit.open(tmp_path / "v2", mode="r").zarr_format == 2
    assert zarrkit.open(tmp_path / "v3", mode="r").zarr_format == 3
    assert zarrkit.open(tmp_path / "v2", mode="r", zarr_format=2).zarr_format == 2
    with pytest.raises(zarrkit.NodeNotFoundError, match="Zarr v3"):
        zarrkit.open(tmp_path / "v2", mode="r", zarr_format=3)
    with pytest.raises(zarrkit.SpecError, match="zarr_format"):
        zarrkit.open(tmp_path / "v2", mode="r", zarr_format=4)
    g = zarrkit.open_group(tmp_path / "g", mode="w", zarr_format=2)
    assert g.create_array("x", shape=(1,)).zarr_format == 2  # children follow their group
    assert g.create_group("y").zarr_format == 2


def test_one_hierarchy_one_format(tmp_path):
    zarrkit.group(tmp_path)  # v3
    with pytest.raises(zarrkit.MetadataError, match="v3 group"):
        zarrkit.create(tmp_path, path="a", shape=(1,), zarr_format=2)
    v2 = zarrkit.group(tmp_path / "two", zarr_format=2)
    (tmp_path / "two" / "stray").mkdir()
    (tmp_path / "two" / "stray" / "zarr.json").write_text(
        json.dumps({"zarr_format": 3, "node_type": "group"}))
    assert list(v2) == []  # v3 documents are not members of a v2 group


def test_ambiguous_v2_node(tmp_path):
    zarrkit.create(tmp_path, shape=(1,), zarr_format=2)
    (tmp_path / ".zgroup").write_text('{"zarr_format": 2}')
    with pytest.raises(zarrkit.MetadataError, match="both"):
        zarrkit.open(tmp_path, mode="r")


# -- consolidated metadata ----------------------------------------------------------------------


def test_local_store_is_asked_for_zarr_json_alone_first(tmp_path):
    zarrkit.create(tmp_path / "v3", shape=(4,), dtype="u1")
    zarrkit.create(tmp_path / "v2", shape=(4,), dtype="u1", zarr_format=2)
    for name, expected in (("v3", [["zarr.json"]]),
                           ("v2", [["zarr.json"], [".zarray", ".zgroup", ".zattrs",
                                                   ".zmetadata"]])):
        store = CallCountingStore(zarrkit.kvstore.FileStore(str(tmp_path / name)))
        store.io_concurrency = 0  # local: a request costs less than a round trip
        zarrkit.open(store, mode="r")
        assert store.requests[:len(expected)] == expected


def test_reading_zarr_python_consolidated_costs_one_request(tmp_path):
    _zarr_group(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(str(tmp_path))
    store = CallCountingStore(zarrkit.kvstore.FileStore(str(tmp_path)))
    root = zarrkit.open_group(store, mode="r")
    assert len(store.requests) == 1
    # The whole hierarchy's metadata, with no further request.
    listing = root.tree()
    dims = root["b"].dimension_names
    attrs = root["sub"].attrs.asdict()
    shape = root["sub/a"].shape
    assert len(store.requests) == 1, store.requests[1:]
    assert "deepest" in listing and dims == ("t",) and attrs == {"level": 1} and shape == (6, 4)
    assert_same(root["sub/a"][...], np.arange(24).reshape(6, 4))  # data: chunk reads only


def test_consolidating_v2_then_refreshing(tmp_path):
    root = zarrkit.group(tmp_path, zarr_format=2)
    root.create_array("a", shape=(3,), dtype="<i2", attributes={"x": 1})
    zarrkit.consolidate_metadata(tmp_path)
    doc = json.loads((tmp_path / ".zmetadata").read_text())
    assert doc["zarr_consolidated_format"] == 1
    assert set(doc["metadata"]) == {".zgroup", ".zattrs", "a/.zarray", "a/.zattrs"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = zarr.open_consolidated(str(tmp_path), zarr_format=2)
        assert list(theirs.array_keys()) == ["a"] and theirs["a"].attrs["x"] == 1
    with warnings.catch_warnings():  # written by zarr-python after: not recorded
        warnings.simplefilter("ignore")
        zarr.open_group(str(tmp_path), zarr_format=2, use_consolidated=False).create_group("later")
    assert sorted(zarrkit.open(tmp_path, mode="r")) == ["a"]
    assert sorted(zarrkit.open(tmp_path, mode="r", use_consolidated=False)) == ["a", "later"]
    zarrkit.consolidate_metadata(tmp_path)  # refresh
    assert sorted(zarrkit.open(tmp_path, mode="r")) == ["a", "later"]


def test_a_group_drops_its_consolidated_view_when_it_changes(tmp_path):
    zarrkit.group(tmp_path, zarr_format=2).create_group("a")
    zarrkit.consolidate_metadata(tmp_path)
    root = zarrkit.open_group(tmp_path, mode="a")
    root.create_group("b")
    assert sorted(root) == ["a", "b"]


def test_v3_consolidated_both_directions(tmp_path):
    _zarr_group(tmp_path / "theirs", zarr_format=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(str(tmp_path / "theirs"))
    store = CallCountingStore(zarrkit.kvstore.FileStore(str(tmp_path / "theirs")))
    root = zarrkit.open_group(store, mode="r")
    assert "deepest" in root.tree() and root["sub/a"].shape == (6, 4)
    assert len(store.requests) == 1
    ours = zarrkit.group(tmp_path / "ours")
    ours.create_group("g").create_array("a", shape=(2,), dtype="u1", dimension_names=["i"])
    zarrkit.consolidate_metadata(tmp_path / "ours")
    member = json.loads((tmp_path / "ours" / "zarr.json").read_text())["consolidated_metadata"]
    assert member["kind"] == "inline" and set(member["metadata"]) == {"g", "g/a"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = zarr.open_consolidated(str(tmp_path / "ours"))
        assert theirs["g/a"].metadata.dimension_names == ("i",)


def test_consolidate_refuses_arrays():
    store = MemoryStore()
    zarrkit.create(store, shape=(1,), zarr_format=2)
    with pytest.raises(zarrkit.NodeTypeError):
        zarrkit.consolidate_metadata(store)


# -- the separator guard ------------------------------------------------------------------------


@pytest.mark.parametrize("declared, actual", [(None, "/"), (".", "/"), ("/", ".")])
def test_wrong_separator_is_an_error_not_fill_values(tmp_path, declared, actual):
    data = np.arange(12, dtype="<i4").reshape(4, 3)
    a = zarrkit.create(tmp_path, shape=(4, 3), chunks=(2, 2), dtype="<i4", zarr_format=2,
                       compressor=None, dimension_separator=actual)
    a[...] = data
    doc = json.loads((tmp_path / ".zarray").read_text())
    if declared is None:
        del doc["dimension_separator"]  # as zarr-python 2's NestedDirectoryStore wrote it
    else:
        doc["dimension_separator"] = declared
    (tmp_path / ".zarray").write_text(json.dumps(doc))
    with pytest.raises(zarrkit.MetadataError, match="dimension_separator"):
        zarrkit.open(tmp_path, mode="r")[...]


def test_separator_guard_costs_nothing_once_a_chunk_was_found():
    store = CallCountingStore(MemoryStore())
    a = zarrkit.create(store, shape=(4, 4), chunks=(2, 2), dtype="u1", zarr_format=2)
    a[:2, :2] = 1  # chunk 0.0 only
    b = zarrkit.open(store, mode="r")
    assert_same(b[:2, :2], np.ones((2, 2), "u1"))
    store.requests.clear()
    assert_same(b[2:, 2:], np.zeros((2, 2), "u1"))  # missing chunk: no probe any more
    assert store.requests == [["1.1"]]


# -- data types only NumPy can check ------------------------------------------------------------


def test_nested_structured_with_subarrays_matches_numpy_bytes(tmp_path):
    descr = [["id", ">u2"], ["pos", [["x", "<f4"], ["y", ">f8", [2]]]], ["tag", "|S3"]]
    dtype = np.dtype([("id", ">u2"), ("pos", [("x", "<f4"), ("y", ">f8", (2,))]),
                      ("tag", "S3")])
    values = np.zeros(5, dtype)
    values["id"] = np.arange(5)
    values["pos"]["x"] = np.arange(5) / 2
    values["pos"]["y"] = np.arange(10).reshape(5, 2)
    values["tag"] = [b"a", b"bb", b"ccc", b"", b"e"]
    (tmp_path / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [5], "chunks": [3], "dtype": descr, "compressor": None,
        "fill_value": None, "order": "C", "filters": None}))
    (tmp_path / "0").write_bytes(values[:3].tobytes())
    last = np.zeros(3, dtype)  # np.concatenate would make the fields native-endian
    last[:2] = values[3:]
    (tmp_path / "1").write_bytes(last.tobytes())
    a = zarrkit.open(tmp_path, mode="r+")
    assert_same(a[...], values)
    a[...] = a[...]
    assert (tmp_path / "0").read_bytes() == values[:3].tobytes()


def test_variable_length_strings_in_groups(tmp_path):
    g = zarrkit.group(tmp_path, zarr_format=2)
    s = g.create_array("names", shape=(4,), chunks=(3,), dtype=str)
    s[...] = ["α", "", "long " * 10, "z"]
    s[1] = "b"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert zarr.open_array(str(tmp_path / "names"), mode="r")[...].tolist() == \
            ["α", "b", "long " * 10, "z"]
    assert zarrkit.open(tmp_path / "names", mode="r")[2:].tolist() == ["long " * 10, "z"]

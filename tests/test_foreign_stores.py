"""Other libraries' stores given to zarrkit: dicts and other mappings, fsspec maps (kerchunk's
reference maps too), and zarr-python 3's store objects, with zarr-python reading the same."""

import json
import pickle
import types
import warnings

import fsspec
import numpy as np
import pytest
import zarr

import zarrkit
from zarrkit.kvstore import FileStore
from zarrkit.kvstore.foreign import FsspecStore, MappingStore


def _round_trip(store):
    """Write a sharded array and a group through `store`; read back, also after pickling."""
    root = zarrkit.open_group(store, mode="w")
    a = root.create_array("a", shape=(10,), chunks=(2,), shards=(4,), dtype="i2")
    a[...] = np.arange(10)
    root.attrs["made"] = "here"
    again = zarrkit.open_group(store, mode="r")
    assert again["a"][3:7].tolist() == [3, 4, 5, 6] and again.attrs["made"] == "here"
    assert pickle.loads(pickle.dumps(again["a"]))[...].tolist() == list(range(10))
    return a


def test_a_dict_is_a_store():
    d = {}
    a = _round_trip(d)
    assert isinstance(a.store, MappingStore)
    assert {"zarr.json", "a/zarr.json", "a/c/0", "a/c/2"} <= set(d)
    assert isinstance(d["a/zarr.json"], bytes)
    del a.store.mapping["a/c/0"]  # the store is the dict itself
    assert zarrkit.open(d, path="a", mode="r")[:4].tolist() == [0, 0, 0, 0]


def test_a_read_only_mapping_is_read_only():
    d = {}
    zarrkit.save_array(d, np.arange(3))
    frozen = types.MappingProxyType(d)
    assert zarrkit.open(frozen, mode="r")[...].tolist() == [0, 1, 2]
    a = zarrkit.open(frozen)
    assert a.read_only
    with pytest.raises(zarrkit.ReadOnlyError):
        a[0] = 5


def test_spec_dicts_stay_specs(tmp_path):
    g = zarrkit.open_group({"driver": "file", "path": str(tmp_path / "s.zarr")}, mode="w")
    assert g.store.driver == "file"
    with pytest.raises(zarrkit.SpecError, match="no 'driver'"):
        zarrkit.open_group({"path": str(tmp_path)})  # not bytes: a spec missing its driver
    with pytest.raises(zarrkit.SpecError, match="no 'driver'"):
        zarrkit.open_group({1: b"x"})  # keys are text


def test_fsspec_maps(tmp_path):
    local = fsspec.get_mapper(f"file://{tmp_path}/m.zarr")
    a = _round_trip(local)
    assert isinstance(a.store, FileStore)  # local files: zarrkit's own store (atomic writes)
    at_a = fsspec.get_mapper(f"file://{tmp_path}/m.zarr/a")
    assert zarr.open_array(at_a, mode="r")[:].tolist() == list(range(10))
    mem = fsspec.get_mapper("memory://zarrkit-test/m.zarr")
    assert isinstance(_round_trip(mem).store, FsspecStore)
    assert zarr.open_group(mem, mode="r").attrs["made"] == "here"


def test_fsspec_groups_list_one_level(monkeypatch):
    """Members come from one `ls`, not from finding every chunk key below the group."""
    mem = fsspec.get_mapper("memory://zarrkit-listing/g.zarr")
    g = zarrkit.open_group(mem, mode="w")
    g.create_array("a", shape=(8,), chunks=(1,), dtype="u1")[...] = 1
    g.create_group("b").create_group("c")
    store = zarrkit.open_group(mem).store
    monkeypatch.setattr(store.fs, "find", lambda *a, **k: pytest.fail("listed recursively"))
    assert store.list_dir("") == (["zarr.json"], ["a", "b"])
    assert store.list_dir("a/") == (["zarr.json"], ["c"])
    assert store.list_dir("nothing/") == ([], [])
    assert sorted(zarrkit.open_group(mem, use_consolidated=False)) == ["a", "b"]


def test_kerchunk_style_references(tmp_path):
    """A virtual array: its chunks are byte ranges of one blob file, as kerchunk makes them."""
    src = zarrkit.create(str(tmp_path / "src.zarr"), shape=(6,), chunks=(2,), dtype="f4")
    src[...] = np.arange(6) * 1.5
    blob, refs, offset = bytearray(), {}, 0
    for i in range(3):
        raw = (tmp_path / "src.zarr" / "c" / str(i)).read_bytes()
        blob += b"junk" + raw
        refs[f"c/{i}"] = [str(tmp_path / "blob.bin"), offset + 4, len(raw)]
        offset += 4 + len(raw)
    (tmp_path / "blob.bin").write_bytes(bytes(blob))
    refs["zarr.json"] = (tmp_path / "src.zarr" / "zarr.json").read_text()
    mapper = fsspec.get_mapper("reference://", fo={"version": 1, "refs": refs})
    assert zarrkit.open(mapper, mode="r")[...].tolist() == [0, 1.5, 3, 4.5, 6, 7.5]


def test_zarr_python_store_objects(tmp_path):
    local = zarr.storage.LocalStore(str(tmp_path / "l.zarr"))
    a = _round_trip(local)
    assert a.store.driver == "file"
    assert zarr.open_array(local, path="a", mode="r")[:].tolist() == list(range(10))

    memory = zarr.storage.MemoryStore()
    z = zarr.create_array(memory, name="x", shape=(4,), chunks=(2,), dtype="f8")
    z[:] = [1, 2, 3, 4]
    assert zarrkit.open(memory, path="x", mode="r")[...].tolist() == [1, 2, 3, 4]
    _round_trip(memory)
    assert zarr.open_array(memory, path="a", mode="r")[:].tolist() == list(range(10))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        remote = zarr.storage.FsspecStore.from_url("memory://zarrkit-test/f.zarr")
    _round_trip(remote)
    assert zarr.open_array(remote, path="a", mode="r")[:].tolist() == list(range(10))

    frozen = zarr.storage.LocalStore(str(tmp_path / "l.zarr"), read_only=True)
    assert zarrkit.open(frozen, path="a").read_only


def test_obstore_local_stores(tmp_path):
    obstore = pytest.importorskip("obstore")
    local = obstore.store.LocalStore(str(tmp_path), mkdir=True)
    a = _round_trip(local)
    assert a.store.driver == "file"  # zarrkit's own: atomic writes, locks between processes
    assert zarr.open_array(zarr.storage.ObjectStore(local), path="a", mode="r")[:].tolist() == \
        list(range(10))
    with pytest.raises(zarrkit.SpecError, match="LocalStore without a prefix"):
        zarrkit.open(obstore.store.LocalStore())
    with pytest.raises(zarrkit.SpecError, match="obstore's MemoryStore"):
        zarrkit.open(obstore.store.MemoryStore())


def test_zarr_python_zip_store(tmp_path):
    path = tmp_path / "z.zip"
    zarrkit.save_array(str(path), np.arange(5))
    store = zarr.storage.ZipStore(str(path), mode="r")
    assert zarrkit.open(store, mode="r")[...].tolist() == [0, 1, 2, 3, 4]


def test_other_objects_are_refused():
    with pytest.raises(zarrkit.SpecError, match="cannot open a kvstore from object"):
        zarrkit.open(object())


def test_store_json_cannot_reopen_the_object():
    a = zarrkit.zeros({}, (2,))
    assert a.store.to_json() == {"driver": "mapping"}
    with pytest.raises(zarrkit.SpecError, match="another library's Python object"):
        zarrkit.open_group({"driver": "mapping"})
    assert json.dumps(a.spec().to_json())  # the array's spec is still JSON


def test_fsspec_failures_are_store_errors(tmp_path):
    where = tmp_path / "bad.zarr"
    mapper = FsspecStore(fsspec.filesystem("file"), str(where))  # calls the file system
    zarrkit.save_array(mapper, np.arange(4), chunks=(2,))
    (where / "c" / "0").unlink()
    (where / "c" / "0").mkdir()  # where a chunk file should be: neither read nor written
    (where / "c" / "0" / "x").write_bytes(b"")
    a = zarrkit.open(mapper)
    with pytest.raises(zarrkit.StoreError, match="cannot read 'c/0'"):
        a[...]
    with pytest.raises(zarrkit.StoreError, match="cannot write 'c/0'"):
        a[:2] = [7, 8]
    assert a[2:].tolist() == [2, 3]


def test_other_mappings_are_stores_as_they_are():
    """Any mapping that is not a dict (zarr-python 2's stores, shelves...) is a store: only a
    dict can be a spec, so only a dict's contents are looked at."""
    import collections

    class Counting(collections.UserDict):
        reads: list[str] = []

        def __getitem__(self, key):
            Counting.reads.append(key)
            return super().__getitem__(key)

    store = Counting()
    zarrkit.save_array(store, np.arange(3), chunks=(3,))
    Counting.reads = []
    assert zarrkit.open(store, mode="r")[...].tolist() == [0, 1, 2]
    assert sorted(Counting.reads) == ["c/0", "zarr.json"]  # nothing read to tell it apart

"""One-shot writes that replace a node (`save`, `array(overwrite=True)`, `g[name] = data`,
`save_group`) write the new node beside the old one and move it in only once complete: a
store failure part-way keeps the old node, and nothing of the new one is left behind."""

import os

import numpy as np
import pytest
import zarr
from _sources import BreaksLater

import zarrkit
from zarrkit.kvstore import FileStore, MemoryStore
from zarrkit.kvstore.foreign import MappingStore


def _failing_after(store, good):
    """Make `store` fail every chunk write after the first `good` ones (metadata still works)."""
    count = {"n": 0}
    replace = store.replace

    def one(key, value):
        count["n"] += 1
        if count["n"] > good:
            raise zarrkit.StoreError("disk full")
        replace(key, value)

    def many(keys, values):
        for key, value in zip(list(keys), values, strict=False):
            one(key, value)

    store.replace, store.replace_many = one, many


def _healed(store):
    del store.replace, store.replace_many


@pytest.fixture(params=["file", "memory", "mapping"])
def store(request, tmp_path):
    """A file store (directories renamed), a memory store (keys renamed), and a mapping (keys
    copied): the three ways a replacement is moved in."""
    if request.param == "file":
        return FileStore(str(tmp_path / "s.zarr"))
    return MemoryStore() if request.param == "memory" else MappingStore({})


def _keys(store):
    return sorted(store.list_prefix(""))


@pytest.mark.parametrize("path", ["", "a/b"])
def test_failed_save_keeps_the_old_array(store, path):
    old = np.arange(20, dtype="i4")
    zarrkit.save(store, old, path=path, chunks=(5,), attributes={"v": 1})
    before = _keys(store)
    _failing_after(store, good=2)
    with pytest.raises(zarrkit.StoreError, match="disk full"):
        zarrkit.save(store, np.ones(30, dtype="f8"), path=path, chunks=(5,))
    _healed(store)
    assert _keys(store) == before  # the old node whole, no staging left
    a = zarrkit.open(store, path=path, mode="r")
    assert a[...].tolist() == old.tolist() and a.attrs["v"] == 1
    new = zarrkit.save(store, np.ones(30, dtype="f8"), path=path, chunks=(5,))
    assert new[...].tolist() == [1.0] * 30
    assert zarrkit.open(store, path=path, mode="r").dtype == np.float64
    assert not any(".zarrkit-replacing-" in k for k in _keys(store))


def test_replacing_a_group_with_an_array_and_back(store):
    g = zarrkit.open_group(store, mode="w")
    g.create_group("sub").create_array("x", shape=(2,), dtype="u1")
    zarrkit.save(store, np.arange(3), path="sub")
    assert zarrkit.open(store, path="sub", mode="r")[...].tolist() == [0, 1, 2]
    assert not any(k.startswith("sub/x/") for k in _keys(store))
    zarrkit.save_group(store, path="sub", y=np.arange(2))
    assert list(zarrkit.open_group(store, path="sub")) == ["y"]


@pytest.mark.parametrize("replace", [
    lambda g: g.__setitem__("x", np.zeros((5, 5))),
    lambda g: g.create_array("x", data=np.zeros((5, 5)), overwrite=True),
    lambda g: g.create_dataset("x", data=np.zeros((5, 5)), chunks=(1, 5), overwrite=True),
])
def test_failed_member_replacement_keeps_the_member(store, replace):
    g = zarrkit.open_group(store, mode="w")
    g["x"] = np.arange(12).reshape(3, 4)
    _failing_after(store, good=0)
    with pytest.raises(zarrkit.StoreError):
        replace(g)
    _healed(store)
    assert g["x"][...].tolist() == np.arange(12).reshape(3, 4).tolist()
    assert list(g) == ["x"]


def test_failed_save_group_keeps_the_old_group(store):
    zarrkit.save_group(store, a=np.arange(3), b=np.ones(2))
    before = _keys(store)
    _failing_after(store, good=1)
    with pytest.raises(zarrkit.StoreError):
        zarrkit.save_group(store, c=np.arange(5), d=np.arange(6), e=np.arange(7))
    _healed(store)
    assert _keys(store) == before
    assert sorted(zarrkit.load(store)) == ["a", "b"]
    g = zarrkit.save_group(store, c=np.arange(5), nested__ok=np.arange(1))
    assert sorted(g) == ["c", "nested__ok"]


def test_file_store_replacement_at_the_root_reads_in_zarr(tmp_path):
    where = str(tmp_path / "r.zarr")
    zarrkit.save(where, np.arange(10), chunks=(4,))
    zarrkit.save(where, np.arange(6, dtype="u2") * 3, chunks=(2,))
    assert zarr.open_array(where, mode="r")[:].tolist() == [0, 3, 6, 9, 12, 15]
    leftovers = [n for n in os.listdir(where) if n.startswith(".zarrkit-replacing-")]
    assert leftovers == [] and sorted(os.listdir(os.path.join(where, "c"))) == ["0", "1", "2"]


def test_v2_replacement(tmp_path):
    where = str(tmp_path / "v2.zarr")
    g = zarrkit.open_group(where, mode="w", zarr_format=2)
    g["x"] = np.arange(4)
    g["x"] = np.arange(5) * 2
    z = zarr.open_group(where, mode="r", zarr_format=2)
    assert z["x"][:].tolist() == [0, 2, 4, 6, 8] and list(z) == ["x"]


@pytest.mark.parametrize("how", ["from_array", "copy"])
def test_failed_copy_with_replace_keeps_the_old_array(store, monkeypatch, how):
    from zarrkit import conversion

    monkeypatch.setattr(conversion, "SLAB_BYTES", 400)  # several slabs
    root = zarrkit.open_group(store, mode="w")
    root["x"] = np.arange(5)
    before = _keys(store)
    with pytest.raises(OSError, match="went away"):
        if how == "from_array":
            zarrkit.from_array(store, data=BreaksLater(), name="x", chunks=(100,),
                               overwrite=True)
        else:
            zarrkit.copy(BreaksLater(), root, name="x", if_exists="replace", chunks=(100,))
    assert _keys(store) == before and root["x"][...].tolist() == [0, 1, 2, 3, 4]
    zarrkit.from_array(store, data=np.arange(3), name="x", overwrite=True)
    assert root["x"][...].tolist() == [0, 1, 2]


def test_a_replacement_in_progress_is_no_member(store):
    from zarrkit import formats, storage

    g = zarrkit.open_group(store, mode="w")
    g["x"] = np.arange(2)
    storage.write_metadata(store, storage.STAGING + "0123", formats.new_group(3))
    assert list(g) == ["x"] and [k for k, _ in g.members()] == ["x"]


@pytest.mark.parametrize("path", ["", "x"])
def test_a_failed_replacement_names_the_node_not_its_staging_path(path):
    store = MemoryStore()
    zarrkit.array(np.arange(3), store=store, path=path)
    with pytest.raises(zarrkit.DataTypeError, match=rf"to array /{path} of data type int32") as e:
        zarrkit.array(np.array(["a", "b"]), store=store, path=path, dtype="int32",
                      overwrite=True)
    assert "replacing" not in str(e.value)
    np.testing.assert_array_equal(zarrkit.open_array(store, path=path)[:], np.arange(3))

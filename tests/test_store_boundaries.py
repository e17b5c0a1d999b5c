"""Store boundaries through the public API: no node name, path, key or URL reads or writes
outside the store root (`..`, absolute paths, backslashes, NUL, symbolic links leading out of a
file store, hostile zip member names); and read-only opens never write anything.

The stores' own tests (test_kvstore_file.py, test_kvstore_zip.py) check the key validation
itself; these check that every public entry point goes through it.
"""

from __future__ import annotations

import hashlib
import os
import zipfile

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import InvalidKeyError, ReadOnlyError, ZarrkitError
from zarrkit.kvstore.file import FileStore
from zarrkit.kvstore.memory import MemoryStore
from zarrkit.kvstore.zip import ZipStore

HOSTILE = ["..", "../x", "a/../../x", "a/..", "/..", "..\\x", "a\\..\\..\\x", "\\abs",
           "x\x00y", "C:\\x", "./x", "a//b", "\ud800"]


def _tree(path) -> dict[str, tuple[int, int, str]]:
    """Every file below `path` (hidden ones too): (size, mtime_ns, sha256)."""
    found = {}
    for top, dirs, files in os.walk(path):
        for name in files + dirs:
            full = os.path.join(top, name)
            st = os.lstat(full)
            digest = ""
            if os.path.isfile(full) and not os.path.islink(full):
                with open(full, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            found[os.path.relpath(full, path)] = (st.st_size, st.st_mtime_ns, digest)
    return found


@pytest.fixture(params=["memory", "file", "zip"])
def where(request, tmp_path):
    """A writable store holding a group with an array, and a directory beside it."""
    if request.param == "memory":
        store = MemoryStore()
    elif request.param == "file":
        store = FileStore(str(tmp_path / "root" / "data.zarr"))
    else:
        os.makedirs(tmp_path / "root")
        store = ZipStore(str(tmp_path / "root" / "data.zip"), mode="w")
    g = zarrkit.open_group(store, mode="w")
    g.create_array("arr", shape=(4,), dtype="uint8", chunks=(2,))[...] = 1
    yield store
    store.close()


# -- names and paths -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_node_names_and_paths_are_refused(where, tmp_path, name):
    before = sorted(os.listdir(tmp_path))
    g = zarrkit.open_group(where, mode="r+")
    attempts = [
        lambda: g.create_group(name),
        lambda: g.create_array(name, shape=(2,), dtype="uint8"),
        lambda: g[name],
        lambda: g.__delitem__(name),
        lambda: zarrkit.open(where, path=name, mode="a"),
        lambda: zarrkit.open(where, path=name, mode="r"),
        lambda: zarrkit.create(where, path=name, shape=(2,), dtype="uint8"),
        lambda: zarrkit.open_group(where, path=name, mode="w"),
        lambda: zarrkit.open_group(where, path="arr/" + name, mode="a"),
    ]
    for attempt in attempts:
        with pytest.raises(ZarrkitError):
            attempt()
    assert name not in g
    assert sorted(os.listdir(tmp_path)) == before  # nothing appeared beside the store
    assert set(g.keys()) == {"arr"}


@pytest.mark.parametrize("key", HOSTILE + ["", "/abs/key", ".zarrkit-locks/x"])
def test_hostile_keys_are_refused_by_every_store(where, key):
    if key == ".zarrkit-locks/x" and not isinstance(where, FileStore):
        pytest.skip("only the file store reserves its lock directory")
    for attempt in (lambda: where.get(key), lambda: where.set(key, b"x"),
                    lambda: where.delete(key), lambda: where.exists(key)):
        with pytest.raises(InvalidKeyError):
            attempt()
    with pytest.raises(InvalidKeyError):
        list(where.list_prefix(key + "/"))


@pytest.mark.parametrize("url", [
    "memory://name/../x", "memory://name/%2e%2e/x", "memory://a\\..\\b",
    "file:///tmp/x.zip|zip:../../etc", "file:///tmp/x.zip|zip:/abs", "file:///tmp/x%00y",
])
def test_hostile_urls_are_refused(url):
    with pytest.raises(ZarrkitError):
        zarrkit.open(url, mode="r")


# -- symbolic links in the file store ----------------------------------------------------------
@pytest.fixture
def linked(tmp_path):
    """A file store whose root holds links to an outside directory (holding a node) and to an
    outside file."""
    outside = tmp_path / "outside"
    zarrkit.open_group(str(outside), mode="w", attributes={"secret": 1})
    (outside / "c").mkdir()
    (outside / "c" / "0").write_bytes(b"\x07" * 2)
    root = tmp_path / "data.zarr"
    g = zarrkit.open_group(str(root), mode="w")
    g.create_array("arr", shape=(4,), dtype="uint8", chunks=(2,), compressors=None)
    os.symlink(outside, root / "out")
    (root / "arr" / "c").mkdir()
    os.symlink(outside / "c" / "0", root / "arr" / "c" / "1")  # a chunk that is a link out
    return root, outside


def test_symlinks_out_of_the_file_store_are_not_followed(linked):
    root, outside = linked
    before = _tree(outside)
    g = zarrkit.open_group(str(root), mode="r+")
    assert "out" not in g.keys()
    for attempt in (lambda: g["out"], lambda: zarrkit.open(str(root), path="out", mode="r"),
                    lambda: g.create_group("out/new"), lambda: g.__delitem__("out"),
                    lambda: g["out"].attrs.update(x=1),
                    lambda: zarrkit.open_group(str(root), path="out/deeper", mode="w")):
        with pytest.raises(ZarrkitError):
            attempt()
    a = g["arr"]
    with pytest.raises(InvalidKeyError, match="symbolic link"):
        a[2:4]  # the chunk stored as a link out of the root
    a[2:4] = 5  # replaces the link itself (inside the root), never what it points to
    assert not os.path.islink(root / "arr" / "c" / "1")
    np.testing.assert_array_equal(a[...], [0, 0, 5, 5])
    with pytest.raises(InvalidKeyError):
        list(FileStore(str(root)).list_prefix("out/"))
    zarrkit.open_group(str(root), mode="r+").store.delete_prefix("")
    assert _tree(outside) == before  # nothing outside was read into, changed or deleted


# -- zip member names -------------------------------------------------------------------------
def test_hostile_zip_members_are_never_keys(tmp_path):
    path = tmp_path / "crafted.zip"
    src = MemoryStore()
    zarrkit.create(src, shape=(4,), dtype="uint8", chunks=(2,), compressors=None)[...] = 9
    with zipfile.ZipFile(path, "w") as zf:
        for key in src.list_prefix(""):
            zf.writestr(key, bytes(src.get(key)))
        for name in ["../evil", "/abs/evil", "a/../../evil", "c\\..\\..\\evil", "C:/evil",
                     "c/../c/0", "./zarr.json", "c//1"]:
            zf.writestr(name, b"\xff" * 2)
    before = sorted(os.listdir(tmp_path))
    a = zarrkit.open_array(str(path), mode="r")
    np.testing.assert_array_equal(a[...], [9, 9, 9, 9])  # no hostile member was read as c/1
    store = a.store
    assert sorted(store.list_prefix("")) == ["c/0", "c/1", "zarr.json"]
    assert len(store.invalid_names) == 8
    for name in store.invalid_names:
        with pytest.raises(InvalidKeyError):
            store.get(name)
    store.close()
    assert sorted(os.listdir(tmp_path)) == before


# -- read-only opens ---------------------------------------------------------------------------
def _read_everything(where) -> None:
    g = zarrkit.open_group(where, mode="r")
    g.tree()
    str(g.attrs)
    for _, node in g.members():
        node.attrs.asdict()
        if isinstance(node, zarrkit.Array):
            str(node.info)
            node[...]
            node.oindex[[0, -1]]
            node.nchunks_initialized()


def _writes(node) -> list:
    """Every kind of write, each expected to be refused on a read-only node."""
    if isinstance(node, zarrkit.Array):
        return [lambda: node.__setitem__(Ellipsis, 1), lambda: node.attrs.update(x=1),
                lambda: node.attrs.__setitem__("x", 1), lambda: node.attrs.__delitem__("a"),
                lambda: node.resize(8), lambda: node.append(np.ones(2, "uint8")),
                lambda: node.oindex.__setitem__([0], 1)]
    return [lambda: node.create_group("new"), lambda: node.attrs.update(x=1),
            lambda: node.create_array("new", shape=(2,), dtype="uint8"),
            lambda: node.__delitem__("arr"), lambda: node.require_group("new")]


@pytest.mark.parametrize("kind", ["file", "zip"])
def test_read_only_open_writes_nothing_and_refuses_writes(tmp_path, kind):
    where = str(tmp_path / ("data.zarr" if kind == "file" else "data.zip"))
    g = zarrkit.open_group(where, mode="w", attributes={"a": 1})
    a = g.create_array("arr", shape=(6,), dtype="uint8", chunks=(2,), attributes={"a": 1})
    a[...] = 4
    g.create_group("sub")
    g.store.close()
    before = _tree(tmp_path)
    _read_everything(where)
    g = zarrkit.open_group(where, mode="r")
    for node, name in ((g, "/"), (g["arr"], "/arr"), (g["sub"], "/sub")):
        for write in _writes(node):
            with pytest.raises(ReadOnlyError, match=name):
                write()
    g.store.close()
    assert _tree(tmp_path) == before  # no lock files, no temp files, no rewritten archive


def test_read_only_memory_store_handle_refuses_writes():
    store = MemoryStore.named("boundaries-read-only")
    try:
        zarrkit.create(store, path="arr", shape=(4,), dtype="uint8", chunks=(2,),
                       attributes={"a": 1})[...] = 2
        before = {k: bytes(store.get(k)) for k in store.list_prefix("")}
        reader = zarrkit.open("memory://boundaries-read-only", mode="r", path="arr")
        assert reader.read_only and reader.store.read_only
        for write in _writes(reader):
            with pytest.raises(ReadOnlyError, match="/arr"):
                write()
        with pytest.raises(ReadOnlyError, match="arr/c/0"):
            reader.store.set("arr/c/0", b"x")
        assert {k: bytes(store.get(k)) for k in store.list_prefix("")} == before
    finally:
        MemoryStore.discard("boundaries-read-only")


def test_reading_in_append_mode_writes_nothing(tmp_path):
    """Opening an existing node with the default mode and only reading changes no file."""
    for name in ("a.zarr", "a.zip"):
        a = zarrkit.create(str(tmp_path / name), shape=(4,), dtype="uint8", chunks=(2,))
        a[...] = 1
        a.store.close()
    before = _tree(tmp_path)
    for name in ("a.zarr", "a.zip"):
        a = zarrkit.open(str(tmp_path / name))
        a[...]
        a.store.close()
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("kind", ["file", "memory", "zip"])
def test_names_with_a_colon_are_names_like_any_other(tmp_path, kind):
    """The core spec forbids only "", "/" in names, all-period names and the "__" prefix:
    "t:0" and "C:" are nodes (zarr-python makes them); only a zip archive, whose member names
    must not start with a drive letter, refuses "C:" and the like."""
    where = {"file": str(tmp_path / "c.zarr"), "memory": MemoryStore(),
             "zip": str(tmp_path / "c.zip")}[kind]
    g = zarrkit.open_group(where, mode="w")
    g.create_array("xy:1", shape=(2,), dtype="i1")[...] = 5
    if kind == "zip":
        for name in ("t:0", "C:"):
            with pytest.raises(InvalidKeyError, match="drive letter"):
                g.create_group(name)
        g.store.close()
        assert sorted(zarrkit.open_group(where, mode="r")) == ["xy:1"]
        return
    g.create_group("t:0").create_array("C:", shape=(1,), dtype="u1")
    assert sorted(g) == ["t:0", "xy:1"] and list(g.members(max_depth=None))
    assert g["t:0/C:"].shape == (1,) and g["xy:1"][...].tolist() == [5, 5]
    if kind == "file":
        import zarr

        assert sorted(zarr.open_group(where, mode="r").keys()) == ["t:0", "xy:1"]
        zarr.open_group(where, mode="a").create_array("z:2", shape=(1,), dtype="i1")
        assert sorted(zarrkit.open_group(where, mode="r")) == ["t:0", "xy:1", "z:2"]

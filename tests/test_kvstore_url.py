"""URL / path / spec parsing and `open_kvstore`."""

from __future__ import annotations

import pathlib

import pytest

from zarrkit.errors import SpecError
from zarrkit.kvstore import (
    FileStore,
    KvStoreDriver,
    MemoryStore,
    ZipStore,
    kvstore_spec,
    kvstore_spec_to_url,
    kvstore_to_url,
    normalize_kvstore_spec,
    open_kvstore,
    parse_kvstore_url,
    register_kvstore_driver,
)
from zarrkit.kvstore import url as url_module

PARSE_TABLE = [
    ("file:///abs/dir", {"driver": "file", "path": "/abs/dir"}),
    ("file:///abs/dir/", {"driver": "file", "path": "/abs/dir/"}),
    ("file:///my%20data/a%7Cb", {"driver": "file", "path": "/my data/a|b"}),
    ("file://localhost/abs", {"driver": "file", "path": "/abs"}),
    ("FILE:///abs", {"driver": "file", "path": "/abs"}),
    ("memory://", {"driver": "memory"}),
    ("memory://name", {"driver": "memory", "path": "name"}),
    ("memory://name/a/b/", {"driver": "memory", "path": "name/a/b/"}),
    ("file:///data/a.zip|zip:inner/path",
     {"driver": "zip", "path": "inner/path", "base": {"driver": "file", "path": "/data/a.zip"}}),
    ("file:///data/a.zip|zip:", {"driver": "zip", "base": {"driver": "file", "path": "/data/a.zip"}}),
    ("memory://m/x.zip|zip:p", {"driver": "zip", "path": "p",
                                "base": {"driver": "memory", "path": "m/x.zip"}}),
]


@pytest.mark.parametrize("url,spec", PARSE_TABLE, ids=[u for u, _ in PARSE_TABLE])
def test_parse(url, spec):
    assert parse_kvstore_url(url) == spec


TS_URLS = ["file:///abs/dir/", "file:///my%20data/x", "memory://", "memory://a/b",
           "file:///data/a.zip|zip:inner/path", "file:///data/a.zip|zip:"]


@pytest.mark.parametrize("url", TS_URLS)
def test_parse_matches_tensorstore(url):
    ts = pytest.importorskip("tensorstore")
    assert parse_kvstore_url(url) == ts.KvStore.Spec(url).to_json()


@pytest.mark.parametrize("url", ["file:///abs/dir/", "file:///my%20data/a%7Cb", "memory://",
                                 "memory://n/a", "file:///data/a.zip|zip:inner/path"])
def test_url_roundtrip(url):
    assert kvstore_spec_to_url(parse_kvstore_url(url)) == url


ERROR_TABLE = [
    ("nosuch://bucket/key", "unknown URL scheme 'nosuch'"),
    ("gopher://x", "'gopher'"),
    ("file://host/abs", "host"),
    ("file:/abs", "file://"),
    ("file:relative", "file://"),
    ("memory:name", "memory://"),
    ("file:///abs?x=1", "query"),
    ("file:///abs#frag", "fragment"),
    ("memory://a?x", "query"),
    ("zip:inner", "adapter"),
    ("zip://inner", "adapter"),
    ("file:///a.zip|zip://inner", "zip:"),
    ("file:///a|file:///b", "not an adapter"),
    ("file:///a|", "no scheme"),
    ("|zip:x", "no scheme"),
    ("file:///bad%ff", "percent"),
]


@pytest.mark.parametrize("url,message", ERROR_TABLE, ids=[u for u, _ in ERROR_TABLE])
def test_parse_errors(url, message):
    with pytest.raises(SpecError, match=message.replace("?", r"\?")):
        parse_kvstore_url(url)


SPEC_ERRORS = [
    ({"driver": "nope", "path": "/x"}, "'nope'"),
    ({"path": "/x"}, "driver"),
    ({"driver": "file", "path": "/x", "pth": 1}, "pth"),
    ({"driver": "file"}, "path"),
    ({"driver": "file", "path": 3}, "path"),
    ({"driver": "zip", "path": "a"}, "base"),
    ({"driver": "zip", "base": {"driver": "memory", "path": "m/x.zip"}}, "file"),
    ({"driver": "zip", "base": {"driver": "file", "path": "/dir/"}}, "file"),
    ({"driver": "memory", "path": "a/../b"}, "path"),
    ({"driver": "memory", "path": "a\\b"}, "path"),
]


@pytest.mark.parametrize("spec,message", SPEC_ERRORS, ids=[str(s) for s, _ in SPEC_ERRORS])
def test_spec_errors(spec, message):
    with pytest.raises(SpecError, match=message):
        open_kvstore(spec)


@pytest.mark.parametrize("where", [42, None, b"/bytes/path", ""])
def test_unusable_inputs(where):
    with pytest.raises(SpecError):
        open_kvstore(where)


# -- opening -------------------------------------------------------------------------------
def test_open_store_instance_passthrough():
    store = MemoryStore()
    assert open_kvstore(store) == (store, "")


@pytest.mark.parametrize("as_type", [str, pathlib.Path])
def test_open_local_directory(tmp_path, as_type):
    store, path = open_kvstore(as_type(tmp_path / "data.zarr"))
    assert isinstance(store, FileStore) and path == ""
    assert store.root == str(tmp_path / "data.zarr")
    assert not store.read_only


def test_open_file_url_and_spec(tmp_path):
    for where in (f"file://{tmp_path}/a%20b/", {"driver": "file", "path": f"{tmp_path}/a b/"}):
        store, path = open_kvstore(where)
        assert isinstance(store, FileStore) and store.root == f"{tmp_path}/a b" and path == ""
    store, _ = open_kvstore({"driver": "file", "path": str(tmp_path), "file_io_sync": True})
    assert store.fsync


def test_open_local_zip_path(tmp_path):
    with ZipStore(tmp_path / "x.zip", "w") as z:
        z.set("a/k", b"1")
    store, path = open_kvstore(str(tmp_path / "x.zip"), read_only=True)
    assert isinstance(store, ZipStore) and store.read_only and path == ""
    assert store.get("a/k") == b"1"
    store.close()
    (tmp_path / "dir.zip").mkdir()  # a directory that happens to end in .zip
    store, _ = open_kvstore(str(tmp_path / "dir.zip"))
    assert isinstance(store, FileStore)


def test_open_zip_pipeline_and_spec(tmp_path):
    with ZipStore(tmp_path / "x.zip", "w") as z:
        z.set("inner/g/k", b"1")
    for where in (f"file://{tmp_path}/x.zip|zip:inner/g/",
                  {"driver": "zip", "path": "inner/g/", "base": f"file://{tmp_path}/x.zip"},
                  {"driver": "zip", "path": "inner/g",
                   "base": {"driver": "file", "path": f"{tmp_path}/x.zip"}}):
        store, path = open_kvstore(where, mode="r")
        assert isinstance(store, ZipStore) and store.read_only and path == "inner/g"
        assert store.get(path + "/k") == b"1"
        store.close()


def test_open_zip_write_modes(tmp_path):
    url = f"file://{tmp_path}/new.zip|zip:"
    store, _ = open_kvstore(url)
    assert store.mode == "a"
    store.close()
    store, _ = open_kvstore(url, mode="w")
    assert store.mode == "w"
    store.close()
    # "w" for a node inside the archive must not wipe the rest of the archive
    store, path = open_kvstore(url + "inner/node", mode="w")
    assert store.mode == "a" and path == "inner/node"
    store.close()


def test_open_memory_url_shares_named_store():
    try:
        store, path = open_kvstore("memory://urltest/a/b/")
        assert isinstance(store, MemoryStore) and store.name == "urltest" and path == "a/b"
        store.set("a/b/k", b"v")
        again, _ = open_kvstore({"driver": "memory", "path": "urltest"}, read_only=True)
        assert again.get("a/b/k") == b"v" and again.read_only
        fresh, path = open_kvstore("memory://")
        assert fresh.name is None and path == "" and fresh.get("a/b/k") is None
    finally:
        MemoryStore.discard("urltest")


@pytest.mark.parametrize("kwargs,read_only", [({}, False), ({"read_only": True}, True),
                                              ({"mode": "r"}, True), ({"mode": "r+"}, False),
                                              ({"mode": "a"}, False), ({"mode": "w-"}, False)])
def test_modes(tmp_path, kwargs, read_only):
    store, _ = open_kvstore(str(tmp_path), **kwargs)
    assert store.read_only is read_only


@pytest.mark.parametrize("kwargs", [{"mode": "w", "read_only": True}, {"mode": "rw"}])
def test_bad_modes(tmp_path, kwargs):
    with pytest.raises(SpecError):
        open_kvstore(str(tmp_path), **kwargs)


# -- back to URLs and specs ----------------------------------------------------------------
def test_kvstore_to_url_and_spec(tmp_path):
    store = FileStore(tmp_path / "my data")
    assert kvstore_to_url(store) == f"file://{tmp_path}/my%20data/"
    assert kvstore_to_url(store, "a/b") == f"file://{tmp_path}/my%20data/a/b"
    assert kvstore_spec(store, "a/b/") == {"driver": "file", "path": f"{tmp_path}/my data/a/b"}
    named = MemoryStore.named("tourl")
    try:
        assert kvstore_to_url(named, "x") == "memory://tourl/x"
        again, path = open_kvstore(kvstore_to_url(named, "x"))
        assert again.name == "tourl" and path == "x"
    finally:
        MemoryStore.discard("tourl")
    with pytest.raises(SpecError, match="anonymous"):
        kvstore_to_url(MemoryStore())
    with ZipStore(tmp_path / "z.zip", "w") as z:
        assert kvstore_to_url(z, "g") == f"file://{tmp_path}/z.zip|zip:g"
        assert kvstore_spec(z) == {"driver": "zip",
                                   "base": {"driver": "file", "path": f"{tmp_path}/z.zip"}}


def test_reopen_from_url_roundtrip(tmp_path):
    store = FileStore(tmp_path / "d")
    store.set("g/k", b"1")
    again, path = open_kvstore(kvstore_to_url(store, "g"))
    assert path == "" and again.get("k") == b"1"  # the file driver roots the store at the path


def test_normalize_local_paths(tmp_path):
    assert normalize_kvstore_spec(str(tmp_path / "d")) == {"driver": "file",
                                                          "path": f"{tmp_path}/d/"}
    assert normalize_kvstore_spec(str(tmp_path / "x.zip")) == {
        "driver": "zip", "base": {"driver": "file", "path": f"{tmp_path}/x.zip"}}


def test_register_custom_driver(monkeypatch):
    monkeypatch.setattr(url_module, "_DRIVERS", dict(url_module._DRIVERS))
    backing = MemoryStore()

    def open_dummy(spec, options):
        return backing, spec.get("path", "").strip("/")

    register_kvstore_driver(KvStoreDriver(
        "dummy", open_dummy, from_url=lambda body, base, url: {"driver": "dummy",
                                                              "path": body[2:]},
        to_url=lambda spec: "dummy://" + spec["path"], members=frozenset({"path"})))
    assert open_kvstore("dummy://bucket/key") == (backing, "bucket/key")
    assert open_kvstore({"driver": "dummy", "path": "p/"}) == (backing, "p")
    assert kvstore_spec_to_url({"driver": "dummy", "path": "x"}) == "dummy://x"
    with pytest.raises(SpecError, match="already registered"):
        register_kvstore_driver(KvStoreDriver("dummy", open_dummy))


@pytest.mark.parametrize("as_type", [str, pathlib.Path])
@pytest.mark.parametrize("name", ["x.zip", "archive"])
def test_zip_spec_with_plain_path_base_to_url(tmp_path, as_type, name):
    # A plain path as `base` names the archive file itself, as when opening it.
    spec = {"driver": "zip", "base": as_type(tmp_path / name), "path": "g"}
    url = kvstore_spec_to_url(spec)
    assert url == f"file://{tmp_path}/{name}|zip:g"
    store, path = open_kvstore(url, mode="w")
    with store:
        assert store.path == str(tmp_path / name) and path == "g"


def test_relative_file_path_has_no_url():
    # TensorStore refuses too: "file://rel/x" would name a host "rel", not the relative path.
    for spec in ({"driver": "file", "path": "rel/x"},
                 {"driver": "zip", "base": {"driver": "file", "path": "rel/x.zip"}}):
        with pytest.raises(SpecError, match="relative"):
            kvstore_spec_to_url(spec)

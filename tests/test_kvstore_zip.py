"""ZipStore specifics: reopening, overwrite/delete compaction, hostile member names, integrity."""

from __future__ import annotations

import os
import threading
import zipfile

import pytest

from zarrkit.errors import (
    CorruptDataError,
    InvalidKeyError,
    NotSupportedError,
    ReadOnlyError,
    SpecError,
    StoreError,
)
from zarrkit.kvstore import ByteRange, ZipStore


@pytest.fixture
def path(tmp_path):
    return tmp_path / "store.zip"


def _names(path) -> list[str]:
    with zipfile.ZipFile(path) as zf:
        return zf.namelist()


def test_write_reopen_read(path):
    with ZipStore(path, "w") as store:
        store.set("zarr.json", b"{}")
        store.set("c/0/0", bytes(range(50)))
    assert _names(path) == ["zarr.json", "c/0/0"]
    with ZipStore(path) as store:
        assert store.read_only and store.mode == "r"
        assert store.get("zarr.json") == b"{}"
        assert store.get("c/0/0", ByteRange(10, 5)) == bytes(range(10, 15))
        assert store.get("c/0/0", ByteRange.suffix(3)) == bytes(range(47, 50))
        assert store.size("c/0/0") == 50
        assert store.list_dir("") == (["zarr.json"], ["c"])
        with pytest.raises(ReadOnlyError):
            store.set("x", b"1")
        with pytest.raises(ReadOnlyError):
            store.delete("zarr.json")


def test_append_mode_adds_to_existing_archive(path):
    with ZipStore(path, "w") as store:
        store.set("a", b"1")
    with ZipStore(path, "a") as store:
        assert store.get("a") == b"1"
        store.set("b", b"2")
    with ZipStore(path) as store:
        assert sorted(store.list_prefix("")) == ["a", "b"]


def test_append_mode_creates_missing_archive(path):
    with ZipStore(path, "a") as store:
        store.set("k", b"v")
    assert _names(path) == ["k"]


def test_overwrite_reads_latest_then_close_compacts(path):
    store = ZipStore(path, "a")
    store.set("a", b"old")
    store.set("b", b"keep")
    store.set("a", b"newer value")
    assert store.get("a") == b"newer value"
    assert store.size("a") == len(b"newer value")
    assert sorted(store.list_prefix("")) == ["a", "b"]
    store.close()
    assert sorted(_names(path)) == ["a", "b"]  # the superseded entry is gone
    with zipfile.ZipFile(path) as zf:
        assert zf.read("a") == b"newer value" and zf.testzip() is None


def test_delete_dropped_on_close(path):
    with ZipStore(path, "w") as store:
        store.set("a", b"1")
        store.set("b", b"2")
    with ZipStore(path, "a") as store:
        store.delete("a")
        assert store.get("a") is None and not store.exists("a")
        assert list(store.list_prefix("")) == ["b"]
    assert _names(path) == ["b"]


def test_append_mode_keeps_old_archive_until_close(path):
    with ZipStore(path, "w") as store:
        store.set("a", b"1")
    store = ZipStore(path, "a")
    store.set("b", b"2")
    assert _names(path) == ["a"]  # written to a copy: a crash here would lose nothing
    store.close()
    assert _names(path) == ["a", "b"]
    assert os.listdir(path.parent) == [path.name]


def test_compaction_is_atomic_on_failure(path, monkeypatch):
    with ZipStore(path, "w") as store:
        store.set("a", b"1")
    store = ZipStore(path, "a")
    store.set("a", b"2")
    monkeypatch.setattr(os, "replace", lambda *a, **k: (_ for _ in ()).throw(OSError("boom")))
    with pytest.raises(OSError, match="uncompacted archive is kept"):
        store.close()
    monkeypatch.undo()
    # the archive is untouched, and the changed (uncompacted) copy is kept beside it
    with zipfile.ZipFile(path) as zf:
        assert zf.read("a") == b"1"
    kept = [n for n in os.listdir(path.parent) if n != path.name]
    assert len(kept) == 1
    with zipfile.ZipFile(path.parent / kept[0]) as zf:
        assert zf.read("a") == b"2"


def test_write_mode_keeps_old_archive_until_close(path):
    with ZipStore(path, "w") as store:
        store.set("old", b"1")
    store = ZipStore(path, "w")
    store.set("new", b"2")
    assert _names(path) == ["old"]  # a crash here would lose nothing
    store.close()
    assert _names(path) == ["new"]
    assert os.listdir(path.parent) == [path.name]


def test_write_mode_overwrite_compacts(path):
    with ZipStore(path, "w") as store:
        store.set("k", b"1")
        store.set("k", b"2")
    assert _names(path) == ["k"]
    assert os.listdir(path.parent) == [path.name]


def test_no_duplicate_name_warning(path, recwarn):
    with ZipStore(path, "w") as store:
        store.set("k", b"1")
        store.set("k", b"2")
    assert not [w for w in recwarn if "Duplicate" in str(w.message)]


def test_hostile_member_names_are_not_keys(path):
    with zipfile.ZipFile(path, "w") as zf:
        for name in ["../evil", "/abs", "a\\b", "x/../../evil", "ok", "dir/", "dir/in", "a//b"]:
            zf.writestr(name, b"payload")
    with ZipStore(path) as store:
        assert sorted(store.list_prefix("")) == ["dir/in", "ok"]
        assert sorted(store.invalid_names) == sorted(
            ["../evil", "/abs", "a\\b", "x/../../evil", "a//b"])
        for name in ["../evil", "/abs", "a\\b", "x/../../evil"]:
            with pytest.raises(InvalidKeyError):
                store.get(name)
    # a rewrite leaves members it does not own alone
    with ZipStore(path, "a") as store:
        store.set("ok", b"changed")
    assert sorted(_names(path)) == sorted(
        ["../evil", "/abs", "a\\b", "x/../../evil", "ok", "dir/", "dir/in", "a//b"])


def test_duplicates_written_by_others_latest_wins(path):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("k", b"first")
        with pytest.warns(UserWarning):
            zf.writestr("k", b"second")
    with ZipStore(path) as store:
        assert store.get("k") == b"second"
        assert list(store.list_prefix("")) == ["k"]


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_compressed_entries(path, method):
    value = bytes(range(256)) * 64
    with ZipStore(path, "w", compression=method) as store:
        store.set("v", value)
        assert store.get("v", ByteRange(1000, 10)) == value[1000:1010]
    with zipfile.ZipFile(path) as zf:
        assert zf.getinfo("v").compress_type == method
        assert zf.getinfo("v").compress_size < len(value)
    with ZipStore(path) as store:
        assert store.get("v") == value
        assert store.get("v", ByteRange.suffix(5)) == value[-5:]
        assert store.get("v", ByteRange(len(value) + 1)) == b""


def test_corrupt_stored_entry_detected(path):
    with ZipStore(path, "w") as store:
        store.set("k", b"A" * 100)
    data = bytearray(path.read_bytes())
    at = data.index(b"A" * 100)
    data[at + 50] = ord("B")
    path.write_bytes(bytes(data))
    with ZipStore(path) as store:
        with pytest.raises(CorruptDataError, match="'k'"):
            store.get("k")
        assert store.get("k", ByteRange(0, 10)) == b"A" * 10  # partial reads cannot be checked


def test_not_a_zip_refused_and_untouched(path):
    path.write_bytes(b"precious data that is not a zip")
    with pytest.raises(CorruptDataError):
        ZipStore(path, "a")
    with pytest.raises(CorruptDataError):
        ZipStore(path, "r")
    assert path.read_bytes() == b"precious data that is not a zip"


def test_missing_archive_read_only(path):
    with pytest.raises(StoreError):
        ZipStore(path)
    assert not path.exists()


@pytest.mark.parametrize("kwargs", [{"mode": "x"}, {"mode": "r", "read_only": False},
                                    {"mode": "w", "read_only": True}])
def test_bad_mode_combinations(path, kwargs):
    with pytest.raises(SpecError):
        ZipStore(path, **kwargs)


def test_closed_store_refuses_operations(path):
    store = ZipStore(path, "w")
    store.set("a", b"1")
    store.close()
    store.close()  # idempotent
    for op in (lambda: store.get("a"), lambda: store.set("b", b"2"), lambda: store.exists("a"),
               lambda: list(store.list_prefix(""))):
        with pytest.raises(StoreError, match="closed"):
            op()


def test_concurrent_readers_and_writer(path):
    store = ZipStore(path, "a")
    for i in range(50):
        store.set(f"k/{i}", bytes([i]) * 1000)
    errors = []

    def reader() -> None:
        for _ in range(20):
            for i in range(50):
                if store.get(f"k/{i}") != bytes([i]) * 1000:
                    errors.append(i)

    def writer() -> None:
        for i in range(50, 150):
            store.set(f"k/{i}", bytes([i]) * 1000)

    threads = [threading.Thread(target=reader) for _ in range(3)] + [threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.close()
    assert errors == []
    with ZipStore(path) as store:
        assert len(list(store.list_prefix("k/"))) == 150


def test_to_json(path):
    with ZipStore(path, "w") as store:
        assert store.to_json() == {"driver": "zip", "base": {"driver": "file", "path": str(path)}}


def test_tensorstore_reads_our_archive(path):
    ts = pytest.importorskip("tensorstore")
    with ZipStore(path, "w") as store:
        store.set("g/zarr.json", b'{"zarr_format": 3}')
        store.set("g/c/0", b"\x01\x02\x03")
        store.set("g/c/0", b"\x04\x05")  # superseded entry must not confuse other readers
    kv = ts.KvStore.open(f"file://{path}|zip:").result()
    assert kv.read("g/c/0").result().value == b"\x04\x05"
    assert sorted(kv.list().result()) == [b"g/c/0", b"g/zarr.json"]


def test_foreign_duplicates_kept_unless_we_change_something(path):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("k", b"first")
        with pytest.warns(UserWarning):
            zf.writestr("k", b"second")
    inode = os.stat(path).st_ino
    with ZipStore(path, "a") as store:
        assert store.get("k") == b"second"
    assert os.stat(path).st_ino == inode and _names(path) == ["k", "k"]  # untouched
    with ZipStore(path, "a") as store:
        store.set("j", b"new")
        store.set("j", b"newer")
    assert sorted(_names(path)) == ["j", "k"]
    with zipfile.ZipFile(path) as zf:
        assert zf.read("k") == b"second" and zf.read("j") == b"newer"


def test_unclosed_writable_store_warns(path):
    store = ZipStore(path, "w")
    store.set("k", b"v")
    with pytest.warns(ResourceWarning, match="never closed"):
        store.__del__()
    store.close()


def test_unsupported_compression_method_is_a_store_error(path):
    # Deflate64 (method 9, e.g. Windows Explorer's large archives) is beyond zipfile.
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("k", b"value" * 100)
    data = bytearray(path.read_bytes())
    for signature, at in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        start = data.index(signature) + at
        data[start:start + 2] = (9).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    with ZipStore(path) as store:
        assert store.size("k") == 500
        for byte_range in (None, ByteRange(1, 2)):
            with pytest.raises(NotSupportedError, match=r"'k'.*method 9"):
                store.get("k", byte_range)


def test_directory_refused_at_open_in_write_mode(tmp_path):
    folder = tmp_path / "d.zip"
    folder.mkdir()
    with pytest.raises(StoreError, match="directory"):
        ZipStore(folder, "w")
    assert os.listdir(tmp_path) == ["d.zip"]  # no temp archive left behind


def test_key_too_long_for_zip_is_invalid(path):
    with ZipStore(path, "w") as store:
        with pytest.raises(InvalidKeyError, match="65535"):
            store.set("é" * 40000, b"x")  # 80000 bytes in UTF-8: beyond a zip name's length field
        store.set("k", b"v")
    assert _names(path) == ["k"]

"""Local stores under failure and odd inputs: failed writes keep the old value and leave no temp
file, errors are zarrkit errors naming the key, and byte ranges agree between stores."""

from __future__ import annotations

import itertools
import os
import socket

import pytest
from _forked import in_child

from zarrkit.errors import InvalidKeyError, StoreError
from zarrkit.kvstore import ByteRange, FileStore, MemoryStore


def _temps(path) -> list[str]:
    return [name for _, _, files in os.walk(path) for name in files if name.endswith(".partial")]


# -- temp file names -------------------------------------------------------------------------
@pytest.mark.parametrize("key", [".a.0123456789abcdef.partial", "x/.zarr.json.fedcba9876543210.partial",
                                 "x/.c.0123456789abcdef.partial/0"])
def test_keys_shaped_like_temp_files_are_refused(open_dir, key):
    # Such a key was stored, hidden from listings and deleted by remove_temp_files: data lost.
    store = FileStore(open_dir)
    for op in (lambda: store.set(key, b"v"), lambda: store.get(key), lambda: store.delete(key)):
        with pytest.raises(InvalidKeyError, match="temp files"):
            op()
    assert os.listdir(open_dir) == []


@pytest.mark.parametrize("key", [".a.partial", "a.0123456789abcdef.partial", ".a.0123456789ABCDEF.partial",
                                 ".a.0123456789abcdef.partial.1"])
def test_keys_merely_resembling_temp_files_are_stored(open_dir, key):
    store = FileStore(open_dir)
    store.set(key, b"v")
    assert store.get(key) == b"v"
    assert list(store.list_prefix("")) == [key]
    assert store.remove_temp_files(older_than=0) == []


@pytest.mark.parametrize("name", ["\U0001F600" * 62, "é" * 127, "中" * 85, "a" * 255])
def test_long_key_segments_of_any_script_write(open_dir, name):
    # 62 emoji are 248 bytes: a legal name, but its temp name took 64 characters = 256 bytes.
    store = FileStore(open_dir)
    assert len(name.encode()) <= 255
    store.set("d/" + name, b"old")
    store.set("d/" + name, b"new")
    assert store.get("d/" + name) == b"new"
    assert list(store.list_prefix("d/")) == ["d/" + name]
    assert _temps(open_dir) == []


# -- errors name the key and the cause -------------------------------------------------------
def test_listing_an_unreadable_directory_is_a_store_error(open_dir):
    store = FileStore(open_dir)
    store.set("a/b/c", b"1")
    store.set("top", b"2")
    os.chmod(os.path.join(open_dir, "a"), 0o300)  # writable and searchable, not readable
    for op in (lambda: list(store.list_prefix("")), lambda: store.list_dir("a/"),
               lambda: store.delete_prefix("a/")):
        kind, message = in_child(op, as_nobody=True)
        assert kind == "StoreError" and "'a/'" in message and "Permission denied" in message
    os.chmod(os.path.join(open_dir, "a"), 0o755)
    assert sorted(store.list_prefix("")) == ["a/b/c", "top"]


def test_remove_temp_files_reports_directories_it_cannot_read(open_dir):
    # It returned [] and left the temp files of unreadable directories behind.
    store = FileStore(open_dir)
    store.set("a/b", b"1")
    os.chmod(os.path.join(open_dir, "a"), 0o300)
    kind, message = in_child(lambda: store.remove_temp_files(older_than=0), as_nobody=True)
    assert kind == "StoreError" and "Permission denied" in message and "'a'" in message
    os.chmod(os.path.join(open_dir, "a"), 0o755)
    assert store.remove_temp_files(older_than=0) == []  # readable again: nothing to report


def test_lock_errors_name_the_key(open_dir):
    store = FileStore(open_dir)
    with open(os.path.join(open_dir, ".zarrkit-locks"), "w"):
        pass  # the lock directory cannot be made
    for lock in (store.lock, store.lock_shared):
        with pytest.raises(StoreError, match="cannot lock 'a/c/0'"):
            with lock("a/c/0"):
                pass


def test_unreadable_value_is_a_store_error_naming_the_key(open_dir):
    store = FileStore(open_dir)
    store.set("a/secret", b"s")
    os.chmod(os.path.join(open_dir, "a", "secret"), 0)
    for op in (lambda: store.get("a/secret"), lambda: store.get_many([("a/secret", None)] * 2)):
        kind, message = in_child(op, as_nobody=True)
        assert kind in ("StoreError", "PermissionDeniedError") and "'a/secret'" in message


def test_socket_is_not_a_value(open_dir, strategy, monkeypatch):
    # A FIFO reads as missing; a socket raised StoreError (ENXIO) though listings hide it.
    store = FileStore(open_dir)
    monkeypatch.chdir(open_dir)  # a short path for bind()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("sock")
        assert store.get("sock") is None
        assert store.exists("sock") is False
        assert store.size("sock") is None
        assert store.get_with_generation("sock") == (None, None)
        assert list(store.list_prefix("")) == []


# -- failed writes keep the old value, leave no temp file, and say why ----------------------
def test_write_over_the_file_size_limit_keeps_the_old_value(open_dir):
    store = FileStore(open_dir)
    store.set("a/k", b"old" * 10)
    os.chmod(os.path.join(open_dir, "a"), 0o777)
    kind, message = in_child(lambda: store.set("a/k", b"n" * 4096), fsize_limit=1000, as_nobody=True)
    assert kind == "StoreError" and "'a/k'" in message and "File too large" in message
    assert store.get("a/k") == b"old" * 10
    assert _temps(open_dir) == []


def test_write_into_a_read_only_directory_keeps_the_old_value(open_dir):
    store = FileStore(open_dir)
    store.set("a/k", b"old")
    os.chmod(os.path.join(open_dir, "a"), 0o555)
    for op in (lambda: store.set("a/k", b"new"), lambda: store.delete("a/k"),
               lambda: store.set("a/new/k", b"new")):
        kind, message = in_child(op, as_nobody=True)
        assert kind == "StoreError" and "'a/" in message and "Permission denied" in message
    assert store.get("a/k") == b"old"
    assert _temps(open_dir) == []


# -- byte ranges: every form, every read path, both stores -------------------------------------
RANGES = [None, ByteRange(0), ByteRange(5), ByteRange(0, 0), ByteRange(5, 0), ByteRange(5, 10),
          ByteRange(95, 10), ByteRange(200), ByteRange(200, 5), ByteRange.suffix(0),
          ByteRange.suffix(3), ByteRange.suffix(500), ByteRange(99, 1), ByteRange(0, 10**6)]


def _expected(value, rng):
    return value if rng is None else bytes(rng.slice_of(value))


@pytest.mark.parametrize("value", [b"", bytes(range(100))], ids=["empty", "100"])
@pytest.mark.parametrize("kind", ["file", "memory"])
def test_every_byte_range_through_every_read(tmp_path, kind, value):
    store = FileStore(tmp_path) if kind == "file" else MemoryStore()
    store.set("k", value)
    generation = store.get_with_generation("k")[1]
    for rng in RANGES:
        want = _expected(value, rng)
        assert bytes(store.get("k", rng)) == want
        assert bytes(store.get_with_generation("k", rng)[0]) == want
    for rngs in itertools.combinations([r for r in RANGES if r is not None], 3):
        want = [_expected(value, r) for r in rngs]
        requests = [("k", r) for r in rngs]
        assert [bytes(v) for v in store.get_many(requests)] == want
        assert [bytes(v) for v in store.get_many_transient(requests)] == want
        for transient in (False, True):
            assert [bytes(v) for v in store.get_ranges_if("k", rngs, generation, transient)] == want


# -- memory store values are immutable -----------------------------------------------------------
def test_memory_values_cannot_be_changed_through_either_end():
    store = MemoryStore.named("safety-immutable")
    try:
        buffer = bytearray(b"abc")
        store.set("k", buffer)
        buffer[0] = 0
        got = store.get("k")
        with pytest.raises(TypeError):
            memoryview(got)[0] = 0  # read-only
        assert MemoryStore.named("safety-immutable", read_only=True).get("k") == b"abc"
    finally:
        MemoryStore.discard("safety-immutable")

"""Inputs users get wrong, and states they reach: store values that are not bytes, unreadable
files (exists/size), forks while a key lock is held, codec lists given as one string, and
time fill values in `Array.info`. Each is a zarrkit error naming what is wrong, or just works."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time

import numpy as np
import pytest
from _forked import in_child

import zarrkit
from zarrkit.describe import array_summary
from zarrkit.errors import CodecError, StoreError
from zarrkit.kvstore import FileStore, MemoryStore, ZipStore


# -- 1. values that are not bytes-like -----------------------------------------------------------
def _stores(path):
    return [FileStore(path), MemoryStore(), ZipStore(os.path.join(path, "s.zip"), mode="w")]


@pytest.mark.parametrize("value", ["text", None, 5, 1.5, [1, 2], np.array(["a"], dtype=object),
                                   memoryview(np.zeros(2, dtype=[("a", "O")]))])
def test_store_values_that_are_not_bytes_are_refused_naming_the_key(open_dir, value):
    # A plain TypeError named neither the key nor the value (or stored an object array's
    # pointers); the value's type is named too.
    for store in _stores(open_dir):
        with pytest.raises(StoreError, match=r"'a/b'.*bytes-like") as info:
            store.set("a/b", value)
        assert isinstance(info.value, TypeError)  # generic handlers keep working
        what = "Python objects" if isinstance(value, np.ndarray | memoryview) \
            else type(value).__name__
        assert what in str(info.value)
        with pytest.raises(StoreError, match="'a/c'"):
            store.set_many([("a/c", value)])
        assert store.get("a/b") is None
        store.close()


@pytest.mark.parametrize("value", [b"ab", bytearray(b"ab"), memoryview(b"ab"),
                                   np.frombuffer(b"ab", np.uint8), np.array([1.5])])
def test_bytes_like_values_are_stored(open_dir, value):
    for store in _stores(open_dir):
        store.set("k", value)
        assert bytes(store.get("k")) == bytes(memoryview(value))
        store.close()


# -- 2. exists/size of a file the user cannot read ----------------------------------------------
def test_exists_and_size_do_not_need_read_permission(open_dir):
    # They opened the file for reading: StoreError for a value that plainly exists.
    store = FileStore(open_dir)
    store.set("a/secret", b"12345")
    os.chmod(os.path.join(open_dir, "a", "secret"), 0)
    reader = FileStore(open_dir, read_only=True)
    assert in_child(lambda: (reader.exists("a/secret"), reader.size("a/secret"),
                              reader.exists("a/other"), reader.size("a/other")),
                     as_nobody=True) == (True, 5, False, None)
    kind, message = in_child(lambda: reader.get("a/secret"), as_nobody=True)
    assert kind == "StoreError" and "'a/secret'" in message and "Permission denied" in message


def test_exists_still_refuses_a_link_out_of_the_root(open_dir):
    outside = tempfile.mkdtemp(prefix="zarrkit-outside-")
    try:
        with open(os.path.join(outside, "v"), "wb") as f:
            f.write(b"x")
        os.symlink(os.path.join(outside, "v"), os.path.join(open_dir, "link"))
        store = FileStore(open_dir)
        for op in (store.exists, store.size):
            with pytest.raises(StoreError, match="'link'.*outside"):
                op("link")
    finally:
        shutil.rmtree(outside)


# -- 3. forking while a key lock is held --------------------------------------------------------
def _hold_in_thread(lock):
    """Take `lock` in another thread, which keeps it until the returned event is set."""
    taken, done = threading.Event(), threading.Event()

    def hold():
        with lock:
            taken.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    assert taken.wait(10)
    return thread, done


@pytest.mark.parametrize("shared", [False, True])
def test_a_forked_child_can_take_a_key_lock_another_thread_held(shared):
    # The child inherited a table showing the key as held by a thread it does not have: it
    # blocked forever.
    store = MemoryStore()
    thread, done = _hold_in_thread(store.lock_shared("k") if shared else store.lock("k"))
    try:
        def child():
            with store.lock("k"):
                return "ok"
        assert in_child(child) == "ok"
    finally:
        done.set()
        thread.join()


@pytest.mark.parametrize("shared", [False, True])
def test_a_forked_child_can_take_a_file_lock_once_the_parent_releases(open_dir, shared):
    # The file store's lock also excludes the parent process, until it releases; then the
    # child must get it. It waited forever on its copy of the thread-lock table, and its copy
    # of a shared lock's descriptor kept that lock alive after the parent released it.
    store = FileStore(open_dir)
    thread, done = _hold_in_thread(store.lock_shared("k") if shared else store.lock("k"))
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - reports through its exit status
            signal.alarm(20)
            try:
                with store.lock("k"):
                    pass
            finally:
                os._exit(0)
        assert not _exited_within(pid, 0.3)  # the parent's process lock excludes it
        done.set()
        thread.join()
        _, status = os.waitpid(pid, 0)
        assert status == 0, f"the child blocked (status {status:#x})"
    finally:
        done.set()
        thread.join()


def test_a_child_leaving_a_lock_the_forking_thread_held_keeps_the_parents(open_dir):
    # The child shares the parent's open file description: unlocking through it released the
    # parent's lock, and a second child then took the key while the parent held it.
    store = FileStore(open_dir)
    with store.lock("k") as held:
        assert in_child(lambda: held.__exit__(None, None, None) or "ok") == "ok"
        pid = os.fork()
        if pid == 0:  # pragma: no cover - reports through its exit status
            signal.alarm(20)
            with store.lock("k"):
                os._exit(0)
        assert not _exited_within(pid, 0.5)  # still waiting for the parent's lock
    _, status = os.waitpid(pid, 0)
    assert status == 0


def _exited_within(pid, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.waitpid(pid, os.WNOHANG)[0]:
            return True
        time.sleep(0.02)
    return False


# -- 4. codec lists given as a bare string ------------------------------------------------------
@pytest.mark.parametrize("keyword", ["compressors", "filters", "codecs"])
def test_a_codec_list_given_as_a_string_is_refused_with_the_fix(keyword):
    # "zstd" was split into letters: "unknown codec 'z'".
    with pytest.raises(CodecError, match=rf"{keyword}: expected a list of codecs.*"
                                         rf"{keyword}=\['zstd'\]"):
        zarrkit.create(shape=(4,), dtype="i4", chunks=(2,), **{keyword: "zstd"})


def test_index_codecs_given_as_a_string_is_refused():
    with pytest.raises(CodecError, match="index_codecs: expected a list"):
        zarrkit.create(shape=(4,), dtype="i4", shards=(4,), chunks=(2,), index_codecs="crc32c")


@pytest.mark.parametrize("value", [5, b"zstd", {"name": "zstd"}])
def test_other_non_lists_of_codecs_are_refused(value):
    with pytest.raises(CodecError, match="filters: expected a list of codecs"):
        zarrkit.create(shape=(4,), dtype="i4", chunks=(2,), filters=value)


def test_v2_filters_given_as_a_string_are_refused():
    with pytest.raises(CodecError, match=r"filters: expected a list of codecs.*filters=\["):
        zarrkit.create(shape=(4,), dtype="i4", zarr_format=2, filters="delta")


def test_codec_lists_and_single_codecs_still_work():
    a = zarrkit.create(shape=(4,), dtype="i4", chunks=(2,), compressors=["zstd"],
                       serializer="bytes")
    assert [c["name"] for c in a.metadata["codecs"]] == ["bytes", "zstd"]
    b = zarrkit.create(shape=(4,), dtype="i4", chunks=(2,), compressors={"name": "gzip", "configuration": {"level": 1}})
    assert [c["name"] for c in b.metadata["codecs"]] == ["bytes", "gzip"]


# -- 5. time fill values in Array.info ----------------------------------------------------------
@pytest.mark.parametrize("dtype, fill, shown", [
    ("M8[s]", np.datetime64("NaT", "s"), "NaT"),
    ("M8[s]", np.datetime64("2000-01-01T00:00:00", "s"), "2000-01-01T00:00:00"),
    ("m8[s]", np.timedelta64(5, "s"), "5 seconds"),
    ("m8[s]", np.timedelta64("NaT", "s"), "NaT"),
])
def test_info_shows_time_fill_values_readably(dtype, fill, shown):
    # NaT showed as None, a datetime as datetime.datetime(2000, 1, 1, 0, 0) (v2 only has them).
    a = zarrkit.create(shape=(2,), dtype=dtype, chunks=(2,), fill_value=fill, zarr_format=2)
    row = dict(a.info.rows())["Fill value"]
    assert row == shown
    assert row == array_summary(a)["fill_value"]  # as `zarrkit info --json` shows it


def test_info_shows_a_record_fill_value_field_by_field():
    a = zarrkit.create(shape=(2,), dtype=[("n", "i4"), ("t", "M8[s]")], chunks=(2,),
                       zarr_format=2)
    assert dict(a.info.rows())["Fill value"] == "(0, 1970-01-01T00:00:00)"

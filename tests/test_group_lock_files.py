"""Groups keep no lock files (docs/concurrency.md, "Groups keep no lock files"): the lock of a
group's document is a file of its own that exists only while held, still excluding other
processes (also ones that opened the hierarchy at another root); keys below a group that belong
to no array yet take no file; a group replaced by an array is locked as the array. zarr-python
then lists every group zarrkit wrote without a warning."""

from __future__ import annotations

import os
import threading
import warnings

import numpy as np
import pytest
from test_lock_homes import _other_process_waits, _waits_in_a_thread, needs_fork

import zarrkit
from zarrkit.errors import InvalidKeyError
from zarrkit.kvstore.file import LOCK_DIR, LOCK_FILE_PREFIX, FileStore


def _group(tmp_path):
    root = tmp_path / "t.zarr"
    g = zarrkit.open_group(root, mode="w")
    g.create_group("g").create_array("a", shape=(4,), chunks=(2,), dtype="i4")
    return root


def _lock_files(where) -> list[str]:
    return sorted(n for n in os.listdir(where) if n.startswith(LOCK_FILE_PREFIX))


def test_a_group_document_lock_excludes_another_process_and_then_is_gone(tmp_path):
    root = _group(tmp_path)
    store = FileStore(root)
    with store.lock("g/zarr.json"):
        assert len(_lock_files(root / "g")) == 1  # the lock file, while held
    assert sorted(os.listdir(root / "g")) == ["a", "zarr.json"]
    # Stores at either root take the same lock; other keys of the group do not wait.
    assert _other_process_waits(root / "g", "zarr.json", store, "g/zarr.json")
    assert _other_process_waits(root, "g/zarr.json", FileStore(root / "g"), "zarr.json")
    assert not _other_process_waits(root, "g/.zattrs", store, "g/zarr.json")
    assert sorted(os.listdir(root / "g")) == ["a", "zarr.json"]
    assert sorted(os.listdir(root)) == ["g", "zarr.json"]


def test_lock_files_are_hidden_from_listings_and_their_names_reserved(tmp_path):
    root = _group(tmp_path)
    store = FileStore(root)
    with store.lock("zarr.json"):
        assert len(_lock_files(root)) == 1
        assert sorted(store.list_prefix("")) == ["g/a/zarr.json", "g/zarr.json", "zarr.json"]
        assert store.list_dir("") == (["zarr.json"], ["g"])
    for key in (f"{LOCK_FILE_PREFIX}x", f"g/{LOCK_FILE_PREFIX}0123", f"{LOCK_DIR}/k"):
        with pytest.raises(InvalidKeyError, match="lock files"):
            store.set(key, b"x")
    store.set(".zarrkit-lockx", b"ok")  # only the exact prefix is reserved
    assert store.get(".zarrkit-lockx") == b"ok"


def test_a_lock_file_left_by_a_killed_holder_is_reused_then_deleted(tmp_path):
    root = _group(tmp_path)
    store = FileStore(root)
    with store.lock("g/zarr.json"):
        (name,) = _lock_files(root / "g")
    (root / "g" / name).write_bytes(b"")  # as a holder killed before deleting it leaves it
    with store.lock("g/zarr.json"):
        assert _lock_files(root / "g") == [name]
    assert _lock_files(root / "g") == []


def test_remove_temp_files_deletes_lock_files_no_one_holds(tmp_path):
    root = _group(tmp_path)
    store = FileStore(root)
    with store.lock("zarr.json"):
        (held,) = _lock_files(root)
    (root / held).write_bytes(b"")
    (root / "g" / held).write_bytes(b"")  # another key's name would do as well
    with FileStore(root).lock("zarr.json"):  # holds the root's (the same name)
        assert store.remove_temp_files(older_than=3600) == [f"g/{held}"]
        assert _lock_files(root) == [held]
    assert _lock_files(root) == [] and _lock_files(root / "g") == []


def test_shared_holders_leave_the_file_to_the_last_and_exclude_a_writer(tmp_path):
    root = _group(tmp_path)
    first, second, writer = FileStore(root), FileStore(root), FileStore(root)
    with first.lock_shared("zarr.json"):
        with second.lock_shared("zarr.json"):  # two descriptions: shared locks coexist
            assert len(_lock_files(root)) == 1
        assert len(_lock_files(root)) == 1  # the first still holds it
    assert _lock_files(root) == []
    got = []

    def take():
        with writer.lock("zarr.json"):
            got.append(1)
    with first.lock_shared("zarr.json"):
        thread = threading.Thread(target=take)
        thread.start()
        thread.join(0.5)
        assert thread.is_alive() and got == []  # the writer waits for the reader
    thread.join(60)
    assert got == [1] and _lock_files(root) == []


def test_a_group_replaced_by_an_array_is_locked_as_the_array(tmp_path):
    root = _group(tmp_path)
    stale = FileStore(root)
    with stale.lock("g/zarr.json"):  # remembers "g" as a group
        pass
    other = FileStore(root)  # as another process: deletes the group, makes an array there
    other.delete_prefix("g/")
    zarrkit.open_array(FileStore(root), path="g", mode="w", shape=(4,), chunks=(2,),
                       dtype="i4")
    with other.lock("g/c/0"):
        pass
    assert (root / "g" / LOCK_DIR / "keys.lock").is_file()
    # The stale store's lock of the array's document is the array's byte now, which a holder
    # through a fresh store excludes (and a lock file of its own would not).
    assert _waits_in_a_thread(stale, "g/zarr.json", FileStore(root), "g/zarr.json")
    assert _lock_files(root / "g") == []


def test_chunks_of_an_array_a_transaction_makes_leave_nothing_in_the_group(tmp_path):
    root = tmp_path / "t.zarr"
    zarrkit.open_group(root, mode="w").attrs["title"] = "t"
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(root / "new")},
            "metadata": {"shape": [6], "data_type": "int32", "chunk_grid": {
                "name": "regular", "configuration": {"chunk_shape": [2]}}}}
    with zarrkit.Transaction() as txn:
        a = zarrkit.open(spec, create=True, transaction=txn).result()
        a[1:5] = np.arange(1, 5, dtype="i4")
    assert sorted(os.listdir(root)) == ["new", "zarr.json"]
    np.testing.assert_array_equal(zarrkit.open_array(root / "new")[...], [0, 1, 2, 3, 4, 0])
    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [k for k, _ in zarr.open_group(str(root), mode="r").members()] == ["new"]


def test_a_hierarchy_written_and_changed_by_zarrkit_lists_cleanly_in_zarr_python(tmp_path):
    import zarr

    root = tmp_path / "t.zarr"
    g = zarrkit.open_group(root, mode="w", zarr_format=2)
    sub = g.create_group("sub")
    arr = sub.create_array("x", shape=(5,), chunks=(2,), dtype="f8")
    arr[1:4] = 1.5
    g.attrs["a"] = sub.attrs["b"] = 1
    zarrkit.consolidate_metadata(str(root))
    arr.attrs["c"] = 2  # keeps the consolidated metadata up to date, under the root's lock
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        members = dict(zarr.open_group(str(root), mode="r", use_consolidated=False)
                       .members(max_depth=None))
    assert sorted(members) == ["sub", "sub/x"]
    for group_dir in (root, root / "sub"):
        assert not [n for n in os.listdir(group_dir) if n.startswith(".zarrkit")]


@needs_fork
def test_group_attribute_updates_from_processes_at_different_roots_are_all_kept(tmp_path,
                                                                                 zygote):
    import time

    workers, names_each = 6, 8
    root = _group(tmp_path)
    start = time.time() + 0.15
    jobs = []
    for w in range(workers):
        where = dict(root=str(root), path="g") if w % 2 else dict(root=str(root / "g"), path="")
        jobs.append(("attrs", dict(where, names=[f"w{w}_{i}" for i in range(names_each)],
                                   start_at=start)))
    assert zygote.run(jobs) == [0] * workers, zygote.stderr()
    attrs = zarrkit.open_group(root, path="g", mode="r").attrs.asdict()
    assert sorted(attrs) == sorted(f"w{w}_{i}" for w in range(workers) for i in range(names_each))
    assert sorted(os.listdir(root / "g")) == ["a", "zarr.json"]

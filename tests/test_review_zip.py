"""Zip archives as stores, end to end: stores dropped without close(), pickling, failed closes,
the command line and URL/spec opening of archives."""

from __future__ import annotations

import gc
import json
import os
import pickle
import warnings
import zipfile

import numpy as np
import pytest
from _forked import in_child

import zarrkit
from zarrkit.cli import main
from zarrkit.errors import CorruptDataError, NotSupportedError, StoreError
from zarrkit.kvstore import ZipStore


def _saved(path, values=(1, 2, 3, 4)) -> None:
    with ZipStore(str(path), mode="w") as store:
        zarrkit.create(store, shape=(len(values),), dtype="i4")[...] = list(values)


def _litter(directory) -> list[str]:
    return [n for n in os.listdir(directory) if n.endswith(".partial")]


def _descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_writer_dropped_unclosed_releases_its_lock_and_temp_file(tmp_path):
    """A store lost without close() (an exception in user code) kept its flock for the life of
    the process, so the archive could never be written again, and left its temp archive."""
    path = tmp_path / "x.zip"
    _saved(path)

    def fails():
        a = zarrkit.open(str(path), mode="a")
        a[0] = 100
        raise ValueError("user code fails")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with pytest.raises(ValueError):
            fails()
        gc.collect()
    assert any("never closed" in str(w.message) for w in caught)
    assert _litter(tmp_path) == []
    assert zarrkit.load(str(path)).tolist() == [1, 2, 3, 4]  # the discarded change
    a = zarrkit.open(str(path), mode="a")  # was: StoreError "open for writing elsewhere"
    a[0] = 5
    a.store.close()
    assert zarrkit.load(str(path)).tolist() == [5, 2, 3, 4]


def test_new_archive_dropped_unclosed_leaves_no_temp_file(tmp_path):
    with pytest.raises(zarrkit.NodeNotFoundError):
        zarrkit.open(str(tmp_path / "missing.zip"), mode="r+")
    gc.collect()
    assert os.listdir(tmp_path) == []


def test_reader_dropped_unclosed_closes_its_descriptor(tmp_path):
    path = tmp_path / "x.zip"
    _saved(path)
    before = _descriptors()
    for _ in range(20):
        assert zarrkit.open(str(path), mode="r")[...].tolist() == [1, 2, 3, 4]
    gc.collect()
    assert _descriptors() <= before + 1


def test_failed_open_is_not_reported_as_unclosed(tmp_path):
    path = tmp_path / "bad.zip"
    path.write_bytes(b"not a zip")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with pytest.raises(CorruptDataError):
            ZipStore(str(path), mode="a")
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_zip_backed_array_pickles(tmp_path):
    path = tmp_path / "x.zip"
    _saved(path)
    a = zarrkit.open(str(path), mode="r")
    b = pickle.loads(pickle.dumps(a))
    assert b.read_only and b[...].tolist() == [1, 2, 3, 4]
    b.store.close()
    a.store.close()


def test_writable_zip_store_refuses_pickling_by_name(tmp_path):
    path = tmp_path / "x.zip"
    _saved(path)
    a = zarrkit.open(str(path), mode="a")
    with pytest.raises(NotSupportedError, match="one writer"):
        pickle.dumps(a)
    a.store.close()


def test_failed_close_keeps_the_archive_and_releases_the_lock(tmp_path, monkeypatch):
    path = tmp_path / "x.zip"
    _saved(path)
    store = ZipStore(str(path), mode="a")
    store.set("new", b"1")

    def no_space() -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store._zf, "close", no_space)
    with pytest.raises(StoreError, match="left as it was"):
        store.close()
    monkeypatch.undo()
    assert _litter(tmp_path) == []
    assert zarrkit.load(str(path)).tolist() == [1, 2, 3, 4]
    with ZipStore(str(path), mode="a") as again:  # was: "open for writing elsewhere"
        again.set("new", b"2")
    with zipfile.ZipFile(path) as zf:
        assert zf.read("new") == b"2"


def test_cli_copy_to_a_zip_with_destination_options(tmp_path, capsys):
    src = zarrkit.create(str(tmp_path / "src.zarr"), shape=(5,), dtype="i4")
    src[...] = np.arange(5)
    dst = tmp_path / "dst.zip"
    assert main(["copy", str(tmp_path / "src.zarr"), str(dst), "--quiet",
                 "--dst-storage-options", '{"anon": true}']) == 0
    gc.collect()
    assert zarrkit.load(str(dst)).tolist() == list(range(5))
    assert _litter(tmp_path) == []



def test_archive_through_a_symlink_is_updated_not_replaced_by_a_copy(tmp_path):
    """close() replaced the symlink with a regular file: the archive it named never changed."""
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "x.zip"
    _saved(real)
    link = tmp_path / "link.zip"
    link.symlink_to(real)
    a = zarrkit.open(str(link), mode="a")
    a[0] = 99
    a.store.close()
    assert link.is_symlink()
    assert zarrkit.load(str(real)).tolist() == [99, 2, 3, 4]
    with ZipStore(str(link), mode="a") as store:  # compaction (a key replaced) too
        store.set("zarr.json", store.get("zarr.json"))
    assert link.is_symlink() and zarrkit.load(str(real)).tolist() == [99, 2, 3, 4]
    assert _litter(tmp_path) == [] and _litter(tmp_path / "real") == []


def test_upper_case_zip_suffix_opens_an_archive(tmp_path):
    path = tmp_path / "DATA.ZIP"
    _saved(path)
    assert zarrkit.load(str(path)).tolist() == [1, 2, 3, 4]  # was: "no array in the file store"
    zarrkit.save(str(tmp_path / "NEW.ZIP"), np.arange(3))
    assert zipfile.is_zipfile(tmp_path / "NEW.ZIP")  # was: a directory


def _damage(path, key) -> None:
    """Flip a byte of a stored entry's data, as a bad disk would."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(key)
    data = bytearray(path.read_bytes())
    data[info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_cli_verify_reports_a_damaged_zip_entry_and_checks_the_rest(tmp_path, capsys):
    """The entry's CRC-32 failing in the store ended `verify` with an error (exit status 2)
    instead of naming the damaged key."""
    path = tmp_path / "v.zip"
    zarrkit.save(str(path), np.arange(100, dtype="i4"), chunks=(10,))
    _damage(path, "c/3")
    assert main(["verify", str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [d["key"] for d in report["damaged"]] == ["c/3"]
    assert "CRC-32" in report["damaged"][0]["error"]
    assert report["chunks_checked"] == 10 and report["arrays"][0]["chunks_missing"] == 0


def test_forked_child_dropping_a_writer_leaves_the_parents_work(tmp_path):
    """A child's copy of the store, collected there, must not discard the parent's archive."""
    path = tmp_path / "x.zip"
    box = [ZipStore(str(path), mode="w")]
    box[0].set("a", b"1")

    def drop() -> bool:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            box.clear()
            gc.collect()
        return True

    assert in_child(drop)
    box[0].set("b", b"2")
    box[0].close()
    with zipfile.ZipFile(path) as zf:
        assert zf.read("a") == b"1" and zf.read("b") == b"2"

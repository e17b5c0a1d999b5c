"""One-shot operations given a zip archive's path finish it: a ZipStore only writes its archive
on close(), so `convert`, `save`, `consolidate_metadata`, ... that opened one themselves and
left it open lost all their work (with a ResourceWarning that Python hides by default)."""

from __future__ import annotations

import gc
import os
import warnings

import numpy as np
import pytest

import zarrkit
from zarrkit.kvstore import ZipStore


@pytest.fixture
def no_open_writers():
    """Fails the test if a ZipStore written to is collected unclosed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def _written(path) -> None:
    """The archive exists and nothing is left beside it (no unfinished temp archive)."""
    assert os.path.isfile(path)
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.endswith(".partial")]


def _group_with_array(path) -> None:
    with ZipStore(str(path), mode="w") as store:
        zarrkit.open_group(store, mode="w").create_array("a", shape=(3,), dtype="i4")[...] = 7


def test_convert_to_a_zip_path(tmp_path, no_open_writers):
    src = zarrkit.create(tmp_path / "src.zarr", shape=(4,), dtype="i4", zarr_format=2)
    src[...] = [1, 2, 3, 4]
    copy = zarrkit.convert(tmp_path / "src.zarr", str(tmp_path / "dst.zip"), progress=False)
    assert copy.read_only and copy[...].tolist() == [1, 2, 3, 4]
    _written(tmp_path / "dst.zip")
    assert zarrkit.load(str(tmp_path / "dst.zip")).tolist() == [1, 2, 3, 4]


def test_convert_from_a_zip_path_closes_it(tmp_path, no_open_writers):
    _group_with_array(tmp_path / "src.zip")
    before = _descriptors_of(tmp_path / "src.zip")
    zarrkit.convert(str(tmp_path / "src.zip"), tmp_path / "dst.zarr", progress=False)
    assert _descriptors_of(tmp_path / "src.zip") == before
    assert zarrkit.load(tmp_path / "dst.zarr", path="a").tolist() == [7, 7, 7]


def test_consolidate_metadata_of_a_zip_path(tmp_path, no_open_writers):
    _group_with_array(tmp_path / "g.zip")
    group = zarrkit.consolidate_metadata(str(tmp_path / "g.zip"))
    assert group.read_only and "consolidated_metadata" in group.metadata
    _written(tmp_path / "g.zip")
    reopened = zarrkit.open_group(str(tmp_path / "g.zip"), mode="r")
    assert "consolidated_metadata" in reopened.metadata
    reopened.store.close()


def test_upgrade_metadata_of_a_zip_path(tmp_path, no_open_writers):
    with ZipStore(str(tmp_path / "v2.zip"), mode="w") as store:
        a = zarrkit.create(store, shape=(3,), dtype="i4", zarr_format=2, compressor=None)
        a[...] = [5, 6, 7]
    upgraded = zarrkit.upgrade_metadata(str(tmp_path / "v2.zip"))
    assert upgraded.zarr_format == 3 and upgraded.read_only
    reopened = zarrkit.open(str(tmp_path / "v2.zip"), mode="r")
    assert reopened.zarr_format == 3 and reopened[...].tolist() == [5, 6, 7]
    reopened.store.close()
    assert zarrkit.upgrade_metadata(str(tmp_path / "v2.zip")).zarr_format == 3  # nothing to do


def test_save_and_load_a_zip_path(tmp_path, no_open_writers):
    saved = zarrkit.save(str(tmp_path / "s.zip"), np.arange(5))
    assert saved.read_only and saved[...].tolist() == list(range(5))
    _written(tmp_path / "s.zip")
    before = _descriptors_of(tmp_path / "s.zip")
    assert zarrkit.load(str(tmp_path / "s.zip")).tolist() == list(range(5))
    assert _descriptors_of(tmp_path / "s.zip") == before


def test_a_store_object_is_left_open(tmp_path, no_open_writers):
    """The caller's own store stays theirs to close (and to write on)."""
    with ZipStore(str(tmp_path / "own.zip"), mode="w") as store:
        saved = zarrkit.save(store, np.arange(3))
        assert not saved.read_only
        saved[0] = 9
    assert zarrkit.load(str(tmp_path / "own.zip")).tolist() == [9, 1, 2]


def test_from_dask_and_to_zarr_to_a_zip_path(tmp_path, no_open_writers):
    da = pytest.importorskip("dask.array")
    xr = pytest.importorskip("xarray")
    from zarrkit.dask import from_dask
    from zarrkit.xarray import to_zarr

    written = from_dask(da.arange(10, chunks=5), str(tmp_path / "d.zip"))
    assert written.read_only and written[...].tolist() == list(range(10))
    root = to_zarr(xr.Dataset({"v": ("x", np.arange(4.0))}), str(tmp_path / "x.zip"))
    assert root.read_only
    _written(tmp_path / "d.zip")
    _written(tmp_path / "x.zip")
    assert zarrkit.load(str(tmp_path / "x.zip"), path="v").tolist() == [0.0, 1.0, 2.0, 3.0]


def _descriptors_of(path) -> int:
    """How many of this process's descriptors are open on `path`."""
    target = os.path.realpath(path)
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == target
        except OSError:
            pass
    return count


def test_delayed_writes_to_a_zip_path_finish_it(tmp_path, no_open_writers):
    """With compute=False the archive is finished when the returned object is computed (it was
    never written: the store stayed open after the writes)."""
    da = pytest.importorskip("dask.array")
    xr = pytest.importorskip("xarray")
    import dask

    from zarrkit.dask import from_dask
    from zarrkit.xarray import to_zarr

    dask.compute(from_dask(da.arange(10, chunks=5), str(tmp_path / "d.zip"), compute=False))
    ds = xr.Dataset({"v": ("x", da.arange(4.0, chunks=2))})
    to_zarr(ds, str(tmp_path / "x.zip"), compute=False).compute()
    _written(tmp_path / "d.zip")
    _written(tmp_path / "x.zip")
    assert zarrkit.load(str(tmp_path / "d.zip")).tolist() == list(range(10))
    assert zarrkit.load(str(tmp_path / "x.zip"), path="v").tolist() == [0.0, 1.0, 2.0, 3.0]


def test_closing_a_dataset_opened_from_a_zip_path_closes_the_archive(tmp_path):
    xr = pytest.importorskip("xarray")
    from zarrkit.xarray import to_zarr

    to_zarr(xr.Dataset({"v": ("x", np.arange(4.0))}), str(tmp_path / "x.zip"))
    before = _descriptors_of(tmp_path / "x.zip")
    ds = xr.open_dataset(str(tmp_path / "x.zip"), engine="zarrkit")
    assert ds["v"].values.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert _descriptors_of(tmp_path / "x.zip") > before
    ds.close()
    assert _descriptors_of(tmp_path / "x.zip") == before


def test_open_in_mode_w_at_the_root_writes_a_new_archive(tmp_path):
    """Mode "w" for the root node replaces the whole archive: it is written anew rather than
    copied and emptied key by key; for a node inside, the siblings stay."""
    path = tmp_path / "x.zip"
    big = zarrkit.open(path, mode="w", shape=(1000,), dtype="i4", chunks=(10,))
    big[...] = 1
    big.store.close()
    a = zarrkit.open(path, mode="w", shape=(5,), dtype="i4")
    assert a.store.mode == "w"
    a[...] = 3
    a.store.close()
    assert sorted(ZipStore(path).list_prefix("")) == ["c/0", "zarr.json"]
    g = zarrkit.open(path, mode="w")
    g.create_array("keep", shape=(3,), dtype="i4")[...] = 2
    g.store.close()
    sub = zarrkit.open(path, mode="w", path="sub", shape=(2,), dtype="i4")
    assert sub.store.mode == "a"
    sub.store.close()
    assert zarrkit.open(path, mode="r", path="keep")[...].tolist() == [2, 2, 2]


def test_a_failed_open_in_mode_w_keeps_the_archive(tmp_path):
    path = tmp_path / "x.zip"
    a = zarrkit.open(path, mode="w", shape=(4,), dtype="i4", chunks=(2,))
    a[...] = 7
    a.store.close()
    with pytest.raises(zarrkit.errors.ZarrkitError, match="chunks"):
        zarrkit.open(path, mode="w", shape=(4,), dtype="i4", chunks="bad")
    gc.collect()
    assert zarrkit.open(path, mode="r")[...].tolist() == [7] * 4
    assert os.listdir(tmp_path) == ["x.zip"]


def test_a_rewritten_archive_keeps_its_permissions(tmp_path):
    path = tmp_path / "x.zip"
    with ZipStore(path, "w") as z:
        z.set("k", b"1")
        z.set("gone", b"2")
    os.chmod(path, 0o640)
    with ZipStore(path, "w") as z:  # written anew
        z.set("k", b"3")
    assert os.stat(path).st_mode & 0o777 == 0o640
    with ZipStore(path, "a") as z:  # compacted on close
        z.set("k", b"4")
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert ZipStore(path).get("k") == b"4"


def test_a_new_archive_in_a_missing_directory_is_created(tmp_path):
    path = tmp_path / "new" / "dir" / "x.zip"
    a = zarrkit.open(path, mode="w", shape=(3,), dtype="i4")
    a[...] = 5
    a.store.close()
    assert zarrkit.open(path, mode="r")[...].tolist() == [5, 5, 5]
    with pytest.raises(zarrkit.errors.StoreError):
        ZipStore(tmp_path / "missing" / "y.zip", "r")  # reading creates nothing
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("failing", [
    lambda path: zarrkit.open(path, mode="w", shape=(4,), dtype="bogus"),
    lambda path: zarrkit.open(path, mode="w", overwrite=False),
    lambda path: zarrkit.open_group(path, mode="w", attributes={"x": object()}),
    lambda path: zarrkit.create(path, shape=(4,), dtype="bogus", overwrite=True),
    lambda path: zarrkit.save(path, np.array([object()])),
])
def test_a_failed_open_in_mode_w_leaves_no_writer_behind(tmp_path, failing):
    """An open in mode "w" that fails after opening the archive (a new one, in a temp file)
    gives it up at once: while the exception lived (kept by the caller, a test framework, a
    debugger), its temp archive stayed and its single-writer guard locked out every writer."""
    path = tmp_path / "x.zip"
    a = zarrkit.open(path, mode="w", shape=(4,), dtype="i4", chunks=(2,))
    a[...] = 7
    a.store.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with pytest.raises(Exception) as failure:
            failing(path)
        assert failure.value is not None  # still alive, with its traceback
        assert os.listdir(tmp_path) == ["x.zip"]
        b = zarrkit.open(path, mode="a")  # another writer is let in
        b.attrs["ok"] = 1
        b.store.close()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert zarrkit.open(path, mode="r")[...].tolist() == [7] * 4

"""Consolidated metadata kept right through every handle: one taken from a consolidated group,
and one opened by its own path (its store rooted at the node), which finds the groups above
its store and amends their records (zarr-python 3.1.6 leaves them stale either way). Also the
stored figures of `info_complete` and the notebook display: one listing, then the keys' sizes
and the shards' indexes read concurrently (a bounded number in flight), still exact."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest
import zarr

import zarrkit
from zarrkit.describe import array_summary
from zarrkit.engine.executor import io_width
from zarrkit.errors import StoreError
from zarrkit.kvstore import FileStore
from zarrkit.kvstore.foreign import FsspecStore
from zarrkit.kvstore.memory import MemoryStore


def _records(where, zarr_format):
    if zarr_format == 3:
        return json.loads((where / "zarr.json").read_text())["consolidated_metadata"]["metadata"]
    return json.loads((where / ".zmetadata").read_text())["metadata"]


def _theirs(path, zarr_format):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_consolidated(str(path), zarr_format=zarr_format)


def _hierarchy(path, zarr_format):
    """root/{sub/{a, inner/z}, b}, consolidated at the root."""
    root = zarrkit.open_group(path, mode="w", zarr_format=zarr_format)
    sub = root.create_group("sub")
    sub.create_array("a", shape=(3,), chunks=(3,), dtype="f4")[...] = 1
    sub.create_group("inner").create_array("z", shape=(2,), chunks=(2,), dtype="i1")
    root.create_array("b", shape=(4,), chunks=(2,), dtype="u2")
    zarrkit.consolidate_metadata(path)


def _same_as_fresh(path, zarr_format):
    """The records zarrkit kept equal those consolidating again writes."""
    kept = _records(path, zarr_format)
    zarrkit.consolidate_metadata(path)
    assert kept == _records(path, zarr_format)


# -- handles taken from a consolidated group -----------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_child_handle_from_the_group_keeps_the_records(tmp_path, zarr_format):
    _hierarchy(tmp_path, zarr_format)
    g = zarrkit.open_group(tmp_path)
    assert g._consolidated is not None
    a = g["sub/a"]
    a.attrs["x"] = 1
    a.resize((5,))
    g["sub"]["inner"].create_array("new", shape=(6,), dtype="i2")
    theirs = _theirs(tmp_path, zarr_format)
    assert theirs["sub/a"].shape == (5,) and dict(theirs["sub/a"].attrs) == {"x": 1}
    assert theirs["sub/inner/new"].shape == (6,)
    _same_as_fresh(tmp_path, zarr_format)


# -- handles opened by their own path ------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_an_array_opened_by_its_path_updates_the_root_record(tmp_path, zarr_format):
    _hierarchy(tmp_path, zarr_format)
    a = zarrkit.open(str(tmp_path / "sub" / "a"), mode="r+")
    assert a.path == "" and isinstance(a.store, FileStore)  # the store is rooted at the node
    a.resize((7,))
    a.attrs["units"] = "m"
    a[5:] = 2  # data written where the old shape ended
    theirs = _theirs(tmp_path, zarr_format)
    assert theirs["sub/a"].shape == (7,) and dict(theirs["sub/a"].attrs) == {"units": "m"}
    assert theirs["sub/a"][...].tolist() == [1, 1, 1, 0, 0, 2, 2]
    read = zarrkit.open_group(tmp_path, mode="r")
    assert read._consolidated is not None and read["sub/a"].shape == (7,)
    _same_as_fresh(tmp_path, zarr_format)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_group_opened_by_its_path_records_members_it_adds_and_removes(tmp_path, zarr_format):
    _hierarchy(tmp_path, zarr_format)
    sub = zarrkit.open_group(str(tmp_path / "sub"), mode="r+")
    sub.create_array("c", shape=(2, 2), chunks=(1, 2), dtype="f8")
    sub.create_group("deeper/still")  # with its implied parent
    sub["d"] = np.arange(4)
    del sub["inner"]
    sub["a"].resize((1,))  # a handle taken from the directly opened group
    theirs = _theirs(tmp_path, zarr_format)
    assert sorted(theirs["sub"].array_keys()) == ["a", "c", "d"]
    assert sorted(theirs["sub"].group_keys()) == ["deeper"]
    assert theirs["sub/a"].shape == (1,) and theirs["sub/d"][...].tolist() == [0, 1, 2, 3]
    assert sorted(zarrkit.open_group(tmp_path, mode="r")["sub"]) == ["a", "c", "d", "deeper"]
    _same_as_fresh(tmp_path, zarr_format)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_node_replaced_at_its_own_path_drops_the_old_records(tmp_path, zarr_format):
    _hierarchy(tmp_path, zarr_format)
    zarrkit.open_group(str(tmp_path / "sub"), mode="w", zarr_format=zarr_format)
    assert list(_theirs(tmp_path, zarr_format)["sub"].keys()) == []
    zarrkit.open(str(tmp_path / "b"), mode="w", shape=(9,), dtype="i8", zarr_format=zarr_format)
    assert _theirs(tmp_path, zarr_format)["b"].dtype == np.int64
    assert not any("zarrkit-replac" in k for k in _records(tmp_path, zarr_format))
    _same_as_fresh(tmp_path, zarr_format)


def test_every_consolidated_group_above_is_updated(tmp_path):
    _hierarchy(tmp_path, 3)
    zarrkit.consolidate_metadata(tmp_path / "sub")  # a record of its own below the root's
    z = zarrkit.open(str(tmp_path / "sub" / "inner" / "z"), mode="r+")
    z.resize((8,))
    assert _records(tmp_path, 3)["sub/inner/z"]["shape"] == [8]
    assert _records(tmp_path / "sub", 3)["inner/z"]["shape"] == [8]


def test_a_consolidated_group_above_a_plain_folder_is_no_ancestor(tmp_path):
    """The walk up stops at the first folder that is no group: a consolidated group above it
    does not hold the node in its hierarchy and must not record it."""
    zarrkit.open_group(tmp_path, mode="w")
    zarrkit.consolidate_metadata(tmp_path)
    before = _records(tmp_path, 3)
    a = zarrkit.create(str(tmp_path / "plain" / "a"), shape=(3,), dtype="i4")
    a.resize((4,))
    a.attrs["k"] = "v"
    assert _records(tmp_path, 3) == before == {}
    assert not (tmp_path / "plain" / "zarr.json").exists()


def test_a_v2_groups_own_documents_are_kept_by_a_direct_handle(tmp_path):
    _hierarchy(tmp_path, 2)
    sub = zarrkit.open_group(str(tmp_path / "sub"), mode="r+")
    sub.attrs["level"] = 1
    root = zarrkit.open_group(str(tmp_path), mode="r+", use_consolidated=False)
    root.attrs["title"] = "t"
    assert _records(tmp_path, 2)["sub/.zattrs"] == {"level": 1}
    assert dict(_theirs(tmp_path, 2)["sub"].attrs) == {"level": 1}
    assert dict(_theirs(tmp_path, 2).attrs) == {"title": "t"}


def test_chunk_writes_ask_nothing_above_and_metadata_changes_one_request_a_level(tmp_path):
    _hierarchy(tmp_path / "root", 3)
    a = zarrkit.open(str(tmp_path / "root" / "sub" / "a"), mode="r+")
    calls: dict[str, int] = {}
    levels = []
    above = a.store.parent()
    for _ in range(3):  # sub, root (groups), then tmp_path (no group: the walk ends there)
        store, _ = above
        levels.append(store.root.rsplit("/", 1)[-1])

        def counted(requests, _get=store.get_many, _name=levels[-1]):
            calls[_name] = calls.get(_name, 0) + 1
            return _get(requests)

        store.get_many = counted
        above = store.parent()
    assert levels == ["sub", "root", tmp_path.name]
    a[...] = 5
    a[:2] = 6
    assert calls == {}
    a.attrs["x"] = 1
    assert calls == {"sub": 1, "root": 1, tmp_path.name: 1}
    a.resize((4,))
    assert calls == {"sub": 2, "root": 2, tmp_path.name: 2}
    assert _records(tmp_path / "root", 3)["sub/a"]["shape"] == [4]


def test_a_level_above_that_cannot_be_read_does_not_fail_the_change(tmp_path, monkeypatch):
    _hierarchy(tmp_path, 3)
    a = zarrkit.open(str(tmp_path / "sub" / "a"), mode="r+")
    up, _ = a.store.parent()

    def refused(requests):
        raise StoreError("permission denied")

    monkeypatch.setattr(up, "get_many", refused)
    a.resize((2,))
    assert zarrkit.open(str(tmp_path / "sub" / "a"), mode="r").shape == (2,)


def test_direct_and_group_handles_at_once_lose_no_update(tmp_path):
    """Threads change attributes through handles opened by path and through the consolidated
    group at once: every update is in the records (each amends them under the document's lock,
    whichever store object it goes through)."""
    root = zarrkit.open_group(tmp_path, mode="w")
    for i in range(6):
        root.create_group(f"g{i}").create_array("a", shape=(2,), dtype="i4")
    zarrkit.consolidate_metadata(tmp_path)
    group = zarrkit.open_group(tmp_path, mode="r+")
    errors = []

    def work(i):
        try:
            a = group[f"g{i}/a"] if i % 2 else zarrkit.open(str(tmp_path / f"g{i}" / "a"),
                                                             mode="r+")
            for n in range(8):
                a.attrs[f"n{n}"] = n
            a.resize((3 + i,))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    records = _records(tmp_path, 3)
    for i in range(6):
        assert records[f"g{i}/a"]["shape"] == [3 + i]
        assert records[f"g{i}/a"]["attributes"] == {f"n{n}": n for n in range(8)}
    _same_as_fresh(tmp_path, 3)


def test_processes_writing_by_path_lose_no_update(tmp_path):
    root = zarrkit.open_group(tmp_path, mode="w", zarr_format=2)
    for i in range(3):
        root.create_array(f"a{i}", shape=(1,), dtype="i4")
    zarrkit.consolidate_metadata(tmp_path)
    script = textwrap.dedent("""
        import sys, zarrkit
        a = zarrkit.open(sys.argv[1], mode="r+")
        for n in range(10):
            a.attrs[f"n{n}"] = n
            a.resize((n + 1,))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path / f"a{i}")])
             for i in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    records = _records(tmp_path, 2)
    for i in range(3):
        assert records[f"a{i}/.zarray"]["shape"] == [10]
        assert records[f"a{i}/.zattrs"] == {f"n{n}": n for n in range(10)}
    assert [_theirs(tmp_path, 2)[f"a{i}"].shape for i in range(3)] == [(10,)] * 3


def test_an_fsspec_location_is_amended_above(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    root = f"/consolidated-children-{tmp_path.name}"
    g = zarrkit.open_group(FsspecStore(fs, root), mode="w")
    g.create_group("sub").create_array("a", shape=(3,), dtype="f4")
    zarrkit.consolidate_metadata(FsspecStore(fs, root))
    a = zarrkit.open(FsspecStore(fs, f"{root}/sub/a"), mode="r+")
    a.resize((6,))
    read = zarrkit.open_group(FsspecStore(fs, root), mode="r")
    assert read._consolidated is not None and read["sub/a"].shape == (6,)
    fs.rm(root, recursive=True)


def test_an_s3_prefix_is_amended_above(bucket, opts):
    pytest.importorskip("obstore")
    url = f"s3://{bucket}/data.zarr"
    g = zarrkit.open_group(url, mode="w", storage_options=opts)
    g.create_group("sub").create_array("a", shape=(3,), dtype="f4")
    zarrkit.consolidate_metadata(url, storage_options=opts)
    a = zarrkit.open(f"{url}/sub/a", mode="r+", storage_options=opts)
    a.resize((11,))
    a.attrs["k"] = 1
    read = zarrkit.open_group(url, mode="r", storage_options=opts)
    assert read._consolidated is not None
    assert read["sub/a"].shape == (11,) and read["sub/a"].attrs["k"] == 1
    assert zarrkit.open_group(url, mode="r", storage_options=opts,
                              use_consolidated=False)["sub/a"].shape == (11,)


def test_a_store_without_a_location_above_has_no_parent():
    assert MemoryStore().parent() is None
    assert FileStore("/").parent() is None
    up, name = FileStore("/x/y").parent()
    assert (up.root, name) == ("/x", "y")
    assert FileStore("/x/y").parent() is not None


# -- info_complete and the notebook display: concurrent, exact -----------------------------------


class _Slow(MemoryStore):
    """Each size and shard index read waits a little; counts them, listings, and the most of
    each kind in flight at once."""

    io_concurrency = 6

    def __init__(self):
        super().__init__()
        self.lock_ = threading.Lock()
        self.reset()

    def _wait(self, what):
        with self.lock_:
            self.now[what] += 1
            self.peak[what] = max(self.peak[what], self.now[what])
            self.calls[what] += 1
        time.sleep(0.004)
        with self.lock_:
            self.now[what] -= 1

    def size(self, key):
        self._wait("size")
        return super().size(key)

    def get_with_generation(self, key, byte_range=None):
        self._wait("index")
        return super().get_with_generation(key, byte_range)

    def list_prefix(self, prefix):
        self.listings += 1
        return super().list_prefix(prefix)

    def reset(self):
        self.listings = 0
        self.now, self.peak, self.calls = ({"size": 0, "index": 0} for _ in range(3))


def _sharded_on_slow_store():
    store = _Slow()
    a = zarrkit.create(store, (40, 30), "int32", chunks=(3, 4), shards=(6, 8))
    a[:19, :] = 7  # every shard of the first rows, partly the last of them
    a[36:, 24:] = 1  # one edge shard, partly outside the array
    store.reset()
    return store, a


def _expected(store, a):
    """Bytes, inner chunks and shards stored, counted independently of zarrkit's figures: the
    inner chunks the two writes touched, and the shard keys."""
    written = np.zeros(a.shape, dtype=bool)
    written[:19, :] = written[36:, 24:] = True
    grid = [-(-s // c) for s, c in zip(a.shape, a.chunks, strict=True)]
    touched = sum(bool(written[i * 3:(i + 1) * 3, j * 4:(j + 1) * 4].any())
                  for i in range(grid[0]) for j in range(grid[1]))
    keys = list(store.list_prefix(""))
    nbytes = sum(len(store.get(k)) for k in keys)
    store.reset()
    return nbytes, touched, len([k for k in keys if k.startswith("c/")])


def test_info_complete_reads_sizes_and_indexes_concurrently_and_exactly():
    store, a = _sharded_on_slow_store()
    nbytes, nchunks, nshards = _expected(store, a)
    assert (nchunks, nshards) == (60, 17)
    text = str(a.info_complete())
    assert f": {nbytes} (" in text
    assert f"{nchunks}/{a.nchunks}" in text and f"{nshards}/{a.nshards}" in text
    assert store.listings == 1  # one listing for bytes, chunks and shards
    assert store.calls == {"size": nshards + 1, "index": nshards}  # + zarr.json's size
    width = io_width(store.io_concurrency)  # bounded: the pool's width for this store
    assert all(1 < n <= width for n in store.peak.values()), store.peak


def test_the_notebook_display_reads_concurrently_and_exactly():
    store, a = _sharded_on_slow_store()
    nbytes, nchunks, nshards = _expected(store, a)
    html = a._repr_html_()
    assert f"{nchunks}/{a.nchunks}" in html and f"{nshards}/{a.nshards}" in html
    assert store.listings == 1 and store.calls["index"] == nshards
    width = io_width(store.io_concurrency)  # bounded: the pool's width for this store
    assert all(1 < n <= width for n in store.peak.values()), store.peak
    store.reset()
    summary = array_summary(a)
    assert (summary["nbytes_stored"], summary["chunks_stored"], summary["shards_stored"]) == \
        (nbytes, nchunks, nshards)
    assert summary["shards_total"] == a.nshards and store.listings == 1
    # the figures agree with the separate properties
    assert (a.nbytes_stored(), a.nchunks_initialized, a.nshards_initialized) == \
        (nbytes, nchunks, nshards)


def test_unsharded_info_lists_once_and_sizes_concurrently():
    store = _Slow()
    a = zarrkit.create(store, (20,), "int16", chunks=(2,))
    a[:13] = 3
    store.reset()
    text = str(a.info_complete())
    assert "7/10" in text and store.listings == 1
    assert store.calls == {"size": 8, "index": 0} and store.peak["size"] > 1
    assert a.nbytes_stored() == sum(len(store.get(k)) for k in store.list_prefix(""))


def test_a_shard_deleted_after_the_listing_counts_nothing(monkeypatch):
    store, a = _sharded_on_slow_store()
    listed = list(store.list_prefix(""))
    gone = next(k for k in listed if k.startswith("c/"))
    monkeypatch.setattr(store, "list_prefix", lambda prefix: iter(listed))
    store.delete(gone)
    nbytes, chunks, shards = a._stored_figures()
    assert shards == 17  # as listed
    assert nbytes == sum(len(store.get(k)) for k in listed if k != gone)
    assert chunks == a.nchunks_initialized  # the deleted shard's chunks are not counted


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_xarray_reads_what_a_handle_opened_by_path_changed(tmp_path, zarr_format):
    xr = pytest.importorskip("xarray")
    ds = xr.Dataset({"t": (("x",), np.arange(4.0))}, coords={"x": np.arange(4)})
    ds.to_zarr(tmp_path, zarr_format=zarr_format, consolidated=True)
    t = zarrkit.open(str(tmp_path / "t"), mode="r+")
    t.attrs["units"] = "K"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        read = xr.open_zarr(tmp_path, consolidated=True, zarr_format=zarr_format)
    assert read["t"].attrs["units"] == "K"

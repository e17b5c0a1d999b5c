"""Any zarr-python 3 store as a zarrkit store, through its asynchronous methods: its wrappers
(`LoggingStore`) and other libraries' stores built on it, icechunk's versioned
`IcechunkStore` first among them."""

import pickle
import warnings

import numpy as np
import pytest
import zarr

import zarrkit
from zarrkit.kvstore.foreign import ZarrPythonStore

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_a_wrapper_store_reads_and_writes_ranges(tmp_path):
    inner = zarr.storage.MemoryStore()
    logged = zarr.storage.LoggingStore(inner, log_level="DEBUG")
    a = zarrkit.create(logged, shape=(12, 12), chunks=(2, 2), shards=(4, 4), dtype="i4")
    assert isinstance(a.store, ZarrPythonStore)
    a[...] = np.arange(144).reshape(12, 12)
    a[1:3, 5:9] = -1  # partial shard writes: index read by suffix, inner chunks by range
    expected = np.arange(144).reshape(12, 12)
    expected[1:3, 5:9] = -1
    np.testing.assert_array_equal(zarrkit.open(logged, mode="r")[0:5, 3:10], expected[0:5, 3:10])
    assert logged.counter["get"] > 0 and logged.counter["set"] > 0  # through the wrapper
    np.testing.assert_array_equal(zarr.open_array(inner, mode="r")[...], expected)
    again = pickle.loads(pickle.dumps(zarrkit.open(logged, mode="r")))
    assert again[11, 11] == 143


def test_icechunk_sessions(tmp_path):
    icechunk = pytest.importorskip("icechunk")
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")))
    session = repo.writable_session("main")
    root = zarrkit.open_group(session.store, mode="w", attributes={"title": "versioned"})
    a = root.create_array("x", shape=(10, 10), chunks=(2, 2), shards=(4, 4), dtype="f4",
                          dimension_names=["y", "x"])
    a[...] = np.arange(100).reshape(10, 10)
    first = session.commit("first")

    session = repo.writable_session("main")
    x = zarrkit.open_group(session.store)["x"]
    x[2:5, 3:7] = -1
    x.attrs["edited"] = True
    second = session.commit("second")

    expected = np.arange(100, dtype="f4").reshape(10, 10)
    then = zarrkit.open_group(repo.readonly_session(snapshot_id=first).store, mode="r")
    np.testing.assert_array_equal(then["x"][...], expected)  # the first snapshot, as it was
    expected[2:5, 3:7] = -1
    now = repo.readonly_session(snapshot_id=second).store
    read = zarrkit.open_group(now, mode="r")
    assert read.attrs["title"] == "versioned" and read["x"].attrs["edited"] is True
    np.testing.assert_array_equal(read["x"][...], expected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = zarr.open_group(now, mode="r")["x"]
        np.testing.assert_array_equal(theirs[...], expected)
    with pytest.raises(zarrkit.ReadOnlyError):
        zarrkit.open(now, path="x")[0, 0] = 1
    later = repo.writable_session("main")
    g = zarrkit.open_group(later.store)
    g.create_group("y")["z"] = np.arange(3)
    del g["x"]  # a node and its chunks, as icechunk deletes them
    assert sorted(zarrkit.open_group(later.store)) == ["y"]
    fresh = zarrkit.open_group(later.store, mode="w", attributes={"n": 1})  # all replaced
    assert list(fresh) == [] and dict(fresh.attrs) == {"n": 1}
    with pytest.raises(zarrkit.StoreError, match="IcechunkStore: cannot write '.zgroup'"):
        zarrkit.open_group(later.store, mode="w", zarr_format=2)  # icechunk holds v3 only
    store = zarrkit.open(now, mode="r").store  # one level listed, not every chunk below it
    assert store.list_dir("") == (["zarr.json"], ["x"])
    assert store.list_dir("x/") == (["zarr.json"], ["c"])


def test_xarray_datasets_in_icechunk():
    icechunk = pytest.importorskip("icechunk")
    xr = pytest.importorskip("xarray")
    from zarrkit.xarray import to_zarr

    repo = icechunk.Repository.create(icechunk.in_memory_storage())
    session = repo.writable_session("main")
    times = np.array(["2020-01-01", "2020-01-02", "2020-01-03"], "datetime64[ns]")
    ds = xr.Dataset({"t": (("time", "x"), np.arange(12.0).reshape(3, 4))},
                    coords={"time": times, "x": [1, 2, 3, 4]})
    to_zarr(ds, session.store, mode="w")
    session.commit("dataset")
    store = repo.readonly_session("main").store
    for read in (xr.open_zarr(store, consolidated=False),  # xarray through zarr-python
                 xr.open_dataset(store, engine="zarrkit")):
        xr.testing.assert_identical(read.load(), ds)

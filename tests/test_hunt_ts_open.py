"""Open modes, caching and contexts compared with TensorStore (the oracle): regressions of
discrepancies found by a bug hunt."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import zarrkit

ts = pytest.importorskip("tensorstore")

POOL = {"cache_pool": {"total_bytes_limit": 1 << 20}}


def _spec(path, **members) -> dict:
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}, **members}


@pytest.mark.parametrize("dtype,chunk", [("float64", [2, 2]), ("int32", [4, 4])])
def test_a_replaced_array_never_reads_the_old_arrays_cached_chunks(tmp_path, dtype, chunk):
    """Cached chunks belong to the metadata they were decoded with: after delete_existing
    with other metadata, a handle in the same context reads the new (empty) array."""
    results = []
    for lib, where in ((ts, tmp_path / "ts"), (zarrkit, tmp_path / "zk")):
        spec = _spec(where, recheck_cached_data=False)
        ctx = ts.Context(POOL) if lib is ts else zarrkit.Context(POOL)
        layout = lib.ChunkLayout(chunk_shape=[2, 2])
        kw = {"dtype": ts.int32} if lib is ts else {"dtype": "int32"}
        old = lib.open(spec, create=True, shape=[4, 4], chunk_layout=layout, context=ctx, **kw)
        old = old.result() if lib is ts else old
        old[...] = 7
        np.asarray(old.view.read().result() if lib is zarrkit else old.read().result())
        new = lib.open(spec, create=True, delete_existing=True, shape=[4, 4], context=ctx,
                       dtype=getattr(ts, dtype) if lib is ts else dtype,
                       chunk_layout=lib.ChunkLayout(chunk_shape=chunk))
        new = new.result() if lib is ts else new
        results.append(np.asarray(new.view.read().result() if lib is zarrkit else new.read().result()))
    assert results[1].dtype == results[0].dtype
    assert results[1].tolist() == results[0].tolist() == np.zeros((4, 4)).tolist()


def test_recheck_cached_metadata_refuses_incompatible_metadata(tmp_path):
    """Only the shape may change under an open handle; TensorStore refuses the rest."""
    t = ts.open(_spec(tmp_path / "ts"), create=True, dtype=ts.int32, shape=[4]).result()
    t[...] = 7
    handle = ts.open(_spec(tmp_path / "ts", recheck_cached_metadata=True)).result()
    ts.open(_spec(tmp_path / "ts"), create=True, delete_existing=True, dtype=ts.float64,
            shape=[6]).result()
    with pytest.raises(ValueError, match="incompatible"):
        handle.read().result()

    zarrkit.open(_spec(tmp_path / "zk"), create=True, dtype="int32", shape=[4])[...] = 7
    a = zarrkit.open(_spec(tmp_path / "zk"), recheck_cached_metadata=True)
    zarrkit.open(_spec(tmp_path / "zk"), create=True, delete_existing=True, dtype="float64",
                 shape=[6])
    with pytest.raises(zarrkit.MetadataError, match="incompatibly"):
        a[...]
    assert a.dtype == np.int32 and a.shape == (4,)  # the handle still describes what it opened


@pytest.mark.parametrize("members", [
    {"cache_pool": "cache_pool#a", "context": {"cache_pool#a": {"total_bytes_limit": 1000}}},
    {"cache_pool": {"total_bytes_limit": 1000}},
    {"data_copy_concurrency": {"limit": 2}},
])
def test_spec_retaining_the_context_keeps_the_resource_members(tmp_path, members):
    ts.open(_spec(tmp_path), create=True, dtype=ts.int32, shape=[4]).result()
    expected = ts.open(_spec(tmp_path, **members)).result().spec(retain_context=True).to_json()
    a = zarrkit.open(_spec(tmp_path, **members), recheck_cached_data=False)
    got = a.spec(retain_context=True).to_json()
    for name in ("cache_pool", "data_copy_concurrency"):
        assert got.get(name) == expected.get(name)
    assert "cache_pool" not in a.spec().to_json()  # as TensorStore: only with the context
    if "cache_pool" in members:  # reopened and unpickled handles use such a pool again
        for copy in (zarrkit.open(got), pickle.loads(pickle.dumps(a))):
            assert copy._engine.cache is not None
            assert copy._engine.cache.cache.total_bytes_limit == 1000


def test_a_pickled_handle_keeps_assume_metadata(tmp_path):
    t = ts.open(_spec(tmp_path), assume_metadata=True, dtype=ts.int16, shape=[6]).result()
    t2 = pickle.loads(pickle.dumps(t))
    with pytest.raises(ValueError, match="assume_metadata"):
        t2.resize(exclusive_max=[8]).result()
    a = zarrkit.open(_spec(tmp_path), assume_metadata=True, dtype="int16", shape=[6])
    b = pickle.loads(pickle.dumps(a))
    assert b.spec().to_json()["assume_metadata"] is True
    with pytest.raises(zarrkit.NotSupportedError, match="assume_metadata"):
        b.resize(exclusive_max=[8])


@pytest.mark.parametrize("kw", [{"read": True}, {"read": True, "write": True}, {}])
def test_read_alone_opens_read_only(tmp_path, kw):
    ts.open(_spec(tmp_path), create=True, dtype=ts.int32, shape=[4]).result()
    assert ts.open(_spec(tmp_path), **kw).result().writable == (not kw.get("read") or
                                                                  kw.get("write", False))
    a = zarrkit.open(_spec(tmp_path), **kw)
    assert a.read_only == (not ts.open(_spec(tmp_path), **kw).result().writable)


def test_modes_w_and_w_minus_create_from_a_spec(tmp_path):
    """Documented: "w" creates, replacing what exists; "w-" creates, failing if it exists."""
    zarrkit.open(_spec(tmp_path), create=True, dtype="int32", shape=[4])[...] = 3
    a = zarrkit.open(_spec(tmp_path), "w", dtype="uint8", shape=[2])
    assert a.dtype == np.uint8 and a[...].tolist() == [0, 0]
    assert ts.open(_spec(tmp_path)).result().dtype == ts.uint8
    with pytest.raises(zarrkit.NodeExistsError):
        zarrkit.open(_spec(tmp_path), "w-", dtype="uint8", shape=[2])


@pytest.mark.parametrize("context,ok", [
    ({"cache_pool": {"total_bytes_limit": 10.0}}, True),
    ({"data_copy_concurrency": {"limit": 1.0}}, True),
    ({"cache_pool": "data_copy_concurrency"}, False),
])
def test_context_json_like_tensorstore(tmp_path, context, ok):
    ts.open(_spec(tmp_path), create=True, dtype=ts.int32, shape=[4]).result()
    if ok:
        ts.open(_spec(tmp_path), context=ts.Context(context)).result()
        assert zarrkit.open(_spec(tmp_path), context=context)[...].tolist() == [0] * 4
        return
    with pytest.raises(ValueError):
        ts.open(_spec(tmp_path), context=ts.Context(context)).result()
    with pytest.raises(zarrkit.SpecError, match="another kind"):
        zarrkit.open(_spec(tmp_path), context=context)


def test_null_resource_member_is_refused(tmp_path):
    ts.open(_spec(tmp_path), create=True, dtype=ts.int32, shape=[4]).result()
    with pytest.raises(ValueError):
        ts.open(_spec(tmp_path, cache_pool=None)).result()
    with pytest.raises(zarrkit.SpecError, match="cache_pool"):
        zarrkit.open(_spec(tmp_path, cache_pool=None))

"""Contexts: a cache pool of decoded chunks, used only when its total_bytes_limit is non-zero
and recheck_cached_data allows it; writes through the pool invalidate; resources are shared
by name within a context."""

from __future__ import annotations

import time

import numpy as np
import pytest

import zarrkit

POOL = {"cache_pool": {"total_bytes_limit": 1 << 20}}


def _spec(tmp_path, **members) -> dict:
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)}, **members}


def _create(tmp_path, sharded: bool = False) -> None:
    layout = zarrkit.ChunkLayout(read_chunk_shape=[2, 2], write_chunk_shape=[4, 4]) \
        if sharded else zarrkit.ChunkLayout(chunk_shape=[2, 2])
    a = zarrkit.open(_spec(tmp_path), create=True, dtype="int32", shape=[4, 4],
                     chunk_layout=layout)
    a[...] = 1


def _outside_write(tmp_path, value: int) -> None:
    """Another handle, without the pool: the cached array cannot know of this write."""
    zarrkit.open(_spec(tmp_path))[...] = value


@pytest.mark.parametrize("sharded", [False, True])
def test_cached_data_is_served_when_recheck_allows(tmp_path, sharded):
    _create(tmp_path, sharded)
    a = zarrkit.open(_spec(tmp_path), context=POOL, recheck_cached_data=False)
    assert (a[...] == 1).all()
    _outside_write(tmp_path, 2)
    assert (a[...] == 1).all()  # served from the pool
    a[0, 0] = 3  # a write through the pool invalidates what it touches (a whole shard)
    assert a[0, 0] == 3 and a[0, 1] == 2
    assert (a[2:, 2:] == (2 if sharded else 1)).all()


def test_default_recheck_always_revalidates(tmp_path):
    _create(tmp_path)
    a = zarrkit.open(_spec(tmp_path), context=POOL)
    assert (a[...] == 1).all()
    _outside_write(tmp_path, 2)
    assert (a[...] == 2).all()


def test_no_pool_no_cache(tmp_path):
    _create(tmp_path)
    a = zarrkit.open(_spec(tmp_path), recheck_cached_data=False)
    assert a._engine.cache is None
    a[...]
    _outside_write(tmp_path, 2)
    assert (a[...] == 2).all()
    zero = zarrkit.open(_spec(tmp_path), context={"cache_pool": {"total_bytes_limit": 0}},
                        recheck_cached_data=False)
    assert zero._engine.cache is None


def test_recheck_open_and_time_bounds(tmp_path):
    _create(tmp_path)
    ctx = zarrkit.Context(POOL)
    first = zarrkit.open(_spec(tmp_path), context=ctx, recheck_cached_data=False)
    first[...]  # cached now, before the next open
    _outside_write(tmp_path, 2)
    time.sleep(0.01)
    second = zarrkit.open(_spec(tmp_path), context=ctx, recheck_cached_data="open")
    assert (second[...] == 2).all()  # older than the open: revalidated
    _outside_write(tmp_path, 3)
    assert (second[...] == 2).all()  # cached after the open: served
    later = zarrkit.open(_spec(tmp_path), context=ctx, recheck_cached_data=time.time() + 60)
    assert (later[...] == 3).all()
    earlier = zarrkit.open(_spec(tmp_path), context=ctx, recheck_cached_data=0)
    _outside_write(tmp_path, 4)
    assert (earlier[...] == 3).all()


def test_shared_pool_writes_invalidate_other_handles(tmp_path):
    _create(tmp_path)
    ctx = zarrkit.Context(POOL)
    a = zarrkit.open(_spec(tmp_path), context=ctx, recheck_cached_data=False)
    b = zarrkit.open(_spec(tmp_path), context=ctx, recheck_cached_data=False)
    assert (a[...] == 1).all() and (b[...] == 1).all()
    b[...] = 5
    assert (a[...] == 5).all()
    separate = zarrkit.open(_spec(tmp_path), context=POOL, recheck_cached_data=False)
    assert separate._engine.cache.cache is not a._engine.cache.cache


def test_pool_is_bounded_and_evicts(tmp_path):
    _create(tmp_path)
    a = zarrkit.open(_spec(tmp_path), context={"cache_pool": {"total_bytes_limit": 40}},
                     recheck_cached_data=False)
    a[...]
    cache = a._engine.cache.cache
    assert cache.nbytes <= 40 and len(cache) == 2  # four 16-byte chunks; two fit


def test_resize_drops_cached_chunks(tmp_path):
    _create(tmp_path)
    a = zarrkit.open(_spec(tmp_path), context=POOL, recheck_cached_data=False)
    a[...]
    a.resize(exclusive_max=[2, 2])
    a.resize(exclusive_max=[4, 4])
    assert (a[2:, :] == 0).all()


def test_named_resources_and_spec_members(tmp_path):
    _create(tmp_path)
    ctx = zarrkit.Context({"cache_pool#big": {"total_bytes_limit": 1 << 20},
                           "cache_pool": "cache_pool#big"})
    a = zarrkit.open(_spec(tmp_path, cache_pool="cache_pool#big"), context=ctx,
                     recheck_cached_data=False)
    b = zarrkit.open(_spec(tmp_path), context=ctx, recheck_cached_data=False)
    assert a._engine.cache.cache is b._engine.cache.cache
    inline = zarrkit.open(_spec(tmp_path, context=POOL, recheck_cached_data=False,
                                data_copy_concurrency={"limit": 2}))
    assert inline._engine.cache is not None
    for bad in ({"cache_pool": {"total_bytes_limit": -1}}, {"cache_pool": {"size": 1}},
                {"nonsense": {}}, {"data_copy_concurrency": {"limit": 0}}):
        with pytest.raises(zarrkit.SpecError):
            zarrkit.open(_spec(tmp_path), context=bad)
    with pytest.raises(zarrkit.SpecError, match="recheck_cached_data"):
        zarrkit.open(_spec(tmp_path), recheck_cached_data="sometimes")


def test_recheck_cached_metadata_follows_resizes_in_views(tmp_path):
    _create(tmp_path)
    a = zarrkit.open(_spec(tmp_path), recheck_cached_metadata=True)
    view = a.view
    zarrkit.open(_spec(tmp_path)).resize(2, 4)
    # Its bounds are implicit: a read follows the new shape (as TensorStore's does).
    assert view.read().result().shape == (2, 4)
    assert a.shape == (2, 4)
    assert np.asarray(a.view).shape == (2, 4)


def _ts_reads_after_resize(tmp_path, bound):
    """What TensorStore reads through a handle opened with `bound` after another handle
    grows the array from 4 to 6 elements."""
    import tensorstore as ts

    spec = _spec(tmp_path / "ts")
    first = ts.open(spec, create=True, dtype=ts.int32, shape=[4]).result()
    first[...] = 1
    handle = ts.open({**spec, "recheck_cached_metadata": bound}, context=ts.Context()).result()
    handle.read().result()
    other = ts.open(spec, context=ts.Context()).result()
    other.resize(exclusive_max=[6]).result()
    other[4:] = 5
    return handle.read().result()


@pytest.mark.parametrize("bound", [True, False, "open", "future", "past"])
def test_recheck_cached_metadata_applies_to_plain_reads(tmp_path, bound):
    bound = {"future": time.time() + 60, "past": time.time() - 60}.get(bound, bound)
    expected = _ts_reads_after_resize(tmp_path, bound)
    spec = _spec(tmp_path / "zk")
    first = zarrkit.open(spec, create=True, dtype="int32", shape=[4])
    first[...] = 1
    a = zarrkit.open(spec, recheck_cached_metadata=bound)
    a[...]
    zarrkit.open(spec).resize(6)
    zarrkit.open(spec)[4:] = 5
    assert a[...].tolist() == expected.tolist()
    assert a.oindex[[0, -1]].tolist() == expected[[0, -1]].tolist()
    assert a.shape == expected.shape


def test_time_bound_stops_rechecking_once_passed(tmp_path):
    _create(tmp_path)
    a = zarrkit.open(_spec(tmp_path), recheck_cached_metadata=time.time() + 0.05)
    assert a._rechecks_metadata
    time.sleep(0.06)
    a[0, 0]  # reads the metadata once more (it was read before the bound) ...
    # ... and then never again (reads still look at the context's shared metadata)
    assert not a._open_state.metadata_stale()
    zarrkit.open(_spec(tmp_path)).resize(2, 2)  # another context: not shared
    assert a[...].shape == (4, 4)
    assert not zarrkit.open(_spec(tmp_path))._open_state.metadata_stale()  # "open": never

"""TensorStore code ported to zarrkit: the same small programs run with `tensorstore` and with
`zarrkit` (only `ts` replaced by `zarrkit`), the results compared; the futures' members, the
awaitable parts under asyncio, and the errors a port meets."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest
from _spec_helpers import with_each_library

import zarrkit
from zarrkit.errors import DataTypeError, ReadOnlyError, SelectionError, ZarrkitError

ts = pytest.importorskip("tensorstore")

LIBS = [ts, zarrkit]
Q = {"query_not_stored": True, "query_fully_stored": True}


def _spec(root, name):
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": f"{root}/{name}/"}}


def _stats(s):
    return s.not_stored, s.fully_stored


# -- the same program with either library -----------------------------------------------------


def _create_write_read(lib, root):
    t = lib.open(_spec(root, "a"), create=True, dtype="int16", shape=[4, 6],
                 chunk_layout=lib.ChunkLayout(read_chunk_shape=[2, 3])).result()
    w = t.write(np.arange(24, dtype=np.int16).reshape(4, 6))
    w.result()
    t[lib.d[0][1:3]].write(np.full((2, 6), -1, np.int16)).result()
    t.translate_to[10, 20].T[lib.d[0][20:23]].write(np.int16(7)).result()
    return {"data": t.read().result(), "array": np.asarray(t), "mode": t.mode,
            "readable": t.readable, "writable": t.writable, "rank": t.rank, "ndim": t.ndim,
            "shape": tuple(t.shape), "origin": tuple(t.origin), "domain": t.domain.to_json(),
            "dtype_int16": t.dtype == np.int16, "dtype_name": t.dtype.name,
            "fill": int(np.asarray(t.fill_value)), "units": tuple(t.dimension_units),
            "url": t.url.replace(root, "ROOT"), "kvstore_path": _path(t.kvstore).replace(root, "R"),
            "view_kvstore_path": _path(t[lib.d[0][1:2]].kvstore).replace(root, "R"),
            "codec": t.codec.to_json(), "w_done": (w.done(), w.copy.done(), w.commit.done())}


def _path(kvstore):
    return kvstore["path"] if isinstance(kvstore, dict) else kvstore.path


def test_create_write_read_program_matches_tensorstore(tmp_path):
    expected, actual = with_each_library(_create_write_read, tmp_path)
    assert actual.keys() == expected.keys()
    for key in expected:
        e, a = expected[key], actual[key]
        if isinstance(e, np.ndarray):
            np.testing.assert_array_equal(a, e)
            assert a.dtype == e.dtype, key
        else:
            assert a == e, key


def test_each_library_reads_what_the_other_wrote(tmp_path):
    spec = _spec(tmp_path, "x")
    t = ts.open(spec, create=True, dtype="float32", shape=[5, 4],
                chunk_layout=ts.ChunkLayout(read_chunk_shape=[2, 2])).result()
    t.write(np.arange(20, dtype=np.float32).reshape(5, 4)).result()
    z = zarrkit.open(spec).result()
    np.testing.assert_array_equal(z.read().result(), t.read().result())
    z[zarrkit.d[1][1:3]].write(np.float32(-2)).result()
    z.T[zarrkit.d[0][3]].write(np.arange(5, dtype=np.float32)).result()
    again = ts.open(spec).result().read().result()
    np.testing.assert_array_equal(again, z.read().result())
    assert again[:, 3].tolist() == list(range(5)) and (again[:, 1:3] == -2).all()


def test_array_read_and_write_return_futures_like_views(tmp_path):
    a = zarrkit.open(_spec(tmp_path, "a"), create=True, dtype="uint8", shape=[3])
    w = a.write([1, 2, 3])
    assert isinstance(w, type(a.view.write([1, 2, 3])))
    assert w.result() is None and w.commit is w and w.copy.result() is None
    r = a.read()
    assert type(r) is type(a.view.read()) and r.result().tolist() == [1, 2, 3]
    assert a[1:] .tolist() == [2, 3]  # indexing stays eager numpy
    assert np.asarray(a).tolist() == [1, 2, 3]


def test_the_source_may_be_reused_once_write_returns(tmp_path):
    a = zarrkit.open(_spec(tmp_path, "a"), create=True, dtype="int32", shape=[1000])
    source = np.arange(1000, dtype=np.int32)
    w = a.write(source)
    assert w.copy.done()  # as TensorStore's copy future: the source was copied
    source[:] = -1
    w.commit.result()
    assert a.read().result().tolist() == list(range(1000))


# -- mode, readable, writable -----------------------------------------------------------------


def _modes(lib, root):
    lib.open(_spec(root, "m"), create=True, dtype="int8", shape=[2]).result()
    r = lib.open(_spec(root, "m"), read=True).result()
    c = lib.cast(r, "float32")
    return [(x.mode, x.readable, x.writable) for x in (r, r[lib.d[0][1:]], c, r.T)]


def test_mode_readable_writable_match_tensorstore(tmp_path):
    expected, actual = with_each_library(_modes, tmp_path)
    assert actual == expected


def test_read_only_writes_fail_with_readonly_error(tmp_path):
    zarrkit.open(_spec(tmp_path, "m"), create=True, dtype="int8", shape=[2])
    for lib, error in ((ts, ValueError), (zarrkit, ReadOnlyError)):
        r = lib.open(_spec(tmp_path, "m"), read=True).result()
        with pytest.raises(error) as info:
            r.write(np.int8(1)).result()
        assert "read" in str(info.value).lower() or "writ" in str(info.value).lower()
    with pytest.raises(ReadOnlyError, match="read-only"):
        zarrkit.open(_spec(tmp_path, "m"), read=True).result().write(np.int8(1)).result()


def test_write_of_the_wrong_shape_fails_with_a_zarrkit_error(tmp_path):
    spec = _spec(tmp_path, "s")
    t = ts.open(spec, create=True, dtype="int16", shape=[4, 6]).result()
    z = zarrkit.open(spec).result()
    with pytest.raises(ValueError):
        t.write(np.ones((3, 3), np.int16)).result()
    with pytest.raises(SelectionError, match=r"shape \(3, 3\).*shape \(4, 6\)"):
        z.write(np.ones((3, 3), np.int16)).result()
    with pytest.raises(TypeError):  # TensorStore: not a safe cast
        t.write(np.ones((4, 6), np.float64))
    with pytest.raises(DataTypeError, match="float64"):
        z.write(np.ones((4, 6), np.float64))


# -- storage_statistics -----------------------------------------------------------------------


def _statistics(lib, root, sharded):
    layout = lib.ChunkLayout(read_chunk_shape=[2, 2], write_chunk_shape=[4, 4] if sharded
                             else [2, 2])
    t = lib.open(_spec(root, "st"), create=True, dtype="int16", shape=[8, 6],
                 chunk_layout=layout).result()
    d = lib.d
    views = {"all": t, "empty": t[d[0][0:0]], "block": t[d[0][0:2]][d[1][0:2]],
             "strided": t[d[0][::4]], "points": t[d[0][[0, 4]]], "diagonal": t[d[0, 1].diagonal],
             "implicit": t[d[0, 1].mark_bounds_implicit[:]],
             "cast": lib.cast(t, "float32")[d[0][1:3]], "transposed": t.T[d[0][3:5]]}
    out = [{k: _stats(v.storage_statistics(**Q).result()) for k, v in views.items()}]
    # a point, then rows 0 and 4 (all the strided view's chunks), the diagonal, a corner
    for region in (d[0, 1][0, 0], d[0][[0, 4]], d[0, 1].diagonal, d[0, 1][7, 5]):
        t[region].write(np.int16(1)).result()
        out.append({k: _stats(v.storage_statistics(**Q).result()) for k, v in views.items()})
    t.write(np.int16(3)).result()
    out.append({k: _stats(v.storage_statistics(**Q).result()) for k, v in views.items()})
    one = [_stats(t.storage_statistics(query_not_stored=True).result()),
           _stats(t.storage_statistics(query_fully_stored=True).result()),
           _stats(t.storage_statistics().result())]
    return out, one


@pytest.mark.parametrize("sharded", [False, True])
def test_storage_statistics_match_tensorstore(tmp_path, sharded):
    expected, actual = with_each_library(_statistics, tmp_path, sharded)
    assert actual == expected


@pytest.mark.parametrize("shard", [None, [1000, 1000]])
def test_storage_statistics_of_a_large_sparse_grid_list_the_store(tmp_path, shard):
    # 10**8 chunks (10**6 shards): counted from the listing, not by asking for each key.
    for lib in LIBS:
        layout = lib.ChunkLayout(read_chunk_shape=[100, 100], write_chunk_shape=shard or [100, 100])
        t = lib.open(_spec(tmp_path, lib.__name__), create=True, dtype="uint8",
                     shape=[10**6, 10**6], chunk_layout=layout).result()
        assert _stats(t.storage_statistics(**Q).result()) == (True, False)
        t[lib.d[0, 1][123456, 654321]].write(np.uint8(9)).result()
        assert _stats(t.storage_statistics(**Q).result()) == (False, False)
        assert _stats(t[lib.d[0, 1][123400:123500, 654300:654400]].storage_statistics(
            **Q).result()) == (False, True)


def test_storage_statistics_of_a_zarr_v2_array(tmp_path):
    spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": f"{tmp_path}/v2/"}}
    z = zarrkit.open(spec, create=True, dtype="int32", shape=[6],
                     chunk_layout=zarrkit.ChunkLayout(read_chunk_shape=[2]))
    z[zarrkit.d[0][2:4]].write(np.int32(5)).result()
    t = ts.open(spec).result()
    for x, y in ((t, z), (t[1:3], z.view[1:3]), (t[2:4], z.view[2:4])):
        assert _stats(y.storage_statistics(**Q).result()) == _stats(
            x.storage_statistics(**Q).result())


# -- resolve ----------------------------------------------------------------------------------


@pytest.mark.parametrize("recheck", ["open", True])
def test_resolve_follows_a_resize_as_recheck_cached_metadata_says(tmp_path, recheck):
    spec = {**_spec(tmp_path, "r"), "recheck_cached_metadata": recheck}
    t = ts.open(spec, create=True, dtype="int16", shape=[4, 6]).result()
    z = zarrkit.open(spec).result()
    zv, tv = z[zarrkit.d[0][1:3]], t[ts.d[0][1:3]]
    ts.open(spec).result().resize(exclusive_max=[9, 7]).result()
    assert z.resolve().result().domain.to_json() == t.resolve().result().domain.to_json()
    assert zv.resolve().result().domain.to_json() == tv.resolve().result().domain.to_json()
    for x, y in ((z, t), (zv, tv)):
        fixed = x.resolve(fix_resizable_bounds=True).result()
        assert fixed.domain.to_json() == \
            y.resolve(fix_resizable_bounds=True).result().domain.to_json()
    assert z.resolve().result().shape == ((9, 7) if recheck is True else (4, 6))


def test_resolve_of_an_array_opened_by_path_reads_the_shape(tmp_path):
    a = zarrkit.open(str(tmp_path / "p"), mode="w", shape=(4,), dtype="int8")
    zarrkit.open(str(tmp_path / "p")).resize(7)
    assert a.resolve().result() is a and a.shape == (7,)
    assert a.view[zarrkit.d[0][1:]].resolve().result().domain.to_json() == \
        {"inclusive_min": [1], "exclusive_max": [[7]]}


# -- futures ----------------------------------------------------------------------------------


def _future_members(lib, root):
    t = lib.open(_spec(root, "f"), create=True, dtype="int32", shape=[3]).result()
    seen = []
    f = t.write(np.int32(4))
    f.result(timeout=10)
    f.add_done_callback(lambda g: seen.append(g.result()))
    r = t.read()
    value = r.result(timeout=10, deadline=time.time() + 10).tolist()
    r.force()
    return {"value": value, "done": r.done(), "exc": r.exception(), "cancelled": r.cancelled(),
            "cancel_done": r.cancel(), "callback": seen, "removed": f.remove_done_callback(print)}


def test_future_members_match_tensorstore(tmp_path):
    expected, actual = with_each_library(_future_members, tmp_path)
    assert actual == expected


def test_failed_future_reports_its_exception(tmp_path):
    z = zarrkit.open(_spec(tmp_path, "e"), create=True, dtype="int32", shape=[3])
    f = z.write(np.ones(4, np.int32))
    assert isinstance(f.exception(timeout=10), SelectionError)
    with pytest.raises(SelectionError):
        f.result()


def test_result_timeout_and_deadline_raise_timeout_error():
    from zarrkit.spec.futures import ViewFuture

    f = ViewFuture()
    with pytest.raises(TimeoutError):
        f.result(timeout=0.01)
    with pytest.raises(TimeoutError):
        f.exception(deadline=time.time() + 0.01)
    calls = []
    f.add_done_callback(calls.append)
    f.add_done_callback(calls.append)
    assert f.remove_done_callback(calls.append) == 2
    start = time.monotonic()
    with pytest.raises(TimeoutError):  # the sooner of the two
        f.result(timeout=30, deadline=time.time() + 0.05)
    assert time.monotonic() - start < 10
    threading.Timer(0.01, f.set_result, [5]).start()
    assert f.result(deadline=time.time() + 30) == 5
    assert calls == []  # removed before it completed


def test_cancel_before_it_runs(tmp_path):
    from zarrkit.spec import view as view_module

    z = zarrkit.open(_spec(tmp_path, "c"), create=True, dtype="int32", shape=[3])
    gate = threading.Event()
    blockers = [view_module._submit(gate.wait) for _ in range(8)]  # fill the pool
    f = z.read()
    assert f.cancel() and f.cancelled() and f.done()
    gate.set()
    for b in blockers:
        b.result(timeout=10)


# -- open is also its completed future ---------------------------------------------------------


def test_open_result_is_the_array_and_a_completed_future(tmp_path):
    spec = _spec(tmp_path, "o")
    a = zarrkit.open(spec, create=True, dtype="int16", shape=[2])
    assert isinstance(a, zarrkit.Array) and a.result() is a and a.result(timeout=1) is a
    assert a.done() and a.exception() is None and not a.cancelled() and not a.cancel()
    calls = []
    a.add_done_callback(calls.append)
    assert calls == [a] and a.remove_done_callback(calls.append) == 0
    v = zarrkit.open({**spec, "transform": {"input_exclusive_max": [1]}})
    assert isinstance(v, zarrkit.View) and v.result() is v
    c = zarrkit.cast(a, "float32")
    assert c.result() is c  # TensorStore's cast is synchronous: its result is the view
    a[:] = [1, 2]  # still the eager array
    assert a[...].tolist() == [1, 2]


def test_open_errors_are_zarrkit_errors(tmp_path):
    with pytest.raises(ZarrkitError, match="create is false"):
        zarrkit.open(_spec(tmp_path, "missing")).result()


# -- asyncio ------------------------------------------------------------------------------------


async def _async_program(lib, root):
    t = await lib.open(_spec(root, "aio"), create=True, dtype="int32", shape=[2, 3])
    await t.write(np.arange(6, dtype=np.int32).reshape(2, 3))
    await t[lib.d[1][1:]].write(np.int32(-1))
    data = await t.read()
    view = await t.T.read()
    stats = await t.storage_statistics(query_not_stored=True)
    again = await lib.open(_spec(root, "aio"))
    both = await asyncio.gather(again.read(), t[lib.d[0][1]].read())
    resolved = await t.resolve()
    return data, view, stats.not_stored, both[0], both[1], resolved.domain.to_json()


def test_async_program_matches_tensorstore(tmp_path):
    expected, actual = with_each_library(lambda lib, root: asyncio.run(_async_program(lib, root)), tmp_path)
    for e, a in zip(expected, actual, strict=True):
        if isinstance(e, np.ndarray):
            np.testing.assert_array_equal(a, e)
        else:
            assert a == e


def test_awaiting_a_failed_write_raises_the_zarrkit_error(tmp_path):
    z = zarrkit.open(_spec(tmp_path, "aw"), create=True, dtype="int32", shape=[3])

    async def main():
        await (await zarrkit.open(_spec(tmp_path, "aw"))).write(np.ones(5, np.int32))

    with pytest.raises(SelectionError):
        asyncio.run(main())
    assert z.read().result().tolist() == [0, 0, 0]


# -- what a port meets: the kvstore, the URL and the data type ------------------------------


def test_kvstore_is_the_array_directory_spec(tmp_path):
    spec = _spec(tmp_path, "k")
    t = ts.open(spec, create=True, dtype="int8", shape=[2]).result()
    z = zarrkit.open(spec).result()
    expected = t.kvstore.spec().to_json()
    assert z.kvstore == {"driver": expected["driver"], "path": expected["path"]}
    assert z.view.kvstore == z.kvstore and zarrkit.open(z.kvstore, mode="r").shape == (2,)


def test_url_matches_tensorstore():
    spec = {"driver": "zarr3", "kvstore": {"driver": "memory", "path": "a/"}}
    t = ts.open(spec, create=True, dtype="int8", shape=[2]).result()
    z = zarrkit.open(spec, create=True, dtype="int8", shape=[2])
    assert z.url == t.url and z.view.url == t.url
    assert zarrkit.cast(z, "float32").url == ts.cast(t, "float32").url


def test_dtype_stays_numpys_and_equals_tensorstores(tmp_path):
    spec = _spec(tmp_path, "dt")
    t = ts.open(spec, create=True, dtype="bfloat16", shape=[2]).result()
    z = zarrkit.open(spec).result()
    assert isinstance(z.dtype, np.dtype) and z.dtype == t.dtype.numpy_dtype
    assert z.dtype.name == t.dtype.name and z.view.dtype == t.dtype.numpy_dtype
    assert z.StorageStatistics is zarrkit.View.StorageStatistics


# -- the members, side by side ----------------------------------------------------------------

def test_every_tensorstore_member_exists(tmp_path):
    a = zarrkit.open(_spec(tmp_path, "m"), create=True, dtype="int8", shape=[2])
    members = {n for n in dir(ts.TensorStore) if not n.startswith("_")}
    members |= {"__array__", "__getitem__", "__setitem__"}
    assert {"transaction", "with_transaction"} <= members  # (tests/test_ts_transactions.py)
    assert {n for n in members if not hasattr(a.view, n)} == set()
    # An array's `base` would be None in TensorStore; numpy-like code reads `base` of views.
    assert {n for n in members if not hasattr(a, n)} == {"base"}


def test_future_members_exist(tmp_path):
    a = zarrkit.open(_spec(tmp_path, "m"), create=True, dtype="int8", shape=[2])
    future_members = {n for n in dir(ts.Future) if not n.startswith("_")} | {"__await__"}
    for obj in (a.read(), a.storage_statistics(), a.resolve(), a, a.view, a.write(1)):
        assert {n for n in future_members if not hasattr(obj, n)} == set()
    write_members = {n for n in dir(ts.WriteFutures) if not n.startswith("_")}
    assert {n for n in write_members if not hasattr(a.write(1), n)} == set()

"""TensorStore's transactions ported to zarrkit: the same programs run with `tensorstore` and
with `zarrkit` (`ts` replaced by `zarrkit`), their observations compared; data committed by one
library read by the other; what a commit does when another writer changed a chunk it read."""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest
from _spec_helpers import with_each_library

import zarrkit
from zarrkit.errors import TransactionError, ZarrkitError
from zarrkit.kvstore import FileStore

ts = pytest.importorskip("tensorstore")

LIBS = [ts, zarrkit]


def _spec(root, name, driver="zarr3", kvstore="file"):
    return {"driver": driver, "kvstore": {"driver": kvstore, "path": f"{root}/{name}/"}}


def _try(fn):
    """What `fn()` gives: its value (arrays as lists), or "error" for TensorStore's ValueError
    and zarrkit's errors (a TransactionError where TensorStore refuses a transaction's use)."""
    try:
        value = fn()
    except (ValueError, ZarrkitError) as e:
        if isinstance(e, ZarrkitError) and "ransaction" in str(e):
            assert isinstance(e, TransactionError), e
        return "error"
    return value.tolist() if isinstance(value, np.ndarray) else value


def _grid(lib, root, name="a", kvstore="file", context=None, **kw):
    """A 4x6 int32 array of 2x3 chunks."""
    return lib.open(_spec(root, name, kvstore=kvstore), create=True, dtype="int32",
                    shape=[4, 6], chunk_layout=lib.ChunkLayout(chunk_shape=[2, 3]),
                    context=context or lib.Context(), **kw).result()


def _state(t):
    """open, aborted, commit_started, and whether the future is settled: once the transaction
    is not open, waited for (TensorStore's settles a moment after an abort, on its threads)."""
    settled = t.future.done()
    if not t.open and not settled:
        t.future.exception(timeout=10)
        settled = t.future.done()
    return t.open, t.aborted, t.commit_started, settled


# -- the Transaction object ----------------------------------------------------------------------


def test_transaction_has_tensorstore_members():
    public = {n for n in dir(ts.Transaction) if not n.startswith("_")}
    assert {n for n in public if not hasattr(zarrkit.Transaction, n)} == set()
    for name in ("__enter__", "__exit__", "__aenter__", "__aexit__"):
        assert hasattr(zarrkit.Transaction, name)
    for lib in LIBS:
        t = lib.Transaction()
        assert (t.atomic, *_state(t)) == (False, True, False, False, False)
        assert lib.Transaction(atomic=True).atomic and lib.Transaction(True).atomic
        assert not lib.Transaction(repeatable_read=True).atomic


def _lifecycle(lib, root):
    out = {}
    t = lib.Transaction()
    out["commit"] = _try(lambda: t.commit_async().result())
    out["after_commit"] = _state(t)
    again = t.commit_async()  # no further effect
    out["again"] = (_try(again.result), _try(t.commit_sync), _state(t))
    t.abort()  # no effect once the commit started
    out["abort_after_commit"] = _state(t)
    u = lib.Transaction()
    u.abort()
    out["aborted"] = _state(u)
    out["aborted_future"] = _try(u.future.result)
    out["commit_after_abort"] = _try(u.commit_sync)
    out["commit_async_after_abort"] = _try(lambda: u.commit_async().result())
    return out


def test_commit_abort_and_their_repeats_match_tensorstore(tmp_path):
    expected, actual = with_each_library(_lifecycle, tmp_path)
    assert actual == expected
    assert expected["aborted_future"] == "error"


def test_bad_arguments_are_zarrkit_errors(tmp_path):
    a = _grid(zarrkit, tmp_path)
    with pytest.raises(TransactionError, match="Transaction or None, got str"):
        a.with_transaction("txn")
    with pytest.raises(TransactionError, match="atomic must be True or False"):
        zarrkit.Transaction(atomic="yes")
    with pytest.raises(TransactionError, match="transaction must be a zarrkit.Transaction"):
        zarrkit.open(_spec(tmp_path, "a"), transaction=object())
    t = zarrkit.Transaction()
    assert "open" in repr(t) and "atomic" in repr(zarrkit.Transaction(atomic=True))


# -- isolation, read-your-writes, commit, abort --------------------------------------------------


def _isolated(lib, root):
    d = lib.d
    a = _grid(lib, root)
    t = lib.Transaction()
    b = a.with_transaction(t)
    out = {"unbound": a.transaction, "bound": b.transaction is t}
    b[d[0, 1][1:3, 1:4]].write(5).result()
    b[d[0, 1][0, 0]].write(np.int32(1)).result()
    out["inside"] = b.read().result().tolist()
    out["inside_view"] = a[d[0][1:3]].with_transaction(t).read().result().tolist()
    out["view_bound"] = a[d[0][1:3]].with_transaction(t).transaction is t
    out["outside"] = a.read().result().tolist()
    out["on_disk"] = os.path.exists(f"{root}/a/c")
    out["rebind_same"] = _try(lambda: b.with_transaction(t))
    out["rebind_none"] = _try(lambda: b.with_transaction(None))
    t.commit_sync()
    out["state"] = _state(t)
    out["after"] = a.read().result().tolist()
    out["reopened"] = lib.open(_spec(root, "a")).result().read().result().tolist()
    out["unbound_again"] = b.with_transaction(None).transaction
    for name, op in [("read", lambda: b.read().result()), ("write", lambda: b.write(1).result()),
                     ("resolve", lambda: b.resolve().result()),
                     ("stats", lambda: b.storage_statistics(query_not_stored=True).result()),
                     ("resize", lambda: b.resize(exclusive_max=[5, 6]).result()),
                     ("array", lambda: np.asarray(b)),
                     ("open", lambda: lib.open(_spec(root, "a"), transaction=t).result())]:
        out[f"{name}_after_commit"] = _try(op)
    out["bind_committed"] = a.with_transaction(t).transaction is t
    return out


def test_staged_writes_are_isolated_until_commit_as_in_tensorstore(tmp_path):
    expected, actual = with_each_library(_isolated, tmp_path)
    assert actual == expected
    assert expected["outside"] == np.zeros((4, 6)).tolist() and not expected["on_disk"]
    assert expected["after"][1] == [0, 5, 5, 5, 0, 0] and expected["after"][0][0] == 1
    assert expected["read_after_commit"] == "error" and expected["rebind_none"] == "error"


def _aborted(lib, root):
    d = lib.d
    a = _grid(lib, root)
    t = lib.Transaction()
    b = a.with_transaction(t)
    b[d[0][0]].write(3).result()
    t.abort()
    out = {"state": _state(t), "data": a.read().result().tolist(),
           "stored": sorted(os.listdir(f"{root}/a")) == ["zarr.json"]}
    for name, op in [("read", lambda: b.read().result()), ("write", lambda: b.write(1).result()),
                     ("open", lambda: lib.open(_spec(root, "a"), transaction=t).result()),
                     ("rebind", lambda: b.with_transaction(None)),
                     ("commit", t.commit_sync)]:
        out[name] = _try(op)
    return out


def test_abort_drops_everything_as_in_tensorstore(tmp_path):
    expected, actual = with_each_library(_aborted, tmp_path)
    assert actual == expected
    assert expected["data"] == np.zeros((4, 6)).tolist() and expected["commit"] == "error"


def _context_managers(lib, root):
    d = lib.d
    a = _grid(lib, root)
    out = {}
    with lib.Transaction() as t:
        a.with_transaction(t)[d[0, 1][0, 0]].write(9).result()
        out["inside_block"] = a.read().result()[0, 0].item()
    out["committed"] = (a.read().result()[0, 0].item(), _state(t))
    t = lib.Transaction()
    with pytest.raises(RuntimeError):
        with t:
            a.with_transaction(t)[d[0, 1][0, 0]].write(10).result()
            raise RuntimeError("boom")
    out["aborted"] = (a.read().result()[0, 0].item(), _state(t))

    async def program():
        u = lib.Transaction()
        async with u as entered:
            assert entered is u
            await a.with_transaction(u)[d[0, 1][0, 1]].write(11)
        v = lib.Transaction()
        with pytest.raises(KeyError):
            async with v:
                await a.with_transaction(v)[d[0, 1][0, 2]].write(12)
                raise KeyError("boom")
        return _state(u), _state(v)

    out["async"] = asyncio.run(program())
    out["async_data"] = a.read().result()[0, :3].tolist()
    return out


def test_context_managers_commit_or_abort_as_in_tensorstore(tmp_path):
    expected, actual = with_each_library(_context_managers, tmp_path)
    assert actual == expected
    assert expected["committed"][0] == 9 and expected["aborted"][0] == 9
    assert expected["async_data"] == [9, 11, 0]


def _created(lib, root, driver):
    context = lib.Context()
    t = lib.Transaction()
    c = lib.open(_spec(root, "c", driver), create=True, dtype="int32", shape=[4],
                 transaction=t, context=context).result()
    out = {"bound": c.transaction is t, "on_disk": os.path.exists(f"{root}/c")}
    out["outside_open"] = _try(lambda: lib.open(_spec(root, "c", driver), context=context)
                               .result())
    c.write(np.arange(1, 5, dtype=np.int32)).result()
    out["reopened_inside"] = lib.open(_spec(root, "c", driver), transaction=t,
                                      context=context).result().read().result().tolist()
    t.commit_sync()
    out["after"] = lib.open(_spec(root, "c", driver)).result().read().result().tolist()
    return out


@pytest.mark.parametrize("driver", ["zarr3", "zarr"])
def test_create_in_a_transaction_is_staged_as_in_tensorstore(tmp_path, driver):
    expected, actual = with_each_library(_created, tmp_path, driver)
    assert actual == expected
    assert not expected["on_disk"] and expected["outside_open"] == "error"
    assert expected["after"] == [1, 2, 3, 4]


def _resized(lib, root):
    context = lib.Context()
    a = _grid(lib, root, context=context)
    t = lib.Transaction()
    b = a.with_transaction(t)
    out = {"returned": tuple(b.resize(exclusive_max=[6, 6]).result().shape)}
    out["outside"] = tuple(lib.open(_spec(root, "a"), context=lib.Context()).result().shape)
    out["inside"] = tuple(b.resolve().result().shape)
    out["reopened_inside"] = tuple(lib.open(_spec(root, "a"), transaction=t,
                                            context=context).result().shape)
    t.commit_sync()
    out["after"] = tuple(lib.open(_spec(root, "a")).result().shape)
    out["unbound_resolved"] = tuple(a.resolve().result().shape)
    return out


def test_resize_through_a_bound_view_is_staged_as_in_tensorstore(tmp_path):
    expected, actual = with_each_library(_resized, tmp_path)
    assert actual == expected
    assert expected["outside"] == (4, 6) and expected["after"] == (6, 6)


def _v2(lib, root):
    d = lib.d
    v = lib.open(_spec(root, "v", "zarr"), create=True, dtype="int16", shape=[5, 5],
                 chunk_layout=lib.ChunkLayout(chunk_shape=[2, 2])).result()
    t = lib.Transaction()
    w = v.with_transaction(t)
    w[d[0, 1][1:4, 1:4]].write(7).result()
    out = {"inside": w.read().result().tolist(), "outside": v.read().result().tolist(),
           "stored": sorted(os.listdir(f"{root}/v"))}
    t.commit_sync()
    out["after"] = v.read().result().tolist()
    return out


def test_zarr2_driver_transactions_match_tensorstore(tmp_path):
    expected, actual = with_each_library(_v2, tmp_path)
    assert actual == expected
    assert expected["stored"] == [".zarray"] and np.sum(expected["after"]) == 63


def _sharded(lib, root):
    d = lib.d
    s = lib.open(_spec(root, "s"), create=True, dtype="int32", shape=[8, 8],
                 chunk_layout=lib.ChunkLayout(read_chunk_shape=[2, 2], write_chunk_shape=[4, 4])
                 ).result()
    s.write(np.arange(64, dtype=np.int32).reshape(8, 8)).result()
    t = lib.Transaction()
    w = s.with_transaction(t)
    w[d[0, 1][1, 1:3]].write(-1).result()  # part of two inner chunks of one shard
    out = {"inside": w.read().result()[:2, :4].tolist(),
           "outside": s.read().result()[:2, :4].tolist()}
    s[d[0, 1][3, 3]].write(-2).result()  # another writer, in another inner chunk of the shard
    t.commit_sync()
    out["after"] = s.read().result()[:4, :4].tolist()
    return out


def test_partial_write_to_one_shard_matches_tensorstore(tmp_path):
    expected, actual = with_each_library(_sharded, tmp_path)
    assert actual == expected
    assert expected["after"][1][1:3] == [-1, -1] and expected["after"][3][3] == -2


# -- other writers: a commit keeps their changes -------------------------------------------------


def _conflicts(lib, root):
    d = lib.d
    a = _grid(lib, root)
    out = {}
    # A partial write in the transaction, then another writer in the same chunk.
    t = lib.Transaction()
    b = a.with_transaction(t)
    b[d[0, 1][0, 0]].write(1).result()
    a[d[0, 1][1, 2]].write(2).result()
    out["commit1"] = _try(t.commit_sync)
    out["result1"] = a.read().result()[:2, :3].tolist()
    # Reads through the transaction are not repeatable: they see the other writer.
    t = lib.Transaction()
    b = a.with_transaction(t)
    out["read"] = b[d[0, 1][0:2, 0:3]].read().result().tolist()
    a[d[0, 1][1, 1]].write(5).result()
    out["read_again"] = b[d[0, 1][0:2, 0:3]].read().result().tolist()
    b[d[0, 1][0, 1]].write(6).result()
    out["commit2"] = _try(t.commit_sync)
    out["result2"] = a.read().result()[:2, :3].tolist()
    # A whole chunk written in the transaction replaces the chunk.
    t = lib.Transaction()
    a.with_transaction(t)[d[0, 1][0:2, 0:3]].write(8).result()
    a[d[0, 1][1, 1]].write(9).result()
    out["commit3"] = _try(t.commit_sync)
    out["result3"] = a.read().result()[:2, :3].tolist()
    return out


def test_a_commit_keeps_what_other_writers_changed_as_tensorstore(tmp_path):
    expected, actual = with_each_library(_conflicts, tmp_path)
    assert actual == expected
    assert expected["result1"] == [[1, 0, 0], [0, 0, 2]]
    assert expected["result2"] == [[1, 6, 0], [0, 5, 2]]
    assert expected["result3"] == [[8, 8, 8], [8, 8, 8]]


def test_a_conflicting_commit_that_cannot_be_redone_writes_nothing(tmp_path):
    d = zarrkit.d
    a = _grid(zarrkit, tmp_path)
    t = zarrkit.Transaction()
    b = a.with_transaction(t)
    b[d[0, 1][0, 0]].write(1).result()
    b.attrs["k"] = 1
    a[d[0, 1][1, 2]].write(2).result()  # the chunk the transaction read changes under it
    with pytest.raises(TransactionError, match=r'c/0/0" changed since .* an attribute update '
                                               "cannot be redone"):
        t.commit_sync()
    assert t.commit_started and not t.aborted
    again = zarrkit.open(_spec(tmp_path, "a")).result()
    assert dict(again.attrs) == {}
    assert again.read().result()[:2, :3].tolist() == [[0, 0, 0], [0, 0, 2]]


def test_a_redone_commit_applies_every_write_in_order(tmp_path):
    d = zarrkit.d
    a = _grid(zarrkit, tmp_path)
    t = zarrkit.Transaction()
    b = a.with_transaction(t)
    source = np.array([1, 2, 3], dtype=np.int32)
    b[d[0, 1][0, 0:3]].write(source).result()
    b[0, 1] = 7  # eager numpy-style writes are staged too
    b.oindex[[3], [5]] = 4
    source[:] = -1  # the write copied it
    a[d[0, 1][1, 0]].write(5).result()
    a[d[0, 1][2, 5]].write(6).result()
    t.commit_sync()
    data = a.read().result()
    assert data[0, :3].tolist() == [1, 7, 3] and data[1, 0] == 5
    assert data[2, 5] == 6 and data[3, 5] == 4


def _repeatable(lib, root):
    d = lib.d
    a = _grid(lib, root)
    t = lib.Transaction(repeatable_read=True)
    b = a.with_transaction(t)
    out = {"read": b[d[0, 1][0:2, 0:3]].read().result().tolist()}
    a[d[0, 1][0, 0]].write(5).result()
    out["read_again"] = _try(lambda: b[d[0, 1][0:2, 0:3]].read().result())
    b[d[0, 1][3, 5]].write(1).result()
    out["commit"] = _try(t.commit_sync)
    out["state"] = (t.aborted, t.commit_started)
    out["data"] = a.read().result().tolist()
    return out


def test_repeatable_read_matches_tensorstore(tmp_path):
    expected, actual = with_each_library(_repeatable, tmp_path)
    ts_data, data = expected.pop("data"), actual.pop("data")
    assert actual == expected
    assert expected["read_again"] == "error" and expected["commit"] == "error"
    # TensorStore commits the keys one by one: the one unchanged is written, the other not.
    # zarrkit checks every key before writing any: a failed commit writes nothing.
    assert ts_data[3][5] == 1 and data[3][5] == 0


# -- atomic transactions -------------------------------------------------------------------------


def _atomic(lib, root, kvstore):
    d = lib.d
    context = lib.Context()
    m = _grid(lib, root, "m", kvstore, context)
    out = {}
    t = lib.Transaction(atomic=True)
    b = m.with_transaction(t)
    out["write1"] = _try(lambda: b[d[0, 1][0, 0]].write(1).result())
    out["state1"] = _state(t)
    out["write2"] = _try(lambda: b[d[0, 1][3, 5]].write(1).result())
    out["commit"] = _try(t.commit_sync)
    out["data"] = m.read().result().tolist()

    def assumed(t):
        return lib.open(_spec(root, "m", kvstore=kvstore), transaction=t, context=context,
                        assume_metadata=True, dtype="int32", shape=[4, 6],
                        chunk_layout=lib.ChunkLayout(chunk_shape=[2, 3])).result()

    # With assume_metadata the metadata is not read: one chunk alone can be committed.
    t = lib.Transaction(atomic=True)
    b = assumed(t)
    out["one_chunk"] = (_try(lambda: b[d[0, 1][0, 0]].write(3).result()),
                        _try(lambda: b[d[0, 1][1, 1]].write(3).result()))
    out["other_chunk"] = _try(lambda: b[d[0, 1][3, 5]].write(3).result())
    out["state2"] = _state(t)
    out["commit2"] = _try(t.commit_sync)
    out["data2"] = m.read().result().tolist()
    # A single chunk alone.
    t = lib.Transaction(atomic=True)
    b = assumed(t)
    b[d[0, 1][0:2, 0:3]].write(4).result()
    out["commit3"] = _try(t.commit_sync)
    out["data3"] = m.read().result()[:2, :3].tolist()
    return out


@pytest.mark.parametrize("kvstore", ["file", "memory"])
def test_atomic_transactions_match_tensorstore(tmp_path, kvstore):
    expected, actual = with_each_library(_atomic, tmp_path, kvstore)
    assert actual == expected
    assert expected["data3"] == [[4] * 3] * 2
    if kvstore == "file":  # the chunk and zarr.json: refused at once, the transaction aborted
        assert expected["write1"] == "error" and expected["state1"] == (False, True, False, True)
        assert expected["other_chunk"] == "error" and expected["commit2"] == "error"
        assert expected["data2"] == np.zeros((4, 6)).tolist()
    else:  # the memory store commits several keys as one
        assert expected["commit"] is None and expected["data"][3][5] == 1
        assert expected["data2"][3][5] == 3


def _atomic_v2_and_creation(lib, root):
    d = lib.d
    context = lib.Context()
    spec = _spec(root, "v", "zarr")
    v = lib.open(spec, create=True, dtype="int16", shape=[4, 4],
                 chunk_layout=lib.ChunkLayout(chunk_shape=[2, 2]), context=context).result()
    out = {}
    t = lib.Transaction(atomic=True)
    w = lib.open(spec, transaction=t, context=context).result()  # finding .zarray is no write
    out["v2_write"] = _try(lambda: w[d[0, 1][0, 0]].write(1).result())  # .zarray and 0.0
    t = lib.Transaction(atomic=True)
    w = lib.open(spec, transaction=t, context=context, assume_metadata=True, dtype="int16",
                 shape=[4, 4], chunk_layout=lib.ChunkLayout(chunk_shape=[2, 2])).result()
    out["v2_assumed"] = (_try(lambda: w[d[0, 1][0, 0]].write(1).result()), _try(t.commit_sync))
    out["v2_data"] = v.read().result().tolist()
    memory = {"driver": "zarr3", "kvstore": {"driver": "memory", "path": "x/"}}
    t = lib.Transaction(atomic=True)
    c = lib.open(memory, create=True, dtype="int16", shape=[4, 4], context=context,
                 chunk_layout=lib.ChunkLayout(chunk_shape=[2, 2]), transaction=t).result()
    out["memory_create"] = (_try(lambda: c[d[0, 1][0:3, 0]].write(1).result()),
                            _try(t.commit_sync))
    out["memory_data"] = lib.open(memory, context=context).result().read().result().tolist()
    return out


def test_atomic_v2_and_creation_match_tensorstore(tmp_path):
    expected, actual = with_each_library(_atomic_v2_and_creation, tmp_path)
    assert actual == expected
    assert expected["v2_write"] == "error" and expected["v2_assumed"] == (None, None)
    assert expected["v2_data"][0][0] == 1 and expected["memory_data"][2][0] == 1


def test_the_atomic_refusal_names_both_keys(tmp_path):
    m = _grid(zarrkit, tmp_path, "m")
    t = zarrkit.Transaction(atomic=True)
    b = m.with_transaction(t)
    with pytest.raises(TransactionError, match=r'file ".*/m/zarr.json" and file ".*/m/c/0/0" '
                                               "as one atomic transaction"):
        b.read().result()
    assert t.aborted and not t.open
    with pytest.raises(TransactionError, match="not open \\(aborted\\)"):
        b.write(1).result()
    with pytest.raises(TransactionError, match="as one atomic transaction"):
        t.commit_sync()


# -- with the other library ----------------------------------------------------------------------


def test_a_zarrkit_transaction_is_read_by_tensorstore(tmp_path):
    d = zarrkit.d
    z = _grid(zarrkit, tmp_path)
    t = zarrkit.Transaction()
    b = z.with_transaction(t)
    b[d[0, 1][1:3, 2:5]].write(np.int32(7)).result()
    b.resize(exclusive_max=[5, 6]).result()
    other = ts.open(_spec(tmp_path, "a")).result()
    assert tuple(other.shape) == (4, 6) and not other.read().result().any()
    t.commit_sync()
    other = ts.open(_spec(tmp_path, "a")).result()
    assert tuple(other.shape) == (5, 6)
    assert other.read().result()[1:3, 2:5].tolist() == [[7] * 3] * 2


def test_a_tensorstore_transaction_is_read_by_zarrkit(tmp_path):
    t_array = _grid(ts, tmp_path)
    t = ts.Transaction()
    t_array.with_transaction(t)[ts.d[0, 1][0:3, 1]].write(np.int32(-4)).result()
    z = zarrkit.open(_spec(tmp_path, "a")).result()
    assert not z.read().result().any()
    t.commit_sync()
    assert z.read().result()[0:3, 1].tolist() == [-4] * 3


def test_tensorstore_writes_between_commit_redo_are_kept(tmp_path):
    d = zarrkit.d
    z = _grid(zarrkit, tmp_path)
    t = zarrkit.Transaction()
    z.with_transaction(t)[d[0, 1][0, 0]].write(1).result()
    ts.open(_spec(tmp_path, "a")).result()[ts.d[0, 1][1, 1]].write(np.int32(2)).result()
    t.commit_sync()
    assert ts.open(_spec(tmp_path, "a")).result().read().result()[:2, :2].tolist() == [
        [1, 0], [0, 2]]


# -- zarrkit's own guarantees --------------------------------------------------------------------


def test_writes_to_one_chunk_coalesce_into_one_stored_write(tmp_path, monkeypatch):
    d = zarrkit.d
    a = _grid(zarrkit, tmp_path)
    t = zarrkit.Transaction()
    b = a.with_transaction(t)
    stored = []
    real = FileStore._set

    def counted(self, key, value):
        stored.append(key)
        real(self, key, value)

    monkeypatch.setattr(FileStore, "_set", counted)
    for i in range(3):
        for j in range(3):
            b[d[0, 1][i % 2, j]].write(i * 3 + j + 1).result()
    b[d[0, 1][3, 5]].write(9).result()
    assert stored == []
    t.commit_sync()
    assert sorted(stored) == ["c/0/0", "c/1/1"]
    assert a.read().result()[:2, :3].tolist() == [[7, 8, 9], [4, 5, 6]]


def test_unbound_handles_see_committed_values_not_staged_ones(tmp_path):
    d = zarrkit.d
    context = zarrkit.Context({"cache_pool": {"total_bytes_limit": 10**7}})
    a = _grid(zarrkit, tmp_path, context=context, recheck_cached_data=False)
    other = zarrkit.open(_spec(tmp_path, "a"), context=context,
                         recheck_cached_data=False).result()
    assert not a.read().result().any() and not other.read().result().any()  # now cached
    t = zarrkit.Transaction()
    b = a.with_transaction(t)
    b[d[0, 1][0, 0]].write(4).result()
    b.resize(exclusive_max=[6, 6]).result()
    assert b.read().result()[0, 0] == 4
    assert not other.read().result().any() and tuple(other.shape) == (4, 6)
    t.commit_sync()
    assert other.read().result()[0, 0] == 4 and tuple(other.shape) == (6, 6)
    assert a.read().result()[0, 0] == 4


def test_listing_and_deleting_through_a_transaction(tmp_path):
    d = zarrkit.d
    a = _grid(zarrkit, tmp_path)
    a[d[0, 1][0, 0]].write(1).result()
    t = zarrkit.Transaction()
    b = a.with_transaction(t)
    b[d[0, 1][3, 5]].write(2).result()
    assert b.nchunks_initialized == 2 and a.nchunks_initialized == 1
    b.resize(exclusive_max=[2, 6]).result()  # erases the chunk at [3, 5] again
    assert b.nchunks_initialized == 1 and a.nchunks_initialized == 1
    t.commit_sync()
    assert tuple(a.resolve().result().shape) == (2, 6) and a.nchunks_initialized == 1


def test_with_config_keeps_the_transaction(tmp_path):
    a = _grid(zarrkit, tmp_path)
    t = zarrkit.Transaction()
    b = a.with_transaction(t).with_config(write_empty_chunks=True)
    assert b.transaction is t and b.write_empty_chunks
    b.write(0).result()  # stored although all fill, once committed
    assert a.nchunks_initialized == 0 and b.nchunks_initialized == 4
    t.commit_sync()
    assert a.nchunks_initialized == 4


def test_a_bound_handle_is_not_picklable(tmp_path):
    import pickle

    b = _grid(zarrkit, tmp_path).with_transaction(zarrkit.Transaction())
    with pytest.raises(zarrkit.UnpicklableError, match="staged"):
        pickle.dumps(b)


def test_concurrent_writers_during_commits_lose_nothing(tmp_path):
    """Transactions writing the even columns commit while another thread writes the odd
    ones of the same chunks: every value of both survives."""
    import threading

    a = zarrkit.open(_spec(tmp_path, "a"), create=True, dtype="int32", shape=[8, 8],
                     chunk_layout=zarrkit.ChunkLayout(chunk_shape=[4, 4])).result()
    done = threading.Event()

    def other_writer():
        for step in range(1, 41):
            a[:, 1::2] = step
        done.set()

    thread = threading.Thread(target=other_writer)
    thread.start()
    commits = 0
    while not done.is_set() or commits < 5:
        commits += 1
        with zarrkit.Transaction() as t:
            a.with_transaction(t)[:, 0::2] = -commits
    thread.join()
    data = a[...]
    assert (data[:, 0::2] == -commits).all() and (data[:, 1::2] == 40).all()

"""Transactions and edge chunks: a chunk (or shard) the array's edge cuts, whose part inside the
shape a transaction writes whole, counts as written in part (its region: that part, at the time
of the write). TensorStore keeps what other writers store beyond it once the array grows, at the
commit and in the transaction's reads; zarrkit used to stage the whole chunk with the fill value
there, unread, and lost those values. Each case is run with TensorStore as the oracle."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _spec_helpers import with_each_library
from test_fuzz_ts_transactions import run_seed

import zarrkit
from zarrkit.indexing import numpy_plan, orthogonal_plan
from zarrkit.kvstore.memory import MemoryStore

ts = pytest.importorskip("tensorstore")

#: (driver, sharded): zarr3 unsharded and sharded (inner chunks 2x3 in shards 4x6), and zarr v2.
LAYOUTS = [("zarr3", False), ("zarr3", True), ("zarr", False)]


def _attempt(fn: Any) -> Any:
    try:
        value = fn()
    except (ValueError, zarrkit.ZarrkitError) as e:
        assert not isinstance(e, zarrkit.ZarrkitError) or isinstance(
            e, zarrkit.TransactionError), e
        return "error"
    return value.tolist() if isinstance(value, np.ndarray) else value


def _spec(root: str, driver: str) -> dict[str, Any]:
    return {"driver": driver, "kvstore": {"driver": "file", "path": f"{root}/a/"}}


def _create(lib: Any, root: str, driver: str = "zarr3", sharded: bool = False,
            shape: tuple[int, ...] = (5, 7), context: Any = None) -> Any:
    layout = (lib.ChunkLayout(read_chunk_shape=[2, 3], write_chunk_shape=[4, 6]) if sharded
              else lib.ChunkLayout(chunk_shape=[2, 3]))
    return lib.open(_spec(root, driver), create=True, dtype="int32", shape=list(shape),
                    fill_value=0, chunk_layout=layout,
                    context=context or lib.Context()).result()


def _stored(lib: Any, root: str, driver: str) -> Any:
    """The array as stored, read by a new handle of `lib`."""
    return lib.open(_spec(root, driver), context=lib.Context()).result().read().result()


# -- another handle grows the array, another writer writes beyond the old edge -------------------


def _grown_by_another(lib: Any, root: str, driver: str, sharded: bool) -> dict[str, Any]:
    d = lib.d
    a = _create(lib, root, driver, sharded)
    t = lib.Transaction()
    a.with_transaction(t)[d[0, 1][4:5, 6:7]].write(1).result()  # all of chunk (2, 2) in bounds
    grown = a.resize(exclusive_max=[8, 12]).result()
    grown[d[0, 1][5, 7]].write(5).result()  # beyond the old edge, in the same chunk
    grown[d[0, 1][4, 8]].write(6).result()
    grown[d[0, 1][4, 6]].write(9).result()  # inside the region the transaction wrote
    grown[d[0, 1][6, 10]].write(4).result()  # (the same shard, another chunk)
    bound = grown.with_transaction(t)
    out = {"read": bound[d[0, 1][4:8, 6:12]].read().result().tolist()}
    out["commit"] = _attempt(t.commit_sync)
    out["stored"] = _stored(lib, root, driver)[4:8, 6:12].tolist()
    return out


@pytest.mark.parametrize(("driver", "sharded"), LAYOUTS)
def test_a_commit_keeps_what_others_wrote_beyond_the_old_edge(tmp_path, driver, sharded):
    expected, actual = with_each_library(_grown_by_another, tmp_path, driver, sharded)
    assert actual == expected
    assert expected["commit"] is None
    rows = [[1, 0, 6, 0, 0, 0], [0, 5, 0, 0, 0, 0], [0, 0, 0, 0, 4, 0], [0, 0, 0, 0, 0, 0]]
    assert expected["read"] == expected["stored"] == rows
    # each library reads what the other stored the same
    ts_root, zk_root = (str(tmp_path / lib.__name__) for lib in (ts, zarrkit))
    assert _stored(zarrkit, ts_root, driver)[4:8, 6:12].tolist() == rows
    assert _stored(ts, zk_root, driver)[4:8, 6:12].tolist() == rows


def _whole_inner_chunks(lib: Any, root: str) -> dict[str, Any]:
    """A shard the edge cuts between inner chunks: the ones inside are written whole, the one
    beyond is another writer's once the array grows."""
    d = lib.d
    a = _create(lib, root, sharded=True, shape=(6, 9))
    t = lib.Transaction()
    a.with_transaction(t)[d[0, 1][4:6, 6:9]].write(1).result()
    grown = a.resize(exclusive_max=[8, 12]).result()
    grown[d[0, 1][4, 10]].write(5).result()
    grown[d[0, 1][5, 8]].write(6).result()  # inside the region written: the transaction's
    out = {"read": grown.with_transaction(t)[d[0, 1][4:8, 6:12]].read().result().tolist()}
    out["commit"] = _attempt(t.commit_sync)
    out["stored"] = _stored(lib, root, "zarr3")[4:8, 6:12].tolist()
    return out


def test_a_shard_cut_between_inner_chunks_keeps_the_inner_chunks_beyond(tmp_path):
    expected, actual = with_each_library(_whole_inner_chunks, tmp_path)
    assert actual == expected
    rows = [[1, 1, 1, 0, 5, 0], [1, 1, 1, 0, 0, 0], [0] * 6, [0] * 6]
    assert expected["read"] == expected["stored"] == rows


# -- the transaction grows the array itself -------------------------------------------------------


def _grown_in_transaction(lib: Any, root: str, driver: str, sharded: bool,
                          unbound_first: bool) -> dict[str, Any]:
    d = lib.d
    a = _create(lib, root, driver, sharded)
    t = lib.Transaction()
    b = a.with_transaction(t)
    b[d[0, 1][4:5, 6:7]].write(1).result()
    if unbound_first:
        grown = a.resize(exclusive_max=[6, 9]).result()
        b = b.resize(exclusive_max=[7, 9]).result()
    else:
        b = b.resize(exclusive_max=[7, 9]).result()
        grown = a.resize(exclusive_max=[6, 9]).result()
    grown[d[0, 1][5, 7]].write(5).result()
    grown[d[0, 1][4, 8]].write(6).result()
    b[d[0, 1][6, 8]].write(2).result()  # (an edge chunk of the transaction's new shape)
    out = {"read": b[d[0, 1][4:7, 6:9]].read().result().tolist()}
    out["commit"] = _attempt(t.commit_sync)
    stored = lib.open(_spec(root, driver), context=lib.Context()).result()
    out["shape"] = tuple(stored.shape)
    out["stored"] = stored.read().result()[4:7, 6:9].tolist()
    return out


@pytest.mark.parametrize("unbound_first", [True, False])
@pytest.mark.parametrize(("driver", "sharded"), LAYOUTS)
def test_a_bound_resize_keeps_what_others_wrote_beyond_the_old_edge(tmp_path, driver, sharded,
                                                                    unbound_first):
    expected, actual = with_each_library(_grown_in_transaction, tmp_path, driver, sharded,
                                         unbound_first)
    assert actual == expected
    assert expected["commit"] is None and expected["shape"] == (7, 9)
    assert expected["read"] == expected["stored"] == [[1, 0, 6], [0, 5, 0], [0, 0, 2]]


# -- bound reads before the commit ----------------------------------------------------------------


def _bound_reads(lib: Any, root: str, sharded: bool) -> dict[str, Any]:
    d = lib.d
    # (one context: TensorStore's handles of one transaction share what it staged per cache)
    context = lib.Context()
    a = _create(lib, root, sharded=sharded, context=context)
    t = lib.Transaction()
    b = a.with_transaction(t)
    b[d[0, 1][4:5, 6:7]].write(1).result()
    out = {"before": b[d[0, 1][4:5, 6:7]].read().result().tolist()}
    grown = a.resize(exclusive_max=[6, 9]).result()
    opened = lib.open(_spec(root, "zarr3"), transaction=t, context=context).result()
    out["opened"] = opened[d[0, 1][4:6, 6:9]].read().result().tolist()
    grown[d[0, 1][5, 7]].write(5).result()
    out["after"] = opened[d[0, 1][4:6, 6:9]].read().result().tolist()
    grown[d[0, 1][4, 8]].write(6).result()
    out["again"] = grown.with_transaction(t)[d[0, 1][4:6, 6:9]].read().result().tolist()
    out["commit"] = _attempt(t.commit_sync)
    out["stored"] = _stored(lib, root, "zarr3")[4:6, 6:9].tolist()
    return out


@pytest.mark.parametrize("sharded", [False, True])
def test_bound_reads_merge_what_others_wrote_beyond_the_old_edge(tmp_path, sharded):
    expected, actual = with_each_library(_bound_reads, tmp_path, sharded)
    assert actual == expected
    assert expected["opened"] == [[1, 0, 0], [0, 0, 0]]
    assert expected["after"] == [[1, 0, 0], [0, 5, 0]]
    assert expected["again"] == expected["stored"] == [[1, 0, 6], [0, 5, 0]]


# -- what stays as it was -------------------------------------------------------------------------


def _repeatable_edge(lib: Any, root: str) -> dict[str, Any]:
    d = lib.d
    a = _create(lib, root)
    t = lib.Transaction(repeatable_read=True)
    a.with_transaction(t)[d[0, 1][4:5, 6:7]].write(1).result()
    a[d[0, 1][4, 6]].write(5).result()  # the region the transaction wrote
    out = {"commit": _attempt(t.commit_sync)}
    out["stored"] = _stored(lib, root, "zarr3")[4, 6].tolist()
    return out


def test_repeatable_read_commits_an_edge_chunk_it_only_wrote(tmp_path):
    expected, actual = with_each_library(_repeatable_edge, tmp_path)
    assert actual == expected == {"commit": None, "stored": 1}


# -- repeatable_read checks the data read, and merges chunks only written ---------------------


def _repeatable(lib: Any, root: str, case: str, sharded: bool) -> dict[str, Any]:
    """A repeatable_read transaction writes element (0, 0) of chunk (0, 0) and another writer
    element (1, 1): "write" alone; "write_read" reads the chunk through the transaction before
    the other write, "read_write" before its own; "read_other_write" reads it first, and
    writes after the other write (whose value its write then reads to merge);
    "write_other_read" reads it after both;
    "grown": another handle grows the array and writes beyond the old edge of the chunk
    (2, 2) the transaction wrote in part."""
    d = lib.d
    a = _create(lib, root, sharded=sharded)
    t = lib.Transaction(repeatable_read=True)
    b = a.with_transaction(t)
    out: dict[str, Any] = {}
    if case == "grown":
        b[d[0, 1][4, 6]].write(1).result()
        a = a.resize(exclusive_max=[6, 9]).result()
        a[d[0, 1][5, 8]].write(7).result()
        a[d[0, 1][4, 7]].write(8).result()
        out["commit"] = _attempt(t.commit_sync)
        out["stored"] = _stored(lib, root, "zarr3")[4:6, 6:9].tolist()
        return out
    if case in ("read_write", "read_other_write"):
        out["read"] = b[d[0, 1][0:2, 0:3]].read().result().tolist()
    if case == "read_other_write":
        a[d[0, 1][1, 1]].write(5).result()
    b[d[0, 1][0, 0]].write(1).result()
    if case == "write_read":
        out["read"] = b[d[0, 1][0:2, 0:3]].read().result().tolist()
    if case != "read_other_write":
        a[d[0, 1][1, 1]].write(5).result()
    if case == "write_other_read":
        out["read"] = _attempt(lambda: b[d[0, 1][0:2, 0:3]].read().result())
    out["commit"] = _attempt(t.commit_sync)
    out["stored"] = _stored(lib, root, "zarr3")[0:2, 0:3].tolist()
    return out


@pytest.mark.parametrize("sharded", [False, True])
@pytest.mark.parametrize("case", ["write", "write_read", "read_write", "read_other_write",
                                  "write_other_read", "grown"])
def test_repeatable_read_fails_on_data_read_and_merges_chunks_only_written(tmp_path, case,
                                                                           sharded):
    expected, actual = with_each_library(_repeatable, tmp_path, case, sharded)
    assert actual == expected
    read_then_changed = case in ("write_read", "read_write", "read_other_write")
    assert (expected["commit"] == "error") == read_then_changed
    if case == "grown":
        assert expected["stored"] == [[1, 8, 0], [0, 0, 7]]
    elif not read_then_changed:  # both writes kept
        assert expected["stored"] == [[1, 0, 0], [0, 5, 0]]


def test_ordinary_edge_writes_do_not_read_and_transactions_read_only_the_edge(counting_store):
    """The whole-chunk shortcut stays for writes outside a transaction; in one, only the
    chunks the edge cuts are read (the others are written whole, unread, as TensorStore's)."""
    a = zarrkit.create(counting_store, (5, 7), "int32", chunks=(2, 3))
    a[...] = 1
    assert not [k for k, _ in counting_store.gets if "/c/" in f"/{k}"]
    t = zarrkit.Transaction()
    b = a.with_transaction(t)
    b[...] = 2
    read = sorted({k for k, _ in counting_store.gets if k.startswith("c/")})
    edge = sorted(f"c/{i}/{j}" for i in range(3) for j in range(3) if i == 2 or j == 2)
    assert read == edge
    t.commit_sync()
    assert (a[...] == 2).all()


@pytest.mark.parametrize(("selection", "complete"), [
    ((slice(None), slice(None)), {(0, 0): True, (1, 1): True, (2, 0): False, (0, 2): False}),
    ((slice(0, 4), slice(6, 7)), {(0, 2): False, (1, 2): False}),
    ((slice(0, 2), [0, 1, 2]), {(0, 0): True}),
    ((4, slice(0, 3)), {(2, 0): False}),
    ((slice(0, 2), slice(0, 2)), {(0, 0): False}),  # (written in part anyway)
])
def test_plans_count_chunks_of_units_the_edge_cuts_as_written_in_part(selection, complete):
    plan = orthogonal_plan(selection, (5, 7), (2, 3))
    got = {p.coords: p.complete for p in plan.partial_beyond((5, 7), (2, 3), (2, 3))}
    assert {c: got[c] for c in complete} == complete


def test_plans_count_every_chunk_of_a_shard_the_edge_cuts_as_written_in_part():
    plan = numpy_plan((slice(None), slice(None)), (8, 7), (2, 3))
    got = {p.coords: p.complete for p in plan.partial_beyond((8, 7), (2, 3), (4, 6))}
    assert got[(0, 0)] and got[(3, 1)] and not got[(0, 2)] and not got[(3, 2)]
    assert plan.block() is None  # (no whole box of chunks: the edge shards are read)


def test_a_memory_store_transaction_keeps_them_too():
    store = MemoryStore()
    a = zarrkit.create(store, (5, 7), "int32", chunks=(2, 3))
    t = zarrkit.Transaction()
    a.with_transaction(t)[4:5, 6:7] = 1
    a.resize((6, 9))
    a[5, 7] = 5
    t.commit_sync()
    assert zarrkit.open_array(store, mode="r")[4:6, 6:9].tolist() == [[1, 0, 0], [0, 5, 0]]


# -- the fuzzer's programs that found it ----------------------------------------------------------


@pytest.mark.parametrize("seed", [718, 7872, 9522])
def test_the_programs_that_found_it(tmp_path, seed):
    run_seed(seed, tmp_path)


@pytest.mark.parametrize("seed", [20799, 22592])
def test_programs_where_tensorstores_failed_commit_wrote_beyond_the_shape(tmp_path, seed):
    """Not a zarrkit bug: TensorStore's failed commit wrote chunks beyond the shape another
    writer had shrunk the array to, and the fuzzer's resynchronization (which rewrote only the
    part inside the shape) left them, to show when the array grew again."""
    run_seed(seed, tmp_path)


def _fill_where_none_is(lib: Any, root: str) -> dict[str, Any]:
    d = lib.d
    a = _create(lib, root, sharded=True)
    t = lib.Transaction()
    b = a.with_transaction(t)
    b[d[0, 1][0, 0:3]].write(0).result()  # the fill value, where no inner chunk is stored
    a[d[0, 1][0:2, 0:3]].write(5).result()  # then another writer stores one there
    out = {"read": b[d[0, 1][0:2, 0:3]].read().result().tolist()}
    out["commit"] = _attempt(t.commit_sync)
    out["stored"] = _stored(lib, root, "zarr3")[0:2, 0:3].tolist()
    return out


def test_a_transaction_keeps_its_write_of_the_fill_where_no_inner_chunk_was(tmp_path):
    """Outside a transaction such a write changes nothing and stores nothing; in one, it is
    staged all the same, and redone over what another writer stored there since."""
    expected, actual = with_each_library(_fill_where_none_is, tmp_path)
    assert actual == expected
    assert expected["stored"] == expected["read"] == [[0, 0, 0], [5, 5, 5]]


# -- repeatable_read: reads of what the transaction wrote whole; writes that change nothing ------


def _reread_after_whole_write(lib: Any, root: str, sharded: bool) -> dict[str, Any]:
    """A repeatable_read transaction reads a chunk, another writer changes it, the transaction
    reads it again (which fails), overwrites it whole (a shard whole, when sharded) and reads
    it once more."""
    d = lib.d
    a = _create(lib, root, sharded=sharded)
    t = lib.Transaction(repeatable_read=True)
    b = a.with_transaction(t)
    whole = d[0, 1][0:4, 0:6] if sharded else d[0, 1][0:2, 0:3]
    out = {"first": _attempt(lambda: b[d[0, 1][0:2, 0:3]].read().result())}
    a[d[0, 1][0:1, 1:2]].write(2).result()  # another writer
    out["changed"] = _attempt(lambda: b[d[0, 1][0:2, 0:3]].read().result())
    b[whole].write(50).result()
    out["read"] = _attempt(lambda: b[d[0, 1][0:2, 0:3]].read().result())
    out["commit"] = _attempt(t.commit_sync)
    out["stored"] = _stored(lib, root, "zarr3")[0:2, 0:3].tolist()
    return out


@pytest.mark.parametrize("sharded", [False, True])
def test_a_repeatable_read_of_what_the_transaction_wrote_whole_reads_it(tmp_path, sharded):
    """Nothing of the stored chunk goes into it, so the read checks nothing and gives the
    transaction's values; the commit fails all the same (the first read's chunk changed).
    Fuzzer seed 3415."""
    expected, actual = with_each_library(
        lambda lib, root: _reread_after_whole_write(lib, root, sharded), tmp_path)
    assert actual == expected
    assert expected["changed"] == "error" and expected["read"] == [[50] * 3] * 2
    assert expected["commit"] == "error"
    assert expected["stored"] == [[0, 2, 0], [0, 0, 0]]


def _unchanged_by_another(lib: Any, root: str) -> dict[str, Any]:
    """A repeatable_read transaction reads a shard; another transaction writes the fill value
    where no inner chunk of it is stored, and commits; the first reads the shard again."""
    d = lib.d
    a = _create(lib, root, sharded=True)
    a[d[0, 1][0:2, 0:3]].write(5).result()
    t = lib.Transaction(repeatable_read=True)
    b = a.with_transaction(t)
    out = {"first": _attempt(lambda: b[d[0, 1][0:4, 0:6]].read().result())}
    other = lib.Transaction()
    a.with_transaction(other)[d[0, 1][2:4, 3:6]].write(0).result()
    out["other"] = _attempt(other.commit_sync)
    out["read"] = _attempt(lambda: b[d[0, 1][0:4, 0:6]].read().result())
    b[d[0, 1][0:1, 0:1]].write(9).result()
    out["commit"] = _attempt(t.commit_sync)
    out["stored"] = _stored(lib, root, "zarr3")[0:2, 0:3].tolist()
    return out


def test_a_committed_write_that_changed_nothing_leaves_a_repeatable_read_alone(tmp_path):
    """A transaction's write of the fill value where no inner chunk is stored changes nothing:
    its commit does not store the shard again, so the shard a repeatable_read transaction read
    has not changed (fuzzer seeds 2739, 2896)."""
    expected, actual = with_each_library(_unchanged_by_another, tmp_path)
    assert actual == expected
    assert expected["read"] == expected["first"] and expected["commit"] is None
    assert expected["stored"] == [[9, 5, 5], [5, 5, 5]]

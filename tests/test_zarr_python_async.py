"""zarr-python 3's asynchronous API (`zarr.api.asynchronous`, `AsyncArray`, `AsyncGroup`) on
zarrkit: the same async programs run with zarr-python and with zarrkit give the same results,
data written by one library's async API reads with the other's sync API, and zarrkit's
coroutines never block the event loop."""

from __future__ import annotations

import asyncio
import copy
import inspect
import pickle
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import zarr
import zarr.api.asynchronous as zarr_async
from zarr.core.group import GroupMetadata

import zarrkit
from zarrkit import asynchronous
from zarrkit.api import asynchronous as zarrkit_async
from zarrkit.engine import executor

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]

LIBRARIES = {"zarr": (zarr, zarr_async), "zarrkit": (zarrkit, zarrkit_async)}


def _both(program, tmp_path, *args):
    """`program(async module, directory, *args)` run with each library; their results."""
    results = {}
    for name, (_, module) in LIBRARIES.items():
        where = tmp_path / name
        where.mkdir()
        results[name] = asyncio.run(program(module, str(where), *args))
    return results["zarr"], results["zarrkit"]


def _assert_same(expected, got):
    """Equal results, item by item (labelled): arrays by value, data type and shape."""
    assert [label for label, _ in got] == [label for label, _ in expected]
    for (label, want), (_, have) in zip(expected, got, strict=True):
        _assert_equal(want, have, label)


def _assert_equal(want, have, label):
    if isinstance(want, np.ndarray | np.generic):
        assert isinstance(have, np.ndarray | np.generic), label
        assert have.dtype == want.dtype and np.shape(have) == np.shape(want), label
        np.testing.assert_array_equal(have, want, err_msg=label)
    elif isinstance(want, tuple):
        assert isinstance(have, tuple) and len(have) == len(want), label
        for w, h in zip(want, have, strict=True):
            _assert_equal(w, h, label)
    else:
        assert have == want, label


def _kind(fn):
    """What calling `fn` gives; through a plain decorator (zarr-python's deprecations)."""
    if inspect.isasyncgenfunction(fn):
        return "async iterator"
    if inspect.iscoroutinefunction(fn):
        return "coroutine"
    return _kind(fn.__wrapped__) if hasattr(fn, "__wrapped__") else "plain"


# -- names --------------------------------------------------------------------------------------

#: zarr-python's names zarrkit leaves out, and why.
LEFT_OUT = {
    # Constructors from a StorePath and a metadata dict without reading the store: zarrkit's
    # handles come from the store (open, create); its metadata documents are checked there.
    ("AsyncArray", "from_dict"), ("AsyncGroup", "from_dict"),
}


def test_module_names_and_their_kinds_match_zarr_python():
    for name in zarr_async.__all__:
        ours = getattr(zarrkit_async, name)
        assert _kind(ours) == _kind(getattr(zarr_async, name)), name
    assert zarrkit_async.create_group is not None and _kind(zarrkit_async.create_group) == \
        _kind(zarr_async.create_group)
    assert set(zarr_async.__all__) <= set(zarrkit_async.__all__)
    assert zarrkit.AsyncArray is zarrkit_async.AsyncArray is asynchronous.AsyncArray
    assert zarrkit.AsyncGroup is zarrkit_async.AsyncGroup
    assert {"AsyncArray", "AsyncGroup"} <= set(zarrkit.__all__) & set(zarr.__all__)


@pytest.mark.parametrize("cls", ["AsyncArray", "AsyncGroup"])
def test_class_names_and_their_kinds_match_zarr_python(cls):
    theirs, ours = getattr(zarr, cls), getattr(zarrkit, cls)
    for name in dir(theirs):
        if name.startswith("_") or (cls, name) in LEFT_OUT:
            continue
        assert hasattr(ours, name), f"{cls}.{name}"
        their_static = inspect.getattr_static(theirs, name)
        if isinstance(their_static, property):
            assert isinstance(inspect.getattr_static(ours, name), property), f"{cls}.{name}"
        else:
            assert _kind(getattr(ours, name)) == _kind(getattr(theirs, name)), f"{cls}.{name}"
    fields = ("metadata", "store_path") + (("config",) if cls == "AsyncArray" else ())
    for name in fields:
        assert isinstance(inspect.getattr_static(ours, name), property)  # their dataclass fields


@pytest.mark.parametrize("statement", [
    "import zarrkit.api.asynchronous as m; assert m.AsyncArray.__name__ == 'AsyncArray'",
    "from zarrkit.api.asynchronous import open_group, AsyncGroup",
    "from zarrkit.api import asynchronous; asynchronous.zeros",
    "import zarrkit.api; zarrkit.api.open; zarrkit.api.asynchronous.open",
])
def test_importable_where_zarr_python_has_it(statement):
    # A fresh interpreter: the first import of zarrkit is this one.
    subprocess.run([sys.executable, "-c", statement], check=True)


# -- arrays -------------------------------------------------------------------------------------

async def _array_program(m, where, zarr_format):
    out = []
    a = await m.create_array(store=where, name="a", shape=(10, 8), chunks=(3, 4), dtype="i4",
                             fill_value=-1, zarr_format=zarr_format, attributes={"u": "m"})
    out += [("described", (type(a).__name__, a.shape, a.chunks, a.ndim, a.size, a.nchunks,
                           a.cdata_shape, a.path, a.name, a.basename, a.read_only,
                           a.dtype == np.int32, dict(a.attrs))),
            ("fresh", await a.getitem(slice(None))),
            ("none stored", await a.nchunks_initialized())]
    await a.setitem((slice(0, 5), slice(None)), np.arange(40).reshape(5, 8))
    await a.setitem((7, slice(2, 6)), 99)
    mask = np.zeros((10, 8), bool)
    mask[[2, 4, 7], [3, 4, 5]] = True
    out += [("basic", await a.getitem((slice(1, 8, 2), slice(-7, None, 3)))),
            ("scalar", await a.getitem((3, 5))),
            ("orthogonal", await a.get_orthogonal_selection(([1, 3, 7], slice(2, 6)))),
            ("oindex", await a.oindex.getitem(([0, 9], [1, 2]))),
            ("coordinate", await a.get_coordinate_selection(([1, 3, 7], [0, 7, 3]))),
            ("vindex", await a.vindex.getitem(([1, 2], [0, 1]))),
            ("mask", await a.get_mask_selection(mask)),
            ("stored", await a.nchunks_initialized()),
            ("bytes", await a.nbytes_stored() > 0)]
    assert await a.resize((6, 10)) is None
    out += [("resized", (a.shape, await a.getitem(slice(None))))]
    out += [("appended", (await a.append(np.full((2, 10), 5, "i4")), a.shape)),
            ("after append", await a.getitem(slice(None)))]
    again = await a.update_attributes({"v": [1, 2]})
    out += [("attributes", (again is a, dict(a.attrs))),
            ("reopened", (await m.open_array(store=where, path="a", mode="r")).shape)]
    return out


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_array_program(tmp_path, zarr_format):
    _assert_same(*_both(_array_program, tmp_path, zarr_format))


async def _module_program(m, where):
    out = []
    z = await m.zeros((4, 3), chunks=(2, 2), dtype="i2", store=where + "/z")
    o = await m.ones((5,), dtype="f4", store=where + "/o")
    f = await m.full((2, 2), 7, dtype="u1", store=where + "/f")
    e = await m.empty((3,), dtype="i8", store=where + "/e", fill_value=4)
    d = await m.array(np.arange(6).reshape(2, 3), store=where + "/d", chunks=(1, 3))
    c = await m.create((6,), chunks=(4,), dtype="f8", store=where + "/c", fill_value=0.5)
    for name, x in [("zeros", z), ("ones", o), ("full", f), ("empty", e), ("array", d),
                    ("create", c)]:
        out.append((name, (type(x).__name__, x.shape, x.chunks, str(x.dtype))))
        out.append((name + " values", await x.getitem(...)))
    for name in ("zeros_like", "ones_like", "full_like"):
        like = await getattr(m, name)(d, store=where + "/" + name)
        out.append((name, (like.shape, str(like.dtype), await like.getitem(...))))
    g = await m.group(store=where, attributes={"k": 1})
    opened = await m.open(store=where, path="d", mode="r")
    og = await m.open_group(where, mode="r")
    out += [("group", (type(g).__name__, dict(g.attrs), type(og).__name__)),
            ("open", (type(opened).__name__, await opened.getitem((1, slice(None)))))]
    await m.save_array(where + "/s", np.arange(5, dtype="i2"))
    out.append(("load", await m.load(store=where + "/s")))
    fa = await m.from_array(where + "/fa", data=np.arange(12).reshape(3, 4))
    out.append(("from_array", (fa.shape, await fa.getitem(...))))
    consolidated = await m.consolidate_metadata(where)
    reopened = await m.open_consolidated(where)
    out.append(("consolidated", (type(consolidated).__name__, type(reopened).__name__,
                                 sorted([k async for k in reopened.keys()]))))
    return out


def test_module_functions_program(tmp_path):
    _assert_same(*_both(_module_program, tmp_path))


async def _hierarchy_program(m, where, store):
    made = [(path, type(node).__name__, dict(node.attrs)) async for path, node in
            m.create_hierarchy(store=store, nodes={"a/b": GroupMetadata(attributes={"x": 1}),
                                                   "c": GroupMetadata()})]
    return [("made", sorted(made))]


def test_create_hierarchy_yields_the_nodes(tmp_path):
    expected = asyncio.run(_hierarchy_program(
        zarr_async, None, zarr.storage.LocalStore(tmp_path / "z")))
    got = asyncio.run(_hierarchy_program(zarrkit_async, None, str(tmp_path / "k")))
    _assert_same(expected, got)


# -- groups -------------------------------------------------------------------------------------

async def _group_program(m, where, zarr_format):
    out = []
    g = await m.open_group(where, mode="w", zarr_format=zarr_format, attributes={"r": 0})
    s = await g.create_group("s", attributes={"k": 2})
    await s.create_array("t", shape=(3,), dtype="f4", chunks=(2,))
    await g.create_array("a", shape=(4,), dtype="i2", chunks=(2,))
    # zarr-python 3.1.6's AsyncGroup.zeros (ones, ..., *_like) makes v3 arrays in a v2 group
    # (and refuses zarr_format=2 there): compared in v3 groups only.
    fills = ("z", "o", "f", "e") if zarr_format == 3 else ()
    if fills:
        await g.zeros(name="z", shape=(2,), dtype="u2")
        await g.ones(name="o", shape=(2,), dtype="u2")
        await g.full(name="f", shape=(2,), fill_value=3, dtype="u2")
        await g.empty(name="e", shape=(2,), dtype="u2", fill_value=6)
    await g.setitem("set", np.arange(3))
    await g.require_groups("r1", "r2/r3")
    again = await g.require_group("s")
    arr = await g.require_array("a", shape=(4,), dtype="i2")
    got = await g.getitem("s/t")
    out += [("described", (type(g).__name__, g.path, g.name, g.basename, dict(g.attrs),
                           g.read_only, g.synchronizer)),
            ("required", (type(again).__name__, dict(again.attrs), arr.shape)),
            ("getitem", (type(got).__name__, got.path, got.shape)),
            ("contains", (await g.contains("a"), await g.contains("s/t"),
                          await g.contains("nothing"))),
            ("get", (await g.get("nothing", 5), (await g.get("a")).path)),
            ("keys", sorted([k async for k in g.keys()])),
            ("array_keys", sorted([k async for k in g.array_keys()])),
            ("group_keys", sorted([k async for k in g.group_keys()])),
            ("arrays", sorted([(k, v.shape) async for k, v in g.arrays()])),
            ("groups", sorted([(k, v.path) async for k, v in g.groups()])),
            ("array_values", sorted([v.path async for v in g.array_values()])),
            ("group_values", sorted([v.path async for v in g.group_values()])),
            ("members", sorted([(k, type(v).__name__) async for k, v in g.members()])),
            ("all members", sorted([k async for k, _ in g.members(max_depth=None)])),
            ("nmembers", (await g.nmembers(), await g.nmembers(max_depth=None)))]
    for name in (*fills, "set"):
        out.append((name, await (await g.getitem(name)).getitem(...)))
    for name in ("zeros_like", "ones_like", "full_like") if fills else ():
        like = await getattr(g, name)(name=name, data=await g.getitem("set"))
        out.append((name, (like.path, like.shape, await like.getitem(...))))
    await g.delitem("s/t")
    updated = await g.update_attributes({"more": [1]})
    out += [("deleted", (await g.contains("s/t"), await g.contains("s"))),
            ("updated", (updated is g, dict(g.attrs))),
            ("reopened", dict((await m.open_group(where, mode="r")).attrs))]
    return out


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_group_program(tmp_path, zarr_format):
    _assert_same(*_both(_group_program, tmp_path, zarr_format))


def test_group_extras():
    """What zarr-python's async API lacks or refuses, zarrkit's does (move, tree, copy)."""
    async def program():
        g = await zarrkit_async.group()
        await g.setitem("x", np.arange(3))
        await g.create_group("s")
        await g.move("x", "s/y")
        other = await zarrkit_async.group()
        copied = await zarrkit_async.copy_all(g, other)  # async handles stand for their nodes
        return (sorted([k async for k, _ in g.members(max_depth=None)]), await g.tree(),
                await zarrkit_async.tree(g, level=0),
                (await (await g.getitem("s/y")).getitem(...)).tolist(), copied,
                (await (await other.getitem("s/y")).getitem(...)).tolist())
    members, tree, shallow, moved, copied, copy = asyncio.run(program())
    assert members == ["s", "s/y"] and moved == copy == [0, 1, 2]
    assert tree.splitlines()[0] == "/" and "y (3,) int64" in tree and "y" not in shallow
    assert copied[:2] == (2, 0)  # (copied, skipped): the group s and its array y


# -- concurrency --------------------------------------------------------------------------------

async def _gather_program(m, where):
    a = await m.create_array(store=where, shape=(64, 64), chunks=(8, 8), dtype="i4",
                             fill_value=0)
    blocks = [(slice(i, i + 8), slice(j, j + 8)) for i in range(0, 64, 8) for j in range(0, 64, 8)]
    values = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    await asyncio.gather(*(a.setitem(b, values[b]) for b in blocks))
    rows = await asyncio.gather(*(a.getitem((r, slice(None))) for r in range(64)))
    strips = await asyncio.gather(*(a.get_orthogonal_selection((slice(None), [c]))
                                    for c in range(0, 64, 5)))
    return [("rows", np.stack(rows)), ("strips", np.concatenate(strips, axis=1)),
            ("whole", await a.getitem(...))]


def test_gather_of_many_reads_and_writes(tmp_path):
    expected, got = _both(_gather_program, tmp_path)
    _assert_same(expected, got)
    np.testing.assert_array_equal(dict(got)["whole"], np.arange(4096).reshape(64, 64))


class _SlowStore(dict):
    """A mapping store whose reads wait on "the network" (the GIL released meanwhile)."""

    def __getitem__(self, key):
        if not key.endswith(("zarr.json", ".zarray", ".zgroup", ".zattrs")):
            time.sleep(0.02)
        return super().__getitem__(key)


async def _ticking_while(work):
    """(result of `work`, ticks of a coroutine scheduled beside it, the longest gap)."""
    ticks = []
    done = asyncio.Event()

    async def ticker():
        while not done.is_set():
            ticks.append(time.monotonic())
            await asyncio.sleep(0.005)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    start = time.monotonic()
    try:
        result = await asyncio.wait_for(work, 60)
    finally:
        done.set()
        await task
    gaps = np.diff([start, *ticks, time.monotonic()])
    return result, len(ticks), float(gaps.max())


def test_event_loop_keeps_running_during_reads_and_writes():
    store = _SlowStore()
    zarrkit.create_array(store, shape=(40, 40), chunks=(4, 4), dtype="f8", fill_value=1)[...] = 2

    async def program():
        a = await zarrkit_async.open_array(store=store, mode="r+")
        started = time.monotonic()
        # 16 reads of 10 chunks each, a few at a time: each takes >= 0.1 s in the store
        reads = asyncio.gather(*(a.getitem((slice(4 * (i % 10), 4 * (i % 10) + 4), slice(None)))
                                 for i in range(16)))
        values, ticks, gap = await _ticking_while(reads)
        took = time.monotonic() - started
        write = a.setitem((slice(0, 20), slice(0, 20)), 3.0)  # reads 0 chunks: whole ones
        _, write_ticks, _ = await _ticking_while(write)
        return values, ticks, gap, took, write_ticks, await a.getitem((slice(18, 22), 19))
    values, ticks, gap, took, write_ticks, edge = asyncio.run(program())
    assert all((v == 2).all() and v.shape == (4, 40) for v in values)
    assert took > 0.2  # the store's waits happened
    assert ticks >= 10 and gap < took / 2  # the ticker ran throughout, not after
    assert write_ticks >= 1 and edge.tolist() == [3, 3, 2, 2]


def test_threads_are_not_the_engines():
    """Calls run on threads the engine counts as callers: a read spreads its chunks over the
    engine's pool, whose tasks never wait on these threads (no deadlock either way)."""
    async def program():
        names = await asyncio.gather(*(asynchronous._run(lambda: (
            executor.in_pool(), threading.current_thread().name)) for _ in range(4)))
        a = await zarrkit_async.zeros((200, 200), chunks=(10, 10))
        await asyncio.wait_for(asyncio.gather(*(a.setitem((slice(i, i + 10), slice(None)), i)
                                                for i in range(0, 200, 10))), 60)
        return names, await a.getitem((slice(None), 0))
    names, column = asyncio.run(program())
    assert all(not in_pool and name.startswith("zkasync") for in_pool, name in names)
    assert column.tolist() == [float(i // 10 * 10) for i in range(200)]


# -- one library's async API, the other's sync API ----------------------------------------------

@pytest.mark.parametrize("writer", ["zarr", "zarrkit"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_written_async_read_sync_by_the_other(tmp_path, writer, zarr_format):
    where = str(tmp_path / "x.zarr")
    values = np.arange(30, dtype="f4").reshape(5, 6)

    async def write(m):
        g = await m.open_group(where, mode="w", zarr_format=zarr_format, attributes={"t": 1})
        a = await g.create_array("a", shape=(5, 6), chunks=(2, 4), dtype="f4")
        await a.setitem(slice(None), values)
        await a.resize((6, 6))
        await a.update_attributes({"units": "m"})
        await (await g.create_group("s")).create_array("b", data=np.arange(3))

    reader = zarrkit if writer == "zarr" else zarr
    asyncio.run(write(LIBRARIES[writer][1]))
    g = reader.open_group(where, mode="r")
    a = g["a"]
    assert a.shape == (6, 6) and dict(a.attrs) == {"units": "m"} and dict(g.attrs) == {"t": 1}
    np.testing.assert_array_equal(a[:5], values)
    np.testing.assert_array_equal(a[5], np.zeros(6, "f4"))
    assert g["s/b"][:].tolist() == [0, 1, 2]


def test_a_zarr_python_store_shared_in_one_event_loop():
    """zarrkit's calls on a zarr-python store run off the loop, where zarr-python's own
    synchronous bridge to the store may run (it refuses to from inside a running loop)."""
    async def program():
        store = zarr.storage.MemoryStore()
        g = await zarrkit_async.open_group(store=store, mode="w", attributes={"by": "zarrkit"})
        a = await g.create_array("a", data=np.arange(5, dtype="i2"), chunks=(2,))
        await a.setitem(slice(1, 3), -1)
        theirs = await zarr_async.open_array(store=store, path="a")
        await theirs.setitem(4, 40)
        group = await zarr_async.open_group(store, mode="r")
        return (await theirs.getitem(slice(None)), await a.getitem(slice(None)),
                dict(group.attrs))
    theirs, ours, attrs = asyncio.run(program())
    assert theirs.tolist() == ours.tolist() == [0, -1, -1, 3, 40] and attrs == {"by": "zarrkit"}


# -- Array <-> AsyncArray, Group <-> AsyncGroup -------------------------------------------------

@pytest.mark.parametrize("library", ["zarr", "zarrkit"])
def test_sync_and_async_handles_convert_both_ways(library):
    top, m = LIBRARIES[library]

    async def program():
        aa = await m.zeros((4,), dtype="i4", chunks=(2,))
        sync = top.Array(aa)
        assert sync._async_array is aa and sync.async_array is aa
        await aa.resize((6,))
        assert sync.shape == (6,)  # one array: the async handle's resize is the sync one's
        sync[4:] = 7
        assert (await aa.getitem(slice(4, None))).tolist() == [7, 7]
        ag = await m.group()
        group = top.Group(ag)
        assert group._async_group is ag
        group.create_group("child")
        assert [k async for k in ag.group_keys()] == ["child"]
        child = group["child"]._async_group
        return type(child).__name__, type(sync).__name__, type(group).__name__
    assert asyncio.run(program()) == ("AsyncGroup", "Array", "Group")


def test_zarrkit_handles_stay_themselves():
    a = zarrkit.zeros((3,))
    aa = a._async_array
    assert isinstance(aa, zarrkit.AsyncArray) and zarrkit.Array(aa) is a
    assert a.async_array is aa and zarrkit.AsyncArray(a) == aa
    g = zarrkit.group()
    assert zarrkit.Group(g._async_group) is g
    assert repr(aa).startswith("<zarrkit.AsyncArray / shape=(3,)") and "AsyncGroup" in repr(
        g._async_group)
    assert aa.config == {"order": "C", "write_empty_chunks": False}
    assert aa.with_config(write_empty_chunks=True).config["write_empty_chunks"] is True
    assert str(zarrkit.open_group("memory://named")._async_group.store_path) == "memory://named"


def test_copies_have_their_own_handles(tmp_path):
    g = zarrkit.group(str(tmp_path / "g"))
    a = g.create_array("a", shape=(2,), dtype="i1")
    handles = g._async_group, a._async_array
    for node, handle in zip((g, a), handles, strict=True):  # asked for, they still pickle
        for other in (pickle.loads(pickle.dumps(node)), copy.copy(node)):
            assert other == node and type(other).__name__ == type(node).__name__
            theirs = other.async_array if isinstance(other, zarrkit.Array) else \
                other._async_group
            assert theirs is not handle and type(theirs) is type(handle)
    assert (g._async_group, a._async_array) == handles and g._async_group is handles[0]


# -- errors -------------------------------------------------------------------------------------

def test_errors_are_zarrkit_errors(tmp_path):
    async def program():
        with pytest.raises(zarrkit.NodeNotFoundError):
            await zarrkit_async.open_array(store=str(tmp_path / "none"), mode="r")
        a = await zarrkit_async.zeros((4,), chunks=(2,), store=str(tmp_path / "a"))
        with pytest.raises(zarrkit.SelectionError):
            await a.getitem(9)
        with pytest.raises(zarrkit.SpecError, match="delete_outside_chunks"):
            await a.resize((2,), delete_outside_chunks=None)
        assert a.shape == (4,)
        read_only = await zarrkit_async.open_array(store=str(tmp_path / "a"), mode="r")
        with pytest.raises(zarrkit.ReadOnlyError):
            await read_only.setitem(0, 1)
        g = await zarrkit_async.group(store=str(tmp_path / "g"))
        with pytest.raises(zarrkit.NodeNotFoundError):  # a KeyError, as zarr-python's
            await g.getitem("missing")
        await g.create_group("s")
        with pytest.raises(zarrkit.NodeExistsError):
            await g.create_group("s")
        with pytest.raises(zarrkit.NodeTypeError, match="wraps a Group"):
            zarrkit.Array(g)
        with pytest.raises(zarrkit.NodeTypeError, match="AsyncArray wraps a zarrkit.Array"):
            zarrkit.AsyncArray(zarrkit.Group(g))
    asyncio.run(program())
    with pytest.raises(zarrkit.NodeTypeError, match="takes an async handle"):
        zarrkit.Array(object())


def test_zarr_python_raises_key_error_too():
    async def program():
        g = await zarr_async.group()
        with pytest.raises(KeyError):
            await g.getitem("missing")
    asyncio.run(program())


@pytest.mark.parametrize("delete", [True, False])
def test_resize_keeps_chunks_outside_only_when_asked(tmp_path, delete):
    """zarr-python's delete_outside_chunks: False keeps the chunks outside as stored, so
    growing again shows their old values; True (the default) erases them."""
    async def program(module, where):
        a = await module.zeros((6,), chunks=(2,), dtype="i4", store=where)
        await a.setitem(slice(None), np.arange(1, 7, dtype="i4"))
        await a.resize((3,), delete_outside_chunks=delete)
        await a.resize((6,))
        return (await a.getitem(slice(None))).tolist()

    ours = asyncio.run(program(zarrkit_async, str(tmp_path / "zk")))
    if delete:  # zarrkit also clears the edge chunk's part outside; zarr-python keeps the 4
        assert ours == [1, 2, 3, 0, 0, 0]
    else:
        assert ours == asyncio.run(program(zarr_async, str(tmp_path / "zp"))) == [1, 2, 3, 4, 5, 6]


def test_sync_resize_keywords(tmp_path):
    a = zarrkit.zeros((4,), chunks=(2,), dtype="i4", store=str(tmp_path / "a"))
    a[:] = [1, 2, 3, 4]
    a.resize((2,), delete_outside_chunks=False)
    a.resize(4)
    assert a[:].tolist() == [1, 2, 3, 4]
    with pytest.raises(zarrkit.SpecError, match="bogus"):
        a.resize((2,), bogus=1)
    with pytest.raises(zarrkit.SpecError, match="resize_metadata_only"):
        a.resize(exclusive_max=(2,), delete_outside_chunks=False)
    assert a.shape == (4,)

"""zarr-python 3's asynchronous API: `zarrkit.api.asynchronous`, `AsyncArray`, `AsyncGroup`.

A thin layer over the synchronous objects: every coroutine runs the synchronous call in a
thread of this module's pool, so the event loop keeps running meanwhile. Its threads are not
the engine's (`engine/executor.py`): a read or write started from one still spreads its chunks
over the engine's pool, whose tasks never wait on this pool, so neither can deadlock the other.
An `AsyncArray` wraps one `Array` (`zarrkit.Array(async_array)` gives that very array back,
`array._async_array` its one live async handle), so the two see each other's resizes.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from . import api, consolidated, conversion, copying
from .array import Array
from .errors import NodeTypeError, ZarrkitError
from .group import Group
from .kvstore import kvstore_spec, kvstore_spec_to_url

R = TypeVar("R")

#: Threads running synchronous calls for coroutines. They mostly wait: on the store, or on
#: the engine's threads doing the chunk work; a few calls in flight at once keep both busy.
_THREADS = 8

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            # Not named "zarrkit...": the engine must see these as callers, not its own threads.
            _pool = ThreadPoolExecutor(_THREADS, thread_name_prefix="zkasync")
        return _pool


def _after_fork_in_child() -> None:
    """A forked child has none of the pool's threads (and a lock held at the fork would never
    be released); it starts a new pool when needed."""
    global _pool, _lock, _handles_lock
    _pool, _lock, _handles_lock = None, threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


async def _run(fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
    """`fn(*args, **kwargs)` in the pool, in the caller's context (as `asyncio.to_thread`)."""
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_executor(), call)


# -- conversions -----------------------------------------------------------------------------------
#: The live async handle of each node, by the node's id: a handle keeps its node alive, so
#: the id is that node's while the entry lasts. Kept here, not on the node, whose state
#: pickles and copies (a copy must not share the original's handle).
_handles: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
_handles_lock = threading.Lock()


def async_node(node: Any) -> Any:
    """The async handle of a zarrkit node (the same one while it lives), anything else as is."""
    if not isinstance(node, Array | Group):
        return node
    with _handles_lock:
        live = _handles.get(id(node))
        if live is None:
            live = AsyncArray(node) if isinstance(node, Array) else AsyncGroup(node)
            _handles[id(node)] = live
        return live


def _sync(value: Any) -> Any:
    """The zarrkit node an async handle wraps (given to the synchronous API), else `value`."""
    return value._zarrkit_node if isinstance(value, AsyncArray | AsyncGroup) else value


def _unwrapped(args: Iterable[Any], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    return [_sync(a) for a in args], {k: _sync(v) for k, v in kwargs.items()}


def _coroutine(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The coroutine function of the synchronous `fn`: the same arguments (async handles
    among them stand for their nodes), its result with nodes as async handles."""
    @functools.wraps(fn)
    async def run(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = _unwrapped(args, kwargs)
        return async_node(await _run(fn, *args, **kwargs))

    run.__module__ = __name__
    sync_doc = fn.__doc__ or ""
    run.__doc__ = f"`zarrkit.{fn.__name__}`, awaited (run on a worker thread).\n\n{sync_doc}"
    return run


async def _items(fn: Callable[[], Iterable[Any]]) -> list[Any]:
    """The items `fn()` gives, listed in the pool (listing a group reads the store)."""
    return await _run(lambda: list(fn()))


@dataclass(frozen=True)
class StorePath:
    """zarr-python's `StorePath`: the store and the node's path in it."""

    store: Any
    path: str

    def __str__(self) -> str:
        """The node's URL, as zarr-python prints a store path (the store's repr and the path
        for a store without one, an anonymous memory store)."""
        try:
            return kvstore_spec_to_url(kvstore_spec(self.store, self.path)).rstrip("/")
        except ZarrkitError:
            return f"{self.store!r}/{self.path}"


def _forward(name: str) -> property:
    """A property read from the wrapped node: metadata held in memory, no store access."""
    return property(lambda self: getattr(self._zarrkit_node, name),
                    doc=f"The wrapped node's `{name}`.")


class _AsyncNode:
    """What `AsyncArray` and `AsyncGroup` share: the node and where it lives."""

    _kind: type = object

    def __init__(self, node: Any) -> None:
        if not isinstance(node, self._kind):
            raise NodeTypeError(f"{type(self).__name__} wraps a zarrkit.{self._kind.__name__}; "
                                f"got {type(node).__name__}")
        self._zarrkit_node = node

    attrs = _forward("attrs")
    basename = _forward("basename")
    info = _forward("info")
    metadata = _forward("metadata")
    name = _forward("name")
    path = _forward("path")
    read_only = _forward("read_only")
    store = _forward("store")
    zarr_format = _forward("zarr_format")

    @property
    def store_path(self) -> StorePath:
        return StorePath(self._zarrkit_node.store, self._zarrkit_node.path)

    async def info_complete(self) -> Any:
        return await _run(self._zarrkit_node.info_complete)

    async def update_attributes(self, new_attributes: dict[str, Any]) -> Any:
        """Merge `new_attributes` into the stored attributes; returns this handle."""
        await _run(self._zarrkit_node.update_attributes, new_attributes)
        return self

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, _AsyncNode)
        return bool(self._zarrkit_node == other._zarrkit_node)

    def __hash__(self) -> int:
        return hash(self._zarrkit_node)

    def __repr__(self) -> str:
        return repr(self._zarrkit_node).replace("zarrkit.", "zarrkit.Async", 1)


# -- arrays --------------------------------------------------------------------------------------
class _AsyncIndex:
    """`AsyncArray.oindex` / `.vindex`: `await a.oindex.getitem(selection)`."""

    def __init__(self, array: Array, kind: str) -> None:
        self.array, self._kind = array, kind

    async def getitem(self, selection: Any) -> Any:
        return await _run(lambda: getattr(self.array, self._kind)[selection])


class AsyncArray(_AsyncNode):
    """zarr-python's `AsyncArray` over a zarrkit `Array`: its descriptive properties as they
    are, its reads, writes and store queries as coroutines. `zarrkit.Array(async_array)` is
    the wrapped array."""

    _kind = Array

    cdata_shape = _forward("cdata_shape")
    chunks = _forward("chunks")
    compressor = _forward("compressor")
    compressors = _forward("compressors")
    dimension_names = _forward("dimension_names")
    dtype = _forward("dtype")
    fill_value = _forward("fill_value")
    filters = _forward("filters")
    nbytes = _forward("nbytes")
    nchunks = _forward("nchunks")
    ndim = _forward("ndim")
    order = _forward("order")
    serializer = _forward("serializer")
    shape = _forward("shape")
    shards = _forward("shards")
    size = _forward("size")

    @property
    def config(self) -> dict[str, Any]:
        """The handle's settings, as zarr-python's `ArrayConfig`."""
        return {"order": "C", "write_empty_chunks": self._zarrkit_node.write_empty_chunks}

    @property
    def oindex(self) -> _AsyncIndex:
        return _AsyncIndex(self._zarrkit_node, "oindex")

    @property
    def vindex(self) -> _AsyncIndex:
        return _AsyncIndex(self._zarrkit_node, "vindex")

    # -- opening ---------------------------------------------------------------------------------
    @classmethod
    async def open(cls, store: Any, zarr_format: int | None = None) -> AsyncArray:
        """The existing array at `store` (its format detected unless `zarr_format` is given)."""
        return async_node(await _run(Array.open, _sync(store), zarr_format=zarr_format))

    @classmethod
    async def create(cls, store: Any, *, shape: Any, dtype: Any, **kwargs: Any) -> AsyncArray:
        """zarr-python's deprecated `AsyncArray.create`: `zarrkit.create`'s keywords."""
        return async_node(await _run(api.create, _sync(store), shape, dtype, **kwargs))

    def with_config(self, config: Any = None, **options: Any) -> AsyncArray:
        return async_node(self._zarrkit_node.with_config(config, **options))

    # -- reading and writing ---------------------------------------------------------------------
    async def getitem(self, selection: Any, *, prototype: Any = None) -> Any:
        return await _run(self._zarrkit_node.get_basic_selection, selection, prototype=prototype)

    async def setitem(self, selection: Any, value: Any, prototype: Any = None) -> None:
        await _run(self._zarrkit_node.set_basic_selection, selection, _sync(value),
                   prototype=prototype)

    async def get_orthogonal_selection(self, selection: Any, *, out: Any = None,
                                       fields: Any = None, prototype: Any = None) -> Any:
        return await _run(self._zarrkit_node.get_orthogonal_selection, selection, out=out,
                          fields=fields, prototype=prototype)

    async def get_mask_selection(self, mask: Any, *, out: Any = None, fields: Any = None,
                                 prototype: Any = None) -> Any:
        return await _run(self._zarrkit_node.get_mask_selection, mask, out=out, fields=fields,
                          prototype=prototype)

    async def get_coordinate_selection(self, selection: Any, *, out: Any = None,
                                       fields: Any = None, prototype: Any = None) -> Any:
        return await _run(self._zarrkit_node.get_coordinate_selection, selection, out=out,
                          fields=fields, prototype=prototype)

    # -- shape and store -------------------------------------------------------------------------
    async def resize(self, new_shape: Any, delete_outside_chunks: bool = True) -> None:
        """Change the shape (`Array.resize`): the chunks outside it are erased unless
        `delete_outside_chunks` is False."""
        await _run(self._zarrkit_node.resize, new_shape,
                   delete_outside_chunks=delete_outside_chunks)

    async def append(self, data: Any, axis: int = 0) -> tuple[int, ...]:
        return await _run(self._zarrkit_node.append, _sync(data), axis)

    async def nchunks_initialized(self) -> int:
        return int(await _run(lambda: self._zarrkit_node.nchunks_initialized))

    async def nbytes_stored(self) -> int:
        return await _run(self._zarrkit_node.nbytes_stored)


# -- groups --------------------------------------------------------------------------------------
class AsyncGroup(_AsyncNode):
    """zarr-python's `AsyncGroup` over a zarrkit `Group`: member access and creation as
    coroutines, listings as async iterators. `zarrkit.Group(async_group)` is the wrapped
    group."""

    _kind = Group

    @property
    def synchronizer(self) -> None:
        """zarr-python 2's synchronizer, which zarrkit does without (writes lock by key)."""
        return None

    # -- opening ---------------------------------------------------------------------------------
    @staticmethod
    async def open(store: Any, zarr_format: int | None = None,
                   use_consolidated: bool | None = None) -> AsyncGroup:
        return async_node(await _run(Group.open, _sync(store), zarr_format=zarr_format,
                                     use_consolidated=use_consolidated))

    @staticmethod
    async def from_store(store: Any, *, attributes: dict[str, Any] | None = None,
                         overwrite: bool = False, zarr_format: int = 3) -> AsyncGroup:
        return async_node(await _run(Group.from_store, _sync(store), attributes=attributes,
                                     overwrite=overwrite, zarr_format=zarr_format))

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """The coroutine of the group's `method` (arguments and result as `_coroutine`)."""
        args, kwargs = _unwrapped(args, kwargs)

        async def run() -> Any:
            return async_node(await _run(getattr(self._zarrkit_node, method), *args, **kwargs))
        return run()

    # -- members ---------------------------------------------------------------------------------
    async def getitem(self, key: str) -> AsyncArray | AsyncGroup:
        return await self._call("__getitem__", key)

    async def get(self, key: str, default: Any = None) -> Any:
        return await self._call("get", key, default)

    async def contains(self, member: str) -> bool:
        return await self._call("__contains__", member)

    async def setitem(self, key: str, value: Any) -> None:
        await self._call("__setitem__", key, value)

    async def delitem(self, key: str) -> None:
        await self._call("__delitem__", key)

    async def move(self, source: str, dest: str) -> None:
        await self._call("move", source, dest)

    async def nmembers(self, max_depth: int | None = 0) -> int:
        return await self._call("nmembers", max_depth)

    async def tree(self, expand: bool | None = None, level: int | None = None, *,
                   max_nodes: int = 500, plain: bool = False) -> str:
        """The hierarchy as indented text (`expand`, `max_nodes` and `plain` shape
        zarr-python's rich display, which zarrkit does not draw)."""
        return await self._call("tree", level)

    async def members(self, max_depth: int | None = 0, *,
                      use_consolidated_for_children: bool = True
                      ) -> AsyncIterator[tuple[str, AsyncArray | AsyncGroup]]:
        listed = await _items(lambda: self._zarrkit_node.members(
            max_depth, use_consolidated_for_children=use_consolidated_for_children))
        for key, node in listed:
            yield key, async_node(node)

    async def keys(self) -> AsyncIterator[str]:
        for key in await _items(self._zarrkit_node.keys):
            yield key

    async def array_keys(self) -> AsyncIterator[str]:
        for key in await _items(self._zarrkit_node.array_keys):
            yield key

    async def group_keys(self) -> AsyncIterator[str]:
        for key in await _items(self._zarrkit_node.group_keys):
            yield key

    async def arrays(self) -> AsyncIterator[tuple[str, AsyncArray]]:
        for key, node in await _items(self._zarrkit_node.arrays):
            yield key, async_node(node)

    async def groups(self) -> AsyncIterator[tuple[str, AsyncGroup]]:
        for key, node in await _items(self._zarrkit_node.groups):
            yield key, async_node(node)

    async def array_values(self) -> AsyncIterator[AsyncArray]:
        for node in await _items(self._zarrkit_node.array_values):
            yield async_node(node)

    async def group_values(self) -> AsyncIterator[AsyncGroup]:
        for node in await _items(self._zarrkit_node.group_values):
            yield async_node(node)

    # -- creating members ------------------------------------------------------------------------
    async def create_array(self, name: str, **kwargs: Any) -> AsyncArray:
        return await self._call("create_array", name, **kwargs)

    async def create_dataset(self, name: str, **kwargs: Any) -> AsyncArray:
        return await self._call("create_dataset", name, **kwargs)

    async def create_group(self, name: str, *, overwrite: bool = False,
                           attributes: dict[str, Any] | None = None) -> AsyncGroup:
        return await self._call("create_group", name, overwrite=overwrite,
                                attributes=attributes)

    async def require_group(self, name: str, overwrite: bool = False) -> AsyncGroup:
        """The group member `name`, created if missing (replacing what is there if
        `overwrite`)."""
        if overwrite:
            return await self.create_group(name, overwrite=True)
        return await self._call("require_group", name)

    async def require_groups(self, *names: str) -> tuple[AsyncGroup, ...]:
        groups = await _run(self._zarrkit_node.require_groups, *names)
        return tuple(async_node(g) for g in groups)

    async def require_array(self, name: str, **kwargs: Any) -> AsyncArray:
        return await self._call("require_array", name, **kwargs)

    async def require_dataset(self, name: str, **kwargs: Any) -> AsyncArray:
        return await self._call("require_dataset", name, **kwargs)

    async def create_hierarchy(self, nodes: Any, *, overwrite: bool = False
                               ) -> AsyncIterator[tuple[str, AsyncArray | AsyncGroup]]:
        made = await _run(self._zarrkit_node.create_hierarchy, nodes, overwrite=overwrite)
        for path, node in made.items():
            yield path, async_node(node)

    async def empty(self, *, name: str, shape: Any, **kwargs: Any) -> AsyncArray:
        return await self._call("empty", name, shape, **kwargs)

    async def zeros(self, *, name: str, shape: Any, **kwargs: Any) -> AsyncArray:
        return await self._call("zeros", name, shape, **kwargs)

    async def ones(self, *, name: str, shape: Any, **kwargs: Any) -> AsyncArray:
        return await self._call("ones", name, shape, **kwargs)

    async def full(self, *, name: str, shape: Any, fill_value: Any, **kwargs: Any
                   ) -> AsyncArray:
        return await self._call("full", name, shape, fill_value, **kwargs)

    async def empty_like(self, *, name: str, data: Any, **kwargs: Any) -> AsyncArray:
        return await self._call("empty_like", name, data, **kwargs)

    async def zeros_like(self, *, name: str, data: Any, **kwargs: Any) -> AsyncArray:
        return await self._call("zeros_like", name, data, **kwargs)

    async def ones_like(self, *, name: str, data: Any, **kwargs: Any) -> AsyncArray:
        return await self._call("ones_like", name, data, **kwargs)

    async def full_like(self, *, name: str, data: Any, **kwargs: Any) -> AsyncArray:
        return await self._call("full_like", name, data, **kwargs)


# -- the module functions (zarr.api.asynchronous) --------------------------------------------------
open = _coroutine(api.open)
open_array = _coroutine(api.open_array)
open_group = _coroutine(api.open_group)
open_consolidated = _coroutine(api.open_consolidated)
open_like = _coroutine(api.open_like)
group = _coroutine(api.group)
create = _coroutine(api.create)
create_array = _coroutine(api.create_array)
create_group = _coroutine(api.create_group)
array = _coroutine(api.array)
empty = _coroutine(api.empty)
zeros = _coroutine(api.zeros)
ones = _coroutine(api.ones)
full = _coroutine(api.full)
empty_like = _coroutine(api.empty_like)
zeros_like = _coroutine(api.zeros_like)
ones_like = _coroutine(api.ones_like)
full_like = _coroutine(api.full_like)
from_array = _coroutine(conversion.from_array)
load = _coroutine(api.load)
save = _coroutine(api.save)
save_array = _coroutine(api.save_array)
save_group = _coroutine(api.save_group)
consolidate_metadata = _coroutine(consolidated.consolidate_metadata)
copy = _coroutine(copying.copy)
copy_all = _coroutine(copying.copy_all)
copy_store = _coroutine(copying.copy_store)


async def tree(grp: Any, expand: bool | None = None, level: int | None = None) -> str:
    """The hierarchy below `grp` as indented text (zarr-python's `tree`; `expand` shapes its
    rich display, which zarrkit does not draw)."""
    return await _run(api.tree, _sync(grp), level)


async def create_hierarchy(*args: Any, **kwargs: Any
                           ) -> AsyncIterator[tuple[str, AsyncArray | AsyncGroup]]:
    """`zarrkit.create_hierarchy`, its nodes yielded by path as they are in zarr-python."""
    args, kwargs = _unwrapped(args, kwargs)
    for path, node in (await _run(api.create_hierarchy, *args, **kwargs)).items():
        yield path, async_node(node)


__all__ = ["AsyncArray", "AsyncGroup", "array", "consolidate_metadata", "copy", "copy_all",
           "copy_store", "create", "create_array", "create_group", "create_hierarchy", "empty",
           "empty_like", "from_array", "full", "full_like", "group", "load", "ones", "ones_like",
           "open", "open_array", "open_consolidated", "open_group", "open_like", "save",
           "save_array", "save_group", "tree", "zeros", "zeros_like"]

# `zarrkit.api.asynchronous`, where zarr-python has it, without making api.py a package (as
# `os.path` is another module's name): the import system finds it here in sys.modules.
sys.modules[f"{api.__name__}.asynchronous"] = sys.modules[__name__]
api.asynchronous = sys.modules[__name__]  # type: ignore[attr-defined]

"""What arrays gain from the spec layer: TensorStore's descriptions, views, spec(), pickling,
and its object API (`read`/`write`/`resolve` futures, `storage_statistics`, `mode`, `kvstore`,
`url`).

`SpecNode` is a mixin of `Array`. It relies only on the array's `store`, `path`, `_metadata`,
`read_only`, `write_empty_chunks` and indexing, so this module imports nothing of the node
layer but `storage.prefix_of` (the chunk keys' prefix, to drop cached chunks).
`OpenState` is what opening from a spec adds to an array: its context, cache pool and
revalidation bounds.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .. import storage
from ..engine.cache import CacheBinding
from ..errors import MetadataError, SpecError
from ..kvstore import MemoryStore, kvstore_spec, kvstore_spec_to_url
from ..kvstore._io_resources import DRIVER_RESOURCES
from ..metadata.data_type import TEXT_KINDS
from ..metadata.json import json_dumps
from .chunk_layout import ChunkLayout
from .context import CachePool, Context
from .futures import Resolved, StorageStatistics, ViewFuture, WriteFutures
from .metadata_cache import SharedMetadata
from .schema import CodecSpec, Schema, dtype_name
from .spec import Spec
from .transform import IndexDomain, IndexTransform, spec_transform
from .units import Units
from .view import View, _submit
from .zarr3 import chunk_layout_of, codec_of, domain_of, dtype_of, schema_of, units_of


def check_revalidation_bound(value: Any, where: str) -> Any:
    """TensorStore's CacheRevalidationBound: true, false, "open" or a time (seconds since
    the epoch)."""
    if isinstance(value, bool) or value == "open":
        return value
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    raise SpecError(f"{where}: expected true, false, \"open\" or a time in seconds, got "
                    f"{value!r}")


@dataclass
class OpenState:
    """Options an array was opened with from a spec."""

    context: Context = field(default_factory=Context)
    cache_pool: CachePool | None = None
    recheck_cached_data: Any = True
    recheck_cached_metadata: Any = "open"
    assume_metadata: bool = False
    opened_at: float = field(default_factory=time.time)
    cached_shape: tuple[int, ...] | None = None
    metadata_read_at: float | None = None  # when the metadata in use was read (None: at open)
    #: Bounds on concurrent codec/copy tasks and file I/O (semaphores); None: unbounded.
    copy_limit: Any = None
    io_limit: Any = None
    #: The resources in use by kind: (the name defining it, None if inline; the resource),
    #: which a spec retaining the context names (the kvstore's resources as its members).
    bound: dict[str, tuple[str | None, Any]] = field(default_factory=dict)
    #: The kvstore's resources a spec retaining the context writes in the kvstore member
    #: (file_io_locking, *_request_retries, ...), resolved.
    kvstore_members: dict[str, Any] = field(default_factory=dict)
    #: False: reads of chunks not stored raise ChunkNotFoundError instead of filling them in.
    fill_missing_data_reads: bool = True
    #: The cache pool's entry for this array (None with assume_metadata), and the entry's
    #: metadata this handle last adopted: another object means another handle changed it.
    shared: SharedMetadata | None = None
    shared_seen: Any = None

    def min_time(self) -> Any:
        """When cached data must have been read to be served (None: never serve)."""
        bound = self.recheck_cached_data
        if bound is True:
            return None
        if bound is False:
            return lambda: -math.inf
        if bound == "open":
            return lambda: self.opened_at
        return lambda: bound

    def metadata_stale(self) -> bool:
        """Whether recheck_cached_metadata asks to read the metadata again before use."""
        bound = self.recheck_cached_metadata
        if bound is True:
            return True
        if bound is False or bound == "open":
            return False
        read_at = self.opened_at if self.metadata_read_at is None else self.metadata_read_at
        return read_at < bound

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.assume_metadata:  # TensorStore records it: the spec reopens without reading
            out["assume_metadata"] = True
        if self.recheck_cached_data is not True:
            out["recheck_cached_data"] = self.recheck_cached_data
        if not self.fill_missing_data_reads:  # TensorStore records only the non-default
            out["fill_missing_data_reads"] = False
        if self.recheck_cached_metadata != "open":
            out["recheck_cached_metadata"] = self.recheck_cached_metadata
        return out


def store_identity(store: Any) -> Any:
    """Equal for handles on the same data: a cache pool shares entries between them."""
    if isinstance(store, MemoryStore):
        return ("memory", id(store._data))
    return (type(store).__name__, repr(sorted(store.to_json().items())))


def location_key(store: Any, path: str, zarr_format: int) -> Any:
    """What TensorStore's metadata cache tells arrays apart by: the store and the full path
    (however a spec splits it between `kvstore.path` and `path`), and the driver."""
    spec = kvstore_spec(store, path)
    spec["path"] = str(spec.get("path", "")).strip("/")
    where = ("memory", id(store._data)) if isinstance(store, MemoryStore) else type(store).__name__
    return where, json_dumps(dict(sorted(spec.items()))).decode(), zarr_format


def decoding_identity(md: Any) -> str:
    """What decides how stored chunks decode: the metadata without its shape (a resize keeps
    every chunk valid), attributes and names. Cached chunks are keyed by it, so arrays with
    other metadata at the same keys (replaced by delete_existing) never share entries, as
    TensorStore keys its chunk caches by the metadata too."""
    json = md.to_json()
    return json_dumps({k: v for k, v in json.items()
                       if k not in ("shape", "attributes", "dimension_names")}).decode()


def location_json(store: Any, path: str) -> dict[str, Any]:
    """The `kvstore` member naming the node at `path` in `store`."""
    spec = kvstore_spec(store, path)
    if path:  # a node is a directory: TensorStore writes its path with a trailing slash
        spec["path"] = spec["path"].rstrip("/") + "/"
    return {"kvstore": spec}


def spec_dtype(md: Any) -> str | None:
    """The data type's TensorStore name; None for types it has none for (v2 "|S4", records,
    datetimes), which a spec's `dtype` could not name and its metadata describes anyway."""
    try:
        return dtype_name(dtype_of(md))
    except SpecError:
        return None


def spec_metadata(md: Any) -> dict[str, Any]:
    """The metadata a spec records: without the type and fill value of text and object arrays,
    which TensorStore specs cannot hold (the spec would not reopen); the stored ones apply."""
    json = md.to_json()
    if getattr(md, "zarr_format", 3) == 3 and md.data_type.kind in TEXT_KINDS:
        drop: tuple[str, ...] = ("data_type", "fill_value")
    elif getattr(md, "zarr_format", 3) == 2 and md.dtype.hasobject:
        drop = ("dtype", "filters", "fill_value")
    else:
        drop = ()
    return {k: v for k, v in json.items() if k not in drop}


#: Resources of the kvstore (its I/O bounds, rate limiter and memory store) rather than of
#: the driver.
KVSTORE_RESOURCES = frozenset(
    {"memory_key_value_store"} | {kind for roles in DRIVER_RESOURCES.values()
                                  for kind in (roles.concurrency, roles.rate_limiter) if kind})


def retained(json: dict[str, Any], bound: dict[str, tuple[str | None, Any]]) -> Context:
    """Record in a spec's `json` the resources an array uses, as TensorStore's
    retain_context: each named one defined in one flat `context` by its resolved JSON (no
    aliases: an alias of the outer context could mean another resource there), inline ones
    as their member. Returns the context holding these very resources."""
    named, inline = {}, {}
    for kind, (name, resource) in bound.items():
        # The kvstore's own resources are its members, as TensorStore writes them.
        member = json["kvstore"] if kind in KVSTORE_RESOURCES else json
        if name is None:
            member[kind] = resource.to_json()
            inline[kind] = resource
        else:
            named[name] = resource
            if name != kind:
                member[kind] = name
    context = Context.bound(named, inline)
    json["context"] = context.to_json()
    return context


class SpecNode(Resolved):
    """TensorStore-style description, views, `spec()` and resizing for arrays, and the
    members of TensorStore's `TensorStore` (`read()`, `write()`, `storage_statistics()`,
    ... returning futures; the array is also the completed future of its open)."""

    StorageStatistics = StorageStatistics

    _open_state: OpenState | None = None
    #: Reads call `_recheck_metadata` first; set only while recheck_cached_metadata asks for
    #: it, so other arrays pay one attribute test.
    _rechecks_metadata: bool = False

    @property
    def _metadata_assumed(self) -> bool:
        """Opened with assume_metadata: the stored metadata is neither read nor written."""
        return self._open_state is not None and self._open_state.assume_metadata

    # -- descriptions ----------------------------------------------------------------------------
    @property
    def domain(self) -> IndexDomain:
        """[0, shape) with resizable upper bounds, labelled by valid dimension_names."""
        return domain_of(self._metadata)

    @property
    def rank(self) -> int:
        return len(self._metadata.shape)

    @property
    def origin(self) -> tuple[int, ...]:
        """The domain's inclusive lower bounds (all 0), as TensorStore's `origin`."""
        return self.domain.origin

    # -- TensorStore's TensorStore ---------------------------------------------------------------
    @property
    def readable(self) -> bool:
        return True

    @property
    def writable(self) -> bool:
        return not self.read_only

    @property
    def mode(self) -> str:
        """TensorStore's: "r" (read only) or "rw"."""
        return "r" if self.read_only else "rw"

    @property
    def kvstore(self) -> dict[str, Any]:
        """The kvstore spec of the array's directory, as TensorStore's `kvstore`
        ({"driver": "file", "path": "/data/a/"}; a dict, as `Spec.kvstore` here)."""
        return location_json(self.store, self.path)["kvstore"]

    @property
    def url(self) -> str:
        """TensorStore's URL of the array ("file:///data/a/|zarr3:"); SpecError for a store
        without one (an unnamed memory store) or a Zarr v1 array."""
        fmt = getattr(self._metadata, "zarr_format", 3)
        if fmt not in (2, 3):
            raise SpecError(f"array {self.name} is Zarr v{fmt}: no TensorStore driver opens it")
        return f"{kvstore_spec_to_url(self.kvstore)}|zarr{fmt}:"

    def read(self) -> ViewFuture:
        """A future of all the values (TensorStore's `read()`; `a[...]` reads at once)."""
        return self.view.read()

    def write(self, source: Any) -> WriteFutures:
        """Write `source` (broadcast to the array's shape) as TensorStore's `write()`: the
        source is copied before returning; the future completes once it is stored."""
        return self.view.write(source)

    def storage_statistics(self, *, query_not_stored: bool = False,
                           query_fully_stored: bool = False) -> ViewFuture:
        """A future of TensorStore's `StorageStatistics`: whether no chunk / every chunk of
        the array is stored (of a sharded array: its inner chunks)."""
        return self.view.storage_statistics(query_not_stored=query_not_stored,
                                            query_fully_stored=query_fully_stored)

    @property
    def transaction(self) -> Any:
        """TensorStore's: the transaction this handle reads and writes through; None."""
        return None

    def with_transaction(self, transaction: Any) -> Any:
        """TensorStore's: this array bound to `transaction` (a `zarrkit.Transaction`), its
        writes staged until the commit (spec/transaction.py); None: this array."""
        from .transaction import bind  # it subclasses Array, which builds on this module

        return bind(self, transaction)

    def resolve(self, *, fix_resizable_bounds: bool = False) -> ViewFuture:
        """A future of the array with the stored shape (TensorStore's `resolve()`); with
        `fix_resizable_bounds`, a view whose bounds are explicit."""
        if fix_resizable_bounds:
            return self.view.resolve(fix_resizable_bounds=True)
        return _submit(self._resolved)

    def _resolved(self) -> Any:
        self._resolve_metadata()
        return self

    def _resolve_metadata(self) -> None:
        """The metadata `resolve()` resolves against: as TensorStore, the cached one unless
        the spec's recheck_cached_metadata asks for a read; an array not opened from a spec
        has no such bound, and reads it."""
        if self._open_state is None:
            self._follow_resize()
        else:
            self._before_view_io()

    @property
    def chunk_layout(self) -> ChunkLayout:
        return chunk_layout_of(self._metadata)

    @property
    def codec(self) -> CodecSpec:
        return codec_of(self._metadata)

    @property
    def dimension_units(self) -> Units:
        """One `Unit` (or None) per dimension, from the `dimension_units` attribute."""
        return units_of(self._metadata) or (None,) * self.rank

    @property
    def schema(self) -> Schema:
        return schema_of(self._metadata)

    def spec(self, *, minimal_spec: bool = False, retain_context: bool = False,
             transform: IndexTransform | None = None, **modes: Any) -> Spec:
        """The spec that reopens this array (or, with `transform`, a view of it).

        `open`, `create`, `delete_existing`, `assume_metadata`, ... keywords are recorded as
        members; `minimal_spec` leaves out the metadata; `retain_context` keeps the context.
        """
        md = self._metadata
        fmt = getattr(md, "zarr_format", 3)
        if fmt not in (2, 3):
            raise SpecError(f"array {self.name} is Zarr v{fmt}: no TensorStore driver opens it")
        json: dict[str, Any] = {"driver": "zarr3" if fmt == 3 else "zarr",
                                **location_json(self.store, self.path)}
        dtype = spec_dtype(md)
        if dtype is not None:
            json["dtype"] = dtype
        if not minimal_spec:
            json["metadata"] = spec_metadata(md)
        state = self._open_state
        if state is not None:
            json.update(state.to_json())
            if retain_context:
                context = retained(json, state.bound)
                json["kvstore"].update(copy.deepcopy(state.kvstore_members))
                if json["kvstore"].get("driver") == "file":  # as TensorStore: its resolved value
                    json["kvstore"]["file_io_sync"] = bool(getattr(self.store, "fsync", True))
        if self.write_empty_chunks:  # both drivers record it
            json["store_data_equal_to_fill_value"] = True
        json["transform"] = spec_transform(
            transform or IndexTransform.identity(self.domain)).to_json()
        json.update({k: v for k, v in modes.items() if v is not None})
        spec = Spec(json)
        if state is not None and retain_context:
            spec._bound_context = context
        return spec

    # -- views -----------------------------------------------------------------------------------
    @property
    def view(self) -> View:
        """A lazy view of the whole array (TensorStore-style indexing and operations)."""
        return View(self, IndexTransform.identity(self.domain))

    def _view_operation(name: str) -> Any:  # noqa: N805 - builds the properties below
        """The whole array's view's subscript operation `name`: `a.label[...]` is
        `a.view.label[...]`, as in TensorStore."""
        return property(lambda self: getattr(self.view, name))

    translate_to = _view_operation("translate_to")
    translate_by = _view_operation("translate_by")
    translate_backward_by = _view_operation("translate_backward_by")
    mark_bounds_implicit = _view_operation("mark_bounds_implicit")
    label = _view_operation("label")
    del _view_operation

    @property
    def T(self) -> View:  # noqa: N802 - numpy's and TensorStore's name
        return self.view.T

    def transpose(self, axes: Any = None) -> View:
        return self.view.transpose(axes)

    def astype(self, dtype: Any) -> View:
        """A lazy view of the array converting its elements to `dtype` (TensorStore's
        `astype`, zarr-python 2's `Array.astype`); see `zarrkit.cast`. numpy's names ("f4",
        "<i2") are taken too, as zarr-python 2 took them; views and `cast` refuse them, as
        TensorStore does."""
        if isinstance(dtype, str):
            try:
                dtype = np.dtype(dtype)
            except TypeError:  # TensorStore's own names ("string", "ustring")
                pass
        return self.view.astype(dtype)

    def _before_view_io(self) -> None:
        if self._rechecks_metadata:
            self._recheck_metadata()

    def _recheck_metadata(self) -> None:
        """Before a read or write of a handle opened from a spec: adopt the metadata another
        handle sharing its cache pool recorded (a resize), then, when recheck_cached_metadata
        asks, the stored one (a resize by another process, ...). Either may change only the
        shape (and attributes): anything else is a MetadataError."""
        state = self._open_state
        if state is None or self._metadata_assumed:
            self._rechecks_metadata = False
            return
        shared = state.shared
        if shared is not None and shared.metadata is not state.shared_seen:
            self._adopt_shared(shared.metadata)
        if state.metadata_stale():
            self._reread_metadata(state)
        elif shared is None:  # a time bound stops asking once metadata read after it is in use
            self._rechecks_metadata = False

    def _reread_metadata(self, state: OpenState) -> None:
        now = time.time()
        old = self._metadata
        seen = self._shared_snapshot()  # before the read
        self._adopt_stored_metadata()
        self._check_compatible(old, self._metadata)
        state.metadata_read_at = now
        self._offer_metadata(seen)

    def _check_compatible(self, old: Any, new: Any) -> None:
        """As TensorStore: only the shape may change under an open handle; other metadata
        (an array replaced by delete_existing) would change what its reads mean."""
        # (equal documents first: no JSON encoding of either when nothing changed)
        if new == old or decoding_identity(new) == decoding_identity(old):
            return
        if self._metadata is not old:
            self._set_metadata(old)
        raise MetadataError(f"array {self.name}: the metadata changed incompatibly since it "
                            "was opened (only the shape may change); open it again")

    def _adopt_shared(self, metadata: Any) -> None:
        """Take the shared entry's metadata (recorded by another handle) as this handle's."""
        self._check_compatible(self._metadata, metadata)
        if metadata != self._metadata:
            self._set_metadata(metadata)
        self._open_state.shared_seen = metadata  # type: ignore[union-attr]

    def _shared_snapshot(self) -> Any:
        """The shared entry's metadata before this handle reads the store (see
        `_offer_metadata`)."""
        state = self._open_state
        return None if state is None or state.shared is None else state.shared.metadata

    def _offer_metadata(self, seen: Any) -> None:
        """Record the metadata just read from the store in the shared entry, unless a write of
        this process recorded other metadata since `seen` (then that one is adopted)."""
        state = self._open_state
        if state is None or state.shared is None:
            return
        current = state.shared.offer(self._metadata, seen)
        if current is not self._metadata:
            self._adopt_shared(current)
        state.shared_seen = current

    def _publish_metadata(self, metadata: Any) -> None:
        """Record metadata this handle wrote (resize, attributes) for the handles sharing it;
        called under the store's lock of the document, so entries follow the stored order."""
        state = self._open_state
        if state is not None and state.shared is not None:
            state.shared_seen = state.shared.publish(metadata)

    # -- what the engine gets from the spec ------------------------------------------------------
    def _engine_options(self) -> dict[str, Any]:
        """Keywords for the engine's `ChunkedArray`: the cache pool, concurrency bounds and
        whether missing chunks read as the fill value."""
        state = self._open_state
        if state is None:
            return {}
        return {"cache": self._cache_binding(), "copy_limit": state.copy_limit,
                "io_limit": state.io_limit, "fill_missing": state.fill_missing_data_reads,
                "name": self.name}

    def _share_open_state(self, other: Any) -> None:
        """Give `other`, a new handle on this array, the settings a spec attached at open:
        its context (so the same cache pool and concurrency bounds), revalidation bounds and
        fill_missing_data_reads. A copy: each handle tracks its own cached shape and read time
        (the context's shared metadata entry is the same object, so the two follow each other).
        """
        state = self._open_state
        if state is None:
            return
        other._open_state = replace(state, bound=dict(state.bound))
        other._rechecks_metadata = self._rechecks_metadata
        other._set_metadata(other._metadata)  # rebuild the engine with the cache pool

    # -- the decoded-chunk cache -----------------------------------------------------------------
    def _cache_binding(self) -> CacheBinding | None:
        state = self._open_state
        if state is None or state.cache_pool is None or state.cache_pool.cache is None:
            return None
        identity = (store_identity(self.store), decoding_identity(self._metadata))
        binding = CacheBinding(state.cache_pool.cache, identity, state.min_time())
        shape = tuple(self._metadata.shape)
        if state.cached_shape is not None and state.cached_shape != shape:
            # A resize deletes chunks without the engine: drop what was cached of them.
            binding.invalidate_prefix(storage.prefix_of(self.path))
        state.cached_shape = shape
        return binding

    # -- resizing (TensorStore's keywords) -------------------------------------------------------
    def _resize_spec(self, inclusive_min: Any = None, exclusive_max: Any = None, *,
                     expand_only: bool = False, shrink_only: bool = False,
                     resize_metadata_only: bool = False) -> Any:
        # TensorStore's rules are those of resizing the view of the whole array.
        self.view.resize(inclusive_min, exclusive_max, expand_only=expand_only,
                         shrink_only=shrink_only, resize_metadata_only=resize_metadata_only)
        return self

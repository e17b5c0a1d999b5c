"""Opening arrays from TensorStore-style JSON specs: `{"driver": "zarr3", "kvstore": ...}`.

The glue between the spec layer and the nodes: it resolves the open mode (open, create,
delete_existing, assume_metadata, assume_cached_metadata) exactly as TensorStore does, checks an
existing array against the spec's constraints or writes the metadata TensorStore would choose,
and returns the `Array` (or, for a spec with a transform, a `View` of it). Both drivers take
the same path; what differs (members, constraints, the document) is in a small `_Driver` table,
with driver "zarr" (v2)'s constraints in `spec/zarr2.py`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import formats, storage
from ..array import Array
from ..codecs.numcodecs_v3 import check_creatable
from ..errors import NodeExistsError, NodeNotFoundError, NodeTypeError, SpecError
from ..formats import V3_KEY
from ..kvstore import KvStore, fold_node_path, normalize_kvstore_spec, open_kvstore
from ..kvstore._io_resources import RATE_LIMITERS, driver_resources
from ..metadata.json import json_dumps
from ..metadata.names import normalize_path
from ..metadata.v2 import ARRAY_KEY, ArrayMetadataV2
from ..metadata.v3 import ArrayMetadataV3
from .cast import open_cast
from .context import Context
from .node import OpenState, check_revalidation_bound, location_key
from .schema import Schema, json_dtype
from .spec import ZARR3_MEMBERS, Spec, check_driver
from .transaction import bind_opened, staged_store
from .transform import (
    IndexTransform,
    domain_through,
    layout_through,
    propagate_bounds,
    units_through,
)
from .view import View, check_constants
from .zarr2 import V2Constraints, labels_of, new_zarray
from .zarr2 import check_existing as check_zarr2
from .zarr3 import MetadataConstraints, check_existing, new_metadata

_SCHEMA_KEYWORDS = ("dtype", "shape", "domain", "rank", "chunk_layout", "codec", "fill_value",
                    "dimension_units", "schema")
_MODE_KEYWORDS = ("open", "create", "delete_existing", "assume_metadata",
                  "assume_cached_metadata")


@dataclass
class _Mode:
    open: bool
    create: bool
    delete_existing: bool
    assume_metadata: bool
    assume_cached_metadata: bool


def _flag(json: dict[str, Any], options: dict[str, Any], name: str) -> bool | None:
    value = options.get(name)
    if value is None:
        value = json.get(name)
    if value is not None and not isinstance(value, bool):
        raise SpecError(f"{name}: expected true or false, got {value!r}")
    return value


def _mode(json: dict[str, Any], options: dict[str, Any]) -> _Mode:
    """TensorStore's rules: open by default; delete_existing needs create and not open;
    assume_metadata and assume_cached_metadata need open and not delete_existing."""
    flags = {name: _flag(json, options, name) for name in _MODE_KEYWORDS}
    create = bool(flags["create"])
    opening = bool(flags["open"]) or not create  # neither set (or both false): open
    mode = _Mode(opening, create, bool(flags["delete_existing"]), bool(flags["assume_metadata"]),
                 bool(flags["assume_cached_metadata"]))
    if mode.delete_existing and not mode.create:
        raise SpecError("delete_existing: cannot be used without create")
    if mode.delete_existing and mode.open:
        raise SpecError("delete_existing: cannot be used with open")
    for name in ("assume_metadata", "assume_cached_metadata"):
        if getattr(mode, name) and not mode.open:
            raise SpecError(f"{name}: cannot be used without open")
        if getattr(mode, name) and mode.delete_existing:
            raise SpecError(f"{name}: cannot be used with delete_existing")
    return mode


def _location(json: dict[str, Any], read_only: bool, state: OpenState) -> tuple[Any, str]:
    kvstore, extra = fold_node_path(json["kvstore"], json.get("path", ""), fold=False)
    memory = _context_memory(kvstore, state.context)
    if memory is not None:  # a retained spec names it
        state.bound["memory_key_value_store"] = ("memory_key_value_store", memory)
    # Resources the kvstore refers to (file_io_sync, aws_credentials, ...) may be defined in
    # the spec's and the open's contexts, as in TensorStore.
    # Its rate limiter is the context's resource, shared with the stores of other opens.
    shared = {kind: bound[1].limits for kind, bound in state.bound.items()
              if kind in RATE_LIMITERS}
    store, base = open_kvstore(kvstore, read_only=read_only, context=state.context.for_kvstore(
        None if memory is None else memory.store, shared))
    state.kvstore_members = _kvstore_members(kvstore, state.context)
    return store, normalize_path(storage.join(base, extra.strip("/")) if extra.strip("/")
                                 else base)


def _context_memory(kvstore: Any, context: Context) -> Any:
    """The store a memory kvstore spec opens: its context's memory_key_value_store, as in
    TensorStore (whose path, named or not, is a path in it). None for other kvstores."""
    if not isinstance(kvstore, dict) or kvstore.get("driver") != "memory":
        return None
    if "context" in kvstore:
        context = Context(kvstore["context"], parent=context)
    return context.resource(kvstore.get("memory_key_value_store"), "memory_key_value_store",
                            "kvstore.memory_key_value_store")


def _schema(json: dict[str, Any], options: dict[str, Any], transform: Any) -> Schema:
    """The stored array's schema. As in TensorStore, the spec's own (`schema` and the top-level
    dtype) describes the array's dimensions even beside a transform, while the keyword
    constraints describe the view, so only they are mapped through the transform; the
    top-level rank is the view's (the transform's input rank)."""
    schema = Schema.from_json(json["schema"], where="schema") if "schema" in json else Schema()
    rank = json.get("rank") if transform is None else None
    if transform is not None and json.get("rank") not in (None, transform.input_rank):
        raise SpecError(f"rank: {json['rank']} does not match the transform's input rank "
                        f"{transform.input_rank}")
    schema.update(dtype=json_dtype(json.get("dtype")), rank=rank, where="spec")
    if transform is not None and schema.rank not in (None, transform.output_rank):
        raise SpecError(f"schema: rank {schema.rank} does not match the transform's output "
                        f"rank {transform.output_rank} (the schema describes the stored array)")
    keywords = Schema()
    keywords.update(where="open", **{k: options.get(k) for k in _SCHEMA_KEYWORDS})
    if transform is not None:
        keywords = _through_transform(keywords, transform)
    schema.update(keywords, where="open")
    return schema


def _through_transform(schema: Schema, transform: IndexTransform) -> Schema:
    """The keyword schema with its domain, chunk layout and dimension units (given in the
    transform's input space, as TensorStore reads them) mapped onto the array's dimensions;
    the codec is taken as given (TensorStore does not map it either)."""
    if schema.rank not in (None, transform.input_rank):
        raise SpecError(f"open: rank {schema.rank} does not match the transform's input rank "
                        f"{transform.input_rank}")
    json = schema.to_json()
    if schema.domain is not None:
        json["domain"] = domain_through(transform, schema.domain).to_json()
    if "chunk_layout" in json:
        json["chunk_layout"] = layout_through(transform, json["chunk_layout"])
    if "dimension_units" in json:
        json["dimension_units"] = units_through(transform, json["dimension_units"])
    json["rank"] = transform.output_rank
    return Schema(json)


def _state(json: dict[str, Any], options: dict[str, Any], mode: _Mode) -> OpenState:
    context = options.get("context")
    if context is not None and not isinstance(context, Context):
        context = Context(context)
    if "context" in json:
        context = Context(json["context"], parent=context)
    context = context or Context()
    bounds = {}
    for name, default in (("recheck_cached_data", True), ("recheck_cached_metadata", "open")):
        value = options.get(name)
        value = json.get(name, default) if value is None else value
        bounds[name] = check_revalidation_bound(value, name)
    for name in ("cache_pool", "data_copy_concurrency"):
        if name in json and json[name] is None:  # absent means the default; null is an error
            raise SpecError(f"{name}: expected a resource name or object, got null")
    bound = {kind: context.bind(json.get(kind), kind, kind)
             for kind in ("cache_pool", "data_copy_concurrency")}
    kvstore = _kvstore_resources(json, context)
    bound.update(kvstore)
    io = next((res for kind, (_, res) in kvstore.items() if kind not in RATE_LIMITERS), None)
    return OpenState(context, bound["cache_pool"][1], bounds["recheck_cached_data"],
                     bounds["recheck_cached_metadata"], mode.assume_metadata,
                     copy_limit=bound["data_copy_concurrency"][1].semaphore,
                     io_limit=None if io is None else io.semaphore, bound=bound,
                     fill_missing_data_reads=_fill_missing(json))


def _fill_missing(json: dict[str, Any]) -> bool:
    """fill_missing_data_reads: true (the default) reads missing chunks as the fill value;
    false makes such reads raise ChunkNotFoundError."""
    value = json.get("fill_missing_data_reads", True)
    if not isinstance(value, bool):  # null too, as TensorStore
        raise SpecError(f"fill_missing_data_reads: expected true or false, got {value!r}")
    return value


def _kvstore_spec(kv: Any) -> dict[str, Any]:
    return {"driver": kv.driver} if isinstance(kv, KvStore) else normalize_kvstore_spec(kv)


def _kvstore_resources(json: dict[str, Any], context: Context
                       ) -> dict[str, tuple[str | None, Any]]:
    """The kvstore's shared resources by kind, each with where it is defined (`Context.bind`):
    the bound on its I/O (file_io_concurrency of a file store, the request concurrency of a
    remote one) and, if its spec names one, its rate limiter. Each is the kvstore's own
    member, else its context's, else the spec's, as in TensorStore."""
    spec = _kvstore_spec(json.get("kvstore"))
    roles = driver_resources(spec.get("driver"))
    if "context" in spec:
        context = Context(spec["context"], parent=context)
    out = {}
    if roles.concurrency is not None:
        out[roles.concurrency] = context.bind(spec.get(roles.concurrency), roles.concurrency,
                                              f"kvstore.{roles.concurrency}")
    if roles.rate_limiter is not None and roles.rate_limiter in spec:  # else none, as in TS
        kind = roles.rate_limiter
        out[kind] = context.bind(spec[kind], kind, f"kvstore.{kind}")
    return out


def _kvstore_members(kv: Any, context: Context) -> dict[str, Any]:
    """The kvstore's inline resources, as a spec retaining the context writes them: each
    member's value or reference resolved through the kvstore's and the enclosing contexts
    (TensorStore's config-only resources; file_io_sync is the store's own `fsync`)."""
    spec = _kvstore_spec(kv)
    if "context" in spec:
        context = Context(spec["context"], parent=context)
    out = {}
    for name in driver_resources(spec.get("driver")).inline:
        json = context.resource(spec.get(name), name, f"kvstore.{name}").to_json()
        out[name] = {} if json is None else json
    return out


def _write_empty(json: dict[str, Any], options: dict[str, Any]) -> bool:
    value = options.get("write_empty_chunks")
    if value is None:
        value = json.get("store_data_equal_to_fill_value", False)
    if not isinstance(value, bool):
        raise SpecError(f"store_data_equal_to_fill_value: expected a boolean, got {value!r}")
    return value


def _read_only(options: dict[str, Any]) -> bool:
    """`read=True` without `write=True` opens read-only, as in TensorStore (whose mode is the
    bits asked for); `write=False` too, so that asking for no writes never gets them."""
    read_alone = options.get("read") is True and options.get("write") is not True
    return bool(options.get("read_only")) or options.get("write") is False or read_alone


def _copied(spec: Any) -> Any:
    """A deep copy of a spec dict that shares a store object given as its kvstore: the array
    must live in that very store (a copy would hold other data, and locks cannot be copied)."""
    kv = spec.get("kvstore") if isinstance(spec, dict) else None
    return copy.deepcopy(spec, {id(kv): kv} if isinstance(kv, KvStore) else None)


def spec_driver(spec: Spec | dict[str, Any]) -> Any:
    return spec.driver if isinstance(spec, Spec) else spec.get("driver")


def open_spec(spec: Any, **options: Any) -> Array | View:
    """Open (or create) the array a spec describes; see `zarrkit.open` for the keywords."""
    unknown = set(options) - set(_SCHEMA_KEYWORDS) - set(_MODE_KEYWORDS) - {
        "context", "recheck_cached_data", "recheck_cached_metadata", "read_only", "read",
        "write", "write_empty_chunks", "transaction"}
    if unknown:
        raise SpecError(f"open: unexpected keyword(s) {sorted(unknown)} for a spec")
    if getattr(spec, "_bound_context", None) is not None and options.get("context") is None:
        # A retained spec object reopens with the very resources (as TensorStore's Spec).
        options = {**options, "context": spec._bound_context}
        spec = {k: v for k, v in spec.to_json().items() if k != "context"}
    if isinstance(spec, Spec | dict) and spec_driver(spec) == "cast":
        # Copied level by level, not here: the base may name a store object, to be kept.
        return open_cast(spec.to_json() if isinstance(spec, Spec) else spec, options,
                         open_spec)
    json = spec.to_json() if isinstance(spec, Spec) else _copied(spec)
    driver = _ZARR2 if check_driver(json) == "zarr" else _ZARR3
    driver.check_members(json)
    mode = _mode(json, options)
    transform = IndexTransform.from_json(json["transform"]) if "transform" in json else None
    constraints = driver.constraints(json)
    schema = _schema(json, options, transform)
    state = _state(json, options, mode)
    store, path = _location(json, _read_only(options), state)
    transaction = options.get("transaction")
    if transaction is not None:  # everything it writes (a creation too) is staged
        store = staged_store(transaction, store)
    key = location_key(store, path, driver.zarr_format)
    found = None if state.cache_pool is None else state.cache_pool.metadata.find(key)
    seen = None if found is None else found.metadata  # before the store is read
    if transaction is None:
        array, created = _open_or_create(store, path, mode, driver, constraints, schema,
                                         _read_only(options), _write_empty(json, options),
                                         seen if _uses_cached(mode, state) else None)
        _attach(array, state, created, seen, mode.assume_cached_metadata)
    else:
        with transaction._reads_uncounted():
            array, created = _open_or_create(store, path, mode, driver, constraints, schema,
                                             _read_only(options), _write_empty(json, options))
        array = bind_opened(array, state, transaction, created)
    labels = labels_of(schema) if driver.zarr_format == 2 else None
    if transform is None and labels is not None:  # a .zarray has no names: label the result
        transform = IndexTransform.identity(array.domain.with_labels(labels))
    return _with_transform(array, transform)


def _uses_cached(mode: _Mode, state: OpenState) -> bool:
    """Whether an open takes the metadata other handles in its context share instead of
    reading it: as TensorStore, with recheck_cached_metadata=false (assume_cached_metadata
    assumes the spec's metadata, then follows the entry's changes: `_attach`)."""
    return (mode.open and not mode.delete_existing and not mode.assume_metadata
            and not mode.assume_cached_metadata and state.recheck_cached_metadata is False)


def _attach(array: Array, state: OpenState, created: bool = False, seen: Any = None,
            assumed: bool = False) -> None:
    """Give the array its spec's settings and join its cache pool's shared metadata entry:
    metadata it created replaces the entry's, metadata it read does unless the entry changed
    since `seen` (then the array adopts the entry's at its first read). As in TensorStore,
    assume_metadata arrays share nothing, and assume_cached_metadata ones (`assumed`) keep
    their assumed metadata until the entry changes (it is the entry only if there was none)."""
    array._open_state = state
    if not state.assume_metadata and state.cache_pool is not None:
        md = array._metadata
        entry = state.cache_pool.metadata.entry(
            location_key(array.store, array.path, array.zarr_format), md)
        state.shared = entry
        if assumed:
            state.shared_seen = entry.metadata
        else:
            state.shared_seen = entry.publish(md) if created else entry.offer(md, seen)
        if state.shared_seen is not md and state.shared_seen == md:
            array._metadata = state.shared_seen  # one object: nothing to adopt at the read
    array._rechecks_metadata = not state.assume_metadata and (
        state.shared is not None or state.metadata_stale())
    array._set_metadata(array._metadata)  # rebuild the engine with the cache pool


@dataclass(frozen=True)
class _Driver:
    """What differs between drivers "zarr3" and "zarr" when opening or creating an array."""

    zarr_format: int
    document: str  # the metadata document's name
    new_doc: Callable[[Any, Schema], dict[str, Any]]  # constraints, schema -> document
    check: Callable[[Any, Any, Schema], None]  # stored metadata, constraints, schema
    parse: Callable[..., Any]  # document -> metadata
    check_members: Callable[[dict[str, Any]], None]  # spec -> refuse what the driver lacks
    constraints: Callable[[dict[str, Any]], Any]  # spec -> the metadata constraints


def _no_check(json: dict[str, Any]) -> None:
    """Driver "zarr3" members are checked by `check_driver`."""


_ZARR3 = _Driver(3, V3_KEY, new_metadata, check_existing, ArrayMetadataV3.from_json, _no_check,
                 MetadataConstraints.from_spec)


def _open_or_create(store: Any, path: str, mode: _Mode, driver: _Driver, constraints: Any,
                    schema: Schema, read_only: bool, write_empty: bool,
                    cached: Any = None) -> tuple[Array, bool]:
    """The array, and whether it was created. `cached`: the metadata the context shares for
    it, opened without reading the store (checked against the spec as stored metadata is)."""
    def array(md: Any) -> Array:
        return Array(store, path, md, read_only=read_only, write_empty_chunks=write_empty)

    where = f"spec.metadata ({storage.join(path, driver.document)})"
    if cached is not None:
        driver.check(cached, constraints, schema)
        return array(cached), False
    if mode.assume_metadata or mode.assume_cached_metadata:
        return array(driver.parse(driver.new_doc(constraints, schema), where=where)), False
    # delete_existing never reads what it deletes: a malformed document there is replaced too
    found = None if mode.delete_existing else formats.find(store, path, driver.zarr_format,
                                                            use_consolidated=False)
    at = path or "/"
    if found is not None and mode.open:
        if not formats.is_array(found.metadata):
            raise NodeTypeError(f"{at!r} is a group, not an array")
        driver.check(found.metadata, constraints, schema)
        return array(found.metadata), False
    if found is not None and not mode.delete_existing:
        raise NodeExistsError(f"an array already exists at {at!r} (create=True without "
                              "open=True or delete_existing=True)")
    if not mode.create:
        raise NodeNotFoundError(f"no Zarr v{driver.zarr_format} array at {at!r} in the "
                                f"{store.driver} store, and create is false")
    doc = driver.new_doc(constraints, schema)
    md = driver.parse(doc, where=where)
    check_creatable(md.codec_chain)  # what numcodecs refuses only later: before anything is stored
    if mode.delete_existing:
        storage.delete_node(store, path)
    # As TensorStore: only the array's own keys are written, never groups above it (an
    # ancestor may even be an array), whichever way the spec splits kvstore and path.
    storage.check_new_path(path, driver.zarr_format)
    # Exactly TensorStore's document.
    store.set(storage.join(path, driver.document), json_dumps(doc))
    storage.record_consolidated(store, path, md)
    return array(md), True


def _with_transform(array: Array, transform: IndexTransform | None) -> Array | View:
    """A view through the transform, its implicit bounds resolved against the array as
    TensorStore's open does; the array itself if that is an identity over exactly its domain
    (explicit bounds equal to the array's must stay explicit, so they make a view)."""
    if transform is None:
        return array
    if transform.output_rank != array.rank:
        raise SpecError(f"transform: output rank {transform.output_rank} does not match the "
                        f"array's rank {array.rank}")
    transform = propagate_bounds(transform, array.domain)
    if transform.is_identity() and transform.domain == array.domain:
        return array
    check_constants(transform)
    return View(array, transform)


# -- driver "zarr" (Zarr v2) ----------------------------------------------------------------

# TensorStore's older spelling of dimension_separator is also accepted.
_ZARR2_MEMBERS = ZARR3_MEMBERS | {"key_encoding"}


def _zarr2_members(json: dict[str, Any]) -> None:
    if "field" in json:
        raise SpecError("field: opening one field of a structured array is not supported; "
                        "omit field to open the whole array")
    unknown = set(json) - _ZARR2_MEMBERS
    if unknown:
        raise SpecError(f"spec: unknown member(s) {sorted(unknown)} for driver 'zarr'")


_ZARR2 = _Driver(2, ARRAY_KEY, new_zarray, check_zarr2, ArrayMetadataV2.from_json,
                 _zarr2_members, V2Constraints.from_spec)


# -- unpickling ------------------------------------------------------------------------------


def rebuild_array(spec_json: dict[str, Any], store: Any, path: str, read_only: bool,
                  attributes: dict[str, Any] | None = None) -> Array:
    """An array from its pickled spec: the metadata is taken from the spec, not read."""
    metadata = spec_json["metadata"]
    if spec_json["driver"] == "zarr":
        md: Any = ArrayMetadataV2.from_json(metadata, attributes=attributes)
    else:
        md = ArrayMetadataV3.from_json(metadata, where="pickled spec.metadata")
    array = Array(store, path, md, read_only=read_only,
                  write_empty_chunks=spec_json.get("store_data_equal_to_fill_value", False))
    # The spec records assume_metadata: the copy must not read or write the metadata either.
    mode = _Mode(True, False, False, spec_json.get("assume_metadata") is True, False)
    state = _state(spec_json, {}, mode)
    state.kvstore_members = _kvstore_members(spec_json["kvstore"], state.context)
    _attach(array, state)
    return array

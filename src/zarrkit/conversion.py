"""Moving hierarchies between Zarr formats: `convert` (copy, optionally rechunking/resharding)
and `upgrade_metadata` (v2/v1 -> v3 in place, rewriting only metadata).

`convert` streams each array in slabs aligned to the destination's write unit (a shard, or a
chunk), so every destination shard or chunk is written whole, once, without reading it back;
each slab's chunks are read and written in parallel by the engine's thread pool, and memory
stays bounded by the slab size.

`upgrade_metadata` writes a zarr.json next to each `.zarray`/`.zgroup` (or v1 `meta`) whose
chunks v3 can read as they are (see `metadata.upgrade`), then removes the old documents: keeping
both would let v2 readers see stale metadata once the array changes through v3 (a resize, new
attributes). Nothing is written unless every node of the hierarchy can be upgraded.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import api, formats, storage
from .array import Array
from .consolidated import consolidate_metadata
from .creation import (
    build_array_document,
    create_array_from_metadata,
    filled_replacing,
    flag,
)
from .creation_v2 import build_v2_metadata
from .engine.executor import ensure_concurrency, io_width, run_all
from .errors import NodeExistsError, NodeNotFoundError, SpecError, ZarrkitError
from .group import Group, create_group_at, finished_node, open_node
from .kvstore import close_opened, discard_opened, open_kvstore
from .metadata import xarray_fill
from .metadata.json import json_dumps
from .metadata.names import normalize_path
from .metadata.upgrade import v2_compressor, v3_codecs, v3_data_type, v3_from_v2
from .metadata.v1 import ATTRS_KEY as V1_ATTRS_KEY
from .metadata.v1 import META_KEY
from .metadata.v2 import ARRAY_KEY, ATTRS_KEY, DIMENSIONS_ATTRIBUTE, GROUP_KEY, ArrayMetadataV2
from .metadata.v3 import ArrayMetadataV3, GroupMetadataV3
from .progress import make_callback

#: Bytes of array data held in memory per slab while copying.
SLAB_BYTES = 64 << 20


def walk(node: Array | Group, rel: str = "") -> Iterator[tuple[str, Array | Group]]:
    """(relative path, node) for `node` and everything below it, parents first."""
    yield rel, node
    if isinstance(node, Group):  # listed level by level (remote stores: no trip per group)
        for name, child in node.members(None):
            yield storage.join(rel, name), child


# -- convert ----------------------------------------------------------------------------------


def _is_xarray_variable(src: Array, in_group: bool) -> bool:
    """Whether `src` converts as an xarray variable (see `metadata.xarray_fill`)."""
    return xarray_fill.is_variable(src.zarr_format, src.attrs, src.ndim, src.dimension_names,
                                   in_group)


def _v3_metadata(src: Array, chunks: Any, shards: Any, codecs: Any, where: str,
                 xarray: bool) -> Any:
    if src.zarr_format == 3 and chunks is None and shards is None and codecs is None:
        return ArrayMetadataV3.from_json(src.metadata, where=where)  # an exact copy
    md = src._metadata
    if codecs is None:
        codecs = v3_codecs(md, exact=False, where=where) if src.zarr_format != 3 \
            else _chunk_codecs(src.metadata["codecs"])
    attributes, fill = dict(src.attrs), None
    if src.zarr_format != 3:
        attributes.pop(DIMENSIONS_ATTRIBUTE, None)  # it becomes dimension_names
        if xarray:  # v2's fill value is xarray's mask: v3 keeps it as an attribute
            attributes, fill = xarray_fill.to_v3(attributes, src.fill_value, src.dtype)
    doc = build_array_document(
        src.shape, v3_data_type(md, where) if src.zarr_format != 3 else src.dtype,
        chunks=chunks or src.chunks, shards=shards if shards is not None else src.shards,
        codecs=codecs, fill_value=np.asarray(src._engine.fill_value if fill is None else fill
                                             )[()],
        dimension_names=src.dimension_names or None, attributes=attributes)  # 0-d: none
    return ArrayMetadataV3.from_json(doc, where=where)


def _chunk_codecs(codecs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The codecs of a v3 array's (inner) chunks, to keep them when rechunking."""
    if len(codecs) == 1 and codecs[0]["name"] == "sharding_indexed":
        return codecs[0]["configuration"]["codecs"]
    return codecs


def _v2_metadata(src: Array, chunks: Any, shards: Any, codecs: Any, where: str,
                 xarray: bool) -> Any:
    if shards is not None or codecs is not None:
        raise SpecError("shards= and codecs= apply to Zarr v3 targets; v2 has neither")
    md = src._metadata
    if src.zarr_format != 3:  # v2 or v1: the same metadata (a v2 document), maybe rechunked
        return ArrayMetadataV2(
            shape=md.shape, chunks=chunks or md.chunks, data_type=md.data_type,
            compressor=md.compressor, fill_value=md.fill_value, order=md.order,
            filters=md.filters, dimension_separator=md.dimension_separator or ".",
            attributes=md.attributes, extra=md.extra, where=where)
    names = () if xarray and src.ndim == 0 else src.dimension_names  # xarray's 0-d: []
    attributes, fill = _v2_fill(src, xarray)
    return build_v2_metadata(
        src.shape, src.dtype, chunks=chunks or src.chunks,
        compressor=v2_compressor(src.metadata["codecs"]), fill_value=fill,
        dimension_names=None if names is None or None in names else names,
        attributes=attributes, where=where)


def _v2_fill(src: Any, xarray: bool) -> tuple[dict[str, Any], Any]:
    """(attributes, v2 fill value) of the v3 array `src` (a zarrkit or zarr-python array): an
    xarray variable's mask is its `_FillValue` attribute, so v2 readers mask the same values; a
    plain array (or an attribute not in xarray's encoding) keeps its fill value."""
    if xarray:
        try:
            return xarray_fill.to_v2(src.attrs, np.dtype(src.dtype))
        except (ValueError, TypeError):
            pass
    return dict(src.attrs), src.fill_value


def _target(src: Array, zarr_format: int, chunks: Any, shards: Any, codecs: Any,
            path: str, in_group: bool) -> Any:
    # One setting for a whole hierarchy: arrays of another rank keep their own chunking.
    chunks = chunks if _fits(chunks, src.ndim) else None
    shards = shards if _fits(shards, src.ndim) else None
    xarray = _is_xarray_variable(src, in_group)
    if zarr_format == 3:
        return _v3_metadata(src, chunks, shards, codecs, storage.join(path, "zarr.json"),
                            xarray)
    return _v2_metadata(src, chunks, shards, codecs, storage.join(path, ARRAY_KEY), xarray)


def _fits(shape: Any, ndim: int) -> bool:
    return shape is not None and len(tuple(shape)) == ndim


def slab_shape(shape: tuple[int, ...], write: tuple[int, ...], read: tuple[int, ...],
               itemsize: int, budget: int = SLAB_BYTES) -> tuple[int, ...]:
    """Regions copied at once: whole destination write units, aligned to the source's chunks
    too when that fits the budget (so no source chunk is decoded twice), grown to the budget."""
    aligned = [math.lcm(w, r) for w, r in zip(write, read, strict=True)]
    slab = aligned if math.prod(aligned) * itemsize <= budget else list(write)
    for axis in range(len(slab)):
        while slab[axis] < shape[axis] and 2 * math.prod(slab) * itemsize <= budget:
            slab[axis] *= 2
    return tuple(slab)


def _regions(shape: tuple[int, ...], slab: tuple[int, ...]) -> Iterator[tuple[slice, ...]]:
    counts = [-(-s // b) for s, b in zip(shape, slab, strict=True)]
    for index in np.ndindex(*counts):
        yield tuple(slice(i * b, min((i + 1) * b, s)) for i, b, s in
                    zip(index, slab, shape, strict=True))


def _units(region: tuple[slice, ...], write: tuple[int, ...]) -> int:
    return math.prod(-(-(r.stop - r.start) // w) for r, w in zip(region, write, strict=True))


def _write_unit(dst: Array) -> tuple[int, ...]:
    return dst.shards or dst.chunks


def _copy_array(src: Any, dst: Array, report: Any) -> None:
    """`dst[...] = src[...]` a slab at a time (`src` a zarrkit Array or any sliceable array)."""
    write = _write_unit(dst)
    read = getattr(src, "chunks", None)
    read = read if _int_tuple(read, dst.ndim) else write
    slab = slab_shape(dst.shape, write, read, max(dst.dtype.itemsize, 1), SLAB_BYTES)
    for region in _regions(dst.shape, slab):
        dst[region] = src[region]
        report(_units(region, write), dst.name)


def _int_tuple(value: Any, ndim: int) -> bool:
    return isinstance(value, tuple) and len(value) == ndim and \
        all(isinstance(v, int | np.integer) for v in value)


def _open_source(where: Any, what: str, **kwargs: Any) -> Array | Group:
    """api.open, with a not-found error that names `where` as the caller gave it."""
    try:
        return api.open(where, **kwargs)
    except NodeNotFoundError as e:
        raise NodeNotFoundError(f"{what}: nothing to read at {where!r}: {e}") from None


def _place(store: Any, path: str) -> tuple[Any, str]:
    """(the store apart from its path, the node's full path) for comparing locations."""
    spec = dict(store.to_json())
    base = str(spec.pop("path", "")).strip("/")
    return (store if spec.get("driver") == "memory" else json_dumps(spec)), \
        f"{base}/{path}".strip("/")


def _refuse_same_place(src: Array | Group, store: Any, path: str) -> None:
    (where_a, a), (where_b, b) = _place(src.store, src.path), _place(store, path)
    if where_a is not where_b and where_a != where_b:
        return
    if a == b or a.startswith(b + "/") or b.startswith(a + "/") or not a or not b:
        raise SpecError("convert: source and destination overlap; copy elsewhere, or use "
                        "zarrkit.upgrade_metadata for an in-place v2 -> v3 upgrade")


def convert(src: Any, dst: Any, *, zarr_format: int = 3, chunks: Any = None,
            shards: Any = None, codecs: Any = None, overwrite: bool = False,
            progress: Any = True) -> Array | Group:
    """Copy the array or hierarchy at `src` (any format) to `dst` in `zarr_format` (3 or 2).

    `chunks`, `shards` and `codecs` (a v3 codec list; the inner chain when sharded) apply to
    every array; by default arrays keep their chunk shape and the compressor when v3 has it.
    Values are copied exactly (fill values, NaN payloads, byte order). `progress`: True for a
    progress bar on stderr, False, or a callable(done, total, label). Stores opened here from
    paths are closed when done (finishing a zip archive); the copy returned is then opened again
    read-only. A group read with consolidated metadata is copied with consolidated metadata.

    xarray datasets keep what xarray reads: the fill value of a v2 xarray variable (its
    `_FillValue` mask) becomes v3's `_FillValue` attribute, and back, and `_ARRAY_DIMENSIONS`
    becomes `dimension_names`, and back. xarray variables are v2 arrays carrying
    `_ARRAY_DIMENSIONS`, and v3 arrays with all dimensions named (0-d ones too) below a
    converted group; other arrays are copied as plain Zarr, gaining no attribute (see
    `metadata.xarray_fill`).
    """
    if not isinstance(zarr_format, int | np.integer) or zarr_format not in (2, 3):
        raise SpecError(f"convert: zarr_format must be 2 or 3, got {zarr_format!r}")
    if isinstance(codecs, str | dict):  # would be iterated as characters or keys
        raise SpecError(f"convert: codecs must be a list of v3 codecs, got {codecs!r}")
    source = _open_source(src, "convert", mode="r")
    try:
        store, root = open_kvstore(dst, read_only=False)
        root = normalize_path(root)
        _refuse_same_place(source, store, root)
        planned = _plan_nodes(list(walk(source)), root, zarr_format, chunks, shards, codecs)
        if storage.node_exists(store, root):
            if not overwrite:
                raise NodeExistsError(f"convert: {dst!r} already holds a node (overwrite=True "
                                      "replaces it)")
            storage.delete_node(store, root)  # only now: a refusal above must keep the old node
        try:
            copied = _convert_nodes(planned, store, root, zarr_format, progress)
            if isinstance(source, Group) and source._consolidated is not None:
                consolidate_metadata(store, path=root, zarr_format=zarr_format)
        except ZarrkitError as e:
            raise type(e)(f"convert: stopped part-way, so {dst!r} holds an incomplete copy "
                          f"(delete it, or convert again with overwrite=True): {e}") from e
        return finished_node(copied, dst)
    finally:
        close_opened(source.store, src)  # (read-only) a zip archive's descriptor


def _convert_nodes(planned: list[tuple[str, Array | Group, Any]], store: Any, root: str,
                   zarr_format: int, progress: Any) -> Array | Group:
    copies = _create_nodes(planned, store, zarr_format)
    total = sum(math.prod(-(-s // w) for s, w in zip(d.shape, _write_unit(d), strict=True))
                for _, d in copies)
    callback, finish = make_callback(progress)
    done = 0

    def report(units: int, label: str) -> None:
        nonlocal done
        done += units
        callback(done, total, label)

    try:
        callback(0, total, "convert")
        for s, d in copies:
            _copy_array(s, d, report)
    finally:
        finish()
    return open_node(store, root, zarr_format=zarr_format)


def _plan_nodes(nodes: list[tuple[str, Array | Group]], root: str, zarr_format: int,
                chunks: Any, shards: Any, codecs: Any) -> list[tuple[str, Array | Group, Any]]:
    """(path, source node, target array metadata or None for a group) of every node: built
    before anything is written or deleted, so a refusal leaves the destination as it was."""
    _check_ranks([n.ndim for _, n in nodes if isinstance(n, Array)], chunks, shards)
    planned: list[tuple[str, Array | Group, Any]] = []
    for rel, node in nodes:
        path = storage.join(root, rel) if rel else root
        md = _target(node, zarr_format, chunks, shards, codecs, path, bool(rel)) \
            if isinstance(node, Array) else None
        planned.append((path, node, md))
    return planned


def _check_ranks(ranks: list[int], chunks: Any, shards: Any) -> None:
    """A chunk or shard shape that fits no array at all is a mistake (`--chunks 64` for 2-d
    arrays), not a setting for arrays of another rank: refused rather than silently ignored."""
    for name, shape in (("chunks", chunks), ("shards", shards)):
        if shape is not None and ranks and not any(_fits(shape, r) for r in ranks):
            raise SpecError(f"convert: {name}={tuple(shape)} has {len(tuple(shape))} "
                            f"dimension(s), but the arrays have {sorted(set(ranks))}")


def _create_nodes(planned: list[tuple[str, Array | Group, Any]], store: Any,
                  zarr_format: int) -> list[tuple[Array, Array]]:
    """Create every planned node, parents first: on a remote store, the nodes of a depth at
    once (a few round trips a level, not a few a node); (source, new array) in plan order."""
    def create(item: tuple[str, Array | Group, Any]) -> Array | None:
        path, node, md = item
        if md is None:
            create_group_at(store, path, attributes=dict(node.attrs), zarr_format=zarr_format)
            return None
        return create_array_from_metadata(store, path, md)

    ensure_concurrency(store.io_concurrency)
    width = io_width(store.io_concurrency) if store.io_concurrency else 1  # local: in order
    made: dict[str, Array | None] = {}
    def depth(path: str) -> int:
        return path.count("/") if path else -1  # the store's root above its members

    for d in sorted({depth(path) for path, _, _ in planned}):
        level = [item for item in planned if depth(item[0]) == d]
        made.update(zip([path for path, _, _ in level], run_all(create, level, width),
                        strict=True))
    return [(node, made[path]) for path, node, md in planned if md is not None]


# -- from_array -------------------------------------------------------------------------------

#: `from_array(fill_value=NULL_FILL)`: v2's null fill value (None keeps the source's); what
#: `copy` gives an xarray variable without a mask copied into v2.
NULL_FILL: Any = type("NullFill", (), {"__repr__": lambda self: "NULL_FILL"})()


def from_array(where: Any = None, *, data: Any, write_data: bool = True, name: str | None = None,
               chunks: Any = "keep", shards: Any = "keep", filters: Any = "keep",
               compressors: Any = "keep", serializer: Any = "keep", fill_value: Any = None,
               zarr_format: int | None = None, chunk_key_encoding: Any = None,
               dimension_names: Any = None, **kwargs: Any) -> Array:
    """A new array at `name` below `where` like `data` (a zarrkit Array, or any array: numpy,
    dask, ...), holding its values unless `write_data=False`: zarr-python's `from_array`.

    "keep" takes the chunks and (into v3) shards of a stored array, zarrkit's or
    zarr-python's (of another array, chunks that it has: h5py's, dask's chunk size) and, in the
    same Zarr format, its filters, serializer and compressors ("auto": the defaults); None for
    `fill_value`, `chunk_key_encoding` and `dimension_names` keeps a stored array's. Other
    keywords (`attributes`, `overwrite`, `storage_options`, `path`...)
    as for `create`. Values are copied a slab at a time; if copying fails, the new array is
    removed."""
    where = api.like_where(where, "from_array")
    for taken in ("shape", "dtype"):  # both come from `data`
        if taken in kwargs:
            raise SpecError(f"from_array: {taken}={kwargs[taken]!r} is not taken: the {taken} "
                            "is that of data")
    if not (hasattr(data, "shape") and hasattr(data, "dtype")):
        data = np.asarray(data)
    source = _source_of(data)
    fmt = formats.check_format(zarr_format) or (2 if source and source.zarr_format == 2 else 3)
    options = _kept(data, source, fmt, {
        "chunks": chunks, "shards": shards, "filters": filters, "compressors": compressors,
        "serializer": serializer})
    if source is not None:
        options |= _kept_settings(source, fmt, fill_value, chunk_key_encoding, dimension_names)
    given = {"fill_value": fill_value, "chunk_key_encoding": chunk_key_encoding,
             "dimension_names": dimension_names}
    options |= {k: v for k, v in given.items() if v is not None}
    if fill_value is NULL_FILL:
        options["fill_value"] = None
    if name is not None:
        kwargs["path"] = storage.join(normalize_path(kwargs.pop("path", None) or ""), name)
    if flag(kwargs.get("overwrite", False), "overwrite"):
        replaced = _replacing(where, data, _dtype(data, fmt), fmt, options, kwargs,
                              write_data)
        if replaced is not None:
            return replaced
    dst = api.create(where, data.shape, _dtype(data, fmt), zarr_format=fmt,
                     **options, **kwargs)
    if write_data:
        try:
            dst._follows_resizes = False  # just created here: no metadata read before writes
            _copy_array(data, dst, _quiet)
        except BaseException:
            if not discard_opened(dst.store, where):
                storage.delete_node(dst.store, dst.path)
            raise
        finally:
            dst._follows_resizes = True
    node = finished_node(dst, where, storage_options=kwargs.get("storage_options"))
    assert isinstance(node, Array)
    return node


def _replacing(where: Any, data: Any, dtype: Any, fmt: int, options: dict[str, Any],
               kwargs: dict[str, Any], write_data: bool) -> Array | None:
    """`from_array(..., overwrite=True)` written beside the node it replaces (see
    `api.replacing`)."""
    node = api.replacing(where, kwargs, lambda store, full, rest: filled_replacing(
        store, full, data.shape, dtype, {**options, **rest, "zarr_format": fmt},
        lambda a: _copy_array(data, a, _quiet) if write_data else None))
    if node is None:
        return None
    finished = finished_node(node, where, storage_options=kwargs.get("storage_options"))
    assert isinstance(finished, Array)
    return finished


def _quiet(*_: Any) -> None:
    """A progress report nobody reads."""


@dataclass(frozen=True)
class _Source:
    """What `from_array` may keep of a stored array, zarrkit's or zarr-python's (whose
    attributes bear the same names)."""

    zarr_format: int
    shards: Any
    filters: Any
    compressors: Any
    serializer: Any
    fill_value: Any
    order: str
    dimension_names: Any
    key_encoding: Any  # v3: the chunk_key_encoding document; v2: the dimension separator


def _source_of(data: Any) -> _Source | None:
    if isinstance(data, Array):
        fmt, names = data.zarr_format, data.dimension_names
        keys = data.metadata["chunk_key_encoding"] if fmt == 3 else \
            getattr(data._metadata, "dimension_separator", None)
    else:
        md = getattr(data, "metadata", None)
        if not type(data).__module__.startswith("zarr.") or not hasattr(md, "zarr_format"):
            return None
        fmt, names = md.zarr_format, getattr(md, "dimension_names", None)
        keys = md.chunk_key_encoding.to_dict() if fmt == 3 else md.dimension_separator
    return _Source(fmt, data.shards, data.filters, data.compressors, data.serializer,
                   data.fill_value, getattr(data, "order", "C"), names, keys or ".")


def _kept(data: Any, source: _Source | None, fmt: int, asked: dict[str, Any]) -> dict[str, Any]:
    """Creation keywords for the "keep"/"auto" settings of `from_array`: "auto" and what
    cannot be kept are left out (the defaults)."""
    same = source is not None and source.zarr_format == fmt
    kept: dict[str, Any] = {}
    for key, value in asked.items():
        if not (isinstance(value, str) and value in ("keep", "auto")):
            kept[key] = value
        elif value == "auto":
            continue
        elif key == "chunks" and _own_chunks(data) is not None:
            kept[key] = _own_chunks(data)
        elif key == "shards" and source is not None and source.shards is not None and fmt == 3:
            kept[key] = source.shards
        elif key in ("filters", "compressors") and same:
            kept[key] = getattr(source, key)
        elif key == "serializer" and same and fmt == 3:
            kept[key] = source.serializer  # type: ignore[union-attr]
    return kept


def _own_chunks(data: Any) -> tuple[int, ...] | None:
    """The chunk shape of a chunked array (zarr's, h5py's; dask's `chunksize`), else None."""
    for name in ("chunks", "chunksize"):
        chunks = getattr(data, name, None)
        if _int_tuple(chunks, len(data.shape)):
            return tuple(int(c) for c in chunks)
    return None


def _kept_settings(source: _Source, fmt: int, fill_value: Any, chunk_key_encoding: Any,
                   dimension_names: Any) -> dict[str, Any]:
    """What a stored array passes on besides its chunking and codecs."""
    kept: dict[str, Any] = {}
    if fill_value is None:
        kept["fill_value"] = source.fill_value
    if chunk_key_encoding is None and source.zarr_format == fmt:
        if fmt == 3:
            kept["chunk_key_encoding"] = source.key_encoding
        else:
            kept["dimension_separator"] = source.key_encoding
            kept["order"] = source.order
    names = source.dimension_names
    if dimension_names is None and names is not None and (fmt == 3 or None not in names):
        kept["dimension_names"] = names
    return kept


def _dtype(data: Any, fmt: int) -> Any:
    """The data type to create: a zarrkit Array's own (its v3 type when both are v3, or
    made v3 from v2), else the data's."""
    if not isinstance(data, Array) or fmt != 3:
        return data.dtype
    if data.zarr_format == 3:
        return data._metadata.data_type
    return v3_data_type(data._metadata, data.name)


# -- upgrade in place -------------------------------------------------------------------------


def _v3_document(node: Array | Group) -> dict[str, Any]:
    where = formats.key(node.path, node._metadata.metadata_key)
    if isinstance(node, Group):
        return GroupMetadataV3.create(dict(node.attrs)).to_json()
    doc = v3_from_v2(node._metadata, exact=True, where=where)
    if _is_xarray_variable(node, in_group=True):  # the mask as v3's _FillValue attribute; the
        doc["attributes"] = xarray_fill.to_v3(  # fill value stays: chunks are not rewritten
            doc["attributes"], node.fill_value, node.dtype)[0]
    ArrayMetadataV3.from_json(doc, where=where)  # validate before anything is written
    return doc


def _old_documents(node: Array | Group) -> tuple[str, ...]:
    if node.zarr_format == 1:
        return META_KEY, V1_ATTRS_KEY
    return ARRAY_KEY, GROUP_KEY, ATTRS_KEY, ".zmetadata"


def _remove_old_documents(store: Any, nodes: list[Array | Group],
                          names: tuple[str, ...] | None = None) -> None:
    """Delete the v2/v1 documents (`names`, or those of each node's format) of `nodes`."""
    old = [formats.key(n.path, name) for n in nodes for name in names or _old_documents(n)]
    store.delete_many([k for k in old if store.exists(k)])


def upgrade_metadata(where: Any, *, path: str | None = None, keep_v2_metadata: bool = False,
                     progress: Any = False) -> Array | Group:
    """Upgrade the v2 (or v1) hierarchy at `where` to v3 in place, writing only metadata.

    Each array keeps its chunks: the v3 metadata uses the "v2" chunk key encoding and codecs
    that read the existing bytes (zarr-python's `numcodecs.<id>` codecs for filters and
    compressors the v3 specification lacks). Raises (writing nothing) if any array has a type
    or a filter chain v3 cannot express; `convert` copies those.
    The old documents are removed unless `keep_v2_metadata` (see the module docstring); on a
    hierarchy already upgraded, those a killed run left are. Consolidated metadata is written
    again as v3's. xarray variables (v2 arrays carrying `_ARRAY_DIMENSIONS`) get their mask
    (the v2 fill value) as v3's `_FillValue` attribute too, so xarray reads the same values
    (see `convert`).
    """
    root = _open_source(where, "upgrade_metadata", mode="r+", path=path,
                        use_consolidated=False)
    if root.zarr_format == 3:  # upgraded already, or by a run killed before it consolidated
        if isinstance(root, Group) and root.store.exists(formats.key(root.path, ".zmetadata")):
            consolidate_metadata(root.store, path=root.path, zarr_format=3)
        if not keep_v2_metadata:  # or while it removed the old documents: those left go
            _remove_old_documents(root.store, [node for _, node in walk(root)],
                                  (ARRAY_KEY, GROUP_KEY, ATTRS_KEY, ".zmetadata"))
        return finished_node(open_node(root.store, root.path, zarr_format=3), where)
    nodes = [node for _, node in walk(root)]
    docs = [(node.path, _v3_document(node)) for node in nodes]
    callback, finish = make_callback(progress)
    store = root.store
    consolidated = isinstance(root, Group) and store.exists(formats.key(root.path, ".zmetadata"))
    try:
        # Children first, the root last: until the root's zarr.json exists the hierarchy still
        # opens as v2 (members are looked up in their group's format), so a run that is killed
        # part-way is simply run again; a v3 root over v2 children would hide them for good.
        for i, (node_path, doc) in enumerate(reversed(docs)):
            store.set(formats.key(node_path, formats.V3_KEY), json_dumps(doc))
            callback(i + 1, len(docs), node_path or "/")
        if consolidated:  # consolidated again, as v3 records it (in the root's zarr.json),
            consolidate_metadata(store, path=root.path, zarr_format=3)  # while .zmetadata
        if not keep_v2_metadata:  # still tells a run killed before this to do it
            _remove_old_documents(store, nodes)
    finally:
        finish()
    return finished_node(open_node(store, root.path, zarr_format=3), where)

"""TensorStore's `zarr` driver spec (Zarr v2): `{"driver": "zarr", "kvstore": ...,
"metadata": {...members of a .zarray...}}` with TensorStore's open/create/delete_existing modes.

Creating fills in the members a spec leaves out as TensorStore does: chunks chosen from the
shape, Blosc/LZ4 with automatic shuffle, `null` fill value, C order, no filters, "." keys.
"""

from __future__ import annotations

from typing import Any

from .. import storage
from ..array import Array
from ..creation import auto_chunks, create_array_from_metadata
from ..errors import NodeExistsError, NodeNotFoundError, NodeTypeError, SpecError
from ..group import open_node
from ..kvstore import open_kvstore
from ..metadata.names import normalize_path
from ..metadata.v2 import ArrayMetadataV2

TENSORSTORE_COMPRESSOR: dict[str, Any] = {"id": "blosc", "cname": "lz4", "clevel": 5,
                                          "shuffle": -1, "blocksize": 0}
_MEMBERS = frozenset({"driver", "kvstore", "path", "metadata", "key_encoding"})
# Members that tune TensorStore's caching and concurrency; they do not change what is read.
_IGNORED = frozenset({"context", "cache_pool", "data_copy_concurrency", "recheck_cached_data",
                      "recheck_cached_metadata", "metadata_cache_pool"})


def _location(spec: dict[str, Any], read_only: bool) -> tuple[Any, str]:
    if "kvstore" not in spec:
        raise SpecError("spec: member 'kvstore' is required")
    store, base = open_kvstore(spec["kvstore"], read_only=read_only)
    extra = spec.get("path", "")
    if not isinstance(extra, str):
        raise SpecError("spec: member 'path' must be a string")
    return store, normalize_path(storage.join(base, extra.strip("/")) if extra else base)


def _metadata_constraints(spec: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(spec) - _MEMBERS - _IGNORED)
    if unknown:
        raise SpecError(f"spec: unsupported member(s) {', '.join(unknown)} for driver 'zarr'")
    metadata = spec.get("metadata", {})
    if not isinstance(metadata, dict):
        raise SpecError("spec: member 'metadata' must be an object")
    metadata = dict(metadata)
    if "key_encoding" in spec:  # TensorStore's older spelling of dimension_separator
        metadata.setdefault("dimension_separator", spec["key_encoding"])
    return metadata


def complete_v2_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """A whole .zarray document from a spec's partial one, with TensorStore's defaults."""
    for name in ("shape", "dtype"):
        if name not in metadata:
            raise SpecError(f"spec: metadata.{name} is required to create an array")
    doc = {"zarr_format": 2, "compressor": dict(TENSORSTORE_COMPRESSOR), "fill_value": None,
           "order": "C", "filters": None, "dimension_separator": ".", **metadata}
    if "chunks" not in doc:
        doc["chunks"] = list(auto_chunks(tuple(doc["shape"])))
    return doc


def _check(stored: dict[str, Any], constraints: dict[str, Any]) -> None:
    for name, value in constraints.items():
        if stored.get(name, "." if name == "dimension_separator" else None) != value:
            raise SpecError(f"spec: metadata member {name!r} is {value!r} in the spec but "
                            f"{stored.get(name)!r} in the stored array")


def open_zarr2_spec(spec: dict[str, Any], *, open: bool | None = None, create: bool = False,
                    delete_existing: bool = False, read_only: bool = False) -> Array:
    """Open or create the v2 array a `{"driver": "zarr", ...}` spec describes."""
    if open is None:
        open = not create
    if delete_existing and (not create or open):
        raise SpecError("spec: delete_existing requires create=True and open=False")
    metadata = _metadata_constraints(spec)
    store, path = _location(spec, read_only)
    exists = storage.node_exists(store, path, 2)
    if exists and open and not delete_existing:
        node = open_node(store, path, read_only=read_only, zarr_format=2)
        if not isinstance(node, Array):
            raise NodeTypeError(f"spec: {path or '/'!r} is a group, not an array")
        _check(node.metadata, metadata)
        return node
    if exists and not delete_existing:
        raise NodeExistsError(f"spec: an array already exists at {path or '/'!r} "
                              "(create=True without open=True)")
    if not create:
        raise NodeNotFoundError(f"spec: no Zarr v2 array at {path or '/'!r} and create is "
                                "false")
    where = f"spec.metadata ({storage.join(path, '.zarray')})"
    md = ArrayMetadataV2.from_json(complete_v2_metadata(metadata), where=where)
    return create_array_from_metadata(store, path, md, overwrite=delete_existing)

"""Opening arrays from TensorStore-style JSON specs: `{"driver": "zarr3", "kvstore": ...}`."""

from __future__ import annotations

from typing import Any

from .. import storage
from ..array import Array
from ..creation import auto_chunks, create_array_from_metadata
from ..errors import NodeExistsError, NodeNotFoundError, NodeTypeError, SpecError
from ..group import open_node
from ..kvstore import open_kvstore
from ..metadata.names import normalize_path
from ..metadata.v3 import ArrayMetadataV3

_ARRAY_BYTES = {"bytes", "sharding_indexed"}


def _kvstore(spec: dict[str, Any], read_only: bool) -> tuple[Any, str]:
    if "kvstore" not in spec:
        raise SpecError("spec: member 'kvstore' is required")
    store, base = open_kvstore(spec["kvstore"], read_only=read_only)
    extra = spec.get("path", "")
    if not isinstance(extra, str):
        raise SpecError("spec: member 'path' must be a string")
    return store, normalize_path(storage.join(base, extra.strip("/")) if extra else base)


def open_spec(spec: dict[str, Any], *, open: bool | None = None, create: bool = False,
              delete_existing: bool = False, read_only: bool = False) -> Array:
    driver = spec.get("driver")
    if driver != "zarr3":
        raise SpecError(f"spec: unsupported driver {driver!r} (supported: 'zarr3')")
    if open is None:
        open = not create
    if delete_existing and (not create or open):
        raise SpecError("spec: delete_existing requires create=True and open=False")
    metadata = spec.get("metadata", {})
    if not isinstance(metadata, dict):
        raise SpecError("spec: member 'metadata' must be an object")
    store, path = _kvstore(spec, read_only)
    exists = storage.node_exists(store, path)
    if exists and open and not delete_existing:
        node = open_node(store, path, read_only=read_only)
        if not isinstance(node, Array):
            raise NodeTypeError(f"spec: {path or '/'!r} is a group, not an array")
        _check_constraints(node.metadata, metadata)
        return node
    if exists and not delete_existing:
        raise NodeExistsError(f"spec: an array already exists at {path or '/'!r} "
                              "(create=True without open=True)")
    if not create:
        raise NodeNotFoundError(f"spec: no array at {path or '/'!r} and create is false")
    doc = complete_metadata(metadata)
    md = ArrayMetadataV3.from_json(doc, where="spec.metadata")
    return create_array_from_metadata(store, path, md, overwrite=delete_existing)


def _check_constraints(stored: dict[str, Any], constraints: dict[str, Any]) -> None:
    for name, value in constraints.items():
        if name == "codecs":
            continue  # partial codec chains are compared by the full spec layer
        if stored.get(name) != value and not (name == "attributes"):
            raise SpecError(f"spec: metadata member {name!r} is {value!r} in the spec but "
                            f"{stored.get(name)!r} in the stored array")


def complete_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Fill in the defaults TensorStore chooses for members a spec leaves out."""
    if "shape" not in metadata:
        raise SpecError("spec: metadata.shape is required to create an array")
    if "data_type" not in metadata:
        raise SpecError("spec: metadata.data_type is required to create an array")
    doc = {"zarr_format": 3, "node_type": "array", **metadata}
    shape = tuple(doc["shape"])
    doc.setdefault("chunk_grid", {"name": "regular",
                                  "configuration": {"chunk_shape": list(auto_chunks(shape))}})
    doc.setdefault("chunk_key_encoding", {"name": "default"})
    doc.setdefault("fill_value", False if doc["data_type"] == "bool" else 0)
    codecs = [{"name": c} if isinstance(c, str) else c for c in doc.get("codecs", [])]
    if not any(c.get("name") in _ARRAY_BYTES for c in codecs):
        pos = sum(1 for c in codecs if c.get("name") == "transpose")
        codecs.insert(pos, {"name": "bytes"})
    doc["codecs"] = codecs
    return doc

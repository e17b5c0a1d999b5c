"""Where nodes live in a store: metadata keys, reading and writing node documents, parents.

This is the "Storage" section of the v3 core spec (and the v2/v1 layouts): which key holds a
node's metadata, and how a hierarchy maps to key prefixes.
"""

from __future__ import annotations

from typing import Any

from .errors import MetadataError, NodeNotFoundError
from .kvstore.base import KvStore
from .metadata.json import json_dumps, json_loads
from .metadata.names import normalize_path
from .metadata.v3 import ArrayMetadataV3, GroupMetadataV3, parse_v3_node

V3_METADATA_KEY = "zarr.json"

NodeMetadata = ArrayMetadataV3 | GroupMetadataV3


def join(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


def prefix_of(path: str) -> str:
    """The key prefix of a node's children ("" for the root)."""
    return f"{path}/" if path else ""


def metadata_key(path: str) -> str:
    return join(path, V3_METADATA_KEY)


def read_document(store: KvStore, path: str) -> dict[str, Any] | None:
    """The parsed zarr.json of the node at `path`, or None when there is none."""
    key = metadata_key(path)
    data = store.get(key)
    if data is None:
        return None
    doc = json_loads(bytes(data), what=key)
    if not isinstance(doc, dict):
        raise MetadataError(f"{key}: the metadata document must be a JSON object")
    return doc


def read_node(store: KvStore, path: str) -> NodeMetadata:
    path = normalize_path(path)
    doc = read_document(store, path)
    if doc is None:
        raise NodeNotFoundError(f"no Zarr array or group at {path or '/'!r} "
                                f"(no {metadata_key(path)!r} in the {store.driver} store)")
    return parse_v3_node(doc, where=metadata_key(path))


def node_exists(store: KvStore, path: str) -> bool:
    return store.exists(metadata_key(path))


def write_metadata(store: KvStore, path: str, metadata: NodeMetadata) -> None:
    store.set(metadata_key(path), json_dumps(metadata.to_json()))


def ensure_parents(store: KvStore, path: str) -> None:
    """Create group metadata for every missing ancestor of `path` (v3 has no implicit groups)."""
    parts = path.split("/")[:-1] if path else []
    for i in range(len(parts) + 1):
        parent = "/".join(parts[:i])
        if parent == path:
            break
        doc = read_document(store, parent)
        if doc is None:
            write_metadata(store, parent, GroupMetadataV3.create())
        elif doc.get("node_type") == "array":
            raise MetadataError(
                f"cannot create a node under {parent or '/'!r}: it is an array, not a group")


def delete_node(store: KvStore, path: str) -> None:
    """Remove a node and everything under it."""
    if path:
        store.delete_prefix(prefix_of(path))
    else:
        store.delete_prefix("")

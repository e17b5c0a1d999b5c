"""Keeping writes and `resize`/`append` of one array from interleaving (docs/concurrency.md).

Every write holds the store's shared lock named by `shape_lock_key` while it plans and writes;
`resize` and `append` hold the exclusive one. A handle's shape may be stale (another thread or
process resized the array since it was opened), so a write first compares the stored metadata
document with the one the handle last saw: unchanged bytes cost one read and no parsing, and a
changed shape makes the handle adopt the stored metadata before it plans the selection.
"""

from __future__ import annotations

from typing import Any

from . import formats, storage
from .errors import NodeNotFoundError, NodeTypeError
from .kvstore.base import KvStore
from .metadata.json import json_dumps, json_loads

#: The lock's name: not a stored key (nothing is ever written there).
SHAPE_LOCK = ".zarrkit-shape"


def shape_lock_key(path: str) -> str:
    return storage.join(path, SHAPE_LOCK)


def document_key(path: str, metadata: Any) -> str:
    """The key of the document that holds the shape: zarr.json, or .zarray for v2."""
    return formats.key(path, getattr(metadata, "metadata_key", formats.V3_KEY))


def read_document(store: KvStore, key: str, name: str) -> bytes:
    raw = store.get(key)
    if raw is None:
        raise NodeNotFoundError(f"array {name} no longer exists (no {key!r}): it was deleted "
                                "by another writer")
    return bytes(raw)


def shape_changed(raw: bytes, key: str, shape: tuple[int, ...]) -> bool:
    doc = json_loads(raw, what=key)
    return not isinstance(doc, dict) or doc.get("shape") != list(shape)


#: Members of a v3 or v2 array document that say how chunks are keyed, encoded and filled: a
#: writer may change the shape and attributes, never these (the array would be another one).
_LAYOUT = ("data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs",
           "dtype", "chunks", "compressor", "filters", "order", "dimension_separator")


def _layout(doc: Any) -> dict[str, Any] | None:
    return {k: doc.get(k) for k in _LAYOUT} if isinstance(doc, dict) else None


def check_layout(store: KvStore, path: str, metadata: Any, raw: bytes, key: str,
                 name: str) -> None:
    """NodeTypeError if the stored document `raw` lays chunks out otherwise than `metadata`:
    the array was replaced since the handle read it, and chunks encoded by the handle would be
    garbage (or silently other values) to the new array."""
    mine = _layout(_as_stored(metadata))
    if _layout(json_loads(raw, what=key)) == mine:
        return
    # Written by another tool, the same layout may be spelled otherwise (defaults left out).
    if _layout(_as_stored(stored_metadata(store, path, metadata, name))) != mine:
        raise NodeTypeError(f"array {name} was replaced by another writer with another data "
                            "type, chunking, codecs or fill value; open it again")


def _as_stored(metadata: Any) -> Any:
    """The document of `metadata` as a reader gets it back (tuples as lists, ...)."""
    return json_loads(json_dumps(metadata.to_json()), what="array metadata")


def stored_metadata(store: KvStore, path: str, metadata: Any, name: str) -> Any:
    """The array's metadata as stored now (attributes and shape others may have changed)."""
    current = storage.read_node(store, path, formats.format_of(metadata))
    if type(current) is not type(metadata):
        raise NodeTypeError(f"{name} was replaced by another writer: it is no longer an array "
                            f"of the kind this handle opened; open it again")
    return current

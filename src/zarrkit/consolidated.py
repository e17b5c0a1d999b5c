"""Writing consolidated metadata: `zarrkit.consolidate_metadata(where)`.

v2 groups get a `.zmetadata` document (zarr-python 2's format); v3 groups get zarr-python 3's
`consolidated_metadata` member in their zarr.json. Either way every node below the group is
recorded, so `zarrkit.open` then reads the whole hierarchy's metadata in one request. zarrkit
keeps the record up to date as it writes (`storage` records each node it creates, changes,
replaces or moves, and drops those it deletes, through any handle: one opened by its own path
finds the groups above its store); after other writers (zarr-python leaves the
record as it was), call `consolidate_metadata` again to refresh it (readers that must not trust
the record pass `use_consolidated=False`).
"""

from __future__ import annotations

from typing import Any

from . import formats, storage
from .errors import NodeTypeError
from .group import Group, finished_node, open_node
from .kvstore import open_kvstore
from .metadata.consolidated import (
    CONSOLIDATED_KEY,
    V3_MEMBER,
    records_of,
    v2_document,
    v3_member,
)
from .metadata.json import json_dumps
from .metadata.names import normalize_path
from .node import Node


def consolidate_metadata(where: Any, path: str | None = None, zarr_format: int | None = None,
                         *, storage_options: dict[str, Any] | None = None) -> Group:
    """Record the metadata of every node below the group at `where` (a path, URL, spec, store
    or Group; written or refreshed), of `zarr_format` if given (zarr-python's arguments: a
    group of another format is NodeNotFoundError). A store opened here from a path (a zip
    archive) is closed when done; the group returned is then opened again read-only."""
    formats.check_format(zarr_format)
    if isinstance(where, Node):  # its store and path: the store stays the caller's
        path = storage.join(where.path, normalize_path(path)) if path is not None \
            else where.path
        where = where.store
    store, base = open_kvstore(where, read_only=False, storage_options=storage_options)
    root = normalize_path(storage.join(base, normalize_path(path)) if path is not None else base)
    metadata = storage.read_node(store, root, zarr_format)
    if formats.is_array(metadata):
        raise NodeTypeError(f"consolidate_metadata: {root or '/'!r} is an array, not a group")
    fmt = formats.format_of(metadata)
    nodes = storage.nodes_below(store, root, fmt)
    records: dict[str, Any] = {}
    for rel, md in nodes.items():
        records.update(records_of(rel, md))
    if fmt == 2:
        records.update(records_of("", metadata))  # the group's own documents, v2 only
        store.set(formats.key(root, CONSOLIDATED_KEY), json_dumps(v2_document(records)))
    else:
        member = v3_member(records)
        updated = metadata.evolve(extra={**metadata.extra, V3_MEMBER: member})
        storage.write_metadata(store, root, updated)
    node = finished_node(open_node(store, root, zarr_format=fmt), where,
                         storage_options=storage_options)
    assert isinstance(node, Group)
    return node

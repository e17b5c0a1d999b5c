"""Creating a whole hierarchy at once from its nodes' metadata (zarr-python's `create_hierarchy`).

Nodes are given by path, each as a metadata document (`zarr.json`, or for v2 `.zarray`/`.zgroup`
with an `attributes` member), a zarrkit node, or zarr-python's metadata object. The groups they
imply (every ancestor not given) are added. Everything is checked before anything is written:
one format, no node below an array, and, unless `overwrite`, no node given where one exists
(an existing group where one is only implied stays as it is).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import formats, storage
from .errors import MetadataError, NodeExistsError
from .kvstore.base import KvStore
from .metadata.json import json_dumps, json_loads, storable_attributes
from .metadata.names import normalize_path
from .metadata.v2 import ArrayMetadataV2, GroupMetadataV2
from .metadata.v3 import parse_v3_node


def node_metadata(value: Any, where: str) -> Any:
    """The node metadata `value` describes (see the module's docstring)."""
    if hasattr(value, "_metadata") and hasattr(value, "zarr_format"):  # a zarrkit node
        return value._metadata
    to_dict = getattr(value, "to_dict", None)
    doc = to_dict() if callable(to_dict) and not isinstance(value, dict) else value
    if not isinstance(doc, dict):
        raise MetadataError(f"{where}: expected a metadata document (a dict), a zarrkit node "
                            f"or zarr-python's metadata, got {type(value).__name__}")
    # Tuples become lists; attributes may also hold the NaN and infinities zarr-python keeps
    # there (a strict round trip of the whole document refused them).
    rest = {k: v for k, v in doc.items() if k != "attributes"}
    doc = json_loads(json_dumps(rest, what=where), what=where) | (
        {"attributes": storable_attributes(doc["attributes"], where)}
        if "attributes" in doc else {})
    if doc.get("zarr_format") == 2:
        return _v2(doc, where)
    return parse_v3_node(doc, where=where)


def _v2(doc: dict[str, Any], where: str) -> Any:
    attributes = doc.pop("attributes", None)
    kind = doc.pop("node_type", "array" if "shape" in doc else "group")
    if kind == "array":
        return ArrayMetadataV2.from_json(doc, where=where, attributes=attributes)
    return GroupMetadataV2.from_json(doc, where=where, attributes=attributes)


def plan(nodes: Mapping[str, Any], root: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the nodes given, the groups they imply), by full path below `root`, parents first."""
    if not isinstance(nodes, Mapping):
        raise MetadataError(f"nodes must map paths to metadata, got {type(nodes).__name__}")
    given: dict[str, Any] = {}
    for rel, value in nodes.items():
        name = normalize_path(rel)  # each segment a valid v3 node name
        given[storage.join(root, name) if name else root] = node_metadata(value, repr(rel))
    fmts = {formats.format_of(md) for md in given.values()}
    if len(fmts) > 1:
        raise MetadataError(f"nodes of Zarr formats {sorted(fmts)}: one hierarchy, one format")
    fmt = fmts.pop() if fmts else 3
    for path in given:
        storage.check_new_path(path[len(root):].strip("/"), fmt)  # (the root is checked later)
    implied = {a: formats.new_group(fmt) for path in given for a in _ancestors(path, root)
               if a not in given}
    for path in given:
        above = [a for a in _ancestors(path, root) if a in given and formats.is_array(given[a])]
        if above:
            raise MetadataError(f"{path!r} cannot be created below {above[-1]!r}, an array")
    order = sorted({**implied, **given}, key=_depth_first)
    return ({p: given[p] for p in order if p in given},
            {p: implied[p] for p in order if p in implied})


def _ancestors(path: str, root: str) -> list[str]:
    """The paths from `root` down to `path`'s parent."""
    if path == root:
        return []
    rest = path[len(root):].strip("/").split("/")
    return [root] + [storage.join(root, "/".join(rest[:i])) for i in range(1, len(rest))]


def write(store: KvStore, root: str, given: dict[str, Any], implied: dict[str, Any],
          overwrite: bool) -> dict[str, Any]:
    """Write the planned nodes; the metadata of every node of the hierarchy, by path."""
    taken = [p for p, there in zip(given, formats.present_many(store, list(given), None),
                                   strict=True) if there]  # (a remote store: one request)
    if taken and not overwrite:
        raise NodeExistsError(f"nodes already exist at {', '.join(map(repr, taken))} "
                              "(overwrite=True replaces them)")
    fmt = formats.format_of(next(iter({**given, **implied}.values()), formats.new_group(3)))
    storage.ensure_parents(store, root, fmt)  # may refuse: before deleting anything
    kept = _existing_groups(store, implied, fmt, set(taken))
    for path in taken:
        storage.delete_node(store, path)
    written = {p: md for p, md in {**implied, **given}.items() if p not in kept}
    written = {p: written[p] for p in sorted(written, key=_depth_first)}
    for depth in sorted({_depth_first(p)[0] for p in written}):  # parents before children
        store.set_many([doc for p, md in written.items() if _depth_first(p)[0] == depth
                        for doc in formats.documents(p, md)])  # a level in one request
    storage.record_consolidated_many(store, written)
    every = {**kept, **written}
    return {p: every[p] for p in sorted(every, key=_depth_first)}


def _depth_first(path: str) -> tuple[int, str]:
    """Parents before children: the root, then by depth."""
    return (path.count("/") if path else -1, path)


def _existing_groups(store: KvStore, implied: dict[str, Any], fmt: int,
                     replaced: set[str]) -> dict[str, Any]:
    """The implied groups that exist already (and are not below a node being replaced)."""
    kept = {}
    paths = [p for p in implied if not any(p == r or p.startswith(r + "/") for r in replaced)]
    for path, found in zip(paths, formats.find_many(store, paths, None, use_consolidated=False),
                           strict=True):  # every implied group's documents in one request
        if found is None:
            continue
        if formats.is_array(found.metadata) or formats.format_of(found.metadata) != fmt:
            raise MetadataError(f"{path or '/'!r} holds an array or a node of another format, "
                                "where the hierarchy needs a group")
        kept[path] = found.metadata
    return kept

"""Where nodes live in a store: metadata keys, reading and writing node documents, parents.

This is the "Storage" section of the v3 core spec (and the v2/v1 layouts): which key holds a
node's metadata, and how a hierarchy maps to key prefixes.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable
from typing import Any

from . import formats
from .engine.executor import run_io
from .errors import (
    InvalidNameError,
    MetadataError,
    NodeNotFoundError,
    StoreError,
    ZarrkitError,
)
from .kvstore.base import KvStore
from .metadata.consolidated import CONSOLIDATED_KEY, V3_MEMBER, records_of
from .metadata.json import json_dumps, json_loads
from .metadata.names import normalize_path

V3_METADATA_KEY = "zarr.json"

NodeMetadata = formats.NodeMetadata


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


def find_node(store: KvStore, path: str, zarr_format: int | None = None,
              use_consolidated: bool | None = None) -> formats.Found:
    """The node at `path` in any format (or `zarr_format`), with its consolidated metadata."""
    path = normalize_path(path, v3=False)  # a v2 node's name may be one v3 reserves
    found = formats.find(store, path, zarr_format, use_consolidated)
    if found is None:
        wanted = "" if zarr_format is None else f"Zarr v{zarr_format} "
        raise NodeNotFoundError(f"no {wanted}array or group at {path or '/'!r} in the "
                                f"{store.driver} store (no zarr.json, .zarray, .zgroup or meta)")
    return found


def read_node(store: KvStore, path: str, zarr_format: int | None = None) -> NodeMetadata:
    return find_node(store, path, zarr_format, use_consolidated=False).metadata


def node_exists(store: KvStore, path: str, zarr_format: int | None = None) -> bool:
    return formats.exists(store, path, zarr_format)


def write_metadata(store: KvStore, path: str, metadata: NodeMetadata) -> None:
    """Write a node's documents, and its records in the consolidated metadata of the groups
    above it (a node created, changed or replaced is then seen by readers of those)."""
    formats.write(store, path, metadata)
    record_consolidated(store, path, metadata)


def write_attributes(store: KvStore, path: str, metadata: NodeMetadata) -> None:
    formats.write_attributes(store, path, metadata)
    record_consolidated(store, path, metadata)


def record_consolidated(store: KvStore, path: str, metadata: NodeMetadata) -> None:
    """Record the node just written at `path` in its ancestors' consolidated metadata."""
    _record_consolidated(store, path, lambda: {"": metadata})


def record_consolidated_many(store: KvStore, written: dict[str, NodeMetadata]) -> None:
    """`record_consolidated` of the nodes just `written` together, by path: each topmost one
    (its parent not written) with every node written below it, one request for each of those
    (not one a node). The groups written have no records of their own to keep up."""
    tops: dict[str | None, list[str]] = {}  # by parent (None: above the root)
    for p in written:
        parent = p.rpartition("/")[0] if p else None
        if parent not in written:
            tops.setdefault(parent, []).append(p)
    for parent, siblings in tops.items():
        if parent is None:
            _record_consolidated(store, "", lambda: written)
            continue
        below = {rel: md for p, md in written.items()  # (relative to the parent)
                 if any(_relative_to(p, t) is not None for t in siblings)
                 and (rel := _relative_to(p, parent))}
        _record_consolidated(store, siblings[0], lambda below=below: below, siblings=True)


def _relative_to(path: str, top: str) -> str | None:
    """`path` relative to `top` ("" for `top` itself), or None if not at or below it."""
    if path == top or not top:
        return path[len(top):]
    return path[len(top) + 1:] if path.startswith(top + "/") else None


#: Names a new node cannot have, by format: each is the key of its parent's own metadata
#: document, so that the node's prefix ("zarr.json/") would shadow or collide with that key
#: (a file store cannot hold both; a v2 group's ".zattrs" could never be written again).
_DOCUMENT_NAMES = {3: frozenset({V3_METADATA_KEY}),
                   2: frozenset({formats.ARRAY_KEY, formats.GROUP_KEY, formats.ATTRS_KEY,
                                 CONSOLIDATED_KEY})}


def check_new_path(path: str, zarr_format: int) -> None:
    """InvalidNameError if a node of `zarr_format` cannot be created at `path` (or below a
    group there) because a name on the way is a metadata document's key."""
    for name in path.split("/") if path else []:
        if name in _DOCUMENT_NAMES.get(zarr_format, ()):
            raise InvalidNameError(
                f"cannot create a Zarr v{zarr_format} node at {path!r}: {name!r} is the key of "
                "a group's own metadata document, not a member name")


def ensure_parents(store: KvStore, path: str, zarr_format: int = 3) -> None:
    """Create group metadata for every missing ancestor of `path` (v3 has no implicit groups,
    and the v2 spec requires them too). Ancestors must be groups of the same format, and no
    name on the way a metadata document's key (`check_new_path`)."""
    check_new_path(path, zarr_format)
    parts = path.split("/")[:-1] if path else []
    parents = ["/".join(parts[:i]) for i in range(len(parts) + 1) if path]
    # Every ancestor's documents in one request (a remote store: one round trip, not one a level).
    missing = []
    for parent, found in zip(parents, formats.find_many(
            store, parents, None, use_consolidated=False, prefer=zarr_format), strict=True):
        if found is None:
            missing.append(parent)
        elif formats.is_array(found.metadata):
            raise MetadataError(
                f"cannot create a node under {parent or '/'!r}: it is an array, not a group")
        elif formats.format_of(found.metadata) != zarr_format:
            other = formats.format_of(found.metadata)
            raise MetadataError(
                f"cannot create a Zarr v{zarr_format} node under {parent or '/'!r}: it is a "
                f"v{other} group (one hierarchy, one format); give zarr_format={other} to "
                "create it in the hierarchy's format")
    if not path or "" in missing:  # the store's root is new: what is above it decides too
        _check_above_root(store)
    if missing:  # all checked: the missing groups written in one request, and recorded
        group = formats.new_group(zarr_format)
        store.set_many([doc for p in missing for doc in formats.documents(p, group)])
        record_consolidated_many(store, dict.fromkeys(missing, group))


#: The documents that make a level above a store's root a node.
_NODE_DOCUMENTS = (V3_METADATA_KEY, formats.GROUP_KEY, formats.ARRAY_KEY)


def _check_above_root(store: KvStore) -> None:
    """A node about to be made at a store's root (a path such as "data.zarr/new") may not be
    inside an array's directory, at any depth: its keys could be the array's chunk keys, and
    replacing it would delete them. The levels above are read up to the nearest node, one
    request a level (a local store's directories, an object store's prefixes up to the
    bucket). A group there may hold it, of either format, as a node opened by its own path."""
    above, rel = store.parent(), ""
    while above is not None:
        level, name = above
        rel = join(name, rel) if rel else name  # the new node's path below `level`
        try:
            raws = level.get_many([(k, None) for k in _NODE_DOCUMENTS])
        except StoreError:
            return  # not this writer's to read (permissions): nothing known above
        v3, group, array = raws
        if array is not None or v3 is not None and _node_type(v3) == "array":
            raise MetadataError(f"cannot create a node at {rel!r} inside the array at "
                                f"{level!r}: its directory holds the array's chunks")
        if v3 is not None or group is not None:
            return  # a group: a node by its own path may start a hierarchy of its own there
        above = level.parent()


def _node_type(raw: Any) -> str | None:
    try:
        doc = json_loads(bytes(raw), what=V3_METADATA_KEY)
    except MetadataError:
        return None  # not readable: opening that node reports it
    return doc.get("node_type") if isinstance(doc, dict) else None




def delete_node(store: KvStore, path: str) -> None:
    """Remove a node and everything under it, and its records in the consolidated metadata of
    the groups above it (as zarr-python does): left there, reopening showed the deleted node."""
    _forget_consolidated(store, path)  # the root: in the groups above the store
    store.delete_prefix(prefix_of(path))


#: Keys copied per request while moving a node (values held in memory at once).
MOVE_BATCH = 16
#: Name prefix of the staging node a replacement is written to before it is moved in ...
STAGING = ".zarrkit-replacing-"
#: ... and of the node it replaces, moved aside until deleted.
REPLACED = ".zarrkit-replaced-"
#: Longest member name a staging name carries (file names are at most 255 bytes) ...
_NAMED_UP_TO = 200
#: ... and the name it carries for the root (no member's: "." is no node name).
ROOT = "."


def is_transient(name: str) -> bool:
    """Whether `name` is that of a replacement's staging node or of the node it replaces."""
    return name.startswith((STAGING, REPLACED))


def transient_parts(name: str) -> tuple[str, str] | None:
    """(token, name of the member it is for: "" if not told) of a transient node's name, or
    None if `name` is none."""
    for kind in (STAGING, REPLACED):
        if name.startswith(kind):
            token, _, target = name[len(kind):].partition("-")
            return token, target
    return None


def move_node(store: KvStore, source: str, dest: str, zarr_format: int) -> None:
    """Move the node at `source`, with everything below it, to the free path `dest`: renamed
    where the store can (a directory, memory keys), else every key copied and then `source`
    deleted, so that a failure while copying removes the partial copy and leaves `source`
    whole."""
    ensure_parents(store, dest, zarr_format)
    old, new = prefix_of(source), prefix_of(dest)
    if store.rename_prefix(old, new):
        _forget_consolidated(store, source)
    else:
        _transfer(store, old, new)
        delete_node(store, source)
    _record_consolidated(store, dest, lambda: _subtree(store, dest, zarr_format))


def _transfer(store: KvStore, old: str, new: str) -> None:
    """Copy every key under the prefix `old` to under `new`; a failure removes what was copied
    to `new` (which held nothing)."""
    keys = _copy_order(store, old)
    try:
        _copy_keys(store, old, new, keys)
    except BaseException:
        for key in keys:  # not delete_prefix(new): for the root, new is everything
            store.delete(new + key[len(old):])
        raise


def _copy_order(store: KvStore, prefix: str) -> list[str]:
    """The keys under `prefix`, the documents of its node last (main one last of all)."""
    rank = {name: i for i, name in enumerate(_DOCUMENTS)}
    return sorted(store.list_prefix(prefix), key=lambda k: rank.get(k[len(prefix):], -1))


def _copy_keys(store: KvStore, old: str, new: str, keys: list[str] | None = None) -> None:
    """Copy `keys` (by default every key) under the prefix `old` to under `new`, in order: the
    last alone, after all the others (a batch may be stored in any order)."""
    keys = _copy_order(store, old) if keys is None else keys
    body = keys[:-1]
    for batch in [body[i:i + MOVE_BATCH] for i in range(0, len(body), MOVE_BATCH)] + [keys[-1:]]:
        values = store.get_many([(k, None) for k in batch])
        store.set_many([(new + k[len(old):], v)
                        for k, v in zip(batch, values, strict=True) if v is not None])


def replace_node(store: KvStore, path: str, zarr_format: int,
                 write: Callable[[str], None]) -> None:
    """Have `write(p)` make, at `p`, the node that is to be at `path`. Where a node is, it is
    made at a staging path first (beside it; for the root, inside it) and moved in only once
    complete, so that a failure leaves the old node as it was; a failure where none was leaves
    nothing behind."""
    if not node_exists(store, path):
        ensure_parents(store, path, zarr_format)
        _written_or_removed(store, path, write)
        return
    parent, _, name = path.rpartition("/")
    token = secrets.token_hex(8)
    named = f"-{name or ROOT}" if len(name.encode()) <= _NAMED_UP_TO else ""
    staging, aside = (join(parent, kind + token + named) for kind in (STAGING, REPLACED))
    _written_or_removed(store, staging, write, shown=path)
    if not path:
        _replace_root(store, staging, aside)
        _forget_consolidated(store, path)  # the old root's records in the groups above
    elif not (named and _swap(store, path, staging, aside)):
        delete_node(store, path)
        if not store.rename_prefix(prefix_of(staging), prefix_of(path)):
            _transfer(store, prefix_of(staging), prefix_of(path))
            store.delete_prefix(prefix_of(staging))
    _record_consolidated(store, path, lambda: _subtree(store, path, zarr_format))


def _swap(store: KvStore, path: str, staging: str, aside: str) -> bool:
    """Put the complete node at `staging` in the place of the member at `path` with two
    renames, moving the old one `aside` first and deleting it after; False, with nothing
    moved, where the store cannot rename them. A writer killed between the renames leaves both
    named for `path`, which `finish_replacement` completes."""
    if not store.rename_prefix(prefix_of(path), prefix_of(aside)):
        return False
    if not store.rename_prefix(prefix_of(staging), prefix_of(path)):
        store.rename_prefix(prefix_of(aside), prefix_of(path))  # as it was
        return False
    _forget_consolidated(store, path)  # the old node's records; the new one's follow
    store.delete_prefix(prefix_of(aside))
    return True


def _replace_root(store: KvStore, staging: str, aside: str) -> None:
    """Put the complete node at `staging` (inside the root) in the root's place: every entry
    of the old root renamed into `aside`, then every one of `staging` out into the root, each
    node's main document last, then both deleted. A writer killed at any point leaves a state
    `finish_replacement` completes (the old main document aside: all of the old root is) or
    undoes. Where the store cannot rename, the old root is deleted (its main document first)
    and the new one copied in: a writer killed meanwhile loses the old root, never the new."""
    if _move_entries(store, "", aside, must_rename=True):
        _move_entries(store, staging, "")
    else:
        _copy_root_in(store, staging)
    store.delete_prefix(prefix_of(staging))
    store.delete_prefix(prefix_of(aside))


#: A node's documents, in the order moves take them after its other entries: its main one
#: last, so that a move cut short leaves the node whole where it was or not there at all.
_DOCUMENTS = (formats.ATTRS_KEY, CONSOLIDATED_KEY, *sorted(formats.V1_METADATA_NAMES),
              formats.ARRAY_KEY, formats.GROUP_KEY, V3_METADATA_KEY)


def _entries(store: KvStore, path: str) -> tuple[list[str], list[str]]:
    """(keys, sub-prefixes) directly under the node at `path`, documents last (in `_DOCUMENTS`
    order); the root's transient nodes left out (they are other replacements')."""
    keys, dirs = store.list_dir(prefix_of(path))
    rank = {name: i for i, name in enumerate(_DOCUMENTS)}
    return (sorted(keys, key=lambda k: rank.get(k, -1)),
            [d for d in dirs if not is_transient(d)])


def _move_entries(store: KvStore, source: str, dest: str, must_rename: bool = False) -> bool:
    """Move every entry directly under the node path `source` to under `dest`, renamed where
    the store can, else copied (over any partial copy there) and then deleted. With
    `must_rename`, False, nothing moved, when the first entry cannot be renamed."""
    keys, dirs = _entries(store, source)
    for i, (name, is_dir) in enumerate([(d, True) for d in dirs] + [(k, False) for k in keys]):
        old, new = join(source, name), join(dest, name)
        if is_dir and store.rename_prefix(prefix_of(old), prefix_of(new)) or \
                not is_dir and store.rename_key(old, new):
            continue
        if must_rename and i == 0:
            return False
        if is_dir:
            _copy_keys(store, prefix_of(old), prefix_of(new))
            store.delete_prefix(prefix_of(old))
        else:
            value = store.get(old)
            if value is not None:
                store.set(new, value)
            store.delete(old)
    return True


def _copy_root_in(store: KvStore, staging: str) -> None:
    """The root's replacement where the store cannot rename: the old root deleted, its main
    document first (the root without one tells `finish_replacement` that `staging` is
    complete), then `staging`'s keys copied in, its main document last."""
    keys, dirs = _entries(store, "")
    for key in reversed([k for k in keys if k in _DOCUMENTS]):  # one by one, in this order
        store.delete(key)
    store.delete_many([k for k in keys if k not in _DOCUMENTS])
    for name in dirs:  # (the transient ones, `staging` too, are not listed)
        store.delete_prefix(prefix_of(name))
    _transfer(store, prefix_of(staging), "")


def finish_replacement(store: KvStore, parent: str, token: str, name: str) -> str:
    """Complete or clear away the replacement of the member `name` of `parent` (`token` names
    its transient nodes) that a writer killed mid-way left. With the old node moved aside and
    nothing in its place, the new node was complete: it is moved in ("moved in"; the old one
    is put back, "restored", if the new one is gone). Otherwise the node in place stays and
    what is left beside it is deleted ("removed"); "kept" if the move cannot be made."""
    path = "" if name == ROOT else join(parent, name) if name else parent
    staging, aside = (join(parent, kind + token + (f"-{name}" if name else ""))
                      for kind in (STAGING, REPLACED))
    if name == ROOT:
        outcome = _finish_root(store, staging, aside)
    elif node_exists(store, path) or not node_exists(store, aside):
        store.delete_prefix(prefix_of(staging))  # unfinished, or already moved in
        store.delete_prefix(prefix_of(aside))
        outcome = "removed"
    else:
        source, other = (staging, aside) if node_exists(store, staging) else (aside, staging)
        if not store.rename_prefix(prefix_of(source), prefix_of(path)):
            return "kept"
        store.delete_prefix(prefix_of(other))
        outcome = "moved in" if source == staging else "restored"
    if path:  # the records of whatever is now in place (the writer may have dropped them)
        found = formats.find(store, path, None, use_consolidated=False)
        _forget_consolidated(store, path)
        if found is not None:
            fmt = formats.format_of(found.metadata)
            _record_consolidated(store, path, lambda: _subtree(store, path, fmt))
    return outcome


def _finish_root(store: KvStore, staging: str, aside: str) -> str:
    """`finish_replacement` of the root (`_replace_root`'s steps)."""
    if node_exists(store, aside):  # all of the old root is aside: the new one was complete
        outcome = "moved in" if _entries(store, staging) != ([], []) else "removed"
        _move_entries(store, staging, "")
    elif _entries(store, aside) != ([], []):  # the old root partly aside: put back
        _move_entries(store, aside, "")
        outcome = "restored"
    elif not node_exists(store, "") and node_exists(store, staging):  # the old one deleted
        _copy_root_in(store, staging)
        outcome = "moved in"
    else:  # the new root unfinished, or in its place
        outcome = "removed"
    store.delete_prefix(prefix_of(staging))
    store.delete_prefix(prefix_of(aside))
    return outcome


def _written_or_removed(store: KvStore, path: str, write: Callable[[str], None],
                        shown: str | None = None) -> None:
    """`write(path)`, or nothing left at `path`; an error naming a staging `path` names the
    node it stands for (`shown`) instead, the one the caller knows."""
    try:
        write(path)
    except BaseException as exc:
        delete_node(store, path)
        message = str(exc.args[0]) if len(exc.args) == 1 else ""
        if shown is None or not isinstance(exc, ZarrkitError) or path not in message:
            raise
        raise type(exc)(message.replace(path, shown)) from exc


# -- keeping consolidated metadata up to date ------------------------------------------------


def _forget_consolidated(store: KvStore, path: str) -> None:
    """Drop the records of `path` and the nodes below it from every ancestor's consolidated
    metadata (v3 `consolidated_metadata` member, v2 `.zmetadata`)."""
    def forget(records: dict[str, Any], rel: str, _: str) -> bool:
        stale = [k for k in records if k == rel or k.startswith(rel + "/")]
        for k in stale:
            del records[k]
        return bool(stale)

    _amend_consolidated(store, path, forget)  # the root: in the groups above the store only


def _record_consolidated(store: KvStore, path: str,
                         nodes: Callable[[], dict[str, NodeMetadata]],
                         siblings: bool = False) -> None:
    """Record `nodes()` ({path relative to `path`: metadata}, asked for only if an ancestor
    has consolidated metadata) in every ancestor's consolidated metadata of their format (and
    in a v2 group's own, which records its documents too). A node being staged
    (`replace_node`) is recorded once it is moved in. With `siblings`, `nodes()` are relative
    to `path`'s parent: new nodes beside the new node at `path`, recorded with it."""
    if any(is_transient(part) for part in path.split("/")):
        return
    nodes = functools.cache(nodes)

    def record(records: dict[str, Any], rel: str, key: str) -> bool:
        rel = rel.rpartition("/")[0] if siblings else rel
        v3 = key.endswith(V3_METADATA_KEY)
        new = {}
        for sub, metadata in nodes().items():
            if (metadata.zarr_format == 3) == v3:
                new.update(records_of(join(rel, sub) if sub else rel, metadata))
        changed = any(records.get(k) != v for k, v in new.items())
        records.update(new)
        return changed

    _amend_consolidated(store, path, record)


def _amend_consolidated(store: KvStore, path: str,
                        amend: Callable[[dict[str, Any], str, str], bool]) -> None:
    """`amend(records, rel, key)` the consolidated records (`rel`: `path` relative to their
    group) of every ancestor of `path` that has some (those above the store's root too, when
    it is a group or the node: `_amend_above`), and of the node's own `.zmetadata`, the
    documents in the store read in one request; a document amend changes is read again and
    written under its key's lock, so a concurrent update is not lost."""
    parts = path.split("/") if path else []
    ancestors = ["/".join(parts[:i]) for i in range(len(parts))]
    keys = [(a, formats.key(a, n)) for a in ancestors for n in (V3_METADATA_KEY, CONSOLIDATED_KEY)]
    keys.append((path, formats.key(path, CONSOLIDATED_KEY)))
    if path:  # whether the store's root is a group (the hierarchy may go on above it)
        keys.append(("", formats.GROUP_KEY))
    raws = store.get_many([(k, None) for _, k in keys])
    for (ancestor, key), raw in zip(keys, raws, strict=True):
        if key != formats.GROUP_KEY:
            _amend_document(store, key, raw, path[len(ancestor):].lstrip("/"), amend)
    if not path or raws[0] is not None or raws[-1] is not None:
        _amend_above(store, path, amend)


def _amend_document(store: KvStore, key: str, raw: Any, rel: str,
                    amend: Callable[[dict[str, Any], str, str], bool]) -> None:
    """Amend the consolidated records of the document `raw` read at `key`, if it has some."""
    if raw is not None and _amended(key, raw, rel, amend) is not None:
        with store.lock(key):
            doc = _amended(key, store.get(key), rel, amend)
            if doc is not None:
                store.set(key, json_dumps(doc))


#: A group's documents at the root of a store: one holding consolidated records (v3, v2), or
#: none but a group all the same (v2), through which the hierarchy goes on up.
_ROOT_DOCUMENTS = (V3_METADATA_KEY, CONSOLIDATED_KEY, formats.GROUP_KEY)


def _amend_above(store: KvStore, path: str,
                 amend: Callable[[dict[str, Any], str, str], bool]) -> None:
    """`_amend_consolidated` for the groups above the store's root (a node opened by its own
    path, `zarrkit.open("data.zarr/sub/a")`, below a consolidated "data.zarr"): level by level
    up while each is a group, one request a level; a level that cannot be read ends it."""
    above = store.parent()
    while above is not None:
        store, name = above
        path = join(name, path) if path else name
        try:
            raws = store.get_many([(k, None) for k in _ROOT_DOCUMENTS])
        except StoreError:
            return  # not this writer's to see (permissions): no group it can amend
        if raws[0] is None and raws[2] is None:
            return  # no group: the hierarchy ends below
        for key, raw in zip(_ROOT_DOCUMENTS[:2], raws, strict=False):
            _amend_document(store, key, raw, path, amend)
        above = store.parent()


def _amended(key: str, raw: Any, rel: str,
             amend: Callable[[dict[str, Any], str, str], bool]) -> Any:
    """The document at `key` with its consolidated records amended, or None if it has none,
    `amend` changed nothing, or it is not a readable document (opening that node reports it)."""
    try:
        doc = None if raw is None else json_loads(bytes(raw), what=key)
    except MetadataError:
        return None
    member = doc.get(V3_MEMBER) if isinstance(doc, dict) and key.endswith(V3_METADATA_KEY) \
        else doc
    records = member.get("metadata") if isinstance(member, dict) else None
    # v3 records are keyed by node path, v2 ones by document key ("a/x/.zarray").
    return doc if isinstance(records, dict) and amend(records, rel, key) else None


def nodes_below(store: KvStore, root: str, zarr_format: int) -> dict[str, NodeMetadata]:
    """{path relative to `root`: metadata} of every node below the group at `root`, level by
    level: the level's groups listed concurrently, then all their members' documents read in
    one request (a remote store: two round trips a level, not one a node)."""
    nodes: dict[str, NodeMetadata] = {}
    level = [root]
    while level:
        listed = run_io(lambda p: store.list_dir(prefix_of(p))[1], level, store.io_concurrency)
        paths = [join(p, n) for p, names in zip(level, listed, strict=True) for n in names]
        found = formats.find_many(store, paths, zarr_format, use_consolidated=False) \
            if paths else []
        level = []
        for child, f in zip(paths, found, strict=True):
            if f is not None:
                nodes[child[len(root) + 1:] if root else child] = f.metadata
                if not formats.is_array(f.metadata):
                    level.append(child)
    return nodes


def _subtree(store: KvStore, path: str, zarr_format: int) -> dict[str, NodeMetadata]:
    """{path relative to `path`: metadata} of the node at `path` and every node below it."""
    found = formats.find(store, path, zarr_format, use_consolidated=False)
    if found is None:
        return {}
    below = {} if formats.is_array(found.metadata) else nodes_below(store, path, zarr_format)
    return {"": found.metadata, **below}

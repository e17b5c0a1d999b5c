"""Which Zarr format a node is stored in, and reading/writing each format's documents.

v3: `zarr.json`. v2: `.zarray` or `.zgroup`, with attributes in `.zattrs`. v1: `meta` and
`attrs` (one array per store, read only). On a network store a node is found with one batched
request for every format's keys (plus the v2 consolidated `.zmetadata`), so opening costs one
round trip whatever the format; a local store is asked for `zarr.json` first, the v2 keys only
without it. v1 keys are read only where no other format's are. Naming the format narrows the
batch.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import MetadataError, ReadOnlyError, SpecError
from .kvstore.base import KvStore
from .metadata.consolidated import CONSOLIDATED_KEY, V3_MEMBER, ConsolidatedView
from .metadata.json import json_dumps, json_loads
from .metadata.v1 import ATTRS_KEY as V1_ATTRS_KEY
from .metadata.v1 import META_KEY, ArrayMetadataV1, loads_v1
from .metadata.v2 import ARRAY_KEY, ATTRS_KEY, GROUP_KEY, ArrayMetadataV2, GroupMetadataV2
from .metadata.v3 import ArrayMetadataV3, GroupMetadataV3, parse_v3_node

V3_KEY = "zarr.json"
FORMATS = (1, 2, 3)
#: Keys that hold metadata rather than chunks, in any format.
METADATA_NAMES = frozenset({V3_KEY, ARRAY_KEY, GROUP_KEY, ATTRS_KEY, CONSOLIDATED_KEY})
V1_METADATA_NAMES = frozenset({META_KEY, V1_ATTRS_KEY})

NodeMetadata = (ArrayMetadataV3 | GroupMetadataV3 | ArrayMetadataV2 | GroupMetadataV2
                | ArrayMetadataV1)
ARRAY_TYPES = (ArrayMetadataV3, ArrayMetadataV2)  # ArrayMetadataV1 is an ArrayMetadataV2


class _ParsedArrays:
    """Array documents already parsed and validated, keyed by their exact bytes.

    Opening is dominated by parsing and validating zarr.json and building the codec chain; the
    document is still read on every open, and only byte-identical documents hit. Each hit gets its
    own copy of the (mutable) attributes, so no two nodes share them.
    """

    def __init__(self, size: int = 256, max_document: int = 1 << 16) -> None:
        self._entries: OrderedDict[bytes, ArrayMetadataV3] = OrderedDict()
        self._lock = threading.Lock()
        self._size, self._max_document = size, max_document

    def get(self, raw: bytes) -> ArrayMetadataV3 | None:
        with self._lock:
            metadata = self._entries.get(raw)
            if metadata is None:
                return None
            self._entries.move_to_end(raw)
        fresh = copy.copy(metadata)
        object.__setattr__(fresh, "attributes", copy.deepcopy(metadata.attributes))
        return fresh

    def put(self, raw: bytes, metadata: ArrayMetadataV3) -> None:
        if len(raw) > self._max_document:
            return
        with self._lock:
            self._entries[raw] = metadata
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)


_parsed_arrays = _ParsedArrays()


def key(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


def check_format(zarr_format: Any) -> int | None:
    if zarr_format is None:
        return None
    # an int only: an array has no single truth value, True and 3.0 are no format numbers
    if isinstance(zarr_format, bool) or not isinstance(zarr_format, int | np.integer) \
            or zarr_format not in FORMATS:
        raise SpecError(f"zarr_format must be 1, 2, 3 or None (detect), got {zarr_format!r}")
    return int(zarr_format)


@dataclass(frozen=True)
class Found:
    """A node's metadata, and the consolidated metadata below it when a group has some."""

    metadata: Any
    consolidated: ConsolidatedView | None = None


def _json(store_key: str, data: Any) -> Any:
    return None if data is None else json_loads(bytes(data), what=store_key)


def find(store: KvStore, path: str, zarr_format: int | None = None,
         use_consolidated: bool | None = None) -> Found | None:
    """The node at `path` in `zarr_format` (None: whichever is there, v3 first), or None."""
    check_format(zarr_format)
    names = []
    if zarr_format in (None, 3):
        names.append(V3_KEY)
    if zarr_format is None and not getattr(store, "io_concurrency", 0):
        # A local store answers faster than a round trip: ask for zarr.json alone first, as it
        # is most often there, and for the v2 keys only when it is not.
        found = find(store, path, 3, use_consolidated)
        if found is not None:
            return found
        names = []
    names += _v2_names(zarr_format, use_consolidated)
    keys = [key(path, n) for n in names]
    values = dict(zip(names, store.get_many([(k, None) for k in keys]), strict=True)) \
        if keys else {}
    return _parsed(store, path, values, zarr_format, use_consolidated)


def _v2_names(zarr_format: int | None, use_consolidated: bool | None) -> list[str]:
    if zarr_format not in (None, 2):
        return []
    return [ARRAY_KEY, GROUP_KEY, ATTRS_KEY] + ([CONSOLIDATED_KEY] if use_consolidated
                                                is not False else [])


def find_many(store: KvStore, paths: list[str], zarr_format: int | None,
              use_consolidated: bool | None = None, prefer: int | None = None
              ) -> list[Found | None]:
    """`find` of each of `paths`, their v3 and v2 documents read in one batched request (one
    round trip on a remote store; v1 keys are read only for a path that has none); with
    `prefer` (and `zarr_format` None), a node of that format first (v3 first otherwise)."""
    names = ([V3_KEY] if zarr_format in (None, 3) else []) + \
        _v2_names(zarr_format, use_consolidated) + \
        ([META_KEY, V1_ATTRS_KEY] if zarr_format is None else [])
    raws = store.get_many([(key(p, n), None) for p in paths for n in names])
    found = []
    for i, path in enumerate(paths):
        values = dict(zip(names, raws[i * len(names):(i + 1) * len(names)], strict=True))
        own = None if prefer is None else _parsed(
            store, path, {n: v for n, v in values.items() if n in _names_of(prefer)}, prefer,
            use_consolidated)
        found.append(own or _parsed(store, path, values, zarr_format, use_consolidated))
    return found


def _names_of(zarr_format: int) -> tuple[str, ...]:
    return (V3_KEY,) if zarr_format == 3 else (ARRAY_KEY, GROUP_KEY, ATTRS_KEY, CONSOLIDATED_KEY)


def present_many(store: KvStore, paths: list[str], zarr_format: int | None) -> list[bool]:
    """`exists` of each of `paths` (nothing parsed); a remote store asked in one batched request
    of empty ranges, not a round trip a key."""
    if not getattr(store, "io_concurrency", 0):
        return [exists(store, p, zarr_format) for p in paths]
    formats = FORMATS[::-1] if zarr_format is None else (zarr_format,)
    names = [n for f in formats for n in _EXISTS_NAMES[f]]
    there = store.exists_many([key(p, n) for p in paths for n in names])
    return [any(there[i * len(names):(i + 1) * len(names)]) for i in range(len(paths))]


def _parsed(store: KvStore, path: str, values: dict[str, Any], zarr_format: int | None,
            use_consolidated: bool | None) -> Found | None:
    """The node at `path` from its documents `values` (by name) read in the store."""
    if values.get(V3_KEY) is not None:
        raw = bytes(values[V3_KEY])
        cached = _parsed_arrays.get(raw)
        if cached is not None:
            return Found(cached)
        found = _v3(path, _json(key(path, V3_KEY), raw), use_consolidated)
        if isinstance(found.metadata, ArrayMetadataV3):
            _parsed_arrays.put(raw, found.metadata)
        return found
    if values.get(ARRAY_KEY) is not None or values.get(GROUP_KEY) is not None:
        return _v2(path, values, use_consolidated)
    if zarr_format in (None, 1):
        return _v1(store, path, values)
    return None


def _v3(path: str, doc: Any, use_consolidated: bool | None) -> Found:
    where = key(path, V3_KEY)
    if not isinstance(doc, dict):
        raise MetadataError(f"{where}: the metadata document must be a JSON object")
    metadata = parse_v3_node(doc, where=where)
    member = getattr(metadata, "extra", {}).get(V3_MEMBER)
    if use_consolidated is False or isinstance(metadata, ArrayMetadataV3):
        return Found(metadata)
    view = None if member is None else ConsolidatedView.from_v3(member, where=where)
    return Found(metadata, _required(view, use_consolidated, f"{where} ({V3_MEMBER})"))


def _v2(path: str, values: dict[str, Any], use_consolidated: bool | None) -> Found:
    if values.get(ARRAY_KEY) is not None and values.get(GROUP_KEY) is not None:
        raise MetadataError(f"{path or '/'!r} holds both {ARRAY_KEY} and {GROUP_KEY}; a v2 node "
                            "is either an array or a group")
    attrs_key = key(path, ATTRS_KEY)
    attrs = _json(attrs_key, values.get(ATTRS_KEY))
    if attrs is not None and not isinstance(attrs, dict):
        raise MetadataError(f"{attrs_key}: expected a JSON object of attributes")
    if values.get(ARRAY_KEY) is not None:
        where = key(path, ARRAY_KEY)
        return Found(ArrayMetadataV2.from_json(_json(where, values[ARRAY_KEY]), where=where,
                                               attributes=attrs))
    where = key(path, GROUP_KEY)
    metadata = GroupMetadataV2.from_json(_json(where, values[GROUP_KEY]), where=where,
                                         attributes=attrs)
    consolidated = values.get(CONSOLIDATED_KEY)
    if use_consolidated is False:
        return Found(metadata)
    where = key(path, CONSOLIDATED_KEY)
    view = None if consolidated is None else ConsolidatedView.from_v2(_json(where, consolidated),
                                                                      where=where)
    return Found(metadata, _required(view, use_consolidated, where))


def _required(view: ConsolidatedView | None, use_consolidated: bool | None,
              where: str) -> ConsolidatedView | None:
    """`use_consolidated=True` asks for consolidated metadata (as zarr-python's does): a group
    without any is an error, not a silent listing of the store."""
    if view is None and use_consolidated:
        raise MetadataError(f"use_consolidated=True, but the group has no usable consolidated "
                            f"metadata ({where}); write it with "
                            "zarrkit.consolidate_metadata, or pass use_consolidated=None")
    return view


def _v1(store: KvStore, path: str, values: dict[str, Any]) -> Found | None:
    """The v1 array at `path`, its documents read unless `values` holds them already."""
    meta_key, attrs_key = key(path, META_KEY), key(path, V1_ATTRS_KEY)
    meta, attrs = (values.get(META_KEY), values.get(V1_ATTRS_KEY)) if META_KEY in values \
        else store.get_many([(meta_key, None), (attrs_key, None)])
    if meta is None:
        return None
    attributes = {} if attrs is None else loads_v1(attrs, what=attrs_key)
    if not isinstance(attributes, dict):
        raise MetadataError(f"{attrs_key}: expected a JSON object of attributes")
    return Found(ArrayMetadataV1.from_v1_json(loads_v1(meta, what=meta_key), where=meta_key,
                                              attributes=attributes))


def exists(store: KvStore, path: str, zarr_format: int | None = None) -> bool:
    """Whether a node of `zarr_format` (None: any) is at `path`, without parsing anything."""
    formats = FORMATS[::-1] if zarr_format is None else (zarr_format,)
    keys = [key(path, n) for f in formats for n in _EXISTS_NAMES[f]]
    if store.io_concurrency:  # remote: one round trip
        return any(store.exists_many(keys))
    return any(store.exists(k) for k in keys)  # (local: stops at the first found)


#: The documents whose presence makes a node of each format.
_EXISTS_NAMES = {3: [V3_KEY], 2: [ARRAY_KEY, GROUP_KEY], 1: [META_KEY]}


def other_format(store: KvStore, path: str, zarr_format: int | None) -> int | None:
    """The format of a node at `path` that is not `zarr_format` (checked when none of that
    format was found, so that the caller can say so rather than "not found" or "exists")."""
    if zarr_format is None:
        return None
    return next((f for f in FORMATS[::-1] if f != zarr_format and exists(store, path, f)), None)


def format_of(metadata: Any) -> int:
    return getattr(metadata, "zarr_format", 3)


def is_array(metadata: Any) -> bool:
    return isinstance(metadata, ARRAY_TYPES)


def write(store: KvStore, path: str, metadata: Any) -> None:
    """Write a node's documents (`documents`), one after the other."""
    for k, value in documents(path, metadata):
        store.set(k, value)


def documents(path: str, metadata: Any) -> list[tuple[str, bytes]]:
    """A node's documents as (key, value): zarr.json, or .zarray/.zgroup (+ .zattrs when
    non-empty)."""
    fmt = format_of(metadata)
    if fmt == 3:
        return [(key(path, V3_KEY), json_dumps(metadata.to_json()))]
    _refuse_v1(fmt, path)
    docs = [(key(path, metadata.metadata_key), json_dumps(metadata.to_json()))]
    if metadata.attributes:
        docs.append((key(path, ATTRS_KEY), json_dumps(metadata.attributes)))
    return docs


def write_attributes(store: KvStore, path: str, metadata: Any) -> None:
    """Persist a node's attributes: v2 rewrites only `.zattrs`, leaving `.zarray` untouched."""
    fmt = format_of(metadata)
    if fmt == 3:
        write(store, path, metadata)
        return
    _refuse_v1(fmt, path)
    store.set(key(path, ATTRS_KEY), json_dumps(metadata.attributes))


def _refuse_v1(fmt: int, path: str) -> None:
    if fmt == 1:
        raise ReadOnlyError(f"{path or '/'!r} is a Zarr v1 array; v1 is read only "
                            "(zarrkit.convert copies it to v2 or v3)")


def new_group(zarr_format: int, attributes: dict[str, Any] | None = None) -> Any:
    if zarr_format == 2:
        return GroupMetadataV2.create(attributes)
    if zarr_format == 3:
        return GroupMetadataV3.create(attributes)
    raise SpecError(f"groups can be created in Zarr v2 or v3, not v{zarr_format}")

"""The `ocdbt` kvstore adapter: TensorStore's OCDBT databases, read-only.

An OCDBT database lives under a prefix of a base store (file, memory, zip, remote):
`manifest.ocdbt` (or numbered `manifest.<16 hex digits>` files) names the versions, each a
B+tree whose nodes and large values sit in data files (`d/<id>`); `_ocdbt_format` decodes them.
The store reads one version, chosen when it is opened (the latest, or the spec's `version`: a
generation number or a commit time), so later commits are seen by opening it again. Lookups and
listings read only the nodes on their way, a level of a batch of keys in one `get_many` of the
base; decoded nodes are cached (they never change: a commit writes new ones). Writing is
TensorStore's job: every write, delete or lock raises `ReadOnlyError`.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import quote

from ..errors import CorruptDataError, NotSupportedError, ReadOnlyError, SpecError, StoreError
from . import _ocdbt_format as fmt
from ._util import URL_SAFE
from .base import Buffer, ByteRange, KvStore, validate_key, validate_prefix
from .resources import follow, is_reference
from .url import (
    KvStoreDriver,
    OpenOptions,
    Spec,
    _base_spec,
    _check_spec,
    _clean_path,
    _spec_path,
    _unquote,
    check_resource,
    kvstore_spec,
    open_kvstore,
    register_kvstore_driver,
)

_NUMBERED = re.compile(r"manifest\.[0-9a-f]{16}")
_CACHE_BYTES = 64 << 20  # decoded nodes kept for later lookups


class OcdbtStore(KvStore):
    """One version of the OCDBT database at `base_path` ("" or "dir/") in `base`."""

    driver = "ocdbt"

    def __init__(self, base: KvStore, base_path: str = "", *, version: int | str | None = None,
                 config: Mapping[str, Any] | None = None, close_base: bool = False) -> None:
        super().__init__(read_only=True)
        if version is not None:  # as the driver checks a spec's members
            _check_version(version, "OcdbtStore")
        if config:
            _check_config_spec(config, "OcdbtStore")
        self.base, self._prefix, self._close_base = base, base_path, close_base
        self.io_concurrency = base.io_concurrency
        self._version_spec, self._constraints = version, dict(config or {})
        self._nodes: OrderedDict[fmt.Ref, tuple[fmt.BtreeNode, int]] = OrderedDict()
        self._cached_bytes = 0
        self._cache_lock = threading.Lock()
        manifest = self._load_manifest()
        self.config = manifest.config if manifest else None
        _check_config(self._constraints, self.config, self._where())
        self.version: fmt.Version | None = self._select(manifest, version)

    def _where(self) -> str:
        return f"OCDBT database {kvstore_spec(self.base, self._prefix)!r}"

    # -- files of the base store ---------------------------------------------------------------
    def _read(self, refs: Sequence[fmt.Ref]) -> list[bytes]:
        """The bytes at each of `refs`, in one batch of the base store."""
        requests = [(self._prefix + r.path, ByteRange(r.offset, r.length)) for r in refs]
        found = self.base.get_many(requests)
        out = []
        for ref, data in zip(refs, found, strict=True):
            if data is None:
                raise CorruptDataError(f"OCDBT file {self._prefix + ref.path!r} is missing "
                                       f"({self._where()})")
            if len(data) != ref.length:
                raise CorruptDataError(f"OCDBT file {self._prefix + ref.path!r} is truncated: "
                                       f"{len(data)} of {ref.length} bytes at {ref.offset}")
            out.append(bytes(data))
        return out

    # -- manifest and versions -----------------------------------------------------------------
    def _load_manifest(self) -> fmt.Manifest | None:
        name = self._prefix + "manifest.ocdbt"
        data = self.base.get(name)
        if data is None:
            return None  # no database yet: no keys, as TensorStore reads it
        manifest = fmt.decode_manifest(bytes(data), name)
        return manifest if manifest.config.manifest_kind == 0 else self._numbered(manifest)

    def _numbered(self, top: fmt.Manifest) -> fmt.Manifest:
        """The latest `manifest.<number>`; a writer may delete old ones meanwhile: list again."""
        for _ in range(10):
            names = [n for n in self.base.list_dir(self._prefix)[0] if _NUMBERED.fullmatch(n)]
            if not names:
                return fmt.Manifest(top.config, [], [])
            name = self._prefix + max(names)
            data = self.base.get(name)
            if data is None:
                continue
            manifest = fmt.decode_manifest(bytes(data), name)
            if manifest.config.manifest_kind != 0 or _same(manifest.config) != _same(top.config):
                raise CorruptDataError(f"OCDBT file {name!r} is corrupt: its configuration "
                                       "differs from manifest.ocdbt's")
            return fmt.Manifest(top.config, manifest.versions, manifest.version_nodes)
        raise StoreError(f"{self._where()}: its numbered manifests kept vanishing while read")

    def _select(self, manifest: fmt.Manifest | None, version: int | str | None
                ) -> fmt.Version | None:
        if version is None:
            return manifest.versions[-1] if manifest and manifest.versions else None
        if isinstance(version, int):
            found = self._find_version(manifest, lambda v: v.generation == version,
                                       lambda n: n.generation >= version, first=True)
            what = f"generation {version}"
        else:
            time = fmt.parse_commit_time(version)
            assert time is not None  # _check_version refused any other text
            found = self._find_version(manifest, lambda v: v.commit_time <= time,
                                       lambda n: n.commit_time <= time, first=False)
            what = f"a commit at or before {version}"
        if found is None:
            raise StoreError(f"{self._where()} has no version with {what}")
        return found

    def _find_version(self, manifest: fmt.Manifest | None, leaf: Any, node: Any, first: bool
                      ) -> fmt.Version | None:
        """The version `leaf` accepts: among the inline versions, else down the version tree
        through the node `node` accepts (the first such, else the last)."""
        if manifest is None:
            return None
        versions: Sequence[fmt.Version] = manifest.versions
        nodes: Sequence[fmt.VersionNodeRef] = manifest.version_nodes
        arity = manifest.config.version_tree_arity_log2
        while True:
            hits = [v for v in versions if leaf(v)]
            if hits:
                return hits[0] if first else hits[-1]
            picks = [n for n in nodes if node(n)]
            if not picks:
                return None
            pick = picks[0] if first else picks[-1]
            data = self._read([pick.ref])[0]
            name = self._prefix + pick.ref.path
            height, entries = fmt.decode_version_node(data, name, pick.ref.transitive, arity)
            if height != pick.height:
                raise CorruptDataError(f"OCDBT file {name!r} is corrupt: version "
                                       f"tree node of height {height} where {pick.height} "
                                       "was expected")
            versions, nodes = (entries, []) if height == 0 else ([], entries)  # type: ignore[assignment]

    # -- B+tree --------------------------------------------------------------------------------
    def _nodes_many(self, refs: Sequence[fmt.Ref], heights: Sequence[int]
                    ) -> list[fmt.BtreeNode]:
        with self._cache_lock:
            cached = {r: self._nodes[r][0] for r in refs if r in self._nodes}
        missing = list(dict.fromkeys(r for r in refs if r not in cached))
        limit = 1 << 32
        for ref, data in zip(missing, self._read(missing) if missing else [], strict=True):
            cached[ref] = fmt.decode_btree_node(data, self._prefix + ref.path, ref.transitive,
                                                limit)
            self._keep(ref, cached[ref], len(data))
        nodes = [cached[r] for r in refs]
        for ref, node, height in zip(refs, nodes, heights, strict=True):
            if node.height != height:
                raise CorruptDataError(f"OCDBT file {self._prefix + ref.path!r} is corrupt: "
                                       f"B+tree node of height {node.height} where {height} "
                                       "was expected")
        return nodes

    def _keep(self, ref: fmt.Ref, node: fmt.BtreeNode, size: int) -> None:
        with self._cache_lock:
            if ref in self._nodes:
                return
            self._nodes[ref] = (node, size)
            self._cached_bytes += size
            while self._cached_bytes > _CACHE_BYTES and len(self._nodes) > 1:
                self._cached_bytes -= self._nodes.popitem(last=False)[1][1]

    def _find_many(self, keys: Sequence[bytes]) -> list[fmt.LeafEntry | None]:
        """The leaf entry of each key (None: absent), descending a level of all keys at once."""
        found: list[fmt.LeafEntry | None] = [None] * len(keys)
        if self.version is None or self.version.root is None:
            return found
        frontier = {(self.version.root, b""): list(range(len(keys)))}
        height = self.version.root_height
        while frontier:
            nodes = self._nodes_many([ref for ref, _ in frontier], [height] * len(frontier))
            below: dict[tuple[fmt.Ref, bytes], list[int]] = {}
            for ((_, prefix), indices), node in zip(frontier.items(), nodes, strict=True):
                for i in indices:
                    _descend(node, prefix, keys[i], i, found, below)
            frontier, height = below, height - 1
        return found

    # -- reading -------------------------------------------------------------------------------
    def get(self, key: str, byte_range: ByteRange | None = None) -> Buffer | None:
        return self.get_many([(key, byte_range)])[0]

    def get_many(self, requests: Sequence[tuple[str, ByteRange | None]]
                 ) -> list[Buffer | None]:
        entries = self._find_many([_raw(validate_key(k)) for k, _ in requests])
        out: list[Buffer | None] = [None] * len(requests)
        indirect: list[tuple[int, fmt.Ref]] = []
        for i, ((_, rng), entry) in enumerate(zip(requests, entries, strict=True)):
            if entry is None:
                continue
            start, stop = _span(rng, entry.length)
            if entry.inline is not None:
                out[i] = entry.inline[start:stop]
            elif stop == start:
                out[i] = b""
            else:
                assert entry.ref is not None
                ref = entry.ref
                indirect.append((i, fmt.Ref(ref.path, ref.offset + start, stop - start, "")))
        for (i, _), data in zip(indirect, self._read([r for _, r in indirect]), strict=True):
            out[i] = data
        return out

    def exists(self, key: str) -> bool:
        return self._find_many([_raw(validate_key(key))])[0] is not None

    def exists_many(self, keys: Sequence[str]) -> list[bool]:
        return [e is not None for e in self._find_many([_raw(validate_key(k)) for k in keys])]

    def size(self, key: str) -> int | None:
        entry = self._find_many([_raw(validate_key(key))])[0]
        return None if entry is None else entry.length

    def list_prefix(self, prefix: str) -> Iterator[str]:
        query = _raw(validate_prefix(prefix))
        if self.version is None or self.version.root is None:
            return
        root = self._nodes_many([self.version.root], [self.version.root_height])[0]
        for key in self._walk(root, b"", None, query, _successor(query)):
            yield key.decode("utf-8", "surrogateescape")

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """The immediate children of `prefix`, found by skipping each sub-prefix's keys: one
        descent per child (a group's members), not a walk over every chunk key below them."""
        query = _raw(validate_prefix(prefix))
        if self.version is None or self.version.root is None:
            return [], []
        root = self._nodes_many([self.version.root], [self.version.root_height])[0]
        keys, dirs, low = [], [], query
        end = _successor(query)
        while (key := self._first(root, b"", None, low, query, end)) is not None:
            head, slash, _ = key[len(query):].partition(b"/")
            (dirs if slash else keys).append(head.decode("utf-8", "surrogateescape"))
            low = _successor(query + head + b"/") if slash else key + b"\x00"
            if low is None:
                break
        return keys, dirs

    def _first(self, node: fmt.BtreeNode, prefix: bytes, upper: bytes | None, low: bytes,
               query: bytes, end: bytes | None) -> bytes | None:
        """The least key under `node` that is >= `low` and starts with `query`, reading one
        child at a time (the first whose key range can hold it, then the next)."""
        if node.height == 0:
            rel = low[len(prefix):] if low.startswith(prefix) else b""
            start = bisect.bisect_left(node.entries, rel, key=lambda e: e.key) \
                if low.startswith(prefix) else 0
            for entry in node.entries[start:]:
                key = prefix + entry.key
                if end is not None and key >= end:
                    return None
                if key >= low and key.startswith(query):
                    return key
            return None
        for ref, common, high in _candidates(node, prefix, upper, low, query, end):
            below = self._nodes_many([ref], [node.height - 1])[0]
            if (found := self._first(below, common, high, low, query, end)) is not None:
                return found
        return None

    def _walk(self, node: fmt.BtreeNode, prefix: bytes, upper: bytes | None, query: bytes,
              end: bytes | None) -> Iterator[bytes]:
        """The keys under `node` that start with `query`, in order; only the children whose
        key range can hold such keys are read (all of a node's in one batch)."""
        if node.height == 0:
            for entry in node.entries:
                if (key := prefix + entry.key).startswith(query):
                    yield key
            return
        picks = list(_candidates(node, prefix, upper, query, query, end))
        nodes = self._nodes_many([r for r, _, _ in picks], [node.height - 1] * len(picks))
        for (_, common, high), child_node in zip(picks, nodes, strict=True):
            yield from self._walk(child_node, common, high, query, end)

    # -- writing: TensorStore's job --------------------------------------------------------------
    def _check_writable(self, key: str) -> None:
        raise ReadOnlyError(f"cannot write {key!r}: the ocdbt store is read-only in zarrkit "
                            "(write OCDBT databases with TensorStore)")

    def _set(self, key: str, value: Buffer) -> None:
        self._check_writable(key)

    def _delete(self, key: str) -> None:
        self._check_writable(key)

    def lock(self, key: str) -> AbstractContextManager[Any]:
        raise ReadOnlyError(f"cannot lock {key!r}: the ocdbt store is read-only in zarrkit")

    def rename_key(self, old: str, new: str) -> bool:
        self._check_writable(new)
        return False

    # -- description ---------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"driver": "ocdbt", "base": kvstore_spec(self.base, self._prefix)}
        if self._version_spec is not None:
            spec["version"] = self._version_spec
        if self._constraints:
            spec["config"] = dict(self._constraints)
        return spec

    def __repr__(self) -> str:
        return f"OcdbtStore({self.base!r}, {self._prefix!r}, version={self._version_spec!r})"

    def close(self) -> None:
        if self._close_base:  # a base the driver opened, not the caller's store
            self.base.close()

    def __reduce__(self) -> tuple[Any, ...]:
        # The copy reads the same generation, even if the database has had commits since.
        generation = self.version.generation if self.version else None
        return _rebuild, (self.base, self._prefix, self._version_spec, self._constraints,
                          generation, self._close_base)


def _rebuild(base: KvStore, prefix: str, version: int | str | None,
             constraints: dict[str, Any], generation: int | None, close_base: bool
             ) -> OcdbtStore:
    store = OcdbtStore(base, prefix, version=generation, config=constraints,
                       close_base=close_base)
    store._version_spec = version
    return store


# -- helpers -----------------------------------------------------------------------------------
def _raw(key: str) -> bytes:
    return key.encode("utf-8", "surrogateescape")


def _successor(prefix: bytes) -> bytes | None:
    """The least byte string after every string starting with `prefix` (None: none is)."""
    stripped = prefix.rstrip(b"\xff")
    return stripped[:-1] + bytes([stripped[-1] + 1]) if stripped else None


def _candidates(node: fmt.BtreeNode, prefix: bytes, upper: bytes | None, low: bytes,
                query: bytes, end: bytes | None) -> Iterator[tuple[fmt.Ref, bytes, bytes | None]]:
    """(child, the prefix all its keys share, its upper bound) of each child of the interior
    `node` whose key range can hold keys >= `low` starting with `query` (below `end`: the
    query's successor), in order."""
    children: list[fmt.ChildEntry] = node.entries  # type: ignore[assignment]
    for j, child in enumerate(children):
        high = prefix + children[j + 1].key if j + 1 < len(children) else upper
        if high is not None and high <= low:
            continue
        if end is not None and prefix + child.key >= end:
            return
        common = prefix + child.key[:child.common]
        if common.startswith(query) or query.startswith(common):
            yield child.ref, common, high


def _span(rng: ByteRange | None, length: int) -> tuple[int, int]:
    """`rng` of a value of `length` bytes as [start, stop), clipped as `ByteRange.slice_of`."""
    if rng is None:
        return 0, length
    if rng.offset < 0:
        return max(length + rng.offset, 0), length
    start = min(rng.offset, length)
    stop = length if rng.length is None else min(length, rng.offset + rng.length)
    return start, max(start, stop)


def _descend(node: fmt.BtreeNode, prefix: bytes, key: bytes, index: int,
             found: list[fmt.LeafEntry | None], below: dict[tuple[fmt.Ref, bytes], list[int]]
             ) -> None:
    """Find `key` in `node`: its leaf entry into `found`, or the child to search into `below`."""
    if not key.startswith(prefix):
        return
    rel = key[len(prefix):]
    j = bisect.bisect_right(node.entries, rel, key=lambda e: e.key) - 1
    if j < 0:
        return
    entry = node.entries[j]
    if node.height == 0:
        if entry.key == rel:
            found[index] = entry  # type: ignore[assignment]
        return
    common = prefix + entry.key[:entry.common]  # type: ignore[union-attr]
    if key.startswith(common):
        below.setdefault((entry.ref, common), []).append(index)


def _same(config: fmt.Config) -> tuple[Any, ...]:
    """A config's fields but its manifest kind (numbered manifests store kind "single")."""
    return (config.uuid, config.max_inline_value_bytes, config.max_decoded_node_bytes,
            config.version_tree_arity_log2, config.zstd_level)


# -- the spec's members --------------------------------------------------------------------------
_CONFIG_RANGES = {"max_inline_value_bytes": (0, 1 << 20),
                  "max_decoded_node_bytes": (0, (1 << 32) - 1),
                  "version_tree_arity_log2": (1, 16)}


def _check_config_spec(config: Any, where: str) -> None:
    if not isinstance(config, Mapping):
        raise SpecError(f"{where}: 'config' must be an object, got {config!r}")
    extra = set(config) - set(_CONFIG_RANGES) - {"uuid", "manifest_kind", "compression"}
    if extra:
        raise SpecError(f"{where}: unknown 'config' members {sorted(extra)}")
    for name, (low, high) in _CONFIG_RANGES.items():
        value = config.get(name, low)
        if type(value) is not int or not low <= value <= high:
            raise SpecError(f"{where}: config.{name} must be an integer in [{low}, {high}], "
                            f"got {value!r}")
    uuid = config.get("uuid", "0" * 32)
    if not isinstance(uuid, str) or not re.fullmatch(r"[0-9a-fA-F]{32}", uuid):
        raise SpecError(f"{where}: config.uuid must be 32 hex digits, got {uuid!r}")
    if config.get("manifest_kind", "single") not in ("single", "numbered"):
        raise SpecError(f"{where}: config.manifest_kind must be \"single\" or \"numbered\", "
                        f"got {config['manifest_kind']!r}")
    compression = config.get("compression")
    if compression is not None and not (
            isinstance(compression, Mapping) and compression.get("id") == "zstd"
            and set(compression) <= {"id", "level"}
            and type(compression.get("level", 0)) is int):
        raise SpecError(f"{where}: config.compression must be null or "
                        f"{{\"id\": \"zstd\", \"level\": n}}, got {compression!r}")


def _check_config(constraints: Mapping[str, Any], stored: fmt.Config | None, where: str
                  ) -> None:
    """The stored config must match every given constraint, as TensorStore requires."""
    if not constraints or stored is None:
        return
    actual = stored.to_json()
    for name, wanted in constraints.items():
        have = actual[name]
        if name == "uuid":
            wanted = wanted.lower()
        elif name == "compression" and isinstance(wanted, Mapping):
            wanted = {"id": "zstd", "level": wanted.get("level", 0)}
        if have != wanted:
            raise SpecError(f"{where}: configuration mismatch: config.{name} is {have!r} in "
                            f"the database, the spec asks for {wanted!r}")


def _check_version(version: Any, where: str) -> None:
    if type(version) is int:
        if not 1 <= version < 1 << 64:
            raise SpecError(f"{where}: 'version' generation must be in [1, 2**64 - 1], got "
                            f"{version}")
    elif not isinstance(version, str) or fmt.parse_commit_time(version) is None:
        raise SpecError(f"{where}: 'version' must be a generation number or a commit time "
                        f"such as \"2024-01-02T03:04:05Z\", got {version!r}")


def _check_coordinator(spec: Spec, where: str) -> None:
    """A coordinator only orders writers; one with an address asks for gRPC, which zarrkit
    does not speak: refused rather than ignored."""
    value = spec.get("coordinator")
    if value is None:
        return
    if isinstance(value, str):
        if not is_reference(value, "ocdbt_coordinator"):
            raise SpecError(f"{where}: 'coordinator' must be an object or a reference to an "
                            f"ocdbt_coordinator resource, got {value!r}")
        own = spec.get("context")
        value = follow(value, "ocdbt_coordinator", (own,) if isinstance(own, Mapping) else (),
                       where)[2]
        if not isinstance(value, Mapping):
            return  # the default: no coordinator
    if not isinstance(value, Mapping) or set(value) - {"address", "lease_duration"}:
        raise SpecError(f"{where}: 'coordinator' must be an ocdbt_coordinator object "
                        f"({{\"address\": ..., \"lease_duration\": ...}}), got {value!r}")
    if value.get("address") is not None:
        raise NotSupportedError(f"{where}: zarrkit reads OCDBT databases without a "
                                "coordinator and does not connect to one")


def _check_ocdbt(spec: Spec) -> None:
    where = f"kvstore spec {spec!r}"
    if "base" not in spec:
        raise SpecError(f"{where}: the ocdbt driver requires 'base'")
    if isinstance(spec["base"], Mapping):
        _check_spec(spec["base"])
    if "config" in spec:
        _check_config_spec(spec["config"], where)
    if "version" in spec:
        _check_version(spec["version"], where)
    for name in ("target_data_file_size", "experimental_read_coalescing_threshold_bytes",
                 "experimental_read_coalescing_merged_bytes"):
        if name in spec and (type(spec[name]) is not int or spec[name] < 0):
            raise SpecError(f"{where}: {name!r} must be a non-negative integer")
    if not isinstance(spec.get("assume_config", False), bool):
        raise SpecError(f"{where}: 'assume_config' must be true or false")
    if not isinstance(spec.get("experimental_read_coalescing_interval", ""), str):
        raise SpecError(f"{where}: 'experimental_read_coalescing_interval' must be a duration "
                        "string such as \"10ms\"")
    for name in ("cache_pool", "data_copy_concurrency"):
        check_resource(spec, name, lambda v: isinstance(v, Mapping), "an object")
    _check_coordinator(spec, where)


def _ocdbt_open(spec: Spec, options: OpenOptions) -> tuple[KvStore, str]:
    _check_ocdbt(spec)
    if not options.read_only:
        raise ReadOnlyError(f"kvstore spec {spec!r}: the ocdbt store is read-only in zarrkit; "
                            "open it read-only (mode='r', or read=True without write=True; write OCDBT "
                            "databases with TensorStore)")
    base, path = open_kvstore(_base_spec(spec["base"]), read_only=True,
                              storage_options=options.storage_options, context=options.context)
    inner = _clean_path(_spec_path(spec, spec), spec)
    store = OcdbtStore(base, path + "/" if path else "", version=spec.get("version"),
                       config=spec.get("config"), close_base=True)
    return store, inner


def _ocdbt_from_url(body: str, base: Spec | None, url: str) -> Spec:
    if base is None:
        raise SpecError(f"invalid URL {url!r}: 'ocdbt:' is an adapter and must follow a base, "
                        "e.g. file:///data/db/|ocdbt:inner/path")
    if body.startswith("//") or "?" in body or "#" in body:
        raise SpecError(f"invalid ocdbt URL component in {url!r}: expected "
                        "ocdbt:[@version/]<path in database>")
    spec: Spec = {"driver": "ocdbt", "base": base}
    if body.startswith("@"):  # "@v3/..." a generation, "@2024-...Z/..." a commit time
        text, _, body = body[1:].partition("/")
        spec["version"] = _url_version(text, url)
    path = _unquote(body, url)
    if path:
        spec["path"] = path
    return spec


def _url_version(text: str, url: str) -> int | str:
    if re.fullmatch(r"v[0-9]+", text) and int(text[1:]) >= 1:
        return int(text[1:])
    if fmt.parse_commit_time(text) is not None:
        return text
    raise SpecError(f"invalid OCDBT version {text!r} in URL {url!r}: expected v<generation> "
                    "or a commit time such as 2024-01-02T03:04:05Z")


def _ocdbt_to_url(spec: Spec) -> str:
    path = quote(_spec_path(spec, spec), safe=URL_SAFE)
    version = spec.get("version")
    if version is None:
        return "ocdbt:" + path
    text = f"v{version}" if isinstance(version, int) else version
    return f"ocdbt:@{text}/" + path


register_kvstore_driver(KvStoreDriver(
    "ocdbt", _ocdbt_open, _ocdbt_from_url, _ocdbt_to_url, adapter=True,
    members=frozenset({"path", "base", "context", "config", "version", "coordinator",
                       "cache_pool", "data_copy_concurrency", "target_data_file_size",
                       "assume_config", "experimental_read_coalescing_threshold_bytes",
                       "experimental_read_coalescing_merged_bytes",
                       "experimental_read_coalescing_interval"}),
    check=_check_ocdbt), replace=True)

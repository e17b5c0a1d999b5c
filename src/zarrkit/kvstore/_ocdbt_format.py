"""Decoding TensorStore's OCDBT format (read-only): manifests, version tree nodes, B+tree nodes.

The format is TensorStore's documented one (kvstore/ocdbt/index.rst): every encoded manifest or
node is a header (magic, length, version, compression), a body (zstd or raw) and a CRC-32C of
all that precedes it. Every check failing raises `CorruptDataError` (or `ChecksumError`) naming
the base store file it came from, so a damaged database never yields a wrong value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

import zstandard
from crc32c import crc32c

from ..errors import ChecksumError, CorruptDataError

MANIFEST_MAGIC = 0x0CDB3A2A
VERSION_NODE_MAGIC = 0x0CDB1234
BTREE_NODE_MAGIC = 0x0CDB20DE
#: A version whose tree is empty has no root: its offset and length are all ones.
NO_ROOT = (1 << 64) - 1
_MAX_DECODED = 1 << 32  # the config's max_decoded_node_bytes is a uint32


class Reader:
    """A cursor over decoded bytes; reading past the end is corruption of `name`."""

    def __init__(self, data: bytes, name: str) -> None:
        self.data, self.pos, self.name = data, 0, name

    def fail(self, what: str) -> CorruptDataError:
        return CorruptDataError(f"OCDBT file {self.name!r} is corrupt: {what}")

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise self.fail(f"truncated (needs {n} bytes at offset {self.pos})")
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def u8(self) -> int:
        return self.take(1)[0]

    def u64le(self) -> int:
        return int.from_bytes(self.take(8), "little")

    def varint(self) -> int:
        value = shift = 0
        while True:
            byte = self.u8()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
            if shift > 63:  # a uint64 has at most 10 bytes
                raise self.fail("varint longer than 64 bits")
        if value >= 1 << 64:
            raise self.fail("varint larger than 64 bits")
        return value

    def varints(self, count: int) -> list[int]:
        return [self.varint() for _ in range(count)]

    def done(self) -> None:
        if self.pos != len(self.data):
            raise self.fail(f"{len(self.data) - self.pos} unexpected bytes at the end")


def unframe(data: bytes, magic: int, kind: str, name: str, max_size: int = _MAX_DECODED
            ) -> Reader:
    """The decoded body of one encoded manifest or node, every header field and the checksum
    checked."""
    outer = Reader(bytes(data), name)
    if len(data) < 4 + 8 + 2 + 4:
        raise outer.fail(f"{len(data)} bytes is too short for an {kind}")
    if int.from_bytes(data[:4], "big") != magic:
        raise outer.fail(f"bad magic {bytes(data[:4]).hex()} for an {kind}")
    outer.pos = 4
    if outer.u64le() != len(data):
        raise outer.fail(f"{kind} length field does not match its {len(data)} bytes")
    stored = int.from_bytes(data[-4:], "little")
    if crc32c(outer.data[:-4]) != stored:
        raise ChecksumError(f"OCDBT file {name!r} is corrupt: {kind} CRC-32C mismatch")
    if (version := outer.varint()) != 0:
        raise outer.fail(f"unsupported {kind} format version {version}")
    compression = outer.varint()
    body = outer.data[outer.pos:-4]
    if compression == 1:
        body = _unzstd(body, max_size, outer)
    elif compression != 0:
        raise outer.fail(f"unknown {kind} compression format {compression}")
    return Reader(body, name)


#: Compressed bytes decoded at a time: a few blocks, so that a body decoding to more than its
#: limit is stopped after at most ~4 MiB more (zstd blocks decode to 128 KiB from 4 bytes).
_ZSTD_PIECE = 128


def _unzstd(body: bytes, max_size: int, where: Reader) -> bytes:
    """The zstd frame `body` decoded, refused without decoding (or allocating) much more than
    `max_size` bytes when it declares or decodes to more."""
    decoder = zstandard.ZstdDecompressor().decompressobj()
    parts, total, pos = [], 0, 0
    try:
        if zstandard.frame_content_size(body) > max_size:
            raise where.fail(f"zstd data declares more than {max_size} bytes")
        while pos < len(body) and not decoder.eof:
            parts.append(decoder.decompress(body[pos:pos + _ZSTD_PIECE]))
            pos += _ZSTD_PIECE
            total += len(parts[-1])
            if total > max_size:
                raise where.fail(f"zstd data decodes to more than {max_size} bytes")
    except zstandard.ZstdError as exc:
        raise where.fail(f"bad zstd data ({exc})") from None
    if not decoder.eof or decoder.unused_data or pos < len(body):
        raise where.fail("zstd data is truncated or trailed by garbage")
    return b"".join(parts)


# -- the pieces --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Ref:
    """Where an encoded node or value lives: a data file path (from the database root), the
    byte range, and the transitive path the node's own data file table is relative to."""

    path: str
    offset: int
    length: int
    transitive: str


@dataclass(frozen=True, slots=True)
class Config:
    uuid: bytes
    manifest_kind: int  # 0 single, 1 numbered
    max_inline_value_bytes: int
    max_decoded_node_bytes: int
    version_tree_arity_log2: int
    zstd_level: int | None  # None: uncompressed

    def to_json(self) -> dict[str, object]:
        """TensorStore's JSON form of the config (its `config` spec member)."""
        return {"uuid": self.uuid.hex(),
                "manifest_kind": ("single", "numbered")[self.manifest_kind],
                "max_inline_value_bytes": self.max_inline_value_bytes,
                "max_decoded_node_bytes": self.max_decoded_node_bytes,
                "version_tree_arity_log2": self.version_tree_arity_log2,
                "compression": (None if self.zstd_level is None
                                else {"id": "zstd", "level": self.zstd_level})}


@dataclass(frozen=True, slots=True)
class Version:
    """One commit: its generation, B+tree root (None: empty) and commit time (ns since 1970)."""

    generation: int
    root_height: int
    root: Ref | None
    num_keys: int
    commit_time: int


@dataclass(frozen=True, slots=True)
class VersionNodeRef:
    """A version tree node: the latest generation and earliest commit time below it."""

    generation: int
    ref: Ref
    num_generations: int
    commit_time: int
    height: int


@dataclass(frozen=True, slots=True)
class Manifest:
    config: Config
    versions: list[Version]  # the inline (latest) versions, oldest first
    version_nodes: list[VersionNodeRef]  # older versions, oldest subtree first


def read_config(r: Reader) -> Config:
    uuid = r.take(16)
    kind = r.varint()
    if kind not in (0, 1):
        raise r.fail(f"unknown manifest kind {kind}")
    inline, node_bytes, arity = r.varint(), r.varint(), r.u8()
    if not 1 <= arity <= 16:
        raise r.fail(f"version_tree_arity_log2 {arity} is out of range [1, 16]")
    method = r.varint()
    if method == 0:
        level = None
    elif method == 1:
        level = int.from_bytes(r.take(4), "little", signed=True)
    else:
        raise r.fail(f"unknown compression method {method}")
    return Config(uuid, kind, inline, node_bytes, arity, level)


def read_data_file_table(r: Reader, transitive: str) -> list[tuple[str, str]]:
    """The table's entries as (full path, transitive path for what that file's nodes name)."""
    count = r.varint()
    prefix_lengths = [0, *r.varints(max(count - 1, 0))]
    suffix_lengths = r.varints(count)
    base_lengths = r.varints(count)
    entries, previous = [], b""
    for i in range(count):
        if prefix_lengths[i] > len(previous):
            raise r.fail("data file path prefix longer than the previous path")
        path = previous[:prefix_lengths[i]] + r.take(suffix_lengths[i])
        if base_lengths[i] > len(path):
            raise r.fail("data file base path longer than its path")
        entries.append((transitive + _text(path, r), transitive + _text(path[:base_lengths[i]], r)))
        previous = path
    return entries


def _text(raw: bytes, r: Reader) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise r.fail(f"data file path {raw!r} is not UTF-8") from None


def _refs(r: Reader, table: list[tuple[str, str]], count: int, lengths: bool = True
          ) -> list[tuple[int, int, int]]:
    """`count` (file id, offset, length) columns, file ids checked against `table`."""
    ids = r.varints(count)
    offsets = r.varints(count)
    sizes = r.varints(count) if lengths else [0] * count
    for i in ids:
        if i >= len(table):
            raise r.fail(f"data file id {i} is not in its table of {len(table)}")
    return list(zip(ids, offsets, sizes, strict=True))


def _ref(table: list[tuple[str, str]], file_id: int, offset: int, length: int) -> Ref:
    path, transitive = table[file_id]
    return Ref(path, offset, length, transitive)


def read_versions(r: Reader, table: list[tuple[str, str]], arity: int) -> list[Version]:
    """Version tree leaf entries (and a manifest's inline versions)."""
    count = r.varint()
    generations = r.varints(count)
    heights = [r.u8() for _ in range(count)]
    refs = _refs(r, table, count) if count else []
    num_keys = r.varints(count)
    r.varints(2 * count)  # num_tree_bytes, num_indirect_value_bytes: statistics only
    times = [r.u64le() for _ in range(count)]
    _check_generations(r, generations, count, arity, 0)
    versions = []
    for i in range(count):
        file_id, offset, length = refs[i]
        root = None if (offset, length) == (NO_ROOT, NO_ROOT) else _ref(table, *refs[i])
        if root is None and heights[i]:
            raise r.fail("a version without a root has a nonzero root height")
        versions.append(Version(generations[i], heights[i], root, num_keys[i], times[i]))
    return versions


def read_version_nodes(r: Reader, table: list[tuple[str, str]], arity: int,
                       height: int | None) -> list[VersionNodeRef]:
    """Interior version tree entries; `height` None: a manifest's, whose heights are stored."""
    count = r.varint()
    generations = r.varints(count)
    refs = _refs(r, table, count) if count else []
    num_generations = r.varints(count)
    times = [r.u64le() for _ in range(count)]
    heights = [r.u8() for _ in range(count)] if height is None else [height - 1] * count
    if height is not None:
        _check_generations(r, generations, count, arity, height)
    elif any(a <= b for a, b in zip(heights, heights[1:], strict=False)):
        raise r.fail("manifest version node heights are not decreasing")
    elif count and not all(a < b for a, b in zip(generations, generations[1:], strict=False)):
        raise r.fail("version generations are not increasing")
    return [VersionNodeRef(generations[i], _ref(table, *refs[i]), num_generations[i], times[i],
                           heights[i]) for i in range(count)]


def _check_generations(r: Reader, generations: list[int], count: int, arity: int,
                       height: int) -> None:
    if count and (generations[0] == 0
                  or not all(a < b for a, b in zip(generations, generations[1:], strict=False))):
        raise r.fail("version generations are not increasing from 1")
    if count:  # how many entries a node holds follows from its last generation
        limit = ((generations[-1] >> (arity * height)) - 1) % (1 << arity) + 1
        if count > limit:
            raise r.fail(f"{count} version entries where at most {limit} fit")


def decode_manifest(data: bytes, name: str) -> Manifest:
    r = unframe(data, MANIFEST_MAGIC, "OCDBT manifest", name)
    config = read_config(r)
    if config.manifest_kind == 1:  # the config only; versions are in manifest.<number>
        r.done()
        return Manifest(config, [], [])
    table = read_data_file_table(r, "")
    versions = read_versions(r, table, config.version_tree_arity_log2)
    nodes = read_version_nodes(r, table, config.version_tree_arity_log2, None)
    r.done()
    return Manifest(config, versions, nodes)


def decode_version_node(data: bytes, name: str, transitive: str, arity: int
                        ) -> tuple[int, list[Version] | list[VersionNodeRef]]:
    """(height, entries) of an encoded version tree node."""
    r = unframe(data, VERSION_NODE_MAGIC, "OCDBT version tree node", name)
    if (stored := r.u8()) != arity:
        raise r.fail(f"version tree arity {stored} differs from the manifest's {arity}")
    height = r.u8()
    if (height + 1) * arity >= 64:
        raise r.fail(f"version tree node height {height} is too large")
    table = read_data_file_table(r, transitive)
    if height == 0:
        entries: list[Version] | list[VersionNodeRef] = read_versions(r, table, arity)
    else:
        entries = read_version_nodes(r, table, arity, height)
    r.done()
    return height, entries


# -- B+tree nodes ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LeafEntry:
    key: bytes  # relative to the node's key prefix
    length: int
    inline: bytes | None  # the value, or None when it lives at `ref`
    ref: Ref | None


@dataclass(frozen=True, slots=True)
class ChildEntry:
    key: bytes  # the least key of the child's subtree, relative to the node's prefix
    common: int  # how many bytes of `key` every key of the subtree starts with
    ref: Ref


@dataclass(frozen=True, slots=True)
class BtreeNode:
    height: int
    entries: list[LeafEntry] | list[ChildEntry]


def decode_btree_node(data: bytes, name: str, transitive: str, max_size: int) -> BtreeNode:
    r = unframe(data, BTREE_NODE_MAGIC, "OCDBT B+tree node", name, max_size)
    height = r.u8()
    table = read_data_file_table(r, transitive)
    count = r.varint()
    if height == 0:
        entries: list[LeafEntry] | list[ChildEntry] = _leaf_entries(r, table, count)
    else:
        entries = _child_entries(r, table, count)
    r.done()
    return BtreeNode(height, entries)


def _keys(r: Reader, count: int) -> tuple[list[int], list[int]]:
    return [0, *r.varints(max(count - 1, 0))], r.varints(count)


def _join_keys(r: Reader, prefixes: list[int], suffixes: list[int]) -> list[bytes]:
    keys: list[bytes] = []
    previous = b""
    for prefix, suffix in zip(prefixes, suffixes, strict=True):
        if prefix > len(previous):
            raise r.fail("key prefix longer than the previous key")
        key = previous[:prefix] + r.take(suffix)
        if keys and key <= previous:
            raise r.fail("B+tree keys are not in increasing order")
        keys.append(key)
        previous = key
    return keys


def _leaf_entries(r: Reader, table: list[tuple[str, str]], count: int) -> list[LeafEntry]:
    prefixes, suffixes = _keys(r, count)
    keys = _join_keys(r, prefixes, suffixes)
    lengths = r.varints(count)
    kinds = r.varints(count)
    if any(k not in (0, 1) for k in kinds):
        raise r.fail("unknown value kind in a B+tree leaf")
    indirect = [i for i in range(count) if kinds[i] == 1]
    refs = dict(zip(indirect, _refs(r, table, len(indirect), lengths=False), strict=True))
    entries = []
    for i in range(count):
        if kinds[i] == 0:
            entries.append(LeafEntry(keys[i], lengths[i], r.take(lengths[i]), None))
        else:
            file_id, offset, _ = refs[i]
            entries.append(LeafEntry(keys[i], lengths[i], None,
                                     _ref(table, file_id, offset, lengths[i])))
    return entries


def _child_entries(r: Reader, table: list[tuple[str, str]], count: int) -> list[ChildEntry]:
    prefixes, suffixes = _keys(r, count)
    commons = r.varints(count)
    keys = _join_keys(r, prefixes, suffixes)
    refs = _refs(r, table, count)
    r.varints(3 * count)  # num_keys, num_tree_bytes, num_indirect_value_bytes: statistics
    entries = []
    for key, common, ref in zip(keys, commons, refs, strict=True):
        if common > len(key):
            raise r.fail("subtree common prefix longer than its key")
        entries.append(ChildEntry(key, common, _ref(table, *ref)))
    return entries


# -- commit times ------------------------------------------------------------------------------
_TIME = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z")


def parse_commit_time(text: str) -> int | None:
    """An RFC 3339 UTC time ("2024-01-02T03:04:05.5Z") as nanoseconds since 1970, or None."""
    match = _TIME.fullmatch(text)
    if match is None:
        return None
    try:
        whole = datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return None
    seconds = int((whole - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds())
    return seconds * 10**9 + int((match.group(2) or "").ljust(9, "0"))

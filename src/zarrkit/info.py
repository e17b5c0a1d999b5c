"""`info` of arrays and groups: zarr-python's readable summaries (`print(node.info)`).

Nodes are described through their public attributes only, so this module imports neither
`Array` nor `Group` (both import it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import NotSupportedError


class Info:
    """Rows of (label, text), printed as an aligned table."""

    def rows(self) -> list[tuple[str, str]]:
        raise NotImplementedError

    def __str__(self) -> str:
        rows = self.rows()
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}} : {v}" for k, v in rows)

    __repr__ = __str__


def _store(node: Any) -> str:
    return f"{node.store.driver} {node.store.to_json().get('path', '')}".strip()


class ArrayInfo(Info):
    """A readable summary of an array (`print(array.info)`). As zarr-python's, the plain
    summary reads nothing from the store (listing, or one index per shard, is slow on remote
    stores); `complete=True` (`array.info_complete()`) adds the stored bytes and counts."""

    def __init__(self, array: Any, complete: bool = False) -> None:
        self.array = array
        self.complete = complete

    def rows(self) -> list[tuple[str, str]]:
        a = self.array
        md = a._metadata
        rows = [
            ("Type", "Array"), ("Zarr format", str(a.zarr_format)), ("Name", a.name),
            ("Data type", md.data_type.to_json() if hasattr(md.data_type, "to_json")
             else str(a.dtype)),
            ("Shape", str(a.shape)),
        ]
        if a.shards is not None:  # above the chunk shape, as zarr-python shows it
            rows.append(("Shard shape", str(a.shards)))
        rows += [
            ("Chunk shape", str(a.chunks)),
            ("Fill value", _scalar_repr(a.fill_value)),
            ("Codecs", describe_codecs(a.metadata["codecs"]) if a.zarr_format == 3
             else ", ".join(md.codec_names) or "-"),
            ("Store", _store(a)),
            ("Read-only", str(a.read_only)),
            ("No. bytes", f"{a.nbytes} ({human_bytes(a.nbytes)})"),
        ]
        return rows + _stored_rows(a) if self.complete else rows


def _stored_rows(a: Any) -> list[tuple[str, str]]:
    """The stored bytes, inner chunks and shards: these list the store and read each stored
    shard's index."""
    sharded = a.shards is not None
    try:
        stored, chunks, shards = a._stored_figures()  # one listing, requests in parallel
        nstored, nshards = str(chunks), "" if shards is None else str(shards)
    except NotSupportedError:  # e.g. plain HTTP cannot list, so nothing can be totalled
        stored, nstored, nshards = None, "?", "?"
    rows = [
        ("No. bytes stored", "unknown" if stored is None
         else f"{stored} ({human_bytes(stored)})"),
        ("Storage ratio", f"{a.nbytes / stored:.1f}" if stored else "-"),
        ("Chunks stored", f"{nstored}/{a.nchunks}"),
    ]
    if sharded:  # zarr-python's "Shards Initialized", here with the total
        rows.append(("Shards stored", f"{nshards}/{a.nshards}"))
    return rows


class GroupInfo(Info):
    """A readable summary of a group: where it is and, when `complete` (the members are
    listed, slow on remote stores), its members (counted when the store can list them)."""

    def __init__(self, group: Any, complete: bool = False) -> None:
        self.group = group
        self.complete = complete

    def rows(self) -> list[tuple[str, str]]:
        g = self.group
        rows = [("Type", "Group"), ("Zarr format", str(g.zarr_format)), ("Name", g.name),
                ("Store", _store(g)), ("Read-only", str(g.read_only))]
        if not self.complete:
            return rows
        try:
            members = g.members()
        except NotSupportedError:  # e.g. plain HTTP cannot list
            return [*rows, ("No. members", "unknown")]
        arrays = sorted(k for k, v in members if hasattr(v, "shape"))
        groups = sorted(k for k, v in members if not hasattr(v, "shape"))
        return [*rows, ("No. members", str(len(members))), ("No. arrays", str(len(arrays))),
                ("No. groups", str(len(groups))), ("Arrays", ", ".join(arrays) or "-"),
                ("Groups", ", ".join(groups) or "-")]


def _scalar_repr(value: Any) -> str:
    if isinstance(value, np.datetime64 | np.timedelta64):
        # As `zarrkit info --json` shows them: .item() gives None for NaT, a datetime repr or
        # a bare integer (times finer than microseconds).
        return str(value)
    if isinstance(value, np.ndarray):  # a record's subarray field
        return f"[{', '.join(_scalar_repr(v) for v in value)}]"
    if isinstance(value, np.void) and value.dtype.names:
        fields = [_scalar_repr(value[name]) for name in value.dtype.names]
        return f"({', '.join(fields)}{',' if len(fields) == 1 else ''})"
    item = value.item() if isinstance(value, np.generic) else value
    return repr(item)


def describe_codecs(codecs: list[dict[str, Any]]) -> str:
    """A one-line summary of a codec chain, e.g. "sharding_indexed[bytes, blosc(lz4)]"."""
    parts = []
    for c in codecs:
        config = c.get("configuration", {})
        if c["name"] == "sharding_indexed":
            inner = describe_codecs(config.get("codecs", []))
            index = describe_codecs(config.get("index_codecs", []))
            parts.append(f"sharding_indexed[{inner}; index {index} at "
                         f"{config.get('index_location', 'end')}]")
        elif c["name"] == "blosc":
            parts.append(f"blosc({config.get('cname')}, {config.get('shuffle', 'shuffle')})")
        elif c["name"] in ("zstd", "gzip") and "level" in config:
            parts.append(f"{c['name']}(level {config['level']})")
        else:
            parts.append(c["name"])
    return ", ".join(parts)


def human_bytes(n: float | None) -> str:
    """A byte count as text ("1.5 MiB"); "unknown" for None."""
    if n is None:
        return "unknown"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)

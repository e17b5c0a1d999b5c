"""Summaries of arrays and groups: as dicts (for `--json`), and as HTML for notebooks.

Everything here tolerates stores that cannot list (plain HTTP): the stored size is then
reported as unknown instead of failing the whole summary.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from .array import Array
from .errors import NotSupportedError
from .group import Group, listed_below
from .info import human_bytes
from .kvstore import kvstore_to_url

#: Members shown per group in the HTML tree before "... and N more".
HTML_MEMBERS = 50


def location(node: Array | Group) -> str:
    """Where the node lives, as a URL when the store has one."""
    try:
        return kvstore_to_url(node.store, node.path)
    except Exception:  # noqa: BLE001 - anonymous memory stores have no URL
        return f"{node.store.driver}:{node.path or '/'}"


def _codecs(a: Array) -> list[Any]:
    md = a.metadata
    if a.zarr_format == 3:
        return md["codecs"]
    return [c for c in [*(md.get("filters") or []), md.get("compressor")] if c]


def _scalar(value: Any) -> Any:
    """A fill value as strict JSON that reads well: JSON has no NaN/Infinity (they become
    "nan", "inf"), complex numbers are [real, imag], bytes hex, times ISO 8601 text, records
    an object of their fields."""
    if isinstance(value, np.void):
        names = value.dtype.names
        return {n: _scalar(value[n]) for n in names} if names else bytes(value).hex()
    if isinstance(value, np.datetime64 | np.timedelta64):
        return str(value)  # .item() would give a datetime (not JSON), an int, or None for NaT
    if isinstance(value, np.ndarray | list | tuple):  # e.g. a record's subarray field
        return [_scalar(v) for v in value]
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    if isinstance(value, complex):
        return [_scalar(value.real), _scalar(value.imag)]
    if isinstance(value, bytes):
        return value.hex()
    if value is None or isinstance(value, str | int | float):
        return value
    return str(value)  # anything else still prints as valid JSON


def stored_figures(a: Array) -> tuple[int | None, int | None, int | None]:
    """(bytes, chunks, shards stored) from one listing, the sizes and shard indexes read
    concurrently; shards None when the array is not sharded, all None when the store cannot
    list."""
    try:
        stored, nstored, shards = a._stored_figures()
    except NotSupportedError:
        return None, None, None
    return stored, nstored, shards if a.shards else None


def array_summary(a: Array) -> dict[str, Any]:
    stored, nstored, shards_stored = stored_figures(a)
    shards_total = a.nshards if a.shards else None
    return {
        "type": "array", "name": a.name, "zarr_format": a.zarr_format,
        "location": location(a), "shape": list(a.shape), "dtype": str(a.dtype),
        "chunks": list(a.chunks), "shards": list(a.shards) if a.shards else None,
        "dimension_names": list(a.dimension_names) if a.dimension_names else None,
        "fill_value": _scalar(a.fill_value), "codecs": _codecs(a),
        "nbytes": a.nbytes, "nbytes_stored": stored,
        "compression_ratio": round(a.nbytes / stored, 3) if stored else None,
        "chunks_stored": nstored, "chunks_total": a.nchunks, "read_only": a.read_only,
        "attributes": dict(a.attrs),
        "shards_stored": shards_stored, "shards_total": shards_total,
    }


def group_summary(g: Group) -> dict[str, Any]:
    members = g.members()
    return {
        "type": "group", "name": g.name, "zarr_format": g.zarr_format,
        "location": location(g),
        "arrays": sorted(k for k, v in members if isinstance(v, Array)),
        "groups": sorted(k for k, v in members if isinstance(v, Group)),
        "attributes": dict(g.attrs), "read_only": g.read_only,
    }


def summary(node: Array | Group) -> dict[str, Any]:
    return array_summary(node) if isinstance(node, Array) else group_summary(node)


def codec_names(codecs: list[Any]) -> str:
    names = []
    for c in codecs:
        name = c.get("name") or c.get("id") or "?"
        inner = (c.get("configuration") or {}).get("codecs")
        names.append(f"{name}[{codec_names(inner)}]" if inner else name)
    return ", ".join(names) or "none"


# -- HTML ---------------------------------------------------------------------------------------

_STYLE = ("<style>.zk table{border-collapse:collapse;font-size:12px}"
          ".zk th{text-align:left;padding:1px 10px 1px 0;font-weight:600}"
          ".zk td{padding:1px 0;font-family:monospace}"
          ".zk ul{list-style:none;margin:0;padding-left:1.2em;font-family:monospace}</style>")


def _rows(a: Array) -> list[tuple[str, str]]:
    s = array_summary(a)
    ratio = s["compression_ratio"]
    rows = [("Shape", str(a.shape)), ("Data type", s["dtype"]),
            ("Chunks", str(a.chunks))]
    if a.shards:
        rows.append(("Shards", str(a.shards)))
    if a.dimension_names:
        rows.append(("Dimensions", ", ".join(str(n) for n in a.dimension_names)))
    rows += [("Codecs", codec_names(s["codecs"])), ("Fill value", str(s["fill_value"])),
             ("Size", human_bytes(s["nbytes"])),
             ("Stored", f"{human_bytes(s['nbytes_stored'])}"
                        + (f" (ratio {ratio:.1f})" if ratio else "")),
             ("Chunks stored", _fraction(s["chunks_stored"], s["chunks_total"]))]
    if s["shards_total"] is not None:
        rows.append(("Shards stored", _fraction(s["shards_stored"], s["shards_total"])))
    rows += [("Zarr format", str(a.zarr_format)), ("Location", s["location"])]
    return rows


def _fraction(stored: int | None, total: int) -> str:
    return f"{'?' if stored is None else stored}/{total}"


def array_html(a: Array) -> str:
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                   for k, v in _rows(a))
    title = html.escape(f"zarrkit.Array {a.name}")
    return f"{_STYLE}<div class='zk'><b>{title}</b><table>{body}</table></div>"


def _tree_html(g: Group, depth: int,
               listed: dict[str, list[tuple[str, Array | Group]]] | None = None) -> str:
    if listed is None:  # every level read at once (remote stores: no round trips per group)
        listed = listed_below(g, depth, first=HTML_MEMBERS)
    items = []
    members = listed[g.path]
    for name, node in members[:HTML_MEMBERS]:
        label = html.escape(name)
        if isinstance(node, Array):
            items.append(f"<li>📄 <b>{label}</b> {node.shape} {node.dtype}</li>")
        elif depth > 0:
            items.append(f"<li>📁 <b>{label}</b>{_tree_html(node, depth - 1, listed)}</li>")
        else:
            items.append(f"<li>📁 <b>{label}</b> …</li>")
    if len(members) > HTML_MEMBERS:
        items.append(f"<li>… and {len(members) - HTML_MEMBERS} more</li>")
    return f"<ul>{''.join(items)}</ul>"


def group_html(g: Group, depth: int = 3) -> str:
    title = html.escape(f"zarrkit.Group {g.name} (Zarr v{g.zarr_format}, {location(g)})")
    try:
        tree = _tree_html(g, depth)
    except NotSupportedError:
        tree = "<i>members cannot be listed in this store</i>"
    return f"{_STYLE}<div class='zk'><b>{title}</b>{tree}</div>"

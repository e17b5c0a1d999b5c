"""The `zarrkit` command line: demo, info, tree, copy, convert, verify, clean (each with --json)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np

from . import api
from .array import Array
from .cli_convert import add_convert_command
from .cli_tools import (
    add_clean_command,
    add_copy_command,
    add_storage_options,
    add_verify_command,
    open_node_arg,
    storage_options,
)
from .describe import summary
from .errors import ZarrkitError
from .group import Group, finished_node, listed_below


def _demo(args: argparse.Namespace) -> int:
    where = args.path
    shape, shards, chunks = (4096, 4096), (1024, 1024), (256, 256)
    y, x = np.mgrid[0:shape[0], 0:shape[1]].astype(np.float32)
    data = (1000 + 500 * np.sin(x / 300) * np.cos(y / 200)).astype(np.uint16)
    if not args.json:
        print(f"creating a sharded, blosc-compressed {shape} uint16 array at {where}")
    a = api.create(where, shape, "uint16", chunks=chunks, shards=shards, overwrite=True,
                   compressors=[{"name": "blosc", "configuration": {
                       "cname": "lz4", "clevel": 5, "shuffle": "shuffle"}}],
                   dimension_names=["y", "x"], attributes={"description": "zarrkit demo"})
    t0 = time.perf_counter()
    a[...] = data
    a = finished_node(a, where)  # a zip archive is written when its store is closed
    t1 = time.perf_counter()
    region = api.open(where, mode="r")[1000:1300, 2000:2300]
    t2 = time.perf_counter()
    if not np.array_equal(region, data[1000:1300, 2000:2300]):
        print("error: the region read back differs from what was written", file=sys.stderr)
        return 1
    mb = data.nbytes / 1e6
    if args.json:
        print(json.dumps({"write_mb_per_s": round(mb / (t1 - t0), 1),
                          "read_region_ms": round((t2 - t1) * 1e3, 2), "values_match": True,
                          "array": summary(a)}, indent=2))
        return 0
    print(f"wrote {mb:.0f} MB in {t1 - t0:.2f} s ({mb / (t1 - t0):.0f} MB/s); "
          f"read back region [1000:1300, 2000:2300] in {(t2 - t1) * 1e3:.1f} ms: values match")
    print()
    print(a.info_complete())
    return 0


def _spelled(obj: Any) -> Any:
    """`obj` with NaN and the infinities as the strings the v2 and v3 documents spell them
    with (a v1 document holds them bare): --json prints strict JSON."""
    if isinstance(obj, float) and not np.isfinite(obj):
        return "NaN" if np.isnan(obj) else "Infinity" if obj > 0 else "-Infinity"
    if isinstance(obj, dict):
        return {k: _spelled(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_spelled(v) for v in obj]
    return obj


def _info(args: argparse.Namespace) -> int:
    node = open_node_arg(args.path, storage_options(args.storage_options))
    if args.json:
        print(json.dumps(_spelled({"info": summary(node), "metadata": node.metadata}),
                         indent=2, allow_nan=False))
    elif isinstance(node, Array):
        print(node.info_complete())  # an explicit request: worth the store reads
    else:
        s = summary(node)
        rows = [("Type", "Group"), ("Zarr format", str(s["zarr_format"])), ("Name", s["name"]),
                ("Location", s["location"]),
                ("Arrays", f"{len(s['arrays'])}: {', '.join(s['arrays'])}".rstrip(": ")),
                ("Groups", f"{len(s['groups'])}: {', '.join(s['groups'])}".rstrip(": ")),
                ("Attributes", str(len(s["attributes"])))]
        print("\n".join(f"{k:<11} : {v}" for k, v in rows))
    return 0


def _tree_json(node: Array | Group, listed: dict[str, Any] | None = None) -> dict[str, Any]:
    if isinstance(node, Array):
        return {"type": "array", "shape": list(node.shape), "dtype": str(node.dtype)}
    if listed is None:  # the whole hierarchy listed level by level, not group by group
        listed = listed_below(node, None)
    return {"type": "group",
            "members": {k: _tree_json(v, listed) for k, v in listed[node.path]}}


def _tree(args: argparse.Namespace) -> int:
    node = open_node_arg(args.path, storage_options(args.storage_options))
    if args.json:
        print(json.dumps(_tree_json(node), indent=2))
    elif isinstance(node, Group):
        print(node.tree())
    else:
        print(f"{node.name} {node.shape} {node.dtype}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zarrkit", description="Zarr arrays from the shell")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="write and read a sharded, compressed array")
    p.add_argument("path", nargs="?", default="zarrkit-demo.zarr")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_demo)
    for name, func, text in (("info", _info, "describe an array or group"),
                             ("tree", _tree, "show a hierarchy")):
        p = sub.add_parser(name, help=text)
        p.add_argument("path")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        add_storage_options(p)
        p.set_defaults(func=func)
    add_convert_command(sub)
    add_copy_command(sub)
    add_verify_command(sub)
    add_clean_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ZarrkitError as e:
        print(f"zarrkit: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`zarrkit tree x | head`): no traceback
        # Python flushes stdout again at exit, which would fail (and print) once more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what shells report for a command killed by it
    except KeyboardInterrupt:
        print("zarrkit: interrupted", file=sys.stderr)
        return 130  # 128 + SIGINT


if __name__ == "__main__":
    sys.exit(main())

"""The `copy`, `verify` and `clean` subcommands, and what the command line shares with them.

`copy` is `zarrkit.convert` keeping the source's format (and, unless told otherwise, its
chunking), with a progress line showing throughput. `verify` reads every stored chunk (or
shard) back, decodes it (each inner chunk of a shard on its own, which checks their crc32c
checksums) and reports the damaged keys (and inner chunks). `clean`
deletes the temp files that killed writers left in a local directory, and finishes or undoes
the node replacements they left part-way (docs/concurrency.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import api, storage
from .array import Array
from .engine.executor import run_all
from .errors import CorruptDataError, NodeNotFoundError, SpecError, ZarrkitError
from .group import Group, finished_node
from .info import human_bytes
from .kvstore import open_kvstore
from .kvstore.file import FileStore
from .progress import ProgressBar

#: Chunks fetched per batch while verifying: enough requests in flight for remote stores.
VERIFY_BATCH = 64


def storage_options(text: str | None) -> dict[str, Any] | None:
    """`--storage-options` is JSON: '{"anon": true}' or '{"endpoint_url": "http://..."}'."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError as e:
        raise SpecError(f"--storage-options: not valid JSON: {e}") from None
    if not isinstance(value, dict):
        raise SpecError("--storage-options must be a JSON object")
    return value


def add_storage_options(p: argparse.ArgumentParser, flag: str = "--storage-options") -> None:
    p.add_argument(flag, metavar="JSON",
                   help="remote store options as JSON, e.g. '{\"anon\": true}' or "
                        "'{\"endpoint_url\": \"http://localhost:9000\"}'")


def open_node_arg(path: str, options: dict[str, Any] | None) -> Array | Group:
    try:
        return api.open(path, mode="r", storage_options=options)
    except NodeNotFoundError as e:  # the store's message names the key, not what was typed
        raise NodeNotFoundError(f"{path!r}: {e}") from None


class Throughput:
    """A progress callback that adds MB/s (estimated from the share of units done)."""

    def __init__(self, total_bytes: int, quiet: bool, stream: Any = None) -> None:
        self.total_bytes = total_bytes
        self.start = time.monotonic()
        self.bar = None if quiet else ProgressBar(stream)

    def rate(self, done_bytes: float) -> float:
        return done_bytes / max(time.monotonic() - self.start, 1e-9) / 1e6

    def __call__(self, done: int, total: int, label: str) -> None:
        if self.bar is not None:
            moved = self.total_bytes * done / total if total else 0
            self.bar(done, total, f"{label} {self.rate(moved):7.1f} MB/s")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# -- copy ---------------------------------------------------------------------------------------

def _shape(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        return tuple(int(p) for p in text.split(","))
    except ValueError:
        raise SpecError(f"expected a shape like 64,64, got {text!r}") from None


def _target(where: str, options: dict[str, Any] | None) -> Any:
    """What `convert` gets as its destination: the opened store when options are needed."""
    if not options:
        return where
    store, path = open_kvstore(where, storage_options=options)
    if path:
        raise SpecError(f"--dst-storage-options cannot be used with {where!r}")
    return store


def _arrays(node: Array | Group) -> Iterator[Array]:
    if isinstance(node, Array):
        yield node
        return
    for _, child in node.members():
        yield from _arrays(child)


def _default_format(source: Array | Group) -> int:
    """The source's format; v2 for v1, which is read only here (v2 stores v1's chunks as they
    are, as zarr-python's migration from v1 did)."""
    return 2 if source.zarr_format == 1 else source.zarr_format


def _copy(args: argparse.Namespace) -> int:
    from .cli_convert import parse_codecs
    from .conversion import convert  # not `.convert`: that name is the function

    src_options = storage_options(args.storage_options)
    dst_options = storage_options(args.dst_storage_options)
    source = open_node_arg(args.src, src_options)
    total = sum(a.nbytes for a in _arrays(source))
    progress = Throughput(total, args.quiet or args.json)
    start = time.monotonic()
    try:
        node = convert(source.store if src_options else args.src,
                       _target(args.dst, dst_options),
                       zarr_format=args.zarr_format or _default_format(source),
                       chunks=_shape(args.chunks), shards=_shape(args.shards),
                       codecs=parse_codecs(args.codecs),
                       overwrite=args.overwrite, progress=progress)
        if dst_options:  # convert got a store opened here: finish it (a zip archive)
            node = finished_node(node, args.dst, storage_options=dst_options)
    finally:
        progress.close()
        source.store.close()  # opened here (read-only): a zip archive's descriptor
    seconds = time.monotonic() - start
    result = {"source": args.src, "destination": args.dst, "zarr_format": node.zarr_format,
              "arrays": sum(1 for _ in _arrays(node)), "bytes": total,
              "seconds": round(seconds, 3), "mb_per_s": round(total / max(seconds, 1e-9) / 1e6, 1)}
    if args.json:
        print(json.dumps(result, indent=2))
    elif not args.quiet:
        print(f"copied {result['arrays']} array(s), {human_bytes(total)} in {seconds:.2f} s "
              f"({result['mb_per_s']} MB/s) to {args.dst} (Zarr v{node.zarr_format})")
    return 0


def add_copy_command(sub: Any) -> None:
    p = sub.add_parser("copy", help="copy an array or hierarchy between stores (and formats), "
                                    "optionally rechunking or resharding")
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--zarr-format", type=int, choices=(2, 3),
                   help="format of the copy (default: the source's; 2 for v1)")
    p.add_argument("--chunks", help="new chunk shape for every array, e.g. 64,64")
    p.add_argument("--shards", help="new shard shape for every array (v3), e.g. 1024,1024")
    p.add_argument("--codecs", help="v3 codec list as JSON (the inner codecs when sharded)")
    p.add_argument("--overwrite", action="store_true", help="replace what exists at DST")
    p.add_argument("--quiet", action="store_true", help="no progress line or summary")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    add_storage_options(p)
    add_storage_options(p, "--dst-storage-options")
    p.set_defaults(func=_copy)


# -- verify -------------------------------------------------------------------------------------

@dataclass
class ArrayCheck:
    """What `verify` found in one array. `chunks_*` count the stored objects: the chunks, or
    for a sharded array the shards (`unit` says which; `shards_*` repeat them under their
    name), whose stored inner chunks `inner_chunks_*` count."""

    name: str
    chunks_total: int = 0
    chunks_checked: int = 0
    chunks_missing: int = 0
    bytes_read: int = 0
    damaged: list[dict[str, Any]] = field(default_factory=list)
    sharded: bool = False
    inner_chunks_total: int = 0
    inner_chunks_checked: int = 0
    inner_chunks_missing: int = 0

    def to_json(self) -> dict[str, Any]:
        out = {"name": self.name, "chunks_total": self.chunks_total,
               "chunks_checked": self.chunks_checked, "chunks_missing": self.chunks_missing,
               "bytes_read": self.bytes_read, "damaged": self.damaged,
               "unit": "shard" if self.sharded else "chunk"}
        if self.sharded:
            out.update(shards_total=self.chunks_total, shards_checked=self.chunks_checked,
                       shards_missing=self.chunks_missing,
                       inner_chunks_total=self.inner_chunks_total,
                       inner_chunks_checked=self.inner_chunks_checked,
                       inner_chunks_missing=self.inner_chunks_missing)
        return out


def _decode_problem(chain: Any, data: Any, shape: tuple[int, ...]) -> str | None:
    try:
        decoded = chain.decode(data)
    except (ZarrkitError, ValueError, RuntimeError, OverflowError) as e:
        return f"{type(e).__name__}: {e}"
    if tuple(np.shape(decoded)) != tuple(shape):
        return f"decoded shape {np.shape(decoded)} is not the chunk shape {shape}"
    return None


def _fetch(store: Any, keys: list[str]) -> tuple[list[Any], dict[str, str]]:
    """The values of `keys`, and the problems of those the store itself finds damaged (a zip
    entry failing its CRC-32): reported like undecodable chunks, not an end to the check."""
    try:
        return store.get_many([(k, None) for k in keys]), {}
    except CorruptDataError:
        pass  # one key at a time, to find which
    values, unreadable = [], {}
    for key in keys:
        try:
            values.append(store.get(key))
        except CorruptDataError as e:
            values.append(None)
            unreadable[key] = f"{type(e).__name__}: {e}"
    return values, unreadable


def verify_array(a: Array, step: Callable[[int, int], None]) -> ArrayCheck:
    """Read and decode every chunk of `a` (every inner chunk of every shard, one by one, so
    that each damaged one is named); `step(objects, bytes)` reports progress."""
    engine = a._engine  # the grid, key function and codec chain, whatever the format
    grid = [range(-(-s // c)) for s, c in zip(a.shape, engine.chunk_shape, strict=True)]
    coords = list(np.ndindex(*[len(r) for r in grid]))
    sharding = _sharding_of(engine.chain)
    check = ArrayCheck(a.name, chunks_total=len(coords), sharded=sharding is not None)
    for i in range(0, len(coords), VERIFY_BATCH):
        batch = coords[i:i + VERIFY_BATCH]
        keys = [engine.key(c) for c in batch]
        values, unreadable = _fetch(engine.store, keys)
        present = [(c, k, v) for c, k, v in zip(batch, keys, values, strict=True)
                   if v is not None]
        check.chunks_missing += len(keys) - len(present) - len(unreadable)
        check.chunks_checked += len(present) + len(unreadable)
        read = sum(len(memoryview(v).cast("B")) for _, _, v in present)
        check.bytes_read += read
        check.damaged += [{"key": k, "error": p} for k, p in unreadable.items()]
        if sharding is None:
            problems = run_all(lambda ckv: _decode_problem(engine.chain, ckv[2],
                                                           engine.chunk_shape), present)
            check.damaged += [{"key": k, "error": p} for (_, k, _), p in zip(
                present, problems, strict=True) if p]
        else:
            _check_shards(a, sharding, batch, keys, values, unreadable, check)
        step(len(keys), read)
    return check


def _sharding_of(chain: Any) -> Any:
    """The sharding codec of a chain whose array->bytes codec is one, else None."""
    codec = chain.array_bytes
    return codec if hasattr(codec, "stored_chunks") else None


def _check_shards(a: Array, sharding: Any, batch: list[tuple[int, ...]], keys: list[str],
                  values: list[Any], unreadable: dict[str, str], check: ArrayCheck) -> None:
    """Decode each stored inner chunk of the fetched shards on its own (crc32c checked there)
    and count the inner chunks inside the array that are stored or not."""
    todo = []
    for shard, key, value in zip(batch, keys, values, strict=True):
        limits = _inner_extent(a, shard, sharding)
        check.inner_chunks_total += math.prod(limits)
        if value is None:
            if key not in unreadable:  # a shard not stored: its inner chunks read as fill
                check.inner_chunks_missing += math.prod(limits)
            continue
        todo.append((key, value, limits))
    results = run_all(lambda t: _shard_problems(a._engine.chain, sharding, t[1]), todo)
    for (key, _, limits), (stored, problems) in zip(todo, results, strict=True):
        if stored is not None:
            inside = sum(1 for c in stored if all(i < n for i, n in zip(c, limits,
                                                                        strict=True)))
            check.inner_chunks_checked += len(stored)
            check.inner_chunks_missing += math.prod(limits) - inside
        check.damaged += [{"key": key, "error": p} if c is None else
                          {"key": key, "inner_chunk": list(c), "error": p}
                          for c, p in problems]


def _inner_extent(a: Array, shard: tuple[int, ...], sharding: Any) -> list[int]:
    """How many inner chunks of the shard at grid position `shard` lie inside the array, per
    dimension of the sharding codec's space (which transpose codecs before it permute)."""
    engine = a._engine
    extent = [min(c, n - s * c) for s, c, n in zip(shard, engine.chunk_shape, a.shape,
                                                     strict=True)]
    for codec in engine.chain.array_array:
        order = getattr(codec, "order", None)  # a transpose's
        if order is not None:
            order = {"C": range(len(extent)), "F": range(len(extent))[::-1]}.get(order, order)
            extent = [extent[o] for o in order]
    return [-(-e // c) for e, c in zip(extent, sharding.inner.spec.shape, strict=True)]


def _shard_problems(chain: Any, sharding: Any, data: Any
                    ) -> tuple[list[tuple[int, ...]] | None, list[tuple[Any, str]]]:
    """The positions of the inner chunks a shard stores (None if its index is unreadable),
    and its problems: (None, error) for the whole shard, (position, error) per inner chunk."""
    try:
        # Undo bytes->bytes codecs over the whole shard first (none, as usually written).
        entries = sharding.stored_chunks(chain._decode_bytes(data, None))
    except (ZarrkitError, ValueError, RuntimeError, OverflowError) as e:
        return None, [(None, f"{type(e).__name__}: {e}")]
    shape = sharding.inner.spec.shape
    problems = [(c, p) for c, chunk in entries
                if (p := _decode_problem(sharding.inner, chunk, shape)) is not None]
    return [c for c, _ in entries], problems


def _walk_checked(node: Array | Group, broken: list[dict[str, str]]) -> Iterator[Array]:
    """Every array below `node`; members whose metadata cannot be read go to `broken`."""
    if isinstance(node, Array):
        yield node
        return
    for name in node.keys():
        try:
            child = node[name]
        except ZarrkitError as e:
            broken.append({"key": f"{node.path + '/' if node.path else ''}{name}",
                           "error": f"{type(e).__name__}: {e}"})
            continue
        yield from _walk_checked(child, broken)


def verify(node: Array | Group, progress: Any = None) -> dict[str, Any]:
    """Check every chunk below `node`; returns the report `zarrkit verify --json` prints."""
    broken: list[dict[str, str]] = []
    arrays = list(_walk_checked(node, broken))
    total = sum(math.prod(-(-s // c) for s, c in zip(a.shape, a._engine.chunk_shape,
                                                     strict=True)) for a in arrays)
    done, nbytes, start = 0, 0, time.monotonic()
    checks = []
    for a in arrays:
        def step(units: int, read: int, name: str = a.name) -> None:
            nonlocal done, nbytes
            done, nbytes = done + units, nbytes + read
            if progress is not None:
                rate = nbytes / max(time.monotonic() - start, 1e-9) / 1e6
                progress(done, total, f"verify {name} {rate:7.1f} MB/s")
        checks.append(verify_array(a, step))
    damaged = broken + [d for c in checks for d in c.damaged]
    return {"ok": not damaged, "arrays": [c.to_json() for c in checks],
            "damaged": damaged, "metadata_errors": broken,
            "chunks_checked": sum(c.chunks_checked for c in checks),
            "shards_checked": sum(c.chunks_checked for c in checks if c.sharded),
            "inner_chunks_checked": sum(c.inner_chunks_checked for c in checks),
            "bytes_read": nbytes, "seconds": round(time.monotonic() - start, 3)}


def _print_report(report: dict[str, Any], stream: Any = None) -> None:
    stream = stream or sys.stdout  # looked up now: tests and callers may have replaced it
    for a in report["arrays"]:
        state = "ok" if not a["damaged"] else f"{len(a['damaged'])} damaged"
        if a.get("unit") == "shard":
            counts = (f"{a['shards_checked']} shards checked ({a['inner_chunks_checked']} inner "
                      f"chunks; {a['inner_chunks_missing']} not stored), "
                      f"{a['shards_missing']} shards not stored (fill value)")
        else:
            counts = (f"{a['chunks_checked']} chunks checked, {a['chunks_missing']} not stored "
                      "(fill value)")
        print(f"{a['name']}: {counts}, {human_bytes(a['bytes_read'])} read: {state}",
              file=stream)
    for d in report["damaged"]:
        inner = f" inner chunk {tuple(d['inner_chunk'])}" if "inner_chunk" in d else ""
        print(f"DAMAGED {d['key']}{inner}: {d['error']}", file=stream)
    verdict = "OK" if report["ok"] else f"{len(report['damaged'])} damaged key(s)"
    shards = report.get("shards_checked", 0)
    counted = f"{report['chunks_checked']} chunks" if not shards else (
        f"{report['chunks_checked'] - shards} chunks, {shards} shards "
        f"({report['inner_chunks_checked']} inner chunks)")
    print(f"{verdict}: {counted}, {human_bytes(report['bytes_read'])} "
          f"in {report['seconds']:.2f} s", file=stream)


def _verify(args: argparse.Namespace) -> int:
    node = open_node_arg(args.path, storage_options(args.storage_options))
    bar = None if (args.quiet or args.json) else ProgressBar()
    try:
        report = verify(node, bar)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(json.dumps(report, indent=2))
    elif not args.quiet or not report["ok"]:
        _print_report(report)
    return 0 if report["ok"] else 1


def add_verify_command(sub: Any) -> None:
    p = sub.add_parser("verify", help="read every chunk, check checksums, report damaged keys "
                                      "(exit status 1 if any)")
    p.add_argument("path")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument("--quiet", action="store_true", help="print only problems")
    add_storage_options(p)
    p.set_defaults(func=_verify)


def _clean(args: argparse.Namespace) -> int:
    store, path = open_kvstore(args.path)
    if not isinstance(store, FileStore):
        raise SpecError(f"clean: {args.path!r} is not a local directory (only file stores write "
                        "temp files beside their keys)")
    root = os.path.join(store.root, path)
    if not os.path.isdir(root):
        raise NodeNotFoundError(f"clean: no directory at {args.path!r}")
    store = FileStore(root)
    removed = store.remove_temp_files(args.older_than)
    replacements = _finish_stale_replacements(store, args.older_than)
    removed += replacements["removed"]
    if args.json:
        print(json.dumps({"removed": removed, "moved_in": replacements["moved in"],
                          "older_than": args.older_than}, indent=2))
        return 0
    print(f"removed {len(removed)} leftover(s) of unfinished writes (temp files older than "
          f"{args.older_than:g} s, lock files no one holds)")
    for name in removed:
        print(f"  {name}")
    for name in replacements["moved in"]:
        print(f"moved in the finished replacement of {name}")
    return 0


def _finish_stale_replacements(store: FileStore, older_than: float) -> dict[str, list[str]]:
    """Complete or clear away the replacements writers were killed in (`storage.is_transient`
    names: a staging node, the node it replaces moved aside) once nothing in them changed for
    `older_than` seconds (`storage.finish_replacement`); the paths of the nodes moved in, and
    of the transient nodes removed, relative to the store's root ("/"-terminated)."""
    cutoff, done = time.time() - older_than, {"moved in": [], "removed": []}
    for top, dirs, _ in os.walk(store.root):
        transient = [d for d in dirs if storage.is_transient(d)]
        for name in transient:
            dirs.remove(name)
        rel = os.path.relpath(top, store.root)
        parent = "" if rel == "." else rel.replace(os.sep, "/")
        for token, target in sorted({storage.transient_parts(d) for d in transient}):
            mine = [d for d in transient if storage.transient_parts(d) == (token, target)]
            if max(_newest_change(os.path.join(top, d)) for d in mine) >= cutoff:
                continue
            outcome = storage.finish_replacement(store, parent, token, target)
            moved = {"moved in": storage.STAGING, "restored": storage.REPLACED}.get(outcome)
            if moved:
                member = "" if target == storage.ROOT else target  # (the root: "/")
                done["moved in"].append(storage.join(parent, member) + "/")
            done["removed"] += [storage.join(parent, d) + "/" for d in mine
                                if not os.path.isdir(os.path.join(top, d))
                                and not (moved and d.startswith(moved))]
    return {k: sorted(v) for k, v in done.items()}


def _newest_change(path: str) -> float:
    newest = os.lstat(path).st_mtime
    for top, dirs, files in os.walk(path):
        for name in dirs + files:
            newest = max(newest, os.lstat(os.path.join(top, name)).st_mtime)
    return newest


def add_clean_command(sub: Any) -> None:
    p = sub.add_parser("clean", help="delete the temp files (and groups' lock files) writers "
                                     "killed mid-write left in a local directory, and finish "
                                     "or clear their replacements")
    p.add_argument("path")
    p.add_argument("--older-than", type=float, default=3600.0, metavar="SECONDS",
                   help="only files last modified this long ago: a younger one may belong to "
                        "a write in progress (default: 3600)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_clean)

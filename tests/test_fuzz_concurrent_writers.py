"""Seeded fuzzer of concurrent writers, checking the data-safety promises of docs/concurrency.md.

Each seed makes a random array (v3 unsharded, sharded with the index at either end, nested
sharding, or v2; random chunk and shard shapes, codecs, fill value, write_empty_chunks), fills
part of it, then runs 2-6 writers at once: threads sharing one handle, threads with their own
handle, and processes (multiprocessing, forkserver or spawn). Writers get DISJOINT random element
sets (boxes crossing chunk and shard boundaries, partial chunks, strided slices, oindex and
vindex points, writes of the fill value that may delete chunks), some also update attributes
(distinct keys), and one may grow the array (`resize` or `append`). Reader threads run alongside
and must only ever see, per element, the old value or one written there. Afterwards the array
must equal a numpy model of the same writes, keep every attribute, store no all-fill object when
write_empty_chunks is off, pass `verify` (every shard index sound) and leave no temp file.

Run with `-s` for the per-category counts.
"""

from __future__ import annotations

import multiprocessing
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import zarrkit
from zarrkit.cli_tools import verify
from zarrkit.kvstore.file import FileStore
from zarrkit.kvstore.memory import MemoryStore

COUNTS: Counter[str] = Counter()
FILE_SEEDS = range(40)
MEMORY_SEEDS = range(100, 110)
S3_SEEDS = range(200, 203)

_FORKSERVER = multiprocessing.get_context("forkserver")
# Children fork from a server that has imported these already: a writer starts in milliseconds.
_FORKSERVER.set_forkserver_preload(["numpy", "zarrkit", "test_fuzz_concurrent_writers"])
_SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture(scope="module", autouse=True)
def _summary():
    yield
    print("\nconcurrent-writer fuzz: " + ", ".join(f"{k}={v}" for k, v in sorted(COUNTS.items())))


# -- the generated case ------------------------------------------------------------------------
@dataclass
class Op:
    kind: str  # box, strided, oindex, vindex
    sel: Any  # a numpy index into the array (for oindex: a tuple of index lists)
    values: np.ndarray
    fill: bool = False


@dataclass
class Writer:
    kind: str  # thread (the shared handle), handle (its own, in a thread), process
    ops: list[Op] = field(default_factory=list)
    attrs: list[str] = field(default_factory=list)
    # (ops made before, "resize", shape) or (ops made before, "append", data), in order
    grows: list[tuple[int, str, Any]] = field(default_factory=list)


@dataclass
class Case:
    seed: int
    create: dict[str, Any]
    layout: str
    shape: tuple[int, ...]
    unit: tuple[int, ...]  # what one store key holds: a chunk or an outer shard
    fill: Any
    initial: np.ndarray
    writers: list[Writer]
    readers: int
    context: str


def _blosc(dtype: np.dtype) -> dict[str, Any]:
    return {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 1, "shuffle": "shuffle",
                                               "typesize": dtype.itemsize, "blocksize": 0}}


def _v3_codecs(r: random.Random, dtype: np.dtype) -> list[dict[str, Any]] | None:
    return r.choice([None, [_blosc(dtype)], [{"name": "zstd", "configuration": {"level": 1}}],
                     [{"name": "crc32c"}],
                     [{"name": "zstd", "configuration": {"level": 1}}, {"name": "crc32c"}]])


def _sharding(chunk, codecs, location="end") -> dict[str, Any]:
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(chunk), "codecs": codecs, "index_location": location,
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                         {"name": "crc32c"}]}}


def _multiple(r: random.Random, base: tuple[int, ...], most: int) -> tuple[int, ...]:
    return tuple(b * r.randint(1, most) for b in base)


def _layout(r: random.Random, shape, dtype) -> tuple[str, dict[str, Any], tuple[int, ...]]:
    """(name, create keywords, shape of one store key's region)."""
    chunk = tuple(r.randint(1, max(1, s // 2)) for s in shape)
    layout = r.choice(["v3", "sharded", "sharded", "sharded_start", "nested", "v2"])
    if layout == "v2":
        comp = r.choice([None, [{"id": "blosc", "cname": "lz4", "clevel": 1}], [{"id": "zstd"}],
                         [{"id": "crc32c"}]])
        return layout, dict(zarr_format=2, chunks=chunk, compressors=comp), chunk
    if layout == "v3":
        return layout, dict(chunks=chunk, compressors=_v3_codecs(r, dtype)), chunk
    shard = _multiple(r, chunk, 3)
    if layout != "nested":
        return layout, dict(chunks=chunk, shards=shard, compressors=_v3_codecs(r, dtype),
                            index_location="start" if layout == "sharded_start" else "end"), shard
    inner_codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    inner_codecs += _v3_codecs(r, dtype) or []
    outer = _multiple(r, shard, 2)
    codecs = [_sharding(shard, [_sharding(chunk, inner_codecs, r.choice(["start", "end"]))],
                        r.choice(["start", "end"]))]
    return layout, dict(chunks=outer, codecs=codecs), outer


def _selection(r: random.Random, shape, unit) -> tuple[str, Any]:
    kind = r.choice(["box", "box", "partial", "whole", "strided", "oindex", "vindex"])
    if kind == "whole":  # whole store keys, no read-modify-write; often the last ones, which
        # an append or resize grows into
        sel = []
        for s, u in zip(shape, unit, strict=True):
            n = -(-s // u)
            a = n - 1 if r.random() < 0.5 else r.randrange(n)
            sel.append(slice(a * u, min(s, (a + r.randint(1, 2)) * u)))
        return kind, tuple(sel)
    if kind == "partial":  # inside one store key: a read-modify-write of it
        origin = [r.randrange(0, s, u) for s, u in zip(shape, unit, strict=True)]
        ends = [min(o + u, s) for o, u, s in zip(origin, unit, shape, strict=True)]
        starts = [r.randrange(o, e) for o, e in zip(origin, ends, strict=True)]
        return kind, tuple(slice(a, r.randint(a + 1, e)) for a, e in zip(starts, ends, strict=True))
    if kind in ("box", "strided"):
        sel = []
        for s in shape:
            a = r.randrange(s)
            b = r.randint(a + 1, min(s, a + max(2, s // 2)))
            sel.append(slice(a, b, r.randint(2, 3) if kind == "strided" else None))
        return kind, tuple(sel)
    if kind == "oindex":
        return kind, tuple(sorted(r.sample(range(s), r.randint(1, min(s, 4)))) for s in shape)
    n = r.randint(1, 8)
    points = {tuple(r.randrange(s) for s in shape) for _ in range(n)}
    return kind, tuple(np.array(c) for c in zip(*sorted(points), strict=True))


def _mask(shape, kind: str, sel) -> np.ndarray:
    m = np.zeros(shape, bool)
    m[np.ix_(*sel) if kind == "oindex" else sel] = True
    return m


def _values(r: random.Random, rng, shape, dtype, fill) -> tuple[np.ndarray, bool]:
    if r.random() < 0.2:  # the fill value: may make a chunk empty, to be deleted
        return np.full(shape, fill, dtype), True
    return rng.integers(1000, 30000, shape).astype(dtype), False


def _writers(r: random.Random, rng, shape, unit, dtype, fill, processes: bool) -> list[Writer]:
    kinds = ["thread", "handle"] + (["process"] if processes else [])
    writers = [Writer(r.choice(kinds)) for _ in range(r.randint(2, 6))]
    owner = np.full(shape, -1)
    for w, writer in enumerate(writers):
        for _ in range(r.randint(1, 5)):
            for _ in range(30):  # rejection sampling: another writer's elements are off limits
                kind, sel = _selection(r, shape, unit)
                m = _mask(shape, kind, sel)
                if not (m & (owner != -1) & (owner != w)).any():
                    break
            else:
                continue
            owner[m] = w
            target = np.zeros(shape)[np.ix_(*sel) if kind == "oindex" else sel].shape
            values, is_fill = _values(r, rng, target, dtype, fill)
            writer.ops.append(Op(kind, sel, values, is_fill))
        for op in r.sample(writer.ops, r.randint(0, len(writer.ops))):  # its own elements again
            values, is_fill = _values(r, rng, op.values.shape, dtype, fill)
            writer.ops.append(Op(op.kind, op.sel, values, is_fill))
        if r.random() < 0.4:
            writer.attrs = [f"w{w}_{k}" for k in range(r.randint(1, 4))]
    if r.random() < 0.5:
        _grows(r, rng, r.choice(writers), shape, dtype)
    return writers


def _grows(r: random.Random, rng, grower: Writer, shape, dtype) -> None:
    """1-3 resizes and appends that only grow the array, spread over the grower's ops."""
    at = sorted(r.randint(0, len(grower.ops)) for _ in range(r.randint(1, 3)))
    for i in at:
        if r.random() < 0.5:
            shape = tuple(s + r.randint(0, 5) for s in shape)
            grower.grows.append((i, "resize", shape))
        else:
            rows = (r.randint(1, 6),) + tuple(shape[1:])
            shape = (shape[0] + rows[0],) + tuple(shape[1:])
            grower.grows.append((i, "append", rng.integers(1000, 30000, rows).astype(dtype)))


def make_case(seed: int, processes: bool = True) -> Case:
    r, rng = random.Random(seed), np.random.default_rng(seed)
    ndim = r.choice([1, 2, 2, 2, 3])
    top = {1: 60, 2: 24, 3: 9}[ndim]
    shape = tuple(r.randint(3, top) for _ in range(ndim))
    dtype = np.dtype(r.choice(["uint16", "int32", "float32", "float64"]))
    fill = r.choice([0, 3, 42])
    layout, create, unit = _layout(r, shape, dtype)
    create.update(dtype=dtype.str, fill_value=fill, write_empty_chunks=r.random() < 0.5,
                  attributes={"init": seed})
    initial = np.full(shape, fill, dtype)
    for _ in range(r.randint(0, 3)):  # old values some writes partly overwrite
        _, sel = _selection(r, shape, unit)
        if not isinstance(sel[0], slice):
            continue
        initial[sel] = rng.integers(100, 1000, initial[sel].shape)
    writers = _writers(r, rng, shape, unit, dtype, fill, processes)
    context = "spawn" if r.random() < 0.05 else "forkserver"
    return Case(seed, create, layout, shape, unit, fill, initial, writers, r.randint(0, 2),
                context)


# -- running it ----------------------------------------------------------------------------------
def _apply(a, op: Op) -> None:
    if op.kind == "oindex":
        a.oindex[op.sel] = op.values
    elif op.kind == "vindex":
        a.vindex[op.sel] = op.values
    else:
        a[op.sel] = op.values


def run_writer(a, writer: Writer) -> None:
    """A writer's ops in order, its attribute updates and growths interleaved."""
    names = list(writer.attrs)
    for i, op in enumerate(writer.ops + [None]):
        for _, how, arg in (g for g in writer.grows if g[0] == i):
            a.resize(arg) if how == "resize" else a.append(arg)
        if names:
            name = names.pop()
            if len(name) % 2:
                a.attrs[name] = name
            else:
                a.attrs.update({name: name})
        if op is not None:
            _apply(a, op)
    for name in names:
        a.attrs[name] = name


def _sleep_until(start_at: float) -> None:
    time.sleep(max(0.0, start_at - time.time()))


def process_writer(where: str, options: dict | None, writer: Writer, start_at: float) -> None:
    a = zarrkit.open_array(where, mode="r+", storage_options=options)
    _sleep_until(start_at)
    run_writer(a, writer)


def _allowed(case: Case):
    """Checks a read of the initial region: each element old, or a value written there."""
    layers = []
    for writer in case.writers:
        for op in writer.ops:
            vals = np.zeros(case.shape, case.initial.dtype)
            vals[np.ix_(*op.sel) if op.kind == "oindex" else op.sel] = op.values
            layers.append((_mask(case.shape, op.kind, op.sel), vals))

    def bad(got: np.ndarray) -> int:
        ok = got == case.initial
        for m, vals in layers:
            ok |= m & (got == vals)
        return int((~ok).sum())
    return bad


def expected(case: Case) -> np.ndarray:
    model = case.initial.copy()
    grows = []
    for writer in case.writers:
        for op in writer.ops:
            model[np.ix_(*op.sel) if op.kind == "oindex" else op.sel] = op.values
        grows += writer.grows  # one writer at most grows: its order is the order they ran in
    for _, how, arg in grows:
        old = model.shape
        shape = arg if how == "resize" else (old[0] + len(arg),) + old[1:]
        model, grown = np.full(shape, case.fill, model.dtype), model
        model[tuple(slice(0, s) for s in old)] = grown
        if how == "append":
            model[old[0]:] = arg
    return model


class _Readers:
    def __init__(self, case: Case, open_handle) -> None:
        self.bad, self.reads, self.errors = _allowed(case), 0, []
        self.torn = 0
        self.done = threading.Event()
        region = tuple(slice(0, s) for s in case.shape)
        self.threads = [threading.Thread(target=self._loop, args=(open_handle(), region))
                        for _ in range(case.readers)]

    def _loop(self, a, region) -> None:
        try:
            while not self.done.is_set():
                self.torn += self.bad(a[region])
                self.reads += 1
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)


def run_case(case: Case, where: Any, options: dict | None = None) -> Any:
    """Creates the array at `where` (a path, URL or store), runs the writers and readers; the
    final handle."""
    a = zarrkit.create(where, shape=case.shape, storage_options=options, **case.create)
    a[...] = case.initial

    def open_handle():
        return zarrkit.open_array(where, mode="r+", storage_options=options)

    ctx = _SPAWN if case.context == "spawn" else _FORKSERVER
    start_at = time.time() + (2.0 if case.context == "spawn" else 0.3)
    errors: list[BaseException] = []

    def thread_writer(handle, writer: Writer) -> None:
        _sleep_until(start_at)
        try:
            run_writer(handle, writer)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    procs, threads = [], []
    for writer in case.writers:
        COUNTS[f"writer_{writer.kind}"] += 1
        if writer.kind == "process":
            procs.append(ctx.Process(target=process_writer, args=(where, options, writer,
                                                                   start_at)))
        else:
            handle = a if writer.kind == "thread" else open_handle()
            threads.append(threading.Thread(target=thread_writer, args=(handle, writer)))
    readers = _Readers(case, open_handle)
    for t in procs + threads + readers.threads:
        t.start()
    for t in procs + threads:
        t.join(120)
    readers.done.set()
    for t in readers.threads:
        t.join(60)
    assert not errors, errors
    assert [p.exitcode for p in procs] == [0] * len(procs), "a writer process failed"
    assert not readers.errors, readers.errors
    assert readers.torn == 0, f"readers saw {readers.torn} elements neither old nor written"
    COUNTS["reads"] += readers.reads
    return a


def check_final(case: Case, where: Any, options: dict | None = None) -> None:
    a = zarrkit.open_array(where, mode="r", storage_options=options)
    want = expected(case)
    got = a[...]
    assert got.shape == want.shape
    lost = int((got != want).sum())
    assert lost == 0, f"seed {case.seed}: {lost} elements differ from the model"
    keys = {"init"} | {k for w in case.writers for k in w.attrs}
    got_attrs = a.attrs.asdict()
    assert set(got_attrs) == keys, f"seed {case.seed}: attributes lost: {keys - set(got_attrs)}"
    assert all(got_attrs[k] == k for k in keys - {"init"}), got_attrs
    if not case.create["write_empty_chunks"]:
        assert a.nshards_initialized == _nonfill_units(want, case.unit, case.fill)
    if case.layout in ("sharded", "sharded_start", "nested"):
        report = verify(a)
        assert report["ok"], report["damaged"]
        COUNTS["shards_verified"] += report["shards_checked"]


def _nonfill_units(data: np.ndarray, unit, fill) -> int:
    """The store keys (chunks or outer shards) whose region holds a value other than `fill`."""
    grid = [-(-s // u) for s, u in zip(data.shape, unit, strict=True)]
    return sum(bool((data[tuple(slice(i * u, (i + 1) * u) for i, u in zip(at, unit, strict=True))]
                     != fill).any()) for at in np.ndindex(*grid))


def _count(case: Case, store: str) -> None:
    COUNTS[f"{store}_{case.layout}"] += 1
    COUNTS[f"write_empty_{case.create['write_empty_chunks']}"] += 1
    for w in case.writers:
        COUNTS["attr_updates"] += len(w.attrs)
        for _, how, _ in w.grows:
            COUNTS[how] += 1
        for op in w.ops:
            COUNTS[f"op_{op.kind}{'_fill' if op.fill else ''}"] += 1


# -- the tests -----------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", FILE_SEEDS)
def test_file_store(tmp_path, seed):
    case = make_case(seed)
    root = str(tmp_path / "a.zarr")
    run_case(case, root)
    check_final(case, root)
    assert FileStore(root).remove_temp_files(older_than=0) == []  # every write finished its file
    _count(case, "file")


@pytest.mark.parametrize("seed", MEMORY_SEEDS)
def test_memory_store_threads(seed):
    case = make_case(seed, processes=False)
    store = MemoryStore()
    run_case(case, store)
    check_final(case, store)
    _count(case, "memory")


@pytest.mark.parametrize("seed", S3_SEEDS)
def test_s3_store(bucket, opts, seed):
    case = make_case(seed)
    url = f"s3://{bucket}/a.zarr"
    run_case(case, url, opts)
    check_final(case, url, opts)
    _count(case, "s3")


def test_the_model_is_not_trivial():
    """Each case writes something the initial state does not hold (so a lost write shows)."""
    for seed in FILE_SEEDS:
        case = make_case(seed)
        model = expected(case)
        region = tuple(slice(0, s) for s in case.shape)
        assert (model[region] != case.initial).any() or all(
            op.fill for w in case.writers for op in w.ops), seed

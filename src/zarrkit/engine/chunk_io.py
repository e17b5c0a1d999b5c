"""Reading and writing selections of a chunked array: plan, then run per chunk in the pool.

The engine knows chunk grids, codec chains and stores, but no metadata format: the node layer
hands it a `ChunkedArray` describing the array.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..codecs._buffers import byte_view, nbytes
from ..codecs.chain import CodecChain
from ..codecs.sharding import EMPTY, ShardingCodec
from ..codecs.transpose import TransposeCodec
from ..errors import ChunkNotFoundError, CorruptDataError, SelectionError, env_number
from ..indexing import ChunkProjection, Plan
from ..kvstore._util import resolve_range
from ..kvstore.base import Buffer, ByteRange, GenerationMismatch, KvStore
from ..scratch import empty, fault_in, scratch
from .cache import ShardIndexCache
from .executor import (
    concurrency,
    ensure_concurrency,
    in_pool,
    io_width,
    run_all,
    run_io,
    submit,
)
from .limits import LimitedStore, bounded, slot_of

_EMPTY = np.uint64(2**64 - 1)
#: Reads of one shard, each with a freshly read index, before a shard that is replaced during
#: every one of them is read whole instead.
_SHARD_ATTEMPTS = 4


@dataclass(frozen=True)
class ChunkedArray:
    """What the engine needs to know about an array."""

    store: KvStore
    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    chain: CodecChain
    fill_value: Any
    key: Callable[[tuple[int, ...]], str]  # chunk grid coords -> full store key
    write_empty_chunks: bool = False
    #: Inner chunks (at any level) that a write re-encodes without touching stay stored if they
    #: were, even when they are the fill value (what write_empty_chunks does too): for the
    #: erasures of a resize, which drop the inner chunks they touch.
    keep_stored: bool = False
    #: Decoded-chunk cache (engine/cache.py `CacheBinding`); None: every read fetches.
    cache: Any = None
    #: Bounds (engine/limits.py) on this array's concurrent tasks and store I/O; None: none.
    copy_limit: Any = None
    io_limit: Any = None
    #: The shard indexes read through this handle (engine/cache.py).
    shard_indexes: ShardIndexCache = field(default_factory=ShardIndexCache, compare=False)
    #: False (the spec's fill_missing_data_reads): reading a chunk that is not stored raises
    #: ChunkNotFoundError naming `name` (the array) and the chunk, instead of filling it in.
    fill_missing: bool = True
    name: str = ""
    sharding: ShardingCodec | None = field(init=False)
    #: The inner chunk shape, in the array's dimensions, of any chain that shards (also behind
    #: array->array codecs or before bytes->bytes ones, which `sharding` leaves out); else None.
    inner_chunks: tuple[int, ...] | None = field(init=False)
    #: The same of the innermost level of nested sharding (`inner_chunks` when not nested).
    innermost_chunks: tuple[int, ...] | None = field(init=False)

    def __post_init__(self) -> None:
        c = self.chain
        plain = isinstance(c.array_bytes, ShardingCodec) and not c.array_array and not c.bytes_bytes
        object.__setattr__(self, "sharding", c.array_bytes if plain else None)
        object.__setattr__(self, "inner_chunks", inner_chunk_shape(c))
        object.__setattr__(self, "innermost_chunks", inner_chunk_shape(c, innermost=True))
        ensure_concurrency(self.store.io_concurrency)  # remote stores: many requests in flight
        if self.io_limit is not None:
            object.__setattr__(self, "store", LimitedStore(self.store, self.io_limit))

    @property
    def dtype(self) -> np.dtype:
        return self.chain.spec.dtype

    @property
    def read_chunk_shape(self) -> tuple[int, ...]:
        """The grid selections are planned on: inner chunks for a sharded array."""
        return self.sharding.chunk_shape if self.sharding else self.chunk_shape

    @property
    def fill_bytes(self) -> bytes:
        """One element of the fill value, as stored in memory (numeric and fixed-size types)."""
        return np.asarray(self.fill_value, dtype=self.dtype).tobytes()


def inner_chunk_shape(chain: CodecChain, innermost: bool = False) -> tuple[int, ...] | None:
    """The inner chunk shape of a chain whose array->bytes codec is sharding (`innermost`: of
    the innermost level of nested sharding), in the dimensions of the array: a transpose
    before the sharding permutes them (the other array->array codecs keep the shape). None
    for a chain that does not shard."""
    sharding = chain.array_bytes
    if not isinstance(sharding, ShardingCodec):
        return None
    deeper = inner_chunk_shape(sharding.inner, True) if innermost else None
    shape = list(sharding.chunk_shape if deeper is None else deeper)
    for codec in reversed(chain.array_array):
        if isinstance(codec, TransposeCodec):  # encoded dimension k is decoded dimension order[k]
            undone = [0] * len(shape)
            for k, d in enumerate(codec.order):
                undone[d] = shape[k]
            shape = undone
    return tuple(shape)


# -- helpers ----------------------------------------------------------------------------------

def decode_chunk(chain: CodecChain, data: Buffer, key: str, transient: bool = False,
                 p: ChunkProjection | None = None) -> np.ndarray:
    """The decoded chunk; `transient`: it may be in the thread's scratch buffer, to be copied out
    before this thread decodes again (never for a chunk that is cached or kept). With the
    projection `p` read from it, a transient decode may stop after the last row `p` needs."""
    try:
        if not transient:
            return chain.decode(data)
        rows = None if p is None or not chain.decodes_prefix else _rows_needed(p, chain.spec.shape)
        if rows is not None:
            row_bytes = chain.spec.nbytes // chain.spec.shape[0]
            chunk = chain.decode_prefix_transient(data, rows * row_bytes)
            if chunk is not None:
                return chunk
        return chain.decode_transient(data)
    except CorruptDataError as e:
        raise type(e)(f"chunk {key!r}: {e}") from None


def _rows_needed(p: ChunkProjection, shape: tuple[int, ...]) -> int | None:
    """How many leading rows (first-axis positions) of the chunk `p` reads from, when fewer than
    all of them and known from a slice or an integer; else None."""
    if not shape or not shape[0]:
        return None
    first = p.chunk_selection[0] if p.chunk_selection else None
    if isinstance(first, slice):
        rows = first.stop
    elif isinstance(first, int):
        rows = first + 1
    else:
        return None
    return rows if rows is not None and 0 < rows < shape[0] else None


def is_fill(chunk: np.ndarray, fill: Any) -> bool:
    """True when every element has exactly the fill value's bits (so NaN == NaN, -0.0 != 0.0)."""
    dt = chunk.dtype
    if dt.hasobject:  # object elements (v2 variable-length strings) have no bits to compare
        return all(type(v) is type(fill) and v == fill for v in chunk.flat)
    fill_arr = np.asarray(fill, dtype=dt).reshape(1)
    # The usual case for data: decided by the first element, no full pass. (A one-element
    # slice, not a scalar: a U/S scalar's bytes lose their trailing NULs.)
    first = chunk[(slice(0, 1),) * chunk.ndim] if chunk.ndim else chunk.reshape(1)
    if chunk.size and first.tobytes() != fill_arr.tobytes():
        return False
    if dt.kind in "biu" and dt.itemsize <= 8 and dt.names is None:
        return not np.any(chunk != fill)
    if dt.itemsize in (1, 2, 4, 8):
        u = np.dtype(f"u{dt.itemsize}")
        return not np.any(np.ascontiguousarray(chunk).view(u) != fill_arr.view(u)[0])
    raw = np.ascontiguousarray(chunk).view(np.uint8).reshape(-1, dt.itemsize)
    return not np.any(raw != fill_arr.view(np.uint8))


def _full_chunk(shape: tuple[int, ...], dtype: np.dtype, fill: Any) -> np.ndarray:
    return np.full(shape, fill, dtype=dtype)


def _chunk_from_value(p: ChunkProjection, region: np.ndarray, chunk_shape: tuple[int, ...],
                      dtype: np.dtype, fill: Any) -> np.ndarray:
    """A whole chunk made from the value written to a complete projection (padded at edges)."""
    # Indexing an object array can yield the element itself, not an array: place it.
    if isinstance(region, np.ndarray) and region.shape == chunk_shape:
        return region
    chunk = _full_chunk(chunk_shape, dtype, fill)
    chunk[p.chunk_selection] = region
    return chunk


# -- reading ----------------------------------------------------------------------------------

def read(arr: ChunkedArray, plan: Plan, out: np.ndarray | None = None) -> np.ndarray:
    """The selection's values, in `out` when given (the plan's buffer: `Plan.as_is`, C order,
    the array's data type) or a new array."""
    try:
        out = empty(plan.buffer_shape, arr.dtype, touch=False) if out is None else out
    except MemoryError:
        raise SelectionError(f"the selection's result ({math.prod(plan.buffer_shape)} elements "
                             f"of {arr.dtype}) does not fit in memory: read it in parts"
                             ) from None
    _fault_in(out, arr.copy_limit)  # every element is written below: chunk data or fill value
    if plan.nitems:
        if arr.sharding is not None:
            _read_sharded(arr, arr.sharding, plan, out)
        else:
            _read_chunks(arr, plan, out)
    return plan.finish(out)


#: Below this much decoded data a read runs in the calling thread: handing a few small chunks to
#: the pool costs more (thread wake-ups, GIL hand-offs) than decoding them.
INLINE_READ_BYTES = env_number("ZARRKIT_INLINE_READ_BYTES", 1 << 22)


#: The same for chunks whose codecs decode slowly (zstd, gzip): a hand-off is soon worth it.
INLINE_SLOW_READ_BYTES = env_number("ZARRKIT_INLINE_SLOW_READ_BYTES", 1 << 16)
#: Chunks this small that decode fast are read in the calling thread however many there are (and
#: written in one contiguous part per thread, `_write_small`): their work is a few short system
#: calls, each of which hands the GIL over when other threads run, and handing them out one by
#: one costs more than the calls (measured 1.4x slower reads with two threads; writes of 4096
#: 16 KiB chunks 1.5-2x slower, with 3-5x the kernel time).
INLINE_CHUNK_BYTES = env_number("ZARRKIT_INLINE_CHUNK_BYTES", 1 << 16)


def _small(arr: ChunkedArray, plan: Plan) -> bool:
    if plan.nchunks_hint <= 1:
        return True
    if arr.store.io_concurrency:  # a network store: requests wait in parallel, never inline
        return False
    chain = arr.sharding.inner if arr.sharding else arr.chain
    fast = all(c.fast_decode for c in chain.bytes_bytes)
    chunk_bytes = math.prod(arr.read_chunk_shape) * arr.dtype.itemsize
    if fast and chunk_bytes <= INLINE_CHUNK_BYTES:
        return True
    return plan.nchunks_hint * chunk_bytes <= (INLINE_READ_BYTES if fast else INLINE_SLOW_READ_BYTES)


def _run(arr: ChunkedArray, fn: Callable[[Any], Any], items: list[Any],
         inline: bool = False) -> list[Any]:
    """`fn` over `items`, in the calling thread or on the pool: as many threads as the cores, or
    as the store's requests in flight when it is a network store."""
    if inline:
        return [fn(item) for item in items]
    return run_all(fn, items, io_width(arr.store.io_concurrency))


def _fault_in(out: np.ndarray, limit: Any = None) -> None:
    """Fault in a large output's fresh pages in sequential runs, several threads at once
    (`scratch.fault_in`): chunk row by chunk row, as the chunks land, costs several times more
    on virtual machines."""
    flat = out.reshape(-1)
    if flat.nbytes < 1 << 22:
        return
    runs = 2 * concurrency()
    bounds = [flat.size * i // runs for i in range(runs + 1)]
    run_all(bounded(limit, lambda i: fault_in(flat[bounds[i]:bounds[i + 1]])), range(runs))


def _read_chunks(arr: ChunkedArray, plan: Plan, out: np.ndarray) -> None:
    store, chain, key_of, cache = arr.store, arr.chain, arr.key, arr.cache

    def load(key: str) -> np.ndarray | None:
        data = store.get(key)
        return None if data is None else decode_chunk(chain, data, key)

    def place(p: ChunkProjection, key: str, data: Buffer | None) -> None:
        """Chunk `p` from its stored bytes (transient: decoded for this read only)."""
        dest = _direct_dest(out, p, chain.spec.shape) if direct else None
        if dest is not None:
            _load_into(chain, data, key, dest, fill)
            return
        chunk = None if data is None else decode_chunk(chain, data, key, True, p)
        out[p.out_selection] = fill if chunk is None else chunk[p.chunk_selection]

    def task(p: ChunkProjection) -> None:
        key = key_of(p.coords)
        if cache is None:
            place(p, key, store.get_transient(key))
            return
        chunk = cache.load(key, None, lambda: load(key))
        out[p.out_selection] = missing(p, key) if chunk is None else chunk[p.chunk_selection]

    fill = arr.fill_value
    missing: Callable[[ChunkProjection, str], Any] = lambda p, key: fill  # noqa: E731
    if not arr.fill_missing:  # wrapped once per read: the default path pays nothing per chunk
        missing = functools.partial(_missing, arr)
        place = _strict_place(arr, chain, place)
        if isinstance(chain.array_bytes, ShardingCodec):
            cache = None  # a cached shard no longer tells which inner chunks it lacked
    # Whole chunks whose place in the output is one contiguous run (1-d arrays, chunks spanning
    # the trailing dimensions) are decoded straight into it: no scratch buffer, no copy.
    direct = cache is None and chain.decodes_into and out.ndim == len(chain.spec.shape) \
        and out.shape[1:] == chain.spec.shape[1:]
    projections, small = list(plan), _small(arr, plan)
    if small and cache is None and len(projections) > 1 and store.batches_without_gil:
        _read_batches(arr, projections, place, out if chain.stores_raw else None)
    else:
        _run(arr, bounded(arr.copy_limit, task), projections, small)


def _missing(arr: ChunkedArray, p: ChunkProjection, key: str) -> Any:
    raise ChunkNotFoundError(f"array {arr.name}: chunk {p.coords} stored at {key!r} is missing "
                             "(fill_missing_data_reads is false)")


def _missing_inner(arr: ChunkedArray, key: str, within: tuple[int, ...],
                   coords: tuple[int, ...] | None = None,
                   outer: tuple[int, ...] | None = None) -> Any:
    """Raise for the inner chunk at `within` of the shard at `key` (`outer`: of the shard
    that is that shard's inner chunk at `outer`), `coords` in the array's inner chunk grid."""
    chunk = "an inner chunk" if coords is None else f"chunk {coords}"
    nested = "" if outer is None else f" in shard entry {outer}"
    raise ChunkNotFoundError(f"array {arr.name}: {chunk} stored at shard entry {within}{nested} "
                             f"of {key!r} is missing (fill_missing_data_reads is false)")


def _strict_place(arr: ChunkedArray, chain: CodecChain,
                  place: Callable[[ChunkProjection, str, Buffer | None], None]
                  ) -> Callable[[ChunkProjection, str, Buffer | None], None]:
    """`place` refusing the chunks not stored (fill_missing_data_reads false); for a chain
    that shards behind other codecs, also the inner chunks not stored that `p` reads."""
    shards = isinstance(chain.array_bytes, ShardingCodec)

    def checked(p: ChunkProjection, key: str, data: Buffer | None) -> None:
        if data is None:
            _missing(arr, p, key)
        if shards:
            _check_inner(arr, chain, data, key, p)
        place(p, key, data)

    return checked


def _check_inner(arr: ChunkedArray, chain: CodecChain, data: Buffer, key: str,
                 p: ChunkProjection, outer: tuple[int, ...] | None = None) -> None:
    """Raise ChunkNotFoundError if `p` reads an inner chunk the shard `data` does not store
    (its chain shards behind array->array codecs, or is a shard's nested sharding)."""
    positions = np.asarray(chain.shard_entries(data)[p.chunk_selection])
    absent = positions[positions < 0]
    if absent.size:
        sharding = chain.array_bytes
        flat = -1 - int(absent.reshape(-1)[0])
        within = tuple(int(i) for i in np.unravel_index(flat, sharding.chunks_per_shard))
        _missing_inner(arr, key, within, outer=outer)


#: Decoded bytes of the small chunks one batch reads (`_read_batches`): what the store packs into
#: one buffer, with room for stored values a little larger than decoded ones.
READ_BATCH_BYTES = 1 << 19


def _read_batches(arr: ChunkedArray, projections: list[ChunkProjection],
                  place: Callable[[ChunkProjection, str, Buffer | None], None],
                  raw_out: np.ndarray | None) -> None:
    """Small chunks a batch at a time (`get_many_transient`, which this store does without the
    GIL), the batches spread over the threads: one thread's system calls overlap the other's
    decoding, and the GIL changes hands once a batch, not at every call. Given `raw_out` (the
    output, for a chain that stores chunks raw), whole chunks side by side are placed there
    with one copy per run (`_place_run`) rather than one each."""
    per = max(1, READ_BATCH_BYTES // (math.prod(arr.read_chunk_shape) * arr.dtype.itemsize))
    batches = [projections[i:i + per] for i in range(0, len(projections), per)]

    def read(batch: list[ChunkProjection]) -> None:
        keys = [arr.key(p.coords) for p in batch]
        values = arr.store.get_many_transient([(key, None) for key in keys])
        runs = [batch] if raw_out is None else _side_by_side(batch, arr.chunk_shape)
        start = 0
        for run in runs:
            stop = start + len(run)
            if raw_out is None or len(run) == 1 or \
                    not _place_run(raw_out, run, values[start:stop], arr.chunk_shape, arr.dtype):
                for p, key, data in zip(run, keys[start:stop], values[start:stop], strict=True):
                    place(p, key, data)
            start = stop

    _run(arr, bounded(arr.copy_limit, read), batches, inline=len(batches) == 1)


def _place_run(out: np.ndarray, run: list[ChunkProjection], values: list[Buffer | None],
               shape: tuple[int, ...], dtype: np.dtype) -> bool:
    """Place the chunks of `run` (whole, side by side: `_side_by_side`), stored raw, with one
    copy, when their bytes lie back to back in one buffer, as a batch read packs them; False,
    with nothing done, when they do not (a missing chunk, a value of another size, one read
    apart)."""
    size = math.prod(shape) * dtype.itemsize
    first = values[0]
    if not all(type(v) is memoryview and v.obj is first.obj and v.nbytes == size  # type: ignore[union-attr]
               for v in values):
        return False
    base = np.frombuffer(first.obj, np.uint8)  # type: ignore[union-attr]
    start = np.frombuffer(first, np.uint8).ctypes.data - base.ctypes.data
    stop = np.frombuffer(values[-1], np.uint8).ctypes.data - base.ctypes.data + size
    if stop - start != len(values) * size:  # (each is `size` long: so they are back to back)
        return False
    chunks = base[start:stop].view(dtype).reshape(len(values), *shape)
    head, tail = run[0].out_selection, run[-1].out_selection
    region = out[(*head[:-1], slice(head[-1].start, tail[-1].stop))]
    # Splitting the region's last axis (contiguous in `out`) is always a view: writes land in out.
    np.moveaxis(region.reshape(*shape[:-1], len(values), shape[-1]), -2, 0)[...] = chunks
    return True


def _direct_dest(out: np.ndarray, p: ChunkProjection, shape: tuple[int, ...]
                 ) -> np.ndarray | None:
    """The part of `out` that chunk `p` fills, when `p` reads the whole chunk (not clipped by
    the array's edge) into one C-contiguous run of `out`; else None."""
    if not p.complete or not all(type(s) is slice and s.step in (None, 1) for s in p.out_selection):
        return None
    dest = out[p.out_selection]  # a view (or, for a 0-d output, a read-only scalar)
    return dest if _contiguous_run(dest, shape) else None


def _contiguous_run(dest: Any, shape: tuple[int, ...]) -> bool:
    """Whether `dest` (a part of the output) is an array, not a scalar, of exactly `shape` and
    C-contiguous: a chunk's (or a column of chunks') bytes can be decoded straight into it."""
    return type(dest) is np.ndarray and dest.shape == shape and dest.flags.c_contiguous


def _bytes_of(dest: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array, writable in place. Through a uint8 view: the buffer
    protocol refuses the ml_dtypes types (bfloat16, int4) that memoryview(dest) would need."""
    return memoryview(dest.reshape(-1).view(np.uint8))


def _load_into(chain: CodecChain, data: Buffer | None, key: str, dest: np.ndarray,
               fill: Any) -> None:
    if data is None:
        dest[...] = fill
        return
    try:
        chain.decode_into(data, _bytes_of(dest))
    except CorruptDataError as e:
        raise type(e)(f"chunk {key!r}: {e}") from None


def _shard_groups(plan: Plan, cps: tuple[int, ...]) -> list[tuple[tuple[int, ...], Any]]:
    """(shard coordinates, the selection's projections inside that shard) for each shard
    touched. The projections are a plan of their own, listed only when used, so that the pool
    threads list them in parallel (a shard holds thousands of inner chunks)."""
    if not plan.is_points:
        return plan.by_block(cps)
    groups: dict[tuple[int, ...], list[ChunkProjection]] = {}
    for p in plan:
        groups.setdefault(tuple(c // n for c, n in zip(p.coords, cps, strict=True)), []).append(p)
    return list(groups.items())


def _members(shard: tuple[int, ...], projections: Any,
             cps: tuple[int, ...]) -> list[tuple[tuple[int, ...], ChunkProjection]]:
    """Each projection with its inner chunk's coordinates within the shard."""
    return [(tuple(c - s * n for c, s, n in zip(p.coords, shard, cps, strict=True)), p)
            for p in projections]


def _read_sharded(arr: ChunkedArray, sharding: ShardingCodec, plan: Plan,
                  out: np.ndarray) -> None:
    cps = sharding.chunks_per_shard
    groups = _shard_groups(plan, cps)
    inner, cache, fill = sharding.inner, arr.cache, arr.fill_value
    if not arr.fill_missing and isinstance(inner.array_bytes, ShardingCodec):
        cache = None  # a cached inner shard no longer tells which of its chunks it lacked
    if cache is None and inner.decodes_into and not plan.is_points:
        groups = _read_boxes(arr, sharding, groups, out, _small(arr, plan))
    tokens: dict[tuple[int, ...], Any] = {}  # cache tokens of the inner chunks fetched

    def place(item: tuple[Any, ChunkProjection, str]) -> None:
        data, p, key = item
        if isinstance(data, _Cached):
            chunk = data.chunk
        else:
            chunk = None if data is None else decode_chunk(inner, data, key, cache is None, p)
            if cache is not None:
                cache.store(key, p.coords, chunk, tokens[p.coords])
        out[p.out_selection] = fill if chunk is None else chunk[p.chunk_selection]

    def fetch(group: tuple[tuple[int, ...], Any]) -> list[Any]:
        members = _members(group[0], group[1], cps)
        if cache is None:
            return _fetch_inner_chunks(arr, sharding, group[0], members)
        return _fetch_cached(arr, sharding, group[0], members, tokens)

    if not arr.fill_missing:  # wrapped once per read: the default path pays nothing per chunk
        place = _strict_inner(arr, sharding, place)
    small = _small(arr, plan) if groups else True
    if len(groups) >= concurrency():  # enough shards to keep every thread busy
        _run(arr, bounded(arr.copy_limit, lambda g: [place(item) for item in fetch(g)]), groups,
             small)  # (a small read, such as a region across shards, costs less inline)
    elif groups:  # few shards: fetch them, then decode their inner chunks in parallel
        fetch, place = bounded(arr.copy_limit, fetch), bounded(arr.copy_limit, place)
        items = [item for fetched in _run(arr, fetch, groups, small) for item in fetched]
        _run(arr, place, items, small)


def _strict_inner(arr: ChunkedArray, sharding: ShardingCodec,
                  place: Callable[[Any], None]) -> Callable[[Any], None]:
    """`place` refusing inner chunks not stored (fill_missing_data_reads false), and, with
    nested sharding, the inner chunks' own missing inner chunks that are read."""
    cps, inner = sharding.chunks_per_shard, sharding.inner
    nested = isinstance(inner.array_bytes, ShardingCodec)

    def checked(item: tuple[Any, ChunkProjection, str]) -> None:
        data, p, key = item
        if data is None or (isinstance(data, _Cached) and data.chunk is None):
            _missing_inner(arr, key, tuple(c % n for c, n in zip(p.coords, cps, strict=True)),
                           p.coords)
        if nested:
            within = tuple(c % n for c, n in zip(p.coords, cps, strict=True))
            _check_inner(arr, inner, data, key, p, within)
        place(item)

    return checked


def _fetch_inner_chunks(arr: ChunkedArray, sharding: ShardingCodec, shard: tuple[int, ...],
                        members: list[Any]) -> list[tuple[Buffer | None, ChunkProjection, str]]:
    """The shard's index, then only the inner chunks the selection needs (one batch). Without
    a cached index, both come from one `get_then_ranges` (a file store opens the shard once)."""
    key = arr.key(shard)

    def needed(index: np.ndarray) -> tuple[list[Any], list[ByteRange], list[ChunkProjection]]:
        """(the members stored nowhere, as found; ranges of the others; those others)"""
        missing, ranges, pending = [], [], []
        for within, p in members:
            offset = index.item(*within, 0)  # a Python int, without an array per entry
            if offset == EMPTY:
                missing.append((None, p, key))
            else:
                ranges.append(ByteRange(offset, index.item(*within, 1)))
                pending.append(p)
        return missing, ranges, pending

    def found(picked: tuple[list[Any], list[ByteRange], list[ChunkProjection]],
              fetched: list[Buffer | None]) -> list[tuple[Buffer | None, ChunkProjection, str]]:
        missing, ranges, pending = picked
        return missing + [(_inner_bytes(key, rng, data), p, key)
                          for rng, p, data in zip(ranges, pending, fetched, strict=True)]

    def fetch(index: np.ndarray | None, generation: Any) -> list[Any]:
        if index is None:
            return _all_missing(members, key)
        picked = needed(index)
        return found(picked, _ranges_if(arr, key, picked[1], generation))

    cached = arr.shard_indexes.get(key)
    if cached is None:
        try:
            return _fetch_with_index(arr, sharding, key, needed, found, members)
        except GenerationMismatch:  # replaced in between: the first of the attempts
            return _with_index(arr, sharding, shard, fetch, tried=1)
    return _with_index(arr, sharding, shard, fetch, cached)


def _all_missing(members: list[Any], key: str) -> list[tuple[None, ChunkProjection, str]]:
    """The inner chunks of a shard that does not exist: each reads as the fill value."""
    return [(None, p, key) for _, p in members]


def _fetch_with_index(arr: ChunkedArray, sharding: ShardingCodec, key: str,
                      needed: Callable[[np.ndarray], Any], found: Callable[..., list[Any]],
                      members: list[Any]) -> list[Any]:
    """A shard's index and the inner chunks `needed` picks from it, in one store call; the
    index cached for later reads."""
    picked: list[Any] = []

    def then(data: Buffer) -> list[ByteRange]:
        picked.append(_decoded_index(sharding, key, data))
        picked.append(needed(picked[0]))
        return picked[1][1]

    first, generation, fetched = arr.store.get_then_ranges(key, sharding.index_byte_range(), then)
    if first is None:
        return _all_missing(members, key)
    if generation is not None:
        arr.shard_indexes.put(key, picked[0], generation)
    return found(picked[1], fetched)


def _inner_bytes(key: str, rng: ByteRange, data: Buffer | None) -> Buffer:
    """An inner chunk's bytes as read from its shard, checked to be all there."""
    if data is None or len(data) != rng.length:
        raise CorruptDataError(
            f"shard {key!r}: inner chunk at bytes {rng.offset}+{rng.length} lies outside the "
            "shard (truncated shard or corrupt index)")
    return data


#: A box of whole inner chunks is decoded into a per-thread buffer of up to this many bytes,
#: then moved into the output by one strided copy (rather than a copy, and a GIL hand-off, per
#: inner chunk).
BOX_BYTES = env_number("ZARRKIT_BOX_BYTES", 2 << 20)


_Box = tuple[tuple[int, ...], tuple[int, ...], tuple[slice, ...]]  # Plan.block


def _read_boxes(arr: ChunkedArray, sharding: ShardingCodec, groups: list[Any], out: np.ndarray,
                inline: bool) -> list[Any]:
    """Read the shards whose selection is a box of whole inner chunks (Plan.block): their
    indexes, then slabs of chunk rows of up to BOX_BYTES, spread over the pool. The other
    groups (and boxes whose one row of chunks exceeds BOX_BYTES) are returned unread."""
    boxes, rest = [], []
    for shard, sub in groups:
        box = sub.block()
        rows = 0 if box is None or not box[1] else \
            BOX_BYTES // (math.prod(box[1][1:]) * sharding.inner.spec.nbytes or 1)
        if rows >= 1:
            boxes.append((shard, box, rows))
        else:
            rest.append((shard, sub))
    if not boxes:
        return rest
    limit = arr.copy_limit
    indexes = _run(arr, bounded(limit, lambda b: _shard_index(arr, sharding, b[0])), boxes, inline)
    slabs = [(shard, found, slab)
             for (shard, box, rows), found in zip(boxes, indexes, strict=True) if found[0] is not None
             for slab in _slabs(sharding, shard, box, rows)]
    for (shard, box, _), (index, _) in zip(boxes, indexes, strict=True):
        if index is None:  # a missing shard
            if not arr.fill_missing:
                _missing_box(arr, sharding, shard, box[0])
            out[box[2]] = arr.fill_value
    _run(arr, bounded(limit, lambda s: _read_slab(arr, sharding, *s, out)), slabs, inline)
    return rest


def _shard_index(arr: ChunkedArray, sharding: ShardingCodec, shard: tuple[int, ...],
                 fresh: bool = False) -> tuple[np.ndarray | None, Any]:
    """The shard's index and the generation of the shard it was read from (None, None for a
    missing shard); from the handle's cache unless `fresh`."""
    key = arr.key(shard)
    if not fresh:
        hit = arr.shard_indexes.get(key)
        if hit is not None:
            return hit
    data, generation = arr.store.get_with_generation(key, sharding.index_byte_range())
    if data is None:
        return None, None
    index = _decoded_index(sharding, key, data)
    if generation is not None:
        arr.shard_indexes.put(key, index, generation)
    return index, generation


def _decoded_index(sharding: ShardingCodec, key: str, data: Buffer,
                   shard_size: int | None = None) -> np.ndarray:
    """`decode_index`, its errors naming the shard's key."""
    try:
        return sharding.decode_index(data, shard_size)
    except CorruptDataError as e:
        raise type(e)(f"shard {key!r}: {e}") from None


def _with_index(arr: ChunkedArray, sharding: ShardingCodec, shard: tuple[int, ...],
                read: Callable[[np.ndarray | None, Any], Any],
                known: tuple[np.ndarray | None, Any] | None = None, tried: int = 0) -> Any:
    """`read(index, generation)`: reads of inner chunks checked against the generation the
    index came from (`known`, or the cache's, or the store's), so that a shard replaced since
    cannot be read at the old index's offsets. Retried with a fresh index when it was (after
    `tried` attempts the caller made itself)."""
    key = arr.key(shard)
    for attempt in range(tried, _SHARD_ATTEMPTS):
        if attempt == 0 and known is not None:
            index, generation = known
        else:
            index, generation = _shard_index(arr, sharding, shard, fresh=attempt > 0)
        try:
            return read(index, generation)
        except GenerationMismatch:
            arr.shard_indexes.discard([key])
    # Writers kept replacing the shard between its index read and its chunk reads: read it
    # whole, in one go, so that index and chunks cannot come from different values.
    return read(*_whole_shard(arr, sharding, key))


@dataclass(frozen=True)
class _Whole:
    """In place of a generation: the whole value of a shard, its ranges served from memory."""

    data: Buffer


def _whole_shard(arr: ChunkedArray, sharding: ShardingCodec, key: str
                 ) -> tuple[np.ndarray | None, _Whole | None]:
    data = arr.store.get(key)
    if data is None:
        return None, None
    view = byte_view(data)
    start, stop = resolve_range(sharding.index_byte_range(), len(view))
    return _decoded_index(sharding, key, view[start:stop], len(view)), _Whole(view)


def _ranges_if(arr: ChunkedArray, key: str, ranges: list[ByteRange], generation: Any,
               transient: bool = False) -> list[Buffer | None]:
    """`get_ranges_if`, or the ranges of a shard read whole (`_Whole`)."""
    if isinstance(generation, _Whole):
        return [generation.data[slice(*resolve_range(rng, len(generation.data)))]
                for rng in ranges]
    return arr.store.get_ranges_if(key, ranges, generation, transient)


def _slabs(sharding: ShardingCodec, shard: tuple[int, ...], box: _Box, rows: int) -> list[_Box]:
    """The box cut into runs of `rows` chunk rows: (first chunk within the shard, chunks per
    dimension, output region) each."""
    first, counts, region = box
    local = [f - s * n for f, s, n in zip(first, shard, sharding.chunks_per_shard, strict=True)]
    height = sharding.inner.spec.shape[0]
    slabs = []
    for start in range(0, counts[0], rows):
        n = min(rows, counts[0] - start)
        top = region[0].start + start * height
        slabs.append(((local[0] + start, *local[1:]), (n, *counts[1:]),
                      (slice(top, min(top + n * height, region[0].stop)), *region[1:])))
    return slabs


def _read_slab(arr: ChunkedArray, sharding: ShardingCodec, shard: tuple[int, ...],
               found: tuple[np.ndarray | None, Any], slab: _Box, out: np.ndarray) -> None:
    key, region = arr.key(shard), slab[2]

    def read(index: np.ndarray | None, generation: Any) -> None:
        if index is None:  # the shard was deleted meanwhile
            if not arr.fill_missing:
                _missing_box(arr, sharding, shard, slab[0], local=True)
            out[region] = arr.fill_value
        else:
            if not arr.fill_missing:
                _check_entries(arr, sharding, shard, slab, index)
            _read_slab_of(arr, sharding, key, index, generation, slab, out)

    _with_index(arr, sharding, shard, read, found)


def _missing_box(arr: ChunkedArray, sharding: ShardingCodec, shard: tuple[int, ...],
                 first: tuple[int, ...], local: bool = False) -> Any:
    """Raise for the first inner chunk of a box (`first`: its coordinates in the array's
    inner chunk grid, or within the shard if `local`) read from a shard not stored."""
    cps = sharding.chunks_per_shard
    within = tuple(f - s * n for f, s, n in zip(first, shard, cps, strict=True)) if not local \
        else tuple(first)
    coords = tuple(s * n + w for s, n, w in zip(shard, cps, within, strict=True))
    _missing_inner(arr, arr.key(shard), within, coords)


def _check_entries(arr: ChunkedArray, sharding: ShardingCodec, shard: tuple[int, ...],
                   slab: _Box, index: np.ndarray) -> None:
    """Raise for the first inner chunk of `slab` that the shard's `index` has no entry for."""
    first, counts = slab[0], slab[1]
    entries = index[tuple(slice(f, f + c) for f, c in zip(first, counts, strict=True))]
    absent = np.argwhere(entries[..., 0] == _EMPTY)
    if len(absent):
        _missing_box(arr, sharding, shard,
                     tuple(int(f + a) for f, a in zip(first, absent[0], strict=True)), True)


def _read_slab_of(arr: ChunkedArray, sharding: ShardingCodec, key: str, index: np.ndarray,
                  generation: Any, slab: _Box, out: np.ndarray) -> None:
    first, counts, region = slab
    entries = index[tuple(slice(f, f + c) for f, c in zip(first, counts, strict=True))]
    shape, dest = sharding.inner.spec.shape, out[region]
    # A column of whole inner chunks that spans the output's trailing dimensions (1-d arrays,
    # chunks as wide as the array) is one contiguous run of the output: decoded straight there.
    direct = all(c == 1 for c in counts[1:]) and \
        _contiguous_run(dest, (counts[0] * shape[0], *shape[1:]))
    raw = _bytes_of(dest) if direct else None
    block = _decode_box(arr, sharding.inner, key, generation, entries.reshape(-1, 2),
                        math.prod(counts), raw)
    if not direct:
        _place_box(block.reshape(counts + shape), dest)


def _decode_box(arr: ChunkedArray, inner: CodecChain, key: str, generation: Any,
                entries: np.ndarray, count: int, raw: memoryview | None = None) -> np.ndarray:
    """`count` inner chunks (their index entries, in C order) of the shard of `generation`,
    decoded into `raw`, by default this thread's box buffer: shape (count, chunk elements);
    missing chunks hold the fill value."""
    nbytes = inner.spec.nbytes
    raw = scratch(count * nbytes, "box") if raw is None else raw
    block = np.frombuffer(raw, inner.spec.dtype).reshape(count, -1)
    present = entries[:, 0] != _EMPTY
    if not present.all():
        block[~present] = arr.fill_value
    positions = np.flatnonzero(present).tolist()
    ranges = [ByteRange(o, n) for o, n in entries[present].tolist()]
    # A failed generation check raises before any chunk is decoded (a retry rewrites every
    # position). The results are consumed before this thread's next read.
    fetched = _ranges_if(arr, key, ranges, generation, transient=True)
    sources = [_inner_bytes(key, rng, data) for rng, data in zip(ranges, fetched, strict=True)]
    done = 0
    while done < len(sources):  # runs by one call each; a chunk it stops at, on its own
        done += inner.decode_many_into(sources[done:], raw, positions[done:])
        if done < len(sources):
            k, rng = positions[done], ranges[done]
            try:
                inner.decode_into(sources[done], raw[k * nbytes:(k + 1) * nbytes])
            except CorruptDataError as e:
                raise type(e)(f"shard {key!r}, inner chunk at bytes {rng.offset}+{rng.length}: "
                              f"{e}") from None
            done += 1
    return block


def _place_box(block: np.ndarray, dest: np.ndarray) -> None:
    """Copy a block of chunks (shape counts + chunk shape) into `dest`, the region they cover
    (cut short at the array's end)."""
    rank = dest.ndim
    counts, chunk = block.shape[:rank], block.shape[rank:]
    if dest.shape == tuple(c * n for c, n in zip(chunk, counts, strict=True)):
        if dest.dtype.type.__module__ == "ml_dtypes":
            # As unsigned integers of their size: as_strided goes through the array
            # interface, whose typestr of float8_e5m2 ("<f1") numpy cannot read back.
            carrier = np.dtype(f"u{dest.dtype.itemsize}")
            dest, block = dest.view(carrier), block.view(carrier)
        # dest seen as (count, chunk) pairs per dimension: one strided copy.
        split = np.lib.stride_tricks.as_strided(
            dest, [x for c, n in zip(counts, chunk, strict=True) for x in (c, n)],
            [x for n, st in zip(chunk, dest.strides, strict=True) for x in (n * st, st)],
            writeable=True)
        split[...] = block.transpose([i + k * rank for i in range(rank) for k in (0, 1)])
        return
    for pos in np.ndindex(*counts):  # the box ends at the array's edge: chunk by chunk
        sel = tuple(slice(p * n, min((p + 1) * n, size)) for p, n, size in
                    zip(pos, chunk, dest.shape, strict=True))
        dest[sel] = block[pos][tuple(slice(0, s.stop - s.start) for s in sel)]


@dataclass(frozen=True)
class _Cached:
    chunk: np.ndarray | None  # None: the chunk does not exist (reads as the fill value)


def _fetch_cached(arr: ChunkedArray, sharding: ShardingCodec, shard: tuple[int, ...],
                  members: list[Any], tokens: dict[tuple[int, ...], Any]) -> list[Any]:
    """Inner chunks from the cache where it has them; the others fetched from the shard."""
    key, hits, misses = arr.key(shard), [], []
    for within, p in members:
        found, chunk = arr.cache.lookup(key, p.coords)
        if found:
            hits.append((_Cached(chunk), p, key))
        else:
            tokens[p.coords] = arr.cache.token(key)  # before the fetch: see engine/cache.py
            misses.append((within, p))
    return hits + (_fetch_inner_chunks(arr, sharding, shard, misses) if misses else [])


# -- writing ----------------------------------------------------------------------------------

def write(arr: ChunkedArray, plan: Plan, value: Any) -> None:
    value = plan.prepare_value(np.asarray(value, dtype=arr.dtype))
    if not plan.nitems:
        return
    _check_objects(arr, value)
    try:
        if arr.sharding is not None:
            _write_sharded(arr, arr.sharding, plan, value)
        elif _small(arr, plan):
            _write_small(arr, list(plan), value)
        else:
            _run(arr, bounded(arr.copy_limit, lambda run: _write_run(arr, run, value)),
                 across_rows(_write_runs(arr, list(plan)), lambda run: run[0].coords))
    finally:
        _forget_written(arr, plan)


def write_fields(arr: ChunkedArray, plan: Plan, records: np.ndarray, names: list[str]) -> None:
    """Set the fields `names` of the records in `plan` from `records` (those fields only, in
    that order), keeping the others: each chunk is read, changed and written back under its
    key's lock, as a chunk written in part is, so that a concurrent write of other fields is
    not lost."""
    if arr.sharding is not None:  # structured data types are Zarr v2's, which has no shards
        raise SelectionError("fields= writes are not supported for sharded arrays")
    value = plan.prepare_value(records)
    if not plan.nitems:
        return
    try:
        _run(arr, bounded(arr.copy_limit, lambda p: _update_chunk(
            arr, p, value[p.out_selection], names)), list(plan))
    finally:
        _forget_written(arr, plan)


def across_rows(items: list[Any], coords: Callable[[Any], tuple[int, ...]]) -> list[Any]:
    """`items` (chunks or shards to write, in C order) reordered down the columns of their
    grid, so that the threads, each taking the next, write into different directories of a
    file store, whose keys ("c/i/j") put a row in one: a file is created and renamed under
    its directory's lock, and two threads writing along one row spent ~6% of an unsharded
    write's CPU spinning on it (perf: `rwsem_spin_on_owner` under `openat` and `renameat`).
    Any order is correct; this one is every m-th item, m the items per row."""
    if len(items) <= 1 or not coords(items[0]):  # (a 0-d array's one chunk)
        return items
    m = len({coords(item)[-1] for item in items})
    if m <= 1 or m == len(items):
        return items
    return [item for k in range(m) for item in items[k::m]]


#: Decoded bytes of side-by-side whole chunks one task of a write encodes by one call and stores
#: by one batch, when the chain encodes runs (`_write_runs`): 8 MiB wrote the benchmark's blosc
#: array ~15% faster than 2 MiB (each chunk is copied out just before it is compressed, so a
#: run's size no longer bounds what the cache must hold; fewer runs, fewer GIL hand-offs).
RUN_BYTES = 8 << 20


def _write_runs(arr: ChunkedArray, projections: list[ChunkProjection]
                ) -> list[list[ChunkProjection]]:
    """The tasks of a write of chunks (not small ones): runs of whole chunks side by side, up
    to RUN_BYTES, when the chain encodes runs by one call and the store writes a batch by one
    call; a chunk on its own otherwise. Chunk by chunk, each thread handed the GIL over at
    each of a chunk's copy, compression and write: with two threads each hand-off is a wake-up
    of the other (perf: futex and interpreter ~25% of an unsharded blosc write's CPU)."""
    if not (arr.chain.encodes_many and arr.store.batches_without_gil) or arr.dtype.hasobject:
        return [[p] for p in projections]
    # At least two runs per thread, so that a small write keeps the threads busy to the end.
    per = max(1, min(RUN_BYTES // arr.chain.spec.nbytes,
                     -(-len(projections) // (2 * concurrency()))))
    return [run[i:i + per] for run in _side_by_side(projections, arr.chunk_shape)
            for i in range(0, len(run), per)]


def _write_run(arr: ChunkedArray, run: list[ChunkProjection], value: np.ndarray) -> None:
    if len(run) == 1:
        _write_chunk(arr, run[0], value[run[0].out_selection])
        return
    fill = None if arr.write_empty_chunks else arr.fill_bytes
    encoded, sizes = arr.chain.encode_many_transient(
        _side_by_side_chunks(run, value, arr.chunk_shape), fill)
    arr.store.replace_many([arr.key(p.coords) for p in run], _pieces(encoded, 0, sizes))


def _pieces(encoded: memoryview, start: int, sizes: np.ndarray) -> list[Buffer | None]:
    """The stored bytes of a run's chunks, one after another in `encoded` from `start` on (None
    for a chunk of the fill value: its size is -1)."""
    ends = (start + np.cumsum(np.maximum(sizes, 0))).tolist()
    return [None if size < 0 else encoded[end - size:end]
            for size, end in zip(sizes.tolist(), ends, strict=True)]


#: The fewest small chunks each thread of a write takes (`_write_small`).
MIN_SMALL_PART = 32


def _write_small(arr: ChunkedArray, projections: list[ChunkProjection],
                 value: np.ndarray) -> None:
    """Small chunks: each thread writes one contiguous part of the list (one batch of the
    store's), not chunk by chunk from the pool, whose hand-offs cost more than the chunks. Two
    parts overlap their file creation in the kernel: 4096 chunks of 16 KiB took 0.5-0.75x the
    time of one thread when creating files was slow (after many files were written or deleted,
    as in the benchmark), and up to 1.3x when it was fast (the GIL hand-offs then dominate).
    A store that stores a batch without the GIL is given batches as they are encoded."""
    if arr.store.batches_without_gil and len(projections) > 1 and not in_pool():
        _write_pipelined(arr, projections, value)
        return
    parts = max(1, min(concurrency(), len(projections) // MIN_SMALL_PART))
    n = len(projections)
    _run(arr, bounded(arr.copy_limit, lambda i: _write_inline(
        arr, projections[i * n // parts:(i + 1) * n // parts], value)), list(range(parts)),
         inline=parts == 1)


def _write_inline(arr: ChunkedArray, projections: list[ChunkProjection],
                  value: np.ndarray) -> None:
    """Chunks written in this thread: the whole ones as one batch of the store's (`replace_many`,
    which shares work between keys), each encoded just before it is stored."""
    whole = []
    for p in projections:
        if p.complete:
            whole.append(p)
        else:
            _write_chunk(arr, p, value[p.out_selection])
    arr.store.replace_many([arr.key(p.coords) for p in whole],
                           (_whole_encoded(arr, p, value[p.out_selection]) for p in whole))


#: Decoded bytes of the small chunks one batch of a pipelined write stores (`_write_pipelined`).
WRITE_BATCH_BYTES = 1 << 20


def _write_pipelined(arr: ChunkedArray, projections: list[ChunkProjection],
                     value: np.ndarray) -> None:
    """Small chunks for a store that stores a batch without the GIL (`batches_without_gil`):
    this thread encodes them, a batch at a time, while pool threads store the batches before.
    Encoding is Python work, which a second encoding thread only slows down (measured 2x: each
    numpy call hands the GIL over); storing many small values is the kernel's work, which
    overlaps it. A batch's values are copied into one of this thread's reused buffers (bytes of
    their own per value cost page faults: freed a batch at a time, malloc gives the memory
    back to the kernel)."""
    per = max(1, WRITE_BATCH_BYTES // (math.prod(arr.chunk_shape) * arr.dtype.itemsize))
    store = bounded(arr.copy_limit, arr.store.replace_many)
    width = concurrency()
    in_flight: deque[Future[None]] = deque()
    try:
        for k, start in enumerate(range(0, len(projections), per)):
            # At most `width` batches are in flight, the latest: this buffer is not theirs.
            arena = scratch(WRITE_ARENA_BYTES, f"write-batch-{k % (width + 1)}")
            with slot_of(arr.copy_limit):
                keys, values = _encoded_batch(arr, projections[start:start + per], value, arena)
            if len(in_flight) == width:
                in_flight.popleft().result()
            in_flight.append(submit(store, keys, values))
    finally:
        errors = [f.exception() for f in in_flight]  # waits: nothing is written after return
    for error in errors:
        if error is not None:
            raise error


#: A pipelined batch's buffer: room for stored values a little larger than decoded ones.
WRITE_ARENA_BYTES = WRITE_BATCH_BYTES + (WRITE_BATCH_BYTES >> 3)


def _encoded_batch(arr: ChunkedArray, projections: list[ChunkProjection], value: np.ndarray,
                   arena: memoryview) -> tuple[list[str], list[Buffer | None]]:
    """The keys and stored bytes (in `arena`, or bytes of their own when it is full) of the
    whole chunks among `projections`, None for a chunk that is the fill value (not stored).
    Partial chunks are written here and now (read, merged and written under lock)."""
    keys: list[str] = []
    values: list[Buffer | None] = []
    used = 0
    raw = arr.chain.stores_raw and not arr.dtype.hasobject
    runs = raw or arr.chain.encodes_many and not arr.dtype.hasobject
    for run in _side_by_side(projections, arr.chunk_shape) if runs else [[p] for p in projections]:
        if len(run) > 1:
            gather = _gather_raw if raw else _encode_run
            used = gather(arr, run, value, arena, used, values)
            keys.extend(arr.key(p.coords) for p in run)
            continue
        p = run[0]
        if not p.complete:
            _write_chunk(arr, p, value[p.out_selection])
            continue
        keys.append(arr.key(p.coords))
        data = _whole_encoded(arr, p, value[p.out_selection])
        if data is None or used + nbytes(data) > len(arena):
            values.append(None if data is None else bytes(data))
            continue
        values.append(_copied(data, arena, used))
        used += len(values[-1])
    return keys, values


def _copied(data: Buffer, arena: memoryview, used: int) -> memoryview:
    view = byte_view(data)
    target = arena[used:used + len(view)]
    target[:] = view
    return target


def _side_by_side(projections: list[ChunkProjection], chunk_shape: tuple[int, ...]
                  ) -> list[list[ChunkProjection]]:
    """`projections` cut into runs of whole chunks that lie side by side along the value's last
    dimension (each a box of `chunk_shape`, each starting where the one before ends); every
    other projection is a run of its own."""
    runs: list[list[ChunkProjection]] = []
    last: tuple[Any, ...] = ()
    for p in projections:
        sel = p.out_selection
        if not (p.complete and len(sel) == len(chunk_shape) and all(
                type(s) is slice and s.step in (None, 1) and s.start is not None
                and s.stop - s.start == c for s, c in zip(sel, chunk_shape, strict=True))):
            runs.append([p])
            last = ()
        elif last and sel[:-1] == last[:-1] and sel[-1].start == last[-1].stop:
            runs[-1].append(p)
            last = sel
        else:
            runs.append([p])
            last = sel
    return runs


def _gather_raw(arr: ChunkedArray, run: list[ChunkProjection], value: np.ndarray,
                arena: memoryview, used: int, values: list[Buffer | None]) -> int:
    """The chunks of `run` (from `_side_by_side`), for a chain that stores them raw, copied into
    `arena` from `used` on with one copy (not one per chunk), and their bytes (None: the fill
    value) appended to `values`; where the arena is used up to now."""
    shape, n = arr.chunk_shape, len(run)
    chunks = _side_by_side_chunks(run, value, shape)
    size = math.prod(shape) * arr.dtype.itemsize
    if used + n * size > len(arena):  # not for this batch's buffer: memory of its own
        arena, used = memoryview(bytearray(n * size)), 0
    dest = np.frombuffer(arena, arr.dtype, n * math.prod(shape), used).reshape(n, *shape)
    np.copyto(dest, chunks)
    fill = _fill_chunks(arr, dest) if not arr.write_empty_chunks else ()
    values.extend(None if i in fill else arena[used + i * size:used + (i + 1) * size]
                  for i in range(n))
    return used + n * size


def _encode_run(arr: ChunkedArray, run: list[ChunkProjection], value: np.ndarray,
                arena: memoryview, used: int, values: list[Buffer | None]) -> int:
    """`_gather_raw` for a chain that encodes runs (`CodecChain.encodes_many`): the chunks of
    `run` compressed into `arena` by one call, or into memory of their own when it might not
    hold them."""
    chunks = _side_by_side_chunks(run, value, arr.chunk_shape)
    fill = None if arr.write_empty_chunks else arr.fill_bytes
    room = arr.chain.run_room(len(run))
    if used + room > len(arena):
        encoded, sizes = arr.chain.encode_many_transient(chunks, fill)
        values.extend(_pieces(memoryview(bytes(encoded)), 0, sizes))
        return used
    sizes = np.empty(len(run), np.int64)
    _, end = arr.chain.encode_many_into(chunks, fill, arena[used:used + room], 0, 0, sizes)
    values.extend(_pieces(arena, used, sizes))
    return used + end


def _side_by_side_chunks(run: list[ChunkProjection], value: np.ndarray,
                         shape: tuple[int, ...]) -> np.ndarray:
    """The values of a run from `_side_by_side` as a view of `value`, stacked on a first axis."""
    first, final = run[0].out_selection, run[-1].out_selection
    region = value[(*first[:-1], slice(first[-1].start, final[-1].stop))]
    return np.moveaxis(region.reshape(*shape[:-1], len(run), shape[-1]), -2, 0)


def _fill_chunks(arr: ChunkedArray, chunks: np.ndarray) -> set[int]:
    """Which of `chunks` (stacked on the first axis) are the fill value, bit for bit: the first
    element of each is compared at once, the whole of those that match."""
    itemsize = arr.dtype.itemsize
    fill = np.frombuffer(arr.fill_bytes, np.uint8)
    firsts = chunks.reshape(len(chunks), -1).view(np.uint8)[:, :itemsize]
    candidates = np.flatnonzero((firsts == fill).all(axis=1))
    return {int(i) for i in candidates if is_fill(chunks[i], arr.fill_value)}


def _whole_encoded(arr: ChunkedArray, p: ChunkProjection, region: np.ndarray) -> Buffer | None:
    """The transient bytes to store for chunk `p` written whole with `region` (None: it is the
    fill value, not stored)."""
    chunk = _chunk_from_value(p, region, arr.chunk_shape, arr.dtype, arr.fill_value)
    return _encoded(arr, arr.chain, chunk, True, _kept(arr, arr.chain, p.chunk_selection))


def _check_objects(arr: ChunkedArray, value: np.ndarray) -> None:
    """Object values (vlen-utf8/vlen-bytes) are all checked before any chunk is stored, so a
    wrong one fails the whole write rather than the chunks after some were written."""
    if not value.dtype.hasobject:
        return
    codec = arr.chain.array_bytes
    while isinstance(codec, ShardingCodec):  # nested, or after array->array codecs: the innermost
        codec = codec.inner.array_bytes
    check = getattr(codec, "check_values", None)
    if check is not None:
        check(value, "the values written")


def _forget_written(arr: ChunkedArray, plan: Plan) -> None:
    """Drop what this handle cached of the keys a write changed: after the store changed, so
    racing reads cannot re-cache old chunks (a stale shard index would only cost a failed
    checked read)."""
    if arr.cache is None and arr.sharding is None:
        return
    keys = _written_keys(arr, plan)
    if arr.cache is not None:
        arr.cache.invalidate(keys)
    if arr.sharding is not None:
        arr.shard_indexes.discard(keys)


def _written_keys(arr: ChunkedArray, plan: Plan) -> set[str]:
    if arr.sharding is None:
        return {arr.key(p.coords) for p in plan}
    return {arr.key(shard) for shard, _ in _shard_groups(plan, arr.sharding.chunks_per_shard)}


def _encoded(arr: ChunkedArray, chain: CodecChain, chunk: np.ndarray,
             transient: bool = False, keep: np.ndarray | None = None) -> Buffer | None:
    """The bytes to store for a chunk (or inner chunk, with the inner chain); None when it is
    the fill value and is not stored. `transient`: they are stored at once, before this thread
    encodes again (see `CodecChain.encode`). `keep` (`_kept`): the elements whose inner
    chunks are stored even when they are the fill value."""
    if keep is not None:
        if not keep.any() and is_fill(chunk, arr.fill_value):
            return None
        return chain.encode_kept(chunk, keep, transient)
    if not arr.write_empty_chunks and is_fill(chunk, arr.fill_value):
        return None
    return chain.encode(chunk, transient)


def _kept(arr: ChunkedArray, chain: CodecChain, selection: Any, old: Buffer | None = None,
          coords: tuple[int, ...] = ()) -> np.ndarray | None:
    """For a chunk of a `chain` that shards, written at `selection` (within the chunk; the
    elements within the array's bounds) over its stored bytes `old` (the chunk at `coords` of
    the grid of `chain`'s chunks): the elements whose inner chunks, at every level, stay
    stored even when they are the fill value: under write_empty_chunks those written, as
    zarr-python and TensorStore store every inner chunk a write touches; and those stored
    before that the write leaves alone. None (inner chunks equal to the fill value are left
    out, the usual case) when neither applies."""
    if not (arr.write_empty_chunks or arr.keep_stored) or \
            not isinstance(chain.array_bytes, ShardingCodec):
        return None
    shape = chain.spec.shape
    touched = np.zeros(shape, bool)
    touched[selection] = True
    keep = touched if arr.write_empty_chunks else np.zeros_like(touched)
    if old is not None:
        # Left alone: the elements within the array's bounds that the write does not touch
        # (an inner chunk across the array's edge that it touches is touched, whole).
        alone = np.zeros(shape, bool)
        alone[tuple(slice(0, max(0, min(n, size - c * n)))
                    for c, n, size in zip(coords, shape, arr.shape, strict=True))] = True
        keep |= chain.stored_mask(old) & alone & ~touched
    return keep


def _merged(chain: CodecChain, old: Buffer | None, key: str, p: ChunkProjection,
            region: np.ndarray, shape: tuple[int, ...], dtype: np.dtype, fill: Any,
            names: list[str] | None = None) -> np.ndarray:
    """A partly written chunk: the stored one (or the fill value) with `region` written in
    (into the fields `names` only, when given)."""
    chunk = _full_chunk(shape, dtype, fill) if old is None else \
        np.array(decode_chunk(chain, old, key))
    if names is None:
        chunk[p.chunk_selection] = region
    for name in names or ():  # one field's view takes any selection (numpy garbles other fields
        chunk[name][p.chunk_selection] = region[name]  # when a multi-field view takes an index)
    return chunk


def _put(store: KvStore, key: str, data: Buffer | None) -> None:
    if data is None:
        store.delete(key)
    else:
        store.set(key, data)


def _write_chunk(arr: ChunkedArray, p: ChunkProjection, region: np.ndarray) -> None:
    if p.complete:  # nothing of the old chunk survives: no read
        arr.store.replace(arr.key(p.coords), _whole_encoded(arr, p, region))
    else:
        _update_chunk(arr, p, region)


def _update_chunk(arr: ChunkedArray, p: ChunkProjection, region: np.ndarray,
                  names: list[str] | None = None) -> None:
    """Read-modify-write of a chunk under the store's lock for its key (`_merged`)."""
    key = arr.key(p.coords)
    with arr.store.lock(key):
        old = arr.store.get(key)
        keep = _kept(arr, arr.chain, p.chunk_selection, old, p.coords)
        chunk = _merged(arr.chain, old, key, p, region, arr.chunk_shape, arr.dtype,
                        arr.fill_value, names)
        _put(arr.store, key, _encoded(arr, arr.chain, chunk, True, keep))


def _inner_chunks_in_array(arr: ChunkedArray, sharding: ShardingCodec,
                           shard: tuple[int, ...]) -> int:
    """How many inner chunks of a shard overlap the array (edge shards have fewer)."""
    total = 1
    for s, n, inner, size in zip(shard, sharding.chunks_per_shard, sharding.chunk_shape,
                                 arr.shape, strict=True):
        first = s * n
        last = min(first + n, -(-size // inner))
        total *= max(last - first, 0)
    return total


def _write_sharded(arr: ChunkedArray, sharding: ShardingCodec, plan: Plan,
                   value: np.ndarray) -> None:
    cps = sharding.chunks_per_shard
    boxes, whole, partial = [], [], []
    for shard, sub in _shard_groups(plan, cps):
        region = _whole_shard_region(sharding, sub, value) if not plan.is_points else None
        if region is not None:  # no inner chunk listed: cut from the value as a view
            boxes.append((shard, sub, region))
            continue
        members = _members(shard, sub, cps)
        complete = all(p.complete for _, p in members) and \
            len(members) == _inner_chunks_in_array(arr, sharding, shard)
        (whole if complete else partial).append((shard, members))
    if len(boxes) + len(whole) >= concurrency():  # a shard per task: encoding overlaps I/O
        tasks = [(shard, functools.partial(_write_box_shard, arr, sharding, shard, region))
                 for shard, _, region in boxes]
        tasks += [(shard, functools.partial(_write_whole_shard, arr, sharding, shard, members,
                                            value)) for shard, members in whole]
        tasks.sort(key=lambda task: task[0])
        _run(arr, bounded(arr.copy_limit, lambda task: task[1]()),
             across_rows(tasks, lambda task: task[0]))
    else:  # few shards: their inner chunks are encoded in parallel
        whole += [(shard, _members(shard, sub, cps)) for shard, sub, _ in boxes]
        _write_whole_shards(arr, sharding, whole, value)
    _run(arr, bounded(arr.copy_limit, lambda g: _update_shard(arr, sharding, g[0], g[1], value)),
         partial)


def _whole_shard_region(sharding: ShardingCodec, sub: Plan, value: np.ndarray
                        ) -> np.ndarray | None:
    """The part of `value` that overwrites a whole shard, when `sub` (the selection's plan within
    the shard) is a box of all its inner chunks, none cut by the array's edge; else None."""
    box = sub.block()
    if box is None or box[1] != sharding.chunks_per_shard:
        return None
    region = value[(*box[2], ...)]  # `...`: a view even of 0-d object arrays, not the element
    shard_shape = tuple(n * c for n, c in zip(box[1], sharding.chunk_shape, strict=True))
    return region if region.shape == shard_shape else None


def _write_box_shard(arr: ChunkedArray, sharding: ShardingCodec, shard: tuple[int, ...],
                     region: np.ndarray) -> None:
    """A shard overwritten entirely by `region` (its shape), in this thread: each inner chunk,
    a view of `region`, is encoded (transient) and copied into the shard's buffer before the
    next (`ShardingCodec.pack_transient`). Listing the inner chunks' projections instead (4096
    per 128 MiB in the benchmark), and the garbage collections they set off, took as many
    py-spy samples as compressing them with blosc."""
    if sharding.inner.encodes_many and not arr.dtype.hasobject:  # the whole shard by one call
        arr.store.replace(arr.key(shard),
                          sharding.pack_region_transient(region, not arr.write_empty_chunks))
        return
    cps, inner = sharding.chunks_per_shard, sharding.chunk_shape
    ndim = len(cps)
    blocks = region.reshape([x for n, c in zip(cps, inner, strict=True) for x in (n, c)]) \
        .transpose([*range(0, 2 * ndim, 2), *range(1, 2 * ndim, 2)])

    keep = _kept(arr, sharding.inner, ...)  # (each inner chunk is written whole)

    def encoded() -> Iterator[tuple[int, Buffer]]:
        for flat, within in enumerate(np.ndindex(*cps)):
            data = _encoded(arr, sharding.inner, blocks[within], True, keep)
            if data is not None:
                yield flat, data

    arr.store.replace(arr.key(shard), sharding.pack_transient(encoded()))


def _encoded_inner(arr: ChunkedArray, sharding: ShardingCodec, p: ChunkProjection,
                   value: np.ndarray, transient: bool = False) -> Buffer | None:
    """`_encoded` for a whole inner chunk taken from the written value."""
    chunk = _chunk_from_value(p, value[p.out_selection], sharding.chunk_shape, arr.dtype,
                              arr.fill_value)
    return _encoded(arr, sharding.inner, chunk, transient,
                    _kept(arr, sharding.inner, p.chunk_selection))


def _write_whole_shard(arr: ChunkedArray, sharding: ShardingCodec, shard: tuple[int, ...],
                       members: list[Any], value: np.ndarray) -> None:
    """A shard overwritten entirely, in this thread: each inner chunk is encoded (transient) and
    copied into the shard's buffer before the next (`ShardingCodec.pack_transient`)."""
    flats = sharding.positions([within for within, _ in members])
    ordered = sorted(zip(flats, (p for _, p in members), strict=True), key=lambda item: item[0])

    def encoded() -> Iterator[tuple[int, Buffer]]:
        for flat, p in ordered:
            data = _encoded_inner(arr, sharding, p, value, transient=True)
            if data is not None:
                yield flat, data

    arr.store.replace(arr.key(shard), sharding.pack_transient(encoded()))


def _write_whole_shards(arr: ChunkedArray, sharding: ShardingCodec, shards: list[Any],
                        value: np.ndarray) -> None:
    """Shards overwritten entirely, fewer than the threads: their inner chunks are encoded in
    parallel; the old shards are never read."""
    jobs = [(si, within, p) for si, (_, members) in enumerate(shards) for within, p in members]

    def encode(job: tuple[int, tuple[int, ...], ChunkProjection]) -> Buffer | None:
        return _encoded_inner(arr, sharding, job[2], value)

    encoded = _run(arr, bounded(arr.copy_limit, encode), jobs)
    per_shard: list[dict[tuple[int, ...], Buffer]] = [{} for _ in shards]
    for (si, within, _), data in zip(jobs, encoded, strict=True):
        if data is not None:
            per_shard[si][within] = data

    def assemble(i: int) -> None:
        arr.store.replace(arr.key(shards[i][0]), _shard_bytes(sharding, per_shard[i]))

    _run(arr, bounded(arr.copy_limit, assemble), list(range(len(shards))))


def _shard_bytes(sharding: ShardingCodec, chunks: dict[tuple[int, ...], Buffer]) -> Buffer | None:
    """A shard holding `chunks`; None (delete the key) when it holds none."""
    return sharding.encode_shard(chunks) if chunks else None


def _existing_inner_chunks(sharding: ShardingCodec, key: str,
                           data: Buffer | None) -> dict[tuple[int, ...], Buffer]:
    if data is None:
        return {}
    view = memoryview(data)
    index = _decoded_index(sharding, key, sharding.index_byte_range().slice_of(view), len(view))
    chunks = {}
    pairs = index.reshape(-1, 2).tolist()  # Python ints: ~1 us less per entry than indexing
    for within, (offset, size) in zip(np.ndindex(*sharding.chunks_per_shard), pairs,
                                      strict=True):
        if offset != EMPTY:
            chunks[within] = view[offset:offset + size]
    return chunks


def _update_shard(arr: ChunkedArray, sharding: ShardingCodec, shard: tuple[int, ...],
                  members: list[Any], value: np.ndarray) -> None:
    """Read-modify-write of part of a shard, under the store's lock for the shard key.

    Inner chunks the write does not touch keep their encoded bytes unchanged. A shard whose
    inner chunks the write leaves as they were, not stored (the fill value written where none
    is), is not stored again (as TensorStore: its generation stays, for readers checking it);
    a store that stages writes stages it as unchanged (a transaction redoes it on another
    writer's change, and otherwise does not write it)."""
    key = arr.key(shard)
    inner_shape, dtype, fill = sharding.chunk_shape, arr.dtype, arr.fill_value
    with arr.store.lock(key):
        chunks = _existing_inner_chunks(sharding, key, arr.store.get(key))
        changed = False
        for within, p in members:
            region, old = value[p.out_selection], chunks.get(within)
            keep = _kept(arr, sharding.inner, p.chunk_selection, old, p.coords)
            if p.complete:
                chunk = _chunk_from_value(p, region, inner_shape, dtype, fill)
            else:
                chunk = _merged(sharding.inner, old, key, p, region, inner_shape, dtype, fill)
            encoded = _encoded(arr, sharding.inner, chunk, keep=keep)
            changed = changed or encoded is not None or old is not None
            if encoded is None:
                chunks.pop(within, None)
            else:
                chunks[within] = encoded
        if changed:
            _put(arr.store, key, _shard_bytes(sharding, chunks))
        elif arr.store.stages_writes:
            arr.store.set_unchanged(key, _shard_bytes(sharding, chunks))


def nchunks(shape: tuple[int, ...], chunks: tuple[int, ...]) -> int:
    return math.prod(-(-s // c) for s, c in zip(shape, chunks, strict=True))


def inner_chunks_stored(arr: ChunkedArray, shards: list[tuple[int, ...]]) -> int:
    """How many inner chunks within the array's bounds the stored `shards` (grid positions)
    hold (`inner_chunks_present`)."""
    if arr.sharding is None:
        return _inner_chunks_decoded(arr, shards)
    return sum(len(rows) for rows in inner_chunks_present(arr, shards))


def inner_chunks_present(arr: ChunkedArray, shards: list[tuple[int, ...]],
                         innermost: bool = False) -> list[np.ndarray]:
    """Of each shard (grid positions), the positions in the array's grid of inner chunks
    (rows of an (n, rank) array) it stores within the array's bounds; none for a shard not
    stored (deleted since it was listed). `innermost`: of the innermost level of nested
    sharding (`innermost_chunks`), and of any chain that shards; else plain sharding only.
    Of plain sharding the indexes are read on the pool, afresh, not from the handle's cache:
    a cached index is only checked when chunks are read at its offsets, so it may predate
    another writer's change; the fresh ones replace it."""
    sharding = arr.sharding
    if innermost and (sharding is None or isinstance(sharding.inner.array_bytes, ShardingCodec)):
        return _run(arr, bounded(arr.copy_limit, functools.partial(_innermost_present, arr)),
                    shards, inline=len(shards) <= 1)
    if sharding is None:
        raise TypeError("inner_chunks_present: the array is not plainly sharded")
    cps = sharding.chunks_per_shard
    grid = [-(-s // c) for s, c in zip(arr.shape, sharding.chunk_shape, strict=True)]

    def present(shard: tuple[int, ...]) -> np.ndarray:
        index, _ = _shard_index(arr, sharding, shard, fresh=True)
        if index is None:
            return np.empty((0, len(cps)), dtype=np.int64)
        # An edge shard's index also has entries for positions beyond the array's edge.
        inside = tuple(slice(0, max(0, min(n, g - s * n)))
                       for s, n, g in zip(shard, cps, grid, strict=True))
        local = np.argwhere(index[inside][..., 0] != _EMPTY)
        return local + np.asarray(shard, dtype=np.int64) * np.asarray(cps, dtype=np.int64)

    return _run(arr, bounded(arr.copy_limit, present), shards, inline=len(shards) <= 1)


def stored_sizes(store: KvStore, keys: list[str]) -> list[int]:
    """The sizes of the stored `keys` (0 for one deleted since it was listed), asked for on
    the pool: one request each on a network store, as many in flight as it wants."""
    return run_io(lambda k: store.size(k) or 0, keys, store.io_concurrency)


def _inner_chunks_decoded(arr: ChunkedArray, shards: list[tuple[int, ...]]) -> int:
    """`inner_chunks_stored` of a chain that shards behind array->array codecs or before
    bytes->bytes ones: its shards are read whole, as the index may be compressed and its
    positions are in the transposed dimensions; `shard_entries` maps them back."""
    inner = arr.inner_chunks
    if inner is None:
        raise TypeError("inner_chunks_stored: the array is not sharded")

    def count(shard: tuple[int, ...]) -> int:
        data = arr.store.get(arr.key(shard))
        if data is None:  # deleted since it was listed
            return 0
        positions = arr.chain.shard_entries(data)
        assert positions is not None  # the chain shards
        inside = tuple(slice(0, max(0, min(c, s - i * c)))
                       for i, c, s in zip(shard, arr.chunk_shape, arr.shape, strict=True))
        found = positions[inside]
        return int(np.unique(found[found >= 0]).size)

    return sum(_run(arr, bounded(arr.copy_limit, count), shards, inline=len(shards) <= 1))


def _innermost_present(arr: ChunkedArray, shard: tuple[int, ...]) -> np.ndarray:
    """`inner_chunks_present` of the innermost chunks of one shard, read whole (its index may
    be compressed, in transposed dimensions, or nested): `stored_mask` at the first element
    of each innermost chunk within the array's bounds."""
    unit = arr.innermost_chunks
    data = arr.store.get(arr.key(shard))
    if data is None or unit is None:  # deleted since it was listed
        return np.empty((0, len(arr.shape)), dtype=np.int64)
    inside = tuple(slice(0, max(0, min(c, s - i * c)), u) for i, c, s, u in
                   zip(shard, arr.chunk_shape, arr.shape, unit, strict=True))
    local = np.argwhere(arr.chain.stored_mask(data)[inside])
    per = np.asarray([c // u for c, u in zip(arr.chunk_shape, unit, strict=True)], np.int64)
    return local + np.asarray(shard, dtype=np.int64) * per

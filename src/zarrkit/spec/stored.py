"""TensorStore's `storage_statistics`: whether none (`not_stored`) or all (`fully_stored`) of
the chunks a view's elements lie in are stored.

As TensorStore's, exact: only the chunks holding elements of the view count (a strided or
indexed view skips those between), and of a sharded array its inner chunks (TensorStore's
read chunks: behind a transpose, in the array's dimensions; of nested shards, the innermost),
from the stored shards' indexes (read whole when codecs come before or after the sharding
codec, or it nests). Small regions ask for their chunks' keys; large ones list what is stored
(a sparse array's grid may have far more chunks than it stores).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ..engine import chunk_io
from .futures import StorageStatistics
from .transform import IndexDomain, IndexTransform, OutputIndexMap

#: Regions of up to this many chunks (or shards) are probed key by key; larger ones listed.
_PROBE_UP_TO = 1 << 16


def storage_statistics(base: Any, transform: IndexTransform, nonempty: bool, not_stored: bool,
                       fully_stored: bool) -> StorageStatistics:
    """The statistics asked for of the elements of `base` (an Array) `transform` (resolved
    and checked against its bounds) reads; an empty domain is both, as in TensorStore."""
    if nonempty:
        unit = base._engine.innermost_chunks or base._metadata.chunk_shape
        sets, rows = _touched(transform, unit)
        total = math.prod(len(s) for s in sets) if sets is not None else len(rows)
        count = _count_stored(base, sets, rows, total)
        none, every = count == 0, count == total
    else:
        none = every = True
    return StorageStatistics(none if not_stored else None, every if fully_stored else None)


# -- the chunks an index transform reads ------------------------------------------------------


def _touched(transform: IndexTransform, unit: tuple[int, ...]
             ) -> tuple[list[np.ndarray] | None, np.ndarray | None]:
    """The chunks (of shape `unit`) holding the elements `transform` reads: per output
    dimension its chunk indices when the dimensions are independent (the chunks are their
    product), else the distinct chunk positions (rows)."""
    inputs = [m.input_dimension for m in transform.output if m.method == "single_input_dimension"]
    independent = len(set(inputs)) == len(inputs) and all(
        m.method != "array" for m in transform.output)
    if independent:
        return [_dimension_chunks(m, transform.domain, c)
                for m, c in zip(transform.output, unit, strict=True)], None
    shape = transform.domain.shape
    coords = [np.broadcast_to(c, shape).reshape(-1) // u
              for c, u in zip(transform.output_coordinates(), unit, strict=True)]
    return None, np.unique(np.stack(coords, axis=1), axis=0)


def _dimension_chunks(m: OutputIndexMap, domain: IndexDomain, size: int) -> np.ndarray:
    if m.method == "constant":
        return np.asarray([m.offset // size])
    j = m.input_dimension
    lo, hi = domain.inclusive_min[j], domain.exclusive_max[j]
    ends = sorted((m.offset + m.stride * lo, m.offset + m.stride * (hi - 1)))
    if abs(m.stride) <= size:  # no chunk between the ends is skipped
        return np.arange(ends[0] // size, ends[1] // size + 1)
    return np.unique((m.offset + m.stride * np.arange(lo, hi, dtype=np.int64)) // size)


def _cells(sets: list[np.ndarray] | None, rows: np.ndarray | None) -> list[tuple[int, ...]]:
    if sets is not None:
        return list(itertools.product(*(s.tolist() for s in sets)))
    return [tuple(r) for r in rows.tolist()]  # type: ignore[union-attr]


def _inside(found: np.ndarray, sets: list[np.ndarray] | None, rows: np.ndarray | None) -> int:
    """How many of the distinct positions `found` (rows) are among the touched chunks."""
    if sets is not None:
        mask = np.ones(len(found), dtype=bool)
        for d, s in enumerate(sets):
            mask &= np.isin(found[:, d], s)
        return int(np.count_nonzero(mask))
    return len(set(map(tuple, found.tolist())) & set(map(tuple, rows.tolist())))  # type: ignore[union-attr]


def _as_rows(cells: Any, rank: int) -> np.ndarray:
    return np.asarray(list(cells), dtype=np.int64).reshape(-1, rank)


# -- which of them are stored -----------------------------------------------------------------


def _count_stored(base: Any, sets: list[np.ndarray] | None, rows: np.ndarray | None,
                  total: int) -> int:
    engine = base._engine
    if engine.innermost_chunks is not None:
        return _inner_stored(base, sets, rows)
    if total <= _PROBE_UP_TO:
        keys = [engine.key(c) for c in _cells(sets, rows)]
        return sum(engine.store.exists_many(keys))
    return _inside(_as_rows((c for c, _ in base._stored_chunks()), base.ndim), sets, rows)


def _inner_stored(base: Any, sets: list[np.ndarray] | None, rows: np.ndarray | None) -> int:
    """The touched inner chunks (the innermost of nested shards) the stored shards hold."""
    engine = base._engine
    per_shard = [c // u for c, u in zip(engine.chunk_shape, engine.innermost_chunks, strict=True)]
    if sets is not None:
        shard_sets: list[np.ndarray] | None = [
            np.unique(s // n) for s, n in zip(sets, per_shard, strict=True)]
        shard_rows = None
        count = math.prod(len(s) for s in shard_sets)
    else:
        shard_sets, shard_rows = None, np.unique(rows // np.asarray(per_shard), axis=0)
        count = len(shard_rows)
    if count <= _PROBE_UP_TO:
        shards = _cells(shard_sets, shard_rows)
    else:  # only the stored shards among them
        stored = _as_rows(base._stored_shards(), base.ndim)
        shards = [tuple(s) for s in stored.tolist()
                  if _inside(np.asarray([s]), shard_sets, shard_rows)]
    present = chunk_io.inner_chunks_present(engine, shards, innermost=True)
    found = np.concatenate(present) if present else _as_rows([], base.ndim)
    return _inside(found, sets, rows)

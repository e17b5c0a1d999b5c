"""Dask integration: `to_dask` (lazy reads) and `from_dask` (parallel, shard-aligned writes).

Arrays pickle as where they live and what they are (the store, their spec with its metadata,
the read-only flag), so the task graph ships to `dask.distributed` workers in other processes,
and each worker reads and writes the same store directly. Writes are split along the array's write grid (shards when the array is sharded,
chunks otherwise): no two tasks touch the same stored object, so no locking is needed between
workers and nothing is read back to be modified.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .array import Array
from .errors import SpecError
from .group import finished_after, finished_node
from .kvstore.base import KvStore

#: Default bytes per dask block when reading: big enough to amortise task overhead, small
#: enough that a few blocks per worker fit in memory.
TARGET_BLOCK_BYTES = 128 * 2**20


def _dask_array() -> Any:
    try:
        import dask.array as da
    except ImportError:
        raise ImportError("zarrkit.dask needs dask: pip install 'zarrkit[dask]'") from None
    return da


def write_grid(array: Array) -> tuple[int, ...]:
    """The block shape that maps each write to whole stored objects (shards, else chunks)."""
    return tuple(array.shards or array.chunks)


def aligned_blocks(grid: tuple[int, ...], shape: tuple[int, ...], itemsize: int,
                   target_bytes: int = TARGET_BLOCK_BYTES) -> tuple[int, ...]:
    """Multiples of `grid`, grown along the last axes first, up to about `target_bytes`."""
    block = [max(g, 1) for g in grid]
    for axis in reversed(range(len(block))):
        limit = max(shape[axis], 1)
        while block[axis] < limit and 2 * math.prod(block) * itemsize <= target_bytes:
            block[axis] = min(block[axis] * 2, -(-limit // grid[axis]) * grid[axis])
    return tuple(block)


def _graph_name(array: Array) -> str:
    from dask.base import tokenize

    # Deterministic and cheap: where the array lives and what it is, not its contents.
    return "zarrkit-" + tokenize(array.store.to_json(), array.path, array.metadata)


def to_dask(array: Array, chunks: Any = None, *, name: str | None = None) -> Any:
    """A lazy `dask.array.Array` over `array`.

    `chunks` defaults to whole shards (or chunks) merged up to ~128 MiB per block, so every
    block reads whole stored objects once.
    """
    da = _dask_array()
    if not isinstance(array, Array):
        raise SpecError(f"to_dask expects a zarrkit Array, got {type(array).__name__}")
    if chunks is None:
        chunks = aligned_blocks(write_grid(array), array.shape, array.dtype.itemsize)
    try:  # dask's own errors for bad chunks are ZeroDivisionError, ValueError, ...
        chunks = da.core.normalize_chunks(chunks, array.shape, dtype=array.dtype,
                                          previous_chunks=array.chunks)
    except (ValueError, TypeError, ZeroDivisionError) as e:
        raise SpecError(f"to_dask: invalid chunks={chunks!r} for shape {array.shape}: "
                        f"{e or type(e).__name__}") from None
    meta = np.empty((0,) * array.ndim, dtype=array.dtype)
    return da.from_array(array, chunks=chunks, name=name or _graph_name(array), lock=False,
                         asarray=True, fancy=False, inline_array=True, meta=meta)


def aligned_chunks(darr: Any, grid: tuple[int, ...]) -> tuple[int, ...]:
    """Per axis, the multiple of the grid nearest the dask array's own block size."""
    out = []
    for size, g, blocks in zip(darr.shape, grid, darr.chunks, strict=True):
        current = max(blocks) if blocks else 1
        out.append(min(max(round(current / g), 1) * g, max(-(-size // g) * g, g)))
    return tuple(out)


def from_dask(darr: Any, where: Any = None, *, path: str | None = None, chunks: Any = None,
              shards: Any = None, overwrite: bool = False, compute: bool = True,
              storage_options: dict[str, Any] | None = None, **create_kwargs: Any) -> Any:
    """Write the dask array `darr` to a new array at `where`, in parallel.

    `chunks` defaults to the dask array's block shape; `shards` makes a sharded array. The dask
    array is rechunked (if needed) so each task writes whole shards (or chunks). Keywords as for
    `zarrkit.create` (`compressors`, `fill_value`, `dimension_names`, ...). Returns the array,
    or, with `compute=False`, a `dask.delayed` object whose computation writes it.
    """
    da = _dask_array()
    if not isinstance(darr, da.Array):
        raise SpecError(f"from_dask expects a dask array, got {type(darr).__name__}")
    from .api import create

    if chunks is None:
        chunks = tuple(max(c[0], 1) if c else 1 for c in darr.chunks)
    if any(math.isnan(n) for n in darr.shape):
        raise SpecError(f"from_dask: the dask array's shape {darr.shape} is not known yet "
                        "(call compute_chunk_sizes() on it first)")
    dtype = create_kwargs.pop("dtype", darr.dtype)  # stored type; values are cast on write
    array = create(where, darr.shape, dtype, path=path, chunks=chunks, shards=shards,
                   overwrite=overwrite, storage_options=storage_options, **create_kwargs)
    grid = write_grid(array)
    if any(any(b % g for b in blocks[:-1]) for blocks, g in zip(darr.chunks, grid, strict=True)):
        darr = darr.rechunk(aligned_chunks(darr, grid))
    stored = da.store(darr, array, lock=False, compute=compute)
    if compute:
        return finished_node(array, where, storage_options=storage_options)
    if isinstance(where, KvStore):
        return stored
    import dask

    # Opened here: finished (a zip archive written) once the writes are done.
    return dask.delayed(finished_after)(stored, array, where, storage_options)

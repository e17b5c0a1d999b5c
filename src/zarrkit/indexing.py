"""Selections on a regular chunk grid.

A selection (basic numpy indexing, orthogonal `oindex`, or vectorized `vindex`) is turned into a
plan: the output shape and, per chunk touched, a `ChunkProjection` saying which part of the chunk
goes to which part of the output. The plan is computed once with numpy, so the per-chunk work that
follows is a copy, not Python arithmetic per element.
"""

from __future__ import annotations

import itertools
import math
import operator
import reprlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .errors import SelectionError, SelectionTypeError, SelectionValueError


class ChunkProjection(NamedTuple):
    """One chunk's part of a selection.

    `chunk_selection` indexes the (full-size) decoded chunk; `out_selection` indexes the output
    buffer of shape `Plan.buffer_shape`. `complete` is True when the selection covers every element
    of the chunk that lies inside the array, so a write need not read the chunk first.
    """

    coords: tuple[int, ...]
    chunk_selection: tuple[Any, ...]
    out_selection: tuple[Any, ...]
    complete: bool


@dataclass(frozen=True, slots=True)
class _DimPart:
    chunk: int
    chunk_sel: Any  # int, slice or 1-d int array
    out_sel: Any  # None (dropped dim), slice, or 1-d int array
    complete: bool


class _Dim:
    """How one dimension of a selection meets the chunk grid."""

    __slots__ = ("parts", "out_len", "flip", "is_array")

    def __init__(self, parts: list[_DimPart], out_len: int | None, flip: bool = False,
                 is_array: bool = False) -> None:
        self.parts = parts
        self.out_len = out_len  # None: the dimension is dropped (integer index)
        self.flip = flip  # negative step: read ascending, then reverse the output
        self.is_array = is_array


def _int_dim(index: Any, size: int, chunk: int, axis: int) -> _Dim:
    i = _normalize_int(index, size, axis)
    c = i // chunk
    return _Dim([_DimPart(c, i - c * chunk, None, min(chunk, size - c * chunk) == 1)], None)


def _normalize_int(index: Any, size: int, axis: int) -> int:
    i = int(index)
    if i < -size or i >= size:
        raise SelectionError(
            f"index {i} is out of bounds for axis {axis} with size {size}")
    return i + size if i < 0 else i


def _slice_indices(sl: slice, size: int, axis: int) -> tuple[int, int, int]:
    try:
        return sl.indices(size)
    except TypeError:  # a float or string bound: a TypeError, as numpy's
        raise SelectionTypeError(f"invalid slice {sl!r} for axis {axis}: bounds and step "
                                 "must be integers or None") from None
    except ValueError:  # only a zero step (a ValueError, as numpy's): others fail TypeError first
        raise SelectionValueError(f"slice step cannot be zero (axis {axis})") from None


def _slice_dim(sl: slice, size: int, chunk: int, axis: int) -> _Dim:
    start, stop, step = _slice_indices(sl, size, axis)
    n = len(range(start, stop, step))
    flip = step < 0
    if flip:  # the same elements in ascending order
        start, step = start + (n - 1) * step, -step
        stop = start + n * step if n else start
    parts = []
    if n:
        last = start + (n - 1) * step
        out_pos = 0
        # A step of a chunk or more puts each element in its own chunk: visit only those, not
        # every chunk the slice spans (a[::10**6] of a long array is a few elements).
        touched = range(start // chunk, last // chunk + 1) if step < chunk else \
            (i // chunk for i in range(start, last + 1, step))
        for c in touched:
            c0, c1 = c * chunk, min((c + 1) * chunk, size)
            first = start if c0 <= start else start + -(-(c0 - start) // step) * step
            if first >= c1 or first > last:
                continue
            end = min(last, c1 - 1)
            count = (end - first) // step + 1
            complete = step == 1 and first == c0 and end == c1 - 1
            parts.append(_DimPart(c, slice(first - c0, end - c0 + 1, step),
                                  slice(out_pos, out_pos + count), complete))
            out_pos += count
    return _Dim(parts, n, flip)


def _array_dim(index: np.ndarray, size: int, chunk: int, axis: int) -> _Dim:
    index = _as_int_index(index, size, axis)
    if index.ndim != 1:
        raise SelectionError(f"orthogonal index for axis {axis} must be 1-d")
    n = index.size
    if n == 0:
        return _Dim([], 0, is_array=True)
    chunks = index // chunk
    ascending = bool(np.all(index[1:] > index[:-1])) if n > 1 else True
    order = None if ascending else np.argsort(chunks, kind="stable")
    sorted_chunks = chunks if order is None else chunks[order]
    bounds = np.flatnonzero(np.diff(sorted_chunks)) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [n]))
    parts = []
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        c = int(sorted_chunks[s])
        if order is None:
            within = index[s:e] - c * chunk
            out_sel: Any = slice(s, e)
        else:
            positions = order[s:e]
            within = index[positions] - c * chunk
            out_sel = positions
        c_len = min(chunk, size - c * chunk)
        complete = ascending and e - s == c_len
        parts.append(_DimPart(c, within, out_sel, complete))
    return _Dim(parts, n, is_array=True)


def _index_array(index: Any) -> np.ndarray:
    """`np.asarray(index)`, an empty list as integers (numpy would make it floats, which are no
    indices); a ragged list of indices (numpy's ValueError) is a SelectionError."""
    try:
        arr = np.asarray(index)
        return arr.astype(np.intp) if not arr.size and arr.dtype == np.float64 and not \
            isinstance(index, np.ndarray) else arr
    except ValueError as e:
        raise SelectionError(f"index {reprlib.repr(index)} is not an array of indices: {e}"
                             ) from None


def _as_int_index(index: Any, size: int, axis: int) -> np.ndarray:
    arr = np.asarray(index)
    if arr.dtype == bool:
        if arr.shape != (size,) and arr.size:  # (numpy takes any empty mask: no index)
            raise SelectionError(
                f"boolean index for axis {axis} has shape {arr.shape}, expected ({size},)")
        return np.flatnonzero(arr)
    if arr.dtype.kind not in "iu":  # (not issubdtype(np.integer): timedelta64 would pass)
        raise SelectionError(f"index for axis {axis} must be integers or booleans, got {arr.dtype}")
    if arr.size == 0:
        return arr.astype(np.intp).reshape(arr.shape)
    if arr.min() < -size or arr.max() >= size:  # checked before the cast: uint64 would wrap
        bad = arr[(arr < -size) | (arr >= size)].flat[0]
        raise SelectionError(f"index {int(bad)} is out of bounds for axis {axis} with size {size}")
    arr = arr.astype(np.int64, copy=False)
    return np.where(arr < 0, arr + size, arr)


class Plan:
    """The chunks a selection touches and how to copy between chunks and the output.

    `buffer_shape` is the shape of the buffer the `out_selection`s index; `out_shape` is what the
    caller sees, reached from the buffer by `finish` (a reshape, and reversal for negative steps).
    """

    def __init__(self, dims: list[_Dim], final_shape: tuple[int, ...],
                 vectorized: tuple[np.ndarray, np.ndarray, tuple[int, ...]] | None = None,
                 chunk_shape: tuple[int, ...] = ()) -> None:
        self._dims = dims
        self._vectorized = vectorized
        self._chunk_shape = chunk_shape
        if vectorized is None:
            self.buffer_shape = tuple(d.out_len for d in dims if d.out_len is not None)
        else:
            self.buffer_shape = (len(vectorized[0]),)
        self.out_shape = final_shape
        self._front = 0  # an outer-layout axis that the caller sees first (see move_to_front)
        self._split = False  # an axis the caller sees as several (see split_axis)

    def move_to_front(self, axis: int) -> None:
        """Show output axis `axis` first: numpy's layout when an index array and integer indices
        are separated by a slice (the array's axis goes before the slices' axes)."""
        shape = self.out_shape
        self._front = axis
        self.out_shape = (shape[axis],) + shape[:axis] + shape[axis + 1:]

    def split_axis(self, axis: int, shape: tuple[int, ...]) -> None:
        """Show output axis `axis` as `shape`: numpy's layout for an n-d index array, whose
        elements are selected as one flat array."""
        self.out_shape = self.out_shape[:axis] + shape + self.out_shape[axis + 1:]
        self._split = True

    def show_as(self, shape: tuple[int, ...]) -> None:
        """Show the output as `shape`: the same elements in the same order, with axes of length 1
        added (None beside an index array)."""
        self.out_shape = shape
        self._split = True

    @property
    def nchunks_hint(self) -> int:
        """An upper bound on the number of chunks touched, without iterating the plan."""
        if self._vectorized is not None:
            return len(self._vectorized[0])
        return math.prod(len(d.parts) for d in self._dims)

    @property
    def nitems(self) -> int:
        return math.prod(self.buffer_shape)

    @property
    def as_is(self) -> bool:
        """Whether `finish` returns the buffer itself: nothing reversed, no axis moved."""
        return not self._front and self.out_shape == self.buffer_shape and \
            not any(d.flip for d in self._dims)

    @property
    def is_points(self) -> bool:
        """A vectorized (point) selection: its chunks are not a product of per-axis parts."""
        return self._vectorized is not None

    def by_block(self, chunks_per_block: tuple[int, ...]) -> list[tuple[tuple[int, ...], Plan]]:
        """The plan split into blocks of `chunks_per_block` chunks (shards): each block's grid
        coordinates with the plan of the chunks inside it, without listing any chunk here (the
        blocks' plans are iterated later, in parallel). Not for point selections."""
        if self._vectorized is not None:
            raise ValueError("point selections are not split by block")
        per_dim = []
        for d, n in zip(self._dims, chunks_per_block, strict=True):
            groups: dict[int, list[_DimPart]] = {}
            for part in d.parts:
                groups.setdefault(part.chunk // n, []).append(part)
            per_dim.append([(b, _Dim(parts, d.out_len, d.flip, d.is_array))
                            for b, parts in groups.items()])
        blocks = []
        for combo in itertools.product(*per_dim):
            sub = Plan([dim for _, dim in combo], self.out_shape, chunk_shape=self._chunk_shape)
            blocks.append((tuple(b for b, _ in combo), sub))
        return blocks

    def block(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[slice, ...]] | None:
        """When the plan covers a box of whole chunks (every dimension a run of consecutive
        complete chunks, selected by a step-1 slice): the box's first chunk, its number of chunks
        per dimension, and the output region it fills. Otherwise None."""
        if self._vectorized is not None:
            return None
        first, counts, region = [], [], []
        for d in self._dims:
            parts = d.parts
            if d.out_len is None or d.is_array or not parts or not all(p.complete for p in parts):
                return None
            if parts[-1].chunk - parts[0].chunk != len(parts) - 1:
                return None
            first.append(parts[0].chunk)
            counts.append(len(parts))
            region.append(slice(parts[0].out_sel.start, parts[-1].out_sel.stop))
        return tuple(first), tuple(counts), tuple(region)

    def partial_beyond(self, shape: tuple[int, ...], chunks: tuple[int, ...],
                       units: tuple[int, ...]) -> Plan:
        """This plan (changed in place), counting a chunk of `chunks` as written in part when
        its stored unit of `units` (the chunk, or the shard holding it) reaches beyond `shape`:
        a write then reads what the unit holds there and keeps it. Transactions need that
        (TensorStore keeps other writers' values beyond the part inside the shape); ordinary
        writes store the fill value there without a read. Points are written in part anyway."""
        if self.is_points:
            return self
        self._dims = [_Dim([_DimPart(p.chunk, p.chunk_sel, p.out_sel, False)
                            if p.complete and (p.chunk * c // u + 1) * u > n else p
                            for p in d.parts], d.out_len, d.flip, d.is_array)
                      for d, n, c, u in zip(self._dims, shape, chunks, units, strict=True)]
        return self

    def __iter__(self) -> Iterator[ChunkProjection]:
        if self._vectorized is not None:
            yield from self._iter_vectorized()
            return
        dims = self._dims
        if not dims:
            yield ChunkProjection((), (), (), True)
            return
        # numpy moves the axes of separated advanced indices (arrays, and integers beside an
        # array) to the front; an outer-product index keeps every axis in place.
        n_arrays = sum(1 for d in dims if d.is_array)
        dropped = any(d.out_len is None for d in dims)
        multi_array = n_arrays > 1 or (n_arrays == 1 and dropped)
        # Plain tuples, regrouped by zip: a few C calls per chunk (this runs once per chunk).
        parts = [[(p.chunk, p.chunk_sel, p.out_sel, p.complete) for p in d.parts] for d in dims]
        for combo in itertools.product(*parts):
            coords, chunk_sel, out_sel, complete = zip(*combo, strict=True)
            if dropped:
                out_sel = tuple(s for s in out_sel if s is not None)
            if multi_array:
                chunk_sel = _ix(chunk_sel)
                out_sel = _ix(out_sel)
            yield ChunkProjection(coords, chunk_sel, out_sel, all(complete))

    def _iter_vectorized(self) -> Iterator[ChunkProjection]:
        coords_sorted, order, _ = self._vectorized  # type: ignore[misc]
        chunk_shape = np.asarray(self._chunk_shape, dtype=np.int64)
        chunk_ids = coords_sorted // chunk_shape  # (n, ndim)
        # a new chunk wherever any coordinate changes (no flat chunk number: the grid can have
        # more chunks than an int64 counts)
        bounds = np.flatnonzero(np.any(np.diff(chunk_ids, axis=0) != 0, axis=1)) + 1
        starts = np.concatenate(([0], bounds)).tolist()
        ends = np.concatenate((bounds, [len(chunk_ids)])).tolist()
        for s, e in zip(starts, ends, strict=True):
            if s == e:
                continue
            cid = chunk_ids[s]
            within = coords_sorted[s:e] - cid * chunk_shape
            # a 0-d array has a single point: index it by integer, so chunk and value are 0-d
            out_sel = (order[s:e],) if len(cid) else (int(order[s]),)
            yield ChunkProjection(tuple(int(c) for c in cid), tuple(within.T), out_sel, False)

    def finish(self, buffer: np.ndarray) -> np.ndarray:
        """The caller's view of a filled buffer."""
        flips = tuple(slice(None, None, -1) if d.flip else slice(None)
                      for d in self._dims if d.out_len is not None)
        if any(d.flip for d in self._dims):
            buffer = buffer[flips]
        if self._front:
            buffer = np.moveaxis(buffer, self._front, 0)
        return buffer.reshape(self.out_shape)

    def prepare_value(self, value: np.ndarray) -> np.ndarray:
        """Bring a value to write into buffer layout (the inverse of `finish`)."""
        if self._front or self._split or value.shape != self.buffer_shape:
            value = np.broadcast_to(value, self.out_shape)
            b, f = self.buffer_shape, self._front
            if f:  # the caller's layout has the front axis first
                value = np.moveaxis(value.reshape((b[f],) + b[:f] + b[f + 1:]), 0, f)
            else:
                value = value.reshape(b)
        if any(d.flip for d in self._dims):
            value = value[tuple(slice(None, None, -1) if d.flip else slice(None)
                                for d in self._dims if d.out_len is not None)]
        return value


def _ix(sel: tuple[Any, ...]) -> tuple[Any, ...]:
    """Turn slices and 1-d index arrays into an outer-product (np.ix_-style) index.

    Integer entries stay scalars; they drop their axis, so they take no place in the product.
    """
    m = sum(1 for s in sel if not is_int(s))
    out: list[Any] = []
    j = 0
    for s in sel:
        if is_int(s):
            out.append(s)
            continue
        idx = s if isinstance(s, np.ndarray) else np.arange(s.start, s.stop, s.step or 1)
        shape = [1] * m
        shape[j] = idx.size
        out.append(idx.reshape(shape))
        j += 1
    return tuple(out)


# -- building plans ---------------------------------------------------------------------------

def expand_ellipsis(selection: tuple[Any, ...], ndim: int) -> tuple[Any, ...]:
    n_ell = sum(1 for s in selection if s is Ellipsis)
    if n_ell > 1:
        raise SelectionError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for s in selection if s is not Ellipsis and s is not None)
    if n_real > ndim:
        raise SelectionError(
            f"too many indices for array: array is {ndim}-dimensional, but {n_real} were indexed")
    if n_ell:
        i = next(i for i, s in enumerate(selection) if s is Ellipsis)
        fill = (slice(None),) * (ndim - n_real)
        selection = selection[:i] + fill + selection[i + 1:]
    else:
        selection = selection + (slice(None),) * (ndim - n_real)
    return selection


def as_tuple(selection: Any) -> tuple[Any, ...]:
    sel = selection if isinstance(selection, tuple) else (selection,)
    if all(type(s) in _PLAIN for s in sel):
        return sel
    # numpy reads a 0-d integer array (np.array(3), a reduction's result) as an integer, and
    # so any other object with an __index__
    return tuple(s[()] if isinstance(s, np.ndarray) and not s.ndim and is_int(s[()]) else
                 operator.index(s) if _other_index(s) else s for s in sel)


#: Indices taken as they are.
_PLAIN = frozenset({int, slice, type(None), type(Ellipsis)})


def _other_index(s: Any) -> bool:
    """An integer index of a type of its own (not numpy's, not a Python bool or int)."""
    return hasattr(type(s), "__index__") and not isinstance(s, np.ndarray | np.generic | int)


def is_int(x: Any) -> bool:
    # np.timedelta64 subclasses np.signedinteger, yet numpy takes no duration as an index
    return isinstance(x, int | np.integer) and not isinstance(x, bool | np.bool_ | np.timedelta64)


def basic_plan(selection: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> Plan:
    """numpy basic indexing: integers, slices (any step), `...` and `None` (new axes)."""
    sel = expand_ellipsis(as_tuple(selection), len(shape))
    dims: list[_Dim] = []
    final: list[int] = []
    axis = 0
    for s in sel:
        if s is None:
            final.append(1)
            continue
        size, chunk = shape[axis], chunks[axis]
        if isinstance(s, slice):
            d = _slice_dim(s, size, chunk, axis)
            final.append(d.out_len)  # type: ignore[arg-type]
        elif is_int(s):
            d = _int_dim(s, size, chunk, axis)
        else:
            raise SelectionError(
                f"unsupported index {s!r} for axis {axis}: basic indexing takes integers, "
                "slices, '...' and None; use .oindex or .vindex for arrays")
        dims.append(d)
        axis += 1
    return Plan(dims, tuple(final))


def orthogonal_plan(selection: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> Plan:
    """Outer indexing: each axis independently by integer, slice, integer array or boolean mask."""
    sel = expand_ellipsis(as_tuple(selection), len(shape))
    if any(s is None for s in sel):
        raise SelectionError("None (newaxis) is not supported in orthogonal selections")
    dims = []
    for axis, s in enumerate(sel):
        size, chunk = shape[axis], chunks[axis]
        if isinstance(s, slice):
            dims.append(_slice_dim(s, size, chunk, axis))
        elif is_int(s):
            dims.append(_int_dim(s, size, chunk, axis))
        elif isinstance(s, list | np.ndarray):
            dims.append(_array_dim(_index_array(s), size, chunk, axis))
        else:
            raise SelectionError(f"unsupported orthogonal index {s!r} for axis {axis}")
    final = tuple(d.out_len for d in dims if d.out_len is not None)
    return Plan(dims, final)  # type: ignore[arg-type]


def numpy_plan(selection: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> Plan:
    """Any selection numpy's `[]` takes, with numpy's result, by the cheapest plan: basic
    indices; a mask of the whole array, or index arrays among integers only, as points; other
    forms with index arrays by `_advanced_plan`."""
    sel = as_tuple(selection)
    # a tuple of types, built once: a union built per element cost the basic path ~0.7 us
    if not any(isinstance(s, _ADVANCED) for s in sel):
        return basic_plan(sel, shape, chunks)
    sel = tuple(_index_array(s) if isinstance(s, _ADVANCED) else s for s in sel)
    arrays = [s for s in sel if isinstance(s, np.ndarray)]
    if len(sel) == 1 and arrays[0].dtype == bool \
            and arrays[0].ndim == len(shape) != 1:  # a mask of the n-d or 0-d array
        return vectorized_plan(sel, shape, chunks)
    # Boolean scalars, all True, among basic indices are a new axis of length 1: a
    # basic plan. The point plan held ndim int64 coordinates per element of the array
    # (`z[True]` of a 400x400x50 int8 array: 1.9 s and 640 MiB, against 6 ms and 8 MiB for
    # `z[None]`). A False selects nothing, so its point plan is empty and cheap.
    if all(a.dtype == bool and not a.ndim and a for a in arrays) \
            and all(isinstance(s, np.ndarray | slice) or s is None or s is Ellipsis or is_int(s)
                    for s in sel):
        return _true_scalars_plan(sel, shape, chunks)
    # masks other than 1-d index other than one axis each: not a case for expand_ellipsis
    if len(arrays) > 1 and all(a.dtype != bool or a.ndim == 1 for a in arrays):
        full = expand_ellipsis(sel, len(shape))
        # only arrays and integers (numpy broadcasts them together): a point selection
        if all(isinstance(s, np.ndarray) or is_int(s) for s in full):
            return vectorized_plan(full, shape, chunks)
    return _advanced_plan(sel, shape, chunks)


#: numpy's advanced indices: index arrays, lists, tuples and ranges, boolean scalars.
_ADVANCED = (list, np.ndarray, tuple, range, bool, np.bool_)


def _advanced_plan(selection: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> Plan:
    """Index arrays (or index lists, tuples, ranges, boolean scalars) among other indices, as
    numpy's `[]` reads them, for the forms that are not a plain point selection: one integer
    array or 1-d mask among integers and slices is an orthogonal plan (`_one_array_plan`), any
    other form a general point plan (`mixed_plan`)."""
    sel = _with_arrays(as_tuple(selection))
    arrays = [s for s in sel if isinstance(s, np.ndarray)]
    if len(arrays) == 1 and (arrays[0].dtype != bool or arrays[0].ndim == 1):
        return _one_array_plan(sel, shape, chunks)
    return mixed_plan(sel, shape, chunks)


#: What numpy reads as index arrays besides ndarrays: lists, tuples and ranges of indices, and
#: boolean scalars (0-d masks).
_ARRAY_LIKE = (list, tuple, range, bool, np.bool_)


def _with_arrays(sel: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(_index_array(s) if isinstance(s, _ARRAY_LIKE) else s for s in sel)


def _true_scalars_plan(selection: tuple[Any, ...], shape: tuple[int, ...],
                       chunks: tuple[int, ...]) -> Plan:
    """Boolean scalars, all True, among basic indices, as numpy reads them: the scalars and
    the integers are advanced indices broadcasting to one axis of length 1, in their place when
    adjacent and first otherwise; that is the basic selection with the scalars dropped and one
    None there."""
    advanced = [i for i, s in enumerate(selection) if isinstance(s, np.ndarray) or is_int(s)]
    at = advanced[0] if advanced[-1] - advanced[0] + 1 == len(advanced) else 0
    rest = [s for s in selection if not isinstance(s, np.ndarray)]
    before = sum(1 for s in selection[:at] if not isinstance(s, np.ndarray))
    return basic_plan(tuple(rest[:before]) + (None,) + tuple(rest[before:]), shape, chunks)


def _one_array_plan(selection: tuple[Any, ...], shape: tuple[int, ...],
                    chunks: tuple[int, ...]) -> Plan:
    """One index array (integers or a 1-d mask) among integers and slices, as numpy reads it:
    an orthogonal selection, except that the array's axis comes first when it and the integer
    indices are not adjacent (numpy puts the axes of separated advanced indices first).

    None (new axes) are taken too (they went to the point plan, which holds ndim
    int64 coordinates per selected element: `z[None, idx]` took 200 times the time and 80 times
    the memory of `z[idx]`): the plan of the selection without them, shown with their axes of
    length 1 in numpy's layout."""
    full = expand_ellipsis(selection, len(shape))
    sel = tuple(s for s in full if s is not None)
    array_at = next(i for i, s in enumerate(sel) if isinstance(s, list | np.ndarray))
    index = np.asarray(sel[array_at])
    if index.dtype != bool and index.ndim > 1:  # selected flat, shown in its shape
        sel = sel[:array_at] + (index.reshape(-1),) + sel[array_at + 1:]
    plan = orthogonal_plan(sel, shape, chunks)
    at = sum(1 for s in sel[:array_at] if isinstance(s, slice))  # the array's output axis
    # judged before `...` is expanded: numpy separates advanced indices by a `...` of no axes too
    # (and by None)
    advanced = [i for i, s in enumerate(selection)
                if not isinstance(s, slice) and s is not ... and s is not None]
    adjacent = advanced[-1] - advanced[0] + 1 == len(advanced)
    if not adjacent:
        plan.move_to_front(at)
        at = 0
    if index.dtype != bool and index.ndim > 1:
        plan.split_axis(at, index.shape)
    if len(sel) != len(full):  # numpy's layout: the basic axes (slices and None) in order, the
        # advanced block (the array's axes) where the first advanced index is, or first
        new_axis = [s is None for s in full if s is None or isinstance(s, slice)]
        first = next(i for i, s in enumerate(full) if not isinstance(s, slice) and s is not None)
        block_at = sum(1 for s in full[:first] if s is None or isinstance(s, slice)) \
            if adjacent else 0
        n_block = index.ndim if index.dtype != bool else 1
        layout = new_axis[:block_at] + [False] * n_block + new_axis[block_at:]
        shown = iter(plan.out_shape)
        plan.show_as(tuple(1 if new else next(shown) for new in layout))
    return plan


def vectorized_plan(selection: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> Plan:
    """Point (coordinate) selection with broadcasting, or a boolean mask of the array's shape."""
    return _listing_points(_vectorized_plan, as_tuple(selection), shape, chunks)


def _vectorized_plan(sel: tuple[Any, ...], shape: tuple[int, ...],
                     chunks: tuple[int, ...]) -> Plan:
    if len(sel) == 1 and _index_array(sel[0]).dtype == bool:
        mask = _index_array(sel[0])
        if mask.shape != tuple(shape):
            raise SelectionError(
                f"boolean mask has shape {mask.shape}, expected the array's shape {tuple(shape)}")
        if not mask.ndim:  # as numpy: the one element of a 0-d array, or nothing
            n = int(mask)
            return Plan([], (n,), (np.zeros((n, 0), np.int64), np.arange(n), ()), ())
        sel = tuple(np.nonzero(mask))
    if len(sel) != len(shape):
        raise SelectionError(
            f"vectorized selection needs one index array per dimension ({len(shape)}), "
            f"got {len(sel)}")
    arrays = []
    for axis, s in enumerate(sel):
        if isinstance(s, slice):
            raise SelectionError("slices are not supported in vectorized selections; use oindex")
        arrays.append(np.asarray(_as_int_index(_index_array(s), shape[axis], axis)))
    try:
        arrays = np.broadcast_arrays(*arrays)
    except ValueError as e:
        raise SelectionError(f"vectorized index arrays do not broadcast together: {e}") from None
    out_shape = arrays[0].shape if arrays else ()
    coords = np.stack([a.ravel() for a in arrays], axis=1).astype(np.int64) if arrays else \
        np.zeros((1, 0), np.int64)
    return _point_plan(coords, out_shape, shape, chunks)


def _point_plan(coords: np.ndarray, out_shape: tuple[int, ...], shape: tuple[int, ...],
                chunks: tuple[int, ...]) -> Plan:
    """The plan reading `coords` (n, ndim) in C order of `out_shape`."""
    grid = tuple(-(-s // c) for s, c in zip(shape, chunks, strict=True))
    if coords.shape[0] and len(shape):
        # chunk by chunk in C order; lexsort is stable, so repeated points keep their order
        order = np.lexsort((coords // np.asarray(chunks)).T[::-1])
    else:
        order = np.arange(coords.shape[0])
    return Plan([], tuple(out_shape), (coords[order], order, grid), tuple(chunks))


class _Advanced(NamedTuple):
    """An advanced index: `coords` (one array per axis it indexes, from `axis` on) broadcast
    with the others to `shape`; `pos` is its place in the selection."""

    pos: int
    axis: int
    coords: tuple[Any, ...]
    shape: tuple[int, ...]


class _Basic(NamedTuple):
    """A slice (`axis` its array axis) or None (`axis` None): an output axis of its own."""

    pos: int
    axis: int | None
    values: range  # the indices it selects
    index: slice | None = None  # the slice (None for a new axis)


def mixed_plan(selection: Any, shape: tuple[int, ...], chunks: tuple[int, ...]) -> Plan:
    """Any selection numpy's `[]` takes, as a point plan in numpy's layout: the advanced indices
    (index arrays, a k-d mask as its k nonzero() arrays, boolean scalars as a new axis of length
    1 or 0, integers) broadcast together to a block of axes B, in their place when they are
    adjacent in the selection and first otherwise; each slice and None is an axis of its own.
    It reads only the selected elements, but holds ndim int64 coordinates per element: meant
    for the forms the per-axis plans cannot express (`_SlicedPoints` holds those of the
    advanced indices' axes only, when there are slices)."""
    return _listing_points(_mixed_plan, as_tuple(selection), shape, chunks)


def _listing_points(plan: Any, sel: tuple[Any, ...], shape: tuple[int, ...],
                    chunks: tuple[int, ...]) -> Plan:
    """`plan(sel, shape, chunks)`, numpy's errors for more points than memory holds as a
    SelectionError saying what to do."""
    try:
        return plan(sel, shape, chunks)
    except (MemoryError, OverflowError) as e:  # coordinates of billions of elements
        raise SelectionError(f"this selection has too many elements to list as points "
                             f"({type(e).__name__}): select index arrays with .oindex (each "
                             "axis on its own), or in smaller parts") from None
    except ValueError as e:
        if "too big" not in str(e) and "maximum supported dimension" not in str(e):
            raise
        raise SelectionError(f"this selection has too many elements to list as points ({e}): "
                             "select index arrays with .oindex, or in smaller parts") from None


def _mixed_plan(selection: tuple[Any, ...], shape: tuple[int, ...],
                chunks: tuple[int, ...]) -> Plan:
    advanced, basic = _split_selection(selection, shape)
    try:
        block = np.broadcast_shapes(*(a.shape for a in advanced))
    except ValueError:
        shapes = " ".join(str(a.shape) for a in advanced if a.shape)
        raise SelectionError(f"index arrays do not broadcast together: shapes {shapes}") from None
    positions = [a.pos for a in advanced]
    adjacent = not positions or positions[-1] - positions[0] + 1 == len(positions)
    at = sum(1 for b in basic if b.pos < positions[0]) if adjacent and positions else 0
    lens = [len(b.values) for b in basic]
    out_shape = tuple(lens[:at]) + block + tuple(lens[at:])
    if advanced and all(a.coords for a in advanced) and any(b.axis is not None for b in basic):
        return _SlicedPoints(advanced, basic, block, adjacent, out_shape, shape, chunks)
    coords = np.empty(out_shape + (len(shape),), np.int64)
    after = (None,) * (len(basic) - at)
    for a in advanced:
        for k, c in enumerate(a.coords):  # B's axes at `at`, right-aligned as broadcasting does
            c = np.asarray(c).reshape((1,) * (len(block) - np.ndim(c)) + np.shape(c))
            coords[..., a.axis + k] = c[(None,) * at + (...,) + after]
    for j, b in enumerate(basic):
        if b.axis is not None:
            out_axis, r = (j if j < at else j + len(block)), b.values
            coords[..., b.axis] = np.arange(r.start, r.stop, r.step).reshape(
                [-1 if i == out_axis else 1 for i in range(len(out_shape))])
    return _point_plan(coords.reshape(math.prod(out_shape), len(shape)), out_shape, shape,
                       chunks)


class _SlicedPoints(Plan):
    """Points over some axes (the advanced indices' axes A, their coordinates broadcast to the
    block B) by slices over the others, as numpy reads it: per chunk, the points inside it on
    A, by each slice's part of the chunk on the other axes. It holds |A| int64 per point, not
    ndim per element (`z[:, mask2d]` of a 100x500x500 array: 5.3 s and 860 MiB as points).

    The buffer puts B flattened where numpy puts the points' axis in a chunk's result: at the
    first of A when A's axes are consecutive, else first; `finish` moves it to numpy's place
    for the selection, splits it into B and adds the None axes."""

    def __init__(self, advanced: list[_Advanced], basic: list[_Basic], block: tuple[int, ...],
                 adjacent: bool, out_shape: tuple[int, ...], shape: tuple[int, ...],
                 chunks: tuple[int, ...]) -> None:
        self._axes = [a.axis + k for a in advanced for k in range(len(a.coords))]
        columns = [np.broadcast_to(np.asarray(c).reshape(
            (1,) * (len(block) - np.ndim(c)) + np.shape(c)), block).ravel()
            for a in advanced for c in a.coords]
        points = np.stack(columns, axis=1).astype(np.int64).reshape(-1, len(self._axes))
        self._chunk_of = np.asarray([chunks[x] for x in self._axes], np.int64)
        cells = points // self._chunk_of
        # cell by cell in C order; lexsort is stable, so repeated points keep their order
        self._order = np.lexsort(cells.T[::-1]) if len(points) else np.arange(0)
        self._points, self._cells = points[self._order], cells[self._order]
        bounds = np.flatnonzero(np.any(np.diff(self._cells, axis=0) != 0, axis=1)) + 1
        self._starts = [0, *bounds.tolist()] if len(points) else []  # a cell's first point
        sliced = [b for b in basic if b.axis is not None]
        self._sliced = [b.axis for b in sliced]
        consecutive = self._axes[-1] - self._axes[0] + 1 == len(self._axes)
        self._at = sum(1 for x in self._sliced if x < self._axes[0]) if consecutive else 0
        dims = [_slice_dim(b.index, shape[b.axis], chunks[b.axis], b.axis) for b in sliced]
        dims.insert(self._at, _Dim([], len(points)))
        super().__init__(dims, out_shape)
        # Adjacent in the selection, B is where the buffer has it (A's axes are consecutive and
        # the sliced axes before them are the basic indices before it); else numpy puts it first.
        self._front = 0 if adjacent else self._at
        self._split = True  # B flattened, no None axes: the caller's shape differs

    @property
    def nchunks_hint(self) -> int:
        return len(self._starts) * math.prod(
            len(d.parts) for i, d in enumerate(self._dims) if i != self._at)

    @property
    def is_points(self) -> bool:
        return True

    def __iter__(self) -> Iterator[ChunkProjection]:
        ndim = len(self._axes) + len(self._sliced)
        parts = [[(p.chunk, p.chunk_sel, p.out_sel) for p in d.parts]
                 for i, d in enumerate(self._dims) if i != self._at]
        for s, e in zip(self._starts, [*self._starts[1:], len(self._cells)], strict=True):
            cell = self._cells[s]
            within = (self._points[s:e] - cell * self._chunk_of).T
            coords, chunk_sel = [0] * ndim, [None] * ndim
            for x, c, w in zip(self._axes, cell.tolist(), within, strict=True):
                coords[x], chunk_sel[x] = c, w
            taken = self._order[s:e]
            for combo in itertools.product(*parts):
                for x, (c, sel, _) in zip(self._sliced, combo, strict=True):
                    coords[x], chunk_sel[x] = c, sel
                out_sel = [o for _, _, o in combo]
                out_sel.insert(self._at, taken)
                yield ChunkProjection(tuple(coords), tuple(chunk_sel), tuple(out_sel), False)


def _split_selection(sel: tuple[Any, ...], shape: tuple[int, ...]
                     ) -> tuple[list[_Advanced], list[_Basic]]:
    """The advanced and basic indices of `sel`, bounds checked, in selection order."""
    sel = _with_arrays(sel)
    fill = _ellipsis_fill(sel, len(shape))
    advanced: list[_Advanced] = []
    basic: list[_Basic] = []
    axis = 0
    for pos, s in enumerate(sel):
        if s is None:
            basic.append(_Basic(pos, None, range(1)))
        elif s is Ellipsis:
            for _ in range(fill):
                basic.append(_Basic(pos, axis, range(shape[axis]), slice(None)))
                axis += 1
        elif isinstance(s, slice):
            basic.append(_Basic(pos, axis, range(*_slice_indices(s, shape[axis], axis)), s))
            axis += 1
        elif is_int(s):
            advanced.append(_Advanced(pos, axis, (_normalize_int(s, shape[axis], axis),), ()))
            axis += 1
        elif isinstance(s, np.ndarray) and s.dtype == bool:
            advanced.append(_mask_index(pos, s, shape, axis))
            axis += s.ndim
        elif isinstance(s, np.ndarray):
            index = _as_int_index(s, shape[axis], axis)
            advanced.append(_Advanced(pos, axis, (index,), index.shape))
            axis += 1
        else:
            raise SelectionError(
                f"unsupported index {s!r} for axis {axis}: numpy indexing takes integers, "
                "slices, '...', None, and integer or boolean arrays")
    for rest in range(axis, len(shape)):  # the axes not indexed: whole, after the others
        basic.append(_Basic(len(sel), rest, range(shape[rest]), slice(None)))
    return advanced, basic


def _ellipsis_fill(sel: tuple[Any, ...], ndim: int) -> int:
    """How many axes `...` stands for, where a k-d mask indexes k axes and None or a boolean
    scalar none."""
    if sum(1 for s in sel if s is Ellipsis) > 1:
        raise SelectionError("an index can only have a single ellipsis ('...')")
    used = sum(s.ndim if isinstance(s, np.ndarray) and s.dtype == bool else
               0 if s is None or s is Ellipsis else 1 for s in sel)
    if used > ndim:
        raise SelectionError(
            f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed")
    return ndim - used


def _mask_index(pos: int, mask: np.ndarray, shape: tuple[int, ...], axis: int) -> _Advanced:
    """A k-d mask over axes axis..axis+k-1: k index arrays; a 0-d one indexes no axis and
    selects along a new one of length 1 (True) or 0 (False)."""
    if not mask.ndim:
        return _Advanced(pos, axis, (), (int(mask),))
    expected = tuple(shape[axis:axis + mask.ndim])
    if mask.shape != expected and mask.size:  # (numpy takes any empty mask: no index)
        axes = f"axis {axis}" if mask.ndim == 1 else f"axes {axis}-{axis + mask.ndim - 1}"
        raise SelectionError(
            f"boolean index for {axes} has shape {mask.shape}, expected {expected}")
    nonzero = np.nonzero(mask)
    return _Advanced(pos, axis, nonzero, nonzero[0].shape)


def chunk_region(coords: tuple[int, ...], chunks: tuple[int, ...],
                 shape: tuple[int, ...]) -> tuple[slice, ...]:
    """The array region of a chunk, clipped to the array."""
    return tuple(slice(c * n, min((c + 1) * n, s)) for c, n, s in zip(coords, chunks, shape,
                                                                        strict=True))

"""zarr-python's named selection methods (`get_basic_selection`, ..., `blocks`) for `Array`.

Each method checks that its selection is of the kind the name promises, then reads or writes
through `array[...]`, `.oindex` or `.vindex`, so these share the indexers' paths (locks, read-only
checks). Block indices address the grid of stored chunks: the shards of a sharded array, as in
zarr-python.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.recfunctions import repack_fields

from .errors import SelectionError
from .indexing import as_tuple, expand_ellipsis, is_int

Fields = str | Sequence[str]


class SelectionMethods:
    """Mixin of `Array`. Uses only `self[...]`, `oindex`, `vindex`, `shape`, `dtype`, `chunks`,
    `shards`, and `_read_into` (`out=`) and `_set_fields` (`fields=` writes) of the array and
    its indexers, and the array's `_follow_resize` (block and mask writes)."""

    # -- reading ---------------------------------------------------------------------------------
    def get_basic_selection(self, selection: Any = Ellipsis, *, out: Any = None,
                            fields: Fields | None = None, prototype: Any = None) -> Any:
        """Read integers, slices and `...` (no index arrays), as `array[selection]`."""
        return self._get(lambda into: self._read_into(_basic(selection), into), out, fields,
                         prototype)

    def get_orthogonal_selection(self, selection: Any, *, out: Any = None,
                                 fields: Fields | None = None, prototype: Any = None) -> Any:
        """Read an outer selection (each axis on its own), as `array.oindex[selection]`."""
        return self._get(lambda into: self.oindex._read_into(selection, into), out, fields,
                         prototype)

    def get_coordinate_selection(self, selection: Any, *, out: Any = None,
                                 fields: Fields | None = None, prototype: Any = None) -> Any:
        """Read points, one integer array per axis; the result has their broadcast shape."""
        return self._get(lambda into: _at_least_1d(self.vindex._read_into(
            _coordinates(selection, self.shape), into)), out, fields, prototype)

    def get_mask_selection(self, mask: Any, *, out: Any = None, fields: Fields | None = None,
                           prototype: Any = None) -> Any:
        """Read the elements where a boolean `mask` of the array's shape is True (C order)."""
        return self._get(lambda into: self.vindex._read_into(_mask(mask, self.shape), into),
                         out, fields, prototype)

    def get_block_selection(self, selection: Any, *, out: Any = None,
                            fields: Fields | None = None, prototype: Any = None) -> Any:
        """Read whole blocks of the chunk grid (shards when sharded), by block index or slice."""
        return self._get(lambda into: self._read_into(self._block_region(selection), into),
                         out, fields, prototype)

    @property
    def blocks(self) -> BlockIndexer:
        """Block indexing: `a.blocks[i, j]` and `a.blocks[i, j] = v` (see get_block_selection)."""
        return BlockIndexer(self)

    # -- writing ---------------------------------------------------------------------------------
    def set_basic_selection(self, selection: Any, value: Any, *, fields: Fields | None = None,
                            prototype: Any = None) -> None:
        """Write integers, slices and `...` (no index arrays), as `array[selection] = value`."""
        self._set(self, _basic(selection), value, fields, prototype)

    def set_orthogonal_selection(self, selection: Any, value: Any, *,
                                 fields: Fields | None = None, prototype: Any = None) -> None:
        """Write an outer selection, as `array.oindex[selection] = value`."""
        self._set(self.oindex, selection, value, fields, prototype)

    def set_coordinate_selection(self, selection: Any, value: Any, *,
                                 fields: Fields | None = None, prototype: Any = None) -> None:
        """Write points, one integer array per axis; `value` broadcasts to their shape."""
        self._set(self.vindex, _coordinates(selection, self.shape), value, fields, prototype)

    def set_mask_selection(self, mask: Any, value: Any, *, fields: Fields | None = None,
                           prototype: Any = None) -> None:
        """Write the elements where a boolean `mask` of the array's shape is True."""
        self._follow_resize()  # the stored shape, as `vindex[mask] = value` checks it against
        self._set(self.vindex, _mask(mask, self.shape), value, fields, prototype)

    def set_block_selection(self, selection: Any, value: Any, *, fields: Fields | None = None,
                            prototype: Any = None) -> None:
        """Write whole blocks of the chunk grid (shards when sharded)."""
        # Blocks of the stored shape, as other writes are planned against it: cut to the shape
        # of a handle that missed another's resize, a block was written in part.
        self._follow_resize()
        self._set(self, self._block_region(selection), value, fields, prototype)

    # -- helpers ---------------------------------------------------------------------------------
    def _set(self, target: Any, selection: Any, value: Any, fields: Fields | None,
             prototype: Any) -> None:
        """`target[selection] = value` (target: the array or one of its indexers); with
        `fields`, only those fields of the selected records are written, the others kept."""
        _check_prototype(prototype)
        if fields is None:
            target[selection] = value
            return
        names = _field_names(self.dtype, fields)
        target._set_fields(selection, value, [names] if isinstance(names, str) else names)

    def _get(self, read: Callable[[np.ndarray | None], Any], out: Any, fields: Fields | None,
             prototype: Any) -> Any:
        """Check the options before reading (a bad one costs no I/O), then apply them. `read`
        decodes straight into `out` when it can (`_read_into`), else returns a result to copy."""
        _check_prototype(prototype)
        names = _field_names(self.dtype, fields)
        target = _out_array(out)
        result = read(target if names is None else None)
        if names is not None:
            result = _pick_fields(result, names)
        return result if target is None else _fill(target, result)

    def _block_region(self, selection: Any) -> tuple[slice, ...]:
        """The array region (slices, clipped to the shape) of a block selection."""
        grid = self.shards or self.chunks
        sel = as_tuple(selection)
        if any(s is None for s in sel):  # expand_ellipsis would keep it as a new axis
            raise SelectionError("a block selection takes integers and slices, not None")
        sel = expand_ellipsis(sel, len(self.shape))
        return tuple(_block_span(s, n, c, axis)
                     for axis, (s, n, c) in enumerate(zip(sel, self.shape, grid, strict=True)))


class BlockIndexer:
    """`array.blocks`: `[...]` reads and `[...] = v` writes a block selection."""

    __slots__ = ("_array",)

    def __init__(self, array: SelectionMethods) -> None:
        self._array = array

    def __getitem__(self, selection: Any) -> Any:
        return self._array.get_block_selection(selection)

    def __setitem__(self, selection: Any, value: Any) -> None:
        self._array.set_block_selection(selection, value)


# -- selection checks -------------------------------------------------------------------------

def pop_fields(selection: Any, dtype: np.dtype) -> tuple[Fields | None, Any]:
    """The field names in a selection (numpy's `a["x"]` and `a[["x", "y"]]`, zarr-python's
    `a[0:2, "x"]`: strings anywhere in it, or a list of them) and the selection without them.
    Only of a structured data type: elsewhere a string is an index the indexers refuse."""
    if dtype.names is None:
        return None, selection
    if isinstance(selection, str):
        return selection, ()
    if isinstance(selection, list) and selection and all(isinstance(s, str) for s in selection):
        return selection, ()
    # (a cheap test first: this runs on every `a[...]`)
    if type(selection) is not tuple or not any(isinstance(s, str | list) for s in selection):
        return None, selection
    names = [s for s in selection if isinstance(s, str) or _names(s)]
    if not names:
        return None, selection
    if len(names) > 1:
        raise SelectionError(f"a selection names its fields once, got {names}")
    return names[0], tuple(s for s in selection if s is not names[0])


def _names(s: Any) -> bool:
    return isinstance(s, list) and bool(s) and all(isinstance(n, str) for n in s)


def _basic(selection: Any) -> tuple[Any, ...]:
    sel = as_tuple(selection)
    for s in sel:
        if not (s is Ellipsis or isinstance(s, slice) or is_int(s)):
            raise SelectionError(f"a basic selection takes integers, slices and '...', not "
                                 f"{_kind(s)}; use the orthogonal, coordinate or mask methods")
    return sel


def _coordinates(selection: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    sel = as_tuple(selection)
    if len(sel) != len(shape):
        raise SelectionError(f"a coordinate selection takes one integer array per dimension "
                             f"({len(shape)}), got {len(sel)} items")
    for axis, s in enumerate(sel):
        if is_int(s):
            continue
        kind = np.asarray(s).dtype.kind if isinstance(s, list | np.ndarray) else None
        # an empty list is float to numpy, yet selects nothing
        if kind not in ("i", "u") and not (kind and np.size(s) == 0):
            raise SelectionError(f"a coordinate selection takes integers or integer arrays, not "
                                 f"{_kind(s)} (axis {axis}); use get_mask_selection for masks")
    return sel


def _mask(mask: Any, shape: tuple[int, ...]) -> np.ndarray:
    sel = as_tuple(mask)  # zarr-python also takes the mask wrapped in a 1-tuple
    m = np.asarray(sel[0]) if len(sel) == 1 else None
    if m is None or m.dtype != bool or m.shape != tuple(shape):
        got = f"{m.dtype} array of shape {m.shape}" if m is not None else f"{len(sel)} items"
        raise SelectionError(f"a mask selection takes one boolean array of the array's shape "
                             f"{tuple(shape)}, got {got}")
    return m


def _block_span(index: Any, size: int, chunk: int, axis: int) -> slice:
    """One axis of a block selection in array coordinates (an integer keeps its axis)."""
    count = -(-size // chunk)
    if is_int(index):
        first = _block_number(index, count, axis)
        return slice(first * chunk, min((first + 1) * chunk, size))
    if not isinstance(index, slice):
        raise SelectionError(f"a block selection takes integers and slices, not {_kind(index)} "
                             f"(axis {axis})")
    if index.step is not None and not (is_int(index.step) and index.step == 1):
        raise SelectionError(f"block slices take no step but 1, got {index.step!r} (axis {axis})")
    # As zarr-python: a given start must name an existing block; the stop is clipped.
    first = 0 if index.start is None else _block_number(index.start, count, axis)
    stop = count if index.stop is None else _wrap(index.stop, count, axis)
    stop = min(max(stop, first), count)
    return slice(first * chunk, min(stop * chunk, size))


def _block_number(index: Any, count: int, axis: int) -> int:
    i = _wrap(index, count, axis)
    if not 0 <= i < count:
        raise SelectionError(f"block index {index} is out of range for axis {axis} with "
                             f"{count} blocks")
    return i


def _wrap(index: Any, count: int, axis: int) -> int:
    if not is_int(index):
        raise SelectionError(f"block slice bounds must be integers, got {_kind(index)} "
                             f"(axis {axis})")
    return int(index) + count if index < 0 else int(index)


def _kind(s: Any) -> str:
    return "None" if s is None else type(s).__name__


def _at_least_1d(result: Any) -> Any:
    """zarr-python shows points given as scalars as a list of one point."""
    return np.reshape(result, (1,)) if np.ndim(result) == 0 else result


# -- options ----------------------------------------------------------------------------------

def _check_prototype(prototype: Any) -> None:
    if prototype is not None:
        raise SelectionError("prototype= (zarr-python's buffer prototype) is not supported: "
                             "zarrkit reads into numpy arrays")


def _field_names(dtype: np.dtype, fields: Fields | None) -> str | list[str] | None:
    if fields is None:
        return None
    if not dtype.names:
        raise SelectionError(f"fields= needs a structured data type, not {dtype}")
    names = [fields] if isinstance(fields, str) else list(fields)
    missing = [n for n in names if n not in dtype.names]
    if not names or missing:
        raise SelectionError(f"fields {missing or names} are not among the data type's fields "
                             f"{list(dtype.names)}")
    if len(set(names)) != len(names):
        raise SelectionError(f"fields {names} name a field more than once")
    return fields if isinstance(fields, str) else names


def _pick_fields(result: Any, names: str | list[str]) -> Any:
    """The fields as a compact array (a view would keep every record alive): one field in its
    own data type, several as a packed structure in the order given."""
    picked = np.asarray(result)[names]
    picked = picked.copy() if isinstance(names, str) else repack_fields(picked)
    return picked[()] if picked.ndim == 0 else picked


def _out_array(out: Any) -> np.ndarray | None:
    if out is None:
        return None
    if not isinstance(out, np.ndarray) and callable(getattr(out, "as_ndarray_like", None)):
        out = out.as_ndarray_like()  # a zarr-python NDBuffer, which its methods require
    if not isinstance(out, np.ndarray):
        raise SelectionError(f"out= must be a numpy array, got {type(out).__name__}")
    if not out.flags.writeable:
        raise SelectionError("out= is a read-only array")
    return out


def _fill(out: np.ndarray, result: Any) -> Any:
    if result is out:  # read into it
        return out
    if out.shape != np.shape(result):
        raise SelectionError(f"out= has shape {out.shape}, the selection {np.shape(result)}")
    try:
        out[...] = result
    except (TypeError, ValueError) as e:
        raise SelectionError(f"cannot store the selection in out= of data type "
                             f"{out.dtype}: {e}") from None
    return out[()] if out.ndim == 0 else out

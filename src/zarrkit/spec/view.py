"""Lazy views of an array: an index transform on top of the eager numpy indexing.

`View` composes TensorStore's operations (`[...]`, `.oindex`, `.vindex`, `.translate_to`,
`.translate_by`, `.label`, `.T`, `.transpose`) without touching data; `read()` and `write()`
return `concurrent.futures.Future`s. Executing a view computes the equivalent selection on the
base array: a basic (slice/integer) selection when every output dimension is a constant or a
strided input dimension used once, otherwise point (vindex) selection of the broadcast
coordinates.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import SelectionError
from .transform import IndexDomain, IndexTransform, OutputIndexMap, certainly_empty

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    """A small pool for futures; its threads are not engine threads, so the engine still
    parallelizes the chunk work a read or write submits from them."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(4, thread_name_prefix="zkview")
        return _pool


class View:
    """A lazily indexed region of an array (TensorStore's `TensorStore` with a transform)."""

    def __init__(self, base: Any, transform: IndexTransform) -> None:
        if transform.output_rank != len(base.shape):
            raise SelectionError(f"transform has output rank {transform.output_rank}, the "
                                 f"array has rank {len(base.shape)}")
        _check_constants(transform)
        self.base = base
        self.transform = transform

    # -- description -------------------------------------------------------------------------
    @property
    def domain(self) -> IndexDomain:
        return self.transform.domain

    @property
    def shape(self) -> tuple[int, ...]:
        return self.domain.shape

    @property
    def origin(self) -> tuple[int, ...]:
        return self.domain.origin

    @property
    def rank(self) -> int:
        return self.domain.rank

    ndim = rank

    @property
    def size(self) -> int:
        return self.domain.size

    @property
    def dtype(self) -> np.dtype:
        return self.base.dtype

    def spec(self, **options: Any) -> Any:
        return self.base.spec(**options, transform=self.transform)

    def __repr__(self) -> str:
        return f"<zarrkit.View of {self.base.name} domain={self.domain!r} dtype={self.dtype}>"

    # -- composing ---------------------------------------------------------------------------
    def _with(self, transform: IndexTransform) -> View:
        return View(self.base, transform)

    def __getitem__(self, selection: Any) -> View:
        return self._with(self.transform.index(selection, "numpy"))

    def __setitem__(self, selection: Any, value: Any) -> None:
        self[selection].write(value).result()

    @property
    def oindex(self) -> _Op:
        """Outer indexing: each index array selects along its own dimensions."""
        return _Op(self, lambda t, s: t.index(s, "outer"))

    @property
    def vindex(self) -> _Op:
        """Vectorized indexing: the index arrays' broadcast dimensions come first."""
        return _Op(self, lambda t, s: t.index(s, "vectorized"))

    @property
    def translate_to(self) -> _Op:
        return _Op(self, IndexTransform.translate_to)

    @property
    def translate_by(self) -> _Op:
        return _Op(self, IndexTransform.translate_by)

    @property
    def label(self) -> _Op:
        return _Op(self, IndexTransform.label)

    @property
    def T(self) -> View:  # noqa: N802 - numpy's and TensorStore's name
        return self._with(self.transform.transpose())

    def transpose(self, axes: Any = None) -> View:
        return self._with(self.transform.transpose(axes))

    # -- data --------------------------------------------------------------------------------
    def read(self) -> Future[np.ndarray]:
        return _executor().submit(read_view, self.base, self.transform)

    def write(self, value: Any) -> Future[None]:
        value = np.asarray(value)  # taken now: the caller may reuse its buffer afterwards
        return _executor().submit(write_view, self.base, self.transform, value)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        data = read_view(self.base, self.transform)
        return data if dtype is None else data.astype(dtype)


class _Op:
    """`view.op[args]` -> a new view (TensorStore's subscript style for operations)."""

    def __init__(self, view: View, apply: Callable[[IndexTransform, Any], IndexTransform]) -> None:
        self._view = view
        self._apply = apply

    def __getitem__(self, args: Any) -> View:
        return self._view._with(self._apply(self._view.transform, args))

    def __setitem__(self, args: Any, value: Any) -> None:
        self[args].write(value).result()


# -- execution -------------------------------------------------------------------------------


def _check_constants(transform: IndexTransform) -> None:
    """Constant indices below the array's origin are refused when a view is made (its upper
    bounds are resizable, so larger ones are only checked when data moves)."""
    if certainly_empty(transform.domain):
        return
    for i, m in enumerate(transform.output):
        if m.method == "constant" and m.offset < 0:
            raise SelectionError(f"index {m.offset} is outside the valid range [0, +inf) of "
                                 f"array dimension {i}")


def _range(m: OutputIndexMap, domain: IndexDomain) -> tuple[int, int]:
    if m.method == "constant":
        return m.offset, m.offset
    if m.method == "array":
        return int(m.index_array.min()), int(m.index_array.max())
    j = m.input_dimension
    ends = (m.offset + m.stride * domain.inclusive_min[j],
            m.offset + m.stride * (domain.exclusive_max[j] - 1))
    return min(ends), max(ends)


def _check_bounds(transform: IndexTransform, shape: tuple[int, ...]) -> None:
    for i, (m, size) in enumerate(zip(transform.output, shape, strict=True)):
        low, high = _range(m, transform.domain)
        if low < 0 or high >= size:
            bad = low if low < 0 else high
            raise SelectionError(f"index {bad} is out of bounds for dimension {i} of the array "
                                 f"(valid range [0, {size})), reading view domain "
                                 f"{transform.domain!r}")


def _basic(transform: IndexTransform) -> tuple[tuple[Any, ...], list[int]] | None:
    """A basic selection and the input dimension of each of its result axes, if one exists."""
    sel: list[Any] = []
    refs: list[int] = []
    domain = transform.domain
    for m in transform.output:
        if m.method == "constant":
            sel.append(m.offset)
        elif m.method == "array" or m.input_dimension in refs:
            return None
        else:
            j = m.input_dimension
            start = m.offset + m.stride * domain.inclusive_min[j]
            last = m.offset + m.stride * (domain.exclusive_max[j] - 1)
            stop = last + (1 if m.stride > 0 else -1)
            sel.append(slice(start, None if stop < 0 else stop, m.stride))
            refs.append(j)
    return tuple(sel), refs


def _prepare(base: Any, transform: IndexTransform) -> tuple[IndexTransform, bool]:
    """Refresh the base's metadata if it asks for that, resolve the implicit bounds against
    the array's current shape, and check the bounds. The flag: not empty."""
    refresh = getattr(base, "_before_view_io", None)
    if refresh is not None:
        refresh()
    transform = _resolve_bounds(transform, tuple(base.shape))
    if 0 in transform.domain.shape:
        return transform, False
    _check_bounds(transform, tuple(base.shape))
    return transform, True


def _resolve_bounds(transform: IndexTransform, shape: tuple[int, ...]) -> IndexTransform:
    """Implicit input bounds follow the array (it may have been resized since the view was
    made): each becomes the end of the inputs a strided output map sends into [0, size).
    Explicit bounds stay, and are checked."""
    d = transform.domain
    lo, hi = list(d.inclusive_min), list(d.exclusive_max)
    seen: set[int] = set()
    for m, size in zip(transform.output, shape, strict=True):
        if m.method != "single_input_dimension":
            continue
        j = m.input_dimension
        first, stop = _preimage(m.offset, m.stride, size)
        if d.implicit_lower_bounds[j]:
            lo[j] = max(lo[j], first) if j in seen else first
        if d.implicit_upper_bounds[j]:
            hi[j] = min(hi[j], stop) if j in seen else stop
        seen.add(j)
    hi = [max(h, v) for h, v in zip(hi, lo, strict=True)]
    if (lo, hi) == (list(d.inclusive_min), list(d.exclusive_max)):
        return transform
    return IndexTransform(replace(d, inclusive_min=tuple(lo), exclusive_max=tuple(hi)),
                          transform.output)


def _preimage(offset: int, stride: int, size: int) -> tuple[int, int]:
    """[first, stop) of the inputs i with 0 <= offset + stride * i < size."""
    if stride > 0:
        return -(offset // stride), -((offset - size) // stride)  # ceil divisions
    step = -stride
    return -((size - 1 - offset) // step), offset // step + 1


def read_view(base: Any, transform: IndexTransform) -> np.ndarray:
    transform, nonempty = _prepare(base, transform)
    shape = transform.domain.shape
    if not nonempty:
        return np.empty(shape, dtype=base.dtype)
    basic = _basic(transform)
    if basic is None:
        coords = [np.broadcast_to(c, shape) for c in transform.output_coordinates()]
        return _owned(np.asarray(base.vindex[tuple(coords)]).reshape(shape))
    sel, refs = basic
    data = np.asarray(base[sel])
    rest = [j for j in range(transform.input_rank) if j not in refs]
    data = data.reshape(data.shape + (1,) * len(rest))
    order = refs + rest
    data = np.transpose(data, [order.index(j) for j in range(len(order))])
    return _owned(data if data.shape == shape else np.broadcast_to(data, shape))


def _owned(data: np.ndarray) -> np.ndarray:
    """A writable C-ordered array of the same shape (np.ascontiguousarray would make a 0-d
    result 1-d, and broadcast results are read-only views)."""
    if data.flags.c_contiguous and data.flags.writeable:
        return data
    return np.array(data, order="C")


def write_view(base: Any, transform: IndexTransform, value: np.ndarray) -> None:
    transform, nonempty = _prepare(base, transform)
    shape = transform.domain.shape
    try:
        value = np.broadcast_to(value, shape)
    except ValueError:
        raise SelectionError(f"cannot write a value of shape {value.shape} into a view of "
                             f"shape {shape}") from None
    if not nonempty:
        return
    basic = _basic(transform)
    if basic is None:
        coords = [np.broadcast_to(c, shape) for c in transform.output_coordinates()]
        base.vindex[tuple(coords)] = value
        return
    sel, refs = basic
    rest = [j for j in range(transform.input_rank) if j not in refs]
    value = np.transpose(value, refs + rest)
    # Input dimensions no output reads write the same elements again: the last value wins,
    # as with repeated indices in an index array (and in TensorStore).
    base[sel] = value[(Ellipsis,) + (-1,) * len(rest)] if rest else value

"""Lazy views of an array: an index transform on top of the eager numpy indexing.

`View` composes TensorStore's operations (`[...]`, `.oindex`, `.vindex`, `.translate_to`,
`.translate_by`, `.translate_backward_by`, `.mark_bounds_implicit`, `.label`, `.T`,
`.transpose`, and dimension expressions such as
`view[zarrkit.d["x"][2:5]]`) without touching data; `read()`, `write()` and the other
TensorStore calls return `concurrent.futures.Future`s with TensorStore's `Future` members
(spec/futures.py), which asyncio code may also await. Executing a view
computes the equivalent selection on the base array: a basic (slice/integer) selection when
every output dimension is a constant or a strided input dimension used once, otherwise point
(vindex) selection of the broadcast coordinates.
"""

from __future__ import annotations

import math
import operator
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import CopyRequiredError, DataTypeError, SelectionError
from .chunk_layout import ChunkLayout
from .dim_expression import DimExpression
from .futures import Resolved, StorageStatistics, ViewFuture, WriteFutures
from .schema import CodecSpec, Schema
from .stored import storage_statistics
from .transform import (
    INF,
    INF_MAX,
    IndexDomain,
    IndexTransform,
    OutputIndexMap,
    certainly_empty,
    check_array_shapes,
    check_valid,
    propagate_bounds,
)
from .units import Unit, Units

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


def _submit(fn: Callable[..., Any], *args: Any, future: ViewFuture | None = None
            ) -> ViewFuture:
    """`fn(*args)` run on the views' pool, as a `ViewFuture` (or the given one)."""
    future = ViewFuture() if future is None else future

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return  # cancelled while queued
        try:
            future.set_result(fn(*args))
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits on the future
            future.set_exception(e)

    _executor().submit(run)
    return future


class View(Resolved):
    """A lazily indexed region of an array (TensorStore's `TensorStore` with a transform)."""

    StorageStatistics = StorageStatistics

    def __init__(self, base: Any, transform: IndexTransform, conversion: Any = None) -> None:
        if transform.output_rank != len(base.shape):
            raise SelectionError(f"transform has output rank {transform.output_rank}, the "
                                 f"array has rank {len(base.shape)}")
        self.base = base
        self.transform = transform
        #: A `cast.Cast` converting the elements (zarrkit.cast), or None.
        self.conversion = conversion

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
        return self.base.dtype if self.conversion is None else self.conversion.dtype

    @property
    def readable(self) -> bool:
        return self.conversion is None or self.conversion.readable

    @property
    def writable(self) -> bool:
        if self.conversion is not None:
            return self.conversion.writable
        return not getattr(self.base, "read_only", False)

    @property
    def mode(self) -> str:
        """TensorStore's: "r", "w" or "rw"."""
        return "r" * self.readable + "w" * self.writable

    @property
    def kvstore(self) -> dict[str, Any]:
        """The array's kvstore spec (TensorStore's `kvstore`: the array's, for any view)."""
        return self.base.kvstore

    @property
    def url(self) -> str:
        url = self.base.url
        return url if self.conversion is None else f"{url}|cast:{self.conversion.name}"

    # What TensorStore's TensorStore describes, in the view's coordinates (an Array opened
    # with labels the metadata cannot hold is a View, and must describe itself as one).
    @property
    def chunk_layout(self) -> ChunkLayout:
        return _layout_through(self.base.chunk_layout, self.transform)

    @property
    def codec(self) -> CodecSpec:
        return self.base.codec

    @property
    def fill_value(self) -> Any:
        fill = self.base.fill_value
        return fill if self.conversion is None else self.conversion.fill(fill)

    @property
    def dimension_units(self) -> Units:
        return _units_through(self.base.dimension_units, self.transform)

    @property
    def schema(self) -> Schema:
        base = self.base.schema
        units = None if base.dimension_units is None else self.dimension_units
        cast = self.conversion
        schema = Schema(dtype=base.dtype if cast is None else cast.name, domain=self.domain,
                        chunk_layout=self.chunk_layout, codec=base.codec,
                        fill_value=base.fill_value if cast is None else None,
                        dimension_units=units if units and any(units) else None)
        return schema if cast is None else cast.with_fill(schema, base.fill_value)

    def spec(self, **options: Any) -> Any:
        spec = self.base.spec(**options, transform=self.transform)
        if self.conversion is None:
            return spec
        wrapped = type(spec)(self.conversion.wrap_spec(spec.to_json()))
        wrapped._bound_context = spec._bound_context
        return wrapped

    def __repr__(self) -> str:
        return f"<zarrkit.View of {self.base.name} domain={self.domain!r} dtype={self.dtype}>"

    # -- composing ---------------------------------------------------------------------------
    def _with(self, transform: IndexTransform) -> View:
        return View(self.base, transform, self.conversion)

    def __getitem__(self, selection: Any) -> View:
        if isinstance(selection, DimExpression):  # view[d["x"][2:5]], as TensorStore
            return self._with(selection.apply(self.transform))
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

    # TensorStore's `store.op[args]` for every dimension, as `store[d[:].op[args]]`.
    @property
    def translate_backward_by(self) -> _Op:
        return _Op(self, lambda t, args: t.translate_backward_by[args])

    @property
    def mark_bounds_implicit(self) -> _Op:
        return _Op(self, lambda t, args: t.mark_bounds_implicit[args])

    @property
    def T(self) -> View:  # noqa: N802 - numpy's and TensorStore's name
        return self._with(self.transform.transpose())

    def transpose(self, axes: Any = None) -> View:
        return self._with(self.transform.transpose(axes))

    def astype(self, dtype: Any) -> View:
        """TensorStore's `astype` (its `ts.cast`): this view with its elements read as
        `dtype` and converted back on write."""
        from .cast import cast_view  # cast.py builds on this module

        return cast_view(self, dtype)

    def resize(self, inclusive_min: Any = None, exclusive_max: Any = None, *,
               expand_only: bool = False, shrink_only: bool = False,
               resize_metadata_only: bool = False) -> View:
        """TensorStore's resize through this view: the new bounds (None: unchanged) of the
        view's dimensions change the array's shape; returns the view with its bounds
        resolved against the new shape."""
        refresh = getattr(self.base, "_before_view_io", None)
        if refresh is not None:
            refresh()
        transform = _resolve_bounds(self.transform, tuple(self.base.shape))
        new_shape = resized_shape(transform, tuple(self.base.shape), inclusive_min,
                                  exclusive_max)
        if new_shape is not None:
            _check_direction(tuple(self.base.shape), new_shape, expand_only, shrink_only)
            self.base._resize_to(new_shape, erase=not resize_metadata_only)
        # Resolved as TensorStore resolves: a bound stays implicit only if the array's is (a
        # lower bound marked implicit becomes the array's explicit origin).
        return View(self.base, propagate_bounds(self.transform,
                                                IndexDomain.from_shape(self.base.shape)),
                    self.conversion)

    # -- data --------------------------------------------------------------------------------
    def read(self) -> ViewFuture:
        """A future of the values (`.result()`, or `await` it)."""
        if self.conversion is None:
            return _submit(read_view, self.base, self.transform)
        return _submit(self._read_cast)

    def _read_cast(self) -> np.ndarray:
        # Decoded in the base's type, then converted in one pass.
        return self.conversion.read(read_view(self.base, self.transform))

    def write(self, value: Any) -> WriteFutures:
        if self.conversion is None:
            value = _as_written(value, self.base)  # a copy: the caller may reuse its buffer
        else:
            value = self.conversion.written(value, f"a cast view of {self.base.name}")
        return _submit(write_view, self.base, self.transform, value, future=WriteFutures())

    def storage_statistics(self, *, query_not_stored: bool = False,
                           query_fully_stored: bool = False) -> ViewFuture:
        """A future of TensorStore's `StorageStatistics` of the chunks holding the view's
        elements: `not_stored` (none is stored) and `fully_stored` (all are), those asked
        for; the others None."""
        return _submit(self._statistics, bool(query_not_stored), bool(query_fully_stored))

    def _statistics(self, not_stored: bool, fully_stored: bool) -> StorageStatistics:
        if not (not_stored or fully_stored):
            return StorageStatistics()
        transform, nonempty = _prepare(self.base, self.transform)
        return storage_statistics(self.base, transform, nonempty, not_stored, fully_stored)

    @property
    def transaction(self) -> Any:
        """TensorStore's: the transaction of the array viewed (None when unbound)."""
        return getattr(self.base, "transaction", None)

    def with_transaction(self, transaction: Any) -> View:
        """TensorStore's: this view of the array bound to `transaction` (None: unbound)."""
        return View(self.base.with_transaction(transaction), self.transform, self.conversion)

    def resolve(self, *, fix_resizable_bounds: bool = False) -> ViewFuture:
        """A future of this view with its implicit bounds resolved against the array's
        current (stored) shape; `fix_resizable_bounds` makes them explicit."""
        return _submit(self._resolved, fix_resizable_bounds)

    def _resolved(self, fix: bool) -> View:
        getattr(self.base, "_resolve_metadata", lambda: None)()
        transform = _resolve_bounds(self.transform, tuple(self.base.shape))
        if fix:
            rank = transform.input_rank
            transform = IndexTransform(replace(transform.domain, implicit_lower_bounds=(
                False,) * rank, implicit_upper_bounds=(False,) * rank), transform.output)
        return View(self.base, transform, self.conversion)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        read = (self._read_cast if self.conversion is not None
                else lambda: read_view(self.base, self.transform))
        return as_numpy(read, dtype, copy, f"view of {self.base.name}")


def _as_written(value: Any, base: Any) -> np.ndarray:
    """A written value in the array's data type, as TensorStore converts it: a numpy array
    only if it casts safely (no values lost: float64 into int32, int64 into float32 and so
    on are DataTypeError), other objects as the eager `a[...] = value` converts them (an
    out-of-range Python integer is refused, never wrapped)."""
    dtype = base.dtype
    if isinstance(value, np.ndarray):
        return safely_cast(value, dtype, f"array {base.name}")
    convert = getattr(base, "_as_values", None)
    values = np.asarray(value, dtype=dtype) if convert is None else convert(value)
    # A conversion may still view the caller's buffer (a memoryview, an __array__ object).
    return values if values.base is None else np.array(values)


def safely_cast(value: np.ndarray, dtype: np.dtype, what: str) -> np.ndarray:
    """A copy of `value` in `dtype`, refused (DataTypeError) unless numpy casts it safely."""
    if not np.can_cast(value.dtype, dtype, "safe"):
        raise DataTypeError(f"cannot write an array of data type {value.dtype} to {what} of "
                            f"data type {dtype}: its values may not be representable (cast "
                            "them first, e.g. with .astype)")
    return value.astype(dtype)


def as_numpy(read: Callable[[], np.ndarray], dtype: Any, copy: Any, what: str) -> np.ndarray:
    """numpy's `__array__(dtype, copy)` for data that exists only once read."""
    if copy is False:
        raise CopyRequiredError(f"{what}: copy=False cannot be honoured, reading makes a new "
                                "array (pass copy=None or True)")
    data = read()
    if dtype is None:
        return data
    try:
        return data.astype(np.dtype(dtype), copy=False)  # the read is already a fresh array
    except (TypeError, ValueError) as e:
        raise DataTypeError(f"{what}: cannot convert {data.dtype} to dtype {dtype!r}: "
                            f"{e}") from None


class _Op:
    """`view.op[args]` -> a new view (TensorStore's subscript style for operations)."""

    def __init__(self, view: View, apply: Callable[[IndexTransform, Any], IndexTransform]) -> None:
        self._view = view
        self._apply = apply

    def __getitem__(self, args: Any) -> View:
        return self._view._with(self._apply(self._view.transform, args))

    def __setitem__(self, args: Any, value: Any) -> None:
        self[args].write(value).result()


# -- descriptions through a transform ---------------------------------------------------------


def _sources(transform: IndexTransform) -> list[int | None]:
    """Per input dimension, the one array dimension that reads it through a strided map;
    None for dimensions read by no such map, by several, or by an index array."""
    readers: list[list[int]] = [[] for _ in range(transform.input_rank)]
    for i, m in enumerate(transform.output):
        if m.method == "single_input_dimension" and m.stride != 0:
            readers[m.input_dimension].append(i)
        elif m.method == "array":
            for j, n in enumerate(m.index_array.shape):
                if n > 1:
                    readers[j].append(-1)  # never a single reader
    return [r[0] if len(r) == 1 and r[0] >= 0 else None for r in readers]


def _origin_through(origin: int, m: OutputIndexMap) -> int:
    """The first input whose output is at or past the array's grid line `origin`
    (for a negative stride: one past the last input whose output is at or past it)."""
    if m.stride > 0:
        return -((m.offset - origin) // m.stride)
    return (origin - m.offset) // m.stride + 1


def _chunk_through(size: int, m: OutputIndexMap) -> int:
    # Chunk boundaries repeat every size / gcd(size, |stride|) inputs.
    return size // math.gcd(size, abs(m.stride))


def _layout_through(layout: ChunkLayout, transform: IndexTransform) -> ChunkLayout:
    """The array's chunk layout seen through `transform`, as TensorStore gives a view's:
    dimensions without a single strided source are unconstrained and innermost."""
    sources = _sources(transform)
    maps = [None if i is None else (i, transform.output[i]) for i in sources]

    def through(values: tuple[int | None, ...] | None, convert: Callable[..., Any]) -> list[Any]:
        return [None if s is None or values is None or values[s[0]] is None
                else convert(values[s[0]], s[1]) for s in maps]

    order = [sources.index(i) for i in layout.inner_order or () if i in sources]
    order += [j for j, i in enumerate(sources) if i is None]
    return ChunkLayout(rank=transform.input_rank, inner_order=order,
                       grid_origin=through(layout.grid_origin, _origin_through),
                       read_chunk_shape=through(layout.read_chunk.shape, _chunk_through),
                       write_chunk_shape=through(layout.write_chunk.shape, _chunk_through))


def _units_through(units: Units, transform: IndexTransform) -> Units:
    """A strided dimension's unit scales by |stride|; dimensions without a source have none."""
    out: list[Unit | None] = []
    for i in _sources(transform):
        unit = None if i is None else units[i]
        out.append(None if unit is None else Unit(
            unit.multiplier * abs(transform.output[i].stride), unit.base_unit))
    return tuple(out)


# -- resizing --------------------------------------------------------------------------------


def _requested(values: Any, rank: int, what: str) -> list[int | None]:
    """Per dimension, a new bound (an integer) or None (unchanged)."""
    if values is None:
        return [None] * rank
    try:
        values = list(values)
    except TypeError:
        raise SelectionError(f"resize: {what} must be a sequence of integers or None, got "
                             f"{values!r}") from None
    if len(values) != rank:
        raise SelectionError(f"resize: {what} has {len(values)} values for rank {rank}")
    for v in values:
        if v is not None and (isinstance(v, bool | float) or not hasattr(v, "__index__")):
            raise SelectionError(f"resize: {what} value {v!r} is not an integer or None")
    values = [None if v is None else operator.index(v) for v in values]
    for v in values:
        if v is not None and not -INF <= v <= INF_MAX:
            raise SelectionError(f"resize: {what} value {v} is outside [-inf, +inf] "
                                 f"([{-INF}, {INF_MAX}])")
    return values


def resized_shape(transform: IndexTransform, shape: tuple[int, ...], inclusive_min: Any,
                  exclusive_max: Any) -> tuple[int, ...] | None:
    """The array's shape after resizing `transform`'s domain, as TensorStore allows it: only
    implicit bounds change, and only if the array's other elements all stay in the view
    (unit strides, no constant or index array maps, nothing cut off) since the resize
    would change them too. None: nothing is resized."""
    d = transform.domain
    lo = _requested(inclusive_min, d.rank, "inclusive_min")
    hi = _requested(exclusive_max, d.rank, "exclusive_max")
    for j in range(d.rank):
        for value, implicit, side in ((lo[j], d.implicit_lower_bounds, "lower"),
                                      (hi[j], d.implicit_upper_bounds, "upper")):
            if value is not None and not implicit[j]:
                raise SelectionError(f"resize: the {side} bound of dimension {j} of the view "
                                     f"is explicit and cannot change (domain {d!r})")
    new_lo = [d.inclusive_min[j] if v is None else v for j, v in enumerate(lo)]
    new_hi = [d.exclusive_max[j] if v is None else v for j, v in enumerate(hi)]
    for j, (a, b) in enumerate(zip(new_lo, new_hi, strict=True)):
        if b < a:  # TensorStore would store a negative shape
            raise SelectionError(f"resize: dimension {j} of the view would be [{a}, {b}), "
                                 "which ends before it starts")
    read = {m.input_dimension for m in transform.output if m.method == "single_input_dimension"}
    if all(lo[j] is None and hi[j] is None for j in read):
        return None  # TensorStore leaves the array alone (a new axis is not stored)
    changed = {j for j in read if lo[j] is not None or hi[j] is not None}
    return tuple(_output_extent(m, i, size, new_lo, new_hi, changed)
                 for i, (m, size) in enumerate(zip(transform.output, shape, strict=True)))


def _output_extent(m: OutputIndexMap, i: int, size: int, lo: list[int], hi: list[int],
                   changed: set[int]) -> int:
    """Array dimension i's new size, from the view's new input bounds [lo, hi) (those of
    the input dimensions not `changed` must cover all of it)."""
    if m.method == "constant" and (m.offset, size) == (0, 1):
        return size  # the view holds all of it, as it holds all of a strided dimension
    if m.method != "single_input_dimension" or abs(m.stride) != 1:
        what = "an index array" if m.method == "array" else (
            f"the constant index {m.offset}" if m.method == "constant"
            else f"stride {m.stride}")
        raise SelectionError(f"resize: array dimension {i} is read with {what}; resizing "
                             "the view would change elements outside it")
    a, b = lo[m.input_dimension], hi[m.input_dimension]
    first, stop = (m.offset + a, m.offset + b) if m.stride == 1 else \
        (m.offset - b + 1, m.offset - a + 1)
    if first != 0 or m.input_dimension not in changed and stop != size:
        raise SelectionError(f"resize: the view would cover [{first}, {stop}) of array "
                             f"dimension {i} (size {size}), not all of it; resizing the view "
                             "would change elements outside it")
    return min(stop, INF_MAX)  # an infinite bound stays infinite, as TensorStore stores it


def _check_direction(old: tuple[int, ...], new: tuple[int, ...], expand_only: bool,
                     shrink_only: bool) -> None:
    for i, (o, n) in enumerate(zip(old, new, strict=True)):
        if expand_only and n < o or shrink_only and n > o:
            what = "expand_only" if expand_only else "shrink_only"
            raise SelectionError(f"resize: dimension {i} from {o} to {n} violates {what}")


# -- execution -------------------------------------------------------------------------------


def check_constants(transform: IndexTransform) -> None:
    """Constant indices below the array's origin, refused when a spec's transform is opened
    (views made by indexing check them only when data moves, as TensorStore does; upper
    bounds are resizable, so larger ones wait for that too)."""
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
    d = transform.domain
    for i, (m, size) in enumerate(zip(transform.output, shape, strict=True)):
        if (m.method == "array" and 0 in d.shape
                or m.method == "single_input_dimension" and d.shape[m.input_dimension] == 0):
            continue  # reaches no element
        if m.method == "array":
            check_valid(m.index_array, m.valid)
        low, high = _range(m, d)
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


def _prepare(base: Any, transform: IndexTransform, writing: bool = False
             ) -> tuple[IndexTransform, bool]:
    """Refresh the base's metadata if it asks for that (`_before_view_write` first when
    `writing`, where the base has one), resolve the implicit bounds against the array's
    current shape, and check the bounds. The flag: not empty."""
    refresh = (getattr(base, "_before_view_write", None) if writing else None) or \
        getattr(base, "_before_view_io", None)
    if refresh is not None:
        refresh()
    unresolved = transform.domain
    transform = _resolve_bounds(transform, tuple(base.shape))
    d = transform.domain
    # An unbounded dimension no map reads (a new axis of an unbounded spec transform) stays
    # infinite: TensorStore refuses to move its data too.
    if -INF in d.inclusive_min or INF_MAX in d.exclusive_max:
        raise SelectionError(f"reading or writing a view needs a finite domain, got {d!r}")
    if 0 in d.shape:
        # Empty only once implicit bounds are resolved: TensorStore checks the maps still.
        if not certainly_empty(unresolved):
            _check_bounds(transform, tuple(base.shape))
        return transform, False
    # An index array kept over an empty domain has no indices for a dimension that grew again.
    check_array_shapes(transform, "view", SelectionError)
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
    transform, nonempty = _prepare(base, transform, writing=True)
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

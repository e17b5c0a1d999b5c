"""TensorStore's dimension expressions: `zarrkit.d[...]`, then chained operations.

`d[0, "x", 2:4]` selects dimensions by index (negative ones count from the end), label or
range of indices; operations then apply to the selected dimensions only, and each leaves a
new selection for the next one, as TensorStore's DimExpression does:

- `[...]`, `.oindex[...]`, `.vindex[...]`: numpy-style indexing of exactly the selected
  dimensions (a single integer, slice or `None` applies to each). The selection becomes the
  dimensions the terms produce, in their order; integer terms remove theirs. With several
  index arrays (or `.vindex`), their dimensions come first unless, in `[...]`, their terms
  are adjacent: then they replace the dimension of the first. `None` (new singleton
  dimensions) is allowed in the first operation only; the selection then names positions
  in the result, not labels.
- `.translate_to`, `.translate_by`, `.translate_backward_by`, `.stride`, `.label`,
  `.mark_bounds_implicit`: per selected dimension; the selection stays.
- `.transpose[target]`: the selected dimensions move to the target positions (the others
  keep their order); the selection becomes the targets.
- `.diagonal`: the selected dimensions become one, the first; the selection is `[0]`.

Applying one (`view[d["x"][2:5]]`) builds a new IndexTransform from the view's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import SelectionError, SelectionTypeError, SelectionValueError
from .transform import (
    INF,
    INF_MAX,
    MAX_RANK,
    IndexDomain,
    IndexTransform,
    OutputIndexMap,
    _broadcast,
    _Builder,
    _is_int,
    _normalize_terms,
    _per_dim,
    _slice_dim,
    arrays_adjacent,
    as_broadcast,
    certainly_empty,
)

# -- the dimension selection ------------------------------------------------------------------


def _selection_items(selection: Any) -> tuple[Any, ...]:
    """The flat items of `d[...]`: ints, labels, slices (nested lists and `d[...]`s flatten)."""
    items = selection if isinstance(selection, tuple | list) else (selection,)
    out: list[Any] = []
    for item in items:
        if isinstance(item, DimExpression):
            if item._ops:
                raise SelectionError(f"dimension selection: {item!r} has operations; only a "
                                     "plain d[...] may be nested")
            out += item._selection
        elif isinstance(item, tuple | list | range):
            out += _selection_items(tuple(item))
        elif isinstance(item, str) or _is_int(item):
            out.append(item if isinstance(item, str) else int(item))
        elif isinstance(item, slice):
            for v in (item.start, item.stop, item.step):
                if v is not None and not _is_int(v):
                    raise SelectionError(f"dimension selection: range {item} must have "
                                         "integer (or omitted) start, stop and step")
            if item.step == 0:
                raise SelectionError(f"dimension selection: range {item} has step 0")
            out.append(item)
        else:
            raise SelectionError(f"dimension selection: {item!r} is not a dimension index, "
                                 "label or range of indices")
    return tuple(out)


def _index_in(value: int, rank: int) -> int:
    if not -rank <= value < rank:
        raise SelectionError(f"dimension selection: dimension {value} is out of range for "
                             f"rank {rank}")
    return value % rank


def _range(s: slice, rank: int) -> list[int]:
    """A range of dimension indices, resolved as TensorStore does: a given start must be a
    dimension, the stop in [-rank - 1, rank], and the range may not run backwards."""
    step = 1 if s.step is None else int(s.step)
    start = (0 if step > 0 else rank - 1) if s.start is None else _index_in(int(s.start), rank)
    if s.stop is None:
        stop = rank if step > 0 else -1
    else:
        stop = int(s.stop)
        if not -rank - 1 <= stop <= rank:
            raise SelectionError(f"dimension selection: stop {stop} of range {s} is out of "
                                 f"range for rank {rank}")
        stop = stop + rank if stop < 0 else stop
    if (stop - start) * step < 0:
        raise SelectionError(f"dimension selection: {s} is not a valid range for rank {rank}")
    return list(range(start, stop, step))


def _resolve(items: tuple[Any, ...], domain: IndexDomain, rank: int,
             what: str = "dimension selection") -> list[int]:
    """The selected dimensions, as indices into a space of `rank` dimensions (more than the
    domain's when new dimensions are added, and then labels cannot name them)."""
    dims: list[int] = []
    for item in items:
        if isinstance(item, str):
            if rank != domain.rank:
                raise SelectionError(f"dimension selection: new dimensions cannot be selected "
                                     f"by label ({item!r})")
            if not item or item not in domain.labels:
                raise SelectionError(f"dimension selection: no dimension is labelled {item!r} "
                                     f"(labels {list(domain.labels)})")
            dims.append(domain.labels.index(item))
        elif isinstance(item, slice):
            dims += _range(item, rank)
        else:
            dims.append(_index_in(item, rank))
    repeated = sorted({j for j in dims if dims.count(j) > 1})
    if repeated:
        raise SelectionError(f"{what}: dimension(s) {repeated} given more than once")
    return dims


def _text(item: Any) -> str:
    if isinstance(item, slice):
        return ":".join("" if v is None else str(v) for v in (item.start, item.stop)) + (
            "" if item.step is None else f":{item.step}")
    return repr(item)


# -- indexing ---------------------------------------------------------------------------------


def _expand_vector_slices(terms: tuple[Any, ...]) -> tuple[Any, ...]:
    """TensorStore's extension: `[1, 2]:[3, 4]` is the two slices `1:3, 2:4`."""
    out: list[Any] = []
    for term in terms:
        members = (term.start, term.stop, term.step) if isinstance(term, slice) else ()
        vectors = [len(v) for v in members if isinstance(v, Sequence | np.ndarray)]
        if not vectors:
            out.append(term)
            continue
        if len(set(vectors)) > 1:
            raise SelectionError(f"slice {term}: its start, stop and step vectors differ in "
                                 "length")
        out += [slice(*(v[i] if isinstance(v, Sequence | np.ndarray) else v for v in members))
                for i in range(vectors[0])]
    return tuple(out)


def _int_0d(term: Any) -> bool:
    """A zero-rank integer array: an integer term (TensorStore repeats a lone one too)."""
    return isinstance(term, np.ndarray) and term.ndim == 0 and term.dtype.kind in "iu"


def _consumed(term: Any) -> int:
    """How many selected dimensions a term uses (a new axis uses one of the result's)."""
    if term is Ellipsis:
        return 0
    if term is None or isinstance(term, slice) or _is_int(term):
        return 1
    array = np.asarray(term)
    return array.ndim if array.dtype == bool else 1


class _Indexing:
    """One numpy-style indexing operation ("numpy", "outer" or "vectorized")."""

    def __init__(self, terms: Any, mode: str) -> None:
        terms = _expand_vector_slices(terms if isinstance(terms, tuple) else (terms,))
        self.terms = terms
        self.mode = mode
        self.new = sum(1 for t in terms if t is None)

    def describe(self) -> str:
        name = {"numpy": "", "outer": ".oindex", "vectorized": ".vindex"}[self.mode]
        return f"{name}[{', '.join(_text(t) for t in self.terms)}]"

    def _terms_for(self, k: int) -> tuple[Any, ...]:
        """The terms, a lone integer, slice or None repeated for each selected dimension."""
        terms = self.terms
        if len(terms) == 1 and (terms[0] is None or isinstance(terms[0], slice)
                                or _is_int(terms[0]) or _int_0d(terms[0])):
            return terms * k
        used = sum(_consumed(t) for t in terms)
        if used != k and not (any(t is Ellipsis for t in terms) and used < k):
            raise SelectionError(f"indexing: the terms {self.describe()} use {used} "
                                 f"dimension(s), but the selection has {k}")
        return terms

    def apply(self, transform: IndexTransform, dims: list[int]) -> tuple[IndexTransform,
                                                                         list[int]]:
        terms = self._terms_for(len(dims))
        new = sum(1 for t in terms if t is None)
        normalized = _normalize_terms(terms, len(dims) - new, self.mode)
        if self.mode == "outer" and any(t[0] == "bool0" for t in normalized):
            raise SelectionError("oindex: a zero-rank boolean index cannot be used on a "
                                 "dimension selection")
        inner, selection = _index_transform(transform.domain, dims, normalized, self.mode,
                                            arrays_adjacent(terms, trailing_integers=False))
        return transform.compose(inner), selection


def _index_transform(domain: IndexDomain, dims: list[int], terms: list[tuple[Any, ...]],
                     mode: str, adjacent: bool) -> tuple[IndexTransform, list[int]]:
    """The transform (new input -> old input) of terms applied to the selected positions
    `dims` of the space with the new axes inserted; and the new selection. `adjacent`: the
    given terms keep index arrays in place (`arrays_adjacent`)."""
    space = domain.rank + sum(1 for t in terms if t[0] == "new")
    blocks, front = _array_blocks(terms, mode, dims, adjacent)  # (rewrites array terms)
    at = dict(zip(dims, (t for t in terms if t[0] != "bool0"), strict=True))
    slots: list[tuple[Any, ...]] = [("block", key) for key in front]
    for p in range(space):
        term = at.get(p, ("slice", slice(None)))
        if term[0] in ("new", "slice"):
            slots.append((term[0], p))
        elif term[0] == "array" and blocks[term[2]][1] == p:
            slots.append(("block", term[2]))
    b = _Builder()
    first: dict[Any, int] = {}  # per slot (position or block): its first new dimension
    old_of = _old_dimensions(space, at)
    sliced: dict[int, tuple[int, int]] = {}
    for slot in slots:
        first[slot] = len(b.dims)
        if slot[0] == "new":
            b.new_dim(0, 1, True, True, "")
        elif slot[0] == "slice":
            j = old_of[slot[1]]
            (lo, hi, ilo, ihi), offset, stride = _slice_dim(
                at.get(slot[1], ("slice", slice(None)))[1], domain, j)
            b.new_dim(lo, hi, ilo, ihi, domain.labels[j])
            sliced[j] = (offset, stride)
        else:
            for n in blocks[slot[1]][0].shape:
                b.new_dim(0, n, False, False, "")
    _old_maps(b, domain, at, old_of, blocks, first, sliced)
    return b.transform(), _new_selection(terms, dims, first, blocks, front)


def _old_dimensions(space: int, at: dict[int, tuple[Any, ...]]) -> dict[int, int]:
    """Positions of the space with new axes -> the old dimension there."""
    old = [p for p in range(space) if at.get(p, ("",))[0] != "new"]
    return {p: j for j, p in enumerate(old)}


def _array_blocks(terms: list[tuple[Any, ...]], mode: str, dims: list[int], adjacent: bool
                  ) -> tuple[dict[Any, tuple[Any, int | None]], list[Any]]:
    """Per block of index array dimensions: (shape source, position it replaces or None);
    and the blocks that come first. Outer indexing gives each array (a mask: its arrays)
    its own block in place; otherwise all arrays broadcast into one block."""
    positions = iter(dims)
    where: list[tuple[int, tuple[Any, ...], int | None]] = []
    for i, t in enumerate(terms):
        where.append((i, t, None if t[0] == "bool0" else next(positions)))
    arrays = [(i, t, p) for i, t, p in where if t[0] in ("array", "bool0")]
    if not arrays:
        return {}, []
    if mode == "outer":
        blocks: dict[Any, tuple[Any, int | None]] = {}
        for _, t, p in arrays:
            blocks.setdefault(t[2], (t[1], p))
        return blocks, []
    shaped = _broadcast([t[1] for _, t, _ in arrays])
    index = [i for i, _, _ in arrays]
    # In place only for adjacent terms that all index a dimension (TensorStore puts the
    # dimensions first as soon as a zero-rank boolean is among them).
    adjacent = adjacent and all(p is not None for _, _, p in arrays)
    place = arrays[0][2] if mode == "numpy" and adjacent else None
    blocks = {"joint": (shaped[0], place)}
    for n, (_, t, _) in enumerate(arrays):  # every array term names the one joint block
        kept = as_broadcast(t[1], shaped[n].ndim) if t[0] == "array" else None
        terms[index[n]] = ("array", kept, "joint") if t[0] == "array" else t
    return blocks, ["joint"] if place is None else []


def _old_maps(b: _Builder, domain: IndexDomain, at: dict[int, tuple[Any, ...]],
              old_of: dict[int, int], blocks: dict[Any, tuple[Any, int | None]],
              first: dict[Any, int], sliced: dict[int, tuple[int, int]]) -> None:
    """Each old dimension's map, in order: a constant, a slice or an index array."""
    for p, j in sorted(old_of.items(), key=lambda item: item[1]):
        term = at.get(p, ("slice", None))
        if term[0] == "int":
            b.checks.append((term[1], domain, j))
            b.maps.append(("const", term[1]))
        elif term[0] == "array":
            b.maps.append(("array", term[1], first[("block", term[2])]))
        else:
            b.maps.append(("single", *sliced[j], first[("slice", p)]))


def _new_selection(terms: list[tuple[Any, ...]], dims: list[int], first: dict[Any, int],
                   blocks: dict[Any, tuple[Any, int | None]], front: list[Any]) -> list[int]:
    """The dimensions the terms produced, in term order; leading array blocks first."""
    def block(key: Any) -> list[int]:
        start = first[("block", key)]
        return list(range(start, start + blocks[key][0].ndim))

    out: list[int] = [j for key in front for j in block(key)]
    seen = set(front)
    positions = iter(dims)
    for t in terms:
        p = None if t[0] == "bool0" else next(positions)
        if t[0] in ("new", "slice"):
            out.append(first[(t[0], p)])
        elif t[0] == "array" and t[2] not in seen:
            seen.add(t[2])
            out += block(t[2])
    return out


# -- the other operations ---------------------------------------------------------------------


def _scatter(values: list[Any], dims: list[int], rank: int) -> list[Any]:
    """Per-selected-dimension values as a full list (None elsewhere: unchanged)."""
    out: list[Any] = [None] * rank
    for j, v in zip(dims, values, strict=True):
        out[j] = v
    return out


def _translate(kind: str, values: Any, transform: IndexTransform,
               dims: list[int]) -> IndexTransform:
    given = _per_dim(values, len(dims), kind)
    if kind == "translate_to":
        return transform.translate_to(_scatter(given, dims, transform.input_rank))
    sign = -1 if kind == "translate_backward_by" else 1
    shift = [None if v is None else sign * int(v) for v in given]
    return transform.translate_by(_scatter(shift, dims, transform.input_rank))


def _label(labels: Any, transform: IndexTransform, dims: list[int]) -> IndexTransform:
    if isinstance(labels, str) or not isinstance(labels, Sequence | np.ndarray):
        labels = [labels]  # one label (transform.label refuses one that is not a string)
    labels = list(labels)
    if not all(isinstance(x, str) for x in labels):
        raise SelectionTypeError(f"label: expected strings, got {labels!r}")
    if len(labels) != len(dims):  # TensorStore: a ValueError, a TypeError above
        raise SelectionValueError(f"label: {len(labels)} label(s) for {len(dims)} selected "
                                  "dimension(s)")
    full = list(transform.domain.labels)
    for j, label in zip(dims, labels, strict=True):
        full[j] = label
    return transform.label(full)


def _transpose(target: Any, transform: IndexTransform, dims: list[int]) -> tuple[
        IndexTransform, list[int]]:
    rank, k = transform.input_rank, len(dims)
    items = _selection_items(target)
    if any(isinstance(x, str) for x in items):
        raise SelectionError(f"transpose: target positions must be indices, not labels "
                             f"({target!r})")
    if len(items) == 1 and isinstance(items[0], int) and k != 1:
        # One index: the selected dimensions start there (end there, if negative).
        room = rank - k + 1
        if not -room <= items[0] < room:
            raise SelectionError(f"transpose: {k} dimension(s) cannot start (or end, if "
                                 f"negative) at position {items[0]} of {rank}")
        start = items[0] % room
        targets = list(range(start, start + k))
    else:
        targets = _resolve(items, IndexDomain.from_shape([0] * rank), rank, "transpose")
    if len(targets) != k:
        raise SelectionError(f"transpose: {len(targets)} target position(s) for {k} selected "
                             "dimension(s)")
    rest = iter(j for j in range(rank) if j not in dims)
    moved = dict(zip(targets, dims, strict=True))
    perm = [moved[p] if p in moved else next(rest) for p in range(rank)]
    return transform.transpose(perm), targets


def _stride(values: Any, transform: IndexTransform, dims: list[int]) -> IndexTransform:
    """Input x of a selected dimension becomes x * stride (TensorStore's stride op)."""
    given = [1 if v is None else int(v) for v in _per_dim(values, len(dims), "stride")]
    strides = _scatter(given, dims, transform.input_rank)
    d = transform.domain
    bounds = [_strided_bounds(d, j, s) for j, s in enumerate(strides)]
    domain = IndexDomain(*(tuple(x[i] for x in bounds) for i in range(4)), d.labels)
    inner = IndexTransform(domain, tuple(OutputIndexMap(0, s or 1, j)
                                         for j, s in enumerate(strides)))
    return transform.compose(inner)


def _strided_bounds(d: IndexDomain, j: int, stride: int | None) -> tuple[int, int, bool, bool]:
    """The inputs x with x * stride in dimension j's bounds (a negative stride swaps the
    ends and their implicit flags; infinite ends stay infinite)."""
    lo, last = d.inclusive_min[j], d.exclusive_max[j] - 1  # +-INF when infinite
    ilo, ihi = d.implicit_lower_bounds[j], d.implicit_upper_bounds[j]
    if stride is None or stride == 1:
        return lo, last + 1, ilo, ihi
    if stride == 0:
        raise SelectionError(f"stride: dimension {j} cannot have stride 0")
    if lo > last:  # empty: TensorStore puts it at ceil(origin / stride), whatever the sign
        first = -(-lo // stride)
        return (first, first, ihi, ilo) if stride < 0 else (first, first, ilo, ihi)
    if stride < 0:
        lo, last, ilo, ihi = last, lo, ihi, ilo
    first = -INF if abs(lo) == INF else -(-lo // stride)  # ceil(lo / stride)
    end = INF if abs(last) == INF else last // stride  # floor(last / stride)
    return first, max(first, end + 1), ilo, ihi


def _mark_implicit(value: Any, transform: IndexTransform, dims: list[int]) -> IndexTransform:
    lower, upper = (value.start, value.stop) if isinstance(value, slice) else (value, value)
    stepped = isinstance(value, slice) and value.step is not None
    for v in (lower, upper):
        if stepped or v is not None and not isinstance(v, bool | int | np.bool_):
            raise SelectionTypeError(f"mark_bounds_implicit: expected True, False or None (or "
                                     f"a slice of them), got {value!r}")
    d = transform.domain
    # Over a domain empty between explicit bounds TensorStore's index arrays are constants,
    # so it allows this; zarrkit keeps them, and reading refuses one that no longer covers
    # a dimension whose implicit bounds grew.
    pinned = not certainly_empty(d)
    flags = [list(d.implicit_lower_bounds), list(d.implicit_upper_bounds)]
    for j in dims:
        for side, v in zip(flags, (lower, upper), strict=True):
            side[j] = side[j] if v is None else bool(v)
        if pinned and (flags[0][j] or flags[1][j]) and _read_by_array(transform, j):
            raise SelectionValueError(f"mark_bounds_implicit: dimension {j} is read by an "
                                      "index array, so its bounds cannot be implicit")
    domain = replace(d, implicit_lower_bounds=tuple(flags[0]),
                     implicit_upper_bounds=tuple(flags[1]))
    return IndexTransform(domain, transform.output)


def _read_by_array(transform: IndexTransform, j: int) -> bool:
    """An index array varies along j; a one-valued one (left by a diagonal) reads the
    dimensions of extent 1, as TensorStore's keeps the diagonal's stride."""
    extent = transform.domain.shape[j]
    return any(m.method == "array" and (m.index_array.shape[j] > 1 or m.index_array.size == 1
                                        and extent == 1) for m in transform.output)


def _diagonal(transform: IndexTransform, dims: list[int]) -> IndexTransform:
    """The selected dimensions become one (the first), over the intersection of their
    bounds; a bound is implicit only if all of them are."""
    d = transform.domain
    lo = max((d.inclusive_min[j] for j in dims), default=-INF)
    hi = min((d.exclusive_max[j] for j in dims), default=INF_MAX)
    ilo = all(d.implicit_lower_bounds[j] for j in dims)
    ihi = all(d.implicit_upper_bounds[j] for j in dims)
    rest = [j for j in range(d.rank) if j not in dims]
    parts = [(lo, max(lo, hi), ilo, ihi, "")] + [
        (d.inclusive_min[j], d.exclusive_max[j], d.implicit_lower_bounds[j],
         d.implicit_upper_bounds[j], d.labels[j]) for j in rest]
    domain = IndexDomain(*(tuple(x[i] for x in parts) for i in range(5)))
    output = tuple(OutputIndexMap(0, 1, 0 if j in dims else 1 + rest.index(j))
                   for j in range(d.rank))
    return transform.compose(IndexTransform(domain, output), keep_arrays=True)


# -- the expression ---------------------------------------------------------------------------


class DimExpression:
    """A dimension selection (`d[...]`) and the operations chained onto it."""

    def __init__(self, selection: tuple[Any, ...], ops: tuple[Any, ...] = ()) -> None:
        self._selection = selection
        self._ops = ops

    def _then(self, op: Any) -> DimExpression:
        if isinstance(op, _Indexing) and op.new and self._ops:
            raise SelectionError("indexing: newaxis (None) is only allowed in the first "
                                 "operation of a dimension expression")
        return DimExpression(self._selection, self._ops + (op,))

    def __getitem__(self, indices: Any) -> DimExpression:
        return self._then(_Indexing(indices, "numpy"))

    @property
    def oindex(self) -> _Subscript:
        return _Subscript(self, lambda terms: _Indexing(terms, "outer"))

    @property
    def vindex(self) -> _Subscript:
        return _Subscript(self, lambda terms: _Indexing(terms, "vectorized"))

    def _named(name: str) -> Any:  # noqa: N805 - builds the properties below
        return property(lambda self: _Subscript(self, lambda arg: (name, arg)))

    translate_to = _named("translate_to")
    translate_by = _named("translate_by")
    translate_backward_by = _named("translate_backward_by")
    stride = _named("stride")
    label = _named("label")
    transpose = _named("transpose")
    mark_bounds_implicit = _named("mark_bounds_implicit")
    del _named

    @property
    def diagonal(self) -> DimExpression:
        return self._then(("diagonal", None))

    def __repr__(self) -> str:
        text = "d[" + ",".join(_text(x) for x in self._selection) + "]"
        for op in self._ops:
            if isinstance(op, _Indexing):
                text += op.describe()
            elif op[0] == "diagonal":
                text += ".diagonal"
            else:
                text += f".{op[0]}[{op[1]!r}]"
        return text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DimExpression) and repr(self) == repr(other)

    __hash__ = None  # type: ignore[assignment]

    def dimensions(self, domain: IndexDomain) -> list[int]:
        """The dimensions of `domain` this expression's `d[...]` selects, in its order."""
        return _resolve(self._selection, domain, domain.rank)

    def apply(self, transform: IndexTransform) -> IndexTransform:
        """The transform with the operations applied (what `view[expression]` uses)."""
        if not self._ops:
            raise SelectionError(f"{self!r}: a dimension expression needs at least one "
                                 "operation")
        first = self._ops[0]
        rank = transform.input_rank
        if isinstance(first, _Indexing) and first.new:
            lone = len(first.terms) == 1  # a lone None adds one per selected dimension
            rank += first.new if not lone else _new_axes_selected(
                self._selection, transform.domain)
        dims = _resolve(self._selection, transform.domain, rank)
        for op in self._ops:
            transform, dims = _apply_op(op, transform, dims)
        return transform


def _new_axes_selected(items: tuple[Any, ...], domain: IndexDomain) -> int:
    """How many dimensions `d[items][None]` names: as many as it adds, and it names
    positions of the result, whose rank depends on that count (`d[-2:][None]` names two)."""
    for k in range(MAX_RANK + 1):
        try:
            if len(_resolve(items, domain, domain.rank + k)) == k:
                return k
        except SelectionError:
            continue
    if any(isinstance(x, slice) for x in items):
        raise SelectionError(f"dimension selection d[{','.join(map(_text, items))}]: the "
                             "number of new dimensions it names is not determined (give the "
                             "range's start and stop)")
    return len(items)  # resolving with this rank raises the error


def _apply_op(op: Any, transform: IndexTransform, dims: list[int]) -> tuple[IndexTransform,
                                                                             list[int]]:
    if isinstance(op, _Indexing):
        return op.apply(transform, dims)
    name, arg = op
    if name == "transpose":
        return _transpose(arg, transform, dims)
    if name == "diagonal":
        return _diagonal(transform, dims), [0]
    if name == "label":
        return _label(arg, transform, dims), dims
    if name == "stride":
        return _stride(arg, transform, dims), dims
    if name == "mark_bounds_implicit":
        return _mark_implicit(arg, transform, dims), dims
    return _translate(name, arg, transform, dims), dims


class _Subscript:
    """`expression.op[args]` -> the expression with the operation added."""

    def __init__(self, expression: DimExpression, make: Any) -> None:
        self._expression = expression
        self._make = make

    def __getitem__(self, args: Any) -> DimExpression:
        return self._expression._then(self._make(args))


class _DimSelector:
    """`d[...]`: start a dimension expression by selecting dimensions."""

    def __getitem__(self, selection: Any) -> DimExpression:
        return DimExpression(_selection_items(selection))

    def __repr__(self) -> str:
        return "zarrkit.d"


d = _DimSelector()

"""Index domains and index transforms, with TensorStore's semantics and JSON forms.

An `IndexDomain` is a box of integer coordinates: per dimension an inclusive lower and an
exclusive upper bound, each possibly *implicit* (resizable; shown as `[[n]]` in JSON and `n*`
in text), and a label. As in TensorStore, an infinite bound is the inclusive index -INF or
+INF (so +inf is the exclusive_max INF_MAX), and finite indices lie strictly between. An
`IndexTransform` maps each point of its input domain to a point of the array: every output
dimension is a constant, `offset + stride * input[j]`, or an index array over the input domain
(`index_array`, broadcast with size-1 dimensions).

The operations views offer (translate, label, transpose, numpy-style, outer and vectorized
indexing) each build a new transform; indexing composes an "inner" transform (new input ->
old input) with the current one. As in TensorStore, indices are domain coordinates: negative
integers are not counted from the end, and explicit bounds are checked, implicit ones are not.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..errors import SelectionError, SelectionTypeError, SelectionValueError, SpecError

INF = 2**62 - 1  # TensorStore's infinite index: inclusive bounds -INF and +INF are infinite
INF_MAX = INF + 1  # the exclusive_max of an infinite upper bound

# -- JSON helpers ----------------------------------------------------------------------------


def _bound_from_json(value: Any, where: str, infinity: str) -> tuple[int, bool]:
    """(bound, implicit) from `5`, `[5]` (implicit) or `infinity`: "-inf" (for lower bounds,
    read as -INF) or "+inf" (for upper bounds, read as the exclusive INF_MAX)."""
    implicit = isinstance(value, list)
    if implicit:
        if len(value) != 1:
            raise SpecError(f"{where}: expected a bound or [bound], got {value!r}")
        value = value[0]
    if isinstance(value, str) and value == infinity:
        return (-INF if value == "-inf" else INF_MAX), implicit
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise SpecError(f"{where}: expected an integer bound or {infinity!r}, got {value!r}")
    return int(value), implicit


def _bound_to_json(value: int, implicit: bool) -> Any:
    v: Any = "-inf" if value == -INF else "+inf" if value == INF_MAX else int(value)
    return [v] if implicit else v


def _int_list(value: Any, rank: int | None, where: str) -> list[Any]:
    if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
        raise SpecError(f"{where}: expected a list, got {value!r}")
    value = list(value)
    if rank is not None and len(value) != rank:
        raise SpecError(f"{where}: expected {rank} values, got {len(value)}")
    return value


def _text(bound: int) -> str:
    return "-inf" if bound == -INF else "+inf" if bound == INF_MAX else str(bound)


def _trunc_div(a: int, b: int) -> int:
    """a / b rounded toward zero (C++ integer division, which TensorStore's striding uses)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


# -- IndexDomain.make's argument checks (what TensorStore's IndexDomain(...) accepts) ---------

MAX_RANK = 32  # TensorStore's limit


def _make_member(value: Any, name: str) -> tuple[Any, ...]:
    """One keyword of IndexDomain.make as a tuple of checked, converted entries."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise SpecError(f"index domain: {name}: expected a sequence, got {value!r}")
    convert = (_make_label if name == "labels" else
               _make_flag if name.startswith("implicit") else _make_index)
    return tuple(convert(v, f"{name}[{i}]") for i, v in enumerate(value))


def _make_index(value: Any, where: str) -> int:
    # Integers, numpy integers and bools (anything with __index__), within int64, as
    # TensorStore; floats (1.5 would be truncated) and infinities are refused as there.
    try:
        index = operator.index(value)
    except TypeError:
        raise SpecError(f"index domain: {where}: expected an integer, got {value!r}") from None
    if not -2**63 <= index < 2**63:
        raise SpecError(f"index domain: {where}: {index} is outside the 64-bit index range")
    return index


def _make_flag(value: Any, where: str) -> bool:
    if value is None or isinstance(value, bool | int | float | np.bool_ | np.number):
        return bool(value)
    raise SpecError(f"index domain: {where}: expected a bool, got {value!r}")


def _make_label(value: Any, where: str) -> str:
    if value is None or isinstance(value, str):
        return str(value or "")
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            pass
    raise SpecError(f"index domain: {where}: expected a string or None, got {value!r}")


def _make_rank(rank: Any, members: dict[str, tuple[Any, ...]]) -> int:
    """The rank `rank` gives or the members imply; all must agree."""
    source = "rank"
    if rank is not None:
        rank = _make_index(rank, "rank")
    for name, values in members.items():
        if rank is None:
            rank, source = len(values), name
        elif len(values) != rank:
            raise SpecError(f"index domain: {name} has {len(values)} entries, but {source} "
                            f"gives rank {rank}")
    if rank is None:
        raise SpecError("index domain: the rank is not specified")
    if not 0 <= rank <= MAX_RANK:
        raise SpecError(f"index domain: rank must be in [0, {MAX_RANK}], got {rank}")
    return rank


def _check_intervals(lo: Sequence[int], hi: Sequence[int], upper: str | None) -> None:
    """Refuse, naming the members, what IndexDomain.__post_init__ would refuse."""
    for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
        if b < a or not -INF <= a < INF or not -INF + 1 < b <= INF_MAX:
            given = f"inclusive_min {_text(a)}" + (f" and {upper} " + _text(
                b if upper == "exclusive_max" else b - a if upper == "shape" else b - 1)
                if upper else "")
            raise SpecError(f"index domain: dimension {i}: {given} do not give a valid "
                            "interval")


# -- Dim ---------------------------------------------------------------------------------------


_DIM_FLAGS = frozenset({"label", "implicit_lower", "implicit_upper"})


@dataclass(frozen=True, init=False, eq=False)
class Dim:
    """One dimension of an index domain (`domain[0]`, `domain["x"]`): TensorStore's `Dim`,
    built as `ts.Dim` is: `Dim()`/`Dim("x")` unbounded, `Dim(10)`/`Dim(size=10, inclusive_min=5)`
    sized, `Dim(5, 10)` half-open, `Dim(inclusive_min=5, inclusive_max=9)` closed; an omitted
    bound is infinite and implicit. As `ts.Dim`: at most two positional arguments, unhashable,
    and comparable only with another Dim."""

    inclusive_min: int
    exclusive_max: int
    label: str
    implicit_lower: bool
    implicit_upper: bool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        lo, hi, label, flags = _dim_args(args, kwargs)
        lower, upper = (_dim_flag(kwargs[k], k) if kwargs.get(k) is not None else v
                        for k, v in zip(("implicit_lower", "implicit_upper"), flags, strict=True))
        if hi < lo or not -INF <= lo < INF or not -INF + 1 < hi <= INF_MAX:
            raise SpecError(f"Dim: [{_text(lo)}, {_text(hi)}) is not a valid interval")
        for name, value in (("inclusive_min", lo), ("exclusive_max", hi), ("label", label),
                            ("implicit_lower", lower), ("implicit_upper", upper)):
            object.__setattr__(self, name, value)

    @property
    def inclusive_max(self) -> int:
        return self.exclusive_max - 1

    @property
    def exclusive_min(self) -> int:
        return self.inclusive_min - 1

    @property
    def size(self) -> int:
        return self.exclusive_max - self.inclusive_min

    @property
    def finite(self) -> bool:
        return self.inclusive_min != -INF and self.exclusive_max != INF_MAX

    @property
    def empty(self) -> bool:
        return self.size == 0

    def __len__(self) -> int:
        return self.size  # TensorStore's, even unbounded (at most 2**63 - 1, len()'s limit)

    def __iter__(self) -> Any:
        if not self.finite:
            raise SelectionValueError(f"cannot iterate over the unbounded dimension {self}")
        return iter(range(self.inclusive_min, self.exclusive_max))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Dim):  # TensorStore's TypeError, not False
            raise SelectionTypeError(f"a Dim compares only with a Dim, not {other!r}")
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment] - as ts.Dim, which defines == only

    def _key(self) -> tuple[Any, ...]:
        return (self.inclusive_min, self.exclusive_max, self.label, self.implicit_lower,
                self.implicit_upper)

    def __contains__(self, other: object) -> bool:
        """An index in the interval, or a Dim within it (an empty one is within any)."""
        if isinstance(other, Dim):
            return other.empty or (self.inclusive_min <= other.inclusive_min
                                   and other.exclusive_max <= self.exclusive_max)
        if not isinstance(other, int | np.integer | np.bool_):
            raise SelectionTypeError(f"Dim contains integers and Dims, not {other!r}")
        return self.inclusive_min <= int(other) < self.exclusive_max

    def hull(self, other: Dim) -> Dim:
        """The smallest interval holding both (an empty one adds nothing); each bound keeps
        the implicit flag of the Dim it came from, and the labels must agree."""
        label = self._common_label(other, "hull")
        if self.empty or other.empty:
            kept = other if self.empty and not other.empty else self
            return _dim(kept.inclusive_min, kept.exclusive_max, label, kept.implicit_lower,
                        kept.implicit_upper)
        lo, lower = _bound(self.inclusive_min, self.implicit_lower, other.inclusive_min,
                           other.implicit_lower, min)
        hi, upper = _bound(self.exclusive_max, self.implicit_upper, other.exclusive_max,
                           other.implicit_upper, max)
        return _dim(lo, hi, label, lower, upper)

    def intersect(self, other: Dim) -> Dim:
        """The overlap (empty at the larger lower bound when there is none); each bound keeps
        the implicit flag of the Dim it came from, and the labels must agree."""
        label = self._common_label(other, "intersect")
        lo, lower = _bound(self.inclusive_min, self.implicit_lower, other.inclusive_min,
                           other.implicit_lower, max)
        hi, upper = _bound(self.exclusive_max, self.implicit_upper, other.exclusive_max,
                           other.implicit_upper, min)
        return _dim(lo, max(lo, hi), label, lower, upper)

    def _common_label(self, other: Any, what: str) -> str:
        if not isinstance(other, Dim):
            raise SpecError(f"Dim.{what}: expected a Dim, got {other!r}")
        if self.label and other.label and self.label != other.label:
            raise SpecError(f"Dim.{what}: dimension labels {self.label!r} and {other.label!r} "
                            "do not match")
        return self.label or other.label

    def __str__(self) -> str:
        text = ("(" if self.inclusive_min == -INF else "[") + _text(self.inclusive_min) + \
            ("*" if self.implicit_lower else "") + ", " + _text(self.exclusive_max) + \
            ("*" if self.implicit_upper else "") + ")"
        return f'"{self.label}": {text}' if self.label else text

    def __repr__(self) -> str:
        parts = [f"inclusive_min={self.inclusive_min}"] if self.inclusive_min != -INF else []
        if self.implicit_lower != (self.inclusive_min == -INF):  # each flag after its bound
            parts.append(f"implicit_lower={self.implicit_lower}")
        parts += [f"exclusive_max={self.exclusive_max}"] if self.exclusive_max != INF_MAX else []
        if self.implicit_upper != (self.exclusive_max == INF_MAX):
            parts.append(f"implicit_upper={self.implicit_upper}")
        parts += [f'label="{self.label}"'] if self.label else []
        return f"Dim({', '.join(parts)})"


def _dim(lo: int, hi: int, label: str, lower: bool, upper: bool) -> Dim:
    return Dim(inclusive_min=lo, exclusive_max=hi, label=label, implicit_lower=lower,
               implicit_upper=upper)


def _bound(a: int, a_implicit: bool, b: int, b_implicit: bool,
           pick: Any) -> tuple[int, bool]:
    """The bound `pick` (min or max) chooses and its implicit flag (both must be, on a tie)."""
    chosen = pick(a, b)
    if a == b:
        return chosen, a_implicit and b_implicit
    return chosen, a_implicit if chosen == a else b_implicit


def _dim_args(args: tuple[Any, ...], kwargs: dict[str, Any]
              ) -> tuple[int, int, str, tuple[bool, bool]]:
    """`ts.Dim`'s four signatures resolved as TensorStore does: (inclusive_min,
    exclusive_max, label, default implicit flags)."""
    keys, n = set(kwargs), len(args)
    if n > 2:  # Dim(1, 4, "x"): a TypeError in TensorStore, whose label is a keyword there
        raise SelectionTypeError(f"Dim: at most 2 positional arguments, got "
                                 f"{_call_text(args, kwargs)} (give label= and the flags as "
                                 "keywords)")
    if n <= 1 and keys <= _DIM_FLAGS and all(map(_labelish, args)):  # unbounded
        if args and "label" in keys:
            raise SelectionTypeError("Dim: the label is given twice")
        label = _dim_label(args[0] if args else kwargs.get("label"))
        return -INF, INF_MAX, label, (True, True)
    # Dim(size, label); with label= too, (1, None) are the bounds, as TensorStore's overloads
    if keys <= _DIM_FLAGS | {"size", "inclusive_min"} and (
            (n == 0 and "size" in keys) or (n >= 1 and "size" not in keys and (
                n == 1 or _labelish(args[1]) and "label" not in keys))):
        return _sized_dim(args, kwargs)
    bounds = ("inclusive_min", "exclusive_max")
    if keys <= _DIM_FLAGS | set(bounds[n:]):
        given = {**dict(zip(bounds, args, strict=False)), **kwargs}
        return _bounded_dim(given.get("inclusive_min"), given.get("exclusive_max"), 0, kwargs)
    if n == 0 and "inclusive_max" in keys and keys <= _DIM_FLAGS | {"inclusive_min",
                                                                    "inclusive_max"}:
        return _bounded_dim(kwargs.get("inclusive_min"), kwargs["inclusive_max"], 1, kwargs)
    raise SelectionTypeError(f"Dim: cannot build an interval from {_call_text(args, kwargs)}: "
                             "give a label, a size (and inclusive_min), inclusive_min and "
                             "exclusive_max, or inclusive_min and inclusive_max")


def _labelish(value: Any) -> bool:
    return value is None or isinstance(value, str | bytes)


def _sized_dim(args: tuple[Any, ...], kwargs: dict[str, Any]
               ) -> tuple[int, int, str, tuple[bool, bool]]:
    """`Dim(size, label=None, *, inclusive_min=0)`: [inclusive_min, inclusive_min + size)."""
    size = args[0] if args else kwargs["size"]
    label = _dim_label(args[1] if len(args) == 2 else kwargs.get("label"))
    lo = _dim_index(kwargs.get("inclusive_min", 0), "inclusive_min", 0)
    if size is None:
        return lo, INF_MAX, label, (False, True)
    size = _dim_index(size, "size", 0)
    if size < 0 or not -INF <= lo < INF or lo + size > INF_MAX:
        raise SpecError(f"Dim: inclusive_min {_text(lo)} and size {size} do not give a valid "
                        "interval")
    return lo, lo + size, label, (False, False)


def _bounded_dim(lo: Any, hi: Any, closed: int, kwargs: dict[str, Any]
                 ) -> tuple[int, int, str, tuple[bool, bool]]:
    """[lo, hi) (`closed` 1: [lo, hi]); a bound not given (None) is infinite and implicit."""
    upper = "inclusive_max" if closed else "exclusive_max"
    return (_dim_index(lo, "inclusive_min", -INF), _dim_index(hi, upper, INF_MAX - closed)
            + closed, _dim_label(kwargs.get("label")), (lo is None, hi is None))


# ts.Dim's arguments of the wrong type (or beyond int64) match none of its overloads: a
# TypeError there, so a SelectionTypeError here; bad values of the right type are SpecErrors.

def _dim_index(value: Any, name: str, default: int) -> int:
    if value is None:
        return default
    # bools count, as in TensorStore
    if not isinstance(value, int | np.integer | np.bool_) or not -2**63 <= int(value) < 2**63:
        raise SelectionTypeError(f"Dim: {name} must be a 64-bit integer or None, got {value!r}")
    return int(value)


def _dim_label(value: Any) -> str:
    if not _labelish(value):
        raise SelectionTypeError(f"Dim: label must be a string or None, got {value!r}")
    return _make_label(value, "label")


def _dim_flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool | int | float | np.bool_ | np.number):
        raise SelectionTypeError(f"Dim: {name} must be a bool, got {value!r}")
    return bool(value)


def _call_text(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    return "(" + ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
                           ) + ")"


# -- TensorStore's subscript-style operations -------------------------------------------------


class _Operation:
    """`node.name[args]`, TensorStore's form, is `node[d[:].name[args]]`. Wrapping a method
    keeps `node.name(args)` working, and `Class.name` is then the plain function."""

    def __init__(self, method: Any = None) -> None:
        self._method = method
        self.__doc__ = getattr(method, "__doc__", None)

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, node: Any, owner: type | None = None) -> Any:
        if node is None:
            return self if self._method is None else self._method
        return _BoundOperation(node, self._name, self._method)


class _BoundOperation:
    def __init__(self, node: Any, name: str, method: Any) -> None:
        self._node, self._name, self._method = node, name, method

    def __getitem__(self, args: Any) -> Any:
        from .dim_expression import d  # that module imports this one

        return self._node[getattr(d[:], self._name)[args]]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._method is None:
            raise SelectionTypeError(f"{type(self._node).__name__}.{self._name} takes a "
                                     f"subscript: .{self._name}[...], not a call")
        return self._method(self._node, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<{type(self._node).__name__}.{self._name}[...]>"


# -- IndexDomain -----------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexDomain:
    """A box of coordinates with per-bound implicit flags and per-dimension labels."""

    inclusive_min: tuple[int, ...]
    exclusive_max: tuple[int, ...]
    implicit_lower_bounds: tuple[bool, ...]
    implicit_upper_bounds: tuple[bool, ...]
    labels: tuple[str, ...]

    def __post_init__(self) -> None:
        rank = len(self.inclusive_min)
        for name in ("exclusive_max", "implicit_lower_bounds", "implicit_upper_bounds",
                     "labels"):
            if len(getattr(self, name)) != rank:
                raise SpecError(f"index domain: {name} does not have rank {rank}")
        for i, (lo, hi) in enumerate(zip(self.inclusive_min, self.exclusive_max, strict=True)):
            # TensorStore's valid intervals: neither end is the other side's infinity.
            if hi < lo or not -INF <= lo < INF or not -INF + 1 < hi <= INF_MAX:
                raise SpecError(f"index domain: dimension {i} has bounds [{_text(lo)}, "
                                f"{_text(hi)}), not a valid interval")
        named = [label for label in self.labels if label]
        if len(named) != len(set(named)):
            raise SpecError(f"index domain: dimension labels {list(self.labels)} are not unique")

    @classmethod
    def make(cls, rank: int | None = None, *, inclusive_min: Sequence[int] | None = None,
             exclusive_max: Sequence[int] | None = None, inclusive_max: Sequence[int] | None = None,
             shape: Sequence[int] | None = None, labels: Sequence[str | None] | None = None,
             implicit_lower_bounds: Sequence[bool] | None = None,
             implicit_upper_bounds: Sequence[bool] | None = None) -> IndexDomain:
        """TensorStore's `IndexDomain(...)` keywords; unspecified bounds are infinite."""
        members = {name: _make_member(value, name) for name, value in (
            ("inclusive_min", inclusive_min), ("exclusive_max", exclusive_max),
            ("inclusive_max", inclusive_max), ("shape", shape), ("labels", labels),
            ("implicit_lower_bounds", implicit_lower_bounds),
            ("implicit_upper_bounds", implicit_upper_bounds)) if value is not None}
        rank = _make_rank(rank, members)
        uppers = [name for name in ("shape", "exclusive_max", "inclusive_max") if name in members]
        if len(uppers) > 1:
            raise SpecError(f"index domain: {uppers[0]} and {uppers[1]} cannot both be given")
        lo = members.get("inclusive_min", [0 if "shape" in members else -INF] * rank)
        upper = uppers[0] if uppers else None
        hi = [INF_MAX] * rank if upper is None else members[upper]
        if upper == "shape":
            hi = [a + n for a, n in zip(lo, hi, strict=True)]
        elif upper == "inclusive_max":
            hi = [v + 1 for v in hi]
        _check_intervals(lo, hi, upper)
        return cls(tuple(lo), tuple(hi),
                   members.get("implicit_lower_bounds", (inclusive_min is None
                                                         and shape is None,) * rank),
                   members.get("implicit_upper_bounds", (upper is None,) * rank),
                   members.get("labels", ("",) * rank))

    @classmethod
    def from_shape(cls, shape: Sequence[int], labels: Sequence[str] | None = None,
                   implicit_upper: bool = True) -> IndexDomain:
        """[0, shape) with resizable (implicit) upper bounds: an array's own domain."""
        rank = len(shape)
        return cls((0,) * rank, tuple(int(s) for s in shape), (False,) * rank,
                   (implicit_upper,) * rank, tuple(labels or ("",) * rank))

    @classmethod
    def from_json(cls, json: Any, where: str = "domain") -> IndexDomain:
        if isinstance(json, IndexDomain):
            return json
        if not isinstance(json, dict):
            raise SpecError(f"{where}: expected an object, got {json!r}")
        unknown = set(json) - {"rank", "inclusive_min", "exclusive_max", "inclusive_max",
                               "shape", "labels"}
        if unknown:
            raise SpecError(f"{where}: unknown member(s) {sorted(unknown)}")
        return _domain_from_members(json, "", where)

    def to_json(self, prefix: str = "") -> dict[str, Any]:
        """TensorStore's JSON (`prefix` "input_" gives a transform's input members)."""
        out: dict[str, Any] = {}
        if any(v > -INF or not f for v, f in zip(self.inclusive_min, self.implicit_lower_bounds,
                                                 strict=True)):
            out[prefix + "inclusive_min"] = [_bound_to_json(v, f) for v, f in zip(
                self.inclusive_min, self.implicit_lower_bounds, strict=True)]
        if any(v < INF_MAX or not f for v, f in zip(self.exclusive_max,
                                                     self.implicit_upper_bounds, strict=True)):
            out[prefix + "exclusive_max"] = [_bound_to_json(v, f) for v, f in zip(
                self.exclusive_max, self.implicit_upper_bounds, strict=True)]
        if any(self.labels):
            out[prefix + "labels"] = list(self.labels)
        if not out or self.rank == 0:
            out[prefix + "rank"] = self.rank
        return out

    # -- properties (TensorStore's names)
    @property
    def rank(self) -> int:
        return len(self.inclusive_min)

    ndim = rank

    @property
    def origin(self) -> tuple[int, ...]:
        return self.inclusive_min

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(hi - lo for lo, hi in zip(self.inclusive_min, self.exclusive_max,
                                               strict=True))

    @property
    def inclusive_max(self) -> tuple[int, ...]:
        return tuple(hi - 1 for hi in self.exclusive_max)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __len__(self) -> int:
        return self.rank

    def __iter__(self) -> Any:
        return (self[j] for j in range(self.rank))

    def __repr__(self) -> str:
        parts = []
        for i in range(self.rank):
            lo, hi = self.inclusive_min[i], self.exclusive_max[i]
            text = ("(" if lo == -INF else "[") + _text(lo) + \
                ("*" if self.implicit_lower_bounds[i] else "") + ", " + _text(hi) + \
                ("*" if self.implicit_upper_bounds[i] else "") + ")"
            label = self.labels[i]
            parts.append(f'"{label}": {text}' if label else text)
        return "{ " + ", ".join(parts) + " }" if parts else "{}"

    def with_labels(self, labels: Sequence[str]) -> IndexDomain:
        return replace(self, labels=tuple(labels))

    # -- TensorStore's operations (`domain.translate_to[...]`, ...)
    translate_to = _Operation()
    translate_by = _Operation()
    translate_backward_by = _Operation()
    label = _Operation()
    mark_bounds_implicit = _Operation()

    def transpose(self, axes: Any = None) -> IndexDomain:
        """The dimensions in the order `axes` (indices or labels); reversed by default."""
        return IndexTransform(self, ()).transpose(axes).domain

    @property
    def T(self) -> IndexDomain:  # noqa: N802 - numpy's and TensorStore's name
        return self.transpose()

    @property
    def index_exp(self) -> tuple[slice, ...]:
        """The bounds as numpy slices (None for an infinite bound)."""
        return tuple(slice(None if lo == -INF else lo, None if hi == INF_MAX else hi)
                     for lo, hi in zip(self.inclusive_min, self.exclusive_max, strict=True))

    def hull(self, other: IndexDomain) -> IndexDomain:
        """The smallest domain holding both, dimension by dimension (`Dim.hull`)."""
        return self._each_dim(other, "hull")

    def intersect(self, other: IndexDomain) -> IndexDomain:
        """The overlap of both, dimension by dimension (`Dim.intersect`)."""
        return self._each_dim(other, "intersect")

    def _each_dim(self, other: Any, what: str) -> IndexDomain:
        if not isinstance(other, IndexDomain):
            raise SpecError(f"IndexDomain.{what}: expected an IndexDomain, got {other!r}")
        if other.rank != self.rank:
            raise SpecError(f"IndexDomain.{what}: rank {self.rank} and rank {other.rank} "
                            "do not match")
        dims = [getattr(a, what)(b) for a, b in zip(self, other, strict=True)]
        return IndexDomain(*(tuple(getattr(x, name) for x in dims) for name in (
            "inclusive_min", "exclusive_max", "implicit_lower", "implicit_upper", "label")))

    def __getitem__(self, selection: Any) -> Any:
        """TensorStore's `domain[...]`: one dimension (`domain[0]`, `domain["x"]`: a `Dim`),
        a dimension expression (`d["x"][2:5]`), another domain to slice by (dimensions
        matched by label, else by position), a transform to apply, or a selection of
        dimensions (`domain[1:]`, `domain["x", "z"]`)."""
        from .dim_expression import DimExpression, d  # that module imports this one

        if (isinstance(selection, DimExpression) and selection._ops) \
                or isinstance(selection, IndexDomain | IndexTransform):
            # Through a transform with no output (TensorStore's domain-only transform): no
            # output map checks the index arrays' values.
            return IndexTransform(self, ())[selection].domain
        if isinstance(selection, str) or (_is_int(selection) and not isinstance(selection, bool)):
            (j,) = d[selection].dimensions(self)
            return _dim(self.inclusive_min[j], self.exclusive_max[j], self.labels[j],
                        self.implicit_lower_bounds[j], self.implicit_upper_bounds[j])
        expression = selection if isinstance(selection, DimExpression) else d[selection]
        dims = expression.dimensions(self)
        return IndexDomain(*(tuple(getattr(self, name)[j] for j in dims) for name in (
            "inclusive_min", "exclusive_max", "implicit_lower_bounds", "implicit_upper_bounds",
            "labels")))

    def merge(self, other: IndexDomain, where: str) -> IndexDomain:
        """The domain satisfying both (equal ranks, bounds and non-empty labels)."""
        if self.rank != other.rank:
            raise SpecError(f"{where}: rank {self.rank} does not match rank {other.rank}")
        for i in range(self.rank):
            if self.labels[i] and other.labels[i] and self.labels[i] != other.labels[i]:
                raise SpecError(f"{where}: dimension {i} labels {self.labels[i]!r} and "
                                f"{other.labels[i]!r} do not match")
            for name, a, b, infinite in (
                    ("lower", self.inclusive_min[i], other.inclusive_min[i], -INF),
                    ("upper", self.exclusive_max[i], other.exclusive_max[i], INF_MAX)):
                if infinite not in (a, b) and a != b:
                    raise SpecError(f"{where}: dimension {i} {name} bounds {a} and {b} do "
                                    "not match")
        return IndexDomain(
            tuple(b if a == -INF else a for a, b in zip(self.inclusive_min,
                                                         other.inclusive_min, strict=True)),
            tuple(b if a == INF_MAX else a for a, b in zip(self.exclusive_max,
                                                            other.exclusive_max, strict=True)),
            tuple(a and b for a, b in zip(self.implicit_lower_bounds,
                                          other.implicit_lower_bounds, strict=True)),
            tuple(a and b for a, b in zip(self.implicit_upper_bounds,
                                          other.implicit_upper_bounds, strict=True)),
            tuple(a or b for a, b in zip(self.labels, other.labels, strict=True)))


def _domain_from_members(json: dict[str, Any], prefix: str, where: str) -> IndexDomain:
    def get(name: str) -> Any:
        value = json.get(prefix + name)  # a numpy array has no single truth value: a list
        return value.tolist() if isinstance(value, np.ndarray) else value

    rank = get("rank")
    if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int | np.integer)
                             or rank < 0):
        raise SpecError(f"{where}.{prefix}rank: expected a non-negative integer, got {rank!r}")
    for name in ("inclusive_min", "exclusive_max", "inclusive_max", "shape", "labels"):
        if get(name) is not None:
            rank = len(_int_list(get(name), rank, f"{where}.{prefix}{name}"))
    if rank is None:
        raise SpecError(f"{where}: the rank is not specified")
    lo = [_bound_from_json(v, f"{where}.{prefix}inclusive_min", "-inf")
          for v in get("inclusive_min") or (["-inf"] if get("shape") is None else [0]) * rank]
    if get("inclusive_min") is None:
        lo = [(v, get("shape") is None) for v, _ in lo]
    if get("shape") is not None:
        hi = [_bound_from_json(v, f"{where}.{prefix}shape", "+inf") for v in get("shape")]
        hi = [(n if n == INF_MAX else a + n, f) for (a, _), (n, f) in zip(lo, hi, strict=True)]
    elif get("exclusive_max") is not None:
        hi = [_bound_from_json(v, f"{where}.{prefix}exclusive_max", "+inf")
              for v in get("exclusive_max")]
    elif get("inclusive_max") is not None:
        hi = [(v if v == INF_MAX else v + 1, f) for v, f in (
            _bound_from_json(x, f"{where}.{prefix}inclusive_max", "+inf")
            for x in get("inclusive_max"))]
    else:
        hi = [(INF_MAX, True)] * rank
    labels = get("labels") or [""] * rank
    if not all(isinstance(label, str) for label in labels):
        raise SpecError(f"{where}.{prefix}labels: expected strings, got {labels!r}")
    try:
        return IndexDomain(tuple(v for v, _ in lo), tuple(v for v, _ in hi),
                           tuple(f for _, f in lo), tuple(f for _, f in hi), tuple(labels))
    except SpecError as e:  # an empty interval: named by the member it came from
        raise SpecError(f"{where}: {e}") from None


# -- output index maps ----------------------------------------------------------------------


@dataclass(frozen=True)
class OutputIndexMap:
    """constant `offset`; `offset + stride * input[input_dimension]`; or an index array.

    An index array has one axis per input dimension (size 1 where it does not vary), position
    k along an axis meaning input coordinate `inclusive_min + k`; its values are final
    (offset and stride already applied). `valid`: the inclusive range (+-INF: unbounded)
    its values must lie in, from the explicit bounds of the dimensions it indexed (TensorStore's
    index_array_bounds), checked when data moves or the array becomes a single value.
    `scale`: the (offset, stride) TensorStore keeps apart from the array in its JSON (the
    map of the dimension an array indexed); the values are `offset + stride * its array`.
    """

    offset: int = 0
    stride: int = 1
    input_dimension: int | None = None
    index_array: np.ndarray | None = None
    valid: tuple[int, int] | None = None
    scale: tuple[int, int] = (0, 1)

    @property
    def method(self) -> str:
        if self.index_array is not None:
            return "array"
        return "constant" if self.input_dimension is None else "single_input_dimension"

    def to_json(self) -> dict[str, Any]:
        if self.index_array is not None:
            return self._array_json()
        out = {}
        if self.input_dimension is not None:
            out["input_dimension"] = self.input_dimension
            if self.stride != 1:
                out["stride"] = self.stride
        if self.offset:
            out["offset"] = self.offset
        return out

    def _array_json(self) -> dict[str, Any]:
        """TensorStore's form: the array before `scale`, which is written apart, and its
        bounds in the array's terms, only when some value does not meet them anyway."""
        offset, stride = self.scale
        array = (self.index_array - offset) // stride
        out: dict[str, Any] = {"index_array": array.tolist()}
        valid = _unscaled_valid(self.valid, offset, stride)
        if valid is not None and (not array.size or array.min() < valid[0]
                                  or array.max() > valid[1]):
            out["index_array_bounds"] = [_closed_to_json(v) for v in valid]
        if offset:
            out["offset"] = offset
        if stride != 1:
            out["stride"] = stride
        return out

    @classmethod
    def from_json(cls, json: Any, rank: int, where: str) -> OutputIndexMap:
        if not isinstance(json, dict):
            raise SpecError(f"{where}: expected an object, got {json!r}")
        unknown = set(json) - {"offset", "stride", "input_dimension", "index_array",
                               "index_array_bounds"}
        if unknown:
            raise SpecError(f"{where}: unknown member(s) {sorted(unknown)}")
        offset, stride = (_integer(json.get(k, d), f"{where}.{k}")
                          for k, d in (("offset", 0), ("stride", 1)))
        if "index_array" in json:
            array = np.asarray(json["index_array"], dtype=np.int64)
            if array.ndim != rank:
                raise SpecError(f"{where}.index_array: must have rank {rank}")
            valid = None
            if "index_array_bounds" in json:
                valid = _scaled_valid(_closed_from_json(
                    json["index_array_bounds"], f"{where}.index_array_bounds"), offset, stride)
            return cls(offset if not stride else 0,
                       index_array=_scaled_array(array, offset, stride, where),
                       valid=valid, scale=(offset, stride))
        if "index_array_bounds" in json:
            raise SpecError(f"{where}.index_array_bounds: only an index_array map has bounds")
        if "input_dimension" in json:
            dim = json["input_dimension"]
            if not isinstance(dim, int) or not 0 <= dim < rank:
                raise SpecError(f"{where}.input_dimension: {dim!r} is not an input dimension")
            # A zero stride reads no input: TensorStore normalizes it to a constant map.
            return cls(offset, stride, dim) if stride else cls(offset)
        return cls(offset)


def _check_array_bounds(transform: IndexTransform, where: str) -> None:
    """As TensorStore: an index array may not vary along a dimension with an implicit
    bound (its extent there could change, the array's could not)."""
    domain = transform.domain
    for i, m in enumerate(transform.output):
        if m.index_array is None:
            continue
        for j, n in enumerate(m.index_array.shape):
            if n != 1 and (domain.implicit_lower_bounds[j] or domain.implicit_upper_bounds[j]):
                raise SpecError(f"{where}: the index array of output {i} depends on input "
                                f"dimension {j}, whose bounds are implicit")


def _closed_from_json(json: Any, where: str) -> tuple[int, int]:
    """index_array_bounds: [min, max], inclusive, each an integer or "-inf"/"+inf"."""
    if not isinstance(json, list) or len(json) != 2:
        raise SpecError(f"{where}: expected [inclusive_min, inclusive_max], got {json!r}")
    ends = []
    for value in json:
        value = {"-inf": -INF, "+inf": INF}.get(value, value) if isinstance(value, str) else value
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or abs(value) > INF:
            raise SpecError(f"{where}: expected an integer, \"-inf\" or \"+inf\", got "
                            f"{value!r}")
        ends.append(value)
    lo, hi = ends
    if lo == INF or hi == -INF or hi < lo - 1:  # [lo, lo - 1] is the empty interval
        raise SpecError(f"{where}: {json!r} is not a valid closed interval")
    return lo, hi


def _closed_to_json(value: int) -> Any:
    # +-(INF - 1): the last finite indices, which TensorStore's unbounded ranges stop at too.
    return "-inf" if value <= -INF + 1 else "+inf" if value >= INF - 1 else int(value)


def check_array_shapes(transform: IndexTransform, where: str,
                       error: type[Exception] = SpecError) -> None:
    """Each index array's extent along each input dimension: 1 (broadcast) or the domain's
    (one kept over an empty domain may lack the indices of a dimension that grew again)."""
    shape = transform.domain.shape
    for i, m in enumerate(transform.output):
        if m.index_array is None:
            continue
        for j, (n, size) in enumerate(zip(m.index_array.shape, shape, strict=True)):
            if n not in (1, size):
                raise error(f"{where}: the index array of output {i} has shape "
                            f"{list(m.index_array.shape)}, which does not match the input "
                            f"domain's shape {list(shape)} (dimension {j})")


def _integer(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{where}: expected an integer, got {value!r}")
    if not -2**63 <= value < 2**63:  # TensorStore's Index is a 64-bit integer
        raise SpecError(f"{where}: {value} is outside the 64-bit integer range")
    return value


def _constant(value: int) -> OutputIndexMap:
    return OutputIndexMap(int(value))


def _array_map(array: np.ndarray, valid: tuple[int, int] | None = None,
               scale: tuple[int, int] = (0, 1)) -> OutputIndexMap:
    """An index array map; a single value becomes a constant, as TensorStore normalizes
    (checked then against the range the array's values must lie in)."""
    if array.size == 1:
        value = int(array.reshape(-1)[0])
        check_valid(np.asarray(value), valid)
        return _constant(value)
    return OutputIndexMap(index_array=np.asarray(array, dtype=np.int64), valid=valid,
                          scale=scale if scale[1] else (0, 1))


def check_valid(values: np.ndarray, valid: tuple[int, int] | None) -> None:
    """Index array values outside the range `valid` (inclusive) are a SelectionError."""
    if valid is None or not values.size:
        return
    bad = values[(values < valid[0]) | (values > valid[1])]
    if bad.size:
        raise SelectionError(f"index array value {int(bad.flat[0])} is outside the valid "
                             f"range [{_closed_to_json(valid[0])}, {_closed_to_json(valid[1])}]"
                             " of the dimension it indexes")


def _bounded(m: OutputIndexMap, domain: IndexDomain, j: int) -> OutputIndexMap:
    """An index array reading input dimension j of `domain`: its values must be finite
    and lie within j's explicit bounds (implicit ones may still move)."""
    lo = -INF if domain.implicit_lower_bounds[j] else domain.inclusive_min[j]
    last = INF if domain.implicit_upper_bounds[j] else domain.exclusive_max[j] - 1
    lo, last = max(lo, -INF + 1), min(last, INF - 1)
    if m.valid is not None:
        lo, last = max(lo, m.valid[0]), min(last, m.valid[1])
    return replace(m, valid=(lo, last))


def spec_transform(transform: IndexTransform) -> IndexTransform:
    """The transform as TensorStore's spec() writes it: index arrays over an empty domain,
    and those of one value (checked against their bounds), as constant maps."""
    empty = 0 in transform.domain.shape
    output = tuple(m if m.index_array is None else _constant(0) if empty
                   else _array_map(m.index_array, m.valid, m.scale) for m in transform.output)
    return replace(transform, output=output)


def _unscaled_valid(valid: tuple[int, int] | None, offset: int,
                    stride: int) -> tuple[int, int] | None:
    """The inverse of `_scaled_valid`: the raw values v with offset + stride * v in `valid`
    (rounded inward; infinite ends stay infinite)."""
    if valid is None or (offset, stride) == (0, 1):
        return valid
    lo, hi = valid if stride > 0 else valid[::-1]  # dividing by a negative stride flips

    def raw(value: int, low: bool) -> int:
        if abs(value) >= INF - 1:
            return value if stride > 0 else -value
        floor, rest = divmod(value - offset, stride)
        return floor + 1 if low and rest else floor

    return raw(lo, True), raw(hi, False)


def _scaled_valid(valid: tuple[int, int] | None, offset: int,
                  stride: int) -> tuple[int, int] | None:
    if valid is None:
        return None
    ends = [(-v if stride < 0 else v) if abs(v) >= INF else offset + stride * v for v in valid]
    # In order rather than min/max: an empty range [n, n - 1] stays empty.
    return (ends[0], ends[1]) if stride >= 0 else (ends[1], ends[0])


# -- IndexTransform ---------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexTransform:
    """Input domain -> output (array) coordinates, one map per output dimension."""

    domain: IndexDomain
    output: tuple[OutputIndexMap, ...]

    @classmethod
    def identity(cls, domain: IndexDomain) -> IndexTransform:
        return cls(domain, tuple(OutputIndexMap(0, 1, i) for i in range(domain.rank)))

    @property
    def input_rank(self) -> int:
        return self.domain.rank

    @property
    def output_rank(self) -> int:
        return len(self.output)

    def is_identity(self) -> bool:
        return self.output_rank == self.input_rank and all(
            m.method == "single_input_dimension" and (m.offset, m.stride, m.input_dimension)
            == (0, 1, i) for i, m in enumerate(self.output))

    def to_json(self) -> dict[str, Any]:
        out = self.domain.to_json("input_")
        if not self.is_identity():
            out["output"] = [m.to_json() for m in self.output]
        return out

    @classmethod
    def from_json(cls, json: Any, where: str = "transform") -> IndexTransform:
        if isinstance(json, IndexTransform):
            return json
        if not isinstance(json, dict):
            raise SpecError(f"{where}: expected an object, got {json!r}")
        unknown = set(json) - {"input_rank", "input_inclusive_min", "input_exclusive_max",
                               "input_inclusive_max", "input_shape", "input_labels",
                               "output_rank", "output"}
        if unknown:
            raise SpecError(f"{where}: unknown member(s) {sorted(unknown)}")
        domain = _domain_from_members(json, "input_", where)
        if "output" not in json:
            return cls.identity(domain)
        maps = _int_list(json["output"], json.get("output_rank"), f"{where}.output")
        transform = cls(domain, tuple(OutputIndexMap.from_json(m, domain.rank,
                                                               f"{where}.output[{i}]")
                                      for i, m in enumerate(maps)))
        check_array_shapes(transform, where)
        _check_array_bounds(transform, where)
        # A zero stride reads no array value: TensorStore makes the map its constant offset.
        return replace(transform, output=tuple(
            OutputIndexMap(m.offset) if m.index_array is not None and m.scale[1] == 0 else m
            for m in transform.output))

    # -- simple operations ------------------------------------------------------------------
    # Each also takes TensorStore's subscript form, `t.translate_by[1, 2]`: `_Operation`.
    def translate_by(self, offsets: Any) -> IndexTransform:
        shift = _per_dim(offsets, self.input_rank, "translate_by")
        return self._shifted([0 if s is None else int(s) for s in shift])

    def translate_to(self, origins: Any) -> IndexTransform:
        target = _per_dim(origins, self.input_rank, "translate_to")
        shift = []
        for i, t in enumerate(target):
            lo = self.domain.inclusive_min[i]
            if t is not None and lo == -INF:
                raise SelectionError(f"translate_to: dimension {i} has no finite origin")
            shift.append(0 if t is None else int(t) - lo)
        return self._shifted(shift)

    def _shifted(self, shift: list[int]) -> IndexTransform:
        d = self.domain
        domain = replace(d, inclusive_min=tuple(_add(v, s, -INF, 0) for v, s in zip(
            d.inclusive_min, shift, strict=True)), exclusive_max=tuple(
                _add(v, s, INF_MAX, 1) for v, s in zip(d.exclusive_max, shift, strict=True)))
        output = tuple(replace(m, offset=m.offset - m.stride * shift[m.input_dimension])
                       if m.method == "single_input_dimension" else m for m in self.output)
        return IndexTransform(domain, output)

    def label(self, labels: Any) -> IndexTransform:
        one = isinstance(labels, str) or not isinstance(labels, Sequence | np.ndarray)
        labels = [labels] if one else list(labels)
        if not all(isinstance(x, str) for x in labels):
            raise SelectionTypeError(f"label: expected strings, got {labels!r}")
        if len(labels) != self.input_rank:  # TensorStore: a ValueError, as for duplicates
            raise SelectionValueError(f"label: {len(labels)} labels for {self.input_rank} "
                                      "dimensions")
        try:
            return IndexTransform(self.domain.with_labels(labels), self.output)
        except SpecError as exc:
            raise SelectionValueError(str(exc)) from None

    translate_by = _Operation(translate_by)
    translate_to = _Operation(translate_to)
    label = _Operation(label)
    translate_backward_by = _Operation()
    mark_bounds_implicit = _Operation()

    @property
    def T(self) -> IndexTransform:  # noqa: N802 - numpy's and TensorStore's name
        return self.transpose()

    def transpose(self, axes: Any = None) -> IndexTransform:
        rank = self.input_rank
        if axes is None:
            axes = list(reversed(range(rank)))
        elif isinstance(axes, str) or not hasattr(axes, "__iter__"):
            axes = [axes]  # one label or index, as TensorStore reads it
        perm = [_dimension(a, self.domain, "transpose") for a in axes]
        if sorted(perm) != list(range(rank)):
            raise SelectionError(f"transpose: {list(axes)} is not a permutation of {rank} "
                                 "dimensions")
        d = self.domain
        domain = IndexDomain(*(tuple(getattr(d, name)[p] for p in perm) for name in (
            "inclusive_min", "exclusive_max", "implicit_lower_bounds", "implicit_upper_bounds",
            "labels")))
        inverse = {old: new for new, old in enumerate(perm)}
        output = []
        for m in self.output:
            if m.method == "single_input_dimension":
                m = replace(m, input_dimension=inverse[m.input_dimension])
            elif m.method == "array":
                m = replace(m, index_array=np.transpose(m.index_array, perm))
            output.append(m)
        return IndexTransform(domain, tuple(output))

    # -- indexing ----------------------------------------------------------------------------
    __iter__ = None  # not a sequence, though it takes integer indices (as TensorStore's)

    def __getitem__(self, selection: Any) -> IndexTransform:
        """TensorStore's `transform[...]`: a dimension expression, a domain to slice the
        input domain by, a transform to apply first, else a numpy-style selection."""
        from .dim_expression import DimExpression  # that module imports this one

        if isinstance(selection, DimExpression):
            return selection.apply(self)
        if isinstance(selection, IndexDomain):
            return _sliced_by(self, selection)
        if isinstance(selection, IndexTransform):
            if selection.output_rank != self.input_rank:
                raise SelectionError(f"transform: a transform of output rank "
                                     f"{selection.output_rank} cannot index one of input rank "
                                     f"{self.input_rank}")
            return self.compose(propagate_bounds(selection, self.domain))
        return self.index(selection)

    @property
    def oindex(self) -> _TransformIndexer:
        """`transform.oindex[...]`: outer indexing (each index array its own dimension)."""
        return _TransformIndexer(self, "outer")

    @property
    def vindex(self) -> _TransformIndexer:
        """`transform.vindex[...]`: vectorized indexing (index arrays broadcast together)."""
        return _TransformIndexer(self, "vectorized")

    def index(self, selection: Any, mode: str = "numpy") -> IndexTransform:
        """Apply a numpy-style ("numpy"), outer ("outer") or vectorized selection."""
        inner = _selection_transform(self.domain, selection, mode)
        return self.compose(inner)

    def compose(self, inner: IndexTransform, keep_arrays: bool = False) -> IndexTransform:
        """This transform applied after `inner` (whose output rank is our input rank).
        `keep_arrays`: an index array reduced to one value stays an unchecked index array
        (TensorStore's diagonal re-strides index arrays without normalizing them)."""
        coords: list[Any] = [None] * self.input_rank
        empty = certainly_empty(inner.domain)  # no index is used: none is checked
        output = []
        for m in self.output:
            if m.method == "constant":
                output.append(m)
                continue
            if m.method == "single_input_dimension":
                source = inner.output[m.input_dimension]
                if source.method == "array" and not empty:
                    source = _bounded(source, self.domain, m.input_dimension)
                output.append(_scale(source, m.offset, m.stride))
                continue
            # Kept over a domain empty between explicit bounds too, unlike TensorStore (which
            # makes it a constant): a later mark_bounds_implicit may let the domain grow.
            array = _empty_gather(m.index_array, self.domain, inner) if empty else \
                _gather(m.index_array, self.domain, inner, coords)
            valid = None if empty else m.valid
            output.append(OutputIndexMap(index_array=array, valid=valid, scale=m.scale)
                          if keep_arrays and array.size == 1 else
                          _array_map(array, valid, m.scale))
        return IndexTransform(inner.domain, tuple(output))

    def output_coordinates(self) -> list[np.ndarray]:
        """Each output dimension's coordinates over the whole input domain (broadcastable)."""
        return [_coordinates(m, self.domain) for m in self.output]


class _TransformIndexer:
    def __init__(self, transform: IndexTransform, mode: str) -> None:
        self._transform = transform
        self._mode = mode

    def __getitem__(self, selection: Any) -> IndexTransform:
        return self._transform.index(selection, self._mode)


def _sliced_by(transform: IndexTransform, other: IndexDomain) -> IndexTransform:
    """`transform[other]`: the input dimensions `other` names sliced to its bounds, as
    TensorStore; an unlabeled transform takes `other`'s labels."""
    from .dim_expression import d  # that module imports this one

    target = transform.domain
    dims = _aligned_dims(target, other)
    if not dims:
        return transform
    slices = []
    for i, j in enumerate(dims):
        lo, hi = other.inclusive_min[i], other.exclusive_max[i]
        if (lo == -INF and target.inclusive_min[j] != -INF) or (
                hi == INF_MAX and target.exclusive_max[j] != INF_MAX):
            raise SelectionError(f"index domain: cannot slice dimension {j} "
                                 f"[{_text(target.inclusive_min[j])}, "
                                 f"{_text(target.exclusive_max[j])}) by the unbounded "
                                 f"[{_text(lo)}, {_text(hi)})")
        # An infinite bound slices nothing, but becomes explicit as a sliced one does.
        slices.append(slice(None if lo == -INF else lo, None if hi == INF_MAX else hi))
    expression = d[dims][tuple(slices)]
    if -INF in other.inclusive_min or INF_MAX in other.exclusive_max:
        expression = expression.mark_bounds_implicit[False]
    if not any(target.labels):
        expression = expression.label[list(other.labels)]
    return expression.apply(transform)


def _aligned_dims(target: IndexDomain, other: IndexDomain) -> list[int]:
    """The dimensions of `target` that `other`'s dimensions slice: by label where `other`
    has one (and `target` too), else the unlabeled ones in order, with equal ranks."""
    if (not any(other.labels) or not any(target.labels) or not all(other.labels)) \
            and target.rank != other.rank:
        raise SelectionError(f"index domain: a domain of rank {other.rank} cannot slice one "
                             f"of rank {target.rank} unless every dimension of both is "
                             "labelled")
    if not any(other.labels) or not any(target.labels):
        return list(range(target.rank))
    free = [j for j, label in enumerate(target.labels) if not label]
    dims = []
    for label in other.labels:
        if label and label not in target.labels:
            raise SelectionError(f"index domain: no dimension is labelled {label!r} (labels "
                                 f"{list(target.labels)})")
        if not label and not free:
            raise SelectionError("index domain: the slicing domain has more unlabeled "
                                 "dimensions than the domain it slices")
        dims.append(target.labels.index(label) if label else free.pop(0))
    return dims


def _add(value: int, shift: int, infinite: int, exclusive: int) -> int:
    """A shifted bound; infinite bounds stay, finite (inclusive) ones stay finite."""
    if value == infinite:
        return value
    inclusive = value - exclusive + shift
    if abs(inclusive) >= INF:
        raise SelectionValueError(f"{value - exclusive} + {shift} is outside the valid range "
                                  f"of finite indices [{-INF + 1}, {INF - 1}]")
    return value + shift


def _dimension(value: Any, domain: IndexDomain, what: str) -> int:
    """A dimension named as TensorStore's dimension selections name one: an index (negative
    ones count from the end) or a label."""
    if isinstance(value, str):
        if value and value in domain.labels:
            return domain.labels.index(value)
        raise SelectionError(f"{what}: no dimension is labelled {value!r} (labels "
                             f"{list(domain.labels)})")
    if isinstance(value, float) or not hasattr(value, "__index__"):
        raise SelectionError(f"{what}: {value!r} is neither a dimension index nor a label")
    index = operator.index(value)
    if not -domain.rank <= index < domain.rank:
        raise SelectionError(f"{what}: dimension {index} is out of range for rank {domain.rank}")
    return index % domain.rank


def _per_dim(values: Any, rank: int, what: str) -> list[Any]:
    """One integer (or None: unchanged) per dimension, from one for all or a sequence."""
    if values is None or isinstance(values, int | np.integer):
        return [values] * rank
    if isinstance(values, str | bytes):
        raise SelectionTypeError(f"{what}: expected integers, got {values!r}")
    try:
        values = list(values)
    except TypeError:
        raise SelectionTypeError(f"{what}: expected integers, got {values!r}") from None
    if len(values) != rank:  # TensorStore's errors: ValueError here, TypeError otherwise
        raise SelectionValueError(f"{what}: {len(values)} values for {rank} dimensions")
    bad = [v for v in values if v is not None and not isinstance(v, int | np.integer)]
    if bad:
        raise SelectionTypeError(f"{what}: {bad[0]!r} is not an integer")
    return values


def _scale(m: OutputIndexMap, offset: int, stride: int) -> OutputIndexMap:
    """`offset + stride * m`."""
    if m.method == "constant":
        return _constant(offset + stride * m.offset)
    if m.method == "single_input_dimension":
        return OutputIndexMap(offset + stride * m.offset, stride * m.stride, m.input_dimension)
    return _array_map(_scaled_array(m.index_array, offset, stride, "index array"),
                      _scaled_valid(m.valid, offset, stride),
                      (offset + stride * m.scale[0], stride * m.scale[1]))


def _scaled_array(array: np.ndarray, offset: int, stride: int, where: str) -> np.ndarray:
    """`offset + stride * array` in int64, refused (as TensorStore refuses it) where a value
    does not fit: numpy would wrap it onto another position. (Values that fit but lie beyond
    the domain or array are refused later, by the bounds checks that name them.)"""
    if array.size:
        products = [stride * int(v) for v in (array.min(), array.max())]
        if any(abs(p) >= 2**63 or abs(offset + p) >= 2**63 for p in products):
            raise SelectionError(f"{where}: integer overflow computing the positions "
                                 f"{offset} + {stride} * index array (values "
                                 f"{int(array.min())} to {int(array.max())})")
    return offset + stride * array


def _coordinates(m: OutputIndexMap, domain: IndexDomain) -> np.ndarray:
    """The map's values over `domain`, shaped to broadcast against it."""
    rank = domain.rank
    if m.method == "constant":
        return np.full((1,) * rank, m.offset, dtype=np.int64)
    if m.method == "array":
        return m.index_array
    j = m.input_dimension
    lo, n = domain.inclusive_min[j], domain.shape[j]
    shape = [1] * rank
    shape[j] = n
    return (m.offset + m.stride * (lo + np.arange(n, dtype=np.int64))).reshape(shape)


def _gather(array: np.ndarray, old: IndexDomain, inner: IndexTransform,
            cache: list[Any]) -> np.ndarray:
    """An index array over the old input domain, re-expressed over `inner`'s input domain."""
    index = []
    for j, size in enumerate(array.shape):
        if size == 1:
            index.append(np.zeros((1,) * inner.input_rank, dtype=np.intp))
            continue
        if size != old.shape[j]:  # kept over an empty domain, then its bounds were resolved
            raise SelectionError(f"an index array has {size} values along dimension {j}, "
                                 f"which now has {old.shape[j]} indices: it maps none for "
                                 "the others")
        if cache[j] is None:
            cache[j] = _positions(inner.output[j], inner.domain, old, j)
        index.append(cache[j])
    if not index:
        return array.reshape((1,) * inner.input_rank)
    return array[tuple(index)]


def _empty_gather(array: np.ndarray, old: IndexDomain, inner: IndexTransform) -> np.ndarray:
    """`_gather` over a domain empty between explicit bounds, where no index is used, so
    none was checked: an index outside the old domain gives an array without elements
    (empty along the empty dimensions; reading fails if they grow again)."""
    try:
        return _gather(array, old, inner, [None] * old.rank)
    except SelectionError:
        return np.zeros([0 if n == 0 else 1 for n in inner.domain.shape], np.int64)


def _positions(m: OutputIndexMap, domain: IndexDomain, old: IndexDomain, j: int) -> np.ndarray:
    """Positions along axis j of an index array for `m`'s coordinates: these must lie in
    the old domain (numpy would wrap negative positions or raise IndexError)."""
    coords = _coordinates(m, domain)
    lo, hi = old.inclusive_min[j], old.exclusive_max[j]
    bad = coords[(coords < lo) | (coords >= hi)]
    if bad.size:
        raise SelectionError(f"index {int(bad.flat[0])} is outside the domain [{_text(lo)}, "
                             f"{_text(hi)}) of dimension {j}, which an index array reads")
    return coords - lo


# -- building the transform of a selection --------------------------------------------------


def _is_int(x: Any) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool | np.bool_)


def _normalize_terms(selection: Any, rank: int, mode: str) -> list[tuple[str, Any]]:
    """Terms ("int", v), ("slice", s), ("new", None), ("array", arr, group) covering all dims."""
    sel = selection if isinstance(selection, tuple) else (selection,)
    terms: list[tuple[Any, ...]] = []
    for group, s in enumerate(sel):
        if s is None:
            terms.append(("new", None))
        elif s is Ellipsis:
            terms.append(("ellipsis", None))
        elif isinstance(s, slice):
            terms.append(("slice", s))
        elif _is_int(s):
            terms.append(("int", int(s)))
        else:
            terms += _array_terms(s, group)
    if sum(1 for t in terms if t[0] == "ellipsis") > 1:
        raise SelectionError("an index can only have a single ellipsis ('...')")
    used = sum(1 for t in terms if t[0] in ("int", "slice", "array"))
    if used > rank:
        raise SelectionError(f"too many indices: {used} for {rank} dimensions")
    fill = [("slice", slice(None))] * (rank - used)
    at = next((i for i, t in enumerate(terms) if t[0] == "ellipsis"), len(terms))
    return terms[:at] + fill + terms[at + 1:]  # type: ignore[return-value]


def _kind(item: Any) -> str:
    if item is None or item is Ellipsis or isinstance(item, slice):
        return "other"
    if _is_int(item):
        return "int"
    return "array"


def arrays_adjacent(selection: Any, trailing_integers: bool = True) -> bool:
    """TensorStore's test for keeping the index arrays' dimensions in place: the terms from
    the first index array to the last index array or integer are all arrays or integers.
    Unlike numpy, integers before the first array do not count, and an Ellipsis parts the
    arrays even when it stands for no dimension. In a dimension expression integers after
    the last array do not count either (`trailing_integers=False`)."""
    kinds = [_kind(x) for x in (selection if isinstance(selection, tuple) else (selection,))]
    if "array" not in kinds:
        return False
    first = kinds.index("array")
    ends = ("array", "int") if trailing_integers else ("array",)
    last = max(i for i, k in enumerate(kinds) if k in ends)
    return "other" not in kinds[first:last + 1]


def _array_terms(value: Any, group: int) -> list[tuple[Any, ...]]:
    array = np.asarray(value)
    if array.dtype == bool:
        if not array.ndim:
            # numpy's and TensorStore's meaning: an index array of 1 (True) or 0 (False)
            # positions that indexes no dimension, so it adds one dimension of that size.
            return [("bool0", np.zeros(int(array), np.int64))]
        return [("array", a.astype(np.int64), ("mask", group)) for a in np.nonzero(array)]
    if array.size == 0:
        array = array.astype(np.int64)
    if not np.issubdtype(array.dtype, np.integer):
        raise SelectionError(f"unsupported index {value!r}: expected integers, slices, "
                             "None, ..., or integer/boolean arrays")
    # A zero-rank array stays an index array (TensorStore's): it adds no dimension, takes
    # part in placing the others, and is checked where the dimension it indexes is read.
    if array.dtype == np.uint64 and array.size and int(array.max()) >= INF:
        # astype(int64) would wrap these to negative indices
        raise SelectionError(f"index {int(array.max())} is outside the valid range of finite "
                             f"indices [{-INF + 1}, {INF - 1}]")
    return [("array", array.astype(np.int64), ("array", group))]


def _slice_dim(s: slice, domain: IndexDomain, j: int) -> tuple[tuple[int, int, bool, bool],
                                                                  int, int]:
    """((lo, hi, implicit_lo, implicit_hi), offset, stride) of a slice of old dimension j."""
    start, stop, step = (_slice_member(v, j) for v in (s.start, s.stop, s.step))
    step = 1 if step is None else step
    if step == 0:
        raise SelectionError(f"slice step cannot be zero (dimension {j})")
    first, last, flags = (_forward if step > 0 else _backward)(start, stop, domain, j, step)
    _check_contained(first, last, domain, j, last - first + 1)
    # The phase (which indices are hit) comes from the start; the bounds from [first, last].
    phase = start if start is not None else (domain.inclusive_min[j] if step > 0
                                             else domain.exclusive_max[j] - 1)
    if abs(step) != 1 and abs(phase) >= INF:
        raise SelectionError(f"slicing dimension {j} with step {step} needs a finite start "
                             "index")
    offset = phase - step * _trunc_div(phase, step)
    new_lo, new_hi = _strided(first, last, offset, step)
    bounds = (new_lo, max(new_lo, new_hi), flags[0], flags[1])
    if domain.inclusive_min[j] == domain.exclusive_max[j]:
        bounds = _slice_of_empty(bounds, domain, j, offset, step)
    return bounds, offset, step


def _slice_member(value: Any, j: int) -> int | None:
    """A slice's start, stop or step: None or an integer (`__index__`), never a float or a
    string truncated or parsed into one (TensorStore refuses them too)."""
    if value is None:
        return None
    try:
        return operator.index(value)
    except TypeError:
        raise SelectionError(f"slice of dimension {j}: {value!r} is not an integer or None"
                             ) from None


def _strided(first: int, last: int, offset: int, step: int) -> tuple[int, int]:
    """The new [lo, hi) whose images `offset + step * i` fall in [first, last]; an infinite
    end (which the checks allow only on the stop's side) gives an infinite bound."""
    lo_end, hi_end = (first, last) if step > 0 else (last, first)
    new_lo = -INF if abs(lo_end) >= INF else -((offset - lo_end) // step)  # ceil
    new_hi = INF_MAX if abs(hi_end) >= INF else (hi_end - offset) // step + 1  # floor + 1
    return new_lo, new_hi


def _slice_of_empty(bounds: tuple[int, int, bool, bool], domain: IndexDomain, j: int,
                    offset: int, step: int) -> tuple[int, int, bool, bool]:
    """TensorStore also maps an empty dimension's bounds back through the slice: the empty
    interval becomes the single new index `ceil((lo - offset) / step)`. Implicit new bounds
    move there, and a non-empty result may not extend past it on the side of an explicit old
    bound (for a negative step the sides swap), unless the domain is already certainly
    empty (no index is used)."""
    lo, hi, ilo, ihi = bounds
    point = -((offset - domain.inclusive_min[j]) // step)
    lo, hi = point if ilo else lo, point if ihi else hi
    hi = max(lo, hi)
    fixed = (not domain.implicit_lower_bounds[j], not domain.implicit_upper_bounds[j])
    fixed_below, fixed_above = fixed if step > 0 else fixed[::-1]
    past = fixed_below and lo < point or fixed_above and hi > point
    if hi > lo and past and not certainly_empty(domain):
        raise SelectionError(f"a slice with step {step} of the empty dimension {j} (domain "
                             f"[{domain.inclusive_min[j]}, {domain.exclusive_max[j]})) would "
                             f"select [{lo}, {hi}), past the dimension's fixed bound")
    return lo, hi, ilo, ihi


def _closed(first: int, last: int, step: int, j: int) -> tuple[int, int]:
    """The slice's closed interval [first, last], if valid as TensorStore requires: -inf
    only as the first index, +inf only as the last, and no further outside."""
    if not (-INF <= first < INF and -INF < last <= INF and last >= first - 1):
        raise SelectionError(f"slice of dimension {j} with step {step}: [{_text(first)}, "
                             f"{'+inf' if last == INF else last}] is not a valid closed "
                             "interval")
    return first, last


def _end(stop: int, toward: int) -> int:
    """The last index before a slice's stop; a stop of -INF or +INF is that infinity."""
    return stop if abs(stop) >= INF else stop + toward


def _forward(start: int | None, stop: int | None, domain: IndexDomain, j: int,
             step: int) -> tuple[int, int, tuple[bool, bool]]:
    """[first, last] selected by a positive step; omitted bounds keep their implicit flag."""
    first = domain.inclusive_min[j] if start is None else start
    last = domain.exclusive_max[j] - 1 if stop is None else _end(stop, -1)
    flags = (start is None and domain.implicit_lower_bounds[j],
             stop is None and domain.implicit_upper_bounds[j])
    return *_closed(first, last, step, j), flags


def _backward(start: int | None, stop: int | None, domain: IndexDomain, j: int,
              step: int) -> tuple[int, int, tuple[bool, bool]]:
    """[first, last] selected by a negative step, as TensorStore computes it: a bound given
    alone (the other omitted) yields to the domain's bound on its side when that is implicit,
    and the new bound stays implicit."""
    lo, last_index = domain.inclusive_min[j], domain.exclusive_max[j] - 1
    ilo, ihi = domain.implicit_lower_bounds[j], domain.implicit_upper_bounds[j]
    _closed(lo if stop is None else _end(stop, 1), last_index if start is None else start,
            step, j)
    ignore_start = start is not None and stop is None and ihi
    ignore_stop = stop is not None and start is None and ilo
    last = last_index if start is None or ignore_start else start
    first = lo if stop is None or ignore_stop else _end(stop, 1)
    both_omitted = start is None and stop is None
    flags = ((both_omitted and ihi) or ignore_start, (both_omitted and ilo) or ignore_stop)
    return first, last, flags


def domain_through(transform: IndexTransform, domain: IndexDomain) -> IndexDomain:
    """A domain constraint on the transform's input space, as a constraint on its output
    space (TensorStore's rule for a spec's schema domain when the spec has a transform): each
    output dimension takes the image of its input dimension, which needs a stride of +-1
    unless that dimension is unbounded; constant and index array maps refuse constraints."""
    if domain.rank != transform.input_rank:
        raise SpecError(f"domain: rank {domain.rank} does not match the transform's input rank "
                        f"{transform.input_rank}")
    read = [m.input_dimension for m in transform.output if m.input_dimension is not None]
    if len(read) != len(set(read)):
        raise SpecError("domain: cannot constrain the domain through a transform with several "
                        "output dimensions reading the same input dimension")
    dims = [_dim_through(m, i, domain) for i, m in enumerate(transform.output)]
    return IndexDomain(*(tuple(d[k] for d in dims) for k in range(5)))


def _dim_through(m: OutputIndexMap, i: int, domain: IndexDomain) -> tuple[Any, ...]:
    if m.method != "single_input_dimension":
        raise SpecError(f"domain: cannot constrain the domain through a transform whose output "
                        f"dimension {i} is a{'n index array' if m.method == 'array' else ' constant'}")
    j = m.input_dimension
    lo, last = domain.inclusive_min[j], domain.exclusive_max[j] - 1  # +-INF when infinite
    ilo, ihi = domain.implicit_lower_bounds[j], domain.implicit_upper_bounds[j]
    if abs(m.stride) != 1 and (lo != -INF or last != INF):
        raise SpecError(f"domain: cannot constrain dimension {j} to [{_text(lo)}, "
                        f"{_text(last + 1)}) through the transform's stride {m.stride} (output "
                        f"dimension {i})")
    # The images of the ends; an infinite end stays infinite (its sign follows the stride).
    ends = [(x if m.stride > 0 else -x) if abs(x) == INF else m.offset + m.stride * x
            for x in (lo, last)]
    if m.stride < 0:
        ends, ilo, ihi = ends[::-1], ihi, ilo
    return ends[0], ends[1] + 1, ilo, ihi, domain.labels[j]


# Per-dimension schema constraints (JSON lists, one entry per input dimension, None where
# unconstrained) mapped like the domain: output dimension i takes the value of the input
# dimension its map reads, scaled by the stride; constant and index array outputs are left
# unconstrained. A hard constraint on an input dimension no output reads is refused (units:
# also one only an index array reads), as TensorStore does.


def _readers(transform: IndexTransform, arrays: bool) -> set[int]:
    """Input dimensions some output map reads (index arrays included if `arrays`)."""
    used = {m.input_dimension for m in transform.output if m.method == "single_input_dimension"}
    if arrays:
        used |= {j for m in transform.output if m.method == "array"
                 for j, n in enumerate(m.index_array.shape) if n > 1}
    return used


def _vector_through(transform: IndexTransform, values: list[Any], where: str, hard: bool,
                    image: Any, arrays: bool = True) -> list[Any]:
    if len(values) != transform.input_rank:
        raise SpecError(f"{where}: {len(values)} values do not match the transform's input "
                        f"rank {transform.input_rank}")
    used = _readers(transform, arrays)
    for j, value in enumerate(values):
        if hard and value is not None and j not in used:
            raise SpecError(f"{where}: no output dimension corresponds to input dimension {j} "
                            f"(constrained to {value!r})")
    return [image(values[m.input_dimension], m, where, i)
            if m.method == "single_input_dimension" and values[m.input_dimension] is not None
            else None for i, m in enumerate(transform.output)]


def _scaled(value: Any, m: OutputIndexMap, where: str, i: int) -> Any:
    return value * abs(m.stride)  # a chunk of n input indices spans n * |stride| outputs


def _origin(value: int, m: OutputIndexMap, where: str, i: int) -> int:
    # With a negative stride the cell [o, o + n) maps to one ending at offset + stride * o.
    out = m.offset + m.stride * (value if m.stride > 0 else value - 1)
    if abs(out) >= INF:
        raise SpecError(f"{where}: grid origin {value} maps outside the finite indices on "
                        f"output dimension {i}")
    return out


def _unit(value: list[Any], m: OutputIndexMap, where: str, i: int) -> list[Any]:
    return [value[0] / abs(m.stride), value[1]]  # one output step is 1/|stride| input steps


def _order_through(transform: IndexTransform, order: list[int]) -> list[int]:
    """Each input dimension's outputs in the input order, then the unread outputs."""
    out = [i for j in order for i, m in enumerate(transform.output)
           if m.method == "single_input_dimension" and m.input_dimension == j]
    return out + [i for i in range(transform.output_rank) if i not in out]


def units_through(transform: IndexTransform, units: list[Any]) -> list[Any]:
    """dimension_units ([multiplier, base_unit] or None per input dimension) per output."""
    return _vector_through(transform, units, "dimension_units", True, _unit, arrays=False)


def layout_through(transform: IndexTransform, layout: dict[str, Any]) -> dict[str, Any]:
    """A chunk layout's JSON (TensorStore's members) on the transform's output dimensions."""
    out: dict[str, Any] = {}
    for key, value in layout.items():
        hard = not key.endswith("_soft_constraint")
        where = f"chunk_layout.{key}"
        if key.startswith("inner_order"):
            if len(value) != transform.input_rank:
                raise SpecError(f"{where}: {value} does not match the transform's input rank "
                                f"{transform.input_rank}")
            out[key] = _order_through(transform, value)
        elif key.startswith("grid_origin"):
            out[key] = _vector_through(transform, value, where, hard, _origin)
        elif isinstance(value, dict):  # a chunk grid: elements need no mapping
            out[key] = {k: v if k.startswith("elements") else _vector_through(
                transform, v, f"{where}.{k}", not k.endswith("_soft_constraint"), _scaled)
                for k, v in value.items()}
    return out


# The inverse direction: constraints on the array (the transform's output) seen in the view's
# (input) space, as TensorStore's ChunkLayout and dimension units go through a spec's transform.
# An input dimension takes the value of the one output dimension that alone reads it with a
# nonzero stride (TensorStore's one-to-one dimensions); the others are unconstrained.


def _one_to_one(transform: IndexTransform) -> list[tuple[int, OutputIndexMap] | None]:
    """Per output dimension, (input dimension, map) if that input is one-to-one with it."""
    strided = [m.input_dimension if m.method == "single_input_dimension" and m.stride else None
               for m in transform.output]
    arrays = {j for m in transform.output if m.method == "array"
              for j, n in enumerate(m.index_array.shape) if n > 1}
    return [None if j is None or strided.count(j) > 1 or j in arrays else (j, m)
            for j, m in zip(strided, transform.output, strict=True)]


def _vector_to_input(transform: IndexTransform, values: list[Any], image: Any) -> list[Any]:
    out: list[Any] = [None] * transform.input_rank
    for value, source in zip(values, _one_to_one(transform), strict=True):
        if value is not None and source is not None:
            out[source[0]] = image(value, source[1].offset, source[1].stride)
    return out


def _order_to_input(transform: IndexTransform, order: list[int]) -> list[int]:
    """Input dimensions by the first position of an output that reads them, then unread
    ones (TensorStore's TransformOutputDimensionOrder)."""
    first: dict[int, int] = {}
    for position, i in enumerate(order):
        m = transform.output[i]
        if m.method == "single_input_dimension" and m.stride:
            first.setdefault(m.input_dimension, position)
    return sorted(range(transform.input_rank), key=lambda j: (first.get(j, len(order)), j))


_TO_INPUT = {  # (value, offset, stride) -> the input dimension's value
    # ceil((v - off) / s), one less before dividing by a negative stride (cells end there)
    "grid_origin": lambda v, off, s: -((off - v + (s < 0)) // s),
    "shape": lambda v, off, s: v // math.gcd(v, s),
    "aspect_ratio": lambda v, off, s: v / abs(s),
}


def _grid_to_input(transform: IndexTransform, grid: dict[str, Any]) -> dict[str, Any]:
    return {k: v if k.startswith("elements") else _vector_to_input(
        transform, v, _TO_INPUT[k.removesuffix("_soft_constraint")]) for k, v in grid.items()}


def layout_to_input(transform: IndexTransform, layout: dict[str, Any]) -> dict[str, Any]:
    """A chunk layout's JSON on the transform's output dimensions, on its input ones."""
    if not layout.get("rank", 1) or transform.output_rank == 0:
        return layout  # no dimensions to map (TensorStore keeps such a layout as it is)
    out: dict[str, Any] = {}
    for key, value in layout.items():
        if key == "rank":
            out[key] = transform.input_rank
        elif key.startswith("inner_order"):
            out[key] = _order_to_input(transform, value)
        elif key.startswith("grid_origin"):
            out[key] = _vector_to_input(transform, value, _TO_INPUT["grid_origin"])
        else:
            out[key] = _grid_to_input(transform, value)
    return out


def units_to_input(transform: IndexTransform, units: list[Any]) -> list[Any]:
    """dimension_units JSON per output dimension, per input dimension (scaled by |stride|)."""
    return _vector_to_input(transform, units, lambda u, off, s: [u[0] * abs(s), u[1]])


# -- resolving a transform against the array's domain (TensorStore's PropagateBoundsToTransform)

Bound = tuple[int, int, bool, bool]  # inclusive_min, exclusive_max, implicit lower and upper


def propagate_bounds(transform: IndexTransform, domain: IndexDomain) -> IndexTransform:
    """The transform with its implicit input bounds taken from the array's `domain`, as
    TensorStore resolves a spec's transform when it opens the array (so `{"input_rank": 2}`
    becomes the array's box). An input dimension read by strided maps gets the inputs they
    send into the domain; explicit input bounds stay, but must lie within those the array
    fixes; a bound stays implicit only if it was and all the bounds it came from are.
    Dimensions no strided map reads keep their bounds."""
    d = transform.domain
    inferred: dict[int, Bound] = {}
    for i, m in enumerate(transform.output):
        if m.method == "single_input_dimension" and m.stride != 0:
            b = _affine_preimage(m, domain, i)
            j = m.input_dimension
            inferred[j] = b if j not in inferred else _intersect_preferring_explicit(
                inferred[j], b)
    empty = certainly_empty(d)
    dims = [_resolved(d, j, inferred.get(j), empty) for j in range(d.rank)]
    new = IndexDomain(*(tuple(x[k] for x in dims) for k in range(4)), d.labels)
    # Index arrays stay even over an empty domain (TensorStore's constant 0 would read the
    # wrong elements once the domain grows again).
    return IndexTransform(new, transform.output)


def _affine_preimage(m: OutputIndexMap, domain: IndexDomain, i: int) -> Bound:
    """The inputs x with offset + stride * x in output dimension i's interval; infinite ends
    stay infinite, and a negative stride swaps the ends (and their implicit flags)."""
    lo, last = domain.inclusive_min[i], domain.exclusive_max[i] - 1  # +-INF when infinite
    ilo, ihi = domain.implicit_lower_bounds[i], domain.implicit_upper_bounds[i]
    if m.stride < 0:
        lo, last, ilo, ihi = last, lo, ihi, ilo
    first = -INF if abs(lo) == INF else -((m.offset - lo) // m.stride)  # ceil
    end = INF if abs(last) == INF else (last - m.offset) // m.stride  # floor
    return first, end + 1, ilo, ihi


def _intersect_preferring_explicit(a: Bound, b: Bound) -> Bound:
    """Per side: the tighter of two bounds alike in implicitness, else the explicit one."""
    lo = max(a[0], b[0]) if a[2] == b[2] else (a[0] if not a[2] else b[0])
    hi = min(a[1], b[1]) if a[3] == b[3] else (a[1] if not a[3] else b[1])
    return lo, hi, a[2] and b[2], a[3] and b[3]


def _resolved(d: IndexDomain, j: int, inferred: Bound | None, empty: bool) -> Bound:
    lo, hi = d.inclusive_min[j], d.exclusive_max[j]
    ilo, ihi = d.implicit_lower_bounds[j], d.implicit_upper_bounds[j]
    if inferred is None:
        return lo, hi, ilo, ihi
    a, b, fa, fb = inferred
    lo = a if ilo else lo
    hi = max(lo, b if ihi else hi)
    # The array's implicit (resizable) bounds do not limit explicit input bounds.
    if not empty and hi > lo and ((not fa and lo < a) or (not fb and hi > b)):
        raise SelectionError(f"transform: input dimension {j} bounds [{_text(lo)}, "
                             f"{_text(hi)}) are outside the bounds [{_text(a)}, {_text(b)}) "
                             "the array gives it")
    return lo, hi, ilo and fa, ihi and fb


def certainly_empty(domain: IndexDomain) -> bool:
    """Some dimension is empty between explicit bounds (implicit bounds may still move)."""
    return any(hi <= lo and not (il or iu) for lo, hi, il, iu in zip(
        domain.inclusive_min, domain.exclusive_max, domain.implicit_lower_bounds,
        domain.implicit_upper_bounds, strict=True))


def _check_contained(first: int, last: int, domain: IndexDomain, j: int, count: int) -> None:
    lo, hi = domain.inclusive_min[j], domain.exclusive_max[j]
    below = not domain.implicit_lower_bounds[j] and first < lo
    above = not domain.implicit_upper_bounds[j] and last >= hi
    if count > 0 and (below or above):
        raise SelectionError(f"slice [{first}, {last + 1}) is not contained within the domain "
                             f"[{lo}, {hi}) of dimension {j}")


def _check_index(value: int, domain: IndexDomain, j: int) -> None:
    """A single index must be finite, and within the explicit bounds."""
    lo, hi = domain.inclusive_min[j], domain.exclusive_max[j]
    if abs(value) >= INF or (not domain.implicit_lower_bounds[j] and value < lo) or \
            (not domain.implicit_upper_bounds[j] and value >= hi):
        raise SelectionError(f"index {value} is outside the domain [{_text(lo)}, {_text(hi)}) "
                             f"of dimension {j}")


class _Builder:
    """Accumulates the new input dimensions and the maps of the old ones."""

    def __init__(self) -> None:
        self.dims: list[tuple[int, int, bool, bool, str]] = []
        self.maps: list[Any] = []  # per old dim: ("const", v) | ("single", off, stride, k)
        #                                         | ("array", arr, first_new_dim)
        # Integer indices are checked once the domain is known, and not if it is certainly
        # empty (no index is then used); index arrays when composed into a single value or
        # when data moves (`OutputIndexMap.valid`). So TensorStore does it.
        self.checks: list[tuple[Any, IndexDomain, int]] = []

    def new_dim(self, lo: int, hi: int, ilo: bool, ihi: bool, label: str) -> int:
        self.dims.append((lo, hi, ilo, ihi, label))
        return len(self.dims) - 1

    def transform(self) -> IndexTransform:
        rank = len(self.dims)
        domain = IndexDomain(*(tuple(d[i] for d in self.dims) for i in range(5)))
        if not certainly_empty(domain):
            for values, old, j in self.checks:
                _check_index(values, old, j)
        output = []
        for m in self.maps:
            if m[0] == "const":
                output.append(_constant(m[1]))
            elif m[0] == "single":
                output.append(OutputIndexMap(m[1], m[2], m[3]))
            else:
                array, first = m[1], m[2]
                shape = [1] * rank
                shape[first:first + array.ndim] = array.shape
                # Not made a constant here: composing checks a single value where the
                # dimension it indexes is read, as TensorStore does.
                output.append(OutputIndexMap(index_array=array.reshape(shape).astype(np.int64)))
        return IndexTransform(domain, tuple(output))


def _selection_transform(domain: IndexDomain, selection: Any, mode: str) -> IndexTransform:
    terms = _normalize_terms(selection, domain.rank, mode)
    arrays = [t for t in terms if t[0] in ("array", "bool0")]
    if mode == "outer":
        return _outer(domain, terms)
    broadcast = _broadcast([t[1] for t in arrays])
    front = mode == "vectorized" or not arrays_adjacent(selection)
    return _numpy_like(domain, terms, broadcast, front)


def _broadcast(arrays: list[np.ndarray]) -> list[np.ndarray]:
    try:
        return list(np.broadcast_arrays(*arrays)) if arrays else []
    except ValueError as exc:
        raise SelectionError(f"index arrays do not broadcast together: {exc}") from None


def _numpy_like(domain: IndexDomain, terms: list[tuple[Any, ...]], broadcast: list[np.ndarray],
                front: bool) -> IndexTransform:
    b = _Builder()
    shape = broadcast[0].shape if broadcast else ()
    first = None

    def place_arrays() -> int:
        start = len(b.dims)
        for n in shape:
            b.new_dim(0, n, False, False, "")
        return start

    if broadcast and front:
        first = place_arrays()
    old, k = 0, 0
    for term in terms:
        kind = term[0]
        if kind == "new":
            b.new_dim(0, 1, True, True, "")
            continue
        if kind == "bool0":  # broadcast with the index arrays, but indexes no dimension
            first = place_arrays() if first is None else first
            k += 1
            continue
        if kind == "array":
            if first is None:
                first = place_arrays()
            b.maps.append(("array", as_broadcast(term[1], len(shape)), first))
            k += 1
        else:
            _basic_term(b, term, domain, old)
        old += 1
    return b.transform()


def as_broadcast(array: np.ndarray, ndim: int) -> np.ndarray:
    """An index array with the broadcast rank, its sizes kept (1 where it does not vary): a
    one-element array stays one, so composing checks it as a single index, as TensorStore
    does where the dimension it indexes is read."""
    return array.reshape((1,) * (ndim - array.ndim) + array.shape)


def _basic_term(b: _Builder, term: tuple[Any, ...], domain: IndexDomain, old: int) -> None:
    if term[0] == "int":
        b.checks.append((term[1], domain, old))
        b.maps.append(("const", term[1]))
        return
    (lo, hi, ilo, ihi), offset, stride = _slice_dim(term[1], domain, old)
    k = b.new_dim(lo, hi, ilo, ihi, domain.labels[old])
    b.maps.append(("single", offset, stride, k))


def _outer(domain: IndexDomain, terms: list[tuple[Any, ...]]) -> IndexTransform:
    b = _Builder()
    old = 0
    placed: dict[Any, int] = {}
    for term in terms:
        if term[0] == "new":
            b.new_dim(0, 1, True, True, "")
            continue
        if term[0] == "bool0":
            b.new_dim(0, term[1].size, False, False, "")
            continue
        if term[0] == "array":
            array, group = term[1], term[2]
            if group not in placed:  # a boolean mask's index arrays share one new dimension
                placed[group] = len(b.dims)
                for n in array.shape:
                    b.new_dim(0, n, False, False, "")
            b.maps.append(("array", array, placed[group]))
        else:
            _basic_term(b, term, domain, old)
        old += 1
    return b.transform()

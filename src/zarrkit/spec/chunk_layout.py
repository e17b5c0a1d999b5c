"""TensorStore-style chunk layout constraints, and the chunk shapes a zarr3 array gets on create.

`ChunkLayout` holds hard and soft constraints on the grid origin, the inner (storage) order and
three nested chunk grids (write, read, codec), with TensorStore's keyword names, JSON form and
merge rules. `choose_chunk_shapes` turns constraints plus an array shape into the concrete read
and write chunk shapes, reproducing the choices TensorStore's zarr3 driver makes on create.

How the choice works (observed behaviour, reproduced here):

* Sizes fixed by constraints come first: hard shapes; then soft shapes (-1 meaning "the whole
  dimension"). A soft write size next to a hard read size moves to the nearest multiple of it.
* The read chunk is chosen next. Dimensions left free grow together, in proportion to the aspect
  ratio (default 1), clamped to the array extent, as far as the element budget allows (the
  `elements` constraint, default 2**20). Where the write size is already fixed, every candidate
  read size snaps to the nearest divisor of the write size.
* The write chunk is chosen last, the same way, but each free size snaps to the nearest multiple
  of the read size, so that a write chunk is always a whole number of read chunks.

"As far as the budget allows" means: where TensorStore's search for a common scale factor
settles (see `_grow`). That search does not always find the largest factor whose chunk fits:
with aspect ratios not in power-of-two proportion it can pass over a chunk that fits only in a
narrow range of factors (aspect [1, 1.7] with 11 elements gives [2, 4], though [2, 5] fits),
and where snapping to divisors makes "fits" non-monotone its path decides the result.
"""

from __future__ import annotations

import copy
import math
import random
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from zarrkit.errors import SpecError

__all__ = [
    "DEFAULT_CHUNK_ELEMENTS",
    "ChunkGrid",
    "ChunkLayout",
    "choose_chunk_shapes",
    "effective_chunk_layout",
    "transpose_order",
]

MAX_RANK = 32
# Largest finite size/index TensorStore accepts (2**62 - 2); larger values are refused.
MAX_SIZE = 2**62 - 2
DEFAULT_CHUNK_ELEMENTS = 1024 * 1024
# A sharded chunk may hold at most this many inner chunks (zarr3 sharding codec limit).
MAX_SHARD_GRID_ENTRIES = 2**30
# When snapping a read size to a divisor of the write size, TensorStore looks at most this far on
# either side of the preferred size before giving up and using the whole write size.
SNAP_REACH = 1_000_000

_USAGES = ("write", "read", "codec")
_GRID_MEMBERS = ("shape", "aspect_ratio", "elements")
_SOFT = "_soft_constraint"


# ---------------------------------------------------------------------------------------------
# Value validation


def _as_int(value: Any, where: str) -> int:
    """JSON integers; integral floats are accepted because JSON may spell 3 as 3.0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"{where}: expected an integer, got {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise SpecError(f"{where}: expected an integer, got {value!r}")
        value = int(value)
    return value


def _as_list(values: Any, where: str) -> list[Any]:
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise SpecError(f"{where}: expected an array, got {values!r}")
    values = list(values)
    if len(values) > MAX_RANK:
        raise SpecError(f"{where}: rank {len(values)} exceeds the maximum of {MAX_RANK}")
    return values


def _shape_value(value: Any, where: str) -> int | None:
    """0 and None mean unconstrained; -1 means "the full extent of the dimension"."""
    if value is None:
        return None
    value = _as_int(value, where)
    if not -1 <= value <= MAX_SIZE:
        raise SpecError(f"{where}: invalid chunk size {value}")
    return value or None


def _aspect_value(value: Any, where: str) -> float | None:
    """0 and None mean unconstrained (an aspect ratio of 1 is then used)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"{where}: expected a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise SpecError(f"{where}: invalid aspect ratio {value!r}")
    return float(value) or None


def _origin_value(value: Any, where: str) -> int | None:
    if value is None:
        return None
    value = _as_int(value, where)
    if abs(value) > MAX_SIZE:
        raise SpecError(f"{where}: invalid grid origin {value}")
    return value


def _elements_value(value: Any, where: str) -> int:
    value = _as_int(value, where)
    if not 0 <= value <= MAX_SIZE:
        raise SpecError(f"{where}: invalid number of elements {value}")
    return value


def _permutation(values: Any, where: str) -> list[int]:
    order = [_as_int(v, where) for v in _as_list(values, where)]
    if sorted(order) != list(range(len(order))):
        raise SpecError(f"{where}: {order} is not a permutation of 0..{len(order) - 1}")
    return order


def _rank_value(value: Any, where: str) -> int:
    rank = _as_int(value, where)
    if not 0 <= rank <= MAX_RANK:
        raise SpecError(f"{where}: rank must be in [0, {MAX_RANK}], got {rank}")
    return rank


# ---------------------------------------------------------------------------------------------
# Per-dimension hard/soft values


class _Dims:
    """One value per dimension; each is unset (None), a soft or a hard constraint."""

    def __init__(self, rank: int) -> None:
        self.values: list[Any] = [None] * rank
        self.hard: list[bool] = [False] * rank

    def merge(self, values: Sequence[Any], hard: Sequence[bool], where: str) -> None:
        """A hard value replaces a soft one; a soft value only fills an unset dimension."""
        merged, merged_hard = list(self.values), list(self.hard)
        for i, (value, is_hard) in enumerate(zip(values, hard, strict=True)):
            if value is None:
                continue
            if not is_hard:
                merged[i] = value if merged[i] is None else merged[i]
                continue
            if merged_hard[i] and merged[i] != value:
                raise SpecError(f"{where}: hard constraint {value} for dimension {i} conflicts "
                                f"with existing hard constraint {merged[i]}")
            merged[i], merged_hard[i] = value, True
        self.values, self.hard = merged, merged_hard

    def part(self, hard: bool) -> tuple[Any, ...]:
        return tuple(v if h == hard else None for v, h in zip(self.values, self.hard, strict=True))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Dims) and (self.values, self.hard) == (other.values, other.hard)


def _part_json(dims: _Dims | None, hard: bool, convert: Callable[[Any], Any]) -> list[Any] | None:
    """The hard (or soft) values as a JSON list, or None when there are none."""
    if dims is None:
        return None
    part = dims.part(hard)
    if all(v is None for v in part):
        return None
    return [None if v is None else convert(v) for v in part]


# ---------------------------------------------------------------------------------------------
# ChunkGrid


class ChunkGrid:
    """Constraints on one chunk grid (write, read or codec): shape, aspect ratio, elements.

    Keyword arguments (all optional) follow TensorStore's `ChunkLayout.Grid`: `rank`, `shape`,
    `shape_soft_constraint`, `aspect_ratio`, `aspect_ratio_soft_constraint`, `elements`,
    `elements_soft_constraint`, `grid` (another grid merged as is) and `grid_soft_constraint`
    (another grid merged as soft constraints).
    """

    def __init__(self, **constraints: Any) -> None:
        self._rank: int | None = None
        self._shape: _Dims | None = None
        self._aspect: _Dims | None = None
        self._elements: int | None = None
        self._elements_hard = False
        self.update(**constraints)

    # -- construction and merging

    def update(self, **constraints: Any) -> None:
        """Add constraints; conflicting hard constraints raise SpecError and change nothing."""
        unknown = set(constraints) - set(_GRID_KEYWORDS)
        if unknown:
            raise TypeError(f"unexpected keyword arguments: {sorted(unknown)}")
        staged = copy.deepcopy(self)
        for name, apply in _GRID_KEYWORDS.items():
            if constraints.get(name) is not None:
                apply(staged, constraints[name], name)
        self.__dict__ = staged.__dict__

    def _set_rank(self, rank: int, where: str) -> None:
        if self._rank is None:
            self._rank, self._shape, self._aspect = rank, _Dims(rank), _Dims(rank)
        elif self._rank != rank:
            raise SpecError(f"{where}: rank {rank} does not match existing rank {self._rank}")

    def _merge_shape(self, values: Any, hard: bool, where: str) -> None:
        sizes = [_shape_value(v, where) for v in _as_list(values, where)]
        if not sizes:
            return  # an empty list constrains nothing (layout JSON claims rank 0 separately)
        self._set_rank(len(sizes), where)
        # -1 ("full extent") depends on the domain, so it can only ever be a soft constraint.
        self._shape.merge(sizes, [hard and s != -1 for s in sizes], where)

    def _merge_aspect(self, values: Any, hard: bool, where: str) -> None:
        ratios = [_aspect_value(v, where) for v in _as_list(values, where)]
        if not ratios:
            return
        self._set_rank(len(ratios), where)
        self._aspect.merge(ratios, [hard] * len(ratios), where)

    def _merge_elements(self, value: Any, hard: bool, where: str) -> None:
        value = _elements_value(value, where)
        if hard and self._elements_hard and self._elements != value:
            raise SpecError(f"{where}: hard constraint {value} conflicts with existing hard "
                            f"constraint {self._elements}")
        if hard or self._elements is None:
            self._elements, self._elements_hard = value, hard or self._elements_hard

    def _merge_grid(self, other: ChunkGrid, soft: bool, members: Sequence[str], where: str) -> None:
        """Merge another grid's constraints (only `members`), optionally demoted to soft."""
        if other._rank:
            self._set_rank(other._rank, where)
        for kind in ("hard", "soft"):
            hard = kind == "hard" and not soft
            for name in members:
                value = other._get(name, kind == "hard")
                if value is not None:
                    self._merge_member(name, value, hard, where)

    def _merge_member(self, name: str, value: Any, hard: bool, where: str) -> None:
        merge = {"shape": self._merge_shape, "aspect_ratio": self._merge_aspect,
                 "elements": self._merge_elements}[name]
        merge(value, hard, f"{where}.{name}")

    def _get(self, name: str, hard: bool) -> Any:
        if name == "elements":
            return self._elements if self._elements_hard == hard else None
        dims = self._shape if name == "shape" else self._aspect
        return None if dims is None else dims.part(hard)

    # -- accessors (TensorStore's property names)

    @property
    def rank(self) -> int | None:
        return self._rank

    ndim = rank

    @property
    def shape(self) -> tuple[int | None, ...] | None:
        return self._get("shape", True)

    @property
    def shape_soft_constraint(self) -> tuple[int | None, ...] | None:
        return self._get("shape", False)

    @property
    def aspect_ratio(self) -> tuple[float | None, ...] | None:
        return self._get("aspect_ratio", True)

    @property
    def aspect_ratio_soft_constraint(self) -> tuple[float | None, ...] | None:
        return self._get("aspect_ratio", False)

    @property
    def elements(self) -> int | None:
        return self._get("elements", True)

    @property
    def elements_soft_constraint(self) -> int | None:
        return self._get("elements", False)

    # -- JSON

    @classmethod
    def from_json(cls, json: Any, where: str = "grid") -> ChunkGrid:
        if not isinstance(json, Mapping):
            raise SpecError(f"{where}: expected an object, got {json!r}")
        unknown = set(json) - {m + s for m in _GRID_MEMBERS for s in ("", _SOFT)}
        if unknown:
            raise SpecError(f"{where}: unknown members {sorted(unknown)}")
        grid = cls()
        for name in _GRID_MEMBERS:
            for suffix in ("", _SOFT):
                if name + suffix in json:
                    grid._merge_member(name, json[name + suffix], not suffix, where)
        return grid

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for hard, suffix in ((True, ""), (False, _SOFT)):
            if (shape := _part_json(self._shape, hard, int)) is not None:
                out["shape" + suffix] = shape
            if (aspect := _part_json(self._aspect, hard, float)) is not None:
                out["aspect_ratio" + suffix] = aspect
            if self._elements is not None and self._elements_hard == hard:
                out["elements" + suffix] = self._elements
        return dict(sorted(out.items()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChunkGrid):
            return NotImplemented
        return _grid_state(self) == _grid_state(other)

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        return f"ChunkGrid({self.to_json()!r})"


def _grid_state(grid: ChunkGrid) -> tuple[Any, ...]:
    elements = (grid._elements, grid._elements_hard) if grid._elements is not None else None
    return grid._rank, grid._shape, grid._aspect, elements


def _grid_keyword(name: str, hard: bool) -> Callable[[ChunkGrid, Any, str], None]:
    return lambda grid, value, where: grid._merge_member(name, value, hard, where)


def _grid_from(value: Any, where: str) -> ChunkGrid:
    if isinstance(value, ChunkGrid):
        return value
    return ChunkGrid.from_json(value, where)


# Keyword name -> how to apply it, in the order TensorStore applies them.
_GRID_KEYWORDS: dict[str, Callable[[ChunkGrid, Any, str], None]] = {
    "rank": lambda grid, value, where: grid._set_rank(_rank_value(value, where), where),
    **{name + suffix: _grid_keyword(name, not suffix)
       for name in _GRID_MEMBERS for suffix in ("", _SOFT)},
    "grid": lambda grid, value, where: grid._merge_grid(
        _grid_from(value, where), False, _GRID_MEMBERS, where),
    "grid_soft_constraint": lambda grid, value, where: grid._merge_grid(
        _grid_from(value, where), True, _GRID_MEMBERS, where),
}


# ---------------------------------------------------------------------------------------------
# ChunkLayout


def _usages(prefix: str, member: str) -> tuple[str, ...]:
    """Which grids a `chunk...` constraint reaches: aspect ratios also reach the codec grid."""
    if prefix != "chunk":
        return (prefix.removesuffix("_chunk"),)
    return _USAGES if member == "aspect_ratio" else ("write", "read")


class ChunkLayout:
    """Hard and soft constraints on a chunk layout, with TensorStore's names and JSON form.

    Keyword arguments (all optional) are those of `tensorstore.ChunkLayout`: `rank`,
    `inner_order`, `grid_origin` (each also `..._soft_constraint`), the grids `chunk`,
    `write_chunk`, `read_chunk`, `codec_chunk` (`ChunkGrid` or its JSON), the flat forms
    `{chunk,write_chunk,read_chunk,codec_chunk}_{shape,aspect_ratio,elements}[_soft_constraint]`
    and `finalize`. `chunk...` applies shape and elements to the write and read grids and the
    aspect ratio to all three. Arguments are applied in TensorStore's order, which matters for
    soft constraints: the first soft value set for a dimension wins.
    """

    Grid = ChunkGrid

    def __init__(self, **constraints: Any) -> None:
        self._rank: int | None = None
        self._inner_order: list[int] | None = None
        self._inner_order_hard = False
        self._origin: _Dims | None = None
        self._grids = {usage: ChunkGrid() for usage in _USAGES}
        self.update(**constraints)

    # -- merging

    def update(self, other: ChunkLayout | Mapping[str, Any] | None = None, /,
               **constraints: Any) -> None:
        """Merge `other` (a layout or its JSON) and then the keyword constraints into this layout.

        Hard constraints that disagree raise SpecError naming the member, and leave this layout
        unchanged. Soft constraints never override hard ones, nor earlier soft ones.
        """
        unknown = set(constraints) - set(_LAYOUT_KEYWORDS)
        if unknown:
            raise TypeError(f"unexpected keyword arguments: {sorted(unknown)}")
        staged = copy.deepcopy(self)
        if other is not None:
            staged._merge_layout(ChunkLayout.from_json(other))
        for name, apply in _LAYOUT_KEYWORDS.items():
            if constraints.get(name) is not None:
                apply(staged, constraints[name], name)
        self.__dict__ = staged.__dict__

    def _set_rank(self, rank: int, where: str) -> None:
        if self._rank is not None and self._rank != rank:
            raise SpecError(f"{where}: rank {rank} does not match existing rank {self._rank}")
        if self._rank is None:
            self._rank, self._origin = rank, _Dims(rank)
        for grid in self._grids.values():
            grid._set_rank(rank, where)

    def _merge_inner_order(self, values: Any, hard: bool, where: str) -> None:
        order = _permutation(values, where)
        if not order:
            return  # an empty list constrains nothing
        self._set_rank(len(order), where)
        if hard and self._inner_order_hard and self._inner_order != order:
            raise SpecError(f"{where}: hard constraint {order} conflicts with existing hard "
                            f"constraint {self._inner_order}")
        if hard or self._inner_order is None:
            self._inner_order, self._inner_order_hard = order, hard or self._inner_order_hard

    def _merge_origin(self, values: Any, hard: bool, where: str) -> None:
        origin = [_origin_value(v, where) for v in _as_list(values, where)]
        if not origin:
            return
        self._set_rank(len(origin), where)
        self._origin.merge(origin, [hard] * len(origin), where)

    def _merge_grid(self, prefix: str, grid: ChunkGrid, soft: bool = False) -> None:
        for member in _GRID_MEMBERS:
            for usage in _usages(prefix, member):
                self._merge_into(usage, grid, soft, (member,), prefix)

    def _merge_into(self, usage: str, grid: ChunkGrid, soft: bool, members: Sequence[str],
                    where: str) -> None:
        if grid._rank:
            self._set_rank(grid._rank, where)
        self._grids[usage]._merge_grid(grid, soft, members, where)

    def _merge_flat(self, prefix: str, member: str, value: Any, hard: bool, where: str) -> None:
        if member != "elements":
            value = _as_list(value, where)
            if not value:
                return
            self._set_rank(len(value), where)
        for usage in _usages(prefix, member):
            self._grids[usage]._merge_member(member, value, hard, where)

    def _merge_layout(self, other: ChunkLayout) -> None:
        if self == ChunkLayout():
            self.__dict__ = copy.deepcopy(other.__dict__)  # nothing to merge with: take it whole
            return
        # A rank-0 layout has no per-dimension constraints, so its rank adds nothing.
        if other._rank:
            self._set_rank(other._rank, "rank")
        if other._inner_order is not None:
            name = "inner_order" if other._inner_order_hard else "inner_order" + _SOFT
            self._merge_inner_order(other._inner_order, other._inner_order_hard, name)
        if other._origin is not None:
            for hard in (True, False):
                self._merge_origin(other._origin.part(hard), hard, "grid_origin")
        for usage in _USAGES:
            self._merge_into(usage, other._grids[usage], False, _GRID_MEMBERS, f"{usage}_chunk")

    # -- finalize

    def finalize(self) -> None:
        """Turn the constraints into a precise layout, as TensorStore's `finalize=True` does.

        Requires the rank and a hard grid origin in every dimension; drops soft shapes, aspect
        ratios and element counts; fills unset read chunk sizes from the write chunk; checks that
        every write chunk size is a multiple of the read chunk size.
        """
        staged = copy.deepcopy(self)
        staged._finalize()
        self.__dict__ = staged.__dict__

    def _finalize(self) -> None:
        if self._rank is None:
            raise SpecError("finalize: the rank must be specified")
        for i, hard in enumerate(self._origin.hard):
            if not hard:
                raise SpecError(f"finalize: grid_origin has no hard constraint for dimension {i}")
        self._check_grid_bounds()
        for grid in self._grids.values():
            shape = grid.shape
            grid._shape, grid._aspect = _Dims(self._rank), _Dims(self._rank)
            grid._shape.merge(shape, [True] * self._rank, "shape")
            grid._elements, grid._elements_hard = None, False
        self._fill_read_from_write()

    def _check_grid_bounds(self) -> None:
        """Every grid's first chunk (an unset size counting as 0) must lie within the finite
        index range, as TensorStore checks before filling the read chunk from the write chunk."""
        origin = self._origin.values
        for usage in _USAGES:
            shape = self._grids[usage].shape
            for i, (o, s) in enumerate(zip(origin, shape, strict=True)):
                if not -MAX_SIZE < o + (s or 0) <= MAX_SIZE:
                    raise SpecError(f"finalize: {usage}_chunk shape {_show(shape)} at grid_origin "
                                    f"{list(origin)} leaves the index range in dimension {i}")

    def _fill_read_from_write(self) -> None:
        write, read = self._grids["write"].shape, self._grids["read"].shape
        filled = [w if r is None else r for r, w in zip(read, write, strict=True)]
        for i, (r, w) in enumerate(zip(filled, write, strict=True)):
            if r is not None and w is not None and w % r:
                raise SpecError(f"finalize: write chunk shape {_show(write)} is not a multiple "
                                f"of read chunk shape {_show(filled)} in dimension {i}")
        self._grids["read"]._shape.merge(filled, [True] * len(filled), "read_chunk.shape")

    # -- accessors (TensorStore's property names)

    @property
    def rank(self) -> int | None:
        """The rank, or None while unknown (TensorStore reports -1)."""
        return self._rank

    ndim = rank

    @property
    def inner_order(self) -> tuple[int, ...] | None:
        return tuple(self._inner_order) if self._inner_order_hard else None

    @property
    def inner_order_soft_constraint(self) -> tuple[int, ...] | None:
        if self._rank == 0:
            return ()  # as TensorStore reports it
        order = self._inner_order
        return tuple(order) if order is not None and not self._inner_order_hard else None

    @property
    def grid_origin(self) -> tuple[int | None, ...] | None:
        return None if self._origin is None else self._origin.part(True)

    @property
    def grid_origin_soft_constraint(self) -> tuple[int | None, ...] | None:
        return None if self._origin is None else self._origin.part(False)

    @property
    def write_chunk(self) -> ChunkGrid:
        return self._grid_copy("write")

    @property
    def read_chunk(self) -> ChunkGrid:
        return self._grid_copy("read")

    @property
    def codec_chunk(self) -> ChunkGrid:
        return self._grid_copy("codec")

    def _grid_copy(self, usage: str) -> ChunkGrid:
        grid = copy.deepcopy(self._grids[usage])
        if grid._rank == 0:
            # A rank-0 grid has no per-dimension data; TensorStore reports it as rankless.
            grid._rank = grid._shape = grid._aspect = None
        return grid

    # -- JSON

    @classmethod
    def from_json(cls, json: Any) -> ChunkLayout:
        """Parse TensorStore's ChunkLayout JSON; members are applied in TensorStore's order."""
        if isinstance(json, ChunkLayout):
            return copy.deepcopy(json)
        if not isinstance(json, Mapping):
            raise SpecError(f"chunk_layout: expected an object, got {json!r}")
        unknown = set(json) - set(_JSON_MEMBERS)
        if unknown:
            raise SpecError(f"chunk_layout: unknown members {sorted(unknown)}")
        layout = cls()
        for name, apply in _JSON_MEMBERS.items():
            if name in json:
                # In JSON every list, even an empty one, states the rank.
                for length in _list_lengths(json[name]):
                    layout._set_rank(length, name)
                apply(layout, json[name], name)
        return layout

    def to_json(self) -> dict[str, Any]:
        """TensorStore's JSON form, exactly as `tensorstore.ChunkLayout.to_json()` gives it."""
        out: dict[str, Any] = {}
        if self._inner_order is not None:
            key = "inner_order" if self._inner_order_hard else "inner_order" + _SOFT
            out[key] = list(self._inner_order)
        for hard, suffix in ((True, ""), (False, _SOFT)):
            if (origin := _part_json(self._origin, hard, int)) is not None:
                out["grid_origin" + suffix] = origin
        for usage, grid in self._grids.items():
            if grid_json := grid.to_json():
                out[f"{usage}_chunk"] = grid_json
        # Any per-dimension list implies the rank; it is only written when nothing else says it.
        if self._rank is not None and not _has_list(out):
            out["rank"] = self._rank
        return dict(sorted(out.items()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChunkLayout):
            return NotImplemented
        return _layout_state(self) == _layout_state(other)

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        return f"ChunkLayout({self.to_json()!r})"


def _layout_state(layout: ChunkLayout) -> tuple[Any, ...]:
    order = (layout._inner_order, layout._inner_order_hard) if layout._inner_order else None
    return layout._rank, order, layout._origin, layout._grids


def _list_lengths(value: Any) -> list[int]:
    if isinstance(value, list):
        return [len(value)]
    if isinstance(value, Mapping):
        return [len(v) for v in value.values() if isinstance(v, list)]
    return []


def _has_list(json: Mapping[str, Any]) -> bool:
    return any(isinstance(v, list) or (isinstance(v, Mapping) and _has_list(v))
               for v in json.values())


def _show(values: Sequence[Any]) -> str:
    return "[" + ", ".join("*" if v is None else str(v) for v in values) + "]"


def _layout_grid_keyword(prefix: str) -> Callable[[ChunkLayout, Any, str], None]:
    return lambda layout, value, where: layout._merge_grid(prefix, _grid_from(value, where))


def _flat_keyword(prefix: str, member: str, hard: bool) -> Callable[[ChunkLayout, Any, str], None]:
    return lambda layout, value, where: layout._merge_flat(prefix, member, value, hard, where)


_GRID_PREFIXES = ("chunk", "write_chunk", "read_chunk", "codec_chunk")

# JSON members in the order TensorStore applies them (it matters for soft constraints).
_JSON_MEMBERS: dict[str, Callable[[ChunkLayout, Any, str], None]] = {
    "rank": lambda layout, value, where: layout._set_rank(_rank_value(value, where), where),
    "inner_order": lambda layout, v, where: layout._merge_inner_order(v, True, where),
    "inner_order" + _SOFT: lambda layout, v, where: layout._merge_inner_order(v, False, where),
    "grid_origin": lambda layout, v, where: layout._merge_origin(v, True, where),
    "grid_origin" + _SOFT: lambda layout, v, where: layout._merge_origin(v, False, where),
    **{prefix: _layout_grid_keyword(prefix) for prefix in _GRID_PREFIXES},
}

# Python keywords: the JSON members, then the flat forms, then finalize (TensorStore's order).
_LAYOUT_KEYWORDS: dict[str, Callable[[ChunkLayout, Any, str], None]] = {
    **_JSON_MEMBERS,
    **{f"{prefix}_{member}{suffix}": _flat_keyword(prefix, member, not suffix)
       for member in _GRID_MEMBERS for prefix in _GRID_PREFIXES for suffix in ("", _SOFT)},
    "finalize": lambda layout, value, where: layout._finalize() if value else None,
}


# ---------------------------------------------------------------------------------------------
# Integer helpers for the chunk shape choice


def _round_half_down(numerator: int, denominator: int) -> int:
    """numerator / denominator rounded to the nearest integer, halves rounding down."""
    return (2 * numerator + denominator - 1) // (2 * denominator)


def _nearest_multiple(size: int, unit: int, limit: int | None = None) -> int:
    """The multiple of `unit` nearest to `size` (halves down), at least one `unit`; one above
    `limit` gives way to the largest multiple within it (TensorStore's choice near 2**62)."""
    multiple = unit * max(1, _round_half_down(size, unit))
    if limit is not None and multiple > limit >= unit:
        return limit // unit * unit
    return multiple


def _nearest_divisor(total: int, size: int) -> int:
    """The divisor of `total` nearest to `size`, the smaller one on a tie.

    Like TensorStore, a divisor further than SNAP_REACH away is not looked for: `total` itself
    is used instead.
    """
    if size >= total:
        return total
    divisors = _divisors(total)
    i = bisect_right(divisors, size)
    below, above = divisors[i - 1], divisors[i]
    if below == size:
        return size
    if size - below <= above - size:
        return below if size - below < SNAP_REACH else total
    return above if above - size < SNAP_REACH else total


@lru_cache(maxsize=256)
def _divisors(n: int) -> tuple[int, ...]:
    divisors = [1]
    for prime, power in _factorize(n).items():
        divisors = [d * prime**k for d in divisors for k in range(power + 1)]
    return tuple(sorted(divisors))


def _factorize(n: int) -> dict[int, int]:
    factors: dict[int, int] = {}
    stack = [n]
    while stack:
        m = stack.pop()
        if m == 1:
            continue
        if _is_prime(m):
            factors[m] = factors.get(m, 0) + 1
            continue
        d = _find_factor(m)
        stack += [d, m // d]
    return factors


def _is_prime(n: int) -> bool:
    """Miller-Rabin; these bases make it exact for every n below 3.3e24."""
    bases = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    if n < 2:
        return False
    for p in bases:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in bases:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _find_factor(n: int) -> int:
    """A non-trivial factor of the composite n (trial division, then Pollard's rho)."""
    for p in (2, 3, 5, 7, 11, 13):
        if n % p == 0:
            return p
    rng = random.Random(n)  # deterministic: same input, same work
    while True:
        c, x = rng.randrange(1, n), rng.randrange(2, n)
        y, d = x, 1
        while d == 1:
            x = (x * x + c) % n
            y = (y * y + c) % n
            y = (y * y + c) % n
            d = math.gcd(abs(x - y), n)
        if d != n:
            return d


# ---------------------------------------------------------------------------------------------
# The elements-driven search


def _scaled_size(factor: float, aspect: float, bound: int) -> int:
    """floor(factor * aspect), clamped to [1, bound], all in double precision as TensorStore does.

    The clamp is done in doubles too, so a bound above 2**53 may round up (2**62 - 2 becomes
    2**62): TensorStore's choice then differs from exact arithmetic, and so does ours.
    """
    return max(1, math.floor(min(factor * aspect, float(bound))))


def _same(size: int) -> int:
    return size


class _Rule(NamedTuple):
    """How one dimension's size follows the scale factor.

    A fixed size has no aspect. Otherwise the size is `finish(_scaled_size(...))`: the scaled
    size clamped to `bound` (the extent) and to the budget, then snapped or rounded as the grid
    requires.
    """

    fixed: int = 1
    aspect: float | None = None
    bound: int = 1
    finish: Callable[[int], int] = _same


def _grow(rules: Sequence[_Rule], budget: int) -> tuple[int, ...]:
    """Sizes at the scale factor TensorStore's search settles on for a `budget` of elements.

    Aspect ratios are divided by the largest among the growing sizes, so the fastest growing
    size gains one element per unit of the factor, and every scaled size is clamped to
    min(extent, budget) (the clamp matters where snapping makes "fits" non-monotone).
    """
    growing = [rule.aspect for rule in rules if rule.aspect is not None]
    if not growing:
        return tuple(rule.fixed for rule in rules)
    largest = max(growing)
    aspects = [None if rule.aspect is None else rule.aspect / largest for rule in rules]
    bounds = [min(rule.bound, budget) for rule in rules]

    def sizes(factor: float) -> tuple[int, ...]:
        return tuple(rule.fixed if aspect is None
                     else rule.finish(_scaled_size(factor, aspect, bound))
                     for rule, aspect, bound in zip(rules, aspects, bounds, strict=True))

    high = 2 * max(bound / aspect
                   for aspect, bound in zip(aspects, bounds, strict=True) if aspect is not None)
    return sizes(_settle(lambda factor: math.prod(sizes(factor)) <= budget, high))


def _settle(fits: Callable[[float], bool], high: float) -> float:
    """The scale factor TensorStore's search ends on, a rule observed from its choices.

    The factor starts in [0.5, high]. While the range is wider than 0.5 it is split at its
    geometric mean when the upper end is more than 4 times the lower end, else at its arithmetic
    mean, keeping the upper half when the split point fits; the final lower end is the answer.
    This is not always the largest factor that fits: the last range may still hold a chunk that
    fits only within a narrower range of factors (aspect ratios not in power-of-two proportion:
    aspect [1, 1.7] and 11 elements give [2, 4], though [2, 5] fits), and it is skipped.
    """
    low = 0.5
    while high - low > 0.5:
        middle = math.sqrt(low * high) if high > 4 * low else (low + high) / 2
        if not low < middle < high:
            break  # adjacent doubles: the range cannot shrink any further
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def _fixed(size: int) -> _Rule:
    return _Rule(fixed=size)


def _free(aspect: float, bound: int, finish: Callable[[int], int] | None) -> _Rule:
    return _Rule(aspect=aspect, bound=bound, finish=finish or _same)


# ---------------------------------------------------------------------------------------------
# Choosing read and write chunk shapes


class _Wants:
    """One grid's constraints, resolved for a known array shape."""

    def __init__(self, grid: ChunkGrid, extents: Sequence[int]) -> None:
        rank = len(extents)
        hard = grid.shape or (None,) * rank
        soft = grid.shape_soft_constraint or (None,) * rank
        self.hard: list[int | None] = list(hard)
        # -1 asks for the whole dimension (at least 1, for empty dimensions).
        self.soft = [max(1, e) if s == -1 else s for s, e in zip(soft, extents, strict=True)]
        aspect = _merged(grid.aspect_ratio, grid.aspect_ratio_soft_constraint, rank)
        self.aspect = [1.0 if a is None else a for a in aspect]
        elements = _first(grid.elements, grid.elements_soft_constraint)
        self.elements = DEFAULT_CHUNK_ELEMENTS if elements is None else elements


def _merged(hard: Sequence[Any] | None, soft: Sequence[Any] | None, rank: int) -> list[Any]:
    hard, soft = hard or (None,) * rank, soft or (None,) * rank
    return [_first(h, s) for h, s in zip(hard, soft, strict=True)]


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _check_divisible(read: _Wants, write: _Wants) -> None:
    for i, (r, w) in enumerate(zip(read.hard, write.hard, strict=True)):
        if r is not None and w is not None and w % r:
            raise SpecError(f"chunk_layout: incompatible chunk sizes for dimension {i}: "
                            f"read chunk size {r} does not divide write chunk size {w}")


def _fixed_write_sizes(read: _Wants, write: _Wants) -> list[int | None]:
    """Write sizes set by hard or soft constraints; a soft one yields to a hard read size."""
    sizes: list[int | None] = []
    for r, w_hard, w_soft in zip(read.hard, write.hard, write.soft, strict=True):
        if w_hard is not None or w_soft is None:
            sizes.append(w_hard)
        else:
            sizes.append(w_soft if r is None else _nearest_multiple(w_soft, r, MAX_SIZE))
    return sizes


def _read_rule(i: int, read: _Wants, write_size: int | None, extent: int) -> _Rule:
    snap = None if write_size is None else (lambda size: _nearest_divisor(write_size, size))
    if read.hard[i] is not None:
        return _fixed(read.hard[i])
    if read.soft[i] is not None:
        return _fixed(read.soft[i] if snap is None else snap(read.soft[i]))
    return _free(read.aspect[i], max(1, extent), snap)


def _write_rule(i: int, write: _Wants, fixed: int | None, read_size: int, extent: int) -> _Rule:
    if fixed is not None:
        return _fixed(fixed)
    return _free(write.aspect[i], max(1, extent), lambda size: _nearest_multiple(size, read_size))


def _choose_read(extents: Sequence[int], read: _Wants,
                 fixed_write: Sequence[int | None]) -> tuple[int, ...]:
    rules = [_read_rule(i, read, fixed_write[i], extent) for i, extent in enumerate(extents)]
    return _grow(rules, read.elements)


def _choose_write(extents: Sequence[int], write: _Wants, fixed_write: Sequence[int | None],
                  read_shape: Sequence[int]) -> tuple[int, ...]:
    rules = [_write_rule(i, write, fixed_write[i], read_shape[i], extent)
             for i, extent in enumerate(extents)]
    return _grow(rules, write.elements)


def _choose(extents: Sequence[int], read: _Wants, write: _Wants) -> tuple[tuple[int, ...], ...]:
    """Read chunk first (fitting any fixed write sizes), then the write chunk around it."""
    _check_divisible(read, write)
    fixed_write = _fixed_write_sizes(read, write)
    read_shape = _choose_read(extents, read, fixed_write)
    return read_shape, _choose_write(extents, write, fixed_write, read_shape)


def _check_extents(shape: Sequence[int]) -> tuple[int, ...]:
    extents = tuple(_as_int(e, "shape") for e in _as_list(shape, "shape"))
    if any(e < 0 or e > MAX_SIZE for e in extents):
        raise SpecError(f"shape: invalid array shape {list(extents)}")
    return extents


def _check_zarr3(layout: ChunkLayout, rank: int) -> None:
    """Constraints the zarr3 format cannot meet whatever the chunk shapes."""
    if layout.rank is not None and layout.rank != rank:
        raise SpecError(f"chunk_layout: rank {layout.rank} does not match the array rank {rank}")
    if any(o not in (None, 0) for o in layout.grid_origin or ()):
        raise SpecError(f"chunk_layout: grid_origin {_show(layout.grid_origin)} is not supported; "
                        "zarr chunk grids start at 0")
    if any(s is not None for s in layout.codec_chunk.shape or ()):
        raise SpecError("chunk_layout: a hard codec_chunk shape is not supported by zarr3")


def _check_shard_grid(read_shape: Sequence[int], write_shape: Sequence[int]) -> None:
    if tuple(read_shape) == tuple(write_shape):
        return
    inner = math.prod(w // r for r, w in zip(read_shape, write_shape, strict=True))
    if inner > MAX_SHARD_GRID_ENTRIES:
        raise SpecError(f"chunk_layout: a write chunk of {list(write_shape)} would hold {inner} "
                        f"read chunks of {list(read_shape)}; at most {MAX_SHARD_GRID_ENTRIES} fit")


def _check_chunk_bytes(read_shape: Sequence[int], dtype_size: int | None) -> None:
    """The bytes codec sizes a read chunk in signed 64-bit bytes; the write chunk is not sized."""
    if dtype_size is not None and math.prod(read_shape) * dtype_size > 2**63 - 1:
        raise SpecError(f"chunk_layout: a chunk of {list(read_shape)} elements of {dtype_size} "
                        "bytes each is too large")


def choose_chunk_shapes(
    shape: Sequence[int],
    layout: ChunkLayout | Mapping[str, Any] | None = None,
    *,
    metadata_chunk_shape: Sequence[int] | None = None,
    sharding: bool = True,
    dtype_size: int | None = None,
    read_fixed: bool = False,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The (read, write) chunk shapes TensorStore's zarr3 driver picks when creating an array.

    `shape` is the array shape; `layout` the chunk layout constraints (object or JSON).
    `metadata_chunk_shape` is `metadata.chunk_grid.configuration.chunk_shape` when the spec
    gives one: it acts as a hard write chunk shape. `sharding=False` says the codec chain is
    fixed and has no sharding codec, so read and write chunks must be equal: the read
    constraints then merge into the write constraints. The data type plays no part in the
    choice; given `dtype_size` (bytes per element), a read chunk too big to address in bytes
    (more than 2**63 - 1) is refused, as TensorStore refuses it. `read_fixed` says a sharding
    codec fixes the read chunk: the chosen one only guides the write chunk, so neither it nor
    the shard grid it makes is checked (the caller checks the codec's own shapes).

    Raises SpecError for contradictory constraints: hard read and write sizes that do not
    divide, a metadata chunk shape disagreeing with a hard write shape, a rank mismatch, a
    non-zero hard grid origin, a hard codec chunk shape, or a sharded write chunk holding more
    than 2**30 read chunks.
    """
    extents = _check_extents(shape)
    layout = ChunkLayout.from_json(layout or {})
    _check_zarr3(layout, len(extents))
    if metadata_chunk_shape is not None:
        try:
            layout.update(write_chunk_shape=metadata_chunk_shape)
        except SpecError as exc:  # name the metadata, not the keyword it went through
            detail = str(exc).replace("write_chunk_shape.", "write_chunk.", 1)
            raise SpecError(f"metadata.chunk_grid chunk_shape {list(metadata_chunk_shape)} "
                            f"conflicts with chunk_layout: {detail}") from None
    write = layout.write_chunk
    if not sharding:
        write._merge_grid(layout.read_chunk, False, _GRID_MEMBERS, "write_chunk")
        # TensorStore then applies them to every grid, so the codec grid's hard aspect ratios
        # must agree too (shapes and elements do not reach the codec grid).
        layout.codec_chunk._merge_grid(write, False, ("aspect_ratio",), "codec_chunk")
        unfixed = [None] * len(extents)
        read_shape = write_shape = _choose_read(extents, _Wants(write, extents), unfixed)
    else:
        read_shape, write_shape = _choose(
            extents, _Wants(layout.read_chunk, extents), _Wants(write, extents))
        if not read_fixed:
            _check_shard_grid(read_shape, write_shape)
    if not read_fixed:
        _check_chunk_bytes(read_shape, dtype_size)
    return read_shape, write_shape


def transpose_order(layout: ChunkLayout | Mapping[str, Any] | None) -> tuple[int, ...] | None:
    """The `order` of the transpose codec TensorStore inserts for `inner_order`, if any.

    A hard or soft inner order that is not C order asks for a transpose codec (placed just
    before the array -> bytes codec); C order or no inner order needs none.
    """
    layout = ChunkLayout.from_json(layout or {})
    order = layout.inner_order or layout.inner_order_soft_constraint
    if order is None or list(order) == sorted(order):
        return None
    return tuple(order)


def effective_chunk_layout(
    shape: Sequence[int],
    layout: ChunkLayout | Mapping[str, Any] | None = None,
    *,
    metadata_chunk_shape: Sequence[int] | None = None,
    sharding: bool = True,
    dtype_size: int | None = None,
) -> ChunkLayout:
    """The precise layout a new zarr3 array reports (TensorStore's `TensorStore.chunk_layout`)."""
    read_shape, write_shape = choose_chunk_shapes(
        shape, layout, metadata_chunk_shape=metadata_chunk_shape, sharding=sharding,
        dtype_size=dtype_size)
    rank = len(read_shape)
    order = transpose_order(layout) or tuple(range(rank))
    return ChunkLayout(rank=rank, grid_origin=[0] * rank, inner_order=order,
                       read_chunk_shape=read_shape, write_chunk_shape=write_shape)


def updated_layout(layout: ChunkLayout, members: dict[str, Any], what: str) -> ChunkLayout:
    """`layout` updated with a driver metadata's `members`; a conflict names `what` gave them."""
    try:
        layout.update(**members)
    except SpecError as exc:
        raise SpecError(f"{what} conflict with schema.chunk_layout: {exc}") from None
    return layout

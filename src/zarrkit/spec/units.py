"""Physical units of dimensions (TensorStore's `Unit`, and how the zarr3 driver stores them).

A unit is a multiplier and a base unit: "4nm" is (4.0, "nm"), "" is (1.0, ""), a bare number is
unitless. The zarr3 driver keeps them in the array's attributes as strings such as "4 nm",
"nm" (a multiplier of 1 is left out), "1" (unitless 1) or null (unspecified).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from ..errors import SpecError

# A leading number (optional), then the base unit: "4nm", "4 nm", "1e3 s", "nm/s", "-2.5".
_UNIT_RE = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)?\s*(.*?)\s*")

UNITS_ATTRIBUTE = "dimension_units"


class Unit:
    """A physical quantity: `multiplier` times `base_unit` (e.g. 4 "nm")."""

    __slots__ = ("multiplier", "base_unit")

    def __init__(self, multiplier: Any = 1.0, base_unit: str | None = None) -> None:
        if base_unit is None:
            parsed = Unit.parse(multiplier)
            multiplier, base_unit = parsed.multiplier, parsed.base_unit
        if isinstance(multiplier, bool) or not isinstance(multiplier, int | float):
            raise SpecError(f"unit multiplier must be a number, got {multiplier!r}")
        if not math.isfinite(multiplier):
            raise SpecError(f"unit multiplier must be finite, got {multiplier!r}")
        self.multiplier = float(multiplier)
        self.base_unit = str(base_unit)

    @classmethod
    def parse(cls, value: Any, where: str = "unit") -> Unit:
        """A unit from a string ("4nm"), a number, a [multiplier, base] pair, or a Unit."""
        if isinstance(value, Unit):
            return value
        if isinstance(value, str):
            match = _UNIT_RE.fullmatch(value)
            if match is None:  # pragma: no cover - the pattern matches every string
                raise SpecError(f"{where}: invalid unit {value!r}")
            number, base = match.groups()
            return _unit_at(float(number) if number else 1.0, base, where)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return _unit_at(float(value), "", where)
        if isinstance(value, list | tuple) and len(value) == 2 and isinstance(value[1], str):
            return _unit_at(value[0], value[1], where)
        raise SpecError(f"{where}: expected a unit such as \"4nm\", a number or "
                        f"[multiplier, base_unit], got {value!r}")

    def to_json(self) -> list[Any]:
        """TensorStore's JSON form: [multiplier, base_unit]."""
        return [self.multiplier, self.base_unit]

    def stored(self) -> str:
        """The string the zarr3 driver writes into the `dimension_units` attribute."""
        number = f"{self.multiplier:g}"  # TensorStore prints 6 significant digits
        if not self.base_unit:
            return number
        return self.base_unit if self.multiplier == 1 else f"{number} {self.base_unit}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = Unit.parse(other)
        if not isinstance(other, Unit):
            return NotImplemented
        return (self.multiplier, self.base_unit) == (other.multiplier, other.base_unit)

    def __hash__(self) -> int:
        return hash((self.multiplier, self.base_unit))

    def __repr__(self) -> str:
        number = f"{self.multiplier:g}"
        return f"Unit({number}, {self.base_unit!r})".replace("'", '"')

    def __str__(self) -> str:
        return self.stored()


Units = tuple[Unit | None, ...]


def _unit_at(multiplier: Any, base_unit: str, where: str) -> Unit:
    """Unit(multiplier, base_unit), a refusal named by `where` (the member it came from)."""
    try:
        return Unit(multiplier, base_unit)
    except SpecError as e:
        raise SpecError(f"{where}: {e}") from None


def parse_units(values: Any, where: str = "dimension_units") -> Units:
    """A list of units (None or null for unspecified dimensions)."""
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise SpecError(f"{where}: expected a list with one unit (or null) per dimension, "
                        f"got {values!r}")
    return tuple(None if v is None else Unit.parse(v, f"{where}[{i}]")
                 for i, v in enumerate(values))


def units_json(units: Units) -> list[Any]:
    return [None if u is None else u.to_json() for u in units]


def stored_units(units: Units) -> list[str | None] | None:
    """The attribute value for `units`, or None when no dimension has a unit (none is stored)."""
    if all(u is None for u in units):
        return None
    return [None if u is None else u.stored() for u in units]


def merge_units(first: Units | None, second: Units | None, where: str) -> Units | None:
    """Per dimension: an unspecified unit takes the other's; two specified units must agree."""
    if first is None or second is None:
        return first if second is None else second
    if len(first) != len(second):
        raise SpecError(f"{where}: {len(first)} units do not match rank {len(second)}")
    merged = []
    for i, (a, b) in enumerate(zip(first, second, strict=True)):
        if a is not None and b is not None and a != b:
            raise SpecError(f"{where}: dimension {i} has unit {a.stored()!r} in one "
                            f"constraint and {b.stored()!r} in the other")
        merged.append(a if a is not None else b)
    return tuple(merged)

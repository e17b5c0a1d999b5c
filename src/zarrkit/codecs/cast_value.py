"""The `cast_value` codec (zarr-extensions): array->array, converting the values to another
numeric type (`data_type`) when encoding and back when decoding, by value.

`rounding` (default "nearest-even") says how a value between two of the target type's is
rounded; `out_of_range` (default: an error) whether values outside the target's range are
clamped or wrapped (integer targets) instead; NaN and infinities never become integers, unless
`scalar_map` maps them first: `{"encode": [[value, stored], ...], "decode": [[stored, value],
...]}`, each pair in the fill-value encoding of its type, applied before any cast.
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np

from ..errors import CodecError
from ._config import check_members
from ._scalars import check_numeric, numeric_dtype, scalar
from .base import ArrayArrayCodec, ChunkSpec
from .registry import register_codec

ROUNDING = ("nearest-even", "towards-zero", "towards-positive", "towards-negative",
            "nearest-away")
OUT_OF_RANGE = ("clamp", "wrap")
_INTEGER_ROUNDING = {"nearest-even": np.rint, "towards-zero": np.trunc,
                     "towards-positive": np.ceil, "towards-negative": np.floor,
                     "nearest-away": lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x)}


@register_codec
class CastValueCodec(ArrayArrayCodec):
    name = "cast_value"

    def __init__(self, config: dict[str, Any], source: np.dtype | None = None) -> None:
        """`config` as JSON; `source` (set by `evolve`: the type of the values it receives)
        binds the scalar map to numbers."""
        what = f"{self.name} codec"
        self.config = config
        self.target = numeric_dtype(config.get("data_type"), f"{what}: data_type")
        self.rounding = config.get("rounding", "nearest-even")
        if self.rounding not in ROUNDING:
            raise CodecError(f"{what}: rounding must be one of {', '.join(ROUNDING)}, got "
                             f"{self.rounding!r}")
        self.out_of_range = config.get("out_of_range")
        if self.out_of_range not in (None, "error", *OUT_OF_RANGE):
            raise CodecError(f"{what}: out_of_range must be \"clamp\" or \"wrap\" (or absent: "
                             f"an error), got {self.out_of_range!r}")
        if self.out_of_range == "wrap" and self.target.kind == "f":
            raise CodecError(f"{what}: out_of_range \"wrap\" applies to integer types, not "
                             f"{self.target}")
        self.source = source
        if source is not None:
            maps = config.get("scalar_map") or {}
            if not isinstance(maps, dict) or set(maps) - {"encode", "decode"}:
                raise CodecError(f"{what}: scalar_map must be an object with \"encode\" and/or "
                                 f"\"decode\" lists, got {maps!r}")
            self._encode_map = _pairs(maps.get("encode", []), source, self.target,
                                      f"{what}: scalar_map.encode")
            self._decode_map = _pairs(maps.get("decode", []), self.target, source,
                                      f"{what}: scalar_map.decode")

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Self:
        check_members(config, ("data_type", "rounding", "out_of_range", "scalar_map"), cls.name)
        if "data_type" not in config:
            raise CodecError(f"{cls.name} codec: configuration member 'data_type' is required")
        return cls(dict(config))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": dict(self.config)}

    def evolve(self, spec: ChunkSpec) -> CastValueCodec:
        check_numeric(spec.dtype, f"{self.name} codec")
        codec = CastValueCodec(self.config, spec.dtype)
        codec.resolve(spec)  # a fill value the target cannot hold is refused here
        return codec

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        fill = self.encode(np.asarray(spec.fill_value, spec.dtype), spec)
        return ChunkSpec(spec.shape, self.target, fill[()])

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return self._bound_to(spec)._cast(array, self.target, "encode")

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return self._bound_to(spec)._cast(array, spec.dtype, "decode")

    def _bound_to(self, spec: ChunkSpec) -> CastValueCodec:
        return self if self.source is not None else self.evolve(spec)

    def _cast(self, values: np.ndarray, to: np.dtype, way: str) -> np.ndarray:
        mapping = self._encode_map if way == "encode" else self._decode_map
        shape, values = values.shape, values.reshape(-1)  # ufuncs make 0-d arrays scalars
        hits = [(_matches(values, src), dst) for src, dst in mapping]
        if hits:  # mapped values take no part in the cast
            values = values.copy()
            for mask, _ in hits:
                values[mask] = 0
        if to.kind == "f":
            out = self._to_float(values, to, way)
        else:
            out = self._to_integer(values, to, way)
        for mask, dst in hits:
            out[mask] = dst
        return out.reshape(shape)

    def _to_float(self, values: np.ndarray, to: np.dtype, way: str) -> np.ndarray:
        if values.dtype.kind in "iu" or to.itemsize < values.dtype.itemsize:  # can overflow
            values = self._in_range(values, float(np.finfo(to).min), float(np.finfo(to).max),
                                    to, way)
        with np.errstate(over="ignore"):
            out = values.astype(to)
        return out if self.rounding == "nearest-even" else _directed(values, out, self.rounding)

    def _to_integer(self, values: np.ndarray, to: np.dtype, way: str) -> np.ndarray:
        info = np.iinfo(to)
        if values.dtype.kind == "f":
            if not np.isfinite(values).all():
                raise CodecError(f"{self.name} codec: cannot {way} NaN or infinity as {to} "
                                 "(a scalar_map can map them to values of it)")
            values = _INTEGER_ROUNDING[self.rounding](values)
        if self.out_of_range == "wrap":
            if values.dtype.kind == "f":  # exact for integers below 2**53
                values = np.mod(values - info.min, float(info.max) - info.min + 1) + info.min
            return values.astype(to)  # between integer types, astype wraps around
        low, high = int(info.min), int(info.max)
        if values.dtype.kind == "f":  # bounds the floats can hold: 2**63 - 1 rounds up
            high = float(np.nextafter(float(high), 0)) if int(float(high)) > high else high
        return self._in_range(values, low, high, to, way).astype(to)

    def _in_range(self, values: np.ndarray, low: Any, high: Any, to: np.dtype,
                  way: str) -> np.ndarray:
        """`values` clamped to [low, high] (infinities stay, for a float target), or as they
        are if all lie there; else an error."""
        if values.dtype.kind in "iu":  # bounds the source type can hold, so clip cannot overflow
            have = np.iinfo(values.dtype)
            low, high = max(low, int(have.min)), min(high, int(have.max))
        outside = (values < low) | (values > high)
        if to.kind == "f":
            outside &= np.isfinite(values)
        if not outside.any():
            return values
        if self.out_of_range == "clamp":
            return np.where(outside, np.clip(values, low, high), values)
        raise CodecError(f"{self.name} codec: cannot {way} {values[outside][0].item()!r} "
                         f"as {to} (out of its range; out_of_range \"clamp\" or \"wrap\" "
                         "handle such values)")


def _pairs(entries: Any, source: np.dtype, target: np.dtype, what: str) -> list[tuple[Any, Any]]:
    if not isinstance(entries, list) or not all(
            isinstance(e, list) and len(e) == 2 for e in entries):
        raise CodecError(f"{what}: expected a list of [from, to] pairs, got {entries!r}")
    return [(scalar(a, source, what), scalar(b, target, what)) for a, b in entries]


def _matches(values: np.ndarray, value: Any) -> np.ndarray:
    if isinstance(value, np.floating) and np.isnan(value):
        return np.isnan(values)
    return values == value


def _directed(values: np.ndarray, nearest: np.ndarray, rounding: str) -> np.ndarray:
    """`values` cast to a float type with `rounding` other than to nearest: where the nearest
    value (`nearest`) is not exact, the neighbour on the other side of the value replaces it
    when the mode says so."""
    wide = values.astype(np.float64) if values.dtype.kind in "iu" else values
    back = nearest.astype(wide.dtype)
    inexact = np.isfinite(wide) & (back != wide)
    if not inexact.any():
        return nearest
    out = nearest.copy()
    near, exact = nearest[inexact], wide[inexact]  # flat, in the order of flatnonzero
    other = np.nextafter(near, np.where(back[inexact] > exact, -np.inf, np.inf).astype(near.dtype))
    near_w, other_w = near.astype(wide.dtype), other.astype(wide.dtype)
    if rounding == "towards-zero":
        use = np.abs(other_w) < np.abs(near_w)
    elif rounding == "towards-positive":
        use = other_w > near_w
    elif rounding == "towards-negative":
        use = other_w < near_w
    else:  # nearest-away: the nearer one, ties away from zero
        d_near, d_other = np.abs(near_w - exact), np.abs(other_w - exact)
        use = (d_other < d_near) | ((d_other == d_near) & (np.abs(other_w) > np.abs(near_w)))
    out.reshape(-1)[np.flatnonzero(inexact)[use]] = other[use]
    return out

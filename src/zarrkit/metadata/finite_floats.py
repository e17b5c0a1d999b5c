"""Fill values of the small float types without infinities: float8_e4m3fn, float8_e4m3fnuz,
float8_e4m3b11fnuz, float8_e5m2fnuz, float8_e8m0fnu and float4_e2m1fn (zarr-extensions data
types that TensorStore stores; their values are ml_dtypes').

Their NaN, zero and top exponent follow no common rule (one NaN pattern, two or none; no
negative zero; no zero and no sign at all), so a number is matched against the values of all of
a type's bit patterns (at most 256) rather than computed from bit fields. Each pattern's value is
ml_dtypes', held exactly: every one is a dyadic rational that float64 represents.

The JSON forms are those of the IEEE types (data-types.rst) less what a type lacks: "Infinity"
and "-Infinity" never, "NaN" only with a NaN, numbers beyond the largest finite value refused
(where an IEEE type would give infinity), hex bit patterns only within the type's bits.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any

import ml_dtypes
import numpy as np

from ..errors import DataTypeError
from ._util import describe, is_int

#: Each type's NaN pattern that "NaN" denotes (zarr-extensions), or None without NaN.
_NAN: dict[str, int | None] = {
    "float8_e4m3fn": 0x7F, "float8_e4m3fnuz": 0x80, "float8_e4m3b11fnuz": 0x80,
    "float8_e5m2fnuz": 0x80, "float8_e8m0fnu": 0xFF, "float4_e2m1fn": None}
NAMES = tuple(_NAN)
_DTYPES = frozenset(np.dtype(getattr(ml_dtypes, name)) for name in NAMES)
#: TensorStore 0.1.86 converts float8_e8m0fnu numbers as 2 ** (bits - 63) (ml_dtypes and the
#: zarr-extensions definition: 2 ** (bits - 127)), so its values are written as hex bits, which
#: TensorStore reads as such.
_HEX_ONLY = "float8_e8m0fnu"


@dataclass(frozen=True)
class _Format:
    name: str
    bits: int  # value bits: 8, or 4 (float4_e2m1fn, in the low bits of its byte)
    mantissa_bits: int
    values: tuple[Fraction, ...]  # the finite values, ascending, each once
    patterns: tuple[int, ...]  # the bit pattern of each (+0 for zero)
    negative_zero: int | None
    overflow: Fraction  # magnitudes from here on round beyond the largest finite value


def handles(dtype: np.dtype) -> bool:
    return dtype in _DTYPES


@cache
def _format(dtype: np.dtype) -> _Format:
    info = ml_dtypes.finfo(dtype)
    patterns = np.arange(1 << info.bits, dtype=np.uint8)
    by_value: dict[Fraction, int] = {}
    negative_zero = None
    for bits, value in zip(patterns.tolist(), patterns.view(dtype).astype(np.float64).tolist(),
                           strict=True):
        if math.isnan(value):
            continue
        if value == 0 and math.copysign(1.0, value) < 0:
            negative_zero = bits
        else:
            by_value.setdefault(Fraction(value), bits)
    values = sorted(by_value)
    # The spacing of the top binade: a value past max + spacing / 2 would round beyond max.
    spacing = Fraction(2) ** (info.maxexp - 1 - info.nmant)
    return _Format(dtype.name, info.bits, info.nmant, tuple(values),
                   tuple(by_value[v] for v in values), negative_zero, values[-1] + spacing / 2)


def _from_bits(bits: int, dtype: np.dtype) -> Any:
    return np.array(bits, np.uint8).view(dtype)[()]


def _nan(fmt: _Format, dtype: np.dtype, where: str) -> Any:
    if _NAN[fmt.name] is None:
        raise DataTypeError(f"{where}: {fmt.name} has no NaN")
    return _from_bits(_NAN[fmt.name], dtype)


def rounded(value: int | float, dtype: np.dtype, *, where: str) -> Any:
    """The value of the type nearest to a number (ties to even); DataTypeError for one beyond
    its range, an infinity, and NaN or negatives for a type without them."""
    fmt = _format(np.dtype(dtype))
    if isinstance(value, float) and math.isnan(value):
        return _nan(fmt, dtype, where)
    if isinstance(value, float) and math.isinf(value):
        raise DataTypeError(f"{where}: {fmt.name} has no infinity")
    exact = Fraction(value)
    # Halfway to the next binade's value the type lacks: a tie, to the largest if it is even.
    if abs(exact) > fmt.overflow or abs(exact) == fmt.overflow and not _even(fmt, -1):
        raise DataTypeError(f"{where}: {describe(value)} is out of range for {fmt.name} "
                            f"(largest value {float(fmt.values[-1])!r})")
    if exact < 0 and fmt.values[0] > 0:
        raise DataTypeError(f"{where}: {fmt.name} has no negative values, got {describe(value)}")
    pick = _nearest(fmt, exact)
    bits = fmt.patterns[pick]
    negative = value < 0 or isinstance(value, float) and math.copysign(1.0, value) < 0
    if fmt.values[pick] == 0 and negative and fmt.negative_zero is not None:
        bits = fmt.negative_zero
    return _from_bits(bits, dtype)


def _nearest(fmt: _Format, exact: Fraction) -> int:
    """The index of the value nearest to `exact`, within the range (or just past it)."""
    i = bisect_left(fmt.values, exact)
    low, high = max(i - 1, 0), min(i, len(fmt.values) - 1)
    below, above = exact - fmt.values[low], fmt.values[high] - exact
    return low if below < above or below == above and _even(fmt, low) else high


def _even(fmt: _Format, i: int) -> bool:
    """Whether the i-th value has the even significand, the one a tie rounds to: its last
    mantissa bit is clear. Without mantissa bits (float8_e8m0fnu, no sign) a tie between
    1 * 2**e and 1 * 2**(e + 1) goes up, as 1.1b rounds to the even 10b."""
    return fmt.mantissa_bits > 0 and fmt.patterns[i] % 2 == 0


def from_json(value: Any, dtype: np.dtype, *, where: str) -> Any:
    """A number, "NaN" (for a type with NaN) or "0x" and two hex digits of the bit pattern."""
    dtype = np.dtype(dtype)
    fmt = _format(dtype)
    if is_int(value) or isinstance(value, float):
        return rounded(value, dtype, where=where)
    if value == "NaN":
        return _nan(fmt, dtype, where)
    if value in ("Infinity", "-Infinity"):
        raise DataTypeError(f"{where}: {fmt.name} has no infinity, got {describe(value)}")
    if isinstance(value, str) and re.fullmatch("0x[0-9a-fA-F]{2}", value):
        return from_bits(int(value[2:], 16), dtype, where=where, shown=value)
    nan = '"NaN" or ' if _NAN[fmt.name] is not None else ""
    raise DataTypeError(f"{where}: expected a number, {nan}a hex string '0x' and 2 digits for "
                        f"{fmt.name}, got {describe(value)}")


def from_bits(bits: int, dtype: np.dtype, *, where: str, shown: Any) -> Any:
    """The value of a bit pattern (given as `shown`), refused if it sets bits the type lacks."""
    fmt = _format(np.dtype(dtype))
    if bits >> fmt.bits:
        raise DataTypeError(f"{where}: {describe(shown)} sets bits beyond the {fmt.bits} of "
                            f"{fmt.name}")
    return _from_bits(bits, dtype)


def value_bits(scalar: Any, dtype: np.dtype) -> int:
    """The bit pattern of a value, without the unused high bits of a 4-bit type."""
    bits = int(np.asarray(scalar, dtype).view(np.uint8)[()])
    return bits & ((1 << _format(np.dtype(dtype)).bits) - 1)


def to_json(scalar: Any, dtype: np.dtype) -> float | str:
    """A number (-0.0 included); "NaN" for the NaN it denotes, other NaNs as hex bits."""
    dtype = np.dtype(dtype)
    bits = value_bits(scalar, dtype)
    value = float(_from_bits(bits, dtype))
    if math.isnan(value):
        return "NaN" if bits == _NAN[dtype.name] else f"0x{bits:02x}"
    return f"0x{bits:02x}" if dtype.name == _HEX_ONLY else value

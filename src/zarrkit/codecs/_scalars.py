"""Numeric data types and scalars in codec configurations (`scale_offset`, `cast_value`).

A scalar is written in the v3 fill-value encoding of its data type: a JSON integer for integer
types; for float types a number, "NaN", "Infinity", "-Infinity" or "0x" and the bits in hex.
Numbers are rounded to the type as numpy rounds a Python float (to nearest).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..errors import CodecError

#: The v3 data types these codecs work on.
NUMERIC = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64")


def numeric_dtype(name: Any, what: str) -> np.dtype:
    """The numpy type of the v3 data type `name`, which must be numeric."""
    if name not in NUMERIC:
        raise CodecError(f"{what}: data type {name!r} is not one of {', '.join(NUMERIC)}")
    return np.dtype(name)


def check_numeric(dtype: np.dtype, what: str) -> None:
    if dtype.name not in NUMERIC:
        raise CodecError(f"{what}: works on {', '.join(NUMERIC)}, not {dtype}")


def scalar(value: Any, dtype: np.dtype, what: str) -> Any:
    """The numpy scalar of `dtype` that the JSON `value` encodes."""
    if isinstance(value, bool):
        raise CodecError(f"{what}: expected a number, got {value!r}")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not isinstance(value, int) or not info.min <= value <= info.max:
            raise CodecError(f"{what}: expected an integer in [{info.min}, {info.max}] for "
                             f"{dtype}, got {value!r}")
        return dtype.type(value)
    if isinstance(value, int | float):
        with np.errstate(over="ignore"):
            return dtype.type(value)
    special = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}
    if value in special:
        return dtype.type(special[value])
    digits = 2 * dtype.itemsize
    if isinstance(value, str) and re.fullmatch(f"0x[0-9a-fA-F]{{{digits}}}", value):
        return np.array(int(value, 16), f"u{dtype.itemsize}").view(dtype)[()]
    raise CodecError(f"{what}: expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or "
                     f"\"0x\" and {digits} hex digits for {dtype}, got {value!r}")

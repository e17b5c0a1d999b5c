"""numpy's 64-bit times as v3 data types: zarr-python's `numpy.datetime64` and
`numpy.timedelta64` (zarr-extensions' `datetime64` and `timedelta64`, read under either name).

Configured by a unit ("Y" ... "as", or "generic") and a scale factor (1 to 2**31 - 1):
`{"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 10}}` is numpy's
`datetime64[10s]`. Values are signed 64-bit counts of that duration, -2**63 being NaT. Fill
values are JSON integers or "NaT"; written as integers (NaT as -2**63), as zarr-python does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DataTypeError
from ._util import describe, is_int

DATETIME, TIMEDELTA = "numpy.datetime64", "numpy.timedelta64"
#: v3 name -> numpy kind.
NUMPY_KIND = {DATETIME: "M", TIMEDELTA: "m"}
#: The zarr-extensions names.
ALIASES = {"datetime64": DATETIME, "timedelta64": TIMEDELTA}
UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic")
_MAX_SCALE = 2**31 - 1
_INT64 = np.iinfo(np.int64)


def dtype_from_config(name: str, config: dict[str, Any], where: str) -> np.dtype:
    unit, scale = config.get("unit"), config.get("scale_factor")
    if set(config) != {"unit", "scale_factor"} or unit not in UNITS or not is_int(scale) \
            or not 1 <= scale <= _MAX_SCALE:
        raise DataTypeError(f"{where}: {name} needs configuration {{'unit': one of "
                            f"{', '.join(UNITS)}, 'scale_factor': 1 to {_MAX_SCALE}}}, "
                            f"got {describe(config)}")
    unit = "us" if unit == "μs" else unit
    return np.dtype(f"{NUMPY_KIND[name]}8" if unit == "generic" else
                    f"{NUMPY_KIND[name]}8[{scale}{unit}]")


def name_of(dtype: np.dtype) -> str:
    return DATETIME if dtype.kind == "M" else TIMEDELTA


def config_of(dtype: np.dtype) -> dict[str, Any]:
    unit, scale = np.datetime_data(dtype)
    return {"unit": unit, "scale_factor": int(scale)}


def fill_from_json(value: Any, dtype: np.dtype, where: str) -> Any:
    """An integer count of the type's duration, or "NaT"."""
    if value == "NaT":
        return _of(_INT64.min, dtype)
    if not is_int(value) or not _INT64.min <= value <= _INT64.max:
        raise DataTypeError(f"{where}: expected an integer in [-2**63, 2**63 - 1] or \"NaT\" "
                            f"for {name_of(dtype)}, got {describe(value)}")
    return _of(value, dtype)


def fill_to_json(scalar: Any, dtype: np.dtype) -> int:
    return int(np.asarray(scalar, dtype).view(np.int64))


def cast_fill(value: Any, dtype: np.dtype, where: str) -> Any:
    """A user's fill value: a numpy time of any unit (converted), a date string such as
    "2020-01-01" (datetimes), "NaT", or the JSON integer count."""
    if isinstance(value, np.datetime64 | np.timedelta64):
        try:
            return np.asarray(value).astype(dtype)[()]
        except (TypeError, ValueError) as e:
            raise DataTypeError(f"{where}: {value!r} is no {dtype}: {e}") from None
    if isinstance(value, str) and value != "NaT" and dtype.kind == "M":
        try:
            return np.datetime64(value).astype(dtype)
        except ValueError:
            raise DataTypeError(f"{where}: {value!r} is no date or time") from None
    return fill_from_json(value, dtype, where)


def _of(count: int, dtype: np.dtype) -> Any:
    return np.array(count, np.int64).view(dtype)[()]

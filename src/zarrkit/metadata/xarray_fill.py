"""xarray's Zarr conventions for missing values, which differ between the formats, so that a
conversion keeps what xarray reads (`zarrkit.convert`, `upgrade_metadata`, `copy` across
formats).

- v2: the array's `fill_value` is xarray's `_FillValue` (values equal to it read as missing);
  null when the variable has none. Dimension names are the `_ARRAY_DIMENSIONS` attribute.
- v3: `fill_value` masks nothing; the mask is a `_FillValue` attribute, encoded by dtype
  kind: floats as base64 of a little-endian float64, complex as a list of two of those,
  bytes as base64, integers, booleans and text as themselves. Dimension names are
  `dimension_names`.

Which arrays are xarray variables (the rest convert as plain Zarr, gaining no attribute): a
v2 (or v1) array carrying `_ARRAY_DIMENSIONS`, xarray's own marker; a v3 array whose
dimensions are all named (`dimension_names`, or that attribute; a 0-d array has none to name)
and that is converted as a member of a group, since xarray opens groups, never a lone array.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from .v2 import DIMENSIONS_ATTRIBUTE

FILL_ATTRIBUTE = "_FillValue"


def is_variable(zarr_format: int, attributes: Mapping[str, Any], ndim: int,
                dimension_names: Any, in_group: bool) -> bool:
    """Whether an array is taken for an xarray variable (see the module docstring)."""
    marked = isinstance(attributes.get(DIMENSIONS_ATTRIBUTE), list)
    if zarr_format != 3:
        return marked
    named = ndim == 0 or marked or (
        dimension_names is not None and all(n is not None for n in dimension_names))
    return in_group and named


def _b64_double(value: Any) -> str:
    return base64.standard_b64encode(struct.pack("<d", float(value))).decode()


def _double(text: Any) -> float:
    if not isinstance(text, str | bytes):
        raise ValueError(f"expected a base64 string, got {text!r}")
    raw = base64.standard_b64decode(text)
    if len(raw) != 8:
        raise ValueError(f"expected 8 bytes in base64, got {len(raw)}")
    return float(struct.unpack("<d", raw)[0])


def encode(value: Any, dtype: np.dtype[Any]) -> Any:
    """The v3 `_FillValue` attribute for a mask `value`; ValueError for a type xarray has no
    encoding for."""
    kind = dtype.kind
    if kind == "f":
        return _b64_double(value)
    if kind == "c":
        return [_b64_double(complex(value).real), _b64_double(complex(value).imag)]
    if kind in "iu":
        return int(value)
    if kind == "b":
        return bool(value)
    if kind == "S":
        return base64.standard_b64encode(bytes(value)).decode()
    if kind == "U":
        return str(value)
    raise ValueError(f"xarray stores no _FillValue attribute for {dtype}")


def decode(value: Any, dtype: np.dtype[Any]) -> Any:
    """The mask a v3 `_FillValue` attribute holds; ValueError if it is not encoded as xarray
    writes it."""
    kind = dtype.kind
    try:
        if kind == "f":
            return _double(value)
        if kind == "c" and isinstance(value, list) and len(value) == 2:
            return complex(_double(value[0]), _double(value[1]))
        if kind in "iu" and isinstance(value, int | float) and not isinstance(value, bool):
            return int(value)
        if kind == "b" and isinstance(value, bool):
            return value
        if kind == "S" and isinstance(value, str):
            return base64.standard_b64decode(value)
        if kind == "U" and isinstance(value, str):
            return value
    except (binascii.Error, struct.error, ValueError) as e:
        raise ValueError(f"_FillValue {value!r} is not xarray's encoding: {e}") from None
    raise ValueError(f"_FillValue {value!r} is not xarray's encoding for {dtype}")


def to_v3(attributes: Mapping[str, Any], fill: Any,
          dtype: np.dtype[Any]) -> tuple[dict[str, Any], Any]:
    """(attributes, fill value) in v3 for a v2 xarray variable whose `fill_value` is `fill`:
    the mask becomes the `_FillValue` attribute and stays the fill value (missing chunks keep
    reading as it); without a mask, floats fill with NaN as xarray writes them (`fill` None:
    the caller's default)."""
    attrs = {k: v for k, v in attributes.items() if k != DIMENSIONS_ATTRIBUTE}
    if fill is None:
        return attrs, (np.nan if dtype.kind == "f" else None)
    try:
        attrs[FILL_ATTRIBUTE] = encode(fill, dtype)
    except (ValueError, TypeError):  # no mask v3 can express: only the fill value is kept
        pass
    return attrs, fill


def to_v2(attributes: Mapping[str, Any], dtype: np.dtype[Any]) -> tuple[dict[str, Any], Any]:
    """(attributes, v2 fill value) for a v3 xarray variable: its `_FillValue` attribute is the
    fill value, else null (a v2 fill value would mask values that v3 reads as data). ValueError
    if the attribute is not xarray's encoding (the caller converts the array as plain Zarr)."""
    attrs = dict(attributes)
    if FILL_ATTRIBUTE not in attrs:
        return attrs, None
    return attrs, decode(attrs.pop(FILL_ATTRIBUTE), dtype)

"""Zarr v2 (and v1) data types and fill values (v2 spec, "Data type encoding", "Fill value
encoding").

A v2 `dtype` is a NumPy typestr (`"<f8"`, `">i4"`, `"|S12"`, `"<M8[ns]"`, `"|O"`) or a structured
descr (a list of `[name, type]` / `[name, type, shape]`, nested). TensorStore also writes the
names of its extension types (`"bfloat16"`, `"float8_e4m3fn"`, `"int4"`, ...) here.

Arrays hold values in the native byte order (as for v3); `stored` keeps the byte order of the
chunk bytes, which the v2 chunk codec converts to and from.
"""

from __future__ import annotations

import base64
import math
import re
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from ..errors import DataTypeError
from . import finite_floats
from ._util import describe, is_int
from .data_type import decode_base64, float_from_json, float_to_json

_TYPESTR = re.compile(r"([<>|])([biufcmMSUVO])([0-9]+)?(\[[0-9]*[A-Za-z]+\])?")
_EXTENSIONS: dict[str, np.dtype] = {
    name: np.dtype(getattr(ml_dtypes, name)) for name in (
        "bfloat16", "float8_e3m4", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz",
        "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", "int2", "int4")}
#: TensorStore writes float4_e2m1fn fill values as base64 of the value's byte, not numbers.
_FLOAT4 = np.dtype(ml_dtypes.float4_e2m1fn)
_SPECIAL_FLOATS = ("NaN", "Infinity", "-Infinity")
_EXTENSION_NAMES = {dtype: name for name, dtype in _EXTENSIONS.items()}
_SIZES = {"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8), "c": (8, 16),
          "m": (8,), "M": (8,)}
_IEEE = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)}
_NAT = -(2**63)


# -- parsing the dtype member ----------------------------------------------------------------


def _simple(value: str, where: str) -> np.dtype:
    if value in _EXTENSIONS:
        return _EXTENSIONS[value]
    match = _TYPESTR.fullmatch(value)
    if match is None:
        raise DataTypeError(f"{where}: {describe(value)} is not a NumPy typestr such as '<f8', "
                            "'>i4', '|b1', '|S12' or '<M8[ns]' (the byte order is required)")
    order, kind, size, unit = match.groups()
    nbytes = int(size) if size else None
    if kind == "O":
        if nbytes not in (None, 8) or unit:
            raise DataTypeError(f"{where}: invalid object type {describe(value)} (expected '|O')")
        return np.dtype(object)
    if nbytes is None or nbytes < 1:
        raise DataTypeError(f"{where}: {describe(value)} needs a positive size")
    if kind in _SIZES and nbytes not in _SIZES[kind]:
        raise DataTypeError(f"{where}: {describe(value)}: no {kind!r} type has {nbytes} bytes")
    if (unit is not None) != (kind in "mM"):
        raise DataTypeError(f"{where}: {describe(value)}: " + (
            "datetime64 and timedelta64 types must give their unit, e.g. '<M8[ns]'"
            if unit is None else "only datetime64 and timedelta64 types take a unit"))
    itemsize = nbytes * (4 if kind == "U" else 1)
    if order == "|" and itemsize > 1 and kind not in "SV":
        raise DataTypeError(f"{where}: {describe(value)}: the byte order ('<' or '>') is "
                            "required for multi-byte types")
    try:
        return np.dtype(value)
    except TypeError as e:
        raise DataTypeError(f"{where}: {describe(value)}: {e}") from None


def _field(entry: Any, where: str) -> tuple[str, np.dtype]:
    if not isinstance(entry, list | tuple) or len(entry) not in (2, 3) \
            or not isinstance(entry[0], str):
        raise DataTypeError(f"{where}: expected [name, type] or [name, type, shape], "
                            f"got {describe(entry)}")
    base = _parse(entry[1], f"{where}[1]")
    if base.hasobject:
        raise DataTypeError(f"{where}: object fields cannot be stored in a structured type")
    if len(entry) == 2:
        return entry[0], base
    shape = entry[2]
    if not isinstance(shape, list | tuple) or not all(is_int(n) and n > 0 for n in shape):
        raise DataTypeError(f"{where}[2]: expected a list of positive integers (the subarray "
                            f"shape), got {describe(shape)}")
    return entry[0], _numpy_dtype((base, tuple(shape)), where)


def _numpy_dtype(spec: Any, where: str) -> np.dtype:
    try:
        return np.dtype(spec)
    except (TypeError, ValueError) as e:  # e.g. sizes that do not fit NumPy's C int
        raise DataTypeError(f"{where}: not a NumPy data type: {e}") from None


def _structured(value: list[Any], where: str) -> np.dtype:
    if not value:
        raise DataTypeError(f"{where}: a structured type needs at least one field")
    names, formats, offsets, offset = [], [], [], 0
    for i, entry in enumerate(value):
        name, dtype = _field(entry, f"{where}[{i}]")
        if name == "":  # NumPy's descr spells padding as an unnamed void field
            if dtype.kind != "V" or dtype.names is not None:
                raise DataTypeError(f"{where}[{i}]: an unnamed field must be '|V<n>' padding")
        elif name in names:
            raise DataTypeError(f"{where}[{i}]: duplicate field name {name!r}")
        else:
            names.append(name)
            formats.append(dtype)
            offsets.append(offset)
        offset += dtype.itemsize
    return _numpy_dtype({"names": names, "formats": formats, "offsets": offsets,
                         "itemsize": offset}, where)


def _parse(value: Any, where: str) -> np.dtype:
    if isinstance(value, str):
        return _simple(value, where)
    if isinstance(value, list):
        return _structured(value, where)
    raise DataTypeError(f"{where}: expected a typestr or a list of fields, got {describe(value)}")


def dtype_to_json(dtype: np.dtype) -> str | list[Any]:
    """The v2 `dtype` member for a numpy dtype (in its own byte order)."""
    if dtype in _EXTENSION_NAMES:
        return _EXTENSION_NAMES[dtype]
    if dtype.names is None:
        if dtype.subdtype is not None:
            raise DataTypeError(f"data type {dtype}: a subarray type needs a field name")
        if dtype.kind in "mM" and np.datetime_data(dtype)[0] == "generic":
            raise DataTypeError(f"data type {dtype}: datetime64/timedelta64 need a unit")
        if dtype.kind == "f" and dtype not in _IEEE and dtype.newbyteorder("=") not in _IEEE:
            raise DataTypeError(f"data type {dtype} cannot be represented in Zarr v2")
        return dtype.str
    fields: list[Any] = []
    position = 0
    for name, (sub, offset, *_) in sorted(dtype.fields.items(), key=lambda kv: kv[1][1]):
        if offset < position:
            raise DataTypeError(f"data type {dtype}: overlapping fields cannot be represented")
        if offset > position:
            fields.append(["", f"|V{offset - position}"])
        base, shape = sub.subdtype if sub.subdtype is not None else (sub, ())
        entry = [name, dtype_to_json(base)]
        fields.append(entry + [list(shape)] if shape else entry)
        position = offset + sub.itemsize
    if dtype.itemsize > position:
        fields.append(["", f"|V{dtype.itemsize - position}"])
    return fields


def _stored_form(dtype: np.dtype) -> np.dtype:
    """The byte order a new array stores `dtype` in: as given if explicit, else little endian
    (what zarr-python and TensorStore write)."""
    if dtype.names is not None or dtype.byteorder in "<>|" or dtype in _EXTENSION_NAMES:
        return dtype
    return dtype.newbyteorder("<")


# -- the data type ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DataTypeV2:
    """A v2 data type: `stored` (with the chunk bytes' byte order) and its JSON form."""

    stored: np.dtype
    json: Any = field(default=None, compare=False)
    dtype: np.dtype = field(init=False, compare=False)

    def __post_init__(self) -> None:
        stored = np.dtype(self.stored)
        object.__setattr__(self, "stored", stored)
        object.__setattr__(self, "json", dtype_to_json(stored) if self.json is None
                           else self.json)
        native = stored if stored.hasobject or stored in _EXTENSION_NAMES \
            else stored.newbyteorder("=")
        object.__setattr__(self, "dtype", native)

    @classmethod
    def from_json(cls, value: Any, *, where: str = "dtype") -> DataTypeV2:
        return cls(_parse(value, where), json=value)

    @classmethod
    def from_numpy(cls, dtype_like: Any) -> DataTypeV2:
        if isinstance(dtype_like, DataTypeV2):
            return dtype_like
        if dtype_like is str:  # zarr-python's spelling of variable-length strings
            return cls(np.dtype(object))
        try:
            dtype = np.dtype(dtype_like)
        except (TypeError, ValueError) as e:
            raise DataTypeError(f"unsupported data type {describe(dtype_like)}: {e}") from None
        stored = _stored_form(dtype)
        _parse(dtype_to_json(stored), "dtype")  # refuse what a reader could not parse
        return cls(stored)

    def to_json(self) -> Any:
        return self.json

    @property
    def kind(self) -> str:
        """"bool", "int", "float", "complex", "time", "bytes", "str", "raw", "struct", "object"."""
        dtype = self.dtype
        if dtype in _EXTENSION_NAMES:
            return "int" if dtype.name.startswith("int") else "float"
        if dtype.names is not None:
            return "struct"
        return {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex", "m": "time",
                "M": "time", "S": "bytes", "U": "str", "V": "raw", "O": "object"}[dtype.kind]

    # -- fill values --------------------------------------------------------------------------

    def default_fill_value(self) -> Any:
        """zarr-python's default for new arrays: zero, NaT for times, empty strings."""
        if self.kind == "time":
            return np.array(_NAT, np.int64).view(self.dtype)[()]
        if self.kind == "object":
            return ""
        return np.zeros((), self.dtype)[()]

    def parse_fill_value(self, value: Any, *, where: str = "fill_value") -> Any:
        """The value denoted by a JSON fill value, or None for `null` (no fill value)."""
        if value is None:
            return None
        parse = getattr(self, f"_parse_{self.kind}")
        return parse(value, where)

    def fill_value_to_json(self, value: Any) -> Any:
        if value is None:
            return None
        return getattr(self, f"_json_{self.kind}")(self.cast_fill_value(value))

    def cast_fill_value(self, value: Any, *, where: str = "fill_value") -> Any:
        """A Python/numpy fill value (or its JSON form) as a value of this type."""
        if value is None:
            return None
        kind = self.kind
        if kind == "object":
            return value
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        if isinstance(value, np.generic) and value.dtype == self.dtype:
            return value
        if kind in ("bool", "int", "float"):
            if isinstance(value, np.generic):
                value = value.item()
            if isinstance(value, bool | int | float):
                return self.parse_fill_value(value, where=where)
        if kind == "struct" and (is_int(value) or isinstance(value, np.integer)) and value == 0:
            # zarr-python 2's spelling of all zeros (its default fill value for every type)
            return self._from_bytes(b"", where, exact=False)
        if kind == "time" and (is_int(value) or isinstance(value, np.integer)):
            # its JSON form, a count of units (as zarr-python and zarrkit's v3 types take it)
            return self.parse_fill_value(int(value), where=where)
        if kind == "bytes" and isinstance(value, str):
            value = value.encode()  # text, as NumPy and zarr-python take it (not the base64 JSON)
        if kind in ("bytes", "raw", "struct") and isinstance(value, bytes | np.void):
            return self._from_bytes(bytes(value) if isinstance(value, bytes)
                                    else np.asarray(value).tobytes(), where,
                                    exact=kind == "struct")
        if isinstance(value, str | list | dict) or value is None:
            return self.parse_fill_value(value, where=where)
        try:
            return np.asarray(value).astype(self.dtype, casting="same_kind")[()]
        except (TypeError, ValueError) as e:
            raise DataTypeError(f"{where}: {describe(value)} is not a value of type "
                                f"{self.json!r}: {e}") from None

    def _parse_bool(self, value: Any, where: str) -> Any:
        if isinstance(value, bool) or (is_int(value) and value in (0, 1)):
            return np.bool_(value)
        raise DataTypeError(f"{where}: expected true or false, got {describe(value)}")

    def _parse_int(self, value: Any, where: str) -> Any:
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # some writers spell integral fill values as 0.0
        if not is_int(value):
            raise DataTypeError(f"{where}: expected an integer, got {describe(value)}")
        info = ml_dtypes.iinfo(self.dtype) if self.dtype in _EXTENSION_NAMES \
            else np.iinfo(self.dtype)
        if not int(info.min) <= value <= int(info.max):
            raise DataTypeError(f"{where}: {value} is out of range for {self.json!r}")
        return self.dtype.type(value)

    def _parse_float(self, value: Any, where: str) -> Any:
        """As a v3 float fill value without the hex form (the extension types' specials and
        rounding included), float4_e2m1fn's base64 byte too."""
        if self.dtype == _FLOAT4 and isinstance(value, str) and value not in _SPECIAL_FLOATS:
            data = self._decode_base64(value, where)
            if len(data) != 1:
                raise DataTypeError(f"{where}: expected base64 of 1 byte for float4_e2m1fn, got "
                                    f"{describe(value)}")
            return finite_floats.from_bits(data[0], self.dtype, where=where, shown=value)
        if isinstance(value, str) and value not in _SPECIAL_FLOATS:
            raise DataTypeError(f"{where}: expected a number, \"NaN\", \"Infinity\" or "
                                f"\"-Infinity\", got {describe(value)}")
        return float_from_json(value, self.dtype, where=where)

    def _parse_complex(self, value: Any, where: str) -> Any:
        if not isinstance(value, list) or len(value) != 2:
            raise DataTypeError(f"{where}: expected [real, imaginary], got {describe(value)}")
        part = DataTypeV2(np.dtype(f"f{self.dtype.itemsize // 2}"))
        real = part._parse_float(value[0], f"{where}[0]")
        imag = part._parse_float(value[1], f"{where}[1]")
        return np.array([real, imag]).view(self.dtype)[0]

    def _parse_time(self, value: Any, where: str) -> Any:
        unit = np.datetime_data(self.dtype)
        if value == "NaT":
            value = _NAT
        if not is_int(value) or not -(2**63) <= value < 2**63:
            raise DataTypeError(f"{where}: expected a 64-bit integer count of {unit[0]} "
                                f"(or \"NaT\"), got {describe(value)}")
        return np.array(value, np.int64).view(self.dtype)[()]

    def _parse_str(self, value: Any, where: str) -> Any:
        if not isinstance(value, str) or len(value) > self.dtype.itemsize // 4:
            raise DataTypeError(f"{where}: expected a string of at most "
                                f"{self.dtype.itemsize // 4} characters, got {describe(value)}")
        return np.str_(value)

    def _parse_object(self, value: Any, where: str) -> Any:
        return value

    def _decode_base64(self, value: Any, where: str) -> bytes:
        return decode_base64(value, str(self.to_json()), where)

    def _from_bytes(self, data: bytes, where: str, *, exact: bool) -> Any:
        size = self.stored.itemsize
        if len(data) > size or (exact and len(data) != size):
            raise DataTypeError(f"{where}: the fill value has {len(data)} bytes, the type "
                                f"{self.json!r} has {size}")
        padded = np.frombuffer(data.ljust(size, b"\0"), self.stored)
        out = np.zeros(1, self.dtype)  # zeroed, so padding between fields stays zero
        out[0] = padded[0]
        return out[0]

    def _parse_bytes(self, value: Any, where: str) -> Any:
        return self._from_bytes(self._decode_base64(value, where), where, exact=False)

    def _parse_raw(self, value: Any, where: str) -> Any:
        return self._from_bytes(self._decode_base64(value, where), where, exact=False)

    def _parse_struct(self, value: Any, where: str) -> Any:
        return self._from_bytes(self._decode_base64(value, where), where, exact=True)

    def _json_bool(self, value: Any) -> bool:
        return bool(value)

    def _json_int(self, value: Any) -> int:
        return int(value)

    def _json_float(self, value: Any) -> float | str:
        if self.dtype == _FLOAT4:
            data = bytes([finite_floats.value_bits(value, self.dtype)])
            return base64.standard_b64encode(data).decode("ascii")
        if self.dtype not in _IEEE:
            number = float(value)
            return number if math.isfinite(number) else \
                "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
        text = float_to_json(value, self.dtype)
        return "NaN" if isinstance(text, str) and text.startswith("0x") else text

    def _json_complex(self, value: Any) -> list[float | str]:
        part = DataTypeV2(np.dtype(f"f{self.dtype.itemsize // 2}"))
        parts = np.asarray(value, self.dtype).reshape(1).view(part.dtype)
        return [part._json_float(parts[0]), part._json_float(parts[1])]

    def _json_time(self, value: Any) -> int:
        return int(np.asarray(value, self.dtype).view(np.int64))

    def _json_str(self, value: Any) -> str:
        return str(value)

    def _json_object(self, value: Any) -> Any:
        return value

    def _json_bytes(self, value: Any) -> str:
        # All `itemsize` bytes: TensorStore requires exactly that many; zarr-python accepts it.
        data = np.asarray(value, self.stored).tobytes()
        return base64.standard_b64encode(data).decode("ascii")

    def _json_raw(self, value: Any) -> str:
        return base64.standard_b64encode(np.asarray(value).tobytes()).decode("ascii")

    def _json_struct(self, value: Any) -> str:
        out = np.zeros(1, self.stored)  # zeroed, so padding bytes are written as zeros
        out[0] = value
        data = out.tobytes()
        return base64.standard_b64encode(data).decode("ascii")

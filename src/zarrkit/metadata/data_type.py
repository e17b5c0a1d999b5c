"""Zarr v3 data types and their fill values (data-types.rst; TensorStore's bfloat16, int2, int4,
float4_e2m1fn and float8 types, zarr-extensions data types; zarr-python's registered string and
bytes extensions).

A fill value is held as a numpy scalar of the native-order dtype and converted from/to JSON
bit-exactly: NaN payloads, -0.0, uint64/int64 extremes all survive a round trip. The module-level
float helpers are format-independent so the v2/v1 metadata can reuse them with their own JSON.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from typing import Any

import ml_dtypes
import numpy as np

from ..errors import DataTypeError
from . import datetime_types as times
from . import finite_floats
from . import structured_type as structured
from ._util import describe, is_int, parse_extension

#: TensorStore's types beyond the core ones (zarr-extensions data types), as ml_dtypes has them.
#: int2, int4 and float4_e2m1fn take a byte each, their value in the low bits.
_ML_INTS = ("int2", "int4")
_ML_FLOATS = ("bfloat16", "float8_e3m4", "float8_e5m2", *finite_floats.NAMES)
_ML_DTYPES: dict[str, np.dtype] = {
    name: np.dtype(getattr(ml_dtypes, name)) for name in (*_ML_INTS, *_ML_FLOATS)}
_ML_NAME_BY_TYPE = {dtype.type: name for name, dtype in _ML_DTYPES.items()}

_CORE_DTYPES: dict[str, np.dtype] = {
    "bool": np.dtype(np.bool_),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "float16": np.dtype(np.float16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
    **_ML_DTYPES,
}

# Keyed by (kind, itemsize) rather than dtype.type: numpy has distinct scalar types of equal
# layout (e.g. longlong vs int64) that must map to the same Zarr type.
_NAME_BY_LAYOUT: dict[tuple[str, int], str] = {
    (dt.kind, dt.itemsize): name
    for name, dt in _CORE_DTYPES.items()
    if name not in _ML_DTYPES
}

_KIND_BY_NAME: dict[str, str] = {
    "bool": "bool", **dict.fromkeys(_ML_INTS, "int"), **dict.fromkeys(_ML_FLOATS, "float"),
    **{f"int{n}": "int" for n in (8, 16, 32, 64)},
    **{f"uint{n}": "uint" for n in (8, 16, 32, 64)},
    **{f"float{n}": "float" for n in (16, 32, 64)},
    "complex64": "complex", "complex128": "complex",
}

#: The registered extension zarr-python writes for numpy `V<n>`: {"name": "raw_bytes",
#: "configuration": {"length_bytes": n}} with a base64 fill value.
RAW_BYTES = "raw_bytes"
_RAW_NAME = re.compile(r"r([1-9][0-9]*)")

#: zarr-python's registered extensions for text and bytes. The fixed-size ones are configured
#: with {"length_bytes": n} like raw_bytes; their values are numpy `U<n/4>` / `S<n>` elements.
FIXED_UTF32 = "fixed_length_utf32"
NULL_TERMINATED = "null_terminated_bytes"
#: The variable-length ones hold Python str / bytes in object arrays (vlen-utf8 / vlen-bytes).
STRING = "string"
VLEN_BYTES = "variable_length_bytes"
#: The kinds of those four types (TensorStore's zarr3 driver supports none of them).
TEXT_KINDS = frozenset({"str", "bytes", "vlen_str", "vlen_bytes"})
#: Configured name -> (numpy kind, DataType.kind); length_bytes is the numpy itemsize.
_SIZED: dict[str, tuple[str, str]] = {
    RAW_BYTES: ("V", "raw"), FIXED_UTF32: ("U", "str"), NULL_TERMINATED: ("S", "bytes")}
#: Variable-length name -> (DataType.kind, the Python type of its values).
_VARIABLE: dict[str, tuple[str, type]] = {STRING: ("vlen_str", str),
                                          VLEN_BYTES: ("vlen_bytes", bytes)}
#: zarr-python < 3.1 named variable_length_bytes "bytes" (with a list of byte values as fill
#: value); zarr-python 3.1 still reads that name, and writes it back as variable_length_bytes.
_ALIASES = {"bytes": VLEN_BYTES}

_TIME_KINDS = ("datetime", "timedelta")

#: (exponent bits, mantissa bits) of each IEEE-like binary float format.
_FLOAT_FORMATS: dict[np.dtype, tuple[int, int]] = {
    np.dtype(np.float16): (5, 10),
    np.dtype(ml_dtypes.bfloat16): (8, 7),
    np.dtype(ml_dtypes.float8_e3m4): (3, 4),
    np.dtype(ml_dtypes.float8_e5m2): (5, 2),
    np.dtype(np.float32): (8, 23),
    np.dtype(np.float64): (11, 52),
}
_UINT_BY_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_COMPONENT = {np.dtype(np.complex64): np.dtype(np.float32),
              np.dtype(np.complex128): np.dtype(np.float64)}


@dataclass(frozen=True, slots=True)
class DataType:
    """A Zarr data type: its v3 identifier and the native-order numpy dtype holding its values."""

    name: str
    dtype: np.dtype
    #: "bool", "int", "uint", "float", "complex", "raw", "str" (fixed_length_utf32), "bytes"
    #: (null_terminated_bytes), "vlen_str" (string), "vlen_bytes" (variable_length_bytes),
    #: "datetime" or "timedelta" (numpy.datetime64, numpy.timedelta64) or "struct".
    kind: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        dtype = np.dtype(self.dtype)
        if self.name == RAW_BYTES:
            valid, kind = _is_raw(dtype), "raw"
        elif self.name in _SIZED:
            kind = _SIZED[self.name][1]
            valid = dtype.kind == _SIZED[self.name][0] and dtype.itemsize > 0 and dtype.isnative
        elif self.name in _VARIABLE:
            valid, kind = dtype == np.dtype(object), _VARIABLE[self.name][0]
        elif self.name in times.NUMPY_KIND:
            valid = dtype.kind == times.NUMPY_KIND[self.name] and dtype.isnative
            kind = "datetime" if dtype.kind == "M" else "timedelta"
        elif self.name == structured.STRUCTURED:
            valid, kind = structured.is_packed(dtype), "struct"
        else:
            expected = _dtype_for_name(self.name, where="data_type")
            valid = expected is not None and dtype == expected
            kind = "raw" if valid and _is_raw(dtype) else _KIND_BY_NAME.get(self.name, "")
        if not valid:
            raise DataTypeError(f"data type {self.name!r} does not match dtype {dtype}")
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "kind", kind)

    @property
    def item_size(self) -> int:
        return self.dtype.itemsize

    # -- identifiers --------------------------------------------------------------------------

    @classmethod
    def from_json(cls, value: Any, *, where: str = "data_type") -> DataType:
        """Parse the v3 `data_type` member. Unknown types cannot be skipped, so they raise."""
        name, config, _ = parse_extension(value, where=where, error=DataTypeError)
        name = _ALIASES.get(name, name)
        name = times.ALIASES.get(name, name)
        if name in times.NUMPY_KIND:
            return cls(name, times.dtype_from_config(name, config, where))
        if name == structured.STRUCTURED:
            return cls(name, structured.dtype_from_config(
                config, where, lambda v, w: cls.from_json(v, where=w).dtype))
        if name in _SIZED and isinstance(value, dict):
            numpy_kind = _SIZED[name][0]
            length = _length_bytes(name, config, where)
            return cls(name, np.dtype(f"{numpy_kind}{length // 4 if numpy_kind == 'U' else length}"))
        if name in _VARIABLE and not config:
            return cls(name, np.dtype(object))
        if config:
            raise DataTypeError(f"{where}: data type {name!r} takes no configuration")
        dtype = _dtype_for_name(name, where=where)
        if dtype is None:
            raise DataTypeError(f"{where}: unknown or unsupported data type {describe(value)}")
        return cls(name, dtype)

    @classmethod
    def from_numpy(cls, dtype_like: Any) -> DataType:
        """The data type of a numpy dtype-like (byte order is ignored: data is stored native)."""
        if isinstance(dtype_like, DataType):
            return dtype_like
        if dtype_like is None:  # np.dtype(None) would silently mean float64
            raise DataTypeError("data type must not be None")
        if dtype_like is bytes:  # np.dtype(bytes) is the sizeless S0
            return cls(VLEN_BYTES, np.dtype(object))
        try:
            dtype = np.dtype(dtype_like)
        except (TypeError, ValueError) as e:
            raise DataTypeError(f"unsupported data type {describe(dtype_like)}: {e}") from None
        if _is_raw(dtype):
            return cls(f"r{8 * dtype.itemsize}", dtype)
        if dtype.kind in "mM":
            return cls(times.name_of(dtype), dtype.newbyteorder("="))
        if dtype.names is not None:
            return cls(structured.STRUCTURED,
                       structured.packed(dtype, lambda f: cls.from_numpy(f).dtype))
        text = _text_type(dtype)
        if text is not None:
            return text
        name = _name_for_dtype(dtype)
        if name is None:
            raise DataTypeError(f"data type {dtype} has no Zarr v3 equivalent")
        return cls(name, _CORE_DTYPES[name])

    @classmethod
    def parse(cls, value: Any) -> DataType:
        """A DataType, a v3 identifier ("float32", "r24", "string", {...}) or a numpy dtype-like
        (str, bytes and object included: see `from_numpy`)."""
        if isinstance(value, DataType):
            return value
        if isinstance(value, dict) or isinstance(value, str) and (
                value in _CORE_DTYPES or value in _VARIABLE or _RAW_NAME.fullmatch(value)):
            return cls.from_json(value)
        return cls.from_numpy(value)

    def to_json(self) -> str | dict[str, Any]:
        if self.name in _SIZED:
            return {"name": self.name, "configuration": {"length_bytes": self.item_size}}
        if self.name in times.NUMPY_KIND:
            return {"name": self.name, "configuration": times.config_of(self.dtype)}
        if self.name == structured.STRUCTURED:
            return {"name": self.name, "configuration": structured.config_of(
                self.dtype, lambda f: DataType.from_numpy(f).to_json())}
        return self.name

    # -- fill values --------------------------------------------------------------------------

    def default_fill_value(self) -> Any:
        """Zero of the type: false, 0, +0.0, 0+0j, all-zero bytes or the empty str/bytes."""
        if self.kind in ("vlen_str", "vlen_bytes"):
            return _VARIABLE[self.name][1]()
        if self.kind in _TIME_KINDS:  # NaT, as zarr-python (and v2's null) has it
            return times.fill_from_json("NaT", self.dtype, "fill_value")
        return np.zeros((), self.dtype)[()]

    def parse_fill_value(self, value: Any, *, where: str = "fill_value") -> Any:
        """The numpy scalar denoted by a v3 JSON fill value (data-types.rst, exactly)."""
        kind = self.kind
        if kind == "bool":
            if not isinstance(value, bool):
                raise DataTypeError(f"{where}: expected true or false for bool, got {describe(value)}")
            return np.bool_(value)
        if kind in ("int", "uint"):
            return _int_from_json(value, self.dtype, self.name, where)
        if kind == "float":
            return float_from_json(value, self.dtype, where=where)
        if kind == "complex":
            return complex_from_json(value, self.dtype, where=where)
        if kind in _TIME_KINDS:
            return times.fill_from_json(value, self.dtype, where)
        if kind == "vlen_str" and isinstance(value, int | float):
            value = str(value)  # zarr-python reads numbers (zarr v2's fill values) as their text
        if kind in ("str", "vlen_str"):
            return self._text(value, where)
        if kind == "vlen_bytes" and isinstance(value, list):  # the "bytes" alias's form
            return _byte_list(value, self.name, where)
        if kind in ("bytes", "vlen_bytes"):
            return self._bytes(decode_base64(value, self.name, where), where)
        if kind == "struct":
            return _raw_from_bytes(decode_base64(value, self.name, where), self.dtype, where)
        return _raw_from_json(value, self.dtype, where)

    def fill_value_to_json(self, scalar: Any) -> Any:
        """The v3 JSON form of a fill value (as produced by `parse_fill_value` or `cast_fill_value`)."""
        scalar = self.cast_fill_value(scalar)
        kind = self.kind
        if kind == "bool":
            return bool(scalar)
        if kind in ("int", "uint"):
            return int(scalar)
        if kind == "float":
            return float_to_json(scalar, self.dtype)
        if kind == "complex":
            return complex_to_json(scalar, self.dtype)
        if kind in _TIME_KINDS:
            return times.fill_to_json(scalar, self.dtype)
        if kind in ("str", "vlen_str"):
            return str(scalar)
        if kind in ("bytes", "vlen_bytes"):  # zarr-python's form: base64 of the value's bytes
            return base64.standard_b64encode(bytes(scalar)).decode("ascii")
        data = np.asarray(scalar).tobytes()
        if self.name in (RAW_BYTES, structured.STRUCTURED):  # zarr-python's form for these
            return base64.standard_b64encode(data).decode("ascii")
        return list(data)

    def cast_fill_value(self, value: Any, *, where: str = "fill_value") -> Any:
        """A user-supplied fill value (Python/numpy value or its JSON form) as a numpy scalar.

        Refuses values the type cannot hold (out-of-range or fractional integers) rather than
        wrapping or truncating; a scalar of exactly this dtype is kept bit for bit.
        """
        if value is None:
            return self.default_fill_value()
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        if isinstance(value, np.generic):
            if value.dtype == self.dtype:
                # Integers have one bit pattern per value, except int2/int4, whose unused high
                # bits vary by producer (TensorStore sign-extends); rebuild it so equal means
                # equal. float4_e2m1fn's are dropped likewise.
                if self.kind == "int":
                    return self.dtype.type(int(value))
                if self.name == "float4_e2m1fn":
                    return float_from_bits(finite_floats.value_bits(value, self.dtype), self.dtype)
                return value
            if self.kind == "raw":
                return _raw_from_bytes(np.asarray(value).tobytes(), self.dtype, where)
            if self.kind not in ("struct", *_TIME_KINDS):  # those take numpy's values as such
                value = value.item()
        return self._cast_python(value, where)

    def _cast_python(self, value: Any, where: str) -> Any:
        kind = self.kind
        if kind in _TIME_KINDS:
            return times.cast_fill(value, self.dtype, where)
        if kind == "struct":
            return _struct_of(value, self.dtype, where)
        if kind == "raw" and isinstance(value, bytes | bytearray | memoryview):
            return _raw_from_bytes(bytes(value), self.dtype, where)
        if kind in ("str", "vlen_str"):
            return self._text(value, where)
        if kind in ("bytes", "vlen_bytes"):
            # Bytes only: a str could be text or the base64 JSON form, so neither is guessed.
            if not isinstance(value, bytes | bytearray | memoryview):
                raise DataTypeError(f"{where}: expected bytes for {self.name}, got {describe(value)}")
            return self._bytes(bytes(value), where)
        if kind in ("int", "uint") and isinstance(value, float) and value.is_integer():
            value = int(value)
        elif kind == "float" and isinstance(value, float):
            return round_to_float(value, self.dtype, where=where)
        elif kind == "complex" and (is_int(value) or isinstance(value, float | complex)):
            part = _COMPONENT[self.dtype]
            return _complex_from_parts(round_to_float(complex(value).real, part),
                                       round_to_float(complex(value).imag, part), self.dtype)
        return self.parse_fill_value(value, where=where)

    def _text(self, value: Any, where: str) -> Any:
        """A str value of fixed_length_utf32 (at most length_bytes / 4 characters) or string."""
        if not isinstance(value, str):
            raise DataTypeError(f"{where}: expected a string for {self.name}, got {describe(value)}")
        if self.kind == "vlen_str":
            return str(value)
        limit = self.item_size // 4
        # numpy drops trailing NULs, as the zero padding of the stored form cannot keep them.
        if len(value.rstrip("\0")) > limit:
            raise DataTypeError(f"{where}: {describe(value)} has {len(value)} characters, "
                                f"{self.name} of length_bytes {self.item_size} holds {limit}")
        return np.str_(value)

    def _bytes(self, data: bytes, where: str) -> Any:
        """A bytes value of null_terminated_bytes (at most length_bytes) or variable_length_bytes."""
        if self.kind == "vlen_bytes":
            return data
        if len(data.rstrip(b"\0")) > self.item_size:
            raise DataTypeError(f"{where}: {describe(data)} has {len(data)} bytes, {self.name} "
                                f"of length_bytes {self.item_size} holds {self.item_size}")
        return np.bytes_(data)


# -- data type helpers ------------------------------------------------------------------------


def _is_raw(dtype: np.dtype) -> bool:
    # ml_dtypes types also report kind "V"; only plain unstructured void is raw bytes.
    return dtype.type is np.void and dtype.fields is None and dtype.subdtype is None \
        and dtype.itemsize > 0


def _dtype_for_name(name: str, *, where: str) -> np.dtype | None:
    dtype = _CORE_DTYPES.get(name)
    if dtype is not None:
        return dtype
    match = _RAW_NAME.fullmatch(name)
    if match is None:
        return None
    bits = int(match.group(1))
    if bits % 8:
        raise DataTypeError(f"{where}: raw data type {name!r}: size must be a multiple of 8 bits")
    return np.dtype(f"V{bits // 8}")


def _name_for_dtype(dtype: np.dtype) -> str | None:
    if dtype.type in _ML_NAME_BY_TYPE:
        return _ML_NAME_BY_TYPE[dtype.type]
    if dtype.kind not in "biufc":
        return None
    return _NAME_BY_LAYOUT.get((dtype.kind, dtype.itemsize))


def _text_type(dtype: np.dtype) -> DataType | None:
    """The string or bytes data type holding numpy `dtype`'s values, if it is one of those.

    Sizeless `U`/`S` (what np.dtype(str) gives), object and numpy 2's StringDType (kind "T")
    hold variable-length values; sized `U<n>`/`S<n>` are fixed (stored natively, the bytes
    codec's endian decides the order on disk).
    """
    if dtype.kind in "OT" or dtype.kind == "U" and dtype.itemsize == 0:
        return DataType(STRING, np.dtype(object))
    if dtype.kind == "S" and dtype.itemsize == 0:
        return DataType(VLEN_BYTES, np.dtype(object))
    if dtype.kind == "U":
        return DataType(FIXED_UTF32, np.dtype(f"U{dtype.itemsize // 4}"))
    if dtype.kind == "S":
        return DataType(NULL_TERMINATED, dtype)
    return None


def _length_bytes(name: str, config: dict[str, Any], where: str) -> int:
    unknown = sorted(set(config) - {"length_bytes"})
    length = config.get("length_bytes")
    unit = 4 if name == FIXED_UTF32 else 1  # UTF-32: four bytes per character
    if unknown or not is_int(length) or length < 1 or length % unit:
        what = "a positive multiple of 4" if unit == 4 else "<positive integer>"
        raise DataTypeError(
            f"{where}: {name} needs configuration {{'length_bytes': {what}}}, "
            f"got {describe(config)}")
    return length


# -- integers ---------------------------------------------------------------------------------


@cache
def _int_range(dtype: np.dtype) -> tuple[int, int]:
    info = ml_dtypes.iinfo(dtype) if dtype.name in _ML_INTS else np.iinfo(dtype)
    return int(info.min), int(info.max)


def _int_from_json(value: Any, dtype: np.dtype, name: str, where: str) -> Any:
    # Floats are refused even when integral: the spec allows no fraction or exponent part,
    # and json.loads only yields int for exactly those numbers.
    if not is_int(value):
        raise DataTypeError(f"{where}: expected an integer for {name}, got {describe(value)}")
    low, high = _int_range(dtype)
    if not low <= value <= high:
        raise DataTypeError(f"{where}: {value} is out of range [{low}, {high}] for {name}")
    return dtype.type(value)


# -- floats -----------------------------------------------------------------------------------


def _float_format(dtype: np.dtype) -> tuple[int, int]:
    return _FLOAT_FORMATS[np.dtype(dtype)]


def _canonical_nan_bits(dtype: np.dtype) -> int:
    ebits, mbits = _float_format(dtype)
    return ((1 << ebits) - 1) << mbits | 1 << (mbits - 1)


def _inf_bits(dtype: np.dtype, negative: bool) -> int:
    ebits, mbits = _float_format(dtype)
    return (negative << (ebits + mbits)) | ((1 << ebits) - 1) << mbits


def float_from_bits(bits: int, dtype: np.dtype) -> Any:
    """The float scalar with the given bit pattern (any NaN payload kept)."""
    return np.array(bits, dtype=_UINT_BY_SIZE[dtype.itemsize]).view(dtype)[()]


def float_bits(scalar: Any, dtype: np.dtype) -> int:
    """The bit pattern of a float scalar of `dtype`, as an unsigned integer."""
    return int(np.asarray(scalar, dtype=dtype).view(_UINT_BY_SIZE[dtype.itemsize])[()])


def _round_bits(magnitude: Fraction, negative: bool, ebits: int, mbits: int) -> int:
    """The bits of the float nearest to ±magnitude (ties to even), overflowing to infinity.

    Done in exact rational arithmetic so that a value is rounded once, straight to the target
    format; rounding via float32 (as a bfloat16 cast does) can land on the wrong neighbour.
    """
    sign = negative << (ebits + mbits)
    if magnitude == 0:
        return sign
    bias = (1 << (ebits - 1)) - 1
    num, den = magnitude.numerator, magnitude.denominator
    exp = num.bit_length() - den.bit_length()  # floor(log2(magnitude)) or one more
    if (num < den << exp) if exp >= 0 else (num << -exp < den):
        exp -= 1
    exp = max(exp, 1 - bias)  # below the normal range: subnormal spacing
    mantissa = round(magnitude * Fraction(2) ** (mbits - exp))  # Fraction rounds half to even
    if mantissa >> (mbits + 1):  # rounding carried into the next binade
        mantissa >>= 1
        exp += 1
    if exp > bias:
        return sign | ((1 << ebits) - 1) << mbits
    if mantissa >> mbits == 0:  # subnormal (exponent field 0)
        return sign | mantissa
    return sign | (exp + bias) << mbits | (mantissa - (1 << mbits))


def round_to_float(value: int | float, dtype: np.dtype, *, where: str = "fill_value") -> Any:
    """A JSON/Python number rounded to the nearest value of the float `dtype` (spec rule)."""
    dtype = np.dtype(dtype)
    if finite_floats.handles(dtype):
        return finite_floats.rounded(value, dtype, where=where)
    if isinstance(value, float):
        if math.isnan(value):
            return float_from_bits(_canonical_nan_bits(dtype), dtype)
        if dtype == np.float64:
            return np.float64(value)
        negative = math.copysign(1.0, value) < 0  # keeps -0.0
        if math.isinf(value):
            return float_from_bits(_inf_bits(dtype, negative), dtype)
    else:
        negative = value < 0
    bits = _round_bits(Fraction(abs(value)), negative, *_float_format(dtype))
    return float_from_bits(bits, dtype)


def float_from_json(value: Any, dtype: np.dtype, *, where: str) -> Any:
    """Parse a float fill value: a number, "NaN", "Infinity", "-Infinity" or "0x<bits>"."""
    dtype = np.dtype(dtype)
    if finite_floats.handles(dtype):
        return finite_floats.from_json(value, dtype, where=where)
    if is_int(value) or isinstance(value, float):
        return round_to_float(value, dtype)
    if not isinstance(value, str):
        raise DataTypeError(f"{where}: expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or "
                            f"a hex string for {_name_for_dtype(dtype)}, got {describe(value)}")
    if value == "NaN":
        return float_from_bits(_canonical_nan_bits(dtype), dtype)
    if value in ("Infinity", "-Infinity"):
        return float_from_bits(_inf_bits(dtype, value[0] == "-"), dtype)
    digits = 2 * dtype.itemsize
    if re.fullmatch(f"0x[0-9a-fA-F]{{{digits}}}", value):
        return float_from_bits(int(value[2:], 16), dtype)
    raise DataTypeError(f"{where}: invalid float fill value {describe(value)} for "
                        f"{_name_for_dtype(dtype)} (hex needs '0x' and exactly {digits} digits)")


def float_to_json(scalar: Any, dtype: np.dtype) -> float | str:
    """Canonical NaN -> "NaN", other NaNs -> hex bits, ±inf -> strings, finite -> a number."""
    dtype = np.dtype(dtype)
    if finite_floats.handles(dtype):
        return finite_floats.to_json(scalar, dtype)
    ebits, mbits = _float_format(dtype)
    bits = float_bits(scalar, dtype)
    exp_mask = ((1 << ebits) - 1) << mbits
    if bits & exp_mask != exp_mask:
        # float64 holds every float16/bfloat16/float32 value exactly, and Python's repr of it
        # reads back to the same float64, so the number round-trips bit for bit.
        return float(np.asarray(scalar, dtype=dtype)[()])
    if bits & ((1 << mbits) - 1) == 0:
        return "-Infinity" if bits >> (ebits + mbits) else "Infinity"
    if bits == _canonical_nan_bits(dtype):
        return "NaN"
    return f"0x{bits:0{2 * dtype.itemsize}x}"


# -- complex ----------------------------------------------------------------------------------


def _complex_from_parts(real: Any, imag: Any, dtype: np.dtype) -> Any:
    part = _COMPONENT[np.dtype(dtype)]
    bits = [float_bits(real, part), float_bits(imag, part)]
    return np.array(bits, dtype=_UINT_BY_SIZE[part.itemsize]).view(dtype)[0]


def complex_from_json(value: Any, dtype: np.dtype, *, where: str) -> Any:
    """A two-element list [real, imag], each part encoded as a float fill value."""
    dtype = np.dtype(dtype)
    if not isinstance(value, list) or len(value) != 2:
        raise DataTypeError(f"{where}: expected a list [real, imaginary] for "
                            f"{_name_for_dtype(dtype)}, got {describe(value)}")
    part = _COMPONENT[dtype]
    real = float_from_json(value[0], part, where=f"{where}[0]")
    imag = float_from_json(value[1], part, where=f"{where}[1]")
    return _complex_from_parts(real, imag, dtype)


def complex_to_json(scalar: Any, dtype: np.dtype) -> list[float | str]:
    dtype = np.dtype(dtype)
    part = _COMPONENT[dtype]
    parts = np.asarray(scalar, dtype=dtype).reshape(1).view(part)
    return [float_to_json(parts[0], part), float_to_json(parts[1], part)]


# -- raw bytes --------------------------------------------------------------------------------


def _raw_from_bytes(data: bytes, dtype: np.dtype, where: str) -> Any:
    if len(data) != dtype.itemsize:
        raise DataTypeError(
            f"{where}: raw fill value has {len(data)} bytes, the data type has {dtype.itemsize}")
    return np.frombuffer(data, dtype)[0] if dtype.names else np.void(data)


def _struct_of(value: Any, dtype: np.dtype, where: str) -> Any:
    """A structured fill value: its bytes, a record (of any layout with these fields), a tuple
    of field values, or the base64 JSON form."""
    if isinstance(value, bytes | bytearray | memoryview):
        return _raw_from_bytes(bytes(value), dtype, where)
    if isinstance(value, str):
        return _raw_from_bytes(decode_base64(value, "structured", where), dtype, where)
    try:
        return np.asarray(value).astype(dtype)[()] if isinstance(value, np.void) else \
            np.array(value, dtype)[()]
    except (TypeError, ValueError) as e:
        raise DataTypeError(f"{where}: {describe(value)} is no value of {dtype}: {e}") from None


def decode_base64(value: Any, name: str, where: str) -> bytes:
    """The bytes of a base64 fill value (of the data type `name`), strictly decoded."""
    if not isinstance(value, str):
        raise DataTypeError(f"{where}: expected base64 text for {name}, got {describe(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise DataTypeError(f"{where}: invalid base64 {describe(value)} for {name}") from None


def _byte_list(value: list[Any], name: str, where: str) -> bytes:
    if not all(is_int(b) and 0 <= b <= 255 for b in value):
        raise DataTypeError(f"{where}: expected base64 text or a list of integers in [0, 255] "
                            f"for {name}, got {describe(value)}")
    return bytes(value)


def _raw_from_json(value: Any, dtype: np.dtype, where: str) -> Any:
    """The spec's list of byte values; also the base64 string TensorStore and zarr-python use."""
    if isinstance(value, str):
        try:
            data = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise DataTypeError(f"{where}: invalid base64 raw fill value {describe(value)}") from None
        return _raw_from_bytes(data, dtype, where)
    if not isinstance(value, list) or not all(is_int(b) and 0 <= b <= 255 for b in value):
        raise DataTypeError(f"{where}: expected a list of {dtype.itemsize} integers in [0, 255] "
                            f"for raw data, got {describe(value)}")
    return _raw_from_bytes(bytes(value), dtype, where)

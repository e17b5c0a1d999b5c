"""`Schema` and `CodecSpec`: TensorStore's driver-independent description of an array.

A schema holds (possibly partial) constraints: rank, dtype, domain, chunk layout, codec, fill
value and dimension units. Keyword names and JSON members are TensorStore's; merging two
schemas raises SpecError naming the member where they disagree.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import numpy as np

from ..errors import DataTypeError, MetadataError, SpecError
from ..metadata.data_type import TEXT_KINDS, DataType
from .chunk_layout import ChunkLayout
from .codec_spec import ChainSpec, merge, parse_chain
from .transform import IndexDomain
from .units import Units, merge_units, parse_units, units_json
from .v2_compressor import with_defaults

_CODEC_DRIVERS = ("zarr3", "zarr")


class CodecSpec:
    """Constraints on the encoding: `{"driver": "zarr3", "codecs": [...]}` (or a v2 compressor
    and filters for driver "zarr")."""

    def __init__(self, json: Any = None) -> None:
        if isinstance(json, CodecSpec):
            json = json.to_json()
        json = {"driver": "zarr3"} if json is None else json
        if not isinstance(json, dict):
            raise SpecError(f"codec: expected an object, got {json!r}")
        driver = json.get("driver")
        if not isinstance(driver, str) or driver not in _CODEC_DRIVERS:
            raise SpecError(f"codec.driver: expected one of {list(_CODEC_DRIVERS)}, got "
                            f"{driver!r}")
        allowed = {"driver", "codecs"} if driver == "zarr3" else {"driver", "compressor",
                                                                  "filters"}
        unknown = set(json) - allowed
        if unknown:
            raise SpecError(f"codec: unknown member(s) {sorted(unknown)} for driver {driver!r}")
        self.driver: str = driver
        self.chain: ChainSpec | None = (parse_chain(json["codecs"], "codec.codecs")
                                        if "codecs" in json else None)
        self._json = copy.deepcopy(json)
        if driver == "zarr":  # as TensorStore: compressor defaults filled, filters null if absent
            self._json.setdefault("filters", None)
            if "compressor" in json:
                self._json["compressor"] = with_defaults(json["compressor"])

    def to_json(self) -> dict[str, Any]:
        out = copy.deepcopy(self._json)
        if self.chain is not None:
            out["codecs"] = self.chain.to_json()
        return out

    def merge(self, other: CodecSpec | None, where: str = "codec") -> CodecSpec:
        if other is None:
            return self
        if other.driver != self.driver:
            raise SpecError(f"{where}: codec drivers {self.driver!r} and {other.driver!r} differ")
        merged = CodecSpec(self._json)
        merged.chain = merge(self.chain, other.chain, f"{where}.codecs", strict=False)
        for key, value in other._json.items():
            if key in ("driver", "codecs"):
                continue
            if key == "filters" and self.driver == "zarr":
                continue  # TensorStore's zarr driver compares only the compressor
            if key in merged._json and merged._json[key] != value:
                raise SpecError(f"{where}.{key}: {merged._json[key]!r} vs {value!r}")
            merged._json[key] = value
        return merged

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CodecSpec) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return f"CodecSpec({self.to_json()!r})"


def dtype_name(value: Any, where: str = "dtype") -> str:
    """TensorStore's name of a data type ("uint16", "bfloat16", ...) from a name or dtype."""
    if isinstance(value, str) and value in _V2_ONLY:
        return value
    try:
        data_type = DataType.parse(value)
    except (DataTypeError, MetadataError, TypeError) as exc:
        why = str(exc)  # (DataType's messages already name the value)
        if repr(value) not in why:
            why = f"unsupported data type {value!r}: {why}"
        raise SpecError(f"{where}: {why}") from None
    name = data_type.to_json()
    if not isinstance(name, str) or data_type.kind in TEXT_KINDS:
        raise SpecError(f"{where}: data type {value!r} has no TensorStore name")
    return name


def json_dtype(value: Any, where: str = "dtype") -> Any:
    """A spec's `dtype` member: a string must be TensorStore's name ("int32", not "<i4" or
    "i4", which TensorStore refuses); dtype objects from Python are converted as keywords are."""
    if isinstance(value, str) and dtype_name(value, where) != value:
        raise SpecError(f"{where}: unsupported data type {value!r}; specs name types as "
                        f"TensorStore does ({dtype_name(value, where)!r})")
    return value


_V2_ONLY = ("string", "ustring", "json")  # TensorStore dtypes that only the zarr driver stores


class Schema:
    """Constraints on an array, with TensorStore's keywords and JSON members."""

    def __init__(self, json: Any = None, *, rank: int | None = None, dtype: Any = None,
                 domain: Any = None, shape: Any = None, chunk_layout: Any = None,
                 codec: Any = None, fill_value: Any = None, dimension_units: Any = None,
                 schema: Any = None) -> None:
        self._rank: int | None = None
        self._dtype: str | None = None
        self._domain: IndexDomain | None = None
        self._layout = ChunkLayout()
        self._codec: CodecSpec | None = None
        self._fill: Any = None
        self._units: Units | None = None
        if json is not None:
            self.update(Schema.from_json(json))
        self.update(rank=rank, dtype=dtype, domain=domain, shape=shape,
                    chunk_layout=chunk_layout, codec=codec, fill_value=fill_value,
                    dimension_units=dimension_units, schema=schema)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_json(cls, json: Any, where: str = "schema") -> Schema:
        if isinstance(json, Schema):
            return copy.deepcopy(json)
        if not isinstance(json, dict):
            raise SpecError(f"{where}: expected an object, got {json!r}")
        unknown = set(json) - {"rank", "dtype", "domain", "chunk_layout", "codec",
                               "fill_value", "dimension_units"}
        if unknown:
            raise SpecError(f"{where}: unknown member(s) {sorted(unknown)}")
        if "dtype" in json:
            json_dtype(json["dtype"], f"{where}.dtype")
        if "fill_value" in json:
            if json["fill_value"] is None:  # update() would take it as "not given"
                raise SpecError(f"{where}.fill_value: null is not a fill value (omit it for "
                                "the default)")
            json = {**json, "fill_value": JsonFill(json["fill_value"])}
        schema = cls()
        schema.update(**json, where=where)
        return schema

    def update(self, other: Schema | None = None, *, where: str = "schema",
               **constraints: Any) -> None:
        """Merge `other` and keyword constraints; SpecError (naming the member) on conflict."""
        staged = copy.deepcopy(self)
        for item in (other, constraints.pop("schema", None)):
            if item is not None:
                staged._merge(Schema.from_json(item, where), where)
        shape = constraints.pop("shape", None)
        if shape is not None:
            staged._set_domain(IndexDomain.make(shape=_shape(shape, f"{where}.shape")),
                               f"{where}.shape")
        for name, value in constraints.items():
            if value is not None:
                _SETTERS[name](staged, value, f"{where}.{name}")
        self.__dict__ = staged.__dict__

    def _merge(self, other: Schema, where: str) -> None:
        if other._rank is not None:
            self._set_rank(other._rank, f"{where}.rank")
        if other._dtype is not None:
            self._set_dtype(other._dtype, f"{where}.dtype")
        if other._domain is not None:
            self._set_domain(other._domain, f"{where}.domain")
        self._set_layout(other._layout, f"{where}.chunk_layout")
        if other._codec is not None:
            self._set_codec(other._codec, f"{where}.codec")
        if other._fill is not None:
            self._set_fill(other._fill, f"{where}.fill_value")
        if other._units is not None:
            self._set_units(other._units, f"{where}.dimension_units")

    def _set_rank(self, rank: Any, where: str) -> None:
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank <= 32:
            raise SpecError(f"{where}: expected an integer in [0, 32], got {rank!r}")
        if self._rank is not None and self._rank != rank:
            raise SpecError(f"{where}: rank {rank} does not match rank {self._rank}")
        self._rank = rank

    def _set_dtype(self, dtype: Any, where: str) -> None:
        name = dtype_name(dtype, where)
        if self._dtype is not None and self._dtype != name:
            raise SpecError(f"{where}: dtype {name!r} does not match dtype {self._dtype!r}")
        self._dtype = name
        if self._fill is not None:  # the fill value given before the type: errors name it
            self._fill = _cast_fill(self._fill, name, where.rsplit(".", 1)[0] + ".fill_value")

    def _set_domain(self, domain: Any, where: str) -> None:
        domain = IndexDomain.from_json(domain, where)
        self._set_rank(domain.rank, where)
        self._domain = domain if self._domain is None else self._domain.merge(domain, where)

    def _set_layout(self, layout: Any, where: str) -> None:
        layout = ChunkLayout.from_json(layout.to_json() if isinstance(layout, ChunkLayout)
                                       else layout)
        self._layout.update(layout)
        if self._layout.rank is not None:
            self._set_rank(self._layout.rank, where)

    def _set_codec(self, codec: Any, where: str) -> None:
        codec = CodecSpec(codec)
        self._codec = codec if self._codec is None else self._codec.merge(codec, where)

    def _set_fill(self, value: Any, where: str) -> None:
        try:  # ragged lists ([[1, 2], [3]]) are no array at all
            value = np.asarray(value) if self._dtype is None \
                else _cast_fill(value, self._dtype, where)
        except (SpecError, MetadataError):
            raise
        except ValueError:
            raise SpecError(f"{where}: the fill value must be a scalar, got {value!r}") from None
        if value.ndim:
            raise SpecError(f"{where}: the fill value must be a scalar, got shape {value.shape}")
        if self._fill is not None and not same_fill(self._fill, value):
            raise SpecError(f"{where}: fill value {_shown(plain_fill(value)[()])} does not "
                            f"match {_shown(plain_fill(self._fill)[()])}")
        self._fill = value

    def _set_units(self, units: Any, where: str) -> None:
        units = parse_units(units, where)
        self._set_rank(len(units), where)
        self._units = merge_units(self._units, units, where)

    # -- accessors ---------------------------------------------------------------------------
    @property
    def rank(self) -> int | None:
        return self._rank

    ndim = rank

    @property
    def dtype(self) -> str | None:
        """TensorStore's data type name, e.g. "uint16"."""
        return self._dtype

    @property
    def domain(self) -> IndexDomain | None:
        return self._domain

    @property
    def shape(self) -> tuple[int, ...] | None:
        return None if self._domain is None else self._domain.shape

    @property
    def chunk_layout(self) -> ChunkLayout:
        return copy.deepcopy(self._layout)

    @property
    def codec(self) -> CodecSpec | None:
        return self._codec

    @property
    def fill_value(self) -> np.ndarray | None:
        return self._fill

    @property
    def dimension_units(self) -> Units | None:
        return self._units

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        layout = self._layout.to_json()
        if layout and layout != {"rank": self._rank}:
            out["chunk_layout"] = layout
        if self._codec is not None:
            out["codec"] = self._codec.to_json()
        if self._units is not None:
            out["dimension_units"] = units_json(self._units)
        if self._domain is not None:
            out["domain"] = self._domain.to_json()
        if self._dtype is not None:
            out["dtype"] = self._dtype
        if self._fill is not None:
            out["fill_value"] = fill_json(self._fill, self._dtype)
        if self._rank is not None:
            out["rank"] = self._rank
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schema) and self._comparable() == other._comparable()

    def _comparable(self) -> dict[str, Any]:
        json = self.to_json()  # its NaN fill would never equal itself
        if self._fill is not None:
            json["fill_value"] = _fill_key(self._fill)
        return json

    def __repr__(self) -> str:
        return f"Schema({self.to_json()!r})"


def _shape(value: Any, where: str) -> list[int]:
    if isinstance(value, str | bytes | dict) or not hasattr(value, "__iter__"):
        raise SpecError(f"{where}: expected a list of sizes, got {value!r}")
    sizes = list(value)
    if not all(isinstance(s, int | np.integer) and not isinstance(s, bool) and s >= 0
               for s in sizes):
        raise SpecError(f"{where}: expected non-negative integer sizes, got {sizes!r}")
    return [int(s) for s in sizes]


_SETTERS = {
    "rank": Schema._set_rank, "dtype": Schema._set_dtype, "domain": Schema._set_domain,
    "chunk_layout": Schema._set_layout, "codec": Schema._set_codec,
    "fill_value": Schema._set_fill, "dimension_units": Schema._set_units,
}


class JsonFill:
    """A fill value from a JSON schema, kept as such until the data type is known: TensorStore
    parses JSON strictly (1 is no bool) but converts keyword values as numpy does."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonFill) and self.value == other.value

    def __repr__(self) -> str:
        return repr(self.value)


def plain_fill(value: Any) -> Any:
    """The fill value itself, a JSON one unwrapped."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and isinstance(value[()], JsonFill):
        return np.asarray(value[()].value)
    return value.value if isinstance(value, JsonFill) else value


def _cast_fill(value: Any, dtype: str, where: str) -> np.ndarray:
    """A fill value (Python, numpy or Zarr JSON form) as a 0-d array of the data type."""
    if dtype in _V2_ONLY:
        return np.asarray(plain_fill(value), dtype=object)
    return cast_fill(value, DataType.parse(dtype), where)


_DECIMAL = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")
_SPECIAL_FLOAT = re.compile(r"\s*[+-]?(nan|inf|infinity)\s*", re.IGNORECASE)


def schema_fill(value: Any, kind: str, where: str = "fill_value") -> Any:
    """A schema fill value for a type of this kind as TensorStore takes one: from JSON, numbers
    for bool and bools for numbers refused; from Python, converted as numpy casts; numbers in
    strings ("7", "nan", "-inf", "1.5") parsed; the rest left to the type. One deliberate
    difference: "0x7fc00001" is Zarr's float bit pattern here, where TensorStore's schema reads
    a hexadecimal integer (2143289344.0) and its zarr3 metadata reads the bits."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    strict = isinstance(value, JsonFill)
    value = plain_fill(value)
    is_bool = isinstance(value, bool | np.bool_)
    if kind == "bool":
        if isinstance(value, str) and value in ("true", "false"):
            return value == "true"
        if strict and not is_bool:
            raise SpecError(f"{where}: expected true or false for bool, got {_shown(value)}")
        return bool(value) if isinstance(value, int | float | np.number) else value
    if strict and is_bool and kind in ("int", "uint", "float", "complex"):
        raise SpecError(f"{where}: expected a number, got {_shown(value)}")
    if isinstance(value, str) and kind in ("int", "uint") and re.fullmatch(r"\s*[+-]?\d+\s*",
                                                                           value):
        return int(value)
    if isinstance(value, str) and kind == "float" and (_DECIMAL.fullmatch(value)
                                                       or _SPECIAL_FLOAT.fullmatch(value)):
        return float(value)
    return value


def _shown(value: Any) -> str:
    return repr(value.item() if isinstance(value, np.generic) else value)


def cast_fill(value: Any, data_type: DataType, where: str = "fill_value") -> np.ndarray:
    """A fill value as a 0-d array of a Zarr v3 data type; SpecError if it holds no such value."""
    value = schema_fill(value, data_type.kind, where)
    try:
        return np.asarray(data_type.cast_fill_value(value, where=where), dtype=data_type.dtype)
    except (DataTypeError, MetadataError) as exc:
        raise SpecError(str(exc)) from None


def same_fill(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bits (so NaN matches NaN), after casting to a common dtype when they differ."""
    a, b = np.asarray(plain_fill(a)), np.asarray(plain_fill(b))
    if a.dtype != b.dtype:
        try:
            b = b.astype(a.dtype)
        except (TypeError, ValueError):
            return False
    if a.dtype.hasobject:
        return bool(a[()] == b[()])
    return a.tobytes() == b.tobytes()


def fill_json(value: np.ndarray, dtype: str | None) -> Any:
    """TensorStore's JSON of a fill value: floats as numbers (NaN and infinities too), complex
    as [real, imag]; not Zarr's "NaN" strings and hex bits."""
    if dtype is None or dtype in _V2_ONLY or value.dtype.hasobject:
        plain = np.asarray(plain_fill(value)).tolist()
        return plain.decode() if isinstance(plain, bytes) else plain  # "string" bytes: text
    data_type = DataType.parse(dtype)
    scalar = data_type.cast_fill_value(value[()])
    if data_type.kind == "float":
        return float(scalar)
    if data_type.kind == "complex":
        return [float(scalar.real), float(scalar.imag)]
    return data_type.fill_value_to_json(scalar)


def with_json_fill(schema: Schema, value: Any) -> Schema:
    """`schema` with a JSON fill value kept as given, not converted to its dtype: so
    TensorStore's Spec.schema keeps a `schema` member's fill_value when the type comes from
    elsewhere (the spec's dtype or metadata); opening converts it."""
    value = plain_fill(value)
    out = copy.deepcopy(schema)
    out._fill = np.empty((), dtype=object)
    out._fill[()] = value[()] if isinstance(value, np.ndarray) else value
    return out


def _fill_key(value: np.ndarray) -> Any:
    """A fill value compared bit for bit (NaN equals NaN, payloads kept)."""
    value = np.asarray(plain_fill(value))
    return value.tolist() if value.dtype.hasobject else (value.dtype.str, value.tobytes())

"""TensorStore's `cast` driver: a view whose elements are converted to another data type.

`cast(store, dtype)` (and `zarrkit.open({"driver": "cast", "dtype": ..., "base": ...})`)
converts the base's elements to `dtype` on read and back to the base's type on write, as
TensorStore 0.1.86 does: numeric values convert as C++ (and numpy's `astype`) convert them
(integers wrap, floats truncate toward zero, values too large for a float become inf; a float
outside an integer type's range gives what the platform's conversion gives), except that a
complex number never becomes a bool. Numbers also read as text ("string", "ustring": printed
as C's "%g", a complex as "(re,im)"; not a bool), but text never converts to numbers, so such a
view is read-only. A direction the pair does not support is left out of the view's mode
(`readable`, `writable`); a pair with neither is refused. Casts nest, as TensorStore's specs do.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import CastOverflowError, CastTypeError, DataTypeError, ReadOnlyError, SpecError
from ..metadata.data_type import DataType
from .schema import Schema, dtype_name, json_dtype, with_json_fill
from .spec import Spec
from .transform import IndexTransform
from .view import View, safely_cast

#: Members TensorStore's cast driver accepts (`schema` and `rank` constrain the base).
CAST_MEMBERS = frozenset({"driver", "dtype", "base", "transform", "context", "schema", "rank"})
_TEXT = ("string", "ustring")
_UNSUPPORTED = ("json",)  # TensorStore's json type: no zarrkit array holds or reads it


def _kind(name: str) -> str:
    if name in _TEXT:
        return "text"
    if name == "bool":
        return "bool"
    if name[:1] == "r" and name[1:].isdigit():  # v3's raw bits: no numeric meaning to convert
        return "raw"
    return "complex" if name.startswith("complex") else "number"


def converts(source: str, target: str) -> bool:
    """Whether TensorStore converts elements of type `source` to type `target`."""
    a, b = _kind(source), _kind(target)
    if "raw" in (a, b):  # only to the same type (TensorStore: "Cannot convert int16 <-> byte")
        return source == target
    if a == "text":
        return b == "text"
    if b == "text":
        return a != "bool"
    return not (a == "complex" and b == "bool")


def _numpy(name: str) -> np.dtype:
    return np.dtype(object) if name in _TEXT else DataType.parse(name).dtype


def _cast_name(dtype: Any, where: str) -> str:
    """TensorStore's name of the cast's type; SpecError for one it lacks or zarrkit cannot
    hold."""
    name = dtype_name(dtype, where)
    if name in _UNSUPPORTED:
        raise SpecError(f"{where}: casting to {name!r} is not supported (zarrkit has no "
                        "json arrays)")
    return name


def _dtype_argument(dtype: Any) -> str:
    """`_cast_name` of a Python argument: as TensorStore's, what is no data type at all
    (None, a number, an array) is a TypeError."""
    if not isinstance(dtype, str | np.dtype | type):
        raise CastTypeError(f"cast: dtype: expected a data type (a name, numpy dtype or "
                            f"type), got {type(dtype).__name__} {dtype!r}")
    if dtype in _PYTHON_TEXT:  # as TensorStore: Python's str and bytes are its text types
        return _PYTHON_TEXT[dtype]
    name = _cast_name(dtype, "cast: dtype")
    if isinstance(dtype, str) and name != dtype:  # TensorStore refuses numpy's "f4", "<i2"
        raise SpecError(f"cast: dtype: {dtype!r} is not a TensorStore data type name; give "
                        f"{name!r} (or a numpy dtype object, np.dtype({dtype!r}))")
    return name


_PYTHON_TEXT: dict[Any, str] = {str: "ustring", bytes: "string"}


def _as_text(data: np.ndarray, source: str, target: str) -> np.ndarray:
    """Numbers printed as TensorStore prints them (C's "%g"; integers in full)."""
    if source in _TEXT:  # string <-> ustring: UTF-8
        convert: Callable[[Any], Any] = (
            (lambda v: v.decode("utf-8", "replace")) if target == "ustring"
            else (lambda v: v.encode("utf-8")))
    elif _integral(source):
        def convert(v: Any) -> Any:
            return str(int(v))
    elif data.dtype.kind == "c":
        def convert(v: Any) -> Any:
            return f"({float(v.real):g},{float(v.imag):g})"
    else:
        def convert(v: Any) -> Any:
            return f"{float(v):g}"
    out = np.empty(data.shape, dtype=object)
    flat = out.reshape(-1)
    for i, v in enumerate(data.reshape(-1)):
        text = convert(v)
        flat[i] = text.encode() if target == "string" and isinstance(text, str) else text
    return out


def convert(data: np.ndarray, source: str, target: str) -> np.ndarray:
    """`data` (of type `source`) as type `target`."""
    if _kind(target) == "text":
        return _as_text(data, source, target)
    dtype = _numpy(target)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # ComplexWarning: the real part is wanted
        try:
            return data.astype(dtype)
        except TypeError:  # ml_dtypes lacks some pairs (int4 -> int2, float8 -> e8m0fnu)
            wide = np.int64 if _integral(source) else np.float64
            return data.astype(wide).astype(dtype)


def _integral(name: str) -> bool:
    return name.startswith(("int", "uint"))


class Cast:
    """The chain of types between a view and its base array: `names[0]` is the base's,
    `names[-1]` the view's; and which directions every step supports."""

    def __init__(self, names: tuple[str, ...], readable: bool, writable: bool) -> None:
        self.names = names
        self.readable = readable
        self.writable = writable

    @property
    def name(self) -> str:
        return self.names[-1]

    @property
    def dtype(self) -> np.dtype:
        return _numpy(self.name)

    def then(self, name: str) -> Cast:
        return Cast(self.names + (name,), self.readable and converts(self.name, name),
                    self.writable and converts(name, self.name))

    def read(self, data: np.ndarray) -> np.ndarray:
        if not self.readable:
            raise DataTypeError(f"cannot read a cast view of type {self.name}: "
                                f"{self._refused(True)} is not a supported conversion (the "
                                "view is write-only)")
        for a, b in zip(self.names, self.names[1:], strict=False):
            data = convert(data, a, b)
        return data

    def written(self, value: Any, what: str) -> np.ndarray:
        """A written value in the base's type: first in the view's (as TensorStore converts
        what it writes: a numpy array only if it casts safely), then back along the chain."""
        if not self.writable:
            pair = self._refused(False)
            why = ("its base array is read-only" if pair is None
                   else f"{pair} is not a supported conversion (the view is read-only)")
            raise ReadOnlyError(f"cannot write to {what}: {why}")
        data = _as_view_values(value, self.dtype, what)
        for a, b in zip(self.names[::-1], self.names[-2::-1], strict=False):
            data = convert(data, a, b)
        return data

    def _refused(self, reading: bool) -> str | None:
        """The first step that does not convert in that direction ("a -> b"); None if all
        do (the base array itself is read-only)."""
        pairs = list(zip(self.names, self.names[1:], strict=False))
        for a, b in pairs if reading else [(b, a) for a, b in reversed(pairs)]:
            if not converts(a, b):
                return f"{a} -> {b}"
        return None

    def fill(self, fill: Any) -> Any:
        """The base's fill value seen through the cast (None where it cannot be read)."""
        if fill is None or not self.readable:
            return None
        return self.read(np.asarray(fill))[()]

    def with_fill(self, schema: Schema, fill: Any) -> Schema:
        """`schema` (of the view's type, without a fill value) with the base's fill value
        converted; text kept as read ("string" bytes, "ustring" str), as TensorStore's schema
        shows it (its JSON has text either way)."""
        value = self.fill(fill)
        if value is None:
            return schema
        if self.name in _TEXT:
            return with_json_fill(schema, value)
        out = copy.deepcopy(schema)
        out.update(fill_value=value, where="cast")
        return out

    def wrap_spec(self, base: dict[str, Any]) -> dict[str, Any]:
        """The nested cast specs around the base's (whose transform and context move to the
        outside, as TensorStore shows them)."""
        outer = {k: base.pop(k) for k in ("context", "transform") if k in base}
        json = base
        for name in self.names[1:]:
            json = {"driver": "cast", "dtype": name, "base": json}
        json.update(outer)
        return json


def _as_view_values(value: Any, dtype: np.dtype, what: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return safely_cast(value, dtype, what)
    try:
        return np.array(value, dtype=dtype)
    except OverflowError as e:
        raise CastOverflowError(f"cannot write {value!r} to {what}: {e}") from None
    except (TypeError, ValueError) as e:
        raise DataTypeError(f"cannot write {value!r} to {what} of data type {dtype}: "
                            f"{e}") from None


# -- making casts -----------------------------------------------------------------------------


def _base_name(base: Any) -> str:
    try:
        return dtype_name(base.dtype)
    except SpecError:
        raise SpecError(f"cast: the data type {base.dtype} of {getattr(base, 'name', base)} "
                        "has no TensorStore name, so no cast driver converts it") from None


def cast_view(store: Any, dtype: Any, *, read: bool | None = None,
              write: bool | None = None) -> View:
    """`store` (an Array or View) with its elements converted to `dtype`; `read`/`write`
    True demand that direction (SpecError if the pair cannot convert that way)."""
    name = _dtype_argument(dtype)
    view = store if isinstance(store, View) else store.view
    chain = view.conversion or Cast((_base_name(view.base),), True,
                                    not getattr(view.base, "read_only", False))
    new = chain.then(name)
    for wanted, ok, what in ((read, new.readable, "Read"), (write, new.writable, "Write")):
        if wanted and not ok:
            raise SpecError(f"cast: {what} access requires the unsupported "
                            f"{new._refused(what == 'Read')} conversion")
    if not (new.readable or new.writable):
        if not (converts(chain.name, name) or converts(name, chain.name)):
            raise SpecError(f"cast: cannot convert between {chain.name} and {name} in either "
                            "direction")
        what = "Read" if chain.readable else "Write"  # the one direction the base offers
        raise SpecError(f"cast: {what} access requires the unsupported "
                        f"{new._refused(chain.readable)} conversion")
    return View(view.base, view.transform, new)


def cast(store: Any, dtype: Any) -> Any:
    """TensorStore's `ts.cast`: a view of `store` (an Array or View) whose elements read as
    `dtype` and are converted back on write; a `Spec` gives the cast spec around it."""
    if isinstance(store, Spec | dict):
        json = store.to_json() if isinstance(store, Spec) else copy.deepcopy(store)
        return Spec({"driver": "cast", "dtype": _dtype_argument(dtype), "base": json})
    if not isinstance(store, View) and not isinstance(getattr(store, "view", None), View):
        raise SpecError(f"cast: expected an array, view or spec, got {type(store).__name__}")
    return cast_view(store, dtype)


# -- the cast driver's spec --------------------------------------------------------------------


def normalized(json: dict[str, Any]) -> dict[str, Any]:
    """A cast spec checked, with its `schema` (but its dtype) moved into the base as
    TensorStore keeps it."""
    unknown = set(json) - CAST_MEMBERS
    if unknown:
        raise SpecError(f"spec: unknown member(s) {sorted(unknown)} for driver 'cast'")
    base = json.get("base")
    if not isinstance(base, dict | Spec):
        raise SpecError(f"spec.base: expected the base array's spec (an object), got {base!r}")
    # Shallow copies: a store object given as the base's kvstore must stay that object.
    json = dict(json, base=base.to_json() if isinstance(base, Spec) else dict(base))
    if "dtype" in json:
        json["dtype"] = _cast_name(json_dtype(json["dtype"], "spec.dtype"), "spec.dtype")
    if "schema" in json:
        schema = Schema.from_json(json.pop("schema"), "spec.schema")
        if schema.dtype is not None:
            if json.get("dtype") not in (None, schema.dtype):
                raise SpecError(f"spec.schema.dtype: {schema.dtype!r} does not match the cast's "
                                f"dtype {json['dtype']!r}")
            json["dtype"] = schema.dtype
        rest = {k: v for k, v in schema.to_json().items() if k not in ("dtype", "rank")}
        if schema.rank is not None:  # TensorStore keeps the rank on the cast
            if json.get("rank", schema.rank) != schema.rank:
                raise SpecError(f"spec.schema.rank: {schema.rank} does not match the cast's "
                                f"rank {json['rank']}")
            json["rank"] = schema.rank
        if rest:
            merged = Schema.from_json(json["base"].get("schema", {}), "spec.base.schema")
            had_rank = "rank" in json["base"].get("schema", {})
            merged.update(rest, where="spec.schema")
            json["base"]["schema"] = {k: v for k, v in merged.to_json().items()
                                      if k != "rank" or had_rank}
    return json


def base_of(json: dict[str, Any]) -> dict[str, Any]:
    """The base's spec carrying the cast's transform, rank and context, as TensorStore opens
    it (the cast's transform applies after the base's own)."""
    base = dict(json["base"])  # (its members are replaced, never changed in place)
    if "transform" in json:
        outer = IndexTransform.from_json(json["transform"])
        if "transform" in base:  # the base's own transform applies after the cast's
            outer = IndexTransform.from_json(base["transform"]).compose(outer)
        base["transform"] = outer.to_json()
    if "rank" in json:
        if base.get("rank", json["rank"]) != json["rank"]:
            raise SpecError(f"spec.rank: {json['rank']} does not match the base's rank "
                            f"{base['rank']}")
        base["rank"] = json["rank"]
    if "context" in json:
        base["context"] = {**json["context"], **base.get("context", {})}
    return base


def open_cast(json: dict[str, Any], options: dict[str, Any],
              open_base: Callable[..., Any]) -> View:
    """Open a cast spec: the base with the options (TensorStore passes them down), but a
    `dtype` keyword, which must be the cast's."""
    json = normalized(json)
    if "dtype" not in json:
        raise SpecError("spec.dtype: the cast driver needs the data type to convert to")
    options = dict(options)
    _check_dtype(options.pop("dtype", None), json["dtype"], "open: dtype")
    if options.get("schema") is not None:  # its dtype is the cast's too
        schema = Schema.from_json(options["schema"], "open: schema").to_json()
        _check_dtype(schema.pop("dtype", None), json["dtype"], "open: schema.dtype")
        options["schema"] = schema
    read, write = options.get("read"), options.get("write")
    base = open_base(base_of(json), **options)
    return cast_view(base, json["dtype"], read=read, write=write)


def _check_dtype(wanted: Any, name: str, where: str) -> None:
    if wanted is not None and dtype_name(wanted, where) != name:
        raise SpecError(f"{where}: {dtype_name(wanted)!r} does not match the cast's dtype "
                        f"{name!r}")


class CastSpec(Spec):
    """A cast spec: the accessors describe the base (with the cast's transform) in the
    cast's data type."""

    def __init__(self, json: Any) -> None:
        if isinstance(json, Spec):
            json = json.to_json()
        json = normalized(copy.deepcopy(json))
        json["base"] = Spec(json["base"]).to_json()  # normalized as TensorStore's is
        self._json = json
        self._base = Spec(base_of(json))

    @property
    def kvstore(self) -> Any:
        return self._base.kvstore

    def _chain(self) -> Cast | None:
        """The types from the stored array's to the cast's; None while one is unknown."""
        names: list[Any] = []
        json = self._json
        while isinstance(json, dict) and json.get("driver") == "cast":
            names.insert(0, json.get("dtype"))
            json = json["base"]
        base = self._base
        while isinstance(base, CastSpec):
            base = base._base
        if base.dtype is None or None in names:
            return None
        chain = Cast((base.dtype,), True, True)
        for name in names:
            chain = chain.then(name)
        return chain

    @property
    def transform(self) -> IndexTransform | None:
        return self._base.transform

    @property
    def rank(self) -> int | None:
        return self._base.rank

    @property
    def dtype(self) -> str | None:
        return self._json.get("dtype")

    @property
    def chunk_layout(self) -> Any:
        return self._base.chunk_layout

    @property
    def codec(self) -> Any:
        return self._base.codec

    @property
    def dimension_units(self) -> Any:
        return self._base.dimension_units

    @property
    def fill_value(self) -> np.ndarray | None:
        fill, chain = self._base.fill_value, self._chain()
        value = None if fill is None or chain is None else chain.fill(fill)
        return None if value is None else np.asarray(value, dtype=chain.dtype)

    @property
    def schema(self) -> Schema:
        json = self._base.schema.to_json()
        json.pop("fill_value", None)
        json.pop("dtype", None)
        schema = Schema(json)
        schema.update(dtype=self.dtype, where="spec")
        chain = self._chain()
        return schema if chain is None else chain.with_fill(schema, self._base.fill_value)


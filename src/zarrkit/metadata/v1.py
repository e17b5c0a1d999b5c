"""Zarr v1 array metadata (`meta` and `attrs` keys; v1 spec), read only.

A v1 store holds one array: `meta` (shape, chunks, dtype, compression, compression_opts,
fill_value, order), `attrs`, and chunks keyed "0.0". The primary compressor is named by a string
with separate options; it maps onto the numcodecs codec of the same library, so a v1 array reads
through the same chunk pipeline as a v2 array with no filters.
"""

from __future__ import annotations

import lzma
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import CodecError, DataTypeError, MetadataError
from ._util import describe
from .json import json_loads
from .v2 import ArrayMetadataV2, _check_format, _tuple
from .v2_dtype import DataTypeV2

META_KEY = "meta"
ATTRS_KEY = "attrs"
_REQUIRED = ("zarr_format", "shape", "chunks", "dtype", "compression", "compression_opts",
             "fill_value", "order")
#: Types whose v2 fill value is not a number, but that zarr 1.x filled from one.
_NUMERIC_FILL = ("complex", "bytes", "str", "struct")


def loads_v1(data: bytes, *, what: str) -> Any:
    """Parse a v1 document. zarr 1.x wrote fill values with Python's json module, which spells
    NaN and the infinities as bare literals (read as `JsonConstant`s, as in every document); a
    member given twice is refused, as in every document (which one counts is undefined)."""
    return json_loads(data, what=what)


def compressor_config(name: Any, opts: Any, where: str) -> dict[str, Any] | None:
    """The numcodecs configuration for a v1 `compression` and `compression_opts`."""
    if name in (None, "none"):
        return None
    if name == "blosc":
        opts = opts if opts is not None else {}
        if not isinstance(opts, dict):
            raise CodecError(f"{where}: compression_opts for blosc must be an object, "
                             f"got {describe(opts)}")
        return {"id": "blosc", **opts}
    if name in ("zlib", "bz2"):
        level = _level(opts)
        if opts is not None and level is None:
            raise CodecError(f"{where}: compression_opts for {name} must be an integer level, "
                             f"got {describe(opts)}")
        return {"id": name} if opts is None else {"id": name, "level": level}
    if name == "lzma":
        if opts is not None and not isinstance(opts, dict):
            raise CodecError(f"{where}: compression_opts for lzma must be an object or null, "
                             f"got {describe(opts)}")
        return _lzma_config(opts or {})
    raise CodecError(f"{where}: compression: unsupported v1 compressor {describe(name)} "
                     "(expected blosc, zlib, bz2, lzma or none)")


def _level(opts: Any) -> int | None:
    """A zlib/bz2 level: the spec allows an integer or a string for `compression_opts`."""
    if isinstance(opts, str):
        try:
            return int(opts)
        except ValueError:
            return None
    return opts if isinstance(opts, int) and not isinstance(opts, bool) else None


def _lzma_config(opts: dict[str, Any]) -> dict[str, Any]:
    """zarr 1.x kept the `filters` it compressed with in every format, but used them to
    decompress only raw streams: .xz and .lzma streams name their own filter chain, and
    Python's lzma refuses filters for them (the chunks would not decode)."""
    if opts.get("format", lzma.FORMAT_XZ) != lzma.FORMAT_RAW:
        opts = {k: v for k, v in opts.items() if k != "filters"}
    return {"id": "lzma", **opts}


def _fill_json(value: Any) -> Any:
    """Bare NaN/Infinity (as zarr 1.x wrote them) in the v2 spelling the parser understands."""
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _parse_fill(data_type: DataTypeV2, value: Any, where: str) -> Any:
    """zarr 1.x wrote the fill value as it was: bytes as their text (v2 uses base64), and a
    number (0 from `zeros`) for every type, which it filled chunks with as NumPy's `fill` casts
    it: 0 is 0j, b"0", "0" or all-zero fields (v2 spells those differently)."""
    if data_type.kind == "bytes" and isinstance(value, str):
        return data_type.cast_fill_value(value, where=where)
    if data_type.kind in _NUMERIC_FILL and _is_number(value):
        return _numpy_fill(data_type, value, where)
    return data_type.parse_fill_value(_fill_json(value), where=where)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _numpy_fill(data_type: DataTypeV2, value: Any, where: str) -> Any:
    try:
        return np.full((), value, data_type.dtype)[()]
    except (TypeError, ValueError, OverflowError) as e:
        raise DataTypeError(f"{where}: {describe(value)} is not a value of type "
                            f"{data_type.json!r}: {e}") from None


@dataclass(frozen=True)
class ArrayMetadataV1(ArrayMetadataV2):
    """A v1 array: the v2 model with the v1 document kept for `to_json`. Read only."""

    zarr_format: ClassVar[int] = 1
    metadata_key: ClassVar[str] = META_KEY
    source: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_v1_json(cls, doc: Any, *, where: str = META_KEY,
                     attributes: Any = None) -> ArrayMetadataV1:
        _check_format(doc, 1, where)
        missing = [name for name in _REQUIRED if name not in doc]
        if missing:
            raise MetadataError(f"{where}: missing required member(s) {', '.join(missing)}")
        data_type = DataTypeV2.from_json(doc["dtype"], where=f"{where}: dtype")
        if data_type.kind == "object":  # its elements need an object codec, which v1 lacks
            raise DataTypeError(f"{where}: dtype: {describe(doc['dtype'])}: Zarr v1 cannot "
                                "store objects (it has no filters to encode them)")
        return cls(
            shape=_tuple(doc["shape"], where, "shape"),
            chunks=_tuple(doc["chunks"], where, "chunks"), data_type=data_type,
            compressor=compressor_config(doc["compression"], doc["compression_opts"], where),
            fill_value=_parse_fill(data_type, doc["fill_value"], f"{where}: fill_value"),
            order=doc["order"], filters=None, dimension_separator=None,
            attributes={} if attributes is None else attributes, where=where, source=doc)

    def to_json(self) -> dict[str, Any]:
        return dict(self.source)

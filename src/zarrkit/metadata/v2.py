"""Zarr v2 array and group metadata: `.zarray`, `.zgroup` and `.zattrs` (v2 spec, "Metadata").

`ArrayMetadataV2` offers what the nodes and the engine use from `ArrayMetadataV3` (shape, dtype,
chunk shape, codec chain, chunk key encoding, fill value, attributes, dimension names, evolve,
to_json), so one `Array` class serves both formats. Unknown `.zarray` members ("SHOULD be
ignored") are kept and written back unchanged.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..codecs.base import ChunkSpec, Codec
from ..codecs.chain import CodecChain
from ..codecs.numcodecs_v2 import V2ChunkCodec
from ..codecs.transpose import TransposeCodec
from ..codecs.vlen import first_unencodable
from ..errors import CodecError, DataTypeError, MetadataError
from ._util import describe, int_tuple, is_int
from .chunk_key_encoding import ChunkKeyEncoding
from .json import storable_attributes
from .v2_dtype import DataTypeV2

ARRAY_KEY = ".zarray"
GROUP_KEY = ".zgroup"
ATTRS_KEY = ".zattrs"
#: The attribute xarray (and the OGC edition of the spec) uses for dimension names.
DIMENSIONS_ATTRIBUTE = "_ARRAY_DIMENSIONS"

_REQUIRED = ("zarr_format", "shape", "chunks", "dtype", "compressor", "fill_value", "order",
             "filters")
_KNOWN = frozenset(_REQUIRED + ("dimension_separator",))


def _check_format(doc: Any, version: int, where: str) -> None:
    if not isinstance(doc, dict):
        raise MetadataError(f"{where}: expected a JSON object, got {describe(doc)}")
    found = doc.get("zarr_format")
    if not is_int(found) or found != version:
        raise MetadataError(f"{where}: zarr_format: expected {version}, got {describe(found)}")


def _codec_object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("id"), str):
        raise CodecError(f"{where}: expected an object with a string \"id\", got "
                         f"{describe(value)}")
    return value


def dimension_names_of(attributes: Mapping[str, Any], ndim: int) -> tuple[str, ...] | None:
    """`_ARRAY_DIMENSIONS` when it is a valid list of names (it is only an attribute, so an
    unusable value is left alone rather than refused)."""
    names = attributes.get(DIMENSIONS_ATTRIBUTE)
    if isinstance(names, list) and len(names) == ndim and all(isinstance(n, str) for n in names):
        return tuple(names)
    return None


@dataclass(frozen=True)
class ArrayMetadataV2:
    """The contents of `.zarray` (plus the attributes from `.zattrs`). Validated on construction
    (also via `evolve`). `fill_value` is the declared value, None for `null`."""

    zarr_format: ClassVar[int] = 2
    metadata_key: ClassVar[str] = ARRAY_KEY

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    data_type: DataTypeV2
    compressor: dict[str, Any] | None = None
    fill_value: Any = field(default=None, compare=False)
    order: str = "C"
    filters: list[dict[str, Any]] | None = None
    dimension_separator: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    where: str = field(default=ARRAY_KEY, compare=False, repr=False)
    #: The fill value's JSON as read, written back unchanged (encodings vary between writers:
    #: zarr-python strips base64 bytes that TensorStore writes in full).
    fill_value_json: Any = field(default=..., compare=False, repr=False)
    _chain: CodecChain = field(init=False, compare=False, repr=False)
    _fill: Any = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        where = self.where
        shape = int_tuple(self.shape, low=0)
        chunks = int_tuple(self.chunks, low=1)
        if shape is None:
            raise MetadataError(f"{where}: shape: expected a list of non-negative integers, "
                                f"got {describe(self.shape)}")
        if chunks is None:
            raise MetadataError(f"{where}: chunks: expected a list of positive integers, "
                                f"got {describe(self.chunks)}")
        if len(chunks) != len(shape):
            raise MetadataError(f"{where}: chunks {list(chunks)} has {len(chunks)} dimensions, "
                                f"shape {list(shape)} has {len(shape)}")
        if self.order not in ("C", "F"):
            raise MetadataError(f"{where}: order: expected 'C' or 'F', got {describe(self.order)}")
        if self.dimension_separator not in (None, ".", "/"):
            raise MetadataError(f"{where}: dimension_separator: expected '.' or '/', got "
                                f"{describe(self.dimension_separator)}")
        data_type = DataTypeV2.from_numpy(self.data_type)
        self._set("shape", shape)
        self._set("chunks", chunks)
        self._set("data_type", data_type)
        fill = data_type.cast_fill_value(self.fill_value, where=f"{where}: fill_value")
        if data_type.kind == "object":
            fill = _vlen_fill(fill, self._object_codec(), f"{where}: fill_value")
        self._set("fill_value", fill)
        self._set("attributes", storable_attributes(self.attributes, where))
        self._set("_fill", self._effective_fill())
        self._set("_chain", self._build_chain())

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)  # frozen: normalize fields during construction

    def _object_codec(self) -> str | None:
        return _first_filter_id(self.filters)

    def _effective_fill(self) -> Any:
        """The value chunks are filled with: `null` reads as zarr-python's default (zeros, as
        TensorStore; NaT for datetimes and timedeltas); variable-length strings get strings, as
        their codec needs."""
        value, data_type = self.fill_value, self.data_type
        if data_type.kind != "object":
            return data_type.default_fill_value() if value is None else value
        codec = self._object_codec()
        # numcodecs' vlen codecs store 0 (zarr-python 2's default fill value) as the empty
        # value, "missing": so chunks zarr-python 2 wrote hold "" where nothing was written.
        empty = value is None or isinstance(value, int | float) and value == 0
        if codec == "vlen-utf8":
            return "" if empty else value if isinstance(value, str) else str(value)
        if codec == "vlen-bytes":
            return b"" if empty else value if isinstance(value, bytes) else str(value).encode()
        return value

    def _build_chain(self) -> CodecChain:
        codecs: list[Codec] = []
        if self.order == "F" and len(self.shape) > 1:
            codecs.append(TransposeCodec(tuple(reversed(range(len(self.shape))))))
        codecs.append(V2ChunkCodec(self.data_type.stored, self.filters, self.compressor,
                                   where=self.where))
        spec = ChunkSpec(self.chunks, self.data_type.dtype, self._fill)
        return CodecChain.from_codecs(codecs, spec, where=f"{self.where}: codecs")

    # -- what the nodes and the engine use ----------------------------------------------------

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> np.dtype:
        """The native-order numpy dtype of the elements (object for variable-length types)."""
        return self.data_type.dtype

    @property
    def chunk_shape(self) -> tuple[int, ...]:
        return self.chunks

    @property
    def codec_chain(self) -> CodecChain:
        return self._chain

    @property
    def effective_fill_value(self) -> Any:
        return self._fill

    @property
    def missing_chunks_undefined(self) -> bool:
        """True for `fill_value` null: the spec leaves missing chunks undefined (zarr-python 2
        reads them as uninitialized memory), so every chunk written must be stored, even one
        equal to the default fill value zarrkit reads missing chunks as."""
        return self.fill_value is None

    @property
    def chunk_key_encoding(self) -> ChunkKeyEncoding:
        return ChunkKeyEncoding("v2", self.dimension_separator or ".")

    @property
    def dimension_names(self) -> tuple[str, ...] | None:
        return dimension_names_of(self.attributes, len(self.shape))

    @property
    def codec_names(self) -> list[str]:
        names = [f["id"] for f in self.filters or ()]
        return names + ([self.compressor["id"]] if self.compressor else [])

    # -- JSON ---------------------------------------------------------------------------------

    @classmethod
    def from_json(cls, doc: Any, *, where: str = ARRAY_KEY,
                  attributes: Mapping[str, Any] | None = None) -> ArrayMetadataV2:
        _check_format(doc, 2, where)
        missing = [name for name in _REQUIRED if name not in doc]
        if missing:
            raise MetadataError(f"{where}: missing required member(s) {', '.join(missing)}")
        data_type = DataTypeV2.from_json(doc["dtype"], where=f"{where}: dtype")
        compressor = doc["compressor"]
        if compressor is not None:
            _codec_object(compressor, f"{where}: compressor")
        filters = doc["filters"]
        if filters is not None:
            if not isinstance(filters, list):
                raise CodecError(f"{where}: filters: expected a list or null, got "
                                 f"{describe(filters)}")
            for i, f in enumerate(filters):
                _codec_object(f, f"{where}: filters[{i}]")
        shape = _tuple(doc["shape"], where, "shape")
        return cls(
            shape=shape, chunks=_empty_dimension_chunks(_tuple(doc["chunks"], where, "chunks"),
                                                        shape),
            data_type=data_type, compressor=compressor,
            fill_value=_parse_fill(data_type, filters, doc["fill_value"], f"{where}: fill_value"),
            order=doc["order"], filters=filters,
            dimension_separator=doc.get("dimension_separator"),
            attributes={} if attributes is None else attributes,
            extra={k: v for k, v in doc.items() if k not in _KNOWN}, where=where,
            fill_value_json=doc["fill_value"])

    def to_json(self) -> dict[str, Any]:
        """The `.zarray` document (attributes live in `.zattrs`)."""
        doc: dict[str, Any] = {
            "zarr_format": 2,
            "shape": list(self.shape),
            "chunks": list(self.chunks),
            "dtype": self.data_type.to_json(),
            "compressor": self.compressor,
            "fill_value": self._fill_json(),
            "order": self.order,
            "filters": self.filters,
        }
        if self.dimension_separator is not None:
            doc["dimension_separator"] = self.dimension_separator
        doc.update(self.extra)
        return doc

    def _fill_json(self) -> Any:
        # Kept as read (writers encode some types differently), unless it holds a bare NaN or
        # Infinity: not JSON, which the spec writes as "NaN", and other readers refuse.
        if self.fill_value_json is not ... and not _bare_special(self.fill_value_json):
            return self.fill_value_json
        if self._object_codec() == "vlen-bytes" and isinstance(self.fill_value, bytes):
            return base64.standard_b64encode(self.fill_value).decode("ascii")  # as zarr-python 3
        return self.data_type.fill_value_to_json(self.fill_value)

    def evolve(self, **changes: Any) -> ArrayMetadataV2:
        """A copy with `changes` applied, re-validated (e.g. shape for resize, attributes)."""
        if "fill_value" in changes:
            changes.setdefault("fill_value_json", ...)
        return dataclasses.replace(self, **changes)


def _bare_special(value: Any) -> bool:
    """Whether a JSON value read holds a bare NaN or ±Infinity literal (as floats)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    return isinstance(value, list) and any(_bare_special(v) for v in value)


def _vlen_fill(value: Any, codec: str | None, where: str) -> Any:
    """The fill value of a vlen-utf8 (vlen-bytes) array as str (bytes), what its codec stores and
    JSON can hold; a user's text for vlen-bytes is encoded (from_json has decoded the base64).
    Finite numbers stay: zarr-python 2 wrote 0, which numcodecs stores as the empty value."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or codec not in ("vlen-utf8", "vlen-bytes") or \
            isinstance(value, int) or isinstance(value, float) and math.isfinite(value):
        return value
    if codec == "vlen-bytes" and isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str) and first_unencodable([value]) is None:
        return str(value).encode() if codec == "vlen-bytes" else str(value)
    wanted = "a string" if codec == "vlen-utf8" else "bytes"
    raise DataTypeError(f"{where}: expected {wanted} for an array with the {codec!r} filter, "
                        f"got {describe(value)}")


def _first_filter_id(filters: Any) -> str | None:
    """The id of the first filter: an object array's codec (vlen-utf8, vlen-bytes, ...)."""
    ids = [f.get("id") for f in filters or ()]
    return ids[0] if ids else None


def _parse_fill(data_type: DataTypeV2, filters: Any, value: Any, where: str) -> Any:
    """The `fill_value` member; a vlen-bytes array's is base64, as zarr-python 3 writes it (as for
    '|S'), or else the text itself (zarr-python 2 wrote the value as it was)."""
    fill = data_type.parse_fill_value(value, where=where)
    if data_type.kind == "object" and isinstance(fill, str) \
            and _first_filter_id(filters) == "vlen-bytes":
        try:
            return base64.b64decode(fill, validate=True)
        except binascii.Error:
            return fill.encode()
    return fill


def _empty_dimension_chunks(chunks: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    """`chunks` with a length of 0 for a dimension of length 0 made 1: zarr-python 2 and dask
    write 0 there (`chunks=(None, ...)`, `to_zarr` of an empty array) and zarr-python 3 reads
    it. Any positive length describes that empty grid; 1 is what is written back."""
    if len(chunks) != len(shape):
        return chunks  # reported by validation
    return tuple(1 if c == 0 and s == 0 else c for c, s in zip(chunks, shape, strict=True))


def _tuple(value: Any, where: str, name: str) -> Any:
    if not isinstance(value, list):
        raise MetadataError(f"{where}: {name}: expected a list of integers, got {describe(value)}")
    if not all(is_int(v) for v in value):
        raise MetadataError(f"{where}: {name}: expected integers, got {describe(value)}")
    return tuple(value)


@dataclass(frozen=True)
class GroupMetadataV2:
    """A v2 group: `.zgroup` (just the format) plus `.zattrs`. Members the spec does not allow
    in `.zgroup` are tolerated on read (zarr-python adds some) and written back unchanged."""

    zarr_format: ClassVar[int] = 2
    metadata_key: ClassVar[str] = GROUP_KEY

    attributes: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "attributes",
                           storable_attributes(self.attributes, "group metadata"))

    @classmethod
    def create(cls, attributes: Mapping[str, Any] | None = None) -> GroupMetadataV2:
        return cls(attributes={} if attributes is None else attributes)

    @classmethod
    def from_json(cls, doc: Any, *, where: str = GROUP_KEY,
                  attributes: Mapping[str, Any] | None = None) -> GroupMetadataV2:
        _check_format(doc, 2, where)
        return cls(attributes=storable_attributes({} if attributes is None else attributes,
                                                  where),
                   extra={k: v for k, v in doc.items() if k != "zarr_format"})

    def to_json(self) -> dict[str, Any]:
        return {"zarr_format": 2, **self.extra}

    def evolve(self, **changes: Any) -> GroupMetadataV2:
        return dataclasses.replace(self, **changes)

"""Zarr v3 array and group metadata documents (core.rst, "Metadata").

Parsing validates every member and names the document (`where`) and member in each error.
`to_json` writes a document back exactly as read, including the optional forms other
implementations choose (TensorStore omits empty "attributes"; zarr-python writes
"storage_transformers": []), so rewriting a foreign array's metadata only changes what changed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..codecs import CodecChain, parse_codec
from ..codecs.base import ArrayBytesCodec, BytesBytesCodec, ChunkSpec, Codec
from ..codecs.registry import codec_kind
from ..errors import CodecError, MetadataError
from ._util import describe, int_tuple, is_int
from .chunk_grid import RegularChunkGrid
from .chunk_key_encoding import ChunkKeyEncoding
from .data_type import DataType
from .json import storable_attributes

# "codecs" is required too, but read without it (see _with_serializer).
_ARRAY_REQUIRED = ("zarr_format", "node_type", "shape", "data_type", "chunk_grid",
                   "chunk_key_encoding", "fill_value")
_ARRAY_MEMBERS = frozenset(_ARRAY_REQUIRED + ("codecs", "attributes", "storage_transformers",
                                              "dimension_names"))
#: The array->bytes codec of documents written without one (`_with_serializer`).
_IMPLIED_SERIALIZER = {"name": "bytes", "configuration": {"endian": "little"}}
_GROUP_MEMBERS = frozenset(("zarr_format", "node_type", "attributes"))
_CONSOLIDATED = "consolidated_metadata"  # zarr-python's extension member of groups


# -- member parsers ---------------------------------------------------------------------------


def _check_header(doc: Any, node_type: str | None, where: str) -> str:
    """Check that `doc` is a v3 document (of `node_type`, if given); return its node_type."""
    if not isinstance(doc, dict):
        raise MetadataError(f"{where}: expected a JSON object, got {describe(doc)}")
    if "zarr_format" not in doc:
        raise MetadataError(f"{where}: zarr_format: missing")
    if not is_int(doc["zarr_format"]) or doc["zarr_format"] != 3:
        raise MetadataError(f"{where}: zarr_format: expected 3, got {describe(doc['zarr_format'])}")
    if "node_type" not in doc:
        raise MetadataError(f"{where}: node_type: missing")
    found = doc["node_type"]
    if node_type is not None and found != node_type:
        raise MetadataError(f"{where}: node_type: expected {node_type!r}, got {describe(found)}")
    if found not in ("array", "group"):
        raise MetadataError(
            f"{where}: node_type: expected 'array' or 'group', got {describe(found)}")
    return found


def _extra_members(doc: dict[str, Any], known: frozenset[str], where: str) -> dict[str, Any]:
    """Unknown members, which the spec lets us ignore only if marked must_understand: false."""
    extra = {}
    for key, value in doc.items():
        if key in known:
            continue
        if not (isinstance(value, dict) and value.get("must_understand") is False):
            raise MetadataError(f"{where}: {key}: unknown member (not supported; only members "
                                f"that are objects with \"must_understand\": false may be ignored)")
        extra[key] = value
    return extra


def _check_extra(extra: Any, known: frozenset[str], where: str) -> dict[str, Any]:
    if not isinstance(extra, Mapping):
        raise MetadataError(f"{where}: extra: expected a dict, got {describe(extra)}")
    for key, value in extra.items():
        if key in known or not (isinstance(value, dict) and value.get("must_understand") is False):
            raise MetadataError(f"{where}: extra member {key!r} must be an unknown member whose "
                                f"value is an object with \"must_understand\": false")
    return dict(extra)


def _parse_shape(value: Any, where: str) -> tuple[int, ...]:
    shape = int_tuple(value, low=0)
    if shape is None:
        raise MetadataError(
            f"{where}: shape: expected a list of non-negative integers, got {describe(value)}")
    return shape


def _parse_attributes(value: Any, where: str) -> dict[str, Any]:
    # Keys are checked by `storable_attributes`, which names the key at fault.
    if not isinstance(value, Mapping):
        raise MetadataError(f"{where}: attributes: expected an object, got {describe(value)}")
    return dict(value)


def _check_storage_transformers(value: Any, where: str) -> None:
    if not isinstance(value, list):
        raise MetadataError(
            f"{where}: storage_transformers: expected a list, got {describe(value)}")
    if value:
        # A transformer changes keys and bytes, so skipping one would misread the array.
        raise MetadataError(
            f"{where}: storage_transformers: not supported, got {describe(value)}")


def _with_serializer(codecs: Any) -> Any:
    """`codecs` with little-endian `bytes` before its bytes->bytes codecs when it has no
    array->bytes codec (`[bytes]` when the member is missing): GDAL before 3.11 wrote v3 arrays
    so (reading them this way itself; zarr-python and TensorStore refuse them), as did
    zarrita.js at first (`"codecs": []`). Written back, the document is complete. Lists with a
    codec that is not registered, and values that are no lists, are left to the chain to
    report."""
    if not isinstance(codecs, list):
        return codecs
    kinds = [codec_kind(c.get("name") if isinstance(c, dict) else c) for c in codecs]
    if ArrayBytesCodec in kinds or None in kinds:
        return codecs
    at = kinds.index(BytesBytesCodec) if BytesBytesCodec in kinds else len(codecs)
    return [*codecs[:at], dict(_IMPLIED_SERIALIZER), *codecs[at:]]


def _parse_dimension_names(value: Any, ndim: int, where: str) -> tuple[str | None, ...] | None:
    if value is None:  # zarr-python reads null as "not specified"; so do we
        return None
    if not isinstance(value, list | tuple) or not all(
            n is None or isinstance(n, str) for n in value):
        raise MetadataError(f"{where}: dimension_names: expected a list of strings or nulls, "
                            f"got {describe(value)}")
    if len(value) != ndim:
        raise MetadataError(f"{where}: dimension_names: has {len(value)} names, "
                            f"the array has {ndim} dimensions")
    return tuple(value)


# -- arrays -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArrayMetadataV3:
    """The contents of an array's zarr.json. Construction validates everything (also via evolve).

    `codecs` are stored evolved (array-dependent defaults filled in). `fill_value` is a numpy
    scalar compared by its bits, so NaN fill values compare equal. `extra` holds unknown members
    marked `"must_understand": false`, written back unchanged.
    """

    zarr_format: ClassVar[int] = 3

    shape: tuple[int, ...]
    data_type: DataType
    chunk_grid: RegularChunkGrid
    chunk_key_encoding: ChunkKeyEncoding
    fill_value: Any = field(compare=False)
    codecs: tuple[Codec, ...]
    attributes: dict[str, Any] = field(default_factory=dict)
    dimension_names: tuple[str | None, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: Write "attributes": {} when there are none (zarr-python does; TensorStore omits it).
    write_empty_attributes: bool = field(default=True, compare=False, repr=False)
    #: Write "storage_transformers": [] (zarr-python does; the spec lets it be omitted).
    write_storage_transformers: bool = field(default=False, compare=False, repr=False)
    _fill_bits: bytes = field(init=False, repr=False)
    _chunk_spec: ChunkSpec = field(init=False, compare=False, repr=False)
    _codec_chain: CodecChain = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        where = "array metadata"
        shape = _parse_shape(self.shape, where)
        data_type = DataType.parse(self.data_type)
        self._set("shape", shape)
        self._set("data_type", data_type)
        self._check_grid(where)
        if not isinstance(self.chunk_key_encoding, ChunkKeyEncoding):
            raise MetadataError(f"{where}: chunk_key_encoding: expected a ChunkKeyEncoding, "
                                f"got {describe(self.chunk_key_encoding)}")
        fill_value = data_type.cast_fill_value(self.fill_value, where=f"{where}: fill_value")
        self._set("fill_value", fill_value)
        self._set("_fill_bits", data_type.dtype.str.encode() + _fill_bytes(fill_value))
        spec = ChunkSpec(self.chunk_grid.chunk_shape, data_type.dtype, fill_value)
        chain = CodecChain.from_codecs(tuple(self.codecs), spec, where=f"{where}: codecs")
        self._set("_chunk_spec", spec)
        self._set("_codec_chain", chain)
        self._set("codecs", chain.codecs)
        self._set("attributes", storable_attributes(self.attributes, where))
        self._set("dimension_names", _parse_dimension_names(
            _sequence(self.dimension_names), len(shape), where))
        self._set("extra", _check_extra(self.extra, _ARRAY_MEMBERS, where))

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)  # frozen: normalize fields during construction

    def _check_grid(self, where: str) -> None:
        if not isinstance(self.chunk_grid, RegularChunkGrid):
            raise MetadataError(f"{where}: chunk_grid: expected a RegularChunkGrid, "
                                f"got {describe(self.chunk_grid)}")
        if self.chunk_grid.ndim != len(self.shape):
            raise MetadataError(
                f"{where}: chunk_grid.configuration.chunk_shape: has {self.chunk_grid.ndim} "
                f"dimensions, the array has {len(self.shape)}")

    # -- derived properties -------------------------------------------------------------------

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def chunk_shape(self) -> tuple[int, ...]:
        return self.chunk_grid.chunk_shape

    @property
    def dtype(self) -> Any:
        """The native-order numpy dtype of the elements."""
        return self.data_type.dtype

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """Number of chunks along each dimension."""
        return self.chunk_grid.grid_shape(self.shape)

    @property
    def chunk_spec(self) -> ChunkSpec:
        return self._chunk_spec

    @property
    def codec_chain(self) -> CodecChain:
        return self._codec_chain

    @property
    def effective_fill_value(self) -> Any:
        """The value missing chunks read as (v2's `null` fill value makes this differ there)."""
        return self.fill_value

    @property
    def codec_names(self) -> list[str]:
        return [codec.name for codec in self.codecs]

    # -- JSON ---------------------------------------------------------------------------------

    @classmethod
    def from_json(cls, doc: dict[str, Any], *, where: str) -> ArrayMetadataV3:
        """Parse and validate an array's zarr.json; `where` (e.g. its key) prefixes errors."""
        _check_header(doc, "array", where)
        extra = _extra_members(doc, _ARRAY_MEMBERS, where)
        for name in _ARRAY_REQUIRED:
            if name not in doc:
                raise MetadataError(f"{where}: {name}: missing (required for arrays)")
        shape = _parse_shape(doc["shape"], where)
        data_type = DataType.from_json(doc["data_type"], where=f"{where}: data_type")
        chunk_grid = RegularChunkGrid.from_json(
            doc["chunk_grid"], ndim=len(shape), where=f"{where}: chunk_grid")
        key_encoding = ChunkKeyEncoding.from_json(
            doc["chunk_key_encoding"], where=f"{where}: chunk_key_encoding")
        fill_value = data_type.parse_fill_value(doc["fill_value"], where=f"{where}: fill_value")
        spec = ChunkSpec(chunk_grid.chunk_shape, data_type.dtype, fill_value)
        codecs = _with_serializer(doc["codecs"]) if "codecs" in doc else \
            [dict(_IMPLIED_SERIALIZER)]  # see _with_serializer
        chain = CodecChain.from_json(codecs, spec, where=f"{where}: codecs")
        _check_storage_transformers(doc.get("storage_transformers", []), where)
        return cls(
            shape=shape, data_type=data_type, chunk_grid=chunk_grid,
            chunk_key_encoding=key_encoding, fill_value=fill_value, codecs=chain.codecs,
            attributes=_parse_attributes(doc.get("attributes", {}), where),
            dimension_names=_parse_dimension_names(doc.get("dimension_names"), len(shape), where),
            extra=extra,
            write_empty_attributes="attributes" in doc,
            write_storage_transformers="storage_transformers" in doc,
        )

    def to_json(self) -> dict[str, Any]:
        """The zarr.json document (a fresh dict; nested attribute values are shared)."""
        doc: dict[str, Any] = {
            "zarr_format": 3,
            "node_type": "array",
            "shape": list(self.shape),
            "data_type": self.data_type.to_json(),
            "chunk_grid": self.chunk_grid.to_json(),
            "chunk_key_encoding": self.chunk_key_encoding.to_json(),
            "fill_value": self.data_type.fill_value_to_json(self.fill_value),
            "codecs": [codec.to_json() for codec in self.codecs],
        }
        if self.attributes or self.write_empty_attributes:
            doc["attributes"] = dict(self.attributes)
        if self.dimension_names is not None:
            doc["dimension_names"] = list(self.dimension_names)
        if self.write_storage_transformers:
            doc["storage_transformers"] = []
        doc.update(self.extra)
        return doc

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        shape: Sequence[int],
        data_type: Any,
        chunk_shape: Sequence[int],
        *,
        fill_value: Any = None,
        codecs: Sequence[Codec | dict[str, Any] | str] | None = None,
        chunk_key_encoding: ChunkKeyEncoding | dict[str, Any] | str | None = None,
        attributes: Mapping[str, Any] | None = None,
        dimension_names: Sequence[str | None] | None = None,
    ) -> ArrayMetadataV3:
        """New array metadata. `data_type`: a DataType, v3 name or numpy dtype-like; defaults:
        the type's zero fill value, codecs [bytes], the "default" key encoding with "/"."""
        codecs = [{"name": "bytes"}] if codecs is None else _sequence(codecs)
        if not isinstance(codecs, list):
            raise CodecError(f"codecs: expected a list of codecs, got {describe(codecs)}")
        parsed_codecs = [
            codec if isinstance(codec, Codec) else parse_codec(codec, where=f"codecs[{i}]")
            for i, codec in enumerate(codecs)]
        return cls(
            shape=_sequence(shape),
            data_type=DataType.parse(data_type),
            chunk_grid=RegularChunkGrid(_sequence(chunk_shape)),
            chunk_key_encoding=_coerce_key_encoding(chunk_key_encoding),
            fill_value=fill_value,
            codecs=tuple(parsed_codecs),
            attributes={} if attributes is None else attributes,  # validated (and copied) on init
            dimension_names=dimension_names,
        )

    def evolve(self, **changes: Any) -> ArrayMetadataV3:
        """A copy with `changes` applied, re-validated (e.g. shape for resize, attributes)."""
        return dataclasses.replace(self, **changes)


def _fill_bytes(fill_value: Any) -> bytes:
    """The fill value's bits, for equality; str and bytes (of object arrays) by their repr,
    which tells b"" from b"\\0" and a str from bytes."""
    if isinstance(fill_value, str | bytes):
        return repr(fill_value).encode()
    return np.asarray(fill_value).tobytes()


def _sequence(value: Any) -> Any:
    """A list/tuple/numpy array given in Python as a list; anything else unchanged, for the
    parsers to refuse (list() would split a string into names, or fail on a number)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    return list(value) if isinstance(value, list | tuple) else value


def _coerce_key_encoding(value: ChunkKeyEncoding | dict[str, Any] | str | None) -> ChunkKeyEncoding:
    if value is None:
        return ChunkKeyEncoding("default", "/")
    if isinstance(value, ChunkKeyEncoding):
        return value
    if isinstance(value, str):
        return ChunkKeyEncoding(value)
    return ChunkKeyEncoding.from_json(value)


# -- groups -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupMetadataV3:
    """The contents of a group's zarr.json."""

    zarr_format: ClassVar[int] = 3

    attributes: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    #: Write "attributes": {} when there are none (zarr-python does).
    write_empty_attributes: bool = field(default=True, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "attributes",
                           storable_attributes(self.attributes, "group metadata"))
        object.__setattr__(self, "extra", _check_extra(self.extra, _GROUP_MEMBERS, "group metadata"))

    @classmethod
    def create(cls, attributes: Mapping[str, Any] | None = None) -> GroupMetadataV3:
        return cls(attributes={} if attributes is None else attributes)

    @classmethod
    def from_json(cls, doc: dict[str, Any], *, where: str) -> GroupMetadataV3:
        _check_header(doc, "group", where)
        if doc.get(_CONSOLIDATED) is None and _CONSOLIDATED in doc:
            # zarr-python <= 3.1.3 wrote `"consolidated_metadata": null` into every group: it
            # means "none", so it is read as absent (and not written back).
            doc = {k: v for k, v in doc.items() if k != _CONSOLIDATED}
        extra = _extra_members(doc, _GROUP_MEMBERS, where)
        return cls(attributes=_parse_attributes(doc.get("attributes", {}), where), extra=extra,
                   write_empty_attributes="attributes" in doc)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"zarr_format": 3, "node_type": "group"}
        if self.attributes or self.write_empty_attributes:
            doc["attributes"] = dict(self.attributes)
        doc.update(self.extra)
        return doc

    def evolve(self, **changes: Any) -> GroupMetadataV3:
        return dataclasses.replace(self, **changes)


def parse_v3_node(doc: dict[str, Any], *, where: str) -> ArrayMetadataV3 | GroupMetadataV3:
    """Parse a zarr.json of either node type."""
    if _check_header(doc, None, where) == "array":
        return ArrayMetadataV3.from_json(doc, where=where)
    return GroupMetadataV3.from_json(doc, where=where)

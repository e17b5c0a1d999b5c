"""TensorStore's `zarr` driver (Zarr v2): metadata constraints, the new .zarray, checks.

`V2Constraints` is a spec's `metadata` member (every .zarray member optional), checked as
TensorStore checks it. `new_zarray` combines it with a `Schema` into the .zarray TensorStore
writes for the same spec: chunks chosen by the same rules as zarr3's (spec/chunk_layout.py) with
one chunk for reading and writing, so read constraints merge with write constraints (the read
chunk's soft constraints first); "F" order for a Fortran inner order; TensorStore's blosc/lz4
compressor; no filters; "." separators; a null fill value unless one is given.
`check_existing` tells whether a stored array satisfies the constraints.

TensorStore's rules that differ from zarr3: no dimension units (only all-null ones); domain labels
are accepted but not stored (they label the opened array only); a stored null fill value
satisfies no `fill_value` constraint; a codec's filters are ignored, the metadata's must be null
or empty. zarrkit accepts more data types than TensorStore writes (datetimes, "<U"), but not
object types, which would need a filter.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import DataTypeError, MetadataError, SpecError
from ..metadata.data_type import TEXT_KINDS, DataType
from ..metadata.v2 import ArrayMetadataV2
from ..metadata.v2_dtype import DataTypeV2
from .chunk_layout import ChunkLayout, choose_chunk_shapes, updated_layout
from .schema import CodecSpec, Schema, dtype_name, plain_fill, same_fill, schema_fill
from .transform import INF, INF_MAX, IndexDomain
from .v2_compressor import DEFAULT_COMPRESSOR, check_compressor, with_defaults
from .zarr3 import MetadataConstraints, member_ints, merged_domain
from .zarr3 import check_existing as check_layout_and_domain

_MEMBERS = ("zarr_format", "shape", "chunks", "dtype", "compressor", "fill_value", "order",
            "filters", "dimension_separator")
UNSET: Any = object()  # a member the spec does not give (None is JSON null)


@dataclass
class V2Constraints:
    """The .zarray members a spec's `metadata` gives, parsed (None or UNSET: not given)."""

    shape: tuple[int, ...] | None = None
    chunks: tuple[int, ...] | None = None
    data_type: DataTypeV2 | None = None
    compressor: Any = UNSET
    fill_value: Any = UNSET
    order: str | None = None
    separator: str | None = None
    filters: bool = False  # given (as null or [])
    json: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, json: Any, where: str = "metadata") -> V2Constraints:
        if json is None:
            return cls()
        if not isinstance(json, dict):
            raise SpecError(f"{where}: expected an object, got {json!r}")
        unknown = sorted(set(json) - set(_MEMBERS))
        if unknown:
            raise SpecError(f"{where}: unknown member(s) {unknown} (not .zarray members)")
        if json.get("zarr_format", 2) != 2:
            raise SpecError(f"{where}.zarr_format: expected 2, got {json['zarr_format']!r}")
        c = cls(json=copy.deepcopy(json), filters="filters" in json)
        c.shape = member_ints(json, "shape", where, low=0)
        c.chunks = member_ints(json, "chunks", where, low=1)
        c.data_type = _data_type(json, where)
        if "compressor" in json:
            c.compressor = check_compressor(json["compressor"], f"{where}.compressor")
        if json.get("filters") not in (None, []):
            raise SpecError(f"{where}.filters: only null (or []) is supported, as by "
                            f"TensorStore; got {json['filters']!r}")
        if "fill_value" in json:
            c.fill_value = _fill(json["fill_value"], c.data_type, where)
        c.order = _choice(json, "order", ("C", "F"), where)
        c.separator = _choice(json, "dimension_separator", (".", "/"), where)
        if c.shape is not None and c.chunks is not None and len(c.shape) != len(c.chunks):
            raise SpecError(f"{where}.chunks: {list(c.chunks)} does not have the rank of "
                            f"{where}.shape {list(c.shape)}")
        return c

    @classmethod
    def from_spec(cls, json: dict[str, Any]) -> V2Constraints:
        """The constraints of a "zarr" spec: its `metadata`, with TensorStore's older spelling
        of dimension_separator, `key_encoding`, which must then agree with it."""
        metadata, encoding = json.get("metadata"), json.get("key_encoding")
        if encoding is None:
            return cls.from_json(metadata)
        if encoding not in (".", "/"):
            raise SpecError(f"key_encoding: expected '.' or '/', got {encoding!r}")
        if isinstance(metadata or {}, dict):
            given = (metadata or {}).get("dimension_separator", encoding)
            if given != encoding:  # TensorStore refuses the two disagreeing
                raise SpecError(f"key_encoding: {encoding!r} does not match "
                                f"metadata.dimension_separator {given!r}")
            metadata = {**(metadata or {}), "dimension_separator": given}
        return cls.from_json(metadata)


def _choice(json: dict[str, Any], name: str, allowed: tuple[str, ...], where: str) -> str | None:
    value = json.get(name)
    if value is not None and value not in allowed:
        raise SpecError(f"{where}.{name}: expected one of {list(allowed)}, got {value!r}")
    return value


def _data_type(json: dict[str, Any], where: str) -> DataTypeV2 | None:
    if "dtype" not in json:
        return None
    try:
        data_type = DataTypeV2.from_json(json["dtype"], where=f"{where}.dtype")
    except (DataTypeError, MetadataError) as exc:
        raise SpecError(str(exc)) from None
    if data_type.kind == "object":
        raise SpecError(f"{where}.dtype: object types need an object codec filter, and the "
                        "zarr driver's filters must be null")
    return data_type


def _fill(value: Any, data_type: DataTypeV2 | None, where: str) -> Any:
    if data_type is None:
        raise SpecError(f"{where}.fill_value: must be given together with {where}.dtype")
    if data_type.kind == "bool" and not isinstance(value, bool | None):
        # stored .zarray files with 0/1 are read; a spec asks for true or false, as TensorStore
        raise SpecError(f"{where}.fill_value: expected true, false or null for a bool array, "
                        f"got {value!r}")
    try:
        return data_type.parse_fill_value(value, where=f"{where}.fill_value")
    except (DataTypeError, MetadataError) as exc:
        raise SpecError(str(exc)) from None


# -- data types ---------------------------------------------------------------------------------


def ts_dtype(data_type: DataTypeV2) -> str | None:
    """TensorStore's name for the elements (a one-field record's field); None if it has none."""
    dtype = data_type.stored
    if dtype.names is not None and len(dtype.names) == 1:
        dtype = dtype.fields[dtype.names[0]][0]
    if dtype.names is not None or dtype.subdtype is not None:
        return None
    json = DataTypeV2(dtype).to_json()
    if isinstance(json, str) and json[0] not in "<>|":
        return json  # an extension type's name ("bfloat16", "float8_e4m3fn", ...)
    try:
        return dtype_name(dtype.newbyteorder("="))
    except SpecError:
        return None


def _from_name(name: str) -> DataTypeV2:
    try:
        data_type = DataType.parse(name)
        if data_type.kind in TEXT_KINDS:  # zarr-python's v3 names: no TensorStore dtype
            raise DataTypeError(name)
        return DataTypeV2.from_numpy(data_type.dtype)
    except (DataTypeError, MetadataError, TypeError):
        raise SpecError(f"dtype: {name!r} is not supported by the zarr driver") from None


def _merged_dtype(c: V2Constraints, schema: Schema) -> DataTypeV2:
    if c.data_type is None:
        if schema.dtype is None:
            raise SpecError("dtype: must be specified (dtype, schema.dtype or metadata.dtype) "
                            "to create an array")
        return _from_name(schema.dtype)
    if schema.dtype is not None and ts_dtype(c.data_type) != schema.dtype:
        raise SpecError(f"dtype: {schema.dtype!r} does not match metadata.dtype "
                        f"{c.data_type.to_json()!r}")
    return c.data_type


# -- creating -----------------------------------------------------------------------------------


def _merged_shape(c: V2Constraints, schema: Schema) -> tuple[int, ...]:
    shape, domain = c.shape, schema.domain
    if domain is not None:
        if any(lo != 0 and lo > -INF for lo in domain.inclusive_min):
            raise SpecError(f"domain: zarr arrays have a zero origin; got inclusive_min "
                            f"{list(domain.inclusive_min)}")
        if shape is None and all(hi < INF for hi in domain.exclusive_max):
            shape = domain.exclusive_max
        for i, (s, hi) in enumerate(zip(shape or (), domain.exclusive_max, strict=False)):
            if hi < INF and hi != s:
                raise SpecError(f"metadata.shape {list(shape)} does not match the domain's "
                                f"exclusive_max {list(domain.exclusive_max)} (dimension {i})")
    if shape is None:
        raise SpecError("shape: must be specified (shape, domain, schema.domain or "
                        "metadata.shape) to create an array")
    if schema.rank is not None and schema.rank != len(shape):
        raise SpecError(f"rank {schema.rank} does not match metadata.shape {list(shape)}")
    if c.chunks is not None and len(c.chunks) != len(shape):
        raise SpecError(f"metadata.chunks {list(c.chunks)} does not have the rank of the shape "
                        f"{list(shape)}")
    return tuple(shape)


def _orders(rank: int) -> dict[str, tuple[int, ...]]:
    return {"C": tuple(range(rank)), "F": tuple(reversed(range(rank)))}


def _merged_order(c: V2Constraints, layout: ChunkLayout, rank: int) -> str:
    """metadata.order, else the one the (hard, then soft) inner order asks for, else C."""
    orders = _orders(rank)
    if c.order == "F" and rank <= 1:
        # TensorStore writes "C" for rank <= 1 and then refuses its own result.
        raise SpecError(f"metadata.order: 'F' is refused for a rank {rank} array, as by "
                        "TensorStore (use 'C'; both store the elements alike)")
    hard, soft = layout.inner_order, layout.inner_order_soft_constraint
    if hard is not None:
        if hard not in orders.values():
            raise SpecError(f"chunk_layout.inner_order: {list(hard)} is neither C order "
                            f"{list(orders['C'])} nor Fortran order {list(orders['F'])}, the "
                            "only orders a .zarray can describe")
        if c.order is not None and orders[c.order] != hard:
            raise SpecError(f"metadata.order {c.order!r} does not match chunk_layout."
                            f"inner_order {list(hard)}")
        return c.order or ("C" if hard == orders["C"] else "F")
    if c.order is not None:
        return c.order
    return "F" if soft is not None and soft != orders["C"] and soft == orders["F"] else "C"


def _refuse_codec_chunk(layout: ChunkLayout) -> None:
    if any(s is not None for s in layout.codec_chunk.shape or ()):
        raise SpecError("chunk_layout.codec_chunk: a hard codec chunk shape is not supported by "
                        "the zarr driver")


def _one_grid(layout: ChunkLayout) -> dict[str, Any]:
    """The layout with its read constraints merged into the write ones, the read chunk's first
    (so that its soft constraints win, as in TensorStore's zarr driver)."""
    json = layout.to_json()
    read, write = json.pop("read_chunk", {}), json.pop("write_chunk", {})
    json.pop("codec_chunk", None)  # TensorStore ignores all but a hard codec chunk shape
    merged = ChunkLayout.from_json({**json, "write_chunk": read} if read else json)
    if write:
        try:
            merged.update({"write_chunk": write})
        except SpecError as exc:
            raise SpecError(f"chunk_layout: the write_chunk constraints conflict with the "
                            f"read_chunk constraints (a .zarray has one chunk shape): {exc}") \
                from None
    return merged.to_json()


def _chunks(c: V2Constraints, layout: ChunkLayout, shape: tuple[int, ...]) -> tuple[int, ...]:
    _refuse_codec_chunk(layout)
    one = _one_grid(layout)
    if c.chunks is not None:
        try:
            ChunkLayout.from_json(one).update(write_chunk_shape=list(c.chunks))
        except SpecError as exc:
            detail = str(exc).replace("write_chunk_shape.", "write_chunk.", 1)
            raise SpecError(f"metadata.chunks {list(c.chunks)} conflicts with chunk_layout: "
                            f"{detail}") from None
    _, write = choose_chunk_shapes(shape, one, metadata_chunk_shape=c.chunks, sharding=False)
    return write


def _schema_compressor(schema: Schema) -> Any:
    codec = schema.codec
    if codec is None:
        return UNSET
    if codec.driver != "zarr":
        raise SpecError(f"codec.driver: {codec.driver!r} cannot describe a zarr (v2) array")
    json = codec.to_json()
    return check_compressor(json["compressor"], "codec.compressor") if "compressor" in json \
        else UNSET


def _merged_compressor(c: V2Constraints, schema: Schema) -> Any:
    wanted = _schema_compressor(schema)
    if c.compressor is UNSET:
        return copy.deepcopy(DEFAULT_COMPRESSOR) if wanted is UNSET else wanted
    if wanted is not UNSET and wanted != c.compressor:
        raise SpecError(f"codec.compressor {wanted!r} does not match metadata.compressor "
                        f"{c.compressor!r}")
    return c.compressor


def _cast_fill(value: np.ndarray, data_type: DataTypeV2) -> Any:
    """A schema's fill value as a value of the data type (into a one-field record's field)."""
    dtype = data_type.dtype
    try:
        if dtype.names is not None and len(dtype.names) == 1:
            record = np.zeros((), dtype)
            record[dtype.names[0]] = plain_fill(value)[()]
            return record[()]
        return data_type.cast_fill_value(schema_fill(value, data_type.kind), where="fill_value")
    except (DataTypeError, MetadataError, TypeError, ValueError) as exc:
        raise SpecError(f"fill_value: {value[()]!r} is not a value of {data_type.to_json()!r}: "
                        f"{exc}") from None


def _merged_fill(c: V2Constraints, schema: Schema, data_type: DataTypeV2) -> Any:
    fill = None if c.fill_value is UNSET else c.fill_value
    if schema.fill_value is not None:
        wanted = _cast_fill(schema.fill_value, data_type)
        if c.fill_value is None:
            raise SpecError(f"fill_value: {_show(wanted)} does not match metadata.fill_value "
                            "null")
        if fill is not None and not _same(fill, wanted):
            raise SpecError(f"fill_value: {_show(wanted)} does not match metadata.fill_value "
                            f"{_show(fill)}")
        fill = wanted
    return data_type.fill_value_to_json(fill)


def _same(a: Any, b: Any) -> bool:
    return same_fill(np.asarray(a), np.asarray(b))


def _show(value: Any) -> str:
    value = np.asarray(value)
    return repr(value[()].item()) if value.dtype.names is None else repr(value.tobytes())


def _refuse_units(schema: Schema) -> None:
    if any(unit is not None for unit in schema.dimension_units or ()):
        raise SpecError("dimension_units: not supported by the zarr driver (a .zarray has no "
                        "units)")


def new_zarray(c: V2Constraints, schema: Schema) -> dict[str, Any]:
    """The complete .zarray document for a new array (TensorStore's choices)."""
    _refuse_units(schema)
    data_type = _merged_dtype(c, schema)
    shape = _merged_shape(c, schema)
    layout = schema.chunk_layout
    return {"zarr_format": 2, "shape": list(shape),
            "chunks": list(_chunks(c, layout, shape)), "dtype": data_type.to_json(),
            "compressor": _merged_compressor(c, schema),
            "fill_value": _merged_fill(c, schema, data_type),
            "order": _merged_order(c, layout, len(shape)), "filters": None,
            "dimension_separator": c.separator or "."}


def labels_of(schema: Schema) -> tuple[str, ...] | None:
    """The schema domain's labels, which label the opened array (a .zarray has none)."""
    domain = schema.domain
    return domain.labels if domain is not None and any(domain.labels) else None


# -- describing a spec before it is opened --------------------------------------------------------
# TensorStore's zarr driver spec, as zarr3.spec_*: its ranks are those of a (single) field of
# the dtype, `full` = `chunked` (the .zarray's) + `field` (the field's own shape, none for the
# types zarrkit names), each unknown without what fixes it; a .zarray without a dtype leaves the
# field rank open, so that its shape and chunks alone describe nothing.

_Ranks = tuple[int | None, int | None, int | None]  # full, chunked, field


def _ranks(c: V2Constraints, s: Schema) -> _Ranks:
    sizes = c.shape if c.shape is not None else c.chunks
    chunked = None if sizes is None else len(sizes)
    field = None if c.data_type is None else 0
    full = s.rank
    if full is None and None not in (chunked, field):
        full = chunked + field
    if full is not None and chunked is not None and (
            chunked > full or field is not None and full != chunked + field):
        raise SpecError(f"rank: {full} does not match the metadata's rank {chunked}")
    if full is not None:
        chunked = full - field if chunked is None and field is not None else chunked
        field = full - chunked if field is None and chunked is not None else field
    return full, chunked, field


def _field_dtype(c: V2Constraints) -> str | None:
    if c.data_type is not None and len(c.data_type.dtype.names or ()) > 1:
        raise SpecError("metadata.dtype: a record of several fields needs a \"field\" member, "
                        "which zarrkit does not support")
    return None if c.data_type is None else ts_dtype(c.data_type)


def spec_schema(c: V2Constraints, s: Schema) -> Schema:
    """`s` with the rank and data type of the metadata's field."""
    full, _, _ = _ranks(c, s)
    dtype = _field_dtype(c)
    if dtype is not None and s.dtype not in (None, dtype):
        raise SpecError(f"metadata.dtype {c.data_type.to_json()!r} does not match dtype "
                        f"{s.dtype!r}")
    s = copy.deepcopy(s)
    s.update(rank=full, dtype=dtype, where="metadata")
    return s


def spec_domain(c: V2Constraints, s: Schema) -> IndexDomain | None:
    """[0, shape) with implicit upper bounds, merged with the schema's domain; just the
    schema's while metadata and schema leave some dimension's extent open."""
    full, chunked, field = _ranks(c, s)
    if full is None or s.domain is None and (
            chunked != 0 and c.shape is None or field != 0 and c.data_type is None):
        return s.domain
    upper = list(c.shape or ()) + [INF_MAX] * (full - len(c.shape or ()))
    domain = IndexDomain.make(full, inclusive_min=[0] * full, exclusive_max=upper)
    if s.domain is not None:
        domain = merged_domain(domain, s.domain)
    return replace(domain, implicit_lower_bounds=(False,) * full,
                   implicit_upper_bounds=(True,) * full)


def spec_layout(c: V2Constraints, s: Schema) -> ChunkLayout:
    """The schema's chunk layout with grid origin 0, read and write chunks = chunks, and the
    inner order of `order`."""
    layout = s.chunk_layout
    full, chunked, _ = _ranks(c, s)
    if full is None:
        return layout
    members: dict[str, Any] = {"rank": full, "grid_origin": [0] * full}
    if c.chunks is not None:
        members["chunk_shape"] = list(c.chunks) + [None] * (full - len(c.chunks))
    if c.order is not None and chunked is not None:
        members["inner_order"] = list(_orders(chunked)[c.order]) + list(range(chunked, full))
    return updated_layout(layout, members, "metadata: chunks and order")


def spec_codec(c: V2Constraints, s: Schema) -> CodecSpec:
    json = {"driver": "zarr"} if c.compressor is UNSET else {"driver": "zarr",
                                                              "compressor": c.compressor}
    return CodecSpec(json).merge(s.codec, "schema.codec (against metadata.compressor)")


def spec_fill(c: V2Constraints, s: Schema) -> Any:
    """The metadata's fill value (with its dtype; null: none), else the schema's."""
    if c.data_type is None or c.fill_value is UNSET:
        return s.fill_value
    if c.fill_value is None or _field_dtype(c) is None:
        return None
    names = c.data_type.dtype.names
    return np.asarray(c.fill_value[names[0]] if names else c.fill_value)


def spec_units(c: V2Constraints, s: Schema) -> Any:
    return s.dimension_units  # a .zarray has none


# -- checking a stored array ----------------------------------------------------------------------


def _expect(name: str, wanted: Any, found: Any) -> None:
    if wanted != found:
        raise SpecError(f"metadata.{name}: expected {wanted!r} but the stored array has "
                        f"{found!r}")


def _check_members(md: ArrayMetadataV2, c: V2Constraints) -> None:
    for name, wanted, found in (("shape", c.shape, md.shape), ("chunks", c.chunks, md.chunks),
                                ("order", c.order, md.order),
                                ("dimension_separator", c.separator,
                                 md.dimension_separator or ".")):
        if wanted is not None:
            _expect(name, list(wanted) if isinstance(wanted, tuple) else wanted,
                    list(found) if isinstance(found, tuple) else found)
    if c.data_type is not None and c.data_type.stored != md.data_type.stored:
        _expect("dtype", c.data_type.to_json(), md.data_type.to_json())
    if c.compressor is not UNSET:
        _expect("compressor", c.compressor, with_defaults(md.compressor))
    if c.filters and md.filters:
        _expect("filters", None, md.filters)
    if c.fill_value is not UNSET and not (
            c.fill_value is None and md.fill_value is None
            or c.fill_value is not None and md.fill_value is not None
            and _same(c.fill_value, md.fill_value)):
        _expect("fill_value", c.data_type.fill_value_to_json(c.fill_value),
                md.data_type.fill_value_to_json(md.fill_value))


def _check_schema(md: ArrayMetadataV2, schema: Schema) -> None:
    if schema.dtype is not None and schema.dtype != ts_dtype(md.data_type):
        raise SpecError(f"dtype: {schema.dtype!r} does not match the stored array's dtype "
                        f"{md.data_type.to_json()!r}")
    _refuse_codec_chunk(schema.chunk_layout)
    check_layout_and_domain(md, MetadataConstraints(), Schema(
        rank=schema.rank, domain=schema.domain, chunk_layout=schema.chunk_layout))
    wanted = _schema_compressor(schema)
    if wanted is not UNSET and wanted != with_defaults(md.compressor):
        raise SpecError(f"codec.compressor: {wanted!r} does not match the stored array's "
                        f"compressor {md.compressor!r}")
    if schema.fill_value is not None:
        wanted = _cast_fill(schema.fill_value, md.data_type)
        if md.fill_value is None or not _same(md.fill_value, wanted):
            raise SpecError(f"fill_value: {_show(wanted)} does not match the stored array's "
                            f"fill value {md.data_type.fill_value_to_json(md.fill_value)!r}")


def check_existing(md: ArrayMetadataV2, c: V2Constraints, schema: Schema) -> None:
    """SpecError naming the member when the stored array does not satisfy the constraints."""
    _refuse_units(schema)
    _check_members(md, c)
    _check_schema(md, schema)

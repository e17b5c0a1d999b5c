"""The zarr3 driver's metadata logic: constraints, new metadata, checks, derived schema.

`MetadataConstraints` is a spec's `metadata` member (every member optional). `new_metadata`
combines it with a `Schema` into the complete zarr.json TensorStore would write;
`check_existing` tells whether a stored array satisfies them; `schema_of` and friends describe
a stored array the way TensorStore's `schema`, `chunk_layout`, `domain` and `dimension_units`
do.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import DataTypeError, MetadataError, SpecError
from ..metadata.chunk_key_encoding import ChunkKeyEncoding
from ..metadata.data_type import TEXT_KINDS, DataType
from .chunk_layout import ChunkLayout, choose_chunk_shapes, updated_layout
from .codec_spec import (
    ChainSpec,
    check_inner_order,
    check_sub_chunks,
    decoded_read_shape,
    fixes_inner_order,
    inner_order,
    merge,
    parse_chain,
    read_chunk_shape,
    resolve,
    sharding_depth,
    with_inner_order,
    with_sharding,
)
from .schema import CodecSpec, Schema, cast_fill, dtype_name, same_fill
from .transform import INF, INF_MAX, IndexDomain
from .units import UNITS_ATTRIBUTE, Units, merge_units, parse_units, stored_units

_MEMBERS = ("zarr_format", "node_type", "shape", "data_type", "chunk_grid",
            "chunk_key_encoding", "fill_value", "codecs", "attributes", "dimension_names",
            "storage_transformers")


@dataclass
class MetadataConstraints:
    """The members a spec's `metadata` gives, parsed (None: not given)."""

    shape: tuple[int, ...] | None = None
    data_type: DataType | None = None
    chunk_shape: tuple[int, ...] | None = None
    chunk_key_encoding: dict[str, Any] | None = None
    fill_value: np.ndarray | None = None
    codecs: ChainSpec | None = None
    attributes: dict[str, Any] | None = None
    dimension_names: list[str | None] | None = None
    json: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_spec(cls, json: dict[str, Any]) -> MetadataConstraints:
        """The constraints of a "zarr3" spec: its `metadata`."""
        return cls.from_json(json.get("metadata"))

    @classmethod
    def from_json(cls, json: Any, where: str = "metadata") -> MetadataConstraints:
        if json is None:
            return cls()
        if not isinstance(json, dict):
            raise SpecError(f"{where}: expected an object, got {json!r}")
        for name, value in json.items():
            if name not in _MEMBERS and not (isinstance(value, dict)
                                             and value.get("must_understand") is False):
                raise SpecError(f"{where}.{name}: unsupported metadata member (not marked "
                                "\"must_understand\": false)")
        c = cls(json=copy.deepcopy(json))
        _parse_header(json, where)
        c.shape = member_ints(json, "shape", where, low=0)
        c.data_type = _data_type(json, where)
        c.chunk_shape = _chunk_grid(json.get("chunk_grid"), where)
        c.chunk_key_encoding = _key_encoding(json.get("chunk_key_encoding"), where)
        c.fill_value = _fill(json, c.data_type, where)
        c.codecs = None if "codecs" not in json else parse_chain(json["codecs"],
                                                                f"{where}.codecs")
        c.attributes = _attributes(json.get("attributes"), where)
        c.dimension_names = _names(json.get("dimension_names"), where)
        c.rank()  # checks that the members agree on the rank
        return c

    def rank(self) -> int | None:
        ranks = {len(v) for v in (self.shape, self.chunk_shape, self.dimension_names)
                 if v is not None}
        if len(ranks) > 1:
            raise SpecError(f"metadata: shape, chunk_grid and dimension_names disagree on the "
                            f"rank ({sorted(ranks)})")
        return ranks.pop() if ranks else None


def _parse_header(json: dict[str, Any], where: str) -> None:
    if json.get("zarr_format", 3) != 3:
        raise SpecError(f"{where}.zarr_format: expected 3, got {json['zarr_format']!r}")
    if json.get("node_type", "array") != "array":
        raise SpecError(f"{where}.node_type: expected \"array\", got {json['node_type']!r}")
    if json.get("storage_transformers", []) != []:
        raise SpecError(f"{where}.storage_transformers: not supported")


def member_ints(json: dict[str, Any], name: str, where: str, low: int) -> tuple[int, ...] | None:
    """Member `name` of `json` as integers >= `low` (None if absent); zarr2 uses it too."""
    value = json.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= low for v in value):
        raise SpecError(f"{where}.{name}: expected a list of integers >= {low}, got {value!r}")
    return tuple(value)


def _data_type(json: dict[str, Any], where: str) -> DataType | None:
    if "data_type" not in json:
        return None
    try:
        data_type = DataType.from_json(json["data_type"], where=f"{where}.data_type")
    except (DataTypeError, MetadataError) as exc:
        raise SpecError(str(exc)) from None
    return _tensorstore_type(data_type, f"{where}.data_type")


def _tensorstore_type(data_type: DataType, where: str) -> DataType:
    """`data_type`, unless TensorStore's zarr3 driver has no such type (0.1.86 refuses the
    string and bytes extensions): a spec could not mean the same as TensorStore."""
    if data_type.kind in TEXT_KINDS:
        raise SpecError(f"{where}: data type {data_type.name!r} is not supported in TensorStore "
                        "specs (TensorStore has no Zarr v3 string or bytes types); create such "
                        "arrays with zarrkit.create")
    return data_type


def _chunk_grid(value: Any, where: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    at = f"{where}.chunk_grid"
    if not isinstance(value, dict) or set(value) - {"name", "configuration"}:
        raise SpecError(f"{at}: expected {{\"name\": \"regular\", \"configuration\": ...}}")
    if value.get("name", "regular") != "regular":
        raise SpecError(f"{at}.name: only \"regular\" chunk grids are supported")
    config = value.get("configuration", {})
    if not isinstance(config, dict) or set(config) - {"chunk_shape"}:
        raise SpecError(f"{at}.configuration: expected {{\"chunk_shape\": [...]}}")
    return member_ints(config, "chunk_shape", f"{at}.configuration", low=1)


def _key_encoding(value: Any, where: str) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        ChunkKeyEncoding.from_json(value, where=f"{where}.chunk_key_encoding")
    except MetadataError as exc:
        raise SpecError(str(exc)) from None
    return copy.deepcopy(value)


def _fill(json: dict[str, Any], data_type: DataType | None, where: str) -> np.ndarray | None:
    if "fill_value" not in json:
        return None
    if data_type is None:
        raise SpecError(f"{where}.fill_value: must be given together with data_type")
    value = json["fill_value"]
    if data_type.kind in ("int", "uint") and isinstance(value, float) and value.is_integer():
        value = int(value)  # TensorStore takes 3.0 (or 1e3) for an integer and stores 3
    try:
        value = data_type.parse_fill_value(value, where=f"{where}.fill_value")
    except (DataTypeError, MetadataError) as exc:
        raise SpecError(str(exc)) from None
    return np.asarray(value, dtype=data_type.dtype)


def _attributes(value: Any, where: str) -> dict[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        raise SpecError(f"{where}.attributes: expected an object, got {value!r}")
    return None if value is None else copy.deepcopy(value)


def _names(value: Any, where: str) -> list[str | None] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(v is None or isinstance(v, str) for v in value):
        raise SpecError(f"{where}.dimension_names: expected a list of strings or nulls")
    return list(value)


# -- creating -------------------------------------------------------------------------------


def _merged_dtype(c: MetadataConstraints, schema: Schema) -> DataType:
    if c.data_type is not None and schema.dtype is not None and \
            c.data_type.to_json() != schema.dtype:
        raise SpecError(f"metadata.data_type {c.data_type.to_json()!r} does not match dtype "
                        f"{schema.dtype!r}")
    if c.data_type is not None:
        return c.data_type
    if schema.dtype is None:
        raise SpecError("dtype: must be specified (dtype, schema.dtype or metadata.data_type) "
                        "to create an array")
    try:
        data_type = DataType.from_json(schema.dtype)
    except (DataTypeError, MetadataError) as exc:
        raise SpecError(f"dtype: {exc}") from None
    return _tensorstore_type(data_type, "dtype")


def _merged_shape(c: MetadataConstraints, schema: Schema) -> tuple[tuple[int, ...], list[str]]:
    """The shape and the domain's labels; the domain must start at 0 where it is bounded."""
    domain = schema.domain
    shape = c.shape
    labels: list[str] = []
    if domain is not None:
        if any(lo != 0 and lo > -INF for lo in domain.inclusive_min):
            raise SpecError(f"domain: zarr3 arrays have a zero origin; got inclusive_min "
                            f"{list(domain.inclusive_min)}")
        bounded = all(hi < INF for hi in domain.exclusive_max)
        if shape is not None:
            for i, (s, hi) in enumerate(zip(shape, domain.exclusive_max, strict=True)):
                if hi < INF and hi != s:
                    raise SpecError(f"metadata.shape {list(shape)} does not match the domain's "
                                    f"exclusive_max {list(domain.exclusive_max)} (dimension {i})")
        elif bounded:
            shape = domain.exclusive_max
        labels = list(domain.labels)
    if shape is None:
        raise SpecError("shape: must be specified (shape, domain, schema.domain or "
                        "metadata.shape) to create an array")
    if schema.rank is not None and schema.rank != len(shape):
        raise SpecError(f"rank {schema.rank} does not match metadata.shape {list(shape)}")
    return tuple(shape), labels


def _dimension_names(c: MetadataConstraints, labels: list[str]) -> list[str | None] | None:
    names = c.dimension_names
    if names is None:  # TensorStore stores an unlabeled dimension's name as null
        return [label or None for label in labels] if any(labels) else None
    for i, (name, label) in enumerate(zip(names, labels, strict=False)):
        if label and (name or "") != label:
            raise SpecError(f"metadata.dimension_names[{i}] {name!r} does not match domain "
                            f"label {label!r}")
    return names


def _merged_fill(c: MetadataConstraints, schema: Schema, data_type: DataType) -> Any:
    fill = c.fill_value
    if schema.fill_value is not None:
        wanted = cast_fill(schema.fill_value, data_type)  # as when the schema gives the dtype
        if fill is not None and not same_fill(fill, wanted):
            raise SpecError(f"metadata.fill_value {_show(fill)} does not match fill_value "
                            f"{_show(wanted)}")
        fill = wanted
    value = data_type.default_fill_value() if fill is None else fill[()]
    return data_type.fill_value_to_json(value)


def _merged_attributes(c: MetadataConstraints, schema: Schema, rank: int) -> dict[str, Any]:
    attributes = dict(c.attributes or {})
    units = schema.dimension_units
    if units is not None and len(units) != rank:
        raise SpecError(f"dimension_units: {len(units)} units for rank {rank}")
    if UNITS_ATTRIBUTE in attributes:
        stored = _units_attribute(attributes[UNITS_ATTRIBUTE], rank)
        units = merge_units(stored, units, "dimension_units")
    if units is not None:
        value = stored_units(units)
        if value is None:
            attributes.pop(UNITS_ATTRIBUTE, None)
        else:
            attributes[UNITS_ATTRIBUTE] = value
    return attributes


def _units_attribute(value: Any, rank: int) -> Units:
    """metadata.attributes.dimension_units as zarr.json holds it: one string or null per
    dimension (what TensorStore reads back as units)."""
    where = f"metadata.attributes.{UNITS_ATTRIBUTE}"
    if not isinstance(value, list) or not all(v is None or isinstance(v, str) for v in value):
        raise SpecError(f"{where}: expected a list of unit strings or nulls, got {value!r}")
    if len(value) != rank:
        raise SpecError(f"{where}: {len(value)} units for rank {rank}")
    return parse_units(value, where)


def _check_read_constraint(chain: ChainSpec | None, layout: ChunkLayout, rank: int,
                           where: str) -> bool:
    """SpecError when a sharding codec's sub-chunk shape contradicts a hard read chunk shape;
    whether the codecs fix the read chunk. Only a check: a chunk_shape without sub-chunk codecs
    does not guide the chunk choice (see `_with_codec_read`)."""
    if chain is None or chain.sharding is None:
        return False
    read = read_chunk_shape(chain, (1,) * rank, where)
    if read is not None:
        try:
            copy.deepcopy(layout).update(read_chunk_shape=list(read))
        except SpecError as exc:
            raise SpecError(f"{where}: the sharding chunk_shape {list(read)} conflicts with "
                            f"chunk_layout: {exc}") from None
    return read is not None


def _with_codec_read(c: MetadataConstraints, layout: ChunkLayout, rank: int) -> ChunkLayout:
    """The layout with the read chunk the metadata's sharding codecs imply (sub-chunk codecs
    given) as a hard constraint: TensorStore then chooses the write chunk around it, a multiple
    of it. A schema's codecs imply none."""
    if c.codecs is None or c.codecs.sharding is None:
        return layout
    read = decoded_read_shape(c.codecs, c.chunk_shape, rank, "metadata.codecs")
    if read is None:
        return layout
    layout = copy.deepcopy(layout)
    try:
        layout.update(read_chunk_shape=list(read))
    except SpecError as exc:
        raise SpecError(f"metadata.codecs: the sub-chunk shape {list(read)} conflicts with "
                        f"chunk_layout: {exc}") from None
    write = c.chunk_shape or layout.write_chunk.shape or (None,) * rank
    if any(w is not None and w % r for r, w in zip(read, write, strict=True)):
        shown = ", ".join("*" if w is None else str(w) for w in write)
        raise SpecError(f"metadata.codecs: the sub-chunk shape {list(read)} does not evenly "
                        f"divide the write chunk shape [{shown}]")
    return layout


def _inner_order(meta: ChainSpec | None, layout: ChunkLayout,
                 rank: int) -> tuple[int, ...] | None:
    """The inner order to store: the hard one, else the soft one unless the metadata's codecs
    name their innermost array -> bytes codec (TensorStore then keeps their order)."""
    order = layout.inner_order
    if order is None and not fixes_inner_order(meta):
        order = layout.inner_order_soft_constraint
    return order if order is not None and len(order) == rank else None


def _schema_chain(schema: Schema) -> ChainSpec | None:
    codec = schema.codec
    if codec is not None and codec.driver != "zarr3":
        raise SpecError(f"codec.driver: {codec.driver!r} cannot describe a zarr3 array")
    return None if codec is None else codec.chain


def _choose_codecs(c: MetadataConstraints, schema: Schema, data_type: DataType,
                   shape: tuple[int, ...]) -> tuple[tuple[int, ...], list[dict[str, Any]]]:
    """The schema's codecs merged with the metadata's (as TensorStore merges codec specs);
    chunk shapes from the layout and the read chunk the metadata's sharding codecs imply;
    sharding inserted when read and write chunks differ (nested sharding codecs without a
    chunk_shape get the read chunk); a transpose appended to the innermost chain
    for the inner order. The result must still satisfy the metadata's codecs."""
    rank = len(shape)
    chain = merge(c.codecs, _schema_chain(schema), "codec.codecs", strict=False, rank=rank)
    layout = schema.chunk_layout
    # Only the metadata's own codecs fix the order: a schema's codecs take a transpose.
    order = _inner_order(c.codecs, layout, rank)
    # ... and only where they reach the innermost chunks: beneath a schema's sharding codec
    # the transpose goes into its sub-chunk codecs (as TensorStore does).
    if order is not None and sharding_depth(chain) <= sharding_depth(c.codecs):
        check_inner_order(c.codecs, order, rank, "metadata.codecs")
    # Codecs given in the metadata without a sharding codec keep read and write chunks equal.
    sharding = c.codecs is None or c.codecs.sharding is not None
    where = "metadata.codecs" if c.codecs is not None else "codec.codecs"
    fixed = _check_read_constraint(chain, layout, rank, where)
    layout = _with_codec_read(c, layout, rank)
    read, write = choose_chunk_shapes(shape, layout, metadata_chunk_shape=c.chunk_shape,
                                      sharding=sharding, dtype_size=data_type.item_size,
                                      read_fixed=fixed)
    if read != write and (chain is None or chain.sharding is None):
        chain = merge(with_sharding(None, read), chain, where, strict=False, rank=rank)
    if chain is not None and chain.sharding is not None:
        chain = with_sharding(chain, read)
        check_sub_chunks(chain, write, data_type.item_size, where)
        # The filled-in sub-chunk shapes must meet a hard read chunk shape as well.
        _check_read_constraint(chain, layout, rank, where)
    if order is not None:
        chain = with_inner_order(chain, order, rank, "metadata.codecs")
    _check_still_met(chain, c.codecs, rank)
    return write, resolve(chain, data_type.item_size, write)


def _check_still_met(chain: ChainSpec | None, wanted: ChainSpec | None, rank: int) -> None:
    """The codecs chosen (after merging the schema's) must satisfy metadata.codecs exactly."""
    try:
        merge(chain, wanted, "metadata.codecs", rank=rank)
    except SpecError as exc:
        raise SpecError(f"metadata.codecs: the codecs chosen with codec.codecs "
                        f"{[] if chain is None else chain.to_json()} do not match them: "
                        f"{exc}") from None


def _stored_key_encoding(json: dict[str, Any] | str | None) -> dict[str, Any]:
    """As TensorStore writes it: the configuration only when the separator is not the
    encoding's default."""
    if json is None:
        return {"name": "default"}
    encoding = ChunkKeyEncoding.from_json(json)
    default = ChunkKeyEncoding(encoding.name).separator
    if encoding.separator == default:
        return {"name": encoding.name}
    return {"name": encoding.name, "configuration": {"separator": encoding.separator}}


def _without_byte_endian(codecs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chain of a 1-byte type as TensorStore stores it: `bytes` without an endian (which
    means nothing for single bytes), also in inner chains; index chains (uint64) keep theirs.
    Only chains of transposes reach `bytes` with the array's own type."""
    out = []
    for codec in codecs:
        name, config = codec.get("name"), codec.get("configuration") or {}
        if name == "bytes" and "endian" in config:
            codec = {"name": "bytes"}
        elif name == "sharding_indexed" and "codecs" in config:
            codec = {**codec, "configuration": {**config,
                                                "codecs": _without_byte_endian(config["codecs"])}}
        elif name != "transpose":
            return out + codecs[len(out):]  # a codec that may change the type: left as given
        out.append(codec)
    return out


def new_metadata(c: MetadataConstraints, schema: Schema) -> dict[str, Any]:
    """The complete zarr.json document for a new array (TensorStore's choices)."""
    data_type = _merged_dtype(c, schema)
    shape, labels = _merged_shape(c, schema)
    write, codecs = _choose_codecs(c, schema, data_type, shape)
    doc: dict[str, Any] = {
        "zarr_format": 3, "node_type": "array", "shape": list(shape),
        "data_type": data_type.to_json(),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(write)}},
        "chunk_key_encoding": _stored_key_encoding(c.chunk_key_encoding),
        "fill_value": _merged_fill(c, schema, data_type),
        "codecs": _without_byte_endian(codecs) if data_type.item_size == 1 else codecs,
    }
    attributes = _merged_attributes(c, schema, len(shape))
    if attributes:
        doc["attributes"] = attributes
    names = _dimension_names(c, labels)
    if names is not None and any(name is not None for name in names):  # all null: omitted
        doc["dimension_names"] = names
    doc.update({k: v for k, v in c.json.items() if k not in _MEMBERS})  # must_understand: false
    return doc


# -- describing a stored array --------------------------------------------------------------


def is_v3(md: Any) -> bool:
    return getattr(md, "zarr_format", 3) == 3


def dimension_labels(md: Any) -> tuple[str, ...]:
    """Labels from dimension_names; all empty if they are not valid labels (repeated names)."""
    names = [n or "" for n in (md.dimension_names or ())] if is_v3(md) else []
    rank = len(md.shape)
    named = [n for n in names if n]
    if len(names) != rank or len(named) != len(set(named)):
        return ("",) * rank
    return tuple(names)


def domain_of(md: Any) -> IndexDomain:
    return IndexDomain.from_shape(md.shape, dimension_labels(md))


def units_of(md: Any) -> Units | None:
    value = md.attributes.get(UNITS_ATTRIBUTE) if is_v3(md) else None
    if value is None:
        return None
    try:
        units = parse_units(value)
    except SpecError:
        return None  # not TensorStore's form: an ordinary attribute
    return units if len(units) == len(md.shape) else None


def codec_chain_of(md: Any) -> ChainSpec:
    return parse_chain([c.to_json() for c in md.codecs], "stored codecs")


def chunk_layout_of(md: Any) -> ChunkLayout:
    """grid origin 0, inner order from the transposes, write chunk = grid, read = innermost."""
    rank = len(md.shape)
    if is_v3(md):
        chain = codec_chain_of(md)
        write = md.chunk_shape
        read = read_chunk_shape(chain, write) or write
        order = inner_order(chain, rank)
    else:
        write = read = md.chunks
        order = tuple(range(rank)) if md.order == "C" else tuple(reversed(range(rank)))
    return ChunkLayout(rank=rank, grid_origin=[0] * rank, inner_order=list(order),
                       read_chunk_shape=list(read), write_chunk_shape=list(write))


def codec_of(md: Any) -> CodecSpec:
    if is_v3(md):
        return CodecSpec({"driver": "zarr3", "codecs": [c.to_json() for c in md.codecs]})
    return CodecSpec({"driver": "zarr", "compressor": md.compressor, "filters": md.filters})


def dtype_of(md: Any) -> str:
    """The TensorStore name of the stored data type, or numpy's when it has none."""
    try:
        data_type = md.data_type if is_v3(md) else DataType.from_numpy(md.dtype)
    except (DataTypeError, MetadataError):
        return str(md.dtype)
    name = data_type.to_json()
    return name if isinstance(name, str) and data_type.kind not in TEXT_KINDS else str(md.dtype)


def schema_of(md: Any) -> Schema:
    dtype: str | None = dtype_of(md)
    try:
        dtype_name(dtype)
    except SpecError:
        dtype = None  # v2 records and fixed-length bytes: no TensorStore name, unconstrained
    schema = Schema(dtype=dtype, domain=domain_of(md), chunk_layout=chunk_layout_of(md),
                    codec=codec_of(md), dimension_units=units_of(md))
    fill = md.fill_value  # v2's null fill value: the schema has none (as TensorStore's)
    if dtype is not None and fill is not None and not np.asarray(fill).dtype.hasobject:
        schema.update(fill_value=np.asarray(fill))
    return schema


# -- describing a spec before it is opened ----------------------------------------------------
# TensorStore's zarr3 driver spec: what its metadata constraints `c` and own schema `s` (the
# spec's `schema` member, dtype and rank) say of the array without reading it. Each piece is
# separate, as TensorStore computes (and fails) each on its own.


def _units_constraint(c: MetadataConstraints) -> Units | None:
    """metadata.attributes.dimension_units, which TensorStore takes for the units."""
    value = (c.attributes or {}).get(UNITS_ATTRIBUTE)
    if value is None:
        return None
    return _units_attribute(value, len(value) if isinstance(value, list) else -1)


def metadata_rank(c: MetadataConstraints) -> int | None:
    """The rank the metadata implies: shape, chunk_grid, dimension_names or units."""
    rank, units = c.rank(), _units_constraint(c)
    if units is not None and rank not in (None, len(units)):
        raise SpecError(f"metadata.attributes.{UNITS_ATTRIBUTE}: {len(units)} units for rank "
                        f"{rank}")
    return len(units) if units is not None else rank


def spec_schema(c: MetadataConstraints, s: Schema) -> Schema:
    """`s` with the metadata's data type and, when that is given, its rank: without a data
    type TensorStore only requires the schema to have at least the metadata's dimensions."""
    rank = metadata_rank(c)
    if rank is not None and s.rank is not None and (
            s.rank < rank or c.data_type is not None and s.rank != rank):
        raise SpecError(f"rank: {s.rank} does not match the metadata's rank {rank}")
    s = copy.deepcopy(s)
    if c.data_type is not None:
        name = c.data_type.to_json()
        if s.dtype not in (None, name):
            raise SpecError(f"metadata.data_type {name!r} does not match dtype {s.dtype!r}")
        s.update(dtype=name, rank=rank, where="metadata")
    return s


def spec_domain(c: MetadataConstraints, s: Schema) -> IndexDomain | None:
    """[0, shape) labelled by dimension_names (if unique), merged with the schema's domain;
    lower bounds explicit and upper bounds implicit (resizable) whatever either said."""
    if c.shape is None and c.dimension_names is None and s.domain is None:
        return IndexDomain.make(rank=0) if s.rank == 0 else None
    rank = metadata_rank(c)
    if rank is not None and s.rank not in (None, rank):
        raise SpecError(f"metadata: rank {rank} does not match the schema's rank {s.rank}")
    rank = s.rank if rank is None else rank
    names = [n or "" for n in c.dimension_names or ()]
    if len(set(filter(None, names))) != len(list(filter(None, names))):
        names = []  # repeated names label nothing
    domain = IndexDomain.make(rank, inclusive_min=[0] * rank, shape=c.shape,
                              labels=names or None)
    if s.domain is not None:
        domain = merged_domain(domain, s.domain)
    return replace(domain, implicit_lower_bounds=(False,) * rank,
                   implicit_upper_bounds=(True,) * rank)


def merged_domain(ours: IndexDomain, schema: IndexDomain) -> IndexDomain:
    """The two merged as TensorStore merges domains: an infinite bound yields to the other only
    when implicit (zarrkit's merge lets explicit ones yield too)."""
    where = "metadata (against schema.domain)"
    if ours.rank == schema.rank:
        for i in range(ours.rank):
            if (schema.inclusive_min[i] == -INF and not schema.implicit_lower_bounds[i]) or (
                    schema.exclusive_max[i] == INF_MAX and not schema.implicit_upper_bounds[i]
                    and ours.exclusive_max[i] != INF_MAX):
                raise SpecError(f"{where}: dimension {i} bounds {schema!r} do not match "
                                f"{ours!r}")
    return ours.merge(schema, where)


def _codec_layout(chain: ChainSpec, chunk_shape: tuple[int, ...] | None,
                  rank: int) -> dict[str, Any]:
    """The inner order (when the innermost codecs name their array -> bytes codec) and read
    chunk shape the codecs imply (TensorStore's GetDecodedChunkLayout)."""
    out: dict[str, Any] = {}
    if fixes_inner_order(chain):
        out["inner_order"] = list(inner_order(chain, rank, "metadata.codecs"))
    read = decoded_read_shape(chain, chunk_shape, rank, "metadata.codecs")
    if read is not None:
        out["read_chunk_shape"] = list(read)
    return out


def spec_layout(c: MetadataConstraints, s: Schema) -> ChunkLayout:
    """The schema's chunk layout with the metadata's: grid origin 0, write chunk = chunk_grid,
    and what the codecs imply."""
    layout = s.chunk_layout
    rank = metadata_rank(c)
    rank = s.rank if rank is None else rank
    if rank is None:
        return layout
    members: dict[str, Any] = {"rank": rank, "grid_origin": [0] * rank}
    if c.chunk_shape is not None:
        members["write_chunk_shape"] = list(c.chunk_shape)
    if c.codecs is not None:
        members.update(_codec_layout(c.codecs, c.chunk_shape, rank))
    return updated_layout(layout, members, "metadata: the chunk_grid and codecs")


def spec_codec(c: MetadataConstraints, s: Schema) -> CodecSpec:
    codec = CodecSpec({"driver": "zarr3"} if c.codecs is None else
                      {"driver": "zarr3", "codecs": c.codecs.to_json()})
    return codec.merge(s.codec, "schema.codec (against metadata.codecs)")


def spec_fill(c: MetadataConstraints, s: Schema) -> np.ndarray | None:
    """The metadata's fill value, else the schema's (TensorStore compares them on open only)."""
    return s.fill_value if c.fill_value is None else c.fill_value


def spec_units(c: MetadataConstraints, s: Schema) -> Units | None:
    units = _units_constraint(c)
    rank = metadata_rank(c)
    if units is None and rank is not None:
        units = (None,) * rank
    return merge_units(units, s.dimension_units, "schema.dimension_units (against metadata."
                       f"attributes.{UNITS_ATTRIBUTE})")


# -- checking a stored array against constraints ----------------------------------------------


def _list(value: tuple[int, ...] | None) -> list[int] | None:
    return None if value is None else list(value)


def _expect(name: str, wanted: Any, found: Any) -> None:
    if wanted is not None and wanted != found:
        raise SpecError(f"metadata.{name}: expected {wanted!r} but the stored array has "
                        f"{found!r}")


def _check_metadata(md: Any, c: MetadataConstraints) -> None:
    _expect("shape", _list(c.shape), list(md.shape))
    _expect("data_type", c.data_type and c.data_type.to_json(), md.data_type.to_json())
    _expect("chunk_grid.configuration.chunk_shape", _list(c.chunk_shape), list(md.chunk_shape))
    if c.chunk_key_encoding is not None:
        wanted = ChunkKeyEncoding.from_json(c.chunk_key_encoding)
        if wanted != md.chunk_key_encoding:
            raise SpecError(f"metadata.chunk_key_encoding: expected {c.chunk_key_encoding!r} but "
                            f"the stored array has {md.chunk_key_encoding.to_json()!r}")
    if c.fill_value is not None and not same_fill(c.fill_value, np.asarray(md.fill_value)):
        raise SpecError(f"metadata.fill_value: expected {_show(c.fill_value)} but the stored "
                        f"array has {_show(md.fill_value)}")
    _expect("dimension_names", c.dimension_names,
            None if md.dimension_names is None else list(md.dimension_names))
    for key, value in (c.attributes or {}).items():
        if md.attributes.get(key, _ABSENT) != value:
            raise SpecError(f"metadata.attributes.{key}: expected {value!r} but the stored "
                            f"array has {md.attributes.get(key, '<absent>')!r}")
    if c.codecs is not None:
        merge(codec_chain_of(md), c.codecs, "metadata.codecs", rank=len(md.shape))
    for key, value in c.json.items():
        if key not in _MEMBERS and md.extra.get(key, _ABSENT) != value:
            raise SpecError(f"metadata.{key}: expected {value!r} but the stored array has "
                            f"{md.extra.get(key, '<absent>')!r}")


_ABSENT = object()


def _show(value: Any) -> str:
    """A fill value as a plain number (not numpy's repr)."""
    return repr(np.asarray(value)[()].item()) if not np.asarray(value).dtype.hasobject \
        else repr(value)


def _check_layout(md: Any, layout: ChunkLayout) -> None:
    actual = chunk_layout_of(md)
    try:
        actual.update(ChunkLayout.from_json(_hard_only(layout.to_json())))
    except SpecError as exc:
        raise SpecError(f"chunk_layout: does not match the stored array's layout "
                        f"{actual.to_json()}: {exc}") from None


def _hard_only(json: dict[str, Any]) -> dict[str, Any]:
    """Soft constraints are ignored when opening an existing array."""
    out = {}
    for key, value in json.items():
        if key.endswith("_soft_constraint"):
            continue
        out[key] = _hard_only(value) if isinstance(value, dict) else value
    return out


def check_existing(md: Any, c: MetadataConstraints, schema: Schema) -> None:
    """SpecError naming the member when the stored array does not satisfy the constraints."""
    rank = len(md.shape)
    if is_v3(md):
        _check_metadata(md, c)
    if schema.rank is not None and schema.rank != rank:
        raise SpecError(f"rank: {schema.rank} does not match the stored array's rank {rank}")
    if schema.dtype is not None and schema.dtype != dtype_of(md):
        raise SpecError(f"dtype: {schema.dtype!r} does not match the stored array's data type "
                        f"{dtype_of(md)!r}")
    if schema.domain is not None:
        schema.domain.merge(domain_of(md), "domain (against the stored array)")
    _check_layout(md, schema.chunk_layout)
    if schema.codec is not None:
        codec_of(md).merge(schema.codec, "codec (against the stored array)")
    if schema.fill_value is not None and is_v3(md):
        # Converted as on create: a value the data type cannot hold (300 for uint8) must not
        # match by wrapping around.
        wanted = cast_fill(schema.fill_value, md.data_type)
        if not same_fill(np.asarray(md.fill_value), wanted):
            raise SpecError(f"fill_value: {_show(wanted)} does not match the stored "
                            f"array's fill value {_show(md.fill_value)}")
    elif schema.fill_value is not None:
        stored = np.asarray(md.effective_fill_value)
        if not same_fill(stored, schema.fill_value):
            raise SpecError(f"fill_value: {_show(schema.fill_value)} does not match the stored "
                            f"array's fill value {_show(stored)}")
    if schema.dimension_units is not None:
        merge_units(units_of(md) or (None,) * rank, schema.dimension_units,
                    "dimension_units (against the stored array)")

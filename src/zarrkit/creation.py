"""Creating array nodes from the familiar keyword arguments (shape, dtype, chunks, shards, ...).

The keywords become a complete zarr.json document, which is then validated like any document
read from a store, before anything is written or overwritten.
"""

from __future__ import annotations

import inspect
import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from . import formats, storage
from .array import Array, configured_write_empty
from .codecs.base import Codec
from .codecs.numcodecs_v3 import check_creatable
from .codecs.vlen import UNENCODABLE, first_unencodable
from .errors import (
    CodecError,
    DataTypeError,
    MetadataError,
    NodeExistsError,
    SpecError,
    ZarrkitError,
)
from .kvstore.base import KvStore
from .metadata.data_type import DataType
from .metadata.json import json_dumps, json_loads
from .metadata.names import normalize_path
from .metadata.v3 import ArrayMetadataV3

DEFAULT_COMPRESSORS: tuple[dict[str, Any], ...] = (
    {"name": "zstd", "configuration": {"level": 0, "checksum": False}},)
DEFAULT_INDEX_CODECS: tuple[dict[str, Any], ...] = (
    {"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"})
AUTO_CHUNK_ELEMENTS = 1 << 20


def _codec_json(codec: Any) -> Any:
    if isinstance(codec, Codec):
        return codec.to_json()
    doc = _zarr_python_codec(codec)
    return codec if doc is None else doc


def _zarr_python_codec(codec: Any) -> dict[str, Any] | None:
    """The JSON of a codec object of zarr-python's (or numcodecs.zarr3's), by its `to_dict()`;
    None for anything else. Settings zarr-python derives from the data type when they were not
    given (a BloscCodec's typesize and shuffle: its `_tunable_attrs`) are left out, and then
    derived here by the same rule."""
    to_dict = getattr(codec, "to_dict", None)
    if isinstance(codec, dict) or not callable(to_dict):
        return None
    doc = json_loads(json_dumps(to_dict()), what=f"codec {codec!r}")  # tuples become lists
    if not isinstance(doc, dict) or not isinstance(doc.get("name"), str):
        raise CodecError(f"codec {codec!r}: its to_dict() is not a codec's JSON")
    config = doc.get("configuration")
    for tuned in getattr(codec, "_tunable_attrs", ()):
        if isinstance(config, dict):
            config.pop(tuned, None)
    return doc


def _is_one_codec(value: Any) -> bool:
    return isinstance(value, dict | Codec) or _zarr_python_codec(value) is not None


def codec_list(value: Any, what: str) -> list[Any]:
    """A keyword that takes a list of codecs, as a list. A bare name is refused, not iterated
    (it became one-letter codec names), as zarr-python refuses it: the list is explicit."""
    if isinstance(value, str):
        raise CodecError(f"{what}: expected a list of codecs, got the string {value!r}; "
                         f"write {what}=[{value!r}]")
    if isinstance(value, bytes | dict) or not isinstance(value, Iterable):
        raise CodecError(f"{what}: expected a list of codecs, got {value!r}")
    return list(value)


def parse_shape(value: Any, what: str) -> tuple[int, ...]:
    if isinstance(value, int | np.integer):
        return (int(value),)
    try:  # operator.index: 2.5 or "3" is refused, not truncated or parsed
        shape = tuple(operator.index(v) for v in value)
    except (TypeError, ValueError):
        raise MetadataError(f"{what} must be a sequence of integers, got {value!r}") from None
    if any(v < 0 for v in shape):
        raise MetadataError(f"{what} must not be negative, got {shape}")
    return shape


def auto_chunks(shape: tuple[int, ...], target: int = AUTO_CHUNK_ELEMENTS) -> tuple[int, ...]:
    """A chunk shape of about `target` elements, as even as the array's shape allows."""
    chunks = [max(s, 1) for s in shape]
    while math.prod(chunks) > target:
        i = max(range(len(chunks)), key=lambda d: chunks[d])
        chunks[i] = -(-chunks[i] // 2)
    return tuple(chunks)


def _chunk_shape(chunks: Any, shape: tuple[int, ...], what: str) -> tuple[int, ...]:
    if isinstance(chunks, bool | np.bool_):
        return _boolean_chunks(bool(chunks), shape, what)
    if chunks is None or (isinstance(chunks, str) and chunks == "auto"):
        return auto_chunks(shape)
    if isinstance(chunks, int | np.integer):
        chunks = (chunks,) * len(shape)
    if isinstance(chunks, np.ndarray):
        chunks = chunks.tolist()
    if not isinstance(chunks, Sequence) or isinstance(chunks, str | bytes):
        raise MetadataError(f"{what} must be a shape (a sequence of integers), an integer, "
                            f"'auto' or None; got {chunks!r}")
    chunks = tuple(s if c in (-1, None) else c for c, s in zip(chunks, shape, strict=False)) \
        if len(chunks) == len(shape) else chunks
    result = parse_shape(chunks, what)
    if len(result) != len(shape):
        raise MetadataError(f"{what} {result} must have one entry per dimension of shape {shape}")
    if any(c < 1 for c in result):
        raise MetadataError(f"{what} {result} must be positive")
    return result


def _boolean_chunks(chunks: bool, shape: tuple[int, ...], what: str) -> tuple[int, ...]:
    """zarr-python's `chunks=True` (choose them) and `chunks=False` (one chunk); as integers
    they were 1 (a chunk per element) and 0. `shards=False` would read as "no sharding", which
    is `shards=None`: refused rather than made one shard."""
    if what != "chunks":
        raise MetadataError(f"{what}={chunks}: give a shape, 'auto', or None for no {what}")
    return auto_chunks(shape) if chunks else tuple(max(s, 1) for s in shape)


def dimension_names_list(value: Any, *, allow_none: bool = True) -> list[str | None]:
    """`dimension_names=` as a list: a list, tuple or numpy array of names (None for unnamed, if
    `allow_none`). Other values are refused rather than split ("xy") or iterated (5)."""
    names = value.tolist() if isinstance(value, np.ndarray) else value
    ok = isinstance(names, list | tuple) and all(
        isinstance(n, str) or (allow_none and n is None) for n in names)
    if not ok:
        kind = "strings or None" if allow_none else "strings"
        raise MetadataError(f"dimension_names: expected a list of {kind} (one per dimension), "
                            f"got {value!r}")
    return list(names)


def _key_encoding(value: Any) -> dict[str, Any]:
    if value is None:
        return {"name": "default", "configuration": {"separator": "/"}}
    if isinstance(value, str):
        return {"name": value}
    if not isinstance(value, Mapping):
        raise MetadataError("chunk_key_encoding must be a name ('default', 'v2') or a dict "
                            f"with a name; got {value!r}")
    doc = dict(value)
    if "separator" in doc and "configuration" not in doc:
        # zarr-python's keyword form {"name": ..., "separator": ...}: the metadata nests it
        doc["configuration"] = {"separator": doc.pop("separator")}
    return doc


def build_array_document(
    shape: Any, dtype: Any, *, chunks: Any = None, shards: Any = None,
    codecs: Sequence[Any] | None = None, filters: Sequence[Any] | None = None,
    serializer: Any = None, compressors: Any = "default", fill_value: Any = None,
    dimension_names: Sequence[str | None] | None = None,
    attributes: dict[str, Any] | None = None, chunk_key_encoding: Any = None,
    index_codecs: Sequence[Any] | None = None, index_location: str = "end",
) -> dict[str, Any]:
    """A complete zarr.json document from zarr-python-style keywords.

    With `shards`, `chunks` is the inner chunk shape and `codecs` (or filters/serializer/
    compressors) the inner chain; a `sharding_indexed` codec is built around it.
    """
    shape_t = parse_shape(shape, "shape")
    data_type = _data_type(dtype, fill_value)
    if codecs is None:
        if isinstance(compressors, str) and compressors == "default":
            compressors = DEFAULT_COMPRESSORS
        elif compressors is None:
            compressors = ()
        elif _is_one_codec(compressors):
            compressors = (compressors,)
        codecs = [*codec_list(() if filters is None else filters, "filters"),
                  _default_serializer(data_type) if serializer is None else serializer,
                  *codec_list(compressors, "compressors")]
    chain = [_codec_json(c) for c in codec_list(codecs, "codecs")]
    if shards is not None:
        shard_shape = _chunk_shape(shards, shape_t, "shards")
        inner = _chunk_shape(chunks, shard_shape, "chunks")
        chain = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(inner), "codecs": chain,
            "index_codecs": [_codec_json(c) for c in
                             codec_list(index_codecs or DEFAULT_INDEX_CODECS, "index_codecs")],
            "index_location": index_location}}]
        grid = shard_shape
    else:
        grid = _chunk_shape(chunks, shape_t, "chunks")
    doc: dict[str, Any] = {
        "zarr_format": 3, "node_type": "array", "shape": list(shape_t),
        "data_type": data_type.to_json(),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(grid)}},
        "chunk_key_encoding": _key_encoding(chunk_key_encoding),
        "fill_value": data_type.fill_value_to_json(
            data_type.default_fill_value() if fill_value is None
            else data_type.parse_fill_value(_fill_json(fill_value, data_type))),
        "codecs": chain,
        "attributes": {} if attributes is None else attributes,
    }
    if dimension_names is not None:
        doc["dimension_names"] = dimension_names_list(dimension_names)
    return doc


def _data_type(dtype: Any, fill_value: Any) -> DataType:
    """The data type of numpy dtype-likes and v3 names ("r16", "bfloat16"). Object values with a
    bytes fill value are variable_length_bytes (`convert` passes a copied array's dtype so)."""
    data_type = DataType.parse(dtype)
    if isinstance(fill_value, bytes) and (dtype is object or isinstance(dtype, np.dtype)
                                          and dtype.kind == "O"):
        return DataType.parse("variable_length_bytes")
    return data_type


def _default_serializer(data_type: DataType) -> dict[str, Any]:
    """The array->bytes codec for `data_type` when none is given (zarr-python's choice)."""
    name = {"vlen_str": "vlen-utf8", "vlen_bytes": "vlen-bytes"}.get(data_type.kind, "bytes")
    return {"name": name}


#: Kinds whose fill values go through `cast_fill_value`: numbers are refused (astype would
#: invent bytes or text); for the text and bytes types a str is text, bytes are bytes.
_CAST_KINDS = frozenset({"raw", "str", "bytes", "vlen_str", "vlen_bytes", "datetime",
                         "timedelta", "struct"})


def _fill_json(value: Any, data_type: DataType) -> Any:
    """Accept Python/numpy fill values as well as their JSON encodings."""
    # The small floats too: astype rounds a float64 twice (via float32), and makes infinities
    # and out-of-range numbers NaN, the largest value or -0.0 where the types refuse them.
    if data_type.kind in _CAST_KINDS or data_type.kind == "float" and data_type.item_size == 1:
        fill = data_type.cast_fill_value(value, where="fill_value")
        if data_type.kind == "vlen_str" and first_unencodable([fill]) is not None:
            raise DataTypeError(f"fill_value: cannot use {fill!r}: {UNENCODABLE}")  # vlen-utf8's
        return data_type.fill_value_to_json(fill)
    if isinstance(value, str | list):
        return value
    if isinstance(value, np.generic | complex | float | int | bool):
        try:
            with np.errstate(invalid="ignore"):
                scalar = np.asarray(value).astype(data_type.dtype)[()]
        except OverflowError:
            scalar = None
        if data_type.kind in ("int", "uint") and (scalar is None or scalar != value):
            # astype wraps 300 to 44 in uint8 and truncates 2.5: refuse instead.
            raise DataTypeError(f"fill_value: {value!r} cannot be stored exactly as "
                                f"{data_type.name}")
        return data_type.fill_value_to_json(scalar)
    return value


def create_array_at(store: KvStore, path: str, shape: Any, dtype: Any = "float64", *,
                    overwrite: bool = False, write_empty_chunks: bool | None = None,
                    zarr_format: int = 3, **kwargs: Any) -> Array:
    """Create an array at `path` in `store` (see `build_array_document` for the keywords, and
    `creation_v2.build_v2_metadata` for those of `zarr_format=2`; `config` is zarr-python's
    array config, see `take_config`)."""
    path = normalize_path(path)
    write_empty = bool(take_config(kwargs, write_empty_chunks))
    metadata = build_metadata(path, shape, dtype, zarr_format, kwargs)
    return create_array_from_metadata(store, path, metadata, overwrite=overwrite,
                                      write_empty_chunks=write_empty)


def flag(value: Any, name: str) -> bool:
    """A True/False keyword (`overwrite`, ...) as a bool: anything else is refused, not taken
    by its truth value (a numpy array has none, "no" is true)."""
    if not isinstance(value, bool | np.bool_):
        raise SpecError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def take_config(kwargs: dict[str, Any], write_empty_chunks: Any) -> Any:
    """The `write_empty_chunks` to use, popping zarr-python's `config=` (its array config:
    `write_empty_chunks`, `order` "C") from `kwargs`; None if neither says. A config that
    contradicts `write_empty_chunks=` is refused rather than one silently winning."""
    if write_empty_chunks is not None:
        flag(write_empty_chunks, "write_empty_chunks")
    if kwargs.get("config") is None:
        kwargs.pop("config", None)
        return write_empty_chunks
    chosen = configured_write_empty(kwargs.pop("config"), {}, bool(write_empty_chunks),
                                    "config")
    if write_empty_chunks is not None and chosen != bool(write_empty_chunks):
        raise SpecError(f"config sets write_empty_chunks={chosen}, contradicting "
                        f"write_empty_chunks={write_empty_chunks!r}; give one of them")
    return chosen


def build_metadata(path: str, shape: Any, dtype: Any, zarr_format: int,
                   kwargs: dict[str, Any]) -> Any:
    """Validated array metadata of `zarr_format` from creation keywords."""
    if not isinstance(zarr_format, int | np.integer) or isinstance(zarr_format, bool):
        raise MetadataError(f"zarr_format must be 2 or 3; got {zarr_format!r}")
    if zarr_format == 2:
        from .creation_v2 import build_v2_metadata  # imports this module: load on demand

        return build_v2_metadata(shape, dtype, where=storage.join(path, ".zarray"), **kwargs)
    if zarr_format == 3:
        kwargs = _without_order(kwargs)
        _refuse_unknown(kwargs)  # v2's builder refuses its own
        doc = build_array_document(shape, dtype, **kwargs)
        metadata = ArrayMetadataV3.from_json(doc, where=storage.metadata_key(path))
        check_creatable(metadata.codec_chain)  # before anything is stored
        return metadata
    raise MetadataError(f"arrays can be created in Zarr v2 or v3, not {zarr_format!r}")


def _without_order(kwargs: dict[str, Any]) -> dict[str, Any]:
    """`kwargs` less zarr-python's `order=`, which a v3 array takes without effect: its chunks
    are stored in C order, and reads are C-ordered. "F" would promise what neither does."""
    order = kwargs.get("order")
    if order is not None and not (isinstance(order, str) and order == "C"):
        raise SpecError(f"order={order!r}: a Zarr v3 array stores its chunks in C order (a "
                        "transpose codec reorders them: codecs=[{'name': 'transpose', ...}, "
                        "...]) and reads are C-ordered; give order='C', or zarr_format=2 for "
                        "a v2 array in F order")
    return {k: v for k, v in kwargs.items() if k != "order"}


def _refuse_unknown(kwargs: dict[str, Any]) -> None:
    known = inspect.signature(build_array_document).parameters
    unknown = sorted(k for k in kwargs if k not in known or k in ("shape", "dtype"))
    if unknown:
        raise SpecError(f"unexpected keyword argument(s) {', '.join(unknown)}")


#: Which part of the metadata each creation keyword decides, for `check_existing`.
_V3_PARTS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "shape": lambda m, doc: m.shape,
    "dtype": lambda m, doc: doc["data_type"],
    "chunks": lambda m, doc: _inner_chunks(doc),
    "shards": lambda m, doc: m.chunk_shape if _is_sharded(doc) else None,
    "fill_value": lambda m, doc: doc["fill_value"],
    "dimension_names": lambda m, doc: m.dimension_names,
    "chunk_key_encoding": lambda m, doc: doc["chunk_key_encoding"],
    "order": lambda m, doc: "C",  # the only order `_without_order` lets through
    **dict.fromkeys(("codecs", "filters", "serializer", "compressors", "index_codecs",
                     "index_location"), lambda m, doc: doc["codecs"]),
}
_V2_PARTS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "shape": lambda m, doc: m.shape,
    "dtype": lambda m, doc: doc["dtype"],
    "chunks": lambda m, doc: m.chunk_shape,
    "fill_value": lambda m, doc: doc["fill_value"],
    "dimension_names": lambda m, doc: m.dimension_names,
    **dict.fromkeys(("compressor", "compressors"), lambda m, doc: doc["compressor"]),
    "filters": lambda m, doc: doc["filters"],
    "order": lambda m, doc: doc["order"],
    **dict.fromkeys(("dimension_separator", "chunk_key_encoding"),
                    lambda m, doc: m.chunk_key_encoding),
}


def _is_sharded(doc: dict[str, Any]) -> bool:
    return doc["codecs"][0]["name"] == "sharding_indexed"


def _inner_chunks(doc: dict[str, Any]) -> Any:
    # zarr-python's chunks= of a sharded array is the inner chunk shape.
    if _is_sharded(doc):
        return tuple(doc["codecs"][0]["configuration"]["chunk_shape"])
    return tuple(doc["chunk_grid"]["configuration"]["chunk_shape"])


def check_existing(metadata: Any, path: str, kwargs: dict[str, Any]) -> None:
    """Creation keywords given when opening an existing array must describe it: a contradiction
    is a SpecError naming the keyword (ignoring it would let the caller write, e.g., with a
    shape or dtype it does not have). `attributes` are initial values, used only on creation."""
    given = {k: v for k, v in kwargs.items() if k != "attributes" and v is not None
             and not (k == "chunks" and isinstance(v, str) and v == "auto")}
    if not given:
        return
    fmt = 3 if getattr(metadata, "zarr_format", 3) == 3 else 2  # v1 is described as v2
    rest = {k: v for k, v in given.items() if k not in ("shape", "dtype")}
    wanted = build_metadata(path, given.get("shape", metadata.shape),
                            given.get("dtype", metadata.data_type if fmt == 3 else metadata.dtype),
                            fmt, rest)
    parts = _V3_PARTS if fmt == 3 else _V2_PARTS
    stored_doc, wanted_doc = metadata.to_json(), wanted.to_json()
    for name in given:
        stored = parts[name](metadata, stored_doc)
        asked = parts[name](wanted, wanted_doc)
        if stored != asked:
            raise SpecError(f"{name}={kwargs[name]!r} does not match the existing array at "
                            f"{path or '/'!r} ({name}: {_shown(stored)}); omit it, or replace "
                            "the array with mode='w'")


def _shown(value: Any) -> str:
    return repr(list(value) if isinstance(value, tuple) else value)


def create_array_from_metadata(store: KvStore, path: str, metadata: ArrayMetadataV3, *,
                               overwrite: bool = False,
                               write_empty_chunks: bool = False) -> Array:
    exists = storage.node_exists(store, path)
    if exists and not overwrite:
        raise NodeExistsError(f"a node already exists at {path or '/'!r}; "
                              "pass overwrite=True (or mode='w') to replace it")
    storage.ensure_parents(store, path, getattr(metadata, "zarr_format", 3))  # may refuse:
    if exists:                                                              # delete only then
        storage.delete_node(store, path)
    storage.write_metadata(store, path, metadata)
    return Array(store, path, metadata, write_empty_chunks=write_empty_chunks)


def write_array(store: KvStore, path: str, data: np.ndarray, dtype: Any,
                kwargs: dict[str, Any]) -> None:
    """A new array at `path` (its parents are not made) holding `data`; creation keywords as
    for `create_array_at`."""
    metadata, write_empty = _built(path, data.shape, dtype, kwargs)
    storage.write_metadata(store, path, metadata)
    Array(store, path, metadata, write_empty_chunks=write_empty)[...] = data


def _built(path: str, shape: Any, dtype: Any, kwargs: dict[str, Any]) -> tuple[Any, bool]:
    """(the metadata creation keywords describe, whether empty chunks are written)."""
    kwargs = dict(kwargs)
    fmt = kwargs.pop("zarr_format", 3)
    write_empty = bool(take_config(kwargs, kwargs.pop("write_empty_chunks", None)))
    kwargs.pop("overwrite", None)
    return build_metadata(path, shape, dtype, fmt, kwargs), write_empty


def array_replacing(store: KvStore, path: str, data: np.ndarray, dtype: Any,
                    kwargs: dict[str, Any]) -> Array:
    """The array holding `data` at `path`, in place of any node there: written beside it and
    moved in once complete (`storage.replace_node`), so a failure keeps the old node."""
    return filled_replacing(store, path, data.shape, dtype, kwargs,
                            lambda a: a.__setitem__(Ellipsis, data))


def filled_replacing(store: KvStore, path: str, shape: Any, dtype: Any, kwargs: dict[str, Any],
                     fill: Callable[[Array], None]) -> Array:
    """A new array at `path`, in place of any node there, given its values by `fill` before
    it is moved in (see `array_replacing`)."""
    metadata, write_empty = _built(path, shape, dtype, kwargs)

    def write(at: str) -> None:
        storage.write_metadata(store, at, metadata)
        fill(Array(store, at, metadata, write_empty_chunks=write_empty))

    storage.replace_node(store, path, formats.format_of(metadata), write)
    return Array(store, path, metadata, write_empty_chunks=write_empty)


def digit_fill(digit: int, dtype: Any) -> Any:
    """The fill of zeros/ones: the number, or for the text and bytes types the digit as text
    (as zarr-python; a number is no fill value of theirs)."""
    try:
        data_type = DataType.parse(dtype)
    except ZarrkitError:
        return digit  # creating names the bad data type
    kind = data_type.kind
    if kind == "raw":  # the bytes numpy's zeros/ones give: the digit, then zero bytes
        return bytes([digit]) + bytes(data_type.dtype.itemsize - 1)
    if kind in ("str", "vlen_str"):
        return str(digit)
    return str(digit).encode() if kind in ("bytes", "vlen_bytes") else digit


def like(data: Any, kwargs: dict[str, Any], *, fill: bool = False) -> dict[str, Any]:
    """Creation keywords for an array like `data` (an array, or values numpy takes): its
    shape, data type and, of a chunked array, its chunks; with `fill`, a zarrkit Array's fill
    value too (zarr-python's empty_like and full_like); `kwargs` take precedence. Chunks of
    another rank than a given shape are left out, not an error of the caller's."""
    if not hasattr(data, "shape") or not hasattr(data, "dtype"):
        data = np.asarray(data)
    shape = tuple(data.shape)
    found: dict[str, Any] = {"shape": shape, "dtype": data.dtype}
    given = kwargs.get("shape", shape)
    rank = len(given) if isinstance(given, tuple | list) else 1  # an int is a 1-d shape
    chunks = getattr(data, "chunks", None)  # dask's (tuples of block sizes) do not qualify
    if isinstance(chunks, tuple) and all(isinstance(c, int) for c in chunks) \
            and len(chunks) == rank:
        found["chunks"] = chunks
    if fill and isinstance(data, Array):
        found["fill_value"] = data.fill_value
    return found | kwargs


def full_like_kwargs(data: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """`like` for `full`, which needs a fill value: given, or that of a zarrkit Array."""
    found = like(data, kwargs, fill=True)
    if "fill_value" not in found:
        raise SpecError("full_like needs fill_value= unless the data is a zarrkit Array, "
                        "whose fill value is then used")
    return found


def data_type_of(data: np.ndarray) -> Any:
    """The data type of an array made from `data`: its own, except that object values that
    are all bytes are variable-length bytes (an object dtype means text to `create`)."""
    if data.dtype.hasobject and data.size and \
            all(issubclass(t, bytes) for t in set(map(type, data.reshape(-1).tolist()))):
        return bytes
    return data.dtype


def check_data_alone(shape: Any, dtype: Any) -> None:
    """`data=` decides the shape and data type: giving them too is refused, not reconciled."""
    given = [k for k, v in (("shape", shape), ("dtype", dtype)) if v is not None]
    if given:
        raise SpecError(f"create_array takes data= or {' and '.join(given)}=, not both: the "
                        "data decides them")

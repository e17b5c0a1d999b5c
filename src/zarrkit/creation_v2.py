"""Creating Zarr v2 arrays from keywords: `compressor`, `filters`, `order`, `dimension_separator`.

The keywords mirror zarr-python's (`compressors=` of at most one codec is accepted as a synonym of
`compressor=`); v3-only keywords (`shards`, `codecs`, `serializer`) are refused with the reason.
The default compressor is Blosc/LZ4 with byte shuffle, which every v2 reader (zarr-python 2 and
3, TensorStore, ...) can decode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numcodecs.abc import Codec as Numcodec

from .codecs.numcodecs_v2 import OBJECT_CODECS
from .codecs.numcodecs_v3 import check_creatable
from .creation import _chunk_shape, codec_list, dimension_names_list, parse_shape
from .errors import CodecError, MetadataError, SpecError
from .metadata.json import storable_attributes
from .metadata.v2 import DIMENSIONS_ATTRIBUTE, ArrayMetadataV2
from .metadata.v2_dtype import DataTypeV2

DEFAULT_COMPRESSOR: dict[str, Any] = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1,
                                      "blocksize": 0}
V3_ONLY = ("shards", "codecs", "serializer", "index_codecs", "index_location")


def _codec_config(codec: Any, where: str) -> dict[str, Any]:
    if isinstance(codec, Numcodec):
        return dict(codec.get_config())
    if isinstance(codec, dict) and isinstance(codec.get("id"), str):
        return dict(codec)
    hint = " (v2 codecs are named by \"id\", not \"name\")" \
        if isinstance(codec, dict) and "name" in codec else ""
    raise CodecError(f"{where}: expected a numcodecs codec or an object with an \"id\", "
                     f"got {codec!r}{hint}")


def _is_default(value: Any) -> bool:
    return isinstance(value, str) and value == "default"  # an array has no single truth value


def _compressor(compressor: Any, compressors: Any) -> dict[str, Any] | None:
    if not _is_default(compressors):
        if not _is_default(compressor):
            raise MetadataError("give compressor= or compressors=, not both")
        if isinstance(compressors, Sequence) and not isinstance(compressors, str | dict):
            if len(compressors) > 1:
                raise CodecError("a Zarr v2 array has at most one compressor; put the others "
                                 "in filters=")
            compressors = compressors[0] if compressors else None
        compressor = compressors
    if _is_default(compressor):
        return dict(DEFAULT_COMPRESSOR)
    return None if compressor is None else _codec_config(compressor, "compressor")


def _object_codec(dtype: Any, fill_value: Any) -> str | None:
    """The object codec zarr-python uses for a variable-length type, or None. An object array
    with a bytes fill value holds bytes (a v3 variable_length_bytes array, as `convert` gives)."""
    if dtype is str or dtype is bytes:
        return "vlen-utf8" if dtype is str else "vlen-bytes"
    try:
        numpy_dtype = np.dtype(dtype)
    except (TypeError, ValueError):
        return None  # not a numpy type: DataTypeV2 reports it
    kind, sizeless = numpy_dtype.kind, numpy_dtype.itemsize == 0
    if kind == "O" and isinstance(fill_value, bytes):
        return "vlen-bytes"
    if kind in "OT" or kind == "U" and sizeless:  # np.dtype(str) is the sizeless U0, as in v3
        return "vlen-utf8"
    return "vlen-bytes" if kind == "S" and sizeless else None


def _data_type(dtype: Any, filters: list[dict[str, Any]],
               fill_value: Any) -> tuple[DataTypeV2, list[Any]]:
    """Variable-length strings become `|O` with zarr-python's object codec in front."""
    object_codec = _object_codec(dtype, fill_value)
    if object_codec is None:
        data_type = DataTypeV2.from_numpy(dtype)
        _refuse_object_filters(data_type, filters)
        return data_type, filters
    if not any(f["id"] in OBJECT_CODECS for f in filters):
        filters = [{"id": object_codec}, *filters]
    return DataTypeV2(np.dtype(object)), filters


def _numeric_bool(fill_value: Any, data_type: DataTypeV2) -> Any:
    """A True/False fill of a number type as the number numpy makes of it (as v3 arrays and
    zarr-python take it); the .zarray's JSON `true` for a number stays refused."""
    if isinstance(fill_value, bool | np.bool_) and data_type.kind in ("int", "float"):
        return int(fill_value)
    return fill_value


def _refuse_object_filters(data_type: DataTypeV2, filters: list[dict[str, Any]]) -> None:
    """An object codec stores object ('|O') arrays; in front of another type its chunks would
    decode to objects that type cannot take back (zarr-python refuses it too). Categorize,
    which maps fixed-length text to integers, is the exception."""
    found = [f["id"] for f in filters if f["id"] in OBJECT_CODECS - {"categorize"}]
    if found and not data_type.dtype.hasobject:
        raise CodecError(f"filters: {found[0]!r} stores object ('|O') arrays, not "
                         f"{data_type.to_json()!r} ones; give dtype=str (or object) for "
                         "variable-length values, or leave the filter out")


def _separator(dimension_separator: str | None, chunk_key_encoding: Any) -> str:
    if chunk_key_encoding is not None:
        if not isinstance(chunk_key_encoding, str | dict):
            raise MetadataError("chunk_key_encoding must be a name or a dict with a name; "
                                f"got {chunk_key_encoding!r}")
        name = chunk_key_encoding if isinstance(chunk_key_encoding, str) \
            else chunk_key_encoding.get("name")
        config = {} if isinstance(chunk_key_encoding, str) \
            else chunk_key_encoding.get("configuration", {})
        if name != "v2":
            raise MetadataError(f"Zarr v2 arrays use v2 chunk keys, not {name!r}; "
                                "give dimension_separator='.' or '/'")
        # {"name": "v2", "separator": "/"} is zarr-python's flat spelling of the same thing.
        dimension_separator = dimension_separator or config.get("separator") or (
            {} if isinstance(chunk_key_encoding, str) else chunk_key_encoding).get("separator")
    return dimension_separator or "."


def _attributes(attributes: dict[str, Any] | None, dimension_names: Any,
                ndim: int, where: str) -> dict[str, Any]:
    attrs = storable_attributes({} if attributes is None else attributes, where)
    if dimension_names is not None:
        # v2 stores them as an attribute of strings: no None for an unnamed dimension.
        names = dimension_names_list(dimension_names, allow_none=False)
        if len(names) != ndim:
            raise MetadataError(f"dimension_names: has {len(names)} names, the array has {ndim} "
                                f"dimensions (stored as {DIMENSIONS_ATTRIBUTE})")
        attrs[DIMENSIONS_ATTRIBUTE] = names
    return attrs


#: `fill_value` not given (None is null, a fill value of v2's).
DEFAULT_FILL: Any = object()


def build_v2_metadata(shape: Any, dtype: Any, *, chunks: Any = None,
                      compressor: Any = "default", compressors: Any = "default",
                      filters: Sequence[Any] | None = None, fill_value: Any = DEFAULT_FILL,
                      order: str = "C", dimension_separator: str | None = None,
                      chunk_key_encoding: Any = None, dimension_names: Any = None,
                      attributes: dict[str, Any] | None = None, where: str = ".zarray",
                      **v3_only: Any) -> ArrayMetadataV2:
    """Validated v2 metadata from zarr-python-style keywords. `fill_value=None` is v2's null
    (no fill value: as zarr-python writes it); not given, the data type's default."""
    given = sorted(k for k, v in v3_only.items() if v is not None)
    unknown = sorted(set(v3_only) - set(V3_ONLY))
    if unknown:
        raise SpecError(f"unexpected keyword argument(s) {', '.join(unknown)}")
    if given:
        raise MetadataError(f"{', '.join(given)}: Zarr v2 has no sharding or codec chains; "
                            "v2 arrays take compressor= and filters=")
    shape_t = parse_shape(shape, "shape")
    filter_list = [_codec_config(f, f"filters[{i}]")
                   for i, f in enumerate(codec_list(filters or (), "filters"))]
    given = None if fill_value is DEFAULT_FILL else fill_value
    data_type, filter_list = _data_type(dtype, filter_list, given)
    fill = data_type.default_fill_value() if fill_value is DEFAULT_FILL else \
        _numeric_bool(fill_value, data_type)
    metadata = ArrayMetadataV2(
        shape=shape_t, chunks=_chunk_shape(chunks, shape_t, "chunks"), data_type=data_type,
        compressor=_compressor(compressor, compressors), fill_value=fill, order=order,
        filters=filter_list or None,
        dimension_separator=_separator(dimension_separator, chunk_key_encoding),
        attributes=_attributes(attributes, dimension_names, len(shape_t), where),
        where=where)
    check_creatable(metadata.codec_chain)  # before anything is stored
    return metadata

"""Translating array metadata between Zarr v2 (and v1) and v3.

`v3_from_v2` gives the zarr.json of a v2 array. With `exact=True` (in-place upgrade) the v3
document must read the *existing* chunks: the same keys (the "v2" chunk key encoding), the same
byte layout (transpose for order F, the bytes codec's endian) and a v3 codec for each filter and
the compressor: the specification's where one exists, else zarr-python's `numcodecs.<id>` codecs
(outside the specification: zarrkit and zarr-python read them, TensorStore does not). Whatever
cannot be expressed that way is refused, naming the array and the reason. Otherwise
(copying) only the values matter: the chunks are re-encoded with the given or mapped codecs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..codecs.base import ArrayBytesCodec, BytesBytesCodec
from ..codecs.numcodecs_v2 import load_numcodec, sized
from ..codecs.numcodecs_v3 import PREFIX
from ..codecs.registry import codec_kind, registered_codecs
from ..errors import CodecError, DataTypeError
from .data_type import STRING, VLEN_BYTES, DataType
from .v2 import DIMENSIONS_ATTRIBUTE, ArrayMetadataV2

_SHUFFLES = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}
#: v2 object arrays whose object codec (first filter) has a v3 data type, and the v3 codec
#: that stores its values in the same bytes.
_OBJECT_TYPES = {"vlen-utf8": STRING, "vlen-bytes": VLEN_BYTES}
#: What `convert` compresses with when the source's compressor has no v3 equivalent.
DEFAULT_V3_COMPRESSOR: dict[str, Any] = {"name": "zstd",
                                         "configuration": {"level": 0, "checksum": False}}


def v3_compressor(config: dict[str, Any] | None, itemsize: int, *,
                  where: str) -> dict[str, Any] | None:
    """The v3 codec that decodes what the numcodecs `config` encodes; CodecError if none does."""
    if config is None:
        return None
    full = load_numcodec(config, where=where).get_config()  # numcodecs fills in its defaults
    codec_id = full["id"]
    if codec_id == "blosc":
        shuffle = full.get("shuffle", 1)
        name = _SHUFFLES.get(shuffle, "bitshuffle" if itemsize == 1 else "shuffle")  # -1: auto
        return {"name": "blosc", "configuration": {
            "cname": full["cname"], "clevel": full["clevel"], "shuffle": name,
            "typesize": itemsize, "blocksize": full.get("blocksize", 0)}}
    if codec_id == "zstd":
        return {"name": "zstd", "configuration": {"level": full.get("level", 0),
                                                  "checksum": bool(full.get("checksum"))}}
    if codec_id == "gzip":
        return {"name": "gzip", "configuration": {"level": full.get("level", 1)}}
    if codec_id == "crc32c":
        return _crc32c(full, where)
    raise CodecError(f"{where}: compressor {codec_id!r} has no Zarr v3 codec (v3 has blosc, "
                     "gzip, zstd and crc32c)")


def _crc32c(config: dict[str, Any], where: str) -> dict[str, Any]:
    # numcodecs appends the CRC-32C of the whole input as 4 little-endian bytes by default,
    # exactly the v3 codec's layout; its "start" location puts it first, which v3 cannot read.
    location = config.get("location") or "end"
    if location != "end":
        raise CodecError(f"{where}: compressor 'crc32c' with location {location!r} has no Zarr "
                         "v3 codec (v3's crc32c appends the checksum at the end)")
    return {"name": "crc32c"}


def v2_compressor(codecs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The v2 compressor for the bytes->bytes codecs of a v3 chain, when one maps exactly
    (none: None; anything else: Blosc/LZ4, the v2 default)."""
    compressors = [c for c in codecs if c.get("name") in ("blosc", "zstd", "gzip")]
    if len(compressors) != 1:
        return None if not compressors else {"id": "blosc", "cname": "lz4", "clevel": 5,
                                             "shuffle": 1, "blocksize": 0}
    codec = compressors[0]
    config = codec.get("configuration", {})
    if codec["name"] == "blosc":
        shuffle = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}.get(config.get("shuffle"), 1)
        return {"id": "blosc", "cname": config.get("cname", "lz4"),
                "clevel": config.get("clevel", 5), "shuffle": shuffle,
                "blocksize": config.get("blocksize", 0)}
    if codec["name"] == "zstd":
        return {"id": "zstd", "level": config.get("level", 0),
                "checksum": config.get("checksum", False)}
    return {"id": "gzip", "level": config.get("level", 1)}


def v3_data_type(md: ArrayMetadataV2, where: str) -> DataType:
    if md.dtype.hasobject:  # what the values are is told by the object codec
        name = _OBJECT_TYPES.get(md._object_codec() or "")
        if name is not None:
            return DataType.parse(name)
    else:
        try:
            return DataType.from_numpy(md.dtype)
        except DataTypeError:
            pass
    raise DataTypeError(f"{where}: data type {md.data_type.to_json()!r} has no Zarr v3 data "
                        "type (v3 has bool, integers, floats, complex, raw bytes, and fixed or "
                        "variable-length text and bytes: vlen-utf8 and vlen-bytes objects)")


def _bytes_codec(dtype: np.dtype, endian: str) -> dict[str, Any]:
    # Without an endian for S text and one-byte types, as zarr-python writes them (byte order
    # means nothing there).
    if dtype.kind == "S" or dtype.itemsize == 1:
        return {"name": "bytes"}
    return {"name": "bytes", "configuration": {"endian": endian}}


def v3_codecs(md: ArrayMetadataV2, *, exact: bool, where: str) -> list[dict[str, Any]]:
    """A v3 codec chain for `md`: its exact equivalent (`exact_codecs`), or (copying) a good
    re-encoding: the values little-endian, the v3 codec for the compressor (zstd if there is
    none), filters dropped. Object arrays keep their object codec (vlen-utf8/vlen-bytes, v2's
    first filter), which v3 has under the same name."""
    if exact:
        return exact_codecs(md, where)
    objects = md.dtype.hasobject
    first = {"name": md._object_codec(), "configuration": {}} if objects else \
        _bytes_codec(md.dtype, "little")
    compressor = _copy_compressor(md, where)
    return [first] + ([compressor] if compressor else [])


def exact_codecs(md: ArrayMetadataV2, where: str) -> list[dict[str, Any]]:
    """The v3 chain that reads and writes `md`'s chunk bytes exactly: transpose for order F,
    the filters, the bytes codec in the stored byte order, the compressor. Filters and
    compressors the v3 specification lacks become zarr-python's `numcodecs.<id>` codecs, in
    the places their kinds allow (array->array filters before the bytes, bytes->bytes after);
    a chain v3 cannot express that way raises CodecError."""
    chain = _Chain(md.data_type.stored)
    if md.order == "F" and md.ndim > 1:
        chain.codecs.append({"name": "transpose",
                             "configuration": {"order": list(reversed(range(md.ndim)))}})
    filters = list(md.filters or [])
    if md.dtype.hasobject:  # the object codec (v2's first filter) makes the bytes
        chain.codecs.append({"name": md._object_codec(), "configuration": {}})
        chain.array = False
        filters = filters[1:]
    for i, config in enumerate(filters):
        chain.add(config, f"{where}: filters[{i}]")
    if md.compressor is not None:
        chain.add(md.compressor, f"{where}: compressor")
    chain.to_bytes()
    return chain.codecs


#: Members of numcodecs filters that name a data type: numcodecs views the values it is given
#: in that type, so it must be the values' own.
_TYPE_MEMBERS = ("dtype", "decode_dtype")
#: ... and those naming the type the filter produces.
_OUTPUT_MEMBERS = ("astype", "encode_dtype")


class _Chain:
    """A v3 codec chain built from a v2 chunk's filters and compressor, in their order."""

    def __init__(self, stored: np.dtype) -> None:
        self.codecs: list[dict[str, Any]] = []
        self.dtype = stored  # of the values the next filter receives, in their byte order
        self.array = True  # still an array (else: bytes)

    def to_bytes(self) -> None:
        if self.array:
            self.codecs.append(_bytes_codec(self.dtype, _ENDIAN[self.dtype.byteorder]))
            self.array = False

    def add(self, config: dict[str, Any], where: str) -> None:
        config = sized(config, self.dtype.itemsize)
        full = load_numcodec(config, where=where).get_config()  # numcodecs' defaults filled in
        codec_id = full.pop("id")
        if codec_id in _CORE:
            self.to_bytes()
            self.codecs.append(v3_compressor({"id": codec_id, **full}, self.dtype.itemsize,
                                             where=where))
            return
        kind = _numcodecs_kind(codec_id, where)
        if kind is BytesBytesCodec:
            self.to_bytes()
        elif not self.array:
            raise CodecError(f"{where}: {codec_id!r} takes an array and follows a codec that "
                             "made bytes; a Zarr v3 chain cannot place it there")
        else:
            full = self._typed(codec_id, full, where)
            self.array = kind is not ArrayBytesCodec
        self.codecs.append({"name": PREFIX + codec_id, "configuration": full})

    def _typed(self, codec_id: str, config: dict[str, Any], where: str) -> dict[str, Any]:
        """`config`, checked against the values it receives: numcodecs views them in its
        configured type (byte order included: the filter is then handed values in that order,
        as zarr-python does); the type it produces is what the next codec receives."""
        for key in _TYPE_MEMBERS:
            if config.get(key) is not None and np.dtype(config[key]) != self.dtype:
                raise CodecError(f"{where}: {codec_id!r} views the values as {config[key]!r}, "
                                 f"not their own type {self.dtype.str!r}; Zarr v3 cannot say so")
        out = next((config[k] for k in _OUTPUT_MEMBERS if config.get(k) is not None), None)
        if codec_id == "packbits":
            out = "|u1"
        if out is not None:
            self.dtype = np.dtype(out)
        return config


_CORE = ("blosc", "zstd", "gzip", "crc32c")  # compressors with a v3 codec of the same bytes
_ENDIAN = {">": "big", "<": "little", "|": "little",
           "=": "little" if np.little_endian else "big"}


def _numcodecs_kind(codec_id: str, where: str) -> type:
    kind = codec_kind(PREFIX + codec_id)
    if kind is None:
        raise CodecError(f"{where}: {codec_id!r} has no Zarr v3 codec (v3 has blosc, gzip, "
                         "zstd and crc32c; zarr-python's numcodecs.* codecs add "
                         f"{', '.join(_numcodecs_ids())})")
    return kind


def _numcodecs_ids() -> list[str]:
    return [n[len(PREFIX):] for n in registered_codecs() if n.startswith(PREFIX)]


def _copy_compressor(md: ArrayMetadataV2, where: str) -> dict[str, Any] | None:
    """The v3 codec for the v2 compressor, or zstd if it has none."""
    try:
        return v3_compressor(md.compressor, md.dtype.itemsize, where=where)
    except CodecError:
        return dict(DEFAULT_V3_COMPRESSOR)


def v3_from_v2(md: ArrayMetadataV2, *, exact: bool, where: str) -> dict[str, Any]:
    """The zarr.json document for the array `md` describes (see the module docstring)."""
    data_type = v3_data_type(md, where)
    attributes = {k: v for k, v in md.attributes.items() if k != DIMENSIONS_ATTRIBUTE}
    fill = md.effective_fill_value if md.dtype.hasobject else \
        np.asarray(md.effective_fill_value).astype(data_type.dtype)[()]
    doc: dict[str, Any] = {
        "zarr_format": 3, "node_type": "array", "shape": list(md.shape),
        "data_type": data_type.to_json(),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(md.chunks)}},
        "chunk_key_encoding": {"name": "v2", "configuration": {
            "separator": md.dimension_separator or "."}} if exact else
        {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": data_type.fill_value_to_json(fill),
        "codecs": v3_codecs(md, exact=exact, where=where),
        "attributes": attributes,
    }
    if md.dimension_names is not None:
        doc["dimension_names"] = list(md.dimension_names)
    return doc

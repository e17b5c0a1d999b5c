"""The Zarr v2 chunk pipeline as one array->bytes codec, over numcodecs.

A v2 chunk is: the elements in the stored byte order (in C or F layout; F is a transpose codec
in front of this one), passed through the `filters` in order, then the `compressor`. The filters
are not array->array codecs in the v3 sense (`vlen-utf8` turns an object array into bytes,
`packbits` changes the length), and the compressor must see the filtered *typed* array (blosc
takes its shuffle element size from it), so the three stages form a single codec. It is not
registered under a v3 name: v2 codec ids are not v3 codec names.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar, Self

import numcodecs
import numcodecs.blosc
import numcodecs.pickles
import numcodecs.registry
import numpy as np
from numcodecs.abc import Codec as Numcodec
from numcodecs.compat import ensure_contiguous_ndarray_like

from ..errors import CodecError, CorruptDataError
from .base import ArrayBytesCodec, Buffer, ChunkSpec
from .bytes import value_mask
from .vlen import UNENCODABLE, exact_values, first_refused, first_unencodable, position

#: Codecs that turn object arrays into bytes (and back); object arrays need one of them.
OBJECT_CODECS = frozenset({"vlen-utf8", "vlen-bytes", "vlen-array", "json2", "msgpack2",
                           "pickle", "categorize"})
_BLOSC_CNAMES = frozenset(numcodecs.blosc.list_compressors())


def load_numcodec(config: Any, *, where: str) -> Numcodec:
    """The numcodecs codec for a v2 codec object (`{"id": ..., ...}`); errors name the id."""
    if not isinstance(config, dict) or not isinstance(config.get("id"), str):
        raise CodecError(f"{where}: expected an object with a string \"id\", got {config!r}")
    codec_id = config["id"]
    if codec_id == "pickle" and not getattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE",
                                            True):
        raise CodecError(f"{where}: codec 'pickle' refused: decoding it runs arbitrary code "
                         "(numcodecs.pickles.ALLOW_UNSAFE_PICKLE_DECODE = True for trusted data)")
    if numcodecs.registry.codec_registry.get(codec_id) is None:
        try:  # an entry point may provide it; get_codec loads those
            numcodecs.get_codec({"id": codec_id})
        except Exception:  # noqa: BLE001 - any failure here means "not available"
            raise CodecError(f"{where}: unsupported codec id {codec_id!r} "
                             "(numcodecs has no codec of that id)") from None
    cname = config.get("cname", "lz4") if codec_id == "blosc" else "lz4"
    if not isinstance(cname, str) or cname not in _BLOSC_CNAMES:
        raise CodecError(f"{where}: codec 'blosc': unknown cname {config.get('cname')!r} "
                         f"(available: {', '.join(sorted(_BLOSC_CNAMES))})")
    try:
        return numcodecs.get_codec(dict(config))
    except (TypeError, ValueError, KeyError) as e:
        # Filters refuse some data types here (quantize on integers): name the type.
        typed = f" for dtype {config['dtype']!r}" if isinstance(config.get("dtype"), str) else ""
        raise CodecError(f"{where}: codec {codec_id!r}{typed}: invalid configuration: {e}"
                         ) from None


def sized(config: dict[str, Any], itemsize: int) -> dict[str, Any]:
    """`config` with a shuffle's element size 0 (or none) made `itemsize`, the size of the
    values it receives: netCDF-C writes 0 for "the variable's type size", which numcodecs
    would take literally (leaving the bytes as they are)."""
    if config.get("id") == "shuffle" and not config.get("elementsize"):
        return {**config, "elementsize": itemsize}
    return config


def _buffer_view(array: np.ndarray) -> np.ndarray:
    """`array` in a type the buffer protocol carries, with the same bytes and element size
    (blosc shuffles by it): structured and raw types as plain void items (datetime fields have
    no buffer format; numcodecs gives zarr-python's structured chunks the whole item size),
    ml_dtypes types as unsigned integers of their size."""
    dtype = array.dtype
    if dtype.kind == "V":
        return array.reshape(-1).view(f"V{dtype.itemsize}")
    if dtype.type.__module__ == "numpy":
        return array
    width = dtype.itemsize if dtype.itemsize in (1, 2, 4, 8) else 1
    return array.reshape(-1).view(f"u{width}")


_VLEN_TYPES: dict[str, type] = {"vlen-utf8": str, "vlen-bytes": bytes}


def _is_zero(value: Any) -> bool:
    """numcodecs' vlen codecs store a value equal to 0 as empty."""
    if isinstance(value, str | bytes):
        return False
    try:
        return bool(value == 0)
    except Exception:  # noqa: BLE001 - any comparison failure means "not zero"
        return False


class V2ChunkCodec(ArrayBytesCodec):
    """Elements in `stored` byte order -> filters -> compressor (the v2 spec's "Chunks")."""

    name: ClassVar[str] = "zarr_v2_chunk"

    def __init__(self, stored: np.dtype, filters: Sequence[dict[str, Any]] | None,
                 compressor: dict[str, Any] | None, *, where: str = "") -> None:
        self.stored = np.dtype(stored)
        self._mask = value_mask(self.stored)  # sub-byte types: the value bits of each byte
        self.filter_json = list(filters or ())
        self.compressor_json = compressor
        prefix = f"{where}: " if where else ""
        self._prefix = prefix
        self.filters = tuple(load_numcodec(sized(f, self.stored.itemsize),
                                           where=f"{prefix}filters[{i}]")
                             for i, f in enumerate(self.filter_json))
        self.compressor = None if compressor is None else \
            load_numcodec(compressor, where=f"{prefix}compressor")
        ids = {f["id"] for f in self.filter_json}
        if self.stored.hasobject and not ids & OBJECT_CODECS:
            raise CodecError(f"{prefix}filters: an object ('|O') array needs an object codec "
                             f"among its filters (one of {', '.join(sorted(OBJECT_CODECS))})")

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Self:
        raise CodecError("the v2 chunk codec is built from .zarray members, not a v3 codec")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {
            "dtype": self.stored.str, "filters": self.filter_json,
            "compressor": self.compressor_json}}

    def encoded_size(self, spec: ChunkSpec) -> int | None:
        if self.filters or self.compressor is not None or self.stored.hasobject:
            return None
        return math.prod(spec.shape) * self.stored.itemsize

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> Buffer:
        if self.filters:  # some filters (bitround, ...) work in place: never on the caller's data
            data: Any = np.array(array, dtype=self.stored, order="C")
            if self._vlen_type() is not None:  # numpy's str_/bytes_ as plain str/bytes
                data = exact_values(data.reshape(-1), self._vlen_type()).reshape(data.shape)
            if data.ndim == 0 and self.filter_json[0]["id"] == "msgpack2":
                # numcodecs' MsgPack cannot take a 0-d array (it extends the element, the
                # caller's list, in place); one element is what it and zarr-python 2 decode.
                data = data.reshape(1)
        else:
            data = np.ascontiguousarray(array, dtype=self.stored)
            # Sub-byte types: unused high bits stored as zeros, as TensorStore writes them.
            data = np.bitwise_and(data.reshape(-1).view(np.uint8), self._mask) if self._mask \
                else _buffer_view(data)
        for codec, config in zip(self.filters, self.filter_json, strict=True):
            data = self._encode(codec, config, data)
        if isinstance(data, np.ndarray) and data.dtype.hasobject:
            raise CodecError("v2 chunk: the filters left an object array; an object codec "
                             "such as vlen-utf8 must come first")
        if self.compressor is not None:
            data = self._encode(self.compressor, self.compressor_json, data)
        if isinstance(data, bytes | bytearray):
            return data
        return memoryview(np.ascontiguousarray(data).reshape(-1).view(np.uint8))

    def check_compressor(self) -> None:
        """CodecError now if the compressor's settings are ones it refuses (zlib level 99,
        blosc shuffle 7): numcodecs checks most of them only when encoding, and an array
        created with them would take no write at all."""
        if self.compressor is not None:
            sample = np.zeros(16, "u1") if self.stored.hasobject else \
                _buffer_view(np.zeros(4, self.stored))
            self._encode(self.compressor, self.compressor_json, sample)

    def check_filters(self) -> None:
        """CodecError now if a filter refuses the stored data type or its settings for it:
        numcodecs checks some only when a chunk is encoded (bitround on integers or bfloat16,
        keepbits beyond the type's) or decoded (fixedscaleoffset to datetimes), and packbits
        would store only whether each byte of other types is zero. One element goes through."""
        if self.stored.hasobject:  # the object codec first; its values are checked per write
            return
        ids = [config["id"] for config in self.filter_json]
        if "packbits" in ids and self.stored != np.bool_:
            raise CodecError(f"{self._prefix}filter 'packbits' packs booleans, not "
                             f"{self.stored}")
        data: Any = np.zeros(1, self.stored)
        for codec, config in zip(self.filters, self.filter_json, strict=True):
            try:
                # a copy: some filters (bitround, ...) work in place
                encoded = codec.encode(data.copy() if isinstance(data, np.ndarray) else data)
                codec.decode(encoded)
            except Exception as e:  # noqa: BLE001 - each codec library raises its own types
                raise CodecError(f"{self._prefix}filter {config['id']!r} cannot encode "
                                 f"{self.stored} data: {type(e).__name__}: {e}") from e
            data = encoded

    def check_values(self, values: np.ndarray, what: str = "a chunk") -> None:
        """Raise CodecError naming the first element of `values` (`what`) that the object codec
        (vlen-utf8 or vlen-bytes, first among the filters) would refuse, so that a write fails
        before any chunk is stored. As numcodecs: str (bytes) values, and None or values equal
        to 0 for empty ones."""
        wanted = self._vlen_type()
        if wanted is None:
            return
        items = values.reshape(-1).tolist()
        i = first_refused(items, (wanted, type(None)), _is_zero)
        if i is not None:
            raise CodecError(f"{self._prefix}filter {self.filter_json[0]['id']!r} cannot "
                             f"store {items[i]!r} ({type(items[i]).__name__}) at "
                             f"{position(values, i)} of {what}: it stores "
                             f"{wanted.__name__} values (None for empty ones)")
        bad = first_unencodable(items) if wanted is str else None
        if bad is not None:
            raise CodecError(f"{self._prefix}filter 'vlen-utf8' cannot store {items[bad]!r} at "
                             f"{position(values, bad)} of {what}: {UNENCODABLE}")

    def _vlen_type(self) -> type | None:
        """str or bytes when the object codec is vlen-utf8 or vlen-bytes."""
        return _VLEN_TYPES.get(self.filter_json[0]["id"]) if self.filter_json else None

    def _encode(self, codec: Numcodec, config: dict[str, Any], data: Any) -> Any:
        """`codec.encode`, its library's errors as CodecError: numcodecs checks some settings
        (zlib's level, blosc's shuffle) and the values of object arrays only here."""
        try:
            return codec.encode(data)
        except Exception as e:  # noqa: BLE001 - each codec library raises its own types
            raise CodecError(f"{self._prefix}codec {config['id']!r} cannot encode a chunk: "
                             f"{type(e).__name__}: {e}") from e

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        chunk: Any = data
        if self.compressor is not None:
            chunk = self.compressor.decode(chunk)
        for codec in reversed(self.filters):
            chunk = codec.decode(chunk)
        count = math.prod(spec.shape)
        if self.stored.hasobject:
            values = np.asarray(chunk)
            if values.dtype != object or values.size != count:
                raise CorruptDataError(f"v2 chunk: decoded {values.size} {values.dtype} "
                                       f"values, expected {count} objects")
            return values.reshape(spec.shape)
        raw = ensure_contiguous_ndarray_like(chunk).reshape(-1).view(np.uint8)
        if raw.size != count * self.stored.itemsize:
            raise CorruptDataError(
                f"v2 chunk: decoded to {raw.size} bytes, a chunk of shape {spec.shape} and "
                f"type {self.stored} has {count * self.stored.itemsize}")
        if self._mask:  # the unused high bits are ignored (and ml_dtypes may not ignore them)
            raw = np.bitwise_and(raw, self._mask)
        values = raw.view(self.stored).reshape(spec.shape)
        return values if self.stored == spec.dtype else values.astype(spec.dtype)

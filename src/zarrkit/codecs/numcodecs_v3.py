"""numcodecs' codecs under v3 names, `numcodecs.<id>`, as zarr-python writes them.

They are not in the v3 specification: zarr-python (`zarr.codecs.numcodecs`, formerly
`numcodecs.zarr3`) names a numcodecs codec `numcodecs.<id>`, with the codec's configuration less
its `id` (always written, if empty too: zarr-python requires the member), and places it by kind:
compressors and checksums are bytes->bytes, filters array->array, pcodec and zfpy array->bytes.
Bytes->bytes codecs see the bytes as bytes (element size 1), as zarr-python passes them. The
members zarr-python derives from the data type when missing (shuffle's `elementsize`, the
filters' `dtype`, astype's `decode_dtype`) are derived here the same way, and written.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Self

import numpy as np

from ..errors import CodecError
from ._buffers import byte_view
from .base import ArrayArrayCodec, ArrayBytesCodec, Buffer, BytesBytesCodec, ChunkSpec
from .numcodecs_v2 import V2ChunkCodec, load_numcodec
from .registry import register_codec

PREFIX = "numcodecs."
CHECKSUMS = ("crc32", "crc32c", "adler32", "fletcher32", "jenkins_lookup3")
COMPRESSORS = ("blosc", "lz4", "zstd", "zlib", "gzip", "bz2", "lzma")


def _native(dtype: Any) -> np.dtype:
    return np.dtype(dtype).newbyteorder("=")


def _retyped(spec: ChunkSpec, dtype: Any, shape: tuple[int, ...] | None = None) -> ChunkSpec:
    """`spec` for values of another data type (and shape), its fill value cast as numpy does."""
    dtype = _native(dtype)
    try:
        fill = np.asarray(spec.fill_value).astype(dtype)[()]
    except (TypeError, ValueError):
        fill = np.zeros((), dtype)[()]
    return ChunkSpec(spec.shape if shape is None else shape, dtype, fill)


def _shaped(result: Any, spec: ChunkSpec) -> np.ndarray:
    """A numcodecs filter's result as `spec` says: values converted to the native byte order,
    bytes reinterpreted as another type (bitround hands back the integer view of its floats,
    whose bytes are the encoding)."""
    out = np.asarray(result)
    if out.dtype != spec.dtype:
        out = out.astype(spec.dtype) if _native(out.dtype) == spec.dtype else \
            np.ascontiguousarray(out).reshape(-1).view(spec.dtype)
    return out.reshape(spec.shape)


def _buffer(encoded: Any) -> Buffer:
    """A numcodecs result (bytes, or an array for some codecs) as a flat buffer."""
    if isinstance(encoded, bytes | bytearray | memoryview):
        return encoded
    return memoryview(np.ascontiguousarray(encoded).reshape(-1).view(np.uint8))


class _Numcodec:
    """The configuration, and the numcodecs codec made from it once it is complete."""

    name: ClassVar[str]
    codec_id: ClassVar[str]
    #: Members derived from the data type by `evolve` when missing.
    derived: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: dict[str, Any]) -> None:
        if config.get("id", self.codec_id) != self.codec_id:
            raise CodecError(f"{self.name} codec: 'id' must be {self.codec_id!r} or absent, "
                             f"got {config['id']!r}")
        self.config = {k: v for k, v in config.items() if k != "id"}
        complete = all(self.config.get(k) is not None for k in self.derived)
        self._codec = load_numcodec({"id": self.codec_id, **self.config},
                                    where=f"{self.name} codec") if complete else None

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Self:
        return cls(config)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": dict(self.config)}

    def _derive(self, spec: ChunkSpec) -> dict[str, Any]:
        """Values for the `derived` members, from the representation the codec receives."""
        return dict.fromkeys(self.derived, str(spec.dtype))

    def evolve(self, spec: ChunkSpec) -> Any:
        missing = {k: v for k, v in self._derive(spec).items() if self.config.get(k) is None}
        codec = type(self)({**self.config, **missing}) if missing else self
        codec._check(spec)
        return codec

    def _encode(self, data: Any) -> Any:
        """`self._codec.encode`, its library's errors as CodecError: numcodecs checks some
        settings (shuffle's elementsize against the chunk's size) only here."""
        try:
            return self._codec.encode(data)  # type: ignore[union-attr]
        except Exception as e:  # noqa: BLE001 - each codec library raises its own types
            raise CodecError(f"{self.name} codec cannot encode a chunk: {type(e).__name__}: "
                             f"{e}") from e

    def _check(self, spec: ChunkSpec) -> None:
        """Refuse a configured data type that is not the data's: numcodecs would reinterpret
        the bytes of one as the other."""
        for key in ("dtype", "decode_dtype"):
            if key in self.derived and _native(self.config[key]) != spec.dtype:
                raise CodecError(f"{self.name} codec: {key} {self.config[key]!r} is not the "
                                 f"data type it receives, {spec.dtype}")


class NumcodecsBytesBytes(_Numcodec, BytesBytesCodec):
    def check_settings(self) -> None:
        """CodecError now if numcodecs refuses the settings (zlib level 99, bz2 level 0),
        which it checks only when encoding: an array created with them takes no write."""
        self._encode(bytes(16))

    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        return _buffer(self._encode(byte_view(data)))

    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        return _buffer(self._codec.decode(byte_view(data)))  # type: ignore[union-attr]


class NumcodecsChecksum(NumcodecsBytesBytes):
    def encoded_size(self, input_size: int) -> int | None:
        return input_size + 4


class NumcodecsArrayArray(_Numcodec, ArrayArrayCodec):
    #: The members naming the type numcodecs views its input in, when encoding and decoding.
    encode_input: ClassVar[tuple[str, ...]] = ()
    decode_input: ClassVar[tuple[str, ...]] = ()

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        # A copy: some filters (bitround, ...) work in place, never on the caller's data.
        given = np.array(self._ordered(array, self.encode_input), order="C")
        return _shaped(self._encode(given), self.resolve(spec))

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        given = self._ordered(array, self.decode_input)
        given = given if given.flags.writeable else given.copy()  # decoded views are read-only
        out = self._codec.decode(np.ascontiguousarray(given))  # type: ignore[union-attr]
        return _shaped(out, spec)

    def _ordered(self, array: np.ndarray, keys: tuple[str, ...]) -> np.ndarray:
        """The native `array` in the byte order of the type numcodecs will view it in: a
        configured big-endian type is given big-endian values, as zarr-python gives them (it
        hands filters the bytes codec's order, which `zarr migrate v3` writes into the type)."""
        want = next((self.config[k] for k in keys if self.config.get(k) is not None), None)
        if want is None or np.dtype(want) == array.dtype:
            return array
        return array.astype(np.dtype(want))


class NumcodecsArrayBytes(_Numcodec, ArrayBytesCodec):
    def encode(self, array: np.ndarray, spec: ChunkSpec) -> Buffer:
        return _buffer(self._encode(np.ascontiguousarray(array)))

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        return _shaped(self._codec.decode(bytes(data)), spec)  # type: ignore[union-attr]


class _Typed(NumcodecsArrayArray):
    """A filter configured with the data type it receives, and optionally `astype`, the type
    it produces (delta, fixedscaleoffset, quantize)."""

    derived = ("dtype",)
    encode_input, decode_input = ("dtype",), ("astype", "dtype")

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        astype = self.config.get("astype")
        return spec if astype is None else _retyped(spec, astype)


@register_codec
class NumcodecsAsType(NumcodecsArrayArray):
    name, codec_id = PREFIX + "astype", "astype"
    derived = ("decode_dtype",)
    encode_input, decode_input = ("decode_dtype",), ("encode_dtype",)

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        return _retyped(spec, self.config["encode_dtype"])


@register_codec
class NumcodecsPackBits(NumcodecsArrayArray):
    name, codec_id = PREFIX + "packbits", "packbits"

    def _check(self, spec: ChunkSpec) -> None:
        if spec.dtype != np.bool_:
            raise CodecError(f"{self.name} codec: packs booleans, not {spec.dtype}")

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        # One byte saying how many bits of the last byte are padding, then the packed bits.
        return _retyped(spec, np.uint8, (1 + math.ceil(math.prod(spec.shape) / 8),))


@register_codec
class NumcodecsShuffle(NumcodecsBytesBytes):
    name, codec_id = PREFIX + "shuffle", "shuffle"
    derived = ("elementsize",)

    def _derive(self, spec: ChunkSpec) -> dict[str, Any]:
        return {"elementsize": spec.dtype.itemsize}


def _register(base: type, codec_id: str) -> None:
    name = "Numcodecs" + codec_id.title().replace("_", "")
    register_codec(type(name, (base,), {"name": PREFIX + codec_id, "codec_id": codec_id,
                                        "__module__": __name__}))


for _id in ("delta", "fixedscaleoffset", "quantize"):
    _register(_Typed, _id)
_register(NumcodecsArrayArray, "bitround")
for _id in COMPRESSORS:
    _register(NumcodecsBytesBytes, _id)
for _id in CHECKSUMS:
    _register(NumcodecsChecksum, _id)
for _id in ("pcodec", "zfpy"):
    _register(NumcodecsArrayBytes, _id)


def check_creatable(chain: Any) -> None:
    """CodecError now for what numcodecs would refuse only when a chunk is written: the
    settings of its compressors and the data types its filters receive, for a v3 chain or a
    v2 array's compressor and filters. Called before a new array's metadata is stored."""
    check_settings(chain.codecs)
    if isinstance(chain.array_bytes, V2ChunkCodec):
        chain.array_bytes.check_compressor()
    check_types(chain)


def check_types(chain: Any) -> None:
    """CodecError now if a numcodecs filter or array->bytes codec of `chain` (a CodecChain,
    a sharding codec's inner chain included) refuses the data type it receives, or its
    settings for it: numcodecs checks some only when a chunk is encoded (bitround on integers
    or bfloat16, keepbits beyond the type's) or decoded (fixedscaleoffset to datetimes), and an
    array created with them would take no write. One element of each type goes through."""
    spec = chain.spec
    small = ChunkSpec((1,) * len(spec.shape), spec.dtype, spec.fill_value)
    for codec in chain.codecs:
        if isinstance(codec, NumcodecsArrayArray | NumcodecsArrayBytes):
            _round_trip(codec, small)
        if not isinstance(codec, ArrayArrayCodec):
            break
        small = codec.resolve(small)
    inner = getattr(chain.array_bytes, "inner", None)  # a sharding codec's
    if inner is not None:
        check_types(inner)
    if isinstance(chain.array_bytes, V2ChunkCodec):  # a v2 array's filters
        chain.array_bytes.check_filters()


def _round_trip(codec: NumcodecsArrayArray | NumcodecsArrayBytes, spec: ChunkSpec) -> None:
    sample = np.zeros(spec.shape, spec.dtype)
    try:
        codec.decode(codec.encode(sample, spec), spec)
    except Exception as e:  # noqa: BLE001 - each codec library raises its own types
        cause = e.__cause__ if isinstance(e, CodecError) and e.__cause__ is not None else e
        raise CodecError(f"{codec.name} codec cannot encode {spec.dtype} data: "
                         f"{type(cause).__name__}: {cause}") from e


def check_settings(codecs: Any) -> None:
    """`check_settings` of every numcodecs bytes-to-bytes codec in `codecs`, those of a
    sharding codec's inner chunks and index included."""
    for codec in codecs:
        if isinstance(codec, NumcodecsBytesBytes):
            codec.check_settings()
        check_settings(getattr(codec, "codecs", ()))
        check_settings(getattr(codec, "index_codecs", ()))


"""Zarr v3 codecs: the registry, one module per codec, the codec chain and sharding.

Importing this package registers every built-in codec.
"""

from .base import ArrayArrayCodec, ArrayBytesCodec, Buffer, BytesBytesCodec, ChunkSpec, Codec
from .blosc import BloscCodec
from .bytes import BytesCodec
from .cast_value import CastValueCodec
from .chain import CodecChain
from .crc32c import Crc32cCodec
from .gzip import GzipCodec
from .numcodecs_v3 import PREFIX as NUMCODECS_PREFIX
from .registry import get_codec_class, parse_codec, register_codec, registered_codecs
from .scale_offset import ScaleOffsetCodec
from .sharding import ShardingCodec
from .transpose import TransposeCodec
from .vlen import VLenBytesCodec, VLenUTF8Codec
from .zstd import ZstdCodec

__all__ = [
    "ArrayArrayCodec", "ArrayBytesCodec", "BloscCodec", "Buffer", "BytesBytesCodec", "BytesCodec",
    "CastValueCodec", "ChunkSpec", "Codec", "CodecChain", "Crc32cCodec", "GzipCodec",
    "NUMCODECS_PREFIX", "ScaleOffsetCodec", "ShardingCodec", "TransposeCodec",
    "VLenBytesCodec", "VLenUTF8Codec", "ZstdCodec", "get_codec_class", "parse_codec", "register_codec", "registered_codecs",
]

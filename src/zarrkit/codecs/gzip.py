"""The `gzip` codec: the gzip file format (RFC 1952), via the standard library's zlib."""

from __future__ import annotations

import zlib
from typing import Any, Self

from ..errors import CorruptDataError
from ._config import check_members, get_int
from .base import Buffer, BytesBytesCodec, ChunkSpec
from .registry import register_codec

_GZIP_WBITS = 31  # 16 + 15: gzip header and trailer, 32 KiB window


@register_codec
class GzipCodec(BytesBytesCodec):
    name = "gzip"

    def __init__(self, level: int = 5) -> None:
        self.level: int = get_int({"level": level}, "level", self.name, lo=0, hi=9)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Self:
        check_members(config, ("level",), cls.name)
        # Required: zarr-python and TensorStore disagree on the default (5 vs 6).
        return cls(get_int(config, "level", cls.name))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {"level": self.level}}

    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        # zlib writes mtime 0 and no file name, so equal data always gives equal bytes.
        return zlib.compress(data, self.level, wbits=_GZIP_WBITS)

    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        return _inflate(data, None)

    def decode_sized(self, data: Buffer, spec: ChunkSpec, size: int) -> Buffer:
        """Decode output that must be exactly `size` bytes; never inflates past that (bombs)."""
        return _inflate(data, size)


def _inflate(data: Buffer, size: int | None) -> bytes:
    parts: list[bytes] = []
    total = 0
    rest: Buffer = data
    try:
        # A gzip stream may hold several members, optionally padded with zero bytes (as gzip(1)).
        while True:
            inflater = zlib.decompressobj(_GZIP_WBITS)
            part = inflater.decompress(rest, 0 if size is None else size - total + 1)
            total += len(part)
            parts.append(part)
            if size is not None and total > size:
                raise CorruptDataError(f"gzip codec: data inflates to more than the expected {size} bytes")
            if not inflater.eof:
                raise CorruptDataError("gzip codec: compressed data is truncated")
            rest = inflater.unused_data.lstrip(b"\0")
            if not rest:
                break
    except zlib.error as e:
        raise CorruptDataError(f"gzip codec: invalid compressed data ({e})") from None
    if size is not None and total != size:
        raise CorruptDataError(f"gzip codec: data inflates to {total} bytes, expected {size}")
    return parts[0] if len(parts) == 1 else b"".join(parts)

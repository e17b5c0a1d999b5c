"""The `crc32c` codec: appends a little-endian CRC-32C (Castagnoli) of the data."""

from __future__ import annotations

from typing import Any, Self

from crc32c import crc32c as _crc32c  # hardware-accelerated where the CPU supports it

from ..errors import ChecksumError, CorruptDataError
from ._buffers import byte_view
from ._config import check_members
from .base import Buffer, BytesBytesCodec, ChunkSpec
from .registry import register_codec


@register_codec
class Crc32cCodec(BytesBytesCodec):
    fast_decode = True
    name = "crc32c"

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Self:
        check_members(config, (), cls.name)
        return cls()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name}

    def encoded_size(self, input_size: int) -> int:
        return input_size + 4

    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        # join copies `data` once; `data + crc` on a memoryview would need a bytes() copy first.
        return b"".join((data, _crc32c(data).to_bytes(4, "little")))

    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        view = byte_view(data)
        if len(view) < 4:
            raise CorruptDataError(f"crc32c codec: {len(view)} bytes is too short to hold a checksum")
        payload = view[:-4]
        stored = int.from_bytes(view[-4:], "little")
        actual = _crc32c(payload)
        if stored != actual:
            raise ChecksumError(f"crc32c codec: checksum mismatch (stored {stored:#010x}, computed {actual:#010x})")
        return payload

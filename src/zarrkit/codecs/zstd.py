"""The `zstd` codec (Zstandard): compressed by python-zstandard (reused contexts); decoded by the
system's libzstd when there is one (`_libzstd`: faster, and straight into the destination), else by
python-zstandard, and by numcodecs for frames that a one-shot decoder would not check whole (no
declared size, trailing bytes)."""

from __future__ import annotations

import threading
from functools import partial
from typing import Any, Self

import numcodecs
import numpy as np
import zstandard

from ..errors import CorruptDataError
from . import _libzstd, _runs
from ._buffers import address, byte_view, nbytes
from ._config import check_members, get_bool, get_int
from .base import Buffer, BytesBytesCodec, ChunkSpec
from .registry import register_codec

_MAGIC = b"\x28\xb5\x2f\xfd"


@register_codec
class ZstdCodec(BytesBytesCodec):
    name = "zstd"

    def __init__(self, level: int = 0, checksum: bool = False) -> None:
        # Level 0 means libzstd's default level (3), as zarr-python writes it.
        self.level: int = get_int({"level": level}, "level", self.name, lo=-131072, hi=22)
        self.checksum: bool = get_bool({"checksum": checksum}, "checksum", self.name)
        self._zstd = numcodecs.Zstd(level=self.level, checksum=self.checksum)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Self:
        check_members(config, ("level", "checksum"), cls.name)
        return cls(get_int(config, "level", cls.name, default=0),
                   get_bool(config, "checksum", cls.name, default=False))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {"level": self.level, "checksum": self.checksum}}

    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        return _compressor(self.level, self.checksum).compress(data)

    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        if frame_content_size(data) == 0:
            return b""  # numcodecs rejects empty frames
        try:
            return self._zstd.decode(data)
        except Exception as e:  # numcodecs raises RuntimeError/ValueError/MemoryError
            raise CorruptDataError(f"zstd codec: invalid compressed data ({e})") from None

    @property
    def many_decoder(self) -> _runs.Decoder | None:
        """Decodes runs of this codec's chunks by one call (`_runs`); None without it."""
        return _runs.zstd_decoder if _libzstd.available else None

    def many_encoder(self, size: int) -> _runs.Encoder | None:
        """Encodes runs of chunks of `size` bytes by one call (`_runs.zstd_encoder`: libzstd
        into a reused buffer, where python-zstandard returns new memory per chunk, ~140 pages
        to fault in for a chunk of 512 KiB); None without it."""
        if _runs.zstd_encoder is None:
            return None
        return partial(_runs.zstd_encoder, (self.level, self.checksum))

    @staticmethod
    def run_room(size: int) -> int:
        """The most a chunk of `size` bytes takes in a run (`many_encoder`)."""
        return _libzstd.compress_bound(size)

    def decode_sized(self, data: Buffer, spec: ChunkSpec, size: int) -> Buffer:
        """Decode output that must be exactly `size` bytes, checked before any allocation (bombs)."""
        return self._decode_sized(data, size, None)

    def decode_into(self, data: Buffer, spec: ChunkSpec, size: int, dest: memoryview) -> Buffer:
        """`decode_sized`, into `dest` (exactly `size` writable bytes) when libzstd or numcodecs
        decodes; python-zstandard returns memory of its own."""
        return self._decode_sized(data, size, dest)

    def _decode_sized(self, data: Buffer, size: int, dest: memoryview | None) -> Buffer:
        declared = frame_content_size(data)
        # RFC 8878: one frame or more; the first of several declares only its own share.
        lone = declared is not None and _frame_end(byte_view(data)) == nbytes(data)
        if declared is not None and (declared > size or lone and declared != size):
            raise CorruptDataError(f"zstd codec: frame declares {declared} decoded bytes, expected {size}")
        if declared == 0 and lone:
            return b""  # numcodecs rejects empty frames
        if lone:
            # One well-formed frame, nothing after it: the system's libzstd (fastest, and into
            # `dest`), else python-zstandard's one-shot decoder with a reused context (~1.3x
            # faster than numcodecs'), into memory of its own.
            src = address(data) if _libzstd.available else None
            if src is not None:
                out = memoryview(np.empty(size, np.uint8)) if dest is None else dest
                target = address(out)
                if isinstance(target, int):  # writable (a read-only view has no address)
                    return _decode_with_libzstd(src, nbytes(data), out, target)
            try:
                return _decompressor().decompress(data, max_output_size=size)
            except Exception as e:  # zstandard.ZstdError
                raise CorruptDataError(f"zstd codec: invalid compressed data ({e})") from None
        if declared is not None:  # several frames: numcodecs would trust the first one's size
            return _decode_frames(data, size, dest)
        if dest is None:
            # Without a declared size numcodecs would stream without bound; a fixed destination
            # both caps the output and makes it check the exact length.
            dest = memoryview(bytearray(size))
        try:
            return self._zstd.decode(data, dest)
        except Exception as e:
            raise CorruptDataError(f"zstd codec: invalid compressed data ({e})") from None

    @staticmethod
    def stops_early(size: int) -> bool:
        """Whether a prefix of `size` decoded bytes can be decoded alone: not when the frame
        is a single block (up to 128 KiB), which is decoded whole anyway."""
        return size > _BLOCK_MAX

    def decode_prefix(self, data: Buffer, spec: ChunkSpec, size: int, nbytes: int,
                      dest: memoryview) -> bool:
        """Decode only the first `nbytes` of the `size` decoded bytes into `dest`, stopping
        early (zstd decodes block by block); False, with nothing done, when that would not be
        faster (see PREFIX_MAX_SHARE) or would not check the frame: no declared size of exactly
        `size`, or a content checksum to verify."""
        view = byte_view(data)
        src = address(data) if _libzstd.available else None
        target = address(dest) if src is not None else None
        if not isinstance(target, int):  # both addressable (read-only views are not)
            src = None
        share = 1.0 if src is not None else PREFIX_MAX_SHARE
        if not 0 < nbytes < size or nbytes > size * share or size <= _BLOCK_MAX \
                or frame_content_size(view) != size or view[4] & 4:
            return False
        if src is not None:
            got = _libzstd.decompress_prefix(src, len(view), target, nbytes)
            if got < 0:
                return False  # decoded whole instead, which names the error
        else:
            got = _prefix_with_zstandard(view, dest[:nbytes])
        if got != nbytes:
            raise CorruptDataError(f"zstd codec: frame ends after {got} of its {size} bytes")
        return True


def _decode_with_libzstd(src: int | bytes, src_size: int, out: memoryview, target: int
                         ) -> Buffer:
    """Decode into `out` (at address `target`), which must fill exactly."""
    try:
        got = _libzstd.decompress(src, src_size, target, nbytes(out))
    except ValueError as e:
        raise CorruptDataError(f"zstd codec: invalid compressed data ({e})") from None
    if got != nbytes(out):
        raise CorruptDataError(f"zstd codec: frame holds {got} decoded bytes, expected "
                               f"{nbytes(out)}")
    return out


def _prefix_with_zstandard(view: memoryview, target: memoryview) -> int:
    got = 0
    try:
        with _decompressor().stream_reader(view) as reader:
            while got < len(target):
                n = reader.readinto(target[got:])
                if not n:
                    break
                got += n
    except Exception as e:  # zstandard.ZstdError
        raise CorruptDataError(f"zstd codec: invalid compressed data ({e})") from None
    return got


_local = threading.local()
#: zstd decodes whole blocks of up to 128 KiB: a frame no larger is one block, no prefix to stop
#: after. python-zstandard's streaming decodes cost ~1.3x more per byte than one call (measured
#: on 512 KiB chunks: half of one 725 us against 885 us for all, 70% 1144 us), so with it a
#: prefix is decoded alone only when it is at most half the frame; libzstd's own streaming
#: costs about what one call does (70%: 695 us against 725 us), so with it any prefix is.
_BLOCK_MAX = 128 << 10
PREFIX_MAX_SHARE = 0.5


def _compressor(level: int, checksum: bool) -> zstandard.ZstdCompressor:
    """This thread's compressor for (level, checksum). Reusing its context, rather than making
    one per chunk as numcodecs does, compresses 128 KiB chunks ~1.3x faster (measured)."""
    cache = getattr(_local, "compressors", None)
    if cache is None:
        cache = _local.compressors = {}
    found = cache.get((level, checksum))
    if found is None:
        found = cache[(level, checksum)] = zstandard.ZstdCompressor(
            level=level, write_checksum=checksum, write_content_size=True)
    return found


def _decode_frames(data: Buffer, size: int, dest: memoryview | None) -> Buffer:
    """Concatenated frames, which must decode to exactly `size` bytes (no more than one byte
    beyond it is decoded: no bombs)."""
    if not _whole_frames(byte_view(data)):  # python-zstandard's reader stops at a cut quietly
        raise CorruptDataError("zstd codec: invalid compressed data (a frame is cut short or "
                               "followed by other bytes)")
    out = bytearray()
    try:
        with zstandard.ZstdDecompressor().stream_reader(byte_view(data),
                                                        read_across_frames=True) as reader:
            while len(out) <= size and (piece := reader.read(size + 1 - len(out))):
                out += piece
    except zstandard.ZstdError as e:
        raise CorruptDataError(f"zstd codec: invalid compressed data ({e})") from None
    if len(out) != size:
        held = f"more than {size}" if len(out) > size else len(out)
        raise CorruptDataError(f"zstd codec: frames hold {held} decoded bytes, expected {size}")
    if dest is None:
        return out
    dest[:] = out
    return dest


def _whole_frames(view: memoryview) -> bool:
    """Whether `view` is a run of whole frames, zstd or skippable ones (RFC 8878 3.1)."""
    pos = 0
    while pos < len(view):
        if len(view) - pos >= 8 and view[pos] & 0xF0 == 0x50 and view[pos + 1:pos + 4] == b"\x2a\x4d\x18":
            pos += 8 + int.from_bytes(view[pos + 4:pos + 8], "little")  # a skippable frame
            continue
        end = _frame_end(view[pos:])
        if end is None:
            return False
        pos += end
    return pos == len(view)


def _decompressor() -> zstandard.ZstdDecompressor:
    found = getattr(_local, "decompressor", None)
    if found is None:
        found = _local.decompressor = zstandard.ZstdDecompressor()
    return found


def _frame_end(view: memoryview) -> int | None:
    """Where the frame starting at 0 ends, from its header and block headers (RFC 8878 3.1.1),
    or None if they are not all there. python-zstandard decodes one frame and ignores what
    follows; this tells whether anything does."""
    if len(view) < 6 or view[:4] != _MAGIC:
        return None
    descriptor = view[4]
    single_segment = (descriptor >> 5) & 1
    fcs = (single_segment, 2, 4, 8)[descriptor >> 6]
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3] + fcs
    while pos + 3 <= len(view):
        header = view[pos] | view[pos + 1] << 8 | view[pos + 2] << 16
        kind, size = (header >> 1) & 3, header >> 3
        pos += 3 + (1 if kind == 1 else size)  # an RLE block stores one byte
        if header & 1:  # the last block
            return pos + (4 if descriptor & 4 else 0)  # the content checksum
    return None


def frame_content_size(data: Buffer) -> int | None:
    """The decoded size declared in the first zstd frame header, or None if absent or unreadable."""
    view = byte_view(data)
    if len(view) < 6 or view[:4] != _MAGIC:
        return None
    descriptor = view[4]
    single_segment = (descriptor >> 5) & 1
    fcs_flag = descriptor >> 6
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3]
    width = (single_segment, 2, 4, 8)[fcs_flag]  # flag 0: one byte only in single-segment frames
    if width == 0 or len(view) < pos + width:
        return None
    value = int.from_bytes(view[pos:pos + width], "little")
    return value + 256 if width == 2 else value

"""The `blosc` codec (Blosc 1 container format), via numcodecs."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Self

import numcodecs
from numcodecs import blosc as _blosc

from ..errors import CodecError, CorruptDataError
from ..scratch import SCRATCH_LIMIT, scratch
from . import _cblosc, _runs
from ._buffers import address, byte_view, nbytes
from ._config import check_members, get_choice, get_int
from .base import Buffer, BytesBytesCodec, ChunkSpec
from .registry import register_codec

CNAMES = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")
SHUFFLES = ("noshuffle", "shuffle", "bitshuffle")
_HEADER = 16
_MAX_INPUT = _blosc.MAX_BUFFERSIZE
# zarrkit runs codecs on its own thread pool (and in the calling thread). numcodecs would give
# calls from the main thread c-blosc's internal threads as well, which only adds hand-offs and
# contention on top (2x slower small reads measured), so unless the user chose, it is off.
if _blosc.use_threads is None:
    _blosc.use_threads = False
_AVAILABLE = frozenset(_blosc.list_compressors())  # numcodecs' c-blosc is built without snappy
_HEADER_CODES = ("blosclz", "lz4", "snappy", "zlib", "zstd")  # header flags, bits 5-7
_MEMCPYED = 0x02  # header flag: stored uncompressed


@register_codec
class BloscCodec(BytesBytesCodec):
    name = "blosc"

    def __init__(self, cname: str, clevel: int = 5, shuffle: str | None = None,
                 typesize: int | None = None, blocksize: int = 0) -> None:
        n = self.name
        self.cname: str = get_choice({"cname": cname}, "cname", n, CNAMES)
        self.clevel: int = get_int({"clevel": clevel}, "clevel", n, lo=0, hi=9)
        # shuffle/typesize may be left to evolve(), which derives them from the data type.
        self.shuffle: str | None = get_choice(_given("shuffle", shuffle), "shuffle", n, SHUFFLES, default=None)
        self.typesize: int | None = get_int(_given("typesize", typesize), "typesize", n, lo=1, default=None)
        self.blocksize: int = get_int({"blocksize": blocksize}, "blocksize", n, lo=0)
        self._cname = self.cname.encode()
        self._shuffle = SHUFFLES.index(self.shuffle or "noshuffle")  # c-blosc's code for it
        self._blosc = numcodecs.Blosc(
            cname=self.cname, clevel=self.clevel, shuffle=self._shuffle,
            blocksize=self.blocksize, typesize=self.typesize or 1)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Self:
        n = cls.name
        check_members(config, ("cname", "clevel", "shuffle", "typesize", "blocksize"), n)
        # cname is required: zarr-python and TensorStore disagree on its default (zstd vs lz4).
        return cls(get_choice(config, "cname", n, CNAMES),
                   get_int(config, "clevel", n, default=5),
                   get_choice(config, "shuffle", n, SHUFFLES, default=None),
                   get_int(config, "typesize", n, default=None),
                   get_int(config, "blocksize", n, default=0))

    def to_json(self) -> dict[str, Any]:
        config: dict[str, Any] = {"cname": self.cname, "clevel": self.clevel}
        if self.shuffle is not None:
            config["shuffle"] = self.shuffle
        if self.typesize is not None:
            config["typesize"] = self.typesize
        config["blocksize"] = self.blocksize
        return {"name": self.name, "configuration": config}

    def evolve(self, spec: ChunkSpec) -> BloscCodec:
        if self.shuffle is not None and (self.typesize is not None or self.shuffle == "noshuffle"):
            return self  # complete (typesize does not matter without shuffling)
        typesize = self.typesize or _default_typesize(spec.dtype)
        shuffle = self.shuffle or ("bitshuffle" if typesize == 1 else "shuffle")
        return BloscCodec(self.cname, self.clevel, shuffle, typesize, self.blocksize)

    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        out = self.encode_transient(data, spec)
        return out if type(out) is bytes else bytes(out)

    def encode_transient(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        """`encode`, possibly into this thread's scratch buffer (valid until its next encode)."""
        if self.cname not in _AVAILABLE:
            raise CodecError(f"blosc codec: cname {self.cname!r} is not supported by this c-blosc build")
        size = nbytes(data)
        if size > _MAX_INPUT:
            raise CodecError(f"blosc codec: cannot compress {size} bytes (limit {_MAX_INPUT})")
        src = address(data) if _cblosc.available and size else None
        if src is None:
            return self._blosc.encode(data)
        # Into this thread's reused buffer: fresh chunk-sized buffers cost page faults (measured
        # 2x slower on 128 KiB chunks). Not beyond SCRATCH_LIMIT: each thread would keep one.
        room = size + _cblosc.MAX_OVERHEAD
        dest = scratch(room, "compress") if room <= SCRATCH_LIMIT else memoryview(bytearray(room))
        written = _cblosc.compress(self.clevel, self._shuffle, self.typesize or 1, src, size,
                                   address(dest), len(dest), self._cname, self.blocksize)
        if written <= 0:
            raise CodecError(f"blosc codec: c-blosc failed to compress {size} bytes ({written})")
        return dest[:written]

    @property
    def many_decoder(self) -> _runs.Decoder | None:
        """Decodes runs of this codec's chunks by one call (`_runs`); None without it."""
        return _runs.blosc_decoder if _cblosc.available else None

    def many_encoder(self, size: int) -> Callable[..., tuple[int, int, int]] | None:
        """Encodes runs of chunks of `size` bytes by one call (`_runs.blosc_encoder`, given all
        but this codec's parameters); None without it, or for what `encode` would refuse."""
        if _runs.blosc_encoder is None or not _cblosc.available or \
                self.cname not in _AVAILABLE or not 0 < size <= _MAX_INPUT:
            return None
        params = (self.clevel, self._shuffle, self.typesize or 1, self._cname, self.blocksize)
        return partial(_runs.blosc_encoder, params)

    @staticmethod
    def run_room(size: int) -> int:
        """The most a chunk of `size` bytes takes in a run (`many_encoder`): c-blosc's header
        more (it stores incompressible data as is)."""
        return size + _cblosc.MAX_OVERHEAD

    @property
    def fast_decode(self) -> bool:  # type: ignore[override]
        return self.cname in ("lz4", "lz4hc", "blosclz", "snappy")

    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer:
        return self._decompress(data, _check_header(data, None))

    def decode_sized(self, data: Buffer, spec: ChunkSpec, size: int) -> Buffer:
        """Decode output that must be exactly `size` bytes, checked before any allocation (bombs)."""
        return self._decompress(data, _check_header(data, size))

    def decode_into(self, data: Buffer, spec: ChunkSpec, size: int, dest: memoryview) -> Buffer:
        """`decode_sized` into `dest` (exactly `size` writable bytes): no allocation."""
        return self._decompress(data, _check_header(data, size), dest)

    def _decompress(self, data: Buffer, size: int, dest: memoryview | None = None) -> Buffer:
        # The header says everything needed to decode, so the configuration plays no part here.
        if size == 0:
            return b""  # c-blosc reports 0 bytes decoded, which numcodecs takes as an error
        src = address(data) if _cblosc.available else None
        if src is None:
            try:
                return _blosc.decompress(data, dest)
            except Exception as e:  # numcodecs raises RuntimeError/ValueError
                raise CorruptDataError(f"blosc codec: invalid compressed data ({e})") from None
        out = bytearray(size) if dest is None else dest
        if _cblosc.decompress(src, address(out), size) != size:
            raise CorruptDataError("blosc codec: invalid compressed data (c-blosc could not decode it)")
        return out


def _default_typesize(dtype: Any) -> int:
    # Variable-length values (object dtype) reach blosc as a byte stream, so the itemsize of
    # numpy's pointers means nothing there: 1, as zarr-python records. c-blosc ignores type
    # sizes above 255 (and TensorStore rejects them), so those fall back to 1 too.
    return 1 if dtype.kind in "OT" or dtype.itemsize > 255 else dtype.itemsize


def _given(key: str, value: Any) -> dict[str, Any]:
    return {} if value is None else {key: value}


def _check_header(data: Buffer, size: int | None) -> int:
    """The decoded size. c-blosc trusts the header's sizes, so check them against the buffer."""
    view = byte_view(data)
    if len(view) < _HEADER:
        raise CorruptDataError(f"blosc codec: {len(view)} bytes is too short for a blosc header")
    decoded = int.from_bytes(view[4:8], "little")
    stored = int.from_bytes(view[12:16], "little")
    if stored != len(view):
        raise CorruptDataError(f"blosc codec: header claims {stored} compressed bytes, buffer has {len(view)}")
    if size is not None and decoded != size:
        raise CorruptDataError(f"blosc codec: header claims {decoded} decoded bytes, expected {size}")
    code = view[2] >> 5
    if not view[2] & _MEMCPYED and code < len(_HEADER_CODES) and _HEADER_CODES[code] not in _AVAILABLE:
        raise CodecError(f"blosc codec: data compressed with {_HEADER_CODES[code]!r}, which this c-blosc "
                         "build does not support")
    return decoded

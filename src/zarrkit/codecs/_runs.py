"""Runs of chunks of one compressor decoded or encoded (blosc, zstd) by one call that does not
hold the GIL: the C extension `_many` (see `_many.c` for why), with the c-blosc and
libzstd functions the codecs already use. Without the extension (not compiled, or
`ZARRKIT_CHUNK_RUNS=0`), or without those libraries, the functions here are None and chunks are
coded one call each."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from . import _cblosc, _libzstd
from .base import Buffer

try:
    from . import _many
except ImportError:  # not compiled here
    _many = None

#: (sources, destination, decoded bytes per chunk, slots) -> how many were decoded (`_many.c`).
Decoder = Callable[[Sequence[Buffer], memoryview, int, Sequence[int]], int]

#: (the compressor's parameters, source, dimensions that enumerate its chunks, bytes per chunk,
#: fill bytes or None, destination, position, first chunk, sizes, scratch or None) -> (next
#: chunk, next position, the compressor's error or 0) (`_many.c`).
Encoder = Callable[[Any, Buffer, int, int, bytes | None, memoryview, int, int, Any,
                    memoryview | None], tuple[int, int, int]]

_ENABLED = _many is not None and os.environ.get("ZARRKIT_CHUNK_RUNS", "1") != "0"
_BLOSC, _ZSTD = 0, 1


def _blosc() -> Decoder | None:
    if not (_ENABLED and _cblosc.available):
        return None
    functions = (_cblosc.decompress_function(),)
    return lambda sources, dest, size, slots: _many.decode_many(
        _BLOSC, functions, 0, sources, dest, size, slots)


def _blosc_encoder() -> Encoder | None:
    """Parameters: (clevel, shuffle, typesize, cname, blocksize) as c-blosc takes them."""
    if not (_ENABLED and _cblosc.available):
        return None
    functions = (_cblosc.compress_function(),)
    return lambda params, *args: _many.encode_many(_BLOSC, functions, 0, params, *args)


def _zstd() -> Decoder | None:
    if not (_ENABLED and _libzstd.available):
        return None
    functions = _libzstd.one_shot_functions()
    return lambda sources, dest, size, slots: _many.decode_many(
        _ZSTD, functions, _libzstd.thread_context(), sources, dest, size, slots)


def _zstd_encoder() -> Encoder | None:
    """Parameters: (level, checksum)."""
    if not (_ENABLED and _libzstd.compression_available):
        return None
    functions = _libzstd.compress_functions()
    return lambda params, *args: _many.encode_many(
        _ZSTD, functions, _libzstd.compression_context(*params), None, *args)


blosc_decoder = _blosc()
blosc_encoder = _blosc_encoder()
zstd_decoder = _zstd()
zstd_encoder = _zstd_encoder()

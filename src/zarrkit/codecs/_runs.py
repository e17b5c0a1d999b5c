"""Runs of chunks of one compressor decoded (blosc, zstd) or encoded (blosc) by one call that
does not hold the GIL: the C extension `_many` (see `_many.c` for why), with the c-blosc and
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

#: (blosc parameters, source, bytes per chunk, fill bytes or None, destination, position, first
#: chunk, sizes) -> (next chunk, next position, c-blosc's error or 0) (`_many.c`).
Encoder = Callable[[tuple[int, int, int, bytes, int], Buffer, int, bytes | None, memoryview, int,
                    int, Any], tuple[int, int, int]]

#: The most a run's encoder adds to a chunk (blosc's header; `_many.c` wants this much room).
MAX_OVERHEAD = 16

_ENABLED = _many is not None and os.environ.get("ZARRKIT_CHUNK_RUNS", "1") != "0"
_BLOSC, _ZSTD = 0, 1


def _blosc() -> Decoder | None:
    if not (_ENABLED and _cblosc.available):
        return None
    functions = (_cblosc.decompress_function(),)
    return lambda sources, dest, size, slots: _many.decode_many(
        _BLOSC, functions, 0, sources, dest, size, slots)


def _blosc_encoder() -> Encoder | None:
    if not (_ENABLED and _cblosc.available):
        return None
    compress = _cblosc.compress_function()
    return lambda *args: _many.encode_blosc_many(compress, *args)


def _zstd() -> Decoder | None:
    if not (_ENABLED and _libzstd.available):
        return None
    functions = _libzstd.one_shot_functions()
    return lambda sources, dest, size, slots: _many.decode_many(
        _ZSTD, functions, _libzstd.thread_context(), sources, dest, size, slots)


blosc_decoder = _blosc()
blosc_encoder = _blosc_encoder()
zstd_decoder = _zstd()

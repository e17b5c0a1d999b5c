"""Runs of chunks of one compressor decoded by one call that does not hold the GIL: the C
extension `_many` (see `_many.c` for why), with the c-blosc and libzstd functions the codecs
already use. Without the extension (not compiled, or `ZARRKIT_DECODE_MANY=0`), or without those
libraries, the decoders here are None and chunks are decoded one call each."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from . import _cblosc, _libzstd
from .base import Buffer

try:
    from . import _many
except ImportError:  # not compiled here
    _many = None

#: (sources, destination, decoded bytes per chunk, slots) -> how many were decoded (`_many.c`).
Decoder = Callable[[Sequence[Buffer], memoryview, int, Sequence[int]], int]

_ENABLED = _many is not None and os.environ.get("ZARRKIT_DECODE_MANY", "1") != "0"
_BLOSC, _ZSTD = 0, 1


def _blosc() -> Decoder | None:
    if not (_ENABLED and _cblosc.available):
        return None
    functions = (_cblosc.decompress_function(),)
    return lambda sources, dest, size, slots: _many.decode_many(
        _BLOSC, functions, 0, sources, dest, size, slots)


def _zstd() -> Decoder | None:
    if not (_ENABLED and _libzstd.available):
        return None
    functions = _libzstd.one_shot_functions()
    return lambda sources, dest, size, slots: _many.decode_many(
        _ZSTD, functions, _libzstd.thread_context(), sources, dest, size, slots)


blosc = _blosc()
zstd = _zstd()

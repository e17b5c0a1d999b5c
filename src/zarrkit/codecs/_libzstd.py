"""libzstd called directly: the system's shared library (Debian's and most Linux distributions'
libzstd1, which their packages depend on) decodes, and python-zstandard's own build, when its
wheel has one to load, compresses runs of chunks (`_load_compressor`).

Through ctypes it writes straight into the caller's buffer (python-zstandard's one-shot decoder
returns memory of its own, to be copied), and streams a prefix at about the cost per byte of one
call (python-zstandard's stream reader costs ~1.3x more), so any prefix of a chunk is worth
stopping after. Decoding itself was 4-8% faster than python-zstandard's bundled build on the
benchmark's noisy uint16 chunks (each chunk decoded by both in turn, so that the machine's speed
swings fall on both alike). Nothing here is required: without the library, or with one older
than 1.4, `available` is False and the codec uses python-zstandard.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
from typing import Any

_MIN_VERSION = 10400  # ZSTD_DCtx_reset, ZSTD_decompressStream with ZSTD_inBuffer/outBuffer
_RESET_SESSION_ONLY = 1


class _InBuffer(ctypes.Structure):
    _fields_ = [("src", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]


class _OutBuffer(ctypes.Structure):
    _fields_ = [("dst", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]


def _load() -> Any:
    if os.environ.get("ZARRKIT_SYSTEM_ZSTD", "1") == "0":
        return None
    # By the names of libzstd 1.x, not ctypes.util.find_library: that runs ldconfig (~4 ms)
    # at every import.
    for name in ("libzstd.so.1", "libzstd.1.dylib", "libzstd.dylib"):
        try:
            return _bound(ctypes.CDLL(name))
        except OSError:
            continue
    return None


def _bound(lib: Any) -> Any:
    """`lib` with the types of the functions used here; None when it lacks one or is older
    than 1.4."""
    try:
        if lib.ZSTD_versionNumber() < _MIN_VERSION:
            return None
        vp, size = ctypes.c_void_p, ctypes.c_size_t
        for fn, restype, argtypes in (
            ("ZSTD_createDCtx", vp, []),
            ("ZSTD_freeDCtx", size, [vp]),
            ("ZSTD_DCtx_reset", size, [vp, ctypes.c_int]),
            ("ZSTD_decompressDCtx", size, [vp, vp, size, vp, size]),
            ("ZSTD_decompressStream", size,
             [vp, ctypes.POINTER(_OutBuffer), ctypes.POINTER(_InBuffer)]),
            ("ZSTD_isError", ctypes.c_uint, [size]),
            ("ZSTD_getFrameContentSize", ctypes.c_ulonglong, [vp, size]),
            ("ZSTD_findFrameCompressedSize", size, [vp, size]),
            ("ZSTD_getErrorName", ctypes.c_char_p, [size]),
            ("ZSTD_createCCtx", vp, []),
            ("ZSTD_freeCCtx", size, [vp]),
            ("ZSTD_CCtx_setParameter", size, [vp, ctypes.c_int, ctypes.c_int]),
            ("ZSTD_compress2", size, [vp, vp, size, vp, size]),
            ("ZSTD_compressBound", size, [size]),
        ):
            getattr(lib, fn).restype, getattr(lib, fn).argtypes = restype, argtypes
    except (OSError, AttributeError):
        return None
    return lib


def _load_compressor() -> Any:
    """The libzstd that compresses runs of chunks: python-zstandard's own build when its wheel
    ships it as a shared object that exports libzstd's functions (its cffi backend), else the
    system's. Its libzstd (1.5.7 here) compressed the benchmark's 512 KiB chunks at level 3
    ~10% faster than the system's (1.5.4), both called in turn through ctypes; its frames are
    the same bytes."""
    try:
        spec = importlib.util.find_spec("zstandard._cffi")
    except ImportError:
        spec = None
    if spec is not None and spec.origin and spec.origin.endswith((".so", ".dylib")):
        try:
            lib = _bound(ctypes.CDLL(spec.origin))
        except OSError:
            lib = None
        if lib is not None:
            return lib
    return _lib


_lib = _load()
available = _lib is not None
_clib = _load_compressor()
compression_available = _clib is not None
_local = threading.local()


class _Context:
    """A libzstd context (`create`d, `free`d when dropped), one per thread and use (reused:
    making one per chunk costs ~10 us)."""

    def __init__(self, create: Any, free: Any, what: str) -> None:
        self._free = free  # kept: module globals are gone at interpreter exit
        self.ptr = create()
        if not self.ptr:
            raise MemoryError(f"libzstd could not allocate a {what} context")

    def __del__(self) -> None:
        if self.ptr:
            self._free(self.ptr)


def _context() -> int:
    found = getattr(_local, "context", None)
    if found is None:
        found = _local.context = _Context(_lib.ZSTD_createDCtx, _lib.ZSTD_freeDCtx,
                                          "decompression")
    return found.ptr


def _addresses(lib: Any, names: tuple[str, ...]) -> tuple[int, ...]:
    """The addresses of `lib`'s functions `names`, for C code that calls them."""
    return tuple(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in names)  # type: ignore[return-value]


def one_shot_functions() -> tuple[int, ...]:
    """The addresses of ZSTD_decompressDCtx, ZSTD_getFrameContentSize,
    ZSTD_findFrameCompressedSize and ZSTD_isError, for C code that decodes with this library
    and the calling thread's context (`thread_context`)."""
    return _addresses(_lib, ("ZSTD_decompressDCtx", "ZSTD_getFrameContentSize",
                             "ZSTD_findFrameCompressedSize", "ZSTD_isError"))


thread_context = _context


def decompress(src: int | bytes, src_size: int, dest: int, size: int) -> int:
    """Decode the zstd frame(s) of `src_size` bytes at `src` into `size` bytes at `dest`: the
    number of bytes decoded (never more than `size`). ValueError naming libzstd's error for bad
    data, or for output that would not fit."""
    result = _lib.ZSTD_decompressDCtx(_context(), dest, size, src, src_size)
    if _lib.ZSTD_isError(result):
        raise ValueError(_lib.ZSTD_getErrorName(result).decode("ascii", "replace"))
    return result


def decompress_prefix(src: int | bytes, src_size: int, dest: int, nbytes: int) -> int:
    """Decode only the first `nbytes` of the frame at `src` into `dest`, stopping after the
    block that completes them: how many were decoded (fewer when the frame ends first). -1 when
    libzstd refuses the frame; the caller then decodes it whole, which names the error."""
    context = _context()
    _lib.ZSTD_DCtx_reset(context, _RESET_SESSION_ONLY)
    address = src if isinstance(src, int) else ctypes.cast(src, ctypes.c_void_p).value
    source, target = _InBuffer(address, src_size, 0), _OutBuffer(dest, nbytes, 0)
    while target.pos < nbytes:
        before = source.pos, target.pos
        result = _lib.ZSTD_decompressStream(context, ctypes.byref(target), ctypes.byref(source))
        if _lib.ZSTD_isError(result):
            return -1
        if result == 0 or (source.pos, target.pos) == before:  # the frame's end, or no progress
            break
    return target.pos


_C_COMPRESSION_LEVEL, _C_CHECKSUM_FLAG = 100, 201  # ZSTD_cParameter


def compression_context(level: int, checksum: bool) -> int:
    """The calling thread's ZSTD_CCtx that compresses at `level` (0: libzstd's default), with a
    checksum or not, for C code that compresses with this library (`compress_functions`)."""
    contexts = getattr(_local, "compression", None)
    if contexts is None:
        contexts = _local.compression = {}
    found = contexts.get((level, checksum))
    if found is None:
        found = _Context(_clib.ZSTD_createCCtx, _clib.ZSTD_freeCCtx, "compression")
        for parameter, value in ((_C_COMPRESSION_LEVEL, level), (_C_CHECKSUM_FLAG, checksum)):
            result = _clib.ZSTD_CCtx_setParameter(found.ptr, parameter, int(value))
            if _clib.ZSTD_isError(result):
                raise ValueError(_clib.ZSTD_getErrorName(result).decode("ascii", "replace"))
        contexts[level, checksum] = found
    return found.ptr


def compress_functions() -> tuple[int, ...]:
    """The addresses of ZSTD_compress2, ZSTD_isError and ZSTD_compressBound."""
    return _addresses(_clib, ("ZSTD_compress2", "ZSTD_isError", "ZSTD_compressBound"))


def compress_bound(size: int) -> int:
    """The most that `size` bytes take compressed (ZSTD_compressBound)."""
    return _clib.ZSTD_compressBound(size)

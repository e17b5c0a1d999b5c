"""c-blosc's context functions, called directly (the c-blosc that numcodecs ships).

numcodecs' `blosc.decompress` spends ~13 us of Python per call holding the GIL (buffer checks,
thread-mode lookup) around ~20 us of decompression of a 128 KiB chunk, so two threads took
turns rather than overlapping (measured: no gain from the second thread). The same c-blosc
function called through ctypes holds the GIL ~1 us and two threads overlap (1.6x). numcodecs
links c-blosc into its extension module and exports c-blosc's public C API; a build that does
not leaves `available` False and the codec uses numcodecs' functions.
"""

from __future__ import annotations

import ctypes

from numcodecs import blosc as _numcodecs_blosc


def _bind() -> tuple[object, object] | None:
    try:
        lib = ctypes.CDLL(_numcodecs_blosc.__file__)
        decompress, compress = lib.blosc_decompress_ctx, lib.blosc_compress_ctx
    except (OSError, AttributeError):
        return None
    vp, size, cint = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
    # int blosc_decompress_ctx(const void *src, void *dest, size_t destsize, int nthreads)
    decompress.argtypes = [vp, vp, size, cint]
    decompress.restype = cint
    # int blosc_compress_ctx(int clevel, int doshuffle, size_t typesize, size_t nbytes,
    #     const void *src, void *dest, size_t destsize, const char *compressor,
    #     size_t blocksize, int nthreads)
    compress.argtypes = [cint, cint, size, size, vp, vp, size, ctypes.c_char_p, size, cint]
    compress.restype = cint
    return decompress, compress


MAX_OVERHEAD = 16  # BLOSC_MAX_OVERHEAD: the header; incompressible data is stored as is
_bound = _bind()
available = _bound is not None
_decompress, _compress = _bound if _bound is not None else (None, None)


def decompress(src: int | bytes, dest: int, size: int) -> int:
    """Decode the blosc buffer at `src` (header already checked) into `size` bytes at `dest`;
    the number of bytes decoded, <= 0 on error."""
    return _decompress(src, dest, size, 1)  # type: ignore[misc]


def compress(clevel: int, shuffle: int, typesize: int, src: int | bytes, nbytes: int,
             dest: int, dest_size: int, cname: bytes, blocksize: int) -> int:
    """Encode `nbytes` at `src` into `dest`; the compressed size, <= 0 on error."""
    return _compress(clevel, shuffle, typesize, nbytes, src, dest, dest_size,  # type: ignore[misc]
                     cname, blocksize, 1)


def decompress_function() -> int:
    """The address of blosc_decompress_ctx, for C code that decodes with this c-blosc."""
    return ctypes.cast(_decompress, ctypes.c_void_p).value  # type: ignore[return-value]


def compress_function() -> int:
    """The address of blosc_compress_ctx, for C code that encodes with this c-blosc."""
    return ctypes.cast(_compress, ctypes.c_void_p).value  # type: ignore[return-value]

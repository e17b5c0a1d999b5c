"""Memory of the hot paths: per-thread reused buffers (reads, decoded chunks), and outputs."""

from __future__ import annotations

import ctypes
import mmap
import sys
import threading

import numpy as np

#: Decoded chunks up to this size may go to a thread's reused scratch buffer (see `scratch`).
SCRATCH_LIMIT = 8 << 20
_local = threading.local()


def scratch(size: int, slot: str = "buf") -> memoryview:
    """`size` writable bytes of this thread's scratch buffer `slot`, valid until the thread's
    next call for the same slot.

    Decoding into fresh memory costs a page fault per 4 KiB when the allocator hands back pages
    it returned to the kernel, which is common for chunk-sized buffers in worker threads;
    reusing one buffer per thread touches its pages once.
    """
    buf = getattr(_local, slot, None)
    if buf is None or len(buf) < size:
        buf = bytearray(size)
        setattr(_local, slot, buf)
    return memoryview(buf)[:size]


def _madvise() -> object | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


_MADV_NOHUGEPAGE = 15  # Linux
_madvise_fn = _madvise()


def empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """`np.empty`, but large arrays are not backed by transparent huge pages on request.

    numpy asks the kernel for huge pages (MADV_HUGEPAGE) for arrays of 4 MiB or more; the first
    write to such an array then often stalls (measured on a 2-core VM: 0.1-0.5 s for 128 MiB in
    most fresh processes, 0.02 s in the others, against a steady 0.08 s for small pages), as
    the kernel compacts memory or the host backs fresh huge blocks. Without the request the
    kernel uses huge pages only when it has them at no cost.
    """
    out = np.empty(shape, dtype)
    if _madvise_fn is not None and out.nbytes >= 1 << 22:
        start = -(-out.ctypes.data // mmap.PAGESIZE) * mmap.PAGESIZE
        stop = (out.ctypes.data + out.nbytes) // mmap.PAGESIZE * mmap.PAGESIZE
        _madvise_fn(start, stop - start, _MADV_NOHUGEPAGE)  # type: ignore[operator]
    return out

"""Small helpers for the `Buffer` union (bytes, bytearray, memoryview)."""

from __future__ import annotations

import threading

from .base import Buffer


def byte_view(data: Buffer) -> memoryview:
    """A flat, byte-addressed memoryview of `data` (no copy).

    A memoryview over e.g. a uint16 array counts and slices in elements, not bytes; casting
    makes `len` and slicing byte-based for every codec.
    """
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    return view


def nbytes(data: Buffer) -> int:
    return data.nbytes if isinstance(data, memoryview) else len(data)


#: Decoded chunks up to this size may go to a thread's reused scratch buffer (see `scratch`).
SCRATCH_LIMIT = 8 << 20
_local = threading.local()


def scratch(size: int) -> memoryview:
    """`size` writable bytes of this thread's scratch buffer, valid until the thread's next call.

    Decoding into fresh memory costs a page fault per 4 KiB when the allocator hands back pages
    it returned to the kernel, which is common for chunk-sized buffers in worker threads;
    reusing one buffer per thread touches its pages once.
    """
    buf = getattr(_local, "buf", None)
    if buf is None or len(buf) < size:
        buf = _local.buf = bytearray(size)
    return memoryview(buf)[:size]

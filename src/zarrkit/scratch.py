"""Per-thread reused buffers: the hot paths' working memory (reads, decoded chunks)."""

from __future__ import annotations

import threading

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

"""Memory of the hot paths: per-thread reused buffers (reads, decoded chunks), and outputs."""

from __future__ import annotations

import ctypes
import mmap
import sys
import threading
import time
import weakref

import numpy as np

from .errors import env_number

#: Decoded chunks up to this size may go to a thread's reused scratch buffer (see `scratch`).
SCRATCH_LIMIT = 8 << 20
#: The bytes of scratch buffers that all threads together keep between calls
#: (ZARRKIT_SCRATCH_BYTES): a buffer beyond it serves its call and is then let go. Each thread
#: keeps a buffer per use (up to SCRATCH_LIMIT or so each), so without a bound what stays
#: allocated after a large read or write grows with the threads: a pool thread per core, and
#: every thread of the user's that reads or writes.
SCRATCH_BUDGET = env_number("ZARRKIT_SCRATCH_BYTES", 256 << 20)
_local = threading.local()
_kept = [0]  # bytes of the buffers threads keep now
_kept_lock = threading.Lock()


def scratch(size: int, slot: str = "buf") -> memoryview:
    """`size` writable bytes of this thread's scratch buffer `slot`, valid until the thread's
    next call for the same slot.

    Decoding into fresh memory costs a page fault per 4 KiB when the allocator hands back pages
    it returned to the kernel, which is common for chunk-sized buffers in worker threads;
    reusing one buffer per thread touches its pages once.
    """
    return whole_scratch(size, slot)[:size]


def whole_scratch(size: int, slot: str = "buf") -> memoryview:
    """All of this thread's scratch buffer `slot`, grown to at least `size` bytes."""
    buf = getattr(_local, slot, None)
    if buf is None or len(buf) < size:
        # Not zeroed (bytearray is): every user writes what it reads, and a buffer grown
        # chunk by chunk would be cleared again at each step.
        buf = np.empty(size, np.uint8)
        _small_pages(buf)
        if _keep(size):
            weakref.finalize(buf, _let_go, size)
            setattr(_local, slot, buf)
    return memoryview(buf)


def _keep(size: int) -> bool:
    """Whether a new buffer of `size` bytes fits the budget; counted as kept if so (the one it
    replaces stops counting when it is freed, once the views of it in use are dropped)."""
    with _kept_lock:
        if _kept[0] + size > SCRATCH_BUDGET:
            return False
        _kept[0] += size
        return True


def _let_go(size: int) -> None:
    with _kept_lock:
        _kept[0] -= size


def kept_scratch() -> int:
    """The bytes of scratch buffers the threads keep now (at most SCRATCH_BUDGET)."""
    return _kept[0]


def trim_scratch(slot: str) -> None:
    """Let this thread's buffer `slot` go if it grew beyond SCRATCH_LIMIT (views of it that
    are still in use keep it alive until they are dropped)."""
    buf = getattr(_local, slot, None)
    if buf is not None and len(buf) > SCRATCH_LIMIT:
        delattr(_local, slot)


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


def _huge_pages_possible() -> bool:
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return "[never]" not in f.read()
    except OSError:
        return False


_MADV_HUGEPAGE, _MADV_NOHUGEPAGE, _MADV_POPULATE_WRITE = 14, 15, 23  # Linux
_madvise_fn = _madvise()
_huge = _madvise_fn is not None and _huge_pages_possible()
_HUGE = 1 << 21
#: A huge page whose first touch takes longer than this costs more than the 512 small pages it
#: replaces (measured on a 2-core VM: 0.2 ms for a huge page that the host has backed, 5.5 ms
#: for one it has not, 1.4 ms for 2 MiB of small pages).
SLOW_HUGE_PAGE = env_number("ZARRKIT_SLOW_HUGE_PAGE", 0.0015, float)


def _small_pages(buf: np.ndarray) -> None:
    """A thread's scratch buffer on small pages: a buffer is faulted in once per process, where
    only what its users write is touched, and a fresh huge page costs 4x what small pages do
    when the host has not backed it (see `empty`)."""
    if _madvise_fn is None or buf.nbytes < _HUGE:
        return
    start = -(-buf.ctypes.data // _HUGE) * _HUGE
    stop = (buf.ctypes.data + buf.nbytes) // _HUGE * _HUGE
    if stop > start:
        _madvise_fn(start, stop - start, _MADV_NOHUGEPAGE)  # type: ignore[misc]


def empty(shape: tuple[int, ...], dtype: np.dtype, touch: bool = True) -> np.ndarray:
    """`np.empty`, with a large array's pages faulted in on huge pages while that is cheap
    (`touch`; otherwise the caller passes parts of it to `fault_in` itself, in parallel).

    Fresh huge pages are 7x cheaper than small pages when the host has backed them and 4x
    dearer when it has not, and the slow ones come in runs. So the array asks for huge pages,
    `fault_in` touches them one by one and asks for small pages for the rest after a slow one.
    """
    out = np.empty(shape, dtype)
    if _madvise_fn is not None and out.nbytes >= 1 << 22 and not out.dtype.hasobject:
        start = -(-out.ctypes.data // _HUGE) * _HUGE
        stop = (out.ctypes.data + out.nbytes) // mmap.PAGESIZE * mmap.PAGESIZE
        _madvise_fn(start, stop - start, _MADV_HUGEPAGE)  # type: ignore[misc]
        if touch:
            fault_in(out.reshape(-1))
    return out


#: Writes one byte without holding the GIL (a ctypes call), so the kernel's zeroing of a huge
#: page does not stop the other threads (`flat[i] = 0` held it: fresh 128 MiB outputs took
#: 40-67 ms to fault in on two threads, 31-50 ms this way).
_touch = ctypes.memset


def fault_in(part: np.ndarray) -> None:
    """Fault in `part` (a contiguous 1-d piece of an array from `empty`; its contents are
    undefined until written) in order: a touch per huge page, and after a slow one, small pages
    for the rest, a touch per page."""
    if _madvise_fn is None or part.dtype.hasobject or part.nbytes < _HUGE:
        return
    addr = part.ctypes.data
    flat = part.view(np.uint8)
    if not _huge:  # small pages only
        _small_pages_in(flat, 0)
        return
    clock = time.perf_counter
    for offset in range(-addr % _HUGE, flat.size - _HUGE + 1, _HUGE):
        began = clock()
        _touch(addr + offset, 0, 1)
        if clock() - began > SLOW_HUGE_PAGE:
            rest = addr + offset + _HUGE
            stop = (addr + flat.size) // mmap.PAGESIZE * mmap.PAGESIZE
            if stop > rest:
                _madvise_fn(rest, stop - rest, _MADV_NOHUGEPAGE)  # type: ignore[misc]
                _small_pages_in(flat, offset + _HUGE)
            return


def _small_pages_in(flat: np.ndarray, offset: int) -> None:
    """Fault in the pages of `flat[offset:]` (bytes) on small pages: by one call asking the
    kernel to (MADV_POPULATE_WRITE, Linux 5.14), not a trap per page (128 MiB: 60-76 against
    74-90 ms here), or else by a touch per page."""
    addr = flat.ctypes.data
    start = -(-(addr + offset) // mmap.PAGESIZE) * mmap.PAGESIZE
    stop = (addr + flat.size) // mmap.PAGESIZE * mmap.PAGESIZE
    if stop > start and _madvise_fn(start, stop - start, _MADV_POPULATE_WRITE) == 0:  # type: ignore[misc]
        return
    flat[start - addr::mmap.PAGESIZE] = 0

"""The process-wide thread pool that runs chunk I/O and codecs.

numpy, the codec libraries and file I/O release the GIL, so threads give real parallelism.
Tasks submitted here never wait on other tasks of this pool, so the pool cannot deadlock.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from ..errors import env_number

T = TypeVar("T")
R = TypeVar("R")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
# One thread per core, the caller's among them: codecs are CPU-bound and measured fastest so; more
# threads only add GIL hand-offs and buffers in flight (a third thread on two cores, one waiting
# for the GIL at any time: 128 MiB reads 104 -> 80 ms blosc, 170 -> 131 ms sharded when dropped).
# Network stores grow the pool for their own work (`run_all`'s width), which leaves local work
# at this width.
_workers = env_number("ZARRKIT_THREADS", 0) or max(2, os.cpu_count() or 1)
_width = _workers


def set_concurrency(workers: int) -> None:
    """Resize the pool, and the number of threads work uses (for work submitted afterwards)."""
    global _width
    if workers < 1:
        raise ValueError("concurrency must be at least 1")
    _width = workers
    _resize(workers)


def _resize(workers: int) -> None:
    global _pool, _workers
    with _lock:
        old, _pool, _workers = _pool, None, workers
    if old is not None:
        old.shutdown(wait=False)


def concurrency() -> int:
    """The number of threads work uses (unless a network store asks for more)."""
    return _width


def ensure_concurrency(workers: int) -> None:
    """Grow the pool to at least `workers` threads (never shrink it) for a store whose requests
    wait on the network and want many in flight (run_all's `width`); other work keeps using
    `concurrency()` threads: more only add GIL hand-offs (30% slower local reads, measured)."""
    if workers > _workers:
        _resize(workers)


def io_width(io_concurrency: int) -> int:
    """The threads for the work of a store that wants `io_concurrency` requests in flight (0
    for local stores): one per core, or that many when it is more."""
    return max(_width, io_concurrency)


def executor() -> ThreadPoolExecutor:
    global _pool
    pool = _pool
    if pool is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(_workers, thread_name_prefix="zarrkit")
            pool = _pool
    return pool


def _after_fork_in_child() -> None:
    """A forked child has none of the pool's threads: work handed to the inherited pool would
    never run (and a lock held at the fork would never be released). It starts a new one."""
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def submit(fn: Callable[..., R], *args: Any) -> Future[R]:
    return executor().submit(fn, *args)


def in_pool() -> bool:
    """Whether this thread is one of the pool's: its work must not wait on other pool work."""
    return threading.current_thread().name.startswith("zarrkit")


def run_io(fn: Callable[[T], R], items: Iterable[T], io_concurrency: int) -> list[R]:
    """`run_all` of a store's requests: as many in flight as the store wants (`io_width`), the
    pool grown to that for a network store (`ensure_concurrency`)."""
    ensure_concurrency(io_concurrency)
    return run_all(fn, items, io_width(io_concurrency))


def run_all(fn: Callable[[T], R], items: Iterable[T], width: int = 0) -> list[R]:
    """`fn` over `items` in the pool, on `width` threads at most (default `concurrency()`);
    results in order. Runs inline for a single item, and inline when called from a pool thread
    (no nesting). The first exception is raised once all submitted work has finished, so nothing
    keeps writing behind the caller's back; after it, no new item is started."""
    items = items if isinstance(items, Sequence) else list(items)
    if len(items) <= 1 or in_pool():
        return [fn(item) for item in items]
    # Every thread, the caller's too, takes the next item until none is left: uneven items
    # balance themselves (fixed runs per thread left a core idle at the end of slow codecs'
    # writes), and one future per thread costs little next to a small chunk's work.
    results: list[Any] = [None] * len(items)
    errors: list[BaseException] = []
    taken = itertools.count()

    def work() -> None:
        for i in taken:
            if i >= len(items) or errors:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as e:  # noqa: BLE001 - re-raised by the caller below
                errors.append(e)
                return

    futures = [executor().submit(work) for _ in range(min(len(items), width or _width) - 1)]
    work()
    for f in futures:
        f.result()
    if errors:
        raise errors[0]
    return results

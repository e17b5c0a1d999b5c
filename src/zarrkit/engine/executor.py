"""The process-wide thread pool that runs chunk I/O and codecs.

numpy, the codec libraries and file I/O release the GIL, so threads give real parallelism.
Tasks submitted here never wait on other tasks of this pool, so the pool cannot deadlock.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
# One thread per core (the caller works too): codecs are CPU-bound and measured fastest so; more
# threads only add GIL hand-offs and buffers in flight. Network stores raise it for themselves.
_workers = int(os.environ.get("ZARRKIT_THREADS", "0")) or max(2, os.cpu_count() or 1)


def set_concurrency(workers: int) -> None:
    """Resize the pool (takes effect for work submitted afterwards)."""
    global _pool, _workers
    if workers < 1:
        raise ValueError("concurrency must be at least 1")
    with _lock:
        old, _pool, _workers = _pool, None, workers
    if old is not None:
        old.shutdown(wait=False)


def concurrency() -> int:
    return _workers


def ensure_concurrency(workers: int) -> None:
    """Grow the pool to at least `workers` threads (never shrink it): a store whose requests
    wait on the network wants many in flight, while CPU-bound work wants ~2 per core."""
    if workers > _workers:
        set_concurrency(workers)


def executor() -> ThreadPoolExecutor:
    global _pool
    pool = _pool
    if pool is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(_workers, thread_name_prefix="zarrkit")
            pool = _pool
    return pool


def submit(fn: Callable[..., R], *args: Any) -> Future[R]:
    return executor().submit(fn, *args)


def run_all(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """`fn` over `items` in the pool; results in order. Runs inline for a single item, and
    inline when called from a pool thread (no nesting). The first exception is raised once all
    submitted work has finished, so nothing keeps writing behind the caller's back."""
    items = items if isinstance(items, Sequence) else list(items)
    if len(items) <= 1 or threading.current_thread().name.startswith("zarrkit"):
        return [fn(item) for item in items]
    # A future costs more than a small chunk's work: hand each task a run of items, with
    # enough runs (4 per thread) that uneven chunks still balance.
    runs = min(len(items), 4 * _workers)
    bounds = [len(items) * i // runs for i in range(runs + 1)]
    futures = [executor().submit(_run_slice, fn, items, bounds[i], bounds[i + 1])
               for i in range(1, runs)]
    # The caller runs the first run itself: a small read then needs no thread hand-off at all
    # for its first chunk, and the caller's core is not left idle while it waits.
    results: list[R] = []
    error: BaseException | None = None
    try:
        results.extend(_run_slice(fn, items, bounds[0], bounds[1]))
    except BaseException as e:  # noqa: BLE001 - re-raised below after the others finish
        error = e
    for f in futures:
        try:
            results.extend(f.result())
        except BaseException as e:  # noqa: BLE001 - re-raised below after the others finish
            if error is None:
                error = e
    if error is not None:
        raise error
    return results


def _run_slice(fn: Callable[[T], R], items: Sequence[T], start: int, stop: int) -> list[R]:
    return [fn(items[i]) for i in range(start, stop)]

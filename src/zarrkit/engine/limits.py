"""Bounds on one array's concurrent work (TensorStore's data_copy_concurrency and
file_io_concurrency contexts), shared by every array holding the same bound.

A bound is any context manager that blocks while too many holders are inside, such as a
`threading.BoundedSemaphore`. None means unbounded: nothing is wrapped and nothing is paid.
A thread already holding a slot of a bound does not take another (a task that runs bounded
work inline must not wait on itself), and store I/O slots are only taken inside task slots,
never the other way round, so the bounds cannot deadlock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar

from ..kvstore.base import Buffer, ByteRange, KvStore

R = TypeVar("R")


class _Held(threading.local):
    def __init__(self) -> None:
        self.limits: set[int] = set()


_held = _Held()


@contextmanager
def slot(limit: Any) -> Iterator[None]:
    """Hold a slot of `limit` (at once, when this thread already holds one)."""
    if id(limit) in _held.limits:
        yield
        return
    with limit:
        _held.limits.add(id(limit))
        try:
            yield
        finally:
            _held.limits.discard(id(limit))


def slot_of(limit: Any) -> AbstractContextManager[None]:
    """`slot(limit)`, or nothing to hold when there is no limit."""
    return nullcontext() if limit is None else slot(limit)


def bounded(limit: Any, fn: Callable[..., R]) -> Callable[..., R]:
    """`fn`, run while holding a slot of `limit`; `fn` itself when there is no limit."""
    if limit is None:
        return fn

    def run(*args: Any) -> R:
        with slot(limit):
            return fn(*args)

    return run


class LimitedStore:
    """A store whose data reads, writes and deletes each hold a slot of `limit`; locks,
    listings and everything else go straight to the wrapped store."""

    def __init__(self, store: KvStore, limit: Any) -> None:
        self._store = store
        self._limit = limit

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def get(self, key: str, byte_range: ByteRange | None = None) -> Buffer | None:
        with slot(self._limit):
            return self._store.get(key, byte_range)

    def get_transient(self, key: str) -> Buffer | None:
        with slot(self._limit):
            return self._store.get_transient(key)

    def get_many(self, requests: Sequence[tuple[str, ByteRange | None]]) -> list[Buffer | None]:
        with slot(self._limit):
            return self._store.get_many(requests)

    def get_many_transient(self, requests: Sequence[tuple[str, ByteRange | None]]
                           ) -> list[Buffer | None]:
        with slot(self._limit):
            return self._store.get_many_transient(requests)

    def get_with_generation(self, key: str, byte_range: ByteRange | None = None
                            ) -> tuple[Buffer | None, Hashable | None]:
        with slot(self._limit):
            return self._store.get_with_generation(key, byte_range)

    def get_ranges_if(self, key: str, ranges: Sequence[ByteRange], generation: Hashable | None,
                      transient: bool = False) -> list[Buffer | None]:
        with slot(self._limit):
            return self._store.get_ranges_if(key, ranges, generation, transient)

    def get_then_ranges(self, key: str, byte_range: ByteRange | None,
                        then: Callable[[Buffer], Sequence[ByteRange]]
                        ) -> tuple[Buffer | None, Hashable | None, list[Buffer | None]]:
        with slot(self._limit):
            return self._store.get_then_ranges(key, byte_range, then)

    def set(self, key: str, value: Buffer) -> None:
        with slot(self._limit):
            self._store.set(key, value)

    def delete(self, key: str) -> None:
        with slot(self._limit):
            self._store.delete(key)

    def replace(self, key: str, value: Buffer | None) -> None:
        # KvStore's: the key's lock first, then `set`/`delete` above take the slot, the order of
        # read-modify-writes (a slot held while waiting for a lock could deadlock with one).
        KvStore.replace(self, key, value)  # type: ignore[arg-type]

    def replace_many(self, keys: Sequence[str], values: Iterable[Buffer | None]) -> None:
        KvStore.replace_many(self, keys, values)  # type: ignore[arg-type]

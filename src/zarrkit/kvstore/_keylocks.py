"""Per-key reader-writer locks between the threads of one process.

A key's lock exists only while someone holds it or waits for it: the engine locks every chunk it
writes, so a table that kept one lock per key ever locked would grow with the array. Exclusive
waiters block new shared holders, so a stream of writers cannot starve a `resize`.
"""

from __future__ import annotations

import threading


class _Entry:
    __slots__ = ("cond", "users", "readers", "writer", "waiting")

    def __init__(self) -> None:
        # Made on first wait only (all share the table's guard): most locks are never contended,
        # and building a Condition costs more than the rest of a lock and unlock.
        self.cond: threading.Condition | None = None
        self.users = 0  # holders and waiters: the entry is dropped when this reaches 0
        self.readers = 0
        self.writer = False
        self.waiting = 0  # exclusive waiters


class KeyLocks:
    """The table of a store's (or of several handles sharing data) per-key locks."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    def handle(self, key: str, shared: bool = False) -> KeyLock:
        return KeyLock(self, key, shared)

    def acquire(self, key: str, shared: bool, blocking: bool = True) -> bool:
        with self._guard:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry()
            entry.users += 1
            try:
                acquired = (self._acquire_shared if shared else self._acquire_exclusive)(
                    entry, blocking)
            except BaseException:  # interrupted while waiting: leave the counts as they were
                self._leave(key, entry)
                raise
            if not acquired:
                self._leave(key, entry)
            return acquired

    def _wait(self, entry: _Entry) -> None:
        if entry.cond is None:
            entry.cond = threading.Condition(self._guard)
        entry.cond.wait()

    def _acquire_shared(self, entry: _Entry, blocking: bool) -> bool:
        while entry.writer or entry.waiting:
            if not blocking:
                return False
            self._wait(entry)
        entry.readers += 1
        return True

    def _acquire_exclusive(self, entry: _Entry, blocking: bool) -> bool:
        entry.waiting += 1
        try:
            while entry.writer or entry.readers:
                if not blocking:
                    return False
                self._wait(entry)
        finally:
            entry.waiting -= 1
        entry.writer = True
        return True

    def release(self, key: str, shared: bool) -> None:
        with self._guard:
            entry = self._entries[key]
            if shared:
                entry.readers -= 1
            else:
                entry.writer = False
            self._leave(key, entry)

    def _leave(self, key: str, entry: _Entry) -> None:
        entry.users -= 1
        if not entry.users:
            del self._entries[key]
        elif entry.cond is not None:  # what changed (a release, a waiter leaving) may let a
            entry.cond.notify_all()      # waiter proceed

    def __len__(self) -> int:
        return len(self._entries)


class KeyLock:
    """One key's lock, shared or exclusive: a context manager with `acquire`/`release` (like
    `threading.Lock`, so store-specific locks can wrap it)."""

    __slots__ = ("_table", "_key", "_shared")

    def __init__(self, table: KeyLocks, key: str, shared: bool) -> None:
        self._table = table
        self._key = key
        self._shared = shared

    def acquire(self, blocking: bool = True) -> bool:
        return self._table.acquire(self._key, self._shared, blocking)

    def release(self) -> None:
        self._table.release(self._key, self._shared)

    def __enter__(self) -> KeyLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

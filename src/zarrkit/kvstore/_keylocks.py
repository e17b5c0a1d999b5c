"""Per-key reader-writer locks between the threads of one process.

A key's lock exists only while someone holds it or waits for it: the engine locks every chunk it
writes, so a table that kept one lock per key ever locked would grow with the array. Exclusive
waiters block new shared holders, so a stream of writers cannot starve a `resize`.

Fork-safe: a forked child starts every table empty. It has only the thread that forked, so the
locks other threads held are not held there (a copied table would block the child forever on
them); a lock the forking thread held is released in the child as a no-op.
"""

from __future__ import annotations

import os
import threading
import weakref


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
        self._reset()
        _TABLES.add(self)

    def _reset(self) -> None:
        # A fresh guard too: another thread may have held the old one at the fork.
        self._guard = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self.epoch = _EPOCH[0]

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

    def release(self, key: str, shared: bool, epoch: int | None = None) -> None:
        with self._guard:
            if epoch is not None and epoch != self.epoch:
                return  # taken before a fork emptied the table: nothing to release here
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


_TABLES: weakref.WeakSet[KeyLocks] = weakref.WeakSet()
_EPOCH = [0]  # bumped in each forked child


def _after_fork_in_child() -> None:
    _EPOCH[0] += 1
    for table in list(_TABLES):
        table._reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class KeyLock:
    """One key's lock, shared or exclusive: a context manager with `acquire`/`release` (like
    `threading.Lock`, so store-specific locks can wrap it)."""

    __slots__ = ("_table", "_key", "_shared", "_epoch")

    def __init__(self, table: KeyLocks, key: str, shared: bool) -> None:
        self._table = table
        self._key = key
        self._shared = shared
        self._epoch = 0

    def acquire(self, blocking: bool = True) -> bool:
        self._epoch = self._table.epoch
        return self._table.acquire(self._key, self._shared, blocking)

    def release(self) -> None:
        self._table.release(self._key, self._shared, self._epoch)

    def __enter__(self) -> KeyLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

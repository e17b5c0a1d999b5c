"""A transaction's view of a store: writes staged in memory over a base store.

`Staging` is what one transaction staged for one base store (new values and deletions), shared
by every handle of the transaction on that store; `StagedStore` is a `KvStore` answering from
it first and from the base store otherwise. For every staged key that was read from the base
store before it was changed (a read-modify-write), the staging keeps what was read: the value's
generation, or its bytes where the store hands out none. `commit` writes every staging under
the base stores' key locks once none of those keys has changed since; otherwise it writes
nothing and returns the changed keys, for the caller to redo its writes on the new values.
With `repeatable`, the keys read through a `counting()` store (the reads a user asked for,
not those a write makes to merge) are checked too, and must not have changed at all.

The transaction itself (its states, atomicity rules) lives in the spec layer: a staging only
calls `touch(staging, key, write)` before each read or write of a key and `guard()` before listings.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import ExitStack, nullcontext
from itertools import count
from typing import Any

from ..errors import TransactionError, UnpicklableError
from ._keylocks import KeyLocks
from ._util import as_bytes, resolve_range
from .base import (
    Buffer,
    ByteRange,
    GenerationMismatch,
    KvStore,
    check_value,
    validate_key,
    validate_prefix,
)
from .memory import MemoryStore

#: What a staging remembers of a base value it read: ("gen", generation), ("bytes", value),
#: or _MISSING for a key that held none.
Token = tuple[Any, ...]
_MISSING: Token = ("missing",)


def commits_keys_together(store: KvStore) -> bool:
    """Whether `store` can change several keys as one atomic change (the memory store, under
    its one lock); the others commit one key at a time."""
    return isinstance(store, MemoryStore)


class Staging:
    """The keys one transaction changed in one base store, and what it read before."""

    def __init__(self, base: KvStore, touch: Callable[[Staging, str, bool], None],
                 guard: Callable[[], None], repeatable: bool = False) -> None:
        self.base = base
        #: Counted reads must return what the first counted read of the key did, and the
        #: commit checks every key they read (TensorStore's repeatable_read, which checks the
        #: data read, not what writes read to merge: those are redone on new values).
        self.repeatable = repeatable
        self.touch = lambda key, write=False: touch(self, key, write)
        self.guard = guard
        self.lock = threading.Lock()
        self.key_locks = KeyLocks()  # shared by the transaction's handles on this store
        self.serials = count(1)  # never restarted: a staged generation is never reused
        #: Metadata documents the transaction opened arrays from: the commit fails once one
        #: changed (TensorStore's "Metadata is inconsistent"); kept across a redo.
        self.validated: dict[str, Token] = {}
        self.contents: dict[str, Callable[[], Any]] = {}
        #: With `repeatable`: the first base value each counted read saw (kept across a redo).
        self.read: dict[str, Token] = {}
        self.reset()

    def reset(self) -> None:
        """Forget everything staged, and the reads of writes (before the transaction's writes
        are redone); not the counted reads, which the commit still checks."""
        with self.lock:
            self.values: dict[str, bytes | None] = {}  # None: deleted
            self.versions: dict[str, int] = {}
            #: Staged keys whose writes changed nothing (`stage(unchanged=True)`): the commit writes
            #: them only if a redo, on another writer's change, makes them change.
            self.unchanged: set[str] = set()
            #: Staged keys whose value no base value went into: written whole (`replace`), then
            #: perhaps changed in part. Reading them reads nothing of the base store.
            self.whole: set[str] = set()
            self.seen: dict[str, Token] = {}  # the last base value read of each key
            self.derived: dict[str, Token] = {}  # staged keys changed from a base value read

    # -- reading and staging -----------------------------------------------------------------
    def staged(self, key: str) -> tuple[bool, bytes | None, int]:
        with self.lock:
            if key not in self.values:
                return False, None, 0
            return True, self.values[key], self.versions[key]

    def read_base(self, key: str, byte_range: ByteRange | None, counted: bool = False
                  ) -> tuple[Buffer | None, Hashable | None]:
        """The base store's value (part) and generation, remembering what was read (with
        `repeatable`, a `counted` read also as what later counted reads must see)."""
        value, generation = self.base.get_with_generation(key, byte_range)
        if value is None:
            token = _MISSING
        elif generation is not None:
            token = ("gen", generation)
        else:  # no generations: the whole value tells whether it changed
            whole = value if byte_range is None else self.base.get(key)
            token = _MISSING if whole is None else ("bytes", as_bytes(whole))
            if whole is not None and byte_range is not None:
                value = byte_range.slice_of(whole)
        with self.lock:
            self.seen[key] = token
            first = self.read.setdefault(key, token) if counted and self.repeatable else token
        if first != token:
            raise _changed_since_read(key, self.base)
        return value, generation

    def read_staged(self, key: str) -> None:
        """A counted read of the staged `key`: with `repeatable`, the base value it was
        changed from is now read too (the commit fails once it changes), and must be the one
        an earlier counted read saw."""
        if not self.repeatable:
            return
        with self.lock:
            if key in self.whole:  # the transaction's own value: nothing of the base is read
                return
            token = self.derived.get(key)
            first = token if token is None else self.read.setdefault(key, token)
        if first != token:
            raise _changed_since_read(key, self.base)

    def validate(self, key: str, content: Callable[[], Any]) -> None:
        """The commit checks that `key` still holds what `content()` (the document's meaning,
        read from the base store) gives now; not a key the transaction staged itself (that
        one is its own). A document rewritten the same (resized back) is still the one."""
        with self.lock:
            if key in self.values or key in self.validated:
                return
        token = ("doc", content())
        with self.lock:
            self.validated.setdefault(key, token)
            self.contents[key] = content

    def stage(self, key: str, value: bytes | None, unchanged: bool = False,
              whole: bool = False) -> None:
        """`value` staged for `key` (None: deleted). `unchanged`: the write left the value as
        the base store holds it (TensorStore stores nothing then); it is staged so that the
        commit redoes it if another writer changes the key, and is otherwise not written (the
        key's generation stays, as readers checking it expect). A key staged before keeps
        its value. `whole`: no value read went into it (unconditional, as TensorStore's)."""
        with self.lock:
            first = key not in self.values
            if unchanged and not first:
                return
            if whole:
                self.whole.add(key)
                self.derived.pop(key, None)
            elif first:  # changed from the base value (a write in part, a deletion)
                self.whole.discard(key)
                if key in self.seen:
                    self.derived[key] = self.seen[key]
            self.values[key] = value
            self.versions[key] = next(self.serials)
            (self.unchanged.add if unchanged else self.unchanged.discard)(key)

    # -- committing --------------------------------------------------------------------------
    def current(self, key: str, like: Token) -> Token:
        """The base value's token now, of the kind of `like`."""
        if like[0] == "doc":
            return ("doc", self.contents[key]())
        if like[0] != "bytes":
            value, generation = self.base.get_with_generation(key, ByteRange(0, 0))
            if value is None:
                return _MISSING
            if generation is not None:
                return ("gen", generation)
        whole = self.base.get(key)
        return _MISSING if whole is None else ("bytes", as_bytes(whole))

    def changed(self) -> list[str]:
        """Staged keys whose base value is no longer the one read before changing them, keys
        a counted read saw (with `repeatable`) changed since, and validated keys changed (a
        key read, then read again by a write, is checked against both)."""
        return sorted(self._moved("read", "derived", "validated"))

    def changed_reads(self) -> list[str]:
        """The keys a counted read saw (with `repeatable`) that have changed since."""
        return sorted(self._moved("read"))

    def stale(self) -> list[str]:
        """Staged keys changed from a base value another writer has changed since."""
        return sorted(self._moved("derived"))

    def invalidated(self) -> set[str]:
        """The validated keys whose value changed."""
        return self._moved("validated")

    def _moved(self, *tables: str) -> set[str]:
        """The keys of the token tables named (`read`, `derived`, `validated`) whose base
        value is no longer the one their token records."""
        with self.lock:  # (the tables as they are now: a redo's reset replaces them)
            tokens = [item for name in tables for item in getattr(self, name).items()]
        return {k for k, token in tokens if self.current(k, token) != token}

    def keys(self) -> list[str]:
        with self.lock:
            return sorted(self.values)

    def write(self) -> None:
        """Store everything staged (the caller holds the keys' locks)."""
        with self.lock:
            changes = {k: v for k, v in self.values.items() if k not in self.unchanged}
        if isinstance(self.base, MemoryStore):
            self.base.apply_atomically(changes)
            return
        for key, value in changes.items():
            if value is None:
                self.base.delete(key)
            else:
                self.base.set(key, value)


def commit(stagings: Sequence[Staging], locks: Sequence[Any] = (),
           redo: Callable[[], None] | None = None) -> list[tuple[Staging, str]]:
    """Write every staging under its keys' locks (after `locks`, context managers taken
    first) if none of the keys read before being changed has changed since; otherwise write
    nothing and return the changed (staging, key) pairs. With `redo`, a change is first
    redone under the locks held (other writers cannot change the keys again meanwhile), and
    written if it touches no other key."""
    with ExitStack() as held:
        for lock in locks:
            held.enter_context(lock)
        locked = {(id(s), key) for s in stagings for key in s.keys()}
        for staging in stagings:
            for key in staging.keys():
                held.enter_context(staging.base.lock(key))
        changed = [(s, key) for s in stagings for key in s.changed()]
        if changed and redo is not None:
            redo()
            if {(id(s), key) for s in stagings for key in s.keys()} <= locked:
                changed = [(s, key) for s in stagings for key in s.changed()]
        if not changed:
            for staging in stagings:
                staging.write()
        return changed


class StagedStore(KvStore):
    """A base store seen through a transaction: reads answered from the staged values first,
    writes and deletions staged (nothing reaches the base store before the commit). Its reads
    are `counted` (see `Staging.repeatable`) in the store `counting()` returns."""

    stages_writes = True

    def __init__(self, staging: Staging, counted: bool = False) -> None:
        base = staging.base
        super().__init__(read_only=base.read_only)
        self.staging = staging
        self.base = base
        self.driver = base.driver
        self.io_concurrency = base.io_concurrency
        self._key_locks = staging.key_locks
        self._counted = counted
        self._counting: StagedStore | None = self if counted else None

    def counting(self) -> StagedStore:
        """This store, its reads counted: for the data a user reads."""
        if self._counting is None:
            self._counting = StagedStore(self.staging, counted=True)
        return self._counting

    # -- reading -----------------------------------------------------------------------------
    def get(self, key: str, byte_range: ByteRange | None = None) -> Buffer | None:
        return self.get_with_generation(key, byte_range)[0]

    def get_with_generation(self, key: str, byte_range: ByteRange | None = None
                            ) -> tuple[Buffer | None, Hashable | None]:
        validate_key(key)
        self.staging.touch(key)
        found, value, version = self.staging.staged(key)
        if found:
            if self._counted:
                self.staging.read_staged(key)
            if value is None:
                return None, None
            return value[slice(*resolve_range(byte_range, len(value)))], ("txn", version)
        value, generation = self.staging.read_base(key, byte_range, self._counted)
        return value, None if generation is None else ("base", generation)

    def get_ranges_if(self, key: str, ranges: Sequence[ByteRange], generation: Hashable | None,
                      transient: bool = False) -> list[Buffer | None]:
        if generation is None:
            return super().get_ranges_if(key, ranges, generation, transient)
        validate_key(key)
        self.staging.touch(key)
        found, value, version = self.staging.staged(key)
        kind, expected = generation  # type: ignore[misc]
        if found != (kind == "txn") or (found and (value is None or version != expected)):
            raise GenerationMismatch(f"{key!r} in {self!r} holds a new value")
        if found:
            return [value[slice(*resolve_range(r, len(value)))] for r in ranges]  # type: ignore[index]
        return self.base.get_ranges_if(key, ranges, expected)

    def exists(self, key: str) -> bool:
        self.staging.guard()
        found, value, _ = self.staging.staged(validate_key(key))
        return value is not None if found else self.base.exists(key)

    def exists_many(self, keys: Sequence[str]) -> list[bool]:
        self.staging.guard()
        staged = [self.staging.staged(validate_key(k)) for k in keys]
        rest = iter(self.base.exists_many([k for k, s in zip(keys, staged, strict=True)
                                           if not s[0]]))
        return [s[1] is not None if s[0] else next(rest) for s in staged]

    def size(self, key: str) -> int | None:
        self.staging.guard()
        found, value, _ = self.staging.staged(validate_key(key))
        if not found:
            return self.base.size(key)
        return None if value is None else len(value)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        self.staging.guard()
        validate_prefix(prefix)
        keys = set(self.base.list_prefix(prefix))
        with self.staging.lock:
            for key, value in self.staging.values.items():
                if key.startswith(prefix):
                    (keys.discard if value is None else keys.add)(key)
        return iter(sorted(keys))

    # -- writing -----------------------------------------------------------------------------
    def _set(self, key: str, value: Buffer) -> None:
        self._stage(key, value)

    def _delete(self, key: str) -> None:
        self._stage(key, None)

    def replace(self, key: str, value: Buffer | None) -> None:
        with self.lock(key) if self.lock_whole_writes else nullcontext():
            self._stage_checked(key, value, whole=True)

    def set_unchanged(self, key: str, value: Buffer | None) -> None:
        self._stage_checked(key, value, unchanged=True)

    def _stage_checked(self, key: str, value: Buffer | None, **how: bool) -> None:
        """`Staging.stage` of `value` (None: a deletion) after `set`'s checks of the key and
        the value; `how`: what kind of write it is (`whole`, `unchanged`)."""
        self._check_writable(key)
        validate_key(key)
        if value is not None and type(value) is not bytes:
            check_value(key, value)
        self._stage(key, value, **how)

    def _stage(self, key: str, value: Buffer | None, **how: bool) -> None:
        """`value` (None: a deletion) staged for `key`, a copy of it: callers may reuse their
        buffer."""
        self.staging.touch(key, True)
        self.staging.stage(key, None if value is None else as_bytes(value), **how)

    # -- description -------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return self.base.to_json()

    def __reduce__(self) -> tuple[Any, ...]:
        raise UnpicklableError(f"cannot pickle {self!r}: what its transaction staged lives in "
                               "this process's memory; pickle the handle without the "
                               "transaction (with_transaction(None) once committed)")

    def __repr__(self) -> str:
        return f"StagedStore({self.base!r})"


def _changed_since_read(key: str, base: KvStore) -> TransactionError:
    return TransactionError(f"{key!r} in {base!r} changed since the transaction "
                            "(repeatable_read) read it")

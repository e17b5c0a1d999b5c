"""The key/value store interface every store implements.

Keys are "/"-separated strings relative to the store root, validated by `validate_key`.
The interface is batch-shaped (`get_many`, `set_many`) so that each store chooses its own
concurrency; the default batch methods simply loop.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidKeyError, InvalidValueError, ReadOnlyError, StoreError
from ._keylocks import KeyLocks

Buffer = bytes | bytearray | memoryview


class GenerationMismatch(StoreError):
    """A generation-checked read (`KvStore.get_ranges_if`) found the key holding another value,
    or none: what the caller derived from the value it read before (a shard's index) is stale."""


@dataclass(frozen=True, slots=True)
class ByteRange:
    """A request for part of a value.

    `offset >= 0`: `length` bytes from `offset` (`length=None`: to the end).
    `offset < 0`: the last `-offset` bytes (a suffix; `length` must be None).
    """

    offset: int
    length: int | None = None

    def __post_init__(self) -> None:
        # A negative length or a suffix with a length would otherwise slice silently wrong.
        if self.length is not None and (self.length < 0 or self.offset < 0):
            raise ValueError(f"invalid {self!r}: length must be >= 0 and None for a suffix")

    @classmethod
    def suffix(cls, nbytes: int) -> ByteRange:
        if nbytes < 0:
            raise ValueError(f"suffix length must be >= 0, got {nbytes}")
        # -0 == 0 would mean "the whole value"; the last 0 bytes are b"".
        return cls(-nbytes, None) if nbytes else cls(0, 0)

    def slice_of(self, value: Buffer) -> Buffer:
        """Apply this range to a whole value held in memory (short if the value is short)."""
        if self.offset < 0:
            return value[max(len(value) + self.offset, 0):]
        if self.length is None:
            return value[self.offset:]
        return value[self.offset:self.offset + self.length]


#: Keys made only of segments like "c", "0", "zarr.json" (no leading dot) need no closer look.
_PLAIN_KEY = re.compile(r"(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*/)*[A-Za-z0-9_-][A-Za-z0-9_.-]*")


def validate_key(key: str) -> str:
    """Refuse keys that are empty, absolute, contain `..`/`.` segments, backslashes or NUL."""
    if type(key) is str and _PLAIN_KEY.fullmatch(key):
        return key
    if not isinstance(key, str) or not key:
        raise InvalidKeyError(f"invalid store key {key!r}: must be a non-empty string")
    if "\x00" in key or "\\" in key:
        raise InvalidKeyError(f"invalid store key {key!r}: NUL and backslash are not allowed")
    if not key.isascii() and not encodable_utf8(key):
        raise InvalidKeyError(f"invalid store key {key!r}: lone surrogates are not Unicode text "
                              "and have no UTF-8 form")
    if key.startswith("/"):
        raise InvalidKeyError(f"invalid store key {key!r}: absolute paths are not allowed")
    for part in key.split("/"):
        if part in ("", ".", ".."):
            raise InvalidKeyError(
                f"invalid store key {key!r}: empty, '.' and '..' segments are not allowed")
    return key


#: A leading drive letter ("C:"), which zip archives must not hold (APPNOTE 4.4.17) and which
#: Windows reads as a path on another drive. Elsewhere "t:0" is a name like any other.
_DRIVE = re.compile(r"[A-Za-z]:")


def refuse_drive(key: str) -> str:
    if _DRIVE.match(key):
        raise InvalidKeyError(f"invalid store key {key!r}: a leading drive letter is not "
                              "allowed here")
    return key


def encodable_utf8(text: str) -> bool:
    """Whether UTF-8 can encode `text` (not if it holds a lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_value(key: str, value: object) -> None:
    """Refuse a value that is not bytes: without the buffer protocol stores fail with a
    TypeError naming neither key nor value; an object array's buffer holds pointers."""
    kind = type(value)
    try:
        if kind is np.ndarray:  # the common cases first, cheaply
            objects = value.dtype.hasobject  # type: ignore[attr-defined]
        elif kind is memoryview:
            objects = value.format == "O" or _has_objects(value.obj)  # type: ignore[attr-defined]
        elif kind is bytearray:
            return
        else:
            with memoryview(value) as view:  # type: ignore[arg-type]
                objects = view.format == "O" or _has_objects(value)
    except TypeError:
        objects = None
    except ValueError as exc:  # a released memoryview
        raise InvalidValueError(f"cannot store {key!r}: {exc}") from None
    if objects is None or objects:
        what = "an array of Python objects" if objects else kind.__name__
        raise InvalidValueError(
            f"cannot store {key!r}: its value must be bytes-like (bytes, bytearray, memoryview "
            f"or a numpy array of numbers), got {what}")


def _has_objects(exporter: object) -> bool:
    return bool(getattr(getattr(exporter, "dtype", None), "hasobject", False))


def validate_prefix(prefix: str) -> str:
    """A prefix is "" (the root) or a valid key followed by "/"."""
    if prefix == "":
        return prefix
    if not prefix.endswith("/"):
        raise InvalidKeyError(f"invalid store prefix {prefix!r}: must end with '/'")
    validate_key(prefix[:-1])
    return prefix


class KvStore(ABC):
    """Abstract key/value store. Implementations must be safe to call from many threads."""

    #: URL scheme / spec driver name, e.g. "file", "memory", "zip".
    driver: str = ""
    #: Requests a caller should keep in flight to use this store well; 0 means "no preference"
    #: (local stores are CPU-bound). Latency-bound remote stores set it high, and the engine
    #: grows its thread pool to match.
    io_concurrency: int = 0
    #: Whether the engine holds `lock(key)` while it replaces a whole chunk or shard, so that
    #: the replacement cannot be undone by a concurrent read-modify-write of the same key
    #: (docs/concurrency.md). A store whose locks cost remote requests may turn this off and
    #: document the weaker guarantee.
    lock_whole_writes: bool = True
    #: Whether `get_many` and `replace_many` do the I/O of a batch of small values in one call
    #: that does not hold the GIL (the file store's C batches). The engine then spreads batches
    #: of small chunks over its threads; otherwise it reads them in the calling thread, where
    #: their many short system calls hand no GIL over to another thread.
    batches_without_gil: bool = False
    #: Whether writes are staged for a later commit (a transaction's view): a write that
    #: leaves a value as it was is still made (`set_unchanged`), for the commit to redo it on
    #: the values then stored; elsewhere it may be left out.
    stages_writes: bool = False

    def __init__(self, *, read_only: bool = False) -> None:
        self.read_only = read_only
        self._key_locks = KeyLocks()

    # -- reading -----------------------------------------------------------------------------
    @abstractmethod
    def get(self, key: str, byte_range: ByteRange | None = None) -> Buffer | None:
        """The value (or the requested part of it), or None if the key does not exist.

        A range reaching past the end of the value returns what exists (possibly b"").
        """

    def get_many(
        self, requests: Sequence[tuple[str, ByteRange | None]]
    ) -> list[Buffer | None]:
        """`get` for each (key, range) request, in order. Stores override to batch/coalesce."""
        return [self.get(key, rng) for key, rng in requests]

    def get_transient(self, key: str) -> Buffer | None:
        """`get(key)`, but the value may live in this thread's scratch memory, which its next
        transient read reuses: it must be consumed before then, and never kept."""
        return self.get(key)

    def get_many_transient(
        self, requests: Sequence[tuple[str, ByteRange | None]]
    ) -> list[Buffer | None]:
        """`get_many`, but the results may live in this thread's scratch memory, which its next
        transient read reuses: they must be consumed before then, and never kept."""
        return self.get_many(requests)

    def get_with_generation(self, key: str, byte_range: ByteRange | None = None
                            ) -> tuple[Buffer | None, Hashable | None]:
        """`get`, and the generation of the value it read: a token that changes whenever the
        key gets a new value. None when the store cannot tell (then nothing derived from the
        value may be reused for a later read) or the key is missing."""
        return self.get(key, byte_range), None

    def get_ranges_if(self, key: str, ranges: Sequence[ByteRange], generation: Hashable | None,
                      transient: bool = False) -> list[Buffer | None]:
        """Ranges of `key`'s value, all read from the value of `generation` (as returned by
        `get_with_generation`); `GenerationMismatch` if the key now holds another value or
        none. A `generation` of None reads unchecked (`get_many`, or `get_many_transient`)."""
        if generation is not None:  # only stores that hand out generations get them back
            raise GenerationMismatch(f"{self.driver or 'this'} store has no generations "
                                     f"to check {key!r} against")
        requests = [(key, rng) for rng in ranges]
        return self.get_many_transient(requests) if transient else self.get_many(requests)

    def get_then_ranges(self, key: str, byte_range: ByteRange | None,
                        then: Callable[[Buffer], Sequence[ByteRange]]
                        ) -> tuple[Buffer | None, Hashable | None, list[Buffer | None]]:
        """`get_with_generation(key, byte_range)`, then the ranges that `then` picks from those
        bytes (a shard's index: its inner chunks), read from the same value: (first bytes,
        generation, ranges); (None, None, []) for a missing key. Stores that read both through
        one open file do it in one go; here, `get_ranges_if` checks the generation
        (`GenerationMismatch` if the value was replaced in between)."""
        first, generation = self.get_with_generation(key, byte_range)
        if first is None:
            return None, None, []
        return first, generation, self.get_ranges_if(key, then(first), generation)

    def exists(self, key: str) -> bool:
        return self.get(key, ByteRange(0, 0)) is not None

    def exists_many(self, keys: Sequence[str]) -> list[bool]:
        """`exists` of each of `keys`; a network store (`io_concurrency`) is asked in one
        batched request of empty ranges, not one round trip a key."""
        if self.io_concurrency and len(keys) > 1:
            return [v is not None for v in self.get_many([(k, ByteRange(0, 0)) for k in keys])]
        return [self.exists(k) for k in keys]

    def size(self, key: str) -> int | None:
        """Size in bytes of the value at `key`, or None if missing."""
        value = self.get(key)
        return None if value is None else len(value)

    @abstractmethod
    def list_prefix(self, prefix: str) -> Iterator[str]:
        """Every key that starts with `prefix` ("" or ending in "/"), as full keys, any order."""

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """Immediate children of `prefix`: (names of keys, names of sub-prefixes), sorted."""
        validate_prefix(prefix)
        keys: set[str] = set()
        dirs: set[str] = set()
        for key in self.list_prefix(prefix):
            rest = key[len(prefix):]
            head, sep, _ = rest.partition("/")
            (dirs if sep else keys).add(head)
        return sorted(keys), sorted(dirs)

    # -- writing -----------------------------------------------------------------------------
    @abstractmethod
    def _set(self, key: str, value: Buffer) -> None:
        """Store `value` atomically: readers see the old value or the new one, never a mix.
        `value` is only read during the call: callers may reuse its memory afterwards."""

    @abstractmethod
    def _delete(self, key: str) -> None:
        """Remove `key`; no error if it does not exist."""

    def set(self, key: str, value: Buffer) -> None:
        self._check_writable(key)
        validate_key(key)
        if type(value) is not bytes:  # the common case costs one type check
            check_value(key, value)
        self._set(key, value)

    def set_unchanged(self, key: str, value: Buffer | None) -> None:
        """A write of `value` (None: a deletion) that leaves the key's stored value as it is,
        to a store that `stages_writes` (others leave it out): staged, and written at the
        commit only if the commit redoes it on another writer's change."""
        if value is None:
            self.delete(key)
        else:
            self.set(key, value)

    def replace(self, key: str, value: Buffer | None) -> None:
        """Store a whole new value for `key` (None: delete it), under `lock(key)` when
        `lock_whole_writes`, so that a concurrent read-modify-write of the key cannot write
        back what it read before, which would undo this (docs/concurrency.md)."""
        with self.lock(key) if self.lock_whole_writes else nullcontext():
            if value is None:
                self.delete(key)
            else:
                self.set(key, value)

    def replace_many(self, keys: Sequence[str], values: Iterable[Buffer | None]) -> None:
        """`replace` of each key with the matching item of `values`, which may be a generator
        handing out transient buffers: each value is stored, or copied to be stored, before the
        next is drawn (the items of a list or tuple must stay unchanged until this returns).
        Every key is checked before anything is stored; all are stored when this returns, and
        when a value (or `values` itself) fails, those before it are. Stores override this to
        share work between keys (the file store's directories, locks and batches)."""
        for key in keys:
            self._check_writable(key)
            validate_key(key)
        for key, value in zip(keys, values, strict=True):
            self.replace(key, value)

    def set_many(self, items: Iterable[tuple[str, Buffer]]) -> None:
        for key, value in items:
            self.set(key, value)

    def delete(self, key: str) -> None:
        self._check_writable(key)
        self._delete(validate_key(key))

    def delete_many(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.delete(key)

    def delete_prefix(self, prefix: str) -> None:
        """Remove every key under `prefix` ("" removes everything)."""
        self._check_writable(prefix or "<root>")
        for key in list(self.list_prefix(validate_prefix(prefix))):
            self._delete(key)

    def rename_prefix(self, old: str, new: str) -> bool:
        """Move every key under the prefix `old` to under `new`, which holds none of them, at
        little cost (a directory rename); False, with nothing moved, where the store cannot
        (the default): callers then copy the keys."""
        return False

    def rename_key(self, old: str, new: str) -> bool:
        """Move the value of `old` to `new` (replacing any there) at little cost (a file
        rename); False, with nothing moved, where the store cannot (the default): callers then
        copy it."""
        self._check_writable(new)
        return False

    def lock(self, key: str) -> AbstractContextManager[Any]:
        """An exclusive lock on `key`: held for a read-modify-write of it (and, when
        `lock_whole_writes`, for replacing it), or for a change that excludes `lock_shared`.

        The default is a per-key lock between the threads of this process (an object with
        `acquire`/`release`); stores shared between processes (the file store) override it
        with an inter-process lock. Locks are not reentrant.
        """
        return self._key_locks.handle(key)

    def lock_shared(self, key: str) -> AbstractContextManager[Any]:
        """A shared lock on `key`: many holders at once, none while `lock(key)` is held.

        Arrays hold one for the duration of each write so that `resize` (which takes the
        exclusive lock) never runs in the middle of one. The default excludes threads of this
        process only; the file store's also excludes other processes.
        """
        return self._key_locks.handle(key, shared=True)

    def _check_writable(self, key: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"cannot write {key!r}: the {self.driver or 'store'} store is read-only")

    # -- description -------------------------------------------------------------------------
    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """A TensorStore-style kvstore spec, e.g. {"driver": "file", "path": "/data/"}."""

    def parent(self) -> tuple[KvStore, str] | None:
        """(a store rooted one level above this store's root, the name of this root there), or
        None where there is no such level. A node opened by its own path (the store's root)
        keeps the consolidated metadata of the groups above it up to date through it. Made
        once per store: its locks then exclude each other's across uses."""
        try:
            return self.__dict__["_parent"]
        except KeyError:  # two threads may make one each: both use the one kept
            return self.__dict__.setdefault("_parent", self._make_parent())

    def _make_parent(self) -> tuple[KvStore, str] | None:
        """`parent()`'s store, made anew: none by default (a store with no location above)."""
        return None

    def close(self) -> None:
        """Release resources (flush a zip file, ...). The default does nothing."""
        return None  # deliberately not abstract: most stores hold nothing to release

    def __enter__(self) -> KvStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""An in-memory key/value store, optionally registered under a name for the whole process.

`MemoryStore()` is private to whoever holds it. `MemoryStore.named("x")` returns the store
registered as "x" (creating it on first use), so `memory://x/...` URLs opened anywhere in the
process see the same data. Named stores live until `MemoryStore.discard("x")`.

Spec JSON follows TensorStore's shape: a named store is `{"driver": "memory", "path": "x/"}`
(the first path segment is the registry name), an anonymous one is `{"driver": "memory"}`
(opening that gives a fresh, empty store). The spec layer (`zarrkit.open({"driver": "zarr3",
...})`) follows TensorStore instead: every memory spec, named or not, opens its context's
`memory_key_value_store`, its path a path in that store (see docs/architecture.md).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator, Sequence
from itertools import count
from typing import Any, ClassVar

from ..errors import InvalidKeyError, UnpicklableError
from ._keylocks import KeyLocks
from ._util import as_bytes, resolve_range
from .base import Buffer, ByteRange, GenerationMismatch, KvStore, validate_key, validate_prefix


class _Data:
    """The mutable state of one memory store, shared by its writable and read-only handles."""

    __slots__ = ("values", "versions", "serials", "lock", "key_locks")

    def __init__(self) -> None:
        self.values: dict[str, bytes] = {}
        # Each value's generation: a number no earlier value had (drawn under `lock`).
        self.versions: dict[str, int] = {}
        self.serials = count(1)
        self.lock = threading.Lock()
        # Read-modify-write locks must be shared by every handle on the same data.
        self.key_locks = KeyLocks()


class MemoryStore(KvStore):
    """A thread-safe dict of immutable `bytes` values."""

    driver = "memory"

    _registry: ClassVar[dict[str, _Data]] = {}
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, read_only: bool = False) -> None:
        super().__init__(read_only=read_only)
        self.name: str | None = None
        self._attach(_Data())

    def _attach(self, data: _Data) -> None:
        self._data = data
        self._values = data.values
        self._lock = data.lock
        self._key_locks = data.key_locks

    @classmethod
    def named(cls, name: str, read_only: bool = False) -> MemoryStore:
        """The process-wide store registered as `name` (created empty on first use)."""
        if "/" in validate_key(name):
            raise InvalidKeyError(f"invalid memory store name {name!r}: must not contain '/'")
        with cls._registry_lock:
            data = cls._registry.get(name)
            if data is None:
                data = cls._registry[name] = _Data()
        store = cls(read_only=read_only)
        store.name = name
        store._attach(data)
        return store

    def handle(self, read_only: bool = False) -> MemoryStore:
        """Another handle on this store's data (read-only or not), with its name if any."""
        store = MemoryStore(read_only=read_only)
        store.name = self.name
        store._attach(self._data)
        return store

    @classmethod
    def discard(cls, name: str) -> None:
        """Forget the named store; handles already open keep their data, new ones start empty."""
        with cls._registry_lock:
            cls._registry.pop(name, None)

    # -- reading -----------------------------------------------------------------------------
    def get(self, key: str, byte_range: ByteRange | None = None) -> Buffer | None:
        validate_key(key)
        value = self._values.get(key)
        if value is None or byte_range is None:
            return value
        start, stop = resolve_range(byte_range, len(value))
        return value[start:stop]

    def get_with_generation(self, key: str, byte_range: ByteRange | None = None
                            ) -> tuple[Buffer | None, Hashable | None]:
        validate_key(key)
        with self._lock:  # the value and its version as one
            value, version = self._values.get(key), self._data.versions.get(key)
        if value is None:
            return None, None
        return value[slice(*resolve_range(byte_range, len(value)))], version

    def get_ranges_if(self, key: str, ranges: Sequence[ByteRange], generation: Hashable | None,
                      transient: bool = False) -> list[Buffer | None]:
        if generation is None:
            return super().get_ranges_if(key, ranges, generation, transient)
        validate_key(key)
        with self._lock:
            value, version = self._values.get(key), self._data.versions.get(key)
        if value is None or version != generation:
            raise GenerationMismatch(f"{key!r} in {self!r} holds a new value")
        return [value[slice(*resolve_range(rng, len(value)))] for rng in ranges]

    def exists(self, key: str) -> bool:
        return validate_key(key) in self._values

    def size(self, key: str) -> int | None:
        value = self._values.get(validate_key(key))
        return None if value is None else len(value)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        with self._lock:  # iterate over a snapshot: writers may change the dict meanwhile
            keys = [k for k in self._values if k.startswith(prefix)]
        return iter(keys)

    # -- writing -----------------------------------------------------------------------------
    def _set(self, key: str, value: Buffer) -> None:
        data = as_bytes(value)  # copy before taking the lock: callers may reuse their buffer
        with self._lock:
            self._values[key] = data
            self._data.versions[key] = next(self._data.serials)

    def _delete(self, key: str) -> None:
        with self._lock:
            self._values.pop(key, None)
            self._data.versions.pop(key, None)

    def apply_atomically(self, changes: dict[str, Buffer | None]) -> None:
        """Store (or, for None, delete) several keys as one change: readers see all of it or
        none of it (a transaction's commit)."""
        for key in changes:
            self._check_writable(validate_key(key))
        data = {k: None if v is None else as_bytes(v) for k, v in changes.items()}
        with self._lock:
            for key, value in data.items():
                if value is None:
                    self._values.pop(key, None)
                    self._data.versions.pop(key, None)
                else:
                    self._values[key] = value
                    self._data.versions[key] = next(self._data.serials)

    def delete_prefix(self, prefix: str) -> None:
        self._check_writable(prefix or "<root>")
        validate_prefix(prefix)
        with self._lock:
            if not prefix:
                self._values.clear()
                self._data.versions.clear()
                return
            for key in [k for k in self._values if k.startswith(prefix)]:
                del self._values[key]
                del self._data.versions[key]

    def rename_prefix(self, old: str, new: str) -> bool:
        """Move every key under `old` to under `new` (which holds none of them) at once."""
        self._check_writable(new or "<root>")
        validate_prefix(old)
        validate_prefix(new)
        with self._lock:
            for key in [k for k in self._values if k.startswith(old)]:
                moved = new + key[len(old):]
                self._values[moved] = self._values.pop(key)
                del self._data.versions[key]
                self._data.versions[moved] = next(self._data.serials)
        return True

    def rename_key(self, old: str, new: str) -> bool:
        self._check_writable(new)
        validate_key(old)
        validate_key(new)
        with self._lock:
            if old not in self._values:
                return False
            self._values[new] = self._values.pop(old)
            del self._data.versions[old]
            self._data.versions[new] = next(self._data.serials)
        return True

    # -- description -------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        if self.name is None:
            return {"driver": "memory"}
        return {"driver": "memory", "path": self.name + "/"}

    def __reduce__(self) -> tuple[Any, ...]:
        # TensorStore pickles a memory-backed handle as its spec, which opens an empty,
        # unrelated store where it is loaded: reads there would silently see fill values.
        raise UnpicklableError(f"cannot pickle {self!r}: its data lives in this process's "
                               "memory, and a copy elsewhere would start empty; use a store "
                               "others can open (a directory, an object store) or pickle a dict "
                               "store, which copies its data")

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        if self.name is None:
            return f"MemoryStore(<anonymous>{mode})"
        return f"MemoryStore.named({self.name!r}{mode})"

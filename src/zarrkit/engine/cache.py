"""A least-recently-used cache of decoded chunks, bounded in bytes (a TensorStore cache pool).

Entries are keyed by (store identity, chunk key, sub-key); the sub-key tells apart the inner
chunks of one shard. Writes invalidate by chunk key. A read takes a `token` before it fetches
and may store its result only if no invalidation of that key happened in between, so a read
racing a write can never leave the old data cached after the write.

`CacheBinding` is what an array's engine holds: the pool, the store's identity and the
revalidation bound (entries older than `min_time()` are not served).

`ShardIndexCache` is separate and always on: each handle's decoded shard indexes, used only
for reads checked against the shard's generation (docs/concurrency.md, "Shard indexes").
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

_MISSING = np.empty(0)  # a cached "no such chunk" (it reads as the fill value)
_MAX_GENERATIONS = 1 << 16  # tracked invalidations before they are reset all at once

Key = tuple[Any, str, Any]


class ChunkCache:
    """Decoded chunks up to `total_bytes_limit` bytes, least recently used evicted first."""

    def __init__(self, total_bytes_limit: int) -> None:
        self.total_bytes_limit = int(total_bytes_limit)
        self._entries: OrderedDict[Key, tuple[np.ndarray, float]] = OrderedDict()
        self._subkeys: dict[tuple[Any, str], set[Any]] = {}
        self._generations: dict[tuple[Any, str], int] = {}
        self._epoch = 0
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def token(self, store_id: Any, key: str) -> tuple[int, int]:
        with self._lock:
            return self._epoch, self._generations.get((store_id, key), 0)

    def get(self, entry: Key, min_time: float) -> np.ndarray | None:
        with self._lock:
            found = self._entries.get(entry)
            if found is None or found[1] < min_time:
                return None
            self._entries.move_to_end(entry)
            return found[0]

    def put(self, entry: Key, chunk: np.ndarray, token: tuple[int, int]) -> None:
        size = chunk.nbytes
        if size > self.total_bytes_limit:
            return
        if chunk is not _MISSING:
            chunk = chunk.view()
            chunk.flags.writeable = False  # shared by every reader: nobody may change it
        with self._lock:
            store_key = entry[:2]
            if token != (self._epoch, self._generations.get(store_key, 0)):
                return  # invalidated while it was being read: it may be stale
            old = self._entries.pop(entry, None)
            self._bytes += size - (0 if old is None else old[0].nbytes)
            self._entries[entry] = (chunk, time.time())  # wall clock: bounds are epoch times
            self._subkeys.setdefault(store_key, set()).add(entry[2])
            self._evict()

    def _evict(self) -> None:
        while self._bytes > self.total_bytes_limit and self._entries:
            entry, (chunk, _) = self._entries.popitem(last=False)
            self._bytes -= chunk.nbytes
            subs = self._subkeys.get(entry[:2])
            if subs is not None:
                subs.discard(entry[2])

    def invalidate(self, store_id: Any, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                store_key = (store_id, key)
                for sub in self._subkeys.pop(store_key, ()):
                    removed = self._entries.pop((store_id, key, sub), None)
                    if removed is not None:
                        self._bytes -= removed[0].nbytes
                self._generations[store_key] = self._generations.get(store_key, 0) + 1
            if len(self._generations) > _MAX_GENERATIONS:
                self._generations.clear()
                self._epoch += 1  # every outstanding token is now stale

    def invalidate_prefix(self, store_id: Any, prefix: str) -> None:
        with self._lock:
            keys = [k for (s, k) in self._subkeys if s == store_id and k.startswith(prefix)]
        self.invalidate(store_id, keys)
        with self._lock:
            self._epoch += 1  # reads of keys never cached under this prefix may be in flight

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._subkeys.clear()
            self._bytes = 0
            self._epoch += 1


class CacheBinding:
    """One array's view of a pool: its store identity and how old an entry may be."""

    def __init__(self, cache: ChunkCache, store_id: Any, min_time: Callable[[], float] | None,
                 ) -> None:
        self.cache = cache
        self.store_id = store_id
        self._min_time = min_time  # None: never serve cached data (recheck on every read)

    def load(self, key: str, sub: Any, loader: Callable[[], np.ndarray | None]
             ) -> np.ndarray | None:
        """The decoded chunk (None: missing), from the cache when allowed, else `loader()`."""
        entry = (self.store_id, key, sub)
        if self._min_time is not None:
            hit = self.cache.get(entry, self._min_time())
            if hit is not None:
                return None if hit is _MISSING else hit
        token = self.cache.token(self.store_id, key)
        chunk = loader()
        if self._min_time is not None:
            self.cache.put(entry, _MISSING if chunk is None else chunk, token)
        return chunk

    def lookup(self, key: str, sub: Any) -> tuple[bool, np.ndarray | None]:
        """(True, chunk-or-None) on a usable hit, else (False, None)."""
        if self._min_time is None:
            return False, None
        hit = self.cache.get((self.store_id, key, sub), self._min_time())
        if hit is None:
            return False, None
        return True, (None if hit is _MISSING else hit)

    def token(self, key: str) -> tuple[int, int]:
        return self.cache.token(self.store_id, key)

    def store(self, key: str, sub: Any, chunk: np.ndarray | None, token: tuple[int, int]) -> None:
        if self._min_time is not None:
            self.cache.put((self.store_id, key, sub), _MISSING if chunk is None else chunk, token)

    def invalidate(self, keys: Iterable[str]) -> None:
        self.cache.invalidate(self.store_id, keys)

    def invalidate_prefix(self, prefix: str) -> None:
        self.cache.invalidate_prefix(self.store_id, prefix)


class ShardIndexCache:
    """An array handle's decoded shard indexes, each with the generation of the shard it was
    read from (`KvStore.get_with_generation`); least recently used evicted first. Readers use
    an entry only for reads checked against that generation, so an entry can be old but never
    wrong: a replaced shard fails the check and its index is read again."""

    def __init__(self, total_bytes_limit: int = 16 << 20) -> None:
        self.total_bytes_limit = total_bytes_limit
        self._entries: OrderedDict[str, tuple[np.ndarray, Any]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> tuple[np.ndarray, Any] | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: str, index: np.ndarray, generation: Any) -> None:
        if index.nbytes > self.total_bytes_limit:
            return
        index = index.view()
        index.flags.writeable = False  # shared by every reader
        with self._lock:
            old = self._entries.pop(key, None)
            self._bytes += index.nbytes - (0 if old is None else old[0].nbytes)
            self._entries[key] = (index, generation)
            while self._bytes > self.total_bytes_limit:
                self._bytes -= self._entries.popitem(last=False)[1][0].nbytes

    def discard(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                old = self._entries.pop(key, None)
                if old is not None:
                    self._bytes -= old[0].nbytes

"""TensorStore's shared metadata cache: one entry per array per cache pool.

Arrays opened from specs with the same cache pool (so the same context, unless a spec names an
inline pool) and at the same location share a `SharedMetadata` entry. A resize (or create,
attribute update) through one handle records the new metadata there, and every other handle
adopts it at its next read or write without reading the store: an identity test per call.

Entries live as long as a handle holds them (TensorStore's default pool keeps no unreferenced
entries either): a later open, with no handle left, reads the store again.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any


class SharedMetadata:
    """The metadata of one array as the handles sharing it last knew it."""

    __slots__ = ("__weakref__", "_lock", "metadata")

    def __init__(self, metadata: Any) -> None:
        # Replaced, never mutated: a handle compares it by identity with the one it adopted.
        self.metadata = metadata
        self._lock = threading.Lock()

    def publish(self, metadata: Any) -> Any:
        """Record metadata this process wrote (under the store's lock of the document, so
        entries follow the stored order). Returns the entry's metadata."""
        with self._lock:
            if metadata != self.metadata:  # an equal document keeps its identity: no adopting
                self.metadata = metadata
            return self.metadata

    def offer(self, metadata: Any, seen: Any) -> Any:
        """Record metadata read from the store, unless the entry changed from `seen` since
        the read began (a write recorded meanwhile is at least as new). Returns the entry's
        metadata."""
        with self._lock:
            if self.metadata is seen and metadata != seen:
                self.metadata = metadata
            return self.metadata


class MetadataCache:
    """A cache pool's entries, by location (`node.location_key`)."""

    def __init__(self) -> None:
        self._entries: weakref.WeakValueDictionary[Any, SharedMetadata] = (
            weakref.WeakValueDictionary())
        self._lock = threading.Lock()

    def find(self, key: Any) -> SharedMetadata | None:
        with self._lock:
            return self._entries.get(key)

    def entry(self, key: Any, metadata: Any) -> SharedMetadata:
        """The entry at `key`, made with `metadata` if there is none."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                found = self._entries[key] = SharedMetadata(metadata)
            return found

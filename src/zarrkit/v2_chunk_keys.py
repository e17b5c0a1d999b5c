"""Guarding v2 reads against a wrong `dimension_separator`.

Older zarr-python versions wrote nested ("0/1") chunk keys without recording
`"dimension_separator": "/"` in `.zarray`, and copies between stores can flatten keys the other
way. Read with the wrong separator, every chunk looks missing and the array silently reads as
its fill value. So until a chunk has been found under its expected key, each missing chunk is
also looked up under the other separator; if it is there, reading stops with an error that says
how to fix `.zarray`. Once a chunk was found, the separator is proven and misses cost nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

from .errors import MetadataError
from .kvstore.base import Buffer, ByteRange, KvStore

_OTHER = {".": "/", "/": "."}


class SeparatorGuard(KvStore):
    """Forwards everything to `inner`; checks missing chunk keys of one v2 array."""

    def __init__(self, inner: KvStore, prefix: str, separator: str, declared: bool) -> None:
        super().__init__(read_only=inner.read_only)
        self.inner = inner
        self.driver = inner.driver
        self.io_concurrency = inner.io_concurrency
        self.lock_whole_writes = inner.lock_whole_writes
        self.batches_without_gil = inner.batches_without_gil
        self._prefix = prefix
        self._separator = separator
        self._declared = declared  # whether .zarray states the separator or it is the default
        self._proven = False

    def _check_missing(self, key: str) -> None:
        if self._proven or not key.startswith(self._prefix):
            return
        name = key[len(self._prefix):]
        other = name.replace(self._separator, _OTHER[self._separator])
        if other == name or not self.inner.exists(self._prefix + other):
            return
        said = f"says {self._separator!r}" if self._declared \
            else f"has no dimension_separator, which means {self._separator!r}"
        raise MetadataError(
            f"chunk {key!r} is missing but {self._prefix + other!r} exists: the chunks were "
            f"written with dimension_separator {_OTHER[self._separator]!r}, while "
            f"{self._prefix}.zarray {said}; set \"dimension_separator\": "
            f"{_OTHER[self._separator]!r} in .zarray to read them")

    def _seen(self, key: str, value: Buffer | None) -> Buffer | None:
        if value is None:
            self._check_missing(key)
        else:
            self._proven = True
        return value

    def get(self, key: str, byte_range: ByteRange | None = None) -> Buffer | None:
        return self._seen(key, self.inner.get(key, byte_range))

    def get_transient(self, key: str) -> Buffer | None:
        return self._seen(key, self.inner.get_transient(key))

    def get_many(self, requests: Sequence[tuple[str, ByteRange | None]]
                 ) -> list[Buffer | None]:
        return self._all_seen(requests, self.inner.get_many(requests))

    def get_many_transient(self, requests: Sequence[tuple[str, ByteRange | None]]
                           ) -> list[Buffer | None]:
        return self._all_seen(requests, self.inner.get_many_transient(requests))

    def _all_seen(self, requests: Sequence[tuple[str, ByteRange | None]],
                  values: list[Buffer | None]) -> list[Buffer | None]:
        return [self._seen(k, v) for (k, _), v in zip(requests, values, strict=True)]

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def size(self, key: str) -> int | None:
        return self.inner.size(key)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        return self.inner.list_prefix(prefix)

    def set(self, key: str, value: Buffer) -> None:
        self.inner.set(key, value)

    def set_many(self, items: Iterable[tuple[str, Buffer]]) -> None:
        self.inner.set_many(items)

    def replace(self, key: str, value: Buffer | None) -> None:
        self.inner.replace(key, value)

    def replace_many(self, keys: Sequence[str], values: Iterable[Buffer | None]) -> None:
        self.inner.replace_many(keys, values)

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def delete_many(self, keys: Iterable[str]) -> None:
        self.inner.delete_many(keys)

    def delete_prefix(self, prefix: str) -> None:
        self.inner.delete_prefix(prefix)

    def lock(self, key: str) -> AbstractContextManager[Any]:
        return self.inner.lock(key)

    def lock_shared(self, key: str) -> AbstractContextManager[Any]:
        return self.inner.lock_shared(key)

    def _set(self, key: str, value: Buffer) -> None:
        self.inner.set(key, value)

    def _delete(self, key: str) -> None:
        self.inner.delete(key)

    def to_json(self) -> dict[str, Any]:
        return self.inner.to_json()


def chunk_store(store: KvStore, metadata: Any, prefix: str) -> KvStore:
    """The store an array's chunks are read through: guarded for v2 arrays whose keys contain
    a separator (rank 2 and up)."""
    if getattr(metadata, "zarr_format", 3) != 2 or len(metadata.shape) < 2:
        return store
    declared = metadata.dimension_separator
    return SeparatorGuard(store, prefix, declared or ".", declared is not None)

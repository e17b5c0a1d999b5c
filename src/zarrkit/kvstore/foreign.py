"""Other libraries' stores as zarrkit stores, so `zarrkit.open(store)` takes what zarr-python
users already hold: a mapping of keys to bytes (a dict, zarr-python 2's stores), an fsspec
`FSMap` (`fsspec.get_mapper(url)`, kerchunk's `reference://` maps included), zarr-python 3's
store objects (`LocalStore`, `MemoryStore`, `FsspecStore`, `ObjectStore`, `ZipStore`, and any
other through its asynchronous methods: icechunk's `IcechunkStore`, `LoggingStore`, ...) and
obstore's (`S3Store`, `GCSStore`, `AzureStore`, `HTTPStore`, `LocalStore`).

A mapping is used as it is (values written as bytes); an fsspec file system through its own
calls, so byte ranges and batches of reads are single requests. Their writes are as atomic as
the mapping or file system makes them; their locks exclude this process's threads only. An
obstore store is driven by zarrkit's object store (atomic PUTs, leases between processes), with
its configuration, credentials and prefix as given.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Hashable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any

from ..errors import SpecError, StoreError
from ._util import as_bytes, resolve_range
from .base import Buffer, ByteRange, GenerationMismatch, KvStore, validate_key, validate_prefix
from .file import FileStore


class MappingStore(KvStore):
    """A mapping of keys ("a/zarr.json") to bytes; read-only unless it is mutable."""

    driver = "mapping"

    def __init__(self, mapping: Mapping[str, Any], read_only: bool = False) -> None:
        super().__init__(read_only=read_only or not isinstance(mapping, MutableMapping))
        self.mapping = mapping

    def __reduce__(self) -> tuple[Any, ...]:
        return MappingStore, (self.mapping, self.read_only)

    def get(self, key: str, byte_range: ByteRange | None = None) -> Buffer | None:
        try:
            value = self.mapping[validate_key(key)]
        except KeyError:
            return None
        return _range_of(value, byte_range)

    def get_with_generation(self, key: str, byte_range: ByteRange | None = None
                            ) -> tuple[Buffer | None, Hashable | None]:
        """A dict hands out the very object it holds, which a write replaces: that object is
        the generation (compared by identity), so a shard's index and chunks come from one
        value. Other mappings may make a new object per read: no generations there."""
        if not isinstance(self.mapping, dict):
            return super().get_with_generation(key, byte_range)
        value = self.mapping.get(validate_key(key))
        return (None, None) if value is None else (_range_of(value, byte_range), _Same(value))

    def get_ranges_if(self, key: str, ranges: Sequence[ByteRange], generation: Hashable | None,
                      transient: bool = False) -> list[Buffer | None]:
        if generation is None:
            return super().get_ranges_if(key, ranges, generation, transient)
        value = self.mapping.get(validate_key(key))  # type: ignore[attr-defined]
        if value is None or generation != _Same(value):
            raise GenerationMismatch(f"{key!r} in the mapping holds a new value")
        return [_range_of(value, rng) for rng in ranges]

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        return iter([k for k in list(self.mapping) if k.startswith(prefix)])  # a snapshot

    def _set(self, key: str, value: Buffer) -> None:
        self.mapping[key] = as_bytes(value)  # type: ignore[index]

    def _delete(self, key: str) -> None:
        self.mapping.pop(key, None)  # type: ignore[attr-defined]

    def to_json(self) -> dict[str, Any]:
        return {"driver": self.driver}


class _Same:
    """A generation that matches only the very same object: no comparison of bytes, and no id
    reused by a value written since (the token keeps its object alive)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)


def _range_of(value: Any, byte_range: ByteRange | None) -> bytes:
    value = _bytes_of(value)
    return value if byte_range is None else value[slice(*resolve_range(byte_range, len(value)))]


def _bytes_of(value: Any) -> bytes:
    """A mapping's value as bytes (zarr-python 3's memory store holds its own Buffer type)."""
    to_bytes = getattr(value, "to_bytes", None)
    return to_bytes() if callable(to_bytes) else as_bytes(value)


class _BatchReads(KvStore):
    """A store whose reads are all batches (`get_many`): one value is a batch of one."""

    def get(self, key: str, byte_range: ByteRange | None = None) -> Buffer | None:
        return self.get_many([(key, byte_range)])[0]


class FsspecStore(_BatchReads):
    """Keys are files below `root` in an fsspec file system."""

    driver = "fsspec"

    def __init__(self, fs: Any, root: str = "", read_only: bool = False) -> None:
        super().__init__(read_only=read_only)
        self.fs = fs
        self.root = root.rstrip("/")
        self._local = "file" in _protocols(fs) or "local" in _protocols(fs)
        # Remote file systems are latency-bound: keep requests in flight.
        self.io_concurrency = 0 if self._local else 16

    def __reduce__(self) -> tuple[Any, ...]:
        return FsspecStore, (self.fs, self.root, self.read_only)

    def _make_parent(self) -> tuple[FsspecStore, str] | None:
        """The folder one level up on the same file system; None at its top (a bucket)."""
        up, _, name = self.root.rpartition("/")
        return (FsspecStore(self.fs, up, self.read_only), name) if up and name else None

    def _path(self, key: str) -> str:
        validate_key(key)
        return f"{self.root}/{key}" if self.root else key

    def get_many(self, requests: Sequence[tuple[str, ByteRange | None]]
                 ) -> list[Buffer | None]:
        if not requests:
            return []
        paths = [self._path(key) for key, _ in requests]
        bounds = [_bounds(rng) for _, rng in requests]
        found = self.fs.cat_ranges(paths, [b[0] for b in bounds], [b[1] for b in bounds],
                                   on_error="return")
        return [self._value(key, rng, got) for (key, rng), got in zip(requests, found,
                                                                        strict=True)]

    def _value(self, key: str, rng: ByteRange | None, got: Any) -> Buffer | None:
        if isinstance(got, FileNotFoundError | KeyError):
            return None
        if isinstance(got, OSError | ValueError) and rng is not None and rng.offset < 0:
            whole = self.get(key)  # a suffix longer than the value: some seek before its start
            return None if whole is None else rng.slice_of(whole)
        if isinstance(got, BaseException):
            raise self._error("read", key, got) from got
        return got

    def _error(self, action: str, key: str, error: BaseException) -> StoreError:
        return StoreError(f"fsspec {_protocols(self.fs)[0]} file system: cannot {action} "
                          f"{key!r} below {self.root or '/'!r}: {type(error).__name__}: {error}")

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        top = self._path(prefix[:-1]) if prefix else self.root
        start = len(self.root) + 1 if self.root else 0
        try:
            found = self.fs.find(top) if top else self.fs.find("")
        except FileNotFoundError:
            return iter(())
        names = (self.fs._strip_protocol(p) for p in found)
        return iter([p[start:] for p in names if p[start:].startswith(prefix)])

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """One level, as the file system lists it (`ls`): a remote group's members without
        every chunk key below them."""
        validate_prefix(prefix)
        top = self._path(prefix[:-1]) if prefix else self.root
        try:
            entries = self.fs.ls(top or "", detail=True)
        except FileNotFoundError:
            return [], []
        keys, dirs = set(), set()
        for entry in entries:
            name = self.fs._strip_protocol(entry["name"]).rstrip("/").rpartition("/")[2]
            (dirs if entry.get("type") == "directory" else keys).add(name)
        return sorted(keys), sorted(dirs)

    def _set(self, key: str, value: Buffer) -> None:
        path = self._path(key)
        try:
            if self._local:  # local directories are not made by writing below them
                self.fs.makedirs(path.rpartition("/")[0] or ".", exist_ok=True)
            self.fs.pipe_file(path, as_bytes(value))
        except (OSError, ValueError) as e:
            raise self._error("write", key, e) from e

    def _delete(self, key: str) -> None:
        try:
            self.fs.rm_file(self._path(key))
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as e:
            raise self._error("delete", key, e) from e

    def to_json(self) -> dict[str, Any]:
        return {"driver": self.driver, "protocol": _protocols(self.fs)[0], "path": self.root}


def _protocols(fs: Any) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def _bounds(rng: ByteRange | None) -> tuple[int | None, int | None]:
    """fsspec's (start, end) for a range: a negative start counts from the end."""
    if rng is None:
        return None, None
    if rng.offset < 0 or rng.length is None:
        return rng.offset, None
    return rng.offset, rng.offset + rng.length


# -- recognising them -----------------------------------------------------------------------------


def adapt(where: Any, read_only: bool) -> tuple[KvStore, str] | None:
    """(a zarrkit store, path within it) for another library's store object; None if `where`
    is not one (a path, URL or spec)."""
    if isinstance(where, str | bytes | os.PathLike):
        return None
    module = type(where).__module__ or ""
    if module.startswith(("zarr.storage", "zarr.abc")) or _is_zarr_python_store(where):
        return _zarr_python_store(where, read_only)
    if module.startswith("obstore"):
        return _obstore_store(where, read_only), ""
    if module.startswith("fsspec") and hasattr(where, "fs") and hasattr(where, "root"):
        return _fsspec_store(where.fs, where.root, read_only), ""  # an FSMap
    if isinstance(where, dict):  # a spec is a dict too: the contents tell
        return None if _is_spec(where) else (MappingStore(where, read_only), "")
    if isinstance(where, Mapping):
        return MappingStore(where, read_only), ""
    return None


def _fsspec_store(fs: Any, root: str, read_only: bool) -> KvStore:
    """A store over an fsspec file system: zarrkit's own for local files (atomic writes,
    locks between processes), else one that calls the file system."""
    if set(_protocols(fs)) & {"file", "local"}:
        return FileStore(fs._strip_protocol(root) or "/", read_only=read_only)
    return FsspecStore(fs, root, read_only)


def _is_spec(where: Mapping[str, Any]) -> bool:
    """A TensorStore-style spec rather than a store's contents: it has a driver, or values
    that are no store values (an empty dict is an empty store)."""
    if "driver" in where:
        return True
    return not all(isinstance(k, str) and isinstance(v, bytes | bytearray | memoryview)
                   for k, v in where.items())


def _zarr_python_store(store: Any, read_only: bool) -> tuple[KvStore, str]:
    read_only = read_only or bool(getattr(store, "read_only", False))
    kind = type(store).__name__
    if kind == "LocalStore":
        return FileStore(str(store.root), read_only=read_only), ""
    if kind == "MemoryStore":
        return MappingStore(_BufferDict(store._store_dict), read_only), ""
    if kind == "FsspecStore":
        return _fsspec_store(_sync_fs(store.fs), store.path, read_only), ""
    if kind == "ObjectStore":
        return _zarr_object_store(store, read_only), ""
    if kind == "ZipStore":
        if getattr(store, "_is_open", False) and getattr(store, "_zmode", "r") != "r":
            # zarr-python has the archive open for writing: its entries so far, and its
            # central directory, are in that object's hands until it is closed (the file
            # itself is no readable archive yet, and a second writer would be overwritten).
            return ZarrPythonStore(store, read_only), ""
        from .url import open_kvstore

        return open_kvstore(str(store.path), read_only=read_only)
    if isinstance(store, Mapping):  # zarr-python 2's stores are mappings of keys to bytes
        return MappingStore(store, read_only), ""
    if callable(getattr(store, "list_prefix", None)) and callable(getattr(store, "get", None)):
        return ZarrPythonStore(store, read_only), ""  # any other zarr-python 3 store
    raise SpecError(f"cannot use zarr-python's {kind} as a zarrkit store (not a store)")


def _is_zarr_python_store(where: Any) -> bool:
    """A subclass of zarr-python 3's Store defined elsewhere (icechunk's, an application's)."""
    return any(c.__module__ == "zarr.abc.store" and c.__name__ == "Store"
               for c in type(where).__mro__)


def _zarr_object_store(store: Any, read_only: bool) -> KvStore:
    """zarr-python's ObjectStore: zarrkit's own store for the obstore stores it drives, else
    (obstore's MemoryStore, ...) zarr-python's methods, as for any other zarr-python store:
    refused with a SpecError before, though zarr-python reads and writes it."""
    from .object_store import client_kind

    inner = store.store
    if type(inner).__name__ == "LocalStore" or client_kind(inner) is not None:
        return _obstore_store(inner, read_only)
    return ZarrPythonStore(store, read_only)


def _obstore_store(client: Any, read_only: bool) -> KvStore:
    """An obstore store object: a local one becomes zarrkit's file store (atomic writes,
    locks between processes); those of object storage are used as they are."""
    if type(client).__name__ == "LocalStore":
        if client.prefix is None:
            raise SpecError("obstore's LocalStore without a prefix (the whole file system) "
                            "cannot be a zarrkit store: give it the directory")
        return FileStore(str(client.prefix), read_only=read_only)
    from .object_store import from_client

    return from_client(client, read_only=read_only)


def _sync_fs(fs: Any) -> Any:
    """zarr-python's file systems are asynchronous instances; zarrkit calls them directly."""
    if getattr(fs, "sync_fs", None) is not None:  # fsspec's wrapper of a synchronous one
        return fs.sync_fs
    if not getattr(fs, "asynchronous", False):
        return fs
    return type(fs)(**{**(fs.storage_options or {}), "asynchronous": False})


class _BufferDict(MutableMapping[str, Any]):
    """zarr-python 3's memory store dict (values of its Buffer type) as one of bytes."""

    def __init__(self, values: MutableMapping[str, Any]) -> None:
        self.values = values

    def __getitem__(self, key: str) -> bytes:
        return self.values[key].to_bytes()

    def __setitem__(self, key: str, value: bytes) -> None:
        from zarr.core.buffer import default_buffer_prototype

        self.values[key] = default_buffer_prototype().buffer.from_bytes(value)

    def __delitem__(self, key: str) -> None:
        del self.values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.values))

    def __len__(self) -> int:
        return len(self.values)


__all__ = ["FsspecStore", "MappingStore", "adapt"]


# -- any other zarr-python 3 store --------------------------------------------------------------


class ZarrPythonStore(_BatchReads):
    """A zarr-python 3 store zarrkit has no store of its own for (icechunk's `IcechunkStore`,
    `LoggingStore`, an application's), through its asynchronous methods, run on zarr-python's
    event loop; a batch of reads is one gather. Writes and locks are as the store makes them
    (locks exclude this process's threads only)."""

    driver = "zarr-python"
    io_concurrency = 16  # such stores are often remote: keep requests in flight

    def __init__(self, store: Any, read_only: bool = False) -> None:
        super().__init__(read_only=read_only or bool(getattr(store, "read_only", False)))
        self.store = store

    def __reduce__(self) -> tuple[Any, ...]:
        return ZarrPythonStore, (self.store, self.read_only)

    def get_many(self, requests: Sequence[tuple[str, ByteRange | None]]
                 ) -> list[Buffer | None]:
        if not requests:
            return []
        from zarr.core.buffer import default_buffer_prototype

        prototype = default_buffer_prototype()

        async def gather() -> list[Any]:
            return await asyncio.gather(*(self._get_one(validate_key(key), rng, prototype)
                                          for key, rng in requests), return_exceptions=True)

        found = self._run(gather())
        return [self._value(key, got) for (key, _), got in zip(requests, found, strict=True)]

    async def _get_one(self, key: str, rng: ByteRange | None, prototype: Any) -> Any:
        if rng is not None and rng.length == 0:
            # No bytes wanted, only whether the key exists (`exists`, `list_dir`):
            # zarr-python's ObjectStore refuses an empty range ("Invalid range requested").
            return prototype.buffer.from_bytes(b"") if await self.store.exists(key) else None
        try:
            return await self.store.get(key, prototype, _zarr_range(rng))
        except (FileNotFoundError, KeyError):
            raise
        except Exception:
            if rng is None:
                raise
        # obstore's stores refuse a range starting at or past the value's end, which reads
        # what exists there (b""): cut it from the whole value (or fail as that read does).
        whole = await self.store.get(key, prototype)
        return None if whole is None else \
            prototype.buffer.from_bytes(bytes(rng.slice_of(whole.to_bytes())))

    def _value(self, key: str, got: Any) -> Buffer | None:
        # A key the store cannot hold is missing there: icechunk refuses all but v3's keys
        # ("invalid zarr key format"), which format detection asks for.
        if isinstance(got, FileNotFoundError | KeyError) or \
                isinstance(got, Exception) and "invalid zarr key" in str(got):
            return None
        if isinstance(got, BaseException):
            raise self._error("read", key, got) from got
        return None if got is None else got.to_bytes()

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)

        async def collect() -> list[str]:
            return [key async for key in self.store.list_prefix(prefix)]

        return iter(self._run(collect()))

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        """The store's own listing of one level (a group's members without every chunk key
        below them, which icechunk would list), each name told a key or a prefix by whether
        a value is stored under it."""
        validate_prefix(prefix)

        async def listed() -> list[str]:
            return [n.rstrip("/") async for n in self.store.list_dir(prefix)]

        names = self._run(listed())
        found = self.get_many([(prefix + n, ByteRange(0, 0)) for n in names])
        return (sorted(n for n, v in zip(names, found, strict=True) if v is not None),
                sorted(n for n, v in zip(names, found, strict=True) if v is None))

    def _set(self, key: str, value: Buffer) -> None:
        from zarr.core.buffer import default_buffer_prototype

        data = default_buffer_prototype().buffer.from_bytes(as_bytes(value))
        self._call("write", key, self.store.set(key, data))

    def _delete(self, key: str) -> None:
        try:
            self._call("delete", key, self.store.delete(key))
        except StoreError as e:
            if not isinstance(e.__cause__, KeyError | FileNotFoundError):
                raise  # gone already (icechunk: with its node) is deleted

    def delete_prefix(self, prefix: str) -> None:
        """One call of the store's own: icechunk deletes a node's chunks with the node."""
        self._check_writable(prefix or "<root>")
        self._call("delete", prefix or "<root>", self.store.delete_dir(validate_prefix(prefix)))

    def _call(self, action: str, key: str, coroutine: Any) -> Any:
        try:
            return self._run(coroutine)
        except Exception as e:  # noqa: BLE001 - each store raises its own types (icechunk's)
            raise self._error(action, key, e) from e

    def _error(self, action: str, key: str, error: BaseException) -> StoreError:
        return StoreError(f"zarr-python store {type(self.store).__name__}: cannot {action} "
                          f"{key!r}: {type(error).__name__}: {error}")

    @staticmethod
    def _run(coroutine: Any) -> Any:
        from zarr.core.sync import sync

        return sync(coroutine)

    def to_json(self) -> dict[str, Any]:
        return {"driver": self.driver}


def _zarr_range(rng: ByteRange | None) -> Any:
    """zarr-python's byte request for `rng`."""
    if rng is None:
        return None
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

    if rng.offset < 0:
        return SuffixByteRequest(-rng.offset)
    if rng.length is None:
        return OffsetByteRequest(rng.offset)
    return RangeByteRequest(rng.offset, rng.offset + rng.length)

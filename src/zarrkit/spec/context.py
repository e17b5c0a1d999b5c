"""TensorStore contexts: shared resources (cache pools, concurrency limits) by name.

A `Context` maps resource names ("cache_pool", "cache_pool#big", "data_copy_concurrency", ...)
to their JSON; resolving a name gives the same resource object every time, so arrays opened
with one context share a cache pool. A spec's own `context` member makes a child context whose
entries override the parent's. Resources not named anywhere get TensorStore's defaults: a cache
pool of 0 bytes (no caching) and "shared" concurrency limits.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from ..engine.cache import ChunkCache
from ..errors import SpecError
from ..kvstore.memory import MemoryStore
from ..kvstore.url import valid_concurrency
from .metadata_cache import MetadataCache

_CONCURRENCY = ("data_copy_concurrency", "file_io_concurrency")
# Resources a spec may configure that change nothing here (they tune TensorStore's own I/O).
_PASSIVE = ("file_io_sync", "file_io_locking", "file_io_mode", "file_io_retries",
            "ocdbt_coordinator", "http_request_concurrency",
            "http_request_retries", "experimental_gcs_rate_limiter", "gcs_request_concurrency",
            "gcs_user_project", "gcs_request_retries", "s3_request_concurrency",
            "s3_request_retries", "experimental_s3_rate_limiter", "aws_credentials")
_MEMORY = "memory_key_value_store"
_KINDS = ("cache_pool", *_CONCURRENCY, _MEMORY, *_PASSIVE)


class CachePool:
    """A pool of decoded chunks (`cache`, None when total_bytes_limit is 0: no caching) and of
    the arrays' metadata (`metadata`, shared by the handles opened with the pool)."""

    def __init__(self, json: Any, where: str) -> None:
        json = _object(json, where, {"total_bytes_limit"})
        limit = _integer(json.get("total_bytes_limit", 0))
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise SpecError(f"{where}.total_bytes_limit: expected a non-negative integer, got "
                            f"{limit!r}")
        self.total_bytes_limit = limit
        self.cache = ChunkCache(limit) if limit else None
        # Shared whatever the limit: TensorStore's handles share metadata in a 0-byte pool too.
        self.metadata = MetadataCache()

    def to_json(self) -> dict[str, Any]:
        return {"total_bytes_limit": self.total_bytes_limit} if self.total_bytes_limit else {}


class ConcurrencyLimit:
    """A bound on concurrent operations: an integer, or "shared" (the process-wide default).
    Every array opened with the same resource shares its `semaphore`."""

    def __init__(self, json: Any, where: str) -> None:
        json = _object(json, where, {"limit"})
        if not valid_concurrency(json):  # the kvstore drivers' check of the same resources
            raise SpecError(f"{where}.limit: expected a positive integer or \"shared\", got "
                            f"{json['limit']!r}")
        limit = _integer(json.get("limit", "shared"))
        self.limit = limit
        # What the engine holds a slot of per task; None ("shared"): the process-wide pool.
        self.semaphore = None if limit == "shared" else threading.BoundedSemaphore(limit)

    def to_json(self) -> dict[str, Any]:
        return {} if self.limit == "shared" else {"limit": self.limit}


class MemoryResource:
    """The store of `{"driver": "memory"}` kvstores (without a name): opens with one context
    share it, as in TensorStore; every other context has its own."""

    def __init__(self, json: Any, where: str) -> None:
        _object(json, where, set())
        self.store = MemoryStore()

    def to_json(self) -> dict[str, Any]:
        return {}


class _Passive:
    def __init__(self, json: Any, where: str) -> None:
        self.json = copy.deepcopy(json)

    def to_json(self) -> Any:
        return copy.deepcopy(self.json)


def _integer(value: Any) -> Any:
    """An integral float (10.0) as its int, as TensorStore's JSON integers accept it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _object(json: Any, where: str, members: set[str]) -> dict[str, Any]:
    if json is None:
        return {}
    if not isinstance(json, dict):
        raise SpecError(f"{where}: expected an object, got {json!r}")
    unknown = set(json) - members
    if unknown:
        raise SpecError(f"{where}: unknown member(s) {sorted(unknown)}")
    return json


def _kind(name: str, where: str) -> str:
    kind = name.split("#", 1)[0]
    if kind not in _KINDS:
        raise SpecError(f"{where}: unknown context resource {name!r} (known: "
                        f"{', '.join(_KINDS[:3])}, ...)")
    return kind


def _make(kind: str, json: Any, where: str) -> Any:
    if kind == "cache_pool":
        return CachePool(json, where)
    if kind in _CONCURRENCY:
        return ConcurrencyLimit(json, where)
    if kind == _MEMORY:
        return MemoryResource(json, where)
    return _Passive(json, where)


class Context:
    """Named, shared resources; `Context(json, parent)` as in TensorStore."""

    def __init__(self, json: Any = None, parent: Context | None = None) -> None:
        if isinstance(json, Context):
            json, parent = json.to_json(), json._parent if parent is None else parent
        json = {} if json is None else json
        if not isinstance(json, dict):
            raise SpecError(f"context: expected an object, got {json!r}")
        for name, value in json.items():
            kind = _kind(name, "context")
            _make(kind, value if not isinstance(value, str) else None, f"context.{name}")
        self._json = copy.deepcopy(json)
        self._parent = parent
        self._resources: dict[str, Any] = {}
        self._lock = threading.Lock()

    @property
    def parent(self) -> Context | None:
        return self._parent

    def to_json(self) -> dict[str, Any]:
        return copy.deepcopy(self._json)

    def flat_json(self) -> dict[str, Any]:
        """This context's entries over its parents': a spec retaining the context then still
        finds the resources its entries refer to in the parents."""
        parent = self._parent.flat_json() if self._parent is not None else {}
        return {**parent, **self.to_json()}

    def resource(self, ref: Any, kind: str, where: str = "context") -> Any:
        """The resource a spec member names: a reference string ("cache_pool#a"), an inline
        object (a new, unshared resource), or None (the default of that kind)."""
        if ref is None:
            ref = kind
        if isinstance(ref, str):
            if _kind(ref, where) != kind:
                raise SpecError(f"{where}: {ref!r} is not a {kind} resource")
            return self._named(ref, where, set())
        return _make(kind, ref, where)

    def _named(self, name: str, where: str, seen: set[str]) -> Any:
        if name in seen:
            raise SpecError(f"{where}: context resource {name!r} refers to itself")
        with self._lock:
            found = self._resources.get(name)
        if found is not None:
            return found
        if name in self._json:
            value = self._json[name]
            if isinstance(value, str):  # an alias of another resource, of the same kind
                if _kind(value, where) != _kind(name, where):
                    raise SpecError(f"{where}: context resource {name!r} refers to {value!r}, "
                                    "a resource of another kind")
                resource = self._named(value, where, seen | {name})
            else:
                resource = _make(_kind(name, where), value, f"context.{name}")
        elif self._parent is not None:
            resource = self._parent._named(name, where, seen)
        elif "#" in name:  # only a kind's bare name has a default; an "#id" must be defined
            raise SpecError(f"{where}: context resource {name!r} is not defined")
        else:
            resource = _make(_kind(name, where), None, f"context.{name}")
        with self._lock:
            return self._resources.setdefault(name, resource)

    def __repr__(self) -> str:
        return f"Context({self._json!r})"

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
from ..kvstore._io_resources import NORMALIZE, RATE_LIMITERS, normalize
from ..kvstore._rate_limit import RateLimits
from ..kvstore.memory import MemoryStore
from ..kvstore.resources import DEFAULT, KvStoreContext, check_alias, follow
from ..kvstore.url import valid_concurrency
from .metadata_cache import MetadataCache

_CONCURRENCY = ("data_copy_concurrency", "file_io_concurrency", "s3_request_concurrency",
                "gcs_request_concurrency", "http_request_concurrency")
# I/O tuning (file_io_sync, file_io_locking, retries, gcs_user_project, ...): checked and
# written as in TensorStore; the kvstore drivers read their JSON.
_TUNING = tuple(kind for kind in NORMALIZE if kind not in RATE_LIMITERS)
# Resources kept as given: the kvstore drivers read their JSON (aws_credentials), or they
# change nothing in zarrkit (the OCDBT coordinator).
_PASSIVE = ("ocdbt_coordinator", "aws_credentials")
_MEMORY = "memory_key_value_store"
# What a spec's kvstore gets for resources its contexts leave undefined, where TensorStore's
# default is not the native API's (which does not fsync: it costs milliseconds per chunk).
_TENSORSTORE_DEFAULTS = {"file_io_sync": True}
_KINDS = ("cache_pool", *_CONCURRENCY, _MEMORY, *_TUNING, *RATE_LIMITERS, *_PASSIVE)
#: Every context resource kind: the spec members `Spec.update(strip_context=True)` drops.
RESOURCE_KINDS = frozenset(_KINDS)


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


class _Tuning:
    """An I/O tuning resource (file_io_locking, *_request_retries, ...): checked and written
    as TensorStore does; the kvstore drivers read its JSON."""

    def __init__(self, kind: str, json: Any, where: str) -> None:
        self.json = normalize(kind, json, where)

    def to_json(self) -> Any:
        return copy.deepcopy(self.json)


class RateLimiter:
    """A request rate limiter (experimental_s3_rate_limiter, ...): its JSON as TensorStore
    writes it, and the `limits` every store opened with this resource shares."""

    def __init__(self, kind: str, json: Any, where: str) -> None:
        self.json = normalize(kind, json, where)
        self._where = where
        self._limits: RateLimits | None = None
        self._lock = threading.Lock()

    @property
    def limits(self) -> RateLimits | None:
        """Made at first use, as TensorStore makes it at the first open (its buckets fill from
        then); None when neither rate is set."""
        with self._lock:
            if self._limits is None:
                self._limits = RateLimits(self.json, self._where)
        return self._limits if self._limits.read or self._limits.write else None

    def to_json(self) -> Any:
        return copy.deepcopy(self.json)


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
    if kind in _TUNING:
        return _Tuning(kind, json, where)
    if kind in RATE_LIMITERS:
        return RateLimiter(kind, json, where)
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
            if isinstance(value, str):  # an alias: refused at once if of another kind
                check_alias(name, value, "context")
            _make(kind, value if not isinstance(value, str) else None, f"context.{name}")
        self._json = copy.deepcopy(json)
        self._parent = parent
        self._resources: dict[str, Any] = {}
        self._inline: dict[str, Any] = {}  # see `bound`
        self._lock = threading.Lock()

    @property
    def parent(self) -> Context | None:
        return self._parent

    def to_json(self) -> dict[str, Any]:
        return copy.deepcopy(self._json)

    def resource(self, ref: Any, kind: str, where: str = "context") -> Any:
        """The resource a spec member names: a reference string ("cache_pool#a"), an inline
        object (a new, unshared resource), or None (the default of that kind)."""
        return self.bind(ref, kind, where)[1]

    def bind(self, ref: Any, kind: str, where: str = "context") -> tuple[str | None, Any]:
        """`resource`, with the name it has where it is defined (aliases followed; None for
        an inline object): what a spec retaining the context names it."""
        if ref is None:
            ref = kind
        if isinstance(ref, str):
            _kind(ref, where)  # an unknown kind is named as such, not as another kind
            level, name, json = follow(ref, kind, self.scopes(), where)
            json = None if json is DEFAULT else json
            return name, self._ancestor(level)._shared(name, kind, json)
        kept = self._inline.get(kind)
        if kept is not None and _make(kind, ref, where).to_json() == kept.to_json():
            return None, kept
        return None, _make(kind, ref, where)

    @classmethod
    def bound(cls, resources: dict[str, Any], inline: dict[str, Any]) -> Context:
        """A context defining each name as its resource's JSON and holding those very
        resources, and the `inline` ones by kind: a retained spec object reopens with the
        resources its array was opened with."""
        context = cls({name: resource.to_json() for name, resource in resources.items()})
        context._resources.update(resources)
        context._inline = dict(inline)
        return context

    def scopes(self) -> tuple[dict[str, Any], ...]:
        """The JSON of this context and of its parents, innermost first: where references
        are resolved (by the kvstore drivers too, for their members)."""
        chain = []
        context: Context | None = self
        while context is not None:
            chain.append(context._json)
            context = context._parent
        return tuple(chain)

    def for_kvstore(self, memory: MemoryStore | None = None,
                    shared: dict[str, Any] | None = None) -> KvStoreContext:
        """What a kvstore spec opened in this context sees: its scopes, TensorStore's defaults
        where the native API has others (a file store fsyncs unless told not to), the
        memory store it opens if it is a memory spec, and the objects of the resources it
        shares (`shared`: a rate limiter's limits, by kind)."""
        return KvStoreContext(self.scopes(), _TENSORSTORE_DEFAULTS, memory, shared or {})

    def _ancestor(self, level: int) -> Context:
        """The context `level` parents up (the root for a default, which is found nowhere)."""
        context = self
        while level and context._parent is not None:
            context, level = context._parent, level - 1
        return context

    def _shared(self, name: str, kind: str, json: Any) -> Any:
        """The resource this context defines as `name` (its default if `json` is None), made
        once: every reference to it gets the same object."""
        with self._lock:
            found = self._resources.get(name)
        if found is not None:
            return found
        resource = _make(kind, json, f"context.{name}")
        with self._lock:
            return self._resources.setdefault(name, resource)

    def __repr__(self) -> str:
        return f"Context({self._json!r})"

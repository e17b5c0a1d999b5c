"""Open key/value stores from URLs, local paths and TensorStore-style kvstore specs.

Accepted forms (TensorStore's conventions):

* a `KvStore` instance;
* a local path (`str` or `os.PathLike`): a directory store, or a zip store if the name ends in
  ".zip" (in any case) and is not an existing directory;
* URLs `file:///abs/dir`, `memory://name/path`, and pipelines whose later parts are adapters:
  `file:///data/a.zip|zip:inner/path`;
* JSON specs `{"driver": "file", "path": "/abs/dir/"}`, `{"driver": "memory", "path": "name/p"}`,
  `{"driver": "zip", "path": "inner/", "base": {"driver": "file", "path": "/x.zip"}}` (`base`
  may also be a URL string).

Drivers live in a registry keyed by driver name, which is also the URL scheme, so remote stores
(s3, gs, http, ...) plug in with `register_kvstore_driver` without touching this module.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from ..errors import InvalidKeyError, SpecError
from . import foreign
from ._io_resources import normalize as normalize_resource
from ._util import URL_SAFE
from .base import KvStore, validate_key
from .file import FileStore
from .memory import MemoryStore
from .resources import KvStoreContext, is_reference, resolve_member
from .zip import ZipStore

Spec = dict[str, Any]

_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_MODES = ("r", "r+", "a", "w", "w-")


@dataclass(frozen=True)
class OpenOptions:
    """How a store is to be opened: `read_only`, and the zarr-style `mode` it came from."""

    read_only: bool = False
    mode: str = "a"
    #: Remote stores' options (credentials, endpoint, ...) as fsspec users write them; local
    #: drivers ignore them.
    storage_options: Mapping[str, Any] | None = None
    #: The enclosing context (the spec layer's): where references the spec's members make
    #: are looked up after its own `context`, and its memory store. None: the native API.
    context: KvStoreContext | None = None


@dataclass(frozen=True)
class KvStoreDriver:
    """One kind of store.

    `open(spec, options)` returns the store and the path within it (no slashes at the ends).
    `from_url(body, base, url)` turns the text after "<name>:" into a spec (`base` is the spec of
    the preceding pipeline part, for adapters); `to_url(spec)` is the inverse, without the base.
    `members` lists the spec members accepted (others are refused, as TensorStore does).
    """

    name: str
    open: Callable[[Spec, OpenOptions], tuple[KvStore, str]]
    from_url: Callable[[str, Spec | None, str], Spec] | None = None
    to_url: Callable[[Spec], str] | None = None
    adapter: bool = False
    members: frozenset[str] = field(default_factory=frozenset)
    #: Checks the members' values (raising SpecError), as TensorStore does when it parses a spec.
    check: Callable[[Spec], None] | None = None


_DRIVERS: dict[str, KvStoreDriver] = {}


def register_kvstore_driver(driver: KvStoreDriver, *, replace: bool = False) -> None:
    """Make `driver` available by its name in specs and as a URL scheme."""
    if driver.name in _DRIVERS and not replace:
        raise SpecError(f"kvstore driver {driver.name!r} is already registered")
    _DRIVERS[driver.name] = driver


def get_kvstore_driver(name: str) -> KvStoreDriver:
    driver = _DRIVERS.get(name)
    if driver is None:
        known = ", ".join(sorted(_DRIVERS))
        raise SpecError(f"unknown kvstore driver {name!r} (known: {known})")
    return driver


# -- path helpers --------------------------------------------------------------------------
def _clean_path(path: str, where: object) -> str:
    """`path` without slashes at the ends, every segment a valid key segment."""
    path = path.strip("/")
    if path:
        try:
            validate_key(path)
        except InvalidKeyError as exc:
            raise SpecError(f"invalid path {path!r} in kvstore {where!r}: {exc}") from None
    return path


def _join(base: str, path: str) -> str:
    if not path:
        return base
    if not base:
        return path
    return base.rstrip("/") + "/" + path


def _spec_path(spec: Spec, where: object) -> str:
    path = spec.get("path", "")
    if not isinstance(path, str):
        raise SpecError(f"kvstore spec {where!r}: 'path' must be a string")
    return path


def _url_body(body: str, scheme: str, url: str) -> str:
    """The percent-decoded path of `scheme://<path>` (no query or fragment allowed)."""
    if not body.startswith("//"):
        raise SpecError(f"invalid {scheme} URL {url!r}: expected {scheme}://...")
    if "?" in body or "#" in body:
        raise SpecError(f"invalid {scheme} URL {url!r}: query strings and fragments are not "
                        "supported")
    return _unquote(body[2:], url)


_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _unquote(text: str, url: str) -> str:
    # unquote() keeps a malformed escape ("%zz") as text; TensorStore refuses the URL.
    if _BAD_ESCAPE.search(text):
        raise SpecError(f"invalid percent-encoding in URL {url!r}")
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError as exc:
        raise SpecError(f"invalid percent-encoding in URL {url!r}") from exc


# -- file ----------------------------------------------------------------------------------
def _file_from_url(body: str, base: Spec | None, url: str) -> Spec:
    rest = _url_body(body, "file", url)
    host, slash, path = rest.partition("/")
    if host not in ("", "localhost"):  # RFC 8089: only the local host
        raise SpecError(f"invalid file URL {url!r}: remote host {host!r} is not supported")
    if not slash:  # "file://" (TensorStore: no relative paths)
        raise SpecError(f"invalid file URL {url!r}: expected an absolute path, file:///dir")
    return {"driver": "file", "path": slash + path}


def _file_to_url(spec: Spec) -> str:
    path = _spec_path(spec, spec)
    if not path.startswith("/"):  # "file://rel/x" would name the host "rel"
        raise SpecError(f"kvstore spec {spec!r} has no URL form: file URLs need an absolute "
                        f"path, not the relative {path!r}")
    return "file://" + quote(path, safe=URL_SAFE)


def check_resource(spec: Spec, name: str, valid: Callable[[Any], bool], expected: str) -> None:
    """A context resource member: a reference ("name" or "name#id"), or a value `valid`
    accepts."""
    if name not in spec:
        return
    value = spec[name]
    if is_reference(value, name):
        return
    if not valid(value):
        raise SpecError(f"kvstore spec {spec!r}: {name!r} must be {expected} or a reference to "
                        f"a {name} resource, got {value!r}")


def valid_concurrency(value: Any) -> bool:
    """A concurrency resource object: {"limit": n >= 1 or "shared"} (limit optional)."""
    if not isinstance(value, dict) or set(value) - {"limit"}:
        return False
    limit = value.get("limit", "shared")
    whole = type(limit) is int or (type(limit) is float and limit.is_integer())  # 10.0 too
    return (isinstance(limit, str) and limit == "shared") or (whole and limit >= 1)


def check_tuning(spec: Spec, name: str) -> None:
    """An I/O tuning member (file_io_locking, *_request_retries, ...): a reference, or a
    value TensorStore accepts for that resource."""
    if name in spec and not is_reference(spec[name], name):
        normalize_resource(name, spec[name], f"kvstore spec {dict(spec)!r}: {name}")


def _check_file(spec: Spec) -> None:
    check_resource(spec, "file_io_concurrency", valid_concurrency, '{"limit": n >= 1}')
    for name in ("file_io_sync", "file_io_locking", "file_io_mode", "file_io_retries"):
        check_tuning(spec, name)


def _file_open(spec: Spec, options: OpenOptions) -> tuple[KvStore, str]:
    path = _spec_path(spec, spec)
    if not path:
        raise SpecError(f"kvstore spec {spec!r}: 'path' is required for the file driver")
    fsync = resolve_member(spec, "file_io_sync", False, options.context)
    if not isinstance(fsync, bool):
        raise SpecError(f"kvstore spec {spec!r}: file_io_sync must be true or false, got "
                        f"{fsync!r}")
    locking = normalize_resource("file_io_locking", resolve_member(
        spec, "file_io_locking", {}, options.context), f"kvstore spec {spec!r}: file_io_locking")
    # "none" and "non_atomic" ask for no locks between processes; "lockfile" for locks, which
    # the store takes its own way (as for "os").
    process_locks = locking.get("mode", "os") in ("os", "lockfile")
    return FileStore(path, options.read_only, fsync=fsync, process_locks=process_locks), ""


# -- memory --------------------------------------------------------------------------------
def _memory_from_url(body: str, base: Spec | None, url: str) -> Spec:
    path = _url_body(body, "memory", url)
    return {"driver": "memory", "path": path} if path else {"driver": "memory"}


def _memory_to_url(spec: Spec) -> str:
    return "memory://" + quote(_spec_path(spec, spec), safe=URL_SAFE)


def _check_memory(spec: Spec) -> None:
    # atomic=false only lets TensorStore's transactions write non-atomically: ours always are.
    if not isinstance(spec.get("atomic", True), bool):
        raise SpecError(f"kvstore spec {spec!r}: 'atomic' must be true or false")


def _memory_open(spec: Spec, options: OpenOptions) -> tuple[KvStore, str]:
    path = _clean_path(_spec_path(spec, spec), spec)
    if options.context is not None and options.context.memory is not None:
        return options.context.memory.handle(options.read_only), path  # TensorStore's rule
    # Natively the first path segment names a process-wide store; none: a new private store.
    name, _, rest = path.partition("/")
    if not name:
        return MemoryStore(options.read_only), ""
    return MemoryStore.named(name, options.read_only), rest


# -- zip -----------------------------------------------------------------------------------
def _zip_from_url(body: str, base: Spec | None, url: str) -> Spec:
    if base is None:
        raise SpecError(f"invalid URL {url!r}: 'zip:' is an adapter and must follow a base, "
                        "e.g. file:///data/a.zip|zip:inner/path")
    if body.startswith("//") or "?" in body or "#" in body:
        raise SpecError(f"invalid zip URL component in {url!r}: expected zip:<path in archive>")
    path = _unquote(body, url)
    spec: Spec = {"driver": "zip", "base": base}
    if path:
        spec["path"] = path
    return spec


def _zip_to_url(spec: Spec) -> str:
    return "zip:" + quote(_spec_path(spec, spec), safe=URL_SAFE)


def _base_spec(base: object) -> Spec:
    """An adapter's `base` as a spec: a plain local path names the file itself (the archive),
    not the store `normalize_kvstore_spec` would open there."""
    if isinstance(base, str | os.PathLike) and not _looks_like_url(os.fspath(base)):
        return {"driver": "file", "path": os.path.abspath(base)}
    return normalize_kvstore_spec(base)


def _check_zip(spec: Spec) -> None:
    if "base" not in spec:
        raise SpecError(f"kvstore spec {spec!r}: the zip driver requires 'base'")
    if isinstance(spec["base"], Mapping):
        _check_spec(spec["base"])


def _zip_open(spec: Spec, options: OpenOptions) -> tuple[KvStore, str]:
    _check_zip(spec)
    base = _base_spec(spec["base"])
    if base.get("driver") != "file":
        raise SpecError(f"kvstore spec {spec!r}: the zip driver needs a 'file' base, "
                        f"not {base.get('driver')!r}")
    archive = _spec_path(base, base)
    if not archive or archive.endswith("/"):
        raise SpecError(f"kvstore spec {spec!r}: the zip base must name a file, got {archive!r}")
    inner = _clean_path(_spec_path(spec, spec), spec)
    # "w" starts a new archive only when the whole archive is the target: a node inside it must
    # not take its siblings down with it (the caller deletes the node's own keys instead).
    if options.read_only:
        mode = "r"
    else:
        mode = "w" if options.mode == "w" and not inner else "a"
    return ZipStore(archive, mode), inner


def _object_only(spec: Spec, options: OpenOptions) -> tuple[KvStore, str]:
    raise SpecError(f"a {spec['driver']!r} kvstore is another library's Python object: give "
                    "that object (a dict, fsspec map, zarr-python store), not its spec")


for _driver in (
    KvStoreDriver("mapping", _object_only, members=frozenset({"path"})),
    KvStoreDriver("fsspec", _object_only, members=frozenset({"path", "protocol"})),
    KvStoreDriver("zarr-python", _object_only, members=frozenset({"path"})),
    KvStoreDriver("file", _file_open, _file_from_url, _file_to_url,
                  members=frozenset({"path", "context", "file_io_concurrency", "file_io_sync",
                                     "file_io_locking", "file_io_mode", "file_io_retries"}),
                  check=_check_file),
    KvStoreDriver("memory", _memory_open, _memory_from_url, _memory_to_url,
                  members=frozenset({"path", "context", "memory_key_value_store", "atomic"}),
                  check=_check_memory),
    KvStoreDriver("zip", _zip_open, _zip_from_url, _zip_to_url, adapter=True,
                  members=frozenset({"path", "base", "context", "cache_pool",
                                     "data_copy_concurrency"}), check=_check_zip),
):
    register_kvstore_driver(_driver)


# -- URLs <-> specs ------------------------------------------------------------------------
def parse_kvstore_url(url: str) -> Spec:
    """The kvstore spec of a URL or pipeline such as `file:///data/a.zip|zip:inner/path`."""
    spec: Spec | None = None
    for position, part in enumerate(url.split("|")):
        match = _SCHEME_RE.match(part)
        if match is None:
            raise SpecError(f"invalid kvstore URL {url!r}: {part!r} has no scheme")
        scheme = match.group(1).lower()
        if scheme not in _DRIVERS:
            raise SpecError(f"unknown URL scheme {scheme!r} in {url!r} (known: "
                            f"{', '.join(sorted(_DRIVERS))})")
        driver = get_kvstore_driver(scheme)
        if driver.from_url is None:
            raise SpecError(f"kvstore driver {driver.name!r} has no URL form (in {url!r})")
        if position and not driver.adapter:
            raise SpecError(f"invalid kvstore URL {url!r}: {driver.name!r} is not an adapter "
                            "and cannot follow '|'")
        spec = driver.from_url(part[match.end():], spec, url)
    assert spec is not None  # str.split always yields at least one part
    return spec


def kvstore_spec_to_url(spec: Mapping[str, Any]) -> str:
    """The URL (or pipeline) of a kvstore spec."""
    spec = normalize_kvstore_spec(spec)
    driver = get_kvstore_driver(spec["driver"])
    if driver.to_url is None:
        raise SpecError(f"kvstore driver {driver.name!r} has no URL form")
    try:
        own = driver.to_url(spec)
        if driver.adapter:
            return kvstore_spec_to_url(_base_spec(spec["base"])) + "|" + own
    except KeyError as e:  # a driver's required member is missing
        raise SpecError(f"kvstore spec {spec!r} has no URL form: member {e} is missing") from None
    except UnicodeEncodeError:  # lone surrogates cannot be percent-encoded
        raise SpecError(f"kvstore spec {spec!r} has no URL form: its path is not valid "
                        "Unicode text") from None
    return own


def kvstore_spec(store: KvStore, path: str = "") -> Spec:
    """The spec of `path` within `store` (`store.to_json()` with the path appended)."""
    spec = store.to_json()
    joined = _join(spec.get("path", ""), path.strip("/"))
    if joined:
        spec["path"] = joined
    return spec


def kvstore_to_url(store: KvStore, path: str = "") -> str:
    """The URL of `path` within `store`, e.g. `file:///data/a.zarr`."""
    if isinstance(store, MemoryStore) and store.name is None:
        raise SpecError(f"{store!r} has no URL: only named memory stores can be reopened")
    return kvstore_spec_to_url(kvstore_spec(store, path))


# -- opening -------------------------------------------------------------------------------
def _local_path_spec(path: str) -> Spec:
    path = os.path.abspath(path)
    if path.lower().endswith(".zip") and not os.path.isdir(path):  # "DATA.ZIP" too
        return {"driver": "zip", "base": {"driver": "file", "path": path}}
    return {"driver": "file", "path": path + "/"}


def _looks_like_url(text: str) -> bool:
    match = _SCHEME_RE.match(text)
    # A one-letter "scheme" is a Windows drive ("C:\\data"), not a URL.
    return "|" in text or (match is not None and len(match.group(1)) > 1
                           and (text[match.end():].startswith("//")
                                or match.group(1).lower() in _DRIVERS))


def normalize_kvstore_spec(where: object) -> Spec:
    """A spec dict for a URL, local path or spec (checked for driver and members)."""
    if isinstance(where, os.PathLike):
        where = os.fspath(where)
    if isinstance(where, str):
        if not where:
            raise SpecError("empty kvstore URL/path")
        return parse_kvstore_url(where) if _looks_like_url(where) else _local_path_spec(where)
    if isinstance(where, Mapping):
        return _check_spec(where)
    raise SpecError(f"cannot open a kvstore from {type(where).__name__} {where!r}: expected a "
                    "KvStore, path, URL or spec dict")


def _check_spec(spec: Mapping[str, Any]) -> Spec:
    name = spec.get("driver")
    if not isinstance(name, str):
        raise SpecError(f"kvstore spec {dict(spec)!r} has no 'driver' string")
    driver = get_kvstore_driver(name)
    extra = set(spec) - driver.members - {"driver"}
    if extra:
        raise SpecError(f"kvstore spec for driver {name!r} has unknown members {sorted(extra)}")
    _spec_path(spec, dict(spec))
    if not isinstance(spec.get("context", {}), Mapping):  # as TensorStore refuses it
        raise SpecError(f"kvstore spec {dict(spec)!r}: 'context' must be an object, got "
                        f"{spec['context']!r}")
    if driver.check is not None:
        driver.check(dict(spec))
    return dict(spec)


def fold_node_path(kvstore: Any, path: Any, fold: bool = True) -> tuple[Any, str]:
    """A zarr driver spec's `kvstore` and `path` members as TensorStore normalizes them: a URL
    becomes its spec, `path` is appended to the kvstore's path, which then ends in "/" (a
    node is a directory). Returns the kvstore and the path left apart: all of it for what is
    no TensorStore spec (a local path, a store object). (A memory kvstore's path folds too: the
    spec layer opens its context's store, the path a path in it, as TensorStore.) `fold=False`
    checks and converts the same way but leaves `path` apart (the node keeps its name)."""
    if not isinstance(path, str):
        raise SpecError(f"spec.path: expected a string, got {path!r}")
    if isinstance(kvstore, str) and _looks_like_url(kvstore):
        kvstore = parse_kvstore_url(kvstore)
    elif isinstance(kvstore, dict) and "driver" in kvstore:  # not a dict used as a store
        kvstore = _check_spec(kvstore)
    else:
        return kvstore, path
    base = kvstore.get("base")
    if isinstance(base, str) and _looks_like_url(base):  # a local path stays as given
        kvstore["base"] = parse_kvstore_url(base)
    own = kvstore.get("path", "")
    if not fold:
        return kvstore, path
    joined = _join(own, path.lstrip("/"))
    if joined:
        kvstore["path"] = joined if joined.endswith("/") else joined + "/"
    else:  # as TensorStore writes it: no empty path
        kvstore.pop("path", None)
    return kvstore, ""


def _options(read_only: bool, mode: str | None) -> OpenOptions:
    if mode is None:
        return OpenOptions(read_only, "r" if read_only else "a")
    if mode not in _MODES:
        raise SpecError(f"invalid mode {mode!r}: expected one of {_MODES}")
    if mode == "r":
        return OpenOptions(True, mode)
    if read_only:
        raise SpecError(f"mode {mode!r} contradicts read_only=True")
    return OpenOptions(False, mode)


def open_kvstore(
    where: KvStore | str | os.PathLike[str] | Mapping[str, Any],
    *,
    read_only: bool = False,
    mode: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    context: KvStoreContext | None = None,
) -> tuple[KvStore, str]:
    """Open a store; returns it and the path within it ("" or "a/b", no slashes at the ends).

    `mode` ("r", "r+", "a", "w", "w-") only decides read-only vs writable, and for a zip archive
    opened at its root whether "w" starts a new archive (replacing the old one on close);
    node-level semantics (what "w" or "w-" do to existing nodes) belong to the caller. A
    `KvStore` instance is returned as it is, whatever `read_only` and `mode` say. `context`:
    the spec layer's, for TensorStore's semantics (see `KvStoreContext`).
    """
    if isinstance(where, KvStore):
        return where, ""
    options = _options(read_only, mode)
    adapted = foreign.adapt(where, options.read_only)  # a dict, an FSMap, zarr-python's stores
    if adapted is not None:
        return adapted
    if storage_options is not None and not isinstance(storage_options, Mapping):
        raise SpecError(f"storage_options must be a dict; got {storage_options!r}")
    options = dataclasses.replace(options, storage_options=storage_options or None,
                                  context=context)
    spec = normalize_kvstore_spec(where)
    store, path = get_kvstore_driver(spec["driver"]).open(spec, options)
    return store, path


def finish_opened(store: KvStore, where: Any, *,
                  storage_options: Mapping[str, Any] | None = None) -> KvStore:
    """After a one-shot operation (convert, save, ...) that opened `store` from `where` itself
    (a path, URL or spec, not a store object): close it, which finishes a zip archive (left
    open, its changes would be lost), and return a store to read the result from: `store`
    when closing ended nothing, else `where` opened again read-only."""
    if not close_opened(store, where) or not isinstance(store, ZipStore):
        return store  # the caller's own, or a store still usable after close()
    return open_kvstore(where, read_only=True, storage_options=storage_options)[0]


def close_opened(store: KvStore, where: Any) -> bool:
    """Close `store` if it was opened from `where` (a path, URL or spec), not given as a store
    object (the caller's to close); whether it was closed."""
    if isinstance(where, KvStore):
        return False
    store.close()
    return True


def discard_opened(store: KvStore, where: Any) -> bool:
    """Give up `store` if it is a zip archive opened from `where` (not the caller's store
    object): its changes dropped, the archive left as it was. Whether it was."""
    if isinstance(store, ZipStore) and not isinstance(where, KvStore):
        store._discard()
        return True
    return False

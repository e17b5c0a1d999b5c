"""URL schemes and spec drivers for remote stores: s3, gs/gcs, az/abfs, http/https.

URLs as users already write them (`s3://bucket/path`, `gs://bucket/path`,
`az://container/path`, `abfs://container@account.dfs.core.windows.net/path`,
`https://host/path`) and TensorStore-style specs (`{"driver": "s3", "bucket": ..., "path": ...,
"endpoint": ..., "aws_region": ...}`, `{"driver": "gcs", ...}`, `{"driver": "http",
"base_url": ...}`). `storage_options` come from `zarrkit.open(..., storage_options=...)` or a
spec's `storage_options` member (a zarrkit extension).

Importing this module registers the drivers; obstore itself is imported only when a store is
opened, so zarrkit works without it until a remote URL is used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from ..errors import SpecError
from . import _remote_options as ro
from .base import KvStore, validate_key
from .object_store import Location, ObjectStore
from .url import KvStoreDriver, OpenOptions, _unquote, register_kvstore_driver

Spec = dict[str, Any]
_SAFE = "/:@!$&'()*+,;="


def _clean(path: Any, spec: Mapping[str, Any]) -> str:
    if not isinstance(path, str):
        raise SpecError(f"kvstore spec {dict(spec)!r}: 'path' must be a string")
    path = path.strip("/")
    if path:
        try:
            validate_key(path)
        except Exception as exc:  # noqa: BLE001 - reported as a spec problem
            raise SpecError(f"invalid path {path!r} in kvstore spec: {exc}") from None
    return path


def _storage(spec: Mapping[str, Any], options: OpenOptions) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for given in (spec.get("storage_options"), options.storage_options):
        # Checked here, before dict() of a string ("anon") raised a bare ValueError.
        if given is not None and not isinstance(given, Mapping):
            raise SpecError(f"storage_options must be a dict, got {type(given).__name__} "
                            f"{given!r}")
        merged.update(given or {})
    return merged


def _bucket_url(scheme: str, driver: str, body: str, url: str) -> Spec:
    parts = urlsplit(f"{scheme}:{body}")
    if not body.startswith("//") or not parts.netloc:
        raise SpecError(f"invalid {scheme} URL {url!r}: expected {scheme}://bucket/path")
    if parts.query or parts.fragment:
        raise SpecError(f"invalid {scheme} URL {url!r}: query strings and fragments are not "
                        "supported")
    spec: Spec = {"driver": driver, "bucket": parts.netloc}
    path = _unquote(parts.path, url).strip("/")  # percent-encoded, as `to_url` writes it
    if path:
        spec["path"] = path
    return spec


def _bucket_to_url(scheme: str) -> Callable[[Spec], str]:
    def to_url(spec: Spec) -> str:
        path = quote(str(spec.get("path", "")).strip("/"), safe=_SAFE)
        return f"{scheme}://{spec['bucket']}/{path}".rstrip("/")
    return to_url


def _bucket(spec: Mapping[str, Any]) -> str:
    bucket = spec.get("bucket")
    if not isinstance(bucket, str) or not bucket:
        raise SpecError(f"kvstore spec {dict(spec)!r}: 'bucket' is required")
    return bucket


def _default(storage: dict[str, Any], names: tuple[str, ...], value: Any) -> None:
    """Set `names[0]` unless storage_options give the setting under any of its spellings
    (s3fs's or obstore's, at the top or in `client_kwargs`): the user's choice wins."""
    nested = storage.get("client_kwargs")
    given = set(storage) | (set(nested) if isinstance(nested, Mapping) else set())
    if given.isdisjoint(names):
        storage[names[0]] = value


# -- s3 -------------------------------------------------------------------------------------
def _s3_open(spec: Spec, options: OpenOptions) -> tuple[KvStore, str]:
    storage = _storage(spec, options)
    if "endpoint" in spec:
        _default(storage, ("endpoint_url", "endpoint", "aws_endpoint_url", "aws_endpoint"),
                 spec["endpoint"])
    if "aws_region" in spec:
        _default(storage, ("region", "region_name", "aws_region"), spec["aws_region"])
    if spec.get("requester_pays"):
        storage.setdefault("requester_pays", True)
    creds = spec.get("aws_credentials") or {}
    if creds.get("type") == "anonymous":
        storage.setdefault("anon", True)
    elif creds.get("profile"):
        storage.setdefault("profile", creds["profile"])
    loc = Location("s3", _bucket(spec), _clean(spec.get("path", ""), spec),
                   ro.s3_options(storage))
    return ObjectStore(loc, read_only=options.read_only), ""


# -- gcs ------------------------------------------------------------------------------------
def _gcs_open(spec: Spec, options: OpenOptions) -> tuple[KvStore, str]:
    loc = Location("gcs", _bucket(spec), _clean(spec.get("path", ""), spec),
                   ro.gcs_options(_storage(spec, options)))
    return ObjectStore(loc, read_only=options.read_only), ""


# -- azure ----------------------------------------------------------------------------------
def _azure_from_url(scheme: str) -> Callable[[str, Spec | None, str], Spec]:
    def from_url(body: str, base: Spec | None, url: str) -> Spec:
        spec = _bucket_url(scheme, "azure", body, url)
        container, at, host = spec.pop("bucket").partition("@")
        spec["container"] = container
        if at:  # abfs://container@account.dfs.core.windows.net/path
            spec["account"] = host.split(".", 1)[0]
        return spec
    return from_url


def _azure_to_url(spec: Spec) -> str:
    path = quote(str(spec.get("path", "")).strip("/"), safe=_SAFE)
    if "account" in spec:  # only the abfs form names the account
        host = f"{spec['container']}@{spec['account']}.dfs.core.windows.net"
        return f"abfs://{host}/{path}".rstrip("/")
    return f"az://{spec['container']}/{path}".rstrip("/")


def _azure_open(spec: Spec, options: OpenOptions) -> tuple[KvStore, str]:
    storage = _storage(spec, options)
    if "account" in spec:
        storage.setdefault("account_name", spec["account"])
    container = spec.get("container")
    if not isinstance(container, str) or not container:
        raise SpecError(f"kvstore spec {spec!r}: 'container' is required")
    loc = Location("azure", container, _clean(spec.get("path", ""), spec),
                   ro.azure_options(storage))
    return ObjectStore(loc, read_only=options.read_only), ""


# -- http -----------------------------------------------------------------------------------
def _http_from_url(scheme: str) -> Callable[[str, Spec | None, str], Spec]:
    def from_url(body: str, base: Spec | None, url: str) -> Spec:
        parts = urlsplit(f"{scheme}:{body}")
        if not body.startswith("//") or not parts.netloc:
            raise SpecError(f"invalid URL {url!r}: expected {scheme}://host/path")
        if parts.fragment:
            raise SpecError(f"invalid URL {url!r}: fragments are not supported")
        return {"driver": "http", "base_url": f"{scheme}:{body}".rstrip("/")}
    return from_url


def _http_join(base: str, path: str) -> str:
    """`base` (without trailing slashes) with `path` appended to its path: before its query
    (a token, a signature)."""
    base = base.rstrip("/")
    if not path:
        return base
    parts = urlsplit(base)
    joined = parts.path.rstrip("/") + "/" + quote(path, safe=_SAFE)
    return urlunsplit(parts._replace(path=joined))


def _http_to_url(spec: Spec) -> str:
    return _http_join(spec["base_url"], str(spec.get("path", "")).strip("/"))


def _http_open(spec: Spec, options: OpenOptions) -> tuple[KvStore, str]:
    base = spec.get("base_url")
    if not isinstance(base, str) or not base.startswith(("http://", "https://")):
        raise SpecError(f"kvstore spec {spec!r}: 'base_url' must be an http(s) URL")
    base = _http_join(base, _clean(spec.get("path", ""), spec))
    loc = Location("http", base, "", ro.http_options(_storage(spec, options)))
    return ObjectStore(loc, read_only=True), ""


_COMMON = frozenset({"path", "context", "storage_options"})
_S3 = _COMMON | {"bucket", "endpoint", "aws_region", "requester_pays", "aws_credentials",
                 "host_header", "s3_request_concurrency", "s3_request_retries"}
_GCS = _COMMON | {"bucket", "gcs_request_concurrency", "gcs_request_retries",
                  "gcs_user_project", "gcs_http_concurrency"}
_AZURE = _COMMON | {"container", "account"}
_HTTP = _COMMON | {"base_url", "headers", "http_request_concurrency", "http_request_retries"}


def _register() -> None:
    drivers = [
        KvStoreDriver("s3", _s3_open, lambda b, _, u: _bucket_url("s3", "s3", b, u),
                      _bucket_to_url("s3"), members=_S3),
        KvStoreDriver("gcs", _gcs_open, lambda b, _, u: _bucket_url("gcs", "gcs", b, u),
                      _bucket_to_url("gs"), members=_GCS),
        KvStoreDriver("gs", _gcs_open, lambda b, _, u: _bucket_url("gs", "gcs", b, u),
                      _bucket_to_url("gs"), members=_GCS),
        KvStoreDriver("http", _http_open, _http_from_url("http"), _http_to_url, members=_HTTP),
        KvStoreDriver("https", _http_open, _http_from_url("https"), _http_to_url,
                      members=_HTTP),
    ]
    drivers += [KvStoreDriver(name, _azure_open, _azure_from_url(name), _azure_to_url,
                              members=_AZURE) for name in ("azure", "az", "abfs", "abfss")]
    for driver in drivers:
        register_kvstore_driver(driver, replace=True)


_register()

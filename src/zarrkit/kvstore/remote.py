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

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from ..errors import SpecError
from . import _remote_options as ro
from ._io_resources import driver_resources, seconds
from ._io_resources import normalize as normalize_resource
from ._rate_limit import RateLimits
from ._util import URL_SAFE
from .base import KvStore, validate_key
from .object_store import Location, ObjectStore
from .resources import resolve_member
from .url import (
    KvStoreDriver,
    OpenOptions,
    _unquote,
    check_resource,
    check_tuning,
    register_kvstore_driver,
    valid_concurrency,
)

Spec = dict[str, Any]


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
    name = driver_resources(spec.get("driver")).retries
    # As in TensorStore, a spec without the member uses its context's resource, if defined.
    retries = resolve_member(spec, name, {}, options.context) if name else {}
    if name and isinstance(retries, Mapping):  # storage_options win
        # Refused as TensorStore refuses it (a context's was checked as it was made).
        normalize_resource(name, dict(retries), f"kvstore spec {dict(spec)!r}: {name}")
        if "max_retries" in retries:
            merged.setdefault("max_retries", int(retries["max_retries"]))
        for member, option in (("initial_delay", "retry_initial_delay"),
                               ("max_delay", "retry_max_delay")):
            if member in retries:  # else zarrkit's shorter defaults
                merged.setdefault(option, seconds(retries, member, "0"))
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
        path = quote(str(spec.get("path", "")).strip("/"), safe=URL_SAFE)
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


def _concurrency(spec: Spec) -> None:
    for name in ("s3_request_concurrency", "gcs_request_concurrency", "http_request_concurrency"):
        check_resource(spec, name, valid_concurrency, '{"limit": n >= 1}')
    for name in ("s3_request_retries", "gcs_request_retries", "http_request_retries",
                 "experimental_s3_rate_limiter", "experimental_gcs_rate_limiter"):
        check_tuning(spec, name)


def _rate_limits(spec: Spec, options: OpenOptions) -> RateLimits | None:
    """The limits of the spec's rate limiter. As in TensorStore, only a spec with the member
    has one: a context defining the resource is not enough."""
    kind = driver_resources(spec.get("driver")).rate_limiter
    if kind is None or kind not in spec:
        return None
    if options.context is not None and kind in options.context.shared:
        return options.context.shared[kind]  # the context's own, shared with other stores
    where = f"kvstore spec {dict(spec)!r}: {kind}"
    json = normalize_resource(kind, resolve_member(spec, kind, None, options.context), where)
    limits = RateLimits(json, where)
    return limits if limits.read or limits.write else None


def _strings(spec: Spec, *names: str) -> None:
    for name in names:
        if name in spec and not isinstance(spec[name], str):
            raise SpecError(f"kvstore spec {spec!r}: {name!r} must be a string, got "
                            f"{spec[name]!r}")


# -- s3 -------------------------------------------------------------------------------------
#: TensorStore's AWS credential providers and the members each takes.
_AWS_CREDENTIALS = {"default": {"profile"}, "anonymous": set(), "environment": set(),
                    "profile": {"profile", "credentials_file", "config_file"},
                    "ecs": {"endpoint"}, "imds": set()}


def _valid_aws_credentials(value: Any) -> bool:
    if not isinstance(value, dict) or value.get("type") not in _AWS_CREDENTIALS:
        return False
    extra = set(value) - {"type"} - _AWS_CREDENTIALS[value["type"]]
    return not extra and all(isinstance(v, str) for v in value.values())


def _check_s3(spec: Spec) -> None:
    _strings(spec, "bucket", "host_header", "aws_region")
    _concurrency(spec)
    if not isinstance(spec.get("endpoint", ""), str):  # its text is checked at open
        raise SpecError(f"kvstore spec {spec!r}: endpoint={spec['endpoint']!r}: expected an "
                        "http:// or https:// URL with a host, such as 'http://localhost:9000'")
    if not spec.get("bucket") and "endpoint" not in spec:
        raise SpecError(f"kvstore spec {spec!r}: 'bucket' is required (when 'endpoint' is not "
                        "set)")
    if "requester_pays" in spec and not isinstance(spec["requester_pays"], bool):
        raise SpecError(f"kvstore spec {spec!r}: 'requester_pays' must be true or false")
    check_resource(spec, "aws_credentials", _valid_aws_credentials,
                   '{"type": "default"|"anonymous"|"environment"|"profile"|"ecs"|"imds", ...} '
                   "with that type's members")


def _aws_credentials(spec: Spec, options: OpenOptions) -> dict[str, Any]:
    """The aws_credentials object (a reference looked up in the spec's contexts)."""
    creds = resolve_member(spec, "aws_credentials", {}, options.context)
    if creds and not _valid_aws_credentials(creds):
        raise SpecError(f"kvstore spec {spec!r}: invalid aws_credentials {creds!r}")
    return creds


def _s3_open(spec: Spec, options: OpenOptions) -> tuple[KvStore, str]:
    storage = _storage(spec, options)
    if "endpoint" in spec:
        _default(storage, ("endpoint_url", "endpoint", "aws_endpoint_url", "aws_endpoint"),
                 spec["endpoint"])
    if "aws_region" in spec:
        _default(storage, ("region", "region_name", "aws_region"), spec["aws_region"])
    if spec.get("requester_pays"):
        storage.setdefault("requester_pays", True)
    creds = _aws_credentials(spec, options)
    if creds.get("type") == "anonymous":
        storage.setdefault("anon", True)
    elif creds.get("type") in ("ecs", "imds"):  # the role of the container or instance
        storage.setdefault("instance_metadata", True)
    elif creds.get("profile"):
        storage.setdefault("profile", creds["profile"])
    remote = ro.s3_options(storage)
    remote = replace(remote, host_header=_host_header(spec, remote.config.get("endpoint")),
                     limits=_rate_limits(spec, options))
    loc = Location("s3", _bucket(spec), _clean(spec.get("path", ""), spec), remote)
    return ObjectStore(loc, read_only=options.read_only), ""


def _host_header(spec: Spec, endpoint: str | None) -> str | None:
    """The spec's `host_header`, checked: a host[:port], with an http `endpoint` (zarrkit
    sends it by connecting to the endpoint as to a proxy, which an https endpoint is not)."""
    host = spec.get("host_header")
    if host is None:
        return None
    if "endpoint" not in spec:  # as TensorStore
        raise SpecError(f"kvstore spec {spec!r}: 'host_header' cannot be set without "
                        "'endpoint'")
    if host and not str(endpoint).startswith("http://"):
        raise SpecError(f"kvstore spec {spec!r}: 'host_header' needs an http:// endpoint "
                        f"(zarrkit cannot send another Host header to {endpoint!r})")
    if host and not _is_authority(host):
        raise SpecError(f"kvstore spec {spec!r}: host_header={host!r}: expected a host name, "
                        "with an optional :port")
    return host


_AUTHORITY = re.compile(r"(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?")


def _is_authority(host: str) -> bool:
    """Whether `host` is a host name or address with an optional :port, and nothing else."""
    match = _AUTHORITY.fullmatch(host)
    return match is not None and int(match.group(1) or 0) <= 65535


# -- gcs ------------------------------------------------------------------------------------
def _check_gcs(spec: Spec) -> None:
    _bucket(spec)
    _concurrency(spec)
    check_tuning(spec, "gcs_user_project")


def _gcs_open(spec: Spec, options: OpenOptions) -> tuple[KvStore, str]:
    remote = ro.gcs_options(_storage(spec, options))
    project = _user_project(spec, options)
    if project:  # the XML API's form of TensorStore's userProject query parameter
        headers = {**remote.client.get("default_headers", {}), "x-goog-user-project": project}
        remote = replace(remote, client={**remote.client, "default_headers": headers})
    loc = Location("gcs", _bucket(spec), _clean(spec.get("path", ""), spec),
                   replace(remote, limits=_rate_limits(spec, options)))
    return ObjectStore(loc, read_only=options.read_only), ""


def _user_project(spec: Spec, options: OpenOptions) -> str | None:
    """The project billed for the requests (gcs_user_project's project_id), for requester-pays
    buckets; None: the bucket's owner."""
    where = f"kvstore spec {dict(spec)!r}: gcs_user_project"
    json = resolve_member(spec, "gcs_user_project", {}, options.context)
    return normalize_resource("gcs_user_project", json, where).get("project_id")


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
    path = quote(str(spec.get("path", "")).strip("/"), safe=URL_SAFE)
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
    joined = parts.path.rstrip("/") + "/" + quote(path, safe=URL_SAFE)
    return urlunsplit(parts._replace(path=joined))


def _http_to_url(spec: Spec) -> str:
    return _http_join(spec["base_url"], str(spec.get("path", "")).strip("/"))


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _headers(spec: Spec) -> dict[str, str]:
    """TensorStore's `headers`: a list of "Name: value" strings."""
    headers = spec.get("headers", [])
    if not isinstance(headers, list):
        raise SpecError(f"kvstore spec {spec!r}: 'headers' must be a list of \"Name: value\" "
                        "strings")
    out = {}
    for header in headers:
        name, colon, value = header.partition(":") if isinstance(header, str) else ("", "", "")
        if not colon or not _HEADER_NAME.fullmatch(name):
            raise SpecError(f"kvstore spec {spec!r}: invalid HTTP header {header!r} (expected "
                            "\"Name: value\")")
        out[name] = value.strip()
    return out


def _check_http(spec: Spec) -> None:
    base = spec.get("base_url")
    if not isinstance(base, str) or not base.startswith(("http://", "https://")):
        raise SpecError(f"kvstore spec {spec!r}: 'base_url' must be an http(s) URL")
    _headers(spec)
    _concurrency(spec)


def _http_open(spec: Spec, options: OpenOptions) -> tuple[KvStore, str]:
    _check_http(spec)
    base = _http_join(spec["base_url"], _clean(spec.get("path", ""), spec))
    storage = _storage(spec, options)
    headers = _headers(spec)
    if headers:  # storage_options' own headers win, as the spec's other members do
        storage["headers"] = {**headers, **(storage.get("headers") or {})}
    loc = Location("http", base, "", ro.http_options(storage))
    return ObjectStore(loc, read_only=True), ""


_COMMON = frozenset({"path", "context", "storage_options"})
_S3 = _COMMON | {"bucket", "endpoint", "aws_region", "requester_pays", "aws_credentials",
                 "host_header", "s3_request_concurrency", "s3_request_retries",
                 "experimental_s3_rate_limiter"}
_GCS = _COMMON | {"bucket", "gcs_request_concurrency", "gcs_request_retries",
                  "gcs_user_project", "experimental_gcs_rate_limiter"}
_AZURE = _COMMON | {"container", "account"}
_HTTP = _COMMON | {"base_url", "headers", "http_request_concurrency", "http_request_retries"}


def _register() -> None:
    drivers = [
        KvStoreDriver("s3", _s3_open, lambda b, _, u: _bucket_url("s3", "s3", b, u),
                      _bucket_to_url("s3"), members=_S3, check=_check_s3),
        KvStoreDriver("gcs", _gcs_open, lambda b, _, u: _bucket_url("gcs", "gcs", b, u),
                      _bucket_to_url("gs"), members=_GCS, check=_check_gcs),
        KvStoreDriver("gs", _gcs_open, lambda b, _, u: _bucket_url("gs", "gcs", b, u),
                      _bucket_to_url("gs"), members=_GCS, check=_check_gcs),
        KvStoreDriver("http", _http_open, _http_from_url("http"), _http_to_url, members=_HTTP,
                      check=_check_http),
        KvStoreDriver("https", _http_open, _http_from_url("https"), _http_to_url,
                      members=_HTTP, check=_check_http),
    ]
    drivers += [KvStoreDriver(name, _azure_open, _azure_from_url(name), _azure_to_url,
                              members=_AZURE) for name in ("azure", "az", "abfs", "abfss")]
    for driver in drivers:
        register_kvstore_driver(driver, replace=True)


_register()

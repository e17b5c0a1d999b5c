"""Turning `storage_options` (as xarray/fsspec users write them) into obstore configuration.

s3fs, gcsfs and adlfs each have their own option names (`key`/`secret`/`endpoint_url`,
`token`, `account_name`/`account_key`); obstore has others (`access_key_id`, ...). Both spellings
are accepted, so the dict a user already passes to `xr.open_zarr` works here unchanged.

Credentials are also checked before any request: without them obstore would fall back to the
cloud's instance-metadata endpoint, which off-cloud means a long timeout and an unclear error.
That fallback stays available on request (`"instance_metadata": True`).
"""

from __future__ import annotations

import configparser
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..errors import CredentialsError, SpecError

#: fsspec-level options that mean nothing to zarrkit (caching, event loops) and are ignored.
_IGNORED = frozenset({
    "asynchronous", "skip_instance_cache", "use_listings_cache", "listings_expiry_time",
    "max_paths", "default_block_size", "default_fill_cache", "default_cache_type",
    "version_aware", "cache_regions", "loop", "auto_mkdir", "config_kwargs", "use_ssl",
    "s3_additional_kwargs", "requester_pays_default", "consistency", "cache_timeout",
})

_S3_ALIASES = {
    "key": "access_key_id", "aws_access_key_id": "access_key_id",
    "secret": "secret_access_key", "aws_secret_access_key": "secret_access_key",
    "token": "session_token", "aws_session_token": "session_token",
    "endpoint_url": "endpoint", "aws_endpoint_url": "endpoint", "aws_endpoint": "endpoint",
    "region_name": "region", "aws_region": "region", "requester_pays": "request_payer",
}
_GCS_ALIASES = {"endpoint_url": "base_url", "service_account_path": "service_account"}
_AZURE_ALIASES = {"sas_token": "sas_key", "connection_string": None, "anon": "skip_signature"}


@dataclass(frozen=True)
class RemoteOptions:
    """Resolved options: obstore `config`, `client_options`, retries, and zarrkit's own."""

    config: dict[str, Any] = field(default_factory=dict)
    client: dict[str, Any] = field(default_factory=dict)
    max_retries: int = 3
    retry_timeout: float = 30.0
    #: The first wait before a retry and the bound on the growing waits, in seconds (what a
    #: spec's *_request_retries `initial_delay` and `max_delay` set).
    initial_delay: float = 0.1
    max_delay: float = 5.0
    locking: bool = True
    #: The HTTP Host header S3 requests carry and are signed for (a spec's `host_header`).
    host_header: str | None = None
    #: The request rate limits (a spec's rate limiter, a `_rate_limit.RateLimits`); None: none.
    limits: Any = None


def _flatten(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Top-level options plus fsspec's `client_kwargs` (where s3fs users put endpoint/region)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise SpecError(f"storage_options must be a dict, got {type(options).__name__}")
    flat = {k: v for k, v in options.items() if k != "client_kwargs"}
    nested = options.get("client_kwargs") or {}
    if not isinstance(nested, Mapping):
        raise SpecError("storage_options['client_kwargs'] must be a dict")
    for k, v in nested.items():
        flat.setdefault(k, v)
    return flat


def _rename(flat: dict[str, Any], aliases: Mapping[str, str | None], driver: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in flat.items():
        if name in _IGNORED or value is None:
            continue
        target = aliases.get(name, name)
        if target is None:
            raise SpecError(f"storage option {name!r} is not supported by the {driver} store")
        out[target] = value
    return out


def _flag(opts: dict[str, Any], name: str) -> bool:
    """Pop the yes/no option `name`: a bool, or a string as in a config file ("false" is no:
    truth-testing the string would make it yes)."""
    value = opts.pop(name, False)
    if isinstance(value, str) and value.strip().lower() in _WORDS:
        return _WORDS[value.strip().lower()]
    # numpy's booleans are named numpy.bool in numpy 2 (bool_ before), so a name test
    # for "bool_" refused np.True_; numpy's integers 0/1 are numbers.Integral as Python's are.
    if (isinstance(value, numbers.Integral) or type(value).__name__ in ("bool", "bool_")) \
            and value in (0, 1):
        return bool(value)
    raise SpecError(f"storage option {name}={value!r}: expected True or False")


_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def _native_skip_signature(opts: dict[str, Any]) -> None:
    """obstore's own name for anon, read as a yes/no option too: truth-tested by the
    credential checks, skip_signature="false" skipped them (and an AWS profile's keys), while
    obstore read it as no and signed without credentials (instance metadata, a long wait)."""
    if "skip_signature" in opts:
        if _flag(opts, "skip_signature"):
            opts["skip_signature"] = True


def _common(opts: dict[str, Any]) -> dict[str, Any]:
    """Pull zarrkit's own options out of `opts` (in place) into RemoteOptions keywords."""
    kw: dict[str, Any] = {}
    client = {"connect_timeout": f"{_number(opts, 'connect_timeout', 5, float)}s",
              "timeout": f"{_number(opts, 'timeout', 120, float)}s"}
    verify = opts.pop("verify", True)  # botocore's / requests' TLS switch (s3fs client_kwargs)
    if isinstance(verify, str):
        raise SpecError(f"storage option verify={verify!r}: a CA bundle path is not supported; "
                        "give True, or False to accept any certificate")
    if not verify:
        client["allow_invalid_certificates"] = True
    kw["max_retries"] = _number(opts, "max_retries", 3, int)
    kw["retry_timeout"] = _number(opts, "retry_timeout", 30, float)
    kw["initial_delay"] = _number(opts, "retry_initial_delay", 0.1, float)
    kw["max_delay"] = _number(opts, "retry_max_delay", 5, float)
    locking = opts.pop("locking", "conditional")
    if locking not in ("conditional", "none", True, False):
        raise SpecError(f"storage option locking={locking!r}: expected 'conditional' or 'none'")
    kw["locking"] = locking in ("conditional", True)
    kw["client"] = client
    return kw


def _number(opts: dict[str, Any], name: str, default: float, kind: type) -> Any:
    """Pop the number option `name` (a count or seconds, >= 0): int()/float() of "x" raised
    a bare ValueError naming neither option nor value."""
    value = opts.pop(name, default)
    try:
        number = kind(value)
    except (TypeError, ValueError, OverflowError):
        number = None
    fraction = kind is int and isinstance(value, float) and not value.is_integer()
    if number is None or isinstance(value, bool) or fraction or not number >= 0:
        what = "a whole number" if kind is int else "a number of seconds"
        raise SpecError(f"storage option {name}={value!r}: expected {what} >= 0")
    return number


def _check_endpoint(opts: dict[str, Any], name: str) -> None:
    """Refuse an endpoint that is no http(s) URL ("localhost:9000" without its scheme, a
    typo): object_store panics on the first request signed for it, and the error read
    "rust future panicked: unknown error"."""
    endpoint = opts.get(name)
    if endpoint is None:
        return
    try:
        parts = urlsplit(endpoint) if isinstance(endpoint, str) else None
        host = parts.hostname if parts is not None else None
    except ValueError:  # "http://[::1" and the like
        parts = host = None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise SpecError(f"storage option {name}={endpoint!r}: expected an http:// or https:// "
                        "URL with a host, such as 'http://localhost:9000'")


def _allow_http(endpoint: Any, client: dict[str, Any]) -> None:
    if isinstance(endpoint, str) and endpoint.startswith("http://"):
        client["allow_http"] = True


def _env(*names: str) -> bool:
    return any(os.environ.get(n) for n in names)


def _aws_profile(name: str | None) -> dict[str, str]:
    """Keys from the shared credentials file for `name` (or AWS_PROFILE, or "default")."""
    path = os.environ.get("AWS_SHARED_CREDENTIALS_FILE",
                          os.path.join(os.path.expanduser("~"), ".aws", "credentials"))
    profile = name or os.environ.get("AWS_PROFILE") or "default"
    parser = configparser.ConfigParser()
    if not parser.read(path) or profile not in parser:
        if name:
            raise CredentialsError(f"AWS profile {name!r} not found in {path}")
        return {}
    section = parser[profile]
    found = {"access_key_id": section.get("aws_access_key_id"),
             "secret_access_key": section.get("aws_secret_access_key"),
             "session_token": section.get("aws_session_token")}
    return {k: v for k, v in found.items() if v}


def s3_options(options: Mapping[str, Any] | None) -> RemoteOptions:
    opts = _rename(_flatten(options), _S3_ALIASES, "s3")
    kw = _common(opts)
    _native_skip_signature(opts)
    if _flag(opts, "anon"):
        opts["skip_signature"] = True
    profile = opts.pop("profile", None)
    metadata = _flag(opts, "instance_metadata")
    # Like boto3: explicit keys win, then the environment, then the shared credentials file.
    if "access_key_id" not in opts and not opts.get("skip_signature") and (
            profile or not _env("AWS_ACCESS_KEY_ID")):
        opts.update(_aws_profile(profile))
    _check_endpoint(opts, "endpoint")
    _allow_http(opts.get("endpoint") or os.environ.get("AWS_ENDPOINT_URL"), kw["client"])
    if "endpoint" in opts and "region" not in opts and not _env("AWS_REGION",
                                                                  "AWS_DEFAULT_REGION"):
        opts["region"] = "us-east-1"  # S3-compatible servers ignore it; signing needs one
    _check_s3_credentials(opts, metadata)
    return RemoteOptions(config=opts, **kw)


def _check_s3_credentials(opts: dict[str, Any], instance_metadata: bool) -> None:
    if opts.get("skip_signature") or instance_metadata:
        return
    if ("access_key_id" in opts) != ("secret_access_key" in opts):
        raise CredentialsError("incomplete S3 credentials: give both 'key' and 'secret' "
                               "(access key id and secret access key)")
    if "access_key_id" in opts or _env("AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE",
                                       "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                       "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        return
    raise CredentialsError(
        "no S3 credentials found: pass storage_options={'key': ..., 'secret': ...} (or "
        "'profile'), set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, use {'anon': True} for a "
        "public bucket, or {'instance_metadata': True} to use the instance's role")


def gcs_options(options: Mapping[str, Any] | None) -> RemoteOptions:
    opts = _rename(_flatten(options), _GCS_ALIASES, "gcs")
    kw = _common(opts)
    _native_skip_signature(opts)
    token = opts.pop("token", None)
    opts.pop("project", None)  # gcsfs needs it for bucket creation only
    if _flag(opts, "anon") or token == "anon":
        opts["skip_signature"] = True
    elif isinstance(token, Mapping):
        import json

        opts["service_account_key"] = json.dumps(dict(token))
    elif isinstance(token, str) and token not in ("google_default", "cloud", "cache"):
        opts["service_account"] = token
    _check_endpoint(opts, "base_url")
    _allow_http(opts.get("base_url"), kw["client"])
    metadata = _flag(opts, "instance_metadata") or token in ("cloud",)
    _check_gcs_credentials(opts, metadata)
    return RemoteOptions(config=opts, **kw)


def _check_gcs_credentials(opts: dict[str, Any], instance_metadata: bool) -> None:
    if instance_metadata or opts.get("skip_signature") or {
            "service_account", "service_account_key", "application_credentials",
            "bearer_token"} & set(opts):
        return
    if _env("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_SERVICE_ACCOUNT",
            "GOOGLE_SERVICE_ACCOUNT_PATH", "GOOGLE_SERVICE_ACCOUNT_KEY"):
        return
    adc = os.path.join(os.path.expanduser("~"), ".config", "gcloud",
                       "application_default_credentials.json")
    if os.path.isfile(adc):
        opts["application_credentials"] = adc
        return
    raise CredentialsError(
        "no GCS credentials found: pass storage_options={'token': '/path/key.json'} (or a key "
        "dict), set GOOGLE_APPLICATION_CREDENTIALS, use {'token': 'anon'} for a public bucket, "
        "or {'instance_metadata': True} to use the VM's service account")


def azure_options(options: Mapping[str, Any] | None) -> RemoteOptions:
    opts = _rename(_flatten(options), _AZURE_ALIASES, "azure")
    kw = _common(opts)
    if "skip_signature" in opts:  # given as anon
        opts["skip_signature"] = _flag(opts, "skip_signature")
    metadata = _flag(opts, "instance_metadata")
    _check_endpoint(opts, "endpoint")
    _allow_http(opts.get("endpoint"), kw["client"])
    if not (metadata or opts.get("skip_signature") or opts.get("use_emulator") or {
            "account_key", "sas_key", "token", "client_secret", "use_azure_cli",
            "federated_token_file"} & set(opts) or _env(
            "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY", "AZURE_STORAGE_SAS_KEY",
            "AZURE_STORAGE_SAS_TOKEN", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE",
            "AZURE_STORAGE_USE_EMULATOR")):
        raise CredentialsError(
            "no Azure credentials found: pass storage_options={'account_name': ..., "
            "'account_key': ...} or a 'sas_token', use {'anon': True} for a public container, "
            "or {'instance_metadata': True} for a managed identity")
    return RemoteOptions(config=opts, **kw)


def http_options(options: Mapping[str, Any] | None) -> RemoteOptions:
    opts = _rename(_flatten(options), {}, "http")
    kw = _common(opts)
    headers = opts.pop("headers", None)
    if headers:
        kw["client"]["default_headers"] = dict(headers)
    opts.pop("instance_metadata", None)
    if opts:
        raise SpecError(f"storage options {sorted(opts)} are not supported by the http store "
                        "(supported: headers, max_retries, retry_timeout, retry_initial_delay, "
                        "retry_max_delay, connect_timeout, timeout)")
    return RemoteOptions(**kw)

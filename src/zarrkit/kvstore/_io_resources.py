"""TensorStore's I/O tuning context resources: their JSON checked and written as TensorStore
0.1.86 does (members at their default left out, durations in Abseil's form: "1m30s", "500ms").

file_io_sync (a boolean), file_io_locking ({"mode", "acquire_timeout"}), file_io_mode
({"mode"}), file_io_retries and the remote stores' *_request_retries ({"max_retries",
"initial_delay", "max_delay"}), gcs_user_project ({"project_id"}) and the rate limiters
({"read_rate", "write_rate", "doubling_time"}). The kvstore drivers and the spec layer's `Context` share these rules, so a
value refused in a context is refused inline too, with the same message. `DRIVER_RESOURCES`
says which resources each kvstore driver uses, in which role.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import SpecError

_NS = {"ns": Fraction(1), "us": Fraction(10**3), "ms": Fraction(10**6), "s": Fraction(10**9),
       "m": Fraction(60 * 10**9), "h": Fraction(3600 * 10**9)}
_TERM = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|ms|s|m|h)")
_DURATION = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|ms|s|m|h))+")


def parse_duration(value: Any, where: str) -> Fraction | float:
    """A duration string ("1.5s", "1h30m", "0", "inf") as nanoseconds (a Fraction, or +-inf);
    SpecError for anything else (a number of seconds too, as TensorStore refuses it)."""
    if isinstance(value, str):
        text = value.lstrip("+-")
        sign = -1 if value.startswith("-") else 1
        if text == "inf" and len(value) - len(text) <= 1:
            return sign * math.inf
        if value in ("0", "+0", "-0"):
            return Fraction(0)
        if _DURATION.fullmatch(value):
            total = sum(Fraction(n) * _NS[unit] for n, unit in _TERM.findall(text))
            return sign * Fraction(math.floor(total * 4), 4)  # Abseil's quarter nanoseconds
    raise SpecError(f"{where}: expected a duration such as \"1.5s\", \"500ms\" or \"1m\" (units "
                    f"ns, us, ms, s, m, h), got {value!r}")


def format_duration(ns: Fraction | float) -> str:
    """Abseil's text of a duration: "0", "inf", "1h1m1.5s", "500ms", "1.5us"."""
    if ns in (math.inf, -math.inf):
        return "inf" if ns > 0 else "-inf"
    if ns == 0:
        return "0"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < _NS["s"]:
        unit = "ns" if ns < _NS["us"] else "us" if ns < _NS["ms"] else "ms"
        return sign + _decimal(ns / _NS[unit], 12) + unit
    hours, rest = divmod(ns, _NS["h"])
    minutes, rest = divmod(rest, _NS["m"])
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    if rest:
        text += _decimal(rest / _NS["s"], 11) + "s"
    return sign + text


def _decimal(value: Fraction, digits: int) -> str:
    whole = math.floor(value * 10**digits)
    text = f"{whole // 10**digits}.{whole % 10**digits:0{digits}d}".rstrip("0")
    return text.rstrip(".")


def seconds(json: dict[str, Any], name: str, default: str) -> float:
    """A normalized resource's duration member in seconds (inf stays inf)."""
    ns = parse_duration(json.get(name, default), name)
    return float(ns) / 1e9


def _object(json: Any, where: str, members: tuple[str, ...]) -> dict[str, Any]:
    if json is None:
        return {}
    if not isinstance(json, dict):
        raise SpecError(f"{where}: expected an object, got {json!r}")
    unknown = sorted(set(json) - set(members))
    if unknown:
        raise SpecError(f"{where}: unknown member(s) {unknown} (expected "
                        f"{', '.join(members)})")
    return json


def _mode(json: dict[str, Any], where: str, modes: tuple[str, ...], out: dict[str, Any]) -> None:
    mode = json.get("mode", modes[0])
    if not isinstance(mode, str) or mode not in modes:
        raise SpecError(f"{where}.mode: expected one of {', '.join(map(repr, modes))}, got "
                        f"{mode!r}")
    if mode != modes[0]:
        out["mode"] = mode


def _duration(json: dict[str, Any], name: str, default: str, where: str,
              out: dict[str, Any]) -> None:
    if name in json:
        ns = parse_duration(json[name], f"{where}.{name}")
        if ns != parse_duration(default, name):
            out[name] = format_duration(ns)


def _locking(json: Any, where: str) -> dict[str, Any]:
    json, out = _object(json, where, ("mode", "acquire_timeout")), {}
    _mode(json, where, LOCKING_MODES, out)
    _duration(json, "acquire_timeout", "60s", where, out)
    return out


def _io_mode(json: Any, where: str) -> dict[str, Any]:
    json, out = _object(json, where, ("mode",)), {}
    _mode(json, where, ("default", "memmap", "direct"), out)
    return out


def _retries(default_retries: int) -> Callable[[Any, str], dict[str, Any]]:
    def normalize(json: Any, where: str) -> dict[str, Any]:
        json, out = _object(json, where, ("max_retries", "initial_delay", "max_delay")), {}
        if "max_retries" in json:
            count = json["max_retries"]
            if isinstance(count, float) and count.is_integer():
                count = int(count)
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise SpecError(f"{where}.max_retries: expected an integer >= 0, got "
                                f"{json['max_retries']!r}")
            if count != default_retries:
                out["max_retries"] = count
        _duration(json, "initial_delay", "1s", where, out)
        _duration(json, "max_delay", "32s", where, out)
        return out
    return normalize


def _rate_limiter(json: Any, where: str) -> dict[str, Any]:
    """{"read_rate", "write_rate", "doubling_time"}, each kept when given (TensorStore writes
    the rates as floats and keeps doubling_time even at its default, "0"). Rates are checked
    to be positive only when the limiter is made, where TensorStore refuses them."""
    json, out = _object(json, where, ("read_rate", "write_rate", "doubling_time")), {}
    for name in ("read_rate", "write_rate"):
        if name in json:
            rate = json[name]
            if isinstance(rate, bool) or not isinstance(rate, int | float):
                raise SpecError(f"{where}.{name}: expected a number, got {rate!r}")
            out[name] = float(rate)
    if "doubling_time" in json:
        out["doubling_time"] = format_duration(parse_duration(json["doubling_time"],
                                                              f"{where}.doubling_time"))
    return out


def _user_project(json: Any, where: str) -> dict[str, Any]:
    json = _object(json, where, ("project_id",))
    if not isinstance(json.get("project_id", ""), str):
        raise SpecError(f"{where}.project_id: expected a string, got {json['project_id']!r}")
    return dict(json)


def _sync(json: Any, where: str) -> bool:
    if json is None:
        return True
    if not isinstance(json, bool):
        raise SpecError(f"{where}: expected true or false, got {json!r}")
    return json


#: file_io_locking modes, TensorStore's default first.
LOCKING_MODES = ("os", "lockfile", "none", "non_atomic")

#: Each resource kind's check: its JSON (None: the default) -> the JSON TensorStore writes.
NORMALIZE: dict[str, Callable[[Any, str], Any]] = {
    "file_io_sync": _sync, "file_io_locking": _locking, "file_io_mode": _io_mode,
    "file_io_retries": _retries(0), "http_request_retries": _retries(32),
    "gcs_request_retries": _retries(32), "s3_request_retries": _retries(32),
    "experimental_s3_rate_limiter": _rate_limiter, "experimental_gcs_rate_limiter": _rate_limiter,
    "gcs_user_project": _user_project,
}


def normalize(kind: str, json: Any, where: str) -> Any:
    """The JSON TensorStore writes for a `kind` resource given as `json`; SpecError if it
    refuses it."""
    return NORMALIZE[kind](json, where)


@dataclass(frozen=True)
class DriverResources:
    """The context resources a kvstore driver uses, by the role each plays."""

    #: Bounds the store's concurrent I/O (the spec layer holds a slot per request).
    concurrency: str | None = None
    #: Its retry policy ({"max_retries", "initial_delay", "max_delay"}).
    retries: str | None = None
    #: Limits its request rate; as in TensorStore, only when the spec has the member.
    rate_limiter: str | None = None
    #: What a spec retaining its context writes inline in the kvstore, resolved (TensorStore's
    #: config-only resources), in TensorStore's order.
    inline: tuple[str, ...] = ()


_FILE = DriverResources("file_io_concurrency", "file_io_retries",
                        inline=("file_io_locking", "file_io_mode", "file_io_retries"))
_S3 = DriverResources("s3_request_concurrency", "s3_request_retries",
                      "experimental_s3_rate_limiter", inline=("s3_request_retries",))
_GCS = DriverResources("gcs_request_concurrency", "gcs_request_retries",
                       "experimental_gcs_rate_limiter",
                       inline=("gcs_request_retries", "gcs_user_project"))
_HTTP = DriverResources("http_request_concurrency", "http_request_retries",
                        inline=("http_request_retries",))

#: Each kvstore driver's resources (drivers not named use none).
DRIVER_RESOURCES: dict[str, DriverResources] = {
    "file": _FILE, "s3": _S3, "gcs": _GCS, "gs": _GCS, "http": _HTTP, "https": _HTTP}
_NONE = DriverResources()

#: The rate limiter resource kinds.
RATE_LIMITERS = tuple(sorted({r.rate_limiter for r in DRIVER_RESOURCES.values()
                              if r.rate_limiter}))


def driver_resources(driver: Any) -> DriverResources:
    """The resources of kvstore driver `driver` (none for an unknown or resource-less one)."""
    return DRIVER_RESOURCES.get(driver, _NONE) if isinstance(driver, str) else _NONE

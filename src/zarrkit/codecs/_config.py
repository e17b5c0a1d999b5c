"""Validation helpers for codec `configuration` objects.

Every error names the codec and the member at fault, as the CodecError contract requires.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..errors import CodecError

#: Sentinel: the member is required (no default).
REQUIRED: Any = object()


def check_members(config: dict[str, Any], allowed: Collection[str], codec: str) -> None:
    if not isinstance(config, dict):
        raise CodecError(f"{codec} codec: configuration must be a JSON object, got {config!r}")
    unknown = sorted(k for k in config if k not in allowed)
    if unknown:
        raise CodecError(f"{codec} codec: unknown configuration member(s) {', '.join(map(repr, unknown))}")


def _missing(key: str, codec: str, default: Any) -> Any:
    if default is REQUIRED:
        raise CodecError(f"{codec} codec: configuration member {key!r} is required")
    return default


def get_int(
    config: dict[str, Any], key: str, codec: str, *,
    lo: int | None = None, hi: int | None = None, default: Any = REQUIRED,
) -> Any:
    if key not in config:
        return _missing(key, codec, default)
    value = config[key]
    # bool is an int subclass in Python but not an integer in JSON.
    if not isinstance(value, int) or isinstance(value, bool) or (
            lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f" in [{lo}, {'+inf' if hi is None else hi}]" if lo is not None else ""
        raise CodecError(f"{codec} codec: configuration member {key!r} must be an integer{bounds}, got {value!r}")
    return value


def get_bool(config: dict[str, Any], key: str, codec: str, *, default: Any = REQUIRED) -> Any:
    if key not in config:
        return _missing(key, codec, default)
    value = config[key]
    if not isinstance(value, bool):
        raise CodecError(f"{codec} codec: configuration member {key!r} must be true or false, got {value!r}")
    return value


def get_choice(
    config: dict[str, Any], key: str, codec: str, choices: Collection[str], *, default: Any = REQUIRED,
) -> Any:
    if key not in config:
        return _missing(key, codec, default)
    value = config[key]
    if not isinstance(value, str) or value not in choices:
        raise CodecError(
            f"{codec} codec: configuration member {key!r} must be one of "
            f"{', '.join(map(repr, choices))}, got {value!r}")
    return value


def get_shape(config: dict[str, Any], key: str, codec: str) -> tuple[int, ...]:
    value = config[key] if key in config else _missing(key, codec, REQUIRED)
    if not isinstance(value, list | tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value):
        raise CodecError(
            f"{codec} codec: configuration member {key!r} must be an array of positive integers, got {value!r}")
    return tuple(value)


def get_list(config: dict[str, Any], key: str, codec: str) -> list[Any]:
    value = config[key] if key in config else _missing(key, codec, REQUIRED)
    if not isinstance(value, list | tuple):
        raise CodecError(f"{codec} codec: configuration member {key!r} must be an array, got {value!r}")
    return list(value)

"""Helpers shared by the metadata parsers: value descriptions and extension objects."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import MetadataError

_MAX_SHOWN = 80


def describe(value: Any) -> str:
    """A short repr of a JSON value for error messages (documents can be huge)."""
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def is_int(value: Any) -> bool:
    """A JSON integer: Python's bool is an int subclass but means JSON true/false."""
    return isinstance(value, int) and not isinstance(value, bool)


def int_tuple(value: Any, *, low: int, high: int = 2**63 - 1) -> tuple[int, ...] | None:
    """`value` as a tuple of ints in [low, high], or None if it is not a list/tuple of such.

    Integer-likes (numpy ints) are accepted for values built in Python; bools are not integers.
    The default bound keeps element and chunk indices within numpy's int64.
    """
    if not isinstance(value, list | tuple):
        return None
    try:
        result = tuple(operator.index(n) for n in value if not isinstance(n, bool | np.bool_))
    except TypeError:
        return None
    if len(result) != len(value) or not all(low <= n <= high for n in result):
        return None
    return result


def parse_extension(
    value: Any, *, where: str, error: type[MetadataError] = MetadataError
) -> tuple[str, dict[str, Any], bool]:
    """Split an extension (short-hand name or object) into (name, configuration, must_understand).

    Per the core spec an object has a string `name`, an optional object `configuration` and an
    optional boolean `must_understand` (implicitly true); any other member is not understood.
    """
    if isinstance(value, str):
        return value, {}, True
    if not isinstance(value, dict):
        raise error(f"{where}: expected a name or an object with a 'name', got {describe(value)}")
    unknown = sorted(set(value) - {"name", "configuration", "must_understand"})
    if unknown:
        raise error(f"{where}: unexpected member(s) {unknown}")
    name = value.get("name")
    if not isinstance(name, str):
        raise error(f"{where}.name: expected a string, got {describe(name)}")
    config = value.get("configuration", {})
    if not isinstance(config, dict):
        raise error(f"{where}.configuration: expected an object, got {describe(config)}")
    must_understand = value.get("must_understand", True)
    if not isinstance(must_understand, bool):
        raise error(f"{where}.must_understand: expected a boolean, got {describe(must_understand)}")
    return name, config, must_understand


def refuse_unknown_config(
    config: dict[str, Any], known: set[str], *, where: str,
    error: type[MetadataError] = MetadataError,
) -> None:
    unknown = sorted(set(config) - known)
    if unknown:
        raise error(f"{where}.configuration: unexpected member(s) {unknown}")

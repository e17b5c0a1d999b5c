"""Strict JSON reading and writing for metadata documents.

Python's json module accepts and writes the bare literals NaN/Infinity/-Infinity, which are not
JSON (RFC 8259). Metadata must never contain them: fill values spell special floats as strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NoReturn

import numpy as np

from ..errors import MetadataError
from ._util import describe

Buffer = bytes | bytearray | memoryview


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"the bare literal {name} is not valid JSON")


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # RFC 8259 leaves duplicate names undefined; a document with them is corrupt, not ambiguous.
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate object member {key!r}")
            seen.add(key)
    return obj


def json_loads(data: Buffer | str, *, what: str) -> Any:
    """Parse a JSON document; `what` (e.g. the key "a/zarr.json") is named in every error."""
    if not isinstance(data, str):
        try:
            # utf-8-sig: RFC 8259 lets parsers ignore a byte order mark.
            data = bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise MetadataError(f"{what}: not valid UTF-8 ({e})") from None
    try:
        return json.loads(data, parse_constant=_refuse_constant, object_pairs_hook=_unique_object)
    except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
        raise MetadataError(f"{what}: malformed JSON: {e}") from None


def _to_builtin(obj: Any) -> Any:
    # numpy scalars and arrays show up in user attributes; write them as the equivalent JSON.
    if isinstance(obj, np.generic | np.ndarray):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def json_dumps(obj: Any, *, what: str = "metadata document") -> bytes:
    """Serialize to UTF-8 JSON with indent=2; raises MetadataError rather than write invalid JSON."""
    kwargs: dict[str, Any] = {"indent": 2, "allow_nan": False, "default": _to_builtin}
    try:
        text = json.dumps(obj, ensure_ascii=False, **kwargs)
    except (ValueError, TypeError, RecursionError) as e:
        raise MetadataError(f"{what}: cannot be written as JSON: {e}") from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates cannot be UTF-8 encoded, but \uXXXX escapes keep them exactly.
        return json.dumps(obj, ensure_ascii=True, **kwargs).encode("ascii")


def storable_attributes(value: Any, where: str) -> dict[str, Any]:
    """`value` as node attributes that can be written as strict JSON, else MetadataError naming
    the attribute. Creation checks this before any store change, as an overwrite deletes the old
    node first (both formats: v2 writes `.zattrs` last, after `.zarray`/`.zgroup`)."""
    if not isinstance(value, Mapping):
        raise MetadataError(f"{where}: attributes: expected an object, got {describe(value)}")
    for key in value:
        if not isinstance(key, str):
            raise MetadataError(f"{where}: attributes: key {key!r} is not a string "
                                "(JSON object keys are strings)")
    attributes = dict(value)
    try:
        json_dumps(attributes)
    except MetadataError:
        for key, item in attributes.items():
            json_dumps(item, what=f"{where}: attributes: {key!r}")
        raise
    return attributes

"""Strict JSON reading and writing for metadata documents.

Python's json module accepts and writes the bare literals NaN/Infinity/-Infinity, which are not
JSON (RFC 8259): strict readers (TensorStore, JavaScript's) refuse a document holding one, so
zarrkit writes them nowhere but in user attributes (fill values spell special floats as strings).
There zarr-python (2.x and 3.x, both formats) writes NaN as a bare literal and reads only that
back as a float (the string "NaN" stays a string), so zarrkit does the same: such values become
`JsonConstant`s (as read from a stored document), the only non-finite floats `json_dumps` writes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import MetadataError
from ._util import describe

Buffer = bytes | bytearray | memoryview


class JsonConstant(float):
    """A bare NaN/Infinity/-Infinity of user attributes (read from a stored document or given
    by the user): a float, written back as a bare literal."""

    __slots__ = ()


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
        return json.loads(data, parse_constant=JsonConstant, object_pairs_hook=_unique_object)
    except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
        raise MetadataError(f"{what}: malformed JSON: {e}") from None


def _to_builtin(obj: Any) -> Any:
    # numpy scalars and arrays show up in user attributes; write them as the equivalent JSON.
    if isinstance(obj, np.generic | np.ndarray):
        if obj.dtype.kind in "biufUO":
            return obj.tolist()
        # Not datetime.date, complex or bytes (which tolist gives): the numpy type the user gave.
        kind = obj.dtype if isinstance(obj, np.generic) else f"array of {obj.dtype}"
        raise TypeError(f"numpy {kind} is not JSON serializable")
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def json_dumps(obj: Any, *, what: str = "metadata document", constants: bool = False) -> bytes:
    """Serialize to UTF-8 JSON with indent=2; raises MetadataError rather than write invalid JSON
    (NaN and the infinities are written as bare literals only if `constants` or if they are
    `JsonConstant`s)."""
    kwargs: dict[str, Any] = {"indent": 2, "allow_nan": constants, "default": _to_builtin}
    try:
        text = json.dumps(obj, ensure_ascii=False, **kwargs)
    except ValueError as e:
        text = _with_read_constants(obj, kwargs, e, what)
    except (TypeError, RecursionError) as e:
        raise MetadataError(f"{what}: cannot be written as JSON: {e}") from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates cannot be UTF-8 encoded, but \uXXXX escapes keep them exactly.
        return json.dumps(obj, ensure_ascii=True, **kwargs).encode("ascii")


def _with_read_constants(obj: Any, kwargs: dict[str, Any], error: ValueError, what: str) -> str:
    """`obj` as JSON after `error`, when its only NaNs and infinities are those read from a
    stored document (written back as they were: `kwargs` then allows them); else MetadataError.
    Other ValueErrors (a circular reference, an integer too long for `str`) are MetadataErrors
    too (they were bare ValueErrors, and a cycle a RecursionError of `_only_read_constants`)."""
    hint = ""
    try:
        if _only_read_constants(obj):
            kwargs["allow_nan"] = True  # each one as it was read
            return json.dumps(obj, ensure_ascii=False, **kwargs)
        hint = (" (NaN and the infinities have no JSON form; strict readers, TensorStore's, "
                "JavaScript's, refuse documents holding them)")
    except (ValueError, RecursionError):
        pass  # not (only) a constant at fault: `error` says what is
    raise MetadataError(f"{what}: cannot be written as JSON: {error}{hint}") from None


def _only_read_constants(obj: Any) -> bool:
    """Whether every NaN or infinite float in `obj` is a `JsonConstant` (and nothing else
    keeps it from being JSON)."""
    if isinstance(obj, float):
        return isinstance(obj, JsonConstant) or np.isfinite(obj)
    if isinstance(obj, Mapping):
        return all(map(_only_read_constants, obj.values()))
    if isinstance(obj, list | tuple):
        return all(map(_only_read_constants, obj))
    if isinstance(obj, np.floating):
        return bool(np.isfinite(obj))
    if isinstance(obj, np.ndarray) and obj.dtype.kind == "f":
        return bool(np.isfinite(obj).all())
    return True


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
        text = json_dumps(attributes, constants=True)
    except MetadataError:
        for key, item in attributes.items():
            json_dumps(item, what=f"{where}: attributes: {key!r}", constants=True)
        raise
    try:
        # As a reader sees them (numpy values as lists, tuples as lists, NaN as a JsonConstant),
        # the same as reopened.
        return json_loads(text, what=where)
    except MetadataError:  # only a duplicate member can fail here: say which attribute
        for key, item in attributes.items():
            _refuse_name_clash(item, f"{where}: attributes: {key!r}")
        raise


def _json_name(key: Any) -> str:
    # The object member name json.dumps writes for a dict key (1 -> "1", None -> "null").
    return next(iter(json.loads(json.dumps({key: None}))))


def _refuse_name_clash(obj: Any, what: str) -> None:
    """MetadataError if two keys of a dict in `obj` become the same JSON name (1 and "1", True
    and "true"): json.dumps writes both, a document with a duplicate member that every strict
    reader, zarrkit's own included, refuses as corrupt (it was refused as "malformed JSON")."""
    if isinstance(obj, Mapping):
        if not all(isinstance(key, str) for key in obj):
            seen: dict[str, Any] = {}
            for key in obj:
                name = _json_name(key)
                if name in seen:
                    raise MetadataError(f"{what}: keys {seen[name]!r} and {key!r} are both "
                                        f"written as the JSON name {name!r}")
                seen[name] = key
        for item in obj.values():
            _refuse_name_clash(item, what)
    elif isinstance(obj, list | tuple):
        for item in obj:
            _refuse_name_clash(item, what)

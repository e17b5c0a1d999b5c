"""Codec registry: codec name -> codec class, and parsing of one codec JSON object."""

from __future__ import annotations

from typing import Any, TypeVar

from ..errors import CodecError
from .base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec, Codec

_CODECS: dict[str, type[Codec]] = {}
_MEMBERS = frozenset({"name", "configuration", "must_understand"})

C = TypeVar("C", bound=type[Codec])


def register_codec(cls: C) -> C:
    """Register `cls` under `cls.name` (usable as a class decorator). A later registration of the
    same name replaces the earlier one, so applications can plug in their own implementation."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls!r} has no codec name")
    _CODECS[name] = cls
    return cls


def get_codec_class(name: str) -> type[Codec]:
    try:
        return _CODECS[name]
    except KeyError:
        raise CodecError(f"unknown codec {name!r}") from None


def codec_kind(name: Any) -> type[Codec] | None:
    """ArrayArrayCodec, ArrayBytesCodec or BytesBytesCodec: the kind of the codec registered
    as `name`, or None if none is."""
    cls = _CODECS.get(name) if isinstance(name, str) else None
    return next((k for k in (ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec)
                 if cls is not None and issubclass(cls, k)), None)


def registered_codecs() -> list[str]:
    return sorted(_CODECS)


def parse_codec(json: dict[str, Any] | str, *, where: str = "codec") -> Codec:
    """Parse one codec object (or a bare name string) from array metadata.

    `where` locates it in the document (e.g. "codecs[2]") and prefixes every error message.
    """
    if isinstance(json, str):
        name, config, must_understand = json, {}, True
    elif isinstance(json, dict):
        extra = sorted(k for k in json if k not in _MEMBERS)
        if extra:
            raise CodecError(f"{where}: unknown member(s) {', '.join(map(repr, extra))} in codec {json!r}")
        name = json.get("name")
        config = json.get("configuration", {})
        must_understand = json.get("must_understand", True)
        if not isinstance(name, str):
            raise CodecError(f"{where}: codec 'name' must be a string, got {name!r}")
        if not isinstance(config, dict):
            raise CodecError(f"{where}: {name} codec: 'configuration' must be a JSON object, got {config!r}")
        if not isinstance(must_understand, bool):
            raise CodecError(f"{where}: {name} codec: 'must_understand' must be a boolean")
    else:
        raise CodecError(f"{where}: a codec must be a JSON object or a string, got {json!r}")
    cls = _CODECS.get(name)
    if cls is None:
        # Skipping a codec would misread every chunk, so must_understand=false cannot help.
        hint = " (must_understand is false, but a codec cannot be skipped)" if not must_understand else ""
        raise CodecError(f"{where}: unknown codec {name!r}{hint}")
    try:
        return cls.from_config(dict(config))
    except CodecError as e:
        raise CodecError(f"{where}: {e}") from e

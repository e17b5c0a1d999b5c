"""Chunk key encodings: "default" (chunk-key-encoding-default.rst) and "v2" (…-v2.rst)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from ..errors import MetadataError
from ._util import describe, parse_extension, refuse_unknown_config

_DEFAULT_SEPARATOR = {"default": "/", "v2": "."}
_PRECOMPUTED_RANKS = 33  # TensorStore's rank limit is 32; larger ranks take the slow path


@dataclass(frozen=True, slots=True)
class ChunkKeyEncoding:
    """Maps chunk grid coordinates to store keys (relative to the array's prefix)."""

    name: str = "default"
    #: "/" or "."; None picks the encoding's default ("/" for default, "." for v2).
    separator: str | None = None
    # The JSON this was parsed from, written back unchanged so a document from another
    # implementation ({"name": "v2"} vs. one with an explicit configuration) round-trips.
    source_json: Any = field(default=None, compare=False, repr=False)
    _head: str = field(init=False, compare=False, repr=False)
    _empty: str = field(init=False, compare=False, repr=False)
    _formats: tuple[str, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.name not in _DEFAULT_SEPARATOR:
            raise MetadataError(f"chunk_key_encoding: unsupported encoding {describe(self.name)} "
                                f"(expected 'default' or 'v2')")
        separator = _DEFAULT_SEPARATOR[self.name] if self.separator is None else self.separator
        if separator not in ("/", "."):
            raise MetadataError(f"chunk_key_encoding.configuration.separator: expected '/' or "
                                f"'.', got {describe(separator)}")
        object.__setattr__(self, "separator", separator)
        default = self.name == "default"
        object.__setattr__(self, "_head", "c" + separator if default else "")
        object.__setattr__(self, "_empty", "c" if default else "0")
        # One %-format per rank, so that `encode` (called per chunk) is a single formatting
        # operation: about a third faster than joining str() of each coordinate.
        formats = tuple(self._format(n) for n in range(_PRECOMPUTED_RANKS))
        object.__setattr__(self, "_formats", formats)

    def _format(self, ndim: int) -> str:
        if ndim == 0:
            return self._empty
        return self._head + self.separator.join(["%d"] * ndim)

    @classmethod
    def from_json(cls, value: Any, *, where: str = "chunk_key_encoding") -> ChunkKeyEncoding:
        name, config, _ = parse_extension(value, where=where)
        if name not in _DEFAULT_SEPARATOR:
            raise MetadataError(
                f"{where}: unsupported chunk key encoding {name!r} (expected 'default' or 'v2')")
        refuse_unknown_config(config, {"separator"}, where=where)
        separator = config.get("separator", _DEFAULT_SEPARATOR[name])
        if separator not in ("/", "."):
            raise MetadataError(
                f"{where}.configuration.separator: expected '/' or '.', got {describe(separator)}")
        return cls(name, separator, source_json=copy.deepcopy(value))

    def to_json(self) -> str | dict[str, Any]:
        if self.source_json is not None:
            return copy.deepcopy(self.source_json)
        return {"name": self.name, "configuration": {"separator": self.separator}}

    def encode(self, coords: tuple[int, ...]) -> str:
        """The key of the chunk at grid position `coords` (ints), e.g. "c/1/2" or "1.2"."""
        try:
            return self._formats[len(coords)] % coords
        except (IndexError, TypeError):  # a rank above 32, or coords not a tuple
            coords = tuple(coords)
            return self._format(len(coords)) % coords

    def decode(self, key: str, ndim: int) -> tuple[int, ...] | None:
        """The grid position encoded by `key`, or None if `key` is not a chunk key of this rank."""
        if ndim == 0:
            return () if key == self._empty else None
        if not key.startswith(self._head):
            return None
        parts = key[len(self._head):].split(self.separator)
        # Only canonical decimals: "01" or "+1" would be a different key for the same chunk.
        if len(parts) != ndim or not all(p.isascii() and p.isdigit() and (p == "0" or p[0] != "0")
                                         for p in parts):
            return None
        return tuple(map(int, parts))

"""The regular chunk grid (chunk-grid-regular.rst)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import MetadataError
from ._util import describe, int_tuple, parse_extension, refuse_unknown_config


def _parse_chunk_shape(value: Any, *, where: str) -> tuple[int, ...]:
    shape = int_tuple(value, low=1)
    if shape is None:
        raise MetadataError(f"{where}: expected a list of positive integers, got {describe(value)}")
    return shape


@dataclass(frozen=True, slots=True)
class RegularChunkGrid:
    """Every chunk has `chunk_shape`; the grid starts at the origin and may overhang the end."""

    chunk_shape: tuple[int, ...]

    def __post_init__(self) -> None:
        shape = _parse_chunk_shape(self.chunk_shape, where="chunk_grid.configuration.chunk_shape")
        object.__setattr__(self, "chunk_shape", shape)

    @property
    def ndim(self) -> int:
        return len(self.chunk_shape)

    @classmethod
    def from_json(
        cls, value: Any, *, ndim: int | None = None, where: str = "chunk_grid"
    ) -> RegularChunkGrid:
        """Parse `chunk_grid`; with `ndim`, the chunk rank must equal the array rank."""
        name, config, _ = parse_extension(value, where=where)
        if name != "regular":
            raise MetadataError(f"{where}: unsupported chunk grid {name!r} (only 'regular')")
        refuse_unknown_config(config, {"chunk_shape"}, where=where)
        field = f"{where}.configuration.chunk_shape"
        if "chunk_shape" not in config:
            raise MetadataError(f"{field}: missing")
        shape = _parse_chunk_shape(config["chunk_shape"], where=field)
        if ndim is not None and len(shape) != ndim:
            raise MetadataError(
                f"{field}: has {len(shape)} dimensions, the array has {ndim}")
        return cls(shape)

    def to_json(self) -> dict[str, Any]:
        return {"name": "regular", "configuration": {"chunk_shape": list(self.chunk_shape)}}

    def grid_shape(self, array_shape: tuple[int, ...]) -> tuple[int, ...]:
        """Chunks per dimension: ceil(shape / chunk); a zero-length dimension has none."""
        if len(array_shape) != len(self.chunk_shape):
            raise MetadataError(f"chunk grid of rank {len(self.chunk_shape)} does not match "
                                f"array shape {tuple(array_shape)}")
        return tuple(-(-n // c) for n, c in zip(array_shape, self.chunk_shape, strict=True))

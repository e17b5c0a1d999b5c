"""TensorStore-style specs: open modes, schema, chunk layout."""

from .chunk_layout import (
    ChunkGrid,
    ChunkLayout,
    choose_chunk_shapes,
    effective_chunk_layout,
    transpose_order,
)

__all__ = [
    "ChunkGrid",
    "ChunkLayout",
    "choose_chunk_shapes",
    "effective_chunk_layout",
    "transpose_order",
]

"""The `transpose` codec: permutes the dimensions of a chunk (a view; no data moves)."""

from __future__ import annotations

from typing import Any, Self

import numpy as np

from ..errors import CodecError
from ._config import check_members
from .base import ArrayArrayCodec, ChunkSpec
from .registry import register_codec


@register_codec
class TransposeCodec(ArrayArrayCodec):
    name = "transpose"

    def __init__(self, order: tuple[int, ...] | str) -> None:
        if isinstance(order, str):
            # "C"/"F" are TensorStore's rank-agnostic forms; evolve turns them into a list.
            if order not in ("C", "F"):
                raise CodecError(f"transpose codec: 'order' must be a permutation, 'C' or 'F', got {order!r}")
            self.order: tuple[int, ...] | str = order
            return
        if not isinstance(order, list | tuple | np.ndarray) or not all(
                isinstance(i, int | np.integer) and not isinstance(i, bool) for i in order) or sorted(
                order) != list(range(len(order))):
            raise CodecError(f"transpose codec: 'order' must be a permutation of 0..n-1, got {order!r}")
        self.order = tuple(int(i) for i in order)
        self._inverse = tuple(int(i) for i in np.argsort(order))

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Self:
        check_members(config, ("order",), cls.name)
        if "order" not in config:
            raise CodecError("transpose codec: configuration member 'order' is required")
        order = config["order"]
        if not isinstance(order, list | tuple | str):
            raise CodecError(f"transpose codec: 'order' must be a permutation of 0..n-1, got {order!r}")
        return cls(order)

    def to_json(self) -> dict[str, Any]:
        order = self.order if isinstance(self.order, str) else list(self.order)
        return {"name": self.name, "configuration": {"order": order}}

    def evolve(self, spec: ChunkSpec) -> TransposeCodec:
        ndim = len(spec.shape)
        if self.order == "C":
            return TransposeCodec(tuple(range(ndim)))
        if self.order == "F":
            return TransposeCodec(tuple(reversed(range(ndim))))
        if len(self.order) != ndim:
            raise CodecError(
                f"transpose codec: 'order' {list(self.order)} is not a permutation of the {ndim} chunk dimensions")
        return self

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        order = self._explicit(spec)
        return spec.with_shape(tuple(spec.shape[i] for i in order))

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return array.transpose(self._explicit(spec))

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        return array.transpose(self._inverse if not isinstance(self.order, str) else self._explicit(spec))

    def _explicit(self, spec: ChunkSpec) -> tuple[int, ...]:
        if isinstance(self.order, str):
            return self.evolve(spec).order  # type: ignore[return-value]
        return self.order

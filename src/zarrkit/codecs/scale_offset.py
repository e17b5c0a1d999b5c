"""The `scale_offset` codec (zarr-extensions): array->array, encoding `(x - offset) * scale`
and decoding `x / scale + offset`, in the array's own numeric type.

`offset` and `scale` are written in the fill-value encoding of that type (`_scalars`). Integer
types compute with wrap-around, and decode dividing towards zero (as zarrita.js does); the
fill value is encoded too, for the codecs after this one.
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np

from ..errors import CodecError
from ._config import check_members
from ._scalars import check_numeric, scalar
from .base import ArrayArrayCodec, ChunkSpec
from .registry import register_codec


@register_codec
class ScaleOffsetCodec(ArrayArrayCodec):
    name = "scale_offset"

    def __init__(self, offset: Any, scale: Any, dtype: np.dtype | None = None) -> None:
        """`offset` and `scale` as JSON; `dtype` (set by `evolve`) binds them to numbers."""
        self.config = {"offset": offset, "scale": scale}
        self._bound = dtype is not None
        if dtype is not None:
            what = f"{self.name} codec"
            self._offset = scalar(offset, dtype, f"{what}: offset")
            self._scale = scalar(scale, dtype, f"{what}: scale")
            if self._scale == 0:
                raise CodecError(f"{what}: scale must not be 0 (decoding divides by it)")

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Self:
        check_members(config, ("offset", "scale"), cls.name)
        for key in ("offset", "scale"):
            if key not in config:
                raise CodecError(f"{cls.name} codec: configuration member {key!r} is required")
        return cls(config["offset"], config["scale"])

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": dict(self.config)}

    def evolve(self, spec: ChunkSpec) -> ScaleOffsetCodec:
        check_numeric(spec.dtype, f"{self.name} codec")
        return ScaleOffsetCodec(self.config["offset"], self.config["scale"], spec.dtype)

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        fill = self._bound_to(spec).encode(np.asarray(spec.fill_value, spec.dtype), spec)
        return ChunkSpec(spec.shape, spec.dtype, fill[()])

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        codec, dtype = self._bound_to(spec), spec.dtype
        with np.errstate(over="ignore", invalid="ignore"):
            shifted = np.subtract(array, codec._offset, dtype=dtype)
            return np.multiply(shifted, codec._scale, dtype=dtype)

    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        codec, dtype = self._bound_to(spec), spec.dtype
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if dtype.kind == "f":
                scaled = np.divide(array, codec._scale, dtype=dtype)
            else:  # towards zero: numpy's floor division, moved up where it rounded down
                scaled = np.floor_divide(array, codec._scale, dtype=dtype)
                inexact = np.remainder(array, codec._scale, dtype=dtype) != 0
                scaled += (inexact & ((array < 0) != (codec._scale < 0))).astype(dtype)
            return np.add(scaled, codec._offset, dtype=dtype)

    def _bound_to(self, spec: ChunkSpec) -> ScaleOffsetCodec:
        return self if self._bound else self.evolve(spec)

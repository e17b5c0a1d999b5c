"""The three kinds of codec (array->array, array->bytes, bytes->bytes) and the chunk spec they act on.

A codec object is immutable and holds its complete configuration. `from_config` parses and validates
a JSON configuration (raising CodecError that names the codec and field); `to_json` writes it back.
`evolve` fills in defaults that depend on the array (e.g. blosc's typesize) and `resolve` says what
representation a codec hands to the next one, so a chain can be checked before any data moves.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np

Buffer = bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class ChunkSpec:
    """The decoded representation of one chunk as seen by a codec.

    `dtype` is a native-byte-order numpy dtype (ml_dtypes types for bfloat16/int4, `V<n>` for raw
    `r<8n>`); `fill_value` is a numpy scalar of that dtype.
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    fill_value: Any

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    def with_shape(self, shape: tuple[int, ...]) -> ChunkSpec:
        return ChunkSpec(tuple(shape), self.dtype, self.fill_value)


class Codec(ABC):
    #: The codec's registered name, e.g. "gzip".
    name: ClassVar[str]

    @classmethod
    @abstractmethod
    def from_config(cls, config: dict[str, Any]) -> Self:
        """Parse and validate the `configuration` object (an empty dict if absent)."""

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """{"name": ..., "configuration": {...}}; "configuration" omitted when it would be empty."""

    def evolve(self, spec: ChunkSpec) -> Codec:
        """This codec with array-dependent defaults filled in. Raises CodecError if unusable."""
        return self

    def resolve(self, spec: ChunkSpec) -> ChunkSpec:
        """The representation this codec produces from `spec` (array->array codecs change it)."""
        return spec

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.to_json() == other.to_json()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(repr(self.to_json()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_json()!r})"


class ArrayArrayCodec(Codec):
    @abstractmethod
    def encode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        """`spec` describes `array` (the decoded side)."""

    @abstractmethod
    def decode(self, array: np.ndarray, spec: ChunkSpec) -> np.ndarray:
        """`spec` describes the result (the decoded side), as for `encode`."""


class ArrayBytesCodec(Codec):
    @abstractmethod
    def encode(self, array: np.ndarray, spec: ChunkSpec) -> Buffer:
        """Encode a chunk of exactly `spec.shape` and `spec.dtype`."""

    @abstractmethod
    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        """Decode to an array of `spec.shape`/`spec.dtype` (may be a read-only view of `data`)."""

    def encoded_size(self, spec: ChunkSpec) -> int | None:
        """The exact encoded size if fixed, else None."""
        return None


class BytesBytesCodec(Codec):
    #: Decodes at memory-copy speeds (checksums, LZ4-class compressors): the engine then runs
    #: small reads in the calling thread rather than paying thread hand-offs.
    fast_decode: bool = False

    @abstractmethod
    def encode(self, data: Buffer, spec: ChunkSpec) -> Buffer: ...

    @abstractmethod
    def decode(self, data: Buffer, spec: ChunkSpec) -> Buffer: ...

    def encoded_size(self, input_size: int) -> int | None:
        """The exact encoded size for an input of `input_size` bytes if fixed, else None."""
        return None

"""The `bytes` codec: an array as its elements' bytes in C order, little or big endian."""

from __future__ import annotations

import math
import sys
from functools import lru_cache
from typing import Any, NamedTuple, Self

import ml_dtypes
import numpy as np

from ..errors import CodecError, CorruptDataError
from ..scratch import SCRATCH_LIMIT, scratch
from ._buffers import nbytes
from ._config import check_members, get_choice
from .base import ArrayBytesCodec, Buffer, ChunkSpec
from .registry import register_codec

_ENDIANS = ("little", "big")
_NUMPY_KINDS = frozenset("biufcmMSU")


def _is_extension(dtype: np.dtype) -> bool:
    """ml_dtypes types (bfloat16, int4, float8...) are kind 'V' but not raw bytes."""
    return dtype.kind == "V" and dtype.type is not np.void


def _check_dtype(dtype: np.dtype) -> None:
    plain_raw = dtype.kind == "V" and dtype.fields is None and dtype.subdtype is None
    record = dtype.names is not None and not dtype.hasobject
    if not (dtype.kind in _NUMPY_KINDS or plain_raw or record or _is_extension(dtype)):
        hint = " (variable-length strings and bytes need the vlen-utf8 or vlen-bytes codec)" \
            if dtype.hasobject else ""
        raise CodecError(f"bytes codec: data type {dtype} cannot be encoded{hint}")


def endian_applies(dtype: np.dtype) -> bool:
    """Whether `endian` matters (and so is required) for `dtype`."""
    return dtype.itemsize > 1 and (dtype.kind not in "SV" or _is_extension(dtype))


def value_mask(dtype: np.dtype) -> int:
    """The value bits of each byte of a sub-byte type (int2, int4, float4_e2m1fn), else 0.

    TensorStore stores one such value per byte, in the low bits; ml_dtypes uses the same layout
    in memory but does not always ignore the high bits, which must be zero when stored and are
    ignored when read (zarr-extensions)."""
    if not (_is_extension(dtype) and dtype.itemsize == 1):
        return 0
    info = ml_dtypes.iinfo(dtype) if dtype.name.startswith(("int", "uint")) else ml_dtypes.finfo(dtype)
    return (1 << info.bits) - 1 if info.bits < 8 else 0


class _Plan(NamedTuple):
    swap_to: np.dtype | None  # stored (byte-swapped) dtype of `carrier`, when a swap is needed
    carrier: np.dtype  # dtype the array is viewed as for swapping (a uint for ml_dtypes types)
    mask: int  # sub-byte types: the value bits of each byte, else 0


@lru_cache(maxsize=256)
def _plan(dtype: np.dtype, endian: str | None) -> _Plan:
    mask = value_mask(dtype)
    carrier = np.dtype(f"u{dtype.itemsize}") if _is_extension(dtype) else dtype
    swap = endian is not None and endian != sys.byteorder and (
        endian_applies(dtype) or dtype.names is not None)
    return _Plan(carrier.newbyteorder(">" if endian == "big" else "<") if swap else None, carrier, mask)


@register_codec
class BytesCodec(ArrayBytesCodec):
    name = "bytes"

    def __init__(self, endian: str | None = "little") -> None:
        if endian is not None and endian not in _ENDIANS:
            raise CodecError(f"bytes codec: 'endian' must be 'little' or 'big', got {endian!r}")
        self.endian = endian

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Self:
        check_members(config, ("endian",), cls.name)
        # Absent is valid: TensorStore omits it for single-byte types; evolve fills it when needed.
        return cls(get_choice(config, "endian", cls.name, _ENDIANS, default=None))

    def to_json(self) -> dict[str, Any]:
        if self.endian is None:
            return {"name": self.name}
        return {"name": self.name, "configuration": {"endian": self.endian}}

    def evolve(self, spec: ChunkSpec) -> BytesCodec:
        _check_dtype(spec.dtype)
        if spec.dtype.names is not None:  # records: zarr-python writes none (the elements'
            return self  # own bytes); one given swaps every field
        endian = (self.endian or "little") if endian_applies(spec.dtype) else None
        return self if endian == self.endian else BytesCodec(endian)

    def passthrough(self, spec: ChunkSpec) -> bool:
        """Whether the stored bytes are the array's own bytes in memory (no swap, no mask)."""
        plan = _plan(spec.dtype, self.endian)
        return not plan.mask and plan.swap_to is None

    def encoded_size(self, spec: ChunkSpec) -> int:
        return spec.nbytes

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> Buffer:
        """The result may share memory with `array` (no copy when it is C-contiguous and native)."""
        # A numpy scalar (the 0-d chunk of a 0-d array) is always native: astype to a swapped
        # dtype would return it unswapped. As a 0-d array it is swapped like any other.
        array = np.asarray(array)
        plan = _plan(spec.dtype, self.endian)
        if plan.mask:
            array = np.bitwise_and(array.view(np.uint8), plan.mask, order="C")
        elif plan.swap_to is not None:
            array = array.view(plan.carrier).astype(plan.swap_to, order="C")
        else:
            array = np.ascontiguousarray(array)
        return memoryview(array.reshape(-1).view(np.uint8))

    def encode_transient(self, array: np.ndarray, spec: ChunkSpec) -> Buffer:
        """`encode`, gathering a strided chunk into this thread's scratch buffer (valid until the
        thread's next encode) rather than fresh memory: chunk-sized allocations freed at once
        cost the page faults of memory handed back to the kernel each time. Not beyond
        SCRATCH_LIMIT: the buffer is never given back, and each thread would keep one."""
        array = np.asarray(array)
        plan = _plan(spec.dtype, self.endian)
        if plan.mask or plan.swap_to is not None or array.flags.c_contiguous \
                or array.nbytes > SCRATCH_LIMIT:
            return self.encode(array, spec)
        dest = np.frombuffer(scratch(array.nbytes, "gather"), array.dtype).reshape(array.shape)
        np.copyto(dest, array)
        return memoryview(dest.reshape(-1).view(np.uint8))

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        """A read-only view of `data` when no conversion is needed."""
        dtype = spec.dtype
        expected = math.prod(spec.shape) * dtype.itemsize
        actual = nbytes(data)
        if actual != expected:
            raise CorruptDataError(
                f"bytes codec: chunk of shape {spec.shape} and type {dtype} needs {expected} bytes, got {actual}")
        plan = _plan(dtype, self.endian)
        if plan.mask:
            out = np.bitwise_and(np.frombuffer(data, np.uint8), plan.mask).view(dtype)
        elif plan.swap_to is not None:
            out = np.frombuffer(data, plan.swap_to).astype(plan.carrier).view(dtype)
        else:
            out = np.frombuffer(data, dtype)
        return out.reshape(spec.shape)

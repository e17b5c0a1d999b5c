"""The `vlen-utf8` and `vlen-bytes` codecs: variable-length strings and bytes (zarr-python's).

An array->bytes codec for object chunks of str (data type "string") or bytes
("variable_length_bytes"). The layout is numcodecs' VLenUTF8 / VLenBytes, which zarr-python uses
too: a little-endian uint32 count, then each element in C order as a uint32 length and its
bytes. Encoding checks every element first, so a wrong value is named rather than stored as
something else (numcodecs writes None and 0 as empty values).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar, Self

import numpy as np
from numcodecs import VLenBytes, VLenUTF8
from numcodecs.abc import Codec as Numcodec

from ..errors import CodecError, CorruptDataError
from ..kvstore.base import encodable_utf8
from ._config import check_members
from .base import ArrayBytesCodec, Buffer, ChunkSpec
from .registry import register_codec


class _VLenCodec(ArrayBytesCodec):
    #: The Python type of the elements, and the data type holding them (for messages).
    value_type: ClassVar[type]
    data_type: ClassVar[str]
    _impl: ClassVar[Numcodec]

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Self:
        check_members(config, (), cls.name)
        return cls()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {}}  # as zarr-python writes it

    def evolve(self, spec: ChunkSpec) -> Self:
        # Both variable-length types are object arrays: the fill value's type tells them apart.
        if spec.dtype != np.dtype(object) or not isinstance(spec.fill_value, self.value_type):
            raise CodecError(f"{self.name} codec: encodes only the {self.data_type!r} data type "
                             f"({self.value_type.__name__} values), not {_type_of(spec)}")
        return self

    def check_values(self, values: np.ndarray, what: str = "a chunk") -> None:
        """Raise CodecError naming the first element of `values` (`what`) that is not of
        `value_type`, or that UTF-8 cannot encode (before a write stores any chunk)."""
        items = self._check_types(values, what)
        bad = first_unencodable(items) if self.value_type is str else None
        if bad is not None:
            raise CodecError(f"{self.name} codec: cannot store {items[bad]!r} at "
                             f"{position(values, bad)} of {what}: {UNENCODABLE}")

    def _check_types(self, values: np.ndarray, what: str) -> list[Any]:
        """The elements of `values` as a list, once all are of `value_type`."""
        items = values.reshape(-1).tolist()
        wanted = self.value_type
        i = first_refused(items, wanted)
        if i is None:
            return items
        value = items[i]
        raise CodecError(
            f"{self.name} codec: cannot store {value!r} ({type(value).__name__}) at "
            f"{position(values, i)} of {what}: a {self.data_type!r} array holds "
            f"{wanted.__name__} values only"
            + (" (write the fill value for missing ones)" if value is None else ""))

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> Buffer:
        values = np.asarray(array, dtype=object).reshape(-1)  # C order, as decode reshapes
        self._check_types(values, "a chunk")  # writes check the text too, before any chunk
        values = exact_values(values, self.value_type)
        if not values.flags.writeable:  # VLenBytes takes a writable buffer (broadcast values)
            values = values.copy()
        try:
            return self._impl.encode(values)
        except UnicodeEncodeError as e:
            raise CodecError(f"{self.name} codec: cannot store a chunk: {UNENCODABLE} "
                             f"({e})") from None

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        values = self._impl.decode(data)
        count = math.prod(spec.shape)
        if values.size != count:
            raise CorruptDataError(f"{self.name} codec: chunk holds {values.size} values, "
                                   f"a chunk of shape {spec.shape} has {count}")
        return values.reshape(spec.shape)


#: Why a str with a lone surrogate (as os.fsdecode makes of undecodable names) is refused.
UNENCODABLE = "it holds a lone surrogate, which UTF-8 cannot encode"


def first_refused(items: list[Any], types: type | tuple[type, ...],
                  also: Callable[[Any], bool] | None = None) -> int | None:
    """The index of the first item that is not an instance of `types` (nor accepted by `also`),
    or None; one pass in C over the items' types when all are."""
    if all(issubclass(t, types) for t in set(map(type, items))):
        return None
    return next((i for i, v in enumerate(items)
                 if not isinstance(v, types) and not (also is not None and also(v))), None)


def position(values: np.ndarray, i: int) -> Any:
    """Where the i-th element (in C order) of `values` is, for messages."""
    return np.unravel_index(i, values.shape) if values.ndim > 1 else i


def first_unencodable(items: list[Any]) -> int | None:
    """The index of the first str of `items` that UTF-8 cannot encode, or None. Checked before
    any chunk is stored: the codec would fail part-way through a write."""
    try:
        text = "".join(items)
    except TypeError:  # v2's None and 0 for empty values
        text = "".join(v for v in items if isinstance(v, str))
    if text.isascii() or encodable_utf8(text):  # one pass in C for the usual case
        return None
    return next(i for i, v in enumerate(items) if isinstance(v, str) and not encodable_utf8(v))


def exact_values(values: np.ndarray, wanted: type) -> np.ndarray:
    """The 1-d object array `values` with instances of subclasses of `wanted` (numpy's `str_`,
    `bytes_`) made plain `wanted`: numcodecs' vlen codecs take the exact types only."""
    items = values.tolist()
    if all(t is wanted for t in set(map(type, items))):
        return values
    out = np.empty(len(items), dtype=object)
    out[:] = [wanted(v) if type(v) is not wanted and isinstance(v, wanted) else v for v in items]
    return out


def _type_of(spec: ChunkSpec) -> str:
    if spec.dtype == np.dtype(object):
        return f"object values with fill value {spec.fill_value!r}"
    return f"data type {spec.dtype}"


@register_codec
class VLenUTF8Codec(_VLenCodec):
    name = "vlen-utf8"
    value_type = str
    data_type = "string"
    _impl = VLenUTF8()


@register_codec
class VLenBytesCodec(_VLenCodec):
    name = "vlen-bytes"
    value_type = bytes
    data_type = "variable_length_bytes"
    _impl = VLenBytes()

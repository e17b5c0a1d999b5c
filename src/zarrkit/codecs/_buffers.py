"""Small helpers for the `Buffer` union (bytes, bytearray, memoryview)."""

from __future__ import annotations

import ctypes

from .base import Buffer


def byte_view(data: Buffer) -> memoryview:
    """A flat, byte-addressed memoryview of `data` (no copy).

    A memoryview over e.g. a uint16 array counts and slices in elements, not bytes; casting
    makes `len` and slicing byte-based for every codec.
    """
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    return view


def nbytes(data: Buffer) -> int:
    return data.nbytes if isinstance(data, memoryview) else len(data)


def address(data: Buffer) -> int | bytes | None:
    """What ctypes can pass as a pointer to `data`'s bytes (no copy): a bytes object itself, or
    the address of a writable buffer. None for read-only views (a codec library's Python API
    decodes those)."""
    if type(data) is bytes:
        return data
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(data))
    except (TypeError, ValueError):  # read-only, or empty
        return None

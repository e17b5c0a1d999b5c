"""Small helpers for the `Buffer` union (bytes, bytearray, memoryview)."""

from __future__ import annotations

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

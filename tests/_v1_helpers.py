"""Helpers shared by the Zarr v1 tests: chunks compressed as zarr 1.x compressed them."""

from __future__ import annotations

import bz2
import lzma
import zlib

import numcodecs


def compress_v1(name, opts, raw):
    """`raw` compressed by the v1 `compression` `name` with its `compression_opts`."""
    if name == "zlib":
        return zlib.compress(raw, opts)
    if name == "bz2":
        return bz2.compress(raw, opts)
    if name == "lzma":
        return lzma.compress(raw, **(opts or {}))
    if name == "blosc":
        return numcodecs.Blosc(**opts).encode(raw)
    return raw

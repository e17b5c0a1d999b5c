"""Selection -> per-chunk plan -> concurrent chunk I/O. No metadata format knowledge here."""

from .chunk_io import ChunkedArray, read, write
from .executor import concurrency, set_concurrency

__all__ = ["ChunkedArray", "read", "write", "concurrency", "set_concurrency"]

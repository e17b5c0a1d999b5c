"""Small helpers shared by the store implementations (not part of the public interface)."""

from __future__ import annotations

import os

from ..errors import SpecError, StoreError
from .base import Buffer, ByteRange

MAX_IO = 1 << 30  # one read()/write() is capped by the OS (~2 GiB on Linux); stay below
#: Characters left unescaped in the paths of URLs zarrkit writes: RFC 3986's pchar less "|"
#: (the separator of a URL pipeline such as "file:///x.zip|zip:a").
URL_SAFE = "/:@!$&'()*+,;="


def local_path(path: str | os.PathLike[str], what: str) -> str:
    """`path` made absolute, refusing what no file system call accepts (NUL, lone surrogates)
    with an error that names it, rather than a ValueError from deep inside `os`."""
    text = os.fspath(path)
    try:
        valid = b"\x00" not in os.fsencode(text)
    except UnicodeEncodeError:
        valid = False
    if not valid:
        raise SpecError(f"invalid {what} path {text!r}: NUL bytes and lone surrogates are not "
                        "allowed")
    return os.path.abspath(text)


def resolve_range(byte_range: ByteRange | None, size: int) -> tuple[int, int]:
    """The `[start, stop)` byte interval `byte_range` selects in a value of `size` bytes.

    Both ends are clamped to the value, so a range past the end selects nothing.
    """
    if byte_range is None:
        return 0, size
    offset, length = byte_range.offset, byte_range.length
    if offset < 0:
        return max(size + offset, 0), size
    start = min(offset, size)
    if length is None:
        return start, size
    return start, min(offset + length, size)


def byte_view(value: Buffer) -> memoryview:
    """`value` as a flat, contiguous view of unsigned bytes (len() is then the byte count)."""
    view = value if isinstance(value, memoryview) else memoryview(value)
    if view.format == "B" and view.ndim == 1 and view.c_contiguous:
        return view
    if not view.c_contiguous:
        return memoryview(view.tobytes())
    return view.cast("B")


def as_bytes(value: Buffer) -> bytes:
    """An immutable copy of `value` (no copy when it is already `bytes`)."""
    if type(value) is bytes:
        return value
    return byte_view(value).tobytes()


def pread_into(fd: int, view: memoryview, offset: int) -> int:
    """Fill `view` from `offset`; the number of bytes read (fewer only at end of file)."""
    got = 0
    while got < len(view):
        part = os.preadv(fd, [view[got:got + MAX_IO]], offset + got)
        if not part:
            break
        got += part
    return got


def pread_exact(fd: int, nbytes: int, offset: int) -> bytes:
    """Read `nbytes` at `offset` (fewer only at end of file)."""
    if nbytes <= 0:
        return b""
    data = os.pread(fd, min(nbytes, MAX_IO), offset)
    if len(data) == nbytes or not data:
        return data
    parts = [data]
    got = len(data)
    while got < nbytes:
        part = os.pread(fd, min(nbytes - got, MAX_IO), offset + got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def coalesce(spans: list[tuple[int, int, int]], gap: int) -> list[list[tuple[int, int, int]]]:
    """Group (start, stop, index) spans, sorted by start, whose gaps are below `gap`."""
    groups: list[list[tuple[int, int, int]]] = []
    group_stop = -1
    for span in spans:
        if groups and span[0] <= group_stop + gap:
            groups[-1].append(span)
            group_stop = max(group_stop, span[1])
        else:
            groups.append([span])
            group_stop = span[1]
    return groups


def wrap_os_error(exc: OSError, action: str, key: str, root: str) -> StoreError:
    """`exc`, met while doing `action` to `key` of the store at `root`, as a StoreError naming
    them."""
    message = f"cannot {action} {key!r} in file store {root!r}: {exc.strerror or exc}"
    return StoreError(exc.errno, message) if exc.errno is not None else StoreError(message)

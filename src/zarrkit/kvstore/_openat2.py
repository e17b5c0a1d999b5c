"""`openat2(2)` with RESOLVE_NO_SYMLINKS: an open that the kernel refuses if any component of the
path is a symbolic link.

The file store opens `<real root>/<key>` this way: keys cannot contain "..", so when no component
is a link the file is certainly inside the root, with no extra syscall and no check-then-use race.
Only when the open fails with ELOOP (some link is involved) does the store fall back to its
slower resolved-path check. Linux >= 5.6 and known architectures only; elsewhere, or when a
seccomp filter forbids the syscall, `AVAILABLE` is False.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys
from collections.abc import Callable

_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437, "arm64": 437}.get(platform.machine())
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_AT_FDCWD = -100


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64)]


def _load() -> Callable[..., int] | None:
    if sys.platform != "linux" or _SYS_OPENAT2 is None:
        return None
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long
    return syscall


_syscall = _load()
_hows: dict[int, tuple[_OpenHow, object, ctypes.c_size_t]] = {}
# The constant arguments, built once: making ctypes objects per call costs more than the open.
_NR = ctypes.c_long(_SYS_OPENAT2 or 0)
_CWD = ctypes.c_int(_AT_FDCWD)


def open_no_symlinks(path: bytes, flags: int) -> int:
    """A new descriptor for the absolute `path`, or `-errno` (ELOOP: a component is a link)."""
    how = _hows.get(flags)
    if how is None:
        struct = _OpenHow(flags, 0, _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
        how = _hows[flags] = (struct, ctypes.byref(struct), ctypes.c_size_t(ctypes.sizeof(struct)))
    assert _syscall is not None
    # Every argument has an explicit C type: syscall() is variadic, so nothing is converted.
    fd = _syscall(_NR, _CWD, path, how[1], how[2])
    return fd if fd >= 0 else -ctypes.get_errno()


def _probe() -> bool:
    if _syscall is None:
        return False
    fd = open_no_symlinks(b"/", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    if fd >= 0:
        os.close(fd)
        return True
    return fd not in (-errno.ENOSYS, -errno.EPERM, -errno.EINVAL)


AVAILABLE = _probe()

"""`openat2(2)` with RESOLVE_BENEATH: open a path below a directory, escapes refused by the kernel.

Linux >= 5.6 only, and only on architectures whose syscall number we know; elsewhere (or when a
seccomp filter forbids it) `AVAILABLE` is False and callers use their portable check. This makes
the file store's "never leave the root" rule cost one syscall instead of an extra readlink.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys
from collections.abc import Callable

_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437, "arm64": 437}.get(platform.machine())
_RESOLVE_NO_MAGICLINKS = 0x02  # no /proc/<pid>/fd style links
_RESOLVE_BENEATH = 0x08  # every component must stay below dir_fd (absolute links fail)
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


def open_beneath(dir_fd: int, path: bytes, flags: int) -> int:
    """A new descriptor for `path` below `dir_fd`, or `-errno` (EXDEV: it would escape)."""
    how = _hows.get(flags)
    if how is None:
        struct = _OpenHow(flags, 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
        how = _hows[flags] = (struct, ctypes.byref(struct), ctypes.c_size_t(ctypes.sizeof(struct)))
    assert _syscall is not None
    # Every argument has an explicit C type: syscall() is variadic, so no conversions happen.
    fd = _syscall(ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(dir_fd), path, how[1], how[2])
    return fd if fd >= 0 else -ctypes.get_errno()


def _probe() -> bool:
    if _syscall is None:
        return False
    fd = open_beneath(_AT_FDCWD, b".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    if fd >= 0:
        os.close(fd)
        return True
    return False if fd in (-errno.ENOSYS, -errno.EPERM, -errno.EINVAL) else True


AVAILABLE = _probe()

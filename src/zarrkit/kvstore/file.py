"""A key/value store over a local directory (the Zarr v3 "file system store").

Key "a/b/c" is the file `<root>/a/b/c`. Design points:

* Writes are atomic: the value goes to a temp file `.<name>.<random>.partial` in the target's
  directory, which then replaces the target with `os.replace`, so readers see the old or the new
  value, never a mix. The new file gets the replaced file's permission bits (a user's chmod
  survives, as an in-place rewrite keeps it), a new key 0666 less the umask (as `open` gives).
  fsync is off by default (it costs milliseconds per chunk); `fsync=True`
  syncs the file and its directory before returning. A writer killed mid-write leaves its temp
  file (hidden from listings) for `remove_temp_files` to delete.
* Every operation validates its key, and refuses (InvalidKeyError) a key that resolves through a
  symbolic link to a place outside the root. Three checks, fastest first: openat2 with
  RESOLVE_NO_SYMLINKS on `<real root>/<key>` (Linux >= 5.6; keys have no "..", so a link-free
  path is inside the root by construction); when a link is involved, or openat2 is missing,
  open normally and read `/proc/self/fd/<fd>` to see where the opened file really is (no
  check-then-use race); without /proc, `os.path.realpath` before opening. Creating directories
  and listing use `realpath` (rare or already expensive operations). `exists` and `size` open
  with O_PATH where there is one: the same checks, without needing permission to read the value.
  Links that stay inside the root are followed (reads, writes, listings), except by
  `delete_prefix`, which removes a link to a directory itself, never the files it leads to.
* `lock(key)` / `lock_shared(key)` combine a per-key thread lock with a lock between processes,
  kept in the key's `<node>`: the nearest directory at or above the key's, inside the root, that
  holds Zarr metadata (the root when none does), so processes that opened the store at
  different roots (`t.zarr` and `t.zarr/a`) take the same lock.
  - An array's keys (chunks, metadata): on Linux an open-file-description lock on one byte (at
    a hash of the key's path below the array; consecutive bytes for consecutive chunk numbers,
    so `replace_many` locks a run of chunks at once) of `<array>/.zarrkit-locks/keys.lock`, so
    locking every chunk written creates no files; elsewhere `fcntl.flock` on
    `<array>/.zarrkit-locks/<hash>.lock`. These files are not deleted while the array exists
    (deleting them would let two processes lock different files for the same key).
  - Any other node's keys (a group's metadata, nodes being made): `flock` on a file
    `<node>/.zarrkit-lock.<hash>` that exists only while held. A group lists its members by
    its directory's entries, and other libraries warn about (or trip over) any entry that is
    not one, so a group keeps no lock file: the last holder deletes it while still holding it,
    and a taker that finds its file gone from the name after waiting starts over.
  - Other keys below a group (no array's yet): the thread lock only.
  Which applies is remembered per key directory; another process may make or delete nodes, so
  a group's lock looks the key's node up afresh once taken, and an array's lock directory is
  made only after the same look-up, starting over on the current node if it changed.
  `process_locks=False` (a spec's `file_io_locking` mode "none" or "non_atomic") keeps the
  thread locks only: no lock file is looked for, opened or made.
* The hot paths use plain string joins and raw descriptors: a small chunk read is one openat2,
  fstat, pread and close.

POSIX only (uses `fcntl` and `dir_fd`).
"""

from __future__ import annotations

import errno
import fcntl
import functools
import hashlib
import itertools
import json
import os
import re
import stat
import struct
import sys
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from typing import Any, TypeVar

import numpy as np

from ..errors import InvalidKeyError, SpecError, StoreError
from ..scratch import SCRATCH_LIMIT, empty, scratch
from . import _file_batch, _openat2
from ._util import (
    MAX_IO,
    byte_view,
    coalesce,
    local_path,
    pread_exact,
    pread_into,
    resolve_range,
)
from ._util import wrap_os_error as _wrap
from .base import (
    Buffer,
    ByteRange,
    GenerationMismatch,
    KvStore,
    check_value,
    validate_key,
    validate_prefix,
)

LOCK_DIR = ".zarrkit-locks"
#: Names of the lock files of groups' keys, which exist while held (`.zarrkit-lock.<hash>`).
LOCK_FILE_PREFIX = ".zarrkit-lock."
#: Files whose presence makes a directory a Zarr node (v3; v2 array, group): locks live in the
#: nearest node's directory, the same for every process whatever root it opened the store at.
_NODE_FILES = ("zarr.json", ".zarray", ".zgroup")
#: Documents of a node: outside arrays, their locks are lock files of their own.
_DOCUMENTS = frozenset(_NODE_FILES + (".zattrs", ".zmetadata"))
#: How a key is locked between processes (see the module's docstring): a byte of its node's
#: range lock file, a lock file of its own, or not at all (the thread lock alone).
RANGE, OWN_FILE, THREADS = "range", "own file", "threads"
#: Nodes whose lock file description a store keeps open; locks in further nodes open their own.
_MAX_LOCK_FILES = 64
#: Key directories whose node a store remembers (then it forgets them all and looks again).
_MAX_HOMES = 4096
#: Ranges of one file whose gap is smaller than this are fetched with a single read.
COALESCE_GAP = 4096
#: Values from this size on are read into a thread's reused buffer by `get_transient` (malloc's
#: initial threshold for giving an allocation pages of its own).
_TRANSIENT_MIN = 128 << 10

_PROC_FD = "/proc/self/fd/" if os.path.isdir("/proc/self/fd") else None
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# O_NONBLOCK: opening a FIFO planted in the store must not hang the reader.
_READ_FLAGS = os.O_RDONLY | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
# O_PATH (Linux): opens without read permission, for stat-only uses (exists, size) that must
# still pass the escape checks on an open descriptor.
_O_PATH = getattr(os, "O_PATH", 0)
_STAT_FLAGS = _O_PATH | _CLOEXEC if _O_PATH else _READ_FLAGS
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | _CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
# Byte-range locks owned by an open file description (Linux >= 3.15): unlike classic POSIX
# locks they exclude threads of one process too, and closing another descriptor of the file
# does not drop them. `struct flock` is laid out as below on 64-bit Linux.
_OFD_SETLKW = getattr(fcntl, "F_OFD_SETLKW", None) if struct.calcsize("P") == 8 else None
_FLOCK = struct.Struct("hhqqi4x")
_RANGE_LOCK_FILE = "keys.lock"
_TEMP_SUFFIX = ".partial"
_TEMP_RE = re.compile(r"\..*\.[0-9a-f]{16}\.partial\Z", re.DOTALL)
# A directory removed by a concurrent delete between our mkdir and our create is retried.
_WRITE_ATTEMPTS = 16


def _is_lock_name(name: str) -> bool:
    return name == LOCK_DIR or name.startswith(LOCK_FILE_PREFIX)


def _place(key: str, home: str, kind: bool | None) -> tuple[str, str]:
    """How `key` is locked in its node `home` of kind `kind` (see `FileStore._node_of`)."""
    if kind is True:
        return home, RANGE
    if key.rpartition("/")[2] in _DOCUMENTS:
        return home, OWN_FILE
    return home, THREADS if kind is False else RANGE


class _StalePlace(Exception):
    """A key's remembered lock place is no longer its node's (another process made or deleted
    a node): the lock starts over on the current one."""


def _is_temp_name(name: str) -> bool:
    return name.endswith(_TEMP_SUFFIX) and _TEMP_RE.match(name) is not None


def _temp_name(name: str) -> str:
    # At most 64 bytes of the name, so the temp name stays under NAME_MAX (255 bytes) for any
    # segment that fits itself (64 characters can be 256 bytes of UTF-8).
    head = name[:64]
    if not head.isascii():
        head = head.encode()[:64].decode(errors="ignore")
    return f".{head}.{_TEMP_TAG[0]}{next(_TEMP_COUNT) & 0xFFFFFFFF:08x}{_TEMP_SUFFIX}"


def _new_temp_tag() -> None:
    """32 random bits per process (drawn again in a forked child) and a counter make temp names
    unique without a getrandom call per write."""
    _TEMP_TAG[0] = os.urandom(4).hex()


_TEMP_TAG = [""]
_TEMP_COUNT = itertools.count()
_new_temp_tag()


def _write_all(fd: int, value: Buffer) -> None:
    view = value if type(value) is bytes else byte_view(value)
    size = len(view)
    done = os.write(fd, view)
    if done == size:
        return  # the common case: one write() took everything
    view = memoryview(view)  # slicing a view does not copy
    while done < size:
        done += os.write(fd, view[done:done + MAX_IO])


def _kept_mode(dir_fd: int, name: str) -> int | None:
    """The permission bits of the regular file `name` a write replaces (None if there is none),
    for the new file to keep (see the module docstring; `_fileio.c` does the same)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) & 0o777 if stat.S_ISREG(st.st_mode) else None


def _unlink_quietly(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def _generation(fd: int, st: os.stat_result) -> Hashable:
    """The identity of the value open as `fd`. Writes replace the file, so a new value is a new
    inode, but ext4 hands a freed inode number out again at once, and before Linux 6.13 its
    times tick in milliseconds: the inode's generation number (which changes on reuse) tells
    such files apart. Times and size catch writers that rewrite in place."""
    return (st.st_dev, st.st_ino, _inode_generation(fd), st.st_size, st.st_mtime_ns,
            st.st_ctime_ns)


#: FS_IOC_GETVERSION: the inode's generation number (ext2-4, btrfs, tmpfs, ...).
_GETVERSION = 0x80087601 if sys.platform.startswith("linux") else None


def _inode_generation(fd: int) -> int | None:
    if _GETVERSION is None:
        return None
    try:  # the kernel writes an int into the (long-sized) buffer
        return int.from_bytes(fcntl.ioctl(fd, _GETVERSION, bytes(8))[:4], sys.byteorder)
    except OSError:  # a file system without inode generations
        return None


_T = TypeVar("_T")


def _rebuild(root: str, read_only: bool, fsync: bool, process_locks: bool = True) -> FileStore:
    return FileStore(root, read_only, fsync=fsync, process_locks=process_locks)


class FileStore(KvStore):
    """Keys are files under the directory `root` (created on first write, never when read-only)."""

    driver = "file"

    @property
    def batches_without_gil(self) -> bool:  # type: ignore[override]
        return _file_batch.AVAILABLE

    def __init__(
        self, root: str | os.PathLike[str], read_only: bool = False, *, fsync: bool = False,
        process_locks: bool = True,
    ) -> None:
        super().__init__(read_only=read_only)
        root = local_path(root, "file store")
        self.root = root
        self.fsync = fsync
        # False (TensorStore's file_io_locking "none"): locks exclude this process's threads
        # only, for a user who knows no other process writes (or whose file system has none).
        self.process_locks = process_locks
        self._base = root if root.endswith("/") else root + "/"
        self._real_root = os.path.realpath(root)
        self._real_base = self._real_root.rstrip("/") + "/"
        # key directory -> (its node: "" or "<dir>/", True: an array, False: another, None:
        # no node up to the root)
        self._homes: dict[str, tuple[str, bool | None]] = {}
        self._kinds: dict[str, tuple[Any, bool]] = {}  # node -> (zarr.json's stamp, is array)
        self._lock_files: dict[str, _ProcessLockFile] = {}  # node -> its lock file

    # -- key → path, and the escape checks ---------------------------------------------------
    def _path(self, key: str) -> str:
        validate_key(key)
        if LOCK_FILE_PREFIX[:-1] in key and any(map(_is_lock_name, key.split("/"))):
            raise InvalidKeyError(f"invalid store key {key!r}: {LOCK_DIR!r} and names starting "
                                  f"with {LOCK_FILE_PREFIX!r} are the store's lock files")
        if os.name == "nt" and ":" in key:  # no file name there holds one ("C:x": a drive)
            raise InvalidKeyError(f"invalid store key {key!r}: ':' is not allowed in Windows "
                                  "file names")
        if _TEMP_SUFFIX in key and any(map(_is_temp_name, key.split("/"))):
            # Listings would hide it and remove_temp_files would delete it as a dead write's.
            raise InvalidKeyError(f"invalid store key {key!r}: names of the form "
                                  "'.<name>.<16 hex digits>.partial' are the store's temp files")
        return self._base + key

    def _inside(self, real: str, allow_root: bool = False) -> bool:
        return real.startswith(self._real_base) or (allow_root and real == self._real_root)

    def _escape_error(self, key: str) -> InvalidKeyError:
        return InvalidKeyError(
            f"store key {key!r} resolves outside the file store root {self.root!r} "
            "(through a symbolic link)")

    def _check_fd(self, fd: int, key: str, allow_root: bool = False) -> None:
        """Refuse an open file/directory that is not inside the root (Linux: no race)."""
        if _PROC_FD is not None and not self._inside(os.readlink(_PROC_FD + str(fd)), allow_root):
            raise self._escape_error(key)

    def _check_path(self, path: str, key: str, allow_root: bool = False) -> None:
        """The portable (slower, racy) check, for when no fd is open yet."""
        if not self._inside(os.path.realpath(path), allow_root):
            raise self._escape_error(key)

    def _open_checked(self, path: str, flags: int, key: str, allow_root: bool = False) -> int | None:
        """Open `path` after/before the escape check; None if it does not exist."""
        if _PROC_FD is None:
            self._check_path(path, key, allow_root)
        try:
            fd = os.open(path, flags)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a socket: not a value, as a FIFO is not
                return None
            raise
        try:
            self._check_fd(fd, key, allow_root)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_in_root(
        self, rel: str, path: str, flags: int, key: str, allow_root: bool = False
    ) -> int | None:
        """Open `rel` (`path` relative to the root); None if missing; refuse escapes.

        Fast path: openat2 refusing every symlink, on the resolved root path, settles the common
        case in one syscall. Paths that do involve a link take the portable check.
        """
        if _openat2.AVAILABLE:
            fd = _openat2.open_no_symlinks(os.fsencode(self._real_dir(rel)), flags)
            if fd >= 0:
                return fd
            if fd in (-errno.ENOENT, -errno.ENOTDIR, -errno.ENXIO):  # ENXIO: a socket
                return None
        return self._open_checked(path, flags, key, allow_root)

    def _open_value(self, key: str, flags: int = _READ_FLAGS) -> tuple[int, os.stat_result] | None:
        """(fd, stat) of the regular file holding `key`, or None if there is no such value."""
        fd = self._open_in_root(key, self._path(key), flags, key)
        if fd is None:
            return None
        try:
            st = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        if not stat.S_ISREG(st.st_mode):  # a directory (or device, FIFO) is not a value
            os.close(fd)
            return None
        return fd, st

    # -- reading -----------------------------------------------------------------------------
    def get(self, key: str, byte_range: ByteRange | None = None) -> Buffer | None:
        return self._read(key, byte_range, False)

    def get_transient(self, key: str) -> Buffer | None:
        """`get`, into this thread's reused buffer when the value is large: allocations that big
        are mapped anew and cost a page fault per 4 KiB (~7000 per 128 MiB read of 512 KiB blosc
        chunks); smaller ones come from reused heap memory, and `os.pread` is cheaper there."""
        return self._read(key, None, True)

    def _read(self, key: str, byte_range: ByteRange | None, transient: bool) -> Buffer | None:
        return self._read_value(key, byte_range, transient, False)[0]

    def get_with_generation(self, key: str, byte_range: ByteRange | None = None
                            ) -> tuple[Buffer | None, Hashable | None]:
        return self._read_value(key, byte_range, False, True)

    def _read_value(self, key: str, byte_range: ByteRange | None, transient: bool,
                    with_generation: bool) -> tuple[Buffer | None, Hashable | None]:
        def read(fd: int, st: os.stat_result) -> tuple[Buffer | None, Hashable | None]:
            generation = _generation(fd, st) if with_generation else None
            start, stop = resolve_range(byte_range, st.st_size)
            if transient and _TRANSIENT_MIN <= stop - start <= SCRATCH_LIMIT:
                buffer = scratch(stop - start, "read")
                return buffer[:pread_into(fd, buffer, start)], generation
            return pread_exact(fd, stop - start, start), generation

        return self._reading(key, (None, None), read)

    def _reading(self, key: str, missing: _T, read: Callable[[int, os.stat_result], _T]) -> _T:
        """`read(fd, stat)` of the open file holding `key` (closed after), or `missing` when
        there is no such value; OS errors name the key."""
        try:
            opened = self._open_value(key)
            if opened is None:
                return missing
            try:
                return read(*opened)
            finally:
                os.close(opened[0])
        except StoreError:
            raise
        except OSError as exc:
            raise _wrap(exc, "read", key, self.root) from exc

    def get_many(
        self, requests: Sequence[tuple[str, ByteRange | None]]
    ) -> list[Buffer | None]:
        """Each key's file is opened once; its nearby ranges are fetched with one read, into
        writable memory (so codecs can hand it to C by address)."""
        return self._get_many(requests, False)

    def get_many_transient(
        self, requests: Sequence[tuple[str, ByteRange | None]]
    ) -> list[Buffer | None]:
        """`get_many` reading into this thread's reused buffer (when one key is read)."""
        return self._get_many(requests, True)

    def _get_many(
        self, requests: Sequence[tuple[str, ByteRange | None]], transient: bool
    ) -> list[Buffer | None]:
        results: list[Buffer | None] = [None] * len(requests)
        by_key: dict[str, list[int]] = {}
        for index, (key, _) in enumerate(requests):
            by_key.setdefault(key, []).append(index)
        if _file_batch.AVAILABLE and len(by_key) > 1:
            self._get_whole_values(requests, by_key, results, transient)
        for key, indices in by_key.items():
            if len(indices) == 1:
                results[indices[0]] = self.get(key, requests[indices[0]][1])
                continue
            try:
                self._get_ranges(key, [(i, requests[i][1]) for i in indices], results,
                                 transient and len(by_key) == 1)
            except StoreError:
                raise
            except OSError as exc:
                raise _wrap(exc, "read", key, self.root) from exc
        return results

    def _get_whole_values(self, requests: Sequence[tuple[str, ByteRange | None]],
                          by_key: dict[str, list[int]], results: list[Buffer | None],
                          transient: bool) -> None:
        """Keys asked for once and whole: read in batches without the GIL (`_file_batch`), and
        taken out of `by_key`."""
        keys = [key for key, indices in by_key.items()
                if len(indices) == 1 and requests[indices[0]][1] is None]
        for key in keys:
            self._path(key)  # validated, and not a name the store reserves
        for key, value in zip(keys, _file_batch.read_values(self, keys, _READ_FLAGS, transient),
                              strict=True):
            results[by_key.pop(key)[0]] = value

    def get_ranges_if(self, key: str, ranges: Sequence[ByteRange], generation: Hashable | None,
                      transient: bool = False) -> list[Buffer | None]:
        """The ranges from the file that held the value of `generation` (checked on the open
        descriptor they are read from, so a replacement cannot slip in between)."""
        if generation is None:
            return super().get_ranges_if(key, ranges, generation, transient)
        results: list[Buffer | None] = [None] * len(ranges)
        try:
            self._get_ranges(key, list(enumerate(ranges)), results, transient, generation)
        except StoreError:
            raise
        except OSError as exc:
            raise _wrap(exc, "read", key, self.root) from exc
        return results

    def _get_ranges(self, key: str, items: list[tuple[int, ByteRange | None]],
                    results: list[Buffer | None], transient: bool,
                    generation: Hashable | None = None) -> None:
        opened = self._open_value(validate_key(key))
        if generation is not None and (opened is None or _generation(*opened) != generation):
            if opened is not None:
                os.close(opened[0])
            raise GenerationMismatch(f"{key!r} in file store {self.root!r} holds a new value")
        if opened is None:
            return
        try:
            _read_ranges_at(opened[0], opened[1].st_size, items, results, transient)
        finally:
            os.close(opened[0])

    def get_then_ranges(self, key: str, byte_range: ByteRange | None,
                        then: Callable[[Buffer], Sequence[ByteRange]]
                        ) -> tuple[Buffer | None, Hashable | None, list[Buffer | None]]:
        """Both reads through one open descriptor: the same file, with no generation to check
        (a cold shard read opens its file once, not twice)."""
        def read(fd: int, st: os.stat_result
                 ) -> tuple[Buffer | None, Hashable | None, list[Buffer | None]]:
            generation = _generation(fd, st)
            start, stop = resolve_range(byte_range, st.st_size)
            first = pread_exact(fd, stop - start, start)
            ranges = then(first)
            results: list[Buffer | None] = [None] * len(ranges)
            _read_ranges_at(fd, st.st_size, list(enumerate(ranges)), results, False)
            return first, generation, results

        return self._reading(key, (None, None, []), read)

    def exists(self, key: str) -> bool:
        return self.size(key) is not None

    def size(self, key: str) -> int | None:
        """Answered without read permission: a value the user cannot read still exists."""
        try:
            opened = self._open_value(key, _STAT_FLAGS)
        except StoreError:
            raise
        except OSError as exc:
            raise _wrap(exc, "stat", key, self.root) from exc
        if opened is None:
            return None
        os.close(opened[0])
        return opened[1].st_size

    # -- listing -----------------------------------------------------------------------------
    def _prefix_dir(self, prefix: str) -> str:
        """The directory holding `prefix`'s keys, checked to be inside the root."""
        validate_prefix(prefix)
        if not prefix:
            return self.root
        path = self._path(prefix[:-1])
        self._check_path(path, prefix, allow_root=True)
        return path

    def list_prefix(self, prefix: str) -> Iterator[str]:
        top = self._prefix_dir(prefix)
        return self._walk(top, prefix, os.path.realpath(top), ())

    def list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        top = self._prefix_dir(prefix)
        real_top = os.path.realpath(top)
        # A link back to a directory above is no child: walking the hierarchy down by listings
        # (Group.members(max_depth=None)) would never end, as `list_prefix` would not.
        seen = tuple(real_top[:i] for i in range(len(self._real_root), len(real_top))
                     if real_top[i] == "/") + (real_top,)
        keys: list[str] = []
        dirs: list[str] = []
        for name, kind, real in self._children(top, real_top, seen):
            if kind == "file":
                keys.append(name)
            elif next(self._walk(top + "/" + name, "", real, seen), None) is not None:
                dirs.append(name)  # only directories that hold at least one key
        return sorted(keys), sorted(dirs)

    def _walk(
        self, path: str, key_prefix: str, real: str, seen: tuple[str, ...],
        links_as_keys: bool = False
    ) -> Iterator[str]:
        """Keys below directory `path`; `real` is its resolved path, `seen` those of its parents.
        With `links_as_keys`, a link to a directory is yielded itself, not walked."""
        seen = (*seen, real)
        for name, kind, child_real in self._children(path, real, seen):
            child = path + "/" + name
            if kind == "file" or (links_as_keys and os.path.islink(child)):
                yield key_prefix + name
            else:
                yield from self._walk(child, key_prefix + name + "/", child_real, seen,
                                      links_as_keys)

    def _children(
        self, path: str, real: str, seen: tuple[str, ...]
    ) -> list[tuple[str, str, str]]:
        """(name, "file"|"dir", resolved path) of the entries of `path` that hold keys."""
        try:
            with os.scandir(path) as it:
                entries = list(it)  # close the directory before recursing (bounded fd use)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:  # e.g. a directory without read permission
            prefix = path[len(self._base):] + "/" if path.startswith(self._base) else "<root>"
            raise _wrap(exc, "list", prefix, self.root) from exc
        children = []
        for entry in entries:
            name = entry.name
            if name[0] == "." and (_is_temp_name(name) or _is_lock_name(name)):
                continue
            if entry.is_symlink():
                kind, child_real = self._symlink_kind(entry.path, seen)
            elif entry.is_dir(follow_symlinks=False):
                kind, child_real = "dir", real + "/" + name
            else:
                kind = "file" if entry.is_file(follow_symlinks=False) else ""
                child_real = ""
            if kind:
                children.append((name, kind, child_real))
        return children

    def _symlink_kind(self, path: str, seen: tuple[str, ...]) -> tuple[str, str]:
        """Follow a link only if it stays inside the root and does not loop back to a parent."""
        real = os.path.realpath(path)
        if not self._inside(real, allow_root=True) or real in seen or real == self._real_root:
            return "", real
        if os.path.isdir(real):
            return "dir", real
        return ("file" if os.path.isfile(real) else ""), real

    # -- writing -----------------------------------------------------------------------------
    def _open_parent(self, key: str) -> tuple[int | None, str, str]:
        """(descriptor or None if missing, path, name) of the directory that holds `key`."""
        parent, _, name = self._path(key).rpartition("/")
        rel = key.rpartition("/")[0]
        return self._open_in_root(rel, parent, _DIR_FLAGS, key, allow_root=True), parent, name

    def replace_many(self, keys: Sequence[str], values: Iterable[Buffer | None]) -> None:
        """`replace` of each key, locking each run of consecutive chunk keys with one call
        (`_lock_runs`), and holding the directory last written in open while /proc still
        resolves it to the key's directory (`_HeldDir.take`: a readlink instead of an openat2
        of the whole path, ~6 against ~7.5 us here). Otherwise, or when its file creation fails
        (removed meanwhile), the directory is opened again by its path with the escape checks.
        Small values of a run are written in batches without the GIL (`_file_batch`)."""
        for key in keys:
            self._check_writable(key)
            self._path(key)
        # The items of a list or tuple exist all at once: none is a transient buffer that the
        # caller reuses for the next, as a generator's may be (batches keep them uncopied).
        stable = isinstance(values, list | tuple)
        values = iter(values)
        held = _HeldDir()
        batch = _file_batch.BatchWriter(self, held, _temp_name) if _file_batch.AVAILABLE else None
        try:
            for run in _lock_runs(keys, self._lock_place) if self.lock_whole_writes else [keys]:
                with _KeyLock(self, run) if self.lock_whole_writes else nullcontext():
                    try:
                        for key in run:
                            self._replace_held(key, next(values, held), held, batch, stable)
                    finally:  # while the run's locks are held; after a bad value too, so that
                        if batch is not None:  # the values before it are stored, as unbatched
                            batch.flush()
            if next(values, held) is not held:
                raise ValueError("replace_many: more values than keys")
        finally:
            held.close()

    def _replace_held(self, key: str, value: Any, held: _HeldDir,
                      batch: _file_batch.BatchWriter | None, stable: bool) -> None:
        if value is held:  # `values` ran out
            raise ValueError("replace_many: fewer values than keys")
        if value is not None and type(value) is not bytes:
            check_value(key, value)
        if batch is not None:
            if value is not None and key.rpartition("/")[2] not in _NODE_FILES \
                    and batch.add(key, value, stable):
                return
            batch.flush()  # in order: the key may be queued
        if value is None:
            self._delete(key)
        else:
            self._set(key, value, held)

    def _write_dir(self, key: str, rel: str, held: _HeldDir | None) -> int | None:
        """A descriptor of the directory `rel` that holds `key` (the held one while it still is
        that directory), checked to be inside the root; None if it is missing."""
        dir_fd = None if held is None else held.take(rel, self._real_dir(rel))
        return self._open_parent(key)[0] if dir_fd is None else dir_fd

    def _real_dir(self, rel: str) -> str:
        """The resolved path of the key directory `rel` ("" for the root)."""
        return self._real_base + rel if rel else self._real_root

    def _set(self, key: str, value: Buffer, held: _HeldDir | None = None) -> None:
        rel, _, name = key.rpartition("/")
        try:
            for _ in range(_WRITE_ATTEMPTS):
                dir_fd = self._write_dir(key, rel, held)
                if dir_fd is None:
                    self._make_dirs(self._path(key).rpartition("/")[0], key)
                    continue
                written = False
                try:
                    written = self._write_in(dir_fd, name, value)
                finally:
                    if written and held is not None:
                        held.keep(rel, dir_fd)
                    else:
                        os.close(dir_fd)
                if written:
                    if name in _NODE_FILES:
                        # A node made: the lock homes below it change. A new memo, once the
                        # file is there: a lookup that ran before it saw no node, and must
                        # leave its answer in the old memo, not this one (clearing before the
                        # write let such an answer stay for good).
                        self._homes = {}
                    return
        except StoreError:
            raise
        except OSError as exc:
            raise _wrap(exc, "write", key, self.root) from exc
        raise StoreError(f"cannot write {key!r} in file store {self.root!r}: "
                         "its directory keeps being removed concurrently")

    def _make_dirs(self, path: str, key: str) -> None:
        self._check_path(path, key, allow_root=True)  # before creating anything
        try:
            os.makedirs(path, exist_ok=True)
        except FileNotFoundError:
            pass  # a parent was removed by a concurrent delete; the caller retries
        except FileExistsError:
            # makedirs also raises this when a concurrent delete removed the directory between
            # its mkdir (made by another writer) and its check: the caller retries then.
            if os.path.lexists(path) and not os.path.isdir(path):
                raise

    def _write_in(self, dir_fd: int, name: str, value: Buffer) -> bool:
        """Atomically replace `name` in the open directory; False if the directory vanished.
        In one call of the C batches when they are there (the GIL is handed over once, not at
        each of the five system calls); any failure is redone here, which handles it."""
        if _file_batch.AVAILABLE and _file_batch.write_one(
                dir_fd, name, _temp_name(name), value, self.fsync):
            return True
        for attempt in range(8):
            temp = _temp_name(name)
            try:
                fd = os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=dir_fd)
                break
            except FileNotFoundError:
                return False  # the directory was removed after we opened it
            except FileExistsError:
                if attempt == 7:
                    raise
                _new_temp_tag()  # a dead writer's temp file of the same name: draw another
        try:
            try:
                mode = _kept_mode(dir_fd, name)
                if mode is not None:
                    os.fchmod(fd, mode)
                _write_all(fd, value)
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            _unlink_quietly(temp, dir_fd)
            raise
        if self.fsync:
            os.fsync(dir_fd)  # makes the rename itself durable
        return True

    def _delete(self, key: str) -> None:
        try:
            dir_fd, parent, name = self._open_parent(key)
            if dir_fd is None:
                return
            try:
                if not self._unlink_in(dir_fd, name):
                    return
            finally:
                os.close(dir_fd)
        except StoreError:
            raise
        except OSError as exc:
            raise _wrap(exc, "delete", key, self.root) from exc
        if name in _NODE_FILES:
            self._homes = {}  # a node gone; a new memo once it is (see _set)
        self._prune(parent)

    @staticmethod
    def _unlink_in(dir_fd: int, name: str) -> bool:
        """Remove the file `name`; False if it is missing or a directory (not a value)."""
        try:
            os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            return False
        except OSError as exc:
            if exc.errno in (errno.EISDIR, errno.EPERM) and stat.S_ISDIR(
                    os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                return False
            raise
        return True

    def _prune(self, path: str) -> None:
        """Remove now-empty directories from `path` up to (not including) the root.

        Best effort: stops at the first directory that is not empty or already gone; a concurrent
        writer whose directory disappears simply recreates it.
        """
        while len(path) > len(self._base):
            try:
                os.rmdir(path)
            except OSError:
                return
            path = path.rpartition("/")[0]

    def delete_prefix(self, prefix: str) -> None:
        """Delete every key under `prefix`, then its empty directories and the lock directories
        of the nodes deleted (the root and its lock directory always stay)."""
        self._check_writable(prefix or "<root>")
        top = self._prefix_dir(prefix)
        # A link to a directory of keys is deleted as one key: the link goes, never the files
        # it leads to (as `rm -r` does), which may lie outside `prefix`.
        for key in list(self._walk(top, prefix, os.path.realpath(top), (), links_as_keys=True)):
            self._delete(key)
        self._homes = {}  # the nodes deleted
        # Their lock files go below: forget the descriptions this store keeps of them (a node
        # made again has a new lock file; locking the old one would exclude nobody). Locks held
        # keep theirs alive until released.
        for home in [home for home in self._lock_files if home.startswith(prefix) and home]:
            self._lock_files.pop(home, None)
        self._prune_tree(top, at_root=not prefix)
        if prefix:
            self._prune(top)

    def rename_prefix(self, old: str, new: str) -> bool:
        """Move the keys under `old` to under `new` by renaming directories: `old`'s to `new`'s
        when that is missing, or for the root (`new` "") each entry of `old`'s into it when none
        is there. False, with nothing moved, when that cannot be (then keys are copied)."""
        self._check_writable(new or "<root>")
        if not old:
            return False
        source = self._prefix_dir(old)
        if os.path.islink(source) or not os.path.isdir(source):
            return False
        if new:
            target = self._prefix_dir(new)
            moves = [(source, target)] if not os.path.lexists(target) else []
            if moves and not os.path.isdir(os.path.dirname(target)):
                self._make_dirs(os.path.dirname(target), new)
        else:
            names = [n for n in os.listdir(source) if not _is_lock_name(n)]
            moves = [(f"{source}/{n}", self._base + n) for n in names]
            if any(os.path.lexists(t) for _, t in moves):
                return False
        if not moves:
            return False
        for i, (src, dst) in enumerate(moves):
            try:
                os.rename(src, dst)
            except OSError as exc:
                if i == 0:
                    return False  # nothing moved yet: copy instead
                raise _wrap(exc, "rename", old, self.root) from exc
        self._homes = {}  # nodes moved: lock homes are found anew
        for home in [h for h in self._lock_files if h.startswith(old)]:
            self._lock_files.pop(home, None)
        if not new:  # what is left of the staging directory: its lock files
            _remove_files(f"{source}/{LOCK_DIR}")
            self._prune(source)
        return True

    def rename_key(self, old: str, new: str) -> bool:
        """A file renamed (not a link: one relative to its place would lead elsewhere)."""
        self._check_writable(new)
        source, target = self._path(old), self._path(new)
        self._check_path(os.path.dirname(source), old, allow_root=True)
        if os.path.islink(source) or not os.path.isfile(source):
            return False
        if not os.path.isdir(os.path.dirname(target)):
            self._make_dirs(os.path.dirname(target), new)
        self._check_path(os.path.dirname(target), new, allow_root=True)
        try:
            os.rename(source, target)
        except OSError:
            return False  # (e.g. another file system below a link): copied instead
        self._homes = {}  # a node's document may have moved
        self._prune(os.path.dirname(source))
        return True

    def _prune_tree(self, path: str, at_root: bool) -> None:
        """Remove the empty directories below `path`, deepest first (symlinks are not followed),
        and the lock directories of the nodes below `path` (gone: their keys were deleted)."""
        try:
            with os.scandir(path) as it:
                subdirs = [e for e in it if e.is_dir(follow_symlinks=False)]
        except OSError:
            return
        for entry in subdirs:
            subdir = entry.path
            if entry.name == LOCK_DIR:
                if at_root:
                    continue
                _remove_files(subdir)
            else:
                self._prune_tree(subdir, at_root=False)
            try:
                os.rmdir(subdir)
            except OSError:
                pass  # not empty (e.g. a concurrent writer's file): keep it

    # -- locking -----------------------------------------------------------------------------
    def replace(self, key: str, value: Buffer | None) -> None:
        """`KvStore.replace`. A whole value is written under the key's lock in one call of the C
        batches where it can be: the lock, the directory's open, the write and the unlock then
        hand the GIL over once, not at each of their eight system calls (with two threads each
        hand-off is a wake-up of the other; measured 10-15% of a blosc write)."""
        if value is None or not self._replace_in_one_call(key, value):
            super().replace(key, value)

    def _replace_in_one_call(self, key: str, value: Buffer) -> bool:
        """Whether `value` was stored by `_file_batch.replace_locked`; False, with nothing
        stored, when it was not (a missing directory, a link, a lock file deleted meanwhile, an
        error, or no C batches): the usual way handles that."""
        if not (_file_batch.AVAILABLE and self.lock_whole_writes and _OFD_SETLKW is not None
                and self.process_locks):
            return False
        self._check_writable(key)
        self._path(key)
        rel, _, name = key.rpartition("/")
        if name in _NODE_FILES:  # a node made: lock homes change (see _set)
            return False
        if type(value) is not bytes:
            check_value(key, value)
        lock = _KeyLock(self, (key,))
        return lock.run_in_thread_locks(lambda fd, offset: _file_batch.replace_locked(
            self._real_dir(rel), name, _temp_name(name), value, self.fsync, fd, offset))

    def lock(self, key: str) -> _KeyLock:
        """An exclusive lock on `key` across threads and processes (not reentrant)."""
        self._check_writable(key)  # lock files are writes; read-only stores create nothing
        self._path(key)
        return _KeyLock(self, (key,))

    def lock_shared(self, key: str) -> _KeyLock:
        """A shared lock on `key` across threads and processes (excludes `lock(key)` only)."""
        self._check_writable(key)
        self._path(key)
        return _KeyLock(self, (key,), shared=True)

    def _lock_place(self, key: str) -> tuple[str, str]:
        """The node whose directory holds `key`'s lock, and how the key is locked: RANGE in
        an array, or up to the root without a node (a plain key/value store); a document
        elsewhere (a group's, a node's being made) OWN_FILE, which is deleted after use since
        other libraries take any entry of a group's directory for a member; other keys of
        groups (chunks of an array not made yet) THREADS: other processes cannot find them
        before the node's document exists, whose own lock excludes other makers."""
        return _place(key, *self._node_of(key))

    def _current_place(self, key: str) -> tuple[str, str]:
        """`_lock_place` looked up again, past the memo: another process may have made or
        deleted a node at or below the remembered one since (the memo is this store's)."""
        rel = key.rpartition("/")[0]
        while rel:
            kind = self._node_kind(rel)
            if kind is not None:
                return _place(key, rel + "/", kind)
            rel = rel.rpartition("/")[0]
        return _place(key, "", self._node_kind(""))

    def _node_of(self, key: str) -> tuple[str, bool | None]:
        """The nearest directory at or above the key's, inside the root, holding Zarr metadata
        ("" for the root, else "<dir>/"), or the root when none does; and whether that node is
        an array (True), another node (False) or no node (None: the root without metadata).
        Remembered per key directory: a node's chunks are written after its metadata, and nodes
        are not made over into plain directories while in use."""
        homes = self._homes  # replaced (not cleared) when a node is made or deleted: see _set
        rel = key.rpartition("/")[0]
        place = homes.get(rel)
        if place is not None:
            return place
        walked = []
        while rel and place is None:
            walked.append(rel)
            kind = self._node_kind(rel)
            if kind is not None:
                place = (rel + "/", kind)
            else:
                rel = rel.rpartition("/")[0]
                place = homes.get(rel)
        if place is None:  # the root: its own answer is remembered too
            place = ("", self._node_kind(""))
            walked.append("")
        if len(homes) > _MAX_HOMES:
            homes.clear()
        for rel in walked:
            homes[rel] = place
        return place

    def _node_kind(self, rel: str) -> bool | None:
        """Whether the directory `rel` holds an array (True), another node (False) or no Zarr
        metadata (None), by the first of its `_NODE_FILES`, looked up as values are: metadata
        resolving outside the root (through a link) is not looked at and makes no node (the
        key's own access is refused, naming it), nor does one that cannot be opened. zarr.json
        is read (once per version of it) for its node type; unreadable, it is no array's."""
        for name in _NODE_FILES:
            key = f"{rel}/{name}" if rel else name
            flags = _READ_FLAGS if name == "zarr.json" else _STAT_FLAGS
            try:
                opened = self._open_value(key, flags)
            except InvalidKeyError:
                continue
            except OSError as exc:
                if name == "zarr.json" and exc.errno in (errno.EACCES, errno.EPERM):
                    return False
                continue
            if opened is not None:
                fd, st = opened
                try:
                    return name == ".zarray" or name == "zarr.json" and self._is_array_doc(
                        rel, fd, st)
                finally:
                    os.close(fd)
        return None

    def _is_array_doc(self, rel: str, fd: int, st: os.stat_result) -> bool:
        stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        known = self._kinds.get(rel)
        if known is not None and known[0] == stamp:
            return known[1]
        try:
            data = pread_exact(fd, st.st_size, 0)
            # A group's document mentions "array" only when it consolidates its members.
            is_array = b'"array"' in data and json.loads(data).get("node_type") == "array"
        except (OSError, ValueError, AttributeError, RecursionError):
            is_array = False
        if len(self._kinds) > _MAX_HOMES:
            self._kinds.clear()
        self._kinds[rel] = (stamp, is_array)
        return is_array

    def _process_lock_file(self, home: str) -> _ProcessLockFile | None:
        """This process's description of `home`'s lock file, or None when the store keeps
        `_MAX_LOCK_FILES` open already (the lock then opens one of its own)."""
        lock_file = self._lock_files.get(home)
        if lock_file is None and len(self._lock_files) < _MAX_LOCK_FILES:
            lock_file = self._lock_files.setdefault(home, _ProcessLockFile(self, home))
        return lock_file

    def _open_node_dir(self, key: str, home: str) -> int:
        """A descriptor of the node directory `home`, made if missing only for the root (before
        any write): a missing node was deleted by another process, not made again empty."""
        return self._open_made_dir(self._base + home, key, lambda: not home, allow_root=True)

    def _open_made_dir(self, path: str, name: str, may_make: Callable[[], bool],
                       allow_root: bool = False) -> int:
        """A descriptor of the directory `path`, checked to be inside the root (`name` names it
        in errors), made if missing when `may_make()`; otherwise the remembered lock place is
        stale (`_StalePlace`)."""
        dir_fd = self._open_checked(path, _DIR_FLAGS, name, allow_root)
        if dir_fd is None:
            if not may_make():
                self._homes = {}
                raise _StalePlace(name)
            self._check_path(path, name, allow_root)
            os.makedirs(path, exist_ok=True)
            dir_fd = self._open_checked(path, _DIR_FLAGS, name, allow_root)
            if dir_fd is None:
                raise FileNotFoundError(errno.ENOENT, "directory vanished", path)
        return dir_fd

    def _open_lock_file(self, key: str, home: str) -> int:
        name = _RANGE_LOCK_FILE if _OFD_SETLKW is not None else \
            hashlib.sha256(key[len(home):].encode()).hexdigest()[:32] + ".lock"
        try:
            # A node remembered as an array may have been deleted (and with it its lock
            # directory) and made a group by another process: groups get none.
            dir_fd = self._open_made_dir(self._base + home + LOCK_DIR, home + LOCK_DIR,
                                         lambda: self._current_place(key) == (home, RANGE))
            try:
                return os.open(name, _LOCK_FLAGS, 0o666, dir_fd=dir_fd)
            finally:
                os.close(dir_fd)
        except StoreError:
            raise
        except OSError as exc:
            raise _wrap(exc, "lock", key, self.root) from exc

    # -- upkeep ------------------------------------------------------------------------------
    def remove_temp_files(self, older_than: float = 3600.0) -> list[str]:
        """Delete the temp files of writes that never finished (a writer killed mid-write leaves
        its `.<name>.<random>.partial` behind; a finished write renames it over the target), if
        last modified more than `older_than` seconds ago: a younger one may belong to a write in
        progress; and the lock files of groups' documents that no one holds (a holder killed
        leaves its own). Returns their paths relative to the root. Links are not followed."""
        self._check_writable("<temp files>")
        if isinstance(older_than, bool) or not isinstance(older_than, (int, float)) \
                or not older_than >= 0:  # also refuses NaN
            raise SpecError(f"older_than must be a number of seconds >= 0, got {older_than!r}")
        cutoff, removed = time.time() - older_than, []
        try:
            for top, dirs, files, dir_fd in os.fwalk(self._real_root, onerror=_raise_unless_gone):
                if LOCK_DIR in dirs:
                    dirs.remove(LOCK_DIR)
                removed += [os.path.relpath(os.path.join(top, name), self._real_root)
                            for name in files
                            if _is_temp_name(name) and _unlink_if_older(name, dir_fd, cutoff)
                            or name.startswith(LOCK_FILE_PREFIX) and _unlink_if_free(name, dir_fd)]
        except OSError as exc:
            where = f" ({exc.filename!r})" if exc.filename else ""
            raise StoreError(exc.errno, f"cannot remove temp files in file store {self.root!r}: "
                                        f"{exc.strerror or exc}{where}") from exc
        return sorted(removed)

    # -- description -------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"driver": "file", "path": self._base}

    def _make_parent(self) -> tuple[FileStore, str] | None:
        """The directory holding the root (by its path, links not resolved: a hierarchy's
        layout is its paths'), or None at the file system's root."""
        up, name = os.path.split(self.root.rstrip("/"))
        parent = FileStore(up, self.read_only, fsync=self.fsync, process_locks=self.process_locks)
        return (parent, name) if name else None

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        return f"FileStore({self.root!r}{mode})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Locks are not picklable; a copy in another process reopens the same directory.
        return (_rebuild, (self.root, self.read_only, self.fsync, self.process_locks))


class _HeldDir:
    """The one directory a batch of writes keeps open (a bounded cache: one descriptor)."""

    __slots__ = ("rel", "fd")

    def __init__(self) -> None:
        self.rel, self.fd = "", -1

    def take(self, rel: str, real: str) -> int | None:
        """The descriptor of `rel` if it is the one held and still the directory at `real`, its
        resolved path (the caller now owns it). A directory renamed away, perhaps out of the
        root with a link left in its place, or deleted, is opened again by its path with the
        escape checks: writing through the old descriptor would put the value there."""
        if self.fd < 0 or rel != self.rel:
            return None
        fd, self.fd = self.fd, -1
        if _PROC_FD is None or os.readlink(_PROC_FD + str(fd)) != real:
            os.close(fd)
            return None
        return fd

    def keep(self, rel: str, fd: int) -> None:
        self.close()
        self.rel, self.fd = rel, fd

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


def _remove_files(path: str) -> None:
    """Best effort: remove the directory `path` and the files in it."""
    try:
        with os.scandir(path) as it:
            for entry in it:
                if not entry.is_dir(follow_symlinks=False):
                    os.unlink(entry.path)
        os.rmdir(path)
    except OSError:
        pass


def _raise_unless_gone(exc: OSError) -> None:
    """fwalk's error handler: a directory removed meanwhile is fine; an unreadable one is not
    (silently skipping it would leave its temp files while reporting success)."""
    if not isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        raise exc


def _unlink_if_older(name: str, dir_fd: int, cutoff: float) -> bool:
    """Remove the regular file `name` if modified before `cutoff`; whether it did."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode) or st.st_mtime >= cutoff:
            return False
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:  # removed meanwhile (its write finished, or another cleaner)
        return False
    return True


def _range_offset(key: str) -> int:
    """The byte of the range lock file that stands for `key`: 62 bits of a hash, except that
    keys differing only in a trailing number below 2**20 (chunk keys of one directory or row)
    get consecutive bytes, so that a run of them is locked with one call (`_lock_runs`)."""
    stem = key.rstrip("0123456789")
    digits = key[len(stem):]
    if 0 < len(digits) <= 7 and (digits == "0" or digits[0] != "0") and int(digits) < 1 << 20:
        return _hash62(stem) >> 20 << 20 | int(digits)
    return _hash62(key)


@functools.lru_cache(maxsize=1024)  # the stems of chunk keys repeat
def _hash62(text: str) -> int:
    # Distinct keys practically never share a byte.
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 2


#: Times a lock starts over on a lock file deleted under it (`_KeyLock._lock`).
_RELOCK_ATTEMPTS = 8
#: Lock files of their own deleted by their holder under a waiter before it gives up (each
#: deletion is another holder's lock taken and released: progress, not a fault).
_OWN_FILE_ATTEMPTS = 100_000
#: The most keys one range lock of a batch holds: the others wait for the batch at most this long.
_MAX_RUN = 256


def _lock_runs(keys: Sequence[str], place_of: Callable[[str], tuple[str, str]] = lambda key:
               ("", RANGE)) -> list[Sequence[str]]:
    """`keys` cut into runs whose lock bytes are consecutive and ascending in one range lock
    file (`place_of` a key: its node, and how it is locked), so that each run is one range
    lock. Runs are taken one at a time and always in ascending order within a run, which cannot
    deadlock with single-key holders or other batches."""
    if _OFD_SETLKW is None:
        return [(key,) for key in keys]
    runs: list[Sequence[str]] = []
    start, previous, previous_home = 0, -2, ""
    for i, key in enumerate(keys):
        home, how = place_of(key)
        offset = _range_offset(key[len(home):]) if how == RANGE else -2  # alone
        if offset != previous + 1 or home != previous_home or i - start == _MAX_RUN:
            if i > start:
                runs.append(keys[start:i])
            start = i
        previous, previous_home = offset, home
    if len(keys) > start:
        runs.append(keys[start:])
    return runs


def _lock_descriptor(fd: int, offset: int, shared: bool, count: int = 1) -> None:
    """Block until this descriptor holds the lock (`offset`, `count`: its bytes, without flock)."""
    if _OFD_SETLKW is None:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        return
    kind = fcntl.F_RDLCK if shared else fcntl.F_WRLCK
    fcntl.fcntl(fd, _OFD_SETLKW, _FLOCK.pack(kind, os.SEEK_SET, offset, count, 0))


def _close_in(fd: int, pid: int) -> None:
    if os.getpid() == pid:  # a forked child must not close a number it did not open
        os.close(fd)


_LOCK_FILES: weakref.WeakSet[_ProcessLockFile] = weakref.WeakSet()
#: Descriptors of held locks that own their description. A forked child closes its copies: they
#: would keep the parent's locks alive after the parent releases them (and block the child).
_OWN_LOCK_FDS: set[int] = set()


def _after_fork_in_child() -> None:
    _new_temp_tag()
    for fd in list(_OWN_LOCK_FDS):
        _close_quietly(fd)
    _OWN_LOCK_FDS.clear()
    for lock_file in list(_LOCK_FILES):
        lock_file._after_fork()


def _unlink_if_free(name: str, dir_fd: int) -> bool:
    """Delete the lock file `name` if no one holds it, as a releasing holder does; a link
    found at its name (no holder can open one) too."""
    try:
        fd = os.open(name, _LOCK_FLAGS & ~os.O_CREAT, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            return False
        try:
            if not stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                return False
            os.unlink(name, dir_fd=dir_fd)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if _named(fd, name, dir_fd):
            os.unlink(name, dir_fd=dir_fd)
            return True
    except OSError:
        pass  # held: in use
    finally:
        os.close(fd)
    return False


def _unlock_quietly(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        pass


def _close_own(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            _OWN_LOCK_FDS.discard(fd)
            os.close(fd)


def _named(fd: int, name: str, dir_fd: int) -> bool:
    """Whether the open file `fd` is still the one called `name` in `dir_fd`."""
    try:
        found = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    st = os.fstat(fd)
    return (found.st_dev, found.st_ino) == (st.st_dev, st.st_ino)


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _ProcessLockFile:
    """This process's open description of the range lock file, for exclusive locks.

    One description serves every exclusive lock the process holds (the per-key thread lock
    already keeps two threads of the process from holding one key), so a lock costs two fcntl
    calls rather than opening and closing a file. A forked child opens its own: locks taken
    through a description inherited from the parent would not exclude the parent.
    """

    def __init__(self, store: FileStore, home: str) -> None:
        # Weak: the store owns this description. A strong reference made a cycle, and the
        # descriptor of a dropped store stayed open until the garbage collector found it.
        self._store, self._home = weakref.ref(store), home
        self._state = (-1, 0)  # (descriptor, pid that opened it)
        self._guard = threading.Lock()
        _LOCK_FILES.add(self)

    def _after_fork(self) -> None:
        # Another thread may have held the guard at the fork: the child would wait forever.
        self._guard = threading.Lock()
        fd, pid = self._state
        if pid:  # the parent's description: the child's copy would outlive the parent's use
            _close_quietly(fd)
        self._state = (-1, 0)

    def descriptor(self, key: str) -> int:
        """The description (opened for `key` if this is the first lock: errors name it)."""
        fd, pid = self._state
        if pid == os.getpid():
            return fd
        with self._guard:
            fd, pid = self._state
            if pid != os.getpid():
                store = self._store()
                assert store is not None  # the caller's lock holds the store
                fd, pid = store._open_lock_file(key, self._home), os.getpid()
                weakref.finalize(self, _close_in, fd, pid)
                self._state = (fd, pid)
        return fd


class _KeyLock:
    """Holds the per-key thread locks of `keys`, then their lock between processes. Several
    keys (a run from `_lock_runs`, exclusive only) have consecutive bytes: one range lock.
    Keys of nodes other than arrays (one key per lock) take a lock file of their own."""

    def __init__(self, store: FileStore, keys: Sequence[str], shared: bool = False) -> None:
        self._store = store
        self._key = keys[0]
        self._shared = shared
        lock = KvStore.lock_shared if shared else KvStore.lock
        self._thread_locks: list[Any] = [lock(store, key) for key in keys]
        self._fd = -1
        self._dir_fd = -1  # the node's directory, while a lock file of its own is held
        self._pid = 0  # the process that took the lock
        self._target()

    def _target(self) -> None:
        """The lock file and byte(s) of the keys: their node's."""
        store = self._store
        if not store.process_locks:  # no lock file is looked for, opened or made
            self._home, self._lock_file, self._own_fd, self._offset = "", None, True, 0
            self._how = THREADS
            return
        self._home, self._how = store._lock_place(self._key)  # every key of a run: the same
        # Shared locks (and flock) need a description of their own; see _ProcessLockFile.
        self._lock_file = None if self._shared or _OFD_SETLKW is None or self._how != RANGE \
            else store._process_lock_file(self._home)
        self._own_fd = self._lock_file is None
        self._offset = 0 if _OFD_SETLKW is None else _range_offset(self._key[len(self._home):])

    def __enter__(self) -> _KeyLock:
        taken = 0
        try:
            for lock in self._thread_locks:
                lock.acquire()
                taken += 1
            self._fd, self._pid = self._lock(), os.getpid()
        except BaseException:
            self._release_threads(taken)
            raise
        return self

    def run_in_thread_locks(self, locked: Callable[[int, int], bool]) -> bool:
        """`locked(descriptor, byte)`, which takes and releases the lock between processes
        itself (one byte of this process's lock file description), run while this holds the
        key's thread lock; False without running it where locks are taken otherwise."""
        if self._lock_file is None or len(self._thread_locks) != 1:
            return False
        self._thread_locks[0].acquire()
        try:
            return locked(self._lock_file.descriptor(self._key), self._offset)
        except _StalePlace:
            return False  # the usual way starts over on the key's current node
        finally:
            self._thread_locks[0].release()

    def _release_threads(self, count: int) -> None:
        for lock in reversed(self._thread_locks[:count]):
            lock.release()

    def _lock(self) -> int:
        store = self._store
        if not store.process_locks:
            return -1  # the thread locks alone
        for attempt in range(_RELOCK_ATTEMPTS):
            if self._how != RANGE:
                # Another process may have made a node at or below the remembered one since
                # (an array, whose keys are locked by ranges), or deleted it.
                try:
                    fd = self._lock_own_file() if self._how == OWN_FILE else \
                        -1 if store._current_place(self._key) == (self._home, THREADS) else -2
                except _StalePlace:
                    fd = -2
                if fd != -2:
                    return fd
                store._homes = {}
                self._target()
                continue
            try:
                fd = store._open_lock_file(self._key, self._home) if self._lock_file is None \
                    else self._lock_file.descriptor(self._key)
            except _StalePlace:
                self._target()
                continue
            if self._own_fd:
                _OWN_LOCK_FDS.add(fd)
            try:
                _lock_descriptor(fd, self._offset, self._shared, len(self._thread_locks))
                # A lock file deleted with its node (delete_prefix, here or in another
                # process) while we waited, or since this store opened it, excludes nobody
                # who opens the file at its path now: start over on that one (its node may
                # have changed too). The last attempt keeps what it has (a file system whose
                # link counts say nothing).
                if os.fstat(fd).st_nlink or attempt == _RELOCK_ATTEMPTS - 1:
                    return fd
                self._unlock(fd)
            except BaseException as exc:
                if self._own_fd and fd in _OWN_LOCK_FDS:
                    _OWN_LOCK_FDS.discard(fd)
                    os.close(fd)
                if isinstance(exc, OSError):
                    raise _wrap(exc, "lock", self._key, store.root) from exc
                raise
            if store._lock_files.get(self._home) is self._lock_file:
                store._lock_files.pop(self._home, None)
            store._homes = {}
            self._target()
        raise StoreError(f"cannot lock {self._key!r} in file store {store.root!r}: its node "
                         "keeps changing (made and deleted by other processes)")

    def _lock_own_file(self) -> int:
        """Hold the key's own lock file in its node's directory (made if missing): the file
        found at its name once the lock is held, since a releasing holder deletes it. -2 (and
        nothing held) when the key's node changed meanwhile (made an array, whose locks are
        ranges, or a node made below it)."""
        store, shared = self._store, self._shared
        name = LOCK_FILE_PREFIX + hashlib.sha256(
            self._key[len(self._home):].encode()).hexdigest()[:32]
        for _ in range(_OWN_FILE_ATTEMPTS):
            dir_fd = fd = -1
            try:
                dir_fd = store._open_node_dir(self._key, self._home)
                _OWN_LOCK_FDS.add(dir_fd)
                fd = os.open(name, _LOCK_FLAGS, 0o666, dir_fd=dir_fd)
                _OWN_LOCK_FDS.add(fd)
                fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
                if _named(fd, name, dir_fd):
                    self._dir_fd, self._name = dir_fd, name
                    if store._current_place(self._key) == (self._home, OWN_FILE):
                        return fd
                    self._drop_own_file(fd)
                    return -2
            except BaseException as exc:
                opened = fd >= 0
                _close_own(fd, dir_fd)
                if isinstance(exc, OSError) and not opened and dir_fd >= 0 \
                        and exc.errno in (errno.ELOOP, errno.EISDIR):
                    raise StoreError(exc.errno, f"cannot lock {self._key!r} in file store "
                                     f"{store.root!r}: its lock file {self._home + name!r} is "
                                     "a link or a directory (zarrkit clean removes a link)"
                                     ) from exc
                if isinstance(exc, OSError):
                    raise _wrap(exc, "lock", self._key, store.root) from exc
                raise
            _close_own(fd, dir_fd)  # deleted by its last holder while we waited: again
        raise StoreError(f"cannot lock {self._key!r} in file store {store.root!r}: its lock "
                         f"file {name!r} was replaced {_OWN_FILE_ATTEMPTS} times while waiting")

    def _drop_own_file(self, fd: int) -> None:
        """Release the key's own lock file, deleting it first unless another process holds it
        too (shared): then the last of them deletes it."""
        dir_fd, self._dir_fd = self._dir_fd, -1
        try:
            if self._shared:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _named(fd, self._name, dir_fd):
                os.unlink(self._name, dir_fd=dir_fd)
        except OSError:
            pass  # held by another (or gone): left to its holders; a stale one is reused
        finally:
            # Unlocked explicitly: a copy of the descriptor in a child forked before it was
            # registered in _OWN_LOCK_FDS would otherwise keep the lock after the close.
            _unlock_quietly(fd)
            _close_own(fd, dir_fd)

    def _unlock(self, fd: int) -> None:
        if self._how == OWN_FILE:
            self._drop_own_file(fd)
        elif self._own_fd:
            _OWN_LOCK_FDS.discard(fd)
            os.close(fd)  # closing the only descriptor releases the lock
        else:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _FLOCK.pack(
                fcntl.F_UNLCK, os.SEEK_SET, self._offset, len(self._thread_locks), 0))

    def __exit__(self, *exc: object) -> None:
        fd, self._fd = self._fd, -1
        try:
            if self._pid != os.getpid() or fd < 0:
                pass  # the parent's lock, taken before a fork (or none): not ours to release
            else:
                self._unlock(fd)
        finally:
            self._release_threads(len(self._thread_locks))


def _read_ranges_at(fd: int, size: int, items: list[tuple[int, ByteRange | None]],
                    results: list[Buffer | None], transient: bool) -> None:
    """Nearby ranges of the open file `fd` (`size` bytes) fetched with one read each."""
    spans = sorted((*resolve_range(rng, size), index) for index, rng in items)
    groups = [(g, g[0][0], max(span[1] for span in g)) for g in coalesce(spans, COALESCE_GAP)]
    total = sum(stop - start for _, start, stop in groups)
    if transient and total <= SCRATCH_LIMIT:
        buffer = scratch(total, "read")  # reused: no page faults on fresh memory
    else:
        buffer = memoryview(empty((total,), np.uint8))  # not zeroed, unlike bytearray
    for group, start, stop in groups:
        view, buffer = buffer[:stop - start], buffer[stop - start:]
        view = view[:pread_into(fd, view, start)]
        for lo, hi, index in group:
            results[index] = view[lo - start:hi - start]

"""The file store's batches of small values: read, or written atomically, by one call of the C
extension `_fileio` that does not hold the GIL (see `_fileio.c` for why).

Each batch call does only the common case: values the C code cannot read or write as simply
(paths through symbolic links, missing directories, errors) are redone one by one by the
store's own methods, which handle them and name the key. Without the extension (not compiled,
not Linux, no openat2, or `ZARRKIT_FILE_BATCHES=0`), `AVAILABLE` is False and the store works
value by value.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..scratch import scratch
from . import _openat2
from ._util import byte_view, wrap_os_error
from .base import Buffer

if TYPE_CHECKING:
    from .file import FileStore, _HeldDir

try:
    from . import _fileio
except ImportError:  # not compiled here: the store works value by value
    _fileio = None

AVAILABLE = _fileio is not None and _openat2.AVAILABLE and \
    os.environ.get("ZARRKIT_FILE_BATCHES", "1") != "0"

#: Bytes of values one batch call packs (reads) or collects (writes) before the next call: big
#: enough that a call's overhead is nothing next to its system calls, small enough to stay in a
#: thread's reused buffer.
BATCH_BYTES = 1 << 20
#: Larger values are written on their own unless they are kept as they are (`BatchWriter.add`).
MAX_BATCHED_VALUE = BATCH_BYTES // 4
#: A read that fails so is no value (a socket is no value, as a directory or FIFO is not).
_MISSING = frozenset((errno.ENOENT, errno.ENOTDIR, errno.ENXIO))


def read_values(store: FileStore, keys: Sequence[str], flags: int, transient: bool
                ) -> list[Buffer | None]:
    """The whole values of `keys` (validated), None for missing ones, packed into this thread's
    reused buffer when `transient` (valid until its next transient batch read), else into fresh
    buffers of BATCH_BYTES shared by the values they hold."""
    paths = tuple(os.fsencode(store._real_base + key) for key in keys)
    sizes = np.empty(len(keys), np.int64)
    results: list[Buffer | None] = [None] * len(keys)
    buffer = scratch(BATCH_BYTES, "batch") if transient else _fresh()
    start = 0
    while start < len(keys):
        done = _fileio.read_files(paths[start:], flags, buffer, sizes[start:])
        _unpack(store, keys, sizes[start:start + done].tolist(), start, buffer, results)
        start += done
        if done == 0:  # larger than a whole buffer: on its own
            results[start] = store.get(keys[start])
            start += 1
        elif start < len(keys):
            buffer = _fresh()
    return results


def write_one(dir_fd: int, name: str, temp: str, value: Buffer, fsync: bool) -> bool:
    """Write `value` to the temp file `temp` in the directory and rename it over `name`, in one
    call; False if that failed (with nothing left behind), for the caller to redo and report."""
    return _fileio.write_files(dir_fd, (os.fsencode(name),), (os.fsencode(temp),),
                               (byte_view(value),), fsync)[1] == 0  # contiguous, as C needs


def replace_locked(directory: str, name: str, temp: str, value: Buffer, fsync: bool,
                   lock_fd: int, lock_byte: int) -> bool:
    """Under the lock of byte `lock_byte` of the lock file `lock_fd`, write `value` to the temp
    file `temp` in `directory` (an absolute path, opened through no link) and rename it over
    `name`, in one call; False if anything failed (with nothing written) for the caller to redo
    it the usual way, which handles and reports it."""
    return _fileio.replace_file(os.fsencode(directory), os.fsencode(name), os.fsencode(temp),
                                byte_view(value), fsync, lock_fd, lock_byte) == 0


def _fresh() -> memoryview:
    return memoryview(np.empty(BATCH_BYTES, np.uint8))  # not zeroed, unlike bytearray


def _unpack(store: FileStore, keys: Sequence[str], sizes: list[int], start: int,
            buffer: memoryview, results: list[Buffer | None]) -> None:
    offset = 0
    for i, size in enumerate(sizes, start):
        if size >= 0:
            results[i] = buffer[offset:offset + size]
            offset += size
        elif -size not in _MISSING:  # a link (ELOOP) or an error: the store's own read
            results[i] = store.get(keys[i])


class BatchWriter:
    """Values for keys of one directory, copied into this thread's reused buffer as they come
    (the caller's may be transient), then written by one call: `flush`, which the caller makes
    before releasing the keys' locks and before anything else it stores."""

    def __init__(self, store: FileStore, held: _HeldDir, temp_name: Callable[[str], str]) -> None:
        self._store, self._held, self._temp_name = store, held, temp_name
        self._arena = scratch(BATCH_BYTES, "batch-write")
        self._rel = ""
        self._keys: list[str] = []
        self._values: list[Buffer] = []
        self._used = 0

    def add(self, key: str, value: Buffer, stable: bool) -> bool:
        """Queue `value` (checked by the caller) for `key`; False, with nothing queued, for a
        value this batch does not take (too large): the caller stores it itself. A value that
        stays as it is until the batch is written (`stable`, or `bytes`) is queued as it is;
        others are copied."""
        kept = stable or type(value) is bytes
        view = byte_view(value)
        size = len(view)
        if size > MAX_BATCHED_VALUE and not kept:  # kept values cost the buffer nothing
            return False
        rel = key.rpartition("/")[0]
        if self._keys and (rel != self._rel or not kept and self._used + size > BATCH_BYTES):
            self.flush()
        if not kept:
            view, self._used = self._copy(view, size), self._used + size
        self._rel = rel
        self._keys.append(key)
        self._values.append(view)
        return True

    def _copy(self, view: Buffer, size: int) -> memoryview:
        target = self._arena[self._used:self._used + size]
        target[:] = view
        return target

    def flush(self) -> None:
        """Write what is queued: each value to a temp file renamed over its key."""
        keys, values, self._keys, self._values, self._used = self._keys, self._values, [], [], 0
        start = 0
        while start < len(keys):
            start = self._write(keys, values, start)

    def _write(self, keys: list[str], values: list[Buffer], start: int) -> int:
        """Write from `start` on in one call; the index to go on from. A value the call cannot
        write (its directory missing or removed meanwhile, a temp name taken, an error to name)
        is redone by the store's own `_set`."""
        store = self._store
        dir_fd = store._write_dir(keys[start], self._rel, self._held)
        if dir_fd is None:
            store._set(keys[start], values[start], self._held)
            return start + 1
        names = [key.rpartition("/")[2] for key in keys[start:]]
        try:
            done, err = _fileio.write_files(
                dir_fd, tuple(map(os.fsencode, names)),
                tuple(os.fsencode(self._temp_name(name)) for name in names),
                tuple(values[start:]), store.fsync)
        finally:
            self._held.keep(self._rel, dir_fd)
        stop = start + done
        if err and stop == len(keys):  # the directory's fsync failed
            raise wrap_os_error(OSError(-err, os.strerror(-err)), "write", keys[-1], store.root)
        if err:
            store._set(keys[stop], values[stop], self._held)
            stop += 1
        return stop

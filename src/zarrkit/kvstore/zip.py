"""A key/value store inside a ZIP archive.

Zip archives cannot change an entry in place, so:

* `set` on an existing key appends a new entry; the latest entry of a name wins.
* `delete` only forgets the key in memory.
* `close()` writes the central directory and, if this store superseded or deleted any entry,
  rewrites the archive without them into a temp file that then atomically replaces the original.
  Forgetting `close()` discards the changes (a ResourceWarning says so when the store is
  collected, which also releases its lock and temp file).
* Crash safety: the archive at `path` is never written in place. Mode "w" (and mode "a" on a
  missing archive) builds the archive in a temp file; mode "a" copies the archive to a temp file
  on its first change (appending in place would overwrite the old central directory). `close()`
  then atomically replaces `path`, so a process killed at any moment leaves the archive as it
  was after the last `close()`. The price: the first change after opening an existing archive
  copies it; zip suits archives written once, not incremental updates.
* One writer per archive: a store changing an existing archive holds an exclusive `flock` on it
  (mode "w" from opening, mode "a" from its first change) until `close()`, so a second writer
  (another process, or another store object) gets a StoreError instead of silently losing the
  first one's changes when both close; so does a mode "a" store whose archive another writer
  replaced after it was opened. Two writers creating a new archive at the same path are not
  detected (the last `close()` wins). Locks and `lock_shared` exclude threads of this process.

Stored (uncompressed) entries are read with `os.pread` at the entry's data offset: no lock, real
partial reads, and whole reads are checked against the entry's CRC-32. Compressed entries are
read through `zipfile` under the store lock.

Member names that are not valid keys (absolute, with "..", backslashes, ...) are never exposed:
they are left out of listings (see `invalid_names`) and cannot be requested, because the same
validation applies to every requested key. Non-key members survive compaction untouched.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import struct
import threading
import time
import warnings
import zipfile
import zlib
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

from ..errors import (
    CorruptDataError,
    InvalidKeyError,
    NotSupportedError,
    SpecError,
    StoreError,
    UnpicklableError,
)
from ._util import byte_view, local_path, pread_exact, resolve_range
from .base import (
    Buffer,
    ByteRange,
    GenerationMismatch,
    KvStore,
    refuse_drive,
    validate_key,
    validate_prefix,
)

_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, (skipped fields), name and extra lengths
_LOCAL_SIGNATURE = b"PK\x03\x04"
_COPY_CHUNK = 1 << 20
_TRUSTED_READ = 1 << 20  # reads up to this size need no check against the archive's size
_MODES = ("r", "w", "a")


def _temp_path(path: str) -> str:
    head, tail = os.path.split(path)
    return os.path.join(head, f".{tail[:64]}.{os.urandom(8).hex()}.partial")


class ZipStore(KvStore):
    """Keys are the members of the zip archive at `path`."""

    driver = "zip"

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: str = "r",
        *,
        read_only: bool | None = None,
        compression: int = zipfile.ZIP_STORED,
        compresslevel: int | None = None,
    ) -> None:
        if mode not in _MODES:
            raise SpecError(f"invalid zip store mode {mode!r}: expected one of {_MODES}")
        if read_only is None:
            read_only = mode == "r"
        if (mode == "r") != read_only:
            raise SpecError(f"zip store mode {mode!r} contradicts read_only={read_only}")
        super().__init__(read_only=read_only)
        self.path = local_path(path, "zip store")
        if os.path.isdir(self.path):  # mode "w" would only fail in close(), after every write
            raise StoreError(errno.EISDIR, f"cannot open zip store {self.path!r}: it is a directory")
        # Through a symlink, the archive it names is replaced (and temp files made beside it,
        # on its file system), not the link.
        self._real_path = os.path.realpath(self.path)
        self.mode = mode
        self.compression = compression
        self.compresslevel = compresslevel
        self._lock = threading.RLock()
        # close() waits for in-flight preads, so none can hit a closed (or reused) descriptor.
        self._idle = threading.Condition(self._lock)
        self._readers = 0
        self._closed = True  # until the archive is open: nothing for close() or __del__ to do
        self._pid = os.getpid()
        self._index: dict[str, zipfile.ZipInfo] = {}
        self._offsets: dict[int, int] = {}  # header offset -> data offset
        self._others: list[zipfile.ZipInfo] = []  # members that are not keys, kept verbatim
        self.invalid_names: list[str] = []
        self._stale = 0  # superseded or deleted entries still in the archive
        # Mode "w" is a writer from the start; mode "a" becomes one at its first change.
        self._guard_fd = _lock_archive(self.path) if mode == "w" else -1
        # A new archive is written to a temp file that replaces `path` on close.
        fresh = mode == "w" or (mode == "a" and not os.path.exists(self.path))
        if fresh:  # as a directory store makes its root: a new archive's directory too
            _make_parent(self._real_path, self.path)
        self._work_path = _temp_path(self._real_path) if fresh else self.path
        try:
            self._zf, self._fd = self._open_archive()
        except BaseException:
            self._release_guard()
            raise
        self._closed = False
        self._load_index()

    def _open_archive(self) -> tuple[zipfile.ZipFile, int]:
        path = self._work_path
        try:
            if self.mode == "a" and os.path.isfile(path) and os.path.getsize(path):
                if not zipfile.is_zipfile(path):  # zipfile would append an archive to any file
                    raise CorruptDataError(f"cannot open zip store {self.path!r}: not a zip file")
            zf = zipfile.ZipFile(path, self.mode, self.compression, allowZip64=True,
                                 compresslevel=self.compresslevel)
        except zipfile.BadZipFile as exc:
            raise CorruptDataError(f"cannot open zip store {self.path!r}: {exc}") from exc
        except OSError as exc:
            if isinstance(exc, StoreError):
                raise
            raise StoreError(exc.errno, f"cannot open zip store {self.path!r}: {exc.strerror}") from exc
        try:
            return zf, os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except BaseException:
            zf.close()
            raise

    def _load_index(self) -> None:
        for info in self._zf.infolist():
            name = info.filename
            try:
                refuse_drive(validate_key(name))
            except InvalidKeyError:
                self._others.append(info)
                if not name.endswith("/"):  # directory entries are normal, not worth reporting
                    self.invalid_names.append(name)
                continue
            # Duplicates written by others are shadowed (latest wins) but, alone, are no reason
            # to rewrite an archive we did not change; `_stale` counts only our changes.
            self._index[name] = info

    # -- reading -----------------------------------------------------------------------------
    def get(self, key: str, byte_range: ByteRange | None = None) -> Buffer | None:
        refuse_drive(validate_key(key))
        return self._get_entry(key, self._index.get(key), byte_range)

    def get_with_generation(self, key: str, byte_range: ByteRange | None = None
                            ) -> tuple[Buffer | None, Hashable | None]:
        """An entry's bytes never change (a new value is a new entry, appended): its offset
        in the archive names the value, so a shard's index and its chunks are read from one."""
        refuse_drive(validate_key(key))
        info = self._index.get(key)
        return self._get_entry(key, info, byte_range), None if info is None else info.header_offset

    def get_ranges_if(self, key: str, ranges: Sequence[ByteRange], generation: Hashable | None,
                      transient: bool = False) -> list[Buffer | None]:
        if generation is None:
            return super().get_ranges_if(key, ranges, generation, transient)
        refuse_drive(validate_key(key))
        info = self._index.get(key)
        if info is None or info.header_offset != generation:
            raise GenerationMismatch(f"{key!r} in zip store {self.path!r} holds a new value")
        return [self._get_entry(key, info, rng) for rng in ranges]

    def _get_entry(self, key: str, info: zipfile.ZipInfo | None,
                   byte_range: ByteRange | None) -> Buffer | None:
        if info is None:
            self._check_open()
            return None
        start, stop = resolve_range(byte_range, info.file_size)
        if info.flag_bits & 0x1:
            raise StoreError(f"cannot read {key!r} from zip store {self.path!r}: it is encrypted")
        if info.compress_type != zipfile.ZIP_STORED:
            return self._read_compressed(info, start, stop)
        with self._idle:
            self._check_open()
            self._readers += 1
        try:
            return self._read_stored(info, start, stop)
        except OSError as exc:
            if isinstance(exc, StoreError):
                raise
            raise StoreError(exc.errno, f"cannot read {key!r} from zip store {self.path!r}: "
                             f"{exc.strerror}") from exc
        finally:
            with self._idle:
                self._readers -= 1
                if not self._readers:
                    self._idle.notify_all()

    def _read_stored(self, info: zipfile.ZipInfo, start: int, stop: int) -> bytes:
        key = info.filename
        offset = self._data_offset(info) + start
        # Sizes come from the archive's directory: check a large one against the file before
        # a read allocates a buffer that big.
        if stop - start > _TRUSTED_READ and offset + stop - start > os.fstat(self._fd).st_size:
            raise CorruptDataError(f"zip store {self.path!r}: entry {key!r} claims "
                                   f"{info.file_size} bytes, beyond the end of the archive")
        data = pread_exact(self._fd, stop - start, offset)
        if len(data) != stop - start or (
                stop - start == info.file_size and zlib.crc32(data) != info.CRC):
            raise CorruptDataError(f"zip store {self.path!r}: entry {key!r} is truncated or "
                                   "does not match its CRC-32")
        return data

    def _data_offset(self, info: zipfile.ZipInfo) -> int:
        offset = self._offsets.get(info.header_offset)
        if offset is None:
            header = os.pread(self._fd, _LOCAL_HEADER.size, info.header_offset)
            if len(header) != _LOCAL_HEADER.size:
                raise CorruptDataError(f"zip store {self.path!r}: truncated entry "
                                       f"{info.filename!r}")
            signature, name_len, extra_len = _LOCAL_HEADER.unpack(header)
            if signature != _LOCAL_SIGNATURE:
                raise CorruptDataError(f"zip store {self.path!r}: bad local header for "
                                       f"{info.filename!r}")
            offset = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
            self._offsets[info.header_offset] = offset
        return offset

    def _read_compressed(self, info: zipfile.ZipInfo, start: int, stop: int) -> bytes:
        try:
            with self._lock, self._open_member(info) as member:
                if start:
                    member.seek(start)  # decompresses and discards; no random access here
                return member.read(stop - start)
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise CorruptDataError(f"zip store {self.path!r}: cannot decode entry "
                                   f"{info.filename!r}: {exc}") from exc
        except NotImplementedError as exc:  # a method zipfile lacks, e.g. Deflate64 or zstd
            raise NotSupportedError(f"cannot read {info.filename!r} from zip store {self.path!r}: "
                                    f"compression method {info.compress_type} is not "
                                    "supported") from exc

    def _open_member(self, info: zipfile.ZipInfo) -> zipfile.ZipExtFile:
        self._check_open()
        return self._zf.open(info)

    def exists(self, key: str) -> bool:
        self._check_open()
        return refuse_drive(validate_key(key)) in self._index

    def size(self, key: str) -> int | None:
        self._check_open()
        info = self._index.get(refuse_drive(validate_key(key)))
        return None if info is None else info.file_size

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        self._check_open()
        with self._lock:
            keys = [k for k in self._index if k.startswith(prefix)]
        return iter(keys)

    # -- writing -----------------------------------------------------------------------------
    def _set(self, key: str, value: Buffer) -> None:
        refuse_drive(key)
        if len(key.encode()) > 0xFFFF:  # the zip headers' name length is 16 bits
            raise InvalidKeyError(f"invalid zip store key {key[:40]!r}...: longer than 65535 "
                                  "bytes in UTF-8")
        data = byte_view(value)
        info = zipfile.ZipInfo(key, date_time=time.localtime()[:6])
        info.compress_type = self.compression
        info.external_attr = 0o644 << 16  # rw-r--r-- when extracted
        with self._lock:
            self._check_open()
            self._detach()
            # We track versions ourselves; without this zipfile warns about a duplicate name.
            self._zf.NameToInfo.pop(key, None)
            self._zf.writestr(info, data, compresslevel=self.compresslevel)
            self._zf.fp.flush()  # make the bytes visible to pread on our own descriptor
            if key in self._index:
                self._stale += 1
            self._index[key] = info

    def _delete(self, key: str) -> None:
        with self._lock:
            self._check_open()
            if key in self._index:
                self._detach()
                del self._index[key]
                self._stale += 1

    def _detach(self) -> None:
        """Before the first change to an existing archive, move to a copy of it (the original
        stays intact until close() replaces it). The copy has the same offsets, so the index
        stays valid."""
        if self._work_path != self.path:
            return
        self._idle.wait_for(lambda: not self._readers)  # no pread in flight on the old descriptor
        if self._work_path != self.path:  # waiting released the lock: another writer detached
            return
        self._take_guard()
        temp = _temp_path(self._real_path)
        try:
            shutil.copyfile(self.path, temp)
            shutil.copymode(self.path, temp)
            self._zf.close()  # unchanged, so nothing is written to the original
            os.close(self._fd)
            self._work_path = temp
            self._zf, self._fd = self._open_archive()
        except BaseException as exc:
            self._closed = True  # the old handles may be gone: refuse further use
            self._release_guard()
            if os.path.exists(temp):
                os.unlink(temp)
            if isinstance(exc, OSError) and not isinstance(exc, StoreError):
                raise StoreError(exc.errno, f"cannot copy zip store {self.path!r} before "
                                 f"changing it: {exc.strerror}") from exc
            raise

    def _take_guard(self) -> None:
        """Become the archive's single writer, provided it is still the archive this store
        read (a writer that closed meanwhile has replaced it)."""
        guard = _lock_archive(self.path)
        if guard < 0 or not _same_file(guard, self._fd):
            if guard >= 0:
                os.close(guard)
            raise StoreError(f"zip store {self.path!r} was changed by another writer since it "
                             "was opened: open it again to change it")
        self._guard_fd = guard

    # -- closing -----------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"zip store {self.path!r} is closed")

    def close(self) -> None:
        """Finish the archive; drop superseded/deleted entries by an atomic rewrite if needed."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._idle.wait_for(lambda: not self._readers)
            try:  # the guard is released whatever fails: a leaked one locks out every writer
                self._finish()
            finally:
                self._release_guard()

    def _finish(self) -> None:
        try:
            try:
                self._zf.close()  # writes the central directory of a changed archive
            finally:
                os.close(self._fd)
        except OSError as exc:
            self._drop_work_file()  # without its central directory, the temp archive is junk
            raise StoreError(exc.errno, f"cannot finish zip store {self.path!r} (the archive "
                             f"is left as it was): {exc.strerror or exc}") from exc
        if self.read_only:
            return
        if self._stale:
            self._compact()
        elif self._work_path != self.path:
            try:
                _copy_mode(self._real_path, self._work_path)
                os.replace(self._work_path, self._real_path)
            except OSError as exc:
                raise StoreError(exc.errno, f"cannot replace zip store {self.path!r}; the new "
                                 f"archive is kept at {self._work_path!r}: {exc.strerror}") from exc

    def _drop_work_file(self) -> None:
        """Delete the temp archive of unpublished changes (`path` itself is never touched)."""
        if self._work_path != self.path:
            try:
                os.unlink(self._work_path)
            except FileNotFoundError:
                pass

    def _release_guard(self) -> None:
        fd, self._guard_fd = self._guard_fd, -1
        if fd >= 0:
            os.close(fd)

    def _compact(self) -> None:
        keep = {info.header_offset for info in self._index.values()}
        keep.update(info.header_offset for info in self._others)
        temp = _temp_path(self._real_path)
        try:
            with zipfile.ZipFile(self._work_path) as source, zipfile.ZipFile(
                    temp, "w", allowZip64=True, compresslevel=self.compresslevel) as target:
                for info in source.infolist():
                    if info.header_offset in keep:
                        _copy_entry(source, target, info)
            shutil.copymode(self._work_path, temp)
            _copy_mode(self._real_path, temp)  # the replaced archive's, if there was one
            os.replace(temp, self._real_path)
        except BaseException as exc:
            if os.path.exists(temp):
                os.unlink(temp)
            if isinstance(exc, Exception) and self._work_path != self.path:
                raise StoreError(f"cannot compact zip store {self.path!r}; the uncompacted "
                                 f"archive is kept at {self._work_path!r}") from exc
            raise
        if self._work_path != self.path:
            os.unlink(self._work_path)

    # -- description -------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"driver": "zip", "base": {"driver": "file", "path": self.path}}

    def __repr__(self) -> str:
        return f"ZipStore({self.path!r}, mode={self.mode!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy in another process reopens the archive; only readers can share one.
        if not self.read_only:
            raise UnpicklableError(f"cannot pickle {self!r}: a zip archive has one writer at "
                                   "a time; close it and pickle a read-only store (mode 'r')")
        return ZipStore, (self.path, "r")

    def __del__(self) -> None:
        if getattr(self, "_closed", True):
            return
        if self._pid != os.getpid():  # a forked child's copy: the archive is the parent's
            self._zf.fp = None  # so that zipfile does not write a central directory into it
            return
        if not self.read_only:
            warnings.warn(f"{self!r} was never closed: its changes are discarded",
                          ResourceWarning, stacklevel=2)
        # Unreachable now, so nobody can finish it.
        self._discard()

    def _discard(self) -> None:
        """Close without finishing: release the descriptors (raw ones are not closed by the
        collector), the single-writer guard (held until the process exits otherwise) and the
        temp archive, leaving `path` as the last close() left it. For a store that its opener
        cannot hand out (`zarrkit.open` failing after opening it)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._idle.wait_for(lambda: not self._readers)
            try:
                self._zf.close()
                os.close(self._fd)
                if not self.read_only:
                    self._drop_work_file()
            finally:
                self._release_guard()


def _same_file(a: int, b: int) -> bool:
    sa, sb = os.fstat(a), os.fstat(b)
    return (sa.st_ino, sa.st_dev) == (sb.st_ino, sb.st_dev)


def _make_parent(real_path: str, path: str) -> None:
    try:
        os.makedirs(os.path.dirname(real_path) or ".", exist_ok=True)
    except OSError as exc:
        raise StoreError(exc.errno, f"cannot create the directory of zip store {path!r}: "
                         f"{exc.strerror}") from exc


def _copy_mode(archive: str, temp: str) -> None:
    """Give the archive `temp` replaces its permissions (a rewrite keeps them)."""
    try:
        shutil.copymode(archive, temp)
    except FileNotFoundError:
        pass  # a new archive: the process's default permissions


def _lock_archive(path: str) -> int:
    """An exclusive, non-blocking flock on the existing archive at `path` (-1 if there is none):
    the single-writer guard. Checked to still be the file at `path` once locked, since a
    writer closing meanwhile replaces it."""
    while True:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return -1
        except OSError as exc:
            raise StoreError(exc.errno, f"cannot open zip store {path!r}: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreError(f"zip store {path!r} is open for writing elsewhere (another "
                             "process or store object): a zip archive has one writer at a "
                             "time") from None
        try:
            current = os.stat(path)
        except FileNotFoundError:
            current = None
        opened = os.fstat(fd)
        if current is not None and (current.st_ino, current.st_dev) == (opened.st_ino,
                                                                          opened.st_dev):
            return fd
        os.close(fd)  # replaced by a writer's close() meanwhile: lock the new file


def _copy_entry(source: zipfile.ZipFile, target: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
    """Copy one member (decompressing and recompressing it with its own method)."""
    copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
    copy.compress_type = info.compress_type
    copy.external_attr = info.external_attr
    copy.comment = info.comment
    if info.is_dir():
        target.writestr(copy, b"")
        return
    copy.file_size = info.file_size  # lets zipfile choose zip64 headers up front
    with source.open(info) as src, target.open(copy, "w") as dst:
        shutil.copyfileobj(src, dst, _COPY_CHUNK)

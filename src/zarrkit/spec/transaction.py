"""TensorStore's transactions: `zarrkit.Transaction`, and arrays bound to one.

A bound array (`array.with_transaction(txn)`, `zarrkit.open(spec, transaction=txn)`) is the
array reopened on a `StagedStore` (kvstore/transaction.py): its writes, resizes and creations
are staged in memory, seen by the handles bound to the same transaction and by nothing else
until `commit_async()`/`commit_sync()` writes them; `abort()` drops them. Bound arrays use no
chunk cache and share no metadata entry, so no unbound handle is served a staged value; the
commit publishes the metadata they changed and drops what unbound handles of their cache pools
cached of the array.

A commit never overwrites a change another writer made to a key after the transaction read it
to change it (a partial chunk write; a chunk the array's edge cuts counts as one, its region
the part inside the shape): it redoes the transaction's writes and resizes on the new
values under the keys' locks (as TensorStore, which keeps the written region), and bound reads
redo them too (TensorStore's reads merge staged writes with the current values). A
transaction that created or changed attributes cannot be redone: its commit fails with nothing
written. Once the metadata `open(spec, transaction=)` read has changed (in meaning, not bytes),
the transaction's handles and its commit fail, as TensorStore's. As in TensorStore, an atomic
transaction refuses to touch a second key
on a store that commits one key at a time (all but the memory store), and handles read the
array's metadata document through it (so on a file store only `assume_metadata` arrays can
use one), and `repeatable_read` fails reads and the commit once data a bound handle read has
changed (a chunk it only wrote is still redone on the new values, as TensorStore merges it).
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np

from .. import _resize_guard as guard
from .. import storage
from ..array import Array
from ..engine import chunk_io
from ..errors import TransactionError, ZarrkitError
from ..kvstore import KvStore
from ..kvstore.transaction import StagedStore, Staging, commit, commits_keys_together
from .futures import ViewFuture
from .node import decoding_identity, location_key, store_identity
from .view import _submit

#: Commits redone on new values before giving up (other writers kept changing the keys).
_ATTEMPTS = 8


class Transaction:
    """TensorStore's `Transaction`: `with_transaction` binds arrays and views to it; their
    writes are staged until `commit_async()`/`commit_sync()` (or the end of a `with` block)
    and dropped by `abort()` (or an exception leaving the block)."""

    def __init__(self, atomic: bool = False, repeatable_read: bool = False) -> None:
        for name, value in (("atomic", atomic), ("repeatable_read", repeatable_read)):
            if not isinstance(value, bool | np.bool_):
                raise TransactionError(f"Transaction: {name} must be True or False, got "
                                       f"{value!r}")
        self._atomic = bool(atomic)
        self._repeatable = bool(repeatable_read)
        self._lock = threading.RLock()
        self._redo_lock = threading.Lock()  # one refresh redoing at a time
        self._extents: dict[int, tuple[TransactionArray, Any]] = {}  # of a redo's writes
        self._state = "open"  # then "committing", "committed" or "aborted"
        self._future = _CommitFuture()
        self._stagings: dict[Any, Staging] = {}
        self._log: list[Callable[[], None]] = []  # the writes, to redo on new values
        self._not_redoable: str | None = None  # what the log cannot redo ("a creation", ...)
        self._first_touched: tuple[Staging, str] | None = None
        self._writers: dict[int, TransactionArray] = {}  # the handles that wrote
        self._redoing = False
        self._opening = threading.local()

    # -- TensorStore's accessors -------------------------------------------------------------
    @property
    def atomic(self) -> bool:
        return self._atomic

    @property
    def aborted(self) -> bool:
        return self._state == "aborted"

    @property
    def commit_started(self) -> bool:
        return self._state in ("committing", "committed")

    @property
    def open(self) -> bool:
        """Whether operations may still use it: neither committing nor aborted."""
        return self._state == "open"

    @property
    def future(self) -> ViewFuture:
        """Completes when the commit is done (its error if it failed) or the transaction is
        aborted (a TransactionError)."""
        return self._future

    def __repr__(self) -> str:
        kind = "atomic " if self._atomic else ""
        return f"<zarrkit.Transaction {kind}{self._state}>"

    # -- operations --------------------------------------------------------------------------
    def commit_async(self) -> ViewFuture:
        """Start committing (nothing more if commit or abort was called before); the future
        of the commit."""
        with self._lock:
            if self._state != "open":
                return self._future
            self._state = "committing"
        return _submit(self._commit, future=self._future)

    def commit_sync(self) -> None:
        """`commit_async().result()`."""
        self.commit_async().result()

    def abort(self) -> None:
        """Drop everything staged; nothing more if commit or abort was called before."""
        self._fail(TransactionError("transaction aborted: nothing it staged was written"))

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        if kind is None:
            self.commit_sync()
        else:
            self.abort()

    async def __aenter__(self) -> Transaction:
        return self

    async def __aexit__(self, kind: Any, error: Any, traceback: Any) -> None:
        if kind is None:
            await asyncio.wrap_future(self.commit_async())
        else:
            self.abort()

    # -- what bound handles call -------------------------------------------------------------
    def _check_open(self) -> None:
        if self._state == "open" or (self._redoing and self._state == "committing"):
            return
        why = "aborted" if self._state == "aborted" else "commit already started"
        raise TransactionError(f"transaction not open ({why}): a handle bound to it can no "
                               "longer read or write; bind a new transaction")

    def _store(self, base: KvStore) -> StagedStore:
        """`base` seen through this transaction (one staging per store, whichever handle)."""
        if isinstance(base, StagedStore):
            base = base.base
        identity = store_identity(base)
        with self._lock:
            staging = self._stagings.get(identity)
            if staging is None:
                staging = self._stagings[identity] = Staging(
                    base, self._touch, self._check_open, self._repeatable)
        return StagedStore(staging)

    def _touch(self, staging: Staging, key: str, write: bool) -> None:
        """Before a read or write of `key`: refused once the transaction is not open, and in
        an atomic transaction for a second key the store cannot commit together with the
        first (the transaction is aborted, as TensorStore's). Reads while opening do not
        count (finding the metadata may look for other documents)."""
        self._check_open()
        if not self._atomic or (not write and getattr(self._opening, "active", False)):
            return
        with self._lock:
            first = self._first_touched
            if first is None:
                self._first_touched = (staging, key)
                return
            if first == (staging, key) or (first[0] is staging
                                           and commits_keys_together(staging.base)):
                return
            error = TransactionError(
                f"cannot read/write {_describe(*first)} and {_describe(staging, key)} as one "
                f"atomic transaction: the {staging.base.driver} store commits one key at a "
                "time (open the array with assume_metadata to touch its chunk only)")
        self._fail(error)
        raise error

    @contextmanager
    def _reads_uncounted(self) -> Iterator[None]:
        """While `open(spec, transaction=)` finds the array (in this thread)."""
        self._opening.active = True
        try:
            yield
        finally:
            self._opening.active = False

    def _record(self, handle: TransactionArray, write: Callable[[], None]) -> None:
        with self._lock:
            self._log.append(write)
            self._writers[id(handle)] = handle

    def _changes_metadata(self, handle: TransactionArray, what: str, redoable: bool) -> None:
        """`handle` changes its metadata document (a resize is in the log, redone with the
        writes on the metadata another writer stored since, as TensorStore's resize is; the
        others cannot be redone)."""
        with self._lock:
            if not redoable:
                self._not_redoable = self._not_redoable or what
            self._writers[id(handle)] = handle

    # -- committing --------------------------------------------------------------------------
    def _fail(self, error: TransactionError) -> None:
        with self._lock:
            if self._state != "open":
                return
            self._state = "aborted"
            self._stagings.clear()
            self._log.clear()
            self._writers.clear()
        self._future.set_exception(error)

    def _commit(self) -> None:
        with self._lock:
            stagings = [self._stagings[k] for k in sorted(self._stagings, key=repr)]
        redo = None if self._not_redoable else lambda: self._redo_unless_read(stagings)
        for _ in range(_ATTEMPTS):
            changed = commit(stagings, self._shape_locks(), redo)
            if not changed:
                self._state = "committed"
                self._after_commit()
                return
            keys = ", ".join(_describe(s, k) for s, k in changed)
            opened = [_describe(s, k) for s, k in changed if k in s.validated]
            if opened:
                raise TransactionError(f"commit failed, nothing written: the metadata "
                                       f"{', '.join(opened)} changed since the transaction "
                                       "opened the array (TensorStore: metadata inconsistent)")
            read = [_describe(s, k) for s in stagings for k in s.changed_reads()]
            if read or self._not_redoable:
                what, why = (", ".join(read), "it was opened with repeatable_read") if read \
                    else (keys, f"{self._not_redoable} cannot be redone on the new values")
                raise TransactionError(f"commit failed, nothing written: {what} changed since "
                                       f"the transaction read it, and {why}")
        raise TransactionError(f"commit failed, nothing written: {keys} kept changing while "
                               f"the transaction's writes were redone {_ATTEMPTS} times")

    def _redo_unless_read(self, stagings: list[Staging]) -> None:
        """`_redo`, unless data a bound handle read has changed (repeatable_read): then the
        commit fails whatever a redo gives."""
        if not any(staging.changed_reads() for staging in stagings):
            self._redo(stagings)

    def _redo(self, stagings: list[Staging]) -> None:
        """The transaction's writes again, on the base stores' current values."""
        self._redoing = True
        self._extents = {}
        try:
            for staging in stagings:
                staging.reset()
            for write in list(self._log):
                write()
            for handle, planned in self._extents.values():
                handle._erase_beyond(planned)
        finally:
            self._redoing = False

    def _extend(self, handle: TransactionArray, planned: Any) -> None:
        """A redone write of `handle` planned on `planned`: the region they cover, erased
        beyond the shape once all are redone (TensorStore keeps a region written where the
        array shrank since and the transaction grows it again)."""
        _, known = self._extents.get(id(handle), (handle, planned))
        shape = tuple(max(a, b) for a, b in zip(known.shape, planned.shape, strict=True))
        self._extents[id(handle)] = (handle, planned.evolve(shape=shape))

    def _check_opened(self) -> None:
        """Refuse every operation once the metadata of an array this transaction opened has
        changed (as TensorStore's "Metadata is inconsistent"; the commit fails too)."""
        self._check_open()
        if self._redoing:
            return
        with self._lock:
            stagings = list(self._stagings.values())
        opened = [_describe(s, k) for s in stagings for k in sorted(s.invalidated())]
        if opened:
            raise TransactionError(f"the metadata {', '.join(opened)} changed since the "
                                   "transaction opened the array: its handles can no longer "
                                   "read or write, and its commit fails")

    def _refresh(self) -> None:
        """Before a bound handle's read or write: chunks it changed partly over values another
        writer has changed since are redone on the new values (TensorStore's reads merge the
        staged writes with the current values; with repeatable_read, a read of a chunk an
        earlier read saw that changed then fails). A transaction that created an array or
        changed attributes cannot be redone: its handles read what it staged."""
        if self._not_redoable or self._redoing:
            return
        # Not under self._lock: the redo's writes run on pool threads that take it.
        with self._redo_lock:
            with self._lock:
                stagings = list(self._stagings.values())
            if any(staging.stale() for staging in stagings):
                self._redo(stagings)

    def _shape_locks(self) -> list[Any]:
        """The shape locks of the arrays written, held while committing as writes hold them
        (so that a resize does not interleave): exclusive where the metadata changed."""
        locks: dict[Any, tuple[KvStore, str, bool]] = {}
        for handle in self._handles():
            base, key = handle.store.base, guard.shape_lock_key(handle.path)
            where = (store_identity(base), key)
            exclusive = handle._changed_metadata or locks.get(where, (0, 0, False))[2]
            locks[where] = (base, key, exclusive)
        return [base.lock(key) if exclusive else base.lock_shared(key)
                for _, (base, key, exclusive) in sorted(locks.items(), key=lambda i: repr(i[0]))]

    def _handles(self) -> list[TransactionArray]:
        with self._lock:
            return list(self._writers.values())

    def _after_commit(self) -> None:
        for handle in self._handles():
            handle._committed()


class _CommitFuture(ViewFuture):
    """The transaction's future: settled by the commit or the abort only."""

    def cancel(self) -> bool:
        return False  # abort() drops the transaction; a cancelled future would never settle


def _describe(staging: Staging, key: str) -> str:
    spec = staging.base.to_json()
    where = str(spec.get("path", ""))
    return f'{staging.base.driver} "{where.rstrip("/") + "/" if where else ""}{key}"'


class TransactionArray(Array):
    """An array whose reads and writes go through a transaction (`with_transaction`)."""

    _transaction: Transaction
    _unbound: Array | None = None
    _counted: tuple[Any, Any] | None = None  # (the engine, its counting twin)
    _changed_metadata = False
    _rechecks_metadata = True

    @property
    def transaction(self) -> Transaction:
        return self._transaction

    def with_transaction(self, transaction: Transaction | None) -> Any:
        if not self._transaction.commit_started:
            raise TransactionError(f"cannot rebind array {self.name} to another transaction "
                                   "(or none) while its transaction is uncommitted")
        return bind(self._unbound_array(), transaction)

    def with_config(self, config: dict[str, Any] | None = None, **options: Any) -> Any:
        return bind(self._unbound_array().with_config(config, **options), self._transaction)

    def _unbound_array(self) -> Array:
        if self._unbound is None:
            unbound = Array(self.store.base, self.path, self._metadata, read_only=self.read_only,
                            write_empty_chunks=self.write_empty_chunks)
            if self._open_state is not None:
                unbound._open_state = replace(self._open_state, bound=dict(
                    self._open_state.bound))
                unbound._set_metadata(unbound._metadata)
            self._unbound = unbound
        return self._unbound

    # -- reading: the metadata is read through the transaction first, as TensorStore's ------
    def _cache_binding(self) -> None:
        return None  # staged chunks must not reach a cache unbound handles read from

    def _reading_engine(self) -> chunk_io.ChunkedArray:
        """The engine on the store that counts reads (repeatable_read checks the data read,
        not the chunks writes read to merge, nor the metadata)."""
        engine = self._engine
        counted = self._counted
        if counted is None or counted[0] is not engine:
            counted = self._counted = (engine, self._engine_on(self.store.counting()))
        return counted[1]

    def _recheck_metadata(self) -> None:
        self._transaction._check_opened()
        self._transaction._refresh()  # (a redo leaves the handles on the shapes it wrote on)
        self._follow_resize()

    def _before_view_io(self) -> None:
        self._recheck_metadata()

    def _before_view_write(self) -> None:
        """A write needs no redo of the chunks another writer changed (a read does): the
        commit redoes the writes on the values then stored. Checking each chunk written
        before every write made a transaction of n partial writes cost n**2 store reads."""
        self._transaction._check_opened()
        self._follow_resize()

    # -- writing -----------------------------------------------------------------------------
    def _write(self, make_plan: Callable[[], Any], value: Any) -> None:
        self._transaction._check_opened()
        self._check_writable()
        value = np.array(self._as_values(value))  # a copy of its own, for a redo
        make_plan = self._edges_in_part(make_plan)
        Array._write(self, make_plan, value)
        planned = self._metadata
        self._transaction._record(self, lambda: self._redo_write(planned, make_plan, value))

    def _edges_in_part(self, make_plan: Callable[[], Any]) -> Callable[[], Any]:
        """`make_plan` counting the chunks (shards) the array's edge cuts as written in part:
        TensorStore's transaction wrote only their part inside the shape, and keeps what
        other writers store beyond it once the array grows (the commit and bound reads merge
        it); so they are read and recorded as read, the commit's check and redo see them."""

        def plan() -> Any:
            planned = make_plan()  # (on this handle's shape: nothing changes it meanwhile)
            engine = self._engine
            return planned.partial_beyond(self.shape, engine.read_chunk_shape,
                                          engine.chunk_shape)
        return plan

    def _redo_write(self, planned: Any, make_plan: Callable[[], Any], value: Any) -> None:
        """A write again, on the shape it was planned against (another writer may have
        shrunk the array since: TensorStore keeps the region written, which then lies partly
        beyond the shape, where zarrkit leaves no data)."""
        self._transaction._extend(self, planned)
        self._set_metadata(planned)  # the next operation adopts the stored one again
        self._write_planned(make_plan(), value)

    def _erase_beyond(self, planned: Any) -> None:
        """After a redo: erase what writes planned on `planned` left beyond the shape."""
        with self._transaction._reads_uncounted():
            shape = guard.stored_metadata(self.store, self.path, planned, self.name).shape
        self._set_metadata(planned)
        self._erase_outside(shape)

    def _write_fields(self, make_plan: Callable[[], Any], value: Any, names: list[str]) -> None:
        self._transaction._check_opened()
        value = copy.deepcopy(value)
        Array._write_fields(self, make_plan, value, names)
        self._transaction._record(
            self, lambda: Array._write_fields(self, make_plan, value, names))

    def _resize_to(self, new_shape: tuple[int, ...], erase: bool = True) -> None:
        self._metadata_change("a resize", redoable=True)
        self._resize_staged(new_shape, erase)
        self._transaction._record(self, lambda: self._resize_staged(new_shape, erase))

    def _resize_staged(self, new_shape: tuple[int, ...], erase: bool) -> None:
        # Finding the stored metadata (a v2 array's .zgroup probe too) is no atomic key: as
        # TensorStore's, a resize touches the metadata document (and the chunks it erases).
        with self._transaction._reads_uncounted():
            Array._resize_to(self, new_shape, erase)

    def append(self, data: Any, axis: int = 0) -> tuple[int, ...]:
        self._metadata_change("an append")
        return Array.append(self, data, axis)

    def _update_attributes(self, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        self._metadata_change("an attribute update")
        return Array._update_attributes(self, change)

    def _metadata_change(self, what: str, redoable: bool = False) -> None:
        self._transaction._check_opened()
        self._transaction._changes_metadata(self, what, redoable)
        self._changed_metadata = True

    def _committed(self) -> None:
        """After the commit: the handles sharing this array's cache pool adopt the metadata
        it changed, and drop what they cached of its chunks."""
        state = self._open_state
        if state is None or state.cache_pool is None:
            return
        base = self.store.base
        if self._changed_metadata:
            md = self._metadata
            state.cache_pool.metadata.entry(location_key(base, self.path, self.zarr_format),
                                            md).publish(md)
        if state.cache_pool.cache is not None:
            state.cache_pool.cache.invalidate_prefix(
                (store_identity(base), decoding_identity(self._metadata)),
                storage.prefix_of(self.path))


def bind(array: Any, transaction: Transaction | None) -> Any:
    """`array` (an Array) bound to `transaction`; the array itself for None."""
    if transaction is None:
        return array
    if not isinstance(transaction, Transaction):
        raise TransactionError(f"with_transaction takes a zarrkit.Transaction or None, got "
                               f"{type(transaction).__name__}")
    bound = TransactionArray(transaction._store(array.store), array.path, array._metadata,
                             read_only=array.read_only,
                             write_empty_chunks=array.write_empty_chunks)
    _join(bound, array._open_state, transaction)
    bound._unbound = array
    return bound


def staged_store(transaction: Any, store: KvStore) -> StagedStore:
    """`store` seen through `transaction` (what `open(spec, transaction=)` opens on)."""
    if not isinstance(transaction, Transaction):
        raise TransactionError(f"open: transaction must be a zarrkit.Transaction, got "
                               f"{type(transaction).__name__}")
    transaction._check_opened()
    return transaction._store(store)


def bind_opened(array: Array, state: Any, transaction: Transaction,
                created: bool) -> TransactionArray:
    """The array `open(spec, transaction=)` opened (or created) on a staged store, bound."""
    bound = TransactionArray(array.store, array.path, array._metadata,
                             read_only=array.read_only,
                             write_empty_chunks=array.write_empty_chunks)
    _join(bound, state, transaction)
    if created:
        bound._metadata_change("a creation")
    elif not array._metadata_assumed:  # the commit checks it is still the document opened
        bound.store.staging.validate(guard.document_key(array.path, array._metadata),
                                     lambda: _stored_meaning(bound))
    return bound


def _stored_meaning(array: Array) -> Any:
    """The array's metadata stored in the base store now, as JSON (None: no such array)."""
    try:
        return guard.stored_metadata(array.store.base, array.path, array._metadata,
                                     array.name).to_json()
    except ZarrkitError:
        return None


def _join(bound: TransactionArray, state: Any, transaction: Transaction) -> None:
    """Give `bound` the open state of the handle it binds, sharing no metadata entry (its
    staged changes are published at the commit)."""
    bound._transaction = transaction
    if state is not None:
        bound._open_state = replace(state, bound=dict(state.bound), shared=None,
                                    shared_seen=None)
    bound._set_metadata(bound._metadata)

"""`Array`: a Zarr array node, a thin object over its metadata and the chunk engine."""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import _resize_guard as guard
from . import formats, storage
from .attributes import Attributes
from .codecs.base import ArrayBytesCodec
from .codecs.chain import CodecChain
from .codecs.numcodecs_v2 import V2ChunkCodec
from .engine import chunk_io
from .errors import (
    CastOverflowError,
    CastTypeError,
    DataTypeError,
    NodeTypeError,
    NotSupportedError,
    ReadOnlyError,
    SelectionTypeError,
    SelectionValueError,
    SpecError,
)
from .indexing import (
    Plan,
    chunk_region,
    numpy_plan,
    orthogonal_plan,
    vectorized_plan,
)
from .info import ArrayInfo
from .kvstore import open_kvstore
from .kvstore.base import KvStore
from .metadata.names import normalize_path
from .metadata.v3 import ArrayMetadataV3
from .node import Node
from .selection_methods import SelectionMethods, pop_fields
from .spec.dim_expression import DimExpression
from .spec.node import SpecNode
from .spec.view import as_numpy
from .v2_chunk_keys import chunk_store

#: Resizes visit every chunk of grids up to this size, and list the stored keys of larger ones.
_ENUMERATE_GRID_UP_TO = 1 << 16


class Array(Node, SpecNode, SelectionMethods):
    """A Zarr array. Index it like a numpy array; `oindex`/`vindex` for array indices."""

    def __init__(self, store: KvStore, path: str = "", metadata: ArrayMetadataV3 | None = None,
                 *, read_only: bool = False, write_empty_chunks: bool = False) -> None:
        if self.set_up_already(store, metadata):  # zarr-python's Array(async_array)
            return
        assert metadata is not None
        self.store = store
        self.path = path
        # v1 is a read-only format here: zarrkit.convert upgrades it.
        self.read_only = read_only or store.read_only or formats.format_of(metadata) == 1
        self.write_empty_chunks = write_empty_chunks
        self._set_metadata(metadata)

    @classmethod
    def open(cls, store: Any, *, zarr_format: int | None = None) -> Array:
        """zarr-python's `Array.open`: the existing array at `store` (a path, URL, spec or
        store object)."""
        kvstore, path = open_kvstore(store)
        path = normalize_path(path)
        found = storage.find_node(kvstore, path, formats.check_format(zarr_format))
        if not formats.is_array(found.metadata):
            raise NodeTypeError(f"/{path} is a group, not an array")
        return cls(kvstore, path, found.metadata)

    def _set_metadata(self, metadata: ArrayMetadataV3) -> None:
        self._metadata = metadata
        # The stored metadata bytes known to match this handle's shape; unknown after a change.
        self._document_seen: bytes | None = None
        prefix = storage.prefix_of(self.path)
        encode = metadata.chunk_key_encoding.encode
        key: Callable[[tuple[int, ...]], str] = (lambda c: prefix + encode(c)) if prefix \
            else encode
        self._engine = chunk_io.ChunkedArray(
            chunk_store(self.store, metadata, prefix), metadata.shape, metadata.chunk_shape,
            metadata.codec_chain, metadata.effective_fill_value, key,
            self.write_empty_chunks or getattr(metadata, "missing_chunks_undefined", False),
            **self._engine_options())

    # -- description -----------------------------------------------------------------------------


    @property
    def shape(self) -> tuple[int, ...]:
        return self._metadata.shape

    @property
    def dtype(self) -> np.dtype:
        return self._metadata.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise NodeTypeError(f"len() of a 0-d array ({self.name})")
        return self.shape[0]

    def __iter__(self) -> Iterator[Any]:
        """The elements along the first axis, as numpy yields them (`islice()`)."""
        return self.islice()

    def islice(self, start: int | None = None, end: int | None = None) -> Iterator[Any]:
        """`self[i]` for i in range(start, end) (zarr-python 2's name), read one block of
        rows a chunk high at a time: row by row, each row's chunks were read and decoded again
        for every row they hold (2000 rows of 100-row chunks: 1.3 s against 20 ms)."""
        if not self.shape:
            raise NodeTypeError(f"iteration over a 0-d array ({self.name})")
        try:
            first, stop, _ = slice(start, end).indices(self.shape[0])
        except TypeError:
            raise SelectionTypeError(f"islice takes integers or None, not {start!r} and {end!r}"
                                     ) from None
        return self._rows(first, stop)

    def _rows(self, first: int, stop: int) -> Iterator[Any]:
        height = self.chunks[0]
        while first < stop:
            end = min(stop, (first // height + 1) * height)
            yield from self[first:end]
            first = end

    @property
    def chunks(self) -> tuple[int, ...]:
        """The inner chunks of a sharded array (in the array's dimensions: a transpose before
        the sharding permutes them), else the chunk shape."""
        return self._engine.inner_chunks or self._engine.chunk_shape

    @property
    def shards(self) -> tuple[int, ...] | None:
        """The shard shape (the chunk grid's shape) of a sharded array, else None."""
        return self._metadata.chunk_shape if self._engine.inner_chunks is not None else None

    @property
    def fill_value(self) -> Any:
        return self._metadata.fill_value

    @property
    def dimension_names(self) -> tuple[str | None, ...] | None:
        return self._metadata.dimension_names

    @property
    def cdata_shape(self) -> tuple[int, ...]:
        """Chunks per dimension: of a sharded array its inner chunks, as in zarr-python 3."""
        return tuple(-(-s // c) for s, c in zip(self.shape, self.chunks, strict=True))

    # The codecs in zarr-python's terms: of a sharded array those of its inner chunks (what a
    # user chose: the sharding codec only wraps them); of a v2 array its numcodecs objects.
    @property
    def filters(self) -> tuple[Any, ...]:
        """The array->array codecs run before serializing (v2: the filters)."""
        v2 = self._v2_codec()
        return v2.filters if v2 is not None else self._chunk_codecs().array_array

    @property
    def serializer(self) -> ArrayBytesCodec | None:
        """The array->bytes codec; None for v2, whose chunks have no such separate step."""
        return None if self._v2_codec() is not None else self._chunk_codecs().array_bytes

    @property
    def compressors(self) -> tuple[Any, ...]:
        """The bytes->bytes codecs run after serializing (v2: the compressor, if any)."""
        v2 = self._v2_codec()
        if v2 is not None:
            return () if v2.compressor is None else (v2.compressor,)
        return self._chunk_codecs().bytes_bytes

    @property
    def compressor(self) -> Any:
        """A v2 (or v1) array's compressor (a numcodecs codec), or None. NodeTypeError for a v3
        array, whose bytes->bytes codecs are `compressors`, as in zarr-python."""
        v2 = self._v2_codec()
        if v2 is None:
            raise NodeTypeError(f"array {self.name} is Zarr v3: its bytes->bytes codecs are "
                                "`compressors`; a single `compressor` is v2's")
        return v2.compressor

    @property
    def order(self) -> str:
        """The order of the elements in a chunk: v2's and v1's "C" or "F"; "C" for v3 (a
        transpose codec says otherwise). Reads return C-ordered arrays either way."""
        return str(getattr(self._metadata, "order", "C"))

    def _v2_codec(self) -> V2ChunkCodec | None:
        codec = self._metadata.codec_chain.array_bytes
        return codec if isinstance(codec, V2ChunkCodec) else None

    def _chunk_codecs(self) -> CodecChain:
        sharding = self._engine.sharding
        return sharding.inner if sharding is not None else self._metadata.codec_chain

    @property
    def nchunks(self) -> int:
        """The chunks of the array (of a sharded array its inner chunks): `cdata_shape`'s
        product, as in zarr-python 3."""
        return math.prod(self.cdata_shape)

    @property
    def nshards(self) -> int:
        """The shards of the array (the stored objects' grid); `nchunks` when it is not
        sharded, as zarr-python's `_nshards`."""
        return chunk_io.nchunks(self.shape, self._metadata.chunk_shape)

    @property
    def attrs(self) -> Attributes:
        return Attributes(lambda: self._metadata.attributes, self._update_attributes)

    def _update_attributes(self, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        self._check_writable()
        key = storage.metadata_key(self.path)
        with self.store.lock(key):
            current = storage.read_node(self.store, self.path, self.zarr_format)
            if not formats.is_array(current):  # replaced since opened: writing would undo it
                raise NodeTypeError(f"{self.name} is now a group, not the array this handle "
                                    "opened; open it again")
            if type(current) is not type(self._metadata):
                current = self._metadata
            attrs = dict(current.attributes)
            change(attrs)
            updated = current.evolve(attributes=attrs)
            storage.write_attributes(self.store, self.path, updated)
            self._publish_metadata(updated)  # to handles sharing a spec's context
        self._set_metadata(updated)
        return attrs

    @property
    def async_array(self) -> Any:
        """zarr-python's asynchronous handle on this array (`zarrkit.AsyncArray`; the same
        one while it lives); also `_async_array`, as zarr-python's programs reach it."""
        from .asynchronous import async_node  # the async layer wraps the nodes

        return async_node(self)

    _async_array = async_array

    def update_attributes(self, new_attributes: dict[str, Any]) -> Array:
        """`attrs.update(new_attributes)` (zarr-python's name), returning the array to chain."""
        self.attrs.update(new_attributes)
        return self

    def __repr__(self) -> str:
        return f"<zarrkit.Array {self.name} shape={self.shape} dtype={self.dtype}>"

    def _repr_html_(self) -> str:
        """A compact table for notebooks."""
        from .describe import array_html  # describe imports the node modules

        return array_html(self)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as its spec, whose metadata spares every unpickled copy (dask tasks) a read,
        # plus the store object, which carries what a spec leaves out (credentials). No
        # TensorStore driver describes v1, so v1 arrays travel as store, path and metadata.
        if self.zarr_format == 1:
            return _reopen, (self.store, self.path, self._metadata, self.read_only,
                             self.write_empty_chunks)
        from .spec.open import rebuild_array  # the glue module imports this one

        attributes = self._metadata.attributes if self.zarr_format == 2 else None
        return rebuild_array, (self.spec(retain_context=True).to_json(), self.store, self.path,
                               self.read_only, attributes)

    # -- reading and writing -------------------------------------------------------------------
    def __getitem__(self, selection: Any) -> Any:
        if isinstance(selection, DimExpression):  # a[d["x"][2:5]]: a lazy view, as TensorStore
            return self.view[selection]
        fields, selection = pop_fields(selection, self.dtype)
        if fields is not None:  # numpy's a["x"], zarr-python's a[0:2, "x"]
            return self._get(lambda into: self._read_into(selection, into), None, fields, None)
        return self._read_into(selection, None)

    def _read_into(self, selection: Any, out: np.ndarray | None) -> Any:
        """`self[selection]`, decoded straight into `out` when it is the result's exact
        buffer (else a new array; the caller copies)."""
        if self._rechecks_metadata:  # recheck_cached_metadata (spec/node.py)
            self._recheck_metadata()
        return self._read(self._plan(selection), out)

    def __setitem__(self, selection: Any, value: Any) -> None:
        if isinstance(selection, DimExpression):
            self.view[selection] = value
            return
        fields, selection = pop_fields(selection, self.dtype)
        if fields is not None:
            self._set(self, selection, value, fields, None)
            return
        self._write(lambda: self._plan(selection), value)

    def _plan(self, selection: Any) -> Plan:
        return numpy_plan(selection, self.shape, self._engine.read_chunk_shape)

    def _read(self, plan: Plan, out: np.ndarray | None = None) -> Any:
        if out is not None and not (plan.as_is and out.shape == plan.buffer_shape
                                    and out.dtype == self.dtype and out.flags.c_contiguous):
            out = None
        result = chunk_io.read(self._reading_engine(), plan, out)
        result = result if out is None else out  # (finish gave a view of it)
        return result[()] if result.ndim == 0 else result

    def _reading_engine(self) -> chunk_io.ChunkedArray:
        """The engine that reads the data the user asks for (a transaction counts its reads)."""
        return self._engine

    def _engine_on(self, store: KvStore) -> chunk_io.ChunkedArray:
        """This handle's engine, its chunks read and written through `store`."""
        return dataclasses.replace(self._engine, store=chunk_store(
            store, self._metadata, storage.prefix_of(self.path)))

    def _write(self, make_plan: Callable[[], Plan], value: Any) -> None:
        """Plan and write while holding the shared shape lock, against the stored shape (so a
        concurrent resize/append is never interleaved with the write: docs/concurrency.md)."""
        self._check_writable()
        value = self._as_values(value)
        with self.store.lock_shared(guard.shape_lock_key(self.path)):
            self._follow_resize()
            self._write_planned(make_plan(), value)

    def _set_fields(self, selection: Any, value: Any, names: list[str]) -> None:
        """`self[selection] = value` for the fields `names` only (zarr-python's `fields=`)."""
        self._write_fields(lambda: self._plan(selection), value, names)

    def _write_fields(self, make_plan: Callable[[], Plan], value: Any, names: list[str]) -> None:
        """`_write` of the fields `names` of the selected records; the others are kept."""
        self._check_writable()
        with self.store.lock_shared(guard.shape_lock_key(self.path)):
            self._follow_resize()
            plan = make_plan()
            chunk_io.write_fields(self._engine, plan,
                                  self._field_records(value, names, plan.out_shape), names)

    def _field_records(self, value: Any, names: list[str], shape: tuple[int, ...]) -> np.ndarray:
        """`value` as records of `shape` holding the fields `names` (in that order): a
        structured value's fields by position, else the one field's values, cast as numpy
        assigns them; its shape must broadcast to the selection's (SelectionError)."""
        records = np.empty(shape, np.dtype([(n, self.dtype.fields[n][0]) for n in names]))
        structured = getattr(value, "dtype", None) is not None and value.dtype.names is not None
        # One field's records hold its sub-array axes (if any) after the selection's.
        target = records[names[0]] if len(names) == 1 and not structured else records
        try:
            values = np.asarray(value) if structured else np.asarray(value, dtype=target.dtype)
            values = _fitted(values, target.shape)
            target[...] = values
        except SelectionValueError:  # the value's shape, not its data type (a ValueError too)
            raise
        except (TypeError, ValueError, OverflowError) as e:
            raise _cast_error(e)(f"cannot write {_short(value)} to the fields {names} of array "
                                 f"{self.name}: {e}") from None
        return records

    def _as_values(self, value: Any) -> np.ndarray:
        """`value` in the array's data type, cast as numpy assigns it: straight from Python
        objects (so a tuple is one structured element and an out-of-range integer is an error,
        not wrapped; numpy's scalars as their Python values, as numpy takes them: an int64 of
        70000 or a NaN into int16 is an error too), unsafely from arrays."""
        given = value
        if isinstance(value, np.number) and self.dtype.kind in "iu":
            value = value.item()
        try:
            return np.asarray(value, dtype=self.dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise _cast_error(e)(f"cannot write {_short(given)} to array {self.name} of data "
                                 f"type {self.dtype}: {e}") from None

    #: False while the code that has just created the array fills it (`from_array`): no other
    #: handle can have resized it yet, so writes need not read its metadata first.
    _follows_resizes = True

    def _follow_resize(self) -> None:
        """Adopt the stored metadata when another handle has changed the shape."""
        if self._metadata_assumed or not self._follows_resizes:  # (assume_metadata: zarr.json
            return  # is never read)
        seen = self._shared_snapshot()
        key = guard.document_key(self.path, self._metadata)
        raw = guard.read_document(self.store, key, self.name)
        if raw == self._document_seen:
            return
        guard.check_layout(self.store, self.path, self._metadata, raw, key, self.name)
        if guard.shape_changed(raw, key, self.shape):
            self._set_metadata(guard.stored_metadata(self.store, self.path, self._metadata,
                                                     self.name))
            self._offer_metadata(seen)  # to handles sharing a spec's context
        self._document_seen = raw

    def _write_planned(self, plan: Plan, value: np.ndarray) -> None:
        chunk_io.write(self._engine, plan, _fitted(value, plan.out_shape))

    def _check_writable(self) -> None:
        if self.read_only:
            why = (" (Zarr v1 is read only: zarrkit.convert copies it to v2 or v3)"
                   if self.zarr_format == 1 else "")
            raise ReadOnlyError(f"array {self.name} is read-only{why}")

    @property
    def oindex(self) -> _Indexer:
        """Orthogonal (outer) indexing: each axis by integer, slice, integer or boolean array."""
        return _Indexer(self, orthogonal_plan)

    @property
    def vindex(self) -> _Indexer:
        """Vectorized (point) indexing with broadcast coordinate arrays, or a boolean mask."""
        return _Indexer(self, vectorized_plan)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        # (`read()` is TensorStore's, returning a future: spec/node.py)
        return as_numpy(lambda: np.asarray(self[...]), dtype, copy, f"array {self.name}")

    # -- changing the shape ----------------------------------------------------------------------
    def resize(self, *shape: Any, **options: Any) -> Any:
        """Change the shape. Data outside the new shape is erased, so growing again later shows
        the fill value there, never stale values. Waits for writes of the array in progress
        (in any thread or process sharing the store's locks) and holds off new ones.

        zarr-python's `delete_outside_chunks=False` leaves the stored chunks as they are (no
        chunk is read, rewritten or deleted): growing again shows their old values, as in
        zarr-python, until a write of an edge chunk, which stores the fill value beyond the
        shape (as every write of an edge chunk here; zarr-python keeps the old values).

        TensorStore's keywords also work (`exclusive_max=`, `inclusive_min=`, `expand_only=`,
        `shrink_only=`, `resize_metadata_only=`); they return the array."""
        erase = options.pop("delete_outside_chunks", True)
        if not isinstance(erase, bool):
            raise SpecError(f"resize: delete_outside_chunks must be True or False; got {erase!r}")
        if options:
            unknown = sorted(set(options) - _TS_RESIZE_KEYWORDS)
            if unknown or not erase:
                raise SpecError(f"resize: unexpected keyword argument(s) {unknown}" if unknown
                                else "resize: delete_outside_chunks is zarr-python's keyword; "
                                "TensorStore's keywords take resize_metadata_only=True instead")
            return self._resize_spec(*shape, **options)
        items = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape
        try:
            # operator.index, not int: 2.9 or "3" is refused, never truncated (data is erased)
            new_shape = tuple(operator.index(s) for s in items)
        except TypeError:
            raise SelectionTypeError(f"cannot resize array {self.name} to {shape!r}: expected "
                                     "integers") from None
        self._resize_to(new_shape, erase)
        return None

    def _resize_to(self, new_shape: tuple[int, ...], erase: bool = True) -> None:
        self._check_writable()
        with self.store.lock(guard.shape_lock_key(self.path)):
            self._adopt_stored_metadata()
            self._resize_locked(new_shape, erase)

    def _adopt_stored_metadata(self) -> None:
        if self._metadata_assumed:
            raise NotSupportedError(f"array {self.name} was opened with assume_metadata: its "
                                    "stored metadata is neither read nor written")
        self._set_metadata(guard.stored_metadata(self.store, self.path, self._metadata,
                                                 self.name))

    def _resize_locked(self, new_shape: tuple[int, ...], erase: bool = True) -> None:
        """Resize while holding the exclusive shape lock, from the stored shape (`erase`:
        delete the data outside the new shape)."""
        if len(new_shape) != self.ndim or any(s < 0 for s in new_shape):
            raise SelectionValueError(f"cannot resize array {self.name} of rank {self.ndim} "
                                      f"to {new_shape}")
        self._metadata.evolve(shape=new_shape)  # refuses an unstorable shape before erasing
        if erase:
            self._erase_outside(new_shape)
        with self.store.lock(storage.metadata_key(self.path)):
            # Re-read: attributes may have changed while chunks were erased.
            current = guard.stored_metadata(self.store, self.path, self._metadata, self.name)
            updated = current.evolve(shape=new_shape)
            storage.write_metadata(self.store, self.path, updated)
            self._publish_metadata(updated)  # to handles sharing a spec's context
        self._set_metadata(updated)

    def _erase_outside(self, new_shape: tuple[int, ...]) -> None:
        """Delete the chunks beyond `new_shape` and set the stored part of the edge chunks
        beyond it to the fill value, before the metadata changes (docs/concurrency.md)."""
        old_shape, grid_chunks = self.shape, self._metadata.chunk_shape
        if all(n >= o for n, o in zip(new_shape, old_shape, strict=True)):
            return
        doomed, edges = [], {}
        for coords, key in self._chunks_to_check(old_shape, grid_chunks):
            region = chunk_region(coords, grid_chunks, old_shape)
            # A listed key beyond the old shape is stale: it would show when the array grows.
            if any(r.start >= min(n, o) for r, n, o in zip(region, new_shape, old_shape,
                                                            strict=True)):
                doomed.append(key)
            elif any(r.stop > n for r, n in zip(region, new_shape, strict=True)):
                edges[key] = region
        self.store.delete_many(doomed)
        # Only stored edge chunks: erasing an absent one would store it (write_empty_chunks).
        fill = np.asarray(self._engine.fill_value)
        # Inner chunks (the innermost of nested shards) wholly beyond the new shape end absent
        # whatever write_empty_chunks says: they are erased by an engine that drops chunks left
        # all fill, and keeps as they were the stored ones it re-encodes without touching.
        dropping = dataclasses.replace(self._engine, write_empty_chunks=False,
                                       keep_stored=self._engine.write_empty_chunks)
        unit = self._engine.innermost_chunks or self._engine.read_chunk_shape
        for key, stored in zip(edges, self.store.exists_many(list(edges)), strict=True):
            if stored:  # (the caller holds the exclusive shape lock: write without taking it)
                for beyond, sel in _erasures(edges[key], new_shape, unit):
                    chunk_io.write(dropping if beyond else self._engine, self._plan(sel), fill)

    def _chunks_to_check(self, shape: tuple[int, ...], grid_chunks: tuple[int, ...]
                         ) -> Iterator[tuple[tuple[int, ...], str]]:
        """(grid position, key) of every chunk of the grid when it is small; otherwise of
        every stored chunk (listing costs what is stored, the grid can have 10**12 chunks)."""
        counts = [-(-s // c) for s, c in zip(shape, grid_chunks, strict=True)]
        if math.prod(counts) <= _ENUMERATE_GRID_UP_TO:
            return ((c, self._engine.key(c)) for c in np.ndindex(*counts))
        return self._stored_chunks()

    def _stored_chunks(self, keys: list[str] | None = None
                       ) -> Iterator[tuple[tuple[int, ...], str]]:
        """Stored keys under the array's prefix (the listed `keys`, listed here if not given)
        that are chunk keys of its encoding and rank (metadata documents and anything else is
        not)."""
        prefix = storage.prefix_of(self.path)
        decode, ndim = self._metadata.chunk_key_encoding.decode, self.ndim
        for key in list(self.store.list_prefix(prefix)) if keys is None else keys:
            coords = decode(key[len(prefix):], ndim)
            if coords is not None:
                yield coords, key

    def append(self, data: Any, axis: int = 0) -> tuple[int, ...]:
        """Grow along `axis` and write `data` at the end. Returns the new shape.

        Atomic with respect to other appends and resizes (it holds the exclusive shape lock
        from reading the current shape to writing the data), so concurrent appends from
        several threads or processes each get their own rows."""
        self._check_writable()
        data = self._as_values(data)
        if data.ndim != self.ndim or not -self.ndim <= axis < self.ndim:
            raise SelectionValueError(f"cannot append {data.ndim}-d data to {self.ndim}-d array "
                                      f"{self.name} along axis {axis}")
        axis = axis + self.ndim if axis < 0 else axis
        with self.store.lock(guard.shape_lock_key(self.path)):
            self._adopt_stored_metadata()
            old = self.shape
            for i in range(self.ndim):
                if i != axis and data.shape[i] != old[i]:
                    raise SelectionValueError(f"cannot append data of shape {data.shape} to array "
                                              f"of shape {old} along axis {axis}")
            new_shape = tuple(o + data.shape[i] if i == axis else o for i, o in enumerate(old))
            self._resize_locked(new_shape)
            sel = tuple(slice(old[i], None) if i == axis else slice(None)
                        for i in range(self.ndim))
            try:
                self._write_planned(self._plan(sel), data)
            except BaseException as exc:
                self._shrink_back(old, exc)
                raise
        return new_shape

    def _shrink_back(self, old: tuple[int, ...], exc: BaseException) -> None:
        """After a failed append (shape lock held): back to the shape before it, erasing what
        was written of the new rows; left grown, they read as fill values and the next append
        lands after them. If that fails too, the grown shape stays, noted on `exc`."""
        try:
            self._resize_locked(old)
        except Exception as undo:
            exc.add_note(f"array {self.name} keeps the shape {self.shape}: shrinking it back "
                         f"to {old} failed too ({undo})")

    # -- storage ---------------------------------------------------------------------------------
    def nbytes_stored(self) -> int:
        """The bytes of every key under the array's prefix (sizes asked for concurrently)."""
        prefix = storage.prefix_of(self.path)
        return sum(chunk_io.stored_sizes(self.store, list(self.store.list_prefix(prefix))))

    @property
    def nchunks_initialized(self) -> _Count:
        """The chunks stored. A property, as in zarr-python 2 and 3 (a method,
        `a.nchunks_initialized == 4` was silently False there), that can still be called as
        the method it was here. Of a sharded array the inner chunks within the array's bounds
        that its stored shards hold, from their indexes (read concurrently): exact, where
        zarr-python 3.1 counts stored shards times chunks per shard (a shard holding one
        chunk counts whole, and edge shards can take the count above `nchunks`)."""
        if self._engine.inner_chunks is not None:
            return _Count(chunk_io.inner_chunks_stored(self._engine, self._stored_shards()))
        return self._objects_stored()

    def _stored_figures(self) -> tuple[int, int, int | None]:
        """(bytes, chunks and shards stored; shards None when unsharded) from one listing, with
        the keys' sizes and then the stored shards' indexes read concurrently: what
        `info_complete` and the notebook display show, at one round of requests each."""
        prefix = storage.prefix_of(self.path)
        keys = list(self.store.list_prefix(prefix))
        nbytes = sum(chunk_io.stored_sizes(self.store, keys))
        if self._engine.inner_chunks is None:
            return nbytes, self._objects_stored(keys), None
        shards = self._stored_shards(keys)
        return nbytes, chunk_io.inner_chunks_stored(self._engine, shards), len(shards)

    @property
    def nshards_initialized(self) -> _Count:
        """The shards stored (a property that can also be called, as `nchunks_initialized`);
        `nchunks_initialized` when the array is not sharded, as zarr-python's
        `_nshards_initialized`."""
        if self._engine.inner_chunks is not None:
            return _Count(len(self._stored_shards()))
        return self._objects_stored()

    def _stored_shards(self, keys: list[str] | None = None) -> list[tuple[int, ...]]:
        """Grid positions of the stored shards inside the shard grid (of the listed `keys`,
        listed here if not given)."""
        grid = self._metadata.grid_shape  # sharded: v3
        return [c for c, _ in self._stored_chunks(keys)
                if all(i < n for i, n in zip(c, grid, strict=True))]

    def _objects_stored(self, keys: list[str] | None = None) -> _Count:
        """The stored chunks of an unsharded array's grid (of the listed `keys`, listed here
        if not given): not those beyond its shape, which a resize with
        `delete_outside_chunks=False` keeps (zarr-python counts the grid's keys too)."""
        grid = self.cdata_shape
        return _Count(sum(1 for c, _ in self._stored_chunks(keys)
                          if all(i < n for i, n in zip(c, grid, strict=True))))

    @property
    def info(self) -> ArrayInfo:
        """A summary from the metadata alone, as zarr-python's: no store reads."""
        return ArrayInfo(self)

    def info_complete(self) -> ArrayInfo:
        """`info` with the bytes, inner chunks and shards stored (lists the store and reads
        one index per stored shard)."""
        return ArrayInfo(self, complete=True)

    def with_config(self, config: dict[str, Any] | None = None, **options: Any) -> Array:
        """This array under other handle settings, zarr-python's array config (a dict or
        keywords): `write_empty_chunks`, and `order` "C" (reads are always C-ordered)."""
        write_empty = configured_write_empty(config, options, self.write_empty_chunks,
                                             "with_config")
        other = _reopen(self.store, self.path, self._metadata, self.read_only, write_empty)
        self._share_open_state(other)  # the spec's cache pool, fill_missing_data_reads, ...
        return other


#: The keywords of TensorStore's resize (`Array.resize` passes them on to the spec layer).
_TS_RESIZE_KEYWORDS = {"inclusive_min", "exclusive_max", "expand_only", "shrink_only",
                       "resize_metadata_only"}


def _erasures(region: tuple[slice, ...], shape: tuple[int, ...], inner: tuple[int, ...]
              ) -> Iterator[tuple[bool, tuple[slice, ...]]]:
    """The parts of an edge chunk's `region` beyond `shape` to set to the fill value, each with
    whether its inner chunks lie wholly beyond `shape` (to be dropped) or straddle it."""
    ends = [-(-n // c) * c for n, c in zip(shape, inner, strict=True)]  # first inner start beyond
    for axis, (r, end) in enumerate(zip(region, ends, strict=True)):
        if r.stop > end:  # whole inner chunks beyond, along this axis
            yield True, region[:axis] + (slice(max(end, r.start), r.stop),) + region[axis + 1:]
    within = tuple(slice(r.start, min(r.stop, end)) for r, end in zip(region, ends, strict=True))
    for axis, (r, n) in enumerate(zip(within, shape, strict=True)):
        if r.stop > n:  # the part beyond `shape` of inner chunks that straddle it
            yield False, within[:axis] + (slice(n, r.stop),) + within[axis + 1:]


def configured_write_empty(config: Any, options: dict[str, Any], current: bool,
                           what: str) -> bool:
    """`write_empty_chunks` under zarr-python's array config (a dict or its `ArrayConfig`,
    and keywords): `current` unless set; `order` must be "C" (reads are C-ordered)."""
    if config is not None and not isinstance(config, dict):
        if not hasattr(config, "write_empty_chunks"):  # zarr-python's ArrayConfig has both
            raise SpecError(f"{what}: config must be a dict; got {config!r}")
        config = {"write_empty_chunks": config.write_empty_chunks,
                  "order": getattr(config, "order", "C")}
    settings = {**(config or {}), **options}
    unknown = sorted(map(repr, set(settings) - {"write_empty_chunks", "order"}))
    if unknown:  # names may be of any type
        raise SpecError(f"{what}: unknown settings {', '.join(unknown)}; "
                        "write_empty_chunks and order are known")
    if not (isinstance(order := settings.get("order", "C"), str) and order == "C"):
        raise SpecError(f"{what}: order must be 'C' (reads return C-ordered arrays); "
                        f"got {settings['order']!r}")
    write_empty = settings.get("write_empty_chunks", current)
    if not isinstance(write_empty, bool | np.bool_):
        raise SpecError(f"{what}: write_empty_chunks must be True or False; got "
                        f"{write_empty!r}")
    return bool(write_empty)


class _Count(int):
    """An int that calling returns (`nchunks_initialized` and `nshards_initialized` as
    properties and as methods)."""

    def __call__(self) -> int:
        return int(self)


class _Indexer:
    def __init__(self, array: Array, planner: Callable[..., Plan]) -> None:
        self._array = array
        self._planner = planner

    def __getitem__(self, selection: Any) -> Any:
        fields, selection = pop_fields(selection, self._array.dtype)
        if fields is not None:  # zarr-python's a.oindex[[0, 2], "x"]
            return self._array._get(lambda into: self._read_into(selection, into), None,
                                    fields, None)
        return self._read_into(selection, None)

    def _read_into(self, selection: Any, out: np.ndarray | None) -> Any:
        a = self._array
        if a._rechecks_metadata:  # recheck_cached_metadata (spec/node.py)
            a._recheck_metadata()
        return a._read(self._planner(selection, a.shape, a._engine.read_chunk_shape), out)

    def __setitem__(self, selection: Any, value: Any) -> None:
        a = self._array
        fields, selection = pop_fields(selection, a.dtype)
        if fields is not None:
            a._set(self, selection, value, fields, None)
            return
        a._write(lambda: self._planner(selection, a.shape, a._engine.read_chunk_shape), value)

    def _set_fields(self, selection: Any, value: Any, names: list[str]) -> None:
        a = self._array
        a._write_fields(lambda: self._planner(selection, a.shape, a.chunks), value, names)


def _fitted(value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`value` without the leading length-1 axes numpy ignores in assignments, checked to
    broadcast to `shape` (numpy's rule: the value's shape, not the broadcast of both)."""
    extra = value.ndim - len(shape)
    if extra > 0 and all(n == 1 for n in value.shape[:extra]):
        value = value.reshape(value.shape[extra:])
    try:
        fits = np.broadcast_shapes(value.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:  # a ValueError too, as numpy's and zarr-python's
        raise SelectionValueError(f"cannot write a value of shape {value.shape} into a selection "
                                  f"of shape {shape}")
    return value


def _cast_error(e: Exception) -> type[DataTypeError]:
    """The error for a value the data type cannot take, of numpy's kind for it (`e`): a
    TypeError (a complex into a float array), an OverflowError (300 into uint8), else a
    ValueError ("abc" into int)."""
    if isinstance(e, OverflowError):
        return CastOverflowError
    return CastTypeError if isinstance(e, TypeError) else DataTypeError


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _reopen(store: KvStore, path: str, metadata: Any, read_only: bool,
            write_empty_chunks: bool) -> Array:
    return Array(store, path, metadata, read_only=read_only,
                 write_empty_chunks=write_empty_chunks)

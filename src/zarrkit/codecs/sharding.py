"""The `sharding_indexed` codec: a shard holds many inner chunks plus an index of where each is.

The codec is bound to a shard shape by `evolve`, which builds the inner and index codec chains;
the engine can use `index_byte_range`, `decode_index` and `inner.decode` to read single inner
chunks, and `encode_shard` to write a shard from already-encoded inner chunks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Self

import numpy as np

from ..errors import CodecError, CorruptDataError
from ..kvstore.base import ByteRange
from ..scratch import SCRATCH_LIMIT, empty, trim_scratch, whole_scratch
from ._buffers import byte_view, nbytes
from ._config import check_members, get_choice, get_list, get_shape
from .base import ArrayBytesCodec, Buffer, BytesBytesCodec, ChunkSpec, Codec
from .bytes import BytesCodec
from .chain import CodecChain, check_order
from .crc32c import Crc32cCodec
from .registry import parse_codec, register_codec

EMPTY = 2**64 - 1  # offset and nbytes of an absent inner chunk
_LOCATIONS = ("start", "end")
_NAME = "sharding_indexed"


@register_codec
class ShardingCodec(ArrayBytesCodec):
    name = _NAME

    def __init__(self, chunk_shape: Sequence[int], codecs: Sequence[Codec] = (BytesCodec(),),
                 index_codecs: Sequence[Codec] = (BytesCodec(), Crc32cCodec()),
                 index_location: str = "end") -> None:
        self.chunk_shape = get_shape({"chunk_shape": _listed(chunk_shape)}, "chunk_shape", _NAME)
        self.codecs = tuple(get_list({"codecs": _listed(codecs)}, "codecs", _NAME))
        self.index_codecs = tuple(get_list({"index_codecs": _listed(index_codecs)}, "index_codecs", _NAME))
        self.index_location: str = get_choice(
            {"index_location": index_location}, "index_location", _NAME, _LOCATIONS)
        check_order(self.codecs, f"{_NAME}.codecs")
        check_order(self.index_codecs, f"{_NAME}.index_codecs")
        for i, codec in enumerate(self.index_codecs):
            if isinstance(codec, BytesBytesCodec) and codec.encoded_size(16) is None:
                raise CodecError(f"{_NAME}.index_codecs[{i}]: {codec.name!r} has a variable encoded size, "
                                 "which the shard index cannot use")
        self.spec: ChunkSpec | None = None  # set by evolve(), with the attributes below
        self.inner: CodecChain
        self.index: CodecChain
        self.chunks_per_shard: tuple[int, ...]
        self.index_nbytes: int

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Self:
        check_members(config, ("chunk_shape", "codecs", "index_codecs", "index_location"), _NAME)
        chunk_shape = get_shape(config, "chunk_shape", _NAME)
        chains = {key: [parse_codec(c, where=f"{_NAME}.{key}[{i}]")
                        for i, c in enumerate(get_list(config, key, _NAME))]
                  for key in ("codecs", "index_codecs")}
        location = get_choice(config, "index_location", _NAME, _LOCATIONS, default="end")
        return cls(chunk_shape, chains["codecs"], chains["index_codecs"], location)

    def to_json(self) -> dict[str, Any]:
        return {"name": _NAME, "configuration": {
            "chunk_shape": list(self.chunk_shape),
            "codecs": [c.to_json() for c in self.codecs],
            "index_codecs": [c.to_json() for c in self.index_codecs],
            "index_location": self.index_location}}

    # -- binding to a shard shape ----------------------------------------------------------------
    def evolve(self, spec: ChunkSpec) -> ShardingCodec:
        if self.spec is spec:
            return self
        shape, inner_shape = spec.shape, self.chunk_shape
        if len(shape) != len(inner_shape) or any(s % c for s, c in zip(shape, inner_shape, strict=False)):
            raise CodecError(f"{_NAME} codec: inner chunk shape {list(inner_shape)} does not evenly divide "
                             f"the shard shape {list(shape)}")
        per_shard = tuple(s // c for s, c in zip(shape, inner_shape, strict=True))
        inner = CodecChain.from_codecs(
            self.codecs, ChunkSpec(inner_shape, spec.dtype, spec.fill_value), where=f"{_NAME}.codecs")
        index = CodecChain.from_codecs(
            self.index_codecs, ChunkSpec(per_shard + (2,), np.dtype(np.uint64), np.uint64(EMPTY)),
            where=f"{_NAME}.index_codecs")
        if index.encoded_size() is None:
            raise CodecError(f"{_NAME}.index_codecs: the index codecs must produce a fixed size")
        bound = ShardingCodec(inner_shape, inner.codecs, index.codecs, self.index_location)
        bound._bind(spec, inner, index, per_shard)
        return bound

    def _bind(self, spec: ChunkSpec, inner: CodecChain, index: CodecChain, per_shard: tuple[int, ...]) -> None:
        self.spec, self.inner, self.index = spec, inner, index
        self.chunks_per_shard = per_shard
        self.index_nbytes = index.encoded_size()  # type: ignore[assignment]
        ndim = len(per_shard)
        # shard array -> (n0, c0, n1, c1, ...) -> blocks[(i0, i1, ...)] is inner chunk (i0, i1, ...)
        self._split = tuple(x for pair in zip(per_shard, self.chunk_shape, strict=True) for x in pair)
        self._block_axes = tuple(range(0, 2 * ndim, 2)) + tuple(range(1, 2 * ndim, 2))
        self._units_axes = tuple(range(1, 2 * ndim, 2)) + (2 * ndim,)
        if spec.dtype.hasobject:  # str/bytes elements have no bits: compared by value
            return
        # Inner chunks equal to the fill value byte for byte are left out. Compare in the widest
        # unsigned unit dividing the item size: exact for NaN payloads and -0.0, unlike ==.
        itemsize = spec.dtype.itemsize
        unit = next(u for u in (8, 4, 2, 1) if itemsize % u == 0)
        self._unit = np.dtype(f"u{unit}")
        self._units_per_item = itemsize // unit
        self._fill_units = np.array(spec.fill_value, dtype=spec.dtype).reshape(1).view(self._unit)

    def _bound(self, spec: ChunkSpec) -> ShardingCodec:
        own = self.spec
        if spec is own or (own is not None and spec.shape == own.shape and spec.dtype == own.dtype
                           and _fill_bytes(spec) == _fill_bytes(own)):
            return self
        return self.evolve(spec)

    def _require_bound(self) -> None:
        if self.spec is None:
            raise CodecError(f"{_NAME} codec is not bound to a shard shape; call evolve(spec) first")

    # -- the index --------------------------------------------------------------------------------
    def index_byte_range(self) -> ByteRange:
        self._require_bound()
        if self.index_location == "end":
            return ByteRange.suffix(self.index_nbytes)
        return ByteRange(0, self.index_nbytes)

    def decode_index(self, data: Buffer, shard_size: int | None = None) -> np.ndarray:
        """The index (chunks_per_shard + (2,), uint64) from its encoded bytes, checked for sanity."""
        self._require_bound()
        if nbytes(data) != self.index_nbytes:
            raise CorruptDataError(f"{_NAME}: shard index needs {self.index_nbytes} bytes, got {nbytes(data)}"
                                   + ("" if shard_size is None else f" (shard of {shard_size} bytes)"))
        try:
            index = self.index.decode(data)
        except CorruptDataError as e:
            raise type(e)(f"{_NAME}: shard index: {e}") from e
        pairs = index.reshape(-1, 2)
        offsets, sizes = pairs[:, 0], pairs[:, 1]
        # The usual case in three steps: every entry present and inside the shard, or below
        # EMPTY when its size is not known. An entry with an EMPTY part has an end that wraps
        # or is EMPTY itself. 21 (35 without a size) -> 10 us per index.
        ends = offsets + sizes
        if (ends >= offsets).all() and ends.max(initial=0) <= (EMPTY - 1 if shard_size is None
                                                                else shard_size):
            return index
        absent = offsets == EMPTY
        bad = absent != (sizes == EMPTY)
        present = ~absent
        ends = offsets + sizes  # uint64 wraps: a wrapped end is below its offset
        bad |= present & (ends < offsets)
        if shard_size is not None:
            bad |= present & (ends > shard_size)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise CorruptDataError(
                f"{_NAME}: shard index entry for inner chunk {self._coords([k])[0]} (offset {int(offsets[k])}, "
                f"nbytes {int(sizes[k])}) is invalid"
                + ("" if shard_size is None else f" for a shard of {shard_size} bytes"))
        return index

    def _coords(self, flats: list[int]) -> list[tuple[int, ...]]:
        """Inner chunk coordinates of C-order positions within the shard."""
        if not self.chunks_per_shard:
            return [()] * len(flats)
        axes = np.unravel_index(np.asarray(flats, dtype=np.intp), self.chunks_per_shard)
        return list(zip(*(axis.tolist() for axis in axes), strict=True))

    # -- whole shards ----------------------------------------------------------------------------
    def encode_shard(self, chunks: dict[tuple[int, ...], Buffer]) -> Buffer | None:
        """A shard holding the given encoded inner chunks (keyed by their coordinates within the
        shard; absent means empty), in C order of coordinates; None if there are none."""
        self._require_bound()
        if not chunks:
            return None
        per_shard = self.chunks_per_shard
        for coords in chunks:
            if len(coords) != len(per_shard) or not all(0 <= c < n for c, n in zip(coords, per_shard, strict=True)):
                raise ValueError(f"inner chunk {coords} is outside a shard of {per_shard} inner chunks")
        flats = self.positions(list(chunks))
        order = sorted(range(len(flats)), key=flats.__getitem__)
        buffers = list(chunks.values())
        return self._pack([flats[i] for i in order], [buffers[i] for i in order])

    def positions(self, coords: list[tuple[int, ...]]) -> list[int]:
        """The C-order positions within the shard of inner chunks at `coords`."""
        if not self.chunks_per_shard or not coords:
            return [0] * len(coords)
        grid = tuple(np.array(coords, dtype=np.intp).T)
        return np.ravel_multi_index(grid, self.chunks_per_shard).tolist()

    def _pack(self, flats: list[int], buffers: list[Buffer]) -> Buffer:
        index_bytes = self._index_bytes(flats, [nbytes(b) for b in buffers])
        if self.index_location == "start":
            return b"".join([index_bytes, *buffers])
        return b"".join([*buffers, index_bytes])

    def _index_bytes(self, flats: list[int], sizes: list[int]) -> Buffer:
        """The encoded index of inner chunks laid out one after another in `flats` order."""
        lengths = np.array(sizes, dtype=np.uint64)
        start = self.index_nbytes if self.index_location == "start" else 0
        offsets = np.cumsum(lengths, dtype=np.uint64) - lengths + np.uint64(start)
        index = np.full((math.prod(self.chunks_per_shard), 2), EMPTY, dtype=np.uint64)
        positions = np.asarray(flats, dtype=np.intp)
        index[positions, 0] = offsets
        index[positions, 1] = lengths
        return self.index.encode(index.reshape(self.chunks_per_shard + (2,)))

    def pack_transient(self, chunks: Iterable[tuple[int, Buffer]]) -> memoryview | None:
        """A shard of the inner chunks (C-order position, encoded bytes) that `chunks` yields in
        increasing position, assembled in this thread's scratch buffer: each chunk is copied in
        before the next is asked for, so they may be transient too. The result is valid until
        the thread's next call. None if `chunks` yields none."""
        self._require_bound()
        start = self.index_nbytes if self.index_location == "start" else 0
        buf, pos, flats, sizes = whole_scratch(start + self.index_nbytes, "shard"), start, [], []
        for flat, data in chunks:
            n = nbytes(data)
            if pos + n + self.index_nbytes > len(buf):
                buf = _grown(buf, pos, max(2 * len(buf), pos + n + self.index_nbytes))
            buf[pos:pos + n] = byte_view(data)
            pos += n
            flats.append(flat)
            sizes.append(n)
        trim_scratch("shard")
        return self._indexed(buf, pos, flats, sizes) if flats else None

    def _indexed(self, buf: memoryview, pos: int, flats: Any, sizes: Any) -> memoryview:
        """The shard assembled in `buf` (its inner chunks up to `pos`, after the index's room
        when the index comes first) with its index of `flats` and `sizes` put in place."""
        at = 0 if self.index_location == "start" else pos
        buf[at:at + self.index_nbytes] = byte_view(self._index_bytes(flats, sizes))
        return buf[:pos + (0 if self.index_location == "start" else self.index_nbytes)]

    def pack_region_transient(self, region: np.ndarray, skip_fill: bool) -> memoryview | None:
        """`pack_transient` of a whole shard's values (`region`: the shard's shape, any strides)
        when the inner chain encodes runs by one call (`CodecChain.encodes_many`): the inner
        chunks compressed one after another straight from `region` into the shard's buffer,
        those whose every element is the fill value left out when `skip_fill`. Valid until this
        thread's next call; None when no inner chunk is stored."""
        self._require_bound()
        per_shard, size = self.chunks_per_shard, self.inner.spec.nbytes
        count = math.prod(per_shard)
        fill = _fill_bytes(self.inner.spec) if skip_fill else None
        sizes = np.empty(count, np.int64)
        start, tail = (self.index_nbytes, 0) if self.index_location == "start" else \
            (0, self.index_nbytes)
        # Room for the whole shard uncompressed, up to the size a thread keeps: then the buffer
        # is reused from shard to shard, and grows only for shards that compress badly.
        room = start + self.inner.run_room(count) + tail
        buf = whole_scratch(min(room, max(SCRATCH_LIMIT, start + 2 * size + tail)), "shard")
        blocks = region.reshape(self._split).transpose(self._block_axes)
        buf, pos = self._encode_run(blocks, len(per_shard), fill, buf, start, sizes, room, tail)
        trim_scratch("shard")
        flats = np.flatnonzero(sizes >= 0)
        return self._indexed(buf, pos, flats, sizes[flats]) if len(flats) else None

    def _encode_run(self, blocks: np.ndarray, lead: int, fill: bytes | None, buf: memoryview,
                    pos: int, sizes: np.ndarray, room: int, tail: int) -> tuple[memoryview, int]:
        """The inner chunks of `blocks` (their grid's `lead` dimensions first) compressed into
        `buf` from `pos` on, the buffer grown (up to `room`, keeping what is assembled) when the
        next might not fit: (the buffer, the position after them)."""
        size, done = self.inner.spec.nbytes, 0
        while done < len(sizes):
            done, pos = self.inner.encode_many_into(blocks, fill, buf[:len(buf) - tail], pos,
                                                    done, sizes, lead)
            if done < len(sizes):
                buf = _grown(buf, pos, min(room, max(2 * len(buf), pos + 2 * size + tail)))
        return buf, pos

    def encode(self, array: np.ndarray, spec: ChunkSpec) -> Buffer:
        """Encode a whole shard. Inner chunks equal to the fill value are left out; if all are, the
        result is a valid shard holding only an index (it decodes to the fill value)."""
        bound = self._bound(spec)
        array = np.ascontiguousarray(array)
        present = bound._present(array)
        blocks = array.reshape(bound._split).transpose(bound._block_axes)
        flats = np.flatnonzero(present).tolist()
        encode = bound.inner.encode
        buffers = [encode(blocks[coords + (...,)]) for coords in bound._coords(flats)]
        return bound._pack(flats, buffers)

    def encode_kept(self, array: np.ndarray, spec: ChunkSpec, keep: np.ndarray) -> Buffer:
        """`encode`, also storing, even when they are the fill value, the inner chunks where
        `keep` (a bool array of the shard's shape) has an element: those a write touched under
        write_empty_chunks, and those stored before that it left alone. Nested shards keep
        their own inner chunks by the same mask."""
        bound = self._bound(spec)
        array = np.ascontiguousarray(array)
        kept_blocks = np.ascontiguousarray(keep).reshape(bound._split).transpose(bound._block_axes)
        ndim = len(bound.chunks_per_shard)
        kept = kept_blocks.any(axis=tuple(range(ndim, 2 * ndim)))
        flats = np.flatnonzero(bound._present(array) | kept).tolist()
        blocks = array.reshape(bound._split).transpose(bound._block_axes)
        inner = bound.inner
        nested = isinstance(inner.array_bytes, ShardingCodec)
        buffers = [inner.encode_kept(blocks[c + (...,)], kept_blocks[c + (...,)]) if nested
                   else inner.encode(blocks[c + (...,)]) for c in bound._coords(flats)]
        return bound._pack(flats, buffers)

    def stored_mask(self, data: Buffer) -> np.ndarray:
        """For each element of the shard `data` decodes to, whether its inner chunk is stored,
        down to the innermost level of nested shards (a bool array of the shard's shape)."""
        self._require_bound()
        view = byte_view(data)
        pairs = self._index_pairs(view)
        out = np.zeros(self.spec.shape, bool)  # type: ignore[union-attr]
        blocks = out.reshape(self._split).transpose(self._block_axes)  # views: they fill `out`
        flats = np.flatnonzero(pairs[:, 0] != EMPTY)
        for coords, offset, length in zip(self._coords(flats.tolist()), pairs[flats, 0].tolist(),
                                          pairs[flats, 1].tolist(), strict=True):
            blocks[coords + (...,)] = self.inner.stored_mask(view[offset:offset + length])
        return out

    def _present(self, array: np.ndarray) -> np.ndarray:
        """Which inner chunks of a whole shard differ from the fill value (a bool array)."""
        if array.dtype.hasobject:
            fill = self.spec.fill_value  # type: ignore[union-attr]
            same = np.frompyfunc(lambda v: type(v) is type(fill) and v == fill, 1, 1)(array)
            return ~same.astype(bool).reshape(self._split).all(axis=self._units_axes[:-1])
        units = array.reshape(-1).view(self._unit).reshape(self._split + (self._units_per_item,))
        return ~(units == self._fill_units).all(axis=self._units_axes)

    def entry_positions(self, data: Buffer) -> np.ndarray:
        """For each element of the shard `data` decodes to, its inner chunk's C-order position
        in the shard, or -1 minus that position when the index has no entry for it (an inner
        chunk not stored). For `CodecChain.shard_entries`."""
        self._require_bound()
        offsets = self._index_pairs(byte_view(data))[:, 0].reshape(self.chunks_per_shard)
        flats = np.arange(offsets.size, dtype=np.int64).reshape(offsets.shape)
        positions = np.where(offsets == EMPTY, -1 - flats, flats)
        for axis, n in enumerate(self.chunk_shape):  # each entry over its inner chunk's elements
            positions = np.repeat(positions, n, axis=axis)
        return positions

    def _index_pairs(self, view: memoryview) -> np.ndarray:
        """The shard's checked index as (offset, nbytes) rows, inner chunks in C order."""
        size, index_size = len(view), self.index_nbytes
        if size < index_size:
            raise CorruptDataError(f"{_NAME}: shard of {size} bytes is too short for its {index_size}-byte index")
        index_view = view[:index_size] if self.index_location == "start" else view[size - index_size:]
        return self.decode_index(index_view, size).reshape(-1, 2)

    def stored_chunks(self, data: Buffer) -> list[tuple[tuple[int, ...], memoryview]]:
        """Each inner chunk the shard `data` stores: its position in the shard and its encoded
        bytes, to check them one by one (`zarrkit verify`)."""
        self._require_bound()
        view = byte_view(data)
        pairs = self._index_pairs(view)
        flats = np.flatnonzero(pairs[:, 0] != EMPTY)
        return [(coords, view[offset:offset + length]) for coords, offset, length in zip(
            self._coords(flats.tolist()), pairs[flats, 0].tolist(), pairs[flats, 1].tolist(),
            strict=True)]

    def decode(self, data: Buffer, spec: ChunkSpec) -> np.ndarray:
        bound = self._bound(spec)
        view = byte_view(data)
        pairs = bound._index_pairs(view)
        present = pairs[:, 0] != EMPTY
        if not present.any():
            return np.full(spec.shape, spec.fill_value, dtype=spec.dtype)
        out = empty(spec.shape, spec.dtype)
        blocks = out.reshape(bound._split).transpose(bound._block_axes)
        if not present.all():
            blocks[~present.reshape(bound.chunks_per_shard)] = spec.fill_value
        flats = np.flatnonzero(present)
        decode = bound.inner.decode
        for coords, offset, length in zip(bound._coords(flats.tolist()), pairs[flats, 0].tolist(),
                                          pairs[flats, 1].tolist(), strict=True):
            try:
                blocks[coords + (...,)] = decode(view[offset:offset + length])
            except CorruptDataError as e:
                raise type(e)(f"{_NAME}: inner chunk {coords}: {e}") from e
        return out


def _grown(buf: memoryview, pos: int, size: int) -> memoryview:
    """This thread's shard buffer grown to `size` bytes, keeping the `pos` assembled."""
    grown = whole_scratch(size, "shard")
    grown[:pos] = buf[:pos]
    return grown


def _listed(value: Any) -> Any:
    """A sequence given in Python (tuple, numpy array) as a list for the checks; else as is."""
    return value.tolist() if isinstance(value, np.ndarray) else \
        list(value) if isinstance(value, tuple | list) else value


def _fill_bytes(spec: ChunkSpec) -> bytes:
    if spec.dtype.hasobject:  # an object array's bytes are pointers: compare the value
        return repr(spec.fill_value).encode()
    return np.array(spec.fill_value, dtype=spec.dtype).tobytes()

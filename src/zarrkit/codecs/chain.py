"""A codec chain bound to one chunk spec: parsed, ordered, evolved and checked once, then run per
chunk with no further validation (the hot path is a few precomputed calls)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from ..errors import CodecError, CorruptDataError, ZarrkitError
from ..scratch import SCRATCH_LIMIT, scratch, trim_scratch, whole_scratch
from ._buffers import byte_view, nbytes
from .base import ArrayArrayCodec, ArrayBytesCodec, Buffer, BytesBytesCodec, ChunkSpec, Codec
from .registry import parse_codec
from .transpose import TransposeCodec


def check_order(codecs: Sequence[Codec], where: str) -> None:
    """array->array*, then exactly one array->bytes, then bytes->bytes* (the spec's rule)."""
    seen_array_bytes = False
    for i, codec in enumerate(codecs):
        label = f"{where}[{i}]: {getattr(codec, 'name', codec)!r}"
        if isinstance(codec, ArrayArrayCodec):
            if seen_array_bytes:
                raise CodecError(f"{label} is an array->array codec, so it must come before the array->bytes codec")
        elif isinstance(codec, ArrayBytesCodec):
            if seen_array_bytes:
                raise CodecError(f"{label} is a second array->bytes codec; exactly one is allowed")
            seen_array_bytes = True
        elif isinstance(codec, BytesBytesCodec):
            if not seen_array_bytes:
                raise CodecError(f"{label} is a bytes->bytes codec, so it must come after an array->bytes codec")
        else:
            raise CodecError(f"{label} is not a codec")
    if not seen_array_bytes:
        raise CodecError(f"{where}: needs exactly one array->bytes codec (e.g. 'bytes'), found none")


class CodecChain:
    """The codecs of an array (or of a shard's inner chunks or index), bound to `spec`."""

    __slots__ = ("codecs", "array_array", "array_bytes", "bytes_bytes", "spec", "_encoded_size",
                 "_aa_encode", "_ab_encode", "_ab_transient", "_bb_encode", "_bb_transient", "_aa_decode",
                 "_ab_decode", "_bb_decode", "_bb_into", "_transient_into", "_direct", "_prefix",
                 "_many", "_many_size", "_many_encoder", "_many_room")

    codecs: tuple[Codec, ...]
    array_array: tuple[ArrayArrayCodec, ...]
    array_bytes: ArrayBytesCodec
    bytes_bytes: tuple[BytesBytesCodec, ...]
    spec: ChunkSpec

    @classmethod
    def from_json(cls, codecs: list[Any], spec: ChunkSpec, *, where: str = "codecs") -> CodecChain:
        if not isinstance(codecs, list | tuple) or not codecs:
            raise CodecError(f"{where}: must be a non-empty array of codecs, got {codecs!r}")
        parsed = [parse_codec(c, where=f"{where}[{i}]") for i, c in enumerate(codecs)]
        return cls.from_codecs(parsed, spec, where=where)

    @classmethod
    def from_codecs(cls, codecs: Sequence[Codec], spec: ChunkSpec, *, where: str = "codecs") -> CodecChain:
        check_order(codecs, where)
        evolved: list[Codec] = []
        specs: list[ChunkSpec] = []  # specs[i]: the decoded representation codec i receives
        current = spec
        for i, codec in enumerate(codecs):
            try:
                codec = codec.evolve(current)
                specs.append(current)
                current = codec.resolve(current)
            except CodecError as e:
                raise CodecError(f"{where}[{i}]: {e}") from e
            evolved.append(codec)
        return cls(evolved, specs, spec)

    def __init__(self, codecs: Sequence[Codec], specs: Sequence[ChunkSpec], spec: ChunkSpec) -> None:
        """Use from_json/from_codecs: this trusts `codecs` to be ordered and evolved."""
        self.codecs = tuple(codecs)
        self.spec = spec
        n_aa = next(i for i, c in enumerate(codecs) if isinstance(c, ArrayBytesCodec))
        self.array_array = tuple(codecs[:n_aa])  # type: ignore[arg-type]
        self.array_bytes = codecs[n_aa]  # type: ignore[assignment]
        self.bytes_bytes = tuple(codecs[n_aa + 1:])  # type: ignore[arg-type]
        ab_spec = specs[n_aa]
        self._aa_encode = [partial(c.encode, spec=s) for c, s in zip(self.array_array, specs, strict=False)]
        self._aa_decode = [partial(c.decode, spec=s) for c, s in zip(self.array_array, specs, strict=False)][::-1]
        self._ab_encode = partial(self.array_bytes.encode, spec=ab_spec)
        self._ab_decode = partial(self.array_bytes.decode, spec=ab_spec)
        gather = getattr(self.array_bytes, "encode_transient", None)
        self._ab_transient = self._ab_encode if gather is None else partial(gather, spec=ab_spec)
        self._bb_encode = [partial(c.encode, spec=ab_spec) for c in self.bytes_bytes]
        last = getattr(self.bytes_bytes[-1], "encode_transient", None) if self.bytes_bytes else None
        self._bb_transient = self._bb_encode if last is None else \
            [*self._bb_encode[:-1], partial(last, spec=ab_spec)]
        size = self.array_bytes.encoded_size(ab_spec)
        self._bb_into = self._decoder_into(size, ab_spec)
        small = self._bb_into is not None and 0 < size <= SCRATCH_LIMIT
        self._transient_into = self._bb_into if small else None
        # The stored bytes, once decompressed, are the chunk itself: decode_into can write them
        # straight to their destination.
        passthrough = getattr(self.array_bytes, "passthrough", None)
        self._direct = not self.array_array and passthrough is not None and passthrough(ab_spec)
        # Runs of chunks coded by one call: a lone compressor whose bytes are the chunk's own.
        runs = self._direct and len(self.bytes_bytes) == 1 and size
        self._many = getattr(self.bytes_bytes[0], "many_decoder", None) if runs else None
        encoder = getattr(self.bytes_bytes[0], "many_encoder", None) if runs else None
        self._many_encoder = encoder(size) if encoder is not None else None
        self._many_room = self.bytes_bytes[0].run_room(size) if self._many_encoder else 0
        self._many_size = size
        prefix = getattr(self.bytes_bytes[0], "decode_prefix", None) if self.bytes_bytes else None
        stops = getattr(self.bytes_bytes[0], "stops_early", None) if prefix else None
        self._prefix = partial(prefix, spec=ab_spec, size=size) if \
            self._direct and len(self.bytes_bytes) == 1 and prefix and small and \
            (stops is None or stops(size)) else None
        bb_decode: list[Callable[[Buffer], Buffer]] = []
        for codec in self.bytes_bytes:
            # When the decoded size is known, compressors can refuse to inflate beyond it.
            sized = getattr(codec, "decode_sized", None)
            if size is not None and sized is not None:
                bb_decode.append(partial(sized, spec=ab_spec, size=size))
            else:
                bb_decode.append(partial(codec.decode, spec=ab_spec))
            size = None if size is None else codec.encoded_size(size)
        self._bb_decode = bb_decode[::-1]
        self._encoded_size = size

    def encode(self, array: np.ndarray, transient: bool = False) -> Buffer:
        """Encode one chunk of exactly spec.shape and spec.dtype.

        The result may share memory with `array` (e.g. a lone `bytes` codec on native data), so it
        must be copied or consumed before `array` is modified. `transient`: it may also be this
        thread's scratch memory (no copy out of a compressor's buffer), valid until the thread
        encodes again: for a result that is stored at once and never kept.
        """
        if array.shape != self.spec.shape or array.dtype != self.spec.dtype:
            raise ValueError(f"chunk of shape {array.shape} and type {array.dtype} does not match "
                             f"the codec chain's {self.spec.shape} {self.spec.dtype}")
        for encode in self._aa_encode:
            array = encode(array)
        data = (self._ab_transient if transient else self._ab_encode)(array)
        for encode_bytes in self._bb_transient if transient else self._bb_encode:
            data = encode_bytes(data)
        return data

    def encode_kept(self, array: np.ndarray, keep: np.ndarray, transient: bool = False) -> Buffer:
        """`encode`, a sharding codec also storing the inner chunks (at every level) where
        `keep` (a bool array of the chunk's shape) has an element, even when they are the fill
        value (`ShardingCodec.encode_kept`). Other chains encode as `encode`."""
        encode_kept = getattr(self.array_bytes, "encode_kept", None)
        if encode_kept is None:
            return self.encode(array, transient)
        for codec, encode in zip(self.array_array, self._aa_encode, strict=True):
            array = encode(array)
            if isinstance(codec, TransposeCodec):  # the others map elements in place
                keep = encode(keep)
        data = encode_kept(array, self._ab_encode.keywords["spec"], keep)
        for encode_bytes in self._bb_transient if transient else self._bb_encode:
            data = encode_bytes(data)
        return data

    def stored_mask(self, data: Buffer) -> np.ndarray:
        """For each element of the chunk `data` decodes to, whether it lies in a stored chunk:
        of a chain that shards, in a stored inner chunk, at every level of nesting (through
        transposes); of any other chain, all of them."""
        mask = self._per_element("stored_mask", data)
        return np.ones(self.spec.shape, bool) if mask is None else mask

    def _per_element(self, name: str, data: Buffer) -> np.ndarray | None:
        """The sharding codec's method `name` of the chunk `data` (its bytes->bytes codecs
        undone): an array with a value per element of the shard, moved to the decoded chunk's
        elements (only a transpose moves them; the other array->array codecs map them in
        place). None when the array->bytes codec has no such method (it does not shard)."""
        method = getattr(self.array_bytes, name, None)
        if method is None:
            return None
        try:
            values = method(self._decode_bytes(data, None))
        except ZarrkitError:
            raise
        except Exception as e:
            raise _library_error(e) from e
        for codec, decode in zip(self.array_array[::-1], self._aa_decode, strict=True):
            if isinstance(codec, TransposeCodec):
                values = decode(values)
        return values

    def _decoder_into(self, size: int | None, spec: ChunkSpec) -> Callable[..., Buffer] | None:
        """The last decode step (the first bytes->bytes codec) writing into a given buffer, when
        that codec can and the size of its output is fixed."""
        into = getattr(self.bytes_bytes[0], "decode_into", None) if self.bytes_bytes else None
        if into is None or size is None:
            return None
        return partial(into, spec=spec, size=size)

    def decode(self, data: Buffer) -> np.ndarray:
        """Decode one stored chunk to spec.shape/spec.dtype (possibly a read-only or strided view)."""
        return self._decode(data, None)

    def decode_transient(self, data: Buffer) -> np.ndarray:
        """`decode`, but the result may live in this thread's scratch buffer: it must be consumed
        (copied out) before the thread decodes again, and never kept (no caching)."""
        into = self._transient_into
        if into is None:
            return self._decode(data, None)
        dest = scratch(into.keywords["size"])
        if self._in_one_call(data, dest):
            return np.frombuffer(dest, self.spec.dtype).reshape(self.spec.shape)
        return self._decode(data, dest)

    def _in_one_call(self, data: Buffer, dest: memoryview) -> bool:
        """Whether the chain's run call decoded `data` into `dest` (a run of one: the checks
        Python makes, made in C); False, with `dest` undefined, for the Python path to do."""
        return self._many is not None and len(dest) == self._many_size and \
            self._many((data,), dest, self._many_size, _FIRST) == 1

    def decode_prefix_transient(self, data: Buffer, nbytes: int) -> np.ndarray | None:
        """`decode_transient` of only the first `nbytes` decoded bytes (the chunk in C order):
        the rest of the result is undefined. None when the chain cannot stop early."""
        if self._prefix is None:
            return None
        dest = scratch(self.spec.nbytes)
        try:
            if not self._prefix(data, nbytes=nbytes, dest=dest):
                return None
        except ZarrkitError:
            raise
        except Exception as e:
            raise _library_error(e) from e
        return np.frombuffer(dest, self.spec.dtype).reshape(self.spec.shape)

    @property
    def decodes_prefix(self) -> bool:
        """Whether `decode_prefix_transient` can ever stop early for this chain."""
        return self._prefix is not None

    @property
    def stores_raw(self) -> bool:
        """Whether a chunk's stored bytes are its elements in C order, as numpy holds them (a
        lone `bytes` codec that swaps nothing): encoding is a copy."""
        return self._direct and not self.bytes_bytes

    @property
    def decodes_into(self) -> bool:
        """Whether `decode_into` can write this chain's chunks straight to a buffer."""
        return self._direct

    def decode_many_into(self, sources: Sequence[Buffer], dest: memoryview,
                         slots: Sequence[int]) -> int:
        """Decode `sources` into `dest` by one call that does not hold the GIL, as far as that
        call goes: source k to bytes slots[k] * spec.nbytes on, as `decode_into` would. Returns
        how many, in order; the caller decodes the next with `decode_into` (which names its
        error, or decodes what the call would not) and goes on after it. 0 when the chain has
        no such call."""
        if self._many is None or not sources:
            return 0
        return self._many(sources, dest, self._many_size, slots)

    @property
    def encodes_many(self) -> bool:
        """Whether `encode_many_into` can encode runs of this chain's chunks."""
        return self._many_encoder is not None

    def encode_many_into(self, source: np.ndarray, fill: bytes | None, dest: memoryview,
                         pos: int, first: int, sizes: np.ndarray, lead: int = 1
                         ) -> tuple[int, int]:
        """Encode the chunks of `source` by one call that does not hold the GIL, from chunk
        `first` on, each to `dest` at byte `pos` on, one after another, its size put in `sizes`
        (int64, one per chunk; -1 for a chunk left out because its every element has the bytes
        `fill`, when given). The first `lead` dimensions of `source` enumerate the chunks in C
        order, the others are a chunk's; any strides: a chunk is copied out just before it is
        compressed, while it is in the cache (a separate copy of a run of chunks took ~1.5x the
        CPU of this one). Returns (the chunk to go on from, the position it would go to): it
        stops before a chunk that might not fit in `dest`. Only when `encodes_many`."""
        gather = None if source.flags.c_contiguous else whole_scratch(self._many_size, "gather")
        # Bytes of the elements: datetimes and other types numpy exports no buffer for.
        raw = source.view(np.dtype((np.void, source.dtype.itemsize)))
        done, pos, error = self._many_encoder(raw, lead, self._many_size, fill, dest, pos, first,
                                              sizes, gather)
        trim_scratch("gather")  # kept only up to the size a thread keeps
        if error:
            raise CodecError(f"{self.bytes_bytes[0].name} codec: could not compress "
                             f"{self._many_size} bytes ({error})")
        return done, pos

    def run_room(self, count: int) -> int:
        """Bytes that `encode_many_into` needs to encode `count` chunks without stopping."""
        return count * self._many_room

    def encode_many_transient(self, source: np.ndarray, fill: bytes | None
                              ) -> tuple[memoryview, np.ndarray]:
        """`encode_many_into` of all the chunks stacked on the first axis of `source` into this
        thread's reused buffer, which has room for them all: (their bytes one after another,
        valid until this thread's next call; their sizes, -1 for a chunk of `fill`)."""
        sizes = np.empty(len(source), np.int64)
        dest = whole_scratch(self.run_room(len(source)), "encoded-run")
        done, pos = self.encode_many_into(source, fill, dest, 0, 0, sizes)
        if done != len(source):  # the room holds each chunk with its overhead: never so
            raise CodecError(f"{self.bytes_bytes[0].name} codec: a run of {len(source)} chunks "
                             f"stopped after {done} in room for all")
        return dest[:pos], sizes

    def decode_into(self, data: Buffer, dest: memoryview) -> None:
        """Decode one stored chunk into `dest`: exactly spec.nbytes writable bytes, which receive
        the chunk in C order. Only when `decodes_into`."""
        if not self._direct:
            raise ValueError(f"{self!r} cannot decode straight into a buffer")
        if self._in_one_call(data, dest):
            return
        try:
            data = self._decode_bytes(data, dest)
            if data is not dest:
                if nbytes(data) != len(dest):  # the bytes codec's check
                    raise CorruptDataError(f"bytes codec: chunk of shape {self.spec.shape} and type "
                                           f"{self.spec.dtype} needs {len(dest)} bytes, got {nbytes(data)}")
                dest[:] = byte_view(data)
        except ZarrkitError:
            raise
        except Exception as e:
            raise _library_error(e) from e

    def _decode_bytes(self, data: Buffer, dest: memoryview | None) -> Buffer:
        """The bytes->bytes codecs undone, the last of them into `dest` when it can."""
        into = self._bb_into if dest is not None else None
        for decode_bytes in self._bb_decode if into is None else self._bb_decode[:-1]:
            data = decode_bytes(data)
        return data if into is None else into(data, dest=dest)

    def _decode(self, data: Buffer, dest: memoryview | None) -> np.ndarray:
        try:
            array = self._ab_decode(self._decode_bytes(data, dest))
            for decode in self._aa_decode:
                array = decode(array)
        except ZarrkitError:
            raise
        except Exception as e:
            raise _library_error(e) from e
        return array

    def shard_entries(self, data: Buffer) -> np.ndarray | None:
        """Of a chain whose array->bytes codec is sharding (behind array->array codecs): for
        each element of the decoded chunk, its inner chunk's C-order position in the shard, or
        -1 minus that position when the shard does not store the inner chunk (it decodes to
        the fill value). None for other chains."""
        return self._per_element("entry_positions", data)

    def encoded_size(self) -> int | None:
        """The exact size of every encoded chunk, or None if it varies (compression, sharding)."""
        return self._encoded_size

    def to_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.codecs]

    def __repr__(self) -> str:
        return f"CodecChain({self.to_json()!r}, shape={self.spec.shape}, dtype={self.spec.dtype})"


_FIRST = (0,)  # the slot of a run of one


def _library_error(e: Exception) -> CorruptDataError:
    """A codec library's own error while decoding: the stored bytes are bad."""
    return CorruptDataError(f"cannot decode chunk: {type(e).__name__}: {e}")

"""Partial codec chains, as a TensorStore zarr3 spec gives them, and the defaults filled in.

A spec's `codecs` may leave out the array -> bytes codec, spell codecs as bare names and give
only some configuration members. `ChainSpec` holds such a chain; `merge` combines two of them
(or checks a partial chain against a stored one); `resolve` produces the complete codec list a
new array gets, with the defaults TensorStore writes (blosc lz4/5/shuffle with the element size,
zstd level 3, gzip level 6, little-endian bytes, a crc32c-checked shard index).

A list member that is None is unconstrained (it came from no JSON list): TensorStore treats a
given list as exact, so `[]` forbids codecs of that kind while an absent `codecs` allows any.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..codecs.base import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec
from ..codecs.registry import get_codec_class
from ..errors import CodecError, SpecError
from .chunk_layout import MAX_SHARD_GRID_ENTRIES

SHARDING = "sharding_indexed"
TRANSPOSE = "transpose"
_INDEX_CODECS = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]


@dataclass
class CodecSpec1:
    """One codec constraint: its name and the configuration members given."""

    name: str
    config: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        if self.name == SHARDING:
            config = {k: (v.to_json() if isinstance(v, ChainSpec) else v)
                      for k, v in self.config.items()}
        else:
            config = copy.deepcopy(self.config)
        return {"name": self.name, "configuration": config} if config else {"name": self.name}


@dataclass
class ChainSpec:
    """array -> array codecs, the array -> bytes codec, bytes -> bytes codecs (None: any)."""

    array_array: list[CodecSpec1] | None = None
    array_bytes: CodecSpec1 | None = None
    bytes_bytes: list[CodecSpec1] | None = None

    @property
    def sharding(self) -> CodecSpec1 | None:
        ab = self.array_bytes
        return ab if ab is not None and ab.name == SHARDING else None

    def to_json(self) -> list[dict[str, Any]]:
        parts = [*(self.array_array or []), *([self.array_bytes] if self.array_bytes else []),
                 *(self.bytes_bytes or [])]
        return [c.to_json() for c in parts]

    @classmethod
    def from_json(cls, value: Any, where: str = "codecs") -> ChainSpec:
        return parse_chain(value, where)


# -- parsing ---------------------------------------------------------------------------------


def _kind(name: str, where: str) -> str:
    try:
        cls = get_codec_class(name)
    except CodecError:
        raise SpecError(f"{where}: unknown codec {name!r}") from None
    for kind, base in (("aa", ArrayArrayCodec), ("ab", ArrayBytesCodec), ("bb", BytesBytesCodec)):
        if issubclass(cls, base):
            return kind
    raise SpecError(f"{where}: codec {name!r} is of no known kind")  # pragma: no cover


def _parse_codec(value: Any, where: str) -> CodecSpec1:
    if isinstance(value, str):
        return CodecSpec1(value)
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise SpecError(f"{where}: expected a codec name or an object with a 'name', "
                        f"got {value!r}")
    unknown = set(value) - {"name", "configuration", "must_understand"}
    if unknown:
        raise SpecError(f"{where}: unknown codec member(s) {sorted(unknown)}")
    config = value.get("configuration", {})
    if not isinstance(config, dict):
        raise SpecError(f"{where}.configuration: expected an object, got {config!r}")
    config = copy.deepcopy(config)
    if value["name"] == SHARDING:
        for key in ("codecs", "index_codecs"):
            if key in config:
                config[key] = parse_chain(config[key], f"{where}.configuration.{key}")
    return CodecSpec1(value["name"], config)


def parse_chain(value: Any, where: str = "codecs") -> ChainSpec:
    """A chain from its JSON list (codecs as objects or bare names), checked for order."""
    if isinstance(value, ChainSpec):
        return copy.deepcopy(value)
    if isinstance(value, str | dict) or not isinstance(value, Sequence):
        raise SpecError(f"{where}: expected a list of codecs, got {value!r}")
    chain = ChainSpec([], None, [])
    for i, item in enumerate(value):
        at = f"{where}[{i}]"
        codec = _parse_codec(item, at)
        kind = _kind(codec.name, at)
        if kind == "aa":
            if chain.array_bytes is not None or chain.bytes_bytes:
                raise SpecError(f"{at}: array -> array codec {codec.name!r} must come before "
                                "the array -> bytes and bytes -> bytes codecs")
            chain.array_array.append(codec)  # type: ignore[union-attr]
        elif kind == "ab":
            if chain.array_bytes is not None or chain.bytes_bytes:
                raise SpecError(f"{at}: a chain has at most one array -> bytes codec, before "
                                f"the bytes -> bytes codecs; got {codec.name!r}")
            chain.array_bytes = codec
        else:
            chain.bytes_bytes.append(codec)  # type: ignore[union-attr]
    return chain


# -- merging ---------------------------------------------------------------------------------


def _norm_order(order: Any, rank: int | None) -> Any:
    """A transpose order as a list where the rank allows ("C"/"F" are rank-agnostic)."""
    if order == "C" and rank is not None:
        return list(range(rank))
    if order == "F" and rank is not None:
        return list(reversed(range(rank)))
    return list(order) if isinstance(order, list | tuple) else order


def _merge_codec(a: CodecSpec1, b: CodecSpec1, where: str, rank: int | None,
                 strict: bool = True) -> CodecSpec1:
    if a.name != b.name:
        raise SpecError(f"{where}: cannot merge codec constraints {a.to_json()} and "
                        f"{b.to_json()}")
    config = dict(a.config)
    for key, value in b.config.items():
        if key not in config:
            config[key] = value
        elif isinstance(value, ChainSpec):
            config[key] = merge(config[key], value, f"{where}.configuration.{key}",
                                strict=strict, rank=rank)
        elif key == "order" and a.name == TRANSPOSE:
            if _norm_order(config[key], rank) != _norm_order(value, rank):
                raise SpecError(f"{where}: incompatible transpose order {config[key]!r} vs "
                                f"{value!r}")
        elif config[key] != value and not (a.name == SHARDING and key == "index_location"
                                           and {config[key], value} == {"end"}):
            raise SpecError(f"{where}: incompatible {key!r}: {config[key]!r} vs {value!r} "
                            f"(codec {a.name!r})")
    return CodecSpec1(a.name, config)


def _merge_list(a: list[CodecSpec1] | None, b: list[CodecSpec1] | None, kind: str, where: str,
                rank: int | None, slack: int = 0) -> list[CodecSpec1] | None:
    """Element-wise; `slack` lets the lengths differ by that much (the longer list's extra
    codecs are kept)."""
    if a is None or b is None:
        return copy.deepcopy(a if b is None else b)
    if abs(len(a) - len(b)) > slack:
        raise SpecError(f"{where}: mismatch in number of {kind} codecs ({len(a)} vs {len(b)}): "
                        f"{[c.to_json() for c in a]} and {[c.to_json() for c in b]}")
    merged = [_merge_codec(x, y, where, rank, not slack) for x, y in zip(a, b, strict=False)]
    return merged + copy.deepcopy((a if len(a) > len(b) else b)[len(merged):])


def _into_sharding(sharded: ChainSpec, other: ChainSpec, where: str,
                   rank: int | None) -> ChainSpec:
    """Merge `other` into the sub-chunk codecs of the sharding codec `sharded` ends with."""
    result = copy.deepcopy(sharded)
    shard = result.array_bytes
    assert shard is not None
    inner = shard.config.get("codecs")
    shard.config["codecs"] = copy.deepcopy(other) if inner is None else merge(inner, other, where,
                                                               strict=False, rank=rank)
    return result


def _height(chain: ChainSpec | None) -> int:
    """How many sharding codecs are nested in the chain."""
    height = 0
    while chain is not None and chain.sharding is not None:
        height, chain = height + 1, chain.sharding.config.get("codecs")
    return height


def _bare(chain: ChainSpec) -> bool:
    return not chain.array_array and not chain.bytes_bytes


def merge(a: ChainSpec | None, b: ChainSpec | None, where: str = "codecs", *,
          strict: bool = True, rank: int | None = None) -> ChainSpec | None:
    """Both chains' constraints in one; SpecError naming `where` when they contradict.

    Not strict (as TensorStore merges codec specs): the chain with more nested sharding codecs
    takes the other into its sub-chunk codecs when it has no array -> array or bytes -> bytes
    codecs of its own; otherwise they merge level by level, where the array -> array codecs
    may differ in length by one (room for the transpose an inner order adds).
    """
    if a is None or b is None:
        return copy.deepcopy(a if b is None else b)
    if not strict and _height(a) > _height(b) and _bare(a):
        return _into_sharding(a, b, where, rank)
    if not strict and _height(b) > _height(a) and _bare(b):
        return _into_sharding(b, a, where, rank)
    ab = a.array_bytes
    if ab is not None and b.array_bytes is not None:
        ab = _merge_codec(ab, b.array_bytes, where, rank, strict)
    elif ab is None:
        ab = copy.deepcopy(b.array_bytes)
    aa = _merge_list(a.array_array, b.array_array, "array -> array", where, rank,
                     slack=0 if strict else 1)
    return ChainSpec(aa, ab, _merge_list(a.bytes_bytes, b.bytes_bytes, "bytes -> bytes", where,
                                         rank))


# -- orders and chunk shapes -----------------------------------------------------------------


def _transpose_order(codec: CodecSpec1, rank: int, where: str) -> list[int]:
    order = _norm_order(codec.config.get("order"), rank)
    if not isinstance(order, list) or sorted(order) != list(range(rank)):
        raise SpecError(f"{where}: transpose order {codec.config.get('order')!r} is not a "
                        f"permutation of the {rank} dimensions")
    return order


def _compose(dims: list[int], chain: ChainSpec | None, rank: int, where: str) -> list[int]:
    """`dims` (encoded position -> decoded dimension) after the chain's transposes."""
    for codec in (chain.array_array or []) if chain else []:
        order = _transpose_order(codec, rank, where)
        dims = [dims[o] for o in order]
    return dims


def inner_order(chain: ChainSpec | None, rank: int, where: str = "codecs") -> tuple[int, ...]:
    """The storage order of elements within the innermost chunks (TensorStore's inner_order)."""
    dims = list(range(rank))
    while chain is not None:
        dims = _compose(dims, chain, rank, where)
        shard = chain.sharding
        chain = shard.config.get("codecs") if shard is not None else None
    return tuple(dims)


def read_chunk_shape(chain: ChainSpec | None, write_shape: Sequence[int],
                     where: str = "codecs") -> tuple[int, ...] | None:
    """The innermost chunk shape in array dimension order; None when not fixed by the chain."""
    rank = len(write_shape)
    dims, shape, found = list(range(rank)), list(write_shape), False
    while chain is not None:
        dims = _compose(dims, chain, rank, where)
        shard = chain.sharding
        if shard is None:
            break
        inner = shard.config.get("chunk_shape")
        if inner is None:
            return None
        if len(inner) != rank:
            raise SpecError(f"{where}: sharding_indexed chunk_shape {inner} does not have rank "
                            f"{rank}")
        for position, size in enumerate(inner):
            shape[dims[position]] = size
        found, chain = True, shard.config.get("codecs")
    return tuple(shape) if found else tuple(write_shape)


def decoded_read_shape(chain: ChainSpec | None, shape: Sequence[int] | None, rank: int,
                       where: str = "codecs") -> tuple[int, ...] | None:
    """The read chunk shape codecs imply before any chunk is chosen (TensorStore's
    GetDecodedChunkLayout), in the chain's decoded dimension order; None when they imply none.

    A chain implies the `shape` it encodes, when known. A sharding codec implies what its
    sub-chunk codecs imply for its chunk_shape, and nothing when they are not given: a
    chunk_shape alone does not make a read chunk.
    """
    if chain is None:
        return None
    dims = _compose(list(range(rank)), chain, rank, where)
    shard = chain.sharding
    if shard is None:
        encoded = None if shape is None else [shape[d] for d in dims]
    else:
        inner = shard.config.get("chunk_shape")
        if inner is not None and len(inner) != rank:
            raise SpecError(f"{where}: sharding_indexed chunk_shape {inner} does not have rank "
                            f"{rank}")
        encoded = decoded_read_shape(shard.config.get("codecs"), inner, rank, where)
    if encoded is None:
        return None
    decoded = [0] * rank
    for position, d in enumerate(dims):
        decoded[d] = encoded[position]
    return tuple(decoded)


def check_sub_chunks(chain: ChainSpec | None, write_shape: Sequence[int], itemsize: int,
                     where: str) -> None:
    """SpecError unless each sharding codec's chunk_shape evenly divides the chunk it splits
    (in that codec's encoded dimension order) into at most 2**30 sub-chunks, and the
    innermost chunk's size in bytes fits in 63 bits (the limits TensorStore enforces)."""
    shape = list(write_shape)
    while chain is not None:
        for codec in chain.array_array or []:
            shape = [shape[o] for o in _transpose_order(codec, len(shape), where)]
        shard = chain.sharding
        inner = shard.config.get("chunk_shape") if shard is not None else None
        if inner is None:
            break
        _check_shard_split(list(inner), shape, where)
        shape, chain = list(inner), shard.config.get("codecs")
    if math.prod(shape) * itemsize > 2**63 - 1:
        raise SpecError(f"{where}: a sub-chunk of {shape} elements of {itemsize} bytes each "
                        "is too large")


def _check_shard_split(inner: list[int], outer: list[int], where: str) -> None:
    if len(inner) != len(outer) or any(o % i for o, i in zip(outer, inner, strict=False)):
        raise SpecError(f"{where}: sharding_indexed chunk_shape {inner} does not evenly divide "
                        f"the chunk shape {outer} it shards")
    count = math.prod(o // i for o, i in zip(outer, inner, strict=True))
    if count > MAX_SHARD_GRID_ENTRIES:
        raise SpecError(f"{where}: sharding_indexed chunk_shape {inner} splits the chunk shape "
                        f"{outer} into {count} sub-chunks; at most {MAX_SHARD_GRID_ENTRIES} fit")


def with_sharding(chain: ChainSpec | None, read_shape: Sequence[int]) -> ChainSpec:
    """The chain with its sharding codecs' chunk_shapes set, or a sharding codec inserted.

    Every nested sharding codec without a chunk_shape gets the read chunk shape (in its own
    encoded order), as TensorStore resolves them: not its parent's chunk_shape.
    """
    rank = len(read_shape)
    if chain is None:
        shard = CodecSpec1(SHARDING, {"chunk_shape": list(read_shape)})
        return ChainSpec([], shard, [])
    chain = copy.deepcopy(chain)
    assert chain.sharding is not None
    level: ChainSpec | None = chain
    dims = list(range(rank))
    while level is not None and level.sharding is not None:
        dims = _compose(dims, level, rank, "codecs")
        shard = level.sharding
        shard.config.setdefault("chunk_shape", [read_shape[d] for d in dims])
        level = shard.config.get("codecs")
    return chain


def _innermost(chain: ChainSpec, rank: int, where: str) -> tuple[ChainSpec, list[int]]:
    """The innermost chain (inside sharding codecs, created where unconstrained) and its
    encoded position -> array dimension map."""
    innermost, dims = chain, _compose(list(range(rank)), chain, rank, where)
    while innermost.sharding is not None:
        shard = innermost.sharding
        nested = shard.config.get("codecs")
        if nested is None:
            nested = shard.config["codecs"] = ChainSpec()
        innermost = nested
        dims = _compose(dims, innermost, rank, where)
    return innermost, dims


def sharding_depth(chain: ChainSpec | None) -> int:
    """How many sharding codecs nest in the chain (0 without one)."""
    depth = 0
    while chain is not None and chain.sharding is not None:
        chain, depth = chain.sharding.config.get("codecs"), depth + 1
    return depth


def fixes_inner_order(chain: ChainSpec | None) -> bool:
    """Whether the chain's innermost codecs name their array -> bytes codec, so that they
    alone decide the storage order inside the innermost chunks."""
    while chain is not None and chain.sharding is not None:
        chain = chain.sharding.config.get("codecs")
    return chain is not None and chain.array_bytes is not None


def check_inner_order(chain: ChainSpec | None, desired: Sequence[int], rank: int,
                      where: str) -> None:
    """SpecError when codecs that fix their innermost array -> array codecs store elements in
    another order than `desired` (TensorStore could only meet it with another transpose)."""
    if chain is None or list(inner_order(chain, rank, where)) == list(desired):
        return
    innermost, _ = _innermost(copy.deepcopy(chain), rank, where)
    if innermost.array_array is not None:
        fixed = [c.to_json() for c in innermost.array_array]
        raise SpecError(f"{where}: chunk_layout.inner_order {list(desired)} needs a transpose "
                        f"codec before the array -> bytes codec, but the codecs fix the array "
                        f"-> array codecs as {fixed}")


def with_inner_order(chain: ChainSpec | None, desired: Sequence[int], rank: int,
                     where: str) -> ChainSpec | None:
    """The chain with a transpose appended to its innermost array -> array codecs, so that
    elements are stored in `desired` order (nothing when they already are)."""
    desired = list(desired)
    if list(inner_order(chain, rank, where)) == desired:
        return chain
    chain = copy.deepcopy(chain) if chain is not None else ChainSpec()
    innermost, dims = _innermost(chain, rank, where)
    position = {d: p for p, d in enumerate(dims)}
    transpose = CodecSpec1(TRANSPOSE, {"order": [position[d] for d in desired]})
    innermost.array_array = [*(innermost.array_array or []), transpose]
    return chain


# -- defaults --------------------------------------------------------------------------------


def _blosc_defaults(config: dict[str, Any], itemsize: int) -> dict[str, Any]:
    out = {"cname": "lz4", "clevel": 5, "blocksize": 0, **config}
    # as TensorStore: the default shuffle follows a given typesize, and a typesize is dropped
    # where nothing is shuffled (the blosc codec spec says it is then ignored)
    out.setdefault("typesize", itemsize)
    out.setdefault("shuffle", "bitshuffle" if out["typesize"] == 1 else "shuffle")
    if out["shuffle"] == "noshuffle":
        del out["typesize"]
    return out


def _codec_defaults(codec: CodecSpec1, itemsize: int, shape: list[int],
                    where: str) -> dict[str, Any]:
    config = dict(codec.config)
    name = codec.name
    if name == "blosc":
        config = _blosc_defaults(config, itemsize)
    elif name == "zstd":
        config = {"level": 3, "checksum": False, **config}
    elif name == "gzip":
        config = {"level": 6, **config}
    elif name == "bytes" and itemsize > 1:
        config.setdefault("endian", "little")
    elif name == TRANSPOSE:
        config["order"] = _transpose_order(codec, len(shape), where)
    elif name == SHARDING:
        config = _sharding_defaults(config, itemsize, shape, where)
    return {"name": name, "configuration": config} if config else {"name": name}


def _sharding_defaults(config: dict[str, Any], itemsize: int, shape: list[int],
                       where: str) -> dict[str, Any]:
    inner = config.get("chunk_shape")
    if inner is None:
        raise SpecError(f"{where}: sharding_indexed needs a chunk_shape")
    out: dict[str, Any] = {"chunk_shape": list(inner)}
    out["codecs"] = _resolve(config.get("codecs"), itemsize, list(inner), f"{where}.codecs")
    index = config.get("index_codecs")
    out["index_codecs"] = copy.deepcopy(_INDEX_CODECS) if index is None else _resolve(
        index, 8, [*inner, 2], f"{where}.index_codecs")
    if config.get("index_location", "end") != "end":
        out["index_location"] = config["index_location"]  # TensorStore writes only "start"
    return out


def _resolve(chain: ChainSpec | None, itemsize: int, shape: list[int],
             where: str) -> list[dict[str, Any]]:
    chain = chain or ChainSpec()
    out = []
    for i, codec in enumerate(chain.array_array or []):
        resolved = _codec_defaults(codec, itemsize, shape, f"{where}[{i}]")
        order = resolved.get("configuration", {}).get("order")  # transpose's; others keep it
        if order is not None:
            shape = [shape[o] for o in order]
        out.append(resolved)
    ab = chain.array_bytes or CodecSpec1("bytes")
    if ab.name == SHARDING and chain.bytes_bytes:
        raise SpecError(f"{where}: the sharding codec cannot be followed by bytes -> bytes "
                        f"codecs {[c.to_json() for c in chain.bytes_bytes]}, which would apply "
                        "to the whole shard; give them as the sharding codec's inner codecs")
    out.append(_codec_defaults(ab, itemsize, shape, f"{where}[{len(out)}]"))
    out += [_codec_defaults(c, itemsize, shape, f"{where}[{len(out) + i}]")
            for i, c in enumerate(chain.bytes_bytes or [])]
    return out


def resolve(chain: ChainSpec | None, itemsize: int, chunk_shape: Sequence[int],
            where: str = "metadata.codecs") -> list[dict[str, Any]]:
    """The complete codec list for a new array, with TensorStore's defaults filled in."""
    return _resolve(chain, itemsize, list(chunk_shape), where)

"""Seeded fuzzing of what zarrkit stores, not only of what reads back.

Each seed draws an array (v3 unsharded, sharded or nested-sharded, with transpose, crc32c,
blosc, zstd and gzip in its chains; or v2 in C or F order with filters, a compressor and either
dimension separator; numbers, booleans or variable-length strings), on a directory or in
memory, of a random shape (edge chunks, 0-d, zero-length dimensions) and fill value, under
write_empty_chunks True or False, and a sequence of operations: whole and partial writes
(slices with steps, integers, integer arrays, oindex, vindex, masks, blocks; by indexing or by
zarr-python's set_*_selection methods), writes of the fill value, resizes that grow and shrink
(zarr-python's and TensorStore's spellings), appends, attribute updates, reopening (by
keywords, or by a TensorStore spec with a cache pool) and going back to the handle before,
which has missed what the other did. Some seeds make resizes list the store to find what to
erase, and some shrink the engine's size thresholds so that small writes take the paths of
large ones (`engine_paths`). After creation and after every operation:

1. zarrkit (the handle and a fresh one), zarr-python and (v3) TensorStore read the numpy model.
2. Every stored key is a chunk key of the current grid; no stored inner chunk (at any level of
   nesting) lies wholly beyond the shape.
3. No shard (at any level) is stored with every inner chunk absent. write_empty_chunks False:
   no stored chunk or inner chunk decodes to all fill value. True (or a v2 null fill, which has
   no value to be equal to): every chunk written and still within the shape is stored, and so
   is every written inner chunk of a shard, at every level of nesting (as zarr-python and
   TensorStore store them).
4. Every shard index passes its crc32c, its entries are both absent or lie inside the shard,
   clear of the index and of each other, and the shard holds no unreferenced byte: zarrkit
   rewrites a shard whole on every change, so the bound is 0 (the spec allows gaps; a writer
   that appends or replaces in place would need a looser bound).
   Each chunk is decoded here from its raw bytes (shard indexes parsed per the sharding spec,
   codecs by numcodecs, gzip and crc32c), independently of zarrkit: its part within the shape
   is the model's, its part beyond the shape the fill value (erased by shrinking).
5. The metadata documents are strict JSON (no NaN literals) holding the model's shape and
   attributes, zarr-python opens them, and no temp file (`.*.partial`) is left behind.

A failure is minimised (operations dropped while it still fails) and reported with the case.
A peer is not asked to read what it refuses: zarr-python a transpose before sharding,
TensorStore bytes->bytes codecs after sharding. FUZZ_STORED_SEEDS=2000 runs more seeds.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import random
import shutil
import sys
import warnings

import crc32c
import numcodecs
import numpy as np
import pytest
from numcodecs.compat import ensure_bytes
from test_fuzz_formats import gen_bytes_codec

import zarrkit
from zarrkit.kvstore.memory import MemoryStore

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning",
                                        "ignore::DeprecationWarning", "ignore::RuntimeWarning")

SEEDS = range(int(os.environ.get("FUZZ_STORED_SEEDS", 500)))  # ~20 s on two cores
EMPTY = 2**64 - 1
#: Unreferenced bytes a shard may hold: zarrkit writes every shard compactly.
UNREFERENCED_BOUND = 0
METADATA = {"zarr.json", ".zarray", ".zattrs", ".zgroup"}

V3_TYPES = ["bool", "int8", "uint16", "int32", "int64", "float16", "float32", "float64",
            "complex64"]
V2_TYPES = ["|b1", "|i1", "<u2", ">i4", "<i8", "<f2", ">f4", "<f8", "<c8"]
V2_COMPRESSORS = [
    None,
    {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0},
    {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0},
    {"id": "zstd", "level": 3, "checksum": False},
    {"id": "zlib", "level": 1},
    {"id": "gzip", "level": 5},
]


# -- the generator --------------------------------------------------------------------------------

def gen_fill(rng, dtype):
    kind = dtype.kind
    if kind == "O":  # variable-length strings
        return rng.choice(["", "", "ab"])
    if kind == "b":
        return rng.choice([False, True])
    if kind == "i":
        return rng.choice([0, 0, 1, -3])
    if kind == "u":
        return rng.choice([0, 0, 1, 7])
    if kind == "f":
        return rng.choice([0.0, 0.0, -0.0, 1.5, "NaN", "Infinity", "-Infinity"])
    return rng.choice([[0.0, 0.0], [1.0, -2.5], ["NaN", 0.0]])


def fill_scalar(fill, dtype):
    """The value a JSON fill value denotes (None, v2's null: zeros), decoded here."""
    if fill is None:
        return np.zeros((), dtype)[()]
    if dtype.kind == "O":
        return fill
    if dtype.kind == "c":
        part = np.dtype(f"{dtype.byteorder}f{dtype.itemsize // 2}".lstrip("|="))
        return np.array([float(v) for v in fill], part).view(dtype)[0]
    if isinstance(fill, str) and fill.startswith("0x"):  # v3: a float given by its bits
        bits = np.array(int(fill, 16), f"u{dtype.itemsize}")
        return bits.view(dtype.newbyteorder("="))[()].astype(dtype)
    if isinstance(fill, str):
        return np.array(float(fill), dtype)[()]
    return np.array(fill, dtype)[()]


def gen_bytes_codecs(rng, itemsize):
    out = []
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        name = rng.choice(["blosc", "zstd", "gzip", "crc32c"])
        if name == "blosc":
            out.append({"name": "blosc", "configuration": {
                "cname": rng.choice(["lz4", "zstd", "blosclz"]), "clevel": rng.randint(0, 9),
                "shuffle": rng.choice(["noshuffle", "shuffle", "bitshuffle"]),
                "typesize": itemsize, "blocksize": 0}})
        elif name == "zstd":
            out.append({"name": "zstd", "configuration": {"level": rng.randint(0, 5),
                                                          "checksum": rng.random() < 0.5}})
        elif name == "gzip":
            out.append({"name": "gzip", "configuration": {"level": rng.randint(0, 9)}})
        else:
            out.append({"name": "crc32c"})
    return out


def gen_leaf_chain(rng, rank, itemsize):
    """transpose? -> bytes -> bytes->bytes codecs: the chain of unsharded (inner) chunks;
    vlen-utf8 -> bytes->bytes codecs for strings (itemsize None)."""
    if itemsize is None:
        return [{"name": "vlen-utf8"}] + gen_bytes_codecs(rng, 1)
    chain = []
    if rank > 1 and rng.random() < 0.3:
        order = list(range(rank))
        rng.shuffle(order)
        chain.append({"name": "transpose", "configuration": {"order": order}})
    return chain + [gen_bytes_codec(rng, itemsize)] + gen_bytes_codecs(rng, itemsize)


def gen_sharding(rng, rank, itemsize, inner, levels):
    """A sharding codec of inner chunks `inner[0]`, nested `levels` deep."""
    codecs = (gen_sharding(rng, rank, itemsize, inner[1:], levels - 1) if levels > 1
              else gen_leaf_chain(rng, rank, itemsize))
    index = [gen_bytes_codec(rng)] + ([{"name": "crc32c"}] if rng.random() < 0.6 else [])
    return [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": inner[0], "codecs": codecs, "index_codecs": index,
        "index_location": rng.choice(["start", "end"])}}]


def gen_shape(rng, rank):
    return [rng.choice([0, 1, 3, 5]) if rng.random() < 0.12 else rng.randint(1, 10)
            for _ in range(rank)]


class Case:
    def __init__(self, seed):
        rng = random.Random(seed)
        self.seed = seed
        self.fmt = 2 if seed % 3 == 0 else 3
        self.memory = seed % 2 == 1
        self.write_empty = rng.random() < 0.5
        rank = rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
        self.shape = tuple(gen_shape(rng, rank))
        self.attrs = {"k": rng.randint(0, 9)} if rng.random() < 0.5 else {}
        self.levels = 0
        if self.fmt == 2:
            self.gen_v2(rng, rank)
        else:
            self.gen_v3(rng, rank)
        self.fill_value = fill_scalar(self.fill, self.dtype)

    def gen_v3(self, rng, rank):
        strings = rng.random() < 0.1
        self.dtype = np.dtype(object if strings else rng.choice(V3_TYPES))
        self.fill = gen_fill(rng, self.dtype)
        itemsize = None if strings else self.dtype.itemsize
        r = rng.random()
        self.levels = 0 if r < 0.3 else 1 if r < 0.8 else 2
        if self.levels == 0:
            self.chunks = [rng.randint(1, max(1, n + 1)) for n in self.shape]
            self.codecs = gen_leaf_chain(rng, rank, itemsize)
        else:
            # innermost first: each level's chunk a multiple of the one inside it
            inner = [[rng.randint(1, 3) for _ in range(rank)]]
            for _ in range(self.levels):
                inner.insert(0, [c * rng.choice([1, 2, 3, 4]) for c in inner[0]])
            self.chunks = inner[0]
            order = list(range(rank))
            front = rank > 1 and rng.random() < 0.2  # a transpose before (zarr-python refuses)
            if front:  # the sharding codec sees the shard, and its inner chunks, transposed
                rng.shuffle(order)
                inner = [[c[i] for i in order] for c in inner]
            self.codecs = gen_sharding(rng, rank, itemsize, inner[1:], self.levels)
            if rng.random() < 0.1:  # bytes->bytes codecs after sharding (TensorStore refuses)
                self.codecs += gen_bytes_codecs(rng, itemsize or 1) or [{"name": "crc32c"}]
            if front:
                self.codecs.insert(0, {"name": "transpose", "configuration": {"order": order}})
        self.encoding = {"name": rng.choice(["default", "default", "v2"]),
                         "configuration": {"separator": rng.choice(["/", "."])}}

    def gen_v2(self, rng, rank):
        strings = rng.random() < 0.1
        self.dtype = np.dtype(object if strings else rng.choice(V2_TYPES))
        self.fill = None if rng.random() < 0.15 and not strings else gen_fill(rng, self.dtype)
        self.chunks = [rng.randint(1, max(1, n + 1)) for n in self.shape]
        self.order = rng.choice(["C", "F"])
        self.separator = rng.choice([".", "/"])
        self.compressor = rng.choice(V2_COMPRESSORS)
        self.filters = None
        if strings:
            self.filters = [{"id": "vlen-utf8"}]
        elif self.dtype.kind in "iu" and rng.random() < 0.3:
            self.filters = [{"id": "delta", "dtype": self.dtype.str}]
        elif self.dtype.kind in "iufc" and rng.random() < 0.3:
            self.filters = [{"id": "shuffle", "elementsize": self.dtype.itemsize}]

    @property
    def null_fill(self):
        return self.fill is None

    @property
    def keeps_written(self):
        """Whether every written chunk is stored (write_empty_chunks, or nothing to equal)."""
        return self.write_empty or self.null_fill

    @property
    def zarr_reads(self):
        """zarr-python reads all but a transpose before sharding."""
        return self.levels == 0 or self.codecs[0]["name"] == "sharding_indexed"

    @property
    def tensorstore_reads(self):
        return self.fmt == 3 and (self.levels == 0 or self.codecs[-1]["name"] == "sharding_indexed") and \
            self.dtype.kind != "O"  # (TensorStore has no variable-length strings)

    def create(self, where):
        config = {"write_empty_chunks": self.write_empty}
        if self.fmt == 3:
            data_type = "string" if self.dtype.kind == "O" else str(self.dtype)
            return zarrkit.create(where, self.shape, data_type, chunks=self.chunks,
                                  fill_value=self.fill, codecs=self.codecs,
                                  chunk_key_encoding=self.encoding,
                                  attributes=self.attrs or None, config=config)
        return zarrkit.create(where, self.shape, str if self.dtype.kind == "O" else
                              self.dtype.str, zarr_format=2,
                              chunks=self.chunks, fill_value=self.fill, order=self.order,
                              compressor=self.compressor, filters=self.filters,
                              dimension_separator=self.separator,
                              attributes=self.attrs or None, config=config)

    def __repr__(self):
        what = (f"v3 codecs={json.dumps(self.codecs)} encoding={self.encoding}" if self.fmt == 3
                else f"v2 order={self.order} compressor={self.compressor} "
                     f"filters={self.filters} separator={self.separator!r}")
        return (f"seed {self.seed}: {'memory' if self.memory else 'file'} shape={self.shape} "
                f"chunks={self.chunks} dtype={self.dtype.str} fill={self.fill!r} "
                f"write_empty={self.write_empty} attrs={self.attrs} {what}")


SPECIALS = {2: [0x7E00, 0xFE01, 0x7C00, 0x8000], 4: [0x7FC00000, 0xFFC00001, 0x7F800000,
                                                     0x80000000],
            8: [0x7FF8000000000000, 0xFFF8000000000001, 0xFFF0000000000000,
                0x8000000000000000]}


def random_values(rng, dtype, shape):
    n = math.prod(shape)
    if dtype.kind == "O":
        words = np.array(["", "ab", "é€", "x y", "0"], object)
        return words[rng.integers(0, len(words), n)].reshape(shape)
    native = dtype.newbyteorder("=")
    if dtype.kind == "b":
        out = rng.random(n) < 0.5
    elif dtype.kind in "iu":
        info = np.iinfo(native)
        out = rng.integers(info.min, info.max, n, dtype=native, endpoint=True)
    elif dtype.kind == "c":
        out = random_values(rng, np.dtype(f"f{native.itemsize // 2}"), (2 * n,)).view(native)
    else:
        out = (rng.standard_normal(n) * 100).astype(native)
        specials = np.array(SPECIALS[native.itemsize], f"u{native.itemsize}").view(native)
        picks = rng.random(n) < 0.2
        out[picks] = rng.choice(specials, int(picks.sum()))
    return out.astype(dtype).reshape(shape)


def gen_slice(rng, n):
    step = rng.choice([1, 1, 1, 2, 3, -1])
    a, b = rng.randint(0, n), rng.randint(0, n)
    if step < 0:
        return slice(max(a, b), None if rng.random() < 0.3 else min(a, b) - 1 if min(a, b) else
                     None, step)
    return slice(min(a, b), max(a, b) + rng.choice([0, 1]), step)


def unique_indices(rng, n, allow_empty=False):
    k = rng.randint(0 if allow_empty else 1, min(n, 4))
    return np.array(rng.sample(range(n), k), np.intp)


def gen_basic(rng, shape):
    if not shape or rng.random() < 0.15:  # the whole array
        return (...,) if rng.random() < 0.5 else tuple(slice(None) for _ in shape)
    sel, fancy = [], False
    for n in shape:
        r = rng.random()
        if n and r < 0.12:
            sel.append(rng.randrange(n))
        elif n and r < 0.22 and not fancy:  # one integer array: numpy's fancy indexing
            sel.append(unique_indices(rng, n))
            fancy = True
        else:
            sel.append(gen_slice(rng, n))
    return tuple(sel)


def gen_orthogonal(rng, shape):
    sel = []
    for n in shape:
        r = rng.random()
        if n and r < 0.3:
            sel.append(unique_indices(rng, n))
        elif r < 0.5:
            sel.append(np.array([rng.random() < 0.5 for _ in range(n)], bool))
        else:
            sel.append(gen_slice(rng, n))
    return tuple(sel)


def gen_points(rng, shape):
    if rng.random() < 0.4:  # a mask
        return np.random.default_rng(rng.randrange(2**32)).random(shape) < 0.3
    size = math.prod(shape)
    flat = rng.sample(range(size), rng.randint(1, min(size, 6)))
    return tuple(np.array(c, np.intp) for c in np.unravel_index(flat, shape))


def gen_blocks(rng, shape, chunks):
    """Block ranges of the chunk grid (of shards when sharded), one slice per axis; blocks
    beyond the grid are refused (as zarr-python does)."""
    sel = []
    for n, c in zip(shape, chunks, strict=True):
        a, b = rng.randrange(-(-n // c)), rng.randrange(-(-n // c))
        sel.append(slice(min(a, b), max(a, b) + 1))
    return tuple(sel)


def model_index(mode, sel, shape, chunks):
    """The numpy index into the model that the zarrkit selection `mode`[sel] denotes."""
    if mode == "blocks":
        return tuple(slice(s.start * c, s.stop * c) for s, c in zip(sel, chunks, strict=True))
    if mode != "oindex":
        return sel
    return np.ix_(*[np.arange(n)[s] if isinstance(s, slice) else s
                    for s, n in zip(sel, shape, strict=True)])


def gen_length(rng, n):
    """A dimension's new length: kept, shrunk (often into a chunk or shard) or grown."""
    r = rng.random()
    if r < 0.4 or not n and r < 0.7:
        return n
    return rng.randrange(n) if r < 0.7 else n + rng.randint(1, 5)


def gen_ops(case):
    """The operations of a case, drawn against the shape each leaves."""
    rng = random.Random(case.seed * 7919 + 1)
    values = np.random.default_rng(case.seed)
    shape, ops = case.shape, []
    for _ in range(rng.randint(4, 10)):
        r = rng.random()
        size = math.prod(shape)
        if r < 0.4 or (not shape and r < 0.8):
            mode = rng.choice(["basic", "basic", "oindex", "vindex", "blocks"]) \
                if shape and size else "basic"
            sel = gen_blocks(rng, shape, case.chunks) if mode == "blocks" else \
                {"basic": gen_basic, "oindex": gen_orthogonal, "vindex": gen_points}[mode](
                    rng, shape)
            if mode == "vindex" and isinstance(sel, np.ndarray) and rng.random() < 0.5:
                mode = "basic"  # a[mask] = ..., as numpy
            target = np.empty(shape, bool)[model_index(mode, sel, shape, case.chunks)]
            fill = rng.random() < 0.3
            value = case.fill_value if fill and rng.random() < 0.5 else \
                np.full(np.shape(target), case.fill_value, case.dtype) if fill else \
                random_values(values, case.dtype, np.shape(target))
            ops.append(("set", mode, sel, value, rng.random() < 0.25))
        elif r < 0.48 and shape:  # whole or a region written with the fill value
            ops.append(("set", "basic", tuple(gen_slice(rng, n) for n in shape),
                        case.fill_value, False))
        elif r < 0.73 and shape:
            new = tuple(gen_length(rng, n) for n in shape)
            ops.append(("resize", new, rng.random() < 0.3))
            shape = new
        elif r < 0.83 and shape:
            axis = rng.randrange(len(shape))
            grown = tuple(rng.randint(1, 4) if i == axis else n for i, n in enumerate(shape))
            ops.append(("append", random_values(values, case.dtype, grown), axis))
            shape = tuple(n + grown[axis] if i == axis else n for i, n in enumerate(shape))
        elif r < 0.89:
            ops.append(("attrs", {rng.choice(["k", "m", "n"]): rng.choice([1, "x", [2.5]])}))
        else:
            ops.append(("reopen", rng.random() < 0.4) if rng.random() < 0.5 else ("swap",))
    return ops


def show(op):
    def short(v):
        return f"<{v.dtype} {v.shape}>" if isinstance(v, np.ndarray) and v.size > 4 else repr(v)
    return "(" + ", ".join(short(x) if not isinstance(x, tuple) else
                           "(" + ", ".join(map(short, x)) + ")" for x in op) + ")"


# -- the model ------------------------------------------------------------------------------------

class Model:
    """The array's values and which elements were written since they were last erased."""

    def __init__(self, case):
        self.case = case
        self.values = np.full(case.shape, case.fill_value, case.dtype)
        self.written = np.zeros(case.shape, bool)
        self.attrs = dict(case.attrs)

    def apply(self, op):
        if op[0] == "set":
            _, mode, sel, value, _ = op
            index = model_index(mode, sel, self.values.shape, self.case.chunks)
            if np.ndim(value) == 0 and isinstance(value, np.ndarray):
                value = value[()]  # (numpy would store a 0-d object array as the element)
            self.values[index] = value
            self.written[index] = True
        elif op[0] in ("resize", "append"):
            if op[0] == "resize":
                new = op[1]
            else:
                data, axis = op[1], op[2]
                new = data.shape[:axis] + (self.values.shape[axis] + data.shape[axis],) + \
                    data.shape[axis + 1:]
            values = np.full(new, self.case.fill_value, self.case.dtype)
            written = np.zeros(new, bool)
            common = tuple(slice(0, min(a, b)) for a, b in zip(new, self.values.shape,
                                                                strict=True))
            values[common] = self.values[common]
            written[common] = self.written[common]
            if op[0] == "append":
                at = tuple(slice(n - d, n) if i == axis else slice(None)
                           for i, (n, d) in enumerate(zip(new, data.shape, strict=True)))
                values[at] = data
                written[at] = True
            self.values, self.written = values, written
        elif op[0] == "attrs":
            self.attrs.update(op[1])


def reopen(case, where, by_spec):
    """A new handle: by zarr-python's keywords, or (`by_spec`, on a directory) by a
    TensorStore spec with a cache pool, which caches chunks and shard indexes."""
    if not by_spec or case.memory:
        return zarrkit.open_array(where, config={"write_empty_chunks": case.write_empty})
    return zarrkit.open({"driver": "zarr3" if case.fmt == 3 else "zarr",
                         "kvstore": {"driver": "file", "path": where},
                         "store_data_equal_to_fill_value": case.write_empty,
                         "context": {"cache_pool": {"total_bytes_limit": 1 << 20}}})


def set_by_method(handle, mode, sel, value):
    if isinstance(sel, np.ndarray):  # a mask
        handle.set_mask_selection(sel, value)
    elif mode == "basic" and any(isinstance(s, np.ndarray) for s in sel):
        if any(isinstance(s, int) for s in sel):  # numpy's rules place the axes otherwise
            handle[sel] = value
        else:  # one index array and slices: numpy's selection is the orthogonal one
            handle.set_orthogonal_selection(sel, value)
    else:
        method = {"basic": "set_basic_selection", "oindex": "set_orthogonal_selection",
                  "vindex": "set_coordinate_selection", "blocks": "set_block_selection"}[mode]
        getattr(handle, method)(sel, value)


def apply(handles, op, case, where):
    """The operation on zarrkit through `handles[0]`: "reopen" replaces the other handle with
    a new one and makes it current, "swap" makes the other (maybe stale: the current one may
    have resized the array since) current."""
    handle = handles[0]
    if op[0] == "set":
        _, mode, sel, value, method = op
        if method:  # zarr-python's method for the selection
            set_by_method(handle, mode, sel, value)
        else:
            target = handle if mode == "basic" else getattr(handle, mode)
            target[sel] = value
    elif op[0] == "resize":
        if op[2]:  # TensorStore's spelling
            handle.resize(exclusive_max=list(op[1]))
        else:
            handle.resize(op[1])
    elif op[0] == "append":
        handle.append(op[1], axis=op[2])
    elif op[0] == "attrs":
        handle.attrs.update(op[1])
    elif op[0] == "reopen":
        handles[:] = [reopen(case, where, op[1] if len(op) > 1 else False), handle]
    else:
        handles.reverse()


# -- independent decoding -------------------------------------------------------------------------

def same_bits(a, b):
    """Equal bit for bit (NaN payloads, -0.0); strings: equal values, all of type str."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "O" or b.dtype.kind == "O":
        return all(isinstance(x, str) and x == y for x, y in zip(a.flat, b.flat, strict=True))
    native = a.dtype.newbyteorder("=")
    return np.ascontiguousarray(a.astype(native)).tobytes() == \
        np.ascontiguousarray(b.astype(native)).tobytes()


def all_bits(a, scalar):
    return same_bits(a, np.full(np.shape(a), scalar, np.asarray(a).dtype))


def decode_bytes_codec(codec, data):
    name = codec["name"]
    if name == "crc32c":
        assert len(data) >= 4, "crc32c: chunk shorter than its checksum"
        body, stored = data[:-4], int.from_bytes(data[-4:], "little")
        assert crc32c.crc32c(body) == stored, "crc32c checksum mismatch"
        return body
    if name == "gzip":
        return gzip.decompress(data)
    if name == "zstd":
        return ensure_bytes(numcodecs.Zstd().decode(data))
    if name == "blosc":
        return ensure_bytes(numcodecs.Blosc().decode(data))
    raise AssertionError(f"unexpected codec {name}")


class Stored:
    """What the raw chunks hold, gathered while decoding them: inner chunks and shards."""

    def __init__(self):
        self.inner = []  # (level, origin, shape, decoded or None when absent)
        self.problems = []


def decode_v3(chain, data, shape, dtype, fill, origin, stored, level, axes=None):
    """A chunk of `shape` at `origin` (array coordinates) decoded from its stored bytes;
    `axes`: the array's dimension of each of the chunk's (transposes before)."""
    axes = list(range(len(shape))) if axes is None else axes
    at = next(i for i, c in enumerate(chain)
              if c["name"] in ("bytes", "sharding_indexed", "vlen-utf8"))
    for codec in reversed(chain[at + 1:]):
        data = decode_bytes_codec(codec, data)
    orders = [c["configuration"]["order"] for c in chain[:at]]
    encoded_shape = list(shape)
    for order in orders:
        encoded_shape = [encoded_shape[i] for i in order]
        axes = [axes[i] for i in order]
    codec = chain[at]
    if codec["name"] == "vlen-utf8":
        out = np.asarray(numcodecs.VLenUTF8().decode(data), object).reshape(encoded_shape)
    elif codec["name"] == "bytes":
        endian = codec.get("configuration", {}).get("endian", "little")
        stored_type = dtype.newbyteorder("<" if endian == "little" else ">")
        assert len(data) == math.prod(shape) * dtype.itemsize, \
            f"bytes codec: {len(data)} bytes for a chunk of {shape}"
        out = np.frombuffer(data, stored_type).reshape(encoded_shape).astype(dtype)
    else:
        out = decode_shard(codec["configuration"], data, tuple(encoded_shape), dtype, fill,
                           origin, stored, level + 1, axes)
    for order in reversed(orders):
        out = out.transpose(np.argsort(order))
    return out


def in_array(axes, values):
    """`values` given per dimension of a chunk, per dimension of the array (`axes`)."""
    out = [0] * len(axes)
    for j, a in enumerate(axes):
        out[a] = values[j]
    return tuple(out)


def decode_shard(config, data, shape, dtype, fill, origin, stored, level, axes):
    inner = config["chunk_shape"]
    per = [s // c for s, c in zip(shape, inner, strict=True)]
    count = math.prod(per)
    checked = len(config["index_codecs"]) > 1
    size = 16 * count + 4 * checked
    where = f"shard at {origin} (level {level})"
    assert len(data) >= size, f"{where}: {len(data)} bytes, less than its {size}-byte index"
    start = config["index_location"] == "start"
    raw = data[:size] if start else data[len(data) - size:]
    if checked:
        assert crc32c.crc32c(raw[:-4]) == int.from_bytes(raw[-4:], "little"), \
            f"{where}: index checksum mismatch"
    endian = config["index_codecs"][0].get("configuration", {}).get("endian", "little")
    index = np.frombuffer(raw[:16 * count], "<u8" if endian == "little" else ">u8") \
        .reshape(count, 2).astype(np.uint64)
    index_span = (0, size) if start else (len(data) - size, len(data))
    spans, out = [], np.full(shape, fill, dtype)
    for flat, j in enumerate(np.ndindex(*per)):
        offset, nbytes = (int(x) for x in index[flat])
        at = tuple(o + d for o, d in zip(origin, in_array(
            axes, [k * c for k, c in zip(j, inner, strict=True)]), strict=True))
        if offset == EMPTY and nbytes == EMPTY:
            stored.inner.append((level, at, in_array(axes, inner), None))
            continue
        assert EMPTY not in (offset, nbytes), f"{where}: entry {j} half absent"
        assert offset + nbytes <= len(data), f"{where}: entry {j} ends beyond the shard"
        assert offset >= index_span[1] or offset + nbytes <= index_span[0], \
            f"{where}: entry {j} overlaps the index"
        spans.append((offset, offset + nbytes, j))
        chunk = decode_v3(config["codecs"], data[offset:offset + nbytes], inner, dtype, fill,
                          at, stored, level, axes)
        stored.inner.append((level, at, in_array(axes, inner), chunk))
        region = tuple(slice(k * c, (k + 1) * c) for k, c in zip(j, inner, strict=True))
        out[(*region, ...)] = chunk  # (`...`: a 0-d object chunk's element, not the chunk)
    spans.sort()
    for (_, end, j), (begin, _, k) in zip(spans, spans[1:], strict=False):
        assert end <= begin, f"{where}: entries {j} and {k} overlap"
    unreferenced = len(data) - size - sum(e - b for b, e, _ in spans)
    assert unreferenced <= UNREFERENCED_BOUND, \
        f"{where}: {unreferenced} unreferenced bytes (bound {UNREFERENCED_BOUND})"
    if not spans:
        stored.inner.append((level, origin, in_array(axes, shape), "no inner chunks"))
    return out


def decode_v2(case, data):
    buf = data
    if case.compressor is not None:
        buf = numcodecs.get_codec(dict(case.compressor)).decode(buf)
    for f in reversed(case.filters or []):
        buf = numcodecs.get_codec(dict(f)).decode(buf)
    if case.dtype.kind == "O":  # the vlen-utf8 filter gave the strings
        return np.asarray(buf, object).reshape(case.chunks, order=case.order)
    raw = ensure_bytes(buf)
    assert len(raw) == math.prod(case.chunks) * case.dtype.itemsize, "v2 chunk of wrong size"
    return np.frombuffer(raw, case.dtype).reshape(case.chunks, order=case.order)


# -- the stored state -----------------------------------------------------------------------------

def snapshot(case, root, store):
    """Every stored key (hidden files included) and its bytes."""
    if case.memory:
        return {k: bytes(store.get(k)) for k in store.list_prefix("")}
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            key = os.path.relpath(path, root).replace(os.sep, "/")
            if key.startswith(".zarrkit-locks/"):
                continue  # the file store's lock files (empty, never data)
            with open(path, "rb") as f:
                out[key] = f.read()
    return out


def parse_key(case, key):
    rank = len(case.shape)
    if case.fmt == 3 and case.encoding["name"] == "default":
        sep = case.encoding["configuration"]["separator"]
        if key == "c":
            parts = []
        elif key.startswith("c" + sep):
            parts = key[2:].split(sep)
        else:
            return None
    else:
        sep = case.separator if case.fmt == 2 else case.encoding["configuration"]["separator"]
        parts = [] if key == "0" and rank == 0 else key.split(sep)
    if len(parts) != rank or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def strict_json(raw, key):
    def refuse(name):
        raise AssertionError(f"{key}: {name} is not JSON")
    return json.loads(raw, parse_constant=refuse)


def check_metadata(case, model, keys):
    shape = list(model.values.shape)
    if case.fmt == 3:
        doc = strict_json(keys["zarr.json"], "zarr.json")
        assert doc["zarr_format"] == 3 and doc["node_type"] == "array", doc
        assert doc["shape"] == shape, (doc["shape"], shape)
        assert doc["chunk_grid"] == {"name": "regular",
                                     "configuration": {"chunk_shape": list(case.chunks)}}
        assert doc.get("attributes", {}) == model.attrs, (doc.get("attributes"), model.attrs)
        assert doc["data_type"] == ("string" if case.dtype.kind == "O" else str(case.dtype)), \
            doc["data_type"]
        assert same_bits(fill_scalar(doc["fill_value"], case.dtype), case.fill_value), doc
        assert not {".zarray", ".zattrs"} & set(keys)
        return
    doc = strict_json(keys[".zarray"], ".zarray")
    assert doc["zarr_format"] == 2 and doc["shape"] == shape, (doc["shape"], shape)
    assert doc["chunks"] == list(case.chunks) and doc["order"] == case.order, doc
    assert doc.get("dimension_separator", ".") == case.separator, doc
    assert np.dtype(doc["dtype"]) == case.dtype, doc["dtype"]
    assert (doc["fill_value"] is None) == case.null_fill, doc["fill_value"]
    assert same_bits(fill_scalar(doc["fill_value"], case.dtype), case.fill_value), doc
    attrs = strict_json(keys[".zattrs"], ".zattrs") if ".zattrs" in keys else {}
    assert attrs == model.attrs, (attrs, model.attrs)
    assert "zarr.json" not in keys


def check_chunk_values(case, model, coords, chunk, grid_chunks):
    """The decoded chunk's part within the shape is the model's; the rest the fill value."""
    shape = model.values.shape
    region = tuple(slice(c * n, c * n + n) for c, n in zip(coords, grid_chunks, strict=True))
    inside = tuple(slice(0, max(0, min(n, s - r.start)))
                   for n, s, r in zip(grid_chunks, shape, region, strict=True))
    expected, got = model.values[(*region, ...)], chunk[(*inside, ...)]  # 0-d: arrays too
    if case.null_fill:  # only written elements have defined values
        mask = model.written[region]
        expected, got = expected[mask], got[mask]
    assert same_bits(got, expected), f"chunk {coords}: stored {got!r}, model {expected!r}"
    if not case.null_fill:
        beyond = np.ones(chunk.shape, bool)
        beyond[inside] = False
        assert all_bits(chunk[beyond], case.fill_value), \
            f"chunk {coords}: part beyond the shape is not the fill value: {chunk[beyond]!r}"


def written_within(model, origin, shape):
    region = tuple(slice(o, o + n) for o, n in zip(origin, shape, strict=True))
    return bool(model.written[region].any())


def beyond(origin, shape):
    return any(o >= s for o, s in zip(origin, shape, strict=True))


def check_stored(case, model, keys):
    check_metadata(case, model, keys)
    shape = model.values.shape
    grid = [-(-s // c) for s, c in zip(shape, case.chunks, strict=True)]
    chunks = {}
    for key, data in keys.items():
        name = key.rsplit("/", 1)[-1]
        assert not name.endswith(".partial"), f"temp file {key} left behind"
        if key in METADATA:
            continue
        coords = parse_key(case, key)
        assert coords is not None, f"stored key {key!r} is no chunk key"
        assert all(c < n for c, n in zip(coords, grid, strict=True)), \
            f"chunk {key!r} lies outside the grid {grid} of shape {shape}"
        chunks[coords] = data
    for coords, data in chunks.items():
        stored = Stored()
        origin = tuple(c * n for c, n in zip(coords, case.chunks, strict=True))
        if case.fmt == 2:
            chunk = decode_v2(case, data)
        else:
            chunk = decode_v3(case.codecs, data, tuple(case.chunks), case.dtype,
                              case.fill_value, origin, stored, 0)
        check_chunk_values(case, model, coords, chunk, case.chunks)
        if not case.keeps_written:
            assert not all_bits(chunk, case.fill_value), f"chunk {coords} is all fill value"
        for level, at, inner, got in stored.inner:
            kept = case.keeps_written  # at every level
            if isinstance(got, str):  # a shard at level - 1 holding no inner chunk: under
                # write_empty_chunks it would hold those written; else it is all fill
                raise AssertionError(f"shard at {at} (level {level - 1}) holds no inner chunk")
            elif got is not None:
                assert not beyond(at, shape), \
                    f"inner chunk at {at} (level {level}) lies beyond the shape {shape}"
                assert kept or not all_bits(got, case.fill_value), \
                    f"inner chunk at {at} (level {level}) is all fill value"
            elif kept:
                assert not written_within(model, at, inner), \
                    f"inner chunk at {at} (level {level}) was written but is not stored"
    if case.keeps_written:
        for coords in np.ndindex(*grid):
            origin = tuple(c * n for c, n in zip(coords, case.chunks, strict=True))
            if written_within(model, origin, case.chunks):
                assert coords in chunks, f"chunk {coords} was written but is not stored"


# -- the readers ----------------------------------------------------------------------------------

def assert_reads(case, model, got, who, shape=None):
    """`got` is the model's values; read by a handle whose cached `shape` is stale, they are
    the model's within both shapes and the fill value beyond the current one (erased)."""
    expected, written = model.values, model.written
    if shape is not None and shape != expected.shape:
        common = tuple(slice(0, min(a, b)) for a, b in zip(shape, expected.shape, strict=True))
        expected, written = np.full(shape, case.fill_value, case.dtype), np.zeros(shape, bool)
        expected[common], written[common] = model.values[common], model.written[common]
    got = np.asarray(got)
    assert got.shape == expected.shape, (who, got.shape, expected.shape)
    if case.null_fill:
        got, expected = got[written], expected[written]
    assert same_bits(got.astype(case.dtype), expected), \
        f"{who} reads {got!r}, the model is {expected!r}"


def peer_dir(case, root, keys, scratch):
    if not case.memory:
        return root
    shutil.rmtree(scratch, ignore_errors=True)
    for key, data in keys.items():
        path = os.path.join(scratch, *key.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    return scratch


def check_reads(case, model, handle, where, keys, path):
    # A handle reads with the shape it has seen (as zarr-python's): another may have resized.
    assert_reads(case, model, handle[...], "zarrkit", handle.shape)
    assert_reads(case, model, zarrkit.open_array(where)[...], "zarrkit (reopened)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if case.zarr_reads:
            z = zarr.open_array(zarr.storage.LocalStore(path, read_only=True), mode="r",
                                zarr_format=case.fmt)
            assert_reads(case, model, z[...], "zarr-python")
    if case.tensorstore_reads:
        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}},
                    open=True, read=True, context=ts.Context()).result()
        assert_reads(case, model, t.read().result(), "TensorStore")


# -- running a case -------------------------------------------------------------------------------

#: Size thresholds that choose the engine's write paths, made tiny so that these small arrays
#: take the paths of large ones too: chunks written by the pool in runs encoded by one call
#: (not inline), batches of a few chunks, batch buffers too small for a run's room.
SMALL_THRESHOLDS = {"zarrkit.engine.chunk_io": {
    "INLINE_READ_BYTES": 0, "INLINE_SLOW_READ_BYTES": 0, "INLINE_CHUNK_BYTES": 0,
    "RUN_BYTES": 64, "WRITE_BATCH_BYTES": 64, "WRITE_ARENA_BYTES": 72, "MIN_SMALL_PART": 1},
    "zarrkit.scratch": {"SCRATCH_BUDGET": 0}}  # buffers beyond those kept: memory of their own


@contextlib.contextmanager
def engine_paths(case):
    """For two seeds in seven, resizes find the chunks to erase by listing the store, as they
    do for grids too large to visit, not by visiting every chunk of the grid; for two in five
    the SMALL_THRESHOLDS hold. (Other residues than the format's and the store's.)"""
    changes = {}
    if case.seed % 7 in (2, 5):  # (`zarrkit.array` is also a function's name: the module by name)
        changes["zarrkit.array"] = {"_ENUMERATE_GRID_UP_TO": 0}
    if case.seed % 5 in (1, 3):
        changes.update(SMALL_THRESHOLDS)
    saved = {(m, k): getattr(sys.modules[m], k) for m, names in changes.items() for k in names}
    try:
        for m, names in changes.items():
            for k, v in names.items():
                setattr(sys.modules[m], k, v)
        yield
    finally:
        for (m, k), v in saved.items():
            setattr(sys.modules[m], k, v)


def run(case, ops, root):
    """Create the array, apply `ops` and check everything after each; AssertionError names the
    failing step."""
    store = MemoryStore() if case.memory else None
    where = store if case.memory else root
    handles = [case.create(where)] * 2
    model = Model(case)
    for step, op in enumerate([None, *ops]):
        if op is not None:
            model.apply(op)
            with engine_paths(case):
                apply(handles, op, case, where)
        keys = snapshot(case, root, store)
        try:
            check_stored(case, model, keys)
            check_reads(case, model, handles[0], where, keys,
                        peer_dir(case, root, keys, root + ".peer"))
        except AssertionError as e:
            raise AssertionError(f"after step {step} {show(op) if op else '(created)'}: {e}"
                                 ) from e


def fails(case, ops, root):
    shutil.rmtree(root, ignore_errors=True)
    try:
        run(case, ops, root)
    except AssertionError:
        return True
    except Exception:  # a shortened sequence may not apply (a selection beyond a shape)
        return False
    return False


def minimise(case, ops, base):
    """`ops` with every operation dropped whose absence keeps the case failing."""
    for i in reversed(range(len(ops))):
        fewer = ops[:i] + ops[i + 1:]
        if fails(case, fewer, os.path.join(base, f"min{i}")):
            ops = fewer
    return ops


def check_case(case, ops, tmp_path):
    try:
        run(case, ops, str(tmp_path / "a.zarr"))
    except AssertionError as e:
        small = minimise(case, ops, str(tmp_path))
        raise AssertionError(f"{case}\nminimal ops: [{', '.join(map(show, small))}]\n{e}"
                             ) from None


@pytest.mark.parametrize("seed", SEEDS)
def test_stored_state(seed, tmp_path):
    case = Case(seed)
    check_case(case, gen_ops(case), tmp_path)


# -- regressions the fuzzer found -----------------------------------------------------------------

def test_block_write_through_a_handle_that_missed_a_resize(tmp_path):
    """Seed 56: a block written through a handle that missed another handle's growing resize
    was cut to the handle's old shape (block 2 of 4:6 written as 4:5), while other writes
    follow the stored shape."""
    path = str(tmp_path / "a.zarr")
    stale = zarrkit.create(path, (5,), "i4", chunks=(2,), fill_value=0)
    zarrkit.open_array(path).resize((8,))
    stale.blocks[2] = 7
    np.testing.assert_array_equal(zarrkit.open_array(path)[...], [0, 0, 0, 0, 7, 7, 0, 0])
    assert stale.shape == (8,)


def test_mask_write_through_a_handle_that_missed_a_resize(tmp_path):
    """A mask of the stored shape, given to a handle that missed another handle's resize, was
    refused by set_mask_selection (checked against the handle's old shape), while
    `vindex[mask] = value` took it."""
    path = str(tmp_path / "a.zarr")
    stale = zarrkit.create(path, (5,), "i4", chunks=(2,), fill_value=0)
    zarrkit.open_array(path).resize((8,))
    mask = np.arange(8) == 6
    stale.set_mask_selection(mask, 3)
    np.testing.assert_array_equal(zarrkit.open_array(path)[...], np.where(mask, 3, 0))

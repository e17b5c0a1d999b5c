"""Seeded differential fuzzing of stored formats: zarrkit, zarr-python 3.1 (plain and with the
zarrs pipeline) and TensorStore write and read the same randomly configured arrays.

Each seed draws a v3 or v2 array configuration (rank 0-4, edge and zero-size chunks, nested
sharding, data type, fill value in its spellings, codec chain, key encoding, attributes,
write_empty_chunks) and a sequence of partial writes (some of them writing the fill value).

- zarrkit creates the array from keywords (its zarr.json/.zarray must be the generated
  document), writes the sequence and stores exactly the expected chunks (and inner chunks of
  shards); it reads a copy whose metadata is spelled otherwise (defaults left out, hex fill).
- Every peer reads zarrkit's array (whole and a part) and the copy, and reports its metadata.
- Every peer creates its own array (its own zarr.json/.zarray, except TensorStore's v2 F order)
  and writes the sequence: zarrkit reads it and reports the same metadata, the stored chunks
  (and inner chunks) are zarrkit's, zarrkit overwrites a region and the peer reads it; then the
  peer shrinks and grows it and zarrkit reads what the peer reads.
- zarrkit shrinks, grows and appends to its array: the data cut off reads as the fill value,
  and the peers read the same.

Data compares bit for bit (NaN payloads, -0.0), byte order aside. A configuration is left out
for a peer only for a documented limitation of that peer, counted under `skip:<peer>:<reason>`
(`pytest -s` prints the counts):

- zarrs 0.2.3 (strict pipeline): refuses numpy kinds S/U/M/m; v2 F order, non-native byte
  order, the delta filter and zstd with checksum ("unsupported codec zstd"); strided writes and
  reads (DiscontiguousArrayError: "Step size greater than 1 is not supported"), writes with
  integer indices (UnsupportedVIndexingError: "(1,) != (2, 1)"); v2 complex arrays with a null
  fill ("incompatible fill value metadata") and float16 with fixedscaleoffset ("does not
  support the FixedScaleOffset codec"). Decoding part of a blosc stream (an edge chunk, part of
  a shard) truncates its output to a multiple of blosc's typesize, so where blosc follows
  another bytes->bytes codec or sharding_indexed (whose output has any length), or where the
  typesize does not divide the element size, the next decoder fails, on zarrs' own chunks too:
  "incomplete frame" (zstd), "unexpected end of file" (gzip), "invalid byte range ..8 for bytes
  of length 4" (crc32c), "The shard index references out-of-bounds bytes" (sharding); zarrkit,
  zarr-python and TensorStore read these. It ignores write_empty_chunks=True (keys are not
  compared then) and swaps real and imaginary parts when it decodes part of a big-endian
  complex chunk.
- zarr-python 3.1.6: checks sharding inner chunks against the chunk shape before a preceding
  transpose (refuses valid arrays; zarrs too, since zarr-python opens the array); cannot write
  sharded 0-d arrays (IndexError). With write_empty_chunks=False and a complex fill value with
  a NaN part it drops every chunk whose values all have a NaN part (`1.5+nanj` written under
  the fill `nan+0j` reads back as `nan+0j`, v2 and v3: data loss). Under a NaN fill it counts a
  chunk of any NaNs as empty, so NaNs of another sign or payload read back as the fill's NaN
  (compared NaN-blind, keys not compared). Under a v2 null fill it drops chunks equal to zero,
  which zarrkit keeps (there is no fill value to equal; keys not compared).
- TensorStore 0.1.86: refuses bytes->bytes codecs after sharding_indexed; has no v2 "<U" or
  datetime types, exposes "|S<n>" with an extra byte dimension, supports no v2 filters, and
  refuses the v2 zstd compressor's "checksum" member ("Object includes extra members"); it
  refuses repeated dimension names ("Dimension label(s) "x" not unique"), which the v3 spec
  only recommends against.
"""

from __future__ import annotations

import base64
import collections
import json
import os
import random
import shutil
import warnings

import numcodecs
import numpy as np
import pytest

import zarrkit

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")
zarrs = pytest.importorskip("zarrs")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning",
                                        "ignore::DeprecationWarning", "ignore::RuntimeWarning")

#: FUZZ_SEEDS=3000 runs ten times as many (about 90 s on two cores)
SEEDS = range(int(os.environ.get("FUZZ_SEEDS", 400)))
COUNTS: collections.Counter = collections.Counter()

ZARRS = {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True,
         "codec_pipeline.validate_checksums": True}

V3_TYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float16", "float32", "float64", "complex64", "complex128"]
#: zarr-python's extension data types (which TensorStore and zarrs lack) and numpy's names.
V3_EXTENSIONS = [
    ({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}, "<M8[s]"),
    ({"name": "numpy.timedelta64", "configuration": {"unit": "ms", "scale_factor": 1}},
     "<m8[ms]"),
    ({"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}}, "<U3"),
    ({"name": "null_terminated_bytes", "configuration": {"length_bytes": 4}}, "|S4"),
]
V2_TYPES = ["|b1", "|i1", "<i2", ">i4", "<i8", "|u1", ">u2", "<u4", "<u8", "<f2", ">f4",
            "<f8", ">f8", "<c8", ">c16", "|S4", "<U3", "<M8[s]", ">m8[ms]"]


# -- the generator --------------------------------------------------------------------------------

def gen_shape(rng, rank):
    shape = [rng.choice([0, 1, 2, 3, 5, 7, 9]) if rng.random() < 0.1 else rng.randint(1, 9)
             for _ in range(rank)]
    chunks = [rng.randint(1, max(1, n + 1)) for n in shape]
    return shape, chunks


#: v3 fill values of floats given by their bits: 1.5, NaN (canonical), -Infinity.
HEX_FILLS = {2: ["0x3e00", "0x7e00", "0xfc00"], 4: ["0x3fc00000", "0x7fc00000", "0xff800000"],
             8: ["0x3ff8000000000000", "0x7ff8000000000000", "0xfff0000000000000"]}


def element_size(dtype):
    """The bytes of one element for byte order: 1 for byte strings (no `endian`)."""
    dtype = np.dtype(dtype)
    return 1 if dtype.kind == "S" else dtype.itemsize


def gen_fill(rng, dtype, fmt=2):
    dtype = np.dtype(dtype)
    kind = dtype.kind
    if kind == "b":
        return rng.choice([False, True])
    if kind in "iu":
        return rng.choice([0, 0, 1, 7])
    if kind == "f":
        hex_fills = HEX_FILLS[dtype.itemsize] if fmt == 3 else []
        return rng.choice([0.0, 0.0, 1.5, "NaN", "Infinity", "-Infinity", *hex_fills])
    if kind == "c":
        hex_fills = [[h, 0.0] for h in HEX_FILLS[dtype.itemsize // 2]] if fmt == 3 else []
        return rng.choice([[0.0, 0.0], [1.0, -2.5], ["NaN", 0.0], [0.0, "Infinity"],
                           *hex_fills])
    if kind in "mM":
        return rng.choice([0, 86_400])
    if kind == "U":
        return rng.choice(["", "a€"])
    if kind == "S":
        return rng.choice(["", "YWI="])  # base64: b"", b"ab"
    return None


def scalar_of(value, dtype):
    """The value a JSON fill value (not null) denotes, decoded independently of zarrkit."""
    if dtype.kind == "c":
        part = np.dtype(f"{dtype.byteorder}f{dtype.itemsize // 2}".lstrip("|="))
        parts = np.array([scalar_of(v, part) for v in value], part)
        return parts.view(dtype)[0]
    if dtype.kind == "S":
        return np.array(base64.b64decode(value), dtype)[()]
    if dtype.kind == "U":
        return np.array(value, dtype)[()]
    if isinstance(value, str) and value.startswith("0x"):
        return np.array(int(value, 16), f"u{dtype.itemsize}").view(dtype.newbyteorder("="))[()]
    if isinstance(value, str):
        return np.array(float(value), dtype)[()]
    if dtype.kind in "mM":
        return np.array(value, "i8").view(dtype.newbyteorder("="))[()]
    return np.array(value, dtype)[()]


def gen_bytes_codecs(rng, itemsize):
    out = []
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        name = rng.choice(["blosc", "zstd", "gzip", "crc32c"])
        if name == "blosc":
            config = {"cname": rng.choice(["lz4", "lz4hc", "blosclz", "zstd", "zlib"]),
                      "clevel": rng.randint(0, 9),
                      "shuffle": rng.choice(["noshuffle", "shuffle", "bitshuffle"]),
                      "typesize": rng.choice([itemsize, itemsize, 1, 4]), "blocksize": 0}
            if config["shuffle"] == "noshuffle" and rng.random() < 0.3:
                del config["typesize"]  # only shuffling needs it
            out.append({"name": "blosc", "configuration": config})
        elif name == "zstd":
            out.append({"name": "zstd", "configuration": {"level": rng.randint(-1, 5),
                                                          "checksum": rng.random() < 0.5}})
        elif name == "gzip":
            out.append({"name": "gzip", "configuration": {"level": rng.randint(0, 9)}})
        else:
            out.append({"name": "crc32c"})
    return out


def gen_bytes_codec(rng, itemsize=8):
    """Single-byte types have no byte order, so no `endian` (zarrkit and TensorStore drop it)."""
    if itemsize == 1:
        return {"name": "bytes"}
    return {"name": "bytes", "configuration": {"endian": rng.choice(["little", "big"])}}


def gen_transpose(rng, rank):
    order = list(range(rank))
    rng.shuffle(order)
    return {"name": "transpose", "configuration": {"order": order}}


def gen_inner_chain(rng, rank, itemsize, shard_shape, depth):
    """An array->bytes chain for chunks of `shard_shape`, possibly sharded again."""
    chain = [gen_transpose(rng, rank)] if rank and rng.random() < 0.25 else []
    if depth < 2 and rng.random() < (0.35 if depth == 0 else 0.15):
        if chain:  # inner chunks divide the shard as the transpose lays it out
            shard_shape = [shard_shape[i] for i in chain[0]["configuration"]["order"]]
        inner = [rng.choice([d for d in range(1, n + 1) if n % d == 0]) for n in shard_shape]
        chain.append({"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner,
            "codecs": gen_inner_chain(rng, rank, itemsize, inner, depth + 1),
            "index_codecs": [gen_bytes_codec(rng)] + ([{"name": "crc32c"}]
                                                      if rng.random() < 0.6 else []),
            "index_location": rng.choice(["start", "end"])}})
    else:
        chain.append(gen_bytes_codec(rng, itemsize))
    if chain[-1]["name"] != "sharding_indexed" or rng.random() < 0.15:
        chain += gen_bytes_codecs(rng, itemsize)
    return chain


def gen_v3(rng):
    rank = rng.choice([0, 1, 1, 2, 2, 2, 3, 4])
    shape, chunks = gen_shape(rng, rank)
    data_type = dtype = rng.choice(V3_TYPES)
    if rng.random() < 0.1:
        data_type, dtype = rng.choice(V3_EXTENSIONS)
    doc = {"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": data_type,
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
           "chunk_key_encoding": {"name": rng.choice(["default", "v2"]),
                                  "configuration": {"separator": rng.choice(["/", "."])}},
           "fill_value": gen_fill(rng, dtype, 3),
           "codecs": gen_inner_chain(rng, rank, element_size(dtype), chunks, 0),
           "attributes": gen_attributes(rng)}
    if rng.random() < 0.5:
        doc["dimension_names"] = [rng.choice(["x", "y", "t", None]) for _ in range(rank)]
    return doc


def gen_attributes(rng):
    return {f"k{i}": rng.choice([1, "text", [1, 2.5], {"a": None}, True])
            for i in range(rng.randint(0, 3))}


V2_COMPRESSORS = [
    None,
    {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0},
    {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0},
    {"id": "blosc", "cname": "blosclz", "clevel": 9, "shuffle": 0, "blocksize": 0},
    {"id": "zstd", "level": 3, "checksum": False},
    {"id": "zstd", "level": 1, "checksum": True},
    {"id": "zlib", "level": 1},
    {"id": "gzip", "level": 5},
    {"id": "bz2", "level": 9},
]


def gen_v2_filters(rng, dtype):
    """Lossless filters valid for `dtype` (fixedscaleoffset gets values it keeps exactly)."""
    kind = np.dtype(dtype).kind
    choice = rng.random()
    if kind in "iu" and choice < 0.25:
        return [{"id": "delta", "dtype": dtype}]
    if kind == "f" and choice < 0.2:
        return [{"id": "fixedscaleoffset", "offset": 0, "scale": 4, "dtype": dtype,
                 "astype": "<i4"}]
    if kind in "iuf" and choice < 0.35:
        return [{"id": "shuffle", "elementsize": np.dtype(dtype).itemsize}]
    return None


def gen_v2(rng):
    rank = rng.choice([0, 1, 1, 2, 2, 2, 3, 4])
    shape, chunks = gen_shape(rng, rank)
    dtype = rng.choice(V2_TYPES)
    filters = gen_v2_filters(rng, dtype)
    fill = None if rng.random() < 0.2 else gen_fill(rng, dtype)
    if filters and filters[0]["id"] == "fixedscaleoffset" and isinstance(fill, str):
        fill = 0.0  # NaN and infinities have no integer encoding
    doc = {"zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": dtype,
           "compressor": rng.choice(V2_COMPRESSORS), "fill_value": fill,
           "order": rng.choice(["C", "F"]), "filters": filters,
           "dimension_separator": rng.choice([".", "/"])}
    return doc, gen_attributes(rng)


def gen_writes(rng, shape):
    """Selections and whether each writes the fill value: half the cases only contiguous
    slices (which zarrs takes), the others also strided slices and integers."""
    plain = rng.random() < 0.5
    writes = []
    for _ in range(rng.randint(1, 4)):
        sel = []
        for n in shape:
            start = rng.randint(0, n)
            stop = rng.randint(start, n)
            if n and not plain and rng.random() < 0.1:  # an integer drops the dimension
                sel.append(rng.randrange(n))
            else:
                sel.append(slice(start, stop, 1 if plain else rng.choice([1, 1, 2])))
        writes.append((tuple(sel), rng.random() < 0.3))
    if rng.random() < 0.3:  # the whole array at the fill value (every chunk empties) first
        writes.insert(rng.randrange(len(writes)), (tuple(slice(0, n) for n in shape), True))
    return writes


class Case:
    def __init__(self, seed):
        rng = random.Random(seed)
        self.seed = seed
        self.fmt = 2 if seed % 3 == 0 else 3
        if self.fmt == 3:
            self.doc = gen_v3(rng)
            self.attrs = self.doc["attributes"]
            self.dtype = np.dtype(dict((json.dumps(d), n) for d, n in V3_EXTENSIONS)
                                  .get(json.dumps(self.doc["data_type"]),
                                       self.doc["data_type"]))
            self.chunks = self.doc["chunk_grid"]["configuration"]["chunk_shape"]
        else:
            self.doc, self.attrs = gen_v2(rng)
            self.dtype = np.dtype(self.doc["dtype"])
            self.chunks = self.doc["chunks"]
        self.shape = tuple(self.doc["shape"])
        self.write_empty = rng.random() < 0.3
        self.writes = gen_writes(rng, self.shape)
        self.overwrite = self.writes[0][0] if rng.random() < 0.2 else \
            gen_writes(rng, self.shape)[0][0]
        self.values = random_values(np.random.default_rng(seed), self.dtype, self.shape,
                                    self.fixed_scale)
        self.new = random_values(np.random.default_rng(seed + 10_000), self.dtype, self.shape,
                                 self.fixed_scale)

    @property
    def fixed_scale(self):
        filters = self.doc.get("filters") or []
        return any(f["id"] == "fixedscaleoffset" for f in filters)

    @property
    def fill(self):
        """The fill value as a scalar of the array's type (missing chunks read as it)."""
        value = self.doc["fill_value"]
        if value is None:
            return np.zeros((), self.dtype)[()]
        return scalar_of(value, self.dtype)

    def sharded(self):
        return self.fmt == 3 and any(c["name"] == "sharding_indexed" for c in self.doc["codecs"])

    def expected(self):
        """The array after the writes, computed by numpy."""
        out = np.full(self.shape, self.fill, self.dtype)
        for sel, is_fill in self.writes:
            out[sel] = self.fill if is_fill else self.values[sel]
        return out

    def chunk_key(self, index):
        if self.fmt == 2:
            return self.doc["dimension_separator"].join(map(str, index)) if index else "0"
        encoding = self.doc["chunk_key_encoding"]
        sep = encoding["configuration"]["separator"]
        if encoding["name"] == "v2":
            return sep.join(map(str, index)) if index else "0"
        return sep.join(["c", *map(str, index)])

    def __repr__(self):
        return f"seed {self.seed}: {json.dumps(self.doc)} write_empty={self.write_empty}"


SPECIALS = {2: [0x7E00, 0xFE00, 0x7C00, 0xFC00, 0x8000, 0x0001],
            4: [0x7FC00000, 0xFFC00000, 0x7F800000, 0xFF800000, 0x80000000, 1],
            8: [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000000,
                0xFFF0000000000000, 0x8000000000000000, 1]}


def random_values(rng, dtype, shape, fixed_scale=False):
    n = int(np.prod(shape))
    native = dtype.newbyteorder("=")
    if dtype.kind == "b":
        out = rng.random(n) < 0.5
    elif dtype.kind in "iu":
        info = np.iinfo(native)
        out = rng.integers(info.min, info.max, n, dtype=native, endpoint=True)
    elif dtype.kind in "mM":
        out = rng.integers(-(2**40), 2**40, n).view(native)
    elif dtype.kind == "S":
        out = np.frombuffer(rng.bytes(n * dtype.itemsize), dtype)
    elif dtype.kind == "U":
        out = np.array(["".join(rng.choice(list("ab€ z"), rng.integers(0, 4))) for _ in range(n)],
                       dtype)
    elif fixed_scale:
        out = (rng.integers(-400, 400, n) / 4).astype(native)
    elif dtype.kind == "c":
        part = np.dtype(f"f{native.itemsize // 2}")
        parts = random_values(rng, part, (2 * n,))
        out = parts.view(native)
    else:
        out = (rng.standard_normal(n) * 100).astype(native)
        specials = np.array(SPECIALS[native.itemsize], f"u{native.itemsize}").view(native)
        picks = rng.random(n) < 0.2
        out[picks] = rng.choice(specials, int(picks.sum()))
    return out.astype(dtype).reshape(shape)


# -- comparisons ----------------------------------------------------------------------------------

def native(a):
    a = np.asarray(a)
    return a.astype(a.dtype.newbyteorder("=")) if a.dtype.byteorder not in "=|" else a


def any_nan(a):
    """`a` with every NaN (any sign or payload) made the canonical one."""
    if a.dtype.kind not in "fc":
        return a
    a = a.copy()
    parts = a.view(f"f{a.dtype.itemsize // 2}") if a.dtype.kind == "c" else a
    parts[np.isnan(parts)] = np.nan
    return a


def assert_bits(actual, expected, what, only=None, nan_blind=False):
    if np.ndim(actual) == 0 and expected.dtype.kind in "SU":
        actual = np.array(actual, expected.dtype)  # 0-d reads return scalars, as in zarr-python
    actual, expected = native(actual), native(expected)
    if nan_blind:
        actual, expected = any_nan(actual), any_nan(expected)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (what, actual.dtype, expected.dtype)
    if only is not None:
        actual, expected = actual[only], expected[only]
    if actual.tobytes() != expected.tobytes():
        bad = np.flatnonzero(actual.reshape(-1).view(np.uint8) != expected.reshape(-1)
                             .view(np.uint8)) if actual.size else []
        raise AssertionError(f"{what}: data differ (first differing byte {bad[:1]}):\n"
                             f"actual={actual!r}\nexpected={expected!r}")


def stored_keys(path, case=None):
    """Chunk keys below `path`: no metadata, no hidden (lock and temporary) files; with `case`
    and a plain sharded chain also (key, inner chunk index) of the inner chunks stored."""
    out = set()
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name not in ("zarr.json", ".zarray", ".zattrs") and not name.startswith("."):
                out.add(os.path.relpath(os.path.join(root, name), path).replace(os.sep, "/"))
    if case is not None and shard_layout(case) is not None:
        for key in list(out):
            out |= inner_chunks(case, key, open(os.path.join(path, key), "rb").read())
    return out


def expected_keys(case, expected, writes):
    """The chunk (shard) keys zarrkit must store: every chunk touched by a write, or with
    write_empty_chunks off (and a fill value) those that differ from the fill bit for bit."""
    touched = np.zeros(case.shape, bool)
    for sel, _ in writes:
        touched[sel] = True
    flat = np.ascontiguousarray(native(expected)).view(np.uint8)
    fill = np.ascontiguousarray(native(np.array(case.fill, case.dtype))).view(np.uint8)
    differs = (flat.reshape(case.shape + (fill.size,)) != fill.reshape(-1)).any(axis=-1)
    keep = touched if case.write_empty or case.doc["fill_value"] is None else differs
    keys = set()
    inner = shard_layout(case)
    for index in np.ndindex(*(-(-n // c) for n, c in zip(case.shape, case.chunks, strict=True))):
        region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(index, case.chunks, strict=True))
        if keep[region].any():
            keys.add(case.chunk_key(index))
        if inner is None:
            continue
        grid = [c // n for c, n in zip(case.chunks, inner["chunk_shape"], strict=True)]
        for j in np.ndindex(*grid):  # inner chunks, as their index entries show them
            sub = tuple(slice(r.start + k * n, r.start + (k + 1) * n)
                        for r, k, n in zip(region, j, inner["chunk_shape"], strict=True))
            if keep[sub].any():
                keys.add((case.chunk_key(index), j))
    return keys


def shard_layout(case):
    """The sharding configuration when the chain is one sharding codec (its shards' index can
    be read without decoding anything), else None."""
    if case.fmt == 2 or [c["name"] for c in case.doc["codecs"]] != ["sharding_indexed"]:
        return None
    return case.doc["codecs"][0]["configuration"]


def inner_chunks(case, key, data):
    """(key, inner chunk index) of every inner chunk the shard `data` stores."""
    config = shard_layout(case)
    grid = [c // n for c, n in zip(case.chunks, config["chunk_shape"], strict=True)]
    size = 16 * int(np.prod(grid))
    endian = config["index_codecs"][0].get("configuration", {}).get("endian", "little")
    raw = data[:size] if config["index_location"] == "start" else \
        data[len(data) - size - 4 * (len(config["index_codecs"]) > 1):][:size]
    index = np.frombuffer(raw, "<u8" if endian == "little" else ">u8").reshape(grid + [2])
    return {(key, j) for j in np.ndindex(*grid) if index[j + (0,)] != 2**64 - 1}


def defined(case, writes):
    """Where values are defined: all of it, except unwritten elements under a v2 null fill."""
    if case.doc.get("fill_value", 0) is not None or case.fmt == 3:
        return None
    mask = np.zeros(case.shape, bool)
    for sel, _ in writes:
        mask[sel] = True
    return mask


# -- the implementations --------------------------------------------------------------------------

def variant_doc(case, rng):
    """The document in other spellings of the same metadata, as other writers produce them."""
    doc = json.loads(json.dumps(case.doc))
    if case.fmt == 2:
        if doc["dimension_separator"] == "." and rng.random() < 0.5:
            del doc["dimension_separator"]  # older writers leave out the default
        if case.dtype.kind == "f" and doc["fill_value"] in (0.0, 1.5) and rng.random() < 0.5:
            doc["fill_value"] = {0.0: 0, 1.5: 1.5}[doc["fill_value"]]
        return doc
    if not doc["attributes"] and rng.random() < 0.5:
        del doc["attributes"]
    if rng.random() < 0.5:
        doc["storage_transformers"] = []
    encoding = doc["chunk_key_encoding"]
    if (encoding["name"], encoding["configuration"]["separator"]) in (("default", "/"),
                                                                        ("v2", ".")):
        if rng.random() < 0.5:
            del encoding["configuration"]  # the encoding's default separator
    if not any(doc.get("dimension_names") or [1]):
        del doc["dimension_names"]
    if case.dtype.kind == "f" and rng.random() < 0.5:
        bits = np.array(case.fill, case.dtype).view(f"u{case.dtype.itemsize}")
        doc["fill_value"] = f"0x{int(bits):0{2 * case.dtype.itemsize}x}"
    return doc


def put_metadata(case, path):
    os.makedirs(path)
    name = "zarr.json" if case.fmt == 3 else ".zarray"
    with open(os.path.join(path, name), "w") as f:
        json.dump(case.doc, f)
    if case.fmt == 2 and case.attrs:
        with open(os.path.join(path, ".zattrs"), "w") as f:
            json.dump(case.attrs, f)


def zk_create(case, path):
    """zarrkit creates the array from keywords, as a user would."""
    # JSON spellings of numbers ("NaN", "0x7fc00000") are taken; strings and bytes as values
    fill = case.doc["fill_value"]
    fill = case.fill if case.dtype.kind in "SU" and fill is not None else fill
    common = {"chunks": case.chunks, "fill_value": fill,
              "write_empty_chunks": case.write_empty, "attributes": case.attrs or None}
    if case.fmt == 3:
        return zarrkit.create(path, case.shape, case.doc["data_type"], codecs=case.doc["codecs"],
                              chunk_key_encoding=case.doc["chunk_key_encoding"],
                              dimension_names=case.doc.get("dimension_names"), **common)
    return zarrkit.create(path, case.shape, case.doc["dtype"], zarr_format=2,
                          compressor=case.doc["compressor"], filters=case.doc["filters"],
                          order=case.doc["order"],
                          dimension_separator=case.doc["dimension_separator"], **common)


def zk_open(case, path):
    return zarrkit.open_array(path, write_empty_chunks=case.write_empty)


def zk_write(handle, sel, value):
    handle[sel] = value


class ZarrPython:
    name, config = "zarr", {}

    def __init__(self, case):
        self.case = case

    def limitation(self):
        case = self.case
        if case.fmt == 3 and _transpose_before_sharding(case.doc["codecs"]):
            return "sharding after transpose"
        if case.fmt == 3 and not case.shape and case.sharded():
            return "sharded 0-d write"
        if nan_complex_fill(case) and not case.write_empty:
            return "drops complex chunks with NaN parts under a NaN fill"
        return None

    def create(self, path):
        """zarr-python writes its own zarr.json (.zarray, .zattrs) from keywords."""
        case = self.case
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if case.fmt == 3:
                doc = case.doc
                return zarr.create(
                    store=zarr.storage.LocalStore(path), shape=case.shape, chunks=case.chunks,
                    dtype=case.dtype, codecs=doc["codecs"], fill_value=case.fill,
                    chunk_key_encoding=doc["chunk_key_encoding"], zarr_format=3,
                    dimension_names=doc.get("dimension_names"), attributes=case.attrs)
            doc = case.doc
            filters = [numcodecs.get_codec(dict(f)) for f in doc["filters"] or ()]
            compressor = doc["compressor"] and numcodecs.get_codec(dict(doc["compressor"]))
            return zarr.create_array(
                store=zarr.storage.LocalStore(path), shape=case.shape, chunks=case.chunks,
                dtype=case.dtype, fill_value=None if doc["fill_value"] is None else case.fill,
                filters=filters or None, compressors=compressor, order=doc["order"],
                zarr_format=2, attributes=case.attrs or None,
                chunk_key_encoding={"name": "v2", "separator": doc["dimension_separator"]})

    def nan_blind(self):
        """zarr-python counts a chunk as empty when all its values are NaN under a NaN fill, so
        a chunk of NaNs of another sign or payload reads back as the fill's NaN."""
        case = self.case
        return case.dtype.kind == "f" and fill_is_nan(case) and not case.write_empty

    def compares_keys(self):
        """Whether chunk keys must match zarrkit's. Under a v2 null fill no chunk equals "the"
        fill value, so zarrkit keeps all it writes; zarr-python drops those equal to zero."""
        return (self.case.fmt == 3 or self.case.doc["fill_value"] is not None) and \
            not self.nan_blind()

    def _config(self):
        return {**self.config, "array.write_empty_chunks": self.case.write_empty}

    def open(self, path):
        with zarr.config.set(self._config()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return zarr.open_array(zarr.storage.LocalStore(path), mode="r+",
                                   zarr_format=self.case.fmt)

    def write(self, handle, sel, value):
        with zarr.config.set(self._config()):
            handle[sel] = value

    def resize(self, path, shape):
        with zarr.config.set(self._config()):
            self.open(path).resize(shape)

    def read(self, path, sel=Ellipsis):
        with zarr.config.set(self._config()):
            return np.asarray(self.open(path)[sel])

    def report(self, path):
        a = self.open(path)
        chunks = a.chunks if a.shards is None else a.shards
        return {"shape": a.shape, "dtype": np.dtype(a.dtype), "fill": a.fill_value,
                "chunks": tuple(chunks), "attrs": dict(a.attrs)}


class Zarrs(ZarrPython):
    name, config = "zarrs", ZARRS

    def limitation(self):
        case = self.case
        if case.dtype.kind in "SUmM":
            return "numpy kinds S/U/M/m"
        if case.fmt == 2 and (case.doc["order"] == "F" or case.dtype.byteorder == ">"):
            return "v2 F order or big-endian"
        if case.fmt == 2 and any(f["id"] == "delta" for f in case.doc["filters"] or ()):
            return "v2 delta filter"
        if case.fmt == 2 and (case.doc["compressor"] or {}).get("checksum"):
            return "v2 zstd checksum"
        if any(not isinstance(s, slice) or s.step != 1
               for sel in [case.overwrite] + [sel for sel, _ in case.writes] for s in sel):
            return "strided or integer selections"
        if case.dtype.kind == "c" and (case.dtype.byteorder == ">" or _big_endian(case.doc)):
            return "partial reads of big-endian complex"
        if case.fmt == 2 and case.dtype.kind == "c" and case.doc["fill_value"] is None:
            return "v2 complex null fill"
        if case.fmt == 2 and case.dtype == np.float16 and case.fixed_scale:
            return "v2 float16 fixedscaleoffset"
        if case.fmt == 3 and _blosc_after_bytes_codec(case.doc["codecs"], case.dtype.itemsize):
            return "blosc partial decoding of unaligned input"
        if case.fmt == 3 and _transpose_before_sharding(case.doc["codecs"]):
            return "sharding after transpose"  # zarr-python's check, made when it opens
        return None  # zarrs writes sharded 0-d arrays and NaN-part complex chunks right

    def open(self, path):
        a = super().open(path)
        assert type(a._async_array.codec_pipeline).__name__ == "ZarrsCodecPipeline"
        return a

    def compares_keys(self):
        return not self.case.write_empty and super().compares_keys()  # zarrs ignores True

    def nan_blind(self):
        return False


class TensorStore:
    name = "ts"

    def __init__(self, case):
        self.case = case

    def limitation(self):
        case = self.case
        if case.fmt == 3 and _bytes_after_sharding(case.doc["codecs"]):
            return "bytes->bytes codecs after sharding"
        if case.fmt == 3 and isinstance(case.doc["data_type"], dict):
            return "zarr-python's extension data types"
        if case.dtype.kind in "SU":
            return "v2 fixed strings"
        if case.dtype.kind in "mM":
            return "v2 datetime types"
        if case.fmt == 2 and case.doc["filters"]:
            return "v2 filters"
        if case.fmt == 2 and "checksum" in (case.doc["compressor"] or {}):
            return "v2 zstd checksum member"
        names = [n for n in case.doc.get("dimension_names") or () if n is not None]
        if len(set(names)) < len(names):
            return "repeated dimension names"
        return None

    def compares_keys(self):
        return True

    def nan_blind(self):
        return False

    def create(self, path):
        """TensorStore writes its own zarr.json (.zarray) from the document's members (v2 in
        C order: creating F-order arrays needs a chunk layout, so those get the document)."""
        doc = {k: v for k, v in self.case.doc.items() if k not in ("zarr_format", "node_type",
                                                                   "attributes")}
        if self.case.fmt == 2 and doc["order"] == "F":
            return put_metadata(self.case, path)
        ts.open({**self._spec(path), "metadata": doc}, create=True).result()
        if self.case.fmt == 3 and self.case.attrs:  # TensorStore writes no attributes
            meta = json.load(open(os.path.join(path, "zarr.json")))
            with open(os.path.join(path, "zarr.json"), "w") as f:
                json.dump({**meta, "attributes": self.case.attrs}, f)
        elif self.case.fmt == 2 and self.case.attrs:
            with open(os.path.join(path, ".zattrs"), "w") as f:
                json.dump(self.case.attrs, f)

    def _spec(self, path):
        return {"driver": "zarr3" if self.case.fmt == 3 else "zarr",
                "kvstore": {"driver": "file", "path": str(path)},
                "context": {"file_io_sync": False},
                "store_data_equal_to_fill_value": self.case.write_empty}

    def open(self, path):
        return ts.open(self._spec(path), open=True).result()

    def write(self, handle, sel, value):
        handle[sel].write(value).result()

    def resize(self, path, shape):
        self.open(path).resize(exclusive_max=list(shape)).result()

    def read(self, path, sel=Ellipsis):
        return np.asarray(self.open(path)[sel].read().result())

    def report(self, path):
        t = self.open(path)
        fill = t.fill_value
        return {"shape": tuple(t.shape), "dtype": np.dtype(t.dtype.numpy_dtype),
                "fill": None if fill is None else np.asarray(fill)[()],
                "chunks": tuple(t.chunk_layout.write_chunk.shape or ()),  # None at rank 0
                "names": tuple(t.domain.labels)}


PEERS = (ZarrPython, Zarrs, TensorStore)


def fill_is_nan(case):
    """Whether the fill value is (or has a part that is) a NaN, however spelled."""
    return case.dtype.kind in "fc" and case.doc["fill_value"] is not None and \
        bool(np.isnan(case.fill))


def nan_complex_fill(case):
    return case.dtype.kind == "c" and fill_is_nan(case)


#: Codecs whose output need not be whole elements of blosc's typesize.
UNALIGNED = ("blosc", "zstd", "gzip", "crc32c", "sharding_indexed")


def _blosc_after_bytes_codec(chain, itemsize):
    names = [c["name"] for c in chain]
    if any(c["name"] == "blosc" and itemsize % c["configuration"].get("typesize", 1)
           for c in chain):
        return True
    if any(n == "blosc" and set(names[:i]) & set(UNALIGNED) for i, n in enumerate(names)):
        return True
    return any(_blosc_after_bytes_codec(c["configuration"]["codecs"], itemsize)
               for c in chain if c["name"] == "sharding_indexed")


def _big_endian(doc):
    """Whether a v3 chain stores elements big-endian (index codecs aside)."""
    def big(chain):
        return any(c["name"] == "bytes" and c.get("configuration", {}).get("endian") == "big"
                   or c["name"] == "sharding_indexed" and big(c["configuration"]["codecs"])
                   for c in chain)
    return doc["zarr_format"] == 3 and big(doc["codecs"])


def _transpose_before_sharding(chain):
    names = [c["name"] for c in chain]
    return "sharding_indexed" in names and "transpose" in names[: names.index("sharding_indexed")]


def _bytes_after_sharding(chain):
    for i, codec in enumerate(chain):
        if codec["name"] == "sharding_indexed":
            return i + 1 < len(chain) or _bytes_after_sharding(codec["configuration"]["codecs"])
    return False


# -- metadata -------------------------------------------------------------------------------------

def same_value(a, b, dtype):
    return np.array(a, dtype).tobytes() == np.array(b, dtype).tobytes()


def check_report(case, report, who):
    """What a library reports of the array is what the generated document says."""
    assert report["shape"] == case.shape, (who, report)
    assert native(np.zeros(0, report["dtype"])).dtype == native(np.zeros(0, case.dtype)).dtype, \
        (who, report)
    if case.doc["fill_value"] is not None and report.get("fill") is not None:
        assert same_value(report["fill"], case.fill, case.dtype), (who, report, case.fill)
    assert report["chunks"] == tuple(case.chunks), (who, report)
    if "attrs" in report:
        assert report["attrs"] == case.attrs, (who, report)
    if "names" in report and case.fmt == 3:
        names = case.doc.get("dimension_names") or [None] * len(case.shape)
        assert report["names"] == tuple(n or "" for n in names), (who, report)


def zk_report(array):
    return {"shape": array.shape, "dtype": array.dtype, "fill": array.fill_value,
            "chunks": array.shards or array.chunks, "attrs": dict(array.attrs),
            "names": tuple(n or "" for n in array.dimension_names or [None] * array.ndim)}


def check_created_metadata(case, path):
    """zarrkit's zarr.json (.zarray, .zattrs) from keywords is the generated document."""
    stored = json.load(open(os.path.join(path, "zarr.json" if case.fmt == 3 else ".zarray")))
    fill = stored.pop("fill_value")  # its spelling may differ ("0x7fc00000" or "NaN")
    assert stored == {k: v for k, v in case.doc.items() if k != "fill_value"}, stored
    if case.doc["fill_value"] is None:
        assert fill is None
    else:
        assert same_value(scalar_of(fill, case.dtype), case.fill, case.dtype), fill
    if case.fmt == 3:
        return
    attrs_path = os.path.join(path, ".zattrs")
    attrs = json.load(open(attrs_path)) if os.path.exists(attrs_path) else {}
    assert attrs == case.attrs


# -- the fuzzer -----------------------------------------------------------------------------------

def run_writes(write, handle, case, writes):
    for sel, is_fill in writes:
        write(handle, sel, np.full(case.values[sel].shape, case.fill, case.dtype)
              if is_fill else case.values[sel])


@pytest.fixture(scope="module", autouse=True)
def _print_counts():
    yield
    print("\nformat fuzzer counts:")
    for key, n in sorted(COUNTS.items()):
        print(f"  {key}: {n}")


def zarrkit_writes(case, tmp_path):
    """zarrkit creates and writes the array, reads it and a variant-spelled copy of it; the
    chunks it stores are the expected ones."""
    ours = str(tmp_path / "zarrkit")
    array = zk_create(case, ours)
    check_created_metadata(case, ours)
    check_report(case, zk_report(array), "zarrkit")
    run_writes(zk_write, array, case, case.writes)
    expected = case.expected()
    only = defined(case, case.writes)
    assert_bits(zk_open(case, ours)[...], expected, "zarrkit reads zarrkit", only)
    variant = str(tmp_path / "variant")
    shutil.copytree(ours, variant)
    doc = variant_doc(case, random.Random(case.seed))
    with open(os.path.join(variant, "zarr.json" if case.fmt == 3 else ".zarray"), "w") as f:
        json.dump(doc, f)
    check_report(case, zk_report(zk_open(case, variant)), "zarrkit reports the variant")
    assert_bits(zk_open(case, variant)[...], expected, "zarrkit reads the variant", only)
    assert stored_keys(ours, case) == expected_keys(case, expected, case.writes), \
        "zarrkit's stored keys"
    return ours, variant, expected, only


def peer_reads(case, peer, ours, variant, expected, only):
    check_report(case, peer.report(ours), f"{peer.name} reports zarrkit's")
    assert_bits(peer.read(ours), expected, f"{peer.name} reads zarrkit", only)
    assert_bits(peer.read(variant), expected, f"{peer.name} reads the variant", only)
    part = case.overwrite + (Ellipsis,)  # a part read (0-d arrays, never scalars)
    assert_bits(peer.read(ours, part), expected[part], f"{peer.name} reads part of zarrkit",
                None if only is None else only[part])


def peer_writes(case, peer, theirs, expected, only, our_keys):
    """The peer writes into its own array, zarrkit reads it and overwrites a part of it, the
    peer reads that."""
    peer.create(theirs)
    run_writes(peer.write, peer.open(theirs), case, case.writes)
    check_report(case, zk_report(zk_open(case, theirs)), f"zarrkit reports {peer.name}'s")
    blind = peer.nan_blind()
    assert_bits(zk_open(case, theirs)[...], expected, f"zarrkit reads {peer.name}", only, blind)
    part = case.overwrite + (Ellipsis,)
    assert_bits(zk_open(case, theirs)[part], expected[part], f"zarrkit reads part of "
                f"{peer.name}'s", None if only is None else only[part], blind)
    if peer.compares_keys():
        assert stored_keys(theirs, case) == our_keys, f"stored keys: {peer.name} vs zarrkit"
    zk_open(case, theirs)[case.overwrite] = case.new[case.overwrite]
    after = expected.copy()
    after[case.overwrite] = case.new[case.overwrite]
    assert_bits(peer.read(theirs), after, f"{peer.name} reads zarrkit's overwrite",
                defined(case, case.writes + [(case.overwrite, False)]), blind)
    if case.fmt == 3 or case.doc["fill_value"] is not None:
        peer_resizes(case, peer, theirs)


def peer_resizes(case, peer, theirs):
    """The peer shrinks and grows its array; zarrkit reads what the peer reads (the peers
    leave the cut-off part of edge chunks stored, so it shows again: both must show it)."""
    for shape in resize_shapes(case):
        peer.resize(theirs, shape)
        ours = zk_open(case, theirs)
        assert ours.shape == shape, (peer.name, ours.shape, shape)
        assert_bits(ours[...], peer.read(theirs), f"zarrkit reads {peer.name}'s {shape}")


def resize_shapes(case):
    rng = random.Random(case.seed + 7)
    smaller = tuple(rng.randint(0, n) for n in case.shape)
    return smaller, tuple(n + rng.randint(0, 2) for n in case.shape)


def zarrkit_resizes(case, ours, expected, peers):
    """zarrkit shrinks its array and grows it again: the data cut off is gone (fill value),
    chunks wholly outside the smaller shape are deleted, and the peers read the same."""
    smaller, larger = resize_shapes(case)
    before = stored_keys(ours)
    array = zk_open(case, ours)
    array.resize(smaller)
    kept = tuple(slice(0, n) for n in smaller)
    inside = {case.chunk_key(i) for i in np.ndindex(*(-(-n // c) for n, c in
                                                    zip(smaller, case.chunks, strict=True)))}
    assert stored_keys(ours) <= before & inside, "zarrkit keeps chunks outside the new shape"
    for shape in (smaller, larger):
        if shape == larger:
            array.resize(larger)
        want = np.full(shape, case.fill, case.dtype)
        want[kept] = expected[kept]
        assert_bits(zk_open(case, ours)[...], want, f"zarrkit reads {shape}")
        for peer in peers:
            assert_bits(peer.read(ours), want, f"{peer.name} reads zarrkit's {shape}")
    if case.shape:
        zarrkit_appends(case, array, ours, want, peers)


def zarrkit_appends(case, array, ours, before, peers):
    """zarrkit appends rows along an axis; the peers read them."""
    rng = random.Random(case.seed + 11)
    axis = rng.randrange(len(case.shape))
    shape = list(before.shape)
    shape[axis] = rng.randint(1, 3)
    rows = random_values(np.random.default_rng(case.seed + 11), case.dtype, tuple(shape),
                         case.fixed_scale)
    array.append(rows, axis=axis)
    want = np.concatenate([before, rows], axis=axis)
    assert_bits(zk_open(case, ours)[...], want, "zarrkit reads the appended rows")
    for peer in peers:
        assert_bits(peer.read(ours), want, f"{peer.name} reads zarrkit's appended rows")


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzz_formats(tmp_path, seed):
    case = Case(seed)
    COUNTS[f"v{case.fmt}"] += 1
    COUNTS[f"v{case.fmt}:rank{len(case.shape)}"] += 1
    if case.fmt == 3 and case.sharded():
        COUNTS["v3:sharded"] += 1
    COUNTS[f"write_empty:{case.write_empty}"] += 1
    ours, variant, expected, only = zarrkit_writes(case, tmp_path)
    our_keys = stored_keys(ours, case)
    peers = []
    for peer_type in PEERS:
        peer = peer_type(case)
        reason = peer.limitation()
        if reason is not None:
            COUNTS[f"skip:{peer.name}:{reason}"] += 1
            continue
        COUNTS[f"checked:{peer.name}"] += 1
        peers.append(peer)
        peer_reads(case, peer, ours, variant, expected, only)
        peer_writes(case, peer, str(tmp_path / peer.name), expected, only, our_keys)
    if case.fmt == 3 or case.doc["fill_value"] is not None:  # v2 null fill: no defined rest
        COUNTS["resized"] += 1
        zarrkit_resizes(case, ours, expected, peers)


# -- regressions found by the fuzzer ----------------------------------------------------------

@pytest.mark.parametrize("shards", [None, (4, 4)])
def test_shrinking_stores_no_absent_chunk(tmp_path, shards):
    """With write_empty_chunks, erasing the part of the edge chunks beyond a smaller shape
    stored all-fill chunks where none had been (seed 59); only stored chunks are erased."""
    a = zarrkit.create(str(tmp_path), (7, 4), "float64", chunks=(2, 2), shards=shards,
                       fill_value=np.nan, write_empty_chunks=True)
    a[0:2, 0:2] = 1.5
    before = stored_keys(str(tmp_path))
    a.resize((5, 3))  # cuts through the edge chunks of rows 4-5 and column 2-3
    assert stored_keys(str(tmp_path)) == before
    a.resize((7, 4))
    want = np.full((7, 4), np.nan)
    want[0:2, 0:2] = 1.5
    assert_bits(a[...], want, "after growing back")

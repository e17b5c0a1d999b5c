"""Property tests of arrays through the public API, with a numpy array as the oracle.

Random arrays (rank 0-4, lengths including 0 and 1, chunks, shards, data types, codec chains,
fill values), random selections (basic, orthogonal, vectorized) compared with numpy on a mirror,
random sequences of writes compared as a whole, and a check of what is stored: every stored chunk
(and every inner chunk of a shard) decodes to something that is not entirely the fill value.
All comparisons are bitwise (NaN payloads, -0.0), int4 by value.
"""

from __future__ import annotations

import math
import os
import tempfile

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrkit
from zarrkit.codecs import ChunkSpec, CodecChain, ShardingCodec
from zarrkit.kvstore.memory import MemoryStore

INT4 = np.dtype(ml_dtypes.int4)
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(d) for d in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                                "int64", "uint64", "float16", "float32", "float64", "complex64",
                                "complex128", "V3")] + [BF16, INT4]

#: Examples per property; ZARRKIT_PROPERTY_EXAMPLES=2000 (say) for a deeper search.
EXAMPLES = int(os.environ.get("ZARRKIT_PROPERTY_EXAMPLES", "100"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# -- values ---------------------------------------------------------------------------------------

def _uint(dtype):
    return np.dtype(f"u{dtype.itemsize}")


def special_values(dtype):
    """Bit patterns worth having as fill values and data: NaNs with payloads, infinities, -0."""
    if dtype.kind == "c":
        part = np.dtype(f"f{dtype.itemsize // 2}")
        s = special_values(part)
        return [np.array([a, b], part).view(dtype)[0] for a, b in zip(s, s[::-1], strict=True)]
    bits = 8 * dtype.itemsize
    exp = {16: 5 if dtype != BF16 else 8, 32: 8, 64: 11}[bits]
    mant = bits - 1 - exp
    patterns = [0, 1 << (bits - 1), ((1 << exp) - 1) << mant,  # 0, -0, inf
                ((1 << exp) - 1) << mant | 1 << (mant - 1),  # NaN
                ((1 << exp) - 1) << mant | 1 << (mant - 1) | 1,  # NaN with payload
                1 << (bits - 1) | ((1 << exp) - 1) << mant | 1 << (mant - 1),  # -NaN
                1]  # smallest subnormal
    return [np.array(p, _uint(dtype)).view(dtype)[()] for p in patterns]


def fill_values(dtype):
    if dtype == INT4:
        return st.integers(-8, 7).map(lambda v: np.array(v, INT4)[()])
    if dtype.kind == "b":
        return st.booleans().map(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return st.sampled_from([0, info.min, info.max, 1]).map(dtype.type)
    if dtype.kind == "V" and dtype != BF16:
        return st.binary(min_size=dtype.itemsize, max_size=dtype.itemsize).map(np.void)
    return st.sampled_from(special_values(dtype) + [np.array(1.5, dtype)[()]])


def random_values(dtype, shape, seed, fill, fill_fraction):
    """Random bit patterns (so any NaN payload), a fraction of them the fill value."""
    rng = np.random.default_rng(seed)
    n = math.prod(shape)
    if dtype == INT4:
        v = rng.integers(-8, 8, n).astype(INT4)
    elif dtype.kind == "b":
        v = rng.random(n) < 0.5
    else:
        raw = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8)
        if dtype.kind in "fc" or dtype == BF16:  # mix in the special values
            v = raw.view(dtype).copy()
            specials = special_values(dtype)
            pick = rng.random(n) < 0.3
            v[pick] = np.array(specials, dtype)[rng.integers(0, len(specials), pick.sum())]
        else:
            v = raw.view(dtype)
    v = v.reshape(shape)
    v[rng.random(shape) < fill_fraction] = fill
    return v


def identity(a):
    a = np.ascontiguousarray(np.asarray(a))
    return a.astype(np.int8).tobytes() if a.dtype == INT4 else a.tobytes()


def assert_identical(actual, expected, what=""):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (what, actual.dtype, expected.dtype)
    assert identity(actual) == identity(expected), (what, actual, expected)


# -- arrays ---------------------------------------------------------------------------------------

def _b(endian):
    return {"name": "bytes", "configuration": {"endian": endian}}


@st.composite
def byte_chains(draw, dtype, rank):
    """bytes (either endianness), maybe a compressor, maybe crc32c; maybe a transpose before."""
    codecs = []
    if rank > 1 and draw(st.booleans()):
        order = draw(st.permutations(range(rank)))
        codecs.append({"name": "transpose", "configuration": {"order": list(order)}})
    codecs.append(_b(draw(st.sampled_from(["little", "big"]))))
    compressor = draw(st.sampled_from(["none", "gzip", "zstd", "blosc"]))
    if compressor == "gzip":
        codecs.append({"name": "gzip", "configuration": {"level": draw(st.integers(0, 9))}})
    elif compressor == "zstd":
        codecs.append({"name": "zstd", "configuration": {"level": draw(st.integers(-2, 5)),
                                                         "checksum": draw(st.booleans())}})
    elif compressor == "blosc":
        codecs.append({"name": "blosc", "configuration": {
            "cname": draw(st.sampled_from(["lz4", "lz4hc", "blosclz", "zstd", "zlib"])),
            "clevel": draw(st.integers(0, 9)),
            "shuffle": draw(st.sampled_from(["noshuffle", "shuffle", "bitshuffle"])),
            "typesize": max(1, dtype.itemsize), "blocksize": 0}})
    if draw(st.booleans()):
        codecs.append({"name": "crc32c"})
    return codecs


@st.composite
def arrays(draw, max_rank=4, dtypes=DTYPES):
    """(create keywords, dtype, shape, fill value): an array to make with zarrkit.create."""
    rank = draw(st.integers(0, max_rank))
    max_len = {0: 1, 1: 12, 2: 7, 3: 5, 4: 4}[rank]
    shape = tuple(draw(st.lists(st.integers(0, max_len), min_size=rank, max_size=rank)))
    chunks = tuple(draw(st.integers(1, max(s, 1) + 1)) for s in shape)
    dtype = draw(st.sampled_from(dtypes))
    fill = draw(fill_values(dtype))
    layout = draw(st.sampled_from(["chunks", "shards", "shards-kw", "nested"]))
    encoding = draw(st.sampled_from([None, {"name": "default", "configuration": {"separator": "."}},
                                     {"name": "v2", "configuration": {"separator": "/"}},
                                     {"name": "v2", "configuration": {"separator": "."}}]))
    kwargs = {"fill_value": fill, "chunk_key_encoding": encoding}
    if layout == "chunks":
        kwargs.update(chunks=chunks, codecs=draw(byte_chains(dtype, rank)))
    elif layout == "shards-kw":  # the shards= keyword: zarrkit builds the sharding codec
        shards = tuple(c * draw(st.integers(1, 3)) for c in chunks)
        kwargs.update(chunks=chunks, shards=shards,
                      compressors=draw(st.sampled_from([None, "default"])),
                      index_location=draw(st.sampled_from(["start", "end"])))
    else:
        factor = tuple(draw(st.integers(1, 3)) for _ in chunks)
        shard_shape = tuple(c * f for c, f in zip(chunks, factor, strict=True))
        inner = draw(byte_chains(dtype, rank))
        if layout == "nested":
            half = tuple(draw(st.sampled_from([d for d in range(1, c + 1) if c % d == 0]))
                         for c in chunks)
            inner = [_shard(half, inner, draw)]
        codecs = [_shard(chunks, inner, draw)]
        if rank > 1 and draw(st.booleans()):  # an array->array codec outside the shards
            order = draw(st.permutations(range(rank)))
            codecs.insert(0, {"name": "transpose", "configuration": {"order": list(order)}})
            shard_shape = tuple(shard_shape[i] for i in np.argsort(order))
        kwargs.update(chunks=shard_shape, codecs=codecs)
    return kwargs, dtype, shape, fill


def _shard(chunk_shape, codecs, draw):
    index = [_b(draw(st.sampled_from(["little", "big"])))]
    if draw(st.booleans()):
        index.append({"name": "crc32c"})
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(chunk_shape), "codecs": codecs, "index_codecs": index,
        "index_location": draw(st.sampled_from(["start", "end"]))}}


def make(store, kwargs, dtype, shape):
    return zarrkit.create(store, shape, dtype, **kwargs)


# -- selections -----------------------------------------------------------------------------------

def _slices(size):
    bound = st.none() | st.integers(-size - 2, size + 2)
    step = st.none() | st.integers(-4, 4).filter(bool)
    return st.builds(slice, bound, bound, step)


@st.composite
def basic_selections(draw, shape):
    sel = []
    for size in shape:
        options = [_slices(size), st.just(slice(None))]
        if size:
            options.append(st.integers(-size, size - 1))
        sel.append(draw(st.one_of(options)))
    if draw(st.booleans()):  # a run of dimensions becomes "..."
        i = draw(st.integers(0, len(sel)))
        j = draw(st.integers(i, len(sel)))
        sel[i:j] = [Ellipsis]
    elif sel and draw(st.booleans()):  # trailing dimensions left out
        sel = sel[:draw(st.integers(0, len(sel)))]
    for _ in range(draw(st.integers(0, 2))):
        sel.insert(draw(st.integers(0, len(sel))), None)
    if len(sel) == 1 and draw(st.booleans()):
        return sel[0]
    return tuple(sel)


def _normalized(values, size):
    return [v + size if v < 0 else v for v in values]


@st.composite
def _int_array(draw, size, unique):
    if size == 0:
        return np.array([], dtype=draw(st.sampled_from([np.int64, np.int32, np.uint8])))
    values = draw(st.lists(st.integers(0, size - 1), max_size=min(size, 5) if unique else 6,
                           unique=unique))
    negate = draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values)))
    values = [v - size if n else v for v, n in zip(values, negate, strict=True)]
    return np.array(values, dtype=np.int64 if draw(st.booleans()) else np.intp)


@st.composite
def orthogonal_selections(draw, shape, unique=False):
    sel = []
    for size in shape:
        options = [_slices(size), _int_array(size, unique),
                   st.lists(st.booleans(), min_size=size, max_size=size).map(
                       lambda m: np.array(m, dtype=bool))]
        if size:
            options.append(st.integers(-size, size - 1))
        sel.append(draw(st.one_of(options)))
    if len(sel) == 1 and draw(st.booleans()):
        return sel[0]
    return tuple(sel)


def numpy_oindex(shape, selection):
    """The numpy index equal to an orthogonal selection, and the result's shape."""
    sel = selection if isinstance(selection, tuple) else (selection,)
    index, out_shape = [], []
    for s, size in zip(sel, shape, strict=True):
        if isinstance(s, slice):
            idx = np.arange(size)[s]
        elif isinstance(s, np.ndarray) and s.dtype == bool:
            idx = np.flatnonzero(s)
        elif isinstance(s, np.ndarray):
            idx = np.array(_normalized(s.tolist(), size), dtype=np.intp)
        else:
            index.append(np.array([s + size if s < 0 else s], dtype=np.intp))
            continue
        index.append(idx.astype(np.intp))
        out_shape.append(idx.size)
    return (np.ix_(*index) if index else ()), tuple(out_shape)


@st.composite
def vectorized_selections(draw, shape, unique=False):
    """Broadcast coordinate arrays (unique points when `unique`) or a full boolean mask."""
    if draw(st.booleans()) or not shape:
        return np.array(draw(st.lists(st.booleans(), min_size=math.prod(shape),
                                      max_size=math.prod(shape))), bool).reshape(shape)
    n = math.prod(shape)
    if unique:
        flat = draw(st.lists(st.integers(0, n - 1), max_size=min(n, 8), unique=True)) if n else []
        coords = [np.asarray(c, dtype=np.int64) for c in np.unravel_index(flat, shape)] \
            if flat else [np.array([], np.int64) for _ in shape]
        if len(flat) % 2 == 0 and flat and draw(st.booleans()):
            coords = [c.reshape(2, -1) for c in coords]
    else:
        b_shape = tuple(draw(st.lists(st.integers(0 if n == 0 else 1, 3), max_size=2)))
        if n == 0:
            b_shape = (0,) + b_shape[1:]
        coords = []
        for size in shape:
            own = b_shape
            if n:  # broadcasting: length-1 and left-out leading dimensions
                own = tuple(1 if draw(st.booleans()) else d for d in b_shape)
                own = own[draw(st.integers(0, len(own))):]
            coords.append(np.array(draw(st.lists(st.integers(0, size - 1), min_size=math.prod(own),
                                                 max_size=math.prod(own))) if size else [],
                                   dtype=np.int64).reshape(own))
    negate = draw(st.booleans())
    return tuple(np.where(c % 2 == 1, c - size, c) if negate else c
                 for c, size in zip(coords, shape, strict=True))


# -- what is stored -------------------------------------------------------------------------------

def check_stored_chunks(a, store, mirror, fill):
    """Every stored chunk lies in the grid, decodes to the mirror's values and is not entirely
    the fill value; so is every inner chunk of a shard (at the first level)."""
    meta = a.metadata
    grid_chunks = tuple(meta["chunk_grid"]["configuration"]["chunk_shape"])
    grid = tuple(-(-s // c) for s, c in zip(a.shape, grid_chunks, strict=True))
    chain = CodecChain.from_json(meta["codecs"], ChunkSpec(grid_chunks, a.dtype, fill))
    prefix = a.path + "/" if a.path else ""
    enc = meta["chunk_key_encoding"]
    sep = enc.get("configuration", {}).get("separator", "/" if enc["name"] == "default" else ".")
    keys = [k[len(prefix):] for k in store.list_prefix(prefix) if not k.endswith("zarr.json")]
    fill_chunk = np.full(grid_chunks, fill, dtype=a.dtype)
    for key in keys:
        if enc["name"] == "default":
            assert key == "c" or key.startswith("c" + sep), key
            parts = key[2:].split(sep) if len(key) > 1 else []
        else:
            parts = [] if key == "0" and not a.shape else key.split(sep)
        coords = tuple(int(p) for p in parts)
        assert len(coords) == a.ndim and all(0 <= c < g for c, g in zip(coords, grid,
                                                                          strict=True)), key
        data = store.get(prefix + key)
        chunk = chain.decode(data)
        assert identity(chunk) != identity(fill_chunk), f"chunk {key} is all fill value"
        region = tuple(slice(c * n, min((c + 1) * n, s))
                       for c, n, s in zip(coords, grid_chunks, a.shape, strict=True))
        inside = tuple(slice(0, r.stop - r.start) for r in region)
        assert_identical(chunk[inside], mirror[region], f"chunk {key}")
        if isinstance(chain.array_bytes, ShardingCodec) and not chain.bytes_bytes \
                and not chain.array_array:
            _check_inner_chunks(chain.array_bytes, data, fill, a.dtype, key)


def _check_inner_chunks(sharding, data, fill, dtype, key):
    view = memoryview(bytes(data))
    index = sharding.decode_index(sharding.index_byte_range().slice_of(view), len(view))
    fill_inner = np.full(sharding.chunk_shape, fill, dtype=dtype)
    present = 0
    for within in np.ndindex(*sharding.chunks_per_shard):
        offset, nbytes = (int(x) for x in index[within])
        if offset == 2**64 - 1:
            assert nbytes == 2**64 - 1, (key, within)
            continue
        present += 1
        inner = sharding.inner.decode(view[offset:offset + nbytes])
        assert identity(inner) != identity(fill_inner), f"inner chunk {within} of {key} is fill"
    assert present, f"shard {key} is stored without inner chunks"


# -- reads ----------------------------------------------------------------------------------------

@st.composite
def filled_arrays(draw, max_rank=4, dtypes=DTYPES):
    kwargs, dtype, shape, fill = draw(arrays(max_rank, dtypes))
    seed = draw(st.integers(0, 2**32 - 1))
    data = random_values(dtype, shape, seed, fill, draw(st.sampled_from([0.0, 0.3, 0.9])))
    return kwargs, dtype, shape, fill, data


def _read_setup(case):
    kwargs, dtype, shape, fill, data = case
    store = MemoryStore()
    a = make(store, kwargs, dtype, shape)
    a[...] = data
    return a, store


@SETTINGS
@given(st.data())
def test_basic_reads_match_numpy(draw):
    case = draw.draw(filled_arrays())
    a, store = _read_setup(case)
    data = case[4]
    assert_identical(a[...], data)
    for sel in draw.draw(st.lists(basic_selections(data.shape), min_size=1, max_size=4)):
        assert_identical(a[sel], data[sel], sel)
    check_stored_chunks(a, store, data, case[3])


@SETTINGS
@given(st.data())
def test_orthogonal_reads_match_numpy(draw):
    case = draw.draw(filled_arrays(max_rank=3))
    a, _ = _read_setup(case)
    data = case[4]
    for sel in draw.draw(st.lists(orthogonal_selections(data.shape), min_size=1, max_size=4)):
        index, out_shape = numpy_oindex(data.shape, sel)
        assert_identical(a.oindex[sel], data[index].reshape(out_shape), sel)


@SETTINGS
@given(st.data())
def test_vectorized_reads_match_numpy(draw):
    case = draw.draw(filled_arrays(max_rank=3))
    a, _ = _read_setup(case)
    data = case[4]
    for sel in draw.draw(st.lists(vectorized_selections(data.shape), min_size=1, max_size=4)):
        assert_identical(a.vindex[sel], data[sel], sel)


@SETTINGS
@given(st.data())
def test_array_index_in_getitem_matches_numpy(draw):
    """`a[...]` with one index array (or an n-d mask) follows numpy."""
    case = draw.draw(filled_arrays(max_rank=3))
    a, _ = _read_setup(case)
    data = case[4]
    if not data.ndim:
        return
    axis = draw.draw(st.integers(0, data.ndim - 1))
    index = draw.draw(st.one_of(_int_array(data.shape[axis], unique=False),
                                st.lists(st.booleans(), min_size=data.shape[axis],
                                         max_size=data.shape[axis]).map(
                                    lambda m: np.array(m, dtype=bool))))
    # the other axes: slices or integers (numpy moves the array's axis first when integers
    # and the array are separated by a slice)
    sel = [draw.draw(st.one_of(_slices(n), st.integers(-n, n - 1)) if n else _slices(n))
           for n in data.shape]
    sel[axis] = index
    assert_identical(a[tuple(sel)], data[tuple(sel)], sel)
    mask = np.array(draw.draw(st.lists(st.booleans(), min_size=data.size, max_size=data.size)),
                    dtype=bool).reshape(data.shape)
    if data.ndim > 1:
        assert_identical(a[mask], data[mask])


# -- writes ---------------------------------------------------------------------------------------

@st.composite
def writes(draw, dtype, shape, fill):
    """One write: (kind, selection, value), the value a scalar (maybe the fill) or an array."""
    kind = draw(st.sampled_from(["basic", "oindex", "vindex"]))
    if kind == "basic":
        sel = draw(basic_selections(shape))
        out_shape = np.empty(shape, dtype=np.bool_)[sel].shape
    elif kind == "oindex":
        sel = draw(orthogonal_selections(shape, unique=True))
        out_shape = numpy_oindex(shape, sel)[1]
    else:
        sel = draw(vectorized_selections(shape, unique=True))
        out_shape = np.empty(shape, dtype=np.bool_)[sel].shape
    what = draw(st.sampled_from(["array", "fill", "scalar", "broadcast"]))
    seed = draw(st.integers(0, 2**32 - 1))
    if what == "fill":
        value = fill
    elif what == "scalar":
        value = random_values(dtype, (), seed, fill, 0.0)[()]
    else:
        if what == "broadcast":  # a value numpy broadcasts: length-1 and left-out leading axes
            out_shape = tuple(1 if draw(st.booleans()) else n for n in out_shape)
            out_shape = out_shape[draw(st.integers(0, len(out_shape))):]
        value = random_values(dtype, out_shape, seed, fill, draw(st.sampled_from([0.0, 0.5])))
    return kind, sel, value


def apply_write(a, mirror, write):
    kind, sel, value = write
    if kind == "basic":
        a[sel] = value
        mirror[sel] = value
    elif kind == "oindex":
        a.oindex[sel] = value
        index, out_shape = numpy_oindex(mirror.shape, sel)
        mirror[index] = np.broadcast_to(np.asarray(value), out_shape).reshape(mirror[index].shape)
    else:
        a.vindex[sel] = value
        mirror[sel] = value


def _write_sequence(draw, store, max_rank=4):
    kwargs, dtype, shape, fill = draw.draw(arrays(max_rank))
    a = make(store, kwargs, dtype, shape)
    mirror = np.full(shape, fill, dtype=dtype)
    if draw.draw(st.booleans()):  # start from data, or from an empty array
        a[...] = mirror[...] = random_values(dtype, shape, draw.draw(st.integers(0, 99)), fill,
                                            0.5)
    for _ in range(draw.draw(st.integers(1, 5))):
        apply_write(a, mirror, draw.draw(writes(dtype, shape, fill)))
    return a, mirror, fill


@SETTINGS
@given(st.data())
def test_write_sequences_match_numpy(draw):
    store = MemoryStore()
    a, mirror, fill = _write_sequence(draw, store)
    assert_identical(a[...], mirror)
    check_stored_chunks(a, store, mirror, fill)
    assert_identical(zarrkit.open(store, mode="r")[...], mirror)  # as reopened from the store


@settings(SETTINGS, max_examples=max(EXAMPLES // 5, 10))
@given(st.data())
def test_write_sequences_on_file_store(draw):
    from zarrkit.kvstore.file import FileStore

    with tempfile.TemporaryDirectory() as tmp:
        store = FileStore(tmp + "/a.zarr")
        a, mirror, fill = _write_sequence(draw, store, max_rank=3)
        assert_identical(zarrkit.open(tmp + "/a.zarr", mode="r")[...], mirror)
        check_stored_chunks(a, store, mirror, fill)


@SETTINGS
@given(st.data())
def test_overwriting_everything_with_fill_leaves_no_chunks(draw):
    kwargs, dtype, shape, fill = draw.draw(arrays())
    store = MemoryStore()
    a = make(store, kwargs, dtype, shape)
    a[...] = random_values(dtype, shape, draw.draw(st.integers(0, 99)), fill, 0.2)
    region = draw.draw(basic_selections(shape))
    a[region] = fill  # a partial overwrite first: read-modify-write of chunks and shards
    a[...] = fill
    assert [k for k in store.list_prefix("") if k != "zarr.json"] == []
    assert_identical(a[...], np.full(shape, fill, dtype=dtype))


def test_selection_strategies_cover_the_edge_cases():
    """The strategies above can produce what they claim (a guard against silent narrowing)."""
    seen = set()

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(st.data())
    def probe(draw):
        kwargs, dtype, shape, fill = draw.draw(arrays())
        seen.add(("rank", len(shape)))
        seen.add(("zero-length", 0 in shape))
        seen.add(("layout", "sharding_indexed" in str(kwargs.get("codecs")) or "shards" in kwargs))
        sel = draw.draw(basic_selections(shape))
        parts = sel if isinstance(sel, tuple) else (sel,)
        seen.update(("basic", type(p).__name__) for p in parts)
        seen.update(("step<0",) for p in parts if isinstance(p, slice) and (p.step or 1) < 0)

    probe()
    for rank in range(5):
        assert ("rank", rank) in seen
    for item in [("zero-length", True), ("layout", True), ("layout", False), ("basic", "int"),
                 ("basic", "slice"), ("basic", "ellipsis"), ("basic", "NoneType"), ("step<0",)]:
        assert item in seen, item


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_random_values_hold_fill_and_specials(dtype):
    fill = np.zeros((), dtype)[()]
    v = random_values(dtype, (50,), 1, fill, 0.5)
    assert v.dtype == dtype and v.shape == (50,)
    assert any(identity(x) == identity(fill) for x in v)


# -- regressions (found by the properties above) --------------------------------------------------

@pytest.mark.parametrize("shards", [None, ()])
def test_vindex_and_mask_on_0d_array(shards):
    """numpy: a 0-d array's `[()]` is its element; a 0-d mask selects it (shape (1,)) or not."""
    a = zarrkit.create(MemoryStore(), (), "int16", chunks=(), shards=shards, fill_value=0)
    a[...] = 5
    data = np.array(5, np.int16)
    assert_identical(a.vindex[()], data[()])
    for mask in (np.array(True), np.array(False)):
        assert_identical(a.vindex[mask], data[mask])
        assert_identical(a[mask], data[mask])
    a.vindex[()] = 6
    assert a[()] == 6
    a.vindex[np.array(True)] = [7]
    assert a[()] == 7
    a.vindex[np.array(False)] = np.array([], np.int16)
    a[np.array(True)] = 8
    assert a[()] == 8


SEPARATED = [
    (0, slice(None), [0, 1]),
    (0, slice(None, None, -1), [3, 0, 1], slice(1, None, 2)),
    ([2, 0], slice(None), 1, slice(None)),
    (-1, Ellipsis, np.array([True, False, True, False, True])),
    (slice(None), 1, [0, 2]),  # adjacent: no reordering
    (slice(None), [1, 0], slice(None), -1),
]


@pytest.mark.parametrize("sel", SEPARATED, ids=str)
def test_array_and_integers_separated_by_a_slice_follow_numpy(sel):
    """numpy puts the axis of an index array first when integer indices and the array are
    separated by a slice (`x[0, :, [0, 1]]` has shape (2, n1, ...)); reads and writes agree."""
    shape = (3, 3, 4, 5) if len(sel) == 4 else (3, 4, 5)
    data = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
    a = zarrkit.create(MemoryStore(), data.shape, "int32", chunks=(2, 2, 3, 2)[-data.ndim:])
    a[...] = data
    assert_identical(a[sel], data[sel], sel)
    value = np.arange(data[sel].size, dtype=np.int32).reshape(data[sel].shape) + 1000
    a[sel] = value
    data[sel] = value
    assert_identical(a[...], data)

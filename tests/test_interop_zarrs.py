"""Interoperability with zarrs (Rust), through zarr-python's `zarrs.ZarrsCodecPipeline`, both ways.

Every zarr-python array here is opened with the zarrs pipeline in strict mode
(`codec_pipeline.strict`: an array or selection zarrs cannot handle raises instead of silently
falling back to zarr-python's codecs) and with checksum validation on; `zarrs_array` checks that
the Rust implementation backs it and that no fallback exists. A case writes with one library and
reads with the other, comparing values bit for bit (NaN payloads, -0.0); both libraries also write
the same regions into copies of one zarr.json, and where the codecs are deterministic (no
compressor: bytes, transpose, crc32c, sharding of those) every stored chunk or shard must be
identical byte for byte. Each case then overwrites a region partially, each library in the
other's array.

Limitations of the peer (zarrs-python 0.2.3 on zarr-python 3.1.6), found while writing these:

- The pipeline refuses numpy kinds V, S, U, M, m, O and T (UnsupportedDataTypeError): raw bytes,
  fixed-size strings, datetime64/timedelta64 and the variable-length strings and bytes of the
  vlen-utf8 / vlen-bytes codecs cannot be read or written through zarrs (xfail below).
- Zarr v2: the numcodecs `lz4` compressor and the `delta`, `bitround`, `packbits` and `astype`
  filters are unsupported (UnsupportedMetadataError when the array is opened); blosc, zstd, zlib,
  gzip, bz2 and the `shuffle` and `fixedscaleoffset` filters work.
- Zarr v2 arrays in F order fail ("input array must be a C contiguous array"), and ones of
  non-native byte order (`>i4`) too ("Non-native byte order not supported").
- Inner chunks that do not divide the shard are refused by zarrkit and zarr-python alike (as the
  spec requires), so zarrs never sees such an array.
- write_empty_chunks=True is ignored: zarrs never stores a chunk, or an inner chunk of a shard,
  that equals the fill value (xfail below; with False both libraries store the same keys, and
  both count a chunk as empty only when it equals the fill value bit for bit: NaN is empty under
  a NaN fill, -0.0 is not under 0.0).
- Decoding part of a chunk of big-endian complex numbers swaps the real and imaginary parts
  (as if each whole 8- or 16-byte element were byte-swapped, not each component); a chunk read
  whole is right, and what zarrs writes is right (xfail below for the partial reads).
- With several threads, zarrs may store the inner chunks of a shard in another order than C order
  (which the spec allows), so the byte-for-byte comparisons run zarrs on one thread.
- gzip output of zarrs differs byte-wise from zarrkit's (another deflate implementation), so gzip
  is compared by value only; blosc and zstd happen to match but are compared by value only too,
  since compressed bytes depend on library versions.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings

import numpy as np
import pytest

import zarrkit

zarr = pytest.importorskip("zarr")
zarrs = pytest.importorskip("zarrs")
from zarrs.pipeline import UnsupportedDataTypeError, UnsupportedMetadataError  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning",
                                        "ignore::DeprecationWarning", "ignore::RuntimeWarning")

#: One thread, one chunk at a time: concurrently, zarrs may place the inner chunks of a shard in
#: another order (which the spec allows), so shards would not compare byte for byte;
#: test_zarrs_chunk_concurrency runs it concurrently.
ZARRS = {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True,
         "codec_pipeline.validate_checksums": True, "threading.max_workers": 1,
         "codec_pipeline.chunk_concurrent_minimum": 1,
         "codec_pipeline.chunk_concurrent_maximum": 1}

SHAPE, CHUNKS = (10, 13), (4, 5)
#: Written by both libraries: chunks (and inner chunks of shards) written partially, some not at
#: all, edge chunks touched; OVERWRITE then crosses chunk and shard boundaries.
REGIONS = ((slice(1, 3), slice(2, 8)), (slice(5, 10), slice(11, 13)))
OVERWRITE = (slice(0, 9), slice(4, 12))


@pytest.fixture(autouse=True)
def _zarrs_pipeline():
    with zarr.config.set(ZARRS), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# -- helpers --------------------------------------------------------------------------------------

def check_rust(array):
    """`array` (zarr-python) reads and writes through zarrs' Rust codecs, with no fallback."""
    pipeline = array._async_array.codec_pipeline
    assert type(pipeline).__name__ == "ZarrsCodecPipeline"
    assert type(pipeline.impl).__name__ == "CodecPipelineImpl"
    assert pipeline.python_impl is None  # strict: what zarrs cannot do raises
    return array


def zarrs_array(path, mode="r", write_empty_chunks=False):
    with zarr.config.set({"array.write_empty_chunks": write_empty_chunks}):
        return check_rust(zarr.open_array(zarr.storage.LocalStore(path), mode=mode))


def zarrs_create(path, write_empty_chunks=False, **kwargs):
    with zarr.config.set({"array.write_empty_chunks": write_empty_chunks}):
        return check_rust(zarr.create_array(zarr.storage.LocalStore(path), **kwargs))


def stored(path):
    """Chunk and shard files below `path` by key: no metadata, no hidden (lock) files."""
    out = {}
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".z")]
        for name in files:
            if name != "zarr.json" and not name.startswith(".z"):
                full = os.path.join(root, name)
                out[os.path.relpath(full, path).replace(os.sep, "/")] = open(full, "rb").read()
    return out


def copy_metadata(src, dst):
    os.makedirs(dst)
    for name in ("zarr.json", ".zarray", ".zattrs"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), dst)


def assert_bits(actual, expected):
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.tobytes() == expected.tobytes()


def bits(dtype, *patterns):
    return np.array(patterns, dtype=f"u{np.dtype(dtype).itemsize}").view(dtype)


def sample(dtype, shape, seed=0):
    """Values of `dtype` with the specials a codec must keep: NaN payloads, -0.0, infinities,
    subnormals, integer extremes."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype.kind == "b":
        return ((np.arange(n) + seed) % 3 == 1).reshape(shape)
    values = ((np.arange(n) + seed) * 37 % 101 - 50).astype("float64") / 4 + 1
    out = values.astype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        out[: min(n, 2)] = [info.min, info.max][: min(n, 2)]
    elif dtype.kind in "fc":
        real = np.dtype(f"f{dtype.itemsize // 2}") if dtype.kind == "c" else dtype
        special = bits(real, *SPECIAL_BITS[real.itemsize])
        flat = out.view(real).reshape(-1)
        flat[: min(flat.size, special.size)] = special[: flat.size]
    return out.reshape(shape)


SPECIAL_BITS = {  # NaN, NaN with payload, -NaN, inf, -inf, -0.0, smallest subnormal
    2: (0x7E00, 0x7E01, 0xFE00, 0x7C00, 0xFC00, 0x8000, 0x0001),
    4: (0x7FC00000, 0x7FC00001, 0xFFC00000, 0x7F800000, 0xFF800000, 0x80000000, 1),
    8: (0x7FF8000000000000, 0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000000,
        0xFFF0000000000000, 0x8000000000000000, 1),
}


def filled(shape, dtype, fill):
    return np.full(shape, fill, dtype=dtype)


def written(base, data, regions):
    out = base.copy()
    for region in regions:
        out[region] = data[region]
    return out


def both_ways(tmp_path, data, same_bytes, fill=0, regions=REGIONS, overwrite=OVERWRITE,
              write_empty_chunks=False, new=None, zarrs_reads=(...,), **create):
    """zarrkit and zarrs each write `regions` into copies of one zarrkit-made array, each reads
    the other's, then each overwrites `overwrite` in the other's (partial chunks and shards).
    zarrs reads the selection `zarrs_reads` (all by default)."""
    ours, theirs = tmp_path / "zarrkit", tmp_path / "zarrs"
    ka = zarrkit.create(str(ours), data.shape, data.dtype, fill_value=fill,
                        write_empty_chunks=write_empty_chunks, **create)
    for region in regions:
        ka[region] = data[region]
    copy_metadata(ours, theirs)
    za = zarrs_array(theirs, "r+", write_empty_chunks)
    for region in regions:
        za[region] = data[region]
    expected = written(filled(data.shape, data.dtype, ka.fill_value), data, regions)
    assert_bits(zarrs_array(ours)[zarrs_reads], expected[zarrs_reads])
    assert_bits(zarrkit.open_array(str(theirs), mode="r")[...], expected)
    if same_bytes:
        assert stored(ours) == stored(theirs)
    if overwrite is None:
        return
    new = sample(data.dtype, data.shape, seed=5) if new is None else new
    zarrs_array(ours, "r+", write_empty_chunks)[overwrite] = new[overwrite]
    zarrkit.open_array(str(theirs), write_empty_chunks=write_empty_chunks)[overwrite] = \
        new[overwrite]
    expected = written(expected, new, [overwrite])
    assert_bits(zarrkit.open_array(str(ours), mode="r")[...], expected)
    assert_bits(zarrs_array(theirs)[zarrs_reads], expected[zarrs_reads])
    if same_bytes:
        assert stored(ours) == stored(theirs)


# -- codecs ---------------------------------------------------------------------------------------

LE = {"name": "bytes", "configuration": {"endian": "little"}}
BE = {"name": "bytes", "configuration": {"endian": "big"}}
CRC = {"name": "crc32c"}


def transpose(*order):
    return {"name": "transpose", "configuration": {"order": list(order)}}


def blosc(cname, clevel, shuffle, typesize):
    return {"name": "blosc", "configuration": {"cname": cname, "clevel": clevel,
                                               "shuffle": shuffle, "typesize": typesize,
                                               "blocksize": 0}}


def gzip(level):
    return {"name": "gzip", "configuration": {"level": level}}


def zstd(level, checksum):
    return {"name": "zstd", "configuration": {"level": level, "checksum": checksum}}


def shard(chunk_shape, codecs, location="end", index_codecs=(LE, CRC)):
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(chunk_shape), "codecs": list(codecs),
        "index_codecs": list(index_codecs), "index_location": location}}


DETERMINISTIC = {
    "little": [LE],
    "big": [BE],
    "transpose": [transpose(1, 0), LE],
    "transpose-big": [transpose(1, 0), BE],
    "crc32c": [LE, CRC],
    "transpose-big-crc32c": [transpose(1, 0), BE, CRC],
}


@pytest.mark.parametrize("dtype", ["int32", "float64"])
@pytest.mark.parametrize("name", DETERMINISTIC)
def test_deterministic_codecs_same_bytes(tmp_path, name, dtype):
    both_ways(tmp_path, sample(dtype, SHAPE), True, chunks=CHUNKS, codecs=DETERMINISTIC[name])


@pytest.mark.parametrize("order", [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1),
                                   (2, 1, 0)])
@pytest.mark.parametrize("endian", [LE, BE], ids=["little", "big"])
def test_transpose_orders_3d(tmp_path, order, endian):
    regions = ((slice(0, 3), slice(1, 5), slice(2, 7)),)
    both_ways(tmp_path, sample("uint16", (5, 6, 7)), True, chunks=(2, 3, 4), regions=regions,
              overwrite=(slice(1, 5), slice(0, 4), slice(3, 7)),
              codecs=[transpose(*order), endian])


BLOSC = [(cname, shuffle) for cname in ("lz4", "lz4hc", "blosclz", "zstd", "zlib")
         for shuffle in ("noshuffle", "shuffle", "bitshuffle")]


@pytest.mark.parametrize(("cname", "shuffle"), BLOSC)
def test_blosc(tmp_path, cname, shuffle):
    k = BLOSC.index((cname, shuffle))
    dtype = ["int8", "uint16", "float32", "float64", "complex128"][k % 5]
    typesize = np.dtype(dtype).itemsize if k % 4 else 2  # a typesize not the item size too
    codecs = [LE, blosc(cname, [0, 1, 5, 9][k % 4], shuffle, typesize)]
    both_ways(tmp_path, sample(dtype, SHAPE), False, chunks=CHUNKS, codecs=codecs)


@pytest.mark.parametrize("level", [0, 1, 6, 9])
def test_gzip(tmp_path, level):
    both_ways(tmp_path, sample("int64", SHAPE), False, chunks=CHUNKS, codecs=[BE, gzip(level)])


@pytest.mark.parametrize(("level", "checksum"), [(-3, False), (0, True), (1, False), (3, True),
                                                 (9, False), (19, True)])
def test_zstd(tmp_path, level, checksum):
    codecs = [LE, zstd(level, checksum)]
    both_ways(tmp_path, sample("float32", SHAPE), False, chunks=CHUNKS, codecs=codecs)


COMBINATIONS = {
    "transpose-big-blosc-crc32c": [transpose(1, 0), BE, blosc("zstd", 3, "bitshuffle", 4), CRC],
    "gzip-crc32c": [LE, gzip(4), CRC],
    "transpose-zstd-crc32c": [transpose(1, 0), LE, zstd(5, True), CRC],
    "zstd-then-gzip": [LE, zstd(1, False), gzip(1)],
    "crc32c-then-blosc": [BE, CRC, blosc("lz4", 5, "shuffle", 1)],
}


@pytest.mark.parametrize("name", COMBINATIONS)
def test_codec_combinations(tmp_path, name):
    both_ways(tmp_path, sample("int32", SHAPE), False, chunks=CHUNKS, codecs=COMBINATIONS[name])


def zarr_python_codecs():
    """zarr-python's own codec objects, so its metadata (evolved blosc typesize and shuffle,
    defaults) is what zarrs encodes with."""
    from zarr.codecs import (
        BloscCodec,
        BytesCodec,
        Crc32cCodec,
        GzipCodec,
        ShardingCodec,
        TransposeCodec,
        ZstdCodec,
    )

    inner = ShardingCodec(chunk_shape=(2, 5), codecs=[BytesCodec(endian="big"), Crc32cCodec()],
                          index_location="start")
    return {
        "blosc-defaults": dict(compressors=[BloscCodec()]),
        "blosc-bitshuffle": dict(compressors=[BloscCodec(cname="zlib", clevel=2,
                                                         shuffle="bitshuffle")]),
        "gzip": dict(serializer=BytesCodec(endian="big"), compressors=[GzipCodec(level=3)]),
        "zstd-checksum": dict(compressors=[ZstdCodec(level=4, checksum=True), Crc32cCodec()]),
        "transpose": dict(filters=[TransposeCodec(order=(1, 0))], compressors=None),
        "sharding": dict(serializer=inner, compressors=[Crc32cCodec()]),
    }


@pytest.mark.parametrize("name", list(zarr_python_codecs()))
def test_zarrs_made_codecs(tmp_path, name):
    """Arrays zarr-python describes and zarrs writes, read and partly overwritten by zarrkit,
    read back by zarrs."""
    data = sample("float32", SHAPE)
    chunks = SHARDS if name == "sharding" else CHUNKS
    za = zarrs_create(tmp_path, shape=SHAPE, dtype="float32", chunks=chunks, fill_value=-0.0,
                      **zarr_python_codecs()[name])
    for region in REGIONS:
        za[region] = data[region]
    expected = written(filled(SHAPE, "float32", -0.0), data, REGIONS)
    ka = zarrkit.open_array(str(tmp_path))
    assert_bits(ka[...], expected)
    new = sample("float32", SHAPE, seed=3)
    ka[OVERWRITE] = new[OVERWRITE]
    assert_bits(zarrs_array(tmp_path)[...], written(expected, new, [OVERWRITE]))


# -- sharding -------------------------------------------------------------------------------------

#: Shards of (4, 10) over the 10x13 array: edge shards in both dimensions; inner chunks of (2, 5).
SHARDS = (4, 10)
SHARDED = {
    "end": ([shard((2, 5), [LE])], True),
    "start": ([shard((2, 5), [LE], "start")], True),
    "index-big-no-crc": ([shard((2, 5), [LE], index_codecs=[BE])], True),
    "index-start-big-crc": ([shard((2, 5), [BE, CRC], "start", [BE, CRC])], True),
    "inner-transpose": ([shard((2, 5), [transpose(1, 0), BE])], True),
    "inner-1x1": ([shard((1, 1), [LE])], True),
    "whole-shard-inner": ([shard(SHARDS, [LE, CRC])], True),
    "crc32c-after-shard": ([shard((2, 5), [LE]), CRC], True),
    "inner-blosc": ([shard((2, 5), [LE, blosc("lz4", 5, "shuffle", 4)])], False),
    "inner-zstd-index-big": ([shard((2, 5), [LE, zstd(3, True)], "end", [BE])], False),
    "gzip-after-shard": ([shard((2, 5), [LE]), gzip(5)], False),
    "nested": ([shard((2, 10), [shard((1, 5), [LE])])], True),
    "nested-start-crc": ([shard((2, 10), [shard((2, 5), [BE, CRC], "start")], "start")], True),
    "nested-inner-zstd": ([shard((4, 5), [shard((2, 5), [LE, zstd(2, False)], "end",
                                                [BE])])], False),
}


@pytest.mark.parametrize("name", SHARDED)
def test_sharding(tmp_path, name):
    codecs, same_bytes = SHARDED[name]
    both_ways(tmp_path, sample("int32", SHAPE), same_bytes, chunks=SHARDS, codecs=codecs)


@pytest.mark.parametrize("limit", [1, 64])
def test_zarrs_chunk_concurrency(tmp_path, limit):
    """zarrs encodes chunks (and inner chunks) concurrently up to its limits: one at a time, the
    shards it writes are byte for byte those zarrkit writes; with many, the values are."""
    settings = {"codec_pipeline.chunk_concurrent_minimum": 1,
                "codec_pipeline.chunk_concurrent_maximum": limit, "threading.max_workers": limit}
    with zarr.config.set(settings):
        both_ways(tmp_path, sample("uint16", (24, 30)), limit == 1, regions=((...,),),
                  overwrite=(slice(3, 21), slice(1, 29)), chunks=(8, 10),
                  codecs=[shard((2, 5), [LE, CRC], "start")])


def test_transpose_before_sharding(tmp_path):
    # A square shard, so that zarr-python's pre-transpose check of the inner shape passes too.
    codecs = [transpose(1, 0), shard((2, 2), [LE], "start")]
    both_ways(tmp_path, sample("float32", SHAPE), True, chunks=(4, 4), codecs=codecs)


def test_missing_inner_chunks_and_shards(tmp_path):
    # Only one inner chunk of one shard written by each; the rest is read as the fill value.
    region = ((slice(2, 4), slice(5, 10)),)
    both_ways(tmp_path, sample("int16", SHAPE), True, fill=-7, regions=region,
              chunks=SHARDS, codecs=[shard((2, 5), [LE])])
    assert sorted(stored(tmp_path / "zarrs")) == ["c/0/0", "c/0/1", "c/1/0", "c/1/1",
                                                  "c/2/0", "c/2/1"]  # after the overwrite


def test_inner_chunks_must_divide_the_shard(tmp_path):
    with pytest.raises(zarrkit.CodecError, match="does not evenly divide the shard"):
        zarrkit.create(str(tmp_path / "a"), SHAPE, "int32", chunks=SHARDS,
                       codecs=[shard((3, 5), [LE])])
    with pytest.raises(ValueError, match="divisible"):
        zarrs_create(tmp_path / "b", shape=SHAPE, dtype="int32", chunks=(3, 5), shards=SHARDS)


def test_zarrs_made_sharded_array(tmp_path):
    """zarr-python's own sharding metadata (shards=), written by zarrs, read and extended by
    zarrkit, read back by zarrs."""
    data = sample("uint32", SHAPE)
    za = zarrs_create(tmp_path, shape=SHAPE, dtype="uint32", chunks=(2, 5), shards=SHARDS,
                      compressors=None, fill_value=3)
    za[REGIONS[0]] = data[REGIONS[0]]
    expected = written(filled(SHAPE, "uint32", 3), data, REGIONS[:1])
    ka = zarrkit.open_array(str(tmp_path))
    assert_bits(ka[...], expected)
    ka[REGIONS[1]] = data[REGIONS[1]]
    assert_bits(zarrs_array(tmp_path)[...], written(expected, data, REGIONS[1:]))


# -- data types and fill values -------------------------------------------------------------------

NUMERIC = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
           "float16", "float32", "float64", "complex64", "complex128"]


LAYOUTS = {
    "little-crc32c": ([LE, CRC], CHUNKS),
    "big": ([BE], CHUNKS),
    "sharded-big": ([shard((2, 5), [BE, CRC], "start")], SHARDS),
}
SWAPS_COMPLEX = pytest.mark.xfail(
    raises=AssertionError, strict=True,
    reason="zarrs 0.2.3 swaps the real and imaginary parts when it decodes part of a big-endian "
           "complex chunk (a whole chunk decodes correctly)")


def data_type_cases():
    for layout in LAYOUTS:
        for dtype in NUMERIC:
            swaps = dtype.startswith("complex") and "big" in layout
            yield pytest.param(dtype, layout, marks=[SWAPS_COMPLEX] if swaps else [])


@pytest.mark.parametrize(("dtype", "layout"), list(data_type_cases()))
def test_data_types(tmp_path, dtype, layout):
    codecs, chunks = LAYOUTS[layout]
    both_ways(tmp_path, sample(dtype, SHAPE), True, chunks=chunks, codecs=codecs)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("layout", ["big", "sharded-big"])
def test_big_endian_complex_whole_chunk_reads(tmp_path, dtype, layout):
    """What zarrs gets right of big-endian complex: all it writes, and chunks it reads whole."""
    codecs, chunks = LAYOUTS[layout]
    both_ways(tmp_path, sample(dtype, SHAPE), True, chunks=chunks, codecs=codecs,
              zarrs_reads=(slice(0, 8), slice(0, 10)))


@pytest.mark.parametrize("shape", [(), (7,), (3, 4, 5)], ids=["0d", "1d", "3d"])
def test_shapes(tmp_path, shape):
    chunks = tuple(max(1, n // 2) for n in shape)
    both_ways(tmp_path, sample("float64", shape), True, regions=(), overwrite=(...,),
              chunks=chunks, codecs=[LE, CRC])


PEER_REFUSES_TYPE = pytest.mark.xfail(
    raises=UnsupportedDataTypeError, strict=True,
    reason="zarrs-python 0.2.3 refuses numpy kinds V/S/U/M/m/O/T (no fallback in strict mode)")


@pytest.mark.parametrize(("dtype", "values"), [
    pytest.param("string", ["", "a", "ünï", "long string"], id="vlen-utf8",
                 marks=PEER_REFUSES_TYPE),
    pytest.param("datetime64[s]", [0, 1, -5, 2**40], id="datetime64", marks=PEER_REFUSES_TYPE),
])
def test_types_zarrs_refuses(tmp_path, dtype, values):
    values = np.array(values, dtype=object if dtype == "string" else dtype)
    ka = zarrkit.create(str(tmp_path), values.shape, dtype, chunks=(2,))
    ka[...] = values
    assert np.array_equal(zarrs_array(tmp_path)[...], values)


@pytest.mark.xfail(raises=UnsupportedDataTypeError, strict=True,
                   reason="zarrs-python 0.2.3 refuses variable-length bytes (numpy kind O)")
def test_vlen_bytes_zarrs_refuses(tmp_path):
    values = np.array([b"", b"\x00a", b"bytes"], dtype=object)
    ka = zarrkit.array(values, str(tmp_path), chunks=(2,))
    assert list(zarrs_array(tmp_path)[...]) == list(ka[...])


NAN_NEG = complex(float("nan"), -0.0)
FILLS = [
    ("float16", float("nan")), ("float32", float("nan")), ("float64", float("nan")),
    ("float16", -0.0), ("float32", -0.0), ("float64", -0.0),
    ("float32", float("inf")), ("float64", float("-inf")), ("float16", 65504.0),
    ("int8", -128), ("int64", np.iinfo("int64").min), ("int64", np.iinfo("int64").max),
    ("uint8", 255), ("uint64", np.iinfo("uint64").max), ("bool", True),
    ("complex64", NAN_NEG), ("complex128", complex(float("-inf"), 1.5)),
]


@pytest.mark.parametrize(("dtype", "fill"), FILLS)
@pytest.mark.parametrize("sharded", [False, True], ids=["chunked", "sharded"])
def test_fill_values_zarrkit_made(tmp_path, dtype, fill, sharded):
    codecs = [shard((2, 5), [LE])] if sharded else [LE]
    both_ways(tmp_path, sample(dtype, SHAPE), True, fill=fill,
              chunks=SHARDS if sharded else CHUNKS, codecs=codecs)


@pytest.mark.parametrize(("dtype", "fill"), FILLS)
def test_fill_values_zarrs_made(tmp_path, dtype, fill):
    data = sample(dtype, SHAPE)
    za = zarrs_create(tmp_path / "z", shape=SHAPE, dtype=dtype, chunks=CHUNKS, fill_value=fill,
                      compressors=None)
    za[REGIONS[0]] = data[REGIONS[0]]
    expected = written(filled(SHAPE, dtype, fill), data, REGIONS[:1])
    ka = zarrkit.open_array(str(tmp_path / "z"))
    assert_bits(ka[...], expected)
    ka[REGIONS[1]] = data[REGIONS[1]]
    assert_bits(zarrs_array(tmp_path / "z")[...], written(expected, data, REGIONS[1:]))
    # The same array made by zarrkit has the same metadata, fill value included.
    zarrkit.create(str(tmp_path / "k"), SHAPE, dtype, chunks=CHUNKS, fill_value=fill,
                   compressors=None)
    ours = json.loads((tmp_path / "k" / "zarr.json").read_text())
    theirs = json.loads((tmp_path / "z" / "zarr.json").read_text())
    assert json.dumps(ours["fill_value"]) == json.dumps(theirs["fill_value"])


# -- write_empty_chunks ---------------------------------------------------------------------------

#: (dtype, fill value, value of the "empty" chunk, whether that chunk counts as empty): a chunk
#: is empty when it equals the fill value bit for bit, so -0.0 is kept under a 0.0 fill.
EMPTY = [
    ("int32", 0, 0, True),
    ("float32", float("nan"), float("nan"), True),
    ("float64", 0.0, -0.0, False),
    ("float32", -0.0, 0.0, False),
    ("uint8", 9, 9, True),
]


@pytest.mark.parametrize(("dtype", "fill", "value", "empty"), EMPTY)
@pytest.mark.parametrize("write_empty", [False, True])
@pytest.mark.parametrize("sharded", [False, True], ids=["chunked", "sharded"])
def test_write_empty_chunks(tmp_path, sharded, write_empty, dtype, fill, value, empty):
    data = sample(dtype, (8, 12))
    data[:4, :6] = value  # chunk (0, 0), or the first inner chunk of shard (0, 0)
    data[4:, :] = value  # chunks (1, 0) and (1, 1), or all of shard (1, 0)
    codecs = [shard((4, 6), [LE], "start")] if sharded else [LE]
    zarrs_differs = write_empty and empty  # see test_zarrs_ignores_write_empty_chunks
    both_ways(tmp_path, data, not zarrs_differs, fill=fill, regions=((...,),), overwrite=None,
              write_empty_chunks=write_empty, chunks=(4, 12) if sharded else (4, 6),
              codecs=codecs)
    if sharded:
        keys = ["c/0/0"] if empty and not write_empty else ["c/0/0", "c/1/0"]
    else:
        keys = ["c/0/1"] if empty and not write_empty else ["c/0/0", "c/0/1", "c/1/0", "c/1/1"]
    assert sorted(stored(tmp_path / "zarrkit")) == keys
    if not zarrs_differs:
        assert sorted(stored(tmp_path / "zarrs")) == keys


@pytest.mark.parametrize("sharded", [False, True], ids=["chunked", "sharded"])
@pytest.mark.xfail(raises=AssertionError, strict=True,
                   reason="zarrs-python 0.2.3 ignores write_empty_chunks=True: it never stores a "
                          "chunk (or inner chunk) equal to the fill value")
def test_zarrs_ignores_write_empty_chunks(tmp_path, sharded):
    shards = (4,) if sharded else None
    za = zarrs_create(tmp_path, write_empty_chunks=True, shape=(8,), dtype="int32", chunks=(2,),
                      shards=shards, compressors=None, fill_value=0)
    za[...] = np.zeros(8, "int32")
    assert sorted(stored(tmp_path)) == (["c/0", "c/1"] if sharded else
                                        ["c/0", "c/1", "c/2", "c/3"])


@pytest.mark.parametrize("zarrkit_first", [True, False])
def test_overwriting_with_fill_deletes_chunks(tmp_path, zarrkit_first):
    """A chunk one library wrote is deleted when the other overwrites it with the fill value."""
    data = sample("float32", (8,))
    if zarrkit_first:
        zarrkit.create(str(tmp_path), (8,), "float32", chunks=(4,), codecs=[LE])[...] = data
        zarrs_array(tmp_path, "r+")[:4] = 0
    else:
        zarrs_create(tmp_path, shape=(8,), dtype="float32", chunks=(4,), compressors=None,
                     fill_value=0)[...] = data
        zarrkit.open_array(str(tmp_path))[:4] = 0
    assert sorted(stored(tmp_path)) == ["c/1"]
    expected = np.concatenate([np.zeros(4, "float32"), data[4:]])
    assert_bits(zarrs_array(tmp_path)[...], expected)
    assert_bits(zarrkit.open_array(str(tmp_path), mode="r")[...], expected)


# -- checksums ------------------------------------------------------------------------------------

@pytest.mark.parametrize("codecs", [[LE, CRC], [shard((2, 5), [LE, CRC])]], ids=["crc32c", "inner"])
def test_zarrs_validates_zarrkit_checksums(tmp_path, codecs):
    data = sample("int32", SHAPE)
    zarrkit.create(str(tmp_path), SHAPE, "int32", chunks=SHARDS, codecs=codecs)[...] = data
    assert_bits(zarrs_array(tmp_path)[...], data)
    chunk = tmp_path / "c" / "0" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[3] ^= 0xFF  # a value byte (of the first inner chunk, when sharded)
    chunk.write_bytes(bytes(raw))
    with pytest.raises(Exception, match="(?i)checksum"):
        zarrs_array(tmp_path)[...]
    with pytest.raises(zarrkit.ChecksumError):
        zarrkit.open_array(str(tmp_path), mode="r")[...]


# -- chunk key encodings --------------------------------------------------------------------------

ENCODINGS = [{"name": "default", "separator": "/"}, {"name": "default", "separator": "."},
             {"name": "v2", "separator": "."}, {"name": "v2", "separator": "/"}]
KEYS = {("default", "/"): "c/1/2", ("default", "."): "c.1.2", ("v2", "."): "1.2",
        ("v2", "/"): "1/2"}


@pytest.mark.parametrize("encoding", ENCODINGS, ids=lambda e: f"{e['name']}{e['separator']}")
def test_chunk_key_encodings(tmp_path, encoding):
    # zarr-python's keyword form {"name", "separator"}, accepted by both (regression for zarrkit)
    data = sample("int16", SHAPE)
    both_ways(tmp_path, data, True, chunks=CHUNKS, codecs=[LE], chunk_key_encoding=encoding)
    assert KEYS[encoding["name"], encoding["separator"]] in stored(tmp_path / "zarrs")
    zarrs_create(tmp_path / "z", shape=SHAPE, dtype="int16", chunks=CHUNKS, compressors=None,
                 chunk_key_encoding=encoding)
    ours = json.loads((tmp_path / "zarrkit" / "zarr.json").read_text())
    theirs = json.loads((tmp_path / "z" / "zarr.json").read_text())
    assert ours["chunk_key_encoding"] == theirs["chunk_key_encoding"]


def test_chunk_key_encoding_refuses_two_separators(tmp_path):
    encoding = {"name": "default", "separator": ".", "configuration": {"separator": "/"}}
    with pytest.raises(zarrkit.MetadataError, match="separator"):
        zarrkit.create(str(tmp_path), SHAPE, "int16", chunk_key_encoding=encoding)


# -- Zarr v2 --------------------------------------------------------------------------------------

V2_COMPRESSORS = {
    "none": (None, True),
    "blosc-lz4-shuffle": ({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1,
                           "blocksize": 0}, False),
    "blosc-zstd-bitshuffle": ({"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2,
                               "blocksize": 0}, False),
    "blosc-zlib-noshuffle": ({"id": "blosc", "cname": "zlib", "clevel": 1, "shuffle": 0,
                              "blocksize": 0}, False),
    "zstd": ({"id": "zstd", "level": 3}, False),
    "zlib": ({"id": "zlib", "level": 4}, False),
    "gzip": ({"id": "gzip", "level": 6}, False),
    "bz2": ({"id": "bz2", "level": 2}, False),
}


@pytest.mark.parametrize("name", V2_COMPRESSORS)
@pytest.mark.parametrize("separator", [".", "/"])
def test_v2_compressors(tmp_path, name, separator):
    compressor, same_bytes = V2_COMPRESSORS[name]
    both_ways(tmp_path, sample("float64", SHAPE), same_bytes, fill=float("nan"), chunks=CHUNKS,
              zarr_format=2, compressor=compressor, dimension_separator=separator)
    assert ("1/2" if separator == "/" else "1.2") in stored(tmp_path / "zarrs")


V2_FILTERS = {
    "shuffle": ("int32", [{"id": "shuffle", "elementsize": 4}], {"id": "zlib", "level": 1}),
    "fixedscaleoffset": ("float64", [{"id": "fixedscaleoffset", "offset": 2, "scale": 4,
                                      "dtype": "<f8", "astype": "<i4"}], None),
}


@pytest.mark.parametrize("name", V2_FILTERS)
def test_v2_filters(tmp_path, name):
    dtype, filters, compressor = V2_FILTERS[name]
    data = sample("int16" if dtype == "float64" else dtype, SHAPE).astype(dtype)
    if dtype == "float64":
        data /= 4  # exact under scale 4, and in int32 range after the offset
    both_ways(tmp_path, data, compressor is None, chunks=CHUNKS, zarr_format=2,
              compressor=compressor, filters=filters, new=data[::-1, ::-1].copy())


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float16", "complex64"])
def test_v2_zarrs_made(tmp_path, dtype):
    import numcodecs

    data = sample(dtype, SHAPE)
    za = zarrs_create(tmp_path, shape=SHAPE, dtype=dtype, chunks=CHUNKS, zarr_format=2,
                      compressors=numcodecs.Zstd(level=2), fill_value=data.flat[3])
    za[REGIONS[0]] = data[REGIONS[0]]
    expected = written(filled(SHAPE, dtype, data.flat[3]), data, REGIONS[:1])
    ka = zarrkit.open_array(str(tmp_path))
    assert_bits(ka[...], expected)
    ka[OVERWRITE] = data[OVERWRITE]
    assert_bits(zarrs_array(tmp_path)[...], written(expected, data, [OVERWRITE]))


def _v2(tmp_path, **kwargs):
    data = sample("int32", SHAPE)
    zarrkit.create(str(tmp_path), SHAPE, kwargs.pop("dtype", "int32"), chunks=CHUNKS,
                   zarr_format=2, **kwargs)[...] = data
    return data


@pytest.mark.parametrize("kwargs", [
    pytest.param({"compressor": {"id": "lz4", "acceleration": 1}}, id="lz4"),
    pytest.param({"compressor": None, "filters": [{"id": "delta", "dtype": "<i4"}]}, id="delta"),
])
@pytest.mark.xfail(raises=UnsupportedMetadataError, strict=True,
                   reason="zarrs-python 0.2.3 does not support these numcodecs v2 codecs")
def test_v2_codecs_zarrs_refuses(tmp_path, kwargs):
    data = _v2(tmp_path, **kwargs)
    assert_bits(zarrs_array(tmp_path)[...], data)


@pytest.mark.xfail(raises=ValueError, strict=True,
                   reason="zarrs-python 0.2.3: 'input array must be a C contiguous array'")
def test_v2_fortran_order_zarrs_refuses(tmp_path):
    data = _v2(tmp_path, compressor=None, order="F")
    assert_bits(zarrs_array(tmp_path)[...], data)


@pytest.mark.xfail(raises=RuntimeError, strict=True,
                   reason="zarrs-python 0.2.3: 'Non-native byte order not supported'")
def test_v2_big_endian_zarrs_refuses(tmp_path):
    data = _v2(tmp_path, dtype=">i4", compressor=None)
    assert_bits(zarrs_array(tmp_path)[...], data.astype(">i4"))


@pytest.mark.parametrize("zarrkit_first", [True, False])
def test_v2_null_fill_value(tmp_path, zarrkit_first):
    """A v2 array without a fill value: both read what was never written as zeros."""
    if zarrkit_first:
        zarrkit.create(str(tmp_path), (6,), "int32", chunks=(4,), zarr_format=2,
                       fill_value=None, compressor=None)[:2] = [1, 2]
        zarrs_array(tmp_path, "r+")[5:] = 6
    else:
        zarrs_create(tmp_path, shape=(6,), dtype="int32", chunks=(4,), zarr_format=2,
                     fill_value=None, compressors=None)[:2] = [1, 2]
        zarrkit.open_array(str(tmp_path))[5:] = 6
    assert json.loads((tmp_path / ".zarray").read_text())["fill_value"] is None
    expected = np.array([1, 2, 0, 0, 0, 6], "int32")
    assert_bits(zarrs_array(tmp_path)[...], expected)
    assert_bits(zarrkit.open_array(str(tmp_path), mode="r")[...], expected)

"""Codec-level interoperability with zarr-python 3 as the oracle, both directions."""

import json
import warnings

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
from zarr.codecs import (  # noqa: E402
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    ShardingCodec,
    TransposeCodec,
    ZstdCodec,
)

from zarrkit.codecs import ChunkSpec, CodecChain  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def sample(dtype, shape):
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype.kind == "b":
        return (np.arange(n) % 3 == 1).reshape(shape)
    if dtype.kind == "V":
        return np.frombuffer(bytes((i * 7 + 1) % 256 for i in range(n * dtype.itemsize)), dtype).reshape(shape)
    values = (np.arange(n) * 37 % 101 - 50).astype("float64") / 4 + 1
    return values.astype(dtype).reshape(shape)


def zeros(dtype):
    return np.zeros((), np.dtype(dtype))[()]


def write_with_zarr(path, data, chunks=None, write_empty_chunks=True, **codecs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        array = zarr.create_array(store=zarr.storage.LocalStore(path), shape=data.shape,
                                  chunks=chunks or data.shape, dtype=data.dtype, fill_value=zeros(data.dtype),
                                  config={"write_empty_chunks": write_empty_chunks}, **codecs)
        array[...] = data
    meta = json.loads((path / "zarr.json").read_text())
    return meta, (path / "c" / "/".join("0" * data.ndim)).read_bytes()


def read_with_zarr(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_array(zarr.storage.LocalStore(path), mode="r")[...]


def our_chain(meta, data):
    shape = tuple(meta["chunk_grid"]["configuration"]["chunk_shape"])
    return CodecChain.from_json(meta["codecs"], ChunkSpec(shape, data.dtype, zeros(data.dtype)))


DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128", "V3"]
UNCOMPRESSED = {
    "little": dict(serializer=BytesCodec(endian="little"), compressors=None),
    "big": dict(serializer=BytesCodec(endian="big"), compressors=None),
    "crc32c": dict(serializer=BytesCodec(endian="big"), compressors=[Crc32cCodec()]),
    "transpose": dict(filters=[TransposeCodec(order=(2, 0, 1))], serializer=BytesCodec(), compressors=None),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", UNCOMPRESSED)
def test_same_bytes_as_zarr_python(tmp_path, dtype, variant):
    data = sample(dtype, (3, 4, 5))
    meta, stored = write_with_zarr(tmp_path, data, **UNCOMPRESSED[variant])
    chain = our_chain(meta, data)
    assert chain.to_json() == meta["codecs"]  # same evolved metadata
    assert bytes(chain.encode(data)) == stored
    assert chain.decode(stored).tobytes() == data.tobytes()


COMPRESSED = {
    "gzip": [GzipCodec(level=3)],
    "zstd": [ZstdCodec(level=5, checksum=True)],
    "zstd-default": [ZstdCodec()],
    "blosc-default": [BloscCodec()],
    "blosc-lz4-bit": [BloscCodec(cname="lz4", clevel=9, shuffle="bitshuffle", typesize=4)],
    "blosc-zlib-noshuffle": [BloscCodec(cname="zlib", clevel=1, shuffle="noshuffle")],
    "blosc-lz4hc-block": [BloscCodec(cname="lz4hc", shuffle="shuffle", blocksize=256)],
    "blosc+crc32c": [BloscCodec(cname="blosclz"), Crc32cCodec()],
}


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float64", "complex64"])
@pytest.mark.parametrize("variant", COMPRESSED)
def test_compressors_both_ways(tmp_path, dtype, variant):
    data = sample(dtype, (20, 30))
    meta, stored = write_with_zarr(tmp_path, data, compressors=COMPRESSED[variant])
    chain = our_chain(meta, data)
    assert chain.to_json() == meta["codecs"]
    np.testing.assert_array_equal(chain.decode(stored), data)
    # zarr-python reads what we write
    (tmp_path / "c" / "0" / "0").write_bytes(bytes(chain.encode(data)))
    np.testing.assert_array_equal(read_with_zarr(tmp_path), data)


def test_blosc_defaults_match_zarr_python(tmp_path):
    # BloscCodec() leaves shuffle/typesize to the array, as our evolve does
    for dtype in ("uint8", "uint16", "float64"):
        data = sample(dtype, (4,))
        meta, _ = write_with_zarr(tmp_path / dtype, data, compressors=[BloscCodec(cname="lz4")])
        ours = CodecChain.from_json(["bytes", {"name": "blosc", "configuration": {"cname": "lz4"}}],
                                    ChunkSpec((4,), data.dtype, zeros(dtype)))
        assert ours.to_json() == meta["codecs"]


SHARDING = {
    "end": dict(index_location="end"),
    "start": dict(index_location="start"),
    "gzip-inner": dict(codecs=[BytesCodec(), GzipCodec(level=1)]),
    "transpose-inner": dict(codecs=[TransposeCodec(order=(1, 0)), BytesCodec(endian="big"), Crc32cCodec()],
                            index_location="start"),
    "nested": dict(codecs=[ShardingCodec(chunk_shape=(2, 2), index_location="start")]),
}


@pytest.mark.parametrize("variant", SHARDING)
def test_shards_both_ways(tmp_path, variant):
    data = sample("int32", (8, 12))
    data[:4, :4] = 0  # some inner chunks hold only the fill value
    codec = ShardingCodec(chunk_shape=(4, 4), **SHARDING[variant])
    # like ours, zarr-python then leaves out inner chunks equal to the fill value
    meta, stored = write_with_zarr(tmp_path, data, serializer=codec, compressors=None, filters=None,
                                   write_empty_chunks=False)
    chain = our_chain(meta, data)
    assert chain.to_json() == meta["codecs"]
    np.testing.assert_array_equal(chain.decode(stored), data)
    ours = bytes(chain.encode(data))
    if variant not in ("gzip-inner", "nested"):  # deterministic, one level: same inner chunk bytes
        # zarr-python packs inner chunks in Morton order, we use C order: compare chunk by chunk
        codec = chain.array_bytes
        theirs_index = codec.decode_index(codec.index_byte_range().slice_of(stored), len(stored))
        ours_index = codec.decode_index(codec.index_byte_range().slice_of(ours), len(ours))
        for coords in np.ndindex(*codec.chunks_per_shard):
            (o1, n1), (o2, n2) = theirs_index[coords].tolist(), ours_index[coords].tolist()
            assert stored[o1:o1 + n1] == ours[o2:o2 + n2] if n1 != 2**64 - 1 else n2 == n1
        assert len(ours) == len(stored)
    (tmp_path / "c" / "0" / "0").write_bytes(ours)
    np.testing.assert_array_equal(read_with_zarr(tmp_path), data)


@pytest.mark.parametrize("location", ["start", "end"])
def test_zarr_python_reads_hand_written_shard(tmp_path, location):
    data = sample("float32", (6, 8))
    chain = CodecChain.from_json([{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [3, 4], "codecs": ["bytes", {"name": "zstd"}],
        "index_codecs": ["bytes", "crc32c"], "index_location": location}}],
        ChunkSpec((6, 8), np.dtype("float32"), np.float32(0)))
    codec = chain.array_bytes
    inner = {(0, 1): codec.inner.encode(data[0:3, 4:8]), (1, 0): codec.inner.encode(data[3:6, 0:4])}
    (tmp_path / "c" / "0").mkdir(parents=True)
    (tmp_path / "c" / "0" / "0").write_bytes(bytes(codec.encode_shard(inner)))
    (tmp_path / "zarr.json").write_text(json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": [6, 8], "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [6, 8]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0.0, "codecs": chain.to_json()}))
    expected = np.zeros((6, 8), "float32")
    expected[0:3, 4:8] = data[0:3, 4:8]
    expected[3:6, 0:4] = data[3:6, 0:4]
    np.testing.assert_array_equal(read_with_zarr(tmp_path), expected)

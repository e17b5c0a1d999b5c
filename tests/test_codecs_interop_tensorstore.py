"""Codec-level interoperability with TensorStore as the oracle, both directions."""

import json

import ml_dtypes
import numpy as np
import pytest

ts = pytest.importorskip("tensorstore")

from zarrkit.codecs import ChunkSpec, CodecChain  # noqa: E402


def sample(dtype, shape):
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype == np.dtype(ml_dtypes.int4):
        return (np.arange(n) % 16 - 8).astype(dtype).reshape(shape)
    if dtype.kind == "b":
        return (np.arange(n) % 3 == 1).reshape(shape)
    values = (np.arange(n) * 37 % 101 - 50).astype("float64") / 4 + 1
    return values.astype(dtype).reshape(shape)


def ts_spec(path, dtype, shape, codecs=None, chunk_shape=None):
    metadata = {"shape": list(shape), "data_type": np.dtype(dtype).name,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunk_shape or shape)}}}
    if codecs is not None:
        metadata["codecs"] = codecs
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}, "metadata": metadata}


def write_with_ts(path, data, codecs=None):
    store = ts.open(ts_spec(path, data.dtype, data.shape, codecs), create=True).result()
    store[...] = data
    meta = json.loads((path / "zarr.json").read_text())
    return meta, (path / "c" / "/".join("0" * data.ndim)).read_bytes()


def read_with_ts(path):
    return ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}).result().read().result()


def our_chain(meta, dtype):
    dtype = np.dtype(dtype)
    shape = tuple(meta["chunk_grid"]["configuration"]["chunk_shape"])
    return CodecChain.from_json(meta["codecs"], ChunkSpec(shape, dtype, np.zeros((), dtype)[()]))


def test_int4_layout_matches_tensorstore(tmp_path):
    data = np.array([1, -2, 3, 7, -8], dtype=ml_dtypes.int4)
    meta, stored = write_with_ts(tmp_path, data)
    assert stored == bytes.fromhex("010e030708")
    chain = our_chain(meta, ml_dtypes.int4)
    assert meta["codecs"] == [{"name": "bytes"}] == chain.to_json()
    assert bytes(chain.encode(data)) == stored


DTYPES = ["bool", "int8", "uint8", "int16", "uint32", "int64", "float16", "float32", "float64",
          "complex64", "complex128", ml_dtypes.bfloat16, ml_dtypes.int4]
CODECS = {
    "default": None,
    "big": [{"name": "bytes", "configuration": {"endian": "big"}}],
    "transpose-F-big": [{"name": "transpose", "configuration": {"order": "F"}},
                        {"name": "bytes", "configuration": {"endian": "big"}}, "crc32c"],
    "transpose": [{"name": "transpose", "configuration": {"order": [1, 2, 0]}}, "bytes"],
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("variant", CODECS)
def test_same_bytes_as_tensorstore(tmp_path, dtype, variant):
    data = sample(dtype, (3, 4, 5))
    meta, stored = write_with_ts(tmp_path, data, CODECS[variant])
    chain = our_chain(meta, dtype)
    assert chain.to_json() == meta["codecs"]  # same evolved metadata
    assert bytes(chain.encode(data)) == stored
    assert chain.decode(stored).tobytes() == data.tobytes()


COMPRESSED = {
    "gzip": ["bytes", {"name": "gzip", "configuration": {"level": 7}}],
    "zstd": ["bytes", {"name": "zstd", "configuration": {"level": 2, "checksum": True}}],
    "blosc": ["bytes", {"name": "blosc", "configuration": {"cname": "lz4"}}],
    "blosc-zstd-bit": ["bytes", {"name": "blosc", "configuration": {"cname": "zstd", "shuffle": "bitshuffle"}}],
    "zstd+blosc+crc": ["bytes", {"name": "zstd", "configuration": {"level": 1}},
                       {"name": "blosc", "configuration": {"cname": "zlib", "clevel": 2}}, "crc32c"],
}


@pytest.mark.parametrize("dtype", ["uint16", "float32", ml_dtypes.bfloat16], ids=str)
@pytest.mark.parametrize("variant", COMPRESSED)
def test_compressors_both_ways(tmp_path, dtype, variant):
    data = sample(dtype, (16, 24))
    meta, stored = write_with_ts(tmp_path, data, COMPRESSED[variant])
    chain = our_chain(meta, dtype)
    assert chain.to_json() == meta["codecs"]
    np.testing.assert_array_equal(chain.decode(stored), data)
    (tmp_path / "c" / "0" / "0").write_bytes(bytes(chain.encode(data)))
    np.testing.assert_array_equal(read_with_ts(tmp_path), data)


def test_blosc_defaults_match_tensorstore(tmp_path):
    for dtype in ("uint8", "uint16", "float64", "complex128"):
        data = sample(dtype, (4,))
        meta, _ = write_with_ts(tmp_path / dtype, data, ["bytes", {"name": "blosc", "configuration": {"cname": "lz4"}}])
        assert our_chain(meta, dtype).to_json() == meta["codecs"]


def sharding(location, inner=("bytes",), chunk_shape=(2, 3)):
    return [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(chunk_shape), "codecs": list(inner),
        "index_codecs": ["bytes", "crc32c"], "index_location": location}}]


SHARDED = {
    "end": sharding("end"),
    "start": sharding("start"),
    "start-zstd": sharding("start", ["bytes", {"name": "zstd", "configuration": {"level": 1}}, "crc32c"]),
    "nested": sharding("end", [sharding("start", chunk_shape=(1, 1))[0]]),
    "transposed": sharding("end", [{"name": "transpose", "configuration": {"order": [1, 0]}},
                                   {"name": "bytes", "configuration": {"endian": "big"}}]),
}


@pytest.mark.parametrize("dtype", ["int16", ml_dtypes.int4, "complex64"], ids=str)
@pytest.mark.parametrize("variant", SHARDED)
def test_shards_both_ways(tmp_path, dtype, variant):
    data = sample(dtype, (4, 6))
    data[:2, :3] = 0  # one inner chunk is all fill value
    meta, stored = write_with_ts(tmp_path, data, SHARDED[variant])
    chain = our_chain(meta, dtype)
    np.testing.assert_array_equal(chain.decode(stored), data)
    codec = chain.array_bytes
    index = codec.decode_index(codec.index_byte_range().slice_of(stored), len(stored))
    assert (index[0, 0] == 2**64 - 1).all()  # TensorStore also leaves out the fill chunk
    (tmp_path / "c" / "0" / "0").write_bytes(bytes(chain.encode(data)))
    np.testing.assert_array_equal(read_with_ts(tmp_path), data)


@pytest.mark.parametrize("location", ["start", "end"])
def test_tensorstore_reads_hand_written_shard(tmp_path, location):
    dtype = np.dtype(ml_dtypes.bfloat16)
    data = sample(dtype, (4, 6))
    chain = CodecChain.from_json(sharding(location, ["bytes", {"name": "gzip", "configuration": {"level": 1}}]),
                                 ChunkSpec((4, 6), dtype, np.zeros((), dtype)[()]))
    codec = chain.array_bytes
    inner = {(1, 1): codec.inner.encode(data[2:4, 3:6]), (0, 0): codec.inner.encode(data[0:2, 0:3])}
    (tmp_path / "c" / "0").mkdir(parents=True)
    (tmp_path / "c" / "0" / "0").write_bytes(bytes(codec.encode_shard(inner)))
    (tmp_path / "zarr.json").write_text(json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "bfloat16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 6]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0.0, "codecs": chain.to_json()}))
    expected = np.zeros((4, 6), dtype)
    expected[2:4, 3:6] = data[2:4, 3:6]
    expected[0:2, 0:3] = data[0:2, 0:3]
    np.testing.assert_array_equal(read_with_ts(tmp_path), expected)

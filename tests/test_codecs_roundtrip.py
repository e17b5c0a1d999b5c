"""Every codec and chain round-trips data of every supported type and shape exactly."""

import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrkit.codecs import ChunkSpec, CodecChain

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128", "V3",
          ml_dtypes.bfloat16, ml_dtypes.int4, ml_dtypes.float8_e4m3fn]
SHAPES = [(), (0,), (5,), (3, 0, 2), (4, 6), (2, 3, 4)]


def sample(dtype, shape, seed=0):
    """Deterministic data covering the type's range (NaNs, negative values, every byte value)."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == np.dtype(ml_dtypes.int4):
        return rng.integers(-8, 8, n).astype(dtype).reshape(shape)
    if dtype.kind == "b":
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    if dtype.kind == "f" or dtype.type in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn):
        values = rng.normal(0, 100, n)
        values[::7] = np.nan
        values[1::7] = -0.0
        return values.astype(dtype).reshape(shape)
    if dtype.kind == "c":
        return (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dtype).reshape(shape)
    raw = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def same_bits(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def spec_for(dtype, shape):
    dtype = np.dtype(dtype)
    return ChunkSpec(tuple(shape), dtype, np.zeros((), dtype)[()])


BB_CHAINS = [
    [],
    [{"name": "gzip", "configuration": {"level": 1}}],
    [{"name": "gzip", "configuration": {"level": 0}}],
    [{"name": "zstd", "configuration": {"level": 3, "checksum": True}}],
    [{"name": "zstd", "configuration": {"level": -1, "checksum": False}}],
    [{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5}}],
    [{"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle",
                                         "blocksize": 128}}],
    ["crc32c"],
    [{"name": "blosc", "configuration": {"cname": "zlib", "clevel": 1, "shuffle": "noshuffle"}},
     {"name": "gzip", "configuration": {"level": 9}}, "crc32c", "crc32c"],
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("endian", ["little", "big"])
def test_bytes_round_trip(dtype, shape, endian):
    data = sample(dtype, shape)
    chain = CodecChain.from_json([{"name": "bytes", "configuration": {"endian": endian}}], spec_for(dtype, shape))
    encoded = chain.encode(data)
    assert len(bytes(encoded)) == data.nbytes == chain.encoded_size()
    same_bits(chain.decode(encoded), data)
    same_bits(chain.decode(bytes(encoded)), data)


@pytest.mark.parametrize("bb", BB_CHAINS, ids=lambda c: "+".join(x if isinstance(x, str) else x["name"] for x in c))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (7, 5)], ids=str)
def test_bytes_to_bytes_round_trip(bb, dtype, shape):
    data = sample(dtype, shape, seed=1)
    chain = CodecChain.from_json(["bytes", *bb], spec_for(dtype, shape))
    encoded = bytes(chain.encode(data))
    same_bits(chain.decode(encoded), data)
    # decoders must accept any buffer type, including memoryviews of larger buffers
    padded = memoryview(b"xx" + encoded + b"yy")[2:-2]
    same_bits(chain.decode(padded), data)
    same_bits(chain.decode(bytearray(encoded)), data)


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))) + [(3, 1, 0, 2), (1, 3, 2, 0)])
@pytest.mark.parametrize("dtype", ["uint8", "float64", ml_dtypes.bfloat16, ml_dtypes.int4, "V3"], ids=str)
def test_transpose_stores_encoded_c_order(order, dtype):
    shape = (2, 3, 4, 5)[:len(order)]
    data = sample(dtype, shape)
    chain = CodecChain.from_json([{"name": "transpose", "configuration": {"order": list(order)}},
                                  {"name": "bytes", "configuration": {"endian": "big"}}], spec_for(dtype, shape))
    encoded = bytes(chain.encode(data))
    # transposed[i, j, ...] == data at the permuted position: spec definition B_pos[i] = A_pos[order[i]]
    expected = np.transpose(data, order)
    for pos in itertools.islice(np.ndindex(*expected.shape), 0, None, 7):
        assert expected[pos].tobytes() == data[tuple(pos[order.index(k)] for k in range(len(order)))].tobytes()
    plain = CodecChain.from_json([{"name": "bytes", "configuration": {"endian": "big"}}],
                                 spec_for(dtype, expected.shape))
    assert encoded == bytes(plain.encode(np.ascontiguousarray(expected)))
    same_bits(chain.decode(encoded), data)


def test_two_transposes_compose():
    data = sample("int32", (2, 3, 4))
    chain = CodecChain.from_json([{"name": "transpose", "configuration": {"order": [2, 0, 1]}},
                                  {"name": "transpose", "configuration": {"order": [0, 2, 1]}}, "bytes"],
                                 spec_for("int32", (2, 3, 4)))
    assert bytes(chain.encode(data)) == np.transpose(data, [2, 1, 0]).tobytes()
    same_bits(chain.decode(chain.encode(data)), data)


def test_transpose_of_non_contiguous_input():
    base = sample("uint16", (6, 8))
    view = base[::2, 1::3]
    chain = CodecChain.from_json([{"name": "transpose", "configuration": {"order": [1, 0]}}, "bytes"],
                                 spec_for("uint16", view.shape))
    assert bytes(chain.encode(view)) == view.T.tobytes()
    same_bits(chain.decode(chain.encode(view)), view)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_chains(data):
    ndim = data.draw(st.integers(0, 4))
    shape = tuple(data.draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    dtype = data.draw(st.sampled_from(DTYPES))
    codecs = []
    if ndim and data.draw(st.booleans()):
        codecs.append({"name": "transpose", "configuration": {"order": data.draw(st.permutations(range(ndim)))}})
    codecs.append({"name": "bytes", "configuration": {"endian": data.draw(st.sampled_from(["little", "big"]))}})
    codecs += data.draw(st.sampled_from(BB_CHAINS))
    chain = CodecChain.from_json(codecs, spec_for(dtype, shape))
    value = sample(dtype, shape, seed=data.draw(st.integers(0, 100)))
    same_bits(chain.decode(chain.encode(value)), value)

"""The sharding_indexed codec: layout, index checks, empty inner chunks and nesting."""

import ml_dtypes
import numpy as np
import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrkit.codecs import ChunkSpec, CodecChain, ShardingCodec
from zarrkit.codecs.sharding import EMPTY
from zarrkit.errors import ChecksumError, CodecError, CorruptDataError
from zarrkit.kvstore.base import ByteRange


def sharded(shape, chunk_shape, dtype="uint16", fill=0, codecs=("bytes",),
            index_codecs=("bytes", "crc32c"), location="end"):
    dtype = np.dtype(dtype)
    config = {"chunk_shape": list(chunk_shape), "codecs": list(codecs),
              "index_codecs": list(index_codecs), "index_location": location}
    return CodecChain.from_json([{"name": "sharding_indexed", "configuration": config}],
                                ChunkSpec(tuple(shape), dtype, np.zeros((), dtype)[()] if fill == 0
                                          else np.array(fill, dtype)[()]))


def index_of(chain, data):
    codec = chain.array_bytes
    return codec.decode_index(codec.index_byte_range().slice_of(data), len(data))


def test_layout_end():
    c = sharded((4, 4), (2, 2))
    codec = c.array_bytes
    assert isinstance(codec, ShardingCodec)
    assert codec.chunks_per_shard == (2, 2)
    assert codec.index_nbytes == 4 * 16 + 4
    assert codec.index_byte_range() == ByteRange(-68, None)
    data = np.arange(16, dtype="uint16").reshape(4, 4) + 1
    stored = bytes(c.encode(data))
    assert len(stored) == 4 * 8 + 68
    index = np.frombuffer(stored[-68:-4], "<u8").reshape(2, 2, 2)
    assert stored[-4:] == crc32c(stored[-68:-4]).to_bytes(4, "little")
    assert index.tolist() == [[[0, 8], [8, 8]], [[16, 8], [24, 8]]]  # C order of inner chunks
    assert stored[8:16] == data[0:2, 2:4].tobytes()
    np.testing.assert_array_equal(c.decode(stored), data)


def test_layout_start():
    c = sharded((4, 4), (2, 2), location="start")
    assert c.array_bytes.index_byte_range() == ByteRange(0, 68)
    data = np.arange(16, dtype="uint16").reshape(4, 4) + 1
    stored = bytes(c.encode(data))
    index = np.frombuffer(stored[:64], "<u8").reshape(2, 2, 2)
    assert index[0, 0].tolist() == [68, 8]
    assert stored[68:76] == data[0:2, 0:2].tobytes()
    np.testing.assert_array_equal(c.decode(stored), data)


def test_fill_chunks_are_left_out():
    c = sharded((4, 6), (2, 3), fill=7)
    data = np.full((4, 6), 7, dtype="uint16")
    data[3, 5] = 1
    stored = bytes(c.encode(data))
    index = index_of(c, stored)
    assert (index[0, 0] == EMPTY).all() and (index[0, 1] == EMPTY).all() and (index[1, 0] == EMPTY).all()
    assert index[1, 1].tolist() == [0, 12]
    np.testing.assert_array_equal(c.decode(stored), data)


def test_all_fill_gives_an_index_only_shard():
    c = sharded((4, 4), (2, 2), fill=3)
    stored = bytes(c.encode(np.full((4, 4), 3, "uint16")))
    assert len(stored) == c.array_bytes.index_nbytes
    assert (index_of(c, stored) == EMPTY).all()
    decoded = c.decode(stored)
    assert decoded.dtype == np.uint16 and (decoded == 3).all()


def test_fill_comparison_is_bitwise():
    nan = np.float32(np.nan)
    c = sharded((2, 4), (2, 2), dtype="float32", fill=nan)
    data = np.array([[np.nan, np.nan, 0.0, -0.0], [np.nan, np.nan, 1, 2]], dtype="float32")
    stored = bytes(c.encode(data))
    index = index_of(c, stored)
    assert (index[0, 0] == EMPTY).all()  # all-NaN chunk equals the NaN fill
    assert index[0, 1, 1] == 16
    decoded = c.decode(stored)
    assert decoded.tobytes() == data.tobytes()  # -0.0 and NaN bits survive
    zero = sharded((1, 2), (1, 1), dtype="float64", fill=0.0)
    neg = np.array([[-0.0, 0.0]])
    assert index_of(zero, bytes(zero.encode(neg)))[0, :, 1].tolist() == [8, EMPTY]
    assert np.signbit(zero.decode(bytes(zero.encode(neg)))[0, 0])


@pytest.mark.parametrize("dtype, fill", [("V3", b"ab\0"), (ml_dtypes.bfloat16, 1.5), (ml_dtypes.int4, -3),
                                         ("complex128", 1 + 1j), ("bool", True)], ids=str)
def test_fill_for_unusual_types(dtype, fill):
    c = sharded((2, 4), (1, 2), dtype=dtype, fill=fill)
    data = np.full((2, 4), fill, dtype=dtype)
    data[1, 3] = np.zeros((), dtype)[()]
    stored = bytes(c.encode(data))
    assert (index_of(c, stored)[..., 1] != EMPTY).sum() == 1
    assert c.decode(stored).tobytes() == data.tobytes()


def test_nested_sharding_with_compression():
    inner_sharding = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2, 2], "codecs": ["bytes", {"name": "gzip", "configuration": {"level": 1}}],
        "index_codecs": ["bytes", "crc32c"], "index_location": "start"}}
    c = sharded((8, 8), (4, 4), dtype="int32", codecs=[inner_sharding, "crc32c"])
    data = np.arange(64, dtype="int32").reshape(8, 8)
    data[:4, :4] = 0
    stored = bytes(c.encode(data))
    np.testing.assert_array_equal(c.decode(stored), data)
    assert isinstance(c.array_bytes.inner.array_bytes, ShardingCodec)
    little = {"name": "bytes", "configuration": {"endian": "little"}}
    assert c.to_json()[0]["configuration"]["codecs"][0]["configuration"] == {
        "chunk_shape": [2, 2], "codecs": [little, {"name": "gzip", "configuration": {"level": 1}}],
        "index_codecs": [little, {"name": "crc32c"}], "index_location": "start"}


def test_zero_dim_and_zero_size_shards():
    c = sharded((), (), dtype="float64")
    stored = bytes(c.encode(np.array(2.5)))
    assert c.decode(stored).shape == () and c.decode(stored)[()] == 2.5
    assert len(bytes(c.encode(np.array(0.0)))) == c.array_bytes.index_nbytes
    empty = sharded((0, 4), (2, 2))
    assert empty.array_bytes.chunks_per_shard == (0, 2)
    assert empty.decode(bytes(empty.encode(np.zeros((0, 4), "uint16")))).shape == (0, 4)


def test_encode_shard_packs_in_c_order():
    c = sharded((4, 4), (2, 2), location="start")
    codec = c.array_bytes
    assert codec.encode_shard({}) is None
    chunks = {(1, 1): b"D" * 8, (0, 1): b"B" * 8, (1, 0): b"C" * 8}
    stored = bytes(codec.encode_shard(chunks))
    assert stored[68:] == b"B" * 8 + b"C" * 8 + b"D" * 8
    index = codec.decode_index(stored[:68], len(stored))
    assert index.reshape(-1, 2).tolist() == [[EMPTY, EMPTY], [68, 8], [76, 8], [84, 8]]
    with pytest.raises(ValueError, match="outside"):
        codec.encode_shard({(2, 0): b"x"})


def test_partial_read_of_one_inner_chunk():
    c = sharded((6, 6), (3, 2), dtype="float32", codecs=["bytes", {"name": "zstd"}])
    data = np.random.default_rng(0).normal(size=(6, 6)).astype("float32")
    stored = bytes(c.encode(data))
    codec = c.array_bytes
    index = codec.decode_index(codec.index_byte_range().slice_of(stored))
    offset, nbytes = (int(v) for v in index[1, 2])
    np.testing.assert_array_equal(codec.inner.decode(ByteRange(offset, nbytes).slice_of(stored)), data[3:6, 4:6])


def test_any_write_order_and_gaps_are_read():
    c = sharded((2, 4), (2, 2), index_codecs=["bytes"])
    left, right = np.arange(4, dtype="<u2").reshape(2, 2), np.arange(4, 8, dtype="<u2").reshape(2, 2)
    body = b"junk" + right.tobytes() + b"gap!" + left.tobytes()
    index = np.array([[[16, 8], [4, 8]]], dtype="<u8")
    decoded = c.decode(body + index.tobytes())
    np.testing.assert_array_equal(decoded, np.hstack([left, right]))


# -- corrupt shards ---------------------------------------------------------------------------------
def good_shard():
    c = sharded((4, 4), (2, 2))
    return c, bytearray(c.encode(np.arange(16, dtype="uint16").reshape(4, 4) + 1))


def with_index(c, entries):
    raw = np.array(entries, dtype="<u8").tobytes()
    return raw + crc32c(raw).to_bytes(4, "little")


def test_index_checksum_mismatch():
    c, stored = good_shard()
    stored[-10] ^= 0xFF
    with pytest.raises(ChecksumError, match="shard index"):
        c.decode(bytes(stored))


@pytest.mark.parametrize("entries, shard_size", [
    ([[EMPTY, 8], [8, 8], [16, 8], [24, 8]], 100),  # half empty
    ([[0, EMPTY], [8, 8], [16, 8], [24, 8]], 100),
    ([[EMPTY - 2, 8], [8, 8], [16, 8], [24, 8]], None),  # offset + nbytes overflows
    ([[0, 8], [8, 8], [16, 8], [24, 80]], 100),  # beyond the shard
    ([[EMPTY, 0], [8, 8], [16, 8], [24, 8]], 100),  # an end that does not wrap, half empty
    ([[EMPTY, 0], [8, 8], [16, 8], [24, 8]], None),
    ([[EMPTY - 2, 8], [8, 8], [16, 8], [24, 8]], 100),
    ([[0, 8], [8, 8], [16, 8], [24, 77]], 100),  # one byte beyond
    ([[EMPTY, 8], [8, 8], [16, 8], [24, 8]], None),  # and so without the shard's size
    ([[0, EMPTY], [8, 8], [16, 8], [24, 8]], None),  # an end of EMPTY that does not wrap
    ([[8, EMPTY], [8, 8], [16, 8], [24, 8]], None),
    ([[EMPTY, EMPTY], [8, 8], [16, 8], [EMPTY, 0]], None),
])
def test_bad_index_entries(entries, shard_size):
    c, _ = good_shard()
    with pytest.raises(CorruptDataError, match="inner chunk"):
        c.array_bytes.decode_index(with_index(c, entries), shard_size)


@pytest.mark.parametrize("entries, shard_size", [
    ([[0, 8], [8, 8], [16, 8], [24, 76]], 100),  # the last ends where the index begins
    ([[EMPTY, EMPTY], [8, 8], [EMPTY, EMPTY], [24, 0]], 100),  # absent ones
    ([[0, 8], [8, 8], [16, 8], [24, 8]], None),
    ([[EMPTY, EMPTY], [8, 8], [EMPTY, EMPTY], [24, 0]], None),
    ([[0, 0], [EMPTY - 9, 8], [16, 8], [24, 8]], None),  # ends at EMPTY - 1: no size to exceed
])
def test_good_index_entries(entries, shard_size):
    c, _ = good_shard()
    index = c.array_bytes.decode_index(with_index(c, entries), shard_size)
    assert index.reshape(-1, 2).tolist() == entries


def test_index_of_wrong_length():
    c, stored = good_shard()
    with pytest.raises(CorruptDataError, match="68 bytes, got 67"):
        c.array_bytes.decode_index(bytes(stored[-67:]))


def test_truncated_and_garbage_shards():
    c, stored = good_shard()
    for data in (b"", b"x" * 10, bytes(stored[:50]), bytes(stored[:-1]), b"\xff" * 100):
        with pytest.raises(CorruptDataError):
            c.decode(data)


def test_corrupt_inner_chunk_names_its_coordinates():
    c = sharded((4, 4), (2, 2), codecs=["bytes", "crc32c"])
    stored = bytearray(c.encode(np.arange(16, dtype="uint16").reshape(4, 4)))
    stored[12 + 3] ^= 1  # second inner chunk: 12 bytes each (8 + crc)
    with pytest.raises(ChecksumError, match=r"inner chunk \(0, 1\)"):
        c.decode(bytes(stored))


def test_configuration_errors():
    with pytest.raises(CodecError, match="index_codecs.*fixed size"):
        sharded((4,), (2,), index_codecs=[{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [1, 1], "codecs": ["bytes"], "index_codecs": ["bytes"]}}])
    with pytest.raises(CodecError, match="divide"):
        sharded((4, 4), (3, 2))
    with pytest.raises(CodecError, match="divide"):
        sharded((4, 4), (2,))
    with pytest.raises(CodecError, match=r"sharding_indexed\.codecs"):
        sharded((4,), (2,), codecs=["crc32c"])
    with pytest.raises(CodecError, match="evolve"):
        ShardingCodec((2,)).index_byte_range()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_shards(data):
    ndim = data.draw(st.integers(1, 3))
    chunk = tuple(data.draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    per = tuple(data.draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim)))
    shape = tuple(c * p for c, p in zip(chunk, per, strict=True))
    dtype = data.draw(st.sampled_from(["uint8", "int16", "float64", "complex64", "V3"]))
    location = data.draw(st.sampled_from(["start", "end"]))
    codecs = data.draw(st.sampled_from([["bytes"], [{"name": "transpose", "configuration": {"order": "F"}},
                                                    "bytes", "crc32c"]]))
    c = sharded(shape, chunk, dtype=dtype, codecs=codecs, location=location)
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.frombuffer(data.draw(st.binary(min_size=n, max_size=n)), dtype=np.uint8)
    value = raw.copy().view(dtype).reshape(shape)
    # sprinkle fill-valued (zero) regions so some inner chunks are empty
    mask = np.frombuffer(data.draw(st.binary(min_size=n // np.dtype(dtype).itemsize,
                                             max_size=n // np.dtype(dtype).itemsize)), np.uint8) < 128
    value.reshape(-1)[mask] = np.zeros((), dtype)[()]
    stored = bytes(c.encode(value))
    assert c.decode(stored).tobytes() == value.tobytes()


@pytest.mark.parametrize("location", ["start", "end"])
@pytest.mark.parametrize("inner", [["bytes"], ["bytes", {"name": "gzip", "configuration": {"level": 1}}]])
def test_bit_flips_in_shards_raise_only_corrupt_data(location, inner):
    c = sharded((6, 6), (2, 3), dtype="int16", codecs=inner, index_codecs=["bytes"], location=location)
    data = np.arange(36, dtype="int16").reshape(6, 6)
    data[:2] = 0
    stored = bytes(c.encode(data))
    rng = np.random.default_rng(5)
    for _ in range(400):
        bad = bytearray(stored)
        for pos in rng.integers(0, len(bad), rng.integers(1, 4)):
            bad[pos] ^= 1 << int(rng.integers(8))
        try:
            decoded = c.decode(bytes(bad))
        except CorruptDataError:
            continue
        assert decoded.shape == (6, 6) and decoded.dtype == np.int16

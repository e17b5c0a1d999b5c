"""The bytes, transpose and crc32c codecs: exact stored bytes, zero-copy paths and errors."""

import ml_dtypes
import numpy as np
import pytest
from crc32c import crc32c

from zarrkit.codecs import ChunkSpec, CodecChain
from zarrkit.errors import ChecksumError, CorruptDataError


def chain(codecs, shape, dtype, fill=0):
    dtype = np.dtype(dtype)
    return CodecChain.from_json(codecs, ChunkSpec(tuple(shape), dtype, np.array(fill, dtype)[()]))


def test_int4_is_one_low_nibble_per_byte():
    # TensorStore's layout: two's complement in the low 4 bits, high bits zero.
    data = np.array([1, -2, 3, 7, -8], dtype=ml_dtypes.int4)
    c = chain(["bytes"], (5,), ml_dtypes.int4)
    assert bytes(c.encode(data)) == bytes.fromhex("010e030708")
    decoded = c.decode(bytes.fromhex("010e030708"))
    assert decoded.tolist() == [1, -2, 3, 7, -8]
    assert decoded.astype(np.int8).tolist() == [1, -2, 3, 7, -8]


def test_int4_ignores_and_clears_high_bits():
    c = chain(["bytes"], (4,), ml_dtypes.int4)
    decoded = c.decode(bytes([0xFE, 0x1E, 0xF1, 0x78]))
    assert decoded.astype(np.int8).tolist() == [-2, -2, 1, -8]
    assert decoded.view(np.uint8).tolist() == [0x0E, 0x0E, 0x01, 0x08]
    dirty = np.array([0xFE, 0x31], dtype=np.uint8).view(ml_dtypes.int4)
    assert bytes(c.encode(np.concatenate([dirty, dirty]))) == bytes([0x0E, 0x01, 0x0E, 0x01])


@pytest.mark.parametrize("dtype, value, little", [
    ("uint16", 0x0102, "0201"),
    ("int32", -2, "feffffff"),
    ("float32", 1.0, "0000803f"),
    ("float16", 1.0, "003c"),
    ("complex64", 1 + 2j, "0000803f00000040"),
    (ml_dtypes.bfloat16, 1.0, "803f"),
    ("bool", True, "01"),
    ("uint8", 0xAB, "ab"),
])
def test_endianness_of_stored_bytes(dtype, value, little):
    data = np.array([value], dtype=dtype)
    le = chain([{"name": "bytes", "configuration": {"endian": "little"}}], (1,), dtype)
    be = chain([{"name": "bytes", "configuration": {"endian": "big"}}], (1,), dtype)
    expected_be = little if np.dtype(dtype).itemsize == 1 else (
        # complex: each component is swapped on its own
        "".join(bytes.fromhex(p)[::-1].hex() for p in (little[:8], little[8:])) if np.dtype(dtype).kind == "c"
        else bytes.fromhex(little)[::-1].hex())
    assert bytes(le.encode(data)).hex() == little
    assert bytes(be.encode(data)).hex() == expected_be
    assert be.decode(bytes.fromhex(expected_be)).tobytes() == data.tobytes()


def test_raw_bytes_ignore_endian():
    data = np.array([b"abc", b"xyz"], dtype="V3")
    c = chain(["bytes"], (2,), "V3", fill=b"\0\0\0")
    assert bytes(c.encode(data)) == b"abcxyz"
    assert c.decode(b"abcxyz").tobytes() == b"abcxyz"


def test_native_order_is_zero_copy():
    c = chain(["bytes"], (4, 4), "float64")
    data = np.arange(16.0).reshape(4, 4)
    encoded = c.encode(data)
    assert np.shares_memory(np.frombuffer(encoded, np.uint8), data)
    stored = data.tobytes()
    decoded = c.decode(stored)
    assert np.shares_memory(decoded, np.frombuffer(stored, np.uint8))
    assert not decoded.flags.writeable


def test_non_contiguous_input_is_written_in_c_order():
    data = np.arange(24, dtype="int16").reshape(4, 6)[:, ::2]
    assert bytes(chain(["bytes"], (4, 3), "int16").encode(data)) == np.ascontiguousarray(data).tobytes()
    big = chain([{"name": "bytes", "configuration": {"endian": "big"}}], (4, 3), "int16")
    assert bytes(big.encode(data)) == np.ascontiguousarray(data).astype(">i2").tobytes()


@pytest.mark.parametrize("dtype", ["int16", ">i2", "bool", "V3", "complex64"])
@pytest.mark.parametrize("codecs", [["bytes"], ["bytes", "crc32c"],
                                    [{"name": "transpose", "configuration": {"order": [1, 0]}},
                                     "bytes"]], ids=["bytes", "crc32c", "transpose"])
def test_transient_encode_gathers_into_scratch_with_the_same_bytes(dtype, codecs):
    """A transient encode copies a strided chunk into the thread's reused buffer rather than
    fresh memory: the same bytes, and the buffer is reused by the next encode."""
    dtype = np.dtype(dtype)
    data = np.frombuffer(np.random.default_rng(1).bytes(4 * 6 * 2 * dtype.itemsize),
                         dtype).reshape(4, 12)[:, ::2]
    fill = b"\0" * 3 if dtype.kind == "V" else 0
    c = chain(codecs, (4, 6), dtype, fill)
    expected = bytes(c.encode(data))
    first = c.encode(data, transient=True)
    assert bytes(first) == expected
    second = c.encode(data[::-1], transient=True)
    assert bytes(second) == bytes(c.encode(data[::-1]))
    if codecs == ["bytes"] and dtype.isnative:
        assert bytes(first) == bytes(second)  # the same scratch memory, now the second chunk
    assert c.decode(expected).tobytes() == np.ascontiguousarray(data).tobytes()


@pytest.mark.parametrize("size", [0, 47, 49, 96])
def test_wrong_size_is_corrupt(size):
    c = chain(["bytes"], (4, 6), "uint16")
    with pytest.raises(CorruptDataError, match=rf"48 bytes, got {size}"):
        c.decode(b"\0" * size)


def test_encode_checks_shape_and_dtype():
    c = chain(["bytes"], (4, 6), "uint16")
    with pytest.raises(ValueError, match="shape"):
        c.encode(np.zeros((6, 4), "uint16"))
    with pytest.raises(ValueError, match="type"):
        c.encode(np.zeros((4, 6), "int16"))


def test_memoryview_of_wide_items_counts_bytes():
    c = chain(["bytes", "crc32c"], (4,), "uint32")
    encoded = bytes(c.encode(np.arange(4, dtype="uint32")))
    wide = memoryview(np.frombuffer(encoded, np.uint8).view(np.uint32 if len(encoded) % 4 == 0 else np.uint8))
    assert c.decode(wide).tolist() == [0, 1, 2, 3]


# -- crc32c -----------------------------------------------------------------------------------------
def test_crc32c_appends_little_endian_checksum():
    c = chain(["bytes", "crc32c"], (3,), "uint8")
    encoded = bytes(c.encode(np.array([1, 2, 3], np.uint8)))
    assert encoded == b"\x01\x02\x03" + crc32c(b"\x01\x02\x03").to_bytes(4, "little")
    # RFC 3720 test vector: 32 zero bytes
    c32 = chain(["bytes", "crc32c"], (32,), "uint8")
    assert bytes(c32.encode(np.zeros(32, np.uint8)))[-4:] == bytes.fromhex("aa36918a")
    assert c.encoded_size() == 7


def test_crc32c_mismatch_and_truncation():
    c = chain(["bytes", "crc32c"], (3,), "uint8")
    good = bytearray(c.encode(np.array([1, 2, 3], np.uint8)))
    for i in range(len(good)):
        bad = bytearray(good)
        bad[i] ^= 0x01
        with pytest.raises(ChecksumError, match="crc32c"):
            c.decode(bytes(bad))
    for n in range(4):
        with pytest.raises(CorruptDataError, match="too short"):
            c.decode(bytes(good[:n]))


def test_crc32c_decode_does_not_copy():
    c = chain(["bytes", "crc32c"], (1000,), "uint8")
    stored = bytes(c.encode(np.arange(1000).astype(np.uint8)))
    assert np.shares_memory(c.decode(stored), np.frombuffer(stored, np.uint8))


# -- transpose --------------------------------------------------------------------------------------
@pytest.mark.parametrize("order", [[2, 0, 1], [1, 2, 0], [3, 0, 2, 1], [0, 3, 1, 2]])
def test_transpose_inverse(order):
    shape = (2, 3, 4, 5)[:len(order)]
    data = np.arange(np.prod(shape), dtype="int32").reshape(shape)
    c = chain([{"name": "transpose", "configuration": {"order": order}}, "bytes"], shape, "int32")
    assert c.array_array[0].resolve(c.spec).shape == tuple(shape[i] for i in order)
    stored = bytes(c.encode(data))
    # element at encoded position p came from decoded position q with q[order[i]] = p[i]
    encoded = np.frombuffer(stored, "int32").reshape([shape[i] for i in order])
    for p in np.ndindex(*encoded.shape):
        q = [0] * len(order)
        for i, o in enumerate(order):
            q[o] = p[i]
        assert encoded[p] == data[tuple(q)]
    np.testing.assert_array_equal(c.decode(stored), data)

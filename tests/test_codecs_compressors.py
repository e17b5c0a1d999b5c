"""gzip, zstd and blosc: formats, every blosc variant, corrupt input and decompression bombs."""

import gzip as stdlib_gzip
import random
import zlib

import numcodecs
import numpy as np
import pytest

from zarrkit.codecs import ChunkSpec, CodecChain
from zarrkit.codecs.blosc import CNAMES, SHUFFLES
from zarrkit.errors import CodecError, CorruptDataError, ZarrkitError

SPEC = ChunkSpec((64, 32), np.dtype("float32"), np.float32(0))
DATA = np.cumsum(np.random.default_rng(0).normal(size=(64, 32)), axis=1).astype("float32")
AVAILABLE = numcodecs.blosc.list_compressors()

GZIP = {"name": "gzip", "configuration": {"level": 5}}
ZSTD = {"name": "zstd", "configuration": {"level": 3, "checksum": True}}
BLOSC = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5}}


def chain(*bb, spec=SPEC):
    return CodecChain.from_json(["bytes", *bb], spec)


def test_gzip_is_rfc1952():
    encoded = bytes(chain(GZIP).encode(DATA))
    assert encoded[:3] == b"\x1f\x8b\x08"  # gzip magic, deflate
    assert stdlib_gzip.decompress(encoded) == DATA.tobytes()
    for level in range(10):
        c = chain({"name": "gzip", "configuration": {"level": level}})
        assert stdlib_gzip.decompress(bytes(c.encode(DATA))) == DATA.tobytes()


def test_gzip_reads_multi_member_and_padded_streams():
    raw = DATA.tobytes()
    multi = stdlib_gzip.compress(raw[:1000]) + stdlib_gzip.compress(raw[1000:]) + b"\0\0\0"
    np.testing.assert_array_equal(chain(GZIP).decode(multi), DATA)


def test_gzip_rejects_zlib_and_raw_deflate():
    with pytest.raises(CorruptDataError, match="gzip"):
        chain(GZIP).decode(zlib.compress(DATA.tobytes()))


def test_zstd_frames_match_numcodecs(zstd_decoder):
    c = chain(ZSTD)
    encoded = bytes(c.encode(DATA))
    assert numcodecs.Zstd().decode(encoded) == DATA.tobytes()
    np.testing.assert_array_equal(c.decode(numcodecs.Zstd(level=5).encode(DATA.tobytes())), DATA)


def test_zstd_frame_without_content_size(zstd_decoder):
    # Frames written by streaming compressors may omit the content size; rewrite the header of a
    # small single-segment frame to that form (1-byte size field -> 1-byte window descriptor).
    spec = ChunkSpec((100,), np.dtype("uint8"), np.uint8(0))
    data = np.arange(100, dtype=np.uint8)
    frame = bytearray(numcodecs.Zstd(level=1).encode(data.tobytes()))
    descriptor = frame[4]
    assert descriptor >> 6 == 0 and descriptor & 0x20  # single segment, one-byte content size
    frame[4] = descriptor & ~0x20
    frame[5] = 0  # window descriptor: 1 KiB window
    from zarrkit.codecs.zstd import frame_content_size
    assert frame_content_size(bytes(frame)) is None
    np.testing.assert_array_equal(chain(ZSTD, spec=spec).decode(bytes(frame)), data)
    small = ChunkSpec((99,), np.dtype("uint8"), np.uint8(0))
    with pytest.raises(CorruptDataError):
        chain(ZSTD, spec=small).decode(bytes(frame))


@pytest.mark.parametrize("cname", CNAMES)
@pytest.mark.parametrize("shuffle", SHUFFLES)
@pytest.mark.parametrize("dtype", ["uint8", "float32", "complex128"])
def test_blosc_every_cname_and_shuffle(cname, shuffle, dtype):
    spec = ChunkSpec((50, 7), np.dtype(dtype), np.zeros((), dtype)[()])
    data = (np.arange(350).reshape(50, 7) % 13).astype(dtype)
    c = chain({"name": "blosc", "configuration": {"cname": cname, "clevel": 5, "shuffle": shuffle}}, spec=spec)
    if cname not in AVAILABLE:
        with pytest.raises(CodecError, match=cname):
            c.encode(data)
        return
    encoded = bytes(c.encode(data))
    assert numcodecs.blosc.decompress(encoded) == data.tobytes()
    np.testing.assert_array_equal(c.decode(encoded), data)
    # decoding depends only on the blosc header, not on the configuration
    other = chain({"name": "blosc", "configuration": {"cname": "zlib", "shuffle": "noshuffle", "typesize": 3}},
                  spec=spec)
    np.testing.assert_array_equal(other.decode(encoded), data)


def test_blosc_snappy_data_is_reported_unsupported():
    encoded = bytearray(chain(BLOSC).encode(DATA))
    if "snappy" in AVAILABLE:
        pytest.skip("this c-blosc has snappy")
    encoded[2] = (encoded[2] & 0x1F) | (2 << 5)  # compressor code 2: snappy
    with pytest.raises(CodecError, match="snappy"):
        chain(BLOSC).decode(bytes(encoded))


def test_blosc_typesize_reaches_the_header():
    c = chain({"name": "blosc", "configuration": {"cname": "lz4", "shuffle": "shuffle"}})
    assert bytes(c.encode(DATA))[3] == 4
    c = chain({"name": "blosc", "configuration": {"cname": "lz4", "shuffle": "shuffle", "typesize": 2}})
    assert bytes(c.encode(DATA))[3] == 2


# -- corrupt input ----------------------------------------------------------------------------------
CHAINS = {
    "gzip": [GZIP], "zstd": [ZSTD], "zstd-nocheck": [{"name": "zstd"}], "blosc": [BLOSC],
    "blosc-bit": [{"name": "blosc", "configuration": {"cname": "zstd", "shuffle": "bitshuffle"}}],
    "crc32c": ["crc32c"], "gzip+crc32c": [GZIP, "crc32c"], "blosc+gzip": [BLOSC, GZIP],
}


@pytest.mark.parametrize("name", CHAINS)
def test_garbage_and_truncation_raise_corrupt_data(name, zstd_decoder):
    c = chain(*CHAINS[name])
    encoded = bytes(c.encode(DATA))
    rng = random.Random(name)
    inputs = [b"", b"\0", b"garbage" * 50, bytes(rng.randrange(256) for _ in range(300))]
    inputs += [encoded[:n] for n in (1, 4, 15, 16, 17, len(encoded) // 2, len(encoded) - 1)]
    inputs += [encoded + b"\x01trailing"]
    for data in inputs:
        with pytest.raises(CorruptDataError):
            c.decode(data)


@pytest.mark.parametrize("name", CHAINS)
def test_bit_flips_never_raise_anything_but_corrupt_data(name, zstd_decoder):
    c = chain(*CHAINS[name])
    encoded = bytes(c.encode(DATA))
    rng = random.Random(1)
    for _ in range(300):
        data = bytearray(encoded)
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        try:
            decoded = c.decode(bytes(data))
        except CorruptDataError:
            continue
        except ZarrkitError as e:  # e.g. a flipped blosc compressor code naming snappy
            assert isinstance(e, CodecError) and "snappy" in str(e)
            continue
        assert decoded.shape == DATA.shape and decoded.dtype == DATA.dtype


def test_zstd_decoders_agree_and_libzstd_writes_into_the_destination(zstd_decoder):
    spec = ChunkSpec((300, 500), np.dtype("uint16"), np.uint16(0))  # 293 KiB: three blocks
    data = (np.arange(150000, dtype="uint32") * 2654435761 % 4099).astype("uint16").reshape(300, 500)
    c = chain({"name": "zstd"}, spec=spec)
    encoded = bytes(c.encode(data))
    np.testing.assert_array_equal(c.decode(encoded), data)
    np.testing.assert_array_equal(c.decode(memoryview(encoded)), data)  # read-only: no address
    dest = bytearray(data.nbytes)
    codec = c.bytes_bytes[0]
    got = codec.decode_into(bytearray(encoded), spec, data.nbytes, memoryview(dest))
    assert bytes(got) == data.tobytes()
    assert (getattr(got, "obj", None) is dest) == (zstd_decoder == "libzstd")  # no copy out
    # Frames of another writer: numcodecs' (a new context per chunk, content size declared).
    np.testing.assert_array_equal(c.decode(numcodecs.Zstd(level=1).encode(data.tobytes())), data)


def test_zstd_decoders_name_what_is_wrong(zstd_decoder):
    spec = ChunkSpec((300, 500), np.dtype("uint16"), np.uint16(0))
    data = np.arange(150000, dtype="uint16").reshape(300, 500)
    c = chain({"name": "zstd"}, spec=spec)
    encoded = bytearray(c.encode(data))
    with pytest.raises(CorruptDataError, match="zstd codec: (invalid compressed data|frame)"):
        c.decode(bytes(encoded[:-7]))
    encoded[len(encoded) // 2:] = bytes(len(encoded) - len(encoded) // 2)  # zeroed blocks
    with pytest.raises(CorruptDataError, match="zstd codec"):
        c.decode(bytes(encoded))


def test_zstd_decodes_in_many_threads_at_once(zstd_decoder):
    from concurrent.futures import ThreadPoolExecutor

    spec = ChunkSpec((256, 256), np.dtype("uint16"), np.uint16(0))
    arrays = [(np.arange(65536, dtype="uint32") * (k + 3) % 7001).astype("uint16").reshape(256, 256)
              for k in range(24)]
    c = chain({"name": "zstd"}, spec=spec)
    frames = [bytes(c.encode(a)) for a in arrays]

    def check(k: int) -> bool:
        return all(np.array_equal(c.decode(frames[k]), arrays[k]) for _ in range(5))
    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(check, range(24)))


def test_system_libzstd_can_be_turned_off():
    import os
    import subprocess
    import sys

    code = "from zarrkit.codecs import _libzstd; print(_libzstd.available)"
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "ZARRKIT_SYSTEM_ZSTD": "0"})
    assert off.stdout.strip() == "False"


# -- decompression bombs ----------------------------------------------------------------------------
SMALL = ChunkSpec((16,), np.dtype("uint8"), np.uint8(0))
BOMB = b"\0" * (64 << 20)


def test_gzip_bomb_stops_at_the_expected_size():
    bomb = stdlib_gzip.compress(BOMB)
    with pytest.raises(CorruptDataError, match="more than the expected 16 bytes"):
        chain(GZIP, spec=SMALL).decode(bomb)


def test_zstd_bomb_is_refused_from_the_header(zstd_decoder):
    bomb = numcodecs.Zstd(level=1).encode(BOMB)
    with pytest.raises(CorruptDataError, match="declares 67108864 decoded bytes, expected 16"):
        chain(ZSTD, spec=SMALL).decode(bomb)


def test_blosc_bomb_is_refused_from_the_header():
    bomb = numcodecs.Blosc("lz4").encode(BOMB)
    with pytest.raises(CorruptDataError, match="67108864 decoded bytes, expected 16"):
        chain(BLOSC, spec=SMALL).decode(bomb)


def test_blosc_header_larger_than_buffer():
    encoded = bytearray(chain(BLOSC).encode(DATA))
    encoded[12:16] = (len(encoded) + 100).to_bytes(4, "little")
    with pytest.raises(CorruptDataError, match="compressed bytes"):
        chain(BLOSC).decode(bytes(encoded))


def test_size_checks_follow_the_chain():
    # the blosc stage after gzip+crc32c knows its exact decoded size too
    c = chain(BLOSC, GZIP, "crc32c")
    assert [type(f.func).__name__ for f in c._bb_decode] == ["method"] * 3
    np.testing.assert_array_equal(c.decode(c.encode(DATA)), DATA)

"""Runs of chunks decoded by one call without the GIL (`codecs/_many.c`): what it decodes agrees
with the one-by-one decoders, it stops at the first chunk it cannot check or decode (which the
caller then decodes or names), and it never writes outside its slots."""

from __future__ import annotations

import threading

import numcodecs
import numpy as np
import pytest
import zstandard

import zarrkit
from zarrkit.codecs import _decode_many
from zarrkit.codecs.base import ChunkSpec
from zarrkit.codecs.chain import CodecChain
from zarrkit.errors import CorruptDataError

pytestmark = pytest.mark.skipif(_decode_many.blosc is None or _decode_many.zstd is None,
                                reason="the _many extension, c-blosc or libzstd is missing here")

SIZE = 64 * 1024  # decoded bytes per chunk
BLOSC = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE, typesize=2)


def _chunks(n: int, seed: int = 3) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, 900, SIZE // 2) // 9).astype("uint16").tobytes() for _ in range(n)]


def _blosc(raw: bytes) -> bytes:
    return BLOSC.encode(raw)


def _zstd(raw: bytes, **options) -> bytes:
    return zstandard.ZstdCompressor(level=3, **options).compress(raw)


def _decode(decoder, sources, slots=None, slot_count=None):
    slots = list(range(len(sources))) if slots is None else slots
    dest = memoryview(bytearray(SIZE * (slot_count or len(sources))))
    return decoder(sources, dest, SIZE, slots), dest


@pytest.mark.parametrize("codec", ["blosc", "zstd"])
def test_a_run_decodes_into_its_slots(codec):
    raws = _chunks(5)
    encode = _blosc if codec == "blosc" else _zstd
    slots = [4, 0, 6, 2, 1]  # anywhere in the destination, in any order
    done, dest = _decode(getattr(_decode_many, codec), [encode(r) for r in raws], slots, 8)
    assert done == 5
    for raw, slot in zip(raws, slots, strict=True):
        assert dest[slot * SIZE:(slot + 1) * SIZE] == raw
    for untouched in (3, 5, 7):
        assert bytes(dest[untouched * SIZE:(untouched + 1) * SIZE]) == bytes(SIZE)


def test_blosc_stops_at_the_first_chunk_whose_header_or_data_is_wrong():
    raws = _chunks(4)
    good = [_blosc(r) for r in raws]
    wrong_size = _blosc(raws[0][:-2])  # decodes to 2 bytes fewer than a chunk
    truncated = good[1][:-1]  # the header's compressed size no longer matches
    garbage = good[2][:16] + bytes(range(256)) * ((len(good[2]) - 16) // 256) \
        + good[2][16 + 256 * ((len(good[2]) - 16) // 256):]
    for bad in (wrong_size, truncated, garbage, b"", b"\x02\x01"):
        done, dest = _decode(_decode_many.blosc, [good[0], good[1], bad, good[3]])
        assert done == 2, bad[:8]
        assert dest[:SIZE] == raws[0] and dest[SIZE:2 * SIZE] == raws[1]


def test_blosc_memcpyed_and_uncompressible_chunks_decode():
    noise = np.random.default_rng(1).integers(0, 256, SIZE, dtype="uint8").tobytes()
    stored = numcodecs.Blosc(cname="lz4", clevel=0).encode(noise)  # clevel 0: stored as is
    done, dest = _decode(_decode_many.blosc, [stored, BLOSC.encode(noise)])
    assert done == 2 and dest[:SIZE] == noise and dest[SIZE:] == noise


def test_zstd_stops_at_frames_it_cannot_check_whole():
    raws = _chunks(3)
    good = _zstd(raws[0])
    unsized = _zstd(raws[1], write_content_size=False)  # no declared size
    trailing = _zstd(raws[1]) + b"\0\0"  # bytes after the frame
    two_frames = _zstd(raws[1][:SIZE // 2]) + _zstd(raws[1][SIZE // 2:])
    too_big = _zstd(raws[1] + b"xx")
    truncated = _zstd(raws[1])[:-5]
    for bad in (unsized, trailing, two_frames, too_big, truncated, b"", b"\x28\xb5"):
        done, dest = _decode(_decode_many.zstd, [good, bad, _zstd(raws[2])])
        assert done == 1, bad[:8]
        assert dest[:SIZE] == raws[0]


def test_bad_arguments_are_refused_before_anything_is_decoded():
    sources = [_blosc(r) for r in _chunks(2)]
    dest = memoryview(bytearray(SIZE * 2))
    with pytest.raises(ValueError, match="outside the destination"):
        _decode_many.blosc(sources, dest, SIZE, [0, 2])  # slot 2 would end past the buffer
    with pytest.raises(ValueError, match="outside the destination"):
        _decode_many.blosc(sources, memoryview(bytearray(SIZE * 2 - 1)), SIZE, [0, 1])
    with pytest.raises(ValueError, match="differ in length"):
        _decode_many.blosc(sources, dest, SIZE, [0])
    with pytest.raises(TypeError):
        _decode_many.blosc(sources, memoryview(bytes(SIZE * 2)), SIZE, [0, 1])  # read-only
    assert bytes(dest) == bytes(SIZE * 2)


def test_a_source_without_contiguous_bytes_ends_the_run():
    raws = _chunks(2)
    strided = np.frombuffer(_blosc(raws[1]) * 2, np.uint8)[::2]  # not contiguous
    done, _ = _decode(_decode_many.blosc, [_blosc(raws[0]), strided])
    assert done == 1


def test_threads_decode_at_once_each_with_its_own_zstd_context():
    raws = _chunks(16, seed=9)
    frames = [_zstd(r) for r in raws]
    failures = []

    def work():
        for _ in range(20):
            done, dest = _decode(_decode_many.zstd, frames)
            if done != 16 or bytes(dest) != b"".join(raws):
                failures.append(done)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


@pytest.mark.parametrize("compressor", [{"name": "blosc", "configuration": {"cname": "lz4"}},
                                        {"name": "zstd"}])
def test_chain_decodes_runs_only_where_it_can(compressor, many_decoder):
    spec = ChunkSpec((128, 256), np.dtype("uint16"), 0)
    chain = CodecChain.from_json([{"name": "bytes"}, compressor], spec)
    raws = _chunks(3)
    sources = [chain.encode(np.frombuffer(r, "uint16").reshape(128, 256)) for r in raws]
    dest = memoryview(bytearray(3 * SIZE))
    done = chain.decode_many_into(sources, dest, [2, 1, 0])
    assert done == (3 if many_decoder == "one call" else 0)
    if done:
        assert dest[2 * SIZE:] == raws[0] and dest[:SIZE] == raws[2]
    swapped = CodecChain.from_json([{"name": "bytes", "configuration": {"endian": "big"}},
                                    compressor], spec)
    assert swapped.decode_many_into(sources, dest, [0, 1, 2]) == 0  # bytes to convert: never


def _sharded_with_odd_inner_chunks(path, fill=0):
    """A zstd-sharded array whose shard (0, 0) holds, among ordinary inner chunks, frames that
    only the one-by-one decoder reads (no declared size: another writer's choice)."""
    data = (np.arange(64 * 64, dtype="uint16").reshape(64, 64) * 37 % 1009).astype("uint16")
    a = zarrkit.create(str(path), shape=data.shape, dtype="uint16", chunks=(8, 16),
                       shards=(32, 64), codecs=[{"name": "bytes"}, {"name": "zstd"}],
                       fill_value=fill)
    a[...] = data
    sharding = a._engine.sharding  # the array's own codec, bound to its shard shape
    chunks = {}
    for i in range(4):
        for j in range(4):
            raw = data[i * 8:(i + 1) * 8, j * 16:(j + 1) * 16].tobytes()
            chunks[(i, j)] = _zstd(raw)
    chunks[(1, 2)] = _zstd(data[8:16, 32:48].tobytes(), write_content_size=False)
    chunks[(2, 3)] = _zstd(data[16:24, 48:64].tobytes(), write_content_size=False)
    a.store.set("c/0/0", bytes(sharding.encode_shard(chunks)))
    return a, data


def test_shards_with_frames_only_the_fallback_reads(tmp_path, monkeypatch, many_decoder):
    a, data = _sharded_with_odd_inner_chunks(tmp_path / "a")
    one_by_one = []
    real = CodecChain.decode_into

    def counting(self, source, dest):
        one_by_one.append(bytes(source[:4]))
        return real(self, source, dest)
    monkeypatch.setattr(CodecChain, "decode_into", counting)
    np.testing.assert_array_equal(a[...], data)
    # Of the 32 inner chunks, the run's call stopped at the two unsized frames only.
    assert len(one_by_one) == (2 if many_decoder == "one call" else 32)
    np.testing.assert_array_equal(a[:32, :], data[:32, :])


def test_corrupt_inner_chunk_in_a_run_is_named(tmp_path, many_decoder):
    a, data = _sharded_with_odd_inner_chunks(tmp_path / "a")
    raw = bytearray((tmp_path / "a" / "c" / "1" / "0").read_bytes())
    raw[200:260] = bytes(60)  # inside an inner chunk's frame, not the index
    (tmp_path / "a" / "c" / "1" / "0").write_bytes(bytes(raw))
    np.testing.assert_array_equal(a[:32, :], data[:32, :])  # the other shards are fine
    with pytest.raises(CorruptDataError, match=r"shard 'c/1/0', inner chunk at bytes \d+\+\d+: zstd"):
        a[32:, :]

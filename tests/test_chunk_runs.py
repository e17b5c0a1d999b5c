"""Runs of chunks decoded or encoded by one call without the GIL (`codecs/_many.c`): what it
decodes agrees with the one-by-one decoders, it stops at the first chunk it cannot check or
decode (which the caller then decodes or names), it never writes outside its slots; what it
encodes the one-by-one decoders read, fill-value chunks left out, and whole shards packed so
equal those packed chunk by chunk."""

from __future__ import annotations

import math
import threading

import numcodecs
import numpy as np
import pytest
import zstandard

import zarrkit
from zarrkit.codecs import _libzstd, _runs
from zarrkit.codecs.base import ChunkSpec
from zarrkit.codecs.chain import CodecChain
from zarrkit.errors import CodecError, CorruptDataError

pytestmark = pytest.mark.skipif(None in (_runs.blosc_decoder, _runs.zstd_decoder,
                                          _runs.blosc_encoder, _runs.zstd_encoder),
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
    done, dest = _decode(getattr(_runs, f"{codec}_decoder"), [encode(r) for r in raws], slots, 8)
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
        done, dest = _decode(_runs.blosc_decoder, [good[0], good[1], bad, good[3]])
        assert done == 2, bad[:8]
        assert dest[:SIZE] == raws[0] and dest[SIZE:2 * SIZE] == raws[1]


def test_blosc_memcpyed_and_uncompressible_chunks_decode():
    noise = np.random.default_rng(1).integers(0, 256, SIZE, dtype="uint8").tobytes()
    stored = numcodecs.Blosc(cname="lz4", clevel=0).encode(noise)  # clevel 0: stored as is
    done, dest = _decode(_runs.blosc_decoder, [stored, BLOSC.encode(noise)])
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
        done, dest = _decode(_runs.zstd_decoder, [good, bad, _zstd(raws[2])])
        assert done == 1, bad[:8]
        assert dest[:SIZE] == raws[0]


def test_bad_arguments_are_refused_before_anything_is_decoded():
    sources = [_blosc(r) for r in _chunks(2)]
    dest = memoryview(bytearray(SIZE * 2))
    with pytest.raises(ValueError, match="outside the destination"):
        _runs.blosc_decoder(sources, dest, SIZE, [0, 2])  # slot 2 would end past the buffer
    with pytest.raises(ValueError, match="outside the destination"):
        _runs.blosc_decoder(sources, memoryview(bytearray(SIZE * 2 - 1)), SIZE, [0, 1])
    with pytest.raises(ValueError, match="differ in length"):
        _runs.blosc_decoder(sources, dest, SIZE, [0])
    with pytest.raises(TypeError):
        _runs.blosc_decoder(sources, memoryview(bytes(SIZE * 2)), SIZE, [0, 1])  # read-only
    assert bytes(dest) == bytes(SIZE * 2)


def test_a_source_without_contiguous_bytes_ends_the_run():
    raws = _chunks(2)
    strided = np.frombuffer(_blosc(raws[1]) * 2, np.uint8)[::2]  # not contiguous
    done, _ = _decode(_runs.blosc_decoder, [_blosc(raws[0]), strided])
    assert done == 1


def test_threads_decode_at_once_each_with_its_own_zstd_context():
    raws = _chunks(16, seed=9)
    frames = [_zstd(r) for r in raws]
    failures = []

    def work():
        for _ in range(20):
            done, dest = _decode(_runs.zstd_decoder, frames)
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


PARAMS = (5, 1, 2, b"lz4", 0)  # clevel, shuffle, typesize, cname, blocksize: as BLOSC


def _encode(raws, fill=None, room=None, first=0, pos=0, params=PARAMS):
    source = np.frombuffer(b"".join(raws), np.uint8).reshape(len(raws), SIZE)
    dest = memoryview(bytearray(room if room is not None else len(raws) * (SIZE + 16)))
    sizes = np.full(len(raws), -7, np.int64)
    done, end, error = _runs.blosc_encoder(params, source, 1, SIZE, fill, dest, pos, first, sizes,
                                           None)
    return done, end, error, dest, sizes


def test_blosc_encoder_writes_chunks_back_to_back():
    raws = _chunks(4)
    done, end, error, dest, sizes = _encode(raws)
    assert (done, error) == (4, 0) and end == sizes.sum() and (sizes > 0).all()
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    for k, raw in enumerate(raws):
        assert BLOSC.decode(bytes(dest[offsets[k]:offsets[k + 1]])) == raw


def test_blosc_encoder_leaves_out_fill_chunks_and_goes_on_from_where_it_stopped():
    raws = _chunks(4)
    raws[1] = np.full(SIZE // 2, 7, "<u2").tobytes()  # all fill
    raws[3] = raws[3][:-2] + np.array(7, "<u2").tobytes()  # fill only at the end: stored
    fill = np.array(7, "<u2").tobytes()
    done, end, error, _, sizes = _encode(raws, fill)
    assert done == 4 and sizes[1] == -1 and (sizes[[0, 2, 3]] > 0).all()
    # Room for one chunk: the fill chunk after it needs none; stops before the next that might
    # not fit, then goes on.
    done, end, error, dest, sizes = _encode(raws, fill, room=SIZE + 16)
    assert (done, error) == (2, 0) and end == sizes[0] and sizes[1] == -1
    source = np.frombuffer(b"".join(raws), np.uint8).reshape(4, SIZE)
    bigger = memoryview(bytearray(4 * (SIZE + 16)))
    bigger[:end] = dest[:end]
    done, end, error = _runs.blosc_encoder(PARAMS, source, 1, SIZE, fill, bigger, end, done, sizes,
                                           None)
    assert (done, error) == (4, 0) and sizes[1] == -1
    at = 0
    for k in (0, 2, 3):
        assert BLOSC.decode(bytes(bigger[at:at + sizes[k]])) == raws[k]
        at += sizes[k]
    assert at == end


def test_blosc_encoder_reports_c_blosc_errors_and_refuses_bad_arguments():
    raws = _chunks(2)
    done, _, error, _, _ = _encode(raws, params=(5, 1, 2, b"no-such-codec", 0))
    assert done == 0 and error < 0
    with pytest.raises(ValueError, match="inconsistent"):
        _encode(raws, first=3)
    with pytest.raises(ValueError, match="inconsistent"):
        _encode(raws, fill=b"\0\0\0")  # 3 bytes do not divide a chunk of 64 KiB
    with pytest.raises(ValueError, match="inconsistent"):
        _encode(raws, pos=10**9)
    source = np.frombuffer(b"".join(raws) + b"x", np.uint8)[None]  # not whole chunks
    with pytest.raises(ValueError, match="inconsistent"):
        _runs.blosc_encoder(PARAMS, source, 1, SIZE, None, memoryview(bytearray(10)), 0, 0,
                            np.empty(2, np.int64), None)
    strided = np.frombuffer(b"".join(raws), "<u2").reshape(2, 256, -1)[:, :, ::2]
    with pytest.raises(ValueError, match="inconsistent"):  # chunks to copy out, no scratch
        _runs.blosc_encoder(PARAMS, strided, 1, SIZE // 2, None, memoryview(bytearray(SIZE)), 0,
                            0, np.empty(2, np.int64), None)
    for lead in (-1, 4):  # no such dimensions
        with pytest.raises(ValueError, match="inconsistent"):
            _runs.blosc_encoder(PARAMS, strided, lead, SIZE // 2, None,
                                memoryview(bytearray(SIZE)), 0, 0, np.empty(2, np.int64),
                                memoryview(bytearray(SIZE)))
    with pytest.raises(ValueError, match="inconsistent"):  # a scratch too small for one
        _runs.blosc_encoder(PARAMS, strided, 1, SIZE // 2, None, memoryview(bytearray(SIZE)), 0,
                            0, np.empty(2, np.int64), memoryview(bytearray(10)))


@pytest.mark.parametrize("location", ["start", "end"])
@pytest.mark.parametrize("skip_fill", [True, False])
def test_a_shard_packed_by_one_call_equals_one_packed_chunk_by_chunk(location, skip_fill,
                                                                     monkeypatch):
    from zarrkit import scratch as scratch_module
    from zarrkit.codecs import sharding as sharding_module

    spec = ChunkSpec((64, 96), np.dtype("uint16"), np.uint16(5))
    chain = CodecChain.from_json([{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [16, 32], "index_location": location,
        "codecs": [{"name": "bytes"}, {"name": "blosc", "configuration": {
            "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2}}],
        "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}]}}], spec)
    codec = chain.array_bytes
    assert codec.inner.encodes_many
    rng = np.random.default_rng(4)
    region = np.empty((128, 192), "uint16")[::2, ::2]  # strided, as a view of the written value
    region[...] = rng.integers(0, 65535, (64, 96))  # noise: chunks that do not shrink
    region[16:32, 32:64] = 5  # one inner chunk all fill
    # A thread's buffer from nothing, not kept: it grows as the shard is assembled.
    monkeypatch.delattr(scratch_module._local, "shard", raising=False)
    monkeypatch.setattr(sharding_module, "SCRATCH_LIMIT", 1)
    grown = []
    real = scratch_module.whole_scratch
    monkeypatch.setattr(sharding_module, "whole_scratch",
                        lambda size, slot: (grown.append(slot), real(size, slot))[1])
    packed = bytes(codec.pack_region_transient(region, skip_fill))
    assert grown.count("shard") > 2
    blocks = region.reshape(4, 16, 3, 32).transpose(0, 2, 1, 3)
    chunk_by_chunk = [(flat, codec.inner.encode(np.ascontiguousarray(blocks[i, j])))
                      for flat, (i, j) in enumerate(np.ndindex(4, 3))
                      if not (skip_fill and (i, j) == (1, 1))]
    assert packed == bytes(codec.pack_transient(chunk_by_chunk))
    np.testing.assert_array_equal(chain.decode(packed), region)
    region[...] = 5  # all fill: nothing to store, or every chunk stored
    assert (codec.pack_region_transient(region, skip_fill) is None) == skip_fill


def test_a_shard_is_packed_from_its_values_with_one_inner_chunk_of_scratch(monkeypatch):
    """A shard's inner chunks are copied out of its values one at a time into a buffer of one
    inner chunk, each just before it is compressed (no shard-sized gather buffer: that cost
    each thread fresh pages per write), and pack as chunk by chunk does."""
    from zarrkit.codecs import chain as chain_module

    spec = ChunkSpec((1024, 1024), np.dtype("uint16"), np.uint16(0))  # 2 MiB
    chain = CodecChain.from_json([{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [128, 128],
        "codecs": [{"name": "bytes"}, {"name": "blosc", "configuration": {
            "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2}}],
        "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}]}}], spec)
    codec = chain.array_bytes
    region = (np.arange(1024 * 1024, dtype="uint64").reshape(1024, 1024) * 2654435761 % 4093
              ).astype("uint16")
    asked = []
    real = chain_module.whole_scratch
    monkeypatch.setattr(chain_module, "whole_scratch", lambda size, slot: (
        asked.append((slot, size)), real(size, slot))[1])
    packed = bytes(codec.pack_region_transient(region, True))
    assert asked == [("gather", 128 * 128 * 2)]  # one call for the shard's 64 inner chunks
    blocks = region.reshape(8, 128, 8, 128).transpose(0, 2, 1, 3)
    chunk_by_chunk = [(flat, codec.inner.encode(np.ascontiguousarray(blocks[i, j])))
                      for flat, (i, j) in enumerate(np.ndindex(8, 8))]
    assert packed == bytes(codec.pack_transient(chunk_by_chunk))
    np.testing.assert_array_equal(chain.decode(packed), region)


@pytest.mark.parametrize("write_empty_chunks", [False, True])
def test_whole_shard_writes_read_back_both_ways(tmp_path, monkeypatch, many_decoder,
                                                write_empty_chunks):
    from zarrkit.codecs.sharding import ShardingCodec

    data = (np.arange(96 * 128, dtype="uint64").reshape(96, 128) * 2654435761 % 4093
            ).astype("uint16")
    data[:16, :32] = 0  # an inner chunk of fill
    data[48:, 64:] = 0  # a whole shard of fill
    a = zarrkit.create(str(tmp_path / "a"), shape=data.shape, dtype="uint16", chunks=(16, 32),
                       shards=(48, 64), codecs=[{"name": "bytes"}, {"name": "blosc",
                                                "configuration": {"cname": "lz4"}}],
                       write_empty_chunks=write_empty_chunks)
    packed = []
    real = ShardingCodec.pack_region_transient
    monkeypatch.setattr(ShardingCodec, "pack_region_transient",
                        lambda self, *args: (packed.append(1), real(self, *args))[1])
    a[...] = data
    assert len(packed) == (4 if many_decoder == "one call" else 0)
    np.testing.assert_array_equal(a[...], data)
    assert (tmp_path / "a" / "c" / "1" / "1").exists() == write_empty_chunks
    again = zarrkit.open(str(tmp_path / "a"), mode="r")
    np.testing.assert_array_equal(again[17:70, 3:101], data[17:70, 3:101])


@pytest.mark.parametrize("shape, chunks, shards", [
    ((96,), (8,), (48,)),
    ((12, 10, 9), (2, 5, 3), (4, 10, 9)),
    ((64, 96), (16, 32), (64, 96)),
])
def test_shards_packed_by_one_call_equal_those_packed_chunk_by_chunk(shape, chunks, shards,
                                                                     monkeypatch):
    from zarrkit.kvstore import MemoryStore

    data = (np.arange(np.prod(shape), dtype="uint64").reshape(shape) * 40503 % 65521
            ).astype("uint16")
    data[(slice(0, chunks[0]),) * 1] = 0  # a row of fill chunks
    codecs = [{"name": "bytes"}, {"name": "blosc", "configuration": {"cname": "lz4"}}]
    stores = []
    for runs in (True, False):
        if not runs:
            monkeypatch.setattr(_runs, "blosc_encoder", None)
        a = zarrkit.create(MemoryStore(), shape=shape, dtype="uint16", chunks=chunks,
                           shards=shards, codecs=codecs)
        assert a._engine.sharding.inner.encodes_many == runs
        a[...] = data
        np.testing.assert_array_equal(a[...], data)
        stores.append({key: bytes(a.store.get(key)) for key in a.store.list_prefix("c/")})
    assert stores[0] == stores[1]


@pytest.mark.parametrize("compressor", [{"name": "blosc", "configuration": {"cname": "lz4"}},
                                        {"name": "zstd"}])
def test_a_transient_decode_is_a_run_of_one(compressor, monkeypatch, many_decoder):
    """A chunk decoded into the thread's buffer goes through the C call too (its checks
    included), and through the Python path when that call stops at it."""
    spec = ChunkSpec((128, 256), np.dtype("uint16"), 0)
    chain = CodecChain.from_json([{"name": "bytes"}, compressor], spec)
    python_path = []
    real = CodecChain._decode
    monkeypatch.setattr(CodecChain, "_decode", lambda self, data, dest: (
        python_path.append(1), real(self, data, dest))[1])
    raw = _chunks(1)[0]
    expected = np.frombuffer(raw, "uint16").reshape(128, 256)
    np.testing.assert_array_equal(chain.decode_transient(chain.encode(expected)), expected)
    assert len(python_path) == (0 if many_decoder == "one call" else 1)
    python_path.clear()
    if compressor["name"] == "zstd":  # another writer's frame without its size: Python reads it
        np.testing.assert_array_equal(
            chain.decode_transient(_zstd(raw, write_content_size=False)), expected)
        assert python_path == [1]
    bad = bytearray(chain.encode(expected))
    bad[-40:] = bytes(40)
    with pytest.raises(CorruptDataError):
        chain.decode_transient(bytes(bad)[:-1])
    # decode_into, straight into a given buffer, likewise.
    through_python = []
    real_bytes = CodecChain._decode_bytes
    monkeypatch.setattr(CodecChain, "_decode_bytes", lambda self, data, dest: (
        through_python.append(1), real_bytes(self, data, dest))[1])
    dest = memoryview(bytearray(SIZE))
    chain.decode_into(chain.encode(expected), dest)
    assert dest == raw and len(through_python) == (0 if many_decoder == "one call" else 1)
    with pytest.raises(CorruptDataError):
        chain.decode_into(bytes(bad)[:-1], dest)


def test_zstd_prefixes_are_decoded_alone_only_beyond_one_block():
    one_block = CodecChain.from_json([{"name": "bytes"}, {"name": "zstd"}],
                                     ChunkSpec((256, 256), np.dtype("uint16"), 0))  # 128 KiB
    two_blocks = CodecChain.from_json([{"name": "bytes"}, {"name": "zstd"}],
                                      ChunkSpec((512, 256), np.dtype("uint16"), 0))
    assert not one_block.decodes_prefix
    assert two_blocks.decodes_prefix


def test_a_run_that_stops_early_is_an_error_not_a_short_write(monkeypatch):
    """`encode_many_transient` gives room for every chunk; should the call stop before the end
    all the same, that is named, never returned as a shorter run."""
    spec = ChunkSpec((16, 16), np.dtype("uint16"), np.uint16(0))
    chain = CodecChain.from_json([{"name": "bytes"}, {"name": "blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2}}], spec)
    assert chain.encodes_many
    chunks = np.arange(3 * 256, dtype="uint16").reshape(3, 16, 16)
    encoded, sizes = chain.encode_many_transient(chunks, None)
    ends = np.cumsum(sizes)
    decoded = [chain.decode(bytes(encoded[e - s:e])) for s, e in zip(sizes, ends, strict=True)]
    assert np.array_equal(np.stack(decoded), chunks)
    real = chain._many_encoder
    monkeypatch.setattr(chain, "_many_encoder", lambda *args: (1, real(*args)[1], 0))
    with pytest.raises(CodecError, match="run of 3 chunks stopped after 1"):
        chain.encode_many_transient(chunks, None)


def _strided_sources():
    """(name, source, lead): chunks whose bytes do not lie one after another in `source`."""
    rng = np.random.default_rng(11)
    value = (rng.integers(0, 900, (64, 4 * 48)) // 9).astype("<u2")
    shard = (rng.integers(0, 900, (4 * 16, 3 * 24)) // 9).astype("<u4")
    cube = (rng.integers(0, 90, (6, 10, 2 * 9, 8)) // 9).astype("<i2")
    return [
        ("side-by-side chunks", np.moveaxis(value.reshape(64, 4, 48), 1, 0), 1),
        ("a shard's inner chunks", shard.reshape(4, 16, 3, 24).transpose(0, 2, 1, 3), 2),
        ("reversed axes", np.moveaxis(value[::-1, ::-1].reshape(64, 4, 48), 1, 0), 1),
        ("every other row", cube[:, :, ::2], 1),
        ("lengths of one, odd strides", cube[:, 3:4, ::2, 5:6], 1),
        ("one chunk, no leading axis", value[::2, 7:50], 0),
    ]


@pytest.mark.parametrize("name,source,lead", _strided_sources(),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_blosc_encoder_copies_out_strided_chunks_in_c_order(name, source, lead):
    grid = source.shape[:lead]
    count = math.prod(grid)
    size = math.prod(source.shape[lead:]) * source.itemsize
    expected = [np.ascontiguousarray(source[k]).tobytes() for k in np.ndindex(grid)]
    dest = memoryview(bytearray(count * (size + 16)))
    sizes = np.full(count, -7, np.int64)
    done, end, error = _runs.blosc_encoder(PARAMS, source, lead, size, None, dest, 0, 0, sizes,
                                           memoryview(bytearray(size)))
    assert (done, error) == (count, 0) and end == sizes.sum()
    ends = np.cumsum(sizes)
    decoded = [BLOSC.decode(bytes(dest[e - n:e])) for n, e in zip(sizes, ends, strict=True)]
    assert decoded == expected


def test_blosc_encoder_leaves_out_strided_fill_chunks():
    value = np.full((32, 3 * 40), 5, "<u2")
    value[3, 45] = 6  # only the middle chunk is not all fill
    source = np.moveaxis(value.reshape(32, 3, 40), 1, 0)
    size = 32 * 40 * 2
    dest = memoryview(bytearray(3 * (size + 16)))
    sizes = np.full(3, -7, np.int64)
    done, end, _ = _runs.blosc_encoder(PARAMS, source, 1, size, np.array(5, "<u2").tobytes(),
                                       dest, 0, 0, sizes, memoryview(bytearray(size)))
    assert done == 3 and sizes[0] == sizes[2] == -1 and end == sizes[1]
    assert BLOSC.decode(bytes(dest[:end])) == np.ascontiguousarray(source[1]).tobytes()


@pytest.mark.parametrize("shards", [None, (16, 24)])
def test_datetimes_written_by_runs_are_their_bytes(tmp_path, shards):
    """Chunks of a type numpy exports no buffer for (datetime64) go to the encoder as bytes."""
    data = (np.arange(32 * 48, dtype="i8") * 3600).reshape(32, 48)[:, ::-1].astype("M8[s]")
    a = zarrkit.create(tmp_path / "a", shape=data.shape, dtype=data.dtype, chunks=(8, 12),
                       shards=shards, codecs=[{"name": "bytes"}, {"name": "blosc",
                                              "configuration": {"cname": "lz4", "clevel": 5,
                                                                "shuffle": "shuffle",
                                                                "typesize": 8}}])
    a[...] = data
    np.testing.assert_array_equal(zarrkit.open(tmp_path / "a", mode="r")[...], data)
    if shards is None:
        stored = BLOSC.decode((tmp_path / "a" / "c" / "1" / "2").read_bytes())
        assert stored == np.ascontiguousarray(data[8:16, 24:36]).view("<i8").tobytes()


@pytest.mark.parametrize("level,checksum", [(0, False), (1, True), (19, False), (-5, True)])
def test_zstd_encoder_writes_whole_frames_back_to_back(level, checksum):
    """Each chunk is one frame that declares its size, with a checksum when asked; the level
    is the one asked for (python-zstandard's frame at the same level is as large, within the
    1% its libzstd version may differ by; levels apart differ by more)."""
    raws = _chunks(3)
    raws[1] = bytes(SIZE)  # all fill: left out
    source = np.frombuffer(b"".join(raws), np.uint8).reshape(3, SIZE)
    room = _libzstd.compress_bound(SIZE)
    dest = memoryview(bytearray(3 * room))
    sizes = np.full(3, -7, np.int64)
    done, end, error = _runs.zstd_encoder((level, checksum), source, 1, SIZE, bytes(2), dest, 0,
                                          0, sizes, None)
    assert (done, error) == (3, 0) and sizes[1] == -1 and end == sizes[[0, 2]].sum()
    frames = [bytes(dest[:sizes[0]]), bytes(dest[sizes[0]:end])]
    for frame, raw in zip(frames, (raws[0], raws[2]), strict=True):
        params = zstandard.get_frame_parameters(frame)
        assert params.content_size == SIZE and params.has_checksum == checksum
        assert zstandard.ZstdDecompressor().decompress(frame) == raw
        reference = zstandard.ZstdCompressor(level=level, write_checksum=checksum).compress(raw)
        assert abs(len(frame) - len(reference)) <= len(reference) // 100
        if _libzstd._clib is not _libzstd._lib:  # python-zstandard's own libzstd: its bytes
            assert frame == reference


def test_zstd_encoder_stops_where_a_frame_might_not_fit_and_goes_on():
    raws = _chunks(3)
    source = np.frombuffer(b"".join(raws), np.uint8).reshape(3, SIZE)
    room = _libzstd.compress_bound(SIZE)
    dest = memoryview(bytearray(room + room // 2))
    sizes = np.full(3, -7, np.int64)
    done, end, error = _runs.zstd_encoder((3, False), source, 1, SIZE, None, dest, 0, 0, sizes,
                                          None)
    assert (done, error) == (1, 0) and end == sizes[0]  # a second frame would fit, but might not
    bigger = memoryview(bytearray(3 * room))
    bigger[:end] = dest[:end]
    done, end, error = _runs.zstd_encoder((3, False), source, 1, SIZE, None, bigger, end, done,
                                          sizes, None)
    assert (done, error) == (3, 0)
    ends = np.cumsum(sizes)
    assert [zstandard.ZstdDecompressor().decompress(bytes(bigger[e - n:e]))
            for n, e in zip(sizes, ends, strict=True)] == raws


def test_zstd_encoder_copies_out_a_shards_inner_chunks():
    shard = (np.arange(64 * 72, dtype="uint32").reshape(64, 72) * 2654435761 % 1021)
    blocks = shard.reshape(4, 16, 3, 24).transpose(0, 2, 1, 3)
    size = 16 * 24 * 4
    room = _libzstd.compress_bound(size)
    dest = memoryview(bytearray(12 * room))
    sizes = np.empty(12, np.int64)
    done, end, error = _runs.zstd_encoder((3, False), blocks, 2, size, None, dest, 0, 0, sizes,
                                          memoryview(bytearray(size)))
    assert (done, error) == (12, 0)
    ends = np.cumsum(sizes)
    decoded = [zstandard.ZstdDecompressor().decompress(bytes(dest[e - n:e]))
               for n, e in zip(sizes, ends, strict=True)]
    assert decoded == [np.ascontiguousarray(blocks[i, j]).tobytes() for i, j in np.ndindex(4, 3)]


@pytest.mark.parametrize("chunks,shards", [((32, 48), None),  # small chunks: batches
                                           ((256, 384), None),  # runs of large chunks
                                           ((32, 48), (256, 384))])  # whole shards
def test_zstd_arrays_are_written_by_runs_and_read_by_zarr_python(tmp_path, chunks, shards,
                                                                monkeypatch):
    import zarr

    calls = []
    real = _runs.zstd_encoder
    monkeypatch.setattr(_runs, "zstd_encoder", lambda *args: (calls.append(1), real(*args))[1])
    data = (np.arange(1024 * 1536, dtype="uint64").reshape(1024, 1536) * 40503 % 65521
            ).astype("uint16")
    data[:chunks[0], :chunks[1]] = 0  # a fill chunk: not stored
    a = zarrkit.create(tmp_path / "a", shape=data.shape, dtype="uint16", chunks=chunks,
                       shards=shards, codecs=[{"name": "bytes"}, {"name": "zstd",
                                              "configuration": {"level": 5, "checksum": True}}])
    a[...] = data
    assert calls  # through the run encoder, not chunk by chunk
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a"), mode="r")[...], data)
    if shards is None:
        assert not (tmp_path / "a" / "c" / "0" / "0").exists()
        frame = (tmp_path / "a" / "c" / "1" / "2").read_bytes()
        assert zstandard.get_frame_parameters(frame).has_checksum


@pytest.mark.parametrize("arena", [None, 4096])
def test_small_chunks_are_encoded_by_runs_into_the_batch_buffer(tmp_path, arena, monkeypatch):
    """Small compressed chunks side by side are encoded by one call per run into the batch's
    buffer (or, when it might not hold them, memory of their own), and read back by
    zarr-python; fill chunks among them are not stored."""
    import zarr

    from zarrkit.engine import chunk_io

    if arena is not None:
        monkeypatch.setattr(chunk_io, "WRITE_ARENA_BYTES", arena)
    calls = []
    real = _runs.blosc_encoder
    monkeypatch.setattr(_runs, "blosc_encoder", lambda *args: (calls.append(1), real(*args))[1])
    data = (np.arange(96 * 640, dtype="uint64").reshape(96, 640) * 40503 % 65521).astype("<u2")
    data[32:64, 64:128] = 0  # a fill chunk
    a = zarrkit.create(tmp_path / "a", shape=data.shape, dtype="uint16", chunks=(32, 64),
                       codecs=[{"name": "bytes"}, {"name": "blosc", "configuration": {
                           "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2}}])
    a[...] = data
    assert len(calls) == 3  # a call per row of 10 chunks, not one per chunk
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a"), mode="r")[...], data)
    assert not (tmp_path / "a" / "c" / "1" / "1").exists()
    assert len(list((tmp_path / "a" / "c").rglob("[0-9]*"))) == 3 + 29  # 3 rows, 29 chunks


def test_runs_compress_with_python_zstandards_libzstd_else_the_systems(monkeypatch):
    import importlib.util

    ours = _libzstd._load_compressor()
    assert ours is not None and ours.ZSTD_versionNumber() >= 10400
    assert ours.ZSTD_compressBound(SIZE) == _libzstd.compress_bound(SIZE) > SIZE
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)  # no such build
    assert _libzstd._load_compressor() is _libzstd._lib


@pytest.mark.parametrize("seed", range(40))
def test_blosc_encoder_copies_out_any_strided_view(seed):
    """Random views (steps, reversals, transpositions, lengths of one) of random shapes and
    item sizes, split into a grid of chunks on 0 to 2 leading dimensions: each chunk decodes
    to its values in C order."""
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(1, 5))
    lead = int(rng.integers(0, min(ndim, 2) + 1))
    dtype = rng.choice(["u1", "<u2", "<i4", "<f8"])
    base = rng.integers(0, 50, [int(n) for n in rng.integers(1, 9, ndim)]).astype(dtype)
    view = base[tuple(slice(None, None, int(rng.choice([1, 2, -1, -2]))) for _ in range(ndim))]
    view = view.transpose(rng.permutation(ndim))
    grid, shape = view.shape[:lead], view.shape[lead:]
    count, size = math.prod(grid), math.prod(shape) * view.itemsize
    dest = memoryview(bytearray(count * (size + 16)))
    sizes = np.empty(count, np.int64)
    done, end, error = _runs.blosc_encoder((5, 1, view.itemsize, b"lz4", 0), view, lead, size,
                                           None, dest, 0, 0, sizes, memoryview(bytearray(size)))
    assert (done, error) == (count, 0) and end == sizes.sum()
    ends = np.cumsum(sizes)
    assert [numcodecs.Blosc().decode(bytes(dest[e - n:e])) for n, e in zip(sizes, ends, strict=True)
            ] == [np.ascontiguousarray(view[k]).tobytes() for k in np.ndindex(grid)]

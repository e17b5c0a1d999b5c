"""The fast paths, each checked against numpy, the general path or numcodecs: boxes of whole inner
chunks decoded straight into one buffer, c-blosc called directly, transient shard reads."""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np
import pytest

import zarrkit
from zarrkit.codecs import _cblosc
from zarrkit.codecs.base import ChunkSpec
from zarrkit.codecs.blosc import BloscCodec
from zarrkit.codecs.chain import CodecChain
from zarrkit.engine import chunk_io
from zarrkit.errors import CorruptDataError
from zarrkit.indexing import basic_plan as plan_selection
from zarrkit.kvstore.file import FileStore
from zarrkit.kvstore.memory import MemoryStore
from zarrkit.kvstore.zip import ZipStore

BLOSC_LZ4 = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5}}
CHAINS = {
    "bytes": ([{"name": "bytes"}], True),
    "blosc": ([{"name": "bytes"}, BLOSC_LZ4], True),
    "zstd": ([{"name": "bytes"}, {"name": "zstd"}], True),
    "blosc+crc32c": ([{"name": "bytes"}, {"name": "blosc", "configuration": {"cname": "zstd"}},
                      {"name": "crc32c"}], True),
    "gzip": ([{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}], True),
    "big-endian": ([{"name": "bytes", "configuration": {"endian": "big"}}, BLOSC_LZ4], False),
    "transpose": ([{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes"},
                   {"name": "zstd"}], False),
}
INDEX_CODECS = [{"name": "bytes"}, {"name": "crc32c"}]
SHAPE, SHARD, INNER = (50, 70), (20, 30), (5, 6)  # 3 x 3 shards, the last ones cut short


def _data(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    return (rng.integers(0, 1000, SHAPE) // 7).astype(dtype)  # compressible


def _sharded(path, chain, dtype="uint16", fill=0) -> tuple[zarrkit.Array, np.ndarray]:
    a = zarrkit.create(str(path), shape=SHAPE, dtype=dtype, chunks=INNER, shards=SHARD,
                       codecs=chain, fill_value=fill)
    expected = _data(dtype)
    expected[5:10, 6:12] = fill  # one inner chunk all fill: not stored
    a[...] = expected
    a.store.delete("c/1/1")  # a whole shard missing: reads as the fill value
    expected[20:40, 30:60] = fill
    return a, expected


@pytest.fixture
def boxes(monkeypatch):
    """The outcome of each slab read by the box path ("ok" or the exception's type)."""
    calls = []
    real = chunk_io._read_slab

    def counting(*args):
        try:
            real(*args)
        except Exception as e:
            calls.append(type(e))
            raise
        calls.append("ok")
    monkeypatch.setattr(chunk_io, "_read_slab", counting)
    return calls


SELECTIONS = [
    np.s_[...],  # every shard, the edge ones cut short
    np.s_[20:40, 30:60],  # exactly one shard
    np.s_[5:45, 6:66],  # boxes of whole inner chunks inside shards
    np.s_[::-1, 30:],  # reversed
    np.s_[3:47, :],  # partial inner chunks: the general path
    np.s_[:, 7],  # a dropped dimension: the general path
]


@pytest.mark.parametrize("name", CHAINS)
@pytest.mark.parametrize("dtype", ["uint16", "float64", "uint8"])
def test_sharded_reads_match_numpy(tmp_path, name, dtype, boxes, many_decoder):
    chain, direct = CHAINS[name]
    direct = direct or (name == "big-endian" and dtype == "uint8")  # no byte order to swap
    a, expected = _sharded(tmp_path / "a", chain, dtype, fill=3)
    for sel in SELECTIONS:
        np.testing.assert_array_equal(a[sel], expected[sel], err_msg=f"{name} {sel}")
    assert (len(boxes) > 0) == direct
    assert set(boxes) <= {"ok"}


def test_box_path_reads_in_slabs(tmp_path, monkeypatch, boxes):
    a, expected = _sharded(tmp_path / "a", CHAINS["blosc"][0])
    np.testing.assert_array_equal(a[...], expected)
    assert boxes == ["ok"] * 8  # a slab per stored shard (one is missing)
    boxes.clear()
    row = (SHARD[1] // INNER[1]) * 2 * 5 * 6  # one row of inner chunks, in bytes
    monkeypatch.setattr(chunk_io, "BOX_BYTES", row)  # one row of chunks per slab
    np.testing.assert_array_equal(a[...], expected)
    # Shards 5 chunks wide: a slab per chunk row (4, 4 and 2 rows, shard (1, 1) missing);
    # the last shard column, 2 chunks wide, fits 2 rows per slab.
    assert boxes == ["ok"] * ((4 + 2) + (4 + 4 + 2) + (2 + 2 + 1))
    boxes.clear()
    monkeypatch.setattr(chunk_io, "BOX_BYTES", 1)  # not even one chunk: the general path
    np.testing.assert_array_equal(a[...], expected)
    assert boxes == []


def test_box_path_three_dimensions(tmp_path, boxes):
    data = np.arange(12 * 10 * 9, dtype="int32").reshape(12, 10, 9)
    a = zarrkit.create(str(tmp_path / "a"), shape=data.shape, dtype="int32", chunks=(2, 5, 3),
                       shards=(4, 10, 9), codecs=[{"name": "bytes"}, BLOSC_LZ4])
    a[...] = data
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[4:12, :, 3:9], data[4:12, :, 3:9])
    assert boxes and set(boxes) == {"ok"}


def test_corrupt_inner_chunk_in_a_box_raises(tmp_path, boxes, many_decoder):
    a, _ = _sharded(tmp_path / "a", CHAINS["blosc"][0])
    path = tmp_path / "a" / "c" / "0" / "0"
    raw = bytearray(path.read_bytes())
    raw[16:200] = bytes(range(184))  # the first inner chunk's compressed stream
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptDataError, match=r"shard 'c/0/0', inner chunk at bytes \d+\+\d+: blosc"):
        a[...]
    assert CorruptDataError in boxes  # raised inside the box path


def test_truncated_shard_in_a_box_raises(tmp_path):
    a, _ = _sharded(tmp_path / "a", CHAINS["blosc"][0])
    path = tmp_path / "a" / "c" / "0" / "0"
    raw = path.read_bytes()
    index = raw[-(4 * 5 * 2 * 8 + 4):]
    path.write_bytes(raw[:100] + index)  # the index now points past the data
    with pytest.raises(CorruptDataError):
        a[...]


@pytest.mark.parametrize("name", CHAINS)
def test_decode_into_matches_decode(name):
    chain_json, direct = CHAINS[name]
    spec = ChunkSpec((6, 5), np.dtype("uint16"), np.uint16(0))
    chain = CodecChain.from_json(chain_json, spec)
    chunk = np.arange(30, dtype="uint16").reshape(6, 5) * 7
    encoded = chain.encode(chunk)
    assert chain.decodes_into == direct
    dest = memoryview(bytearray(spec.nbytes))
    if not direct:
        with pytest.raises(ValueError, match="cannot decode straight"):
            chain.decode_into(encoded, dest)
        return
    chain.decode_into(bytes(encoded), dest)
    np.testing.assert_array_equal(np.frombuffer(dest, "uint16").reshape(6, 5), chunk)
    np.testing.assert_array_equal(chain.decode(bytes(encoded)), chunk)


@pytest.mark.parametrize("name", ["bytes", "blosc", "zstd", "gzip"])
def test_decode_into_refuses_bad_data(name):
    spec = ChunkSpec((6, 5), np.dtype("uint16"), np.uint16(0))
    chain = CodecChain.from_json(CHAINS[name][0], spec)
    encoded = bytes(chain.encode(np.ones((6, 5), "uint16")))
    dest = memoryview(bytearray(spec.nbytes))
    for bad in (encoded[:-3], encoded + b"xx"):
        with pytest.raises(CorruptDataError):
            chain.decode_into(bad, dest)


def test_blosc_without_direct_c_blosc(tmp_path, monkeypatch):
    """The numcodecs route (a build without c-blosc's symbols, or read-only buffers)."""
    assert _cblosc.available  # the direct route is what the other tests exercise
    a, expected = _sharded(tmp_path / "a", CHAINS["blosc"][0])
    monkeypatch.setattr(_cblosc, "available", False)
    np.testing.assert_array_equal(a[...], expected)
    codec = BloscCodec("lz4").evolve(ChunkSpec((100,), np.dtype("uint16"), np.uint16(0)))
    spec = ChunkSpec((100,), np.dtype("uint16"), np.uint16(0))
    data = np.arange(100, dtype="uint16")
    encoded = bytes(codec.encode(memoryview(data.view(np.uint8)), spec))
    out = codec.decode_sized(memoryview(encoded), spec, 200)
    assert np.frombuffer(out, "uint16").tolist() == data.tolist()


def test_blosc_direct_routes_agree_and_refuse_corruption():
    spec = ChunkSpec((1000,), np.dtype("uint16"), np.uint16(0))
    codec = BloscCodec("lz4").evolve(spec)
    data = (np.arange(1000) % 17).astype("uint16")
    encoded = bytes(codec.encode(memoryview(data.view(np.uint8)), spec))
    for src in (encoded, memoryview(bytearray(encoded)), memoryview(encoded)):
        dest = memoryview(bytearray(2000))
        codec.decode_into(src, spec, 2000, dest)
        assert np.frombuffer(dest, "uint16").tolist() == data.tolist()
    bad = bytearray(encoded)
    bad[16:] = os.urandom(len(bad) - 16)
    with pytest.raises(CorruptDataError, match="blosc"):
        codec.decode_into(bytes(bad), spec, 2000, memoryview(bytearray(2000)))


def test_plan_block():
    plan = plan_selection(np.s_[5:45, 6:66], (50, 70), (5, 6))
    assert plan.block() == ((1, 1), (8, 10), (slice(0, 40), slice(0, 60)))
    assert plan_selection(np.s_[5:44, 6:66], (50, 70), (5, 6)).block() is None  # partial chunk
    assert plan_selection(np.s_[::2, :], (50, 70), (5, 6)).block() is None  # a step
    assert plan_selection(np.s_[3, :], (50, 70), (5, 6)).block() is None  # a dropped dimension
    edge = plan_selection(np.s_[45:, :], (50, 70), (5, 6)).block()
    assert edge == ((9, 0), (1, 12), (slice(0, 5), slice(0, 70)))  # the last chunks, cut short


@pytest.mark.parametrize("cname", ["lz4", "lz4hc", "blosclz", "zstd", "zlib"])
@pytest.mark.parametrize("shuffle", ["noshuffle", "shuffle", "bitshuffle"])
@pytest.mark.parametrize("blocksize", [0, 4096])
def test_blosc_direct_compress_matches_numcodecs(cname, shuffle, blocksize, monkeypatch):
    spec = ChunkSpec((3000,), np.dtype("float32"), np.float32(0))
    codec = BloscCodec(cname, 5, shuffle, blocksize=blocksize).evolve(spec)
    data = np.sin(np.arange(3000, dtype="float32") / 50)
    direct = bytes(codec.encode(memoryview(data.view(np.uint8)), spec))
    readonly = memoryview(data.tobytes())  # no address for ctypes: numcodecs compresses
    assert bytes(codec.encode(readonly, spec)) == direct
    monkeypatch.setattr(_cblosc, "available", False)
    assert bytes(codec.encode(memoryview(data.view(np.uint8)), spec)) == direct
    assert np.array_equal(np.frombuffer(codec.decode(direct, spec), "float32"), data)


def _vm_flags(address: int) -> list[str]:
    flags, inside = [], False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                flags = line.split()[1:]
    return flags


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="Linux /proc needed to look")
@pytest.mark.parametrize("slow", [False, True])
def test_outputs_ask_for_huge_pages_until_one_is_slow(monkeypatch, slow):
    from zarrkit import scratch

    # every huge page counts as slow, or none does
    monkeypatch.setattr(scratch, "SLOW_HUGE_PAGE", -1.0 if slow else 60.0)
    big = scratch.empty((4096, 2048), np.dtype("uint16"))  # 16 MiB
    assert big.shape == (4096, 2048) and big.dtype == np.uint16 and big.flags.c_contiguous
    big[...] = 7
    assert int(big.sum()) == 7 * 4096 * 2048
    first = -(-big.ctypes.data // (1 << 21)) * (1 << 21)  # the first huge page inside
    assert "hg" in _vm_flags(first)  # MADV_HUGEPAGE
    later = first + 3 * (1 << 21)
    if slow:  # the first slow page turned the rest to small pages
        assert "nh" in _vm_flags(later) and "hg" not in _vm_flags(later)
    else:
        assert "hg" in _vm_flags(later) and "nh" not in _vm_flags(later)
    small = scratch.empty((10,), np.dtype("float64"))
    assert small.shape == (10,)


def _in_a_thread(fn):
    out = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join()
    return out[0]


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="Linux /proc needed to look")
def test_scratch_buffers_are_on_small_pages():
    """A thread's scratch buffer is faulted in fresh once per process, only where it is used:
    small pages (a fresh huge page the host has not backed costs 4x as much)."""
    from zarrkit import scratch

    def on_small_pages():
        buf = np.frombuffer(scratch.whole_scratch(5 << 20, "test-small-pages"), np.uint8)
        buf[::4096] = 1
        inside = -(-buf.ctypes.data // (1 << 21)) * (1 << 21)  # a whole huge page's range
        return "nh" in _vm_flags(inside), int(buf[::4096].sum()) == len(buf[::4096])

    assert _in_a_thread(on_small_pages) == (True, True)


def test_threads_keep_scratch_buffers_up_to_the_budget_and_let_go_of_the_rest(monkeypatch):
    from zarrkit import scratch

    monkeypatch.setattr(scratch, "SCRATCH_BUDGET", scratch.kept_scratch() + (3 << 20))

    def two_buffers():
        first = scratch.whole_scratch(2 << 20, "test-budget-a")
        over = scratch.whole_scratch(2 << 20, "test-budget-b")  # past the budget
        kept = scratch.kept_scratch()
        again = scratch.whole_scratch(1 << 20, "test-budget-a")  # the kept one, reused
        other = scratch.whole_scratch(1 << 20, "test-budget-b")  # a new one, not the first
        return (np.shares_memory(np.frombuffer(first, np.uint8), np.frombuffer(again, np.uint8)),
                np.shares_memory(np.frombuffer(over, np.uint8), np.frombuffer(other, np.uint8)),
                kept)

    before = scratch.kept_scratch()
    reused, reused_over, kept = _in_a_thread(two_buffers)
    assert reused and not reused_over
    assert kept == before + (2 << 20)
    assert scratch.kept_scratch() == before  # the thread ended: its buffers are freed


def _imported_with(name, value, code):
    import subprocess
    import sys

    env = {**os.environ, name: value}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True)


def test_the_scratch_budget_is_set_by_the_environment():
    done = _imported_with("ZARRKIT_SCRATCH_BYTES", "12345",
                          "from zarrkit import scratch; print(scratch.SCRATCH_BUDGET)")
    assert done.returncode == 0 and done.stdout.strip() == "12345"


@pytest.mark.parametrize(("name", "value"), [
    ("ZARRKIT_SCRATCH_BYTES", "lots"), ("ZARRKIT_THREADS", "-2"), ("ZARRKIT_BOX_BYTES", "1.5"),
    ("ZARRKIT_SLOW_HUGE_PAGE", "slow")])
def test_a_setting_that_is_no_number_fails_the_import_naming_it(name, value):
    code = ("import sys\ntry:\n    import zarrkit\nexcept Exception as e:\n"
            "    print(type(e).__module__, type(e).__name__, e)")
    done = _imported_with(name, value, code)
    assert done.stdout.strip() == (f"zarrkit.errors ConfigError environment variable "
                                   f"{name}={value!r}: expected "
                                   f"{'a number' if 'PAGE' in name else 'an integer'} >= 0")


def test_reads_and_writes_are_whole_with_no_scratch_buffer_kept(tmp_path, monkeypatch):
    """With a budget of nothing, every use of a scratch buffer gets memory of its own: what
    each path writes there is used before the next asks again."""
    from zarrkit import scratch

    monkeypatch.setattr(scratch, "SCRATCH_BUDGET", 0)
    monkeypatch.setattr(scratch, "_local", threading.local())  # no thread has one yet
    data = np.arange(256 * 300, dtype="uint16").reshape(256, 300) % 1000
    blosc = {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2}
    for shards, codec, config in ((None, "zstd", {"level": 3}), ((128, 150), "blosc", blosc),
                                  (None, "gzip", {"level": 1})):
        a = zarrkit.create(tmp_path / f"{codec}.zarr", shape=data.shape, dtype=data.dtype,
                           chunks=(32, 50), shards=shards,
                           compressors=[{"name": codec, "configuration": config}])
        a[...] = data
        a[5:77, 3:201] = data[5:77, 3:201] + 1
        expected = data.copy()
        expected[5:77, 3:201] += 1
        np.testing.assert_array_equal(a[...], expected)
        np.testing.assert_array_equal(a[100:200, 17:290], expected[100:200, 17:290])
        np.testing.assert_array_equal(a[[3, 200], 7], expected[[3, 200], 7])


@pytest.mark.parametrize("dtype", ["O", [("a", "<i4"), ("b", "<f8", (2,))], "M8[s]", "S7"])
def test_fault_in_keeps_every_dtype_whole(monkeypatch, dtype):
    from zarrkit import scratch

    monkeypatch.setattr(scratch, "SLOW_HUGE_PAGE", -1.0)
    out = scratch.empty((1 << 20,), np.dtype(dtype), touch=False)
    scratch.fault_in(out[3:])  # an unaligned piece, as the parallel fault-in passes
    if out.dtype == object:  # references left alone (numpy made them None)
        assert all(v is None for v in out.tolist())
    out[...] = np.zeros(1, out.dtype)[0] if out.dtype != object else "x"
    assert (out == out[0]).all()


def test_fault_in_touches_each_whole_huge_page_once_through_ctypes(monkeypatch):
    # The touch is a ctypes call (it lets the GIL go while the kernel zeroes the page): one
    # per huge page that lies wholly inside the piece, and nothing outside it.
    from zarrkit import scratch

    monkeypatch.setattr(scratch, "_huge", True)  # the loop runs whether the kernel obliges
    monkeypatch.setattr(scratch, "SLOW_HUGE_PAGE", 60.0)
    touched = []
    real = scratch._touch
    monkeypatch.setattr(scratch, "_touch", lambda at, v, n: (touched.append((at, v, n)),
                                                             real(at, v, n)))
    out = scratch.empty((8 << 20,), np.dtype("uint16"), touch=False)  # 16 MiB
    part = out[3:]
    scratch.fault_in(part)
    lo, hi, huge = part.ctypes.data, part.ctypes.data + part.nbytes, 1 << 21
    expected = list(range(-(-lo // huge) * huge, hi - huge + 1, huge))
    assert touched == [(at, 0, 1) for at in expected] and len(expected) >= 7


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="Linux /proc needed to look")
@pytest.mark.parametrize("populate", [True, False])  # False: a kernel before 5.14 refuses it
def test_small_pages_are_faulted_in_by_one_call_or_a_touch_each(monkeypatch, populate):
    """After a slow huge page the rest of a piece goes on small pages, asked of the kernel by
    one madvise (MADV_POPULATE_WRITE) where it can, else touched a page at a time."""
    from zarrkit import scratch

    if scratch._madvise_fn is None:
        pytest.skip("no madvise here")
    monkeypatch.setattr(scratch, "_huge", True)
    monkeypatch.setattr(scratch, "SLOW_HUGE_PAGE", -1.0)  # the first huge page is slow
    asked = []
    real = scratch._madvise_fn
    monkeypatch.setattr(scratch, "_madvise_fn", lambda at, size, advice: (
        asked.append((at, size, advice)),
        -1 if advice == scratch._MADV_POPULATE_WRITE and not populate else real(at, size, advice))[1])
    out = scratch.empty((4 << 20,), np.dtype("uint16"), touch=False)  # 8 MiB
    part = out[5:].view(np.uint8)
    scratch.fault_in(part)
    first = -(-part.ctypes.data // (1 << 21)) * (1 << 21) + (1 << 21)  # after the slow one
    end = (part.ctypes.data + part.nbytes) // 4096 * 4096
    assert asked[-2:] == [(first, end - first, scratch._MADV_NOHUGEPAGE),
                          (first, end - first, scratch._MADV_POPULATE_WRITE)]
    assert "nh" in _vm_flags(first)
    rss = _rss_of(first, end)
    assert rss >= end - first  # every small page is there, by either way


def _rss_of(lo: int, hi: int) -> int:
    """Bytes of the mappings overlapping [lo, hi) that are resident (from /proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                a, b = (int(x, 16) for x in head.split("-"))
                inside = a < hi and lo < b
            elif inside and head == "Rss:":
                total += int(line.split()[1]) * 1024
    return total


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="Linux /proc needed to look")
@pytest.mark.parametrize("huge", [True, False])  # False: the kernel has huge pages turned off
def test_reads_fall_back_to_small_pages_correctly(tmp_path, monkeypatch, huge):
    from zarrkit import scratch

    monkeypatch.setattr(scratch, "SLOW_HUGE_PAGE", -1.0)
    monkeypatch.setattr(scratch, "_huge", huge)
    data = np.arange(2048 * 1536, dtype="uint32").reshape(2048, 1536)  # 12 MiB
    z = zarrkit.create(str(tmp_path / "a"), shape=data.shape, dtype=data.dtype, chunks=(512, 512))
    z[...] = data
    z[:512, :512] = 0  # a missing (fill-value) chunk too
    data[:512, :512] = 0
    assert np.array_equal(z[...], data)


@pytest.mark.parametrize("shards", [None, (400, 420)])
def test_zstd_partial_decodes_stop_after_the_rows_read(tmp_path, monkeypatch, shards,
                                                       zstd_decoder):
    data = (np.arange(400 * 420, dtype="uint32").reshape(400, 420) * 2654435761 % 1000
            ).astype("uint32")
    a = zarrkit.create(str(tmp_path / "a"), shape=data.shape, dtype="uint32",
                       chunks=(200, 210),  # 164 KiB: two zstd blocks
                       shards=shards, codecs=[{"name": "bytes"}, {"name": "zstd"}])
    a[...] = data
    stops = []
    real = CodecChain.decode_prefix_transient

    def counting(self, encoded, nbytes):
        got = real(self, encoded, nbytes)
        stops.append(None if got is None else nbytes)
        return got
    monkeypatch.setattr(CodecChain, "decode_prefix_transient", counting)
    for sel in (np.s_[0:5, 3:50], np.s_[201:203, :], np.s_[7, 10:370], np.s_[9:2:-3, ::5],
                np.s_[:, 4], np.s_[225:299, 1:383]):
        np.testing.assert_array_equal(a[sel], data[sel], err_msg=str(sel))
    assert stops and all(s is not None for s in stops)
    assert 5 * 210 * 4 in stops and 8 * 210 * 4 in stops  # rows 0-4; and rows 0-7 for row 7
    stops.clear()
    np.testing.assert_array_equal(a[150:160, 7:9], data[150:160, 7:9])
    # 160 of 200 rows: libzstd streams them at about the cost of one call; python-zstandard's
    # stream costs more than decoding it whole.
    assert stops == ([160 * 210 * 4] if zstd_decoder == "libzstd" else [None])


def test_zstd_decode_prefix_checks_what_it_decodes(zstd_decoder):
    from zarrkit.codecs.zstd import ZstdCodec

    spec = ChunkSpec((50000,), np.dtype("uint32"), np.uint32(0))
    data = (np.arange(50000, dtype="uint32") * 7919 % 5000).astype("uint32")
    raw = memoryview(data.view(np.uint8))
    dest = memoryview(bytearray(200000))
    frame = bytes(ZstdCodec(3).encode(raw, spec))
    assert ZstdCodec().decode_prefix(frame, spec, 200000, 12000, dest)
    assert bytes(dest[:12000]) == bytes(raw[:12000])
    assert not ZstdCodec().decode_prefix(frame, spec, 200000, 200000, dest)  # all: decode whole
    # Most of it: a prefix with libzstd (its stream costs what one call does), whole otherwise.
    dest[:] = bytes(200000)
    most = ZstdCodec().decode_prefix(frame, spec, 200000, 150000, dest)
    assert most == (zstd_decoder == "libzstd")
    assert bytes(dest[:150000]) == (bytes(raw[:150000]) if most else bytes(150000))
    small = bytes(ZstdCodec(3).encode(raw[:4000], spec))
    assert not ZstdCodec().decode_prefix(small, spec, 4000, 1200, dest)  # one block: whole
    checked = bytes(ZstdCodec(3, checksum=True).encode(raw, spec))
    assert not ZstdCodec().decode_prefix(checked, spec, 200000, 12000, dest)  # a checksum
    import zstandard

    unsized = zstandard.ZstdCompressor(write_content_size=False).compress(bytes(raw))
    assert not ZstdCodec().decode_prefix(unsized, spec, 200000, 12000, dest)
    with pytest.raises(CorruptDataError, match="frame ends after"):
        ZstdCodec().decode_prefix(frame[:20], spec, 200000, 30000, dest)


def _peak_threads(width: int) -> int:
    import threading
    import time

    from zarrkit.engine import executor

    lock, active, peak = threading.Lock(), [0], [0]

    def work(_: int) -> None:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.005)
        with lock:
            active[0] -= 1
    executor.run_all(work, range(60), width)
    return peak[0]


def test_local_work_keeps_its_width_after_a_network_store_grows_the_pool():
    from zarrkit.engine import executor

    width = executor.concurrency()
    executor.ensure_concurrency(width + 6)  # what a network store does
    assert executor.concurrency() == width
    assert _peak_threads(0) == width  # the caller's thread among them
    assert _peak_threads(width + 6) > width  # a network store's own work


def test_transient_encodes_match_and_only_live_until_the_next():
    chain = CodecChain.from_json(CHAINS["blosc"][0], ChunkSpec((64, 64), np.dtype("uint16"),
                                                                np.uint16(0)))
    first, second = (np.arange(64 * 64, dtype="uint16").reshape(64, 64) * k for k in (3, 5))
    kept = chain.encode(first)
    assert type(kept) is bytes  # an owned result survives later encodes
    transient = chain.encode(first, transient=True)
    assert bytes(transient) == kept
    assert bytes(chain.encode(second, transient=True)) == bytes(chain.encode(second))
    assert bytes(transient[:len(kept)]) != kept  # the thread's buffer was reused
    assert bytes(chain.encode(first)) == kept


@pytest.mark.parametrize("store", ["file", "memory", "zip"])
def test_writes_store_transient_encodings_intact(tmp_path, store):
    """Many chunks encoded on a few threads, each stored before its thread encodes again."""
    data = (np.arange(1200 * 1210, dtype="uint32").reshape(1200, 1210) * 7919 % 65000).astype("uint16")
    where = {"file": str(tmp_path / "a"), "memory": MemoryStore(),
             "zip": ZipStore(str(tmp_path / "a.zip"), mode="w")}[store]
    z = zarrkit.create(where, shape=data.shape, dtype=data.dtype, chunks=(200, 210),
                       codecs=CHAINS["blosc"][0])  # 82 KB chunks: written on the pool
    z[...] = data
    z[5:795, 7:911] = data[:790, :904] // 2  # read-modify-writes too
    expected = data.copy()
    expected[5:795, 7:911] = data[:790, :904] // 2
    np.testing.assert_array_equal(z[...], expected)


@pytest.mark.parametrize("location", ["start", "end"])
def test_pack_transient_builds_the_same_shard_as_encode_shard(location, monkeypatch):
    from zarrkit import scratch

    spec = ChunkSpec((8, 9), np.dtype("uint16"), np.uint16(0))
    chain = CodecChain.from_json([{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 3], "codecs": CHAINS["blosc"][0], "index_location": location,
        "index_codecs": INDEX_CODECS}}], spec)
    bound = chain.array_bytes
    rng = np.random.default_rng(1)
    chunks = {(i, j): bound.inner.encode(rng.integers(0, 9, (4, 3), dtype="uint16"))
              for i, j in [(0, 1), (1, 0), (1, 2)]}
    expected = bytes(bound.encode_shard(chunks))
    scratch.trim_scratch("shard")
    monkeypatch.setattr(scratch, "SCRATCH_LIMIT", 0)  # let the buffer go after each shard
    flats = [(i * 3 + j, chunks[i, j]) for i, j in sorted(chunks)]
    assert bytes(bound.pack_transient(iter(flats))) == expected  # grows from an index's size
    assert getattr(scratch._local, "shard", None) is None  # above the limit: not kept
    monkeypatch.setattr(scratch, "SCRATCH_LIMIT", 8 << 20)
    assert bytes(bound.pack_transient(iter(flats))) == expected
    assert bytes(bound.pack_transient(iter(flats))) == expected  # the kept buffer, reused
    assert bound.pack_transient(iter([])) is None
    decoded = chain.decode(expected)
    for (i, j), data in chunks.items():
        np.testing.assert_array_equal(decoded[4 * i:4 * i + 4, 3 * j:3 * j + 3],
                                      bound.inner.decode(data))


@pytest.mark.parametrize("location", ["start", "end"])
def test_whole_shard_writes_assemble_in_the_thread(tmp_path, location):
    chain = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(INNER), "codecs": CHAINS["blosc"][0], "index_location": location,
        "index_codecs": INDEX_CODECS}}]
    z = zarrkit.create(str(tmp_path / "a"), shape=SHAPE, dtype="uint16", chunks=SHARD,
                       codecs=chain, fill_value=0)
    data = _data("uint16")
    data[:20, :30] = 0  # one whole shard of fill values: not stored
    z[...] = data
    assert z.store.get("c/0/0") is None
    np.testing.assert_array_equal(z[...], data)
    z[...] = data[::-1].copy()  # rewritten whole: no old bytes survive
    np.testing.assert_array_equal(z[...], data[::-1])


def _holey(path, sharded: bool, cached: bool) -> tuple[Any, np.ndarray]:
    """A 2048 x 1536 float32 array (12 MiB, so reads fault in fresh pages) with fill value 7.5:
    one chunk and (sharded) one whole shard missing."""
    layout = zarrkit.ChunkLayout(read_chunk_shape=[128, 128], write_chunk_shape=[512, 512]) \
        if sharded else zarrkit.ChunkLayout(chunk_shape=[256, 256])
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}
    a = zarrkit.open(spec, create=True, dtype="float32", shape=[2048, 1536], chunk_layout=layout,
                     fill_value=7.5)
    data = np.arange(2048 * 1536, dtype="float32").reshape(2048, 1536)
    data[256:384, 128:256] = 7.5  # a chunk (inner chunk) of fill values: not stored
    data[1024:1536, 512:1024] = 7.5 if sharded else data[1024:1536, 512:1024]
    a[...] = data
    if sharded:
        assert a.store.get("c/2/1") is None  # the whole shard was left out
    context = {"cache_pool": {"total_bytes_limit": 64 << 20}} if cached else None
    return zarrkit.open(spec, context=context, recheck_cached_data=False), data


@pytest.mark.parametrize("sharded", [False, True])
@pytest.mark.parametrize("cached", [False, True])
@pytest.mark.parametrize("selection", [np.s_[...], np.s_[100:2000, 3:1500], np.s_[::3, 5:],
                                       np.s_[[5, 300, 1100, 1300], :]])
def test_missing_chunks_read_as_the_fill_value_on_every_path(tmp_path, sharded, cached,
                                                             selection):
    a, data = _holey(tmp_path / "a", sharded, cached)
    for _ in range(2):  # the second read of a cached array is served from the cache
        np.testing.assert_array_equal(a[selection], data[selection])
    points = (np.array([300, 1200, 5]), np.array([200, 700, 9]))
    np.testing.assert_array_equal(a.vindex[points], data[points])


# -- whole chunks decoded straight into the output -----------------------------------------------
# Chunks (or columns of inner chunks) as wide as the array's trailing dimensions fill one
# contiguous run of the output: they skip the scratch buffer and the copy.
ROW_LAYOUTS = {  # shape, chunks, shards (None: unsharded); the last chunk/shard cut short
    "1d": ((1000,), (64,), None),
    "rows": ((70, 24), (8, 24), None),
    "1d-sharded": ((1000,), (16,), (128,)),
    "rows-sharded": ((70, 24), (4, 24), (16, 24)),
    "3d-sharded": ((51, 4, 5), (2, 4, 5), (8, 4, 5)),
}
ROW_SELECTIONS = [np.s_[...], np.s_[16:48], np.s_[5:61], np.s_[::-1], np.s_[::2], np.s_[-3:],
                  np.s_[[1, 40, 17]], np.s_[7]]


def _rows_array(path, layout: str, chain) -> tuple[zarrkit.Array, np.ndarray]:
    shape, chunks, shards = ROW_LAYOUTS[layout]
    a = zarrkit.create(str(path), shape=shape, dtype="int32", chunks=chunks, shards=shards,
                       codecs=chain, fill_value=-5)
    expected = np.arange(np.prod(shape), dtype="int32").reshape(shape) // 3
    expected[16:32] = -5  # fill values: a chunk (or inner chunks) not stored
    a[...] = expected
    # A missing chunk, or (sharded) a missing shard: the second one along the first axis.
    gone = 2 if shards is None else 1
    a.store.delete("c/" + "/".join([str(gone)] + ["0"] * (len(shape) - 1)))
    height = (shards or chunks)[0]
    expected[gone * height:(gone + 1) * height] = -5
    return a, expected


@pytest.fixture
def straight(monkeypatch):
    """How many chunks and slabs were decoded straight into the output, and how many slabs went
    through the box buffer."""
    seen = {"chunks": 0, "boxes": 0, "slabs": 0}
    real_load, real_place, real_slab = chunk_io._load_into, chunk_io._place_box, \
        chunk_io._read_slab

    def load(*args):
        seen["chunks"] += 1
        real_load(*args)

    def place(*args):
        seen["boxes"] += 1
        real_place(*args)

    def slab(*args):
        seen["slabs"] += 1
        real_slab(*args)
    monkeypatch.setattr(chunk_io, "_load_into", load)
    monkeypatch.setattr(chunk_io, "_place_box", place)
    monkeypatch.setattr(chunk_io, "_read_slab", slab)
    return seen


@pytest.mark.parametrize("layout", ROW_LAYOUTS)
@pytest.mark.parametrize("name", ["bytes", "blosc", "zstd", "blosc+crc32c", "big-endian"])
def test_whole_chunks_decode_straight_into_the_output(tmp_path, layout, name, straight):
    chain, direct = CHAINS[name]
    a, expected = _rows_array(tmp_path / "a", layout, chain)
    for sel in ROW_SELECTIONS:
        np.testing.assert_array_equal(a[sel], expected[sel], err_msg=f"{layout} {name} {sel}")
    sharded = ROW_LAYOUTS[layout][2] is not None
    if not direct:  # a byte order to swap: through the scratch buffer and a copy
        assert straight["chunks"] == 0 and straight["slabs"] == straight["boxes"]
    elif sharded:  # every slab but the ones cut short by the array's end
        assert 0 < straight["boxes"] < straight["slabs"]
    else:
        assert straight["chunks"] > 0 and straight["boxes"] == 0


def test_straight_decodes_skip_cut_chunks_and_cached_arrays(tmp_path, straight):
    a, expected = _rows_array(tmp_path / "a", "1d", CHAINS["blosc"][0])
    np.testing.assert_array_equal(a[960:], expected[960:])  # the last chunk, cut short
    np.testing.assert_array_equal(a[10:60], expected[10:60])  # part of a chunk
    assert straight["chunks"] == 0
    np.testing.assert_array_equal(a[64:192], expected[64:192])  # two whole chunks
    assert straight["chunks"] == 2
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "a")}}
    cached = zarrkit.open(spec, context={"cache_pool": {"total_bytes_limit": 1 << 20}})
    np.testing.assert_array_equal(cached[...], expected)  # cached chunks are kept: no direct
    assert straight["chunks"] == 2


@pytest.mark.parametrize("layout", ["1d", "1d-sharded"])
def test_corrupt_chunk_decoded_straight_raises(tmp_path, layout, straight):
    a, _ = _rows_array(tmp_path / "a", layout, CHAINS["blosc"][0])
    path = tmp_path / "a" / "c" / "0"
    raw = bytearray(path.read_bytes())
    raw[:16] = bytes(16)  # the first (inner) chunk's blosc header
    path.write_bytes(bytes(raw))
    where = r"shard 'c/0', inner chunk at bytes \d+\+\d+" if "sharded" in layout else "chunk 'c/0'"
    with pytest.raises(CorruptDataError, match=where + ": blosc"):
        a[...]
    assert straight["chunks"] + straight["slabs"] > 0


def test_zero_dimensional_chunks_are_copied(tmp_path, straight):
    a = zarrkit.create(str(tmp_path / "a"), shape=(), dtype="int32", fill_value=3)
    assert a[...] == 3
    a[...] = 5
    assert a[...] == 5 and a[()] == 5
    assert straight["chunks"] == 0  # indexing a 0-d output gives a scalar, not a view


@pytest.mark.parametrize("name", CHAINS)
def test_large_chunks_decode_from_the_transient_read_buffer(tmp_path, name, monkeypatch):
    """Stored chunks of 128 KiB or more are read into the thread's reused buffer (a writable
    view, not bytes) and every codec chain decodes them from there, checksums included."""
    seen = []
    real = FileStore.get_transient

    def spy(self, key):
        value = real(self, key)
        seen.append(type(value))
        return value
    monkeypatch.setattr(FileStore, "get_transient", spy)
    rng = np.random.default_rng(3)
    data = rng.random((300, 260))  # float64, barely compressible: stored chunks ~500 KiB
    a = zarrkit.create(str(tmp_path / "a"), shape=data.shape, dtype="float64",
                       chunks=(256, 256), codecs=CHAINS[name][0])
    a[...] = data
    for sel in (np.s_[...], np.s_[10:200, 5:250], np.s_[::3, 100:]):
        np.testing.assert_array_equal(a[sel], data[sel], err_msg=f"{name} {sel}")
    assert memoryview in seen
    if name == "blosc+crc32c":
        path = tmp_path / "a" / "c" / "0" / "0"
        raw = bytearray(path.read_bytes())
        raw[1000] ^= 0xFF
        path.write_bytes(bytes(raw))
        with pytest.raises(CorruptDataError, match="chunk 'c/0/0'"):
            a[...]


@pytest.mark.parametrize("codec, inline", [(BLOSC_LZ4, True), ({"name": "zstd"}, False)])
def test_a_small_region_across_shards_is_read_in_the_calling_thread(tmp_path, monkeypatch, codec,
                                                                    inline):
    # Four shards of one inner chunk each: fast codecs decode them in less time than handing
    # them to the pool costs; slow ones (four 32 KiB zstd chunks) are worth spreading.
    data = (np.arange(512 * 512, dtype="uint32") * 2654435761 % 9973).astype("uint16").reshape(512, 512)
    zarrkit.create(str(tmp_path / "a"), shape=data.shape, dtype="uint16", chunks=(128, 128),
                   shards=(256, 256), codecs=[{"name": "bytes"}, codec])[...] = data
    handed, real = [], chunk_io.run_all

    def spy(fn, items, width=0):
        handed.append(len(items))
        return real(fn, items, width)
    monkeypatch.setattr(chunk_io, "run_all", spy)
    reader = zarrkit.open_array(str(tmp_path / "a"))
    np.testing.assert_array_equal(reader[200:300, 200:300], data[200:300, 200:300])
    assert (4 in handed) != inline  # the four shards, handed to the pool or not

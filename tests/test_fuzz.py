"""Fuzzing every input zarrkit parses: metadata documents, chunk and shard bytes, selections, node
names, URLs and kvstore specs.

The contract under test: a bad input raises a `zarrkit.errors.ZarrkitError` (or, for
selections, gives numpy's answer); nothing else escapes, nothing hangs (each case runs under a
timer), and corrupt sizes inside stored bytes (a shard index entry claiming 2**62 bytes, a zip
entry claiming gigabytes) never make zarrkit allocate more than the metadata declares (peaks are
measured with tracemalloc).

Inputs come from hypothesis (derandomized) and from seeded mutation of valid documents and of
valid chunk and shard bytes. Figures are printed per category; run with `-s` to see them.
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
import signal
import struct
import traceback
import tracemalloc
from collections import Counter
from contextlib import contextmanager

import crc32c
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrkit
from zarrkit.errors import CorruptDataError, ZarrkitError
from zarrkit.kvstore import open_kvstore
from zarrkit.kvstore.file import FileStore
from zarrkit.kvstore.memory import MemoryStore
from zarrkit.kvstore.url import kvstore_spec_to_url, normalize_kvstore_spec, parse_kvstore_url
from zarrkit.kvstore.zip import ZipStore

CASE_SECONDS = 10  # a case still running after this is a hang
MEMORY_BOUND = 32 << 20  # bytes a corrupt-data case may allocate beyond its baseline
FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


class CaseTimeout(BaseException):
    """Raised by the timer: a BaseException, so no `except Exception` inside can swallow it."""


@contextmanager
def time_limit(seconds: float):
    def expire(signum, frame):
        raise CaseTimeout(f"case ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Tally:
    """Cases run and foreign exceptions seen, per category."""

    def __init__(self, category: str) -> None:
        self.category = category
        self.cases = 0
        self.refused = 0  # cases that raised a ZarrkitError (the rest succeeded)
        self.foreign: Counter = Counter()
        self.examples: dict = {}
        self.peak = 0

    def run(self, fn, *args, measure: bool = False) -> object:
        self.cases += 1
        if measure:
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
        try:
            with time_limit(CASE_SECONDS):
                return fn(*args)
        except ZarrkitError:
            self.refused += 1
            return None
        except (Exception, CaseTimeout) as e:  # noqa: BLE001 - the very thing we count
            frame = traceback.extract_tb(e.__traceback__)[-1]
            where = (type(e).__name__, os.path.basename(frame.filename), frame.lineno)
            self.foreign[where] += 1
            self.examples.setdefault(where, (repr(args)[:300], repr(e)[:300]))
            return None
        finally:
            if measure:
                self.peak = max(self.peak, tracemalloc.get_traced_memory()[1] - base)

    def check(self) -> None:
        print(f"\nfuzz [{self.category}]: cases={self.cases} refused={self.refused} "
              f"foreign_exceptions={sum(self.foreign.values())} peak_alloc={self.peak >> 10} KiB")
        assert not self.foreign, "\n".join(f"{n} x {w}: {self.examples[w]}"
                                           for w, n in self.foreign.most_common())
        assert self.peak <= MEMORY_BOUND


@pytest.fixture
def traced():
    tracemalloc.start()
    yield
    tracemalloc.stop()


# -- valid starting points ---------------------------------------------------------------------
_ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": True}}
_GZIP = {"name": "gzip", "configuration": {"level": 1}}
_BLOSC = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 1, "shuffle": "shuffle"}}
ARRAYS = [
    dict(shape=(10, 7), dtype="float32", chunks=(4, 3)),
    dict(shape=(12, 10), dtype="int16", chunks=(2, 5), shards=(6, 10), fill_value=3),
    dict(shape=(12, 10), dtype="uint8", chunks=(3, 5), shards=(6, 10), index_location="start",
         compressors=[_GZIP]),
    dict(shape=(5,), dtype="complex64", chunks=(2,), compressors=[_GZIP]),
    dict(shape=(6, 6), dtype="uint8", chunks=(3, 3), compressors=[_BLOSC],
         chunk_key_encoding={"name": "v2", "configuration": {"separator": "."}},
         dimension_names=["y", None]),
    dict(shape=(8, 6), dtype="float64", chunks=(4, 3), compressors=[_ZSTD, {"name": "crc32c"}],
         filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}]),
    dict(shape=(), dtype="float64", chunks=(), fill_value=float("nan")),
    dict(shape=(4,), dtype="bool", chunks=(2,), attributes={"a": [1, {"b": None}]}),
]


def _populated(kwargs: dict) -> MemoryStore:
    store = MemoryStore()
    a = zarrkit.create(store, **kwargs)
    a[...] = (np.arange(max(a.size, 1))[:a.size].reshape(a.shape) % 5 + 1).astype(a.dtype)
    return store


def _group_store() -> MemoryStore:
    store = MemoryStore()
    g = zarrkit.open_group(store, mode="w", attributes={"x": 1})
    g.create_group("child")
    return store


@pytest.fixture(scope="module")
def sources() -> list[MemoryStore]:
    return [_populated(kw) for kw in ARRAYS] + [_group_store()]


def _copy(store: MemoryStore) -> MemoryStore:
    out = MemoryStore()
    for key in store.list_prefix(""):
        out.set(key, store.get(key))
    return out


def exercise(store) -> None:
    """Open read-only and use every read path; then write (partial writes read chunks)."""
    node = zarrkit.open(store, mode="r")
    repr(node)
    str(node.attrs)
    str(node.metadata)
    if isinstance(node, zarrkit.Group):
        node.keys()
        node.tree()
        return
    str(node.info)
    if node.size:
        node[(0,) * node.ndim]
        node[tuple(slice(1, None, 2) for _ in node.shape)]
        node.oindex[tuple([0, -1] for _ in node.shape)]
    if node.size and node.size <= 1 << 16:
        node[...]
        w = zarrkit.open(store, mode="r+")
        w[(0,) * w.ndim] = w.fill_value
        w[...] = w[...]


# -- metadata documents ------------------------------------------------------------------------
_PALETTE = [None, True, False, 0, -1, 1, 2**31, 2**63, 2**64, -(2**63) - 1, 10**30, 1.5, -0.0,
            1e308, "", "x", "NaN", "Infinity", "0x7fc00000", "bytes", "regular", "\x00", [], [0],
            [-1], [2**62, 2**62], [1.5], ["a"], [None], {}, {"name": "x"},
            {"must_understand": False}, {"name": "bytes", "configuration": {"endian": "big"}},
            {"name": "sharding_indexed", "configuration": {
                "chunk_shape": [1], "codecs": [{"name": "bytes"}],
                "index_codecs": [{"name": "bytes"}]}}]
_DEEP = "<<deep %d>>"


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _mutate_document(doc: dict, r: random.Random) -> dict:
    doc = copy.deepcopy(doc)
    for _ in range(r.randint(1, 3)):
        paths = list(_paths(doc))[1:]
        if not paths:
            break
        path = r.choice(paths)
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        action = r.random()
        if action < 0.6:  # type swap / huge number / nested garbage
            value = _DEEP % r.choice([60, 900, 20000]) if r.random() < 0.05 else r.choice(_PALETTE)
            parent[path[-1]] = copy.deepcopy(value)
        elif action < 0.8:  # a missing member
            del parent[path[-1]]
        elif isinstance(parent, dict):  # an extra member
            parent[r.choice(["extra", "name", "configuration", "must_understand", "shape"])] = \
                copy.deepcopy(r.choice(_PALETTE))
        else:
            parent.append(copy.deepcopy(r.choice(_PALETTE)))
    return doc


_TYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "float32", "float64",
          "complex64", "complex128", "bfloat16", "int4", "r16", "uint64"]
_CHAINS = [[{"name": "bytes", "configuration": {"endian": "big"}}], [{"name": "bytes"}, _GZIP],
           [{"name": "bytes"}, _ZSTD], [{"name": "bytes"}, _BLOSC],
           [{"name": "bytes"}, {"name": "crc32c"}],
           [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes"}]]


def _retarget(doc: dict, r: random.Random) -> dict:
    """A valid-looking change that no longer matches the stored chunks."""
    doc = copy.deepcopy(doc)
    ndim = len(doc.get("shape", []))
    choice = r.randrange(5)
    if choice == 0:
        doc["data_type"] = r.choice(_TYPES)
        doc["fill_value"] = 0
    elif choice == 1:
        doc["chunk_grid"]["configuration"]["chunk_shape"] = [r.randint(1, 7) for _ in range(ndim)]
    elif choice == 2:
        doc["shape"] = [r.randint(0, 20) for _ in range(ndim)]
    elif choice == 3 and doc["codecs"][0]["name"] == "sharding_indexed":
        config = doc["codecs"][0]["configuration"]
        config[r.choice(["chunk_shape", "index_location", "codecs", "index_codecs"])] = \
            r.choice([[r.randint(1, 6) for _ in range(ndim)], "start", "end",
                      r.choice(_CHAINS), [{"name": "bytes"}]])
    else:
        doc["codecs"] = copy.deepcopy(r.choice(_CHAINS))
    return doc


def _document_text(doc: dict) -> bytes:
    text = json.dumps(doc)
    # Deep nesting is spliced into the text: building it as Python objects would recurse.
    return re.sub(r'"<<deep (\d+)>>"', lambda m: "[" * int(m[1]) + "0" + "]" * int(m[1]),
                  text).encode()


def _mutate_bytes(data: bytes, r: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(r.randint(1, 4)):
        op = r.randrange(6)
        if op == 0 and b:  # bit flip
            i = r.randrange(len(b))
            b[i] ^= 1 << r.randrange(8)
        elif op == 1:  # truncation
            del b[r.randrange(len(b) + 1):]
        elif op == 2:  # trailing garbage
            b += r.randbytes(r.randint(1, 16))
        elif op == 3:  # invalid UTF-8, huge numbers, unbalanced brackets
            i = r.randrange(len(b) + 1)
            b[i:i] = r.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\\u0000", b"1e999",
                               b"9" * 5000, b"-", b"[[[[", b"{", b"\\ud800"])
        elif op == 4 and b:  # swapped bytes
            i, j = r.randrange(len(b)), r.randrange(len(b))
            b[i], b[j] = b[j], b[i]
        else:  # a byte order mark
            b[:0] = b"\xef\xbb\xbf"
    return bytes(b)


def test_mutated_metadata_documents(sources):
    tally = Tally("metadata documents, structural mutations")
    r = random.Random(11)
    for _ in range(900):
        source = r.choice(sources)
        store = _copy(source)
        doc = json.loads(bytes(source.get("zarr.json")))
        if doc["node_type"] == "array" and r.random() < 0.5:
            doc = _retarget(doc, r)
        else:
            doc = _mutate_document(doc, r)
        store.set("zarr.json", _document_text(doc))
        tally.run(exercise, store)
    tally.check()


def test_mutated_metadata_bytes(sources):
    tally = Tally("metadata documents, byte mutations")
    r = random.Random(12)
    for _ in range(700):
        source = r.choice(sources)
        store = _copy(source)
        store.set("zarr.json", _mutate_bytes(bytes(source.get("zarr.json")), r))
        tally.run(exercise, store)
    tally.check()


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=12)
_KEYS = st.sampled_from(["zarr_format", "node_type", "shape", "data_type", "chunk_grid",
                         "chunk_key_encoding", "fill_value", "codecs", "attributes",
                         "dimension_names", "storage_transformers", "extra"])


@FUZZ
@given(source=st.integers(0, len(ARRAYS)), key=_KEYS, value=_JSON)
def test_generated_metadata_members(sources, source, key, value):
    """A member of a valid document replaced by arbitrary JSON."""
    tally = Tally("metadata members, hypothesis")
    store = _copy(sources[source])
    doc = json.loads(bytes(store.get("zarr.json")))
    doc[key] = value
    store.set("zarr.json", json.dumps(doc).encode())
    tally.run(exercise, store)
    assert not tally.foreign, tally.examples


@FUZZ
@given(data=st.binary(max_size=300) | _JSON.map(lambda v: json.dumps(v).encode()))
def test_generated_metadata_documents(data):
    tally = Tally("metadata documents, hypothesis")
    store = MemoryStore()
    store.set("zarr.json", data)
    tally.run(exercise, store)
    assert not tally.foreign, tally.examples


# -- chunk and shard bytes ---------------------------------------------------------------------
def _corrupt(data: bytes, r: random.Random) -> bytes:
    b = bytearray(data)
    op = r.randrange(5)
    if op == 0 and b:
        for _ in range(r.randint(1, 3)):
            i = r.randrange(len(b))
            b[i] ^= 1 << r.randrange(8)
    elif op == 1:
        del b[r.randrange(len(b) + 1):]
    elif op == 2:
        b += r.randbytes(r.randint(1, 64))
    elif op == 3:
        b = bytearray(r.randbytes(r.randint(0, 200)))
    else:
        del b[:r.randint(1, 16)]
    return bytes(b)


def _chunk_keys(store) -> list[str]:
    return sorted(k for k in store.list_prefix("") if not k.endswith("zarr.json"))


def test_corrupt_chunk_and_shard_bytes(sources, traced):
    tally = Tally("chunk and shard bytes, mutations")
    r = random.Random(13)
    for _ in range(700):
        store = _copy(r.choice(sources[:-2]))  # the arrays with stored chunks
        keys = _chunk_keys(store)
        for key in r.sample(keys, min(len(keys), r.randint(1, 2))):
            store.set(key, _corrupt(bytes(store.get(key)), r))
        tally.run(exercise, store, measure=True)
    tally.check()


_INDEX_ATTACKS = ("outside", "huge", "wrapping", "overlap", "half_empty", "whole_shard",
                  "huge_offset")


def _attack_index(shard: bytes, r: random.Random, entries: int, at_start: bool) -> bytes:
    """Rewrite one entry of a shard's index (with a valid CRC-32C, so it is believed)."""
    size = entries * 16 + 4
    pos = 0 if at_start else len(shard) - size
    index = np.frombuffer(shard[pos:pos + entries * 16], "<u8").reshape(-1, 2).copy()
    k = r.randrange(entries)
    attack = r.choice(_INDEX_ATTACKS)
    if attack == "outside":
        index[k] = (len(shard) + r.randint(0, 100), 10)
    elif attack == "huge":
        index[k, 1] = 2**62
    elif attack == "wrapping":
        index[k] = (2**64 - 5, 10)
    elif attack == "overlap":
        index[k] = index[(k + 1) % entries]
    elif attack == "half_empty":
        index[k, 1] = 2**64 - 1
    elif attack == "whole_shard":
        index[k] = (0, len(shard))
    else:
        index[k] = (2**62, 1)
    raw = index.astype("<u8").tobytes()
    raw += struct.pack("<I", crc32c.crc32c(raw))
    return shard[:pos] + raw + shard[pos + size:]


def test_crafted_shard_indexes(sources, traced):
    tally = Tally("shard indexes pointing outside, huge sizes, overlaps")
    r = random.Random(14)
    sharded = [(1, False), (2, True)]  # ARRAYS entries with shards; index at the end / start
    for _ in range(400):
        number, at_start = r.choice(sharded)
        store = _copy(sources[number])
        key = r.choice(_chunk_keys(store))
        store.set(key, _attack_index(bytes(store.get(key)), r, 3 * 2, at_start))
        tally.run(exercise, store, measure=True)
    tally.check()


@pytest.mark.parametrize("kind", ["file", "zip"])
def test_corrupt_chunks_in_file_and_zip_stores(tmp_path, sources, kind, traced):
    tally = Tally(f"chunk and shard bytes in a {kind} store")
    r = random.Random(15)
    for case in range(60):
        source = r.choice(sources[:-2])
        where = str(tmp_path / f"c{case}.{'zarr' if kind == 'file' else 'zip'}")
        store = FileStore(where) if kind == "file" else ZipStore(where, mode="w")
        keys = _chunk_keys(source)
        doomed = set(r.sample(keys, min(len(keys), 2)))
        for key in source.list_prefix(""):
            value = bytes(source.get(key))
            store.set(key, _corrupt(value, r) if key in doomed else value)
        store.close()
        tally.run(exercise, where, measure=True)
    tally.check()


def test_zip_entry_claiming_gigabytes_allocates_nothing(tmp_path, traced):
    path = str(tmp_path / "big.zip")
    a = zarrkit.create(path, shape=(64,), dtype="uint8", chunks=(64,), compressors=None)
    a[...] = 1
    a.store.close()
    raw = bytearray(open(path, "rb").read())
    patched = 0
    record = raw.find(b"PK\x01\x02")  # central directory records
    while record >= 0:
        name_len = struct.unpack_from("<H", raw, record + 28)[0]
        if raw[record + 46:record + 46 + name_len] == b"c/0":
            struct.pack_into("<II", raw, record + 20, 0x7FFFFFF0, 0x7FFFFFF0)  # the sizes
            patched += 1
        record = raw.find(b"PK\x01\x02", record + 4)
    assert patched == 1
    open(path, "wb").write(bytes(raw))
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    with pytest.raises(CorruptDataError, match="c/0"):
        zarrkit.open_array(path, mode="r")[...]
    assert tracemalloc.get_traced_memory()[1] - base < MEMORY_BOUND


# -- selections --------------------------------------------------------------------------------
_ATOMS = [0, 1, -1, 6, 7, -8, 2**63, -(2**63), 2**70, np.int64(3), np.uint64(2**64 - 1),
          np.int8(-1), True, False, 1.0, np.float32(1), None, Ellipsis, "a", b"x", {}, (),
          object(), 1j]
_BOUNDS = [None, 0, 1, -1, 3, 7, -100, 100, 2**63, -(2**70), 2, 0.5, "x", np.int64(2)]


def _random_index(r: random.Random, shape: tuple[int, ...]):
    x = r.random()
    if x < 0.35:
        return r.choice(_ATOMS)
    if x < 0.7:
        return slice(r.choice(_BOUNDS), r.choice(_BOUNDS), r.choice(_BOUNDS + [0, -2]))
    n = r.randint(0, 4)
    kind = r.randrange(6)
    if kind == 0:
        return [r.randint(-9, 9) for _ in range(n)]
    if kind == 1:
        return np.array([r.randint(0, 9) for _ in range(n)],
                        dtype=r.choice(["int8", "uint8", "int64", "uint64", "float64"]))
    if kind == 2:
        return np.array([r.random() < 0.5 for _ in range(r.choice([3, 4, 5, 7]))])
    if kind == 3:
        return [[1, 2], [3, 4]]
    if kind == 4:
        return np.array([2**63 + 5], dtype="uint64")
    return np.zeros(shape, bool) if r.random() < 0.5 else ["a", 1]


def _selection_case(arrays, data, sel) -> None:
    for a in arrays:
        try:
            expected = data[sel]
        except Exception:  # noqa: BLE001 - numpy refuses it: zarrkit must refuse it cleanly
            expected = None
        try:
            got = a[sel]
        except ZarrkitError:
            got = None
        if expected is not None and got is not None:
            np.testing.assert_array_equal(np.asarray(got), expected)
        for view in (a.oindex, a.vindex):
            try:
                view[sel]
            except ZarrkitError:
                pass
        for target in (a, a.oindex):
            try:
                target[sel] = 5
            except ZarrkitError:
                pass
        a[...] = data


def test_random_selections_read_and_write():
    tally = Tally("selections")
    r = random.Random(16)
    shape = (7, 5, 4)
    data = np.arange(np.prod(shape), dtype="int32").reshape(shape)
    arrays = [zarrkit.create(MemoryStore(), shape=shape, dtype="int32", chunks=(3, 2, 4),
                             shards=(6, 4, 4)),
              zarrkit.create(MemoryStore(), shape=shape, dtype="int32", chunks=(3, 2, 3))]
    for a in arrays:
        a[...] = data
    for _ in range(600):
        sel = _random_index(r, shape) if r.random() < 0.2 else \
            tuple(_random_index(r, shape) for _ in range(r.randint(0, 5)))
        tally.run(_selection_case, arrays, data, sel)
    tally.check()


_INDEX = st.one_of(st.integers(-2**64, 2**64), st.none(), st.just(Ellipsis),
                   st.builds(slice, st.none() | st.integers(-20, 20),
                             st.none() | st.integers(-20, 20), st.none() | st.integers(-5, 5)),
                   st.lists(st.integers(-10, 10), max_size=4),
                   st.lists(st.booleans(), min_size=5, max_size=5))


@FUZZ
@given(sel=st.tuples() | st.lists(_INDEX, max_size=3).map(tuple))
def test_generated_selections(sel):
    tally = Tally("selections, hypothesis")
    data = np.arange(35, dtype="int16").reshape(5, 7)
    a = zarrkit.create(MemoryStore(), shape=(5, 7), dtype="int16", chunks=(2, 3))
    a[...] = data
    tally.run(_selection_case, [a], data, sel)
    assert not tally.foreign, tally.examples


# -- node names, URLs, kvstore specs -----------------------------------------------------------
_NAME_PIECES = ["a", "..", ".", "/", "\\", "\x00", "__", "zarr.json", "c", "0", ".zarrkit-locks",
                "é", "\ud800", " ", "*", ":", "C:", "~", "x" * 300, "%2e%2e", "\n", ".partial",
                ".x.0123456789abcdef.partial", ".zarrkit-shape"]


def _name_case(store, name: str) -> None:
    g = zarrkit.open_group(store, mode="a")
    for op in (lambda: g.create_group(name),
               lambda: g.create_array(name, shape=(2,), dtype="uint8", chunks=(1,)),
               lambda: g[name], lambda: name in g, lambda: g.keys(), lambda: g.tree(),
               lambda: zarrkit.open(store, path=name, mode="r"),
               lambda: zarrkit.open_group(store, path=name, mode="a"),
               lambda: g.__delitem__(name)):
        try:
            op()
        except ZarrkitError:
            pass


def test_random_node_names(tmp_path):
    tally = Tally("node names")
    r = random.Random(17)
    stores = [MemoryStore(), FileStore(str(tmp_path / "names.zarr"))]
    for _ in range(300):
        name = "".join(r.choice(_NAME_PIECES) for _ in range(r.randint(0, 4)))
        tally.run(_name_case, r.choice(stores), name)
    zip_store = ZipStore(str(tmp_path / "names.zip"), mode="w")
    for _ in range(60):
        tally.run(_name_case, zip_store, "".join(r.choice(_NAME_PIECES) for _ in range(3)))
    zip_store.close()
    tally.check()
    outside = sorted(p for p in os.listdir(tmp_path) if p not in ("names.zarr", "names.zip"))
    assert outside == []  # nothing was created next to the stores


@FUZZ
@given(name=st.text(max_size=12))
def test_generated_node_names(name):
    tally = Tally("node names, hypothesis")
    tally.run(_name_case, MemoryStore(), name)
    assert not tally.foreign, tally.examples


_URL_PIECES = ["file://", "file:///", "memory://", "zip:", "|", "s3://", "gs://", "http://",
               "https://x", "file://localhost/", "file://host/", "..", "/", "%2e%2e", "%",
               "%zz", "%ff", "%c3", "?", "#", "a", "\x00", "\\", " ", "é", "\ud800", "C:", ":",
               "zarr.json", "x" * 300]


_REMOTE = re.compile(r"(s3|gs|gcs|http|https|az)[:|]")


def _url_case(where) -> None:
    # Remote URLs are parsed but not opened: the test must not touch the network.
    remote = _REMOTE.search(where if isinstance(where, str) else str(where.get("driver")) + ":")
    for op in (0, 3) if remote else range(4):
        try:
            if op == 0:
                (parse_kvstore_url if isinstance(where, str) else normalize_kvstore_spec)(where)
            elif op == 1:
                open_kvstore(where, read_only=True)[0].close()
            elif op == 2:
                zarrkit.open(where, mode="r")
            else:
                kvstore_spec_to_url(parse_kvstore_url(where) if isinstance(where, str)
                                    else where)
        except ZarrkitError:
            pass


def test_random_urls_and_specs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths resolve here
    zarrkit.create("d.zarr", shape=(3,), dtype="uint8", chunks=(2,))
    zarrkit.create(str(tmp_path / "z.zip"), shape=(3,), dtype="uint8", chunks=(2,)).store.close()
    (tmp_path / "plain.txt").write_text("not a zip")
    pieces = _URL_PIECES + [str(tmp_path), "/d.zarr", "/z.zip", "/plain.txt", "/nope"]
    values = [None, 1, "x", [], {}, True, "/", "..", str(tmp_path / "d.zarr"),
              str(tmp_path / "z.zip"), {"driver": "file", "path": str(tmp_path / "z.zip")}]
    tally = Tally("URLs and kvstore specs")
    r = random.Random(18)
    for _ in range(600):
        if r.random() < 0.6:
            where = "".join(r.choice(pieces) for _ in range(r.randint(1, 6)))
        else:
            where = {"driver": r.choice(["file", "memory", "zip", "nope", 1, None])}
            for key in r.sample(["path", "base", "file_io_sync", "extra", "context", "atomic"],
                                r.randint(0, 3)):
                where[key] = r.choice(values + ["".join(r.choices(pieces, k=3))])
        tally.run(_url_case, where)
    tally.check()
    assert sorted(os.listdir(tmp_path)) == ["d.zarr", "plain.txt", "z.zip"]  # read-only: nothing new


@FUZZ
@given(url=st.text(max_size=40))
def test_generated_urls(url):
    tally = Tally("URLs, hypothesis")
    if "file:" in url or "/" in url or url.endswith(".zip"):
        return  # local paths are covered above, confined to a temporary directory
    tally.run(_url_case, url)
    assert not tally.foreign, tally.examples

"""The KvStore contract, checked identically against the memory, file and zip stores."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from zarrkit.errors import InvalidKeyError, ReadOnlyError
from zarrkit.kvstore import ByteRange, FileStore, KvStore, MemoryStore, ZipStore

KINDS = ["memory", "file", "zip"]


class Factory:
    """Makes the store under test, and reopens its data read-only."""

    def __init__(self, kind: str, tmp_path) -> None:
        self.kind = kind
        self.path = tmp_path / ("data.zip" if kind == "zip" else "data")
        self.name = f"conformance-{id(self)}"
        self.opened: list[KvStore] = []

    def writable(self) -> KvStore:
        if self.kind == "memory":
            store: KvStore = MemoryStore.named(self.name)
        elif self.kind == "file":
            store = FileStore(self.path)
        else:
            store = ZipStore(self.path, "a")
        self.opened.append(store)
        return store

    def read_only(self, writable: KvStore) -> KvStore:
        if self.kind == "memory":
            store: KvStore = MemoryStore.named(self.name, read_only=True)
        elif self.kind == "file":
            store = FileStore(self.path, read_only=True)
        else:
            writable.close()  # a zip archive is only readable by others once finished
            store = ZipStore(self.path, "r")
        self.opened.append(store)
        return store

    def cleanup(self) -> None:
        for store in self.opened:
            store.close()
        MemoryStore.discard(self.name)


@pytest.fixture(params=KINDS)
def factory(request, tmp_path):
    made = Factory(request.param, tmp_path)
    yield made
    made.cleanup()


@pytest.fixture
def store(factory):
    return factory.writable()


def test_set_get_overwrite_missing(store):
    assert store.get("a") is None
    store.set("a", b"one")
    assert bytes(store.get("a")) == b"one"
    store.set("a", b"second value")
    assert bytes(store.get("a")) == b"second value"
    assert store.get("b") is None


def test_empty_value_exists(store):
    store.set("empty", b"")
    assert store.get("empty") == b""
    assert store.exists("empty") and store.size("empty") == 0
    assert not store.exists("other") and store.size("other") is None


def test_nested_and_unicode_keys(store):
    keys = ["c/0/0/0", "c/0/1", "group/sub/zarr.json", "grüße/✓", "with space/.zattrs"]
    for i, key in enumerate(keys):
        store.set(key, bytes([i]) * (i + 1))
    for i, key in enumerate(keys):
        assert bytes(store.get(key)) == bytes([i]) * (i + 1)
    assert sorted(store.list_prefix("")) == sorted(keys)


@pytest.mark.parametrize("value", [
    bytearray(b"abc"), memoryview(b"xyzw"), np.arange(6, dtype="<u2"), np.arange(12).reshape(3, 4)[:, ::2],
], ids=["bytearray", "memoryview", "uint16", "noncontiguous"])
def test_buffer_inputs_are_copied_as_bytes(store, value):
    expected = np.ascontiguousarray(value).tobytes() if isinstance(value, np.ndarray) else bytes(value)
    store.set("k", value)
    if isinstance(value, bytearray):
        value[0] = 0  # mutating the caller's buffer must not change the stored value
    assert bytes(store.get("k")) == expected
    assert store.size("k") == len(expected)


VALUE = bytes(range(100))
RANGES = {
    "whole": (ByteRange(0), VALUE),
    "from-offset": (ByteRange(10), VALUE[10:]),
    "offset-length": (ByteRange(10, 5), VALUE[10:15]),
    "runs-past-end": (ByteRange(95, 50), VALUE[95:]),
    "starts-at-end": (ByteRange(100), b""),
    "starts-past-end": (ByteRange(150, 3), b""),
    "zero-length": (ByteRange(7, 0), b""),
    "suffix-1": (ByteRange.suffix(1), VALUE[-1:]),
    "suffix-30": (ByteRange.suffix(30), VALUE[-30:]),
    "suffix-longer-than-value": (ByteRange.suffix(500), VALUE),
    "suffix-0": (ByteRange.suffix(0), b""),
}


@pytest.mark.parametrize("rng,expected", RANGES.values(), ids=RANGES.keys())
def test_get_range(store, rng, expected):
    store.set("v", VALUE)
    assert bytes(store.get("v", rng)) == expected
    assert store.get("missing", rng) is None


def test_byte_range_validation():
    with pytest.raises(ValueError):
        ByteRange(0, -1)
    with pytest.raises(ValueError):
        ByteRange(-5, 2)
    with pytest.raises(ValueError):
        ByteRange.suffix(-1)


def test_get_many_order_duplicates_missing(store):
    store.set("a", VALUE)
    store.set("b/c", b"bee")
    requests = [
        ("a", ByteRange(90)), ("missing", None), ("b/c", None), ("a", ByteRange(0, 3)),
        ("a", ByteRange.suffix(2)), ("a", ByteRange(0, 3)), ("a", ByteRange(5000, 1)),
        ("a", None),
    ]
    got = store.get_many(requests)
    assert [None if g is None else bytes(g) for g in got] == [
        VALUE[90:], None, b"bee", VALUE[:3], VALUE[-2:], VALUE[:3], b"", VALUE]


def test_get_transient_matches_get(store):
    big = bytes(range(256)) * 1024  # 256 KiB: the file store reads it into a reused buffer
    store.set("small", VALUE)
    store.set("b/big", big)
    store.set("b/big2", big[::-1])
    assert bytes(store.get_transient("small")) == VALUE
    assert bytes(store.get_transient("b/big")) == big
    assert bytes(store.get_transient("b/big2")) == big[::-1]  # the next read of the thread
    assert store.get_transient("missing") is None
    assert store.get_transient("b/missing") is None


def test_delete(store):
    store.set("x/y", b"1")
    store.set("x/z", b"2")
    store.delete("x/y")
    store.delete("x/y")  # deleting a missing key is not an error
    store.delete("never/was")
    assert store.get("x/y") is None and not store.exists("x/y")
    assert bytes(store.get("x/z")) == b"2"
    assert list(store.list_prefix("")) == ["x/z"]


def _fill(store):
    for key in ["zarr.json", "a/zarr.json", "a/c/0", "a/c/1", "a/b/zarr.json", "a/b/c/0/0",
                "ab/zarr.json", "z"]:
        store.set(key, key.encode())


def test_list_prefix(store):
    _fill(store)
    assert sorted(store.list_prefix("a/")) == [
        "a/b/c/0/0", "a/b/zarr.json", "a/c/0", "a/c/1", "a/zarr.json"]
    assert sorted(store.list_prefix("a/b/")) == ["a/b/c/0/0", "a/b/zarr.json"]
    assert list(store.list_prefix("nothing/")) == []
    assert len(list(store.list_prefix(""))) == 8


def test_list_dir(store):
    _fill(store)
    assert store.list_dir("") == (["z", "zarr.json"], ["a", "ab"])
    assert store.list_dir("a/") == (["zarr.json"], ["b", "c"])
    assert store.list_dir("a/c/") == (["0", "1"], [])
    assert store.list_dir("nothing/") == ([], [])


def test_delete_prefix(store):
    _fill(store)
    store.delete_prefix("a/b/")
    assert sorted(store.list_prefix("a/")) == ["a/c/0", "a/c/1", "a/zarr.json"]
    assert store.list_dir("a/") == (["zarr.json"], ["c"])
    assert bytes(store.get("ab/zarr.json")) == b"ab/zarr.json"  # "a/" is not a prefix of "ab/"
    store.delete_prefix("")
    assert list(store.list_prefix("")) == []
    assert store.list_dir("") == ([], [])
    store.set("again", b"1")  # the store is still usable
    assert bytes(store.get("again")) == b"1"


def test_renames_move_keys_or_refuse_without_moving(store):
    """rename_key replaces what is at the target, into directories not there yet, and
    rename_prefix moves a prefix into a place not there yet; a store that cannot rename
    (a zip archive) says so and moves nothing. A missing key is not moved."""
    _fill(store)
    store.set("x/y", b"old")
    before = {k: bytes(store.get(k)) for k in store.list_prefix("")}
    moved = store.rename_key("a/zarr.json", "x/y")
    assert store.rename_prefix("a/b/", "new/deep/b/") is moved
    after = {k: bytes(store.get(k)) for k in store.list_prefix("")}
    if not moved:
        assert after == before
        return
    assert after["x/y"] == b"a/zarr.json" and "a/zarr.json" not in after
    assert sorted(store.list_prefix("new/")) == sorted(
        "new/deep/b/" + k[len("a/b/"):] for k in before if k.startswith("a/b/"))
    assert not store.rename_key("nothing/here", "x/z") and not store.exists("x/z")
    store.rename_key("x/y", "top")  # to the root, out of a directory it leaves empty
    assert bytes(store.get("top")) == b"a/zarr.json" and store.list_dir("x/") == ([], [])


def test_replace_sets_and_deletes(store):
    store.replace("d/k", b"one")
    assert bytes(store.get("d/k")) == b"one"
    store.replace("d/k", memoryview(b"second value"))
    assert bytes(store.get("d/k")) == b"second value"
    store.replace("d/k", None)
    assert store.get("d/k") is None
    store.replace("d/k", None)  # deleting a missing key is no error
    assert list(store.list_prefix("")) == []


def test_replace_waits_for_the_key_lock(store):
    store.set("k", b"old")
    done = threading.Event()

    def other() -> None:
        store.replace("k", b"new")
        done.set()
    with store.lock("k"):
        t = threading.Thread(target=other)
        t.start()
        assert not done.wait(0.2)
        assert bytes(store.get("k")) == b"old"
    assert done.wait(10)
    t.join()
    assert bytes(store.get("k")) == b"new"


def test_replace_many_is_done_with_each_value_before_drawing_the_next(store):
    """Values may be transient: the generator reuses the memory of the value it handed out
    before, and what was stored is still each value as it was handed out."""
    store.set("d/1", b"old")
    keys = ["d/0", "d/1", "d/2", "e/0", "d/3"]
    values = [b"zero", None, bytearray(b"two"), memoryview(bytearray(b"e")), bytearray(b"three")]

    def reusing():
        for value in values:
            yield value
            if isinstance(value, bytearray | memoryview):
                value[:] = b"#" * len(value)  # the caller reuses the buffer
    store.replace_many(keys, reusing())
    assert sorted(store.list_prefix("")) == ["d/0", "d/2", "d/3", "e/0"]
    assert [bytes(store.get(k)) for k in ("d/0", "d/2", "e/0", "d/3")] == \
        [b"zero", b"two", b"e", b"three"]


def test_replace_many_checks_every_key_first(store):
    with pytest.raises(InvalidKeyError):
        store.replace_many(["a/0", "a/../b", "a/1"], [b"x", b"y", b"z"])
    assert list(store.list_prefix("")) == []


def test_replace_many_waits_for_each_key_lock(store):
    done = threading.Event()

    def other() -> None:
        store.replace_many(["c/0", "c/1", "c/2"], [b"0", b"1", b"2"])
        done.set()
    with store.lock("c/1"):
        t = threading.Thread(target=other)
        t.start()
        assert not done.wait(0.2)
        assert store.get("c/1") is None
    assert done.wait(10)
    t.join()
    assert [bytes(store.get(f"c/{i}")) for i in range(3)] == [b"0", b"1", b"2"]


BAD_KEYS = ["", "/abs", "a/../b", "..", "../x", "./a", "a//b", "a/", "a\\b", "nul\x00"]


@pytest.mark.parametrize("key", BAD_KEYS)
def test_invalid_keys_refused(store, key):
    with pytest.raises(InvalidKeyError):
        store.get(key)
    with pytest.raises(InvalidKeyError):
        store.set(key, b"x")
    with pytest.raises(InvalidKeyError):
        store.delete(key)
    with pytest.raises(InvalidKeyError):
        store.exists(key)
    with pytest.raises(InvalidKeyError):
        store.get_many([(key, None)])
    with pytest.raises(InvalidKeyError):
        store.get_transient(key)
    with pytest.raises(InvalidKeyError):
        store.replace(key, b"x")
    assert list(store.list_prefix("")) == []


@pytest.mark.parametrize("prefix", ["a", "/a/", "../", "a//", "a\\b/"])
def test_invalid_prefixes_refused(store, prefix):
    with pytest.raises(InvalidKeyError):
        list(store.list_prefix(prefix))
    with pytest.raises(InvalidKeyError):
        store.list_dir(prefix)
    with pytest.raises(InvalidKeyError):
        store.delete_prefix(prefix)


def test_read_only(factory, store):
    store.set("a/b", b"data")
    ro = factory.read_only(store)
    assert ro.read_only
    for write in (lambda: ro.set("a/b", b"new"), lambda: ro.set("new", b"x"),
                  lambda: ro.delete("a/b"), lambda: ro.delete_prefix(""),
                  lambda: ro.delete_prefix("a/"), lambda: ro.replace("a/b", b"new"),
                  lambda: ro.replace("a/b", None), lambda: ro.replace_many(["a/b"], [None]),
                  lambda: ro.rename_key("a/b", "c")):
        with pytest.raises(ReadOnlyError):
            write()
    assert bytes(ro.get("a/b")) == b"data"
    assert bytes(ro.get("a/b", ByteRange(1, 2))) == b"at"
    assert list(ro.list_prefix("")) == ["a/b"]
    assert ro.list_dir("a/") == (["b"], [])


def test_to_json_names_driver(store):
    spec = store.to_json()
    assert spec["driver"] == store.driver


def test_concurrent_set_same_key_never_torn(store):
    size = 1 << 18
    values = [bytes([i]) * size for i in range(1, 9)]
    store.set("k", values[0])
    errors: list[str] = []
    stop = threading.Event()

    def writer(value: bytes) -> None:
        for _ in range(15):
            store.set("k", value)

    def reader() -> None:
        while not stop.is_set():
            got = bytes(store.get("k"))
            if len(got) != size or got.count(got[0]) != size:
                errors.append(f"torn value: {len(got)} bytes, first {got[:1]!r}")

    readers = [threading.Thread(target=reader) for _ in range(2)]
    writers = [threading.Thread(target=writer, args=(v,)) for v in values]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert not errors
    assert bytes(store.get("k")) in values


def test_concurrent_sets_of_different_keys(store):
    def work(n: int) -> None:
        for i in range(40):
            store.set(f"t{n}/c/{i}", f"{n}:{i}".encode())

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    keys = sorted(store.list_prefix(""))
    assert len(keys) == 240
    assert all(bytes(store.get(k)) == "{}:{}".format(k[1:k.index("/")], k.rsplit("/", 1)[1]).encode()
               for k in keys)


def test_thread_lock_excludes(store):
    store.set("counter", b"0")

    def work() -> None:
        for _ in range(50):
            with store.lock("counter"):
                value = int(bytes(store.get("counter")))
                time.sleep(0.0001)  # invite a thread switch: without the lock, updates get lost
                store.set("counter", str(value + 1).encode())

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bytes(store.get("counter")) == b"300"

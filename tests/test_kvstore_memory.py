"""MemoryStore specifics: the process-wide registry of named stores, immutability."""

from __future__ import annotations

import pytest

from zarrkit.errors import InvalidKeyError, ReadOnlyError
from zarrkit.kvstore import MemoryStore


@pytest.fixture
def name(request):
    name = f"test-{request.node.name}"
    yield name
    MemoryStore.discard(name)


def test_anonymous_stores_are_independent():
    a, b = MemoryStore(), MemoryStore()
    a.set("k", b"1")
    assert b.get("k") is None
    assert a.to_json() == {"driver": "memory"}


def test_named_store_is_shared(name):
    MemoryStore.named(name).set("k", b"v")
    again = MemoryStore.named(name)
    assert again.get("k") == b"v"
    assert again.to_json() == {"driver": "memory", "path": name + "/"}


def test_read_only_handle_sees_writes_but_cannot_write(name):
    writer = MemoryStore.named(name)
    reader = MemoryStore.named(name, read_only=True)
    writer.set("k", b"1")
    assert reader.get("k") == b"1"
    with pytest.raises(ReadOnlyError):
        reader.set("k", b"2")
    with pytest.raises(ReadOnlyError):
        reader.delete_prefix("")
    assert writer.get("k") == b"1"


def test_discard_forgets_data(name):
    MemoryStore.named(name).set("k", b"1")
    MemoryStore.discard(name)
    assert MemoryStore.named(name).get("k") is None


def test_locks_shared_between_handles(name):
    a, b = MemoryStore.named(name), MemoryStore.named(name)
    with a.lock("k"):
        assert not b.lock("k").acquire(blocking=False)
    assert b.lock("k").acquire(blocking=False)


@pytest.mark.parametrize("bad", ["", "a/b", "..", "x\\y"])
def test_bad_names(bad):
    with pytest.raises(InvalidKeyError):
        MemoryStore.named(bad)


def test_values_are_immutable_bytes():
    store = MemoryStore()
    buf = bytearray(b"abc")
    store.set("k", buf)
    buf[:] = b"xyz"
    value = store.get("k")
    assert type(value) is bytes and value == b"abc"

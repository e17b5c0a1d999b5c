"""Batched small-chunk writes (`KvStore.replace_many`, `chunk_io._write_small`): the file store's
held directory and the transient encodes, found in a review."""

from __future__ import annotations

import os

import numpy as np
import pytest

import zarrkit
from zarrkit import scratch
from zarrkit.errors import InvalidKeyError
from zarrkit.kvstore.file import FileStore


def test_batch_does_not_write_through_a_held_directory_moved_out_of_the_root(tmp_path):
    """The directory a batch holds open is moved out of the root and a link to it left in its
    place: the next key of the batch resolves outside the root and is refused, as `replace`
    refuses it, instead of being written there through the old descriptor."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    store = FileStore(root)

    def values():
        yield b"0"
        os.rename(root / "d", outside)
        os.symlink(outside, root / "d")
        yield b"1"
    # Keys not consecutive: two runs, the first written before the second value is drawn.
    with pytest.raises(InvalidKeyError, match="'d/2' resolves outside"):
        store.replace_many(["d/0", "d/2"], values())
    assert sorted(os.listdir(outside)) == ["0"]
    with pytest.raises(InvalidKeyError, match="'d/3' resolves outside"):
        store.replace("d/3", b"2")


def test_batch_writes_each_key_at_its_path_after_its_directory_was_renamed(tmp_path):
    """A directory renamed (inside the root) while a batch holds it open: the batch's next key
    goes to its own path, not into the renamed directory under another key."""
    store = FileStore(tmp_path)

    def values():
        yield b"0"
        os.rename(tmp_path / "d", tmp_path / "e")
        yield b"1"
    store.replace_many(["d/0", "d/2"], values())  # two runs, as above
    assert store.get("d/2") == b"1"
    assert sorted(store.list_prefix("")) == ["d/2", "e/0"]


def test_a_large_strided_chunk_is_not_gathered_into_a_buffer_the_thread_keeps(tmp_path):
    """Transient encodes gather strided chunks into the thread's scratch buffer, which is never
    given back: a chunk beyond SCRATCH_LIMIT must not grow it (each thread would keep one)."""
    side = 1100  # float64: 9.2 MiB, beyond SCRATCH_LIMIT
    assert side * side * 8 > scratch.SCRATCH_LIMIT
    a = zarrkit.create(tmp_path / "a", shape=(side, side), dtype="float64", chunks=(side, side),
                       fill_value=0, codecs=["bytes"])
    value = np.asfortranarray(np.arange(side * side, dtype="float64").reshape(side, side))
    if hasattr(scratch._local, "gather"):
        del scratch._local.gather
    a[...] = value  # one chunk: written in this thread
    kept = getattr(scratch._local, "gather", b"")
    assert len(kept) <= scratch.SCRATCH_LIMIT
    np.testing.assert_array_equal(a[...], value)


@pytest.mark.parametrize("shape, chunks", [((128, 128), (4, 4)), ((4096, 4096), (1024, 1024))],
                         ids=["small", "large"])
def test_a_forked_child_writes_and_reads_with_its_own_pool(tmp_path, shape, chunks):
    """The child of a process that used the thread pool inherited the pool object but none of
    its threads: writes of many small chunks, and reads and writes of large ones, waited for
    work that never ran (multiprocessing's fork start method after a parent's write)."""
    from _forked import in_child

    a = zarrkit.create(tmp_path / "a", shape=shape, dtype="uint8", chunks=chunks,
                       fill_value=0, codecs=["bytes"])
    a[...] = 1  # the parent's pool is running now

    def child() -> list[int]:
        b = zarrkit.open_array(tmp_path / "a")
        b[...] = 2
        return sorted(set(b[...].reshape(-1).tolist()))
    assert in_child(child, timeout=20) == [2]
    assert a[...].min() == 2


def test_a_large_blosc_chunk_is_not_compressed_into_a_buffer_the_thread_keeps(tmp_path):
    side = 1100  # float64: 9.2 MiB, beyond SCRATCH_LIMIT
    a = zarrkit.create(tmp_path / "b", shape=(side, side), dtype="float64", chunks=(side, side),
                       fill_value=0, codecs=["bytes", {"name": "blosc", "configuration": {
                           "cname": "lz4", "clevel": 1, "shuffle": "shuffle", "typesize": 8}}])
    value = np.arange(side * side, dtype="float64").reshape(side, side)
    if hasattr(scratch._local, "compress"):
        del scratch._local.compress
    a[...] = value  # one chunk: compressed in this thread
    assert len(getattr(scratch._local, "compress", b"")) <= scratch.SCRATCH_LIMIT
    np.testing.assert_array_equal(a[...], value)

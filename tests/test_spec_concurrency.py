"""Context concurrency limits: data_copy_concurrency bounds an array's concurrent codec/copy
tasks and file_io_concurrency its concurrent file reads and writes, measured by recording how
many calls are inside a codec or a store method at once."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import zarrkit
from zarrkit.engine import chunk_io

SHAPE, CHUNKS = (64, 64), (8, 8)  # 64 chunks


class _Gauge:
    """Wraps callables; `peak` is the most calls seen inside them at the same time."""

    def __init__(self) -> None:
        self.inside = self.peak = self.calls = 0
        self._lock = threading.Lock()

    def wrap(self, fn):
        def run(*args, **kwargs):
            with self._lock:
                self.calls += 1
                self.inside += 1
                self.peak = max(self.peak, self.inside)
            try:
                time.sleep(0.002)  # long enough for other threads to arrive
                return fn(*args, **kwargs)
            finally:
                with self._lock:
                    self.inside -= 1
        return run


@pytest.fixture(autouse=True)
def _always_parallel(monkeypatch):
    for name in ("INLINE_READ_BYTES", "INLINE_SLOW_READ_BYTES", "INLINE_CHUNK_BYTES"):
        monkeypatch.setattr(chunk_io, name, 0)  # small reads use the pool too


def _spec(path, **members):
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}, **members}


def _create(path, sharded=False):
    layout = zarrkit.ChunkLayout(read_chunk_shape=list(CHUNKS), write_chunk_shape=[32, 32]) \
        if sharded else zarrkit.ChunkLayout(chunk_shape=list(CHUNKS))
    a = zarrkit.open(_spec(path), create=True, dtype="int32", shape=list(SHAPE),
                     chunk_layout=layout)
    a[...] = np.arange(np.prod(SHAPE), dtype=np.int32).reshape(SHAPE)


@pytest.fixture
def codec_gauge(monkeypatch):
    """Records the engine's chunk decodes and encodes (of every array)."""
    gauge = _Gauge()
    monkeypatch.setattr(chunk_io, "decode_chunk", gauge.wrap(chunk_io.decode_chunk))
    monkeypatch.setattr(chunk_io, "_encoded", gauge.wrap(chunk_io._encoded))
    return gauge


@pytest.mark.parametrize("sharded", [False, True])
@pytest.mark.parametrize(("limit", "most"), [(1, 1), (2, 2), ("shared", None)])
def test_data_copy_concurrency_bounds_codec_tasks(tmp_path, codec_gauge, sharded, limit, most):
    _create(tmp_path, sharded)
    codec_gauge.peak = 0
    context = {"data_copy_concurrency": {"limit": limit}}
    a = zarrkit.open(_spec(tmp_path), context=context)
    gauge = codec_gauge
    expected = np.arange(np.prod(SHAPE), dtype=np.int32).reshape(SHAPE)
    assert (a[...] == expected).all()
    a[...] = 7
    a[1:-1, 1:-1] = 8  # partial chunks: read-modify-write
    assert a[0, 0] == 7 and a[1, 1] == 8
    if most is None:
        assert gauge.peak > 1  # the default runs chunks in parallel
    else:
        assert gauge.peak == most  # reached, never passed


def test_arrays_sharing_a_resource_share_the_bound(tmp_path, codec_gauge):
    _create(tmp_path / "a")
    _create(tmp_path / "b")
    ctx = zarrkit.Context({"data_copy_concurrency": {"limit": 2}})
    arrays = [zarrkit.open(_spec(tmp_path / name), context=ctx) for name in "ab"]
    gauge = codec_gauge
    gauge.peak = 0
    threads = [threading.Thread(target=lambda a=a: a[...]) for a in arrays for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 1 < gauge.peak <= 2
    separate = zarrkit.open(_spec(tmp_path / "a"),
                            context={"data_copy_concurrency": {"limit": 2}})
    assert separate._engine.copy_limit is not arrays[0]._engine.copy_limit


def _io_gauge(array):
    gauge = _Gauge()
    for name in ("get", "get_transient", "set"):
        setattr(array.store, name, gauge.wrap(getattr(array.store, name)))
    return gauge


@pytest.mark.parametrize("where", ["context", "kvstore", "kvstore context"])
def test_file_io_concurrency_bounds_store_io(tmp_path, where):
    _create(tmp_path)
    resource = {"limit": 1}
    if where == "context":
        a = zarrkit.open(_spec(tmp_path), context={"file_io_concurrency": resource})
    else:
        kv = {"driver": "file", "path": str(tmp_path)}
        kv.update({"file_io_concurrency": resource} if where == "kvstore"
                  else {"context": {"file_io_concurrency": resource}})
        a = zarrkit.open({"driver": "zarr3", "kvstore": kv})
    gauge = _io_gauge(a)
    a[...] = 3
    assert gauge.calls >= 64  # all 64 chunk writes went through the bounded store
    writes = gauge.calls
    assert (a[...] == 3).all()
    assert gauge.calls >= writes + 64  # and so did the 64 chunk reads
    assert gauge.peak == 1


def test_defaults_add_nothing(tmp_path):
    _create(tmp_path)
    a = zarrkit.open(_spec(tmp_path))
    assert a._engine.copy_limit is None and a._engine.io_limit is None
    assert a._engine.store is a.store  # no wrapper around the store
    gauge = _io_gauge(a)
    a[...]
    assert gauge.peak > 1
    memory = zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "memory"}}, create=True,
                          dtype="int8", shape=[4], context={"file_io_concurrency": {"limit": 1}})
    assert memory._engine.io_limit is None  # TensorStore bounds only file stores with it


def test_bad_limits_are_refused(tmp_path):
    _create(tmp_path)
    for bad in ({"limit": 0}, {"limit": "many"}, {"limit": True}, {"max": 2}):
        with pytest.raises(zarrkit.SpecError, match="file_io_concurrency"):
            zarrkit.open(_spec(tmp_path), context={"file_io_concurrency": bad})

"""Dask: lazy reads, parallel shard-aligned writes, and a real multi-process cluster."""

from __future__ import annotations

import pickle
import uuid

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import zarrkit  # noqa: E402
from zarrkit.dask import aligned_blocks, from_dask, to_dask  # noqa: E402


def test_array_pickles_as_where_it_lives(tmp_path):
    a = zarrkit.create(str(tmp_path / "a.zarr"), shape=(6,), dtype="i4", chunks=(2,))
    a[...] = np.arange(6)
    b = pickle.loads(pickle.dumps(a))
    assert b.path == a.path and b.read_only == a.read_only
    np.testing.assert_array_equal(b[...], np.arange(6))
    ro = zarrkit.open(str(tmp_path / "a.zarr"), mode="r")
    assert pickle.loads(pickle.dumps(ro)).read_only


def test_to_dask_reads_lazily_in_whole_shards(tmp_path):
    a = zarrkit.create(str(tmp_path / "a.zarr"), shape=(100, 90), dtype="f4", chunks=(10, 10),
                       shards=(20, 30))
    data = np.random.default_rng(1).random(a.shape, dtype="f4")
    a[...] = data
    d = to_dask(a)
    assert all(c % 20 == 0 for c in d.chunks[0][:-1]) and all(c % 30 == 0 for c in d.chunks[1][:-1])
    np.testing.assert_array_equal(d.compute(), data)
    np.testing.assert_allclose(float(d[5:50].sum().compute()), float(data[5:50].sum()), rtol=1e-5)
    assert to_dask(a).name == d.name  # deterministic graph names
    plain = da.from_array(a, chunks=a.chunks)  # the dask idiom works too
    np.testing.assert_array_equal(plain[:, 7].compute(), data[:, 7])


def test_aligned_blocks_grow_to_target():
    assert aligned_blocks((10, 10), (1000, 1000), 8, target_bytes=8 * 40 * 40) == (10, 160)
    assert aligned_blocks((7,), (10,), 1, target_bytes=1000) == (14,)


def test_from_dask_rechunks_to_the_shard_grid(tmp_path):
    data = np.arange(97 * 61, dtype="int64").reshape(97, 61)
    darr = da.from_array(data, chunks=(23, 17))  # not aligned with the shards
    where = str(tmp_path / "w.zarr")
    a = from_dask(darr, where, chunks=(8, 8), shards=(16, 24), dimension_names=["y", "x"])
    assert a.shards == (16, 24) and a.chunks == (8, 8)
    np.testing.assert_array_equal(zarrkit.open(where, mode="r")[...], data)
    delayed = from_dask(darr + 1, str(tmp_path / "lazy.zarr"), compute=False)
    assert not np.any(zarrkit.open(str(tmp_path / "lazy.zarr"), mode="r")[...])
    delayed.compute()
    np.testing.assert_array_equal(zarrkit.open(str(tmp_path / "lazy.zarr"), mode="r")[...],
                                  data + 1)


@pytest.fixture(scope="module")
def s3_endpoint():
    pytest.importorskip("obstore")
    pytest.importorskip("moto")
    from _loopback import moto_s3

    with moto_s3() as endpoint:
        yield endpoint


def test_distributed_cluster_writes_and_reads_sharded_array_on_s3(s3_endpoint):
    """Two worker processes write a sharded array to the loopback S3 server and read it back."""
    distributed = pytest.importorskip("distributed")
    from _loopback import make_bucket, s3_options

    bucket = f"dask-{uuid.uuid4().hex[:8]}"
    make_bucket(s3_endpoint, bucket)
    url, opts = f"s3://{bucket}/cluster.zarr", s3_options(s3_endpoint)
    shape = (240, 180)
    darr = da.arange(shape[0] * shape[1], dtype="int32", chunks=50_000).reshape(shape)
    darr = darr.rechunk((70, 50))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as client:
        a = from_dask(darr, url, chunks=(20, 15), shards=(60, 45), storage_options=opts,
                      compressors=[{"name": "zstd", "configuration": {"level": 1}}])
        workers = client.run(lambda: __import__("os").getpid())
        assert len(set(workers.values())) == 2
        back = to_dask(zarrkit.open(url, mode="r", storage_options=opts)).compute()
        total = int(to_dask(a).sum(dtype="int64").compute())
    expected = np.arange(shape[0] * shape[1], dtype="int32").reshape(shape)
    np.testing.assert_array_equal(back, expected)
    np.testing.assert_array_equal(zarrkit.open(url, mode="r", storage_options=opts)[...],
                                  expected)
    assert total == int(expected.sum(dtype="int64"))
    assert a.nchunks_initialized() == 144 and a.nshards_initialized() == 16

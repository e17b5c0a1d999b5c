import uuid

import numpy as np
import pytest

from zarrkit.kvstore.base import KvStore
from zarrkit.kvstore.memory import MemoryStore


class CountingStore(KvStore):
    """Wraps a store and records every read, so tests can assert what I/O a selection costs."""

    driver = "counting"

    def __init__(self, inner: KvStore) -> None:
        super().__init__()
        self.inner = inner
        self.gets: list[tuple[str, object]] = []
        self.sets: list[str] = []

    def get(self, key, byte_range=None):
        self.gets.append((key, byte_range))
        return self.inner.get(key, byte_range)

    def get_many(self, requests):
        self.gets.extend(requests)
        return self.inner.get_many(requests)

    def bytes_read(self):
        total = 0
        for key, rng in self.gets:
            value = self.inner.get(key, rng)
            total += 0 if value is None else len(value)
        return total

    def list_prefix(self, prefix):
        return self.inner.list_prefix(prefix)

    def _set(self, key, value):
        self.sets.append(key)
        self.inner.set(key, value)

    def _delete(self, key):
        self.inner.delete(key)

    def to_json(self):
        return self.inner.to_json()


@pytest.fixture
def counting_store():
    return CountingStore(MemoryStore())


@pytest.fixture(params=["memory", "file", "zip"])
def any_store(request, tmp_path):
    """A fresh store of each kind."""
    from zarrkit.kvstore.file import FileStore
    from zarrkit.kvstore.zip import ZipStore

    if request.param == "memory":
        store = MemoryStore()
    elif request.param == "file":
        store = FileStore(str(tmp_path / "data.zarr"))
    else:
        store = ZipStore(str(tmp_path / "data.zip"), mode="w")
    yield store
    store.close()


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(params=["openat2", "proc-fd", "realpath"])
def strategy(request, monkeypatch):
    """Each way the file store can check that a path stays inside the root (batches of small
    values, done in C, use openat2 too)."""
    from zarrkit.kvstore import _file_batch, _openat2
    from zarrkit.kvstore import file as file_module

    if request.param == "openat2" and not _openat2.AVAILABLE:
        pytest.skip("openat2 is not available here")
    if request.param != "openat2":
        monkeypatch.setattr(_openat2, "AVAILABLE", False)
        monkeypatch.setattr(_file_batch, "AVAILABLE", False)
    if request.param == "realpath":
        monkeypatch.setattr(file_module, "_PROC_FD", None)
    return request.param


@pytest.fixture(params=["libzstd", "zstandard"])
def zstd_decoder(request, monkeypatch):
    """Each zstd decoder: the system's libzstd called directly, and python-zstandard (the
    fallback without it)."""
    from zarrkit.codecs import _libzstd

    if request.param == "libzstd" and not _libzstd.available:
        pytest.skip("no system libzstd here")
    monkeypatch.setattr(_libzstd, "available", request.param == "libzstd")
    return request.param


@pytest.fixture(params=["one call", "chunk by chunk"])
def many_decoder(request, monkeypatch):
    """Runs of blosc and zstd chunks decoded and encoded by one call of the C extension, and
    one by one (the path without it). Chains built after the fixture use the
    choice."""
    from zarrkit.codecs import _runs

    if request.param == "one call" and _runs.blosc_decoder is None:
        pytest.skip("the _many extension is not compiled here")
    if request.param == "chunk by chunk":
        monkeypatch.setattr(_runs, "blosc_decoder", None)
        monkeypatch.setattr(_runs, "zstd_decoder", None)
        monkeypatch.setattr(_runs, "blosc_encoder", None)
        monkeypatch.setattr(_runs, "zstd_encoder", None)
    return request.param


@pytest.fixture
def open_dir():
    """A directory an unprivileged user can reach (pytest's tmp_path is private to root)."""
    import os
    import shutil
    import tempfile

    path = tempfile.mkdtemp(prefix="zarrkit-test-")
    os.chmod(path, 0o755)
    yield path
    for top, dirs, _ in os.walk(path):  # tests take permissions away; give them back
        for name in dirs:
            os.chmod(os.path.join(top, name), 0o755)
    shutil.rmtree(path)


# -- S3 on loopback (moto's server), shared by the remote-store test files ---------------------
@pytest.fixture(scope="session")
def s3_endpoint():
    pytest.importorskip("moto")
    from _loopback import moto_s3

    with moto_s3() as endpoint:
        yield endpoint


@pytest.fixture
def bucket(s3_endpoint):
    from _loopback import make_bucket

    name = f"b-{uuid.uuid4().hex[:12]}"
    make_bucket(s3_endpoint, name)
    return name


@pytest.fixture
def opts(s3_endpoint):
    from _loopback import s3_options

    return s3_options(s3_endpoint)



def pytest_collection_modifyitems(items):
    # xdist workers must collect identical names; an object's default repr carries its address
    unstable = [item.nodeid for item in items if " at 0x" in item.nodeid]
    if unstable:
        raise pytest.UsageError(f"test ids carry object addresses (give them a repr or ids=): {unstable[:3]}")


@pytest.fixture(scope="module")
def zygote():
    """A process that forks test workers (`_workers.Zygote`), one per test module."""
    from _workers import Zygote

    z = Zygote()
    yield z
    z.close()

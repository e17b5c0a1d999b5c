"""Review of the remote object stores (S3 via moto, HTTP) on loopback servers."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("obstore")
pytest.importorskip("moto")


from zarrkit.errors import StoreError  # noqa: E402
from zarrkit.kvstore import ByteRange, open_kvstore  # noqa: E402
from zarrkit.kvstore import object_store as object_store_module  # noqa: E402


def test_lock_is_shared_by_stores_rooted_at_different_prefixes(bucket, opts, monkeypatch):
    # A group opened at the bucket and one of its arrays opened by its own URL name the same
    # object by different keys; their leases must still exclude each other.
    monkeypatch.setattr(object_store_module, "LOCK_WAIT_SECONDS", 0.3)
    root, _ = open_kvstore(f"s3://{bucket}", storage_options=opts)
    sub, _ = open_kvstore(f"s3://{bucket}/t.zarr/a", storage_options=opts)
    root.set("t.zarr/a/c/0", b"v")
    with root.lock("t.zarr/a/c/0"):
        with pytest.raises(StoreError, match="timed out .* waiting for the lock on 'c/0'"):
            with sub.lock("c/0"):
                pass
        # the lease is hidden from listings at every level while it is held
        assert list(sub.list_prefix("")) == ["c/0"]
        assert sub.list_dir("c/") == (["0"], []) and sub.list_dir("") == ([], ["c"])
        assert list(root.list_prefix("t.zarr/")) == ["t.zarr/a/c/0"]
    with sub.lock("c/0"):  # released: free again
        pass
    assert list(root.list_prefix("")) == ["t.zarr/a/c/0"]


def test_generation_checked_suffix_of_an_empty_value(bucket, opts):
    # S3 answers a suffix range of an empty object with all of it (200): an unchecked read
    # takes that as b"", and a generation-checked one must too.
    store, _ = open_kvstore(f"s3://{bucket}/p", storage_options=opts)
    store.set("e", b"")
    value, generation = store.get_with_generation("e")
    assert bytes(value) == b"" and generation is not None
    got = store.get_ranges_if("e", [ByteRange.suffix(3), ByteRange(0, 4)], generation)
    assert [bytes(g) for g in got] == [b"", b""]


@pytest.fixture
def silent_server():
    """A loopback server that accepts connections and never answers."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        try:
            while True:
                accepted.append(listener.accept()[0])
        except OSError:
            pass  # closed at teardown

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()
    for conn in accepted:
        conn.close()


@pytest.mark.parametrize("scheme", ["http", "s3"])
def test_a_timeout_is_reported_as_one(silent_server, scheme):
    # The server is reachable but slow: "cannot be reached" would send the user looking at
    # the network instead of at the `timeout` option.
    from zarrkit.errors import StoreUnreachableError

    options = {"max_retries": 0, "timeout": 0.5}
    if scheme == "s3":
        url = "s3://bkt/x.zarr"
        options.update(key="k", secret="s", endpoint_url=silent_server)
    else:
        url = f"{silent_server}/x.zarr"
    store, _ = open_kvstore(url, storage_options=options)
    with pytest.raises(StoreUnreachableError, match=r"cannot read 'k' in .*x\.zarr: the request "
                                                    r"timed out \(storage options 'timeout'"):
        store.get("k")


@pytest.fixture
def basic_auth_server(tmp_path):
    """A static HTTP server that answers 401 unless given Basic credentials user / p@ss."""
    import base64
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    expected = "Basic " + base64.b64encode(b"user:p@ss").decode()

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - stdlib signature
            return None

        def _denied(self) -> bool:
            if self.headers.get("Authorization") == expected:
                return False
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True

        def do_GET(self):  # noqa: N802 - stdlib naming
            if not self._denied():
                super().do_GET()

        def do_HEAD(self):  # noqa: N802 - stdlib naming
            if not self._denied():
                super().do_HEAD()

    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(Handler, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield tmp_path, server.server_address[1]
    server.shutdown()
    server.server_close()


def test_credentials_in_an_http_url_are_sent_and_never_shown(basic_auth_server):
    import numpy as np

    import zarrkit
    from zarrkit.errors import CredentialsError

    root, port = basic_auth_server
    zarrkit.create(str(root / "a.zarr"), shape=(6,), dtype="i2", chunks=(3,))[...] = np.arange(6)
    a = zarrkit.open(f"http://user:p%40ss@127.0.0.1:{port}/a.zarr", mode="r")
    np.testing.assert_array_equal(a[...], np.arange(6))
    shown = repr(a.store) + str(a.store.to_json())
    assert "p%40ss" not in shown and "p@ss" not in shown
    assert a.store.to_json() == {"driver": "http", "base_url": f"http://127.0.0.1:{port}/a.zarr"}
    store, _ = open_kvstore(f"http://user:wrong-secret@127.0.0.1:{port}/a.zarr",
                            storage_options={"max_retries": 0})
    with pytest.raises(CredentialsError) as caught:
        store.get("zarr.json")
    assert "wrong-secret" not in str(caught.value)


@pytest.mark.parametrize("given", [{"endpoint": "http://mine:1"}, {"endpoint_url": "http://mine:1"},
                                   {"client_kwargs": {"endpoint_url": "http://mine:1"}}])
def test_storage_options_win_over_the_spec_in_either_spelling(given):
    # s3fs's "endpoint_url" and obstore's "endpoint" are the same setting: the spec's
    # "endpoint" must not override the user's storage option in either spelling.
    spec = {"driver": "s3", "bucket": "b", "endpoint": "http://spec:2", "aws_region": "eu-west-1",
            "storage_options": {"key": "k", "secret": "s", "region": "ap-south-1", **given}}
    config = open_kvstore(spec)[0].location.options.config
    assert config["endpoint"] == "http://mine:1" and config["region"] == "ap-south-1"


def test_consolidate_metadata_takes_storage_options_and_a_group(bucket, opts, tmp_path):
    import zarrkit

    url = f"s3://{bucket}/t.zarr"
    g = zarrkit.open_group(url, mode="w", storage_options=opts)
    g.create_array("a", shape=(3,), dtype="i4")
    done = zarrkit.consolidate_metadata(url, storage_options=opts)
    assert list(done.keys()) == ["a"]
    reopened = zarrkit.open_group(url, mode="r", storage_options=opts)
    doc = reopened.store.get(f"{reopened.path}/zarr.json".lstrip("/"))
    assert b"consolidated_metadata" in bytes(doc)
    local = zarrkit.open_group(tmp_path / "l.zarr", mode="w")
    local.create_group("sub").create_array("x", shape=(2,), dtype="u1")
    again = zarrkit.consolidate_metadata(local["sub"])  # a Group: its store and path
    assert again.path == "sub" and list(again.keys()) == ["x"]
    assert b"consolidated_metadata" in (tmp_path / "l.zarr" / "sub" / "zarr.json").read_bytes()
    with pytest.raises(zarrkit.errors.NodeTypeError, match="is an array"):
        zarrkit.consolidate_metadata(local["sub/x"])


def test_a_lease_held_past_its_expiry_is_not_deleted_on_release(bucket, opts, monkeypatch):
    """Held longer than LEASE_SECONDS, a lease may have been taken over by another writer:
    deleting it on release deleted that writer's lease and let a third one in."""
    import pickle

    store, _ = open_kvstore(f"s3://{bucket}", storage_options=opts)
    other = pickle.loads(pickle.dumps(store))
    monkeypatch.setattr(object_store_module, "LEASE_SECONDS", 0.0)  # every lease born stale
    first = store.lock("k")
    first.__enter__()
    second = other.lock("k")
    second.__enter__()  # takes the stale lease over
    lease = object_store_module._lease_key("k")
    owner = bytes(store.get(lease))
    with pytest.warns(UserWarning, match="held longer than its lease"):
        first.__exit__(None, None, None)
    assert bytes(store.get(lease)) == owner  # the second writer's lease is still there
    monkeypatch.setattr(object_store_module, "LEASE_SECONDS", 60.0)
    second.taken_at, second.lease_seconds = time.monotonic(), 60.0  # a fresh lease
    second.__exit__(None, None, None)
    assert store.get(lease) is None


class _Racing:
    """obstore, as a store sees it, with another writer filling `key` right after S3 answered
    a suffix of its empty value with all of it (200)."""

    def __init__(self, real, store, key):
        self._real, self._store, self._key = real, store, key

    def __getattr__(self, name):
        return getattr(self._real, name)

    def _filled(self, key, options):
        if key == self._key and options and "range" in options:
            self._key = None
            self._store.set(key, b"filled meanwhile")

    def get(self, client, key, options=None):
        try:
            return self._real.get(client, key, options=options)
        except Exception:
            self._filled(key, options)
            raise

    async def get_async(self, client, key, options=None):
        try:
            return await self._real.get_async(client, key, options=options)
        except Exception:
            self._filled(key, options)
            raise


@pytest.mark.parametrize("read", ["get", "get_with_generation", "get_many"])
def test_an_empty_value_filled_meanwhile_leaves_s3_reading_ranges(bucket, opts, read):
    # The suffix answered whole (the value was empty), the whole value read next is not: that
    # is a writer in between, not a server ignoring Range; every range read whole from then on.
    store, _ = open_kvstore(f"s3://{bucket}/p", storage_options=opts)
    store.set("e", b"")
    store.set("f", b"0123456789")
    store._obs = _Racing(store._obs, store, "e")
    if read == "get":
        got = [store.get("e", ByteRange.suffix(3))]
    elif read == "get_with_generation":
        got = [store.get_with_generation("e", ByteRange.suffix(3))[0]]
    else:
        got = store.get_many([("e", ByteRange.suffix(3)), ("f", ByteRange(1, 2))])[:1]
    assert bytes(got[0]) in (b"", b"ile")  # the value before or after the write
    assert not store._whole_only


class _Recording:
    """obstore, recording the threads its blocking calls (get, head) run on."""

    def __init__(self, real, threads):
        self._real, self._threads = real, threads

    def __getattr__(self, name):
        return getattr(self._real, name)

    def get(self, *args, **kwargs):
        import threading

        self._threads.append(threading.current_thread().name)
        return self._real.get(*args, **kwargs)

    def head(self, *args, **kwargs):
        import threading

        self._threads.append(threading.current_thread().name)
        return self._real.head(*args, **kwargs)


def test_batched_fallbacks_do_not_run_on_the_event_loop(tmp_path):
    """A range past the end (a HEAD follows) or ignored (a whole GET follows) in a batch: those
    blocking requests ran on the event loop's thread, stalling every request in flight."""
    from _loopback import http_server

    for top in ("", "norange/"):
        (tmp_path / top).mkdir(exist_ok=True)
        for i in range(3):
            (tmp_path / top / f"k{i}").write_bytes(b"0123456789")
    with http_server(str(tmp_path)) as server:
        for top, rng in (("", ByteRange(50)), ("norange/", ByteRange.suffix(3))):
            store, _ = open_kvstore(f"{server.url}/{top}")
            threads: list[str] = []
            store._obs = _Recording(store._obs, threads)
            got = store.get_many([(f"k{i}", rng) for i in range(3)])
            assert [bytes(g) for g in got] == [bytes(rng.slice_of(b"0123456789"))] * 3
            assert threads and "zarrkit-remote-io" not in threads, (top, threads)


def test_a_lease_is_timed_from_when_its_expiry_was_written(bucket, opts, monkeypatch):
    """A slow (retried) put of the lease eats into it: timed from the put's return, a lease
    already expired and taken over was deleted on release, letting a third writer in."""
    import pickle

    store, _ = open_kvstore(f"s3://{bucket}", storage_options=opts)
    other = pickle.loads(pickle.dumps(store))
    monkeypatch.setattr(object_store_module, "LEASE_SECONDS", 1.0)
    put = store._put

    def slow_put(key, value, mode=None):
        if mode == "create":
            time.sleep(0.9)  # retries of a failing request
        return put(key, value, mode)

    monkeypatch.setattr(store, "_put", slow_put)
    first = store.lock("k")
    first.__enter__()
    time.sleep(0.3)  # 1.2 s since its expiry (1 s ahead) was written
    _taken_over_then_released(store, other, first)


def test_a_lease_lasts_what_was_written_into_it(bucket, opts, monkeypatch):
    # LEASE_SECONDS changed while a lock is held: the lease written lasts the old time.
    import pickle

    store, _ = open_kvstore(f"s3://{bucket}", storage_options=opts)
    other = pickle.loads(pickle.dumps(store))
    monkeypatch.setattr(object_store_module, "LEASE_SECONDS", 0.5)
    first = store.lock("k")
    first.__enter__()
    monkeypatch.setattr(object_store_module, "LEASE_SECONDS", 60.0)
    time.sleep(0.6)
    _taken_over_then_released(store, other, first)


def _taken_over_then_released(store, other, first) -> None:
    """`other` takes over the expired lease `first` holds; releasing `first` warns and keeps
    the new holder's lease, which a short hold then deletes."""
    second = other.lock("k")
    second.__enter__()  # takes the expired lease over
    lease = object_store_module._lease_key("k")
    owner = bytes(store.get(lease))
    with pytest.warns(UserWarning, match="held longer than its lease"):
        first.__exit__(None, None, None)
    assert bytes(store.get(lease)) == owner
    second.__exit__(None, None, None)
    assert store.get(lease) is None

"""The S3 store against a real S3 server (moto in server mode) on loopback."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

pytest.importorskip("obstore")
pytest.importorskip("moto")

from _loopback import S3_KEY, S3_SECRET  # noqa: E402

import zarrkit  # noqa: E402
from zarrkit.errors import (  # noqa: E402
    CredentialsError,
    InvalidKeyError,
    NodeNotFoundError,
    PermissionDeniedError,
    ReadOnlyError,
    SpecError,
    StoreError,
    StoreUnreachableError,
)
from zarrkit.kvstore import ByteRange, ObjectStore, open_kvstore  # noqa: E402
from zarrkit.kvstore import object_store as object_store_module  # noqa: E402


@pytest.fixture
def store(bucket, opts) -> ObjectStore:
    store, path = open_kvstore(f"s3://{bucket}/root", storage_options=opts)
    assert path == "" and isinstance(store, ObjectStore)
    return store


def test_get_set_ranges(store):
    assert store.get("a") is None
    store.set("a", b"0123456789")
    assert bytes(store.get("a")) == b"0123456789"
    assert bytes(store.get("a", ByteRange(2, 3))) == b"234"
    assert bytes(store.get("a", ByteRange(7))) == b"789"
    assert bytes(store.get("a", ByteRange.suffix(2))) == b"89"
    assert bytes(store.get("a", ByteRange(8, 10))) == b"89"  # clipped at the end
    assert bytes(store.get("a", ByteRange(50, 5))) == b""  # past the end: nothing
    got = store.get_many([("a", ByteRange(50, 5)), ("a", ByteRange(1, 2)), ("a", ByteRange(8, 10))])
    assert [bytes(g) for g in got] == [b"", b"12", b"89"]  # the same within one batch
    assert store.get("a", ByteRange(0, 0)) == b"" and store.get("b", ByteRange(0, 0)) is None
    assert store.exists("a") and store.size("a") == 10 and store.size("b") is None
    store.set("empty", memoryview(b""))
    assert store.get("empty") == b"" or bytes(store.get("empty")) == b""


def test_ranges_of_an_empty_value(store):
    # S3 answers a suffix range of an empty object with the whole (empty) object, status 200.
    store.set("e", b"")
    for rng in (ByteRange.suffix(3), ByteRange(0, 4), ByteRange(0), ByteRange(2)):
        assert bytes(store.get("e", rng)) == b""
    got = store.get_many([("e", ByteRange.suffix(3)), ("e", ByteRange(0, 4)), ("e", None)])
    assert [bytes(g) for g in got] == [b"", b"", b""]


def test_replace_sets_and_deletes_without_a_lease(store):
    store.replace("r/k", b"value")
    assert bytes(store.get("r/k")) == b"value"
    store.replace("r/k", None)  # whole-value writes take no lease on object stores
    assert store.get("r/k") is None
    assert list(store.list_prefix("")) == []


def test_get_many_batches_keys_and_ranges(store):
    for i in range(20):
        store.set(f"k/{i}", bytes([i]) * 100)
    requests = [(f"k/{i}", None) for i in range(20)] + [("k/3", ByteRange(10, 5)),
                                                         ("k/3", ByteRange(90, 10)),
                                                         ("missing", None),
                                                         ("k/4", ByteRange.suffix(1))]
    got = store.get_many(requests)
    assert [bytes(g) for g in got[:20]] == [bytes([i]) * 100 for i in range(20)]
    assert bytes(got[20]) == b"\x03" * 5 and bytes(got[21]) == b"\x03" * 10
    assert got[22] is None and bytes(got[23]) == b"\x04"


def test_listing_and_deleting(store):
    for key in ("x/zarr.json", "x/c/0/0", "x/c/0/1", "y/zarr.json", "zarr.json"):
        store.set(key, b"v")
    assert sorted(store.list_prefix("x/")) == ["x/c/0/0", "x/c/0/1", "x/zarr.json"]
    assert store.list_dir("") == (["zarr.json"], ["x", "y"])
    assert store.list_dir("x/") == (["zarr.json"], ["c"])
    store.delete("y/zarr.json")
    store.delete("never-there")
    store.delete_prefix("x/")
    assert sorted(store.list_prefix("")) == ["zarr.json"]


def _put_folder_marker(endpoint: str, bucket: str, name: str) -> None:
    """An empty object named "<name>/", as the S3 console's "Create folder" makes."""
    import urllib.request

    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{bucket}/{name}", data=b"",
                                                  method="PUT"))


def test_folder_markers_are_not_keys(bucket, opts, s3_endpoint):
    _put_folder_marker(s3_endpoint, bucket, "data.zarr/")
    a = zarrkit.create(f"s3://{bucket}/data.zarr", shape=(4,), dtype="i4", chunks=(2,),
                       storage_options=opts)
    a[...] = 1
    assert a.nchunks_initialized() == 2 and a.nbytes_stored() > 0
    store, _ = open_kvstore(f"s3://{bucket}", storage_options=opts)
    store.set("x", b"a sibling of x/, not in it")
    _put_folder_marker(s3_endpoint, bucket, "x/")
    store.set("x/k", b"v")
    assert list(store.list_prefix("x/")) == ["x/k"] and store.list_dir("x/") == (["k"], [])
    store.delete_prefix("x/")
    assert bytes(store.get("x")) == b"a sibling of x/, not in it"


def test_read_only(bucket, opts):
    store, _ = open_kvstore(f"s3://{bucket}", read_only=True, storage_options=opts)
    with pytest.raises(ReadOnlyError):
        store.set("k", b"v")


def test_array_roundtrip_sharded_and_interop(bucket, opts):
    url = f"s3://{bucket}/data.zarr"
    data = np.arange(60 * 70, dtype="int32").reshape(60, 70)
    a = zarrkit.create(url, shape=data.shape, dtype="int32", chunks=(10, 10), shards=(20, 30),
                       storage_options=opts, dimension_names=["y", "x"])
    a[...] = data
    a[5:15, 3:4] = -1  # partial shard write: read-modify-write under the S3 lease lock
    data[5:15, 3:4] = -1
    b = zarrkit.open(url, mode="r", storage_options=opts)
    np.testing.assert_array_equal(b[...], data)
    np.testing.assert_array_equal(b[17:43, 9:61:3], data[17:43, 9:61:3])
    assert b.nbytes_stored() > 0 and (b.nchunks_initialized(), b.nshards_initialized) == (42, 9)

    import obstore.store
    import zarr

    s3 = obstore.store.S3Store(bucket, endpoint=opts["endpoint_url"], access_key_id=S3_KEY,
                               secret_access_key=S3_SECRET, region="us-east-1",
                               client_options={"allow_http": True})
    z = zarr.open_array(zarr.storage.ObjectStore(s3, read_only=True), path="data.zarr", mode="r")
    np.testing.assert_array_equal(z[...], data)


def _obstore_s3(bucket, endpoint, prefix):
    import obstore.store

    return obstore.store.S3Store(bucket, prefix=prefix, endpoint=endpoint,
                                 access_key_id=S3_KEY, secret_access_key=S3_SECRET,
                                 region="us-east-1", client_options={"allow_http": True})


def test_obstore_and_zarr_python_object_stores(bucket, s3_endpoint):
    """An obstore S3Store, bare or in zarr-python's ObjectStore, is used with its own prefix,
    credentials and options: both ways with zarr-python, pickled, with leases."""
    import zarr

    s3 = _obstore_s3(bucket, s3_endpoint, "pre/fix")
    data = np.arange(200, dtype="i4").reshape(20, 10)
    a = zarrkit.create(s3, shape=data.shape, chunks=(5, 5), shards=(10, 10), dtype="i4")
    a[...] = data
    assert isinstance(a.store, ObjectStore) and a.store.location.url == f"s3://{bucket}/pre/fix"
    assert a.store.to_json() == {"driver": "s3", "bucket": bucket, "path": "pre/fix/",
                                 "endpoint": s3_endpoint}
    assert zarrkit.open(f"s3://{bucket}/pre/fix", mode="r", storage_options={
        "key": S3_KEY, "secret": S3_SECRET, "endpoint_url": s3_endpoint,
        "region": "us-east-1"})[...].sum() == data.sum()  # where the prefix put it
    a[1:3, 1:3] = -1  # a partial shard write, under the lease lock
    data[1:3, 1:3] = -1
    theirs = zarr.open_array(zarr.storage.ObjectStore(s3, read_only=True), mode="r")
    np.testing.assert_array_equal(theirs[...], data)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(a))[...], data)

    other = zarr.storage.ObjectStore(_obstore_s3(bucket, s3_endpoint, "other"))
    z = zarr.create_array(other, name="theirs", shape=(4,), dtype="f8")
    z[...] = [1, 2, 3, 4]
    frozen = zarr.storage.ObjectStore(other.store, read_only=True)
    b = zarrkit.open(frozen, path="theirs")
    assert b.read_only and b[...].tolist() == [1, 2, 3, 4]
    with pytest.raises(ReadOnlyError):
        b[0] = 5


def test_group_tree_and_tensorstore_spec(bucket, opts, s3_endpoint):
    g = zarrkit.open_group(f"s3://{bucket}/tree.zarr", mode="w", storage_options=opts)
    g.create_array("raw/image", shape=(4, 4), dtype="uint8", chunks=(2, 2))[...] = 7
    g.create_group("labels")
    again = zarrkit.open_group(f"s3://{bucket}/tree.zarr", mode="r", storage_options=opts)
    assert sorted(again) == ["labels", "raw"]
    assert "image" in again.tree()
    spec = {"driver": "zarr3", "kvstore": {"driver": "s3", "bucket": bucket,
                                           "path": "tree.zarr/raw/image",
                                           "endpoint": s3_endpoint,
                                           "storage_options": {"key": S3_KEY,
                                                               "secret": S3_SECRET}}}
    assert int(zarrkit.open(spec)[1, 1]) == 7


def test_pickle_store_and_array(bucket, opts):
    a = zarrkit.create(f"s3://{bucket}/p.zarr", shape=(10,), dtype="f8", chunks=(5,),
                       storage_options=opts)
    a[...] = np.arange(10.0)
    store = pickle.loads(pickle.dumps(a.store))
    assert bytes(store.get("zarr.json"))[:1] == b"{"
    assert "secret" not in str(a.store.to_json()).lower()
    assert a.store.to_json()["endpoint"] == opts["endpoint_url"]


def test_lock_excludes_other_store_instances(bucket, opts):
    """Two store objects (as two processes would have) increment a counter under the lock."""
    stores = [open_kvstore(f"s3://{bucket}", storage_options=opts)[0] for _ in range(2)]
    stores[0].set("counter", b"0")

    def bump(store: ObjectStore) -> None:
        for _ in range(5):
            with store.lock("counter"):
                value = int(bytes(store.get("counter")))
                store.set("counter", str(value + 1).encode())

    threads = [threading.Thread(target=bump, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bytes(stores[0].get("counter")) == b"10"
    assert list(stores[0].list_prefix("")) == ["counter"]  # leases are gone, and hidden


def test_stale_lease_is_taken_over(store, monkeypatch):
    monkeypatch.setattr(object_store_module, "LEASE_SECONDS", -1.0)  # every lease born stale
    other = pickle.loads(pickle.dumps(store))
    held = other.lock("k")
    held.__enter__()  # a lease left behind as by a crashed process (never released)
    with pytest.warns(UserWarning, match="held longer than its lease"):
        with store.lock("k"):
            store.set("k", b"mine")
    assert bytes(store.get("k")) == b"mine"


# -- bad input ----------------------------------------------------------------------------------

def test_unreachable_endpoint_is_reported_with_the_key():
    from _loopback import free_port

    opts = {"key": "k", "secret": "s", "endpoint_url": f"http://127.0.0.1:{free_port()}",
            "max_retries": 1, "connect_timeout": 1}
    with pytest.raises(StoreUnreachableError, match=r"cannot read '[.a-z]+' in s3://bucket/x.zarr.*cannot be reached"):
        zarrkit.open("s3://bucket/x.zarr", mode="r", storage_options=opts)


def test_missing_credentials(monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE",
                 "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    with pytest.raises(CredentialsError, match="no S3 credentials"):
        zarrkit.open("s3://bucket/x.zarr", mode="r")
    with pytest.raises(CredentialsError, match="incomplete"):
        zarrkit.open("s3://bucket/x.zarr", mode="r", storage_options={"key": "only-key"})
    with pytest.raises(CredentialsError, match="profile 'nope'"):
        zarrkit.open("s3://bucket/x.zarr", mode="r", storage_options={"profile": "nope"})


def test_profile_credentials(monkeypatch, tmp_path, bucket, s3_endpoint):
    creds = tmp_path / "credentials"
    creds.write_text(f"[dev]\naws_access_key_id = {S3_KEY}\n"
                     f"aws_secret_access_key = {S3_SECRET}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    g = zarrkit.group(f"s3://{bucket}/prof.zarr",
                      storage_options={"profile": "dev", "endpoint_url": s3_endpoint})
    assert g.attrs.asdict() == {} if hasattr(g.attrs, "asdict") else True


def test_missing_bucket_and_missing_node(opts, bucket):
    with pytest.raises(StoreError, match="bucket does not exist"):
        zarrkit.open("s3://no-such-bucket/x.zarr", mode="r", storage_options=opts)
    with pytest.raises(NodeNotFoundError, match="no .*array or group"):
        zarrkit.open(f"s3://{bucket}/nothing-here.zarr", mode="r", storage_options=opts)


@pytest.mark.parametrize("port_digits", ["", "416"])  # "416": its URLs once misled (see below)
def test_permission_denied_and_rejected_credentials(tmp_path, port_digits):
    from _loopback import http_server

    with http_server(str(tmp_path), port_digits=port_digits) as server:
        opts = {"key": "k", "secret": "s", "endpoint_url": server.url, "max_retries": 0}
        with pytest.raises(PermissionDeniedError, match=r"cannot read '[.a-z]+' in s3://forbidden.*permission denied"):
            zarrkit.open("s3://forbidden/x.zarr", mode="r", storage_options=opts)
        with pytest.raises(CredentialsError, match="rejected"):
            zarrkit.open("s3://unauthorized/x.zarr", mode="r", storage_options=opts)


def test_failures_are_classified_by_status_and_error_code_not_by_url_text(tmp_path):
    # Every obstore message quotes the request's URL: a port holding "416" (Range Not
    # Satisfiable) or a key named like an S3 error code must not change what a failure means.
    from _loopback import http_server

    (tmp_path / "flaky").mkdir()
    (tmp_path / "flaky" / "a").write_bytes(b"0123456789")
    with http_server(str(tmp_path), flaky_failures=1, port_digits="416") as server:
        assert "416" in server.url
        opts = {"key": "k", "secret": "s", "endpoint_url": server.url, "max_retries": 0}
        store, _ = open_kvstore("s3://flaky", storage_options=opts)
        with pytest.raises(StoreError, match=r"cannot read 'a' in s3://flaky.*503"):
            store.get("a", ByteRange(2, 3))  # a 503, not an empty range past the end
        assert bytes(store.get("a", ByteRange(2, 3))) == b"234"  # served the second time
        assert bytes(store.get("a", ByteRange(50, 5))) == b""  # a real 416: past the end
        plain, _ = open_kvstore("s3://plain", storage_options=opts)
        for name in ("NoSuchBucket", "InvalidRange", "ExpiredToken"):
            assert plain.get(name) is None  # a missing key (404), whatever its name


def test_unknown_scheme_and_bad_options():
    with pytest.raises(SpecError, match="unknown URL scheme 'nosuch'"):
        zarrkit.open("nosuch://bucket/x.zarr", mode="r")
    with pytest.raises(SpecError, match="client_kwargs"):
        zarrkit.open("s3://b/x", mode="r", storage_options={"anon": True, "client_kwargs": 3})


def test_cli_on_s3(bucket, opts, tmp_path, capsys):
    import json

    from zarrkit.cli import main

    url = f"s3://{bucket}/cli.zarr"
    a = zarrkit.create(url, shape=(40, 40), dtype="f4", chunks=(10, 10), shards=(20, 20),
                       storage_options=opts)
    a[...] = np.arange(1600, dtype="f4").reshape(40, 40)
    options = json.dumps(opts)
    assert main(["info", url, "--json", "--storage-options", options]) == 0
    info = json.loads(capsys.readouterr().out)["info"]
    assert info["location"] == url and info["nbytes_stored"] > 0
    assert main(["verify", url, "--json", "--storage-options", options]) == 0
    assert json.loads(capsys.readouterr().out)["chunks_checked"] == 4
    dst = str(tmp_path / "from-s3.zarr")
    assert main(["copy", url, dst, "--quiet", "--storage-options", options]) == 0
    np.testing.assert_array_equal(zarrkit.open(dst, mode="r")[...], a[...])
    assert main(["copy", dst, f"s3://{bucket}/back.zarr", "--quiet", "--dst-storage-options",
                 options]) == 0
    back = zarrkit.open(f"s3://{bucket}/back.zarr", mode="r", storage_options=opts)
    np.testing.assert_array_equal(back[...], a[...])


@pytest.mark.parametrize("url,spec", [
    ("s3://bkt/a/b.zarr", {"driver": "s3", "bucket": "bkt", "path": "a/b.zarr"}),
    ("s3://bkt/my%20data/100%25/x.zarr",
     {"driver": "s3", "bucket": "bkt", "path": "my data/100%/x.zarr"}),
    ("az://cont/a%23b", {"driver": "azure", "container": "cont", "path": "a#b"}),
    ("gs://bkt/x", {"driver": "gcs", "bucket": "bkt", "path": "x"}),
    ("az://cont/x", {"driver": "azure", "container": "cont", "path": "x"}),
    ("abfs://cont@acct.dfs.core.windows.net/x",
     {"driver": "azure", "container": "cont", "account": "acct", "path": "x"}),
    ("https://example.org/data/x.zarr",
     {"driver": "http", "base_url": "https://example.org/data/x.zarr"}),
])
def test_remote_urls_parse(url, spec):
    from zarrkit.kvstore import kvstore_spec_to_url, parse_kvstore_url

    assert parse_kvstore_url(url) == spec
    assert parse_kvstore_url(kvstore_spec_to_url(spec)) == spec


def test_gcs_and_azure_configure_without_requests(monkeypatch):
    """Clients are built from storage_options alone; missing credentials fail before any I/O."""
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "AZURE_STORAGE_ACCOUNT_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")
    store, _ = open_kvstore("gs://bkt/x", read_only=True, storage_options={"token": "anon"})
    assert store.to_json() == {"driver": "gcs", "bucket": "bkt", "path": "x/"}
    store, _ = open_kvstore("az://cont/x", read_only=True,
                            storage_options={"account_name": "acct", "anon": True})
    assert store.driver == "azure"
    with pytest.raises(CredentialsError, match="no GCS credentials"):
        open_kvstore("gs://bkt/x")
    with pytest.raises(CredentialsError, match="no Azure credentials"):
        open_kvstore("az://cont/x", storage_options={"account_name": "acct"})


def test_yes_no_options_read_strings_as_config_files_write_them(monkeypatch):
    """anon="false" (from a config file or environment) means no: truth-testing the string
    made every such store anonymous."""
    from zarrkit.kvstore._remote_options import gcs_options, s3_options

    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    assert s3_options({"anon": "TRUE"}).config["skip_signature"] is True
    signed = s3_options({"anon": "false", "key": "k", "secret": "s"}).config
    assert "skip_signature" not in signed and signed["access_key_id"] == "k"
    with pytest.raises(CredentialsError, match="no S3 credentials"):
        s3_options({"anon": "no"})
    with pytest.raises(SpecError, match="anon='maybe': expected True or False"):
        s3_options({"anon": "maybe"})
    with pytest.raises(SpecError, match="instance_metadata=2"):
        s3_options({"key": "k", "secret": "s", "instance_metadata": 2})
    assert gcs_options({"anon": "1"}).config["skip_signature"] is True


def test_verify_false_accepts_any_certificate(bucket, opts):
    """s3fs users turn TLS verification off with client_kwargs={"verify": False}; it was
    passed on to obstore as an unknown option and refused."""
    from zarrkit.kvstore._remote_options import s3_options

    options = {**opts, "client_kwargs": {**opts.get("client_kwargs", {}), "verify": False}}
    assert s3_options(options).client["allow_invalid_certificates"] is True
    assert "allow_invalid_certificates" not in s3_options(opts).client
    a = zarrkit.create(f"s3://{bucket}/v.zarr", shape=(3,), dtype="i4", storage_options=options)
    a[...] = 4
    assert a[...].tolist() == [4, 4, 4]
    with pytest.raises(SpecError, match="CA bundle"):
        s3_options({**opts, "verify": "/etc/ssl/ca.pem"})


def test_yes_no_options_take_numpy_values_and_the_obstore_spelling(monkeypatch):
    """numpy's booleans (named numpy.bool in numpy 2, not bool_) and integers 0/1 are yes/no
    values as Python's are; obstore's own name for anon, skip_signature, reads "false" as no
    (truth-tested, it skipped the credential check and the profile's keys)."""
    from zarrkit.kvstore._remote_options import azure_options, gcs_options, s3_options

    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    for yes in (np.True_, np.int64(1), np.uint8(1)):
        assert s3_options({"anon": yes}).config["skip_signature"] is True
        assert gcs_options({"anon": yes}).config["skip_signature"] is True
        assert azure_options({"account_name": "a", "anon": yes}).config["skip_signature"] is True
    for no in (np.False_, np.int64(0)):
        assert "skip_signature" not in s3_options({"anon": no, "key": "k", "secret": "s"}).config
    with pytest.raises(SpecError, match="expected True or False"):
        s3_options({"anon": np.int64(2)})
    with pytest.raises(CredentialsError, match="no S3 credentials"):
        s3_options({"skip_signature": "false"})
    assert s3_options({"skip_signature": "true"}).config["skip_signature"] is True
    with pytest.raises(CredentialsError, match="no GCS credentials"):
        gcs_options({"skip_signature": "no"})


def test_obstore_gcs_and_azure_objects_are_taken_as_they_are():
    """No request is made: the caller's client, its bucket or container and prefix."""
    import obstore.store

    gcs = obstore.store.GCSStore("bkt", prefix="p/q", skip_signature=True)
    azure = obstore.store.AzureStore("cont", prefix="data", account_name="acct",
                                     skip_signature=True)
    for client, url in ((gcs, "gs://bkt/p/q"), (azure, "az://cont/data")):
        store = object_store_module.from_client(client)
        assert store.location.url == url and store._client is client
        assert pickle.loads(pickle.dumps(store)).location.url == url
    with pytest.raises(SpecError, match="obstore's MemoryStore"):
        object_store_module.from_client(obstore.store.MemoryStore())


@pytest.mark.parametrize("key", ["a\x01b", "c/\nd", "e\x7f"])
def test_control_characters_are_invalid_keys(store, key):
    # object_store cannot parse such paths: every operation refuses them as a bad key.
    for op in (lambda: store.set(key, b"x"), lambda: store.get(key), lambda: store.exists(key),
               lambda: store.delete(key), lambda: store.delete_many([key]),
               lambda: list(store.list_prefix(key + "/")), lambda: store.get_many([(key, None)])):
        with pytest.raises(InvalidKeyError, match="control characters"):
            op()
    store.set("a%b c", b"x")  # other punctuation and spaces are fine
    assert bytes(store.get("a%b c")) == b"x"

"""The `kvstore` member of TensorStore-style specs compared with TensorStore (the oracle):
regressions of discrepancies found by a bug hunt (URL forms, path joining, members and their
values, context resources, spec() round trips)."""

from __future__ import annotations

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import SpecError
from zarrkit.kvstore import normalize_kvstore_spec, open_kvstore, parse_kvstore_url

ts = pytest.importorskip("tensorstore")

MD = {"shape": [4], "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
      "chunk_key_encoding": {"name": "default"}, "data_type": "int16",
      "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "fill_value": 0}


def _ts_kvstore(json):
    return ts.KvStore.Spec(json).to_json()


def _ts_refuses(json, spec=False) -> bool:
    try:
        (ts.Spec if spec else ts.KvStore.Spec)(json)
    except ValueError:
        return True
    return False


def _files(root):
    """The files under `root`, without zarrkit's lock files."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and ".zarrkit-locks" not in p.parts)


# -- URLs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("url", ["file:///tmp/a%zz", "file:///tmp/a%2", "memory://x%G0",
                                 "s3://bkt/a%", "file:///tmp/x.zip|zip:a%zz"])
def test_malformed_percent_escapes_are_refused(url):
    """unquote() kept "%zz" as text, so the store opened another path than the URL names."""
    assert _ts_refuses(url)
    with pytest.raises(SpecError, match="percent-encoding"):
        parse_kvstore_url(url)


@pytest.mark.parametrize("url", ["file:///tmp/a%20b/c", "file:///tmp/a%2Fb", "memory://a%20b",
                                 "file:///tmp/x.zip|zip:a%20b/", "s3://bkt/a%25b"])
def test_valid_percent_escapes_decode_as_tensorstore_does(url):
    assert normalize_kvstore_spec(url) == _ts_kvstore(url)


def test_a_file_url_without_a_path_is_refused():
    """"file://" gave {"driver": "file", "path": ""}, refused only at open."""
    assert _ts_refuses("file://")
    with pytest.raises(SpecError, match="absolute path"):
        parse_kvstore_url("file://")


@pytest.mark.parametrize("url", ["s3://bkt/p", "s3://bkt", "gs://bkt/a/b", "memory://",
                                 "memory://a/b", "file:///abs/dir", "file://localhost/abs",
                                 "file:///d/a.zip|zip:inner/", "memory://|zip:a"])
def test_url_forms_parse_as_tensorstore_does(url):
    assert normalize_kvstore_spec(url) == _ts_kvstore(url)


# -- Spec normalization: URL -> object, path joined into kvstore.path ---------------------------
@pytest.mark.parametrize("kvstore,path", [
    ("file:///tmp/x", ""),
    ({"driver": "file", "path": "/tmp/x"}, ""),
    ({"driver": "file", "path": "/tmp/x"}, "a/b"),
    ({"driver": "file", "path": "/tmp/x/"}, "a/b/"),
    ({"driver": "file"}, "a/b"),
    ({"driver": "file", "path": ""}, ""),
    ({"driver": "file", "path": "rel/x"}, "c"),
    ("memory://", ""),
    ("memory://name", ""),
    ({"driver": "memory", "path": "name"}, "x"),
    ("s3://bkt/p", "a"),
    ({"driver": "s3", "bucket": "bkt", "endpoint": "http://h:9000", "aws_region": "r"}, "a"),
    ("gs://bkt", "a/b"),
    ("file:///tmp/x.zip|zip:a/", "b"),
    ({"driver": "zip", "base": "file:///tmp/x.zip"}, "b"),
])
def test_spec_kvstore_normalizes_as_tensorstore(kvstore, path):
    """zarrkit.Spec kept the kvstore as given (a URL string) and `path` apart; TensorStore
    turns the URL into its spec and moves `path` into kvstore.path, ending in "/"."""
    json = {"driver": "zarr3", "kvstore": kvstore, **({"path": path} if path else {})}
    ours = zarrkit.Spec(json).to_json()
    theirs = ts.Spec(json).to_json()
    assert ours == theirs
    assert zarrkit.Spec(ours).to_json() == ours  # normal form is stable


def test_an_anonymous_memory_store_folds_the_path_as_tensorstore():
    """The spec layer opens a memory kvstore's context store, its path a path in it: the
    path folds into the kvstore as TensorStore's normal form (both open the same array)."""
    json = {"driver": "zarr3", "kvstore": "memory://", "path": "x"}
    assert zarrkit.Spec(json).to_json() == ts.Spec(json).to_json() == {
        "driver": "zarr3", "kvstore": {"driver": "memory", "path": "x/"}}


@pytest.mark.parametrize("json", [
    {"driver": "zarr3", "kvstore": {"driver": "nope"}},
    {"driver": "zarr3", "kvstore": {"driver": "file", "bogus": 1}},
    {"driver": "zarr3", "kvstore": "nope://x"},
    {"driver": "zarr3", "kvstore": "file://host/x"},
    {"driver": "zarr3", "kvstore": {"driver": "file", "path": 5}},
    {"driver": "zarr3", "kvstore": {"driver": "file", "path": "/x"}, "path": 5},
    {"driver": "zarr3", "kvstore": {"driver": "zip"}},
    {"driver": "zarr", "kvstore": {"driver": "memory", "path": ["a"]}},
])
def test_spec_refuses_an_invalid_kvstore_when_made(json):
    """zarrkit.Spec took any kvstore member; only opening it failed."""
    assert _ts_refuses(json, spec=True)
    with pytest.raises(SpecError):
        zarrkit.Spec(json)


# -- path joining: both splits open the same array ----------------------------------------------
def test_kvstore_and_path_splits_write_the_same_keys(tmp_path):
    """With `path`, zarrkit also wrote group documents above the array (at kvstore.path and
    between); TensorStore writes the array's own keys only, whichever way the spec splits."""
    layouts = []
    for lib, split in ((ts, True), (zarrkit, True), (zarrkit, False)):
        root = tmp_path / f"{lib.__name__}-{split}"
        kv = {"driver": "file", "path": str(root / "a" / "b") if not split else str(root)}
        json = {"driver": "zarr3", "kvstore": kv, "metadata": MD, "create": True,
                **({"path": "a/b"} if split else {})}
        a = ts.open(json).result() if lib is ts else zarrkit.open(json)
        a[1:3] = 5
        layouts.append(_files(root))
    assert layouts[0] == layouts[1] == layouts[2] == [
        "a/b/c/0", "a/b/c/1", "a/b/zarr.json"]


def test_an_array_may_be_created_below_an_array(tmp_path):
    """zarrkit refused ("it is an array, not a group") what TensorStore does."""
    for lib in (ts, zarrkit):
        root = tmp_path / lib.__name__
        top = {"driver": "zarr3", "kvstore": f"file://{root}", "metadata": MD, "create": True}
        sub = {**top, "path": "sub"}
        for json in (top, sub):
            a = ts.open(json).result() if lib is ts else zarrkit.open(json)
            a[...] = 3
        assert _files(root) == ["c/0", "c/1", "sub/c/0", "sub/c/1", "sub/zarr.json", "zarr.json"]
    again = zarrkit.open({"driver": "zarr3", "kvstore": f"file://{tmp_path}/tensorstore",
                          "path": "sub"})
    assert again[...].tolist() == [3, 3, 3, 3]


def test_spec_of_a_path_split_matches_tensorstores_and_reopens(tmp_path):
    json = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)},
            "path": "/g/arr/", "metadata": MD, "create": True}
    ours = zarrkit.open({**json, "kvstore": {"driver": "file", "path": str(tmp_path / "z")}})
    theirs = ts.open({**json, "kvstore": {"driver": "file", "path": str(tmp_path / "t")}})
    ours[...] = 9
    k_ours = ours.spec().to_json()["kvstore"]
    k_theirs = theirs.result().spec().to_json()["kvstore"]
    assert k_ours == {"driver": "file", "path": f"{tmp_path}/z/g/arr/"}
    assert k_theirs == {"driver": "file", "path": f"{tmp_path}/t/g/arr/"}
    # TensorStore reads through zarrkit's spec, zarrkit through its own normalized Spec
    spec = ours.spec().to_json()
    assert ts.open(spec).result().read().result().tolist() == [9] * 4
    assert zarrkit.open(zarrkit.Spec(spec))[...].tolist() == [9] * 4


def test_zip_pipeline_with_a_path_is_read_by_tensorstore(tmp_path):
    """TensorStore's zip kvstore is read-only; zarrkit writes one that TensorStore reads with
    the same spec (URL pipeline plus `path`)."""
    url = f"file://{tmp_path}/d.zip|zip:g/"
    a = zarrkit.open({"driver": "zarr3", "kvstore": url, "path": "arr", "metadata": MD,
                      "create": True})
    a[...] = np.arange(4)
    a.store.close()
    t = ts.open({"driver": "zarr3", "kvstore": url, "path": "arr"}).result()
    assert t.read().result().tolist() == [0, 1, 2, 3]
    back = zarrkit.open({"driver": "zarr3", "kvstore": {
        "driver": "zip", "base": f"file://{tmp_path}/d.zip", "path": "g/arr/"}}, read_only=True)
    assert back[...].tolist() == [0, 1, 2, 3]


# -- file members ------------------------------------------------------------------------------
FILE = {"driver": "file", "path": "/tmp/x"}


@pytest.mark.parametrize("members", [
    {"file_io_retries": {}},
    {"file_io_retries": {"max_retries": 3}},
    {"file_io_locking": {"mode": "lockfile"}},
    {"file_io_locking": {"mode": "none"}},
    {"file_io_mode": {"mode": "direct"}},
    {"file_io_sync": False},
    {"file_io_concurrency": {"limit": 3}},
    {"file_io_concurrency": {"limit": 10.0}},
    {"file_io_concurrency": {}},
    {"file_io_concurrency": "file_io_concurrency#io", "context": {"file_io_concurrency#io": {}}},
    {"file_io_sync": "file_io_sync#a", "context": {"file_io_sync#a": True}},
])
def test_file_members_tensorstore_accepts(members):
    spec = {**FILE, **members}
    _ts_kvstore(spec)
    assert normalize_kvstore_spec(spec) == spec


@pytest.mark.parametrize("members", [
    {"file_io_sync": 5},
    {"file_io_locking": {"mode": "bogus"}},
    {"file_io_mode": {"mode": "bogus"}},
    {"file_io_mode": "cache_pool"},
    {"file_io_memmap": True},
    {"file_io_concurrency": {"limit": 0}},
    {"file_io_concurrency": {"limit": 2.5}},
    {"file_io_concurrency": {"limit": True}},
    {"file_io_concurrency": {"max": 2}},
])
def test_file_member_values_tensorstore_refuses(members):
    spec = {**FILE, **members}
    assert _ts_refuses(spec)
    with pytest.raises(SpecError):
        normalize_kvstore_spec(spec)


def test_file_io_sync_given_by_reference_is_honoured(tmp_path):
    """Only a literal `true` turned fsync on; a reference to the spec's context was ignored."""
    spec = {"driver": "file", "path": str(tmp_path), "file_io_sync": "file_io_sync#a",
            "context": {"file_io_sync#a": True}}
    assert open_kvstore(spec)[0].fsync is True
    assert open_kvstore({**spec, "context": {"file_io_sync#a": False}})[0].fsync is False
    with pytest.raises(SpecError, match="not defined"):
        open_kvstore({**spec, "context": {}})


# -- s3 / gcs / http members -------------------------------------------------------------------
S3 = {"driver": "s3", "bucket": "bkt"}
GCS = {"driver": "gcs", "bucket": "bkt"}
HTTP = {"driver": "http", "base_url": "http://h/a"}


@pytest.mark.parametrize("spec", [
    {**S3, "experimental_s3_rate_limiter": {"read_rate": 100}},
    {**S3, "aws_credentials": {"type": "profile", "profile": "p", "credentials_file": "/f"}},
    {**S3, "aws_credentials": {"type": "default", "profile": "p"}},
    {**S3, "aws_credentials": {"type": "ecs", "endpoint": "http://x"}},
    {**S3, "aws_credentials": {"type": "imds"}},
    {**S3, "aws_credentials": "aws_credentials#x",
     "context": {"aws_credentials#x": {"type": "anonymous"}}},
    {"driver": "s3", "endpoint": "http://h:9000"},
    {**GCS, "experimental_gcs_rate_limiter": {}},
    {**GCS, "gcs_user_project": {"project_id": "proj"}},
    {**HTTP, "headers": ["X-A: 1", "X-B:2"]},
])
def test_remote_members_tensorstore_accepts(spec):
    assert normalize_kvstore_spec(spec) == spec
    _ts_kvstore(spec)


@pytest.mark.parametrize("spec", [
    {**S3, "aws_credentials": {"profile": "p"}},
    {**S3, "aws_credentials": {"type": "foo"}},
    {**S3, "aws_credentials": {"type": "anonymous", "profile": "p"}},
    {**S3, "requester_pays": "yes"},
    {**S3, "host_header": 5},
    {**S3, "endpoint": 5},
    {"driver": "s3"},
    {"driver": "s3", "bucket": ""},
    {**GCS, "gcs_http_concurrency": {}},
    {**GCS, "gcs_user_project": {"project_id": 5}},
    {"driver": "gcs"},
    {**HTTP, "headers": {"X-A": "1"}},
    {**HTTP, "headers": ["no colon"]},
    {**HTTP, "headers": ["bad name: 1"]},
    {"driver": "http"},
    {"driver": "http", "base_url": "ftp://h/a"},
    {**S3, "s3_request_concurrency": {"limit": 0}},
    {**GCS, "gcs_request_concurrency": {"limit": "many"}},
    {**HTTP, "http_request_concurrency": 4},
])
def test_remote_member_values_tensorstore_refuses(spec):
    assert _ts_refuses(spec)
    with pytest.raises(SpecError):
        normalize_kvstore_spec(spec)


def test_aws_credentials_by_reference_are_used():
    """A reference string raised AttributeError ('str' object has no attribute 'get')."""
    spec = {**S3, "endpoint": "http://127.0.0.1:9", "aws_credentials": "aws_credentials#x",
            "context": {"aws_credentials#x": {"type": "anonymous"}}}
    store, _ = open_kvstore(spec)
    assert store.location.options.config.get("skip_signature") is True


@pytest.mark.parametrize("kind", ["imds", "ecs"])
def test_aws_credentials_of_an_instance_role_use_instance_metadata(kind, monkeypatch, tmp_path):
    """{"type": "imds"} was read as the default chain, which without keys is refused."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_PROFILE",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    spec = {**S3, "endpoint": "http://127.0.0.1:9"}
    with pytest.raises(zarrkit.CredentialsError):
        open_kvstore(spec)
    store, _ = open_kvstore({**spec, "aws_credentials": {"type": kind}})
    assert not store.location.options.config.get("skip_signature")


def test_http_headers_member_is_sent():
    """The spec's `headers` were accepted and ignored."""
    store, _ = open_kvstore({**HTTP, "headers": ["X-Token: abc", "X-B:2"]})
    assert store.location.options.client["default_headers"] == {"X-Token": "abc", "X-B": "2"}


def test_tensorstores_http_form_opens_the_same_url(tmp_path):
    """TensorStore splits an http URL into base_url (scheme, host, query) and path."""
    from _loopback import http_server

    zarrkit.open({"driver": "zarr3", "kvstore": f"file://{tmp_path}/srv/a.zarr",
                  "metadata": MD, "create": True})[...] = 4
    with http_server(str(tmp_path / "srv")) as server:
        url = f"{server.url}/a.zarr"
        theirs = ts.Spec({"driver": "zarr3", "kvstore": url}).to_json()["kvstore"]
        assert theirs["base_url"] == server.url and theirs["path"] == "/a.zarr/"
        for kvstore in (url, theirs):
            a = zarrkit.open({"driver": "zarr3", "kvstore": kvstore}, read_only=True)
            assert a[...].tolist() == [4] * 4


# -- context resources --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["file_io_retries", "experimental_s3_rate_limiter",
                                  "experimental_gcs_rate_limiter", "s3_request_retries",
                                  "memory_key_value_store"])
def test_context_resources_tensorstore_knows(name):
    ts.Context.Spec({name: {}})
    assert zarrkit.Context({name: {}}).to_json() == {name: {}}


@pytest.mark.parametrize("name", ["file_io_memmap", "gcs_http_concurrency"])
def test_context_resources_tensorstore_does_not_know(name):
    with pytest.raises(ValueError):
        ts.Context.Spec({name: {}})
    with pytest.raises(SpecError, match="unknown context resource"):
        zarrkit.Context({name: {}})


# -- memory stores and contexts -----------------------------------------------------------------
def _open(lib, json, ctx):
    return ts.open(json, context=ctx).result() if lib is ts else zarrkit.open(json, context=ctx)


@pytest.mark.parametrize("kvstore,path", [("memory://", "x"), ({"driver": "memory"}, ""),
                                          ({"driver": "memory"}, "g/a")])
def test_unnamed_memory_store_is_shared_by_one_context_only(kvstore, path):
    """An unnamed memory kvstore was a new store at every open, even with one context; in
    TensorStore opens with one context share it (its memory_key_value_store)."""
    json = {"driver": "zarr3", "kvstore": kvstore, **({"path": path} if path else {})}
    for lib in (ts, zarrkit):
        ctx = lib.Context()
        _open(lib, {**json, "metadata": MD, "create": True}, ctx)[...] = 6
        assert np.asarray(_open(lib, json, ctx)[...]).tolist() == [6] * 4
        # the spec() of the array reopens it in that context too
        spec = _open(lib, json, ctx).spec()
        assert np.asarray(_open(lib, spec, ctx)[...]).tolist() == [6] * 4
        with pytest.raises((ValueError, zarrkit.NodeNotFoundError)):  # another context
            _open(lib, json, lib.Context())


def test_spec_of_an_unnamed_memory_store_folds_its_path():
    """spec() writes {"driver": "memory", "path": "x/"} as TensorStore does; in the spec layer
    it is a path in the context's memory store, so it reopens the same array."""
    ctx = zarrkit.Context()
    a = zarrkit.open({"driver": "zarr3", "kvstore": "memory://", "path": "x", "metadata": MD,
                      "create": True}, context=ctx)
    a[...] = 7
    spec = a.spec().to_json()
    assert spec["kvstore"] == {"driver": "memory", "path": "x/"} and "path" not in spec
    assert ts.Spec(spec).to_json()["kvstore"] == spec["kvstore"]
    assert zarrkit.open(spec, context=ctx)[...].tolist() == [7] * 4


def test_read_only_open_of_a_shared_memory_store_cannot_write():
    ctx = zarrkit.Context()
    json = {"driver": "zarr3", "kvstore": {"driver": "memory"}}
    zarrkit.open({**json, "metadata": MD, "create": True}, context=ctx)[...] = 1
    reader = zarrkit.open(json, context=ctx, read_only=True)
    assert reader[...].tolist() == [1] * 4
    with pytest.raises(zarrkit.ReadOnlyError):
        reader[...] = 2


@pytest.mark.parametrize("spec,name", [
    ({**S3, "endpoint": "http://127.0.0.1:9", "aws_credentials": {"type": "anonymous"}},
     "s3_request_retries"),
    ({**HTTP}, "http_request_retries"),
])
def test_request_retries_members_are_honoured(spec, name):
    """{"max_retries": n} was accepted and ignored (3 retries whatever it said)."""
    spec = {**spec, name: {"max_retries": 7}}
    _ts_kvstore({k: v for k, v in spec.items() if k != "endpoint"})
    assert open_kvstore(spec)[0].location.options.max_retries == 7
    ref = {**spec, name: f"{name}#r", "context": {f"{name}#r": {"max_retries": 0}}}
    assert open_kvstore(ref)[0].location.options.max_retries == 0


@pytest.mark.parametrize("spec", [
    {**S3, "aws_region": "eu-west-1", "requester_pays": True,
     "aws_credentials": {"type": "anonymous"}},
    {**S3, "path": "p/", "endpoint": "http://127.0.0.1:9", "aws_region": "eu-west-1",
     "aws_credentials": {"type": "anonymous"}},
])
def test_s3_store_spec_keeps_what_reaches_the_bucket(spec):
    """The store's spec dropped aws_region, requester_pays and anonymous access, so a spec()
    reopened another region's endpoint, unpaid, or asked for credentials."""
    store, _ = open_kvstore(spec)
    assert store.to_json() == spec
    assert _ts_kvstore(spec) == spec
    again, _ = open_kvstore(store.to_json())
    assert again.location.options.config == store.location.options.config


# -- resources the kvstore refers to, defined in the spec's context -----------------------------
def test_file_io_sync_of_the_specs_context_is_honoured(tmp_path):
    """The kvstore was opened without the spec's context: its file_io_sync was ignored."""
    json = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)},
            "metadata": MD, "create": True}
    ts.Spec({**json, "context": {"file_io_sync": True}})
    assert zarrkit.open({**json, "context": {"file_io_sync": True}}).store.fsync is True
    assert zarrkit.open(json, context=zarrkit.Context({"file_io_sync": True}),
                        create=False).store.fsync is True
    # TensorStore's default (file_io_sync true) when no context says otherwise
    assert zarrkit.open(json, create=False).store.fsync is True


def test_aws_credentials_of_the_specs_context_are_used(bucket, s3_endpoint, monkeypatch,
                                                      tmp_path):
    """The kvstore was opened without the spec's context: a reference to aws_credentials
    defined there failed (or the member was ignored)."""
    from _loopback import S3_KEY, S3_SECRET

    for name in ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "credentials").write_text(
        f"[moto]\naws_access_key_id = {S3_KEY}\naws_secret_access_key = {S3_SECRET}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    json = {"driver": "zarr3", "metadata": MD, "create": True,
            "kvstore": {"driver": "s3", "bucket": bucket, "endpoint": s3_endpoint,
                        "aws_credentials": "aws_credentials#moto"}}
    with pytest.raises(SpecError, match="not defined"):
        zarrkit.open(json)
    profile = {"aws_credentials#moto": {"type": "profile", "profile": "moto"}}
    ts.Spec({**json, "context": profile})
    zarrkit.open({**json, "context": profile})[...] = 2
    reader = zarrkit.open({**json, "create": False}, context=zarrkit.Context(profile))
    assert reader[...].tolist() == [2] * 4

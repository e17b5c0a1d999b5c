"""Context resources of kvstores, against TensorStore 0.1.86: one rule for references (shared by
the spec layer's Context and the kvstore drivers), memory stores per context in the spec layer,
file_io_sync's default, and the request concurrency resources of remote stores."""

from __future__ import annotations

import ast
import pathlib
import threading

import numpy as np
import pytest
import tensorstore as ts

import zarrkit
from zarrkit.errors import SpecError
from zarrkit.kvstore import MemoryStore, open_kvstore
from zarrkit.kvstore.resources import KvStoreContext, follow

MD = {"shape": [4], "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
      "chunk_key_encoding": {"name": "default"}, "data_type": "int16",
      "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "fill_value": 0}
SRC = pathlib.Path(zarrkit.__file__).parent


# -- one rule for references ----------------------------------------------------------------------
def test_kvstore_layer_does_not_import_the_spec_layer():
    for path in (SRC / "kvstore").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 2:
                assert not (node.module or "").startswith(("spec", "array", "api")), path


def test_both_layers_use_the_shared_rule():
    """url.py and spec/context.py resolve through resources.follow, not walks of their own."""
    from zarrkit.kvstore import resources, url
    from zarrkit.spec import context

    assert url.resolve_member is resources.resolve_member
    assert context.follow is resources.follow


# (outer context, kvstore member or absent, kvstore's own context); TensorStore decides.
SYNC_CASES = {
    "default": ({}, None, None),
    "member-false": ({}, False, None),
    "member-true": ({}, True, None),
    "ref": ({"file_io_sync#a": False}, "file_io_sync#a", None),
    "ref-own-context": ({}, "file_io_sync#a", {"file_io_sync#a": False}),
    "own-over-outer": ({"file_io_sync": True}, None, {"file_io_sync": False}),
    "outer-context": ({"file_io_sync": False}, None, None),
    "undefined": ({}, "file_io_sync#zz", None),
    "cycle": ({"file_io_sync#a": "file_io_sync#b", "file_io_sync#b": "file_io_sync#a"},
              "file_io_sync#a", None),
    "bare-self-alias": ({"file_io_sync": "file_io_sync"}, None, None),
    "alias-to-bare-default": ({"file_io_sync#a": "file_io_sync"}, "file_io_sync#a", None),
    "alias-chain": ({"file_io_sync#a": "file_io_sync#b", "file_io_sync#b": False},
                    "file_io_sync#a", None),
    "null-entry-is-default": ({"file_io_sync": None}, None, None),
    # An alias in the outer context is followed there, not in the kvstore's own context.
    "outer-alias-stays-outer": ({"file_io_sync#a": "file_io_sync#b", "file_io_sync#b": True},
                                "file_io_sync#a", {"file_io_sync#b": False}),
    "own-shadows-outer": ({"file_io_sync#b": True}, "file_io_sync#b",
                          {"file_io_sync#b": False}),
    "wrong-kind": ({}, "cache_pool", None),
    "null-member": ({}, "NULL", None),
}


def _kv(tmp_path, member, own):
    kv = {"driver": "file", "path": str(tmp_path) + "/"}
    if member == "NULL":
        kv["file_io_sync"] = None
    elif member is not None:
        kv["file_io_sync"] = member
    if own is not None:
        kv["context"] = own
    return kv


def _ts_sync(kv, outer):
    try:
        spec = ts.KvStore.open(kv, context=ts.Context(outer)).result().spec(
            retain_context=True).to_json()
    except ValueError:
        return "error"
    return spec["file_io_sync"]


def _zk_sync(kv, outer):
    try:
        a = zarrkit.open({"driver": "zarr3", "kvstore": kv, "metadata": MD},
                         context=zarrkit.Context(outer), create=True, delete_existing=True)
    except SpecError:
        return "error"
    return a.store.fsync


@pytest.mark.parametrize("case", SYNC_CASES)
def test_file_io_sync_resolves_as_tensorstore(tmp_path, case):
    outer, member, own = SYNC_CASES[case]
    kv = _kv(tmp_path, member, own)
    expected = _ts_sync(kv, outer)
    assert _zk_sync(kv, outer) == expected
    if expected != "error":  # the flag reaches the store the array writes through
        a = zarrkit.open({"driver": "zarr3", "kvstore": kv}, context=zarrkit.Context(outer))
        assert a.store.fsync is expected


def test_file_io_sync_default_is_tensorstores_in_specs_only(tmp_path):
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "s")},
            "metadata": MD, "create": True}
    assert zarrkit.open(spec).store.fsync is True
    assert zarrkit.open({**spec, "kvstore": "file://" + str(tmp_path / "u")}).store.fsync
    # the native API (which the benchmark uses) keeps its default: no fsync
    native = zarrkit.create(str(tmp_path / "n"), shape=(4,), dtype="int16", chunks=(2,))
    assert native.store.fsync is False
    assert zarrkit.open(str(tmp_path / "n"), mode="r").store.fsync is False
    assert open_kvstore({"driver": "file", "path": str(tmp_path)})[0].fsync is False
    assert open_kvstore({"driver": "file", "path": str(tmp_path), "file_io_sync": True}
                        )[0].fsync is True


@pytest.mark.parametrize("outer,child,ref,limit", [
    # the parent's alias resolves in the parent, though the child redefines its target
    ({"cache_pool#b": {"total_bytes_limit": 1}, "cache_pool#a": "cache_pool#b"},
     {"cache_pool#b": {"total_bytes_limit": 2}}, "cache_pool#a", 1),
    ({"cache_pool#b": {"total_bytes_limit": 1}}, {"cache_pool#b": {"total_bytes_limit": 2}},
     "cache_pool#b", 2),
    ({"cache_pool#b": {"total_bytes_limit": 1}}, {"cache_pool#c": "cache_pool#b"},
     "cache_pool#c", 1),
    ({"cache_pool": {"total_bytes_limit": 3}}, {"cache_pool": "cache_pool"}, "cache_pool",
     None),  # a cycle: the child's alias does not reach the parent's entry
    ({}, {"cache_pool#a": "cache_pool#zz"}, "cache_pool#a", None),
    ({}, {"cache_pool": None}, "cache_pool", 0),
])
def test_context_chain_resolves_as_tensorstore(outer, child, ref, limit):
    ts_child = ts.Context(child, ts.Context(outer))
    zk_child = zarrkit.Context(child, zarrkit.Context(outer))
    if limit is None:
        with pytest.raises(ValueError):
            ts_child[ref]
        with pytest.raises(SpecError):
            zk_child.resource(ref, "cache_pool")
        return
    assert ts_child[ref].to_json().get("total_bytes_limit", 0) == limit
    assert zk_child.resource(ref, "cache_pool").total_bytes_limit == limit


def test_aliases_share_one_resource_object():
    parent = zarrkit.Context({"cache_pool#b": {"total_bytes_limit": 10}})
    child = zarrkit.Context({"cache_pool#a": "cache_pool#b", "cache_pool": "cache_pool#a"},
                            parent)
    pool = parent.resource("cache_pool#b", "cache_pool")
    assert child.resource("cache_pool#a", "cache_pool") is pool
    assert child.resource(None, "cache_pool") is pool
    # a default is the root's: every child context without an entry shares it
    assert zarrkit.Context({}, parent).resource(None, "data_copy_concurrency") is \
        parent.resource(None, "data_copy_concurrency")


def test_alias_of_another_kind_is_refused_when_the_context_is_made():
    with pytest.raises(ValueError):
        ts.Context({"cache_pool#a": "data_copy_concurrency"})
    with pytest.raises(SpecError, match="another kind"):
        zarrkit.Context({"cache_pool#a": "data_copy_concurrency"})


def test_follow_reports_where_and_what():
    scopes = ({"file_io_sync#a": "file_io_sync#b"}, {"file_io_sync#b": False})
    assert follow("file_io_sync#a", "file_io_sync", scopes, "here") == (1, "file_io_sync#b",
                                                                          False)
    with pytest.raises(SpecError, match=r"here: context resource 'file_io_sync#q' is not "
                                        "defined"):
        follow("file_io_sync#q", "file_io_sync", scopes, "here")
    with pytest.raises(SpecError, match="is not a file_io_sync resource"):
        follow("cache_pool", "file_io_sync", scopes, "here")


def test_kvstore_context_member_must_be_an_object(tmp_path):
    kv = {"driver": "file", "path": str(tmp_path) + "/", "context": 5}
    with pytest.raises(ValueError):
        ts.KvStore.open(kv).result()
    with pytest.raises(SpecError, match="'context' must be an object"):
        open_kvstore(kv)


@pytest.mark.parametrize("atomic", ["x", None, 1])
def test_memory_atomic_must_be_a_boolean(atomic):
    with pytest.raises(ValueError):
        ts.KvStore.open({"driver": "memory", "atomic": atomic}).result()
    with pytest.raises(SpecError, match="atomic"):
        open_kvstore({"driver": "memory", "atomic": atomic})
    assert ts.KvStore.open({"driver": "memory", "atomic": False}).result()
    open_kvstore({"driver": "memory", "atomic": False})


# -- memory stores: per context in the spec layer ------------------------------------------------
def _open(lib, json, ctx=None):
    if lib is ts:
        return ts.open(json, context=ctx or ts.Context()).result()
    return zarrkit.open(json, context=ctx)


def _read(lib, json, ctx=None):
    return np.asarray(_open(lib, json, ctx)[...]).tolist()


MISSING = (ValueError, zarrkit.NodeNotFoundError)
FORMS = [{"driver": "memory"}, {"driver": "memory", "path": "x/"}, "memory://",
         "memory://x/", {"driver": "memory", "path": "x/y"}]


@pytest.mark.parametrize("kvstore", FORMS, ids=str)
@pytest.mark.parametrize("lib", [ts, zarrkit], ids=["ts", "zarrkit"])
def test_memory_store_is_shared_by_one_context_only(lib, kvstore):
    json = {"driver": "zarr3", "kvstore": kvstore}
    ctx = lib.Context()
    _open(lib, {**json, "metadata": MD, "create": True}, ctx)[...] = 7
    assert _read(lib, json, ctx) == [7] * 4
    with pytest.raises(MISSING):
        _open(lib, json, lib.Context())
    with pytest.raises(MISSING):  # each open without a context has a context of its own
        _open(lib, json)


@pytest.mark.parametrize("lib", [ts, zarrkit], ids=["ts", "zarrkit"])
def test_named_memory_resources(lib):
    ctx = lib.Context({"memory_key_value_store#a": {}, "memory_key_value_store#b": {},
                       "memory_key_value_store#c": "memory_key_value_store#a"})

    def spec(ref=None):
        kv = {"driver": "memory", "path": "x/"}
        if ref is not None:
            kv["memory_key_value_store"] = ref
        return {"driver": "zarr3", "kvstore": kv}

    _open(lib, {**spec("memory_key_value_store#a"), "metadata": MD, "create": True},
          ctx)[...] = 5
    assert _read(lib, spec("memory_key_value_store#a"), ctx) == [5] * 4
    assert _read(lib, spec("memory_key_value_store#c"), ctx) == [5] * 4  # an alias of #a
    for other in ("memory_key_value_store#b", None, {}):  # another store, the default, new
        with pytest.raises(MISSING):
            _open(lib, spec(other), ctx)
    with pytest.raises((ValueError, SpecError)):
        _open(lib, spec("memory_key_value_store#zz"), ctx)


@pytest.mark.parametrize("lib", [ts, zarrkit], ids=["ts", "zarrkit"])
def test_default_memory_resource_can_be_an_alias(lib):
    ctx = lib.Context({"memory_key_value_store#a": {},
                       "memory_key_value_store": "memory_key_value_store#a"})
    kv = {"driver": "memory", "path": "y/", "memory_key_value_store": "memory_key_value_store#a"}
    _open(lib, {"driver": "zarr3", "kvstore": kv, "metadata": MD, "create": True},
          ctx)[...] = 3
    assert _read(lib, {"driver": "zarr3", "kvstore": "memory://y/"}, ctx) == [3] * 4


@pytest.mark.parametrize("lib", [ts, zarrkit], ids=["ts", "zarrkit"])
def test_memory_resource_in_the_specs_own_context(lib):
    kv = {"driver": "memory", "path": "z/", "memory_key_value_store": "memory_key_value_store#q"}
    json = {"driver": "zarr3", "kvstore": kv, "context": {"memory_key_value_store#q": {}}}
    a = _open(lib, {**json, "metadata": MD, "create": True})
    a[...] = 4
    assert np.asarray(a[...]).tolist() == [4] * 4
    with pytest.raises((ValueError, SpecError)):  # without it, the reference is undefined
        _open(lib, {"driver": "zarr3", "kvstore": kv})


def test_spec_memory_store_and_native_named_store_are_apart():
    MemoryStore.discard("ctxres")
    try:
        native = zarrkit.create("memory://ctxres/a", shape=(4,), dtype="int16", chunks=(2,))
        native[...] = 9
        # the native API shares the named store process-wide, as documented
        assert zarrkit.open("memory://ctxres/a", mode="r")[...].tolist() == [9] * 4
        assert list(MemoryStore.named("ctxres").list_prefix("a/"))
        with pytest.raises(zarrkit.NodeNotFoundError):
            zarrkit.open({"driver": "zarr3", "kvstore": "memory://ctxres/a/"},
                         context=zarrkit.Context())
        # a spec reaches the native store by its object
        spec = {"driver": "zarr3", "kvstore": MemoryStore.named("ctxres"), "path": "a"}
        assert zarrkit.open(spec)[...].tolist() == [9] * 4
        # and a spec's writes stay out of the process-wide store
        ctx = zarrkit.Context()
        zarrkit.open({"driver": "zarr3", "kvstore": "memory://ctxres/b/", "metadata": MD,
                      "create": True}, context=ctx)
        assert not list(MemoryStore.named("ctxres").list_prefix("b/"))
    finally:
        MemoryStore.discard("ctxres")


def test_spec_of_a_memory_array_reopens_in_its_context():
    ctx = zarrkit.Context()
    a = zarrkit.open({"driver": "zarr3", "kvstore": "memory://x/", "metadata": MD,
                      "create": True}, context=ctx)
    a[...] = 2
    spec = a.spec().to_json()
    assert np.asarray(zarrkit.open(spec, context=ctx)[...]).tolist() == [2] * 4
    # TensorStore reads that spec as the same location
    t = ts.open(ts.Spec(spec), context=ts.Context(), create=True).result()
    assert t.kvstore.path == "x/"


# -- request concurrency of remote stores --------------------------------------------------------
def _s3(bucket, opts, **members):
    # storage_options (a zarrkit member) carry the loopback server's keys
    return {"driver": "s3", "bucket": bucket, "storage_options": opts, **members}


def _exhausted(semaphore: threading.BoundedSemaphore, limit: int) -> bool:
    """Whether `semaphore` lets exactly `limit` holders in (released again afterwards)."""
    got = [semaphore.acquire(blocking=False) for _ in range(limit + 1)]
    for ok in got:
        if ok:
            semaphore.release()
    return got == [True] * limit + [False]


def test_s3_request_concurrency_bounds_the_arrays_io(bucket, opts):
    kv = _s3(bucket, opts, s3_request_concurrency={"limit": 2})
    ts.KvStore.Spec({k: v for k, v in kv.items() if k != "storage_options"})
    a = zarrkit.open({"driver": "zarr3", "kvstore": kv, "metadata": MD, "create": True})
    assert _exhausted(a._open_state.io_limit, 2)
    a[...] = np.arange(4)
    assert a[...].tolist() == [0, 1, 2, 3]


def test_request_concurrency_of_the_context_is_shared(bucket, opts):
    ctx = zarrkit.Context({"s3_request_concurrency": {"limit": 3}})
    json = {"driver": "zarr3", "kvstore": _s3(bucket, opts), "metadata": MD,
            "create": True}
    ts.Context({"s3_request_concurrency": {"limit": 3}})
    a = zarrkit.open(json, context=ctx)
    b = zarrkit.open({**json, "kvstore": {**json["kvstore"], "path": "b/"}}, context=ctx)
    assert a._open_state.io_limit is b._open_state.io_limit
    assert _exhausted(a._open_state.io_limit, 3)
    # the default ("shared") adds no bound, as before
    assert zarrkit.open({**json, "create": False})._open_state.io_limit is None


@pytest.mark.parametrize("name,spec", [
    ("s3_request_concurrency", {"driver": "s3", "bucket": "b"}),
    ("gcs_request_concurrency", {"driver": "gcs", "bucket": "b"}),
    ("http_request_concurrency", {"driver": "http", "base_url": "http://h/a"}),
])
def test_request_concurrency_limits_are_checked_as_tensorstore(name, spec):
    for bad in (0, -1, "x"):
        with pytest.raises(ValueError):
            ts.Context({name: {"limit": bad}})
        with pytest.raises(SpecError):
            zarrkit.Context({name: {"limit": bad}})
        with pytest.raises(SpecError, match=name):
            open_kvstore({**spec, name: {"limit": bad}})


def test_request_retries_of_the_context_reach_the_store():
    """A spec without the member uses the context's resource, as in TensorStore; the member
    of another driver does not apply."""
    spec = {"driver": "s3", "bucket": "bkt", "endpoint": "http://127.0.0.1:9",
            "aws_credentials": {"type": "anonymous"}}
    ctx = KvStoreContext(({"s3_request_retries": {"max_retries": 5},
                           "http_request_retries": {"max_retries": 1}},))
    assert open_kvstore(spec, context=ctx)[0].location.options.max_retries == 5
    alias = KvStoreContext(({"s3_request_retries": "s3_request_retries#r",
                             "s3_request_retries#r": {"max_retries": 0}},))
    assert open_kvstore(spec, context=alias)[0].location.options.max_retries == 0
    assert open_kvstore(spec)[0].location.options.max_retries == 3

"""Open modes and constraints on existing arrays: each request must succeed or fail exactly
when TensorStore's does, and zarrkit's errors must name the member at fault."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorstore as ts
from _spec_helpers import ts_kwargs, zk_kwargs

import zarrkit
from zarrkit import storage

BASE = {"dtype": "float32", "shape": [10, 20], "dimension_units": ["4nm", None]}
METADATA = {"codecs": [{"name": "blosc"}], "dimension_names": ["x", "y"]}

# (name, extra spec members, keywords, a word zarrkit's error must contain or None for success)
CASES = [
    ("shape", {"metadata": {"shape": [10, 21]}}, {}, "metadata.shape"),
    ("shape-ok", {"metadata": {"shape": [10, 20]}}, {}, None),
    ("data_type", {"metadata": {"data_type": "int32"}}, {}, "data_type"),
    ("dtype-member", {"dtype": "int32"}, {}, "dtype"),
    ("dtype-keyword", {}, {"dtype": "int32"}, "dtype"),
    ("fill", {"metadata": {"data_type": "float32", "fill_value": 1}}, {}, "fill_value"),
    ("fill-keyword", {}, {"fill_value": 1}, "fill_value"),
    ("fill-keyword-ok", {}, {"fill_value": 0}, None),
    ("codecs-partial", {"metadata": {"codecs": ["blosc"]}}, {}, None),
    ("codecs-other", {"metadata": {"codecs": ["zstd"]}}, {}, "metadata.codecs"),
    ("codecs-config", {"metadata": {"codecs": [{"name": "blosc",
                                                "configuration": {"clevel": 5}}]}}, {}, None),
    ("codecs-config-bad", {"metadata": {"codecs": [{"name": "blosc",
                                                    "configuration": {"clevel": 6}}]}}, {},
     "clevel"),
    ("codecs-empty", {"metadata": {"codecs": []}}, {}, "metadata.codecs"),
    ("codecs-full", {"metadata": {"codecs": ["bytes", "blosc"]}}, {}, None),
    ("codecs-endian", {"metadata": {"codecs": [{"name": "bytes", "configuration": {
        "endian": "big"}}, "blosc"]}}, {}, "endian"),
    ("chunk_grid", {"metadata": {"chunk_grid": {"name": "regular", "configuration": {
        "chunk_shape": [5, 5]}}}}, {}, "chunk_shape"),
    ("key-encoding", {"metadata": {"chunk_key_encoding": {"name": "v2"}}}, {},
     "chunk_key_encoding"),
    ("key-encoding-ok", {"metadata": {"chunk_key_encoding": {
        "name": "default", "configuration": {"separator": "/"}}}}, {}, None),
    ("dimension_names", {"metadata": {"dimension_names": ["x", "z"]}}, {}, "dimension_names"),
    ("dimension_names-ok", {"metadata": {"dimension_names": ["x", "y"]}}, {}, None),
    ("attributes", {"metadata": {"attributes": {"a": 1}}}, {}, "attributes.a"),
    ("attributes-ok", {"metadata": {"attributes": {"dimension_units": ["4 nm", None]}}}, {},
     None),
    ("unknown-member", {"metadata": {"foo": {"must_understand": False}}}, {}, "metadata.foo"),
    ("units", {}, {"dimension_units": ["4nm", None]}, None),
    ("units-other", {}, {"dimension_units": ["5nm", None]}, "dimension_units"),
    ("units-partial", {}, {"dimension_units": ["4nm", "3nm"]}, None),
    ("layout", {}, {"chunk_layout": {"read_chunk_shape": [5, 5]}}, "chunk_layout"),
    ("layout-ok", {}, {"chunk_layout": {"read_chunk_shape": [10, 20]}}, None),
    ("layout-soft", {}, {"chunk_layout": {"read_chunk_shape_soft_constraint": [5, 5]}}, None),
    ("layout-order", {}, {"chunk_layout": {"inner_order": [1, 0]}}, "chunk_layout"),
    ("layout-elements", {}, {"chunk_layout": {"read_chunk_elements": 7}}, None),
    ("domain", {}, {"domain": {"shape": [10, 20]}}, None),
    ("domain-labels", {}, {"domain": {"labels": ["x", "q"], "shape": [10, 20]}}, "labels"),
    ("domain-labels-ok", {}, {"domain": {"labels": ["x", ""], "shape": [10, 20]}}, None),
    ("domain-origin", {}, {"domain": {"inclusive_min": [1, 0], "shape": [9, 20]}}, "domain"),
    ("shape-keyword", {}, {"shape": [10, 21]}, "domain"),
    ("rank", {"rank": 3}, {}, "rank"),
    ("rank-ok", {"rank": 2}, {}, None),
    ("codec", {}, {"codec": {"driver": "zarr3", "codecs": ["zstd"]}}, "codec"),
    ("codec-ok", {}, {"codec": {"driver": "zarr3", "codecs": ["blosc"]}}, None),
    ("create-existing", {}, {"create": True, "dtype": "float32", "shape": [10, 20]},
     "already exists"),
    ("create-or-open", {}, {"create": True, "open": True, "dtype": "float32",
                            "shape": [10, 20]}, None),
    ("create-or-open-mismatch", {}, {"create": True, "open": True, "dtype": "float32",
                                     "shape": [10, 21]}, "domain"),
    ("open-false", {}, {"open": False}, None),
    ("missing", {"kvstore": "MISSING"}, {}, "create is false"),
    ("assume", {"kvstore": "MISSING"}, {"assume_metadata": True, "dtype": "float32",
                                        "shape": [3, 3]}, None),
    ("assume-no-dtype", {"kvstore": "MISSING"}, {"assume_metadata": True, "shape": [3, 3]},
     "dtype"),
    ("assume-open", {"kvstore": "MISSING"}, {"open": True, "assume_metadata": True,
                                             "dtype": "float32", "shape": [3, 3]}, None),
    ("assume-create", {"kvstore": "MISSING"}, {"create": True, "assume_metadata": True,
                                               "dtype": "float32", "shape": [3, 3]},
     "assume_metadata"),
    ("assume-cached", {"kvstore": "MISSING"}, {"assume_cached_metadata": True,
                                               "dtype": "float32", "shape": [3, 3]}, None),
    ("delete-and-open", {}, {"create": True, "open": True, "delete_existing": True,
                             "dtype": "float32", "shape": [3, 3]}, "delete_existing"),
    ("delete-without-create", {}, {"delete_existing": True, "dtype": "float32",
                                   "shape": [3, 3]}, "delete_existing"),
    ("driver", {"driver": "zarr4"}, {}, "driver"),
    ("kvstore-driver", {"kvstore": {"driver": "memoryx"}}, {}, "memoryx"),
    ("url-scheme", {"kvstore": "nope://x"}, {}, "nope"),
    ("url-malformed", {"kvstore": "memory:/x"}, {}, "memory:/x"),
    ("member", {"foo": 1}, {}, "foo"),
    ("metadata-member", {"metadata": {"foo": 1}}, {}, "metadata.foo"),
    ("fill-without-type", {"metadata": {"fill_value": 1}}, {}, "data_type"),
    ("zarr_format", {"metadata": {"zarr_format": 2}}, {}, "zarr_format"),
    ("transform", {"transform": {"input_inclusive_min": [0, 0],
                                 "input_exclusive_max": [5, 5]}}, {}, None),
    ("transform-rank", {"transform": {"input_inclusive_min": [0, 0],
                                      "input_exclusive_max": [5, 5]}, "rank": 3}, {}, "rank"),
]


@pytest.fixture(scope="module")
def stores():
    ctx = ts.Context()
    ts_base = {"driver": "zarr3", "kvstore": {"driver": "memory", "path": "q/"}}
    zk_base = {"driver": "zarr3", "kvstore": {"driver": "memory", "path": "open-modes/q/"}}
    ts.open({**ts_base, "metadata": METADATA}, create=True, context=ctx,
            **ts_kwargs(BASE)).result()
    zk_ctx = zarrkit.Context()  # the spec layer's memory store is its context's, as in TS
    zarrkit.open({**zk_base, "metadata": METADATA}, create=True, context=zk_ctx,
                 **zk_kwargs(BASE))
    yield ctx, ts_base, zk_base, zk_ctx
    zarrkit.kvstore.MemoryStore.discard("open-modes")


def _spec(base: dict, extra: dict, prefix: str) -> dict:
    spec = {**base, **extra}
    if spec["kvstore"] == "MISSING":
        spec["kvstore"] = {"driver": "memory", "path": prefix + "missing/"}
    return spec


@pytest.mark.parametrize("name,extra,kw,error", CASES, ids=[c[0] for c in CASES])
def test_open_like_tensorstore(stores, name, extra, kw, error):
    ctx, ts_base, zk_base, zk_ctx = stores
    try:
        ts.open(_spec(ts_base, extra, ""), context=ctx, **ts_kwargs(kw)).result()
        ts_ok = True
    except ValueError:
        ts_ok = False
    assert ts_ok == (error is None), f"TensorStore disagrees with the expectation for {name}"
    if error is None:
        zarrkit.open(_spec(zk_base, extra, "open-modes/"), context=zk_ctx, **zk_kwargs(kw))
        return
    with pytest.raises(zarrkit.ZarrkitError) as info:
        zarrkit.open(_spec(zk_base, extra, "open-modes/"), context=zk_ctx, **zk_kwargs(kw))
    assert error in str(info.value)


def test_delete_existing_replaces(tmp_path):
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)}}
    a = zarrkit.open(spec, create=True, dtype="int16", shape=[4])
    a[...] = 5
    b = zarrkit.open(spec, create=True, delete_existing=True, dtype="uint8", shape=[3])
    assert b.dtype == np.uint8 and (b[...] == 0).all()
    assert ts.open(spec).result().dtype == ts.uint8
    assert not (tmp_path / "c" / "0").exists() or b.shape == (3,)


def test_assume_metadata_neither_reads_nor_writes(tmp_path):
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "a")}}
    a = zarrkit.open(spec, assume_metadata=True, dtype="int16", shape=[6],
                     chunk_layout=zarrkit.ChunkLayout(chunk_shape=[3]))
    a[...] = np.arange(6)
    assert not (tmp_path / "a" / "zarr.json").exists()
    assert (a[...] == np.arange(6)).all()
    with pytest.raises(zarrkit.NotSupportedError):
        a.resize(exclusive_max=[8])
    # TensorStore, assuming the same metadata, reads what was written.
    t = ts.open(spec, assume_metadata=True, dtype=ts.int16, shape=[6],
                chunk_layout=ts.ChunkLayout(chunk_shape=[3])).result()
    assert (t.read().result() == np.arange(6)).all()


def test_assume_cached_metadata_still_resizes(tmp_path):
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)}}
    zarrkit.open(spec, create=True, dtype="int16", shape=[6])
    a = zarrkit.open(spec, assume_cached_metadata=True, dtype="int16", shape=[6])
    a.resize(exclusive_max=[9])
    assert json.loads((tmp_path / "zarr.json").read_text())["shape"] == [9]


def test_spec_members_give_the_mode(tmp_path):
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)},
            "create": True, "dtype": "uint8", "metadata": {"shape": [2]}}
    zarrkit.open(spec)
    with pytest.raises(zarrkit.NodeExistsError):
        zarrkit.open(spec)
    assert zarrkit.open({**spec, "open": True}).shape == (2,)
    assert zarrkit.open(zarrkit.Spec(spec), open=True).shape == (2,)


def test_group_is_not_an_array(tmp_path):
    zarrkit.open_group(tmp_path, mode="w")
    with pytest.raises(zarrkit.NodeTypeError):
        zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)}})


def test_read_only(tmp_path):
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)}}
    zarrkit.open(spec, create=True, dtype="uint8", shape=[2])
    for a in (zarrkit.open(spec, write=False), zarrkit.open(spec, "r")):
        with pytest.raises(zarrkit.ReadOnlyError):
            a[0] = 1


def test_kvstore_forms_reach_the_same_array(tmp_path):
    path = str(tmp_path / "a.zip")
    url = f"file://{path}|zip:inner/arr"
    a = zarrkit.open({"driver": "zarr3", "kvstore": url}, create=True, dtype="int8",
                     shape=[3])
    a[...] = [1, 2, 3]
    a.store.close()
    b = zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "zip", "path": "inner/arr/",
                                                     "base": {"driver": "file", "path": path}}})
    assert list(b[...]) == [1, 2, 3]
    assert b.spec().to_json()["kvstore"] == {"driver": "zip", "path": "inner/arr/",
                                             "base": {"driver": "file", "path": path}}
    c = zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "zip", "base": {
        "driver": "file", "path": path}}, "path": "inner/arr"})
    assert list(c[...]) == [1, 2, 3]
    b.store.close()
    c.store.close()
    assert storage.metadata_key("inner/arr") in zarrkit.kvstore.ZipStore(path, "r").list_prefix("")

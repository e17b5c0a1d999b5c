"""The spec layer's checks and conversions, compared with TensorStore where it has an
equivalent: context references, fill values, units, nested sharding, shapes, v2 dtypes."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
import tensorstore as ts

import zarrkit
from zarrkit import storage


def _spec(tmp_path: Any, name: str = "a", **members: Any) -> dict[str, Any]:
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": f"{tmp_path}/{name}/"},
            **members}


def _zarr_json(array: Any) -> dict[str, Any]:
    return json.loads(bytes(array.store.get(storage.metadata_key(array.path))))


@pytest.mark.parametrize("members", [
    {"cache_pool": "cache_pool#missing"},
    {"data_copy_concurrency": "data_copy_concurrency#missing"},
    {"context": {"cache_pool": "cache_pool#missing"}},
])
def test_undefined_context_resource_is_refused(tmp_path: Any, members: dict) -> None:
    spec = _spec(tmp_path, metadata={"shape": [4], "data_type": "int16"}, create=True,
                 **members)
    with pytest.raises(ValueError, match="not defined"):
        ts.open(spec).result()
    with pytest.raises(zarrkit.SpecError, match="#missing.*not defined"):
        zarrkit.open(spec)


def test_pickle_keeps_a_cache_pool_defined_in_the_parent_context(tmp_path: Any) -> None:
    spec = _spec(tmp_path, metadata={"shape": [4], "data_type": "int16"}, create=True,
                 context={"cache_pool": "cache_pool#big"})
    parent = zarrkit.Context({"cache_pool#big": {"total_bytes_limit": 1000}})
    a = zarrkit.open(spec, context=parent)
    b = pickle.loads(pickle.dumps(a))
    assert b._open_state.cache_pool.total_bytes_limit == 1000


@pytest.mark.parametrize("fill", [300, -212, 44.5])
def test_open_refuses_a_fill_value_the_dtype_cannot_hold(tmp_path: Any, fill: Any) -> None:
    # 300 wrapped to 44 and matched the stored uint8 fill value 44.
    spec = _spec(tmp_path)
    ts.open({**spec, "metadata": {"shape": [4], "data_type": "uint8", "fill_value": 44}},
            create=True).result()
    with pytest.raises(ValueError):
        ts.open({**spec, "schema": {"fill_value": fill}}).result()
    with pytest.raises(zarrkit.SpecError, match="fill_value"):
        zarrkit.open({**spec, "schema": {"fill_value": fill}})
    with pytest.raises(zarrkit.SpecError, match="fill_value"):
        zarrkit.open(spec, fill_value=fill)
    assert zarrkit.open(spec, fill_value=44).fill_value == 44


def test_schema_fill_value_converts_alike_whichever_gives_the_dtype(tmp_path: Any) -> None:
    # With dtype="bool" a fill value of 2 was True; with metadata.data_type bool an error.
    md = {"shape": [3], "data_type": "bool"}
    a = zarrkit.open(_spec(tmp_path, metadata=md), create=True, fill_value=2)
    t = ts.open(_spec(tmp_path, "t", metadata=md), create=True, fill_value=2).result()
    assert _zarr_json(a)["fill_value"] is True
    assert json.loads(t.kvstore.read("zarr.json").result().value)["fill_value"] is True


@pytest.mark.parametrize("units", [["nm"], ["nm", 5]])
def test_metadata_dimension_units_attribute_is_checked(tmp_path: Any, units: Any) -> None:
    md = {"shape": [10, 20], "data_type": "int16", "attributes": {"dimension_units": units}}
    with pytest.raises(ValueError):
        ts.open(_spec(tmp_path, "t", metadata=md), create=True).result()
    with pytest.raises(zarrkit.SpecError, match="attributes.dimension_units"):
        zarrkit.open(_spec(tmp_path, metadata=md), create=True)


def test_schema_codec_with_nested_sharding(tmp_path: Any) -> None:
    codec = {"driver": "zarr3", "codecs": [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [10, 10], "codecs": [{"name": "sharding_indexed",
                                             "configuration": {"chunk_shape": [5, 5]}}]}}]}
    md = {"shape": [100, 200], "data_type": "int16"}
    t = ts.open(_spec(tmp_path, "t", metadata=md), create=True,
                codec=ts.CodecSpec(codec)).result()
    a = zarrkit.open(_spec(tmp_path, metadata=md), create=True, codec=zarrkit.CodecSpec(codec))
    assert _zarr_json(a) == json.loads(t.kvstore.read("zarr.json").result().value)
    assert a.chunk_layout.to_json() == t.chunk_layout.to_json()


@pytest.mark.parametrize("shape", [5, "ab", ["a"], [None], [[1]], [-1], [True]])
def test_bad_shape_keyword_is_a_spec_error(tmp_path: Any, shape: Any) -> None:
    with pytest.raises(zarrkit.SpecError, match="shape"):
        zarrkit.open(_spec(tmp_path), create=True, dtype="int16", shape=shape)
    with pytest.raises(zarrkit.SpecError, match="shape"):
        zarrkit.Schema(shape=shape)


@pytest.mark.parametrize("dtype", ["|S4", [["a", "<i2"], ["b", "<f4"]], "<U3", "<M8[s]"])
def test_spec_of_a_v2_array_without_tensorstore_dtype_reopens(tmp_path: Any,
                                                               dtype: Any) -> None:
    spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": f"{tmp_path}/a/"},
            "metadata": {"dtype": dtype}}
    a = zarrkit.open(spec, create=True, shape=[3])
    b = zarrkit.open(a.spec().to_json())
    assert b.dtype == a.dtype and b.spec() == a.spec()


def test_spec_dtype_and_rank_for_driver_zarr() -> None:
    json_ = {"driver": "zarr", "kvstore": {"driver": "memory"}, "dtype": "int16", "rank": 2}
    spec = zarrkit.Spec(json_)
    assert (spec.dtype, spec.rank) == ("int16", 2)
    assert ts.Spec(json_).dtype == ts.int16 and ts.Spec(json_).rank == 2


def test_a_store_object_in_a_spec_is_used_not_copied(tmp_path):
    """open_spec deep-copied the spec, store object included: a MemoryStore (or a writable
    ZipStore) raised TypeError (its lock cannot be copied), a FileStore was copied."""
    from zarrkit.kvstore import FileStore, MemoryStore

    for store in (MemoryStore(), FileStore(tmp_path / "f")):
        a = zarrkit.open({"driver": "zarr3", "kvstore": store,
                          "metadata": {"shape": [4], "data_type": "int32"}}, create=True)
        a[...] = [1, 2, 3, 4]
        assert a.store is store and "zarr.json" in set(store.list_prefix(""))

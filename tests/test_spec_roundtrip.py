"""Arrays describe themselves as specs: `spec().to_json()` reopens the same array in zarrkit
and in TensorStore, arrays pickle as their spec, and schema, domain, chunk layout and
dimension units read as TensorStore reports them."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import numpy as np
import pytest
import tensorstore as ts

import zarrkit


def _file(path) -> dict:
    return {"driver": "file", "path": str(path)}


CREATE_CASES = [
    ({"dtype": "uint16", "shape": [30, 40]}, {}),
    ({"dtype": "float32", "shape": [30, 40],
      "chunk_layout": {"read_chunk_shape": [5, 8], "write_chunk_shape": [10, 16],
                       "inner_order": [1, 0]},
      "dimension_units": ["4nm", None], "fill_value": 1.5},
     {"dimension_names": ["y", "x"]}),
    ({"dtype": "float64", "shape": [30, 40], "chunk_layout": {"write_chunk_shape": [10, 16]}},
     {"codecs": [{"name": "transpose", "configuration": {"order": "F"}}, "zstd", "crc32c"]}),
    ({"dtype": "int8", "shape": [7, 5, 3], "chunk_layout": {"chunk_shape": [2, -1, 2]}},
     {"chunk_key_encoding": {"name": "v2"}, "attributes": {"a": [1, 2]}}),
    ({"dtype": "complex64", "shape": [9]}, {"codecs": [{"name": "sharding_indexed",
                                                        "configuration": {"chunk_shape": [3],
                                                                          "index_location":
                                                                              "start"}}]}),
    ({"dtype": "bool", "shape": []}, {}),
]


def _zk_kwargs(kw: dict) -> dict:
    kw = dict(kw)
    if "chunk_layout" in kw:
        kw["chunk_layout"] = zarrkit.ChunkLayout(**kw["chunk_layout"])
    return kw


def _ts_kwargs(kw: dict) -> dict:
    kw = dict(kw)
    if "chunk_layout" in kw:
        kw["chunk_layout"] = ts.ChunkLayout(**kw["chunk_layout"])
    return kw


def _data(shape, dtype) -> np.ndarray:
    values = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    return (values % 2 == 0) if dtype == "bool" else values.astype(dtype)


@pytest.mark.parametrize("kw,metadata", CREATE_CASES)
def test_tensorstore_reads_what_zarrkit_created(tmp_path, kw, metadata):
    spec = {"driver": "zarr3", "kvstore": _file(tmp_path), "metadata": metadata}
    a = zarrkit.open(spec, create=True, **_zk_kwargs(kw))
    data = _data(kw["shape"], kw["dtype"])
    a[...] = data
    t = ts.open(a.spec().to_json()).result()
    assert np.array_equal(t.read().result(), data)
    assert t.schema.to_json() == a.schema.to_json()
    assert t.domain.to_json() == a.domain.to_json()
    assert t.chunk_layout.to_json() == a.chunk_layout.to_json()
    assert [None if u is None else u.to_json() for u in t.dimension_units] == \
        [None if u is None else u.to_json() for u in a.dimension_units]
    assert t.spec().to_json() == a.spec().to_json()


@pytest.mark.parametrize("kw,metadata", CREATE_CASES)
def test_zarrkit_reads_what_tensorstore_created(tmp_path, kw, metadata):
    spec = {"driver": "zarr3", "kvstore": _file(tmp_path), "metadata": metadata}
    t = ts.open(spec, create=True, **_ts_kwargs(kw)).result()
    data = _data(kw["shape"], kw["dtype"])
    t[...] = data
    a = zarrkit.open(t.spec().to_json())
    assert np.array_equal(np.asarray(a[...]), data)
    assert a.schema.to_json() == t.schema.to_json()
    assert a.spec().to_json() == t.spec().to_json()
    assert zarrkit.open(spec).spec().to_json() == t.spec().to_json()


def test_spec_round_trip(tmp_path):
    spec = {"driver": "zarr3", "kvstore": _file(tmp_path)}
    a = zarrkit.open(spec, create=True, dtype="uint8", shape=[4, 5],
                     recheck_cached_data="open", context={"cache_pool": {
                         "total_bytes_limit": 1 << 20}})
    again = zarrkit.open(a.spec().to_json())
    assert isinstance(again, zarrkit.Array)
    assert again.spec().to_json() == a.spec().to_json()
    assert a.spec().to_json()["recheck_cached_data"] == "open"
    assert a.spec(retain_context=True).to_json()["context"] == {  # as TensorStore's
        "cache_pool": {"total_bytes_limit": 1 << 20}, "data_copy_concurrency": {},
        "file_io_concurrency": {}}
    assert "metadata" not in a.spec(minimal_spec=True).to_json()
    assert zarrkit.Spec(a.spec().to_json()) == a.spec()
    assert a.spec(create=True, open=True).to_json()["create"] is True


def test_view_specs_reopen_the_view(tmp_path):
    a = zarrkit.open({"driver": "zarr3", "kvstore": _file(tmp_path)}, create=True,
                     dtype="int32", shape=[6, 8])
    a[...] = np.arange(48).reshape(6, 8)
    view = a.view[1:5:2, 3].translate_to[10]
    json_spec = view.spec().to_json()
    again = zarrkit.open(json_spec)
    assert isinstance(again, zarrkit.View)
    assert again.domain == view.domain
    assert (again.read().result() == view.read().result()).all()
    t = ts.open(json_spec).result()
    assert t.domain.to_json() == view.domain.to_json()
    assert (t.read().result() == view.read().result()).all()


def test_pickle_in_this_and_another_process(tmp_path):
    a = zarrkit.open({"driver": "zarr3", "kvstore": _file(tmp_path)}, create=True,
                     dtype="float64", shape=[3, 4], dimension_units=["m", "s"])
    a[...] = np.arange(12).reshape(3, 4)
    b = pickle.loads(pickle.dumps(a))
    assert b.spec().to_json() == a.spec().to_json()
    assert (b[...] == a[...]).all()
    code = ("import pickle, sys; a = pickle.loads(sys.stdin.buffer.read()); "
            "a[0, 0] = 42; print(a.spec().to_json()['metadata']['shape'], float(a[2, 3]))")
    out = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(a),
                         capture_output=True, check=True).stdout.decode()
    assert out.split() == ["[3,", "4]", "11.0"]
    assert a[0, 0] == 42


def test_schema_domain_units_and_layout(tmp_path):
    spec = {"driver": "zarr3", "kvstore": _file(tmp_path),
            "metadata": {"dimension_names": ["x", None, "z"]}}
    kw = {"dtype": "float32", "shape": [4, 5, 6], "dimension_units": ["4nm", "", None],
          "fill_value": 1.5}
    t = ts.open(spec | {"kvstore": _file(tmp_path / "t")}, create=True, **kw).result()
    a = zarrkit.open(spec, create=True, **kw)
    assert a.schema.to_json() == t.schema.to_json()
    assert repr(a.domain) == repr(t.domain)
    assert a.domain.labels == ("x", "", "z")
    assert [str(u) if u else None for u in a.dimension_units] == ["4 nm", "1", None]
    assert a.attrs["dimension_units"] == ["4 nm", "1", None]
    layout = a.chunk_layout
    assert layout.read_chunk.shape == (4, 5, 6) and layout.write_chunk.shape == (4, 5, 6)
    assert layout.inner_order == (0, 1, 2) and layout.grid_origin == (0, 0, 0)
    assert isinstance(a.schema, zarrkit.Schema)
    assert zarrkit.Schema(a.schema.to_json()).to_json() == t.schema.to_json()


def test_repeated_dimension_names_leave_dimensions_unlabeled(tmp_path):
    # As the driver document says (TensorStore 0.1.86 itself refuses to open such an array).
    a = zarrkit.create(tmp_path, shape=(2, 3), dtype="u1", dimension_names=["a", "a"])
    assert a.domain.labels == ("", "")
    assert zarrkit.open(a.spec().to_json()).domain.labels == ("", "")


def test_zarr_v2_specs(tmp_path):
    spec = {"driver": "zarr", "kvstore": _file(tmp_path)}
    a = zarrkit.open(spec, create=True, dtype="uint16", shape=[4, 6])
    a[...] = 3
    t = ts.open(a.spec().to_json()).result()
    assert (t.read().result() == 3).all()
    assert a.spec().to_json() == t.spec().to_json()
    assert a.schema.to_json() == t.schema.to_json()
    again = zarrkit.open(a.spec().to_json())
    assert again.metadata == a.metadata
    assert pickle.loads(pickle.dumps(a)).metadata == a.metadata
    with pytest.raises(zarrkit.SpecError, match="dtype"):
        zarrkit.open(spec, dtype="int32")


def test_written_metadata_equals_tensorstores_byte_for_byte_content(tmp_path):
    kw = {"dtype": "uint16", "shape": [100, 100],
          "chunk_layout": {"read_chunk_shape": [10, 10], "write_chunk_shape": [50, 50]}}
    a = zarrkit.open({"driver": "zarr3", "kvstore": _file(tmp_path / "a")}, create=True,
                     **_zk_kwargs(kw))
    ts.open({"driver": "zarr3", "kvstore": _file(tmp_path / "t")}, create=True,
            **_ts_kwargs(kw)).result()
    assert json.loads((tmp_path / "a" / "zarr.json").read_text()) == \
        json.loads((tmp_path / "t" / "zarr.json").read_text())
    assert a.chunks == (10, 10) and a.shards == (50, 50)

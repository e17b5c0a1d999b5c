"""Follow-ups: `with_config` keeps what a spec attached at open; dimension expressions (and
TensorStore's other indexing) on `IndexTransform` and `IndexDomain`; numcodecs filters that
refuse a data type only when encoding are refused at creation; `zarrkit verify` names what it
counts for sharded arrays and checks every stored inner chunk on its own."""

from __future__ import annotations

import json
import os
import pickle
import warnings

import ml_dtypes  # noqa: F401 - registers bfloat16 and the float8 types with numpy
import numpy as np
import pytest
import tensorstore as ts

import zarrkit
from zarrkit import ChunkNotFoundError, CodecError, SelectionError
from zarrkit.cli import main
from zarrkit.cli_tools import verify
from zarrkit.kvstore import MemoryStore

# -- 1. with_config keeps the spec's settings ----------------------------------------------------


def _spec_array(kvstore=None, **members):
    spec = {"driver": "zarr3", "kvstore": kvstore or {"driver": "memory"},
            "context": {"cache_pool": {"total_bytes_limit": 1 << 20}},
            "fill_missing_data_reads": False, "recheck_cached_data": False, **members}
    return zarrkit.open(spec, create=True, dtype="int32", shape=[4, 4],
                        chunk_layout={"chunk": {"shape": [2, 2]}})


def test_with_config_keeps_fill_missing_data_reads():
    a = _spec_array()
    b = a.with_config(write_empty_chunks=True)
    with pytest.raises(ChunkNotFoundError, match="fill_missing_data_reads"):
        b[0:2, 0:2]
    b[0:2, 0:2] = 0  # and the changed setting applies: a chunk of fill values is stored
    assert b.store.get("c/0/0") is not None
    np.testing.assert_array_equal(b[0:2, 0:2], 0)


def test_with_config_keeps_the_cache_pool():
    a = _spec_array()
    b = a.with_config(write_empty_chunks=True)
    assert b._open_state.cache_pool is a._open_state.cache_pool
    assert b._open_state.context is a._open_state.context
    a[2:4, 2:4] = 5
    a[2:4, 2:4]  # read: now cached, and recheck_cached_data false serves it without reading
    a.store.set("c/1/1", b"not a chunk")
    np.testing.assert_array_equal(b[2:4, 2:4], 5)
    alone = zarrkit.open({**a.spec().to_json(), "kvstore": a.store})  # a pool of its own
    with pytest.raises(zarrkit.CorruptDataError):
        alone[2:4, 2:4]


def test_with_config_spec_differs_only_in_the_changed_setting():
    a = _spec_array(recheck_cached_metadata=True)
    b = a.with_config({"write_empty_chunks": True})
    expected = a.spec(retain_context=True).to_json()
    expected["store_data_equal_to_fill_value"] = True
    assert b.spec(retain_context=True).to_json() == expected
    assert b.with_config(write_empty_chunks=False).spec(retain_context=True).to_json() == \
        a.spec(retain_context=True).to_json()


def test_with_config_keeps_metadata_rechecks():
    a = _spec_array(recheck_cached_metadata=True)
    a[0:2, 0:2] = 1
    b = a.with_config(write_empty_chunks=True)
    other = zarrkit.open_array(a.store)
    other.resize((6, 4))
    assert b.shape == (4, 4)
    b[0:2, 0:2]  # the read rereads the metadata first, as `a`'s would
    assert b.shape == (6, 4)


def test_with_config_result_pickles_with_its_settings(tmp_path):
    a = _spec_array({"driver": "file", "path": str(tmp_path / "a")})
    b = pickle.loads(pickle.dumps(a.with_config(write_empty_chunks=True)))
    assert b.write_empty_chunks
    with pytest.raises(ChunkNotFoundError):
        b[0:2, 0:2]


def test_with_config_of_a_plain_array():
    a = zarrkit.create_array(MemoryStore(), shape=(4,), chunks=(2,), dtype="i4")
    b = a.with_config(write_empty_chunks=True)
    assert b._open_state is None and b.write_empty_chunks
    np.testing.assert_array_equal(b[:], 0)  # missing chunks read as the fill value


# -- 2. indexing transforms and domains ----------------------------------------------------------


def _transform(lib, **members):
    return lib.IndexTransform(**{"input_" + k: v for k, v in members.items()}) if lib is ts \
        else zarrkit.IndexTransform.from_json({"input_" + k: v for k, v in members.items()})


def _domain(lib, **members):
    return lib.IndexDomain(**members) if lib is ts else zarrkit.IndexDomain.make(**members)


def _xyz_t(lib):
    return _transform(lib, shape=[4, 5, 6], labels=["x", "y", "z"])


def _xyz(lib):
    return _domain(lib, shape=[4, 5, 6], labels=["x", "y", "z"])


SAME_AS_TENSORSTORE = {
    "t[d.translate_to]": lambda L: _xyz_t(L)[L.d["x"].translate_to[1]],
    "t[d slice]": lambda L: _xyz_t(L)[L.d[0][2:4]],
    "t[d label]": lambda L: _xyz_t(L)[L.d["y"].label["q"]],
    "t[d diagonal]": lambda L: _xyz_t(L)[L.d[0, 1].diagonal],
    "t[d newaxis]": lambda L: _xyz_t(L)[L.d[0][None]],
    "t[int]": lambda L: _xyz_t(L)[1],
    "t[slice, ..., int]": lambda L: _xyz_t(L)[1:3, ..., 2],
    "t[None]": lambda L: _xyz_t(L)[None],
    "t[index array]": lambda L: _xyz_t(L)[[0, 1]],
    "t[bool]": lambda L: _xyz_t(L)[True],
    "t.oindex": lambda L: _xyz_t(L).oindex[1, [0, 2]],
    "t.vindex": lambda L: _xyz_t(L).vindex[[0, 1], [1, 2]],
    "t[domain]": lambda L: _xyz_t(L)[_domain(L, shape=[2, 3, 4])],
    "t[labelled domain]": lambda L: _xyz_t(L)[_domain(L, labels=["y"], inclusive_min=[1],
                                                      exclusive_max=[3])],
    "t[transform]": lambda L: _xyz_t(L)[_transform(L, shape=[2, 3, 4])],
    "t[transform to constants]": lambda L: _xyz_t(L)[L.IndexTransform.from_json({
        "input_shape": [2], "output": [{"input_dimension": 0}, {"offset": 1}, {"offset": 2}]})
        if L is zarrkit else L.IndexTransform(input_shape=[2], output=[
            L.OutputIndexMap(input_dimension=0), L.OutputIndexMap(1), L.OutputIndexMap(2)])],
    "dom[d slice]": lambda L: _xyz(L)[L.d[0][2:4]],
    "dom[d.translate_to]": lambda L: _xyz(L)[L.d["x"].translate_to[1]],
    "dom[d int]": lambda L: _xyz(L)[L.d["x"][1]],
    "dom[d label]": lambda L: _xyz(L)[L.d["x"].label["q"]],
    "dom[d transpose]": lambda L: _xyz(L)[L.d["x", "y"].transpose[1, 0]],
    "dom[d stride]": lambda L: _xyz(L)[L.d["x"].stride[2]],
    "dom[d diagonal]": lambda L: _xyz(L)[L.d[0, 1].diagonal],
    "dom[d newaxis]": lambda L: _xyz(L)[L.d[0][None]],
    "dom[d oindex]": lambda L: _xyz(L)[L.d["x"].oindex[[0, 1]]],
    "dom[d vindex]": lambda L: _xyz(L)[L.d["x", "y"].vindex[[0, 1], [1, 2]]],
    "dom[d mark_bounds_implicit]": lambda L: _xyz(L)[L.d["x"].mark_bounds_implicit[True]],
    "dom[d selection only]": lambda L: _xyz(L)[L.d["z", "x"]],
    "dom[1:]": lambda L: _xyz(L)[1:],
    "dom[::-1]": lambda L: _xyz(L)[::-1],
    "dom[0, 'z']": lambda L: _xyz(L)[0, "z"],
    "dom[labels]": lambda L: _xyz(L)[["x", "z"]],
    "dom[[]]": lambda L: _xyz(L)[[]],
    "dom[transform]": lambda L: _xyz(L)[_transform(L, shape=[2, 3, 4])],
    "dom[domain]": lambda L: _xyz(L)[_domain(L, shape=[2, 3, 4])],
    "dom[mixed labels]": lambda L: _domain(L, inclusive_min=[0] * 4, exclusive_max=[10] * 4,
                                           labels=["x", "", "", "y"])[_domain(
        L, inclusive_min=[1, 2, 3, 4], exclusive_max=[6, 7, 8, 9], labels=["y", "", "x", ""])],
    "unlabelled[labelled]": lambda L: _domain(L, shape=[4, 5])[_domain(
        L, inclusive_min=[1, 1], exclusive_max=[3, 3], labels=["a", "b"])],
    "past implicit bounds": lambda L: _domain(L, inclusive_min=[0, 0], exclusive_max=[4, 5],
                                              implicit_upper_bounds=[True, False])[_domain(
        L, inclusive_min=[1, 1], exclusive_max=[9, 3])],
    "unbounded[finite]": lambda L: _domain(L, rank=1)[_domain(L, inclusive_min=[-5],
                                                             exclusive_max=[3])],
    "unbounded[unbounded]": lambda L: _domain(L, rank=1)[_domain(L, rank=1)],
    "rank 0": lambda L: _domain(L, rank=0)[_domain(L, rank=0)],
}


@pytest.mark.parametrize("case", sorted(SAME_AS_TENSORSTORE))
def test_indexing_matches_tensorstore(case):
    make = SAME_AS_TENSORSTORE[case]
    expected, got = make(ts), make(zarrkit)
    assert type(got).__name__ == type(expected).__name__
    assert got.to_json() == expected.to_json()


REFUSED_BY_BOTH = {
    "slice past explicit bounds": lambda L: _xyz(L)[_domain(L, labels=["y"], inclusive_min=[1],
                                                            exclusive_max=[9])],
    "unknown label": lambda L: _xyz(L)[_domain(L, labels=["q"], inclusive_min=[1],
                                               exclusive_max=[3])],
    "unlabelled rank mismatch": lambda L: _domain(L, shape=[4, 5])[_domain(
        L, labels=["q"], inclusive_min=[1], exclusive_max=[3])],
    "too many unlabelled": lambda L: _domain(L, shape=[4, 5], labels=["a", "b"])[_domain(
        L, inclusive_min=[1, 1], exclusive_max=[3, 3], labels=["a", ""])],
    "finite[unbounded]": lambda L: _xyz(L)[_domain(L, rank=3)],
    "repeated dimension": lambda L: _xyz(L)[[0, 0]],
    "transform out of bounds": lambda L: _xyz(L)[_transform(L, shape=[9, 3, 4])],
    "transform of other rank": lambda L: _xyz_t(L)[_transform(L, shape=[2, 3])],
    "index out of bounds": lambda L: _xyz_t(L)[9],
    "too many indices": lambda L: _xyz_t(L)[1, 2, 3, 4],
    "expression without operation": lambda L: _xyz_t(L)[L.d["x"]],
    "d int out of bounds": lambda L: _xyz(L)[L.d["x"][9]],
}


@pytest.mark.parametrize("case", sorted(REFUSED_BY_BOTH))
def test_indexing_refused_as_tensorstore_does(case):
    make = REFUSED_BY_BOTH[case]
    with pytest.raises((IndexError, ValueError)):
        make(ts)
    with pytest.raises(SelectionError):
        make(zarrkit)


def test_domain_slicing_error_names_the_problem():
    with pytest.raises(SelectionError, match="'q'"):
        _xyz(zarrkit)[zarrkit.IndexDomain.make(labels=["q"], inclusive_min=[1],
                                                exclusive_max=[3])]
    with pytest.raises(SelectionError, match="unbounded"):
        _xyz(zarrkit)[zarrkit.IndexDomain.make(rank=3)]


def _dim_facts(dim):
    facts = (repr(dim), str(dim), dim.inclusive_min, dim.exclusive_max, dim.inclusive_max,
             dim.exclusive_min, dim.size, dim.label, dim.implicit_lower, dim.implicit_upper,
             dim.finite, dim.empty, 2 in dim, 99 in dim)
    return facts + ((len(dim), list(dim)) if dim.finite else ())


def _sample(lib):
    return _domain(lib, inclusive_min=[1, 2, -5, 0], exclusive_max=[4, 5, 7, 0],
                   labels=["x", "y", "", ""], implicit_upper_bounds=[True, False, False, False])


@pytest.mark.parametrize("which", [0, 1, 2, 3, -1, "x", "y"])
def test_domain_dimension_is_a_dim_as_in_tensorstore(which):
    assert _dim_facts(_sample(zarrkit)[which]) == _dim_facts(_sample(ts)[which])


def test_domain_iterates_over_dims():
    assert [_dim_facts(x) for x in _sample(zarrkit)] == [_dim_facts(x) for x in _sample(ts)]
    unbounded = _domain(zarrkit, rank=1)[0]
    assert _dim_facts(unbounded) == _dim_facts(_domain(ts, rank=1)[0])
    assert len(unbounded) == len(_domain(ts, rank=1)[0]) == 2**63 - 1  # as TensorStore's
    with pytest.raises(SelectionError, match="unbounded"):
        list(unbounded)
    assert zarrkit.Dim(1, 4, label="x", implicit_upper=True) == _sample(zarrkit)[0]
    assert repr(zarrkit.Dim()) == repr(ts.Dim()) == "Dim()"


@pytest.mark.parametrize("which", [4, -5, "q"])
def test_domain_dimension_out_of_range(which):
    with pytest.raises(IndexError):
        _sample(ts)[which]
    with pytest.raises(SelectionError):
        _sample(zarrkit)[which]


def test_transform_is_not_iterable():
    with pytest.raises(TypeError):
        iter(_xyz_t(zarrkit))


def test_array_view_by_transform_indexed_with_expression():
    a = zarrkit.create_array(MemoryStore(), shape=(4, 5), chunks=(2, 5), dtype="i4",
                             dimension_names=["x", "y"])
    a[...] = np.arange(20).reshape(4, 5)
    t = zarrkit.IndexTransform.identity(a.domain)[zarrkit.d["x"][1:3]]
    assert t.domain == a.domain[zarrkit.d["x"][1:3]]
    np.testing.assert_array_equal(np.asarray(zarrkit.View(a, t)), a[1:3])
    np.testing.assert_array_equal(np.asarray(a[zarrkit.d["x"][1:3]]), a[1:3])


# -- 3. filters refusing the data type at creation -----------------------------------------------

V3_REFUSED = [
    ("int32", {"name": "numcodecs.bitround", "configuration": {"keepbits": 3}}, "int32"),
    ("bfloat16", {"name": "numcodecs.bitround", "configuration": {"keepbits": 3}},
     "bfloat16"),
    ("float8_e4m3fn", {"name": "numcodecs.bitround", "configuration": {"keepbits": 3}},
     "float8_e4m3fn"),
    ("float32", {"name": "numcodecs.bitround", "configuration": {"keepbits": 99}}, "float32"),
    ("int32", {"name": "numcodecs.quantize", "configuration": {"digits": 2}}, "int32"),
    ("bfloat16", {"name": "numcodecs.quantize", "configuration": {"digits": 2}}, "bfloat16"),
    ("float8_e4m3fn", {"name": "numcodecs.quantize", "configuration": {"digits": 2}},
     "float8_e4m3fn"),
    ("float32", {"name": "numcodecs.fixedscaleoffset", "configuration": {
        "offset": 0, "scale": 10, "astype": "M8[s]"}}, "float32"),
    ("int32", {"name": "numcodecs.packbits", "configuration": {}}, "int32"),
]


@pytest.mark.parametrize(("dtype", "codec", "named"), V3_REFUSED)
def test_v3_creation_refuses_filter_for_type(dtype, codec, named):
    store = MemoryStore()
    with pytest.raises(CodecError, match=codec["name"].split(".")[1]) as info:
        zarrkit.create_array(store, shape=(8,), chunks=(4,), dtype=dtype, filters=[codec],
                             zarr_format=3)
    assert named in str(info.value)
    assert not list(store.list_prefix(""))  # nothing written


@pytest.mark.parametrize(("dtype", "codec", "named"), V3_REFUSED[:4])
def test_v3_creation_refuses_filter_inside_shards(dtype, codec, named):
    store = MemoryStore()
    serializer = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2], "codecs": [codec, {"name": "bytes"}],
        "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}]}}
    with pytest.raises(CodecError, match=f"{codec['name']}.*{named}"):
        zarrkit.create_array(store, shape=(8,), chunks=(4,), dtype=dtype,
                             serializer=serializer, zarr_format=3)
    assert not list(store.list_prefix(""))
    with pytest.raises(CodecError, match=f"{codec['name']}.*{named}"):
        zarrkit.create_array(store, shape=(8,), chunks=(2,), shards=(4,), dtype=dtype,
                             filters=[codec], zarr_format=3)
    assert not list(store.list_prefix(""))


def test_spec_creation_refuses_filter_for_type():
    store = MemoryStore()
    spec = {"driver": "zarr3", "kvstore": store, "metadata": {"codecs": [
        {"name": "numcodecs.bitround", "configuration": {"keepbits": 3}}, {"name": "bytes"}]}}
    with pytest.raises(CodecError, match="numcodecs.bitround.*int32"):
        zarrkit.open(spec, create=True, dtype="int32", shape=[8])
    assert not list(store.list_prefix(""))
    a = zarrkit.open({**spec, "kvstore": MemoryStore()}, create=True, dtype="float32",
                     shape=[8])
    a[:] = 1.5
    np.testing.assert_array_equal(a[:], 1.5)



@pytest.mark.parametrize("inner", [False, True])
def test_spec_creation_refuses_compressor_settings(inner):
    # As create_array does: numcodecs only refuses zlib level 99 when a chunk is encoded.
    store = MemoryStore()
    chain = [{"name": "bytes"}, {"name": "numcodecs.zlib", "configuration": {"level": 99}}]
    codecs = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2], "codecs": chain}}] if inner else chain
    spec = {"driver": "zarr3", "kvstore": store, "metadata": {"codecs": codecs}}
    with pytest.raises(CodecError, match="numcodecs.zlib"):
        zarrkit.open(spec, create=True, dtype="int32", shape=[8])
    assert not list(store.list_prefix(""))


V2_REFUSED = [
    ("int32", {"id": "bitround", "keepbits": 3}),
    ("bfloat16", {"id": "bitround", "keepbits": 3}),
    ("float32", {"id": "bitround", "keepbits": 99}),
    ("float32", {"id": "fixedscaleoffset", "offset": 0, "scale": 10, "dtype": "<f4",
                 "astype": "M8[s]"}),
    ("int32", {"id": "packbits"}),
    ("int32", {"id": "quantize", "digits": 2, "dtype": "<i4"}),
]


@pytest.mark.parametrize(("dtype", "codec"), V2_REFUSED)
def test_v2_creation_refuses_filter_for_type(dtype, codec):
    store = MemoryStore()
    with pytest.raises(CodecError, match=codec["id"]) as info:
        zarrkit.create_array(store, shape=(8,), chunks=(4,), dtype=dtype, filters=[codec],
                             zarr_format=2)
    assert np.dtype(dtype).name in str(info.value) or np.dtype(dtype).str in str(info.value)
    assert not list(store.list_prefix(""))


@pytest.mark.parametrize(("fmt", "dtype", "codec"), [
    (3, "float32", {"name": "numcodecs.bitround", "configuration": {"keepbits": 3}}),
    (3, "float64", {"name": "numcodecs.quantize", "configuration": {"digits": 3}}),
    (3, "bfloat16", {"name": "numcodecs.delta", "configuration": {}}),
    (3, "int16", {"name": "numcodecs.fixedscaleoffset", "configuration": {
        "offset": 0, "scale": 1, "astype": "i2"}}),
    (3, "bool", {"name": "numcodecs.packbits", "configuration": {}}),
    (2, "float32", {"id": "bitround", "keepbits": 3}),
    (2, "bool", {"id": "packbits"}),
    (2, "int64", {"id": "delta", "dtype": "<i8"}),
])
def test_suitable_filters_still_create_and_round_trip(fmt, dtype, codec):
    a = zarrkit.create_array(MemoryStore(), shape=(8,), chunks=(4,), dtype=dtype,
                             filters=[codec], zarr_format=fmt)
    values = (np.arange(8) % 2).astype(dtype)
    a[:] = values
    np.testing.assert_array_equal(a[:], values)


def _stored_v3(store, dtype, codec):
    doc = {"zarr_format": 3, "node_type": "array", "shape": [8], "data_type": dtype,
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
           "codecs": [codec, {"name": "bytes", "configuration": {"endian": "little"}}]}
    store.set("zarr.json", json.dumps(doc).encode())


def test_existing_arrays_with_refused_filters_still_open():
    store = MemoryStore()
    _stored_v3(store, "int32", {"name": "numcodecs.bitround", "configuration": {"keepbits": 3}})
    a = zarrkit.open_array(store)
    np.testing.assert_array_equal(a[:], 0)
    with pytest.raises(CodecError, match="bitround"):
        a[:] = 1
    v2 = MemoryStore()
    v2.set(".zarray", json.dumps({
        "zarr_format": 2, "shape": [8], "chunks": [4], "dtype": "<i4", "fill_value": 0,
        "order": "C", "compressor": None, "filters": [{"id": "bitround", "keepbits": 3}]
    }).encode())
    b = zarrkit.open_array(v2)
    np.testing.assert_array_equal(b[:], 0)
    with pytest.raises(CodecError, match="bitround"):
        b[:] = 1


def test_zarr_python_written_float_filters_open_and_read():
    import zarr
    from zarr.codecs.numcodecs import BitRound

    store = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python warns that numcodecs.* is unstable
        z = zarr.create_array(store, shape=(8,), chunks=(4,), dtype="float32",
                              filters=[BitRound(keepbits=10)])
        z[:] = np.arange(8, dtype="f4")
    kv = MemoryStore()
    for key, value in store.items():
        kv.set(key, value.to_bytes())
    np.testing.assert_array_equal(zarrkit.open_array(kv)[:], np.arange(8, dtype="f4"))


# -- 4. verify on sharded arrays -----------------------------------------------------------------


def _sharded(path):
    a = zarrkit.create_array(str(path), shape=(8, 12), chunks=(2, 3), shards=(4, 6),
                             dtype="int32", compressors=[{"name": "crc32c"}], zarr_format=3)
    a[0:4, 0:6] = np.arange(24).reshape(4, 6)  # shard (0, 0): all 4 inner chunks
    a[4:6, 0:3] = 7  # shard (1, 0): one of its 4
    return a


def _flip_inner_chunk(path, shard_key, inner, per_shard=4):
    """Flip a byte of the stored inner chunk `inner` (C-order position) of a shard whose index
    (bytes + crc32c) is at its end."""
    key = os.path.join(path, *shard_key.split("/"))
    data = bytearray(open(key, "rb").read())
    index = np.frombuffer(bytes(data[-(16 * per_shard + 4):-4]), "<u8").reshape(-1, 2)
    offset = int(index[inner, 0])
    data[offset + 1] ^= 0xFF
    with open(key, "wb") as f:
        f.write(bytes(data))


def test_verify_counts_shards_and_inner_chunks(tmp_path):
    report = verify(_sharded(tmp_path / "a"))
    (entry,) = report["arrays"]
    assert report["ok"]
    assert entry["unit"] == "shard"
    # the old keys count the stored objects (shards), as before
    assert (entry["chunks_total"], entry["chunks_checked"], entry["chunks_missing"]) == (4, 2, 2)
    assert (entry["shards_total"], entry["shards_checked"], entry["shards_missing"]) == (4, 2, 2)
    assert (entry["inner_chunks_total"], entry["inner_chunks_checked"],
            entry["inner_chunks_missing"]) == (16, 5, 11)
    assert report["shards_checked"] == 2 and report["inner_chunks_checked"] == 5


def test_verify_unsharded_reports_chunks(tmp_path):
    a = zarrkit.create_array(str(tmp_path / "a"), shape=(8,), chunks=(4,), dtype="i4",
                             zarr_format=3)
    a[0:4] = 1
    (entry,) = verify(a)["arrays"]
    assert entry["unit"] == "chunk" and "inner_chunks_total" not in entry
    assert (entry["chunks_total"], entry["chunks_checked"], entry["chunks_missing"]) == (2, 1, 1)


def test_verify_names_each_damaged_inner_chunk(tmp_path):
    path = str(tmp_path / "a")
    _sharded(path)
    _flip_inner_chunk(path, "c/0/0", 3)
    _flip_inner_chunk(path, "c/0/0", 1)
    report = verify(zarrkit.open_array(path))
    assert not report["ok"]
    damaged = sorted((d["key"], tuple(d["inner_chunk"])) for d in report["damaged"])
    assert damaged == [("c/0/0", (0, 1)), ("c/0/0", (1, 1))]
    assert all("crc32c" in d["error"].lower() or "checksum" in d["error"].lower()
               for d in report["damaged"])
    # the shard's sound inner chunks and the other shard were still checked
    assert report["arrays"][0]["inner_chunks_checked"] == 5


def test_verify_reports_a_damaged_shard_index(tmp_path):
    path = str(tmp_path / "a")
    _sharded(path)
    key = os.path.join(path, "c", "1", "0")
    data = bytearray(open(key, "rb").read())
    data[-10] ^= 0xFF  # inside the index, before its checksum
    with open(key, "wb") as f:
        f.write(bytes(data))
    report = verify(zarrkit.open_array(path))
    (problem,) = report["damaged"]
    assert problem["key"] == "c/1/0" and "inner_chunk" not in problem
    assert "index" in problem["error"]


def test_verify_command_prints_shard_and_inner_chunk(tmp_path, capsys):
    path = str(tmp_path / "a")
    _sharded(path)
    assert main(["verify", path]) == 0
    out = capsys.readouterr().out
    assert "2 shards checked (5 inner chunks; 11 not stored)" in out
    _flip_inner_chunk(path, "c/0/0", 2)
    assert main(["verify", path]) == 1
    out = capsys.readouterr().out
    assert "DAMAGED c/0/0 inner chunk (1, 0):" in out
    assert main(["verify", path, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["damaged"][0]["inner_chunk"] == [1, 0]

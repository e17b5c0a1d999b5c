"""The spec member `fill_missing_data_reads: false` (drivers zarr3 and zarr): a read touching a
chunk that is not stored raises ChunkNotFoundError, exactly where TensorStore's read fails, and
names the array and the chunk; writes (partial ones too) still work, and the member round-trips
through `spec()` and pickling as TensorStore records it."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest
import tensorstore as ts

import zarrkit
from zarrkit import ChunkNotFoundError, SpecError, StoreError

SHARD = {"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 4]}}
TRANSPOSE = {"name": "transpose", "configuration": {"order": [1, 0]}}
NESTED = {"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 4], "codecs": [
    {"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2]}}]}}
INDEX_FIRST = {"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 4],
                                                              "index_location": "start"}}
BLOSC_INNER = {"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 4], "codecs": [
    "bytes", {"name": "blosc"}]}}

# name -> (driver, metadata) of an 8x8 int32 array
LAYOUTS = {
    "chunks": ("zarr3", {"chunk_grid": {"name": "regular", "configuration": {
        "chunk_shape": [4, 4]}}}),
    "sharded": ("zarr3", {"chunk_grid": {"name": "regular", "configuration": {
        "chunk_shape": [8, 8]}}, "codecs": [SHARD]}),
    "sharded-blosc": ("zarr3", {"chunk_grid": {"name": "regular", "configuration": {
        "chunk_shape": [8, 4]}}, "codecs": [BLOSC_INNER]}),
    "transposed-shards": ("zarr3", {"chunk_grid": {"name": "regular", "configuration": {
        "chunk_shape": [8, 8]}}, "codecs": [TRANSPOSE, SHARD]}),
    "transposed-shards-index-first": ("zarr3", {"chunk_grid": {"name": "regular",
                                                               "configuration": {
        "chunk_shape": [8, 8]}}, "codecs": [TRANSPOSE, INDEX_FIRST]}),
    "nested-shards": ("zarr3", {"chunk_grid": {"name": "regular", "configuration": {
        "chunk_shape": [8, 8]}}, "codecs": [NESTED]}),
    "v2": ("zarr", {"chunks": [4, 4], "fill_value": 0, "compressor": None}),
}

SELECTIONS = [
    (slice(None), slice(None)),
    (slice(0, 4), slice(0, 4)),
    (slice(0, 2), slice(0, 2)),
    (slice(0, 3), slice(0, 2)),
    (slice(0, 5), slice(0, 4)),
    (slice(1, 2), slice(1, 3)),
    (4, 0),
    (0, slice(None)),
    (slice(0, 4), 1),
    (slice(None, None, 4), 0),
]


def _spec(tmp_path, layout, missing=False, **members):
    driver, metadata = LAYOUTS[layout]
    metadata = {**metadata, "shape": [8, 8]}
    metadata["dtype" if driver == "zarr" else "data_type"] = "<i4" if driver == "zarr" \
        else "int32"
    spec = {"driver": driver, "kvstore": {"driver": "file", "path": str(tmp_path / "a")},
            "metadata": metadata, **members}
    if missing:
        spec["fill_missing_data_reads"] = False
    return spec


def _reopen(spec):
    spec = {k: v for k, v in spec.items() if k not in ("create", "delete_existing")}
    return spec


def _zk_read(array, sel):
    try:
        return np.asarray(array[sel])
    except ChunkNotFoundError as e:
        return e


def _ts_read(t, sel):
    try:
        return t[sel].read().result()
    except ValueError as e:
        assert "NOT_FOUND" in str(e)
        return e


def _chunk_named(error, what="chunk"):
    """The chunk coordinates an error message names ({1, 0} in TensorStore's, (1, 0) in
    zarrkit's), as a tuple; None when it names none."""
    found = re.search(what + r" [{(]([\d, ]*)[})]", str(error))
    return None if found is None else tuple(int(x) for x in found.group(1).split(",") if x)


def _assert_same(zk, tsr):
    assert isinstance(zk, Exception) == isinstance(tsr, Exception), (zk, tsr)
    if isinstance(zk, Exception):
        return
    np.testing.assert_array_equal(zk, tsr)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("writer", ["tensorstore", "zarrkit"])
def test_reads_fail_exactly_where_tensorstore_fails(tmp_path, layout, writer):
    spec = _spec(tmp_path, layout, missing=True)
    if writer == "tensorstore":
        ts.open({**spec, "create": True}).result()[0:2, 0:2].write(
            np.arange(4, dtype="i4").reshape(2, 2) + 1).result()
    else:  # a partial write into a missing chunk works: the rest of it is the fill value
        zarrkit.open({**spec, "create": True})[0:2, 0:2] = np.arange(4).reshape(2, 2) + 1
    t, a = ts.open(spec).result(), zarrkit.open(spec)
    for sel in SELECTIONS:
        zk, tsr = _zk_read(a, sel), _ts_read(t, sel)
        _assert_same(zk, tsr)
        if isinstance(zk, Exception) and not layout.startswith("transposed") and \
                "in shard entry" not in str(tsr) and sel != SELECTIONS[0]:
            # One chunk of the selection is missing (all but the whole array's): both name it.
            # (TensorStore names an inner chunk by its entry in the shard; zarrkit gives both
            # that and its place in the array's grid of inner chunks.)
            assert _chunk_named(zk) == _chunk_named(tsr) or \
                _chunk_named(zk, "shard entry") == _chunk_named(tsr), (sel, zk, tsr)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_other_read_routes_fail_too(tmp_path, layout):
    spec = _spec(tmp_path, layout, missing=True, create=True)
    a = zarrkit.open(spec)
    a[0:4, 0:4] = 7  # the first chunk (or inner chunk) whole
    assert (a[0:4, 0:4] == 7).all()
    assert (a.oindex[[0, 3], [1, 2]] == 7).all()
    assert (a.vindex[[0, 3], [1, 2]] == 7).all()
    assert (a.view[0:4, 0:4].read().result() == 7).all()
    reads = [lambda: a[...], lambda: a.oindex[[0, 5], [1]], lambda: a.vindex[[0, 5], [1, 1]],
             lambda: a.get_orthogonal_selection(([0, 7], slice(None))),
             lambda: a.get_coordinate_selection(([0, 7], [0, 7])),
             lambda: a.view.read().result(), lambda: a.view[4:, :].read().result(),
             lambda: np.asarray(a), lambda: np.asarray(a.view), lambda: a[7, 7],
             lambda: list(a.islice(0, 8))]
    for read in reads:
        with pytest.raises(ChunkNotFoundError, match="fill_missing_data_reads"):
            read()
    # an empty selection reads no chunk, as in TensorStore
    assert a[5:5, :].shape == (0, 8) and a.view[5:5, :].read().result().shape == (0, 8)


def test_error_names_array_and_key(tmp_path):
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)},
            "path": "group/data", "fill_missing_data_reads": False, "create": True,
            "dtype": "uint8", "schema": {"domain": {"shape": [10]},
                                         "chunk_layout": {"chunk": {"shape": [5]}}}}
    a = zarrkit.open(spec)
    a[0:5] = 1
    with pytest.raises(ChunkNotFoundError) as info:
        a[3:7]
    message = str(info.value)
    assert "/group/data" in message and "'group/data/c/1'" in message and "(1,)" in message
    # a store error, and FileNotFoundError as Python's own "missing" is
    assert isinstance(info.value, StoreError) and isinstance(info.value, FileNotFoundError)
    assert isinstance(info.value, zarrkit.ZarrkitError)


@pytest.mark.parametrize("layout", ["chunks", "sharded", "v2"])
def test_chunks_equal_to_the_fill_value_are_missing(tmp_path, layout):
    """Not stored (store_data_equal_to_fill_value false), so not readable either: as
    TensorStore documents and does; stored when that member is true, and then readable."""
    spec = _spec(tmp_path, layout, missing=True)
    zarrkit.open({**spec, "create": True})[0:4, 0:4] = 0
    a, t = zarrkit.open(spec), ts.open(spec).result()
    _assert_same(_zk_read(a, (slice(0, 4), slice(0, 4))), _ts_read(t, (slice(0, 4),) * 2))
    assert isinstance(_zk_read(a, (slice(0, 4), slice(0, 4))), ChunkNotFoundError)
    kept = {**spec, "store_data_equal_to_fill_value": True}
    zarrkit.open(kept)[0:4, 0:4] = 0
    a, t = zarrkit.open(kept), ts.open(kept).result()
    np.testing.assert_array_equal(a[0:4, 0:4], t[0:4, 0:4].read().result())
    assert (a[0:4, 0:4] == 0).all()


@pytest.mark.parametrize("layout", ["chunks", "sharded", "v2"])
def test_default_and_true_read_missing_chunks_as_fill(tmp_path, layout):
    spec = _spec(tmp_path, layout, create=True)
    spec["metadata"]["fill_value"] = 3
    zarrkit.open(spec)[0, 0] = 1
    for member in ({}, {"fill_missing_data_reads": True}):
        a = zarrkit.open({**_reopen(spec), **member})
        assert a[0, 0] == 1 and (a[4:, :] == 3).all()


@pytest.mark.parametrize("driver", ["zarr3", "zarr"])
def test_spec_round_trip_as_tensorstore_records_it(tmp_path, driver):
    layout = "v2" if driver == "zarr" else "chunks"
    for missing in (False, True):
        spec = _spec(tmp_path / str(missing), layout, missing=missing, create=True)
        t = ts.open(spec).result()
        a = zarrkit.open(_reopen(spec))
        ts_json, zk_json = t.spec().to_json(), a.spec().to_json()
        assert ts_json.get("fill_missing_data_reads") == zk_json.get("fill_missing_data_reads")
        assert ("fill_missing_data_reads" in zk_json) == missing
        assert ("fill_missing_data_reads" in zk_json) == ("fill_missing_data_reads" in ts_json)
        view = a.view[2:6, :]
        assert view.spec().to_json().get("fill_missing_data_reads") == \
            ts_json.get("fill_missing_data_reads")
        assert a.spec(minimal_spec=True).to_json().get("fill_missing_data_reads") == \
            t.spec(minimal_spec=True).to_json().get("fill_missing_data_reads")
    # the recorded spec reopens with the member in force, in TensorStore too
    strict = zarrkit.open(zarrkit.open(_spec(tmp_path / "True", layout, missing=True)).spec())
    with pytest.raises(ChunkNotFoundError):
        strict[0, 0]
    recorded = strict.spec().to_json()
    with pytest.raises(ValueError, match="NOT_FOUND"):
        ts.open(recorded).result()[0, 0].read().result()


def test_pickled_array_keeps_the_member(tmp_path):
    a = zarrkit.open(_spec(tmp_path, "chunks", missing=True, create=True))
    a[0, 0] = 1
    b = pickle.loads(pickle.dumps(a))
    assert b[0, 0] == 1
    with pytest.raises(ChunkNotFoundError):
        b[4, 4]
    assert b.spec().to_json()["fill_missing_data_reads"] is False


@pytest.mark.parametrize("value", ["x", None, 1, 0, "false"])
def test_non_boolean_values_refused_as_tensorstore_does(tmp_path, value):
    spec = {**_spec(tmp_path, "chunks", create=True), "fill_missing_data_reads": value}
    with pytest.raises(ValueError, match="fill_missing_data_reads"):
        ts.open(spec).result()
    with pytest.raises(SpecError, match="fill_missing_data_reads"):
        zarrkit.open(spec)
    assert not (tmp_path / "a").exists()  # refused before anything is created


def test_open_modes(tmp_path):
    spec = _spec(tmp_path, "chunks", missing=True)
    created = zarrkit.open({**spec, "create": True})
    created[0, 0] = 5
    # open of an existing array, and create with delete_existing (which starts empty)
    assert zarrkit.open(spec)[0, 0] == 5
    replaced = zarrkit.open({**spec, "create": True, "delete_existing": True})
    with pytest.raises(ChunkNotFoundError):
        replaced[0, 0]
    with pytest.raises(ValueError, match="NOT_FOUND"):
        ts.open(spec).result()[0, 0].read().result()


def test_assume_metadata(tmp_path):
    """With no metadata stored at all, as TensorStore: the read fails on the missing chunk."""
    spec = _spec(tmp_path, "chunks", missing=True, open=True, assume_metadata=True)
    a, t = zarrkit.open(spec), ts.open(spec).result()
    with pytest.raises(ValueError, match="NOT_FOUND"):
        t[0, 0].read().result()
    with pytest.raises(ChunkNotFoundError, match=r"chunk \(0, 0\)"):
        a[0, 0]
    assert a.spec().to_json()["fill_missing_data_reads"] is False
    a[0:4, 0:4] = 2  # writes do not read or write the metadata
    assert (a[0:4, 0:4] == 2).all()
    np.testing.assert_array_equal(t[0:4, 0:4].read().result(), np.full((4, 4), 2))


@pytest.mark.parametrize("layout", ["chunks", "sharded", "transposed-shards", "nested-shards"])
def test_cache_pool(tmp_path, layout):
    """Chunks (and shards) served from a cache pool are checked as well: a cached missing
    chunk, and a cached shard whose other inner chunks are missing."""
    spec = _spec(tmp_path, layout, missing=True, create=True,
                 context={"cache_pool": {"total_bytes_limit": 1 << 20}})
    a = zarrkit.open(spec)
    a[0:2, 0:2] = 1
    for _ in range(2):
        assert (a[0:2, 0:2] == 1).all()
        with pytest.raises(ChunkNotFoundError):
            a[0:5, 0:5]
        with pytest.raises(ChunkNotFoundError):
            a[6, 6]


def test_many_small_chunks(tmp_path):
    """The batched read of many small chunks and the direct decode of whole ones."""
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)},
            "fill_missing_data_reads": False, "create": True, "dtype": "float64",
            "schema": {"domain": {"shape": [4096]}, "chunk_layout": {"chunk": {"shape": [16]}}}}
    a = zarrkit.open(spec)
    values = np.arange(4096.0)
    a[...] = values
    np.testing.assert_array_equal(a[...], values)
    (tmp_path / "c" / "100").unlink()
    t = ts.open(_reopen(spec)).result()
    for sel in (slice(None), slice(1590, 1610), slice(0, 1600), 1605, slice(1601, 1602)):
        zk, tsr = _zk_read(a, sel), _ts_read(t, sel)
        _assert_same(zk, tsr)
    assert "c/100" in str(_zk_read(a, slice(None)))
    np.testing.assert_array_equal(a[0:1600], values[:1600])


def test_large_sharded_boxes(tmp_path):
    """Whole-inner-chunk boxes of large shards (read in slabs) and a missing shard."""
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)},
            "fill_missing_data_reads": False, "create": True,
            "metadata": {"shape": [512, 512], "data_type": "uint16",
                         "chunk_grid": {"name": "regular", "configuration": {
                             "chunk_shape": [256, 256]}},
                         "codecs": [{"name": "sharding_indexed", "configuration": {
                             "chunk_shape": [32, 32]}}]}}
    a = zarrkit.open(spec)
    values = (np.arange(512 * 512) % 1000 + 1).astype("u2").reshape(512, 512)
    a[0:256, :] = values[0:256]  # two shards whole; the other two never written
    a[256:288, 0:32] = values[256:288, 0:32]  # one inner chunk of a third shard
    t = ts.open(_reopen(spec)).result()
    for sel in [(slice(0, 256), slice(None)), (slice(None), slice(None)),
                (slice(256, 288), slice(0, 32)), (slice(256, 320), slice(0, 32)),
                (slice(256, 512), slice(0, 256)), (slice(300, 400), slice(300, 400))]:
        _assert_same(_zk_read(a, sel), _ts_read(t, sel))
    np.testing.assert_array_equal(a[0:256, :], values[0:256])
    assert _chunk_named(_zk_read(a, (slice(256, 320), slice(0, 32)))) == (9, 0)


def test_zarr_v2_key_encoding(tmp_path):
    """v2's keys ("1.0", or with "/" separators) in the message, read by both."""
    spec = _spec(tmp_path, "v2", missing=True, create=True)
    spec["metadata"]["dimension_separator"] = "/"
    a = zarrkit.open(spec)
    a[0, 0] = 1
    with pytest.raises(ChunkNotFoundError, match=r"'1/0'"):
        a[4, 0]
    with pytest.raises(ValueError, match=r"NOT_FOUND: chunk \{1, 0\}"):
        ts.open(_reopen(spec)).result()[4, 0].read().result()

"""Follow-ups: chunk counts of arrays that shard behind a transpose (or before a compressor);
pickling arrays on memory stores; `zarrkit.open`'s docstring on cast specs; cast specs' fill
values against TensorStore; `zarrkit.Dim`'s construction forms, `hull` and `intersect`."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import tensorstore as ts
import zarr

import zarrkit
from zarrkit.errors import (
    NotSupportedError,
    SelectionError,
    SelectionTypeError,
    SpecError,
    UnpicklableError,
)
from zarrkit.kvstore.memory import MemoryStore
from zarrkit.kvstore.zip import ZipStore

# -- 1. counts of arrays that shard behind array->array codecs -----------------------------


def _sharding(inner, after=()):
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(inner), "codecs": [{"name": "bytes"}],
        "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}]}}, *after


def _transposed(where, shape=(10, 12), shards=(8, 8), inner=(4, 2), order=(1, 0), after=()):
    codecs = [{"name": "transpose", "configuration": {"order": list(order)}},
              *_sharding(inner, after)]
    return zarrkit.create(where, shape, "int32", chunks=shards, codecs=codecs)


def _inner_chunks_holding_data(data, chunks):
    """The inner chunks (array dimensions) holding a value other than the fill value 0."""
    grid = [-(-s // c) for s, c in zip(data.shape, chunks, strict=True)]
    return sum(bool(data[tuple(slice(i * c, (i + 1) * c) for i, c in
                               zip(pos, chunks, strict=True))].any())
               for pos in np.ndindex(*grid))


def _zarr_python(path):
    with warnings.catch_warnings():  # sharding not first: zarr-python warns, reads whole
        warnings.simplefilter("ignore")
        return zarr.open_array(str(path), mode="r")


def test_transpose_before_sharding_counts_inner_chunks(tmp_path):
    a = _transposed(str(tmp_path / "a"))
    # The stored inner chunk (4, 2) is transposed: (2, 4) in the array's dimensions.
    assert a.chunks == (2, 4) and a.shards == (8, 8)
    assert a.cdata_shape == (5, 3) and a.nchunks == 15 and a.nshards == 4
    assert (a.nchunks_initialized, a.nshards_initialized) == (0, 0)
    z = _zarr_python(tmp_path / "a")
    assert a.nshards == z._nshards  # zarr-python counts the shards as its chunks
    a[0, 0] = 1
    assert (a.nchunks_initialized, a.nshards_initialized) == (1, 1)
    a[9, 11] = 2  # the corner shard, cut by the array's edge
    assert (a.nchunks_initialized, a.nshards_initialized) == (2, 2)
    a[...] = np.arange(1, 121, dtype="int32").reshape(10, 12)
    assert a.nchunks_initialized == a.nchunks == 15
    assert a.nshards_initialized == z._nshards_initialized == 4
    assert (z[...] == a[...]).all()


def test_counts_of_tensorstore_writes_match_the_data(tmp_path):
    a = _transposed(str(tmp_path / "a"), shape=(9, 11, 7), shards=(6, 4, 6), inner=(2, 3, 2),
                    order=(2, 0, 1))
    assert a.chunks == (3, 2, 2) and a.cdata_shape == (3, 6, 4)
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "a")}}
                ).result()
    data = np.zeros(a.shape, dtype="int32")
    for where in [(0, 0, 0), (8, 10, 6), (4, 5, 3), (5, 3, 2), (3, 2, 5)]:
        data[where] = 7
        t[where] = 7
    assert a.nchunks_initialized == _inner_chunks_holding_data(data, a.chunks) == 5
    assert (a[...] == data).all()
    plain = zarrkit.create(MemoryStore(), a.shape, "int32", chunks=a.chunks, shards=a.shards)
    assert (plain.cdata_shape, plain.nchunks, plain.nshards) == (a.cdata_shape, a.nchunks,
                                                                 a.nshards)


def test_compressor_after_sharding_counts_inner_chunks(tmp_path):
    codecs = [*_sharding((4, 4), after=({"name": "gzip", "configuration": {"level": 1}},))]
    a = zarrkit.create(str(tmp_path / "a"), (10, 10), "int32", chunks=(8, 8), codecs=codecs)
    assert a.chunks == (4, 4) and a.shards == (8, 8) and a.nchunks == 9
    data = np.zeros((10, 10), dtype="int32")
    data[1, 1] = data[9, 9] = data[1, 9] = 3
    a[...] = data
    assert a.nchunks_initialized == _inner_chunks_holding_data(data, (4, 4)) == 3
    assert a.nshards_initialized == 3
    assert (_zarr_python(tmp_path / "a")[...] == data).all()


def test_selections_still_read_and_write_whole_shards(tmp_path):
    a = _transposed(str(tmp_path / "a"))
    values = np.arange(120, dtype="int32").reshape(10, 12)
    a[...] = values
    assert (a[3:9, 1:11] == values[3:9, 1:11]).all()
    assert (a.oindex[[0, 9], [1, 11]] == values[np.ix_([0, 9], [1, 11])]).all()
    assert (a.get_block_selection((1, 0)) == values[8:, :8]).all()  # blocks are shards
    a[2:5, 3:9] = -1
    values[2:5, 3:9] = -1
    assert (_zarr_python(tmp_path / "a")[...] == values).all()


def test_info_and_summary_show_inner_chunks_and_shards(tmp_path):
    a = _transposed(str(tmp_path / "a"))
    a[0, :] = 1
    text = str(a.info_complete())
    assert "Shard shape      : (8, 8)" in text and "Chunk shape      : (2, 4)" in text
    assert "Chunks stored    : 3/15" in text and "Shards stored    : 2/4" in text


# -- 2. pickling arrays on memory stores -----------------------------------------------------

MEMORY_SPEC = {"driver": "zarr3", "kvstore": {"driver": "memory"},
               "metadata": {"shape": [4], "data_type": "int32"}}


def _refuses(obj):
    with pytest.raises(UnpicklableError, match="memory") as caught:
        pickle.dumps(obj)
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, NotSupportedError)


def test_spec_array_on_memory_store_refuses_to_pickle():
    a = zarrkit.open(MEMORY_SPEC, create=True)
    a[...] = [1, 2, 3, 4]
    _refuses(a)
    _refuses(a.view[1:3])
    _refuses(zarrkit.cast(a, "float32"))
    _refuses(zarrkit.open({**MEMORY_SPEC, "kvstore": "memory://"}, create=True))
    # The spec alone pickles, as TensorStore's does: it holds no data.
    assert pickle.loads(pickle.dumps(a.spec())) == a.spec()


def test_tensorstore_memory_pickle_loses_the_data():
    # Why zarrkit refuses: TensorStore's copy reopens an empty store, reading fill values.
    t = ts.open(MEMORY_SPEC, create=True).result()
    t[...] = [1, 2, 3, 4]
    assert pickle.loads(pickle.dumps(t)).read().result().tolist() == [0, 0, 0, 0]


def test_non_spec_memory_arrays_refuse_and_dict_stores_copy():
    named = zarrkit.open("memory://round3-pickle", mode="w", shape=(3,), dtype="i4")
    _refuses(named)
    _refuses(MemoryStore())
    with pytest.raises(UnpicklableError, match="round3-pickle"):
        pickle.dumps(named.store)
    b = zarrkit.open({}, mode="w", shape=(3,), dtype="i4")
    b[...] = 5
    copy = pickle.loads(pickle.dumps(b))
    assert copy[...].tolist() == [5, 5, 5]
    MemoryStore.discard("round3-pickle")


def test_writable_zip_refuses_with_the_same_error(tmp_path):
    store = ZipStore(str(tmp_path / "a.zip"), mode="w")
    with pytest.raises(UnpicklableError, match="one writer"):
        pickle.dumps(store)
    store.close()


# -- 3. open's docstring ---------------------------------------------------------------------


def test_open_docstring_names_the_cast_driver(tmp_path):
    doc = " ".join(zarrkit.open.__doc__.split())
    assert '"driver": "zarr3"' in doc and '{"driver": "cast", "dtype": ..., "base": spec}' in doc
    base = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)}}
    zarrkit.open(base, create=True, dtype="float32", shape=[2])[...] = [1.5, 2.5]
    view = zarrkit.open({"driver": "cast", "dtype": "int32", "base": base})
    assert view.read().result().tolist() == [1, 2]


# -- 4. cast specs' fill values --------------------------------------------------------------

CAST_FILLS = [(1.5, "float32", "int32"), (-1.5, "float32", "uint8"), (300, "int32", "uint8"),
              (0.5, "float32", "bool"), ("NaN", "float32", "int32"),
              (1e10, "float64", "int32"), (1e300, "float64", "float32"),
              ([1.5, 2.5], "complex64", "float32"), (70000, "float32", "float16"),
              (1.5, "float32", "string"), (1.5, "float32", "ustring"), (True, "bool", "int8")]


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "fc" and b.dtype.kind in "fc":
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    return a.tolist() == b.tolist() and type(a.flat[0]) is type(b.flat[0])


@pytest.mark.parametrize(("fill", "base_type", "cast_type"), CAST_FILLS)
def test_cast_fill_values_convert_as_tensorstore(tmp_path, fill, base_type, cast_type):
    base = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)},
            "metadata": {"shape": [2], "data_type": base_type, "fill_value": fill}}
    spec = {"driver": "cast", "dtype": cast_type, "base": base}
    ts.open(base, create=True).result()
    t, k = ts.Spec(spec), zarrkit.Spec(spec)
    # TensorStore converts as C does (truncating, wrapping), never refusing the fill value.
    assert _same(k.schema.fill_value, t.schema.fill_value)
    assert _same(k.fill_value, t.fill_value)
    assert k.schema.to_json()["fill_value"] == t.schema.to_json()["fill_value"]
    opened_t, opened_k = ts.open(spec).result(), zarrkit.open(spec)
    assert _same(opened_k.schema.fill_value, opened_t.schema.fill_value)
    assert np.asarray(opened_k.fill_value).tolist() == opened_t.fill_value.tolist()
    assert opened_k.read().result().tolist() == opened_t.read().result().tolist()


def test_cast_fill_value_write_only_view_has_none(tmp_path):
    base = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)},
            "metadata": {"shape": [2], "data_type": "complex64", "fill_value": [1, 2]}}
    spec = {"driver": "cast", "dtype": "bool", "base": base}
    assert ts.Spec(spec).fill_value is None and zarrkit.Spec(spec).fill_value is None
    assert "fill_value" not in zarrkit.Spec(spec).schema.to_json()


# -- 5. zarrkit.Dim ----------------------------------------------------------------------------

DIM_FORMS = [
    ((), {}), ((None,), {}), (("x",), {}), ((b"x",), {}), ((10,), {}), ((10, "x"), {}),
    ((), {"size": 10}), ((), {"size": None}), ((), {"size": None, "label": "x"}),
    ((), {"size": 3, "inclusive_min": 5}), ((3,), {"inclusive_min": -5}), ((5, 10), {}),
    ((5, None), {}), ((None, 10), {}), ((None, None), {}), ((5, 10), {"label": "x"}),
    ((5,), {"exclusive_max": 10}), ((), {"inclusive_min": 5}), ((), {"exclusive_max": 5}),
    ((), {"inclusive_max": 5}), ((), {"inclusive_min": 5, "inclusive_max": 10}),
    ((), {"inclusive_min": 5, "exclusive_max": 10}), ((), {"size": 0}), ((5, 5), {}),
    ((10,), {"implicit_upper": True}), ((5, 10), {"implicit_lower": True}),
    (("x",), {"implicit_upper": False}), ((), {"label": "x"}), ((True,), {}),
    ((), {"inclusive_min": -2**62 + 1}), ((), {"exclusive_max": 2**62}),
    ((), {"size": 2**62}), ((), {"inclusive_min": 1, "size": 2**62 - 1}),
    ((), {"inclusive_max": 2**62 - 1}), ((np.int64(4),), {"label": "y"}),
]


def _facts(dim):
    return (repr(dim), str(dim), dim.inclusive_min, dim.exclusive_max, dim.inclusive_max,
            dim.exclusive_min, dim.size, dim.label, dim.implicit_lower, dim.implicit_upper,
            dim.finite, dim.empty)


@pytest.mark.parametrize(("args", "kwargs"), DIM_FORMS)
def test_dim_construction_forms_match_tensorstore(args, kwargs):
    assert _facts(zarrkit.Dim(*args, **kwargs)) == _facts(ts.Dim(*args, **kwargs))


DIM_REFUSED = [
    ((5, 3), {}), ((), {"size": -1}), ((), {"size": 3, "exclusive_max": 5}),
    ((), {"inclusive_max": 3, "exclusive_max": 5}), ((3.5,), {}), ((5, 10), {"label": 3}),
    ((), {"inclusive_min": -2**62}), ((), {"inclusive_min": 2**62}),
    ((), {"exclusive_max": 2**62 + 1}), ((), {"x": 1}), (("x",), {"label": "y"}),
]


@pytest.mark.parametrize(("args", "kwargs"), DIM_REFUSED)
def test_dim_refuses_what_tensorstore_refuses(args, kwargs):
    with pytest.raises((TypeError, ValueError)) as expected:
        ts.Dim(*args, **kwargs)
    with pytest.raises(zarrkit.ZarrkitError, match="Dim|label") as got:
        zarrkit.Dim(*args, **kwargs)
    assert isinstance(got.value, expected.type)  # TypeError or ValueError, as TensorStore


def test_dim_takes_the_label_and_flags_as_keywords_like_tensorstore():
    """zarrkit's former positional form Dim(lo, hi, label, ...) is refused as ts.Dim's
    TypeError (tests/test_hunt_view_ops.py has more)."""
    assert repr(zarrkit.Dim(1, 4, label="x", implicit_lower=True)) == repr(
        ts.Dim(1, 4, label="x", implicit_lower=True))
    with pytest.raises(TypeError):
        ts.Dim(1, 4, "x")
    with pytest.raises(SelectionTypeError, match="at most 2 positional"):
        zarrkit.Dim(1, 4, "x")


def _pairs(lib):
    d = lib.Dim
    a = d(inclusive_min=1, exclusive_max=5, label="x")
    return [(a, d(size=3)), (a, d(10, 20)), (a, d()), (a, d(label="x")),
            (d(1, 5, implicit_lower=True), d(0, 3)), (d(1, 5, implicit_lower=True), d(1, 3)),
            (d(1, 3), d(1, 5, implicit_lower=True)), (d(1, 5, implicit_upper=True), d(1, 5)),
            (d(1, 5, implicit_upper=True), d(1, 7)), (d(1, 5, implicit_upper=True), d(1, 3)),
            (d(1, 5), d(7, 7)), (d(7, 7), d(1, 5)), (d(1, 5), d(7, 9)),
            (d(None, 5), d(3, None)), (d("y"), d(2, 4, label="y"))]


@pytest.mark.parametrize("i", range(len(_pairs(ts))))
@pytest.mark.parametrize("op", ["hull", "intersect"])
def test_dim_hull_and_intersect_match_tensorstore(i, op):
    (ka, kb), (ta, tb) = _pairs(zarrkit)[i], _pairs(ts)[i]
    assert _facts(getattr(ka, op)(kb)) == _facts(getattr(ta, op)(tb))


@pytest.mark.parametrize("op", ["hull", "intersect"])
def test_dim_hull_and_intersect_refuse_other_labels_and_types(op):
    with pytest.raises(ValueError, match="labels"):
        getattr(ts.Dim(1, 5, label="x"), op)(ts.Dim(label="y"))
    with pytest.raises(SpecError, match="labels 'x' and 'y'"):
        getattr(zarrkit.Dim(1, 5, label="x"), op)(zarrkit.Dim(label="y"))
    with pytest.raises(SpecError, match="expected a Dim"):
        getattr(zarrkit.Dim(1, 5), op)(3)


def test_dim_contains_iterates_and_compares_like_tensorstore():
    for lib in (ts, zarrkit):
        d = lib.Dim
        assert [d(2, 3) in d(1, 5), d(0, 3) in d(1, 5), d(3, 3) in d(1, 5), d(9, 9) in d(1, 5),
                d() in d(), d(2, 3) in d(), d(2, 3, label="q") in d(1, 5, label="z"),
                3 in d(1, 5), 5 in d(1, 5), True in d(1, 5), np.int8(4) in d(1, 5)] == \
            [True, False, True, True, True, True, True, True, False, True, True]
        assert list(d(1, 4)) == [1, 2, 3] and list(d(5)) == [0, 1, 2, 3, 4] and len(d(1, 4)) == 3
        assert d(1, 4) == d(1, 4) and d(1, 4) != d(1, 4, label="x")
        assert d(1, 4) != d(1, 4, implicit_lower=True)
    for index in (3.0, "x"):
        with pytest.raises(TypeError):
            index in ts.Dim(1, 5)  # noqa: B015
        with pytest.raises(SelectionTypeError, match="integers and Dims"):
            index in zarrkit.Dim(1, 5)  # noqa: B015
    with pytest.raises(SelectionError):  # zarrkit: no length for an unbounded dimension
        iter(zarrkit.Dim())


def test_domain_dimensions_are_dims_that_hull():
    domain = zarrkit.IndexDomain.make(inclusive_min=[0, 2], shape=[4, 3], labels=["x", "y"])
    t = ts.IndexDomain(inclusive_min=[0, 2], shape=[4, 3], labels=["x", "y"])
    assert _facts(domain["y"].hull(zarrkit.Dim(10))) == _facts(t["y"].hull(ts.Dim(10)))
    assert domain[0] in zarrkit.Dim(-1, 5)

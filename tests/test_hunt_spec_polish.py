"""TensorStore parity of small spec-layer behaviours: retained contexts, memory kvstore
paths, index-array output maps, `astype` and `Dim` argument errors."""

from __future__ import annotations

import numpy as np
import pytest
import tensorstore as ts

import zarrkit

MD = {"shape": [4], "data_type": "int32"}


def _members(spec):
    return {k: v for k, v in spec.items() if k not in ("metadata", "transform", "dtype")}


# -- 1. spec(retain_context=True) with nested contexts --------------------------------------

OUTER = {"cache_pool": {"total_bytes_limit": 1000}, "cache_pool#a": "cache_pool",
         "data_copy_concurrency": {"limit": 2}}
RETAIN_CASES = {
    # The spec context redefines what the outer alias names: the array uses the outer pool.
    "outer-alias": ({"cache_pool": "cache_pool#b",
                     "context": {"cache_pool": {"total_bytes_limit": 2000},
                                 "cache_pool#b": "cache_pool#a"}}, OUTER),
    "named": ({"cache_pool": "cache_pool#a",
               "context": {"cache_pool#a": {"total_bytes_limit": 1000}}}, {}),
    "inline": ({"cache_pool": {"total_bytes_limit": 1000}}, {}),
    "spec-over-open": ({"context": {"data_copy_concurrency": {"limit": 3}}},
                       {"data_copy_concurrency": {"limit": 2},
                        "cache_pool": {"total_bytes_limit": 7}}),
    "kvstore-context": ({"kvstore": {"driver": "memory", "path": "x/",
                                     "context": {"memory_key_value_store": {},
                                                 "cache_pool": {"total_bytes_limit": 5}}}},
                        OUTER),
}


def _memory_spec(members):
    return {"driver": "zarr3", "kvstore": {"driver": "memory"}, "metadata": MD,
            "create": True, **members}


@pytest.mark.parametrize("case", RETAIN_CASES)
def test_retained_context_is_tensorstores(case):
    members, outer = RETAIN_CASES[case]
    t = ts.open(_memory_spec(members), context=ts.Context(outer)).result()
    a = zarrkit.open(_memory_spec(members), context=zarrkit.Context(outer))
    expected = t.spec(retain_context=True).to_json()
    got = a.spec(retain_context=True).to_json()
    assert _members(got) == _members(expected)


@pytest.mark.parametrize("case", RETAIN_CASES)
def test_retained_spec_json_reopens_equal_resources(case):
    members, outer = RETAIN_CASES[case]
    a = zarrkit.open(_memory_spec(members), context=zarrkit.Context(outer))
    again = zarrkit.open({**a.spec(retain_context=True).to_json(), "create": True})
    for kind in ("cache_pool", "data_copy_concurrency"):
        mine, other = a._open_state.bound[kind][1], again._open_state.bound[kind][1]
        assert other is not mine and other.to_json() == mine.to_json()


def test_outer_alias_keeps_its_meaning():
    members, outer = RETAIN_CASES["outer-alias"]
    a = zarrkit.open(_memory_spec(members), context=zarrkit.Context(outer))
    assert a._open_state.cache_pool.total_bytes_limit == 1000
    again = zarrkit.open(a.spec(retain_context=True).to_json(), create=True)
    assert again._open_state.cache_pool.total_bytes_limit == 1000  # merged, it was 2000


@pytest.mark.parametrize("case", RETAIN_CASES)
def test_retained_spec_object_reopens_the_same_resources(case):
    members, outer = RETAIN_CASES[case]
    a = zarrkit.open(_memory_spec(members), context=zarrkit.Context(outer))
    a[...] = [1, 2, 3, 4]
    spec = a.spec(retain_context=True)
    again = zarrkit.open(spec)
    np.testing.assert_array_equal(again[...], [1, 2, 3, 4])  # the same memory store
    again[0] = 9
    assert a[0] == 9
    state, other = a._open_state, again._open_state
    assert other.cache_pool is state.cache_pool
    assert other.copy_limit is state.copy_limit
    # Its JSON makes new resources, as TensorStore's: the memory store is another (empty) one
    with pytest.raises(zarrkit.NodeNotFoundError):
        zarrkit.open(spec.to_json())


def test_tensorstore_retained_spec_object_shares_the_memory_store():
    t = ts.open(_memory_spec({})).result()
    t[...] = [1, 2, 3, 4]
    spec = t.spec(retain_context=True)
    assert ts.open(spec).result().read().result().tolist() == [1, 2, 3, 4]
    with pytest.raises(ValueError):
        ts.open(spec.to_json()).result()


def test_retained_file_io_concurrency(tmp_path):
    kv = {"driver": "file", "path": str(tmp_path) + "/",
          "context": {"file_io_concurrency": {"limit": 3}}}
    spec = {"driver": "zarr3", "kvstore": kv, "metadata": MD, "create": True,
            "cache_pool": {"total_bytes_limit": 1000}}
    outer = {"file_io_concurrency": {"limit": 5}}
    t = ts.open(spec, context=ts.Context(outer)).result()
    a = zarrkit.open(spec, context=zarrkit.Context(outer), delete_existing=True)
    expected = t.spec(retain_context=True).to_json()
    got = a.spec(retain_context=True).to_json()
    assert got["context"] == expected["context"]  # the kvstore's limit, not the outer one
    assert got["cache_pool"] == expected["cache_pool"]
    again = zarrkit.open(a.spec(retain_context=True))
    assert again._open_state.io_limit is a._open_state.io_limit
    reopened = zarrkit.open(got)
    assert reopened._open_state.bound["file_io_concurrency"][1].limit == 3


@pytest.mark.parametrize("outer", [{}, {"file_io_sync": False}, {"file_io_sync#x": False}])
def test_retained_file_kvstore_keeps_its_file_io_sync(tmp_path, outer):
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path) + "/"},
            "metadata": MD, "create": True, "delete_existing": True}
    t = ts.open(spec, context=ts.Context(outer)).result()
    a = zarrkit.open(spec, context=zarrkit.Context(outer))
    got = a.spec(retain_context=True).to_json()
    expected = t.spec(retain_context=True).to_json()
    assert got["kvstore"]["file_io_sync"] == expected["kvstore"]["file_io_sync"]
    assert zarrkit.open(got).store.fsync is expected["kvstore"]["file_io_sync"]
    assert "file_io_sync" not in a.spec().to_json()["kvstore"]  # only with the context


def test_retained_view_and_cast_specs_keep_the_resources():
    a = zarrkit.open(_memory_spec({"cache_pool": {"total_bytes_limit": 1000}}))
    a[...] = [1, 2, 3, 4]
    view = zarrkit.cast(a.view[1:3], "float32")
    again = zarrkit.open(view.spec(retain_context=True))
    np.testing.assert_array_equal(again.read().result(), [2.0, 3.0])


# -- 2. memory kvstore paths fold as in TensorStore's normal form ---------------------------

MEMORY_LOCATIONS = [({"driver": "memory"}, "x"), ({"driver": "memory", "path": "x/"}, None),
                    ({"driver": "memory", "path": "a"}, "b/c"), ("memory://q/", "r"),
                    ("memory://", "x/y")]


def _driver_md(driver):
    if driver == "zarr3":
        return {"shape": [4], "data_type": "int32"}
    return {"shape": [4], "dtype": "<i4", "chunks": [4]}


@pytest.mark.parametrize("driver", ["zarr3", "zarr"])
@pytest.mark.parametrize("kvstore, path", MEMORY_LOCATIONS)
def test_memory_kvstore_path_folds_as_tensorstore(driver, kvstore, path):
    spec = {"driver": driver, "kvstore": kvstore, "metadata": _driver_md(driver),
            "create": True, **({"path": path} if path else {})}
    t = ts.open(spec).result()
    ctx = zarrkit.Context()
    a = zarrkit.open(spec, context=ctx)
    a[...] = [1, 2, 3, 4]
    expected = t.spec().to_json()
    got = a.spec().to_json()
    assert (got["kvstore"], got.get("path")) == (expected["kvstore"], expected.get("path"))
    assert zarrkit.Spec(spec).to_json()["kvstore"] == ts.Spec(spec).to_json()["kvstore"]
    # The folded form opens the same array (in the same context).
    assert zarrkit.open(got, context=ctx)[...].tolist() == [1, 2, 3, 4]


# -- 3. IndexTransform.from_json: index_array_bounds and implicit bounds --------------------

def _transform(output, exclusive_max=(3,), inclusive_min=(0,)):
    return {"input_inclusive_min": list(inclusive_min),
            "input_exclusive_max": list(exclusive_max), "output": output}


def _ts_transform(json):
    try:
        return ts.IndexTransform(json=json).to_json()
    except ValueError:
        return "error"


def _zk_transform(json):
    try:
        return zarrkit.IndexTransform.from_json(json).to_json()
    except zarrkit.SpecError:
        return "error"


TRANSFORMS = {
    "bounds-kept": _transform([{"index_array": [1, 2, 5], "index_array_bounds": [0, 4]}]),
    "bounds-met": _transform([{"index_array": [1, 2, 3], "index_array_bounds": [0, 4]}]),
    "bounds-infinite": _transform([{"index_array": [1, 2, 3],
                                    "index_array_bounds": ["-inf", "+inf"]}]),
    "bounds-half-infinite": _transform([{"index_array": [1, 2, 3],
                                         "index_array_bounds": [2, "+inf"]}]),
    "bounds-empty": _transform([{"index_array": [1, 2, 3], "index_array_bounds": [3, 2]}]),
    "bounds-float": _transform([{"index_array": [1, 2, 3], "index_array_bounds": [0.0, 3.0]}]),
    "bounds-scaled": _transform([{"index_array": [1, 2, 3], "offset": 5, "stride": 2,
                                  "index_array_bounds": [2, 2]}]),
    "bounds-one-value": _transform([{"index_array": [7], "index_array_bounds": [0, 4]}],
                                   (1,)),
    "bounds-invalid": _transform([{"index_array": [1, 2, 3], "index_array_bounds": [5, 2]}]),
    "bounds-upside-down": _transform([{"index_array": [1, 2, 3],
                                       "index_array_bounds": ["+inf", 3]}]),
    "bounds-short": _transform([{"index_array": [1, 2, 3], "index_array_bounds": [0]}]),
    "bounds-string": _transform([{"index_array": [1, 2, 3], "index_array_bounds": "x"}]),
    "bounds-null": _transform([{"index_array": [1, 2, 3], "index_array_bounds": None}]),
    "bounds-too-large": _transform([{"index_array": [1, 2, 3],
                                     "index_array_bounds": [-(2**62), 3]}]),
    "bounds-on-constant": _transform([{"offset": 2, "index_array_bounds": [0, 4]}]),
    "bounds-on-dimension": _transform([{"input_dimension": 0, "index_array_bounds": [0, 4]}]),
    "implicit-upper": _transform([{"index_array": [1, 2, 3]}], ([3],)),
    "implicit-lower": _transform([{"index_array": [1, 2, 3]}], (3,), ([0],)),
    "implicit-other-dim": _transform([{"index_array": [[1], [2], [3]]}], (3, [4]), (0, 0)),
    "implicit-varying": _transform([{"index_array": [[1, 2, 3, 4]] * 3}], (3, [4]), (0, 0)),
    "implicit-broadcast": _transform([{"index_array": [[1], [2], [3]]}], ([3], 1), (0, 0)),
}


@pytest.mark.parametrize("name", TRANSFORMS)
def test_index_array_transform_json_as_tensorstore(name):
    json = TRANSFORMS[name]
    expected = _ts_transform(json)
    got = _zk_transform(json)
    assert got == expected  # bounds-scaled too: offset and stride kept apart, as TensorStore
    if got != "error":
        assert _zk_transform(got) == got  # round trip


def test_index_array_bounds_are_checked_when_data_moves(tmp_path):
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)},
            "metadata": {"shape": [6], "data_type": "int32"}, "create": True}
    ts.open(spec).result().write(np.arange(6, dtype=np.int32)).result()
    transform = _transform([{"index_array": [1, 2, 5], "index_array_bounds": [0, 4]}])
    del spec["create"]
    t = ts.open({**spec, "transform": transform}).result()
    z = zarrkit.open({**spec, "transform": transform})
    assert z.spec().to_json()["transform"] == t.spec().to_json()["transform"]
    assert z[0:2].read().result().tolist() == t[0:2].read().result().tolist() == [1, 2]
    with pytest.raises(ValueError):
        t.read().result()
    with pytest.raises(zarrkit.SelectionError):
        z.read().result()


# -- 4. spec() writes one-value and empty index arrays as constants --------------------------

VIEW_CHAINS = [
    "x[d[0].vindex[np.array([0, 2])]][d[1, -2].translate_to[1, 3]]"
    "[d[0:2].translate_to[-1, 0].diagonal]",
    "x[d[0].vindex[np.array([0, 2])]][d[1, -2].translate_to[1, 3]]"
    "[d[0:2].translate_to[0, 0].diagonal]",
    "x[d[0].vindex[np.array([0, 2])]][d[1, -2].translate_to[1, 3]][d[0:2].translate_to[-1, 0]]"
    "[d[0:2].diagonal]",
    "x[1:1].vindex[[], :]",
    "x[2:2, [0, 0]]",
    "x.vindex[[1, 1], [0, 0]]",
    "x[d[0].vindex[[1]]]",
]


@pytest.mark.parametrize("chain", VIEW_CHAINS)
def test_view_spec_transform_as_tensorstore(chain):
    spec = {"driver": "zarr3", "kvstore": {"driver": "memory"},
            "metadata": {"shape": [3, 1], "data_type": "int32"}, "create": True}
    t = eval(chain, {"x": ts.open(spec).result(), "d": ts.d, "np": np})  # noqa: S307
    z = eval(chain, {"x": zarrkit.open(spec).view, "d": zarrkit.d, "np": np})  # noqa: S307
    assert z.spec().to_json()["transform"] == t.spec().to_json()["transform"]


def test_a_one_value_index_array_out_of_its_bounds_fails_spec_as_tensorstore():
    spec = {"driver": "zarr3", "kvstore": {"driver": "memory"},
            "metadata": {"shape": [3, 1], "data_type": "int32"}, "create": True}
    chain = ("x[d[0].vindex[np.array([0, -1])]][d[1, -2].translate_to[1, 3]]"
             "[d[0:2].translate_to[-1, 0].diagonal]")
    t = eval(chain, {"x": ts.open(spec).result(), "d": ts.d, "np": np})  # noqa: S307
    z = eval(chain, {"x": zarrkit.open(spec).view, "d": zarrkit.d, "np": np})  # noqa: S307
    with pytest.raises(ValueError, match="outside valid range"):
        t.spec()
    with pytest.raises(zarrkit.SelectionError, match="outside the valid range"):
        z.spec()
    # The bare transform keeps the array (with its bounds), as TensorStore's does.
    assert z.transform.to_json()["output"][0] == {"index_array": [-1],
                                                  "index_array_bounds": [0, "+inf"]}


# -- 5. astype: TensorStore's name for cast ------------------------------------------------

def _astype_pair():
    spec = {"driver": "zarr3", "kvstore": {"driver": "memory"},
            "metadata": {"shape": [4], "data_type": "int32"}, "create": True}
    t = ts.open(spec).result()
    a = zarrkit.open(spec)
    t.write(np.array([1, -2, 3, 40], dtype=np.int32)).result()
    a[...] = [1, -2, 3, 40]
    return t, a


@pytest.mark.parametrize("dtype", ["float32", "uint8", "bool", np.float64, "bfloat16", "int4",
                                   "int32", int, float])
def test_astype_is_cast_as_tensorstore(dtype):
    t, a = _astype_pair()
    assert t.astype(dtype).spec().to_json() == ts.cast(t, dtype).spec().to_json()
    for zk, tt in ((a.astype(dtype), t.astype(dtype)),
                   (a.view[1:].astype(dtype), t[1:].astype(dtype))):
        assert isinstance(zk, zarrkit.View)
        assert zk.spec().to_json() == tt.spec().to_json()
        got, expected = zk.read().result(), tt.read().result()
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64))


def test_astype_writes_back_converted():
    t, a = _astype_pair()
    t.astype("float64")[1:3].write(np.array([7.9, -1.2])).result()
    a.astype("float64")[1:3].write(np.array([7.9, -1.2])).result()
    assert a[...].tolist() == t.read().result().tolist() == [1, 7, -1, 40]


def test_astype_to_text_is_read_only_as_tensorstore():
    t, a = _astype_pair()
    tv, zv = t.astype(ts.string), a.astype("string")
    assert (tv.readable, tv.writable) == (True, False)
    assert zv.read().result().tolist() == tv.read().result().tolist()
    with pytest.raises(ValueError):
        tv.write(np.array([b"1"] * 4, dtype=object)).result()
    with pytest.raises(zarrkit.ZarrkitError):
        zv.write(np.array([b"1"] * 4, dtype=object)).result()


@pytest.mark.parametrize("dtype", [None, 3, 3.5, [1], np.array([1.0])])
def test_astype_of_no_data_type_is_a_type_error(dtype):
    t, a = _astype_pair()
    with pytest.raises(TypeError):
        t.astype(dtype)
    for call in (a.astype, a.view.astype, lambda d: zarrkit.cast(a, d)):
        with pytest.raises(zarrkit.CastTypeError, match="expected a data type"):
            call(dtype)


def test_astype_of_an_unknown_name_is_a_value_error():
    t, a = _astype_pair()
    with pytest.raises(ValueError):
        t.astype("nope")
    with pytest.raises(zarrkit.SpecError, match="nope"):
        a.astype("nope")


def test_zarr_python_array_has_no_astype():
    """Array.astype cannot clash with zarr-python 3's API: it has none."""
    import zarr

    assert not hasattr(zarr.Array, "astype")


# -- 6. Dim argument errors: TensorStore's builtin types -----------------------------------

DIM_CALLS = [
    ((3.5,), {}), ((), {"label": 3}), ((3, 3.5), {}), ((1.0, 4), {}), ((), {"size": 3.5}),
    ((), {"size": "3"}), ((3,), {"inclusive_min": 1.5}),
    ((), {"inclusive_min": 1, "inclusive_max": 2.5}), ((), {"implicit_lower": "yes"}),
    ((3,), {"implicit_upper": [1]}), (("x",), {"label": "y"}), ((3,), {"bogus": 1}),
    ((), {"size": 3, "exclusive_max": 4}), ((3, "x"), {"label": "y"}), ((2**63,), {}),
    ((np.float64(3),), {}), (([3],), {}), (("x", 3), {}), ((3, None), {"label": 5}),
    ((), {"inclusive_min": 0, "inclusive_max": "+inf"}), ((1, 4, "x"), {}),
    # values of the right type: ValueError in both
    ((), {"size": -1}), ((5, 2), {}), ((), {"inclusive_min": 2**62, "exclusive_max": 2**62 + 1}),
]


@pytest.mark.parametrize(("args", "kwargs"), DIM_CALLS)
def test_dim_argument_errors_have_tensorstores_builtin_type(args, kwargs):
    with pytest.raises((TypeError, ValueError)) as expected:
        ts.Dim(*args, **kwargs)
    with pytest.raises(zarrkit.ZarrkitError, match="Dim") as got:
        zarrkit.Dim(*args, **kwargs)
    assert isinstance(got.value, expected.type)
    if expected.type is TypeError:
        assert isinstance(got.value, zarrkit.SelectionTypeError)
        assert not isinstance(got.value, ValueError)
    else:
        assert isinstance(got.value, zarrkit.SpecError)


@pytest.mark.parametrize(("args", "kwargs"), [
    ((np.int32(3),), {}), ((True,), {}), ((), {"implicit_lower": None}), ((), {"size": None}),
    ((), {"implicit_lower": 1}), ((), {"implicit_lower": 0.0}), ((2, 5), {"label": b"x"}),
])
def test_dim_arguments_tensorstore_accepts(args, kwargs):
    assert repr(zarrkit.Dim(*args, **kwargs)) == repr(ts.Dim(*args, **kwargs))

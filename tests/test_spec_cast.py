"""TensorStore's cast driver (`zarrkit.cast`, `{"driver": "cast", ...}`), with tensorstore
0.1.86 as the oracle: allowed conversions and the view's mode, values read and written,
specs, schemas, views, open modes and errors."""

from __future__ import annotations

import asyncio
import pickle
import warnings

import numpy as np
import pytest

import zarrkit
from zarrkit import DataTypeError, ReadOnlyError, SpecError

ts = pytest.importorskip("tensorstore")

NUMERIC = ["bool", "int2", "int4", "int8", "uint8", "int16", "uint16", "int32", "uint32",
           "int64", "uint64", "float4_e2m1fn", "float8_e3m4", "float8_e4m3fn",
           "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2", "float8_e5m2fnuz",
           "float8_e8m0fnu", "float16", "bfloat16", "float32", "float64", "complex64",
           "complex128"]
TEXT = ["string", "ustring"]


def _spec(tmp_path, dtype="float32", name="a"):
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / name) + "/"},
            "dtype": dtype}


def _pair(tmp_path, dtype="float32", values=None, shape=(4, 5), **metadata):
    """The same stored array opened by zarrkit and by TensorStore."""
    spec = _spec(tmp_path, dtype)
    if metadata:
        spec["metadata"] = metadata
    a = zarrkit.open(spec, create=True, shape=list(shape))
    if values is not None:
        a[...] = np.asarray(values).astype(a.dtype)
    return a, ts.open({k: v for k, v in spec.items()}).result()


def _mode(view):
    return ("r" if view.readable else "") + ("w" if view.writable else "")


def _ts_mode(base, dtype):
    try:
        return _mode(ts.cast(base, dtype))
    except ValueError:
        return "refused"


def _zk_mode(base, dtype):
    try:
        return _mode(zarrkit.cast(base, dtype))
    except SpecError:
        return "refused"


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    if got.dtype.kind in "fcV" and got.dtype.names is None:
        assert np.array_equal(got.astype(np.complex128), want.astype(np.complex128),
                              equal_nan=True)
    else:
        assert got.tolist() == want.tolist()


# -- which conversions, in which direction -----------------------------------------------------


@pytest.mark.parametrize("source", NUMERIC)
def test_mode_matches_tensorstore_for_every_target(tmp_path, source):
    a, t = _pair(tmp_path, source, shape=(2,))
    for target in NUMERIC + TEXT:
        assert _zk_mode(a, target) == _ts_mode(t, target), (source, target)


def test_mode_table_facts(tmp_path):
    c, _ = _pair(tmp_path, "complex64", shape=(2,))
    b = zarrkit.open(_spec(tmp_path, "bool", "b"), create=True, shape=[2])
    assert _mode(zarrkit.cast(c, "bool")) == "w"  # complex never reads as bool
    assert _mode(zarrkit.cast(b, "complex128")) == "r"
    assert _mode(zarrkit.cast(c, "int8")) == "rw"  # the real part
    assert _mode(zarrkit.cast(c, "string")) == "r"  # text never converts to numbers
    with pytest.raises(SpecError, match="bool and string"):
        zarrkit.cast(b, "string")


def test_read_only_base_limits_the_mode(tmp_path):
    a, _ = _pair(tmp_path, "float32", shape=(2,))
    spec = _spec(tmp_path, "float32")
    r = zarrkit.open(spec, read=True)
    tr = ts.open(spec, read=True).result()
    assert _mode(zarrkit.cast(r, "int32")) == _mode(ts.cast(tr, "int32")) == "r"
    assert _mode(zarrkit.cast(r, "string")) == _mode(ts.cast(tr, "string")) == "r"
    zarrkit.open(_spec(tmp_path, "complex64", "c"), create=True, shape=[2])
    rc = zarrkit.open(_spec(tmp_path, "complex64", "c"), read=True)
    tc = ts.open(_spec(tmp_path, "complex64", "c"), read=True).result()
    with pytest.raises(ValueError, match="complex64 -> bool"):
        ts.cast(tc, "bool")
    with pytest.raises(SpecError, match="Read access requires .*complex64 -> bool"):
        zarrkit.cast(rc, "bool")
    with pytest.raises(ReadOnlyError, match="its base array is read-only"):
        zarrkit.cast(r, "int32")[...] = 1


def test_nested_cast_mode_is_every_step(tmp_path):
    a, t = _pair(tmp_path, "float32", shape=(2,))
    for chain in (["complex64", "bool"], ["string", "ustring"], ["bool", "complex64"],
                  ["int8", "float64"]):
        zv, tv = a, t
        for name in chain:
            zv, tv = zarrkit.cast(zv, name), ts.cast(tv, name)
        assert _mode(zv) == _mode(tv), chain


# -- values ------------------------------------------------------------------------------------


def _in_range(source):
    """Values every numeric type holds (small, exact in float4 and float8_e8m0fnu's powers of
    two excepted), so no conversion is out of range."""
    if source == "bool":
        return [True, False, True, True]
    if source == "float8_e8m0fnu":
        return [1.0, 2.0, 4.0, 0.5]
    if source.startswith("complex"):
        return [1 + 2j, 0j, 2 - 1j, 1.5 + 0.5j]
    if source.startswith("uint") or source == "int2":
        return [1, 0, 1, 0]
    return [1, 0, 1.5, -1] if source[0] in "fb" else [1, 0, 1, -1]


@pytest.mark.parametrize("source", NUMERIC)
def test_values_read_match_tensorstore(tmp_path, source):
    a, t = _pair(tmp_path, source, values=_in_range(source), shape=(4,))
    for target in NUMERIC + TEXT:
        try:
            want = ts.cast(t, target).read().result()
        except ValueError:
            continue  # not readable: checked by the mode tests
        got = zarrkit.cast(a, target).read().result()
        if "float8_e8m0fnu" in (source, target):
            # TensorStore 0.1.86 converts this type with a wrong exponent bias (1.0 reads as
            # 2**-64, and back); zarrkit converts by value, as ml_dtypes does.
            assert got.dtype == want.dtype
            if target not in TEXT:
                _same(got, np.real(a[...]).astype(np.float64).astype(got.dtype))
            continue
        _same(got, want)


def test_out_of_range_values_match_tensorstore(tmp_path):
    """Integers wrap, floats truncate toward zero, floats overflow to inf, NaN is true."""
    ints, tints = _pair(tmp_path, "int32", values=[300, -1, 127, 128, 65535, -129], shape=(6,))
    for target in ("int8", "uint8", "int4", "bool", "uint64", "float16"):
        _same(zarrkit.cast(ints, target).read().result(), ts.cast(tints, target).read().result())
    spec = _spec(tmp_path, "float64", "f")
    f = zarrkit.open(spec, create=True, shape=[8])
    f[...] = np.array([1.7, -1.7, 2.5, 1e300, -1e300, np.nan, np.inf, 70000.0])
    tf = ts.open(spec).result()
    for target in ("bool", "float32", "float16", "bfloat16", "float8_e4m3fn", "complex64"):
        _same(zarrkit.cast(f, target).read().result(), ts.cast(tf, target).read().result())
    _same(zarrkit.cast(f.view[:3], "int32").read().result(),
          ts.cast(tf[:3], "int32").read().result())
    assert zarrkit.cast(f.view[:2], "int8").read().result().tolist() == [1, -1]


def test_text_reads_match_tensorstore(tmp_path):
    values = [1.0, 0.1, 1 / 3, 1e20, 123456789.0, -0.0, np.nan, -np.inf]
    for dtype in ("float64", "float32", "float16", "bfloat16"):
        spec = _spec(tmp_path, dtype, dtype)
        a = zarrkit.open(spec, create=True, shape=[len(values)])
        with np.errstate(over="ignore"):  # 1e20 is inf in float16
            a[...] = np.array(values).astype(a.dtype)
        t = ts.open(spec).result()
        for target in TEXT:
            got = zarrkit.cast(a, target).read().result()
            assert got.tolist() == ts.cast(t, target).read().result().tolist(), (dtype, target)
    c, tc = _pair(tmp_path, "complex128", values=[1 + 2j, -3.7 + 1e-9j], shape=(2,))
    assert zarrkit.cast(c, "string").read().result().tolist() == [b"(1,2)", b"(-3.7,1e-09)"]
    assert zarrkit.cast(c, "string").read().result().tolist() == \
        ts.cast(tc, "string").read().result().tolist()
    i, ti = _pair(tmp_path / "i", "int64", values=[-5, 2**62], shape=(2,))
    chained = zarrkit.cast(zarrkit.cast(i, "string"), "ustring")
    assert chained.read().result().tolist() == ["-5", str(2**62)] == \
        ts.cast(ts.cast(ti, "string"), "ustring").read().result().tolist()


@pytest.mark.parametrize("source, target, written", [
    ("float32", "int32", [[3, -2, 7, 0, 1]] * 4),
    ("int16", "float64", [[1.9, -1.9, 2.5, 300.0, -7.25]] * 4),
    ("uint8", "int8", [[-1, -128, 5, 127, 0]] * 4),
    ("complex64", "bool", [[True, False, True, True, False]] * 4),
    ("bool", "float32", [[0.0, 0.5, -3.0, 1.0, 0.0]] * 4),
    ("float64", "float16", [[0.1, 65504.0, -2.5, 1e-3, 7.0]] * 4),
    ("int8", "complex128", [[1 + 5j, -3.9 + 0j, 0j, 2j, 100 + 1j]] * 4),
])
def test_writes_store_what_tensorstore_stores(tmp_path, source, target, written):
    spec = _spec(tmp_path, source, "z")
    zarrkit.open(spec, create=True, shape=[4, 5])
    zarrkit.cast(zarrkit.open(spec), target).write(np.array(written, dtype=target)).result()
    mine = ts.open(spec).result().read().result()
    tspec = _spec(tmp_path, source, "t")
    t = ts.open(tspec, create=True, shape=[4, 5]).result()
    ts.cast(t, target).write(np.array(written, dtype=target)).result()
    _same(mine, t.read().result())
    _same(zarrkit.open(tspec)[...], mine)  # and zarrkit reads what TensorStore wrote


def test_written_values_convert_as_tensorstore_converts_them(tmp_path):
    a, t = _pair(tmp_path, "float32", shape=(4, 5))
    c = zarrkit.cast(a, "int32")
    c[1:2] = 3.7  # a Python float into an int32 view: truncated, as numpy and TensorStore
    assert a[1].tolist() == [3.0] * 5
    ts.cast(t, "int32")[2:3].write(3.7).result()
    assert a[2].tolist() == [3.0] * 5
    c[0] = np.arange(5, dtype=np.int16)  # safe: accepted
    assert a[0].tolist() == [0, 1, 2, 3, 4]
    for bad in (np.arange(5, dtype=np.float64), np.arange(5, dtype=np.int64)):
        with pytest.raises((TypeError, ValueError)):
            ts.cast(t, "int32")[0].write(bad).result()
        with pytest.raises(DataTypeError, match="cast them first"):
            c[0].write(bad)
    with pytest.raises(zarrkit.CastOverflowError, match="out of bounds"):
        c[0].write(2**40)
    with pytest.raises(DataTypeError, match="abc"):
        c[0].write("abc")


def test_write_only_and_read_only_views(tmp_path):
    a, t = _pair(tmp_path, "complex64", shape=(2,))
    w = zarrkit.cast(a, "bool")
    with pytest.raises(ValueError, match="does not support reading"):
        ts.cast(t, "bool").read().result()
    with pytest.raises(DataTypeError, match="complex64 -> bool.*write-only"):
        w.read().result()
    with pytest.raises(DataTypeError, match="write-only"):
        np.asarray(w)
    w[...] = [True, False]
    assert a[...].tolist() == [1 + 0j, 0j]
    s = zarrkit.cast(a, "string")
    with pytest.raises(ReadOnlyError, match="string -> complex64.*read-only"):
        s[...] = [b"1", b"2"]


# -- description -------------------------------------------------------------------------------


def test_description_matches_tensorstore(tmp_path):
    a, t = _pair(tmp_path, "float32", shape=(4, 5), data_type="float32", fill_value=2.5,
                 dimension_names=["x", "y"])
    for z, tt in ((zarrkit.cast(a, "int32"), ts.cast(t, "int32")),
                  (zarrkit.cast(a.view[1:3, ::2], "float64"), ts.cast(t[1:3, ::2], "float64")),
                  (zarrkit.cast(a, "string"), ts.cast(t, "string")),
                  (zarrkit.cast(zarrkit.cast(a, "int8"), "uint16"),
                   ts.cast(ts.cast(t, "int8"), "uint16"))):
        assert z.spec().to_json() == tt.spec().to_json()
        assert z.schema.to_json() == tt.schema.to_json()
        assert z.domain.to_json() == tt.domain.to_json()
        assert z.dtype == tt.dtype.numpy_dtype
        assert z.chunk_layout.to_json() == tt.chunk_layout.to_json()
    assert zarrkit.cast(a, "int32").fill_value == 2
    zb = zarrkit.cast(zarrkit.open(_spec(tmp_path, "complex64", "c"), create=True, shape=[2]),
                      "bool")
    tb = ts.cast(ts.open(_spec(tmp_path, "complex64", "c")).result(), "bool")
    assert zb.fill_value is None
    assert zb.schema.to_json() == tb.schema.to_json()  # no fill value: it cannot be read


def test_spec_accessors_match_tensorstore(tmp_path):
    a, t = _pair(tmp_path, "float32", shape=(4, 5), data_type="float32", fill_value=2.5,
                 dimension_names=["x", "y"])
    for z, tt in ((zarrkit.cast(a, "int32"), ts.cast(t, "int32")),
                  (zarrkit.cast(a.view[1:3].T, "uint8"), ts.cast(t[1:3].T, "uint8"))):
        zs, tsp = z.spec(), tt.spec()
        assert isinstance(zs, zarrkit.Spec)
        assert zs.dtype == tsp.dtype.name
        assert zs.rank == tsp.rank
        assert zs.domain.to_json() == tsp.domain.to_json()
        assert zs.schema.to_json() == tsp.schema.to_json()
        assert zs.fill_value.tolist() == tsp.fill_value.tolist()
        assert zs.transform.to_json() == tsp.transform.to_json()
        assert zs.chunk_layout.to_json() == tsp.chunk_layout.to_json()
    base = {"driver": "zarr3", "kvstore": {"driver": "memory"}}
    assert zarrkit.cast(zarrkit.Spec(base), "uint32").to_json() == \
        ts.cast(ts.Spec(base), "uint32").to_json()
    assert zarrkit.cast(zarrkit.Spec(base), "uint32").schema.to_json() == \
        ts.cast(ts.Spec(base), "uint32").schema.to_json()


def test_spec_json_normalized_as_tensorstore(tmp_path):
    json = {"driver": "cast", "dtype": "int32", "base": _spec(tmp_path, "float32"),
            "schema": {"dtype": "int32", "chunk_layout": {"chunk": {"shape": [2]}}}}
    assert zarrkit.Spec(json).to_json() == ts.Spec(json).to_json()
    assert zarrkit.Spec(json).dtype == "int32"
    assert pickle.loads(pickle.dumps(zarrkit.Spec(json))) == zarrkit.Spec(json)


# -- views -------------------------------------------------------------------------------------


def test_cast_composes_with_views(tmp_path):
    values = np.arange(20).reshape(4, 5) * 1.5 - 7
    a, t = _pair(tmp_path, "float32", values=values, dimension_names=["x", "y"],
                 data_type="float32")
    d = zarrkit.d
    cases = [
        (zarrkit.cast(a.view[1:3], "int32"), ts.cast(t[1:3], "int32")),
        (zarrkit.cast(a, "int32")[1:3, ::-2], ts.cast(t, "int32")[1:3, ::-2]),
        (zarrkit.cast(a, "int16").T, ts.cast(t, "int16").T),
        (zarrkit.cast(a, "int16").translate_to[10, 20], ts.cast(t, "int16").translate_to[10, 20]),
        (zarrkit.cast(a, "uint8")[d["y"][1:4].translate_by[3]],
         ts.cast(t, "uint8")[ts.d["y"][1:4].translate_by[3]]),
        (zarrkit.cast(a[d["x"][2]], "int8"), ts.cast(t[ts.d["x"][2]], "int8")),
        (zarrkit.cast(a, "int64").oindex[[0, 3], [1, 4]],
         ts.cast(t, "int64").oindex[[0, 3], [1, 4]]),
        (zarrkit.cast(zarrkit.cast(a, "int32")[::-1], "float64"),
         ts.cast(ts.cast(t, "int32")[::-1], "float64")),
    ]
    for z, tt in cases:
        _same(z.read().result(), tt.read().result())
        _same(np.asarray(z), tt.read().result())
        assert z.domain.to_json() == tt.domain.to_json()
        assert z.spec().to_json() == tt.spec().to_json()
        assert z.dtype == tt.dtype.numpy_dtype


def test_writes_through_composed_views(tmp_path):
    a, t = _pair(tmp_path, "float64", shape=(4, 5))
    zarrkit.cast(a, "int8").T[1:3, 2] = np.array([-1, 5], dtype=np.int8)
    zarrkit.cast(a, "uint8")[zarrkit.d[1][4]] = np.array([255, 1, 2, 3], dtype=np.uint8)
    want = ts.open(_spec(tmp_path, "float64", "t"), create=True, shape=[4, 5]).result()
    ts.cast(want, "int8").T[1:3, 2].write(np.array([-1, 5], dtype=np.int8)).result()
    ts.cast(want, "uint8")[ts.d[1][4]].write(np.array([255, 1, 2, 3], dtype=np.uint8)).result()
    _same(t.read().result(), want.read().result())


def test_read_and_write_futures_await(tmp_path):
    a, _ = _pair(tmp_path, "float32", values=np.full((4, 5), 2.5))

    async def go():
        c = zarrkit.cast(a, "int32")
        await c[0].write(np.arange(5, dtype=np.int32))
        return await c[0:2].read()

    assert asyncio.run(go()).tolist() == [[0, 1, 2, 3, 4], [2] * 5]


def test_pickles_as_its_spec(tmp_path):
    a, _ = _pair(tmp_path, "float32", values=np.arange(20).reshape(4, 5) + 0.5)
    for view in (zarrkit.cast(a, "int32")[1:3], zarrkit.cast(zarrkit.cast(a, "complex64"), "bool"),
                 zarrkit.cast(a, "string").T):
        copy = pickle.loads(pickle.dumps(view))
        assert copy.spec().to_json() == view.spec().to_json()
        assert _mode(copy) == _mode(view)
        if view.readable:
            _same(copy.read().result(), view.read().result())


def test_resize_keeps_the_cast(tmp_path):
    a, _ = _pair(tmp_path, "float32", values=np.full((4, 5), 1.5))
    c = zarrkit.cast(a, "int32").resize(exclusive_max=[6, 5])
    assert c.dtype == np.int32
    assert c.read().result().tolist()[0] == [1] * 5
    assert c.shape == (6, 5)


# -- opening cast specs ------------------------------------------------------------------------


def test_open_spec_round_trip(tmp_path):
    a, _ = _pair(tmp_path, "float32", values=np.arange(20).reshape(4, 5) / 3)
    for view in (zarrkit.cast(a, "int32"), zarrkit.cast(a.view[1:, ::2], "float16").T,
                 zarrkit.cast(zarrkit.cast(a, "int8"), "complex64")):
        again = zarrkit.open(view.spec())
        assert again.spec().to_json() == view.spec().to_json()
        _same(again.read().result(), view.read().result())
        # TensorStore opens zarrkit's spec to the same values
        _same(ts.open(view.spec().to_json()).result().read().result(), view.read().result())
        assert zarrkit.open(view.spec().to_json()).dtype == view.dtype


def test_open_create_passes_schema_to_the_base(tmp_path):
    base = _spec(tmp_path, "float32", "n")
    json = {"driver": "cast", "dtype": "int32", "base": base}
    c = zarrkit.open(json, create=True, shape=[4], fill_value=3,
                     chunk_layout=zarrkit.ChunkLayout(chunk_shape=[2]))
    tjson = dict(json, base=_spec(tmp_path, "float32", "m"))
    t = ts.open(tjson, create=True, shape=[4], fill_value=3,
                chunk_layout=ts.ChunkLayout(chunk_shape=[2])).result()
    got, want = c.spec().to_json(), t.spec().to_json()
    got["base"].pop("kvstore"), want["base"].pop("kvstore")
    assert got == want
    assert c.read().result().tolist() == [3, 3, 3, 3]
    c = zarrkit.open(json, create=True, delete_existing=True, shape=[2], dtype="int32")
    assert zarrkit.open(base).shape == (2,)
    zarrkit.open(json, mode="w", shape=[5])
    assert zarrkit.open(base).shape == (5,)
    # a schema keyword's dtype is the cast's, as TensorStore reads it; the rest the base's
    assert zarrkit.open(json, schema={"dtype": "int32", "fill_value": 0}).dtype == np.int32
    assert ts.open(tjson, schema=ts.Schema({"dtype": "int32"})).result().dtype == ts.int32
    with pytest.raises(zarrkit.NodeExistsError):
        zarrkit.open(json, create=True, shape=[5])


def test_open_modes_follow_tensorstore(tmp_path):
    a, _ = _pair(tmp_path, "float32", shape=(2,))
    base = _spec(tmp_path, "float32")
    text = {"driver": "cast", "dtype": "string", "base": base}
    assert _mode(zarrkit.open(text)) == _mode(ts.open(text).result()) == "r"
    with pytest.raises(ValueError, match="Write access requires unsupported string -> float32"):
        ts.open(text, write=True).result()
    with pytest.raises(SpecError, match="Write access requires the unsupported string -> "
                                        "float32"):
        zarrkit.open(text, write=True)
    assert _mode(zarrkit.open(dict(text, dtype="int8"), read=True)) == "r"
    assert _mode(zarrkit.open(dict(text, dtype="int8"), mode="r")) == "r"
    zarrkit.open(_spec(tmp_path, "complex64", "c"), create=True, shape=[2])
    flag = {"driver": "cast", "dtype": "bool", "base": _spec(tmp_path, "complex64", "c")}
    assert _mode(zarrkit.open(flag)) == _mode(ts.open(flag).result()) == "w"
    with pytest.raises(SpecError, match="Read access requires the unsupported complex64 -> bool"):
        zarrkit.open(flag, read=True)


def test_open_members_pass_to_the_base(tmp_path):
    a, t = _pair(tmp_path, "float32", values=[1.5, 2.5, 3.5, 4.5], shape=(4,))
    base = _spec(tmp_path, "float32")
    cases = [
        {"transform": {"input_shape": [2], "output": [{"input_dimension": 0, "offset": 1}]}},
        {"rank": 1},
        {"context": {"cache_pool": {"total_bytes_limit": 1000}}},
        {"schema": {"dtype": "int32", "fill_value": 0}},
    ]
    for extra in cases:
        json = {"driver": "cast", "dtype": "int32", "base": base, **extra}
        _same(zarrkit.open(json).read().result(), ts.open(json).result().read().result())
    nested = {"driver": "cast", "dtype": "float64", "base": {
        "driver": "cast", "dtype": "int32",
        "base": dict(base, transform={"input_shape": [3], "output": [
            {"input_dimension": 0, "offset": 1}]})},
        "transform": {"input_shape": [2], "output": [{"input_dimension": 0, "offset": 1,
                                                      "stride": -1}]}}
    _same(zarrkit.open(nested).read().result(), ts.open(nested).result().read().result())


@pytest.mark.parametrize("json, keywords, match", [
    ({"driver": "cast", "base": "BASE"}, {}, "spec.dtype: the cast driver needs"),
    ({"driver": "cast", "dtype": "int32"}, {}, "spec.base: expected"),
    ({"driver": "cast", "dtype": "int33", "base": "BASE"}, {}, "int33"),
    ({"driver": "cast", "dtype": "<i4", "base": "BASE"}, {}, "TensorStore does"),
    ({"driver": "cast", "dtype": "int32", "base": "BASE", "open": True}, {}, r"\['open'\]"),
    ({"driver": "cast", "dtype": "int32", "base": "BASE", "kvstore": "memory://"}, {},
     "unknown member"),
    ({"driver": "cast", "dtype": "int32", "base": "BASE"}, {"dtype": "float32"},
     "open: dtype: 'float32' does not match the cast's dtype 'int32'"),
    ({"driver": "cast", "dtype": "int32", "base": "BASE"}, {"schema": {"dtype": "float32"}},
     "open: schema.dtype: 'float32' does not match the cast's dtype 'int32'"),
    ({"driver": "cast", "dtype": "int32", "base": "BASE", "schema": {"dtype": "int8"}}, {},
     "does not match"),
    ({"driver": "cast", "dtype": "int32", "base": "BASE", "schema": {"fill_value": 7}}, {},
     "fill"),
    ({"driver": "cast", "dtype": "int32", "base": "BASE", "rank": 2}, {}, "rank"),
    ({"driver": "cast", "dtype": "string", "base": {"driver": "cast", "dtype": "bool",
                                                    "base": "BASE"}}, {}, "bool and string"),
])
def test_bad_specs_are_refused_like_tensorstore(tmp_path, json, keywords, match):
    zarrkit.open(_spec(tmp_path), create=True, shape=[3], fill_value=1)

    def fill(j):
        return {k: (_spec(tmp_path) if v == "BASE" else fill(v) if isinstance(v, dict) else v)
                for k, v in j.items()}

    json = fill(json)
    with pytest.raises(ValueError):
        ts.open(json, **{k: ts.Schema(v) if k == "schema" else v
                         for k, v in keywords.items()}).result()
    with pytest.raises(SpecError, match=match):
        zarrkit.open(json, **keywords)


def test_bad_cast_arguments(tmp_path):
    a, _ = _pair(tmp_path, "float32", shape=(2,))
    # TensorStore's json type (which zarrkit arrays cannot hold) is refused by name
    with pytest.raises(SpecError, match="'json' is not supported"):
        zarrkit.cast(a, "json")
    with pytest.raises(SpecError, match="'json' is not supported"):
        zarrkit.open({"driver": "cast", "dtype": "json", "base": _spec(tmp_path)})
    with pytest.raises(SpecError, match="expected an array, view or spec"):
        zarrkit.cast(a[...], "int32")  # eager indexing gives numpy data, not a view
    with pytest.raises(SpecError, match="unsupported data type 'foo'"):
        zarrkit.cast(a, "foo")
    with pytest.raises(SpecError, match="expected an array, view or spec"):
        zarrkit.cast(3, "int32")
    assert zarrkit.cast(a, np.float16).dtype == np.float16  # numpy types name themselves
    v1 = zarrkit.open(str(tmp_path / "v1"), mode="w", shape=(2,), dtype="S3", zarr_format=2)
    with pytest.raises(SpecError, match="no TensorStore name"):
        zarrkit.cast(v1, "int32")


def test_non_cast_views_are_unchanged(tmp_path):
    a, t = _pair(tmp_path, "float32", values=np.ones((4, 5)))
    v = a.view[1:3]
    assert v.conversion is None and v.readable and v.writable
    assert v.spec().to_json()["driver"] == "zarr3"
    assert zarrkit.open(_spec(tmp_path), read=True).view.writable is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        zarrkit.cast(a, "int8")[...].read().result()  # no numpy warnings leak out


def test_base_store_object_is_kept(tmp_path):
    store = zarrkit.kvstore.MemoryStore()
    json = {"driver": "cast", "dtype": "int32",
            "base": {"driver": "zarr3", "kvstore": store, "dtype": "float32"}}
    c = zarrkit.open(json, create=True, shape=[3])
    c[...] = [1, 2, 3]
    assert zarrkit.open({"driver": "zarr3", "kvstore": store})[...].tolist() == [1.0, 2.0, 3.0]
    assert json["base"] == {"driver": "zarr3", "kvstore": store, "dtype": "float32"}
    assert zarrkit.open(json).read().result().tolist() == [1, 2, 3]


def test_zarr2_base(tmp_path):
    spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": str(tmp_path) + "/"},
            "dtype": "int16"}
    a = zarrkit.open(spec, create=True, shape=[3, 4])
    a[...] = np.arange(12).reshape(3, 4) - 6
    t = ts.open(spec).result()
    z, w = zarrkit.cast(a, "float32")[zarrkit.d[1][1:3]], ts.cast(t, "float32")[ts.d[1][1:3]]
    _same(z.read().result(), w.read().result())
    assert z.spec().to_json() == w.spec().to_json()
    assert z.schema.to_json() == w.schema.to_json()
    zarrkit.cast(a, "uint8")[0] = np.array([255, 0, 1, 2], dtype=np.uint8)
    assert t.read().result()[0].tolist() == [255, 0, 1, 2]


def test_kvstore_url_spec_normalized_as_tensorstore(tmp_path):
    json = {"driver": "cast", "dtype": "uint16",
            "base": {"driver": "zarr3", "kvstore": f"file://{tmp_path}/x/", "path": "y"}}
    assert zarrkit.Spec(json).to_json() == ts.Spec(json).to_json()


def test_spec_options_and_context(tmp_path):
    a, t = _pair(tmp_path, "float32", shape=(3,))
    z, w = zarrkit.cast(a, "int32"), ts.cast(t, "int32")
    for options in ({"minimal_spec": True}, {"create": True, "delete_existing": True}):
        assert z.spec(**options).to_json() == w.spec(**options).to_json()
    json = {"driver": "cast", "dtype": "int32", "base": _spec(tmp_path),
            "context": {"cache_pool": {"total_bytes_limit": 10**6}}}
    spec = zarrkit.open(json).spec(retain_context=True).to_json()
    assert spec["context"]["cache_pool"] == {"total_bytes_limit": 10**6}  # outside, as TS
    assert "context" not in spec["base"]
    assert zarrkit.open(spec).read().result().tolist() == [0, 0, 0]


def test_nested_cast_spec_accessors():
    json = {"driver": "cast", "dtype": "float32", "base": {
        "driver": "cast", "dtype": "int32", "base": {
            "driver": "zarr3", "kvstore": {"driver": "memory"}, "dtype": "int8",
            "schema": {"fill_value": 3}}}}
    z, t = zarrkit.Spec(json), ts.Spec(json)
    assert z.to_json() == t.to_json()
    assert z.dtype == t.dtype.name == "float32"
    assert z.fill_value.tolist() == t.fill_value.tolist() == 3.0
    assert z.schema.to_json() == t.schema.to_json()
    # a base without a dtype: no fill value can be given in the cast's type yet
    del json["base"]["base"]["dtype"]
    assert zarrkit.Spec(json).fill_value is None
    assert zarrkit.Spec(json).schema.to_json() == {"codec": {"driver": "zarr3"},
                                                  "dtype": "float32"}

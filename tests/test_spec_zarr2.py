"""TensorStore's "zarr" driver (Zarr v2) specs: zarrkit must write the .zarray TensorStore writes
for the same spec and constraints, refuse what TensorStore refuses (naming the member at fault),
check stored arrays as TensorStore does, and describe v2 arrays as TensorStore does. TensorStore
itself is the oracle."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from _spec_helpers import ts_kwargs, zk_kwargs

import zarrkit
from zarrkit import storage

ts = pytest.importorskip("tensorstore")

_names = iter(range(10**9))
ZLIB = {"id": "zlib", "level": 3}


def _ts_kw(kw: dict) -> dict:
    kw = dict(kw)
    layout = kw.pop("chunk_layout", None)
    out = ts_kwargs(kw)
    if layout is not None:  # JSON form: the Python keywords put codec_chunk_* on read_chunk
        out["chunk_layout"] = ts.ChunkLayout(json=layout)
    return out


def _zk_kw(kw: dict) -> dict:
    kw = dict(kw)
    layout = kw.pop("chunk_layout", None)
    out = zk_kwargs(kw)
    if layout is not None:
        out["chunk_layout"] = zarrkit.ChunkLayout.from_json(layout)
    return out


def _spec(kvstore: dict, metadata: dict | None, schema: dict | None) -> dict:
    spec = {"driver": "zarr", "kvstore": kvstore}
    if metadata is not None:
        spec["metadata"] = metadata
    if schema is not None:
        spec["schema"] = schema
    return spec


def _nonfinite_as_json(value):
    """NaN and infinities (floats in both libraries' schema JSON) as strings, so NaN compares
    equal to NaN."""
    if isinstance(value, dict):
        return {k: _nonfinite_as_json(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    return value


def ts_create(metadata, kw, schema=None):
    """(.zarray, description) TensorStore writes, or ("error", message)."""
    try:
        t = ts.open(_spec({"driver": "memory"}, metadata, schema), create=True,
                    **_ts_kw(kw)).result()
    except ValueError as exc:
        return "error", str(exc).split("[tensorstore_spec")[0]
    doc = json.loads(t.kvstore.read(".zarray").result().value)
    schema = _nonfinite_as_json(t.schema.to_json())
    schema["domain"].pop("labels", None)  # compared as the domain's labels
    return doc, {"schema": schema, "labels": list(t.domain.labels)}


def zk_create(metadata, kw, schema=None):
    """(.zarray, description) zarrkit writes, or ("error", message)."""
    store = {"driver": "memory", "path": f"zarr2-spec-{next(_names)}/"}
    try:
        a = zarrkit.open(_spec(store, metadata, schema), create=True, **_zk_kw(kw))
    except zarrkit.SpecError as exc:
        return "error", str(exc)
    base = a.base if isinstance(a, zarrkit.View) else a
    doc = json.loads(bytes(base.store.get(storage.join(base.path, ".zarray"))))
    return doc, {"schema": _nonfinite_as_json(base.schema.to_json()),
                 "labels": list(a.domain.labels)}


def same_outcome(expected, actual) -> bool:
    if expected[0] == "error":
        return actual[0] == "error"
    return expected == actual


BLOSC_ZSTD = {"id": "blosc", "cname": "zstd"}
CASES = [
    # (metadata, keywords, schema member)
    ({}, {}, None),
    ({}, {"dtype": "uint8"}, None),
    ({}, {"dtype": "bool", "fill_value": 1}, None),
    ({}, {"dtype": "int64", "fill_value": -3}, None),
    ({}, {"dtype": "uint64", "fill_value": 2**64 - 1}, None),
    ({}, {"dtype": "complex64", "fill_value": 1 + 2j}, None),
    ({}, {"dtype": "float16", "fill_value": 0.5}, None),
    ({}, {"dtype": "bfloat16", "fill_value": 2.0}, None),
    ({}, {"dtype": "int4"}, None),
    ({}, {"fill_value": math.nan}, None),
    ({}, {"fill_value": -math.inf}, None),
    ({}, {"dtype": "string"}, None),
    ({}, {"dtype": None}, None),
    ({}, {"shape": None}, None),
    ({}, {"shape": [1000, 2000, 3000]}, None),
    ({}, {"shape": []}, None),
    ({}, {"shape": [0, 5]}, None),
    ({}, {"shape": [10, 20], "rank": 3}, None),
    ({}, {"shape": None, "domain": {"labels": ["x", "y"], "shape": [10, 20]}}, None),
    ({}, {"shape": None, "domain": {"inclusive_min": [1, 0], "shape": [10, 20]}}, None),
    ({}, {"shape": None, "domain": {"labels": ["x", "y"]}}, None),
    ({}, {"dimension_units": ["4nm", None]}, None),
    ({}, {"dimension_units": [None, None]}, None),
    ({}, {"chunk_layout": {"inner_order": [1, 0]}}, None),
    ({}, {"chunk_layout": {"inner_order_soft_constraint": [1, 0]}}, None),
    ({}, {"shape": [4, 5, 6], "chunk_layout": {"inner_order": [1, 0, 2]}}, None),
    ({"order": "F"}, {"chunk_layout": {"inner_order": [0, 1]}}, None),
    ({"order": "C"}, {"chunk_layout": {"inner_order_soft_constraint": [1, 0]}}, None),
    ({}, {"chunk_layout": {"read_chunk": {"shape": [5, 5]}}}, None),
    ({}, {"chunk_layout": {"write_chunk": {"shape": [5, -1]}}}, None),
    ({}, {"chunk_layout": {"read_chunk": {"shape": [5, 5]}, "write_chunk": {"shape": [10, 10]}}},
     None),
    ({}, {"chunk_layout": {"read_chunk": {"shape": [5, None]}, "write_chunk": {
        "shape": [None, 7]}}}, None),
    ({}, {"chunk_layout": {"read_chunk": {"shape_soft_constraint": [5, 6]}, "write_chunk": {
        "shape_soft_constraint": [7, 8]}}}, None),
    ({}, {"shape": [100, 200], "chunk_layout": {"read_chunk": {"elements_soft_constraint": 100},
                                                "write_chunk": {"elements": 200}}}, None),
    ({}, {"shape": [100, 200], "chunk_layout": {"read_chunk": {"aspect_ratio": [1, 2]},
                                                "write_chunk": {"elements": 200}}}, None),
    ({}, {"chunk_layout": {"read_chunk": {"elements": 50}, "write_chunk": {"elements": 100}}},
     None),
    ({}, {"chunk_layout": {"grid_origin": [1, 0]}}, None),
    ({}, {"chunk_layout": {"grid_origin_soft_constraint": [5, 0]}}, None),
    ({}, {"chunk_layout": {"codec_chunk": {"shape": [5, 5]}}}, None),
    ({}, {"chunk_layout": {"codec_chunk": {"elements": 5, "aspect_ratio": [1, 2]}}}, None),
    ({"chunks": [3, 4]}, {}, None),
    ({"chunks": [30, 40]}, {}, None),
    ({"chunks": [3, 4]}, {"chunk_layout": {"read_chunk": {"shape": [3, 5]}}}, None),
    ({"chunks": [3, 4]}, {"chunk_layout": {"write_chunk": {"shape_soft_constraint": [3, 5]}}},
     None),
    ({"chunks": [3, 4, 5]}, {}, None),
    ({"chunks": [0, 4]}, {}, None),
    ({}, {"codec": {"driver": "zarr", "compressor": None}}, None),
    ({}, {"codec": {"driver": "zarr", "compressor": {"id": "zlib"}}}, None),
    ({}, {"codec": {"driver": "zarr", "compressor": BLOSC_ZSTD}}, None),
    ({}, {"codec": {"driver": "zarr", "filters": [{"id": "delta", "dtype": "<f4"}]}}, None),
    ({}, {"codec": {"driver": "zarr3"}}, None),
    ({"compressor": None}, {"codec": {"driver": "zarr", "compressor": {"id": "zlib"}}}, None),
    ({"compressor": {"id": "zlib", "level": 1}}, {"codec": {"driver": "zarr", "compressor": {
        "id": "zlib"}}}, None),
    ({"compressor": BLOSC_ZSTD}, {"codec": {"driver": "zarr", "compressor": {
        "id": "blosc", "clevel": 4}}}, None),
    ({"compressor": {"id": "gzip"}}, {}, None),
    ({"compressor": {"id": "zstd", "level": -3}}, {}, None),
    ({"compressor": {"id": "zstd", "level": 23}}, {}, None),
    ({"compressor": {"id": "bz2", "level": 0}}, {}, None),
    ({"compressor": {"id": "blosc", "shuffle": 2, "blocksize": 16}}, {}, None),
    ({"compressor": {"id": "blosc", "typesize": 4}}, {}, None),
    ({"compressor": {"id": "blosc", "cname": "foo"}}, {}, None),
    ({"compressor": {"id": "lz4"}}, {}, None),
    ({"compressor": "zlib"}, {}, None),
    ({"filters": []}, {}, None),
    ({"filters": [{"id": "delta", "dtype": "<f4"}]}, {}, None),
    ({"dimension_separator": "/"}, {}, None),
    ({"dimension_separator": "_"}, {}, None),
    ({"order": "F"}, {}, None),
    ({"order": "X"}, {}, None),
    ({"zarr_format": 3}, {}, None),
    ({"foo": 1}, {}, None),
    ({"shape": [10, 20], "dtype": ">f4"}, {"dtype": None, "shape": None}, None),
    ({"dtype": ">f4"}, {"dtype": "float32"}, None),
    ({"dtype": "<i2"}, {"dtype": "float64"}, None),
    ({"dtype": "<i4", "fill_value": 3}, {"dtype": None, "fill_value": 3}, None),
    ({"dtype": "<i4", "fill_value": 3}, {"dtype": None, "fill_value": 4}, None),
    ({"dtype": "<i4", "fill_value": None}, {"dtype": None, "fill_value": 3}, None),
    ({"dtype": "<f8", "fill_value": "NaN"}, {"dtype": None, "fill_value": math.nan}, None),
    ({"dtype": "<f4", "fill_value": "Infinity"}, {"dtype": None}, None),
    ({"fill_value": 3}, {}, None),
    ({"dtype": "float8_e4m3fn", "fill_value": 1.0}, {"dtype": None}, None),
    ({"order": "F"}, {"shape": [64]}, None),
    ({"shape": [10, 20]}, {"shape": [10, 21]}, None),
    ({}, {"dtype": None, "shape": None}, {"dtype": "int16", "domain": {"shape": [6, 7]},
                                          "chunk_layout": {"inner_order": [1, 0]}}),
    ({}, {"dtype": None}, {"dtype": "int16", "codec": {"driver": "zarr", "compressor": ZLIB},
                           "fill_value": 9}),
    ({}, {"codec": {"driver": "zarr", "compressor": None}},
     {"codec": {"driver": "zarr", "compressor": ZLIB}}),
    ({}, {}, {"dimension_units": ["1 s", None]}),
]


def _complete(kw: dict) -> dict:
    """Default dtype float32 and shape [10, 20]; None removes the default."""
    kw = dict(kw)
    for name, default in (("dtype", "float32"), ("shape", [10, 20])):
        if name in kw and kw[name] is None:
            del kw[name]
        elif name == "dtype" or "domain" not in kw:
            kw.setdefault(name, default)
    return kw


@pytest.mark.parametrize("metadata,kw,schema", CASES, ids=[str(i) for i in range(len(CASES))])
def test_same_zarray_as_tensorstore(metadata, kw, schema):
    kw = _complete(kw)
    expected, actual = ts_create(metadata, kw, schema), zk_create(metadata, kw, schema)
    assert same_outcome(expected, actual), (metadata, kw, schema, expected, actual)


ZARRAY_ONLY = [
    ({"dtype": "|S5", "shape": [4]}, {"dtype": None, "shape": None}),
    ({"dtype": [["a", "<i4"]], "fill_value": "AwAAAA=="}, {"dtype": None}),
    ({"dtype": [["a", "<i4"]]}, {"dtype": "int32", "fill_value": 3}),
    ({"dtype": [["a", "<i4"]]}, {"dtype": "int16"}),
    ({"dtype": [["a", "<i4"], ["b", "|u1"]], "fill_value": None}, {"dtype": None}),
]


@pytest.mark.parametrize("metadata,kw", ZARRAY_ONLY, ids=[str(i) for i in range(len(ZARRAY_ONLY))])
def test_records_and_bytes_zarray_as_tensorstore(metadata, kw):
    """TensorStore opens "|S5" as "char" with an extra dimension and a record as one field (a
    one-field record by default); zarrkit opens whole elements and describes them without a
    dtype, so only the .zarray (or the refusal) is compared. TensorStore refuses to open a
    record of several fields without "field"; zarrkit opens it whole."""
    kw = _complete(kw)
    expected, actual = ts_create(metadata, kw)[0], zk_create(metadata, kw)[0]
    several = len(metadata["dtype"]) > 1 and isinstance(metadata["dtype"], list)
    assert expected == ("error" if several else actual)
    assert actual == "error" if kw.get("dtype") == "int16" else actual != "error"


def test_the_table_covers_successes_and_refusals():
    outcomes = [ts_create(m, _complete(k), s)[0] == "error" for m, k, s in CASES]
    assert 30 < outcomes.count(False) and 20 < outcomes.count(True)


# -- random constraint sets -----------------------------------------------------------------

_DTYPES = ["uint8", "int16", "uint32", "float32", "float64", "bool", "complex64", "bfloat16"]
_COMPRESSORS = [None, {"id": "zlib"}, {"id": "gzip", "level": 9}, {"id": "zstd", "level": 5},
                {"id": "bz2"}, {"id": "blosc"}, {"id": "blosc", "cname": "zstd", "shuffle": 1},
                {"id": "blosc", "clevel": 12}, {"id": "zlib", "level": 1}]


def _maybe(rng: random.Random, p: float = 0.3) -> bool:
    return rng.random() < p


def _dims(rng: random.Random, rank: int, high: int = 40) -> list:
    return [rng.choice([None, -1, rng.randint(1, high)]) for _ in range(rank)]


def _random_layout(rng: random.Random, rank: int) -> dict:
    layout: dict = {}
    for grid in ("read_chunk", "write_chunk"):
        members = {}
        if _maybe(rng, 0.2):
            members["shape"] = _dims(rng, rank)
        if _maybe(rng, 0.2):
            members["shape_soft_constraint"] = _dims(rng, rank)
        if _maybe(rng, 0.15):
            members["aspect_ratio"] = [rng.choice([None, 1, 2, 0.5]) for _ in range(rank)]
        if _maybe(rng, 0.15):
            members["elements" + rng.choice(["", "_soft_constraint"])] = rng.randint(1, 3000)
        if members:
            layout[grid] = members
    if _maybe(rng, 0.25):
        order = rng.choice([list(range(rank)), list(reversed(range(rank))),
                            rng.sample(range(rank), rank)])
        layout["inner_order" + rng.choice(["", "_soft_constraint"])] = order
    return layout


def _random_request(rng: random.Random) -> tuple[dict, dict]:
    rank = rng.randint(1, 3)
    shape = [rng.randint(0, rng.choice([8, 300, 3000])) for _ in range(rank)]
    dtype = rng.choice(_DTYPES)
    metadata: dict = {}
    kw: dict = {"shape": shape, "dtype": dtype}
    if _maybe(rng, 0.2):
        metadata["chunks"] = [rng.randint(1, 50) for _ in range(rank)]
    if _maybe(rng, 0.2):
        metadata["order"] = rng.choice("CF")
    if _maybe(rng, 0.25):
        metadata["compressor"] = rng.choice(_COMPRESSORS)
    if _maybe(rng, 0.15):
        metadata["dimension_separator"] = rng.choice("./")
    if _maybe(rng, 0.1):
        metadata["filters"] = rng.choice([None, []])
    if _maybe(rng, 0.2):
        metadata["dtype"] = np.dtype(rng.choice(["<u1", "<i2", ">i2", "<f4", ">f8"])).str
        metadata["dtype"] = metadata["dtype"].replace("<u1", "|u1")
        metadata["fill_value"] = rng.choice([None, 0, 1, "NaN"] if "f" in metadata["dtype"]
                                            else [None, 0, 1])
        if _maybe(rng, 0.5):
            del kw["dtype"]
    if _maybe(rng, 0.2):
        kw["fill_value"] = rng.choice([0, 1, 3])
    if _maybe(rng, 0.5):
        kw["chunk_layout"] = _random_layout(rng, rank)
    if _maybe(rng, 0.2):
        kw["codec"] = {"driver": "zarr", "compressor": rng.choice(_COMPRESSORS)}
    if _maybe(rng, 0.1):
        kw["dimension_units"] = [rng.choice([None, "nm"]) for _ in range(rank)]
    if _maybe(rng, 0.1):
        del kw["shape"]
        kw["domain"] = {"shape": shape, "labels": [f"d{i}" for i in range(rank)]}
    if _maybe(rng, 0.1):
        kw["rank"] = rng.choice([rank, rank + 1])
    return metadata, kw


@pytest.mark.parametrize("seed", range(4))
def test_random_constraints_as_tensorstore(seed):
    rng = random.Random(1000 + seed)
    mismatches = []
    for _ in range(25):
        metadata, kw = _random_request(rng)
        expected, actual = ts_create(metadata, kw), zk_create(metadata, kw)
        if not same_outcome(expected, actual):
            mismatches.append((metadata, kw, expected, actual))
    assert not mismatches, mismatches[:3]


# -- opening: modes and constraints against a stored array -------------------------------------

STORED = {"shape": [10, 20], "chunks": [5, 5], "dtype": "<i2", "compressor": {"id": "zlib",
                                                                             "level": 1},
          "order": "F", "dimension_separator": "/", "fill_value": 3}
# (metadata, keywords, a word the error must contain; None: opens)
OPEN_CASES = [
    ({"shape": [10, 20]}, {}, None),
    ({"shape": [10, 21]}, {}, "metadata.shape"),
    ({"chunks": [5, 6]}, {}, "metadata.chunks"),
    ({"dtype": ">i2"}, {}, "metadata.dtype"),
    ({"compressor": {"id": "zlib"}}, {}, None),
    ({"compressor": {"id": "zlib", "level": 2}}, {}, "metadata.compressor"),
    ({"compressor": None}, {}, "metadata.compressor"),
    ({"order": "C"}, {}, "metadata.order"),
    ({"dimension_separator": "."}, {}, "metadata.dimension_separator"),
    ({"filters": []}, {}, None),
    ({"dtype": "<i2", "fill_value": 3}, {}, None),
    ({"dtype": "<i2", "fill_value": None}, {}, "metadata.fill_value"),
    ({"dtype": "<i2", "fill_value": 4}, {}, "metadata.fill_value"),
    ({"fill_value": 3}, {}, "metadata.fill_value"),
    ({"zarr_format": 2}, {}, None),
    ({}, {"dtype": "int32"}, "dtype"),
    ({}, {"rank": 3}, "rank"),
    ({}, {"shape": [10, 21]}, "domain"),
    ({}, {"domain": {"labels": ["x", "y"]}}, None),
    ({}, {"domain": {"inclusive_min": [1, 0], "shape": [10, 20]}}, "domain"),
    ({}, {"fill_value": 3}, None),
    ({}, {"fill_value": 4}, "fill_value"),
    ({}, {"dimension_units": ["4nm", None]}, "dimension_units"),
    ({}, {"dimension_units": [None, None]}, None),
    ({}, {"chunk_layout": {"inner_order": [1, 0]}}, None),
    ({}, {"chunk_layout": {"inner_order": [0, 1]}}, "inner_order"),
    ({}, {"chunk_layout": {"inner_order_soft_constraint": [0, 1]}}, None),
    ({}, {"chunk_layout": {"write_chunk": {"shape": [5, 6]}}}, "chunk_layout"),
    ({}, {"chunk_layout": {"read_chunk": {"shape": [5, 5]}, "grid_origin": [0, 0]}}, None),
    ({}, {"chunk_layout": {"grid_origin": [1, 0]}}, "chunk_layout"),
    ({}, {"chunk_layout": {"codec_chunk": {"shape": [5, 5]}}}, "codec_chunk"),
    ({}, {"codec": {"driver": "zarr", "compressor": {"id": "zlib"}}}, None),
    ({}, {"codec": {"driver": "zarr", "compressor": ZLIB}}, "codec.compressor"),
    ({}, {"codec": {"driver": "zarr", "filters": [{"id": "delta", "dtype": "<i2"}]}}, None),
    ({}, {"codec": {"driver": "zarr3"}}, "codec.driver"),
]


@pytest.fixture(scope="module")
def stored():
    """The same array stored by TensorStore (its context) and by zarrkit (a memory store)."""
    context = ts.Context()
    ts.open({"driver": "zarr", "kvstore": {"driver": "memory", "path": "s/"},
             "metadata": STORED}, create=True, context=context).result()
    kvstore = {"driver": "memory", "path": "zarr2-open/s/"}
    zk_context = zarrkit.Context()  # a spec's memory store is its context's, as in TS
    zarrkit.open({"driver": "zarr", "kvstore": kvstore, "metadata": STORED}, create=True,
                 context=zk_context)
    yield context, kvstore, zk_context
    zarrkit.kvstore.MemoryStore.discard("zarr2-open")


@pytest.mark.parametrize("metadata,kw,word", OPEN_CASES,
                         ids=[str(i) for i in range(len(OPEN_CASES))])
def test_open_checks_the_stored_array_as_tensorstore(stored, metadata, kw, word):
    context, kvstore, zk_context = stored
    ts_spec = {"driver": "zarr", "kvstore": {"driver": "memory", "path": "s/"},
               "metadata": metadata}
    try:
        ts.open(ts_spec, context=context, **_ts_kw(kw)).result()
        ts_ok = True
    except ValueError:
        ts_ok = False
    assert ts_ok == (word is None)
    spec = {"driver": "zarr", "kvstore": kvstore, "metadata": metadata}
    if word is None:
        a = zarrkit.open(spec, context=zk_context, **_zk_kw(kw))
        assert a.shape == (10, 20)
    else:
        with pytest.raises(zarrkit.SpecError, match=word):
            zarrkit.open(spec, context=zk_context, **_zk_kw(kw))


def test_domain_labels_label_the_opened_array(stored):
    _, kvstore, zk_context = stored
    v = zarrkit.open({"driver": "zarr", "kvstore": kvstore}, context=zk_context,
                     domain=zarrkit.IndexDomain.make(labels=["x", "y"]))
    assert v.domain.labels == ("x", "y") and v.shape == (10, 20)
    assert v.spec().to_json()["transform"]["input_labels"] == ["x", "y"]


def test_modes(tmp_path):
    spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": str(tmp_path / "a")}}
    with pytest.raises(zarrkit.NodeNotFoundError):
        zarrkit.open(spec)
    a = zarrkit.open(spec, create=True, dtype="int16", shape=[4])
    a[...] = [1, 2, 3, 4]
    with pytest.raises(zarrkit.NodeExistsError):
        zarrkit.open(spec, create=True, dtype="int16", shape=[4])
    assert zarrkit.open(spec, create=True, open=True, dtype="int16")[...].tolist() == [1, 2, 3, 4]
    b = zarrkit.open(spec, create=True, delete_existing=True, dtype="uint8", shape=[3])
    assert b.dtype == np.uint8 and b[...].tolist() == [0, 0, 0]
    with pytest.raises(zarrkit.SpecError, match="delete_existing"):
        zarrkit.open(spec, delete_existing=True, dtype="uint8", shape=[3])
    with pytest.raises(zarrkit.SpecError, match="field"):
        zarrkit.open({**spec, "field": "a"})
    with pytest.raises(zarrkit.SpecError, match="frobnicate"):
        zarrkit.open({**spec, "frobnicate": 1})


def test_assume_metadata_reads_and_writes_no_zarray(tmp_path):
    spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": str(tmp_path)}}
    a = zarrkit.open(spec, assume_metadata=True, dtype="int16", shape=[6],
                     chunk_layout=zarrkit.ChunkLayout(chunk_shape=[3]))
    assert a.chunks == (3,) and not (tmp_path / ".zarray").exists()
    a[...] = np.arange(6)
    t = ts.open({**spec, "metadata": {"chunks": [3]}}, assume_metadata=True, dtype="int16",
                shape=[6]).result()
    assert t.read().result().tolist() == list(range(6))
    zarrkit.open(spec, create=True, dtype="int16", shape=[9])
    b = zarrkit.open(spec, assume_cached_metadata=True, dtype="int16", shape=[6])
    assert b.shape == (6,)


# -- descriptions -----------------------------------------------------------------------------


def test_schema_layout_codec_and_spec_as_tensorstore(tmp_path):
    metadata = {"compressor": ZLIB, "order": "F", "chunks": [3, 4], "dimension_separator": "/",
                "fill_value": 5, "dtype": "<i2"}
    kvstore = {"driver": "file", "path": str(tmp_path)}
    t = ts.open({"driver": "zarr", "kvstore": kvstore, "metadata": metadata}, create=True,
                shape=[10, 20]).result()
    a = zarrkit.open({"driver": "zarr", "kvstore": kvstore})
    assert a.schema.to_json() == t.schema.to_json()
    assert a.chunk_layout.to_json() == t.chunk_layout.to_json()
    assert a.codec.to_json() == t.codec.to_json()
    expected = t.spec(minimal_spec=True).to_json()
    actual = a.spec(minimal_spec=True).to_json()
    assert actual["transform"] == expected["transform"] and actual["dtype"] == expected["dtype"]
    assert a.spec().to_json()["metadata"] == t.spec().to_json()["metadata"]
    flag = {"store_data_equal_to_fill_value": True}
    t = ts.open({"driver": "zarr", "kvstore": kvstore, **flag}).result()
    a = zarrkit.open({"driver": "zarr", "kvstore": kvstore, **flag})
    assert t.spec().to_json()["store_data_equal_to_fill_value"] is True
    assert a.spec().to_json()["store_data_equal_to_fill_value"] is True


def test_codec_spec_fills_compressor_defaults_as_tensorstore():
    for json_ in ({"driver": "zarr"}, {"driver": "zarr", "compressor": {"id": "zlib"}},
                  {"driver": "zarr", "compressor": {"id": "blosc", "cname": "zstd"}},
                  {"driver": "zarr", "compressor": None}):
        assert zarrkit.CodecSpec(json_).to_json() == ts.CodecSpec(json_).to_json()


# -- data both ways ---------------------------------------------------------------------------

INTEROP = [
    ({}, {"dtype": "int16", "shape": [7, 5], "chunk_layout": {"chunk": {"shape": [4, 3]}}}),
    ({"order": "F", "dimension_separator": "/", "compressor": None},
     {"dtype": "float64", "shape": [7, 5], "fill_value": -1.5}),
    ({"compressor": {"id": "zstd"}}, {"dtype": "uint8", "shape": [9],
                                      "chunk_layout": {"inner_order": [0],
                                                       "write_chunk": {"elements": 4}}}),
    ({"dtype": ">u4", "chunks": [2, 2, 2], "compressor": {"id": "blosc", "shuffle": 2}},
     {"shape": [3, 4, 5]}),
]


@pytest.mark.parametrize("metadata,kw", INTEROP, ids=[str(i) for i in range(len(INTEROP))])
def test_each_opens_what_the_other_created(tmp_path, metadata, kw):
    ts_store = {"driver": "file", "path": str(tmp_path / "ts")}
    zk_store = {"driver": "file", "path": str(tmp_path / "zk")}
    a = zarrkit.open({"driver": "zarr", "kvstore": zk_store, "metadata": metadata}, create=True,
                     **_zk_kw(kw))
    t = ts.open({"driver": "zarr", "kvstore": ts_store, "metadata": metadata}, create=True,
                **_ts_kw(kw)).result()
    data = (np.arange(math.prod(a.shape)) % 200).reshape(a.shape).astype(a.dtype)
    a[...] = data
    t[...] = data
    assert (tmp_path / "zk" / ".zarray").read_text() and json.loads(
        (tmp_path / "zk" / ".zarray").read_text()) == json.loads(
        (tmp_path / "ts" / ".zarray").read_text())
    from_ts = ts.open({"driver": "zarr", "kvstore": zk_store}).result().read().result()
    from_zk = zarrkit.open({"driver": "zarr", "kvstore": ts_store})[...]
    np.testing.assert_array_equal(from_ts, data)
    np.testing.assert_array_equal(from_zk, data)

"""Zarr v2 interoperability with zarr-python 3 (`zarr_format=2`) as the oracle, both directions:
every numcodecs compressor and filter by its id, every dtype family, fill values, C and F order,
both dimension separators.

Notes on the oracle (found while writing these tests):
- zarr-python 3.1 drops subarray shapes from structured dtypes when it writes `.zarray`
  (`["b", ">f8", [2]]` becomes `["b", "|V16"]`), and then cannot read the spec's form; those are
  tested against TensorStore (test_v2_interop_tensorstore.py) and NumPy. It cannot read nested
  structured dtypes at all ("No Zarr data type found"); those are tested in test_v2_hierarchy.py
  against bytes laid out by NumPy.
- With order "F", a filter that returns a C-ordered copy (numcodecs' bitround does `a.copy()`)
  makes zarr-python 3.1 store C-ordered bytes under an F-order `.zarray`: it scrambles its own
  arrays. zarrkit reads such chunks exactly as zarr-python does (the same bytes, the same
  reshape) and writes F-ordered bytes, as the spec says; so lossy filters are checked against
  numcodecs applied to the whole array.
- zarr-python 3.1 has no data type for object arrays other than vlen-utf8 strings (and cannot
  create vlen-bytes ones), so `vlen-bytes`, `vlen-array`, `json2` and `pickle` chunks are
  written by numcodecs directly, exactly as zarr-python 2 wrote them.
"""

from __future__ import annotations

import json
import warnings

import numcodecs
import numcodecs.pickles
import numpy as np
import pytest
from _v2_helpers import assert_same, sample

import zarrkit
from zarrkit.metadata.v2_dtype import DataTypeV2

zarr = pytest.importorskip("zarr")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SHAPE, CHUNKS = (7, 5), (4, 3)  # edge chunks in both dimensions

COMPRESSORS = {
    "none": None,
    "blosc-lz4-shuffle": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0},
    "blosc-zstd-bitshuffle": {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2,
                              "blocksize": 0},
    "blosc-blosclz-noshuffle": {"id": "blosc", "cname": "blosclz", "clevel": 9, "shuffle": 0,
                                "blocksize": 0},
    "blosc-lz4hc-auto": {"id": "blosc", "cname": "lz4hc", "clevel": 1, "shuffle": -1,
                         "blocksize": 0},
    "blosc-zlib": {"id": "blosc", "cname": "zlib", "clevel": 5, "shuffle": 1, "blocksize": 256},
    "zstd": {"id": "zstd", "level": 3, "checksum": False},
    "zstd-checksum": {"id": "zstd", "level": 1, "checksum": True},
    "zlib": {"id": "zlib", "level": 1},
    "gzip": {"id": "gzip", "level": 5},
    "bz2": {"id": "bz2", "level": 9},
    "lzma": {"id": "lzma", "preset": 1, "format": 1, "check": -1, "filters": None},
    "lz4": {"id": "lz4", "acceleration": 1},
}

# (dtype, filters, compressor, lossless)
FILTERS = {
    "delta": ("<i4", [{"id": "delta", "dtype": "<i4", "astype": "<i4"}], "zlib", True),
    "delta-astype": ("<i8", [{"id": "delta", "dtype": "<i8", "astype": "<i2"}], None, True),
    "fixedscaleoffset": ("<f8", [{"id": "fixedscaleoffset", "offset": 0, "scale": 4,
                                  "dtype": "<f8", "astype": "<i2"}], "zstd", False),
    "quantize": ("<f8", [{"id": "quantize", "digits": 2, "dtype": "<f8", "astype": "<f8"}],
                 "bz2", False),
    "bitround": ("<f4", [{"id": "bitround", "keepbits": 5}], "lzma", False),
    "shuffle": ("<i4", [{"id": "shuffle", "elementsize": 4}], "lz4", True),
    "astype": ("<f8", [{"id": "astype", "encode_dtype": "<f4", "decode_dtype": "<f8"}], "gzip",
               False),
    "packbits": ("|b1", [{"id": "packbits"}], None, True),
    "categorize": ("<U2", [{"id": "categorize", "labels": ["", "a", "aa", "b", "bb", "€", "€€"],
                            "dtype": "<U2", "astype": "|u1"}], None, True),
    "checksums": (">i4", [{"id": "crc32"}, {"id": "adler32"}, {"id": "fletcher32"},
                          {"id": "jenkins_lookup3", "initval": 0, "prefix": None},
                          {"id": "crc32c"}], None, True),
    "base64": ("<u2", [{"id": "base64"}], "zstd-checksum", True),
    "zlib-as-filter": ("<f8", [{"id": "zlib", "level": 9}], "blosc-lz4-shuffle", True),
    "vlen-utf8": ("|O", [{"id": "vlen-utf8"}], "blosc-zstd-bitshuffle", True),
}

DTYPES = ["|b1", "|i1", "<i2", ">i2", "<i4", ">i8", "|u1", ">u2", "<u4", "<u8", "<f2", ">f4",
          "<f8", ">f8", "<c8", ">c16", "<M8[ns]", ">M8[s]", "<m8[ms]", "|S6", "<U3", ">U2",
          "|V5", [["r", "|u1"], ["g", ">i2"], ["b", "<f4"]]]


def _numcodec(config):
    return None if config is None else numcodecs.get_codec(dict(config))


def zarr_write(path, data, dtype, *, filters=None, compressor=None, order="C",
               separator=".", fill_value=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        array = zarr.create_array(
            store=str(path), shape=data.shape, chunks=CHUNKS, dtype=dtype, zarr_format=2,
            filters=[_numcodec(f) for f in filters] if filters else None,
            compressors=_numcodec(compressor), order=order, fill_value=fill_value,
            chunk_key_encoding={"name": "v2", "separator": separator})
        array[...] = data
    return json.loads((path / ".zarray").read_text())


def zarr_read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_array(str(path), mode="r", zarr_format=2)[...]


def _data(dtype):
    data_type = DataTypeV2.from_json(dtype)
    return sample(data_type.dtype, SHAPE)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("name", sorted(COMPRESSORS))
def test_compressors_zarr_to_zarrkit(tmp_path, name, order):
    data = sample(np.dtype("<f8"), SHAPE)
    zarr_write(tmp_path, data, "<f8", compressor=COMPRESSORS[name], order=order)
    ours = zarrkit.open(tmp_path, mode="r")
    assert ours.zarr_format == 2 and ours.metadata["compressor"] == \
        json.loads((tmp_path / ".zarray").read_text())["compressor"]
    assert_same(ours[...], data)
    assert_same(ours[2:6, 1:4], data[2:6, 1:4])


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("name", sorted(COMPRESSORS))
def test_compressors_zarrkit_to_zarr(tmp_path, name, order):
    data = sample(np.dtype(">i4"), SHAPE)
    a = zarrkit.create(tmp_path, shape=SHAPE, chunks=CHUNKS, dtype=">i4", zarr_format=2,
                       compressor=COMPRESSORS[name], order=order, overwrite=True)
    a[...] = data
    assert_same(zarr_read(tmp_path), data)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("name", sorted(FILTERS))
def test_filters_both_directions(tmp_path, name, order):
    dtype, filters, compressor, lossless = FILTERS[name]
    data = _data(dtype)
    if name == "fixedscaleoffset":  # to integers: NaN and infinity have no value to become
        data = np.nan_to_num(data, nan=1.25, neginf=-3.0)
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    zarr_write(theirs, data, str if dtype == "|O" else dtype, filters=filters,
               compressor=COMPRESSORS.get(compressor), order=order,
               fill_value="" if dtype in ("|O", "<U2") else 0)
    read_back = zarr_read(theirs)
    assert_same(zarrkit.open(theirs, mode="r")[...], read_back)
    a = zarrkit.create(ours, shape=SHAPE, chunks=CHUNKS, dtype=str if dtype == "|O" else dtype,
                       zarr_format=2, filters=filters, compressor=COMPRESSORS.get(compressor),
                       order=order)
    a[...] = data
    assert_same(zarr_read(ours), a[...])
    if lossless:
        assert_same(a[...], data)
    else:  # the lossy filters act element by element: compare with numcodecs on the whole
        expected = data.copy()
        for f in filters:
            codec = numcodecs.get_codec(dict(f))
            expected = np.asarray(codec.decode(codec.encode(expected))).reshape(SHAPE)
        assert_same(a[...], expected.astype(data.dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtypes_both_directions(tmp_path, dtype):
    data = _data(dtype)
    numpy_dtype = DataTypeV2.from_json(dtype).stored
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    zarr_write(theirs, data, numpy_dtype, compressor=COMPRESSORS["zstd"], fill_value=None)
    theirs_doc = json.loads((theirs / ".zarray").read_text())
    ours_theirs = zarrkit.open(theirs, mode="r")
    assert ours_theirs.metadata["dtype"] == theirs_doc["dtype"]
    assert_same(ours_theirs[...], data)
    a = zarrkit.create(ours, shape=SHAPE, chunks=CHUNKS, dtype=numpy_dtype, zarr_format=2)
    a[...] = data
    assert json.loads((ours / ".zarray").read_text())["dtype"] == theirs_doc["dtype"]
    assert_same(zarr_read(ours), data)


FILLS = [
    ("<f8", "NaN"), ("<f4", "Infinity"), (">f8", "-Infinity"), ("<f8", -0.0), ("<i4", -7),
    (">u8", 2**64 - 1), ("|b1", True), ("<c16", [1.5, "NaN"]), ("<M8[ns]", -2**63),
    ("<m8[s]", 42), ("|S4", "YWJj"), ("<U3", "xy"), ("|V2", "AQI="), ("<f8", None),
    ("<i2", None), ([["a", "<i4"], ["b", ">f4"]], "AQAAAD/AAAA="),
]


@pytest.mark.parametrize("dtype, fill", FILLS, ids=str)
def test_fill_values_both_directions(tmp_path, dtype, fill):
    """Missing chunks read as the fill value, whoever wrote the metadata."""
    numpy_dtype = DataTypeV2.from_json(dtype).stored
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    (theirs).mkdir()
    doc = {"zarr_format": 2, "shape": list(SHAPE), "chunks": list(CHUNKS), "dtype": dtype,
           "compressor": None, "fill_value": fill, "order": "C", "filters": None}
    (theirs / ".zarray").write_text(json.dumps(doc))
    expected = zarr_read(theirs)
    ours_read = zarrkit.open(theirs, mode="r")
    assert_same(ours_read[...], expected)
    assert ours_read.metadata["fill_value"] == fill
    a = zarrkit.create(ours, shape=SHAPE, chunks=CHUNKS, dtype=numpy_dtype, zarr_format=2,
                       fill_value=ours_read.fill_value if fill is not None else None)
    written = json.loads((ours / ".zarray").read_text())
    if fill is not None:
        assert zarrkit.open(ours, mode="r").fill_value is not None
        assert_same(zarr_read(ours), expected)
        a[0, 0] = sample(a.dtype, (1,))[0]  # a stored chunk, the rest still fill
        assert_same(zarr_read(ours)[4:, 3:], expected[4:, 3:])
    assert json.dumps(written, allow_nan=False)


@pytest.mark.parametrize("separator", [".", "/"])
def test_separators_both_directions(tmp_path, separator):
    data = sample(np.dtype("<i2"), SHAPE)
    zarr_write(tmp_path / "z", data, "<i2", separator=separator)
    assert_same(zarrkit.open(tmp_path / "z", mode="r")[...], data)
    a = zarrkit.create(tmp_path / "k", shape=SHAPE, chunks=CHUNKS, dtype="<i2", zarr_format=2,
                       dimension_separator=separator)
    a[...] = data
    assert (tmp_path / "k" / ("1/1" if separator == "/" else "1.1")).exists()
    assert_same(zarr_read(tmp_path / "k"), data)


def test_zero_dim_and_empty_arrays(tmp_path):
    a = zarrkit.create(tmp_path / "s", shape=(), dtype="<f4", zarr_format=2)
    a[()] = 3.5
    assert zarr_read(tmp_path / "s")[()] == 3.5
    b = zarrkit.create(tmp_path / "e", shape=(0, 3), chunks=(2, 2), dtype="<i4", zarr_format=2)
    assert zarr_read(tmp_path / "e").shape == (0, 3) and b[...].shape == (0, 3)


# -- object codecs zarr-python 3 cannot write: numcodecs as the oracle (zarr-python 2's bytes) --

OBJECT_CODECS = {
    "vlen-bytes": ([b"", b"ab", b"\x00\xff"], {"id": "vlen-bytes"}),
    "vlen-array": ([np.arange(3, dtype="<i4"), np.arange(0, dtype="<i4"), np.arange(5, dtype="<i4")],
                   {"id": "vlen-array", "dtype": "<i4"}),
    "json2": (["x", 1, [1, 2], {"k": None}], {"id": "json2", "encoding": "utf-8",
                                              "allow_nan": True, "check_circular": True,
                                              "ensure_ascii": True, "indent": None,
                                              "separators": [",", ":"], "skipkeys": False,
                                              "sort_keys": True}),
    "pickle": ([("t", 1), {"a"}, 3.5], {"id": "pickle", "protocol": 5}),
}


@pytest.mark.parametrize("name", sorted(OBJECT_CODECS))
def test_other_object_codecs(tmp_path, name, monkeypatch):
    monkeypatch.setattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE", True)
    values, codec = OBJECT_CODECS[name]
    items = np.empty(len(values), dtype=object)
    items[:] = values
    (tmp_path / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [len(values)], "chunks": [len(values)], "dtype": "|O",
        "compressor": {"id": "zlib", "level": 1}, "fill_value": None, "order": "C",
        "filters": [codec]}))
    encoded = numcodecs.Zlib(1).encode(numcodecs.get_codec(dict(codec)).encode(items))
    (tmp_path / "0").write_bytes(encoded)
    got = zarrkit.open(tmp_path, mode="r")[...]
    for g, v in zip(got, values, strict=True):
        assert (np.array_equal(g, v) if isinstance(v, np.ndarray) else g == v)
    a = zarrkit.open(tmp_path, mode="r+")
    a[...] = items  # and our encoding decodes with numcodecs
    decoded = numcodecs.get_codec(dict(codec)).decode(
        numcodecs.Zlib(1).decode((tmp_path / "0").read_bytes()))
    assert len(decoded) == len(values)


def test_pickle_is_refused_by_default(tmp_path):
    (tmp_path / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [1], "chunks": [1], "dtype": "|O", "compressor": None,
        "fill_value": None, "order": "C", "filters": [{"id": "pickle"}]}))
    with pytest.raises(zarrkit.CodecError, match="pickle"):
        zarrkit.open(tmp_path, mode="r")


# -- property: random arrays and writes, against a NumPy model and zarr-python ------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

PROPERTY_DTYPES = ["<i2", ">u4", "<f8", ">f4", "|b1", ">c8", "<M8[ms]", "|S3", "<U2"]


@st.composite
def v2_arrays(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(0, 6)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, max(s, 1) + 1)) for s in shape)
    kwargs = {"chunks": chunks, "dtype": draw(st.sampled_from(PROPERTY_DTYPES)),
              "order": draw(st.sampled_from("CF")),
              "dimension_separator": draw(st.sampled_from("./")),
              "compressor": COMPRESSORS[draw(st.sampled_from(["none", "zstd", "zlib",
                                                              "blosc-lz4-shuffle"]))]}
    writes = draw(st.lists(st.tuples(*[st.tuples(st.integers(0, max(s, 1)),
                                                 st.integers(0, max(s, 1)))
                                       for s in shape]), max_size=3))
    return shape, kwargs, writes


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=v2_arrays())
def test_random_writes_match_numpy_and_zarr_python(tmp_path_factory, case):
    shape, kwargs, writes = case
    path = tmp_path_factory.mktemp("prop")
    a = zarrkit.create(path, shape=shape, zarr_format=2, overwrite=True, **kwargs)
    model = np.full(shape, a.fill_value, a.dtype)
    for i, bounds in enumerate(writes):
        region = tuple(slice(min(lo, hi), max(lo, hi)) for lo, hi in bounds)
        values = sample(a.dtype, model[region].shape, seed=i)
        a[region] = values
        model[region] = values
    assert_same(a[...], model)
    assert_same(zarr_read(path), model)


# -- found in review -----------------------------------------------------------------------------


def test_vlen_bytes_fill_value_both_directions(tmp_path):
    """zarr-python 3 writes a vlen-bytes fill value in base64; missing chunks read as it."""
    from zarr.core.dtype import VariableLengthBytes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = zarr.create_array(str(tmp_path / "theirs"), shape=(4,), chunks=(2,),
                                   dtype=VariableLengthBytes(), fill_value=b"x", zarr_format=2)
        theirs[:2] = np.array([b"a", b""], dtype=object)
    assert zarrkit.open(tmp_path / "theirs", mode="r")[...].tolist() == [b"a", b"", b"x", b"x"]
    ours = zarrkit.create(tmp_path / "ours", shape=(4,), chunks=(2,), dtype=bytes,
                          fill_value=b"x", zarr_format=2)
    ours[:2] = np.array([b"a", b""], dtype=object)
    assert zarr_read(tmp_path / "ours").tolist() == [b"a", b"", b"x", b"x"]


@pytest.mark.parametrize("dtype", ["<M8[s]", "<m8[ms]", "<f8", "|S2"])
def test_null_fill_value_reads_like_zarr_python(tmp_path, dtype):
    """A .zarray with fill_value null (what zarr-python writes for fill_value=None): missing
    chunks of datetime/timedelta arrays are NaT there, not the epoch / zero."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(str(tmp_path), shape=(3,), chunks=(2,), dtype=dtype, fill_value=None,
                          zarr_format=2)
    assert json.loads((tmp_path / ".zarray").read_text())["fill_value"] is None
    assert_same(zarrkit.open(tmp_path, mode="r")[...], zarr_read(tmp_path))

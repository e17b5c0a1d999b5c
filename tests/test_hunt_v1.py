"""Zarr v1 (read only) checked rule by rule against the v1 spec: every store here is written by
hand as the spec describes it (a `meta` JSON object, an `attrs` JSON object, one value per chunk
keyed by its grid indices joined with ".", holding the chunk's raw bytes in C or F order passed
through the primary compressor with nothing added), and the values zarr 1.x wrote into it."""

from __future__ import annotations

import json
import lzma
import zipfile

import numpy as np
import pytest
import zarr
from _v1_helpers import compress_v1
from _v2_helpers import assert_same

import zarrkit
from zarrkit.cli import main

META = {"zarr_format": 1, "shape": [4], "chunks": [2], "dtype": "<i4", "compression": "zlib",
        "compression_opts": 1, "fill_value": 0, "order": "C"}


def v1_store(data, chunks, *, dtype=None, compression="zlib", compression_opts=1, fill_value=0,
             order="C", attrs=None, extra=None, overhang=0, skip=()):
    """A v1 store as a dict of keys: each chunk padded past the array's edge with `overhang`
    (whose contents the spec leaves undefined), the chunks in `skip` left uninitialized."""
    meta = {"zarr_format": 1, "shape": list(data.shape), "chunks": list(chunks),
            "dtype": dtype if dtype is not None else data.dtype.str, "compression": compression,
            "compression_opts": compression_opts, "fill_value": fill_value, "order": order,
            **(extra or {})}
    store = {"meta": json.dumps(meta, indent=4, sort_keys=True).encode(),
             "attrs": json.dumps(attrs or {}).encode()}
    grid = [-(-s // c) for s, c in zip(data.shape, chunks, strict=True)]
    for index in np.ndindex(*grid):
        key = ".".join(map(str, index)) or "0"
        if key in skip:
            continue
        region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(index, chunks, strict=True))
        chunk = np.full(chunks, overhang, data.dtype) if data.dtype.names is None \
            else np.zeros(chunks, data.dtype)
        part = data[region]
        chunk[tuple(slice(0, n) for n in part.shape)] = part
        store[key] = compress_v1(compression, compression_opts, chunk.tobytes(order=order))
    return store


def on_disk(path, store):
    path.mkdir(parents=True, exist_ok=True)
    for key, value in store.items():
        (path / key).write_bytes(value)
    return path


def with_meta(**changes):
    return {"meta": json.dumps({**META, **changes}).encode(), "attrs": b"{}"}


# -- the spec's layout --------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["C", "F"])
def test_spec_example_layout_edge_chunks_and_missing_chunks(tmp_path, order):
    """The spec's example (20 x 20 int32, 10 x 10 chunks, zlib level 1, fill 42), with a shape
    that leaves edge chunks overhanging: their outside holds junk that must never be read."""
    data = np.arange(23 * 17, dtype="<i4").reshape(23, 17)
    store = v1_store(data, (10, 10), fill_value=42, order=order, overhang=-7, skip={"2.1"})
    expected = data.copy()
    expected[20:, 10:] = 42
    a = zarrkit.open(on_disk(tmp_path, store), mode="r")
    assert (a.zarr_format, a.shape, a.chunks, a.order) == (1, (23, 17), (10, 10), order)
    assert_same(a[...], expected)
    assert_same(a[19:23, 9:17], expected[19:23, 9:17])
    assert_same(a.oindex[[0, 22], [16, 3]], expected[np.ix_([0, 22], [16, 3])])
    assert int(a.nchunks_initialized) == 5  # the meta and attrs keys are not chunks


@pytest.mark.parametrize("shuffle", [0, 1, 2])
@pytest.mark.parametrize("cname", ["blosclz", "lz4", "lz4hc", "zlib", "zstd"])
def test_blosc_options(cname, shuffle):
    data = (np.arange(2 * 3 * 5, dtype=">f4").reshape(2, 3, 5) / 7)
    store = v1_store(data, (2, 2, 3), order="F", compression="blosc",
                     compression_opts={"cname": cname, "clevel": 3, "shuffle": shuffle})
    assert_same(zarrkit.open(store, mode="r")[...], data)


@pytest.mark.parametrize("compression, written, opts", [
    (None, None, None),  # zarr 1.x registered null as an alias of "none"
    ("none", None, None),
    ("zlib", 1, "1"),  # the spec allows a string for compression_opts
    ("bz2", 9, 9),
    ("blosc", {"cname": "lz4", "clevel": 5, "shuffle": 1}, None),  # zarr 1.x's defaults
])
def test_compression_spellings(compression, written, opts):
    """`written`: the options the chunks were compressed with; `opts`: what `meta` says."""
    data = np.arange(10, dtype="<u2")
    store = v1_store(data, (4,), compression=compression or "none", compression_opts=written)
    meta = json.loads(store["meta"])
    meta.update(compression=compression, compression_opts=opts)
    store["meta"] = json.dumps(meta).encode()
    assert_same(zarrkit.open(store, mode="r")[...], data)


def test_lzma_filters_are_only_used_for_raw_streams():
    """zarr 1.x kept `filters` (its documented "custom filter pipeline") in the options of .xz
    streams too, and decompressed those without them: such a store must read."""
    data = np.arange(20, dtype="<u2").reshape(4, 5)
    chain = [{"id": lzma.FILTER_DELTA, "dist": 2}, {"id": lzma.FILTER_LZMA2, "preset": 1}]
    xz = {"format": lzma.FORMAT_XZ, "check": lzma.CHECK_CRC64, "preset": None, "filters": chain}
    a = zarrkit.open(v1_store(data, (3, 2), compression="lzma", compression_opts=xz), mode="r")
    assert_same(a[...], data)
    raw = {"format": lzma.FORMAT_RAW, "check": 0, "preset": None, "filters": chain}
    store = v1_store(data, (3, 2), compression="lzma", compression_opts=raw)
    assert_same(zarrkit.open(store, mode="r")[...], data)


def test_other_meta_keys_do_not_change_the_interpretation():
    """"Other keys MAY be present ... they MUST NOT alter the interpretation": a v2-looking
    `filters` or `dimension_separator` is not applied."""
    data = np.arange(12, dtype="<i2").reshape(3, 4)
    extra = {"filters": [{"id": "delta", "dtype": "<i2"}], "dimension_separator": "/",
             "compressor": None, "x": 1}
    a = zarrkit.open(v1_store(data, (2, 3), extra=extra), mode="r")
    assert_same(a[...], data)
    assert a.metadata["x"] == 1


# -- data types ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["|b1", "|i1", "<i8", ">u4", "<f2", ">f8", "<c8", ">c16",
                                   "|S12", "<U3", ">U2", "<M8[D]", ">m8[s]"])
def test_simple_types(dtype):
    values = {"b": [True, False, True], "S": [b"hello", b"", b"x"], "U": ["ab", "é", ""],
              "M": ["2020-01-01", "NaT", "1969-12-31"], "m": [1, -2, 3]}
    data = np.array(values.get(np.dtype(dtype).kind, [1, -2, 3] if dtype[1] != "u" else [1, 2, 3]),
                    dtype)
    store = v1_store(data, (2,), fill_value=None)
    assert_same(zarrkit.open(store, mode="r")[...], data)


def test_structured_types_nested_big_endian_and_f_order():
    dtype = np.dtype([("x", [("a", "<i4"), ("b", ">u2")]), ("v", ">f4", (2,)), ("y", "|u1")])
    data = np.zeros((3, 4), dtype)
    data["x"]["a"] = np.arange(12).reshape(3, 4)
    data["x"]["b"] = 7
    data["v"] = np.arange(24).reshape(3, 4, 2) / 2
    data["y"] = 255
    descr = [["x", [["a", "<i4"], ["b", ">u2"]]], ["v", ">f4", [2]], ["y", "|u1"]]
    a = zarrkit.open(v1_store(data, (2, 3), dtype=descr, fill_value=None, order="F",
                              compression="bz2", compression_opts=1), mode="r")
    assert_same(a[...], data)
    assert_same(a["v"], data["v"])


@pytest.mark.parametrize("dtype, message", [
    ("i4", "byte order"),  # "The byte order MUST be specified"
    ("|f8", "byte order"),
    ("|O", "Zarr v1 cannot store objects"),
    ([], "at least one field"),
    ([["a", "<i4"], ["a", "<i4"]], "duplicate field name 'a'"),
])
def test_invalid_types(dtype, message):
    with pytest.raises(zarrkit.DataTypeError, match=message):
        zarrkit.open(with_meta(dtype=dtype), mode="r")


# -- fill values --------------------------------------------------------------------------------


def _missing(dtype, fill_value, descr=None):
    """A 3-element array whose only chunk is missing: it reads as the fill value throughout."""
    meta = {**META, "shape": [3], "chunks": [3], "dtype": descr or dtype,
            "fill_value": fill_value}
    text = json.dumps(meta)  # Python's json spells float("nan") as a bare NaN, as zarr 1.x did
    return zarrkit.open({"meta": text.encode(), "attrs": b"{}"}, mode="r")[...]


@pytest.mark.parametrize("dtype, fill, expected", [
    ("<c16", 0, 0j),  # zarr 1.x's zeros() wrote fill_value 0 whatever the type
    ("<c8", 1.5, 1.5 + 0j),
    ("<c16", float("nan"), complex(np.nan, 0)),
    ("<c16", [1.0, -2.0], 1 - 2j),
    ("|S4", 0, b"0"),  # as NumPy's fill casts 0 (what zarr 1.x filled chunks with)
    ("|S4", "ab", b"ab"),  # text as is, not base64
    ("<U3", 0, "0"),
    ("<U3", "xy", "xy"),
    ("|b1", 0, False),
    ("<f8", float("nan"), np.nan),
    ("<f4", float("-inf"), -np.inf),
    ("<u8", 2**64 - 1, 2**64 - 1),
    ("<M8[s]", "NaT", np.datetime64("NaT")),
])
def test_fill_values(dtype, fill, expected):
    assert_same(_missing(dtype, fill), np.full(3, expected, dtype))


@pytest.mark.parametrize("fill, expected", [(0, (0, 0.0)), (5, (5, 5.0)), (None, (0, 0.0))])
def test_structured_fill_value_from_a_number(fill, expected):
    dtype = np.dtype([("a", "<i4"), ("b", ">f8")])
    assert_same(_missing(dtype, fill, [["a", "<i4"], ["b", ">f8"]]),
                np.array([expected] * 3, dtype))


@pytest.mark.parametrize("dtype, fill, message", [
    ("<i4", 2.5, "expected an integer"),
    ("<u1", 256, "out of range"),
    ("|b1", 2, "true or false"),
    ("<i4", "abc", "expected an integer"),
    ("<c16", "abc", "real, imaginary"),
])
def test_invalid_fill_values(dtype, fill, message):
    with pytest.raises(zarrkit.DataTypeError, match=f"meta: fill_value: .*{message}"):
        _missing(dtype, fill)


@pytest.mark.parametrize("dtype, fill", [("<c16", 0), ("|S4", 0), ("<U3", 0)])
def test_numeric_fill_values_convert_to_v2_and_v3(tmp_path, dtype, fill):
    """The fill value zarr 1.x wrote as a number becomes each format's own spelling, which
    zarr-python reads back as the same value."""
    src = on_disk(tmp_path / "v1", with_meta(shape=[3], chunks=[3], dtype=dtype,
                                             fill_value=fill))
    expected = np.full(3, 0, dtype)
    for fmt in (2, 3):
        copy = zarrkit.convert(src, tmp_path / f"v{fmt}", zarr_format=fmt, progress=False)
        assert_same(copy[...], expected)
        assert_same(zarr.open_array(str(tmp_path / f"v{fmt}"), mode="r")[...], expected)


# -- shapes -------------------------------------------------------------------------------------


def test_zero_dimensional_and_empty_arrays():
    store = v1_store(np.array(5, "<i4"), ())
    assert set(store) == {"meta", "attrs", "0"}
    assert zarrkit.open(store, mode="r")[()] == 5
    empty = zarrkit.open(v1_store(np.zeros((0, 3), "<f8"), (2, 2)), mode="r")
    assert empty.shape == (0, 3) and empty[...].shape == (0, 3)
    with pytest.raises(zarrkit.MetadataError, match="meta: chunks: expected a list of positive"):
        zarrkit.open(with_meta(shape=[0], chunks=[0]), mode="r")


# -- metadata and attribute documents ----------------------------------------------------------


@pytest.mark.parametrize("text, error, message", [
    (b"{", zarrkit.MetadataError, "meta: malformed JSON"),
    (b"[]", zarrkit.MetadataError, "meta: expected a JSON object"),
    (b"\xff\xfe", zarrkit.MetadataError, "meta: not valid UTF-8"),
    (b'{"zarr_format": 2}', zarrkit.MetadataError, "meta: zarr_format: expected 1, got 2"),
    (b'{"zarr_format": 1}', zarrkit.MetadataError, "missing required member.*compression_opts"),
    (json.dumps(META)[:-1].encode() + b', "shape": [40]}', zarrkit.MetadataError,
     "duplicate object member 'shape'"),
])
def test_garbled_meta(text, error, message):
    with pytest.raises(error, match=message):
        zarrkit.open({"meta": text, "attrs": b"{}"}, mode="r")


@pytest.mark.parametrize("name, opts, message", [
    ("snappy", None, "unsupported v1 compressor 'snappy'"),
    ("gzip", 1, "unsupported v1 compressor 'gzip'"),
    ("zlib", True, "compression_opts for zlib must be an integer"),
    ("bz2", "nine", "compression_opts for bz2 must be an integer"),
    ("blosc", 5, "compression_opts for blosc must be an object"),
    ("blosc", {"cname": "nope"}, "unknown cname 'nope'"),
    ("lzma", 3, "compression_opts for lzma must be an object"),
])
def test_unknown_compression(name, opts, message):
    with pytest.raises(zarrkit.CodecError, match=message):
        zarrkit.open(with_meta(compression=name, compression_opts=opts), mode="r")


def test_attrs_are_read_and_may_be_missing_but_must_be_an_object():
    store = v1_store(np.arange(4, dtype="<i4"), (2,), attrs={"foo": 42, "bar": "apples",
                                                            "baz": [1, 2, 3, 4]})
    assert zarrkit.open(store, mode="r").attrs.asdict() == {"foo": 42, "bar": "apples",
                                                            "baz": [1, 2, 3, 4]}
    del store["attrs"]  # "MUST be present", but nothing is lost reading without it
    assert zarrkit.open(store, mode="r").attrs.asdict() == {}
    for text in (b"[]", b"null", b"{"):
        store["attrs"] = text
        with pytest.raises(zarrkit.MetadataError, match="attrs: "):
            zarrkit.open(store, mode="r")


# -- chunks -------------------------------------------------------------------------------------


@pytest.mark.parametrize("compression, opts", [("none", None), ("zlib", 1), ("bz2", 1),
                                                ("blosc", {"cname": "lz4", "clevel": 5,
                                                           "shuffle": 1})])
def test_chunk_of_the_wrong_size_is_named(compression, opts):
    store = v1_store(np.arange(6, dtype="<i4"), (3,), compression=compression,
                     compression_opts=opts)
    store["1"] = compress_v1(compression, opts, b"\0" * 16)  # 4 elements, not 3
    with pytest.raises(zarrkit.CorruptDataError, match="chunk '1'.*16 bytes"):
        zarrkit.open(store, mode="r")[...]
    store["1"] = b"junk"
    if compression != "none":
        with pytest.raises(zarrkit.CorruptDataError, match="chunk '1'"):
            zarrkit.open(store, mode="r")[...]


# -- stores and the API ------------------------------------------------------------------------


def test_directory_zip_and_dict_stores(tmp_path):
    data = np.arange(35, dtype=">i4").reshape(7, 5)
    store = v1_store(data, (3, 2), order="F", attrs={"a": 1})
    assert_same(zarrkit.open(store, mode="r")[...], data)
    assert_same(zarrkit.open(on_disk(tmp_path / "dir", store), mode="r")[...], data)
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as z:
        for key, value in store.items():
            z.writestr(f"sub/arr/{key}", value)
    a = zarrkit.open(str(tmp_path / "a.zip"), path="sub/arr", mode="r")
    assert_same(a[...], data)
    assert a.attrs["a"] == 1


def test_writes_are_refused_naming_v1(tmp_path):
    path = on_disk(tmp_path, v1_store(np.arange(4, dtype="<i4"), (2,)))
    for mode in ("r+", "a"):
        a = zarrkit.open(path, mode=mode)
        assert a.read_only
        with pytest.raises(zarrkit.ReadOnlyError, match="Zarr v1 is read only"):
            a[0] = 1
        with pytest.raises(zarrkit.ReadOnlyError, match="Zarr v1 is read only"):
            a.attrs["x"] = 1
        with pytest.raises(zarrkit.ReadOnlyError, match="Zarr v1 is read only"):
            a.resize((8,))
    assert sorted(p.name for p in path.iterdir()) == ["0", "1", "attrs", "meta"]


def test_format_detection_and_info(tmp_path):
    path = on_disk(tmp_path, v1_store(np.arange(4, dtype="<i4"), (2,), skip={"1"}))
    assert zarrkit.open_array(path, mode="r", zarr_format=1).zarr_format == 1
    with pytest.raises(zarrkit.NodeNotFoundError, match="a Zarr v1 node is there"):
        zarrkit.open(path, mode="r", zarr_format=2)
    with pytest.raises(zarrkit.NodeTypeError, match="not a group"):
        zarrkit.open_group(path, mode="r")
    info = str(zarrkit.open(path, mode="r").info_complete())
    assert "Zarr format      : 1" in info and "Chunks stored    : 1/2" in info


def test_cli_copy_of_a_v1_array_defaults_to_v2(tmp_path, capsys):
    data = np.arange(12, dtype="<c16").reshape(3, 4)
    src = on_disk(tmp_path / "v1", v1_store(data, (2, 3)))
    assert main(["copy", "--quiet", str(src), str(tmp_path / "copy")]) == 0
    copy = zarrkit.open(tmp_path / "copy", mode="r")
    assert copy.zarr_format == 2
    assert_same(copy[...], data)
    assert main(["copy", "--quiet", "--zarr-format", "3", str(src), str(tmp_path / "v3")]) == 0
    assert_same(zarrkit.open(tmp_path / "v3", mode="r")[...], data)

"""Upgrading v2 to v3: `zarrkit.convert` (copy, rechunk, reshard) and `zarrkit.upgrade_metadata`
(in place), compared value by value, with zarr-python and TensorStore reading the results."""

from __future__ import annotations

import json
import warnings

import numcodecs
import numpy as np
import pytest
from _v2_helpers import assert_same, sample

import zarrkit
from zarrkit import conversion as convert_module
from zarrkit.cli import main

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# name: (dtype, create keywords for zarr-python); every one upgrades in place
ARRAYS = {
    "blosc_f_order": (">i4", {"compressors": numcodecs.Blosc("zstd", 3, 2), "order": "F"}),
    "zstd_nested": ("<f8", {"compressors": numcodecs.Zstd(level=2),
                            "chunk_key_encoding": {"name": "v2", "separator": "/"},
                            "fill_value": np.nan}),
    "gzip_bool": ("|b1", {"compressors": numcodecs.GZip(4)}),
    "plain_complex": ("<c8", {"compressors": None, "fill_value": 1 + 2j}),
    "raw_bytes": ("|V3", {"compressors": numcodecs.Zstd()}),
    "zlib": ("<u2", {"compressors": numcodecs.Zlib(5)}),
    "lossy_filter": ("<f4", {"filters": [numcodecs.BitRound(keepbits=6)],
                             "compressors": numcodecs.LZ4()}),
    "delta": ("<i8", {"filters": [numcodecs.Delta(dtype="<i8")], "compressors": None}),
}
SHAPE, CHUNKS = (9, 7), (4, 3)


def zarr_v2_hierarchy(path, names=tuple(ARRAYS)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = zarr.open_group(str(path), mode="w", zarr_format=2)
        root.attrs["title"] = "source"
        group = root.create_group("group")
        for name in names:
            dtype, kwargs = ARRAYS[name]
            a = group.create_array(name, shape=SHAPE, chunks=CHUNKS, dtype=dtype, **kwargs)
            a[1:, :6] = sample(np.dtype(dtype).newbyteorder("="), (8, 6))
            a.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
            a.attrs["name"] = name
        scalar = root.create_array("scalar", shape=(), dtype="<f4", fill_value=0.5)
        scalar[()] = 2.5
    return root


def _values(node):
    return {rel: n[...] for rel, n in convert_module.walk(node) if isinstance(n, zarrkit.Array)}


def test_convert_v2_hierarchy_to_v3_value_by_value(tmp_path):
    zarr_v2_hierarchy(tmp_path / "v2")
    source = zarrkit.open(tmp_path / "v2", mode="r")
    seen = []
    out = zarrkit.convert(tmp_path / "v2", tmp_path / "v3",
                          progress=lambda done, total, label: seen.append((done, total)))
    assert out.zarr_format == 3 and out.attrs["title"] == "source"
    assert seen[-1][0] == seen[-1][1] and [d for d, _ in seen] == sorted(d for d, _ in seen)
    before, after = _values(source), _values(out)
    assert sorted(before) == sorted(after)
    for rel, values in before.items():
        assert_same(after[rel], values)
    a = out["group/blosc_f_order"]
    assert a.dimension_names == ("y", "x") and "_ARRAY_DIMENSIONS" not in a.attrs
    assert a.attrs["name"] == "blosc_f_order" and a.chunks == CHUNKS
    assert json.loads((tmp_path / "v3" / "group" / "zstd_nested" / "zarr.json").read_text()
                      )["fill_value"] == "NaN"
    with warnings.catch_warnings():  # and the copy is a v3 hierarchy zarr-python reads
        warnings.simplefilter("ignore")
        theirs = zarr.open_group(str(tmp_path / "v3"), mode="r")
        for rel, values in before.items():
            if rel != "group/raw_bytes":  # zarr-python has no r24 (raw) type
                assert_same(theirs[rel][...], values)


def test_convert_with_shards_and_codecs(tmp_path):
    zarr_v2_hierarchy(tmp_path / "v2", names=("blosc_f_order", "zstd_nested"))
    codecs = [{"name": "bytes", "configuration": {"endian": "big"}},
              {"name": "gzip", "configuration": {"level": 1}}]
    out = zarrkit.convert(tmp_path / "v2", tmp_path / "v3", chunks=(2, 2), shards=(4, 6),
                          codecs=codecs, progress=False)
    source = zarrkit.open(tmp_path / "v2", mode="r")
    for name in ("blosc_f_order", "zstd_nested"):
        a = out[f"group/{name}"]
        assert a.shards == (4, 6) and a.chunks == (2, 2)
        assert a.metadata["codecs"][0]["configuration"]["codecs"] == codecs
        assert_same(a[...], source[f"group/{name}"][...])
        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file",
                                                     "path": str(tmp_path / "v3" / "group" / name)}
                     }).result()
        assert_same(t.read().result(), source[f"group/{name}"][...])


def test_convert_v3_to_v2_and_back(tmp_path):
    a = zarrkit.create(tmp_path / "v3", shape=(6, 5), chunks=(4, 4), dtype=">f4",
                       fill_value=np.float32(-1.5), dimension_names=["a", "b"],
                       compressors=[{"name": "blosc", "configuration": {
                           "cname": "lz4", "clevel": 1, "shuffle": "bitshuffle"}}])
    a[1:4] = np.arange(15, dtype=">f4").reshape(3, 5)
    v2 = zarrkit.convert(tmp_path / "v3", tmp_path / "v2", zarr_format=2, progress=False)
    assert v2.zarr_format == 2 and v2.metadata["compressor"]["shuffle"] == 2
    assert v2.attrs["_ARRAY_DIMENSIONS"] == ["a", "b"] and v2.fill_value == -1.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(zarr.open_array(str(tmp_path / "v2"), mode="r")[...], a[...])
    back = zarrkit.convert(tmp_path / "v2", tmp_path / "again", progress=False)
    assert_same(back[...], a[...]) and back.dimension_names == ("a", "b")


def test_streaming_in_slabs(tmp_path, monkeypatch):
    data = np.arange(64 * 48, dtype="<u4").reshape(64, 48)
    src = zarrkit.create(tmp_path / "src", shape=data.shape, chunks=(5, 7), dtype="<u4",
                         zarr_format=2)
    src[...] = data
    monkeypatch.setattr(convert_module, "SLAB_BYTES", 4096)
    writes = []
    real_write = zarrkit.Array._write_planned
    monkeypatch.setattr(zarrkit.Array, "_write_planned",
                        lambda self, plan, value: (writes.append(plan.out_shape),
                                                   real_write(self, plan, value)))
    out = zarrkit.convert(tmp_path / "src", tmp_path / "dst", chunks=(8, 8), shards=(16, 16),
                          progress=False)
    assert len(writes) >= 3 and all(np.prod(w) * 4 <= 4096 for w in writes)
    assert_same(out[...], data)


def test_slab_shape_aligns_to_both_grids():
    assert convert_module.slab_shape((100, 100), (8, 8), (6, 6), 1, budget=24 * 24) == (24, 24)
    assert convert_module.slab_shape((100, 100), (8, 8), (7, 9), 1, budget=100) == (8, 8)
    assert convert_module.slab_shape((10,), (4,), (4,), 8, budget=1 << 20) == (16,)


@pytest.mark.parametrize("dtype", [[("a", "<i4"), ("m", "<f8", (2,))]])  # an array field
def test_convert_refuses_types_v3_lacks(tmp_path, dtype):
    zarrkit.create(tmp_path / "src", shape=(2,), dtype=dtype, zarr_format=2)
    with pytest.raises(zarrkit.DataTypeError, match="no Zarr v3 data type"):
        zarrkit.convert(tmp_path / "src", tmp_path / "dst", progress=False)
    assert not (tmp_path / "dst").exists()  # refused before anything was written


def _v2_text(where, dtype, values, order="C"):
    if dtype == "vlen-bytes":  # zarr-python names this v2 object array type explicitly
        from zarr.core.dtype import VariableLengthBytes

        arr = zarr.open_array(str(where), mode="w", shape=(len(values),), chunks=(1,),
                              dtype=VariableLengthBytes(), zarr_format=2)
        arr[:] = np.array(values, dtype=object)
        return np.array(values, dtype=object)
    data = np.array(values, dtype=object if dtype is str else dtype)
    data = data.reshape(2, -1) if order == "F" else data
    arr = zarrkit.create(where, shape=data.shape, chunks=(1,) * data.ndim, dtype=dtype,
                         zarr_format=2, order=order)
    arr[...] = data
    return data


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("dtype, values, v3_type", [
    ("|S3", [b"ab", b"c"], "null_terminated_bytes"), ("<U2", ["ab", "c"], "fixed_length_utf32"),
    (str, ["ab", "cde"], "string"), ("vlen-bytes", [b"a", b""], "variable_length_bytes"),
])
def test_text_arrays_convert_and_upgrade_to_v3_text_types(tmp_path, dtype, values, v3_type,
                                                         in_place):
    expected = _v2_text(tmp_path / "src", dtype, values)
    if in_place:
        zarrkit.upgrade_metadata(tmp_path / "src")
        out = tmp_path / "src"
    else:
        zarrkit.convert(tmp_path / "src", tmp_path / "dst", progress=False)
        out = tmp_path / "dst"
    doc = json.loads((out / "zarr.json").read_text())
    assert v3_type in json.dumps(doc["data_type"])
    np.testing.assert_array_equal(zarrkit.open(out, mode="r", zarr_format=3)[...], expected)
    np.testing.assert_array_equal(zarr.open_array(str(out), zarr_format=3)[...], expected)


def test_an_order_f_string_array_upgrades_in_place(tmp_path):
    expected = _v2_text(tmp_path / "src", str, ["a", "bb", "ccc", "d", "", "ff"], order="F")
    zarrkit.upgrade_metadata(tmp_path / "src")
    np.testing.assert_array_equal(zarrkit.open(tmp_path / "src", mode="r")[...], expected)


def test_object_arrays_of_other_codecs_have_no_v3_type(tmp_path):
    zarrkit.create(tmp_path / "src", shape=(2,), dtype=object, zarr_format=2,
                   filters=[{"id": "json2"}])
    with pytest.raises(zarrkit.DataTypeError, match="no Zarr v3 data type"):
        zarrkit.convert(tmp_path / "src", tmp_path / "dst", progress=False)


def test_convert_refuses_overlap_and_existing(tmp_path):
    zarrkit.group(tmp_path / "g", zarr_format=2).create_array("a", shape=(2,))
    with pytest.raises(zarrkit.SpecError, match="overlap"):
        zarrkit.convert(tmp_path / "g", tmp_path / "g" / "inside", progress=False)
    zarrkit.convert(tmp_path / "g", tmp_path / "out", progress=False)
    with pytest.raises(zarrkit.NodeExistsError):
        zarrkit.convert(tmp_path / "g", tmp_path / "out", progress=False)
    assert zarrkit.convert(tmp_path / "g", tmp_path / "out", overwrite=True,
                           progress=False).zarr_format == 3


# -- in place -----------------------------------------------------------------------------------


def _chunk_files(path):
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*")
            if p.is_file() and not p.name.startswith((".z", "zarr.json"))}


def test_upgrade_in_place_keeps_every_chunk(tmp_path):
    zarr_v2_hierarchy(tmp_path)
    before = _values(zarrkit.open(tmp_path, mode="r"))
    chunks = _chunk_files(tmp_path)
    out = zarrkit.upgrade_metadata(tmp_path)
    assert out.zarr_format == 3 and out.attrs["title"] == "source"
    assert _chunk_files(tmp_path) == chunks  # not one chunk rewritten
    assert not list(tmp_path.rglob(".zarray")) and not list(tmp_path.rglob(".zattrs"))
    after = _values(zarrkit.open(tmp_path, mode="r"))
    for rel, values in before.items():
        assert_same(after[rel], values)
    doc = json.loads((tmp_path / "group" / "zstd_nested" / "zarr.json").read_text())
    assert doc["chunk_key_encoding"] == {"name": "v2", "configuration": {"separator": "/"}}
    assert doc["dimension_names"] == ["y", "x"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = zarr.open_group(str(tmp_path), mode="r", zarr_format=3)
        for rel, values in before.items():
            if rel != "group/raw_bytes":  # zarr-python has no r24 (raw) type
                assert_same(theirs[rel][...], values)
    for name in ("blosc_f_order", "zstd_nested", "gzip_bool", "plain_complex"):
        t = ts.open({"driver": "zarr3", "kvstore": {
            "driver": "file", "path": str(tmp_path / "group" / name)}}).result()
        assert_same(t.read().result(), before[f"group/{name}"])


def test_upgrade_can_keep_the_v2_documents(tmp_path):
    zarr_v2_hierarchy(tmp_path, names=("gzip_bool",))
    zarrkit.upgrade_metadata(tmp_path, keep_v2_metadata=True)
    assert zarrkit.open(tmp_path, mode="r").zarr_format == 3  # zarr.json wins
    v2 = zarrkit.open(tmp_path, mode="r", zarr_format=2)["group/gzip_bool"]
    v3 = zarrkit.open(tmp_path, mode="r")["group/gzip_bool"]
    assert_same(v2[...], v3[...])


def test_cli_convert_and_upgrade(tmp_path, capsys):
    zarr_v2_hierarchy(tmp_path / "v2", names=("blosc_f_order",))
    assert main(["convert", str(tmp_path / "v2"), str(tmp_path / "v3"), "--chunks", "2,2",
                 "--shards", "4,4", "--codecs", '[{"name": "bytes"}]']) == 0
    captured = capsys.readouterr()
    assert "100%" in captured.err and "Zarr v3" in captured.out
    out = zarrkit.open(tmp_path / "v3", mode="r")["group/blosc_f_order"]
    assert out.shards == (4, 4)
    assert_same(out[...], zarrkit.open(tmp_path / "v2", mode="r")["group/blosc_f_order"][...])
    assert main(["convert", "--in-place", str(tmp_path / "v2"), "--quiet"]) == 0
    assert zarrkit.open(tmp_path / "v2", mode="r").zarr_format == 3
    assert main(["convert", str(tmp_path / "v2")]) == 2  # no DST: a clear error
    assert "DST" in capsys.readouterr().err


def test_rechunking_a_v3_array_keeps_its_codecs(tmp_path):
    a = zarrkit.create(tmp_path / "src", shape=(8, 8), chunks=(4, 4), dtype="<i2",
                       compressors=[{"name": "gzip", "configuration": {"level": 3}}])
    a[...] = np.arange(64).reshape(8, 8)
    out = zarrkit.convert(tmp_path / "src", tmp_path / "dst", chunks=(2, 2), shards=(4, 8),
                          progress=False)
    inner = out.metadata["codecs"][0]["configuration"]["codecs"]
    assert inner[-1] == {"name": "gzip", "configuration": {"level": 3}}
    assert_same(out[...], a[...])

"""Zarr v1 (read only): fixtures written by hand exactly as the v1 spec describes (no library
writes v1 any more): a `meta` document, an `attrs` document, chunks keyed "i.j" holding the
compressed bytes of the chunk in C or F order."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _v1_helpers import compress_v1
from _v2_helpers import assert_same

import zarrkit


def write_v1(path, data, chunks, *, compression="zlib", compression_opts=1, fill_value=0,
             order="C", attrs=None, meta_text=None, dtype=None):
    """A v1 array store: one chunk file per grid position, edge chunks padded with zeros."""
    path.mkdir(parents=True, exist_ok=True)
    meta = {"zarr_format": 1, "shape": list(data.shape), "chunks": list(chunks),
            "dtype": dtype or data.dtype.str, "compression": compression,
            "compression_opts": compression_opts, "fill_value": fill_value, "order": order}
    (path / "meta").write_text(meta_text or json.dumps(meta))
    (path / "attrs").write_text(json.dumps(attrs or {}))
    grid = [-(-s // c) for s, c in zip(data.shape, chunks, strict=True)]
    for index in np.ndindex(*grid):
        region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(index, chunks, strict=True))
        chunk = np.zeros(chunks, data.dtype)
        part = data[region]
        chunk[tuple(slice(0, n) for n in part.shape)] = part
        raw = chunk.tobytes(order=order)
        (path / ".".join(map(str, index))).write_bytes(compress_v1(compression, compression_opts,
                                                                 raw))


CASES = {
    "zlib": ("zlib", 1),
    "bz2": ("bz2", 9),
    "lzma": ("lzma", None),
    "blosc": ("blosc", {"cname": "lz4", "clevel": 5, "shuffle": 1}),
    "none": ("none", None),
}


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_read_v1(tmp_path, name, order):
    data = (np.arange(35, dtype="<f8").reshape(7, 5) - 10) / 3
    write_v1(tmp_path, data, (3, 2), compression=CASES[name][0],
             compression_opts=CASES[name][1], order=order, attrs={"foo": 42})
    a = zarrkit.open(tmp_path, mode="r")
    assert isinstance(a, zarrkit.Array) and a.zarr_format == 1
    assert a.attrs.asdict() == {"foo": 42} and a.metadata["compression"] == CASES[name][0]
    assert_same(a[...], data)
    assert_same(a[2:6, 1:4], data[2:6, 1:4])


def test_v1_spec_example_with_bare_nan_and_missing_chunks(tmp_path):
    """The spec's own example layout; zarr 1.x wrote NaN fill values as a bare JSON literal."""
    data = np.full((20, 20), 1, dtype=">i4")
    write_v1(tmp_path, data, (10, 10), compression="zlib", compression_opts=1, fill_value=42)
    (tmp_path / "1.1").unlink()  # an uninitialized chunk reads as the fill value
    expected = data.copy()
    expected[10:, 10:] = 42
    assert_same(zarrkit.open(tmp_path, mode="r")[...], expected)
    floats = tmp_path / "nan"
    write_v1(floats, np.zeros((4,), "<f4"), (2,), compression="none", meta_text=json.dumps({
        "zarr_format": 1, "shape": [4], "chunks": [2], "dtype": "<f4", "compression": "none",
        "compression_opts": None, "fill_value": float("nan"), "order": "C"}))
    (floats / "1").unlink()
    assert "NaN" in (floats / "meta").read_text()  # Python's json wrote the bare literal
    assert_same(zarrkit.open(floats, mode="r")[...], np.array([0, 0, np.nan, np.nan], "<f4"))


def test_structured_v1(tmp_path):
    dtype = np.dtype([("r", "u1"), ("g", "u1"), ("b", "u1")])
    data = np.zeros((5,), dtype)
    data["r"], data["g"], data["b"] = np.arange(5), np.arange(5) * 2, 255
    write_v1(tmp_path, data, (2,), dtype=[["r", "|u1"], ["g", "|u1"], ["b", "|u1"]],
             fill_value=None)
    assert_same(zarrkit.open(tmp_path, mode="r")[...], data)


def test_v1_is_read_only(tmp_path):
    write_v1(tmp_path, np.zeros(3, "<i2"), (2,))
    a = zarrkit.open(tmp_path, mode="r+")
    assert a.read_only
    with pytest.raises(zarrkit.ReadOnlyError):
        a[0] = 1
    with pytest.raises(zarrkit.ReadOnlyError):
        a.attrs["x"] = 1


@pytest.mark.parametrize("meta, message", [
    ({"compression": "snappy"}, "unsupported v1 compressor 'snappy'"),
    ({"compression": "zlib", "compression_opts": "high"}, "compression_opts"),
    ({"order": "K"}, "order"),
    ({"dtype": "<i3"}, "dtype"),
    ({"chunks": [2, 2]}, "chunks"),
    ({"compression_opts": ...}, "missing"),
])
def test_malformed_v1_meta(tmp_path, meta, message):
    doc = {"zarr_format": 1, "shape": [4], "chunks": [2], "dtype": "<i4", "compression": "zlib",
           "compression_opts": 1, "fill_value": 0, "order": "C"}
    doc.update(meta)
    doc = {k: v for k, v in doc.items() if v is not ...}
    tmp_path.joinpath("meta").write_text(json.dumps(doc))
    with pytest.raises(zarrkit.MetadataError, match=message):
        zarrkit.open(tmp_path, mode="r")


def test_v1_converts_to_v3_and_upgrades_in_place(tmp_path):
    data = np.arange(30, dtype=">u2").reshape(6, 5)
    write_v1(tmp_path / "v1", data, (4, 2), compression="blosc",
             compression_opts={"cname": "zstd", "clevel": 3, "shuffle": 2}, order="F",
             attrs={"a": 1})
    copy = zarrkit.convert(tmp_path / "v1", tmp_path / "v3", progress=False)
    assert copy.zarr_format == 3 and copy.attrs["a"] == 1
    assert_same(copy[...], data)
    upgraded = zarrkit.upgrade_metadata(tmp_path / "v1")
    assert upgraded.zarr_format == 3 and not (tmp_path / "v1" / "meta").exists()
    assert_same(zarrkit.open(tmp_path / "v1", mode="r")[...], data)


def test_v1_bytes_fill_value_is_the_text_itself(tmp_path):
    """zarr 1.x wrote fill_value as is (no base64, unlike v2): "ab" was refused as invalid
    base64, and "abcd" read as its base64 decoding."""
    for fill in ("ab", "abcd"):
        path = tmp_path / fill
        write_v1(path, np.array([b"q"] * 4, "|S4"), (2,), fill_value=fill)
        (path / "1").unlink()
        a = zarrkit.open(path, mode="r")
        assert a[...].tolist() == [b"q", b"q", fill.encode(), fill.encode()]

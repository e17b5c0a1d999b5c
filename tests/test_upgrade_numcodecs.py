"""Upgrading v2 arrays whose filters or compressors the v3 specification lacks: in place, to
zarr-python's `numcodecs.<id>` codecs, reading the chunks as they are and writing the same
bytes v2 did, as zarr-python's own `migrate_to_v3` writes them."""

import json
import shutil
import warnings

import numcodecs
import numpy as np
import pytest
import zarr
from zarr.metadata.migrate_v3 import migrate_to_v3
from zarr.storage import LocalStore, StorePath

import zarrkit
from zarrkit.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SHAPE, CHUNKS = (8, 6), (4, 3)  # whole chunks: zarr-python leaves junk in edge chunks' padding

# name: (dtype, zarr-python's create keywords, whether its migrate_to_v3 handles the chain)
CHAINS = {
    "delta-lz4-bigendian": (">i8", {"filters": [numcodecs.Delta(dtype=">i8")],
                                    "compressors": numcodecs.LZ4()}, True),
    "fixedscaleoffset-zlib": ("<f8", {"filters": [numcodecs.FixedScaleOffset(
        offset=1, scale=10, dtype="<f8", astype="<u2")], "compressors": numcodecs.Zlib(3)}, True),
    "bitround-blosc-orderF": ("<f4", {"filters": [numcodecs.BitRound(keepbits=8)],
                                      "compressors": numcodecs.Blosc(), "order": "F"}, True),
    "packbits-bz2": ("|b1", {"filters": [numcodecs.PackBits()],
                             "compressors": numcodecs.BZ2()}, True),
    # (astype the same type: zarr-python 3.1 reads a quantize that changes it at the wrong size)
    "quantize-zstd": ("<f8", {"filters": [numcodecs.Quantize(digits=2, dtype="<f8")],
                              "compressors": numcodecs.Zstd(2)}, True),
    # a checksum as a filter: bytes->bytes after the bytes codec (zarr-python's migrate refuses)
    "astype-crc32-lzma": ("<f8", {"filters": [numcodecs.AsType(encode_dtype="<f4",
                                                               decode_dtype="<f8"),
                                              numcodecs.CRC32()],
                                  "compressors": numcodecs.LZMA()}, False),
}


def _values(dtype):
    n = np.prod(SHAPE)
    if dtype == "|b1":
        return (np.arange(n) % 3 == 0).reshape(SHAPE)
    return (np.arange(n).reshape(SHAPE) * 1.25).astype(np.dtype(dtype).newbyteorder("="))


def _v2_array(path, name):
    dtype, kwargs, _ = CHAINS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = zarr.create_array(str(path), shape=SHAPE, chunks=CHUNKS, dtype=dtype,
                              zarr_format=2, **kwargs)
        a[...] = _values(dtype)
        return a, a[...]


def _chunks(path):
    return {p.name: p.read_bytes() for p in path.iterdir() if not p.name.startswith((".z", "z"))}


@pytest.mark.parametrize("name", CHAINS)
def test_upgraded_in_place_reads_and_writes_the_v2_bytes(tmp_path, name):
    path = tmp_path / "a.zarr"
    _, expected = _v2_array(path, name)
    chunks = _chunks(path)
    out = zarrkit.upgrade_metadata(path)
    assert out.zarr_format == 3 and _chunks(path) == chunks
    assert any(c["name"].startswith("numcodecs.") for c in out.metadata["codecs"])
    assert np.array_equal(out[...], expected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.array_equal(zarr.open_array(str(path), mode="r", zarr_format=3)[...], expected)
    out[...] = expected  # encoded again through the v3 chain: the bytes v2 wrote
    assert _chunks(path) == chunks


@pytest.mark.parametrize("name", [n for n, (_, _, handled) in CHAINS.items() if handled])
def test_the_codecs_are_those_zarr_pythons_migration_writes(tmp_path, name):
    theirs_at, ours_at = tmp_path / "theirs.zarr", tmp_path / "ours.zarr"
    a, _ = _v2_array(theirs_at, name)
    shutil.copytree(theirs_at, ours_at)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        migrate_to_v3(a, StorePath(LocalStore(str(theirs_at))))
    zarrkit.upgrade_metadata(ours_at)
    theirs = json.loads((theirs_at / "zarr.json").read_text())
    ours = json.loads((ours_at / "zarr.json").read_text())
    assert ours["codecs"] == theirs["codecs"]


def test_zarr_pythons_migrated_big_endian_filters_read_right(tmp_path):
    """zarr-python's migration keeps a filter's big-endian type; its filter is handed values
    in that order, so the values come back (before, they were read byte-swapped)."""
    a, expected = _v2_array(tmp_path, "delta-lz4-bigendian")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        migrate_to_v3(a, StorePath(LocalStore(str(tmp_path))))
    assert np.array_equal(zarrkit.open(tmp_path, mode="r", zarr_format=3)[...], expected)


def test_object_arrays_keep_bytes_filters_after_their_object_codec(tmp_path):
    a = zarrkit.create(tmp_path, shape=(4,), chunks=(2,), dtype=object, zarr_format=2,
                       filters=[{"id": "vlen-utf8"}, {"id": "adler32"}],
                       compressor={"id": "zlib", "level": 1})
    a[...] = np.array(["a", "bb", "", "dddd"], dtype=object)
    out = zarrkit.upgrade_metadata(tmp_path)
    assert [c["name"] for c in out.metadata["codecs"]] == \
        ["vlen-utf8", "numcodecs.adler32", "numcodecs.zlib"]
    assert out[...].tolist() == ["a", "bb", "", "dddd"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert zarr.open_array(str(tmp_path), mode="r")[...].tolist() == ["a", "bb", "", "dddd"]


@pytest.mark.parametrize("dtype, filters, compressor, message", [
    ("<u2", None, {"id": "base64"}, "'base64' has no Zarr v3 codec"),
    ("<i8", [{"id": "shuffle", "elementsize": 8}, {"id": "delta", "dtype": "<i8"}], None,
     "'delta' takes an array and follows a codec that made bytes"),
    ("<u4", [{"id": "delta", "dtype": "<i4"}], None,
     "'delta' views the values as '<i4', not their own type '<u4'"),
    (">u4", [{"id": "delta", "dtype": "<u4"}], None,
     "'delta' views the values as '<u4', not their own type '>u4'"),
])
def test_chains_v3_cannot_express_are_refused_writing_nothing(tmp_path, dtype, filters,
                                                              compressor, message):
    zarrkit.open_group(tmp_path, mode="w", zarr_format=2)
    zarrkit.create(tmp_path / "fine", shape=(4,), chunks=(2,), dtype="<u2", zarr_format=2,
                   compressor={"id": "lz4"})
    bad = zarrkit.create(tmp_path / "bad", shape=(4,), chunks=(2,), dtype=dtype, zarr_format=2,
                         filters=filters, compressor=compressor)
    bad[...] = np.arange(4)
    with pytest.raises(zarrkit.CodecError, match=message) as caught:
        zarrkit.upgrade_metadata(tmp_path)
    assert "bad/.zarray" in str(caught.value)
    assert not list(tmp_path.rglob("zarr.json"))
    assert zarrkit.open(tmp_path / "bad", mode="r")[...].tolist() == [0, 1, 2, 3]


def test_the_command_line_names_arrays_outside_the_specification(tmp_path, capsys):
    root = zarrkit.open_group(tmp_path, mode="w", zarr_format=2)
    root.create_array("plain", shape=(4,), chunks=(2,), dtype="<u2",
                      compressor={"id": "zstd", "level": 1})
    root.create_group("sub").create_array("lz4", shape=(4,), chunks=(2,), dtype="<u2",
                                          compressor={"id": "lz4"})
    assert main(["convert", "--in-place", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "note: 1 array(s) use numcodecs.* codecs" in out and out.rstrip().endswith("sub/lz4")
    assert main(["convert", "--in-place", str(tmp_path)]) == 0  # nothing left to upgrade


def test_netcdfs_shuffle_of_element_size_0_upgrades_to_the_types_size(tmp_path):
    """netCDF-C writes shuffle's element size as 0, meaning the variable's type size."""
    a = zarrkit.create(tmp_path, shape=(6,), chunks=(3,), dtype=">i4", zarr_format=2,
                       filters=[{"id": "shuffle", "elementsize": 0}],
                       compressor={"id": "zlib", "level": 1})
    a[...] = np.arange(6) * 1000
    raw = bytes(numcodecs.Zlib().decode((tmp_path / "1").read_bytes()))
    assert raw == bytes(numcodecs.Shuffle(4).encode((np.arange(3, 6) * 1000).astype(">i4")))
    out = zarrkit.upgrade_metadata(tmp_path)
    assert out.metadata["codecs"][1] == {"name": "numcodecs.shuffle",
                                         "configuration": {"elementsize": 4}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert zarr.open_array(str(tmp_path), mode="r")[...].tolist() == \
            list(range(0, 6000, 1000))

"""Regressions found by a systematic interop hunt over codecs and data types (zarr-python and
TensorStore as oracles): each test names the combination that went wrong."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import CodecError, CorruptDataError

zarr = pytest.importorskip("zarr")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def _zp_read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_array(str(path), mode="r")[...]


def _shard_0d(serializer):
    return [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [], "codecs": [{"name": serializer}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": "start"}}]


@pytest.mark.parametrize("dtype, serializer, value", [
    (str, "vlen-utf8", "hé"), ("variable_length_bytes", "vlen-bytes", b"\0ab")])
def test_sharded_0d_variable_length_write(tmp_path, dtype, serializer, value):
    """A whole-shard write of a 0-d object array cut the value down to its element (a str, not
    an array): AttributeError. zarr-python cannot write sharded 0-d arrays, but reads ours."""
    a = zarrkit.create(str(tmp_path), (), dtype, chunks=(), codecs=_shard_0d(serializer))
    a[...] = value
    assert zarrkit.open(str(tmp_path), mode="r")[...] == value
    assert np.asarray(_zp_read(tmp_path)).astype(object)[()] == value


def test_numcodecs_v3_encode_failure_is_a_codec_error(tmp_path):
    """numcodecs' own encode-time errors (here shuffle's "buffer is not an integer multiple of
    elementsize", which zarr-python raises as is) leaked from v3 `numcodecs.*` codecs as bare
    ValueError; v2 filters and compressors already reported them as CodecError."""
    codecs = ["bytes", {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}}]
    a = zarrkit.create(str(tmp_path), (3,), "uint16", chunks=(3,), codecs=codecs)
    with pytest.raises(CodecError, match=r"numcodecs\.shuffle.*integer multiple of elementsize"):
        a[...] = 1


@pytest.mark.parametrize("dtype, fill, expected", [
    ("<M8[ns]", 5, np.datetime64(5, "ns")), (">M8[D]", -(2**63), np.datetime64("NaT")),
    ("<m8[s]", np.int64(-3), np.timedelta64(-3, "s")),
    ("<M8[s]", np.int64(7), np.datetime64(7, "s"))])
def test_v2_time_fill_value_given_as_an_integer(tmp_path, dtype, fill, expected):
    """The v2 JSON form of a datetime/timedelta fill value is its integer count of units (as
    zarr-python writes and takes it); v3 arrays took it, v2 ones refused it (DataTypeError)."""
    a = zarrkit.create(str(tmp_path), shape=(3,), chunks=(2,), dtype=dtype, fill_value=fill,
                       zarr_format=2)
    assert json.loads((tmp_path / ".zarray").read_text())["fill_value"] == int(fill)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = zarr.open_array(str(tmp_path), mode="r", zarr_format=2)[...]
    np.testing.assert_array_equal(a[...], np.full(3, expected, dtype))
    np.testing.assert_array_equal(theirs, np.full(3, expected, dtype))


def _two_frames(raw, content_size):
    import zstandard

    half = len(raw) // 2
    compress = zstandard.ZstdCompressor(write_content_size=content_size).compress
    return compress(raw[:half]) + compress(raw[half:])


@pytest.mark.parametrize("content_size", [True, False])
def test_zstd_chunk_of_several_frames(tmp_path, content_size):
    """RFC 8878: zstd data is one or more frames (as pzstd writes them). zarrkit refused a chunk
    whose first frame declares only its own share of the decoded size ("frame declares 2000
    decoded bytes, expected 4000"); zarr-python reads it (TensorStore does not)."""
    data = np.arange(1000, dtype="int32")
    zstd = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
    a = zarrkit.create(str(tmp_path), (1000,), "int32", chunks=(1000,), codecs=["bytes", zstd])
    a[...] = 1
    (tmp_path / "c" / "0").write_bytes(_two_frames(data.tobytes(), content_size))
    np.testing.assert_array_equal(_zp_read(tmp_path), data)
    np.testing.assert_array_equal(zarrkit.open(str(tmp_path), mode="r")[...], data)
    np.testing.assert_array_equal(zarrkit.open(str(tmp_path), mode="r")[:10], data[:10])


@pytest.mark.parametrize("values, cut, match", [
    (1001, 0, "more than 4000 decoded bytes"), (999, 0, "hold 3996 decoded bytes"),
    (1000, 3, "cut short")])
def test_zstd_frames_of_another_size_or_cut_short_are_refused(tmp_path, values, cut, match):
    zstd = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
    a = zarrkit.create(str(tmp_path), (1000,), "int32", chunks=(1000,), codecs=["bytes", zstd])
    a[...] = 1
    stored = _two_frames(np.arange(values, dtype="int32").tobytes(), True)
    (tmp_path / "c" / "0").write_bytes(stored[:len(stored) - cut])
    with pytest.raises(CorruptDataError, match=match):
        zarrkit.open(str(tmp_path), mode="r")[...]

"""Review of the text and bytes data types (v3 string/variable_length_bytes, v2 object arrays
with vlen-utf8/vlen-bytes): lone surrogates, v2 fill values, numpy's sizeless text dtypes and
converting variable-length bytes, with zarr-python 3 as the oracle."""

from __future__ import annotations

import json

import numcodecs
import numpy as np
import pytest

import zarrkit
from zarrkit.errors import CodecError, DataTypeError
from zarrkit.kvstore import MemoryStore

zarr = pytest.importorskip("zarr")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


@pytest.mark.parametrize("zarr_format, shards", [(3, None), (3, (4,)), (2, None)])
def test_lone_surrogates_are_refused_before_any_chunk_is_stored(zarr_format, shards):
    """UTF-8 cannot encode a lone surrogate (os.fsdecode makes them): the write fails as a
    CodecError naming the value, and no chunk is changed (it used to fail part-way, v3 with
    Python's UnicodeEncodeError)."""
    extra = {"shards": shards} if shards else {}
    a = zarrkit.create(MemoryStore(), shape=(8,), chunks=(2,), dtype=str,
                       zarr_format=zarr_format, **extra)
    a[...] = "old"
    with pytest.raises(CodecError, match=r"'\\ud800' at 7 of the values written.*surrogate"):
        a[...] = ["new"] * 7 + ["\ud800"]
    assert a[...].tolist() == ["old"] * 8
    with pytest.raises(CodecError, match="surrogate"):  # one element: also checked
        a[3] = "x\udcff"
    a[...] = "日本語🎉"  # other non-ASCII text is fine
    assert a[...].tolist() == ["日本語🎉"] * 8


def test_string_fill_value_with_a_lone_surrogate_is_refused():
    """zarr-python cannot read such an array, and no chunk holding the fill value could be
    written; fixed_length_utf32 (UTF-32 in numpy) holds surrogates, so it keeps them."""
    with pytest.raises(DataTypeError, match="fill_value.*surrogate"):
        zarrkit.create(MemoryStore(), shape=(2,), dtype=str, fill_value="a\ud800")
    with pytest.raises(DataTypeError, match="fill_value.*'vlen-utf8'"):
        zarrkit.create(MemoryStore(), shape=(2,), dtype=str, fill_value="\ud800",
                       zarr_format=2)
    a = zarrkit.create(MemoryStore(), shape=(2,), dtype="U2", fill_value="\ud800")
    assert a[...].tolist() == ["\ud800"] * 2


@pytest.mark.parametrize("dtype, fill", [(str, b"x"), (str, bytearray(b"x")), (str, [1]),
                                         (str, float("nan")), (bytes, [1]), (bytes, {"a": 1})])
def test_v2_vlen_fill_values_of_the_wrong_type_are_refused(dtype, fill):
    """They used to fail only when the .zarray was written as JSON (a MetadataError not naming
    the fill value), after overwrite=True had deleted the array being replaced."""
    store = MemoryStore()
    old = zarrkit.create(store, path="a", shape=(2,), dtype=dtype, zarr_format=2)
    old[...] = ["kept"] * 2 if dtype is str else [b"kept"] * 2
    with pytest.raises(DataTypeError, match="fill_value: expected"):
        zarrkit.create(store, path="a", shape=(2,), dtype=dtype, zarr_format=2,
                       fill_value=fill, overwrite=True)
    assert zarrkit.open(store, path="a")[...].tolist() == old[...].tolist()


@pytest.mark.parametrize("dtype, fill, value, json_fill", [
    (str, np.str_("s"), "s", "s"), (str, np.int64(3), "3", 3),
    (bytes, bytearray(b"q"), b"q", "cQ=="), (bytes, np.bytes_(b"\xff"), b"\xff", "/w=="),
    (bytes, "text", b"text", "dGV4dA==")])
def test_v2_vlen_fill_values_are_normalized(tmp_path, dtype, fill, value, json_fill):
    a = zarrkit.create(tmp_path / "a", shape=(2,), chunks=(1,), dtype=dtype, zarr_format=2,
                       fill_value=fill)
    assert json.loads((tmp_path / "a" / ".zarray").read_text())["fill_value"] == json_fill
    assert a[...].tolist() == [value] * 2
    assert zarr.open_array(tmp_path / "a")[...].tolist() == [value] * 2


def test_v2_vlen_bytes_number_fill_reads_as_bytes(tmp_path):
    """A numeric fill value of a vlen-bytes array (zarr-python 2 wrote 0) read as the int 0 in
    missing chunks, but as b"" where a partial write had stored it: now b"" in both, as
    numcodecs stores 0 (the "missing" value; the same for vlen-utf8)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [3], "chunks": [2], "dtype": "|O", "compressor": None,
        "fill_value": 0, "order": "C", "filters": [{"id": "vlen-bytes"}]}))
    a = zarrkit.open(tmp_path / "a")
    assert a[...].tolist() == [b""] * 3
    a[0] = b"q"
    assert a[...].tolist() == [b"q", b"", b""]
    assert numcodecs.VLenBytes().decode((tmp_path / "a" / "0").read_bytes()).tolist() == \
        [b"q", b""]


@pytest.mark.parametrize("dtype, codec, value", [
    (np.dtype(str), "vlen-utf8", "héllo"), ("U", "vlen-utf8", "héllo"),
    (np.dtype(bytes), "vlen-bytes", b"\x00\xff"), ("S", "vlen-bytes", b"\x00\xff")])
def test_v2_sizeless_numpy_text_dtypes_are_variable_length(tmp_path, dtype, codec, value):
    """np.dtype(str) is the sizeless U0: v3 took it as "string" (as zarr-python does in both
    formats), v2 refused it ("'<U0' needs a positive size")."""
    a = zarrkit.create(tmp_path / "a", shape=(2,), dtype=dtype, zarr_format=2)
    a[...] = [value] * 2
    assert json.loads((tmp_path / "a" / ".zarray").read_text())["filters"] == [{"id": codec}]
    assert zarr.open_array(tmp_path / "a")[...].tolist() == [value] * 2


@pytest.mark.parametrize("zarr_format, chunks", [(2, None), (2, (1,)), (3, (1,))])
def test_convert_variable_length_bytes(tmp_path, zarr_format, chunks):
    """The copy's data type was built from the numpy dtype (object), i.e. as text: v3 -> v2
    failed writing the .zarray, and a rechunking v3 -> v3 copy refused the bytes fill value."""
    src = zarrkit.create(tmp_path / "src", shape=(4,), chunks=(2,), dtype=bytes,
                         fill_value=b"\xff")
    src[:3] = [b"a", b"\x00", b""]
    dst = zarrkit.convert(tmp_path / "src", tmp_path / "dst", zarr_format=zarr_format,
                          chunks=chunks, progress=False)
    expected = [b"a", b"\x00", b"", b"\xff"]
    assert dst[...].tolist() == expected
    assert zarr.open_array(tmp_path / "dst")[...].tolist() == expected


def test_object_dtype_with_a_bytes_fill_value_is_variable_length_bytes():
    """Object values are text, unless the fill value says bytes (vlen codecs tell them apart so)."""
    for zarr_format in (3, 2):
        a = zarrkit.create(MemoryStore(), shape=(2,), dtype=np.dtype(object),
                           fill_value=b"z", zarr_format=zarr_format)
        assert a[...].tolist() == [b"z"] * 2
    with pytest.raises(DataTypeError, match="expected a string for string"):
        zarrkit.create(MemoryStore(), shape=(2,), dtype=str, fill_value=b"z")


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("dtype, zero, one", [(str, "0", "1"), ("U3", "0", "1"),
                                              (bytes, b"0", b"1"), ("S3", b"0", b"1")])
def test_zeros_and_ones_of_text_hold_the_digit_as_text(tmp_path, zarr_format, dtype, zero, one):
    """As zarr-python: the v3 text and bytes types refused the number as a fill value (v2 took
    it and stored a number as the fill value of a text array)."""
    z = zarrkit.zeros(tmp_path / "z", shape=(2,), dtype=dtype, zarr_format=zarr_format)
    o = zarrkit.ones(tmp_path / "o", shape=(2,), dtype=dtype, zarr_format=zarr_format)
    assert z[...].tolist() == [zero] * 2 and o[...].tolist() == [one] * 2
    assert zarrkit.open(tmp_path / "o", mode="r").fill_value == one
    theirs = zarr.open_array(str(tmp_path / "o"), mode="r")
    assert [v if isinstance(v, bytes | str) else v.item() for v in theirs[...]] == [one] * 2

"""zarr-python's string and bytes data types in Zarr v3, both ways, with zarr-python as the oracle.

"string" (vlen-utf8), "variable_length_bytes" (vlen-bytes), "fixed_length_utf32" (numpy U<n>)
and "null_terminated_bytes" (numpy S<n>): plain and sharded, with and without compressors, with
fill values and missing chunks. zarr-python writes None into a "string" array as the text
"None"; zarrkit refuses it (and any non-str) with a CodecError instead.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import CodecError, DataTypeError, SpecError
from zarrkit.metadata.data_type import DataType

zarr = pytest.importorskip("zarr")
from zarr.core.dtype import VariableLengthBytes  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

SHAPE, CHUNKS, SHARDS = (5, 4), (1, 2), (2, 4)
STR = np.array([["a", "bé", "", "long" * 20], ["x", "y", "z", "w"], ["1", "2", "3", "ü"]],
               dtype=object)
BYTES = np.array([[b"a", b"\x00b", b"", b"zz" * 30]] * 3, dtype=object)
# kind -> (zarr-python dtype, zarrkit dtype, fill value, values for rows 0-2)
KINDS = {
    "string": (str, str, "q", STR),
    "variable_length_bytes": (VariableLengthBytes(), "variable_length_bytes", b"ab", BYTES),
    "fixed_length_utf32": ("<U2", "<U2", "hi", np.array([["a", "bé", "", "xy"]] * 3)),
    "null_terminated_bytes": ("S2", "S2", b"h", np.array([[b"a", b"b", b"", b"zz"]] * 3)),
}
KIND_IDS = list(KINDS)


def _as_list(values):
    return np.asarray(values, dtype=object).ravel().tolist()


def _zarr_values(arr):
    values = arr[...]
    return values.astype(object) if values.dtype.kind == "T" else values


@pytest.mark.parametrize("shards", [None, SHARDS], ids=["plain", "sharded"])
@pytest.mark.parametrize("compressors", ["auto", None], ids=["zstd", "none"])
@pytest.mark.parametrize("kind", KIND_IDS)
def test_zarrkit_reads_zarr_python(tmp_path, kind, compressors, shards):
    zdt, _, fill, values = KINDS[kind]
    z = zarr.create_array(tmp_path / "a", shape=SHAPE, chunks=CHUNKS, shards=shards, dtype=zdt,
                          fill_value=fill, compressors=compressors)
    z[:3] = values  # rows 3-4: missing chunks (or inner chunks) read as the fill value
    a = zarrkit.open(tmp_path / "a", mode="r")
    got = a[...]
    assert got.shape == SHAPE
    assert _as_list(got) == _as_list(_zarr_values(z))
    assert _as_list(got[3:]) == [fill] * 8
    assert a.fill_value == fill
    expected_dtype = {"string": object, "variable_length_bytes": object}.get(kind, z.dtype)
    assert got.dtype == np.dtype(expected_dtype)
    if got.dtype == object:
        assert all(type(v) is type(fill) for v in got.flat)


@pytest.mark.parametrize("shards", [None, SHARDS], ids=["plain", "sharded"])
@pytest.mark.parametrize("compressors", ["default", None], ids=["zstd", "none"])
@pytest.mark.parametrize("kind", KIND_IDS)
def test_zarr_python_reads_zarrkit(tmp_path, kind, compressors, shards):
    _, kdt, fill, values = KINDS[kind]
    a = zarrkit.create(tmp_path / "a", shape=SHAPE, chunks=CHUNKS, shards=shards, dtype=kdt,
                       fill_value=fill, compressors=compressors)
    a[:3] = values
    z = zarr.open_array(tmp_path / "a", mode="r")
    assert _as_list(_zarr_values(z)) == _as_list(a[...])
    assert _as_list(a[3:]) == [fill] * 8
    assert z.fill_value == fill


def test_documents_match_zarr_python(tmp_path):
    """data_type, fill_value and codecs written exactly as zarr-python writes them."""
    for kind, (zdt, kdt, fill, _) in KINDS.items():
        zarr.create_array(tmp_path / f"z{kind}", shape=(4,), chunks=(2,), dtype=zdt,
                          fill_value=fill)
        zarrkit.create(tmp_path / f"k{kind}", shape=(4,), chunks=(2,), dtype=kdt, fill_value=fill)
        zdoc, kdoc = (json.loads((tmp_path / f"{p}{kind}" / "zarr.json").read_text())
                      for p in "zk")
        for member in ("data_type", "fill_value", "codecs"):
            assert kdoc[member] == zdoc[member], (kind, member)
    doc = json.loads((tmp_path / "knull_terminated_bytes" / "zarr.json").read_text())
    assert doc["fill_value"] == "aA=="  # base64 of b"h"


@pytest.mark.parametrize("kind", KIND_IDS)
def test_zarr_python_metadata_survives_rewrites(tmp_path, kind):
    zdt, _, fill, values = KINDS[kind]
    z = zarr.create_array(tmp_path / "a", shape=(4, 4), chunks=(2, 2), dtype=zdt,
                          fill_value=fill, dimension_names=["y", "x"])
    z[:3] = values[:, :4] if values.shape[1] >= 4 else values
    before = json.loads((tmp_path / "a" / "zarr.json").read_text())
    a = zarrkit.open(tmp_path / "a")
    assert a._metadata.to_json() == before
    a.attrs["note"] = "x"
    a.resize((6, 4))
    after = json.loads((tmp_path / "a" / "zarr.json").read_text())
    assert after == {**before, "shape": [6, 4], "attributes": {"note": "x"}}
    z = zarr.open_array(tmp_path / "a", mode="r")
    assert z.shape == (6, 4)
    assert _as_list(_zarr_values(z)) == _as_list(a[...])
    assert _as_list(a[4:]) == [fill] * 8


@pytest.mark.parametrize("dtype, name", [
    (str, "string"), (object, "string"), ("str", "string"), ("string", "string"),
    (np.dtypes.StringDType(), "string"), (bytes, "variable_length_bytes"),
    ("variable_length_bytes", "variable_length_bytes"),
    ("<U3", {"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}}),
    (">U3", {"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}}),
    ("S3", {"name": "null_terminated_bytes", "configuration": {"length_bytes": 3}}),
])
def test_create_maps_numpy_types(tmp_path, dtype, name):
    a = zarrkit.create(tmp_path / "a", shape=(3,), dtype=dtype)
    doc = json.loads((tmp_path / "a" / "zarr.json").read_text())
    assert doc["data_type"] == name
    serializer = doc["codecs"][0]
    if name == "string":
        assert serializer == {"name": "vlen-utf8", "configuration": {}}
        assert a[...].dtype == object and a[0] == ""
    elif name == "variable_length_bytes":
        assert serializer == {"name": "vlen-bytes", "configuration": {}}
        assert a[...].dtype == object and a[0] == b""
    else:
        assert serializer["name"] == "bytes"
        assert a[...].dtype == np.dtype(dtype).newbyteorder("=")


def test_big_endian_fixed_utf32(tmp_path):
    a = zarrkit.create(tmp_path / "a", shape=(3,), chunks=(2,), dtype=">U2",
                       serializer={"name": "bytes", "configuration": {"endian": "big"}},
                       compressors=None)
    a[:] = ["ab", "é", ""]
    assert (tmp_path / "a" / "c" / "0").read_bytes()[:4] == b"\0\0\0a"
    assert zarr.open_array(tmp_path / "a")[...].tolist() == ["ab", "é", ""]


def test_string_values_from_numpy_string_arrays(tmp_path):
    a = zarrkit.create(tmp_path / "a", shape=(3,), chunks=(2,), dtype=str)
    a[:] = np.array(["x", "yy", "zzz"], dtype=np.dtypes.StringDType())
    a[1:] = np.array(["u", "v"])
    assert a[...].tolist() == ["x", "u", "v"]
    assert all(type(v) is str for v in a[...])


@pytest.mark.parametrize("shards", [None, (4,)], ids=["plain", "sharded"])
@pytest.mark.parametrize("kind", ["string", "variable_length_bytes"])
def test_partial_writes_empty_chunks_and_resize(tmp_path, kind, shards):
    _, kdt, fill, _ = KINDS[kind]
    cast = (lambda s: s) if kind == "string" else str.encode
    a = zarrkit.create(tmp_path / "a", shape=(8,), chunks=(2,), shards=shards, dtype=kdt,
                       fill_value=fill)
    a[1] = cast("x")
    a[5:7] = [cast("y"), cast("z")]
    expected = [fill, cast("x"), fill, fill, fill, cast("y"), cast("z"), fill]
    assert a[...].tolist() == expected
    assert _as_list(zarr.open_array(tmp_path / "a")[...]) == expected
    a[:] = fill  # every chunk is the fill value: nothing stored
    assert not (tmp_path / "a" / "c").exists() or not any((tmp_path / "a" / "c").iterdir())
    b = zarrkit.open(tmp_path / "a", write_empty_chunks=True)
    b[0:2] = fill
    assert any((tmp_path / "a" / "c").iterdir())
    b.resize((3,))
    b[2] = cast("w")
    assert b[...].tolist() == [fill, fill, cast("w")]
    assert _as_list(zarr.open_array(tmp_path / "a")[...]) == [fill, fill, cast("w")]


@pytest.mark.parametrize("value, match", [
    ([1, 2], r"vlen-utf8 codec: cannot store 1 \(int\)"),
    ([None, "a"], r"vlen-utf8 codec: cannot store None .*fill value"),
    ([b"a", "b"], r"vlen-utf8 codec: cannot store b'a' \(bytes\)"),
])
def test_wrong_values_in_string_arrays_are_refused(tmp_path, value, match):
    a = zarrkit.create(tmp_path / "a", shape=(4,), chunks=(1,), dtype=str)
    a[2:] = ["keep", "me"]
    with pytest.raises(CodecError, match=match):
        a[:2] = value
    assert a[...].tolist() == ["", "", "keep", "me"]  # nothing written
    assert not (tmp_path / "a" / "c" / "0").exists()


def test_wrong_values_in_bytes_arrays_are_refused(tmp_path):
    a = zarrkit.create(tmp_path / "a", shape=(4,), chunks=(2,), shards=(4,),
                       dtype="variable_length_bytes")
    with pytest.raises(CodecError, match=r"vlen-bytes codec: cannot store 'text' \(str\)"):
        a[1] = "text"
    with pytest.raises(CodecError, match=r"vlen-bytes codec: cannot store 3"):
        a[:] = [b"a", b"b", 3, b"d"]
    assert a[...].tolist() == [b""] * 4


@pytest.mark.parametrize("dtype, fill, match", [
    ("<U2", "abc", "'abc' has 3 characters"), ("<U2", 5, "expected a string.*got 5"),
    ("<U2", b"ab", "expected a string"), ("S2", b"abc", "b'abc' has 3 bytes"),
    ("S2", "ab", "expected bytes.*'ab'"), ("S2", 1, "expected bytes.*got 1"),
    (str, 3, "expected a string for string, got 3"), (str, b"x", "expected a string"),
    ("variable_length_bytes", "x", "expected bytes for variable_length_bytes, got 'x'"),
])
def test_bad_fill_values_are_refused(tmp_path, dtype, fill, match):
    with pytest.raises(DataTypeError, match=match):
        zarrkit.create(tmp_path / "a", shape=(2,), dtype=dtype, fill_value=fill)


def test_fill_value_forms():
    utf32 = DataType.parse("<U2")
    assert utf32.cast_fill_value(np.str_("hi")) == "hi"
    assert utf32.parse_fill_value("hi") == np.str_("hi")
    assert utf32.fill_value_to_json(np.str_("é")) == "é"
    nul = DataType.parse("S2")
    assert nul.parse_fill_value("aGk=") == b"hi"
    assert nul.fill_value_to_json(np.bytes_(b"hi")) == "aGk="
    assert nul.cast_fill_value(np.bytes_(b"h")) == b"h"
    string = DataType.parse("string")
    assert type(string.cast_fill_value(np.str_("q"))) is str
    assert string.fill_value_to_json("q") == "q"
    vlen = DataType.parse("variable_length_bytes")
    assert vlen.parse_fill_value("") == b"" and vlen.parse_fill_value("YWI=") == b"ab"
    assert vlen.fill_value_to_json(b"") == ""
    with pytest.raises(DataTypeError, match="invalid base64 'a!' for variable_length_bytes"):
        vlen.parse_fill_value("a!")
    with pytest.raises(DataTypeError, match="expected base64 text for null_terminated_bytes"):
        nul.parse_fill_value([104, 105])


@pytest.mark.parametrize("data_type, match", [
    ({"name": "fixed_length_utf32", "configuration": {"length_bytes": 7}}, "multiple of 4"),
    ({"name": "fixed_length_utf32"}, "length_bytes"),
    ({"name": "null_terminated_bytes", "configuration": {"length_bytes": 0}}, "length_bytes"),
    ({"name": "null_terminated_bytes", "configuration": {"length_bytes": 2, "x": 1}}, "'x'"),
    ({"name": "string", "configuration": {"x": 1}}, "'string' takes no configuration"),
])
def test_bad_data_type_configurations(data_type, match):
    with pytest.raises(DataTypeError, match=match):
        DataType.from_json(data_type)


@pytest.mark.parametrize("dtype, serializer, match", [
    (str, {"name": "bytes"}, "bytes codec: data type object cannot be encoded.*vlen-utf8"),
    ("float32", {"name": "vlen-utf8"}, "vlen-utf8 codec: encodes only the 'string' data type"),
    (bytes, {"name": "vlen-utf8"}, "vlen-utf8 codec: encodes only the 'string'"),
    (str, {"name": "vlen-bytes"}, "vlen-bytes codec: encodes only the 'variable_length_bytes'"),
    (str, {"name": "vlen-utf8", "configuration": {"x": 1}}, "vlen-utf8 codec: unknown"),
])
def test_codec_and_type_mismatches_are_refused(tmp_path, dtype, serializer, match):
    with pytest.raises(CodecError, match=match):
        zarrkit.create(tmp_path / "a", shape=(2,), dtype=dtype, serializer=serializer)


def test_corrupt_vlen_chunk_is_reported(tmp_path):
    a = zarrkit.create(tmp_path / "a", shape=(4,), chunks=(4,), dtype=str, compressors=None)
    a[:] = ["a", "b", "c", "d"]
    (tmp_path / "a" / "c" / "0").write_bytes(b"\x02\0\0\0\x01\0\0\0a\x01\0\0\0b")
    with pytest.raises(zarrkit.CorruptDataError, match="vlen-utf8 codec: chunk holds 2 values"):
        a[...]


@pytest.mark.parametrize("dtype", ["string", "variable_length_bytes"])
def test_tensorstore_specs_refuse_the_types(tmp_path, dtype):
    """TensorStore 0.1.86's zarr3 driver supports none of these types."""
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "a")},
            "metadata": {"data_type": dtype, "shape": [2]}}
    with pytest.raises(SpecError, match=f"{dtype}.*not supported in TensorStore specs"):
        zarrkit.open(spec, mode="w")

"""More on zarr-python's v3 string and bytes types, with zarr-python 3.1 as the oracle: the
fill value forms it reads, its legacy "bytes" name, and specs of such arrays that reopen."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import DataTypeError
from zarrkit.kvstore import MemoryStore

zarr = pytest.importorskip("zarr")
from zarr.core.dtype import VariableLengthBytes  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def _edit(path, **members):
    doc = json.loads((path / "zarr.json").read_text())
    doc.update(members)
    (path / "zarr.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("fill, text", [(0, "0"), (1.5, "1.5"), (True, "True")])
def test_string_fill_values_given_as_numbers_read_as_text(tmp_path, fill, text):
    """zarr-python reads a number (zarr v2's fill value for strings) as its text."""
    zarr.create_array(tmp_path / "a", shape=(2,), chunks=(1,), dtype=str)
    _edit(tmp_path / "a", fill_value=fill)
    assert zarr.open_array(tmp_path / "a")[...].tolist() == [text] * 2
    a = zarrkit.open(tmp_path / "a")
    assert a.fill_value == text and a[...].tolist() == [text] * 2


def test_creating_with_a_number_fill_value_is_still_refused(tmp_path):
    with pytest.raises(DataTypeError, match="expected a string for string, got 0"):
        zarrkit.create(tmp_path / "a", shape=(2,), dtype=str, fill_value=0)


@pytest.mark.parametrize("fill, value", [("YQ==", b"a"), ([], b""), ([97, 0], b"a\0")])
def test_the_legacy_bytes_name_reads_as_variable_length_bytes(tmp_path, fill, value):
    """zarr-python < 3.1 wrote "bytes" (fill value: a list of byte values); 3.1 reads the name."""
    z = zarr.create_array(tmp_path / "a", shape=(3,), chunks=(2,), dtype=VariableLengthBytes())
    z[:2] = np.array([b"x", b"\0y"], dtype=object)
    _edit(tmp_path / "a", data_type="bytes", fill_value=fill)
    a = zarrkit.open(tmp_path / "a")
    assert a[...].tolist() == [b"x", b"\0y", value]
    a.attrs["k"] = 1  # rewritten as zarr-python 3.1 writes it
    doc = json.loads((tmp_path / "a" / "zarr.json").read_text())
    assert doc["data_type"] == "variable_length_bytes"
    assert zarr.open_array(tmp_path / "a")[...].tolist() == [b"x", b"\0y", value]


def test_bytes_fill_value_lists_must_hold_byte_values(tmp_path):
    zarrkit.create(tmp_path / "a", shape=(2,), dtype=bytes)
    _edit(tmp_path / "a", fill_value=[1, 256])
    with pytest.raises(DataTypeError, match="list of integers in \\[0, 255\\].*\\[1, 256\\]"):
        zarrkit.open(tmp_path / "a")


@pytest.mark.parametrize("dtype, fill, values", [
    (str, "q", ["a", "😀"]), (bytes, b"\0q", [b"a", b""]), ("U2", "é", ["ab", ""]),
    ("S2", b"q", [b"\0a", b"b"])])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_specs_of_text_arrays_reopen(tmp_path, dtype, fill, values, zarr_format):
    """TensorStore specs cannot hold these types: spec() leaves them to the stored metadata."""
    a = zarrkit.create(tmp_path / "a", shape=(3,), chunks=(2,), dtype=dtype, fill_value=fill,
                       zarr_format=zarr_format)
    a[:2] = np.array(values, dtype=a.dtype)
    expected = a[...].tolist()
    for spec in (a.spec(), a.spec().to_json()):
        assert zarrkit.open(spec)[...].tolist() == expected
    assert zarrkit.open(a.spec(transform=None), mode="r")[1:].tolist() == expected[1:]


@pytest.mark.parametrize("dtype, fill", [("U2", "q"), ("S2", b"q"), ("U2", ""), ("S2", b"")])
@pytest.mark.parametrize("shards", [None, (4,)])
def test_fixed_text_chunks_equal_to_the_fill_value_are_not_stored(dtype, fill, shards):
    # The first-element shortcut of is_fill compared a U/S scalar's bytes, which lose their
    # trailing NULs, with the padded fill value: such chunks were always stored.
    store = MemoryStore()
    arr = zarrkit.create(store, shape=(8,), chunks=(2,), shards=shards, dtype=dtype,
                         fill_value=fill)
    arr[:] = fill
    assert [k for k in store.list_prefix("") if k != "zarr.json"] == []
    arr[1] = "ab" if dtype == "U2" else b"ab"
    assert len([k for k in store.list_prefix("") if k != "zarr.json"]) == 1

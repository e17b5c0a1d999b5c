"""Attribute API bug hunt against zarr-python 3.1.6."""

from __future__ import annotations

import json

import pytest

import zarrkit
from zarrkit.errors import MetadataError


def _stored_attributes(path, zarr_format: int) -> dict:
    if zarr_format == 3:
        return json.loads((path / "zarr.json").read_text())["attributes"]
    attrs = path / ".zattrs"
    return json.loads(attrs.read_text()) if attrs.exists() else {}


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("kind", ["array", "group"])
@pytest.mark.parametrize(("value", "name"), [({1: "a", "1": "b"}, "'1'"),
                                             ({True: 1, "true": 2}, "'true'"),
                                             ([{None: 1, "null": 2}], "'null'")])
def test_keys_clashing_as_json_names_are_refused_by_name(tmp_path, zarr_format, kind, value,
                                                         name):
    # json.dumps wrote both keys as one member name: a document every strict reader refuses
    # (it was refused as "array metadata: malformed JSON", naming no attribute).
    path = tmp_path / "n.zarr"
    if kind == "array":
        node = zarrkit.create_array(path, shape=(2,), dtype="i1", zarr_format=zarr_format,
                                    attributes={"keep": 1})
    else:
        node = zarrkit.open_group(path, mode="w", zarr_format=zarr_format,
                                  attributes={"keep": 1})
    with pytest.raises(MetadataError, match=rf"attributes: 'n': keys .* JSON name {name}"):
        node.attrs["n"] = value
    assert node.attrs.asdict() == {"keep": 1}
    assert _stored_attributes(path, zarr_format) == {"keep": 1}


def test_clashing_keys_at_creation_name_the_attribute(tmp_path):
    with pytest.raises(MetadataError, match=r"attributes: 'n': keys None and 'null'"):
        zarrkit.create_array(tmp_path / "a.zarr", shape=(1,), dtype="i1",
                             attributes={"n": {None: 1, "null": 2}})


def test_non_string_nested_keys_without_a_clash_are_written_as_json_names(tmp_path):
    a = zarrkit.create_array(tmp_path / "a.zarr", shape=(1,), dtype="i1")
    a.attrs["n"] = {1: "a", None: "b", 2.5: "c"}
    assert a.attrs["n"] == {"1": "a", "null": "b", "2.5": "c"}
    assert _stored_attributes(tmp_path / "a.zarr", 3) == {"n": {"1": "a", "null": "b",
                                                              "2.5": "c"}}


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_python_reads_zarrkit_attributes_and_back(tmp_path, zarr_format):
    np = pytest.importorskip("numpy")
    zarr = pytest.importorskip("zarr")
    path = tmp_path / "a.zarr"
    a = zarrkit.create_array(path, shape=(1,), dtype="i1", zarr_format=zarr_format)
    a.attrs.update({"\ud800": "\udfff", "big": 2**100, "np": np.arange(2), "t": (1, (2,)),
                    "": None, "f": np.float32(0.5), "b": np.bool_(True)})
    expected = {"\ud800": "\udfff", "big": 2**100, "np": [0, 1], "t": [1, [2]], "": None,
                "f": 0.5, "b": True}
    assert a.attrs == expected
    z = zarr.open_array(str(path), mode="r+", zarr_format=zarr_format)
    assert z.attrs.asdict() == expected
    z.attrs["from_zarr"] = {"u": "ü"}
    del z.attrs["big"]
    expected = {k: v for k, v in expected.items() if k != "big"} | {"from_zarr": {"u": "ü"}}
    assert zarrkit.open_array(path).attrs.asdict() == expected

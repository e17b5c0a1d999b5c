"""metadata.json (strict JSON) and metadata.names (node names and paths)."""

import re

import numpy as np
import pytest

from zarrkit.errors import InvalidNameError, MetadataError
from zarrkit.metadata import json_dumps, json_loads, normalize_path, validate_node_name

# -- json_loads -------------------------------------------------------------------------------


def test_loads_accepts_valid_json_from_bytes_str_and_memoryview():
    doc = {"a": [1, 2.5, None, True], "b": {"c": "é"}}
    raw = '{"a": [1, 2.5, null, true], "b": {"c": "é"}}'
    assert json_loads(raw.encode(), what="k") == doc
    assert json_loads(raw, what="k") == doc
    assert json_loads(memoryview(raw.encode()), what="k") == doc
    assert json_loads(bytearray(raw.encode()), what="k") == doc


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_bare_special_float_literals_read_are_written_back_as_read(literal):
    """zarr-python writes them in attributes: read, and kept in a rewrite; new ones refused."""
    doc = json_loads(f'{{"attributes": {{"x": [{literal}, 1.5]}}}}'.encode(), what="zarr.json")
    value = doc["attributes"]["x"][0]
    assert isinstance(value, float) and str(value) == str(float(literal))
    assert json_dumps(doc).decode().split() == ["{", '"attributes":', "{", '"x":', "[",
                                                f"{literal},", "1.5", "]", "}", "}"]
    with pytest.raises(MetadataError, match="no JSON form"):
        json_dumps({**doc, "y": float(literal)})


@pytest.mark.parametrize("data", [b"{", b"", b'{"a": 1,}', b"{'a': 1}", b"[1] x"])
def test_loads_refuses_malformed_json(data):
    with pytest.raises(MetadataError, match=r"^a/zarr\.json: malformed JSON"):
        json_loads(data, what="a/zarr.json")


def test_loads_refuses_non_utf8():
    with pytest.raises(MetadataError, match=r"^x/zarr\.json: not valid UTF-8"):
        json_loads(b'{"a": "\xff"}', what="x/zarr.json")


def test_loads_ignores_byte_order_mark():
    assert json_loads(b'\xef\xbb\xbf{"a": 1}', what="k") == {"a": 1}


def test_loads_refuses_duplicate_members():
    with pytest.raises(MetadataError, match=r"k: .*duplicate object member 'a'"):
        json_loads(b'{"b": {"a": 1, "a": 2}}', what="k")


def test_loads_refuses_excessive_nesting():
    with pytest.raises(MetadataError, match="^k: "):
        json_loads(b"[" * 100_000 + b"]" * 100_000, what="k")


def test_loads_keeps_big_integers_exact():
    assert json_loads(b"[18446744073709551615, -9223372036854775808]", what="k") == [
        2**64 - 1, -(2**63)]


# -- json_dumps -------------------------------------------------------------------------------


def test_dumps_is_utf8_with_indent_2():
    out = json_dumps({"a": [1], "é": "ü"})
    assert isinstance(out, bytes)
    assert out.decode("utf-8") == '{\n  "a": [\n    1\n  ],\n  "é": "ü"\n}'


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_dumps_refuses_special_floats(value):
    with pytest.raises(MetadataError, match="cannot be written as JSON"):
        json_dumps({"x": [value]})


def test_dumps_refuses_unserializable_objects_naming_what():
    with pytest.raises(MetadataError, match="^a/zarr.json: cannot be written"):
        json_dumps({"x": object()}, what="a/zarr.json")


def test_dumps_writes_numpy_values_as_json():
    out = json_loads(json_dumps({"a": np.int64(3), "b": np.float32(0.5), "c": np.arange(2),
                                 "d": np.bool_(True)}), what="k")
    assert out == {"a": 3, "b": 0.5, "c": [0, 1], "d": True}


def test_dumps_round_trips_lone_surrogates_as_escapes():
    doc = {"s": "a\ud800b"}
    out = json_dumps(doc)
    out.decode("utf-8")  # valid UTF-8
    assert json_loads(out, what="k") == doc


# -- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "foo.bar", "_x", ".a", "a..", "é", "x y", "a_", "_"])
def test_valid_node_names(name):
    assert validate_node_name(name) == name


@pytest.mark.parametrize("name, reason", [
    ("", "empty"), ("a/b", "'/'"), (".", "periods"), ("..", "periods"), ("...", "periods"),
    ("__zarr", "reserved"), ("__", "reserved"), (None, "string"), (3, "string"),
])
def test_invalid_node_names(name, reason):
    with pytest.raises(InvalidNameError, match=reason):
        validate_node_name(name)


@pytest.mark.parametrize("path, expected", [
    ("", ""), ("/", ""), ("a", "a"), ("/a", "a"), ("a/", "a"), ("/a/b/", "a/b"),
    ("a/b/c", "a/b/c"), ("a/.b", "a/.b"),
])
def test_normalize_path(path, expected):
    assert normalize_path(path) == expected


@pytest.mark.parametrize("path", ["a//b", "..", ".", "a/../b", "a/./b", "//a", "a//", "//",
                                  "a/__b", "__a"])
def test_normalize_path_refuses_invalid_segments_naming_the_path(path):
    with pytest.raises(InvalidNameError, match=re.escape(f"invalid node path {path!r}")):
        normalize_path(path)


def test_normalize_path_refuses_non_strings():
    with pytest.raises(InvalidNameError):
        normalize_path(None)  # type: ignore[arg-type]

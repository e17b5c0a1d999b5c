"""metadata.chunk_grid (regular grid) and metadata.chunk_key_encoding (default, v2)."""

import numpy as np
import pytest

from zarrkit.errors import MetadataError
from zarrkit.metadata import ChunkKeyEncoding, RegularChunkGrid

# -- regular chunk grid -----------------------------------------------------------------------


def test_regular_grid_round_trip():
    value = {"name": "regular", "configuration": {"chunk_shape": [2, 5]}}
    grid = RegularChunkGrid.from_json(value, ndim=2)
    assert grid.chunk_shape == (2, 5) and grid.ndim == 2
    assert grid.to_json() == value
    assert RegularChunkGrid.from_json(
        {"name": "regular", "configuration": {"chunk_shape": []}}).chunk_shape == ()


def test_regular_grid_accepts_explicit_must_understand():
    value = {"name": "regular", "configuration": {"chunk_shape": [1]}, "must_understand": True}
    assert RegularChunkGrid.from_json(value).chunk_shape == (1,)


@pytest.mark.parametrize("shape", [[0], [-1], [1.0], [True], ["2"], [None], "2", 2, None,
                                   {"0": 1}])
def test_chunk_shape_must_be_positive_integers(shape):
    with pytest.raises(MetadataError, match=r"^k: chunk_grid\.configuration\.chunk_shape: "):
        RegularChunkGrid.from_json({"name": "regular", "configuration": {"chunk_shape": shape}},
                                   where="k: chunk_grid")


def test_chunk_shape_rank_must_match_the_array():
    with pytest.raises(MetadataError,
                       match=r"chunk_grid\.configuration\.chunk_shape: has 1 dimensions.*has 2"):
        RegularChunkGrid.from_json({"name": "regular", "configuration": {"chunk_shape": [4]}},
                                   ndim=2)


@pytest.mark.parametrize("value, message", [
    ("regular", r"chunk_shape: missing"),
    ({"name": "regular"}, r"chunk_shape: missing"),
    ({"name": "regular", "configuration": {}}, r"chunk_shape: missing"),
    ({"name": "rectilinear", "configuration": {"chunk_shape": [1]}}, "unsupported chunk grid"),
    ({"name": "regular", "configuration": {"chunk_shape": [1], "x": 1}}, r"unexpected member"),
    ({"name": "regular", "configuration": {"chunk_shape": [1]}, "other": 1}, "unexpected member"),
    ({"name": "regular", "configuration": [1]}, r"configuration: expected an object"),
    ({"configuration": {"chunk_shape": [1]}}, r"chunk_grid\.name"),
    (["regular"], "expected a name or an object"),
])
def test_invalid_chunk_grids(value, message):
    with pytest.raises(MetadataError, match=message):
        RegularChunkGrid.from_json(value)


def test_grid_constructor_validates():
    assert RegularChunkGrid((np.int64(3),)).chunk_shape == (3,)
    with pytest.raises(MetadataError, match="chunk_shape"):
        RegularChunkGrid((0,))


@pytest.mark.parametrize("array_shape, chunk_shape, expected", [
    ((10, 200, 3000), (5, 20, 400), (2, 10, 8)),  # the spec's example
    ((30, 30), (16, 16), (2, 2)), ((0, 5), (3, 5), (0, 1)), ((), (), ()), ((1,), (100,), (1,)),
])
def test_grid_shape(array_shape, chunk_shape, expected):
    assert RegularChunkGrid(chunk_shape).grid_shape(array_shape) == expected


def test_grid_shape_rank_mismatch():
    with pytest.raises(MetadataError):
        RegularChunkGrid((1, 2)).grid_shape((3,))


# -- chunk key encodings ----------------------------------------------------------------------


@pytest.mark.parametrize("name, separator, coords, key", [
    ("default", "/", (1, 23, 45), "c/1/23/45"),  # spec examples
    ("default", ".", (1, 23, 45), "c.1.23.45"),
    ("default", "/", (), "c"),
    ("default", ".", (), "c"),
    ("default", "/", (0,), "c/0"),
    ("v2", ".", (1, 23, 45), "1.23.45"),
    ("v2", "/", (1, 23, 45), "1/23/45"),
    ("v2", ".", (), "0"),
    ("v2", "/", (7,), "7"),
])
def test_encode(name, separator, coords, key):
    encoding = ChunkKeyEncoding(name, separator)
    assert encoding.encode(coords) == key
    assert encoding.encode(tuple(np.int64(c) for c in coords)) == key
    assert encoding.decode(key, len(coords)) == coords


@pytest.mark.parametrize("name, separator, key, ndim", [
    ("default", "/", "c/1", 2), ("default", "/", "c/1/x", 2), ("default", "/", "1/2", 2),
    ("default", "/", "c/01", 1), ("default", "/", "c/+1", 1), ("default", "/", "c/-1", 1),
    ("default", "/", "c", 1), ("default", "/", "c/", 1), ("default", "/", "zarr.json", 1),
    ("v2", ".", "1.2", 1), ("v2", ".", "c", 0),
    ("default", "/", "c/١", 1),  # a non-ASCII digit
])
def test_decode_refuses_foreign_keys(name, separator, key, ndim):
    assert ChunkKeyEncoding(name, separator).decode(key, ndim) is None


def test_separator_defaults():
    assert ChunkKeyEncoding().separator == "/"
    assert ChunkKeyEncoding("default").separator == "/"
    assert ChunkKeyEncoding("v2").separator == "."
    assert ChunkKeyEncoding.from_json("v2").separator == "."
    assert ChunkKeyEncoding.from_json({"name": "default"}).separator == "/"
    assert ChunkKeyEncoding.from_json({"name": "v2", "configuration": {}}).separator == "."


@pytest.mark.parametrize("value", [
    "default", "v2", {"name": "default"}, {"name": "v2"},
    {"name": "default", "configuration": {"separator": "."}},
    {"name": "v2", "configuration": {"separator": "/"}},
    {"name": "default", "configuration": {"separator": "/"}, "must_understand": True},
])
def test_json_form_is_preserved(value):
    encoding = ChunkKeyEncoding.from_json(value)
    assert encoding.to_json() == value
    assert encoding == ChunkKeyEncoding(encoding.name, encoding.separator)


def test_constructed_encodings_write_their_configuration():
    assert ChunkKeyEncoding("v2").to_json() == {"name": "v2", "configuration": {"separator": "."}}
    assert ChunkKeyEncoding().to_json() == {"name": "default", "configuration": {"separator": "/"}}


def test_to_json_returns_a_copy():
    encoding = ChunkKeyEncoding.from_json({"name": "v2", "configuration": {"separator": "."}})
    encoding.to_json()["configuration"]["separator"] = "/"
    assert encoding.to_json()["configuration"]["separator"] == "."


@pytest.mark.parametrize("value, message", [
    ({"name": "default", "configuration": {"separator": "-"}}, r"separator: expected"),
    ({"name": "default", "configuration": {"separator": None}}, r"separator: expected"),
    ({"name": "v2", "configuration": {"sep": "."}}, r"unexpected member"),
    ({"name": "other"}, "unsupported chunk key encoding 'other'"),
    ("nope", "unsupported chunk key encoding 'nope'"),
    (3, "expected a name or an object"),
    ({"name": "default", "must_understand": "no"}, "must_understand"),
])
def test_invalid_chunk_key_encodings(value, message):
    with pytest.raises(MetadataError, match=r"^x: chunk_key_encoding.*" + message):
        ChunkKeyEncoding.from_json(value, where="x: chunk_key_encoding")


def test_constructor_validates():
    with pytest.raises(MetadataError):
        ChunkKeyEncoding("other")
    with pytest.raises(MetadataError):
        ChunkKeyEncoding("default", "-")


def test_encodings_are_hashable_values():
    assert len({ChunkKeyEncoding(), ChunkKeyEncoding.from_json("default"),
                ChunkKeyEncoding("v2")}) == 2


def test_encode_accepts_lists_arrays_and_any_rank():
    default, v2 = ChunkKeyEncoding(), ChunkKeyEncoding("v2")
    assert default.encode([4, 5]) == "c/4/5" and default.encode([]) == "c"
    assert default.encode(np.array([3, 4])) == "c/3/4"
    assert default.encode((np.uint64(2**64 - 1),)) == "c/18446744073709551615"
    coords = tuple(range(40))  # beyond the precomputed ranks
    assert default.encode(coords) == "c/" + "/".join(map(str, coords))
    assert v2.encode(list(coords)) == ".".join(map(str, coords))
    assert default.decode(default.encode(coords), 40) == coords

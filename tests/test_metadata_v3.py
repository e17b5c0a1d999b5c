"""metadata.v3: array and group zarr.json documents, validated member by member."""

import copy
import re

import numpy as np
import pytest

from zarrkit.codecs import CodecChain, parse_codec
from zarrkit.errors import CodecError, DataTypeError, MetadataError
from zarrkit.metadata import (
    ArrayMetadataV3,
    ChunkKeyEncoding,
    DataType,
    GroupMetadataV3,
    RegularChunkGrid,
    json_dumps,
    json_loads,
    parse_v3_node,
)

WHERE = "a/b/zarr.json"


def array_doc(**changes):
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [10000, 1000],
        "data_type": "float64",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1000, 100]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "NaN",
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {"foo": 42, "bar": "apples", "baz": [1, 2, 3, 4]},
        "dimension_names": ["rows", "columns"],
    }
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not DROP}


DROP = object()


def parse(doc):
    return ArrayMetadataV3.from_json(doc, where=WHERE)


def refuses(doc, field, error=MetadataError):
    """Parsing fails with `error`, naming the document and `field`."""
    with pytest.raises(error) as info:
        parse(doc)
    assert str(info.value).startswith(f"{WHERE}: {field}"), str(info.value)
    return str(info.value)


# -- the spec's example -----------------------------------------------------------------------


def test_spec_example_parses_and_round_trips():
    doc = array_doc()
    md = parse(doc)
    assert md.shape == (10000, 1000) and md.ndim == 2
    assert md.data_type == DataType.from_json("float64") and md.dtype == np.dtype("float64")
    assert md.chunk_grid == RegularChunkGrid((1000, 100)) and md.chunk_shape == (1000, 100)
    assert md.grid_shape == (10, 10)
    assert md.chunk_key_encoding.encode((1, 0)) == "c/1/0"
    assert np.isnan(md.fill_value) and md.fill_value.dtype == np.float64
    assert md.attributes == {"foo": 42, "bar": "apples", "baz": [1, 2, 3, 4]}
    assert md.dimension_names == ("rows", "columns")
    assert md.extra == {}
    assert md.to_json() == doc
    assert list(md.to_json()) == list(doc)  # key order
    assert parse(json_loads(json_dumps(md.to_json()), what="k")) == md


def test_chunk_spec_and_codec_chain():
    md = parse(array_doc())
    assert md.chunk_spec.shape == (1000, 100)
    assert md.chunk_spec.dtype == np.dtype("float64")
    assert np.isnan(md.chunk_spec.fill_value)
    assert isinstance(md.codec_chain, CodecChain)
    assert md.codec_chain is md.codec_chain  # cached
    assert md.codec_chain.codecs == md.codecs
    data = np.arange(100_000, dtype="float64").reshape(1000, 100)
    assert np.array_equal(md.codec_chain.decode(bytes(md.codec_chain.encode(data))), data)


def test_key_order_and_optional_members():
    md = ArrayMetadataV3.create((4,), "int8", (2,), attributes={"a": 1}, dimension_names=["x"])
    md = md.evolve(extra={"ext": {"must_understand": False, "v": 1}})
    assert list(md.to_json()) == [
        "zarr_format", "node_type", "shape", "data_type", "chunk_grid", "chunk_key_encoding",
        "fill_value", "codecs", "attributes", "dimension_names", "ext"]


# -- required members -------------------------------------------------------------------------


@pytest.mark.parametrize("member", ["shape", "data_type", "chunk_grid", "chunk_key_encoding",
                                    "fill_value", "zarr_format", "node_type"])
def test_missing_required_members(member):  # codecs: read as [bytes] (test_gdal_interop)
    assert "missing" in refuses(array_doc(**{member: DROP}), member)


@pytest.mark.parametrize("value", [2, "3", 3.0, True, None, [3]])
def test_zarr_format_must_be_3(value):
    refuses(array_doc(zarr_format=value), "zarr_format")


@pytest.mark.parametrize("value", ["group", "Array", None, 1, "other"])
def test_node_type_must_be_array(value):
    refuses(array_doc(node_type=value), "node_type")


@pytest.mark.parametrize("doc", [[], "x", None, 3])
def test_document_must_be_an_object(doc):
    with pytest.raises(MetadataError, match=f"^{WHERE}: expected a JSON object"):
        parse(doc)


# -- shape ------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [[], [0], [0, 5], [2**63 - 1]])
def test_valid_shapes(shape):
    chunks = [1] * len(shape)
    md = parse(array_doc(shape=shape, dimension_names=DROP,
                         chunk_grid={"name": "regular", "configuration": {"chunk_shape": chunks}}))
    assert md.shape == tuple(shape)


@pytest.mark.parametrize("shape", [[-1], [1.0], [True], ["1"], [None], 10, "10", None, {"a": 1},
                                   [2**63]])
def test_invalid_shapes(shape):
    refuses(array_doc(shape=shape), "shape")


# -- data_type, chunk_grid, chunk_key_encoding, fill_value ------------------------------------


@pytest.mark.parametrize("data_type", ["float128", {"name": "datetime"}, 5, "r7"])
def test_invalid_data_type(data_type):
    refuses(array_doc(data_type=data_type), "data_type", DataTypeError)


def test_unknown_data_type_cannot_be_skipped_with_must_understand_false():
    refuses(array_doc(data_type={"name": "x", "must_understand": False}), "data_type",
            DataTypeError)


@pytest.mark.parametrize("grid, field", [
    ({"name": "regular", "configuration": {"chunk_shape": [10]}},
     "chunk_grid.configuration.chunk_shape"),
    ({"name": "regular", "configuration": {"chunk_shape": [0, 10]}},
     "chunk_grid.configuration.chunk_shape"),
    ({"name": "rectilinear", "configuration": {"chunk_shapes": [[10], [10]]}}, "chunk_grid"),
    ("regular", "chunk_grid"), (None, "chunk_grid"),
])
def test_invalid_chunk_grid(grid, field):
    refuses(array_doc(chunk_grid=grid), field)


@pytest.mark.parametrize("encoding", [{"name": "v3"}, {"name": "default", "configuration": {
    "separator": ":"}}, None, {"name": "v2", "configuration": {"separator": "/", "x": 1}}])
def test_invalid_chunk_key_encoding(encoding):
    refuses(array_doc(chunk_key_encoding=encoding), "chunk_key_encoding")


@pytest.mark.parametrize("data_type, fill", [
    ("float64", None), ("float64", "nan"), ("int8", 128), ("int8", 1.5), ("bool", 0),
    ("uint8", -1), ("complex64", 1.0), ("r16", [1]), ("float32", "0x7fc0"),
])
def test_invalid_fill_value(data_type, fill):
    refuses(array_doc(data_type=data_type, fill_value=fill), "fill_value", DataTypeError)


# -- codecs -----------------------------------------------------------------------------------


@pytest.mark.parametrize("codecs", [
    None, "bytes", [{"name": "nope"}],  # ([] and [gzip] read as [bytes, ...]: test_gdal_interop)
    [{"name": "bytes"}, {"name": "bytes"}],
    [{"name": "gzip", "configuration": {"level": 1}}, {"name": "bytes"}],
    [{"name": "bytes", "configuration": {"endian": "middle"}}],
    [{"name": "nope", "must_understand": False}, {"name": "bytes"}],
])
def test_invalid_codecs(codecs):
    refuses(array_doc(codecs=codecs), "codecs", CodecError)


def test_codecs_are_evolved():
    md = parse(array_doc(codecs=[{"name": "bytes"}]))  # endian filled in for float64
    assert md.codecs == (parse_codec({"name": "bytes", "configuration": {"endian": "little"}}),)


def test_codec_short_hand_names():
    md = parse(array_doc(data_type="uint8", fill_value=0, codecs=["bytes", "crc32c"]))
    assert [c.name for c in md.codecs] == ["bytes", "crc32c"]


# -- optional members -------------------------------------------------------------------------


@pytest.mark.parametrize("attributes", [[], "x", None, 1, [["a", 1]]])
def test_attributes_must_be_an_object(attributes):
    refuses(array_doc(attributes=attributes), "attributes")


def test_absent_and_empty_attributes_round_trip():
    without = array_doc(attributes=DROP)
    assert parse(without).attributes == {}
    assert parse(without).to_json() == without  # TensorStore omits empty attributes
    empty = array_doc(attributes={})
    assert parse(empty).to_json() == empty  # zarr-python writes "attributes": {}
    assert parse(without) == parse(empty)
    # once attributes are set, they are written
    assert parse(without).evolve(attributes={"a": 1}).to_json()["attributes"] == {"a": 1}


def test_storage_transformers():
    doc = array_doc(storage_transformers=[])
    assert parse(doc).to_json() == doc  # zarr-python writes the empty list
    assert "storage_transformers" not in parse(array_doc()).to_json()
    message = refuses(array_doc(storage_transformers=[{"name": "sharding"}]),
                      "storage_transformers")
    assert "not supported" in message
    refuses(array_doc(storage_transformers={}), "storage_transformers")
    refuses(array_doc(storage_transformers=None), "storage_transformers")


@pytest.mark.parametrize("names", [["x", None], [None, None], ["", "y"], ["x", "x"]])
def test_valid_dimension_names(names):
    md = parse(array_doc(dimension_names=names))
    assert md.dimension_names == tuple(names)
    assert md.to_json()["dimension_names"] == names


def test_absent_or_null_dimension_names():
    assert parse(array_doc(dimension_names=DROP)).dimension_names is None
    assert "dimension_names" not in parse(array_doc(dimension_names=DROP)).to_json()
    assert parse(array_doc(dimension_names=None)).dimension_names is None


@pytest.mark.parametrize("names", [["x"], ["x", "y", "z"], ["x", 1], "xy", [["x"], "y"], {}])
def test_invalid_dimension_names(names):
    refuses(array_doc(dimension_names=names), "dimension_names")


# -- unknown members (extensions) -------------------------------------------------------------


def test_unknown_members_with_must_understand_false_are_kept():
    ext = {"must_understand": False, "configuration": {"a": [1, 2]}}
    doc = array_doc(my_extension=ext)
    md = parse(doc)
    assert md.extra == {"my_extension": ext}
    assert md.to_json() == doc


@pytest.mark.parametrize("value", [{"must_understand": True}, {}, {"must_understand": "false"},
                                   1, "x", None, [{"must_understand": False}]])
def test_unknown_members_are_refused_otherwise(value):
    message = refuses(array_doc(my_extension=value), "my_extension")
    assert "unknown member" in message


def test_extra_cannot_shadow_known_members():
    md = parse(array_doc())
    with pytest.raises(MetadataError, match="extra member 'shape'"):
        md.evolve(extra={"shape": {"must_understand": False}})
    with pytest.raises(MetadataError, match="extra member 'x'"):
        md.evolve(extra={"x": {"must_understand": True}})


# -- every member, many types -----------------------------------------------------------------


@pytest.mark.parametrize("data_type, fill", [
    ("bool", True), ("int4", -8), ("int8", -128), ("int16", 7), ("int32", -1), ("int64",
     -(2**63)), ("uint8", 255), ("uint16", 1), ("uint32", 2**32 - 1), ("uint64", 2**64 - 1),
    ("float16", "0x7e01"), ("bfloat16", "0x7fc1"), ("float32", "-Infinity"), ("float64", -0.0),
    ("complex64", [1.5, "NaN"]), ("complex128", ["0x7ff8000000000001", -2.0]),
    ("r8", [7]), ("r24", [1, 2, 3]),
    ({"name": "raw_bytes", "configuration": {"length_bytes": 2}}, "AQI="),
])
def test_round_trip_for_every_data_type(data_type, fill):
    # endian only applies to multi-byte numbers (evolve drops it otherwise)
    parsed = DataType.from_json(data_type)
    endian_free = parsed.item_size == 1 or parsed.kind == "raw"
    codecs = [{"name": "bytes"}] if endian_free else [
        {"name": "bytes", "configuration": {"endian": "big"}}]
    doc = array_doc(data_type=data_type, fill_value=fill, codecs=codecs)
    md = parse(doc)
    assert md.to_json() == doc
    text = json_dumps(md.to_json())
    again = parse(json_loads(text, what="k"))
    assert again == md
    assert np.asarray(again.fill_value).tobytes() == np.asarray(md.fill_value).tobytes()


def test_error_messages_name_the_document():
    for doc in (array_doc(shape=[-1]), array_doc(fill_value="x"), array_doc(codecs=None)):
        with pytest.raises(MetadataError, match="^" + re.escape(WHERE)):
            parse(doc)


def test_parse_does_not_alias_the_input_document():
    doc = array_doc()
    md = parse(doc)
    doc["attributes"]["foo"] = 0
    doc["chunk_key_encoding"]["configuration"]["separator"] = "."
    assert md.attributes["foo"] == 42
    assert md.chunk_key_encoding.separator == "/"
    out = md.to_json()
    out["attributes"]["new"] = 1
    assert "new" not in md.attributes


# -- create and evolve ------------------------------------------------------------------------


def test_create_defaults():
    md = ArrayMetadataV3.create((10, 20), "float32", (5, 5))
    assert md.to_json() == {
        "zarr_format": 3, "node_type": "array", "shape": [10, 20], "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 5]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0.0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {},
    }
    assert ArrayMetadataV3.create((2,), "bool", (1,)).to_json()["fill_value"] is False
    assert ArrayMetadataV3.create((2,), "r16", (1,)).to_json()["fill_value"] == [0, 0]
    assert ArrayMetadataV3.create((2,), "uint8", (1,)).to_json()["codecs"] == [{"name": "bytes"}]


def test_create_with_options():
    md = ArrayMetadataV3.create(
        [np.int64(4), 6], np.dtype(">i2"), (2, 3), fill_value=-7,
        codecs=[{"name": "transpose", "configuration": {"order": [1, 0]}}, "bytes",
                parse_codec({"name": "gzip", "configuration": {"level": 1}})],
        chunk_key_encoding="v2", attributes={"a": [1]}, dimension_names=["y", None])
    assert md.shape == (4, 6) and md.data_type.name == "int16"
    assert md.fill_value == np.int16(-7)
    assert [c.name for c in md.codecs] == ["transpose", "bytes", "gzip"]
    assert md.chunk_key_encoding == ChunkKeyEncoding("v2", ".")
    assert md.chunk_key_encoding.encode((1, 2)) == "1.2"
    assert md.dimension_names == ("y", None)
    assert parse(md.to_json()) == md
    assert ArrayMetadataV3.create((4,), "int8", (2,), chunk_key_encoding={"name": "v2"}).to_json()[
        "chunk_key_encoding"] == {"name": "v2"}


def test_create_keeps_nan_payload_fill_values():
    snan = np.array(0x7F800001, dtype=np.uint32).view(np.float32)[()]
    md = ArrayMetadataV3.create((4,), "float32", (2,), fill_value=snan)
    assert md.to_json()["fill_value"] == "0x7f800001"


@pytest.mark.parametrize("kwargs, error", [
    ({"shape": (-1,)}, MetadataError), ({"chunk_shape": (0,)}, MetadataError),
    ({"chunk_shape": (1, 1)}, MetadataError), ({"data_type": "f16"}, DataTypeError),
    ({"fill_value": 300}, DataTypeError), ({"codecs": []}, CodecError),
    ({"codecs": [{"name": "nope"}]}, CodecError), ({"chunk_key_encoding": "v3"}, MetadataError),
    ({"dimension_names": ["a", "b"]}, MetadataError), ({"attributes": [1]}, MetadataError),
    ({"shape": ("1",)}, MetadataError),
])
def test_create_validates(kwargs, error):
    args = {"shape": (4,), "data_type": "int8", "chunk_shape": (2,)}
    args.update(kwargs)
    with pytest.raises(error):
        ArrayMetadataV3.create(args.pop("shape"), args.pop("data_type"), args.pop("chunk_shape"),
                               **args)


def test_evolve_rederives_and_revalidates():
    md = ArrayMetadataV3.create((10,), "uint16", (4,), fill_value=3)
    resized = md.evolve(shape=(20,))
    assert resized.shape == (20,) and resized.grid_shape == (5,)
    assert resized.codec_chain.spec.shape == (4,)
    assert md.shape == (10,)
    rechunked = md.evolve(chunk_grid=RegularChunkGrid((5,)))
    assert rechunked.chunk_spec.shape == (5,) and rechunked.codec_chain.spec.shape == (5,)
    retyped = md.evolve(data_type=DataType.from_json("float32"))
    assert retyped.fill_value == np.float32(3.0) and retyped.chunk_spec.dtype == np.float32
    assert md.evolve(attributes={"x": 1}).attributes == {"x": 1}
    with pytest.raises(MetadataError):
        md.evolve(shape=(10, 10))
    with pytest.raises(MetadataError):
        md.evolve(dimension_names=("a", "b"))


def test_evolve_keeps_the_documents_form():
    doc = array_doc(attributes=DROP, storage_transformers=[],
                    chunk_key_encoding={"name": "default"})
    out = parse(doc).evolve(shape=[20000, 1000]).to_json()
    assert out == dict(doc, shape=[20000, 1000])


def test_equality_compares_fill_value_bits():
    a = parse(array_doc())
    assert a == parse(array_doc())  # NaN fill values compare equal
    assert a != parse(array_doc(fill_value="0x7ff8000000000001"))
    assert a != parse(array_doc(fill_value=0.0))
    assert parse(array_doc(fill_value=0.0)) != parse(array_doc(fill_value=-0.0))
    assert a != parse(array_doc(attributes={}))
    assert a != parse(array_doc(shape=[10000, 1001]))


def test_metadata_is_frozen():
    md = parse(array_doc())
    with pytest.raises(AttributeError):
        md.shape = (1, 1)  # type: ignore[misc]


# -- groups -----------------------------------------------------------------------------------


def test_group_round_trip():
    doc = {"zarr_format": 3, "node_type": "group", "attributes": {"spam": "ham", "eggs": 42}}
    md = GroupMetadataV3.from_json(doc, where=WHERE)
    assert md.attributes == {"spam": "ham", "eggs": 42}
    assert md.to_json() == doc
    bare = {"zarr_format": 3, "node_type": "group"}
    assert GroupMetadataV3.from_json(bare, where=WHERE).to_json() == bare
    assert GroupMetadataV3.create().to_json() == {"zarr_format": 3, "node_type": "group",
                                                  "attributes": {}}
    assert GroupMetadataV3.create({"a": 1}).evolve(attributes={"b": 2}).attributes == {"b": 2}


def test_group_extensions():
    consolidated = {"kind": "inline", "must_understand": False, "metadata": {}}
    doc = {"zarr_format": 3, "node_type": "group", "attributes": {},
           "consolidated_metadata": consolidated}
    md = GroupMetadataV3.from_json(doc, where=WHERE)
    assert md.extra == {"consolidated_metadata": consolidated}
    assert md.to_json() == doc
    with pytest.raises(MetadataError, match=f"^{WHERE}: other: unknown member"):
        GroupMetadataV3.from_json(dict(doc, other=1), where=WHERE)


@pytest.mark.parametrize("doc, field", [
    ({"zarr_format": 3, "node_type": "group", "attributes": []}, "attributes"),
    ({"zarr_format": 3, "node_type": "array"}, "node_type"),
    ({"zarr_format": 2, "node_type": "group"}, "zarr_format"),
    ({"node_type": "group"}, "zarr_format"),
    ({"zarr_format": 3}, "node_type"),
    ({"zarr_format": 3, "node_type": "group", "shape": [1]}, "shape"),
])
def test_invalid_groups(doc, field):
    with pytest.raises(MetadataError, match=f"^{WHERE}: {field}"):
        GroupMetadataV3.from_json(doc, where=WHERE)


# -- parse_v3_node ----------------------------------------------------------------------------


def test_parse_v3_node_dispatches_on_node_type():
    assert isinstance(parse_v3_node(array_doc(), where=WHERE), ArrayMetadataV3)
    group = {"zarr_format": 3, "node_type": "group"}
    assert isinstance(parse_v3_node(group, where=WHERE), GroupMetadataV3)


@pytest.mark.parametrize("doc, field", [
    ({"zarr_format": 3, "node_type": "dataset"}, "node_type"),
    ({"zarr_format": 3}, "node_type"),
    ({"zarr_format": 2, "shape": [1]}, "zarr_format"),
    ({"node_type": "group"}, "zarr_format"),
    ([], "expected a JSON object"),
])
def test_parse_v3_node_errors(doc, field):
    with pytest.raises(MetadataError, match=f"^{WHERE}: {field}"):
        parse_v3_node(doc, where=WHERE)


def test_parse_v3_node_does_not_mutate_its_input():
    doc = array_doc(codecs=[{"name": "bytes"}])
    before = copy.deepcopy(doc)
    parse_v3_node(doc, where=WHERE)
    assert doc == before

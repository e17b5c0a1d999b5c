"""Codec JSON parsing: the registry, configuration validation and chain ordering."""

import numpy as np
import pytest

from zarrkit.codecs import (
    BloscCodec,
    BytesCodec,
    ChunkSpec,
    CodecChain,
    Crc32cCodec,
    GzipCodec,
    ShardingCodec,
    TransposeCodec,
    ZstdCodec,
    get_codec_class,
    parse_codec,
    register_codec,
)
from zarrkit.codecs.base import BytesBytesCodec
from zarrkit.errors import CodecError, CorruptDataError

SPEC = ChunkSpec((4, 6), np.dtype("uint16"), np.uint16(0))


def test_every_builtin_is_registered():
    for cls in (BytesCodec, TransposeCodec, GzipCodec, ZstdCodec, BloscCodec, Crc32cCodec, ShardingCodec):
        assert get_codec_class(cls.name) is cls


def test_plain_string_is_name_only():
    assert parse_codec("crc32c", where="codecs[0]") == Crc32cCodec()
    assert parse_codec("bytes", where="x").to_json() == {"name": "bytes"}


def test_unknown_codec_names_it_and_where():
    with pytest.raises(CodecError, match=r"codecs\[2\].*'lzma9'"):
        parse_codec({"name": "lzma9"}, where="codecs[2]")
    with pytest.raises(CodecError, match=r"codecs\[1\].*'nope'"):
        parse_codec("nope", where="codecs[1]")


def test_must_understand_false_cannot_skip_unknown():
    with pytest.raises(CodecError, match="must_understand"):
        parse_codec({"name": "mystery", "must_understand": False}, where="codecs[0]")
    # ...but is accepted on a known codec
    assert parse_codec({"name": "crc32c", "must_understand": False}, where="c") == Crc32cCodec()


@pytest.mark.parametrize("bad", [
    {"name": "crc32c", "extra": 1},
    {"configuration": {}},
    {"name": 3},
    {"name": "gzip", "configuration": [1]},
    {"name": "crc32c", "must_understand": "no"},
    42,
])
def test_malformed_codec_objects(bad):
    with pytest.raises(CodecError, match=r"codecs\[0\]"):
        parse_codec(bad, where="codecs[0]")


@pytest.mark.parametrize("json, field", [
    ({"name": "bytes", "configuration": {"endian": "middle"}}, "endian"),
    ({"name": "bytes", "configuration": {"order": "C"}}, "order"),
    ({"name": "gzip"}, "level"),
    ({"name": "gzip", "configuration": {"level": 10}}, "level"),
    ({"name": "gzip", "configuration": {"level": True}}, "level"),
    ({"name": "gzip", "configuration": {"level": "5"}}, "level"),
    ({"name": "gzip", "configuration": {"level": 1, "foo": 2}}, "foo"),
    ({"name": "zstd", "configuration": {"level": 23}}, "level"),
    ({"name": "zstd", "configuration": {"checksum": 1}}, "checksum"),
    ({"name": "blosc", "configuration": {"clevel": 5}}, "cname"),
    ({"name": "blosc", "configuration": {"cname": "lz5"}}, "cname"),
    ({"name": "blosc", "configuration": {"cname": "lz4", "clevel": -1}}, "clevel"),
    ({"name": "blosc", "configuration": {"cname": "lz4", "shuffle": 1}}, "shuffle"),
    ({"name": "blosc", "configuration": {"cname": "lz4", "typesize": 0}}, "typesize"),
    ({"name": "blosc", "configuration": {"cname": "lz4", "blocksize": -1}}, "blocksize"),
    ({"name": "crc32c", "configuration": {"seed": 1}}, "seed"),
    ({"name": "transpose"}, "order"),
    ({"name": "transpose", "configuration": {"order": [0, 0]}}, "order"),
    ({"name": "transpose", "configuration": {"order": [1, 2]}}, "order"),
    ({"name": "transpose", "configuration": {"order": "X"}}, "order"),
    ({"name": "transpose", "configuration": {"order": 3}}, "order"),
    ({"name": "sharding_indexed", "configuration": {"codecs": ["bytes"], "index_codecs": ["bytes"]}},
     "chunk_shape"),
    ({"name": "sharding_indexed", "configuration": {"chunk_shape": [0], "codecs": ["bytes"],
                                                     "index_codecs": ["bytes"]}}, "chunk_shape"),
    ({"name": "sharding_indexed", "configuration": {"chunk_shape": [2], "index_codecs": ["bytes"]}}, "codecs"),
    ({"name": "sharding_indexed", "configuration": {"chunk_shape": [2], "codecs": ["bytes"]}}, "index_codecs"),
    ({"name": "sharding_indexed", "configuration": {"chunk_shape": [2], "codecs": ["bytes"],
                                                     "index_codecs": ["bytes"], "index_location": "middle"}},
     "index_location"),
])
def test_invalid_config_names_codec_and_field(json, field):
    with pytest.raises(CodecError, match=field) as info:
        parse_codec(json, where="codecs[0]")
    assert json["name"] in str(info.value)
    assert "codecs[0]" in str(info.value)


def test_sharding_index_codecs_must_be_fixed_size():
    with pytest.raises(CodecError, match=r"index_codecs\[1\].*gzip"):
        parse_codec({"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2], "codecs": ["bytes"],
            "index_codecs": ["bytes", {"name": "gzip", "configuration": {"level": 1}}]}}, where="codecs[0]")


def test_nested_errors_carry_the_path():
    with pytest.raises(CodecError, match=r"codecs\[0\].*sharding_indexed\.codecs\[1\].*gzip.*level"):
        parse_codec({"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2], "codecs": ["bytes", {"name": "gzip", "configuration": {"level": 11}}],
            "index_codecs": ["bytes"]}}, where="codecs[0]")


@pytest.mark.parametrize("codecs, position", [
    (["crc32c", "bytes"], r"codecs\[0\]"),
    (["bytes", {"name": "transpose", "configuration": {"order": [1, 0]}}], r"codecs\[1\]"),
    (["bytes", "bytes"], r"codecs\[1\]"),
    ([{"name": "transpose", "configuration": {"order": [1, 0]}}], r"codecs"),
    (["crc32c"], r"codecs\[0\]"),
])
def test_chain_order_errors_name_position(codecs, position):
    with pytest.raises(CodecError, match=position):
        CodecChain.from_json(codecs, SPEC)


def test_chain_needs_a_nonempty_list():
    for bad in ([], None, "bytes"):
        with pytest.raises(CodecError, match="codecs"):
            CodecChain.from_json(bad, SPEC)


def test_evolve_errors_name_position():
    with pytest.raises(CodecError, match=r"codecs\[0\].*transpose"):
        CodecChain.from_json([{"name": "transpose", "configuration": {"order": [2, 1, 0]}}, "bytes"], SPEC)
    with pytest.raises(CodecError, match=r"codecs\[0\].*sharding_indexed.*divide"):
        CodecChain.from_json([{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [3, 3], "codecs": ["bytes"], "index_codecs": ["bytes"]}}], SPEC)
    with pytest.raises(CodecError, match=r"codecs\[0\].*sharding_indexed.*divide"):
        CodecChain.from_json([{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2], "codecs": ["bytes"], "index_codecs": ["bytes"]}}], SPEC)
    with pytest.raises(CodecError, match="bytes codec.*object"):
        CodecChain.from_json(["bytes"], ChunkSpec((2,), np.dtype(object), None))


@pytest.mark.parametrize("json", [
    {"name": "bytes", "configuration": {"endian": "big"}},
    {"name": "bytes"},
    {"name": "transpose", "configuration": {"order": [1, 0]}},
    {"name": "transpose", "configuration": {"order": "F"}},
    {"name": "gzip", "configuration": {"level": 0}},
    {"name": "zstd", "configuration": {"level": -5, "checksum": True}},
    {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 9, "shuffle": "bitshuffle",
                                        "typesize": 4, "blocksize": 256}},
    {"name": "crc32c"},
    {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2, 3], "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": "start"}},
])
def test_to_json_round_trips(json):
    codec = parse_codec(json, where="c")
    assert codec.to_json() == json
    assert parse_codec(codec.to_json(), where="c") == codec
    assert hash(parse_codec(json, where="c")) == hash(codec)


def test_defaults_filled_by_parse():
    assert parse_codec({"name": "zstd"}, where="c").to_json() == {
        "name": "zstd", "configuration": {"level": 0, "checksum": False}}
    assert parse_codec({"name": "blosc", "configuration": {"cname": "lz4"}}, where="c").to_json() == {
        "name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "blocksize": 0}}
    sharding = parse_codec({"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2], "codecs": ["bytes"], "index_codecs": ["bytes"]}}, where="c")
    assert sharding.to_json()["configuration"]["index_location"] == "end"


@pytest.mark.parametrize("dtype, endian", [
    ("uint8", None), ("int8", None), ("bool", None), ("V5", None), ("S4", None),
    ("uint16", "little"), ("float64", "little"), ("complex64", "little"), ("U2", "little"),
])
def test_bytes_evolve_endian(dtype, endian):
    for given in ({"name": "bytes"}, {"name": "bytes", "configuration": {"endian": "little"}}):
        chain = CodecChain.from_json([given], ChunkSpec((2,), np.dtype(dtype), None))
        assert chain.array_bytes.endian == endian
    big = CodecChain.from_json([{"name": "bytes", "configuration": {"endian": "big"}}],
                               ChunkSpec((2,), np.dtype(dtype), None))
    assert big.array_bytes.endian == (endian and "big")


def test_blosc_evolve_fills_typesize_and_shuffle():
    def evolved(dtype, **config):
        chain = CodecChain.from_json(["bytes", {"name": "blosc", "configuration": {"cname": "lz4", **config}}],
                                     ChunkSpec((2,), np.dtype(dtype), None))
        return chain.bytes_bytes[0].to_json()["configuration"]

    assert evolved("float32") == {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}
    assert evolved("uint8")["shuffle"] == "bitshuffle"
    assert evolved("uint8")["typesize"] == 1
    # typesize only matters with shuffling; as TensorStore, do not invent one
    assert evolved("complex128", shuffle="noshuffle") == {
        "cname": "lz4", "clevel": 5, "shuffle": "noshuffle", "blocksize": 0}
    assert evolved("float64", typesize=2)["typesize"] == 2
    assert evolved("V300")["typesize"] == 1


def test_transpose_c_and_f_resolve_to_lists():
    spec = ChunkSpec((2, 3, 4), np.dtype("uint8"), None)
    chain = CodecChain.from_json([{"name": "transpose", "configuration": {"order": "F"}}, "bytes"], spec)
    assert chain.to_json()[0] == {"name": "transpose", "configuration": {"order": [2, 1, 0]}}
    chain = CodecChain.from_json([{"name": "transpose", "configuration": {"order": "C"}}, "bytes"], spec)
    assert chain.to_json()[0]["configuration"]["order"] == [0, 1, 2]


def test_chain_attributes_and_kinds():
    chain = CodecChain.from_json([
        {"name": "transpose", "configuration": {"order": [1, 0]}}, "bytes",
        {"name": "gzip", "configuration": {"level": 1}}, "crc32c"], SPEC)
    assert [c.name for c in chain.array_array] == ["transpose"]
    assert chain.array_bytes.name == "bytes"
    assert [c.name for c in chain.bytes_bytes] == ["gzip", "crc32c"]
    assert [c.name for c in chain.codecs] == ["transpose", "bytes", "gzip", "crc32c"]
    assert chain.spec is SPEC
    assert chain.encoded_size() is None
    assert CodecChain.from_json(["bytes", "crc32c", "crc32c"], SPEC).encoded_size() == 4 * 6 * 2 + 8


def test_from_codecs_accepts_objects():
    chain = CodecChain.from_codecs([TransposeCodec((1, 0)), BytesCodec(), Crc32cCodec()], SPEC)
    assert chain.to_json() == [{"name": "transpose", "configuration": {"order": [1, 0]}},
                               {"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]
    with pytest.raises(CodecError, match="not a codec"):
        CodecChain.from_codecs([BytesCodec(), "crc32c"], SPEC)


def test_constructors_validate():
    with pytest.raises(CodecError, match="level"):
        GzipCodec(12)
    with pytest.raises(CodecError, match="cname"):
        BloscCodec("fast")
    with pytest.raises(CodecError, match="order"):
        TransposeCodec((0, 2))
    with pytest.raises(CodecError, match="endian"):
        BytesCodec("native")


def test_register_custom_codec():
    @register_codec
    class Invert(BytesBytesCodec):
        name = "test-invert"

        @classmethod
        def from_config(cls, config):
            return cls()

        def to_json(self):
            return {"name": self.name}

        def encode(self, data, spec):
            return bytes(b ^ 0xFF for b in bytes(data))

        decode = encode

    chain = CodecChain.from_json(["bytes", "test-invert"], SPEC)
    a = np.arange(24, dtype="uint16").reshape(4, 6)
    assert bytes(chain.encode(a)) == bytes(b ^ 0xFF for b in a.tobytes())
    np.testing.assert_array_equal(chain.decode(chain.encode(a)), a)


def test_foreign_decode_errors_become_corrupt_data():
    @register_codec
    class Broken(BytesBytesCodec):
        name = "test-broken"

        @classmethod
        def from_config(cls, config):
            return cls()

        def to_json(self):
            return {"name": self.name}

        def encode(self, data, spec):
            return data

        def decode(self, data, spec):
            raise RuntimeError("library failure")

    chain = CodecChain.from_json(["bytes", "test-broken"], SPEC)
    with pytest.raises(CorruptDataError, match="library failure"):
        chain.decode(b"\0" * 48)


def test_transpose_accepts_numpy_integers():
    assert TransposeCodec(np.argsort([2, 0, 1])).to_json()["configuration"]["order"] == [1, 2, 0]

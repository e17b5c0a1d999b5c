"""zarr3 specs whose codecs meet the chunk layout, created by zarrkit and by TensorStore.

Each array is created by both libraries in a temporary directory ("file" kvstore) and the
zarr.json and chunk layout compared; where TensorStore refuses, zarrkit must refuse with a
SpecError naming the member.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import zarrkit
from zarrkit.errors import SpecError

ts = pytest.importorskip("tensorstore")

T10 = {"name": "transpose", "configuration": {"order": [1, 0]}}
T01 = {"name": "transpose", "configuration": {"order": [0, 1]}}


def _shard(chunk_shape: list[int] | None = None, **config: Any) -> dict[str, Any]:
    if chunk_shape is not None:
        config["chunk_shape"] = chunk_shape
    return {"name": "sharding_indexed", "configuration": config}


def _case(shape: list[int], codecs: list | None = None, layout: dict | None = None,
          schema_codecs: list | None = None, **metadata: Any) -> dict[str, Any]:
    metadata["shape"] = shape
    if codecs is not None:
        metadata["codecs"] = codecs
    schema: dict[str, Any] = {"chunk_layout": layout or {}}
    if schema_codecs is not None:
        schema["codec"] = {"driver": "zarr3", "codecs": schema_codecs}
    return {"dtype": "uint16", "metadata": metadata, "schema": schema, "create": True}


def _create(lib: str, path: Path, case: dict[str, Any]) -> Any:
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}, **case}
    try:
        store = ts.open(spec).result() if lib == "ts" else zarrkit.open(spec)
    except SpecError as exc:  # before ValueError, its base class
        return "refused", str(exc)
    except ValueError as exc:
        assert lib == "ts", exc
        return "refused"
    return json.loads((path / "zarr.json").read_text()), store.chunk_layout.to_json()


def _check(tmp_path: Path, case: dict[str, Any], refused_naming: str | None = None) -> Any:
    expected = _create("ts", tmp_path / "ts", case)
    actual = _create("zk", tmp_path / "zk", case)
    if expected == "refused":
        assert actual[0] == "refused", actual
        assert refused_naming is not None and refused_naming in actual[1], actual[1]
    else:
        assert refused_naming is None
        assert actual == expected
    return actual


# 1. A sharding codec's chunk_shape does not drive the chunk choice: it must divide the chunks
#    chosen from the layout alone (a hard read chunk shape it contradicts is refused).

SHARDING_CASES = {
    "7x7_not_dividing_1000": (_case([1000, 1000], [_shard([7, 7])]), "metadata.codecs"),
    "aspect_ratios": (_case([1984, 809821], [_shard([8, 8])], {"write_chunk": {
        "aspect_ratio": [0.5, 0], "aspect_ratio_soft_constraint": [3, None]}}), None),
    "aspect_ratios_not_dividing": (_case([1984, 809821], [_shard([6, 9])], {"write_chunk": {
        "aspect_ratio": [0.5, 0], "aspect_ratio_soft_constraint": [3, None]}}),
        "metadata.codecs"),
    "soft_read_shape_guides_write": (_case([1000, 1000], [_shard([8, 8])], {
        "read_chunk": {"shape_soft_constraint": [16, 16]}}), None),
    "read_elements_ignored": (_case([1000, 1000], [_shard([7, 7])], {
        "read_chunk": {"elements": 100}}), "metadata.codecs"),
    "encoded_order": (_case([1000, 2000], [T10, _shard([8, 7])]), "metadata.codecs"),
    "schema_codec": (_case([1000, 1000], schema_codecs=[_shard([7, 7])]), "codec.codecs"),
    "hard_read_conflict": (_case([1000, 1000], [_shard([8, 8])], {
        "read_chunk": {"shape": [16, 16]}}), "metadata.codecs"),
    "nested": (_case([1000, 1000], [_shard(codecs=[_shard([10, 10])])], {
        "read_chunk": {"elements": 900}}), None),
    "too_many_sub_chunks": (_case([2**20, 2**20], [_shard([1, 1])], chunk_grid={
        "name": "regular", "configuration": {"chunk_shape": [2**16, 2**16]}}),
        "metadata.codecs"),
    "sub_chunks_within_limit": (_case([2**40, 2**40], [_shard([2**30, 2**30])], chunk_grid={
        "name": "regular", "configuration": {"chunk_shape": [2**31, 2**31]}}), None),
}


@pytest.mark.parametrize("name", SHARDING_CASES)
def test_sharding_chunk_shape_does_not_choose_chunks(tmp_path: Path, name: str) -> None:
    _check(tmp_path, *SHARDING_CASES[name])


# 2. A soft inner order gives way to metadata codecs that name their array -> bytes codec.

ORDER_CASES = {
    "bytes": (_case([100, 200], ["bytes"], {"inner_order_soft_constraint": [1, 0]}), None),
    "sharded_bytes": (_case([100, 200], [_shard([10, 10], codecs=["bytes"])],
                            {"inner_order_soft_constraint": [1, 0]}), None),
    "transpose_bytes": (_case([100, 200], [T10, "bytes"],
                              {"inner_order_soft_constraint": [0, 1]}), None),
    "with_schema_codec": (_case([100, 200], ["bytes"], {"inner_order_soft_constraint": [1, 0]},
                                schema_codecs=["bytes"]), None),
    "schema_codec_takes_transpose": (_case([100, 200], [_shard()], {
        "inner_order_soft_constraint": [1, 0]}, [_shard([10, 10], codecs=["bytes"])]), None),
    # without an array -> bytes codec the order is not theirs to fix: refused as before
    "gzip": (_case([100, 200], ["gzip"], {"inner_order_soft_constraint": [1, 0]}),
             "metadata.codecs"),
    "hard": (_case([100, 200], ["bytes"], {"inner_order": [1, 0]}), "metadata.codecs"),
}


@pytest.mark.parametrize("name", ORDER_CASES)
def test_soft_inner_order_with_fixed_codecs(tmp_path: Path, name: str) -> None:
    _check(tmp_path, *ORDER_CASES[name])


# 3. Merging a schema's codecs with metadata codecs that shard: the chain with more nested
#    sharding codecs takes the other into its sub-chunks only when it has no array -> array or
#    bytes -> bytes codecs of its own; otherwise they merge level by level.

MERGE_CASES = {
    "transpose_shard+shard": ([T10, _shard([10, 10])], [_shard()], None),
    "transpose_shard+bytes": ([T10, _shard([10, 10])], ["bytes"], "codec.codecs"),
    "transpose_shard+transpose": ([T10, _shard([10, 10])], [T10], None),
    "transpose_shard+other_transpose": ([T10, _shard([10, 10])], [T01], "codec.codecs"),
    "transpose_shard+gzip": ([T10, _shard([10, 10])], ["gzip"], "codec.codecs"),
    "transpose_shard+two_transposes": ([T10, _shard([10, 10])], [T10, T10], "metadata.codecs"),
    "shard+transpose": ([_shard([10, 10])], [T10], None),
    "shard+transpose_shard": ([_shard([10, 10])], [T10, _shard()], "metadata.codecs"),
    "transpose+shard": ([T10], [_shard([10, 10])], "metadata.codecs"),
    "nested+transpose": ([_shard([50, 50], codecs=[_shard([10, 10])])], [T10], None),
}


@pytest.mark.parametrize("name", MERGE_CASES)
def test_schema_codecs_merge_with_sharded_metadata(tmp_path: Path, name: str) -> None:
    codecs, schema_codecs, refused = MERGE_CASES[name]
    _check(tmp_path, _case([100, 200], codecs, schema_codecs=schema_codecs), refused)


def test_schema_codec_merge_matches_tensorstore() -> None:
    """Schema.codec merges (no array created) take the same rule."""
    pairs = [([T10, _shard()], ["bytes"]), ([_shard()], ["bytes"]), ([T10], [T10, T01]),
             ([T10, T10], []), ([_shard(codecs=[_shard()])], [T10]), ([_shard(), "gzip"], [T10]),
             ([_shard(codecs=[T10, _shard()])], [_shard(codecs=[T01])])]
    for a, b in pairs:
        try:
            schema = ts.Schema(codec=ts.CodecSpec({"driver": "zarr3", "codecs": a}))
            schema.update(codec=ts.CodecSpec({"driver": "zarr3", "codecs": b}))
            expected = schema.codec.to_json()["codecs"]
        except ValueError:
            expected = None
        ours = zarrkit.Schema(codec={"driver": "zarr3", "codecs": a})
        try:
            ours.update(codec={"driver": "zarr3", "codecs": b})
        except SpecError:
            assert expected is None, (a, b)
            continue
        assert ours.codec.to_json()["codecs"] == expected, (a, b)

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


# 1. A sharding codec's chunk_shape without sub-chunk codecs does not drive the chunk choice: it
#    must divide the chunks chosen from the layout alone (a hard read chunk shape it contradicts
#    is refused). With sub-chunk codecs it does: see 4.

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


# 4. Sub-chunk codecs given (any, even []): the sharding codecs imply a hard read chunk shape
#    (the innermost chunk_shape reached through given sub-chunk codecs), and the write chunk
#    (shard) is chosen around it as a multiple of it, within the write constraints.

G = {"name": "gzip"}
T021 = {"name": "transpose", "configuration": {"order": [0, 2, 1]}}
T120 = {"name": "transpose", "configuration": {"order": [1, 2, 0]}}


def _grid(chunk_shape: list[int]) -> dict[str, Any]:
    return {"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk_shape}}}


SUB_CODEC_CASES = {
    "7x7_in_100": (_case([100, 100], [_shard([7, 7], codecs=["bytes"])]), None),
    "write_elements": (_case([100, 100], [_shard([7, 7], codecs=["bytes"])], {
        "write_chunk": {"elements": 1000}}), None),
    "beyond_extent": (_case([1000, 1000], [_shard([7, 7], codecs=["bytes"])]), None),
    "gzip_only": (_case([100, 100], [_shard([7, 7], codecs=[G])]), None),
    "empty_codecs": (_case([100, 100], [_shard([7, 7], codecs=[])]), None),
    "inner_transpose": (_case([100, 200], [_shard([7, 5], codecs=[T10, "bytes"])]), None),
    "outer_transpose": (_case([100, 200], [T10, _shard([7, 5], codecs=["bytes"])]), None),
    "soft_write_shape": (_case([100, 100], [_shard([7, 7], codecs=["bytes"])], {
        "write_chunk": {"shape_soft_constraint": [30, 50]}}), None),
    "write_aspect": (_case([100, 1000], [_shard([7, 7], codecs=["bytes"])], {
        "write_chunk": {"aspect_ratio": [1, 4], "elements": 5000}}), None),
    "read_elements_ignored": (_case([100, 100], [_shard([7, 7], codecs=["bytes"])], {
        "read_chunk": {"elements": 10, "shape_soft_constraint": [5, 5]}}), None),
    "rank1": (_case([1000], [_shard([7], codecs=["bytes"])], {
        "write_chunk": {"elements": 100}}), None),
    "rank3": (_case([50, 60, 70], [T021, _shard([7, 3, 4], codecs=["bytes"])], {
        "write_chunk": {"elements": 10000}}), None),
    "soft_inner_order": (_case([100, 200], [_shard([7, 5], codecs=["bytes"])], {
        "inner_order_soft_constraint": [1, 0]}), None),
    "hard_read_same": (_case([100, 100], [_shard([7, 7], codecs=["bytes"])], {
        "read_chunk": {"shape": [7, 7]}}), None),
    "grid_divisible": (_case([100, 100], [_shard([7, 7], codecs=["bytes"])],
                             **_grid([49, 49])), None),
    "nested_given": (_case([100, 200], [_shard(codecs=[_shard([7, 7], codecs=["bytes"])])]),
                     None),
    "nested_transposes": (_case([100, 200], [T10, _shard(codecs=[
        T10, _shard([3, 7], codecs=["bytes"])])]), None),
    # refused as TensorStore refuses them
    "grid_not_divisible": (_case([100, 100], [_shard([7, 7], codecs=["bytes"])],
                                 **_grid([50, 50])), "metadata.codecs"),
    "hard_write_not_divisible": (_case([100, 100], [_shard([7, 7], codecs=["bytes"])], {
        "write_chunk": {"shape": [30, 49]}}), "metadata.codecs"),
    "hard_read_conflict": (_case([100, 100], [_shard([7, 7], codecs=["bytes"])], {
        "read_chunk": {"shape": [10, 10]}}), "metadata.codecs"),
    "schema_codecs_imply_nothing": (_case([100, 100], schema_codecs=[
        _shard([7, 7], codecs=["bytes"])]), "codec.codecs"),
    "inner_level_without_codecs": (_case([100, 200], [T10, _shard([7, 5], codecs=[
        T10, _shard(codecs=["bytes"])])]), "metadata.codecs"),
}


@pytest.mark.parametrize("name", SUB_CODEC_CASES)
def test_sub_chunk_codecs_choose_write_chunk(tmp_path: Path, name: str) -> None:
    _check(tmp_path, *SUB_CODEC_CASES[name])


def test_implied_read_shape_matches_tensorstore_spec() -> None:
    """The read chunk shape codecs imply, as TensorStore's spec reports it before creating."""
    from zarrkit.spec.codec_spec import decoded_read_shape, parse_chain

    chains = [
        [_shard([7, 5], codecs=["bytes"])], [_shard([7, 5], codecs=[])], [_shard([7, 5])],
        [_shard([7, 5], codecs=[T10])], [T10, _shard([7, 5], codecs=[G])], [_shard()],
        [_shard(codecs=["bytes"])], [_shard([50, 50], codecs=[_shard([10, 10])])],
        [_shard([50, 50], codecs=[_shard(codecs=[])])], [_shard(codecs=[_shard(codecs=[])])],
        [_shard(codecs=[T10, _shard([10, 4], codecs=[T10])])],
        [T10, _shard([50, 20], codecs=[T10, _shard([10, 4], codecs=[])])],
    ]
    for codecs in chains:
        for grid in (None, [50, 100]):
            metadata: dict[str, Any] = {"codecs": codecs, "shape": [100, 200],
                                        "data_type": "uint16"}
            if grid is not None:
                metadata.update(_grid(grid))
            spec = ts.Spec({"driver": "zarr3", "kvstore": {"driver": "memory"},
                            "metadata": metadata})
            expected = spec.chunk_layout.read_chunk.shape or (None, None)
            ours = decoded_read_shape(parse_chain(codecs), grid, 2) or (None, None)
            assert ours == tuple(expected), (codecs, grid)


# 5. Nested sharding codecs without a chunk_shape get the chosen read chunk shape (in their own
#    encoded order), not their parent's chunk_shape; where that does not divide the parent's
#    chunk_shape, or contradicts a hard read chunk shape, TensorStore refuses.

L5_20 = {"read_chunk": {"shape_soft_constraint": [5, 20]}}
E100 = {"read_chunk": {"elements": 100}}

NESTED_CASES = {
    "none_given": (_case([100, 200], [_shard(codecs=[_shard()])]), None),
    "none_given_read_elements": (_case([100, 200], [_shard(codecs=[_shard()])], E100), None),
    "none_given_bytes": (_case([100, 200], [_shard(codecs=[_shard(codecs=["bytes"])])], E100),
                         None),
    "three_levels": (_case([100, 200], [_shard(codecs=[_shard(codecs=[_shard()])])], E100),
                     None),
    "outer_given": (_case([100, 200], [_shard([50, 50], codecs=[_shard()])], E100), None),
    "outer_given_hard_read": (_case([100, 200], [_shard([50, 50], codecs=[_shard()])], {
        "read_chunk": {"shape": [50, 50]}}), None),
    "with_grid": (_case([100, 200], [_shard(codecs=[_shard()])], E100, **_grid([50, 100])),
                  None),
    "outer_transpose": (_case([100, 200], [T10, _shard(codecs=[_shard()])], L5_20), None),
    "inner_transpose": (_case([100, 200], [_shard(codecs=[T10, _shard()])], L5_20), None),
    "transposes_everywhere": (_case([100, 200], [T10, _shard(codecs=[
        T10, _shard(codecs=[T10, "bytes"])])], L5_20), None),
    "rank3_transposes": (_case([20, 50, 100], [T120, _shard([10, 20, 4], codecs=[
        T120, _shard()])], {"read_chunk": {"shape_soft_constraint": [2, 5, 10]}}), None),
    # refused as TensorStore refuses them
    "read_not_dividing_outer": (_case([100, 200], [_shard([50, 50], codecs=[_shard()])]),
                                "metadata.codecs"),
    "middle_given_not_dividing": (_case([100, 200], [_shard(codecs=[
        _shard([20, 20], codecs=[_shard()])])], E100), "metadata.codecs"),
    "filled_against_hard_read": (_case([280, 248], [_shard(codecs=[_shard([1, 2])])], {
        "read_chunk": {"shape": [35, 14]}}), "metadata.codecs"),
}


@pytest.mark.parametrize("name", NESTED_CASES)
def test_nested_sharding_fills_chunk_shapes(tmp_path: Path, name: str) -> None:
    _check(tmp_path, *NESTED_CASES[name])

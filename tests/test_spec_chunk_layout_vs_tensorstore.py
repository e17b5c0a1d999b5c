"""Chunk layouts of arrays created from specs, and ChunkLayout.finalize, against TensorStore.

Each array is created by both libraries in a temporary directory ("file" kvstore) and the
zarr.json and reported chunk layout compared; where TensorStore refuses, zarrkit must refuse too.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

import zarrkit
from zarrkit.errors import SpecError, ZarrkitError

ts = pytest.importorskip("tensorstore")

M = 2**62 - 2  # the largest finite index


def _spec(path: Path, metadata: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}
    if metadata:
        spec["metadata"] = metadata
    return spec


def _create(lib: str, path: Path, case: dict[str, Any]) -> Any:
    """(zarr.json, chunk layout JSON), or ("refused", message)."""
    kw: dict[str, Any] = {"create": True, "dtype": case["dtype"], "shape": case["shape"]}
    try:
        if lib == "ts":
            kw["chunk_layout"] = ts.ChunkLayout(json=case["layout"])
            if "codecs" in case:
                kw["codec"] = ts.CodecSpec({"driver": "zarr3", "codecs": case["codecs"]})
            store = ts.open(_spec(path, case.get("metadata")), **kw).result()
        else:
            kw["chunk_layout"] = zarrkit.ChunkLayout.from_json(case["layout"])
            if "codecs" in case:
                kw["codec"] = {"driver": "zarr3", "codecs": case["codecs"]}
            store = zarrkit.open(_spec(path, case.get("metadata")), **kw)
    except (ValueError, ZarrkitError) as exc:
        assert lib == "ts" or isinstance(exc, ZarrkitError)
        return "refused", str(exc)
    return json.loads((path / "zarr.json").read_text()), store.chunk_layout.to_json()


def _compare(tmp_path: Path, case: dict[str, Any], name: str = "a") -> tuple[Any, Any]:
    return _create("ts", tmp_path / f"{name}-ts", case), _create("zk", tmp_path / f"{name}-zk", case)


def _same(expected: Any, actual: Any) -> bool:
    return expected == actual or expected[0] == actual[0] == "refused"


# ---------------------------------------------------------------------------------------------
# Codecs without sharding: the chunk constraints reach the codec grid's aspect ratio too

BYTES = {"codecs": ["bytes"]}


@pytest.mark.parametrize("layout, metadata, refused", [
    ({"write_chunk": {"aspect_ratio": [2]}, "codec_chunk": {"aspect_ratio": [0.5]}}, BYTES, True),
    ({"read_chunk": {"aspect_ratio": [2]}, "codec_chunk": {"aspect_ratio": [0.5]}}, BYTES, True),
    ({"read_chunk": {"aspect_ratio": [2]}, "write_chunk": {"aspect_ratio_soft_constraint": [0.5]},
      "codec_chunk": {"aspect_ratio": [0.5]}}, {"codecs": []}, True),
    # agreeing, soft or unset ratios are fine, as are codecs that allow sharding
    ({"write_chunk": {"aspect_ratio": [2]}, "codec_chunk": {"aspect_ratio": [2]}}, BYTES, False),
    ({"write_chunk": {"aspect_ratio": [2]},
      "codec_chunk": {"aspect_ratio_soft_constraint": [0.5]}}, BYTES, False),
    ({"read_chunk": {"aspect_ratio_soft_constraint": [2]},
      "codec_chunk": {"aspect_ratio": [0.5]}}, BYTES, False),
    ({"write_chunk": {"aspect_ratio": [0]}, "codec_chunk": {"aspect_ratio": [0.5]}}, BYTES, False),
    ({"write_chunk": {"aspect_ratio": [2]}, "codec_chunk": {"aspect_ratio": [0.5]}}, None, False),
    ({"write_chunk": {"aspect_ratio": [2]}, "codec_chunk": {"aspect_ratio": [0.5]}},
     {"codecs": ["sharding_indexed"]}, False),
])
def test_fixed_codecs_check_codec_chunk_aspect_ratio(tmp_path: Path, layout: dict,
                                                     metadata: dict | None, refused: bool) -> None:
    case = {"shape": [100], "dtype": "uint16", "layout": layout, "metadata": metadata}
    expected, actual = _compare(tmp_path, case)
    assert (expected[0] == "refused") == refused
    assert _same(expected, actual), (expected, actual)
    if refused:
        assert "codec_chunk.aspect_ratio" in actual[1]


def test_fixed_codecs_aspect_ratio_conflict_is_a_spec_error() -> None:
    layout = {"write_chunk": {"aspect_ratio": [1, 2]}, "codec_chunk": {"aspect_ratio": [1, 3]}}
    with pytest.raises(SpecError, match="codec_chunk.aspect_ratio.*dimension 1"):
        zarrkit.spec.choose_chunk_shapes([100, 100], layout, sharding=False)
    assert zarrkit.spec.choose_chunk_shapes([100, 100], layout) == ((100, 100), (100, 100))


# ---------------------------------------------------------------------------------------------
# finalize: each grid's first chunk must lie within the finite index range


def _finalize(lib: Any, origin: list[int], **shapes: list[int | None]) -> Any:
    grid = lib.ChunkLayout.Grid
    grids = {name: grid(shape=shape) if lib is ts else grid.from_json({"shape": shape})
             for name, shape in shapes.items()}
    try:
        return lib.ChunkLayout(grid_origin=origin, finalize=True, **grids).to_json()
    except (ValueError, SpecError) as exc:
        assert lib is ts or isinstance(exc, SpecError)
        return "refused"


@pytest.mark.parametrize("origin, shapes", [
    ([M], {}),
    ([M], {"write_chunk": [1]}),
    ([M - 1], {"write_chunk": [1]}),
    ([M - 5], {"write_chunk": [5]}),
    ([M - 5], {"write_chunk": [6], "read_chunk": [3]}),
    ([M - 5], {"write_chunk": [5], "codec_chunk": [6]}),
    ([M - 5], {"read_chunk": [6]}),
    ([-M], {}),
    ([-M], {"write_chunk": [5], "codec_chunk": [5]}),  # the read grid is checked unfilled
    ([-M], {"write_chunk": [5], "read_chunk": [5], "codec_chunk": [5]}),
    ([-M + 1], {}),
    ([1], {"write_chunk": [M]}),
    ([0], {"write_chunk": [M]}),
    ([0, M], {"write_chunk": [5, None]}),
    ([0, M], {"write_chunk": [5, 1]}),
])
def test_finalize_origin_range_matches_tensorstore(origin: list[int], shapes: dict) -> None:
    assert _finalize(zarrkit, origin, **shapes) == _finalize(ts, origin, **shapes)


def test_finalize_out_of_range_names_the_grid() -> None:
    with pytest.raises(SpecError, match="write_chunk.*dimension 1"):
        zarrkit.ChunkLayout(grid_origin=[0, M], write_chunk_shape=[5, 1], finalize=True)


# ---------------------------------------------------------------------------------------------
# A soft write size next to a hard read size: the nearest multiple, unless it passes 2**62 - 2


@pytest.mark.parametrize("extent, soft_write, read", [
    (M, -1, 2**32),  # the nearest multiple would be 2**62
    (M - 1, -1, 2**32 + 1),
    (M, -1, 2**61 + 1),  # ... 2**62 + 2; one read chunk is all that fits
    (10, M, 2**32),
    (M, -1, 3 * 2**40),  # the nearest multiple fits
    (M, -1, 3),  # too many read chunks per write chunk either way
])
def test_soft_write_multiple_stays_finite(tmp_path: Path, extent: int, soft_write: int,
                                          read: int) -> None:
    layout = {"write_chunk": {"shape_soft_constraint": [soft_write]},
              "read_chunk": {"shape": [read]}}
    case = {"shape": [extent], "dtype": "uint8", "layout": layout}
    expected, actual = _compare(tmp_path, case)
    assert _same(expected, actual), (expected, actual)
    write = zarrkit.spec.choose_chunk_shapes([extent], layout, dtype_size=1)[1] \
        if expected[0] != "refused" else None
    assert write is None or write[0] <= M


# ---------------------------------------------------------------------------------------------
# Random layouts (codecs with fixed sub-chunk shapes, soft inner orders next to fixed codecs and
# codec merges are left out: they are decided outside the chunk layout code)

EXTENTS = [0, 1, 2, 3, 7, 31, 97, 101, 1000, 4099, 10**6, 2**40 + 3, M - 1, M]
SIZES = [None, -1, 1, 2, 3, 5, 16, 64, 97, 1000, 2**32 + 1, 2**61 + 1, M]


def _random_layout(rng: random.Random, rank: int) -> dict[str, Any]:
    layout: dict[str, Any] = {}
    if rng.random() < 0.2:
        layout["inner_order"] = rng.sample(range(rank), rank)
    if rng.random() < 0.1:
        layout["grid_origin_soft_constraint"] = [rng.choice([None, 0, 5]) for _ in range(rank)]
    for name in ("chunk", "write_chunk", "read_chunk", "codec_chunk"):
        grid: dict[str, Any] = {}
        for suffix in ("", "_soft_constraint"):
            if rng.random() < 0.25 and name != "codec_chunk":
                grid["shape" + suffix] = [rng.choice(SIZES) for _ in range(rank)]
            if rng.random() < 0.2:
                grid["aspect_ratio" + suffix] = [rng.choice([None, 0, 1, 2, 0.5, 3])
                                                 for _ in range(rank)]
            if rng.random() < 0.2:
                grid["elements" + suffix] = rng.choice([0, 1, 7, 1000, 10**6, 2**40, M])
        if grid:
            layout[name] = grid
    return layout


def _random_case(rng: random.Random) -> dict[str, Any]:
    rank = rng.randrange(1, 5)
    case = {"shape": [rng.choice(EXTENTS) for _ in range(rank)],
            "dtype": rng.choice(["bool", "uint16", "float32", "float64", "complex128"]),
            "layout": _random_layout(rng, rank)}
    roll = rng.random()
    if roll < 0.2:
        case["metadata"] = {"codecs": rng.choice([["bytes"], ["bytes", "crc32c"], []])}
    elif roll < 0.4:
        case["codecs"] = rng.choice([["sharding_indexed"], ["blosc"],
                                     [{"name": "sharding_indexed",
                                       "configuration": {"codecs": ["bytes", "zstd"]}}]])
    if rng.random() < 0.15:
        chunk = [rng.choice([1, 4, 100, 2**20]) for _ in range(rank)]
        case.setdefault("metadata", {})["chunk_grid"] = {
            "name": "regular", "configuration": {"chunk_shape": chunk}}
    return case


def test_random_layouts_match_tensorstore(tmp_path: Path) -> None:
    rng = random.Random(20240611)
    mismatches = []
    for i in range(250):
        case = _random_case(rng)
        expected, actual = _compare(tmp_path, case, str(i))
        if not _same(expected, actual):
            mismatches.append((json.dumps(case), expected, actual))
    assert mismatches == []

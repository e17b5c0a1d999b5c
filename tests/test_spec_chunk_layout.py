"""ChunkLayout constraints, JSON, merging, equality, finalize: checked against TensorStore."""

from __future__ import annotations

import json
import random

import pytest

from zarrkit.errors import SpecError
from zarrkit.spec import ChunkGrid, ChunkLayout

ts = pytest.importorskip("tensorstore")


# ---------------------------------------------------------------------------------------------
# Random layouts (valid and invalid JSON)


def _value(rng: random.Random, kind: str) -> object:
    odd = rng.random() < 0.15  # now and then a value TensorStore must refuse (or accept oddly)
    pools = {
        "shape": ([None, 0, -1, 1, 5, 64, 2**62 - 2, -2, 2**62, 1.0, 2.5, True, "3"]
                  if odd else [None, 0, -1, 1, 4, 7, 100]),
        "aspect": ([None, 0, -1, 1, 0.5, 2.5, float("inf"), "x", True]
                   if odd else [None, 0, 1, 2, 0.5, 3.25]),
        "origin": ([None, 0, -5, 2**62 - 2, 2**62 - 1, -(2**62 - 2), 1.5]
                   if odd else [None, 0, 1, -3, 100]),
    }
    return rng.choice(pools[kind])


def _vector(rng: random.Random, rank: int, kind: str) -> list[object]:
    length = rank if rng.random() > 0.08 else rng.choice([0, 1, 2, 3, 33])
    return [_value(rng, kind) for _ in range(length)]


def _permutation(rng: random.Random, rank: int) -> list[int]:
    order = list(range(rank))
    rng.shuffle(order)
    if order and rng.random() < 0.08:
        order[0] = order[-1]
    return order


def _grid_json(rng: random.Random, rank: int) -> dict[str, object]:
    grid: dict[str, object] = {}
    for member, kind in (("shape", "shape"), ("aspect_ratio", "aspect")):
        for suffix in ("", "_soft_constraint"):
            if rng.random() < 0.35:
                grid[member + suffix] = _vector(rng, rank, kind)
    for suffix in ("", "_soft_constraint"):
        if rng.random() < 0.3:
            grid["elements" + suffix] = rng.choice(
                [0, 1, 1000, 2**62 - 2, 2**62 - 1, -1, None, 5.0, 5.5])
    if rng.random() < 0.03:
        grid["bogus"] = 1
    return grid


def _layout_json(rng: random.Random) -> dict[str, object]:
    rank = rng.randrange(0, 4)
    layout: dict[str, object] = {}
    if rng.random() < 0.2:
        layout["rank"] = rng.choice([rank, rank, rank + 1, -1, 33])
    for name in ("inner_order", "inner_order_soft_constraint"):
        if rng.random() < 0.25:
            layout[name] = _permutation(rng, rank)
    for name in ("grid_origin", "grid_origin_soft_constraint"):
        if rng.random() < 0.25:
            layout[name] = _vector(rng, rank, "origin")
    for name in ("chunk", "write_chunk", "read_chunk", "codec_chunk"):
        if rng.random() < 0.45:
            layout[name] = _grid_json(rng, rank)
    return layout


def _valid_layout_json(rng: random.Random) -> dict[str, object]:
    while True:
        layout = _layout_json(rng)
        try:
            ts.ChunkLayout(json=layout)
        except ValueError:
            continue
        return layout


def _ts_json(layout: dict[str, object]) -> object:
    try:
        return ts.ChunkLayout(json=layout).to_json()
    except ValueError:
        return "refused"


def _our_json(layout: dict[str, object]) -> object:
    try:
        return ChunkLayout.from_json(layout).to_json()
    except SpecError:
        return "refused"


# ---------------------------------------------------------------------------------------------
# JSON


@pytest.mark.parametrize("seed", range(4))
def test_json_round_trip_matches_tensorstore(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        layout = _layout_json(rng)
        assert _our_json(layout) == _ts_json(layout), json.dumps(layout)


def test_json_examples() -> None:
    layout = ChunkLayout.from_json({
        "grid_origin": [1, None, 3], "grid_origin_soft_constraint": [5, 6, 7],
        "write_chunk": {"shape": [-1, 5, None], "shape_soft_constraint": [7, 8, 9]},
        "chunk": {"aspect_ratio": [2, 0, None], "elements": 10}})
    assert layout.to_json() == {
        "codec_chunk": {"aspect_ratio": [2.0, None, None]},
        "grid_origin": [1, None, 3],
        "grid_origin_soft_constraint": [None, 6, None],
        "read_chunk": {"aspect_ratio": [2.0, None, None], "elements": 10},
        "write_chunk": {"aspect_ratio": [2.0, None, None], "elements": 10, "shape": [None, 5, None],
                        "shape_soft_constraint": [-1, None, 9]},
    }
    # The rank is only written when no list implies it.
    assert ChunkLayout.from_json({"write_chunk": {"shape": [None, 0]}}).to_json() == {"rank": 2}
    assert ChunkLayout.from_json({"rank": 0, "chunk": {"elements": 4}}).to_json() == {
        "rank": 0, "read_chunk": {"elements": 4}, "write_chunk": {"elements": 4}}


@pytest.mark.parametrize("layout, member", [
    ({"chunk": {"shape": [30, 40]}, "write_chunk": {"shape": [1, 2]}}, "write_chunk"),
    ({"rank": 2, "inner_order": [2, 1, 0]}, "inner_order"),
    ({"inner_order": [2, 1, 1]}, "inner_order"),
    ({"write_chunk": {"aspect_ratio": [1, 1.5, 2]}, "read_chunk": {"shape": [1, 2]}}, "read_chunk"),
    ({"write_chunk": {"elements": -1}}, "write_chunk"),
    ({"grid_origin": [2**62 - 1]}, "grid_origin"),
    ({"finalize": True}, "finalize"),
])
def test_json_errors_name_the_member(layout: dict[str, object], member: str) -> None:
    with pytest.raises(SpecError, match=member):
        ChunkLayout.from_json(layout)


def test_grid_json_matches_tensorstore() -> None:
    rng = random.Random(7)
    for _ in range(300):
        grid = _grid_json(rng, rng.randrange(0, 4))
        try:
            expected = ts.ChunkLayout.Grid(json=grid).to_json()
        except ValueError:
            expected = "refused"
        try:
            got = ChunkGrid.from_json(grid).to_json()
        except SpecError:
            got = "refused"
        assert got == expected, grid


# ---------------------------------------------------------------------------------------------
# Accessors


def _accessors(layout: object) -> list[object]:
    rank = layout.rank
    values = [None if rank == -1 else rank, layout.inner_order, layout.inner_order_soft_constraint,
              layout.grid_origin, layout.grid_origin_soft_constraint]
    for grid in (layout.write_chunk, layout.read_chunk, layout.codec_chunk):
        values += [grid.rank, grid.shape, grid.shape_soft_constraint, grid.aspect_ratio,
                   grid.aspect_ratio_soft_constraint, grid.elements, grid.elements_soft_constraint,
                   grid.to_json()]
    return values


def test_accessors_match_tensorstore() -> None:
    rng = random.Random(11)
    for _ in range(200):
        layout = _valid_layout_json(rng)
        assert _accessors(ChunkLayout.from_json(layout)) == _accessors(ts.ChunkLayout(json=layout))


def test_unknown_rank_is_none() -> None:
    layout = ChunkLayout()
    assert (layout.rank, layout.ndim, layout.grid_origin, layout.write_chunk.shape) == (
        None, None, None, None)
    assert ChunkLayout(inner_order=[0, 2, 1]).rank == 3


# ---------------------------------------------------------------------------------------------
# Keyword arguments


def _keywords(rng: random.Random, rank: int) -> dict[str, object]:
    def vector(pool: list[object]) -> list[object]:
        length = rank if rng.random() > 0.1 else rng.choice([0, 1, 2, 3])
        return [rng.choice(pool) for _ in range(length)]

    pools = {"shape": [None, None, 0, -1, 1, 4, 7, 100], "aspect_ratio": [None, None, 0, 1, 2, 0.5]}
    kwargs: dict[str, object] = {}
    if rng.random() < 0.2:
        kwargs["rank"] = rng.choice([rank, rank, rank + 1])
    for name in ("inner_order", "inner_order_soft_constraint"):
        if rng.random() < 0.2:
            kwargs[name] = rng.sample(range(rank), rank)
    for name in ("grid_origin", "grid_origin_soft_constraint"):
        if rng.random() < 0.2:
            kwargs[name] = vector([None, 0, 3, -2])
    for prefix in ("chunk", "write_chunk", "read_chunk", "codec_chunk"):
        for member in ("shape", "aspect_ratio", "elements"):
            if prefix == "codec_chunk" and member != "elements":
                continue  # see test_codec_chunk_keywords_reach_the_codec_grid
            for suffix in ("", "_soft_constraint"):
                if rng.random() < 0.12:
                    value = (rng.choice([0, 10, 1000]) if member == "elements"
                             else vector(pools[member]))
                    kwargs[f"{prefix}_{member}{suffix}"] = value
        if rng.random() < 0.1:
            kwargs[prefix] = {"shape": vector(pools["shape"]), "elements_soft_constraint": 5}
    if rng.random() < 0.15:
        kwargs["finalize"] = True
    return kwargs


def _with_grids(kwargs: dict[str, object], grid_type: object) -> dict[str, object]:
    out = dict(kwargs)
    for name in ("chunk", "write_chunk", "read_chunk", "codec_chunk"):
        if name in out:
            out[name] = grid_type(out[name])
    return out


def test_keywords_match_tensorstore() -> None:
    rng = random.Random(3)
    for _ in range(400):
        kwargs = _keywords(rng, rng.randrange(0, 4))
        try:
            expected = ts.ChunkLayout(
                **_with_grids(kwargs, lambda j: ts.ChunkLayout.Grid(json=j))).to_json()
        except ValueError:
            expected = "refused"
        try:
            got = ChunkLayout(**_with_grids(kwargs, ChunkGrid.from_json)).to_json()
        except SpecError:
            got = "refused"
        assert got == expected, kwargs


def test_keyword_order_decides_soft_constraints() -> None:
    # `chunk_*` is applied before `write_chunk_*`, and the first soft value wins.
    layout = ChunkLayout(write_chunk_shape_soft_constraint=[20], chunk_shape_soft_constraint=[10])
    assert layout.write_chunk.shape_soft_constraint == (10,)
    layout = ChunkLayout(write_chunk_shape_soft_constraint=[20],
                         write_chunk=ChunkGrid(shape_soft_constraint=[30]))
    assert layout.write_chunk.shape_soft_constraint == (30,)


def test_codec_chunk_keywords_reach_the_codec_grid() -> None:
    # TensorStore 0.1.86's Python binding routes codec_chunk_shape / _aspect_ratio to the read
    # grid; zarrkit applies them where their name says, as the JSON form does.
    layout = ChunkLayout(codec_chunk_shape=[3, 3], codec_chunk_aspect_ratio_soft_constraint=[1, 2])
    assert layout.to_json() == ts.ChunkLayout(json={
        "codec_chunk": {"shape": [3, 3], "aspect_ratio_soft_constraint": [1, 2]}}).to_json()


def test_unknown_keyword_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        ChunkLayout(write_chunk_size=[1])


# ---------------------------------------------------------------------------------------------
# Merging and equality


def _ts_merge(first: dict[str, object], second: dict[str, object]) -> object:
    try:
        schema = ts.Schema(chunk_layout=ts.ChunkLayout(json=first))
        schema.update(chunk_layout=ts.ChunkLayout(json=second))
    except ValueError:
        return "refused"
    return schema.chunk_layout.to_json()


def _our_merge(first: dict[str, object], second: dict[str, object]) -> object:
    layout = ChunkLayout.from_json(first)
    try:
        layout.update(ChunkLayout.from_json(second))
    except SpecError:
        return "refused"
    return layout.to_json()


@pytest.mark.parametrize("seed", range(3))
def test_update_matches_tensorstore(seed: int) -> None:
    rng = random.Random(100 + seed)
    for _ in range(200):
        first, second = _valid_layout_json(rng), _valid_layout_json(rng)
        assert _our_merge(first, second) == _ts_merge(first, second), (first, second)


@pytest.mark.parametrize("first, second, expected", [
    # soft never overrides soft or hard; hard overrides soft
    ({"write_chunk": {"shape_soft_constraint": [10, 20]}},
     {"write_chunk": {"shape_soft_constraint": [30, 40]}},
     {"write_chunk": {"shape_soft_constraint": [10, 20]}}),
    ({"write_chunk": {"shape_soft_constraint": [10, 20]}}, {"write_chunk": {"shape": [30, None]}},
     {"write_chunk": {"shape": [30, None], "shape_soft_constraint": [None, 20]}}),
    ({"inner_order": [1, 0]}, {"inner_order_soft_constraint": [0, 1]}, {"inner_order": [1, 0]}),
    ({"inner_order_soft_constraint": [1, 0]}, {"inner_order": [0, 1]}, {"inner_order": [0, 1]}),
    ({"write_chunk": {"elements_soft_constraint": 5}}, {"write_chunk": {"elements": 6}},
     {"write_chunk": {"elements": 6}}),
])
def test_update_rules(first: dict, second: dict, expected: dict) -> None:
    assert _our_merge(first, second) == expected


@pytest.mark.parametrize("first, second, member", [
    ({"write_chunk": {"shape": [10, 20]}}, {"write_chunk": {"shape": [10, 40]}}, "write_chunk"),
    ({"inner_order": [1, 0]}, {"inner_order": [0, 1]}, "inner_order"),
    ({"grid_origin": [1, None]}, {"grid_origin": [2, None]}, "grid_origin"),
    ({"read_chunk": {"elements": 5}}, {"read_chunk": {"elements": 6}}, "read_chunk"),
    ({"rank": 2}, {"rank": 3}, "rank"),
])
def test_conflicting_hard_constraints_name_the_member(first: dict, second: dict,
                                                      member: str) -> None:
    layout = ChunkLayout.from_json(first)
    with pytest.raises(SpecError, match=member):
        layout.update(ChunkLayout.from_json(second))
    assert layout.to_json() == ChunkLayout.from_json(first).to_json()  # unchanged


def test_keyword_update_is_atomic() -> None:
    layout = ChunkLayout(write_chunk_shape=[10, 20])
    with pytest.raises(SpecError, match="read_chunk_shape"):
        layout.update(inner_order=[1, 0], read_chunk_shape=[1, 2, 3])
    assert layout == ChunkLayout(write_chunk_shape=[10, 20])


def test_equality_matches_tensorstore() -> None:
    rng = random.Random(5)
    compared = 0
    while compared < 300:
        first = _valid_layout_json(rng)
        second = first if rng.random() < 0.3 else _valid_layout_json(rng)
        ours = ChunkLayout.from_json(first), ChunkLayout.from_json(second)
        # TensorStore's == ignores the rank of otherwise empty layouts; compare like with like.
        if ours[0].rank != ours[1].rank or not ours[0].rank:
            continue
        compared += 1
        expected = ts.ChunkLayout(json=first) == ts.ChunkLayout(json=second)
        assert (ours[0] == ours[1]) == expected, (first, second)


def test_equality_examples() -> None:
    assert ChunkLayout(chunk_shape=[1, 2]) == ChunkLayout(write_chunk_shape=[1, 2],
                                                          read_chunk_shape=[1, 2])
    assert ChunkLayout(write_chunk_shape=[5, None]) == ChunkLayout(write_chunk_shape=[5, 0])
    assert ChunkLayout(inner_order_soft_constraint=[1, 0]) != ChunkLayout(inner_order=[1, 0])
    assert ChunkGrid(shape=[5, None]) == ChunkGrid(shape=[5, 0], rank=2)


# ---------------------------------------------------------------------------------------------
# finalize


@pytest.mark.parametrize("kwargs", [
    {"write_chunk_shape": [10, 20], "read_chunk_shape": [5, None], "grid_origin": [0, 0]},
    {"write_chunk_shape": [10, 20], "read_chunk_elements": 5, "write_chunk_aspect_ratio": [1, 2],
     "read_chunk_shape_soft_constraint": [4, 4], "grid_origin": [0, 0],
     "inner_order_soft_constraint": [1, 0]},
    {"write_chunk_shape": [10, -1], "grid_origin": [0, 0]},
    {"grid_origin": [0, 0], "codec_chunk": {"shape": [3, 3], "elements": 4}},
    {"rank": 0},
    {"write_chunk_shape": [10, 20], "read_chunk_shape": [3, None], "grid_origin": [0, 0]},
    {"write_chunk_shape": [10, 20]},
    {"grid_origin": [0, None], "grid_origin_soft_constraint": [0, 0]},
    {},
])
def test_finalize_matches_tensorstore(kwargs: dict[str, object]) -> None:
    try:
        expected = ts.ChunkLayout(
            **_with_grids(kwargs, lambda j: ts.ChunkLayout.Grid(json=j)), finalize=True).to_json()
    except ValueError:
        expected = "refused"
    layout = ChunkLayout(**_with_grids(kwargs, ChunkGrid.from_json))
    try:
        layout.finalize()
        got = layout.to_json()
    except SpecError:
        got = "refused"
    assert got == expected

"""choose_chunk_shapes: the chunk shapes a new zarr3 array gets, checked against TensorStore."""

from __future__ import annotations

import json
import random

import pytest

from zarrkit.errors import SpecError
from zarrkit.spec import ChunkLayout, choose_chunk_shapes, effective_chunk_layout, transpose_order

ts = pytest.importorskip("tensorstore")

M = 2**62 - 2  # the largest extent and chunk size TensorStore accepts


def oracle(shape: list[int], layout: dict | None = None, metadata: dict | None = None,
           dtype: object = None) -> object:
    """TensorStore's (read, write) chunk shapes for a new zarr3 array, or 'refused'."""
    spec = {"driver": "zarr3", "kvstore": {"driver": "memory"}}
    if metadata:
        spec["metadata"] = metadata
    try:
        store = ts.open(spec, create=True, dtype=dtype or ts.uint16, shape=shape,
                        chunk_layout=ts.ChunkLayout(json=layout or {})).result()
    except ValueError:
        return "refused"
    layout_ = store.chunk_layout  # a rank-0 grid reports no shape at all
    return tuple(layout_.read_chunk.shape or ()), tuple(layout_.write_chunk.shape or ())


def ours(shape: list[int], layout: dict | None = None, **kwargs: object) -> object:
    kwargs.setdefault("dtype_size", 2)
    try:
        return choose_chunk_shapes(shape, layout, **kwargs)
    except SpecError:
        return "refused"


# ---------------------------------------------------------------------------------------------
# The documented examples


def test_unconstrained_example() -> None:
    assert choose_chunk_shapes([1000, 2000, 3000]) == ((101, 101, 101), (101, 101, 101))


def test_separate_read_and_write_constraints_example() -> None:
    layout = ChunkLayout(chunk_aspect_ratio=[2, 1, 1], read_chunk_elements=2_000_000,
                         write_chunk_elements=1_000_000_000)
    assert choose_chunk_shapes([1000, 2000, 3000], layout) == (
        (200, 100, 100), (1000, 1000, 1000))


def test_explicit_chunk_shapes_example() -> None:
    layout = ChunkLayout(read_chunk_shape=[64, 64, 64], write_chunk_shape=[512, 512, 512])
    assert choose_chunk_shapes([1000, 2000, 3000], layout) == ((64, 64, 64), (512, 512, 512))


def test_examples_agree_with_tensorstore() -> None:
    for layout in ({}, {"chunk": {"aspect_ratio": [2, 1, 1]}, "read_chunk": {"elements": 2000000},
                        "write_chunk": {"elements": 1000000000}},
                   {"read_chunk": {"shape": [64, 64, 64]},
                    "write_chunk": {"shape": [512, 512, 512]}}):
        assert ours([1000, 2000, 3000], layout) == oracle([1000, 2000, 3000], layout)


# ---------------------------------------------------------------------------------------------
# Randomised comparison with TensorStore


def _extent(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.1:
        return rng.choice([0, 1])
    if roll < 0.2:
        return rng.randrange(2, 10)
    if roll < 0.7:
        return rng.randrange(10, 5000)
    if roll < 0.9:
        return rng.randrange(5000, 10**7)
    return rng.choice([rng.randrange(10**7, 2**40), M])


def _chunk(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.05:
        return -1
    if roll < 0.5:
        return rng.randrange(1, 100)
    if roll < 0.9:
        return rng.randrange(100, 5000)
    return rng.randrange(5000, 10**6)


def _elements(rng: random.Random) -> int:
    return rng.choice([rng.randrange(0, 100), rng.randrange(100, 10**5),
                       rng.randrange(10**5, 10**8), 10**9, rng.randrange(10**9, M)])


# Power-of-two aspect ratios here; test_arbitrary_aspect_ratios_match_tensorstore covers others.
ASPECTS = [0.25, 0.5, 1, 2, 4, 8]


def _grid(rng: random.Random, rank: int) -> dict[str, object]:
    grid: dict[str, object] = {}
    for member, draw in (("shape", _chunk), ("aspect_ratio", lambda r: r.choice(ASPECTS))):
        for suffix in ("", "_soft_constraint"):
            if rng.random() < 0.25:
                grid[member + suffix] = [None if rng.random() < 0.4 else draw(rng)
                                         for _ in range(rank)]
    for suffix in ("", "_soft_constraint"):
        if rng.random() < 0.3:
            grid["elements" + suffix] = _elements(rng)
    return grid


def _case(rng: random.Random) -> tuple[list[int], dict[str, object]]:
    while True:
        rank = rng.randrange(1, 5)
        layout = {name: grid for name in ("chunk", "write_chunk", "read_chunk")
                  if rng.random() < 0.6 and (grid := _grid(rng, rank))}
        try:
            ts.ChunkLayout(json=layout)
        except ValueError:
            continue  # invalid layouts are test_spec_chunk_layout.py's business
        return [_extent(rng) for _ in range(rank)], layout


@pytest.mark.parametrize("seed", range(8))
def test_random_layouts_match_tensorstore(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        shape, layout = _case(rng)
        assert ours(shape, layout) == oracle(shape, layout), (shape, json.dumps(layout))


def test_random_layouts_without_sharding_match_tensorstore() -> None:
    # A fixed codec chain without sharding_indexed forces read chunk == write chunk.
    rng = random.Random(42)
    for _ in range(60):
        shape, layout = _case(rng)
        expected = oracle(shape, layout, metadata={"codecs": [{"name": "bytes"}]})
        assert ours(shape, layout, sharding=False) == expected, (shape, json.dumps(layout))


def _aspect(rng: random.Random) -> float:
    roll = rng.random()
    if roll < 0.3:
        return rng.randrange(1, 20)  # integers, mostly not powers of two
    if roll < 0.8:
        return round(rng.uniform(0.1, 12), rng.choice([1, 2, 3]))  # short decimals
    return rng.uniform(0.01, 100)


def _aspect_case(rng: random.Random) -> tuple[list[int], dict[str, object]]:
    rank = rng.randrange(1, 4)
    shape = [rng.choice([G, rng.randrange(0, 3000), rng.randrange(1, 10**7), M])
             for _ in range(rank)]
    elements = rng.choice([rng.randrange(0, 100), rng.randrange(100, 10**5),
                           rng.randrange(10**5, 10**9), rng.randrange(10**9, M)])
    chunk = {"aspect_ratio": [_aspect(rng) for _ in range(rank)], "elements": elements}
    if rng.random() < 0.3:  # some sizes fixed, the others grow around them
        chunk["shape"] = [rng.choice([None, None, rng.randrange(1, 50)]) for _ in range(rank)]
    return shape, {"chunk": chunk}


def test_arbitrary_aspect_ratios_match_tensorstore() -> None:
    """Non-power-of-two aspect ratios, where TensorStore's search can pass over a fitting chunk."""
    rng = random.Random(11)
    mismatches = []
    for _ in range(1500):
        shape, layout = _aspect_case(rng)
        expected = oracle(shape, layout)
        if ours(shape, layout) != expected:
            mismatches.append((shape, json.dumps(layout), expected))
    assert mismatches == []


def test_arbitrary_aspect_ratios_with_read_and_write_constraints_match_tensorstore() -> None:
    rng = random.Random(12)
    mismatches = []
    for _ in range(400):
        rank = rng.randrange(1, 4)
        layout = {}
        for name in ("read_chunk", "write_chunk"):
            grid: dict[str, object] = {"aspect_ratio": [_aspect(rng) for _ in range(rank)]}
            if rng.random() < 0.5:
                grid["shape"] = [None if rng.random() < 0.5 else _chunk(rng) for _ in range(rank)]
            if rng.random() < 0.7:
                grid["elements"] = _elements(rng)
            layout[name] = grid
        try:
            ts.ChunkLayout(json=layout)
        except ValueError:
            continue
        shape = [_extent(rng) for _ in range(rank)]
        expected = oracle(shape, layout)
        if ours(shape, layout) != expected:
            mismatches.append((shape, json.dumps(layout), expected))
    assert mismatches == []


# Measured TensorStore choices that rule out simple models of its search. Sizes are floor, not
# round (10 elements: [2, 5], unreachable by rounding), and the result depends on the search
# bounds (the extent of dimension 0 below), not only on which chunks fit.
G = 10**9  # an extent far beyond the chunk sizes
ASPECT_17 = {"aspect_ratio": [1, 1.7]}


@pytest.mark.parametrize("shape, elements, expected", [
    ([G, G], 10, (2, 5)),
    ([G, G], 11, (2, 4)),  # [2, 5] fits, but only for factors in [2.94, 3): passed over
    ([G, G], 12, (2, 5)),
    ([G, G], 14, (2, 4)),
    ([78, G], 127, (8, 14)),
    ([79, G], 127, (8, 15)),
])
def test_non_power_of_two_aspect_examples(shape: list[int], elements: int,
                                          expected: tuple) -> None:
    layout = {"chunk": {**ASPECT_17, "elements": elements}}
    assert oracle(shape, layout)[0] == expected
    assert ours(shape, layout)[0] == expected


# ---------------------------------------------------------------------------------------------
# The rules, one at a time (each also checked against TensorStore)

B = 10**9


@pytest.mark.parametrize("shape, layout, expected", [
    # 2**20 elements by default, grown evenly and clamped to the array
    ([B], {}, ((1048576,), (1048576,))),
    ([B, B], {}, ((1024, 1024), (1024, 1024))),
    ([1025, 1025], {}, ((1024, 1024), (1024, 1024))),
    ([0, B], {"write_chunk": {"elements": 10**10}}, ((1, 1048576), (1, 1000341504))),
    ([0, 0], {}, ((1, 1), (1, 1))),
    ([], {"read_chunk": {"elements": 5}}, ((), ())),
    # the largest chunk within the budget (not the closest to it)
    ([B, B], {"chunk": {"elements": 1000, "aspect_ratio": [1, 2]}}, ((22, 45), (22, 45))),
    ([B, B], {"chunk": {"elements": 0}}, ((1, 1), (1, 1))),
    # the read chunk is chosen first; the write chunk is a whole number of read chunks
    ([B, B], {"read_chunk": {"elements": 1000}}, ((31, 31), (1023, 1023))),
    ([B, B], {"write_chunk": {"elements": 1000}}, ((1024, 1024), (1024, 1024))),
    ([B, B], {"read_chunk": {"shape": [30, 20]}}, ((30, 20), (1020, 1020))),
    # a write chunk is at most the nearest multiple of the read chunk to the extent (halves down)
    ([15, B], {"read_chunk": {"shape": [10, None]}, "write_chunk": {"elements": 10**12}},
     ((10, 104857), (10, 1000021209))),
    ([16, B], {"read_chunk": {"shape": [10, None]}, "write_chunk": {"elements": 10**12}},
     ((10, 104857), (20, 1000021209))),
    # a soft write size next to a hard read size moves to the nearest multiple (halves down)
    ([B], {"read_chunk": {"shape": [10]}, "write_chunk": {"shape_soft_constraint": [15]}},
     ((10,), (10,))),
    ([B], {"read_chunk": {"shape": [7]}, "write_chunk": {"shape_soft_constraint": [11]}},
     ((7,), (14,))),
    ([B], {"read_chunk": {"shape": [7]}, "write_chunk": {"shape_soft_constraint": [-1]}},
     ((7,), (1000000001,))),
    # a read size next to a fixed write size snaps to the nearest divisor (ties go down)
    ([B], {"read_chunk": {"shape_soft_constraint": [9]}, "write_chunk": {"shape": [12]}},
     ((6,), (12,))),
    ([B], {"read_chunk": {"shape_soft_constraint": [10]}, "write_chunk": {"shape": [12]}},
     ((12,), (12,))),
    ([B, B], {"read_chunk": {"shape_soft_constraint": [31, 31]},
              "write_chunk": {"shape": [100, 100]}}, ((25, 25), (100, 100))),
    ([B, B], {"read_chunk": {"elements": 10**4}, "write_chunk": {"shape": [250, None]}},
     ((50, 87), (250, 4176))),
    ([100, B], {"write_chunk": {"shape": [250, None]}}, ((125, 8388), (250, 8388))),
    # ... but only within a million of the preferred size; beyond that the whole write size
    ([M], {"read_chunk": {"shape_soft_constraint": [2**40 - 999999]},
           "write_chunk": {"shape": [2**61]}}, ((2**40,), (2**61,))),
    ([M], {"read_chunk": {"shape_soft_constraint": [2**40 - 10**6]},
           "write_chunk": {"shape": [2**61]}}, ((2**61,), (2**61,))),
    # soft shapes: -1 is the whole dimension; soft read sizes are not clamped to the array
    ([100, B], {"read_chunk": {"shape_soft_constraint": [300, None]}}, ((300, 3495), (300, 3495))),
    ([0, 5], {"read_chunk": {"shape_soft_constraint": [-1, None]}}, ((1, 5), (1, 5))),
    ([100, B], {"write_chunk": {"shape_soft_constraint": [300, None]}},
     ((100, 10485), (300, 10485))),
    # huge sizes follow TensorStore's double-precision arithmetic: 2**62 - 2 rounds up to 2**62
    # (over budget), 2**53 + 3 rounds up to 2**53 + 4 (past the end of the array)
    ([M], {"read_chunk": {"elements": M}}, ((2**62 - 512,), (2**62 - 512,))),
    ([2**53 + 3], {"read_chunk": {"elements": 2**60}}, ((2**53 + 4,), (2**53 + 4,))),
    ([M, M], {"chunk": {"elements": M}}, ((2**31 - 1, 2**31 - 1), (2**31 - 1, 2**31 - 1))),
    # the search runs on the factor of the fastest growing size (aspect ratios divided by the
    # largest), which rounds differently near 2**62
    ([M], {"chunk": {"aspect_ratio": [9.555], "elements": 3134895801477310032}},
     ((3134895801477309952,), (3134895801477309952,))),
    # each scaled size is clamped to the element budget before snapping: 24 would snap to 37,
    # but min(24, 18) snaps to 2
    ([2426, 1015, 3008], {"chunk": {"elements": 18},
                          "write_chunk": {"shape": [47, 2157, 74]},
                          "read_chunk": {"aspect_ratio": [1, 1, 8]}}, ((1, 3, 2), (47, 2157, 74))),
])
def test_rules(shape: list[int], layout: dict, expected: tuple) -> None:
    assert ours(shape, layout) == expected
    assert oracle(shape, layout) == expected


@pytest.mark.parametrize("shape, layout, dtype_size, message", [
    ([B, B], {"read_chunk": {"shape": [31, None]}, "write_chunk": {"shape": [100, 50]}}, 2,
     "dimension 0"),
    ([B, B], {"grid_origin": [1, 0]}, 2, "grid_origin"),
    ([B, B], {"codec_chunk": {"shape": [5, 5]}}, 2, "codec_chunk"),
    ([B, B], {"rank": 3}, 2, "rank"),
    ([M], {"read_chunk": {"shape": [1]}, "write_chunk": {"shape": [2**30 + 1]}}, 2,
     "1073741825 read chunks"),
    ([M, M], {"chunk": {"shape": [2**31, 2**31]}}, 2, "too large"),
    ([M, M], {"chunk": {"shape": [2**31, 2**29]}}, 8, "too large"),
])
def test_contradictions_are_refused(shape: list[int], layout: dict, dtype_size: int,
                                    message: str) -> None:
    with pytest.raises(SpecError, match=message):
        choose_chunk_shapes(shape, layout, dtype_size=dtype_size)
    dtype = {2: ts.uint16, 8: ts.float64}[dtype_size]
    assert oracle(shape, layout, dtype=dtype) == "refused"


def test_shard_limit_boundary() -> None:
    layout = {"read_chunk": {"shape": [1]}, "write_chunk": {"shape": [2**30]}}
    assert ours([M], layout) == oracle([M], layout) == ((1,), (2**30,))


def test_chunk_bytes_limit_depends_on_the_data_type() -> None:
    layout = {"chunk": {"shape": [2**31, 2**30]}}
    assert choose_chunk_shapes([M, M], layout, dtype_size=1) == ((2**31, 2**30),) * 2
    assert oracle([M, M], layout, dtype=ts.uint8) == ((2**31, 2**30),) * 2
    assert ours([M, M], layout, dtype_size=8) == oracle([M, M], layout, dtype=ts.float64)


def test_data_type_does_not_change_the_choice() -> None:
    layout = {"read_chunk": {"elements": 1000}}
    for dtype in (ts.bool, ts.uint8, ts.float64, ts.complex128):
        assert oracle([B, B], layout, dtype=dtype) == choose_chunk_shapes([B, B], layout)


# ---------------------------------------------------------------------------------------------
# metadata.chunk_grid together with chunk layout constraints


@pytest.mark.parametrize("layout", [
    {},
    {"write_chunk": {"shape": [100, 200]}},
    {"write_chunk": {"shape": [100, 300]}},
    {"chunk": {"shape": [100, 100]}},
    {"read_chunk": {"shape": [50, 100]}},
    {"read_chunk": {"shape": [100, 300]}},
    {"read_chunk": {"elements": 1000}},
    {"read_chunk": {"shape_soft_constraint": [30, 30]}},
    {"write_chunk": {"shape_soft_constraint": [10, 10], "elements": 10}},
])
def test_metadata_chunk_shape_is_a_hard_write_shape(layout: dict) -> None:
    metadata = {"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [100, 200]}}}
    expected = oracle([B, B], layout, metadata=metadata)
    assert ours([B, B], layout, metadata_chunk_shape=[100, 200]) == expected


def test_metadata_chunk_shape_conflict_names_the_write_chunk() -> None:
    with pytest.raises(SpecError, match="write_chunk"):
        choose_chunk_shapes([B, B], {"write_chunk": {"shape": [100, 300]}},
                            metadata_chunk_shape=[100, 200])


def test_without_sharding_read_constraints_join_the_write_grid() -> None:
    with pytest.raises(SpecError, match="write_chunk"):
        choose_chunk_shapes([B, B], {"read_chunk": {"elements": 1000},
                                     "write_chunk": {"elements": 10**6}}, sharding=False)
    assert choose_chunk_shapes([B, B], {"read_chunk": {"elements": 1000}}, sharding=False) == (
        (31, 31), (31, 31))


# ---------------------------------------------------------------------------------------------
# inner_order and the layout a new array reports


def _transpose_in(codecs: list[dict]) -> tuple[int, ...] | None:
    for codec in codecs:
        if codec["name"] == "transpose":
            return tuple(codec["configuration"]["order"])
        if codec["name"] == "sharding_indexed":
            found = _transpose_in(codec["configuration"]["codecs"])
            if found:
                return found
    return None


def test_effective_layout_and_transpose_match_tensorstore() -> None:
    rng = random.Random(2)
    for _ in range(60):
        rank = rng.randrange(0, 4)
        shape = [rng.choice([0, 1, 5, 100, 3000]) for _ in range(rank)]
        layout: dict[str, object] = {}
        if rank and rng.random() < 0.6:
            name = rng.choice(["inner_order", "inner_order_soft_constraint"])
            layout[name] = rng.sample(range(rank), rank)
        if rank and rng.random() < 0.5:
            layout["read_chunk"] = {"shape": [rng.choice([None, 2, 5]) for _ in range(rank)]}
        store = ts.open({"driver": "zarr3", "kvstore": {"driver": "memory"}}, create=True,
                        dtype=ts.uint16, shape=shape,
                        chunk_layout=ts.ChunkLayout(json=layout)).result()
        assert effective_chunk_layout(shape, layout).to_json() == store.chunk_layout.to_json()
        codecs = store.spec().to_json()["metadata"]["codecs"]
        assert transpose_order(layout) == _transpose_in(codecs), (shape, layout)


def test_transpose_order() -> None:
    assert transpose_order({"inner_order": [2, 0, 1]}) == (2, 0, 1)
    assert transpose_order(ChunkLayout(inner_order_soft_constraint=[1, 0])) == (1, 0)
    assert transpose_order({"inner_order": [0, 1, 2]}) is None
    assert transpose_order(None) is None

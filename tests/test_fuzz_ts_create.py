"""Differential fuzzing of array creation from TensorStore-style specs against TensorStore.

A seeded generator builds a random spec for the "zarr3" or "zarr" (v2) driver from a mix of
schema constraints (dtype, domain, rank, chunk_layout, codec, fill_value, dimension_units),
partial `metadata`, a `transform` and `schema` members, sometimes contradicting each other
on purpose. Both libraries create the array in their own directory ("file" kvstore). Both
must accept or both refuse (zarrkit with a zarrkit error); when both accept, the stored
metadata documents and the handle's schema, chunk_layout, domain, codec, fill_value,
dimension_units and spec() must be equal.

Nothing is normalized away (only the kvstore member of spec(), whose paths differ): the
values compare as canonical JSON text, and fill values by their bits (int2/int4 by value).

TensorStore 0.1.86 bugs the generator avoids rather than copies (named next to the choice
that avoids them; zarrkit's behaviour in each case has its own test below):

- DUPLICATE_NAMES: metadata.dimension_names with a repeated non-empty name, which the zarr3
  driver documentation permits (the domain is then left unlabeled), cannot be created: the
  check after writing compares them with the discarded labels and fails ("Expected
  dimension_names of ["x","x"] but received: [<discarded>,<discarded>]"), and opening such
  an array (written by zarrkit) fails too ("Dimension label(s) "x" not unique").
- RANK_VS_SHAPE: a `rank` (top level or in the schema) that does not match metadata.shape,
  with no domain, aborts the whole process ("Check failed: it != last range size mismatch"
  in GetEffectiveDomain) instead of refusing the spec.
- BF16_SCHEMA_NAN: a schema fill_value "NaN" for bfloat16 becomes the NaN 0x7fe0 (written as
  "0x7fe0"), where "NaN" in the metadata (and zarrkit, both ways) gives the canonical 0x7fc0.
- COMPLEX_SCHEMA_FILL: a schema fill_value cannot be complex at all ("Conversion from JSON to
  complex64 is not implemented"; a pair [re, im] is taken as an array of two values), where
  zarrkit takes the pair, as the metadata's fill_value encodes a complex number.
- V2_INT4_WRAP: the "zarr" driver takes an int4 fill_value beyond [-8, 7] and wraps it
  (8 is stored as -8, 15 as -1); the "zarr3" driver, and zarrkit for both, refuse it.
- V2_EMPTY_FILL: the "zarr" driver, opened through a transform whose domain is empty (and
  has explicit bounds), reports no fill_value (schema and `fill_value`), although the
  .zarray has one; the "zarr3" driver, and zarrkit for both, report it.

A deliberate difference the generator avoids (FLOAT8_RANGE): TensorStore silently turns a
fill_value float8_e4m3fn cannot hold (an infinity, or beyond 448) into NaN; zarrkit refuses
it, naming the value (tests/test_v3_small_types.py); float4_e2m1fn likewise.

What the fuzzer found in zarrkit, fixed, each with a regression test at the end:

- blosc defaults: the default shuffle followed the item size, not a typesize given in the
  codec's configuration, and a typesize was kept with "noshuffle" (TensorStore drops it).
- A metadata chunk shape against a hard chunk_layout shape was refused naming a keyword,
  "write_chunk_shape.shape", and (zarr3) not metadata.chunk_grid at all.
- metadata.codecs `[]` with a schema sharding codec and an inner order: zarrkit refused, as
  if the metadata fixed the sub-chunks' array -> array codecs; the transpose goes there.
"""

from __future__ import annotations

import collections
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import ZarrkitError

ts = pytest.importorskip("tensorstore")

SEEDS = range(300)
COUNTS: collections.Counter[str] = collections.Counter()

V3_DTYPES = ["uint8", "int16", "uint16", "int64", "uint64", "float32", "float64", "float16",
             "bfloat16", "complex64", "bool", "int4", "int2", "float8_e4m3fn", "float4_e2m1fn"]
#: TensorStore dtype names with the .zarray typestrings that store them (some byte-swapped)
V2_DTYPES = {"uint8": ["|u1"], "int16": ["<i2", ">i2"], "uint16": ["<u2", ">u2"],
             "int64": ["<i8"], "float32": ["<f4", ">f4"], "float64": ["<f8"],
             "complex64": ["<c8"], "bool": ["|b1"], "bfloat16": ["bfloat16"],
             "int4": ["int4"], "float8_e4m3fn": ["float8_e4m3fn"]}
# Not generated: "|S", "<U", datetime and structured .zarray types (TensorStore has no "U",
# datetimes or whole structured arrays, and views "|S" with an extra dimension; docs/v2.md).


# -- the generator -------------------------------------------------------------------------

def _maybe(rng: random.Random, p: float = 0.3) -> bool:
    return rng.random() < p


def _dims(rng: random.Random, rank: int, lo: int = 1, hi: int = 6, none: bool = True) -> list:
    hi = rng.choice([hi, hi, 30, 700])
    return [None if none and _maybe(rng, 0.15) else rng.randint(lo, hi) for _ in range(rank)]


def _grid_part(rng: random.Random, rank: int) -> dict[str, Any]:
    part: dict[str, Any] = {}
    if _maybe(rng):
        shape = _dims(rng, rank)
        if shape and _maybe(rng, 0.2):  # -1: the full extent, 0: unconstrained
            shape[rng.randrange(rank)] = rng.choice([-1, 0])
        part[rng.choice(["shape", "shape_soft_constraint"])] = shape
    if _maybe(rng, 0.2):
        part[rng.choice(["aspect_ratio", "aspect_ratio_soft_constraint"])] = [
            rng.choice([None, 0, 1, 2, 0.5]) for _ in range(rank)]
    if _maybe(rng, 0.2):
        part[rng.choice(["elements", "elements_soft_constraint"])] = rng.choice(
            [rng.randint(1, 400), rng.randint(1, 10**6)])
    return part


def _chunk_layout(rng: random.Random, rank: int) -> dict[str, Any]:
    layout: dict[str, Any] = {}
    if _maybe(rng, 0.15):  # nonzero now and then: refused, zarr grids start at 0
        layout["grid_origin"] = [rng.choice([0, 0, 0, 1, None]) for _ in range(rank)]
    if _maybe(rng, 0.2):
        order = list(range(rank))
        rng.shuffle(order)
        layout[rng.choice(["inner_order", "inner_order_soft_constraint"])] = order
    for key in ("read_chunk", "write_chunk", "codec_chunk", "chunk"):
        if _maybe(rng, 0.3):
            part = _grid_part(rng, rank)
            if part:
                layout[key] = part
    return layout


def _shard(rng: random.Random, rank: int, depth: int = 0) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if _maybe(rng, 0.5):
        config["chunk_shape"] = _dims(rng, rank, none=False)
    if _maybe(rng, 0.4):
        config["codecs"] = _v3_codecs(rng, rank, depth + 1)
    if _maybe(rng, 0.2):
        config["index_location"] = rng.choice(["start", "end"])
    if _maybe(rng, 0.2):
        config["index_codecs"] = rng.choice([["bytes"], ["bytes", "crc32c"]])
    return {"name": "sharding_indexed", "configuration": config}


def _v3_codecs(rng: random.Random, rank: int, depth: int = 0) -> list:
    codecs: list = []
    if _maybe(rng, 0.2):
        order = list(range(rank))
        rng.shuffle(order)
        codecs.append({"name": "transpose", "configuration": {"order": order}})
    middle = rng.random()
    if middle < 0.25 and depth < 2:
        codecs.append(_shard(rng, rank, depth))
    elif middle < 0.55:
        codecs.append(rng.choice(["bytes", {"name": "bytes", "configuration": {
            "endian": rng.choice(["little", "big"])}}]))
    if _maybe(rng, 0.3):
        codecs.append(rng.choice(["gzip", "zstd", "blosc", {"name": "gzip", "configuration": {
            "level": rng.randint(0, 9)}}, {"name": "zstd", "configuration": {
                "level": 3, "checksum": True}}, {"name": "blosc", "configuration": {
                    "cname": "zstd", "clevel": 3, "shuffle": "bitshuffle"}},
            {"name": "blosc", "configuration": {"cname": "lz4", "typesize": 2}}]))
    if _maybe(rng, 0.1):
        codecs.append("crc32c")
    return codecs


def _v2_compressor(rng: random.Random) -> Any:
    return rng.choice([None, {"id": "zlib"}, {"id": "zlib", "level": 3}, {"id": "blosc"},
                       {"id": "zstd"}, {"id": "gzip", "level": 1}, {"id": "bz2"},
                       {"id": "blosc", "cname": "zstd", "clevel": 2, "shuffle": 2},
                       {"id": "zstd", "level": 4}])


def _v2_codec(rng: random.Random) -> dict[str, Any]:
    codec: dict[str, Any] = {"driver": "zarr"}
    if _maybe(rng, 0.6):
        codec["compressor"] = _v2_compressor(rng)
    if _maybe(rng, 0.2):
        codec["filters"] = None
    return codec


def _fill(rng: random.Random, dtype: str, schema: bool = False, v2: bool = False) -> Any:
    """A fill value for `dtype` (for the schema's fill_value if `schema`), now and then one out
    of its range (refused by both)."""
    if dtype == "bool":
        return rng.choice([False, True, 0, 1])
    if dtype.startswith("complex"):
        return rng.choice([[1, 2], ["NaN", 0], [0.5, "-Infinity"], 3])
    if dtype == "float8_e4m3fn":  # FLOAT8_RANGE
        return rng.choice([0.5, -2.0, 3, "NaN", 448])
    if dtype == "float4_e2m1fn":  # FLOAT8_RANGE: no NaN nor infinity, at most 6
        return rng.choice([0.5, -2.0, 3, 6, -0.0])
    if dtype == "bfloat16" and schema:  # BF16_SCHEMA_NAN
        return rng.choice([0.5, -2.0, 3, "Infinity", "-Infinity", 1e300])
    if dtype.startswith(("float", "bfloat")):
        return rng.choice([0.5, -2.0, 3, "NaN", "Infinity", "-Infinity", 1e300])
    if dtype in ("int4", "int2"):  # out of range only for zarr3 (V2_INT4_WRAP)
        return rng.choice(([-8, 7, 3] if v2 else [-8, 7, 3, 8]) if dtype == "int4"
                          else [-2, 1, 0, 2])
    return rng.choice([0, 7, 255, -1, 2**40] if _maybe(rng, 0.2) else [rng.randint(0, 9)])


def _v3_metadata(rng: random.Random, rank: int, shape: list[int], dtype: str) -> dict:
    md: dict[str, Any] = {}
    if _maybe(rng):
        md["shape"] = shape if not _maybe(rng, 0.15) else [n + 1 for n in shape]
    if _maybe(rng):
        md["data_type"] = dtype if not _maybe(rng, 0.1) else "int8"
    if _maybe(rng):
        md["chunk_grid"] = {"name": "regular", "configuration": {
            "chunk_shape": _dims(rng, rank, none=False)}}
    if _maybe(rng):
        md["codecs"] = _v3_codecs(rng, rank)
    if _maybe(rng, 0.2):
        md["chunk_key_encoding"] = rng.choice([
            {"name": "default"}, {"name": "v2"},
            {"name": "default", "configuration": {"separator": "."}},
            {"name": "v2", "configuration": {"separator": "/"}}])
    if _maybe(rng, 0.25):  # both refuse a fill_value without data_type: mostly give one
        md["fill_value"] = _fill(rng, dtype)
        if not _maybe(rng, 0.1):
            md.setdefault("data_type", dtype)
    if _maybe(rng, 0.2):  # no repeated names: TensorStore cannot create those (DUPLICATE_NAMES)
        md["dimension_names"] = [rng.choice([None, "", "x" if i == 0 else f"d{i}"])
                                 for i in range(rank)]
    if _maybe(rng, 0.2):
        md["attributes"] = {"k": rng.randint(0, 3)}
    if _maybe(rng, 0.1):
        md.update(rng.choice([{"zarr_format": 3}, {"node_type": "array"},
                              {"storage_transformers": []},
                              {"ext": {"must_understand": False}}, {"zarr_format": 2}]))
    return md


def _v2_metadata(rng: random.Random, rank: int, shape: list[int], dtype: str) -> dict:
    md: dict[str, Any] = {}
    if _maybe(rng):
        md["shape"] = shape if not _maybe(rng, 0.15) else [n + 1 for n in shape]
    if _maybe(rng):
        md["dtype"] = rng.choice(V2_DTYPES[dtype]) if not _maybe(rng, 0.1) else "|i1"
    if _maybe(rng):
        md["chunks"] = _dims(rng, rank, none=False)
    if _maybe(rng, 0.25):
        md["order"] = rng.choice(["C", "F"])
    if _maybe(rng, 0.25):
        md["compressor"] = _v2_compressor(rng)
    if _maybe(rng, 0.15):
        md["filters"] = rng.choice([None, None, [{"id": "delta", "dtype": "<u2"}]])
    if _maybe(rng, 0.1):
        md.update(rng.choice([{"zarr_format": 2}, {"zarr_format": 3}]))
    if _maybe(rng, 0.2):
        md["dimension_separator"] = rng.choice([".", "/"])
    if _maybe(rng, 0.25):
        md["fill_value"] = _fill(rng, dtype, v2=True)
        if not _maybe(rng, 0.1):
            md.setdefault("dtype", rng.choice(V2_DTYPES[dtype]))
    return md


def _domain(rng: random.Random, rank: int, shape: list[int]) -> dict[str, Any]:
    domain: dict[str, Any] = {"shape": shape}
    if _maybe(rng, 0.4):
        domain["labels"] = [rng.choice(["", "x", f"d{i}"]) for i in range(rank)]
        if len(set(label for label in domain["labels"] if label)) < sum(
                1 for label in domain["labels"] if label):
            domain["labels"] = [f"d{i}" for i in range(rank)]
    if _maybe(rng, 0.2):  # implicit upper (now and then lower) bounds, other spellings
        del domain["shape"]
        domain["inclusive_min"] = [[0] if _maybe(rng, 0.1) else 0 for _ in shape]
        if _maybe(rng, 0.2):
            domain["inclusive_max"] = [[n - 1] if _maybe(rng, 0.5) else n - 1 for n in shape]
        else:
            domain["exclusive_max"] = [[n] if _maybe(rng, 0.5) else n for n in shape]
    if rank and _maybe(rng, 0.08):  # a nonzero origin, refused for zarr arrays
        domain.pop("shape", None)
        domain["inclusive_min"] = [1] + [0] * (rank - 1)
        domain["exclusive_max"] = [n + 1 if i == 0 else n for i, n in enumerate(shape)]
    return domain


def _transform(rng: random.Random, rank: int, shape: list[int]) -> dict[str, Any]:
    if _maybe(rng, 0.3):
        return {"input_inclusive_min": [0] * rank, "input_exclusive_max": shape}
    if _maybe(rng, 0.5):  # translated: the array's domain is still zero-based
        stride = rng.choice([1, 1, 1, 2, -1])  # strided: refused by both
        return {"input_inclusive_min": [2] * rank,
                "input_exclusive_max": [n + 2 for n in shape],
                "output": [{"input_dimension": i, "offset": -2, "stride": stride}
                           for i in range(rank)]}
    order = list(range(rank))
    rng.shuffle(order)
    transform: dict[str, Any] = {
        "input_inclusive_min": [0] * rank,
        "input_exclusive_max": [[shape[o]] if _maybe(rng) else shape[o] for o in order],
        "output": [{"input_dimension": order.index(i)} for i in range(rank)]}
    if _maybe(rng):
        transform["input_labels"] = [f"d{o}" if _maybe(rng, 0.7) else "" for o in order]
    if rank and _maybe(rng, 0.2):  # one dimension fixed at index 0: a lower-rank view
        fixed = rng.randrange(rank)
        transform["output"][fixed] = {"offset": 0}
        for key in ("input_exclusive_max", "input_labels"):
            if key in transform:
                del transform[key][order.index(fixed)]
        transform["input_inclusive_min"].pop()
        for out in transform["output"]:
            if out.get("input_dimension", -1) > order.index(fixed):
                out["input_dimension"] -= 1
    return transform


def make_spec(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    driver = rng.choice(["zarr3", "zarr"])
    rank = rng.randint(0, 3) if _maybe(rng, 0.1) else rng.randint(1, 3)
    # creating writes metadata only: larger shapes cost nothing and let chunk choices show
    top = rng.choice([6, 6, 100, 5000])
    shape = [rng.randint(0 if _maybe(rng, 0.1) else 1, top) for _ in range(rank)]
    dtype = rng.choice(V3_DTYPES if driver == "zarr3" else list(V2_DTYPES))
    spec: dict[str, Any] = {"driver": driver}
    schema: dict[str, Any] = {}
    meta = (_v3_metadata if driver == "zarr3" else _v2_metadata)(rng, rank, shape, dtype)
    if meta:
        spec["metadata"] = meta
    if not _maybe(rng, 0.2) or "data_type" not in meta and "dtype" not in meta:
        (schema if _maybe(rng) else spec)["dtype"] = dtype
    if _maybe(rng, 0.6) or "shape" not in meta:
        schema["domain"] = _domain(rng, rank, shape)
    if _maybe(rng, 0.2):
        target = schema if _maybe(rng) else spec
        # TensorStore aborts the process on a wrong rank checked against metadata.shape
        # alone (RANK_VS_SHAPE): give a wrong one only together with a domain
        wrong = "domain" in schema and _maybe(rng, 0.1)
        target["rank"] = rank + 1 if wrong else rank
    if _maybe(rng, 0.6):
        layout = _chunk_layout(rng, rank)
        if layout:
            schema["chunk_layout"] = layout
    if _maybe(rng, 0.3):  # now and then the other driver's codec: refused
        zarr3 = (driver == "zarr3") != _maybe(rng, 0.05)
        schema["codec"] = ({"driver": "zarr3", "codecs": _v3_codecs(rng, rank)}
                           if zarr3 else _v2_codec(rng))
    if _maybe(rng, 0.2) and not dtype.startswith("complex"):  # COMPLEX_SCHEMA_FILL
        schema["fill_value"] = _fill(rng, dtype, schema=True, v2=driver == "zarr")
    if _maybe(rng, 0.2 if driver == "zarr3" else 0.03):  # a .zarray has no units
        schema["dimension_units"] = [rng.choice([None, "4nm", "2 s", "", "1.5um", [3, "m"],
                                                 "nm", "1e3 s", "0.5 um", [2, ""]])
                                     for _ in range(rank)]
    if driver == "zarr3" and _maybe(rng, 0.1):  # where zarr3 stores the units
        meta.setdefault("attributes", {})["dimension_units"] = [
            rng.choice([None, "4 nm", "2 s", "nm"]) for _ in range(rank)]
        spec["metadata"] = meta
    if driver == "zarr" and _maybe(rng, 0.1):
        spec["key_encoding"] = rng.choice([".", "/"])
    if _maybe(rng, 0.1):
        spec["open"] = True
    if _maybe(rng, 0.05):  # a second dtype, in the schema, sometimes another one
        schema["dtype"] = rng.choice([dtype, "int8"])
    if _maybe(rng, 0.15) and (driver == "zarr3" or all(shape)):  # V2_EMPTY_FILL
        # now and then over another shape: refused where the domain or metadata says otherwise
        other = [n + 1 for n in shape] if _maybe(rng, 0.15) else shape
        spec["transform"] = _transform(rng, rank, other)
    if schema:
        spec["schema"] = schema
    return spec


# -- running both ----------------------------------------------------------------------------

def _units(units: Any) -> Any:
    return [None if u is None else list(u.to_json()) if hasattr(u, "to_json") else list(u)
            for u in units]


def _fill_json(value: Any) -> Any:
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.dtype.name in ("int2", "int4"):  # TensorStore's bytes sign-extend, ml_dtypes' don't
        return [arr.dtype.name, arr.shape, arr.astype(np.int8).tolist()]
    return [arr.dtype.str, arr.shape, arr.tobytes().hex()]  # the bits: NaNs differ


def _docs(path: Path) -> dict[str, Any]:
    return {p.name: json.loads(p.read_text()) for p in sorted(path.iterdir()) if p.is_file()}


def _outcome(lib: str, spec: dict[str, Any], path: Path) -> Any:
    spec = {**spec, "kvstore": {"driver": "file", "path": str(path)}, "create": True}
    try:
        store = ts.open(spec).result() if lib == "ts" else zarrkit.open(spec)
    except ZarrkitError as exc:
        return "refused", str(exc)
    except ValueError as exc:
        assert lib == "ts", f"not a zarrkit error: {exc!r}"
        return "refused", str(exc).split("[tensorstore_spec")[0]
    spec_json = store.spec().to_json()
    spec_json.pop("kvstore", None)
    return {
        "docs": _docs(path),
        "schema": store.schema.to_json(),
        "chunk_layout": store.chunk_layout.to_json(),
        "domain": store.domain.to_json(),
        "codec": store.codec.to_json(),
        "fill_value": _fill_json(store.fill_value),
        "dimension_units": _units(store.dimension_units),
        "spec": spec_json,
    }


def compare(seed: int, tmp_path: Path) -> str:
    """The category of the seed's outcome; asserts both libraries agree."""
    spec = make_spec(seed)
    expected = _outcome("ts", spec, tmp_path / "ts")
    actual = _outcome("zk", spec, tmp_path / "zk")
    context = f"seed {seed}: {json.dumps(spec)}"
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple), f"{context}\nTensorStore refused: {expected[1]}"
        return "refused"
    assert not isinstance(actual, tuple), f"{context}\nzarrkit refused: {actual[1]}"
    for key in expected:  # as canonical JSON text, where NaN equals NaN
        ours, theirs = (json.dumps(o[key], sort_keys=True) for o in (actual, expected))
        assert ours == theirs, f"{context}\n{key}: {ours} != {theirs}"
    return f"accepted {spec['driver']}"


@pytest.mark.parametrize("seed", SEEDS)
def test_create_matches_tensorstore(seed: int, tmp_path: Path) -> None:
    COUNTS[compare(seed, tmp_path)] += 1


def test_print_counts() -> None:
    """Run with -s to see how many seeds fell in each category (on this worker)."""
    print(dict(COUNTS))


# -- regressions of what the fuzzer found in zarrkit -----------------------------------------

BLOSC_CONFIGS = [{}, {"typesize": 1}, {"typesize": 2}, {"typesize": 4, "shuffle": "noshuffle"},
                 {"shuffle": "noshuffle"}, {"typesize": 3, "shuffle": "bitshuffle"}]


@pytest.mark.parametrize("where", ["metadata", "codec"])
@pytest.mark.parametrize("dtype", ["uint8", "uint16"])
@pytest.mark.parametrize("config", BLOSC_CONFIGS)
def test_blosc_defaults_follow_a_given_typesize(tmp_path: Path, config: dict, dtype: str,
                                               where: str) -> None:
    """The default shuffle follows a given typesize (bitshuffle for 1, byte shuffle above),
    not the item size; without shuffling the typesize is dropped. zarrkit used the item size
    and kept the typesize."""
    codecs = [{"name": "blosc", "configuration": config}]
    spec: dict[str, Any] = {"driver": "zarr3", "dtype": dtype, "metadata": {"shape": [3]}}
    if where == "metadata":
        spec["metadata"]["codecs"] = codecs
    else:
        spec["schema"] = {"codec": {"driver": "zarr3", "codecs": codecs}}
    expected = _outcome("ts", spec, tmp_path / "ts")
    actual = _outcome("zk", spec, tmp_path / "zk")
    assert actual["docs"] == expected["docs"]
    assert actual["codec"] == expected["codec"]
    written = actual["docs"]["zarr.json"]["codecs"][-1]["configuration"]
    typesize = config.get("typesize", np.dtype(dtype).itemsize)
    if config.get("shuffle") == "noshuffle":
        assert "typesize" not in written
    else:
        assert written["shuffle"] == config.get(
            "shuffle", "bitshuffle" if typesize == 1 else "shuffle")


@pytest.mark.parametrize("driver, metadata, member", [
    ("zarr3", {"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [22, 13]}}},
     "metadata.chunk_grid chunk_shape [22, 13] conflicts with chunk_layout: write_chunk.shape"),
    ("zarr", {"chunks": [22, 13]},
     "metadata.chunks [22, 13] conflicts with chunk_layout: write_chunk.shape"),
])
def test_chunk_shape_conflict_names_the_metadata(tmp_path: Path, driver: str, metadata: dict,
                                                 member: str) -> None:
    """A metadata chunk shape against a hard chunk shape is refused by both, and zarrkit names
    the metadata member (it named a keyword, "write_chunk_shape.shape", it went through)."""
    spec = {"driver": driver, "dtype": "uint8", "metadata": metadata, "schema": {
        "domain": {"shape": [30, 30]}, "chunk_layout": {"chunk": {"shape": [26, 18]}}}}
    assert isinstance(_outcome("ts", spec, tmp_path / "ts"), tuple)
    refused, message = _outcome("zk", spec, tmp_path / "zk")
    assert member in message, message


# -- zarrkit where TensorStore has the bugs the generator avoids -------------------------------

def _zk(spec: dict[str, Any]) -> Any:
    return zarrkit.open({**spec, "kvstore": "memory://"}, create=True)


def test_duplicate_dimension_names_leave_the_domain_unlabeled(tmp_path: Path) -> None:
    """DUPLICATE_NAMES: as the zarr3 driver documentation says (TensorStore refuses to create,
    and to open, such an array)."""
    a = _zk({"driver": "zarr3", "metadata": {"data_type": "uint16", "shape": [2, 4],
                                             "dimension_names": ["x", "x"]}})
    assert a.domain.labels == ("", "")
    assert a.spec().to_json()["metadata"]["dimension_names"] == ["x", "x"]


@pytest.mark.parametrize("where", ["top", "schema"])
def test_rank_against_metadata_shape_is_refused(where: str) -> None:
    """RANK_VS_SHAPE: TensorStore aborts the process; zarrkit refuses the spec."""
    spec: dict[str, Any] = {"driver": "zarr3", "dtype": "bool", "metadata": {"shape": [2, 5, 2]}}
    (spec if where == "top" else spec.setdefault("schema", {}))["rank"] = 4
    with pytest.raises(zarrkit.SpecError, match="rank 4 does not match metadata.shape"):
        _zk(spec)


def test_schema_nan_for_bfloat16_is_the_canonical_nan() -> None:
    """BF16_SCHEMA_NAN: "NaN" is 0x7fc0, whether in the schema or the metadata."""
    for spec in ({"schema": {"fill_value": "NaN"}, "dtype": "bfloat16"},
                 {"metadata": {"data_type": "bfloat16", "fill_value": "NaN"}}):
        spec.setdefault("metadata", {})["shape"] = [2]
        a = _zk({"driver": "zarr3", **spec})
        assert a.spec().to_json()["metadata"]["fill_value"] == "NaN"
        assert np.asarray(a.fill_value).tobytes() == b"\xc0\x7f"


def test_complex_schema_fill_value_is_a_pair() -> None:
    """COMPLEX_SCHEMA_FILL: zarrkit takes [re, im] as the metadata's fill_value encodes it."""
    a = _zk({"driver": "zarr3", "dtype": "complex64", "metadata": {"shape": [2]},
             "schema": {"fill_value": [1, 2]}})
    assert a.fill_value == 1 + 2j
    assert a.spec().to_json()["metadata"]["fill_value"] == [1.0, 2.0]


def test_v2_fill_value_through_an_empty_transform() -> None:
    """V2_EMPTY_FILL: the fill value does not depend on the view's domain."""
    a = _zk({"driver": "zarr", "dtype": "uint16",
             "schema": {"domain": {"shape": [3, 0]}, "fill_value": 7},
             "transform": {"input_inclusive_min": [0, 0], "input_exclusive_max": [3, 0]}})
    assert a.fill_value == 7
    assert a.schema.to_json()["fill_value"] == 7


@pytest.mark.parametrize("driver", ["zarr", "zarr3"])
@pytest.mark.parametrize("fill", [8, -9, 15])
def test_int4_fill_value_out_of_range_is_refused(driver: str, fill: int) -> None:
    """V2_INT4_WRAP: refused for both drivers, never wrapped."""
    key = "dtype" if driver == "zarr" else "data_type"
    with pytest.raises(zarrkit.ZarrkitError, match="out of range"):
        _zk({"driver": driver, "metadata": {key: "int4", "shape": [3], "fill_value": fill}})


_S = {"name": "sharding_indexed"}
_T10 = {"name": "transpose", "configuration": {"order": [1, 0]}}


@pytest.mark.parametrize("order_key", ["inner_order", "inner_order_soft_constraint"])
@pytest.mark.parametrize("metadata_codecs, schema_codecs", [
    ([], [_S]),  # found by seed 12933: zarrkit refused, TensorStore transposes the sub-chunks
    ([], [{"name": "sharding_indexed", "configuration": {"index_codecs": ["bytes"]}}]),
    ([], [{"name": "sharding_indexed", "configuration": {"codecs": [_T10, "bytes"]}}]),
    (["gzip"], [_S]),
    ([_T10], [_S]),
    ([_S], [{"name": "sharding_indexed", "configuration": {"codecs": [_S]}}]),
    # the metadata's codecs reach the innermost chunks: refused by both
    ([], None),
    ([], ["bytes"]),
    (["bytes"], [_S]),
    ([{"name": "sharding_indexed", "configuration": {"codecs": ["bytes"]}}],
     [{"name": "sharding_indexed", "configuration": {"codecs": [_S]}}]),
])
def test_inner_order_beneath_a_schema_sharding_codec(tmp_path: Path, metadata_codecs: list,
                                                     schema_codecs: list | None,
                                                     order_key: str) -> None:
    """metadata.codecs fix the order of the chunks they reach; a schema's sharding codec beneath
    them takes the transpose for the inner order into its sub-chunk codecs."""
    schema: dict[str, Any] = {"chunk_layout": {order_key: [1, 0]}}
    if schema_codecs is not None:
        schema["codec"] = {"driver": "zarr3", "codecs": schema_codecs}
    spec = {"driver": "zarr3", "dtype": "uint16", "schema": schema,
            "metadata": {"shape": [4, 6], "codecs": metadata_codecs}}
    expected = _outcome("ts", spec, tmp_path / "ts")
    actual = _outcome("zk", spec, tmp_path / "zk")
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and "metadata.codecs" in actual[1], actual
    else:
        assert not isinstance(actual, tuple), actual[1]
        assert actual["docs"] == expected["docs"]
        assert actual["chunk_layout"] == expected["chunk_layout"]

"""Zarr v2 interoperability with the real zarr-python 2.18 as the oracle, both directions.

Most v2 data in the world was written by zarr-python 2, so its reading and writing is the
reference for v2 semantics (the v2 spec, /work/shared/spec/v2-spec.rst, decides where the two
disagree). zarr 2 runs in a subprocess (see _zarr2.py); cases are batched so that one
subprocess serves many of them.

A seeded differential fuzzer crosses data types (both byte orders, datetimes, strings,
structured with nested and sub-array fields, object arrays with each object codec), fill
values, memory order, chunk key separators (and zarr 2's NestedDirectoryStore), compressors,
filters and shapes (0-d, empty, partial edge chunks, chunks larger than the array). For each
case zarr 2 writes one array and zarrkit another from the same data and keywords (a box of
it, so some chunks stay missing), then each writes a second box into the other's array; each
library reads both, and the four reads must agree exactly with the model (dtype up to byte
order, bytes, NaN); the two .zarray documents must agree in meaning. Combinations where
zarr 2 is wrong (per the spec, or failing outright) are left out of the generator, each with a
comment naming the zarr 2 bug and an explicit test of zarrkit's behaviour there. Explicit tests
then cover hierarchies, consolidated metadata, zip archives and mutation by one library seen
by the other.
"""

from __future__ import annotations

import base64
import json
import math
import os
import zipfile

import numpy as np
import pytest
from _v2_helpers import sample
from _zarr2 import oracle_dir, run_zarr2, zarr2_version

import zarrkit

# numcodecs' fixedscaleoffset warns of the NaN casts its lossy cases make
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning",
                                        "ignore:invalid value encountered:RuntimeWarning")


@pytest.fixture(scope="session")
def zarr2():
    """The zarr 2 oracle, installed on first use; a failed install fails the tests."""
    oracle_dir()
    return zarr2_version()


def test_oracle_is_zarr_2(zarr2):
    assert zarr2[0].startswith("2.18.") and zarr2[1].startswith("0.15.")


# -- comparison -----------------------------------------------------------------------------------


def _same_object(x, y) -> bool:
    """Equal elements of object arrays; vlen-array items equal up to byte order (numcodecs
    0.15 under zarr 2 decodes `>f8` items to native floats, 0.16 keeps `>f8`)."""
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)
                and differs(x, y) is None)
    return type(x) is type(y) and x == y


def differs(actual, expected) -> str | None:
    """Why `actual` is not exactly `expected` (dtype, shape, bytes; NaN equals NaN), or None.
    zarrkit holds values in native byte order (by design, as for v3) where zarr 2 keeps the
    stored order: the dtypes must be equal up to byte order, the values bitwise."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    native = expected.dtype.newbyteorder("=")
    if actual.dtype.newbyteorder("=") != native or actual.shape != expected.shape:
        return f"dtype/shape {actual.dtype}{actual.shape} != {expected.dtype}{expected.shape}"
    if expected.dtype.hasobject:
        bad = [i for i, (x, y) in enumerate(zip(actual.ravel(), expected.ravel(), strict=True))
               if not _same_object(x, y)]
        return f"objects differ at {bad[:3]}: {actual.ravel()[bad[0]]!r} != " \
               f"{expected.ravel()[bad[0]]!r}" if bad else None
    if np.ascontiguousarray(actual.astype(native)).tobytes() != \
            np.ascontiguousarray(expected.astype(native)).tobytes():
        return f"values differ:\n{actual!r}\n{expected!r}"
    return None


def assert_exact(actual, expected):
    problem = differs(actual, expected)
    assert problem is None, problem


def _json_same(a, b) -> bool:
    """JSON values equal: NaN equal to NaN (both write bare NaN in .zattrs), -0.0 not equal
    to 0.0, a float subclass (zarrkit's NaN attribute values) a float."""
    if isinstance(a, float) and isinstance(b, float):  # zarrkit reads NaN as a float subclass
        return a == b and math.copysign(1, a) == math.copysign(1, b) or \
            math.isnan(a) and math.isnan(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


# -- the fuzzer's axes ---------------------------------------------------------------------------

INTS = ["|i1", "|u1", "<i2", ">i2", "<u2", ">u2", "<i4", ">i4", "<u4", ">u4", "<i8", ">i8",
        "<u8", ">u8"]
FLOATS = ["<f2", ">f2", "<f4", ">f4", "<f8", ">f8"]
COMPLEX = ["<c8", ">c8", "<c16", ">c16"]
TIMES = ["<M8[ns]", ">M8[us]", "<M8[ms]", ">M8[s]", "<M8[m]", "<M8[h]", ">M8[D]", "<M8[W]",
         "<M8[M]", "<M8[Y]", "<m8[ns]", ">m8[us]", "<m8[ms]", "<m8[s]", ">m8[h]", "<m8[D]"]
STRINGS = ["|S1", "|S5", "<U1", "<U4", ">U3", "|V3"]
STRUCTS = [
    [("a", "<i4"), ("b", ">f8")],
    [("x", "|u1"), ("sub", [("p", "<i2"), ("q", ">f4")])],
    [("v", "<f4", (2, 3)), ("w", "|S3")],
    [("n", [("m", "<u2", (2,))]), ("t", "<M8[s]")],
]
OBJECT_CODECS = ["vlen-utf8", "vlen-bytes", "json2", "msgpack2", "vlen-array", "categorize"]
OBJECT_LABELS = ["", "a", "bé", "\U0001f600"]  # categorize on object arrays
VLEN_ARRAY_TYPE = ">f8"  # vlen-array items: a big-endian type, the harder case

COMPRESSORS = [
    None,
    {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0},
    {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0},
    {"id": "blosc", "cname": "blosclz", "clevel": 9, "shuffle": 0, "blocksize": 0},
    {"id": "blosc", "cname": "zlib", "clevel": 1, "shuffle": -1, "blocksize": 0},
    {"id": "blosc", "cname": "lz4hc", "clevel": 5, "shuffle": 1, "blocksize": 256},
    {"id": "zlib", "level": 1},
    {"id": "gzip", "level": 5},
    {"id": "bz2", "level": 9},
    {"id": "lzma", "format": 1, "check": -1, "preset": 1, "filters": None},
    {"id": "zstd", "level": 3},
    {"id": "lz4", "acceleration": 1},
]


def _dtype_choice(rng) -> tuple[np.dtype, str | None]:
    family = rng.choice(["int", "float", "complex", "bool", "time", "string", "struct",
                         "object"], p=[.18, .18, .08, .06, .14, .12, .12, .12])
    pools = {"int": INTS, "float": FLOATS, "complex": COMPLEX, "bool": ["|b1"], "time": TIMES,
             "string": STRINGS}
    if family in pools:
        return np.dtype(str(rng.choice(pools[family]))), None
    if family == "struct":
        return np.dtype(STRUCTS[rng.integers(len(STRUCTS))]), None
    return np.dtype(object), str(rng.choice(OBJECT_CODECS))


def _fill_choice(rng, dtype: np.dtype, codec: str | None):
    """A fill value for `dtype` (None is v2's null), as a value both libraries accept."""
    kind = dtype.kind
    options: list = [None]
    if codec == "vlen-utf8":
        options += ["", "fé"]
    elif codec == "categorize":
        options += OBJECT_LABELS[:2]
    elif codec is not None:
        # zarr 2 cannot write other fill values of object arrays (vlen-bytes: "Object of type
        # bytes is not JSON serializable"); test_vlen_bytes_fill_value covers zarrkit's.
        pass
    elif kind == "b":
        options += [False, True]
    elif kind in "iu":
        options += [0, int(np.iinfo(dtype).max), int(np.iinfo(dtype).min) + (kind == "i")]
    elif kind == "f":
        # (not -0.0: zarr 2 writes it as 0.0; test_negative_zero_fill_value)
        options += [0.0, -2.5, np.nan, np.inf, -np.inf]
    elif kind == "c":
        options += [0j, complex(1.5, -2), complex(np.nan, 1)]
    elif kind in "mM":
        options += [np.array(0, dtype)[()], np.array("NaT", dtype)[()],
                    np.array(42).astype(dtype)[()]]
    elif kind == "S":
        options += [b"", b"\xff\x00a"[:dtype.itemsize]]
    elif kind == "U":
        options += ["", "zé"[:dtype.itemsize // 4]]
    elif kind == "V" and "M8" not in str(dtype):
        # (zarr 2 cannot write a structured fill value with a datetime field: "cannot include
        # dtype 'M' in a buffer"; those get null only.)
        options += [np.zeros((), dtype)[()], sample(dtype, (1,), seed=99)[0]]
        if dtype.names and "S" not in str(dtype):
            # zarr 2 takes a fill of 0 as np.array(0, dtype), which makes a bytes field b"0";
            # zarrkit makes it all zero bytes (a structured "0", as dask writes it, is read
            # as zero bytes by both). Each reads the other's base64 exactly.
            options.append(0)
    return options[rng.integers(len(options))]


#: Filters on the bytes, after any other: checksums and a compressor used as a filter.
BYTES_FILTERS = [{"id": "crc32"}, {"id": "adler32"}, {"id": "fletcher32"}, {"id": "zlib",
                                                                        "level": 1}]


def _filters_choice(rng, dtype: np.dtype, codec: str | None) -> tuple[list[dict], bool]:
    """Filters that apply to `dtype` (sometimes with one on the bytes after), and whether
    they lose information."""
    filters, lossy = _typed_filters_choice(rng, dtype, codec)
    if rng.random() < 0.2:
        filters = [*filters, BYTES_FILTERS[rng.integers(len(BYTES_FILTERS))]]
    return filters, lossy


def _typed_filters_choice(rng, dtype: np.dtype, codec: str | None) -> tuple[list[dict], bool]:
    if codec is not None:
        first = {"id": codec, **({"dtype": VLEN_ARRAY_TYPE} if codec == "vlen-array" else {})}
        if codec == "categorize":
            first.update(labels=OBJECT_LABELS, dtype="|O", astype="|u1")
        return [first], False
    kind, name = dtype.kind, dtype.str
    pick = rng.integers(4)
    if pick == 0:
        return [], False
    if kind in "iu":
        # (numcodecs' fixedscaleoffset computes in float64, and the offset can overflow: the
        # fills at the ends of the range, 64-bit integers, come back changed: lossy)
        wider = f"{name[0].replace('|', '<')}{kind}8"
        return [[{"id": "delta", "dtype": name}, {"id": "astype", "encode_dtype": wider,
                                                   "decode_dtype": name}],
                [{"id": "shuffle", "elementsize": dtype.itemsize}],
                [{"id": "fixedscaleoffset", "offset": 3, "scale": 1, "dtype": name,
                  "astype": name}]][pick - 1], pick == 3
    if kind == "f":
        options = [([{"id": "quantize", "digits": 2, "dtype": name}], True),
                   ([{"id": "fixedscaleoffset", "offset": 1, "scale": 4, "dtype": name,
                      "astype": "<i4"}], True),
                   ([{"id": "astype", "encode_dtype": "<f4", "decode_dtype": name}],
                    dtype.itemsize > 4)]
        if dtype.itemsize >= 4:  # (delta: inf - inf is NaN, and rounding on the way back)
            options.append(([{"id": "delta", "dtype": name}], True))
        if dtype.itemsize >= 4 and dtype.byteorder != ">":
            # numcodecs' BitRound takes native floats only (KeyError '>f4'): zarr 2 cannot
            # write those; test_bitround_big_endian_refused checks zarrkit's error.
            options.append(([{"id": "bitround", "keepbits": 6}], True))
        return options[rng.integers(len(options))]
    if kind == "b":
        return [{"id": "packbits"}], False
    if kind == "U" and dtype.itemsize >= 8:  # every value sample() and the fills give
        width = dtype.itemsize // 4
        labels = [c * k for c in "ab€" for k in range(width + 1)] + ["zé"[:width]]
        return [{"id": "categorize", "labels": sorted(set(labels)), "dtype": name,
                 "astype": "|u1"}], False
    return [], False


def _object_data(codec: str, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    out = np.empty(n, dtype=object)
    for i in range(n):
        k = int(rng.integers(4))
        if codec == "vlen-utf8":
            out[i] = ["", "é" * k, f"s{i}", "\x00z"][k]
        elif codec == "vlen-bytes":
            out[i] = [b"", b"\xff" * k, f"b{i}".encode(), b"\x00"][k]
        elif codec == "categorize":
            out[i] = OBJECT_LABELS[k]
        elif codec == "vlen-array":
            out[i] = (np.arange(i, i + k) / 4).astype(VLEN_ARRAY_TYPE)
        else:  # json2 / msgpack2: values that survive both encodings unchanged
            out[i] = [f"t{i}", i - 3, [i, "x"] * k, {"k": i}][k]
    return out.reshape(shape)


def _data(dtype, codec, shape, seed, lossy_filters):
    if codec is not None:
        return _object_data(codec, shape, seed)
    data = sample(dtype, shape, seed=seed).astype(dtype)
    if lossy_filters and dtype.kind == "f":  # to integers: NaN and infinity have no value
        data = np.array(np.nan_to_num(data, nan=1.25, posinf=7.5, neginf=-3.0), dtype)
    return data


def _shape_choice(rng):
    ndim = int(rng.choice([0, 1, 1, 2, 2, 2, 3]))
    shape = tuple(int(rng.choice([0, 1, 2, 3, 5, 7], p=[.06, .1, .14, .2, .25, .25]))
                  for _ in range(ndim))
    chunks = tuple(int(rng.integers(1, s + 4)) for s in shape)
    return shape, chunks


def _region_choice(rng, shape, fill):
    """Where the arrays are written: all of it with a null fill value (zarr 2 reads missing
    chunks as uninitialized memory then), else a random box, so some chunks stay missing."""
    if fill is None:
        return [[0, s] for s in shape]
    region = []
    for s in shape:
        lo = int(rng.integers(0, s + 1))
        region.append([lo, int(rng.integers(lo, s + 1))])
    return region


def make_case(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    dtype, codec = _dtype_choice(rng)
    fill = _fill_choice(rng, dtype, codec)
    filters, lossy = _filters_choice(rng, dtype, codec)
    shape, chunks = _shape_choice(rng)
    compressor = COMPRESSORS[rng.integers(len(COMPRESSORS))]
    if codec == "msgpack2" and not shape:
        # zarr 2 bug: it cannot write a 0-d msgpack2 array (numcodecs' MsgPack extends the
        # element in place); test_msgpack_zero_dimensional covers zarrkit's.
        shape, chunks = (1,), (1,)
    order = str(rng.choice(["C", "F"]))
    if any(f["id"] == "bitround" for f in filters):
        # zarr 2 bug: numcodecs' BitRound returns a C-ordered copy, which zarr 2 stores as is
        # under an F-order .zarray, scrambling its own arrays; test_bitround_order_f.
        order = "C"
    if "M8" in str(dtype) and dtype.names and compressor and compressor["id"] == "gzip":
        # zarr 2 bug: its gzip compressor cannot take structured items with a datetime field
        # ("cannot include dtype 'M' in a buffer"); zarrkit gives it the items' bytes.
        compressor = COMPRESSORS[1]
    if codec in ("json2", "msgpack2"):
        # zarr 2 bug: with order F it stores these codecs' chunks scrambled (and reads its own
        # arrays back wrong); test_json_msgpack_order_f_read_by_zarr2 covers zarrkit's.
        order = "C"
    return {"seed": seed, "dtype": dtype, "codec": codec, "fill": fill, "filters": filters,
            "lossy": lossy, "shape": shape, "chunks": chunks, "compressor": compressor,
            "order": order, "sep": str(rng.choice([".", "/", "nested"])),
            "region": _region_choice(rng, shape, fill), "region2": _region_choice(rng, shape, 0),
            "data": _data(dtype, codec, shape, seed, lossy),
            "data2": _data(dtype, codec, shape, seed + 10_000, lossy)}


def describe(case: dict) -> str:
    keys = ("seed", "dtype", "codec", "fill", "filters", "shape", "chunks", "compressor",
            "order", "sep", "region", "region2")
    return ", ".join(f"{k}={case[k]!r}" for k in keys)


# -- running a case ------------------------------------------------------------------------------

# Under zarr 2, first: create "theirs" from the case's files and write the first region;
# write the second region into zarrkit's "ours".
ZARR2_WRITE = """
p = json.load(open(os.path.join(d, "params.json")))
data = load("data")
fill = load("fill")[()] if p["has_fill"] else None

def store(name):
    path = os.path.join(d, name)
    return zarr.NestedDirectoryStore(path) if p["sep"] == "nested" else zarr.DirectoryStore(path)

compressor = numcodecs.get_codec(dict(p["compressor"])) if p["compressor"] else None
filters = [numcodecs.get_codec(dict(f)) for f in p["filters"]] or None
keywords = {} if p["sep"] == "nested" else {"dimension_separator": p["sep"]}
a = zarr.create(shape=tuple(p["shape"]), chunks=tuple(p["chunks"]), dtype=data.dtype,
                compressor=compressor, fill_value=fill, order=p["order"], filters=filters,
                store=store("theirs"), **keywords)
region = tuple(slice(lo, hi) for lo, hi in p["region"]) or Ellipsis
a[region] = data[region]
region = tuple(slice(lo, hi) for lo, hi in p["region2"]) or Ellipsis
zarr.open_array(store("ours"), mode="r+")[region] = load("data2")[region]
"""

# Then, after zarrkit wrote the second region into "theirs": read both.
ZARR2_READ = """
sep = json.load(open(os.path.join(d, "params.json")))["sep"]
for name in ("theirs", "ours"):
    path = os.path.join(d, name)
    where = zarr.NestedDirectoryStore(path) if sep == "nested" else zarr.DirectoryStore(path)
    save(name + "_by_zarr2", np.asarray(zarr.open_array(where, mode="r")[...]))
"""


def zarrkit_read(path) -> np.ndarray:
    """All of the array, as an array: zarrkit's `a[...]` of a 0-d array is a scalar (as in
    zarr-python 3), zarr 2's a 0-d array (as in NumPy); the scalar goes back in one."""
    a = zarrkit.open(path, mode="r")
    value = a[...]
    if a.ndim:
        return value
    holder = np.empty((), a.dtype)
    holder[()] = value
    return holder


def _prepare(case: dict, directory: str) -> str | None:
    """Write the case's inputs and zarrkit's array; the error zarrkit raised creating it."""
    os.makedirs(directory, exist_ok=True)
    np.save(os.path.join(directory, "data.npy"), case["data"], allow_pickle=True)
    fill = case["fill"]
    if fill is not None:
        holder = np.empty((), object if case["codec"] else case["dtype"])
        holder[()] = fill
        np.save(os.path.join(directory, "fill.npy"), holder, allow_pickle=True)
    np.save(os.path.join(directory, "data2.npy"), case["data2"], allow_pickle=True)
    params = {k: case[k] for k in ("shape", "chunks", "compressor", "filters", "order", "sep",
                                   "region", "region2")}
    with open(os.path.join(directory, "params.json"), "w") as f:
        json.dump(dict(params, has_fill=fill is not None), f)
    try:
        _zarrkit_write(case, os.path.join(directory, "ours"))
    except zarrkit.ZarrkitError as e:
        return f"{type(e).__name__}: {e}"
    return None


def _zarrkit_write(case: dict, path: str) -> None:
    a = zarrkit.create(path, shape=case["shape"], chunks=case["chunks"],
                       dtype=case["dtype"], zarr_format=2, compressor=case["compressor"],
                       filters=case["filters"], fill_value=case["fill"], order=case["order"],
                       dimension_separator="/" if case["sep"] == "nested" else case["sep"])
    region = tuple(slice(lo, hi) for lo, hi in case["region"]) or Ellipsis
    a[region] = case["data"][region]


def _zarrkit_write_second(case: dict, path: str) -> None:
    region = tuple(slice(lo, hi) for lo, hi in case["region2"]) or Ellipsis
    zarrkit.open(path, mode="r+")[region] = case["data2"][region]


def _expected(case: dict) -> np.ndarray | None:
    """What the array holds by the model: the fill, the data in the region (None when lossy
    filters make the data inexact, or no fill value makes the rest undefined)."""
    if case["lossy"]:
        return None
    data = case["data"]
    out = np.empty(data.shape, data.dtype)
    fill = case["fill"]
    if isinstance(fill, int) and data.dtype.names is not None:
        out[...] = np.zeros((), data.dtype)  # fill 0 of a structured type: zero bytes
    elif fill is not None:
        out[...] = fill if case["codec"] else np.array(fill, dtype=data.dtype)
    region = tuple(slice(lo, hi) for lo, hi in case["region"]) or Ellipsis
    out[region] = data[region]
    region = tuple(slice(lo, hi) for lo, hi in case["region2"]) or Ellipsis
    out[region] = case["data2"][region]
    return out


METADATA_KEYS = ("shape", "chunks", "dtype", "order", "fill_value")


def _fill_meaning(doc: dict):
    """Fixed-length bytes fill values are base64 of the bytes; numpy pads them with NULs, so
    zarr 2's "" and zarrkit's "AA==" for an `|S1` b"" mean the same value."""
    fill = doc.get("fill_value")
    if isinstance(doc.get("dtype"), str) and doc["dtype"].startswith("|S") and \
            isinstance(fill, str):
        return base64.b64decode(fill).rstrip(b"\0")
    return fill


def _metadata_problems(theirs: dict, ours: dict) -> list[str]:
    problems = [f".zarray {k}: zarr 2 {theirs.get(k)!r}, zarrkit {ours.get(k)!r}"
                for k in METADATA_KEYS if k != "fill_value"
                and not _json_same(theirs.get(k), ours.get(k))]
    if not _json_same(_fill_meaning(theirs), _fill_meaning(ours)):
        problems.append(f".zarray fill_value: zarr 2 {theirs.get('fill_value')!r}, "
                        f"zarrkit {ours.get('fill_value')!r}")
    # zarr 2 stores no compressor for 0-d arrays whatever it is given; zarrkit keeps the one
    # asked for, which every reader decodes.
    for key in ("compressor", "filters") if theirs.get("shape") else ("filters",):
        t, o = theirs.get(key), ours.get(key)
        t_list = t if isinstance(t, list) else [t] if t else []
        o_list = o if isinstance(o, list) else [o] if o else []
        if [c["id"] for c in t_list] != [c["id"] for c in o_list] or any(
                not _json_same(tc[k], oc[k]) for tc, oc in zip(t_list, o_list, strict=True)
                for k in tc.keys() & oc.keys()):
            problems.append(f".zarray {key}: zarr 2 {t!r}, zarrkit {o!r}")
    if theirs.get("dimension_separator", ".") != ours.get("dimension_separator", "."):
        problems.append(f".zarray dimension_separator: zarr 2 {theirs.get('dimension_separator')!r}"
                        f", zarrkit {ours.get('dimension_separator')!r}")
    return problems


def _check_case(case: dict, directory: str, outcome: dict) -> list[str]:
    if "error" in outcome:
        return [f"zarr 2 failed: {outcome['error']} (line {outcome.get('line')})"]

    def npy(name):
        return np.load(os.path.join(directory, name + ".npy"), allow_pickle=True)

    problems = []
    reads = {"zarr 2 reads theirs": npy("theirs_by_zarr2"),
             "zarrkit reads theirs": zarrkit_read(os.path.join(directory, "theirs")),
             "zarr 2 reads ours": npy("ours_by_zarr2"),
             "zarrkit reads ours": zarrkit_read(os.path.join(directory, "ours"))}
    expected = _expected(case)
    reference = reads["zarr 2 reads theirs"] if expected is None else expected
    for what, got in reads.items():
        problem = differs(got, reference)
        if problem:
            problems.append(f"{what}: {problem}")
    with open(os.path.join(directory, "theirs", ".zarray")) as f:
        theirs_doc = json.load(f)
    with open(os.path.join(directory, "ours", ".zarray")) as f:
        ours_doc = json.load(f)
    return problems + _metadata_problems(theirs_doc, ours_doc)


def run_cases(cases: list[dict], base) -> list[str]:
    failures, jobs, kept = [], [], []
    for case in cases:
        directory = str(base / f"case{case['seed']}")
        refused = _prepare(case, directory)
        if refused:
            failures.append(f"zarrkit refused: {refused}\n  {describe(case)}")
            continue
        jobs.append((ZARR2_WRITE, directory))
        kept.append(case)
    written = run_zarr2(jobs)
    for case, (_, directory), outcome in zip(kept, jobs, written, strict=True):
        if "error" not in outcome:
            _zarrkit_write_second(case, os.path.join(directory, "theirs"))
    read = run_zarr2([(ZARR2_READ, directory) for _, directory in jobs])
    for case, (_, directory), *outcomes in zip(kept, jobs, written, read, strict=True):
        outcome = next((o for o in outcomes if "error" in o), outcomes[-1])
        problems = _check_case(case, directory, outcome)
        if problems:
            failures.append("\n  ".join([describe(case), *problems]))
    return failures


BATCHES, PER_BATCH = 8, 25


def test_fuzzer_covers_the_axes():
    """The cases the batches run reach every axis of the brief, and the comparison sees a
    one-bit difference (so the fuzzer can fail)."""
    cases = [make_case(seed) for seed in range(BATCHES * PER_BATCH)]
    kinds = {c["dtype"].kind for c in cases}
    assert kinds >= set("biufcmMSUVO")
    assert {c["codec"] for c in cases} >= set(OBJECT_CODECS)
    assert any(c["dtype"].names and any(len(c["dtype"][n].shape) for n in c["dtype"].names)
               for c in cases)
    assert {c["dtype"].byteorder for c in cases} >= {">", "|", "="}  # numpy says "=" for "<"
    assert {json.dumps(c["compressor"]) for c in cases} == {json.dumps(c) for c in COMPRESSORS}
    assert {f["id"] for c in cases for f in c["filters"]} >= {
        "delta", "fixedscaleoffset", "quantize", "packbits", "categorize", "astype", "shuffle",
        "bitround", "crc32", "zlib"}
    assert {c["order"] for c in cases} == {"C", "F"}
    assert {c["sep"] for c in cases} == {".", "/", "nested"}
    assert any(c["shape"] == () for c in cases) and any(0 in c["shape"] for c in cases)
    assert any(ch > s for c in cases for ch, s in zip(c["chunks"], c["shape"], strict=True))
    assert any(s % ch for c in cases for ch, s in zip(c["chunks"], c["shape"], strict=True))
    fills = [c["fill"] for c in cases]
    assert None in fills and any(isinstance(f, float) and math.isnan(f) for f in fills)
    assert any(isinstance(f, np.datetime64) and np.isnat(f) for f in fills)
    assert any(isinstance(f, np.void) for f in fills) and any(isinstance(f, str) for f in fills)
    one_bit = np.arange(4.0)
    flipped = one_bit.copy()
    flipped.view("u8")[2] ^= 1
    assert differs(flipped, one_bit) and differs(one_bit.astype("<f4"), one_bit)


@pytest.mark.parametrize("batch", range(BATCHES))
def test_differential_fuzz(zarr2, tmp_path, batch):
    cases = [make_case(seed) for seed in range(batch * PER_BATCH, (batch + 1) * PER_BATCH)]
    failures = run_cases(cases, tmp_path)
    assert not failures, f"{len(failures)} of {len(cases)} cases differ:\n" + \
        "\n".join(failures)


# -- explicit cases -------------------------------------------------------------------------------


def zarr2_run(source: str, directory) -> object:
    """Run one snippet under zarr 2 in `directory`; its `result`, or fail with zarr 2's error."""
    (outcome,) = run_zarr2([(source, str(directory))])
    assert "error" not in outcome, f"zarr 2: {outcome['error']} (line {outcome.get('line')})"
    return outcome["result"]


def zarr2_load(directory, name: str) -> np.ndarray:
    return np.load(os.path.join(directory, name + ".npy"), allow_pickle=True)


def test_bitround_big_endian_refused(zarr2, tmp_path):
    """numcodecs' BitRound knows native floats only; zarr 2 fails with a bare KeyError when it
    writes, zarrkit refuses the array up front, naming the filter and the type."""
    with pytest.raises(zarrkit.CodecError, match="bitround.*>f4"):
        zarrkit.create(tmp_path / "k", shape=(3,), dtype=">f4", zarr_format=2,
                       filters=[{"id": "bitround", "keepbits": 6}])
    error = run_zarr2([("""
a = zarr.create(shape=(3,), dtype=">f4", filters=[numcodecs.BitRound(6)], store=d + "/z")
a[...] = 1.5
""", str(tmp_path))])[0]["error"]
    assert error.startswith("KeyError")


@pytest.mark.parametrize("codec", ["json2", "msgpack2"])
def test_json_msgpack_order_f_read_by_zarr2(zarr2, tmp_path, codec):
    """zarr 2 bug: with order F it writes json2/msgpack2 chunks that it (and so zarrkit, which
    decodes the same bytes the same way) reads back scrambled. zarrkit writes them in F order
    as the spec says, and zarr 2 reads zarrkit's exactly."""
    data = _object_data(codec, (2, 7), seed=3)
    a = zarrkit.create(tmp_path / "ours", shape=(2, 7), chunks=(2, 5), dtype=object,
                       zarr_format=2, order="F", filters=[{"id": codec}], fill_value=None)
    a[...] = data
    np.save(tmp_path / "data.npy", data, allow_pickle=True)
    zarr2_run(f"""
save("ours", zarr.open_array(d + "/ours", mode="r")[...])
a = zarr.create(shape=(2, 7), chunks=(2, 5), dtype=object, order="F", fill_value=None,
                filters=[numcodecs.get_codec({{"id": "{codec}"}})], store=d + "/theirs")
a[...] = load("data")
save("theirs", a[...])
""", tmp_path)
    assert_exact(zarr2_load(tmp_path, "ours"), data)
    assert_exact(zarrkit_read(tmp_path / "ours"), data)
    theirs = zarr2_load(tmp_path, "theirs")
    assert differs(theirs, data)  # the bug: if this starts failing, zarr 2 was fixed
    assert_exact(zarrkit_read(tmp_path / "theirs"), theirs)


def test_default_metadata_matches_zarr2(zarr2, tmp_path):
    """Arrays created with no options get zarr 2's .zarray: Blosc/LZ4 with byte shuffle, C
    order, fill 0 (empty text for strings)."""
    dtypes = ["<f8", ">i2", "|S3", "<U2", "|b1", "<c16"]
    for i, dtype in enumerate(dtypes):
        zarrkit.create(tmp_path / f"k{i}", shape=(3,), chunks=(2,), dtype=dtype, zarr_format=2)
    zarr2_run(f"""
for i, dtype in enumerate({dtypes!r}):
    zarr.create(shape=(3,), chunks=(2,), dtype=dtype, store=d + f"/z{{i}}")
""", tmp_path)
    for i in range(len(dtypes)):
        theirs = json.loads((tmp_path / f"z{i}" / ".zarray").read_text())
        ours = json.loads((tmp_path / f"k{i}" / ".zarray").read_text())
        assert _metadata_problems(theirs, ours) == []
        assert theirs["compressor"] == ours["compressor"]


def test_vlen_bytes_fill_value(zarr2, tmp_path):
    """zarrkit writes a vlen-bytes fill value as base64 (zarr-python 3's convention; zarr 2
    cannot write one at all: "bytes is not JSON serializable"). zarr 2 reads that text back
    as the fill, undecoded, so it sees "Zng=" where the value is b"fx": no v2 reader agrees
    on this, so only null and written chunks are portable."""
    a = zarrkit.create(tmp_path / "ours", shape=(4,), chunks=(2,), dtype=bytes,
                       fill_value=b"fx", zarr_format=2)
    a[:2] = np.array([b"a", b""], object)
    outcome = run_zarr2([("""
save("ours", zarr.open_array(d + "/ours", mode="r")[...])
zarr.create(shape=(3,), dtype=object, object_codec=numcodecs.VLenBytes(), store=d + "/z",
            fill_value=b"fx")
""", str(tmp_path))])[0]
    assert "bytes is not JSON serializable" in outcome["error"]
    assert zarr2_load(tmp_path, "ours").tolist() == [b"a", b"", "Zng=", "Zng="]
    assert zarrkit_read(tmp_path / "ours").tolist() == [b"a", b"", b"fx", b"fx"]


# -- hierarchies: groups, attributes, consolidated metadata, zip archives -------------------------

ATTRS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "text": "é☃ \U0001f600",
         "nested": {"list": [1, 2.5, None, True, "x"], "empty": {}}, "int": -(2**53)}

# Under zarr 2: a hierarchy with attributes everywhere, and what it reads of zarrkit's.
ZARR2_TREE = """
def build(root):
    root.attrs.update(ATTRS)
    sub = root.create_group("sub")
    sub.attrs["level"] = 1
    deep = sub.create_group("deeper")
    a = deep.create_dataset("a", shape=(5, 3), chunks=(2, 2), dtype="<i2", fill_value=-1)
    a[1:4, :2] = np.arange(6, dtype="<i2").reshape(3, 2)
    a.attrs["units"] = "m/s"
    s = root.create_dataset("s", shape=(3,), chunks=(2,), dtype=object, fill_value="",
                            object_codec=numcodecs.VLenUTF8())
    s[...] = np.array(["x", "yé", ""], dtype=object)

def describe(root):
    out = {}
    def visit(name, node):
        entry = {"attrs": dict(node.attrs), "kind": type(node).__name__}
        if hasattr(node, "shape"):
            save(name.replace("/", "_"), node[...])
        out[name] = entry
    root.visititems(visit)
    out[""] = {"attrs": dict(root.attrs), "kind": "Group"}
    return out
"""


def zarrkit_tree(root):
    root.attrs.update(ATTRS)
    sub = root.create_group("sub", attributes={"level": 1})
    a = sub.create_group("deeper").create_array(
        "a", shape=(5, 3), chunks=(2, 2), dtype="<i2", fill_value=-1)
    a[1:4, :2] = np.arange(6, dtype="<i2").reshape(3, 2)
    a.attrs["units"] = "m/s"
    s = root.create_array("s", shape=(3,), chunks=(2,), dtype=str)
    s[...] = np.array(["x", "yé", ""], dtype=object)


def expected_tree():
    a = np.full((5, 3), -1, "<i2")
    a[1:4, :2] = np.arange(6).reshape(3, 2)
    return {"": ATTRS, "sub": {"level": 1}, "sub/deeper": {}, "sub/deeper/a": {"units": "m/s"},
            "s": {}}, {"sub/deeper/a": a, "s": np.array(["x", "yé", ""], dtype=object)}


def check_zarrkit_sees_tree(root):
    attrs, arrays = expected_tree()
    names = sorted(name for name, _ in root.members(max_depth=None))
    assert names == sorted(n for n in attrs if n)
    for name, want in attrs.items():
        node = root[name] if name else root
        assert _json_same(dict(node.attrs), want), (name, dict(node.attrs))
    for name, want in arrays.items():
        assert_exact(root[name][...], want)


def check_zarr2_saw_tree(directory, seen):
    attrs, arrays = expected_tree()
    assert sorted(seen) == sorted(attrs)
    for name, want in attrs.items():
        assert _json_same(seen[name]["attrs"], want), name
    for name, want in arrays.items():
        assert_exact(zarr2_load(directory, name.replace("/", "_")), want)


def _zarr2_tree_job(body: str) -> str:
    return f"ATTRS = json.loads({json.dumps(ATTRS)!r})\n" + ZARR2_TREE + body


def test_hierarchy_both_directions(zarr2, tmp_path):
    zarrkit_tree(zarrkit.open_group(tmp_path / "ours", mode="w", zarr_format=2))
    seen = zarr2_run(_zarr2_tree_job("""
build(zarr.open_group(d + "/theirs", mode="w"))
result = describe(zarr.open_group(d + "/ours", mode="r"))
"""), tmp_path)
    check_zarr2_saw_tree(tmp_path, seen)
    check_zarrkit_sees_tree(zarrkit.open_group(tmp_path / "theirs", mode="r"))
    for name in (".zattrs", "sub/.zattrs", ".zgroup", "sub/deeper/a/.zattrs"):
        theirs = json.loads((tmp_path / "theirs" / name).read_text())
        ours = json.loads((tmp_path / "ours" / name).read_text())
        assert _json_same(theirs, ours), name


def test_consolidated_both_directions(zarr2, tmp_path):
    zarrkit_tree(zarrkit.open_group(tmp_path / "ours", mode="w", zarr_format=2))
    zarrkit.consolidate_metadata(tmp_path / "ours")
    seen = zarr2_run(_zarr2_tree_job("""
root = zarr.open_group(d + "/theirs", mode="w")
build(root)
zarr.consolidate_metadata(d + "/theirs")
# the record alone must be enough: hide the documents it replaces from zarr 2
ours = zarr.open_consolidated(zarr.DirectoryStore(d + "/ours"), mode="r")
result = describe(ours)
"""), tmp_path)
    check_zarr2_saw_tree(tmp_path, seen)
    theirs_doc = json.loads((tmp_path / "theirs" / ".zmetadata").read_text())
    ours_doc = json.loads((tmp_path / "ours" / ".zmetadata").read_text())
    assert theirs_doc["zarr_consolidated_format"] == ours_doc["zarr_consolidated_format"] == 1
    theirs_docs, ours_docs = theirs_doc["metadata"], ours_doc["metadata"]
    for key in theirs_docs.keys() ^ ours_docs.keys():  # zarr 2 writes no empty .zattrs
        assert key.endswith(".zattrs") and ours_docs.get(key, theirs_docs.get(key)) == {}, key
    for key in theirs_docs.keys() & ours_docs.keys():
        if key.endswith(".zarray"):
            assert _metadata_problems(theirs_docs[key], ours_docs[key]) == [], key
        else:
            assert _json_same(theirs_docs[key], ours_docs[key]), key
    # zarrkit reads zarr 2's record: attributes changed behind it stay as recorded
    (tmp_path / "theirs" / "sub" / ".zattrs").write_text(json.dumps({"level": 99}))
    root = zarrkit.open_consolidated(tmp_path / "theirs")
    check_zarrkit_sees_tree(root)


def test_zip_archives_both_directions(zarr2, tmp_path):
    from zarrkit.kvstore.zip import ZipStore

    store = ZipStore(str(tmp_path / "ours.zip"), mode="w")
    zarrkit_tree(zarrkit.open_group(store, mode="w", zarr_format=2))
    store.close()
    seen = zarr2_run(_zarr2_tree_job("""
store = zarr.ZipStore(d + "/theirs.zip", mode="w")
build(zarr.group(store=store))
store.close()
result = describe(zarr.open_group(zarr.ZipStore(d + "/ours.zip", mode="r"), mode="r"))
"""), tmp_path)
    check_zarr2_saw_tree(tmp_path, seen)
    with zipfile.ZipFile(tmp_path / "theirs.zip") as archive:
        assert ".zgroup" in archive.namelist()
    check_zarrkit_sees_tree(zarrkit.open_group(str(tmp_path / "theirs.zip"), mode="r"))


def test_string_arrays_with_zarr2s_default_fill(zarr2, tmp_path):
    """zarr 2's default fill value of a string array is 0. zarr 2 reads missing chunks as the
    int 0 and stores unwritten elements of a written chunk as "" (numcodecs encodes 0 as the
    empty, missing value); zarrkit reads the fill as "" too, so a chunk reads the same
    whether it is stored or not (zarr-python 3 reads "0" for missing chunks only). The spec
    says nothing of object fill values."""
    zarr2_run("""
a = zarr.create(shape=(6,), chunks=(2,), dtype=object, object_codec=numcodecs.VLenUTF8(),
                store=d + "/z")
a[:1] = np.array(["a"], dtype=object)
save("z", a[...])
""", tmp_path)
    assert json.loads((tmp_path / "z" / ".zarray").read_text())["fill_value"] == 0
    assert zarr2_load(tmp_path, "z").tolist() == ["a", "", 0, 0, 0, 0]
    ours = zarrkit.open(tmp_path / "z", mode="r+")
    assert ours[...].tolist() == ["a", "", "", "", "", ""]
    ours[2:3] = np.array(["x"], dtype=object)  # the chunk's other element: "", as zarr 2's
    zarr2_run('save("z", zarr.open_array(d + "/z", mode="r")[...])', tmp_path)
    assert zarr2_load(tmp_path, "z").tolist() == ["a", "", "x", "", 0, 0]
    assert json.loads((tmp_path / "z" / ".zarray").read_text())["fill_value"] == 0


# -- mutation by one library, seen by the other --------------------------------------------------

MUTATE_ZARR2 = """
a = zarr.open_array(os.path.join(d, "arr"), mode="r+")
save("before", a[...])
a.append(np.full((2, a.shape[1]), 7, a.dtype))             # grows axis 0
a.append(np.full((a.shape[0], 3), 8, a.dtype), axis=1)     # grows axis 1
a[1:3, 2:6] = np.arange(8, dtype=a.dtype).reshape(2, 4)    # a region across chunks
a.attrs["by"] = "zarr 2"
a.attrs["gone"] = None
save("after_append", a[...])
a.resize(4, 5)                                             # shrinks: chunks past it deleted
save("after_shrink", a[...])
a.resize(6, 9)                                             # grows again
save("after_regrow", a[...])
result = {"attrs": dict(a.attrs), "shape": list(a.shape)}
"""


def zarrkit_mutate(a):
    """What MUTATE_ZARR2 does, with zarrkit; the reads along the way."""
    reads = {"before": a[...]}
    a.append(np.full((2, a.shape[1]), 7, a.dtype))
    a.append(np.full((a.shape[0], 3), 8, a.dtype), axis=1)
    a[1:3, 2:6] = np.arange(8, dtype=a.dtype).reshape(2, 4)
    a.attrs.update({"by": "zarr 2", "gone": None})
    reads["after_append"] = a[...]
    a.resize(4, 5)
    reads["after_shrink"] = a[...]
    a.resize(6, 9)
    reads["after_regrow"] = a[...]
    return reads


@pytest.mark.parametrize("creator", ["zarrkit", "zarr2"])
@pytest.mark.parametrize("sep, order, fill", [(".", "C", 0), ("/", "F", -3), ("/", "C", 5)])
def test_mutation_both_directions(zarr2, tmp_path, sep, order, fill, creator):
    """One array, created by either library, appended to, written, shrunk and grown again by
    the other; both end in the same state and each reads the other's exactly.

    Except one deliberate difference: shrinking, zarr 2 deletes the chunks past the new shape
    but leaves the cut-off part of the edge chunks, which shows again when the array grows
    (column 5 of rows 0-3 here); zarrkit erases it to the fill value (Array.resize). The spec
    leaves chunk contents outside the array undefined, so both are allowed; zarrkit's never
    shows stale data."""
    data = np.arange(15, dtype="<i4").reshape(5, 3)
    for who in ("zk", "z2"):
        if creator == "zarrkit":
            a = zarrkit.create(tmp_path / who / "arr", shape=(5, 3), chunks=(2, 2),
                               dtype="<i4", zarr_format=2, dimension_separator=sep,
                               order=order, fill_value=fill)
            a[...] = data
        else:
            zarr2_run(f"""
a = zarr.create(shape=(5, 3), chunks=(2, 2), dtype="<i4", dimension_separator={sep!r},
                order={order!r}, fill_value={fill!r}, store=d + "/arr")
a[...] = np.arange(15, dtype="<i4").reshape(5, 3)
""", tmp_path / who)
    mine = zarrkit_mutate(zarrkit.open(tmp_path / "zk" / "arr", mode="r+"))
    their = zarr2_run(MUTATE_ZARR2, tmp_path / "z2")
    assert their["attrs"] == {"by": "zarr 2", "gone": None} and their["shape"] == [6, 9]
    stale_theirs = zarr2_load(tmp_path / "z2", "after_regrow")
    assert_exact(zarrkit_read(tmp_path / "z2" / "arr"), stale_theirs)
    assert (stale_theirs[:4, 5] == [8, 3, 7, 8]).all()  # zarr 2's stale values
    for name, ours in mine.items():
        theirs = zarr2_load(tmp_path / "z2", name)
        if name == "after_regrow":
            theirs[:4, 5] = fill
        assert_exact(ours, theirs)
    theirs_doc = json.loads((tmp_path / "z2" / "arr" / ".zarray").read_text())
    ours_doc = json.loads((tmp_path / "zk" / "arr" / ".zarray").read_text())
    assert _metadata_problems(theirs_doc, ours_doc) == []
    assert zarrkit.open(tmp_path / "z2" / "arr").attrs.asdict() == {"by": "zarr 2",
                                                                    "gone": None}
    assert zarr2_run('a = zarr.open_array(d + "/zk/arr", mode="r")\n'
                     'save("zk", a[...])\nresult = dict(a.attrs)', tmp_path) == \
        {"by": "zarr 2", "gone": None}
    assert_exact(zarr2_load(tmp_path, "zk"), mine["after_regrow"])


@pytest.mark.parametrize("value", [[1, "x"], "y", 5, {"k": [None]}])
def test_msgpack_zero_dimensional(zarr2, tmp_path, value):
    """Regression: numcodecs' MsgPack cannot encode a 0-d array: zarrkit failed to write one
    ("'int' object has no attribute 'extend'"), or extended the caller's list in place and
    then could not read the chunk back. zarr 2 has the same bug; zarrkit now stores the one
    element as a 1-element chunk, which zarr 2 reads."""
    data = np.empty((), dtype=object)
    data[()] = value
    original = json.dumps(value)
    a = zarrkit.create(tmp_path / "ours", shape=(), dtype=object, zarr_format=2,
                       filters=[{"id": "msgpack2"}], fill_value=None)
    a[...] = data
    assert json.dumps(value) == original  # the caller's value is untouched
    assert_exact(zarrkit_read(tmp_path / "ours"), data)
    zarr2_run('save("ours", zarr.open_array(d + "/ours", mode="r")[...])', tmp_path)
    assert_exact(zarr2_load(tmp_path, "ours").reshape(()), data)


def test_bitround_order_f(zarr2, tmp_path):
    """zarr 2 bug: numcodecs' BitRound returns a C-ordered copy of an F-ordered chunk, which
    zarr 2 stores as is under an F-order .zarray: it reads its own array back scrambled.
    zarrkit stores F-ordered bytes as the spec says; zarr 2 reads those right, and zarrkit
    reads zarr 2's bytes as zarr 2 does."""
    import numcodecs

    data = np.arange(35, dtype="<f8").reshape(7, 5) / 3
    codec = numcodecs.BitRound(6)
    expected = codec.decode(codec.encode(data.copy())).reshape(data.shape)
    a = zarrkit.create(tmp_path / "ours", shape=(7, 5), chunks=(5, 8), dtype="<f8",
                       zarr_format=2, order="F", filters=[{"id": "bitround", "keepbits": 6}])
    a[...] = data
    np.save(tmp_path / "data.npy", data)
    zarr2_run("""
save("ours", zarr.open_array(d + "/ours", mode="r")[...])
a = zarr.create(shape=(7, 5), chunks=(5, 8), dtype="<f8", order="F", store=d + "/theirs",
                filters=[numcodecs.BitRound(6)])
a[...] = load("data")
save("theirs", a[...])
""", tmp_path)
    assert_exact(zarrkit_read(tmp_path / "ours"), expected)
    assert_exact(zarr2_load(tmp_path, "ours"), expected)
    theirs = zarr2_load(tmp_path, "theirs")
    assert differs(theirs, expected)  # the bug: if this starts failing, zarr 2 was fixed
    assert_exact(zarrkit_read(tmp_path / "theirs"), theirs)


def test_zarrkit_changes_seen_through_zarr2s_consolidated_record(zarr2, tmp_path):
    """zarr 2 consolidates a hierarchy; zarrkit adds an array, resizes one and changes
    attributes. zarrkit keeps the record up to date, so zarr 2's open_consolidated sees
    the hierarchy as it is."""
    zarr2_run("""
root = zarr.open_group(d + "/h", mode="w")
root.create_dataset("a", shape=(4,), chunks=(2,), dtype="<i4")[...] = np.arange(4)
root.create_group("g").attrs["v"] = 1
zarr.consolidate_metadata(d + "/h")
""", tmp_path)
    root = zarrkit.open_group(tmp_path / "h", mode="r+")
    root["a"].resize(6)
    root["a"][4:] = [40, 50]
    root["g"].attrs["v"] = 2
    root["g"].create_array("new", shape=(2, 2), dtype="<f4", dimension_names=["y", "x"])[...] = 1.5
    seen = zarr2_run("""
root = zarr.open_consolidated(d + "/h", mode="r")
save("a", root["a"][...])
save("new", root["g/new"][...])
result = {"g": dict(root["g"].attrs), "new": dict(root["g/new"].attrs),
          "keys": sorted(root.group_keys()) + sorted(root.array_keys())}
""", tmp_path)
    assert seen == {"g": {"v": 2}, "new": {"_ARRAY_DIMENSIONS": ["y", "x"]},
                    "keys": ["g", "a"]}
    assert_exact(zarr2_load(tmp_path, "a"), np.array([0, 1, 2, 3, 40, 50], "<i4"))
    assert_exact(zarr2_load(tmp_path, "new"), np.full((2, 2), 1.5, "<f4"))


def test_dimension_names_from_zarr2(zarr2, tmp_path):
    """xarray's `_ARRAY_DIMENSIONS` attribute, set by zarr 2, is zarrkit's dimension_names."""
    zarr2_run("""
a = zarr.create(shape=(2, 3), dtype="<u2", store=d + "/a")
a.attrs["_ARRAY_DIMENSIONS"] = ["time", "x"]
""", tmp_path)
    assert zarrkit.open(tmp_path / "a", mode="r").dimension_names == ("time", "x")


def test_empty_dimension_chunked_zero_by_zarr2(zarr2, tmp_path):
    """zarr 2 writes a chunk length of 0 for an empty dimension given `None`; zarrkit reads
    the array and appends to it, and zarr 2 reads the result."""
    zarr2_run("""
zarr.create(shape=(0, 3), chunks=(None, 2), dtype="<i8", store=d + "/e")
""", tmp_path)
    assert json.loads((tmp_path / "e" / ".zarray").read_text())["chunks"] == [0, 2]
    a = zarrkit.open(tmp_path / "e", mode="r+")
    assert_exact(a[...], np.zeros((0, 3), "<i8"))
    a.append(np.arange(6, dtype="<i8").reshape(2, 3))
    zarr2_run('save("e", zarr.open_array(d + "/e", mode="r")[...])', tmp_path)
    assert_exact(zarr2_load(tmp_path, "e"), np.arange(6, dtype="<i8").reshape(2, 3))


def test_negative_zero_fill_value(zarr2, tmp_path):
    """zarr 2 drops the sign of a fill value of -0.0 (its .zarray says 0.0, and its missing
    chunks read as +0.0). zarrkit keeps it, as the spec's JSON number allows: zarr 2 reads
    zarrkit's -0.0 right."""
    a = zarrkit.create(tmp_path / "ours", shape=(4,), chunks=(2,), dtype="<f8",
                       zarr_format=2, fill_value=-0.0)
    a[:1] = 1.0
    assert json.loads((tmp_path / "ours" / ".zarray").read_text())["fill_value"] == -0.0
    assert math.copysign(1, json.loads((tmp_path / "ours" / ".zarray").read_text())[
        "fill_value"]) == -1
    expected = np.array([1.0, -0.0, -0.0, -0.0])
    assert_exact(a[...], expected)
    zarr2_run("""
save("ours", zarr.open_array(d + "/ours", mode="r")[...])
zarr.create(shape=(4,), chunks=(2,), dtype="<f8", fill_value=-0.0, store=d + "/theirs")
""", tmp_path)
    assert_exact(zarr2_load(tmp_path, "ours"), expected)
    theirs = json.loads((tmp_path / "theirs" / ".zarray").read_text())["fill_value"]
    assert theirs == 0.0 and math.copysign(1, theirs) == 1  # the bug

"""Shared definitions for the benchmark harness (imported by run.py and _worker.py).

Nothing here imports a Zarr library: layouts are described as plain Zarr v3 JSON so
that every library under test is given exactly the same codec chain.
"""

from __future__ import annotations

import math
import zlib

import numpy as np

SEED = 20250611
REGION = 256  # edge of the random read regions
DEFAULT_SIZE = 8192  # main array edge; the "small chunks" array is half of it

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
CRC32C = {"name": "crc32c"}
BLOSC = {
    "name": "blosc",
    "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2},
}
ZSTD = {"name": "zstd", "configuration": {"level": 3, "checksum": False}}

# name -> layout. "chunks" is the (inner) chunk shape, "shards" the shard shape or None.
LAYOUTS: dict[str, dict] = {
    "blosc": {"array": "u16", "chunks": (512, 512), "shards": None, "compressor": BLOSC},
    "zstd": {"array": "u16", "chunks": (512, 512), "shards": None, "compressor": ZSTD},
    "blosc-sharded": {
        "array": "u16",
        "chunks": (256, 256),
        "shards": (2048, 2048),
        "compressor": BLOSC,
    },
    "zstd-sharded": {
        "array": "u16",
        "chunks": (256, 256),
        "shards": (2048, 2048),
        "compressor": ZSTD,
    },
    "small": {"array": "f32", "chunks": (64, 64), "shards": None, "compressor": None},
}

OPS = ("write", "read", "regions")
WORKLOADS: list[str] = [
    f"{lay}:{op}" for lay in LAYOUTS for op in OPS if not (lay == "small" and op == "regions")
]

LIBS = ("zarrkit", "tensorstore", "zarrs", "zarr")
LIB_LABELS = {
    "zarrkit": "zarrkit",
    "tensorstore": "tensorstore",
    "zarrs": "zarr+zarrs",
    "zarr": "zarr",
}
PEERS_FAST = ("tensorstore", "zarrs")  # "best peer" for the first ratio
PEER_BASELINE = "zarr"  # plain zarr-python, second ratio


def array_info(kind: str, size: int) -> tuple[tuple[int, int], str]:
    """(shape, dtype) of the benchmark arrays for a given --size."""
    if kind == "u16":
        return (size, size), "uint16"
    n = max(size // 2, 64)
    return (n, n), "float32"


def inner_codecs(layout: dict) -> list[dict]:
    """Array->bytes plus bytes->bytes codecs (the inner chain when sharded)."""
    chain = [dict(BYTES)]
    if layout["compressor"] is not None:
        chain.append(layout["compressor"])
    return chain


def v3_codecs(layout: dict) -> list[dict]:
    """Complete v3 codec list as it should appear in zarr.json."""
    inner = inner_codecs(layout)
    if layout["shards"] is None:
        return inner
    return [
        {
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": list(layout["chunks"]),
                "codecs": inner,
                "index_codecs": [dict(BYTES), dict(CRC32C)],
                "index_location": "end",
            },
        }
    ]


def grid_shape(layout: dict) -> tuple[int, int]:
    return tuple(layout["shards"] or layout["chunks"])


# --------------------------------------------------------------------------- data


def make_array(kind: str, size: int, seed: int = SEED) -> np.ndarray:
    """Deterministic, compressible test data: a smooth field plus small noise.

    u16: a few low-frequency waves spanning ~[100, 4100] (a 12-bit camera-like range)
    plus 0..7 uniform noise, so the low bits are incompressible as in real sensor data
    (blosc/lz4+shuffle ~1.8x, zstd-3 ~1.5x).
    f32: smooth field plus N(0, 0.01) noise.
    """
    shape, dtype = array_info(kind, size)
    n = shape[0]
    rng = np.random.default_rng(seed + (0 if kind == "u16" else 1))
    y = np.linspace(0.0, 1.0, n, dtype=np.float32)[:, None]
    x = np.linspace(0.0, 1.0, shape[1], dtype=np.float32)[None, :]
    field = np.zeros(shape, dtype=np.float32)
    for _ in range(5):
        fy, fx = rng.uniform(0.5, 6.0, size=2)
        py, px = rng.uniform(0.0, 2 * math.pi, size=2)
        amp = rng.uniform(0.5, 1.0)
        field += (
            amp
            * np.sin(np.float32(2 * math.pi * fy) * y + np.float32(py))
            * np.cos(np.float32(2 * math.pi * fx) * x + np.float32(px))
        )
    if kind == "u16":
        lo, hi = float(field.min()), float(field.max())
        field -= lo
        field *= np.float32(4000.0 / (hi - lo))
        field += np.float32(100.0)
        out = field.astype(np.uint16)
        out += rng.integers(0, 8, size=shape, dtype=np.uint16)
        return out
    field += rng.standard_normal(size=shape, dtype=np.float32) * np.float32(0.01)
    return field.astype(dtype, copy=False)


def region_positions(size: int, count: int, seed: int = SEED) -> list[tuple[int, int]]:
    """Seeded random top-left corners of REGION x REGION reads (same for all libs)."""
    rng = np.random.default_rng(seed + 7)
    hi = max(size - REGION, 0) + 1
    rs = rng.integers(0, hi, size=count)
    cs = rng.integers(0, hi, size=count)
    return [(int(r), int(c)) for r, c in zip(rs, cs, strict=True)]


def checksum(arr, dtype: str, shape: tuple[int, ...]) -> str:
    """crc32 of the little-endian C-order bytes; 'shape…'/'dtype…' on mismatch."""
    a = np.asarray(arr)
    if tuple(a.shape) != tuple(shape):
        return f"shape{tuple(a.shape)}"
    want = np.dtype(dtype)
    if a.dtype.kind != want.kind or a.dtype.itemsize != want.itemsize:
        return f"dtype:{a.dtype}"
    a = np.ascontiguousarray(a, dtype=want.newbyteorder("<"))
    return f"{zlib.crc32(memoryview(a).cast('B')):08x}"


# --------------------------------------------------------------------------- layout check

_KEEP = {
    "bytes": ("endian",),
    "blosc": ("cname", "clevel", "shuffle", "typesize"),
    "zstd": ("level",),
    "crc32c": (),
    "sharding_indexed": ("chunk_shape", "codecs", "index_codecs", "index_location"),
}


_DEFAULTS = {("sharding_indexed", "index_location"): "end"}  # spec default when omitted


def normalize_codecs(codecs) -> list:
    """Reduce a v3 codec list to the fields that define the layout under test."""
    out = []
    for c in codecs or []:
        if isinstance(c, str):
            c = {"name": c}
        name = c.get("name")
        conf = c.get("configuration") or {}
        keep = {}
        for k in _KEEP.get(name, tuple(sorted(conf))):
            v = conf.get(k, _DEFAULTS.get((name, k)))
            if k in ("codecs", "index_codecs"):
                v = normalize_codecs(v)
            elif isinstance(v, (list, tuple)):
                v = list(v)
            keep[k] = v
        out.append([name, keep])
    return out


def check_layout(meta: dict, layout: dict, shape, dtype: str) -> str | None:
    """None if zarr.json describes the intended layout, else a short description."""
    problems = []
    if meta.get("zarr_format") != 3:
        problems.append(f"zarr_format={meta.get('zarr_format')}")
    if list(meta.get("shape", [])) != list(shape):
        problems.append(f"shape={meta.get('shape')}")
    if meta.get("data_type") != dtype:
        problems.append(f"data_type={meta.get('data_type')}")
    grid = (meta.get("chunk_grid") or {}).get("configuration", {}).get("chunk_shape")
    if list(grid or []) != list(grid_shape(layout)):
        problems.append(f"chunk_grid={grid}")
    got, want = normalize_codecs(meta.get("codecs")), normalize_codecs(v3_codecs(layout))
    if got != want:
        problems.append(f"codecs={got} (want {want})")
    return "; ".join(problems) or None

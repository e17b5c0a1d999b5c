"""The `.zarray` compressors TensorStore's zarr driver knows, with its defaults and limits.

TensorStore fills a partly given compressor with its defaults before comparing or writing it
(`{"id": "zlib"}` is `{"id": "zlib", "level": 1}`), refuses members it does not know, values out
of range and compressor ids it has not registered. `with_defaults` is the lenient form used to
describe stored arrays (other writers' compressors pass through); `check_compressor` is the
strict form for constraints a spec gives.
"""

from __future__ import annotations

import copy
from typing import Any

from ..errors import SpecError

_BLOSC_NAMES = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")
# id -> member -> (default, low, high); None bounds: any value of the member's kind.
_KNOWN: dict[str, dict[str, tuple[Any, Any, Any]]] = {
    "blosc": {"cname": ("lz4", None, None), "clevel": (5, 0, 9), "shuffle": (-1, -1, 2),
              "blocksize": (0, 0, 2**64 - 1)},
    "zlib": {"level": (1, 0, 9)},
    "gzip": {"level": (1, 0, 9)},
    "zstd": {"level": (1, -131072, 22)},
    "bz2": {"level": (1, 1, 9)},
}
DEFAULT_COMPRESSOR: dict[str, Any] = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": -1,
                                      "blocksize": 0}


def with_defaults(compressor: Any) -> Any:
    """A known compressor with TensorStore's defaults filled in; anything else unchanged."""
    if not isinstance(compressor, dict) or compressor.get("id") not in _KNOWN:
        return copy.deepcopy(compressor)
    defaults = {name: spec[0] for name, spec in _KNOWN[compressor["id"]].items()}
    return {"id": compressor["id"], **defaults, **{k: v for k, v in compressor.items()
                                                   if k != "id"}}


def _integer(value: Any, low: int, high: int, where: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # TensorStore reads 3.0 as 3
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SpecError(f"{where}: expected an integer in [{low}, {high}], got {value!r}")
    return value


def check_compressor(compressor: Any, where: str) -> dict[str, Any] | None:
    """A spec's compressor (null or an object) checked and completed as TensorStore does."""
    if compressor is None:
        return None
    if not isinstance(compressor, dict):
        raise SpecError(f"{where}: expected null or an object, got {compressor!r}")
    cid = compressor.get("id")
    if not isinstance(cid, str):
        raise SpecError(f"{where}.id: expected a string, got {cid!r}")
    if cid not in _KNOWN:
        raise SpecError(f"{where}.id: {cid!r} is not a compressor TensorStore's zarr driver "
                        f"writes (one of {sorted(_KNOWN)})")
    members = _KNOWN[cid]
    extra = sorted(set(compressor) - set(members) - {"id"})
    if extra:
        raise SpecError(f"{where}: unknown member(s) {extra} for compressor {cid!r}")
    out = with_defaults(compressor)
    for name, (_, low, high) in members.items():
        if name == "cname":
            if out[name] not in _BLOSC_NAMES:
                raise SpecError(f"{where}.cname: expected one of {list(_BLOSC_NAMES)}, got "
                                f"{out[name]!r}")
        else:
            out[name] = _integer(out[name], low, high, f"{where}.{name}")
    return out

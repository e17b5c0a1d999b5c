"""A seeded fuzzer of bad input: the public API called with randomly wrong arguments mixed with
right ones (creation and opening functions, Array selections and methods, Group methods,
TensorStore-style specs, the CLI). Every failure must be a zarrkit error (not an internal
AttributeError, TypeError, ... from inside zarrkit) with a message naming something the call
was given; a failed write leaves the store's keys and bytes as they were; a call that succeeds
leaves an array that reads back what zarr-python or numpy give for the same operation.
The cases the fuzzer found are kept as explicit regression tests at the end."""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import os
import random
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import zarr

import zarrkit
from zarrkit.cli import main as cli_main
from zarrkit.errors import (
    CodecError,
    InvalidNameError,
    MetadataError,
    SpecError,
    ZarrkitError,
)
from zarrkit.kvstore import MemoryStore

SEED = 20261129

# Python's own refusal of a call's signature, raised before any zarrkit code runs.
_SIGNATURE = ("unexpected keyword argument", "positional argument")


class _Unprintable:
    """An object of no type zarrkit knows."""

    def __repr__(self) -> str:
        return "<Unprintable>"


_ODD = _Unprintable()


def _snapshot(store: Any) -> dict[str, bytes]:
    return {k: bytes(store.get(k)) for k in sorted(store.list_prefix(""))
            if ".zarrkit-locks" not in k}


def _spellings(value: Any) -> list[str]:
    """How a message may name `value`."""
    if isinstance(value, str):
        return [value] if value else ["''", '""']
    if isinstance(value, np.ndarray):
        first = [repr(value.flat[0])[:20]] if value.size else []
        return [repr(value)[:12], str(value.tolist())[:12], str(value)[:12], *first]
    keys = [repr(k)[:20] for k in value] if isinstance(value, dict) else []
    return [repr(value)[:20], str(value)[:20], f" {type(value).__name__}", *keys]


def _names_culprit(message: str, culprits: dict[str, Any]) -> bool:
    """The loose rule: the message names one of the arguments given, by name, value or (for
    a value not a string) its type."""
    text = message.lower()
    for name, value in culprits.items():
        if name.lower() in text or name.replace("_", " ").lower() in text:
            return True
        if any(s and s.lower() in text for s in _spellings(value)):
            return True
    return False


def _attempt(call: Callable[[], Any], what: str,
             culprits: dict[str, Any] | None = None) -> tuple[bool, Any]:
    """(True, result) or (False, exception), asserting the exception is a proper one."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return True, call()
    except ZarrkitError as e:
        assert type(e).__module__ == "zarrkit.errors", f"{what}: {type(e)}"
        assert str(e).strip(), f"{what}: empty message from {type(e).__name__}"
        if culprits is not None:
            assert _names_culprit(str(e), culprits), \
                f"{what}: {type(e).__name__}({e}) names none of {list(culprits)}"
        return False, e
    except TypeError as e:
        # Python's own signature check at the user's call names the argument: acceptable.
        if any(s in str(e) for s in _SIGNATURE):
            return False, e
        raise AssertionError(f"{what}: internal {type(e).__name__}: {e}") from e
    except Exception as e:
        raise AssertionError(f"{what}: internal {type(e).__module__}.{type(e).__name__}: "
                             f"{e}") from e


# -- 1. selections -----------------------------------------------------------------------------
_SELECTIONS: list[Any] = [
    None, "x", 1.5, -1, 0, 4, -6, 5, 2**70, -2**70, [], [1, 2], [0, 5], [-1, 0], {}, b"x",
    np.float64(1.5), np.int64(3), np.array([1, 2]), np.array([[1]]), _ODD, Ellipsis,
    slice(None), slice(0, 5, -1), slice(None, None, -1), slice(1.5, 3), slice("a"),
    slice(None, None, 0), slice(0, 2**70), slice(-2**70, 2), (0, 0, 0), (Ellipsis, Ellipsis),
    np.ones(5, bool), np.ones((5, 6), bool), np.ones((9, 9), bool), [True, False],
    np.array([1.5]), [[0, 1], [1, 2]], (None,), (None, 0), np.array([10**19], np.uint64),
    complex(1, 1), True, np.bool_(True), ([0, 1], [0, 1, 2]), range(3), (1, "a"), (1, 2),
    (slice(0, 2), [0, 2]), ([0, 4], [5, 0]), (np.array([0, 1]), np.array([2, 3])),
    np.zeros((5, 6), bool), (slice(1, 3), Ellipsis), (0, slice(None, None, 2)),
    slice(1, 4), (1, slice(None)), [0, 2], (slice(0, 3), 2), (-1, -2), (1, [0, 3]),
]
_VALUES: list[Any] = [1, np.arange(3), "x", None, 1.5, [1, 2], np.ones((5, 6)), _ODD, 2**40,
                      complex(1, 2), np.arange(6), np.zeros((2, 3)), b"\x01"]
_KINDS = ["get", "set", "oget", "oset", "vget", "vset", "bget", "bset", "get_basic",
          "set_basic", "get_orth", "set_orth", "get_coord", "set_coord", "get_mask",
          "set_mask", "get_block", "set_block"]


# What a message about a selection or a value written may name it by.
_SELECTION_WORDS = dict.fromkeys(["index", "select", "slice", "bound", "step", "dimension",
                                  "axis", "shape", "mask", "block", "coordinate", "cast",
                                  "data type", "broadcast"])


def _selection_call(a: Any, kind: str, sel: Any, value: Any) -> Callable[[], Any]:
    """The operation `kind` on `a` (a zarrkit or zarr-python array)."""
    table: dict[str, Callable[[], Any]] = {
        "get": lambda: a[sel], "set": lambda: a.__setitem__(sel, value),
        "oget": lambda: a.oindex[sel], "oset": lambda: a.oindex.__setitem__(sel, value),
        "vget": lambda: a.vindex[sel], "vset": lambda: a.vindex.__setitem__(sel, value),
        "bget": lambda: a.blocks[sel], "bset": lambda: a.blocks.__setitem__(sel, value),
        "get_basic": lambda: a.get_basic_selection(sel),
        "set_basic": lambda: a.set_basic_selection(sel, value),
        "get_orth": lambda: a.get_orthogonal_selection(sel),
        "set_orth": lambda: a.set_orthogonal_selection(sel, value),
        "get_coord": lambda: a.get_coordinate_selection(sel),
        "set_coord": lambda: a.set_coordinate_selection(sel, value),
        "get_mask": lambda: a.get_mask_selection(sel),
        "set_mask": lambda: a.set_mask_selection(sel, value),
        "get_block": lambda: a.get_block_selection(sel),
        "set_block": lambda: a.set_block_selection(sel, value),
    }
    return table[kind]


def _oracle(kind: str, sel: Any, value: Any, data: np.ndarray) -> tuple[bool, Any]:
    """zarr-python's answer for the same operation on the same data: (ok, result or data)."""
    z = zarr.create_array(zarr.storage.MemoryStore(), shape=data.shape, chunks=(2, 3),
                          dtype=data.dtype, fill_value=0)
    z[...] = data
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = _selection_call(z, kind, copy.deepcopy(sel), value)()
    except Exception:
        return False, None
    return True, (np.asarray(z[...]) if "set" in kind else np.asarray(got))


@pytest.mark.parametrize("part", range(4))
def test_fuzzed_selections(part: int) -> None:
    rng = random.Random(SEED + part)
    data = np.arange(30, dtype="i4").reshape(5, 6)
    compared = 0
    for i in range(150):
        store = MemoryStore()
        a = zarrkit.create(store, shape=(5, 6), chunks=(2, 3), dtype="i4", fill_value=0)
        a[...] = data
        sel = rng.choice(_SELECTIONS)
        if rng.random() < 0.5:
            sel = (rng.choice(_SELECTIONS), rng.choice(_SELECTIONS))
        kind, value = rng.choice(_KINDS), rng.choice(_VALUES)
        what = f"#{i} {kind} {sel!r:.80} value={value!r:.40}"
        before = _snapshot(store)
        ok, got = _attempt(_selection_call(a, kind, copy.deepcopy(sel), value), what)
        if not ok:
            assert _snapshot(store) == before, f"{what}: a failed call changed the store"
            culprits = {"selection": sel, "value": value, **_SELECTION_WORDS}
            assert _names_culprit(str(got), culprits), f"{what}: {got!r} names nothing"
        else:
            now = np.asarray(a[...]) if "set" in kind else np.asarray(got)
            agrees, want = _oracle(kind, sel, value, data)
            if agrees:
                compared += 1
                np.testing.assert_array_equal(now, want, err_msg=what)
    assert compared > 5  # the fuzzer reached calls that work, not only refusals


# -- 2. creating and opening -------------------------------------------------------------------
_BAD: list[Any] = [
    None, "x", 1.5, -1, 0, 3, 2**70, [], [1, 2], [0], [-1, 2], [2, 3, 4], {}, {"a": 1}, b"x",
    np.float64(1.5), np.int64(3), np.array([1, 2]), _ODD, "i4", "float64", "nonsense", "<U3",
    "|O", "M8[s]", "bool", [1.5, 2], (2, "a"), (4, 4), float("nan"), float("inf"), True, "r",
    "w", "a", "w-", "r+", "zz", 2, "gzip", ["gzip"], [{"name": "nope"}],
    {"name": "zstd", "configuration": {"level": "x"}}, {"id": "blosc"}, {"id": "nope"}, "C",
    "F", "/", ".", "..", "", "a//b", "__zarr", "/a/", [[1]],
]
_KEYWORDS = ["shape", "chunks", "dtype", "fill_value", "order", "zarr_format", "compressor",
             "compressors", "filters", "serializer", "shards", "mode", "path", "attributes",
             "dimension_separator", "chunk_key_encoding", "dimension_names", "overwrite",
             "codecs", "write_empty_chunks", "storage_options", "config", "read_only"]
_GOOD: dict[str, list[Any]] = {"shape": [(4, 4), 10, (3,)], "chunks": [(2, 2), 5, None],
                               "dtype": ["i4", "f8", "u1"], "fill_value": [0, 1],
                               "zarr_format": [2, 3], "mode": ["w", "a"]}
_FUNCTIONS = ["open", "open_array", "open_group", "create", "create_array", "create_group",
              "array", "zeros", "ones", "full", "empty", "zeros_like", "full_like", "empty_like",
              "ones_like", "open_like", "save", "save_array", "load", "from_array", "group",
              "open_consolidated", "create_hierarchy", "consolidate_metadata",
              "upgrade_metadata", "copy_store", "copy", "copy_all", "convert"]
_TAKE_DATA = ("array", "from_array", "zeros_like", "full_like", "empty_like", "ones_like",
              "open_like", "copy", "copy_all", "convert")


def _existing(tmp: str) -> tuple[MemoryStore, str]:
    """A store and a directory each holding a group with an array of data."""
    store = MemoryStore()
    for where in (store, os.path.join(tmp, "old.zarr")):
        g = zarrkit.open_group(where, mode="w")
        g.create_array("x", shape=(4, 4), chunks=(2, 2), dtype="i4")[...] = 7
        g.attrs["keep"] = 1
    return store, os.path.join(tmp, "old.zarr")


def _dir_snapshot(path: str) -> dict[str, bytes]:
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            full = os.path.join(root, f)
            if ".zarrkit-locks" not in full:
                with open(full, "rb") as fh:
                    out[os.path.relpath(full, path)] = fh.read()
    return out


def _creation_call(rng: random.Random, tmp: str, i: int, src: Any,
                   old: tuple[MemoryStore, str]) -> tuple[str, Callable[[], Any], dict]:
    name = rng.choice(_FUNCTIONS)
    kw = {k: rng.choice(_BAD + _GOOD.get(k, []) * 3)
          for k in rng.sample(_KEYWORDS, rng.randint(0, 4))}
    if rng.random() < 0.3:  # right ones only, at times
        kw = {k: rng.choice(v) for k, v in _GOOD.items() if rng.random() < 0.3}
    where = rng.choice([None, MemoryStore(), os.path.join(tmp, f"p{i}"), old[0], old[1],
                        os.path.join(tmp, "file.txt"), 5, "memory://", {"a": 1}, src,
                        np.arange(4), os.path.join(tmp, "file.txt", "under"), ""])
    if name == "from_array":  # from_array(store, data=...)
        data = rng.choice([np.arange(6).reshape(2, 3), src, [1, 2], "x", None, _ODD])
        args, culprits = [where], {"data": data, "where": where}
        kw["data"] = data
    elif name in _TAKE_DATA:
        data = rng.choice([np.arange(6).reshape(2, 3), src, [1, 2], "x", None, 5, _ODD,
                           np.array([_ODD])])
        args, culprits = [data, where], {"data": data, "where": where}
    elif name == "save":
        data = rng.choice([np.arange(3), [1], "x", None, {"a": 1}])
        args, culprits = [where, data], {"data": data, "where": where}
    elif name == "copy_store":
        source = rng.choice([src.store, MemoryStore(), 5, None, "x"])
        args, culprits = [source, where], {"source": source, "where": where}
    elif name == "create_hierarchy":
        kw = {"nodes": rng.choice([{"a": 1}, {"": None}, {"a/": src.metadata}, 5, None,
                                   {"a": {"shape": 3}}, np.array([1, 2])])}
        args, culprits = [where], {"where": where}
    else:
        args, culprits = [where], {"where": where}
    culprits |= {"store": None, "url": None}  # what `where` is called
    func = getattr(zarrkit, name)
    # A message may name a parameter the call left out ("create needs a shape").
    params = {p: None for p in inspect.signature(func).parameters if p not in ("args", "kwargs")}
    return f"{name}{tuple(args)!r:.100} {kw!r:.200}", lambda: func(*args, **kw), \
        {**params, **culprits, **kw}


# Messages about a store or node rather than an argument: named by what they are about.
_ABOUT_A_NODE = ("no array or group", "read-only", "exists", "is a group", "is an array",
                 "not a zarr", "zarr.json", ".zarray", ".zgroup", "consolidated", "node")


@pytest.mark.parametrize("part", range(4))
def test_fuzzed_creation_and_opening(part: int, tmp_path: Any,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a bad path is created here, not in the working tree
    tmp = str(tmp_path)
    rng = random.Random(SEED * 7 + part)
    src = zarrkit.create(MemoryStore(), shape=(4, 4), chunks=(2, 2), dtype="i4")
    src[...] = 3
    old = _existing(tmp)
    with open(os.path.join(tmp, "file.txt"), "w") as f:
        f.write("hi")
    worked = 0
    for i in range(120):
        what, call, culprits = _creation_call(rng, tmp, i, src, old)
        before = (_snapshot(old[0]), _dir_snapshot(old[1]))
        ok, got = _attempt(call, f"#{i} {what}")
        if not ok and not isinstance(got, ZarrkitError):
            continue  # Python's refusal of the call's signature (see _attempt)
        if not ok:
            message = str(got).lower()
            assert _names_culprit(message, culprits) or any(
                w in message for w in _ABOUT_A_NODE), f"#{i} {what}: {got!r} names nothing"
            assert (_snapshot(old[0]), _dir_snapshot(old[1])) == before, \
                f"#{i} {what}: a failed call changed existing data"
        elif isinstance(got, zarrkit.Array):
            worked += 1
            assert np.asarray(got[...]).shape == got.shape, what
        with open(os.path.join(tmp, "file.txt"), "w") as f:
            f.write("hi")
        if ok:  # a successful mode "w" may replace the old nodes: start them anew
            old = _existing(tmp)
    assert worked > 1


# -- 3. Array and Group methods ----------------------------------------------------------------
_ARGS: list[Any] = [
    None, "x", 1.5, -1, 0, 3, 2**70, [], [1, 2], [0], [-1, 2], [2, 3, 4], {}, {"a": 1}, b"x",
    np.float64(1.5), np.int64(3), np.array([1, 2]), _ODD, "i4", "float64", "nonsense", "<U3",
    "|O", "M8[s]", "bool", [1.5, 2], (2, "a"), (4, 4), float("nan"), float("inf"), True, "r",
    "w", "", "a//b", "__zarr", "/a/", "..", "a/", {"x": _ODD}, {"x": b"b"}, {1: 2}, (6, 7),
    (2,), (5, 6, 7), (10, 6), "sub", "a", "zarr.json", {"write_empty_chunks": "yes"},
]
_WRITES = ("resize", "resize2", "append", "append1", "set", "oset", "set_orth", "set_coord",
           "set_mask", "set_block", "read_only_set", "read_only_group", "group_create_array",
           "group_create_group", "delete", "move", "attrs", "attrs_key", "attrs_update",
           "group_attrs", "require_array", "astype_set")


def _method_calls(g: Any, a: Any, store: Any, x: Any, y: Any) -> dict[str, Callable[[], Any]]:
    return {
        "resize": lambda: a.resize(x), "resize2": lambda: a.resize(x, y),
        "append": lambda: a.append(x, axis=y), "append1": lambda: a.append(np.array(x)),
        "attrs": lambda: a.attrs.__setitem__("k", x), "attrs_key": lambda: a.attrs.__setitem__(
            x, 1), "attrs_update": lambda: a.attrs.update(x), "group_attrs": lambda: g.attrs.put(x),
        "astype": lambda: a.astype(x)[...], "astype_set": lambda: a.astype(x).__setitem__(0, y),
        "with_config": lambda: a.with_config(x),
        "group_create_array": lambda: g.create_array(x, shape=(3,), dtype="i4"),
        "group_create_group": lambda: g.create_group(x),
        "require_array": lambda: g.require_array(x, shape=y),
        "require_group": lambda: g.require_group(x), "move": lambda: g.move(x, y),
        "delete": lambda: g.__delitem__(x), "member": lambda: g[x], "contains": lambda: x in g,
        "new_shape_dtype": lambda: g.create_array("n", shape=x, dtype=y),
        "new_fill": lambda: g.create_array("n", shape=(3,), dtype="u1", fill_value=x),
        "new_compressors": lambda: g.create_array("n", shape=(3,), dtype="u1", compressors=x),
        "new_filters": lambda: g.create_array("n", shape=(3,), dtype="u1", filters=x),
        "new_serializer": lambda: g.create_array("n", shape=(3,), dtype="u1", serializer=x),
        "new_codecs": lambda: g.create_array("n", shape=(3,), dtype="u1", codecs=x),
        "new_shards": lambda: g.create_array("n", shape=(6,), dtype="u1", chunks=(2,), shards=x),
        "new_v2": lambda: g.create_array("n", shape=(3,), dtype=x, zarr_format=2, compressor=y),
        "set": lambda: a.__setitem__(slice(None), x),
        "oset": lambda: a.oindex.__setitem__((x, slice(None)), 1),
        "set_orth": lambda: a.set_orthogonal_selection(x, y),
        "set_coord": lambda: a.set_coordinate_selection(x, y),
        "set_mask": lambda: a.set_mask_selection(x, y),
        "set_block": lambda: a.set_block_selection(x, y),
        "members": lambda: list(g.members(max_depth=x)), "tree": lambda: g.tree(level=x),
        "consolidate": lambda: zarrkit.consolidate_metadata(store, path=x),
        "hierarchy": lambda: zarrkit.create_hierarchy(MemoryStore(), x),
        "copy": lambda: zarrkit.copy(a, g, name=x), "copy_all": lambda: zarrkit.copy_all(g, x),
        "copy_store": lambda: zarrkit.copy_store(store, MemoryStore(), source_path=x),
        "convert": lambda: zarrkit.convert(store, MemoryStore(), zarr_format=x),
        "from_array": lambda: zarrkit.from_array(MemoryStore(), data=x),
        "load": lambda: zarrkit.load(store, path=x),
        "read_only_set": lambda: zarrkit.open_array(store, path="a", mode="r").__setitem__(0, x),
        "read_only_group": lambda: zarrkit.open_group(store, mode="r").create_array(
            x, shape=(1,)),
        "open": lambda: zarrkit.open(store, path=x, mode=y),
    }


def _method_culprits(op: str, x: Any, y: Any) -> dict[str, Any]:
    words = {w: None for w in op.split("_")} | {"name": None, "path": None, "shape": None,
                                                 "dtype": None, "attribute": None, "key": None,
                                                 "codec": None}
    return {**words, "x": x, "y": y}


@pytest.mark.parametrize("part", range(4))
def test_fuzzed_array_and_group_methods(part: int) -> None:
    rng = random.Random(SEED * 13 + part)
    data = np.arange(30, dtype="i4").reshape(5, 6)
    for i in range(200):
        store = MemoryStore()
        g = zarrkit.open_group(store, mode="w")
        a = g.create_array("a", shape=(5, 6), chunks=(2, 3), dtype="i4")
        a[...] = data
        g.create_group("sub")
        x, y = rng.choice(_ARGS), rng.choice(_ARGS)
        calls = _method_calls(g, a, store, x, y)
        op = rng.choice(sorted(calls))
        what = f"#{i} {op} x={x!r:.50} y={y!r:.50}"
        before = _snapshot(store)
        with contextlib.redirect_stderr(io.StringIO()):  # convert's progress bar
            ok, got = _attempt(calls[op], what)
        if not ok and not isinstance(got, TypeError | KeyError):
            assert _names_culprit(str(got), _method_culprits(op, x, y)), f"{what}: {got!r}"
        if not ok and op in _WRITES:
            assert _snapshot(store) == before, f"{what}: a failed call changed the store"
        if ok and op in ("resize", "resize2", "append", "append1"):
            b = zarrkit.open_array(store, path="a", mode="r")
            assert np.asarray(b[...]).shape == b.shape == a.shape, what
            common = tuple(slice(0, min(s, t)) for s, t in zip(b.shape, data.shape,
                                                                  strict=True))
            np.testing.assert_array_equal(np.asarray(b[common]), data[common], err_msg=what)


# -- 4. TensorStore-style specs ----------------------------------------------------------------
_SPEC_VALUES: list[Any] = [
    None, "x", 1.5, -1, 0, 3, 2**70, -2**70, [], [1, 2], [0], [-1, 2], [2, 3, 4], {}, {"a": 1},
    True, "int16", "nonsense", [1.5, 2], ["a", "b"], [None, None], [[0, 1]],
    {"driver": "nope"}, "memory://", "file:///proc/x", "zip://", "s3://", "http://", "gs://",
    "cache_pool#missing", {"name": "nope"}, [{"name": "nope"}], {"total_bytes_limit": -1},
    "nm", ["nm", "nm"], [1, "nm"], float("nan"), "C", [[1, 2], [3]],
]
_NEW_MEMBERS = ["bogus", "rank", "fill_value", "codecs", "units", "output", "input_labels",
                "codec", "domain", "dimension_names", "chunks", "attributes"]
_OPTIONS = ["create", "open", "delete_existing", "read", "write", "shape", "dtype", "fill_value",
            "chunk_layout", "context", "mode", "rank", "dimension_units"]


def _valid_spec(rng: random.Random, tmp: str, i: int) -> dict[str, Any]:
    driver = rng.choice(["zarr3", "zarr", "zarr3"])
    metadata = {"shape": [4, 6], "data_type": "int16",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}}}
    if driver == "zarr":
        metadata = {"shape": [4, 6], "dtype": "<i2", "chunks": [2, 3]}
    return {"driver": driver, "kvstore": rng.choice([
        {"driver": "memory"}, {"driver": "file", "path": f"{tmp}/s{i}/"}, f"memory://m{i}/"]),
        "metadata": metadata, "create": True,
        "schema": {"dimension_units": ["nm", None], "chunk_layout": {"inner_order": [0, 1]}},
        "transform": {"input_inclusive_min": [0, 0], "input_exclusive_max": [4, 6]},
        "context": {"cache_pool": {"total_bytes_limit": 100}}, "recheck_cached_data": False,
        "open": True, "delete_existing": False, "dtype": "int16", "rank": 2, "path": "a/b"}


def _member_paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) \
        if isinstance(doc, list) else ()
    out = []
    for k, v in items:
        out += [(*prefix, k), *_member_paths(v, (*prefix, k))]
    return out


def _mutate(rng: random.Random, spec: dict[str, Any]) -> None:
    _mutate_with(rng, spec, _SPEC_VALUES)


def _mutate_with(rng: random.Random, doc: dict[str, Any], values: list[Any]) -> None:
    """One random member of `doc` replaced by one of `values`, removed, or one added."""
    path = rng.choice(_member_paths(doc))
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    r = rng.random()
    if r < 0.7 or not isinstance(parent, dict):
        parent[path[-1]] = copy.deepcopy(rng.choice(values))
    elif r < 0.85:
        del parent[path[-1]]
    else:
        parent[rng.choice(_NEW_MEMBERS)] = copy.deepcopy(rng.choice(values))


def _spec_culprits(spec: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """The members of `spec` (by name, and their values that are strings) and the options; a
    domain that does not fit the array is named by index and dimension."""
    culprits: dict[str, Any] = {"path": None, "url": None, **_SELECTION_WORDS, **options}
    for path in _member_paths(spec):
        value: Any = spec
        for k in path:
            value = value[k]
        if isinstance(path[-1], str):
            culprits[path[-1]] = value if isinstance(value, str) else None
    return culprits


def _open_and_use(spec: dict[str, Any], options: dict[str, Any]) -> Any:
    a = zarrkit.open(spec, **options)
    try:
        a[...] = 1
    except ZarrkitError:  # e.g. opened read-only: refusing is fine
        pass
    return np.asarray(a[...]), a


@pytest.mark.parametrize("part", range(3))
def test_fuzzed_specs(part: int, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # relative kvstore paths land here
    rng = random.Random(SEED * 17 + part)
    refused = 0
    for i in range(250):
        spec = _valid_spec(rng, str(tmp_path), i)
        for _ in range(rng.randint(1, 3)):
            _mutate(rng, spec)
        options = {}
        if rng.random() < 0.3:
            options[rng.choice(_OPTIONS)] = rng.choice(_SPEC_VALUES)
        what = f"#{i} open({spec!r:.300}, {options!r:.60})"
        ok, got = _attempt(lambda: _open_and_use(spec, options), what)  # noqa: B023
        if ok:
            read, a = got
            assert read.shape == tuple(a.shape), what
            assert (read == 1).all() or (read == read.flat[0]).all(), what
        elif isinstance(got, ZarrkitError):
            refused += 1
            assert _names_culprit(str(got), _spec_culprits(spec, options)) or any(
                w in str(got) for w in _ABOUT_A_NODE), f"{what}: {got!r} names no member"
        if rng.random() < 0.3:
            _attempt(lambda: zarrkit.Spec(spec).to_json(),  # noqa: B023
                     f"#{i} Spec({spec!r:.200})")
    assert refused > 100


# -- 4b. spec objects: Schema, ChunkLayout, IndexTransform, IndexDomain, Context -------------
_OBJECT_VALUES: list[Any] = [
    None, "x", 1.5, -1, 0, 3, 2**70, -2**70, [], [1, 2], [0], [-1, 2], {}, {"a": 1}, True,
    "int16", [1.5, 2], ["a", "b"], [None, None], "+inf", "-inf", [["+inf"]], [[1, 2], [3]],
    {"input_dimension": 0}, [{"input_dimension": 5}], [{"offset": 2**70}], "nm", [1, "nm"],
    float("nan"), np.array([1, 2]), _ODD,
]
_VALID_OBJECTS: dict[str, dict[str, Any]] = {
    "Schema": {"dtype": "int16", "rank": 2, "domain": {"shape": [4, 5]},
               "chunk_layout": {"read_chunk": {"shape": [2, 2]}, "inner_order": [1, 0]},
               "fill_value": 3, "dimension_units": ["nm", None],
               "codec": {"driver": "zarr3", "codecs": [{"name": "bytes"}]}},
    "ChunkLayout": {"rank": 2, "inner_order": [1, 0], "grid_origin": [0, 0],
                    "write_chunk": {"shape": [4, 4]},
                    "read_chunk": {"shape": [2, 2], "aspect_ratio": [1, 2]},
                    "codec_chunk": {"elements": 100}},
    "IndexTransform": {"input_rank": 2, "input_inclusive_min": [0, 0],
                       "input_exclusive_max": [4, 5], "input_labels": ["x", "y"],
                       "output": [{"input_dimension": 1},
                                  {"offset": 2, "input_dimension": 0, "stride": 2}]},
    "IndexDomain": {"inclusive_min": [0, 1], "exclusive_max": [4, 5], "labels": ["a", "b"]},
    "Context": {"cache_pool": {"total_bytes_limit": 100}, "data_copy_concurrency": {"limit": 2},
                "file_io_concurrency": {"limit": 1}},
}


def _build_object(kind: str, doc: dict[str, Any], index: Any) -> Any:
    if kind in ("Schema", "Context"):
        built = getattr(zarrkit, kind)(doc)
    else:
        built = getattr(zarrkit, kind).from_json(doc)
    if kind in ("IndexTransform", "IndexDomain"):
        built = built[index]
    return built.to_json() if hasattr(built, "to_json") else built


@pytest.mark.parametrize("part", range(2))
def test_fuzzed_spec_objects(part: int) -> None:
    rng = random.Random(SEED * 23 + part)
    built = 0
    for i in range(400):
        kind = rng.choice(sorted(_VALID_OBJECTS))
        doc = copy.deepcopy(_VALID_OBJECTS[kind])
        for _ in range(rng.randint(0, 3)):
            _mutate_with(rng, doc, _OBJECT_VALUES)
        index = rng.choice([0, slice(1, 3), (1, 2), [0, 1], "x", 99, 1.5, None, Ellipsis])
        ok, _ = _attempt(lambda: _build_object(kind, doc, index),  # noqa: B023
                         f"#{i} {kind}({doc!r:.200})[{index!r}]")
        built += ok
    assert built > 50


# -- 5. the command line -----------------------------------------------------------------------
_CLI_OPTIONS = {
    "info": ["--storage-options"], "tree": ["--storage-options"],
    "verify": ["--storage-options"], "clean": ["--older-than"],
    "convert": ["--chunks", "--shards", "--codecs", "--zarr-format"],
    "copy": ["--chunks", "--shards", "--codecs", "--storage-options", "--dst-storage-options",
             "--zarr-format"]}
_CLI_FLAGS = {"info": ["--json"], "tree": ["--json"], "verify": ["--json", "--quiet"],
              "clean": ["--json"], "copy": ["--json", "--quiet", "--overwrite"],
              "convert": ["--json", "--quiet", "--overwrite", "--in-place",
                          "--keep-v2-metadata"]}
_CLI_VALUES = ["x", "0", "-1", "1.5", "2,2", "0,0", "2,2,2", "[]", "{}", '[{"name": "nope"}]',
               '{"anon": 5}', "null", "1e400", "nan", "99999999999999999999", "[1]", '"s"', "2",
               "3"]


@pytest.mark.parametrize("part", range(2))
def test_fuzzed_command_line(part: int, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    tmp = str(tmp_path)
    rng = random.Random(SEED * 19 + part)
    src = f"{tmp}/src.zarr"
    zarrkit.array(np.arange(12).reshape(3, 4), src, chunks=(2, 2))
    with open(f"{tmp}/file.txt", "w") as f:
        f.write("x")
    os.makedirs(f"{tmp}/empty")
    paths = [src, f"{tmp}/file.txt", f"{tmp}/empty", f"{tmp}/none", "", "memory://", "s3://",
             "zip:///nope", "file:///proc/1/x", "a//b", "::", "http://", "-",
             f"{tmp}/file.txt/sub", "%%"]
    codes: dict[Any, int] = {}
    for i in range(120):
        cmd = rng.choice(sorted(_CLI_OPTIONS))
        argv = [cmd] + [rng.choice(paths)
                        for _ in range(2 if cmd in ("copy", "convert") and rng.random() < .5
                                       else 1)]
        if cmd in ("convert", "copy") and len(argv) == 2:
            argv.append(f"{tmp}/out{i}")
        for _ in range(rng.randint(0, 2)):
            argv += [rng.choice(_CLI_OPTIONS[cmd]), rng.choice(_CLI_VALUES)]
        if rng.random() < 0.5:
            argv.append(rng.choice(_CLI_FLAGS[cmd]))
        before = _dir_snapshot(src)
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli_main(argv)
        except SystemExit as e:  # argparse's own refusal of the command line
            code = e.code
            assert "error:" in err.getvalue(), argv
        except Exception as e:
            raise AssertionError(f"{argv}: internal {type(e).__name__}: {e}") from e
        codes[code] = codes.get(code, 0) + 1
        if code == 2:
            message = err.getvalue()
            assert "error:" in message and message.split("error:", 1)[1].strip(), argv
        if code != 0 and "--in-place" not in argv:
            assert _dir_snapshot(src) == before, f"{argv}: a failed command changed the source"
    assert codes.get(0, 0) > 0 and codes.get(2, 0) > 30


# -- 6. what the fuzzer found ------------------------------------------------------------------
def test_zeros_and_ones_refuse_a_fill_value_naming_it() -> None:
    # A TypeError "create() got multiple values for keyword argument 'fill_value'".
    for func in (zarrkit.zeros, zarrkit.ones):
        with pytest.raises(SpecError, match="fill_value=5.*full"):
            func(shape=(3,), fill_value=5)
    with pytest.raises(SpecError, match="fill_value"):
        zarrkit.zeros_like(np.arange(3), fill_value=5)


def test_array_shape_may_only_repeat_that_of_the_data() -> None:
    # A TypeError "create() got multiple values for argument 'shape'".
    with pytest.raises(SpecError, match=r"shape=\(4,\) contradicts the shape \(3,\)"):
        zarrkit.array(np.arange(3), shape=(4,))
    with pytest.raises(SpecError, match="shape='w-'"):
        zarrkit.array(np.arange(3), shape="w-")
    assert zarrkit.array(np.arange(3), shape=3).shape == (3,)
    assert zarrkit.array(np.ones((2, 2)), shape=[2, 2])[...].sum() == 4


def test_save_refuses_overwrite_false(tmp_path: Any) -> None:
    # A TypeError "array() got multiple values for keyword argument 'overwrite'".
    path = str(tmp_path / "s.zarr")
    zarrkit.save(path, np.arange(3))
    with pytest.raises(SpecError, match="overwrite"):
        zarrkit.save(path, np.arange(4), overwrite=False)
    np.testing.assert_array_equal(zarrkit.load(path), np.arange(3))
    zarrkit.save(path, np.arange(4), overwrite=True)
    np.testing.assert_array_equal(zarrkit.load(path), np.arange(4))


@pytest.mark.parametrize(("keyword", "error"), [
    ("overwrite", SpecError), ("write_empty_chunks", SpecError), ("zarr_format", MetadataError),
    ("storage_options", SpecError), ("order", SpecError), ("mode", SpecError),
    ("path", InvalidNameError), ("compressors", CodecError), ("filters", CodecError),
    ("serializer", CodecError),
])
def test_array_valued_keywords_are_refused_naming_them(keyword: str, error: type) -> None:
    # numpy arrays where a flag or name goes: "The truth value of an array with more than one
    # element is ambiguous" (ValueError) from inside zarrkit.
    value = np.array([1, 2])
    with pytest.raises(error) as info:
        zarrkit.create(shape=(4,), dtype="i4", **{keyword: value})
    assert keyword in str(info.value) or "codecs" in str(info.value) \
        or "path" in str(info.value)


def test_chunks_of_a_wrong_kind_are_refused_and_a_numpy_shape_taken() -> None:
    # chunks=1.5: "object of type 'float' has no len()"; chunks=np.array: ambiguous truth value.
    for chunks in (1.5, "x", b"x", _ODD, {"a": 1}):
        with pytest.raises(MetadataError, match="chunks"):
            zarrkit.create(shape=(4, 4), chunks=chunks)
    with pytest.raises(MetadataError, match="shards"):
        zarrkit.create(shape=(4, 4), chunks=(2, 2), shards=float("nan"))
    assert zarrkit.create(shape=(4, 4), chunks=np.array([2, 2])).chunks == (2, 2)


@pytest.mark.parametrize("shape", [[2.5], (3, 1.5), ["3"], [None]])
def test_shapes_of_non_integers_are_refused_not_truncated(shape: Any) -> None:
    # [2.5] was made shape (2,) and ["3"] shape (3,) without a word.
    with pytest.raises(MetadataError, match="shape must be a sequence of integers"):
        zarrkit.create(shape=shape)
    assert zarrkit.create(shape=np.int64(3)).shape == (3,)
    assert zarrkit.create(shape=(np.int32(2), 3)).shape == (2, 3)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("encoding", [(4, 4), [1.5, 2], b"x", float("inf"), [[1]]])
def test_chunk_key_encoding_of_a_wrong_kind_is_refused(zarr_format: int, encoding: Any) -> None:
    # "cannot convert dictionary update sequence element #0 to a sequence" (v3) and
    # "'list' object has no attribute 'get'" (v2).
    with pytest.raises(MetadataError, match="chunk_key_encoding"):
        zarrkit.create(shape=(4,), chunk_key_encoding=encoding, zarr_format=zarr_format)


def test_create_hierarchy_and_convert_refuse_arrays_for_their_options() -> None:
    with pytest.raises(SpecError, match="nodes must be a dict"):
        zarrkit.create_hierarchy(MemoryStore(), np.array([1, 2]))
    store = MemoryStore()
    zarrkit.create(store, shape=(2,))
    with pytest.raises(SpecError, match="zarr_format must be 2 or 3"):
        zarrkit.convert(store, MemoryStore(), zarr_format=np.array([1, 2]))


@pytest.mark.parametrize("name", [(4, 4), b"x", 5, None, ["a"]])
def test_group_member_names_that_are_not_strings_are_refused(name: Any) -> None:
    # "'tuple' object has no attribute 'strip'" and "a bytes-like object is required".
    g = zarrkit.group(MemoryStore())
    before = _snapshot(g.store)
    with pytest.raises(InvalidNameError, match="must be a string"):
        g.create_array(name, shape=(3,), dtype="i4")
    assert _snapshot(g.store) == before


@pytest.mark.parametrize("key", [[1.5, 2], np.array([1, 2]), {"a": 1}])
def test_unhashable_attribute_names_are_refused(key: Any) -> None:
    # "unhashable type: 'list'" (TypeError) from building the dict of changes.
    a = zarrkit.zeros(MemoryStore(), shape=(2,))
    with pytest.raises(MetadataError, match="attribute names must be strings"):
        a.attrs[key] = 1
    assert dict(a.attrs) == {}


def test_with_config_names_settings_of_any_type() -> None:
    # {1: 2}: "sequence item 0: expected str instance, int found" building the message.
    a = zarrkit.zeros(MemoryStore(), shape=(2,))
    with pytest.raises(SpecError, match="unknown settings 1"):
        a.with_config({1: 2})
    with pytest.raises(SpecError, match="order must be 'C'"):
        a.with_config({"order": np.array([1, 2])})
    assert a.with_config({"order": "C"}).shape == (2,)


def test_open_and_load_refuse_arrays_for_mode_and_path() -> None:
    store = MemoryStore()
    zarrkit.create(store, shape=(2,))
    with pytest.raises(SpecError, match="mode must be one of"):
        zarrkit.open(store, mode=np.array([1, 2]))
    with pytest.raises(InvalidNameError, match="must be a string"):
        zarrkit.load(store, path=np.array([1, 2]))


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("shape", [(2**70, 3), (3, 2**63)])
def test_a_resize_to_an_unstorable_shape_erases_nothing(zarr_format: int, shape: Any) -> None:
    # The chunks outside the new shape were deleted before the new metadata was refused: the
    # array kept its shape and lost the data of its last columns.
    store = MemoryStore()
    a = zarrkit.create(store, shape=(5, 6), chunks=(2, 3), dtype="i4", zarr_format=zarr_format)
    a[...] = np.arange(30).reshape(5, 6)
    before = _snapshot(store)
    with pytest.raises(MetadataError, match="shape"):
        a.resize(*shape)
    assert _snapshot(store) == before
    np.testing.assert_array_equal(zarrkit.open_array(store)[...], np.arange(30).reshape(5, 6))


def test_modes_that_are_not_strings_are_refused_before_use() -> None:
    # open_array(..., mode=np.array) compared the mode before any check.
    store = MemoryStore()
    zarrkit.create(store, shape=(2,))
    for func in (zarrkit.open, zarrkit.open_array, zarrkit.open_group):
        with pytest.raises(SpecError, match="mode must be one of"):
            func({"a": 1}, mode=np.array([1, 2]))
        with pytest.raises(SpecError, match="mode must be one of.*5"):
            func(store, mode=5)


def test_consolidate_metadata_refuses_a_path_that_is_not_a_string() -> None:
    store = MemoryStore()
    zarrkit.open_group(store, mode="w").create_group("g")
    with pytest.raises(InvalidNameError, match="must be a string"):
        zarrkit.consolidate_metadata(store, path=np.array([1, 2]))
    assert zarrkit.consolidate_metadata(store, path="g").path == "g"


@pytest.mark.parametrize("zarr_format", [np.array([1, 2]), True, 3.0, "3"])
def test_zarr_format_must_be_an_integer(zarr_format: Any, tmp_path: Any) -> None:
    # An array: ambiguous truth value inside save_group; True counted as format 1.
    with pytest.raises(SpecError, match="zarr_format must be 1, 2, 3"):
        zarrkit.save(str(tmp_path / "s.zarr"), np.arange(3), np.arange(2),
                     zarr_format=zarr_format)
    with pytest.raises(SpecError, match="zarr_format must be 1, 2, 3"):
        zarrkit.open_group(MemoryStore(), zarr_format=zarr_format)
    assert ".zgroup" in _snapshot(zarrkit.open_group(MemoryStore(), zarr_format=np.int64(2)).store)


def test_copy_refuses_a_name_that_is_not_a_string() -> None:
    g = zarrkit.group(MemoryStore())
    a = g.create_array("a", shape=(3,))
    before = _snapshot(g.store)
    with pytest.raises(InvalidNameError, match="copy: invalid name"):
        zarrkit.copy(a, g, name=np.array([1, 2]))
    with pytest.raises(zarrkit.NodeTypeError, match="group; got str 'not/a/group'"):
        zarrkit.copy(a, "not/a/group")
    with pytest.raises(SpecError, match="if_exists must be one of"):
        zarrkit.copy(a, g, name="b", if_exists=np.array([1, 2]))
    assert _snapshot(g.store) == before


@pytest.mark.parametrize("func", ["zeros_like", "ones_like", "empty_like", "full_like",
                                  "array", "from_array"])
def test_a_shape_where_the_store_goes_is_refused_naming_it(func: str) -> None:
    # array([1, 2], 5) took 5 for a shape and said "dtype is given twice".
    data = np.arange(3)
    call = (lambda: zarrkit.from_array(5, data=data)) if func == "from_array" else \
        (lambda: getattr(zarrkit, func)(data, 5, **({"fill_value": 1} if func == "full_like"
                                                     else {})))
    with pytest.raises(SpecError, match=rf"{func}\(a, where\): where must be a store or path, "
                                        "got 5"):
        call()


def test_from_array_refuses_a_shape_or_dtype_of_its_own() -> None:
    # "create() got multiple values for argument 'shape'".
    for keyword in ("shape", "dtype"):
        with pytest.raises(SpecError, match=f"from_array: {keyword}=.* is not taken"):
            zarrkit.from_array(MemoryStore(), data=np.arange(3), **{keyword: (3,)})


def test_numpy_arrays_in_domain_and_context_json_are_checked() -> None:
    # {"rank": np.array}, a bound np.array, {"limit": np.array}: ambiguous truth values.
    with pytest.raises(SpecError, match="domain.rank: expected a non-negative integer"):
        zarrkit.Schema({"domain": {"shape": [4, 5], "rank": np.array([1, 2])}})
    with pytest.raises(SpecError, match="domain.shape: expected an integer bound"):
        zarrkit.Schema({"domain": {"shape": [np.array([1, 2]), 5]}})
    with pytest.raises(SpecError, match="file_io_concurrency"):
        zarrkit.Context({"file_io_concurrency": {"limit": np.array([1, 2])}})
    domain = zarrkit.IndexDomain.from_json({"inclusive_min": np.array([0, 1]),
                                            "exclusive_max": np.array([4, 5])})
    assert domain.shape == (4, 4)
    assert zarrkit.Context({"file_io_concurrency": {"limit": "shared"}}) is not None


def test_open_array_in_mode_w_without_a_shape_keeps_what_is_there(tmp_path: Any) -> None:
    # open() created a group in mode "w", replacing the hierarchy there, and open_array then
    # refused it: "/ is a group, not an array", with the data gone.
    store, path = _existing(str(tmp_path))
    for where in (store, path):
        before = _snapshot(store) if where is store else _dir_snapshot(path)
        for mode in ("w", "w-"):
            with pytest.raises(SpecError, match=f"mode '{mode}' creates an array: give its "
                                                "shape="):
                zarrkit.open_array(where, mode=mode)
        assert (_snapshot(store) if where is store else _dir_snapshot(path)) == before
    assert zarrkit.open_array(store, mode="w", shape=(2,)).shape == (2,)


def test_array_refuses_an_overwrite_that_is_not_a_bool() -> None:
    with pytest.raises(SpecError, match="overwrite must be True or False"):
        zarrkit.array(np.arange(3), MemoryStore(), overwrite=np.array([1, 2]))


@pytest.mark.parametrize("fill", [[[1, 2], [3]], [1, [2]]])
def test_a_ragged_fill_value_in_a_spec_is_refused(fill: Any) -> None:
    # numpy's "setting an array element with a sequence" ValueError.
    with pytest.raises(SpecError, match="fill value must be a scalar"):
        zarrkit.Schema(fill_value=fill)
    spec = {"driver": "zarr", "kvstore": {"driver": "memory"}, "create": True,
            "metadata": {"shape": [4], "dtype": "<i2", "chunks": [2]}}
    with pytest.raises(SpecError, match="fill_value"):
        zarrkit.open(spec, fill_value=fill)


@pytest.mark.parametrize("overwrite", [np.array([1, 2]), "no", 1, None])
def test_overwrite_must_be_a_bool_wherever_it_is_taken(overwrite: Any) -> None:
    # from_array(..., overwrite=np.array) and Group.array: ambiguous truth values; "no" was
    # taken as True and replaced the node.
    store = MemoryStore()
    g = zarrkit.open_group(store, mode="w")
    g.create_array("a", shape=(2,), dtype="i4")[...] = 5
    before = _snapshot(store)
    calls = [lambda: zarrkit.from_array(store, data=np.arange(2), path="a", overwrite=overwrite),
             lambda: g.array("a", np.arange(2), overwrite=overwrite),
             lambda: zarrkit.group(store, overwrite=overwrite),
             lambda: zarrkit.create_group(store, path="a", overwrite=overwrite),
             lambda: zarrkit.create(store, shape=(2,), path="a", overwrite=overwrite),
             lambda: zarrkit.array(np.arange(2), store, path="a", overwrite=overwrite)]
    for call in calls:
        with pytest.raises(SpecError, match="overwrite must be True or False"):
            call()
    assert _snapshot(store) == before


def test_a_unit_pair_of_the_wrong_kind_names_where_it_is() -> None:
    # "unit multiplier must be a number, got 'nm'", naming no member.
    with pytest.raises(SpecError, match=r"dimension_units\[1\]: unit multiplier must be a "
                                        "number, got 'nm'"):
        zarrkit.Schema(dimension_units=["nm", ["nm", "nm"]])


def test_spec_members_of_the_wrong_kind_are_refused_naming_them() -> None:
    # codec.driver np.array: ambiguous truth value; a stride beyond 64 bits: OverflowError when
    # the transform was indexed; a NaN unit multiplier named no member.
    with pytest.raises(SpecError, match="codec.driver: expected one of"):
        zarrkit.Schema({"codec": {"driver": np.array([1, 2])}})
    with pytest.raises(SpecError, match=r"output\[1\].stride: .* outside the 64-bit"):
        zarrkit.IndexTransform.from_json({
            "input_rank": 2, "input_exclusive_max": [4, 5],
            "output": [{"input_dimension": 1}, {"input_dimension": 0, "stride": -2**70}]})
    with pytest.raises(SpecError, match=r"dimension_units\[1\]: unit multiplier must be "
                                        "finite"):
        zarrkit.Schema(dimension_units=["nm", float("nan")])
    with pytest.raises(SpecError, match="mode must be one of"):
        zarrkit.open_consolidated(MemoryStore(), mode=np.array([1, 2]))

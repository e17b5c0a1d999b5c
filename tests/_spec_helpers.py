"""Helpers shared by the tests of TensorStore-style specs: run the same request through
TensorStore and zarrkit and reduce both outcomes to comparable values."""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np
import tensorstore as ts

import zarrkit
from zarrkit import storage

_names = itertools.count()


def ts_kwargs(kw: dict[str, Any]) -> dict[str, Any]:
    """Keyword constraints (as plain JSON-ish values) for `ts.open`."""
    kw = dict(kw)
    if "chunk_layout" in kw:
        kw["chunk_layout"] = ts.ChunkLayout(**kw["chunk_layout"])
    if "codec" in kw:
        kw["codec"] = ts.CodecSpec(kw["codec"])
    if "domain" in kw:
        kw["domain"] = ts.IndexDomain(**kw["domain"])
    return kw


def zk_kwargs(kw: dict[str, Any]) -> dict[str, Any]:
    """The same constraints for `zarrkit.open`."""
    kw = dict(kw)
    if "chunk_layout" in kw:
        kw["chunk_layout"] = zarrkit.ChunkLayout(**kw["chunk_layout"])
    if "codec" in kw:
        kw["codec"] = zarrkit.CodecSpec(kw["codec"])
    if "domain" in kw:
        kw["domain"] = zarrkit.IndexDomain.make(**kw["domain"])
    return kw


def ts_create(metadata: dict[str, Any], kw: dict[str, Any]) -> tuple[Any, Any]:
    """(zarr.json, chunk layout JSON) TensorStore writes, or ("error", message)."""
    try:
        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "memory"}, "metadata": metadata},
                    create=True, **ts_kwargs(kw)).result()
    except ValueError as exc:
        return "error", str(exc).split("[tensorstore_spec")[0]
    return json.loads(t.kvstore.read("zarr.json").result().value), t.chunk_layout.to_json()


def zk_create(metadata: dict[str, Any], kw: dict[str, Any]) -> tuple[Any, Any]:
    """(zarr.json, chunk layout JSON) zarrkit writes, or ("error", message)."""
    spec = {"driver": "zarr3", "kvstore": {"driver": "memory", "path": f"spec-{next(_names)}"},
            "metadata": metadata}
    try:
        a = zarrkit.open(spec, create=True, **zk_kwargs(kw))
    except zarrkit.SpecError as exc:
        return "error", str(exc)
    doc = json.loads(bytes(a.store.get(storage.metadata_key(a.path))))
    return doc, a.chunk_layout.to_json()


def same_outcome(expected: tuple[Any, Any], actual: tuple[Any, Any]) -> bool:
    if expected[0] == "error":
        return actual[0] == "error"
    return expected == actual


#: A small array both libraries open in the view tests (`stored_pair`).
VIEW_SHAPE = (4, 5, 6)
VIEW_DATA = np.arange(np.prod(VIEW_SHAPE), dtype=np.int32).reshape(VIEW_SHAPE)


def stored_pair(tmp_path: Any, name: str = "a") -> tuple[Any, Any, dict[str, Any]]:
    """`VIEW_DATA` stored by TensorStore and opened by both libraries: (TensorStore's handle,
    zarrkit's, the spec)."""
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / name)}}
    t = ts.open(spec, create=True, dtype=ts.int32, shape=list(VIEW_SHAPE),
                chunk_layout=ts.ChunkLayout(chunk_shape=[2, 2, 4])).result()
    t[...] = VIEW_DATA
    return t, zarrkit.open(spec), spec


def with_each_library(program: Any, tmp_path: Any, *args: Any) -> list[Any]:
    """`program(lib, root, *args)` run with TensorStore and with zarrkit (the modules), each in
    a directory of its own under `tmp_path`: their results, in that order."""
    out = []
    for lib in (ts, zarrkit):
        root = tmp_path / lib.__name__
        root.mkdir()
        out.append(program(lib, str(root), *args))
    return out

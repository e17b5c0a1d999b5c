"""Crash safety: writer processes killed with SIGKILL at random moments never leave a torn chunk,
a torn shard or invalid metadata behind.

Each round forks a fresh writer (see `_workers.py`) that writes a deterministic schedule of
regions, bumping a shared progress counter after each completed write; the test kills it after
a random (seeded) delay and then checks the whole store against a model:

* every stored chunk, shard and metadata document decodes;
* every cell (the unit a write covers) holds exactly the values of one write (no torn chunk);
* every store key holds either the state before the write in flight or the state after it
  (writes completed before the kill are never lost);
* listing shows nothing but metadata and chunk keys (the writer's temp files stay hidden).

At the end a writer runs to completion, which proves no killed writer left a lock held.
Figures (kills, torn chunks, ...) are printed; run with `-s` to see them.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter

import numpy as np
import pytest
from _workers import (
    LAYOUTS,
    META_SHAPES,
    Progress,
    Zygote,
    apply,
    cell_tags,
    meta_op,
    op_at,
)

import zarrkit
from zarrkit.errors import ZarrkitError
from zarrkit.kvstore.file import FileStore

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")

MAX_DELAY = 0.1  # seconds a writer runs before it is killed (uniform from 1 ms)


def _kill_after_delay(zygote: Zygote, rng: random.Random, progress: str, job: str,
                      **args: object) -> int:
    """Run `job` for a random moment, SIGKILL it, and return how many writes it completed."""
    reset = Progress(progress)
    reset.set(0)
    reset.close()
    pid = zygote.fork(job, progress=progress, **args)
    time.sleep(rng.uniform(0.001, MAX_DELAY))
    status = zygote.kill(pid)
    assert status == -9, f"writer ended by itself ({status}):\n{zygote.stderr()}"
    return Progress.read(progress)


def _temp_files(root: str) -> int:
    return sum(name.endswith(".partial") for _, _, names in os.walk(root) for name in names)


# -- chunks and shards -------------------------------------------------------------------------
def _observe(root: str, stats: Counter) -> np.ndarray | None:
    try:
        data = zarrkit.open_array(root, mode="r")[...]
    except ZarrkitError as e:  # a chunk or shard that does not decode: torn
        stats["undecodable"] += 1
        print("undecodable:", e)
        return None
    tags, bad = cell_tags(data)
    stats["torn_cells"] += bad
    return tags


def _check_keys(layout, observed, old, new, stats: Counter) -> None:
    """Every key must hold its old or its new state, as a whole."""
    for cells in layout.key_cells():
        got = observed[cells]
        if not ((got == old[cells]).all() or (got == new[cells]).all()):
            stats["keys_neither_old_nor_new"] += 1
        elif not (old[cells] == new[cells]).all():
            stats["keys_in_flight_" + ("new" if (got == new[cells]).all() else "old")] += 1


def _check_listing(root: str, layout, stats: Counter) -> None:
    store = FileStore(root, read_only=True)
    grid = [-(-s // k) for s, k in zip(layout.shape, layout.key_shape, strict=True)]
    for key in store.list_prefix(""):
        parts = key.split("/")
        ok = key == "zarr.json" or (
            len(parts) == 3 and parts[0] == "c"
            and all(p.isdigit() and int(p) < n for p, n in zip(parts[1:], grid, strict=True)))
        if not ok:
            stats["foreign_keys_listed"] += 1


def _crash_rounds(tmp_path, zygote: Zygote, name: str, kills: int, seed: int) -> Counter:
    layout = LAYOUTS[name]
    root = str(tmp_path / f"{name}.zarr")
    zarrkit.create(root, shape=layout.shape, dtype="uint64", fill_value=0, **layout.create)
    progress = str(tmp_path / "progress")
    rng = random.Random(seed)
    model = np.zeros(layout.cells, np.uint64)
    stats: Counter = Counter()
    for iteration in range(kills):
        done = _kill_after_delay(zygote, rng, progress, "grid_writer", root=root, layout=name,
                                 iteration=iteration)
        stats["kills"] += 1
        stats["writes_completed"] += done
        for step in range(done):
            model = apply(model, op_at(layout, iteration, step))
        observed = _observe(root, stats)
        if observed is None:
            break
        _check_keys(layout, observed, model, apply(model, op_at(layout, iteration, done)), stats)
        _check_listing(root, layout, stats)
        model = observed
    stats["temp_files_left"] = _temp_files(root)
    # With no writer running, every temp file is a killed writer's: all can go, data untouched.
    before = zarrkit.open_array(root, mode="r")[...]
    assert len(FileStore(root).remove_temp_files(older_than=0)) == stats["temp_files_left"]
    assert _temp_files(root) == 0
    np.testing.assert_array_equal(zarrkit.open_array(root, mode="r")[...], before)
    # A writer left to finish proves that no killed writer left a lock held.
    pid = zygote.fork("grid_writer", root=root, layout=name, iteration=kills, progress=progress,
                      steps=20)
    assert zygote.wait(pid, timeout=60) == 0, zygote.stderr()
    print(f"\ncrash safety [{name}]: {dict(stats)}")
    return stats


def _assert_clean(stats: Counter, kills: int) -> None:
    assert stats["kills"] == kills
    assert stats["undecodable"] == 0
    assert stats["torn_cells"] == 0
    assert stats["keys_neither_old_nor_new"] == 0
    assert stats["foreign_keys_listed"] == 0
    assert stats["writes_completed"] > kills  # the writers did make progress between kills


@pytest.mark.parametrize(("name", "kills", "seed"), [
    ("chunks", 90, 1), ("shards", 80, 2), ("shards_start", 40, 3)])
def test_killed_writers_leave_no_torn_chunks(tmp_path, zygote, name, kills, seed):
    stats = _crash_rounds(tmp_path, zygote, name, kills, seed)
    _assert_clean(stats, kills)


def test_killed_zip_appenders_leave_a_readable_archive(tmp_path, zygote):
    """Zip archives change only when closed: a writer killed before that leaves the archive as
    it was after its last close."""
    layout = LAYOUTS["chunks"]
    path = str(tmp_path / "data.zip")
    zarrkit.create(path, shape=layout.shape, dtype="uint64", fill_value=0,
                   **layout.create).store.close()
    progress = str(tmp_path / "progress")
    rng = random.Random(5)
    model = np.zeros(layout.cells, np.uint64)
    stats: Counter = Counter()
    kills = 30
    for iteration in range(kills):
        done = _kill_after_delay(zygote, rng, progress, "zip_writer", root=path,
                                 layout="chunks", iteration=iteration)
        stats["kills"] += 1
        stats["writes_completed"] += done
        for step in range(done):
            model = apply(model, op_at(layout, iteration, step))
        observed = _observe(path, stats)
        if observed is None:
            break
        _check_keys(layout, observed, model, apply(model, op_at(layout, iteration, done)),
                    stats)
        model = observed
    stats["temp_files_left"] = sum(n.endswith(".partial") for n in os.listdir(tmp_path))
    print(f"\ncrash safety [zip, append mode]: {dict(stats)}")
    _assert_clean(stats, kills)


# -- metadata and attributes -------------------------------------------------------------------
def _meta_apply(state: dict, op: tuple) -> dict:
    kind, tag, arg = op
    state = {k: (dict(v) if isinstance(v, dict) else v) for k, v in state.items()}
    if kind == "group_attrs":
        state["group"][arg] = tag
    elif kind == "array_attrs":
        state["array"].update({arg: tag, "list": [tag] * 3})
    elif kind == "array_attrs_delete":
        state["array"].pop(arg, None)
    elif kind == "resize":
        state["shape"] = tuple(arg)
    else:
        state["children"] = {**state["children"], f"c{tag}": tag}
    return state


def _meta_observe(root: str) -> dict:
    g = zarrkit.open_group(root, mode="r")
    a = g["arr"]
    data = a[...]
    assert set(np.unique(data).tolist()) <= {0, 7}, "array data other than written values"
    children = {}
    for name in g.group_keys():
        children[name] = g[name].attrs["tag"]
    return {"group": g.attrs.asdict(), "array": a.attrs.asdict(), "shape": a.shape,
            "children": children}


def _meta_keys_ok(observed: dict, old: dict, new: dict) -> bool:
    """Each document (group, array, each child) matches its old or its new state."""
    def one(field):
        return observed[field] in (old[field], new[field])

    array_doc = (observed["array"], observed["shape"])
    array_ok = array_doc in ((old["array"], old["shape"]), (new["array"], new["shape"]))
    return one("group") and array_ok and one("children")


def test_killed_metadata_writers_leave_valid_documents(tmp_path, zygote):
    root = str(tmp_path / "meta.zarr")
    g = zarrkit.open_group(root, mode="w")
    a = g.create_array("arr", shape=META_SHAPES[0], dtype="uint8", chunks=(4, 4), fill_value=0)
    a[...] = 7
    progress = str(tmp_path / "progress")
    rng = random.Random(4)
    state = {"group": {}, "array": {}, "shape": META_SHAPES[0], "children": {}}
    stats: Counter = Counter()
    kills = 60
    for iteration in range(kills):
        done = _kill_after_delay(zygote, rng, progress, "meta_writer", root=root,
                                 iteration=iteration)
        stats["kills"] += 1
        stats["writes_completed"] += done
        for step in range(done):
            state = _meta_apply(state, meta_op(iteration, step))
        try:
            observed = _meta_observe(root)
        except ZarrkitError as e:
            stats["invalid_documents"] += 1
            print("invalid:", e)
            break
        new = _meta_apply(state, meta_op(iteration, done))
        if not _meta_keys_ok(observed, state, new):
            stats["documents_neither_old_nor_new"] += 1
            print(f"neither old nor new after kill {iteration} ({done} writes done, next "
                  f"{meta_op(iteration, done)}): observed {observed}, old {state}, new {new}")
        state = observed
    stats["temp_files_left"] = _temp_files(root)
    print(f"\ncrash safety [metadata]: {dict(stats)}")
    assert stats["kills"] == kills
    assert stats["invalid_documents"] == 0
    assert stats["documents_neither_old_nor_new"] == 0
    assert stats["writes_completed"] > kills

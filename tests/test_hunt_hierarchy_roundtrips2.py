"""More hierarchy operations on a slow (remote-like) store, with fewer sequential round trips
and the same results: `copy_all` copies sibling members concurrently (log lines in order),
`create_hierarchy` and the creation of missing parents write a level in one request,
`move` checks at once.
The SlowStore and the ~30-node hierarchy are those of test_hunt_hierarchy_roundtrips.py."""

from __future__ import annotations

import numpy as np
import pytest
from test_hunt_hierarchy_roundtrips import (
    CONCURRENT,
    SlowStore,
    _same_hierarchy,
    _walked,
    build,
    opened,
)

import zarrkit
from zarrkit import copying
from zarrkit.engine.executor import io_width
from zarrkit.errors import NodeExistsError

GROUP = {"zarr_format": 3, "node_type": "group", "attributes": {}}


def _paths(g):
    return [p for p, _ in g.members(None)]


# -- 2. create_hierarchy writes a level at a time -------------------------------------------------


def _hierarchy_nodes():
    return {**{f"h{i}/sub{j}/deep": GROUP for i in range(3) for j in range(3)},
            "g0/sub/deep/new": GROUP, "h0/a": {"zarr_format": 3, "node_type": "array",
                                               "shape": [2], "data_type": "int8",
                                               "chunk_grid": {"name": "regular", "configuration":
                                                              {"chunk_shape": [2]}},
                                               "chunk_key_encoding": {"name": "default"},
                                               "fill_value": 0,
                                               "codecs": [{"name": "bytes"}]}}


@pytest.mark.parametrize("consolidated", [False, True])
def test_create_hierarchy_writes_a_level_in_one_request(consolidated):
    store = SlowStore()
    build(store, 3, consolidated)
    g = zarrkit.open_group(store, mode="r+")
    store.reset()
    made = g.create_hierarchy(_hierarchy_nodes())
    # the checks: 3 requests; the 4 levels written; recorded under the root and g0/sub/deep
    # (one by one: 49 round trips)
    writes = store.calls["set_many"]
    assert writes == 4 and store.calls["set"] == (2 if consolidated else 0), store.calls
    assert store.rounds == 3 + 4 + 2 + store.calls["get"] + store.calls["set"], store.calls
    assert [p for p in made if p.startswith("h1")] == ["h1", "h1/sub0", "h1/sub1", "h1/sub2",
                                                       "h1/sub0/deep", "h1/sub1/deep",
                                                       "h1/sub2/deep"]
    store.latency = 0
    fresh = _paths(zarrkit.open_group(store, use_consolidated=False))
    assert "h2/sub1/deep" in fresh and "g0/sub/deep/new" in fresh and "h0/a" in fresh
    if consolidated:  # every node created is recorded, as consolidating again records them
        assert _paths(zarrkit.open_consolidated(store)) == fresh
        assert _paths(zarrkit.open_consolidated(store)["g0"]) == _paths(
            zarrkit.open_group(store, use_consolidated=False)["g0"])


def test_create_hierarchy_still_checks_everything_before_writing():
    store = SlowStore(latency=0)
    build(store, 3, False)
    g = zarrkit.open_group(store, mode="r+")
    before = sorted(store.list_prefix(""))
    store.reset()
    with pytest.raises(NodeExistsError, match="'g1/sub'"):
        g.create_hierarchy({**_hierarchy_nodes(), "g1/sub": GROUP})
    assert not store.calls["set_many"] and not store.calls["set"]
    assert sorted(store.list_prefix("")) == before
    with pytest.raises(zarrkit.errors.MetadataError, match="below 'h0/a', an array"):
        g.create_hierarchy({**_hierarchy_nodes(), "h0/a/b": GROUP})
    assert sorted(store.list_prefix("")) == before


def test_create_hierarchy_is_read_by_zarr_python(tmp_path):
    import zarr

    zarrkit.create_hierarchy(store=str(tmp_path), nodes={"": GROUP, **_hierarchy_nodes()})
    theirs = sorted(p for p, _ in zarr.open_group(str(tmp_path), mode="r").members(None))
    assert theirs == sorted(_paths(zarrkit.open_group(str(tmp_path))))
    assert "h2/sub2/deep" in theirs and len(theirs) == 3 + 9 + 9 + 4 + 1


def test_missing_parents_are_written_in_one_request():
    store = SlowStore()
    zarrkit.open_group(store, mode="w")
    store.reset()
    zarrkit.open_group(store, mode="r+").create_array("a/b/c/d/e", shape=(1,), dtype="i1")
    assert store.calls["set_many"] == 1 and store.calls["set"] == 1  # (the array's own)
    assert store.rounds == 7, store.calls  # (one by one: 13)
    store.latency = 0
    assert _paths(zarrkit.open_group(store)) == ["a", "a/b", "a/b/c", "a/b/c/d", "a/b/c/d/e"]


# -- 1. copy_all: siblings at once, log lines in order -------------------------------------------


def _copy(src_group, fmt, latency=0, **kws):
    lines = []
    dst = SlowStore(latency=0)
    into = zarrkit.open_group(dst, mode="w", zarr_format=fmt)
    dst.latency = latency
    dst.reset()
    result = zarrkit.copy_all(src_group, into, log=lines.append, **kws)
    dst.latency = 0
    return result, lines, dst


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("shallow", [False, True])
def test_copy_all_logs_and_copies_as_one_by_one(zarr_format, shallow):
    store = SlowStore(latency=0)
    build(store, zarr_format, False)
    g = opened(store, False)
    ours, lines, dst = _copy(g, zarr_format, shallow=shallow)
    dry, dry_lines, _ = _copy(g, zarr_format, shallow=shallow, dry_run=True)
    assert lines == dry_lines and ours[:2] == dry[:2]
    assert [line.split()[1] for line in lines] == [
        "/" + p for p, _ in (_walked(g, 0) if shallow else g.members(None))]
    assert dst.calls["get"] == 0  # no metadata read before writing the arrays just created
    copied = zarrkit.open_group(dst, use_consolidated=False)
    if not shallow:
        _same_hierarchy(copied, g)


def test_copy_all_copies_siblings_at_once():
    store = SlowStore(latency=0)
    build(store, 3, False)
    g = opened(store, False)
    _, _, dst = _copy(g, 3, latency=CONCURRENT)
    # one by one, a write at a time; the 4 subtrees and 2 arrays now at once (no timing: the
    # requests in flight together tell)
    assert 1 < dst.peak["set"] <= io_width(dst.io_concurrency), dst.peak
    _same_hierarchy(zarrkit.open_group(dst, use_consolidated=False), g)


def _partly_there(fmt):
    """A source, and a destination that has g2 (an array there) and g0 (a group) already."""
    store = SlowStore(latency=0)
    build(store, fmt, False)
    dst = SlowStore(latency=0)
    into = zarrkit.open_group(dst, mode="w", zarr_format=fmt)
    into.create_array("g2", shape=(1,), dtype="i1")
    into.create_group("g0", attributes={"mine": 1}).create_array("a", shape=(9,), dtype="i1")
    return opened(store, False), into, dst


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_copy_all_raises_where_one_by_one_raised(zarr_format):
    """if_exists="raise": the members before the first that exists are copied, it raises, and
    those after it are not copied (as one by one)."""
    g, into, dst = _partly_there(zarr_format)
    lines = []
    with pytest.raises(NodeExistsError, match="/g0 exists"):
        zarrkit.copy_all(g, into, log=lines.append)
    assert lines == [] and sorted(into.keys()) == ["g0", "g2"]
    del into["g0"]
    with pytest.raises(NodeExistsError, match="/g2 exists"):
        zarrkit.copy_all(g, into, log=lines.append)
    assert sorted(into.keys()) == ["g0", "g1", "g2"]
    assert lines[0] == "copy /g0 -> /g0" and lines[-1] == "copy /g1/sub/deep/c (2, 2) float64 " \
        "-> /g1/sub/deep/c" and len(lines) == 14


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("if_exists", ["skip", "replace", "skip_initialized"])
def test_copy_all_into_existing_nodes_as_one_by_one(monkeypatch, zarr_format, if_exists):
    results = []
    for at_once in (True, False):
        if not at_once:  # the one-by-one walk, for reference
            monkeypatch.setattr(copying, "_existing", None)
            monkeypatch.setattr(copying, "_copy_members", _one_by_one)
        g, into, dst = _partly_there(zarr_format)
        lines = []
        tally = zarrkit.copy_all(g, into, if_exists=if_exists, log=lines.append)
        stored = {k: dst.get(k) for k in dst.list_prefix("")}
        results.append((tally, lines, stored))
    assert results[0] == results[1]
    # (skip_initialized replaces the arrays there, none of whose chunks is stored)
    assert any(line.startswith("skip") for line in results[0][1]) == (if_exists == "skip")


def _one_by_one(source, dest, parent, state, shallow):
    for key, node in copying._members(source, state, 0 if shallow else None):
        copying._copy(node, dest, parent, key, state, shallow, root=False)


def test_copy_all_reports_a_failure_after_the_lines_before_it(monkeypatch):
    g, into, _ = _partly_there(3)
    del into["g0"], into["g2"]
    real = copying._copy_array

    def failing(source, dest, name, existing, state):
        if source.path == "g1/a":
            raise OSError("the store went away")
        real(source, dest, name, existing, state)

    lines, dry = [], []
    zarrkit.copy_all(g, into, log=dry.append, dry_run=True)
    monkeypatch.setattr(copying, "_copy_array", failing)
    with pytest.raises(OSError, match="went away"):
        zarrkit.copy_all(g, into, log=lines.append)
    # g0's lines, then g1's up to the failure (those of the members after it are not written)
    assert lines == dry[:dry.index("copy /g1/a (4,) int16 -> /g1/a") + 1] and len(lines) == 9


def test_copy_all_starts_no_sibling_after_a_failure(monkeypatch):
    """Siblings are copied a few at once, but once one fails no further sibling is started:
    only those already under way may finish (before, all 24 after the failure were copied)."""
    src = zarrkit.open_group("memory://copy-fail-src", mode="w")
    for i in range(30):
        src.create_array(f"a{i:02}", shape=(4,), dtype="i2")[...] = i
    into = zarrkit.open_group("memory://copy-fail-dst", mode="w")
    real = copying._copy_array

    def failing(source, dest, name, existing, state):
        if source.path == "a05":
            raise OSError("the store went away")
        real(source, dest, name, existing, state)

    monkeypatch.setattr(copying, "_copy_array", failing)
    with pytest.raises(OSError, match="went away"):
        zarrkit.copy_all(src, into)
    copied = sorted(into.keys())
    assert copied[:5] == [f"a{i:02}" for i in range(5)] and "a05" not in copied
    assert len(copied) <= 5 + io_width(into.store.io_concurrency), copied


def test_copy_all_of_a_slow_source_still_lists_it_a_level_at_a_time():
    store = SlowStore()
    build(store, 2, False)
    g = opened(store, False)
    _, _, dst = _copy(g, 2)
    assert store.calls["list_prefix"] == 13
    _same_hierarchy(zarrkit.open_group(dst, use_consolidated=False), g)


def test_copy_all_into_a_zarr_python_readable_directory(tmp_path):
    import zarr

    store = SlowStore(latency=0)
    build(store, 3, False)
    g = opened(store, False)
    zarrkit.copy_all(g, zarrkit.open_group(str(tmp_path), mode="w"))
    theirs = zarr.open_group(str(tmp_path), mode="r")
    assert sorted(p for p, _ in theirs.members(None)) == sorted(_paths(g))
    np.testing.assert_array_equal(theirs["g3/s"][...], g["g3/s"][...])


# -- 5. move -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("consolidated", "rounds"), [(False, 7), (True, 20)])
def test_move_checks_at_once_and_writes_the_parents_together(consolidated, rounds):
    store = SlowStore(latency=CONCURRENT)
    build(store, 3, consolidated)
    g = zarrkit.open_group(store, mode="r+", use_consolidated=False)
    store.reset()
    g.move("g1", "new/place/g1")  # (before: 10 and 25)
    # (+ 1: a pool thread slow to start the second check of the two asked at once)
    assert rounds <= store.rounds <= rounds + 1, store.calls
    store.latency = 0
    assert "new/place/g1/sub/deep/c" in _paths(zarrkit.open_group(store, use_consolidated=False))
    if consolidated:
        assert _paths(zarrkit.open_consolidated(store)) == _paths(
            zarrkit.open_group(store, use_consolidated=False))
    with pytest.raises(zarrkit.errors.NodeNotFoundError, match="no member 'g1'"):
        g.move("g1", "elsewhere")
    with pytest.raises(NodeExistsError, match="something is there"):
        g.move("g2", "new")
    with pytest.raises(zarrkit.errors.InvalidNameError, match="inside itself"):
        g.move("g2", "g2/in")

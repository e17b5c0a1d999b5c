"""Hierarchy operations on a slow (remote-like) store make few sequential round trips: members
are listed level by level (every group of a level listed concurrently, all their members'
documents read in one batched request), never node by node, and with exactly the results a
node-by-node walk gives (order included). Measured on a ~30-node hierarchy, v3 and v2, with and
without consolidated metadata, some arrays sharded."""

from __future__ import annotations

import threading
import time
from collections import Counter

import numpy as np
import pytest

import zarrkit
from zarrkit.describe import group_html, summary
from zarrkit.engine.executor import io_width
from zarrkit.kvstore.memory import MemoryStore

LATENCY = 0.01
#: The latency where requests are to be in flight at once: long enough that a pool thread
#: slow to start on a loaded machine still overlaps the others.
CONCURRENT = 0.05


class SlowStore(MemoryStore):
    """A memory store whose every request waits `LATENCY` (as a remote one would), counting
    requests by method, the most of each in flight at once, and sequential round trips: the
    times a request starts while none is in flight (a batch, or requests sent together, make
    one). A request made inside another (`get_many` calling `get`) is not counted again."""

    io_concurrency = 8
    _inner = threading.local()

    def __init__(self, latency=LATENCY):
        super().__init__()
        self._lock = threading.Lock()
        self.latency = latency
        self.reset()

    def reset(self):
        self.calls, self.peak, self.now = Counter(), Counter(), Counter()
        self.rounds = 0

    def _request(self, method, fn, *args):
        if getattr(self._inner, "busy", False):
            return fn(*args)
        with self._lock:
            self.rounds += not sum(self.now.values())
            self.calls[method] += 1
            self.now[method] += 1
            self.peak[method] = max(self.peak[method], self.now[method])
        self._inner.busy = True
        try:
            time.sleep(self.latency)
            return fn(*args)
        finally:
            self._inner.busy = False
            with self._lock:
                self.now[method] -= 1


def _counted(name, listing=False):
    def method(self, *args, **kwargs):
        fn = getattr(super(SlowStore, self), name)
        if listing:  # the listing happens when asked, not when iterated
            return iter(self._request(name, lambda: list(fn(*args, **kwargs))))
        return self._request(name, lambda: fn(*args, **kwargs))
    return method


for _name in ("get", "get_many", "get_with_generation", "exists", "size", "set", "set_many",
              "delete", "delete_many", "delete_prefix", "rename_prefix", "rename_key"):
    setattr(SlowStore, _name, _counted(_name))
SlowStore.list_prefix = _counted("list_prefix", listing=True)


def build(store, zarr_format, consolidated):
    """root/{g0..g3/{a, s, sub/{b, deep/{c}}}, x, y}: 30 members; `s` sharded in v3. Written
    without latency (it is not what is measured)."""
    latency, store.latency = getattr(store, "latency", 0), 0
    root = zarrkit.open_group(store, mode="w", zarr_format=zarr_format)
    root.attrs["title"] = "roundtrips"
    for i in range(4):
        g = root.create_group(f"g{i}")
        g.create_array("a", shape=(4,), chunks=(2,), dtype="i2")[...] = i
        shards = {"shards": (4, 4)} if zarr_format == 3 else {}
        g.create_array("s", shape=(8, 8), chunks=(2, 2), dtype="f4", **shards)[:4] = 1.5
        sub = g.create_group("sub")
        sub.create_array("b", shape=(3,), dtype="u1")
        sub.create_group("deep").create_array("c", shape=(2, 2), dtype="f8")[...] = 7
    root.create_array("x", shape=(5,), chunks=(5,), dtype="i8")[...] = np.arange(5)
    root.create_array("y", shape=(2,), dtype="bool")
    if consolidated:
        zarrkit.consolidate_metadata(store)
    store.latency = latency
    store.reset()


def opened(store, consolidated):
    g = zarrkit.open_group(store, mode="r", use_consolidated=consolidated or None)
    store.reset()
    return g


def _walked(g, depth=None):
    """A node-by-node reference walk: `keys()`, then each member opened by name."""
    out = []
    for key in g.keys():
        node = g[key]
        out.append((key, node))
        if isinstance(node, zarrkit.Group) and depth != 0:
            out += [(f"{key}/{p}", n) for p, n in
                    _walked(node, None if depth is None else depth - 1)]
    return out


def _described(members):
    return [(p, type(n).__name__, n.path, getattr(n, "shape", None), n.zarr_format,
             dict(n.attrs), n._consolidated is not None if isinstance(n, zarrkit.Group) else None)
            for p, n in members]


CASES = [(3, False), (3, True), (2, False), (2, True)]


# -- the results: exactly the node-by-node walk's ------------------------------------------------


@pytest.mark.parametrize(("zarr_format", "consolidated"), CASES)
@pytest.mark.parametrize("depth", [0, 1, 2, None])
def test_members_are_those_of_a_node_by_node_walk_in_order(zarr_format, consolidated, depth):
    store = SlowStore(latency=0)
    build(store, zarr_format, consolidated)
    g = opened(store, consolidated)
    assert _described(g.members(depth)) == _described(_walked(g, depth))
    assert g.nmembers(depth) == len(_walked(g, depth))
    assert g.keys() == list(g) == [k for k, _ in _walked(g, 0)] == ["g0", "g1", "g2", "g3",
                                                                     "x", "y"]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_the_walk_agrees_with_zarr_python(tmp_path, zarr_format):
    build_on = zarrkit.open_group(tmp_path, mode="w", zarr_format=zarr_format).store
    build_on.reset = lambda: None
    build(build_on, zarr_format, False)
    import zarr

    theirs = sorted((p, type(n).__name__) for p, n in
                    zarr.open_group(str(tmp_path), mode="r").members(max_depth=None))
    ours = zarrkit.open_group(tmp_path, mode="r").members(None)
    assert sorted((p, type(n).__name__) for p, n in ours) == theirs
    assert len(ours) == 30


def _tree_reference(g, indent="", level=None):
    lines = []
    members = _walked(g, 0)
    for i, (name, node) in enumerate(members):
        last = i == len(members) - 1
        branch = "└── " if last else "├── "
        if isinstance(node, zarrkit.Array):
            lines.append(f"{indent}{branch}{name} {node.shape} {node.dtype}")
        else:
            lines.append(f"{indent}{branch}{name}")
            if level != 0:
                lines += _tree_reference(node, indent + ("    " if last else "│   "),
                                         None if level is None else level - 1)
    return lines


@pytest.mark.parametrize(("zarr_format", "consolidated"), CASES)
@pytest.mark.parametrize("level", [0, 1, None])
def test_tree_is_the_node_by_node_tree(zarr_format, consolidated, level):
    store = SlowStore(latency=0)
    build(store, zarr_format, consolidated)
    g = opened(store, consolidated)
    assert g.tree(level) == "\n".join(["/", *_tree_reference(g, "", level)])
    assert g["g1"].tree() == "\n".join(["/g1", *_tree_reference(g["g1"])])


@pytest.mark.parametrize(("zarr_format", "consolidated"), CASES)
def test_visits_info_and_html_show_the_same_nodes(zarr_format, consolidated):
    store = SlowStore(latency=0)
    build(store, zarr_format, consolidated)
    g = opened(store, consolidated)
    seen = []
    g.visititems(lambda p, n: seen.append((p, type(n).__name__)))
    assert seen == [(p, type(n).__name__) for p, n in _walked(g)]
    assert g.visit(lambda p: p if p.endswith("deep/c") else None) == "g0/sub/deep/c"
    assert g.group_keys() == ["g0", "g1", "g2", "g3"] and g.array_keys() == ["x", "y"]
    text = str(g.info_complete())
    assert "No. members : 6" in text and "Groups      : g0, g1, g2, g3" in text
    html = g._repr_html_()
    assert html.count("📄") == 4 * 4 + 2 and html.count("📁") == 4 * 3
    assert summary(g)["arrays"] == ["x", "y"]


def test_the_html_tree_descends_only_into_the_members_it_shows(monkeypatch):
    """Groups past the first HTML_MEMBERS are neither shown nor read."""
    import zarrkit.describe as describe

    store = SlowStore(latency=0)
    build(store, 3, False)
    monkeypatch.setattr(describe, "HTML_MEMBERS", 2)
    g = opened(store, False)
    html = group_html(g)
    assert "… and 4 more" in html and html.count("… and 1 more") == 2  # g0's and g1's
    assert "g2" not in html and "sub" not in html
    assert store.calls["list_prefix"] == 3  # the root, g0 and g1



# -- the round trips: a couple a level, none with consolidated metadata --------------------------

#: Sequential round trips on the 4-level hierarchy without consolidated metadata: a listing and
#: one batched read of the members' documents per level (node by node, before: 13 to 85).
WALKS = {
    "members()": (lambda g: g.members(), 2),
    "members(None)": (lambda g: g.members(None), 8),
    "members(1)": (lambda g: g.members(1), 4),
    "group_keys": (lambda g: g.group_keys(), 2),
    "array_keys": (lambda g: g.array_keys(), 2),
    "arrays": (lambda g: g.arrays(), 2),
    "groups": (lambda g: g.groups(), 2),
    "tree": (lambda g: g.tree(), 8),
    "visititems": (lambda g: g.visititems(lambda p, n: None), 8),
    "nmembers": (lambda g: g.nmembers(), 2),
    "nmembers(None)": (lambda g: g.nmembers(None), 8),
    "len": (lambda g: len(g), 2),
    "keys": (lambda g: g.keys(), 2),
    "contains": (lambda g: "g0" in g, 1),
    "contains missing": (lambda g: "nope" in g, 1),
    "info": (lambda g: str(g.info), 0),
    "info_complete": (lambda g: str(g.info_complete()), 2),
    "html": (lambda g: g._repr_html_(), 8),
    "cli info": (lambda g: summary(g), 2),
}


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("name", sorted(WALKS))
def test_walks_take_a_listing_and_a_batched_read_a_level(zarr_format, name):
    op, rounds = WALKS[name]
    store = SlowStore(latency=CONCURRENT)
    build(store, zarr_format, False)
    op(opened(store, False))
    if rounds < 8:  # one group: a request at a time, nothing concurrent to time
        assert store.rounds == rounds, (store.rounds, store.calls)
        return
    # 13 groups listed on 4 levels, each level's documents in one request; the listings of a
    # level at once, a bounded number in flight (a thread slow to start may add trips: serial
    # listing would take 13 + 4)
    assert store.calls["list_prefix"] == 13 and store.calls["get_many"] == 4, store.calls
    assert rounds <= store.rounds <= rounds + 4, (store.rounds, store.calls)
    assert 1 < store.peak["list_prefix"] <= io_width(store.io_concurrency)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("name", sorted(WALKS))
def test_walks_of_a_consolidated_group_read_nothing(zarr_format, name):
    store = SlowStore()
    build(store, zarr_format, True)
    WALKS[name][0](opened(store, True))
    assert store.rounds == 0 and not store.calls


def test_the_round_trips_do_not_grow_with_the_groups_of_a_level():
    store = SlowStore(latency=0)
    root = zarrkit.open_group(store, mode="w")
    for i in range(40):
        root.create_group(f"n{i:02}").create_array("a", shape=(1,), dtype="i1")
    store.latency = CONCURRENT
    g = opened(store, False)
    members = g.members(None)
    assert len(members) == 80 and 4 <= store.rounds <= 6, store.rounds  # (node by node: 122)
    assert [p for p, _ in members[:4]] == ["n00", "n00/a", "n01", "n01/a"]
    assert store.calls["get_many"] == 2 and store.calls["list_prefix"] == 41


def test_members_without_the_childrens_own_consolidated_metadata():
    """`use_consolidated_for_children=False`: a member group's consolidated metadata is not
    used (its members are listed from the store, where one is newer than its record)."""
    store = SlowStore(latency=0)
    build(store, 3, False)
    zarrkit.consolidate_metadata(store, path="g0")
    zarrkit.open_group(store, mode="r+", use_consolidated=False)["g0"]["sub"].create_group(
        "late", attributes={"k": 1})
    # (zarrkit recorded it in g0's record too: make that record stale, as another writer would)
    zarrkit.consolidate_metadata(store, path="g0")
    store.delete_prefix("g0/sub/late/")
    g = opened(store, False)
    with_own = [p for p, _ in g.members(None)]
    without = [p for p, _ in g.members(None, use_consolidated_for_children=False)]
    assert "g0/sub/late" in with_own and "g0/sub/late" not in without
    assert without == [p for p in with_own if p != "g0/sub/late"]


def test_a_bad_member_document_fails_the_walk_as_opening_it_does():
    store = SlowStore(latency=0)
    build(store, 3, False)
    store.set("g2/sub/zarr.json", b"{not json")
    g = opened(store, False)
    with pytest.raises(zarrkit.errors.MetadataError, match="g2/sub/zarr.json"):
        g["g2"]["sub"]
    with pytest.raises(zarrkit.errors.MetadataError, match="g2/sub/zarr.json"):
        g.members(None)
    assert [p for p, _ in g.members()] == ["g0", "g1", "g2", "g3", "x", "y"]


# -- consolidating, copying, converting ----------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_consolidating_reads_a_level_at_a_time(zarr_format):
    store = SlowStore(latency=CONCURRENT)
    build(store, zarr_format, False)
    zarrkit.consolidate_metadata(store)  # before: 29 or 30 round trips
    assert store.rounds <= 14 and store.calls["list_prefix"] == 13, store.calls
    assert 1 < store.peak["list_prefix"] <= io_width(store.io_concurrency)
    store.reset()
    g = zarrkit.open_consolidated(store)
    assert store.rounds == 1
    assert [d[:-1] for d in _described(g.members(None))] == [
        d[:-1] for d in _described(_walked(zarrkit.open_group(store, use_consolidated=False)))]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_copy_store_checks_the_destination_in_one_request(zarr_format):
    store = SlowStore()
    build(store, zarr_format, False)
    dst = SlowStore()
    copied, skipped, _ = zarrkit.copy_store(store, dst)
    keys = sorted(store.list_prefix(""))
    assert sorted(dst.list_prefix("")) == keys and skipped == 0 and copied == len(keys)
    assert store.rounds + dst.rounds <= 4 + 2 * -(-len(keys) // 16)  # before: 59 or 86
    dst.reset()
    with pytest.raises(zarrkit.errors.NodeExistsError, match="keys exist already"):
        zarrkit.copy_store(store, dst)
    assert dst.rounds == 1
    dst.delete("g1/a/zarr.json" if zarr_format == 3 else "g1/a/.zarray")
    assert zarrkit.copy_store(store, dst, if_exists="skip")[:2] == (1, len(keys) - 1)
    assert sorted(dst.list_prefix("")) == keys


def _same_hierarchy(a, b):
    ours, theirs = a.members(None), b.members(None)
    assert [(p, type(n).__name__, dict(n.attrs)) for p, n in ours] == \
        [(p, type(n).__name__, dict(n.attrs)) for p, n in theirs]
    for (_, x), (_, y) in zip(ours, theirs, strict=True):
        if isinstance(x, zarrkit.Array):
            np.testing.assert_array_equal(x[...], y[...])


@pytest.mark.parametrize(("zarr_format", "consolidated"), CASES)
def test_copy_all_lists_the_source_a_level_at_a_time(zarr_format, consolidated):
    store = SlowStore()
    build(store, zarr_format, consolidated)
    store.latency = 0
    zarrkit.open_group(store, mode="r+")["g2"].attrs["note"] = "kept"
    store.latency = LATENCY
    g = opened(store, consolidated)
    dst = SlowStore(latency=0)
    zarrkit.copy_all(g, zarrkit.open_group(dst, mode="w", zarr_format=zarr_format))
    assert store.calls["list_prefix"] == (0 if consolidated else 13)
    assert store.calls["get_many"] <= (0 if consolidated else 4) + 30  # + the chunks read
    _same_hierarchy(zarrkit.open_group(dst, use_consolidated=False), g)


def test_copy_into_an_existing_hierarchy_merges_groups_and_keeps_attributes():
    store = SlowStore(latency=0)
    build(store, 2, False)
    dst = SlowStore(latency=0)
    into = zarrkit.open_group(dst, mode="w", zarr_format=2)
    into.create_group("g1", attributes={"old": 1}).create_array("extra", shape=(1,), dtype="i1")
    zarrkit.open_group(store, mode="r+")["g1"].attrs["new"] = 2
    zarrkit.copy_all(opened(store, False), into, if_exists="replace")
    assert dict(into["g1"].attrs) == {"old": 1, "new": 2}
    assert "extra" in into["g1"] and into["g1/sub/deep/c"][...].tolist() == [[7, 7], [7, 7]]
    # a group's empty attributes write nothing (no `.zattrs` of "{}" beside a new group)
    assert dst.get("g0/.zattrs") is None and dst.get("g0/sub/.zattrs") is None


@pytest.mark.parametrize(("zarr_format", "consolidated"), CASES)
def test_convert_lists_the_source_a_level_at_a_time(zarr_format, consolidated):
    store = SlowStore()
    build(store, zarr_format, consolidated)
    dst = SlowStore(latency=CONCURRENT)
    copy = zarrkit.convert(store, dst, zarr_format=3, progress=False)
    assert store.calls["list_prefix"] == (0 if consolidated else 13)
    # the nodes of a depth created at once (46 round trips with the data; before: 297)
    assert dst.rounds <= 60 and 1 < dst.peak["set"] <= io_width(dst.io_concurrency), dst.calls
    dst.latency = 0
    _same_hierarchy(copy, zarrkit.open_group(store, use_consolidated=False))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_creating_below_existing_groups_reads_the_ancestors_in_one_request(zarr_format):
    store = SlowStore()
    build(store, zarr_format, False)
    g = zarrkit.open_group(store, mode="r+")
    store.reset()
    g.create_array("g0/sub/deep/new", shape=(2,), dtype="i1")
    assert store.rounds == 4, store.calls  # exists?, the ancestors, write, records (before: 10)
    store.reset()
    g.create_group("g1/sub/deep/x/y/z")
    assert store.rounds == 6, store.calls  # + the missing groups written and recorded at once
    # (before: 8, before that 21)
    assert [p for p, _ in g["g1"].members(None)][-3:] == ["sub/deep/x", "sub/deep/x/y",
                                                          "sub/deep/x/y/z"]
    with pytest.raises(zarrkit.errors.MetadataError, match="is an array"):
        g.create_group("g0/a/below")


def test_create_hierarchy_checks_every_node_at_once():
    store = SlowStore()
    build(store, 3, False)
    g = zarrkit.open_group(store, mode="r+")
    store.reset()
    group = {"zarr_format": 3, "node_type": "group", "attributes": {}}
    made = g.create_hierarchy({**{f"h/n{i}": group for i in range(5)}, "g0/sub/deep/new": group})
    # what is there, the implied groups and the ancestors: 3 requests; then the new groups
    # written a level at a time (3 levels) and recorded under their 2 parents (before: 17,
    # before that 44 round trips, 24 of them asking for one key)
    assert store.rounds == 3 + 3 + 2 and "exists" not in store.calls, store.calls
    assert sorted(made) == ["", "g0", "g0/sub", "g0/sub/deep", "g0/sub/deep/new", "h",
                            *[f"h/n{i}" for i in range(5)]]
    assert [p for p, _ in g["g0"].members(None)][-1] == "sub/deep/new"
    with pytest.raises(zarrkit.errors.NodeExistsError, match="'h/n1', 'h/n3'"):
        g.create_hierarchy({"h/n1": group, "h/n3": group, "h/n9": group})

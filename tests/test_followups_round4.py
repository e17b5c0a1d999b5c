"""Round-4 follow-ups: (1) `Array.info` is cheap as zarr-python's (no store reads) and
`info_complete()` adds the stored bytes and counts; (2) TensorStore's subscript-style
operations on `IndexTransform` and `IndexDomain`, checked against tensorstore."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorstore as ts
import zarr

import zarrkit
from zarrkit.errors import SelectionError, SelectionTypeError, SpecError
from zarrkit.kvstore.memory import MemoryStore
from zarrkit.spec.dim_expression import d
from zarrkit.spec.transform import IndexDomain, IndexTransform

# -- 1. info and info_complete ---------------------------------------------------------------


class _Counting(MemoryStore):
    """A memory store counting every read and listing."""

    calls: list[str]

    def __init__(self) -> None:
        super().__init__()
        self.calls = []

    def _count(name):  # noqa: N805 - builds the overrides below
        def method(self, *args, **kwargs):
            self.calls.append(name)
            return getattr(MemoryStore, name)(self, *args, **kwargs)
        return method

    get = _count("get")
    get_with_generation = _count("get_with_generation")
    get_ranges_if = _count("get_ranges_if")
    exists = _count("exists")
    size = _count("size")
    list_prefix = _count("list_prefix")
    del _count


def _rows(info) -> dict[str, str]:
    return dict(info.rows())


def _labels(text: str) -> list[str]:
    return [line.split(" : ", 1)[0].strip() for line in str(text).splitlines()]


@pytest.mark.parametrize("shards", [None, (10, 10)])
def test_info_reads_nothing_from_the_store(shards):
    store = _Counting()
    a = zarrkit.create(store, (20, 20), "int32", chunks=(5, 5), shards=shards)
    a[0:7, :] = 1
    store.calls.clear()
    text = str(a.info)
    assert store.calls == []
    assert "stored" not in text and "Storage ratio" not in text
    assert _rows(a.info)["No. bytes"] == "1600 (1.6 KiB)"
    complete = str(a.info_complete())
    assert "list_prefix" in store.calls  # the complete summary does list
    assert _labels(complete)[:len(_labels(text))] == _labels(text)


def test_info_complete_counts_inner_chunks_shards_and_bytes():
    store = MemoryStore()
    a = zarrkit.create(store, (20, 20), "int32", chunks=(5, 5), shards=(10, 10))
    a[0:7, 0:3] = 1  # two inner chunks in one shard
    a[19, 19] = 2  # one inner chunk of the last shard
    rows = _rows(a.info_complete())
    assert rows["Chunks stored"] == "3/16" and rows["Shards stored"] == "2/4"
    stored = sum(store.size(k) for k in store.list_prefix(""))  # metadata too, as zarr
    assert rows["No. bytes stored"].startswith(f"{stored} (")
    assert rows["Storage ratio"] == f"{1600 / stored:.1f}"


def test_info_fields_follow_zarr_pythons_order(tmp_path):
    """The cheap summary holds zarr-python's cheap rows (no stored counts); the complete one
    adds the stored rows after "No. bytes", as zarr-python's info_complete."""
    z = zarr.create_array(str(tmp_path / "z"), shape=(10, 10), chunks=(5, 5), shards=(10, 10),
                          dtype="i4")
    z[:3] = 1
    cheap, full = _labels(repr(z.info)), _labels(repr(z.info_complete()))
    assert "No. bytes stored" not in cheap and "No. bytes stored" in full
    a = zarrkit.open(str(tmp_path / "z"), mode="r")
    ours, ours_full = _labels(a.info), _labels(a.info_complete())
    assert ours_full[:len(ours)] == ours  # complete = cheap + the stored rows
    extra = ours_full[len(ours):]
    assert extra == ["No. bytes stored", "Storage ratio", "Chunks stored", "Shards stored"]
    assert full[full.index("No. bytes"):][:3] == ["No. bytes", "No. bytes stored",
                                                 "Storage ratio"]
    assert ours.index("Shard shape") < ours.index("Chunk shape")
    assert full.index("Shard shape") < full.index("Chunk shape")
    assert _rows(a.info_complete())["Chunks stored"] == "2/4"
    assert _rows(a.info_complete())["Shards stored"] == "1/1"


def test_info_complete_of_an_unlistable_store_says_unknown():
    class Unlistable(MemoryStore):
        def list_prefix(self, prefix):
            raise zarrkit.errors.NotSupportedError("this store cannot list")

    a = zarrkit.create(Unlistable(), (4,), "int32", chunks=(2,))
    a[:] = 1
    assert "stored" not in str(a.info)
    rows = _rows(a.info_complete())
    assert rows["No. bytes stored"] == "unknown" and rows["Chunks stored"] == "?/2"


def test_group_info_is_cheap_and_info_complete_lists_members():
    store = _Counting()
    g = zarrkit.open_group(store, mode="w")
    g.create_group("sub")
    g.create_array("a", shape=(2,), dtype="int32")
    store.calls.clear()
    assert "No. members" not in str(g.info) and store.calls == []
    rows = _rows(g.info_complete())
    assert (rows["No. members"], rows["No. arrays"], rows["No. groups"]) == ("2", "1", "1")


def test_cli_info_shows_the_complete_summary(tmp_path, capsys):
    from zarrkit.cli import main

    a = zarrkit.open_array(str(tmp_path / "k"), mode="w", shape=(20, 20), dtype="int32",
                           chunks=(5, 5), shards=(10, 10))
    a[0:3, 0:4] = 1
    assert main(["info", str(tmp_path / "k")]) == 0
    out = capsys.readouterr().out
    assert "Chunks stored    : 1/16" in out and "Shards stored    : 1/4" in out
    assert "No. bytes stored" in out
    assert main(["info", str(tmp_path / "k"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)["info"]
    assert {"nbytes_stored", "chunks_stored", "chunks_total", "shards_stored",
            "shards_total", "compression_ratio"} <= set(info)
    assert (info["chunks_stored"], info["shards_stored"]) == (1, 1)


# -- 2. subscript-style operations on transforms and domains ---------------------------------


def _pair(**kwargs):
    """The same labeled transform in tensorstore and zarrkit."""
    return ts.IndexTransform(**kwargs), IndexTransform.from_json(ts.IndexTransform(
        **kwargs).to_json())


_BOX = {"input_inclusive_min": [1, 2, 0], "input_shape": [3, 4, 5],
        "input_labels": ["x", "y", "z"]}

_TRANSFORM_OPS = {
    "translate_to scalar": lambda t: t.translate_to[5],
    "translate_to each": lambda t: t.translate_to[0, None, 3],
    "translate_by scalar": lambda t: t.translate_by[2],
    "translate_by each": lambda t: t.translate_by[1, -1, 0],
    "translate_backward_by": lambda t: t.translate_backward_by[1, 2, 3],
    "label": lambda t: t.label["a", "b", "c"],
    "T": lambda t: t.T,
    "transpose labels": lambda t: t.transpose(["z", "x", "y"]),
    "transpose indices": lambda t: t.transpose([1, 2, 0]),
    "oindex": lambda t: t.oindex[[1, 3], :, [0, 4]],
    "vindex": lambda t: t.vindex[[1, 3], :, [0, 4]],
    "mark implicit": lambda t: t.mark_bounds_implicit[True],
    "mark upper implicit": lambda t: t.mark_bounds_implicit[:True],
    "mark lower explicit": lambda t: t.mark_bounds_implicit[True][False:],
    "chain": lambda t: t.translate_to[0].T.label["p", "q", "r"][1:2],
}


@pytest.mark.parametrize("op", sorted(_TRANSFORM_OPS))
def test_transform_operations_match_tensorstore(op):
    theirs, ours = _pair(**_BOX)
    assert _TRANSFORM_OPS[op](ours).to_json() == _TRANSFORM_OPS[op](theirs).to_json()


def test_transform_operations_through_a_strided_map():
    theirs = ts.IndexTransform(input_shape=[4, 6], output=[
        ts.OutputIndexMap(input_dimension=1, offset=3, stride=2),
        ts.OutputIndexMap(input_dimension=0)])
    ours = IndexTransform.from_json(theirs.to_json())
    for op in (lambda t: t.translate_to[10, 20], lambda t: t.T, lambda t: t.translate_by[-2],
               lambda t: t.label["i", "j"].transpose(["j", "i"])):
        assert op(ours).to_json() == op(theirs).to_json()


def test_method_forms_stay_and_equal_the_subscripts():
    _, t = _pair(**_BOX)
    assert t.translate_to([0, 0, 0]) == t.translate_to[0]
    assert t.translate_by([1, 1, 1]) == t.translate_by[1]
    assert t.label(["a", "b", "c"]) == t.label["a", "b", "c"]
    assert IndexTransform.translate_to(t, [0, 0, 0]) == t.translate_to[0]  # as view.py uses
    assert t.T == t.transpose() == t[d[::-1].transpose[:]]


def test_subscript_only_operations_reject_a_call():
    _, t = _pair(**_BOX)
    with pytest.raises(SelectionTypeError, match=r"mark_bounds_implicit\[\.\.\.\]"):
        t.mark_bounds_implicit(True)
    with pytest.raises(SelectionTypeError, match="label"):
        t.domain.label("a", "b", "c")


@pytest.mark.parametrize("op", [
    lambda t: t.label["a", "b"],  # too few labels
    lambda t: t.label["a", "a", "b"],  # not unique
    lambda t: t.translate_to[1, 2],  # wrong count
    lambda t: t.transpose([0, 0, 1]),  # not a permutation
])
def test_transform_operation_errors_are_raised_as_tensorstore_does(op):
    theirs, ours = _pair(**_BOX)
    with pytest.raises(ValueError):
        op(theirs)
    with pytest.raises((SelectionError, SpecError)):
        op(ours)


def test_translate_to_of_an_unbounded_dimension_fails_in_both():
    theirs, ours = _pair(input_rank=2)
    with pytest.raises(ValueError):
        theirs.translate_to[0]
    with pytest.raises(SelectionError, match="origin"):
        ours.translate_to[0]


_DOMAIN_OPS = {
    "translate_to": lambda x: x.translate_to[0],
    "translate_to each": lambda x: x.translate_to[None, 7, 1],
    "translate_by": lambda x: x.translate_by[1],
    "translate_backward_by": lambda x: x.translate_backward_by[1, 2, 3],
    "label": lambda x: x.label["a", "b", "c"],
    "T": lambda x: x.T,
    "transpose": lambda x: x.transpose(["y", "z", "x"]),
    "transpose indices": lambda x: x.transpose([2, 0, 1]),
    "mark implicit": lambda x: x.mark_bounds_implicit[True],
    "mark lower implicit": lambda x: x.mark_bounds_implicit[True:],
}


@pytest.mark.parametrize("op", sorted(_DOMAIN_OPS))
def test_domain_operations_match_tensorstore(op):
    theirs, ours = _pair(**_BOX)
    got = _DOMAIN_OPS[op](ours.domain)
    assert isinstance(got, IndexDomain)
    assert got.to_json() == _DOMAIN_OPS[op](theirs.domain).to_json()


def test_domain_takes_dimension_expressions_as_tensorstore():
    theirs, ours = _pair(**_BOX)
    assert ours.domain[d["y"].translate_by[5]].to_json() == \
        theirs.domain[ts.d["y"].translate_by[5]].to_json()
    assert ours.domain.translate_to[0] == ours.domain[d[:].translate_to[0]]


def test_domain_properties_match_tensorstore():
    theirs = ts.IndexDomain(inclusive_min=[1, 2], shape=[3, 4], labels=["x", "y"])
    ours = IndexDomain.from_json(theirs.to_json())
    assert ours.shape == theirs.shape and ours.origin == theirs.origin
    assert ours.size == theirs.size and ours.index_exp == theirs.index_exp
    assert np.zeros((10, 10))[ours.index_exp].shape == (3, 4)
    for kwargs in ({"rank": 2}, {"inclusive_min": [1], "exclusive_max": [3],
                                 "implicit_upper_bounds": [True]},
                   {"exclusive_max": [5, 6]}, {"rank": 0}):
        t = ts.IndexDomain(**kwargs)
        assert IndexDomain.from_json(t.to_json()).index_exp == t.index_exp


@pytest.mark.parametrize("other", [
    {"shape": [10, 1]}, {"shape": [2, 10]}, {"inclusive_min": [5, 5], "shape": [0, 2]},
    {"inclusive_min": [-3, 4], "exclusive_max": [2, 100], "labels": ["x", ""]},
    {"rank": 2}, {"inclusive_min": [1, 1], "shape": [1, 1],
                  "implicit_lower_bounds": [True, False],
                  "implicit_upper_bounds": [False, True]},
])
@pytest.mark.parametrize("what", ["hull", "intersect"])
def test_domain_hull_and_intersect_match_tensorstore(other, what):
    theirs = ts.IndexDomain(inclusive_min=[1, 2], shape=[3, 4], labels=["x", "y"])
    ours = IndexDomain.from_json(theirs.to_json())
    expected = getattr(theirs, what)(ts.IndexDomain(**other))
    got = getattr(ours, what)(IndexDomain.from_json(ts.IndexDomain(**other).to_json()))
    assert got.to_json() == expected.to_json()
    assert repr(got) == repr(expected)


@pytest.mark.parametrize("other", [{"shape": [3]}, {"shape": [3, 4], "labels": ["y", "x"]}])
def test_domain_hull_mismatches_fail_in_both(other):
    theirs = ts.IndexDomain(inclusive_min=[1, 2], shape=[3, 4], labels=["x", "y"])
    ours = IndexDomain.from_json(theirs.to_json())
    with pytest.raises(ValueError):
        theirs.hull(ts.IndexDomain(**other))
    with pytest.raises(SpecError, match="hull"):
        ours.hull(IndexDomain.from_json(ts.IndexDomain(**other).to_json()))
    with pytest.raises(SpecError, match="expected an IndexDomain"):
        ours.intersect([1, 2])

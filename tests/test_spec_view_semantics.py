"""Index transforms and lazy views compared with TensorStore and numpy: 0-d and writable
results, index-array bounds, broadcast writes, implicit bounds that follow a resize."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import tensorstore as ts

import zarrkit

SHAPE = (4, 5, 6)
DATA = np.arange(np.prod(SHAPE), dtype=np.int32).reshape(SHAPE)


def _pair(tmp_path, shape=SHAPE, data=DATA):
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "memory"}}, create=True,
                dtype=ts.int32, shape=shape).result()
    t[...] = data
    a = zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)}},
                     create=True, dtype="int32", shape=list(shape))
    a[...] = data
    return t, a


def test_read_of_a_0d_view_is_0d(tmp_path):
    t, a = _pair(tmp_path)
    expected = t[1, 2, 3].read().result()
    for view in (a.view[1, 2, 3], a.view[1, 2, 3][...], a.view[None, 1, 2, 3][0]):
        got = view.read().result()
        assert got.shape == expected.shape == ()
        assert got == expected
    assert np.asarray(a.view[1, 2, 3]).shape == ()


def test_read_of_a_0d_array_is_0d(tmp_path):
    t, a = _pair(tmp_path, (), np.array(7, np.int32))
    assert a.view.read().result().shape == t.read().result().shape == ()


@pytest.mark.parametrize("select", [lambda v: v, lambda v: v[1:3], lambda v: v[None],
                                    lambda v: v[:, 2], lambda v: v.T])
def test_read_result_is_a_writable_copy(tmp_path, select):
    """TensorStore's read gives an array the caller owns: writable, not sharing storage."""
    _, a = _pair(tmp_path)
    got = select(a.view).read().result()
    assert got.flags.writeable and got.flags.c_contiguous
    got[...] = -1
    assert (a[...] == DATA).all()


# An index array already in the transform is indexed by the new selection's coordinates:
# those must lie in its domain (numpy would wrap a negative position or raise IndexError).
OUTSIDE_AN_INDEX_ARRAY = [
    lambda x: x[[3, 2, 1]].translate_to[2][[0, 2]],  # 0 - 2 = position -2: read row 2 before
    lambda x: x[[3, 2, 1]][[0, 1, 2, 3]],
    lambda x: x[[[3, 2, 1]]][:, [0, 3]],
    lambda x: x.oindex[[3, 2, 1]][::-1][[0, 2]],
]


@pytest.mark.parametrize("select", OUTSIDE_AN_INDEX_ARRAY)
def test_index_array_positions_outside_its_domain_are_refused(tmp_path, select):
    t, a = _pair(tmp_path)
    with pytest.raises(IndexError):
        select(t)
    with pytest.raises(zarrkit.SelectionError, match="outside the domain"):
        select(a.view)


def test_index_array_positions_inside_its_domain(tmp_path):
    t, a = _pair(tmp_path)
    for select in (lambda x: x[[3, 2, 1]].translate_to[2][[4, 2]],
                   lambda x: x.oindex[[3, 2, 1]][::-1][[0, -2]]):
        assert select(t).domain.to_json() == select(a.view).domain.to_json()
        assert (select(t).read().result() == select(a.view).read().result()).all()


def test_uint64_index_array_does_not_wrap(tmp_path):
    """2**64 - 1 is not index -1 (numpy's cast to int64 would make it so)."""
    _, a = _pair(tmp_path)
    view = a.view.translate_by[-2]
    with pytest.raises(zarrkit.SelectionError, match="18446744073709551615"):
        view[np.array([2**64 - 1], np.uint64)]
    assert (view[np.array([0, 1], np.uint64)].read().result() == DATA[2:4]).all()


def test_write_through_a_broadcast_dimension_keeps_the_last_value(tmp_path):
    """A sliced new axis [0, 3) writes each element three times; like repeated indices of an
    index array, the last write wins."""
    t, a = _pair(tmp_path)
    value = np.arange(3, dtype=np.int32)[:, None, None]
    t[ts.newaxis][0:3, 1].write(value).result()
    a.view[None][0:3, 1].write(value).result()
    assert (a[...] == t.read().result()).all()
    assert (a[1] == 2).all()


VIEWS = [lambda x: x[:, 1], lambda x: x[::-1], lambda x: x[1:], lambda x: x[::2, 2],
         lambda x: x.translate_to[5].T, lambda x: x[:, [1, 2]]]


@pytest.mark.parametrize("exclusive_max", [[2, 5, 6], [6, 5, 6], [7, 3, 8]])
@pytest.mark.parametrize("select", VIEWS)
def test_implicit_bounds_of_a_view_follow_a_resize(tmp_path, exclusive_max, select):
    """A view made before a resize reads and writes the array's current extent along its
    implicit (resizable) bounds, as TensorStore resolves them; its domain is unchanged."""
    t, a = _pair(tmp_path)
    tv, av = select(t), select(a.view)
    t = t.resize(exclusive_max=exclusive_max).result()
    a.resize(exclusive_max=exclusive_max)
    assert av.domain.to_json() == tv.domain.to_json()
    expected = tv.read().result()
    got = av.read().result()
    assert got.shape == expected.shape and (got == expected).all()
    tv.write(np.int32(-7)).result()
    av.write(np.int32(-7)).result()
    assert (a[...] == t.read().result()).all()


def test_explicit_bounds_of_a_view_do_not_follow_a_resize(tmp_path):
    _, a = _pair(tmp_path)
    view = a.view[1:3]
    a.resize(exclusive_max=[2, 5, 6])
    with pytest.raises(zarrkit.SelectionError, match="index 2 is out of bounds"):
        view.read().result()


MAKE_REFUSED = [
    (dict(shape=["a"]), r"shape\[0\]: expected an integer"),
    (dict(exclusive_max=[None]), r"exclusive_max\[0\]: expected an integer"),
    (dict(inclusive_min=[1.5], shape=[3]), r"inclusive_min\[0\]: expected an integer"),
    (dict(inclusive_min=[-float("inf")], exclusive_max=[5]), r"inclusive_min\[0\]"),
    (dict(shape=[2**70]), r"shape\[0\]: .* outside the 64-bit index range"),
    (dict(shape=3), "shape: expected a sequence"),
    (dict(shape=[3], labels="a"), "labels: expected a sequence"),
    (dict(labels=[1]), r"labels\[0\]: expected a string"),
    (dict(shape=[3], implicit_lower_bounds=["x"]), r"implicit_lower_bounds\[0\]"),
    (dict(shape=[3], exclusive_max=[3]), "shape and exclusive_max cannot both be given"),
    (dict(exclusive_max=[3], inclusive_max=[2]), "exclusive_max and inclusive_max"),
    (dict(shape=[3], labels=["a", "b"]), "labels has 2 entries, but shape gives rank 1"),
    (dict(rank=2, shape=[3]), "shape has 1 entries, but rank gives rank 2"),
    (dict(rank=33), r"rank must be in \[0, 32\]"),
    (dict(shape=[-1]), "dimension 0: inclusive_min 0 and shape -1 do not give a valid"),
    (dict(inclusive_min=[3], inclusive_max=[1]), "inclusive_min 3 and inclusive_max 1"),
    (dict(labels=["a", "a"]), "not unique"),
]


@pytest.mark.parametrize(("kwargs", "message"), MAKE_REFUSED)
def test_index_domain_make_refuses_what_tensorstore_refuses(kwargs, message):
    """IndexDomain.make raised raw ValueError/TypeError, or truncated 1.5 to an origin of 1
    while the end stayed 4.5; TensorStore refuses all of these."""
    with pytest.raises(Exception):  # noqa: B017, PT011 - each kind TensorStore raises
        ts.IndexDomain(**kwargs)
    with pytest.raises(zarrkit.SpecError, match=message):
        zarrkit.IndexDomain.make(**kwargs)


MAKE_ACCEPTED = [
    dict(shape=[np.int64(3)]), dict(inclusive_min=[np.int32(2)], shape=[np.uint64(3)]),
    dict(shape=np.array([3, 4])), dict(shape=[True]), dict(shape=[2**62]),
    dict(inclusive_min=[-(2**62) + 1], shape=[2]), dict(inclusive_max=[2**62 - 1]),
    dict(labels=[None, np.str_("y")]), dict(shape=[3], implicit_lower_bounds=[1]),
    dict(shape=[3], implicit_upper_bounds=np.array([True])), dict(rank=np.int64(2)),
    dict(inclusive_min=[3], inclusive_max=[2]), dict(inclusive_min=[0, 1], labels=["a", None]),
]


@pytest.mark.parametrize("kwargs", MAKE_ACCEPTED)
def test_index_domain_make_accepts_what_tensorstore_accepts(kwargs):
    expected = ts.IndexDomain(**kwargs)
    got = zarrkit.IndexDomain.make(**kwargs)
    assert got.to_json() == expected.to_json()
    assert got.labels == expected.labels and all(type(v) is str for v in got.labels)


VIEW_OPS = [lambda x: x, lambda x: x[1:, ::2], lambda x: x[:, ::-3, 2],
            lambda x: x.translate_to[5, 7, 1], lambda x: x.T, lambda x: x[np.newaxis],
            lambda x: x[[0, 2]], lambda x: x.vindex[[0, 2], [1, 2]],
            lambda x: x.translate_by[3][::2][..., ::-1], lambda x: x.transpose([2, 0, 1])[::5]]


def _without_codec(schema):
    return {k: v for k, v in schema.to_json().items() if k != "codec"}


@pytest.mark.parametrize("driver", ["zarr", "zarr3"])
def test_labelled_open_describes_itself_as_tensorstore_does(tmp_path, driver):
    """A driver "zarr" open with labels (which .zarray cannot hold) returned a View without
    chunk_layout, schema, codec, fill_value or dimension_units (AttributeError); a "zarr3"
    open returned the Array with them all. Views now describe themselves in their own
    coordinates, as TensorStore's transformed TensorStore objects do."""
    units = {"dimension_units": ["4nm", "2s", None]} if driver == "zarr3" else {}
    common = dict(create=True, dtype="int16", fill_value=3, **units)
    t = ts.open({"driver": driver, "kvstore": {"driver": "memory"}},
                domain=ts.IndexDomain(shape=[24, 24, 10], labels=["x", "y", "z"]),
                chunk_layout=ts.ChunkLayout(chunk_shape=[6, 4, 5]), **common).result()
    a = zarrkit.open({"driver": driver, "kvstore": {"driver": "file", "path": str(tmp_path)}},
                     domain=zarrkit.IndexDomain.make(shape=[24, 24, 10], labels=["x", "y", "z"]),
                     chunk_layout=zarrkit.ChunkLayout(chunk_shape=[6, 4, 5]), **common)
    base = a if isinstance(a, zarrkit.View) else a.view
    for op in VIEW_OPS:
        tv, av = op(t), op(base)
        assert av.chunk_layout.to_json() == tv.chunk_layout.to_json()
        assert _without_codec(av.schema) == _without_codec(tv.schema)
        assert [u and (u.multiplier, u.base_unit) for u in av.dimension_units] == \
            [u and (u.multiplier, u.base_unit) for u in tv.dimension_units]
        assert av.codec == a.codec and av.dtype == tv.dtype.numpy_dtype
        assert av.fill_value == a.fill_value and av.rank == tv.rank
    assert a.spec().domain.labels == ("x", "y", "z")


def test_view_futures_can_be_awaited():
    """As TensorStore's: asyncio code awaits reads and writes, and sees their errors."""
    a = zarrkit.zeros((4, 4), dtype="i4")

    async def main():
        await a.view[1:3].write(np.ones((2, 4), "i4"))
        both = await asyncio.gather(a.view[0].read(), a.view[1].read())
        with pytest.raises(zarrkit.SelectionError):
            await a.view.write(np.ones((9, 9), "i4"))
        return both

    first, second = asyncio.run(main())
    assert first.tolist() == [0, 0, 0, 0] and second.tolist() == [1, 1, 1, 1]
    assert a.view[2].read().result().tolist() == [1, 1, 1, 1]  # still a plain future too

"""Index transforms and lazy views compared with TensorStore and numpy: 0-d and writable
results, index-array bounds, broadcast writes, implicit bounds that follow a resize."""

from __future__ import annotations

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

"""zarr-python's and numpy's calling conventions at the top level: the store as `store=`, the
shape first in `create`/`zeros`/`ones`/`empty`/`full`, and `Group.create_array(name, data=)`."""

import numpy as np
import pytest

import zarrkit


def test_shape_first_creation_in_memory_and_with_store(tmp_path):
    a = zarrkit.zeros((4, 6), chunks=(2, 3))
    assert a.shape == (4, 6) and a.chunks == (2, 3) and a.dtype == np.float64
    assert (a[...] == 0).all()
    b = zarrkit.ones((3,), "int16", store=str(tmp_path / "b.zarr"))
    assert b.dtype == np.int16
    assert (zarrkit.open(str(tmp_path / "b.zarr"), mode="r")[...] == 1).all()
    c = zarrkit.full((2, 2), 7, dtype="uint8")
    assert c.dtype == np.uint8 and (c[...] == 7).all()
    assert zarrkit.empty(5).shape == (5,)
    d = zarrkit.create((3, 3), "int32", store=str(tmp_path / "d.zarr"), fill_value=2)
    assert d.dtype == np.int32 and (d[...] == 2).all()
    assert zarrkit.create(shape=(2,)).dtype == np.float64


def test_zarrkit_order_still_works(tmp_path):
    a = zarrkit.zeros(str(tmp_path / "a.zarr"), (2, 2), dtype="int8")
    assert a.shape == (2, 2) and a.dtype == np.int8
    assert (zarrkit.full(str(tmp_path / "f.zarr"), (2,), 3)[...] == 3).all()
    assert (zarrkit.full(str(tmp_path / "g.zarr"), (2,))[...] == 0).all()


def test_store_keyword_everywhere(tmp_path):
    where = str(tmp_path / "s.zarr")
    g = zarrkit.open_group(store=where, mode="w")
    g.attrs["x"] = 1
    assert zarrkit.group(store=where).attrs["x"] == 1
    a = zarrkit.open(store=where, mode="a", path="a", shape=(3,), dtype="int8")
    a[...] = [1, 2, 3]
    assert zarrkit.open_array(store=where, path="a", mode="r")[1] == 2
    assert list(zarrkit.load(store=where, path="a")) == [1, 2, 3]
    b = zarrkit.array(np.arange(4), store=where, path="b")
    assert list(b[...]) == [0, 1, 2, 3]
    c = zarrkit.create_array(store=where, name="c", shape=(2,), dtype="f4")
    assert c.path == "c"
    assert zarrkit.create_group(store=str(tmp_path / "new.zarr")).path == ""
    assert zarrkit.zeros_like(b, store=str(tmp_path / "z.zarr")).shape == (4,)
    zarrkit.save(str(tmp_path / "sv.zarr"), np.arange(2))


@pytest.mark.parametrize("call", [
    lambda w: zarrkit.open(w, store=w),
    lambda w: zarrkit.open_group(w, store=w),
    lambda w: zarrkit.zeros(w, (2,), store=w),
    lambda w: zarrkit.array([1], w, store=w),
])
def test_store_given_twice_is_refused(tmp_path, call):
    with pytest.raises(zarrkit.SpecError, match="given twice"):
        call(str(tmp_path / "t.zarr"))


def test_positional_and_keyword_second_argument_conflict():
    with pytest.raises(zarrkit.SpecError, match="dtype is given twice"):
        zarrkit.zeros((2,), "int8", dtype="int16")
    with pytest.raises(zarrkit.SpecError, match="fill_value is given twice"):
        zarrkit.full((2,), 1, fill_value=2)


def test_group_create_array_with_data(tmp_path):
    g = zarrkit.open_group(str(tmp_path / "g.zarr"), mode="w")
    a = g.create_array("m", data=np.arange(6).reshape(2, 3), chunks=(1, 3))
    assert a.shape == (2, 3) and a.chunks == (1, 3)
    assert (g["m"][...] == np.arange(6).reshape(2, 3)).all()
    with pytest.raises(zarrkit.SpecError, match="not both"):
        g.create_array("n", data=np.arange(2), shape=(2,))
    assert g.create_array("p", data=np.arange(2), shape=None, dtype=None).shape == (2,)
    with pytest.raises(zarrkit.CodecError):
        g.create_array("bad", data=np.array(["x", 1], dtype=object))
    assert "bad" not in g  # a failed write leaves no member behind


def test_group_creators_take_the_name_by_position_or_keyword():
    g = zarrkit.group()
    assert g.zeros("a", shape=(2,))[...].tolist() == [0, 0]  # zarr-python 2's order
    assert g.ones("b", (2,), dtype="int8")[...].tolist() == [1, 1]
    assert g.full("c", (2,), 5)[...].tolist() == [5, 5]
    assert g.empty(name="d", shape=(3,)).shape == (3,)  # zarr-python 3's keywords
    assert g.zeros_like("e", np.arange(3)).shape == (3,)
    assert g.full_like(name="f", data=g["c"])[...].tolist() == [5, 5]

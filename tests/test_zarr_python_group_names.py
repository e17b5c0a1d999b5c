"""zarr-python 2's and h5py's group methods: create_dataset/create/array, require_dataset,
require_groups, move, the visit family, info; and require_array's `exact`."""

import numpy as np
import pytest
import zarr

import zarrkit
from zarrkit.kvstore.foreign import MappingStore


@pytest.fixture
def root():
    return zarrkit.group()


# -- create_dataset, create, array ----------------------------------------------------------------


def test_create_dataset_keywords_and_h5py_positions(root):
    a = root.create_dataset("a", shape=(4, 6), dtype="i2", chunks=(2, 3))
    assert (a.shape, a.dtype, a.chunks) == ((4, 6), np.int16, (2, 3))
    b = root.create_dataset("b", (5,), "f4")
    assert (b.shape, b.dtype) == ((5,), np.float32)
    assert (b[...] == 0).all()
    c = root.create("c", shape=(2,), dtype="u1", fill_value=9)
    assert (c[...] == 9).all()


def test_create_dataset_with_data(root):
    data = np.arange(6).reshape(2, 3)
    a = root.create_dataset("a", data=data)
    assert a.dtype == data.dtype and (a[...] == data).all()
    b = root.create_dataset("b", shape=(2, 3), dtype="f4", data=data, chunks=(1, 3))
    assert b.dtype == np.float32 and b.chunks == (1, 3)
    assert (b[...] == data.astype("f4")).all()
    c = root.array("c", [1.5, 2.5])
    assert (c[...] == [1.5, 2.5]).all()
    d = root.array("d", data=data, chunks=(1, 1))
    assert d.chunks == (1, 1) and (d[...] == data).all()


def test_create_dataset_refusals(root):
    with pytest.raises(zarrkit.SpecError, match=r"shape=\(3, 2\) is not the shape of the data"):
        root.create_dataset("a", shape=(3, 2), data=np.zeros((2, 3)))
    assert "a" not in root
    root.create_dataset("b", shape=(1,))
    with pytest.raises(zarrkit.NodeExistsError):
        root.create_dataset("b", shape=(1,))
    with pytest.raises(zarrkit.NodeExistsError):
        root.array("b", [1])
    frozen = zarrkit.open_group(root.store, mode="r")
    with pytest.raises(zarrkit.ReadOnlyError):
        frozen.create_dataset("c", shape=(1,))


def test_create_dataset_failed_write_leaves_no_member(root):
    with pytest.raises(zarrkit.ZarrkitError):
        root.create_dataset("bad", dtype="i1", data=np.array(["x", "y"], dtype=object))
    assert "bad" not in root


def test_v2_group_creates_v2_datasets(tmp_path):
    g = zarrkit.open_group(str(tmp_path / "v2.zarr"), mode="w", zarr_format=2)
    g.create_dataset("a", data=np.arange(5, dtype="i4"), chunks=(2,))
    z = zarr.open_group(str(tmp_path / "v2.zarr"), mode="r")
    assert z["a"].metadata.zarr_format == 2
    assert z["a"][:].tolist() == [0, 1, 2, 3, 4]


# -- require_dataset, require_array(exact=), require_groups ---------------------------------------


def test_require_dataset_creates_then_returns(root):
    a = root.require_dataset("a", (4,), "f4", chunks=(2,), fill_value=1)
    assert a.chunks == (2,) and (a[...] == 1).all()
    a[0] = 5
    again = root.require_dataset("a", (4,), "f4")
    assert again[0] == 5
    # h5py: other keywords only apply when creating; an existing array is returned as it is.
    assert root.require_dataset("a", shape=(4,), dtype="f4", chunks=(4,)).chunks == (2,)


def test_require_dataset_dtype_rules(root):
    root.require_dataset("a", (3,), "f4")
    assert root.require_dataset("a", (3,), "f8").dtype == np.float32  # casts safely
    with pytest.raises(zarrkit.SpecError, match="do not cast safely"):
        root.require_dataset("a", (3,), "i2")
    with pytest.raises(zarrkit.SpecError, match="dtype"):
        root.require_dataset("a", (3,), "f8", exact=True)
    assert root.require_dataset("a", (3,), "float32", exact=True).dtype == np.float32


def test_require_dataset_refusals(root):
    root.require_dataset("a", (3,), "u1")
    with pytest.raises(zarrkit.SpecError, match="shape"):
        root.require_dataset("a", (4,), "u1")
    root.create_group("g")
    with pytest.raises(zarrkit.NodeTypeError, match="is a group"):
        root.require_dataset("g", (1,), "u1")


def test_require_array_exact(root):
    root.require_array("a", shape=(2,), dtype="i2", chunks=(1,))
    assert root.require_array("a", shape=(2,), dtype="i4").dtype == np.int16
    with pytest.raises(zarrkit.SpecError, match="dtype"):
        root.require_array("a", shape=(2,), dtype="i4", exact=True)
    with pytest.raises(zarrkit.SpecError, match="do not cast safely"):
        root.require_array("a", shape=(2,), dtype="u1")
    # zarrkit's require_array still checks the other creation keywords of an existing array
    with pytest.raises(zarrkit.SpecError, match="chunks"):
        root.require_array("a", shape=(2,), dtype="i2", chunks=(2,))


def test_require_groups(root):
    root.create_group("b").attrs["kept"] = True
    a, b, c = root.require_groups("a", "b", "x/c")
    assert all(isinstance(g, zarrkit.Group) for g in (a, b, c))
    assert b.attrs["kept"] is True and c.path == "x/c"
    assert root.require_groups() == ()
    root.create_dataset("arr", shape=(1,))
    with pytest.raises(zarrkit.NodeTypeError):
        root.require_groups("d", "arr")


# -- move ------------------------------------------------------------------------------------------


def test_move_array_and_group_with_members(tmp_path):
    where = str(tmp_path / "m.zarr")
    root = zarrkit.open_group(where, mode="w")
    a = root.create_dataset("a", data=np.arange(10), chunks=(3,))
    a.attrs["unit"] = "m"
    sub = root.create_group("sub")
    sub.create_dataset("x", data=np.ones((2, 2)))
    root.move("a", "b")
    root.move("sub", "deep/er/sub2")
    assert sorted(root) == ["b", "deep"]
    assert root["b"][...].tolist() == list(range(10)) and root["b"].attrs["unit"] == "m"
    assert (root["deep/er/sub2/x"][...] == 1).all()
    z = zarr.open_group(where, mode="r")  # the parents were created as real groups
    assert isinstance(z["deep/er"], zarr.Group)
    assert z["deep/er/sub2/x"][:].sum() == 4


def test_move_in_v2_group(tmp_path):
    where = str(tmp_path / "v2.zarr")
    root = zarrkit.open_group(where, mode="w", zarr_format=2)
    root.create_dataset("a", data=np.arange(4))
    root.move("a", "g/b")
    z = zarr.open_group(where, mode="r", zarr_format=2)
    assert z["g/b"][:].tolist() == [0, 1, 2, 3] and "a" not in z


def test_move_refusals_leave_everything(root):
    root.create_dataset("a", data=np.arange(3))
    root.create_dataset("b", data=np.arange(2))
    with pytest.raises(zarrkit.NodeExistsError, match="something is there"):
        root.move("a", "b")
    with pytest.raises(zarrkit.NodeNotFoundError, match="no member 'zz'"):
        root.move("zz", "c")
    with pytest.raises(zarrkit.InvalidNameError, match="inside itself"):
        root.move("a", "a/inner")
    with pytest.raises(zarrkit.InvalidNameError):
        root.move("a", "__reserved")
    assert root["a"][...].tolist() == [0, 1, 2] and root["b"][...].tolist() == [0, 1]
    frozen = zarrkit.open_group(root.store, mode="r")
    with pytest.raises(zarrkit.ReadOnlyError):
        frozen.move("a", "c")


class _FailingStore(MappingStore):
    """Fails the second batch written with set_many (a mapping cannot rename: keys are
    copied)."""

    def __init__(self):
        super().__init__({})
        self.batches = 0
        self.armed = False

    def set_many(self, items):
        items = list(items)
        if self.armed:
            self.batches += 1
            if self.batches == 2:
                raise zarrkit.StoreError("disk full")
        super().set_many(items)


def test_move_failure_keeps_the_source():
    store = _FailingStore()
    root = zarrkit.open_group(store, mode="w")
    data = np.arange(100)
    root.create_dataset("a", data=data, chunks=(2,))  # 50 chunks: more than one batch
    store.armed = True
    with pytest.raises(zarrkit.StoreError, match="disk full"):
        root.move("a", "b")
    assert "b" not in root and not list(store.list_prefix("b/"))
    assert (root["a"][...] == data).all()


def test_move_renames_directories_in_file_stores(tmp_path, monkeypatch):
    from zarrkit import storage

    def copied(*_):
        raise AssertionError("keys copied instead of a directory renamed")

    monkeypatch.setattr(storage, "_transfer", copied)
    root = zarrkit.open_group(str(tmp_path / "r.zarr"), mode="w")
    root.create_dataset("a", data=np.arange(6), chunks=(2,))
    root.move("a", "x/y/b")
    assert root["x/y/b"][...].tolist() == list(range(6)) and sorted(root) == ["x"]
    assert not (tmp_path / "r.zarr" / "a").exists()


def test_move_drops_consolidated_records(tmp_path):
    where = str(tmp_path / "c.zarr")
    root = zarrkit.open_group(where, mode="w")
    root.create_dataset("a", data=np.arange(3))
    zarrkit.consolidate_metadata(where)
    g = zarrkit.open_consolidated(where, mode="r+")
    g.move("a", "b")
    assert list(g) == ["b"]  # the handle lists from the store after changing it
    assert "a" not in zarrkit.open_consolidated(where)
    assert zarrkit.open_group(where, use_consolidated=False)["b"][...].tolist() == [0, 1, 2]


# -- visit family, info -----------------------------------------------------------------------------


def test_visit_family(root):
    root.create_group("g").create_dataset("x", shape=(1,))
    root.create_dataset("y", shape=(2,))
    seen = []
    assert root.visit(seen.append) is None
    assert sorted(seen) == ["g", "g/x", "y"] and seen.index("g") < seen.index("g/x")
    assert root.visitkeys(lambda p: p if p.endswith("x") else None) == "g/x"
    shapes = []
    root.visitvalues(lambda n: shapes.append(getattr(n, "shape", None)) and None)
    assert sorted(shapes, key=str) == [(1,), (2,), None]
    found = root.visititems(lambda p, n: p if isinstance(n, zarrkit.Array) and n.size == 2
                            else None)
    assert found == "y"
    for visit in (root.visititems, root.visit, root.visitkeys, root.visitvalues):
        with pytest.raises(zarrkit.SpecError, match="call a function"):
            visit("g")


def test_group_info(tmp_path):
    root = zarrkit.open_group(str(tmp_path / "i.zarr"), mode="w")
    root.create_group("g")
    root.create_dataset("a", shape=(1,))
    root.create_dataset("b", shape=(1,))
    text = str(root.info_complete())
    rows = dict(line.split(" : ", 1) for line in text.splitlines())
    rows = {k.strip(): v for k, v in rows.items()}
    assert rows["Type"] == "Group" and rows["Zarr format"] == "3"
    assert rows["No. members"] == "3" and rows["No. arrays"] == "2"
    assert rows["No. groups"] == "1" and rows["Arrays"] == "a, b" and rows["Groups"] == "g"
    assert rows["Store"].startswith("file") and rows["Read-only"] == "False"
    assert "members" not in str(root.info)  # as zarr-python's, no listing
    a = root["a"]
    assert "Chunks stored" in str(a.info_complete())

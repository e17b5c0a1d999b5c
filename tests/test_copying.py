"""zarr-python 2's copy, copy_all and copy_store: from h5py and from zarrkit, with if_exists,
shallow, without_attrs, dry_run, logs, and include/exclude patterns."""

import io

import h5py
import numpy as np
import pytest
import zarr

import zarrkit


@pytest.fixture
def h5(tmp_path):
    f = h5py.File(tmp_path / "src.h5", "w")
    f.attrs["title"] = "demo"
    f.attrs["count"] = np.int64(3)
    d = f.create_dataset("grp/data", data=np.arange(100).reshape(10, 10), chunks=(5, 5),
                         fillvalue=-1)
    d.attrs["units"] = b"m"
    d.attrs["scale"] = np.array([1.5, 2.0])
    f.create_dataset("grp/deeper/inner", data=np.ones(3, "f4"))
    f.create_dataset("scalar", data=3.5)
    yield f
    f.close()


def test_copy_all_from_h5py(h5, tmp_path):
    where = str(tmp_path / "c.zarr")
    g = zarrkit.open_group(where, mode="w")
    lines = []
    copied, skipped, nbytes = zarrkit.copy_all(h5, g, log=lines.append)
    assert (copied, skipped) == (5, 0)  # grp, grp/data, grp/deeper, grp/deeper/inner, scalar
    assert nbytes == 100 * 8 + 3 * 4 + 8
    data = g["grp/data"]
    assert (data[...] == np.arange(100).reshape(10, 10)).all()
    assert data.chunks == (5, 5) and data.fill_value == -1
    assert dict(data.attrs) == {"units": "m", "scale": [1.5, 2.0]}
    assert dict(g.attrs) == {"title": "demo", "count": 3}
    assert g["scalar"][...] == 3.5 and g["grp/deeper/inner"][...].tolist() == [1, 1, 1]
    assert "copy /grp/data (10, 10) int64 -> /grp/data" in lines
    z = zarr.open_group(where, mode="r")
    assert z["grp/data"][:].sum() == 4950


def test_copy_one_node_with_options(h5, tmp_path):
    g = zarrkit.open_group(str(tmp_path / "c.zarr"), mode="w", zarr_format=2)
    zarrkit.copy(h5["grp/data"], g, name="renamed", chunks=(10, 2), without_attrs=True)
    a = g["renamed"]
    assert a.zarr_format == 2 and a.chunks == (10, 2) and dict(a.attrs) == {}
    assert zarrkit.copy(h5["grp"], g, shallow=True) == (3, 0, 800)  # grp, data, deeper
    assert list(g["grp/deeper"]) == []  # a subgroup of a shallow copy stays empty
    with pytest.raises(zarrkit.SpecError, match="no name of its own"):
        zarrkit.copy(h5, g)


def test_if_exists(h5, tmp_path):
    g = zarrkit.open_group(str(tmp_path / "c.zarr"), mode="w")
    zarrkit.copy(h5["grp/data"], g)
    g["data"][0, 0] = 99
    with pytest.raises(zarrkit.NodeExistsError, match="/data exists"):
        zarrkit.copy(h5["grp/data"], g)
    assert zarrkit.copy(h5["grp/data"], g, if_exists="skip") == (0, 1, 0)
    assert g["data"][0, 0] == 99
    # every chunk is stored: skipped; after a chunk goes, copied again
    assert zarrkit.copy(h5["grp/data"], g, if_exists="skip_initialized")[1] == 1
    g["data"][5:, 5:] = -1  # the fill value: that chunk is not stored
    assert zarrkit.copy(h5["grp/data"], g, if_exists="skip_initialized")[0] == 1
    assert g["data"][0, 0] == 0 and g["data"][9, 9] == 99
    zarrkit.copy(h5["grp/data"], g, if_exists="replace", name="data")
    with pytest.raises(zarrkit.SpecError, match="if_exists must be one of"):
        zarrkit.copy(h5["grp/data"], g, if_exists="merge")


def test_dry_run_writes_nothing(h5, tmp_path):
    g = zarrkit.open_group(str(tmp_path / "c.zarr"), mode="w")
    log = io.StringIO()
    assert zarrkit.copy(h5["grp"], g, name="other", dry_run=True, log=log)[0] == 4
    assert list(g) == [] and "-> /other/deeper/inner" in log.getvalue()


def test_copy_between_zarrkit_hierarchies_keeps_codecs(tmp_path):
    src = zarrkit.open_group(str(tmp_path / "a.zarr"), mode="w")
    a = src.create_array("x", shape=(8,), chunks=(2,), shards=(4,), dtype="i2",
                         compressors=[{"name": "gzip", "configuration": {"level": 1}}])
    a[...] = np.arange(8)
    a.attrs["k"] = 1
    dst = zarrkit.open_group(str(tmp_path / "b.zarr"), mode="w")
    zarrkit.copy_all(src, dst, log=str(tmp_path / "copy.log"))
    assert dst["x"].metadata["codecs"] == a.metadata["codecs"]
    assert dst["x"][...].tolist() == list(range(8)) and dst["x"].attrs["k"] == 1
    assert "copy /x (8,) int16 -> /x" in (tmp_path / "copy.log").read_text()
    with pytest.raises(zarrkit.NodeTypeError, match="zarrkit group"):
        zarrkit.copy(a, {}, name="y")


def test_copy_store(tmp_path):
    src = str(tmp_path / "a.zarr")
    g = zarrkit.open_group(src, mode="w")
    g.create_array("x", shape=(4,), chunks=(2,), dtype="u1")[...] = [1, 2, 3, 4]
    g.create_array("y", shape=(2,), chunks=(2,), dtype="u1")[...] = [5, 6]
    n, skipped, nbytes = zarrkit.copy_store(src, str(tmp_path / "b.zarr"))
    assert (n, skipped) == (6, 0) and nbytes > 0  # 3 documents, 3 chunks
    assert zarrkit.open(str(tmp_path / "b.zarr/x"), mode="r")[...].tolist() == [1, 2, 3, 4]
    d = {}
    zarrkit.copy_store(src, d, source_path="x", dest_path="moved", excludes=[r"^c/"],
                       includes=[r"c/1$"])
    assert sorted(d) == ["moved/c/1", "moved/zarr.json"]
    with pytest.raises(zarrkit.NodeExistsError, match="keys exist already"):
        zarrkit.copy_store(src, d, source_path="x", dest_path="moved")
    assert sorted(d) == ["moved/c/1", "moved/zarr.json"]  # nothing copied on refusal
    assert zarrkit.copy_store(src, d, source_path="x", dest_path="moved",
                              if_exists="skip")[:2] == (1, 2)
    assert zarrkit.copy_store(src, {}, dry_run=True)[0] == 6


@pytest.mark.parametrize("options", [{"excludes": 5}, {"includes": ["("]},
                                     {"excludes": ["a"], "flags": "I"}])
def test_copy_store_bad_patterns(tmp_path, options):
    zarrkit.save_array(str(tmp_path / "a.zarr"), np.arange(2))
    with pytest.raises(zarrkit.SpecError, match="regular expressions"):
        zarrkit.copy_store(str(tmp_path / "a.zarr"), {}, **options)


def test_copy_all_from_zarr_python(tmp_path):
    z = zarr.open_group(str(tmp_path / "z.zarr"), mode="w")
    z.attrs["a"] = 1
    x = z.create_array("sub/x", shape=(10,), chunks=(3,), dtype="i2", fill_value=7)
    x[:5] = np.arange(5)
    x.attrs["u"] = "m"
    g = zarrkit.open_group(str(tmp_path / "k.zarr"), mode="w")
    assert zarrkit.copy_all(z, g)[:2] == (2, 0)
    copied = g["sub/x"]
    assert (copied.chunks, copied.fill_value, dict(copied.attrs)) == ((3,), 7, {"u": "m"})
    assert copied[...].tolist() == [0, 1, 2, 3, 4, 7, 7, 7, 7, 7] and dict(g.attrs) == {"a": 1}

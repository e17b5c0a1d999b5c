"""zarr-python's top-level save/save_array/save_group/load of groups, open_like, from_array, and
the array attributes `order`, `compressor`, `info_complete`, `with_config`."""

import json

import dask.array as da
import numcodecs
import numpy as np
import pytest
import zarr
from _sources import BreaksLater

import zarrkit

# -- save, save_array, save_group, load --------------------------------------------------------------


def test_save_one_array_or_a_group(tmp_path):
    a = zarrkit.save(str(tmp_path / "a.zarr"), np.arange(4), chunks=(2,))
    assert isinstance(a, zarrkit.Array) and a.chunks == (2,)
    g = zarrkit.save(str(tmp_path / "g.zarr"), np.arange(3), np.ones((2, 2)),
                     named=np.array(["x", "yy"], dtype=object))
    assert isinstance(g, zarrkit.Group)
    assert sorted(g) == ["arr_0", "arr_1", "named"]
    assert g["named"][...].tolist() == ["x", "yy"]
    h = zarrkit.save(str(tmp_path / "h.zarr"), only=np.arange(2))
    assert list(h) == ["only"]


def test_save_group_options_and_zarr_reads_it(tmp_path):
    where = str(tmp_path / "g.zarr")
    g = zarrkit.save_group(where, np.arange(5, dtype="i2"), zarr_format=2, path="in/here",
                           b=np.eye(2))
    assert g.zarr_format == 2 and g.path == "in/here"
    z = zarr.open_group(where, path="in/here", mode="r")
    assert z["arr_0"][:].tolist() == [0, 1, 2, 3, 4] and z["arr_0"].dtype == np.int16
    assert (z["b"][:] == np.eye(2)).all()


def test_save_group_to_zip_is_finished(tmp_path):
    where = str(tmp_path / "g.zip")
    g = zarrkit.save_group(where, x=np.arange(3))
    assert g.read_only  # the archive was closed (finished) and opened again
    assert zarrkit.load(where)["x"].tolist() == [0, 1, 2]


def test_save_group_refusals_keep_what_is_there(tmp_path):
    where = str(tmp_path / "g.zarr")
    zarrkit.save_group(where, keep=np.arange(2))
    with pytest.raises(zarrkit.SpecError, match="nothing to save"):
        zarrkit.save(where)
    with pytest.raises(zarrkit.SpecError, match="comes first"):
        zarrkit.save(np.arange(3))
    with pytest.raises(zarrkit.SpecError, match="chunks is a tuple"):
        zarrkit.save_group(where, chunks=(1, 2))
    with pytest.raises(zarrkit.ZarrkitError):  # text that cannot be stored
        zarrkit.save_group(where, bad=np.array(["x", 5], dtype=object))
    assert zarrkit.load(where)["keep"].tolist() == [0, 1]
    with pytest.raises(zarrkit.SpecError, match="needs the data"):
        zarrkit.save_array(where)


def test_save_array_store_keyword(tmp_path):
    a = zarrkit.save_array(store=str(tmp_path / "a.zarr"), data=np.arange(3))
    assert a[...].tolist() == [0, 1, 2]


def test_load_group_gives_arrays_by_name(tmp_path):
    where = str(tmp_path / "z.zarr")
    z = zarr.open_group(where, mode="w")
    z.create_array("a", data=np.arange(3))
    z.create_array("b", data=np.ones((2, 2), dtype="f4"))
    z.create_group("sub").create_array("c", data=np.arange(2))
    loaded = zarrkit.load(where)
    assert sorted(loaded) == ["a", "b"]  # groups are left out
    assert loaded["a"].tolist() == [0, 1, 2] and loaded["b"].dtype == np.float32
    assert zarrkit.load(where, "sub")["c"].tolist() == [0, 1]


# -- open_like ------------------------------------------------------------------------------------


def test_open_like_creates_then_opens(tmp_path):
    src = zarrkit.full(str(tmp_path / "s.zarr"), (6, 4), 3, dtype="i2", chunks=(3, 2))
    a = zarrkit.open_like(src, str(tmp_path / "a.zarr"))
    assert (a.shape, a.dtype, a.chunks, a.fill_value) == ((6, 4), np.int16, (3, 2), 3)
    a[0, 0] = 9
    again = zarrkit.open_like(src, str(tmp_path / "a.zarr"))
    assert again[0, 0] == 9
    with pytest.raises(zarrkit.SpecError, match="chunks"):
        zarrkit.open_like(src, str(tmp_path / "a.zarr"), chunks=(6, 4))
    b = zarrkit.open_like(np.zeros((2, 3), "f4"), store=str(tmp_path / "b.zarr"), mode="w")
    assert (b.shape, b.dtype) == ((2, 3), np.float32)
    assert zarrkit.open_like(src, str(tmp_path / "a.zarr"), mode="r").read_only


def test_open_like_needs_a_place():
    with pytest.raises(zarrkit.SpecError, match="open_like needs where"):
        zarrkit.open_like(np.zeros(3))


# -- from_array -----------------------------------------------------------------------------------


@pytest.fixture
def sharded():
    a = zarrkit.create("memory://", shape=(40, 30), dtype="i2", chunks=(5, 5), shards=(10, 15),
                       compressors=[{"name": "gzip", "configuration": {"level": 1}}],
                       fill_value=7, dimension_names=["y", "x"],
                       chunk_key_encoding={"name": "v2", "configuration": {"separator": "/"}})
    a[...] = np.arange(1200).reshape(40, 30)
    return a


def test_from_array_keeps_a_zarrkit_array(sharded, tmp_path):
    where = str(tmp_path / "c.zarr")
    c = zarrkit.from_array(where, data=sharded)
    assert (c.chunks, c.shards, c.fill_value) == ((5, 5), (10, 15), 7)
    assert c.dimension_names == ("y", "x") and c.metadata["codecs"] == sharded.metadata["codecs"]
    assert c.metadata["chunk_key_encoding"] == sharded.metadata["chunk_key_encoding"]
    assert (c[...] == sharded[...]).all()
    z = zarr.open_array(where, mode="r")
    assert (z[:] == sharded[...]).all()


def test_from_array_settings_override(sharded):
    c = zarrkit.from_array(data=sharded, chunks=(20, 10), shards=None, compressors=None,
                           fill_value=0, name="sub/c", attributes={"a": 1})
    assert c.path == "sub/c" and c.chunks == (20, 10) and c.shards is None
    assert c.compressors == () and c.fill_value == 0 and c.attrs["a"] == 1
    d = zarrkit.from_array(data=sharded, chunks="auto", compressors="auto", write_data=False)
    assert d.nchunks_initialized() == 0 and (d[...] == 7).all()
    assert [x.to_json()["name"] for x in d.compressors] == ["zstd"]


def test_from_array_across_formats(sharded):
    v2 = zarrkit.from_array(data=sharded, zarr_format=2)
    assert v2.zarr_format == 2 and v2.chunks == (5, 5) and v2.fill_value == 7
    assert v2.dimension_names == ("y", "x") and (v2[...] == sharded[...]).all()
    back = zarrkit.from_array(data=v2)  # v2 stays v2, keeping compressor and order
    assert back.zarr_format == 2 and back.compressor == v2.compressor
    f = zarrkit.create("memory://", shape=(4, 4), dtype="f4", zarr_format=2, order="F",
                       compressor=numcodecs.Zstd(level=1))
    f[...] = np.arange(16).reshape(4, 4)
    copy = zarrkit.from_array(data=f)
    assert copy.order == "F" and copy.compressor == numcodecs.Zstd(level=1)
    assert (copy[...] == f[...]).all()
    v3 = zarrkit.from_array(data=f, zarr_format=3)
    assert v3.zarr_format == 3 and (v3[...] == f[...]).all()


def test_from_array_keeps_a_zarr_python_array(tmp_path):
    z = zarr.create_array(store=str(tmp_path / "z.zarr"), shape=(20,), chunks=(5,),
                          shards=(10,), dtype="i2", fill_value=3, dimension_names=["t"],
                          compressors=[zarr.codecs.GzipCodec(level=2)])
    z[:12] = np.arange(12)
    a = zarrkit.from_array(str(tmp_path / "a.zarr"), data=z)
    assert (a.chunks, a.shards, a.fill_value, a.dimension_names) == ((5,), (10,), 3, ("t",))
    theirs = json.loads((tmp_path / "z.zarr" / "zarr.json").read_text())
    assert a.metadata["codecs"] == theirs["codecs"]
    assert a[...].tolist() == list(range(12)) + [3] * 8
    v2 = zarr.create_array(store={}, shape=(6,), chunks=(4,), dtype="f4", zarr_format=2,
                           compressors=None, order="F", fill_value=1.5)
    b = zarrkit.from_array(data=v2)
    assert (b.zarr_format, b.compressor, b.fill_value, b.chunks) == (2, None, 1.5, (4,))


def test_from_array_of_other_arrays():
    a = zarrkit.from_array(data=[[1, 2], [3, 4]])
    assert a[...].tolist() == [[1, 2], [3, 4]]
    z = zarr.create_array(store={}, shape=(30,), chunks=(7,), dtype="f4")
    z[:] = np.arange(30)
    b = zarrkit.from_array(data=z)
    assert b.chunks == (7,) and (b[...] == np.arange(30)).all()
    d = da.arange(100, chunks=30).reshape(10, 10).rechunk((4, 5))
    c = zarrkit.from_array(data=d)
    assert c.chunks == (4, 5) and (c[...] == np.arange(100).reshape(10, 10)).all()


def test_from_array_failed_copy_removes_the_array(tmp_path, monkeypatch):
    from zarrkit import conversion

    monkeypatch.setattr(conversion, "SLAB_BYTES", 400)  # several slabs
    where = str(tmp_path / "f.zarr")
    root = zarrkit.open_group(where, mode="w")
    with pytest.raises(OSError, match="went away"):
        zarrkit.from_array(where, data=BreaksLater(), name="x", chunks=(100,))
    assert "x" not in root
    with pytest.raises(zarrkit.NodeExistsError):  # overwrite stays explicit
        zarrkit.from_array(where, data=np.arange(2))


# -- array attributes -----------------------------------------------------------------------------


def test_order_and_compressor():
    v3 = zarrkit.zeros((2, 2))
    assert v3.order == "C"
    with pytest.raises(zarrkit.NodeTypeError, match="compressors"):
        v3.compressor  # noqa: B018
    v2 = zarrkit.zeros((2, 2), zarr_format=2, order="F", compressor=numcodecs.Zlib(level=2))
    assert v2.order == "F" and v2.compressor == numcodecs.Zlib(level=2)
    assert zarrkit.zeros((2,), zarr_format=2, compressor=None).compressor is None


def test_with_config():
    a = zarrkit.zeros((4,), chunks=(2,))
    b = a.with_config(write_empty_chunks=True)
    assert b is not a and b.write_empty_chunks and not a.write_empty_chunks
    b[...] = 0  # fill values: stored only by the handle that writes empty chunks
    assert b.nchunks_initialized() == 2
    a[...] = 0
    c = a.with_config({"write_empty_chunks": False, "order": "C"})
    assert not c.write_empty_chunks
    with pytest.raises(zarrkit.SpecError, match="unknown settings"):
        a.with_config(bogus=1)
    with pytest.raises(zarrkit.SpecError, match="order must be 'C'"):
        a.with_config(order="F")
    with pytest.raises(zarrkit.SpecError, match="True or False"):
        a.with_config(write_empty_chunks="yes")
    with pytest.raises(zarrkit.SpecError, match="must be a dict"):
        a.with_config(["write_empty_chunks"])


class _Unreadable:
    """An array-like whose values cannot be had."""

    shape, dtype = (2,), np.dtype("f8")

    def __array__(self, dtype=None, copy=None):
        raise OSError("source went away")


def test_failed_save_group_leaves_a_zip_archive_as_it_was(tmp_path):
    where = str(tmp_path / "g.zip")
    zarrkit.save_group(where, old=np.arange(3))
    with pytest.raises(OSError, match="went away") as failed:
        zarrkit.save_group(where, new=np.arange(2), bad=_Unreadable())
    loaded = zarrkit.load(where)
    assert list(loaded) == ["old"] and loaded["old"].tolist() == [0, 1, 2]
    # While the exception (and through it the archive's store) lives, writers are not locked
    # out: the archive opened for the failed save was given up, not left to the collector.
    assert zarrkit.save_group(where, again=np.ones(1)).read_only
    assert failed.value is not None

"""Conversion, command line, Dask and xarray: failures found in a review (each test failed
before its fix)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import zarrkit
from zarrkit.cli import main
from zarrkit.kvstore.file import FileStore

# -- conversion ---------------------------------------------------------------------------------


def _v2_tree(path):
    g = zarrkit.group(path, zarr_format=2)
    g.create_array("a", shape=(4,), chunks=(2,), dtype="i4")[...] = np.arange(4)
    sub = g.create_group("s")
    sub.create_array("b", shape=(4,), chunks=(2,), dtype="i4")[...] = 7
    return g


def test_upgrade_killed_part_way_can_be_run_again(tmp_path, monkeypatch):
    _v2_tree(tmp_path)
    real_set, written = FileStore.set, []

    def killed_on_second_zarr_json(self, key, value, *args, **kwargs):
        if key.endswith("zarr.json"):
            written.append(key)
            if len(written) == 2:
                raise KeyboardInterrupt
        return real_set(self, key, value, *args, **kwargs)

    monkeypatch.setattr(FileStore, "set", killed_on_second_zarr_json)
    with pytest.raises(KeyboardInterrupt):
        zarrkit.upgrade_metadata(tmp_path)
    monkeypatch.setattr(FileStore, "set", real_set)
    root = zarrkit.upgrade_metadata(tmp_path)  # the second run finishes the job
    assert root.zarr_format == 3 and sorted(root.keys()) == ["a", "s"]
    assert root["s/b"].zarr_format == 3 and (root["s/b"][...] == 7).all()
    assert list(root["a"][...]) == [0, 1, 2, 3]


def test_upgrade_killed_while_removing_old_documents_finishes_on_a_rerun(tmp_path, monkeypatch):
    _v2_tree(tmp_path)

    def killed(self, keys):
        raise KeyboardInterrupt

    monkeypatch.setattr(FileStore, "delete_many", killed)
    with pytest.raises(KeyboardInterrupt):
        zarrkit.upgrade_metadata(tmp_path)
    monkeypatch.undo()
    assert (tmp_path / ".zgroup").exists() and (tmp_path / "zarr.json").exists()
    root = zarrkit.upgrade_metadata(tmp_path)
    left = sorted(p.name for p in tmp_path.rglob(".z*") if p.name != ".zarrkit-locks")
    assert left == [] and root.zarr_format == 3 and (root["s/b"][...] == 7).all()
    zarrkit.upgrade_metadata(tmp_path)  # nothing left to do
    assert list(root["a"][...]) == [0, 1, 2, 3]


def test_convert_failing_part_way_says_the_copy_is_incomplete(tmp_path):
    src = zarrkit.create(tmp_path / "src", shape=(4,), chunks=(2,), dtype="i4", zarr_format=2,
                         compressor={"id": "zstd", "level": 1})
    src[...] = np.arange(4)
    (tmp_path / "src" / "1").write_bytes(b"garbage")
    with pytest.raises(zarrkit.CorruptDataError, match="incomplete copy.*chunk '1'"):
        zarrkit.convert(tmp_path / "src", tmp_path / "dst", progress=False)


def test_refused_convert_keeps_the_node_overwrite_would_replace(tmp_path):
    zarrkit.create(tmp_path / "src", shape=(2,), dtype=[("m", "<i4", (2,))], zarr_format=2)
    old = zarrkit.create(tmp_path / "dst", shape=(3,), dtype="i4")
    old[...] = 5
    with pytest.raises(zarrkit.DataTypeError, match="no Zarr v3 data type"):
        zarrkit.convert(tmp_path / "src", tmp_path / "dst", overwrite=True, progress=False)
    assert list(zarrkit.open(tmp_path / "dst", mode="r")[...]) == [5, 5, 5]


def test_convert_names_a_missing_source_and_refuses_a_bare_codec(tmp_path):
    with pytest.raises(zarrkit.NodeNotFoundError, match="nowhere"):
        zarrkit.convert(tmp_path / "nowhere", tmp_path / "dst", progress=False)
    with pytest.raises(zarrkit.NodeNotFoundError, match="nowhere"):
        zarrkit.upgrade_metadata(tmp_path / "nowhere")
    zarrkit.create(tmp_path / "src", shape=(2,), dtype="i4")
    with pytest.raises(zarrkit.SpecError, match="list of v3 codecs"):
        zarrkit.convert(tmp_path / "src", tmp_path / "dst", codecs="gzip", progress=False)


# -- command line -------------------------------------------------------------------------------


def test_cli_copy_with_invalid_codecs_json_is_a_one_line_error(tmp_path, capsys):
    zarrkit.create(tmp_path / "src", shape=(2,), dtype="i4")
    assert main(["copy", str(tmp_path / "src"), str(tmp_path / "dst"), "--codecs", "{"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("zarrkit: error: --codecs: not valid JSON") and "Traceback" not in err
    assert main(["convert", str(tmp_path / "src"), str(tmp_path / "d2"), "--codecs",
                 '"gzip"']) == 2
    assert "--codecs must be a JSON array" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["info", "tree", "verify"])
def test_cli_names_the_path_that_holds_no_node(tmp_path, capsys, command):
    (tmp_path / "plain").mkdir()
    where = str(tmp_path / "plain")
    assert main([command, where]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and repr(where) in err


# -- dask ---------------------------------------------------------------------------------------


def test_to_dask_refuses_what_it_cannot_read():
    pytest.importorskip("dask")
    from zarrkit.dask import to_dask

    with pytest.raises(zarrkit.SpecError, match="zarrkit Array, got ndarray"):
        to_dask(np.zeros(3))
    a = zarrkit.create("memory://", shape=(6,), chunks=(2,), dtype="i4")
    for chunks in [(0,), "abc"]:
        with pytest.raises(zarrkit.SpecError, match="invalid chunks"):
            to_dask(a, chunks=chunks)


def test_from_dask_takes_a_dtype_and_refuses_unknown_shapes():
    dask = pytest.importorskip("dask")
    import dask.array as da

    from zarrkit.dask import from_dask

    with dask.config.set(scheduler="synchronous"):
        x = da.arange(6, chunks=2)
        a = from_dask(x, "memory://", dtype="f4")
        assert a.dtype == np.float32 and list(a[...]) == [0, 1, 2, 3, 4, 5]
        with pytest.raises(zarrkit.SpecError, match="compute_chunk_sizes"):
            from_dask(x[x > 2], "memory://")


# -- xarray -------------------------------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_to_zarr_with_a_fill_value_encoding_for_floats(tmp_path, zarr_format):
    xr = pytest.importorskip("xarray")
    from zarrkit.xarray import to_zarr

    ds = xr.Dataset({"f": (("x",), np.array([1.0, 2.0]))})
    to_zarr(ds, tmp_path / "d.zarr", zarr_format=zarr_format,
            encoding={"f": {"fill_value": 2.0}})
    assert zarrkit.open(tmp_path / "d.zarr/f", mode="r").fill_value == 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = xr.open_dataset(tmp_path / "d.zarr", engine="zarrkit").f.values
        theirs = xr.open_dataset(tmp_path / "d.zarr", engine="zarr").f.values
    np.testing.assert_array_equal(ours, theirs)

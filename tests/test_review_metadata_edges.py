"""Metadata edge cases met reading what others write and copying it: attributes holding NaN
(zarr-python writes them bare), consolidated records told apart by their keys, malformed
configurations refused with zarrkit's errors, v2's null fill value kept, `save` deciding
between an array and a group as zarr-python does, and `info --json` printing strict JSON."""

import json
import math

import numpy as np
import pytest
import zarr

import zarrkit
from zarrkit.cli import main


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_attributes_with_nan_written_by_zarr_python_read_and_kept(tmp_path, zarr_format):
    where = str(tmp_path / "n.zarr")
    zarr.create_array(where, shape=(2,), dtype="f4", zarr_format=zarr_format,
                      attributes={"x": float("nan"), "y": [float("inf"), -math.inf, 1]})
    a = zarrkit.open(where, mode="r+")
    assert math.isnan(a.attrs["x"]) and a.attrs["y"] == [math.inf, -math.inf, 1]
    a.attrs["z"] = 1  # a rewrite keeps the values read as they were
    a.resize((4,))
    again = zarr.open_array(where, mode="r")
    assert math.isnan(again.attrs["x"]) and again.attrs["z"] == 1 and again.shape == (4,)
    a.attrs["w"] = float("nan")  # a new one is written as zarr-python writes it: bare
    assert math.isnan(zarr.open_array(where, mode="r").attrs["w"])


def test_v1_attributes_with_nan_are_read(tmp_path):
    root = tmp_path / "v1"
    root.mkdir()
    (root / "meta").write_text(json.dumps({
        "zarr_format": 1, "shape": [2], "chunks": [2], "dtype": "<f8", "compression": "none",
        "compression_opts": None, "fill_value": float("nan"), "order": "C"}))
    (root / "attrs").write_text('{"missing": NaN}')
    a = zarrkit.open(str(root), mode="r")
    assert math.isnan(a.attrs["missing"]) and np.isnan(a[...]).all()
    assert main(["info", "--json", str(root)]) == 0


def test_info_json_is_strict_json_for_bare_nan_fill_values(tmp_path, capsys):
    root = tmp_path / "v1"
    root.mkdir()
    (root / "meta").write_text('{"zarr_format": 1, "shape": [2], "chunks": [2], "dtype": "<f8",'
                               ' "compression": "none", "compression_opts": null,'
                               ' "fill_value": NaN, "order": "C"}')
    assert main(["info", "--json", str(root)]) == 0
    printed = json.loads(capsys.readouterr().out, parse_constant=pytest.fail)
    assert printed["metadata"]["fill_value"] == "NaN"


def test_attributes_given_at_creation_are_what_a_reopened_node_shows(tmp_path):
    where = str(tmp_path / "a.zarr")
    a = zarrkit.create(where, shape=(2,), dtype="i4",
                       attributes={"v": np.arange(2), "t": (1, 2), "s": np.float32(1.5)})
    assert dict(a.attrs) == {"v": [0, 1], "t": [1, 2], "s": 1.5}
    a.attrs["w"] = np.arange(3)  # accepted the same way after creation
    assert dict(zarrkit.open(where, mode="r").attrs) == {"v": [0, 1], "t": [1, 2], "s": 1.5,
                                                         "w": [0, 1, 2]}


@pytest.mark.parametrize("bad", [[1], "x", 5])
def test_consolidated_v2_group_attributes_not_an_object(bad):
    store = {".zgroup": b'{"zarr_format": 2}', ".zmetadata": json.dumps({
        "zarr_consolidated_format": 1, "metadata": {
            ".zgroup": {"zarr_format": 2}, "g/.zgroup": {"zarr_format": 2}, "g/.zattrs": bad}
    }).encode()}
    with pytest.raises(zarrkit.MetadataError, match="g: attributes: expected an object"):
        zarrkit.open_group(store, mode="r")["g"]


def test_consolidated_v2_records_are_arrays_or_groups_by_their_keys(tmp_path):
    root = tmp_path / "c"
    (root / "g").mkdir(parents=True)
    (root / ".zgroup").write_text('{"zarr_format": 2}')
    (root / "g" / ".zgroup").write_text('{"zarr_format": 2, "shape": [1]}')  # an extra member
    zarrkit.consolidate_metadata(str(root))
    assert isinstance(zarrkit.open_group(str(root), mode="r")["g"], zarrkit.Group)
    store = {".zgroup": b'{"zarr_format": 2}', ".zmetadata": json.dumps({
        "zarr_consolidated_format": 1, "metadata": {
            ".zgroup": {"zarr_format": 2}, "a/.zarray": {"zarr_format": 2},
            "b/.zarray": {"zarr_format": 2}, "b/.zgroup": {"zarr_format": 2}}}).encode()}
    group = zarrkit.open_group(store, mode="r")
    with pytest.raises(zarrkit.MetadataError, match="missing required member"):
        group["a"]  # an array record without its members, not a group
    with pytest.raises(zarrkit.MetadataError, match="both .zarray and .zgroup"):
        zarrkit.open_group(store, mode="r")["b"]


@pytest.mark.parametrize("cname", [["lz4"], {}, 3, None])
def test_blosc_cname_of_another_type_is_a_codec_error(cname):
    with pytest.raises(zarrkit.CodecError, match="unknown cname"):
        zarrkit.create({}, shape=(2,), dtype="i4", zarr_format=2,
                       compressor={"id": "blosc", "cname": cname})


def test_save_with_arrays_as_keywords_is_a_group_as_in_zarr_python(tmp_path):
    x = np.arange(4)
    g = zarrkit.save(str(tmp_path / "g.zarr"), x, y=x * 2)
    expected = zarr.open_group(str(tmp_path / "z.zarr"), mode="w")
    zarr.save(str(tmp_path / "z.zarr"), x, y=x * 2)
    assert sorted(g) == sorted(expected.keys()) == ["arr_0", "y"]
    assert g["y"][...].tolist() == [0, 2, 4, 6]
    a = zarrkit.save(str(tmp_path / "a.zarr"), x, chunks=(2,), fill_value=np.int64(3))
    assert isinstance(a, zarrkit.Array) and a.chunks == (2,) and a.fill_value == 3


def test_v2_null_fill_value_is_kept_by_creation_and_copies(tmp_path):
    p = tmp_path
    zarr.open_group(str(p / "src"), mode="w", zarr_format=2)
    zarr.create_array(str(p / "src" / "a"), shape=(4,), dtype="f8", fill_value=None,
                      zarr_format=2)

    def stored(*parts):
        return json.loads(p.joinpath(*parts, ".zarray").read_text())["fill_value"]

    source = zarrkit.open_group(str(p / "src"))["a"]
    zarrkit.copy(source, zarrkit.open_group(str(p / "dst"), mode="w", zarr_format=2))
    zarrkit.copy_all(zarrkit.open_group(str(p / "src")),
                     zarrkit.open_group(str(p / "all"), mode="w", zarr_format=2))
    zarrkit.from_array(str(p / "fa"), data=source, zarr_format=2)
    zarrkit.create(str(p / "new"), shape=(2,), dtype="i2", zarr_format=2, fill_value=None)
    zarrkit.create(str(p / "default"), shape=(2,), dtype="i2", zarr_format=2)
    assert [stored("dst", "a"), stored("all", "a"), stored("fa"), stored("new")] == [None] * 4
    assert stored("default") == 0
    assert zarr.open_array(str(p / "new"), mode="r")[:].tolist() == [0, 0]

"""Follow-ups of a review: Array.astype takes numpy's type names as zarr-python 2 did (views
and `cast` keep TensorStore's names only); no conversion between raw bits and other types (it
read zeros); zeros/ones of raw-bits arrays as numpy's; a bad type name named once."""

from __future__ import annotations

import numpy as np
import pytest
import tensorstore as ts

import zarrkit
from zarrkit.errors import SpecError


@pytest.fixture
def a():
    return zarrkit.create("memory://astype", shape=(4,), dtype="int16", fill_value=0,
                          overwrite=True)


@pytest.mark.parametrize(("name", "dtype"), [("f4", "float32"), ("<i8", "int64"),
                                             ("?", "bool"), ("double", "float64"),
                                             ("float32", "float32"), ("ustring", "ustring")])
def test_array_astype_takes_numpy_names(a, name, dtype):
    a[...] = [1, -2, 3, 4]
    v = a.astype(name)
    assert v.spec().to_json()["dtype"] == dtype
    if dtype != "ustring":
        np.testing.assert_array_equal(v.read().result(), np.array([1, -2, 3, 4], dtype))


def test_views_and_cast_keep_tensorstore_names(a):
    with pytest.raises(SpecError, match="'f4' is not a TensorStore data type name"):
        a.view.astype("f4")
    with pytest.raises(SpecError, match="'f4' is not a TensorStore data type name"):
        zarrkit.cast(a, "f4")


def test_a_bad_name_is_named_once(a):
    with pytest.raises(SpecError) as info:
        a.astype("nonsense")
    assert str(info.value).count("nonsense") == 2, str(info.value)  # the name, and numpy's


@pytest.mark.parametrize("raw", [np.dtype("V2"), np.dtype("V4")])
def test_no_conversion_between_raw_bits_and_numbers(a, raw):
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "memory"},
                 "metadata": {"shape": [4], "data_type": "int16"}}, create=True).result()
    with pytest.raises(ValueError, match="Cannot convert"):
        ts.cast(t, raw)
    with pytest.raises(SpecError, match="cannot convert between int16 and r"):
        zarrkit.cast(a, raw)
    same = zarrkit.create("memory://raw", shape=(2,), dtype=raw, overwrite=True)
    np.testing.assert_array_equal(zarrkit.cast(same, raw).read().result(), same[...])
    with pytest.raises(SpecError, match="cannot convert"):
        zarrkit.cast(same, "int16")


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("make", ["zeros", "ones"])
def test_zeros_and_ones_of_raw_bits_as_numpy(zarr_format, make):
    b = getattr(zarrkit, make)((3,), dtype="V3", store="memory://raw-fill",
                               zarr_format=zarr_format, overwrite=True)
    np.testing.assert_array_equal(b[...], getattr(np, make)(3, "V3"))


@pytest.mark.parametrize("killed_at", ["consolidate_metadata", "_remove_old_documents"])
def test_upgrade_killed_after_the_root_still_ends_consolidated(tmp_path, monkeypatch, killed_at):
    """A run killed once the v3 root is written, before it consolidated (or while it removed
    the v2 documents), is run again: the hierarchy ends consolidated as v3, v2 documents gone."""
    import importlib

    conversion = importlib.import_module("zarrkit.conversion")
    g = zarrkit.open_group(str(tmp_path / "h.zarr"), mode="w", zarr_format=2)
    g.create_array("sub/a", shape=(4,), dtype="i2")[...] = [1, 2, 3, 4]
    zarrkit.consolidate_metadata(str(tmp_path / "h.zarr"))

    class Killed(BaseException):
        pass

    def kill(*args, **kws):
        raise Killed

    with monkeypatch.context() as m:
        m.setattr(conversion, killed_at, kill)
        with pytest.raises(Killed):
            zarrkit.upgrade_metadata(str(tmp_path / "h.zarr"))
    zarrkit.upgrade_metadata(str(tmp_path / "h.zarr"))
    assert not [p for p in tmp_path.glob("**/.z*") if p.name != ".zarrkit-locks"]
    c = zarrkit.open_consolidated(str(tmp_path / "h.zarr"))
    assert c.zarr_format == 3 and [p for p, _ in c.members(None)] == ["sub", "sub/a"]
    np.testing.assert_array_equal(c["sub/a"][...], [1, 2, 3, 4])


def test_a_service_still_unavailable_after_the_retries_is_unreachable(tmp_path):
    """HTTP 503 after max_retries is StoreUnreachableError, as the README's error list says
    (it was a plain StoreError); the message names the key, the status and the retries."""
    from _loopback import http_server

    from zarrkit.errors import StoreUnreachableError

    (tmp_path / "broken").mkdir()
    with http_server(str(tmp_path)) as server, pytest.raises(
            StoreUnreachableError, match=r"cannot read '[.a-z]+' in http://.*/broken/x.zarr: "
                                         r"the service is unavailable \(HTTP 503\).*after 1 retr"):
        zarrkit.open(f"{server.url}/broken/x.zarr", mode="r", storage_options={"max_retries": 1})


@pytest.mark.parametrize(("dtype", "bare", "written"), [
    ("<f8", "NaN", "NaN"), ("<f4", "-Infinity", "-Infinity"),
    ("<c16", "[NaN, Infinity]", ["NaN", "Infinity"])])
def test_a_bare_nan_fill_is_rewritten_as_the_spec_writes_it(tmp_path, dtype, bare, written):
    """A .zarray read with a bare NaN literal (old writers) was written back so on a resize,
    which TensorStore cannot read; now as the spec's "NaN" strings."""
    import json

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / ".zarray").write_text(
        f'{{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "{dtype}", '
        f'"compressor": null, "fill_value": {bare}, "order": "C", "filters": null}}')
    a = zarrkit.open(tmp_path / "a", mode="r+")
    expected = a[...]
    a.resize(6)
    assert json.loads((tmp_path / "a" / ".zarray").read_text())["fill_value"] == written
    t = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": str(tmp_path / "a")}}
                ).result()
    np.testing.assert_array_equal(t.read().result(), np.resize(expected, 6))


@pytest.mark.parametrize(("offset", "stride", "value"), [(0, 2**40, 2**24), (3, 2**40, 2**24),
                                                        (-2**62, 2**61, 5)])
def test_index_array_positions_that_overflow_are_refused(tmp_path, offset, stride, value):
    """offset + stride * value beyond 64 bits wrapped in numpy: 2**40 * 2**24 read element
    `offset` (0 or 3) silently; TensorStore refuses it as an overflow, and so does zarrkit."""
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "a")},
            "metadata": {"shape": [10], "data_type": "int16"}}
    zarrkit.open(spec, create=True)[...] = np.arange(10)
    transform = {"input_inclusive_min": [0], "input_exclusive_max": [1],
                 "output": [{"offset": offset, "stride": stride, "index_array": [value]}]}
    t = ts.open({**spec, "metadata": {}}).result()
    with pytest.raises(IndexError, match="overflow"):
        t[ts.IndexTransform(json=transform)].read().result()
    with pytest.raises(zarrkit.errors.SelectionError, match="integer overflow"):
        zarrkit.open({"driver": "zarr3", "kvstore": spec["kvstore"],
                      "transform": transform}).read().result()
    v = zarrkit.open(spec).view.translate_by[5]  # composing overflows the same way
    with pytest.raises(zarrkit.errors.SelectionError, match="integer overflow"):
        v[zarrkit.d[0].stride[stride]].oindex[[value]].translate_by[offset].read().result()


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("inner", ["c", "sub", "c/x/y", "0"])
def test_no_node_is_made_inside_an_array_by_its_path(tmp_path, zarr_format, inner):
    """`create("a.zarr/c", overwrite=True)` made a node in the array's chunk directory (and
    replacing it would delete the array's chunks); now refused, at any depth, the array intact."""
    a = zarrkit.create(str(tmp_path / "a.zarr"), shape=(4, 4), chunks=(2, 2), dtype="i4",
                       zarr_format=zarr_format, **({"dimension_separator": "/"}
                                                   if zarr_format == 2 else {}))
    a[...] = np.arange(16).reshape(4, 4)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    where = str(tmp_path / "a.zarr" / inner)
    for make in (lambda: zarrkit.create(where, shape=(2,), dtype="i4", overwrite=True),
                 lambda: zarrkit.open_group(where, mode="w"),
                 lambda: zarrkit.open_group(where, mode="a", zarr_format=2)):
        with pytest.raises(zarrkit.errors.MetadataError, match="inside the array at"):
            make()
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert after == before
    np.testing.assert_array_equal(zarrkit.open(str(tmp_path / "a.zarr"))[...],
                                  np.arange(16).reshape(4, 4))


def test_a_group_above_still_takes_a_node_by_its_path_of_either_format(tmp_path):
    zarrkit.open_group(str(tmp_path / "g.zarr"), mode="w")
    zarrkit.create(str(tmp_path / "g.zarr" / "v2"), shape=(2,), zarr_format=2)
    zarrkit.create(str(tmp_path / "g.zarr" / "plain" / "deep"), shape=(2,))
    assert zarrkit.open(str(tmp_path / "g.zarr" / "v2")).zarr_format == 2

"""Data safety under injected failures and bad input: what was stored before a failed call
reads back as it was, and the error is a zarrkit exception naming what is wrong."""

from __future__ import annotations

import errno

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import MetadataError, NodeTypeError, StoreError


def _fail_once(store: object, monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    """The next chunk write of `store` (`replace` or `replace_many`) raises `exc`; later ones,
    as a retry or clean-up makes them, work."""
    failed = []

    def failing(real):
        def write(*args, **kwargs):
            if not failed:
                failed.append(True)
                raise exc
            return real(*args, **kwargs)
        return write

    for name in ("replace", "replace_many"):
        monkeypatch.setattr(store, name, failing(getattr(store, name)))


@pytest.mark.parametrize("chunks", [(4, 4), (3, 4)])  # (3, 4): the new rows share an edge chunk
@pytest.mark.parametrize("exc", [StoreError(errno.ENOSPC, "no space left on device"),
                                 KeyboardInterrupt()], ids=["ENOSPC", "interrupt"])
def test_failed_append_keeps_the_shape(tmp_path, monkeypatch, chunks, exc):
    a = zarrkit.create(str(tmp_path / "a.zarr"), shape=(10, 8), dtype="int32", chunks=chunks)
    a[...] = before = np.arange(80, dtype="int32").reshape(10, 8)
    _fail_once(a.store, monkeypatch, exc)
    with pytest.raises(type(exc)):
        a.append(np.full((4, 8), 7, "int32"))
    # Left grown, the failed rows read as zeros and the next append landed after them.
    b = zarrkit.open_array(str(tmp_path / "a.zarr"), mode="r")
    assert b.shape == a.shape == (10, 8)
    np.testing.assert_array_equal(b[...], before)
    assert a.append(np.full((2, 8), 5, "int32")) == (12, 8)
    np.testing.assert_array_equal(b[10:], 5)


@pytest.mark.parametrize("value", [10 ** 5000, "circular"], ids=["long-int", "circular"])
def test_unwritable_attribute_is_a_metadata_error(tmp_path, value):
    if value == "circular":
        value = {}
        value["self"] = value
    a = zarrkit.create(str(tmp_path / "a.zarr"), shape=(4,), dtype="int32", chunks=(2,),
                       attributes={"keep": 1})
    with pytest.raises(MetadataError, match="'bad'"):  # was a bare ValueError / RecursionError
        a.attrs["bad"] = value
    with pytest.raises(MetadataError):
        zarrkit.create(str(tmp_path / "b.zarr"), shape=(4,), dtype="int32", chunks=(2,),
                       attributes={"bad": value})
    assert dict(zarrkit.open_array(str(tmp_path / "a.zarr"), mode="r").attrs) == {"keep": 1}


@pytest.mark.parametrize("change", [{"dtype": "float32"}, {"chunks": (2,)}, {"fill_value": 9},
                                    {"compressors": [{"name": "gzip",
                                                      "configuration": {"level": 1}}]}],
                         ids=["dtype", "chunks", "fill", "codecs"])
def test_stale_handle_does_not_write_into_a_replaced_array(tmp_path, change):
    path = str(tmp_path / "a.zarr")
    stale = zarrkit.create(path, shape=(8,), dtype="int32", chunks=(4,))
    stale[...] = np.arange(8)
    layout = {"shape": (8,), "dtype": "int32", "chunks": (4,), **change}
    zarrkit.open(path, mode="w", **layout)[...] = 1
    # The old handle's chunks were stored as they were: garbage values (or undecodable) there.
    with pytest.raises(NodeTypeError, match="replaced"):
        stale[0:4] = 5
    np.testing.assert_array_equal(zarrkit.open_array(path, mode="r")[...], 1)


def test_handle_follows_resize_and_attributes_of_the_same_array(tmp_path):
    path = str(tmp_path / "a.zarr")
    a = zarrkit.create(path, shape=(8,), dtype="int32", chunks=(4,),
                       compressors=[{"name": "blosc", "configuration": {"cname": "lz4"}}])
    other = zarrkit.open_array(path)
    other.resize(12)
    other.attrs["x"] = 1
    a[8:12] = 3  # the shape and attributes changed, the layout did not
    np.testing.assert_array_equal(other[8:], 3)

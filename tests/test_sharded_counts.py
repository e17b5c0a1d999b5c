"""Chunk and shard counts of sharded arrays: `nchunks` and `cdata_shape` count inner chunks as
zarr-python 3 does; `nchunks_initialized` counts exactly the inner chunks the stored shards'
indexes hold (zarr-python: stored shards times chunks per shard); `nshards` and
`nshards_initialized` count shards (the chunk counts when unsharded, as zarr-python's private
`_nshards` and `_nshards_initialized`)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr

import zarrkit
from zarrkit.describe import array_html, array_summary
from zarrkit.errors import CorruptDataError
from zarrkit.kvstore.memory import MemoryStore

# (shape, inner chunks, shards): edge shards cut by the array's edge, 1-d and 3-d.
LAYOUTS = [
    ((20, 30), (3, 4), (6, 8)),
    ((12, 16), (3, 4), (6, 8)),
    ((10,), (2,), (6,)),
    ((5, 7, 9), (2, 3, 2), (4, 3, 4)),
]


def _data(shape):
    return np.arange(1, 1 + int(np.prod(shape)), dtype="int32").reshape(shape)


def _sharded(store=None, shape=(20, 30), chunks=(3, 4), shards=(6, 8), **kwargs):
    return zarrkit.create(MemoryStore() if store is None else store, shape, "int32",
                          chunks=chunks, shards=shards, **kwargs)


@pytest.mark.parametrize(("shape", "chunks", "shards"), LAYOUTS)
def test_totals_match_zarr_python(tmp_path, shape, chunks, shards):
    z = zarr.create_array(str(tmp_path / "z"), shape=shape, chunks=chunks, shards=shards,
                          dtype="int32")
    k = zarrkit.open(str(tmp_path / "z"), mode="r")
    assert k.cdata_shape == z.cdata_shape
    assert k.nchunks == z.nchunks == int(np.prod(z.cdata_shape))
    assert k.nshards == z._nshards
    assert (k.nchunks_initialized, k.nshards_initialized) == (0, 0)


@pytest.mark.parametrize(("shape", "chunks", "shards"), LAYOUTS)
def test_full_array_written_by_zarr_python(tmp_path, shape, chunks, shards):
    z = zarr.create_array(str(tmp_path / "z"), shape=shape, chunks=chunks, shards=shards,
                          dtype="int32")
    z[...] = _data(shape)
    k = zarrkit.open(str(tmp_path / "z"), mode="r")
    assert k.nshards_initialized == z._nshards_initialized == k.nshards
    # Exact: every inner chunk inside the array, never more than nchunks.
    assert k.nchunks_initialized == k.nchunks
    per_shard = int(np.prod([s // c for s, c in zip(shards, chunks, strict=True)]))
    assert z.nchunks_initialized == z._nshards_initialized * per_shard  # zarr-python's estimate


def test_edge_shards_do_not_count_beyond_the_array(tmp_path):
    # Shards of 2x2 inner chunks over a 7x8 grid: the last shard row is half outside.
    k = _sharded(str(tmp_path / "k"))
    k[...] = _data(k.shape)
    assert (k.nchunks_initialized, k.nchunks, k.nshards_initialized, k.nshards) == (56, 56, 16, 16)
    z = zarr.open_array(str(tmp_path / "k"), mode="r")
    assert z._nshards_initialized == 16 and z.nchunks_initialized == 64  # zarr-python overcounts


def test_zarr_python_reads_shards_zarrkit_wrote(tmp_path):
    k = _sharded(str(tmp_path / "k"))
    k[0:3, 0:4] = 5  # one inner chunk of shard (0, 0)
    k[18:20, 24:30] = 6  # two inner chunks of the edge shard (3, 3)
    z = zarr.open_array(str(tmp_path / "k"), mode="r")
    assert k.nshards_initialized == z._nshards_initialized == 2
    assert k.nchunks_initialized == 3
    assert z.nchunks_initialized == 8  # 2 shards x 4 chunks per shard: the documented difference


def test_partial_shard_written_by_zarr_python_counts_exactly(tmp_path):
    z = zarr.create_array(str(tmp_path / "z"), shape=(20, 30), chunks=(3, 4), shards=(6, 8),
                          dtype="int32")
    z[0:3, 0:4] = 1  # one inner chunk; zarr-python skips the three left at the fill value
    z[6:12, 8:12] = 2  # two inner chunks of another shard
    k = zarrkit.open(str(tmp_path / "z"), mode="r")
    assert (k.nchunks_initialized, k.nshards_initialized) == (3, 2)
    assert z.nchunks_initialized == 8


def test_fill_value_inner_chunks_are_not_stored_nor_counted():
    a = _sharded(fill_value=7)
    a[...] = _data(a.shape)
    a[0:3, 0:4] = 7  # back to the fill value: dropped from its shard
    a[0:6, 8:16] = 7  # a whole shard of fill values: the shard goes
    assert (a.nchunks_initialized, a.nshards_initialized) == (56 - 1 - 4, 15)
    a[0:3, 0:4] = 8
    assert a.nchunks_initialized == 56 - 4


def test_write_empty_chunks_stores_and_counts_fill_value_chunks():
    a = _sharded(write_empty_chunks=True)
    a[0:6, 0:8] = 0  # the fill value, kept
    assert (a.nchunks_initialized, a.nshards_initialized) == (4, 1)
    b = a.with_config(write_empty_chunks=False)
    b[0:6, 0:8] = 0
    assert (b.nchunks_initialized, b.nshards_initialized) == (0, 0)


def test_counts_are_properties_that_can_be_called():
    a = _sharded()
    a[0:3, 0:4] = 1
    assert a.nshards_initialized == 1 and a.nshards_initialized() == 1
    assert a.nchunks_initialized == 1 and a.nchunks_initialized() == 1
    assert str(a.nshards_initialized) == "1" and isinstance(a.nshards, int)


def test_another_handle_sees_the_changed_shard():
    """The count reads indexes afresh: a handle's cached index of a shard another handle
    changed since would miss the chunks added."""
    store = MemoryStore()
    a = _sharded(store)
    a[0:3, 0:4] = 1
    assert a[0, 0] == 1  # caches the index of shard (0, 0)
    assert a.nchunks_initialized == 1
    b = zarrkit.open(store, mode="r+")
    b[3:6, 4:8] = 2
    assert a.nchunks_initialized == 2 and a[4, 5] == 2


def test_keys_outside_the_shard_grid_are_not_counted():
    store = MemoryStore()
    a = _sharded(store)
    a[0:3, 0:4] = 1
    store.set("c/9/9", bytes(store.get("c/0/0")))  # a stale shard beyond the grid
    store.set("notes.txt", b"not a chunk")
    assert (a.nchunks_initialized, a.nshards_initialized) == (1, 1)


def test_shrinking_counts_only_chunks_left_inside():
    a = _sharded()
    a[...] = _data(a.shape)
    a.resize((10, 30))
    assert a.cdata_shape == (4, 8) and a.nchunks == 32
    assert (a.nchunks_initialized, a.nshards_initialized, a.nshards) == (32, 8, 8)


def test_corrupt_index_raises_naming_the_shard():
    store = MemoryStore()
    a = _sharded(store, compressors=None)
    a[0:6, 0:8] = 1
    store.set("c/0/0", bytes(store.get("c/0/0"))[:-2])  # the index cut short
    with pytest.raises(CorruptDataError, match="c/0/0"):
        a.nchunks_initialized  # noqa: B018 - the property reads the indexes
    assert a.nshards_initialized == 1  # listing alone


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_unsharded_counts_match_zarr_python(tmp_path, zarr_format):
    z = zarr.create_array(str(tmp_path / "z"), shape=(20, 30), chunks=(3, 4), dtype="int32",
                          zarr_format=zarr_format)
    z[0:3, 0:8] = 1
    z[9:12, 20:30] = 2
    k = zarrkit.open(str(tmp_path / "z"), mode="r")
    assert k.shards is None and k.cdata_shape == z.cdata_shape
    assert k.nchunks == k.nshards == z.nchunks == z._nshards == 56
    assert k.nchunks_initialized == k.nshards_initialized == z.nchunks_initialized \
        == z._nshards_initialized == 5


def test_tensorstore_partial_shard(tmp_path):
    ts = pytest.importorskip("tensorstore")
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "t")},
            "metadata": {"shape": [20, 30], "data_type": "int32",
                         "chunk_grid": {"name": "regular",
                                        "configuration": {"chunk_shape": [6, 8]}},
                         "codecs": [{"name": "sharding_indexed",
                                     "configuration": {"chunk_shape": [3, 4]}}]}}
    t = ts.open(spec, create=True).result()
    t[0:3, 0:8].write(np.ones((3, 8), "int32")).result()  # two inner chunks of one shard
    t[18:20, 28:30].write(np.ones((2, 2), "int32")).result()  # the corner's one chunk
    k = zarrkit.open(str(tmp_path / "t"), mode="r")
    assert (k.nchunks_initialized, k.nshards_initialized) == (3, 2)
    assert (k.nchunks, k.nshards) == (56, 16)


def test_info_shows_chunks_and_shards():
    a = _sharded()
    a[...] = _data(a.shape)
    a[0:3, 0:4] = 0
    text = str(a.info_complete())
    assert "Chunks stored    : 55/56" in text and "Shards stored    : 16/16" in text
    assert text.index("Shard shape") < text.index("Chunk shape")  # zarr-python's order
    assert "stored" not in str(a.info)  # zarr-python's info reads nothing from the store
    plain = zarrkit.create(MemoryStore(), (20, 30), "int32", chunks=(3, 4))
    plain[0:3, 0:4] = 1
    text = str(plain.info_complete())
    assert "Chunks stored    : 1/56" in text and "Shard" not in text


def test_summary_keeps_its_keys_and_adds_shard_counts():
    a = _sharded()
    a[0:3, 0:4] = 1
    s = array_summary(a)
    assert (s["chunks_stored"], s["chunks_total"]) == (1, 56)
    assert (s["shards_stored"], s["shards_total"]) == (1, 16)
    assert json.loads(json.dumps(s))["chunks_stored"] == 1
    page = array_html(a)
    assert "1/56" in page and "Shards stored" in page and "1/16" in page
    plain = array_summary(zarrkit.create(MemoryStore(), (4,), "int32", chunks=(2,)))
    assert plain["shards_stored"] is None and plain["shards_total"] is None
    assert (plain["chunks_stored"], plain["chunks_total"]) == (0, 2)


def test_copy_skip_initialized_sees_a_shard_missing_inner_chunks(tmp_path):
    source = zarrkit.open_group(str(tmp_path / "s.zarr"), mode="w")
    src = source.create_array("data", shape=(12, 16), dtype="int32", chunks=(3, 4),
                              shards=(6, 8))
    src[...] = _data(src.shape)
    dest = zarrkit.open_group(str(tmp_path / "d.zarr"), mode="w")
    dest.create_array("data", shape=(12, 16), dtype="int32", chunks=(3, 4), shards=(6, 8))
    dest["data"][...] = _data(src.shape)
    assert zarrkit.copy(src, dest, if_exists="skip_initialized")[1] == 1  # complete: skipped
    dest["data"][0:3, 0:4] = 0  # one inner chunk gone; its shard and the others stay
    assert dest["data"].nshards_initialized == dest["data"].nshards
    assert zarrkit.copy(src, dest, if_exists="skip_initialized")[0] == 1  # copied again
    np.testing.assert_array_equal(dest["data"][...], _data(src.shape))


def test_cli_info_prints_both_counts(tmp_path, capsys):
    from zarrkit.cli import main

    a = _sharded(str(tmp_path / "k"))
    a[0:3, 0:4] = 1
    assert main(["info", str(tmp_path / "k")]) == 0
    out = capsys.readouterr().out
    assert "Chunks stored    : 1/56" in out and "Shards stored    : 1/16" in out
    assert main(["info", str(tmp_path / "k"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)["info"]
    assert [info[k] for k in ("chunks_stored", "chunks_total", "shards_stored",
                              "shards_total")] == [1, 56, 1, 16]


class _Unlistable(MemoryStore):
    """A store that cannot list, as plain HTTP."""

    def list_prefix(self, prefix):
        raise zarrkit.errors.NotSupportedError("this store cannot list")


def test_unlistable_store_shows_unknown_counts():
    a = _sharded(_Unlistable())
    a[0:3, 0:4] = 1
    text = str(a.info_complete())
    assert "Chunks stored    : ?/56" in text and "Shards stored    : ?/16" in text
    s = array_summary(a)
    assert (s["chunks_stored"], s["shards_stored"], s["shards_total"]) == (None, None, 16)
    assert "?/16" in array_html(a)
    with pytest.raises(zarrkit.errors.NotSupportedError):
        a.nshards_initialized  # noqa: B018 - the property lists the store

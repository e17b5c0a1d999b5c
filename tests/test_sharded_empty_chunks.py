"""write_empty_chunks at every level of sharding, and storage_statistics of inner chunks.

What zarr-python 3 and TensorStore store, read from the raw shards: under write_empty_chunks
True (TensorStore's store_data_equal_to_fill_value) every inner chunk a write touches is
stored, at every level of nested shards and behind a transpose, even when it is the fill
value; inner chunks the write leaves alone keep their state, and those wholly beyond the
array's shape are never stored. Under False no inner chunk equal to the fill value is stored
at any level, and a shard left with none is deleted. zarrkit must store the same.
storage_statistics counts the inner chunks (TensorStore's read chunks) a view touches: equal
to TensorStore's behind a transpose; of nested shards (where TensorStore 0.1.86 crashes) the
innermost ones, exactly.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

import zarrkit

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")

EMPTY = 2**64 - 1
LE = {"name": "bytes", "configuration": {"endian": "little"}}
INDEX = [LE, {"name": "crc32c"}]
Q = {"query_not_stored": True, "query_fully_stored": True}


def sharding(chunk_shape, codecs):
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(chunk_shape), "codecs": codecs, "index_codecs": INDEX,
        "index_location": "end"}}


def nested(*shapes):
    """Sharding nested len(shapes) deep, the outermost inner chunks of shapes[0]."""
    codecs = [LE]
    for shape in reversed(shapes):
        codecs = [sharding(shape, codecs)]
    return codecs


def metadata(shape, chunks, codecs, fill=0):
    return {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": "int32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": fill, "codecs": codecs}


def create(root, meta):
    os.makedirs(root)
    with open(os.path.join(root, "zarr.json"), "w") as f:
        json.dump(meta, f)


# -- the raw shards, parsed here per the sharding spec ----------------------------------------

def entries(data, config, shape):
    """What a shard of `shape` stores: per inner chunk (C order) None when absent, True for
    a stored leaf chunk, or the nested shard's own entries."""
    per = [s // c for s, c in zip(shape, config["chunk_shape"], strict=True)]
    count = math.prod(per)
    index = np.frombuffer(data[len(data) - 16 * count - 4:len(data) - 4], "<u8").reshape(count, 2)
    inner = config["codecs"][-1]
    out = []
    for offset, nbytes in index.tolist():
        if offset == EMPTY:
            out.append(None)
        elif inner["name"] == "sharding_indexed":
            out.append(entries(data[offset:offset + nbytes], inner["configuration"],
                               config["chunk_shape"]))
        else:
            out.append(True)
    return out


def layout(root):
    """{chunk key: its shard's entries} of everything stored under `root`."""
    with open(os.path.join(root, "zarr.json")) as f:
        meta = json.load(f)
    codec = next(c for c in meta["codecs"] if c["name"] == "sharding_indexed")
    shape = meta["chunk_grid"]["configuration"]["chunk_shape"]
    for c in meta["codecs"]:
        if c["name"] == "transpose":  # the shard's dimensions as the codec receives them
            shape = [shape[i] for i in c["configuration"]["order"]]
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            key = os.path.relpath(os.path.join(dirpath, name), root)
            if name != "zarr.json" and not key.startswith(".zarrkit"):
                with open(os.path.join(dirpath, name), "rb") as f:
                    out[key] = entries(f.read(), codec["configuration"], shape)
    return out


# -- the writers --------------------------------------------------------------------------------

def write_zarrkit(root, ops, keep):
    a = zarrkit.open_array(root, mode="r+", config={"write_empty_chunks": keep})
    for sel, value in ops:
        a[sel] = value
    return a[...]


def write_zarr(root, ops, keep):
    with zarr.config.set({"array.write_empty_chunks": keep}):
        a = zarr.open_array(root, mode="r+")
        for sel, value in ops:
            a[sel] = value
        return a[...]


def write_tensorstore(root, ops, keep):
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": root},
                 "store_data_equal_to_fill_value": keep}).result()
    for sel, value in ops:
        t[sel].write(value).result()
    return t.read().result()


def stored_by(writers, tmp_path, meta, ops, keep):
    """{writer: (layout, values read back)} of `ops` run by each writer on a new array."""
    out = {}
    for write in writers:
        root = str(tmp_path / f"{write.__name__}-{keep}")
        create(root, meta)
        values = write(root, ops, keep)
        out[write.__name__] = (layout(root), np.asarray(values))
    return out


def assert_same(found):
    (first, (want, values)), *others = found.items()
    for name, (got, read) in others:
        assert got == want, f"{name} stored {got}, {first} {want}"
        np.testing.assert_array_equal(read, values)


S = np.s_
NESTED_OPS = {
    "whole fill": (8, [(S[0:8], 0)]),
    "one inner chunk": (8, [(S[0:2], 1)]),
    "part of one, fill": (8, [(S[0:1], 0)]),
    "sibling after fill": (8, [(S[0:2], 0), (S[2:3], 5)]),
    "fill over data": (8, [(S[0:8], 1), (S[2:6], 0)]),
    "all back to fill": (8, [(S[0:8], 1), (S[0:8], 0)]),
    "edge, all fill": (5, [(S[0:5], 0)]),
    "edge, a value": (5, [(S[4:5], 3)]),
    "two shards, strided": (16, [(S[1:16:5], 0)]),
}


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("case", sorted(NESTED_OPS))
def test_nested_sharding_stores_what_the_peers_store(tmp_path, case, keep):
    shape, ops = NESTED_OPS[case]
    meta = metadata([shape], [8], nested([4], [2]))
    assert_same(stored_by([write_zarr, write_tensorstore, write_zarrkit], tmp_path, meta, ops,
                          keep))


def test_nested_write_empty_stores_each_written_innermost_chunk(tmp_path):
    meta = metadata([8], [8], nested([4], [2]))
    found = stored_by([write_zarrkit], tmp_path, meta, [(S[0:1], 0), (S[6:8], 0)], True)
    assert found["write_zarrkit"][0] == {"c/0": [[True, None], [None, True]]}
    found = stored_by([write_zarrkit], tmp_path / "f", meta, [(S[0:1], 0), (S[6:8], 0)], False)
    assert found["write_zarrkit"][0] == {}


@pytest.mark.parametrize("keep", [True, False])
def test_three_levels_in_two_dimensions_store_what_the_peers_store(tmp_path, keep):
    meta = metadata([7, 8], [4, 8], nested([4, 4], [2, 2], [1, 2]))
    ops = [(S[0:3, 1:6], 0), (S[5:7, 0:8], 2), (S[5:6, 2:4], 0), (S[0:2, 6:8], 0)]
    assert_same(stored_by([write_zarr, write_tensorstore, write_zarrkit], tmp_path, meta, ops,
                          keep))


TRANSPOSED_OPS = [
    [(S[0:1, 0:2], 0), (S[5:6, 0:1], 3)],
    [(S[0:6, 0:4], 0)],
    [(S[0:6, 0:4], 1), (S[1:5, 1:3], 0)],
    [(S[::3, ::2], 0), (S[2:3, 3:4], 7)],
]


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("ops", range(len(TRANSPOSED_OPS)))
@pytest.mark.parametrize("inner", [[[2, 1]], [[2, 2], [1, 2]]])
def test_sharding_behind_a_transpose_stores_what_tensorstore_stores(tmp_path, keep, ops, inner):
    # zarr-python refuses a transpose before sharding: TensorStore alone is the peer.
    codecs = [{"name": "transpose", "configuration": {"order": [1, 0]}}, *nested(*inner)]
    meta = metadata([6, 4], [4, 4], codecs)
    assert_same(stored_by([write_tensorstore, write_zarrkit], tmp_path, meta,
                          TRANSPOSED_OPS[ops], keep))


@pytest.mark.parametrize("keep", [True, False])
def test_sharding_before_a_checksum_keeps_written_inner_chunks(tmp_path, keep):
    # Neither peer writes this chain (TensorStore refuses it): stored per the rule.
    meta = metadata([8], [8], [*nested([2]), {"name": "crc32c"}])
    root = str(tmp_path / "a")
    create(root, meta)
    a = zarrkit.open_array(root, mode="r+", config={"write_empty_chunks": keep})
    a[0:3] = 0
    path = os.path.join(root, "c", "0")
    if keep:
        with open(path, "rb") as f:
            found = entries(f.read()[:-4], meta["codecs"][0]["configuration"], [8])
        assert found == [True, True, None, None]
    else:
        assert not os.path.exists(path)
    a[4:5] = 9
    assert a.nchunks_initialized == 1 + 2 * keep
    np.testing.assert_array_equal(a[...], [0, 0, 0, 0, 9, 0, 0, 0])


def test_write_empty_false_leaves_no_fill_inner_chunk_at_any_level(tmp_path):
    meta = metadata([8], [8], nested([4], [2]))
    root = str(tmp_path / "a")
    create(root, meta)
    a = zarrkit.open_array(root, mode="r+")
    a[:] = np.arange(8)
    a[0:2] = 0  # the fill value: that innermost chunk goes, its siblings stay
    assert layout(root) == {"c/0": [[None, True], [True, True]]}
    a[2:4] = 0  # the level-1 chunk is all fill: it goes
    assert layout(root) == {"c/0": [None, [True, True]]}
    a[4:8] = 0  # the shard is all fill: deleted
    assert layout(root) == {}


def test_resize_drops_only_inner_chunks_beyond_the_shape(tmp_path):
    meta = metadata([16], [8], nested([4], [2]))
    root = str(tmp_path / "a")
    create(root, meta)
    a = zarrkit.open_array(root, mode="r+", config={"write_empty_chunks": True})
    a[:] = 0
    a.resize((5,))
    # [0, 2) and [2, 4) were written and stay; [4, 6) straddles the new shape; [6, 8) goes.
    assert layout(root) == {"c/0": [[True, True], [True, None]]}
    a.resize((9,))
    np.testing.assert_array_equal(a[...], np.zeros(9, np.int32))


def test_resize_behind_a_transpose_drops_only_inner_chunks_beyond_the_shape(tmp_path):
    codecs = [{"name": "transpose", "configuration": {"order": [1, 0]}}, *nested([2, 2], [1, 1])]
    root = str(tmp_path / "a")
    create(root, metadata([4, 4], [4, 4], codecs))
    a = zarrkit.open_array(root, mode="r+", config={"write_empty_chunks": True})
    a[:] = 0
    a.resize((3, 4))  # array row 3 is the shard's column 3 (the transpose swaps them)
    # Entries in C order of the shard's (transposed) dimensions: the second of each pair of
    # level-1 chunks holds array rows 2 and 3, and its every second innermost chunk row 3.
    row_two = [True, None, True, None]
    assert layout(root) == {"c/0/0": [[True] * 4, row_two] * 2}
    a.resize((1, 4))
    assert layout(root) == {"c/0/0": [row_two, None] * 2}


def test_written_fill_inner_chunks_read_when_missing_data_is_refused(tmp_path):
    root = str(tmp_path / "a")
    create(root, metadata([8], [8], nested([4], [2])))
    zarrkit.open_array(root, mode="r+", config={"write_empty_chunks": True})[0:2] = 0
    z = zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": root},
                      "fill_missing_data_reads": False}).result()
    np.testing.assert_array_equal(z.view[0:2].read().result(), [0, 0])
    with pytest.raises(zarrkit.ChunkNotFoundError, match="fill_missing_data_reads"):
        z.view[2:3].read().result()


def test_reads_of_fill_inner_chunks_stored_or_not_agree(tmp_path):
    meta = metadata([8], [8], nested([4], [2]))
    values = {}
    for keep in (True, False):
        root = str(tmp_path / str(keep))
        create(root, meta)
        a = zarrkit.open_array(root, mode="r+", config={"write_empty_chunks": keep})
        a[1:7] = 0
        a[3] = 4
        values[keep] = a[...]
        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": root}}).result()
        np.testing.assert_array_equal(t.read().result(), values[keep])
    np.testing.assert_array_equal(values[True], values[False])


# -- storage_statistics --------------------------------------------------------------------------

VIEWS = [S[0:1, 0:2], S[0:1, 0:1], S[0:2, 0:1], S[1:4, 0:4], S[4:6, 0:1], S[4:6, 0:4],
         S[0:6, 0:4], S[0:6:5, 0:1], S[::2, 1:2], S[2:3, 2:4], S[0:0, 0:4], S[3:5, 1:3]]


def statistics(view):
    stats = view.storage_statistics(**Q).result()
    return stats.not_stored, stats.fully_stored


@pytest.mark.parametrize("writer", ["zarrkit", "tensorstore"])
@pytest.mark.parametrize("keep", [True, False])
def test_statistics_behind_a_transpose_match_tensorstore(tmp_path, writer, keep):
    codecs = [{"name": "transpose", "configuration": {"order": [1, 0]}}, *nested([2, 1])]
    root = str(tmp_path / "a")
    create(root, metadata([6, 4], [4, 4], codecs))
    ops = [(S[0:1, 0:2], 0), (S[5:6, 0:1], 3), (S[2:4, 2:4], 1), (S[2:3, 2:3], 0)]
    (write_zarrkit if writer == "zarrkit" else write_tensorstore)(root, ops, keep)
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": root}}).result()
    z = zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": root}}).result()
    for sel in VIEWS:
        assert statistics(z.view[sel]) == statistics(t[sel]), sel
    assert statistics(z.view[S[::3, ::3]]) == statistics(t[S[::3, ::3]])


def test_statistics_of_nested_shards_count_innermost_chunks(tmp_path):
    # TensorStore 0.1.86 crashes here; its read chunks are the innermost: counted exactly.
    root = str(tmp_path / "a")
    create(root, metadata([16], [8], nested([4], [2])))
    write_tensorstore(root, [(S[0:2], 1), (S[9:10], 1), (S[12:16], 0)], True)
    z = zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": root}}).result()
    expected = [(S[0:2], (False, True)), (S[0:3], (False, False)), (S[2:8], (True, False)),
                (S[8:10], (False, True)), (S[9:11], (False, False)), (S[10:12], (True, False)),
                (S[12:16], (False, True)), (S[11:16], (False, False)),
                (S[0:16:8], (False, True)), (S[2:16:8], (True, False)),
                (S[0:16:4], (False, False)), (S[0:16], (False, False))]
    for sel, want in expected:
        assert statistics(z.view[sel]) == want, sel


def _rewritten_by_fill_where_none_is(lib, root):
    """Whether writing the fill value over inner chunks not stored rewrites the shard."""
    a = lib.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": f"{root}/"}},
                 create=True, dtype="int32", shape=[8, 6], fill_value=7,
                 chunk_layout=lib.ChunkLayout(read_chunk_shape=[2, 3],
                                              write_chunk_shape=[4, 6])).result()
    a[lib.d[0, 1][2:4, 3:6]].write(np.arange(6, dtype=np.int32).reshape(2, 3)).result()
    before = os.stat(f"{root}/c/0/0")
    a[lib.d[0, 1][0:4, 0:3]].write(7).result()  # the fill, where no inner chunk is stored
    after = os.stat(f"{root}/c/0/0")
    a[lib.d[0, 1][0:2, 3:6]].write(7).result()  # the fill over a stored one's neighbour
    last = os.stat(f"{root}/c/0/0")
    return ((before.st_ino, before.st_mtime_ns) != (after.st_ino, after.st_mtime_ns),
            (after.st_ino, after.st_mtime_ns) != (last.st_ino, last.st_mtime_ns),
            a.read().result()[2:4, 3:6].tolist())


def test_writing_the_fill_where_no_inner_chunk_is_stored_leaves_the_shard_as_tensorstore(
        tmp_path):
    """Nothing changes: the shard is not stored again (its generation stays, as readers that
    check it, a repeatable_read transaction's commit among them, expect)."""
    expected = _rewritten_by_fill_where_none_is(ts, tmp_path / "ts")
    assert _rewritten_by_fill_where_none_is(zarrkit, tmp_path / "zk") == expected
    assert expected == (False, False, [[0, 1, 2], [3, 4, 5]])

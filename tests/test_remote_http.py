"""Reading over HTTP from a real server on loopback that honours Range requests."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("obstore")

from _loopback import http_server  # noqa: E402

import zarrkit  # noqa: E402
from zarrkit.errors import (  # noqa: E402
    CredentialsError,
    NodeNotFoundError,
    NotSupportedError,
    PermissionDeniedError,
    ReadOnlyError,
    StoreError,
)
from zarrkit.kvstore import ByteRange  # noqa: E402

DATA = np.arange(64 * 64, dtype="uint16").reshape(64, 64)


def _consolidate(path: str) -> None:
    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "not part of the v3 specification"
        zarr.consolidate_metadata(path)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    for top in ("", "flaky/", "broken/", "forbidden/", "norange/"):
        g = zarrkit.open_group(str(root / f"{top}tree.zarr"), mode="w",
                               attributes={"title": "served"})
        a = g.create_array("image", shape=DATA.shape, dtype="uint16", chunks=(8, 8),
                           shards=(32, 32), dimension_names=["y", "x"])
        a[...] = DATA
        g.create_group("empty").create_array("z", shape=(3,), dtype="f4", chunks=(3,))
    zarrkit.create(str(root / "plain.zarr"), shape=(10,), dtype="i8", chunks=(4,))[...] = \
        np.arange(10)
    _consolidate(str(root / "tree.zarr"))
    with http_server(str(root), flaky_failures=2) as srv:
        yield srv


def test_read_array_by_url(server):
    a = zarrkit.open(f"{server.url}/tree.zarr/image", mode="r")
    np.testing.assert_array_equal(a[...], DATA)
    before = server.requests
    np.testing.assert_array_equal(a[3:5, 40:42], DATA[3:5, 40:42])
    assert server.requests - before == 1  # one inner chunk; the handle has the shard's index
    fresh = zarrkit.open(f"{server.url}/tree.zarr/image", mode="r")
    before = server.requests
    np.testing.assert_array_equal(fresh[3:5, 40:42], DATA[3:5, 40:42])
    assert server.requests - before == 2  # the shard index (a suffix range), then the chunk
    np.testing.assert_array_equal(zarrkit.open(f"{server.url}/plain.zarr", mode="r")[...],
                                  np.arange(10))


def test_consolidated_metadata_lists_the_hierarchy(server):
    g = zarrkit.open_group(f"{server.url}/tree.zarr", mode="r")
    assert sorted(g) == ["empty", "image"]
    before = server.requests
    assert g["empty/z"].shape == (3,) and g["image"].dimension_names == ("y", "x")
    assert server.requests == before  # members come from the consolidated document
    assert "z" in g.tree() and g.attrs["title"] == "served"


def test_without_consolidated_metadata_listing_is_refused_clearly(server):
    g = zarrkit.open_group(f"{server.url}/flaky/tree.zarr", mode="r")
    with pytest.raises(NotSupportedError, match="plain HTTP server has no listing"):
        list(g)
    assert g["image"].shape == DATA.shape  # members by name still work


def test_transient_errors_are_retried(server):
    a = zarrkit.open(f"{server.url}/flaky/tree.zarr/image", mode="r")
    np.testing.assert_array_equal(a[...], DATA)
    assert any(v > 2 for v in server.attempts.values())


def test_persistent_errors_name_the_key_after_bounded_retries(server):
    with pytest.raises(StoreError, match=r"cannot read '[.a-z]+' in http://.*/broken/tree.zarr"
                                         r".*after 1 retries"):
        zarrkit.open(f"{server.url}/broken/tree.zarr", mode="r",
                     storage_options={"max_retries": 1})


def test_permission_and_credentials_errors(server):
    with pytest.raises(PermissionDeniedError, match="permission denied"):
        zarrkit.open(f"{server.url}/forbidden/tree.zarr", mode="r")
    with pytest.raises(CredentialsError):
        zarrkit.open(f"{server.url}/unauthorized/x.zarr", mode="r")


def test_missing_node_and_read_only(server):
    with pytest.raises(NodeNotFoundError, match="no .*array or group"):
        zarrkit.open(f"{server.url}/nothing.zarr", mode="r")
    a = zarrkit.open(f"{server.url}/plain.zarr", mode="r")
    with pytest.raises(ReadOnlyError):
        a[0] = 1
    with pytest.raises(ReadOnlyError, match="HTTP stores are read-only"):
        a.store.set("x", b"1")


def test_unreachable_http_endpoint():
    from _loopback import free_port

    from zarrkit.errors import StoreUnreachableError

    with pytest.raises(StoreUnreachableError, match="cannot be reached"):
        zarrkit.open(f"http://127.0.0.1:{free_port()}/x.zarr", mode="r",
                     storage_options={"max_retries": 0})


def test_listing_an_unreachable_server_is_not_called_unsupported():
    from _loopback import free_port

    from zarrkit.errors import StoreUnreachableError
    from zarrkit.kvstore import open_kvstore

    store, _ = open_kvstore(f"http://127.0.0.1:{free_port()}/x.zarr",
                            storage_options={"max_retries": 0})
    with pytest.raises(StoreUnreachableError, match=r"cannot list '/' in http://.*cannot be "
                                                    r"reached"):
        store.list_dir("")


def test_base_url_with_a_query_string(server):
    # The path goes before the query (a token or signature), not into it.
    from zarrkit.kvstore import kvstore_to_url

    spec = {"driver": "zarr3", "kvstore": {"driver": "http", "path": "image",
                                           "base_url": f"{server.url}/tree.zarr?v=1"}}
    np.testing.assert_array_equal(zarrkit.open(spec, mode="r")[...], DATA)
    g = zarrkit.open_group(f"{server.url}/tree.zarr?v=1", mode="r")
    assert kvstore_to_url(g.store, "image") == f"{server.url}/tree.zarr/image?v=1"


def test_a_batch_with_a_range_past_the_end_still_reads_the_other_requests(tmp_path):
    from zarrkit.kvstore import ByteRange, open_kvstore

    (tmp_path / "v").write_bytes(b"0123456789")
    with http_server(str(tmp_path)) as server:
        store, _ = open_kvstore(server.url)
        got = store.get_many([("v", ByteRange(50, 5)), ("v", None), ("v", ByteRange.suffix(3)),
                              ("v", ByteRange(7))])
        assert [g if g is None else bytes(g) for g in got] == [b"", b"0123456789", b"789",
                                                               b"789"]


def test_ranges_past_the_end_of_a_value_and_a_cut_short_shard(tmp_path):
    # Ranges of one key are fetched in one coalesced request; when the value ends before some
    # of them, they read as empty (as single reads do), and a shard whose index points past
    # its end is reported as corrupt, naming the inner chunk.
    from zarrkit.errors import CorruptDataError
    from zarrkit.kvstore import ByteRange, open_kvstore

    (tmp_path / "v").write_bytes(b"0123456789")
    a = zarrkit.create(str(tmp_path / "cut.zarr"), shape=(16, 16), dtype="u2", chunks=(4, 4),
                       shards=(16, 16), codecs=[{"name": "bytes"}])
    a[...] = np.arange(256, dtype="u2").reshape(16, 16)
    shard = tmp_path / "cut.zarr" / "c" / "0" / "0"
    whole = shard.read_bytes()
    index_size = 16 * 16 + 4  # 16 (offset, length) pairs and a crc32c
    shard.write_bytes(whole[:100] + whole[-index_size:])  # the index now points past the end
    with http_server(str(tmp_path)) as server:
        store, _ = open_kvstore(server.url)
        got = store.get_many([("v", ByteRange(50, 5)), ("v", ByteRange(1, 2)),
                              ("v", ByteRange(8, 10))])
        assert [bytes(g) for g in got] == [b"", b"12", b"89"]
        cut = zarrkit.open(f"{server.url}/cut.zarr", mode="r")
        np.testing.assert_array_equal(cut[:2, :2], [[0, 1], [16, 17]])  # bytes 0-31: still there
        with pytest.raises(CorruptDataError, match=r"shard 'c/0/0': inner chunk at bytes "
                                                   r"\d+\+32 lies outside the shard"):
            cut[...]


def test_a_server_ignoring_ranges_still_serves_sharded_arrays(server):
    """Plain web servers answer a Range request with the whole file (200): the parts wanted
    are cut from it, and once seen, each shard is fetched whole once per read."""
    url = f"{server.url}/norange/tree.zarr/image"
    a = zarrkit.open(url, mode="r")
    np.testing.assert_array_equal(a[...], DATA)
    before = server.requests
    np.testing.assert_array_equal(a[3:5, 40:42], DATA[3:5, 40:42])
    assert server.requests - before == 2  # the shard whole for its index, then its chunk
    fresh = zarrkit.open(url, mode="r")
    np.testing.assert_array_equal(fresh[30:34, 30:34], DATA[30:34, 30:34])
    store = fresh.store
    assert bytes(store.get("zarr.json", ByteRange(0, 1))) == b"{"
    assert bytes(store.get("zarr.json", ByteRange.suffix(1))) == b"}"
    got = store.get_many([("c/0/0", ByteRange(1, 2)), ("c/0/0", ByteRange.suffix(3)),
                          ("missing", ByteRange(0, 1))])
    whole = bytes(store.get("c/0/0"))
    assert [None if g is None else bytes(g) for g in got] == [whole[1:3], whole[-3:], None]


def test_a_server_ignoring_ranges_keeps_generation_checks(tmp_path):
    """A server that ignores Range but sends ETags (nginx with max_ranges 0): the value read
    whole for a range still has a generation, so a value replaced between a shard's index read
    and its chunk read is noticed (the generation was dropped: no check at all)."""
    from zarrkit.kvstore import open_kvstore
    from zarrkit.kvstore.base import GenerationMismatch

    (tmp_path / "whole").mkdir()
    value = tmp_path / "whole" / "v"
    value.write_bytes(b"0123456789")
    with http_server(str(tmp_path)) as server:
        store, _ = open_kvstore(f"{server.url}/whole")
        for _ in range(2):  # the first time ranges are ignored, then in whole-value mode
            data, generation = store.get_with_generation("v", ByteRange.suffix(4))
            assert bytes(data) == b"6789" and generation is not None
            got = store.get_ranges_if("v", [ByteRange(1, 2), ByteRange.suffix(1)], generation)
            assert [bytes(g) for g in got] == [b"12", b"9"]
        assert store._whole_only
        value.write_bytes(b"abcdefghijk")  # replaced between the index read and the chunk read
        with pytest.raises(GenerationMismatch):
            store.get_ranges_if("v", [ByteRange(1, 2)], generation)
        server.honour_if_match = False  # a server that ignores If-Match too: the ETag tells
        data, generation = store.get_with_generation("v", ByteRange(0, 1))
        value.write_bytes(b"replaced again")
        with pytest.raises(GenerationMismatch):
            store.get_ranges_if("v", [ByteRange(1, 2)], generation)


def test_a_shard_replaced_mid_read_on_a_server_ignoring_ranges(tmp_path):
    # The old index's offsets applied to the new shard read the wrong bytes (silently: the
    # chunks are uncompressed); the generation check makes the read start over.
    old = np.arange(1, 9, dtype="u4")
    new = np.array([0, 0, 3, 4, 5, 6, 7, 8], dtype="u4")  # chunk 0 all fill: not stored
    for name, values in (("whole/a.zarr", old), ("new.zarr", new)):
        a = zarrkit.create(str(tmp_path / name), shape=(8,), dtype="u4", chunks=(2,),
                           shards=(8,), codecs=[{"name": "bytes"}], fill_value=0)
        a[...] = values
    shard, replacement = tmp_path / "whole/a.zarr/c/0", (tmp_path / "new.zarr/c/0").read_bytes()
    assert len(replacement) < len(shard.read_bytes())  # the offsets moved
    with http_server(str(tmp_path)) as server:
        a = zarrkit.open(f"{server.url}/whole/a.zarr", mode="r")
        np.testing.assert_array_equal(a[...], old)  # (the server is seen to ignore Range)
        fresh = zarrkit.open(f"{server.url}/whole/a.zarr", mode="r")
        store, read = fresh.store, fresh.store.get_ranges_if

        def replaced_first(*args, **kwargs):  # another writer, after the index was read
            if shard.read_bytes() != replacement:
                shard.write_bytes(replacement)
            return read(*args, **kwargs)

        store.get_ranges_if = replaced_first
        np.testing.assert_array_equal(fresh[...], new)


def test_an_obstore_http_store_given_as_the_store(server):
    """obstore's HTTPStore made by the caller: read through it, read-only, with its URL."""
    import obstore.store

    client = obstore.store.HTTPStore.from_url(f"{server.url}/tree.zarr",
                                              client_options={"allow_http": True})
    group = zarrkit.open_group(client, mode="r")
    assert group.attrs["title"] == "served" and group.store.to_json() == {
        "driver": "http", "base_url": f"{server.url}/tree.zarr"}
    np.testing.assert_array_equal(group["image"][3:5, 40:42], DATA[3:5, 40:42])
    with pytest.raises(zarrkit.ReadOnlyError):
        group["image"][0, 0] = 1

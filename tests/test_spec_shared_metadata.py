"""TensorStore's shared metadata cache: arrays opened from specs in one context share their
metadata per location, so a resize through one handle shows through the others at their next
read or write, without reading the store. TensorStore 0.1.86 is the oracle."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest
import tensorstore as ts

import zarrkit
from zarrkit.errors import MetadataError, NodeTypeError, SelectionError

BOUNDS = ["open", True, False]


def _spec(root, **members) -> dict:
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(root) + "/"},
            **members}


class _TS:
    """The scenarios' operations in TensorStore."""

    context = ts.Context

    @staticmethod
    def open(spec, ctx, **kw):
        return ts.open(spec, context=ctx, **kw).result()

    @staticmethod
    def create(spec, ctx, shape, chunk=2, dtype="int32", **kw):
        return ts.open(spec, context=ctx, create=True, dtype=ts.dtype(dtype), shape=shape,
                       chunk_layout=ts.ChunkLayout(chunk_shape=[chunk] * len(shape)),
                       **kw).result()

    @staticmethod
    def read(handle):
        return handle.read().result()

    @staticmethod
    def resize(handle, n, **kw):
        handle.resize(exclusive_max=[n], **kw).result()

    @staticmethod
    def window(handle, stop):
        return handle[0:stop]  # explicit bounds


class _ZK:
    """The same in zarrkit."""

    context = zarrkit.Context

    @staticmethod
    def open(spec, ctx, **kw):
        return zarrkit.open(spec, context=ctx, **kw)

    @staticmethod
    def create(spec, ctx, shape, chunk=2, dtype="int32", **kw):
        return zarrkit.open(spec, context=ctx, create=True, dtype=dtype, shape=shape,
                            chunk_layout=zarrkit.ChunkLayout(chunk_shape=[chunk] * len(shape)),
                            **kw)

    @staticmethod
    def read(handle):
        return handle[...] if isinstance(handle, zarrkit.Array) else handle.read().result()

    @staticmethod
    def resize(handle, n, **kw):
        handle.resize(exclusive_max=[n], **kw)

    @staticmethod
    def window(handle, stop):
        return handle.view[0:stop]


def _both(tmp_path, scenario, *args):
    """The scenario's outcome in TensorStore and in zarrkit, each on its own store."""
    return scenario(_TS, tmp_path / "ts", *args), scenario(_ZK, tmp_path / "zk", *args)


def _grow_then_shrink(lib, root, bound):
    ctx = lib.context()
    a = lib.create(_spec(root), ctx, [4])
    a[...] = np.arange(4, dtype=np.int32)
    b = lib.open(_spec(root, recheck_cached_metadata=bound), ctx)
    window = lib.window(b, 4)
    lib.resize(a, 8)
    a[4:8] = np.arange(4, 8, dtype=np.int32)
    grown = (lib.read(b).tolist(), lib.read(window).tolist(),
             lib.open(_spec(root, recheck_cached_metadata=bound), ctx).shape)
    lib.resize(a, 2, shrink_only=True)
    shrunk = lib.read(b).tolist()
    try:
        lib.read(window)
        window_after = "read"
    except (ValueError, IndexError):  # TensorStore's OUT_OF_RANGE; zarrkit's SelectionError
        window_after = "out of range"
    return grown, shrunk, window_after


@pytest.mark.parametrize("bound", BOUNDS)
def test_resize_shows_through_other_handles_in_the_context(tmp_path, bound):
    """Implicit bounds follow the shared shape whatever recheck_cached_metadata says (false
    only stops reading the store); explicit bounds stay, and fail once the array shrinks
    below them; a new open in the context gets the new shape."""
    expected, actual = _both(tmp_path, _grow_then_shrink, bound)
    assert actual == expected
    assert actual == (([0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3], (8,)), [0, 1], "out of range")


def test_explicit_window_past_a_shrink_is_a_selection_error(tmp_path):
    ctx = zarrkit.Context()
    a = _ZK.create(_spec(tmp_path), ctx, [4])
    window = zarrkit.open(_spec(tmp_path), context=ctx).view[0:4]
    a.resize(exclusive_max=[2], shrink_only=True)
    with pytest.raises(SelectionError, match=r"out of bounds.*\[0, 2\)"):
        window.read().result()


def test_shape_is_the_handles_shape_as_of_its_last_read_or_write(tmp_path):
    """`Array.shape` (and `domain`) report the shape the handle last used: the resize through
    another handle shows at the next read or write, not before (no store or cache work in a
    property). A View keeps the domain it was made with, as TensorStore's `domain` does."""
    ctx = zarrkit.Context()
    a = _ZK.create(_spec(tmp_path), ctx, [4])
    b = zarrkit.open(_spec(tmp_path), context=ctx)
    view = b.view
    a.resize(exclusive_max=[8])
    assert b.shape == (4,)
    assert b[...].shape == (8,)
    assert b.shape == (8,) and b.domain.exclusive_max == (8,)
    assert view.domain.exclusive_max == (4,) and view.read().result().shape == (8,)
    a.resize(exclusive_max=[6])
    b[5] = 7  # a write adopts the new shape too
    assert b.shape == (6,)
    assert a[...].tolist() == [0, 0, 0, 0, 0, 7]


def test_ts_domain_stays_as_opened_while_reads_follow(tmp_path):
    """What the test above departs from: TensorStore's handle keeps its domain."""
    ctx = ts.Context()
    a = _TS.create(_spec(tmp_path), ctx, [4])
    b = ts.open(_spec(tmp_path), context=ctx).result()
    a.resize(exclusive_max=[8]).result()
    assert b.read().result().shape == (8,)
    assert b.domain.exclusive_max == (4,)


def _other_contexts(lib, root, bound):
    ctx = lib.context()
    a = lib.create(_spec(root), ctx, [4])
    stranger = lib.open(_spec(root, recheck_cached_metadata=bound), lib.context())
    default = lib.open(_spec(root, recheck_cached_metadata=bound), None)  # no context given
    lib.resize(a, 8)
    return lib.read(stranger).shape, lib.read(default).shape


@pytest.mark.parametrize("bound", BOUNDS)
def test_other_contexts_do_not_share(tmp_path, bound):
    expected, actual = _both(tmp_path, _other_contexts, bound)
    assert actual == expected
    assert actual == (((8,), (8,)) if bound is True else ((4,), (4,)))


def _foreign_resize_then_open(lib, root, bound):
    """A resize from another context (as another process would) is not in the shared cache:
    with recheck_cached_metadata false a new open in the context keeps the cached metadata;
    otherwise the open reads the store and the context's handles adopt what it read."""
    ctx = lib.context()
    a = lib.create(_spec(root), ctx, [4])
    b = lib.open(_spec(root, recheck_cached_metadata=bound), ctx)
    lib.resize(lib.open(_spec(root), lib.context()), 8)
    c = lib.open(_spec(root, recheck_cached_metadata=bound), ctx)
    return c.shape, lib.read(a).shape, lib.read(b).shape


@pytest.mark.parametrize("bound", BOUNDS)
def test_open_after_a_foreign_resize(tmp_path, bound):
    expected, actual = _both(tmp_path, _foreign_resize_then_open, bound)
    assert actual == expected
    assert actual == (((4,), (4,), (4,)) if bound is False else ((8,), (8,), (8,)))


def _locations(lib, root):
    """The same array named by kvstore.path alone or split with `path` is one entry; an
    inline cache pool is another pool, so another cache."""
    ctx = lib.context()
    a = lib.create(_spec(root / "arr"), ctx, [4])
    split = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(root) + "/"},
             "path": "arr", "recheck_cached_metadata": False}
    b = lib.open(split, ctx)
    own_pool = lib.open(_spec(root / "arr", recheck_cached_metadata=False,
                              cache_pool={"total_bytes_limit": 1 << 20}), ctx)
    lib.resize(a, 6)
    return lib.read(b).shape, lib.read(own_pool).shape


def test_location_and_pool_decide_what_is_shared(tmp_path):
    expected, actual = _both(tmp_path, _locations)
    assert actual == expected == ((6,), (4,))


def _assume(lib, root):
    """assume_metadata shares nothing; assume_cached_metadata keeps the assumed metadata until
    the shared entry changes, then follows it."""
    ctx = lib.context()
    a = lib.create(_spec(root), ctx, [4], chunk=4)
    kw = {"dtype": "int32", "shape": [4]}
    if lib is _TS:
        kw = {"dtype": ts.int32, "shape": [4], "chunk_layout": ts.ChunkLayout(chunk_shape=[4])}
    else:
        kw["chunk_layout"] = zarrkit.ChunkLayout(chunk_shape=[4])
    assumed = lib.open(_spec(root, assume_metadata=True), ctx, **kw)
    cached = lib.open(_spec(root, assume_cached_metadata=True), ctx, **kw)
    lib.resize(a, 8)
    late = lib.open(_spec(root, assume_cached_metadata=True), ctx, **kw)
    before = lib.read(late).shape
    lib.resize(a, 6)
    return lib.read(assumed).shape, lib.read(cached).shape, before, lib.read(late).shape


def test_assume_metadata_and_assume_cached_metadata(tmp_path):
    expected, actual = _both(tmp_path, _assume)
    assert actual == expected == ((4,), (6,), (4,), (6,))


def _assumed_then_stored(lib, root):
    """assume_cached_metadata with nothing cached assumes the spec's metadata, which an open
    that reads other (incompatible) stored metadata then replaces: the handle fails."""
    lib.create(_spec(root), lib.context(), [4])
    ctx = lib.context()
    kw = ({"dtype": ts.int32, "shape": [6], "chunk_layout": ts.ChunkLayout(chunk_shape=[6])}
          if lib is _TS else {"dtype": "int32", "shape": [6],
                              "chunk_layout": zarrkit.ChunkLayout(chunk_shape=[6])})
    assumed = lib.open(_spec(root, assume_cached_metadata=True), ctx, **kw)
    opened = lib.open(_spec(root), ctx)
    try:
        lib.read(assumed)
        outcome = "read"
    except (ValueError, MetadataError):
        outcome = "failed"
    return assumed.shape, opened.shape, outcome


def test_assumed_metadata_replaced_by_an_open(tmp_path):
    expected, actual = _both(tmp_path, _assumed_then_stored)
    assert actual == expected == ((6,), (4,), "failed")


def _replaced(lib, root, chunk):
    """delete_existing in the context: the same layout at another shape is adopted, another
    chunk shape or data type fails the old handles' reads and writes."""
    ctx = lib.context()
    lib.create(_spec(root), ctx, [4])
    b = lib.open(_spec(root, recheck_cached_metadata=False), ctx)
    lib.create(_spec(root), ctx, [6], chunk=chunk, delete_existing=True)
    outcomes = []
    for op in (lambda: lib.read(b).shape, lambda: b.__setitem__(0, 1)):
        try:
            outcomes.append(op())
        except (ValueError, MetadataError, NodeTypeError):
            outcomes.append("failed")
    return outcomes


@pytest.mark.parametrize("chunk", [2, 3])
def test_replaced_by_delete_existing(tmp_path, chunk):
    expected, actual = _both(tmp_path, _replaced, chunk)
    assert actual == expected
    assert actual == ([(6,), None] if chunk == 2 else ["failed", "failed"])


def test_replaced_array_fails_reads_with_metadata_error(tmp_path):
    ctx = zarrkit.Context()
    _ZK.create(_spec(tmp_path), ctx, [4])
    b = zarrkit.open(_spec(tmp_path), context=ctx)
    view = b.view
    _ZK.create(_spec(tmp_path), ctx, [4], dtype="float32", delete_existing=True)
    for read in (lambda: b[...], lambda: view.read().result(), lambda: b.oindex[[0]]):
        with pytest.raises(MetadataError, match="changed incompatibly.*open it again"):
            read()
    assert b.dtype == np.int32  # the handle keeps what it opened
    assert zarrkit.open(_spec(tmp_path), context=ctx)[...].dtype == np.float32


def test_unpickled_handle_opens_in_a_fresh_context(tmp_path):
    """A pickle carries the spec (with the context's JSON), not the context: the copy's
    metadata is its own, as TensorStore's."""
    def run(lib, root):
        ctx = lib.context()
        a = lib.create(_spec(root), ctx, [4])
        b = lib.open(_spec(root), ctx)
        copy = pickle.loads(pickle.dumps(b))
        lib.resize(a, 8)
        return lib.read(b).shape, lib.read(copy).shape

    expected, actual = _both(tmp_path, run)
    assert actual == expected == ((8,), (4,))


def test_with_config_handles_share_too(tmp_path):
    ctx = zarrkit.Context()
    a = _ZK.create(_spec(tmp_path), ctx, [4])
    other = zarrkit.open(_spec(tmp_path), context=ctx).with_config(write_empty_chunks=True)
    a.resize(exclusive_max=[8])
    assert other[...].shape == (8,)


def test_attribute_updates_are_shared(tmp_path):
    ctx = zarrkit.Context()
    a = _ZK.create(_spec(tmp_path), ctx, [4])
    b = zarrkit.open(_spec(tmp_path), context=ctx)
    a.attrs["units"] = "m"
    b[...]
    assert b.attrs["units"] == "m"


def test_reads_after_a_shared_resize_do_not_read_the_metadata(tmp_path):
    ctx = zarrkit.Context()
    a = _ZK.create({"driver": "zarr3", "kvstore": {"driver": "memory"}, "path": "x"}, ctx, [4])
    b = zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "memory"}, "path": "x"},
                     context=ctx)
    a.resize(exclusive_max=[8])
    keys = []
    get = b.store.get
    b.store.get = lambda key, *args, **kw: (keys.append(key), get(key, *args, **kw))[1]
    assert b[...].shape == (8,) and b.view[2:6].read().result().shape == (4,)
    assert not [k for k in keys if k.endswith("zarr.json")]


def test_v2_driver_shares_too(tmp_path):
    spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": str(tmp_path) + "/"}}
    ctx = zarrkit.Context()
    a = zarrkit.open(spec, context=ctx, create=True, dtype="int16", shape=[3, 4])
    b = zarrkit.open(spec, context=ctx)
    a.resize(exclusive_max=[5, 4])
    assert b[...].shape == (5, 4)
    # ... and the other library reads what zarrkit wrote through the grown handle
    b[4] = 9
    assert ts.open(spec).result().read().result()[4].tolist() == [9] * 4


def test_writes_through_a_follower_land_in_the_grown_array(tmp_path):
    ctx = zarrkit.Context()
    a = _ZK.create(_spec(tmp_path), ctx, [4])
    b = zarrkit.open(_spec(tmp_path), context=ctx)
    a.resize(exclusive_max=[8])
    b.view.write(np.arange(8, dtype=np.int32)).result()
    assert ts.open(_spec(tmp_path)).result().read().result().tolist() == list(range(8))


def test_plain_api_handles_are_unchanged(tmp_path):
    """zarrkit.open(path) and create_array handles are not spec handles: no shared cache,
    reads keep the shape they opened with."""
    a = zarrkit.create_array(str(tmp_path / "p"), shape=(4,), chunks=(2,), dtype="int32")
    b = zarrkit.open(str(tmp_path / "p"))
    a.resize(8)
    assert b._open_state is None and b[...].shape == (4,)


def test_threads_resizing_reading_and_writing(tmp_path):
    """Handles shared by threads while another handle resizes: every read has one of the
    shapes the resizer sets, nothing raises, and the handles end with the last shape."""
    ctx = zarrkit.Context()
    a = _ZK.create(_spec(tmp_path), ctx, [4])
    a[...] = 1
    b = zarrkit.open(_spec(tmp_path), context=ctx)
    stop, errors, seen = threading.Event(), [], set()

    def resizer():
        try:
            for i in range(30):
                n = 8 if i % 2 == 0 else 4
                a.resize(exclusive_max=[n])
                a[...] = n
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
        finally:
            stop.set()

    def reader():
        try:
            while not stop.is_set():
                data = b[...]
                seen.add(data.shape)
                assert data.shape in ((4,), (8,))
                window = b.view[0:4].read().result()
                assert window.shape == (4,)
                b[0:2] = 5  # writes read the store and offer what they read to the entry
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=resizer)] + [threading.Thread(target=reader)
                                                    for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert b[2:].tolist() == [4, 4] and b.shape == (4,)  # (readers wrote 5 to [0:2])
    assert seen <= {(4,), (8,)}

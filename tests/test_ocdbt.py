"""The read-only `ocdbt` kvstore adapter: TensorStore writes OCDBT databases, zarrkit reads them.

TensorStore is the writer and the oracle: values, listings, versions (by generation and commit
time), its `ts.ocdbt.dump` of manifests and nodes; corrupt and truncated files must raise
zarrkit errors naming the file.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import zipfile
from datetime import UTC, datetime

import numpy as np
import pytest
import tensorstore as ts
from crc32c import crc32c

import zarrkit
from zarrkit.errors import (
    ChecksumError,
    CorruptDataError,
    NotSupportedError,
    ReadOnlyError,
    SpecError,
    StoreError,
    ZarrkitError,
)
from zarrkit.kvstore import (
    ByteRange,
    KvStore,
    MemoryStore,
    kvstore_spec_to_url,
    open_kvstore,
    parse_kvstore_url,
)
from zarrkit.kvstore import _ocdbt_format as fmt
from zarrkit.kvstore.ocdbt import OcdbtStore


def _url(directory) -> str:
    return f"file://{directory}/"


def _ts_kv(directory, **spec):
    return ts.KvStore.open({"driver": "ocdbt", "base": _url(directory), **spec}).result()


def _zk(directory, **spec) -> OcdbtStore:
    store, path = open_kvstore({"driver": "ocdbt", "base": _url(directory), **spec},
                               read_only=True)
    assert path == ""
    return store


def _values(n: int, seed: int = 0) -> dict[str, bytes]:
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(n):
        key = f"g{i % 7}/a{i % 5}/c/{i // 35}/{i}" if i % 3 else f"k{i:04d}"
        out[key] = rng.integers(0, 256, int(rng.integers(0, 300)), dtype=np.uint8).tobytes()
    out["zarr.json"] = b'{"zarr_format": 3, "node_type": "group"}'
    return out


def _write(kv, values: dict[str, bytes], per_commit: int | None = None) -> None:
    items = list(values.items())
    step = per_commit or len(items)
    for start in range(0, len(items), step):
        txn = ts.Transaction()
        for key, value in items[start:start + step]:
            kv.with_transaction(txn)[key] = value
        txn.commit_async().result()


def _ts_list(kv, prefix: str = "") -> list[str]:
    if prefix:
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        keys = kv.list(ts.KvStore.KeyRange(prefix, end)).result()
    else:
        keys = kv.list().result()
    return sorted(k.decode() for k in keys)


class Counting(KvStore):
    """A base store that records the requests it is given."""

    def __init__(self, inner: KvStore) -> None:
        super().__init__(read_only=True)
        self.inner, self.batches, self.singles = inner, [], []

    def get(self, key, byte_range=None):
        self.singles.append((key, byte_range))
        return self.inner.get(key, byte_range)

    def get_many(self, requests):
        self.batches.append(list(requests))
        return self.inner.get_many(requests)

    def list_prefix(self, prefix):
        return self.inner.list_prefix(prefix)

    def _set(self, key, value):
        raise AssertionError

    def _delete(self, key):
        raise AssertionError

    def to_json(self):
        return self.inner.to_json()


# -- values and listings --------------------------------------------------------------------
@pytest.mark.parametrize("inline", [0, 100, 1 << 20])
def test_values_and_listing_match_tensorstore(tmp_path, inline):
    kv = _ts_kv(tmp_path, config={"max_inline_value_bytes": inline,
                                  "max_decoded_node_bytes": 300})
    values = _values(400)
    _write(kv, values, per_commit=150)
    store = _zk(tmp_path)
    assert store.version.root_height >= 2  # a deep tree: interior nodes on several levels
    assert [store.get(k) for k in values] == list(values.values())
    assert list(store.list_prefix("")) == _ts_list(kv) == sorted(values)
    assert store.get("missing") is None and store.get("g1/a") is None
    assert not store.exists("g1")
    assert store.exists("zarr.json") and store.size("k0000") == len(values["k0000"])
    assert store.get_many([(k, None) for k in values]) == list(values.values())


def test_prefix_listings_match_tensorstore(tmp_path):
    kv = _ts_kv(tmp_path, config={"max_inline_value_bytes": 20, "max_decoded_node_bytes": 200})
    _write(kv, _values(300, seed=1), per_commit=100)
    store = _zk(tmp_path)
    keys = _ts_list(kv)
    for prefix in ["g0/", "g3/a2/", "g3/a2/c/", "g6/a4/c/1/", "k/", "zz/", "g1/a0/c/0/"]:
        assert sorted(store.list_prefix(prefix)) == _ts_list(kv, prefix), prefix
        files = sorted({k[len(prefix):] for k in keys
                        if k.startswith(prefix) and "/" not in k[len(prefix):]})
        dirs = sorted({k[len(prefix):].split("/")[0] for k in keys
                       if k.startswith(prefix) and "/" in k[len(prefix):]})
        assert store.list_dir(prefix) == (files, dirs), prefix


def test_listing_reads_only_the_subtrees_under_the_prefix(tmp_path):
    kv = _ts_kv(tmp_path, config={"max_decoded_node_bytes": 150, "max_inline_value_bytes": 0})
    _write(kv, {f"{p}/{i:03d}": b"x" * 10 for p in "abcdefgh" for i in range(60)})
    base = Counting(open_kvstore(_url(tmp_path))[0])
    store = OcdbtStore(base)
    everything = sum(len(b) for b in base.batches)
    list(store.list_prefix(""))
    walk_all = sum(len(b) for b in base.batches) - everything
    store2 = OcdbtStore(Counting(open_kvstore(_url(tmp_path))[0]))
    assert list(store2.list_prefix("c/")) == [f"c/{i:03d}" for i in range(60)]
    walk_c = sum(len(b) for b in store2.base.batches)
    assert walk_c * 4 < walk_all


def test_list_dir_skips_the_keys_below_each_member(tmp_path):
    """A group's members are found with one descent each, not by reading every chunk key's
    leaf; the answers are the plain listing's."""
    kv = _ts_kv(tmp_path, config={"max_decoded_node_bytes": 150, "max_inline_value_bytes": 0})
    values = {f"{p}/c/{i // 40}/{i:03d}": b"x" for p in ("a", "b", "d/e") for i in range(400)}
    values.update({"zarr.json": b"{}", "a/zarr.json": b"{}", "b\xe9/zarr.json": b"{}",
                   "d/zarr.json": b"{}", "z": b"1", "d/e/c/x": b"2"})
    _write(kv, values)
    base = Counting(open_kvstore(_url(tmp_path))[0])
    store = OcdbtStore(base)
    for prefix in ("", "a/", "d/", "d/e/", "d/e/c/", "a/c/3/", "missing/", "b\xe9/"):
        assert store.list_dir(prefix) == KvStore.list_dir(store, prefix), prefix
    assert store.list_dir("") == (["z", "zarr.json"], ["a", "b", "b\xe9", "d"])
    fresh = OcdbtStore(Counting(open_kvstore(_url(tmp_path))[0]))
    fresh.list_dir("")
    members = sum(len(b) for b in fresh.base.batches)
    everything = OcdbtStore(Counting(open_kvstore(_url(tmp_path))[0]))
    list(everything.list_prefix(""))
    assert members * 4 < sum(len(b) for b in everything.base.batches)


def test_get_many_batches_base_reads(tmp_path):
    kv = _ts_kv(tmp_path, config={"max_decoded_node_bytes": 200, "max_inline_value_bytes": 0})
    values = {f"c/{i}": bytes([i % 256]) * (i + 1) for i in range(300)}
    _write(kv, values)
    base = Counting(open_kvstore(_url(tmp_path))[0])
    store = OcdbtStore(base)
    height = store.version.root_height
    before = len(base.batches)
    assert store.get_many([(k, None) for k in values]) == list(values.values())
    # one batch a tree level, one for the values: not a read a key
    assert len(base.batches) - before == height + 2
    assert len(base.singles) == 1  # the manifest, read once when the store was opened


def test_byte_ranges_read_only_the_needed_bytes(tmp_path):
    kv = _ts_kv(tmp_path, config={"max_inline_value_bytes": 50})
    big, small = bytes(range(256)) * 4, b"0123456789"
    _write(kv, {"big": big, "small": small})
    base = Counting(open_kvstore(_url(tmp_path))[0])
    store = OcdbtStore(base)
    for value, key in ((big, "big"), (small, "small")):
        for rng in (ByteRange(5, 7), ByteRange(3), ByteRange.suffix(4), ByteRange(0, 0),
                    ByteRange(2000, 5), ByteRange(len(value) - 2, 10), ByteRange.suffix(5000)):
            assert store.get(key, rng) == rng.slice_of(value), (key, rng)
    base.batches.clear()
    assert store.get("big", ByteRange(100, 20)) == big[100:120]
    value_reads = base.batches[-1]
    assert len(value_reads) == 1 and value_reads[0][1].length == 20
    assert store.get("nothing", ByteRange(1, 2)) is None


# -- versions -------------------------------------------------------------------------------
def _commits(directory, **config):
    """A database with 20 transactions (TensorStore may commit one in several generations):
    adds, overwrites and deletes; the contents after each."""
    kv = _ts_kv(directory, config={"max_inline_value_bytes": 8, "max_decoded_node_bytes": 256,
                                   **config})
    state: dict[str, bytes] = {}
    history = {1: {}}
    for step in range(20):  # a transaction a step: one commit, one generation
        txn = ts.Transaction()
        for i in range(step * 3, step * 3 + 6):
            kv.with_transaction(txn)[f"k/{i:03d}"] = f"{step}:{i}".encode() * (1 + i % 4)
        if step % 4 == 3:
            del kv.with_transaction(txn)[f"k/{step:03d}"]
        txn.commit_async().result()
        state = {k.decode(): kv[k] for k in kv.list().result()}
        history[len(history) + 1] = state
    return kv, history


def test_every_version_by_generation(tmp_path):
    kv, _ = _commits(tmp_path, version_tree_arity_log2=1)
    dump = ts.ocdbt.dump(ts.KvStore.open(_url(tmp_path)).result()).result()
    assert dump["version_tree_nodes"]  # old versions live in version tree nodes
    latest = dump["versions"][-1]["generation_number"]
    assert latest > 20
    for generation in range(1, latest + 1):
        mine = _zk(tmp_path, version=generation)
        theirs = _ts_kv(tmp_path, version=generation)
        keys = _ts_list(theirs)
        assert list(mine.list_prefix("")) == keys, generation
        assert [mine.get(k) for k in keys] == [theirs[k.encode()] for k in keys]
    assert _zk(tmp_path).version.generation == latest
    with pytest.raises(StoreError, match=f"generation {latest + 1}"):
        _zk(tmp_path, version=latest + 1)


def _versions(directory) -> list[dict]:
    """Every version's dump entry, down the version tree too."""
    base = ts.KvStore.open(_url(directory)).result()
    dump = ts.ocdbt.dump(base).result()

    def walk(node):
        tree = ts.ocdbt.dump(base, node["location"]).result()
        for entry in tree["entries"]:
            yield from (walk(entry) if "location" in entry and tree["height"] else [entry])

    out = []
    for node in dump["version_tree_nodes"]:
        out.extend(walk(node))
    return out + dump["versions"]


def _rfc3339(ns: int) -> str:
    whole = datetime.fromtimestamp(ns // 10**9, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{whole}.{ns % 10**9:09d}Z"


def test_versions_by_commit_time(tmp_path):
    _commits(tmp_path, version_tree_arity_log2=2)
    versions = _versions(tmp_path)
    assert [v["generation_number"] for v in versions] == list(range(1, len(versions) + 1))
    for v in versions[::3]:
        at = _rfc3339(v["commit_time"])
        mine, theirs = _zk(tmp_path, version=at), _ts_kv(tmp_path, version=at)
        assert mine.version.generation == v["generation_number"]
        assert list(mine.list_prefix("")) == _ts_list(theirs)
        just_before = _rfc3339(v["commit_time"] - 1)
        if v["generation_number"] > 1:
            before = _zk(tmp_path, version=just_before)
            assert before.version.generation == v["generation_number"] - 1
            assert list(before.list_prefix("")) == _ts_list(_ts_kv(tmp_path,
                                                                   version=just_before))
    with pytest.raises(StoreError, match="at or before 1999"):
        _zk(tmp_path, version="1999-01-01T00:00:00Z")


def test_numbered_manifests(tmp_path):
    kv, history = _commits(tmp_path, manifest_kind="numbered")
    names = os.listdir(tmp_path)
    assert any(n.startswith("manifest.0") for n in names)
    store = _zk(tmp_path)
    assert store.config.manifest_kind == 1
    latest = history[max(history)]
    assert list(store.list_prefix("")) == sorted(latest) == _ts_list(kv)
    assert [store.get(k) for k in sorted(latest)] == [latest[k] for k in sorted(latest)]
    for generation in (1, 5, store.version.generation - 1):
        theirs = _ts_kv(tmp_path, version=generation)
        mine = _zk(tmp_path, version=generation)
        assert list(mine.list_prefix("")) == _ts_list(theirs)


def test_manifest_and_nodes_match_dump(tmp_path):
    kv = _ts_kv(tmp_path, config={"max_inline_value_bytes": 16, "max_decoded_node_bytes": 300,
                                  "version_tree_arity_log2": 2})
    _write(kv, _values(120, seed=3), per_commit=10)
    base = ts.KvStore.open(_url(tmp_path)).result()
    dump = ts.ocdbt.dump(base).result()
    manifest = fmt.decode_manifest((tmp_path / "manifest.ocdbt").read_bytes(), "manifest.ocdbt")
    config = manifest.config.to_json()
    assert {k: config[k] for k in dump["config"] if k != "compression"} == \
        {k: v for k, v in dump["config"].items() if k != "compression"}
    assert [(v.generation, v.commit_time, v.root_height, v.num_keys) for v in manifest.versions] \
        == [(v["generation_number"], v["commit_time"], v["root_height"],
             v["root"]["statistics"]["num_keys"]) for v in dump["versions"]]
    assert [(n.generation, n.height, n.num_generations, n.commit_time)
            for n in manifest.version_nodes] == \
        [(n["generation_number"], n["height"], n["num_generations"], n["commit_time"])
         for n in dump["version_tree_nodes"]]
    root = manifest.versions[-1].root
    assert dump["versions"][-1]["root"]["location"] == \
        f"btreenode::{root.path}:{root.offset}:{root.length}"
    assert _compare_node(tmp_path, base, root, manifest.versions[-1].root_height) == 0


def _compare_node(directory, base, ref, height) -> int:
    """Compare a node and its first descendants with the dump: the height of the last."""
    data = (directory / ref.path).read_bytes()[ref.offset:ref.offset + ref.length]
    node = fmt.decode_btree_node(data, ref.path, ref.transitive, 1 << 32)
    theirs = ts.ocdbt.dump(base, f"btreenode::{ref.path}:{ref.offset}:{ref.length}").result()
    assert node.height == theirs["height"] == height
    if height == 0:
        assert [(e.key, e.inline if e.ref is None
                 else f"value::{e.ref.path}:{e.ref.offset}:{e.ref.length}")
                for e in node.entries] == \
            [(e["key"], e.get("inline_value", e.get("indirect_value")))
             for e in theirs["entries"]]
        return height
    assert [(e.key, e.key[:e.common], f"btreenode::{e.ref.path}:{e.ref.offset}:{e.ref.length}")
            for e in node.entries] == \
        [(e["key"], e["subtree_common_prefix"], e["location"]) for e in theirs["entries"]]
    return _compare_node(directory, base, node.entries[0].ref, height - 1)


# -- zarr arrays and groups ------------------------------------------------------------------
_CODECS = {
    "plain": None,
    "zstd": [{"name": "bytes", "configuration": {"endian": "little"}},
             {"name": "zstd", "configuration": {"level": 3}}],
    "blosc": [{"name": "bytes", "configuration": {"endian": "little"}},
              {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                  "shuffle": "shuffle", "typesize": 4}}],
    "sharded": [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 5],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "zstd", "configuration": {"level": 1}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                         {"name": "crc32c"}]}}],
}


def _ts_array(directory, path, codecs, data, config=None):
    chunk = [8, 10] if codecs is _CODECS["sharded"] else [4, 5]
    metadata = {"shape": list(data.shape), "data_type": "float32",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk}}}
    if codecs:
        metadata["codecs"] = codecs
    kvstore = {"driver": "ocdbt", "base": _url(directory), "path": path}
    if config:
        kvstore["config"] = config
    array = ts.open({"driver": "zarr3", "kvstore": kvstore, "metadata": metadata,
                     "create": True}).result()
    array[...] = data
    return kvstore


@pytest.mark.parametrize("name", list(_CODECS))
def test_zarr3_arrays_written_by_tensorstore(tmp_path, name):
    data = np.random.default_rng(5).random((23, 31), dtype=np.float32)
    kvstore = _ts_array(tmp_path, f"{name}/", _CODECS[name], data,
                        config={"max_inline_value_bytes": 64, "max_decoded_node_bytes": 400})
    array = zarrkit.open({"driver": "zarr3", "kvstore": kvstore}, mode="r")
    np.testing.assert_array_equal(array[...], data)
    np.testing.assert_array_equal(array[3:17, 5:9], data[3:17, 5:9])
    by_url = zarrkit.open(f"{_url(tmp_path)}|ocdbt:{name}/", mode="r")
    np.testing.assert_array_equal(by_url[...], data)
    spec = json.loads(json.dumps({"driver": "zarr3", "kvstore": kvstore}))
    from zarrkit.spec.open import open_spec
    view = open_spec(spec, read=True)
    np.testing.assert_array_equal(view[...], data)


def test_groups_and_arrays_in_one_database(tmp_path):
    kv = _ts_kv(tmp_path)
    kv["zarr.json"] = json.dumps({"zarr_format": 3, "node_type": "group",
                                  "attributes": {"who": "ts"}}).encode()
    kv["sub/zarr.json"] = json.dumps({"zarr_format": 3, "node_type": "group"}).encode()
    a = np.arange(60, dtype=np.float32).reshape(6, 10)
    _ts_array(tmp_path, "sub/a/", None, a)
    _ts_array(tmp_path, "b/", _CODECS["zstd"], a * 2)
    root = zarrkit.open_group(f"{_url(tmp_path)}|ocdbt:", mode="r")
    assert root.attrs["who"] == "ts"
    assert sorted(root.group_keys()) == ["sub"] and sorted(root.array_keys()) == ["b"]
    np.testing.assert_array_equal(root["sub/a"][...], a)
    np.testing.assert_array_equal(root["b"][...], a * 2)


def test_zip_and_memory_bases(tmp_path):
    db = tmp_path / "db"
    data = np.arange(200, dtype=np.float32).reshape(10, 20)
    _ts_array(db, "arr/", _CODECS["zstd"], data, config={"max_inline_value_bytes": 0})
    archive = tmp_path / "db.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for root, _, files in os.walk(db):
            for f in files:
                full = os.path.join(root, f)
                zf.write(full, "inner/" + os.path.relpath(full, db))
    url = f"file://{archive}|zip:inner/|ocdbt:arr/"
    np.testing.assert_array_equal(zarrkit.open(url, mode="r")[...], data)
    assert parse_kvstore_url(url) == ts.KvStore.Spec(url).to_json()
    memory = MemoryStore.named("ocdbt-test-base")
    for root, _, files in os.walk(db):
        for f in files:
            full = os.path.join(root, f)
            memory.set("db/" + os.path.relpath(full, db), open(full, "rb").read())
    array = zarrkit.open("memory://ocdbt-test-base/db/|ocdbt:arr/", mode="r")
    np.testing.assert_array_equal(array[...], data)


def test_an_absent_database_has_no_keys(tmp_path):
    store = _zk(tmp_path)
    assert store.version is None and list(store.list_prefix("")) == []
    assert store.get("zarr.json") is None
    assert _ts_list(_ts_kv(tmp_path)) == []
    with pytest.raises(StoreError, match="no version"):
        _zk(tmp_path / "none", version=1)


# -- corruption -----------------------------------------------------------------------------
@pytest.fixture
def database(tmp_path):
    kv = _ts_kv(tmp_path / "db", config={"max_inline_value_bytes": 0,
                                         "max_decoded_node_bytes": 200})
    _write(kv, {f"k/{i:03d}": bytes([i]) * 50 for i in range(80)})
    return tmp_path / "db"


def _read_everything(database):
    store = _zk(database)
    return [store.get(k) for k in store.list_prefix("")]


@pytest.mark.parametrize("position", [0, 5, 12, 14, 20, -3])
def test_a_flipped_manifest_byte_names_the_manifest(database, position):
    path = database / "manifest.ocdbt"
    raw = bytearray(path.read_bytes())
    raw[position] ^= 0x41
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptDataError, match="manifest.ocdbt"):
        _zk(database)


def test_truncated_or_missing_files(database):
    manifest = database / "manifest.ocdbt"
    good = manifest.read_bytes()
    manifest.write_bytes(good[:-7])
    with pytest.raises(CorruptDataError, match="manifest.ocdbt"):
        _zk(database)
    manifest.write_bytes(good)
    root = _zk(database).version.root
    data = database / root.path
    content = data.read_bytes()
    data.write_bytes(content[:root.offset + root.length - 3])
    with pytest.raises(CorruptDataError, match=f"{root.path}.*truncated"):
        _read_everything(database)
    data.unlink()
    with pytest.raises(CorruptDataError, match=f"{root.path}.*missing"):
        _read_everything(database)


def test_flipped_node_bytes_name_the_data_file(database):
    store = _zk(database)
    root = store.version.root
    path = database / root.path
    content = path.read_bytes()
    for position in (0, 9, 13, root.length // 2, root.length - 1):
        raw = bytearray(content)
        raw[root.offset + position] ^= 0x10
        path.write_bytes(bytes(raw))
        with pytest.raises(CorruptDataError, match=root.path):
            _read_everything(database)
    path.write_bytes(content)
    assert len(_read_everything(database)) == 80


def _reframe(magic: int, body: bytes) -> bytes:
    """An uncompressed frame around `body`, its length and checksum right."""
    head = magic.to_bytes(4, "big") + (len(body) + 18).to_bytes(8, "little") + b"\x00\x00"
    whole = head + body
    return whole + crc32c(whole).to_bytes(4, "little")


def test_garbage_with_a_good_checksum_never_crashes(database):
    manifest = database / "manifest.ocdbt"
    frame = fmt.unframe(manifest.read_bytes(), fmt.MANIFEST_MAGIC, "manifest", "m")
    body = frame.data
    rng = np.random.default_rng(0)
    outcomes = set()
    for trial in range(300):
        raw = bytearray(body)
        for _ in range(1 + trial % 3):
            raw[int(rng.integers(0, len(raw)))] = int(rng.integers(0, 256))
        if trial % 5 == 0:
            raw = raw[:int(rng.integers(0, len(raw)))]
        manifest.write_bytes(_reframe(fmt.MANIFEST_MAGIC, bytes(raw)))
        try:
            _read_everything(database)
            outcomes.add("read")
        except ZarrkitError as exc:
            outcomes.add(type(exc).__name__)
    assert "CorruptDataError" in outcomes


def test_a_foreign_magic_is_refused(database):
    manifest = database / "manifest.ocdbt"
    frame = fmt.unframe(manifest.read_bytes(), fmt.MANIFEST_MAGIC, "manifest", "m")
    manifest.write_bytes(_reframe(fmt.BTREE_NODE_MAGIC, frame.data))
    with pytest.raises(CorruptDataError, match="bad magic"):
        _zk(database)
    manifest.write_bytes(_reframe(fmt.MANIFEST_MAGIC, frame.data))
    assert len(_read_everything(database)) == 80
    raw = bytearray(manifest.read_bytes())
    raw[-1] ^= 1
    manifest.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError, match="CRC-32C"):
        _zk(database)


# -- read-only ------------------------------------------------------------------------------
def test_writes_deletes_and_locks_are_refused(database):
    store = _zk(database)
    for call in (lambda: store.set("k/000", b"x"), lambda: store.delete("k/000"),
                 lambda: store.delete_prefix("k/"), lambda: store.replace("k/1", b"y"),
                 lambda: store.set_many([("a", b"b")]), lambda: store.lock("k/000")):
        with pytest.raises(ReadOnlyError, match="ocdbt store is read-only in zarrkit"):
            call()
    assert store.get("k/000") == bytes([0]) * 50
    with pytest.raises(ReadOnlyError, match="read-only in zarrkit"):
        open_kvstore(f"{_url(database)}|ocdbt:")
    with pytest.raises(ReadOnlyError, match="read-only in zarrkit"):
        zarrkit.open({"driver": "zarr3", "kvstore": f"{_url(database)}|ocdbt:"})


def test_arrays_refuse_writes(tmp_path):
    kvstore = _ts_array(tmp_path, "a/", None, np.zeros((4, 5), np.float32))
    array = zarrkit.open({"driver": "zarr3", "kvstore": kvstore}, mode="r")
    with pytest.raises(ReadOnlyError):
        array[0, 0] = 1


# -- specs and URLs -------------------------------------------------------------------------
@pytest.mark.parametrize("url", [
    "file:///data/db/|ocdbt:",
    "file:///data/db/|ocdbt:x/y",
    "file:///data/db/|ocdbt:a%20b/",
    "file:///data/db/|ocdbt:@v3/x",
    "file:///data/db/|ocdbt:@v7",
    "file:///data/db/|ocdbt:@2020-01-01T00:00:00Z/x",
    "file:///data/db/|ocdbt:@2020-01-01T00:00:00.123456789Z/",
    "file:///data/a.zip|zip:sub/|ocdbt:x",
    "memory://name/db/|ocdbt:x/",
])
def test_urls_parse_as_tensorstore_parses_them(url):
    mine = parse_kvstore_url(url)
    assert mine == ts.KvStore.Spec(url).to_json()
    assert parse_kvstore_url(kvstore_spec_to_url(mine)) == mine
    assert kvstore_spec_to_url(mine) == ts.KvStore.Spec(mine).url


@pytest.mark.parametrize("url", ["file:///d/|ocdbt:@x/y", "file:///d/|ocdbt:@v0/",
                                 "file:///d/|ocdbt:x?v=1", "ocdbt:x",
                                 "file:///d/|ocdbt:@2020-01-01T00:00:00+01:00/"])
def test_bad_urls_are_refused_like_tensorstore(url):
    with pytest.raises(SpecError):
        parse_kvstore_url(url)
    with pytest.raises(ValueError):
        ts.KvStore.Spec(url)


def test_store_spec_round_trips(database):
    spec = {"driver": "ocdbt", "base": {"driver": "file", "path": f"{database}/"},
            "version": 2, "config": {"max_inline_value_bytes": 0}}
    store, _ = open_kvstore(spec, read_only=True)
    assert store.to_json() == spec
    again, _ = open_kvstore(store.to_json(), read_only=True)
    assert again.version == store.version and again.version.generation == 2
    url = kvstore_spec_to_url({k: v for k, v in spec.items() if k != "config"})
    assert url == f"file://{database}/|ocdbt:@v2/"


def test_config_constraints_are_checked_as_tensorstore_does(database):
    stored = _zk(database).config.to_json()
    _zk(database, config={"uuid": stored["uuid"].upper(), "max_inline_value_bytes": 0,
                          "max_decoded_node_bytes": 200, "version_tree_arity_log2": 4,
                          "compression": {"id": "zstd"}})
    _ts_kv(database, config={"max_inline_value_bytes": 0})
    for wrong in ({"max_inline_value_bytes": 5}, {"uuid": "0" * 32},
                  {"compression": None}, {"manifest_kind": "numbered"}):
        with pytest.raises(SpecError, match="configuration mismatch"):
            _zk(database, config=wrong)
        with pytest.raises(ValueError):
            _ts_kv(database, config=wrong).list().result()


@pytest.mark.parametrize("member", [
    {"config": {"max_inline_value_bytes": -1}}, {"config": {"uuid": "xyz"}},
    {"config": {"manifest_kind": "other"}}, {"config": {"compression": {"id": "gzip"}}},
    {"config": {"nope": 1}}, {"config": 3}, {"version": 0}, {"version": "yesterday"},
    {"version": 1.5}, {"assume_config": "yes"}, {"target_data_file_size": -1},
    {"coordinator": 5}, {"cache_pool": 3}, {"unknown_member": 1},
])
def test_bad_members_are_refused(database, member):
    with pytest.raises(SpecError):
        _zk(database, **member)
    with pytest.raises(ValueError):
        ts.KvStore.Spec({"driver": "ocdbt", "base": _url(database), **member})


def test_accepted_members_and_a_coordinator(database):
    store = _zk(database, assume_config=True, target_data_file_size=1000,
                experimental_read_coalescing_threshold_bytes=100,
                cache_pool={"total_bytes_limit": 0}, coordinator="ocdbt_coordinator",
                data_copy_concurrency="data_copy_concurrency")
    assert len(list(store.list_prefix(""))) == 80
    with pytest.raises(NotSupportedError, match="coordinator"):
        _zk(database, coordinator={"address": "localhost:1234"})
    with pytest.raises(SpecError, match="requires 'base'"):
        open_kvstore({"driver": "ocdbt"}, read_only=True)


def test_copying_a_database_keeps_it_readable(database, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(database, copy)
    assert _read_everything(copy) == _read_everything(database)


def test_pickled_stores_and_arrays_read_the_same_generation(tmp_path):
    kvstore = _ts_array(tmp_path, "a/", _CODECS["zstd"], np.ones((4, 5), np.float32))
    array = zarrkit.open({"driver": "zarr3", "kvstore": kvstore}, mode="r")
    store = _zk(tmp_path)
    copy = pickle.loads(pickle.dumps(store))
    copied_array = pickle.loads(pickle.dumps(array))
    ts.open({"driver": "zarr3", "kvstore": kvstore}).result()[...] = 7  # a new commit
    again = pickle.loads(pickle.dumps(store))
    assert copy.version == again.version == store.version
    assert copy.to_json() == store.to_json() and "version" not in copy.to_json()
    assert list(again.list_prefix("")) == list(store.list_prefix(""))
    np.testing.assert_array_equal(copied_array[...], np.ones((4, 5), np.float32))
    assert _zk(tmp_path).version.generation > store.version.generation
    np.testing.assert_array_equal(zarrkit.open({"driver": "zarr3", "kvstore": kvstore},
                                               mode="r")[...], 7)


def test_closing_leaves_a_callers_base_open(tmp_path):
    kv = _ts_kv(tmp_path)
    kv["x"] = b"1"
    archive = tmp_path / "db.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(tmp_path / "manifest.ocdbt", "manifest.ocdbt")
        for name in os.listdir(tmp_path / "d"):
            zf.write(tmp_path / "d" / name, f"d/{name}")
    base = open_kvstore(str(archive), read_only=True)[0]
    OcdbtStore(base).close()
    assert OcdbtStore(base).get("x") == b"1"


def test_a_corrupt_version_tree_node_names_its_file(tmp_path):
    kv = _ts_kv(tmp_path, config={"version_tree_arity_log2": 1})
    for i in range(12):
        kv[f"k{i}"] = b"x"
    manifest = fmt.decode_manifest((tmp_path / "manifest.ocdbt").read_bytes(), "m")
    node = manifest.version_nodes[0].ref
    assert len(list(_zk(tmp_path, version=2).list_prefix(""))) == 1
    path = tmp_path / node.path
    raw = bytearray(path.read_bytes())
    raw[node.offset + node.length // 2] ^= 0x08
    path.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError, match=node.path):
        _zk(tmp_path, version=2)
    assert _zk(tmp_path).get("k11") == b"x"  # the latest version needs no version tree node


def test_a_store_made_directly_checks_its_arguments(database):
    base = open_kvstore(_url(database), read_only=True)[0]
    with pytest.raises(SpecError, match="commit time"):
        OcdbtStore(base, version="last week")
    with pytest.raises(SpecError, match="max_inline_value_bytes"):
        OcdbtStore(base, config={"max_inline_value_bytes": "many"})
    assert OcdbtStore(base, version=1).version.root is None  # TensorStore's first: empty


@pytest.mark.parametrize("declared", [True, False])
def test_a_zstd_bomb_in_a_node_is_refused_without_decoding_it(declared):
    """A node body that decodes to far more than the limit (its checksum valid: a crafted
    file) is refused, whether or not its frame declares its size, after decoding at most a
    few MiB past the limit."""
    import tracemalloc

    import zstandard

    bomb = zstandard.ZstdCompressor(write_content_size=declared).compress(bytes(256 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(CorruptDataError, match="more than 1048576 bytes"):
            fmt._unzstd(bomb, 1 << 20, fmt.Reader(b"", "d/node"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20
    assert fmt._unzstd(zstandard.ZstdCompressor().compress(b"abc" * 1000), 3000,
                       fmt.Reader(b"", "d/node")) == b"abc" * 1000

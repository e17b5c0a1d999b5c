"""README.md, executed: every ```python block runs, and what its prose promises is checked.

The README is parsed at test time, so the examples are tested as they are written.

Grouping rule: the python blocks of one `## ` section (its `### ` subsections included) run in
order in one namespace and one fresh working directory, as a reader following that section
would run them; a block may use names and files earlier blocks of its section made.

Every block must match exactly one entry of `EXAMPLES` (by a line of its code): an entry
prepares what the block reads that the README only implies exists (a bucket's data) and checks
what the block's text says it does. A block no entry matches, or an entry no block matches,
fails `test_every_block_has_an_entry`: a changed README is noticed.

Remote URLs run against loopback stand-ins: the obstore client of each store is built with
its endpoint replaced (S3 and GCS go to moto's S3 server, which also answers GCS's
S3-compatible XML API; `https://example.org` goes to a local HTTP server). The README's URLs,
bucket names and credential options are used as written (an AWS profile "dev" exists in a
credentials file the test points AWS_SHARED_CREDENTIALS_FILE at). One substitution is made:
`SCALED` shrinks the dask example's 3.2 GB array to 8 MB (every size divided by 20), so it
runs in a second. No python block is left out (`NOT_RUN` is empty).

Shell blocks: the command-line block runs command by command in-process (its /tmp/ paths
moved into the test's directory); "Two commands on a fresh machine" makes a virtual
environment and installs from an index, so it is not run as written: its parts are checked
(the demo through the installed entry point, the suite command against .ci/run).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import shlex
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarrkit
from zarrkit.kvstore import object_store

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


# -- parsing ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Block:
    section: str  # the `## ` heading the block is under
    lang: str
    code: str
    line: int  # of the opening fence, for messages


def blocks(lang: str | None = None) -> list[Block]:
    """The fenced code blocks of README.md, in order."""
    found, section, fence = [], "", None
    for number, line in enumerate(README.read_text().splitlines(), 1):
        if fence is not None:
            if line.startswith("```"):
                found.append(Block(section, fence[0], "\n".join(fence[2]), fence[1]))
                fence = None
            else:
                fence[2].append(line)
        elif line.startswith("```"):
            fence = (line[3:].strip(), number, [])
        elif line.startswith("## "):
            section = line[3:].strip()
    assert fence is None, "README.md has an unclosed code fence"
    return [b for b in found if lang is None or b.lang == lang]


def sections() -> dict[str, list[Block]]:
    out: dict[str, list[Block]] = {}
    for block in blocks("python"):
        out.setdefault(block.section, []).append(block)
    return out


def prose() -> str:
    """README.md with runs of white space made one space (claims are quoted across lines)."""
    return re.sub(r"\s+", " ", README.read_text())


def run_block(code: str, ns: dict[str, Any]) -> dict[str, Any]:
    """Run `code` statement by statement in `ns`, as a REPL would; returns each expression
    statement's value by its source text (what the README line shows)."""
    values: dict[str, Any] = {}
    for stmt in ast.parse(code).body:
        text = ast.get_source_segment(code, stmt)
        if isinstance(stmt, ast.Expr):
            values[text] = eval(compile(ast.Expression(stmt.value), "README.md", "eval"), ns)
        else:
            exec(compile(ast.Module([stmt], []), "README.md", "exec"), ns)
    return values


# -- loopback stand-ins for the remote stores ----------------------------------------------------
WEB_HOST = "https://example.org"


@dataclasses.dataclass
class Remote:
    s3: str  # moto's endpoint
    web: Any  # the HTTP server (serves `web_root`)
    web_root: Path

    def bucket(self, name: str) -> str:
        try:
            urllib.request.urlopen(urllib.request.Request(f"{self.s3}/{name}", method="PUT"))
        except urllib.error.HTTPError as e:  # made by an earlier test on this server
            if e.code != 409:
                raise
        return name

    def publish(self, local: Path, bucket: str, prefix: str) -> None:
        """Upload the tree `local` readable by anyone (moto refuses unsigned reads of private
        objects; the README reads these with "anon" / "token": "anon")."""
        self.bucket(bucket)
        for path in sorted(p for p in local.rglob("*") if p.is_file()):
            key = f"{prefix}/{path.relative_to(local).as_posix()}"
            req = urllib.request.Request(f"{self.s3}/{bucket}/{key}", data=path.read_bytes(),
                                         method="PUT", headers={
                                             "x-amz-acl": "public-read",
                                             "Content-Type": "application/octet-stream"})
            urllib.request.urlopen(req).close()


@pytest.fixture(scope="module")
def web_server(tmp_path_factory):
    from _loopback import http_server

    root = tmp_path_factory.mktemp("www")
    with http_server(str(root)) as server:
        yield server, root


@pytest.fixture
def remote(s3_endpoint, web_server, monkeypatch, tmp_path_factory):
    """Remote stores redirected to loopback; AWS credentials as a user would have them."""
    real = object_store.build_client

    def build_client(loc):
        if loc.kind in ("s3", "gcs"):
            key = "endpoint" if loc.kind == "s3" else "base_url"
            config = {**loc.options.config, key: s3_endpoint}
            if loc.kind == "s3":
                config.setdefault("region", "us-east-1")
            options = dataclasses.replace(loc.options, config=config,
                                          client={**loc.options.client, "allow_http": True})
            loc = dataclasses.replace(loc, options=options)
        elif loc.kind == "http" and loc.bucket.startswith(WEB_HOST):
            loc = dataclasses.replace(loc, bucket=web_server[0].url + loc.bucket[len(WEB_HOST):])
        return real(loc)

    monkeypatch.setattr(object_store, "build_client", build_client)
    creds = tmp_path_factory.mktemp("aws") / "credentials"
    creds.write_text("[dev]\naws_access_key_id = dev-key\naws_secret_access_key = dev-secret\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "env-key")  # for commands given no options
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    return Remote(s3_endpoint, web_server[0], web_server[1])


# -- the examples -------------------------------------------------------------------------------
def _setup_nothing(remote: Remote, work: Path) -> None:
    return None


@dataclasses.dataclass(frozen=True)
class Example:
    marker: str  # a line of the block's code (stripped) that identifies it
    check: Callable[[dict[str, Any], dict[str, Any], str, Path], None]  # ns, values, stdout, dir
    setup: Callable[[Remote, Path], None] = _setup_nothing


def _check_using_it(ns, values, out, work):
    a, b, g = ns["a"], ns["b"], ns["g"]
    data = np.random.default_rng(0).integers(0, 1000, (8192, 8192), dtype="uint16")
    assert (a.shape, a.dtype, a.chunks, a.shards) == ((8192, 8192), np.uint16, (256, 256),
                                                     (2048, 2048))
    assert a.dimension_names == ("y", "x")
    assert dict(b.attrs) == {"units": "counts", "calibrated": True}
    assert "blosc" in json.dumps(b.metadata["codecs"])
    with pytest.raises(zarrkit.ReadOnlyError):  # mode="r"
        b[0, 0] = 1
    want = {
        "b[100:300, ::4]": data[100:300, ::4],
        "b.oindex[[1, 5, 9], 0:10]": data[np.ix_([1, 5, 9], range(10))],
        "b.vindex[[1, 5, 9], [2, 3, 4]]": data[[1, 5, 9], [2, 3, 4]],
        "b[[1, 5], None, [2, 3]]": data[[1, 5], None, [2, 3]],
        "b.blocks[0, -1]": data[:2048, -2048:],  # blocks are shards here, as in zarr-python
        "b.get_orthogonal_selection(([1, 5], 0), out=np.empty(2, b.dtype))": data[[1, 5], 0],
    }
    assert set(want) <= set(values), sorted(values)
    for text, expected in want.items():
        np.testing.assert_array_equal(values[text], expected, err_msg=text)
        assert values[text].shape == expected.shape, text
    mask = np.zeros(b.shape, bool)
    mask[3, 4] = mask[7, 8000] = True
    np.testing.assert_array_equal(b.vindex[mask], data[mask])  # "b.vindex[mask]"
    info, tree = str(b.info), g.tree()
    assert "Shard shape : (2048, 2048)" in info and "uint16" in info and info in out
    assert "stored" not in info and "No. bytes stored" in str(b.info_complete())
    assert "raw" in tree and "image (100, 100) float32" in tree and str(tree) in out
    a.set_coordinate_selection(([0, 1], [0, 1]), [7, 8])  # "get/set_*_selection"
    assert b.get_coordinate_selection(([0, 1], [0, 1])).tolist() == [7, 8]


def _check_tensorstore_spec(ns, values, out, work):
    a = ns["a"]
    assert (a.shape, a.dtype) == ((100, 100), np.float32)
    codecs = [c["name"] for c in a.metadata["codecs"]]
    assert "blosc" in codecs
    a[0:2, 0:2] = 1.5  # it is open for writing and the data are where the spec says
    assert zarrkit.open(str(work / "ts.zarr"), mode="r")[1, 1] == 1.5


def _check_transaction(ns, values, out, work):
    txn, a = ns["txn"], ns["a"]
    assert txn.commit_started and txn.future.result() is None and not txn.aborted
    again = zarrkit.open(str(work / "ts.zarr"), mode="r")  # committed: on disk for every handle
    assert again.shape == (100, 50) and (again[:10] == 0).all()  # 1.5 at [0:2, 0:2] before
    assert tuple(a.resolve().result().shape) == (100, 50)


def _check_icechunk(ns, values, out, work):
    x, data = ns["x"], ns["data"]
    np.testing.assert_array_equal(x[...], data)
    assert x.chunks == (256, 256) and x.read_only
    import icechunk  # the snapshot is a committed version of the repository

    repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(work / "repo")))
    assert ns["snapshot"] in [s.id for s in repo.ancestry(branch="main")]


S3_DATA = np.arange(200 * 200, dtype="int32").reshape(200, 200)


def _setup_object_stores(remote, work):
    remote.bucket("my-bucket")
    zarrkit.save_array("s3://my-bucket/data.zarr", S3_DATA, chunks=(64, 64),
                       storage_options={"key": "k", "secret": "s"})
    zarrkit.save_array(str(work / "gs-x.zarr"), S3_DATA * 2, chunks=(100, 100))
    remote.publish(work / "gs-x.zarr", "bucket", "x.zarr")
    zarrkit.save_array(str(remote.web_root / "data" / "x.zarr"), S3_DATA * 3, chunks=(50, 50))


def _check_object_stores(ns, values, out, work):
    np.testing.assert_array_equal(values["a[0:100, 0:100]"], S3_DATA[:100, :100])
    assert ns["a"].read_only
    gs = values['zarrkit.open("gs://bucket/x.zarr", mode="r", storage_options={"token": "anon"})']
    np.testing.assert_array_equal(gs[...], S3_DATA * 2)
    web = values['zarrkit.open("https://example.org/data/x.zarr", mode="r")']
    np.testing.assert_array_equal(web[...], S3_DATA * 3)
    assert web.read_only  # "read-only; byte ranges"


#: The dask example's sizes, each divided by 20 (3.2 GB of float64 would not fit a test).
SCALED = {"(20000, 20000)": "(1000, 1000)", "chunks=(2500, 2500)": "chunks=(125, 125)",
          "chunks=(500, 500)": "chunks=(25, 25)", "shards=(5000, 5000)": "shards=(250, 250)"}


def _check_dask(ns, values, out, work):
    x, a, y = ns["x"], ns["a"], ns["y"]
    assert (a.shape, a.chunks, a.shards) == ((1000, 1000), (25, 25), (250, 250))
    data = x.compute()
    again = zarrkit.open("s3://my-bucket/big.zarr", mode="r", storage_options={"profile": "dev"})
    np.testing.assert_array_equal(again[...], data)
    assert all(size % 250 == 0 for sizes in y.chunks for size in sizes)  # whole shards
    import pickle  # "Arrays pickle as their spec (plus the store object)"

    np.testing.assert_array_equal(pickle.loads(pickle.dumps(a))[:3, :3], data[:3, :3])
    np.testing.assert_allclose(values["(y ** 2).mean().compute()"], (data ** 2).mean())


ERA5 = np.random.default_rng(1).random((2, 7, 14)).astype("float32")


def _setup_xarray(remote, work):
    import xarray as xr

    from zarrkit.xarray import to_zarr

    ds = xr.Dataset({"t2m": (("time", "latitude", "longitude"), ERA5, {"units": "K"})})
    to_zarr(ds, str(work / "era5-local.zarr"), zarr_format=2)
    remote.publish(work / "era5-local.zarr", "bucket", "era5.zarr")


def _check_xarray(ns, values, out, work):
    ds, tree = ns["ds"], ns["tree"]
    np.testing.assert_array_equal(ds["t2m"].values, ERA5)
    assert ds["t2m"].attrs["units"] == "K" and ds["t2m"].chunks is not None  # lazy (dask)
    assert tree["raw"]["image"].dims == ("y", "x")
    copy = zarrkit.open_group(str(work / "copy.zarr"), mode="r")
    assert copy.zarr_format == 3 and copy["t2m"].chunks == (1, 721, 1440)
    zp = values['xr.open_zarr("copy.zarr")']
    np.testing.assert_array_equal(zp["t2m"].values, ERA5)
    grown = zarrkit.open_group(str(work / "copy.zarr"), mode="r")["t2m"]  # append_dim="time"
    assert grown.shape == (3, 7, 14)
    np.testing.assert_array_equal(grown[2], ERA5[-1])


EXAMPLES = [
    Example('a.attrs["calibrated"] = True', _check_using_it),
    Example('"codecs": [{"name": "blosc"}]}}, create=True)', _check_tensorstore_spec),
    Example("t = a.with_transaction(txn)      # also zarrkit.open(spec, transaction=txn)",
            _check_transaction),
    Example('snapshot = session.commit("first version")', _check_icechunk),
    Example('zarrkit.open("gs://bucket/x.zarr", mode="r", storage_options={"token": "anon"})',
            _check_object_stores, _setup_object_stores),
    Example("y = to_dask(a)                                      # lazy; blocks are whole shards",
            _check_dask),
    Example('to_zarr(ds, "copy.zarr", zarr_format=3, encoding={"t2m": {"chunks": (1, 721, 1440)}})',
            _check_xarray, _setup_xarray),
]

#: Blocks that cannot run offline, with the reason (still compiled). None at present.
NOT_RUN: dict[str, str] = {}


def _example(block: Block) -> Example:
    lines = {line.strip() for line in block.code.splitlines()}
    matches = [e for e in EXAMPLES if e.marker.strip() in lines]
    assert len(matches) == 1, f"README.md line {block.line}: {len(matches)} EXAMPLES entries"
    return matches[0]


def test_every_block_has_an_entry():
    python = blocks("python")
    assert len(python) >= len(EXAMPLES)
    used = [_example(b) for b in python if b.code not in NOT_RUN]
    assert sorted(e.marker for e in used) == sorted(e.marker for e in EXAMPLES)
    for block in python:
        compile(block.code, f"README.md:{block.line}", "exec")
    for old in SCALED:  # each substitution still applies
        assert any(old in block.code for block in python), old


@pytest.mark.parametrize("section", sorted(sections()))
def test_section_runs_as_written(section, tmp_path, monkeypatch, remote, capsys):
    monkeypatch.chdir(tmp_path)
    ns: dict[str, Any] = {"__name__": "__readme__"}
    for block in sections()[section]:
        if block.code in NOT_RUN:
            continue
        example = _example(block)
        example.setup(remote, tmp_path)
        code = block.code
        for old, new in SCALED.items():
            code = code.replace(old, new)
        capsys.readouterr()
        values = run_block(code, ns)
        example.check(ns, values, capsys.readouterr().out, tmp_path)


# -- what the prose promises --------------------------------------------------------------------
# Each row: a quote of README.md (white space collapsed) and a check that fails if the quoted
# claim does not hold. A quote no longer in README.md fails too, so the table follows the text.
def _sharded(where: Any = None) -> zarrkit.Array:
    a = zarrkit.create(where if where is not None else zarrkit.kvstore.MemoryStore(),
                       shape=(8, 8), dtype="i4", chunks=(2, 2), shards=(4, 4))
    a[0, 0] = 1  # one inner chunk in one shard
    return a


def _numpy_order(p):
    np.testing.assert_array_equal(zarrkit.zeros((100, 100), chunks=(10, 10))[...], 0)
    assert zarrkit.zeros((100, 100), chunks=(10, 10)).chunks == (10, 10)
    np.testing.assert_array_equal(zarrkit.full((3,), 7)[...], [7, 7, 7])
    a = zarrkit.create((4, 4), "int32", store="x.zarr")
    assert (a.shape, a.dtype) == ((4, 4), np.int32) and (p / "x.zarr" / "zarr.json").exists()


def _store_keyword(p):
    g = zarrkit.open_group(store="g.zarr", mode="w")
    a = zarrkit.array(np.arange(3), store="a.zarr")
    assert g.path == "" and (p / "g.zarr" / "zarr.json").exists()
    np.testing.assert_array_equal(zarrkit.open("a.zarr")[...], [0, 1, 2]) and a.shape == (3,)


def _tree_group(p) -> zarrkit.Group:
    g = zarrkit.open_group("t.zarr", mode="w")
    g.create_array("raw/image", shape=(4, 4), dtype="f4", chunks=(2, 2))
    g.create_group("empty")
    return g


def _members(p):
    _tree_group(p)
    zarrkit.consolidate_metadata("t.zarr")
    g = zarrkit.open_consolidated("t.zarr")
    assert sorted(name for name, _ in g.members(max_depth=None)) == ["empty", "raw", "raw/image"]
    # from the consolidated document: no listing, so deleting the files goes unnoticed
    import shutil

    shutil.rmtree(p / "t.zarr" / "empty")
    assert "empty" in dict(g.members(max_depth=None))
    assert g.nmembers() == 2 and [a.path for a in g.array_values()] == []
    assert [a.path for a in g["raw"].array_values()] == ["raw/image"]


def _zp3_group_names(p):
    g = zarrkit.open_group("g.zarr", mode="w")
    g["name"] = np.arange(4)
    np.testing.assert_array_equal(g["name"][...], np.arange(4))
    np.testing.assert_array_equal(g.create_array("c", data=np.ones(3))[...], 1)
    assert g.zeros("z", shape=(2,))[...].tolist() == [0, 0]
    assert g.zeros(name="z2", shape=(2,)).shape == (2,)
    assert g.ones("o", shape=(2,))[...].tolist() == [1, 1]
    assert g.full("f", shape=(2,), fill_value=5)[...].tolist() == [5, 5]
    assert g.empty("e", shape=(2,)).shape == (2,)
    for maker, value in ((g.zeros_like, 0), (g.ones_like, 1), (g.full_like, 9)):
        kw = {"fill_value": 9} if value == 9 else {}
        made = maker(f"like_{value}", g["name"], **kw)
        assert made.shape == (4,) and made[...].tolist() == [value] * 4
    assert g.empty_like("like_e", g["name"]).shape == (4,)
    g.update_attributes({"k": 1})
    assert zarrkit.open_group("g.zarr").attrs["k"] == 1


def _zp3_array_names(p):
    a = _sharded()
    assert a.cdata_shape == (4, 4)
    plain = zarrkit.create(zarrkit.kvstore.MemoryStore(), shape=(4,), dtype="i4", chunks=(2,),
                           compressors=[{"name": "zstd"}])
    assert [c.to_json()["name"] if hasattr(c, "to_json") else c["name"]
            for c in map(_codec_json, plain.compressors)] == ["zstd"]
    assert plain.filters == () and _codec_json(plain.serializer)["name"] == "bytes"


def _codec_json(codec: Any) -> dict[str, Any]:
    return codec if isinstance(codec, dict) else codec.to_json()


def _zp3_top_names(p):
    g = zarrkit.create_group("g.zarr", attributes={"x": 1})
    a = zarrkit.create_array("g.zarr", name="arr", shape=(3,), dtype="i2")
    assert g.attrs["x"] == 1 and a.path == "arr" and "arr" in zarrkit.open_group("g.zarr")
    a[...] = [1, 2, 3]
    for maker, value in ((zarrkit.zeros_like, 0), (zarrkit.ones_like, 1)):
        assert maker(a)[...].tolist() == [value] * 3
    assert zarrkit.full_like(a, fill_value=4)[...].tolist() == [4] * 3
    assert zarrkit.empty_like(a).shape == (3,)
    assert "arr (3,) int16" in zarrkit.tree(zarrkit.open_group("g.zarr"))


def _zp2_create_dataset(p):
    g = zarrkit.open_group("g.zarr", mode="w")
    a = g.create_dataset("d", (3,), "i4", data=[1, 2, 3])
    assert a[...].tolist() == [1, 2, 3]
    assert g.create("c", shape=(2,), dtype="u1").shape == (2,)
    assert g.array("arr", [4, 5])[...].tolist() == [4, 5]


def _zp2_require_dataset(p):
    g = zarrkit.open_group("g.zarr", mode="w")
    g.create_dataset("d", shape=(3,), dtype="i2")
    assert g.require_dataset("d", (3,), "i4", exact=False).dtype == np.int16  # casts safely
    with pytest.raises(zarrkit.ZarrkitError, match="d"):
        g.require_dataset("d", (3,), "i4", exact=True)
    with pytest.raises(zarrkit.ZarrkitError):
        g.require_dataset("d", (3,), "i1", exact=False)  # int16 does not cast safely to int8
    assert g.require_array("d", shape=(3,), dtype="i4", exact=False).dtype == np.int16


def _zp2_group_names(p):
    g = zarrkit.open_group("g.zarr", mode="w")
    a, b = g.require_groups("a", "b/c")
    assert (a.path, b.path) == ("a", "b/c")
    g.create_array("a/x", shape=(2,), dtype="i1")
    g.move("a/x", "b/y")
    assert "y" in g["b"] and "x" not in g["a"]
    seen: list[str] = []
    g.visititems(lambda name, node: seen.append(name))
    assert sorted(seen) == ["a", "b", "b/c", "b/y"]
    names: list[str] = []
    g.visit(names.append)
    assert sorted(names) == sorted(seen)
    keys: list[str] = []
    g.visitkeys(keys.append)
    assert sorted(keys) == sorted(seen)
    values: list[Any] = []
    g.visitvalues(values.append)
    assert sorted(v.path for v in values) == sorted(seen)
    assert "Group" in str(g.info)


def _zp2_array_names(p):
    a = zarrkit.create("v2.zarr", shape=(4,), dtype="i4", chunks=(2,), zarr_format=2,
                       compressor={"id": "zlib", "level": 1}, order="F")
    assert a.order == "F" and a.compressor.get_config() == {"id": "zlib", "level": 1}
    assert zarrkit.create(zarrkit.kvstore.MemoryStore(), shape=(2,), dtype="i4").order == "C"


def _write_empty_chunks(p):
    a = zarrkit.create("e.zarr", shape=(4,), dtype="i4", chunks=(2,))
    a[...] = 0
    assert a.nchunks_initialized() == 0
    a.with_config(write_empty_chunks=True)[...] = 0
    assert a.nchunks_initialized() == 2
    b = zarrkit.create("f.zarr", shape=(4,), dtype="i4", chunks=(2,),
                       config={"write_empty_chunks": True})
    b[...] = 0
    assert b.nchunks_initialized() == 2
    c = zarrkit.open("e.zarr", config={"write_empty_chunks": False})
    c[...] = 0
    assert c.nchunks_initialized() == 0


def _inner_chunk_counts(p):
    a = _sharded("s.zarr")
    assert (a.nchunks, a.cdata_shape, a.nchunks_initialized()) == (16, (4, 4), 1)
    import zarr

    z = zarr.open_array(str(p / "s.zarr"), mode="r")
    assert z.nchunks_initialized == 4  # zarr-python: stored shards times chunks per shard
    assert (a.nshards, _call(a.nshards_initialized)) == (z._nshards, z._nshards_initialized) \
        == (4, 1)
    plain = zarrkit.create(zarrkit.kvstore.MemoryStore(), shape=(4,), dtype="i4", chunks=(2,))
    plain[0] = 1
    assert (plain.nshards, _call(plain.nshards_initialized)) == (2, 1)  # the chunk counts


def _call(value: Any) -> Any:
    return value() if callable(value) else value


def _save_and_load(p):
    zarrkit.save("s.zarr", np.arange(2), np.ones(3), name=np.zeros(1))
    got = zarrkit.load("s.zarr")
    assert sorted(got) == ["arr_0", "arr_1", "name"] and got["arr_1"].tolist() == [1, 1, 1]
    g = zarrkit.save_group("g.zarr", x=np.arange(3))
    assert isinstance(g, zarrkit.Group) and zarrkit.load("g.zarr")["x"].tolist() == [0, 1, 2]
    a = zarrkit.save_array("a.zarr", np.arange(4), chunks=(2,))
    assert a.chunks == (2,) and zarrkit.load("a.zarr").tolist() == [0, 1, 2, 3]


def _like_and_from_array(p):
    src = _sharded("src.zarr")
    filled = zarrkit.create("filled.zarr", shape=(8, 8), dtype="i4", chunks=(2, 2), fill_value=7)
    like = zarrkit.open_like(filled, "like.zarr")
    assert (like.shape, like.dtype, like.chunks, like.fill_value) == ((8, 8), np.int32, (2, 2), 7)
    copy = zarrkit.from_array("copy.zarr", data=src)
    assert (copy.chunks, copy.shards, copy[...].tolist()) == ((2, 2), (4, 4), src[...].tolist())
    import zarr

    z = zarr.create_array(str(p / "zp.zarr"), shape=(6,), chunks=(2,), dtype="u2",
                          compressors=zarr.codecs.ZstdCodec(level=3))
    z[...] = np.arange(6)
    from_zp = zarrkit.from_array("from-zp.zarr", data=z)
    assert from_zp.chunks == (2,) and "zstd" in json.dumps(from_zp.metadata["codecs"])
    assert zarrkit.from_array("told.zarr", data=src, chunks=(4, 4), shards=None).chunks == (4, 4)


def _create_hierarchy(p):
    array_doc = {"zarr_format": 3, "node_type": "array", "shape": [2], "data_type": "int8",
                 "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
                 "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
                 "codecs": [{"name": "bytes"}]}
    made = zarrkit.create_hierarchy("h.zarr", {"a/b": array_doc})
    assert isinstance(made["a/b"], zarrkit.Array) and isinstance(made["a"], zarrkit.Group)
    with pytest.raises(zarrkit.ZarrkitError):  # checked before anything is written
        zarrkit.create_hierarchy("bad.zarr", {"ok": {"zarr_format": 3, "node_type": "group"},
                                              "x": {**array_doc, "data_type": "nonsense"}})
    assert not (p / "bad.zarr" / "ok").exists()
    import zarr

    g = zarrkit.open_group("h.zarr")
    meta = zarr.core.group.GroupMetadata(attributes={"from": "zarr-python"})
    g.create_hierarchy({"c/d": meta, "e": zarrkit.open("h.zarr/a/b")})
    assert g["c/d"].attrs["from"] == "zarr-python" and g["e"].shape == (2,)


def _class_openers(p):
    g = zarrkit.Group.from_store("g.zarr", attributes={"k": 2})
    assert zarrkit.Group.open("g.zarr").attrs["k"] == 2 and g.attrs["k"] == 2
    g.create_array("a", shape=(3,), dtype="i1")
    assert zarrkit.Array.open("g.zarr/a").shape == (3,)


def _copy_from_h5py(p):
    h5py = pytest.importorskip("h5py")
    with h5py.File(p / "x.h5", "w") as f:
        f.create_dataset("grp/data", data=np.arange(6).reshape(2, 3))
        f["grp"].attrs["a"] = 1
    g = zarrkit.open_group("dest.zarr", mode="w")
    log: list[str] = []
    with h5py.File(p / "x.h5", "r") as f:
        dry = zarrkit.copy_all(f, g, dry_run=True)
        assert dry[0] >= 2 and "grp" not in g  # counted, nothing written
        zarrkit.copy_all(h5py.File(p / "x.h5"), g, log=log.append)
        assert g["grp/data"][...].tolist() == [[0, 1, 2], [3, 4, 5]] and log
        assert g["grp"].attrs["a"] == 1
        with pytest.raises(zarrkit.ZarrkitError):
            zarrkit.copy_all(f, g)  # if_exists="raise"
        zarrkit.copy_all(f, g, if_exists="replace")
        shallow = zarrkit.open_group("shallow.zarr", mode="w")
        zarrkit.copy(f["grp"], shallow, shallow=True)
        assert "grp" in shallow


def _copy_store(p):
    g = _tree_group(p)
    g["raw/image"][...] = 1
    zarrkit.copy_store(g.store, zarrkit.kvstore.FileStore(str(p / "no-data.zarr")),
                       excludes=[r"^raw/image/c/"])
    keys = {k.relative_to(p / "no-data.zarr").as_posix()
            for k in (p / "no-data.zarr").rglob("*") if k.is_file()}
    assert "raw/image/zarr.json" in keys and not any("/c/" in k for k in keys)
    zarrkit.copy_store(g.store, zarrkit.kvstore.FileStore(str(p / "only.zarr")),
                       includes=[r"^raw/image/c/"], excludes=[".*"])
    assert any("/c/" in k.as_posix() for k in (p / "only.zarr").rglob("*") if k.is_file())


def _structured(p):
    dt = np.dtype([("a", "i4"), ("b", "f8")])
    a = zarrkit.create("st.zarr", shape=(6,), dtype=dt, chunks=(2,), zarr_format=2)
    a[...] = np.array([(i, i / 2) for i in range(6)], dtype=dt)
    a.set_basic_selection(slice(None), np.full(6, 9, "i4"), fields="a")
    assert a.get_basic_selection(slice(None), fields="b").tolist() == [i / 2 for i in range(6)]
    assert a[...]["a"].tolist() == [9] * 6  # the other field kept
    rows = list(a)
    assert len(rows) == 6 and rows[3]["b"] == 1.5
    assert [r["b"] for r in a.islice(2, 4)] == [1.0, 1.5]


CLAIMS: list[tuple[str, Callable[[Path], None]]] = [
    ("`zarrkit.zeros((100, 100), chunks=(10, 10))`, `zarrkit.full((3,), 7)`, "
     "`zarrkit.create((4, 4), \"int32\", store=\"x.zarr\")`", _numpy_order),
    ("`open_group(store=...)`, `array(data, store=...)`", _store_keyword),
    ("`g.members(max_depth=None)` (paths like `\"raw/image\"`, from consolidated metadata when "
     "opened with it), `g.nmembers()`, `g.array_values()`", _members),
    ("`g[\"name\"] = data`, `g.create_array(name, data=...)`, `g.zeros(\"name\", shape=...)` "
     "(or `name=`) and `ones`/`full`/`empty`/`*_like`, `update_attributes`", _zp3_group_names),
    ("`a.cdata_shape`, `a.compressors`/`filters`/`serializer`", _zp3_array_names),
    ("`zarrkit.open_consolidated`, `create_group`, `create_array(where, name=...)`, "
     "`zeros_like` (and `ones`/`full`/`empty_like`) and `tree`", _zp3_top_names),
    ("`g.create_dataset(name, shape, dtype, data=...)` (also `g.create`, `g.array(name, data)`)",
     _zp2_create_dataset),
    ("`g.require_dataset(name, shape, dtype, exact=False)` (an existing array's data type need "
     "only cast safely, as `require_array(exact=)`)", _zp2_require_dataset),
    ("`g.require_groups(*names)`, `g.move(src, dest)`, `g.visititems(func)` (and "
     "`visit`/`visitkeys`/`visitvalues`), `g.info`", _zp2_group_names),
    ("`a.order`, `a.compressor` (v2)", _zp2_array_names),
    ("`a.with_config(write_empty_chunks=True)` (or `config=` when creating or opening)",
     _write_empty_chunks),
    ("it counts inner chunks: exactly those the stored shards' indexes hold, where zarr-python "
     "counts stored shards times chunks per shard), `a.nshards` and `a.nshards_initialized` "
     "(zarr-python's private `_nshards` and `_nshards_initialized`; for an unsharded array the "
     "chunk counts)", _inner_chunk_counts),
    ("`zarrkit.save(where, a, b, name=c)` / `save_group` (a group of arrays; `load` of a group "
     "gives them back as a dict), `save_array`", _save_and_load),
    ("`open_like(a, where)` (an array of `a`'s shape, data type, chunks and fill value) and "
     "`from_array(where, data=a)` (keeping the chunks, shards and codecs of a zarrkit or "
     "zarr-python array unless told otherwise)", _like_and_from_array),
    ("`zarrkit.create_hierarchy(where, {\"a/b\": metadata, ...})` (and `g.create_hierarchy`: "
     "documents, zarrkit nodes or zarr-python's metadata objects; implied groups added, all "
     "checked before anything is written)", _create_hierarchy),
    ("`Group.open`, `Group.from_store` and `Array.open`", _class_openers),
    ("`zarrkit.copy`/`copy_all` (from zarrkit or h5py: `zarrkit.copy_all(h5py.File(\"x.h5\"), "
     "g)`, with `if_exists`, `shallow`, `dry_run`, `log`)", _copy_from_h5py),
    ("`copy_store` (keys as stored, with `excludes`/`includes` patterns)", _copy_store),
    ("Structured (v2) arrays take `fields=` in reads and writes (a write keeps the other fields, "
     "under the chunks' locks), and `for row in a` (or `a.islice(start, end)`)", _structured),
]


# -- TensorStore's semantics ----------------------------------------------------------------------
def _ts_spec(p: Path, **metadata: Any) -> dict[str, Any]:
    meta = {"shape": [8, 8], "data_type": "int32", **metadata}
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(p / "ts.zarr")},
            "metadata": meta}


def _ts_open_modes(p):
    spec = _ts_spec(p)
    zarrkit.open(spec, create=True)[...] = 3
    with pytest.raises(zarrkit.ZarrkitError):
        zarrkit.open(spec, create=True)  # exists
    assert zarrkit.open(spec, open=True)[0, 0] == 3
    fresh = zarrkit.open(spec, create=True, delete_existing=True)
    assert fresh[0, 0] == 0
    assumed = zarrkit.open({**spec, "metadata": {**spec["metadata"], "shape": [8, 8]}},
                           assume_metadata=True)
    assert assumed.shape == (8, 8)


def _ts_schema(p):
    a = zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(p / "s")}},
                     create=True, dtype="uint8", shape=[100, 60], fill_value=5,
                     dimension_units=["4nm", None], codec={"driver": "zarr3", "codecs": [
                         "bytes", {"name": "gzip"}]},
                     chunk_layout=zarrkit.ChunkLayout(read_chunk_shape=[10, 10],
                                                      write_chunk_elements=2000))
    assert (a.dtype, a.shape, a[0, 0]) == (np.uint8, (100, 60), 5)
    assert "gzip" in json.dumps(a.metadata["codecs"])
    assert a.metadata["codecs"][0]["name"] == "sharding_indexed"  # read != write chunks
    assert a.chunk_layout.read_chunk.shape == (10, 10)
    assert a.dimension_units == (zarrkit.Unit("4nm"), None)
    d = zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "memory"}}, create=True,
                     dtype="int8", domain={"inclusive_min": [0, 0], "exclusive_max": [4, 5]})
    assert d.shape == (4, 5)


def _ts_context(p):
    ctx = zarrkit.Context({"cache_pool": {"total_bytes_limit": 1 << 20}})
    spec = {"driver": "zarr3", "kvstore": {"driver": "memory", "path": "m"},
            "metadata": {"shape": [4], "data_type": "int8"}}
    zarrkit.open(spec, create=True, context=ctx)[...] = 7
    # the same context, the same memory_key_value_store: the data are there
    assert zarrkit.open(spec, context=ctx)[...].tolist() == [7] * 4
    with pytest.raises(zarrkit.ZarrkitError):
        zarrkit.open(spec, context=zarrkit.Context())  # another context: another memory
    nosync = zarrkit.open({**_ts_spec(p), "kvstore": {"driver": "file", "path": str(p / "n"),
                                                      "file_io_sync": False}}, create=True)
    assert nosync.store.fsync is False and zarrkit.open(_ts_spec(p), create=True).store.fsync


def _ts_fill_missing(p):
    spec = {**_ts_spec(p, chunk_grid={"name": "regular",
                                      "configuration": {"chunk_shape": [4, 4]}}),
            "fill_missing_data_reads": False}
    a = zarrkit.open(spec, create=True)
    a[0:4, 0:4] = 1
    a[4:8, 0:4] = 0  # equal to the fill value: not stored, so missing
    assert a[0:4, 0:4].tolist() == [[1] * 4] * 4
    for region in ((slice(0, 4), slice(4, 8)), (slice(4, 8), slice(0, 4))):
        with pytest.raises(zarrkit.ChunkNotFoundError, match=r"c/[01]/1|c/1/0"):
            a[region]
    keep = zarrkit.open({**spec, "store_data_equal_to_fill_value": True,
                         "kvstore": {"driver": "file", "path": str(p / "keep")}}, create=True)
    keep[...] = 0
    assert keep[...].sum() == 0  # stored, so found
    assert issubclass(zarrkit.ChunkNotFoundError, FileNotFoundError)


def _ts_describe_and_pickle(p):
    import pickle

    a = zarrkit.open(_ts_spec(p), create=True, dimension_units=["1m", "2s"])
    a[...] = 4
    assert a.spec().to_json()["driver"] == "zarr3"
    assert a.schema.dtype == "int32" and a.domain.shape == (8, 8)
    assert a.chunk_layout.write_chunk.shape == (8, 8) and len(a.dimension_units) == 2
    again = pickle.loads(pickle.dumps(a))
    assert again[...].sum() == 4 * 64
    mem = zarrkit.open({"driver": "zarr3", "kvstore": {"driver": "memory"}}, create=True,
                       dtype="int8", shape=[2])
    with pytest.raises(zarrkit.UnpicklableError):
        pickle.dumps(mem)
    assert issubclass(zarrkit.UnpicklableError, TypeError)


def _ts_spec_object(p):
    spec = zarrkit.Spec({**_ts_spec(p), "metadata": {
        "shape": [8, 6], "data_type": "float32", "fill_value": 1.5,
        "dimension_names": ["y", "x"], "codecs": [{"name": "bytes"}, {"name": "zstd"}],
        "attributes": {"dimension_units": ["4 nm", None]},
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3]}}}})
    assert spec.rank == 2 and spec.dtype == "float32" and spec.domain.shape == (8, 6)
    assert spec.schema.dtype == "float32" and spec.chunk_layout.read_chunk.shape == (4, 3)
    assert "zstd" in json.dumps(spec.codec.to_json()) and float(spec.fill_value) == 1.5
    assert spec.transform.domain.labels == ("y", "x")
    assert spec.dimension_units == (zarrkit.Unit("4nm"), None)
    assert not (p / "ts.zarr").exists()  # described, nothing opened


def _ts_views(p):
    a = zarrkit.open(_ts_spec(p), create=True)
    data = np.arange(64, dtype="int32").reshape(8, 8)
    a[...] = data
    future = a.view[2:6, ::2].translate_to[0].T.read()
    np.testing.assert_array_equal(future.result(), data[2:6, ::2].T)
    import asyncio

    async def read():
        return await a.view[0:2, 0:2].read()

    np.testing.assert_array_equal(asyncio.run(read()), data[0:2, 0:2])
    assert a.translate_to[5].domain.inclusive_min == (5, 5)  # a view from the array too
    assert a.translate_by[1, 2].domain.inclusive_min == (1, 2)
    assert a.translate_backward_by[1].domain.inclusive_min == (-1, -1)
    assert a.label["y", "x"].domain.labels == ("y", "x")
    assert a.T.shape == (8, 8) and a.mark_bounds_implicit[:].domain.shape == (8, 8)
    np.testing.assert_array_equal(a.oindex[[1, 2], [3]], data[np.ix_([1, 2], [3])])
    np.testing.assert_array_equal(a.vindex[[1, 2], [3, 4]], data[[1, 2], [3, 4]])
    np.testing.assert_array_equal(a.view.oindex[[1, 2], [3]].read().result(),
                                  data[np.ix_([1, 2], [3])])
    _call(getattr(a.resize(exclusive_max=[10, 8]), "result", None))
    assert zarrkit.open(str(p / "ts.zarr")).shape == (10, 8)
    assert zarrkit.open(str(p / "ts.zarr")).view.resize(exclusive_max=[12, 8]).shape == (12, 8)
    with pytest.raises(zarrkit.SelectionError, match="explicit"):  # [0, 4) is explicit
        zarrkit.open(str(p / "ts.zarr")).view[0:4].resize(exclusive_max=[6, 8])


def _ts_dim_expressions(p):
    d = zarrkit.d
    a = zarrkit.open(_ts_spec(p), create=True).label["y", "x"]
    data = np.arange(64, dtype="int32").reshape(8, 8)
    a[...] = data
    np.testing.assert_array_equal(a[d["y"][2:5]].read().result(), data[2:5])
    np.testing.assert_array_equal(a[d[-1][1]].read().result(), data[:, 1])
    np.testing.assert_array_equal(a[d[0, "x"].stride[2]].read().result(), data[::2, ::2])
    np.testing.assert_array_equal(a[d[:].transpose[1, 0]].read().result(), data.T)
    np.testing.assert_array_equal(a[d[0:2].diagonal].read().result(), np.diag(data))
    np.testing.assert_array_equal(a[d[0, 1].oindex[[1, 2], [0]]].read().result(),
                                  data[np.ix_([1, 2], [0])])
    np.testing.assert_array_equal(a[d[0, 1].vindex[[1, 2], [0, 3]]].read().result(),
                                  data[[1, 2], [0, 3]])
    assert a[d[0, -1][None]].rank == 4
    assert a[d["x"].label["w"]].domain.labels == ("y", "w")
    assert a[d["x"].translate_by[3]].domain.inclusive_min == (0, 3)
    assert a[d["x"].translate_backward_by[3]].domain.inclusive_min == (0, -3)
    assert a[d["x"].mark_bounds_implicit[:]].shape == (8, 8)
    view = a[d["x", "y"].translate_to[0].transpose[1, 0]]
    assert isinstance(view, zarrkit.View)
    a[d["y"][2:5]] = 0
    assert a[...].read().result()[2:5].sum() == 0 and a[...].read().result()[5:].sum() > 0


def _ts_cast(p):
    base = zarrkit.open(_ts_spec(p, data_type="float64"), create=True)
    base[...] = -1.7
    c = zarrkit.cast(base.view[1:3], "int32")
    assert c.read().result().tolist() == [[-1] * 8] * 2  # floats truncate
    c[...] = 300
    assert base[1, 0] == 300.0
    u8 = zarrkit.cast(base, "uint8")
    assert u8.read().result()[1, 0] == 44  # integers wrap: 300 -> 44
    text = zarrkit.cast(base, "string")
    assert text.read().result()[1, 0] in ("300", "300.0", b"300")
    with pytest.raises(zarrkit.ZarrkitError):
        text[0, 0] = "1"  # numbers to text: read only
    spec = c.spec().to_json()
    assert spec["driver"] == "cast" and spec["dtype"] == "int32"
    assert zarrkit.open(spec).read().result().tolist() == [[300] * 8] * 2


CLAIMS += [
    ("open modes (`open`, `create`, `delete_existing`, `assume_metadata`)", _ts_open_modes),
    ("schema constraints (`dtype`, `shape`, `domain`, `chunk_layout= zarrkit.ChunkLayout("
     "read_chunk_shape=..., write_chunk_elements=...)`, `codec`, `fill_value`, "
     "`dimension_units`), the same chunk shapes and metadata defaults on create (sharding "
     "inserted when read and write chunks differ)", _ts_schema),
    ("a `context` with a decoded-chunk `cache_pool` (and its resources: a spec's `memory` kvstore "
     "is its context's `memory_key_value_store`, a `file` kvstore fsyncs unless `file_io_sync` is "
     "false", _ts_context),
    ("`fill_missing_data_reads: false` (a read touching a chunk that is not stored, or an inner "
     "chunk its shard lacks, raises `zarrkit.ChunkNotFoundError` naming it, rather than returning "
     "the fill value; chunks equal to the fill value are not stored unless "
     "`store_data_equal_to_fill_value` is true", _ts_fill_missing),
    ("describes itself (`a.spec()`, `a.schema`, `a.domain`, `a.chunk_layout`, "
     "`a.dimension_units`) and pickles as its spec (one on a memory store raises "
     "`zarrkit.UnpicklableError`, a `TypeError`", _ts_describe_and_pickle),
    ("a `zarrkit.Spec(json)` describes what it would open before opening anything (`.schema`, "
     "`.domain`, `.rank`, `.dtype`, `.chunk_layout`, `.codec`, `.fill_value`, "
     "`.dimension_units`, `.transform`)", _ts_spec_object),
    ("`a.view[10:20, ::2].translate_to[0].T.read()` returns a future (`.result()`, or `await` it "
     "in asyncio code); `a.resize(exclusive_max=[...])`, and a view's `resize` with "
     "TensorStore's rules (only implicit bounds change, and only where the view covers the "
     "whole array)", _ts_views),
    ("`zarrkit.d` selects dimensions by index (negative ones from the end), label or range "
     "(`d[0, \"y\"]`, `d[1:3]`, `d[:]`)", _ts_dim_expressions),
    ("`zarrkit.cast(a.view[1:3], \"int32\")` is TensorStore's `ts.cast`", _ts_cast),
]


# -- where a node lives ---------------------------------------------------------------------------
def _local_places(p):
    data = np.arange(6, dtype="i2")
    from zarrkit.kvstore import FileStore, MemoryStore, ZipStore

    zarrkit.save_array("plain", data)
    places = ["plain", f"file://{p}/plain", {"driver": "file", "path": str(p / "plain")},
              FileStore(str(p / "plain"))]
    for where in places:
        np.testing.assert_array_equal(zarrkit.open(where, mode="r")[...], data)
    zarrkit.save_array("memory://readme/x", data)
    np.testing.assert_array_equal(zarrkit.open("memory://readme/x", mode="r")[...], data)
    mem = MemoryStore()
    zarrkit.save_array(mem, data)
    np.testing.assert_array_equal(zarrkit.open(mem, mode="r")[...], data)
    zarrkit.save_array("x.zip", data, path="inner/path")  # save closes the archive it opened
    np.testing.assert_array_equal(zarrkit.open(f"file://{p}/x.zip|zip:inner/path",
                                               mode="r")[...], data)
    with ZipStore(str(p / "x.zip"), mode="r") as z:
        np.testing.assert_array_equal(zarrkit.open(z, path="inner/path", mode="r")[...], data)


def _foreign_places(p):
    import fsspec
    import zarr
    import zarr.storage

    data = np.arange(4, dtype="u1")
    mapping: dict[str, bytes] = {}
    zarrkit.save_array(mapping, data)
    assert "zarr.json" in mapping and zarrkit.open(mapping, mode="r")[...].tolist() == [0, 1, 2, 3]
    fmap = fsspec.get_mapper("memory://readme-fsspec")
    zarrkit.save_array(fmap, data)
    assert zarrkit.open(fsspec.get_mapper("memory://readme-fsspec"), mode="r")[3] == 3
    refs = {"version": 1, "refs": {k: v.decode() if k.endswith(".json") else
                                   [str(p / "ref.zarr" / k)] for k, v in mapping.items()}}
    zarrkit.save_array("ref.zarr", data)
    ref = fsspec.get_mapper("reference://", fo=refs)
    assert zarrkit.open(ref, mode="r")[...].tolist() == [0, 1, 2, 3]  # kerchunk's maps
    stores = [zarr.storage.LocalStore(str(p / "zp-local")), zarr.storage.MemoryStore(),
              zarr.storage.FsspecStore.from_url("memory://readme-zp-fsspec"),
              zarr.storage.LoggingStore(zarr.storage.MemoryStore())]
    for store in stores:  # the same data, seen by both libraries
        zarrkit.save_array(store, data)
        assert zarr.open_array(store)[...].tolist() == [0, 1, 2, 3], store
    zarrkit.save_array(zarr.storage.ZipStore(str(p / "zp.zip"), mode="w"), data)
    with zarr.storage.ZipStore(str(p / "zp.zip"), mode="r") as z:
        assert zarr.open_array(z, mode="r")[...].tolist() == [0, 1, 2, 3]
    from obstore.store import LocalStore

    (p / "obs").mkdir()
    zarrkit.save_array(LocalStore(str(p / "obs")), data)
    assert zarrkit.open(str(p / "obs"), mode="r")[...].tolist() == [0, 1, 2, 3]
    obj = zarr.storage.ObjectStore(LocalStore(str(p / "obs")), read_only=True)
    assert zarrkit.open(obj, mode="r")[...].tolist() == [0, 1, 2, 3]


def _remote_urls(p):
    from zarrkit.kvstore import ObjectStore, open_kvstore

    anon = {"anon": True}
    for url, opts in (("s3://b/x", anon), ("gs://b/x", {"token": "anon"}),
                      ("az://container/x", {"anon": True, "account_name": "acct"}),
                      ("abfs://container@acct.dfs.core.windows.net/x", anon),
                      ("https://example.org/x", None)):
        store, _ = open_kvstore(url, storage_options=opts)  # no request is made
        assert isinstance(store, ObjectStore), url
    store, _ = open_kvstore("s3://b/my%20data", storage_options=anon)
    assert store.to_json()["path"].rstrip("/") == "my data"
    assert open_kvstore("s3://b/my data", storage_options=anon)[0].to_json() == store.to_json()
    assert "s3://b/my%20data" in repr(store)  # printed encoded
    assert zarrkit.kvstore.kvstore_to_url(store) == "s3://b/my%20data"


def _remote_failures(p):
    from zarrkit.kvstore._remote_options import RemoteOptions, s3_options

    assert RemoteOptions().max_retries == 3 and s3_options({"anon": True}).max_retries == 3
    with pytest.raises(zarrkit.CredentialsError, match="S3 credentials"):
        s3_options({"key": "only the key"})


def _http_and_errors(p, remote):
    from zarrkit.errors import NotSupportedError

    g = zarrkit.open_group(str(remote.web_root / "site" / "g.zarr"), mode="w")
    g.create_array("a", shape=(2,), dtype="i1")
    zarrkit.save_array(str(remote.web_root / "forbidden" / "x.zarr"), np.arange(2))
    url = f"{WEB_HOST}/site/g.zarr"
    with pytest.raises(NotSupportedError, match="listing"):
        list(zarrkit.open_group(url, mode="r"))
    zarrkit.consolidate_metadata(str(remote.web_root / "site" / "g.zarr"))
    assert list(zarrkit.open_group(url, mode="r")) == ["a"]
    with pytest.raises(zarrkit.PermissionDeniedError,
                       match=r"cannot read '[^']+' in https://example.org/forbidden/x\.zarr"):
        zarrkit.open(f"{WEB_HOST}/forbidden/x.zarr", mode="r")
    from _loopback import free_port

    nobody = f"http://127.0.0.1:{free_port()}/x.zarr"  # nothing listens there
    with pytest.raises(zarrkit.StoreUnreachableError, match=r"cannot read .*x\.zarr"):
        zarrkit.open(nobody, mode="r", storage_options={"max_retries": 1, "retry_timeout": 2})


def _printed_urls(p, remote):
    remote.bucket("bucket")
    a = zarrkit.create("s3://bucket/my%20data", shape=(2,), dtype="i1", storage_options={
        "key": "k", "secret": "s"})
    assert a.store.to_json()["path"].rstrip("/") == "my data"
    assert "s3://bucket/my%20data" in repr(a.store)


def _notebook_display(p):
    g = _tree_group(p)
    html = g["raw/image"]._repr_html_()
    assert "<table" in html and "(4, 4)" in html
    assert "image" in g._repr_html_()


CLAIMS += [
    ("a path, `file://` and `memory://name` URLs, a `.zip` file (or "
     "`file:///x.zip|zip:inner/path`)", _local_places),
    ("a TensorStore kvstore dict, or a store object (`zarrkit.kvstore.FileStore`, `MemoryStore`, "
     "`ZipStore`, `ObjectStore`)", _local_places),
    ("a dict (or any mapping of keys to bytes), an fsspec map (`fsspec.get_mapper(url)`, "
     "kerchunk's `reference://` maps too", _foreign_places),
    ("zarr-python 3's `LocalStore`, `MemoryStore`, `FsspecStore`, `ObjectStore`, `ZipStore` (the "
     "same data, seen by both libraries)", _foreign_places),
    ("`s3://`, `gs://`, `az://`/`abfs://` and `https://` URLs", _remote_urls),
    ("(`s3://b/my%20data` is the prefix `my data`; a literal space works too), and the URLs "
     "zarrkit prints encode them the same way", _remote_urls),
    ("`CredentialsError`, `PermissionDeniedError`, `StoreUnreachableError` (after "
     "`max_retries`, default 3, with backoff)", _remote_failures),
    ("In a notebook, arrays and groups display as a table and a member tree.",
     _notebook_display),
]

# -- "Supported" ----------------------------------------------------------------------------------
ML_TYPES = ["bfloat16", "int2", "int4", "float4_e2m1fn", "float8_e3m4", "float8_e4m3fn",
            "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2", "float8_e5m2fnuz",
            "float8_e8m0fnu"]


def _data_types(p):
    core = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float16", "float32", "float64", "complex64", "complex128", "r8", "r16"]
    for zarr_format, names in ((3, core + ML_TYPES), (2, ML_TYPES)):
        for name in names:
            a = zarrkit.create(zarrkit.kvstore.MemoryStore(), shape=(2,), dtype=name,
                               zarr_format=zarr_format)
            a[...] = a[...]  # written and read back
            assert a.shape == (2,), name
    for name, fill in (("float32", "NaN"), ("float64", "-Infinity"), ("float32", "0x7fc00001"),
                       ("complex64", [1.0, "NaN"]), ("r16", [1, 2]), ("uint64", 2**64 - 1)):
        zarrkit.create(zarrkit.kvstore.MemoryStore(), shape=(1,), dtype=name, fill_value=fill)


def _string_and_time_types(p):
    for dtype, value in (("string", "héllo"), ("variable_length_bytes", b"\x00b"),
                         ("U3", "abc"), ("S2", b"ab"), ("datetime64[5s]", "NaT"),
                         ("timedelta64[ms]", 7), (np.dtype([("a", "i2"), ("b", "U2")]), None)):
        a = zarrkit.create(zarrkit.kvstore.MemoryStore(), shape=(1,), dtype=dtype)
        if value is not None:
            a[0] = value
            assert str(a[0]) == str(np.asarray(value, a.dtype)) or a[0] == value, dtype
    t = zarrkit.create(zarrkit.kvstore.MemoryStore(), shape=(1,), dtype="datetime64[s]")
    assert np.isnat(t[0])  # NaT fill by default


CODEC_CHAINS = {
    "bytes": [{"name": "bytes", "configuration": {"endian": "big"}}],
    "transpose": [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes"}],
    "gzip": [{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}],
    "blosc": [{"name": "bytes"}, {"name": "blosc", "configuration": {
        "cname": "zstd", "clevel": 1, "shuffle": "bitshuffle", "typesize": 4, "blocksize": 0}}],
    "zstd": [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 1}}],
    "crc32c": [{"name": "bytes"}, {"name": "crc32c"}],
    "sharding_indexed": [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2, 2], "index_location": "start", "codecs": [{"name": "bytes"}],
        "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}]}}],
    "numcodecs.delta": [{"name": "numcodecs.delta", "configuration": {"dtype": "<i4"}},
                        {"name": "bytes"}],
    "numcodecs.zlib": [{"name": "bytes"}, {"name": "numcodecs.zlib"}],
    "numcodecs.lz4": [{"name": "bytes"}, {"name": "numcodecs.lz4"}],
    "numcodecs.bz2": [{"name": "bytes"}, {"name": "numcodecs.bz2"}],
    "numcodecs.lzma": [{"name": "bytes"}, {"name": "numcodecs.lzma"}],
    "numcodecs.shuffle": [{"name": "bytes"}, {"name": "numcodecs.shuffle"}],
}


def _codecs(p):
    data = np.arange(16, dtype="<i4").reshape(4, 4)
    for name, chain in CODEC_CHAINS.items():
        a = zarrkit.create(zarrkit.kvstore.MemoryStore(), shape=(4, 4), dtype="i4",
                           chunks=(4, 4), codecs=chain)
        a[...] = data
        np.testing.assert_array_equal(a[...], data, err_msg=name)
    import zarr

    z = zarrkit.create("zp-codec.zarr", shape=(4,), dtype="i4",
                       compressors=zarr.codecs.BloscCodec(cname="zstd", clevel=3))
    assert "blosc" in json.dumps(z.metadata["codecs"])


def _switches(p):
    code = ("from zarrkit.codecs import _libzstd, _runs; from zarrkit.kvstore import _file_batch;"
            "print(_libzstd.available, _runs.blosc_decoder is None, _file_batch.AVAILABLE)")
    env = {**os.environ, "ZARRKIT_SYSTEM_ZSTD": "0", "ZARRKIT_CHUNK_RUNS": "0",
           "ZARRKIT_FILE_BATCHES": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True", "False"]


def _errors(p):
    e = zarrkit.errors
    pairs = [(e.SelectionError, IndexError), (e.SelectionTypeError, TypeError),
             (e.SelectionValueError, ValueError), (e.DataTypeError, ValueError),
             (e.CodecError, ValueError), (e.CastTypeError, TypeError),
             (e.CastOverflowError, OverflowError), (e.NodeNotFoundError, KeyError),
             (e.StoreError, OSError), (e.ChunkNotFoundError, FileNotFoundError),
             (e.UnpicklableError, TypeError), (e.SpecError, ValueError)]
    for cls, builtin in pairs:
        assert issubclass(cls, builtin) and issubclass(cls, zarrkit.ZarrkitError), cls
    a = zarrkit.create(zarrkit.kvstore.MemoryStore(), shape=(4,), dtype="uint8")
    f = zarrkit.create(zarrkit.kvstore.MemoryStore(), shape=(4,), dtype="float32")
    for mistake, cls in ((lambda: a[1.5:], e.SelectionTypeError), (lambda: a[::0],
                         e.SelectionValueError), (lambda: a.__setitem__(slice(0, 2), [1, 2, 3]),
                         e.SelectionValueError), (lambda: f.__setitem__(0, 1j), e.CastTypeError),
                         (lambda: a.__setitem__(0, 300), e.CastOverflowError),
                         (lambda: a[7], e.SelectionError)):
        with pytest.raises(cls):
            mistake()


def _docs_exist(p):
    for name in ("docs/v2.md", "docs/concurrency.md", "docs/architecture.md",
                 "benchmarks/README.md"):
        assert (ROOT / name).is_file(), name
    for name in ("zarrkit.convert", "zarrkit.upgrade_metadata"):
        assert callable(eval(name, {"zarrkit": zarrkit}))


def _v2_and_convert(p):
    v2 = zarrkit.create("v2.zarr", shape=(4,), dtype=">i4", chunks=(2,), zarr_format=2,
                        order="F", filters=[{"id": "delta", "dtype": ">i4"}],
                        compressor={"id": "blosc"}, dimension_names=["t"])
    v2[...] = [1, 2, 3, 4]
    assert json.loads((p / "v2.zarr" / ".zattrs").read_text())["_ARRAY_DIMENSIONS"] == ["t"]
    assert zarrkit.open("v2.zarr").dimension_names == ("t",)
    v3 = zarrkit.convert("v2.zarr", "v3.zarr")
    assert v3.zarr_format == 3 and v3[...].tolist() == [1, 2, 3, 4]
    up = zarrkit.upgrade_metadata("v2.zarr")
    assert up.zarr_format == 3 and zarrkit.open("v2.zarr")[...].tolist() == [1, 2, 3, 4]


def _fill_chunks_not_stored(p):
    a = zarrkit.create("f.zarr", shape=(4,), dtype="i4", chunks=(2,))
    a[...] = 5
    assert a.nchunks_initialized() == 2
    a[0:2] = 0  # overwritten with the fill value: deleted
    assert a.nchunks_initialized() == 1


CLAIMS += [
    ("Data types: bool, int8–64, uint8–64, float16/32/64, complex64/128, raw `r8`, `r16`",
     _data_types),
    ("and TensorStore's `bfloat16`, `int2`, `int4`, `float4_e2m1fn` and `float8_*` (`e3m4`, "
     "`e4m3fn`, `e4m3fnuz`, `e4m3b11fnuz`, `e5m2`, `e5m2fnuz`, `e8m0fnu`; v3 and v2", _data_types),
    ("zarr-python's string and bytes types: `string` and `variable_length_bytes`",
     _string_and_time_types),
    ("Codecs: `bytes`, `transpose`, `gzip`, `blosc`, `zstd`", _codecs),
    ("Codec arguments also take zarr-python's codec objects "
     "(`compressors=zarr.codecs.BloscCodec(...)`)", _codecs),
    ("`ZARRKIT_SYSTEM_ZSTD=0` turns the first off", _switches),
    ("`ZARRKIT_CHUNK_RUNS=0` turns it off", _switches),
    ("`ZARRKIT_FILE_BATCHES=0` turns it off", _switches),
    ("`SelectionError` is an `IndexError` (`SelectionTypeError` a `TypeError` too, for a float "
     "slice bound; `SelectionValueError` a `ValueError`, for a zero step or a value that does "
     "not broadcast to the selection)", _errors),
    ("`NodeNotFoundError` a `KeyError`, `StoreError` an `OSError` (`ChunkNotFoundError` a "
     "`FileNotFoundError`", _errors),
    ("See `docs/v2.md`.", _docs_exist),
    ("See `docs/architecture.md`", _docs_exist),
    ("`_ARRAY_DIMENSIONS` as `dimension_names`", _v2_and_convert),
    ("`zarrkit.convert` / `zarrkit.upgrade_metadata` (and `zarrkit convert`) move hierarchies to "
     "v3", _v2_and_convert),
    ("Chunks equal to the fill value are not stored, and are deleted when overwritten with it "
     "(`write_empty_chunks=True` keeps them).", _fill_chunks_not_stored),
]

#: Claims checked against the loopback servers.
REMOTE_CLAIMS = [
    ("plain HTTP cannot list, so groups there need it: `zarrkit.consolidate_metadata(where)`), "
     "and failures name the key: `CredentialsError`, `PermissionDeniedError`, "
     "`StoreUnreachableError`", _http_and_errors),
    ("the URLs zarrkit prints encode them the same way", _printed_urls),
]


def _by_check(claims: list[tuple[str, Callable[..., None]]]) -> list[Any]:
    """One test per check, with every quote it backs."""
    quotes: dict[Callable[..., None], list[str]] = {}
    for quote, check in claims:
        quotes.setdefault(check, []).append(quote)
    return [pytest.param(tuple(q), check, id=check.__name__.strip("_"))
            for check, q in quotes.items()]


def _assert_quoted(quotes: tuple[str, ...]) -> None:
    text = prose()
    for quote in quotes:
        assert re.sub(r"\s+", " ", quote) in text, f"README.md no longer says: {quote}"


@pytest.mark.parametrize("quotes, check", _by_check(CLAIMS))
def test_claim(quotes, check, tmp_path, monkeypatch):
    _assert_quoted(quotes)
    monkeypatch.chdir(tmp_path)
    check(tmp_path)


@pytest.mark.parametrize("quotes, check", _by_check(REMOTE_CLAIMS))
def test_remote_claim(quotes, check, tmp_path, monkeypatch, remote):
    _assert_quoted(quotes)
    monkeypatch.chdir(tmp_path)
    check(tmp_path, remote)

# -- the shell blocks -----------------------------------------------------------------------------
def _commands(block: Block) -> list[list[str]]:
    """The command lines of a shell block (comments and comment-only lines dropped)."""
    return [argv for line in block.code.splitlines() if (argv := shlex.split(line, comments=True))]


def _cli_block() -> Block:
    found = [b for b in blocks("sh") if any(argv[:2] == ["zarrkit", "info"]
                                            for argv in _commands(b))]
    assert len(found) == 1
    return found[0]


def _zarrkit(argv: list[str], capsys) -> tuple[int, str]:
    from zarrkit.cli import main

    capsys.readouterr()
    try:
        status = main(argv)
    except SystemExit as e:  # argparse's --help
        status = e.code
    return status, capsys.readouterr().out


def test_every_command_helps_and_takes_json(capsys):
    from zarrkit.cli import build_parser

    listed = {argv[1] for argv in _commands(_cli_block())}
    commands = set(build_parser()._subparsers._group_actions[0].choices)
    assert listed == commands  # the README shows every command, and no other
    remote = {"info", "tree", "copy", "verify"}  # as the README says
    for name in sorted(commands):
        status, out = _zarrkit([name, "--help"], capsys)
        assert status == 0 and "--json" in out, name
        assert ("--storage-options" in out) == (name in remote), name
    assert "--dst-storage-options" in _zarrkit(["copy", "--help"], capsys)[1]


def test_command_line_block_runs(tmp_path, monkeypatch, remote, capsys):
    """Each command of the README's block, as written, on small local inputs it names."""
    monkeypatch.chdir(tmp_path)
    data = np.arange(512 * 512, dtype="uint16").reshape(512, 512)
    zarrkit.save_array("data.zarr", data, chunks=(256, 256))
    remote.publish(tmp_path / "data.zarr", "bucket", "data.zarr")  # read with "anon"
    zarrkit.save_array("v2.zarr", data[:4], zarr_format=2)
    killed = tmp_path / "data.zarr" / "c" / ".0.0123456789abcdef.partial"  # a killed writer's
    killed.write_bytes(b"x")
    os.utime(killed, (0, 0))  # "not modified for an hour"
    outputs = {}
    for argv in _commands(_cli_block()):
        argv = [a.replace("/tmp/", f"{tmp_path}/") for a in argv]  # keep /tmp clean
        status, out = _zarrkit(argv[1:], capsys)
        assert status == 0, (argv, out)
        outputs[argv[1]] = out
    # "shape, dtype, codecs, chunks/shards, stored bytes, compression ratio"
    for row in ("Shape            : (512, 512)", "Data type        : uint16", "Codecs",
                "Chunk shape      : (256, 256)", "No. bytes stored", "Storage ratio"):
        assert row in outputs["info"], row
    assert outputs["tree"] == "/ (512, 512) uint16\n"
    copy = zarrkit.open("s3://bucket/copy.zarr", mode="r", storage_options={"profile": "dev"})
    assert (copy.shards, copy.chunks) == ((4096, 4096), (256, 256))
    np.testing.assert_array_equal(copy[...], data)
    assert zarrkit.open("v3.zarr").zarr_format == 3
    assert json.loads(outputs["verify"])["ok"] is True
    assert not killed.exists() and "removed 1 leftover(s) of unfinished writes" in outputs["clean"]
    assert zarrkit.open("demo.zarr").shards is not None and "values match" in outputs["demo"]


def test_verify_exit_status_names_damaged_keys(tmp_path, capsys):
    a = zarrkit.create(str(tmp_path / "d.zarr"), shape=(4,), dtype="i4", chunks=(2,),
                       codecs=[{"name": "bytes"}, {"name": "crc32c"}])
    a[...] = 1
    chunk = tmp_path / "d.zarr" / "c" / "1"
    chunk.write_bytes(b"\xff" + chunk.read_bytes()[1:])
    status, out = _zarrkit(["verify", str(tmp_path / "d.zarr"), "--json"], capsys)
    assert status == 1 and "c/1" in out and json.loads(out)["ok"] is False


# -- "Two commands on a fresh machine" and the benchmarks -----------------------------------------
def test_two_commands_on_a_fresh_machine(tmp_path):
    """Not run as written (it makes a virtual environment and installs from an index): each
    part is checked instead. The demo command runs through the installed entry point."""
    fresh = [b for b in blocks("sh") if b.section == "Two commands on a fresh machine"]
    assert len(fresh) == 2
    demo, suite = (" ".join(" ".join(argv) for argv in _commands(b)) for b in fresh)
    assert "pip install -q ." in demo and ".venv/bin/zarrkit demo /tmp/zarrkit-demo.zarr" in demo
    ci = (ROOT / ".ci" / "run").read_text()
    assert fresh[1].code.strip() in ci  # "this is what .ci/run runs"
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["zarrkit"] == "zarrkit.cli:main" and "test" in \
        project["optional-dependencies"]
    tests = " ".join(project["optional-dependencies"]["test"])
    assert "pytest-xdist" in tests  # "-n 2"
    exe = Path(sys.executable).with_name("zarrkit")
    out = subprocess.run([str(exe), "demo", str(tmp_path / "zarrkit-demo.zarr")],
                         capture_output=True, text=True, check=True).stdout
    # "creates a sharded, compressed array ..., writes it, reads a region back, and prints
    # `zarrkit info` of it"
    a = zarrkit.open(str(tmp_path / "zarrkit-demo.zarr"), mode="r")
    assert a.shards is not None and a.compressors and "values match" in out
    assert "Shard shape" in out and "Storage ratio" in out


def test_benchmark_command_helps():
    text = README.read_text()
    assert "`benchmarks/`" in text and "`benchmarks/README.md`" in text
    bench = (ROOT / "benchmarks" / "README.md").read_text()
    assert "python benchmarks/run.py --quick" in bench
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--help"],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    for flag in ("--quick", "--libs", "--workloads", "--json", "--markdown", "--render"):
        assert flag in out, flag


# -- regressions: what the README promised and the code fell short of ----------------------------
def test_open_takes_a_tensorstore_kvstore_dict(tmp_path):
    """`zarrkit.open({"driver": "file", ...})` took the kvstore spec for an array spec and
    refused its driver; a kvstore dict is where a node lives, as for `open_group`."""
    zarrkit.save_array(str(tmp_path / "a"), np.arange(3))
    kvstore = {"driver": "file", "path": str(tmp_path / "a")}
    assert zarrkit.open(kvstore, mode="r")[...].tolist() == [0, 1, 2]
    assert zarrkit.open_array(kvstore)[...].tolist() == [0, 1, 2]
    assert zarrkit.load(kvstore).tolist() == [0, 1, 2]
    assert zarrkit.open({"driver": "memory", "path": "k"}, shape=(2,), dtype="i1").shape == (2,)
    for bad in ({"driver": "nonsense"}, {"driver": ["file"]}):
        with pytest.raises(zarrkit.SpecError, match="driver"):
            zarrkit.open(bad)


def test_convert_command_takes_json(tmp_path, capsys):
    """`zarrkit convert` lacked the `--json` every other command takes."""
    zarrkit.save_array(str(tmp_path / "v2.zarr"), np.arange(4), zarr_format=2)
    status, out = _zarrkit(["convert", str(tmp_path / "v2.zarr"), str(tmp_path / "v3.zarr"),
                            "--json"], capsys)
    assert status == 0 and json.loads(out) == {"path": str(tmp_path / "v3.zarr"), "node": "/",
                                                "zarr_format": 3, "numcodecs_arrays": []}
    status, out = _zarrkit(["convert", "--in-place", str(tmp_path / "v2.zarr"), "--json"],
                           capsys)
    assert status == 0 and json.loads(out)["zarr_format"] == 3


def test_object_store_urls_print_percent_encoded():
    """Messages and reprs showed `s3://b/my data`: not the URL that opens the store."""
    from zarrkit.kvstore import open_kvstore

    store, _ = open_kvstore("s3://b/a b/100%25", storage_options={"anon": True})
    assert repr(store) == "ObjectStore('s3://b/a%20b/100%25')"
    again, _ = open_kvstore(store.location.url, storage_options={"anon": True})
    assert again.to_json() == store.to_json()

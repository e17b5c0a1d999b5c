"""zarrita.js (the JavaScript Zarr implementation, run by Node.js) both ways: what zarrkit writes
(sharded, blosc, zstd, gzip, crc32c, transpose, text, v2, scale_offset + cast_value) reads
there value for value, and what zarrita writes reads here. The JavaScript packages are
installed into tests/js from its lock file on first use (`npm ci`)."""

import fcntl
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import zarrkit

JS = os.path.join(os.path.dirname(__file__), "js")


@pytest.fixture(scope="session")
def node():
    """The node command, with zarrita installed beside the scripts (once, under a lock, for
    all test processes)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js and npm are needed to run zarrita.js")
    with open(os.path.join(JS, ".install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.isdir(os.path.join(JS, "node_modules", "zarrita")):
            done = subprocess.run([npm, "ci", "--silent", "--no-audit", "--no-fund"], cwd=JS,
                                  capture_output=True, check=False, timeout=300)
            assert done.returncode == 0, done.stderr.decode()
    return node


def _run(node, script, *args):
    done = subprocess.run([node, os.path.join(JS, script), *map(str, args)], cwd=JS,
                          capture_output=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def _plain(values):
    return [("NaN" if isinstance(v, float) and np.isnan(v) else v)
            for v in np.asarray(values).reshape(-1).tolist()]


def test_what_zarrkit_writes_reads_in_zarrita(node, tmp_path):
    g = zarrkit.open_group(tmp_path, mode="w")
    grid = np.arange(48).reshape(6, 8)
    made = {
        "sharded_zstd": g.create_array("sharded_zstd", shape=(6, 8), chunks=(2, 2),
                                       shards=(4, 4), dtype="int32",
                                       compressors=[{"name": "zstd",
                                                     "configuration": {"level": 3}}]),
        "blosc_nan_fill": g.create_array("blosc_nan_fill", shape=(6, 8), chunks=(4, 3),
                                         dtype="float64", fill_value=np.nan,
                                         compressors=[{"name": "blosc", "configuration": {
                                             "cname": "lz4", "clevel": 5,
                                             "shuffle": "shuffle", "typesize": 8}}]),
        "gzip_big_endian": g.create_array("gzip_big_endian", shape=(6, 8), chunks=(4, 3),
                                          dtype="uint16", serializer={
                                              "name": "bytes",
                                              "configuration": {"endian": "big"}},
                                          compressors=[{"name": "gzip",
                                                        "configuration": {"level": 1}}]),
        "transposed_crc32c": g.create_array("transposed_crc32c", shape=(6, 8), chunks=(4, 3),
                                            dtype="int64", codecs=[
                                                {"name": "transpose",
                                                 "configuration": {"order": [1, 0]}},
                                                {"name": "bytes"}, {"name": "crc32c"}]),
        "scaled": g.create_array("scaled", shape=(6, 8), chunks=(4, 3), dtype="float32",
                                 fill_value=np.nan, codecs=[
                                     {"name": "scale_offset",
                                      "configuration": {"offset": 5, "scale": 10}},
                                     {"name": "cast_value", "configuration": {
                                         "data_type": "uint8", "out_of_range": "clamp",
                                         "scalar_map": {"encode": [["NaN", 255]],
                                                        "decode": [[255, "NaN"]]}}},
                                     {"name": "bytes"}]),
    }
    for a in made.values():
        a[:5] = grid[:5] / 4 if a.dtype.kind == "f" else grid[:5]
    text = g.create_array("text", shape=(3,), chunks=(2,), dtype=str)
    text[...] = ["a", "bé", ""]
    v2 = zarrkit.open_group(tmp_path / "v2", mode="w", zarr_format=2)
    made["v2/zlib"] = v2.create_array("zlib", shape=(6, 8), chunks=(4, 3), dtype="<i4",
                                      compressor={"id": "zlib", "level": 1})
    made["v2/zlib"][...] = grid

    theirs = _run(node, "read.mjs", tmp_path, *made, "text")
    for path, a in made.items():
        assert theirs[path].get("error") is None, (path, theirs[path])
        assert theirs[path]["shape"] == [6, 8], path
        assert theirs[path]["data"] == _plain(a[...]), path
    assert theirs["text"]["data"] == ["a", "bé", ""]


def test_what_zarrita_writes_reads_here(node, tmp_path):
    written = _run(node, "write.mjs", tmp_path)
    assert set(written.values()) == {"ok"}, written
    g = zarrkit.open_group(tmp_path, mode="r")
    assert g.attrs["title"] == "made by zarrita" and sorted(g) == sorted(written)
    expected = np.full((6, 8), 7)
    expected[:5] = np.arange(40).reshape(5, 8) * 3
    for name in written:
        a = g[name]
        assert a.dimension_names == ("y", "x") and a.attrs["codecs"] == name
        np.testing.assert_array_equal(a[...], expected, err_msg=name)

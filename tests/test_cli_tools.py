"""The command line (info, tree, copy, verify, demo with --json) and notebook HTML reprs."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest

import zarrkit
from zarrkit.cli import main

CRC_CODECS = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def hierarchy(tmp_path):
    root = str(tmp_path / "h.zarr")
    g = zarrkit.open_group(root, mode="w", attributes={"title": "t"})
    a = g.create_array("image", shape=(64, 48), dtype="uint16", chunks=(8, 8), shards=(32, 24),
                       dimension_names=["y", "x"])
    a[...] = np.arange(64 * 48, dtype="uint16").reshape(64, 48)
    b = g.create_group("sub").create_array("plain", shape=(20,), dtype="f8", chunks=(5,),
                                           codecs=CRC_CODECS)
    b[...] = np.linspace(0, 1, 20)
    return root


def test_info_json_reports_storage(capsys, hierarchy):
    status, out, _ = run(capsys, "info", f"{hierarchy}/image", "--json")
    info = json.loads(out)["info"]
    assert status == 0 and info["shape"] == [64, 48] and info["shards"] == [32, 24]
    assert info["chunks"] == [8, 8] and info["dtype"] == "uint16"
    assert info["nbytes"] == 64 * 48 * 2 and info["nbytes_stored"] > 0
    assert info["compression_ratio"] == pytest.approx(info["nbytes"] / info["nbytes_stored"],
                                                      rel=1e-3)
    assert info["codecs"][0]["name"] == "sharding_indexed"
    status, out, _ = run(capsys, "info", hierarchy)
    assert "Arrays" in out and "image" in out and "sub" in out
    status, out, _ = run(capsys, "info", f"{hierarchy}/image")
    assert "Shard shape" in out and "Storage ratio" in out


def test_tree_json(capsys, hierarchy):
    status, out, _ = run(capsys, "tree", hierarchy, "--json")
    tree = json.loads(out)
    assert tree["members"]["sub"]["members"]["plain"]["shape"] == [20]


def test_copy_reshards_with_progress_and_json(capsys, hierarchy, tmp_path):
    dst = str(tmp_path / "copy.zarr")
    status, out, err = run(capsys, "copy", f"{hierarchy}/image", dst, "--shards", "64,48",
                           "--chunks", "16,16")
    assert status == 0 and "MB/s" in err and "copied 1 array(s)" in out
    copy = zarrkit.open(dst, mode="r")
    assert copy.shards == (64, 48) and copy.chunks == (16, 16)
    np.testing.assert_array_equal(copy[...],
                                  zarrkit.open(hierarchy, mode="r")["image"][...])
    status, out, _ = run(capsys, "copy", hierarchy, str(tmp_path / "whole.zarr"), "--quiet")
    assert status == 0 and sorted(zarrkit.open(str(tmp_path / "whole.zarr"), mode="r")) == [
        "image", "sub"]
    status, out, _ = run(capsys, "copy", hierarchy + "/sub", str(tmp_path / "v2.zarr"),
                         "--zarr-format", "2", "--json")
    report = json.loads(out)
    assert report["zarr_format"] == 2 and report["arrays"] == 1 and report["bytes"] == 160
    assert zarrkit.open(str(tmp_path / "v2.zarr"), mode="r")["plain"].zarr_format == 2


def _flip_byte(path: str, offset: int = 0) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))


def test_verify_clean_and_damaged(capsys, hierarchy):
    status, out, _ = run(capsys, "verify", hierarchy)
    assert status == 0 and out.strip().splitlines()[-1].startswith("OK")
    _flip_byte(os.path.join(hierarchy, "sub", "plain", "c", "2"), 3)
    _flip_byte(os.path.join(hierarchy, "image", "c", "1", "1"), 10)
    status, out, _ = run(capsys, "verify", hierarchy, "--json")
    report = json.loads(out)
    assert status == 1 and not report["ok"]
    keys = sorted(d["key"] for d in report["damaged"])
    assert keys == ["image/c/1/1", "sub/plain/c/2"]
    assert any("Checksum" in d["error"] or "checksum" in d["error"] for d in report["damaged"])
    status, out, _ = run(capsys, "verify", hierarchy)
    assert status == 1 and "DAMAGED sub/plain/c/2" in out


def test_verify_reports_unreadable_metadata(capsys, hierarchy):
    with open(os.path.join(hierarchy, "sub", "plain", "zarr.json"), "w") as f:
        f.write("{not json")
    status, out, _ = run(capsys, "verify", hierarchy, "--json")
    report = json.loads(out)
    assert status == 1 and report["metadata_errors"][0]["key"] == "sub/plain"


def test_clean_removes_old_temp_files_of_killed_writers(capsys, hierarchy, tmp_path):
    chunk_dir = os.path.join(hierarchy, "sub", "plain", "c")
    old, young = (os.path.join(chunk_dir, f".{i}.0123456789abcde{i}.partial") for i in (1, 2))
    for path in (old, young):
        with open(path, "wb") as f:
            f.write(b"half a chunk")
    os.utime(old, (time.time() - 7200,) * 2)
    status, out, _ = run(capsys, "clean", hierarchy, "--json")
    assert status == 0 and json.loads(out) == {
        "removed": ["sub/plain/c/.1.0123456789abcde1.partial"], "moved_in": [],
        "older_than": 3600.0}
    assert not os.path.exists(old) and os.path.exists(young)
    lock_file = os.path.join(hierarchy, "sub", ".zarrkit-lock." + "0" * 32)
    open(lock_file, "wb").close()  # a group's lock file, left by a killed holder
    status, out, _ = run(capsys, "clean", f"{hierarchy}/sub", "--older-than", "0")
    assert status == 0 and out.splitlines() == [
        "removed 2 leftover(s) of unfinished writes (temp files older than 0 s, lock files no "
        "one holds)", f"  .zarrkit-lock.{'0' * 32}", "  plain/c/.2.0123456789abcde2.partial"]
    assert run(capsys, "verify", hierarchy)[0] == 0  # the data is untouched
    status, _, err = run(capsys, "clean", str(tmp_path / "nothing"))
    assert status == 2 and "no directory" in err
    status, _, err = run(capsys, "clean", "memory://x")
    assert status == 2 and "not a local directory" in err
    status, _, err = run(capsys, "clean", hierarchy, "--older-than", "-5")
    assert status == 2 and "older_than" in err


def test_clean_removes_unfinished_replacements(capsys, tmp_path):
    """A writer killed while writing a replacement beside a node leaves its staging node."""
    from zarrkit import storage

    where = str(tmp_path / "r.zarr")
    g = zarrkit.open_group(where, mode="w")
    g["x"] = np.arange(3)
    for token in ("old", "new"):
        staging = storage.STAGING + token
        zarrkit.save(str(tmp_path / "r.zarr" / staging), np.arange(2))
    old = tmp_path / "r.zarr" / (storage.STAGING + "old")
    for path in [old, *old.rglob("*")]:
        os.utime(path, (time.time() - 7200,) * 2)
    status, out, _ = run(capsys, "clean", where, "--json")
    assert status == 0 and json.loads(out)["removed"] == [storage.STAGING + "old/"]
    assert not old.exists() and (tmp_path / "r.zarr" / (storage.STAGING + "new")).exists()
    assert list(zarrkit.open_group(where)) == ["x"] and g["x"][...].tolist() == [0, 1, 2]


class Killed(BaseException):
    """A writer killed at this point (nothing after it runs, no clean-up)."""


def _kill_at(monkeypatch, method, call):
    """Kill the writer at the `call`-th call of FileStore.`method`."""
    from zarrkit.kvstore import FileStore

    real, calls = getattr(FileStore, method), []

    def dying(self, *args):
        calls.append(args)
        if len(calls) == call:
            raise Killed
        return real(self, *args)

    monkeypatch.setattr(FileStore, method, dying)


@pytest.mark.parametrize("kill, outcome", [
    (("rename_prefix", 2), "moved in"),  # old moved aside, new not yet in its place
    (("delete_prefix", 1), "removed"),  # new in place, old still aside
])
def test_clean_finishes_replacements_killed_between_their_steps(capsys, tmp_path, monkeypatch,
                                                                 kill, outcome):
    where = tmp_path / "r.zarr"
    g = zarrkit.open_group(str(where), mode="w")
    g["sub/x"] = np.arange(3)
    zarrkit.consolidate_metadata(str(where))
    with monkeypatch.context() as m:
        _kill_at(m, *kill)
        with pytest.raises(Killed):
            g["sub/x"] = np.arange(5) * 10
    transient = sorted(p.name for p in (where / "sub").iterdir() if p.name.startswith(".z"))
    assert len(transient) == (2 if outcome == "moved in" else 1)
    status, out, _ = run(capsys, "clean", str(where), "--older-than", "0", "--json")
    report = json.loads(out)
    assert status == 0 and report["moved_in"] == (["sub/x/"] if outcome == "moved in" else [])
    assert report["removed"] == [f"sub/{n}/" for n in transient if ".zarrkit-replaced-" in n]
    assert sorted(os.listdir(where / "sub")) == ["x", "zarr.json"]
    again = zarrkit.open_group(str(where), mode="r")  # through the consolidated record
    assert again["sub/x"][...].tolist() == [0, 10, 20, 30, 40]


def test_clean_puts_back_a_node_moved_aside_without_a_replacement(capsys, tmp_path):
    from zarrkit import storage

    where = tmp_path / "r.zarr"
    zarrkit.open_group(str(where), mode="w")["x"] = np.arange(3)
    os.rename(where / "x", where / f"{storage.REPLACED}0123456789abcdef-x")
    status, out, _ = run(capsys, "clean", str(where), "--older-than", "0")
    assert status == 0 and "moved in the finished replacement of x/" in out
    assert zarrkit.open(str(where / "x"), mode="r")[...].tolist() == [0, 1, 2]


def test_errors_are_reported_not_raised(capsys, tmp_path):
    status, _, err = run(capsys, "info", str(tmp_path / "nothing.zarr"))
    assert status == 2 and "no " in err and "array or group" in err
    status, _, err = run(capsys, "info", "nosuch://x/y")
    assert status == 2 and "unknown URL scheme" in err
    status, _, err = run(capsys, "info", "x.zarr", "--storage-options", "[1]")
    assert status == 2 and "JSON object" in err


@pytest.mark.parametrize("name", ["demo.zarr", "demo.zip"])
def test_demo_json(capsys, tmp_path, name):
    """Also into a zip archive, which is written only when its store is closed (the demo's
    read-back failed: the archive did not exist yet)."""
    status, out, _ = run(capsys, "demo", str(tmp_path / name), "--json")
    report = json.loads(out)
    assert status == 0 and report["values_match"] and report["array"]["shards"] == [1024, 1024]
    assert zarrkit.open(str(tmp_path / name), mode="r").shape == (4096, 4096)


def test_html_reprs(hierarchy):
    g = zarrkit.open_group(hierarchy, mode="r")
    page = g._repr_html_()
    assert "image" in page and "plain" in page and "(64, 48)" in page
    table = g["image"]._repr_html_()
    for text in ("Shards", "(32, 24)", "uint16", "sharding_indexed", "ratio", "y, x"):
        assert text in table

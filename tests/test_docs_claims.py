"""What docs/*.md and the module docstrings say, pinned where no other test pins it.

Each test names the document and the claim; when one fails, fix the code or the document, not
the test alone: the documents are how maintainers find where things are and why.
"""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import zarrkit
from zarrkit import cli

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "zarrkit"
DOCS = {p.name: p.read_text() for p in (ROOT / "docs").glob("*.md")}


# -- docs/architecture.md: the layers and the modules --------------------------------------------

#: Layer of each top-level module or package, from the table in docs/architecture.md (0: top).
LAYERS = {
    **dict.fromkeys(["__init__", "api", "asynchronous", "cli", "cli_convert", "cli_tools", "progress",
                     "conversion", "copying", "dask", "xarray", "xarray_backend", "xarray_modes",
                     "describe"], 0),
    "consolidated": 1,
    **dict.fromkeys(["node", "array", "group", "attributes", "info", "creation", "creation_v2",
                     "hierarchy", "storage", "formats", "selection_methods", "_resize_guard",
                     "v2_chunk_keys"], 2),
    "spec": 3, "metadata": 4, "engine": 5, "codecs": 6, "kvstore": 7,
    **dict.fromkeys(["errors", "indexing", "scratch"], 8),
}

#: The upward imports the document names: the spec layer's opening glue and `Array`'s mixin
#: use the node layer; the nodes' notebook HTML imports `describe` when it runs, their async
#: handles `asynchronous` when asked for.
UPWARD = {("spec.open", "formats"), ("spec.open", "storage"), ("spec.open", "array"),
          ("spec.node", "storage"), ("group", "describe"), ("array", "describe"),
          ("group", "asynchronous"), ("array", "asynchronous"),
          # transactions: bound arrays subclass `Array` and hold its shape locks at the commit
          ("spec.transaction", "array"), ("spec.transaction", "_resize_guard"),
          ("spec.transaction", "storage")}


def _layer(module: str) -> int:
    return LAYERS[module.split(".")[0]]


def _relative_imports(path: Path) -> set[str]:
    """The zarrkit modules `path` imports (relative imports), dotted from the package root."""
    package = list(path.relative_to(SRC).parent.parts)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - node.level + 1]
            names = [node.module] if node.module else [a.name for a in node.names]
            found |= {".".join(base + [n]) for n in names}
    return found


def test_every_module_has_a_layer_and_imports_follow_the_layers():
    upward = set()
    for path in SRC.rglob("*.py"):
        me = ".".join(path.relative_to(SRC).with_suffix("").parts)
        assert me.split(".")[0] in LAYERS, f"{me}: not in docs/architecture.md's layer table"
        for target in _relative_imports(path):
            if _layer(target) < _layer(me):
                upward.add((me, target))
    assert upward == UPWARD


def test_every_top_level_module_is_named_in_the_docs():
    text = "".join(DOCS.values())
    for path in SRC.glob("*.py"):
        assert f"`{path.name}`" in text or f"/{path.name}`" in text, path.name


def test_files_the_docs_name_exist():
    text = "".join(DOCS.values())
    tests = set(re.findall(r"tests/test_\w+\.py", text))
    assert tests
    assert [t for t in tests if not (ROOT / t).exists()] == []
    modules = set(re.findall(r"`((?:codecs|engine|kvstore|metadata|spec)/\w+\.(?:py|c))`", text))
    assert len(modules) > 20
    assert [m for m in modules if not (SRC / m).exists()] == []


def test_cli_docstring_names_every_subcommand():
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    listed = cli.__doc__.split(":", 1)[1].split("(")[0]
    assert sorted(re.findall(r"\w+", listed)) == sorted(commands)


# -- docs/architecture.md: caches ----------------------------------------------------------------


def test_only_spec_handles_with_a_cache_pool_cache_chunks(tmp_path):
    """Decoded chunks are cached only where a context gives the pool a size; plain handles and
    spec handles without one see another writer's change at once."""
    zarrkit.create(tmp_path / "a", shape=(4,), chunks=(4,), dtype="i2")[...] = 1
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "a")},
            "recheck_cached_data": False}
    plain = zarrkit.open(tmp_path / "a")
    uncached = zarrkit.open(spec)
    cached = zarrkit.open(spec, context=zarrkit.Context({"cache_pool": {
        "total_bytes_limit": 1 << 20}}))
    for a in (plain, uncached, cached):
        assert a[...].tolist() == [1] * 4
    zarrkit.open(tmp_path / "a", mode="r+")[...] = 2
    assert plain[...].tolist() == uncached[...].tolist() == [2] * 4
    assert cached[...].tolist() == [1] * 4  # served from the pool, as recheck false allows


# -- docs/v2.md: the example and the fill-value conventions --------------------------------------


def test_the_v2_example_runs(tmp_path, monkeypatch):
    code = DOCS["v2.md"].split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    for name in ("any.zarr", "tree.zarr", "v2.zarr"):
        zarrkit.open_group(name, mode="w", zarr_format=2).create_array(
            "x", shape=(1000, 1000), chunks=(100, 100), dtype="<i2")
    exec(compile(code.replace("/tmp/x", str(tmp_path / "x")), "docs/v2.md", "exec"), {})
    zarray = json.loads((tmp_path / "data.zarr" / ".zarray").read_text())
    assert (zarray["order"], zarray["dimension_separator"], zarray["fill_value"]) == \
        ("F", "/", "NaN")
    assert json.loads((tmp_path / "v3.zarr" / "x" / "zarr.json").read_text())["chunk_grid"][
        "configuration"]["chunk_shape"] == [1000, 1000]
    assert (tmp_path / "v2.zarr" / "x" / "zarr.json").exists()
    assert not (tmp_path / "v2.zarr" / "x" / ".zarray").exists()


def _zarray(path: Path) -> dict:
    return json.loads((path / ".zarray").read_text())


@pytest.mark.parametrize("dtype, fill", [
    ("<f4", 0.0), ("<i2", 0), ("|b1", False), ("<c8", [0.0, 0.0]), ("<M8[s]", -2**63),
    ("<U2", ""), ("|S3", "AAAA"), (str, ""), (bytes, "")])
def test_new_v2_arrays_get_zarr_python_3s_default_fill_values(tmp_path, dtype, fill):
    zarrkit.create(tmp_path / "a", shape=(2,), dtype=dtype, zarr_format=2)
    doc = _zarray(tmp_path / "a")
    assert doc["fill_value"] == fill
    assert doc["dimension_separator"] == "."  # always written


def test_object_arrays_without_a_codec_get_vlen_utf8(tmp_path):
    a = zarrkit.create(tmp_path / "a", shape=(2,), dtype=object, zarr_format=2)
    assert _zarray(tmp_path / "a")["filters"] == [{"id": "vlen-utf8"}]
    assert a[...].tolist() == ["", ""]


def test_special_floats_are_strings_and_nan_payloads_plain_nan(tmp_path):
    payload = np.array([0x7FF8000000000001], np.uint64).view(np.float64)[0]
    for name, fill, text in (("p", payload, "NaN"), ("i", -math.inf, "-Infinity")):
        zarrkit.create(tmp_path / name, shape=(2,), dtype="<f8", zarr_format=2, fill_value=fill)
        raw = (tmp_path / name / ".zarray").read_text()
        assert json.loads(raw)["fill_value"] == text and f'"{text}"' in raw


@pytest.mark.parametrize("fmt, key", [(2, ".zarray"), (3, "zarr.json")])
def test_bare_nan_fill_literal_is_read_and_written_back_as_the_string(tmp_path, fmt, key):
    """Not JSON, but zarr 1.x and Python's json write it: read in every format, and written
    back as the spec's string (TensorStore refuses the bare literal)."""
    zarrkit.create(tmp_path / "a", shape=(2,), dtype="<f8", zarr_format=fmt, fill_value=math.nan)
    path = tmp_path / "a" / key
    path.write_text(path.read_text().replace('"NaN"', "NaN"))
    a = zarrkit.open(tmp_path / "a", mode="r+")
    assert np.isnan(a.fill_value) and np.isnan(a[...]).all()
    a.resize((3,))
    assert '"fill_value": "NaN",' in path.read_text()


def test_numcodecs_zero_is_the_empty_vlen_string(tmp_path):
    """zarr-python 2's default text fill value 0: missing chunks read as "", the document and
    `fill_value` keep 0, and conversions make it v3's "" fill value."""
    for name in ("a", "up"):
        a = zarrkit.create(tmp_path / name, shape=(4,), chunks=(2,), dtype=str, zarr_format=2,
                           fill_value=0)
    a = zarrkit.open(tmp_path / "a", mode="r+")
    assert a.fill_value == 0 and a[...].tolist() == [""] * 4
    a[:1] = np.array(["x"], object)
    assert a[...].tolist() == ["x", "", "", ""] and _zarray(tmp_path / "a")["fill_value"] == 0
    zarrkit.convert(tmp_path / "a", tmp_path / "v3", progress=False)
    zarrkit.upgrade_metadata(tmp_path / "up", progress=False)
    for name in ("v3", "up"):
        doc = json.loads((tmp_path / name / "zarr.json").read_text())
        assert (doc["data_type"], doc["fill_value"]) == ("string", "")


def test_order_f_at_rank_one_is_kept_and_transposes_nothing(tmp_path):
    a = zarrkit.create(tmp_path / "a", shape=(4,), chunks=(2,), dtype="<i4", zarr_format=2,
                       order="F")
    a[...] = [1, 2, 3, 4]
    assert _zarray(tmp_path / "a")["order"] == "F"
    assert (tmp_path / "a" / "0").exists() and a[...].tolist() == [1, 2, 3, 4]
    assert [c["name"] for c in a._metadata.codec_chain.to_json()] == ["zarr_v2_chunk"]


def test_unmasked_float_variable_gets_nan_from_convert_and_keeps_zeros_in_place(tmp_path):
    """docs/v2.md, xarray's conventions: `null` is no mask; `convert` fills with NaN as xarray
    writes v3 floats, `upgrade_metadata` keeps the fill the existing chunks were read with."""
    for name in ("src", "up"):
        g = zarrkit.open_group(tmp_path / name, mode="w", zarr_format=2)
        g.create_array("t", shape=(4,), chunks=(2,), dtype="<f4", fill_value=None,
                       attributes={"_ARRAY_DIMENSIONS": ["x"]})
    zarrkit.convert(tmp_path / "src", tmp_path / "dst", progress=False)
    zarrkit.upgrade_metadata(tmp_path / "up", progress=False)
    converted = json.loads((tmp_path / "dst" / "t" / "zarr.json").read_text())
    upgraded = json.loads((tmp_path / "up" / "t" / "zarr.json").read_text())
    assert converted["fill_value"] == "NaN" and upgraded["fill_value"] == 0.0
    for doc in (converted, upgraded):
        assert doc["dimension_names"] == ["x"] and "_FillValue" not in doc["attributes"]


# -- docs/concurrency.md -------------------------------------------------------------------------


def test_shard_index_reads_are_tried_four_times():
    from zarrkit.engine import cache, chunk_io

    assert chunk_io._SHARD_ATTEMPTS == 4
    assert cache.ShardIndexCache().total_bytes_limit == 16 << 20


def test_groups_keep_no_lock_files_and_arrays_keep_theirs_out_of_sight(tmp_path):
    """docs/concurrency.md: a group's directory holds only its members and documents after
    its metadata changed in place (zarr-python lists it without a warning); an array's holds
    `.zarrkit-locks`; without locks there is none."""
    import warnings

    import zarr

    g = zarrkit.open_group(str(tmp_path / "g.zarr"), mode="w")
    x = g.create_array("x", shape=(4,), chunks=(2,), dtype="i4")
    x[1] = 5  # a partial chunk: read-modify-write under the chunk's lock
    g.attrs["a"] = 1
    x.attrs["b"] = 2
    assert sorted(p.name for p in (tmp_path / "g.zarr").iterdir()) == ["x", "zarr.json"]
    assert (tmp_path / "g.zarr" / "x" / ".zarrkit-locks").is_dir()
    assert sorted(g) == ["x"] and sorted(g.store.list_prefix("x/")) == ["x/c/0", "x/zarr.json"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        members = dict(zarr.open_group(str(tmp_path / "g.zarr"), mode="r").members())
    assert sorted(members) == ["x"]

    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "n.zarr")},
            "context": {"file_io_locking": {"mode": "none"}},
            "metadata": {"shape": [2], "data_type": "int32"}, "create": True}
    a = zarrkit.open(spec).result()
    a[...] = 1
    a.attrs["b"] = 2
    assert not any(p.name == ".zarrkit-locks" for p in (tmp_path / "n.zarr").rglob("*"))

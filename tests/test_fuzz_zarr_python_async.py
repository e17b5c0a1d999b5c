"""Seeded fuzzing of zarr-python 3's asynchronous API: zarrkit against zarr-python.

Each seed draws one program (a list of steps) and runs it with `zarr.api.asynchronous` and
with `zarrkit.api.asynchronous`, each in a directory of its own: a root group (v2 or v3), then
arrays and groups made by the group's and the module's functions (booleans, integers, floats,
complex numbers and strings; fill values; chunks and, in v3, shards; attributes; some
uncompressed, so that the bytes they store can be compared), then awaited operations and
`asyncio.gather` batches of them: basic reads and writes (integers, negative ones, slices with
steps, ellipsis), orthogonal, coordinate and mask reads (and `oindex` / `vindex`), resizes,
appends, attribute updates, chunk and byte counts, `info_complete`, member access, listings,
creation, `require_*`, deletion, and the module's `open*`, `zeros`/`ones`/`full`/`empty`,
`*_like`, `array`, `save`/`load`, `consolidate_metadata`/`open_consolidated` and `tree`. A
batch holds only steps whose results do not depend on their order: reads, and writes of
disjoint regions (rows of one chunk, or interleaved strides through the same chunks: the
read-modify-writes of one chunk race there).

Every step's result is compared (values with their data types, descriptions of the nodes
returned, listings as sets), and so is which steps raise: both libraries or neither, zarrkit
with a `ZarrkitError`. At the end each library's output is read with the other library's
synchronous API and compared with what the writer reads.

Known differences, each a rule below (marked "Rule:"):

- `save` returns the node saved (zarr-python returns None): zarr-python's is opened.
- `load` of a group gives a dict of its arrays (zarr-python raises NotImplementedError):
  zarr-python's arrays are read one by one.
- Slices with negative steps read as numpy's (zarr-python refuses them): zarr-python's whole
  read is sliced by numpy.
- A shrinking resize clears the parts of edge chunks outside the new shape (zarr-python keeps
  them, and shows them again when the array grows back), and so does, after a resize with
  `delete_outside_chunks=False`, a write covering an edge chunk's part inside the shape (or
  all of an edge shard's inner chunks inside it: the inner chunks wholly outside go too):
  after growing an array that shrank off a chunk or shard boundary, the program writes the
  region that grew.
- Strings read as numpy object arrays (zarr-python 3 gives numpy's StringDType): the two
  compare equal by their values.
- `nchunks_initialized` of a sharded array counts the inner chunks stored (zarr-python counts
  stored shards times chunks per shard): compared for unsharded arrays only. `nbytes_stored`
  counts the metadata documents, whose JSON layout differs: the chunks' bytes are compared, of
  uncompressed arrays.
- A selection of integers only reads a scalar, as numpy (zarr-python's orthogonal and
  coordinate reads give a 0-d array): compared by value.
- `tree` is plain text (zarr-python's a TreeRepr); `info_complete` gives each library's
  ArrayInfo: only their kinds are compared.
- A hierarchy is of one format (zarrkit refuses a v3 node under a v2 group, zarr-python mixes
  them), and zarr-python 3.1.6's `AsyncGroup.zeros` (`ones`, `full`, `empty`, `*_like`)
  makes v3 arrays in a v2 group: those are used in v3 hierarchies only.
- zarr-python 3.1.6 writes a value too long for its selection (its first elements) and
  loses writes when concurrent writes share a chunk: its refusal is checked by numpy's
  broadcasting here, and its writes in a batch run one by one.
- zarrkit's `copy`, `copy_all` and `copy_store` work (zarr-python 3.1.6's raise
  NotImplementedError): zarrkit's copy is checked against its source.
- Consolidated metadata: zarrkit keeps it up to date as the hierarchy changes, zarr-python
  leaves it stale: consolidation comes last, with only reads after it.

FUZZ_ASYNC_SEEDS=3000 runs more seeds.
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import os
import random
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pytest

import zarrkit
from zarrkit.api import asynchronous as zarrkit_async

zarr = pytest.importorskip("zarr")
zarr_async = pytest.importorskip("zarr.api.asynchronous")

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

SEEDS = range(int(os.environ.get("FUZZ_ASYNC_SEEDS", 300)))  # ~35 s on one core
LIBRARIES = {"zarr": (zarr, zarr_async), "zarrkit": (zarrkit, zarrkit_async)}
DTYPES = ["bool", "int8", "uint16", "int32", "int64", "float32", "float64", "complex64",
          "complex128", "str"]
METADATA = {"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"}


# -- the model the program is drawn from -----------------------------------------------------

@dataclass
class ArrayModel:
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: str
    shards: tuple[int, ...] | None = None
    raw: bool = False  # uncompressed: the bytes stored compare
    stale: bool = False  # shrank off a chunk boundary (see the resize rule)


@dataclass
class Model:
    fmt: int
    nodes: dict[str, ArrayModel | None] = field(default_factory=dict)  # None: a group
    loose: set[str] = field(default_factory=set)  # made by *_like (see the rule)
    count: int = 0

    def name(self) -> str:
        self.count += 1
        return f"n{self.count}"

    def groups(self) -> list[str]:
        return [""] + [p for p, n in self.nodes.items() if n is None]

    def arrays(self) -> list[str]:
        return [p for p, n in self.nodes.items() if n is not None and p not in self.loose]

    def children(self, path: str) -> list[str]:
        prefix = path + "/" if path else ""
        return [p[len(prefix):] for p in self.nodes
                if p.startswith(prefix) and "/" not in p[len(prefix):]]

    def remove(self, path: str) -> None:
        for p in [p for p in self.nodes if p == path or p.startswith(path + "/")]:
            del self.nodes[p]


def join(group: str, name: str) -> str:
    return f"{group}/{name}" if group else name


# -- drawing values and selections -----------------------------------------------------------

def gen_values(rng: random.Random, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    n = math.prod(shape)
    if dtype == "str":
        words = ["", "a", "bc", "déjà", "x" * 7, "日本"]
        return np.array([rng.choice(words) for _ in range(n)], dtype=object).reshape(shape)
    if dtype == "bool":
        return np.array([rng.random() < 0.5 for _ in range(n)], bool).reshape(shape)
    kind = np.dtype(dtype).kind
    if kind == "u":
        return np.array([rng.randint(0, 200) for _ in range(n)], dtype).reshape(shape)
    if kind == "i":
        return np.array([rng.randint(-100, 100) for _ in range(n)], dtype).reshape(shape)
    real = np.array([rng.choice([rng.randint(-50, 50) / 4, math.nan]) if rng.random() < 0.1
                     else rng.randint(-50, 50) / 4 for _ in range(n)], "f8")
    if kind == "c":
        real = real + 1j * np.array([rng.randint(-9, 9) for _ in range(n)])
    return real.astype(dtype).reshape(shape)


def gen_scalar(rng: random.Random, dtype: str) -> Any:
    return gen_values(rng, dtype, (1,))[0].item() if dtype != "str" else rng.choice(["", "z"])


def gen_fill(rng: random.Random, dtype: str) -> Any:
    if dtype == "str":
        return rng.choice(["", "fill"])
    if dtype.startswith("float") and rng.random() < 0.2:
        return math.nan
    if rng.random() < 0.05:  # numpy's True and False of any number type
        return rng.choice([True, False])
    return rng.choice([0, gen_scalar(rng, dtype)])


def gen_index(rng: random.Random, n: int, negative_steps: bool) -> Any:
    """One dimension of a basic selection (an integer only where the dimension is not empty)."""
    roll = rng.random()
    if roll < 0.2 and n:
        return rng.randrange(-n, n)
    if roll < 0.3:
        return slice(None)
    start = rng.choice([None, rng.randint(-n - 1, n + 1)])
    stop = rng.choice([None, rng.randint(-n - 1, n + 1)])
    step = rng.choice([None, 1, 2, 3])
    if negative_steps and rng.random() < 0.3:
        step = rng.choice([-1, -2])
    return slice(start, stop, step)


def gen_basic(rng: random.Random, shape: tuple[int, ...], negative_steps: bool = False) -> Any:
    sel = tuple(gen_index(rng, n, negative_steps) for n in shape)
    roll = rng.random()
    if roll < 0.15:
        return ...
    if roll < 0.3 and sel:
        return (..., *sel[1:]) if rng.random() < 0.5 else (sel[0], ...)
    if roll < 0.4 and len(sel) == 1:
        return sel[0]
    return sel


def selected_shape(shape: tuple[int, ...], sel: Any) -> tuple[int, ...]:
    return np.empty(shape, "u1")[sel].shape


def gen_orthogonal(rng: random.Random, shape: tuple[int, ...]) -> tuple[Any, ...]:
    out: list[Any] = []
    for n in shape:
        roll = rng.random()
        if roll < 0.3 and n:
            out.append([rng.randrange(n) for _ in range(rng.randint(1, 4))])
        elif roll < 0.5:
            out.append(np.array([rng.random() < 0.5 for _ in range(n)]))
        elif roll < 0.6 and n:
            out.append(rng.randrange(-n, n))
        else:
            out.append(slice(rng.randint(0, n), None, rng.randint(1, 3)))
    return tuple(out)


def gen_coordinates(rng: random.Random, shape: tuple[int, ...]) -> tuple[Any, ...]:
    k = rng.randint(0, 5) if all(shape) else 0
    return tuple(np.array([rng.randrange(n) for _ in range(k)], "i8") for n in shape)


def gen_mask(rng: random.Random, shape: tuple[int, ...]) -> np.ndarray:
    return np.array([rng.random() < 0.3 for _ in range(math.prod(shape))]).reshape(shape)


# -- drawing steps ---------------------------------------------------------------------------

def gen_array_model(rng: random.Random, fmt: int) -> tuple[ArrayModel, dict[str, Any]]:
    """A new array's model and its creation keywords."""
    ndim = rng.choice([1, 1, 2, 2, 3])
    shape = tuple(rng.randint(0, 9) for _ in range(ndim))
    chunks = tuple(rng.randint(1, max(n, 1)) for n in shape)
    dtype = rng.choice(DTYPES)
    shards = None
    if fmt == 3 and rng.random() < 0.3:
        shards = tuple(c * rng.randint(1, 2) for c in chunks)
    raw = rng.random() < 0.4 and dtype != "str"
    kwargs: dict[str, Any] = {"shape": shape, "chunks": chunks, "dtype": dtype,
                              "fill_value": gen_fill(rng, dtype)}
    if shards:
        kwargs["shards"] = shards
    if raw:
        kwargs["compressors"] = None
    if rng.random() < 0.4:
        kwargs["attributes"] = {"k": rng.randint(0, 9), "s": rng.choice(["a", "é"])}
    return ArrayModel(shape, chunks, dtype, shards, raw), kwargs


class Generator:
    """Draws a program's steps from a seed, keeping the model of the hierarchy it makes."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.model = Model(self.rng.choice([2, 3]))
        self.steps: list[tuple[str, dict[str, Any]]] = []

    def add(self, kind: str, **args: Any) -> None:
        self.steps.append((kind, args))

    def program(self) -> list[tuple[str, dict[str, Any]]]:
        rng = self.rng
        self.add("root", fmt=self.model.fmt, attributes={"seed": rng.randint(0, 99)})
        for _ in range(rng.randint(1, 3)):
            self.create()
        for _ in range(rng.randint(8, 22)):
            rng.choice([self.create, self.array_op, self.array_op, self.array_op, self.gather,
                        self.gather, self.group_op, self.module_op])()
        if rng.random() < 0.4:
            self.consolidate()
        self.add("check_all", paths=sorted(self.model.nodes), loose=self.model.loose)
        return self.steps

    # -- creation ------------------------------------------------------------------------------
    def create(self) -> None:
        kind, args = self.creation(self.rng.choice(self.model.groups()))
        self.add(kind, **args)
        path = args.get("path") or join(args["parent"], args["name"])
        array = self.model.nodes[path]
        if array is not None and self.rng.random() < 0.5 and math.prod(array.shape):
            self.add("setitem", path=path, sel=...,
                     value=gen_values(self.rng, array.dtype, array.shape))

    def creation(self, parent: str) -> tuple[str, dict[str, Any]]:
        """A step making a new group or array in `parent` (in the model from now on)."""
        rng, model = self.rng, self.model
        name = model.name()
        path = join(parent, name)
        roll = rng.random()
        if roll < 0.25:
            model.nodes[path] = None
            return "create_group", {"parent": parent, "name": name, "attributes": {
                "g": rng.randint(0, 9)} if rng.random() < 0.5 else None}
        model.nodes[path], kwargs = gen_array_model(rng, model.fmt)
        if roll < 0.6:
            return "create_array", {"parent": parent, "name": name, "kwargs": kwargs}
        return "module_create_array", {"path": path, "kwargs": kwargs, "fmt": model.fmt}

    # -- arrays --------------------------------------------------------------------------------
    def fill_source(self, how, shape, dtype):
        """(like, shape, dtype) of a fill creation `how`: a `*_like` one takes those of an
        array picked (None when there is none but text arrays)."""
        if not how.endswith("_like"):
            return None, shape, dtype
        picked = self.pick_array()
        if picked is None or picked[1].dtype == "str":
            return None
        like, array = picked
        return like, array.shape, array.dtype

    def pick_array(self) -> tuple[str, ArrayModel] | None:
        arrays = self.model.arrays()
        if not arrays:
            return None
        path = self.rng.choice(arrays)
        array = self.model.nodes[path]
        assert array is not None
        return path, array

    def read_step(self, path: str, array: ArrayModel) -> tuple[str, dict[str, Any]]:
        rng, shape = self.rng, array.shape
        roll = rng.random()
        if roll < 0.35 or not shape:
            return "getitem", {"path": path, "sel": gen_basic(rng, shape, negative_steps=True)}
        if roll < 0.5:
            return "orthogonal", {"path": path, "sel": gen_orthogonal(rng, shape),
                                  "oindex": rng.random() < 0.5}
        if roll < 0.65:
            return "coordinates", {"path": path, "sel": gen_coordinates(rng, shape),
                                   "vindex": rng.random() < 0.5}
        if roll < 0.75:
            return "mask", {"path": path, "mask": gen_mask(rng, shape)}
        if roll < 0.8:
            return "getitem", {"path": path, "sel": tuple(n + rng.randint(0, 2) for n in shape)}
        kind = rng.choice(["nchunks", "nbytes", "info", "describe"])
        if kind in ("nchunks", "nbytes"):
            # Rule: the edge chunks a shrink left differ (zarrkit clears, maybe erases them)
            return kind, {"path": path, "exact": not array.stale}
        return kind, {"path": path}

    def array_op(self) -> None:
        picked = self.pick_array()
        if picked is None:
            return self.create()
        path, array = picked
        rng = self.rng
        roll = rng.random()
        if roll < 0.4:
            kind, args = self.read_step(path, array)
            return self.add(kind, **args)
        if roll < 0.65:
            sel = gen_basic(rng, array.shape)
            value = gen_scalar(rng, array.dtype) if rng.random() < 0.3 else \
                gen_values(rng, array.dtype, selected_shape(array.shape, sel))
            return self.add("setitem", path=path, sel=sel, value=value)
        if roll < 0.78:
            return self.resize(path, array)
        if roll < 0.88 and array.shape:
            return self.append(path, array)
        if roll < 0.94:
            return self.refused(path, array)
        self.add("update_attributes", path=path, attributes={"u": rng.randint(0, 9)})

    def refused(self, path: str, array: ArrayModel) -> None:
        """A call both refuse, changing nothing."""
        rng, shape = self.rng, array.shape
        roll = rng.random()
        if roll < 0.3:
            return self.add("resize", path=path, shape=(*shape, 2), delete=True)
        if roll < 0.6:
            sel = gen_basic(rng, shape)
            got = selected_shape(shape, sel)
            wrong = (got[-1] + 2 if got else 2,)
            return self.add("bad_setitem", path=path, sel=sel,
                            value=gen_values(rng, array.dtype, wrong))
        if roll < 0.8 and shape:
            bad = tuple(np.array([n], "i8") for n in shape)  # one past the end
            return self.add("coordinates", path=path, sel=bad, vindex=rng.random() < 0.5)
        return self.add("getitem", path=path, sel=(0,) * (len(shape) + 1))

    def resize(self, path: str, array: ArrayModel) -> None:
        rng = self.rng
        new = tuple(max(0, n + rng.randint(-3, 3)) for n in array.shape)
        delete = rng.random() < 0.7
        self.add("resize", path=path, shape=new, delete=delete)
        old = array.shape
        # Rule: zarr-python keeps what lies outside the new shape in edge chunks (and in edge
        # shards); zarrkit clears it (delete_outside_chunks=True), or keeps it until a write
        # covers the edge chunk's part inside the shape (False): a shrink off a chunk or
        # shard boundary. (Chunks the libraries chose are not modelled: taken as off it.)
        shards = array.shards or (0,) * len(new)
        if any(m < n and (m % c if c else True) or (m < n and s and m % s)
               for m, n, c, s in zip(new, old, array.chunks, shards, strict=True)):
            array.stale = True
        array.shape = new
        grew = any(m > n for m, n in zip(new, old, strict=True))
        if grew and array.stale and math.prod(new):
            # Rule: write what grew, which zarr-python may show with values from before.
            for d, (m, n) in enumerate(zip(new, old, strict=True)):
                if m > n:
                    sel = tuple(slice(n, m) if i == d else slice(None) for i in range(len(new)))
                    self.add("setitem", path=path, sel=sel,
                             value=gen_values(rng, array.dtype, selected_shape(new, sel)))

    def append(self, path: str, array: ArrayModel) -> None:
        rng = self.rng
        axis = rng.randrange(len(array.shape))
        shape = list(array.shape)
        shape[axis] = rng.randint(1, 3)
        self.add("append", path=path, value=gen_values(rng, array.dtype, tuple(shape)),
                 axis=axis)
        array.shape = tuple(n + (k if i == axis else 0)
                            for i, (n, k) in enumerate(zip(array.shape, shape, strict=True)))

    def gather(self) -> None:
        """A batch whose results do not depend on its order: disjoint writes and reads."""
        rng = self.rng
        batch: list[tuple[str, dict[str, Any]]] = []
        written = None
        picked = self.pick_array()
        if picked and picked[1].shape and picked[1].shape[0] >= 2 and rng.random() < 0.7:
            written = picked[0]
            batch += self.disjoint_writes(*picked)
        for _ in range(rng.randint(0 if batch else 2, 4)):
            other = self.pick_array()
            if other and other[0] != written:
                batch.append(self.read_step(*other))
        if rng.random() < 0.25:  # members made side by side in one group
            parent = rng.choice(self.model.groups())
            batch += [self.creation(parent) for _ in range(rng.randint(2, 4))]
        elif rng.random() < 0.3:
            group = rng.choice(self.model.groups())
            batch.append(("listing", {"path": group}))
            batch.append(("contains", {"path": group, "name": rng.choice(
                self.model.children(group) + ["missing"])}))
        rng.shuffle(batch)
        self.add("gather", batch=batch)

    def disjoint_writes(self, path: str, array: ArrayModel) -> list[tuple[str, dict[str, Any]]]:
        """Writes of disjoint regions: runs of rows (some within one chunk) or interleaved
        strides (all in the same chunks)."""
        rng, n = self.rng, array.shape[0]
        k = rng.randint(2, min(n, 5))
        if rng.random() < 0.5:
            cuts = sorted(rng.sample(range(1, n), k - 1))
            rows = [slice(a, b) for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
        else:
            rows = [slice(i, None, k) for i in range(k)]
        writes = []
        for row in rows:
            sel = (row, *(gen_index(rng, m, False) if rng.random() < 0.3 else slice(None)
                          for m in array.shape[1:]))
            value = gen_values(rng, array.dtype, selected_shape(array.shape, sel))
            writes.append(("setitem", {"path": path, "sel": sel, "value": value}))
        return writes

    # -- groups --------------------------------------------------------------------------------
    def group_op(self) -> None:
        rng, model = self.rng, self.model
        group = rng.choice(model.groups())
        children = model.children(group)
        roll = rng.random()
        if roll < 0.2:
            shown = [c for c in children if join(group, c) not in model.loose]
            name = rng.choice(shown + ["missing", "missing/deeper"])
            return self.add("group_getitem", path=group, name=name)
        if roll < 0.3:
            return self.add("listing", path=group)
        if roll < 0.35:
            return self.add("update_attributes", path=group, attributes={"g": rng.random()})
        if roll < 0.45:
            return self.add("contains", path=group, name=rng.choice(children + ["nope"]))
        if roll < 0.55 and children:
            name = rng.choice(children)
            self.add("delitem", path=group, name=name)
            return model.remove(join(group, name))
        if roll < 0.65:
            name = rng.choice(children) if children and rng.random() < 0.5 else model.name()
            path = join(group, name)
            if path not in model.nodes:
                model.nodes[path] = None
            return self.add("require_group", path=group, name=name)
        if roll < 0.75:
            # Rule: zarr-python's require_array(dtype=str) compares numpy's "<U0" with the
            # array's StringDType and refuses
            arrays = [c for c in children if join(group, c) in model.arrays()
                      and model.nodes[join(group, c)].dtype != "str"]
            if arrays:
                name = rng.choice(arrays)
                existing = model.nodes[join(group, name)]
                assert existing is not None
                shape = existing.shape if rng.random() < 0.7 else (*existing.shape, 1)
                return self.add("require_array", path=group, name=name, shape=shape,
                                dtype=existing.dtype)
        if roll < 0.85 and children:  # an existing name: refused by both
            return self.add("create_group", parent=group, name=rng.choice(children),
                            attributes=None)
        if model.fmt == 3:  # Rule: zarr-python's group.zeros make v3 arrays in a v2 group
            return self.group_fill(group)
        self.create()

    def group_fill(self, group: str) -> None:
        rng, model = self.rng, self.model
        name = model.name()
        shape = tuple(rng.randint(0, 5) for _ in range(rng.randint(1, 2)))
        dtype = rng.choice([d for d in DTYPES if d != "str"])
        how = rng.choice(["zeros", "ones", "full", "empty", "zeros_like", "ones_like",
                          "full_like"])
        source = self.fill_source(how, shape, dtype)
        if source is None:
            return self.create()
        like, shape, dtype = source
        self.add("group_fill", path=group, name=name, how=how, shape=shape, dtype=dtype,
                 like=like, fill=gen_scalar(rng, dtype))
        self.made(join(group, name), ArrayModel(shape, shape, dtype), like, how)

    def made(self, path: str, array: ArrayModel, like: str | None, how: str) -> None:
        self.model.nodes[path] = array
        if like is not None or how == "empty":
            self.model.loose.add(path)

    # -- module functions ----------------------------------------------------------------------
    def module_op(self) -> None:
        rng, model = self.rng, self.model
        roll = rng.random()
        if roll < 0.25:
            path = rng.choice(model.groups()[1:] + model.arrays() + ["missing"])
            how = rng.choice(["open", "open_array", "open_group"])
            modes = ["r", "r+"]
            # Rule: zarr-python 3.1.6's open_group in mode "a" replaces an array by a new
            # group (zarrkit refuses), and makes a missing group in v3 under a v2 one
            if path != "missing" and (how != "open_group" or model.nodes[path] is None):
                modes.append("a")
            return self.add("module_open", path=path, mode=rng.choice(modes), how=how)
        parent = rng.choice(model.groups())
        name = model.name()
        path = join(parent, name)
        if roll < 0.5:
            return self.module_fill(path)
        if roll < 0.65:
            array, _ = gen_array_model(rng, model.fmt)
            data = gen_values(rng, array.dtype, array.shape)
            if array.dtype == "str":  # zarr-python refuses object arrays here (ambiguous)
                data = data.astype(np.dtypes.StringDType())
            self.add("module_array", path=path, data=data, chunks=array.chunks, fmt=model.fmt)
            model.nodes[path] = replace(array, shards=None, raw=False)
            return None
        if roll < 0.85:
            return self.save(path)
        if roll < 0.95 and model.arrays():
            target = rng.choice(model.arrays() + model.groups())
            return self.add("load", path=target, fmt=rng.choice([None, model.fmt]),
                            children=sorted(c for c in model.children(target)
                                            if model.nodes[join(target, c)] is not None)
                            if model.nodes.get(target) is None else None)
        if rng.random() < 0.5:
            return self.add("copy_all", path=rng.choice(model.groups()), fmt=model.fmt)
        self.add("tree", path=rng.choice(model.groups()))

    def module_fill(self, path: str) -> None:
        rng, model = self.rng, self.model
        how = rng.choice(["zeros", "ones", "full", "empty", "zeros_like", "ones_like",
                          "full_like", "empty_like"])
        shape = tuple(rng.randint(0, 6) for _ in range(rng.randint(0, 2)))
        dtype = rng.choice([d for d in DTYPES if d != "str"])
        source = self.fill_source(how, shape, dtype)
        if source is None:
            return self.create()
        like, shape, dtype = source
        self.add("module_fill", path=path, how=how, shape=shape, dtype=dtype, like=like,
                 fill=gen_scalar(rng, dtype), fmt=model.fmt)
        self.made(path, ArrayModel(shape, shape, dtype), like, how)
        return None

    def save(self, path: str) -> None:
        rng, model = self.rng, self.model
        arrays = []
        for _ in range(rng.choice([1, 1, 2])):
            array, _ = gen_array_model(rng, model.fmt)
            if array.dtype == "str":
                array.dtype = "int32"
            arrays.append(gen_values(rng, array.dtype, array.shape))
        self.add("save", path=path, arrays=arrays, fmt=model.fmt)
        if len(arrays) == 1:
            model.nodes[path] = ArrayModel(arrays[0].shape, arrays[0].shape, str(arrays[0].dtype))
        else:
            model.nodes[path] = None
            for i, a in enumerate(arrays):
                model.nodes[f"{path}/arr_{i}"] = ArrayModel(a.shape, a.shape, str(a.dtype))

    def consolidate(self) -> None:
        self.add("consolidate", fmt=self.model.fmt)
        self.add("open_consolidated", groups=self.model.groups()[1:])


# -- running a program -----------------------------------------------------------------------

def normalize(value: Any) -> Any:
    """A comparable form: nodes by their description, numpy values as they are (strings as
    object arrays: Rule: zarr-python 3 reads them as StringDType)."""
    if isinstance(value, zarr.AsyncArray | zarrkit.AsyncArray):
        return describe_array(value)
    if isinstance(value, zarr.AsyncGroup | zarrkit.AsyncGroup):
        return ("group", value.path, node_format(value), dict(value.attrs))
    if isinstance(value, np.ndarray | np.generic) and value.dtype.kind in "OTU":
        return np.asarray(value, dtype=object)
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return type(value)(normalize(v) for v in value)
    return value


def node_format(node: Any) -> int:
    # zarr-python's async handles have no zarr_format; zarrkit's metadata is the document
    return getattr(node, "zarr_format", None) or node.metadata.zarr_format


def dtype_name(dtype: Any) -> str:
    return "str" if np.dtype(dtype).kind in "OTU" else str(np.dtype(dtype))


def fill_form(fill: Any) -> Any:
    if isinstance(fill, np.generic):
        fill = fill.item()
    if isinstance(fill, float) and math.isnan(fill):
        return "nan"
    if isinstance(fill, complex):
        return (fill_form(fill.real), fill_form(fill.imag))
    return fill


def describe_array(a: Any) -> tuple[Any, ...]:
    fmt = node_format(a)
    return ("array", a.path, a.name, a.basename, fmt, tuple(a.shape), tuple(a.chunks),
            a.shards if fmt == 3 else None, dtype_name(a.dtype),
            fill_form(a.metadata.fill_value if isinstance(a, zarr.AsyncArray) else a.fill_value),
            dict(a.attrs), a.ndim, a.size, a.nchunks)


def loosely(a: Any) -> tuple[Any, ...]:
    """Rule: an array made by *_like, described without its chunks and codecs: zarr-python
    copies the codecs (a sharded array's `zeros_like` gets shards of its inner chunks' shape),
    zarrkit the chunks only. (Arrays made by `empty` are described so too, and not read: their
    values and fill value are the library's choice.)"""
    return ("like", a.path, tuple(a.shape), dtype_name(a.dtype))


class Runner:
    """Runs the steps with one library's async module `m` in directory `where`."""

    def __init__(self, library: str, where: str) -> None:
        self.library, self.where = library, where
        self.m = LIBRARIES[library][1]
        self.nodes: dict[str, Any] = {}

    async def run(self, steps: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        return [await self.outcome(kind, args) for kind, args in steps]

    async def outcome(self, kind: str, args: dict[str, Any]) -> Any:
        try:
            return ("ok", normalize(await getattr(self, "op_" + kind)(**args)))
        except Exception as e:  # compared by the test: both raise or neither
            return ("raised", e)

    async def node(self, path: str) -> Any:
        if path not in self.nodes:
            self.nodes[path] = await self.m.open(store=self.where, path=path or None, mode="r+")
        return self.nodes[path]

    # -- arrays --------------------------------------------------------------------------------
    async def op_root(self, fmt: int, attributes: dict[str, Any]) -> Any:
        self.nodes[""] = await self.m.open_group(self.where, mode="w", zarr_format=fmt,
                                                 attributes=attributes)
        return self.nodes[""]

    async def op_create_group(self, parent: str, name: str, attributes: Any) -> Any:
        made = await (await self.node(parent)).create_group(name, attributes=attributes)
        self.nodes[join(parent, name)] = made
        return made

    async def op_create_array(self, parent: str, name: str, kwargs: dict[str, Any]) -> Any:
        made = await (await self.node(parent)).create_array(name, **kwargs)
        self.nodes[join(parent, name)] = made
        return made

    async def op_module_create_array(self, path: str, kwargs: dict[str, Any], fmt: int) -> Any:
        made = await self.m.create_array(store=self.where, name=path, zarr_format=fmt, **kwargs)
        self.nodes[path] = made
        return made

    async def op_setitem(self, path: str, sel: Any, value: Any) -> Any:
        return await (await self.node(path)).setitem(sel, value)

    async def op_bad_setitem(self, path: str, sel: Any, value: Any) -> Any:
        a = await self.node(path)
        if self.library == "zarr":
            # Rule: zarr-python 3.1.6 writes a value too long for the selection (its first
            # elements), where zarrkit refuses one that does not broadcast to the selection.
            np.broadcast_to(value, np.empty(a.shape, "u1")[sel].shape)
        return await a.setitem(sel, value)

    async def op_getitem(self, path: str, sel: Any) -> Any:
        a = await self.node(path)
        try:
            return await a.getitem(sel)
        except zarr.errors.NegativeStepError:
            # Rule: zarrkit reads negative steps as numpy does, zarr-python refuses them.
            return (await a.getitem(...))[sel]

    async def op_orthogonal(self, path: str, sel: Any, oindex: bool) -> Any:
        a = await self.node(path)
        if oindex:
            return await a.oindex.getitem(sel)
        return await a.get_orthogonal_selection(sel)

    async def op_coordinates(self, path: str, sel: Any, vindex: bool) -> Any:
        a = await self.node(path)
        if vindex:
            return await a.vindex.getitem(sel)
        return await a.get_coordinate_selection(sel)

    async def op_mask(self, path: str, mask: np.ndarray) -> Any:
        return await (await self.node(path)).get_mask_selection(mask)

    async def op_resize(self, path: str, shape: tuple[int, ...], delete: bool) -> Any:
        a = await self.node(path)
        got = await a.resize(shape, delete_outside_chunks=delete)
        return got, a.shape

    async def op_append(self, path: str, value: np.ndarray, axis: int) -> Any:
        a = await self.node(path)
        return await a.append(value, axis=axis), a.shape

    async def op_update_attributes(self, path: str, attributes: dict[str, Any]) -> Any:
        node = await self.node(path)
        return (await node.update_attributes(attributes)) is node, dict(node.attrs)

    async def op_nchunks(self, path: str, exact: bool) -> Any:
        a = await self.node(path)
        count = await a.nchunks_initialized()
        # Rule: sharded arrays' counts differ (inner chunks, shards times their chunks)
        return count if exact and a.shards is None else type(count).__name__

    async def op_nbytes(self, path: str, exact: bool) -> Any:
        a = await self.node(path)
        total = await a.nbytes_stored()
        # Rule: metadata documents' sizes differ; compressed chunks may differ
        exact = exact and a.compressors == ()
        return total - self.metadata_bytes(path) if exact else type(total).__name__

    def metadata_bytes(self, path: str) -> int:
        where = os.path.join(self.where, path)
        return sum(os.path.getsize(os.path.join(where, name))
                   for name in os.listdir(where) if name in METADATA)

    async def op_info(self, path: str) -> Any:
        # Rule: type only (each library's own ArrayInfo)
        return type(await (await self.node(path)).info_complete()).__name__

    async def op_describe(self, path: str) -> Any:
        return await self.node(path)

    # -- batches -------------------------------------------------------------------------------
    async def op_gather(self, batch: list[tuple[str, dict[str, Any]]]) -> Any:
        for kind, args in batch:  # open the handles first: opening is not what races here
            if "path" in args and kind != "module_create_array":
                await self.node(args["path"])
        if self.library == "zarrkit":
            return await asyncio.gather(*(self.outcome(kind, args) for kind, args in batch))
        # Rule: zarr-python 3.1.6 loses writes when concurrent writes share a chunk (its
        # read-modify-writes take no lock: the last one back writes the chunk it read before
        # the others'), so its writes run one by one; zarrkit's race.
        writes = {i: await self.outcome(kind, args)
                  for i, (kind, args) in enumerate(batch) if kind == "setitem"}
        reads = [(i, step) for i, step in enumerate(batch) if i not in writes]
        done = await asyncio.gather(*(self.outcome(kind, args) for _, (kind, args) in reads))
        outcomes = writes | {i: outcome for (i, _), outcome in zip(reads, done, strict=True)}
        return [outcomes[i] for i in range(len(batch))]

    # -- groups --------------------------------------------------------------------------------
    async def op_group_getitem(self, path: str, name: str) -> Any:
        return await (await self.node(path)).getitem(name)

    async def op_listing(self, path: str) -> Any:
        g = await self.node(path)
        return ({(k, type(v).__name__) async for k, v in g.members()},
                {k async for k, _ in g.members(max_depth=None)},
                {k async for k in g.keys()}, {k async for k, _ in g.arrays()},
                {k async for k, _ in g.groups()})

    async def op_contains(self, path: str, name: str) -> Any:
        return await (await self.node(path)).contains(name)

    async def op_delitem(self, path: str, name: str) -> Any:
        await (await self.node(path)).delitem(name)
        gone = join(path, name)
        for p in [p for p in self.nodes if p == gone or p.startswith(gone + "/")]:
            del self.nodes[p]

    async def op_require_group(self, path: str, name: str) -> Any:
        return await (await self.node(path)).require_group(name)

    async def op_require_array(self, path: str, name: str, shape: Any, dtype: str) -> Any:
        return await (await self.node(path)).require_array(name, shape=shape, dtype=dtype)

    async def op_group_fill(self, path: str, name: str, how: str, shape: Any, dtype: str,
                            like: str | None, fill: Any) -> Any:
        g = await self.node(path)
        if like is not None:
            kwargs = {"fill_value": fill} if how == "full_like" else {}
            made = await getattr(g, how)(name=name, data=await self.node(like), **kwargs)
        elif how == "full":
            made = await g.full(name=name, shape=shape, fill_value=fill, dtype=dtype)
        else:
            made = await getattr(g, how)(name=name, shape=shape, dtype=dtype)
        return await self.made(join(path, name), made, how)

    async def made(self, path: str, made: Any, how: str) -> Any:
        self.nodes[path] = made
        if how.startswith("empty"):  # empty's values are undefined
            return made.shape, dtype_name(made.dtype)
        return loosely(made) if how.endswith("_like") else made, await made.getitem(...)

    # -- module functions ----------------------------------------------------------------------
    async def op_module_open(self, path: str, mode: str, how: str) -> Any:
        opened = await getattr(self.m, how)(store=self.where, path=path, mode=mode)
        return opened

    async def op_module_fill(self, path: str, how: str, shape: Any, dtype: str,
                             like: str | None, fill: Any, fmt: int) -> Any:
        where = {"store": self.where, "path": path}
        if like is not None:
            kwargs = {"fill_value": fill} if how == "full_like" else {}
            # Rule: zarr-python's *_like of a v2 array makes a v3 array (keeping the v2
            # compressor, which v3 refuses) unless zarr_format is given
            made = await getattr(self.m, how)(await self.node(like), **where, **kwargs,
                                              zarr_format=fmt)
        elif how == "full":
            made = await self.m.full(shape, fill, dtype=dtype, zarr_format=fmt, **where)
        else:
            made = await getattr(self.m, how)(shape, dtype=dtype, zarr_format=fmt, **where)
        return await self.made(path, made, how)

    async def op_module_array(self, path: str, data: np.ndarray, chunks: Any, fmt: int) -> Any:
        made = await self.m.array(data, store=self.where, path=path, chunks=chunks,
                                  zarr_format=fmt)
        self.nodes[path] = made
        return made, await made.getitem(...)

    async def op_save(self, path: str, arrays: list[np.ndarray], fmt: int) -> Any:
        saved = await self.m.save(self.where, *arrays, path=path, zarr_format=fmt)
        if saved is None:  # Rule: zarr-python's save returns None; zarrkit's the node
            saved = await self.m.open(store=self.where, path=path, mode="r")
        return saved

    async def op_load(self, path: str, fmt: int | None, children: list[str] | None) -> Any:
        try:
            return await self.m.load(store=self.where, path=path or None, zarr_format=fmt)
        except NotImplementedError:  # Rule: zarr-python does not load groups
            g = await self.m.open_group(store=self.where, path=path, mode="r")
            return {k: await a.getitem(...) async for k, a in g.arrays()}
        except IndexError:  # Rule: zarr-python's load reads [:], refused by a 0-d array
            a = await self.m.open_array(store=self.where, path=path, mode="r")
            if a.ndim:
                raise
            return await a.getitem(())

    async def op_tree(self, path: str) -> Any:
        tree = await self.m.tree(await self.node(path))
        return type(str(tree)).__name__  # Rule: type only (text, zarr-python's TreeRepr)

    async def op_copy_all(self, path: str, fmt: int) -> Any:
        """A group's members copied to a store of their own: zarrkit's copy reads back as
        its source (Rule: zarr-python 3.1.6's copy functions raise NotImplementedError)."""
        source = await self.node(path)
        dest = await self.m.open_group(self.where + "-copy", mode="w", zarr_format=fmt)
        try:
            copied = await self.m.copy_all(source, dest)
        except NotImplementedError:
            return "copied"
        assert isinstance(copied, tuple) and copied[1] == 0, copied  # (copied, skipped, ...)
        for key, node in [(k, v) async for k, v in source.members(max_depth=None)]:
            there = await dest.getitem(key)
            assert dict(there.attrs) == dict(node.attrs), key
            if isinstance(node, zarrkit.AsyncArray):
                assert mismatch(await node.getitem(...), await there.getitem(...)) is None, key
        return "copied"

    async def op_consolidate(self, fmt: int) -> Any:
        return await self.m.consolidate_metadata(self.where, zarr_format=fmt)

    async def op_open_consolidated(self, groups: list[str]) -> Any:
        """The hierarchy as the consolidated metadata shows it, from the root and its groups."""
        root = await self.m.open_consolidated(self.where)
        seen = [(root, {k async for k, _ in root.members(max_depth=None)})]
        for path in groups:
            g = await root.getitem(path)
            seen.append((g, {(k, type(v).__name__) async for k, v in g.members()}))
        return seen

    async def op_check_all(self, paths: list[str], loose: set[str]) -> Any:
        """What every node holds, opened afresh."""
        out = {}
        for path in paths:
            node = await self.m.open(store=self.where, path=path, mode="r")
            values = await node.getitem(...) if hasattr(node, "shape") else None
            if path in loose:
                node, values = loosely(node), None
            out[path] = (normalize(node), values)
        return out


# -- comparing -------------------------------------------------------------------------------

def mismatch(want: Any, have: Any) -> str | None:
    """Why `have` (zarrkit's) differs from `want` (zarr-python's), None when they agree."""
    if isinstance(want, np.ndarray | np.generic):
        if isinstance(have, str) and not want.shape:
            # Rule: a selection of integers only gives zarrkit's scalar (numpy's), where
            # zarr-python's orthogonal reads give a 0-d array: a str, of a text array
            have = np.asarray(have, dtype=object)
        if not isinstance(have, np.ndarray | np.generic):
            return f"not an array: {have!r}"
        if dtype_name(want.dtype) != dtype_name(have.dtype) or want.shape != have.shape:
            return f"{have.dtype}{have.shape} != {want.dtype}{want.shape}"
        equal_nan = want.dtype.kind in "fc"
        if not np.array_equal(want, have, equal_nan=equal_nan):
            return f"values {have!r} != {want!r}"
        return None
    if isinstance(want, dict):
        if not isinstance(have, dict) or set(want) != set(have):
            return f"{have!r} != {want!r}"
        return next((f"[{k!r}] {m}" for k in want if (m := mismatch(want[k], have[k]))), None)
    if isinstance(want, tuple | list):
        if type(have) is not type(want) or len(have) != len(want):
            return f"{have!r} != {want!r}"
        return next((f"[{i}] {m}" for i, (w, h) in enumerate(zip(want, have, strict=True))
                     if (m := mismatch(w, h))), None)
    if isinstance(want, float) and isinstance(have, float) and math.isnan(want):
        return None if math.isnan(have) else f"{have!r} != nan"
    return None if want == have else f"{have!r} != {want!r}"


def compare_outcomes(want: Any, have: Any) -> str | None:
    (w_kind, w), (h_kind, h) = want, have
    if h_kind == "raised" and not isinstance(h, zarrkit.ZarrkitError):
        return f"zarrkit raised a non-zarrkit {type(h).__name__}: {h}"
    if w_kind != h_kind:
        return f"zarr-python {w_kind} {w!r}, zarrkit {h_kind} {h!r}"
    if w_kind == "raised":
        return None
    if isinstance(w, list) and w and isinstance(w[0], tuple) and w[0][0] in ("ok", "raised"):
        return next((f"[{i}] {m}" for i, (a, b) in enumerate(zip(w, h, strict=True))
                     if (m := compare_outcomes(a, b))), None)  # a gather's outcomes
    return mismatch(w, h)


def cross_read(wheres: dict[str, str], paths: list[str], loose: set[str]) -> list[str]:
    """Each library's output read with each library's synchronous API: all four agree (the
    values of arrays made by `empty` and the codecs of those by `*_like` differ by writer)."""
    problems = []
    for path in paths:
        seen = {}
        for writer, where in wheres.items():
            for reader, (top, _) in LIBRARIES.items():
                try:
                    node = top.open(store=where, path=path, mode="r")
                    values = normalize(node[...]) if hasattr(node, "shape") else None
                    seen[writer, reader] = (type(node).__name__, dict(node.attrs), values)
                except Exception:  # compared: all four raise or none
                    seen[writer, reader] = ("raised",)
        problems += [f"{path}: {key} {m}" for key, got in seen.items()
                     if (m := mismatch(seen[key[0] if path in loose else "zarr", "zarr"], got))]
    return problems


def run_seed(seed: int, tmp: str) -> list[str]:
    generator = Generator(seed)
    steps = generator.program()
    outcomes, wheres = {}, {}
    for library in LIBRARIES:
        wheres[library] = os.path.join(tmp, library)
        os.makedirs(wheres[library])
        runner = Runner(library, wheres[library])
        outcomes[library] = asyncio.run(runner.run(copy.deepcopy(steps)))
    problems = [f"step {i} {kind} {args!r}: {m}" for i, ((kind, args), w, h) in enumerate(
        zip(steps, outcomes["zarr"], outcomes["zarrkit"], strict=True))
        if (m := compare_outcomes(w, h))]
    return problems + cross_read(wheres, sorted(generator.model.nodes), generator.model.loose)


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzz_async_program(seed, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problems = run_seed(seed, str(tmp_path))
    assert not problems, f"seed {seed}:\n" + "\n".join(problems[:5])


# -- regressions of what the fuzzer found ----------------------------------------------------

@pytest.mark.parametrize("zarr_format", [2, 3])
def test_nchunks_initialized_counts_the_grid_only(tmp_path, zarr_format):
    """Chunks kept beyond the shape by `delete_outside_chunks=False` (or stray keys) are not
    chunks of the array: zarrkit counted every key but the metadata (2 here, of a 1-chunk
    grid), zarr-python the grid's stored chunks."""
    where = str(tmp_path / "a")

    async def program(m):
        a = await m.create_array(store=where, shape=(9,), chunks=(7,), dtype="i4",
                                 zarr_format=zarr_format)
        await a.setitem(slice(None), np.arange(9, dtype="i4"))
        await a.resize((7,), delete_outside_chunks=False)
        return await a.nchunks_initialized()

    assert asyncio.run(program(zarrkit_async)) == 1
    a = zarrkit.open_array(where, mode="r")
    assert (a.nchunks_initialized, a.nshards_initialized) == (1, 1)
    assert "Chunks stored    : 1/1" in repr(a.info_complete())
    (tmp_path / "a" / "stray").write_bytes(b"x")  # not a chunk key
    assert zarrkit.open_array(where, mode="r").nchunks_initialized == 1
    grown = zarrkit.open_array(where, mode="r+")
    grown.resize((9,))
    assert grown[:].tolist() == list(range(9)) and grown.nchunks_initialized == 2


@pytest.mark.parametrize("dtype", ["i4", "u2", "f4", "f8", "c8"])
@pytest.mark.parametrize("fill", [True, False, np.True_])
def test_v2_number_arrays_take_a_boolean_fill_value(dtype, fill):
    """numpy's True and False of a number type, as v3 arrays (and zarr-python) take them: v2
    creation refused them as a JSON fill value of the wrong type."""
    a = zarrkit.full((2,), fill, dtype=dtype, zarr_format=2)
    assert a.fill_value == int(fill) and a[:].tolist() == [int(fill)] * 2
    theirs = zarr.full((2,), fill, dtype=dtype, zarr_format=2, store={})
    assert a.fill_value == theirs.metadata.fill_value


def test_a_stored_boolean_fill_of_a_number_type_stays_refused(tmp_path):
    """The .zarray's JSON `true` for an integer type is not a number (only numpy values given
    to creation are cast)."""
    zarrkit.create_array(str(tmp_path), shape=(2,), dtype="i4", zarr_format=2)
    doc = json.loads((tmp_path / ".zarray").read_text())
    doc["fill_value"] = True
    (tmp_path / ".zarray").write_text(json.dumps(doc))
    with pytest.raises(zarrkit.ZarrkitError, match="fill_value"):
        zarrkit.open_array(str(tmp_path), mode="r")


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_load_takes_zarr_format(tmp_path, zarr_format):
    """zarr-python's `load(store, path, zarr_format)`: the node's format is required."""
    where = str(tmp_path / "a")
    zarrkit.save(where, np.arange(3), zarr_format=zarr_format)
    other = 5 - zarr_format
    assert zarrkit.load(where, zarr_format=zarr_format).tolist() == [0, 1, 2]
    assert zarr.load(where, zarr_format=zarr_format).tolist() == [0, 1, 2]
    assert asyncio.run(zarrkit_async.load(store=where, zarr_format=zarr_format)).tolist() == \
        [0, 1, 2]
    with pytest.raises(zarrkit.NodeNotFoundError, match=f"zarr_format={other}"):
        zarrkit.load(where, zarr_format=other)
    with pytest.raises(zarrkit.NodeNotFoundError):
        asyncio.run(zarrkit_async.load(store=where, zarr_format=other))
    with pytest.raises(zarrkit.SpecError, match="zarr_format"):
        zarrkit.load(where, zarr_format="3")
    zarrkit.save(str(tmp_path / "g"), np.arange(2), b=np.ones(2), zarr_format=zarr_format)
    loaded = zarrkit.load(str(tmp_path / "g"), zarr_format=zarr_format)
    assert sorted(loaded) == ["arr_0", "b"]


@pytest.mark.parametrize("shards", [None, (12,)])
def test_gathered_writes_within_one_chunk_all_land(tmp_path, shards):
    """Interleaved strides written concurrently all fall in the same chunks: each
    read-modify-write holds the chunk's lock, so none is lost (zarr-python 3.1.6 loses
    some: the fuzzer runs its batches' writes one by one)."""
    async def program():
        a = await zarrkit_async.create_array(store=str(tmp_path / "a"), shape=(12,),
                                             chunks=(6,), shards=shards, dtype="i4",
                                             fill_value=-1)
        for _ in range(5):
            await asyncio.gather(*(a.setitem(slice(i, None, 4), i) for i in range(4)))
        return await a.getitem(...)
    assert asyncio.run(program()).tolist() == [i % 4 for i in range(12)]

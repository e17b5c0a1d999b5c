"""Differential fuzzing of views (indexing, dimension expressions, casts, translations,
transposes, resizes, reads and writes) against TensorStore.

A seeded generator builds chains of 3-6 operations, each a Python expression of the previous
handle `x`, from the domain TensorStore reports after each step. Each chain runs on the same
zarr3 array (written by TensorStore) with both libraries; the outcomes (error or not), the
domains and transforms, the values read, and for writes the whole stored array afterwards
must agree. Known, deliberate differences of the transforms are normalized away: zarrkit
does not record `index_array_bounds`, may store index arrays broadcast to full size, keeps an
empty index array where TensorStore uses a constant map over an empty domain, folds offset
and stride into the array, and keeps a single-valued array where TensorStore may use a
constant. Input bounds are compared through the domains (the transform of TensorStore's
`spec()` marks fewer bounds implicit). The chains also run on bare IndexTransforms and
IndexDomains (their `[...]`, `.oindex`, `.vindex`).

TensorStore 0.1.86 bugs found on the way, which the generator avoids rather than copies:

- Segmentation faults: an Ellipsis in a later operation of a dimension expression,
  `ts.IndexTransform(input_shape=[1, 2])[ts.d[1, 0].translate_by[1, -2][...]]`; and
  `ts.IndexTransform(input_shape=[3, 1, 3, 1])[np.array([0, 0, 0]), None]
  .oindex[np.array([0, 2]), 1:, 0, 0]`, `x[d[1:].transpose[2, 1].oindex[0:1, 2]]` on some
  domains (the chains of `UNUSABLE`). The second is one case of a crash on indexing a
  transform that maps through an index array so that its domain is or stays empty, which
  TensorStores (not only bare IndexTransforms) hit: `t[[0, 1, 2]][:, 5:]` or
  `t[[0, 1, 2], 5:][:]` on an array of shape [4, 5, 6]; in one step, `t[[0, 1, 2], 5:]`, it
  does not crash (test_spec_views.py compares the two). Seeds 1030, 1654 and 2243 here;
  reading such a view crashes it too (seeds 1895, 1911).
- Writing an empty array to an empty view made by an empty index array, e.g.
  `t[np.array([], np.int64)].write(np.zeros((0,), np.float32))` on a file-backed array of
  shape [1], overwrites element 0 with uninitialized memory: the map became the constant 0.
  zarrkit writes nothing; the test expects the array unchanged.
- A zero-rank index array on an empty dimension, `x[np.array([False])][np.array(0)]`, reads
  an element outside the view (the empty index array became a constant 0 and the new index
  is never checked); the generator makes no index arrays for empty dimensions.
- Labels with newaxis: `d["b", 0][..., None]` is accepted but `d[0, "b"][..., None]` is
  refused ("Dimensions specified by label cannot be used with newaxis"): only the last
  selected dimension is checked. The generator adds no None to selections with labels.
- Index arrays over a domain empty between explicit bounds become constant maps of the
  map's offset, and stay so once `mark_bounds_implicit` lets the domain grow again:
  `t.translate_to[-1, 0, 0][d[1][0:0]][d[0].oindex[[True, True, False]]]
  [d[1].mark_bounds_implicit[True]].oindex[:, [0, 1]]` reads rows 1, 1 instead of 1, 2.
  zarrkit keeps the arrays, also when composing, resizing or opening over such a domain,
  and reads what they map; one left without values for a dimension that grows again (a
  diagonal with the empty dimension) fails the read (tests/test_hunt_view_ops.py). Results
  then differ (seeds outside `SEEDS`): TensorStore fails to read an empty view because the
  constant lies outside the empty dimension it came from (1112, 2278), and its transforms
  hold constants where zarrkit's hold arrays (1750). Seed 2840 now agrees: both fail to
  read, TensorStore as its constant -1 is out of bounds, zarrkit as the array has no values
  for the grown dimension (zarrkit used to make the arrays the constant 0 and read data).
- Resizing a view whose origin is not 0 to an exclusive_max below its origin, e.g.
  `t.translate_to[2].resize(exclusive_max=[1])`, succeeds and stores a negative shape: the
  array cannot be opened again. zarrkit refuses the resize.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import SelectionError, ZarrkitError

ts = pytest.importorskip("tensorstore")

from _spec_helpers import stored_pair  # noqa: E402

BASE_DTYPES = ["int32", "uint8", "float32", "int16"]
CAST_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
               "float16", "float32", "float64", "bool", "bfloat16", "float8_e4m3fn",
               "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float4_e2m1fn",
               "complex64", "int4", "int2"]
#: Too narrow for the values 0..99: converting a float to them is undefined in C++.
NARROW = {"int4", "int2"}
NAMES = {"int64": "int64", "bool": "bool", "np": np}


# -- generating chains ------------------------------------------------------------------------

class _Gen:
    """Random operations for a handle with domain `dom` (TensorStore's)."""

    def __init__(self, rng: random.Random) -> None:
        self.r = rng

    def point(self, lo: int, n: int, wrong: float = 0.05) -> int:
        if n == 0 or self.r.random() < wrong:
            return self.r.choice([lo - 1, lo + n])  # out of bounds
        return self.r.randrange(lo, lo + n)

    def bound(self, lo: int, n: int) -> int | None:
        if self.r.random() < 0.3:
            return None
        return self.r.randint(lo - 1, lo + n + 1) if self.r.random() < 0.1 else \
            self.r.randint(lo, lo + n)

    def slice(self, lo: int, n: int) -> slice:
        step = self.r.choice([None, None, 1, 2, -1, -2, 3])
        start, stop = self.bound(lo, n), self.bound(lo, n)
        if None not in (start, stop) and start > stop and self.r.random() < 0.8:
            start, stop = stop, start
        if step is not None and step < 0 and self.r.random() < 0.7:
            start, stop = (None if stop is None else stop - 1), \
                (None if start is None else start - 1)
        return slice(start, stop, step)

    def array(self, lo: int, n: int, shape: tuple[int, ...]) -> np.ndarray:
        if n == 0:  # see the module's docstring: no 0-d or one-element array here
            return np.zeros((0,) + shape[1:], np.int64)
        return np.array([self.point(lo, n, 0.01) for _ in range(int(np.prod(shape)))],
                        np.int64).reshape(shape)

    def array_shape(self) -> tuple[int, ...]:
        return self.r.choice([(1,), (2,), (3,), (0,), (2, 1), (1, 3), (2, 2), ()])

    def terms(self, dom: Any, mode: str, rank: int | None = None, allow_new: bool = True,
              dims_only: bool = False) -> list[Any]:
        """Index terms for `rank` dimensions of `dom` (all when None); `allow_new`: may
        hold None and an Ellipsis (TensorStore 0.1.86 crashes on an Ellipsis in a later
        operation of a dimension expression, e.g. `d[1,0].translate_by[1,2][...]`)."""
        rank = dom.rank if rank is None else rank
        pad = max(0, rank - dom.rank)  # a dimension expression may name new dimensions
        lo, shape = list(dom.inclusive_min) + [0] * pad, list(dom.shape) + [1] * pad
        # A dimension expression's terms must use every selected dimension (no implicit
        # trailing Ellipsis); allow_new is False only for its later operations.
        k = rank if self.r.random() < 0.5 or dims_only else self.r.randint(0, rank)
        terms: list[Any] = []
        i = 0
        shapes = [self.array_shape()] if mode == "vindex" else []
        while i < k:
            kind = self.r.random()
            if kind < 0.25:
                terms.append(self.point(lo[i], shape[i]))
            elif kind < 0.55:
                terms.append(self.slice(lo[i], shape[i]))
            elif kind < 0.8:
                s = self.r.choice(shapes) if shapes and self.r.random() < 0.7 else \
                    self.array_shape()
                if mode == "numpy" and self.r.random() < 0.3 and s:
                    s = (1,) * (len(s) - 1) + s[-1:]
                terms.append(self.array(lo[i], shape[i], s))
            elif kind < 0.92 and shape[i] <= 6:
                m = min(self.r.choice([1, 1, 2]), k - i)
                mask = np.array([self.r.random() < 0.5 for _ in range(int(np.prod(
                    shape[i:i + m])))], bool).reshape(shape[i:i + m])
                terms.append(mask)
                i += m
                continue
            else:
                terms.append(self.r.choice([self.point(lo[i], shape[i]), slice(None)]))
            i += 1
        if allow_new and self.r.random() < 0.25:
            terms.insert(self.r.randint(0, len(terms)), None)
        if allow_new and self.r.random() < 0.2 and len(terms) < rank + 1:
            terms.insert(self.r.randint(0, len(terms)), Ellipsis)
        return terms

    def dims(self, dom: Any) -> tuple[str, list[int]]:
        """A dimension selection for `d[...]`, and the dimensions it selects."""
        rank, labels = dom.rank, list(dom.labels)
        choice = self.r.random()
        if choice < 0.15 and rank:
            text = self.r.choice(["0:2", "::-1", "1:", ":", "-2:"])
            return text, eval(f"list(range({rank}))[{text}]")  # noqa: S307 - as Python's
        picked = self.r.sample(range(rank), self.r.randint(1, rank)) if rank else []
        if rank and self.r.random() < 0.05:
            picked.append(self.r.choice([rank, -rank - 1]))  # out of range
        out = []
        for j in picked:
            if 0 <= j < rank and labels[j] and self.r.random() < 0.6:
                out.append(repr(labels[j]))
            elif 0 <= j < rank and self.r.random() < 0.3:
                out.append(str(j - rank))
            else:
                out.append(str(j))
        return ",".join(out), [j for j in picked if 0 <= j < rank]

    def values(self, n: int, lo: int, hi: int) -> str:
        vals = [self.r.randint(lo, hi) for _ in range(n)]
        if n == 1 and self.r.random() < 0.5:
            return str(vals[0])
        return ",".join(map(str, vals)) if n else "()"

    def op(self, dom: Any, dtype: str) -> str:
        r, rank = self.r, dom.rank
        kind = r.random()
        if kind < 0.3:
            mode = r.choice(["numpy", "numpy", "oindex", "vindex"])
            sel = _render(self.terms(dom, mode))
            return {"numpy": f"x[{sel}]", "oindex": f"x.oindex[{sel}]",
                    "vindex": f"x.vindex[{sel}]"}[mode]
        if kind < 0.37:
            return f"x.translate_to[{self.values(rank, -3, 3)}]"
        if kind < 0.43:
            return f"x.translate_by[{self.values(rank, -3, 3)}]"
        if kind < 0.47:
            labels = [r.choice(["a", "b", "c", "d", "e", ""]) for _ in range(rank)]
            return f"x.label[{','.join(map(repr, labels)) or '()'}]"
        if kind < 0.5:
            return "x.T"
        if kind < 0.53:
            axes = list(range(rank))
            r.shuffle(axes)
            return f"x.transpose({axes})"
        if kind < 0.6 or rank == 0:
            targets = [t for t in CAST_DTYPES
                       if t not in NARROW or dtype.startswith(("int", "uint", "bool"))]
            return f"cast(x, {r.choice(targets)!r})"
        return self.dim_op(dom)

    def dim_op(self, dom: Any) -> str:
        r = self.r
        dims, picked = self.dims(dom)
        text = f"d[{dims}]"
        sub = _Dom([dom.inclusive_min[j] for j in picked], [dom.shape[j] for j in picked],
                   dom.rank)
        for n in range(r.choice([1, 1, 2])):
            # No None with labels: see the module's docstring.
            text += self.dim_step(sub, first=n == 0 and "'" not in dims)
        return f"x[{text}]"

    def dim_step(self, dom: Any, first: bool) -> str:
        """One operation of a dimension expression on the selected dimensions `dom`; its
        arguments sometimes do not fit (mismatches must fail the same way in both)."""
        r = self.r
        k = dom.rank if r.random() < 0.85 else r.choice([1, 2, 3])
        kind = r.random()
        if kind < 0.35:
            mode = r.choice(["numpy", "oindex", "vindex"])
            sel = _render(self.terms(dom, mode, rank=max(k, 1), allow_new=first,
                                     dims_only=r.random() < 0.8))
            return {"numpy": f"[{sel}]", "oindex": f".oindex[{sel}]",
                    "vindex": f".vindex[{sel}]"}[mode]
        if kind < 0.45:
            return f".translate_to[{self.values(k, -3, 3)}]"
        if kind < 0.55:
            return f".translate_by[{self.values(k, -3, 3)}]"
        if kind < 0.68:
            vals = [r.choice([1, 2, 3, -1, -2]) for _ in range(k)]
            return f".stride[{','.join(map(str, vals)) or '()'}]"
        if kind < 0.8:
            if r.random() < 0.2:
                target = r.choice(["0", "-1", "1", "0,1", "1,0", "-1,0", "'a'", "2:"])
            else:  # k distinct positions of the result
                target = ",".join(map(str, r.sample(range(dom.full), min(k, dom.full))))
                target = target or "()"
            return f".transpose[{target}]"
        if kind < 0.87:
            labels = [r.choice(["a", "b", "x", "y", ""]) for _ in range(k)]
            return f".label[{','.join(map(repr, labels)) or '()'}]"
        if kind < 0.94:
            return f".mark_bounds_implicit[{r.choice(['True', 'False', 'None:True', ':False'])}]"
        return ".diagonal"


class _Dom:
    """The bounds of some dimensions of a domain (those a dimension selection picks)."""

    def __init__(self, inclusive_min: list[int], shape: list[int], full: int) -> None:
        self.inclusive_min, self.shape, self.rank = inclusive_min, shape, len(shape)
        self.full = full  # the rank of the whole domain


def _render(terms: list[Any]) -> str:
    if not terms:
        return "()"
    parts = []
    for t in terms:
        if t is Ellipsis:
            parts.append("...")
        elif isinstance(t, np.ndarray):
            text = f"np.array({t.tolist()},{t.dtype.name})"
            parts.append(text if t.size else f"{text}.reshape({t.shape})")
        else:
            parts.append(repr(t))
    text = ",".join(parts)
    return text + "," if len(terms) == 1 and isinstance(terms[0], tuple) else text


def _names(lib: str) -> dict[str, Any]:
    if lib == "ts":
        return {**NAMES, "d": ts.d, "cast": ts.cast}
    return {**NAMES, "d": zarrkit.d, "cast": zarrkit.cast}


def _step(handle: Any, op: str, lib: str) -> Any:
    return eval(op, {**_names(lib), "x": handle})  # noqa: S307 - generated test expressions


# -- the stored arrays -------------------------------------------------------------------------

def _case(seed: int) -> dict[str, Any]:
    """The array of a chain: shape, base data type, initial values (0..99, exact in every
    type a chain casts to), start operations (labels, translation)."""
    r = random.Random(seed)
    rank = r.randint(1, 4)
    shape = [r.randint(0 if r.random() < 0.05 else 1, 5 if rank < 4 else 3)
             for _ in range(rank)]
    dtype = r.choice(BASE_DTYPES)
    values = np.array([r.randrange(100) for _ in range(int(np.prod(shape)))]).reshape(shape)
    return {"shape": shape, "dtype": dtype, "values": values.astype(dtype), "rng": r}


def _store(path: Any, case: dict[str, Any], values: np.ndarray | None = None) -> dict[str, Any]:
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}
    chunks = [max(1, (n + 1) // 2) for n in case["shape"]]
    t = ts.open(spec, create=True, dtype=case["dtype"] if values is None else values.dtype.name,
                shape=case["shape"], chunk_layout=ts.ChunkLayout(chunk_shape=chunks)).result()
    t[...] = case["values"] if values is None else values
    return spec


def chain_of(seed: int, path: Any) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    """(case, operations, spec of the stored array): the chain generated from TensorStore's
    domains, stopping after the first operation TensorStore refuses."""
    case = _case(seed)
    r = case["rng"]
    spec = _store(path, case)
    handle = ts.open(spec).result()
    ops: list[str] = []
    if r.random() < 0.5:
        ops.append(f"x.label[{','.join(repr('abcd'[i]) for i in range(len(case['shape'])))}]")
    if r.random() < 0.5:
        ops.append(f"x.translate_to[{','.join(str(r.randint(-3, 3)) for _ in case['shape'])}]")
    for op in ops:
        handle = _step(handle, op, "ts")
    gen = _Gen(r)
    for _ in range(r.randint(3, 6)):
        op = gen.op(handle.domain, handle.dtype.name)
        ops.append(op)
        try:
            handle = _step(handle, op, "ts")
        except Exception:  # noqa: BLE001 - TensorStore's refusal ends the chain
            break
        if handle.domain.size > 4000:
            break
    return case, ops, spec


# -- comparing ---------------------------------------------------------------------------------

def _transform_json(handle: Any, lib: str) -> Any:
    """The output maps of a handle's transform, normalized (the input bounds are the
    domain's, compared on their own: TensorStore's spec marks fewer of them implicit)."""
    try:
        json = handle.spec().transform.to_json() if lib == "ts" else handle.transform.to_json()
    except ValueError as exc:  # TensorStore checks constant maps when making a spec
        return f"no spec: {type(exc).__name__}"
    return _maps(json, list(handle.domain.shape))


def _maps(json: dict[str, Any], shape: list[int]) -> list[Any]:
    outputs = []
    for m in json.get("output", []):
        m = dict(m)
        m.pop("index_array_bounds", None)
        if 0 in shape and "input_dimension" not in m:
            m = {"empty": True}  # TensorStore: a constant map; zarrkit: an empty array
        elif "index_array" in m:
            # offset + stride * array, as one array broadcast to the domain; a constant one
            # is a constant map (TensorStore makes one of an array with a single value).
            values = np.array(m["index_array"], np.int64) * m.pop("stride", 1)
            values = values + m.pop("offset", 0)
            if values.size and (values == values.flat[0]).all():
                m = {"offset": int(values.flat[0])} if values.flat[0] else {}
            else:
                m["index_array"] = np.broadcast_to(values, shape).tolist()
        outputs.append(m)
    return outputs


def _explicit(bound: Any) -> Any:
    return bound[0] if isinstance(bound, list) else bound


def _outcome(ops: list[str], start: Any, lib: str) -> tuple[str, Any, list[Any]]:
    """("ok", handle, per-step domains) or ("error", exception, domains so far)."""
    handle, seen = start, []
    for op in ops:
        try:
            handle = _step(handle, op, lib)
        except Exception as exc:  # noqa: BLE001 - compared by the caller
            return "error", exc, seen
        seen.append((op, handle.domain.to_json(), _transform_json(handle, lib)))
    return "ok", handle, seen


def _float_to_int(ops: list[str], base: str) -> bool:
    return False


def _same_values(expected: np.ndarray, actual: np.ndarray) -> bool:
    if expected.shape != actual.shape or expected.dtype != actual.dtype:
        return False
    return bool(np.array_equal(expected, actual, equal_nan=expected.dtype.kind == "f"))


def compare_read(seed: int, path: Any) -> None:
    case, ops, spec = chain_of(seed, path / "a")
    status_t, t, seen_t = _outcome(ops, ts.open(spec).result(), "ts")
    status_z, z, seen_z = _outcome(ops, zarrkit.open(spec).view, "zk")
    context = f"seed {seed}: shape {case['shape']} {case['dtype']} ops {ops}"
    for a, b in zip(seen_t, seen_z, strict=False):
        if isinstance(a[2], str):  # no spec to compare
            a, b = a[:2], b[:2]
        assert a == b, f"{context}: after {a[0]}:\nts {a[1:]}\nzk {b[1:]}"
    assert status_t == status_z, f"{context}: ts {status_t} {t!r}, zk {status_z} {z!r}"
    if status_t == "error":
        assert isinstance(z, ZarrkitError), f"{context}: zk raised {z!r}"
        return
    try:
        expected = t.read().result()
    except ValueError:  # out of bounds, found when reading
        _read_fails(z, context)
        return
    try:
        actual = z.read().result()
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"{context}: zk read failed: {exc!r}") from exc
    assert _same_values(expected, actual), \
        f"{context}: read\nts {expected!r}\nzk {actual!r}"


def _read_fails(view: Any, context: str) -> None:
    try:
        view.read().result()
    except ZarrkitError:
        return
    raise AssertionError(f"{context}: zk read did not fail")


def _ids(case: dict[str, Any], ops: list[str], path: Any) -> np.ndarray:
    """The element numbers (row-major) the chain's view reaches, read through TensorStore
    with the casts left out."""
    ids = np.arange(int(np.prod(case["shape"])), dtype=np.int64).reshape(case["shape"])
    spec = _store(path, case, ids)
    plain = [op for op in ops if not op.startswith("cast(")]
    handle = ts.open(spec).result()
    for op in plain:
        handle = _step(handle, op, "ts")
    return handle.read().result()


def compare_write(seed: int, path: Any) -> None:
    case, ops, spec_t = chain_of(seed, path / "t")
    status, t, _ = _outcome(ops, ts.open(spec_t).result(), "ts")
    if status == "error":
        return
    spec_z = _store(path / "z", case)
    z = _outcome(ops, zarrkit.open(spec_z).view, "zk")[1]
    context = f"seed {seed}: shape {case['shape']} {case['dtype']} ops {ops}"
    try:
        ids = _ids(case, ops, path / "ids")
    except ValueError:  # out of bounds, or unbounded: the writes must fail too
        ids = np.zeros((), np.int64)
    # Values a function of the element written, so repeated elements get the same value.
    value = ((ids * 37 + seed) % 100).astype(t.dtype.numpy_dtype)
    outcome_t = outcome_z = "ok"
    try:
        t.write(value).result()
    except Exception as exc:  # noqa: BLE001
        outcome_t = f"error {exc!r}"
    try:
        z.write(value).result()
    except Exception as exc:  # noqa: BLE001
        outcome_z = f"error {exc!r}"
        assert isinstance(exc, ZarrkitError), f"{context}: zk raised {exc!r}"
    assert outcome_t.split(" ")[0] == outcome_z.split(" ")[0], \
        f"{context}: write ts {outcome_t}, zk {outcome_z}"
    expected = ts.open(spec_t).result().read().result()
    if t.domain.size == 0:  # TensorStore's bug (the module's docstring): nothing changes
        expected = case["values"]
    actual = ts.open(spec_z).result().read().result()
    assert _same_values(expected, actual), f"{context}: stored\nts {expected!r}\nzk {actual!r}"


def _domain_steps(ops: list[str], start: Any, lib: str, domain_only: bool) -> list[Any]:
    """The JSON of each step of the chain on a bare IndexTransform (or IndexDomain), until
    an error (its exception type: a zarrkit error when zarrkit raised)."""
    out, x = [], start
    for op in ops:
        try:
            x = _step(x, op, lib)
        except Exception as exc:  # noqa: BLE001 - compared by the caller
            out.append("error" if lib == "ts" or isinstance(exc, ZarrkitError) else repr(exc))
            break
        json = x.to_json()
        if domain_only:
            out.append(json)
        else:  # the domain's members, then the normalized maps
            shape = list(x.domain.shape)
            domain = {k: v for k, v in json.items() if k != "output"}
            out.append((x.domain.to_json(), _maps(json, shape) if "output" in json else
                        [{"input_dimension": j} for j in range(len(shape))], sorted(domain)))
    return out


def compare_transforms(seed: int, path: Any) -> None:
    """The chain's indexing operations on the array's IndexTransform and, for dimension
    expressions, its IndexDomain, built directly (no array)."""
    case, ops, spec = chain_of(seed, path / "a")
    domain = ts.open(spec).result().domain
    z_domain = zarrkit.IndexDomain.from_json(domain.to_json())
    context = f"seed {seed}: shape {case['shape']} ops {ops}"
    subscripts = [op for op in ops if op.startswith(("x[", "x.oindex[", "x.vindex["))]
    expected = _domain_steps(subscripts, ts.IndexTransform(domain), "ts", False)
    actual = _domain_steps(subscripts, zarrkit.IndexTransform.identity(z_domain), "zk", False)
    assert expected == actual, f"{context}: transforms\nts {expected}\nzk {actual}"
    dims = [op for op in ops if op.startswith("x[d[")]
    expected = _domain_steps(dims, domain, "ts", True)
    actual = _domain_steps(dims, z_domain, "zk", True)
    assert expected == actual, f"{context}: domains\nts {expected}\nzk {actual}"


#: TensorStore 0.1.86 crashes (segmentation fault) on these chains (the module's docstring).
UNUSABLE = {7, 1030, 1654, 1895, 1911, 2243}
SEEDS = [seed for seed in range(0, 250) if seed not in UNUSABLE]


@pytest.mark.parametrize("seed", SEEDS)
def test_read_chains_like_tensorstore(tmp_path, seed):
    compare_read(seed, tmp_path)


@pytest.mark.parametrize("seed", SEEDS)
def test_write_chains_like_tensorstore(tmp_path, seed):
    compare_write(seed, tmp_path)


@pytest.mark.parametrize("seed", SEEDS)
def test_transform_and_domain_chains_like_tensorstore(tmp_path, seed):
    compare_transforms(seed, tmp_path)


# -- regressions: the bugs the fuzzing found, as minimal reproducers ---------------------------

def _pair(tmp_path: Any) -> tuple[Any, Any]:
    t, a, _ = stored_pair(tmp_path)
    return t, a.view


@pytest.mark.parametrize("stride", [-1, -2, 2, 3])
@pytest.mark.parametrize("origin", [-3, 0, 1, 4])
def test_stride_of_an_empty_dimension(tmp_path, origin, stride):
    """An empty interval sits at ceil(origin / stride) (was one off for negative strides)."""
    t, z = _pair(tmp_path)
    expression = f"x[{origin}:{origin}][d[0].stride[{stride}]]"
    t = eval(expression, {"x": t.translate_to[origin, 0, 0], "d": ts.d})  # noqa: S307
    z = eval(expression, {"x": z.translate_to[origin, 0, 0], "d": zarrkit.d})  # noqa: S307
    assert z.domain.to_json() == t.domain.to_json()


def test_a_constant_out_of_bounds_fails_a_read_empty_only_by_implicit_bounds(tmp_path):
    """Empty once its implicit bounds are resolved, the view is still checked (an empty
    view between explicit bounds is not)."""
    t, z = _pair(tmp_path)
    implicit = "x[0:0][d[0].mark_bounds_implicit[True:]].oindex[:, 7]"
    explicit = "x[0:0].oindex[:, 7]"
    for lib, x, d in (("ts", t, ts.d), ("zk", z, zarrkit.d)):
        view = eval(implicit, {"x": x, "d": d})  # noqa: S307
        with pytest.raises(ZarrkitError if lib == "zk" else ValueError):
            view.read().result()
        assert eval(explicit, {"x": x, "d": d}).read().result().shape == (0, 6)  # noqa: S307


def test_a_negative_constant_through_implicit_bounds_fails_only_when_read(tmp_path):
    t, z = _pair(tmp_path)
    tv = t[ts.d[0].mark_bounds_implicit[True]][-1]
    zv = z[zarrkit.d[0].mark_bounds_implicit[True]][-1]
    assert zv.domain.to_json() == tv.domain.to_json()
    with pytest.raises(ValueError):
        tv.read().result()
    with pytest.raises(SelectionError, match="index -1 is out of bounds"):
        zv.read().result()


@pytest.mark.parametrize("expression", ["x[[0, 1], [-1]]", "x.vindex[[0, 1], :, [[-1]]]",
                                        "x[d[0, 2][[0, 1], [-1]]]"])
def test_a_one_element_index_array_broadcast_is_checked_as_an_integer(tmp_path, expression):
    t, z = _pair(tmp_path)
    with pytest.raises(IndexError):
        eval(expression, {"x": t, "d": ts.d})  # noqa: S307
    with pytest.raises(SelectionError, match="-1 is outside the valid range"):
        eval(expression, {"x": z, "d": zarrkit.d})  # noqa: S307


@pytest.mark.parametrize("expression", [
    "x[:, [0, 1], ..., [1, 2]]", "x[[0, 1], :, 0]", "x[0, :, [0, 1]]", "x[:, [0, 1], 0]",
    "x[d[:][[0, 1], :, 0]]", "x[d[:][:, [0, 1], ..., [1, 2]]]", "x[d[0, 2][0, [0, 1]]]",
    "x[d[0, 1, 2][[0, 1], ..., [1, 2]]]", "x[[0, 1], True, [1, 2]]"])
def test_where_index_array_dimensions_go_like_tensorstore(tmp_path, expression):
    """In place when the arrays (and integers after the first) are adjacent terms; an
    Ellipsis parts them even when it stands for no dimension."""
    t, z = _pair(tmp_path)
    tv = eval(expression, {"x": t, "d": ts.d})  # noqa: S307
    zv = eval(expression, {"x": z, "d": zarrkit.d})  # noqa: S307
    assert zv.domain.to_json() == tv.domain.to_json()
    assert (zv.read().result() == tv.read().result()).all()


@pytest.mark.parametrize("expression", ["x[1:3][[1, 3]]", "x[:, 1:3].oindex[:, [[1], [3]]]",
                                        "x[d[0][1:3].translate_by[2][[3, 5]]]",
                                        "x[d[0][1:3]].vindex[[1, 3], [0, 1]]"])
def test_index_array_values_outside_the_view_fail_the_read(tmp_path, expression):
    """Values past the view's explicit bounds but inside the array's were read from the
    array; TensorStore (and now zarrkit) checks them against the view's bounds."""
    t, z = _pair(tmp_path)
    with pytest.raises(ValueError):
        eval(expression, {"x": t, "d": ts.d}).read().result()  # noqa: S307
    zv = eval(expression, {"x": z, "d": zarrkit.d})  # noqa: S307
    assert zv.domain.to_json() == eval(expression, {"x": t, "d": ts.d}).domain.to_json()  # noqa: S307
    with pytest.raises(SelectionError, match="3 is outside the valid range"):
        zv.read().result()


def test_a_zero_rank_index_array_is_checked_only_where_its_dimension_is_read(tmp_path):
    """Outside an explicit bound: refused when composed onto a dimension the view reads
    directly, as a single index; a bare domain does not check it."""
    t, z = _pair(tmp_path)
    with pytest.raises(IndexError):
        t[1:3][np.array(4)]
    with pytest.raises(SelectionError, match="4 is outside the valid range"):
        z[1:3][np.array(4)]
    expected = t.domain[ts.d[0][1:3].translate_by[1][np.array(0)]]
    assert z.domain[zarrkit.d[0][1:3].translate_by[1][np.array(0)]].to_json() == \
        expected.to_json()


def test_a_lone_zero_rank_integer_array_applies_to_each_selected_dimension(tmp_path):
    t, z = _pair(tmp_path)
    tv = t[ts.d[0, 1][np.array(1)]]
    zv = z[zarrkit.d[0, 1][np.array(1)]]
    assert zv.domain.to_json() == tv.domain.to_json()
    assert (zv.read().result() == tv.read().result()).all()


def _bare(json: dict[str, Any]) -> tuple[Any, Any]:
    return ts.IndexTransform(json=json), zarrkit.IndexTransform.from_json(json)


@pytest.mark.parametrize("expression", [
    "x[d[0].translate_by[1]][d[0].stride[2]]",
    "x[d[0].translate_by[1].stride[2]][d[0].mark_bounds_implicit[True]]"])
def test_an_index_array_stays_when_only_implicit_bounds_empty_the_domain(expression):
    """Only a dimension empty between explicit bounds makes TensorStore's index arrays
    constants: a stride emptying an implicit dimension keeps the array (seed 119). zarrkit
    keeps them in both cases (tests/test_hunt_view_ops.py)."""
    json = {"input_inclusive_min": [[0], 0], "input_exclusive_max": [[1], 3],
            "output": [{"index_array": [[2, 0, 1]]}]}
    t, z = _bare(json)
    expected = eval(expression, {"x": t, "d": ts.d}).to_json()  # noqa: S307
    actual = eval(expression, {"x": z, "d": zarrkit.d}).to_json()  # noqa: S307
    assert actual == expected
    assert "index_array" in actual["output"][0]


def test_an_index_array_kept_over_an_implicitly_empty_domain_keeps_its_bounds_explicit():
    """So marking the dimension it varies along implicit is refused, as TensorStore does."""
    json = {"input_inclusive_min": [[0], 0], "input_exclusive_max": [[1], 3],
            "output": [{"index_array": [[2, 0, 1]]}]}
    t, z = _bare(json)
    with pytest.raises(IndexError):
        t[ts.d[0].translate_by[1]][ts.d[0].stride[2]][ts.d[1].mark_bounds_implicit[True]]
    with pytest.raises(SelectionError, match="dimension 1 is read by an index array"):
        z[zarrkit.d[0].translate_by[1]][zarrkit.d[0].stride[2]][
            zarrkit.d[1].mark_bounds_implicit[True]]


@pytest.mark.parametrize("expression", [
    "x[d[2,1,0][[0,1], :, 0]]", "x[d[1,2,0][[[0]], 2:, 0]]", "x[d[2,0,1][[0,1], 1, 1:3]]",
    "x[d[1,0,2][[0,1], :, 1]]", "x[d[2,1,0][[0,1], 1, :]]", "x[d[2,0][[0,1], [1,2]]]"])
def test_index_arrays_of_a_dimension_expression_stay_in_place_despite_trailing_integers(
        tmp_path, expression):
    """In a dimension expression integers after the last index array do not part it from
    the others (unlike plain indexing, `x[[0, 1], :, 0]`)."""
    t, z = _pair(tmp_path)
    tv = eval(expression, {"x": t, "d": ts.d})  # noqa: S307
    zv = eval(expression, {"x": z, "d": zarrkit.d})  # noqa: S307
    assert zv.domain.to_json() == tv.domain.to_json()
    assert (zv.read().result() == tv.read().result()).all()


def test_a_backward_slice_of_an_implicitly_empty_dimension_in_an_empty_domain(tmp_path):
    """Its bound past the empty interval is not checked once another dimension is empty
    between explicit bounds (seed 2908); with the domain otherwise non-empty it is refused."""
    t, z = _pair(tmp_path)
    expression = "x[{}, 2:2][d[1].mark_bounds_implicit[None:True]][:, ::-1]"
    empty = expression.format("0:0")
    tv = eval(empty, {"x": t, "d": ts.d})  # noqa: S307
    zv = eval(empty, {"x": z, "d": zarrkit.d})  # noqa: S307
    assert zv.domain.to_json() == tv.domain.to_json()
    assert zv.read().result().shape == tv.read().result().shape == (0, 3, 6)
    full = expression.format(":")
    with pytest.raises(IndexError):
        eval(full, {"x": t, "d": ts.d})  # noqa: S307
    with pytest.raises(SelectionError, match="past the dimension's fixed bound"):
        eval(full, {"x": z, "d": zarrkit.d})  # noqa: S307


def test_index_arrays_survive_an_explicitly_empty_domain_made_implicit(tmp_path):
    """TensorStore's constant (the map's offset) reads row 1 twice (the module's docstring);
    zarrkit still reads the rows the mask chose."""
    t, z = _pair(tmp_path)
    expression = ("x.translate_to[-1, 0, 0][d[1][0:0]][d[0].oindex[[True, True, False]]]"
                  "[d[1].mark_bounds_implicit[True]].oindex[:, [0, 1]]")
    tv = eval(expression, {"x": t, "d": ts.d})  # noqa: S307
    zv = eval(expression, {"x": z, "d": zarrkit.d})  # noqa: S307
    assert zv.domain.to_json() == tv.domain.to_json()
    rows = t.read().result()[1:3, :2]
    assert (zv.read().result() == rows).all()
    assert (tv.read().result() == rows[:1]).all()


# -- resize through a view ---------------------------------------------------------------------

def _resize_case(seed: int) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """(case, a view expression without index arrays, resize keywords)."""
    case = _case(seed)
    r = case["rng"]
    shape = case["shape"]
    origin = [r.randint(-2, 2) for _ in shape]
    view = f"x.translate_to[{','.join(map(str, origin))}]"
    if r.random() < 0.4:
        view += f"[{r.randint(-3, 3)}:]" if len(shape) == 1 else f"[:, {r.randint(-3, 3)}:]"
    if r.random() < 0.3:
        view += ".T"
    if r.random() < 0.2:
        view += "[d[0].mark_bounds_implicit[True]]"
    order = list(range(len(shape)))[::-1] if ".T" in view else list(range(len(shape)))
    hi = [r.choice([None, origin[j] + r.randint(-1, shape[j] + 3)]) for j in order]
    lo = None if r.random() < 0.8 else [r.choice([None, origin[j], origin[j] + 1]) for j in order]
    options = {"exclusive_max": hi, "inclusive_min": lo}
    for flag in ("expand_only", "shrink_only", "resize_metadata_only"):
        if r.random() < 0.15:
            options[flag] = True
    return case, view, options


def compare_resize(seed: int, path: Any) -> None:
    case, view, options = _resize_case(seed)
    spec_t, spec_z = _store(path / "t", case), _store(path / "z", case)
    context = f"seed {seed}: shape {case['shape']} {view}.resize(**{options})"
    try:
        expected = _step(ts.open(spec_t).result(), view, "ts").resize(**options).result()
    except Exception as exc:  # noqa: BLE001 - compared below
        expected = exc
    try:
        actual = _step(zarrkit.open(spec_z).view, view, "zk").resize(**options)
    except Exception as exc:  # noqa: BLE001 - compared below
        actual = exc
    try:
        stored_t = ts.open(spec_t).result().read().result()
    except ValueError:  # TensorStore stored a negative shape (the module's docstring)
        expected = ValueError("negative shape")
    if isinstance(expected, Exception):
        assert isinstance(actual, ZarrkitError), f"{context}: ts {expected!r}, zk {actual!r}"
        return
    assert not isinstance(actual, Exception), f"{context}: ts ok, zk {actual!r}"
    assert actual.domain.to_json() == expected.domain.to_json(), context
    stored_z = ts.open(spec_z).result().read().result()
    assert _same_values(stored_t, stored_z), f"{context}:\nts {stored_t!r}\nzk {stored_z!r}"


@pytest.mark.parametrize("seed", range(100))
def test_resize_through_views_like_tensorstore(tmp_path, seed):
    compare_resize(seed, tmp_path)

#!/usr/bin/env python
"""Side-by-side I/O benchmark: zarrkit vs TensorStore vs zarr-python(+zarrs).

    python benchmarks/run.py                 # full run (8192^2 uint16, 3 repetitions)
    python benchmarks/run.py --quick         # smoke run (2048^2)
    python benchmarks/run.py --libs tensorstore,zarr --workloads 'blosc*' --json out.json

Every (workload, library, repetition) runs in its own fresh interpreter (_worker.py).
See benchmarks/README.md for what is measured and how.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _spec import (  # noqa: E402
    DEFAULT_SIZE,
    LAYOUTS,
    LIB_LABELS,
    LIBS,
    PEER_BASELINE,
    PEERS_FAST,
    REGION,
    SEED,
    WORKLOADS,
    array_info,
    check_layout,
)

WORKER = HERE / "_worker.py"
REPO_SRC = HERE.parent / "src"
MEM_TARGET = 1.3  # zarrkit whole-array read: peak RSS growth <= 1.3 x array size
MEM_MIN_BYTES = 64 * 2**20  # judge the target only on arrays at least this large


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- subprocesses


class Runner:
    def __init__(self, workdir: Path, timeout: float, zarrkit_path: str | None):
        self.workdir = workdir
        self.timeout = timeout
        self.tmp = workdir / "tasks"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.n = 0
        env = dict(os.environ)
        env.pop("PYTHONSTARTUP", None)
        self.env = env
        self.zk_env = dict(env)
        if zarrkit_path:
            old = env.get("PYTHONPATH")
            self.zk_env["PYTHONPATH"] = zarrkit_path + (os.pathsep + old if old else "")

    def __call__(self, task: dict) -> dict:
        self.n += 1
        tp, rp = self.tmp / f"t{self.n}.json", self.tmp / f"r{self.n}.json"
        tp.write_text(json.dumps(task))
        rp.unlink(missing_ok=True)
        load = os.getloadavg()[0]
        env = self.zk_env if task.get("lib") == "zarrkit" else self.env
        try:
            proc = subprocess.run(
                [sys.executable, str(WORKER), str(tp), str(rp)],
                env=env,
                cwd=str(HERE),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                timeout=self.timeout,
                text=True,
            )
        except subprocess.TimeoutExpired:
            return {"ok": False, "error": f"timeout after {self.timeout:.0f} s"}
        finally:
            tp.unlink(missing_ok=True)
        if rp.exists():
            res = json.loads(rp.read_text())
            rp.unlink()
            res["loadavg"] = load
            return res
        tail = (proc.stderr or "").strip().splitlines()[-3:]
        return {"ok": False, "error": f"worker died (exit {proc.returncode}): {' | '.join(tail)}"}


# --------------------------------------------------------------------------- helpers


def tree_stats(path: Path) -> tuple[int, int]:
    total = files = 0
    for d, _, fs in os.walk(path):
        for f in fs:
            total += os.path.getsize(os.path.join(d, f))
            files += 1
    return total, files


def evict_page_cache(path: Path) -> None:
    """Drop the page cache of every file under path (posix_fadvise DONTNEED, no root)."""
    os.sync()
    for d, _, fs in os.walk(path):
        for f in fs:
            try:
                fd = os.open(os.path.join(d, f), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def fs_type(path: Path) -> str:
    best, typ = "", "?"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                mnt = parts[1]
                if str(path).startswith(mnt.rstrip("/") + "/") or str(path) == mnt:
                    if len(mnt) >= len(best):
                        best, typ = mnt, parts[2]
    except OSError:
        pass
    return typ


def rmtree(p: Path) -> None:
    shutil.rmtree(p, ignore_errors=True)


def select(items, spec: str | None, what: str) -> list[str]:
    if not spec:
        return list(items)
    out = []
    for pat in (s.strip() for s in spec.split(",") if s.strip()):
        pat = {"zarr+zarrs": "zarrs", "ts": "tensorstore"}.get(pat, pat)
        hits = [i for i in items if fnmatch.fnmatchcase(i, pat)]
        if not hits:
            sys.exit(f"unknown {what} {pat!r}; choose from: {', '.join(items)}")
        out += [h for h in hits if h not in out]
    return [i for i in items if i in out]  # keep canonical order


def median_of(reps, key) -> float | None:
    vals = [r[key] for r in reps if r.get(key) is not None]
    return statistics.median(vals) if vals else None


# --------------------------------------------------------------------------- benchmark


class Bench:
    def __init__(self, args, workdir: Path):
        self.args = args
        self.workdir = workdir
        self.libs = select(LIBS, args.libs, "library")
        self.workloads = select(WORKLOADS, args.workloads, "workload")
        self.size = args.size
        self.info: dict[str, dict] = {}
        self.results: dict[str, dict[str, dict]] = {w: {} for w in self.workloads}
        self.datasets: dict[tuple[str, str], dict] = {}  # (lib, layout) -> {path, ok, ...}
        self.t_start = time.time()

    # ---- setup
    def probe(self):
        for lib in LIBS:
            if lib not in self.libs:
                continue
            r = self.run({"kind": "probe", "lib": lib})
            if "status" not in r:  # the probe itself crashed
                r = {"status": "error", "error": r.get("error", "?")}
            self.info[lib] = r
            extra = r.get("version") or r.get("error", "")
            log(f"probe {LIB_LABELS[lib]:<12} {r['status']:<6} {extra}")
        avail = [
            lb for lb in ("zarr", "tensorstore") if self.info.get(lb, {}).get("status") == "ok"
        ]
        if not avail:  # verification reader: probe zarr/tensorstore even if not benchmarked
            for lb in ("zarr", "tensorstore"):
                if (
                    lb not in self.info
                    and self.run({"kind": "probe", "lib": lb}).get("status") == "ok"
                ):
                    avail.append(lb)
        self.ref = avail[0] if avail else None
        log(f"reference reader for write verification: {self.ref or 'none (writes unverified)'}")

    def generate(self):
        d = self.workdir / f"input-{self.size}-{SEED}-{self.args.regions}"
        d.mkdir(parents=True, exist_ok=True)
        exp = d / "expected.json"
        self.inputs = {k: str(d / f"{k}.npy") for k in ("u16", "f32")}
        if exp.exists() and all(Path(p).exists() for p in self.inputs.values()):
            self.expected = json.loads(exp.read_text())
            return
        t = time.perf_counter()
        r = self.run(
            {
                "kind": "generate",
                "size": self.size,
                "regions": self.args.regions,
                "arrays": self.inputs,
            }
        )
        if not r.get("ok"):
            sys.exit(f"data generation failed: {r.get('error')}\n{r.get('traceback', '')}")
        self.expected = r["expected"]
        exp.write_text(json.dumps(self.expected))
        log(f"generated input data in {time.perf_counter() - t:.1f} s")

    # ---- per task
    def task(self, lib, layout, op, path, **kw):
        return {
            "kind": "bench",
            "lib": lib,
            "layout": layout,
            "op": op,
            "path": str(path),
            "size": self.size,
            "ts_fsync": not self.args.ts_no_fsync,
            **kw,
        }

    def lib_status(self, lib) -> str | None:
        st = self.info[lib]["status"]
        if st == "n/a":
            return "n/a"
        if st != "ok" and lib != "zarrkit":  # zarrkit errors are reported per workload
            return f"error: {self.info[lib].get('error')}"
        return None

    def verify_dataset(self, lib, layout, path: Path) -> dict:
        """Layout check (zarr.json) + reference-reader checksum of a written dataset."""
        lay = LAYOUTS[layout]
        shape, dtype = array_info(lay["array"], self.size)
        out = {"path": str(path), "writer": lib}
        try:
            meta = json.loads((path / "zarr.json").read_text())
            out["layout_problem"] = check_layout(meta, lay, shape, dtype)
        except Exception as e:  # noqa: BLE001
            out["layout_problem"] = f"cannot read zarr.json: {e}"
        out["disk_bytes"], out["files"] = tree_stats(path)
        if self.ref:
            r = self.run(
                {
                    "kind": "verify",
                    "lib": self.ref,
                    "layout": layout,
                    "path": str(path),
                    "size": self.size,
                }
            )
            want = self.expected[lay["array"]]["checksum"]
            if not r.get("ok"):
                out["verified"] = f"{self.ref} could not read it: {r.get('error')}"
            else:
                out["verified"] = (
                    "ok"
                    if r["checksum"] == want
                    else (f"WRONG (checksum {r['checksum']} != {want} via {self.ref})")
                )
        else:
            out["verified"] = "unverified"
        out["ok"] = out["verified"] in ("ok", "unverified")
        if out["layout_problem"]:
            log(f"  layout mismatch {LIB_LABELS[lib]} {layout}: {out['layout_problem']}")
        if not out["ok"]:
            log(f"  write verification {LIB_LABELS[lib]} {layout}: {out['verified']}")
        return out

    def record(self, w, lib, r, rep, nreps):
        entry = self.results[w].setdefault(lib, {"status": "ok", "reps": []})
        if not r.get("ok"):
            entry["status"] = f"error: {r.get('error')}"
            if r.get("traceback"):
                entry["traceback"] = r["traceback"]
            log(f"  {w:<22} {LIB_LABELS[lib]:<12} rep {rep + 1}/{nreps}  {entry['status'][:150]}")
            return False
        mbps = r["nbytes"] / r["seconds"] / 1e6
        rec = {
            "seconds": r["seconds"],
            "mbps": mbps,
            "nbytes": r["nbytes"],
            "cpu_seconds": r.get("cpu_seconds"),
            "mb_per_cpu_s": r["nbytes"] / r["cpu_seconds"] / 1e6 if r.get("cpu_seconds") else None,
            "loadavg_1min": r.get("loadavg"),
        }
        if "mem" in r:
            rec["mem"] = r["mem"]
        entry["reps"].append(rec)
        # correctness (checked in the worker, outside the timed region)
        layout, op = w.split(":")
        exp = self.expected[LAYOUTS[layout]["array"]]
        bad = None
        if op == "read" and r["checksum"] != exp["checksum"]:
            bad = f"checksum {r['checksum']} != {exp['checksum']}"
        elif op == "regions":
            nbad = sum(a != b for a, b in zip(r["checksums"], exp["region_checksums"], strict=True))
            if nbad:
                bad = f"{nbad}/{len(r['checksums'])} regions wrong"
        if bad:
            entry["wrong"] = bad
        log(
            f"  {w:<22} {LIB_LABELS[lib]:<12} rep {rep + 1}/{nreps}  {r['seconds']:8.3f} s "
            f"{mbps:9.1f} MB/s" + (f"  WRONG DATA: {bad}" if bad else "")
        )
        return True

    def run_reps(self, w, libs, make_task, before=None, after=None):
        nreps = self.args.repeats
        failed = set()
        for rep in range(nreps):
            k = rep % len(libs) if libs else 0
            for lib in libs[k:] + libs[:k]:  # rotate the order: spread machine noise evenly
                if lib in failed:
                    continue
                task = make_task(lib, rep)
                if before:
                    before(lib, rep, task)
                # Write back what earlier tasks left dirty, so that the kernel's flusher does
                # not take a core in the middle of this one (a 200 ms read of 4096 files
                # measured 131-233 ms for the same library when it did).
                os.sync()
                r = self.run(task)
                if not self.record(w, lib, r, rep, nreps):
                    failed.add(lib)  # errors are deterministic; don't repeat them
                elif after:
                    after(lib, rep, task)

    # ---- layouts
    def run_layout(self, layout):
        ops = [w.split(":")[1] for w in self.workloads if w.split(":")[0] == layout]
        lay = LAYOUTS[layout]
        runnable = []
        for lib in self.libs:
            st = self.lib_status(lib)
            if st:
                for op in ops:
                    self.results[f"{layout}:{op}"][lib] = {"status": st, "reps": []}
            else:
                runnable.append(lib)
        base = self.workdir / "data"
        data_path = self.inputs[lay["array"]]

        if "write" in ops:
            w = f"{layout}:write"
            log(f"== {w}")
            last = {}

            def before(lib, rep, task):
                rmtree(Path(task["path"]))

            def after(lib, rep, task):
                # Earlier repetitions stay until the run ends: see `execute`.
                last[lib] = Path(task["path"])

            self.run_reps(
                w,
                runnable,
                lambda lib, rep: self.task(
                    lib, layout, "write", base / lib / layout / f"w{rep}", data=data_path
                ),
                before,
                after,
            )
            for lib, p in last.items():
                ds = self.verify_dataset(lib, layout, p)
                self.datasets[(lib, layout)] = ds
                e = self.results[w][lib]
                e["dataset"] = {k: v for k, v in ds.items() if k != "path"}
                if ds["verified"] not in ("ok", "unverified"):
                    e["wrong"] = f"written data: {ds['verified']}"

        read_ops = [op for op in ops if op != "write"]
        if not read_ops:
            return
        # datasets to read: by default each library reads what it wrote itself
        for lib in runnable:
            src = lib if self.args.read_from == "self" else self.args.read_from
            self.prepare(src, layout)
        for op in read_ops:
            w = f"{layout}:{op}"
            log(f"== {w}")
            sources = {}
            for lib in list(runnable):
                src = self.read_source(lib, layout)
                if src is None:
                    want = lib if self.args.read_from == "self" else self.args.read_from
                    ds = self.datasets.get((want, layout), {})
                    msg = ds.get("error") or f"no dataset to read ({ds.get('verified')})"
                    self.results[w][lib] = {"status": f"error: {msg}", "reps": []}
                else:
                    sources[lib] = src
            libs = [lb for lb in runnable if lb in sources]

            def before(lib, rep, task):
                if self.args.cold:
                    evict_page_cache(Path(task["path"]))

            extra = {}
            if op == "regions":
                exp = self.expected[lay["array"]]
                extra = {"positions": exp["positions"], "region": REGION}

            def make(lib, rep, op=op, sources=sources, extra=extra):
                return self.task(
                    lib, layout, op, self.datasets[(sources[lib], layout)]["path"], **extra
                )

            self.run_reps(w, libs, make, before)
            for lib in libs:
                e = self.results[w][lib]
                e["data_written_by"] = sources[lib]

    def prepare(self, lib, layout):
        """Make sure (lib, layout) has a verified dataset (untimed write if needed)."""
        if (lib, layout) in self.datasets:
            return
        st = self.lib_status(lib) if lib in self.info else "not probed"
        if st:
            self.datasets[(lib, layout)] = {"ok": False, "error": f"{lib}: {st}"}
            return
        p = self.workdir / "data" / lib / layout / "prep"
        rmtree(p)
        log(f"  preparing {layout} dataset with {LIB_LABELS[lib]} (untimed)")
        r = self.run(self.task(lib, layout, "write", p, data=self.inputs[LAYOUTS[layout]["array"]]))
        if not r.get("ok"):
            self.datasets[(lib, layout)] = {
                "ok": False,
                "error": f"prepare failed: {r.get('error')}",
            }
            log(f"  prepare failed: {r.get('error')}")
            return
        self.datasets[(lib, layout)] = self.verify_dataset(lib, layout, p)

    def read_source(self, lib, layout):
        """Library whose dataset `lib` reads: its own, else a verified peer dataset."""
        want = lib if self.args.read_from == "self" else self.args.read_from
        if self.datasets.get((want, layout), {}).get("ok"):
            return want
        if self.args.read_from != "self":
            return None
        # own writer failed: read a dataset written by a peer so reads are still measured
        for peer in ("zarr", "tensorstore", "zarrs"):
            if peer == lib or self.info.get(peer, {}).get("status") != "ok":
                continue
            self.prepare(peer, layout)
            if self.datasets.get((peer, layout), {}).get("ok"):
                return peer
        return None

    def execute(self):
        self.run = Runner(self.workdir, self.args.timeout, self.args.zarrkit_path)
        self.probe()
        self.generate()
        # Written datasets are deleted only when the run ends, if the disk has room. On ext4
        # without a journal the inode allocator skips inodes deleted in the last 1-6 minutes,
        # so deleting thousands of files mid-run made every later file creation pay for them
        # (measured: ext4's recently_deleted() scan took 35-86% of the CPU of later writes).
        keep = self.disk_has_room()
        for layout in LAYOUTS:
            if any(w.startswith(layout + ":") for w in self.workloads):
                self.run_layout(layout)
                if not keep:
                    rmtree(self.workdir / "data")  # free disk between layouts
                    self.datasets = {k: v for k, v in self.datasets.items() if k[1] != layout}
        rmtree(self.workdir / "data")
        self.elapsed = time.time() - self.t_start
        self.summarize()

    def disk_has_room(self) -> bool:
        """Whether every dataset of the run fits on the disk at once (with 2x to spare)."""
        main = self.size * self.size * 2
        layouts = {w.split(":")[0] for w in self.workloads}
        need = main * len(layouts) * len(self.libs) * (self.args.repeats + 1)
        return shutil.disk_usage(self.workdir).free > 2 * need

    # ---- results
    METRICS = {"wall": "median_mbps", "cpu": "median_mb_per_cpu_s"}

    def summarize(self):
        for w, per in self.results.items():
            for e in per.values():
                e["median_mbps"] = median_of(e["reps"], "mbps")
                e["median_mb_per_cpu_s"] = median_of(e["reps"], "mb_per_cpu_s")
                if e["reps"]:
                    vals = [r["mbps"] for r in e["reps"]]
                    e["min_mbps"], e["max_mbps"] = min(vals), max(vals)
                    mems = [r["mem"] for r in e["reps"] if "mem" in r]
                    if mems:
                        nbytes = e["reps"][0]["nbytes"]
                        delta = statistics.median(m["maxrss_delta"] for m in mems)
                        hw = [m["hwm_delta"] for m in mems if m.get("hwm_delta") is not None]
                        e["peak_mem"] = {
                            "maxrss_delta_bytes": delta,
                            "ratio_to_array": delta / nbytes,
                            "hwm_delta_bytes": statistics.median(hw) if hw else None,
                        }
                if e["status"] == "ok" and e["median_mbps"] is None:
                    e["status"] = "error: no successful repetition"
            ratios = {m: self.ratios(per, key) for m, key in self.METRICS.items()}
            self.results[w] = {"libs": per, "ratios": ratios}

    @staticmethod
    def ratios(per, key) -> dict:
        def good(lib):
            e = per.get(lib)
            return e.get(key) if e and e["status"] == "ok" and not e.get("wrong") else None

        zk = good("zarrkit")
        fast = [(good(p), p) for p in PEERS_FAST if good(p)]
        best = max(fast) if fast else None
        base = good(PEER_BASELINE)
        return {
            "best_peer": best[1] if best else None,
            "zarrkit_over_best_peer": zk / best[0] if zk and best else None,
            "zarrkit_over_zarr": zk / base if zk and base else None,
        }

    def notes_for(self, lib, e) -> list[str]:
        """Footnote messages that apply to one result cell."""
        msgs = []
        if e["status"].startswith("error"):
            msgs.append(e["status"])
        if e.get("wrong"):
            msgs.append(f"WRONG DATA: {e['wrong']}")
        src = e.get("data_written_by")
        if src not in (None, lib) and self.args.read_from == "self":
            msgs.append(f"read data written by {LIB_LABELS[src]} (own write unavailable)")
        lp = (e.get("dataset") or {}).get("layout_problem")
        if lp:
            msgs.append(f"layout mismatch: {lp}")
        return msgs

    def footnotes(self):
        where: dict[str, list[str]] = {}
        for w, row in self.results.items():
            for lib, e in row["libs"].items():
                if e["status"] == "n/a":
                    continue
                for msg in self.notes_for(lib, e):
                    where.setdefault(msg, []).append(f"{LIB_LABELS[lib]} {w}")
        return {msg: i + 1 for i, msg in enumerate(where)}, where

    def cell(self, w, lib, marks):
        e = self.results[w]["libs"].get(lib)
        if e is None:
            return "-"
        if e["status"] == "n/a":
            return "n/a"
        tag = "".join(f"[{marks[m]}]" for m in self.notes_for(lib, e))
        if e["status"].startswith("error"):
            return "error" + tag
        v = e[self.METRICS[self.args.metric]]
        if v is None:
            return "?" + tag
        s = f"{v:.0f}" if v >= 100 else f"{v:.1f}"
        return s + (" WRONG" if e.get("wrong") else "") + tag

    def table_rows(self):
        marks, _ = self.footnotes()
        libs = self.libs
        unit = "MB/s" if self.args.metric == "wall" else "MB per CPU-s"
        head = [f"workload ({unit})"] + [LIB_LABELS[lb] for lb in libs]
        show_r1 = "zarrkit" in libs and any(p in libs for p in PEERS_FAST)
        show_r2 = "zarrkit" in libs and PEER_BASELINE in libs
        if show_r1:
            head.append("zk/best(ts,zarrs)")
        if show_r2:
            head.append("zk/zarr")
        rows = []
        for w in self.workloads:
            row = [w] + [self.cell(w, lb, marks) for lb in libs]
            rt = self.results[w]["ratios"][self.args.metric]
            f = lambda x: f"{x:.2f}x" if x else "-"  # noqa: E731
            if show_r1:
                bp = rt["best_peer"]
                row.append(
                    f(rt["zarrkit_over_best_peer"])
                    + (f" ({LIB_LABELS[bp]})" if bp and rt["zarrkit_over_best_peer"] else "")
                )
            if show_r2:
                row.append(f(rt["zarrkit_over_zarr"]))
            rows.append(row)
        return head, rows

    def mem_rows(self):
        head = [f"read: peak RSS growth (zarrkit target <= {MEM_TARGET}x)"] + [
            LIB_LABELS[lb] for lb in self.libs
        ]
        rows = []
        for w in self.workloads:
            if not w.endswith(":read"):
                continue
            row = [w]
            for lb in self.libs:
                e = self.results[w]["libs"].get(lb, {})
                pm = e.get("peak_mem")
                if not pm:
                    row.append("-")
                    continue
                s = f"{pm['maxrss_delta_bytes'] / 2**20:.0f} MiB ({pm['ratio_to_array']:.2f}x)"
                big = e["reps"][0]["nbytes"] >= MEM_MIN_BYTES  # small arrays: fixed costs dominate
                if lb == "zarrkit" and big:
                    s += " ok" if round(pm["ratio_to_array"], 2) <= MEM_TARGET else " OVER"
                row.append(s)
            rows.append(row)
        return head, rows

    def header_lines(self):
        shape_u, _ = array_info("u16", self.size)
        shape_f, _ = array_info("f32", self.size)
        vers = "; ".join(
            f"{LIB_LABELS[lb]}: {self.info[lb].get('version') or self.info[lb]['status']}"
            for lb in self.libs
        )
        return [
            f"arrays: {shape_u[0]}x{shape_u[1]} uint16 (4 codec layouts), {shape_f[0]}x{shape_f[1]} float32"
            f" in 64x64 chunks ('small'); {self.args.regions} random {REGION}x{REGION} regions",
            f"median of {self.args.repeats} repetitions, each in a fresh interpreter; "
            f"metric: {'wall-clock MB/s' if self.args.metric == 'wall' else 'MB per CPU-second'}; "
            f"page cache: {'evicted before each read (fadvise)' if self.args.cold else 'warm (not dropped)'}; "
            f"tensorstore fsync: {'off' if self.args.ts_no_fsync else 'on (default)'}; "
            f"dir: {self.workdir} ({fs_type(self.workdir)})",
            f"versions: {vers}",
            f"total wall time {self.elapsed / 60:.1f} min; {os.cpu_count()} CPUs; "
            f"mean 1-min load average before timed tasks: {self.mean_load():.1f}"
            + (
                "  (machine busy: numbers are noisy)"
                if self.mean_load() > 0.75 * (os.cpu_count() or 1)
                else ""
            ),
        ]

    def mean_load(self) -> float:
        loads = [
            r["loadavg_1min"]
            for row in self.results.values()
            for e in row["libs"].values()
            for r in e["reps"]
            if r.get("loadavg_1min") is not None
        ]
        return statistics.mean(loads) if loads else 0.0

    def text(self) -> str:
        def fmt(head, rows):
            widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]

            def line(r):
                return "  ".join(
                    str(x).rjust(wd) if i else str(x).ljust(wd)
                    for i, (x, wd) in enumerate(zip(r, widths, strict=True))
                )

            return "\n".join(
                [line(head), "  ".join("-" * wd for wd in widths)] + [line(r) for r in rows]
            )

        out = self.header_lines() + ["", fmt(*self.table_rows())]
        mh, mr = self.mem_rows()
        if mr:
            out += ["", fmt(mh, mr)]
        out += self.note_lines()
        return "\n".join(out)

    def note_lines(self):
        marks, where = self.footnotes()
        lines = []
        if marks:
            lines.append("")
            for msg, n in marks.items():
                lines.append(
                    f"[{n}] {msg}  ({', '.join(where[msg][:6])}{' ...' if len(where[msg]) > 6 else ''})"
                )
        return lines

    def markdown(self) -> str:
        def fmt(head, rows):
            esc = lambda s: str(s).replace("|", "\\|")  # noqa: E731
            out = [
                "| " + " | ".join(esc(h) for h in head) + " |",
                "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|",
            ]
            out += ["| " + " | ".join(esc(x) for x in r) + " |" for r in rows]
            return "\n".join(out)

        out = [f"- {ln}" for ln in self.header_lines()] + ["", fmt(*self.table_rows())]
        mh, mr = self.mem_rows()
        if mr:
            out += ["", fmt(mh, mr)]
        notes = self.note_lines()
        if notes:
            out += [""] + [f"- {ln}" for ln in notes if ln]
        return "\n".join(out) + "\n"

    def as_json(self) -> dict:
        shape_u, _ = array_info("u16", self.size)
        shape_f, _ = array_info("f32", self.size)
        return {
            "args": vars(self.args),
            "environment": {
                "python": sys.version.split()[0],
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "workdir": str(self.workdir),
                "workdir_fs": fs_type(self.workdir),
                "page_cache": "evicted before each read repetition (posix_fadvise DONTNEED)"
                if self.args.cold
                else "warm (not dropped)",
                "elapsed_s": self.elapsed,
            },
            "libraries": self.info,
            "arrays": {
                "main": {"shape": shape_u, "dtype": "uint16"},
                "small": {"shape": shape_f, "dtype": "float32"},
            },
            "units": "MB/s = 1e6 bytes of uncompressed array data per second (regions: bytes of the regions)",
            "memory_method": "ru_maxrss (getrusage RUSAGE_SELF) of the worker just before open+read "
            "and just after; delta = peak RSS growth during the read",
            "workloads": self.results,
        }


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--libs", help=f"comma list of {', '.join(LIBS)} (default: all)")
    ap.add_argument(
        "--workloads",
        help="comma list / glob patterns, e.g. 'blosc:*,*:read' "
        f"(default: all: {', '.join(WORKLOADS)})",
    )
    ap.add_argument(
        "--repeats", type=int, default=3, help="repetitions per workload (median; default 3)"
    )
    ap.add_argument(
        "--size",
        type=int,
        default=None,
        help=f"edge of the main square array (default {DEFAULT_SIZE}; small-chunk array is half)",
    )
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: --size 2048 --regions 50 (unless given)"
    )
    ap.add_argument(
        "--regions", type=int, default=None, help="random region reads (default 200; --quick: 50)"
    )
    ap.add_argument(
        "--dir", help="working directory (default: a new temp dir on the local disk, removed after)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the temp working directory")
    ap.add_argument(
        "--cold",
        action="store_true",
        help="evict the dataset from the page cache before every read repetition",
    )
    ap.add_argument(
        "--read-from",
        default="self",
        choices=["self", *LIBS],
        help="whose written dataset the reads use (default: each library its own)",
    )
    ap.add_argument(
        "--metric",
        choices=["wall", "cpu"],
        default="wall",
        help="table value: wall-clock MB/s (default) or MB per CPU-second of the worker "
        "(less sensitive to other load on a busy machine; both are in the JSON)",
    )
    ap.add_argument(
        "--ts-no-fsync",
        action="store_true",
        help="TensorStore context file_io_sync=false (its default fsyncs every file written)",
    )
    ap.add_argument("--timeout", type=float, default=900, help="per-subprocess timeout in s")
    ap.add_argument(
        "--zarrkit-path",
        default=str(REPO_SRC) if REPO_SRC.is_dir() else None,
        help="prepended to PYTHONPATH for zarrkit workers (default: the repo's src/)",
    )
    ap.add_argument("--json", metavar="FILE", help="write all results as JSON")
    ap.add_argument(
        "--markdown",
        nargs="?",
        const="-",
        metavar="FILE",
        help="also emit a markdown table (to FILE, or stdout without FILE)",
    )
    ap.add_argument(
        "--render",
        metavar="FILE",
        help="do not run: print the tables of an earlier --json FILE (honours --metric/--markdown)",
    )
    args = ap.parse_args(argv)
    if args.render:
        old = json.loads(Path(args.render).read_text())
        saved = argparse.Namespace(**old["args"])
        saved.metric, saved.markdown, saved.json = args.metric, args.markdown, None
        bench = Bench(saved, Path(old["environment"]["workdir"]))
        bench.info, bench.results = old["libraries"], old["workloads"]
        bench.elapsed = old["environment"]["elapsed_s"]
        emit(bench, saved)
        return
    if args.size is None:
        args.size = 2048 if args.quick else DEFAULT_SIZE
    if args.regions is None:
        args.regions = 50 if args.quick else 200
    if args.size < 2 * REGION:
        ap.error(f"--size must be >= {2 * REGION}")
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")

    own_dir = args.dir is None
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="zarrkit-bench-")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    if fs_type(workdir) in ("tmpfs", "ramfs"):
        log(f"warning: {workdir} is on {fs_type(workdir)}, not a disk")
    bench = Bench(args, workdir)
    try:
        bench.execute()
    finally:
        if own_dir and not args.keep:
            rmtree(workdir)
    emit(bench, args)


def emit(bench, args):
    print(bench.text())
    if args.markdown:
        md = bench.markdown()
        if args.markdown == "-":
            print("\n" + md, end="")
        else:
            Path(args.markdown).write_text(md)
    if args.json:
        Path(args.json).write_text(json.dumps(bench.as_json(), indent=1, default=str))


if __name__ == "__main__":
    main()

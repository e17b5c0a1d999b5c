"""zarr-python 2.18 as a test oracle, run in a subprocess.

zarr 2 cannot be installed beside zarr 3, so it goes into its own directory under the venv
(`<sys.prefix>/zarr2-oracle`, with numcodecs 0.15, which zarr 2.18 needs, shadowing the venv's
newer one) and runs with PYTHONPATH pointing there first. The install happens once per venv,
under an fcntl lock (pytest-xdist workers race for it), into a temporary directory renamed into
place when complete, so that a killed install never leaves a directory that looks finished.

`run_zarr2(jobs)` runs many snippets in one subprocess (startup costs more than most cases).
Each job is Python source run with `zarr`, `numcodecs`, `np`, `json` and `os` in scope, `d`
the job's own directory (inputs and outputs go there as .npy / JSON files), `save(name,
array)` / `load(name)` for .npy files, and `result` to set to a JSON value. The job's result
is `{"result": ...}`, or `{"error": "Type: message"}` if the snippet raised.

Run as a script (`python _zarr2.py jobs.json`) this file is the subprocess's driver: it
imports nothing from the test environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback

PACKAGES = ["zarr==2.18.*", "numcodecs==0.15.*", "asciitree", "fasteners", "deprecated", "wrapt"]
_MARKER = "zarr2-oracle-complete"
_dir_cache: list[str] = []


def oracle_dir() -> str:
    """The directory holding zarr 2.18, installed on first use. Raises RuntimeError (so the
    tests fail, not skip) if it cannot be installed."""
    if _dir_cache:
        return _dir_cache[0]
    import fcntl

    target = os.path.join(sys.prefix, "zarr2-oracle")
    with open(target + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer; the others wait and then reuse it
        if not os.path.exists(os.path.join(target, _MARKER)):
            _install(target)
    _dir_cache.append(target)
    return target


def _install(target: str) -> None:
    import shutil
    import tempfile

    for name in os.listdir(sys.prefix):  # left by an install killed outright (we hold the lock)
        if name.startswith("zarr2-oracle-"):
            shutil.rmtree(os.path.join(sys.prefix, name), ignore_errors=True)
    staging = tempfile.mkdtemp(prefix="zarr2-oracle-", dir=sys.prefix)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", staging,
             *PACKAGES], capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"installing the zarr 2 oracle ({' '.join(PACKAGES)}) failed:\n"
                               f"{done.stdout}\n{done.stderr}")
        open(os.path.join(staging, _MARKER), "w").close()
        shutil.rmtree(target, ignore_errors=True)  # a half directory from an older layout
        os.rename(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def run_zarr2(jobs: list[tuple[str, str]], timeout: float = 300) -> list[dict]:
    """Run each (source, directory) job under zarr 2 in one subprocess; one result per job."""
    if not jobs:
        return []
    for _, directory in jobs:
        os.makedirs(directory, exist_ok=True)
    first_dir = jobs[0][1]
    spec = os.path.join(first_dir, "_zarr2_jobs.json")
    out = os.path.join(first_dir, "_zarr2_results.json")
    with open(spec, "w") as f:
        json.dump({"jobs": [list(j) for j in jobs], "out": out}, f)
    if os.path.exists(out):
        os.remove(out)  # an earlier batch's: never taken for this one's
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (oracle_dir(), os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, __file__, spec], env=env,
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0 or not os.path.exists(out):
        raise RuntimeError(f"the zarr 2 subprocess failed:\n{done.stdout}\n{done.stderr}")
    with open(out) as f:
        return json.load(f)


def zarr2_version() -> list[str]:
    """zarr's and numcodecs' versions under the oracle (checks it really is zarr 2)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        (got,) = run_zarr2([("result = [zarr.__version__, numcodecs.__version__]", tmp)])
    return got["result"]


# -- the subprocess side -------------------------------------------------------------------------


def _run_job(source: str, directory: str, scope: dict) -> dict:
    import numpy as np

    def save(name, array):
        np.save(os.path.join(directory, name + ".npy"), array, allow_pickle=True)

    def load(name):
        return np.load(os.path.join(directory, name + ".npy"), allow_pickle=True)

    names = dict(scope, d=directory, save=save, load=load, result=None)
    try:
        exec(compile(source, "<zarr2 job>", "exec"), names)
    except Exception as e:  # reported back to the test, which decides what it means
        last = traceback.extract_tb(e.__traceback__)[-1]
        return {"error": f"{type(e).__name__}: {e}", "line": last.lineno}
    return {"result": names["result"]}


def _serve(spec_path: str) -> None:
    import warnings

    import numcodecs
    import numpy as np
    import zarr

    warnings.simplefilter("ignore")
    with open(spec_path) as f:
        spec = json.load(f)
    scope = {"zarr": zarr, "numcodecs": numcodecs, "np": np, "json": json, "os": os}
    results = [_run_job(source, directory, scope) for source, directory in spec["jobs"]]
    with open(spec["out"], "w") as f:
        json.dump(results, f, allow_nan=True, default=repr)


if __name__ == "__main__":
    sys.path = [p for p in sys.path if os.path.basename(p) != "tests"]
    _serve(sys.argv[1])

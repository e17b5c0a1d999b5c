"""One benchmark task in a fresh interpreter.  Started by run.py; not meant to be run by hand.

    python _worker.py TASK_JSON RESULT_JSON

Only the library under test (plus numpy) is imported before the timed region, so the
import and the interpreter are cold.  The result is written as JSON to RESULT_JSON.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
import traceback

import numpy as np
from _spec import LAYOUTS, array_info, checksum, inner_codecs, v3_codecs


def _maxrss_bytes() -> int:
    # Linux reports ru_maxrss in KiB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _cpu_seconds() -> float:
    """User+system CPU time of this process, all threads (robust-ish to a busy machine)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _proc_status(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_hwm() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); cross-check for ru_maxrss."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# --------------------------------------------------------------------------- adapters
# Each adapter: create(path, layout, shape, dtype) -> handle; write(h, data);
# open(path) -> handle; read_all(h) -> ndarray; read(h, r, c, n) -> ndarray.


class TensorStoreLib:
    def __init__(self, fsync: bool = True):
        import tensorstore as ts

        self.ts = ts
        # Default context (own thread pools).  Its file kvstore fsyncs every write by
        # default ("file_io_sync": true); run.py --ts-no-fsync turns that off.
        self.context = None if fsync else ts.Context({"file_io_sync": False})

    def create(self, path, layout, shape, dtype):
        meta = {
            "shape": list(shape),
            "data_type": dtype,
            "chunk_grid": {
                "name": "regular",
                "configuration": {"chunk_shape": list(layout["shards"] or layout["chunks"])},
            },
            "chunk_key_encoding": {"name": "default"},
            "fill_value": 0,
            "codecs": v3_codecs(layout),
        }
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}, "metadata": meta}
        return self.ts.open(spec, create=True, delete_existing=True, context=self.context).result()

    def write(self, h, data):
        h.write(data).result()

    def open(self, path):
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
        return self.ts.open(spec, open=True, read=True, context=self.context).result()

    def read_all(self, h):
        return h.read().result()

    def read(self, h, r, c, n):
        return h[r : r + n, c : c + n].read().result()


class ZarrLib:
    def __init__(self, zarrs: bool):
        import zarr
        from zarr.codecs import BloscCodec, BytesCodec, ZstdCodec

        self.zarr = zarr
        self.zarrs = zarrs
        if zarrs:
            import zarrs as _zarrs  # noqa: F401  (fail early if missing)

            # strict: raise instead of silently falling back to the Python pipeline.
            zarr.config.set(
                {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True}
            )
        self._codecs = {"bytes": BytesCodec, "blosc": BloscCodec, "zstd": ZstdCodec}

    def _compressors(self, layout):
        comp = layout["compressor"]
        if comp is None:
            return None
        conf = comp["configuration"]
        if comp["name"] == "blosc":
            return [
                self._codecs["blosc"](
                    cname=conf["cname"],
                    clevel=conf["clevel"],
                    shuffle=conf["shuffle"],
                    typesize=conf["typesize"],
                )
            ]
        return [self._codecs["zstd"](level=conf["level"])]

    def _check_pipeline(self, a):
        if self.zarrs:
            name = type(getattr(a._async_array, "codec_pipeline", None)).__name__
            if name != "ZarrsCodecPipeline":
                raise RuntimeError(f"zarrs pipeline not active (got {name})")

    def create(self, path, layout, shape, dtype):
        a = self.zarr.create_array(
            store=path,
            shape=shape,
            dtype=dtype,
            chunks=layout["chunks"],
            shards=layout["shards"],
            filters=None,
            serializer=self._codecs["bytes"](endian="little"),
            compressors=self._compressors(layout),
            fill_value=0,
            overwrite=True,
        )
        self._check_pipeline(a)
        return a

    def write(self, h, data):
        h[:] = data

    def open(self, path):
        a = self.zarr.open_array(store=path, mode="r")
        self._check_pipeline(a)
        return a

    def read_all(self, h):
        return h[:]

    def read(self, h, r, c, n):
        return h[r : r + n, c : c + n]


class ZarrkitLib:
    def __init__(self):
        import zarrkit

        self.zk = zarrkit

    def create(self, path, layout, shape, dtype):
        kw = {}
        if layout["shards"] is not None:
            kw["shards"] = layout["shards"]
        return self.zk.create(
            path,
            shape=shape,
            dtype=dtype,
            chunks=layout["chunks"],
            codecs=inner_codecs(layout),
            overwrite=True,
            **kw,
        )

    def write(self, h, data):
        h[...] = data

    def open(self, path):
        return self.zk.open(path, mode="r")

    def read_all(self, h):
        return h[...]

    def read(self, h, r, c, n):
        return h[r : r + n, c : c + n]


def make_lib(name, task=None):
    if name == "tensorstore":
        return TensorStoreLib(fsync=(task or {}).get("ts_fsync", True))
    if name == "zarr":
        return ZarrLib(zarrs=False)
    if name == "zarrs":
        return ZarrLib(zarrs=True)
    if name == "zarrkit":
        return ZarrkitLib()
    raise ValueError(name)


# --------------------------------------------------------------------------- tasks

_TOP_MODULES = {
    "tensorstore": ["tensorstore"],
    "zarr": ["zarr"],
    "zarrs": ["zarr", "zarrs"],
    "zarrkit": ["zarrkit"],
}
_DISTS = {
    "tensorstore": ["tensorstore"],
    "zarr": ["zarr"],
    "zarrs": ["zarr", "zarrs"],
    "zarrkit": ["zarrkit"],
}


def probe(task):
    """Is the library importable?  'n/a' only when its top-level module is missing."""
    import importlib
    import importlib.metadata as md
    import importlib.util

    lib = task["lib"]
    for mod in _TOP_MODULES[lib]:
        if importlib.util.find_spec(mod) is None:
            return {"status": "n/a", "error": f"module {mod!r} not installed"}
    try:
        for mod in _TOP_MODULES[lib]:
            m = importlib.import_module(mod)
    except Exception as e:  # noqa: BLE001
        return {"status": "error", "error": f"{type(e).__name__}: {e}"}
    versions = []
    for d in _DISTS[lib]:
        try:
            versions.append(f"{d} {md.version(d)}")
        except md.PackageNotFoundError:
            v = getattr(m, "__version__", None)
            versions.append(f"{d} {v or '(source tree)'}")
    return {
        "status": "ok",
        "version": ", ".join(versions),
        "file": getattr(m, "__file__", None) or str(list(getattr(m, "__path__", []))),
    }


_BACK_CHILD = """
import os, sys
anonymous, cached, scratch = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
b"\\x01" * anonymous
if cached:  # page-cache pages: written, then dropped with the file (never written back)
    piece = b"\\x01" * (1 << 20)
    os.makedirs(os.path.dirname(scratch), exist_ok=True)
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        for _ in range(-(-cached // len(piece))):
            os.write(fd, piece)
    finally:
        os.close(fd)
        os.unlink(scratch)
"""


def _back_memory(anonymous, cached=0, scratch=""):
    """Back memory just before a timed region. On a VM whose host takes back the guest's free
    pages (free page reporting), the first touch of such a page costs several times an
    ordinary one, inside the guest's kernel; a write whose page-cache pages, or a read whose
    output, fall on them took 2-10x as long, for any library, by the luck of what ran before.
    A child process touches and frees `anonymous` bytes of memory, then writes and deletes a
    file of `cached` bytes at `scratch`, in 1 MiB pieces: the page cache's folios, as large as
    the writes that fill them, come from other free blocks than small anonymous pages, and
    after such a file 512 KiB writes ran 10x faster (measured; pieces of 8 MiB or 64 KiB left
    them as slow as no file). A child, so that this process's peak memory stays the library's.
    On other machines this costs a memset and a page-cache copy, untimed."""
    subprocess.run([sys.executable, "-S", "-c", _BACK_CHILD, str(int(anonymous)), str(int(cached)),
                    str(scratch)], check=True)


def run_task(task):
    layout = LAYOUTS[task["layout"]]
    shape, dtype = array_info(layout["array"], task["size"])
    op, path = task["op"], task["path"]
    res = {"ok": True}
    lib = make_lib(task["lib"], task)  # import inside the subprocess (cold)

    if op == "write":  # also used, untimed, to prepare datasets for reads
        data = np.load(task["data"])
        assert data.shape == shape and data.dtype == np.dtype(dtype)
        os.sync()  # flush dirty pages of earlier repetitions outside the timed region
        _back_memory(2 * data.nbytes, data.nbytes, f"{path}.scratch")
        c0, t0 = _cpu_seconds(), time.perf_counter()
        h = lib.create(path, layout, shape, dtype)
        lib.write(h, data)
        dt, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
        del h
        res.update(seconds=dt, cpu_seconds=cpu, nbytes=int(data.nbytes))

    elif op == "read":
        _back_memory(2 * int(np.prod(shape)) * np.dtype(dtype).itemsize)
        rss0 = _proc_status("VmRSS")
        hwm_reset = _reset_hwm()
        max0 = _maxrss_bytes()
        c0, t0 = _cpu_seconds(), time.perf_counter()
        h = lib.open(path)
        out = lib.read_all(h)
        dt, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
        max1 = _maxrss_bytes()
        hwm1 = _proc_status("VmHWM")
        out = np.asarray(out)
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        res.update(
            seconds=dt,
            cpu_seconds=cpu,
            nbytes=nbytes,
            mem={
                "maxrss_before": max0,
                "maxrss_after": max1,
                "maxrss_delta": max1 - max0,
                "rss_before": rss0,
                "hwm_delta": (hwm1 - rss0) if (hwm_reset and hwm1 and rss0) else None,
            },
            checksum=checksum(out, dtype, shape),
        )

    elif op == "regions":
        pos = task["positions"]
        n = task["region"]
        outs = []
        c0, t0 = _cpu_seconds(), time.perf_counter()
        for r, c in pos:
            h = lib.open(path)  # opened anew for every region: cold metadata/index
            outs.append(lib.read(h, r, c, n))
            del h
        dt, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
        nbytes = len(pos) * n * n * np.dtype(dtype).itemsize
        sums = [checksum(o, dtype, (n, n)) for o in outs]
        res.update(seconds=dt, cpu_seconds=cpu, nbytes=nbytes, checksums=sums)
    else:
        raise ValueError(op)
    return res


def verify(task):
    """Read a dataset back (untimed) and return its checksum; used to check writers."""
    layout = LAYOUTS[task["layout"]]
    shape, dtype = array_info(layout["array"], task["size"])
    lib = make_lib(task["lib"], task)
    return {"ok": True, "checksum": checksum(lib.read_all(lib.open(task["path"])), dtype, shape)}


def generate(task):
    """Write the input arrays (.npy) and the expected checksums."""
    from _spec import REGION, make_array, region_positions

    out = {}
    for kind, path in task["arrays"].items():
        a = make_array(kind, task["size"])
        np.save(path, a)
        entry = {
            "checksum": checksum(a, str(a.dtype), a.shape),
            "shape": list(a.shape),
            "dtype": str(a.dtype),
            "nbytes": int(a.nbytes),
        }
        if kind == "u16":
            pos = region_positions(a.shape[0], task["regions"])
            entry["positions"] = pos
            entry["region_checksums"] = [
                checksum(a[r : r + REGION, c : c + REGION], str(a.dtype), (REGION, REGION))
                for r, c in pos
            ]
        out[kind] = entry
    return {"ok": True, "expected": out}


def main():
    task_path, result_path = sys.argv[1], sys.argv[2]
    with open(task_path) as f:
        task = json.load(f)
    try:
        kind = task["kind"]
        if kind == "probe":
            res = probe(task)
        elif kind == "generate":
            res = generate(task)
        elif kind == "verify":
            res = verify(task)
        else:
            res = run_task(task)
    except BaseException as e:  # noqa: BLE001 - report everything, incl. SystemExit
        msg = f"{type(e).__name__}: {e}".strip()
        res = {"ok": False, "error": msg[:500], "traceback": traceback.format_exc()[-4000:]}
    with open(result_path, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main()

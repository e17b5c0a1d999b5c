"""Real writer processes for the crash-safety and concurrency tests.

Starting Python and importing numpy takes far longer than the writes under test, so the tests
start this file once as a real process (`python tests/_workers.py`, PYTHONPATH=src): a "zygote"
that imports zarrkit and then forks a fresh child for each job it is asked for. Children are
ordinary processes that the tests kill with SIGKILL or wait for; the zygote reaps them and
reports how each one ended. Protocol: one JSON object per line on stdin, one reply per line on
stdout.

The module also holds what both sides must agree on: the array layouts, the deterministic
schedule of writes each child performs, and how a written value encodes which write it came from
(so the checker can tell every stored element's origin, and a torn chunk cannot go unnoticed).
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")

# -- values that name their origin -------------------------------------------------------------
# Element (i, j) written by the write with tag t holds t << 32 | (i * ncols + j); 0 is the fill
# value. A cell (CELL x CELL elements) is only ever written whole, so every cell holds one tag.
CELL = 4
TAG_SHIFT = 32
LOW = (1 << TAG_SHIFT) - 1


def tag_of(iteration: int, step: int) -> int:
    return (iteration << 20) + step + 1


def values(tag: int, rows: slice, cols: slice, ncols: int) -> np.ndarray:
    if tag == 0:
        return np.zeros((rows.stop - rows.start, cols.stop - cols.start), np.uint64)
    i = np.arange(rows.start, rows.stop, dtype=np.uint64)[:, None]
    j = np.arange(cols.start, cols.stop, dtype=np.uint64)[None, :]
    return (np.uint64(tag) << np.uint64(TAG_SHIFT)) | (i * np.uint64(ncols) + j)


def cell_tags(data: np.ndarray) -> tuple[np.ndarray, int]:
    """(tag of every cell, number of cells whose elements disagree: torn or foreign values)."""
    rows, cols = data.shape
    tags = data >> np.uint64(TAG_SHIFT)
    flat = np.arange(rows * cols, dtype=np.uint64).reshape(rows, cols)
    good = np.where(tags == 0, data == 0, (data & np.uint64(LOW)) == flat)
    gy, gx = -(-rows // CELL), -(-cols // CELL)
    padded = np.zeros((gy * CELL, gx * CELL), np.uint64)
    padded[:rows, :cols] = tags
    ok = np.ones((gy * CELL, gx * CELL), bool)
    ok[:rows, :cols] = good
    # Edge cells are clipped: copy each cell's first element into its padding before comparing.
    blocks = padded.reshape(gy, CELL, gx, CELL).transpose(0, 2, 1, 3).reshape(gy, gx, -1)
    okb = ok.reshape(gy, CELL, gx, CELL).transpose(0, 2, 1, 3).reshape(gy, gx, -1)
    inside = np.zeros((gy * CELL, gx * CELL), bool)
    inside[:rows, :cols] = True
    inb = inside.reshape(gy, CELL, gx, CELL).transpose(0, 2, 1, 3).reshape(gy, gx, -1)
    first = blocks[:, :, :1]
    uniform = np.where(inb, blocks == first, True).all(axis=2)
    bad = ~(uniform & okb.all(axis=2))
    return first[:, :, 0], int(bad.sum())


# -- array layouts and the write schedule ------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    shape: tuple[int, int]
    key_shape: tuple[int, int]  # the shape of what one store key holds: a chunk or a shard
    create: dict[str, Any]

    @property
    def cells(self) -> tuple[int, int]:
        return tuple(-(-s // CELL) for s in self.shape)  # type: ignore[return-value]

    def key_cells(self) -> list[tuple[slice, slice]]:
        """The cells held by each store key."""
        ky, kx = (k // CELL for k in self.key_shape)
        gy, gx = self.cells
        return [(slice(y, min(y + ky, gy)), slice(x, min(x + kx, gx)))
                for y in range(0, gy, ky) for x in range(0, gx, kx)]


_ZSTD = [{"name": "zstd", "configuration": {"level": 1, "checksum": False}}, {"name": "crc32c"}]
LAYOUTS = {
    # Unsharded, edge chunks clipped by the shape, compressed and checksummed.
    "chunks": Layout((30, 22), (8, 8), dict(chunks=(8, 8), compressors=_ZSTD)),
    # Sharded: partial writes are read-modify-writes of a shard, whole-shard writes are not.
    "shards": Layout((32, 28), (16, 16), dict(chunks=(8, 8), shards=(16, 16),
                                              compressors=_ZSTD)),
    "shards_start": Layout((24, 24), (8, 12), dict(chunks=(4, 4), shards=(8, 12),
                                                   compressors=None, index_location="start")),
}


@dataclass(frozen=True)
class Op:
    tag: int  # 0: write the fill value (may delete chunks)
    rows: slice  # in cells
    cols: slice


def op_at(layout: Layout, iteration: int, step: int) -> Op:
    """The write a child makes at `step` of `iteration`: the same in the child and the checker."""
    r = random.Random(iteration * 1_000_003 + step)
    gy, gx = layout.cells
    tag = tag_of(iteration, step)
    kind = r.random()
    if kind < 0.45 or kind >= 0.9:  # a rectangle of cells: partial chunks/shards
        h, w = r.randint(1, min(3, gy)), r.randint(1, min(3, gx))
        y, x = r.randrange(gy - h + 1), r.randrange(gx - w + 1)
        return Op(0 if kind >= 0.9 else tag, slice(y, y + h), slice(x, x + w))
    if kind < 0.85:  # one or two whole keys in each direction: no read-modify-write
        ky, kx = (k // CELL for k in layout.key_shape)
        ny, nx = -(-gy // ky), -(-gx // kx)
        h, w = r.randint(1, min(2, ny)), r.randint(1, min(2, nx))
        y, x = r.randrange(ny - h + 1), r.randrange(nx - w + 1)
        return Op(tag, slice(y * ky, min((y + h) * ky, gy)), slice(x * kx, min((x + w) * kx, gx)))
    return Op(tag, slice(0, gy), slice(0, gx))


def element_slices(layout: Layout, op: Op) -> tuple[slice, slice]:
    rows, cols = layout.shape
    return (slice(op.rows.start * CELL, min(op.rows.stop * CELL, rows)),
            slice(op.cols.start * CELL, min(op.cols.stop * CELL, cols)))


def apply(tags: np.ndarray, op: Op) -> np.ndarray:
    out = tags.copy()
    out[op.rows, op.cols] = op.tag
    return out


# -- progress shared with the checker ------------------------------------------------------------
class Progress:
    """A counter shared with the checker: the length of a small append-only file, one byte per
    completed write. (A counter in a shared memory map was tried first: now and then the
    checker read 0 after the killed child had read back its own later value; a file's length,
    kept by the kernel's write path, has not shown that.)"""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._count = os.fstat(self._fd).st_size

    def set(self, value: int) -> None:
        if value < self._count:
            os.ftruncate(self._fd, value)
        elif value > self._count:
            os.write(self._fd, b"+" * (value - self._count))
        self._count = value

    def close(self) -> None:
        os.close(self._fd)

    @staticmethod
    def read(path: str) -> int:
        return os.stat(path).st_size


# -- jobs (run in forked children) ---------------------------------------------------------------
def job_grid_writer(root: str, layout: str, iteration: int, progress: str,
                    steps: int = 1 << 30) -> None:
    import zarrkit

    spec = LAYOUTS[layout]
    a = zarrkit.open_array(root, mode="r+")
    done = Progress(progress)
    for step in range(steps):
        op = op_at(spec, iteration, step)
        rows, cols = element_slices(spec, op)
        a[rows, cols] = values(op.tag, rows, cols, spec.shape[1])
        done.set(step + 1)


def job_zip_writer(root: str, layout: str, iteration: int, progress: str) -> None:
    """Each step opens the archive in append mode, writes one region and closes it."""
    import zarrkit
    from zarrkit.kvstore.zip import ZipStore

    spec = LAYOUTS[layout]
    done = Progress(progress)
    for step in range(1 << 30):
        store = ZipStore(root, mode="a")
        a = zarrkit.open_array(store, mode="r+")
        op = op_at(spec, iteration, step)
        rows, cols = element_slices(spec, op)
        a[rows, cols] = values(op.tag, rows, cols, spec.shape[1])
        store.close()
        done.set(step + 1)


META_SHAPES = ((12, 10), (5, 10), (12, 3), (20, 14))


def meta_op(iteration: int, step: int) -> tuple[str, int, Any]:
    r = random.Random(iteration * 7_000_003 + step)
    kind = r.choice(("group_attrs", "array_attrs", "resize", "child", "array_attrs_delete"))
    tag = tag_of(iteration, step)
    if kind == "resize":
        return kind, tag, r.choice(META_SHAPES)
    return kind, tag, f"k{r.randrange(4)}"


def job_meta_writer(root: str, iteration: int, progress: str) -> None:
    import zarrkit

    g = zarrkit.open_group(root, mode="r+")
    a = g["arr"]
    done = Progress(progress)
    for step in range(1 << 30):
        kind, tag, arg = meta_op(iteration, step)
        if kind == "group_attrs":
            g.attrs[arg] = tag
        elif kind == "array_attrs":
            a.attrs.update({arg: tag, "list": [tag] * 3})
        elif kind == "array_attrs_delete":
            if arg in a.attrs:
                del a.attrs[arg]
        elif kind == "resize":
            a.resize(arg)
        else:
            g.create_group(f"c{tag}", attributes={"tag": tag})
        done.set(step + 1)


def job_cells(root: str, cells: list[list[int]], inner: list[int], base: int, rounds: int,
              start_at: float, path: str = "") -> None:
    """Write whole inner chunks `cells` (inner-chunk coordinates), `rounds` times each."""
    import zarrkit

    a = zarrkit.open_array(root, mode="r+", path=path or None)
    _sleep_until(start_at)
    for r in range(rounds):
        for y, x in cells:
            rows = slice(y * inner[0], (y + 1) * inner[0])
            cols = slice(x * inner[1], (x + 1) * inner[1])
            a[rows, cols] = base + r


def job_attrs(root: str, path: str, names: list[str], start_at: float) -> None:
    import zarrkit

    node = zarrkit.open(root, mode="r+", path=path)
    _sleep_until(start_at)
    for name in names:
        node.attrs[name] = name


def job_append(root: str, blocks: list[int], rows: int, start_at: float) -> None:
    """Append `rows`-row blocks filled with each value of `blocks`."""
    import zarrkit

    a = zarrkit.open_array(root, mode="r+")
    _sleep_until(start_at)
    for value in blocks:
        a.append(np.full((rows,) + a.shape[1:], value, dtype=a.dtype))


def job_region_writes(root: str, regions: list[list[int]], value: int, start_at: float) -> None:
    """Write `value` to each [row_start, row_stop) region; selections out of bounds are fine."""
    import zarrkit
    from zarrkit.errors import SelectionError

    a = zarrkit.open_array(root, mode="r+")
    _sleep_until(start_at)
    for start, stop in regions:
        try:
            a[start:stop] = value
        except SelectionError:
            pass  # the region no longer fits after a concurrent shrink: the documented error


def job_resize(root: str, shapes: list[list[int]], start_at: float, path: str = "") -> None:
    import zarrkit

    a = zarrkit.open_array(root, mode="r+", path=path or None)
    _sleep_until(start_at)
    for shape in shapes:
        a.resize(tuple(shape))


def job_doc_counter(targets: list[list[str]], seconds: float, seed: int, progress: str,
                    start_at: float) -> None:
    """For `seconds`, at random: under `lock(key)` add 1 to the counter `field` of the JSON
    document `key` of a file store at `root` (each target is [root, key, field]; one byte per
    increment appended to `progress`.<target index>), or under `lock_shared(key)` read it twice
    and exit 4 if it changed in between (a writer let in beside a reader)."""
    from zarrkit.kvstore.file import FileStore

    r = random.Random(seed)
    stores = [(FileStore(root), key, field) for root, key, field in targets]
    done = [Progress(f"{progress}.{i}") for i in range(len(targets))]
    _sleep_until(start_at)
    end, count = time.time() + seconds, [0] * len(targets)
    while time.time() < end:
        i = r.randrange(len(targets))
        store, key, field = stores[i]
        if r.random() < 0.3:
            with store.lock_shared(key):
                before = store.get(key)
                time.sleep(0.0005)
                if store.get(key) != before:
                    os._exit(4)
            continue
        with store.lock(key):
            doc = json.loads(store.get(key))
            doc[field] = doc.get(field, 0) + 1
            store.set(key, json.dumps(doc).encode())
        count[i] += 1
        done[i].set(count[i])


def job_hold_lock(root: str, key: str, shared: bool, ready: str) -> None:
    """Take the lock of `key` (shared or exclusive), create the file `ready`, hold it until
    killed."""
    from zarrkit.kvstore.file import FileStore

    store = FileStore(root)
    with store.lock_shared(key) if shared else store.lock(key):
        open(ready, "w").close()
        time.sleep(3600)


def _sleep_until(start_at: float) -> None:
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)


JOBS = {name[4:]: fn for name, fn in globals().items() if name.startswith("job_")}


# -- the zygote (this file run as a program) ---------------------------------------------------
def _child(job: str, args: dict[str, Any]) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # a stray print must not corrupt the protocol
    code = 0
    try:
        JOBS[job](**args)
    except BaseException:  # noqa: BLE001 - reported through the exit status and stderr
        traceback.print_exc()
        code = 3
    sys.stderr.flush()
    os._exit(code)


def _serve() -> None:
    import zarrkit  # noqa: F401 - imported once here so that children start writing at once

    for line in sys.stdin:
        request = json.loads(line)
        if request["cmd"] == "fork":
            pid = os.fork()
            if pid == 0:
                _child(request["job"], request["args"])
            reply: dict[str, Any] = {"pid": pid}
        elif request["cmd"] == "wait":
            _, status = os.waitpid(request["pid"], 0)
            reply = {"status": os.waitstatus_to_exitcode(status)}
        else:
            return
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


# -- the tests' side -------------------------------------------------------------------------------
class Zygote:
    """Starts the zygote process; forks jobs in it; kills and waits for them."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, env=env, text=True, bufsize=1)

    def _ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        return self._reply(request, timeout)

    def _reply(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout)
        if not ready:
            raise TimeoutError(f"zygote did not answer {request} within {timeout} s")
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"zygote died: {self.stderr()}")
        return json.loads(line)

    def fork(self, job: str, **args: Any) -> int:
        return self._ask({"cmd": "fork", "job": job, "args": args}, 60)["pid"]

    def wait(self, pid: int, timeout: float = 60) -> int:
        """The child's exit code (negative: killed by that signal); kills it after `timeout`."""
        request = {"cmd": "wait", "pid": pid}
        try:
            return self._ask(request, timeout)["status"]
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)  # a hung child; the zygote's waitpid then answers
            self._reply(request, 60)
            raise TimeoutError(f"job {pid} did not finish within {timeout} s") from None

    def kill(self, pid: int) -> int:
        os.kill(pid, signal.SIGKILL)
        return self.wait(pid)

    def run(self, jobs: list[tuple[str, dict[str, Any]]], timeout: float = 120) -> list[int]:
        """Start every job, then wait for all; their exit codes."""
        pids = [self.fork(job, **args) for job, args in jobs]
        return [self.wait(pid, timeout) for pid in pids]

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-4000:]

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self._ask({"cmd": "quit"}, 0)
            except (TimeoutError, OSError, RuntimeError):
                pass
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._stderr.close()


if __name__ == "__main__":
    _serve()

"""Remote workload: a Zarr v3 array on S3 (moto's S3 server on loopback), side by side.

    python benchmarks/remote_s3.py [--repeat 3] [--json]

Starts `moto.server` on 127.0.0.1 (a separate process), then writes and reads the same array
with zarrkit, zarr-python (its ObjectStore over obstore) and TensorStore (its s3 driver), and
prints the best time of `--repeat` runs per library and task. moto is a Python server, so
absolute numbers measure it as much as the clients; the comparison is what matters (requests
issued, their concurrency, client-side overhead). Every read is checked against the data.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

KEY, SECRET, REGION = "bench-key", "bench-secret", "us-east-1"
SHAPE, CHUNKS, SHARDS = (2048, 2048), (128, 128), (512, 512)
REGION_SEL = (slice(700, 1000), slice(300, 600))
ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(endpoint + "/moto-api/", timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def make_bucket(endpoint: str, name: str) -> None:
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{name}", method="PUT"))


# -- the three libraries --------------------------------------------------------------------

def zarrkit_tasks(endpoint: str, bucket: str, sharded: bool) -> dict[str, Callable[..., Any]]:
    import zarrkit

    opts = {"key": KEY, "secret": SECRET, "endpoint_url": endpoint}
    url = f"s3://{bucket}/zarrkit.zarr"

    def write(data: np.ndarray) -> None:
        a = zarrkit.create(url, SHAPE, "float32", chunks=CHUNKS,
                           shards=SHARDS if sharded else None, compressors=[ZSTD],
                           overwrite=True, storage_options=opts)
        a[...] = data

    def opened() -> Any:
        return zarrkit.open(url, mode="r", storage_options=opts)

    return {"write": write, "read": lambda: opened()[...],
            "region": lambda: opened()[REGION_SEL]}


def zarr_python_tasks(endpoint: str, bucket: str, sharded: bool) -> dict[str, Callable[..., Any]]:
    import obstore.store
    import zarr

    s3 = obstore.store.S3Store(bucket, endpoint=endpoint, access_key_id=KEY,
                               secret_access_key=SECRET, region=REGION,
                               client_options={"allow_http": True})
    store = zarr.storage.ObjectStore(s3)

    def write(data: np.ndarray) -> None:
        z = zarr.create_array(store, name="zarr-python.zarr", shape=SHAPE, dtype="float32",
                              chunks=CHUNKS, shards=SHARDS if sharded else None,
                              compressors=[zarr.codecs.ZstdCodec(level=1)], overwrite=True)
        z[...] = data

    def opened() -> Any:
        return zarr.open_array(store, path="zarr-python.zarr", mode="r")

    return {"write": write, "read": lambda: opened()[...],
            "region": lambda: opened()[REGION_SEL]}


def tensorstore_tasks(endpoint: str, bucket: str, sharded: bool) -> dict[str, Callable[..., Any]]:
    import tensorstore as ts

    os.environ.update(AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET)
    kvstore = {"driver": "s3", "bucket": bucket, "path": "tensorstore.zarr/",
               "endpoint": endpoint, "aws_region": REGION,
               "aws_credentials": {"type": "environment"}}
    inner = [{"name": "bytes"}, ZSTD]
    codecs = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(CHUNKS), "codecs": inner,
        "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}]}}] if sharded else inner
    grid = SHARDS if sharded else CHUNKS
    metadata = {"shape": list(SHAPE), "data_type": "float32", "codecs": codecs,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(grid)}}}

    def write(data: np.ndarray) -> None:
        t = ts.open({"driver": "zarr3", "kvstore": kvstore, "metadata": metadata},
                    create=True, delete_existing=True).result()
        t[...].write(data).result()

    def opened() -> Any:
        return ts.open({"driver": "zarr3", "kvstore": kvstore}, read=True).result()

    return {"write": write, "read": lambda: opened()[...].read().result(),
            "region": lambda: opened()[REGION_SEL].read().result()}


LIBRARIES = {"zarrkit": zarrkit_tasks, "zarr-python": zarr_python_tasks,
             "tensorstore": tensorstore_tasks}


# -- running --------------------------------------------------------------------------------

def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def run_library(name: str, endpoint: str, sharded: bool, data: np.ndarray,
                repeat: int) -> dict[str, float | str]:
    bucket = f"bench-{name}-{'sharded' if sharded else 'chunked'}".replace("_", "-")
    make_bucket(endpoint, bucket)
    try:
        tasks = LIBRARIES[name](endpoint, bucket, sharded)
        row: dict[str, float | str] = {}
        row["write"], _ = best_of(lambda: tasks["write"](data), repeat)
        row["read"], got = best_of(tasks["read"], repeat)
        if not np.array_equal(np.asarray(got), data):
            return {"error": "full read differs from the data written"}
        row["region"], got = best_of(tasks["region"], repeat)
        if not np.array_equal(np.asarray(got), data[REGION_SEL]):
            return {"error": "region read differs from the data written"}
        return row
    except Exception as exc:  # noqa: BLE001 - one library's failure must not stop the others
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"}


def table(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    mb = np.prod(SHAPE) * 4 / 1e6
    lines = [f"{'layout':<8} {'library':<12} {'write':>16} {'read':>16} {'region 300x300':>15}"]
    for layout, rows in results.items():
        for name, row in rows.items():
            if "error" in row:
                lines.append(f"{layout:<8} {name:<12} {row['error']}")
                continue
            lines.append(f"{layout:<8} {name:<12} "
                         f"{row['write']:6.2f} s {mb / row['write']:4.0f} MB/s "
                         f"{row['read']:6.2f} s {mb / row['read']:4.0f} MB/s "
                         f"{row['region'] * 1e3:12.1f} ms")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    data = np.random.default_rng(0).standard_normal(SHAPE).astype("float32").round(2)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    with moto_server() as endpoint:
        for layout, sharded in (("sharded", True), ("chunked", False)):
            results[layout] = {name: run_library(name, endpoint, sharded, data, args.repeat)
                               for name in args.libraries.split(",")}
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"{SHAPE} float32 ({np.prod(SHAPE) * 4 / 2**20:.0f} MiB), chunks {CHUNKS}, "
              f"shards {SHARDS} (sharded layout), zstd level 1; moto S3 on loopback; "
              f"best of {args.repeat}")
        print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Real servers on 127.0.0.1 for the remote-store tests: moto's S3 server and a Range-honouring
static HTTP server. Both are local, bounded (daemon threads, stopped at session end) and speak
the real wire protocols, so the store code is tested without mocking its client library.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

S3_KEY = "testing-key"
S3_SECRET = "testing-secret"
REGION = "us-east-1"

_RANGE_RE = re.compile(r"bytes=(\d*)-(\d*)\Z")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: moto's server with its conditional puts made atomic: it checks If-None-Match / If-Match and
#: then stores, unlocked, so two puts of a lease from its threads could both succeed (seen under
#: load: a lock that S3 itself would keep exclusive let an update be lost).
_ATOMIC_MOTO = """
import sys, threading
from moto.s3.responses import S3Response
from moto.server import main

lock, put = threading.Lock(), S3Response.put_object

def put_object(self):
    with lock:
        return put(self)

S3Response.put_object = put_object
main(sys.argv[1:])
"""


@contextmanager
def moto_s3() -> Iterator[str]:
    """moto's S3 server in its own process on loopback; yields its endpoint URL.

    A separate process, not a thread: the server then does not compete for the GIL with the
    test process (which also runs a dask scheduler in the distributed test)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", _ATOMIC_MOTO, "-H", "127.0.0.1", "-p",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(endpoint, proc)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _wait_until_serving(endpoint: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto server exited with status {proc.returncode}")
        try:
            urllib.request.urlopen(endpoint + "/moto-api/", timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"moto server at {endpoint} did not start within 30 s")


def make_bucket(endpoint: str, bucket: str) -> None:
    """Create a bucket (moto's server accepts unsigned requests)."""
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{bucket}", method="PUT"))


def s3_options(endpoint: str) -> dict[str, Any]:
    """storage_options as an xarray/s3fs user writes them."""
    return {"key": S3_KEY, "secret": S3_SECRET, "endpoint_url": endpoint,
            "client_kwargs": {"region_name": REGION}}


class _Handler(SimpleHTTPRequestHandler):
    """Static files with byte ranges; `/forbidden/...` answers 403, `/unauthorized/...` 401,
    `/flaky/...` fails with 503 the first `flaky_failures` times each path is asked for, and
    `/broken/...` always fails with 503, `/norange/...` ignores Range (answers 200). Ranged answers carry an ETag (weak when the server's
    `weak_etags` is set) and honour `If-Match` (412 when it differs), as nginx does; so do the
    whole answers under `/whole/...`, which ignores Range (nginx with `max_ranges 0`)."""

    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return None  # keep test output clean

    def _fault(self) -> bool:
        path = self.path.split("?", 1)[0]
        top = path.lstrip("/").split("/", 1)[0]
        status = {"forbidden": 403, "unauthorized": 401, "broken": 503}.get(top)
        if top == "flaky":
            with self.server.lock:
                seen = self.server.attempts.get(path, 0)
                self.server.attempts[path] = seen + 1
            status = 503 if seen < self.server.flaky_failures else None
        if status is None:
            return False
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True

    def do_HEAD(self) -> None:  # noqa: N802 - stdlib naming
        if not self._fault():
            super().do_HEAD()

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        with self.server.lock:
            self.server.requests += 1
        if self._fault():
            return
        if self.path.startswith("/norange/"):  # a plain web server: Range ignored, 200 whole
            super().do_GET()
            return
        if self.path.startswith("/whole/"):  # Range ignored, but ETags sent (nginx, max_ranges 0)
            self._send_whole(self.translate_path(self.path))
            return
        match = _RANGE_RE.match(self.headers.get("Range", ""))
        path = self.translate_path(self.path)
        if match is None or not os.path.isfile(path):
            super().do_GET()
            return
        self._send_range(path, match.group(1), match.group(2))

    def _etag(self, st: os.stat_result) -> str:
        etag = f'"{st.st_ino:x}-{st.st_mtime_ns:x}-{st.st_size:x}"'
        return "W/" + etag if self.server.weak_etags else etag

    def _precondition_failed(self, etag: str) -> bool:
        """412 sent when If-Match names another value (and the server honours If-Match)."""
        wanted = (self.headers.get("If-Match") or "*").strip()
        # If-Match compares strongly: a weak tag never matches one.
        if not self.server.honour_if_match or wanted == "*" or (
                wanted == etag and not etag.startswith("W/")):
            return False
        self.send_response(412)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True

    def _send_whole(self, path: str) -> None:
        """The whole file (200) whatever Range says, with its ETag; If-Match honoured."""
        if not os.path.isfile(path):
            super().do_GET()
            return
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            etag = self._etag(st)
            if self._precondition_failed(etag):
                return
            body = f.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_range(self, path: str, first: str, last: str) -> None:
        st = os.stat(path)
        size = st.st_size
        etag = self._etag(st)
        if self._precondition_failed(etag):
            return
        if first:
            start, stop = int(first), min(int(last) + 1 if last else size, size)
        else:  # a suffix: the last N bytes
            start, stop = max(size - int(last or 0), 0), size
        if start >= size or stop <= start:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(path, "rb") as f:
            f.seek(start)
            body = f.read(stop - start)
        self.send_response(206)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", f"bytes {start}-{stop - 1}/{size}")
        self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default listen backlog of 5 is what a store's burst of concurrent requests (metadata
    # probes, chunk batches) can fill while the accept loop waits for the CPU on a busy machine.
    request_queue_size = 64

    def __init__(self, root: str, flaky_failures: int, port: int = 0) -> None:
        self.root = root
        self.lock = threading.Lock()
        self.attempts: dict[str, int] = {}
        self.flaky_failures = flaky_failures
        self.requests = 0
        self.weak_etags = False
        self.honour_if_match = True  # False: If-Match ignored (answered as if absent)

        def handler(*args: Any) -> _Handler:
            return _Handler(*args, directory=root)

        super().__init__(("127.0.0.1", port), handler)


def _server_on_port_with(root: str, flaky_failures: int, digits: str) -> _Server:
    """A server on a free port whose number contains `digits`."""
    for port in range(1024, 65536):
        if digits in str(port):
            try:
                return _Server(root, flaky_failures, port)
            except OSError:
                continue
    raise RuntimeError(f"no free port containing {digits!r}")


@contextmanager
def http_server(root: str, flaky_failures: int = 2, port_digits: str = "") -> Iterator[_Server]:
    """Serve `root` over HTTP on loopback; `server.url` is its base URL. `port_digits`: on a
    port whose number contains them (to put given text into every URL)."""
    server = _server_on_port_with(root, flaky_failures, port_digits) if port_digits else \
        _Server(root, flaky_failures)
    server.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()

"""Run a test function in a forked child: as a user file permissions apply to (root ignores
them), under a file-size limit, or just apart from the test's threads and locks."""

from __future__ import annotations

import os
import pickle
import resource
import signal
from collections.abc import Callable
from typing import Any

NOBODY = 65534


def outcome(fn: Callable[[], Any]) -> Any:
    """fn()'s result, or (exception type name, message)."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - reported to the test, which checks it
        return type(exc).__name__, str(exc)


def in_child(fn: Callable[[], Any], *, as_nobody: bool = False, fsize_limit: int | None = None,
             timeout: int = 20) -> Any:
    """`outcome(fn)` computed in a forked child: optionally as `nobody` (when we are root) and
    under RLIMIT_FSIZE; killed after `timeout` seconds, so a child that blocks fails the test
    instead of hanging it."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        status = 1
        try:
            os.close(read)
            signal.alarm(timeout)
            if as_nobody and os.geteuid() == 0:
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            if fsize_limit is not None:
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_limit, fsize_limit))
            with os.fdopen(write, "wb") as out:
                pickle.dump(outcome(fn), out)
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as inp:
        data = inp.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0, f"the child failed or was killed (status {status:#x}): it blocked"
    return pickle.loads(data)

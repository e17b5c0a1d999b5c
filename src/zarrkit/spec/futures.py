"""TensorStore's futures: what `read()`, `write()`, `resolve()` and `storage_statistics()` of
arrays and views return, and the completed future an opened array also is.

`ViewFuture` is a `concurrent.futures.Future` with TensorStore's `Future` members on top
(`await`, `result(timeout=, deadline=)`, `force()`, `remove_done_callback`); `WriteFutures`
adds the `copy` and `commit` futures of a write. `Resolved` lets `zarrkit.open(spec)` return
the array itself while `.result()` and `await` on it still work, as on `ts.open(spec)`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Generator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any


def _timeout(timeout: float | None, deadline: float | None) -> float | None:
    """The shorter of `timeout` (seconds) and the time left until `deadline` (an absolute
    `time.time()`), as TensorStore's `result(timeout=, deadline=)` take them."""
    if deadline is None:
        return timeout
    left = max(0.0, deadline - time.time())
    return left if timeout is None else min(timeout, left)


class ViewFuture(Future):  # type: ignore[type-arg]
    """A `concurrent.futures.Future` that asyncio code may also `await`, as TensorStore's."""

    def __await__(self) -> Any:
        return asyncio.wrap_future(self).__await__()

    def result(self, timeout: float | None = None, deadline: float | None = None) -> Any:
        return super().result(_timeout(timeout, deadline))

    def exception(self, timeout: float | None = None,
                  deadline: float | None = None) -> BaseException | None:
        return super().exception(_timeout(timeout, deadline))

    def force(self) -> None:
        """TensorStore starts deferred work here; zarrkit's has started already."""

    def remove_done_callback(self, callback: Callable[[Any], Any]) -> int:
        """Unregister `callback` (every registration of it); returns how many there were."""
        with self._condition:  # type: ignore[attr-defined]
            callbacks = self._done_callbacks  # type: ignore[attr-defined]
            kept = [c for c in callbacks if c != callback]
            removed = len(callbacks) - len(kept)
            callbacks[:] = kept
        return removed


def completed(value: Any = None) -> ViewFuture:
    future = ViewFuture()
    future.set_result(value)
    return future


class WriteFutures(ViewFuture):
    """TensorStore's `WriteFutures`: the write itself (it completes when the data is stored,
    as `commit`), and `copy`, done once the source has been copied: always at once here,
    since `write()` copies the source before returning, so the caller may reuse it."""

    def __init__(self) -> None:
        super().__init__()
        self.copy = completed()

    @property
    def commit(self) -> WriteFutures:
        return self


class Resolved:
    """The completed future of the open that made this array or view (TensorStore's
    `ts.open(spec)` is a future): `.result()` and `await` give the object itself, so
    `zarrkit.open(spec).result()` and `await zarrkit.open(spec)` port unchanged."""

    def result(self, timeout: float | None = None, deadline: float | None = None) -> Any:
        return self

    def exception(self, timeout: float | None = None, deadline: float | None = None) -> None:
        return None

    def done(self) -> bool:
        return True

    def cancelled(self) -> bool:
        return False

    def cancel(self) -> bool:
        return False  # already done

    def force(self) -> None:
        pass

    def add_done_callback(self, callback: Callable[[Any], Any]) -> None:
        callback(self)  # done already: called at once, as a completed future calls it

    def remove_done_callback(self, callback: Callable[[Any], Any]) -> int:
        return 0  # never kept: it ran when it was added

    def __await__(self) -> Generator[Any, None, Any]:
        yield from ()
        return self


@dataclass(frozen=True)
class StorageStatistics:
    """TensorStore's `TensorStore.StorageStatistics`: `not_stored` (no chunk of the domain is
    stored) and `fully_stored` (every chunk of it is), each None unless asked for."""

    not_stored: bool | None = None
    fully_stored: bool | None = None

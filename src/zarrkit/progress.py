"""A dependency-free progress line on stderr: `label [#####-----] 50% 20/40`."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

#: A progress callback: (units done, units in total, what is being done).
Callback = Callable[[int, int, str], None]
_WIDTH = 30
_INTERVAL = 0.1  # seconds between redraws: a terminal cannot show more, and printing is slow


class ProgressBar:
    """Redraws one line in place (throttled); `close` finishes it with a newline."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self._last = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int, label: str) -> None:
        now = time.monotonic()
        if done < total and now - self._last < _INTERVAL:
            return
        self._last = now
        fraction = done / total if total else 1.0
        filled = int(fraction * _WIDTH)
        bar = "#" * filled + "-" * (_WIDTH - filled)
        text = f"\r{label[-40:]:<40} [{bar}] {fraction:4.0%} {done}/{total}"
        self.stream.write(text)
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()


def make_callback(progress: Any) -> tuple[Callback, Callable[[], None]]:
    """(callback, finish) for `progress`: True (a bar on stderr), False/None, or a callable."""
    if callable(progress):
        return progress, lambda: None
    if progress:
        bar = ProgressBar()
        return bar, bar.close
    return (lambda done, total, label: None), lambda: None

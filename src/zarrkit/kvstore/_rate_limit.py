"""Request rate limits: TensorStore's experimental_s3_rate_limiter and
experimental_gcs_rate_limiter ({"read_rate", "write_rate", "doubling_time"}).

Reads (gets, heads, listings) and writes (puts, deletes) are limited separately, each by a
token bucket: it starts empty, fills at `rate` tokens per second (or, with a positive finite
`doubling_time`, at a rate doubling every `doubling_time`, as TensorStore's), holds at most
min(1000 * rate, 2000) tokens, and each request takes one. A request finding the bucket empty
reserves the next token and waits until it has accrued, so N requests at rate r take N/r
seconds from the bucket's start however many threads send them.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import SpecError
from ._io_resources import seconds

# Past this exponent the doubling rate is beyond any request rate (and e**x overflows).
_HUGE = 700.0
# The longest single sleep (some 30 years): sleep() overflows on the waits a rate of 1e-300
# asks for.
_FOREVER = 1e9


class TokenBucket:
    """Tokens for one kind of request; `reserve()` takes one and says how long to wait."""

    def __init__(self, rate: float, doubling_time: float = 0.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        # ln(2) / doubling time: the rate is rate * e**(a * t); 0 keeps it constant.
        self._a = math.log(2) / doubling_time if 0 < doubling_time < math.inf else 0.0
        self._clock = clock
        self._start = self._last = clock()
        self._tokens = 0.0  # negative: tokens already promised to waiting requests
        self._cap = min(rate * 1000.0, 2000.0)
        self._lock = threading.Lock()
        #: When the request last admitted may start (the clock's time): its schedule.
        self.scheduled = self._start

    def reserve(self) -> float:
        """Take a token: the seconds to wait before the request may start (0: at once)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self._tokens + self._accrued(self._last, now), self._cap)
            self._last = now
            self._tokens -= 1.0
            self.scheduled = now if self._tokens >= 0 else self._until(-self._tokens, now)
            return self.scheduled - now

    def _growth(self, t: float) -> float:
        """The exponent a * (t - start) of the doubling rate at time t."""
        return self._a * (t - self._start)

    def _accrued(self, t0: float, t1: float) -> float:
        """Tokens added from t0 to t1: the rate's integral."""
        if t1 <= t0:
            return 0.0
        if not self._a:
            return self.rate * (t1 - t0)
        if self._growth(t1) > _HUGE:
            return math.inf
        return self.rate * (math.exp(self._growth(t1)) - math.exp(self._growth(t0))) / self._a

    def _until(self, deficit: float, now: float) -> float:
        """When `deficit` more tokens will have accrued after `now`."""
        if not self._a:
            return now + deficit / self.rate
        if self._growth(now) > _HUGE:
            return now
        grown = math.exp(self._growth(now)) + deficit * self._a / self.rate
        return self._start + math.log(grown) / self._a


class RateLimits:
    """The read and write buckets of one rate limiter resource (None: that kind unlimited)."""

    def __init__(self, json: Mapping[str, Any], where: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.json = dict(json)
        doubling = seconds(self.json, "doubling_time", "0")
        self.read = _bucket(self.json, "read_rate", doubling, clock, where)
        self.write = _bucket(self.json, "write_rate", doubling, clock, where)

    def delay(self, kind: str) -> float:
        """Reserve a token for a "read" or "write" request: the seconds it must wait."""
        bucket = self.read if kind == "read" else self.write
        return 0.0 if bucket is None else bucket.reserve()

    def wait(self, kind: str) -> None:
        pause = self.delay(kind)
        if pause > 0:
            time.sleep(min(pause, _FOREVER))

    async def wait_async(self, kind: str) -> None:
        pause = self.delay(kind)
        if pause > 0:
            await asyncio.sleep(min(pause, _FOREVER))

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy in another process (a dask worker) has buckets of its own, starting empty.
        return RateLimits, (self.json, "rate limiter")


def _bucket(json: Mapping[str, Any], name: str, doubling: float, clock: Callable[[], float],
            where: str) -> TokenBucket | None:
    rate = json.get(name)
    if rate is None:
        return None
    if isinstance(rate, bool) or not (isinstance(rate, int | float) and 0 < rate < math.inf):
        # TensorStore aborts the process on such a rate when it makes the limiter.
        raise SpecError(f"{where}.{name}: expected a number of requests per second > 0, got "
                        f"{rate!r}")
    return TokenBucket(float(rate), doubling, clock)

"""A resize or append never lands inside another handle's write (docs/concurrency.md): the
write holds the array's shape lock shared from planning to storing, the resize holds it
exclusively. Forced here with a hook that pauses a write after it is planned, so the one
dangerous interleaving is made to happen rather than hoped for: a whole edge chunk written
after an append would fill the appended rows with the fill value."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import zarrkit
from zarrkit.array import Array


def _pause_writes_of(handle, monkeypatch):
    """Writes through `handle` stop after planning (holding the shape lock) until released."""
    planned, release = threading.Event(), threading.Event()
    real = Array._write_planned

    def write_planned(self, plan, value):
        if self is handle:
            planned.set()
            assert release.wait(30)
        return real(self, plan, value)

    monkeypatch.setattr(Array, "_write_planned", write_planned)
    return planned, release


@pytest.mark.parametrize("grow", ["append", "resize"])
@pytest.mark.parametrize("shards", [None, (3, 4)])
def test_a_growth_waits_for_a_write_planned_before_it(tmp_path, monkeypatch, grow, shards):
    path = tmp_path / "a.zarr"
    kw = {"chunks": (3, 4)} if shards is None else {"chunks": (1, 4), "shards": shards}
    zarrkit.create(path, shape=(4, 4), dtype="i4", fill_value=0, **kw)[...] = 1
    writer, grower = zarrkit.open(path, mode="r+"), zarrkit.open(path, mode="r+")
    planned, release = _pause_writes_of(writer, monkeypatch)

    def write():  # row 3: the whole edge chunk (or shard) rows 3-5 as the old shape sees it
        writer[3:4, :] = 7

    def grow_it():
        if grow == "append":
            grower.append(np.full((2, 4), 9, "i4"))
        else:
            grower.resize((6, 4))
            grower[4:6, :] = 9

    w = threading.Thread(target=write)
    w.start()
    assert planned.wait(30)
    g = threading.Thread(target=grow_it)
    g.start()
    g.join(0.5)
    held = g.is_alive()  # waiting for the write's shared shape lock
    release.set()
    w.join(30)
    g.join(30)
    assert held, "the growth did not wait for the write planned before it"
    expected = np.ones((6, 4), "i4")
    expected[3], expected[4:] = 7, 9
    np.testing.assert_array_equal(zarrkit.open(path, mode="r")[...], expected)

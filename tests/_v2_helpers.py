"""Shared helpers for the Zarr v2 tests: sample data per dtype and exact comparison."""

from __future__ import annotations

import numpy as np


def sample(dtype, shape, seed=0):
    """Deterministic values of `dtype` (native order), varied enough to catch layout bugs."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    rng = np.random.default_rng(seed)
    if dtype.hasobject:
        return np.array([f"s{i}" * (i % 4) + "é" * (i % 2) for i in range(n)],
                        dtype=object).reshape(shape)
    if dtype.names is not None or dtype.kind == "V" or dtype.kind == "S":
        raw = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8)
        values = np.frombuffer(raw.tobytes(), dtype.newbyteorder("=") if dtype.names is None
                               else dtype).copy()
        if dtype.names is not None:  # no NaN bit patterns in float fields: compare by value
            values = _finite_fields(values)
        return values.reshape(shape)
    if dtype.kind == "U":
        width = dtype.itemsize // 4
        return np.array([("ab€"[i % 3] * (i % (width + 1))) for i in range(n)],
                        dtype=dtype).reshape(shape)
    if dtype.kind == "b":
        return (np.arange(n) % 3 == 1).reshape(shape)
    if dtype.kind in "mM":
        values = (np.arange(n, dtype=np.int64) * 86_400 - 1000).view(dtype.newbyteorder("="))
        values[::7] = np.array("NaT", dtype)
        return values.reshape(shape)
    values = (np.arange(n) * 37 % 101 - 50).astype("float64") / 4
    if dtype.kind == "u":
        values = np.abs(values) * 4
    if dtype.kind in "fc":
        values[1::9] = np.nan
        values[2::11] = -np.inf
    return values.astype(dtype.newbyteorder("=")).reshape(shape)


def _finite_fields(values):
    out = np.zeros(values.shape, values.dtype)
    for name in values.dtype.names:
        field = values[name]
        if field.dtype.names is not None:
            out[name] = _finite_fields(field)
        elif field.dtype.kind in "fc":
            out[name] = np.arange(field.size).reshape(field.shape) / 8
        else:
            out[name] = field
    return out


def assert_same(actual, expected):
    """Equal shape and exactly equal values (bitwise for numbers, so NaN == NaN)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.dtype.hasobject or actual.dtype.hasobject or actual.dtype.kind == "T":
        assert [str(v) if isinstance(v, str) else v for v in actual.ravel().tolist()] == \
            [str(v) if isinstance(v, str) else v for v in expected.ravel().tolist()]
        return
    if expected.dtype.names is not None:
        for name in expected.dtype.names:
            assert_same(actual[name], expected[name])
        return
    native = expected.dtype.newbyteorder("=")
    assert np.ascontiguousarray(actual.astype(native)).tobytes() == \
        np.ascontiguousarray(expected.astype(native)).tobytes()

"""zarr-python's `structured` v3 data type: numpy's structured (record) types.

`{"name": "structured", "configuration": {"fields": [["a", "int32"], ["b", <data type>]]}}`:
named fields, each of any v3 data type (structured ones included), packed in order with no
padding. The fill value is base64 of the element's bytes, as zarr-python writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import DataTypeError
from ._util import describe

STRUCTURED = "structured"


def dtype_from_config(config: dict[str, Any], where: str,
                      field_dtype: Callable[[Any, str], np.dtype]) -> np.dtype:
    """The packed numpy type of `config`; `field_dtype(json, where)` parses a field's type."""
    fields = config.get("fields")
    if set(config) != {"fields"} or not isinstance(fields, list) or not fields or not all(
            isinstance(f, list) and len(f) == 2 and isinstance(f[0], str) and f[0]
            for f in fields):
        raise DataTypeError(f"{where}: {STRUCTURED} needs configuration {{'fields': "
                            f"[[name, data type], ...]}}, got {describe(config)}")
    names = [name for name, _ in fields]
    if len(set(names)) != len(names):
        raise DataTypeError(f"{where}: {STRUCTURED}: field names repeat: {names}")
    return np.dtype([(name, field_dtype(t, f"{where}.fields[{i}]"))
                     for i, (name, t) in enumerate(fields)])


def packed(dtype: np.dtype, field_dtype: Callable[[np.dtype], np.dtype]) -> np.dtype:
    """`dtype` without padding, each field's type as `field_dtype` stores it (native order);
    fields of subarray type have no v3 form."""
    fields = []
    for name in dtype.names or ():
        field = dtype.fields[name][0]
        if field.subdtype is not None:
            raise DataTypeError(f"data type {dtype}: field {name!r} is an array ({field}); "
                                "v3 structured fields are scalars")
        fields.append((name, field_dtype(field)))
    return np.dtype(fields)


def config_of(dtype: np.dtype, field_json: Callable[[np.dtype], Any]) -> dict[str, Any]:
    return {"fields": [[name, field_json(dtype.fields[name][0])] for name in dtype.names]}


def is_packed(dtype: np.dtype) -> bool:
    """A structured type laid out as `dtype_from_config` makes it (no padding, in order)."""
    offset = 0
    for name in dtype.names or ():
        field, at = dtype.fields[name][:2]
        if at != offset or field.subdtype is not None:
            return False
        offset += field.itemsize
    return dtype.names is not None and offset == dtype.itemsize

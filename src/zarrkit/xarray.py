"""Writing xarray datasets and data trees as Zarr: `zarrkit.xarray.to_zarr(ds, where)`.

The output follows xarray's Zarr conventions, so `xr.open_zarr` (zarr-python) and
`xr.open_dataset(..., engine="zarrkit")` read it back: CF encoding by xarray itself, dimension
names as v3 `dimension_names` (v2: the `_ARRAY_DIMENSIONS` attribute), v3 fill values in the
array metadata with `_FillValue` as a base64 attribute (v2: `fill_value` is `_FillValue`), and
consolidated metadata at the root. Dask-backed variables are written in parallel,
shard-aligned (see `zarrkit.dask.from_dask`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import api
from .array import Array
from .consolidated import consolidate_metadata
from .errors import SpecError, ZarrkitError
from .group import Group
from .kvstore import open_kvstore

DIMENSIONS_ATTRIBUTE = "_ARRAY_DIMENSIONS"
#: Encoding keys passed on to `create`; xarray's own (e.g. "preferred_chunks") are dropped.
_CREATE_KEYS = ("chunks", "shards", "compressors", "filters", "serializer", "codecs",
                "chunk_key_encoding", "write_empty_chunks")


def _json_attr(value: Any) -> Any:
    """Attribute values as JSON (numpy scalars and arrays become numbers and lists)."""
    from xarray.backends.zarr import encode_zarr_attr_value

    return encode_zarr_attr_value(value)


def _fill_value(var: Any, attrs: dict[str, Any], zarr_format: int) -> Any:
    """The array fill value, following xarray's own zarr writer (see the module docstring)."""
    if zarr_format == 2:
        return attrs.pop("_FillValue", None)
    fill = var.encoding.get("fill_value")
    if fill is None and var.dtype.kind == "f":
        fill = np.nan  # xarray's default for floats, unlike Zarr's 0
    if attrs.get("_FillValue") is not None:
        from xarray.backends.zarr import FillValueCoder

        attrs["_FillValue"] = FillValueCoder.encode(attrs["_FillValue"], var.dtype)
    else:
        attrs.pop("_FillValue", None)
    return fill


def _create_keywords(var: Any, user: dict[str, Any]) -> dict[str, Any]:
    merged = {k: v for k, v in var.encoding.items() if k in _CREATE_KEYS}
    merged.update({k: v for k, v in user.items() if k != "fill_value"})
    if "chunks" not in merged and var.chunks is not None:  # a dask-backed variable
        merged["chunks"] = tuple(c[0] if c else 1 for c in var.chunks)
    if merged.get("chunks") is not None and var.ndim == 0:
        merged.pop("chunks")
    return merged


def _write_variable(group: Group, name: str, var: Any, user: dict[str, Any],
                    zarr_format: int, compute: bool) -> Any:
    from xarray.backends.zarr import encode_zarr_variable

    var = encode_zarr_variable(var, name=name, zarr_format=zarr_format)
    attrs = {k: _json_attr(v) for k, v in var.attrs.items()}
    fill = _fill_value(var, attrs, zarr_format)  # also encodes or drops the _FillValue attribute
    fill = user.get("fill_value", fill)
    kwargs = _create_keywords(var, user)
    if zarr_format == 2:
        attrs[DIMENSIONS_ATTRIBUTE] = list(var.dims)
    else:
        kwargs["dimension_names"] = list(var.dims)
    try:
        if zarr_format == 2 and fill is None:
            array = _create_v2_without_fill_value(group, name, var, attrs, kwargs)
        else:
            array = group.create_array(name, shape=var.shape, dtype=var.dtype, fill_value=fill,
                                       attributes=attrs, **kwargs)
    except ZarrkitError as exc:
        raise type(exc)(f"variable {name!r}: {exc}") from None
    return _store_values(array, var.data, compute)


def _create_v2_without_fill_value(group: Group, name: str, var: Any, attrs: dict[str, Any],
                                  kwargs: dict[str, Any]) -> Array:
    """A v2 array whose fill_value is null: to xarray a v2 fill_value means "missing", so
    variables without `_FillValue` must not get the default 0 (their zeros would read as NaN)."""
    from . import storage
    from .creation import create_array_from_metadata
    from .creation_v2 import build_v2_metadata

    path = storage.join(group.path, name)
    md = build_v2_metadata(var.shape, var.dtype, attributes=attrs, where=f"{path}/.zarray",
                           **kwargs).evolve(fill_value=None)
    return create_array_from_metadata(group.store, path, md)


def _store_values(array: Array, data: Any, compute: bool) -> Any:
    if hasattr(data, "dask") and hasattr(data, "rechunk"):  # a dask array: parallel writes
        import dask.array as da

        from .dask import aligned_chunks, write_grid

        aligned = data.rechunk(aligned_chunks(data, write_grid(array))) if data.ndim else data
        return da.store(aligned, array, lock=False, compute=compute)
    values = np.asarray(data)
    if values.ndim == 0:
        array[()] = values
    else:
        array[...] = values
    return None


def _write_dataset(group: Group, ds: Any, encoding: dict[str, Any], zarr_format: int,
                   compute: bool) -> list[Any]:
    from xarray import conventions

    variables, attrs = conventions.encode_dataset_coordinates(ds)
    group.attrs.update({k: _json_attr(v) for k, v in attrs.items()})
    pending = []
    for name, var in variables.items():
        user = dict(encoding.get(name, {}))
        unknown = set(user) - set(_CREATE_KEYS) - {"fill_value", "dtype"}
        if unknown:
            raise SpecError(f"variable {name!r}: unsupported encoding {sorted(unknown)} "
                            f"(supported: {', '.join(_CREATE_KEYS)}, fill_value, dtype)")
        if "dtype" in user:
            var = var.copy(deep=False)
            var.encoding["dtype"] = user.pop("dtype")
        pending.append(_write_variable(group, str(name), var, user, zarr_format, compute))
    return [p for p in pending if p is not None]


def to_zarr(data: Any, where: Any = None, *, group: str | None = None, mode: str = "w-",
            zarr_format: int = 3, encoding: dict[str, dict[str, Any]] | None = None,
            consolidated: bool = True, compute: bool = True,
            storage_options: dict[str, Any] | None = None) -> Any:
    """Write an `xarray.Dataset` (or `DataTree`) to a new Zarr group at `where`.

    `mode`: "w-" fails if something exists there, "w" replaces it. `encoding` maps variable
    names to `chunks`, `shards`, `compressors`, `fill_value`, `dtype`, ... `consolidated`
    writes consolidated metadata at the root (what `xr.open_zarr` looks for first).
    Returns the root group, or with `compute=False` a dask object whose computation writes the
    dask-backed variables.
    """
    import xarray as xr

    if mode not in ("w", "w-"):
        raise SpecError(f"to_zarr: mode must be 'w' or 'w-', got {mode!r}")
    store, base = open_kvstore(where if where is not None else "memory://", read_only=False,
                               storage_options=storage_options)
    root = api.open_group(store, mode=mode, path="/".join(p for p in (base, group) if p),
                          zarr_format=zarr_format)
    tree = data if isinstance(data, xr.DataTree) else None
    pending = []
    for path, node_ds in (_tree_items(tree) if tree is not None else [("", data)]):
        node_group = root.require_group(path) if path else root
        pending += _write_dataset(node_group, node_ds, encoding or {}, zarr_format, compute)
    if consolidated:
        root = consolidate_metadata(store, path=root.path)
    if pending and not compute:
        import dask

        return dask.delayed(pending)
    return root


def _tree_items(tree: Any) -> list[tuple[str, Any]]:
    """(relative path, dataset of that node only) for every node of a DataTree."""
    items = []
    for node in tree.subtree:
        path = node.relative_to(tree) if node is not tree else ""
        items.append(("" if path == "." else path, node.to_dataset(inherit=False)))
    return items

"""`zarrkit.xarray.to_zarr` on existing stores: modes "a", "a-" and "r+", `append_dim` and
`region`, with the checks xarray's own `Dataset.to_zarr` makes (see its documentation).

Values written into an existing variable are CF-encoded by xarray's coders with the encoding
read back from the store (units, calendar, dtype, `_FillValue`, scale/offset), so appended
times decode with the stored units. Every check runs before anything is written.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .array import Array
from .errors import (
    DataTypeError,
    NodeNotFoundError,
    SelectionError,
    SelectionValueError,
    SpecError,
)
from .group import Group

MODES = ("w", "w-", "a", "a-", "r+")


def choose_mode(mode: str | None, append_dim: Any, region: Any) -> str:
    """xarray's default mode ("a" with `append_dim`, "r+" with `region`, else "w-") and its
    rules on which modes take `append_dim` and `region`."""
    if mode is None:
        mode = "a" if append_dim is not None else "r+" if region is not None else "w-"
    if mode not in MODES:
        raise SpecError(f"to_zarr: mode must be one of {', '.join(map(repr, MODES))}, "
                        f"got {mode!r}")
    if append_dim is not None and mode not in ("a", "a-"):
        raise SpecError(f"to_zarr: append_dim={append_dim!r} needs mode 'a' or 'a-' "
                        f"(or none), got mode={mode!r}")
    if region is not None and mode not in ("a", "a-", "r+"):
        raise SpecError(f"to_zarr: region needs mode 'a', 'a-' or 'r+' (or none), "
                        f"got mode={mode!r}")
    return mode


class Existing(NamedTuple):
    """A write into an existing array: its encoded values, where they go, its new shape."""

    array: Array
    data: Any
    selection: tuple[slice, ...]
    shape: tuple[int, ...]


def stored_variable(name: str, array: Array) -> Any:
    """The stored variable as xarray decodes it (lazily): its encoding is what new values of
    it are encoded with."""
    from xarray import conventions

    from .xarray_backend import variable

    return conventions.decode_cf_variable(name, variable(array))


def resolve_region(ds: Any, region: Any, mode: str, append_dim: Any,
                   group: Group | None) -> dict[str, slice]:
    """`region` as integer slices per dimension ("auto" found from the stored coordinates),
    checked as xarray checks it."""
    if isinstance(region, str) and region == "auto":
        region = dict.fromkeys(ds.dims, "auto")
    if not isinstance(region, dict):
        raise SpecError(f"to_zarr: region must be a dict or 'auto', got {type(region).__name__}")
    region = dict(region)
    for dim, value in region.items():
        if isinstance(value, str) and value == "auto":
            if mode not in ("r+", "a"):
                raise SpecError(f"to_zarr: region 'auto' needs mode 'r+' or 'a', got {mode!r}")
            region[dim] = _auto_region(ds, dim, group)
    for dim, value in region.items():
        if dim not in ds.dims:
            raise SpecError(f"to_zarr: region dimension {dim!r} is not a dimension of the "
                            f"dataset {list(ds.dims)}")
        if not isinstance(value, slice) or value.step not in (1, None):
            raise SpecError(f"to_zarr: region[{dim!r}] must be a slice with step 1, "
                            f"got {value!r}")
    unmatched = [str(k) for k, v in ds.variables.items() if not set(region) & set(v.dims)]
    if region and unmatched:
        raise SpecError(f"to_zarr: with a region, every variable must have one of its "
                        f"dimensions {list(region)}; drop the others first: "
                        f".drop_vars({unmatched!r})")
    if append_dim is not None and append_dim in region:
        raise SpecError(f"to_zarr: dimension {append_dim!r} cannot be both append_dim and "
                        "in region")
    return region


def _auto_region(ds: Any, dim: Any, group: Group | None) -> slice:
    """The slice of the stored coordinate `dim` holding the dataset's values of it, in order
    (a dimension without coordinate: all of it)."""
    import pandas as pd

    if dim not in ds.variables:
        return slice(0, ds.sizes[dim])
    if group is None or dim not in group.array_keys():
        where = group.path if group is not None else "(none yet)"
        raise NodeNotFoundError(f"to_zarr: region 'auto' for {dim!r} needs the coordinate "
                                f"{dim!r} stored in the group {where or '/'!r}")
    stored = stored_variable(str(dim), group[dim]).compute()
    found = pd.Index(stored.values).get_indexer(ds[dim].values)
    if (found == -1).any():
        raise SelectionError(f"to_zarr: region 'auto': values of coordinate {dim!r} are not "
                             "all in the stored coordinate (a region write cannot add any)")
    if len(found) and (np.diff(found) != 1).any():
        raise SelectionValueError(f"to_zarr: region 'auto': the values of coordinate {dim!r} "
                                  "are not one contiguous, ordered run of the stored ones")
    return slice(int(found[0]), int(found[-1]) + 1) if len(found) else slice(0, 0)


def check_dtype(name: str, stored: Any, new: Any) -> None:
    """xarray's rule: numbers, times, booleans and objects are cast to the stored type; other
    types (fixed-length strings) must equal it, or values would be cut."""
    kind = new.dtype
    if (np.issubdtype(kind, np.number) or np.issubdtype(kind, np.datetime64)
            or np.issubdtype(kind, np.bool_) or kind.kind == "O"
            or (kind.kind in "SU" and stored.dtype.kind == "O")):
        return
    if kind != stored.dtype:
        raise DataTypeError(f"variable {name!r}: the store holds dtype {stored.dtype}, the "
                            f"dataset's values are {kind}")


def plan_existing(name: str, var: Any, array: Array, region: dict[str, slice] | None,
                  append_dim: Any) -> Existing:
    """Encode `var` as the stored variable is encoded, and place it: at the end along
    `append_dim`, in `region`, else over the whole array (same sizes)."""
    from xarray.backends.zarr import encode_zarr_variable

    stored = stored_variable(name, array)
    check_dtype(name, stored, var)
    new = var.copy(deep=False)
    new.encoding = dict(stored.encoding)
    try:
        encoded = encode_zarr_variable(new, name=name, zarr_format=array.zarr_format)
    except (TypeError, ValueError) as exc:  # the stored encoding cannot hold these values
        raise SpecError(f"variable {name!r}: {exc}") from None
    _check_units(name, stored, encoded)
    if encoded.dims != stored.dims:
        if set(encoded.dims) != set(stored.dims):
            raise SpecError(f"variable {name!r}: stored with dimensions {stored.dims}, the "
                            f"dataset has {encoded.dims}; to_zarr cannot change them")
        encoded = encoded.transpose(*stored.dims)
    selection, shape = _placement(name, encoded, array.shape, stored.dims, region or {},
                                  append_dim)
    return Existing(array, encoded.data, selection, shape)


def _check_units(name: str, stored: Any, encoded: Any) -> None:
    """Times the stored units cannot hold (half hours into "hours since ...") are encoded by
    xarray in other units, which the stored attributes would not say: the values would read
    as other times (xarray writes them so)."""
    for key in ("units", "calendar"):
        want, got = stored.encoding.get(key), encoded.attrs.get(key)
        if want is not None and got is not None and not _same_units(str(want), str(got)):
            raise SpecError(f"variable {name!r}: its values need {key} {got!r}, the store's "
                            f"are {want!r}: they cannot be written with its encoding")


def _same_units(a: str, b: str) -> bool:
    """CF units that mean the same ("hours since 2024-01-01" and "... 00:00:00")."""
    import pandas as pd

    if a == b:
        return True
    (unit_a, _, ref_a), (unit_b, _, ref_b) = a.partition(" since "), b.partition(" since ")
    try:
        return unit_a.strip().lower() == unit_b.strip().lower() and \
            pd.Timestamp(ref_a.strip()) == pd.Timestamp(ref_b.strip())
    except (ValueError, TypeError):
        return False


def _placement(name: str, var: Any, stored_shape: tuple[int, ...], dims: tuple[Any, ...],
               region: dict[str, slice], append_dim: Any
               ) -> tuple[tuple[slice, ...], tuple[int, ...]]:
    selection, shape = [], []
    for dim, size, n in zip(dims, stored_shape, var.shape, strict=True):
        if dim == append_dim:
            selection.append(slice(size, size + n))
            shape.append(size + n)
            continue
        start, stop = (_region_bounds(name, dim, region[dim], size) if dim in region
                       else (0, size))
        if stop - start != n:
            where = f"region {dim}={start}:{stop}" if dim in region else "the stored array"
            raise SelectionValueError(
                f"variable {name!r}: {n} values along {dim!r} do not fit {where} "
                f"({stop - start}); only append_dim can change a stored size, and region "
                "writes a part")
        selection.append(slice(start, stop))
        shape.append(size)
    return tuple(selection), tuple(shape)


def _region_bounds(name: str, dim: Any, part: slice, size: int) -> tuple[int, int]:
    try:
        start, stop, _ = part.indices(size)
    except TypeError:
        raise SpecError(f"to_zarr: region[{dim!r}] must have integer bounds, "
                        f"got {part!r}") from None
    beyond = [b for b in (part.start, part.stop) if b is not None and not -size <= b <= size]
    if beyond or stop < start:
        raise SelectionError(f"variable {name!r}: region {dim}={part.start}:{part.stop} is "
                             f"out of bounds for its stored size {size} along {dim!r}")
    return start, stop


def store_into(array: Array, data: Any, selection: tuple[slice, ...], compute: bool) -> Any:
    """Write `data` at `selection`; a dask array in parallel, its blocks rechunked so that no
    two tasks write into the same stored object (shard, else chunk)."""
    if hasattr(data, "dask") and hasattr(data, "rechunk"):
        import dask.array as da

        from .dask import write_grid

        if data.ndim:
            data = data.rechunk(_offset_chunks(data, selection, write_grid(array)))
        return da.store(data, array, regions=selection or None, lock=False, compute=compute)
    values = np.asarray(data)
    array[selection if values.ndim else ()] = values
    return None


def _offset_chunks(data: Any, selection: tuple[slice, ...],
                   grid: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Per axis, blocks whose edges fall on the grid once placed at the selection's start:
    multiples of the grid near the dask array's own block size."""
    out = []
    for n, part, g, blocks in zip(data.shape, selection, grid, data.chunks, strict=True):
        step = max(round(max(blocks or (1,)) / g), 1) * g
        sizes, pos, end = [], part.start, part.start + n
        while pos < end:
            nxt = min((pos // step + 1) * step, end)
            sizes.append(nxt - pos)
            pos = nxt
        out.append(tuple(sizes) or (0,))
    return tuple(out)

"""Writing xarray datasets and data trees as Zarr: `zarrkit.xarray.to_zarr(ds, where)`.

The output follows xarray's Zarr conventions, so `xr.open_zarr` (zarr-python) and
`xr.open_dataset(..., engine="zarrkit")` read it back: CF encoding by xarray itself, dimension
names as v3 `dimension_names` (v2: the `_ARRAY_DIMENSIONS` attribute), v3 fill values in the
array metadata with a `_FillValue` attribute as xarray encodes it (base64 for floats; v2:
`fill_value` is `_FillValue`), and consolidated metadata at the root. Dask-backed variables
are written in parallel, shard-aligned (see `zarrkit.dask.from_dask`). xarray's modes on
existing stores (`append_dim`, `region`, "a", "a-", "r+") and their checks are in
`xarray_modes`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import api, formats, storage
from .array import Array
from .codecs.numcodecs_v2 import OBJECT_CODECS
from .consolidated import consolidate_metadata
from .creation import build_metadata, create_array_from_metadata
from .errors import NodeNotFoundError, NodeTypeError, SpecError, ZarrkitError
from .group import Group, finished_after, finished_node, open_node
from .kvstore import open_kvstore
from .metadata.json import storable_attributes
from .metadata.names import normalize_path, validate_node_name
from .xarray_modes import choose_mode, plan_existing, resolve_region, store_into

DIMENSIONS_ATTRIBUTE = "_ARRAY_DIMENSIONS"
#: Encoding keys passed on to `create`; xarray's own (e.g. "preferred_chunks") are dropped.
_CREATE_KEYS = ("chunks", "shards", "compressors", "filters", "serializer", "codecs",
                "chunk_key_encoding", "write_empty_chunks")
#: CF encoding keys xarray's own coders consume (as `ds.to_zarr(encoding=...)` takes them).
_CF_KEYS = ("dtype", "_FillValue", "missing_value", "scale_factor", "add_offset", "units",
            "calendar", "_Unsigned")


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


def _inherited(encoding: dict[str, Any], zarr_format: int) -> dict[str, Any]:
    """The creation keywords in a variable's encoding. Codecs (and shards) a Zarr reader put
    there (with `preferred_chunks`; from v3 with a `serializer`) are kept only into the same
    format, else the target's defaults: neither format takes the other's codecs. Object codecs
    (vlen-utf8, ...) are dropped: xarray writes strings as fixed-length or v3 string types."""
    kept = {k: v for k, v in encoding.items() if k in _CREATE_KEYS}
    read = "preferred_chunks" in encoding and "compressors" in encoding
    source_format = 3 if "serializer" in encoding else 2 if read else None
    if source_format not in (None, zarr_format):
        for key in ("compressors", "filters", "serializer"):
            kept.pop(key, None)
    if zarr_format == 2:
        kept.pop("shards", None)  # v2 has no sharding: the chunks are kept
    if kept.get("filters"):
        kept["filters"] = [f for f in kept["filters"] if _codec_id(f) not in OBJECT_CODECS]
    return kept


def _codec_id(codec: Any) -> Any:
    return codec.get("id") if isinstance(codec, dict) else getattr(codec, "codec_id", None)


def _create_keywords(var: Any, user: dict[str, Any], zarr_format: int) -> dict[str, Any]:
    merged = _inherited(var.encoding, zarr_format)
    merged.update({k: v for k, v in user.items() if k != "fill_value"})
    if "chunks" not in merged and var.chunks is not None:  # a dask-backed variable
        merged["chunks"] = tuple(c[0] if c else 1 for c in var.chunks)
    if merged.get("chunks") is not None and var.ndim == 0:
        merged.pop("chunks")
    return merged


class _Planned(NamedTuple):
    """A variable checked before anything is written: its array metadata and values."""

    path: str
    metadata: Any
    data: Any
    write_empty_chunks: bool


def _plan_variable(group_path: str, name: str, var: Any, user: dict[str, Any],
                   zarr_format: int) -> _Planned:
    """The array metadata of one variable, validated (data type, encoding, attributes) without
    writing anything; a refusal is the zarrkit error, naming the variable."""
    from xarray.backends.zarr import encode_zarr_variable

    try:
        var = encode_zarr_variable(var, name=name, zarr_format=zarr_format)
    except (TypeError, ValueError) as exc:  # xarray's CF encoding refused the encoding given
        raise SpecError(f"variable {name!r}: {exc}") from None
    try:
        for part in name.strip("/").split("/"):
            validate_node_name(part)
        path = storage.join(group_path, normalize_path(name))
        metadata, write_empty = _variable_metadata(path, var, user, zarr_format)
    except ZarrkitError as exc:
        raise type(exc)(f"variable {name!r}: {exc}") from None
    return _Planned(path, metadata, var.data, write_empty)


def _variable_metadata(path: str, var: Any, user: dict[str, Any],
                       zarr_format: int) -> tuple[Any, bool]:
    attrs = {k: _json_attr(v) for k, v in var.attrs.items()}
    fill = _fill_value(var, attrs, zarr_format)  # also encodes or drops the _FillValue attribute
    fill = user.get("fill_value", fill)
    kwargs = _create_keywords(var, user, zarr_format)
    write_empty = bool(kwargs.pop("write_empty_chunks", False))
    if zarr_format == 2:
        attrs[DIMENSIONS_ATTRIBUTE] = list(var.dims)
    else:
        kwargs["dimension_names"] = list(var.dims)
    kwargs["attributes"] = attrs
    if zarr_format == 2 and fill is None:
        # To xarray a v2 fill_value means "missing", so variables without `_FillValue` must
        # not get the default 0 (their zeros would read as NaN): fill_value stays null.
        metadata = build_metadata(path, var.shape, var.dtype, 2, kwargs)
        return metadata.evolve(fill_value=None), write_empty
    kwargs["fill_value"] = fill
    return build_metadata(path, var.shape, var.dtype, zarr_format, kwargs), write_empty


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


class _Node(NamedTuple):
    """One group's writes, all checked: its attributes, new arrays and existing ones."""

    path: str  # relative to the written group ("" for it)
    attrs: dict[str, Any]
    new: list[_Planned]
    existing: list[Any]  # xarray_modes.Existing


class _Options(NamedTuple):
    mode: str
    zarr_format: int
    append_dim: Any
    region: Any
    encoding: dict[str, dict[str, Any]]


def _plan_node(path: str, group_path: str, ds: Any, stored: Group | None,
               options: _Options) -> _Node:
    """A node's group attributes and its variables, all validated before any write: new
    variables as new arrays, existing ones (modes "a", "a-", "r+") as writes into them."""
    from xarray import conventions

    region = None
    if options.region is not None:
        region = resolve_region(ds, options.region, options.mode, options.append_dim, stored)
        ds = ds.drop_vars(list(ds.indexes))  # as xarray: region writes leave indexes alone
    arrays = dict(stored.arrays()) if stored is not None else {}
    _check_against_store(ds, stored, arrays, options, region)
    variables, attrs = conventions.encode_dataset_coordinates(ds)
    group_attrs = storable_attributes({k: _json_attr(v) for k, v in attrs.items()},
                                      f"group {group_path or '/'!r}")
    new, existing = [], []
    for name, var in variables.items():
        if str(name) not in arrays:
            new.append(_plan_new(group_path, str(name), var, options))
            continue
        planned = plan_existing(str(name), var, arrays[str(name)], region, options.append_dim)
        if options.mode != "a-" or options.append_dim is None or options.append_dim in var.dims:
            existing.append(planned)  # "a-" leaves the variables without append_dim alone
    return _Node(path, group_attrs, new, existing)


def _check_against_store(ds: Any, stored: Group | None, arrays: dict[str, Array],
                         options: _Options, region: dict[str, slice] | None) -> None:
    """xarray's refusals of a dataset that does not fit the stored group."""
    from .xarray_backend import dimensions

    where = f"group {stored.path or '/'!r}" if stored is not None else "the new group"
    taken = set(options.encoding) & set(arrays)
    if taken:
        raise SpecError(f"to_zarr: variables {sorted(taken)} already exist in {where}, so "
                        "their encoding is the stored one: give no encoding for them")
    names = [str(k) for k in ds.variables]
    added = [n for n in names if n not in arrays]
    if added and (options.mode == "r+" or region is not None):
        why = "mode 'r+' only writes" if options.mode == "r+" else "a region write goes"
        raise SpecError(f"to_zarr: variables {added} are not in {where}; {why} into existing "
                        "arrays (mode 'a' without region adds variables)")
    groups = [n for n in added if stored is not None and n in stored.group_keys()]
    if groups:
        raise NodeTypeError(f"to_zarr: {where} has groups named {groups}, not arrays")
    dim = options.append_dim
    if dim is not None and dim not in arrays and \
            not any(dim in dimensions(a) for a in arrays.values()):
        raise SpecError(f"to_zarr: append_dim={dim!r} is not a dimension of any array in "
                        f"{where}")


def _plan_new(group_path: str, name: str, var: Any, options: _Options) -> _Planned:
    user = dict(options.encoding.get(name, {}))
    unknown = set(user) - set(_CREATE_KEYS) - set(_CF_KEYS) - {"fill_value"}
    if unknown:
        raise SpecError(f"variable {name!r}: unsupported encoding {sorted(unknown)} "
                        f"(supported: {', '.join(_CREATE_KEYS + _CF_KEYS)}, fill_value)")
    cf = {k: user.pop(k) for k in _CF_KEYS if k in user}
    if cf:  # for xarray's CF coders, in encode_zarr_variable
        var = var.copy(deep=False)
        var.encoding.update(cf)
    return _plan_variable(group_path, name, var, user, options.zarr_format)


def _write_node(group: Group, node: _Node, mode: str, compute: bool) -> list[Any]:
    if mode in ("a", "a-"):
        group.attrs.put(node.attrs)  # as xarray: the dataset's attributes replace the group's
    elif mode != "r+" and node.attrs:
        group.attrs.update(node.attrs)
    for e in node.existing:  # appends grow first (xarray also resizes eagerly)
        if e.shape != e.array.shape:
            e.array.resize(e.shape)
    pending = []
    for p in node.new:
        array = create_array_from_metadata(group.store, p.path, p.metadata,
                                           write_empty_chunks=p.write_empty_chunks)
        pending.append(_store_values(array, p.data, compute))
    pending += [store_into(e.array, e.data, e.selection, compute) for e in node.existing]
    return [p for p in pending if p is not None]


def to_zarr(data: Any, where: Any = None, *, group: str | None = None, mode: str | None = None,
            zarr_format: int | None = None, encoding: dict[str, dict[str, Any]] | None = None,
            consolidated: bool = True, compute: bool = True, append_dim: Any = None,
            region: Any = None, storage_options: dict[str, Any] | None = None) -> Any:
    """Write an `xarray.Dataset` (or `DataTree`) as a Zarr group at `where`, with the modes of
    xarray's `Dataset.to_zarr`.

    `mode`: "w-" creates (fails if something exists there), "w" replaces, "a" adds variables
    and overwrites existing ones (creating the group if missing), "a-" as "a" but with
    `append_dim` leaves the existing variables without that dimension alone, "r+" only writes
    values into existing variables. The default is "a" with `append_dim`, "r+" with `region`,
    else "w-". `append_dim` grows every variable having it along it (the other sizes must
    match the stored ones); `region` (`{dim: slice | "auto"}` or "auto", found from the stored
    coordinates) writes into a part of the existing arrays, and needs every variable to have
    one of its dimensions (indexes are not written). Existing variables keep their stored
    encoding (new times take its units and calendar); `encoding` for them is refused.
    `encoding` maps new variable names to `chunks`, `shards`, `compressors`, `fill_value`,
    `dtype`, ... `zarr_format` defaults to the existing group's, else 3. `consolidated` writes
    consolidated metadata at the root (what `xr.open_zarr` looks for first); mode "r+" changes
    no metadata.
    Every variable (data type, encoding, dimensions, sizes, attributes) is checked before
    anything is written or replaced, so a refused call leaves the target as it was.
    Returns the root group, or with `compute=False` a dask object whose computation writes the
    dask-backed variables (metadata, appends' new shapes included, is written at once).
    """
    import xarray as xr

    mode = choose_mode(mode, append_dim, region)
    tree = data if isinstance(data, xr.DataTree) else None
    if tree is not None and append_dim is not None:
        raise SpecError("to_zarr: append_dim is not supported for a DataTree (nor by xarray); "
                        "append to each of its groups with group=")
    zarr_format = formats.check_format(zarr_format)
    store, base = open_kvstore(where if where is not None else "memory://", read_only=False,
                               storage_options=storage_options)
    root_path = normalize_path("/".join(p for p in (base, group) if p))
    existing = _existing_group(store, root_path, mode, zarr_format)
    zarr_format = existing.zarr_format if existing is not None else zarr_format or 3
    options = _Options(mode, zarr_format, append_dim, region, encoding or {})
    nodes = [_plan_node(path, storage.join(root_path, path) if path else root_path, node_ds,
                        _stored_child(existing, path, mode), options)
             for path, node_ds in (_tree_items(tree) if tree is not None else [("", data)])]
    root = existing if existing is not None else api.open_group(
        store, mode="a" if mode == "a-" else mode, path=root_path, zarr_format=zarr_format)
    pending = []
    for node in nodes:
        node_group = root.require_group(node.path) if node.path else root
        pending += _write_node(node_group, node, mode, compute)
    if consolidated and mode != "r+":
        root = _consolidate(store, normalize_path(base), root)
    if pending and not compute:
        import dask

        # The store is finished (a zip archive written) once the pending writes are done.
        return dask.delayed(finished_after)(pending, root, where, storage_options)
    return finished_node(root, where, storage_options=storage_options)


def _existing_group(store: Any, path: str, mode: str, zarr_format: int | None) -> Group | None:
    """The group modes "a", "a-" and "r+" write into (None: "a" creates it), read without
    consolidated metadata, which another writer may have left stale."""
    if mode in ("w", "w-"):
        return None
    if not storage.node_exists(store, path):
        if mode == "r+":
            raise NodeNotFoundError(f"to_zarr: mode 'r+' writes into an existing group, and "
                                    f"there is none at {path or '/'!r}")
        return None
    return api.open_group(store, mode="r+", path=path, zarr_format=zarr_format,
                          use_consolidated=False)


def _stored_child(root: Group | None, path: str, mode: str) -> Group | None:
    """The existing group at `path` below `root` (a DataTree node), if any; mode "r+" needs
    it."""
    if root is None or not path:
        return root
    try:
        node = root[path]
    except KeyError:
        if mode == "r+":
            raise NodeNotFoundError(f"to_zarr: mode 'r+' writes into existing groups, and "
                                    f"{root.path or ''}/{path} is none") from None
        return None
    if not isinstance(node, Group):
        raise NodeTypeError(f"to_zarr: {node.name} is an array, where the DataTree has a group")
    return node


def _consolidate(store: Any, base: str, written: Group) -> Group:
    """Consolidated metadata at the store's root (`where` itself), as xarray writes it and
    `xr.open_zarr(..., group=...)` reads it, also when a `group` below it was written; at the
    written group when the root is no group of the same format."""
    if written.path != base:
        try:
            consolidate_metadata(store, path=base, zarr_format=written.zarr_format)
        except (NodeNotFoundError, NodeTypeError):
            pass
        else:
            return open_node(store, written.path, zarr_format=written.zarr_format)
    return consolidate_metadata(store, path=written.path)


def _tree_items(tree: Any) -> list[tuple[str, Any]]:
    """(relative path, dataset of that node only) for every node of a DataTree."""
    items = []
    for node in tree.subtree:
        path = node.relative_to(tree) if node is not tree else ""
        items.append(("" if path == "." else path, node.to_dataset(inherit=False)))
    return items

"""zarr-python 2's copy functions: `copy` and `copy_all` copy nodes into a group, from zarrkit
or from h5py (files, groups and datasets) or any array, encoded as the destination says;
`copy_store` copies stored keys as they are, without decoding.

Each returns (nodes or keys copied, skipped, bytes of data copied). `if_exists` says what to do
where the destination has something: "raise" (NodeExistsError, before anything is copied for
`copy_store`), "replace", "skip", or "skip_initialized" (skip arrays whose every chunk is
stored). `dry_run` counts and logs without writing; `log` is a callable, a file path or a file
object that receives a line per node or key.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import formats, storage
from .array import Array
from .conversion import NULL_FILL, from_array
from .engine.executor import run_io
from .errors import InvalidNameError, NodeExistsError, NodeTypeError, SpecError
from .group import Group, listed_below, open_node
from .kvstore import open_kvstore
from .metadata import xarray_fill
from .metadata.names import normalize_path
from .metadata.v2 import DIMENSIONS_ATTRIBUTE

IF_EXISTS = ("raise", "replace", "skip", "skip_initialized")


@dataclass
class _Copying:
    """One copy's settings and its tally."""

    log: Callable[[str], None]
    if_exists: str
    dry_run: bool
    without_attrs: bool
    create_kws: dict[str, Any]
    #: The members of the zarrkit source groups, by (store, path): listed level by level
    #: at the first group (`listed_below`), not group by group.
    listed: dict[tuple[int, str], list[tuple[str, Any]]] = field(default_factory=dict)
    copied: int = 0
    skipped: int = 0
    nbytes: int = 0
    #: The log lines of a member copied apart (`_copied_apart`), written by the caller in order.
    lines: list[str] = field(default_factory=list)

    def result(self) -> tuple[int, int, int]:
        return self.copied, self.skipped, self.nbytes


def copy(source: Any, dest: Group, name: str | None = None, shallow: bool = False,
         without_attrs: bool = False, log: Any = None, if_exists: str = "raise",
         dry_run: bool = False, **create_kws: Any) -> tuple[int, int, int]:
    """Copy the array or group `source` into the group `dest` as `name` (by default the source's
    own name). A group is copied with everything below it, or with `shallow` its members only
    one level down. Arrays keep the chunks, codecs and fill value of a zarrkit source in the same
    format (as `from_array`), an h5py dataset's chunks and fill value, unless `create_kws` say
    otherwise."""
    if name is not None and not isinstance(name, str):
        raise InvalidNameError(f"copy: invalid name {name!r}: must be a string")
    with _logger(log) as write_log:
        state = _state(write_log, if_exists, dry_run, without_attrs, create_kws)
        dest = _group(dest)
        _copy(source, dest, dest.path, name or _basename(source), state, shallow, root=True)
    return state.result()


def copy_all(source: Any, dest: Group, shallow: bool = False, without_attrs: bool = False,
             log: Any = None, if_exists: str = "raise", dry_run: bool = False,
             **create_kws: Any) -> tuple[int, int, int]:
    """`copy` of every member of the group `source` into `dest`, whose attributes are updated
    with the source's."""
    dest = _group(dest)
    with _logger(log) as write_log:
        state = _state(write_log, if_exists, dry_run, without_attrs, create_kws)
        _copy_members(source, dest, dest.path, state, shallow)
        if not without_attrs and not dry_run:
            dest.attrs.update(_attributes(source))
    return state.result()


def _state(log: Callable[[str], None], if_exists: str, dry_run: bool, without_attrs: bool,
           create_kws: dict[str, Any]) -> _Copying:
    if not isinstance(if_exists, str) or if_exists not in IF_EXISTS:
        raise SpecError(f"if_exists must be one of {', '.join(IF_EXISTS)}; got {if_exists!r}")
    return _Copying(log, if_exists, dry_run, without_attrs, create_kws)


def _group(dest: Any) -> Group:
    if not isinstance(dest, Group):
        raise NodeTypeError(f"copy copies into a zarrkit group; got {type(dest).__name__} "
                            f"{dest!r}")
    return dest


def _basename(node: Any) -> str:
    name = str(getattr(node, "name", "") or "").rstrip("/").rpartition("/")[2]
    if not name:
        raise SpecError("copy: the source has no name of its own (the root of a hierarchy); "
                        "give name=")
    return name


def _is_group(node: Any) -> bool:
    return hasattr(node, "keys") and not hasattr(node, "shape")


#: `_copy`'s `existing` when not looked up yet.
_UNKNOWN: Any = object()


def _copy(source: Any, dest: Group | None, parent: str, name: str, state: _Copying,
          shallow: bool, root: bool, existing: Any = _UNKNOWN) -> None:
    """Copy `source` to `name` in `dest` (None in a dry run below a group not made), whose
    path is `parent`; `existing` is what `dest` has there, when already looked up."""
    if existing is _UNKNOWN:
        existing = dest[name] if dest is not None and name in dest else None
    if existing is not None and not _may_write(existing, source, state):
        state.skipped += 1
        state.log(f"skip {_label(source)} -> {existing.name}")
        return
    target = storage.join(parent, name)
    state.log(f"copy {_label(source)} -> /{target}")
    if _is_group(source):
        _copy_group(source, dest, target, name, existing, state, shallow, root)
    else:
        _copy_array(source, dest, name, existing, state)


def _may_write(existing: Any, source: Any, state: _Copying) -> bool:
    """Whether `existing` is to be replaced (or, for groups, merged into)."""
    if state.if_exists == "raise":
        raise NodeExistsError(f"copy: {existing.name} exists (if_exists='replace' or 'skip')")
    if state.if_exists == "replace" or (_is_group(source) and isinstance(existing, Group)):
        return True
    if state.if_exists == "skip_initialized" and isinstance(existing, Array):
        # Inner chunks for a sharded array: a stored shard missing some still counts short.
        return existing.nchunks_initialized() < existing.nchunks
    return False


def _copy_group(source: Any, dest: Group | None, target: str, name: str, existing: Any,
                state: _Copying, shallow: bool, root: bool) -> None:
    group = None
    if not state.dry_run and dest is not None:
        attrs = {} if state.without_attrs else _attributes(source)
        if isinstance(existing, Group):  # merged into
            group = existing
            if attrs:
                group.attrs.update(attrs)
        else:  # created with its attributes: one write
            if existing is not None:
                del dest[name]
            group = dest.create_group(name, attributes=attrs)
    state.copied += 1
    if root or not shallow:
        _copy_members(source, group, target, state, shallow)


def _copy_members(source: Any, dest: Group | None, parent: str, state: _Copying,
                  shallow: bool) -> None:
    """Copy the members of the group `source` into `dest` (at `parent`), in order. From a
    zarrkit group into another, what `dest` has of them is read in one request and the members
    are copied concurrently (as many at once as the destination store wants), their log lines
    written in order all the same; with if_exists="raise", those before the first that exists
    are copied, and then that one raises, as one by one. After a member fails, no sibling
    is started: only those already being copied may finish."""
    members = _members(source, state, 0 if shallow else None)
    if dest is None or state.dry_run or not isinstance(source, Group) or len(members) < 2 \
            or dest._consolidated is not None:  # (then what exists is known without a read)
        for key, node in members:
            _copy(node, dest, parent, key, state, shallow, root=False)
        return
    found = _existing(dest, [key for key, _ in members])
    first = next((i for i, f in enumerate(found) if f is not None), len(members)) \
        if state.if_exists == "raise" else len(members)
    failed = threading.Event()  # set when a member fails: siblings not yet started are skipped

    def copied(job: tuple[tuple[str, Any], Any]) -> tuple[_Copying, BaseException | None] | None:
        if failed.is_set():
            return None
        apart, error = _copied_apart(job, dest, parent, state, shallow)
        if error is not None:
            failed.set()
        return apart, error

    done = run_io(copied, list(zip(members, found, strict=True))[:first],
                  dest.store.io_concurrency)
    # Members are started in order, so any not started come after the one that failed.
    for apart, error in filter(None, done):
        for line in apart.lines:
            state.log(line)
        state.copied, state.skipped = state.copied + apart.copied, state.skipped + apart.skipped
        state.nbytes += apart.nbytes
        if error is not None:
            raise error
    if first < len(members):  # raises NodeExistsError
        _copy(members[first][1], dest, parent, members[first][0], state, shallow, root=False,
              existing=found[first])


def _existing(dest: Group, names: list[str]) -> list[Any]:
    """The nodes `dest` has as `names` (None where it has none), read in one request."""
    paths = []
    for name in names:
        try:
            paths.append(dest._child_path(name))
        except InvalidNameError:  # no member can have it: nothing there
            paths.append(None)
    wanted = [p for p in paths if p is not None]
    found = dict(zip(wanted, formats.find_many(dest.store, wanted, dest.zarr_format),
                     strict=True))
    return [None if found.get(p) is None else
            open_node(dest.store, p, read_only=dest.read_only, zarr_format=dest.zarr_format,
                      found=found[p]) for p in paths]


def _copied_apart(job: tuple[tuple[str, Any], Any], dest: Group, parent: str, state: _Copying,
                  shallow: bool) -> tuple[_Copying, BaseException | None]:
    """`_copy` of one member with a tally and log lines of its own (and the error that ended
    it), for the caller to add up and write in order."""
    (name, node), existing = job
    apart = dataclasses.replace(state, copied=0, skipped=0, nbytes=0, lines=[])
    apart.log = apart.lines.append
    try:
        _copy(node, dest, parent, name, apart, shallow, root=False, existing=existing)
    except Exception as e:  # noqa: BLE001 - raised by the caller, after the lines before it
        return apart, e
    return apart, None


def _members(source: Any, state: _Copying, depth: int | None) -> list[tuple[str, Any]]:
    """(name, node) of the members of the group `source`; a zarrkit group's, and those of the
    groups below it down to `depth` levels, listed at once (a remote store: a round trip or
    two a level, not a few a node)."""
    if not isinstance(source, Group):
        return [(key, source[key]) for key in source.keys()]
    if (id(source.store), source.path) not in state.listed:
        state.listed.update({(id(source.store), path): members for path, members
                             in listed_below(source, depth).items()})
    return state.listed[(id(source.store), source.path)]


def _copy_array(source: Any, dest: Group | None, name: str, existing: Any,
                state: _Copying) -> None:
    state.copied += 1
    state.nbytes += int(np.prod(source.shape)) * np.dtype(source.dtype).itemsize
    if state.dry_run or dest is None:
        return
    kws = dict(state.create_kws)
    if existing is not None:  # replaced once the copy is complete: a failure keeps it
        kws["overwrite"] = True
    attrs = _across_formats(source, dest.zarr_format, kws,
                            {} if state.without_attrs else _attributes(source))
    fill = getattr(source, "fillvalue", getattr(source, "fill_value", None))  # h5py's, zarr's
    if not isinstance(source, Array) and fill is not None and "fill_value" not in kws:
        kws["fill_value"] = fill
    names = _dimension_names(source)
    if names and "dimension_names" not in kws and (dest.zarr_format == 3 or None not in names):
        kws["dimension_names"] = names  # (v2: the _ARRAY_DIMENSIONS attribute, all named)
    copied = from_array(dest.store, data=_text_view(source, kws),
                        name=storage.join(dest.path, name),
                        zarr_format=dest.zarr_format, **kws)
    if attrs:  # (nothing to add: no request)
        copied.attrs.update(attrs)


def _across_formats(source: Any, dest_format: int, kws: dict[str, Any],
                    attrs: dict[str, Any]) -> dict[str, Any]:
    """The attributes to give the copy of a zarrkit or zarr-python array in the other Zarr
    format; an xarray variable's mask moves between v2's fill value and v3's `_FillValue`
    attribute, as `convert` moves it (see `metadata.xarray_fill`), unless `fill_value` is
    given."""
    fmt = _zarr_format(source)
    if fmt is None or (fmt == 3) == (dest_format == 3) or "fill_value" in kws:
        return attrs
    names = getattr(source, "dimension_names", None) if isinstance(source, Array) \
        else getattr(source.metadata, "dimension_names", None)
    full, dtype = dict(source.attrs), np.dtype(source.dtype)
    if not xarray_fill.is_variable(fmt, full, source.ndim, names, in_group=True):
        return attrs
    if "dimension_names" not in kws and source.ndim == 0 and dest_format != 3:
        kws["dimension_names"] = ()  # xarray's 0-d variables: an empty _ARRAY_DIMENSIONS
    elif "dimension_names" not in kws and names is None and fmt != 3:  # zarr-python's v2
        kws["dimension_names"] = tuple(full[DIMENSIONS_ATTRIBUTE])
    if dest_format == 3:
        moved, fill = xarray_fill.to_v3(full, source.fill_value, dtype)
        if fill is not None:
            kws["fill_value"] = fill
    else:
        try:
            moved, fill = xarray_fill.to_v2(full, dtype)
        except ValueError:  # not xarray's encoding: copied as plain Zarr
            return attrs
        kws["fill_value"] = NULL_FILL if fill is None else fill
    return {k: v for k, v in moved.items() if k in attrs or k == xarray_fill.FILL_ATTRIBUTE} \
        if attrs else {}


def _zarr_format(source: Any) -> int | None:
    """A zarrkit or zarr-python array's Zarr format (v1 counts as v2), else None."""
    if isinstance(source, Array):
        return source.zarr_format
    md = getattr(source, "metadata", None)
    return getattr(md, "zarr_format", None) if type(source).__module__.startswith("zarr.") \
        else None


def _text_view(source: Any, kws: dict[str, Any]) -> Any:
    """An h5py dataset of variable-length strings (netCDF-4's `string` variables) read as text,
    not as the bytes h5py returns: Zarr's string type (vlen-utf8), as h5netcdf reads them."""
    if not _is_h5py(source):
        return source
    import h5py

    info = h5py.check_string_dtype(source.dtype)
    if info is None or info.length is not None:  # not text, or fixed-length bytes (`S<n>`)
        return source
    kws.setdefault("chunks", source.chunks or "keep")  # the view has no chunks of its own
    kws["fill_value"] = _text(kws.get("fill_value")) or ""
    return source.asstr()


def _attributes(node: Any) -> dict[str, Any]:
    """A node's attributes as JSON values (h5py's are numpy values), without HDF5's
    dimension-scale bookkeeping (see `_HIDDEN`)."""
    attrs = dict(getattr(node, "attrs", {}))
    if _is_h5py(node):
        hidden = _HIDDEN | ({"CLASS", "NAME"} if _text(attrs.get("CLASS")) == "DIMENSION_SCALE"
                            else set())
        attrs = {k: v for k, v in attrs.items() if k not in hidden}
        if _is_netcdf4(node):  # netCDF has no scalar attributes: length 1 is a scalar there
            attrs = {k: v[0] if isinstance(v, np.ndarray) and v.shape == (1,) else v
                     for k, v in attrs.items()}
    return {str(k): _json_value(v) for k, v in attrs.items()}


def _is_netcdf4(node: Any) -> bool:
    """Whether an h5py node is in a netCDF-4 file (netCDF-C and h5netcdf mark the root)."""
    return "_NCProperties" in node.file.attrs


#: HDF5 dimension scales' object references (which JSON cannot hold: netCDF-4 files have them
#: on every variable) and netCDF-4's internal dimension ids; the copy has dimension names
#: instead. h5netcdf hides the same attributes.
_HIDDEN = frozenset({"DIMENSION_LIST", "REFERENCE_LIST", "_Netcdf4Dimid", "_Netcdf4Coordinates"})


def _is_h5py(node: Any) -> bool:
    return type(node).__module__.startswith("h5py")


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _dimension_names(source: Any) -> list[str | None] | None:
    """An h5py dataset's dimension names, as netCDF-4 and h5netcdf see them: the name of the
    dimension scale attached to each dimension (a scale names its own), else its label."""
    if not _is_h5py(source) or not source.ndim:
        return None
    names: list[str | None] = []
    for dim in source.dims:
        scales = dim.values()
        if scales:
            names.append(scales[0].name.rpartition("/")[2])
        elif source.is_scale and source.ndim == 1:
            names.append(source.name.rpartition("/")[2])
        else:
            names.append(dim.label or None)
    return names if any(names) else None


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        return [_json_value(v) for v in value.tolist()] if value.ndim else _json_value(value[()])
    if isinstance(value, np.generic):
        return _json_value(value.item())
    return value


def _label(node: Any) -> str:
    name = getattr(node, "name", None) or "<array>"
    shape = getattr(node, "shape", None)
    return name if shape is None else f"{name} {tuple(shape)} {np.dtype(node.dtype)}"


@contextmanager
def _logger(log: Any) -> Iterator[Callable[[str], None]]:
    """`log` as a function of one line: a callable, a file object, or a file path (appended)."""
    if log is None:
        yield lambda _line: None
    elif callable(log):
        yield log
    elif hasattr(log, "write"):
        yield lambda line: log.write(line + "\n")
    elif isinstance(log, str):
        with open(log, "a", encoding="utf-8") as f:
            yield lambda line: f.write(line + "\n")
    else:
        raise SpecError(f"log must be a callable, a file object or a path; got {log!r}")


# -- copy_store -----------------------------------------------------------------------------------


def copy_store(source: Any, dest: Any, source_path: str = "", dest_path: str = "",
               excludes: Any = None, includes: Any = None, flags: int = 0,
               if_exists: str = "raise", dry_run: bool = False,
               log: Any = None) -> tuple[int, int, int]:
    """Copy the stored keys below `source_path` of the store `source` to below `dest_path` of
    `dest` (stores, paths, URLs, dicts...) without decoding anything. Keys (relative to
    `source_path`) matching a regular expression of `excludes` are left out unless one of
    `includes` matches too. "skip_initialized" is "skip" here."""
    if not isinstance(if_exists, str) or if_exists not in IF_EXISTS:
        raise SpecError(f"if_exists must be one of {', '.join(IF_EXISTS)}; got {if_exists!r}")
    src, src_root = open_kvstore(source, read_only=True)
    dst, dst_root = open_kvstore(dest)
    old = storage.prefix_of(storage.join(src_root, normalize_path(source_path, v3=False)))
    new = storage.prefix_of(storage.join(dst_root, normalize_path(dest_path, v3=False)))
    wanted = _key_filter(excludes, includes, flags)
    pairs = [(k, new + k[len(old):]) for k in sorted(src.list_prefix(old))
             if wanted(k[len(old):])]
    present = [d for (_, d), there in zip(pairs, dst.exists_many([d for _, d in pairs]),
                                          strict=True) if there]
    if present and if_exists == "raise":
        raise NodeExistsError(f"copy_store: {len(present)} keys exist already, e.g. "
                              f"{present[0]!r} (if_exists='replace' or 'skip')")
    skip = set(present) if if_exists != "replace" else set()
    with _logger(log) as write_log:
        return _copy_keys(src, dst, pairs, skip, dry_run, write_log)


def _key_filter(excludes: Any, includes: Any, flags: int) -> Callable[[str], bool]:
    def patterns(value: Any, what: str) -> list[re.Pattern[str]]:
        items = [value] if isinstance(value, str) else value or ()
        try:
            return [re.compile(p, flags) for p in items]
        except (TypeError, re.error) as e:
            raise SpecError(f"copy_store: {what} must be regular expressions (a string or a "
                            f"list of them) and flags re's flags; {value!r}: {e}") from None

    out, keep = patterns(excludes, "excludes"), patterns(includes, "includes")
    return lambda key: not any(p.search(key) for p in out) or any(p.search(key) for p in keep)


def _copy_keys(src: Any, dst: Any, pairs: list[tuple[str, str]], skip: set[str],
               dry_run: bool, log: Callable[[str], None]) -> tuple[int, int, int]:
    copied = nbytes = 0
    todo = [(s, d) for s, d in pairs if d not in skip]
    for start in range(0, len(todo), storage.MOVE_BATCH):
        batch = todo[start:start + storage.MOVE_BATCH]
        values = src.get_many([(s, None) for s, _ in batch])
        for (s, d), value in zip(batch, values, strict=True):
            log(f"copy {s} -> {d}")
            copied += value is not None
            nbytes += 0 if value is None else len(value)
        if not dry_run:
            dst.set_many([(d, v) for (_, d), v in zip(batch, values, strict=True)
                          if v is not None])
    for _, d in pairs:
        if d in skip:
            log(f"skip {d}")
    return copied, len(pairs) - len(todo), nbytes

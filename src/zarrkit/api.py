"""The public entry points: `open`, `create`, `open_group`, `group`, `array`, ..."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np

from . import formats, storage
from .array import Array
from .creation import (
    array_replacing,
    check_data_alone,
    check_existing,
    create_array_at,
    data_type_of,
    digit_fill,
    flag,
    full_like_kwargs,
    like,
    take_config,
    write_array,
)
from .errors import NodeExistsError, NodeNotFoundError, NodeTypeError, SpecError
from .group import (
    Group,
    checked_use_consolidated,
    create_group_at,
    create_hierarchy_at,
    finished_node,
    open_node,
)
from .kvstore import close_opened, discard_opened, get_kvstore_driver, open_kvstore
from .metadata.names import normalize_path

_MODES = ("r", "r+", "a", "w", "w-")


def _is_shape(value: Any) -> bool:
    """An int or a sequence of ints: a shape, never a place to store a node."""
    def is_int(v: Any) -> bool:
        return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
    return is_int(value) or (isinstance(value, (tuple, list)) and all(map(is_int, value)))


def _store_keyword(where: Any, kwargs: dict[str, Any]) -> Any:
    """`where`, or zarr-python's keyword for it, `store=` (not both)."""
    store = kwargs.pop("store", None)
    if store is None:
        return where
    if where is not None:
        raise SpecError("where the node lives is given twice: as the first argument and store=")
    return store


def _placed(where: Any, shape: Any, second: str, kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """(where, shape) from zarrkit's order `f(where, shape, ...)` or zarr-python's and numpy's
    `f(shape, <second>, store=...)`: a first argument that is a shape starts the latter, and
    the next positional argument is then `second` (the data type, or `full`'s fill value)."""
    if _is_shape(where):
        if shape is not None:
            if second in kwargs:
                raise SpecError(f"{second} is given twice: by position and as {second}=")
            kwargs[second] = shape
        where, shape = None, where
    return _store_keyword(where, kwargs), shape


def _check_mode(mode: Any) -> str:
    if not isinstance(mode, str) or mode not in _MODES:
        raise SpecError(f"mode must be one of {', '.join(_MODES)}; got {mode!r}")
    return mode


def _resolve(where: Any, path: str | None, mode: str,
             storage_options: dict[str, Any] | None = None) -> tuple[Any, str]:
    _check_mode(mode)
    rel = normalize_path("" if path is None else path)
    # Mode "w" for the node at the store's root replaces everything: a zip archive is then
    # written anew (not copied and then emptied key by key); inside, siblings must stay.
    whole = mode == "w" and not rel
    store, base = open_kvstore(where if where is not None else "memory://",
                               read_only=mode == "r", mode="w" if whole else None,
                               storage_options=storage_options)
    full = storage.join(base, rel) if rel else base
    return store, normalize_path(full)


_T = TypeVar("_T")


def _or_discard(store: Any, where: Any, make: Callable[[], _T]) -> _T:
    """`make()`, the node to hand out; if it fails, a zip archive opened here from `where` is
    given up at once (its changes dropped, the archive left as it was). Left to the collector,
    a failed open in mode "w" (a new archive from the start) kept its temp archive and its
    single-writer guard, locking out every writer, as long as the exception lived."""
    try:
        return make()
    except BaseException:
        discard_opened(store, where)
        raise


def open(where: Any = None, mode: str = "a", *, path: str | None = None,
         **kwargs: Any) -> Array | Group:
    """Open (or, by mode, create) the array or group at `where`.

    `where` is a path, a URL (`file://`, `memory://`, `...zip`, `s3://`, `gs://`, `az://`,
    `https://`; `storage_options=` configures the remote ones), a store, or a TensorStore-style
    spec (a `Spec` or its JSON, `{"driver": "zarr3", "kvstore": ..., "metadata": ...}`, or
    `"zarr"` for v2), opened with TensorStore's keywords and semantics: `open`, `create`,
    `delete_existing`, `assume_metadata`, `assume_cached_metadata`, `dtype`, `shape`, `domain`,
    `rank`, `chunk_layout`, `codec`, `fill_value`, `dimension_units`, `schema`, `context`,
    `recheck_cached_data`, `recheck_cached_metadata`, `transaction` (a `zarrkit.Transaction`:
    the array is opened, or created, bound to it) (plus `read_only`, `write=False`); a spec
    with a transform opens as a `View`, and `{"driver": "cast", "dtype": ..., "base": spec}` as
    `zarrkit.cast` of its base (the keywords go to the base). Modes: "r" read only; "r+"
    read/write, must exist; "a" read/write, created if missing; "w" create, replacing what
    exists; "w-" create, fail if anything exists. Creating with `shape=` makes an array, otherwise a group. Opening an existing
    array in mode "a" or "r+", `write_empty_chunks=` configures the handle, and creation
    keywords (`shape`, `dtype`, `chunks`, `fill_value`, codecs, ...) must agree with the stored
    array (SpecError naming the keyword); `attributes=` is used only when creating. `overwrite=`
    may only agree with the mode (True with "w", False otherwise); a contradiction is a
    SpecError.

    The format (v3 `zarr.json`, v2 `.zarray`/`.zgroup`, v1 `meta`) is detected; `zarr_format=`
    requires one, and is the format created (default 3); a node of another format is refused
    by name (NodeNotFoundError in modes "r"/"r+", NodeExistsError in "a"/"w-"). Consolidated metadata is used when
    present unless `use_consolidated=False`.
    """
    where = _store_keyword(where, kwargs)
    _check_mode(mode)
    if _is_tensorstore_spec(where):
        from .spec.open import open_spec  # the glue module imports the node modules

        if mode == "r":
            kwargs.setdefault("read_only", True)
        elif mode in ("w", "w-"):  # the modes' documented meaning, in TensorStore's terms
            kwargs.setdefault("create", True)
            if mode == "w":
                kwargs.setdefault("delete_existing", True)
        return open_spec(where, **kwargs)
    zarr_format = formats.check_format(kwargs.pop("zarr_format", None))
    use_consolidated = kwargs.pop("use_consolidated", None)
    store, full = _resolve(where, path, mode, kwargs.pop("storage_options", None))
    return _or_discard(store, where, lambda: _open_resolved(store, full, mode, zarr_format,
                                                            use_consolidated, kwargs))


def _is_tensorstore_spec(where: Any) -> bool:
    """A TensorStore-style spec (a `Spec`, or JSON whose driver is "zarr3", "cast", ...), not
    where a node lives: a kvstore spec ({"driver": "file", ...}) is a store, as for
    `open_group`."""
    if type(where).__name__ in ("Spec", "CastSpec"):  # (spec/ imports this module)
        return True
    if not isinstance(where, dict) or "driver" not in where:
        return False
    driver = where["driver"]
    try:
        get_kvstore_driver(driver)
    except (SpecError, TypeError):  # not a kvstore driver's name (TypeError: unhashable)
        return True
    return False


def _open_resolved(store: Any, full: str, mode: str, zarr_format: int | None,
                   use_consolidated: bool | None, kwargs: dict[str, Any]) -> Array | Group:
    _check_overwrite(mode, kwargs.pop("overwrite", None))
    found = _find(store, full, mode, zarr_format, use_consolidated)
    exists = found is not None
    if mode in ("r", "r+") or (mode == "a" and exists):
        if mode == "r" and kwargs:
            raise SpecError(f"mode 'r' opens an existing node read only; unexpected arguments "
                            f"{', '.join(sorted(kwargs))}")
        return _open_existing(store, full, mode, found, zarr_format, kwargs)
    if mode == "w-" and exists:
        raise NodeExistsError(f"a node already exists at {full or '/'!r} (mode 'w-')")
    if "shape" in kwargs:
        return create_array_at(store, full, overwrite=mode == "w",
                               zarr_format=zarr_format or 3, **kwargs)
    attributes = kwargs.pop("attributes", None)
    if kwargs:
        raise SpecError(f"creating a group at {full or '/'!r} (no shape= given); unexpected "
                        f"arguments {', '.join(sorted(kwargs))}")
    return create_group_at(store, full, attributes=attributes, overwrite=mode == "w",
                           zarr_format=zarr_format or 3)


def _check_overwrite(mode: str, overwrite: Any) -> None:
    """`overwrite=` may only repeat what the mode says: only mode 'w' replaces a node. A
    contradiction is refused rather than one of the two silently winning."""
    if overwrite is None:
        return
    if not isinstance(overwrite, (bool, np.bool_)):
        raise SpecError(f"overwrite must be True or False; got {overwrite!r}")
    if bool(overwrite) == (mode == "w"):
        return
    hint = ("mode 'w' always replaces; give mode 'a' or 'w-' to keep an existing node"
            if mode == "w" else "open replaces a node only in mode 'w'; give mode='w'")
    raise SpecError(f"overwrite={bool(overwrite)} contradicts mode={mode!r}: {hint}, or omit "
                    "overwrite")


def _find(store: Any, path: str, mode: str, zarr_format: int | None,
          use_consolidated: bool | None) -> formats.Found | None:
    """The node to open (None: none, or mode 'w'); a node of another format than `zarr_format`
    is refused by name: neither "not found" nor a hierarchy mixing formats is what was meant."""
    use_consolidated = checked_use_consolidated(use_consolidated)
    if mode == "w":
        return None
    found = formats.find(store, path, zarr_format, use_consolidated)
    other = None if found is not None else formats.other_format(store, path, zarr_format)
    if other is None:
        return found
    message = (f"no Zarr v{zarr_format} node at {path or '/'!r}: a Zarr v{other} node is there "
               f"(zarr_format={zarr_format} was asked for); give zarr_format={other} (or none) to "
               "open it")
    if mode in ("r", "r+"):
        raise NodeNotFoundError(message)
    raise NodeExistsError(f"{message}, or mode='w' to replace it")


def _open_existing(store: Any, path: str, mode: str, found: formats.Found | None,
                   zarr_format: int | None, kwargs: dict[str, Any]) -> Array | Group:
    """Modes 'r', 'r+' and 'a' on an existing node: `write_empty_chunks` configures an array's
    handle (so does zarr-python's `config`); creation keywords must agree with the stored
    array (see `check_existing`)."""
    handle_options = [k for k in ("config", "write_empty_chunks") if kwargs.get(k) is not None]
    write_empty_chunks = take_config(kwargs, kwargs.pop("write_empty_chunks", None))
    node = open_node(store, path, read_only=mode == "r", zarr_format=zarr_format, found=found,
                     write_empty_chunks=bool(write_empty_chunks))
    if isinstance(node, Group):
        kwargs.pop("attributes", None)  # initial values, used only on creation
        given = sorted(kwargs) + handle_options
        if given:
            raise NodeTypeError(f"{node.name} is a group; {', '.join(given)} apply to arrays")
        return node
    assert found is not None  # open_node raised NodeNotFoundError otherwise
    check_existing(found.metadata, path, kwargs)
    return node


def open_array(where: Any = None, mode: str = "a", *, path: str | None = None,
               **kwargs: Any) -> Array:
    if _check_mode(mode) == "a" and kwargs.get("shape") is None:
        # Nothing to create an array from: open an existing one only (as "r+"), since `open`
        # would create a group where none is, and leave it behind when refused below.
        mode = "r+"
    where = _store_keyword(where, kwargs)
    if mode in ("w", "w-") and kwargs.get("shape") is None and not _is_tensorstore_spec(where):
        # `open` would create a group there (in mode "w" replacing what is there), only for
        # it to be refused below
        raise SpecError(f"open_array in mode {mode!r} creates an array: give its shape=")
    node = open(where, mode, path=path, **kwargs)
    if not isinstance(node, Array):
        raise NodeTypeError(f"{node.name} is a group, not an array")
    return node


def open_group(where: Any = None, mode: str = "a", *, store: Any = None,
               path: str | None = None, attributes: dict[str, Any] | None = None,
               zarr_format: int | None = None, use_consolidated: bool | None = None,
               storage_options: dict[str, Any] | None = None) -> Group:
    formats.check_format(zarr_format)
    where = _store_keyword(where, {"store": store})
    store, full = _resolve(where, path, mode, storage_options)
    return _or_discard(store, where, lambda: _open_group_resolved(
        store, full, mode, attributes, zarr_format, use_consolidated))


def _open_group_resolved(store: Any, full: str, mode: str, attributes: dict[str, Any] | None,
                         zarr_format: int | None, use_consolidated: bool | None) -> Group:
    found = _find(store, full, mode, zarr_format, use_consolidated)
    exists = found is not None
    if mode in ("r", "r+") or (mode == "a" and exists):
        node = open_node(store, full, read_only=mode == "r", zarr_format=zarr_format,
                         found=found)
        if not isinstance(node, Group):
            raise NodeTypeError(f"{node.name} is an array, not a group")
        return node
    if mode == "w-" and exists:
        raise NodeExistsError(f"a node already exists at {full or '/'!r} (mode 'w-')")
    return create_group_at(store, full, attributes=attributes, overwrite=mode == "w",
                           zarr_format=zarr_format or 3)


def group(where: Any = None, *, store: Any = None, path: str | None = None,
          overwrite: bool = False, attributes: dict[str, Any] | None = None,
          zarr_format: int | None = None, storage_options: dict[str, Any] | None = None) -> Group:
    """Create a group (or open an existing one unless `overwrite`)."""
    mode = "w" if flag(overwrite, "overwrite") else "a"
    return open_group(where, mode, store=store, path=path, attributes=attributes,
                      zarr_format=zarr_format, storage_options=storage_options)


def create(where: Any = None, shape: Any = None, dtype: Any = None, *,
           path: str | None = None, overwrite: bool = False, **kwargs: Any) -> Array:
    """Create an array: `create(where, shape, dtype)`, or in zarr-python's and numpy's order
    `create(shape, dtype, store=where)` (so `zeros((4, 4))`, `full((3,), 7)`); the data type
    defaults to float64.

    Keywords: `chunks`, `shards`, `codecs` (a complete v3 codec list) or `filters`/`serializer`/
    `compressors`, `fill_value`, `dimension_names`, `attributes`, `chunk_key_encoding`,
    `index_codecs`, `index_location`, `write_empty_chunks`, `overwrite`.
    """
    if dtype is not None:
        kwargs["dtype"] = dtype
    where, shape = _placed(where, shape, "dtype", kwargs)
    dtype = kwargs.pop("dtype", None)
    dtype = "float64" if dtype is None else dtype
    if shape is None:
        raise SpecError("create needs a shape")
    store, full = _resolve(where, path, "w" if flag(overwrite, "overwrite") else "a",
                           kwargs.pop("storage_options", None))
    return _or_discard(store, where, lambda: create_array_at(store, full, shape, dtype,
                                                             overwrite=overwrite, **kwargs))


def array(data: Any, where: Any = None, **kwargs: Any) -> Array:
    """Create an array holding `data` (object values that are all bytes: variable-length
    bytes). If `data` cannot be written, the new array is removed again; with `overwrite`, a
    node there stays until the new one is complete (see `storage.replace_node`)."""
    where = like_where(_store_keyword(where, kwargs), "array")
    data = np.asarray(data)
    _same_shape(data, kwargs.pop("shape", None))
    dtype = kwargs.pop("dtype", None)
    dtype = data_type_of(data) if dtype is None else dtype
    if flag(kwargs.get("overwrite", False), "overwrite"):
        replaced = _array_replacing(data, where, dtype, kwargs)
        if replaced is not None:
            return replaced
    a = create(where, data.shape, dtype, **kwargs)
    try:
        a[...] = data
    except BaseException:
        if not discard_opened(a.store, where):  # an archive opened here is left as it was
            storage.delete_node(a.store, a.path)
        raise
    return a


def _same_shape(data: np.ndarray, shape: Any) -> None:
    """`array(data, shape=...)` may only repeat the shape of `data`."""
    if shape is None:
        return
    given = (shape,) if isinstance(shape, int | np.integer) else shape
    try:
        same = tuple(given) == data.shape
    except TypeError:
        same = False
    if not same:
        raise SpecError(f"shape={shape!r} contradicts the shape {data.shape} of the data; "
                        "omit shape")


def _array_replacing(data: np.ndarray, where: Any, dtype: Any,
                     kwargs: dict[str, Any]) -> Array | None:
    """`array(..., overwrite=True)` written beside the node it replaces (see `replacing`)."""
    return replacing(where, kwargs, lambda store, full, rest: array_replacing(
        store, full, data, dtype, rest))


def replacing(where: Any, kwargs: dict[str, Any],
              make: Callable[[Any, str, dict[str, Any]], Array]) -> Array | None:
    """`make(store, full path, creation keywords)` for a one-call replacement of the node at
    `where` (and `path=`, `storage_options=` of `kwargs`), which writes it beside the old one
    and moves it in once complete, so that a failure keeps the old node. None, with nothing
    done, for a zip archive opened here: written anew and given up whole on failure, the
    usual way serves it."""
    store, full = _resolve(where, kwargs.get("path"), "a", kwargs.get("storage_options"))
    if discard_opened(store, where):  # opened here only to learn it is a zip archive
        return None
    rest = {k: v for k, v in kwargs.items() if k not in ("overwrite", "path", "storage_options")}
    return make(store, full, rest)


def full(where: Any = None, shape: Any = None, fill_value: Any = None, **kwargs: Any) -> Array:
    """`full(where, shape, fill_value)` or `full(shape, fill_value, store=where)`; fill 0 if
    none is given."""
    if fill_value is not None:
        kwargs["fill_value"] = fill_value
    where, shape = _placed(where, shape, "fill_value", kwargs)
    kwargs.setdefault("fill_value", 0)
    return create(where, shape, **kwargs)


def zeros(where: Any = None, shape: Any = None, **kwargs: Any) -> Array:
    """`zeros(where, shape)` or `zeros(shape, dtype, store=where)`, as `create`."""
    return _digit_filled(0, where, shape, kwargs)


def ones(where: Any = None, shape: Any = None, **kwargs: Any) -> Array:
    return _digit_filled(1, where, shape, kwargs)


def _digit_filled(digit: int, where: Any, shape: Any, kwargs: dict[str, Any]) -> Array:
    if "fill_value" in kwargs:
        raise SpecError(f"fill_value={kwargs['fill_value']!r}: this function fills with "
                        f"{digit}; use full() for another fill value")
    where, shape = _placed(where, shape, "dtype", kwargs)
    return create(where, shape, fill_value=digit_fill(digit, kwargs.get("dtype", "float64")),
                  **kwargs)


def empty(where: Any = None, shape: Any = None, **kwargs: Any) -> Array:
    where, shape = _placed(where, shape, "dtype", kwargs)
    return create(where, shape, **kwargs)


def like_where(where: Any, name: str) -> Any:
    """`where` of a `*_like` function: a shape there (as `zeros` takes one) is refused, since
    the shape comes from the data (or `shape=`)."""
    if _is_shape(where):
        raise SpecError(f"{name}(a, where): where must be a store or path, got {where!r}; "
                        "the shape comes from `a` (or give shape=)")
    return where


def zeros_like(a: Any, where: Any = None, **kwargs: Any) -> Array:
    """`zeros` with the shape, data type and chunks of `a` unless given."""
    return zeros(like_where(where, "zeros_like"), **like(a, kwargs))


def ones_like(a: Any, where: Any = None, **kwargs: Any) -> Array:
    return ones(like_where(where, "ones_like"), **like(a, kwargs))


def full_like(a: Any, where: Any = None, **kwargs: Any) -> Array:
    """`full` like `a`; the fill value defaults to that of `a` if it is a zarrkit Array."""
    return full(like_where(where, "full_like"), **full_like_kwargs(a, kwargs))


def empty_like(a: Any, where: Any = None, **kwargs: Any) -> Array:
    """`empty` like `a`, with its fill value too if it is a zarrkit Array."""
    return empty(like_where(where, "empty_like"), **like(a, kwargs, fill=True))


def create_group(where: Any = None, *, store: Any = None, path: str | None = None,
                 overwrite: bool = False, attributes: dict[str, Any] | None = None,
                 zarr_format: int | None = None,
                 storage_options: dict[str, Any] | None = None) -> Group:
    """A new group; NodeExistsError if a node is there, unless `overwrite` (unlike `group`,
    which opens it)."""
    mode = "w" if flag(overwrite, "overwrite") else "w-"
    return open_group(where, mode, store=store, path=path, attributes=attributes,
                      zarr_format=zarr_format, storage_options=storage_options)


def create_array(where: Any = None, *, name: str | None = None, shape: Any = None,
                 dtype: Any = None, data: Any = None, **kwargs: Any) -> Array:
    """A new array at `name` below `where` (as `path=` elsewhere); NodeExistsError if a node
    is there, unless `overwrite=True`. `data` gives the shape, data type and values at once,
    so it excludes `shape` and `dtype`. Other keywords as for `create`."""
    where = _store_keyword(where, kwargs)
    if data is not None:
        check_data_alone(shape, dtype)
        return array(data, where, path=name, **kwargs)
    if shape is None or dtype is None:
        raise SpecError("create_array needs shape= and dtype= (or data=)")
    return create(where, shape, dtype, path=name, **kwargs)


def create_hierarchy(where: Any = None, nodes: Mapping[str, Any] | None = None, *,
                     store: Any = None, path: str | None = None, overwrite: bool = False,
                     storage_options: dict[str, Any] | None = None) -> dict[str, Array | Group]:
    """Create a hierarchy from its nodes' metadata by path (zarr-python's `create_hierarchy`):
    each a metadata document (`zarr.json`, or v2's `.zarray`/`.zgroup` with `attributes`), a
    zarrkit node or zarr-python's metadata object; the groups they imply are added. All is
    checked before anything is written; nodes given where nodes exist are refused unless
    `overwrite`, while existing groups where groups are implied are kept. Returns every node
    of the hierarchy, opened, by path."""
    where = _store_keyword(where, {"store": store})
    if nodes is not None and not isinstance(nodes, Mapping):
        raise SpecError(f"create_hierarchy: nodes must be a dict of metadata by path; got "
                        f"{nodes!r}")
    kvstore, root = _resolve(where, path, "a", storage_options)
    return _or_discard(kvstore, where, lambda: create_hierarchy_at(kvstore, root, nodes or {},
                                                                   overwrite))


def open_consolidated(where: Any = None, mode: str = "r", **kwargs: Any) -> Group:
    """`open_group` requiring consolidated metadata (MetadataError if the group has none), so
    members are never listed from the store. Opens existing groups only: mode "a" acts as
    "r+", and "w"/"w-" are refused, since a group created now would have none."""
    if checked_use_consolidated(kwargs.pop("use_consolidated", True)) is not True:
        raise SpecError("open_consolidated always uses consolidated metadata; call open_group "
                        "with use_consolidated=False to do without")
    if _check_mode(mode) in ("w", "w-"):
        raise SpecError(f"open_consolidated opens an existing group; mode {mode!r} would create "
                        "one without consolidated metadata")
    return open_group(where, "r+" if mode == "a" else mode, use_consolidated=True, **kwargs)


def tree(group: Group, level: int | None = None) -> str:
    """`group.tree(level)`, as zarr-python's function."""
    if not isinstance(group, Group):
        raise NodeTypeError(f"tree shows a group's hierarchy; got {type(group).__name__}")
    return group.tree(level)


def load(where: Any = None, path: str | None = None, *, store: Any = None,
         zarr_format: int | None = None) -> np.ndarray | dict[str, np.ndarray]:
    """The values of the array at `where`; of a group, a dict of its arrays' values by name
    (as zarr-python 2 and numpy's `load` of an .npz archive; members that are groups are left
    out). `zarr_format=` requires the node's format, as in `open`."""
    where = _store_keyword(where, {"store": store})
    node = open(where, "r", path=path, zarr_format=zarr_format)
    try:
        if isinstance(node, Array):
            return node[...]
        return {name: a[...] for name, a in node.arrays()}
    finally:
        close_opened(node.store, where)  # a zip archive's descriptor


def save(where: Any = None, *args: Any, **kwargs: Any) -> Array | Group:
    """zarr-python's `save`: one array given by position is `save_array(where, data,
    **kwargs)`, the keywords being creation keywords; otherwise, or when a keyword is an
    array (`save(where, a, b=b)`, as zarr-python's), `save_group(where, *args, **kwargs)`,
    the keywords being arrays by name."""
    if len(args) == 1 and not any(map(_is_array, kwargs.values())):
        return save_array(where, args[0], **kwargs)
    if not args and hasattr(where, "shape") and hasattr(where, "dtype"):
        raise SpecError("save(where, data): where the data goes comes first; got an array")
    return save_group(where, *args, **kwargs)


def _is_array(value: Any) -> bool:
    """An array to save (not a numpy scalar or data type given as a creation keyword)."""
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(
        value, np.generic | np.dtype)


def save_array(where: Any = None, data: Any = None, **kwargs: Any) -> Array:
    """`array(data, where, overwrite=True)`; a store opened here from a path is closed when done
    (finishing a zip archive) and the array returned is then opened again read-only."""
    where = _store_keyword(where, kwargs)
    if data is None:
        raise SpecError("save_array needs the data to save")
    if not flag(kwargs.pop("overwrite", True), "overwrite"):
        raise SpecError("save always replaces the node there: overwrite must be True if given")
    node = finished_node(array(data, where, overwrite=True, **kwargs), where,
                         storage_options=kwargs.get("storage_options"))
    assert isinstance(node, Array)
    return node


#: Keywords of `save_group` that are options, not arrays to save.
_GROUP_OPTIONS = ("path", "zarr_format", "storage_options", "store")


def save_group(where: Any = None, *args: Any, **kwargs: Any) -> Group:
    """A new group at `where` (in place of what is there, which is kept if writing fails)
    holding the arrays given: by position as "arr_0", "arr_1", ..., by keyword under their names
    (zarr-python's and numpy's `savez`). Keywords `path`, `zarr_format`, `storage_options` and
    `store` are options."""
    options = {k: kwargs.pop(k) for k in _GROUP_OPTIONS if k in kwargs}
    where = _store_keyword(where, options)
    members = {f"arr_{i}": a for i, a in enumerate(args)} | kwargs
    if not members:
        raise SpecError("nothing to save: give at least one array")
    for name, value in members.items():
        if not (hasattr(value, "shape") and hasattr(value, "dtype")):
            raise SpecError(f"save_group saves arrays; {name} is a {type(value).__name__} "
                            f"{value!r:.60} (give numpy arrays, or creation keywords to "
                            "save_array)")
        normalize_path(name)  # a valid member name
    fmt = formats.check_format(options.get("zarr_format")) or 3
    storage_options = options.get("storage_options")
    store, full = _resolve(where, options.get("path"), "a", storage_options)
    if discard_opened(store, where):  # a zip archive: written anew, given up whole on failure
        store, full = _resolve(where, options.get("path"), "w", storage_options)
    _or_discard(store, where, lambda: storage.replace_node(
        store, full, fmt, lambda at: _write_group(store, at, members, fmt)))
    node = finished_node(open_node(store, full, zarr_format=fmt), where,
                         storage_options=storage_options)
    assert isinstance(node, Group)
    return node


def _write_group(store: Any, path: str, members: dict[str, Any], fmt: int) -> None:
    """A new group at `path` (its parents are not made) holding `members`."""
    storage.write_metadata(store, path, formats.new_group(fmt))
    made = {path}
    for name in members:
        parts = normalize_path(name).split("/")
        for i in range(len(parts)):
            group_path = storage.join(path, "/".join(parts[:i])) if i else path
            if group_path not in made:
                made.add(group_path)
                storage.write_metadata(store, group_path, formats.new_group(fmt))
    for name, value in members.items():
        data = np.asarray(value)
        write_array(store, storage.join(path, normalize_path(name)), data, data_type_of(data),
                    {"zarr_format": fmt})


def open_like(a: Any, where: Any = None, **kwargs: Any) -> Array:
    """`open_array` (mode "a" unless `mode=`) with the shape, data type, chunks and fill value
    of `a` (a zarrkit Array, or any array) unless given: created like `a` if missing, while an
    existing array must agree with them, as with `open`. Mode "r" opens the array as it is."""
    where = _store_keyword(where, kwargs)
    if where is None:
        raise SpecError("open_like needs where the array lives: open_like(a, where) or "
                        "store=")
    mode = kwargs.pop("mode", "a")
    return open_array(where, mode, **(kwargs if mode == "r" else like(a, kwargs, fill=True)))


__all__ = ["open", "open_array", "open_group", "open_consolidated", "group", "create_group",
           "create", "create_array", "array", "full", "zeros", "ones", "empty", "full_like",
           "zeros_like", "ones_like", "empty_like", "tree", "load", "save", "save_array",
           "save_group", "open_like", "create_hierarchy", "NodeNotFoundError"]

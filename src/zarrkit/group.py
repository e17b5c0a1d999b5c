"""`Group`: a Zarr group node, a mapping of child names to arrays and groups."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from . import formats, hierarchy, storage
from .array import Array
from .attributes import Attributes
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
    parse_shape,
)
from .engine.executor import run_io
from .errors import (
    InvalidKeyError,
    InvalidNameError,
    NodeExistsError,
    NodeNotFoundError,
    NodeTypeError,
    ReadOnlyError,
    SpecError,
)
from .info import GroupInfo
from .kvstore import finish_opened, open_kvstore
from .kvstore.base import KvStore
from .metadata.consolidated import CONSOLIDATED_KEY, ConsolidatedView
from .metadata.data_type import DataType
from .metadata.names import normalize_path, validate_node_name
from .metadata.v3 import GroupMetadataV3
from .node import Node


class Group(Node, Mapping[str, Any]):
    def __init__(self, store: KvStore, path: str = "", metadata: GroupMetadataV3 | None = None,
                 *, read_only: bool = False) -> None:
        if self.set_up_already(store, metadata):  # zarr-python's Group(async_group)
            return
        self.store = store
        self.path = path
        self._metadata = metadata
        self.read_only = read_only or store.read_only
        #: The members' metadata from consolidated metadata, if the group was opened with it;
        #: dropped once this object changes the membership (it would be stale).
        self._consolidated: ConsolidatedView | None = None

    # -- zarr-python's constructors -------------------------------------------------------------
    @classmethod
    def open(cls, store: Any, *, zarr_format: int | None = None,
             use_consolidated: bool | None = None) -> Group:
        """The existing group at `store` (a path, URL, spec or store object)."""
        kvstore, path = open_kvstore(store)
        node = open_node(kvstore, normalize_path(path), zarr_format=formats.check_format(
            zarr_format), use_consolidated=checked_use_consolidated(use_consolidated))
        if not isinstance(node, Group):
            raise NodeTypeError(f"{node.name} is an array, not a group")
        return node

    @classmethod
    def from_store(cls, store: Any, *, attributes: dict[str, Any] | None = None,
                   zarr_format: int = 3, overwrite: bool = False) -> Group:
        """A new group at `store` (NodeExistsError if a node is there, unless `overwrite`)."""
        kvstore, path = open_kvstore(store)
        return create_group_at(kvstore, path, attributes=attributes, overwrite=overwrite,
                               zarr_format=formats.check_format(zarr_format) or 3)

    # -- description -----------------------------------------------------------------------------




    @property
    def attrs(self) -> Attributes:
        return Attributes(lambda: self._metadata.attributes, self._update_attributes)

    def _update_attributes(self, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        self._check_writable()
        with self.store.lock(storage.metadata_key(self.path)):
            current = storage.read_node(self.store, self.path, self.zarr_format)
            if formats.is_array(current):  # replaced since opened: writing would turn it back
                raise NodeTypeError(f"{self.name} is now an array, not the group this handle "
                                    "opened; open it again")
            attrs = dict(current.attributes)
            change(attrs)
            updated = dataclasses.replace(current, attributes=attrs)
            storage.write_attributes(self.store, self.path, updated)
        self._metadata = updated
        return attrs

    @property
    def _async_group(self) -> Any:
        """zarr-python's asynchronous handle on this group (`zarrkit.AsyncGroup`; the same one
        while it lives)."""
        from .asynchronous import async_node  # the async layer wraps the nodes

        return async_node(self)

    def update_attributes(self, new_attributes: dict[str, Any]) -> Group:
        """`attrs.update(new_attributes)` (zarr-python's name), returning the group to chain."""
        self.attrs.update(new_attributes)
        return self

    def __repr__(self) -> str:
        return f"<zarrkit.Group {self.name}>"

    def _repr_html_(self) -> str:
        """The member tree (three levels deep) for notebooks."""
        from .describe import group_html  # describe imports this module

        return group_html(self)

    # -- children --------------------------------------------------------------------------------
    def _relative(self, name: str) -> str:
        """`name` as a path below this group ("" and "/" name no member). v2 reserves no names:
        members zarr-python wrote as "__x" or "..." open (creating still checks v3's rules)."""
        rel = normalize_path(name, v3=self.zarr_format == 3)
        if not rel:
            raise InvalidNameError(f"{name!r} names group {self.name} itself, not a member")
        return rel

    def _child_path(self, name: str) -> str:
        return storage.join(self.path, self._relative(name))

    def __getitem__(self, name: str) -> Array | Group:
        path = self._child_path(name)
        try:
            return open_node(self.store, path, read_only=self.read_only,
                             zarr_format=self.zarr_format, found=self._recorded(name))
        except NodeNotFoundError:
            raise NodeNotFoundError(f"group {self.name} has no member {name!r}") from None

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            path = self._child_path(name)
        except InvalidNameError:  # an invalid name is simply not a member
            return False
        if self._consolidated is not None:
            return self._relative(name) in self._consolidated
        # Store failures propagate: an unreachable store must not look like a missing member.
        try:
            return storage.node_exists(self.store, path, self.zarr_format)
        except InvalidKeyError:  # a name no store key can hold (a backslash, NUL)
            return False

    def _recorded(self, name: str) -> formats.Found | None:
        """A member's metadata from consolidated metadata (NodeNotFoundError if not listed)."""
        if self._consolidated is None:
            return None
        entry = self._consolidated.node(self._relative(name))
        if entry is None:
            raise NodeNotFoundError(f"consolidated metadata lists no member {name!r}")
        return formats.Found(*entry)

    def keys(self) -> list[str]:  # type: ignore[override]
        if self._consolidated is not None:
            return [c for c in self._consolidated.children() if self._is_name(c)]
        names = self._listed_names()
        there = formats.present_many(self.store, [storage.join(self.path, d) for d in names],
                                     self.zarr_format)  # remote: all in one round trip
        return [d for d, t in zip(names, there, strict=True) if t]

    def _listed_names(self) -> list[str]:
        """The names of the store's sub-prefixes of this group that can name a member."""
        _, dirs = self.store.list_dir(storage.prefix_of(self.path))
        return [d for d in dirs if self._is_name(d)]

    def _is_name(self, name: str) -> bool:
        """Whether `name` can name a member (what `keys()` lists must open): in a v3 group,
        "__x" cannot, the prefix being reserved for extensions' files; a replacement being
        written beside a member, or the member it replaces moved aside (`storage.is_transient`),
        is none."""
        if storage.is_transient(name):
            return False
        try:
            validate_node_name(name, v3=self.zarr_format == 3)
        except InvalidNameError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def members(self, max_depth: int | None = 0, *,
                use_consolidated_for_children: bool = True) -> list[tuple[str, Array | Group]]:
        """(path relative to this group, node) of the children and, as zarr-python, of the
        descendants up to `max_depth` levels below them (None: all), each group followed by
        its own. Read from consolidated metadata, when the group was opened with it; groups
        read from the store use their own unless `use_consolidated_for_children=False`."""
        listed = listed_below(self, _checked_depth(max_depth), use_consolidated_for_children)
        return _flattened(self.path, listed)

    def nmembers(self, max_depth: int | None = 0) -> int:
        """How many nodes `members(max_depth)` lists."""
        return len(self.members(max_depth))

    def arrays(self) -> list[tuple[str, Array]]:
        return [(k, v) for k, v in self.members() if isinstance(v, Array)]

    def groups(self) -> list[tuple[str, Group]]:
        return [(k, v) for k, v in self.members() if isinstance(v, Group)]

    def array_keys(self) -> list[str]:
        return [k for k, _ in self.arrays()]

    def group_keys(self) -> list[str]:
        return [k for k, _ in self.groups()]

    def array_values(self) -> Iterator[Array]:
        return (v for _, v in self.arrays())

    def group_values(self) -> Iterator[Group]:
        return (v for _, v in self.groups())

    # -- creating children -----------------------------------------------------------------------
    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(f"group {self.name} is read-only")

    def create_group(self, name: str, *, attributes: dict[str, Any] | None = None,
                     overwrite: bool = False) -> Group:
        self._check_writable()
        path = self._child_path(name)
        _validate_names(name)
        self._consolidated = None
        return create_group_at(self.store, path, attributes=attributes, overwrite=overwrite,
                               zarr_format=self.zarr_format)

    def require_group(self, name: str) -> Group:
        """The group member `name`, created if missing."""
        node, _ = self._require(name, self.create_group, {})
        if not isinstance(node, Group):
            raise NodeTypeError(f"{node.name} is an array, not a group")
        return node

    def require_groups(self, *names: str) -> tuple[Group, ...]:
        """`require_group` of each name, in order."""
        return tuple(self.require_group(name) for name in names)

    def require_array(self, name: str, *, exact: bool = False, **kwargs: Any) -> Array:
        """The array member `name`, created if missing (keyword arguments as for
        `create_array`); an existing one must match the keywords given (SpecError if not),
        except that without `exact` its data type need only cast safely to `dtype` (as in
        zarr-python and h5py). `data` and `attributes` are used only when creating."""
        node, created = self._require_array(name, self.create_array, kwargs)
        if not created:
            rest = {k: v for k, v in kwargs.items()
                    if k not in ("zarr_format", "write_empty_chunks", "config", "data")}
            if not exact:
                _check_castable(node, rest.pop("dtype", None))
            check_existing(node._metadata, node.path, rest)
        return node

    def require_dataset(self, name: str, shape: Any = None, dtype: Any = None, *,
                        exact: bool = False, **kwargs: Any) -> Array:
        """h5py's and zarr-python 2's `require_array`: an existing array must have `shape` and
        `dtype` (exactly with `exact`, else a data type that casts safely to it); the other
        keywords are used only when creating, as `create_dataset` takes them."""
        given = {k: v for k, v in (("shape", shape), ("dtype", dtype)) if v is not None}
        node, created = self._require_array(name, self.create_dataset, kwargs | given)
        if not created:
            check_existing(node._metadata, node.path, given if exact else {"shape": shape})
            if not exact:
                _check_castable(node, dtype)
        return node

    def _require_array(self, name: str, create: Callable[..., Any],
                       kwargs: dict[str, Any]) -> tuple[Array, bool]:
        node, created = self._require(name, create, kwargs)
        if not isinstance(node, Array):
            raise NodeTypeError(f"{node.name} is a group, not an array")
        return node, created

    def _require(self, name: str, create: Callable[..., Any],
                 kwargs: dict[str, Any]) -> tuple[Any, bool]:
        """(the member `name`, whether it was created now)."""
        if name not in self:
            try:
                return create(name, **kwargs), True
            except NodeExistsError:  # created meanwhile, or missing from stale consolidated
                pass  # metadata (creating dropped it: the member is read from the store now)
        return self[name], False

    def create_array(self, name: str, *, data: Any = None, **kwargs: Any) -> Array:
        """Create an array member; keyword arguments as for `zarrkit.create`. `data` gives the
        shape, data type and values at once (so it excludes `shape` and `dtype`)."""
        if data is not None:
            check_data_alone(kwargs.pop("shape", None), kwargs.pop("dtype", None))
            return self._create_filled(name, data, kwargs)
        self._check_writable()
        _validate_names(name)
        self._consolidated = None
        kwargs.setdefault("zarr_format", self.zarr_format)
        return create_array_at(self.store, self._child_path(name), **kwargs)

    def create_dataset(self, name: str, shape: Any = None, dtype: Any = None, *,
                       data: Any = None, **kwargs: Any) -> Array:
        """h5py's and zarr-python 2's name for `create_array`, which also takes `data` with a
        `shape` (it must be the data's) or `dtype` (the data is cast to it)."""
        if data is None:
            given = {k: v for k, v in (("shape", shape), ("dtype", dtype)) if v is not None}
            return self.create_array(name, **given, **kwargs)
        _check_not_mapping(data)
        data = np.asarray(data)
        if shape is not None and parse_shape(shape, "shape") != data.shape:
            raise SpecError(f"shape={shape!r} is not the shape of the data, {data.shape}")
        return self._create_filled(name, data, kwargs, dtype)

    def create(self, name: str, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Array:
        """zarr-python's alias of `create_dataset`."""
        return self.create_dataset(name, shape, dtype, **kwargs)

    def array(self, name: str, data: Any = None, **kwargs: Any) -> Array:
        """zarr-python's `g.array(name, data)`: a member holding `data` (as `create_dataset`)."""
        return self.create_dataset(name, data=data, **kwargs)

    def _create_filled(self, name: str, data: Any, kwargs: dict[str, Any],
                       dtype: Any = None) -> Array:
        """A new member holding `data`, in its data type unless `dtype` is given; with
        `overwrite`, in place of any member there, which is kept if writing fails."""
        _check_not_mapping(data)
        data = np.asarray(data)
        dtype = data_type_of(data) if dtype is None else dtype
        if flag(kwargs.get("overwrite", False), "overwrite"):
            self._check_writable()
            _validate_names(name)
            self._consolidated = None
            return array_replacing(self.store, self._child_path(name), data, dtype,
                                   {"zarr_format": self.zarr_format, **kwargs})
        array = self.create_array(name, shape=data.shape, dtype=dtype, **kwargs)
        try:
            array[...] = data
        except BaseException:  # no half-written member left behind
            storage.delete_node(self.store, array.path)
            raise
        return array

    def zeros(self, name: str, shape: Any, **kwargs: Any) -> Array:
        """An array member whose unwritten elements read as 0."""
        fill = digit_fill(0, kwargs.get("dtype", "float64"))
        return self.create_array(name, shape=shape, fill_value=fill, **kwargs)

    def ones(self, name: str, shape: Any, **kwargs: Any) -> Array:
        """An array member whose unwritten elements read as 1."""
        fill = digit_fill(1, kwargs.get("dtype", "float64"))
        return self.create_array(name, shape=shape, fill_value=fill, **kwargs)

    def full(self, name: str, shape: Any, fill_value: Any, **kwargs: Any) -> Array:
        return self.create_array(name, shape=shape, fill_value=fill_value, **kwargs)

    def empty(self, name: str, shape: Any, **kwargs: Any) -> Array:
        """An array member with the default fill value: nothing is written either way."""
        return self.create_array(name, shape=shape, **kwargs)

    def zeros_like(self, name: str, data: Any, **kwargs: Any) -> Array:
        """`zeros` with the shape, data type and chunks of `data` unless given."""
        return self.zeros(name=name, **like(data, kwargs))

    def ones_like(self, name: str, data: Any, **kwargs: Any) -> Array:
        return self.ones(name=name, **like(data, kwargs))

    def full_like(self, name: str, data: Any, **kwargs: Any) -> Array:
        """`full` like `data`; the fill value defaults to that of `data` if it is an array."""
        return self.full(name=name, **full_like_kwargs(data, kwargs))

    def empty_like(self, name: str, data: Any, **kwargs: Any) -> Array:
        """`empty` like `data`, with its fill value too if it is a zarrkit Array."""
        return self.empty(name=name, **like(data, kwargs, fill=True))

    def __setitem__(self, name: str, value: Any) -> None:
        """`g[name] = data`, zarr-python's shortcut: a new array holding `data`, with default
        settings, in place of any member there (kept if writing the new one fails)."""
        self._create_filled(name, value, {"overwrite": True})

    def __delitem__(self, name: str) -> None:
        self._check_writable()
        path = self._child_path(name)
        if not storage.node_exists(self.store, path, self.zarr_format):
            raise NodeNotFoundError(f"group {self.name} has no member {name!r}")
        self._consolidated = None
        storage.delete_node(self.store, path)

    def move(self, source: str, dest: str) -> None:
        """Move the member `source`, with everything below it, to `dest` (both relative to
        this group; `dest` must be free, and its missing parent groups are created): renamed
        where the store can, else copied and then deleted, so a failure part-way leaves the
        source as it was."""
        self._check_writable()
        old, new = self._child_path(source), self._child_path(dest)
        _validate_names(dest)
        found, taken = run_io(lambda check: check(), [  # both at once (a round trip)
            lambda: storage.node_exists(self.store, old, self.zarr_format),
            lambda: next(iter(self.store.list_prefix(storage.prefix_of(new))), None)],
            self.store.io_concurrency)
        if not found:
            raise NodeNotFoundError(f"group {self.name} has no member {source!r} to move")
        if new == old or new.startswith(old + "/"):
            raise InvalidNameError(f"cannot move {source!r} to {dest!r}, inside itself")
        if taken is not None:
            raise NodeExistsError(f"cannot move {source!r} to {dest!r}: something is there")
        self._consolidated = None
        storage.move_node(self.store, old, new, self.zarr_format)

    def create_hierarchy(self, nodes: Mapping[str, Any], *,
                         overwrite: bool = False) -> dict[str, Array | Group]:
        """Create the nodes below this group from their metadata, by relative path, and the
        groups they imply (see `zarrkit.create_hierarchy`); every node by relative path."""
        self._check_writable()
        self._consolidated = None
        return create_hierarchy_at(self.store, self.path, nodes, overwrite)

    # -- walking ---------------------------------------------------------------------------------
    def visititems(self, func: Callable[[str, Array | Group], Any]) -> Any:
        """h5py's and zarr-python 2's walk: `func(path, node)` for every node below this group,
        each group before its members; the first result that is not None ends the walk and is
        returned."""
        _check_callable(func)
        for path, node in self.members(None):
            result = func(path, node)
            if result is not None:
                return result
        return None

    def visit(self, func: Callable[[str], Any]) -> Any:
        """`visititems` with the path alone."""
        _check_callable(func)
        return self.visititems(lambda path, _: func(path))

    visitkeys = visit

    def visitvalues(self, func: Callable[[Array | Group], Any]) -> Any:
        """`visititems` with the node alone."""
        _check_callable(func)
        return self.visititems(lambda _, node: func(node))

    # -- display ---------------------------------------------------------------------------------
    @property
    def info(self) -> GroupInfo:
        """A summary without store reads, as zarr-python's."""
        return GroupInfo(self)

    def info_complete(self) -> GroupInfo:
        """`info` with the members counted and named (lists the store)."""
        return GroupInfo(self, complete=True)

    def tree(self, level: int | None = None) -> str:
        """The hierarchy below this group as indented text, down to `level` levels below its
        members (zarr-python 3's meaning, as `members(max_depth=level)`: 0 shows the members
        alone; None, everything)."""
        lines = [self.name if self.path else "/"]
        _tree_lines(self, "", _checked_depth(level, "level"), lines)
        return "\n".join(lines)


def _checked_depth(max_depth: Any, what: str = "max_depth") -> int | None:
    if max_depth is None:
        return None
    try:
        depth = operator.index(max_depth)
    except TypeError:
        depth = -1
    if depth < 0:
        raise SpecError(f"{what} must be None or an integer >= 0; got {max_depth!r}")
    return depth


def checked_use_consolidated(value: Any) -> bool | None:
    """`use_consolidated` as zarrkit takes it: True, False or None (use it if present);
    zarr-python's other form, the key of v2 consolidated metadata, only as its default
    ".zmetadata" (True). Anything else would be read as one of these by its truth value."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return None if value is None else bool(value)
    if isinstance(value, str) and value == CONSOLIDATED_KEY:
        return True
    raise SpecError(f"use_consolidated must be True, False or None (or {CONSOLIDATED_KEY!r}, "
                    f"the only key of consolidated metadata zarrkit reads); got {value!r}")


def _check_not_mapping(data: Any) -> None:
    """A group or dict given as an array's data: numpy would make an array of its keys."""
    if isinstance(data, Group):
        raise NodeTypeError(f"{data.name} is a group, not array data; copy a group with "
                            "zarrkit.copy or create_hierarchy")
    if isinstance(data, Mapping):
        raise SpecError(f"array data must be array-like, not a {type(data).__name__} "
                        "(numpy would store its keys)")


def _check_callable(func: Any) -> None:
    if not callable(func):
        raise SpecError(f"the visit methods call a function for each node; got {func!r}")


def _check_castable(node: Array, dtype: Any) -> None:
    """zarr-python's and h5py's rule for an existing array required without `exact`: its
    values must cast safely to the data type asked for."""
    if dtype is None:
        return
    asked = DataType.parse(dtype).dtype
    if not np.can_cast(node.dtype, asked):
        raise SpecError(f"dtype={dtype!r} does not match the existing array {node.name}: its "
                        f"values ({node.dtype}) do not cast safely to {asked}")


def _validate_names(name: str) -> None:
    if not isinstance(name, str):
        raise InvalidNameError(f"invalid node name {name!r}: must be a string")
    for part in name.strip("/").split("/"):
        validate_node_name(part)


def listed_below(group: Group, depth: int | None, use_consolidated_for_children: bool = True,
                 first: int | None = None) -> dict[str, list[tuple[str, Array | Group]]]:
    """{group path: its (name, node) members} of `group` and the groups below it down to
    `depth` levels below its members (None: all), descending into the `first` members of each
    only (None: all). Level by level: every group of a level listed concurrently, and all
    their members' documents read in one request (remote stores: a round trip or two a level,
    not a few per node)."""
    listed: dict[str, list[tuple[str, Array | Group]]] = {}
    level: list[Group] = [group]
    while level:
        listed.update(zip([g.path for g in level],
                          _children_of(level, use_consolidated_for_children), strict=True))
        if depth == 0:
            break
        depth = None if depth is None else depth - 1
        level = [n for g in level for _, n in listed[g.path][:first] if isinstance(n, Group)]
    return listed


def _children_of(groups: list[Group], use_consolidated_for_children: bool
                 ) -> list[list[tuple[str, Array | Group]]]:
    """The (name, node) members of each of `groups` (all of one store and format): those with
    consolidated metadata from it, the others' listings concurrently, then all their
    members' documents in one batched request."""
    stored = [g for g in groups if g._consolidated is None]
    store = groups[0].store
    names = dict(zip([g.path for g in stored],
                     run_io(Group._listed_names, stored, store.io_concurrency), strict=True))
    paths = [storage.join(g.path, n) for g in stored for n in names[g.path]]
    found = dict(zip(paths, formats.find_many(
        store, paths, groups[0].zarr_format,
        None if use_consolidated_for_children else False), strict=True)) if paths else {}
    result = []
    for g in groups:
        if g._consolidated is not None:
            result.append([(k, g[k]) for k in g.keys()])
            continue
        named = [(n, storage.join(g.path, n)) for n in names[g.path]]
        result.append([(n, open_node(g.store, p, read_only=g.read_only, found=found[p]))
                       for n, p in named if found[p] is not None])
    return result


def _flattened(path: str, listed: dict[str, list[tuple[str, Array | Group]]],
               prefix: str = "") -> list[tuple[str, Array | Group]]:
    """The members listed below the group at `path`, each group followed by its own."""
    out: list[tuple[str, Array | Group]] = []
    for name, node in listed[path]:
        out.append((prefix + name, node))
        if isinstance(node, Group) and node.path in listed:
            out += _flattened(node.path, listed, f"{prefix}{name}/")
    return out


def _tree_lines(group: Group, indent: str, level: int | None, lines: list[str]) -> None:
    """The lines of `group`'s members, and of theirs `level` levels further down (read with
    one `members` walk: level by level, not group by group)."""
    below: dict[str, list[tuple[str, Array | Group]]] = {}
    for path, node in group.members(level):
        parent, _, name = path.rpartition("/")
        below.setdefault(parent, []).append((name, node))
    _tree_of(below, "", indent, lines)


def _tree_of(below: dict[str, list[tuple[str, Array | Group]]], at: str, indent: str,
             lines: list[str]) -> None:
    members = below.get(at, [])
    for i, (name, node) in enumerate(members):
        last = i == len(members) - 1
        branch = "└── " if last else "├── "
        if isinstance(node, Array):
            lines.append(f"{indent}{branch}{name} {node.shape} {node.dtype}")
        else:
            lines.append(f"{indent}{branch}{name}")
            _tree_of(below, f"{at}/{name}" if at else name, indent + ("    " if last
                                                                     else "│   "), lines)


def open_node(store: KvStore, path: str, *, read_only: bool = False,
              write_empty_chunks: bool = False, zarr_format: int | None = None,
              use_consolidated: bool | None = None,
              found: formats.Found | None = None) -> Array | Group:
    """Open the node at `path` in any format (or `zarr_format`); `found` is its metadata when
    already read (e.g. from consolidated metadata)."""
    if found is None:
        found = storage.find_node(store, path, zarr_format, use_consolidated)
    metadata = found.metadata
    if formats.is_array(metadata):
        return Array(store, path, metadata, read_only=read_only,
                     write_empty_chunks=write_empty_chunks)
    group = Group(store, path, metadata, read_only=read_only)
    group._consolidated = found.consolidated
    return group


def finished_node(node: Array | Group, where: Any, **open_options: Any) -> Array | Group:
    """`node` after a one-shot operation (convert, save, consolidate_metadata, ...) that opened
    its store from `where` itself: the store closed, which finishes a zip archive (left open,
    the operation's changes would be lost), and the node opened again read-only if closing
    ended the store's use."""
    store = finish_opened(node.store, where, **open_options)
    if store is node.store:
        return node
    return open_node(store, node.path, read_only=True, zarr_format=node.zarr_format)


def finished_after(_written: Any, node: Array | Group, where: Any,
                   storage_options: Any = None) -> Array | Group:
    """`finished_node` as the last task of delayed writes (dask), which it depends on."""
    return finished_node(node, where, storage_options=storage_options)


def create_hierarchy_at(store: KvStore, root: str, nodes: Mapping[str, Any],
                        overwrite: bool) -> dict[str, Array | Group]:
    """`hierarchy.plan` and `write` below `root`; the nodes, opened, by path below `root`."""
    given, implied = hierarchy.plan(nodes, root)
    written = hierarchy.write(store, root, given, implied, overwrite)
    return {(p[len(root):].lstrip("/") if root else p):
            open_node(store, p, found=formats.Found(md)) for p, md in written.items()}


def create_group_at(store: KvStore, path: str, *, attributes: dict[str, Any] | None = None,
                    overwrite: bool = False, zarr_format: int = 3) -> Group:
    path = normalize_path(path)
    metadata = formats.new_group(zarr_format, attributes)
    exists = storage.node_exists(store, path)
    if exists and not overwrite:
        raise NodeExistsError(f"a node already exists at {path or '/'!r}")
    storage.ensure_parents(store, path, zarr_format)  # may refuse: before deleting anything
    if exists:
        storage.delete_node(store, path)
    storage.write_metadata(store, path, metadata)
    return Group(store, path, metadata)

"""`Group`: a Zarr group node, a mapping of child names to arrays and groups."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from . import storage
from .array import Array
from .attributes import Attributes
from .creation import create_array_at
from .errors import NodeExistsError, NodeNotFoundError, ReadOnlyError
from .kvstore.base import KvStore
from .metadata.names import normalize_path, validate_node_name
from .metadata.v3 import ArrayMetadataV3, GroupMetadataV3


class Group(Mapping[str, Any]):
    def __init__(self, store: KvStore, path: str, metadata: GroupMetadataV3, *,
                 read_only: bool = False) -> None:
        self.store = store
        self.path = path
        self._metadata = metadata
        self.read_only = read_only or store.read_only

    # -- description -----------------------------------------------------------------------------
    @property
    def metadata(self) -> dict[str, Any]:
        return self._metadata.to_json()

    @property
    def zarr_format(self) -> int:
        return 3

    @property
    def name(self) -> str:
        return "/" + self.path

    @property
    def basename(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def attrs(self) -> Attributes:
        return Attributes(lambda: self._metadata.attributes, self._update_attributes)

    def _update_attributes(self, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        self._check_writable()
        with self.store.lock(storage.metadata_key(self.path)):
            current = storage.read_node(self.store, self.path)
            if not isinstance(current, GroupMetadataV3):
                current = self._metadata
            attrs = dict(current.attributes)
            change(attrs)
            updated = dataclasses.replace(current, attributes=attrs)
            storage.write_metadata(self.store, self.path, updated)
        self._metadata = updated
        return attrs

    def __repr__(self) -> str:
        return f"<zarrkit.Group {self.name}>"

    # -- children --------------------------------------------------------------------------------
    def _child_path(self, name: str) -> str:
        return storage.join(self.path, normalize_path(name))

    def __getitem__(self, name: str) -> Array | Group:
        path = self._child_path(name)
        try:
            return open_node(self.store, path, read_only=self.read_only)
        except NodeNotFoundError:
            raise NodeNotFoundError(f"group {self.name} has no member {name!r}") from None

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            return storage.node_exists(self.store, self._child_path(name))
        except Exception:  # noqa: BLE001 - an invalid name is simply not a member
            return False

    def keys(self) -> list[str]:  # type: ignore[override]
        _, dirs = self.store.list_dir(storage.prefix_of(self.path))
        return [d for d in dirs if storage.node_exists(self.store, storage.join(self.path, d))]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def members(self) -> list[tuple[str, Array | Group]]:
        return [(k, self[k]) for k in self.keys()]

    def arrays(self) -> list[tuple[str, Array]]:
        return [(k, v) for k, v in self.members() if isinstance(v, Array)]

    def groups(self) -> list[tuple[str, Group]]:
        return [(k, v) for k, v in self.members() if isinstance(v, Group)]

    def array_keys(self) -> list[str]:
        return [k for k, _ in self.arrays()]

    def group_keys(self) -> list[str]:
        return [k for k, _ in self.groups()]

    # -- creating children -----------------------------------------------------------------------
    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(f"group {self.name} is read-only")

    def create_group(self, name: str, *, attributes: dict[str, Any] | None = None,
                     overwrite: bool = False) -> Group:
        self._check_writable()
        path = self._child_path(name)
        _validate_names(name)
        return create_group_at(self.store, path, attributes=attributes, overwrite=overwrite)

    def require_group(self, name: str) -> Group:
        if name in self:
            node = self[name]
            if isinstance(node, Group):
                return node
        return self.create_group(name)

    def create_array(self, name: str, **kwargs: Any) -> Array:
        """Create an array member; keyword arguments as for `zarrkit.create`."""
        self._check_writable()
        _validate_names(name)
        return create_array_at(self.store, self._child_path(name), **kwargs)

    def __delitem__(self, name: str) -> None:
        self._check_writable()
        path = self._child_path(name)
        if not storage.node_exists(self.store, path):
            raise NodeNotFoundError(f"group {self.name} has no member {name!r}")
        storage.delete_node(self.store, path)

    # -- display ---------------------------------------------------------------------------------
    def tree(self, level: int | None = None) -> str:
        """The hierarchy below this group as indented text."""
        lines = [self.name if self.path else "/"]
        _tree_lines(self, "", level, lines)
        return "\n".join(lines)


def _validate_names(name: str) -> None:
    for part in name.strip("/").split("/"):
        validate_node_name(part)


def _tree_lines(group: Group, indent: str, level: int | None, lines: list[str]) -> None:
    if level is not None and level <= 0:
        return
    members = group.members()
    for i, (name, node) in enumerate(members):
        last = i == len(members) - 1
        branch = "└── " if last else "├── "
        if isinstance(node, Array):
            lines.append(f"{indent}{branch}{name} {node.shape} {node.dtype}")
        else:
            lines.append(f"{indent}{branch}{name}")
            _tree_lines(node, indent + ("    " if last else "│   "),
                        None if level is None else level - 1, lines)


def open_node(store: KvStore, path: str, *, read_only: bool = False,
              write_empty_chunks: bool = False) -> Array | Group:
    metadata = storage.read_node(store, path)
    if isinstance(metadata, ArrayMetadataV3):
        return Array(store, path, metadata, read_only=read_only,
                     write_empty_chunks=write_empty_chunks)
    return Group(store, path, metadata, read_only=read_only)


def create_group_at(store: KvStore, path: str, *, attributes: dict[str, Any] | None = None,
                    overwrite: bool = False) -> Group:
    path = normalize_path(path)
    if storage.node_exists(store, path):
        if not overwrite:
            raise NodeExistsError(f"a node already exists at {path or '/'!r}")
        storage.delete_node(store, path)
    storage.ensure_parents(store, path)
    metadata = GroupMetadataV3.create(attributes=attributes or {})
    storage.write_metadata(store, path, metadata)
    return Group(store, path, metadata)

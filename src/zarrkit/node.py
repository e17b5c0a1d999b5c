"""What arrays and groups share: where they live and how they describe themselves."""

from __future__ import annotations

from typing import Any

from . import formats
from .errors import NodeTypeError


class Node:
    """Base of `Array` and `Group`: a node at `path` in `store`, described by `_metadata`."""

    path: str
    store: Any
    _metadata: Any

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        """zarr-python's `Array(async_array)` / `Group(async_group)` give the node the async
        handle wraps, itself (so each sees the other's resizes); `__init__` then leaves it
        as it is (`set_up_already`)."""
        node = wrapped_by(args, kwargs)
        if node is None:
            return super().__new__(cls)
        if not isinstance(node, cls):
            raise NodeTypeError(f"zarrkit.{cls.__name__}(x): x wraps a {type(node).__name__}, "
                                f"not an {cls.__name__}")
        return node

    def set_up_already(self, store: Any, metadata: Any) -> bool:
        """Whether `__init__(store, ...)` is zarr-python's `Array(async_array)` of this node
        (nothing to do); NodeTypeError if `metadata` is missing otherwise."""
        if metadata is not None:
            return False
        if wrapped_by((store,), {}) is self:
            return True
        raise NodeTypeError(f"zarrkit.{type(self).__name__}(...) takes an async handle, or a "
                            f"store, path and metadata; got {type(store).__name__} alone")

    @property
    def metadata(self) -> dict[str, Any]:
        """The node's metadata document (zarr.json, or the v2/v1 equivalent) as a dict."""
        return self._metadata.to_json()

    @property
    def zarr_format(self) -> int:
        return formats.format_of(self._metadata)

    @property
    def name(self) -> str:
        return "/" + self.path

    @property
    def basename(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    def __eq__(self, other: object) -> bool:
        """zarr-python's equality: the same kind of node at the same place, with the same
        metadata (a handle that has not seen a resize is another). As a Mapping, a group
        compared fresh handles of all its members: never equal, not even to itself."""
        if not isinstance(other, Node) or type(other) is not type(self):
            return NotImplemented
        return (self.path == other.path and _same_store(self.store, other.store)
                and self.metadata == other.metadata)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.path))


def wrapped_by(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The node that an async handle (`zarrkit.AsyncArray`, `AsyncGroup`) given alone wraps,
    else None."""
    if len(args) != 1 or kwargs:
        return None
    return getattr(args[0], "_zarrkit_node", None)


def _same_store(a: Any, b: Any) -> bool:
    """The same store object, or two opened at the same place: specs that name it (an
    anonymous memory store's, or another library's store's, name only the driver)."""
    if a is b:
        return True
    spec = a.to_json()
    return isinstance(spec, dict) and len(spec) > 1 and spec == b.to_json()

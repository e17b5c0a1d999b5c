"""What arrays and groups share: where they live and how they describe themselves."""

from __future__ import annotations

from typing import Any

from . import formats


class Node:
    """Base of `Array` and `Group`: a node at `path` in `store`, described by `_metadata`."""

    path: str
    store: Any
    _metadata: Any

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


def _same_store(a: Any, b: Any) -> bool:
    """The same store object, or two opened at the same place: specs that name it (an
    anonymous memory store's, or another library's store's, name only the driver)."""
    if a is b:
        return True
    spec = a.to_json()
    return isinstance(spec, dict) and len(spec) > 1 and spec == b.to_json()

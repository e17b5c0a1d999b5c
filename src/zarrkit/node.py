"""What arrays and groups share: where they live and how they describe themselves."""

from __future__ import annotations

from typing import Any

from . import formats


class Node:
    """Base of `Array` and `Group`: a node at `path` in `store`, described by `_metadata`."""

    path: str
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

"""Consolidated metadata: every node below a group, read from one document.

Two forms exist. v2 (zarr-python 2): a `.zmetadata` key holding
`{"zarr_consolidated_format": 1, "metadata": {"a/.zarray": {...}, "a/.zattrs": {...}, ...}}`.
v3 (zarr-python 3): a `consolidated_metadata` member of the group's zarr.json,
`{"kind": "inline", "must_understand": false, "metadata": {"a": <zarr.json of a>, ...}}`.
A view parses entries on demand, so opening a large hierarchy costs nothing per node until used.
"""

from __future__ import annotations

from typing import Any

from ..errors import MetadataError
from ._util import describe
from .v2 import ARRAY_KEY, ATTRS_KEY, GROUP_KEY, ArrayMetadataV2, GroupMetadataV2
from .v3 import parse_v3_node

CONSOLIDATED_KEY = ".zmetadata"
V3_MEMBER = "consolidated_metadata"
_V2_SUFFIXES = (ARRAY_KEY, GROUP_KEY, ATTRS_KEY)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


class ConsolidatedView:
    """The nodes below one group (paths relative to it), as recorded in consolidated metadata."""

    def __init__(self, zarr_format: int, docs: dict[str, dict[str, Any]], where: str) -> None:
        self.zarr_format = zarr_format
        self._docs = docs  # relative path -> {"node": doc, "attrs": doc (v2 only)}
        self._where = where

    @classmethod
    def from_v2(cls, doc: Any, *, where: str = CONSOLIDATED_KEY) -> ConsolidatedView:
        if not isinstance(doc, dict) or doc.get("zarr_consolidated_format") != 1 \
                or not isinstance(doc.get("metadata"), dict):
            raise MetadataError(f"{where}: expected {{\"zarr_consolidated_format\": 1, "
                                f"\"metadata\": {{...}}}}, got {describe(doc)}")
        docs: dict[str, dict[str, Any]] = {}
        for key, value in doc["metadata"].items():
            path, _, name = key.rpartition("/")
            if name in _V2_SUFFIXES:
                entry = docs.setdefault(path, {})
                if name != ATTRS_KEY:  # an array or a group by its key, not by its members
                    entry["both"] = "node" in entry  # (refused when the node is opened)
                    entry["array"] = name == ARRAY_KEY
                entry["attrs" if name == ATTRS_KEY else "node"] = value
        return cls(2, {p: d for p, d in docs.items() if "node" in d}, where)

    @classmethod
    def from_v3(cls, member: Any, *, where: str) -> ConsolidatedView | None:
        """The view of an "inline" member; None for another kind marked `must_understand:
        false`, which the spec lets a reader ignore (the group then opens without it)."""
        kind = member.get("kind") if isinstance(member, dict) else None
        if kind != "inline":
            if isinstance(member, dict) and member.get("must_understand") is False:
                return None
            raise MetadataError(f"{where}: {V3_MEMBER}: kind {describe(kind)} is not supported "
                                "(only \"inline\"), and the member is not marked "
                                "\"must_understand\": false")
        if not isinstance(member.get("metadata"), dict):
            raise MetadataError(f"{where}: {V3_MEMBER}: kind \"inline\" needs \"metadata\": "
                                f"{{...}}, got {describe(member.get('metadata'))}")
        return cls(3, {p: {"node": d} for p, d in member["metadata"].items()}, where)

    def node(self, path: str) -> tuple[Any, ConsolidatedView | None] | None:
        """The metadata of the node at relative `path` (and a view below it if it is a group),
        or None if the consolidated metadata does not list it."""
        entry = self._docs.get(path)
        if entry is None:
            return None
        where = f"{self._where}: {path}"
        if entry.get("both"):
            raise MetadataError(f"{where}: has both {ARRAY_KEY} and {GROUP_KEY} records; a v2 "
                                "node is either an array or a group")
        if self.zarr_format == 3:
            metadata = parse_v3_node(entry["node"], where=where)
        elif entry["array"]:
            metadata = ArrayMetadataV2.from_json(entry["node"], where=where,
                                                 attributes=entry.get("attrs", {}))
        else:
            metadata = GroupMetadataV2.from_json(entry["node"], where=where,
                                                 attributes=entry.get("attrs", {}))
        if hasattr(metadata, "shape"):
            return metadata, None
        return metadata, self.below(path)

    def below(self, path: str) -> ConsolidatedView:
        prefix = path + "/"
        docs = {p[len(prefix):]: d for p, d in self._docs.items() if p.startswith(prefix)}
        return ConsolidatedView(self.zarr_format, docs, f"{self._where}: {path}")

    def children(self) -> list[str]:
        """Names of the direct members, sorted."""
        return sorted(p for p in self._docs if p and "/" not in p)

    def __contains__(self, path: object) -> bool:
        return path in self._docs and path != ""


def records_of(rel: str, metadata: Any) -> dict[str, Any]:
    """The consolidated records of the node at relative path `rel`, keyed as its format keys
    them: v3 by node path (its zarr.json without a consolidated member of its own: the top
    group's record covers every level, and nested copies would go stale), v2 by document key
    (`.zarray`/`.zgroup` and `.zattrs`)."""
    if metadata.zarr_format == 3:
        doc = metadata.to_json()
        doc.pop(V3_MEMBER, None)
        return {rel: doc}
    return {_join(rel, metadata.metadata_key): metadata.to_json(),
            _join(rel, ATTRS_KEY): metadata.attributes}


def v2_document(records: dict[str, Any]) -> dict[str, Any]:
    """A `.zmetadata` document from {document key: document}."""
    return {"metadata": dict(sorted(records.items())), "zarr_consolidated_format": 1}


def v3_member(records: dict[str, Any]) -> dict[str, Any]:
    """The `consolidated_metadata` member from {relative path: zarr.json document}."""
    return {"kind": "inline", "must_understand": False, "metadata": dict(sorted(records.items()))}

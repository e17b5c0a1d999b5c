"""Node names and hierarchy paths (core spec, "Node names")."""

from __future__ import annotations

from ..errors import InvalidNameError


def validate_node_name(name: str, *, v3: bool = True) -> str:
    """Return `name` if it is a valid non-root node name, else raise InvalidNameError.

    `v3=False` checks only what any store key segment meets: the v2 spec reserves no names, and
    zarr-python writes v2 members named "__x" or "..." (what a v2 group lists must open)."""
    if not isinstance(name, str):
        raise InvalidNameError(f"invalid node name {name!r}: must be a string")
    if not name:
        raise InvalidNameError("invalid node name '': must not be empty")
    if "/" in name:
        raise InvalidNameError(f"invalid node name {name!r}: must not contain '/'")
    if name in (".", "..") or (v3 and name.strip(".") == ""):
        raise InvalidNameError(f"invalid node name {name!r}: must not consist only of periods")
    if v3 and name.startswith("__"):
        raise InvalidNameError(f"invalid node name {name!r}: the prefix '__' is reserved")
    return name


def normalize_path(path: str, *, v3: bool = True) -> str:
    """The store-relative form of a node path: "" for the root, else "a/b" (no outer slashes).
    `v3=False` applies only the rules of any format (see `validate_node_name`)."""
    if not isinstance(path, str):
        raise InvalidNameError(f"invalid node path {path!r}: must be a string")
    if path in ("", "/"):
        return ""
    # Remove one slash at each end only, so "//a" and "a//" still count as empty segments.
    stripped = path.removeprefix("/").removesuffix("/")
    for segment in stripped.split("/"):
        try:
            validate_node_name(segment, v3=v3)
        except InvalidNameError as e:
            raise InvalidNameError(f"invalid node path {path!r}: {e}") from None
    return stripped

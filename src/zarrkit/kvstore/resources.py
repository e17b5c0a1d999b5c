"""Context resource references: the one rule the kvstore drivers and the spec layer's `Context`
follow (TensorStore's).

A resource is named by its kind ("file_io_sync") or by its kind and an id ("file_io_sync#a").
A context is a chain of JSON scopes, innermost first (a kvstore spec's own `context`, then the
enclosing spec's, then the open's). A name is looked up in the innermost scope defining it; a
string there is an alias of another resource of the same kind, looked up from that scope
outwards (so a parent's alias never sees a child's entries). A bare kind defined nowhere is the
kind's default; an "#id" defined nowhere is an error, and so is an alias cycle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import SpecError
from .memory import MemoryStore

#: `follow`'s value for a bare kind that no scope defines: the kind's default.
DEFAULT: Any = object()


def reference_kind(name: str) -> str:
    """The kind a resource name refers to: "cache_pool#a" -> "cache_pool"."""
    return name.split("#", 1)[0]


def is_reference(value: Any, kind: str) -> bool:
    """Whether a member's value is a reference to a `kind` resource rather than its JSON."""
    return isinstance(value, str) and reference_kind(value) == kind


def check_alias(name: str, value: str, where: str) -> None:
    """An entry `name: value` whose value is a string must name a resource of the same kind
    (TensorStore refuses the context otherwise)."""
    if reference_kind(value) != reference_kind(name):
        raise SpecError(f"{where}: context resource {name!r} refers to {value!r}, a resource "
                        "of another kind")


def follow(ref: str, kind: str, scopes: Sequence[Mapping[str, Any]],
           where: str) -> tuple[int, str, Any]:
    """Resolve the reference `ref` to a `kind` resource through `scopes` (innermost first).

    Returns (level, name, json): the scope defining the resource (`len(scopes)` for a default,
    which belongs to the outermost context), its name there, and its JSON (`DEFAULT` for a bare
    kind defined nowhere)."""
    if not is_reference(ref, kind):
        raise SpecError(f"{where}: {ref!r} is not a {kind} resource")
    level, name, seen = 0, ref, set()
    while True:
        level = next((i for i in range(level, len(scopes)) if name in scopes[i]), len(scopes))
        if level == len(scopes):
            if "#" in name:  # only a kind's bare name has a default
                raise SpecError(f"{where}: context resource {name!r} is not defined")
            return level, name, DEFAULT
        if (level, name) in seen:
            raise SpecError(f"{where}: context resource {name!r} refers to itself (through "
                            "aliases)")
        seen.add((level, name))
        value = scopes[level][name]
        if not isinstance(value, str):
            return level, name, value
        check_alias(name, value, where)
        name = value


@dataclass(frozen=True)
class KvStoreContext:
    """What an enclosing context gives a kvstore spec (the spec layer passes it; the native
    API opens without one)."""

    #: The enclosing contexts' JSON, innermost first, searched after the spec's own `context`.
    scopes: tuple[Mapping[str, Any], ...] = ()
    #: Values for resources no scope defines, where they differ from the native API's.
    defaults: Mapping[str, Any] = field(default_factory=dict)
    #: The store memory specs open, their path (named or not) a path in it, as in TensorStore.
    #: None: the native rule (a path's first segment names a process-wide store).
    memory: MemoryStore | None = None
    #: Objects the enclosing context made for the kvstore's resource members, by kind (a rate
    #: limiter's `RateLimits`): every store opened with one such resource shares it.
    shared: Mapping[str, Any] = field(default_factory=dict)


def resolve_member(spec: Mapping[str, Any], name: str, default: Any,
                   context: KvStoreContext | None = None) -> Any:
    """A kvstore spec's resource member's value: inline, or a reference (a missing member is
    the bare name) followed through the spec's own `context`, then `context.scopes`. A
    resource left undefined, or defined as null, is the default: `context.defaults`', else
    `default`."""
    value = spec.get(name, name)
    if not isinstance(value, str):
        return value
    context = context or KvStoreContext()
    own = spec.get("context")
    scopes = ((own,) if isinstance(own, Mapping) else ()) + context.scopes
    found = follow(value, name, scopes, f"kvstore spec {dict(spec)!r}")[2]
    return context.defaults.get(name, default) if found is DEFAULT or found is None else found

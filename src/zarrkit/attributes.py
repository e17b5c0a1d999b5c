"""User attributes of a node: a mutable mapping persisted on every change.

Each change re-reads the stored document under the store's lock for the metadata key, applies the
change and writes it back, so concurrent updates from threads or processes are not lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from .errors import MetadataError
from .metadata.json import json_dumps


class Attributes(MutableMapping[str, Any]):
    def __init__(self, get: Callable[[], dict[str, Any]],
                 update: Callable[[Callable[[dict[str, Any]], None]], dict[str, Any]]) -> None:
        self._get = get  # the node's current attributes
        self._update = update  # applies a change to the stored attributes, returns them

    def __getitem__(self, key: str) -> Any:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._get()))

    def __len__(self) -> int:
        return len(self._get())

    def __setitem__(self, key: str, value: Any) -> None:
        _check_json(key, value)  # before a dict would refuse an unhashable key
        self.update({key: value})

    def __delitem__(self, key: str) -> None:
        if key not in self._get():
            raise KeyError(key)
        self._update(lambda attrs: attrs.pop(key, None))

    def update(self, other: Any = (), /, **kwargs: Any) -> None:  # type: ignore[override]
        changes = {**_as_dict(other), **kwargs}
        for k, v in changes.items():
            _check_json(k, v)
        self._update(lambda attrs: attrs.update(changes))

    def put(self, attributes: dict[str, Any]) -> None:
        """Replace all attributes at once."""
        attributes = _as_dict(attributes)
        for k, v in attributes.items():
            _check_json(k, v)

        def replace(attrs: dict[str, Any]) -> None:
            attrs.clear()
            attrs.update(attributes)
        self._update(replace)

    def asdict(self) -> dict[str, Any]:
        return dict(self._get())

    def __repr__(self) -> str:
        return f"Attributes({self._get()!r})"


def _as_dict(value: Any) -> dict[Any, Any]:
    """A mapping or (name, value) pairs as a dict; anything else is a MetadataError."""
    try:
        return dict(value)
    except (TypeError, ValueError) as e:
        raise MetadataError(f"attributes must be a mapping of names to values, "
                            f"got {type(value).__name__} ({e})") from None


def _check_json(key: Any, value: Any) -> None:
    """Refuse what cannot be written as JSON (numpy values are written as lists, NaN and the
    infinities as the bare literals zarr-python writes and reads back)."""
    if not isinstance(key, str):
        raise MetadataError(f"attribute names must be strings, got {key!r}")
    json_dumps(value, what=f"attribute {key!r}", constants=True)

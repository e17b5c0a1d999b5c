"""`Spec`: a TensorStore JSON spec (driver, kvstore, metadata, schema, transform, options).

A `Spec` validates its JSON on construction (driver and member names) and gives TensorStore's
accessors. `zarrkit.open(spec)` opens it; every array's `spec()` returns one whose `to_json()`
reopens the same array.
"""

from __future__ import annotations

import copy
from typing import Any

from ..errors import SpecError
from .schema import Schema
from .transform import IndexDomain, IndexTransform

DRIVERS = ("zarr3", "zarr")

#: Members TensorStore accepts for the zarr3 driver.
ZARR3_MEMBERS = frozenset({
    "driver", "kvstore", "path", "context", "dtype", "rank", "transform", "schema", "open",
    "create", "delete_existing", "assume_metadata", "assume_cached_metadata", "cache_pool",
    "data_copy_concurrency", "recheck_cached_metadata", "recheck_cached_data", "metadata",
    "fill_missing_data_reads", "store_data_equal_to_fill_value", "metadata_cache_pool",
})


def check_driver(json: Any) -> str:
    if not isinstance(json, dict):
        raise SpecError(f"spec: expected a JSON object, got {json!r}")
    driver = json.get("driver")
    if driver not in DRIVERS:
        raise SpecError(f"spec.driver: {driver!r} is not a supported driver (supported: "
                        f"{', '.join(map(repr, DRIVERS))})")
    if "kvstore" not in json:
        raise SpecError("spec.kvstore: required (a kvstore object or URL)")
    if driver == "zarr3":
        unknown = set(json) - ZARR3_MEMBERS
        if unknown:
            raise SpecError(f"spec: unknown member(s) {sorted(unknown)} for driver 'zarr3'")
    return driver


class Spec:
    """A JSON spec; `Spec(json)` checks the driver and members."""

    def __init__(self, json: Any) -> None:
        if isinstance(json, Spec):
            json = json.to_json()
        check_driver(json)
        self._json = copy.deepcopy(json)

    def to_json(self, include_defaults: bool = False) -> dict[str, Any]:
        return copy.deepcopy(self._json)

    @property
    def driver(self) -> str:
        return self._json["driver"]

    @property
    def kvstore(self) -> Any:
        return copy.deepcopy(self._json["kvstore"])

    @property
    def transform(self) -> IndexTransform | None:
        json = self._json.get("transform")
        return None if json is None else IndexTransform.from_json(json)

    @property
    def domain(self) -> IndexDomain | None:
        transform = self.transform
        if transform is not None:
            return transform.domain
        return self.schema.domain

    @property
    def rank(self) -> int | None:
        transform = self.transform
        return transform.input_rank if transform is not None else self.schema.rank

    @property
    def dtype(self) -> str | None:
        return self.schema.dtype

    @property
    def schema(self) -> Schema:
        """The spec's own constraints (top-level dtype and rank, and `schema`)."""
        schema = Schema(self._json.get("schema"))
        schema.update(dtype=self._json.get("dtype"), rank=self._json.get("rank"))  # both drivers
        return schema

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spec) and self._json == other._json

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Spec({self._json!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return Spec, (self._json,)

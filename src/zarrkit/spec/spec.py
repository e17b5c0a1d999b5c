"""`Spec`: a TensorStore JSON spec (driver, kvstore, metadata, schema, transform, options).

A `Spec` validates its JSON on construction (driver and member names) and gives TensorStore's
accessors, which describe the array before anything is opened (what the metadata constraints
imply, merged with the spec's schema, seen through its transform); they raise SpecError where
TensorStore refuses the spec. `zarrkit.open(spec)` opens it; every array's `spec()` returns one
whose `to_json()` reopens the same array.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import SpecError
from ..kvstore import fold_node_path
from . import zarr2, zarr3
from .chunk_layout import ChunkLayout
from .context import RESOURCE_KINDS
from .schema import CodecSpec, Schema, json_dtype, with_json_fill
from .transform import (
    IndexDomain,
    IndexTransform,
    OutputIndexMap,
    layout_to_input,
    units_to_input,
)
from .units import Units, parse_units, units_json

DRIVERS = ("zarr3", "zarr")
# Each driver's metadata constraints and its spec_* descriptions of them (zarr3.py, zarr2.py).
_DRIVERS: dict[str, Any] = {"zarr3": zarr3, "zarr": zarr2}
_CONSTRAINTS = {"zarr3": zarr3.MetadataConstraints.from_spec,
                "zarr": zarr2.V2Constraints.from_spec}

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
                        f"{', '.join(map(repr, DRIVERS))}, and 'cast' around one of them)")
    if "kvstore" not in json:
        raise SpecError("spec.kvstore: required (a kvstore object or URL)")
    if driver == "zarr3":
        unknown = set(json) - ZARR3_MEMBERS
        if unknown:
            raise SpecError(f"spec: unknown member(s) {sorted(unknown)} for driver 'zarr3'")
    return driver


def _fold_location(json: dict[str, Any]) -> dict[str, Any]:
    """TensorStore's normal form: the kvstore as a spec with the driver's `path` moved in."""
    json["kvstore"], path = fold_node_path(json["kvstore"], json.get("path", ""))
    if path:
        json["path"] = path
    else:
        json.pop("path", None)
    return json


def _json_fill(member: Any) -> tuple[Any, Any]:
    """The `schema` member without its fill_value, and that, when the member has no dtype of
    its own: TensorStore then keeps the fill value as JSON (see `with_json_fill`)."""
    if not isinstance(member, dict) or "dtype" in member or member.get("fill_value") is None:
        return member, None
    return {k: v for k, v in member.items() if k != "fill_value"}, member["fill_value"]


class Spec:
    """A JSON spec; `Spec(json)` checks the driver and members."""

    def __new__(cls, json: Any = None) -> Spec:
        driver = json.driver if isinstance(json, Spec) else (
            json.get("driver") if isinstance(json, dict) else None)
        if cls is Spec and driver == "cast":
            from .cast import CastSpec  # a Spec subclass: cast.py imports this module

            return super().__new__(CastSpec)
        return super().__new__(cls)

    #: The context a spec retaining its array's holds (`spec(retain_context=True)`): opening
    #: the Spec object uses those very resources; its JSON makes new ones.
    _bound_context: Any = None

    def __init__(self, json: Any) -> None:
        if isinstance(json, Spec):
            json = json.to_json()
        check_driver(json)
        self._json = _fold_location(copy.deepcopy(json))

    def to_json(self, include_defaults: bool = False) -> dict[str, Any]:
        return copy.deepcopy(self._json)

    @property
    def driver(self) -> str:
        return self._json["driver"]

    @property
    def kvstore(self) -> Any:
        return copy.deepcopy(self._json["kvstore"])

    # -- what the spec says of the array before opening it (TensorStore's accessors) ---------
    # As TensorStore: the driver's constraints (metadata, `schema`, dtype) describe the array's
    # dimensions, the transform maps the view onto them, and the accessors describe the view.

    def _parts(self) -> tuple[Any, Any, Schema]:
        """The driver module, its metadata constraints and the driver's own schema (`schema`,
        dtype, rank, and the metadata's data type and rank)."""
        json, transform = self._json, self._given_transform()
        member, fill = _json_fill(json.get("schema"))
        own = Schema.from_json(member) if "schema" in json else Schema()
        own.update(dtype=json_dtype(json.get("dtype")), where="spec")
        rank = json.get("rank")
        if transform is not None:
            if rank not in (None, transform.input_rank):
                raise SpecError(f"rank: {rank} does not match the transform's input rank "
                                f"{transform.input_rank}")
            rank = transform.output_rank  # the driver's dimensions are the transform's outputs
        own.update(rank=rank, where="transform" if transform is not None else "spec")
        constraints = _CONSTRAINTS[self.driver](json)
        driver = _DRIVERS[self.driver]
        own = driver.spec_schema(constraints, own)
        return driver, constraints, own if fill is None else with_json_fill(own, fill)

    def _given_transform(self) -> IndexTransform | None:
        json = self._json.get("transform")
        if json is None:
            return None
        transform = IndexTransform.from_json(json)
        # TensorStore reads a stride-0 map as the constant it is.
        return replace(transform, output=tuple(
            OutputIndexMap(m.offset) if m.method == "single_input_dimension" and not m.stride
            else m for m in transform.output))

    @property
    def transform(self) -> IndexTransform | None:
        """The transform; without one, the identity over the domain the driver's constraints
        imply (as TensorStore derives it), or None when they imply none."""
        transform = self._given_transform()
        if transform is not None:
            return transform
        driver, c, own = self._parts()
        domain = driver.spec_domain(c, own)
        return None if domain is None else IndexTransform.identity(domain)

    @property
    def domain(self) -> IndexDomain | None:
        """The transform's domain: TensorStore does not bound it by the metadata's shape."""
        transform = self.transform
        return None if transform is None else transform.domain

    @property
    def rank(self) -> int | None:
        transform = self.transform
        return transform.input_rank if transform is not None else self._parts()[2].rank

    @property
    def dtype(self) -> str | None:
        return self._parts()[2].dtype

    @property
    def chunk_layout(self) -> ChunkLayout:
        driver, c, own = self._parts()
        layout, transform = driver.spec_layout(c, own), self.transform
        if transform is None:
            return layout
        if layout.rank not in (None, transform.output_rank):
            raise SpecError(f"chunk_layout: rank {layout.rank} does not match the transform's "
                            f"output rank {transform.output_rank}")
        return ChunkLayout.from_json(layout_to_input(transform, layout.to_json()))

    @property
    def codec(self) -> CodecSpec:
        driver, c, own = self._parts()
        return driver.spec_codec(c, own)

    @property
    def fill_value(self) -> np.ndarray | None:
        driver, c, own = self._parts()
        fill = driver.spec_fill(c, own)
        if fill is None or fill.dtype.hasobject:
            return fill  # none, or the `schema` member's JSON one, kept as given
        return Schema(dtype=own.dtype, fill_value=fill).fill_value

    def _units(self) -> Units | None:
        driver, c, own = self._parts()
        units, transform = driver.spec_units(c, own), self.transform
        if units is None and own.rank is not None:
            units = (None,) * own.rank
        if units is None or transform is None:
            return units
        return parse_units(units_to_input(transform, units_json(units)))

    @property
    def dimension_units(self) -> Units | None:
        """One unit (or None) per dimension; None while the rank is unknown."""
        rank = self.rank
        return None if rank is None else self._units() or (None,) * rank

    @property
    def schema(self) -> Schema:
        """The effective schema, as TensorStore's `Spec.schema`: the driver's constraints
        (metadata, `schema`, dtype, rank) seen through the transform."""
        transform, own = self.transform, self._parts()[2]
        if transform is not None and transform.input_rank != transform.output_rank:
            raise SpecError(f"transform: input rank {transform.input_rank} differs from output "
                            f"rank {transform.output_rank}, and TensorStore's Spec.schema "
                            "gives the driver's rank with the transform's domain")
        units, fill = self._units(), self.fill_value
        schema = Schema()
        schema.update(dtype=own.dtype, rank=own.rank, domain=self.domain,
                      chunk_layout=self.chunk_layout, codec=self.codec,
                      dimension_units=units if units and any(units) else None, where="spec")
        if fill is not None and fill.dtype.hasobject:
            return with_json_fill(schema, fill)
        schema.update(fill_value=fill, where="spec")
        return schema

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spec) and self._json == other._json

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Spec({self._json!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return Spec, (self._json,)

    def update(self, *, unbind_context: bool | None = None,
               strip_context: bool | None = None) -> None:
        """TensorStore's `Spec.update` context options. `unbind_context`: the JSON stays, the
        resources a retained spec holds are let go (an open makes new ones from the JSON).
        `strip_context`: the `context` members and every resource member (cache_pool,
        file_io_sync, ...) are dropped too, of the spec and of its kvstores and bases, so an
        open uses its own context's resources."""
        if strip_context:
            self._json = _stripped(self._json)
        if strip_context or unbind_context:
            self._bound_context = None


def _stripped(json: dict[str, Any]) -> dict[str, Any]:
    """`json` without context or resource members, down its `kvstore` and `base` specs."""
    out = {k: v for k, v in json.items() if k != "context" and k not in RESOURCE_KINDS}
    for name in ("kvstore", "base"):
        if isinstance(out.get(name), dict):
            out[name] = _stripped(out[name])
    return out

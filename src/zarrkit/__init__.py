"""zarrkit: a fast, complete implementation of the Zarr storage format."""

from .api import (
    array,
    create,
    empty,
    full,
    group,
    load,
    ones,
    open,
    open_array,
    open_group,
    save,
    zeros,
)
from .array import Array
from .consolidated import consolidate_metadata
from .conversion import convert, upgrade_metadata
from .errors import (
    ChecksumError,
    CodecError,
    CorruptDataError,
    CredentialsError,
    DataTypeError,
    InvalidKeyError,
    InvalidNameError,
    MetadataError,
    NodeExistsError,
    NodeNotFoundError,
    NodeTypeError,
    NotSupportedError,
    PermissionDeniedError,
    ReadOnlyError,
    SelectionError,
    SpecError,
    StoreError,
    StoreUnreachableError,
    ZarrkitError,
)
from .group import Group
from .spec.chunk_layout import ChunkLayout
from .spec.context import Context
from .spec.schema import CodecSpec, Schema
from .spec.spec import Spec
from .spec.transform import IndexDomain, IndexTransform
from .spec.units import Unit
from .spec.view import View

__version__ = "0.1.0"

__all__ = [
    "Array", "Group", "open", "open_array", "open_group", "group", "create", "array", "full",
    "zeros", "ones", "empty", "load", "save", "ZarrkitError", "MetadataError", "DataTypeError",
    "CodecError", "CorruptDataError", "ChecksumError", "NodeNotFoundError", "NodeExistsError",
    "NodeTypeError", "InvalidNameError", "SelectionError", "StoreError", "InvalidKeyError",
    "ReadOnlyError", "SpecError",
    "consolidate_metadata", "convert", "upgrade_metadata",
    "CredentialsError", "NotSupportedError", "PermissionDeniedError", "StoreUnreachableError",
    "to_dask", "from_dask",
    "Spec", "Schema", "ChunkLayout", "CodecSpec", "Context", "IndexDomain", "IndexTransform",
    "Unit", "View",
]


def __getattr__(name: str) -> object:
    # zarrkit.to_dask / zarrkit.from_dask without importing dask with zarrkit.
    if name in ("to_dask", "from_dask"):
        from . import dask as _dask

        return getattr(_dask, name)
    raise AttributeError(f"module 'zarrkit' has no attribute {name!r}")

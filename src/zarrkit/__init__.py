"""zarrkit: a fast, complete implementation of the Zarr storage format."""

import warnings as _warnings

with _warnings.catch_warnings(record=True):
    # numcodecs deprecates its own use of the `crc32c` package; zarrkit uses that package
    # directly (it checksums memoryviews without a copy), so the warning is not for our users.
    # Recorded and dropped (numcodecs installs its own filter, so ignoring would not hold);
    # imported first, before any module of ours imports numcodecs.
    import numcodecs as _numcodecs  # noqa: F401

from .api import (
    array,
    create,
    create_array,
    create_group,
    create_hierarchy,
    empty,
    empty_like,
    full,
    full_like,
    group,
    load,
    ones,
    ones_like,
    open,
    open_array,
    open_consolidated,
    open_group,
    open_like,
    save,
    save_array,
    save_group,
    tree,
    zeros,
    zeros_like,
)
from .array import Array
from .asynchronous import AsyncArray, AsyncGroup  # also makes zarrkit.api.asynchronous
from .consolidated import consolidate_metadata
from .conversion import convert, from_array, upgrade_metadata
from .copying import copy, copy_all, copy_store
from .errors import (
    CastOverflowError,
    CastTypeError,
    ChecksumError,
    ChunkNotFoundError,
    CodecError,
    ConfigError,
    CopyRequiredError,
    CorruptDataError,
    CredentialsError,
    DataTypeError,
    InvalidKeyError,
    InvalidNameError,
    InvalidValueError,
    MetadataError,
    NodeExistsError,
    NodeNotFoundError,
    NodeTypeError,
    NotSupportedError,
    PermissionDeniedError,
    ReadOnlyError,
    SelectionError,
    SelectionTypeError,
    SelectionValueError,
    SpecError,
    StoreError,
    StoreUnreachableError,
    TransactionError,
    UnpicklableError,
    ZarrkitError,
)
from .group import Group
from .spec.cast import cast
from .spec.chunk_layout import ChunkLayout
from .spec.context import Context
from .spec.dim_expression import DimExpression, d
from .spec.schema import CodecSpec, Schema
from .spec.spec import Spec
from .spec.transaction import Transaction
from .spec.transform import Dim, IndexDomain, IndexTransform
from .spec.units import Unit
from .spec.view import View

__version__ = "0.1.0"

__all__ = [
    "Array", "Group", "open", "open_array", "open_group", "group", "create", "array", "full",
    "AsyncArray", "AsyncGroup",
    "zeros", "ones", "empty", "load", "save", "open_consolidated", "create_group", "create_array",
    "zeros_like", "ones_like", "full_like", "empty_like", "tree", "save_array", "save_group",
    "open_like", "from_array", "create_hierarchy", "copy", "copy_all", "copy_store",
    "ZarrkitError", "MetadataError", "DataTypeError",
    "CodecError", "CorruptDataError", "ChecksumError", "NodeNotFoundError", "NodeExistsError",
    "NodeTypeError", "InvalidNameError", "SelectionError", "SelectionTypeError", "SelectionValueError",
    "CastTypeError", "CastOverflowError", "StoreError", "InvalidKeyError", "InvalidValueError",
    "ReadOnlyError", "SpecError", "CopyRequiredError", "ConfigError",
    "consolidate_metadata", "convert", "upgrade_metadata",
    "CredentialsError", "NotSupportedError", "PermissionDeniedError", "StoreUnreachableError",
    "UnpicklableError",
    "ChunkNotFoundError", "to_dask", "from_dask",
    "Spec", "Schema", "ChunkLayout", "CodecSpec", "Context", "IndexDomain", "IndexTransform",
    "Unit", "View", "d", "DimExpression", "cast", "Dim", "Transaction", "TransactionError",
]


def __getattr__(name: str) -> object:
    # zarrkit.to_dask / zarrkit.from_dask without importing dask with zarrkit.
    if name in ("to_dask", "from_dask"):
        from . import dask as _dask

        return getattr(_dask, name)
    raise AttributeError(f"module 'zarrkit' has no attribute {name!r}")

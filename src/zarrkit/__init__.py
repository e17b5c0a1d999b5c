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
from .errors import (
    ChecksumError,
    CodecError,
    CorruptDataError,
    DataTypeError,
    InvalidKeyError,
    InvalidNameError,
    MetadataError,
    NodeExistsError,
    NodeNotFoundError,
    NodeTypeError,
    ReadOnlyError,
    SelectionError,
    SpecError,
    StoreError,
    ZarrkitError,
)
from .group import Group

__version__ = "0.1.0"

__all__ = [
    "Array", "Group", "open", "open_array", "open_group", "group", "create", "array", "full",
    "zeros", "ones", "empty", "load", "save", "ZarrkitError", "MetadataError", "DataTypeError",
    "CodecError", "CorruptDataError", "ChecksumError", "NodeNotFoundError", "NodeExistsError",
    "NodeTypeError", "InvalidNameError", "SelectionError", "StoreError", "InvalidKeyError",
    "ReadOnlyError", "SpecError",
]

"""The zarrkit exception hierarchy.

Every error a user can cause is one of these. Each also derives from the built-in exception a
Python user would expect (ValueError, KeyError, IndexError, ...), so generic handlers keep working.
Messages name the node, key or field at fault.
"""

import os


class ZarrkitError(Exception):
    """Base class of every exception zarrkit raises on purpose."""


class MetadataError(ZarrkitError, ValueError):
    """A metadata document (zarr.json, .zarray, ...) is malformed or not supported."""


class DataTypeError(MetadataError):
    """A data type or fill value is invalid or not supported."""


class CastTypeError(DataTypeError, TypeError):
    """A value of a kind the array's data type cannot hold (a complex number into a float or
    integer array): a TypeError, as numpy and zarr-python raise."""


class CastOverflowError(DataTypeError, OverflowError):
    """A value outside the range of the array's integer data type (300 into uint8, inf into
    int32): an OverflowError, as numpy and zarr-python raise."""


class CodecError(MetadataError):
    """A codec name or configuration is invalid or not supported."""


class CorruptDataError(ZarrkitError, ValueError):
    """Stored chunk, shard or index bytes cannot be decoded."""


class ChecksumError(CorruptDataError):
    """A stored checksum does not match the data."""


class NodeNotFoundError(ZarrkitError, KeyError):
    """No array or group exists at the given path."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class NodeExistsError(ZarrkitError, FileExistsError):
    """A node already exists where a new one was to be created."""


class NodeTypeError(ZarrkitError, TypeError):
    """A node is of the wrong kind (an array where a group was asked for, or the reverse)."""


class InvalidNameError(ZarrkitError, ValueError):
    """A node name or path violates the Zarr naming rules."""


class SelectionError(ZarrkitError, IndexError):
    """An index or selection is invalid or out of bounds for the array."""


class SelectionTypeError(SelectionError, TypeError):
    """An index of the wrong type where numpy raises TypeError (a float slice bound)."""


class SelectionValueError(SelectionError, ValueError):
    """A selection, value or shape of the right kind but a wrong value, where numpy and
    zarr-python raise ValueError: a zero slice step, a value that does not broadcast to the
    selection, appended data or a new shape that does not fit the array."""


class CopyRequiredError(ZarrkitError, ValueError):
    """numpy asked for an array's data without a copy (`copy=False`), which cannot be: the
    data is read into a new array. A ValueError, as numpy's `__array__` protocol expects."""


class StoreError(ZarrkitError, OSError):
    """A key/value store operation failed."""


class InvalidKeyError(StoreError, ValueError):
    """A store key is malformed or would escape the store root."""


class InvalidValueError(StoreError, TypeError):
    """A value given to a store is not bytes-like (bytes, bytearray, memoryview, a numpy array
    of numbers or another object with the buffer protocol)."""


class ReadOnlyError(StoreError, PermissionError):
    """A write was attempted on a store or node opened read-only."""


class ChunkNotFoundError(StoreError, FileNotFoundError):
    """A read touched a chunk that is not stored, on an array opened with the spec member
    `fill_missing_data_reads: false` (TensorStore's NOT_FOUND error): it is not read as the
    fill value."""


class StoreUnreachableError(StoreError, ConnectionError):
    """A remote store's endpoint could not be reached, or kept answering that it is unavailable
    (HTTP 502, 503, 504), after the bounded retries."""


class PermissionDeniedError(StoreError, PermissionError):
    """The remote store refused the operation (HTTP 403: the credentials lack a permission)."""


class CredentialsError(StoreError, PermissionError):
    """Credentials for a remote store are missing, malformed or rejected."""


class NotSupportedError(StoreError):
    """The store cannot do this operation at all (e.g. listing a plain HTTP server)."""


class UnpicklableError(NotSupportedError, TypeError):
    """The object cannot be pickled (a memory store, a writable zip archive): a TypeError, as
    pickle's own refusal."""


class SpecError(ZarrkitError, ValueError):
    """A TensorStore-style spec, schema, chunk layout or URL is invalid or contradictory."""


class TransactionError(StoreError, ValueError):
    """A transaction (`zarrkit.Transaction`) was used after its commit started or it was
    aborted, an atomic one would need several keys committed as one where the store cannot,
    or its commit found a conflict it could not resolve (nothing was written). A ValueError,
    as TensorStore raises."""


class ConfigError(ZarrkitError, ValueError):
    """A ZARRKIT_* environment variable holds no value it takes (read at import)."""


def env_number(name: str, default: float, kind: type = int) -> float:
    """The environment variable `name` read as a `kind` (int or float) of at least 0, or
    `default` when it is unset."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = -1
    if value < 0:
        what = "an integer" if kind is int else "a number"
        raise ConfigError(f"environment variable {name}={raw!r}: expected {what} >= 0")
    return value

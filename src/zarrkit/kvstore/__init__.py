"""Key/value stores: the `KvStore` interface, memory/file/zip stores, and URL/spec parsing."""

# `remote` registers the s3, gs/gcs, az/abfs, http(s) drivers (obstore is imported on use);
# `ocdbt` TensorStore's OCDBT databases, a read-only adapter.
from . import ocdbt, remote  # noqa: F401
from .base import Buffer, ByteRange, KvStore, validate_key, validate_prefix
from .file import FileStore
from .memory import MemoryStore
from .object_store import ObjectStore
from .ocdbt import OcdbtStore
from .url import (
    KvStoreDriver,
    OpenOptions,
    close_opened,
    discard_opened,
    finish_opened,
    fold_node_path,
    get_kvstore_driver,
    kvstore_spec,
    kvstore_spec_to_url,
    kvstore_to_url,
    normalize_kvstore_spec,
    open_kvstore,
    parse_kvstore_url,
    register_kvstore_driver,
)
from .zip import ZipStore

__all__ = [
    "Buffer",
    "ByteRange",
    "FileStore",
    "KvStore",
    "KvStoreDriver",
    "MemoryStore",
    "ObjectStore",
    "OcdbtStore",
    "OpenOptions",
    "ZipStore",
    "close_opened",
    "discard_opened",
    "finish_opened",
    "fold_node_path",
    "get_kvstore_driver",
    "kvstore_spec",
    "kvstore_spec_to_url",
    "kvstore_to_url",
    "normalize_kvstore_spec",
    "open_kvstore",
    "parse_kvstore_url",
    "register_kvstore_driver",
    "validate_key",
    "validate_prefix",
]

"""Key/value stores: the `KvStore` interface, memory/file/zip stores, and URL/spec parsing."""

from .base import Buffer, ByteRange, KvStore, validate_key, validate_prefix
from .file import FileStore
from .memory import MemoryStore
from .url import (
    KvStoreDriver,
    OpenOptions,
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
    "OpenOptions",
    "ZipStore",
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

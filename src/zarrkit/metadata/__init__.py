"""Metadata documents: v3 arrays and groups, data types and fill values, chunk grid, key encodings.

The data type, fill value, chunk grid and key encoding pieces are format-neutral so that the v2
and v1 documents can reuse them.
"""

from .chunk_grid import RegularChunkGrid
from .chunk_key_encoding import ChunkKeyEncoding
from .data_type import DataType
from .json import json_dumps, json_loads
from .names import normalize_path, validate_node_name
from .v3 import ArrayMetadataV3, GroupMetadataV3, parse_v3_node

__all__ = [
    "ArrayMetadataV3", "ChunkKeyEncoding", "DataType", "GroupMetadataV3", "RegularChunkGrid",
    "json_dumps", "json_loads", "normalize_path", "parse_v3_node", "validate_node_name",
]

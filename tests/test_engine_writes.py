"""Write paths of the engine (engine/chunk_io.py) on sharded arrays: failed writes, errors."""

import numpy as np
import pytest

import zarrkit
from zarrkit.errors import CodecError, CorruptDataError
from zarrkit.kvstore import MemoryStore

_INDEX = [{"name": "bytes", "configuration": {"endian": "little"}}]


def _sharding(chunk_shape, codecs):
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(chunk_shape), "codecs": codecs, "index_codecs": _INDEX}}


_VLEN = [{"name": "vlen-utf8", "configuration": {}}]


@pytest.mark.parametrize("codecs", [
    [_sharding([2], [_sharding([1], _VLEN)])],  # nested sharding
    [{"name": "transpose", "configuration": {"order": [0]}}, _sharding([2], _VLEN)],
], ids=["nested", "transpose"])
def test_a_bad_string_fails_the_whole_write_before_any_shard_is_stored(codecs):
    """Values were checked up front only when vlen-utf8 was the sharding codec's own serializer:
    with nested sharding or a transpose first, the shards before the bad value were stored."""
    a = zarrkit.create(MemoryStore(), shape=(8,), dtype="str", chunks=(4,), codecs=codecs,
                       fill_value="")
    a[...] = "x"
    value = np.array(["y"] * 8, dtype=object)
    value[7] = None
    with pytest.raises(CodecError, match="at 7 of the values written"):
        a[...] = value
    assert a[...].tolist() == ["x"] * 8


@pytest.mark.parametrize("location", ["start", "end"])
@pytest.mark.parametrize("stored", [b"abc", b"\xff" * 200])
def test_a_corrupt_shard_index_names_the_shard(location, stored):
    store = MemoryStore()
    a = zarrkit.create(store, shape=(8,), dtype="int32", chunks=(2,), shards=(4,),
                       index_location=location)
    a[...] = 1
    store.set("c/0", stored)
    with pytest.raises(CorruptDataError, match="^shard 'c/0': "):
        a[0] = 5  # a partial shard update reads the index
    with pytest.raises(CorruptDataError, match="^shard 'c/0': "):
        a[0:2]
    assert bytes(store.get("c/0")) == stored

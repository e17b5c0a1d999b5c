"""The root's replacement (`save` or `array(overwrite=True)` where a node is at the store's root)
survives a writer killed at any step: it is killed at each mutating call of the store in turn,
`finish_replacement` (what `zarrkit clean` runs) then finds the root whole, old or new, with no
transient node left. Where the store renames (file, memory), the old root is moved aside entry
by entry and restored if the new one was not all in; where it cannot (a mapping), the old root
is deleted only once the new one is complete, which is then always moved in."""

import itertools

import numpy as np
import pytest

import zarrkit
from zarrkit import storage
from zarrkit.kvstore import FileStore, MemoryStore
from zarrkit.kvstore.foreign import MappingStore

#: The store's methods that change it: the writer dies at one of these calls.
MUTATORS = ("set", "set_many", "replace", "replace_many", "delete", "delete_many",
            "delete_prefix", "rename_prefix", "rename_key")


class Killed(BaseException):
    """The writer killed (raised at this call and at every later change: nothing after runs)."""


def _dying(monkeypatch, cls, at):
    """Make the `at`-th (and every later) mutating call of `cls`'s stores raise Killed; the
    calls so far in a list."""
    calls = []
    for name in MUTATORS:
        real = getattr(cls, name)

        def method(self, *args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            if len(calls) >= at:
                raise Killed
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, method)
    return calls


def _finish(store):
    """What `zarrkit clean` does at the root: finish each replacement left there."""
    outcomes = [storage.finish_replacement(store, "", *parts) for parts in sorted(
        {storage.transient_parts(d) for d in store.list_dir("")[1] if storage.is_transient(d)})]
    assert [d for d in store.list_dir("")[1] if storage.is_transient(d)] == []
    return outcomes


OLD = np.arange(40, dtype="i4").reshape(8, 5)
NEW = np.arange(12, dtype="u2") * 7


def _old_root(store, kind):
    """A root of each shape: an array with directories of chunks (v3), an array whose chunk
    keys are files beside its document (v2 "." keys), a group of members (v3) with attributes."""
    if kind == "v3 array":
        zarrkit.save(store, OLD, chunks=(3, 2))
    elif kind == "v2 array":
        zarrkit.save(store, OLD, chunks=(3, 2), zarr_format=2)
    else:
        g = zarrkit.open_group(store, mode="w", zarr_format=2 if kind == "v2 group" else 3)
        g.attrs["old"] = True
        g["x"] = OLD
        g["sub/y"] = OLD[0]


def _is_old(store, kind):
    found = zarrkit.open(store, mode="r")
    if kind.endswith("array"):
        return found.shape == OLD.shape and np.array_equal(found[...], OLD)
    return (dict(found.attrs) == {"old": True} and np.array_equal(found["x"][...], OLD)
            and np.array_equal(found["sub/y"][...], OLD[0]))


def _is_new(store):
    found = zarrkit.open(store, mode="r")
    return isinstance(found, zarrkit.Array) and np.array_equal(found[...], NEW)


def _make(kind_of_store, tmp_path, n):
    if kind_of_store == "file":
        return FileStore, FileStore(str(tmp_path / f"s{n}.zarr"))
    if kind_of_store == "memory":
        return MemoryStore, MemoryStore()
    return MappingStore, MappingStore({})


@pytest.mark.parametrize("kind_of_store", ["file", "memory", "mapping"])
@pytest.mark.parametrize("kind", ["v3 array", "v2 array", "v3 group", "v2 group"])
def test_a_writer_killed_at_any_step_of_a_root_replacement(tmp_path, monkeypatch,
                                                           kind_of_store, kind):
    seen = set()
    for at in itertools.count(1):
        cls, store = _make(kind_of_store, tmp_path, at)
        _old_root(store, kind)
        with monkeypatch.context() as m:
            calls = _dying(m, cls, at)
            try:
                zarrkit.save(store, NEW, chunks=(5,))
            except Killed:
                pass
        if len(calls) < at:  # it ran to the end: every step has been a killing point
            assert _is_new(store) and _finish(store) == []
            break
        outcomes = _finish(store)
        keys = sorted(store.list_prefix(""))
        assert not any(storage.is_transient(part) for k in keys for part in k.split("/"))
        new = _is_new(store)
        assert new or _is_old(store, kind), (at, calls[-1], outcomes, keys)
        seen.add("new" if new else "old")
    assert seen == {"old", "new"}  # killed both before and after the point of no return


def test_an_old_root_moved_aside_in_part_is_put_back_and_reported(tmp_path, monkeypatch,
                                                                   capsys):
    """Killed while the old root's entries were being renamed aside: `zarrkit clean` moves them
    back (reported as the root's finished replacement) and deletes the new one."""
    from zarrkit.cli import main

    where = tmp_path / "r.zarr"
    zarrkit.save(str(where), OLD, chunks=(3, 2))
    with monkeypatch.context() as m:
        calls = []
        real = FileStore.rename_key

        def dying(self, old, new):
            calls.append(old)
            if old == "zarr.json":  # the old document last: all but it moved aside
                raise Killed
            return real(self, old, new)

        m.setattr(FileStore, "rename_key", dying)
        with pytest.raises(Killed):
            zarrkit.save(str(where), NEW, chunks=(5,))
    assert calls == ["zarr.json"]
    names = sorted(p.name for p in where.iterdir() if p.name != ".zarrkit-locks")
    assert len(names) == 3 and names[0].startswith(storage.REPLACED)
    assert names[1].startswith(storage.STAGING) and names[2] == "zarr.json"
    assert main(["clean", str(where), "--older-than", "0"]) == 0
    assert "moved in the finished replacement of /" in capsys.readouterr().out
    assert sorted(p.name for p in where.iterdir() if p.name != ".zarrkit-locks") == [
        "c", "zarr.json"]
    assert np.array_equal(zarrkit.open(str(where), mode="r")[...], OLD)

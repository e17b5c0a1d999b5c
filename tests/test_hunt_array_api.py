"""Array API and indexing against numpy (selection semantics, exception kinds) and
zarr-python 3 (its named methods): regressions found by a bug hunt."""

import numpy as np
import pytest
import zarr

import zarrkit


def _pair(shape=(7, 9), chunks=(3, 4), dtype="int32", **options):
    ref = np.arange(np.prod(shape)).astype(dtype).reshape(shape)
    a = zarrkit.create(f"memory://hunt-{np.random.randint(1 << 30)}", shape=shape, dtype=dtype,
                       chunks=chunks, **options)
    a[...] = ref
    return a, ref


def _zarr_python(ref, chunks=(3, 4)):
    z = zarr.create_array(store={}, shape=ref.shape, dtype=ref.dtype, chunks=chunks)
    z[...] = ref
    return z


def _raised(action):
    with pytest.raises(Exception) as info:
        action()
    return info.value


@pytest.mark.parametrize("index", [np.timedelta64(1), np.array(np.timedelta64(1)),
                                   np.array([1, 2], "m8[s]"), [np.timedelta64(1)]])
def test_a_duration_is_no_index_as_in_numpy(index):
    # np.timedelta64 subclasses np.signedinteger: a[np.timedelta64(1)] read row 1.
    a, ref = _pair(shape=(9,), chunks=(4,))
    assert isinstance(_raised(lambda: ref[index]), IndexError)
    for target in (a, a.oindex, a.vindex):
        with pytest.raises(zarrkit.SelectionError, match="integer|unsupported"):
            target[index]


@pytest.mark.parametrize("index, kind", [(slice(1.0, 2), TypeError), (slice("a", 2), TypeError),
                                         (slice(0, 3, 0), ValueError)])
def test_bad_slices_raise_numpy_s_kind_of_error(index, kind):
    a, ref = _pair()
    z = _zarr_python(ref)
    assert type(_raised(lambda: ref[index])) is kind
    assert type(_raised(lambda: z[index])) is kind
    for target in (a, a.oindex):
        with pytest.raises(zarrkit.SelectionError) as info:
            target[index]
        assert isinstance(info.value, kind)
        with pytest.raises(kind, match="slice"):
            target[index] = 1


@pytest.mark.parametrize("selection, value", [
    (np.s_[1], [1, 2, 3]),
    (np.s_[0:0], np.arange(3)),
    (np.s_[[]], []),
    (np.s_[[1, 2], [3, 4]], [1, 2, 3]),
    (np.s_[np.zeros((7, 9), bool)], [1, 2]),
])
def test_a_value_of_the_wrong_shape_is_a_value_error_as_in_numpy(selection, value):
    # It was a SelectionError only, an IndexError: `except ValueError` (numpy's and
    # zarr-python's kind) missed it.
    a, ref = _pair()
    assert isinstance(_raised(lambda: ref.__setitem__(selection, value)), ValueError)
    with pytest.raises(zarrkit.SelectionError, match="cannot write a value of shape") as info:
        a[selection] = value
    assert isinstance(info.value, ValueError)
    assert np.array_equal(a[...], ref)


def test_oindex_and_vindex_values_of_the_wrong_shape_are_value_errors():
    a, ref = _pair()
    assert isinstance(_raised(lambda: ref.__setitem__(([0, 1], [2, 3]), [1, 2, 3])), ValueError)
    with pytest.raises(ValueError):
        a.oindex[[0, 1], [2, 3]] = [1, 2, 3]
    with pytest.raises(ValueError):
        a.vindex[[0, 1], [2, 3]] = [1, 2, 3]
    with pytest.raises(zarrkit.SelectionError):
        a.set_orthogonal_selection(([0, 1], [2, 3]), [1, 2, 3])


@pytest.mark.parametrize("dtype, value, kind", [
    ("int32", 1 + 2j, TypeError),
    ("float64", 1 + 2j, TypeError),
    ("int32", 2 ** 40, OverflowError),
    ("uint8", -1, OverflowError),
    ("int32", float("inf"), OverflowError),
    ("int8", np.float64(200.0), OverflowError),
    ("int32", np.timedelta64(5, "s"), TypeError),
    ("int32", "abc", ValueError),
])
def test_a_value_the_data_type_cannot_hold_raises_numpy_s_kind_of_error(dtype, value, kind):
    # They were DataTypeError, a ValueError only: numpy and zarr-python raise TypeError for a
    # complex into a real array and OverflowError for an integer out of range.
    a, ref = _pair(dtype=dtype)
    assert type(_raised(lambda: ref.__setitem__(1, value))) is kind
    if not isinstance(value, np.generic):
        assert type(_raised(lambda: _zarr_python(ref).__setitem__(1, value))) is kind
    with pytest.raises(zarrkit.DataTypeError, match="cannot write") as info:
        a[1] = value
    assert isinstance(info.value, kind)
    with pytest.raises(kind):
        a.set_basic_selection(1, value)
    assert np.array_equal(a[...], ref)


def test_the_message_names_the_value_given():
    a, _ = _pair()
    with pytest.raises(TypeError, match=r"write np.timedelta64\(5,'s'\) to"):
        a[0] = np.timedelta64(5, "s")


def test_field_values_of_a_wrong_kind_raise_numpy_s_kind_of_error():
    dt = np.dtype([("a", "i2"), ("b", "f8")])
    a = zarrkit.create("memory://hunt-fields", shape=(4,), dtype=dt, chunks=(2,), zarr_format=2)
    with pytest.raises(OverflowError):
        a.set_basic_selection(0, 70000, fields="a")
    with pytest.raises(TypeError):
        a.set_basic_selection(0, 1 + 2j, fields="b")
    with pytest.raises(zarrkit.DataTypeError):
        a.set_basic_selection(0, 1 + 2j, fields="b")


def test_append_and_resize_errors_are_value_errors_as_in_zarr_python_and_numpy():
    a, ref = _pair()
    z = _zarr_python(ref)
    cases = [lambda t: t.append(np.ones((6, 1), "int32"), axis=1),
             lambda t: t.append(np.ones(9, "int32")),
             lambda t: t.resize((-1, 3))]
    for case in cases:
        assert isinstance(_raised(lambda: case(z)), ValueError)  # noqa: B023
        with pytest.raises(zarrkit.SelectionError) as info:
            case(a)
        assert isinstance(info.value, ValueError)
    # numpy's AxisError is a ValueError and an IndexError
    assert isinstance(_raised(lambda: np.concatenate([ref, ref], axis=2)), ValueError)
    with pytest.raises(ValueError, match="along axis 2"):
        a.append(np.ones((7, 1), "int32"), axis=2)
    assert a.shape == ref.shape and np.array_equal(a[...], ref)


def test_resize_to_non_integers_is_a_type_error_as_in_zarr_python():
    a, ref = _pair()
    assert isinstance(_raised(lambda: _zarr_python(ref).resize((2.5, 9))), TypeError)
    with pytest.raises(zarrkit.SelectionError, match="expected integers") as info:
        a.resize((2.5, 9))
    assert isinstance(info.value, TypeError)
    with pytest.raises(TypeError, match="islice"):
        list(a.islice(1.5, 3))
    assert a.shape == ref.shape


def _records():
    dt = np.dtype([("a", "i4"), ("b", "f8", (2,)), ("c", "S3")])
    ref = np.zeros((6, 5), dt)
    ref["a"] = np.arange(30).reshape(6, 5)
    ref["c"] = b"xy"
    a = zarrkit.create(f"memory://hunt-rec-{np.random.randint(1 << 30)}", shape=(6, 5),
                       dtype=dt, chunks=(4, 3), zarr_format=2)
    a[...] = ref
    return a, ref


def test_field_names_in_a_selection_read_and_write_as_numpy_s():
    # numpy's a["x"] and a[["x", "y"]], zarr-python's a[0:2, "x"]: they were refused as
    # "unsupported index 'a'".
    a, ref = _records()
    np.testing.assert_array_equal(a["a"], ref["a"])
    np.testing.assert_array_equal(a[["c", "a"]], ref[["c", "a"]])
    assert a[["c", "a"]].dtype.names == ("c", "a")
    np.testing.assert_array_equal(a[1:3, "b"], ref["b"][1:3])
    assert a[1, 2, "a"] == ref[1, 2]["a"]
    np.testing.assert_array_equal(a.oindex[[4, 1], "a"], ref["a"][[4, 1]])
    np.testing.assert_array_equal(a.vindex[[4, 1], [0, 3], "b"], ref["b"][[4, 1], [0, 3]])
    a["a"] = 7
    ref["a"] = 7
    a[0, "b"] = [1, 2]
    ref["b"][0] = [1, 2]
    a.oindex[[4, 1], :, "b"] = 2.5
    ref["b"][[4, 1]] = 2.5
    a.vindex[[0, 0], [1, 1], "c"] = [b"p", b"q"]  # the last write wins, as numpy's
    ref["c"][[0, 0], [1, 1]] = [b"p", b"q"]
    np.testing.assert_array_equal(a[...], ref)
    with pytest.raises(zarrkit.SelectionError, match="names its fields once"):
        a[0, "a", "b"]
    with pytest.raises(zarrkit.SelectionError, match="'x'"):
        a["x"]


def test_a_string_index_of_a_plain_array_is_refused_as_numpy_does():
    a, ref = _pair()
    assert isinstance(_raised(lambda: ref["a"]), IndexError)
    with pytest.raises(zarrkit.SelectionError, match="unsupported index 'a'"):
        a["a"]
    with pytest.raises(zarrkit.SelectionError, match="unsupported index 'a'"):
        a[0, "a"] = 1

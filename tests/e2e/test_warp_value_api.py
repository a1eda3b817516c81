"""Warp 1.19's Python-scope API of values and arrays, as NVIDIA Warp's own tests use it
(test_types.py, test_array.py, test_vec_scalar_ops.py): what vector and matrix
components are read as, their repr, Warp's exact error messages for bad
constructors, keys and assigned values, matrix rows, columns and slices, scalar
comparisons and wp.bool, NumPy's dtype protocol on the scalar types, wp.constant,
wp.full's dtype inference, NumPy arrays passed to wp.launch, and lower_bound.

Every expected value and message was read from real Warp 1.19 (warp-lang, CPU)
running the same expression; the tests that talk to the daemon take the `wp` fixture.
"""

import numpy as np
import pytest

import warpd as wpd

vec5d = wpd.types.vector(5, wpd.float64)


# ------------------------------------------------------------ components and repr

def test_components_are_warp_scalars_except_native_types():
    v = wpd.vec4d(1, 2, 3, 4)
    assert type(v[0]) is wpd.float64 and v[0].value == 1.0 and type(v.y) is wpd.float64
    assert repr(v) == "vec4d([float64(1.0), float64(2.0), float64(3.0), float64(4.0)])"
    assert str(v) == "[1.0, 2.0, 3.0, 4.0]"
    assert repr(wpd.vec3s(1, 2, 3)) == "vec3s([int16(1), int16(2), int16(3)])"
    assert repr(wpd.vec2ub(1, 2)) == "vec2ub([uint8(1), uint8(2)])"
    # float32, int32 and bool are read as Python numbers
    assert type(wpd.vec3i(1, 2, 3)[0]) is int and repr(wpd.vec3i(1, 2, 3)) == "vec3i([1, 2, 3])"
    assert type(wpd.vec3(1, 2, 3)[2]) is float and repr(wpd.vec3(1, 2, 3)) == "vec3f([1.0, 2.0, 3.0])"
    assert repr(vec5d(1, 2, 3, 4, 5)) == ("vector(length=5, dtype=float64)([float64(1.0), float64(2.0), "
                                          "float64(3.0), float64(4.0), float64(5.0)])")
    assert repr(wpd.spatial_vector(1, 2, 3, 4, 5, 6)) == \
        "vector(length=6, dtype=float32)([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])"
    assert repr(wpd.quatd(0, 0, 0, 1)) == "quatd([float64(0.0), float64(0.0), float64(0.0), float64(1.0)])"
    assert repr(wpd.transformd()[0]) == "float64(0.0)"
    assert repr(wpd.vec3d(1, 2, 3)[0:2]) == "vec2d([float64(1.0), float64(2.0)])"
    assert [repr(c) for c in wpd.vec2h(1, 2)] == ["float16(1.0)", "float16(2.0)"]
    m = wpd.mat22d(1, 2, 3, 4)
    assert type(m[1, 1]) is wpd.float64 and m[1, 1] == 4.0
    assert repr(m[1]) == "vec2d([float64(3.0), float64(4.0)])"


def test_legacy_scalar_return_types_reads_python_numbers():
    old = wpd.config.legacy_scalar_return_types
    try:
        wpd.config.legacy_scalar_return_types = True
        assert type(wpd.vec3h(1, 2, 3)[0]) is float and type(wpd.vec3s(1, 2, 3).z) is int
        assert type(wpd.mat22d(1, 2, 3, 4)[0, 1]) is float
    finally:
        wpd.config.legacy_scalar_return_types = old


def test_other_attributes_may_be_set_but_not_component_spellings():
    v = wpd.vec3(1, 2, 3)
    v.foo = 123
    assert v.foo == 123 and v == wpd.vec3(1, 2, 3)
    m = wpd.mat22h(1, 2, 3, 4)
    m.foo = "bar"
    assert m.foo == "bar"
    for name in ("xy", "ww", "w"):  # a vec3 has no w; xy is not one component
        with pytest.raises(AttributeError, match=f"^'vec3f' object has no attribute '{name}'$"):
            setattr(v, name, 1.0)
    v.x = 5
    assert v == wpd.vec3(5, 2, 3)


# ------------------------------------------------------------ constructors

def test_constructor_errors_are_warps():
    with pytest.raises(ValueError, match=r"^Invalid number of arguments in vector constructor, expected 3 "
                                         r"elements, got 2$"):
        wpd.vec3(1, 2)
    # one sequence is taken as the arguments, as Warp does
    with pytest.raises(ValueError, match=r"expected 3 elements, got 2$"):
        wpd.vec3([1, 2])
    with pytest.raises(ValueError, match=r"expected 3 elements, got 2$"):
        wpd.vec3(wpd.vec2(1, 2))
    with pytest.raises(ValueError, match=r"^Invalid number of arguments in matrix constructor, expected 4 "
                                         r"elements, got 3$"):
        wpd.mat22(1, 2, 3)
    with pytest.raises(ValueError, match=r"matrix constructor, expected 4 elements, got 3$"):
        wpd.mat22([1, 2, 3])
    with pytest.raises(TypeError, match=r"^Invalid argument in matrix constructor, expected row of length 2, "
                                        r"got \(1, 2, 3\)$"):
        wpd.mat22((1, 2, 3), (3, 4, 5))
    assert wpd.mat22([[1, 2], [3, 4]]) == ((1, 2), (3, 4))
    assert wpd.vec3([4, 5, 6]) == (4, 5, 6)
    assert wpd.vec3(wpd.vec3d(1, 2, 3)) == (1, 2, 3)  # same shape: converts the dtype


# ------------------------------------------------------------ keys and assigned values

def test_vector_keys_and_assigned_values():
    v = wpd.vec3(1, 2, 3)
    with pytest.raises(KeyError, match="Invalid key None, expected int or slice"):
        v[None]
    with pytest.raises(KeyError, match="Invalid key 1.0, expected int or slice"):
        v[1.0]
    with pytest.raises(KeyError, match="Invalid key None, expected int or slice"):
        v[None] = 0
    v1 = wpd.vec3i(1, 2, 3)
    with pytest.raises(TypeError, match=r"^Expected to assign a `int32` value but got `str` instead$"):
        v1[0] = "123.0"
    with pytest.raises(TypeError, match=r"^Expected to assign a `int32` value but got `float` instead$"):
        v1[0] = 2.5
    with pytest.raises(TypeError, match=r"^Expected to assign a `int32` value but got `float32` instead$"):
        v1[0] = wpd.float32(1)
    with pytest.raises(TypeError, match=r"^Expected to assign a slice from a sequence of `int32` values but "
                                        r"got `vec3i` instead$"):
        v1[:1] = (v1,)
    with pytest.raises(ValueError, match=r"^Can only assign sequence of same size$"):
        v1[:1] = (1, 2)
    with pytest.raises(TypeError, match=r"^Expected to assign a slice from a sequence of `int32` values but "
                                        r"got `float` instead$"):
        v1[0:2] = (1.5, 2)
    v2 = wpd.vec3h(1, 2, 3)
    with pytest.raises(TypeError, match=r"^Expected to assign a slice from a sequence of `float16` values but "
                                        r"got `vec3h` instead$"):
        v2[:1] = (v2,)
    with pytest.raises(TypeError, match=r"^Expected to assign a `float16` value but got `NoneType` instead$"):
        v2[0] = None
    # what is accepted, as in Warp
    v1[0] = wpd.int8(7)
    v1[1:3] = 4  # a scalar fills the slice
    assert v1 == (7, 4, 4)
    v1[::2] = (8, 9)
    v1[0:2] = np.array([5, 6])
    assert v1 == (5, 6, 9)
    f = wpd.vec3(1, 2, 3)
    f[0] = wpd.float64(2.5)  # floats convert between float types
    assert f == (2.5, 2, 3)


def test_matrix_keys_rows_columns_and_slices():
    m = wpd.mat22(1, 2, 3, 4)
    with pytest.raises(KeyError, match="Invalid key None, expected int or pair of ints"):
        m[None]
    with pytest.raises(KeyError, match="Invalid key None, expected int or pair of ints"):
        m[None] = 0
    with pytest.raises(KeyError, match="Invalid key, expected one or two indices, got 3"):
        m[0, 1, 2]
    with pytest.raises(KeyError, match="Invalid key, expected one or two indices, got 3"):
        m[0, 1, 2] = (0, 0)
    with pytest.raises(IndexError, match=r"^Invalid row index$"):
        m.set_row(2, (0, 0))
    with pytest.raises(IndexError, match=r"^Invalid row index$"):
        m[5]
    with pytest.raises(RuntimeError, match=r"^The provided value is expected to be a scalar but got an object "
                                           r"of shape \(2,\) instead$"):
        m[0, 0] = (1, 2)
    with pytest.raises(TypeError, match=r"^Expected to assign a `float32` value but got `str` instead$"):
        m[0, 0] = "x"
    mh = wpd.mat22h(1, 2, 3, 4)
    with pytest.raises(TypeError, match=r"^Expected to assign a `float16` value but got `str` instead$"):
        mh[0, 0] = "123.0"
    with pytest.raises(TypeError, match=r"^Expected to assign a `float16` value but got `str` instead$"):
        mh[0][0] = "123.0"
    with pytest.raises(TypeError, match=r"^Expected to assign a slice from a sequence of `float16` values but "
                                        r"got `mat22h` instead$"):
        mh[0] = (mh,)
    with pytest.raises(ValueError, match=r"^Can only assign sequence of same size$"):
        mh[0][:1] = (1, 2)

    m = wpd.mat33(1, 2, 3, 4, 5, 6, 7, 8, 9)
    assert m[0:2] == ((1, 2, 3), (4, 5, 6)) and m[0:2]._shape_ == (2, 3)
    assert m[1, 0:2] == (4, 5) and type(m[1, 0:2]) is wpd.vec2
    assert m[0:2, 2] == (3, 6)
    assert m.get_col(-1) == (3, 6, 9) and m.get_row(1) == (4, 5, 6)
    m.set_col(0, (10, 11, 12))
    m.set_row(-1, 0)
    assert m == ((10, 2, 3), (11, 5, 6), (0, 0, 0))
    with pytest.raises(IndexError, match=r"^Invalid column index$"):
        m.get_col(3)
    with pytest.raises(IndexError, match=r"^Invalid col index$"):
        m.set_col(3, 1)
    with pytest.raises(IndexError, match=r"^Invalid row index$"):
        m.get_row(-4)
    m[2] = (-7, 8, -9)
    m[:, 1] = 1
    assert m == ((10, 1, 3), (11, 1, 6), (-7, 1, -9))


def test_vector_modulo_by_a_vector():
    # C's remainder (the dividend's sign), as Warp's Python scope gives
    assert wpd.vec3(1, -2, 3) % wpd.vec3(2, 2, 2) == (1.0, -0.0, 1.0)
    assert wpd.vec3i(5, -7, 9) % wpd.vec3i(2, 2, 4) == (1, -1, 1)
    assert wpd.vec3ub(1, 254, 3) % wpd.vec3ub(2, 2, 2) == (1, 0, 1)
    with pytest.raises(RuntimeError, match=r"^Couldn't find a function 'mod' compatible with the arguments "
                                           r"'vec3i, vec3f'$"):  # Warp 1.19's words
        wpd.vec3i(1, 2, 3) % wpd.vec3(1, 1, 1)


# ------------------------------------------------------------ scalars

def test_bool_and_scalar_comparisons():
    for value, truth in ((False, False), (True, True), (0.0, False), (123, True), (0.5, True)):
        b = wpd.bool(value)
        assert bool(b) is truth and int(b) == int(truth) and float(b) == float(truth)
    with pytest.raises(OverflowError):
        wpd.float32(1.0) == 2**1024  # noqa: B015 - Warp compares float(self) with float(other)
    with pytest.raises(OverflowError):
        wpd.float64(1.0) < 2**1024  # noqa: B015
    assert (wpd.int16(1) == 2**2000) is False  # integers compare as integers
    assert wpd.int8(1) != 1.5 and wpd.int8(1) == 1.0 and wpd.int8(1) < np.float16(1.5)
    assert hash(wpd.int8(1)) == hash(1.0) and len({wpd.int8(1), 1.0}) == 1


def test_constant_takes_values_only():
    with pytest.raises(TypeError, match=r"^Invalid constant type: <class 'tuple'>$"):
        wpd.constant((1, 2, 3))
    with pytest.raises(TypeError, match=r"^Invalid constant type: <class 'str'>$"):
        wpd.constant("x")
    assert wpd.constant(wpd.vec3i(1, 2, 3)) == wpd.vec3i(1, 2, 3) and wpd.constant(1.25) == 1.25


def test_array_class_is_not_an_array_instance():
    assert wpd.types.is_array(wpd.array) is False and wpd.types.type_is_array(wpd.array) is True
    assert wpd.types.is_array(wpd.array(dtype=float)) is True


# ------------------------------------------------------------ NumPy's dtype protocol

PAIRS = ((wpd.bool, np.bool_), (wpd.int8, np.int8), (wpd.uint8, np.uint8), (wpd.int16, np.int16),
         (wpd.uint16, np.uint16), (wpd.int32, np.int32), (wpd.uint32, np.uint32), (wpd.int64, np.int64),
         (wpd.uint64, np.uint64), (wpd.float16, np.float16), (wpd.float32, np.float32),
         (wpd.float64, np.float64))


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.4.0", reason="NumPy's dtype protocol is 2.4+")
@pytest.mark.parametrize("wt,nt", PAIRS, ids=[w.__name__ for w, _ in PAIRS])
def test_numpy_dtype_protocol(wt, nt):
    assert wt.__numpy_dtype__ == np.dtype(nt) and np.dtype(wt) == np.dtype(nt)
    assert np.dtype(wt(1)) == np.dtype(nt) and not hasattr(wt, "dtype")
    values = [False, True, True] if nt is np.bool_ else [0, 1, 2]
    a = np.array(values, dtype=wt)
    assert a.dtype == np.dtype(nt) and not a.dtype.hasobject
    np.testing.assert_array_equal(a, np.array(values, dtype=nt))
    assert np.zeros(3, dtype=wt).nbytes == 3 * np.dtype(nt).itemsize
    assert np.arange(3).astype(wt).dtype == np.dtype(nt)
    for aligned in (False, True):
        assert np.dtype([("value", wt), ("tag", np.uint8)], align=aligned) == \
            np.dtype([("value", nt), ("tag", np.uint8)], align=aligned)
    assert np.dtype((wt, (2, 3))) == np.dtype((nt, (2, 3)))
    assert np.result_type(wt, np.float32) == np.result_type(nt, np.float32)


def test_numpy_dtype_of_other_types():
    assert np.dtype(wpd.bfloat16) == np.dtype(object) and not hasattr(wpd.bfloat16, "__numpy_dtype__")
    assert not hasattr(wpd.vec3, "__numpy_dtype__") and not hasattr(wpd.mat33, "__numpy_dtype__")
    assert np.asarray(wpd.float32(1.25)).dtype == np.dtype(object)  # instances are not inferred
    assert np.dtype(wpd.handle) == np.dtype(np.uint64) and wpd.handle(5).value == 5
    assert wpd.types.scalar_type(wpd.handle) is wpd.uint64


# ------------------------------------------------------------ arrays

def test_full_infers_the_dtype_numpy_infers(wp):
    a = wp.full(2, [17, 42])
    assert a.dtype is wp.types.vector(2, wp.int64)
    np.testing.assert_array_equal(a.numpy(), [[17, 42], [17, 42]])
    a = wp.full(2, [1.5, 2.5])
    assert a.dtype is wp.types.vector(2, wp.float64) and a.dtype._wp_generic_type_str_ == "vec_t"
    a = wp.full(3, np.array([1, 2], np.int8))
    assert a.dtype is wp.types.vector(2, wp.int8)
    np.testing.assert_array_equal(a.numpy(), np.tile(np.array([1, 2], np.int8), (3, 1)))
    a = wp.full(2, [[1, 2, 3], [4, 5, 6]])
    assert a.dtype is wp.types.matrix((2, 3), wp.int64) and a.dtype._wp_generic_type_str_ == "mat_t"
    np.testing.assert_array_equal(a.numpy(), [[[1, 2, 3], [4, 5, 6]]] * 2)
    with pytest.raises(ValueError, match="^Values with more than two dimensions are not supported$"):
        wp.full(2, [[[1]]])
    with pytest.raises(ValueError, match="^Failed to convert <U2 to a Warp data type$"):
        wp.full(2, "ab")
    with pytest.raises(ValueError, match="^Invalid value type for Warp array: <class 'object'>$"):
        wp.full(2, object())


@wpd.kernel
def add_one_vec3(a: wpd.array(dtype=wpd.vec3f)):
    i = wpd.tid()
    a[i] = a[i] + wpd.vec3f(1.0)


@wpd.kernel
def add_one_mat22(a: wpd.array(dtype=wpd.mat22f), b: wpd.array2d(dtype=float)):
    i = wpd.tid()
    a[i] = a[i] + wpd.mat22f(1.0) * b[i, 0]


def test_numpy_arrays_passed_to_launch(wp):
    # On the CPU Warp runs the kernel on the NumPy memory: the array holds the result after the launch.
    v = np.arange(12, dtype=np.float32).reshape(4, 3)
    wp.launch(add_one_vec3, dim=4, inputs=[v], device="cpu")
    np.testing.assert_array_equal(v, np.arange(1, 13, dtype=np.float32).reshape(4, 3))
    base = np.arange(24, dtype=np.float32)
    m = base.reshape(6, 2, 2)[::2]  # a strided view: its base changes where it points
    b = np.full((3, 1), 2.0, np.float32)
    wp.launch(add_one_mat22, dim=3, inputs=[m, b], device="cpu")
    expected = np.arange(24, dtype=np.float32).reshape(6, 2, 2)
    expected[::2] += 2.0
    np.testing.assert_array_equal(base.reshape(6, 2, 2), expected)
    np.testing.assert_array_equal(b, np.full((3, 1), 2.0))
    with pytest.raises(RuntimeError, match=r"^Could not convert array interface with typestr='<f8' to Warp "
                                           r"array with dtype=vec3f$"):
        wp.launch(add_one_vec3, dim=3, inputs=[np.zeros((3, 3))], device="cpu")
    with pytest.raises(RuntimeError, match=r"shape \(3, 2\) to Warp array with dtype=vec3f, ensure that "
                                           r"source inner shape is \(3,\)$"):
        wp.launch(add_one_vec3, dim=3, inputs=[np.zeros((3, 2), np.float32)], device="cpu")
    with pytest.raises(TypeError, match="expects a 2-D array"):
        wp.launch(add_one_mat22, dim=3, inputs=[m, np.zeros(3, np.float32)], device="cpu")
    with pytest.raises(TypeError, match="only wp.launch"):
        wp.launch(add_one_vec3, dim=3, inputs=[v], device="cpu", record_cmd=True)


@wpd.kernel
def lower_bounds(values: wpd.array(dtype=float), arr: wpd.array(dtype=float), out: wpd.array2d(dtype=int)):
    i = wpd.tid()
    out[i, 0] = wpd.lower_bound(arr, values[i])
    out[i, 1] = wpd.lower_bound(arr, 1, 3, values[i])


def test_lower_bound_stops_at_the_last_index(wp):
    arr = wp.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], dtype=float)
    values = wp.array([-0.1, 0.0, 2.5, 4.0, 5.0, 5.5, 99.0], dtype=float)
    out = wp.zeros((7, 2), dtype=int)
    wp.launch(lower_bounds, dim=7, inputs=[values, arr, out])
    # Real Warp 1.19: a value above every element gives end - 1, not end
    assert out.numpy().tolist() == [[0, 1], [0, 1], [3, 2], [4, 2], [5, 2], [5, 2], [5, 2]]


# ------------------------------------------------------------ constructors in kernels

def _compile_error(wp, kernel, inputs=()):
    with pytest.raises(wp.CompileError) as info:
        wp.launch(kernel, dim=1, inputs=list(inputs))
    return str(info.value)


def test_constructor_errors_in_kernels_are_warps(wp):
    # Warp 1.19's words (its copy messages name the target's size first)
    @wp.kernel(module="unique")
    def vec_copy_length():
        wp.types.vector(wp.types.vector(length=2, dtype=float), length=3, dtype=float)

    @wp.kernel(module="unique")
    def vec3_of_vec2():
        wp.vec3(wp.vec2(1.0, 2.0))

    @wp.kernel(module="unique")
    def vec_count():
        wp.types.vector(1.0, 2.0, length=12345)

    @wp.kernel(module="unique")
    def vec_no_length():
        wp.types.vector()

    @wp.kernel(module="unique")
    def vec_fill_no_length():
        wp.types.vector(1.0, dtype=float)

    @wp.kernel(module="unique")
    def vec_mixed():
        wp.types.vector(1.0, 2)

    @wp.kernel(module="unique")
    def vec2_of_float64(x: wp.float64):
        wp.vec2(x, x)

    @wp.kernel(module="unique")
    def vec2_fill_float64(x: wp.float64):
        wp.vec2(x)

    @wp.kernel(module="unique")
    def mat_count():
        wp.mat22(1.0, 2.0, 3.0)

    @wp.kernel(module="unique")
    def mat_copy_shape():
        wp.types.matrix(wp.mat22(), shape=(3, 3))

    @wp.kernel(module="unique")
    def mat_no_shape():
        wp.types.matrix(1.0, 2.0)

    @wp.kernel(module="unique")
    def mat_fill_float16(x: wp.float16):
        wp.types.matrix(x, shape=(2, 2), dtype=wp.float32)

    @wp.kernel(module="unique")
    def mat22_of_float64(x: wp.float64):
        wp.mat22(x, 2.0, 3.0, 4.0)

    cases = [
        (vec_copy_length, (), "incompatible vector of length 3 given when copy constructing a vector of length 2"),
        (vec3_of_vec2, (), "incompatible vector of length 3 given when copy constructing a vector of length 2"),
        (vec_count, (), "incompatible number of values given (2) when constructing a vector of length 12345"),
        (vec_no_length, (), "the `length` argument must be specified when zero-initializing a vector"),
        (vec_fill_no_length, (), "the `length` argument must be specified when filling a vector with a value"),
        (vec_mixed, (), "all values given when constructing a vector must have the same type"),
        (vec2_of_float64, (wp.float64(1.0),),
         "all values used to initialize this vector are expected to be of the type `float32`"),
        (vec2_fill_float64, (wp.float64(1.0),),
         "the value used to fill this vector is expected to be of the type `float32`"),
        (mat_count, (), "incompatible number of values given (3) when constructing a matrix of shape (2, 2)"),
        (mat_copy_shape, (), "incompatible matrix of shape (3, 3) given when copy constructing a matrix of shape (2, 2)"),
        (mat_no_shape, (), "the `shape` argument must be specified when initializing a matrix by value"),
        (mat_fill_float16, (wp.float16(1.0),),
         "the value used to fill this matrix is expected to be of the type `float32`"),
        (mat22_of_float64, (wp.float64(1.0),),
         "all values used to initialize this matrix are expected to be of the type `float32`"),
    ]
    for kernel, inputs, message in cases:
        msg = _compile_error(wp, kernel, inputs)
        assert msg.rstrip().endswith(message), (kernel.key, msg)


@wpd.kernel
def inferred_vectors(out: wpd.array(dtype=float), outi: wpd.array(dtype=int)):
    a = wpd.vec2(1.0, 2.0)
    b = wpd.types.vector(a, dtype=wpd.float16)  # length from a, converted
    c = wpd.types.vector(a)  # a copy: vec2f
    d = wpd.types.vector(a, length=2)
    e = wpd.types.vector(3, 4, 5)  # int literals: a vector of int32, as Warp infers it
    m = wpd.types.matrix(wpd.mat22(1.0, 2.0, 3.0, 4.0))  # shape from the matrix
    out[0] = float(b[1]) + c[0] + d[1] * 10.0
    out[1] = m[1, 0]
    outi[0] = e[2]  # storing it in an int array checks its type too
    outi[1] = wpd.types.vector(7, length=3)[1]


def test_vector_and_matrix_constructors_infer_length_shape_and_dtype(wp):
    out = wp.zeros(2, dtype=float)
    outi = wp.zeros(2, dtype=int)
    wp.launch(inferred_vectors, dim=1, inputs=[out, outi])
    np.testing.assert_array_equal(out.numpy(), [2.0 + 1.0 + 20.0, 3.0])
    np.testing.assert_array_equal(outi.numpy(), [5, 7])


def test_raw_pointers_are_addresses_in_this_processs_mapping(wp):
    # A local client's CPU arrays are mapped into it: ptr is where the data is here, and
    # wp.array(ptr=...) inside such an array is a view of it (Warp's wrapping idiom).
    data = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    a = wp.array(data, dtype=wp.int32)
    assert a.ptr == a.__array_interface__["data"][0]
    assert a[1].ptr == a.ptr + a.strides[0] and a[:, 2].ptr == a.ptr + 2 * a.strides[1]
    assert wp.zeros(0, dtype=float).ptr is None
    t = data.T
    at = wp.array(ptr=a.ptr, dtype=wp.int32, shape=t.shape, strides=t.strides)
    assert at.shape == t.shape and at.strides == t.strides and not at.is_contiguous
    np.testing.assert_array_equal(at.numpy(), t)
    at.fill_(7)  # the same memory
    assert (a.numpy() == 7).all()
    # A wrapped array has a gradient only when asked for, as in Warp.
    g = wp.zeros(4, dtype=float, requires_grad=True)
    assert wp.array(ptr=g.ptr, dtype=float, shape=(4,)).grad is None
    wg = wp.array(ptr=g.ptr, dtype=float, shape=(2,), requires_grad=True)
    assert wg.requires_grad and wg.grad is not None and wg.grad.shape == (2,)
    assert not np.shares_memory(wg.grad.numpy(), g.grad.numpy())
    # Values read at an address of this process, as Warp reads them.
    m = wp.array(np.arange(12, dtype=np.float32), dtype=float)
    assert wp.vec3.from_ptr(m.ptr + 4 * 4) == wp.vec3(4.0, 5.0, 6.0)
    assert wp.mat22.from_ptr(m.ptr) == wp.mat22(0.0, 1.0, 2.0, 3.0)
    with pytest.raises(RuntimeError, match="^NULL pointer exception$"):
        wp.vec3.from_ptr(0)
    # An address outside every mapped array, or a view reaching past its array: refused.
    with pytest.raises(ValueError, match="not inside a CPU array mapped into this process"):
        wp.array(ptr=12345, dtype=float, shape=(3,))
    with pytest.raises(ValueError, match="not inside a CPU array mapped into this process"):
        wp.array(ptr=m.ptr + 8, dtype=float, shape=(11,))


def test_arrays_not_mapped_have_no_pointer(wp):
    a = wp.zeros(3, dtype=float)
    a._mapping = False  # as for a client over TCP
    with pytest.raises(AttributeError, match="is not mapped into this process"):
        a.ptr
    assert not hasattr(a, "ptr")

"""Generic kernels and Warp 1.19's annotation forms: ``wp.array[T]``, ``wp.array2d[T]``,
``wp.array(dtype=Any)``, ``typing.Any``, ``wp.Float``/``wp.Scalar``/``wp.Int``,
``wp.types.vector(Any, float)``, ``wp.types.matrix((Any, Any), float)``; instances
made at launch and by ``wp.overload``; ``wp.expect_eq``/``wp.expect_neq``; and the
``wp.types`` tables and predicates Warp programs use.

Values are checked against NumPy; behaviour (which launches are accepted, what
``type_repr`` prints, what ``expect_eq`` writes) against real Warp 1.19 run by hand.
"""

from typing import Any

import numpy as np
import pytest

import warpd as wp


@wp.kernel
def scale_any(a: wp.array(dtype=Any), s: Any, out: wp.array(dtype=Any)):
    i = wp.tid()
    out[i] = a[i] * s


@wp.kernel
def add_subscripted(a: wp.array[float], b: wp.array1d[float], c: wp.array2d[wp.float64]):
    i, j = wp.tid()
    c[i, j] = wp.float64(a[i] + b[j])


@wp.kernel
def norm_generic_vec(v: wp.types.vector(Any, float), out: wp.array[float]):
    out[0] = wp.length(v)
    out[1] = float(len(v))


@wp.kernel
def mat_len(m: wp.types.matrix((Any, Any), float), out: wp.array[int]):
    out[0] = len(m)
    out[1] = len(m[0])


@wp.kernel
def float_only(x: wp.Float, out: wp.array(dtype=wp.Float)):
    out[0] = x + x


@wp.func
def twice(x: wp.Scalar):
    return x + x


@wp.kernel
def uses_generic_func(a: wp.array[wp.int64], out: wp.array[wp.int64]):
    i = wp.tid()
    out[i] = twice(a[i])


@wp.kernel
def fill_generic(out: wp.array(dtype=Any), value: Any):
    out[wp.tid()] = value


def test_generic_kernel_instances_per_argument_types(wp):
    a32 = wp.array(np.arange(5, dtype=np.float32), dtype=wp.float32)
    o32 = wp.zeros(5, dtype=wp.float32)
    wp.launch(scale_any, dim=5, inputs=[a32, 2.5, o32])
    np.testing.assert_array_equal(o32.numpy(), np.arange(5, dtype=np.float32) * np.float32(2.5))

    a64 = wp.array(np.linspace(0, 1, 7), dtype=wp.float64)
    o64 = wp.zeros(7, dtype=wp.float64)
    wp.launch(scale_any, dim=7, inputs=[a64, wp.float64(3.0), o64])
    np.testing.assert_array_equal(o64.numpy(), np.linspace(0, 1, 7) * 3.0)

    av = wp.array(np.ones((3, 3), dtype=np.float32), dtype=wp.vec3)
    ov = wp.zeros(3, dtype=wp.vec3)
    wp.launch(scale_any, dim=3, inputs=[av, 4.0, ov])
    np.testing.assert_array_equal(ov.numpy(), np.full((3, 3), 4.0, dtype=np.float32))
    # One instance per distinct binding of the generic parameters.
    assert len(scale_any._instances) == 3
    wp.launch(scale_any, dim=5, inputs=[a32, 1.0, o32])
    assert len(scale_any._instances) == 3


def test_generic_kernel_rejects_what_its_hint_does_not_take(wp):
    ints = wp.zeros(2, dtype=wp.int32)
    with pytest.raises(TypeError, match="x"):
        wp.launch(float_only, dim=1, inputs=[3, ints])
    out = wp.zeros(1, dtype=wp.float64)
    wp.launch(float_only, dim=1, inputs=[wp.float64(1.25), out])
    assert out.numpy()[0] == 2.5


def test_subscripted_array_annotations(wp):
    assert wp.array[float].dtype is wp.float32 and wp.array[float].ndim == 1
    assert wp.array2d[wp.vec3].ndim == 2 and wp.array2d[wp.vec3].dtype is wp.vec3
    a = wp.array([1.0, 2.0], dtype=float)
    b = wp.array([10.0, 20.0, 30.0], dtype=float)
    c = wp.zeros((2, 3), dtype=wp.float64)
    wp.launch(add_subscripted, dim=(2, 3), inputs=[a, b, c])
    np.testing.assert_array_equal(c.numpy(), np.add.outer([1.0, 2.0], [10.0, 20.0, 30.0]))
    # array2d(data) still makes arrays.
    d = wp.array2d(np.ones((2, 2), dtype=np.float32), dtype=float)
    assert d.shape == (2, 2)


def test_generic_vector_and_matrix_hints(wp):
    out = wp.zeros(2, dtype=float)
    v5 = wp.types.vector(5, float)(1.0, 2.0, 3.0, 4.0, 5.0)
    wp.launch(norm_generic_vec, dim=1, inputs=[v5, out])
    np.testing.assert_allclose(out.numpy(), [np.sqrt(55.0), 5.0], rtol=1e-6)
    wp.launch(norm_generic_vec, dim=1, inputs=[wp.vec2(3.0, 4.0), out])
    np.testing.assert_allclose(out.numpy(), [5.0, 2.0], rtol=1e-6)
    with pytest.raises(TypeError, match="v"):
        wp.launch(norm_generic_vec, dim=1, inputs=[wp.vec3d(1.0, 2.0, 3.0), out])
    ints = wp.zeros(2, dtype=int)
    wp.launch(mat_len, dim=1, inputs=[wp.types.matrix((2, 3), float)(), ints])
    np.testing.assert_array_equal(ints.numpy(), [2, 3])
    wp.launch(mat_len, dim=1, inputs=[wp.mat44(), ints])
    np.testing.assert_array_equal(ints.numpy(), [4, 4])


def test_generic_function_with_scalar_hint(wp):
    a = wp.array(np.array([1, -7, 2**40], dtype=np.int64), dtype=wp.int64)
    out = wp.zeros(3, dtype=wp.int64)
    wp.launch(uses_generic_func, dim=3, inputs=[a, out])
    np.testing.assert_array_equal(out.numpy(), [2, -14, 2**41])


def test_overload_makes_explicit_instances(wp):
    inst = wp.overload(fill_generic, [wp.array(dtype=wp.int16), wp.int16])
    assert inst is wp.overload(fill_generic, {"out": wp.array(dtype=wp.int16), "value": wp.int16})
    out = wp.zeros(4, dtype=wp.int16)
    wp.launch(inst, dim=4, inputs=[out, wp.int16(-3)])
    np.testing.assert_array_equal(out.numpy(), [-3] * 4)
    # A launch of the generic kernel with the same types runs that instance.
    wp.launch(fill_generic, dim=4, inputs=[out, wp.int16(9)])
    np.testing.assert_array_equal(out.numpy(), [9] * 4)
    with pytest.raises(TypeError, match="generic parameter"):
        wp.overload(fill_generic, {"out": wp.array(dtype=wp.int16)})
    with pytest.raises(TypeError, match="not generic"):
        wp.overload(uses_generic_func, [wp.array(dtype=wp.int64)] * 2)


@wp.kernel
def fill_decorated(out: wp.array(dtype=Any), value: Any):
    out[wp.tid()] = value


@wp.overload
def fill_decorated(out: wp.array(dtype=wp.uint8), value: wp.uint8):  # noqa: F811
    ...


def test_overload_decorator_keeps_the_generic_kernel(wp):
    assert isinstance(fill_decorated, wp.Kernel) and fill_decorated.is_generic
    assert len(fill_decorated._instances) == 1
    out = wp.zeros(3, dtype=wp.uint8)
    wp.launch(fill_decorated, dim=3, inputs=[out, wp.uint8(200)])
    np.testing.assert_array_equal(out.numpy(), [200] * 3)
    assert len(fill_decorated._instances) == 1


@wp.kernel
def expectations(x: float, v: wp.vec3, m: wp.mat22, n: int, flag: wp.bool):
    wp.expect_eq(x, 1.5)
    wp.expect_eq(v, wp.vec3(1.0, 2.0, 3.0))
    wp.expect_eq(m, wp.mat22(1.0, 0.0, 0.0, 1.0))
    wp.expect_neq(n, 4)
    wp.expect_eq(flag, True)
    wp.expect_eq(wp.quat(0.0, 0.0, 0.0, 1.0), wp.quat(0.0, 0.0, 0.0, 1.0))


def test_expect_eq_prints_only_when_a_check_fails(wp, capsys):
    wp.launch(expectations, dim=1, inputs=[1.5, wp.vec3(1.0, 2.0, 3.0), wp.mat22(1.0, 0.0, 0.0, 1.0), 3, True])
    wp.synchronize()
    assert capsys.readouterr().out == ""
    wp.launch(expectations, dim=1, inputs=[2.0, wp.vec3(1.0, 2.0, 4.0), wp.mat22(1.0, 0.0, 0.0, 2.0), 4, False])
    wp.synchronize()
    # Real Warp 1.19 on the CPU prints exactly this for the same launch.
    assert capsys.readouterr().out == (
        "Error, expect_eq() failed:\n\t Expected: 1.5\n\t Actual: 2\n"
        "Error, expect_eq() failed:\n\t Expected: 1 2 3 \n\t Actual: 1 2 4 \n"
        "Error, expect_eq() failed:\n\t Expected: 1 0 \n0 1 \n\t Actual: 1 0 \n0 2 \n"
        "Error, expect_neq() failed:\n\t Expected: 4\n\t Actual: 4\n"
        "Error, expect_eq() failed:\n\t Expected: True\n\t Actual: False\n")


def test_type_tables_and_predicates():
    t = wp.types
    assert t.int_types == (wp.int8, wp.uint8, wp.int16, wp.uint16, wp.int32, wp.uint32, wp.int64, wp.uint64)
    assert t.float_types == (wp.float16, wp.bfloat16, wp.float32, wp.float64)  # as Warp 1.19 orders them
    assert t.scalar_types == t.int_types + t.float_types
    for np_t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
                 np.float16, np.float32, np.float64, np.bool_):
        wt = wp.dtype_from_numpy(np_t)
        assert wp.dtype_from_numpy(np.dtype(np_t)) is wt
        assert t.np_dtype_to_warp_type[np.dtype(np_t)] is wt and t.np_dtype_to_warp_type[np_t] is wt
        assert np.dtype(wp.dtype_to_numpy(wt)) == np.dtype(np_t)
    assert wp.dtype_to_numpy(float) is np.float32
    with pytest.raises(TypeError):
        wp.dtype_from_numpy(np.complex64)
    assert t.type_repr(wp.vec3) == "vec3f" and t.type_repr(wp.mat22d) == "mat22d"
    assert t.type_repr(wp.types.vector(5, wp.float64)) == "vector(length=5, dtype=float64)"
    assert t.type_repr(wp.array[float]) == "array(ndim=1, dtype=float32)"
    assert t.type_repr(wp.quath) == "quath" and t.type_repr(wp.transformd) == "transformd"
    assert t.types_equal(float, wp.float32) and not t.types_equal(wp.float32, wp.float64)
    assert t.types_equal(wp.array[float], wp.array(dtype=wp.float32))
    assert not t.types_equal(wp.array[float], wp.array2d[float])
    assert t.type_is_vector(wp.vec3) and not t.type_is_vector(wp.mat22)
    assert t.type_is_matrix(wp.spatial_matrix) and t.type_is_quaternion(wp.quatd)
    assert t.type_is_transformation(wp.transform) and t.type_is_float(float) and t.type_is_int(wp.uint8)
    assert not t.type_is_int(wp.bool) and t.type_is_value(wp.vec2) and t.type_is_array(wp.array)
    assert t.is_vector(wp.vec3()) and not t.is_vector(wp.vec3) and t.is_matrix(wp.mat33())
    assert t.is_array(wp.array[float]) and not t.is_array(3.0)
    assert wp.types.is_generic(wp.types.matrix((Any, Any), float))
    assert wp.types.is_generic(wp.array(dtype=Any)) and not wp.types.is_generic(wp.array[float])


@wp.kernel(enable_backward=False, launch_bounds=128, module="unique")
def with_options(out: wp.array[int]):
    out[wp.tid()] = 7


def test_kernel_options_and_module_functions(wp):
    assert with_options.options == {"enable_backward": False, "launch_bounds": 128}
    assert with_options.enable_backward is False
    k = wp.Kernel(with_options.func, key="renamed")
    assert k.key == "renamed"
    wp.set_module_options({"max_unroll": 4})
    opts = wp.get_module_options()
    assert opts["max_unroll"] == 4 and opts["mode"] == "release"
    assert wp.get_module(__name__) is wp.get_module(__name__)
    # Loading ahead of time compiles the module; a launch afterwards reuses it.
    wp.load_module(with_options.module)
    wp.force_load(modules=[with_options.module])
    out = wp.zeros(3, dtype=int)
    wp.launch(with_options, dim=3, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [7, 7, 7])


@wp.func
def plain(x: float):
    return x * 2.0


@wp.func_grad(plain)
def adj_plain(x: float, adj_ret: float):
    wp.adjoint[x] += adj_ret * 2.0


@wp.func_native("return x;")
def native_snippet(x: float) -> float:
    ...


@wp.kernel(module="unique")
def calls_native(out: wp.array[float]):
    out[0] = native_snippet(1.0)


def test_custom_gradients_are_recorded_and_native_snippets_refused(wp):
    assert plain.custom_grads == [adj_plain]
    with pytest.raises(TypeError, match="@wp.func"):
        wp.func_grad(lambda x: x)
    out = wp.zeros(1, dtype=float)
    with pytest.raises(wp.CompileError, match="func_native snippet: warpd never compiles"):
        wp.launch(calls_native, dim=1, inputs=[out])
    assert isinstance(wp.CompileError("x"), wp.WarpCodegenError)


@wp.kernel
def expectations_other_dtypes(h: wp.float16, b: wp.int8, q: wp.quatd, v: wp.vec2ub, m: wp.mat22d):
    wp.expect_eq(h, wp.float16(1.5))
    wp.expect_neq(b, wp.int8(3))
    wp.expect_eq(q, wp.quatd(0.0, 0.0, 0.0, 1.0))
    wp.expect_eq(v, wp.vec2ub(wp.uint8(1), wp.uint8(2)))
    wp.expect_neq(m, wp.mat22d())


def test_expect_eq_on_half_integer_and_double_types(wp, capsys):
    wp.launch(expectations_other_dtypes, dim=1,
              inputs=[wp.float16(1.5), wp.int8(4), wp.quatd(0.0, 0.0, 0.0, 1.0), wp.vec2ub(1, 2), wp.mat22d(1.0)])
    wp.synchronize()
    assert capsys.readouterr().out == ""
    wp.launch(expectations_other_dtypes, dim=1,
              inputs=[wp.float16(2.0), wp.int8(3), wp.quatd(0.0, 0.0, 1.0, 0.0), wp.vec2ub(1, 3), wp.mat22d()])
    wp.synchronize()
    assert capsys.readouterr().out == (
        "Error, expect_eq() failed:\n\t Expected: 1.5\n\t Actual: 2\n"
        "Error, expect_neq() failed:\n\t Expected: 3\n\t Actual: 3\n"
        "Error, expect_eq() failed:\n\t Expected: 0 0 0 1\n\t Actual: 0 0 1 0\n"
        "Error, expect_eq() failed:\n\t Expected: 1 2 \n\t Actual: 1 3 \n"
        "Error, expect_neq() failed:\n\t Expected: 0 0 \n0 0 \n\t Actual: 0 0 \n0 0 \n")


def test_a_repeated_generic_launch_reuses_its_instance_without_rechecking(wp):
    a = wp.zeros(3, dtype=wp.float64)
    wp.launch(fill_generic, dim=3, inputs=[a, wp.float64(1.0)])
    seen = dict(fill_generic._by_args)
    wp.launch(fill_generic, dim=3, inputs=[a, wp.float64(2.0)])
    assert fill_generic._by_args == seen  # same identities, same instance
    np.testing.assert_array_equal(a.numpy(), [2.0] * 3)
    # A Python int and a wp.int32 bind the same instance, found through two identities.
    b = wp.zeros(2, dtype=wp.int32)
    wp.launch(fill_generic, dim=2, inputs=[b, 5])
    wp.launch(fill_generic, dim=2, inputs=[b, wp.int32(6)])
    assert fill_generic._by_args[(wp.int32, 1), int] is fill_generic._by_args[(wp.int32, 1), wp.int32]
    np.testing.assert_array_equal(b.numpy(), [6, 6])


@wp.struct
class LikeS:
    x: float
    y: int


@wp.func
def like_adder(a: Any, b: Any):
    return a + b


@wp.kernel
def construct_like_kernel(a: Any, b: Any, out: wp.array(dtype=Any)):
    c = type(a)(b)                      # b converted to a's type
    d = type(like_adder(b, b))(c)       # the type of a call's result (the call is not run)
    out[0] = type(out[0])(d)


wp.overload(construct_like_kernel, [wp.float32, wp.float64, wp.array(dtype=wp.float64)])
wp.overload(construct_like_kernel, [wp.vec3f, wp.vec3d, wp.array(dtype=wp.vec3d)])
wp.overload(construct_like_kernel, [wp.int32, wp.float32, wp.array(dtype=wp.float32)])


@wp.kernel
def dtype_like_kernel(a: wp.array(dtype=Any), out: wp.array(dtype=float)):
    zero = type(a[0])(0)
    copy = a.dtype(a[0])
    copy += zero
    out[0] = float(copy)
    s = LikeS(1.5, 2)
    t = type(s)(2.5, 3)
    out[1] = t.x + float(t.y) + s.x
    v = wp.vec3(1.0, 2.0, 3.0)
    out[2] = v.dtype(7)


wp.overload(dtype_like_kernel, [wp.array(dtype=wp.int32), wp.array(dtype=float)])
wp.overload(dtype_like_kernel, [wp.array(dtype=wp.float64), wp.array(dtype=float)])


def test_type_of_a_value_and_dtype_construct_as_in_warp():
    out = wp.zeros(1, dtype=wp.float64)
    wp.launch(construct_like_kernel, dim=1, inputs=[1.0, wp.float64(2.25), out])
    assert out.numpy()[0] == 2.25 and out.numpy().dtype == np.float64
    outv = wp.zeros(1, dtype=wp.vec3d)
    wp.launch(construct_like_kernel, dim=1, inputs=[wp.vec3f(0.0), wp.vec3d(4.0, 5.0, 6.0), outv])
    np.testing.assert_array_equal(outv.numpy(), [[4.0, 5.0, 6.0]])
    outi = wp.zeros(1, dtype=wp.float32)
    wp.launch(construct_like_kernel, dim=1, inputs=[1, 2.75, outi])  # int32(2.75) truncates, as in Warp
    assert outi.numpy()[0] == 2.0
    o = wp.zeros(3, dtype=float)
    wp.launch(dtype_like_kernel, dim=1, inputs=[wp.array([-5], dtype=wp.int32), o])
    np.testing.assert_array_equal(o.numpy(), [-5.0, 7.0, 7.0])
    wp.launch(dtype_like_kernel, dim=1, inputs=[wp.array([2.5], dtype=wp.float64), o])
    np.testing.assert_array_equal(o.numpy(), [2.5, 7.0, 7.0])


def test_overload_stubs_find_their_kernel_and_count_in_overloads(wp):
    from typing import Any

    @wp.kernel(name="named_generic_stub_target")
    def stub_target(x: Any, out: wp.array(dtype=float)):
        out[0] = float(x) * 2.0

    @wp.overload
    def stub_target(x: float, out: wp.array(dtype=float)): ...

    # The decorator returns the kernel (its name is kept), with one overload made.
    assert stub_target.key == "named_generic_stub_target" and len(stub_target.overloads) == 1
    out = wp.zeros(1, dtype=float)
    wp.launch(stub_target, dim=1, inputs=[1.5, out])
    assert out.numpy()[0] == 3.0
    wp.launch(stub_target, dim=1, inputs=[wp.int32(4), out])  # a launch makes another
    assert len(stub_target.overloads) == 2 and out.numpy()[0] == 8.0

    with pytest.raises(TypeError, match=r"Return annotations are not allowed on @wp\.overload stubs"):
        @wp.overload
        def stub_target(x: float, out: wp.array(dtype=float)) -> int: ...

    def factory(x: Any):
        return

    wp.kernel(name="factory_a")(factory)
    wp.kernel(name="factory_b")(factory)
    with pytest.raises(RuntimeError, match="Ambiguous kernel lookup"):
        @wp.overload
        def factory(x: float): ...


# ---------------------------------------------------------------- type expressions


@wp.kernel
def rebuilds(a: wp.array(dtype=Any), out: wp.array(dtype=Any), n: wp.array(dtype=int)):
    # Warp 1.19's type expressions over a generic array parameter: type(a).dtype is the
    # element type, a.dtype.dtype its scalar type, T.length its number of scalars.
    i = wp.tid()
    T = type(a).dtype
    zero = T()
    out[i] = T(a[i]) * a.dtype.dtype(2.0) + zero
    n[i] = T.length + type(a).ndim * 100


@wp.kernel
def builds_types(a: Any, out: wp.array(dtype=float)):
    v = wp.types.vector(length=3, dtype=type(a))
    m = wp.identity(n=v.length, dtype=v.dtype) * a
    out[0] = float(wp.trace(m)) + float(type(a)(0.5))


def test_type_expressions_of_parameters(wp):
    for dtype, values, length in [(wp.vec3f, np.arange(6, dtype=np.float32).reshape(2, 3), 3),
                                  (wp.mat22d, np.arange(8, dtype=np.float64).reshape(2, 2, 2), 4)]:
        a = wp.array(values, dtype=dtype)
        out = wp.zeros(2, dtype=dtype)
        n = wp.zeros(2, dtype=int)
        wp.launch(rebuilds, dim=2, inputs=[a, out, n])
        np.testing.assert_allclose(out.numpy(), 2 * values)
        assert n.numpy().tolist() == [length + 100] * 2
    out = wp.zeros(1, dtype=float)
    for x, dtype in [(2.0, wp.float32), (wp.float64(-1.5), wp.float64), (wp.float16(3.0), wp.float16)]:
        wp.launch(builds_types, dim=1, inputs=[x, out])
        assert out.numpy()[0] == pytest.approx(3 * float(x) + 0.5)


def test_type_expression_errors(wp):
    @wp.kernel(module="unique")
    def no_such_attribute(a: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        out[0] = float(type(a).dtype.shape)

    with pytest.raises(AttributeError, match=r"`shape` is not an attribute of '<class 'warpd.types.vec3f'>'"):
        wp.launch(no_such_attribute, dim=1, inputs=[wp.zeros(1, dtype=wp.vec3), wp.zeros(1, dtype=float)])

    @wp.kernel(module="unique")
    def type_as_value(a: wp.array(dtype=float), out: wp.array(dtype=float)):
        out[0] = type(a)

    with pytest.raises(wp.CompileError, match=r"type\(a\) is .* which has no value in a kernel"):
        wp.launch(type_as_value, dim=1, inputs=[wp.zeros(1, dtype=float), wp.zeros(1, dtype=float)])


def test_dtype_of_a_local_made_by_a_constructor(wp):
    # Warp 1.19 (test_type_attribute_error): v.dtype of a local whose constructor the front
    # end sees is its scalar type; an attribute a type lacks is Warp's AttributeError.
    @wp.kernel(module="unique")
    def scalar_of_local(out: wp.array(dtype=float)):
        a = wp.vec3(0.0)
        out[0] = a.dtype(2.5) + float(wp.static(len(a)))

    out = wp.zeros(1, dtype=float)
    wp.launch(scalar_of_local, dim=1, inputs=[out])
    assert out.numpy()[0] == 5.5

    @wp.kernel(module="unique")
    def no_shape():
        a = wp.vec3(0.0)
        _ = a.dtype.shape

    with pytest.raises(AttributeError, match=r"`shape` is not an attribute of '<class 'warpd.types.float32'>'"):
        wp.launch(no_shape, dim=1, inputs=[])

"""Calls as Python writes them (issue 24): keyword arguments to builtins and user
functions, default parameter values, and builtins the table names with keywords.

References are numpy or plain Python; real Warp 1.19 accepts each of these kernels
(its test_codegen.py test_call_syntax and test_func.py test_user_func_with_defaults).
"""

import math
import textwrap

import numpy as np
import pytest

import warpd as wp


@wp.kernel(module="unique")
def builtin_keywords(out: wp.array(dtype=float), m: wp.array(dtype=wp.mat44)):
    out[0] = wp.pow(x=2.0, y=4.0)
    out[1] = wp.pow(2.0, y=3.0)
    out[2] = wp.pow(y=2.0, x=3.0)
    out[3] = wp.clamp(x=5.0, low=0.0, high=2.0)
    out[4] = wp.atan2(x=1.0, y=2.0)
    out[5] = wp.lerp(a=1.0, b=3.0, t=0.25)
    pos = wp.vec3(1.0, 2.0, 3.0)
    rot = wp.quat(0.0, 0.0, 0.0, 1.0)
    scale = wp.vec3(2.0, 3.0, 4.0)
    m[0] = wp.transform_compose(position=pos, rotation=rot, scale=scale)
    m[1] = wp.transform_compose(pos, scale=scale, rotation=rot)


def test_builtins_take_keyword_arguments_by_parameter_name(wp):
    out = wp.zeros(6, dtype=float)
    m = wp.zeros(2, dtype=wp.mat44)
    wp.launch(builtin_keywords, dim=1, inputs=[out, m])
    np.testing.assert_allclose(out.numpy(), [16.0, 8.0, 9.0, 2.0, math.atan2(2.0, 1.0), 1.5], rtol=1e-6)
    # Identity rotation: the matrix is scale on the diagonal and the position in the last column.
    want = np.diag([2.0, 3.0, 4.0, 1.0]).astype(np.float32)
    want[:3, 3] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(m.numpy()[0], want)
    np.testing.assert_array_equal(m.numpy()[1], want)


def load(tmp_path, name, src):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(src))
    ns = {"__name__": name}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    return ns


@pytest.mark.parametrize("call, message", [
    ("wp.pow(2.0, z=4.0)", r"pow\(\) has no overload with 2 parameters named by the keywords z"),
    ("wp.pow(x=2.0, x=4.0)", None),  # a SyntaxError in Python itself
    ("wp.pow(2.0, x=4.0)", r"pow\(\) has no overload"),
])
def test_keyword_mistakes_are_compile_errors(wp, tmp_path, call, message):
    src = f"""
        import warpd as wp

        @wp.kernel
        def k(out: wp.array(dtype=float)):
            out[0] = {call}
        """
    if message is None:
        with pytest.raises(SyntaxError):
            load(tmp_path, "kw_dup_mod", src)
        return
    ns = load(tmp_path, f"kw_mod_{abs(hash(call))}", src)
    with pytest.raises(wp.CompileError, match=message):
        wp.launch(ns["k"], dim=1, inputs=[wp.zeros(1, dtype=float)])


@wp.func
def with_defaults(a: int = 123, b: int = 234) -> int:
    return a + b


@wp.func
def scaled(x: float, scale: float = 2.0, v: wp.vec3 = wp.vec3(1.0, 2.0, 3.0)):
    return x * scale + v[1]


@wp.kernel(module="unique")
def user_calls(out: wp.array(dtype=int), fo: wp.array(dtype=float)):
    out[0] = with_defaults()
    out[1] = with_defaults(111)
    out[2] = with_defaults(111, 222)
    out[3] = with_defaults(a=111)
    out[4] = with_defaults(b=111)
    out[5] = with_defaults(b=1, a=2)
    fo[0] = scaled(1.0)
    fo[1] = scaled(1.0, scale=3.0)
    fo[2] = scaled(x=1.0, v=wp.vec3(0.0, 10.0, 0.0))
    fo[3] = scaled(4.0, 0.5, wp.vec3(0.0, -1.0, 0.0))


def test_user_functions_take_keywords_and_defaults_as_python_binds_them(wp):
    out = wp.zeros(6, dtype=int)
    fo = wp.zeros(4, dtype=float)
    wp.launch(user_calls, dim=1, inputs=[out, fo])
    py = with_defaults  # the same function in Python scope is the reference
    np.testing.assert_array_equal(out.numpy(), [py(), py(111), py(111, 222), py(a=111), py(b=111), py(b=1, a=2)])
    np.testing.assert_allclose(fo.numpy(), [1.0 * 2.0 + 2.0, 1.0 * 3.0 + 2.0, 1.0 * 2.0 + 10.0, 4.0 * 0.5 - 1.0])


def test_a_call_python_would_refuse_is_a_compile_error(wp, tmp_path):
    ns = load(tmp_path, "bad_binding_mod", """
        import warpd as wp

        @wp.func
        def f(a: int, b: int = 2) -> int:
            return a + b

        @wp.kernel
        def k(out: wp.array(dtype=int)):
            out[0] = f(b=1)
        """)
    with pytest.raises(wp.CompileError, match=r"'f' cannot be called with these arguments: missing a required argument: 'a'"):
        wp.launch(ns["k"], dim=1, inputs=[wp.zeros(1, dtype=int)])


def test_kernel_parameters_cannot_have_defaults(wp, tmp_path):
    ns = load(tmp_path, "kernel_default_mod", """
        import warpd as wp

        @wp.kernel
        def k(out: wp.array(dtype=int), n: int = 3):
            out[0] = n
        """)
    with pytest.raises(wp.CompileError, match="kernel parameters cannot have default values"):
        wp.launch(ns["k"], dim=1, inputs=[wp.zeros(1, dtype=int), 1])


@wp.kernel(module="unique")
def spatial_and_arg(out: wp.array(dtype=wp.spatial_vector), od: wp.array(dtype=wp.spatial_vectord),
                    idx: wp.array(dtype=wp.uint32), v: wp.array(dtype=wp.vec4)):
    out[0] = wp.spatial_vector(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, dtype=wp.float32)
    out[1] = wp.spatial_vector(wp.vec3(1.0, 2.0, 3.0), wp.vec3(4.0, 5.0, 6.0), dtype=wp.float32)
    out[2] = wp.spatial_vector(dtype=wp.float32)
    od[0] = wp.spatial_vector(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, dtype=wp.float64)
    # argmax/argmin in a module that uses no matrix type (their native code must still be there)
    idx[0] = wp.argmax(v[0])
    idx[1] = wp.argmin(v[0])
    idx[2] = wp.argmax(wp.vec3i(3, 5, -2))
    idx[3] = wp.argmin(wp.vec3i(3, 5, -2))


def test_spatial_vector_dtype_keyword_and_argmax_argmin(wp):
    out = wp.zeros(3, dtype=wp.spatial_vector)
    od = wp.zeros(1, dtype=wp.spatial_vectord)
    idx = wp.zeros(4, dtype=wp.uint32)
    vals = np.array([[0.5, -3.0, 7.0, 7.0]], dtype=np.float32)
    wp.launch(spatial_and_arg, dim=1, inputs=[out, od, idx, wp.array(vals, dtype=wp.vec4)])
    seq = np.arange(1.0, 7.0)
    np.testing.assert_array_equal(out.numpy(), [seq, seq, np.zeros(6)])
    np.testing.assert_array_equal(od.numpy(), [seq])
    assert od.numpy().dtype == np.float64
    # first occurrence wins, as numpy's argmax/argmin
    np.testing.assert_array_equal(idx.numpy(), [np.argmax(vals[0]), np.argmin(vals[0]),
                                                np.argmax([3, 5, -2]), np.argmin([3, 5, -2])])


@wp.struct
class Complex:
    real: float
    imag: float


@wp.struct
class Tagged:
    a: int
    v: wp.vec3
    b: float


@wp.func
def add(a: Complex, b: Complex):
    return Complex(a.real + b.real, a.imag + b.imag)


@wp.func
def mul(a: Complex, b: Complex):
    return Complex(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real)


@wp.func
def neg(a: Complex):
    return Complex(imag=-a.imag, real=-a.real)


@wp.kernel(module="unique")
def struct_ctors_and_operators(out: wp.array(dtype=float), tagged: wp.array(dtype=Tagged)):
    x = Complex(1.0, 2.0)
    y = Complex(real=3.0, imag=4.0)
    s = x + y                      # user add
    p = x * y                      # user mul
    n = -x                         # user neg
    z = x
    z += y                         # x = x + y: user add
    out[0] = s.real
    out[1] = s.imag
    out[2] = p.real
    out[3] = p.imag
    out[4] = n.real
    out[5] = n.imag
    out[6] = z.real + z.imag
    # operators on other types still mean the builtins
    out[7] = 2.0 * 3.0 + 1.0
    m = wp.mat22(1.0, 2.0, 3.0, 4.0) * wp.vec2(1.0, 1.0)
    out[8] = m[1]
    tagged[0] = Tagged(7, wp.vec3(1.0, 2.0, 3.0), 0.5)
    tagged[1] = Tagged(b=2.5)      # the other members are zero
    tagged[2] = Tagged(1, b=3.0)


def test_struct_constructors_and_user_operator_overloads(wp):
    out = wp.zeros(9, dtype=float)
    tagged = wp.zeros(3, dtype=Tagged)
    wp.launch(struct_ctors_and_operators, dim=1, inputs=[out, tagged])
    x, y = complex(1.0, 2.0), complex(3.0, 4.0)
    want = [(x + y).real, (x + y).imag, (x * y).real, (x * y).imag, -x.real, -x.imag, (x + y).real + (x + y).imag,
            7.0, 7.0]
    np.testing.assert_allclose(out.numpy(), want)
    t = tagged.numpy()
    assert [int(t[i]["a"]) for i in range(3)] == [7, 0, 1]
    np.testing.assert_array_equal([t[i]["b"] for i in range(3)], [0.5, 2.5, 3.0])
    np.testing.assert_array_equal(t[0]["v"], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(t[1]["v"], [0.0, 0.0, 0.0])


def test_struct_constructor_mistakes_are_compile_errors(wp, tmp_path):
    for call, message in [("Complex(1.0, 2.0, 3.0)", r"takes at most 2 arguments"),
                          ("Complex(rael=1.0)", r"has no member 'rael'"),
                          ("Complex(1.0, real=2.0)", r"multiple values for member 'real'"),
                          ("Complex(1, 2.0)", None),     # a literal adapts to the member's type
                          ("Complex(wp.int32(1), 2.0)", r"member 'real' is float32, got int32")]:
        name = f"ctor_mod_{abs(hash(call))}"
        ns = load(tmp_path, name, f"""
            import warpd as wp

            @wp.struct
            class Complex:
                real: float
                imag: float

            @wp.kernel
            def k(out: wp.array(dtype=float)):
                c = {call}
                out[0] = c.real
            """)
        out = wp.zeros(1, dtype=float)
        if message is None:
            wp.launch(ns["k"], dim=1, inputs=[out])
            assert out.numpy()[0] == 1.0
            continue
        with pytest.raises(wp.CompileError, match=message):
            wp.launch(ns["k"], dim=1, inputs=[out])


@wp.kernel(module="unique")
def spread_arguments(arr: wp.array(dtype=int), out: wp.array(dtype=wp.vec3i), o2: wp.array(dtype=float),
                     o3: wp.array(dtype=int), om: wp.array(dtype=wp.mat22)):
    out[0] = wp.vec3i(*arr[:3])
    out[1] = wp.vec3i(*arr[2:8:2])
    o3[0] = wp.max(*arr[:2])
    v = wp.vec2(5.0, 10.0)
    o2[0] = wp.max(*v)
    w = wp.vec2(*v)
    o2[1] = w[0]
    m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    o2[2] = wp.dot(*m)                          # rows
    v4 = wp.vec4(1.0, 2.0, 3.0, 4.0)
    o2[3] = wp.vec2(*v4[-2:])[0]
    q = wp.quat(1.0, 2.0, 3.0, 4.0)
    o2[4] = wp.vec2(*q[:-2])[1]
    m3 = wp.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    om[0] = wp.matrix_from_rows(*m3[-2:, :2])


def test_starred_arguments_spread_vectors_matrices_and_constant_array_slices(wp):
    arr = wp.array(np.arange(1, 10), dtype=int)
    out = wp.zeros(2, dtype=wp.vec3i)
    o2 = wp.zeros(5, dtype=float)
    o3 = wp.zeros(1, dtype=int)
    om = wp.zeros(1, dtype=wp.mat22)
    wp.launch(spread_arguments, dim=1, inputs=[arr, out, o2, o3, om])
    a = np.arange(1, 10)
    np.testing.assert_array_equal(out.numpy(), [a[:3], a[2:8:2]])
    assert o3.numpy()[0] == max(a[:2])
    np.testing.assert_array_equal(o2.numpy(), [10.0, 5.0, 1.0 * 3.0 + 2.0 * 4.0, 3.0, 2.0])
    m3 = np.arange(1.0, 10.0).reshape(3, 3)
    np.testing.assert_array_equal(om.numpy()[0], m3[-2:, :2])


@pytest.mark.parametrize("body, message", [
    ("v = wp.vec3i(*arr[:n])", "Slice component must be a compile-time constant"),
    ("v = wp.vec3i(*arr[0:])", "requires explicit upper bound"),
    ("v = wp.vec3i(*n)", "Starred expressions are only supported for"),
    ("v = wp.vec3i(*arr[:-3])", "cannot be negative for arrays"),
    ("v = wp.vec2(*wp.vec3(1.0, 2.0, 3.0)[:2])", "needs x to be a variable"),
])
def test_starred_argument_mistakes_are_compile_errors(wp, tmp_path, body, message):
    ns = load(tmp_path, f"spread_err_{abs(hash(body))}", f"""
        import warpd as wp

        @wp.kernel
        def k(arr: wp.array(dtype=int), n: int):
            {body}
        """)
    with pytest.raises(wp.CompileError, match=message):
        wp.launch(ns["k"], dim=1, inputs=[wp.zeros(10, dtype=int), 3])


vec7 = wp.types.vector(7, float)


@wp.kernel(module="unique")
def transform_forms(out: wp.array(dtype=wp.transformd), o7: wp.array(dtype=vec7),
                    om: wp.array(dtype=wp.mat44d), od: wp.array(dtype=wp.vec3d), oc: wp.array(dtype=wp.vec2)):
    p = wp.vec3d(1.0, 2.0, 3.0)
    q = wp.quatd(0.0, 0.0, 0.0, 1.0)
    out[0] = wp.transformd(p=p, q=q)
    out[1] = wp.transformd(p=p)                 # q: the identity
    out[2] = wp.transformd(wp.float64(1.5))     # every component
    out[3] = wp.transformd(p, q=q)
    t = wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat(0.0, 0.0, 0.0, 1.0))
    o7[0] = t[:]
    o7[1] = vec7(t[-1], t[5], t[4], t[3], t[2], t[1], t[0])
    # float64 forms of the compose/decompose family (Warp's registry lists float32 only)
    m = wp.transform_compose(p, q, wp.vec3d(2.0, 3.0, 4.0))
    om[0] = m
    om[1] = wp.transform_to_matrix(out[0])
    pos, rot, scale = wp.transform_decompose(m)
    od[0] = pos
    od[1] = scale
    out[4] = wp.transform_from_matrix(om[1])
    # curlnoise with Warp's defaults (octaves=1, lacunarity=2.0, gain=0.5)
    s = wp.rand_init(3)
    oc[0] = wp.curlnoise(s, wp.vec2(0.3, 0.7))
    oc[1] = wp.curlnoise(s, wp.vec2(0.3, 0.7), wp.uint32(1), 2.0, 0.5)
    oc[2] = wp.curlnoise(s, wp.vec2(0.3, 0.7), wp.uint32(2))
    oc[3] = wp.curlnoise(s, wp.vec2(0.3, 0.7), wp.uint32(2), 2.0, 0.5)


def test_transform_constructors_slices_float64_forms_and_curlnoise_defaults(wp):
    out = wp.zeros(5, dtype=wp.transformd)
    o7 = wp.zeros(2, dtype=vec7)
    om = wp.zeros(2, dtype=wp.mat44d)
    od = wp.zeros(2, dtype=wp.vec3d)
    oc = wp.zeros(4, dtype=wp.vec2)
    wp.launch(transform_forms, dim=1, inputs=[out, o7, om, od, oc])
    t = out.numpy()
    want = [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]
    np.testing.assert_array_equal(t[0], want)
    np.testing.assert_array_equal(t[1], want)
    np.testing.assert_array_equal(t[2], [1.5] * 7)
    np.testing.assert_array_equal(t[3], want)
    np.testing.assert_array_equal(t[4], want)
    np.testing.assert_array_equal(o7.numpy(), [want, want[::-1]])
    m = np.diag([2.0, 3.0, 4.0, 1.0])
    m[:3, 3] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(om.numpy()[0], m)
    m1 = np.eye(4)
    m1[:3, 3] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(om.numpy()[1], m1)
    np.testing.assert_allclose(od.numpy(), [[1.0, 2.0, 3.0], [2.0, 3.0, 4.0]], rtol=1e-12)
    c = oc.numpy()
    np.testing.assert_array_equal(c[0], c[1])  # the defaults are Warp's
    np.testing.assert_array_equal(c[2], c[3])
    assert np.isfinite(c).all() and not np.array_equal(c[0], c[2])

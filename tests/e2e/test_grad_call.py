"""wp.grad(f)(args) in forward code (Warp 1.19): the gradient of a user function or
a differentiable builtin, computed by the function's adjoint on the daemon.

References: closed forms, central finite differences of the same functions run
forward in float64, and values printed by real Warp 1.19 for the seeding rules
(an adjoint of one in every component of the result; a quaternion's is quat(1) =
(1, 0, 0, 0)) and for its rule that a function calling wp.grad() passes no
gradient back."""

import math

import numpy as np
import pytest

import warpd as wpd


@wpd.func
def square(x: float):
    return x * x


@wpd.func
def two(x: float, y: float):
    return x * y + wpd.sin(x)


@wpd.func
def scaled(v: wpd.vec3, s: float):
    return v * s


@wpd.func
def with_int(x: float, n: int):
    return x * float(n)


@wpd.func
def pair(x: float, y: float):
    return x * y, x + y


@wpd.func
def as_mat(s: float):
    return wpd.mat22(s, 2.0 * s, 3.0 * s, 4.0 * s)


@wpd.func
def as_quat(s: float):
    return wpd.quat(s, 2.0 * s, 3.0 * s, 4.0 * s)


@wpd.func
def as_transform(s: float):
    return wpd.transform(wpd.vec3(s, 2.0 * s, 3.0 * s), wpd.quat(s, 2.0 * s, 3.0 * s, 4.0 * s))


@wpd.func
def looped(x: wpd.float64, y: wpd.float64, n: int) -> wpd.float64:
    # a dynamic loop, a branch and nested builtins: its adjoint replays all of them
    s = wpd.float64(0.0)
    for k in range(n):
        if x > y:
            s = s + wpd.sin(x * wpd.float64(k + 1)) * y
        else:
            s = s + wpd.exp(wpd.float64(0.1) * x) * wpd.cos(y * wpd.float64(k))
    return s * s + wpd.atan2(y, x)


@wpd.kernel(enable_backward=False)
def user_functions(x: wpd.array(dtype=float), out: wpd.array(dtype=float), outv: wpd.array(dtype=wpd.vec3)):
    i = wpd.tid()
    v = x[i]
    out[i * 12 + 0] = wpd.grad(square)(v)
    a, b = wpd.grad(two)(v, 5.0)
    out[i * 12 + 1] = a
    out[i * 12 + 2] = b
    gv, gs = wpd.grad(scaled)(wpd.vec3(1.0, 2.0, 3.0), v)
    outv[i] = gv
    out[i * 12 + 3] = gs
    gx, gn = wpd.grad(with_int)(v, 3)
    out[i * 12 + 4] = gx
    out[i * 12 + 5] = float(gn)
    p, q = wpd.grad(pair)(v, 5.0)
    out[i * 12 + 6] = p
    out[i * 12 + 7] = q
    out[i * 12 + 8] = wpd.grad(as_mat)(v)
    out[i * 12 + 9] = wpd.grad(as_quat)(v)
    out[i * 12 + 10] = wpd.grad(as_transform)(v)
    t = wpd.grad(two)(v, 5.0)
    out[i * 12 + 11] = t[1]


def test_user_functions_scalars_vectors_tuples_and_seeds(wp):
    xs = np.array([0.5, 1.0, 2.0, -1.5], dtype=np.float32)
    n = len(xs)
    out = wp.zeros(n * 12, dtype=float)
    outv = wp.zeros(n, dtype=wp.vec3)
    wp.launch(user_functions, dim=n, inputs=[wp.array(xs), out, outv])
    got = out.numpy().reshape(n, 12)
    x = xs.astype(np.float64)
    np.testing.assert_allclose(got[:, 0], 2 * x, rtol=1e-6)
    np.testing.assert_allclose(got[:, 1], 5.0 + np.cos(x), rtol=1e-5)  # d(xy + sin x)/dx
    np.testing.assert_allclose(got[:, 2], x, rtol=1e-6)                 # d/dy
    np.testing.assert_allclose(outv.numpy(), np.repeat(x[:, None], 3, axis=1), rtol=1e-6)  # s * ones
    np.testing.assert_allclose(got[:, 3], 6.0)                          # dot(v, ones)
    np.testing.assert_allclose(got[:, 4], 3.0)
    np.testing.assert_allclose(got[:, 5], 0.0)                          # an int argument: 0
    np.testing.assert_allclose(got[:, 6], 5.0 + 1.0)                    # both results seeded: y + 1
    np.testing.assert_allclose(got[:, 7], x + 1.0, rtol=1e-6)
    # Real Warp 1.19 at s = 1: 10 (every matrix component seeded), 1 (quat(1) seeds x only), 16.
    np.testing.assert_allclose(got[:, 8], 10.0)
    np.testing.assert_allclose(got[:, 9], 1.0)
    np.testing.assert_allclose(got[:, 10], 16.0)
    np.testing.assert_allclose(got[:, 11], x, rtol=1e-6)


@wpd.kernel(enable_backward=False)
def builtins_kernel(x: wpd.array(dtype=float), out: wpd.array(dtype=float), outv: wpd.array(dtype=wpd.vec3),
                    outm: wpd.array(dtype=wpd.mat22), out64: wpd.array(dtype=wpd.float64)):
    i = wpd.tid()
    v = x[i]
    b, a = wpd.grad(wpd.atan2)(1.0, v)
    out[i * 10 + 0] = b
    out[i * 10 + 1] = a
    p, q = wpd.grad(wpd.pow)(wpd.abs(v) + 1.0, 3.0)
    out[i * 10 + 2] = p
    out[i * 10 + 3] = q
    m = wpd.grad(wpd.min)(v, 0.75)
    out[i * 10 + 4] = m[0]
    out[i * 10 + 5] = m[1]
    out[i * 10 + 6] = wpd.grad(wpd.abs)(v - v)  # Warp: d|x|/dx at 0 is 1
    out[i * 10 + 7] = wpd.grad(wpd.length)(wpd.vec3(3.0 * v, 4.0, 0.0))[0]
    da, db = wpd.grad(wpd.dot)(wpd.vec3(1.0, 2.0, 3.0), wpd.vec3(v, 5.0, 6.0))
    outv[i * 2 + 0] = da
    outv[i * 2 + 1] = db
    ga, gb = wpd.grad(wpd.mul)(wpd.mat22(1.0, 2.0, 3.0, 4.0), wpd.mat22(v, 0.0, 1.0, 1.0))
    outm[i * 2 + 0] = ga
    outm[i * 2 + 1] = gb
    out[i * 10 + 8] = wpd.grad(wpd.determinant)(wpd.mat22(1.0, 2.0, 3.0, v))[0, 1]
    out64[i] = wpd.grad(wpd.sin)(wpd.float64(v))
    g = wpd.grad(wpd.sqrt)
    out[i * 10 + 9] = g(wpd.abs(v) + 1.0)


def test_builtins_against_closed_forms(wp):
    xs = np.array([0.5, 1.0, 2.0, -1.5], dtype=np.float32)
    n = len(xs)
    out = wp.zeros(n * 10, dtype=float)
    outv = wp.zeros(n * 2, dtype=wp.vec3)
    outm = wp.zeros(n * 2, dtype=wp.mat22)
    out64 = wp.zeros(n, dtype=wp.float64)
    wp.launch(builtins_kernel, dim=n, inputs=[wp.array(xs), out, outv, outm, out64])
    got = out.numpy().reshape(n, 10)
    x = xs.astype(np.float64)
    np.testing.assert_allclose(got[:, 0], x / (x * x + 1), rtol=1e-5)   # d atan2(y, x)/dy at y = 1
    np.testing.assert_allclose(got[:, 1], -1 / (x * x + 1), rtol=1e-5)  # d/dx
    base = np.abs(x) + 1
    np.testing.assert_allclose(got[:, 2], 3 * base ** 2, rtol=1e-5)
    np.testing.assert_allclose(got[:, 3], base ** 3 * np.log(base), rtol=1e-5)
    np.testing.assert_allclose(got[:, 4], (x < 0.75).astype(float))
    np.testing.assert_allclose(got[:, 5], (x >= 0.75).astype(float))
    np.testing.assert_allclose(got[:, 6], 1.0)
    np.testing.assert_allclose(got[:, 7], 3 * x / np.sqrt(9 * x * x + 16), rtol=1e-5)
    vecs = outv.numpy().reshape(n, 2, 3)
    np.testing.assert_allclose(vecs[:, 0], np.stack([x, np.full(n, 5.0), np.full(n, 6.0)], axis=1), rtol=1e-6)
    np.testing.assert_allclose(vecs[:, 1], np.tile([1.0, 2.0, 3.0], (n, 1)))
    mats = outm.numpy().reshape(n, 2, 2, 2)
    A = np.array([[1.0, 2.0], [3.0, 4.0]])
    ones = np.ones((2, 2))
    for k in range(n):
        B = np.array([[x[k], 0.0], [1.0, 1.0]])
        np.testing.assert_allclose(mats[k, 0], ones @ B.T, rtol=1e-6)   # d sum(AB)/dA
        np.testing.assert_allclose(mats[k, 1], A.T @ ones, rtol=1e-6)   # d sum(AB)/dB
    np.testing.assert_allclose(got[:, 8], -3.0)                          # cofactor of a01
    np.testing.assert_allclose(out64.numpy(), np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(got[:, 9], 0.5 / np.sqrt(base), rtol=1e-5)


@wpd.kernel(enable_backward=False)
def looped_grad(x: wpd.array(dtype=wpd.float64), y: wpd.array(dtype=wpd.float64), n: int,
                gx: wpd.array(dtype=wpd.float64), gy: wpd.array(dtype=wpd.float64)):
    i = wpd.tid()
    a, b, _gn = wpd.grad(looped)(x[i], y[i], n)
    gx[i] = a
    gy[i] = b


@wpd.kernel(enable_backward=False)
def looped_value(x: wpd.array(dtype=wpd.float64), y: wpd.array(dtype=wpd.float64), n: int,
                 out: wpd.array(dtype=wpd.float64)):
    i = wpd.tid()
    out[i] = looped(x[i], y[i], n)


def test_loops_and_branches_against_finite_differences(wp):
    rng = np.random.default_rng(3)
    xs = rng.uniform(-1.5, 1.5, 16)
    ys = rng.uniform(-1.5, 1.5, 16)
    n = 4
    gx, gy = wp.zeros(16, dtype=wp.float64), wp.zeros(16, dtype=wp.float64)
    wp.launch(looped_grad, dim=16, inputs=[wp.array(xs, dtype=wp.float64), wp.array(ys, dtype=wp.float64), n, gx, gy])

    def value(a, b):
        out = wp.zeros(16, dtype=wp.float64)
        wp.launch(looped_value, dim=16, inputs=[wp.array(a, dtype=wp.float64), wp.array(b, dtype=wp.float64), n, out])
        return out.numpy()

    h = 1e-6
    fd_x = (value(xs + h, ys) - value(xs - h, ys)) / (2 * h)
    fd_y = (value(xs, ys + h) - value(xs, ys - h)) / (2 * h)
    np.testing.assert_allclose(gx.numpy(), fd_x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gy.numpy(), fd_y, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------ locals bound to wp.grad


@wpd.func
def grad_inside(x: float):
    d = wpd.grad(square)(x)
    return x + d


@wpd.kernel(enable_backward=False)
def bound_locals(x: wpd.array(dtype=float), out: wpd.array(dtype=float)):
    i = wpd.tid()
    g = wpd.grad(square)
    wpd.expect_eq(g(x[i]), wpd.grad(square)(x[i]))
    out[i * 5 + 0] = g(x[i])
    f = two
    h = wpd.grad(f)
    a, b = h(x[i], 3.0)
    out[i * 5 + 1] = a
    out[i * 5 + 2] = b
    out[i * 5 + 3] = grad_inside(x[i])
    out[i * 5 + 4] = wpd.static(wpd.grad(square))(x[i] + 1.0)


def test_locals_bound_to_grad_and_grad_in_functions(wp, capfd):
    xs = np.array([0.0, 1.0, 3.0], dtype=np.float32)
    out = wp.zeros(15, dtype=float)
    wp.launch(bound_locals, dim=3, inputs=[wp.array(xs), out])
    got = out.numpy().reshape(3, 5)
    x = xs.astype(np.float64)
    np.testing.assert_allclose(got[:, 0], 2 * x)
    np.testing.assert_allclose(got[:, 1], 3.0 + np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(got[:, 2], x)
    np.testing.assert_allclose(got[:, 3], 3 * x)
    np.testing.assert_allclose(got[:, 4], 2 * (x + 1))
    wp.synchronize()
    assert "expect_eq" not in capfd.readouterr().out


@wpd.func
def safe_sqrt(x: float):
    return wpd.sqrt(x)


@wpd.func_grad(safe_sqrt)
def adj_safe_sqrt(x: float, adj_ret: float):
    if x > 0.0:
        wpd.adjoint[x] += wpd.grad(wpd.sqrt)(x) * adj_ret


@wpd.kernel
def safe_sqrt_kernel(x: wpd.array(dtype=float), y: wpd.array(dtype=float)):
    i = wpd.tid()
    y[i] = safe_sqrt(x[i])


def test_grad_inside_a_custom_gradient(wp):
    xs = np.array([1.0, 2.0, 3.0, 4.0, 0.0], dtype=np.float32)
    x = wp.array(xs, requires_grad=True)
    y = wp.zeros_like(x, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(safe_sqrt_kernel, dim=5, inputs=[x, y])
    tape.backward(grads={y: wp.array(np.ones(5, dtype=np.float32))})
    want = np.zeros(5)
    want[:4] = 0.5 / np.sqrt(xs[:4])
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)


@wpd.func
def calls_grad(x: float):
    return x * x + wpd.grad(square)(x)


@wpd.kernel
def backward_through_grad(x: wpd.array(dtype=float), y: wpd.array(dtype=float)):
    i = wpd.tid()
    y[i] = calls_grad(x[i]) + wpd.grad(square)(x[i]) * x[i] + wpd.sin(x[i])


def test_backward_treats_grad_as_constant_as_warp_does(wp):
    # Real Warp 1.19 (x = 3, without the sin): y = 33 and dy/dx = 6: the grad() result is a
    # constant (d(6 * x)/dx = 6) and calls_grad(), which calls wp.grad(), passes nothing back.
    xs = np.array([3.0, 0.5, -2.0], dtype=np.float32)
    x = wp.array(xs, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(backward_through_grad, dim=3, inputs=[x, y])
    tape.backward(grads={y: wp.array(np.ones(3, dtype=np.float32))})
    v = xs.astype(np.float64)
    np.testing.assert_allclose(y.numpy(), v * v + 2 * v + 2 * v * v + np.sin(v), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 2 * v + np.cos(v), rtol=1e-6)


# --------------------------------------------------------------------- errors


def _launch(wp, kernel):
    wp.launch(kernel, dim=1, inputs=[wp.zeros(1, dtype=float)])


def test_rebinding_a_grad_local_is_warps_error(wp):
    @wpd.kernel(enable_backward=False, module="unique")
    def to_value(out: wpd.array(dtype=float)):
        g = wpd.grad(square)
        g = 1.0
        out[0] = g

    @wpd.kernel(enable_backward=False, module="unique")
    def through_tuple(out: wpd.array(dtype=float)):
        g = wpd.grad(square)
        g, x = (1.0, 2.0)
        out[0] = x

    @wpd.kernel(enable_backward=False, module="unique")
    def through_augassign(out: wpd.array(dtype=float)):
        g = wpd.grad(square)
        g += 1.0
        out[0] = 1.0

    for k in (to_value, through_tuple, through_augassign):
        with pytest.raises(wp.WarpCodegenError, match=r"Cannot reassign local 'g' after binding it to wp\.grad"):
            _launch(wp, k)


def test_rebinding_to_another_function_handle_is_allowed(wp):
    @wpd.kernel(enable_backward=False, module="unique")
    def rebound(out: wpd.array(dtype=float)):
        g = wpd.grad(square)
        out[0] = g(2.0)
        g = wpd.grad(wpd.sin)
        out[0] = out[0] + g(0.0)

    out = wp.zeros(1, dtype=float)
    wp.launch(rebound, dim=1, inputs=[out])
    assert out.numpy()[0] == pytest.approx(5.0)


@wpd.func
def nothing(x: float):
    y = x


@wpd.func
def of_array(a: wpd.array(dtype=float), s: float):
    return a[0] * s


def test_errors(wp):
    @wpd.kernel(enable_backward=False, module="unique")
    def non_differentiable(out: wpd.array(dtype=float)):
        out[0] = float(wpd.grad(wpd.floor)(1.5))

    @wpd.kernel(enable_backward=False, module="unique")
    def void(out: wpd.array(dtype=float)):
        out[0] = wpd.grad(nothing)(1.5)

    @wpd.kernel(enable_backward=False, module="unique")
    def not_a_function(out: wpd.array(dtype=float)):
        out[0] = wpd.grad(math)(1.5)

    @wpd.kernel(enable_backward=False, module="unique")
    def two_arguments(out: wpd.array(dtype=float)):
        out[0] = wpd.grad(square, square)(1.5)

    @wpd.kernel(enable_backward=False, module="unique")
    def array_argument(out: wpd.array(dtype=float)):
        a, s = wpd.grad(of_array)(out, 2.0)
        out[0] = s

    @wpd.kernel(enable_backward=False, module="unique")
    def uncalled(out: wpd.array(dtype=float)):
        print(wpd.grad(square))

    cases = [
        (non_differentiable, "Cannot compute gradient of non-differentiable function 'floor'"),
        (void, "Cannot compute gradient of void function 'nothing'"),
        (not_a_function, "grad\\(\\) expects a Warp function, got module"),
        (two_arguments, "grad\\(\\) expects exactly one function argument"),
        (array_argument, "cannot take an array argument"),
        (uncalled, "call it"),
    ]
    for kernel, message in cases:
        with pytest.raises(wp.WarpCodegenError, match=message):
            _launch(wp, kernel)


def test_python_scope(wp):
    g = wp.grad(square)
    assert g == wp.grad(square) and g.func is square
    with pytest.raises(RuntimeError, match="only be called inside Warp kernels"):
        g(1.0)
    with pytest.raises(TypeError, match="grad\\(\\) expects a Warp function"):
        wp.grad(math.sin)
    assert wp.grad(wp.sin).func is wp.sin

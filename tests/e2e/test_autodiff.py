"""Automatic differentiation on the daemon (issue 25): adjoint kernels, wp.Tape,
adjoint launches. Every gradient is checked against central finite differences of
the same kernels' forward launches in float64 (or a closed form where the function
is linear), so the references are independent of the adjoint code."""

import numpy as np
import pytest

import warpd as wpd

N = 6
RNG = np.random.default_rng(7)


# ------------------------------------------------------------------ kernels


@wpd.func
def soft(x: wpd.float64, k: wpd.float64) -> wpd.float64:
    # nested user functions, an early return and both branches of an if
    if x > k:
        return wpd.sqrt(x * x + k)
    y = wpd.exp(x) * wpd.sin(x)
    return y / (wpd.float64(1.0) + x * x)


@wpd.func
def twice_soft(x: wpd.float64) -> wpd.float64:
    return soft(x, wpd.float64(0.5)) + soft(wpd.float64(2.0) * x, wpd.float64(0.25))


@wpd.kernel
def scalar_chain(x: wpd.array(dtype=wpd.float64), out: wpd.array(dtype=wpd.float64)):
    i = wpd.tid()
    v = x[i]
    a = wpd.pow(wpd.abs(v) + wpd.float64(1.0), wpd.float64(1.5)) - wpd.log(v * v + wpd.float64(2.0))
    b = wpd.tanh(a) * wpd.cos(v) + twice_soft(v)
    c = wpd.max(a, b) + wpd.min(wpd.atan2(v, wpd.float64(2.0)), wpd.float64(0.2))
    out[i] = c * c


@wpd.kernel
def loops(x: wpd.array(dtype=wpd.float64), n: int, out: wpd.array(dtype=wpd.float64)):
    i = wpd.tid()
    s = wpd.float64(0.0)
    # a dynamic loop accumulating (linear in its carried value) and a nonlinear term per step
    for k in range(n):
        s = s + wpd.sin(x[i] * wpd.float64(k + 1))
    # a static loop with a nonlinear carried value (unrolled gradient)
    p = x[i]
    for _k in range(3):
        p = p * p * wpd.float64(0.5) + wpd.float64(0.1)
    # a while loop with break and continue
    j = int(0)
    w = wpd.float64(0.0)
    while j < 10:
        j += 1
        if j == 2:
            continue
        if j > 6:
            break
        w = w + x[i] * wpd.float64(j)
    out[i] = s + p + w


@wpd.kernel
def vectors(v: wpd.array(dtype=wpd.vec3d), m: wpd.array(dtype=wpd.mat33d), out: wpd.array(dtype=wpd.float64)):
    i = wpd.tid()
    a = v[i]
    b = wpd.vec3d(a[1], a[2] * a[0], wpd.float64(1.0))
    c = wpd.cross(a, b) + wpd.normalize(a) * wpd.length(b)
    d = m[i] * c
    e = wpd.inverse(m[i]) * a
    q = wpd.quat_from_axis_angle(wpd.normalize(b), a[0])
    r = wpd.quat_rotate(q, e)
    out[i] = wpd.dot(d, r) + wpd.determinant(m[i]) + c.x * e[2]


@wpd.struct
class Params:
    scale: wpd.float64
    offset: wpd.vec2d


@wpd.kernel
def structs(x: wpd.array(dtype=wpd.vec2d), p: Params, out: wpd.array(dtype=wpd.float64)):
    i = wpd.tid()
    q = Params(p.scale * wpd.float64(2.0), x[i])
    y = q.offset * q.scale + p.offset
    y[0] = y[0] * y[1]  # a component store
    out[i] = wpd.dot(y, y)


@wpd.kernel
def atomics(x: wpd.array(dtype=wpd.float64), loss: wpd.array(dtype=wpd.float64)):
    i = wpd.tid()
    wpd.atomic_add(loss, 0, x[i] * x[i])
    wpd.atomic_sub(loss, 0, wpd.float64(3.0) * x[i])


@wpd.kernel
def sum_all(x: wpd.array(dtype=wpd.float64), loss: wpd.array(dtype=wpd.float64)):
    i = wpd.tid()
    wpd.atomic_add(loss, 0, x[i])


# ------------------------------------------------------------------ helpers


@wpd.func
def drawn_pair(seed: int, i: int) -> wpd.vec2d:
    state = wpd.rand_init(seed, i)
    a = wpd.float64(wpd.randf(state))
    b = wpd.float64(wpd.randf(state))  # the state advanced in place: another number
    return wpd.vec2d(a, b)


@wpd.kernel
def random_weights(x: wpd.array(dtype=wpd.float64), n: int, out: wpd.array(dtype=wpd.float64)):
    # the backward pass replays the draws: a random state must advance there as forward
    i = wpd.tid()
    w = drawn_pair(7, i)
    s = x[i] * w[0] + x[i] * x[i] * w[1]
    state = wpd.rand_init(11, i)
    for _j in range(n):
        s = s * wpd.float64(wpd.randf(state, 0.5, 1.5)) + wpd.sin(s)  # a state carried by a dynamic loop
    out[i] = s


@wpd.kernel
def own_elements(x: wpd.array(dtype=float), y: wpd.array(dtype=float), out: wpd.array(dtype=float)):
    # every access at the thread's own element: the adjoint may add without atomics
    i = wpd.tid()
    out[i] = x[i] * 2.0 + y[i] * y[i]


@wpd.kernel
def own_elements_2d(a: wpd.array2d(dtype=float), out: wpd.array2d(dtype=float)):
    i, j = wpd.tid()
    out[i, j] = a[i, j] * a[i, j] * float(j + 1)


def fd_gradient(wp, kernel, inputs, which, extra=(), eps=1e-6):
    """d(sum of outputs)/d(inputs[which]) by central differences of forward launches."""
    base = inputs[which].numpy()
    flat = base.reshape(-1)
    grad = np.zeros_like(flat)
    n = inputs[0].shape[0]

    def total(values):
        args = list(inputs)
        args[which] = wp.array(values.reshape(base.shape), dtype=inputs[which].dtype)
        out = wp.zeros(n, dtype=wp.float64)
        wp.launch(kernel, n, inputs=[*args, *extra], outputs=[out])
        return out.numpy().sum()

    for k in range(flat.size):
        plus, minus = flat.copy(), flat.copy()
        plus[k] += eps
        minus[k] -= eps
        grad[k] = (total(plus) - total(minus)) / (2 * eps)
    return grad.reshape(base.shape)


def tape_gradient(wp, kernel, inputs, which, extra=()):
    n = inputs[0].shape[0]
    out = wp.zeros(n, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, n, inputs=[*inputs, *extra], outputs=[out])
    tape.backward(grads={out: wp.ones(n, dtype=wp.float64)})
    return inputs[which].grad.numpy()


# -------------------------------------------------------------------- tests


def test_scalar_math_functions_branches_and_returns(wp):
    x = wp.array(RNG.uniform(-2, 2, N), dtype=wp.float64, requires_grad=True)
    np.testing.assert_allclose(tape_gradient(wp, scalar_chain, [x], 0), fd_gradient(wp, scalar_chain, [x], 0),
                               rtol=1e-5, atol=1e-6)


def test_loops_dynamic_static_and_while(wp):
    x = wp.array(RNG.uniform(-0.8, 0.8, N), dtype=wp.float64, requires_grad=True)
    got = tape_gradient(wp, loops, [x], 0, extra=(5,))
    np.testing.assert_allclose(got, fd_gradient(wp, loops, [x], 0, extra=(5,)), rtol=1e-5, atol=1e-6)


def test_random_states_advance_in_the_replay(wp):
    x = wp.array(RNG.uniform(-1, 1, N), dtype=wp.float64, requires_grad=True)
    got = tape_gradient(wp, random_weights, [x], 0, extra=(4,))
    np.testing.assert_allclose(got, fd_gradient(wp, random_weights, [x], 0, extra=(4,)), rtol=1e-5, atol=1e-6)


def test_own_element_gradients_alone_shared_and_overlapping(wp):
    # Enough threads for several workers; the gradients are exact small sums.
    n = 1 << 16
    xs = (np.arange(n) % 13 - 6).astype(np.float32) / 4
    ys = (np.arange(n) % 7 - 3).astype(np.float32) / 8
    x, y = wp.array(xs), wp.array(ys)
    out = wp.zeros(n, dtype=float)
    seed = wp.array(np.ones(n, dtype=np.float32))

    def adjoint(gx, gy):
        wp.launch(own_elements, n, inputs=[x, y], outputs=[out], adj_inputs=[gx, gy], adj_outputs=[seed],
                  adjoint=True)
        return gx.numpy(), gy.numpy()

    # Apart: each gradient its own array.
    gx, gy = adjoint(wp.zeros(n, dtype=float), wp.zeros(n, dtype=float))
    np.testing.assert_array_equal(gx, np.full(n, 2.0, np.float32))
    np.testing.assert_array_equal(gy, 2 * ys)
    # Shared: one array for both (the same descriptor, each element still one thread's).
    g = wp.zeros(n, dtype=float)
    adjoint(g, g)
    np.testing.assert_array_equal(g.numpy(), 2.0 + 2 * ys)
    # Overlapping: y's gradient is x's shifted by one element (two threads per element: atomics).
    g = wp.zeros(n + 1, dtype=float)
    adjoint(g[0:n], g[1:n + 1])
    want = np.zeros(n + 1, np.float32)
    want[:n] += 2.0
    want[1:] += 2 * ys
    np.testing.assert_array_equal(g.numpy(), want)

    a = wp.array(RNG.uniform(-1, 1, (64, 33)).astype(np.float32), dtype=float, requires_grad=True)
    out2 = wp.zeros((64, 33), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(own_elements_2d, (64, 33), inputs=[a], outputs=[out2])
    tape.backward(grads={out2: wp.ones((64, 33), dtype=float)})
    np.testing.assert_allclose(a.grad.numpy(), 2 * a.numpy() * np.arange(1, 34, dtype=np.float32), rtol=1e-6)


def test_vectors_matrices_quaternions(wp):
    v = wp.array(RNG.uniform(0.5, 1.5, (N, 3)), dtype=wp.vec3d, requires_grad=True)
    m = wp.array(RNG.uniform(-1, 1, (N, 3, 3)) + 3 * np.eye(3), dtype=wp.mat33d, requires_grad=True)
    for which in (0, 1):
        got = tape_gradient(wp, vectors, [v, m], which)
        np.testing.assert_allclose(got, fd_gradient(wp, vectors, [v, m], which), rtol=1e-5, atol=1e-6)
        v.grad.zero_()
        m.grad.zero_()


def test_struct_arguments_constructors_and_component_stores(wp):
    x = wp.array(RNG.uniform(-1, 1, (N, 2)), dtype=wp.vec2d, requires_grad=True)
    p = Params()
    p.scale = 1.5
    p.offset = wp.vec2d(0.25, -0.5)
    got = tape_gradient(wp, structs, [x], 0, extra=(p,))
    np.testing.assert_allclose(got, fd_gradient(wp, structs, [x], 0, extra=(p,)), rtol=1e-5, atol=1e-6)


def test_atomics_and_loss_seed(wp):
    xs = RNG.uniform(-1, 1, N)
    x = wp.array(xs, dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(atomics, N, inputs=[x], outputs=[loss])
    np.testing.assert_allclose(loss.numpy()[0], np.sum(xs * xs - 3 * xs))
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2 * xs - 3)
    # forward outputs are left as the forward pass wrote them (the replay writes nothing)
    np.testing.assert_allclose(loss.numpy()[0], np.sum(xs * xs - 3 * xs))
    assert tape.gradients[x] is x.grad
    tape.zero()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(N))
    tape.backward(loss)  # the seed is set again: the same gradient
    np.testing.assert_allclose(x.grad.numpy(), 2 * xs - 3)
    tape.reset()
    assert tape.launches == []
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(N))


def test_adjoint_launch_with_explicit_and_fallback_adjoints(wp):
    xs = RNG.uniform(-1, 1, N)
    x = wp.array(xs, dtype=wp.float64, requires_grad=True)
    out = wp.zeros(N, dtype=wp.float64, requires_grad=True)
    wp.launch(scalar_chain, N, inputs=[x], outputs=[out])
    seed = RNG.uniform(0.5, 2.0, N)
    adj_x = wp.zeros(N, dtype=wp.float64)
    adj_out = wp.array(seed, dtype=wp.float64)
    wp.launch(scalar_chain, N, inputs=[x], outputs=[out], adj_inputs=[adj_x], adj_outputs=[adj_out], adjoint=True)
    ref = tape_gradient(wp, scalar_chain, [wp.array(xs, dtype=wp.float64, requires_grad=True)], 0)
    np.testing.assert_allclose(adj_x.numpy(), ref * seed, rtol=1e-12)
    np.testing.assert_array_equal(adj_out.numpy(), seed)  # explicit adjoints are only read
    # None: the arrays' own gradients, as in Warp (and the output's is consumed by its store)
    out.grad.assign(wp.array(seed, dtype=wp.float64))
    wp.launch(scalar_chain, N, inputs=[x], outputs=[out], adj_inputs=[None], adj_outputs=[None], adjoint=True)
    np.testing.assert_allclose(x.grad.numpy(), ref * seed, rtol=1e-12)
    np.testing.assert_array_equal(out.grad.numpy(), np.zeros(N))


def test_stores_consume_unless_retain_grad(wp):
    # y = x (kernel 1), z = y (kernel 2); seeding both y and z: the store into y consumes
    # y's gradient when the tape replays kernel 1 unless y retains it
    @wp.kernel
    def assign(a: wp.array(dtype=wp.float64), b: wp.array(dtype=wp.float64)):
        i = wp.tid()
        b[i] = a[i] * wp.float64(2.0)

    for retain in (False, True):
        x = wp.array(np.ones(N), dtype=wp.float64, requires_grad=True)
        y = wp.zeros(N, dtype=wp.float64, requires_grad=True, retain_grad=retain)
        z = wp.zeros(N, dtype=wp.float64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(assign, N, inputs=[x, y])
            wp.launch(assign, N, inputs=[y, z])
        tape.backward(grads={z: wp.ones(N, dtype=wp.float64)})
        np.testing.assert_array_equal(x.grad.numpy(), np.full(N, 4.0))
        np.testing.assert_array_equal(y.grad.numpy(), np.full(N, 2.0) if retain else np.zeros(N))


def test_stores_through_in_kernel_views_consume_even_under_retain_grad(wp):
    # Warp 1.19's test_retain_grad_slice_view_store: a view taken in a kernel carries no
    # retain_grad, so a store through it consumes the array's own gradient either way;
    # a store straight into the array keeps it under retain_grad, and an add never
    # consumes. y = 2 x (kernel 1), z = y + 1 (kernel 2), dz = 1: dx = 2, dy = 1 kept or 0.
    @wp.kernel
    def direct(x: wp.array(dtype=float), y: wp.array2d(dtype=float)):
        i = wp.tid()
        y[0, i] = 2.0 * x[i]

    @wp.kernel
    def row_view(x: wp.array(dtype=float), y: wp.array2d(dtype=float)):
        i = wp.tid()
        r = y[0]
        r[i] = 2.0 * x[i]

    @wp.kernel
    def slice_view(x: wp.array(dtype=float), y: wp.array2d(dtype=float)):
        i = wp.tid()
        r = y[0:1, :]
        r[0, i] = 2.0 * x[i]

    @wp.kernel
    def slice_of_slice(x: wp.array(dtype=float), y: wp.array2d(dtype=float)):
        i = wp.tid()
        r = y[0:1, :]
        q = r[0]
        q[i] = 2.0 * x[i]

    @wp.kernel
    def slice_view_add(x: wp.array(dtype=float), y: wp.array2d(dtype=float)):
        i = wp.tid()
        r = y[0:1, :]
        r[0, i] += 2.0 * x[i]

    @wp.kernel
    def offset_row(y: wp.array2d(dtype=float), z: wp.array(dtype=float)):
        i = wp.tid()
        z[i] = y[0, i] + 1.0

    # kernel -> (dy without retain_grad, dy with retain_grad), checked against Warp 1.19
    cases = {direct: (0.0, 1.0), row_view: (0.0, 0.0), slice_view: (0.0, 0.0), slice_of_slice: (0.0, 0.0),
             slice_view_add: (1.0, 1.0)}
    for k, dys in cases.items():
        for retain, dy in zip((False, True), dys):
            x = wp.ones(N, dtype=float, requires_grad=True)
            y = wp.zeros((1, N), dtype=float, requires_grad=True, retain_grad=retain)
            z = wp.zeros(N, dtype=float, requires_grad=True)
            tape = wp.Tape()
            with tape:
                wp.launch(k, N, inputs=[x, y])
                wp.launch(offset_row, N, inputs=[y, z])
            np.testing.assert_array_equal(z.numpy(), np.full(N, 3.0))
            tape.backward(grads={z: wp.ones(N, dtype=float)})
            np.testing.assert_array_equal(x.grad.numpy(), np.full(N, 2.0), err_msg=f"{k.key} {retain}")
            np.testing.assert_array_equal(y.grad.numpy(), np.full((1, N), dy), err_msg=f"{k.key} {retain}")
    # Gradients passed explicitly are only read, through a view too. (adj_x is left
    # unchecked: warpd reads the view of adj_y and gives 2; Warp 1.19 reads a view's
    # gradient from y.grad, which y lacks here, and leaves adj_x at 0.)
    x = wp.ones(N, dtype=float)
    y = wp.zeros((1, N), dtype=float)
    adj_x = wp.zeros(N, dtype=float)
    adj_y = wp.ones((1, N), dtype=float)
    wp.launch(slice_view, N, inputs=[x, y], adj_inputs=[adj_x, adj_y], adjoint=True)
    np.testing.assert_array_equal(adj_y.numpy(), np.ones((1, N)))


def test_copy_clone_and_fill_on_the_tape(wp):
    xs = np.arange(1.0, N + 1)
    x = wp.array(xs, dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        c = wp.clone(x)                       # dL/dx gets 1 through the clone
        window = wp.zeros(2, dtype=wp.float64, requires_grad=True)
        wp.copy(window, x, dest_offset=0, src_offset=1, count=2)  # +1 on x[1:3]
        dead = wp.zeros(N, dtype=wp.float64, requires_grad=True)
        wp.copy(dead, x)
        dead.fill_(0.0)                        # overwritten: nothing flows through it
        wp.launch(sum_all, N, inputs=[c], outputs=[loss])
        wp.launch(sum_all, 2, inputs=[window], outputs=[loss])
        wp.launch(sum_all, N, inputs=[dead], outputs=[loss])
    tape.backward(loss)
    np.testing.assert_array_equal(x.grad.numpy(), np.array([1.0, 2.0, 2.0, 1.0, 1.0, 1.0]))


def test_svd3_kernel_differentiates_beside_another(wp):
    # svd3 has an adjoint now (it was this test's builtin without one): the
    # gradient of s[0] - 0.5 s[1] against float64 central differences of
    # numpy's singular values, and a second kernel differentiated after it.
    @wp.kernel
    def decompose(m: wp.array(dtype=wp.mat33), out: wp.array(dtype=float)):
        i = wp.tid()
        u = wp.mat33()
        s = wp.vec3()
        v = wp.mat33()
        wp.svd3(m[i], u, s, v)
        out[i] = s[0] - 0.5 * s[1]

    @wp.kernel
    def square(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = x[i] * x[i]

    mats = np.array(
        [
            [[2.0, 0.3, -0.5], [0.1, -1.2, 0.4], [0.7, 0.2, 0.6]],
            [[-1.1, 0.6, 0.2], [0.4, 0.9, -1.3], [0.5, -0.8, 2.4]],
        ]
    )

    def objective(a):
        sv = np.linalg.svd(a, compute_uv=False)
        return sv[0] - 0.5 * sv[1]

    m = wp.array(mats.astype(np.float32), dtype=wp.mat33, requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    wp.launch(decompose, 2, inputs=[m], outputs=[out])
    wp.launch(decompose, 2, inputs=[m], outputs=[out], adj_outputs=[wp.ones(2, dtype=float)], adjoint=True)
    grad = m.grad.numpy()
    h = 1e-6
    for k in range(2):
        want = np.zeros((3, 3))
        for i in range(3):
            for j in range(3):
                up, down = mats[k].copy(), mats[k].copy()
                up[i, j] += h
                down[i, j] -= h
                want[i, j] = (objective(up) - objective(down)) / (2 * h)
        np.testing.assert_allclose(grad[k], want, atol=1e-4)
    x = wp.array(np.array([1.0, -2.0], dtype=np.float32), requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    wp.launch(square, 2, inputs=[x], outputs=[y], adj_outputs=[wp.ones(2, dtype=float)], adjoint=True)
    np.testing.assert_array_equal(x.grad.numpy(), np.array([2.0, -4.0], dtype=np.float32))


def test_enable_backward_false_refuses_adjoints(wp):
    @wp.kernel(enable_backward=False)
    def fwd_only(x: wp.array(dtype=float)):
        i = wp.tid()
        x[i] = x[i] + 1.0

    x = wp.zeros(2, dtype=float, requires_grad=True)
    wp.launch(fwd_only, 2, inputs=[x])
    with pytest.raises(RuntimeError, match="enable_backward=False"):
        wp.launch(fwd_only, 2, inputs=[x], adjoint=True)


def test_requires_grad_and_grad_assignment(wp):
    a = wp.zeros(3, dtype=float, requires_grad=True)
    assert a.grad is not None and a.grad.shape == (3,)
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros(3))
    a.requires_grad = False
    assert a.grad is None
    b = wp.zeros(3, dtype=float)
    b.grad = wp.ones(3, dtype=float)
    assert b.requires_grad
    with pytest.raises(ValueError, match="shape"):
        b.grad = wp.ones(4, dtype=float)
    with pytest.raises(ValueError, match="retain_grad"):
        wp.zeros(3, dtype=float, retain_grad=True)
    v = a[1:]
    a.requires_grad = True
    assert a[1:].grad is not None and a[1:].grad.shape == (2,)
    del v


@wpd.func
def clipped_square(x: float, lim: float):
    return wpd.min(x * x, lim), x * lim


@wpd.func_grad(clipped_square)
def clipped_square_grad(x: float, lim: float, adj_ret0: float, adj_ret1: float):
    # a made-up gradient, so the test sees it was used: 10 x for the first result
    wpd.adjoint[x] += 10.0 * x * adj_ret0 + lim * adj_ret1
    wpd.adjoint[lim] += adj_ret1


@wpd.func
def scatter(i: int, xs: wpd.array(dtype=float), ys: wpd.array(dtype=float)):
    ys[i] = xs[i] * 3.0


@wpd.func_grad(scatter)
def scatter_grad(i: int, xs: wpd.array(dtype=float), ys: wpd.array(dtype=float)):
    wpd.adjoint[xs][i] += 7.0  # written into the gradient array itself


@wpd.kernel
def use_custom(x: wpd.array(dtype=float), lim: float, out: wpd.array(dtype=float)):
    i = wpd.tid()
    a, b = clipped_square(x[i], lim)
    out[i] = a + b


@wpd.kernel
def use_scatter(xs: wpd.array(dtype=float), ys: wpd.array(dtype=float)):
    i = wpd.tid()
    scatter(i, xs, ys)


def test_custom_gradients_replace_the_automatic_ones(wp):
    xs = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    x = wp.array(xs, requires_grad=True)
    out = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(use_custom, 3, inputs=[x, 4.0], outputs=[out])
    np.testing.assert_allclose(out.numpy(), np.minimum(xs * xs, 4.0) + xs * 4.0)
    tape.backward(grads={out: wp.ones(3, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), 10.0 * xs + 4.0, rtol=1e-6)

    ys = wp.zeros(3, dtype=float, requires_grad=True)
    x2 = wp.array(xs, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(use_scatter, 3, inputs=[x2, ys])
    tape.backward(grads={ys: wp.ones(3, dtype=float)})
    np.testing.assert_array_equal(x2.grad.numpy(), np.full(3, 7.0, dtype=np.float32))


@wpd.func
def bump(counter: wpd.array(dtype=int), values: wpd.array(dtype=int), tid: int):
    slot = wpd.atomic_add(counter, 0, 1)
    values[tid] = slot
    return slot


@wpd.func_replay(bump)
def bump_replay(counter: wpd.array(dtype=int), values: wpd.array(dtype=int), tid: int):
    return values[tid]


@wpd.kernel
def permuted_square(x: wpd.array(dtype=float), counter: wpd.array(dtype=int), values: wpd.array(dtype=int),
                    out: wpd.array(dtype=float)):
    tid = wpd.tid()
    k = bump(counter, values, tid)
    out[k] = x[k] * x[k]


def test_custom_replay_recomputes_through_the_replay_function(wp):
    n = 64
    xs = np.arange(n, dtype=np.float32)
    x = wp.array(xs, requires_grad=True)
    counter = wp.zeros(1, dtype=int)
    values = wp.zeros(n, dtype=int)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(permuted_square, n, inputs=[x, counter, values], outputs=[out])
    tape.backward(grads={out: wp.ones(n, dtype=float)})
    # without the replay, the adjoint would read slots past the counter's end
    np.testing.assert_allclose(x.grad.numpy(), 2 * xs)
    assert counter.numpy()[0] == n  # the replay did not bump it again


@wpd.kernel
def two_outputs(q: wpd.array(dtype=float), out: wpd.array(dtype=float)):
    e = wpd.tid()  # one environment per thread, 3 inputs and 2 outputs each
    a = q[3 * e]
    b = q[3 * e + 1]
    c = q[3 * e + 2]
    out[2 * e] = a * b + wpd.sin(c)
    out[2 * e + 1] = a * a * c


def test_seed_jacobians_row_by_row_over_environments(wp):
    # seed 003 "Jacobians": one backward pass per output row, all environments at once
    num_envs, input_dim, output_dim = 4, 3, 2
    qs = RNG.uniform(-1, 1, num_envs * input_dim).astype(np.float32)
    q = wp.array(qs, dtype=wp.float32, requires_grad=True)
    out = wp.zeros(num_envs * output_dim, dtype=wp.float32, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(two_outputs, num_envs, inputs=[q], outputs=[out])
    jacobians = np.empty((num_envs, output_dim, input_dim), dtype=np.float32)
    for output_index in range(output_dim):
        select_index = np.zeros(output_dim)
        select_index[output_index] = 1.0
        e = wp.array(np.tile(select_index, num_envs), dtype=wp.float32)
        tape.backward(grads={out: e})
        jacobians[:, output_index, :] = tape.gradients[q].numpy().reshape(num_envs, input_dim)
        tape.zero()
    a, b, c = qs.reshape(num_envs, 3).T
    expected = np.stack([np.stack([b, a, np.cos(c)], 1), np.stack([2 * a * c, 0 * a, a * a], 1)], 1)
    np.testing.assert_allclose(jacobians, expected, rtol=1e-5, atol=1e-6)
    assert tape.adjoints is tape.gradients  # seed 001's name


def test_forward_and_backward_captured_in_a_graph(wp):
    xs = RNG.uniform(-1, 1, N)
    x = wp.array(xs, dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    wp.capture_begin()
    with tape:
        wp.launch(atomics, N, inputs=[x], outputs=[loss])
    tape.backward(loss)
    graph = wp.capture_end()
    for _ in range(3):  # an optimisation loop's shape: zero, replay, read
        loss.zero_()
        x.grad.zero_()
        wp.capture_launch(graph)
        np.testing.assert_allclose(x.grad.numpy(), 2 * xs - 3)
        np.testing.assert_allclose(loss.numpy()[0], np.sum(xs * xs - 3 * xs))


def test_abs_subgradient_at_zero_is_one(wp):
    # the seed FAQ: d|x|/dx at x = 0 is 1, as in Warp
    @wp.kernel
    def absk(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = wp.abs(x[i])

    x = wp.array(np.array([0.0, -2.0, 3.0], dtype=np.float32), requires_grad=True)
    out = wp.zeros(3, dtype=float, requires_grad=True)
    wp.launch(absk, 3, inputs=[x], outputs=[out], adj_outputs=[wp.ones(3, dtype=float)], adjoint=True)
    np.testing.assert_array_equal(x.grad.numpy(), np.array([1.0, -1.0, 1.0], dtype=np.float32))


@wpd.kernel
def sin_times(x: wpd.array(dtype=wpd.vec2), y: wpd.array(dtype=float)):
    i = wpd.tid()
    v = x[i]
    y[i] = wpd.sin(v[0]) * v[1]


@wpd.func
def wrong(x: float):
    return x * x


@wpd.func_grad(wrong)
def wrong_grad(x: float, adj_ret: float):
    wpd.adjoint[x] += 3.0 * adj_ret  # not 2x: gradcheck must notice


@wpd.kernel
def use_wrong(x: wpd.array(dtype=float), y: wpd.array(dtype=float)):
    i = wpd.tid()
    y[i] = wrong(x[i])


def test_autograd_jacobian_jacobian_fd_and_gradcheck(wp):
    xs = np.array([[0.3, 2.0], [1.0, -1.0], [-0.7, 0.5]], dtype=np.float32)
    x = wp.array(xs, dtype=wp.vec2, requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    jac = wp.autograd.jacobian(sin_times, 3, inputs=[x], outputs=[y])[0, 0].numpy()
    assert jac.shape == (3, 3, 2)  # (output scalars, input elements, vec2)
    expected = np.zeros((3, 3, 2))
    for i, (a, b) in enumerate(xs):
        expected[i, i] = [np.cos(a) * b, np.sin(a)]
    np.testing.assert_allclose(jac, expected, rtol=1e-5, atol=1e-6)
    fd = wp.autograd.jacobian_fd(sin_times, 3, inputs=[x], outputs=[y], eps=1e-3)[0, 0].numpy()
    np.testing.assert_allclose(fd, expected, atol=2e-3)
    np.testing.assert_array_equal(x.numpy(), xs)  # the inputs are as they were
    assert wp.autograd.gradcheck(sin_times, 3, inputs=[x], outputs=[y], show_summary=False)

    def pipeline(a):  # a Python function of launches
        out = wp.zeros(3, dtype=float, requires_grad=True)
        wp.launch(sin_times, 3, inputs=[a], outputs=[out])
        return out

    assert wp.autograd.gradcheck(pipeline, inputs=[x], show_summary=False)
    z = wp.array(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    w = wp.zeros(2, dtype=float, requires_grad=True)
    assert not wp.autograd.gradcheck(use_wrong, 2, inputs=[z], outputs=[w], raise_exception=False,
                                     show_summary=False)
    with pytest.raises(ValueError, match="gradient check failed"):
        wp.autograd.gradcheck(use_wrong, 2, inputs=[z], outputs=[w], show_summary=False)


@wpd.kernel
def long_loops(x: wpd.array(dtype=wpd.float64), n: int, out: wpd.array(dtype=wpd.float64)):
    i = wpd.tid()
    s = wpd.float64(0.0)
    p = x[i]
    for k in range(n):
        s = s + wpd.sin(x[i] * wpd.float64(k))  # a sum: exact at any length
    for _k in range(n // 100):
        p = p * wpd.float64(0.999) + wpd.float64(0.001) * p * p  # the gradient depends on p
    out[i] = s + p


def test_long_loops_sum_exactly_and_diagnose_what_they_cannot(wp):
    x = wp.array(RNG.uniform(-0.5, 0.5, 2), dtype=wp.float64, requires_grad=True)
    # 2000 iterations of a sum and 20 of the product: both exact
    got = tape_gradient(wp, long_loops, [x], 0, extra=(2000,))
    np.testing.assert_allclose(got, fd_gradient(wp, long_loops, [x], 0, extra=(2000,)), rtol=1e-5, atol=1e-6)
    # 100000 iterations: the product loop (1000 iterations) outgrows what its adjoint keeps
    out = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    with pytest.raises(wp.errors.WarpdError, match="cannot differentiate this loop exactly"):
        wp.launch(long_loops, 2, inputs=[x, 100000], outputs=[out], adj_outputs=[wp.ones(2, dtype=wp.float64)],
                  adjoint=True)
        wp.synchronize()
    # the daemon serves on
    x.grad.zero_()
    np.testing.assert_allclose(tape_gradient(wp, long_loops, [x], 0, extra=(5,)),
                               fd_gradient(wp, long_loops, [x], 0, extra=(5,)), rtol=1e-5, atol=1e-6)


def test_tape_warns_when_a_launch_overwrites_what_an_earlier_one_read(wp):
    @wp.kernel
    def scale_into(a: wp.array(dtype=float), b: wp.array(dtype=float)):
        i = wp.tid()
        b[i] = a[i] * 2.0

    @wp.kernel
    def accumulate_into(a: wp.array(dtype=float), b: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(b, i, a[i])

    x = wp.ones(4, dtype=float, requires_grad=True)
    y = wp.zeros(4, dtype=float, requires_grad=True)
    z = wp.zeros(4, dtype=float, requires_grad=True)
    import warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tape = wp.Tape()
        with tape:
            wp.launch(scale_into, 4, inputs=[x, y])        # reads x
            wp.launch(accumulate_into, 4, inputs=[y, x])   # adds into x: linear, fine
            wp.launch(scale_into, 4, inputs=[y, x])        # overwrites x, read by launch 0
    messages = [str(w.message) for w in seen if "wp.Tape" in str(w.message)]
    assert len(messages) == 1, messages
    assert "launch 2 (kernel 'scale_into') overwrites array argument 'b'" in messages[0]
    assert "launch 0 (kernel 'scale_into') read" in messages[0]


def test_tape_visualize_groups_repeats_and_scopes(wp):
    x = wp.array(np.ones(4), dtype=wp.float64, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        tape.record_scope_begin("my loop")
        for _ in range(5):
            wp.launch(sum_all, 4, inputs=[x], outputs=[loss])
        tape.record_scope_end()
    code = tape.visualize(simplify_graph=True, array_labels={x: "x"})
    assert code.startswith("digraph Tape {") and code.rstrip().endswith("}")
    assert "sum_all (repeated 5x)" in code and code.count("sum_all") == 1
    assert 'label="my loop"' in code and 'label="x"' in code
    assert code.count("->") == 2  # x -> kernel -> loss


def test_recorded_adjoint_launches(wp):
    @wp.kernel
    def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i] * x[i]

    x = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    y.grad.fill_(1.0)
    cmd = wp.launch(square, 3, inputs=[x, y], adj_inputs=[None, None], adjoint=True, record_cmd=True)
    assert cmd.adjoint
    cmd.launch()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])
    # Warp's Launch(kernel, device, adjoint=True) filled in by name, adjoints included
    x2 = wp.array(np.array([4.0, 5.0], dtype=np.float32))
    g2 = wp.zeros(2, dtype=float)
    cmd = wp.Launch(square, None, adjoint=True)
    cmd.set_param_by_name("x", x2)
    cmd.set_param_by_name("y", wp.zeros(2, dtype=float))
    cmd.set_param_by_name("x", g2, adjoint=True)
    cmd.set_param_by_name("y", wp.full(2, 1.0, dtype=float), adjoint=True)
    cmd.set_dim(2)
    cmd.launch()
    np.testing.assert_array_equal(g2.numpy(), [8.0, 10.0])
    with pytest.raises(TypeError):
        cmd.set_param_by_name("x", wp.zeros(2, dtype=int), adjoint=True)


@wpd.func
def row_energy(row: wpd.array(dtype=wpd.float64), t: wpd.transformd) -> wpd.float64:
    # an array slice passed to a function; a transform and a spatial vector
    e = wpd.float64(0.0)
    for j in range(row.shape[0]):
        p = wpd.transform_point(t, wpd.vec3d(row[j], row[j] * row[j], wpd.float64(1.0)))
        w = wpd.spatial_vectord(p[0], p[1], p[2], row[j], wpd.float64(0.0), wpd.float64(2.0))
        e = e + wpd.spatial_dot(w, w)
    return e


@wpd.kernel
def slices_and_transforms(x: wpd.array2d(dtype=wpd.float64), q: wpd.array(dtype=wpd.quatd),
                          out: wpd.array(dtype=wpd.float64)):
    i = wpd.tid()
    t = wpd.transformd(wpd.vec3d(wpd.float64(0.5), wpd.float64(-1.0), wpd.float64(0.25)), wpd.normalize(q[i]))
    out[i] = row_energy(x[i], t)


def test_array_slices_in_functions_transforms_and_spatial_vectors(wp):
    x = wp.array(RNG.uniform(-1, 1, (3, 4)), dtype=wp.float64, requires_grad=True)
    q = wp.array(RNG.uniform(-1, 1, (3, 4)) + np.array([0, 0, 0, 2.0]), dtype=wp.quatd, requires_grad=True)
    for which in (0, 1):
        got = tape_gradient(wp, slices_and_transforms, [x, q], which)
        np.testing.assert_allclose(got, fd_gradient(wp, slices_and_transforms, [x, q], which), rtol=1e-5, atol=1e-6)
        x.grad.zero_()
        q.grad.zero_()


def test_backward_through_a_failed_launch_is_an_error_and_the_daemon_serves_on(wp):
    @wp.kernel
    def shifted(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i + 1] * 2.0  # reads past the end at the last thread

    x = wp.ones(4, dtype=float, requires_grad=True)
    y = wp.zeros(4, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(shifted, 4, inputs=[x, y])
    with pytest.raises(wp.errors.KernelError, match="out of bounds"):
        wp.synchronize()
    with pytest.raises(wp.errors.KernelError, match="out of bounds"):
        tape.backward(grads={y: wp.ones(4, dtype=float)})
        wp.synchronize()
    # the session and the daemon go on (the failed pass may have written some gradients)
    x.grad.zero_()
    wp.launch(shifted, 3, inputs=[x, y], adj_inputs=[None, wp.ones(4, dtype=float)], adjoint=True)
    np.testing.assert_array_equal(x.grad.numpy()[1:], [2.0, 2.0, 2.0])


mat16d = wpd.types.matrix(shape=(16, 16), dtype=wpd.float64)


@wpd.kernel
def big_carried(x: wpd.array(dtype=wpd.float64), n: int, out: wpd.array(dtype=wpd.float64)):
    i = wpd.tid()
    m = mat16d(x[i])
    for _k in range(n):
        m = wpd.cw_mul(m, m) * wpd.float64(0.3) + m * wpd.float64(0.5)
    out[i] = m[3, 4]


def test_loop_snapshots_are_bounded_per_module(wp):
    # The loop carries a 2 KiB matrix: within the module's 64 KiB of snapshots (compiler/codegen/adjoint.h)
    # its adjoint keeps 32 iterations' starting values, exactly; a 33rd is refused, never a stack overflow.
    x = wp.array(np.array([0.9, 1.1]), dtype=wp.float64, requires_grad=True)
    np.testing.assert_allclose(tape_gradient(wp, big_carried, [x], 0, extra=(32,)),
                               fd_gradient(wp, big_carried, [x], 0, extra=(32,)), rtol=1e-5, atol=1e-9)
    out = wp.zeros(2, dtype=wp.float64, requires_grad=True)
    with pytest.raises(wp.errors.WarpdError, match="ran 33 iterations.*at most 32"):
        wp.launch(big_carried, 2, inputs=[x, 33], outputs=[out], adj_inputs=[None, 0],
                  adj_outputs=[wp.ones(2, dtype=wp.float64)], adjoint=True)
        wp.synchronize()


def test_the_backward_pass_prints_as_warp_does(wp, capfd):
    @wp.kernel
    def noisy(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        print(x[i])
        y[i] = x[i] * 3.0

    x = wp.ones(2, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(noisy, 2, inputs=[x, y])
    wp.synchronize()
    assert capfd.readouterr().out.count("1") == 2  # the forward launch printed each value
    tape.backward(grads={y: wp.ones(2, dtype=float)})
    wp.synchronize()
    # Warp 1.19: the replay prints the value again, then print's adjoint line; x[i] read for
    # the print is a value of its own, whose adjoint is 0 (test_print_adjoint.py has more).
    assert capfd.readouterr().out == "1\nadj: 0\n1\nadj: 0\n"
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])

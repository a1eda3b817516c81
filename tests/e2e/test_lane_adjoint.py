"""Adjoints of kernels with loops run 64 thread ids at a time on the CPU (lane-blocked,
compiler/codegen/lane_blocks.h and adjoint.cc): the gradients equal the closed form or
central differences of the forward launches, for thread counts that leave a remainder
run one at a time, and for loops longer than the lanes keep (run one at a time then)."""

import numpy as np

import warpd as wpd


@wpd.kernel
def sin_sum(x: wpd.array(dtype=float), iters: int, y: wpd.array(dtype=float)):
    # the bench's dynamic loop: s = sum_k 0.5 sin((k+1) v)
    i = wpd.tid()
    v = x[i]
    s = float(0.0)
    for k in range(iters):
        s = s + wpd.sin(v * float(k + 1)) * 0.5
    y[i] = s


@wpd.kernel
def coupled(x: wpd.array(dtype=wpd.float64), iters: int, y: wpd.array(dtype=wpd.float64)):
    # two carried values, nonlinear: the adjoint needs every iteration's starting values
    i = wpd.tid()
    v = x[i]
    p = v
    q = v * wpd.float64(0.5)
    for k in range(iters):
        p = p * wpd.float64(0.999) + wpd.sin(q) * wpd.float64(0.01)
        q = q + p * p * wpd.float64(0.001)
    if v > wpd.float64(0.0):
        y[i] = p * q
    else:
        y[i] = wpd.cos(p) - q


def _gradient(wp, kernel, xs, iters, dtype):
    x = wp.array(xs, dtype=dtype, requires_grad=True)
    y = wp.zeros(len(xs), dtype=dtype, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=len(xs), inputs=[x, iters], outputs=[y])
    tape.backward(grads={y: wp.array(np.ones(len(xs)), dtype=dtype)})
    return x.grad.numpy()


def _forward(wp, kernel, xs, iters, dtype):
    y = wp.zeros(len(xs), dtype=dtype)
    wp.launch(kernel, dim=len(xs), inputs=[wp.array(xs, dtype=dtype), iters], outputs=[y])
    return y.numpy()


def test_dynamic_sin_loop_matches_the_closed_form(wp):
    n = 1000  # 15 blocks of 64 lanes (in 256-id blocks) and ids run one at a time
    xs = np.linspace(-1.0, 1.0, n).astype(np.float32)
    for iters in (32, 300):  # 300: more iterations than the lanes keep (the sum needs none)
        got = _gradient(wp, sin_sum, xs, iters, float)
        k = np.arange(1, iters + 1, dtype=np.float64)
        want = (0.5 * k * np.cos(np.outer(xs.astype(np.float64), k))).sum(axis=1)
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=2e-3 * iters)
        # equal inputs give equal gradients, in a lane block or one at a time
        twice = np.concatenate([xs[:200], xs[:200]])
        g2 = _gradient(wp, sin_sum, np.concatenate([np.zeros(800, np.float32), twice]), iters, float)
        np.testing.assert_array_equal(g2[800:1000], g2[1000:1200])


def test_nonlinear_carried_loop_matches_central_differences(wp):
    n = 200
    xs = np.linspace(-1.5, 1.5, n)
    # 40 iterations fit what the lanes keep; 200 do not (two carried float64s: the
    # lanes keep 64 iterations, the scalar adjoint 256), so those blocks run one id
    # at a time; both give the same gradients as the forward's differences.
    for iters in (40, 200):
        got = _gradient(wp, coupled, xs, iters, wp.float64)
        h = 1e-6
        fd = (_forward(wp, coupled, xs + h, iters, wp.float64) - _forward(wp, coupled, xs - h, iters, wp.float64)) / (2 * h)
        np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-7)

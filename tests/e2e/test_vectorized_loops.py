"""Kernels with a loop inside, vectorized across thread ids (issue 10, item 1).

Fast blocks of a kernel whose loops have bounds every thread shares run 64
thread ids at a time through a lane-blocked copy of the body, which clang
vectorizes across the ids (compiler/codegen/lane_blocks.h); float32 sin and
cos are branch-free so they vectorize too
(runtime/native/warpd/native/trig.h).

Each kernel here has a twin whose loop bounds are locals rather than
parameters, so it always runs one thread id at a time: the two must agree
bit for bit, at sizes around the vector width and the block of
256 ids, for any start, stop and step. Results are also checked against
NumPy in float64, a long loop agrees too, and a fault next to vectorized
blocks is still reported with its line and index.
"""

import numpy as np
import pytest

import warpd as wp

from ir_helpers import assert_names_line


@wp.kernel
def sincos(x: wp.array(dtype=float), iters: int):
    i = wp.tid()
    v = x[i]
    for _k in range(iters):
        v = wp.sin(v) * 0.5 + wp.cos(v) * 0.25
    x[i] = v


@wp.kernel
def sincos_scalar(x: wp.array(dtype=float), iters: int):
    i = wp.tid()
    v = x[i]
    m = iters
    for _k in range(m):
        v = wp.sin(v) * 0.5 + wp.cos(v) * 0.25
    x[i] = v


@wp.kernel
def ranged(x: wp.array(dtype=float), y: wp.array(dtype=float), start: int, stop: int):
    i = wp.tid()
    acc = float(0.0)
    for k in range(start, stop, 3):
        acc = acc + wp.sin(float(k) * x[i]) + wp.cos(x[i] - float(k))
    for k in range(stop, start, -2):
        acc = acc * 0.5 + float(k)
    y[i] = acc


@wp.kernel
def ranged_scalar(x: wp.array(dtype=float), y: wp.array(dtype=float), start: int, stop: int):
    i = wp.tid()
    acc = float(0.0)
    lo = start
    hi = stop
    for k in range(lo, hi, 3):
        acc = acc + wp.sin(float(k) * x[i]) + wp.cos(x[i] - float(k))
    for k in range(hi, lo, -2):
        acc = acc * 0.5 + float(k)
    y[i] = acc


@wp.kernel
def spin_vectors(p: wp.array(dtype=wp.vec3), out: wp.array(dtype=float), steps: int):
    i = wp.tid()
    v = p[i]
    for _s in range(steps):
        c = wp.cos(v[2])
        s = wp.sin(v[2])
        v = wp.vec3(c * v[0] - s * v[1], s * v[0] + c * v[1], v[2] + 0.1)
    out[i] = wp.length(v)


@wp.kernel
def spin_vectors_scalar(p: wp.array(dtype=wp.vec3), out: wp.array(dtype=float), steps: int):
    i = wp.tid()
    v = p[i]
    m = steps
    for _s in range(m):
        c = wp.cos(v[2])
        s = wp.sin(v[2])
        v = wp.vec3(c * v[0] - s * v[1], s * v[0] + c * v[1], v[2] + 0.1)
    out[i] = wp.length(v)


@wp.kernel
def loop_then_fault(x: wp.array(dtype=float), iters: int):
    i = wp.tid()
    v = x[i]
    for _k in range(iters):
        v = wp.sin(v) + 0.5
    x[i] = v


def loop_then_fault_value(iters):
    v = 0.0
    for _ in range(iters):
        v = np.sin(v) + 0.5
    return v


def inputs(n, seed=0, scale=20.0):
    return (np.random.default_rng(seed).random(n) * scale - scale / 2).astype(np.float32)


def run(kernel, n, *args):
    wp.launch(kernel, dim=n, inputs=list(args))
    wp.synchronize()


def sincos_reference(x0, iters):
    v = x0.astype(np.float64)
    for _ in range(iters):
        v = np.sin(v) * 0.5 + np.cos(v) * 0.25
    return v


@pytest.mark.parametrize("n", [1, 15, 16, 17, 255, 256, 257, 1000, 4099])
def test_a_sin_cos_loop_equals_the_scalar_path_bit_for_bit(wp, n):
    x0 = inputs(n, seed=n)
    fast, slow = wp.array(x0, dtype=float), wp.array(x0, dtype=float)
    run(sincos, n, fast, 50)
    run(sincos_scalar, n, slow, 50)
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    np.testing.assert_allclose(fast.numpy(), sincos_reference(x0, 50), rtol=0, atol=2e-6)


def test_huge_arguments_are_reduced_exactly(wp):
    # No separate path for large |x|: the table reduction is exact for every float.
    x0 = np.array([1e5, -3.5e7, 1e22, 8.7e37, -3.4e38, 6.0e-39, 0.0, -0.0] * 40, dtype=np.float32)
    fast, slow = wp.array(x0, dtype=float), wp.array(x0, dtype=float)
    run(sincos, len(x0), fast, 1)
    run(sincos_scalar, len(x0), slow, 1)
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    want = np.sin(x0.astype(np.float64)) * 0.5 + np.cos(x0.astype(np.float64)) * 0.25
    np.testing.assert_allclose(fast.numpy(), want, rtol=0, atol=1e-7)


@pytest.mark.parametrize("start,stop", [(0, 10), (3, 40), (-7, 8), (5, 5), (9, 2), (-20, -3)])
def test_any_start_stop_and_step_runs_the_serial_iterations(wp, start, stop):
    n = 700
    x = wp.array(inputs(n, seed=3, scale=4.0), dtype=float)
    fast, slow = wp.zeros(n, dtype=float), wp.zeros(n, dtype=float)
    run(ranged, n, x, fast, start, stop)
    run(ranged_scalar, n, x, slow, start, stop)
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    xs = x.numpy().astype(np.float64)
    acc = np.zeros(n)
    for k in range(start, stop, 3):
        acc = acc + np.sin(k * xs) + np.cos(xs - k)
    for k in range(stop, start, -2):
        acc = acc * 0.5 + k
    np.testing.assert_allclose(fast.numpy(), acc, rtol=1e-5, atol=1e-4)


def test_vector_math_inside_the_loop(wp):
    n = 1031
    p0 = np.random.default_rng(5).random((n, 3)).astype(np.float32)
    p = wp.array(p0, dtype=wp.vec3)
    fast, slow = wp.zeros(n, dtype=float), wp.zeros(n, dtype=float)
    run(spin_vectors, n, p, fast, 30)
    run(spin_vectors_scalar, n, p, slow, 30)
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    v = p0.astype(np.float64)
    for _ in range(30):
        c, s = np.cos(v[:, 2]), np.sin(v[:, 2])
        v = np.stack([c * v[:, 0] - s * v[:, 1], s * v[:, 0] + c * v[:, 1], v[:, 2] + 0.1], axis=1)
    np.testing.assert_allclose(fast.numpy(), np.linalg.norm(v, axis=1), rtol=1e-5)


def test_a_long_loop_equals_the_scalar_path(wp):
    n = 300
    x0 = inputs(n, seed=9)
    fast, slow = wp.array(x0, dtype=float), wp.array(x0, dtype=float)
    run(sincos, n, fast, 20000)
    run(sincos_scalar, n, slow, 20000)
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    np.testing.assert_allclose(fast.numpy(), sincos_reference(x0, 20000), rtol=0, atol=2e-6)


def test_a_fault_beside_vectorized_blocks_is_precise(wp, serving):
    # 1000 elements, 1003 threads: blocks below 768 are fast (vectorized);
    # the last block is precise and thread 1000 faults on the first access.
    x = wp.array(np.zeros(1000, dtype=np.float32), dtype=float)
    wp.launch(loop_then_fault, dim=1003, inputs=[x, 20])
    with pytest.raises(wp.KernelError) as info:
        wp.synchronize()
    msg = str(info.value)
    assert "index 1000 out of bounds for dimension 0 (shape (1000,))" in msg, msg
    assert_names_line(msg, loop_then_fault.func, "    v = x[i]")
    assert serving()
    # The threads before the fault ran (the fast blocks at least).
    np.testing.assert_allclose(x.numpy()[:768], np.full(768, loop_then_fault_value(20)), rtol=1e-6)

"""Kernels with a loop inside, vectorized across thread ids (issue 10, item 1).

Fast blocks of a kernel whose loops have bounds every thread shares run 64
thread ids at a time through a lane-blocked copy of the body, which clang
vectorizes across the ids (compiler/codegen/lane_blocks.h). float32 sin and
cos (runtime/native/warpd/native/trig.h) have a float path for |x| <= 65536
and a table path for the rest; lane-blocked bodies run them for 64 lanes at
once (wp::sincos_lanes), taking the table path only when a lane needs it,
and must give exactly what one id at a time gives.

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
def trig_no_loop(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    y[i] = wp.sin(v) * 0.5 + wp.cos(v * 2.0)


@wp.kernel
def trig_no_loop_scalar(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    r = float(0.0)
    if i >= 0:  # sin and cos inside an `if`: not run as lanes
        r = wp.sin(v) * 0.5 + wp.cos(v * 2.0)
    y[i] = r


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
    # Past 65536 (and for NaN and inf) every lane of the block takes the
    # table path's value, exact for every float.
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


def mixed_inputs(n, seed):
    """Mostly |x| <= 100; one in every 50 past the float path's range, NaN or inf."""
    rng = np.random.default_rng(seed)
    x = (rng.random(n) * 200 - 100).astype(np.float32)
    special = np.array([65536.0, -65536.0, 65536.01, -1e6, 3.0e38, np.inf, -np.inf, np.nan], dtype=np.float32)
    picks = rng.integers(0, n, size=max(1, n // 50))
    x[picks] = special[rng.integers(0, len(special), size=len(picks))]
    return x


def assert_same_bits(a, b):
    np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("n", [64, 200, 4099])
def test_lanes_past_the_float_paths_range_equal_the_scalar_path(wp, n):
    x0 = mixed_inputs(n, seed=n)
    fast, slow = wp.array(x0, dtype=float), wp.array(x0, dtype=float)
    run(sincos, n, fast, 3)
    run(sincos_scalar, n, slow, 3)
    assert_same_bits(fast.numpy(), slow.numpy())
    finite = np.isfinite(x0)
    np.testing.assert_allclose(fast.numpy()[finite], sincos_reference(x0[finite], 3), rtol=0, atol=2e-6)
    assert np.isnan(fast.numpy()[~finite]).all()


@pytest.mark.parametrize("n", [1, 63, 64, 65, 256, 4099])
def test_sin_and_cos_without_a_loop_run_as_lanes_and_agree(wp, n):
    x0 = mixed_inputs(n, seed=100 + n) if n > 64 else inputs(n, seed=n, scale=40.0)
    x = wp.array(x0, dtype=float)
    fast, slow = wp.zeros(n, dtype=float), wp.zeros(n, dtype=float)
    run(trig_no_loop, n, x, fast)
    run(trig_no_loop_scalar, n, x, slow)
    assert_same_bits(fast.numpy(), slow.numpy())
    finite = np.isfinite(x0)
    xd = x0[finite].astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # 2 * 3e38 is inf in float32 (and in the kernel)
        want = np.sin(xd) * 0.5 + np.cos(np.float32(2.0) * x0[finite]).astype(np.float64)
    np.testing.assert_allclose(fast.numpy()[finite], want, rtol=0, atol=3e-7)


def test_float32_sin_and_cos_are_within_an_ulp(wp):
    """Every 97th float up to 65536 (the float path) and samples past it
    (the table path) against NumPy's float64 sin and cos."""
    pos = np.arange(0, 0x47800001, 97, dtype=np.uint32).view(np.float32)
    big = np.array([65537.0, 1e6, 3.5e7, 1e22, 3.4e38], dtype=np.float32)
    x0 = np.concatenate([pos, -pos[::5], big])
    x = wp.array(x0, dtype=float)
    ys, yc = wp.zeros(len(x0), dtype=float), wp.zeros(len(x0), dtype=float)
    run(sin_and_cos, len(x0), x, ys, yc)
    for got, fn in ((ys.numpy(), np.sin), (yc.numpy(), np.cos)):
        want = fn(x0.astype(np.float64))
        ulps = np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
        assert ulps.max() <= 1.0, (fn.__name__, float(ulps.max()), float(x0[np.argmax(ulps)]))


@wp.kernel
def sin_and_cos(x: wp.array(dtype=float), s: wp.array(dtype=float), c: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    s[i] = wp.sin(v)
    c[i] = wp.cos(v)


@wp.kernel
def exp_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.exp(x[i])


@wp.kernel
def exp_kernel_scalar(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    r = float(0.0)
    if x[i] == x[i] or x[i] != x[i]:  # a branch around it: one id at a time
        r = wp.exp(x[i])
    y[i] = r


def test_float32_exp_is_within_an_ulp_and_agrees_with_itself(wp):
    """exp is warpd's own on the CPU (exp.h), inline so fast blocks vectorize
    it: against NumPy's float64 exp, including subnormal results and the
    edges, and equal bit for bit to the same kernel run one id at a time."""
    grid = np.arange(0xC2D00000, 0xFFFFFFFF, 211, dtype=np.uint64).astype(np.uint32).view(np.float32)
    grid = grid[grid >= -104.0]
    pos = np.arange(0, 0x42B20000, 211, dtype=np.uint32).view(np.float32)
    special = np.array([88.72283, 89.0, 1e30, -104.0, -103.2789, -87.33654, np.inf, -np.inf, np.nan, 0.0, -0.0],
                       dtype=np.float32)
    x0 = np.concatenate([grid, pos, special])
    x = wp.array(x0, dtype=float)
    fast, slow = wp.zeros(len(x0), dtype=float), wp.zeros(len(x0), dtype=float)
    run(exp_kernel, len(x0), x, fast)
    run(exp_kernel_scalar, len(x0), x, slow)
    got = fast.numpy()
    assert_same_bits(got, slow.numpy())
    with np.errstate(over="ignore"):
        want = np.exp(x0.astype(np.float64))
    finite = np.isfinite(want) & (want <= np.finfo(np.float32).max)
    spacing = np.spacing(want[finite].astype(np.float32)).astype(np.float64)
    ulps = np.abs(got[finite].astype(np.float64) - want[finite]) / spacing
    assert ulps.max() <= 1.0, (float(ulps.max()), float(x0[finite][np.argmax(ulps)]))
    assert np.isinf(got[~finite & ~np.isnan(x0)]).all()
    assert np.isnan(got[np.isnan(x0)]).all()

"""The kernel language of this scope, run by the daemon and checked against NumPy."""

import numpy as np
import pytest

import warpd as wp
from warpd import context

OFFSET = 3
HALF = 0.5
TYPED_SCALE = wp.constant(wp.float64(1.25))


@wp.kernel
def index_1d(out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = i


@wp.kernel
def index_2d(out: wp.array2d(dtype=int)):
    i, j = wp.tid()
    out[i, j] = i * 100 + j


@wp.kernel
def index_3d(out: wp.array3d(dtype=int)):
    i, j, k = wp.tid()
    out[i, j, k] = i * 10000 + j * 100 + k


@wp.kernel
def index_4d(out: wp.array4d(dtype=int)):
    i, j, k, l = wp.tid()
    out[i, j, k, l] = ((i * 10 + j) * 10 + k) * 10 + l


@wp.kernel
def float_arith(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = x + y
    out[i, 1] = x - y
    out[i, 2] = x * y
    out[i, 3] = x / y
    out[i, 4] = -x
    out[i, 5] = x * 2.0 + HALF
    out[i, 6] = float(OFFSET) * y


@wp.kernel
def int_arith(a: wp.array(dtype=int), b: wp.array(dtype=int), out: wp.array2d(dtype=int)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = x + y
    out[i, 1] = x - y
    out[i, 2] = x * y
    out[i, 3] = x // y
    out[i, 4] = x % y
    out[i, 5] = -x + OFFSET


@wp.kernel
def compare_ops(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array2d(dtype=int)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = int(x < y)
    out[i, 1] = int(x <= y)
    out[i, 2] = int(x > y)
    out[i, 3] = int(x >= y)
    out[i, 4] = int(x == y)
    out[i, 5] = int(x != y)
    out[i, 6] = int(x < y and y > 0.0)
    out[i, 7] = int(x < y or y > 0.0)
    out[i, 8] = int(not x < y)


@wp.kernel
def branches(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    x = a[i]
    if x < -1.0:
        out[i] = -1.0
    elif x < 0.0:
        out[i] = x * x
    else:
        if x > 2.0:
            out[i] = 2.0
        else:
            out[i] = x
    y = 1.0 if x > 0.5 else 0.0
    out[i] = out[i] + y


@wp.kernel
def loops(n: wp.array(dtype=int), out: wp.array(dtype=int)):
    i = wp.tid()
    s = int(0)
    for k in range(n[i]):
        s += k
    for k in range(10, n[i], -3):
        s = s + 1
    for k in range(2, n[i], 2):
        if k == 8:
            continue
        if k > 14:
            break
        s += 1000
    w = n[i]
    while w > 0:
        w -= 3
        s += 1
    out[i] = s


@wp.kernel
def math_funcs(a: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    x = a[i]
    out[i, 0] = wp.sqrt(wp.abs(x))
    out[i, 1] = wp.sin(x)
    out[i, 2] = wp.cos(x)
    out[i, 3] = wp.exp(x * 0.1)
    out[i, 4] = wp.log(wp.abs(x) + 1.0)
    out[i, 5] = wp.pow(wp.abs(x), 1.5)
    out[i, 6] = wp.floor(x)
    out[i, 7] = wp.ceil(x)
    out[i, 8] = wp.clamp(x, -0.5, 0.5)
    out[i, 9] = wp.min(x, 0.25) + wp.max(x, -0.25)
    out[i, 10] = min(x, 0.0) + max(x, 0.0) + abs(x)


@wp.kernel
def vec3_ops(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), s: float,
             out_v: wp.array2d(dtype=wp.vec3), out_s: wp.array2d(dtype=float)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out_v[i, 0] = x + y
    out_v[i, 1] = x - y
    out_v[i, 2] = x * s
    out_v[i, 3] = s * y
    out_v[i, 4] = wp.cross(x, y)
    out_v[i, 5] = wp.normalize(x)
    out_v[i, 6] = wp.vec3(x.z, x[0], y.y)
    out_s[i, 0] = wp.dot(x, y)
    out_s[i, 1] = wp.length(x)
    out_s[i, 2] = wp.length_sq(y)


@wp.func
def scaled(v: wp.vec3, s: float) -> wp.vec3:
    return v * s


@wp.func
def sum_sq(v: wp.vec3):
    return wp.dot(v, v)


@wp.func
def sign(x: float):
    if x < 0.0:
        return -1.0
    return 1.0


@wp.kernel
def user_funcs(a: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    v = scaled(a[i], 2.0)
    out[i] = sum_sq(v) * sign(a[i].x)


@wp.kernel
def scalar_params(out: wp.array(dtype=wp.float64), f: float, n: int, d: wp.float64, u: wp.uint8,
                  big: wp.int64, flag: wp.bool, v: wp.vec3):
    out[0] = wp.float64(f)
    out[1] = wp.float64(n)
    out[2] = d * TYPED_SCALE
    out[3] = wp.float64(u)
    out[4] = wp.float64(big)
    if flag:
        out[5] = wp.float64(1.0)
    out[6] = wp.float64(v.x + v.y + v.z)


@wp.kernel
def atomics(a: wp.array(dtype=float), total: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(total, 0, a[i])


@wp.kernel
def increment(a: wp.array(dtype=int)):
    i = wp.tid()
    a[i] = a[i] + 1


@pytest.mark.parametrize("shape,kernel", [((37,), index_1d), ((5, 7), index_2d),
                                          ((3, 4, 5), index_3d), ((2, 3, 4, 5), index_4d)],
                         ids=["1d", "2d", "3d", "4d"])
def test_nd_launch_indices(wp, shape, kernel):
    out = wp.zeros(shape, dtype=int)
    wp.launch(kernel, dim=shape, inputs=[out])
    idx = np.indices(shape)
    if len(shape) == 1:
        want = idx[0]
    elif len(shape) == 2:
        want = idx[0] * 100 + idx[1]
    elif len(shape) == 3:
        want = idx[0] * 10000 + idx[1] * 100 + idx[2]
    else:
        want = ((idx[0] * 10 + idx[1]) * 10 + idx[2]) * 10 + idx[3]
    np.testing.assert_array_equal(out.numpy(), want)


def test_float_arithmetic(wp):
    rng = np.random.default_rng(10)
    a = rng.standard_normal(100).astype(np.float32)
    b = (rng.standard_normal(100) + 3).astype(np.float32)
    out = wp.zeros((100, 7), dtype=float)
    wp.launch(float_arith, dim=100, inputs=[wp.array(a), wp.array(b), out])
    f = np.float32
    want = np.stack([a + b, a - b, a * b, a / b, -a, a * f(2) + f(HALF), f(OFFSET) * b], axis=1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


def test_int_arithmetic(wp):
    rng = np.random.default_rng(11)
    a = rng.integers(0, 1000, 64).astype(np.int32)
    b = rng.integers(1, 50, 64).astype(np.int32)
    out = wp.zeros((64, 6), dtype=int)
    wp.launch(int_arith, dim=64, inputs=[wp.array(a), wp.array(b), out])
    want = np.stack([a + b, a - b, a * b, a // b, a % b, -a + OFFSET], axis=1)
    np.testing.assert_array_equal(out.numpy(), want)


def test_comparisons_and_bool_ops(wp):
    rng = np.random.default_rng(12)
    a = rng.integers(-3, 3, 200).astype(np.float32)
    b = rng.integers(-3, 3, 200).astype(np.float32)
    out = wp.zeros((200, 9), dtype=int)
    wp.launch(compare_ops, dim=200, inputs=[wp.array(a), wp.array(b), out])
    want = np.stack([a < b, a <= b, a > b, a >= b, a == b, a != b, (a < b) & (b > 0),
                     (a < b) | (b > 0), ~(a < b)], axis=1).astype(np.int32)
    np.testing.assert_array_equal(out.numpy(), want)


def test_if_elif_else_and_ternary(wp):
    a = np.linspace(-3, 3, 121).astype(np.float32)
    out = wp.zeros(121, dtype=float)
    wp.launch(branches, dim=121, inputs=[wp.array(a), out])
    want = np.where(a < -1, -1.0, np.where(a < 0, a * a, np.where(a > 2, 2.0, a)))
    want = want.astype(np.float32) + np.where(a > 0.5, 1.0, 0.0).astype(np.float32)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


def test_for_range_and_while(wp):
    ns = np.arange(0, 25, dtype=np.int32)
    out = wp.zeros(len(ns), dtype=int)
    wp.launch(loops, dim=len(ns), inputs=[wp.array(ns), out])

    def brute(n):
        s = 0
        for k in range(n):
            s += k
        for k in range(10, n, -3):
            s += 1
        for k in range(2, n, 2):
            if k == 8:
                continue
            if k > 14:
                break
            s += 1000
        w = n
        while w > 0:
            w -= 3
            s += 1
        return s

    np.testing.assert_array_equal(out.numpy(), [brute(int(n)) for n in ns])


def test_math_builtins(wp):
    a = np.linspace(-2.5, 2.5, 64).astype(np.float32)
    out = wp.zeros((64, 11), dtype=float)
    wp.launch(math_funcs, dim=64, inputs=[wp.array(a), out])
    f = np.float32
    want = np.stack([np.sqrt(np.abs(a)), np.sin(a), np.cos(a), np.exp(a * f(0.1)),
                     np.log(np.abs(a) + f(1)), np.power(np.abs(a), f(1.5)), np.floor(a),
                     np.ceil(a), np.clip(a, -0.5, 0.5), np.minimum(a, 0.25) + np.maximum(a, -0.25),
                     np.minimum(a, 0) + np.maximum(a, 0) + np.abs(a)], axis=1)
    np.testing.assert_allclose(out.numpy(), want, rtol=2e-6, atol=2e-6)


def test_vec3_operations(wp):
    rng = np.random.default_rng(13)
    n = 50
    a = rng.standard_normal((n, 3)).astype(np.float32)
    b = rng.standard_normal((n, 3)).astype(np.float32)
    s = 1.75
    out_v = wp.zeros((n, 7), dtype=wp.vec3)
    out_s = wp.zeros((n, 3), dtype=float)
    wp.launch(vec3_ops, dim=n, inputs=[wp.array(a, dtype=wp.vec3), wp.array(b, dtype=wp.vec3), s,
                                       out_v, out_s])
    v = out_v.numpy()
    f = np.float32(s)
    np.testing.assert_allclose(v[:, 0], a + b, rtol=1e-6)
    np.testing.assert_allclose(v[:, 1], a - b, rtol=1e-6)
    np.testing.assert_allclose(v[:, 2], a * f, rtol=1e-6)
    np.testing.assert_allclose(v[:, 3], f * b, rtol=1e-6)
    np.testing.assert_allclose(v[:, 4], np.cross(a, b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v[:, 5], a / np.linalg.norm(a, axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(v[:, 6], np.stack([a[:, 2], a[:, 0], b[:, 1]], axis=1))
    sc = out_s.numpy()
    np.testing.assert_allclose(sc[:, 0], np.einsum("ij,ij->i", a, b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sc[:, 1], np.linalg.norm(a, axis=1), rtol=1e-6)
    np.testing.assert_allclose(sc[:, 2], np.einsum("ij,ij->i", b, b), rtol=1e-6)


def test_user_functions(wp):
    rng = np.random.default_rng(14)
    a = rng.standard_normal((40, 3)).astype(np.float32)
    out = wp.zeros(40, dtype=float)
    wp.launch(user_funcs, dim=40, inputs=[wp.array(a, dtype=wp.vec3), out])
    v = a * np.float32(2)
    want = np.einsum("ij,ij->i", v, v) * np.where(a[:, 0] < 0, -1.0, 1.0)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)


def test_scalar_and_vector_parameters(wp):
    out = wp.zeros(8, dtype=wp.float64)
    wp.launch(scalar_params, dim=1,
              inputs=[out, 2.5, -7, wp.float64(0.1), 200, 1 << 40, True, wp.vec3(1.0, 2.0, 4.0)])
    got = out.numpy()
    np.testing.assert_allclose(got[:7], [2.5, -7.0, 0.1 * 1.25, 200.0, float(1 << 40), 1.0, 7.0])
    # Python ints and NumPy scalars for a float parameter, a tuple for a vec3
    wp.launch(scalar_params, dim=1,
              inputs=[out, 3, np.int64(4), np.float32(0.5), np.uint8(1), 5, False, (1, 1, 1)])
    np.testing.assert_allclose(out.numpy()[:5], [3.0, 4.0, 0.625, 1.0, 5.0])


def test_atomic_add_reduction(wp):
    a = np.random.default_rng(15).integers(-50, 50, 1000).astype(np.float32)
    total = wp.zeros(1, dtype=float)
    wp.launch(atomics, dim=len(a), inputs=[wp.array(a), total])
    assert total.numpy()[0] == pytest.approx(float(a.sum()), abs=1e-3)


def test_launches_are_batched(wp):
    rt = context.runtime()
    stream = rt.stream(wp.get_device())
    a = wp.zeros(16, dtype=int)
    wp.synchronize()
    before = stream.submits
    for _ in range(100):
        wp.launch(increment, dim=16, inputs=[a])
    assert stream.submits == before  # nothing sent before the sync point
    np.testing.assert_array_equal(a.numpy(), np.full(16, 100))
    assert stream.submits == before + 1  # one Submit for 100 launches


def test_launch_then_synchronize_is_one_round_trip(wp, monkeypatch):
    rt = context.runtime()
    a = wp.zeros(8, dtype=int)
    wp.synchronize()
    calls = []
    real_call = rt.call
    monkeypatch.setattr(rt, "call", lambda method, req, **kw: (calls.append(method), real_call(method, req, **kw))[1])
    for _ in range(3):
        wp.launch(increment, dim=8, inputs=[a])
    wp.synchronize()
    assert calls == ["Submit"]  # the Submit waits for the stream: no separate Synchronize
    wp.synchronize()  # nothing queued: a plain Synchronize
    assert calls == ["Submit", "Synchronize"]
    monkeypatch.undo()
    np.testing.assert_array_equal(a.numpy(), np.full(8, 3))


def test_batch_flushes_at_limit(wp):
    rt = context.runtime()
    stream = rt.stream(wp.get_device())
    a = wp.zeros(4, dtype=int)
    b = wp.zeros(4, dtype=int)
    wp.synchronize()
    before = stream.submits
    limit = wp.config.max_batch_commands
    n = limit + 5
    for i in range(n):  # alternating: identical launches in a row would be one repeated command
        wp.launch(increment, dim=4, inputs=[a if i % 2 == 0 else b])
    assert stream.submits == before + 1
    np.testing.assert_array_equal(a.numpy(), np.full(4, (n + 1) // 2))
    assert stream.submits == before + 2
    np.testing.assert_array_equal(b.numpy(), np.full(4, n // 2))


def test_zero_dim_launch_is_a_noop(wp):
    a = wp.zeros(3, dtype=int)
    wp.launch(index_1d, dim=0, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), np.zeros(3))


def test_module_loads_once_per_content(wp):
    rt = context.runtime()
    a = wp.zeros(3, dtype=int)
    wp.launch(increment, dim=3, inputs=[a])
    n = len(rt.loaded_modules)
    for _ in range(3):
        wp.launch(increment, dim=3, inputs=[a])
    assert len(rt.loaded_modules) == n
    np.testing.assert_array_equal(a.numpy(), np.full(3, 4))


def test_new_kernel_reloads_module(wp):
    a = wp.zeros(3, dtype=int)

    @wp.kernel
    def late_kernel(x: wp.array(dtype=int)):
        i = wp.tid()
        x[i] = 42 + i

    wp.launch(late_kernel, dim=3, inputs=[a])
    np.testing.assert_array_equal(a.numpy(), [42, 43, 44])
    wp.launch(increment, dim=3, inputs=[a])  # the older kernels still launch
    np.testing.assert_array_equal(a.numpy(), [43, 44, 45])


VEC_CONST = wp.constant(wp.vec3(1.0, 2.0, 3.0))


@wp.func
def load_scaled(a: wp.array(dtype=float), i: int, s: float):
    return a[i] * s


@wp.kernel
def func_with_array_param(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = load_scaled(a, i, 2.0)


@wp.kernel
def vector_constants_and_components(out: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = VEC_CONST * float(i)
    v[1] = 4.0
    w = wp.vec3()
    w.z = -1.0
    out[i] = v + w
    d[i] = TYPED_SCALE + wp.float64(i)


def test_func_with_array_parameter(wp):
    a = np.arange(6, dtype=np.float32)
    b = wp.zeros(6, dtype=float)
    wp.launch(func_with_array_param, dim=6, inputs=[wp.array(a), b])
    np.testing.assert_array_equal(b.numpy(), a * 2)


def test_vector_constants_and_component_stores(wp):
    out = wp.zeros(5, dtype=wp.vec3)
    d = wp.zeros(5, dtype=wp.float64)
    wp.launch(vector_constants_and_components, dim=5, inputs=[out, d])
    i = np.arange(5, dtype=np.float32)
    want = np.stack([i * 1.0, np.full(5, 4.0), i * 3.0 - 1.0], axis=1)
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(d.numpy(), 1.25 + np.arange(5))


@wp.func
def row_sum(a: wp.array2d(dtype=float), i: int):
    s = float(0.0)
    for j in range(a.shape[1]):
        s += a[i, j]
    return s


@wp.kernel
def shapes_in_kernels(a: wp.array2d(dtype=float), out: wp.array(dtype=float), dims: wp.array(dtype=int)):
    i = wp.tid()
    n = a.shape[0]
    out[i] = row_sum(a, i) + float(n)
    if i == 0:
        dims[0] = a.shape[0]
        dims[1] = a.shape[1]


def test_array_shape_in_kernels_and_functions(wp):
    """a.shape[k] in a kernel, as a statement (n = a.shape[0]), and as a loop bound in a function."""
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (5, 7)).astype(np.float32)
    out = wp.zeros(5, dtype=float)
    dims = wp.zeros(2, dtype=int)
    wp.launch(shapes_in_kernels, dim=5, inputs=[wp.array(a, dtype=float), out, dims])
    np.testing.assert_allclose(out.numpy(), a.sum(axis=1) + 5, rtol=1e-5)
    np.testing.assert_array_equal(dims.numpy(), [5, 7])


# ------------------------------------------------ a[i] += x on 8/16-bit integer arrays (Warp 1.19)


@wp.func
def counted_int16(counter: wp.array(dtype=int), v: wp.int16):
    wp.atomic_add(counter, 0, 1)
    return v


@wp.kernel
def narrow_augassign(counter: wp.array(dtype=int), data: wp.array(dtype=wp.int16),
                     v: wp.array(dtype=wp.vec3ub), b: wp.array(dtype=wp.int8)):
    i = wp.tid()
    data[i] += counted_int16(counter, wp.int16(10))  # no atomic: a[i] = a[i] + x, x evaluated once
    data[i] -= wp.int16(1)
    v[i] += wp.vec3ub(wp.uint8(250), wp.uint8(1), wp.uint8(2))  # wraps as uint8 does
    b[i] -= wp.int8(100)


def test_augmented_assignment_on_narrow_integer_arrays(wp):
    counter = wp.zeros(1, dtype=int)
    data = wp.array([5, 7], dtype=wp.int16)
    v = wp.array([[10, 20, 30], [1, 2, 3]], dtype=wp.vec3ub)
    b = wp.array([-100, 0], dtype=wp.int8)
    wp.launch(narrow_augassign, dim=2, inputs=[counter, data, v, b])
    assert counter.numpy().tolist() == [2]
    assert data.numpy().tolist() == [14, 16]
    assert v.numpy().tolist() == [[4, 21, 32], [251, 3, 5]]
    assert b.numpy().tolist() == [56, -100]

"""bfloat16 end to end (Warp 1.19's wp.bfloat16): the Python-scope type, arrays
(NumPy sees the bits, uint16, as with Warp when ml_dtypes is absent), kernel
arithmetic, builtins, conversions, atomics and vectors of bfloat16.

References are independent of warpd: bfloat16 values are float32 values
rounded here by integer arithmetic on their bits (to nearest, ties to even),
and every kernel operation is modelled as Warp computes it: the operands
widened to float32, one float32 operation (NumPy), one rounding to bfloat16.
"""

import ctypes
import math

import numpy as np
import pytest

import warpd as wp

vec3bf = wp.types.vector(3, wp.bfloat16)


# ------------------------------------------------------------ references


def ref_bits(x) -> int:
    """float32(x) rounded to bfloat16, as bits: compares the dropped low half with 0x8000."""
    b = int(np.asarray(x, dtype=np.float32).view(np.uint32))
    if math.isnan(float(np.float32(x))):
        return (b >> 16) | 0x0040
    upper, lower = b >> 16, b & 0xFFFF
    if lower > 0x8000 or (lower == 0x8000 and upper & 1):
        upper += 1  # a carry into the exponent is the right answer (up to infinity)
    return upper & 0xFFFF


def ref_value(bits) -> float:
    return float(np.array([int(bits) << 16], dtype=np.uint32).view(np.float32)[0])


def ref_round(x) -> float:
    return ref_value(ref_bits(x))


def ref_bits_array(xs) -> np.ndarray:
    return np.array([ref_bits(x) for x in np.asarray(xs, dtype=np.float32).reshape(-1)],
                    dtype=np.uint16).reshape(np.shape(xs))


def values_of(bits) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def op32(f, *xs) -> float:
    """One float32 operation on bfloat16 operands, rounded once to bfloat16."""
    with np.errstate(all="ignore"):
        return ref_round(f(*[np.float32(x) for x in xs]))


# Inputs: exact bfloat16 values of several magnitudes and signs, and values
# that round (ties included: 1 + 2^-8 is halfway between 1 and 1 + 2^-7).
RAW = np.array([1.0, -2.5, 3.3, 0.1, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1000.7, -7.25e-3, 65504.0,
                3.0e38, 1.0e-39, 123456.0], dtype=np.float32)


# ------------------------------------------------------------ Python scope


def test_python_scope_type_matches_warp(wp):
    assert wp.bfloat16._type_ is ctypes.c_uint16
    assert wp.bfloat16 in wp.types.float_types
    assert wp.bfloat16 in wp.types.scalar_types
    assert wp.types.float_types == (wp.float16, wp.bfloat16, wp.float32, wp.float64)
    assert wp.dtype_to_numpy(wp.bfloat16) is np.uint16
    assert wp.types.type_repr(wp.bfloat16) == "bfloat16"
    assert wp.types.type_size_in_bytes(wp.bfloat16) == 2
    assert wp.types.type_size(wp.bfloat16) == 1  # components, as Warp's type_size
    # Warp 1.19 names no bfloat16 vectors; vector(3, bfloat16) is spelled vec3bf.
    assert not hasattr(wp, "vec3bf")
    assert wp.types.type_repr(vec3bf) == "vec3bf"
    # NumPy uint16 data never infers bfloat16.
    assert wp.array(np.zeros(2, np.uint16)).dtype is wp.uint16


@pytest.mark.parametrize("x", [float(v) for v in RAW] + [math.inf, -math.inf, -0.0])
def test_python_scope_values_round_to_nearest_even(wp, x):
    v = wp.bfloat16(x)
    want = ref_round(x)
    assert v.value == want and math.copysign(1, v.value) == math.copysign(1, want)
    assert float(v) == want
    assert math.isnan(wp.bfloat16(math.nan).value)


# ------------------------------------------------------------ arrays


def test_array_from_floats_stores_rounded_bits(wp):
    a = wp.array(RAW, dtype=wp.bfloat16)
    got = a.numpy()
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, ref_bits_array(RAW))
    assert a.list() == [ref_round(x) for x in RAW]
    # Lists of numbers, float64 data and int data round the same way.
    np.testing.assert_array_equal(wp.array([0.1, 3.3], dtype=wp.bfloat16).numpy(), ref_bits_array([0.1, 3.3]))
    np.testing.assert_array_equal(wp.array(np.array([257, -1000001]), dtype=wp.bfloat16).numpy(),
                                  ref_bits_array([257, -1000001]))
    # NaN stays NaN through the array.
    nan_bits = wp.array([math.nan], dtype=wp.bfloat16).numpy()[0]
    assert math.isnan(ref_value(nan_bits))


def test_array_from_uint16_takes_bits_and_fill(wp):
    bits = np.array([0x3F80, 0xC020, 0x7F80, 0x0001], dtype=np.uint16)
    a = wp.array(bits, dtype=wp.bfloat16)
    np.testing.assert_array_equal(a.numpy(), bits)
    assert a.list() == [1.0, -2.5, math.inf, 2.0 ** -133]
    z = wp.zeros((2, 3), dtype=wp.bfloat16)
    np.testing.assert_array_equal(z.numpy(), np.zeros((2, 3), np.uint16))
    f = wp.full(4, 0.1, dtype=wp.bfloat16)
    np.testing.assert_array_equal(f.numpy(), np.full(4, ref_bits(0.1), np.uint16))
    z.fill_(wp.bfloat16(-3.3))
    np.testing.assert_array_equal(z.numpy(), np.full((2, 3), ref_bits(-3.3), np.uint16))
    v = wp.array([vec3bf(1.0, 0.1, -3.3)], dtype=vec3bf)
    np.testing.assert_array_equal(v.numpy(), ref_bits_array([[1.0, 0.1, -3.3]]))


# ------------------------------------------------------------ kernels


@wp.kernel
def arith_kernel(a: wp.array(dtype=wp.bfloat16), b: wp.array(dtype=wp.bfloat16), s: wp.bfloat16,
                 out: wp.array2d(dtype=wp.bfloat16), f32: wp.array(dtype=wp.float32),
                 i32: wp.array(dtype=wp.int32), back: wp.array(dtype=wp.bfloat16),
                 flags: wp.array2d(dtype=wp.int32)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = x + y
    out[i, 1] = x - y
    out[i, 2] = x * y
    out[i, 3] = x / y
    out[i, 4] = x * s
    out[i, 5] = wp.sqrt(wp.abs(x))
    out[i, 6] = wp.sin(x)
    out[i, 7] = wp.exp(y)
    out[i, 8] = wp.min(x, y)
    out[i, 9] = wp.max(x, y)
    out[i, 10] = -x
    out[i, 11] = wp.floor(x)
    out[i, 12] = wp.clamp(x, wp.bfloat16(-1.0), wp.bfloat16(2.0))
    out[i, 13] = wp.lerp(x, y, wp.bfloat16(0.25))
    out[i, 14] = x + wp.bfloat16(0.1)  # a constant rounded to bfloat16 first
    f32[i] = wp.float32(x)
    i32[i] = wp.int32(x)
    back[i] = wp.bfloat16(f32[i] * 3.0)  # float32 -> bfloat16 in the kernel
    flags[i, 0] = wp.where(x < y, 1, 0)
    flags[i, 1] = wp.where(x == y, 1, 0)
    flags[i, 2] = wp.where(wp.isfinite(x), 1, 0)


def test_kernel_arithmetic_rounds_each_operation(wp):
    n = len(RAW)
    a_vals = [ref_round(x) for x in RAW]
    b_vals = [ref_round(x) for x in np.roll(RAW, 3)]
    s = wp.bfloat16(1.7)
    a = wp.array(RAW, dtype=wp.bfloat16)
    b = wp.array(np.roll(RAW, 3), dtype=wp.bfloat16)
    out = wp.zeros((n, 15), dtype=wp.bfloat16)
    f32 = wp.zeros(n, dtype=wp.float32)
    i32 = wp.zeros(n, dtype=wp.int32)
    back = wp.zeros(n, dtype=wp.bfloat16)
    flags = wp.zeros((n, 3), dtype=wp.int32)
    wp.launch(arith_kernel, dim=n, inputs=[a, b, s, out, f32, i32, back, flags])
    got = values_of(out.numpy())
    sv = ref_round(1.7)
    f = np.float32
    for i, (x, y) in enumerate(zip(a_vals, b_vals)):
        want = [
            op32(lambda p, q: p + q, x, y), op32(lambda p, q: p - q, x, y), op32(lambda p, q: p * q, x, y),
            op32(lambda p, q: p / q, x, y), op32(lambda p, q: p * q, x, sv), op32(lambda p: np.sqrt(abs(p)), x),
            None, None,  # sin, exp: libm in float32, checked within one bfloat16 ulp below
            min(x, y), max(x, y), -x, op32(np.floor, x), min(max(x, -1.0), 2.0),
            # lerp: a * (1 - t) + b * t, each operation rounded (as scalar.h and Warp)
            op32(lambda p, q: p + q, op32(lambda p, q: p * q, x, op32(lambda p, q: p - q, 1.0, 0.25)),
                 op32(lambda p, q: p * q, y, 0.25)),
            op32(lambda p, q: p + q, x, ref_round(0.1)),
        ]
        for j, w in enumerate(want):
            if w is None:
                continue
            assert got[i, j] == f(w), (i, j, x, y, got[i, j], w)
        for j, fn in ((6, math.sin), (7, math.exp)):
            arg = x if j == 6 else y
            if j == 7 and arg > 88:
                assert got[i, j] == np.inf
                continue
            exact = fn(arg)
            if abs(exact) < 1e38:
                assert abs(float(got[i, j]) - exact) <= abs(exact) * 2.0 ** -8 + 1e-38, (i, j, got[i, j], exact)
    np.testing.assert_array_equal(f32.numpy(), np.array(a_vals, np.float32))
    # Truncation toward zero; out-of-range values clamp (scalar.h: never undefined behaviour).
    np.testing.assert_array_equal(i32.numpy(), np.array([min(max(int(x), -2 ** 31), 2 ** 31 - 1) for x in a_vals],
                                                        np.int32))
    with np.errstate(over="ignore"):  # 3e38 * 3 is inf in float32, as in the kernel
        want_back = ref_bits_array([f(x) * f(3.0) for x in a_vals])
    np.testing.assert_array_equal(back.numpy(), want_back)
    np.testing.assert_array_equal(flags.numpy(), np.array([[int(x < y), int(x == y), 1] for x, y in
                                                           zip(a_vals, b_vals)], np.int32))


@wp.kernel
def atomic_kernel(acc: wp.array(dtype=wp.bfloat16), vals: wp.array(dtype=wp.bfloat16),
                  old: wp.array(dtype=wp.bfloat16), vacc: wp.array(dtype=vec3bf)):
    i = wp.tid()
    wp.atomic_add(acc, 0, wp.bfloat16(1.0))
    wp.atomic_min(acc, 1, vals[i])
    wp.atomic_max(acc, 2, vals[i])
    wp.atomic_sub(acc, 3, wp.bfloat16(0.5))
    acc[4] += wp.bfloat16(2.0)
    wp.atomic_add(vacc, 0, vec3bf(wp.bfloat16(1.0), wp.bfloat16(0.5), wp.bfloat16(-2.0)))
    if i == 0:
        old[0] = wp.atomic_add(acc, 5, wp.bfloat16(1.5))


def test_atomics(wp):
    n = 64  # every intermediate sum is exact in bfloat16 (8 significant bits)
    vals_raw = np.linspace(-3.0, 5.0, n).astype(np.float32)
    acc = wp.array([0.0, 100.0, -100.0, 40.0, 0.0, 0.25], dtype=wp.bfloat16)
    vals = wp.array(vals_raw, dtype=wp.bfloat16)
    old = wp.zeros(1, dtype=wp.bfloat16)
    vacc = wp.zeros(1, dtype=vec3bf)
    wp.launch(atomic_kernel, dim=n, inputs=[acc, vals, old, vacc])
    rounded = [ref_round(x) for x in vals_raw]
    want = [n, min(rounded), max(rounded), 40.0 - 0.5 * n, 2.0 * n, 1.75]
    assert acc.list() == want
    assert old.list() == [0.25]
    np.testing.assert_array_equal(values_of(vacc.numpy()), np.array([[n, 0.5 * n, -2.0 * n]], np.float32))


def test_unsupported_atomics_are_refused_with_warps_message(wp):
    @wp.kernel(module="unique")
    def cas_kernel(a: wp.array(dtype=wp.bfloat16)):
        wp.atomic_cas(a, 0, wp.bfloat16(0.0), wp.bfloat16(1.0))

    a = wp.zeros(1, dtype=wp.bfloat16)
    with pytest.raises(Exception, match=r"atomic_cas\(\) operations only work on arrays with \[u\]int32, "
                                        r"\[u\]int64, float32, or float64 as the underlying scalar types, "
                                        r"but got bfloat16 \(with scalar type bfloat16\)"):
        wp.launch(cas_kernel, dim=1, inputs=[a])


@wp.kernel
def vector_kernel(a: wp.array(dtype=vec3bf), s: wp.bfloat16, out: wp.array(dtype=vec3bf),
                  dots: wp.array(dtype=wp.bfloat16)):
    i = wp.tid()
    v = a[i]
    out[i] = v * s + vec3bf(wp.bfloat16(1.0), wp.bfloat16(2.0), wp.bfloat16(3.0))
    dots[i] = wp.dot(v, v)


def test_vectors_of_bfloat16(wp):
    raw = np.array([[1.0, 0.1, -3.3], [2.5, 1000.7, 7.0]], dtype=np.float32)
    a = wp.array(raw, dtype=vec3bf)
    out = wp.zeros(2, dtype=vec3bf)
    dots = wp.zeros(2, dtype=wp.bfloat16)
    wp.launch(vector_kernel, dim=2, inputs=[a, wp.bfloat16(0.3), out, dots])
    s = ref_round(0.3)
    for i in range(2):
        v = [ref_round(x) for x in raw[i]]
        want = [op32(lambda p, q: p + q, op32(lambda p, q: p * q, x, s), c) for x, c in zip(v, (1.0, 2.0, 3.0))]
        np.testing.assert_array_equal(values_of(out.numpy()[i]), np.array(want, np.float32))
        # dot: products and sums each rounded, left to right (vec.h)
        d = op32(lambda p, q: p * q, v[0], v[0])
        for x in v[1:]:
            d = op32(lambda p, q: p + q, d, op32(lambda p, q: p * q, x, x))
        assert dots.list()[i] == d
    got = out.list()[0]
    assert isinstance(got, vec3bf) and got[0] == op32(lambda p, q: p + q, op32(lambda p, q: p * q, 1.0, s), 1.0)


def test_bfloat16_condition_is_a_compile_error_not_a_native_one(wp):
    # As float16: the 16-bit floats are not conditions (sema refuses them before C++ sees them).
    @wp.kernel(module="unique")
    def cond_kernel(a: wp.array(dtype=wp.bfloat16), out: wp.array(dtype=wp.int32)):
        if a[0]:
            out[0] = 1

    a = wp.zeros(1, dtype=wp.bfloat16)
    out = wp.zeros(1, dtype=wp.int32)
    with pytest.raises(Exception, match=r"bfloat16"):
        wp.launch(cond_kernel, dim=1, inputs=[a, out])

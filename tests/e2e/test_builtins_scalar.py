"""Values of the Scalar Math builtins, against NumPy, the math module and closed forms.

One kernel per dtype computes every builtin of a family into the columns of an
output array; the tables below name each column and its reference, and each
(builtin, dtype) pair is its own test case. float16 is computed by Warp in
float32 and rounded, so its tolerance is about one half-precision ulp.
"""

import math

import numpy as np
import pytest

import warpd as wp
from kernel_factory import specialize

FLOATS = {"float16": (wp.float16, np.float16), "float32": (wp.float32, np.float32),
          "float64": (wp.float64, np.float64)}
INTS = {"int8": (wp.int8, np.int8), "int16": (wp.int16, np.int16), "int32": (wp.int32, np.int32),
        "int64": (wp.int64, np.int64), "uint8": (wp.uint8, np.uint8), "uint16": (wp.uint16, np.uint16),
        "uint32": (wp.uint32, np.uint32), "uint64": (wp.uint64, np.uint64)}
SCALARS = {**FLOATS, **INTS}
VEC3 = {"float16": wp.vec3h, "float32": wp.vec3f, "float64": wp.vec3d}
N = 64


def tolerance(dtype, rtol32=4e-6, rtol64=1e-12):
    return {"float16": dict(rtol=1e-3, atol=1e-3), "float32": dict(rtol=rtol32, atol=1e-6),
            "float64": dict(rtol=rtol64, atol=1e-13)}[dtype]


# ------------------------------------------------------------ references

def _vec(f):
    return np.vectorize(f, otypes=[np.float64])


def _bisect(f, lo, hi, y, increasing):
    """Brute-force inverse of a monotonic function on [lo, hi] (float64)."""
    lo = np.full_like(y, lo)
    hi = np.full_like(y, hi)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        below = (f(mid) < y) if increasing else (f(mid) > y)
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def _round_half_away(x):
    t = np.trunc(x)
    return t + np.sign(x) * (np.abs(x - t) >= 0.5)


_erf = _vec(math.erf)
_erfc = _vec(math.erfc)

# name -> (input range, reference on float64 inputs); the column is the index.
UNARY = {
    "acos": ((-1, 1), np.arccos), "asin": ((-1, 1), np.arcsin), "atan": ((-10, 10), np.arctan),
    "cbrt": ((-100, 100), np.cbrt), "cos": ((-10, 10), np.cos), "cosh": ((-5, 5), np.cosh),
    "degrees": ((-10, 10), lambda x: x * (180.0 / math.pi)), "erf": ((-3, 3), _erf),
    "erfc": ((-3, 3), _erfc),
    "erfcinv": ((0.01, 1.99), lambda y: _bisect(_erfc, -10.0, 10.0, y, increasing=False)),
    "erfinv": ((-0.99, 0.99), lambda y: _bisect(_erf, -10.0, 10.0, y, increasing=True)),
    "exp": ((-5, 5), np.exp), "log": ((0.01, 100), np.log), "log10": ((0.01, 100), np.log10),
    "log2": ((0.01, 100), np.log2), "radians": ((-1000, 1000), lambda x: x * (math.pi / 180.0)),
    "sin": ((-10, 10), np.sin), "sinh": ((-5, 5), np.sinh), "sqrt": ((0, 100), np.sqrt),
    "tan": ((-1.4, 1.4), np.tan), "tanh": ((-5, 5), np.tanh),
    # Rounding: exact; the inputs include exact halves (ties).
    "ceil": ((-10, 10), np.ceil), "floor": ((-10, 10), np.floor),
    "frac": ((-10, 10), lambda x: x - np.trunc(x)),  # keeps the sign (Warp 1.19: frac(-2.5) == -0.5)
    "rint": ((-10, 10), np.rint),  # ties to even
    "round": ((-10, 10), _round_half_away),  # ties away from zero
    "trunc": ((-10, 10), np.trunc),
}
EXACT = {"ceil", "floor", "frac", "rint", "round", "trunc"}
# (rtol float32, rtol float64) where libm-grade accuracy is not what the function promises.
LOOSE = {"erfinv": (2e-5, 1e-9), "erfcinv": (2e-5, 1e-9), "cosh": (1e-5, 1e-12), "sinh": (1e-5, 1e-12),
         "tan": (1e-5, 1e-12)}

BINARY = {
    "atan2": (((-10, 10), (-10, 10)), np.arctan2),
    "copysign": (((-10, 10), (-10, 10)), np.copysign),
    "pow": (((0.1, 4), (-3, 3)), np.power),
}


def _make_float_kernels(T, tag):
    @specialize(tag)
    def float_unary(x: wp.array2d(dtype=T), out: wp.array2d(dtype=T)):
        i = wp.tid()
        out[i, 0] = wp.acos(x[i, 0])
        out[i, 1] = wp.asin(x[i, 1])
        out[i, 2] = wp.atan(x[i, 2])
        out[i, 3] = wp.cbrt(x[i, 3])
        out[i, 4] = wp.cos(x[i, 4])
        out[i, 5] = wp.cosh(x[i, 5])
        out[i, 6] = wp.degrees(x[i, 6])
        out[i, 7] = wp.erf(x[i, 7])
        out[i, 8] = wp.erfc(x[i, 8])
        out[i, 9] = wp.erfcinv(x[i, 9])
        out[i, 10] = wp.erfinv(x[i, 10])
        out[i, 11] = wp.exp(x[i, 11])
        out[i, 12] = wp.log(x[i, 12])
        out[i, 13] = wp.log10(x[i, 13])
        out[i, 14] = wp.log2(x[i, 14])
        out[i, 15] = wp.radians(x[i, 15])
        out[i, 16] = wp.sin(x[i, 16])
        out[i, 17] = wp.sinh(x[i, 17])
        out[i, 18] = wp.sqrt(x[i, 18])
        out[i, 19] = wp.tan(x[i, 19])
        out[i, 20] = wp.tanh(x[i, 20])
        out[i, 21] = wp.ceil(x[i, 21])
        out[i, 22] = wp.floor(x[i, 22])
        out[i, 23] = wp.frac(x[i, 23])
        out[i, 24] = wp.rint(x[i, 24])
        out[i, 25] = wp.round(x[i, 25])
        out[i, 26] = wp.trunc(x[i, 26])

    @specialize(tag)
    def float_binary(x: wp.array2d(dtype=T), y: wp.array2d(dtype=T), out: wp.array2d(dtype=T)):
        i = wp.tid()
        out[i, 0] = wp.atan2(x[i, 0], y[i, 0])
        out[i, 1] = wp.copysign(x[i, 1], y[i, 1])
        out[i, 2] = wp.pow(x[i, 2], y[i, 2])

    # Special values: IEEE results that the random inputs never reach.
    @specialize(tag)
    def float_special(out: wp.array(dtype=T)):
        zero = T(0.0)
        one = T(1.0)
        out[0] = wp.sqrt(zero)
        out[1] = wp.sqrt(-one)  # nan
        out[2] = wp.log(zero)  # -inf
        out[3] = wp.log(-one)  # nan
        out[4] = wp.exp(T(-1000.0))  # 0 (float16: -1000 is exactly representable)
        out[5] = wp.exp(T(1000.0))  # inf
        out[6] = wp.atan2(zero, -one)  # pi
        out[7] = wp.atan2(-zero, -one)  # -pi
        out[8] = wp.copysign(one, -zero)  # -1
        out[9] = wp.pow(zero, zero)  # 1
        out[10] = wp.pow(T(-8.0), T(1.0) / T(3.0))  # nan
        out[11] = wp.round(T(-0.5))
        out[12] = wp.rint(T(2.5))
        out[13] = wp.rint(T(-3.5))
        out[14] = wp.floor(T(-0.5))
        out[15] = wp.ceil(T(-0.5))  # -0
        out[16] = wp.erfinv(zero)
        out[17] = wp.erfinv(one)  # inf
        out[18] = wp.erfinv(-one)  # -inf
        out[19] = wp.erfcinv(one)  # 0
        out[20] = wp.tanh(T(100.0))  # 1
        out[21] = wp.cbrt(T(-27.0))
        out[22] = wp.acos(-one)  # pi

    return float_unary, float_binary, float_special


SPECIAL = [0.0, np.nan, -np.inf, np.nan, 0.0, np.inf, math.pi, -math.pi, -1.0, 1.0, np.nan, -1.0, 2.0,
           -4.0, -1.0, -0.0, 0.0, np.inf, -np.inf, 0.0, 1.0, -3.0, math.pi]

FLOAT_KERNELS = {name: _make_float_kernels(T, name) for name, (T, _) in FLOATS.items()}


def _make_scalar_kernel(T, tag):
    # x, y, low, high in the columns of `a`; low <= high.
    @specialize(tag)
    def scalar_generic(a: wp.array2d(dtype=T), out: wp.array2d(dtype=T)):
        i = wp.tid()
        x = a[i, 0]
        y = a[i, 1]
        out[i, 0] = wp.abs(x)
        out[i, 1] = wp.sign(x)
        out[i, 2] = wp.step(x)
        out[i, 3] = wp.nonzero(x)
        out[i, 4] = wp.clamp(x, a[i, 2], a[i, 3])
        out[i, 5] = wp.min(x, y)
        out[i, 6] = wp.max(x, y)

    return scalar_generic


SCALAR_KERNELS = {name: _make_scalar_kernel(T, name) for name, (T, _) in SCALARS.items()}


def _make_bit_count_kernel(T, tag):
    @specialize(tag)
    def bit_count(a: wp.array(dtype=T), out: wp.array(dtype=wp.int32)):
        i = wp.tid()
        out[i] = wp.bit_count(a[i])

    return bit_count


BIT_COUNT_KERNELS = {name: _make_bit_count_kernel(T, name) for name, (T, _) in INTS.items()}


def _make_class_kernel(T, V3, tag):
    # Each row of `a` holds 4 values: a scalar, a vec3 (0..2), a quat (0..3), a mat22 (0..3).
    @specialize(tag)
    def classify(a: wp.array2d(dtype=T), out: wp.array2d(dtype=wp.int32)):
        i = wp.tid()
        s = a[i, 0]
        v = V3(a[i, 0], a[i, 1], a[i, 2])
        q = wp.quaternion(a[i, 0], a[i, 1], a[i, 2], a[i, 3], dtype=T)
        m = wp.matrix(a[i, 0], a[i, 1], a[i, 2], a[i, 3], shape=(2, 2), dtype=T)
        out[i, 0] = int(wp.isfinite(s))
        out[i, 1] = int(wp.isinf(s))
        out[i, 2] = int(wp.isnan(s))
        out[i, 3] = int(wp.isfinite(v))
        out[i, 4] = int(wp.isinf(v))
        out[i, 5] = int(wp.isnan(v))
        out[i, 6] = int(wp.isfinite(q))
        out[i, 7] = int(wp.isinf(q))
        out[i, 8] = int(wp.isnan(q))
        out[i, 9] = int(wp.isfinite(m))
        out[i, 10] = int(wp.isinf(m))
        out[i, 11] = int(wp.isnan(m))

    return classify


CLASS_KERNELS = {name: _make_class_kernel(T, VEC3[name], name) for name, (T, _) in FLOATS.items()}


def _make_vec_kernel(V, T, tag):
    @specialize(tag)
    def vec_generic(a: wp.array(dtype=V), b: wp.array(dtype=V), out: wp.array2d(dtype=V),
                    red: wp.array2d(dtype=T)):
        i = wp.tid()
        out[i, 0] = wp.abs(a[i])
        out[i, 1] = wp.sign(a[i])
        out[i, 2] = wp.min(a[i], b[i])
        out[i, 3] = wp.max(a[i], b[i])
        red[i, 0] = wp.min(a[i])
        red[i, 1] = wp.max(a[i])

    return vec_generic


VECS = {"vec3h": (wp.vec3h, wp.float16, np.float16), "vec3f": (wp.vec3f, wp.float32, np.float32),
        "vec2d": (wp.vec2d, wp.float64, np.float64), "vec4i": (wp.vec4i, wp.int32, np.int32),
        "vec3b": (wp.vec3b, wp.int8, np.int8), "vec4ul": (wp.vec4ul, wp.uint64, np.uint64)}
VEC_KERNELS = {name: _make_vec_kernel(V, T, name) for name, (V, T, _) in VECS.items()}


# ------------------------------------------------------------ inputs

def _float_inputs(ranges, np_t, seed, ties=()):
    rng = np.random.default_rng(seed)
    cols = []
    for k, (lo, hi) in enumerate(ranges):
        c = rng.uniform(lo, hi, N)
        if k in ties:  # half the rows on a grid of quarters: exact ties for the rounding functions
            c[::2] = np.round(c[::2] * 4) / 4
        cols.append(c)
    return np.stack(cols, axis=1).astype(np_t)


@pytest.fixture(scope="module")
def unary_results(wp):
    res = {}
    for name, (T, np_t) in FLOATS.items():
        x = _float_inputs([r for r, _ in UNARY.values()], np_t, 100,
                           ties=[k for k, fn in enumerate(UNARY) if fn in EXACT])
        out = wp.zeros(x.shape, dtype=T)
        wp.launch(FLOAT_KERNELS[name][0], dim=N, inputs=[wp.array(x, dtype=T), out])
        res[name] = (x, out.numpy())
    return res


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("fn", UNARY)
def test_float_unary(unary_results, fn, dtype):
    x, got = unary_results[dtype]
    col = list(UNARY).index(fn)
    want = UNARY[fn][1](x[:, col].astype(np.float64))
    if fn in EXACT:
        np.testing.assert_array_equal(got[:, col], want.astype(got.dtype), err_msg=fn)
    else:
        r32, r64 = LOOSE.get(fn, (4e-6, 1e-12))
        np.testing.assert_allclose(got[:, col].astype(np.float64), want, err_msg=f"{fn} {dtype}",
                                   **tolerance(dtype, r32, r64))


@pytest.fixture(scope="module")
def binary_results(wp):
    res = {}
    for name, (T, np_t) in FLOATS.items():
        x = _float_inputs([r[0] for r, _ in BINARY.values()], np_t, 101)
        y = _float_inputs([r[1] for r, _ in BINARY.values()], np_t, 102)
        out = wp.zeros(x.shape, dtype=T)
        wp.launch(FLOAT_KERNELS[name][1], dim=N, inputs=[wp.array(x, dtype=T), wp.array(y, dtype=T), out])
        res[name] = (x, y, out.numpy())
    return res


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("fn", BINARY)
def test_float_binary(binary_results, fn, dtype):
    x, y, got = binary_results[dtype]
    col = list(BINARY).index(fn)
    want = BINARY[fn][1](x[:, col].astype(np.float64), y[:, col].astype(np.float64))
    tol = tolerance(dtype, 1e-5) if fn == "pow" else tolerance(dtype)
    np.testing.assert_allclose(got[:, col].astype(np.float64), want, err_msg=f"{fn} {dtype}", **tol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_special_values(wp, dtype):
    T, np_t = FLOATS[dtype]
    out = wp.zeros(len(SPECIAL), dtype=T)
    wp.launch(FLOAT_KERNELS[dtype][2], dim=1, inputs=[out])
    got = out.numpy().astype(np.float64)
    want = np.array(SPECIAL, dtype=np_t).astype(np.float64)
    np.testing.assert_allclose(got, want, **tolerance(dtype))
    # signs of zeros and infinities are part of the contract
    np.testing.assert_array_equal(np.signbit(got[~np.isnan(want)]), np.signbit(want[~np.isnan(want)]))


def _scalar_inputs(dtype, np_t):
    """Columns x, y, low, high (low <= high), with zero, one and the extremes in x."""
    rng = np.random.default_rng(103)
    if dtype in FLOATS:
        x = rng.uniform(-50, 50, (N, 4)).astype(np_t)
        x[:8, 0] = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 7.0, -7.0]
    else:
        info = np.iinfo(np_t)
        signed = info.min < 0
        lo, hi = max(int(info.min) + 1, -10**6), min(int(info.max), 10**6)
        x = rng.integers(lo, hi, (N, 4), endpoint=True).astype(np_t)
        # abs() of the most negative value overflows (C leaves it undefined): not tested
        x[:6, 0] = np.array([0, 1, int(info.max), int(info.min) + signed, 2, 7], dtype=np_t)
    lo, hi = np.minimum(x[:, 2], x[:, 3]), np.maximum(x[:, 2], x[:, 3])
    x[:, 2], x[:, 3] = lo, hi
    return x


@pytest.mark.parametrize("dtype", SCALARS)
def test_scalar_generic(wp, dtype):
    """abs, sign, step, nonzero, clamp, min, max on every scalar dtype."""
    T, np_t = SCALARS[dtype]
    a = _scalar_inputs(dtype, np_t)
    out = wp.zeros((N, 7), dtype=T)
    wp.launch(SCALAR_KERNELS[dtype], dim=N, inputs=[wp.array(a, dtype=T), out])
    got = out.numpy()
    x, y = a[:, 0], a[:, 1]
    one, zero = np_t(1), np_t(0)
    neg = x < 0  # Warp: sign(x) = -1 for x < 0, else 1 (sign(0) == sign(-0.0) == 1); step(x) = x < 0
    want = {
        "abs": np.abs(x),
        "sign": np.where(neg, -1, 1),
        "step": np.where(neg, one, zero),
        "nonzero": np.where(x != 0, one, zero),
        "clamp": np.minimum(np.maximum(x, a[:, 2]), a[:, 3]),
        "min": np.minimum(x, y),
        "max": np.maximum(x, y),
    }
    for col, (fn, w) in enumerate(want.items()):
        np.testing.assert_array_equal(got[:, col], w.astype(np_t), err_msg=f"{fn} {dtype}")


@pytest.mark.parametrize("dtype", INTS)
def test_bit_count(wp, dtype):
    T, np_t = INTS[dtype]
    bits = np.dtype(np_t).itemsize * 8
    rng = np.random.default_rng(104)
    raw = [int(v) for v in rng.integers(0, 1 << 62, N - 4)] + [0, (1 << bits) - 1, 1 << (bits - 1), 1]
    raw = [v & ((1 << bits) - 1) for v in raw]
    signed = dtype.startswith("int")
    vals = [v - (1 << bits) if signed and v >= 1 << (bits - 1) else v for v in raw]
    a = np.array(vals, dtype=np_t)
    out = wp.zeros(N, dtype=wp.int32)
    wp.launch(BIT_COUNT_KERNELS[dtype], dim=N, inputs=[wp.array(a, dtype=T), out])
    np.testing.assert_array_equal(out.numpy(), [bin(v).count("1") for v in raw])


@pytest.mark.parametrize("dtype", FLOATS)
def test_isfinite_isinf_isnan(wp, dtype):
    """Scalar, vec3, quat and mat22 overloads; one special value placed at each position."""
    T, np_t = FLOATS[dtype]
    rows = [[1.0, 2.0, -3.0, 0.5]]
    for special in (np.inf, -np.inf, np.nan):
        for pos in range(4):
            r = [1.0, -2.0, 3.0, 0.25]
            r[pos] = special
            rows.append(r)
    rows.append([np.inf, np.nan, 0.0, 0.0])
    a = np.array(rows, dtype=np_t)
    out = wp.zeros((len(rows), 12), dtype=wp.int32)
    wp.launch(CLASS_KERNELS[dtype], dim=len(rows), inputs=[wp.array(a, dtype=T), out])
    got = out.numpy()
    for k, (lo, hi) in enumerate([(0, 1), (0, 3), (0, 4), (0, 4)]):  # scalar, vec3, quat, mat22
        part = a[:, lo:hi].astype(np.float64)
        finite = np.all(np.isfinite(part), axis=1)
        isinf = np.any(np.isinf(part), axis=1)
        isnan = np.any(np.isnan(part), axis=1)
        what = ["scalar", "vec3", "quat", "mat22"][k]
        np.testing.assert_array_equal(got[:, 3 * k], finite, err_msg=f"isfinite {what}")
        np.testing.assert_array_equal(got[:, 3 * k + 1], isinf, err_msg=f"isinf {what}")
        np.testing.assert_array_equal(got[:, 3 * k + 2], isnan, err_msg=f"isnan {what}")


@pytest.mark.parametrize("vtype", VECS)
def test_vector_abs_sign_min_max(wp, vtype):
    V, T, np_t = VECS[vtype]
    n = int(vtype[3])
    rng = np.random.default_rng(105)
    if np.issubdtype(np_t, np.integer):
        info = np.iinfo(np_t)
        a = rng.integers(max(int(info.min) + 1, -1000), min(int(info.max), 1000), (N, n), endpoint=True)
        b = rng.integers(max(int(info.min) + 1, -1000), min(int(info.max), 1000), (N, n), endpoint=True)
        a, b = a.astype(np_t), b.astype(np_t)
    else:
        a = rng.uniform(-20, 20, (N, n)).astype(np_t)
        b = rng.uniform(-20, 20, (N, n)).astype(np_t)
    a[0] = 0
    out = wp.zeros((N, 4), dtype=V)
    red = wp.zeros((N, 2), dtype=T)
    wp.launch(VEC_KERNELS[vtype], dim=N, inputs=[wp.array(a, dtype=V), wp.array(b, dtype=V), out, red])
    got = out.numpy()
    sign = np.where(a < 0, -1, 1).astype(np_t)
    np.testing.assert_array_equal(got[:, 0], np.abs(a), err_msg="abs")
    np.testing.assert_array_equal(got[:, 1], sign, err_msg="sign")
    np.testing.assert_array_equal(got[:, 2], np.minimum(a, b), err_msg="min(v, w)")
    np.testing.assert_array_equal(got[:, 3], np.maximum(a, b), err_msg="max(v, w)")
    np.testing.assert_array_equal(red.numpy()[:, 0], a.min(axis=1), err_msg="min(v)")
    np.testing.assert_array_equal(red.numpy()[:, 1], a.max(axis=1), err_msg="max(v)")

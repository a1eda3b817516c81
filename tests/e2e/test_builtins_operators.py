"""Values of the Operators (and comparisons) on every value family, against NumPy and
exact integer arithmetic.

Integer semantics are Warp 1.19's, checked with warp-lang 1.19.0 on CPU:
`//` and wp.floordiv floor (-7 // 2 == -4), `/` and wp.div truncate
(-7 / 2 == -3), `%` and wp.mod keep C's sign (-7 % 2 == -1, vec3i(-7, 7, -8) %
vec3i(2, -2, 3) == (-1, 1, -2)); narrow integers wrap (int8(100) + int8(100) ==
-56, -uint8(3) == 253, int8(37) << 3 == 40, int8(-37) >> 2 == -10). Float `//`
floors the quotient, float `%` is fmod (-7.5 % 2.0 == -1.5). Scalar / quaternion
and scalar / matrix divide component-wise (2.0 / quat(1, 2, 4, 8) == (2, 1, 0.5,
0.25)). Left shifts of negative values and signed overflow of int32/int64 are
undefined in C++17 and not tested.
"""

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
N = 64


# ------------------------------------------------------------ exact integer references

def _bits(np_t):
    return np.dtype(np_t).itemsize * 8


def wrap_to(vals, np_t):
    """Python ints wrapped to np_t (two's complement), as an np_t array."""
    bits = _bits(np_t)
    signed = np.issubdtype(np_t, np.signedinteger)
    out = []
    for v in vals:
        v &= (1 << bits) - 1
        if signed and v >= 1 << (bits - 1):
            v -= 1 << bits
        out.append(v)
    return np.array(out, dtype=np_t)


def cdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def cmod(a, b):
    return a - b * cdiv(a, b)


# ------------------------------------------------------------ scalar operators

SCALAR_OPS = ["add", "sub", "mul", "div", "wp.div", "floordiv", "wp.floordiv", "mod", "wp.mod", "neg", "pos",
              "wp.add", "wp.sub", "wp.mul", "wp.neg", "wp.pos"]


def _make_scalar_kernel(T, tag):
    @specialize(tag)
    def scalar_ops(a: wp.array(dtype=T), b: wp.array(dtype=T), out: wp.array2d(dtype=T)):
        i = wp.tid()
        x = a[i]
        y = b[i]
        out[i, 0] = x + y
        out[i, 1] = x - y
        out[i, 2] = x * y
        out[i, 3] = x / y
        out[i, 4] = wp.div(x, y)
        out[i, 5] = x // y
        out[i, 6] = wp.floordiv(x, y)
        out[i, 7] = x % y
        out[i, 8] = wp.mod(x, y)
        out[i, 9] = -x
        out[i, 10] = +x
        out[i, 11] = wp.add(x, y)
        out[i, 12] = wp.sub(x, y)
        out[i, 13] = wp.mul(x, y)
        out[i, 14] = wp.neg(x)
        out[i, 15] = wp.pos(x)

    return scalar_ops


SCALAR_KERNELS = {name: _make_scalar_kernel(T, name) for name, (T, _) in SCALARS.items()}

INT_OPS = ["bit_and", "bit_or", "bit_xor", "lshift", "rshift", "invert", "wp.bit_and", "wp.bit_or", "wp.bit_xor",
           "wp.lshift", "wp.rshift", "wp.invert", "unot"]


def _make_int_kernel(T, tag):
    # s: shift counts (0 <= s < bits); l: left-shift operands that stay defined.
    @specialize(tag)
    def int_ops(a: wp.array(dtype=T), b: wp.array(dtype=T), s: wp.array(dtype=T), l: wp.array(dtype=T),
                out: wp.array2d(dtype=T)):
        i = wp.tid()
        x = a[i]
        y = b[i]
        out[i, 0] = x & y
        out[i, 1] = x | y
        out[i, 2] = x ^ y
        out[i, 3] = l[i] << s[i]
        out[i, 4] = x >> s[i]
        out[i, 5] = ~x
        out[i, 6] = wp.bit_and(x, y)
        out[i, 7] = wp.bit_or(x, y)
        out[i, 8] = wp.bit_xor(x, y)
        out[i, 9] = wp.lshift(l[i], s[i])
        out[i, 10] = wp.rshift(x, s[i])
        out[i, 11] = wp.invert(x)
        if not x:
            out[i, 12] = T(1)

    return int_ops


INT_KERNELS = {name: _make_int_kernel(T, name) for name, (T, _) in INTS.items()}


def _make_div_approx_kernel(T, tag):
    @specialize(tag)
    def scalar_div_approx(a: wp.array(dtype=T), b: wp.array(dtype=T), out: wp.array(dtype=T)):
        i = wp.tid()
        out[i] = wp.div_approx(a[i], b[i])

    return scalar_div_approx


DIV_APPROX_KERNELS = {name: _make_div_approx_kernel(T, name) for name, (T, _) in FLOATS.items()}


def _int_operands(np_t, rng):
    info = np.iinfo(np_t)
    lo, hi = int(info.min), int(info.max)
    small = min(hi, 1000)
    a = [int(v) for v in rng.integers(max(lo, -small), small, N, endpoint=True)]
    b = [int(v) for v in rng.integers(max(lo, -50), 50, N, endpoint=True)]
    # signs and the quotient's rounding direction: -7 and 7 over 2 and -2
    # the largest value: x * 7 and x + 7 wrap for the unsigned and narrow types (defined), and
    # stay in range for int32/int64, where signed overflow would be undefined
    big = hi if lo == 0 or _bits(np_t) <= 16 else hi // 8
    a[:6] = [-7 if lo < 0 else 7, 7, -7 if lo < 0 else 0, 7, 0, big]
    b[:6] = [2, -2 if lo < 0 else 3, -2 if lo < 0 else 5, 3, 3, 7]
    b = [v if v != 0 else 3 for v in b]
    if _bits(np_t) <= 16:  # narrow types are promoted to int: results wrap, which is defined
        a[6], b[6] = hi, hi
        a[7], b[7] = lo, -1 if lo < 0 else 2
    return a, b


@pytest.mark.parametrize("dtype", SCALARS)
def test_scalar_arithmetic(wp, dtype):
    T, np_t = SCALARS[dtype]
    rng = np.random.default_rng(200)
    if dtype in INTS:
        a, b = _int_operands(np_t, rng)
        av, bv = wrap_to(a, np_t), wrap_to(b, np_t)
    else:
        av = rng.uniform(-100, 100, N).astype(np_t)
        bv = rng.uniform(-10, 10, N).astype(np_t)
        bv[bv == 0] = 1
        av[:4] = [-7.5, 7.5, -7.0, 6.0]
        bv[:4] = [2.0, -2.0, 2.0, 3.0]
    out = wp.zeros((N, len(SCALAR_OPS)), dtype=T)
    wp.launch(SCALAR_KERNELS[dtype], dim=N, inputs=[wp.array(av, dtype=T), wp.array(bv, dtype=T), out])
    got = out.numpy()
    if dtype in INTS:
        want = {
            "add": [x + y for x, y in zip(a, b)], "sub": [x - y for x, y in zip(a, b)],
            "mul": [x * y for x, y in zip(a, b)], "div": [cdiv(x, y) for x, y in zip(a, b)],
            "floordiv": [x // y for x, y in zip(a, b)], "mod": [cmod(x, y) for x, y in zip(a, b)],
            "neg": [-x for x in a], "pos": a,
        }
        want = {k: wrap_to(v, np_t) for k, v in want.items()}
    else:
        want = {"add": av + bv, "sub": av - bv, "mul": av * bv, "div": av / bv,
                "floordiv": np.floor(av / bv), "mod": np.fmod(av, bv), "neg": -av, "pos": av}
    for col, op in enumerate(SCALAR_OPS):
        np.testing.assert_array_equal(got[:, col], want[op.removeprefix("wp.")], err_msg=f"{op} {dtype}")


@pytest.mark.parametrize("dtype", INTS)
def test_integer_bit_operators(wp, dtype):
    T, np_t = INTS[dtype]
    bits = _bits(np_t)
    rng = np.random.default_rng(201)
    info = np.iinfo(np_t)
    a = [int(v) for v in rng.integers(int(info.min), int(info.max), N, endpoint=True, dtype=np.int64
                                      if info.max < 2**63 else np.uint64)]
    b = [int(v) for v in rng.integers(int(info.min), int(info.max), N, endpoint=True, dtype=np.int64
                                      if info.max < 2**63 else np.uint64)]
    a[:3] = [0, -1 if info.min < 0 else int(info.max), int(info.min)]
    s = [int(v) for v in rng.integers(0, bits, N)]
    s[:3] = [0, bits - 1, 1]
    # left operands with l << s representable in the unsigned type (defined in C++17)
    l = [int(v) % (1 << (bits - k)) for v, k in zip(rng.integers(0, 1 << 62, N), s)]
    out = wp.zeros((N, len(INT_OPS)), dtype=T)
    wp.launch(INT_KERNELS[dtype], dim=N,
              inputs=[wp.array(wrap_to(a, np_t), dtype=T), wp.array(wrap_to(b, np_t), dtype=T),
                      wp.array(wrap_to(s, np_t), dtype=T), wp.array(wrap_to(l, np_t), dtype=T), out])
    got = out.numpy()
    want = {"bit_and": [x & y for x, y in zip(a, b)], "bit_or": [x | y for x, y in zip(a, b)],
            "bit_xor": [x ^ y for x, y in zip(a, b)], "lshift": [x << k for x, k in zip(l, s)],
            "rshift": [x >> k for x, k in zip(a, s)],  # arithmetic for signed: Python's >> floors
            "invert": [~x for x in a], "unot": [int(x == 0) for x in a]}
    for col, op in enumerate(INT_OPS):
        np.testing.assert_array_equal(got[:, col], wrap_to(want[op.removeprefix("wp.")], np_t),
                                      err_msg=f"{op} {dtype}")


@pytest.mark.parametrize("dtype", FLOATS)
def test_scalar_div_approx(wp, dtype):
    T, np_t = FLOATS[dtype]
    rng = np.random.default_rng(202)
    a = rng.uniform(-100, 100, N).astype(np_t)
    b = rng.uniform(0.5, 10, N).astype(np_t) * np.where(rng.random(N) < 0.5, -1, 1).astype(np_t)
    out = wp.zeros(N, dtype=T)
    wp.launch(DIV_APPROX_KERNELS[dtype], dim=N, inputs=[wp.array(a, dtype=T), wp.array(b, dtype=T), out])
    rtol = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-14}[dtype]
    np.testing.assert_allclose(out.numpy().astype(np.float64), a.astype(np.float64) / b, rtol=rtol)


# ------------------------------------------------------------ vectors

VECS = {"vec3f": (wp.vec3f, wp.float32, np.float32), "vec4d": (wp.vec4d, wp.float64, np.float64),
        "vec2h": (wp.vec2h, wp.float16, np.float16), "vec3i": (wp.vec3i, wp.int32, np.int32),
        "vec4ub": (wp.vec4ub, wp.uint8, np.uint8), "vec2l": (wp.vec2l, wp.int64, np.int64)}
VEC_OPS = ["add", "sub", "v*s", "s*v", "v/s", "s/v", "wp.div(v,s)", "wp.div(s,v)", "mod", "wp.mod", "neg", "pos",
           "wp.mul(v,s)", "wp.mul(s,v)", "wp.add", "wp.sub"]
VEC_INT_OPS = ["bit_and", "bit_or", "bit_xor", "lshift", "rshift", "invert"]
VEC_APPROX_OPS = ["div_approx(v,s)", "div_approx(s,v)"]


def _make_vec_kernels(V, T, tag):
    @specialize(tag)
    def vec_ops(a: wp.array(dtype=V), b: wp.array(dtype=V), s: wp.array(dtype=T), out: wp.array2d(dtype=V)):
        i = wp.tid()
        x = a[i]
        y = b[i]
        out[i, 0] = x + y
        out[i, 1] = x - y
        out[i, 2] = x * s[i]
        out[i, 3] = s[i] * x
        out[i, 4] = x / s[i]
        out[i, 5] = s[i] / y
        out[i, 6] = wp.div(x, s[i])
        out[i, 7] = wp.div(s[i], y)
        out[i, 8] = x % y
        out[i, 9] = wp.mod(x, y)
        out[i, 10] = -x
        out[i, 11] = +x
        out[i, 12] = wp.mul(x, s[i])
        out[i, 13] = wp.mul(s[i], x)
        out[i, 14] = wp.add(x, y)
        out[i, 15] = wp.sub(x, y)

    if tag in ("vec3i", "vec4ub", "vec2l", "mat33i"):
        @specialize(tag)
        def vec_int_ops(a: wp.array(dtype=V), b: wp.array(dtype=V), out: wp.array2d(dtype=V)):
            i = wp.tid()
            x = a[i]
            y = b[i]
            out[i, 0] = x & y
            out[i, 1] = x | y
            out[i, 2] = x ^ y
            out[i, 3] = wp.lshift(x, y)
            out[i, 4] = x >> y
            out[i, 5] = ~x

        return vec_ops, vec_int_ops

    @specialize(tag)
    def vec_div_approx(a: wp.array(dtype=V), s: wp.array(dtype=T), out: wp.array2d(dtype=V)):
        i = wp.tid()
        out[i, 0] = wp.div_approx(a[i], s[i])
        out[i, 1] = wp.div_approx(s[i], a[i])

    return vec_ops, vec_div_approx


VEC_KERNELS = {name: _make_vec_kernels(V, T, name) for name, (V, T, _) in VECS.items()}


@pytest.mark.parametrize("vtype", VECS)
def test_vector_operators(wp, vtype):
    V, T, np_t = VECS[vtype]
    n = int(vtype[3])
    rng = np.random.default_rng(203)
    is_int = np.issubdtype(np_t, np.integer)
    if is_int:
        signed = np.issubdtype(np_t, np.signedinteger)
        a = rng.integers(-100 if signed else 0, 100, (N, n), endpoint=True)
        b = rng.integers(-9 if signed else 1, 9, (N, n), endpoint=True)
        b[b == 0] = 3
        s = rng.integers(1, 9, N) * (np.where(rng.random(N) < 0.5, -1, 1) if signed else 1)
        a[0, :2], b[0, :2] = (-7 if signed else 7, 7), (2, -2 if signed else 2)
    else:
        a = rng.uniform(-20, 20, (N, n))
        b = rng.uniform(0.5, 5, (N, n)) * np.where(rng.random((N, n)) < 0.5, -1, 1)
        s = rng.uniform(0.5, 5, N) * np.where(rng.random(N) < 0.5, -1, 1)
        a[0, :2], b[0, :2] = (-7.5, 7.5), (2.0, -2.0)
    a, b, s = a.astype(np_t), b.astype(np_t), s.astype(np_t)
    kernel, extra = VEC_KERNELS[vtype]
    out = wp.zeros((N, len(VEC_OPS)), dtype=V)
    wp.launch(kernel, dim=N, inputs=[wp.array(a, dtype=V), wp.array(b, dtype=V), wp.array(s, dtype=T), out])
    got = out.numpy()
    sc = s[:, None]
    if is_int:
        def cw(f, x, y):
            x, y = np.broadcast_arrays(x, y)
            return wrap_to([f(int(p), int(q)) for p, q in zip(x.reshape(-1), y.reshape(-1))], np_t).reshape(x.shape)
        want = {"add": cw(lambda p, q: p + q, a, b), "sub": cw(lambda p, q: p - q, a, b),
                "v*s": cw(lambda p, q: p * q, a, sc), "s*v": cw(lambda p, q: p * q, a, sc),
                "v/s": cw(cdiv, a, sc), "s/v": cw(cdiv, sc, b), "mod": cw(cmod, a, b),
                "neg": cw(lambda p, q: -p, a, a), "pos": a}
    else:
        want = {"add": a + b, "sub": a - b, "v*s": a * sc, "s*v": sc * a, "v/s": a / sc, "s/v": sc / b,
                "mod": np.fmod(a, b), "neg": -a, "pos": a}
    alias = {"wp.div(v,s)": "v/s", "wp.div(s,v)": "s/v", "wp.mod": "mod", "wp.mul(v,s)": "v*s",
             "wp.mul(s,v)": "s*v", "wp.add": "add", "wp.sub": "sub"}
    for col, op in enumerate(VEC_OPS):
        np.testing.assert_array_equal(got[:, col], want[alias.get(op, op)], err_msg=f"{op} {vtype}")

    if is_int:
        bits = _bits(np_t)
        sh = rng.integers(0, bits - 8 if bits > 8 else 1, (N, n))  # keeps (non-negative) a << sh defined
        x = np.abs(a).astype(np_t)
        out = wp.zeros((N, len(VEC_INT_OPS)), dtype=V)
        wp.launch(extra, dim=N, inputs=[wp.array(x, dtype=V), wp.array(sh.astype(np_t), dtype=V), out])
        got = out.numpy()
        xi, si = x.astype(object), sh.astype(object)
        want = {"bit_and": xi & si, "bit_or": xi | si, "bit_xor": xi ^ si, "lshift": xi * (2 ** si),
                "rshift": xi // (2 ** si), "invert": -xi - 1}
        for col, op in enumerate(VEC_INT_OPS):
            w = wrap_to([int(v) for v in want[op].reshape(-1)], np_t).reshape(want[op].shape)
            np.testing.assert_array_equal(got[:, col], w, err_msg=f"{op} {vtype}")
    else:
        out = wp.zeros((N, 2), dtype=V)
        wp.launch(extra, dim=N, inputs=[wp.array(b, dtype=V), wp.array(s, dtype=T), out])
        rtol = {np.float16: 1e-3, np.float32: 1e-6, np.float64: 1e-14}[np_t]
        got = out.numpy().astype(np.float64)
        np.testing.assert_allclose(got[:, 0], b.astype(np.float64) / sc, rtol=rtol, err_msg="div_approx(v, s)")
        np.testing.assert_allclose(got[:, 1], sc.astype(np.float64) / b, rtol=rtol, err_msg="div_approx(s, v)")


# ------------------------------------------------------------ matrices

MATS = {"mat33f": (wp.vec3f, wp.float32, np.float32), "mat33d": (wp.vec3d, wp.float64, np.float64),
        "mat33h": (wp.vec3h, wp.float16, np.float16), "mat33i": (wp.vec3i, wp.int32, np.int32)}
# Matrices travel as rows: a[i, r] is row r.
MAT_OPS = ["A+B", "A-B", "s*A", "A*s", "A*B", "A@B", "A/s", "s/A", "-A", "+A", "wp.mul(A,B)", "wp.div(A,s)",
           "wp.add", "wp.sub", "wp.neg", "wp.pos"]
MAT_VEC_OPS = ["A*x", "x*A", "A@x", "x@A"]
MAT_INT_OPS = ["A&B", "A|B", "A^B", "A<<B", "A>>B", "~A"]


def _make_mat_kernels(V, T, tag):
    # Each result is stored as its three rows in out[i, k, :].
    named = tag == "mat33f"
    @specialize(tag)
    def mat_ops(a: wp.array2d(dtype=V), b: wp.array2d(dtype=V), s: wp.array(dtype=T), x: wp.array(dtype=V),
                out: wp.array3d(dtype=V), outv: wp.array2d(dtype=V)):
        i = wp.tid()
        A = wp.matrix_from_rows(a[i, 0], a[i, 1], a[i, 2])
        B = wp.matrix_from_rows(b[i, 0], b[i, 1], b[i, 2])
        m = A + B
        out[i, 0, 0] = m[0]
        out[i, 0, 1] = m[1]
        out[i, 0, 2] = m[2]
        m = A - B
        out[i, 1, 0] = m[0]
        out[i, 1, 1] = m[1]
        out[i, 1, 2] = m[2]
        m = s[i] * A
        out[i, 2, 0] = m[0]
        out[i, 2, 1] = m[1]
        out[i, 2, 2] = m[2]
        m = A * s[i]
        out[i, 3, 0] = m[0]
        out[i, 3, 1] = m[1]
        out[i, 3, 2] = m[2]
        m = A * B
        out[i, 4, 0] = m[0]
        out[i, 4, 1] = m[1]
        out[i, 4, 2] = m[2]
        m = A @ B
        out[i, 5, 0] = m[0]
        out[i, 5, 1] = m[1]
        out[i, 5, 2] = m[2]
        m = A / s[i]
        out[i, 6, 0] = m[0]
        out[i, 6, 1] = m[1]
        out[i, 6, 2] = m[2]
        m = s[i] / B
        out[i, 7, 0] = m[0]
        out[i, 7, 1] = m[1]
        out[i, 7, 2] = m[2]
        m = -A
        out[i, 8, 0] = m[0]
        out[i, 8, 1] = m[1]
        out[i, 8, 2] = m[2]
        m = +A
        out[i, 9, 0] = m[0]
        out[i, 9, 1] = m[1]
        out[i, 9, 2] = m[2]
        if named:  # the builtins by name: the same overloads, checked for one dtype
            m = wp.mul(A, B)
            out[i, 10, 0] = m[0]
            out[i, 10, 1] = m[1]
            out[i, 10, 2] = m[2]
            m = wp.div(A, s[i])
            out[i, 11, 0] = m[0]
            out[i, 11, 1] = m[1]
            out[i, 11, 2] = m[2]
            m = wp.add(A, B)
            out[i, 12, 0] = m[0]
            out[i, 12, 1] = m[1]
            out[i, 12, 2] = m[2]
            m = wp.sub(A, B)
            out[i, 13, 0] = m[0]
            out[i, 13, 1] = m[1]
            out[i, 13, 2] = m[2]
            m = wp.neg(A)
            out[i, 14, 0] = m[0]
            out[i, 14, 1] = m[1]
            out[i, 14, 2] = m[2]
            m = wp.pos(A)
            out[i, 15, 0] = m[0]
            out[i, 15, 1] = m[1]
            out[i, 15, 2] = m[2]
        outv[i, 0] = A * x[i]
        outv[i, 1] = x[i] * A
        outv[i, 2] = A @ x[i]
        outv[i, 3] = x[i] @ A

    if tag in ("vec3i", "vec4ub", "vec2l", "mat33i"):
        @specialize(tag)
        def mat_int(a: wp.array2d(dtype=V), b: wp.array2d(dtype=V), out: wp.array3d(dtype=V)):
            i = wp.tid()
            A = wp.matrix_from_rows(a[i, 0], a[i, 1], a[i, 2])
            B = wp.matrix_from_rows(b[i, 0], b[i, 1], b[i, 2])
            m = A & B
            out[i, 0, 0] = m[0]
            out[i, 0, 1] = m[1]
            out[i, 0, 2] = m[2]
            m = A | B
            out[i, 1, 0] = m[0]
            out[i, 1, 1] = m[1]
            out[i, 1, 2] = m[2]
            m = A ^ B
            out[i, 2, 0] = m[0]
            out[i, 2, 1] = m[1]
            out[i, 2, 2] = m[2]
            m = A << B
            out[i, 3, 0] = m[0]
            out[i, 3, 1] = m[1]
            out[i, 3, 2] = m[2]
            m = A >> B
            out[i, 4, 0] = m[0]
            out[i, 4, 1] = m[1]
            out[i, 4, 2] = m[2]
            m = ~A
            out[i, 5, 0] = m[0]
            out[i, 5, 1] = m[1]
            out[i, 5, 2] = m[2]

        return mat_ops, mat_int

    @specialize(tag)
    def mat_div_approx(a: wp.array2d(dtype=V), b: wp.array2d(dtype=V), s: wp.array(dtype=T),
                       out: wp.array3d(dtype=V)):
        i = wp.tid()
        A = wp.matrix_from_rows(a[i, 0], a[i, 1], a[i, 2])
        B = wp.matrix_from_rows(b[i, 0], b[i, 1], b[i, 2])
        m = wp.div_approx(A, s[i])
        out[i, 0, 0] = m[0]
        out[i, 0, 1] = m[1]
        out[i, 0, 2] = m[2]
        m = wp.div_approx(s[i], B)
        out[i, 1, 0] = m[0]
        out[i, 1, 1] = m[1]
        out[i, 1, 2] = m[2]

    return mat_ops, mat_div_approx


MAT_KERNELS = {name: _make_mat_kernels(V, T, name) for name, (V, T, _) in MATS.items()}


@pytest.mark.parametrize("mtype", MATS)
def test_matrix_operators(wp, mtype):
    V, T, np_t = MATS[mtype]
    rng = np.random.default_rng(204)
    is_int = np_t is np.int32
    if is_int:
        a = rng.integers(-20, 20, (N, 3, 3), endpoint=True)
        b = rng.integers(-9, 9, (N, 3, 3), endpoint=True)
        b[b == 0] = 3
        s = rng.integers(1, 9, N) * np.where(rng.random(N) < 0.5, -1, 1)
        x = rng.integers(-20, 20, (N, 3), endpoint=True)
    else:
        a = rng.uniform(-4, 4, (N, 3, 3))
        b = rng.uniform(0.5, 4, (N, 3, 3)) * np.where(rng.random((N, 3, 3)) < 0.5, -1, 1)
        s = rng.uniform(0.5, 4, N) * np.where(rng.random(N) < 0.5, -1, 1)
        x = rng.uniform(-4, 4, (N, 3))
    a, b, s, x = a.astype(np_t), b.astype(np_t), s.astype(np_t), x.astype(np_t)
    kernel, extra = MAT_KERNELS[mtype]
    out = wp.zeros((N, len(MAT_OPS), 3), dtype=V)
    outv = wp.zeros((N, 4), dtype=V)
    wp.launch(kernel, dim=N, inputs=[wp.array(a, dtype=V), wp.array(b, dtype=V), wp.array(s, dtype=T),
                                     wp.array(x, dtype=V), out, outv])
    got, gotv = out.numpy(), outv.numpy()
    sc = s[:, None, None]
    if is_int:
        ai, bi, si, xi = a.astype(np.int64), b.astype(np.int64), s.astype(np.int64), x.astype(np.int64)
        sdiv = np.vectorize(cdiv)
        want = {"A+B": ai + bi, "A-B": ai - bi, "s*A": si[:, None, None] * ai, "A*s": ai * si[:, None, None],
                "A*B": ai @ bi, "A/s": sdiv(ai, si[:, None, None]), "s/A": sdiv(si[:, None, None], bi),
                "-A": -ai, "+A": ai}
        wantv = {"A*x": np.einsum("nij,nj->ni", ai, xi), "x*A": np.einsum("ni,nij->nj", xi, ai)}
        tol = dict(rtol=0, atol=0)
    else:
        f = np.float64 if np_t is np.float16 else np_t  # float16 products are accumulated in float32 by Warp
        af, bf, sf, xf = a.astype(f), b.astype(f), sc.astype(f), x.astype(f)
        want = {"A+B": a + b, "A-B": a - b, "s*A": sc * a, "A*s": a * sc, "A*B": af @ bf, "A/s": a / sc,
                "s/A": sc / b, "-A": -a, "+A": a}
        wantv = {"A*x": np.einsum("nij,nj->ni", af, xf), "x*A": np.einsum("ni,nij->nj", xf, af)}
        tol = {np.float16: dict(rtol=2e-3, atol=2e-2), np.float32: dict(rtol=1e-5, atol=1e-5),
               np.float64: dict(rtol=1e-13, atol=1e-13)}[np_t]
    alias = {"A@B": "A*B", "wp.mul(A,B)": "A*B", "wp.div(A,s)": "A/s", "wp.add": "A+B", "wp.sub": "A-B",
             "wp.neg": "-A", "wp.pos": "+A"}
    for k, op in enumerate(MAT_OPS):
        if op.startswith("wp.") and mtype != "mat33f":
            continue  # computed for mat33f only
        w = want[alias.get(op, op)]
        if op in ("A*B", "A@B", "wp.mul(A,B)"):
            np.testing.assert_allclose(got[:, k].astype(np.float64), w, err_msg=f"{op} {mtype}", **tol)
        else:
            np.testing.assert_array_equal(got[:, k], w.astype(np_t), err_msg=f"{op} {mtype}")
    for k, op in enumerate(MAT_VEC_OPS):
        w = wantv[{"A@x": "A*x", "x@A": "x*A"}.get(op, op)]
        np.testing.assert_allclose(gotv[:, k].astype(np.float64), w, err_msg=f"{op} {mtype}", **tol)

    out = wp.zeros((N, 6 if is_int else 2, 3), dtype=V)
    if is_int:
        sh = rng.integers(0, 20, (N, 3, 3))
        xa = np.abs(a)
        wp.launch(extra, dim=N, inputs=[wp.array(xa, dtype=V), wp.array(sh.astype(np_t), dtype=V), out])
        xi, si = xa.astype(np.int64), sh.astype(np.int64)
        want = [xi & si, xi | si, xi ^ si, xi << si, xi >> si, ~xi]
        for k, op in enumerate(MAT_INT_OPS):
            np.testing.assert_array_equal(out.numpy()[:, k], want[k].astype(np.int32), err_msg=op)
    else:
        wp.launch(extra, dim=N, inputs=[wp.array(a, dtype=V), wp.array(b, dtype=V), wp.array(s, dtype=T), out])
        rtol = {np.float16: 1e-3, np.float32: 1e-6, np.float64: 1e-14}[np_t]
        got = out.numpy().astype(np.float64)
        np.testing.assert_allclose(got[:, 0], a.astype(np.float64) / sc, rtol=rtol, err_msg="div_approx(A, s)")
        np.testing.assert_allclose(got[:, 1], sc.astype(np.float64) / b, rtol=rtol, err_msg="div_approx(s, A)")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nonsquare_matrix_products(wp, dtype):
    T, np_t = FLOATS[dtype]
    kernel = NONSQUARE_KERNELS[dtype]
    rng = np.random.default_rng(205)
    a = rng.uniform(-3, 3, (N, 2, 3)).astype(np_t)  # 2x3
    b = rng.uniform(-3, 3, (N, 3, 4)).astype(np_t)  # 3x4
    x = rng.uniform(-3, 3, (N, 3)).astype(np_t)
    y = rng.uniform(-3, 3, (N, 2)).astype(np_t)
    V2, V3, V4 = {"float32": (wp.vec2f, wp.vec3f, wp.vec4f), "float64": (wp.vec2d, wp.vec3d, wp.vec4d)}[dtype]
    ab = wp.zeros((N, 2), dtype=V4)
    ax = wp.zeros(N, dtype=V2)
    ya = wp.zeros(N, dtype=V3)
    wp.launch(kernel, dim=N, inputs=[wp.array(a, dtype=V3), wp.array(b, dtype=V4), wp.array(x, dtype=V3),
                                     wp.array(y, dtype=V2), ab, ax, ya])
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(ab.numpy(), a @ b, **tol)
    np.testing.assert_allclose(ax.numpy(), np.einsum("nij,nj->ni", a, x), **tol)
    np.testing.assert_allclose(ya.numpy(), np.einsum("ni,nij->nj", y, a), **tol)


def _make_nonsquare_kernel(T, V2, V3, V4, tag):
    @specialize(tag)
    def nonsquare(a: wp.array2d(dtype=V3), b: wp.array2d(dtype=V4), x: wp.array(dtype=V3), y: wp.array(dtype=V2),
                  ab: wp.array2d(dtype=V4), ax: wp.array(dtype=V2), ya: wp.array(dtype=V3)):
        i = wp.tid()
        A = wp.matrix_from_rows(a[i, 0], a[i, 1])
        B = wp.matrix_from_rows(b[i, 0], b[i, 1], b[i, 2])
        C = A @ B
        ab[i, 0] = C[0]
        ab[i, 1] = C[1]
        ax[i] = A * x[i]
        ya[i] = y[i] * A

    return nonsquare


NONSQUARE_KERNELS = {"float32": _make_nonsquare_kernel(wp.float32, wp.vec2f, wp.vec3f, wp.vec4f, "float32"),
                     "float64": _make_nonsquare_kernel(wp.float64, wp.vec2d, wp.vec3d, wp.vec4d, "float64")}


# ------------------------------------------------------------ quaternions and transforms

def qmul(p, q):
    """Hamilton product of (x, y, z, w) quaternions."""
    pv, pw = p[..., :3], p[..., 3:]
    qv, qw = q[..., :3], q[..., 3:]
    v = pw * qv + qw * pv + np.cross(pv, qv)
    w = pw * qw - np.sum(pv * qv, axis=-1, keepdims=True)
    return np.concatenate([v, w], axis=-1)


def qrotate(q, x):
    """Warp's quat_rotate: x (2w^2 - 1) + 2w (v x x) + 2v (v . x) (a rotation for unit q)."""
    v, w = q[..., :3], q[..., 3:]
    return x * (2 * w * w - 1) + np.cross(v, x) * w * 2 + v * np.sum(v * x, axis=-1, keepdims=True) * 2


QUAT_OPS = ["p+q", "p-q", "q*s", "s*q", "p*q", "q/s", "s/q", "-q", "+q", "div_approx(q,s)", "div_approx(s,q)",
            "wp.mul(p,q)", "wp.add", "wp.sub", "wp.div(q,s)", "wp.neg"]


def _make_quat_kernel(T, V4, tag):
    named = tag == "float32"

    @specialize(tag)
    def quat_ops(a: wp.array(dtype=V4), b: wp.array(dtype=V4), s: wp.array(dtype=T), out: wp.array2d(dtype=V4)):
        i = wp.tid()
        p = wp.quaternion(a[i][0], a[i][1], a[i][2], a[i][3], dtype=T)
        q = wp.quaternion(b[i][0], b[i][1], b[i][2], b[i][3], dtype=T)
        r0 = p + q
        r1 = p - q
        r2 = q * s[i]
        r3 = s[i] * q
        r4 = p * q
        r5 = q / s[i]
        r6 = s[i] / q
        r7 = -q
        r8 = +q
        r9 = wp.div_approx(q, s[i])
        r10 = wp.div_approx(s[i], q)
        out[i, 0] = V4(r0[0], r0[1], r0[2], r0[3])
        out[i, 1] = V4(r1[0], r1[1], r1[2], r1[3])
        out[i, 2] = V4(r2[0], r2[1], r2[2], r2[3])
        out[i, 3] = V4(r3[0], r3[1], r3[2], r3[3])
        out[i, 4] = V4(r4[0], r4[1], r4[2], r4[3])
        out[i, 5] = V4(r5[0], r5[1], r5[2], r5[3])
        out[i, 6] = V4(r6[0], r6[1], r6[2], r6[3])
        out[i, 7] = V4(r7[0], r7[1], r7[2], r7[3])
        out[i, 8] = V4(r8[0], r8[1], r8[2], r8[3])
        out[i, 9] = V4(r9[0], r9[1], r9[2], r9[3])
        out[i, 10] = V4(r10[0], r10[1], r10[2], r10[3])
        if named:  # the builtins by name: the same overloads, checked for one dtype
            r11 = wp.mul(p, q)
            r12 = wp.add(p, q)
            r13 = wp.sub(p, q)
            r14 = wp.div(q, s[i])
            r15 = wp.neg(q)
            out[i, 11] = V4(r11[0], r11[1], r11[2], r11[3])
            out[i, 12] = V4(r12[0], r12[1], r12[2], r12[3])
            out[i, 13] = V4(r13[0], r13[1], r13[2], r13[3])
            out[i, 14] = V4(r14[0], r14[1], r14[2], r14[3])
            out[i, 15] = V4(r15[0], r15[1], r15[2], r15[3])

    return quat_ops


V4S = {"float16": wp.vec4h, "float32": wp.vec4f, "float64": wp.vec4d}
V3S = {"float16": wp.vec3h, "float32": wp.vec3f, "float64": wp.vec3d}
QUAT_KERNELS = {name: _make_quat_kernel(T, V4S[name], name) for name, (T, _) in FLOATS.items()}


@pytest.mark.parametrize("dtype", FLOATS)
def test_quaternion_operators(wp, dtype):
    T, np_t = FLOATS[dtype]
    V4 = V4S[dtype]
    rng = np.random.default_rng(206)
    a = rng.uniform(-2, 2, (N, 4)).astype(np_t)
    b = (rng.uniform(0.5, 2, (N, 4)) * np.where(rng.random((N, 4)) < 0.5, -1, 1)).astype(np_t)
    s = (rng.uniform(0.5, 4, N) * np.where(rng.random(N) < 0.5, -1, 1)).astype(np_t)
    out = wp.zeros((N, len(QUAT_OPS)), dtype=V4)
    wp.launch(QUAT_KERNELS[dtype], dim=N, inputs=[wp.array(a, dtype=V4), wp.array(b, dtype=V4),
                                                 wp.array(s, dtype=T), out])
    got = out.numpy()
    sc = s[:, None]
    exact = {"p+q": a + b, "p-q": a - b, "q*s": b * sc, "s*q": sc * b, "q/s": b / sc, "s/q": sc / b, "-q": -b,
             "+q": b, "wp.add": a + b, "wp.sub": a - b, "wp.div(q,s)": b / sc, "wp.neg": -b}
    prod = qmul(a.astype(np.float64), b.astype(np.float64))
    tol = {"float16": dict(rtol=2e-3, atol=2e-2), "float32": dict(rtol=1e-5, atol=1e-5),
           "float64": dict(rtol=1e-13, atol=1e-13)}[dtype]
    for k, op in enumerate(QUAT_OPS):
        if op.startswith("wp.") and dtype != "float32":
            continue  # computed for float32 only
        if op in exact:
            np.testing.assert_array_equal(got[:, k], exact[op], err_msg=f"{op} {dtype}")
        elif op in ("p*q", "wp.mul(p,q)"):
            np.testing.assert_allclose(got[:, k].astype(np.float64), prod, err_msg=f"{op} {dtype}", **tol)
        else:
            w = b.astype(np.float64) / sc if op == "div_approx(q,s)" else sc.astype(np.float64) / b
            rtol = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-14}[dtype]
            np.testing.assert_allclose(got[:, k].astype(np.float64), w, rtol=rtol, err_msg=f"{op} {dtype}")


def _make_transform_kernel(T, V3, V4, tag):
    @specialize(tag)
    def transform_ops(p: wp.array2d(dtype=V3), q: wp.array2d(dtype=V4), s: wp.array(dtype=T),
                      outp: wp.array2d(dtype=V3), outq: wp.array2d(dtype=V4)):
        i = wp.tid()
        t1 = wp.transformation(p[i, 0], wp.quaternion(q[i, 0][0], q[i, 0][1], q[i, 0][2], q[i, 0][3], dtype=T),
                               dtype=T)
        t2 = wp.transformation(p[i, 1], wp.quaternion(q[i, 1][0], q[i, 1][1], q[i, 1][2], q[i, 1][3], dtype=T),
                               dtype=T)
        r0 = t1 + t2
        r1 = t1 - t2
        r2 = t1 * t2
        r3 = s[i] * t1
        r4 = t1 * s[i]
        r5 = wp.mul(t1, t2)
        r6 = wp.add(t1, t2)
        r7 = wp.sub(t1, t2)
        outp[i, 0] = r0.p
        outq[i, 0] = V4(r0.q[0], r0.q[1], r0.q[2], r0.q[3])
        outp[i, 1] = r1.p
        outq[i, 1] = V4(r1.q[0], r1.q[1], r1.q[2], r1.q[3])
        outp[i, 2] = r2.p
        outq[i, 2] = V4(r2.q[0], r2.q[1], r2.q[2], r2.q[3])
        outp[i, 3] = r3.p
        outq[i, 3] = V4(r3.q[0], r3.q[1], r3.q[2], r3.q[3])
        outp[i, 4] = r4.p
        outq[i, 4] = V4(r4.q[0], r4.q[1], r4.q[2], r4.q[3])
        outp[i, 5] = r5.p
        outq[i, 5] = V4(r5.q[0], r5.q[1], r5.q[2], r5.q[3])
        outp[i, 6] = r6.p
        outq[i, 6] = V4(r6.q[0], r6.q[1], r6.q[2], r6.q[3])
        outp[i, 7] = r7.p
        outq[i, 7] = V4(r7.q[0], r7.q[1], r7.q[2], r7.q[3])

    return transform_ops


TRANSFORM_KERNELS = {name: _make_transform_kernel(FLOATS[name][0], V3S[name], V4S[name], name)
                     for name in ("float32", "float64")}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_transform_operators(wp, dtype):
    T, np_t = FLOATS[dtype]
    rng = np.random.default_rng(207)
    p = rng.uniform(-3, 3, (N, 2, 3)).astype(np_t)
    q = rng.standard_normal((N, 2, 4))
    q = (q / np.linalg.norm(q, axis=-1, keepdims=True)).astype(np_t)
    s = rng.uniform(-3, 3, N).astype(np_t)
    outp = wp.zeros((N, 8), dtype=V3S[dtype])
    outq = wp.zeros((N, 8), dtype=V4S[dtype])
    wp.launch(TRANSFORM_KERNELS[dtype], dim=N,
              inputs=[wp.array(p, dtype=V3S[dtype]), wp.array(q, dtype=V4S[dtype]), wp.array(s, dtype=T), outp, outq])
    gp, gq = outp.numpy(), outq.numpy()
    p1, p2, q1, q2 = p[:, 0], p[:, 1], q[:, 0], q[:, 1]
    sc = s[:, None]
    exact = {0: (p1 + p2, q1 + q2), 1: (p1 - p2, q1 - q2), 3: (sc * p1, sc * q1), 4: (p1 * sc, q1 * sc),
             6: (p1 + p2, q1 + q2), 7: (p1 - p2, q1 - q2)}
    for k, (wp_, wq) in exact.items():
        np.testing.assert_array_equal(gp[:, k], wp_, err_msg=f"p of result {k}")
        np.testing.assert_array_equal(gq[:, k], wq, err_msg=f"q of result {k}")
    # t1 * t2 (and wp.mul) = (p1 + rotate(q1, p2), q1 q2)
    f = np.float64
    wp_ = p1.astype(f) + qrotate(q1.astype(f), p2.astype(f))
    wq = qmul(q1.astype(f), q2.astype(f))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-13, atol=1e-13)
    for k in (2, 5):
        np.testing.assert_allclose(gp[:, k], wp_, **tol)
        np.testing.assert_allclose(gq[:, k], wq, **tol)


# ------------------------------------------------------------ comparisons

def _make_compare_kernel(T, tag):
    @specialize(tag)
    def compare(a: wp.array(dtype=T), b: wp.array(dtype=T), out: wp.array2d(dtype=wp.int32)):
        i = wp.tid()
        x = a[i]
        y = b[i]
        out[i, 0] = int(x == y)
        out[i, 1] = int(x != y)
        out[i, 2] = int(x < y)
        out[i, 3] = int(x <= y)
        out[i, 4] = int(x > y)
        out[i, 5] = int(x >= y)

    return compare


COMPARE_KERNELS = {name: _make_compare_kernel(T, name) for name, (T, _) in SCALARS.items()}


@pytest.mark.parametrize("dtype", SCALARS)
def test_scalar_comparisons(wp, dtype):
    T, np_t = SCALARS[dtype]
    rng = np.random.default_rng(208)
    if dtype in INTS:
        info = np.iinfo(np_t)
        a = rng.integers(max(int(info.min), -3), min(int(info.max), 3), N, endpoint=True).astype(np_t)
        b = rng.integers(max(int(info.min), -3), min(int(info.max), 3), N, endpoint=True).astype(np_t)
        a[:2], b[:2] = [info.max, info.min], [info.min, info.max]
    else:
        a = rng.integers(-3, 3, N).astype(np_t)
        b = rng.integers(-3, 3, N).astype(np_t)
        a[:3], b[:3] = [np.nan, 0.0, -0.0], [np.nan, -0.0, 1.0]  # nan compares unequal; 0 == -0
    out = wp.zeros((N, 6), dtype=wp.int32)
    wp.launch(COMPARE_KERNELS[dtype], dim=N, inputs=[wp.array(a, dtype=T), wp.array(b, dtype=T), out])
    want = np.stack([a == b, a != b, a < b, a <= b, a > b, a >= b], axis=1)
    np.testing.assert_array_equal(out.numpy(), want.astype(np.int32))


@wp.kernel
def compare_composites(a: wp.array(dtype=wp.vec4), b: wp.array(dtype=wp.vec4), out: wp.array2d(dtype=wp.int32)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = int(x == y)
    out[i, 1] = int(x != y)
    mx = wp.mat22(x[0], x[1], x[2], x[3])
    my = wp.mat22(y[0], y[1], y[2], y[3])
    out[i, 2] = int(mx == my)
    out[i, 3] = int(mx != my)
    qx = wp.quat(x[0], x[1], x[2], x[3])
    qy = wp.quat(y[0], y[1], y[2], y[3])
    out[i, 4] = int(qx == qy)
    out[i, 5] = int(qx != qy)
    tx = wp.transform(wp.vec3(x[0], x[1], x[2]), qx)
    ty = wp.transform(wp.vec3(y[0], y[1], y[2]), qy)
    out[i, 6] = int(tx == ty)
    out[i, 7] = int(tx != ty)
    xi = wp.vec4i(int(x[0]), int(x[1]), int(x[2]), int(x[3]))
    yi = wp.vec4i(int(y[0]), int(y[1]), int(y[2]), int(y[3]))
    out[i, 8] = int(xi == yi)
    out[i, 9] = int(xi != yi)


def test_composite_equality(wp):
    """== and != on vectors, matrices, quaternions and transforms: all components equal."""
    rng = np.random.default_rng(209)
    a = rng.integers(0, 2, (N, 4)).astype(np.float32)
    b = a.copy()
    for k in range(N):  # change 0, 1 or 2 components
        for j in rng.choice(4, size=k % 3, replace=False):
            b[k, j] += 1
    out = wp.zeros((N, 10), dtype=wp.int32)
    wp.launch(compare_composites, dim=N, inputs=[wp.array(a, dtype=wp.vec4), wp.array(b, dtype=wp.vec4), out])
    eq = np.all(a == b, axis=1)
    want = np.stack([eq, ~eq] * 5, axis=1).astype(np.int32)
    np.testing.assert_array_equal(out.numpy(), want)

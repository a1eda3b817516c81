"""Values of the Vector Math builtins on vectors (the matrix ones are in
test_builtins_matrix.py), against NumPy and closed forms.

Definitions checked against warp-lang 1.19.0 on CPU: argmax/argmin return the
first index of the extreme value (argmax(1, 3, 3, -2) == 1); normalize(0) == 0;
norm_huber(v, d) = |v|^2 / 2 if |v| <= d else d (|v| - d / 2);
norm_pseudo_huber(v, d) = d sqrt(1 + |v|^2 / d^2); smooth_normalize(v, d) =
v / norm_pseudo_huber(v, d).
"""

import numpy as np
import pytest

import warpd as wp
from kernel_factory import specialize

N = 48


# name -> (vector type, scalar type, numpy dtype, length)
FLOAT_VECS = {"vec3f": (wp.vec3f, wp.float32, np.float32, 3), "vec4d": (wp.vec4d, wp.float64, np.float64, 4),
              "vec2h": (wp.vec2h, wp.float16, np.float16, 2), "vec3d": (wp.vec3d, wp.float64, np.float64, 3)}
INT_VECS = {"vec3i": (wp.vec3i, wp.int32, np.int32, 3), "vec4ub": (wp.vec4ub, wp.uint8, np.uint8, 4),
            "vec2l": (wp.vec2l, wp.int64, np.int64, 2)}
TOL = {np.float16: dict(rtol=4e-3, atol=4e-3), np.float32: dict(rtol=2e-6, atol=2e-6),
       np.float64: dict(rtol=1e-13, atol=1e-13)}

FLOAT_SCALAR_OUT = ["dot", "length", "length_sq", "norm_l1", "norm_l2", "norm_huber", "norm_pseudo_huber"]
FLOAT_VEC_OUT = ["cw_mul", "cw_div", "normalize", "smooth_normalize", "normalize(0)"]


def _make_float_kernel(V, T, tag):
    @specialize(tag)
    def float_vec(a: wp.array(dtype=V), b: wp.array(dtype=V), d: wp.array(dtype=T), ov: wp.array2d(dtype=V),
                  os: wp.array2d(dtype=T), oi: wp.array2d(dtype=wp.uint32)):
        i = wp.tid()
        x = a[i]
        y = b[i]
        os[i, 0] = wp.dot(x, y)
        os[i, 1] = wp.length(x)
        os[i, 2] = wp.length_sq(x)
        os[i, 3] = wp.norm_l1(x)
        os[i, 4] = wp.norm_l2(x)
        os[i, 5] = wp.norm_huber(x, d[i])
        os[i, 6] = wp.norm_pseudo_huber(x, d[i])
        ov[i, 0] = wp.cw_mul(x, y)
        ov[i, 1] = wp.cw_div(x, y)
        ov[i, 2] = wp.normalize(x)
        ov[i, 3] = wp.smooth_normalize(x, d[i])
        ov[i, 4] = wp.normalize(x - x)
        oi[i, 0] = wp.argmax(x)
        oi[i, 1] = wp.argmin(x)

    return float_vec


FLOAT_KERNELS = {tag: _make_float_kernel(V, T, tag) for tag, (V, T, _, _) in FLOAT_VECS.items()}


@pytest.mark.parametrize("vtype", FLOAT_VECS)
def test_float_vector_functions(wp, vtype):
    V, T, np_t, n = FLOAT_VECS[vtype]
    rng = np.random.default_rng(400)
    a = rng.uniform(-3, 3, (N, n))
    b = rng.uniform(0.5, 3, (N, n)) * np.where(rng.random((N, n)) < 0.5, -1, 1)
    d = rng.uniform(0.25, 4, N)
    a[1] = 0.0
    a[2, :] = 1.0  # ties: argmax and argmin both give the first index
    a[3, :2] = [2.0, 2.0]
    a, b, d = a.astype(np_t), b.astype(np_t), d.astype(np_t)
    ov = wp.zeros((N, len(FLOAT_VEC_OUT)), dtype=V)
    os = wp.zeros((N, len(FLOAT_SCALAR_OUT)), dtype=T)
    oi = wp.zeros((N, 2), dtype=wp.uint32)
    wp.launch(FLOAT_KERNELS[vtype], dim=N, inputs=[wp.array(a, dtype=V), wp.array(b, dtype=V), wp.array(d, dtype=T),
                                                  ov, os, oi])
    gv, gs, gi = ov.numpy().astype(np.float64), os.numpy().astype(np.float64), oi.numpy()
    x, y, dd = a.astype(np.float64), b.astype(np.float64), d.astype(np.float64)
    sq = np.sum(x * x, 1)
    ln = np.sqrt(sq)
    want_s = {
        "dot": np.sum(x * y, 1), "length": ln, "length_sq": sq, "norm_l1": np.sum(np.abs(x), 1), "norm_l2": ln,
        "norm_huber": np.where(sq <= dd * dd, 0.5 * sq, dd * (ln - 0.5 * dd)),
        "norm_pseudo_huber": dd * np.sqrt(1 + sq / (dd * dd)),
    }
    safe = np.where(ln > 0, ln, 1)[:, None]
    want_v = {
        "cw_mul": x * y, "cw_div": x / y, "normalize": np.where(ln[:, None] > 0, x / safe, 0.0),
        "smooth_normalize": x / (dd * np.sqrt(1 + sq / (dd * dd)))[:, None], "normalize(0)": np.zeros_like(x),
    }
    tol = TOL[np_t]
    for k, name in enumerate(FLOAT_SCALAR_OUT):
        np.testing.assert_allclose(gs[:, k], want_s[name], err_msg=f"{name} {vtype}", **tol)
    for k, name in enumerate(FLOAT_VEC_OUT):
        np.testing.assert_allclose(gv[:, k], want_v[name], err_msg=f"{name} {vtype}", **tol)
    np.testing.assert_array_equal(gi[:, 0], np.argmax(a, 1), err_msg="argmax")
    np.testing.assert_array_equal(gi[:, 1], np.argmin(a, 1), err_msg="argmin")


def _make_int_kernel(V, T, tag):
    @specialize(tag)
    def int_vec(a: wp.array(dtype=V), b: wp.array(dtype=V), ov: wp.array2d(dtype=V), os: wp.array(dtype=T),
                oi: wp.array2d(dtype=wp.uint32)):
        i = wp.tid()
        x = a[i]
        y = b[i]
        ov[i, 0] = wp.cw_mul(x, y)
        ov[i, 1] = wp.cw_div(x, y)
        os[i] = wp.dot(x, y) + wp.length_sq(x)
        oi[i, 0] = wp.argmax(x)
        oi[i, 1] = wp.argmin(x)

    return int_vec


INT_KERNELS = {tag: _make_int_kernel(V, T, tag) for tag, (V, T, _, _) in INT_VECS.items()}


def _cdiv(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) == (b < 0), q, -q)


@pytest.mark.parametrize("vtype", INT_VECS)
def test_integer_vector_functions(wp, vtype):
    V, T, np_t, n = INT_VECS[vtype]
    rng = np.random.default_rng(401)
    signed = np.issubdtype(np_t, np.signedinteger)
    lo = -9 if signed else 0
    a = rng.integers(lo, 9, (N, n), endpoint=True)
    b = rng.integers(1, 4, (N, n), endpoint=True) * (np.where(rng.random((N, n)) < 0.5, -1, 1) if signed else 1)
    a[0] = 5  # ties
    ov = wp.zeros((N, 2), dtype=V)
    os = wp.zeros(N, dtype=T)
    oi = wp.zeros((N, 2), dtype=wp.uint32)
    wp.launch(INT_KERNELS[vtype], dim=N, inputs=[wp.array(a.astype(np_t), dtype=V), wp.array(b.astype(np_t), dtype=V),
                                                ov, os, oi])
    np.testing.assert_array_equal(ov.numpy()[:, 0], (a * b).astype(np_t), err_msg="cw_mul")
    np.testing.assert_array_equal(ov.numpy()[:, 1], _cdiv(a, b).astype(np_t), err_msg="cw_div (truncating)")
    np.testing.assert_array_equal(os.numpy(), (np.sum(a * b, 1) + np.sum(a * a, 1)).astype(np_t),
                                  err_msg="dot + length_sq")
    np.testing.assert_array_equal(oi.numpy()[:, 0], np.argmax(a, 1), err_msg="argmax")
    np.testing.assert_array_equal(oi.numpy()[:, 1], np.argmin(a, 1), err_msg="argmin")


def _make_cross_kernel(V, tag):
    @specialize(tag)
    def cross(a: wp.array(dtype=V), b: wp.array(dtype=V), out: wp.array(dtype=V)):
        i = wp.tid()
        out[i] = wp.cross(a[i], b[i])

    return cross


CROSS = {"vec3h": (wp.vec3h, np.float16), "vec3f": (wp.vec3f, np.float32), "vec3d": (wp.vec3d, np.float64),
         "vec3i": (wp.vec3i, np.int32)}
CROSS_KERNELS = {tag: _make_cross_kernel(V, tag) for tag, (V, _) in CROSS.items()}


@pytest.mark.parametrize("vtype", CROSS)
def test_cross(wp, vtype):
    V, np_t = CROSS[vtype]
    rng = np.random.default_rng(402)
    a = rng.integers(-20, 20, (N, 3)) if np_t is np.int32 else rng.uniform(-3, 3, (N, 3))
    b = rng.integers(-20, 20, (N, 3)) if np_t is np.int32 else rng.uniform(-3, 3, (N, 3))
    a, b = a.astype(np_t), b.astype(np_t)
    out = wp.zeros(N, dtype=V)
    wp.launch(CROSS_KERNELS[vtype], dim=N, inputs=[wp.array(a, dtype=V), wp.array(b, dtype=V), out])
    want = np.cross(a.astype(np.float64), b.astype(np.float64))
    if np_t is np.int32:
        np.testing.assert_array_equal(out.numpy(), want.astype(np.int32))
    else:
        tol = dict(rtol=5e-3, atol=2e-2) if np_t is np.float16 else TOL[np_t]
        np.testing.assert_allclose(out.numpy().astype(np.float64), want, **tol)


@wp.kernel
def vector_constructors(a: wp.array(dtype=wp.vec3d), s: wp.array(dtype=wp.float64), i32: wp.array(dtype=wp.int32),
                        o3: wp.array2d(dtype=wp.vec3d), o5: wp.array2d(dtype=wp.float64), oi: wp.array(dtype=wp.vec4i),
                        of: wp.array(dtype=wp.vec3f)):
    i = wp.tid()
    x = a[i]
    o3[i, 0] = wp.vector(x[2], x[1], x[0])  # length and dtype from the components
    o3[i, 1] = wp.vector(s[i], length=3)  # splat
    o3[i, 2] = wp.vector(length=3, dtype=wp.float64)  # zeros
    o3[i, 3] = wp.vec3d(s[i])
    o3[i, 4] = wp.vec3d(wp.vec3f(float(x[0]), float(x[1]), float(x[2])))  # conversion
    v5 = wp.vector(x[0], x[1], x[2], s[i], s[i] + x[0], dtype=wp.float64)
    for k in range(5):
        o5[i, k] = v5[k]
    o5[i, 5] = wp.float64(len(v5))
    oi[i] = wp.vector(i32[i], i32[i] + 1, i32[i] + 2, i32[i] * 2)
    of[i] = wp.vec3f(x)  # float64 -> float32 conversion


def test_vector_constructor(wp):
    rng = np.random.default_rng(403)
    a = rng.uniform(-5, 5, (N, 3))
    s = rng.uniform(-5, 5, N)
    n = rng.integers(-100, 100, N).astype(np.int32)
    o3 = wp.zeros((N, 5), dtype=wp.vec3d)
    o5 = wp.zeros((N, 6), dtype=wp.float64)
    oi = wp.zeros(N, dtype=wp.vec4i)
    of = wp.zeros(N, dtype=wp.vec3f)
    wp.launch(vector_constructors, dim=N, inputs=[wp.array(a, dtype=wp.vec3d), wp.array(s, dtype=wp.float64),
                                                 wp.array(n, dtype=wp.int32), o3, o5, oi, of])
    g = o3.numpy()
    np.testing.assert_array_equal(g[:, 0], a[:, ::-1])
    np.testing.assert_array_equal(g[:, 1], np.repeat(s[:, None], 3, 1))
    np.testing.assert_array_equal(g[:, 2], np.zeros((N, 3)))
    np.testing.assert_array_equal(g[:, 3], np.repeat(s[:, None], 3, 1))
    np.testing.assert_array_equal(g[:, 4], a.astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(o5.numpy(), np.concatenate([a, s[:, None], (s + a[:, 0])[:, None],
                                                              np.full((N, 1), 5.0)], 1))
    np.testing.assert_array_equal(oi.numpy(), np.stack([n, n + 1, n + 2, n * 2], 1))
    np.testing.assert_array_equal(of.numpy(), a.astype(np.float32))


@wp.kernel
def default_delta(a: wp.array(dtype=wp.vec3), os: wp.array2d(dtype=float), ov: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    os[i, 0] = wp.norm_huber(a[i])  # Warp 1.19: delta defaults to 1.0
    os[i, 1] = wp.norm_pseudo_huber(a[i])
    ov[i] = wp.smooth_normalize(a[i])


def test_norms_default_delta(wp):
    rng = np.random.default_rng(404)
    a = rng.uniform(-1.5, 1.5, (N, 3)).astype(np.float32)
    os = wp.zeros((N, 2), dtype=float)
    ov = wp.zeros(N, dtype=wp.vec3)
    wp.launch(default_delta, dim=N, inputs=[wp.array(a, dtype=wp.vec3), os, ov])
    x = a.astype(np.float64)
    sq = np.sum(x * x, 1)
    tol = TOL[np.float32]
    np.testing.assert_allclose(os.numpy()[:, 0], np.where(sq <= 1, 0.5 * sq, np.sqrt(sq) - 0.5), **tol)
    np.testing.assert_allclose(os.numpy()[:, 1], np.sqrt(1 + sq), **tol)
    np.testing.assert_allclose(ov.numpy(), x / np.sqrt(1 + sq)[:, None], **tol)


@wp.kernel(module="unique")
def cw_div_alone(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    # A module with no matrix in it (issue 24: cw_div on vectors was an InternalError then).
    i = wp.tid()
    out[i] = wp.cw_div(a[i], b[i])


def test_cw_div_on_vectors_in_a_module_without_matrices(wp):
    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, (8, 3)).astype(np.float32)
    y = rng.uniform(0.5, 2, (8, 3)).astype(np.float32)
    out = wp.zeros(8, dtype=wp.vec3)
    wp.launch(cw_div_alone, dim=8, inputs=[wp.array(x, dtype=wp.vec3), wp.array(y, dtype=wp.vec3), out])
    np.testing.assert_array_equal(out.numpy(), x / y)

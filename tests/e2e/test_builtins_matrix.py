"""Values of the Vector Math builtins on matrices, against NumPy.

Matrices travel as rows (wp.matrix_from_rows) and come back as flat rows of
scalars. Conventions checked against warp-lang 1.19.0 on CPU (200 random
inputs): the inverse of an exactly singular matrix is zero; svd3 gives
rotations U, V (det +1) and sigma sorted by magnitude with sigma1, sigma2 >= 0
and the sign of det(A) on sigma3 (its float32 reconstruction error reaches
7e-4); svd2 gives det(V) = +1 and sigma >= 0 sorted; qr3 gives a rotation Q
and an upper triangular R; eig3 gives a rotation Q and unsorted eigenvalues.
"""

import numpy as np
import pytest

import warpd as wp
from kernel_factory import specialize

N = 32


FLOATS = {"float32": (wp.float32, np.float32, wp.vec2f, wp.vec3f, wp.vec4f),
          "float64": (wp.float64, np.float64, wp.vec2d, wp.vec3d, wp.vec4d)}
TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-12, atol=1e-12)}
# Iterative decompositions: Warp's own float32 accuracy (see above) and a float64 bound.
DECOMP_TOL = {"float32": dict(rtol=0, atol=3e-3), "float64": dict(rtol=0, atol=1e-8)}

# out[i, :] holds these results one after the other, each as rows * cols scalars.
LAYOUT = [("det2", 1, 1), ("det3", 1, 1), ("det4", 1, 1), ("inv2", 2, 2), ("inv3", 3, 3), ("inv4", 4, 4),
          ("inva2", 2, 2), ("inva3", 3, 3), ("inva4", 4, 4), ("transpose", 3, 3), ("transpose23", 3, 2),
          ("trace", 1, 1), ("ddot", 1, 1), ("cw_mul", 3, 3), ("cw_div", 3, 3), ("diag", 3, 3), ("get_diag", 1, 3),
          ("outer", 3, 4), ("skew", 3, 3), ("identity3", 3, 3), ("identity4", 4, 4), ("matrix", 2, 3),
          ("matrix_splat", 2, 2), ("from_cols", 3, 2), ("mat33", 3, 3), ("svd3_U", 3, 3), ("svd3_s", 1, 3),
          ("svd3_V", 3, 3), ("svd2_U", 2, 2), ("svd2_s", 1, 2), ("svd2_V", 2, 2), ("qr3_Q", 3, 3), ("qr3_R", 3, 3),
          ("eig3_Q", 3, 3), ("eig3_d", 1, 3)]
OFFSET = {}
_o = 0
for _name, _r, _c in LAYOUT:
    OFFSET[_name] = (_o, _r, _c)
    _o += _r * _c
WIDTH = _o


def _make_kernel(T, V2, V3, V4, tag):
    @specialize(tag)
    def matrix_funcs(a2: wp.array2d(dtype=V2), a3: wp.array2d(dtype=V3), a4: wp.array2d(dtype=V4),
                     b3: wp.array2d(dtype=V3), x: wp.array(dtype=V3), y: wp.array(dtype=V4), out: wp.array2d(dtype=T)):
        i = wp.tid()
        A2 = wp.matrix_from_rows(a2[i, 0], a2[i, 1])
        A3 = wp.matrix_from_rows(a3[i, 0], a3[i, 1], a3[i, 2])
        A4 = wp.matrix_from_rows(a4[i, 0], a4[i, 1], a4[i, 2], a4[i, 3])
        B3 = wp.matrix_from_rows(b3[i, 0], b3[i, 1], b3[i, 2])
        out[i, 0] = wp.determinant(A2)
        out[i, 1] = wp.determinant(A3)
        out[i, 2] = wp.determinant(A4)
        o = 3
        m2 = wp.inverse(A2)
        for r in range(2):
            for c in range(2):
                out[i, o + r * 2 + c] = m2[r, c]
        o += 4
        m3 = wp.inverse(A3)
        for r in range(3):
            for c in range(3):
                out[i, o + r * 3 + c] = m3[r, c]
        o += 9
        m4 = wp.inverse(A4)
        for r in range(4):
            for c in range(4):
                out[i, o + r * 4 + c] = m4[r, c]
        o += 16
        m2 = wp.inverse_approx(A2)
        for r in range(2):
            for c in range(2):
                out[i, o + r * 2 + c] = m2[r, c]
        o += 4
        m3 = wp.inverse_approx(A3)
        for r in range(3):
            for c in range(3):
                out[i, o + r * 3 + c] = m3[r, c]
        o += 9
        m4 = wp.inverse_approx(A4)
        for r in range(4):
            for c in range(4):
                out[i, o + r * 4 + c] = m4[r, c]
        o += 16
        m3 = wp.transpose(A3)
        for r in range(3):
            for c in range(3):
                out[i, o + r * 3 + c] = m3[r, c]
        o += 9
        m32 = wp.transpose(wp.matrix_from_rows(a3[i, 0], a3[i, 1]))
        for r in range(3):
            for c in range(2):
                out[i, o + r * 2 + c] = m32[r, c]
        o += 6
        out[i, o] = wp.trace(A3)
        out[i, o + 1] = wp.ddot(A3, B3)
        o += 2
        m3 = wp.cw_mul(A3, B3)
        for r in range(3):
            for c in range(3):
                out[i, o + r * 3 + c] = m3[r, c]
        o += 9
        m3 = wp.cw_div(A3, B3)
        for r in range(3):
            for c in range(3):
                out[i, o + r * 3 + c] = m3[r, c]
        o += 9
        m3 = wp.diag(x[i])
        for r in range(3):
            for c in range(3):
                out[i, o + r * 3 + c] = m3[r, c]
        o += 9
        d = wp.get_diag(A3)
        for c in range(3):
            out[i, o + c] = d[c]
        o += 3
        m34 = wp.outer(x[i], y[i])
        for r in range(3):
            for c in range(4):
                out[i, o + r * 4 + c] = m34[r, c]
        o += 12
        m3 = wp.skew(x[i])
        for r in range(3):
            for c in range(3):
                out[i, o + r * 3 + c] = m3[r, c]
        o += 9
        m3 = wp.identity(n=3, dtype=T)
        for r in range(3):
            for c in range(3):
                out[i, o + r * 3 + c] = m3[r, c]
        o += 9
        m4 = wp.identity(n=4, dtype=T)
        for r in range(4):
            for c in range(4):
                out[i, o + r * 4 + c] = m4[r, c]
        o += 16
        v = x[i]
        m23 = wp.matrix(v[0], v[1], v[2], v[2], v[1], v[0], shape=(2, 3), dtype=T)
        for r in range(2):
            for c in range(3):
                out[i, o + r * 3 + c] = m23[r, c]
        o += 6
        m2 = wp.matrix(v[1], shape=(2, 2), dtype=T)
        for r in range(2):
            for c in range(2):
                out[i, o + r * 2 + c] = m2[r, c]
        o += 4
        m32 = wp.matrix_from_cols(a3[i, 0], a3[i, 1])
        for r in range(3):
            for c in range(2):
                out[i, o + r * 2 + c] = m32[r, c]
        o += 6
        w = a3[i, 0]
        m3 = wp.matrix(w[0], w[1], w[2], v[0], v[1], v[2], w[2], w[1], w[0], shape=(3, 3), dtype=T)
        for r in range(3):
            for c in range(3):
                out[i, o + r * 3 + c] = m3[r, c]
        o += 9
        U = wp.identity(n=3, dtype=T)
        V = wp.identity(n=3, dtype=T)
        s = V3()
        wp.svd3(A3, U, s, V)
        for r in range(3):
            for c in range(3):
                out[i, o + r * 3 + c] = U[r, c]
                out[i, o + 12 + r * 3 + c] = V[r, c]
            out[i, o + 9 + r] = s[r]
        o += 21
        U2 = wp.identity(n=2, dtype=T)
        W2 = wp.identity(n=2, dtype=T)
        s2 = V2()
        wp.svd2(A2, U2, s2, W2)
        for r in range(2):
            for c in range(2):
                out[i, o + r * 2 + c] = U2[r, c]
                out[i, o + 6 + r * 2 + c] = W2[r, c]
            out[i, o + 4 + r] = s2[r]
        o += 10
        Q = wp.identity(n=3, dtype=T)
        R = wp.identity(n=3, dtype=T)
        wp.qr3(A3, Q, R)
        for r in range(3):
            for c in range(3):
                out[i, o + r * 3 + c] = Q[r, c]
                out[i, o + 9 + r * 3 + c] = R[r, c]
        o += 18
        S = A3 + wp.transpose(A3)
        E = wp.identity(n=3, dtype=T)
        ev = V3()
        wp.eig3(S, E, ev)
        for r in range(3):
            for c in range(3):
                out[i, o + r * 3 + c] = E[r, c]
            out[i, o + 9 + r] = ev[r]

    return matrix_funcs


KERNELS = {tag: _make_kernel(*spec[:1], *spec[2:], tag) for tag, spec in FLOATS.items()}


def get(out, name):
    o, r, c = OFFSET[name]
    return out[:, o:o + r * c].reshape(len(out), r, c) if r > 1 else out[:, o:o + c]


@pytest.fixture(scope="module", params=list(FLOATS))
def results(wp, request):
    dtype = request.param
    T, np_t, V2, V3, V4 = FLOATS[dtype]
    rng = np.random.default_rng(500)
    a2 = rng.uniform(-2, 2, (N, 2, 2))
    a3 = rng.uniform(-2, 2, (N, 3, 3))
    a4 = rng.uniform(-2, 2, (N, 4, 4))
    # exactly singular inputs in row 0 (small integers, so that the determinant is exactly 0: with
    # random reals it is a rounding residue and the "inverse" huge, in Warp 1.19 as here)
    a2[0] = [[1, 2], [2, 4]]
    a3[0] = [[1, 2, 3], [2, 4, 6], [1, 1, 1]]
    a4[0] = [[1, 2, 3, 4], [2, 4, 6, 8], [1, 0, 0, 0], [0, 1, 0, 0]]
    a3[1] = np.diag([1.0, 1.0, -1.0])  # a reflection: sigma3 < 0
    a3[2] = np.eye(3)  # repeated eigenvalues and singular values
    a3[3] = [[3, 0, 0], [0, 0, -3], [0, 1, 0]]  # a rotation times diag(3, 3, 1) in disguise
    b3 = rng.uniform(0.5, 2, (N, 3, 3)) * np.where(rng.random((N, 3, 3)) < 0.5, -1, 1)
    x = rng.uniform(-2, 2, (N, 3))
    y = rng.uniform(-2, 2, (N, 4))
    ins = [v.astype(np_t) for v in (a2, a3, a4, b3, x, y)]
    out = wp.zeros((N, WIDTH), dtype=T)
    wp.launch(KERNELS[dtype], dim=N, inputs=[wp.array(ins[0], dtype=V2), wp.array(ins[1], dtype=V3),
                                            wp.array(ins[2], dtype=V4), wp.array(ins[3], dtype=V3),
                                            wp.array(ins[4], dtype=V3), wp.array(ins[5], dtype=V4), out])
    return dtype, [v.astype(np.float64) for v in ins], out.numpy().astype(np.float64)


def test_determinant(results):
    dtype, (a2, a3, a4, *_), out = results
    for name, a in (("det2", a2), ("det3", a3), ("det4", a4)):
        np.testing.assert_allclose(get(out, name)[:, 0], np.linalg.det(a), err_msg=name,
                                   **{"float32": dict(rtol=1e-5, atol=5e-5), "float64": TOL["float64"]}[dtype])


@pytest.mark.parametrize("which", ["inverse", "inverse_approx"])
def test_inverse(results, which):
    dtype, (a2, a3, a4, *_), out = results
    tol = {"float32": dict(rtol=1e-3, atol=1e-3), "float64": dict(rtol=1e-9, atol=1e-9)}[dtype]
    for n, a in ((2, a2), (3, a3), (4, a4)):
        got = get(out, f"{'inva' if which == 'inverse_approx' else 'inv'}{n}")
        np.testing.assert_array_equal(got[0], np.zeros((n, n)), err_msg=f"{which} of a singular {n}x{n} is zero")
        np.testing.assert_allclose(got[1:], np.linalg.inv(a[1:]), err_msg=f"{which} {n}x{n}", **tol)


def test_elementwise_and_structure(results):
    dtype, (a2, a3, a4, b3, x, y), out = results
    tol = TOL[dtype]
    n = len(out)
    np.testing.assert_array_equal(get(out, "transpose"), np.transpose(a3, (0, 2, 1)), err_msg="transpose")
    np.testing.assert_array_equal(get(out, "transpose23"), np.transpose(a3[:, :2], (0, 2, 1)), err_msg="transpose 2x3")
    np.testing.assert_allclose(get(out, "trace")[:, 0], np.trace(a3, axis1=1, axis2=2), err_msg="trace", **tol)
    np.testing.assert_allclose(get(out, "ddot")[:, 0], np.sum(a3 * b3, (1, 2)), err_msg="ddot", **tol)
    np.testing.assert_allclose(get(out, "cw_mul"), a3 * b3, err_msg="cw_mul", **tol)
    np.testing.assert_allclose(get(out, "cw_div"), a3 / b3, err_msg="cw_div", **tol)
    np.testing.assert_array_equal(get(out, "diag"), x[:, :, None] * np.eye(3), err_msg="diag")
    np.testing.assert_array_equal(get(out, "get_diag"), np.diagonal(a3, axis1=1, axis2=2), err_msg="get_diag")
    np.testing.assert_allclose(get(out, "outer"), x[:, :, None] * y[:, None, :], err_msg="outer", **tol)
    skew = np.zeros((n, 3, 3))
    skew[:, 0, 1], skew[:, 0, 2], skew[:, 1, 2] = -x[:, 2], x[:, 1], -x[:, 0]
    skew -= np.transpose(skew, (0, 2, 1))
    np.testing.assert_array_equal(get(out, "skew"), skew, err_msg="skew")
    np.testing.assert_allclose(np.einsum("nij,nj->ni", get(out, "skew"), y[:, :3]), np.cross(x, y[:, :3]),
                               err_msg="skew(x) y == cross(x, y)", **tol)
    np.testing.assert_array_equal(get(out, "identity3"), np.broadcast_to(np.eye(3), (n, 3, 3)), err_msg="identity 3")
    np.testing.assert_array_equal(get(out, "identity4"), np.broadcast_to(np.eye(4), (n, 4, 4)), err_msg="identity 4")
    np.testing.assert_array_equal(get(out, "matrix"), np.stack([x, x[:, ::-1]], 1), err_msg="matrix(6 scalars)")
    np.testing.assert_array_equal(get(out, "matrix_splat"), np.broadcast_to(x[:, 1, None, None], (n, 2, 2)),
                                  err_msg="matrix(s, shape=(2, 2))")
    np.testing.assert_array_equal(get(out, "from_cols"), np.transpose(a3[:, :2], (0, 2, 1)), err_msg="from_cols")
    np.testing.assert_array_equal(get(out, "mat33"), np.stack([a3[:, 0], x, a3[:, 0, ::-1]], 1), err_msg="matrix 3x3")


def _is_rotation(m, tol, what):
    n = m.shape[-1]
    np.testing.assert_allclose(m @ np.transpose(m, (0, 2, 1)), np.broadcast_to(np.eye(n), m.shape),
                               err_msg=f"{what} orthonormal", **tol)
    np.testing.assert_allclose(np.linalg.det(m), 1.0, err_msg=f"{what} det", **tol)


def test_svd3(results):
    dtype, (a2, a3, *_), out = results
    tol = DECOMP_TOL[dtype]
    U, s, V = get(out, "svd3_U"), get(out, "svd3_s"), get(out, "svd3_V")
    np.testing.assert_allclose(U @ (s[:, :, None] * np.transpose(V, (0, 2, 1))), a3, err_msg="U S V^T", **tol)
    _is_rotation(U, tol, "U")
    _is_rotation(V, tol, "V")
    np.testing.assert_allclose(np.abs(s), np.linalg.svd(a3, compute_uv=False), err_msg="|sigma|", **tol)
    assert np.all(s[:, :2] >= 0)
    det = np.linalg.det(a3)
    nonsingular = np.abs(det) > 1e-6
    np.testing.assert_array_equal(np.sign(s[nonsingular, 2]), np.sign(det[nonsingular]), err_msg="sign of sigma3")


def test_svd2(results):
    dtype, (a2, *_), out = results
    tol = DECOMP_TOL[dtype]
    U, s, V = get(out, "svd2_U"), get(out, "svd2_s"), get(out, "svd2_V")
    np.testing.assert_allclose(U @ (s[:, :, None] * np.transpose(V, (0, 2, 1))), a2, err_msg="U S V^T", **tol)
    np.testing.assert_allclose(U @ np.transpose(U, (0, 2, 1)), np.broadcast_to(np.eye(2), U.shape), **tol)
    _is_rotation(V, tol, "V")
    np.testing.assert_allclose(s, np.linalg.svd(a2, compute_uv=False), err_msg="sigma (>= 0, sorted)", **tol)


def test_qr3(results):
    dtype, (a2, a3, *_), out = results
    tol = DECOMP_TOL[dtype]
    Q, R = get(out, "qr3_Q"), get(out, "qr3_R")
    np.testing.assert_allclose(Q @ R, a3, err_msg="QR", **tol)
    _is_rotation(Q[1:], tol, "Q")  # row 0 is singular
    np.testing.assert_allclose(np.tril(R, -1), 0.0, err_msg="R upper triangular", **tol)


def test_eig3(results):
    dtype, (a2, a3, *_), out = results
    tol = {"float32": dict(rtol=0, atol=5e-3), "float64": DECOMP_TOL["float64"]}[dtype]
    Q, d = get(out, "eig3_Q"), get(out, "eig3_d")
    S = a3 + np.transpose(a3, (0, 2, 1))
    np.testing.assert_allclose(Q @ (d[:, :, None] * np.transpose(Q, (0, 2, 1))), S, err_msg="Q D Q^T", **tol)
    _is_rotation(Q, tol, "Q")
    np.testing.assert_allclose(np.sort(d, 1), np.linalg.eigvalsh(S), err_msg="eigenvalues", **tol)


@wp.kernel
def int_matrices(a: wp.array2d(dtype=wp.vec3i), b: wp.array2d(dtype=wp.vec3i), x: wp.array(dtype=wp.vec3i),
                 out: wp.array2d(dtype=wp.int32)):
    i = wp.tid()
    A = wp.matrix_from_rows(a[i, 0], a[i, 1], a[i, 2])
    B = wp.matrix_from_rows(b[i, 0], b[i, 1], b[i, 2])
    m = wp.cw_mul(A, B)
    n = wp.cw_div(A, B)
    t = wp.transpose(A)
    d = wp.diag(x[i])
    o = wp.outer(x[i], a[i, 0])
    s = wp.skew(x[i])
    e = wp.identity(n=3, dtype=wp.int32)
    g = wp.get_diag(A)
    for r in range(3):
        for c in range(3):
            out[i, r * 3 + c] = m[r, c]
            out[i, 9 + r * 3 + c] = n[r, c]
            out[i, 18 + r * 3 + c] = t[r, c]
            out[i, 27 + r * 3 + c] = d[r, c]
            out[i, 36 + r * 3 + c] = o[r, c]
            out[i, 45 + r * 3 + c] = s[r, c]
            out[i, 54 + r * 3 + c] = e[r, c]
        out[i, 63 + r] = g[r]
    out[i, 66] = wp.trace(A)
    out[i, 67] = wp.ddot(A, B)


def test_integer_matrices(wp):
    rng = np.random.default_rng(501)
    a = rng.integers(-20, 20, (N, 3, 3), endpoint=True)
    b = rng.integers(1, 5, (N, 3, 3), endpoint=True) * np.where(rng.random((N, 3, 3)) < 0.5, -1, 1)
    x = rng.integers(-9, 9, (N, 3), endpoint=True)
    out = wp.zeros((N, 68), dtype=wp.int32)
    wp.launch(int_matrices, dim=N, inputs=[wp.array(a.astype(np.int32), dtype=wp.vec3i),
                                          wp.array(b.astype(np.int32), dtype=wp.vec3i),
                                          wp.array(x.astype(np.int32), dtype=wp.vec3i), out])
    g = out.numpy()
    q = np.abs(a) // np.abs(b)
    skew = np.zeros((N, 3, 3), dtype=np.int64)
    skew[:, 0, 1], skew[:, 0, 2], skew[:, 1, 2] = -x[:, 2], x[:, 1], -x[:, 0]
    skew -= np.transpose(skew, (0, 2, 1))
    want = [a * b, np.where((a < 0) == (b < 0), q, -q), np.transpose(a, (0, 2, 1)), x[:, :, None] * np.eye(3, dtype=int),
            x[:, :, None] * a[:, 0, None, :], skew, np.broadcast_to(np.eye(3, dtype=int), (N, 3, 3))]
    for k, (name, w) in enumerate(zip(["cw_mul", "cw_div", "transpose", "diag", "outer", "skew", "identity"], want)):
        np.testing.assert_array_equal(g[:, 9 * k:9 * k + 9], w.reshape(N, 9), err_msg=name)
    np.testing.assert_array_equal(g[:, 63:66], np.diagonal(a, axis1=1, axis2=2), err_msg="get_diag")
    np.testing.assert_array_equal(g[:, 66], np.trace(a, axis1=1, axis2=2), err_msg="trace")
    np.testing.assert_array_equal(g[:, 67], np.sum(a * b, (1, 2)), err_msg="ddot")


@wp.kernel
def half_matrices(a: wp.array2d(dtype=wp.vec3h), out: wp.array2d(dtype=wp.float16)):
    i = wp.tid()
    A = wp.matrix_from_rows(a[i, 0], a[i, 1], a[i, 2])
    out[i, 0] = wp.determinant(A)
    out[i, 1] = wp.trace(A)
    m = wp.inverse(A)
    t = wp.transpose(A)
    for r in range(3):
        for c in range(3):
            out[i, 2 + r * 3 + c] = m[r, c]
            out[i, 11 + r * 3 + c] = t[r, c]


def test_float16_matrices(wp):
    rng = np.random.default_rng(502)
    a = (rng.uniform(-1, 1, (N, 3, 3)) + 4 * np.eye(3)).astype(np.float16)  # diagonally dominant
    out = wp.zeros((N, 20), dtype=wp.float16)
    wp.launch(half_matrices, dim=N, inputs=[wp.array(a, dtype=wp.vec3h), out])
    g = out.numpy().astype(np.float64)
    a = a.astype(np.float64)
    np.testing.assert_allclose(g[:, 0], np.linalg.det(a), rtol=1e-2, atol=0.1, err_msg="determinant")
    np.testing.assert_allclose(g[:, 1], np.trace(a, axis1=1, axis2=2), rtol=2e-3, atol=1e-2, err_msg="trace")
    np.testing.assert_allclose(g[:, 2:11], np.linalg.inv(a).reshape(N, 9), rtol=2e-2, atol=2e-2, err_msg="inverse")
    np.testing.assert_array_equal(g[:, 11:20], np.transpose(a, (0, 2, 1)).reshape(N, 9), err_msg="transpose")


@wp.kernel(module="unique")
def identity_positional_dtype(out: wp.array(dtype=wp.float64)):
    m = wp.identity(4, wp.float64)  # Warp 1.19 takes dtype positionally too
    out[0] = m[3, 3]


def test_identity_positional_dtype(wp):
    out = wp.zeros(1, dtype=wp.float64)
    wp.launch(identity_positional_dtype, dim=1, inputs=[out])
    assert out.numpy()[0] == 1.0


@wp.kernel(module="unique")
def decompositions_returning_tuples(a: wp.array2d(dtype=wp.vec3), out: wp.array2d(dtype=float)):
    i = wp.tid()
    A = wp.matrix_from_rows(a[i, 0], a[i, 1], a[i, 2])
    U, s, V = wp.svd3(A)  # Warp 1.19's overloads without output arguments return tuples
    Q, R = wp.qr3(A)
    E, d = wp.eig3(A + wp.transpose(A))
    B = wp.matrix_from_rows(wp.vec2(a[i, 0][0], a[i, 0][1]), wp.vec2(a[i, 1][0], a[i, 1][1]))
    U2, s2, V2 = wp.svd2(B)
    M = U * wp.diag(s) * wp.transpose(V) - A
    P = Q * R - A
    F = E * wp.diag(d) * wp.transpose(E) - (A + wp.transpose(A))
    G = U2 * wp.diag(s2) * wp.transpose(V2) - B
    out[i, 0] = wp.max(wp.abs(wp.get_diag(wp.transpose(M) * M)))
    out[i, 1] = wp.max(wp.abs(wp.get_diag(wp.transpose(P) * P)))
    out[i, 2] = wp.max(wp.abs(wp.get_diag(wp.transpose(F) * F)))
    out[i, 3] = wp.max(wp.abs(wp.get_diag(wp.transpose(G) * G)))


def test_decompositions_returning_tuples(wp):
    rng = np.random.default_rng(503)
    a = rng.uniform(-2, 2, (N, 3, 3)).astype(np.float32)
    out = wp.zeros((N, 4), dtype=float)
    wp.launch(decompositions_returning_tuples, dim=N, inputs=[wp.array(a, dtype=wp.vec3), out])
    assert np.all(out.numpy() < 1e-4)


@wp.kernel(module="unique")
def matrix_from_vectors(out: wp.array(dtype=wp.mat22)):
    out[0] = wp.mat22(wp.vec2(1.0, 2.0), wp.vec2(3.0, 4.0))


def test_matrix_constructor_refuses_vectors(wp):
    """Warp 1.19 refuses vectors in a matrix constructor inside kernels (rows or columns?) and points to
    matrix_from_rows/matrix_from_cols; warpd does the same."""
    with pytest.raises(wp.CompileError, match=r"mat22\(\): passing vectors .* wp\.matrix_from_rows\(\) or "
                                              r"wp\.matrix_from_cols\(\)"):
        wp.launch(matrix_from_vectors, dim=1, inputs=[wp.zeros(1, dtype=wp.mat22)])

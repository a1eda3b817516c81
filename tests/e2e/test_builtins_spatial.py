"""Values of the Spatial Math builtins, against closed forms in NumPy.

A spatial vector is (w, v): angular on top, linear at the bottom. Definitions
checked against warp-lang 1.19.0 on CPU (random inputs, agreement to float32
rounding): spatial_cross(a, b) = (wa x wb, wa x vb + va x wb);
spatial_cross_dual(a, b) = (wa x wb + va x vb, wa x vb); spatial_adjoint(R, S)
= [[R, 0], [S, R]]; transform_twist(t, x) = (R w, R v + p x R w);
transform_wrench(t, x) = (R w + p x R v, R v); velocity_at_point(qd, r) =
v + w x r.
"""

import numpy as np
import pytest

import warpd as wp
from kernel_factory import specialize

N = 48


FLOATS = {"float32": (wp.float32, np.float32, wp.vec3f), "float64": (wp.float64, np.float64, wp.vec3d)}
TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-12, atol=1e-12)}


def qrotate(q, x):
    v, w = q[..., :3], q[..., 3:]
    return x * (2 * w * w - 1) + np.cross(v, x) * w * 2 + v * np.sum(v * x, -1, keepdims=True) * 2


def _make_kernel(T, V3, tag):
    # a[i, 0..3]: four vec3: (wa, va) and (wb, vb); m[i, 0..5]: rows of two 3x3 matrices R and S.
    @specialize(tag)
    def spatial_funcs(a: wp.array2d(dtype=V3), m: wp.array2d(dtype=V3), out: wp.array2d(dtype=T)):
        i = wp.tid()
        # Warp 1.19 rejects spatial_vector(..., dtype=): a 6-vector of T is the generic spelling
        x = wp.vector(a[i, 0][0], a[i, 0][1], a[i, 0][2], a[i, 1][0], a[i, 1][1], a[i, 1][2])
        y = wp.vector(a[i, 2][0], a[i, 2][1], a[i, 2][2], a[i, 3][0], a[i, 3][1], a[i, 3][2])
        c = wp.spatial_cross(x, y)
        d = wp.spatial_cross_dual(x, y)
        for k in range(6):
            out[i, k] = c[k]
            out[i, 6 + k] = d[k]
        top = wp.spatial_top(x)
        bottom = wp.spatial_bottom(y)
        for k in range(3):
            out[i, 12 + k] = top[k]
            out[i, 15 + k] = bottom[k]
        out[i, 18] = wp.spatial_dot(x, y)
        R = wp.matrix_from_rows(m[i, 0], m[i, 1], m[i, 2])
        S = wp.matrix_from_rows(m[i, 3], m[i, 4], m[i, 5])
        A = wp.spatial_adjoint(R, S)
        for r in range(6):
            for k in range(6):
                out[i, 19 + r * 6 + k] = A[r, k]

    return spatial_funcs


KERNELS = {tag: _make_kernel(T, V3, tag) for tag, (T, _, V3) in FLOATS.items()}


@pytest.mark.parametrize("dtype", FLOATS)
def test_spatial_algebra(wp, dtype):
    T, np_t, V3 = FLOATS[dtype]
    rng = np.random.default_rng(600)
    a = rng.uniform(-2, 2, (N, 4, 3)).astype(np_t)
    m = rng.uniform(-2, 2, (N, 6, 3)).astype(np_t)
    out = wp.zeros((N, 19 + 36), dtype=T)
    wp.launch(KERNELS[dtype], dim=N, inputs=[wp.array(a, dtype=V3), wp.array(m, dtype=V3), out])
    g = out.numpy().astype(np.float64)
    a, m = a.astype(np.float64), m.astype(np.float64)
    wa, va, wb, vb = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    tol = TOL[dtype]
    np.testing.assert_allclose(g[:, 0:6], np.concatenate([np.cross(wa, wb), np.cross(wa, vb) + np.cross(va, wb)], 1),
                               err_msg="spatial_cross", **tol)
    np.testing.assert_allclose(g[:, 6:12], np.concatenate([np.cross(wa, wb) + np.cross(va, vb), np.cross(wa, vb)], 1),
                               err_msg="spatial_cross_dual", **tol)
    np.testing.assert_array_equal(g[:, 12:15], wa, err_msg="spatial_top")
    np.testing.assert_array_equal(g[:, 15:18], vb, err_msg="spatial_bottom")
    np.testing.assert_allclose(g[:, 18], np.sum(wa * wb + va * vb, 1), err_msg="spatial_dot", **tol)
    R, S = m[:, :3], m[:, 3:]
    adj = np.zeros((N, 6, 6))
    adj[:, :3, :3] = R
    adj[:, 3:, 3:] = R
    adj[:, 3:, :3] = S
    np.testing.assert_array_equal(g[:, 19:].reshape(N, 6, 6), adj, err_msg="spatial_adjoint")


@wp.kernel
def spatial_transforms(p: wp.array(dtype=wp.vec3), q: wp.array(dtype=wp.vec4), a: wp.array2d(dtype=wp.vec3),
                       out: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.transform(p[i], wp.quat(q[i][0], q[i][1], q[i][2], q[i][3]))
    x = wp.spatial_vector(a[i, 0], a[i, 1])
    tw = wp.transform_twist(t, x)
    wr = wp.transform_wrench(t, x)
    for k in range(6):
        out[i, k] = tw[k]
        out[i, 6 + k] = wr[k]
    v = wp.velocity_at_point(x, a[i, 2])
    z = wp.spatial_vector()
    zd = wp.spatial_vectord()
    w = a[i, 0]
    u = a[i, 1]
    x6 = wp.spatial_vector(w[0], w[1], w[2], u[0], u[1], u[2])
    for k in range(3):
        out[i, 12 + k] = v[k]
        out[i, 15 + k] = z[k] + z[k + 3] + float(zd[k]) + float(zd[k + 3])
    for k in range(6):
        out[i, 18 + k] = x6[k] - x[k]


def test_spatial_transforms(wp):
    rng = np.random.default_rng(601)
    p = rng.uniform(-3, 3, (N, 3)).astype(np.float32)
    q = rng.standard_normal((N, 4))
    q = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)
    a = rng.uniform(-2, 2, (N, 3, 3)).astype(np.float32)
    out = wp.zeros((N, 24), dtype=float)
    wp.launch(spatial_transforms, dim=N, inputs=[wp.array(p, dtype=wp.vec3), wp.array(q, dtype=wp.vec4),
                                                wp.array(a, dtype=wp.vec3), out])
    g = out.numpy().astype(np.float64)
    p, q, a = p.astype(np.float64), q.astype(np.float64), a.astype(np.float64)
    w, v, r = a[:, 0], a[:, 1], a[:, 2]
    Rw, Rv = qrotate(q, w), qrotate(q, v)
    tol = TOL["float32"]
    np.testing.assert_allclose(g[:, 0:6], np.concatenate([Rw, Rv + np.cross(p, Rw)], 1), err_msg="transform_twist",
                               **tol)
    np.testing.assert_allclose(g[:, 6:12], np.concatenate([Rw + np.cross(p, Rv), Rv], 1), err_msg="transform_wrench",
                               **tol)
    np.testing.assert_allclose(g[:, 12:15], v + np.cross(w, r), err_msg="velocity_at_point", **tol)
    np.testing.assert_array_equal(g[:, 15:18], 0.0, err_msg="spatial_vector() is zero")
    np.testing.assert_array_equal(g[:, 18:24], 0.0, err_msg="spatial_vector(6 scalars) == spatial_vector(w, v)")

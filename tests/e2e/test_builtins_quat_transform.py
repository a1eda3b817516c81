"""Values of the Quaternion Math and Transformations builtins, against closed forms in NumPy.

Quaternions are (x, y, z, w). The conventions below are Warp 1.19's, checked
against warp-lang 1.19.0 on CPU (random inputs, agreement to float32 rounding):
- quat_rotate(q, x) = x (2w^2 - 1) + 2w (v x x) + 2v (v . x), and quat_to_matrix
  has the rotated basis vectors as columns (so both hold for non-unit q too);
- quat_from_axis_angle does not normalize the axis;
- quat_from_euler(e, i, j, k) = R_k(e[k]) R_j(e[j]) R_i(e[i]) (angles indexed by
  axis); quat_rpy(r, p, y) = R_z(y) R_y(p) R_x(r);
- quat_inverse is the conjugate; quat_slerp takes the shorter arc (negates b
  when dot(a, b) < 0);
- quat_twist(axis, q) = normalize((dot(v, axis) axis, w)); quat_twist_angle =
  2 atan2(|dot(axis, v)|, w), the signed one without the absolute value;
- quat_to_axis_angle gives (-v/|v|, 2 acos(-w)) when w < 0;
- transform t = (p, q): t1 * t2 = (p1 + rotate(q1, p2), q1 q2), inverse =
  (-rotate(q*, p), q*); transform_compose(p, q, s) = [R diag(s) | p].
"""

import numpy as np
import pytest

import warpd as wp
from kernel_factory import specialize

N = 48


# ------------------------------------------------------------ references

E3 = np.eye(3)


def qmul(p, q):
    pv, pw = p[..., :3], p[..., 3:]
    qv, qw = q[..., :3], q[..., 3:]
    return np.concatenate([pw * qv + qw * pv + np.cross(pv, qv), pw * qw - np.sum(pv * qv, -1, keepdims=True)], -1)


def qconj(q):
    return q * np.array([-1.0, -1.0, -1.0, 1.0])


def qrotate(q, x):
    v, w = q[..., :3], q[..., 3:]
    return x * (2 * w * w - 1) + np.cross(v, x) * w * 2 + v * np.sum(v * x, -1, keepdims=True) * 2


def axis_angle(axis, angle):
    angle = np.asarray(angle, dtype=np.float64)[..., None]
    return np.concatenate([axis * np.sin(angle / 2), np.cos(angle / 2)], -1)


def axis_rot(k, angle):
    angle = np.asarray(angle, dtype=np.float64)
    return axis_angle(np.broadcast_to(E3[k], angle.shape + (3,)), angle)


def qmatrix(q):
    return np.stack([qrotate(q, np.broadcast_to(E3[c], q[..., :3].shape)) for c in range(3)], -1)


def slerp(a, b, t):
    out = []
    for p, q, s in zip(a, b, t):
        c = float(np.dot(p, q))
        if c < 0:
            q, c = -q, -c
        th = np.arccos(min(c, 1.0))
        out.append(p if th < 1e-9 else (np.sin((1 - s) * th) * p + np.sin(s * th) * q) / np.sin(th))
    return np.array(out)


def unit_quats(rng, n):
    q = rng.standard_normal((n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[0] = [0.0, 0.0, 0.0, 1.0]
    return q


def close_up_to_sign(got, want, **tol):
    """q and -q are the same rotation: compare with the sign that fits each row."""
    flip = np.sum(got * want, axis=-1, keepdims=True) < 0
    np.testing.assert_allclose(np.where(flip, -got, got), want, **tol)


TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-12, atol=1e-12)}
DT = {"float32": (wp.float32, np.float32, wp.vec3f, wp.vec4f), "float64": (wp.float64, np.float64, wp.vec3d, wp.vec4d)}


# ------------------------------------------------------------ quaternion kernels

def _make_quat_kernel(T, V3, V4, tag):
    @specialize(tag)
    def quat_funcs(a: wp.array(dtype=V4), b: wp.array(dtype=V4), c: wp.array(dtype=V3), s: wp.array(dtype=T),
                   oq: wp.array2d(dtype=V4), ov: wp.array2d(dtype=V3), om: wp.array2d(dtype=V3),
                   osc: wp.array2d(dtype=T)):
        i = wp.tid()
        q = wp.quaternion(a[i][0], a[i][1], a[i][2], a[i][3], dtype=T)
        q2 = wp.quaternion(b[i][0], b[i][1], b[i][2], b[i][3], dtype=T)
        v = c[i]
        r = wp.quat_from_axis_angle(v, s[i])
        oq[i, 0] = V4(r[0], r[1], r[2], r[3])
        r = wp.quat_inverse(q)
        oq[i, 1] = V4(r[0], r[1], r[2], r[3])
        r = wp.quat_rpy(v[0], v[1], v[2])
        oq[i, 2] = V4(r[0], r[1], r[2], r[3])
        r = wp.quat_slerp(q, q2, s[i])
        oq[i, 3] = V4(r[0], r[1], r[2], r[3])
        m = wp.quat_to_matrix(q)
        r = wp.quat_from_matrix(m)
        oq[i, 4] = V4(r[0], r[1], r[2], r[3])
        m4 = wp.matrix_from_rows(V4(m[0, 0], m[0, 1], m[0, 2], v[0]), V4(m[1, 0], m[1, 1], m[1, 2], v[1]),
                                 V4(m[2, 0], m[2, 1], m[2, 2], v[2]), V4(T(0.0), T(0.0), T(0.0), T(1.0)))
        r = wp.quat_from_matrix(m4)
        oq[i, 5] = V4(r[0], r[1], r[2], r[3])
        r = wp.quaternion(v, s[i], dtype=T)  # (ijk, real)
        oq[i, 6] = V4(r[0], r[1], r[2], r[3])
        r = wp.quat_identity(dtype=T)
        oq[i, 7] = V4(r[0], r[1], r[2], r[3])
        r = wp.normalize(q2 * s[i])
        oq[i, 8] = V4(r[0], r[1], r[2], r[3])
        ov[i, 0] = wp.quat_rotate(q, v)
        ov[i, 1] = wp.quat_rotate_inv(q, v)
        axis = V3()
        angle = T(0.0)
        wp.quat_to_axis_angle(q, axis, angle)
        ov[i, 2] = axis
        osc[i, 0] = angle
        osc[i, 1] = wp.dot(q, q2)
        osc[i, 2] = wp.length(q2 * s[i])
        osc[i, 3] = wp.length_sq(q2 * s[i])
        om[i, 0] = m[0]
        om[i, 1] = m[1]
        om[i, 2] = m[2]

    return quat_funcs


QUAT_KERNELS = {tag: _make_quat_kernel(T, V3, V4, tag) for tag, (T, _, V3, V4) in DT.items()}


@pytest.mark.parametrize("dtype", DT)
def test_quaternion_functions(wp, dtype):
    T, np_t, V3, V4 = DT[dtype]
    rng = np.random.default_rng(300)
    a = unit_quats(rng, N)
    a[1] = [0.6, 0.0, 0.8, 0.0]  # w == 0: a half turn
    a[2] = [0.1, -0.2, 0.3, -0.9]  # w < 0
    a[2] /= np.linalg.norm(a[2])
    b = unit_quats(rng, N)
    c = rng.uniform(-1.5, 1.5, (N, 3))
    s = rng.uniform(0.0, 1.0, N)  # slerp parameters, angles, scales
    a, b, c, s = (x.astype(np_t) for x in (a, b, c, s))
    oq = wp.zeros((N, 9), dtype=V4)
    ov = wp.zeros((N, 3), dtype=V3)
    om = wp.zeros((N, 3), dtype=V3)
    osc = wp.zeros((N, 4), dtype=T)
    wp.launch(QUAT_KERNELS[dtype], dim=N, inputs=[wp.array(a, dtype=V4), wp.array(b, dtype=V4), wp.array(c, dtype=V3),
                                                 wp.array(s, dtype=T), oq, ov, om, osc])
    gq, gv, gm, gs = oq.numpy(), ov.numpy(), om.numpy(), osc.numpy()
    a, b, c, s = (x.astype(np.float64) for x in (a, b, c, s))
    tol = TOL[dtype]
    np.testing.assert_allclose(gq[:, 0], axis_angle(c, s), err_msg="quat_from_axis_angle", **tol)
    np.testing.assert_array_equal(gq[:, 1], qconj(a).astype(np_t), err_msg="quat_inverse")
    rpy = qmul(qmul(axis_rot(2, c[:, 2]), axis_rot(1, c[:, 1])), axis_rot(0, c[:, 0]))
    np.testing.assert_allclose(gq[:, 2], rpy, err_msg="quat_rpy", **tol)
    np.testing.assert_allclose(gq[:, 3], slerp(a, b, s), err_msg="quat_slerp", **tol)
    close_up_to_sign(gq[:, 4], a, err_msg="quat_from_matrix(mat33)", **tol)
    close_up_to_sign(gq[:, 5], a, err_msg="quat_from_matrix(mat44)", **tol)
    np.testing.assert_array_equal(gq[:, 6], np.concatenate([c, s[:, None]], 1).astype(np_t), err_msg="quaternion(v, w)")
    np.testing.assert_array_equal(gq[:, 7], np.tile([0.0, 0.0, 0.0, 1.0], (N, 1)), err_msg="quat_identity")
    np.testing.assert_allclose(gq[1:, 8], b[1:] * np.sign(s[1:, None]), err_msg="normalize(quat)", **tol)
    np.testing.assert_allclose(gv[:, 0], qrotate(a, c), err_msg="quat_rotate", **tol)
    np.testing.assert_allclose(gv[:, 1], qrotate(qconj(a), c), err_msg="quat_rotate_inv", **tol)
    # axis-angle: the axis is v/|v| (negated with the angle 2 acos(-w) when w < 0)
    sgn = np.where(a[:, 3:] < 0, -1.0, 1.0)
    vn = np.linalg.norm(a[:, :3], axis=1, keepdims=True)
    rows = vn[:, 0] > 1e-6  # the identity has no axis
    np.testing.assert_allclose(gv[rows, 2], (sgn * a[:, :3] / np.where(vn > 0, vn, 1))[rows],
                               err_msg="quat_to_axis_angle axis", **tol)
    np.testing.assert_allclose(gs[:, 0], 2 * np.arccos(np.abs(a[:, 3])), err_msg="quat_to_axis_angle angle",
                               **(dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else tol))
    np.testing.assert_allclose(gs[:, 1], np.sum(a * b, 1), err_msg="dot(quat)", **tol)
    np.testing.assert_allclose(gs[:, 2], np.abs(s), err_msg="length(quat)", **tol)
    np.testing.assert_allclose(gs[:, 3], s * s, err_msg="length_sq(quat)", **tol)
    np.testing.assert_allclose(gm, qmatrix(a), err_msg="quat_to_matrix", **tol)
    # the matrix is a rotation: orthonormal with determinant 1
    np.testing.assert_allclose(np.linalg.det(gm.astype(np.float64)), 1.0, **tol)


@wp.kernel
def quat_float32_only(a: wp.array(dtype=wp.vec4), c: wp.array(dtype=wp.vec3), ax: wp.array(dtype=wp.vec3),
                      oq: wp.array2d(dtype=wp.vec4), ov: wp.array2d(dtype=wp.vec3), osc: wp.array2d(dtype=float)):
    i = wp.tid()
    q = wp.quat(a[i][0], a[i][1], a[i][2], a[i][3])
    e = c[i]
    r = wp.quat_from_euler(e, 0, 1, 2)
    oq[i, 0] = wp.vec4(r[0], r[1], r[2], r[3])
    r = wp.quat_from_euler(e, 2, 1, 0)
    oq[i, 1] = wp.vec4(r[0], r[1], r[2], r[3])
    r = wp.quat_from_euler(e, 1, 2, 0)
    oq[i, 2] = wp.vec4(r[0], r[1], r[2], r[3])
    r = wp.quat_from_euler(e, 0, 1, 0)
    oq[i, 3] = wp.vec4(r[0], r[1], r[2], r[3])
    r = wp.quat_twist(ax[i], q)
    oq[i, 4] = wp.vec4(r[0], r[1], r[2], r[3])
    # round trips through the inverse functions
    r = wp.quat_from_euler(wp.quat_to_euler(q, 0, 1, 2), 0, 1, 2)
    oq[i, 5] = wp.vec4(r[0], r[1], r[2], r[3])
    r = wp.quat_from_euler(wp.quat_to_euler(q, 2, 0, 1), 2, 0, 1)
    oq[i, 6] = wp.vec4(r[0], r[1], r[2], r[3])
    rpy = wp.quat_to_rpy(q)
    r = wp.quat_rpy(rpy[0], rpy[1], rpy[2])
    oq[i, 7] = wp.vec4(r[0], r[1], r[2], r[3])
    ov[i, 0] = rpy
    ov[i, 1] = wp.quat_to_euler(q, 0, 1, 2)
    osc[i, 0] = wp.quat_twist_angle(ax[i], q)
    osc[i, 1] = wp.quat_twist_angle_signed(ax[i], q)


def test_quaternion_euler_rpy_twist(wp):
    rng = np.random.default_rng(301)
    a = unit_quats(rng, N)
    a[1] = -a[1] if a[1, 3] > 0 else a[1]  # one with w < 0
    e = rng.uniform(-1.4, 1.4, (N, 3))
    ax = rng.standard_normal((N, 3))
    ax /= np.linalg.norm(ax, axis=1, keepdims=True)
    a, e, ax = (x.astype(np.float32) for x in (a, e, ax))
    oq = wp.zeros((N, 8), dtype=wp.vec4)
    ov = wp.zeros((N, 2), dtype=wp.vec3)
    osc = wp.zeros((N, 2), dtype=float)
    wp.launch(quat_float32_only, dim=N, inputs=[wp.array(a, dtype=wp.vec4), wp.array(e, dtype=wp.vec3),
                                               wp.array(ax, dtype=wp.vec3), oq, ov, osc])
    gq, gv, gs = oq.numpy(), ov.numpy(), osc.numpy()
    a, e, ax = (x.astype(np.float64) for x in (a, e, ax))
    tol = TOL["float32"]

    def euler(i, j, k):
        return qmul(qmul(axis_rot(k, e[:, k]), axis_rot(j, e[:, j])), axis_rot(i, e[:, i]))

    np.testing.assert_allclose(gq[:, 0], euler(0, 1, 2), err_msg="quat_from_euler 0,1,2", **tol)
    np.testing.assert_allclose(gq[:, 1], euler(2, 1, 0), err_msg="quat_from_euler 2,1,0", **tol)
    np.testing.assert_allclose(gq[:, 2], euler(1, 2, 0), err_msg="quat_from_euler 1,2,0", **tol)
    np.testing.assert_allclose(gq[:, 3], euler(0, 1, 0), err_msg="quat_from_euler 0,1,0", **tol)
    proj = np.sum(a[:, :3] * ax, 1, keepdims=True) * ax
    twist = np.concatenate([proj, a[:, 3:]], 1)
    np.testing.assert_allclose(gq[:, 4], twist / np.linalg.norm(twist, axis=1, keepdims=True), err_msg="quat_twist",
                               **tol)
    close_up_to_sign(gq[:, 5], a, err_msg="quat_to_euler 0,1,2 round trip", rtol=1e-4, atol=1e-4)
    close_up_to_sign(gq[:, 6], a, err_msg="quat_to_euler 2,0,1 round trip", rtol=1e-4, atol=1e-4)
    close_up_to_sign(gq[:, 7], a, err_msg="quat_to_rpy round trip", rtol=1e-4, atol=1e-4)
    x, y, z, w = a.T
    rpy = np.stack([np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y)),
                    np.arcsin(np.clip(2 * (w * y - z * x), -1, 1)),
                    np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))], 1)
    np.testing.assert_allclose(gv[:, 0], rpy, err_msg="quat_to_rpy", rtol=1e-4, atol=1e-4)
    # quat_to_euler's angles may leave [-pi, pi] (Warp 1.19 too: 3.73 for one input): equal modulo 2 pi
    diff = np.angle(np.exp(1j * (gv[:, 1].astype(np.float64) - gv[:, 0])))
    np.testing.assert_allclose(diff, 0.0, atol=1e-4, err_msg="quat_to_euler(q, 0, 1, 2) == quat_to_rpy(q) mod 2 pi")
    d = np.sum(ax * a[:, :3], 1)
    np.testing.assert_allclose(gs[:, 0], 2 * np.arctan2(np.abs(d), w), err_msg="quat_twist_angle", **tol)
    np.testing.assert_allclose(gs[:, 1], 2 * np.arctan2(d, w), err_msg="quat_twist_angle_signed", **tol)


@wp.kernel
def quat_float16(a: wp.array(dtype=wp.vec4h), c: wp.array(dtype=wp.vec3h), oq: wp.array2d(dtype=wp.vec4h),
                 ov: wp.array2d(dtype=wp.vec3h)):
    i = wp.tid()
    q = wp.quaternion(a[i][0], a[i][1], a[i][2], a[i][3], dtype=wp.float16)
    r = wp.quat_inverse(q)
    oq[i, 0] = wp.vec4h(r[0], r[1], r[2], r[3])
    r = wp.quat_from_axis_angle(c[i], c[i][0])
    oq[i, 1] = wp.vec4h(r[0], r[1], r[2], r[3])
    ov[i, 0] = wp.quat_rotate(q, c[i])
    m = wp.quat_to_matrix(q)
    ov[i, 1] = m[0]
    ov[i, 2] = m[1]
    ov[i, 3] = m[2]


def test_quaternion_float16(wp):
    rng = np.random.default_rng(302)
    a = unit_quats(rng, N).astype(np.float16)
    c = rng.uniform(-1, 1, (N, 3)).astype(np.float16)
    oq = wp.zeros((N, 2), dtype=wp.vec4h)
    ov = wp.zeros((N, 4), dtype=wp.vec3h)
    wp.launch(quat_float16, dim=N, inputs=[wp.array(a, dtype=wp.vec4h), wp.array(c, dtype=wp.vec3h), oq, ov])
    a, c = a.astype(np.float64), c.astype(np.float64)
    tol = dict(rtol=5e-3, atol=5e-3)
    np.testing.assert_array_equal(oq.numpy()[:, 0], qconj(a), err_msg="quat_inverse")
    np.testing.assert_allclose(oq.numpy()[:, 1], axis_angle(c, c[:, 0]), err_msg="quat_from_axis_angle", **tol)
    np.testing.assert_allclose(ov.numpy()[:, 0], qrotate(a, c), err_msg="quat_rotate", **tol)
    np.testing.assert_allclose(ov.numpy()[:, 1:], qmatrix(a), err_msg="quat_to_matrix", **tol)


# ------------------------------------------------------------ transforms

def _make_transform_kernel(T, V3, V4, tag):
    @specialize(tag)
    def transform_funcs(p: wp.array2d(dtype=V3), a: wp.array2d(dtype=V4), x: wp.array(dtype=V3),
                        op: wp.array2d(dtype=V3), oq: wp.array2d(dtype=V4), ov: wp.array2d(dtype=V3)):
        i = wp.tid()
        q1 = wp.quaternion(a[i, 0][0], a[i, 0][1], a[i, 0][2], a[i, 0][3], dtype=T)
        q2 = wp.quaternion(a[i, 1][0], a[i, 1][1], a[i, 1][2], a[i, 1][3], dtype=T)
        t1 = wp.transformation(p[i, 0], q1, dtype=T)
        t2 = wp.transformation(p[i, 1], q2, dtype=T)
        t = wp.transform_inverse(t1)
        r = wp.transform_get_rotation(t)
        op[i, 0] = wp.transform_get_translation(t)
        oq[i, 0] = V4(r[0], r[1], r[2], r[3])
        t = wp.transform_multiply(t1, t2)
        r = wp.transform_get_rotation(t)
        op[i, 1] = wp.transform_get_translation(t)
        oq[i, 1] = V4(r[0], r[1], r[2], r[3])
        t = wp.transform_identity(dtype=T)
        wp.transform_set_translation(t, p[i, 1])
        wp.transform_set_rotation(t, q1)
        r = wp.transform_get_rotation(t)
        op[i, 2] = wp.transform_get_translation(t)
        oq[i, 2] = V4(r[0], r[1], r[2], r[3])
        t = wp.transform_identity(dtype=T)
        r = t.q
        op[i, 3] = t.p
        oq[i, 3] = V4(r[0], r[1], r[2], r[3])
        t = wp.transformation(p[i, 0][0], p[i, 0][1], p[i, 0][2], q2[0], q2[1], q2[2], q2[3], dtype=T)
        r = t.q
        op[i, 4] = t.p
        oq[i, 4] = V4(r[0], r[1], r[2], r[3])
        ov[i, 0] = wp.transform_point(t1, x[i])
        ov[i, 1] = wp.transform_vector(t1, x[i])
        # the same through a 4x4 matrix [R | p]
        m = wp.quat_to_matrix(q1)
        pp = p[i, 0]
        m4 = wp.matrix_from_rows(V4(m[0, 0], m[0, 1], m[0, 2], pp[0]), V4(m[1, 0], m[1, 1], m[1, 2], pp[1]),
                                 V4(m[2, 0], m[2, 1], m[2, 2], pp[2]), V4(T(0.0), T(0.0), T(0.0), T(1.0)))
        ov[i, 2] = wp.transform_point(m4, x[i])
        ov[i, 3] = wp.transform_vector(m4, x[i])

    return transform_funcs


TRANSFORM_KERNELS = {tag: _make_transform_kernel(T, V3, V4, tag) for tag, (T, _, V3, V4) in DT.items()}


@pytest.mark.parametrize("dtype", DT)
def test_transform_functions(wp, dtype):
    T, np_t, V3, V4 = DT[dtype]
    rng = np.random.default_rng(303)
    p = rng.uniform(-3, 3, (N, 2, 3))
    a = np.stack([unit_quats(rng, N), unit_quats(rng, N)], 1)
    x = rng.uniform(-3, 3, (N, 3))
    p, a, x = (v.astype(np_t) for v in (p, a, x))
    op = wp.zeros((N, 5), dtype=V3)
    oq = wp.zeros((N, 5), dtype=V4)
    ov = wp.zeros((N, 4), dtype=V3)
    wp.launch(TRANSFORM_KERNELS[dtype], dim=N, inputs=[wp.array(p, dtype=V3), wp.array(a, dtype=V4),
                                                      wp.array(x, dtype=V3), op, oq, ov])
    gp, gq, gv = op.numpy(), oq.numpy(), ov.numpy()
    p, a, x = (v.astype(np.float64) for v in (p, a, x))
    p1, p2, q1, q2 = p[:, 0], p[:, 1], a[:, 0], a[:, 1]
    tol = TOL[dtype]
    np.testing.assert_allclose(gp[:, 0], -qrotate(qconj(q1), p1), err_msg="transform_inverse p", **tol)
    np.testing.assert_allclose(gq[:, 0], qconj(q1), err_msg="transform_inverse q", **tol)
    np.testing.assert_allclose(gp[:, 1], p1 + qrotate(q1, p2), err_msg="transform_multiply p", **tol)
    np.testing.assert_allclose(gq[:, 1], qmul(q1, q2), err_msg="transform_multiply q", **tol)
    np.testing.assert_array_equal(gp[:, 2], p2, err_msg="transform_set_translation")
    np.testing.assert_array_equal(gq[:, 2], q1, err_msg="transform_set_rotation")
    np.testing.assert_array_equal(gp[:, 3], np.zeros((N, 3)), err_msg="transform_identity p")
    np.testing.assert_array_equal(gq[:, 3], np.tile([0.0, 0.0, 0.0, 1.0], (N, 1)), err_msg="transform_identity q")
    np.testing.assert_array_equal(gp[:, 4], p1, err_msg="transformation(7 scalars) p")
    np.testing.assert_array_equal(gq[:, 4], q2, err_msg="transformation(7 scalars) q")
    np.testing.assert_allclose(gv[:, 0], p1 + qrotate(q1, x), err_msg="transform_point", **tol)
    np.testing.assert_allclose(gv[:, 1], qrotate(q1, x), err_msg="transform_vector", **tol)
    np.testing.assert_allclose(gv[:, 2], p1 + qrotate(q1, x), err_msg="transform_point(mat44)", **tol)
    np.testing.assert_allclose(gv[:, 3], qrotate(q1, x), err_msg="transform_vector(mat44)", **tol)


@wp.kernel
def transform_float32_only(p: wp.array(dtype=wp.vec3), a: wp.array(dtype=wp.vec4), s: wp.array(dtype=wp.vec3),
                           om: wp.array2d(dtype=wp.vec4), ov: wp.array2d(dtype=wp.vec3), oq: wp.array2d(dtype=wp.vec4)):
    i = wp.tid()
    q = wp.quat(a[i][0], a[i][1], a[i][2], a[i][3])
    m = wp.transform_compose(p[i], q, s[i])
    om[i, 0] = m[0]
    om[i, 1] = m[1]
    om[i, 2] = m[2]
    om[i, 3] = m[3]
    t = wp.transform(p[i], q)
    m = wp.transform_to_matrix(t)
    om[i, 4] = m[0]
    om[i, 5] = m[1]
    om[i, 6] = m[2]
    om[i, 7] = m[3]
    t2 = wp.transform_from_matrix(m)
    ov[i, 0] = t2.p
    oq[i, 0] = wp.vec4(t2.q[0], t2.q[1], t2.q[2], t2.q[3])


def _compose(p, q, s):
    m = np.zeros((len(p), 4, 4))
    m[:, :3, :3] = qmatrix(q) * s[:, None, :]
    m[:, :3, 3] = p
    m[:, 3, 3] = 1.0
    return m


def test_transform_matrices(wp):
    rng = np.random.default_rng(304)
    p = rng.uniform(-3, 3, (N, 3)).astype(np.float32)
    a = unit_quats(rng, N).astype(np.float32)
    s = rng.uniform(0.25, 3, (N, 3)).astype(np.float32)
    om = wp.zeros((N, 8), dtype=wp.vec4)
    ov = wp.zeros((N, 1), dtype=wp.vec3)
    oq = wp.zeros((N, 1), dtype=wp.vec4)
    wp.launch(transform_float32_only, dim=N, inputs=[wp.array(p, dtype=wp.vec3), wp.array(a, dtype=wp.vec4),
                                                    wp.array(s, dtype=wp.vec3), om, ov, oq])
    p, a, s = (v.astype(np.float64) for v in (p, a, s))
    tol = TOL["float32"]
    np.testing.assert_allclose(om.numpy()[:, :4], _compose(p, a, s), err_msg="transform_compose", **tol)
    np.testing.assert_allclose(om.numpy()[:, 4:], _compose(p, a, np.ones_like(s)), err_msg="transform_to_matrix",
                               **tol)
    np.testing.assert_allclose(ov.numpy()[:, 0], p, err_msg="transform_from_matrix p", **tol)
    close_up_to_sign(oq.numpy()[:, 0], a, err_msg="transform_from_matrix q", **tol)


@wp.kernel(module="unique")
def tuple_results(p: wp.array(dtype=wp.vec3), a: wp.array(dtype=wp.vec4), s: wp.array(dtype=wp.vec3),
                  ov: wp.array2d(dtype=wp.vec3), oq: wp.array(dtype=wp.vec4), oa: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.quat(a[i][0], a[i][1], a[i][2], a[i][3])
    pos, rot, scale = wp.transform_decompose(wp.transform_compose(p[i], q, s[i]))  # Warp 1.19's only form
    axis, angle = wp.quat_to_axis_angle(q)
    ov[i, 0] = pos
    ov[i, 1] = scale
    ov[i, 2] = axis
    oq[i] = wp.vec4(rot[0], rot[1], rot[2], rot[3])
    oa[i] = angle


def test_tuple_results(wp):
    """transform_decompose(m) (Warp 1.19's only form) and quat_to_axis_angle(q) return tuples."""
    rng = np.random.default_rng(306)
    p = rng.uniform(-3, 3, (N, 3)).astype(np.float32)
    a = unit_quats(rng, N)
    a[:, 3] = np.abs(a[:, 3]) + 0.1  # w > 0
    a = (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)
    s = rng.uniform(0.25, 3, (N, 3)).astype(np.float32)
    ov = wp.zeros((N, 3), dtype=wp.vec3)
    oq = wp.zeros(N, dtype=wp.vec4)
    oa = wp.zeros(N, dtype=float)
    wp.launch(tuple_results, dim=N, inputs=[wp.array(p, dtype=wp.vec3), wp.array(a, dtype=wp.vec4),
                                           wp.array(s, dtype=wp.vec3), ov, oq, oa])
    tol = dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ov.numpy()[:, 0], p, **tol)
    np.testing.assert_allclose(ov.numpy()[:, 1], s, **tol)
    np.testing.assert_allclose(ov.numpy()[1:, 2], a[1:, :3] / np.linalg.norm(a[1:, :3], axis=1, keepdims=True),
                               **tol)  # row 0 is the identity: no axis
    close_up_to_sign(oq.numpy().astype(np.float64), a.astype(np.float64), **tol)
    np.testing.assert_allclose(oa.numpy(), 2 * np.arccos(a[:, 3]), **tol)

"""Warp's quaternion, transformation and spatial builtins in Python scope:
wp.quat_rotate, wp.quat_slerp, wp.quat_from_matrix, wp.transform_multiply,
wp.transform_inverse, wp.spatial_cross, wp.quat_to_euler, ...

Quaternions are (x, y, z, w) with w the real part; a transformation is
(p, q), translation first. The formulas and their order of operations are the
kernels' (runtime/native/warpd/native/quat.h, transform.h, spatial.h), which
follow Warp 1.19, so float32 results round as the kernels' do. Like Warp, no
quaternion is renormalized unless the builtin says so. The functions of Warp's
warp.math module (quat_to_rpy, quat_twist, transform_twist, ...) take the
float32 types only, as Warp's annotations say.
"""

from __future__ import annotations

import numpy as np

from . import types as wt
from .pyscope_core import (builtin, const, dtype, ignore_fp, is_float, is_mat, is_quat,
                           is_vec, is_xform, mat_t, math1, math2, no_match, result, type_of,
                           value_of, vec_t)
from .pyscope_linalg import sqrt_of, vcross, vdot, vlength, vnormalize


# ------------------------------------------------------------ array helpers

def sin_of(x):
    return math1(np.sin, np.asarray(x))[()]


def cos_of(x):
    return math1(np.cos, np.asarray(x))[()]


def atan2_of(y, x):
    return math2(np.arctan2, np.asarray(y), np.asarray(x))[()]


def qmul(a, b):
    """The Hamilton product a * b, summed in the kernels' order."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([((aw * bx + bw * ax) + ay * bz) - by * az,
                     ((aw * by + bw * ay) + az * bx) - bz * ax,
                     ((aw * bz + bw * az) + ax * by) - bx * ay,
                     ((aw * bw - ax * bx) - ay * by) - az * bz], dtype=a.dtype)


def qinv(q):
    return np.array([-q[0], -q[1], -q[2], q[3]], dtype=q.dtype)


def qrotate(q, v, inverse=False):
    """v (3) rotated by q: v (2w^2 - 1) + u 2(u . v) +- (u x v) 2w, u = (x, y, z)."""
    two = const(2, q)
    u = q[:3]
    c = two * q[3] * q[3] - const(1, q)
    d = two * vdot(u, v)
    e = q[3] * two
    uxv = vcross(u, v)
    base = v * c + u * d
    return base - uxv * e if inverse else base + uxv * e


def qnormalize(q):
    n = vlength(q)
    if n > 0:
        return q * (const(1, q) / n)
    return np.array([0, 0, 0, 1], dtype=q.dtype)


def qfrom_axis_angle(axis, angle):
    h = angle * const(0.5, axis)
    s = sin_of(h)
    return np.array([axis[0] * s, axis[1] * s, axis[2] * s, cos_of(h)], dtype=axis.dtype)


def qto_axis_angle(q):
    v = q[:3].copy()
    axis = -vnormalize(v) if q[3] < 0 else vnormalize(v)
    angle = const(2, q) * atan2_of(vlength(v), np.abs(q[3]))
    return axis.astype(q.dtype), angle


def qto_matrix(q):
    m = np.empty((3, 3), dtype=q.dtype)
    for j in range(3):
        e = np.zeros(3, dtype=q.dtype)
        e[j] = 1
        m[:, j] = qrotate(q, e)
    return m


def qfrom_matrix(m):
    """The unit quaternion of the rotation in m's top-left 3x3 (the kernels' branches)."""
    one, half = const(1, m), const(0.5, m)
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = m[0, :3], m[1, :3], m[2, :3]
    tr = (m00 + m11) + m22
    if tr >= 0:
        h = sqrt_of(tr + one)
        w = half * h
        h = half / h
        x, y, z = (m21 - m12) * h, (m02 - m20) * h, (m10 - m01) * h
    else:
        k = 0
        if m11 > m00:
            k = 1
        if m22 > (m00 if k == 0 else m11):
            k = 2
        if k == 0:
            h = sqrt_of((m00 - (m11 + m22)) + one)
            x = half * h
            h = half / h
            y, z, w = (m01 + m10) * h, (m20 + m02) * h, (m21 - m12) * h
        elif k == 1:
            h = sqrt_of((m11 - (m22 + m00)) + one)
            y = half * h
            h = half / h
            z, x, w = (m12 + m21) * h, (m01 + m10) * h, (m02 - m20) * h
        else:
            h = sqrt_of((m22 - (m00 + m11)) + one)
            z = half * h
            h = half / h
            x, y, w = (m20 + m02) * h, (m12 + m21) * h, (m10 - m01) * h
    return qnormalize(np.array([x, y, z, w], dtype=m.dtype))


def xmul(a, b):
    """transform_multiply(a, b): apply b, then a."""
    p = qrotate(a[3:], b[:3]) + a[:3]
    return np.concatenate([p, qmul(a[3:], b[3:])]).astype(a.dtype)


def xinverse(t):
    qi = qinv(t[3:])
    return np.concatenate([-qrotate(qi, t[:3]), qi]).astype(t.dtype)


def xcompose(p, q, s):
    r = qto_matrix(q)
    m = np.zeros((4, 4), dtype=p.dtype)
    for i in range(3):
        for j in range(3):
            m[i, j] = s[j] * r[i, j]
        m[i, 3] = p[i]
    m[3, 3] = 1
    return m


# ------------------------------------------------------------ argument checks

def _args(name, args, *checks):
    """The types of args after checking each with its predicate; Warp's error otherwise."""
    types = [type_of(a) for a in args]
    if len(args) != len(checks) or not all(c(t) for c, t in zip(checks, types)):
        raise no_match(name, args)
    return types


def _same_dtype(name, args, types):
    st = dtype(types[0])
    if any(dtype(t) is not st for t in types):
        raise no_match(name, args)
    return st


def _is_f32_quat(t):
    return t is wt.quatf


def _is_f32_vec3(t):
    return t is wt.vec3f


# ------------------------------------------------------------ quaternions

@builtin
def quat_identity(dtype=None):
    """The identity rotation (0, 0, 0, 1) of a float dtype."""
    st = wt.float32 if dtype is None else wt.scalar_type(dtype)
    if not is_float(st):
        raise no_match("quat_identity", (dtype,))
    return wt.quaternion(st)(0, 0, 0, 1)


@builtin
def quat_inverse(quat):
    """The conjugate (-x, -y, -z, w): the inverse of a unit quaternion."""
    (t,) = _args("quat_inverse", (quat,), is_quat)
    return result(t, qinv(value_of(quat, t)))


@builtin
@ignore_fp
def quat_from_axis_angle(axis, angle):
    """The rotation by `angle` radians about `axis` (not normalized, as in Warp)."""
    ta, tn = _args("quat_from_axis_angle", (axis, angle), lambda t: is_vec(t, 3, float_only=True),
                   lambda t: True)
    if tn is not dtype(ta):
        raise no_match("quat_from_axis_angle", (axis, angle))
    return result(wt.quaternion(dtype(ta)), qfrom_axis_angle(value_of(axis, ta), value_of(angle, tn)[()]))


@builtin
@ignore_fp
def quat_to_axis_angle(quat):
    """(axis, angle) of a quaternion: angle in [0, pi], the axis flipped when w < 0."""
    (t,) = _args("quat_to_axis_angle", (quat,), is_quat)
    axis, angle = qto_axis_angle(value_of(quat, t))
    return result(vec_t(3, dtype(t)), axis), result(dtype(t), angle)


@builtin
@ignore_fp
def quat_rotate(quat, vec):
    """vec rotated by quat (q v q* for a unit q)."""
    tq, tv = _args("quat_rotate", (quat, vec), is_quat, lambda t: is_vec(t, 3))
    _same_dtype("quat_rotate", (quat, vec), (tq, tv))
    return result(tv, qrotate(value_of(quat, tq), value_of(vec, tv)))


@builtin
@ignore_fp
def quat_rotate_inv(quat, vec):
    """vec rotated by the conjugate of quat."""
    tq, tv = _args("quat_rotate_inv", (quat, vec), is_quat, lambda t: is_vec(t, 3))
    _same_dtype("quat_rotate_inv", (quat, vec), (tq, tv))
    return result(tv, qrotate(value_of(quat, tq), value_of(vec, tv), inverse=True))


@builtin
@ignore_fp
def quat_rpy(roll, pitch, yaw):
    """The rotation by roll about x, then pitch about y, then yaw about z."""
    t = type_of(roll)
    if not is_float(t) or type_of(pitch) is not t or type_of(yaw) is not t:
        raise no_match("quat_rpy", (roll, pitch, yaw))
    r, p, y = (value_of(a, t)[()] for a in (roll, pitch, yaw))
    h = const(0.5, np.asarray(r))
    cy, sy = cos_of(y * h), sin_of(y * h)
    cr, sr = cos_of(r * h), sin_of(r * h)
    cp, sp = cos_of(p * h), sin_of(p * h)
    w = cy * cr * cp + sy * sr * sp
    x = cy * sr * cp - sy * cr * sp
    yy = cy * cr * sp + sy * sr * cp
    z = sy * cr * cp - cy * sr * sp
    return result(wt.quaternion(t), np.array([x, yy, z, w], dtype=t._np_dtype_))


@builtin
@ignore_fp
def quat_slerp(a, b, t):
    """The rotation a fraction t of the way from a to b along the shorter arc."""
    ta, tb, tt = _args("quat_slerp", (a, b, t), is_quat, is_quat, lambda x: True)
    if tb is not ta or tt is not dtype(ta):
        raise no_match("quat_slerp", (a, b, t))
    qa, qb = value_of(a, ta), value_of(b, tb)
    axis, angle = qto_axis_angle(qmul(qinv(qa), qb))
    return result(ta, qmul(qa, qfrom_axis_angle(axis, value_of(t, tt)[()] * angle)))


@builtin
@ignore_fp
def quat_to_matrix(quat):
    """The 3x3 matrix whose columns are quat_rotate(quat, e_j)."""
    (t,) = _args("quat_to_matrix", (quat,), is_quat)
    return result(mat_t(3, 3, dtype(t)), qto_matrix(value_of(quat, t)))


@builtin
@ignore_fp
def quat_from_matrix(mat):
    """The unit quaternion of a rotation matrix (3x3, or the top-left of a 4x4)."""
    (t,) = _args("quat_from_matrix", (mat,),
                 lambda t: (is_mat(t, (3, 3)) or is_mat(t, (4, 4))) and is_float(dtype(t)))
    return result(wt.quaternion(dtype(t)), qfrom_matrix(value_of(mat, t)))


# ------------------------------------------------------------ Euler angles and twist (warp.math)

def _vec3_at(e, idx):
    if idx < 0:
        idx += 3
    return e[idx] if 0 <= idx <= 2 else const(0, e)


def _axis_quat(axis, a, like):
    h = const(0.5, like) * a
    s, c, z = sin_of(h), cos_of(h), const(0, like)
    q = {0: [s, z, z, c], 1: [z, s, z, c]}.get(axis, [z, z, s, c])
    return np.array(q, dtype=like.dtype)


def _int_args(name, args, ints):
    for i in ints:
        if type_of(i) is not wt.int32:
            raise no_match(name, args)
    return [int(value_of(i, wt.int32)) for i in ints]


@builtin
@ignore_fp
def quat_from_euler(e, i, j, k):
    """The rotation by the angles e[i], e[j], e[k] about the fixed axes i, then j, then k."""
    args = (e, i, j, k)
    _args("quat_from_euler", args, _is_f32_vec3, lambda t: True, lambda t: True, lambda t: True)
    i, j, k = _int_args("quat_from_euler", args, (i, j, k))
    v = value_of(e, wt.vec3f)
    qi, qj, qk = (_axis_quat(a, _vec3_at(v, a), v) for a in (i, j, k))
    return result(wt.quatf, qmul(qk, qmul(qj, qi)))


def _pick(axis1, v1, v2, v3):
    return v2 if axis1 == 2 else (v3 if axis1 == 3 else v1)


@builtin
@ignore_fp
def quat_to_euler(q, i, j, k):
    """The Euler angles of q for the axis sequence (i, j, k), indexed by axis like
    quat_from_euler's input (Bernardes and Viollet's direct method, as in Warp)."""
    args = (q, i, j, k)
    _args("quat_to_euler", args, _is_f32_quat, lambda t: True, lambda t: True, lambda t: True)
    i, j, k = (a + 1 for a in _int_args("quat_to_euler", args, (i, j, k)))
    v = value_of(q, wt.quatf)
    f = lambda x: np.float32(x)  # noqa: E731
    q0, q1, q2, q3 = v[3], v[0], v[1], v[2]
    pi, eps = f(np.pi), f(1e-6)
    proper = i == k
    if proper:
        k = 6 - i - j
    eps_ijk = f((i - j) * (j - k) * (k - i)) / f(2)
    qi, qj, qk = (_pick(a, q1, q2, q3) for a in (i, j, k))
    a, b, c, d = q0, qi, qj, qk * eps_ijk
    if not proper:
        a, b, c, d = q0 - qj, qi + qk * eps_ijk, qj + q0, qk * eps_ijk - qi
    ab = a * a + b * b
    n = (ab + c * c) + d * d
    t2 = math1(lambda x: np.arccos(np.fmin(np.fmax(x, -1.0), 1.0)), np.asarray(f(2) * ab / n - f(1)))[()]
    tp, tm = atan2_of(b, a), atan2_of(d, c)
    t1 = f(0)
    if np.abs(t2) < eps:
        t3 = f(2) * tp
    elif np.abs(t2 - pi) < eps:
        t3 = f(2) * tm
    else:
        t1, t3 = tp - tm, tp + tm
    if not proper:
        t2 = t2 - pi * f(0.5)
        t3 = t3 * eps_ijk
    ex, ey, ez = t1, t2, t3
    if i == 2:
        ex, ey = t2, t1
    elif i == 3:
        ex, ez = t3, t1
    if j == 1:
        ex = t2
    elif j == 2:
        ey = t2
    else:
        ez = t2
    if k == 1:
        ex = t3
    elif k == 2:
        ey = t3
    else:
        ez = t3
    return result(wt.vec3f, np.array([ex, ey, ez], dtype=np.float32))


@builtin
@ignore_fp
def quat_to_rpy(q):
    """(roll, pitch, yaw) of q, the inverse of quat_rpy for pitch in [-pi/2, pi/2]."""
    _args("quat_to_rpy", (q,), _is_f32_quat)
    x, y, z, w = value_of(q, wt.quatf)
    one, two = np.float32(1), np.float32(2)
    roll = atan2_of(two * (w * x + y * z), one - two * (x * x + y * y))
    sp = np.fmin(np.fmax(two * (w * y - z * x), -one), one)
    pitch = math1(np.arcsin, np.asarray(sp))[()]
    yaw = atan2_of(two * (w * z + x * y), one - two * (y * y + z * z))
    return result(wt.vec3f, np.array([roll, pitch, yaw], dtype=np.float32))


@builtin
@ignore_fp
def quat_twist(axis, q):
    """The twist of q about the unit vector `axis` (swing-twist decomposition)."""
    _args("quat_twist", (axis, q), _is_f32_vec3, _is_f32_quat)
    a, v = value_of(axis, wt.vec3f), value_of(q, wt.quatf)
    p = a * vdot(v[:3], a)
    return result(wt.quatf, qnormalize(np.array([p[0], p[1], p[2], v[3]], dtype=np.float32)))


@builtin
@ignore_fp
def quat_twist_angle(axis, q):
    """2 atan2(|axis . u|, w): the unsigned twist angle of q about `axis`."""
    _args("quat_twist_angle", (axis, q), _is_f32_vec3, _is_f32_quat)
    a, v = value_of(axis, wt.vec3f), value_of(q, wt.quatf)
    return result(wt.float32, np.float32(2) * atan2_of(np.abs(vdot(a, v[:3])), v[3]))


@builtin
@ignore_fp
def quat_twist_angle_signed(axis, q):
    """2 atan2(axis . u, w): the signed twist angle of q about `axis`."""
    _args("quat_twist_angle_signed", (axis, q), _is_f32_vec3, _is_f32_quat)
    a, v = value_of(axis, wt.vec3f), value_of(q, wt.quatf)
    return result(wt.float32, np.float32(2) * atan2_of(vdot(a, v[:3]), v[3]))


# ------------------------------------------------------------ transformations

@builtin
def transform_identity(dtype=None):
    """The identity transformation of a float dtype."""
    st = wt.float32 if dtype is None else wt.scalar_type(dtype)
    if not is_float(st):
        raise no_match("transform_identity", (dtype,))
    return wt.transformation(st)()


@builtin
def transform_get_translation(xform):
    """The translation p of a transformation."""
    (t,) = _args("transform_get_translation", (xform,), is_xform)
    return result(vec_t(3, dtype(t)), value_of(xform, t)[:3])


@builtin
def transform_get_rotation(xform):
    """The rotation q of a transformation."""
    (t,) = _args("transform_get_rotation", (xform,), is_xform)
    return result(wt.quaternion(dtype(t)), value_of(xform, t)[3:])


@builtin
def transform_set_translation(xform, p):
    """Sets the translation of `xform` in place (returns None, as in Warp)."""
    tx, tp = _args("transform_set_translation", (xform, p), is_xform, lambda t: is_vec(t, 3))
    _same_dtype("transform_set_translation", (xform, p), (tx, tp))
    xform._v[:3] = value_of(p, tp)


@builtin
def transform_set_rotation(xform, q):
    """Sets the rotation of `xform` in place (returns None, as in Warp)."""
    tx, tq = _args("transform_set_rotation", (xform, q), is_xform, is_quat)
    _same_dtype("transform_set_rotation", (xform, q), (tx, tq))
    xform._v[3:] = value_of(q, tq)


@builtin
@ignore_fp
def transform_multiply(a, b):
    """The composition of two transformations: applying it applies b, then a."""
    ta, tb = _args("transform_multiply", (a, b), is_xform, is_xform)
    if ta is not tb:
        raise no_match("transform_multiply", (a, b))
    return result(ta, xmul(value_of(a, ta), value_of(b, tb)))


@builtin
@ignore_fp
def transform_inverse(xform):
    """(-(q* p q), q*): the inverse of a transformation with a unit rotation."""
    (t,) = _args("transform_inverse", (xform,), is_xform)
    return result(t, xinverse(value_of(xform, t)))


def _xform_or_mat44(t):
    return is_xform(t) or (is_mat(t, (4, 4)) and is_float(dtype(t)))


@builtin
@ignore_fp
def transform_point(xform=None, point=None, *, mat=None):
    """A point mapped by a transformation (rotate, then translate) or a 4x4 matrix (M (x, 1));
    Warp names the matrix `mat`."""
    xform = mat if mat is not None else xform
    tx, tp = _args("transform_point", (xform, point), _xform_or_mat44, lambda t: is_vec(t, 3))
    _same_dtype("transform_point", (xform, point), (tx, tp))
    x, p = value_of(xform, tx), value_of(point, tp)
    if is_xform(tx):
        return result(tp, x[:3] + qrotate(x[3:], p))
    return result(tp, np.array([((x[i, 0] * p[0] + x[i, 1] * p[1]) + x[i, 2] * p[2]) + x[i, 3]
                                for i in range(3)], dtype=p.dtype))


@builtin
@ignore_fp
def transform_vector(xform=None, vec=None, *, mat=None):
    """A direction mapped by a transformation (rotated only) or a 4x4 matrix (M (x, 0));
    Warp names the matrix `mat`."""
    xform = mat if mat is not None else xform
    tx, tv = _args("transform_vector", (xform, vec), _xform_or_mat44, lambda t: is_vec(t, 3))
    _same_dtype("transform_vector", (xform, vec), (tx, tv))
    x, v = value_of(xform, tx), value_of(vec, tv)
    if is_xform(tx):
        return result(tv, qrotate(x[3:], v))
    return result(tv, np.array([(x[i, 0] * v[0] + x[i, 1] * v[1]) + x[i, 2] * v[2] for i in range(3)],
                               dtype=v.dtype))


@builtin
@ignore_fp
def transform_compose(position, rotation, scale):
    """The 4x4 matrix [R diag(scale) position; 0 0 0 1] with R = quat_to_matrix(rotation)."""
    args = (position, rotation, scale)
    types = _args("transform_compose", args, lambda t: is_vec(t, 3, float_only=True), is_quat,
                  lambda t: is_vec(t, 3, float_only=True))
    st = _same_dtype("transform_compose", args, types)
    p, q, s = (value_of(a, t) for a, t in zip(args, types))
    return result(mat_t(4, 4, st), xcompose(p, q, s))


@builtin
@ignore_fp
def transform_to_matrix(xform):
    """The 4x4 matrix [R p; 0 0 0 1] of a transformation."""
    (t,) = _args("transform_to_matrix", (xform,), is_xform)
    x = value_of(xform, t)
    return result(mat_t(4, 4, dtype(t)), xcompose(x[:3], x[3:], np.ones(3, dtype=x.dtype)))


@builtin
@ignore_fp
def transform_from_matrix(mat):
    """The transformation of a 4x4 matrix: translation from the last column, rotation from the
    top-left 3x3 (which must be a rotation)."""
    (t,) = _args("transform_from_matrix", (mat,), lambda t: is_mat(t, (4, 4)) and is_float(dtype(t)))
    m = value_of(mat, t)
    return result(wt.transformation(dtype(t)), np.concatenate([m[:3, 3], qfrom_matrix(m)]))


@builtin
@ignore_fp
def transform_decompose(m):
    """(position, rotation, scale) of a 4x4 matrix made by transform_compose (positive scales)."""
    (t,) = _args("transform_decompose", (m,), lambda t: is_mat(t, (4, 4)) and is_float(dtype(t)))
    a = value_of(m, t)
    r = np.empty((3, 3), dtype=a.dtype)
    scale = np.empty(3, dtype=a.dtype)
    for j in range(3):
        s = sqrt_of((a[0, j] * a[0, j] + a[1, j] * a[1, j]) + a[2, j] * a[2, j])
        r[:, j] = a[:3, j] / s if s != 0 else a[:3, j]
        scale[j] = s
    st = dtype(t)
    return (result(vec_t(3, st), a[:3, 3]), result(wt.quaternion(st), qfrom_matrix(r)),
            result(vec_t(3, st), scale))


# ------------------------------------------------------------ spatial vectors

def _is_spatial(t):
    return is_vec(t, 6, float_only=True)


def _spatial_pair(name, a, b):
    ta, tb = _args(name, (a, b), _is_spatial, _is_spatial)
    if ta is not tb:
        raise no_match(name, (a, b))
    return ta, value_of(a, ta), value_of(b, tb)


@builtin
def spatial_top(svec):
    """The first (angular) three components of a spatial vector."""
    (t,) = _args("spatial_top", (svec,), _is_spatial)
    return result(vec_t(3, dtype(t)), value_of(svec, t)[:3])


@builtin
def spatial_bottom(svec):
    """The last (linear) three components of a spatial vector."""
    (t,) = _args("spatial_bottom", (svec,), _is_spatial)
    return result(vec_t(3, dtype(t)), value_of(svec, t)[3:])


@builtin
@ignore_fp
def spatial_dot(a, b):
    """The 6D dot product of two spatial vectors."""
    t, x, y = _spatial_pair("spatial_dot", a, b)
    return result(dtype(t), vdot(x, y))


@builtin
@ignore_fp
def spatial_cross(a, b):
    """The motion cross product (w_a x w_b, v_a x w_b + w_a x v_b)."""
    t, x, y = _spatial_pair("spatial_cross", a, b)
    w = vcross(x[:3], y[:3])
    v = vcross(x[3:], y[:3]) + vcross(x[:3], y[3:])
    return result(t, np.concatenate([w, v]))


@builtin
@ignore_fp
def spatial_cross_dual(a, b):
    """The force cross product (w_a x tau + v_a x f, w_a x f)."""
    t, x, y = _spatial_pair("spatial_cross_dual", a, b)
    w = vcross(x[:3], y[:3]) + vcross(x[3:], y[3:])
    v = vcross(x[:3], y[3:])
    return result(t, np.concatenate([w, v]))


def _xform_spatial(name, t, x):
    _args(name, (t, x), lambda a: a is wt.transformf, lambda a: a is wt.spatial_vectorf)
    return value_of(t, wt.transformf), value_of(x, wt.spatial_vectorf)


@builtin
@ignore_fp
def transform_twist(t, x):
    """A twist (w, v) in the child frame of t, in the parent frame: (q w, q v + p x q w)."""
    a, s = _xform_spatial("transform_twist", t, x)
    w = qrotate(a[3:], s[:3])
    v = qrotate(a[3:], s[3:]) + vcross(a[:3], w)
    return result(wt.spatial_vectorf, np.concatenate([w, v]))


@builtin
@ignore_fp
def transform_wrench(t, x):
    """A wrench (tau, f) in the child frame of t, in the parent frame: (q tau + p x q f, q f)."""
    a, s = _xform_spatial("transform_wrench", t, x)
    f = qrotate(a[3:], s[3:])
    tau = qrotate(a[3:], s[:3]) + vcross(a[:3], f)
    return result(wt.spatial_vectorf, np.concatenate([tau, f]))


@builtin
@ignore_fp
def velocity_at_point(qd, r):
    """The linear velocity v + w x r of the point at offset r, for the twist qd = (w, v)."""
    _args("velocity_at_point", (qd, r), lambda a: a is wt.spatial_vectorf, _is_f32_vec3)
    s, p = value_of(qd, wt.spatial_vectorf), value_of(r, wt.vec3f)
    return result(wt.vec3f, s[3:] + vcross(s[:3], p))


__all__ = ["quat_identity", "quat_inverse", "quat_from_axis_angle", "quat_to_axis_angle",
           "quat_rotate", "quat_rotate_inv", "quat_rpy", "quat_slerp", "quat_to_matrix",
           "quat_from_matrix", "quat_from_euler", "quat_to_euler", "quat_to_rpy", "quat_twist",
           "quat_twist_angle", "quat_twist_angle_signed", "transform_identity",
           "transform_get_translation", "transform_get_rotation", "transform_set_translation",
           "transform_set_rotation", "transform_multiply", "transform_inverse", "transform_point",
           "transform_vector", "transform_compose", "transform_to_matrix", "transform_from_matrix",
           "transform_decompose", "spatial_top", "spatial_bottom", "spatial_dot", "spatial_cross",
           "spatial_cross_dual", "transform_twist", "transform_wrench", "velocity_at_point"]

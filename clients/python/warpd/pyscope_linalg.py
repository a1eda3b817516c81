"""Warp's vector and matrix builtins in Python scope: wp.dot, wp.cross, wp.length,
wp.normalize, wp.transpose, wp.determinant, wp.inverse, wp.trace, wp.ddot, wp.diag, ...

Arguments must have one type (no implicit conversion); results are computed in
the dtype with the kernels' order of operations (sums left to right, the
cofactor formulas of runtime/native/warpd/native/mat.h), so they round as the
kernels' do. The array-level helpers (vdot, vcross, vnormalize, matmul_*) are
shared with the quaternion and operator modules.
"""

from __future__ import annotations

import numpy as np

from . import types as wt
from .pyscope_core import (builtin, const, dot_of, dtype, ignore_fp, is_float, is_mat,
                           is_number, is_quat, is_square, is_vec, mat_t, math1, no_match, result,
                           seq_sum, type_of, value_of, vec_t)


# ------------------------------------------------------------ array helpers

def vdot(a, b):
    return dot_of(a, b)


def vcross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]],
                    dtype=a.dtype)


def sqrt_of(x):
    return math1(np.sqrt, np.asarray(x))[()]


def vlength(a):
    return sqrt_of(vdot(a, a))


def vnormalize(a):
    """a / |a|, or zeros for a zero (or NaN) length, as the kernels' normalize."""
    n = vlength(a)
    if n > 0:
        return a / n
    return np.zeros_like(a)


def matmul_mm(a, b):
    """a (R, K) times b (K, C), each sum taken over k in increasing order."""
    p = a[:, :, None] * b[None, :, :]
    return seq_sum([p[:, k, :] for k in range(p.shape[1])])


def matmul_mv(a, v):
    p = a * v[None, :]
    return seq_sum([p[:, k] for k in range(p.shape[1])])


def matmul_vm(v, a):
    p = v[:, None] * a
    return seq_sum([p[k, :] for k in range(p.shape[0])])


def _minor2(a, b, c, d):
    return a * d - b * c


def _expand3(x0, y0, x1, y1, x2, y2):
    return (x0 * y0 - x1 * y1) + x2 * y2


def cofactors3(m):
    cof = np.empty_like(m)
    for i in range(3):
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        for j in range(3):
            j1, j2 = (j + 1) % 3, (j + 2) % 3
            cof[i, j] = _minor2(m[i1, j1], m[i1, j2], m[i2, j1], m[i2, j2])
    return cof


def _minors4(m):
    pairs = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))
    s = [_minor2(m[0, p], m[0, q], m[1, p], m[1, q]) for p, q in pairs]
    t = [_minor2(m[2, p], m[2, q], m[3, p], m[3, q]) for p, q in pairs]
    return s, t


def det_of(m):
    n = m.shape[0]
    if n == 2:
        return _minor2(m[0, 0], m[0, 1], m[1, 0], m[1, 1])
    if n == 3:
        cof = cofactors3(m)
        return (m[0, 0] * cof[0, 0] + m[0, 1] * cof[0, 1]) + m[0, 2] * cof[0, 2]
    s, t = _minors4(m)
    return _expand3(s[0], t[5], s[1], t[4], s[2], t[3]) + _expand3(s[3], t[2], s[4], t[1], s[5], t[0])


def inverse_of(m):
    """The inverse by the adjugate (zeros when the determinant is exactly 0)."""
    n = m.shape[0]
    det = det_of(m)
    if det == 0:
        return np.zeros_like(m)
    r = const(1, m) / det
    if n == 2:
        return np.array([[m[1, 1] * r, (-m[0, 1]) * r], [(-m[1, 0]) * r, m[0, 0] * r]], dtype=m.dtype)
    if n == 3:
        return cofactors3(m).T * r
    s, t = _minors4(m)
    a = m
    e = _expand3
    adj = np.array([
        [e(a[1, 1], t[5], a[1, 2], t[4], a[1, 3], t[3]), -e(a[0, 1], t[5], a[0, 2], t[4], a[0, 3], t[3]),
         e(a[3, 1], s[5], a[3, 2], s[4], a[3, 3], s[3]), -e(a[2, 1], s[5], a[2, 2], s[4], a[2, 3], s[3])],
        [-e(a[1, 0], t[5], a[1, 2], t[2], a[1, 3], t[1]), e(a[0, 0], t[5], a[0, 2], t[2], a[0, 3], t[1]),
         -e(a[3, 0], s[5], a[3, 2], s[2], a[3, 3], s[1]), e(a[2, 0], s[5], a[2, 2], s[2], a[2, 3], s[1])],
        [e(a[1, 0], t[4], a[1, 1], t[2], a[1, 3], t[0]), -e(a[0, 0], t[4], a[0, 1], t[2], a[0, 3], t[0]),
         e(a[3, 0], s[4], a[3, 1], s[2], a[3, 3], s[0]), -e(a[2, 0], s[4], a[2, 1], s[2], a[2, 3], s[0])],
        [-e(a[1, 0], t[3], a[1, 1], t[1], a[1, 2], t[0]), e(a[0, 0], t[3], a[0, 1], t[1], a[0, 2], t[0]),
         -e(a[3, 0], s[3], a[3, 1], s[1], a[3, 2], s[0]), e(a[2, 0], s[3], a[2, 1], s[1], a[2, 2], s[0])],
    ], dtype=m.dtype)
    return adj * r


# ------------------------------------------------------------ vectors

def _pair(name, a, b, ok):
    t = type_of(a)
    if not ok(t) or type_of(b) is not t:
        raise no_match(name, (a, b))
    return t, value_of(a, t), value_of(b, t)


@builtin
@ignore_fp
def dot(a, b):
    """The dot product of two vectors (or quaternions) of one type, summed left to right."""
    t, x, y = _pair("dot", a, b, lambda t: is_vec(t) or is_quat(t))
    return result(dtype(t), vdot(x, y))


@builtin
@ignore_fp
def cross(a, b):
    """The cross product of two 3-vectors of one type."""
    t, x, y = _pair("cross", a, b, lambda t: is_vec(t, 3))
    return result(t, vcross(x, y))


@builtin
@ignore_fp
def outer(a, b):
    """The outer product a b^T of two vectors of one dtype (an R x C matrix)."""
    ta, tb = type_of(a), type_of(b)
    if not is_vec(ta) or not is_vec(tb) or dtype(ta) is not dtype(tb):
        raise no_match("outer", (a, b))
    x, y = value_of(a, ta), value_of(b, tb)
    return result(mat_t(len(x), len(y), dtype(ta)), x[:, None] * y[None, :])


@builtin
@ignore_fp
def length_sq(a):
    """dot(a, a) of a vector or quaternion."""
    t = type_of(a)
    if not (is_vec(t) or is_quat(t)):
        raise no_match("length_sq", (a,))
    v = value_of(a, t)
    return result(dtype(t), vdot(v, v))


@builtin
@ignore_fp
def length(a):
    """The Euclidean length of a float vector or quaternion."""
    t = type_of(a)
    if not (is_vec(t, float_only=True) or is_quat(t)):
        raise no_match("length", (a,))
    return result(dtype(t), vlength(value_of(a, t)))


@builtin
@ignore_fp
def normalize(a):
    """a / length(a) of a float vector (zero stays zero) or quaternion (zero gives the identity)."""
    t = type_of(a)
    v = value_of(a, t)
    if is_vec(t, float_only=True):
        return result(t, vnormalize(v))
    if is_quat(t):
        n = vlength(v)
        if n > 0:
            return result(t, v * (const(1, v) / n))
        return result(t, np.array([0, 0, 0, 1], dtype=v.dtype))
    raise no_match("normalize", (a,))


def _arg_best(name, a, better):
    t = type_of(a)
    if not is_vec(t):
        raise no_match(name, (a,))
    v = value_of(a, t)
    best = -1
    for i, c in enumerate(v):
        if c != c:  # NaN components are skipped
            continue
        if best < 0 or better(c, v[best]):
            best = i
    return result(wt.uint32, max(best, 0))


@builtin
def argmin(a):
    """The index (a wp.uint32) of the first smallest component of a vector, NaN skipped."""
    return _arg_best("argmin", a, lambda x, y: x < y)


@builtin
def argmax(a):
    """The index (a wp.uint32) of the first largest component of a vector, NaN skipped."""
    return _arg_best("argmax", a, lambda x, y: x > y)


# ------------------------------------------------------------ norms (warp.math)

def _float_vec(name, v, args):
    t = type_of(v)
    if not is_vec(t, float_only=True):
        raise no_match(name, args)
    return t, value_of(v, t)


def _delta(name, t, delta, args):
    """delta in t's dtype: a Python number converts (Warp declares it float), a Warp or NumPy
    scalar must have the dtype."""
    st = dtype(t)
    if isinstance(delta, (int, float)) and not isinstance(delta, bool):
        return np.array(delta, dtype=st._np_dtype_)[()]
    if type_of(delta) is not st:
        raise no_match(name, args)
    return value_of(delta, st)[()]


@builtin
@ignore_fp
def norm_l1(v):
    """The sum of the absolute values of a float vector's components."""
    t, x = _float_vec("norm_l1", v, (v,))
    return result(dtype(t), seq_sum([const(0, x)] + [np.abs(c) for c in x]))


@builtin
@ignore_fp
def norm_l2(v):
    """The Euclidean length of a float vector."""
    t, x = _float_vec("norm_l2", v, (v,))
    return result(dtype(t), vlength(x))


def _pseudo_huber(x, d):
    a = vdot(x, x)
    return d * sqrt_of(const(1, x) + a / (d * d))


@builtin
@ignore_fp
def norm_huber(v, delta=1.0):
    """0.5 |v|^2 inside |v| <= delta, delta (|v| - delta / 2) outside."""
    t, x = _float_vec("norm_huber", v, (v, delta))
    d = _delta("norm_huber", t, delta, (v, delta))
    a = vdot(x, x)
    if not a > d * d:
        return result(dtype(t), const(0.5, x) * a)
    return result(dtype(t), d * (sqrt_of(a) - const(0.5, x) * d))


@builtin
@ignore_fp
def norm_pseudo_huber(v, delta=1.0):
    """delta sqrt(1 + |v|^2 / delta^2)."""
    t, x = _float_vec("norm_pseudo_huber", v, (v, delta))
    d = _delta("norm_pseudo_huber", t, delta, (v, delta))
    return result(dtype(t), _pseudo_huber(x, d))


@builtin
@ignore_fp
def smooth_normalize(v, delta=1.0):
    """v / norm_pseudo_huber(v, delta)."""
    t, x = _float_vec("smooth_normalize", v, (v, delta))
    d = _delta("smooth_normalize", t, delta, (v, delta))
    return result(t, x / _pseudo_huber(x, d))


# ------------------------------------------------------------ matrices

@builtin
def transpose(a):
    """The transpose of a matrix (C x R for an R x C matrix)."""
    t = type_of(a)
    if not is_mat(t):
        raise no_match("transpose", (a,))
    v = value_of(a, t)
    return result(mat_t(t._shape_[1], t._shape_[0], dtype(t)), v.T)


def _square_float(name, m):
    t = type_of(m)
    if not is_square(t, (2, 3, 4)) or not is_float(dtype(t)):
        raise no_match(name, (m,))
    return t, value_of(m, t)


@builtin
@ignore_fp
def determinant(a):
    """The determinant of a 2x2, 3x3 or 4x4 float matrix (cofactor expansion)."""
    t, v = _square_float("determinant", a)
    return result(dtype(t), det_of(v))


@builtin
@ignore_fp
def inverse(a):
    """The inverse of a 2x2, 3x3 or 4x4 float matrix; zeros when the determinant is 0."""
    t, v = _square_float("inverse", a)
    return result(t, inverse_of(v))


@builtin
@ignore_fp
def trace(a):
    """The sum of a square matrix's diagonal."""
    t = type_of(a)
    if not is_square(t):
        raise no_match("trace", (a,))
    v = value_of(a, t)
    return result(dtype(t), seq_sum([v[i, i] for i in range(v.shape[0])]))


@builtin
@ignore_fp
def ddot(a, b):
    """The double-dot (Frobenius) product of two matrices of one type."""
    t, x, y = _pair("ddot", a, b, is_mat)
    p = (x * y).reshape(-1)
    return result(dtype(t), seq_sum([const(0, x)] + list(p)))


@builtin
def diag(vec):
    """The square matrix with `vec` on its diagonal."""
    t = type_of(vec)
    if not is_vec(t):
        raise no_match("diag", (vec,))
    v = value_of(vec, t)
    return result(mat_t(len(v), len(v), dtype(t)), np.diag(v))


@builtin
def get_diag(mat):
    """The diagonal of a square matrix, as a vector."""
    t = type_of(mat)
    if not is_square(t):
        raise no_match("get_diag", (mat,))
    v = value_of(mat, t)
    return result(vec_t(v.shape[0], dtype(t)), np.diag(v).copy())


@builtin
@ignore_fp
def skew(vec):
    """The 3x3 matrix K of a 3-vector v with K x == cross(v, x)."""
    t = type_of(vec)
    if not is_vec(t, 3):
        raise no_match("skew", (vec,))
    v = value_of(vec, t)
    z = const(0, v)
    return result(mat_t(3, 3, dtype(t)), np.array([[z, -v[2], v[1]], [v[2], z, -v[0]], [-v[1], v[0], z]],
                                                  dtype=v.dtype))


def _matrix_from(name, args, rows):
    types = [type_of(a) for a in args]
    if not args or not all(is_vec(t) for t in types):
        raise RuntimeError(f"wp.{name}: every argument must be a vector")
    if any(t._length_ != types[0]._length_ for t in types):
        raise RuntimeError(f"wp.{name}: the vectors must all have one length")
    if any(dtype(t) is not dtype(types[0]) for t in types):
        raise RuntimeError(f"wp.{name}: the vectors must all have one dtype")
    m = np.stack([value_of(a, t) for a, t in zip(args, types)])
    m = m if rows else m.T
    return result(mat_t(m.shape[0], m.shape[1], dtype(types[0])), m)


@builtin
def matrix_from_rows(*args):
    """The matrix whose rows are the given vectors (of one length and dtype)."""
    return _matrix_from("matrix_from_rows", args, True)


@builtin
def matrix_from_cols(*args):
    """The matrix whose columns are the given vectors (of one length and dtype)."""
    return _matrix_from("matrix_from_cols", args, False)


@builtin
def identity(n, dtype=wt.float32):
    """The n x n identity matrix of `dtype` (a kernel builtin, not in Warp's Python scope)."""
    st = wt.scalar_type(dtype)
    if not is_number(st):
        raise no_match("identity", (n, dtype))
    return mat_t(int(n), int(n), st)._wp_wrap_(np.eye(int(n)))


__all__ = ["dot", "cross", "outer", "length_sq", "length", "normalize", "argmin", "argmax",
           "norm_l1", "norm_l2", "norm_huber", "norm_pseudo_huber", "smooth_normalize",
           "transpose", "determinant", "inverse", "trace", "ddot", "diag", "get_diag", "skew",
           "matrix_from_rows", "matrix_from_cols", "identity"]

"""Warp's matrix decompositions in Python scope: wp.svd2, wp.svd3, wp.qr3, wp.eig3.

Each returns a tuple, as Warp's Python scope does: svd3/svd2 (U, sigma, V) with
A = U diag(sigma) V^T, qr3 (Q, R), eig3 (Q, d) with the eigenvectors in Q's
columns. Singular vectors and eigenvectors are defined only up to sign and
eigenvalues in no order, yet programs read U[:, 0] or d[0]; so these run the
kernels' algorithms step for step (runtime/native/warpd/native/svd.h), which
are Warp 1.19's: McAdams et al.'s cyclic Jacobi with approximate Givens
rotations accumulated as a quaternion (4 sweeps in float32, 8 in float64) for
eig3 and for A^T A in svd3, Givens QR for qr3 and svd3's U, a closed form for
svd2. They compute in float32 for float16 and float32 matrices, in float64 for
float64 ones, on A scaled by a power of two (exact; it only keeps A^T A from
overflowing), and round to the dtype at the end.
"""

from __future__ import annotations

import numpy as np

from .pyscope_core import (F64, builtin, dtype, ignore_fp, is_float, is_mat, mat_t, no_match, result,
                           type_of, value_of, vec_t)


def _traits(st):
    """(real type, Jacobi sweeps, QR threshold, largest normal exponent) for dtype st."""
    if st is F64:
        return np.float64, 8, np.float64(1e-12), 1022
    return np.float32, 4, np.float32(1e-6), 126


def _scaling(a, F, max_exp):
    """(2^e, 2^-e) for 2^e the power of two at or below max |a| (1, 1 for 0, inf or NaN)."""
    m = F(0)
    for x in np.abs(a).reshape(-1):
        if x > m:
            m = x
    if not (np.isfinite(m) and m > 0):
        return F(1), F(1)
    e = int(np.clip(np.frexp(np.float64(m))[1] - 1, -max_exp, max_exp))
    return F(np.ldexp(1.0, e)), F(np.ldexp(1.0, -e))


def _recip_sqrt(x, F):
    return F(1) / np.sqrt(x)


def _quat_rotation(q, F):
    x, y, z, w = q
    one, two = F(1), F(2)
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    return np.array([[one - two * (yy + zz), two * (xy - wz), two * (xz + wy)],
                     [two * (xy + wz), one - two * (xx + zz), two * (yz - wx)],
                     [two * (xz - wy), two * (yz + wx), one - two * (xx + yy)]], dtype=F)


_GAMMA, _COS_PI8, _SIN_PI8 = 5.82842712474619, 0.9238795325112867, 0.3826834323650898


def _jacobi_step(S, quat, p, q, r, F):
    spp, sqp, sqq, srp, srq = S[p, p], S[q, p], S[q, q], S[r, p], S[r, q]
    ch, sh = F(2) * (spp - sqq), sqp
    if F(_GAMMA) * sh * sh < ch * ch:
        inv = _recip_sqrt(ch * ch + sh * sh, F)
        ch, sh = inv * ch, inv * sh
    else:
        ch, sh = F(_COS_PI8), F(_SIN_PI8)
    norm = ch * ch + sh * sh
    c, s = (ch * ch - sh * sh) / norm, (F(2) * sh * ch) / norm
    tpp, tpq = c * spp + s * sqp, c * sqp + s * sqq
    tqp, tqq = -s * spp + c * sqp, -s * sqp + c * sqq
    S[p, p] = c * tpp + s * tpq
    S[q, p] = S[p, q] = c * tqp + s * tqq
    S[q, q] = -s * tqp + c * tqq
    S[r, p] = S[p, r] = c * srp + s * srq
    S[r, q] = S[q, r] = -s * srp + c * srq
    x, y, z, w = quat[p], quat[q], quat[r], quat[3]
    quat[p] = x * ch + y * sh
    quat[q] = y * ch - x * sh
    quat[r] = z * ch + w * sh
    quat[3] = w * ch - z * sh


def _jacobi_eigen(S, sweeps, F):
    """Diagonalizes the symmetric S in place (S <- Q^T S Q); returns the rotation Q."""
    quat = [F(0), F(0), F(0), F(1)]
    for _ in range(sweeps):
        _jacobi_step(S, quat, 0, 1, 2, F)
        _jacobi_step(S, quat, 1, 2, 0, F)
        _jacobi_step(S, quat, 2, 0, 1, F)
    return _quat_rotation(quat, F)


def _swap_negate_cols(m, p, q):
    x = m[:, p].copy()
    m[:, p] = m[:, q]
    m[:, q] = -x


def _givens_qr(a, threshold, F):
    tri, rot = a.copy(), np.eye(3, dtype=F)
    for p, q in ((0, 1), (0, 2), (1, 2)):
        a1, a2 = tri[p, p], tri[q, p]
        rho = np.sqrt(a1 * a1 + a2 * a2)
        sh = a2 if rho > threshold else F(0)
        ch = np.abs(a1) + max(rho, threshold)
        if a1 < 0:
            ch, sh = sh, ch
        inv = _recip_sqrt(ch * ch + sh * sh, F)
        ch, sh = ch * inv, sh * inv
        c, s = F(1) - F(2) * sh * sh, F(2) * ch * sh
        x, y = tri[p].copy(), tri[q].copy()
        tri[p], tri[q] = c * x + s * y, -s * x + c * y
        x, y = rot[:, p].copy(), rot[:, q].copy()
        rot[:, p], rot[:, q] = c * x + s * y, -s * x + c * y
        if rho > threshold:
            tri[q, p] = 0
    return rot, tri


def _svd3(a, threshold, sweeps, F):
    S = np.empty((3, 3), dtype=F)
    for i in range(3):
        for j in range(3):
            S[i, j] = a[0, i] * a[0, j] + a[1, i] * a[1, j] + a[2, i] * a[2, j]
    v = _jacobi_eigen(S, sweeps, F)
    b = np.empty((3, 3), dtype=F)
    for i in range(3):
        for j in range(3):
            b[i, j] = a[i, 0] * v[0, j] + a[i, 1] * v[1, j] + a[i, 2] * v[2, j]
    len2 = [b[0, j] * b[0, j] + b[1, j] * b[1, j] + b[2, j] * b[2, j] for j in range(3)]
    for p, q in ((0, 1), (0, 2), (1, 2)):  # sorting network, longest first; ties keep their order
        if len2[p] < len2[q]:
            _swap_negate_cols(b, p, q)
            _swap_negate_cols(v, p, q)
            len2[p], len2[q] = len2[q], len2[p]
    u, r = _givens_qr(b, threshold, F)
    return u, np.array([r[0, 0], r[1, 1], r[2, 2]], dtype=F), v


def _svd2(m, F):
    a, b, c, d = m[0, 0], m[0, 1], m[1, 0], m[1, 1]
    p, q, r = a * a + c * c, a * b + c * d, b * b + d * d
    trace, diff = p + r, p - r
    disc = diff * diff + F(4) * q * q
    if disc == 0:  # A^T A = s^2 I: A is s times an orthogonal matrix
        s = np.sqrt(F(0.5) * trace)
        inv = F(1) / s if s > 0 else F(0)
        u = np.array([[a * inv, b * inv], [c * inv, d * inv]], dtype=F) if s > 0 else np.eye(2, dtype=F)
        return u, np.array([s, s], dtype=F), np.eye(2, dtype=F)
    root = np.sqrt(disc)
    lambda1, lambda2 = (trace + root) * F(0.5), max((trace - root) * F(0.5), F(0))
    inv_s1 = _recip_sqrt(lambda1, F)
    s1, s2 = F(1) / inv_s1, np.sqrt(lambda2)
    vx, vy = diff + root - F(2) * q, diff - root + F(2) * q
    len2 = vx * vx + vy * vy
    if len2 == 0:
        vx = vy = F(0.707106781186547524401)
    else:
        inv = _recip_sqrt(len2, F)
        vx, vy = vx * inv, vy * inv
    ux, uy = (a * vx + b * vy) * inv_s1, (c * vx + d * vy) * inv_s1
    sgn = F(-1) if a * d - b * c < 0 else F(1)
    u = np.array([[ux, -uy * sgn], [uy, ux * sgn]], dtype=F)
    v = np.array([[vx, -vy], [vy, vx]], dtype=F)
    return u, np.array([s1, s2], dtype=F), v


def _float_matrix(name, a, shape):
    """(type, dtype, A in the working precision scaled down, scale up, threshold, sweeps, F)."""
    t = type_of(a)
    if not is_mat(t, shape) or not is_float(dtype(t)):
        raise no_match(name, (a,))
    st = dtype(t)
    F, sweeps, threshold, max_exp = _traits(st)
    m = value_of(a, t).astype(F)
    up, down = _scaling(m, F, max_exp)
    # The QR threshold: Warp's absolute one where max |A| >= 1, else relative to 2^e.
    return t, st, m * down, up, threshold * min(down, F(1)), sweeps, F


@builtin
@ignore_fp
def qr3(A):
    """(Q, R) with A = Q R, Q a rotation and R upper triangular (R[0][0], R[1][1] >= 0)."""
    t, st, a, up, threshold, _, F = _float_matrix("qr3", A, (3, 3))
    q, r = _givens_qr(a, threshold, F)
    return result(t, q), result(t, r * up)


@builtin
@ignore_fp
def svd3(A):
    """(U, sigma, V) with A = U diag(sigma) V^T: U and V rotations, |sigma| descending,
    sigma[2] with the sign of det(A)."""
    t, st, a, up, threshold, sweeps, F = _float_matrix("svd3", A, (3, 3))
    u, s, v = _svd3(a, threshold, sweeps, F)
    return result(t, u), result(vec_t(3, st), s * up), result(t, v)


@builtin
@ignore_fp
def svd2(A):
    """(U, sigma, V) with A = U diag(sigma) V^T: V a rotation, sigma[0] >= sigma[1] >= 0."""
    t, st, a, up, _, _, F = _float_matrix("svd2", A, (2, 2))
    u, s, v = _svd2(a, F)
    return result(t, u), result(vec_t(2, st), s * up), result(t, v)


@builtin
@ignore_fp
def eig3(A):
    """(Q, d): Q a rotation whose columns are the eigenvectors of the symmetric matrix of A's
    lower triangle, d = diag(Q^T A Q) (not sorted)."""
    t, st, a, up, _, sweeps, F = _float_matrix("eig3", A, (3, 3))
    S = np.tril(a) + np.tril(a, -1).T
    q = _jacobi_eigen(S, sweeps, F)
    d = np.empty(3, dtype=F)
    for j in range(3):
        row = [q[0, j] * a[0, m] + q[1, j] * a[1, m] + q[2, j] * a[2, m] for m in range(3)]
        d[j] = (row[0] * q[0, j] + row[1] * q[1, j] + row[2] * q[2, j]) * up
    return result(mat_t(3, 3, st), q), result(vec_t(3, st), d)


__all__ = ["qr3", "svd3", "svd2", "eig3"]

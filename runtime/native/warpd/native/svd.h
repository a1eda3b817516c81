// warpd device runtime: the matrix decompositions svd3, svd2, qr3 and eig3.
//
// Singular vectors and eigenvectors are defined only up to sign (and up to a
// basis where values repeat), and eigenvalues in no particular order, yet
// programs read U[:, 0], Q[:, 0] or d[0]. So these functions reproduce Warp
// 1.19's results, not merely some valid factorization: they run the same
// published algorithms with the same fixed iteration counts and thresholds.
//
//   - Jacobi (eig3, and V in svd3): cyclic Jacobi with approximate Givens
//     rotations accumulated as a quaternion (McAdams, Selle, Tamstorf, Teran
//     and Sifakis 2011, "Computing the Singular Value Decomposition of 3x3
//     matrices with minimal branching and elementary floating point
//     operations", sections 2.2-2.3), sweeping the planes (0,1), (1,2), (2,0)
//     a fixed number of times: 4 for float32 and half, 8 for float64.
//   - svd3 (same paper, sections 3-4): A^T A = V D V^T by Jacobi; the columns
//     of B = A V sorted by decreasing length, each swap negating one column so
//     that V stays a rotation; then B = U R by the QR below, and sigma is the
//     diagonal of R (its off-diagonal part, of the size of Jacobi's residual,
//     is dropped).
//   - qr3 (same paper, section 4): Givens rotations zeroing R[1][0], R[2][0],
//     R[2][1] in that order, each leaving its pivot >= 0. Where a pivot and
//     the entry below have norm <= 1e-6 (1e-12 for float64), the entry is
//     left alone and the two rows only negated when the pivot is negative.
//   - svd2: closed form from the eigenvectors of the 2x2 A^T A.
//
// Conventions that follow, as in Warp:
//   - svd3: U and V are rotations (det +1); sigma is sorted by decreasing
//     magnitude, sigma[0], sigma[1] >= 0 and sigma[2] has the sign of det(A).
//   - svd2: sigma[0] >= sigma[1] >= 0; V is a rotation; U's second column is
//     the first turned by +90 degrees times sign(det(A)) (+1 when det(A) is
//     0), so det(U) = sign(det(A)).
//   - qr3: Q is a rotation; R[0][0], R[1][1] >= 0 and R[2][2] has the sign of
//     det(A).
//   - eig3: Q (a rotation, the eigenvectors as columns) depends only on A's
//     lower triangle; d = diag(Q^T A Q) with the whole of A. The eigenvalues
//     are not sorted: each ends where the sweeps leave it, mostly near its
//     diagonal position.
// Accuracy is Warp's too: a fixed number of approximate sweeps leaves float32
// results typically about 1e-6 relative from exact, up to about 1e-2 where
// singular values or eigenvalues nearly repeat or vanish; float64's eight
// sweeps converge to rounding. On CUDA 1 / sqrt is the reciprocal square root
// instruction, as in Warp; where a choice hangs on rounding (ties, such as
// the sort in svd3 of I), results follow each device's rounding, as Warp's do.
//
// Where warpd departs from Warp, each time where Warp's result is NaN or no
// factorization:
//   - The algorithms run on A / 2^e, 2^e the power of two at or below
//     max |A[i][j]|, with the QR threshold divided by 2^e as well. For
//     max |A| >= 1 every branch and rounding is then Warp's scaled by 2^e,
//     except that the squares of A^T A's entries, which Warp forms in the
//     working precision, neither overflow (float32 |A| above about 1e9 gives
//     NaN in Warp) nor underflow.
//   - The QR threshold is Warp's absolute 1e-6 (1e-12) only for max |A| >= 1;
//     below, it is relative: 1e-6 (1e-12) times 2^e. With Warp's, a matrix
//     whose entries are all below the threshold is not rotated at all, so
//     qr3 returns R = A, not triangular, and svd3 no factorization.
//   - half matrices decompose in float32, rounded to half at the end; Warp
//     rounds every operation to half, which gives NaN (a zero norm times the
//     infinite reciprocal of an underflowed square) for inputs as plain as
//     diag(1, 2, 3), and signs that follow half rounding at ties.
//   - svd2: the second eigenvalue of A^T A, where rounding makes it slightly
//     negative (rank-1 A), counts as 0, not as NaN; and where A^T A is
//     exactly a multiple of I (A is c times a rotation or reflection, c >= 0)
//     Warp returns U = V = I, which is no factorization unless A = c I:
//     here V = I and U = A / c (U = I when A = 0).
//
// Outputs may alias the input (svd3(A, A, sigma, V)): results are written
// after the last read of A.
#pragma once

#include "warpd/native/mat.h"
#include "warpd/native/tuple.h"

namespace wp {
namespace decomp {

// Per element type: the precision the algorithms run in, Jacobi sweeps, the
// QR threshold, and the range of binary exponents e for which 2^e and 2^-e
// are normal numbers. Defined only for Warp's Float types.
template <typename T>
struct traits;
template <>
struct traits<float32> {
  typedef float32 real;
  static constexpr int kSweeps = 4;
  static constexpr int kMaxExponent = 126;
  WP_FUNC static float32 qr_threshold() { return 1e-6f; }
};
template <>
struct traits<half> : traits<float32> {};
template <>
struct traits<bfloat16> : traits<float32> {};
template <>
struct traits<float64> {
  typedef float64 real;
  static constexpr int kSweeps = 8;
  static constexpr int kMaxExponent = 1022;
  WP_FUNC static float64 qr_threshold() { return 1e-12; }
};

// floor(log2(m)) for finite m > 0, clamped to +-kMaxExponent (subnormal m
// give the lower bound); 0 for 0, infinity and NaN, which are not rescaled.
WP_FUNC int binary_exponent(float32 m) {
  const int biased = (int)((__builtin_bit_cast(uint32, m) >> 23) & 0xffu);
  if (biased == 0xff || !(m > 0.0f)) return 0;
  const int e = biased - 127, bound = traits<float32>::kMaxExponent;
  return e < -bound ? -bound : e > bound ? bound : e;
}
WP_FUNC int binary_exponent(float64 m) {
  const int biased = (int)((__builtin_bit_cast(uint64, m) >> 52) & 0x7ffu);
  if (biased == 0x7ff || !(m > 0.0)) return 0;
  const int e = biased - 1023, bound = traits<float64>::kMaxExponent;
  return e < -bound ? -bound : e > bound ? bound : e;
}
// 2^e for |e| <= kMaxExponent.
WP_FUNC float32 pow2(float32, int e) { return __builtin_bit_cast(float32, (uint32)(e + 127) << 23); }
WP_FUNC float64 pow2(float64, int e) { return __builtin_bit_cast(float64, (uint64)(e + 1023) << 52); }

// 1 / sqrt(x) where Warp's algorithms take it: the reciprocal square root
// instruction on CUDA, as Warp's device code does, else a division.
#if WP_CUDA
WP_FUNC float32 recip_sqrt(float32 x) { return ::rsqrtf(x); }
WP_FUNC float64 recip_sqrt(float64 x) { return ::rsqrt(x); }
#else
WP_FUNC float32 recip_sqrt(float32 x) { return 1.0f / sqrt(x); }
WP_FUNC float64 recip_sqrt(float64 x) { return 1.0 / sqrt(x); }
#endif

// The exact power-of-two rescaling described at the top: the algorithms see
// A * down, and values with A's units come back multiplied by up.
template <typename F>
struct scaling {
  F up, down;
};
template <int R, int C, typename F>
WP_FUNC scaling<F> scaling_for(const mat_t<R, C, F>& a) {
  F m = F(0);
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      const F x = abs(a.c[i][j]);
      if (x > m) m = x;  // NaN never wins
    }
  const int e = binary_exponent(m);
  return scaling<F>{pow2(F(0), e), pow2(F(0), -e)};
}

// The QR threshold for the rescaled matrix: Warp's absolute one (so divided
// by 2^e) where max |A| >= 1, else relative to 2^e (see the top).
template <typename T, typename F>
WP_FUNC F qr_threshold(const scaling<F>& k) {
  return traits<T>::qr_threshold() * (k.down < F(1) ? k.down : F(1));
}

template <int R, int C, typename F>
WP_FUNC mat_t<R, C, F> scaled(const mat_t<R, C, F>& a, F factor) {
  mat_t<R, C, F> out;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) out.c[i][j] = a.c[i][j] * factor;
  return out;
}

// From here on F is float32 or float64, where C operators are IEEE
// arithmetic, so the algorithms read as math.

// The rotation matrix of the unit quaternion (x, y, z, w) = q[0..3].
template <typename F>
WP_FUNC mat_t<3, 3, F> quat_rotation(const F q[4]) {
  const F x = q[0], y = q[1], z = q[2], w = q[3];
  const F xx = x * x, yy = y * y, zz = z * z;
  const F xy = x * y, xz = x * z, yz = y * z;
  const F wx = w * x, wy = w * y, wz = w * z;
  mat_t<3, 3, F> m;
  m.c[0][0] = F(1) - F(2) * (yy + zz), m.c[0][1] = F(2) * (xy - wz), m.c[0][2] = F(2) * (xz + wy);
  m.c[1][0] = F(2) * (xy + wz), m.c[1][1] = F(1) - F(2) * (xx + zz), m.c[1][2] = F(2) * (yz - wx);
  m.c[2][0] = F(2) * (xz - wy), m.c[2][1] = F(2) * (yz + wx), m.c[2][2] = F(1) - F(2) * (xx + yy);
  return m;
}

// One Jacobi step in the plane (p, q), r the remaining axis ((p, q, r) is a
// cyclic order of 0, 1, 2): S <- G^T S G with G a rotation about axis r, and
// the quaternion of the accumulated rotation Q <- Q G. Reads S[q][p], S[r][p]
// and S[r][q] of the off-diagonal pairs and keeps both halves symmetric.
//
// G's half angle comes from McAdams et al.'s first-order estimate (ch, sh) =
// (2 (S[p][p] - S[q][q]), S[q][p]), normalized; where that half angle would
// exceed pi/8 (gamma sh^2 >= ch^2, gamma = 3 + 2 sqrt(2) = cot^2(pi/8)) it
// is pi/8 instead, with a positive sine whatever S[q][p]'s sign (as in Warp).
// Repeated sweeps converge (McAdams et al., section 2.3).
template <typename F>
WP_FUNC void jacobi_step(mat_t<3, 3, F>& S, F quat[4], int p, int q, int r) {
  const F kGamma = F(5.82842712474619), kCosPi8 = F(0.9238795325112867), kSinPi8 = F(0.3826834323650898);
  const F spp = S.c[p][p], sqp = S.c[q][p], sqq = S.c[q][q], srp = S.c[r][p], srq = S.c[r][q];
  F ch = F(2) * (spp - sqq), sh = sqp;
  if (kGamma * sh * sh < ch * ch) {
    const F inv = recip_sqrt(ch * ch + sh * sh);
    ch = inv * ch, sh = inv * sh;
  } else {
    ch = kCosPi8, sh = kSinPi8;
  }
  // Cosine and sine of the full angle (ch^2 + sh^2 is 1 up to rounding).
  const F norm = ch * ch + sh * sh;
  const F c = (ch * ch - sh * sh) / norm, s = (F(2) * sh * ch) / norm;
  // Rows p, q of G^T S first, then columns p, q of (G^T S) G.
  const F tpp = c * spp + s * sqp, tpq = c * sqp + s * sqq;
  const F tqp = -s * spp + c * sqp, tqq = -s * sqp + c * sqq;
  S.c[p][p] = c * tpp + s * tpq;
  S.c[q][p] = S.c[p][q] = c * tqp + s * tqq;
  S.c[q][q] = -s * tqp + c * tqq;
  S.c[r][p] = S.c[p][r] = c * srp + s * srq;
  S.c[r][q] = S.c[q][r] = -s * srp + c * srq;
  // quat <- quat * (sh e_r + ch): the rotation by 2 * half angle about r.
  const F x = quat[p], y = quat[q], z = quat[r], w = quat[3];
  quat[p] = x * ch + y * sh;
  quat[q] = y * ch - x * sh;
  quat[r] = z * ch + w * sh;
  quat[3] = w * ch - z * sh;
}

// Diagonalizes the symmetric S in place (S <- Q^T S Q) and returns Q, a
// rotation, by `sweeps` cyclic sweeps of jacobi_step.
template <typename F>
WP_FUNC mat_t<3, 3, F> jacobi_eigen(mat_t<3, 3, F>& S, int sweeps) {
  F quat[4] = {F(0), F(0), F(0), F(1)};
  for (int k = 0; k < sweeps; ++k) {
    jacobi_step(S, quat, 0, 1, 2);
    jacobi_step(S, quat, 1, 2, 0);
    jacobi_step(S, quat, 2, 0, 1);
  }
  return quat_rotation(quat);
}

// Swaps columns p and q of m and negates the new column q: a rotation stays a
// rotation.
template <typename F>
WP_FUNC void swap_negate_cols(mat_t<3, 3, F>& m, int p, int q) {
  for (int i = 0; i < 3; ++i) {
    const F x = m.c[i][p];
    m.c[i][p] = m.c[i][q], m.c[i][q] = -x;
  }
}

// A = Q R by three Givens rotations, zeroing R[1][0], R[2][0], R[2][1] in
// turn. Each rotation G acts on rows p, q with G's half angle (ch, sh) from
// the pivot a1 = R[p][p] and the entry a2 = R[q][p] (McAdams et al.,
// section 4): proportional to (|a1| + rho, a2), rho = |(a1, a2)|, or with the
// two swapped when a1 < 0, which avoids cancellation and leaves the new pivot
// equal to rho >= 0. At rho <= threshold the entry is left alone (sh = 0),
// and the rotation is the identity or, for a1 < 0, a negation of both rows.
template <typename F>
WP_FUNC void givens_qr(const mat_t<3, 3, F>& A, F threshold, mat_t<3, 3, F>& Q, mat_t<3, 3, F>& R) {
  mat_t<3, 3, F> tri = A, rot = identity<3, F>();
  const int pivot[3] = {0, 0, 1}, below[3] = {1, 2, 2};
  for (int k = 0; k < 3; ++k) {
    const int p = pivot[k], q = below[k];
    const F a1 = tri.c[p][p], a2 = tri.c[q][p];
    const F rho = sqrt(a1 * a1 + a2 * a2);
    F sh = rho > threshold ? a2 : F(0);
    F ch = abs(a1) + max(rho, threshold);
    if (a1 < F(0)) {
      const F t = ch;
      ch = sh, sh = t;
    }
    const F inv = recip_sqrt(ch * ch + sh * sh);
    ch *= inv, sh *= inv;
    const F c = F(1) - F(2) * sh * sh, s = F(2) * ch * sh;
    for (int j = 0; j < 3; ++j) {  // rows p, q of R <- G R
      const F x = tri.c[p][j], y = tri.c[q][j];
      tri.c[p][j] = c * x + s * y, tri.c[q][j] = -s * x + c * y;
    }
    for (int i = 0; i < 3; ++i) {  // columns p, q of Q <- Q G^T keeps Q R == A
      const F x = rot.c[i][p], y = rot.c[i][q];
      rot.c[i][p] = c * x + s * y, rot.c[i][q] = -s * x + c * y;
    }
    if (rho > threshold) tri.c[q][p] = F(0);  // zero up to rounding: make it exact
  }
  Q = rot, R = tri;
}

template <typename F>
WP_FUNC void svd3(const mat_t<3, 3, F>& A, F qr_threshold, int sweeps, mat_t<3, 3, F>& U, vec_t<3, F>& sigma,
                  mat_t<3, 3, F>& V) {
  mat_t<3, 3, F> S;  // A^T A
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) S.c[i][j] = A.c[0][i] * A.c[0][j] + A.c[1][i] * A.c[1][j] + A.c[2][i] * A.c[2][j];
  mat_t<3, 3, F> v = jacobi_eigen(S, sweeps);
  mat_t<3, 3, F> B;  // A V: orthogonal columns of lengths sigma, up to Jacobi's residual
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) B.c[i][j] = A.c[i][0] * v.c[0][j] + A.c[i][1] * v.c[1][j] + A.c[i][2] * v.c[2][j];
  F len2[3];
  for (int j = 0; j < 3; ++j) len2[j] = B.c[0][j] * B.c[0][j] + B.c[1][j] * B.c[1][j] + B.c[2][j] * B.c[2][j];
  const int pp[3] = {0, 0, 1}, qq[3] = {1, 2, 2};
  for (int k = 0; k < 3; ++k) {  // sorting network, longest first; ties keep their order
    const int p = pp[k], q = qq[k];
    if (len2[p] < len2[q]) {
      swap_negate_cols(B, p, q);
      swap_negate_cols(v, p, q);
      const F t = len2[p];
      len2[p] = len2[q], len2[q] = t;
    }
  }
  mat_t<3, 3, F> u, r;
  givens_qr(B, qr_threshold, u, r);
  U = u, V = v;
  sigma = vec_t<3, F>{{r.c[0][0], r.c[1][1], r.c[2][2]}};
}

template <typename F>
WP_FUNC void svd2(const mat_t<2, 2, F>& A, mat_t<2, 2, F>& U, vec_t<2, F>& sigma, mat_t<2, 2, F>& V) {
  const F a = A.c[0][0], b = A.c[0][1], c = A.c[1][0], d = A.c[1][1];
  // A^T A = [p q; q r], with eigenvalues (p + r +- root) / 2.
  const F p = a * a + c * c, q = a * b + c * d, r = b * b + d * d;
  const F trace = p + r, diff = p - r;
  const F disc = diff * diff + F(4) * q * q;
  if (disc == F(0)) {  // A^T A = s^2 I: A is s times an orthogonal matrix
    const F s = sqrt(F(0.5) * trace);
    const F inv = s > F(0) ? F(1) / s : F(0);
    U = s > F(0) ? mat_t<2, 2, F>{{{a * inv, b * inv}, {c * inv, d * inv}}} : identity<2, F>();
    V = identity<2, F>();
    sigma = vec_t<2, F>{{s, s}};
    return;
  }
  const F root = sqrt(disc);
  const F lambda1 = (trace + root) * F(0.5), lambda2 = max((trace - root) * F(0.5), F(0));
  const F inv_s1 = recip_sqrt(lambda1);
  const F s1 = F(1) / inv_s1, s2 = sqrt(lambda2);
  // The eigenvector of lambda1: (lambda1 - r, q) - (q, lambda1 - p), both
  // terms eigenvectors; Warp's choice, which fixes V's sign. When they
  // cancel exactly the direction is (1, 1) / sqrt(2).
  F vx = diff + root - F(2) * q, vy = diff - root + F(2) * q;
  const F len2 = vx * vx + vy * vy;
  if (len2 == F(0)) {
    vx = vy = F(0.707106781186547524401);
  } else {
    const F inv = recip_sqrt(len2);
    vx = vx * inv, vy = vy * inv;
  }
  // U's first column is A v / s1; the second completes it with det(U) =
  // sign(det(A)), which also covers s2 = 0.
  const F ux = (a * vx + b * vy) * inv_s1, uy = (c * vx + d * vy) * inv_s1;
  const F sgn = a * d - b * c < F(0) ? F(-1) : F(1);
  U = mat_t<2, 2, F>{{{ux, -uy * sgn}, {uy, ux * sgn}}};
  V = mat_t<2, 2, F>{{{vx, -vy}, {vy, vx}}};
  sigma = vec_t<2, F>{{s1, s2}};
}

}  // namespace decomp

// --- The builtins ----------------------------------------------------------------

template <typename T>
WP_FUNC void svd3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& U, vec_t<3, T>& sigma, mat_t<3, 3, T>& V) {
  typedef decomp::traits<T> traits;
  typedef typename traits::real F;
  const mat_t<3, 3, F> a = cast<mat_t<3, 3, F>>(A);
  const decomp::scaling<F> k = decomp::scaling_for(a);
  mat_t<3, 3, F> u, v;
  vec_t<3, F> s;
  decomp::svd3(decomp::scaled(a, k.down), decomp::qr_threshold<T>(k), traits::kSweeps, u, s, v);
  U = cast<mat_t<3, 3, T>>(u);
  V = cast<mat_t<3, 3, T>>(v);
  sigma = vec_t<3, T>{{cast<T>(s.c[0] * k.up), cast<T>(s.c[1] * k.up), cast<T>(s.c[2] * k.up)}};
}

template <typename T>
WP_FUNC void svd2(const mat_t<2, 2, T>& A, mat_t<2, 2, T>& U, vec_t<2, T>& sigma, mat_t<2, 2, T>& V) {
  typedef typename decomp::traits<T>::real F;
  const mat_t<2, 2, F> a = cast<mat_t<2, 2, F>>(A);
  const decomp::scaling<F> k = decomp::scaling_for(a);
  mat_t<2, 2, F> u, v;
  vec_t<2, F> s;
  decomp::svd2(decomp::scaled(a, k.down), u, s, v);
  U = cast<mat_t<2, 2, T>>(u);
  V = cast<mat_t<2, 2, T>>(v);
  sigma = vec_t<2, T>{{cast<T>(s.c[0] * k.up), cast<T>(s.c[1] * k.up)}};
}

template <typename T>
WP_FUNC void qr3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& Q, mat_t<3, 3, T>& R) {
  typedef decomp::traits<T> traits;
  typedef typename traits::real F;
  const mat_t<3, 3, F> a = cast<mat_t<3, 3, F>>(A);
  const decomp::scaling<F> k = decomp::scaling_for(a);
  mat_t<3, 3, F> q, r;
  decomp::givens_qr(decomp::scaled(a, k.down), decomp::qr_threshold<T>(k), q, r);
  Q = cast<mat_t<3, 3, T>>(q);
  R = cast<mat_t<3, 3, T>>(decomp::scaled(r, k.up));
}

template <typename T>
WP_FUNC void eig3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& Q, vec_t<3, T>& d) {
  typedef decomp::traits<T> traits;
  typedef typename traits::real F;
  const mat_t<3, 3, F> a = cast<mat_t<3, 3, F>>(A);
  const decomp::scaling<F> k = decomp::scaling_for(a);
  const mat_t<3, 3, F> as = decomp::scaled(a, k.down);
  mat_t<3, 3, F> S;  // the symmetric matrix of A's lower triangle
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) S.c[i][j] = i >= j ? as.c[i][j] : as.c[j][i];
  const mat_t<3, 3, F> q = decomp::jacobi_eigen(S, traits::kSweeps);
  // d = diag(Q^T A Q) from the whole of A, as Warp computes it (for symmetric
  // A, S's diagonal up to rounding).
  F dd[3];
  for (int j = 0; j < 3; ++j) {
    F t[3];  // row j of Q^T A
    for (int m = 0; m < 3; ++m) t[m] = q.c[0][j] * as.c[0][m] + q.c[1][j] * as.c[1][m] + q.c[2][j] * as.c[2][m];
    dd[j] = (t[0] * q.c[0][j] + t[1] * q.c[1][j] + t[2] * q.c[2][j]) * k.up;
  }
  Q = cast<mat_t<3, 3, T>>(q);
  d = vec_t<3, T>{{cast<T>(dd[0]), cast<T>(dd[1]), cast<T>(dd[2])}};
}

// Warp's forms without output arguments return the results as a tuple.
template <typename T>
WP_FUNC tuple_t<mat_t<3, 3, T>, vec_t<3, T>, mat_t<3, 3, T>> svd3(const mat_t<3, 3, T>& A) {
  tuple_t<mat_t<3, 3, T>, vec_t<3, T>, mat_t<3, 3, T>> r;
  svd3(A, tuple_get<0>(r), tuple_get<1>(r), tuple_get<2>(r));
  return r;
}

template <typename T>
WP_FUNC tuple_t<mat_t<2, 2, T>, vec_t<2, T>, mat_t<2, 2, T>> svd2(const mat_t<2, 2, T>& A) {
  tuple_t<mat_t<2, 2, T>, vec_t<2, T>, mat_t<2, 2, T>> r;
  svd2(A, tuple_get<0>(r), tuple_get<1>(r), tuple_get<2>(r));
  return r;
}

template <typename T>
WP_FUNC tuple_t<mat_t<3, 3, T>, mat_t<3, 3, T>> qr3(const mat_t<3, 3, T>& A) {
  tuple_t<mat_t<3, 3, T>, mat_t<3, 3, T>> r;
  qr3(A, tuple_get<0>(r), tuple_get<1>(r));
  return r;
}

template <typename T>
WP_FUNC tuple_t<mat_t<3, 3, T>, vec_t<3, T>> eig3(const mat_t<3, 3, T>& A) {
  tuple_t<mat_t<3, 3, T>, vec_t<3, T>> r;
  eig3(A, tuple_get<0>(r), tuple_get<1>(r));
  return r;
}

}  // namespace wp

// warpd device runtime: reverse-mode adjoints of the matrix decompositions
// (svd.h): svd3, svd2, qr3, eig3, in both forms.
// Conventions: adj_scalar.h.
//
// - Output arguments (Warp's form): adj_svd3(A, U, sigma, V, adj_A, adj_U,
//   adj_sigma, adj_V), the outputs' values and adjoints in; no adj_ret.
// - The tuple form: adj_svd3(A, ret, adj_A, adj_ret), ret the forward's
//   tuple (kAdjointBuiltins marks these takes_result) and adj_ret the tuple
//   of the outputs' adjoints.
//
// The math is Warp 1.19's (warp/native/svd.h), from the factors the forward
// returned (so, like Warp's, exact for converged factors; float32's four
// Jacobi sweeps leave the factors, and so the gradients, about 1e-6 relative
// from exact). half and bfloat16 compute in float32, as the forward does.
//
// - svd3/svd2 (A = U diag(sigma) V^T, square, sigma signed in svd3):
//     adj_A += U (diag(adj_sigma) + (F o (U^T adj_U - adj_U^T U)) S
//                 + S (F o (V^T adj_V - adj_V^T V))) V^T,
//   S = diag(sigma), F[i][j] = 1 / (sigma_j^2 - sigma_i^2) for i < j and
//   F[j][i] = -F[i][j]. At repeated or nearly repeated singular values Warp's
//   choice: the difference sigma_j^2 - sigma_i^2 (<= 0, sigma sorted by
//   magnitude) is taken as at most -eps, eps = 1e-6 (float32, half,
//   bfloat16) or 1e-12 (float64): the singular vectors' gradients are then
//   large but finite, and sigma's (U diag(adj_sigma) V^T) is exact.
// - qr3 (A = Q R, R upper triangular; Walter and Lehmann / Liao et al.):
//     adj_A += (adj_Q + Q copyltu(M)) R^-T,  M = R adj_R^T - adj_Q^T Q,
//   copyltu(M)[i][j] = M[max(i, j)][min(i, j)]. Where R is singular (A
//   rank-deficient, where the QR is not differentiable) R^-T is warpd's
//   inverse of a singular matrix, 0, as Warp's is: no gradient.
// - eig3 (A = Q diag(d) Q^T for symmetric A; Giles 2008):
//     adj_A += Q (diag(adj_d) + F o (Q^T adj_Q)) Q^T,
//   F[i][j] = 1 / (d_j - d_i) off the diagonal, each difference of magnitude
//   below 1e-6 taken as +-1e-6 with its sign (Warp's), and an exact 0 as
//   +1e-6 (Warp divides by it: inf or NaN). When adj_Q is exactly 0 only
//   the eigenvalue term is added (Warp's shortcut). The eigenvalue term is
//   exact for any symmetric A, also for perturbations of either triangle
//   (d = diag(Q^T A Q) reads the whole of A). The eigenvector term is, as
//   in Warp, the gradient for symmetric perturbations spread over both
//   triangles, although the forward's Q reads only A's lower triangle: the
//   adjoint of a pair (A[i][j], A[j][i]) moved together is exact, not each
//   entry's alone.
#pragma once

#include "warpd/native/adjoint/adj_mat.h"
#include "warpd/native/svd.h"
#include "warpd/native/tuple.h"

namespace wp {
namespace adj_decomp {

// Warp's _svd_config<T>::SVD_EPSILON, in the precision the adjoint runs in.
template <typename F>
WP_FUNC F svd_epsilon();
template <>
WP_FUNC float32 svd_epsilon<float32>() { return 1e-6f; }
template <>
WP_FUNC float64 svd_epsilon<float64>() { return 1e-12; }

template <int R, int C, typename F, typename T>
WP_FUNC mat_t<R, C, F> to(const mat_t<R, C, T>& m) {
  return cast<mat_t<R, C, F>>(m);
}
template <int N, typename F, typename T>
WP_FUNC vec_t<N, F> to(const vec_t<N, T>& v) {
  return cast<vec_t<N, F>>(v);
}

// a^T b and a b^T, a b, for N x N matrices in F (plain IEEE arithmetic).
template <int N, typename F>
WP_FUNC mat_t<N, N, F> mul_tn(const mat_t<N, N, F>& a, const mat_t<N, N, F>& b) {
  mat_t<N, N, F> r;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      F s = F(0);
      for (int k = 0; k < N; ++k) s += a.c[k][i] * b.c[k][j];
      r.c[i][j] = s;
    }
  return r;
}
template <int N, typename F>
WP_FUNC mat_t<N, N, F> mul_nt(const mat_t<N, N, F>& a, const mat_t<N, N, F>& b) {
  mat_t<N, N, F> r;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      F s = F(0);
      for (int k = 0; k < N; ++k) s += a.c[i][k] * b.c[j][k];
      r.c[i][j] = s;
    }
  return r;
}
template <int N, typename F>
WP_FUNC mat_t<N, N, F> mul_nn(const mat_t<N, N, F>& a, const mat_t<N, N, F>& b) {
  mat_t<N, N, F> r;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      F s = F(0);
      for (int k = 0; k < N; ++k) s += a.c[i][k] * b.c[k][j];
      r.c[i][j] = s;
    }
  return r;
}

// The SVD adjoint above, for N = 2 or 3, in F.
template <int N, typename F>
WP_FUNC mat_t<N, N, F> svd_adjoint(const mat_t<N, N, F>& U, const vec_t<N, F>& sigma, const mat_t<N, N, F>& V,
                                   const mat_t<N, N, F>& adj_U, const vec_t<N, F>& adj_sigma,
                                   const mat_t<N, N, F>& adj_V) {
  const F eps = svd_epsilon<F>();
  mat_t<N, N, F> Fm;
  for (int i = 0; i < N; ++i) {
    Fm.c[i][i] = F(0);
    for (int j = i + 1; j < N; ++j) {
      F diff = sigma.c[j] * sigma.c[j] - sigma.c[i] * sigma.c[i];
      if (!(diff < -eps)) diff = -eps;  // Warp's min(diff, -eps)
      Fm.c[i][j] = F(1) / diff;
      Fm.c[j][i] = -Fm.c[i][j];
    }
  }
  const mat_t<N, N, F> utu = mul_tn(U, adj_U), vtv = mul_tn(V, adj_V);
  mat_t<N, N, F> inner;  // U^T adj_A V
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      const F su = Fm.c[i][j] * (utu.c[i][j] - utu.c[j][i]);
      const F sv = Fm.c[i][j] * (vtv.c[i][j] - vtv.c[j][i]);
      inner.c[i][j] = su * sigma.c[j] + sigma.c[i] * sv + (i == j ? adj_sigma.c[i] : F(0));
    }
  return mul_nt(mul_nn(U, inner), V);
}

template <typename F>
WP_FUNC mat_t<3, 3, F> qr_adjoint(const mat_t<3, 3, F>& Q, const mat_t<3, 3, F>& R, const mat_t<3, 3, F>& adj_Q,
                                  const mat_t<3, 3, F>& adj_R) {
  const mat_t<3, 3, F> rr = mul_nt(R, adj_R), qq = mul_tn(adj_Q, Q);
  mat_t<3, 3, F> sym;  // copyltu(M)
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const int r = i > j ? i : j, c = i > j ? j : i;
      sym.c[i][j] = rr.c[r][c] - qq.c[r][c];
    }
  mat_t<3, 3, F> lhs = mul_nn(Q, sym);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) lhs.c[i][j] += adj_Q.c[i][j];
  // lhs R^-T = lhs (R^-1)^T
  return mul_nt(lhs, inverse(R));
}

// Warp's clamp of an eigenvalue difference away from 0 (an exact 0 as +1e-6).
template <typename F>
WP_FUNC F eig_gap(F d) {
  const F tiny = F(1e-6);
  if (d < F(0) && d > -tiny) return -tiny;
  if (d >= F(0) && d < tiny) return tiny;
  return d;
}

template <typename F>
WP_FUNC mat_t<3, 3, F> eig_adjoint(const mat_t<3, 3, F>& Q, const vec_t<3, F>& d, const mat_t<3, 3, F>& adj_Q,
                                   const vec_t<3, F>& adj_d) {
  bool vectors = false;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) vectors = vectors || adj_Q.c[i][j] != F(0);
  mat_t<3, 3, F> inner = vectors ? mul_tn(Q, adj_Q) : mat_t<3, 3, F>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      if (i == j) inner.c[i][j] = adj_d.c[i];
      else if (vectors) inner.c[i][j] = inner.c[i][j] / eig_gap(d.c[j] - d.c[i]);
      else inner.c[i][j] = F(0);
    }
  return mul_nt(mul_nn(Q, inner), Q);
}

}  // namespace adj_decomp

// --- svd3 ---------------------------------------------------------------------------

template <typename T>
WP_FUNC void adj_svd3(const mat_t<3, 3, T>&, const mat_t<3, 3, T>& U, const vec_t<3, T>& sigma,
                      const mat_t<3, 3, T>& V, mat_t<3, 3, T>& adj_A, const mat_t<3, 3, T>& adj_U,
                      const vec_t<3, T>& adj_sigma, const mat_t<3, 3, T>& adj_V) {
  typedef typename decomp::traits<T>::real F;
  using adj_decomp::to;
  accumulate_adjoint(adj_A, cast<mat_t<3, 3, T>>(adj_decomp::svd_adjoint<3, F>(
                                to<3, 3, F>(U), to<3, F>(sigma), to<3, 3, F>(V), to<3, 3, F>(adj_U),
                                to<3, F>(adj_sigma), to<3, 3, F>(adj_V))));
}

template <typename T>
WP_FUNC void adj_svd3(const mat_t<3, 3, T>& A, const tuple_t<mat_t<3, 3, T>, vec_t<3, T>, mat_t<3, 3, T>>& ret,
                      mat_t<3, 3, T>& adj_A,
                      const tuple_t<mat_t<3, 3, T>, vec_t<3, T>, mat_t<3, 3, T>>& adj_ret) {
  adj_svd3(A, tuple_get<0>(ret), tuple_get<1>(ret), tuple_get<2>(ret), adj_A, tuple_get<0>(adj_ret),
           tuple_get<1>(adj_ret), tuple_get<2>(adj_ret));
}

// --- svd2 ---------------------------------------------------------------------------

template <typename T>
WP_FUNC void adj_svd2(const mat_t<2, 2, T>&, const mat_t<2, 2, T>& U, const vec_t<2, T>& sigma,
                      const mat_t<2, 2, T>& V, mat_t<2, 2, T>& adj_A, const mat_t<2, 2, T>& adj_U,
                      const vec_t<2, T>& adj_sigma, const mat_t<2, 2, T>& adj_V) {
  typedef typename decomp::traits<T>::real F;
  using adj_decomp::to;
  accumulate_adjoint(adj_A, cast<mat_t<2, 2, T>>(adj_decomp::svd_adjoint<2, F>(
                                to<2, 2, F>(U), to<2, F>(sigma), to<2, 2, F>(V), to<2, 2, F>(adj_U),
                                to<2, F>(adj_sigma), to<2, 2, F>(adj_V))));
}

template <typename T>
WP_FUNC void adj_svd2(const mat_t<2, 2, T>& A, const tuple_t<mat_t<2, 2, T>, vec_t<2, T>, mat_t<2, 2, T>>& ret,
                      mat_t<2, 2, T>& adj_A,
                      const tuple_t<mat_t<2, 2, T>, vec_t<2, T>, mat_t<2, 2, T>>& adj_ret) {
  adj_svd2(A, tuple_get<0>(ret), tuple_get<1>(ret), tuple_get<2>(ret), adj_A, tuple_get<0>(adj_ret),
           tuple_get<1>(adj_ret), tuple_get<2>(adj_ret));
}

// --- qr3 ----------------------------------------------------------------------------

template <typename T>
WP_FUNC void adj_qr3(const mat_t<3, 3, T>&, const mat_t<3, 3, T>& Q, const mat_t<3, 3, T>& R,
                     mat_t<3, 3, T>& adj_A, const mat_t<3, 3, T>& adj_Q, const mat_t<3, 3, T>& adj_R) {
  typedef typename decomp::traits<T>::real F;
  using adj_decomp::to;
  accumulate_adjoint(adj_A, cast<mat_t<3, 3, T>>(adj_decomp::qr_adjoint<F>(to<3, 3, F>(Q), to<3, 3, F>(R),
                                                                          to<3, 3, F>(adj_Q), to<3, 3, F>(adj_R))));
}

template <typename T>
WP_FUNC void adj_qr3(const mat_t<3, 3, T>& A, const tuple_t<mat_t<3, 3, T>, mat_t<3, 3, T>>& ret,
                     mat_t<3, 3, T>& adj_A, const tuple_t<mat_t<3, 3, T>, mat_t<3, 3, T>>& adj_ret) {
  adj_qr3(A, tuple_get<0>(ret), tuple_get<1>(ret), adj_A, tuple_get<0>(adj_ret), tuple_get<1>(adj_ret));
}

// --- eig3 ---------------------------------------------------------------------------

template <typename T>
WP_FUNC void adj_eig3(const mat_t<3, 3, T>&, const mat_t<3, 3, T>& Q, const vec_t<3, T>& d, mat_t<3, 3, T>& adj_A,
                      const mat_t<3, 3, T>& adj_Q, const vec_t<3, T>& adj_d) {
  typedef typename decomp::traits<T>::real F;
  using adj_decomp::to;
  accumulate_adjoint(adj_A, cast<mat_t<3, 3, T>>(adj_decomp::eig_adjoint<F>(to<3, 3, F>(Q), to<3, F>(d),
                                                                           to<3, 3, F>(adj_Q), to<3, F>(adj_d))));
}

template <typename T>
WP_FUNC void adj_eig3(const mat_t<3, 3, T>& A, const tuple_t<mat_t<3, 3, T>, vec_t<3, T>>& ret, mat_t<3, 3, T>& adj_A,
                      const tuple_t<mat_t<3, 3, T>, vec_t<3, T>>& adj_ret) {
  adj_eig3(A, tuple_get<0>(ret), tuple_get<1>(ret), adj_A, tuple_get<0>(adj_ret), tuple_get<1>(adj_ret));
}

}  // namespace wp

// warpd device runtime: reverse-mode adjoints of the matrix builtins (mat.h).
// Conventions: adj_scalar.h. Element operations go through the scalar
// adjoints and accumulate_adjoint (integer matrices carry no gradient).
//
// determinant's adjoint is adj_ret times the cofactor matrix (no division, so
// it is right for singular matrices too); inverse's is -ret^T adj_ret ret^T
// from the forward result, as Warp's (at a singular matrix, whose inverse
// warpd defines as 0, that gives 0).
#pragma once

#include "warpd/native/adjoint/adj_vec.h"
#include "warpd/native/mat.h"

namespace wp {

template <int R, int C, typename T>
WP_FUNC void accumulate_adjoint(mat_t<R, C, T>& adj, const mat_t<R, C, T>& v) {
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) accumulate_adjoint(adj.c[i][j], v.c[i][j]);
}

// --- Element-wise and with a scalar -------------------------------------------------

template <int R, int C, typename T>
WP_FUNC void adj_add(const mat_t<R, C, T>&, const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a,
                     mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
  accumulate_adjoint(adj_a, adj_ret);
  accumulate_adjoint(adj_b, adj_ret);
}

template <int R, int C, typename T>
WP_FUNC void adj_sub(const mat_t<R, C, T>&, const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a,
                     mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
  accumulate_adjoint(adj_a, adj_ret);
  accumulate_adjoint(adj_b, neg(adj_ret));
}

template <int R, int C, typename T>
WP_FUNC void adj_neg(const mat_t<R, C, T>&, mat_t<R, C, T>& adj_x, const mat_t<R, C, T>& adj_ret) {
  accumulate_adjoint(adj_x, neg(adj_ret));
}

template <int R, int C, typename T>
WP_FUNC void adj_pos(const mat_t<R, C, T>&, mat_t<R, C, T>& adj_x, const mat_t<R, C, T>& adj_ret) {
  accumulate_adjoint(adj_x, adj_ret);
}

template <int R, int C, typename T>
WP_FUNC void adj_cw_mul(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,
                        mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
  accumulate_adjoint(adj_a, cw_mul(b, adj_ret));
  accumulate_adjoint(adj_b, cw_mul(a, adj_ret));
}

template <int R, int C, typename T>
WP_FUNC void adj_cw_div(const mat_t<R, C, T>&, const mat_t<R, C, T>& b, const mat_t<R, C, T>& ret,
                        mat_t<R, C, T>& adj_a, mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
  accumulate_adjoint(adj_a, cw_div(adj_ret, b));
  accumulate_adjoint(adj_b, neg(cw_mul(adj_ret, cw_div(ret, b))));
}

template <int R, int C, typename T>
WP_FUNC void adj_mul(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s,
                     const mat_t<R, C, T>& adj_ret) {
  accumulate_adjoint(adj_a, mul(adj_ret, s));
  accumulate_adjoint(adj_s, ddot(a, adj_ret));
}

template <int R, int C, typename T>
WP_FUNC void adj_mul(T s, const mat_t<R, C, T>& a, T& adj_s, mat_t<R, C, T>& adj_a,
                     const mat_t<R, C, T>& adj_ret) {
  adj_mul(a, s, adj_a, adj_s, adj_ret);
}

template <int R, int C, typename T>
WP_FUNC void adj_div(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s,
                     const mat_t<R, C, T>& adj_ret) {
  accumulate_adjoint(adj_s, neg(div(ddot(a, adj_ret), mul(s, s))));
  accumulate_adjoint(adj_a, div(adj_ret, s));
}

template <int R, int C, typename T>
WP_FUNC void adj_div(T s, const mat_t<R, C, T>& a, T& adj_s, mat_t<R, C, T>& adj_a,
                     const mat_t<R, C, T>& adj_ret) {
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      const T inv = div(cast<T>(1), a.c[i][j]);
      accumulate_adjoint(adj_a.c[i][j], neg(mul(mul(mul(s, adj_ret.c[i][j]), inv), inv)));
      accumulate_adjoint(adj_s, mul(adj_ret.c[i][j], inv));
    }
}

template <int R, int C, typename T>
WP_FUNC void adj_div_approx(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s,
                            const mat_t<R, C, T>& adj_ret) {
  accumulate_adjoint(adj_s, neg(div_approx(ddot(a, adj_ret), mul(s, s))));
  accumulate_adjoint(adj_a, div_approx(adj_ret, s));
}

template <int R, int C, typename T>
WP_FUNC void adj_div_approx(T s, const mat_t<R, C, T>& a, T& adj_s, mat_t<R, C, T>& adj_a,
                            const mat_t<R, C, T>& adj_ret) {
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      const T inv = div_approx(cast<T>(1), a.c[i][j]);
      accumulate_adjoint(adj_a.c[i][j], neg(mul(mul(mul(s, adj_ret.c[i][j]), inv), inv)));
      accumulate_adjoint(adj_s, mul(adj_ret.c[i][j], inv));
    }
}

template <int R, int C, typename T>
WP_FUNC void adj_lerp(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, T t, mat_t<R, C, T>& adj_a,
                      mat_t<R, C, T>& adj_b, T& adj_t, const mat_t<R, C, T>& adj_ret) {
  accumulate_adjoint(adj_a, mul(adj_ret, sub(cast<T>(1), t)));
  accumulate_adjoint(adj_b, mul(adj_ret, t));
  accumulate_adjoint(adj_t, sub(ddot(b, adj_ret), ddot(a, adj_ret)));
}

// --- Products -----------------------------------------------------------------------

// A B: adj_A += adj_ret B^T, adj_B += A^T adj_ret.
template <int R, int K, int C, typename T>
WP_FUNC void adj_mul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b, mat_t<R, K, T>& adj_a,
                     mat_t<K, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
  accumulate_adjoint(adj_a, mul(adj_ret, transpose(b)));
  accumulate_adjoint(adj_b, mul(transpose(a), adj_ret));
}

// A v: adj_A += adj_ret v^T, adj_v += A^T adj_ret.
template <int R, int C, typename T>
WP_FUNC void adj_mul(const mat_t<R, C, T>& a, const vec_t<C, T>& v, mat_t<R, C, T>& adj_a, vec_t<C, T>& adj_v,
                     const vec_t<R, T>& adj_ret) {
  accumulate_adjoint(adj_a, outer(adj_ret, v));
  accumulate_adjoint(adj_v, mul(adj_ret, a));
}

// v^T A: adj_v += A adj_ret, adj_A += v adj_ret^T.
template <int R, int C, typename T>
WP_FUNC void adj_mul(const vec_t<R, T>& v, const mat_t<R, C, T>& a, vec_t<R, T>& adj_v, mat_t<R, C, T>& adj_a,
                     const vec_t<C, T>& adj_ret) {
  accumulate_adjoint(adj_v, mul(a, adj_ret));
  accumulate_adjoint(adj_a, outer(v, adj_ret));
}

template <int R, int C, typename T>
WP_FUNC void adj_ddot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,
                      mat_t<R, C, T>& adj_b, T adj_ret) {
  accumulate_adjoint(adj_a, mul(b, adj_ret));
  accumulate_adjoint(adj_b, mul(a, adj_ret));
}

template <int R, int C, typename T>
WP_FUNC void adj_outer(const vec_t<R, T>& a, const vec_t<C, T>& b, vec_t<R, T>& adj_a, vec_t<C, T>& adj_b,
                       const mat_t<R, C, T>& adj_ret) {
  accumulate_adjoint(adj_a, mul(adj_ret, b));
  accumulate_adjoint(adj_b, mul(a, adj_ret));
}

// --- Structure ------------------------------------------------------------------------

template <int R, int C, typename T>
WP_FUNC void adj_transpose(const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a, const mat_t<C, R, T>& adj_ret) {
  accumulate_adjoint(adj_a, transpose(adj_ret));
}

template <int N, typename T>
WP_FUNC void adj_trace(const mat_t<N, N, T>&, mat_t<N, N, T>& adj_a, T adj_ret) {
  for (int i = 0; i < N; ++i) accumulate_adjoint(adj_a.c[i][i], adj_ret);
}

template <int N, typename T>
WP_FUNC void adj_diag(const vec_t<N, T>&, vec_t<N, T>& adj_d, const mat_t<N, N, T>& adj_ret) {
  for (int i = 0; i < N; ++i) accumulate_adjoint(adj_d.c[i], adj_ret.c[i][i]);
}

template <int N, typename T>
WP_FUNC void adj_get_diag(const mat_t<N, N, T>&, mat_t<N, N, T>& adj_m, const vec_t<N, T>& adj_ret) {
  for (int i = 0; i < N; ++i) accumulate_adjoint(adj_m.c[i][i], adj_ret.c[i]);
}

// skew(v) = [[0, -z, y], [z, 0, -x], [-y, x, 0]].
template <typename T>
WP_FUNC void adj_skew(const vec_t<3, T>&, vec_t<3, T>& adj_v, const mat_t<3, 3, T>& adj_ret) {
  accumulate_adjoint(adj_v.c[0], sub(adj_ret.c[2][1], adj_ret.c[1][2]));
  accumulate_adjoint(adj_v.c[1], sub(adj_ret.c[0][2], adj_ret.c[2][0]));
  accumulate_adjoint(adj_v.c[2], sub(adj_ret.c[1][0], adj_ret.c[0][1]));
}

// --- Determinant and inverse ------------------------------------------------------------

// The cofactor matrix: d det(A) / dA_ij = (-1)^(i+j) det(A without row i, column j).
template <typename T>
WP_FUNC mat_t<2, 2, T> mat_cofactors(const mat_t<2, 2, T>& m) {
  mat_t<2, 2, T> r;
  r.c[0][0] = m.c[1][1];
  r.c[0][1] = neg(m.c[1][0]);
  r.c[1][0] = neg(m.c[0][1]);
  r.c[1][1] = m.c[0][0];
  return r;
}

template <typename T>
WP_FUNC mat_t<3, 3, T> mat_cofactors(const mat_t<3, 3, T>& m) {
  mat_t<3, 3, T> r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const int i0 = i == 0 ? 1 : 0, i1 = i == 2 ? 1 : 2;
      const int j0 = j == 0 ? 1 : 0, j1 = j == 2 ? 1 : 2;
      const T minor = sub(mul(m.c[i0][j0], m.c[i1][j1]), mul(m.c[i0][j1], m.c[i1][j0]));
      r.c[i][j] = ((i + j) & 1) ? neg(minor) : minor;
    }
  return r;
}

template <typename T>
WP_FUNC mat_t<4, 4, T> mat_cofactors(const mat_t<4, 4, T>& m) {
  mat_t<4, 4, T> r;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      mat_t<3, 3, T> sub3;
      for (int a = 0, ra = 0; a < 4; ++a) {
        if (a == i) continue;
        for (int b = 0, rb = 0; b < 4; ++b) {
          if (b == j) continue;
          sub3.c[ra][rb++] = m.c[a][b];
        }
        ++ra;
      }
      const T minor = determinant(sub3);
      r.c[i][j] = ((i + j) & 1) ? neg(minor) : minor;
    }
  return r;
}

template <int N, typename T>
WP_FUNC void adj_determinant(const mat_t<N, N, T>& a, mat_t<N, N, T>& adj_a, T adj_ret) {
  accumulate_adjoint(adj_a, mul(mat_cofactors(a), adj_ret));
}

// d(A^-1) = -A^-1 dA A^-1, so adj_A -= ret^T adj_ret ret^T.
template <int N, typename T>
WP_FUNC void adj_inverse(const mat_t<N, N, T>&, const mat_t<N, N, T>& ret, mat_t<N, N, T>& adj_a,
                         const mat_t<N, N, T>& adj_ret) {
  const mat_t<N, N, T> rt = transpose(ret);
  accumulate_adjoint(adj_a, neg(mul(mul(rt, adj_ret), rt)));
}

template <int N, typename T>
WP_FUNC void adj_inverse_approx(const mat_t<N, N, T>& a, const mat_t<N, N, T>& ret, mat_t<N, N, T>& adj_a,
                                const mat_t<N, N, T>& adj_ret) {
  adj_inverse(a, ret, adj_a, adj_ret);
}

}  // namespace wp

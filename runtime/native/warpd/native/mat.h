// warpd device runtime: matrices mat_t<R, C, T> and Warp's matrix builtins,
// plus the "Vector Math" builtins on vectors that vec.h leaves to this header
// (norm_l1/l2/huber/pseudo_huber, smooth_normalize). The
// decompositions (svd2, svd3, qr3, eig3) are in svd.h.
//
// Layout (ABI, docs/native_headers.md): T c[R][C], row-major. Generated code
// reads and writes elements as m.c[i][j], rows with mat_row / mat_set_row, and
// builds values with mat_from_values, mat_splat, identity and the casts.
//
// Element arithmetic goes through wp::add/sub/mul/div/neg and comparisons
// through wp::eq/lt/gt, so integer matrices wrap instead of overflowing and
// half computes in float32.
//
// Semantics follow Warp 1.19 (warp/native/mat.h, warp/_src/math.py). The
// inverse / inverse_approx of a matrix whose determinant is exactly 0 is the
// zero matrix (NaN inputs give NaN); nothing traps.
#pragma once

#include "warpd/native/tuple.h"
#include "warpd/native/vec.h"

namespace wp {

// R or C may be 0 (an empty slice, m[4:]): such a matrix keeps one unused
// element per empty dimension, like a zero-length vec_t.
template <int R, int C, typename T>
struct mat_t {
  T c[R > 0 ? R : 1][C > 0 ? C : 1];
};

typedef mat_t<2, 2, half> mat22h;
typedef mat_t<3, 3, half> mat33h;
typedef mat_t<4, 4, half> mat44h;
typedef mat_t<2, 2, float32> mat22f;
typedef mat_t<3, 3, float32> mat33f;
typedef mat_t<4, 4, float32> mat44f;
typedef mat_t<2, 2, float64> mat22d;
typedef mat_t<3, 3, float64> mat33d;
typedef mat_t<4, 4, float64> mat44d;

// --- Construction and access (codegen) ---------------------------------------

template <int R, int C, typename T>
WP_FUNC mat_t<R, C, T> mat_splat(T s) {
  mat_t<R, C, T> m;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) m.c[i][j] = s;
  return m;
}

// R*C scalars in row-major order: mat_from_values<2, 2, float32>(a, b, c, d)
// is [[a, b], [c, d]] (Warp's matrix(*args, shape, dtype)).
template <int R, int C, typename T, typename... A>
WP_FUNC mat_t<R, C, T> mat_from_values(A... v) {
  static_assert(sizeof...(A) == R * C, "mat_from_values takes R*C scalars");
  const T flat[R * C] = {cast<T>(v)...};
  mat_t<R, C, T> m;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) m.c[i][j] = flat[i * C + j];
  return m;
}

template <int N, typename T>
WP_FUNC mat_t<N, N, T> identity() {
  mat_t<N, N, T> m = mat_splat<N, N, T>(cast<T>(0));
  for (int i = 0; i < N; ++i) m.c[i][i] = cast<T>(1);
  return m;
}

// Row i (0 <= i < R; codegen checks the index before calling).
// Row i as a vector lvalue (m[i].x = ...): a row of T c[R][C] has the layout
// of vec_t<C, T>. Codegen checks the index first.
template <int R, int C, typename T>
WP_FUNC vec_t<C, T>& mat_row_ref(mat_t<R, C, T>& m, int i) {
  static_assert(sizeof(vec_t<C, T>) == sizeof(m.c[0]), "a matrix row is a vector");
  return *reinterpret_cast<vec_t<C, T>*>(&m.c[i][0]);
}

template <int R, int C, typename T>
WP_FUNC vec_t<C, T> mat_row(const mat_t<R, C, T>& m, int i) {
  vec_t<C, T> r;
  for (int j = 0; j < C; ++j) r.c[j] = m.c[i][j];
  return r;
}

template <int R, int C, typename T>
WP_FUNC void mat_set_row(mat_t<R, C, T>& m, int i, const vec_t<C, T>& v) {
  for (int j = 0; j < C; ++j) m.c[i][j] = v.c[j];
}

// Warp's matrix_from_rows(r0, r1, ...) / matrix_from_cols(c0, c1, ...): any
// number of vectors of one length and type.
template <int C, typename T, typename... V>
WP_FUNC mat_t<1 + sizeof...(V), C, T> matrix_from_rows(const vec_t<C, T>& r0, const V&... rest) {
  const vec_t<C, T>* rows[] = {&r0, &rest...};
  mat_t<1 + sizeof...(V), C, T> m;
  for (int i = 0; i < 1 + (int)sizeof...(V); ++i) mat_set_row(m, i, *rows[i]);
  return m;
}

template <int R, typename T, typename... V>
WP_FUNC mat_t<R, 1 + sizeof...(V), T> matrix_from_cols(const vec_t<R, T>& c0, const V&... rest) {
  const vec_t<R, T>* cols[] = {&c0, &rest...};
  mat_t<R, 1 + sizeof...(V), T> m;
  for (int j = 0; j < 1 + (int)sizeof...(V); ++j)
    for (int i = 0; i < R; ++i) m.c[i][j] = cols[j]->c[i];
  return m;
}

template <typename To, int R, int C, typename From>
struct caster<mat_t<R, C, To>, mat_t<R, C, From>> {
  WP_FUNC static mat_t<R, C, To> apply(const mat_t<R, C, From>& x) {
    mat_t<R, C, To> r;
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) r.c[i][j] = cast<To>(x.c[i][j]);
    return r;
  }
};

// --- Element-wise operators ----------------------------------------------------

// name(a, b) applied to each pair of elements. cw_mul / cw_div are Warp's
// component-wise product and quotient; the bitwise ones exist for integer T.
#define WP_MAT_ELEMENTWISE(name, op)                                                      \
  template <int R, int C, typename T>                                                     \
  WP_FUNC mat_t<R, C, T> name(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {         \
    mat_t<R, C, T> r;                                                                     \
    for (int i = 0; i < R; ++i)                                                           \
      for (int j = 0; j < C; ++j) r.c[i][j] = op(a.c[i][j], b.c[i][j]);                   \
    return r;                                                                             \
  }
WP_MAT_ELEMENTWISE(add, add)
WP_MAT_ELEMENTWISE(sub, sub)
WP_MAT_ELEMENTWISE(cw_mul, mul)
WP_MAT_ELEMENTWISE(cw_div, div)
WP_MAT_ELEMENTWISE(bit_and, bit_and)
WP_MAT_ELEMENTWISE(bit_or, bit_or)
WP_MAT_ELEMENTWISE(bit_xor, bit_xor)
WP_MAT_ELEMENTWISE(lshift, lshift)
WP_MAT_ELEMENTWISE(rshift, rshift)
#undef WP_MAT_ELEMENTWISE

template <int R, int C, typename T>
WP_FUNC mat_t<R, C, T> neg(const mat_t<R, C, T>& a) {
  mat_t<R, C, T> r;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) r.c[i][j] = neg(a.c[i][j]);
  return r;
}

template <int R, int C, typename T>
WP_FUNC mat_t<R, C, T> pos(const mat_t<R, C, T>& a) {
  return a;
}

template <int R, int C, typename T>
WP_FUNC mat_t<R, C, T> invert(const mat_t<R, C, T>& a) {
  mat_t<R, C, T> r;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) r.c[i][j] = invert(a.c[i][j]);
  return r;
}

template <int R, int C, typename T>
WP_FUNC mat_t<R, C, T> mul(const mat_t<R, C, T>& a, T s) {
  mat_t<R, C, T> r;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) r.c[i][j] = mul(a.c[i][j], s);
  return r;
}

template <int R, int C, typename T>
WP_FUNC mat_t<R, C, T> mul(T s, const mat_t<R, C, T>& a) {
  mat_t<R, C, T> r;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) r.c[i][j] = mul(s, a.c[i][j]);
  return r;
}

template <int R, int C, typename T>
WP_FUNC mat_t<R, C, T> div(const mat_t<R, C, T>& a, T s) {
  mat_t<R, C, T> r;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) r.c[i][j] = div(a.c[i][j], s);
  return r;
}

template <int R, int C, typename T>
WP_FUNC mat_t<R, C, T> div_approx(const mat_t<R, C, T>& a, T s) {
  mat_t<R, C, T> r;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) r.c[i][j] = div_approx(a.c[i][j], s);
  return r;
}

template <int R, int C, typename T>
WP_FUNC mat_t<R, C, T> div_approx(T s, const mat_t<R, C, T>& a) {
  mat_t<R, C, T> r;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) r.c[i][j] = div_approx(s, a.c[i][j]);
  return r;
}

// Scalar / matrix divides the scalar by each element (Warp's div(Scalar, mat)).
template <int R, int C, typename T>
WP_FUNC mat_t<R, C, T> div(T s, const mat_t<R, C, T>& a) {
  mat_t<R, C, T> r;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) r.c[i][j] = div(s, a.c[i][j]);
  return r;
}

template <int R, int C, typename T>
WP_FUNC bool eq(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j)
      if (!eq(a.c[i][j], b.c[i][j])) return false;
  return true;
}

template <int R, int C, typename T>
WP_FUNC bool ne(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
  return !eq(a, b);
}

// isnan / isinf: any element; isfinite: every element (as for vectors).
template <int R, int C, typename T>
WP_FUNC bool isnan(const mat_t<R, C, T>& a) {
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j)
      if (isnan(a.c[i][j])) return true;
  return false;
}

template <int R, int C, typename T>
WP_FUNC bool isinf(const mat_t<R, C, T>& a) {
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j)
      if (isinf(a.c[i][j])) return true;
  return false;
}

template <int R, int C, typename T>
WP_FUNC bool isfinite(const mat_t<R, C, T>& a) {
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j)
      if (!isfinite(a.c[i][j])) return false;
  return true;
}

// Warp's len() of a matrix is its number of rows.
template <int R, int C, typename T>
WP_FUNC int32 len(const mat_t<R, C, T>&) {
  return R;
}

// Warp's lerp(a, b, t) = a * (1 - t) + b * t.
template <int R, int C, typename T>
WP_FUNC mat_t<R, C, T> lerp(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, T t) {
  return add(mul(a, sub(cast<T>(1), t)), mul(b, t));
}

// --- Products --------------------------------------------------------------------

// Sums run over k in increasing order, so results are reproducible.
template <int R, int K, int C, typename T>
WP_FUNC mat_t<R, C, T> mul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b) {
  mat_t<R, C, T> r;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      T s = mul(a.c[i][0], b.c[0][j]);
      for (int k = 1; k < K; ++k) s = add(s, mul(a.c[i][k], b.c[k][j]));
      r.c[i][j] = s;
    }
  return r;
}

// Matrix times column vector.
template <int R, int C, typename T>
WP_FUNC vec_t<R, T> mul(const mat_t<R, C, T>& a, const vec_t<C, T>& v) {
  vec_t<R, T> r;
  for (int i = 0; i < R; ++i) {
    T s = mul(a.c[i][0], v.c[0]);
    for (int k = 1; k < C; ++k) s = add(s, mul(a.c[i][k], v.c[k]));
    r.c[i] = s;
  }
  return r;
}

// Row vector times matrix: v^T A.
template <int R, int C, typename T>
WP_FUNC vec_t<C, T> mul(const vec_t<R, T>& v, const mat_t<R, C, T>& a) {
  vec_t<C, T> r;
  for (int j = 0; j < C; ++j) {
    T s = mul(v.c[0], a.c[0][j]);
    for (int k = 1; k < R; ++k) s = add(s, mul(v.c[k], a.c[k][j]));
    r.c[j] = s;
  }
  return r;
}

// Frobenius inner product: sum of a[i][j] * b[i][j].
template <int R, int C, typename T>
WP_FUNC T ddot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
  T s = cast<T>(0);
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) s = add(s, mul(a.c[i][j], b.c[i][j]));
  return s;
}

template <int R, int C, typename T>
WP_FUNC mat_t<R, C, T> outer(const vec_t<R, T>& a, const vec_t<C, T>& b) {
  mat_t<R, C, T> m;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) m.c[i][j] = mul(a.c[i], b.c[j]);
  return m;
}

// --- Structure -------------------------------------------------------------------

template <int R, int C, typename T>
WP_FUNC mat_t<C, R, T> transpose(const mat_t<R, C, T>& a) {
  mat_t<C, R, T> t;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) t.c[j][i] = a.c[i][j];
  return t;
}

template <int N, typename T>
WP_FUNC T trace(const mat_t<N, N, T>& a) {
  T s = a.c[0][0];
  for (int i = 1; i < N; ++i) s = add(s, a.c[i][i]);
  return s;
}

template <int N, typename T>
WP_FUNC mat_t<N, N, T> diag(const vec_t<N, T>& d) {
  mat_t<N, N, T> m = mat_splat<N, N, T>(cast<T>(0));
  for (int i = 0; i < N; ++i) m.c[i][i] = d.c[i];
  return m;
}

template <int N, typename T>
WP_FUNC vec_t<N, T> get_diag(const mat_t<N, N, T>& m) {
  vec_t<N, T> d;
  for (int i = 0; i < N; ++i) d.c[i] = m.c[i][i];
  return d;
}

// skew(v) * x == cross(v, x).
template <typename T>
WP_FUNC mat_t<3, 3, T> skew(const vec_t<3, T>& v) {
  const T z = cast<T>(0);
  return mat_t<3, 3, T>{{{z, neg(v.c[2]), v.c[1]}, {v.c[2], z, neg(v.c[0])}, {neg(v.c[1]), v.c[0], z}}};
}

// --- Determinant and inverse (2x2, 3x3, 4x4, as in Warp) ----------------------------

// a*d - b*c, the 2x2 minor every formula below is built from.
template <typename T>
WP_FUNC T mat_minor2(T a, T b, T c, T d) {
  return sub(mul(a, d), mul(b, c));
}

// x0*y0 - x1*y1 + x2*y2: one cofactor expansion along three minors.
template <typename T>
WP_FUNC T mat_expand3(T x0, T y0, T x1, T y1, T x2, T y2) {
  return add(sub(mul(x0, y0), mul(x1, y1)), mul(x2, y2));
}

template <typename T>
WP_FUNC T determinant(const mat_t<2, 2, T>& m) {
  return mat_minor2(m.c[0][0], m.c[0][1], m.c[1][0], m.c[1][1]);
}

// The 3x3 cofactor matrix (cof[i][j] = (-1)^(i+j) * minor(i, j)).
template <typename T>
WP_FUNC mat_t<3, 3, T> mat_cofactors3(const mat_t<3, 3, T>& m) {
  mat_t<3, 3, T> cof;
  for (int i = 0; i < 3; ++i) {
    // Rows and columns i+1, i+2 (mod 3) keep the sign positive by cyclic order.
    const int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
    for (int j = 0; j < 3; ++j) {
      const int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
      cof.c[i][j] = mat_minor2(m.c[i1][j1], m.c[i1][j2], m.c[i2][j1], m.c[i2][j2]);
    }
  }
  return cof;
}

template <typename T>
WP_FUNC T determinant(const mat_t<3, 3, T>& m) {
  mat_t<3, 3, T> cof = mat_cofactors3(m);
  return add(add(mul(m.c[0][0], cof.c[0][0]), mul(m.c[0][1], cof.c[0][1])), mul(m.c[0][2], cof.c[0][2]));
}

// 4x4 by Laplace expansion along the first two rows: s[k] are the six 2x2
// minors of rows 0-1, t[k] the complementary minors of rows 2-3.
template <typename T>
struct mat_minors4 {
  T s[6], t[6];
  WP_FUNC explicit mat_minors4(const mat_t<4, 4, T>& m) {
    // Column pairs (0,1) (0,2) (0,3) (1,2) (1,3) (2,3).
    const int p[6] = {0, 0, 0, 1, 1, 2}, q[6] = {1, 2, 3, 2, 3, 3};
    for (int k = 0; k < 6; ++k) {
      s[k] = mat_minor2(m.c[0][p[k]], m.c[0][q[k]], m.c[1][p[k]], m.c[1][q[k]]);
      t[k] = mat_minor2(m.c[2][p[k]], m.c[2][q[k]], m.c[3][p[k]], m.c[3][q[k]]);
    }
  }
  // Each s[k] pairs with the minor on the complementary columns, t[5 - k].
  WP_FUNC T det() const {
    T a = mat_expand3(s[0], t[5], s[1], t[4], s[2], t[3]);
    return add(a, mat_expand3(s[3], t[2], s[4], t[1], s[5], t[0]));
  }
};

template <typename T>
WP_FUNC T determinant(const mat_t<4, 4, T>& m) {
  return mat_minors4<T>(m).det();
}

template <typename T>
WP_FUNC mat_t<2, 2, T> inverse(const mat_t<2, 2, T>& m) {
  T det = determinant(m);
  if (eq(det, cast<T>(0))) return mat_splat<2, 2, T>(cast<T>(0));
  T r = div(cast<T>(1), det);
  return mat_t<2, 2, T>{{{mul(m.c[1][1], r), mul(neg(m.c[0][1]), r)},
                         {mul(neg(m.c[1][0]), r), mul(m.c[0][0], r)}}};
}

template <typename T>
WP_FUNC mat_t<3, 3, T> inverse(const mat_t<3, 3, T>& m) {
  mat_t<3, 3, T> cof = mat_cofactors3(m);
  T det = add(add(mul(m.c[0][0], cof.c[0][0]), mul(m.c[0][1], cof.c[0][1])), mul(m.c[0][2], cof.c[0][2]));
  if (eq(det, cast<T>(0))) return mat_splat<3, 3, T>(cast<T>(0));
  return mul(transpose(cof), div(cast<T>(1), det));  // adjugate / det
}

// Adjugate from the same minors as the determinant: entry (i, j) expands
// cofactor (j, i) along its row with the minors of the opposite row pair.
template <typename T>
WP_FUNC mat_t<4, 4, T> inverse(const mat_t<4, 4, T>& m) {
  mat_minors4<T> k(m);
  T det = k.det();
  if (eq(det, cast<T>(0))) return mat_splat<4, 4, T>(cast<T>(0));
  const T* s = k.s;
  const T* t = k.t;
  const auto& a = m.c;
  mat_t<4, 4, T> adj{{
      {mat_expand3(a[1][1], t[5], a[1][2], t[4], a[1][3], t[3]),
       neg(mat_expand3(a[0][1], t[5], a[0][2], t[4], a[0][3], t[3])),
       mat_expand3(a[3][1], s[5], a[3][2], s[4], a[3][3], s[3]),
       neg(mat_expand3(a[2][1], s[5], a[2][2], s[4], a[2][3], s[3]))},
      {neg(mat_expand3(a[1][0], t[5], a[1][2], t[2], a[1][3], t[1])),
       mat_expand3(a[0][0], t[5], a[0][2], t[2], a[0][3], t[1]),
       neg(mat_expand3(a[3][0], s[5], a[3][2], s[2], a[3][3], s[1])),
       mat_expand3(a[2][0], s[5], a[2][2], s[2], a[2][3], s[1])},
      {mat_expand3(a[1][0], t[4], a[1][1], t[2], a[1][3], t[0]),
       neg(mat_expand3(a[0][0], t[4], a[0][1], t[2], a[0][3], t[0])),
       mat_expand3(a[3][0], s[4], a[3][1], s[2], a[3][3], s[0]),
       neg(mat_expand3(a[2][0], s[4], a[2][1], s[2], a[2][3], s[0]))},
      {neg(mat_expand3(a[1][0], t[3], a[1][1], t[1], a[1][2], t[0])),
       mat_expand3(a[0][0], t[3], a[0][1], t[1], a[0][2], t[0]),
       neg(mat_expand3(a[3][0], s[3], a[3][1], s[1], a[3][2], s[0])),
       mat_expand3(a[2][0], s[3], a[2][1], s[1], a[2][2], s[0])},
  }};
  return mul(adj, div(cast<T>(1), det));
}

// Warp computes the determinant's reciprocal with a fast approximate division
// on the GPU; an exact one is within that approximation everywhere.
template <int N, typename T>
WP_FUNC mat_t<N, N, T> inverse_approx(const mat_t<N, N, T>& m) {
  static_assert(N >= 2 && N <= 4, "inverse_approx: 2x2, 3x3 or 4x4");
  return inverse(m);
}

// --- Vector reductions and norms ---------------------------------------------------

// The norms of warp/_src/math.py. Warp declares delta as float; codegen
// converts it to the vector's scalar type.
template <int N, typename T>
WP_FUNC T norm_l1(const vec_t<N, T>& v) {
  T s = cast<T>(0);
  for (int i = 0; i < N; ++i) s = add(s, abs(v.c[i]));
  return s;
}

template <int N, typename T>
WP_FUNC T norm_l2(const vec_t<N, T>& v) {
  return sqrt(dot(v, v));
}

// 0.5 |v|^2 inside |v| <= delta, delta * (|v| - delta / 2) outside.
template <int N, typename T>
WP_FUNC T norm_huber(const vec_t<N, T>& v, T delta) {
  T a = dot(v, v);
  if (!gt(a, mul(delta, delta))) return mul(cast<T>(0.5), a);
  return mul(delta, sub(sqrt(a), mul(cast<T>(0.5), delta)));
}

// delta * sqrt(1 + |v|^2 / delta^2).
template <int N, typename T>
WP_FUNC T norm_pseudo_huber(const vec_t<N, T>& v, T delta) {
  T a = dot(v, v);
  return mul(delta, sqrt(add(cast<T>(1), div(a, mul(delta, delta)))));
}

template <int N, typename T>
WP_FUNC vec_t<N, T> smooth_normalize(const vec_t<N, T>& v, T delta) {
  return div(v, norm_pseudo_huber(v, delta));
}

// wp.expect_near(actual, expected, tolerance) on matrices: the largest
// absolute difference of the elements (print.h has the scalar and vector
// forms and the test).
template <int R, int C, typename T>
WP_FUNC T expect_near_diff(const mat_t<R, C, T>& actual, const mat_t<R, C, T>& expected) {
  T d = abs(sub(actual.c[0][0], expected.c[0][0]));
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      const T dij = abs(sub(actual.c[i][j], expected.c[i][j]));
      if (gt(dij, d)) d = dij;
    }
  return d;
}

}  // namespace wp

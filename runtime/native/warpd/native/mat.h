// warpd device runtime: matrices mat_t<R, C, T> and Warp's matrix builtins,
// plus the "Vector Math" builtins on vectors that vec.h leaves to this header
// (argmin/argmax, norm_l1/l2/huber/pseudo_huber, smooth_normalize).
//
// Layout (ABI, docs/native_headers.md): T c[R][C], row-major. Generated code
// reads and writes elements as m.c[i][j], rows with mat_row / mat_set_row, and
// builds values with mat_from_values, mat_splat, identity and the casts.
//
// Element arithmetic goes through wp::add/sub/mul/div/neg and comparisons
// through wp::eq/lt/gt, so integer matrices wrap instead of overflowing and
// half computes in float32. The decompositions (svd2, svd3, qr3, eig3) are
// iterative or need a machine epsilon; they run in decomp_real<T> (float32 for
// half and float32, float64 for float64) and may use C operators there.
//
// Semantics follow Warp 1.19 (warp/native/mat.h, svd.h, warp/_src/math.py).
// Conventions that a caller may rely on, all as in Warp:
//   - inverse / inverse_approx of a matrix whose determinant is exactly 0 is
//     the zero matrix (NaN inputs give NaN); nothing traps.
//   - svd3: U and V are rotations (det +1); |sigma| is in descending order;
//     sigma[0], sigma[1] >= 0 and sigma[2] has the sign of det(A).
//   - svd2: V is a rotation; sigma[0] >= sigma[1] >= 0; det(U) is the sign of
//     det(A) (+1 when det(A) is 0).
//   - qr3: Q is a rotation; R is upper triangular with R[0][0], R[1][1] >= 0;
//     R[2][2] has the sign of det(A).
//   - eig3: A must be symmetric (only its lower triangle is read); Q is a
//     rotation whose columns are the eigenvectors; the eigenvalues d are not
//     sorted: a Jacobi iteration leaves each near its diagonal position.
// The decompositions are accurate to working precision (iterated to
// convergence, about 10-20 rounding units), where Warp runs a fixed number of
// approximate Jacobi steps; results agree with Warp's up to Warp's accuracy
// and the sign/basis freedom of singular vectors and eigenvectors.
#pragma once

#include "warpd/native/tuple.h"
#include "warpd/native/vec.h"

namespace wp {

template <int R, int C, typename T>
struct mat_t {
  T c[R][C];
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

// Index of the first smallest (argmin) / largest (argmax) element, skipping
// NaN elements; 0 when all are NaN (as in Warp).
template <int N, typename T>
WP_FUNC uint32 argmin(const vec_t<N, T>& v) {
  int best = -1;
  for (int i = 0; i < N; ++i) {
    if (!eq(v.c[i], v.c[i])) continue;  // NaN
    if (best < 0 || lt(v.c[i], v.c[best])) best = i;
  }
  return best < 0 ? 0u : (uint32)best;
}

template <int N, typename T>
WP_FUNC uint32 argmax(const vec_t<N, T>& v) {
  int best = -1;
  for (int i = 0; i < N; ++i) {
    if (!eq(v.c[i], v.c[i])) continue;  // NaN
    if (best < 0 || gt(v.c[i], v.c[best])) best = i;
  }
  return best < 0 ? 0u : (uint32)best;
}

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

// --- Decompositions ------------------------------------------------------------------

// The precision a decomposition of T-valued matrices runs in, its rounding
// unit, and a bound on Jacobi sweeps (each converges quadratically; the bound
// only stops NaN or pathological inputs). Defined only for Warp's Float types.
template <typename T>
struct decomp_real;
template <>
struct decomp_real<float32> {
  typedef float32 type;
  WP_FUNC static float32 eps() { return 1.1920929e-7f; }
};
template <>
struct decomp_real<half> : decomp_real<float32> {};
template <>
struct decomp_real<float64> {
  typedef float64 type;
  WP_FUNC static float64 eps() { return 2.220446049250313e-16; }
};
constexpr int kDecompMaxSweeps = 20;

// From here on F is float32 or float64 (decomp_real<T>::type), where C
// operators are exact IEEE arithmetic, so the algorithms read as math.

// |(a, b)|, scaled so that squaring neither overflows nor underflows.
template <typename F>
WP_FUNC F mat_hypot(F a, F b) {
  F m = max(abs(a), abs(b));
  if (m == F(0)) return F(0);
  F x = a / m, y = b / m;
  return m * sqrt(x * x + y * y);
}

// c, s, r with [c s; -s c] [a; b] = [r; 0] and r = |(a, b)| >= 0. (a, b) = 0
// gives the identity.
template <typename F>
WP_FUNC void mat_givens(F a, F b, F& c, F& s, F& r) {
  r = mat_hypot(a, b);
  if (r == F(0)) {
    c = F(1), s = F(0);
    return;
  }
  c = a / r, s = b / r;
}

// Rows p, q of m become (c*p + s*q, -s*p + c*q): left-multiply by the rotation.
template <typename F>
WP_FUNC void mat_rotate_rows(mat_t<3, 3, F>& m, int p, int q, F c, F s) {
  for (int j = 0; j < 3; ++j) {
    F x = m.c[p][j], y = m.c[q][j];
    m.c[p][j] = c * x + s * y, m.c[q][j] = c * y - s * x;
  }
}

// Columns p, q of m become (c*p + s*q, -s*p + c*q): right-multiply by the
// transposed rotation. A rotation applied to both sides keeps products equal.
template <typename F>
WP_FUNC void mat_rotate_cols(mat_t<3, 3, F>& m, int p, int q, F c, F s) {
  for (int i = 0; i < 3; ++i) {
    F x = m.c[i][p], y = m.c[i][q];
    m.c[i][p] = c * x + s * y, m.c[i][q] = c * y - s * x;
  }
}

// QR by three Givens rotations, in Warp's order (zero
// R[1][0], then R[2][0], then R[2][1]); each leaves its pivot >= 0, and Q,
// a product of rotations, has det +1.
template <typename F>
WP_FUNC void mat_qr3(const mat_t<3, 3, F>& A, mat_t<3, 3, F>& Q, mat_t<3, 3, F>& R) {
  R = A;
  Q = identity<3, F>();
  const int piv[3] = {0, 0, 1}, row[3] = {1, 2, 2};
  for (int k = 0; k < 3; ++k) {
    const int p = piv[k], q = row[k];
    F c, s, r;
    mat_givens(R.c[p][p], R.c[q][p], c, s, r);
    mat_rotate_rows(R, p, q, c, s);  // R <- G R
    mat_rotate_cols(Q, p, q, c, s);  // Q <- Q G^T keeps Q R == A
    R.c[p][p] = r, R.c[q][p] = F(0);
  }
}

template <typename T>
WP_FUNC void qr3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& Q, mat_t<3, 3, T>& R) {
  typedef typename decomp_real<T>::type F;
  mat_t<3, 3, F> q, r;
  mat_qr3(cast<mat_t<3, 3, F>>(A), q, r);
  Q = cast<mat_t<3, 3, T>>(q), R = cast<mat_t<3, 3, T>>(r);
}

// Swaps columns p and q of m and negates the new column q, which keeps the
// determinant's sign (so a rotation stays a rotation).
template <typename F>
WP_FUNC void mat_swap_cols_keep_det(mat_t<3, 3, F>& m, int p, int q) {
  for (int i = 0; i < 3; ++i) {
    F x = m.c[i][p];
    m.c[i][p] = m.c[i][q], m.c[i][q] = -x;
  }
}

// One-sided Jacobi: B = A V with V a rotation, rotating column pairs of B
// until all are orthogonal (to rounding); then the columns are sorted by
// length, largest first, and B = U R by QR. R is diagonal to rounding, so
// A = U diag(R) V^T with U, V rotations, like Warp's (which diagonalizes
// A^T A instead, squaring A's condition number).
template <typename T>
WP_FUNC void svd3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& U, vec_t<3, T>& sigma, mat_t<3, 3, T>& V) {
  typedef typename decomp_real<T>::type F;
  const F tol = F(4) * decomp_real<T>::eps();
  mat_t<3, 3, F> B = cast<mat_t<3, 3, F>>(A), v = identity<3, F>();
  const int pp[3] = {0, 0, 1}, qq[3] = {1, 2, 2};
  for (int sweep = 0; sweep < kDecompMaxSweeps; ++sweep) {
    bool rotated = false;
    for (int k = 0; k < 3; ++k) {
      const int p = pp[k], q = qq[k];
      F alpha = 0, beta = 0, gamma = 0;
      for (int i = 0; i < 3; ++i) {
        alpha += B.c[i][p] * B.c[i][p];
        beta += B.c[i][q] * B.c[i][q];
        gamma += B.c[i][p] * B.c[i][q];
      }
      if (!(abs(gamma) > tol * sqrt(alpha) * sqrt(beta))) continue;
      // The angle that makes columns p and q orthogonal (smaller root, so
      // |t| <= 1; zeta^2 overflowing to inf gives t = 0, no rotation).
      F zeta = (beta - alpha) / (F(2) * gamma);
      F t = (zeta < F(0) ? F(-1) : F(1)) / (abs(zeta) + sqrt(F(1) + zeta * zeta));
      F c = F(1) / sqrt(F(1) + t * t), s = c * t;
      mat_rotate_cols(B, p, q, c, -s);
      mat_rotate_cols(v, p, q, c, -s);
      rotated = true;
    }
    if (!rotated) break;
  }
  F len[3];
  for (int j = 0; j < 3; ++j) len[j] = B.c[0][j] * B.c[0][j] + B.c[1][j] * B.c[1][j] + B.c[2][j] * B.c[2][j];
  for (int k = 0; k < 3; ++k) {  // sorting network, largest first
    const int p = pp[k], q = qq[k];
    if (len[p] < len[q]) {
      mat_swap_cols_keep_det(B, p, q);
      mat_swap_cols_keep_det(v, p, q);
      F x = len[p];
      len[p] = len[q], len[q] = x;
    }
  }
  mat_t<3, 3, F> u, r;
  mat_qr3(B, u, r);
  U = cast<mat_t<3, 3, T>>(u);
  V = cast<mat_t<3, 3, T>>(v);
  sigma = vec_t<3, T>{{cast<T>(r.c[0][0]), cast<T>(r.c[1][1]), cast<T>(r.c[2][2])}};
}

// Closed form (J. Blinn, "Consider the lowly 2x2 matrix"): A is the sum of
// a scaled rotation q rot(a2) and a scaled reflection r ref(a1), which gives
// A = rot(phi) diag(q + r, q - r) rot(theta), so U = rot(phi) and
// V = rot(theta)^T. When q - r < 0 (det(A) < 0) its sign moves into U's
// second column, giving Warp's convention.
template <typename T>
WP_FUNC void svd2(const mat_t<2, 2, T>& A, mat_t<2, 2, T>& U, vec_t<2, T>& sigma, mat_t<2, 2, T>& V) {
  typedef typename decomp_real<T>::type F;
  mat_t<2, 2, F> a = cast<mat_t<2, 2, F>>(A);
  F e = (a.c[0][0] + a.c[1][1]) * F(0.5), f = (a.c[0][0] - a.c[1][1]) * F(0.5);
  F g = (a.c[1][0] + a.c[0][1]) * F(0.5), h = (a.c[1][0] - a.c[0][1]) * F(0.5);
  F q = mat_hypot(e, h), r = mat_hypot(f, g);
  F a1 = atan2(g, f), a2 = atan2(h, e);
  F theta = (a2 - a1) * F(0.5), phi = (a2 + a1) * F(0.5);
  F s1 = q + r, s2 = q - r, flip = F(1);
  if (s2 < F(0)) s2 = -s2, flip = F(-1);
  F cp = cos(phi), sp = sin(phi), ct = cos(theta), st = sin(theta);
  U = cast<mat_t<2, 2, T>>(mat_t<2, 2, F>{{{cp, -sp * flip}, {sp, cp * flip}}});
  V = cast<mat_t<2, 2, T>>(mat_t<2, 2, F>{{{ct, st}, {-st, ct}}});
  sigma = vec_t<2, T>{{cast<T>(s1), cast<T>(s2)}};
}

// Cyclic Jacobi on the symmetric matrix S (from A's lower triangle): each
// rotation J zeroes S[p][q] in J^T S J; Q accumulates the J. Off-diagonal
// entries below tol * |S|_F count as zero.
template <typename T>
WP_FUNC void eig3(const mat_t<3, 3, T>& A, mat_t<3, 3, T>& Q, vec_t<3, T>& d) {
  typedef typename decomp_real<T>::type F;
  mat_t<3, 3, F> S, v = identity<3, F>();
  F frob2 = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      S.c[i][j] = cast<F>(i >= j ? A.c[i][j] : A.c[j][i]);
      frob2 += S.c[i][j] * S.c[i][j];
    }
  const F tol = F(4) * decomp_real<T>::eps() * sqrt(frob2);
  const int pp[3] = {0, 1, 0}, qq[3] = {1, 2, 2};
  for (int sweep = 0; sweep < kDecompMaxSweeps; ++sweep) {
    bool rotated = false;
    for (int k = 0; k < 3; ++k) {
      const int p = pp[k], q = qq[k];
      if (!(abs(S.c[p][q]) > tol)) continue;
      // Symmetric 2x2 Schur decomposition (Golub & Van Loan 8.5.2).
      F theta = (S.c[q][q] - S.c[p][p]) / (F(2) * S.c[p][q]);
      F t = (theta < F(0) ? F(-1) : F(1)) / (abs(theta) + sqrt(F(1) + theta * theta));
      F c = F(1) / sqrt(F(1) + t * t), s = c * t;
      // J has J[p][p] = J[q][q] = c, J[p][q] = s, J[q][p] = -s.
      mat_rotate_cols(S, p, q, c, -s);  // S <- S J
      mat_rotate_rows(S, p, q, c, -s);  // S <- J^T S
      mat_rotate_cols(v, p, q, c, -s);  // Q <- Q J
      S.c[p][q] = S.c[q][p] = F(0);
      rotated = true;
    }
    if (!rotated) break;
  }
  Q = cast<mat_t<3, 3, T>>(v);
  d = vec_t<3, T>{{cast<T>(S.c[0][0]), cast<T>(S.c[1][1]), cast<T>(S.c[2][2])}};
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

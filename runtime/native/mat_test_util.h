// Test helpers for the matrix headers (mat_test.cc, svd_test.cc): random
// inputs, references computed independently in long double, and comparisons.
// Test-only; not a runtime header (it includes gtest and the C++ library).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "warpd/native/mat.h"

namespace warpd_native_test {

using wp::mat_t;
using wp::vec_t;

template <int R, int C>
using RefMat = mat_t<R, C, long double>;

// T's rounding unit: tolerances are multiples of it, relative to the data's
// scale.
template <typename T>
constexpr double Eps() {
  return std::numeric_limits<T>::epsilon();
}

template <int R, int C, typename T>
mat_t<R, C, T> RandomMat(std::mt19937& g, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> d(lo, hi);
  mat_t<R, C, T> m;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) m.c[i][j] = (T)d(g);
  return m;
}

template <int N, typename T>
vec_t<N, T> RandomVec(std::mt19937& g, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> d(lo, hi);
  vec_t<N, T> v;
  for (int i = 0; i < N; ++i) v.c[i] = (T)d(g);
  return v;
}

template <int R, int C, typename T>
RefMat<R, C> ToRef(const mat_t<R, C, T>& m) {
  RefMat<R, C> r;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) r.c[i][j] = (long double)m.c[i][j];
  return r;
}

template <int R, int K, int C>
RefMat<R, C> RefMul(const RefMat<R, K>& a, const RefMat<K, C>& b) {
  RefMat<R, C> r;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      long double s = 0;
      for (int k = 0; k < K; ++k) s += a.c[i][k] * b.c[k][j];
      r.c[i][j] = s;
    }
  return r;
}

template <int R, int C>
RefMat<C, R> RefTranspose(const RefMat<R, C>& a) {
  RefMat<C, R> t;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) t.c[j][i] = a.c[i][j];
  return t;
}

template <int N>
RefMat<N, N> RefIdentity() {
  RefMat<N, N> m;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) m.c[i][j] = i == j ? 1 : 0;
  return m;
}

template <int N>
RefMat<N, N> RefDiag(const long double* d) {
  RefMat<N, N> m;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) m.c[i][j] = i == j ? d[i] : 0;
  return m;
}

// Leibniz: the sum over all permutations of signed products.
template <int N>
long double RefDeterminant(const RefMat<N, N>& m) {
  int perm[N];
  for (int i = 0; i < N; ++i) perm[i] = i;
  long double det = 0;
  do {
    int inversions = 0;
    for (int i = 0; i < N; ++i)
      for (int j = i + 1; j < N; ++j) inversions += perm[i] > perm[j];
    long double p = (inversions % 2) ? -1 : 1;
    for (int i = 0; i < N; ++i) p *= m.c[i][perm[i]];
    det += p;
  } while (std::next_permutation(perm, perm + N));
  return det;
}

// The sum of the Leibniz terms' magnitudes: the scale of a determinant's
// rounding error.
template <int N>
long double RefDeterminantTerms(const RefMat<N, N>& m) {
  RefMat<N, N> a;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) a.c[i][j] = std::fabs(m.c[i][j]);
  int perm[N];
  for (int i = 0; i < N; ++i) perm[i] = i;
  long double sum = 0;
  do {
    long double p = 1;
    for (int i = 0; i < N; ++i) p *= a.c[i][perm[i]];
    sum += p;
  } while (std::next_permutation(perm, perm + N));
  return sum;
}

template <int R, int C>
long double MaxAbs(const RefMat<R, C>& a) {
  long double m = 0;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) m = std::max(m, std::fabs(a.c[i][j]));
  return m;
}

template <int R, int C>
long double MaxAbsDiff(const RefMat<R, C>& a, const RefMat<R, C>& b) {
  long double m = 0;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) m = std::max(m, std::fabs(a.c[i][j] - b.c[i][j]));
  return m;
}

template <int R, int C, typename T>
void ExpectMatNear(const mat_t<R, C, T>& got, const RefMat<R, C>& want, double tol, const char* what) {
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j)
      EXPECT_NEAR((double)got.c[i][j], (double)want.c[i][j], tol) << what << " [" << i << "][" << j << "]";
}

template <int R, int C, typename T>
void ExpectMatEq(const mat_t<R, C, T>& got, const mat_t<R, C, T>& want, const char* what) {
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) EXPECT_EQ(got.c[i][j], want.c[i][j]) << what << " [" << i << "][" << j << "]";
}

// Eigenvalues of a symmetric 3x3 matrix, ascending, by the trigonometric
// closed form of the characteristic polynomial (O. K. Smith 1961).
inline void RefSymEig3(const RefMat<3, 3>& a, long double out[3]) {
  const long double pi = 3.141592653589793238462643383279502884L;
  long double p1 = a.c[0][1] * a.c[0][1] + a.c[0][2] * a.c[0][2] + a.c[1][2] * a.c[1][2];
  long double q = (a.c[0][0] + a.c[1][1] + a.c[2][2]) / 3;
  if (p1 == 0) {
    for (int i = 0; i < 3; ++i) out[i] = a.c[i][i];
    std::sort(out, out + 3);
    return;
  }
  long double p2 = (a.c[0][0] - q) * (a.c[0][0] - q) + (a.c[1][1] - q) * (a.c[1][1] - q) +
                   (a.c[2][2] - q) * (a.c[2][2] - q) + 2 * p1;
  long double p = std::sqrt(p2 / 6);
  RefMat<3, 3> b;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) b.c[i][j] = (a.c[i][j] - (i == j ? q : 0)) / p;
  long double r = RefDeterminant<3>(b) / 2;
  long double phi = r <= -1 ? pi / 3 : r >= 1 ? 0 : std::acos(r) / 3;
  long double e1 = q + 2 * p * std::cos(phi);
  long double e3 = q + 2 * p * std::cos(phi + 2 * pi / 3);
  out[0] = e3;
  out[1] = 3 * q - e1 - e3;
  out[2] = e1;
  std::sort(out, out + 3);
}

// Q^T Q == I and det(Q) == want_det.
template <int N, typename T>
void ExpectOrthogonal(const mat_t<N, N, T>& q, double tol, long double want_det, const char* what) {
  RefMat<N, N> r = ToRef(q);
  EXPECT_LE((double)MaxAbsDiff(RefMul(RefTranspose(r), r), RefIdentity<N>()), tol) << what << " not orthogonal";
  EXPECT_NEAR((double)RefDeterminant(r), (double)want_det, tol) << what << " determinant";
}

}  // namespace warpd_native_test

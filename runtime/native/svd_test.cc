// Host numerics of runtime/native/warpd/native/svd.h (svd3, svd2, qr3, eig3).
//
// 1. Defining properties against references computed here independently
//    (mat_test_util.h: long double products, Leibniz determinants, the closed
//    form for the eigenvalues of symmetric 3x3 matrices), to Warp's accuracy:
//    a fixed number of approximate Jacobi sweeps leaves float32 results up to
//    about 1e-3 relative off where singular values or eigenvalues nearly
//    repeat; float64's eight sweeps converge to rounding.
// 2. The conventions svd.h states (signs, order, what eig3 reads).
// 3. The power-of-two rescaling: the results for A * 2^k are those for A
//    scaled, bit for bit, far past where Warp's own float32 squares overflow.
// Agreement with real Warp's outputs is checked end to end, against a fixture
// made with Warp (tests/e2e/test_builtins_decompositions.py).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "mat_test_util.h"
#include "warpd/native/svd.h"

namespace {

using namespace warpd_native_test;

template <typename T>
class SvdTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(SvdTest, FloatTypes);

// Reconstruction error relative to max |A|, and orthogonality.
template <typename T>
double RecTol() {
  return std::is_same<T, float>::value ? 2e-3 : 1e-12;
}
template <typename T>
double OrthTol() {
  return std::is_same<T, float>::value ? 1e-5 : 1e-13;
}
// svd2's eigenvector formula loses digits where A^T A's diagonal nearly
// cancels against its off-diagonal (Warp's formula, kept for its signs).
template <typename T>
double Svd2Tol() {
  return std::is_same<T, float>::value ? 2e-3 : 1e-7;
}
// qr3's threshold on a pivot and the entry below (Warp's).
template <typename T>
double QrThreshold() {
  return std::is_same<T, float>::value ? 1e-6 : 1e-12;
}

// Matrices that random sampling would not produce: zero, identity, rank 1 and
// 2, repeated and negative singular values, reflections, extreme scales.
template <typename T>
std::vector<mat_t<3, 3, T>> SpecialMatrices3() {
  std::vector<mat_t<3, 3, T>> out;
  auto v = [](double a, double b, double c, double d, double e, double f, double g, double h, double i) {
    return wp::mat_from_values<3, 3, T>(a, b, c, d, e, f, g, h, i);
  };
  out.push_back(v(0, 0, 0, 0, 0, 0, 0, 0, 0));
  out.push_back(v(1, 0, 0, 0, 1, 0, 0, 0, 1));
  out.push_back(v(-1, 0, 0, 0, -1, 0, 0, 0, -1));
  out.push_back(v(2, 0, 0, 0, -3, 0, 0, 0, 0.5));
  out.push_back(v(0, 0, 5, 0, 1, 0, 3, 0, 0));
  out.push_back(v(1, 2, 3, 2, 4, 6, 3, 6, 9));   // rank 1
  out.push_back(v(1, 2, 3, 4, 5, 6, 7, 8, 9));   // rank 2
  out.push_back(v(0, -1, 0, 1, 0, 0, 0, 0, 1));  // rotation
  out.push_back(v(1, 0, 0, 0, 0, 1, 0, 1, 0));   // reflection
  out.push_back(v(3, 0, 0, 0, 3, 0, 0, 0, 1));   // repeated singular value
  out.push_back(v(1, 1e-4, 0, 0, 1, 1e-4, 0, 0, 1));
  out.push_back(v(0, 0, 0, 0, 0, 0, 1, 2, 3));   // two zero rows
  out.push_back(v(1e-20, 2e-20, 0, 0, 3e-20, 0, 1e-20, 0, 4e-20));
  out.push_back(v(1e18, 2e18, 0, 0, 3e18, 0, 1e18, 0, 4e18));
  out.push_back(v(1e-9, 2e-9, 0, 0, 3e-9, 0, 1e-9, 0, 4e-9));  // below Warp's absolute QR threshold
  return out;
}

long double Scale(const RefMat<3, 3>& a) { return std::max(MaxAbs(a), (long double)1e-300); }

// --- 1 and 2: properties and conventions ------------------------------------------

// tol_scale widens the tolerance for inputs where Warp's sweeps converge slowly.
template <typename T>
void CheckSvd3(const mat_t<3, 3, T>& a, const char* what, double tol_scale = 1) {
  mat_t<3, 3, T> u, v;
  vec_t<3, T> s;
  wp::svd3(a, u, s, v);
  RefMat<3, 3> ra = ToRef(a);
  const long double scale = Scale(ra);
  const double tol = RecTol<T>() * tol_scale;
  ExpectOrthogonal(u, OrthTol<T>(), 1, what);  // U and V are rotations
  ExpectOrthogonal(v, OrthTol<T>(), 1, what);
  long double sd[3] = {s.c[0], s.c[1], s.c[2]};
  RefMat<3, 3> usv = RefMul(RefMul(ToRef(u), RefDiag<3>(sd)), RefTranspose(ToRef(v)));
  EXPECT_LE((double)(MaxAbsDiff(usv, ra) / scale), tol) << what << " U diag(sigma) V^T != A";
  EXPECT_GE(s.c[0], (T)0) << what;  // exactly: they are norms
  EXPECT_GE(s.c[1], (T)0) << what;
  EXPECT_GE(sd[0], sd[1] - tol * scale) << what << " sorted";
  EXPECT_GE(sd[1], std::fabs(sd[2]) - tol * scale) << what << " sorted by magnitude";
  // Squared singular values against the eigenvalues of A^T A.
  RefMat<3, 3> ata = RefMul(RefTranspose(ra), ra);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) ata.c[i][j] /= scale * scale;
  long double ev[3];
  RefSymEig3(ata, ev);
  for (int i = 0; i < 3; ++i) {
    long double got = sd[i] / scale;
    EXPECT_NEAR((double)(got * got), (double)ev[2 - i], 4 * tol + 1e-9) << what << " sigma[" << i << "]";
  }
  // prod(sigma) == det(A): sigma[2] carries det's sign (U, V are rotations).
  long double det = RefDeterminant<3>(ra) / (scale * scale * scale);
  EXPECT_NEAR((double)(sd[0] * sd[1] * sd[2] / (scale * scale * scale)), (double)det, 4 * tol) << what;
  if (std::fabs(det) > 1e-3) EXPECT_EQ(s.c[2] < 0, det < 0) << what;
}

TYPED_TEST(SvdTest, Svd3) {
  using T = TypeParam;
  std::mt19937 g(7);
  for (int rep = 0; rep < 2000; ++rep) CheckSvd3(RandomMat<3, 3, T>(g, -10, 10), "random");
  for (const auto& m : SpecialMatrices3<T>()) CheckSvd3(m, "special");
  // Nearly singular: one singular value at the rounding level. Here Warp's
  // own float32 reconstruction errors reach 6e-3 (2000 such inputs).
  for (int rep = 0; rep < 200; ++rep) {
    auto m = RandomMat<3, 3, T>(g);
    for (int j = 0; j < 3; ++j) m.c[2][j] = wp::add(wp::mul((T)0.5, m.c[0][j]), wp::mul((T)-2, m.c[1][j]));
    CheckSvd3(m, "rank 2", 5);
  }
}

TYPED_TEST(SvdTest, Svd3OnDiagonalMatrices) {
  using T = TypeParam;
  // Jacobi leaves a diagonal A^T A alone, so V is the signed permutation of
  // the sort: (0,1) swaps 1 and 3 (column 1 moves to 0, the old column 0
  // comes back negated), then (0,2) swaps 3 and 2; U = A V diag(1/sigma)
  // and the sign lands on sigma[2].
  auto a = wp::mat_from_values<3, 3, T>(-1, 0, 0, 0, 3, 0, 0, 0, 2);
  mat_t<3, 3, T> u, v;
  vec_t<3, T> s;
  wp::svd3(a, u, s, v);
  const double tol = 8 * Eps<T>();
  EXPECT_NEAR((double)s.c[0], 3, 3 * tol);
  EXPECT_NEAR((double)s.c[1], 2, 2 * tol);
  EXPECT_NEAR((double)s.c[2], -1, tol);
  // Columns e1 (from column 1), e2 (from column 2, after the second swap),
  // -(-e0); U the same (its 90-degree Givens rotations are exact to rounding).
  const auto perm = ToRef(wp::mat_from_values<3, 3, long double>(0, 0, 1, 1, 0, 0, 0, 1, 0));
  ExpectMatNear(v, perm, 0, "V");
  ExpectMatNear(u, perm, tol, "U");
  // Already sorted: V = I; U diagonal with the signs that make sigma[0],
  // sigma[1] >= 0 and det(U) = 1.
  a = wp::mat_from_values<3, 3, T>(-5, 0, 0, 0, 3, 0, 0, 0, 2);
  wp::svd3(a, u, s, v);
  ExpectMatNear(v, RefIdentity<3>(), 0, "V");
  ExpectMatNear(u, ToRef(wp::mat_from_values<3, 3, long double>(-1, 0, 0, 0, 1, 0, 0, 0, -1)), 0, "U");
  EXPECT_EQ(s.c[2], (T)-2);
}

template <typename T>
void CheckSvd2(const mat_t<2, 2, T>& a, const char* what) {
  mat_t<2, 2, T> u, v;
  vec_t<2, T> s;
  wp::svd2(a, u, s, v);
  RefMat<2, 2> ra = ToRef(a);
  const long double scale = std::max(MaxAbs(ra), (long double)1e-300);
  const double tol = Svd2Tol<T>();
  long double det = RefDeterminant<2>(ra);
  ExpectOrthogonal(v, OrthTol<T>(), 1, what);
  if (std::fabs(det) > 1e-3 * scale * scale) ExpectOrthogonal(u, OrthTol<T>(), det < 0 ? -1 : 1, what);
  long double sd[2] = {s.c[0], s.c[1]};
  RefMat<2, 2> usv = RefMul(RefMul(ToRef(u), RefDiag<2>(sd)), RefTranspose(ToRef(v)));
  EXPECT_LE((double)(MaxAbsDiff(usv, ra) / scale), tol) << what << " U diag(sigma) V^T != A";
  EXPECT_GE(s.c[0], s.c[1]) << what;
  EXPECT_GE(s.c[1], (T)0) << what;  // never NaN: a rounded-negative eigenvalue counts as 0
  // sigma0^2 + sigma1^2 == |A|_F^2 and sigma0 sigma1 == |det A|.
  long double fro = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) fro += ra.c[i][j] * ra.c[i][j];
  EXPECT_NEAR((double)((sd[0] * sd[0] + sd[1] * sd[1]) / (scale * scale)), (double)(fro / (scale * scale)), tol);
  EXPECT_NEAR((double)(sd[0] * sd[1] / (scale * scale)), (double)(std::fabs(det) / (scale * scale)), tol);
}

TYPED_TEST(SvdTest, Svd2) {
  using T = TypeParam;
  std::mt19937 g(8);
  for (int rep = 0; rep < 2000; ++rep) CheckSvd2(RandomMat<2, 2, T>(g, -10, 10), "random");
  for (int rep = 0; rep < 200; ++rep) {  // rank 1
    auto x = RandomVec<2, T>(g), y = RandomVec<2, T>(g);
    CheckSvd2(wp::mat_from_values<2, 2, T>(x.c[0] * y.c[0], x.c[0] * y.c[1], x.c[1] * y.c[0], x.c[1] * y.c[1]),
              "rank 1");
  }
  // Warp's own edge cases (warp/tests/matrix/test_mat.py) and a few more.
  const double e = 1e-3;
  const double special[][4] = {
      {0, 0, 0, 0},  {1, 0, 0, 1},   {5, 0, 0, 5},         {1, 0, 0, 0},  {0, 0, 0, 2},
      {1, 1, -1, -1}, {3, 0, 4, 5},  {1 + e, e, -e, 1 - e}, {-1, 0, 0, -1}, {0, -1, 1, 0},
      {0, 1, 1, 0},  {-2, 0, 0, 3}, {1e-30, 0, 0, 2e-30},  {1e30, 1e30, 0, 1e30}, {3, -4, 4, 3},
  };
  for (const auto& m : special) CheckSvd2(wp::mat_from_values<2, 2, T>(m[0], m[1], m[2], m[3]), "special");
}

TYPED_TEST(SvdTest, Svd2Conventions) {
  using T = TypeParam;
  // V's first column points along (l1 - r, q) - (q, l1 - p), for A^T A =
  // [p q; q r] with the larger eigenvalue l1.
  auto a = wp::mat_from_values<2, 2, T>(3, 2, -4, -4);
  mat_t<2, 2, T> u, v;
  vec_t<2, T> s;
  wp::svd2(a, u, s, v);
  const long double p = 3 * 3 + 4 * 4, q = 3 * 2 + 4 * 4, r = 2 * 2 + 4 * 4;
  const long double l1 = (p + r + std::sqrt((p - r) * (p - r) + 4 * q * q)) / 2;
  long double vx = (l1 - r) - q, vy = q - (l1 - p);
  const long double n = std::sqrt(vx * vx + vy * vy);
  vx /= n, vy /= n;
  const double tol = 10 * Eps<T>();
  EXPECT_NEAR((double)v.c[0][0], (double)vx, tol);
  EXPECT_NEAR((double)v.c[1][0], (double)vy, tol);
  EXPECT_EQ(v.c[0][1], -v.c[1][0]);  // V = [vx -vy; vy vx]
  EXPECT_EQ(v.c[1][1], v.c[0][0]);
  // det(A) = -4 < 0: U's second column is the first turned by -90 degrees.
  EXPECT_EQ(u.c[0][1], u.c[1][0]);
  EXPECT_EQ(u.c[1][1], -u.c[0][0]);
  // c times a rotation or a reflection (A^T A = c^2 I exactly): V = I,
  // U = A / c, where Warp would return U = I.
  for (double sgn : {1.0, -1.0}) {
    a = wp::mat_from_values<2, 2, T>(3, -4 * sgn, 4, 3 * sgn);
    wp::svd2(a, u, s, v);
    ExpectMatNear(v, RefIdentity<2>(), 0, "V");
    ExpectMatNear(u, ToRef(wp::mat_from_values<2, 2, long double>(0.6, -0.8 * sgn, 0.8, 0.6 * sgn)), tol, "U");
    EXPECT_EQ(s.c[0], (T)5);
    EXPECT_EQ(s.c[1], (T)5);
  }
}

template <typename T>
void CheckQr3(const mat_t<3, 3, T>& a, const char* what) {
  mat_t<3, 3, T> q, r;
  wp::qr3(a, q, r);
  RefMat<3, 3> ra = ToRef(a);
  const long double scale = Scale(ra);
  ExpectOrthogonal(q, OrthTol<T>(), 1, what);
  // Below the diagonal: exactly 0 once rotated, and an entry is left alone
  // only when it and its pivot have norm <= the threshold (relative to 2^e
  // for max |A| < 1).
  const double below = QrThreshold<T>() * std::min((double)scale, 1.0) * 2;
  EXPECT_LE(std::fabs((double)r.c[1][0]), below) << what;
  EXPECT_LE(std::fabs((double)r.c[2][0]), below) << what;
  EXPECT_LE(std::fabs((double)r.c[2][1]), below) << what;
  EXPECT_GE(r.c[0][0], (T)0) << what;
  EXPECT_GE(r.c[1][1], (T)0) << what;
  EXPECT_LE((double)(MaxAbsDiff(RefMul(ToRef(q), ToRef(r)), ra) / scale), 64 * Eps<T>()) << what << " Q R != A";
  long double det = RefDeterminant<3>(ra) / (scale * scale * scale);
  if (std::fabs(det) > 1e-3) EXPECT_EQ(r.c[2][2] < 0, det < 0) << what;
}

TYPED_TEST(SvdTest, Qr3) {
  using T = TypeParam;
  std::mt19937 g(9);
  for (int rep = 0; rep < 2000; ++rep) {
    auto a = RandomMat<3, 3, T>(g, -10, 10);
    CheckQr3(a, "random");
    mat_t<3, 3, T> q, r;
    wp::qr3(a, q, r);
    EXPECT_TRUE(r.c[1][0] == 0 && r.c[2][0] == 0 && r.c[2][1] == 0) << "rotated entries are exactly 0";
  }
  for (const auto& m : SpecialMatrices3<T>()) CheckQr3(m, "special");
  // Already upper triangular with a positive diagonal: Q = I, R = A.
  auto ut = wp::mat_from_values<3, 3, T>(2, 1, -1, 0, 3, 4, 0, 0, 5);
  mat_t<3, 3, T> q, r;
  wp::qr3(ut, q, r);
  ExpectMatNear(q, RefIdentity<3>(), 0, "Q of triangular");
  ExpectMatNear(r, ToRef(ut), 0, "R of triangular");
  // A negative pivot with nothing below: its row and the next are negated,
  // which here makes the next pivot negative in turn; the sign of det(A)
  // ends on R[2][2].
  auto neg = wp::mat_from_values<3, 3, T>(-2, 1, 0, 0, 3, 0, 0, 0, 5);
  wp::qr3(neg, q, r);
  ExpectMatNear(q, ToRef(wp::mat_from_values<3, 3, long double>(-1, 0, 0, 0, 1, 0, 0, 0, -1)), 0, "Q");
  ExpectMatNear(r, ToRef(wp::mat_from_values<3, 3, long double>(2, -1, 0, 0, 3, 0, 0, 0, -5)), 0, "R");
}

template <typename T>
void CheckEig3(const mat_t<3, 3, T>& a, const char* what) {
  mat_t<3, 3, T> q;
  vec_t<3, T> d;
  wp::eig3(a, q, d);
  RefMat<3, 3> ra = ToRef(a);
  const long double scale = Scale(ra);
  const double tol = RecTol<T>();
  ExpectOrthogonal(q, OrthTol<T>(), 1, what);
  long double dd[3] = {d.c[0], d.c[1], d.c[2]};
  RefMat<3, 3> qdq = RefMul(RefMul(ToRef(q), RefDiag<3>(dd)), RefTranspose(ToRef(q)));
  EXPECT_LE((double)(MaxAbsDiff(qdq, ra) / scale), tol) << what << " Q diag(d) Q^T != A";
  long double want[3];
  RefSymEig3(ra, want);
  std::sort(dd, dd + 3);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR((double)(dd[i] / scale), (double)(want[i] / scale), tol) << what;
}

TYPED_TEST(SvdTest, Eig3) {
  using T = TypeParam;
  std::mt19937 g(10);
  for (int rep = 0; rep < 2000; ++rep) {
    auto m = RandomMat<3, 3, T>(g, -10, 10);
    CheckEig3(wp::add(m, wp::transpose(m)), "random symmetric");
  }
  for (const auto& m : SpecialMatrices3<T>()) CheckEig3(wp::add(m, wp::transpose(m)), "special");
  CheckEig3(wp::mat_from_values<3, 3, T>(2, 0, 0, 0, 2, 0, 0, 0, 5), "repeated");
  CheckEig3(wp::mat_from_values<3, 3, T>(0, 1, 1, 1, 0, 1, 1, 1, 0), "zero diagonal");
}

TYPED_TEST(SvdTest, Eig3KeepsDiagonalOrderQFromLowerTriangle) {
  using T = TypeParam;
  // Eigenvalues stay near their diagonal positions (Warp does not sort).
  auto a = wp::mat_from_values<3, 3, T>(3, 1e-3, 0, 1e-3, -1, 2e-3, 0, 2e-3, 2);
  mat_t<3, 3, T> q;
  vec_t<3, T> d;
  wp::eig3(a, q, d);
  EXPECT_NEAR((double)d.c[0], 3, 1e-5);
  EXPECT_NEAR((double)d.c[1], -1, 1e-5);
  EXPECT_NEAR((double)d.c[2], 2, 1e-5);
  for (int i = 0; i < 3; ++i) EXPECT_GT(q.c[i][i], (T)0.999);
  // Q comes from the lower triangle alone; d = diag(Q^T A Q) from all of A.
  auto garbage = a;
  garbage.c[0][1] = 100, garbage.c[0][2] = -7, garbage.c[1][2] = 1e6;
  mat_t<3, 3, T> q2;
  vec_t<3, T> d2;
  wp::eig3(garbage, q2, d2);
  ExpectMatEq(q2, q, "Q");
  RefMat<3, 3> qaq = RefMul(RefMul(RefTranspose(ToRef(q2)), ToRef(garbage)), ToRef(q2));
  for (int i = 0; i < 3; ++i) EXPECT_NEAR((double)d2.c[i], (double)qaq.c[i][i], 1e6 * 16 * Eps<T>()) << i;
}

TYPED_TEST(SvdTest, DecompositionsTerminateOnNonFinite) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  for (T bad : {inf, -inf, nan}) {
    auto a = wp::identity<3, T>();
    a.c[1][0] = bad;
    mat_t<3, 3, T> u, v, q, r;
    vec_t<3, T> s, d;
    wp::svd3(a, u, s, v);
    wp::qr3(a, q, r);
    wp::eig3(a, q, d);
    auto a2 = wp::identity<2, T>();
    a2.c[0][1] = bad;
    mat_t<2, 2, T> u2, v2;
    vec_t<2, T> s2;
    wp::svd2(a2, u2, s2, v2);
    EXPECT_FALSE(wp::isfinite(s) && wp::isfinite(d) && wp::isfinite(s2) && wp::isfinite(r));
  }
}

// --- 3: the power-of-two rescaling ------------------------------------------------

template <int R, int C, typename T>
mat_t<R, C, T> Times(const mat_t<R, C, T>& a, T f) {
  mat_t<R, C, T> m;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) m.c[i][j] = a.c[i][j] * f;
  return m;
}
template <int N, typename T>
vec_t<N, T> Times(const vec_t<N, T>& a, T f) {
  vec_t<N, T> v;
  for (int i = 0; i < N; ++i) v.c[i] = a.c[i] * f;
  return v;
}
template <typename X>
void ExpectBitsEq(const X& got, const X& want, const char* what, int k) {
  EXPECT_EQ(0, std::memcmp(&got, &want, sizeof(X))) << what << " at scale 2^" << k;
}

TYPED_TEST(SvdTest, ScalingByPowersOfTwoIsExact) {
  using T = TypeParam;
  // float32 |A| near 2^40 (1e12) or 2^-40: Warp's A^T A squares overflow or
  // underflow there; here only the exponent of every value changes.
  const int ks[] = {-100, -40, -7, -1, 1, 7, 40, 100};
  std::mt19937 g(12);
  for (int rep = 0; rep < 50; ++rep) {
    // Random and full rank: no pivot is near qr3's threshold, so that it is
    // absolute above max |A| = 1 and relative below does not show.
    auto a = RandomMat<3, 3, T>(g, -2, 2);
    auto sym = wp::add(a, wp::transpose(a));
    auto a2 = wp::mat_from_values<2, 2, T>(a.c[0][0], a.c[0][1], a.c[1][0], a.c[1][1]);
    mat_t<3, 3, T> u, v, q, r, e;
    vec_t<3, T> s, d;
    mat_t<2, 2, T> u2, v2;
    vec_t<2, T> s2;
    wp::svd3(a, u, s, v);
    wp::qr3(a, q, r);
    wp::eig3(sym, e, d);
    wp::svd2(a2, u2, s2, v2);
    for (int k : ks) {
      const T f = std::ldexp((T)1, k);
      mat_t<3, 3, T> uk, vk, qk, rk, ek;
      vec_t<3, T> sk, dk;
      mat_t<2, 2, T> u2k, v2k;
      vec_t<2, T> s2k;
      wp::svd3(Times(a, f), uk, sk, vk);
      wp::qr3(Times(a, f), qk, rk);
      wp::eig3(Times(sym, f), ek, dk);
      wp::svd2(Times(a2, f), u2k, s2k, v2k);
      ExpectBitsEq(uk, u, "svd3 U", k);
      ExpectBitsEq(vk, v, "svd3 V", k);
      ExpectBitsEq(sk, Times(s, f), "svd3 sigma", k);
      ExpectBitsEq(qk, q, "qr3 Q", k);
      ExpectBitsEq(rk, Times(r, f), "qr3 R", k);
      ExpectBitsEq(ek, e, "eig3 Q", k);
      ExpectBitsEq(dk, Times(d, f), "eig3 d", k);
      ExpectBitsEq(u2k, u2, "svd2 U", k);
      ExpectBitsEq(v2k, v2, "svd2 V", k);
      ExpectBitsEq(s2k, Times(s2, f), "svd2 sigma", k);
    }
  }
}

// Outputs may alias the input (svd3(A, A, s, V) in a kernel).
TEST(SvdDecomp, OutputsMayAliasInput) {
  std::mt19937 g(11);
  auto a = RandomMat<3, 3, double>(g);
  mat_t<3, 3, double> u, v, q, r, e;
  vec_t<3, double> s, d;
  wp::svd3(a, u, s, v);
  wp::qr3(a, q, r);
  auto sym = wp::add(a, wp::transpose(a));
  wp::eig3(sym, e, d);
  auto b = a;
  mat_t<3, 3, double> v2;
  wp::svd3(b, b, s, v2);
  ExpectMatEq(b, u, "svd3 U aliasing A");
  auto c = a;
  mat_t<3, 3, double> r2;
  wp::qr3(c, c, r2);
  ExpectMatEq(c, q, "qr3 Q aliasing A");
  auto f = sym;
  vec_t<3, double> d2;
  wp::eig3(f, f, d2);
  ExpectMatEq(f, e, "eig3 Q aliasing A");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(d2.c[i], d.c[i]);
}

// half decomposes in float32 and rounds the results once.
TEST(SvdHalf, RoundsTheFloat32Results) {
  std::mt19937 g(13);
  for (int rep = 0; rep < 200; ++rep) {
    auto a = RandomMat<3, 3, float>(g, -4, 4);
    mat_t<3, 3, wp::half> ah;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) ah.c[i][j] = wp::float_to_half(a.c[i][j]), a.c[i][j] = wp::half_to_float(ah.c[i][j]);
    mat_t<3, 3, float> u, v, q, r;
    vec_t<3, float> s;
    wp::svd3(a, u, s, v);
    wp::qr3(a, q, r);
    mat_t<3, 3, wp::half> uh, vh, qh, rh;
    vec_t<3, wp::half> sh;
    wp::svd3(ah, uh, sh, vh);
    wp::qr3(ah, qh, rh);
    ExpectBitsEq(uh, wp::cast<mat_t<3, 3, wp::half>>(u), "svd3 U", 0);
    ExpectBitsEq(vh, wp::cast<mat_t<3, 3, wp::half>>(v), "svd3 V", 0);
    ExpectBitsEq(sh, wp::cast<vec_t<3, wp::half>>(s), "svd3 sigma", 0);
    ExpectBitsEq(qh, wp::cast<mat_t<3, 3, wp::half>>(q), "qr3 Q", 0);
    ExpectBitsEq(rh, wp::cast<mat_t<3, 3, wp::half>>(r), "qr3 R", 0);
  }
  // diag(1, 2, 3), where Warp's per-operation half arithmetic gives NaN.
  auto d = wp::mat_from_values<3, 3, wp::half>(1.f, 0.f, 0.f, 0.f, 2.f, 0.f, 0.f, 0.f, 3.f);
  mat_t<3, 3, wp::half> u, v;
  vec_t<3, wp::half> s;
  wp::svd3(d, u, s, v);
  EXPECT_EQ(wp::half_to_float(s.c[0]), 3.f);
  EXPECT_EQ(wp::half_to_float(s.c[1]), 2.f);
  EXPECT_EQ(wp::half_to_float(s.c[2]), 1.f);
  EXPECT_TRUE(wp::isfinite(u) && wp::isfinite(v));
}

}  // namespace

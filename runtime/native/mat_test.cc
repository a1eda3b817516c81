// Host numerics of runtime/native/warpd/native/mat.h against references
// computed here independently (mat_test_util.h): naive loops in long double,
// determinants by permutation expansion (Leibniz), and defining identities
// (A * inverse(A) == I). Random inputs come from a fixed-seed std::mt19937, so
// failures reproduce. The decompositions are tested in svd_test.cc.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "mat_test_util.h"
#include "warpd/native/mat.h"

namespace {

using wp::mat_t;
using wp::vec_t;

// Helpers shared with svd_test.cc: mat_test_util.h.
using namespace warpd_native_test;

template <typename T>
class MatFloatTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(MatFloatTest, FloatTypes);

// --- Layout (ABI) -------------------------------------------------------------------

TEST(MatLayout, RowMajorPackedAggregate) {
  static_assert(std::is_trivial<wp::mat33f>::value && std::is_standard_layout<wp::mat33f>::value, "POD");
  static_assert(sizeof(wp::mat22f) == 16 && sizeof(wp::mat33f) == 36 && sizeof(wp::mat44f) == 64, "f32");
  static_assert(sizeof(wp::mat33d) == 72 && alignof(wp::mat33d) == 8, "f64");
  static_assert(sizeof(wp::mat33h) == 18 && alignof(wp::mat33h) == 2, "f16");
  static_assert(sizeof(mat_t<2, 3, float>) == 24 && sizeof(mat_t<6, 6, double>) == 288, "shapes");
  wp::mat_t<2, 3, float> m = wp::mat_from_values<2, 3, float>(1.f, 2.f, 3.f, 4.f, 5.f, 6.f);
  float flat[6];
  std::memcpy(flat, &m, sizeof flat);
  for (int k = 0; k < 6; ++k) EXPECT_EQ(flat[k], (float)(k + 1));  // row-major
}

// --- Construction and access ------------------------------------------------------

TEST(MatConstruct, ValuesSplatIdentityRows) {
  auto m = wp::mat_from_values<3, 2, double>(1.0, 2.0, 3.0, 4.0, 5.0, 6.0);
  EXPECT_EQ(m.c[0][1], 2.0);
  EXPECT_EQ(m.c[2][0], 5.0);
  auto mixed = wp::mat_from_values<2, 2, float>(1, 2.5, 3.0f, (short)4);  // each converted to T
  EXPECT_EQ(mixed.c[0][1], 2.5f);
  EXPECT_EQ(mixed.c[1][1], 4.0f);

  auto s = wp::mat_splat<2, 3, int>(7);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(s.c[i][j], 7);

  auto id = wp::identity<4, float>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(id.c[i][j], i == j ? 1.f : 0.f);

  vec_t<2, double> r2 = wp::mat_row(m, 2);
  EXPECT_EQ(r2.c[0], 5.0);
  EXPECT_EQ(r2.c[1], 6.0);
  wp::mat_set_row(m, 1, vec_t<2, double>{{-1.0, -2.0}});
  EXPECT_EQ(m.c[1][0], -1.0);
  EXPECT_EQ(m.c[1][1], -2.0);
  EXPECT_EQ(m.c[0][0], 1.0);  // other rows untouched
  EXPECT_EQ(wp::len(m), 3);
}

TEST(MatConstruct, FromRowsAndCols) {
  vec_t<3, float> a{{1, 2, 3}}, b{{4, 5, 6}}, c{{7, 8, 9}}, d{{10, 11, 12}};
  mat_t<4, 3, float> rows = wp::matrix_from_rows(a, b, c, d);
  mat_t<3, 4, float> cols = wp::matrix_from_cols(a, b, c, d);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(rows.c[i][j], (float)(3 * i + j + 1));
      EXPECT_EQ(cols.c[j][i], (float)(3 * i + j + 1));
    }
  mat_t<1, 3, float> one = wp::matrix_from_rows(a);
  EXPECT_EQ(one.c[0][2], 3.f);
  mat_t<2, 2, double> sq = wp::matrix_from_cols(vec_t<2, double>{{1, 2}}, vec_t<2, double>{{3, 4}});
  EXPECT_EQ(sq.c[0][1], 3.0);
  EXPECT_EQ(sq.c[1][0], 2.0);
}

TEST(MatConstruct, Casts) {
  auto f = wp::mat_from_values<2, 2, float>(1.5f, -2.25f, 1e10f, std::nanf(""));
  auto d = wp::cast<wp::mat22d>(f);
  EXPECT_EQ(d.c[0][1], -2.25);
  auto i = wp::cast<mat_t<2, 2, wp::int32>>(f);  // truncates; clamps; NaN is 0
  EXPECT_EQ(i.c[0][0], 1);
  EXPECT_EQ(i.c[0][1], -2);
  EXPECT_EQ(i.c[1][0], 2147483647);
  EXPECT_EQ(i.c[1][1], 0);
  auto h = wp::cast<wp::mat22h>(f);
  EXPECT_EQ(wp::half_to_float(h.c[0][1]), -2.25f);
  auto back = wp::cast<wp::mat22f>(h);
  EXPECT_EQ(back.c[0][0], 1.5f);
}

// --- Element-wise operators, over shapes ---------------------------------------------

template <int R, int C, typename T>
void CheckElementwise(std::mt19937& g) {
  const double tol = 8 * Eps<T>();
  auto a = RandomMat<R, C, T>(g), b = RandomMat<R, C, T>(g, 0.5, 2.0);
  T s = (T)0.75, t = (T)0.3;
  RefMat<R, C> ra = ToRef(a), rb = ToRef(b);
  RefMat<R, C> want_add, want_sub, want_neg, want_cwmul, want_cwdiv, want_muls, want_divs, want_sdiv, want_lerp;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      long double x = ra.c[i][j], y = rb.c[i][j];
      want_add.c[i][j] = x + y;
      want_sub.c[i][j] = x - y;
      want_neg.c[i][j] = -x;
      want_cwmul.c[i][j] = x * y;
      want_cwdiv.c[i][j] = x / y;
      want_muls.c[i][j] = x * (long double)s;
      want_divs.c[i][j] = x / (long double)s;
      want_sdiv.c[i][j] = (long double)s / y;
      want_lerp.c[i][j] = x * (1 - (long double)t) + y * (long double)t;
    }
  ExpectMatNear(wp::add(a, b), want_add, tol, "add");
  ExpectMatNear(wp::sub(a, b), want_sub, tol, "sub");
  ExpectMatNear(wp::neg(a), want_neg, 0, "neg");
  ExpectMatNear(wp::pos(a), ra, 0, "pos");
  ExpectMatNear(wp::cw_mul(a, b), want_cwmul, tol, "cw_mul");
  ExpectMatNear(wp::cw_div(a, b), want_cwdiv, tol, "cw_div");
  ExpectMatNear(wp::mul(a, s), want_muls, tol, "mul(m, s)");
  ExpectMatNear(wp::mul(s, a), want_muls, tol, "mul(s, m)");
  ExpectMatNear(wp::div(a, s), want_divs, tol, "div(m, s)");
  ExpectMatNear(wp::div(s, b), want_sdiv, tol, "div(s, m)");
  ExpectMatNear(wp::lerp(a, b, t), want_lerp, tol, "lerp");
  EXPECT_TRUE(wp::eq(a, a));
  EXPECT_FALSE(wp::ne(a, a));
  mat_t<R, C, T> a2 = a;
  a2.c[R - 1][C - 1] = wp::add(a2.c[R - 1][C - 1], (T)1);
  EXPECT_FALSE(wp::eq(a, a2));
  EXPECT_TRUE(wp::ne(a, a2));
  EXPECT_EQ(wp::len(a), R);
}

TYPED_TEST(MatFloatTest, ElementwiseAllShapes) {
  using T = TypeParam;
  std::mt19937 g(1);
  for (int rep = 0; rep < 20; ++rep) {
    CheckElementwise<2, 2, T>(g);
    CheckElementwise<3, 3, T>(g);
    CheckElementwise<4, 4, T>(g);
    CheckElementwise<2, 3, T>(g);
    CheckElementwise<3, 2, T>(g);
    CheckElementwise<6, 6, T>(g);
    CheckElementwise<1, 5, T>(g);
  }
}

TEST(MatOps, EqualityIsIeee) {
  auto a = wp::mat_from_values<2, 2, float>(0.f, 1.f, 2.f, 3.f);
  auto b = wp::mat_from_values<2, 2, float>(-0.f, 1.f, 2.f, 3.f);
  EXPECT_TRUE(wp::eq(a, b));  // -0 == +0
  a.c[1][1] = std::nanf("");
  EXPECT_FALSE(wp::eq(a, a));  // NaN != NaN
  EXPECT_TRUE(wp::ne(a, a));
}

TEST(MatOps, IntegerMatricesWrapAndNeverTrap) {
  using M = mat_t<2, 2, wp::int32>;
  const wp::int32 kMax = std::numeric_limits<wp::int32>::max(), kMin = std::numeric_limits<wp::int32>::min();
  M a = wp::mat_from_values<2, 2, wp::int32>(kMax, kMin, 12, -7);
  M b = wp::mat_from_values<2, 2, wp::int32>(1, -1, 0, 2);
  M sum = wp::add(a, b);
  EXPECT_EQ(sum.c[0][0], kMin);  // wraps
  EXPECT_EQ(sum.c[0][1], kMax);
  M q = wp::cw_div(a, b);
  EXPECT_EQ(q.c[0][1], kMin);  // MIN / -1 wraps
  EXPECT_EQ(q.c[1][0], 0);     // division by zero is 0
  EXPECT_EQ(q.c[1][1], -3);    // truncates toward zero
  M z = wp::div((wp::int32)5, b);
  EXPECT_EQ(z.c[1][0], 0);
  EXPECT_EQ(wp::neg(a).c[0][1], kMin);
  M prod = wp::mul(a, b);  // (2x2)(2x2), wrapping
  EXPECT_EQ(prod.c[0][0], kMax);  // MAX * 1 + MIN * 0
  EXPECT_EQ(prod.c[0][1], (wp::int32)((uint32_t)kMax * (uint32_t)-1 + (uint32_t)kMin * 2u));
  EXPECT_EQ(prod.c[1][0], 12 * 1 + -7 * 0);
  EXPECT_EQ(prod.c[1][1], 12 * -1 + -7 * 2);

  M x = wp::mat_from_values<2, 2, wp::int32>(0b1100, 0b1010, -1, 1);
  M y = wp::mat_from_values<2, 2, wp::int32>(0b1010, 0b0110, 4, 33);
  EXPECT_EQ(wp::bit_and(x, y).c[0][0], 0b1000);
  EXPECT_EQ(wp::bit_or(x, y).c[0][1], 0b1110);
  EXPECT_EQ(wp::bit_xor(x, y).c[0][0], 0b0110);
  EXPECT_EQ(wp::invert(x).c[1][0], 0);
  EXPECT_EQ(wp::lshift(x, y).c[1][1], 2);  // shift count masked to 33 & 31 == 1
  EXPECT_EQ(wp::rshift(x, y).c[1][0], -1);
  EXPECT_EQ(wp::trace(x), 0b1100 + 1);
}

// --- Products and structure -------------------------------------------------------

template <int R, int K, int C, typename T>
void CheckProducts(std::mt19937& g) {
  const double tol = 4 * K * Eps<T>();
  auto a = RandomMat<R, K, T>(g);
  auto b = RandomMat<K, C, T>(g);
  auto vk = RandomVec<K, T>(g);
  auto vr = RandomVec<R, T>(g);
  ExpectMatNear(wp::mul(a, b), RefMul(ToRef(a), ToRef(b)), tol, "mul(m, m)");

  // Matrix-vector products as products with a one-column / one-row matrix.
  RefMat<K, 1> colk;
  for (int k = 0; k < K; ++k) colk.c[k][0] = vk.c[k];
  RefMat<R, 1> want_mv = RefMul(ToRef(a), colk);
  vec_t<R, T> mv = wp::mul(a, vk);
  for (int i = 0; i < R; ++i) EXPECT_NEAR((double)mv.c[i], (double)want_mv.c[i][0], tol) << "mul(m, v)";
  RefMat<1, R> rowr;
  for (int i = 0; i < R; ++i) rowr.c[0][i] = vr.c[i];
  RefMat<1, K> want_vm = RefMul(rowr, ToRef(a));
  vec_t<K, T> vm = wp::mul(vr, a);
  for (int k = 0; k < K; ++k) EXPECT_NEAR((double)vm.c[k], (double)want_vm.c[0][k], tol) << "mul(v, m)";

  ExpectMatNear(wp::transpose(a), RefTranspose(ToRef(a)), 0, "transpose");
  ExpectMatNear(wp::transpose(wp::transpose(a)), ToRef(a), 0, "transpose twice");

  auto o = wp::outer(vr, vk);
  for (int i = 0; i < R; ++i)
    for (int k = 0; k < K; ++k)
      EXPECT_NEAR((double)o.c[i][k], (double)((long double)vr.c[i] * vk.c[k]), tol) << "outer";

  auto a2 = RandomMat<R, K, T>(g);
  long double want_ddot = 0;
  for (int i = 0; i < R; ++i)
    for (int k = 0; k < K; ++k) want_ddot += (long double)a.c[i][k] * a2.c[i][k];
  EXPECT_NEAR((double)wp::ddot(a, a2), (double)want_ddot, tol * R) << "ddot";
}

TYPED_TEST(MatFloatTest, ProductsAllShapes) {
  using T = TypeParam;
  std::mt19937 g(2);
  for (int rep = 0; rep < 20; ++rep) {
    CheckProducts<2, 2, 2, T>(g);
    CheckProducts<3, 3, 3, T>(g);
    CheckProducts<4, 4, 4, T>(g);
    CheckProducts<2, 3, 2, T>(g);
    CheckProducts<3, 2, 3, T>(g);
    CheckProducts<2, 3, 4, T>(g);
    CheckProducts<6, 6, 6, T>(g);
    CheckProducts<6, 3, 1, T>(g);
  }
}

TYPED_TEST(MatFloatTest, TraceDiagSkew) {
  using T = TypeParam;
  std::mt19937 g(3);
  for (int rep = 0; rep < 50; ++rep) {
    auto m = RandomMat<4, 4, T>(g);
    long double tr = 0;
    for (int i = 0; i < 4; ++i) tr += m.c[i][i];
    EXPECT_NEAR((double)wp::trace(m), (double)tr, 8 * Eps<T>());
    vec_t<4, T> d = wp::get_diag(m);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(d.c[i], m.c[i][i]);
    auto dm = wp::diag(d);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) EXPECT_EQ(dm.c[i][j], i == j ? d.c[i] : (T)0);

    auto v = RandomVec<3, T>(g), x = RandomVec<3, T>(g);
    vec_t<3, T> sx = wp::mul(wp::skew(v), x), cx = wp::cross(v, x);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR((double)sx.c[i], (double)cx.c[i], 8 * Eps<T>());
    auto sk = wp::skew(v);
    ExpectMatNear(wp::transpose(sk), ToRef(wp::neg(sk)), 0, "skew is antisymmetric");
  }
  EXPECT_EQ(wp::trace(wp::mat_from_values<2, 2, T>(1, 2, 3, 4)), (T)5);
}

TEST(MatOps, IsNanIsInfIsFinite) {
  auto m = wp::identity<3, float>();
  EXPECT_FALSE(wp::isnan(m));
  EXPECT_FALSE(wp::isinf(m));
  EXPECT_TRUE(wp::isfinite(m));
  m.c[2][1] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(wp::isnan(m));
  EXPECT_TRUE(wp::isinf(m));
  EXPECT_FALSE(wp::isfinite(m));
  m.c[0][0] = std::nanf("");
  EXPECT_TRUE(wp::isnan(m));
}

// --- Determinant and inverse ---------------------------------------------------------

template <int N, typename T>
void CheckDetInverse(std::mt19937& g) {
  // Diagonally shifted, so the matrix is comfortably invertible.
  auto a = RandomMat<N, N, T>(g);
  for (int i = 0; i < N; ++i) a.c[i][i] = wp::add(a.c[i][i], (T)(i % 2 ? -2.5 : 2.5));
  RefMat<N, N> ra = ToRef(a);
  long double det = RefDeterminant<N>(ra);
  EXPECT_NEAR((double)wp::determinant(a), (double)det, 16 * Eps<T>() * (double)RefDeterminantTerms<N>(ra))
      << N << "x" << N;
  mat_t<N, N, T> inv = wp::inverse(a);
  const double tol = 256 * Eps<T>();
  EXPECT_LE((double)MaxAbsDiff(RefMul(ra, ToRef(inv)), RefIdentity<N>()), tol) << "A inverse(A) " << N;
  EXPECT_LE((double)MaxAbsDiff(RefMul(ToRef(inv), ra), RefIdentity<N>()), tol) << "inverse(A) A " << N;
  ExpectMatEq(wp::inverse_approx(a), inv, "inverse_approx");

  // A general (not shifted) random matrix: det against Leibniz.
  auto b = RandomMat<N, N, T>(g, -3, 3);
  long double db = RefDeterminant<N>(ToRef(b));
  EXPECT_NEAR((double)wp::determinant(b), (double)db, 16 * Eps<T>() * (double)RefDeterminantTerms<N>(ToRef(b)))
      << N << "x" << N;
}

TYPED_TEST(MatFloatTest, DeterminantAndInverse) {
  using T = TypeParam;
  std::mt19937 g(4);
  for (int rep = 0; rep < 300; ++rep) {
    CheckDetInverse<2, T>(g);
    CheckDetInverse<3, T>(g);
    CheckDetInverse<4, T>(g);
  }
}

TYPED_TEST(MatFloatTest, DeterminantExactOnIntegers) {
  using T = TypeParam;
  // Small integer matrices: every intermediate is exact, so equality holds.
  std::mt19937 g(5);
  std::uniform_int_distribution<int> d(-9, 9);
  for (int rep = 0; rep < 200; ++rep) {
    mat_t<4, 4, T> m;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) m.c[i][j] = (T)d(g);
    EXPECT_EQ((double)wp::determinant(m), (double)RefDeterminant<4>(ToRef(m)));
    mat_t<3, 3, T> m3;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) m3.c[i][j] = m.c[i][j];
    EXPECT_EQ((double)wp::determinant(m3), (double)RefDeterminant<3>(ToRef(m3)));
    mat_t<2, 2, T> m2 = wp::mat_from_values<2, 2, T>(m.c[0][0], m.c[0][1], m.c[1][0], m.c[1][1]);
    EXPECT_EQ((double)wp::determinant(m2), (double)RefDeterminant<2>(ToRef(m2)));
  }
}

TYPED_TEST(MatFloatTest, SingularInverseIsZeroAsInWarp) {
  using T = TypeParam;
  auto s2 = wp::mat_from_values<2, 2, T>(1, 2, 2, 4);
  auto s3 = wp::mat_from_values<3, 3, T>(1, 2, 3, 4, 5, 6, 7, 8, 9);  // det exactly 0
  auto s4 = wp::mat_from_values<4, 4, T>(1, 2, 3, 4, 2, 4, 6, 8, 0, 1, 0, 1, 5, 0, 0, 1);
  ASSERT_EQ(wp::determinant(s3), (T)0);
  ExpectMatEq(wp::inverse(s2), wp::mat_splat<2, 2, T>(0), "2x2");
  ExpectMatEq(wp::inverse(s3), wp::mat_splat<3, 3, T>(0), "3x3");
  ExpectMatEq(wp::inverse(s4), wp::mat_splat<4, 4, T>(0), "4x4");
  ExpectMatEq(wp::inverse_approx(s4), wp::mat_splat<4, 4, T>(0), "4x4 approx");
  ExpectMatEq(wp::inverse(wp::mat_splat<3, 3, T>(0)), wp::mat_splat<3, 3, T>(0), "zero");
  // NaN propagates instead of trapping.
  auto n = wp::identity<3, T>();
  n.c[1][2] = std::numeric_limits<T>::quiet_NaN();
  EXPECT_TRUE(wp::isnan(wp::inverse(n)));
  // Inverse of a known matrix.
  auto k = wp::mat_from_values<2, 2, T>(4, 7, 2, 6);
  ExpectMatNear(wp::inverse(k), ToRef(wp::mat_from_values<2, 2, T>(0.6, -0.7, -0.2, 0.4)), 8 * Eps<T>(), "k");
}

// --- argmin / argmax, norms -----------------------------------------------------------

TEST(VecReduce, ArgminArgmaxTable) {
  const float nan = std::nanf("");
  struct Case {
    float v[4];
    unsigned argmin, argmax;
  } cases[] = {
      {{1, 2, 3, 4}, 0, 3},
      {{4, 3, 2, 1}, 3, 0},
      {{2, 1, 1, 2}, 1, 0},  // ties: the first
      {{nan, 5, -1, nan}, 2, 1},
      {{nan, nan, nan, 7}, 3, 3},
      {{nan, nan, nan, nan}, 0, 0},
      {{-0.f, 0.f, -0.f, 0.f}, 0, 0},
      {{-INFINITY, 0, INFINITY, 1}, 0, 2},
  };
  for (const Case& c : cases) {
    vec_t<4, float> v{{c.v[0], c.v[1], c.v[2], c.v[3]}};
    EXPECT_EQ(wp::argmin(v), c.argmin) << c.v[0] << " " << c.v[1] << " " << c.v[2] << " " << c.v[3];
    EXPECT_EQ(wp::argmax(v), c.argmax) << c.v[0] << " " << c.v[1] << " " << c.v[2] << " " << c.v[3];
  }
  vec_t<5, wp::int32> iv{{3, -8, 9, -8, 9}};
  EXPECT_EQ(wp::argmin(iv), 1u);
  EXPECT_EQ(wp::argmax(iv), 2u);
  static_assert(std::is_same<decltype(wp::argmax(iv)), wp::uint32>::value, "uint32 index");
}

TYPED_TEST(MatFloatTest, Norms) {
  using T = TypeParam;
  std::mt19937 g(6);
  const double tol = 16 * Eps<T>();
  for (int rep = 0; rep < 200; ++rep) {
    auto v = RandomVec<5, T>(g, -2, 2);
    long double l1 = 0, sq = 0;
    for (int i = 0; i < 5; ++i) l1 += std::fabs((long double)v.c[i]), sq += (long double)v.c[i] * v.c[i];
    long double l2 = std::sqrt(sq);
    EXPECT_NEAR((double)wp::norm_l1(v), (double)l1, tol);
    EXPECT_NEAR((double)wp::norm_l2(v), (double)l2, tol);
    for (long double delta : {0.25L, 1.0L, 3.0L, 10.0L}) {
      long double huber = l2 <= delta ? 0.5L * sq : delta * (l2 - 0.5L * delta);
      long double pseudo = delta * std::sqrt(1 + sq / (delta * delta));
      EXPECT_NEAR((double)wp::norm_huber(v, (T)delta), (double)huber, tol * delta);
      EXPECT_NEAR((double)wp::norm_pseudo_huber(v, (T)delta), (double)pseudo, tol * delta);
      vec_t<5, T> sn = wp::smooth_normalize(v, (T)delta);
      for (int i = 0; i < 5; ++i) EXPECT_NEAR((double)sn.c[i], (double)(v.c[i] / pseudo), tol);
    }
  }
  // Huber's two branches meet at |v| == delta.
  vec_t<2, T> e{{(T)3, (T)4}};
  EXPECT_EQ(wp::norm_huber(e, (T)5), (T)12.5);
  EXPECT_EQ(wp::norm_huber(e, (T)1), (T)4.5);
  EXPECT_EQ(wp::norm_l2(vec_t<3, T>{}), (T)0);
  EXPECT_EQ(wp::norm_pseudo_huber(vec_t<3, T>{}, (T)2), (T)2);
}

TEST(VecReduce, CwDiv) {
  vec_t<3, double> a{{1, -4, 9}}, b{{2, 8, -3}};
  vec_t<3, double> q = wp::cw_div(a, b);
  EXPECT_EQ(q.c[0], 0.5);
  EXPECT_EQ(q.c[1], -0.5);
  EXPECT_EQ(q.c[2], -3.0);
  vec_t<2, wp::int32> z = wp::cw_div(vec_t<2, wp::int32>{{5, 7}}, vec_t<2, wp::int32>{{0, 2}});
  EXPECT_EQ(z.c[0], 0);
  EXPECT_EQ(z.c[1], 3);
}

// --- half ----------------------------------------------------------------------------

wp::half H(float x) { return wp::float_to_half(x); }
float F(wp::half h) { return wp::half_to_float(h); }

TEST(MatHalf, Arithmetic) {
  using M = wp::mat33h;
  M a = wp::mat_from_values<3, 3, wp::half>(2.f, 1.f, 0.f, 1.f, 3.f, 1.f, 0.f, 1.f, 4.f);
  M i = wp::identity<3, wp::half>();
  M sum = wp::add(a, i);
  EXPECT_EQ(F(sum.c[0][0]), 3.f);
  EXPECT_EQ(F(sum.c[0][1]), 1.f);
  M prod = wp::mul(a, a);
  EXPECT_EQ(F(prod.c[0][0]), 5.f);   // 4 + 1 + 0
  EXPECT_EQ(F(prod.c[1][1]), 11.f);  // 1 + 9 + 1
  EXPECT_EQ(F(wp::determinant(a)), 18.f);
  EXPECT_EQ(F(wp::trace(a)), 9.f);
  EXPECT_TRUE(wp::eq(wp::transpose(a), a));
  EXPECT_FALSE(wp::ne(a, a));
  vec_t<3, wp::half> x{{H(1.f), H(-1.f), H(2.f)}};
  vec_t<3, wp::half> ax = wp::mul(a, x);
  EXPECT_EQ(F(ax.c[2]), 7.f);
  M inv = wp::inverse(a);
  M should_be_i = wp::mul(a, inv);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(F(should_be_i.c[r][c]), r == c ? 1.f : 0.f, 5e-3f);
  EXPECT_EQ(wp::argmax(vec_t<3, wp::half>{{H(1.f), H(4.f), H(4.f)}}), 1u);
  EXPECT_NEAR(F(wp::norm_l2(x)), std::sqrt(6.f), 2e-3f);
}

}  // namespace

// Adjoints of the matrix builtins (warpd/native/adjoint/adj_mat.h) against
// float64 central finite differences, and in float32/half/bfloat16 against
// float64.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "adjoint_cases.h"
#include "adjoint_test_util.h"
#include "gtest/gtest.h"
#include "warpd/native/adjoint/adj_mat.h"

namespace warpd_adjoint_test {

// n coordinates with magnitudes in [0.5, 2] and mixed signs, a different
// sequence per seed.
std::vector<double> Spread(int n, int seed) {
  std::vector<double> out;
  for (int k = 0; k < n; ++k) {
    const double m = 0.5 + std::fmod(0.618034 * (k + 1) * (seed + 3) + 0.1 * seed, 1.5);
    out.push_back(((k * 7 + seed) % 3 == 0) ? -m : m);
  }
  return out;
}

std::vector<double> Concat(std::vector<double> a, const std::vector<double>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A well-conditioned N x N matrix: 3 I plus Spread.
std::vector<double> Conditioned(int n, int seed) {
  std::vector<double> m = Spread(n * n, seed);
  for (int i = 0; i < n; ++i) m[i * n + i] += (m[i * n + i] > 0 ? 3 : -3);
  return m;
}

template <typename T, int R, int C>
void MatCasesOfShape(Suite<T>& s) {
  using M = wp::mat_t<R, C, T>;
  using VR = wp::vec_t<R, T>;
  using VC = wp::vec_t<C, T>;
  const int n = R * C;
  const std::vector<std::vector<double>> one = {Spread(n, 1), Spread(n, 2)};
  const std::vector<std::vector<double>> two = {Concat(Spread(n, 1), Spread(n, 2)),
                                                Concat(Spread(n, 3), Spread(n, 4))};
  const std::vector<std::vector<double>> with_scalar = {Concat(Spread(n, 1), {0.75}),
                                                        Concat({-1.25}, Spread(n, 2))};
  s.Add("add", +[](const M& a, const M& b) { return wp::add(a, b); },
        +[](const M& a, const M& b, const M&, M& aa, M& ab, const M& ar) { wp::adj_add(a, b, aa, ab, ar); }, two);
  s.Add("sub", +[](const M& a, const M& b) { return wp::sub(a, b); },
        +[](const M& a, const M& b, const M&, M& aa, M& ab, const M& ar) { wp::adj_sub(a, b, aa, ab, ar); }, two);
  s.Add("neg", +[](const M& a) { return wp::neg(a); },
        +[](const M& a, const M&, M& aa, const M& ar) { wp::adj_neg(a, aa, ar); }, one);
  s.Add("pos", +[](const M& a) { return wp::pos(a); },
        +[](const M& a, const M&, M& aa, const M& ar) { wp::adj_pos(a, aa, ar); }, one);
  s.Add("cw_mul", +[](const M& a, const M& b) { return wp::cw_mul(a, b); },
        +[](const M& a, const M& b, const M&, M& aa, M& ab, const M& ar) { wp::adj_cw_mul(a, b, aa, ab, ar); },
        two);
  s.Add("cw_div", +[](const M& a, const M& b) { return wp::cw_div(a, b); },
        +[](const M& a, const M& b, const M& r, M& aa, M& ab, const M& ar) { wp::adj_cw_div(a, b, r, aa, ab, ar); },
        two);
  s.Add("mul", +[](const M& a, const T& t) { return wp::mul(a, t); },
        +[](const M& a, const T& t, const M&, M& aa, T& at, const M& ar) { wp::adj_mul(a, t, aa, at, ar); },
        with_scalar);
  s.Add("mul", +[](const T& t, const M& a) { return wp::mul(t, a); },
        +[](const T& t, const M& a, const M&, T& at, M& aa, const M& ar) { wp::adj_mul(t, a, at, aa, ar); },
        with_scalar);
  s.Add("div", +[](const M& a, const T& t) { return wp::div(a, t); },
        +[](const M& a, const T& t, const M&, M& aa, T& at, const M& ar) { wp::adj_div(a, t, aa, at, ar); },
        with_scalar);
  s.Add("div", +[](const T& t, const M& a) { return wp::div(t, a); },
        +[](const T& t, const M& a, const M&, T& at, M& aa, const M& ar) { wp::adj_div(t, a, at, aa, ar); },
        with_scalar);
  s.Add("div_approx", +[](const M& a, const T& t) { return wp::div_approx(a, t); },
        +[](const M& a, const T& t, const M&, M& aa, T& at, const M& ar) { wp::adj_div_approx(a, t, aa, at, ar); },
        with_scalar);
  s.Add("div_approx", +[](const T& t, const M& a) { return wp::div_approx(t, a); },
        +[](const T& t, const M& a, const M&, T& at, M& aa, const M& ar) { wp::adj_div_approx(t, a, at, aa, ar); },
        with_scalar);
  s.Add("lerp", +[](const M& a, const M& b, const T& t) { return wp::lerp(a, b, t); },
        +[](const M& a, const M& b, const T& t, const M&, M& aa, M& ab, T& at, const M& ar) {
          wp::adj_lerp(a, b, t, aa, ab, at, ar);
        },
        {Concat(Concat(Spread(n, 1), Spread(n, 2)), {0.375})});
  s.Add("ddot", +[](const M& a, const M& b) { return wp::ddot(a, b); },
        +[](const M& a, const M& b, const T&, M& aa, M& ab, const T& ar) { wp::adj_ddot(a, b, aa, ab, ar); }, two);
  s.Add("transpose", +[](const M& a) { return wp::transpose(a); },
        +[](const M& a, const wp::mat_t<C, R, T>&, M& aa, const wp::mat_t<C, R, T>& ar) {
          wp::adj_transpose(a, aa, ar);
        },
        one);
  s.Add("outer", +[](const VR& a, const VC& b) { return wp::outer(a, b); },
        +[](const VR& a, const VC& b, const M&, VR& aa, VC& ab, const M& ar) { wp::adj_outer(a, b, aa, ab, ar); },
        {Spread(R + C, 5)});
  s.Add("mul", +[](const M& a, const VC& v) { return wp::mul(a, v); },
        +[](const M& a, const VC& v, const VR&, M& aa, VC& av, const VR& ar) { wp::adj_mul(a, v, aa, av, ar); },
        {Concat(Spread(n, 1), Spread(C, 6))});
  s.Add("mul", +[](const VR& v, const M& a) { return wp::mul(v, a); },
        +[](const VR& v, const M& a, const VC&, VR& av, M& aa, const VC& ar) { wp::adj_mul(v, a, av, aa, ar); },
        {Concat(Spread(R, 6), Spread(n, 1))});
  using MB = wp::mat_t<C, 2, T>;
  using MR = wp::mat_t<R, 2, T>;
  s.Add("mul", +[](const M& a, const MB& b) { return wp::mul(a, b); },
        +[](const M& a, const MB& b, const MR&, M& aa, MB& ab, const MR& ar) { wp::adj_mul(a, b, aa, ab, ar); },
        {Concat(Spread(n, 1), Spread(C * 2, 7))});
  s.Add("where", +[](const bool& c, const M& a, const M& b) { return wp::where(c, a, b); },
        +[](const bool& c, const M& a, const M& b, const M&, bool& ac, M& aa, M& ab, const M& ar) {
          wp::adj_where(c, a, b, ac, aa, ab, ar);
        },
        {Concat({1.0}, two[0]), Concat({0.0}, two[0])});
}

template <typename T, int N>
void SquareCases(Suite<T>& s) {
  using M = wp::mat_t<N, N, T>;
  using V = wp::vec_t<N, T>;
  const std::vector<std::vector<double>> cond = {Conditioned(N, 1), Conditioned(N, 2)};
  s.Add("trace", +[](const M& a) { return wp::trace(a); },
        +[](const M& a, const T&, M& aa, const T& ar) { wp::adj_trace(a, aa, ar); }, cond);
  s.Add("diag", +[](const V& d) { return wp::diag(d); },
        +[](const V& d, const M&, V& ad, const M& ar) { wp::adj_diag(d, ad, ar); }, {Spread(N, 3)});
  s.Add("get_diag", +[](const M& a) { return wp::get_diag(a); },
        +[](const M& a, const V&, M& aa, const V& ar) { wp::adj_get_diag(a, aa, ar); }, cond);
  s.Add("determinant", +[](const M& a) { return wp::determinant(a); },
        +[](const M& a, const T&, M& aa, const T& ar) { wp::adj_determinant(a, aa, ar); },
        {Conditioned(N, 1), Spread(N * N, 4)});
  s.Add("inverse", +[](const M& a) { return wp::inverse(a); },
        +[](const M& a, const M& r, M& aa, const M& ar) { wp::adj_inverse(a, r, aa, ar); }, cond);
  s.Add("inverse_approx", +[](const M& a) { return wp::inverse_approx(a); },
        +[](const M& a, const M& r, M& aa, const M& ar) { wp::adj_inverse_approx(a, r, aa, ar); }, cond);
}

template <typename T>
void MatCases(Suite<T>& s) {
  MatCasesOfShape<T, 2, 2>(s);
  MatCasesOfShape<T, 3, 3>(s);
  MatCasesOfShape<T, 4, 4>(s);
  MatCasesOfShape<T, 2, 3>(s);
  SquareCases<T, 2>(s);
  SquareCases<T, 3>(s);
  SquareCases<T, 4>(s);
  using V3 = wp::vec_t<3, T>;
  using M3 = wp::mat_t<3, 3, T>;
  s.Add("skew", +[](const V3& v) { return wp::skew(v); },
        +[](const V3& v, const M3&, V3& av, const M3& ar) { wp::adj_skew(v, av, ar); }, {Spread(3, 2)});
}

void MatFamilyCases(Suite<double>& s) {
  MatCases<double>(s);
  DecompFamilyCases(s);
}

WARPD_ADJOINT_SUITES(AdjointMatTest, MatCases)
WARPD_ADJOINT_LOWP_SUITES(AdjointMatTest, MatCases)

void MatFamilyExplicitChecks(std::set<std::string>& covered) {
  // determinant's gradient is the cofactor matrix, also where A is singular.
  const wp::mat33d singular{{{1, 2, 3}, {2, 4, 6}, {0, 1, 1}}};
  wp::mat33d adj{};
  wp::adj_determinant(singular, adj, 1.0);
  const wp::mat33d want{{{-2, -2, 2}, {1, 1, -1}, {0, 0, 0}}};
  EXPECT_TRUE(wp::eq(adj, want));
  covered.insert("determinant");
  DecompExplicitChecks(covered);
}

TEST(AdjointMatTest, DeterminantAtASingularMatrix) {
  std::set<std::string> covered;
  MatFamilyExplicitChecks(covered);
}

}  // namespace warpd_adjoint_test

// Adjoints of the vector builtins (warpd/native/adjoint/adj_vec.h) against
// float64 central finite differences, in float32/half/bfloat16 against
// float64, and Warp's choices at the non-smooth points.
#include <set>
#include <string>

#include "adjoint_cases.h"
#include "adjoint_test_util.h"
#include "gtest/gtest.h"
#include "warpd/native/adjoint/adj_vec.h"

namespace warpd_adjoint_test {

// Vector points: a, b (3 components each) and sometimes a scalar.
const std::vector<std::vector<double>> kTwoVec3 = {{0.3, -1.7, 2.0, 0.25, 1.5, -0.5},
                                                   {-2.0, 0.5, 1.25, 3.0, -1.0, 0.75}};

template <typename T, int N>
void VecCasesOfLength(Suite<T>& s, const std::vector<std::vector<double>>& two_vecs,
                      const std::vector<std::vector<double>>& vec_scalar,
                      const std::vector<std::vector<double>>& one_vec) {
  using V = wp::vec_t<N, T>;
  s.Add("add", +[](const V& a, const V& b) { return wp::add(a, b); },
        +[](const V& a, const V& b, const V&, V& aa, V& ab, const V& ar) { wp::adj_add(a, b, aa, ab, ar); },
        two_vecs);
  s.Add("sub", +[](const V& a, const V& b) { return wp::sub(a, b); },
        +[](const V& a, const V& b, const V&, V& aa, V& ab, const V& ar) { wp::adj_sub(a, b, aa, ab, ar); },
        two_vecs);
  s.Add("neg", +[](const V& a) { return wp::neg(a); },
        +[](const V& a, const V&, V& aa, const V& ar) { wp::adj_neg(a, aa, ar); }, one_vec);
  s.Add("pos", +[](const V& a) { return wp::pos(a); },
        +[](const V& a, const V&, V& aa, const V& ar) { wp::adj_pos(a, aa, ar); }, one_vec);
  s.Add("abs", +[](const V& a) { return wp::abs(a); },
        +[](const V& a, const V&, V& aa, const V& ar) { wp::adj_abs(a, aa, ar); }, one_vec);
  s.Add("min", +[](const V& a, const V& b) { return wp::min(a, b); },
        +[](const V& a, const V& b, const V&, V& aa, V& ab, const V& ar) { wp::adj_min(a, b, aa, ab, ar); },
        two_vecs);
  s.Add("max", +[](const V& a, const V& b) { return wp::max(a, b); },
        +[](const V& a, const V& b, const V&, V& aa, V& ab, const V& ar) { wp::adj_max(a, b, aa, ab, ar); },
        two_vecs);
  s.Add("min", +[](const V& a) { return wp::min(a); },
        +[](const V& a, const T&, V& aa, const T& ar) { wp::adj_min(a, aa, ar); }, one_vec);
  s.Add("max", +[](const V& a) { return wp::max(a); },
        +[](const V& a, const T&, V& aa, const T& ar) { wp::adj_max(a, aa, ar); }, one_vec);
  s.Add("cw_mul", +[](const V& a, const V& b) { return wp::cw_mul(a, b); },
        +[](const V& a, const V& b, const V&, V& aa, V& ab, const V& ar) { wp::adj_cw_mul(a, b, aa, ab, ar); },
        two_vecs);
  s.Add("cw_div", +[](const V& a, const V& b) { return wp::cw_div(a, b); },
        +[](const V& a, const V& b, const V& r, V& aa, V& ab, const V& ar) {
          wp::adj_cw_div(a, b, r, aa, ab, ar);
        },
        two_vecs);
  s.Add("mul", +[](const V& a, const T& t) { return wp::mul(a, t); },
        +[](const V& a, const T& t, const V&, V& aa, T& at, const V& ar) { wp::adj_mul(a, t, aa, at, ar); },
        vec_scalar);
  s.Add("mul", +[](const T& t, const V& a) { return wp::mul(t, a); },
        +[](const T& t, const V& a, const V&, T& at, V& aa, const V& ar) { wp::adj_mul(t, a, at, aa, ar); },
        vec_scalar);  // the scalar first: the point's first coordinate
  s.Add("div", +[](const V& a, const T& t) { return wp::div(a, t); },
        +[](const V& a, const T& t, const V&, V& aa, T& at, const V& ar) { wp::adj_div(a, t, aa, at, ar); },
        vec_scalar);
  s.Add("div", +[](const T& t, const V& a) { return wp::div(t, a); },
        +[](const T& t, const V& a, const V&, T& at, V& aa, const V& ar) { wp::adj_div(t, a, at, aa, ar); },
        vec_scalar);
  s.Add("div_approx", +[](const V& a, const T& t) { return wp::div_approx(a, t); },
        +[](const V& a, const T& t, const V&, V& aa, T& at, const V& ar) {
          wp::adj_div_approx(a, t, aa, at, ar);
        },
        vec_scalar);
  s.Add("div_approx", +[](const T& t, const V& a) { return wp::div_approx(t, a); },
        +[](const T& t, const V& a, const V&, T& at, V& aa, const V& ar) {
          wp::adj_div_approx(t, a, at, aa, ar);
        },
        vec_scalar);
  s.Add("dot", +[](const V& a, const V& b) { return wp::dot(a, b); },
        +[](const V& a, const V& b, const T&, V& aa, V& ab, const T& ar) { wp::adj_dot(a, b, aa, ab, ar); },
        two_vecs);
  s.Add("length", +[](const V& a) { return wp::length(a); },
        +[](const V& a, const T& r, V& aa, const T& ar) { wp::adj_length(a, r, aa, ar); }, one_vec);
  s.Add("length_sq", +[](const V& a) { return wp::length_sq(a); },
        +[](const V& a, const T&, V& aa, const T& ar) { wp::adj_length_sq(a, aa, ar); }, one_vec);
  s.Add("normalize", +[](const V& a) { return wp::normalize(a); },
        +[](const V& a, const V& r, V& aa, const V& ar) { wp::adj_normalize(a, r, aa, ar); }, one_vec);
  s.Add("lerp", +[](const V& a, const V& b, const T& t) { return wp::lerp(a, b, t); },
        +[](const V& a, const V& b, const T& t, const V&, V& aa, V& ab, T& at, const V& ar) {
          wp::adj_lerp(a, b, t, aa, ab, at, ar);
        },
        [&] {
          std::vector<std::vector<double>> pts = two_vecs;
          for (auto& p : pts) p.push_back(0.375);
          return pts;
        }());
  s.Add("norm_l1", +[](const V& a) { return wp::norm_l1(a); },
        +[](const V& a, const T&, V& aa, const T& ar) { wp::adj_norm_l1(a, aa, ar); }, one_vec);
  s.Add("norm_l2", +[](const V& a) { return wp::norm_l2(a); },
        +[](const V& a, const T&, V& aa, const T& ar) { wp::adj_norm_l2(a, aa, ar); }, one_vec);
  // norm_huber on both sides of |v| = delta (|v| is 1.5 to 3.5 at these points).
  s.Add("norm_huber", +[](const V& a, const T& d) { return wp::norm_huber(a, d); },
        +[](const V& a, const T& d, const T&, V& aa, T& ad, const T& ar) { wp::adj_norm_huber(a, d, aa, ad, ar); },
        [&] {
          std::vector<std::vector<double>> pts;
          for (const auto& p : one_vec) {
            for (double delta : {1.0, 5.0}) {
              pts.push_back(p);
              pts.back().push_back(delta);
            }
          }
          return pts;
        }());
  s.Add("norm_pseudo_huber", +[](const V& a, const T& d) { return wp::norm_pseudo_huber(a, d); },
        +[](const V& a, const T& d, const T&, V& aa, T& ad, const T& ar) {
          wp::adj_norm_pseudo_huber(a, d, aa, ad, ar);
        },
        vec_scalar);
  s.Add("smooth_normalize", +[](const V& a, const T& d) { return wp::smooth_normalize(a, d); },
        +[](const V& a, const T& d, const V&, V& aa, T& ad, const V& ar) {
          wp::adj_smooth_normalize(a, d, aa, ad, ar);
        },
        vec_scalar);
  s.Add("where", +[](const bool& c, const V& a, const V& b) { return wp::where(c, a, b); },
        +[](const bool& c, const V& a, const V& b, const V&, bool& ac, V& aa, V& ab, const V& ar) {
          wp::adj_where(c, a, b, ac, aa, ab, ar);
        },
        [&] {
          std::vector<std::vector<double>> pts;
          for (double c : {0.0, 1.0}) {
            pts.push_back({c});
            pts.back().insert(pts.back().end(), two_vecs[0].begin(), two_vecs[0].end());
          }
          return pts;
        }());
}

template <typename T>
void VecCases(Suite<T>& s) {
  // Components distinct in magnitude and away from 0 (abs, min, max, norm_l1).
  VecCasesOfLength<T, 3>(s, kTwoVec3, {{0.3, -1.7, 2.0, 0.75}, {-2.0, 0.5, 1.25, -1.5}},
                         {{0.3, -1.7, 2.0}, {-2.0, 0.5, 1.25}, {1.5, -0.75, -2.5}});
  VecCasesOfLength<T, 2>(s, {{0.3, -1.7, 2.0, 0.25}}, {{0.3, -1.7, 1.25}}, {{0.5, -1.5}});
  VecCasesOfLength<T, 4>(s, {{0.3, -1.7, 2.0, 0.25, 1.5, -0.5, 0.75, -1.25}}, {{0.3, -1.7, 2.0, 0.6, -0.8}},
                         {{0.3, -1.7, 2.0, 0.6}});
  using V3 = wp::vec_t<3, T>;
  s.Add("cross", +[](const V3& a, const V3& b) { return wp::cross(a, b); },
        +[](const V3& a, const V3& b, const V3&, V3& aa, V3& ab, const V3& ar) { wp::adj_cross(a, b, aa, ab, ar); },
        kTwoVec3);
}

void VecFamilyCases(Suite<double>& s) { VecCases<double>(s); }

WARPD_ADJOINT_SUITES(AdjointVecTest, VecCases)
WARPD_ADJOINT_LOWP_SUITES(AdjointVecTest, VecCases)

// Warp's choices at the non-smooth points.
void VecExplicitChecks(std::set<std::string>&) {
  using V = wp::vec3d;
  const V zero{{0, 0, 0}}, g{{1, 2, 3}};
  V adj = zero;
  wp::adj_length(zero, 0.0, adj, 1.0);  // |0|: no gradient
  wp::adj_normalize(zero, zero, adj, g);
  wp::adj_norm_l2(zero, adj, 1.0);
  EXPECT_TRUE(wp::eq(adj, zero));
  wp::adj_abs(zero, adj, g);  // d|x|/dx = 1 at 0
  wp::adj_norm_l1(zero, adj, 1.0);
  EXPECT_TRUE(wp::eq(adj, V{{2, 3, 4}}));
  // min/max of a vector: the first smallest / largest element.
  V am = zero;
  wp::adj_min(V{{1, 1, 2}}, am, 1.0);
  wp::adj_max(V{{2, 1, 2}}, am, 1.0);
  EXPECT_TRUE(wp::eq(am, V{{2, 0, 0}}));
  // Element-wise min/max ties go to b.
  V aa = zero, ab = zero;
  wp::adj_min(g, g, aa, ab, g);
  wp::adj_max(g, g, aa, ab, g);
  EXPECT_TRUE(wp::eq(aa, zero));
  EXPECT_TRUE(wp::eq(ab, V{{2, 4, 6}}));
  // norm_huber at |v| = delta takes the quadratic side: no gradient for delta.
  V av = zero;
  double ad = 0;
  wp::adj_norm_huber(V{{0, 3, 4}}, 5.0, av, ad, 1.0);
  EXPECT_TRUE(wp::eq(av, V{{0, 3, 4}}));
  EXPECT_EQ(ad, 0.0);
  // Integer vectors carry no gradient.
  wp::vec_t<3, wp::int32> ia{{1, 2, 3}}, ib{{4, 5, 6}};
  const wp::vec_t<3, wp::int32> i0 = ia;
  wp::adj_add(i0, i0, ia, ib, i0);
  wp::adj_dot(i0, i0, ia, ib, 5);
  EXPECT_TRUE(wp::eq(ia, i0));
}

TEST(AdjointVecTest, WarpChoicesAtNonSmoothPoints) {
  std::set<std::string> covered;
  VecExplicitChecks(covered);
}

void VecFamilyExplicitChecks(std::set<std::string>& covered) { VecExplicitChecks(covered); }

}  // namespace warpd_adjoint_test

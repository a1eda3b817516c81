// Adjoints of the transformation and spatial builtins
// (warpd/native/adjoint/adj_transform.h, adj_spatial.h) against float64
// central finite differences and in float32/half/bfloat16 against float64.
#include <cmath>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "adjoint_cases.h"
#include "adjoint_test_util.h"
#include "gtest/gtest.h"
#include "warpd/native/adjoint/adj_spatial.h"
#include "warpd/native/adjoint/adj_transform.h"

namespace warpd_adjoint_test {
namespace {

std::vector<double> Pt(std::initializer_list<std::vector<double>> parts) {
  std::vector<double> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Transforms (p, then a non-unit q).
const std::vector<double> kTa = {0.5, -1.2, 2.0, 0.3, -0.5, 0.4, 0.8};
const std::vector<double> kTb = {-0.7, 0.25, 1.1, -0.6, 0.2, 0.7, -0.35};
const std::vector<double> kX = {0.7, -1.3, 0.45};
const std::vector<double> kS6a = {0.3, -0.8, 1.2, 0.5, 0.9, -1.4};
const std::vector<double> kS6b = {-1.1, 0.6, 0.2, 0.75, -0.35, 1.3};

// A 4x4 [R diag(scale) p; bottom row]: R = quat_to_matrix(unit q).
std::vector<double> ComposedPoint(std::vector<double> q, const std::vector<double>& scale,
                                  const std::vector<double>& p) {
  double n = 0;
  for (double v : q) n += v * v;
  for (double& v : q) v /= std::sqrt(n);
  const wp::mat33d r = wp::quat_to_matrix(wp::quatd{{q[0], q[1], q[2], q[3]}});
  std::vector<double> out;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      if (i < 3 && j < 3) out.push_back(r.c[i][j] * scale[j]);
      else if (i < 3) out.push_back(p[i]);
      else out.push_back(j == 3 ? 1.0 : 0.1 * j);
    }
  return out;
}

std::vector<double> Spread16(int seed) {
  std::vector<double> out;
  for (int k = 0; k < 16; ++k) out.push_back(std::sin(1.3 * k + seed) * 1.5 + (k % 5 == 0 ? 2.0 : 0.0));
  return out;
}

}  // namespace

template <typename T>
void TransformCases(Suite<T>& s) {
  using X = wp::transform_t<T>;
  using Q = wp::quat_t<T>;
  using V = wp::vec_t<3, T>;
  using M4 = wp::mat_t<4, 4, T>;
  const std::vector<std::vector<double>> one = {kTa, kTb};
  const std::vector<std::vector<double>> two = {Pt({kTa, kTb}), Pt({kTb, kTa})};
  s.Add("add", +[](const X& a, const X& b) { return wp::add(a, b); },
        +[](const X& a, const X& b, const X&, X& aa, X& ab, const X& ar) { wp::adj_add(a, b, aa, ab, ar); }, two);
  s.Add("sub", +[](const X& a, const X& b) { return wp::sub(a, b); },
        +[](const X& a, const X& b, const X&, X& aa, X& ab, const X& ar) { wp::adj_sub(a, b, aa, ab, ar); }, two);
  s.Add("mul", +[](const X& a, const T& t) { return wp::mul(a, t); },
        +[](const X& a, const T& t, const X&, X& aa, T& at, const X& ar) { wp::adj_mul(a, t, aa, at, ar); },
        {Pt({kTa, {0.75}}), Pt({kTb, {-1.5}})});
  s.Add("mul", +[](const T& t, const X& a) { return wp::mul(t, a); },
        +[](const T& t, const X& a, const X&, T& at, X& aa, const X& ar) { wp::adj_mul(t, a, at, aa, ar); },
        {Pt({{0.75}, kTa}), Pt({{-1.5}, kTb})});
  s.Add("mul", +[](const X& a, const X& b) { return wp::mul(a, b); },
        +[](const X& a, const X& b, const X&, X& aa, X& ab, const X& ar) { wp::adj_mul(a, b, aa, ab, ar); }, two);
  s.Add("lerp", +[](const X& a, const X& b, const T& t) { return wp::lerp(a, b, t); },
        +[](const X& a, const X& b, const T& t, const X&, X& aa, X& ab, T& at, const X& ar) {
          wp::adj_lerp(a, b, t, aa, ab, at, ar);
        },
        {Pt({kTa, kTb, {0.375}})});
  s.Add("transform_multiply", +[](const X& a, const X& b) { return wp::transform_multiply(a, b); },
        +[](const X& a, const X& b, const X&, X& aa, X& ab, const X& ar) {
          wp::adj_transform_multiply(a, b, aa, ab, ar);
        },
        two);
  s.Add("transform_inverse", +[](const X& a) { return wp::transform_inverse(a); },
        +[](const X& a, const X&, X& aa, const X& ar) { wp::adj_transform_inverse(a, aa, ar); }, one);
  s.Add("transform_get_translation", +[](const X& a) { return wp::transform_get_translation(a); },
        +[](const X& a, const V&, X& aa, const V& ar) { wp::adj_transform_get_translation(a, aa, ar); }, one);
  s.Add("transform_get_rotation", +[](const X& a) { return wp::transform_get_rotation(a); },
        +[](const X& a, const Q&, X& aa, const Q& ar) { wp::adj_transform_get_rotation(a, aa, ar); }, one);
  // The setters write into xform: checked as the copy they make of it, whose
  // untouched part passes its adjoint through (the codegen's part) and whose
  // written part goes to the value (the native adjoint's part).
  s.Add("transform_set_translation",
        +[](const X& t, const V& p) {
          X r = t;
          wp::transform_set_translation(r, p);
          return r;
        },
        +[](const X& t, const V& p, const X&, X& at, V& ap, const X& ar) {
          wp::accumulate_adjoint(at.q, ar.q);
          wp::adj_transform_set_translation(t, p, ar, ap);
        },
        {Pt({kTa, kX})});
  s.Add("transform_set_rotation",
        +[](const X& t, const Q& q) {
          X r = t;
          wp::transform_set_rotation(r, q);
          return r;
        },
        +[](const X& t, const Q& q, const X&, X& at, Q& aq, const X& ar) {
          wp::accumulate_adjoint(at.p, ar.p);
          wp::adj_transform_set_rotation(t, q, ar, aq);
        },
        {Pt({kTa, {0.1, 0.2, -0.3, 0.9}})});
  const std::vector<std::vector<double>> t_x = {Pt({kTa, kX}), Pt({kTb, {-0.2, 0.9, 1.6}})};
  s.Add("transform_point", +[](const X& t, const V& x) { return wp::transform_point(t, x); },
        +[](const X& t, const V& x, const V&, X& at, V& ax, const V& ar) { wp::adj_transform_point(t, x, at, ax, ar); },
        t_x);
  s.Add("transform_vector", +[](const X& t, const V& x) { return wp::transform_vector(t, x); },
        +[](const X& t, const V& x, const V&, X& at, V& ax, const V& ar) {
          wp::adj_transform_vector(t, x, at, ax, ar);
        },
        t_x);
  const std::vector<std::vector<double>> m_x = {Pt({Spread16(1), kX}), Pt({Spread16(2), {-0.2, 0.9, 1.6}})};
  s.Add("transform_point", +[](const M4& m, const V& x) { return wp::transform_point(m, x); },
        +[](const M4& m, const V& x, const V&, M4& am, V& ax, const V& ar) {
          wp::adj_transform_point(m, x, am, ax, ar);
        },
        m_x);
  s.Add("transform_vector", +[](const M4& m, const V& x) { return wp::transform_vector(m, x); },
        +[](const M4& m, const V& x, const V&, M4& am, V& ax, const V& ar) {
          wp::adj_transform_vector(m, x, am, ax, ar);
        },
        m_x);
  s.Add("transform_compose",
        +[](const V& p, const Q& q, const V& sc) { return wp::transform_compose(p, q, sc); },
        +[](const V& p, const Q& q, const V& sc, const M4&, V& ap, Q& aq, V& asc, const M4& ar) {
          wp::adj_transform_compose(p, q, sc, ap, aq, asc, ar);
        },
        {Pt({kX, {0.3, -0.5, 0.4, 0.8}, {1.5, 0.5, -2.0}}), Pt({{1, 2, 3}, {-0.6, 0.2, 0.7, -0.35}, {1, 1, 1}})});
  s.Add("transform_to_matrix", +[](const X& t) { return wp::transform_to_matrix(t); },
        +[](const X& t, const M4&, X& at, const M4& ar) { wp::adj_transform_to_matrix(t, at, ar); }, one);
  // Rotations (with translation) taking each quat_from_matrix branch.
  const std::vector<std::vector<double>> rot4 = {
      ComposedPoint({0.3, -0.5, 0.4, 0.8}, {1, 1, 1}, kX), ComposedPoint({0.95, 0.2, -0.1, 0.15}, {1, 1, 1}, kX),
      ComposedPoint({0.1, -0.9, 0.25, 0.2}, {1, 1, 1}, {0, 1, 0}),
      ComposedPoint({-0.2, 0.15, 0.92, -0.1}, {1, 1, 1}, {2, 0, -1})};
  s.Add("transform_from_matrix", +[](const M4& m) { return wp::transform_from_matrix(m); },
        +[](const M4& m, const X&, M4& am, const X& ar) { wp::adj_transform_from_matrix(m, am, ar); }, rot4);
  using D = wp::tuple_t<V, Q, V>;
  s.Add("transform_decompose", +[](const M4& m) { return wp::transform_decompose(m); },
        +[](const M4& m, const D&, M4& am, const D& ar) { wp::adj_transform_decompose(m, am, ar); },
        {ComposedPoint({0.3, -0.5, 0.4, 0.8}, {1.5, 0.5, 2.0}, kX),
         ComposedPoint({0.95, 0.2, -0.1, 0.15}, {0.7, 1.2, 1.0}, kX),
         ComposedPoint({-0.2, 0.15, 0.92, -0.1}, {2.0, 2.0, 0.6}, {2, 0, -1}), Spread16(3)});
}

template <typename T>
void SpatialCases(Suite<T>& s) {
  using S = wp::vec_t<6, T>;
  using V = wp::vec_t<3, T>;
  using X = wp::transform_t<T>;
  using M3 = wp::mat_t<3, 3, T>;
  using M6 = wp::mat_t<6, 6, T>;
  const std::vector<std::vector<double>> one = {kS6a, kS6b};
  const std::vector<std::vector<double>> two = {Pt({kS6a, kS6b}), Pt({kS6b, kS6a})};
  s.Add("spatial_top", +[](const S& a) { return wp::spatial_top(a); },
        +[](const S& a, const V&, S& aa, const V& ar) { wp::adj_spatial_top(a, aa, ar); }, one);
  s.Add("spatial_bottom", +[](const S& a) { return wp::spatial_bottom(a); },
        +[](const S& a, const V&, S& aa, const V& ar) { wp::adj_spatial_bottom(a, aa, ar); }, one);
  s.Add("spatial_dot", +[](const S& a, const S& b) { return wp::spatial_dot(a, b); },
        +[](const S& a, const S& b, const T&, S& aa, S& ab, const T& ar) { wp::adj_spatial_dot(a, b, aa, ab, ar); },
        two);
  s.Add("spatial_cross", +[](const S& a, const S& b) { return wp::spatial_cross(a, b); },
        +[](const S& a, const S& b, const S&, S& aa, S& ab, const S& ar) {
          wp::adj_spatial_cross(a, b, aa, ab, ar);
        },
        two);
  s.Add("spatial_cross_dual", +[](const S& a, const S& b) { return wp::spatial_cross_dual(a, b); },
        +[](const S& a, const S& b, const S&, S& aa, S& ab, const S& ar) {
          wp::adj_spatial_cross_dual(a, b, aa, ab, ar);
        },
        two);
  s.Add("spatial_adjoint", +[](const M3& r, const M3& m) { return wp::spatial_adjoint(r, m); },
        +[](const M3& r, const M3& m, const M6&, M3& ar, M3& am, const M6& g) {
          wp::adj_spatial_adjoint(r, m, ar, am, g);
        },
        {Pt({{0.1, 0.2, 0.3, -0.4, 0.5, 0.6, 0.7, -0.8, 0.9}, {1, -1, 2, -2, 3, -3, 0.5, 0.25, 0.125}})});
  const std::vector<std::vector<double>> t_s = {Pt({kTa, kS6a}), Pt({kTb, kS6b})};
  s.Add("transform_twist", +[](const X& t, const S& x) { return wp::transform_twist(t, x); },
        +[](const X& t, const S& x, const S&, X& at, S& ax, const S& ar) { wp::adj_transform_twist(t, x, at, ax, ar); },
        t_s);
  s.Add("transform_wrench", +[](const X& t, const S& x) { return wp::transform_wrench(t, x); },
        +[](const X& t, const S& x, const S&, X& at, S& ax, const S& ar) {
          wp::adj_transform_wrench(t, x, at, ax, ar);
        },
        t_s);
  s.Add("velocity_at_point", +[](const S& qd, const V& r) { return wp::velocity_at_point(qd, r); },
        +[](const S& qd, const V& r, const V&, S& aqd, V& ar, const V& g) {
          wp::adj_velocity_at_point(qd, r, aqd, ar, g);
        },
        {Pt({kS6a, kX}), Pt({kS6b, {-0.2, 0.9, 1.6}})});
}

void TransformFamilyCases(Suite<double>& s) { TransformCases<double>(s); }
void SpatialFamilyCases(Suite<double>& s) { SpatialCases<double>(s); }
void TransformFamilyExplicitChecks(std::set<std::string>&) {}
void SpatialFamilyExplicitChecks(std::set<std::string>&) {}

WARPD_ADJOINT_SUITES(AdjointTransformTest, TransformCases)
WARPD_ADJOINT_SUITES(AdjointSpatialTest, SpatialCases)
WARPD_ADJOINT_LOWP_SUITES(AdjointTransformTest, TransformCases)
WARPD_ADJOINT_LOWP_SUITES(AdjointSpatialTest, SpatialCases)

}  // namespace warpd_adjoint_test

// Adjoints of the quaternion builtins (warpd/native/adjoint/adj_quat.h)
// against float64 central finite differences, in float32/half/bfloat16 against
// float64, and Warp's choices at the degenerate points.
#include <cmath>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "adjoint_cases.h"
#include "adjoint_test_util.h"
#include "gtest/gtest.h"
#include "warpd/native/adjoint/adj_quat.h"

namespace warpd_adjoint_test {
namespace {

// Concatenated coordinates.
std::vector<double> Pt(std::initializer_list<std::vector<double>> parts) {
  std::vector<double> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<double> Unit(std::vector<double> q) {
  double n = 0;
  for (double v : q) n += v * v;
  n = std::sqrt(n);
  for (double& v : q) v /= n;
  return q;
}

// Non-unit quaternions, w of either sign.
const std::vector<double> kQa = {0.3, -0.5, 0.4, 0.8};
const std::vector<double> kQb = {-0.6, 0.2, 0.7, -0.35};
const std::vector<double> kQc = {0.9, 0.15, -0.25, 0.4};
const std::vector<double> kV = {0.7, -1.3, 0.45};

// Row-major 3x3 (or 4x4, with `extra` in the fourth row and column) of
// quat_to_matrix(q), q normalized: a rotation.
std::vector<double> RotationPoint(const std::vector<double>& q, int n, double scale = 1) {
  const std::vector<double> u = Unit(q);
  const wp::quatd qd{{u[0], u[1], u[2], u[3]}};
  const wp::mat33d r = wp::quat_to_matrix(qd);
  std::vector<double> out;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (i < 3 && j < 3) out.push_back(r.c[i][j] * scale);
      else out.push_back(0.25 * (i + 1) - 0.5 * j);  // translation / bottom row
    }
  return out;
}

}  // namespace

template <typename T>
void QuatCases(Suite<T>& s) {
  using Q = wp::quat_t<T>;
  using V = wp::vec_t<3, T>;
  using M3 = wp::mat_t<3, 3, T>;
  using M4 = wp::mat_t<4, 4, T>;
  const std::vector<std::vector<double>> one = {kQa, kQb, kQc};
  const std::vector<std::vector<double>> two = {Pt({kQa, kQb}), Pt({kQb, kQc})};
  const std::vector<std::vector<double>> with_scalar = {Pt({kQa, {0.75}}), Pt({kQc, {-1.25}})};
  const std::vector<std::vector<double>> scalar_first = {Pt({{0.75}, kQa}), Pt({{-1.25}, kQb})};

  // Operators.
  s.Add("add", +[](const Q& a, const Q& b) { return wp::add(a, b); },
        +[](const Q& a, const Q& b, const Q&, Q& aa, Q& ab, const Q& ar) { wp::adj_add(a, b, aa, ab, ar); }, two);
  s.Add("sub", +[](const Q& a, const Q& b) { return wp::sub(a, b); },
        +[](const Q& a, const Q& b, const Q&, Q& aa, Q& ab, const Q& ar) { wp::adj_sub(a, b, aa, ab, ar); }, two);
  s.Add("neg", +[](const Q& a) { return wp::neg(a); },
        +[](const Q& a, const Q&, Q& aa, const Q& ar) { wp::adj_neg(a, aa, ar); }, one);
  s.Add("pos", +[](const Q& a) { return wp::pos(a); },
        +[](const Q& a, const Q&, Q& aa, const Q& ar) { wp::adj_pos(a, aa, ar); }, one);
  s.Add("mul", +[](const Q& a, const Q& b) { return wp::mul(a, b); },
        +[](const Q& a, const Q& b, const Q&, Q& aa, Q& ab, const Q& ar) { wp::adj_mul(a, b, aa, ab, ar); }, two);
  s.Add("mul", +[](const Q& a, const T& t) { return wp::mul(a, t); },
        +[](const Q& a, const T& t, const Q&, Q& aa, T& at, const Q& ar) { wp::adj_mul(a, t, aa, at, ar); },
        with_scalar);
  s.Add("mul", +[](const T& t, const Q& a) { return wp::mul(t, a); },
        +[](const T& t, const Q& a, const Q&, T& at, Q& aa, const Q& ar) { wp::adj_mul(t, a, at, aa, ar); },
        scalar_first);
  s.Add("div", +[](const Q& a, const T& t) { return wp::div(a, t); },
        +[](const Q& a, const T& t, const Q&, Q& aa, T& at, const Q& ar) { wp::adj_div(a, t, aa, at, ar); },
        with_scalar);
  s.Add("div", +[](const T& t, const Q& a) { return wp::div(t, a); },
        +[](const T& t, const Q& a, const Q&, T& at, Q& aa, const Q& ar) { wp::adj_div(t, a, at, aa, ar); },
        scalar_first);
  s.Add("div_approx", +[](const Q& a, const T& t) { return wp::div_approx(a, t); },
        +[](const Q& a, const T& t, const Q&, Q& aa, T& at, const Q& ar) { wp::adj_div_approx(a, t, aa, at, ar); },
        with_scalar);
  s.Add("div_approx", +[](const T& t, const Q& a) { return wp::div_approx(t, a); },
        +[](const T& t, const Q& a, const Q&, T& at, Q& aa, const Q& ar) { wp::adj_div_approx(t, a, at, aa, ar); },
        scalar_first);
  s.Add("lerp", +[](const Q& a, const Q& b, const T& t) { return wp::lerp(a, b, t); },
        +[](const Q& a, const Q& b, const T& t, const Q&, Q& aa, Q& ab, T& at, const Q& ar) {
          wp::adj_lerp(a, b, t, aa, ab, at, ar);
        },
        {Pt({kQa, kQb, {0.375}}), Pt({kQc, kQa, {1.5}})});

  // Vector Math on quaternions.
  s.Add("dot", +[](const Q& a, const Q& b) { return wp::dot(a, b); },
        +[](const Q& a, const Q& b, const T&, Q& aa, Q& ab, const T& ar) { wp::adj_dot(a, b, aa, ab, ar); }, two);
  s.Add("length", +[](const Q& a) { return wp::length(a); },
        +[](const Q& a, const T& r, Q& aa, const T& ar) { wp::adj_length(a, r, aa, ar); }, one);
  s.Add("length_sq", +[](const Q& a) { return wp::length_sq(a); },
        +[](const Q& a, const T&, Q& aa, const T& ar) { wp::adj_length_sq(a, aa, ar); }, one);
  s.Add("normalize", +[](const Q& a) { return wp::normalize(a); },
        +[](const Q& a, const Q&, Q& aa, const Q& ar) { wp::adj_normalize(a, aa, ar); }, one);

  // Rotations.
  s.Add("quat_inverse", +[](const Q& a) { return wp::quat_inverse(a); },
        +[](const Q& a, const Q&, Q& aa, const Q& ar) { wp::adj_quat_inverse(a, aa, ar); }, one);
  const std::vector<std::vector<double>> q_v = {Pt({kQa, kV}), Pt({kQb, {-0.2, 0.9, 1.6}})};
  s.Add("quat_rotate", +[](const Q& q, const V& v) { return wp::quat_rotate(q, v); },
        +[](const Q& q, const V& v, const V&, Q& aq, V& av, const V& ar) { wp::adj_quat_rotate(q, v, aq, av, ar); },
        q_v);
  s.Add("quat_rotate_inv", +[](const Q& q, const V& v) { return wp::quat_rotate_inv(q, v); },
        +[](const Q& q, const V& v, const V&, Q& aq, V& av, const V& ar) {
          wp::adj_quat_rotate_inv(q, v, aq, av, ar);
        },
        q_v);
  s.Add("quat_from_axis_angle", +[](const V& axis, const T& a) { return wp::quat_from_axis_angle(axis, a); },
        +[](const V& axis, const T& a, const Q&, V& aaxis, T& aa, const Q& ar) {
          wp::adj_quat_from_axis_angle(axis, a, aaxis, aa, ar);
        },
        {Pt({kV, {0.8}}), Pt({{0.0, 0.6, -0.8}, {-2.5}})});
  using AA = wp::tuple_t<V, T>;
  const std::vector<std::vector<double>> aa_points = {kQa, kQb, kQc};
  s.Add("quat_to_axis_angle", +[](const Q& q) { return wp::quat_to_axis_angle(q); },
        +[](const Q& q, const AA&, Q& aq, const AA& ar) { wp::adj_quat_to_axis_angle(q, aq, ar); }, aa_points);
  // The form with outputs: the adjoints of axis and angle come in.
  s.Add("quat_to_axis_angle",
        +[](const Q& q) {
          AA r;
          wp::quat_to_axis_angle(q, wp::tuple_get<0>(r), wp::tuple_get<1>(r));
          return r;
        },
        +[](const Q& q, const AA& r, Q& aq, const AA& ar) {
          wp::adj_quat_to_axis_angle(q, wp::tuple_get<0>(r), wp::tuple_get<1>(r), aq, wp::tuple_get<0>(ar),
                                     wp::tuple_get<1>(ar));
        },
        aa_points);
  s.Add("quat_rpy", +[](const T& r, const T& p, const T& y) { return wp::quat_rpy(r, p, y); },
        +[](const T& r, const T& p, const T& y, const Q&, T& ar, T& ap, T& ay, const Q& g) {
          wp::adj_quat_rpy(r, p, y, ar, ap, ay, g);
        },
        {{0.3, -0.7, 1.2}, {-2.1, 0.4, -0.9}});
  // Unit quaternions (slerp's domain), relative rotations with w of both signs.
  s.Add("quat_slerp", +[](const Q& a, const Q& b, const T& t) { return wp::quat_slerp(a, b, t); },
        +[](const Q& a, const Q& b, const T& t, const Q& r, Q& aa, Q& ab, T& at, const Q& ar) {
          wp::adj_quat_slerp(a, b, t, r, aa, ab, at, ar);
        },
        {Pt({Unit(kQa), Unit(kQc), {0.3}}), Pt({Unit(kQa), Unit(kQb), {0.7}}), Pt({kQb, kQc, {-0.4}})});

  // Matrices.
  s.Add("quat_to_matrix", +[](const Q& q) { return wp::quat_to_matrix(q); },
        +[](const Q& q, const M3&, Q& aq, const M3& ar) { wp::adj_quat_to_matrix(q, aq, ar); }, one);
  // Rotations taking each branch: trace >= 0, then the largest diagonal entry
  // 0, 1, 2 (rotations near 180 degrees about x, y, z); and a scaled one.
  const std::vector<std::vector<double>> rot_quats = {
      kQa, {0.95, 0.2, -0.1, 0.15}, {0.1, -0.9, 0.25, 0.2}, {-0.2, 0.15, 0.92, -0.1}};
  std::vector<std::vector<double>> m3_points, m4_points;
  for (const auto& q : rot_quats) {
    m3_points.push_back(RotationPoint(q, 3));
    m4_points.push_back(RotationPoint(q, 4));
  }
  m3_points.push_back(RotationPoint(kQb, 3, 1.3));
  s.Add("quat_from_matrix", +[](const M3& m) { return wp::quat_from_matrix(m); },
        +[](const M3& m, const Q&, M3& am, const Q& ar) { wp::adj_quat_from_matrix(m, am, ar); }, m3_points);
  s.Add("quat_from_matrix", +[](const M4& m) { return wp::quat_from_matrix(m); },
        +[](const M4& m, const Q&, M4& am, const Q& ar) { wp::adj_quat_from_matrix(m, am, ar); }, m4_points);

  // Euler angles and twist.
  using I = wp::int32;
  s.Add("quat_from_euler",
        +[](const V& e, const I& i, const I& j, const I& k) { return wp::quat_from_euler(e, i, j, k); },
        +[](const V& e, const I& i, const I& j, const I& k, const Q&, V& ae, I& ai, I& aj, I& ak, const Q& ar) {
          wp::adj_quat_from_euler(e, i, j, k, ae, ai, aj, ak, ar);
        },
        {Pt({{0.3, -0.7, 1.1}, {0, 1, 2}}), Pt({{0.3, -0.7, 1.1}, {2, 0, 1}}),
         Pt({{-1.2, 0.4, 0.9}, {0, 1, 0}}), Pt({{-1.2, 0.4, 0.9}, {-1, 0, -2}}),
         Pt({{0.5, 0.6, -0.4}, {1, 1, 2}})});
  const std::vector<double> qe = Unit(kQa), qf = Unit(kQb);
  s.Add("quat_to_euler",
        +[](const Q& q, const I& i, const I& j, const I& k) { return wp::quat_to_euler(q, i, j, k); },
        +[](const Q& q, const I& i, const I& j, const I& k, const V&, Q& aq, I& ai, I& aj, I& ak, const V& ar) {
          wp::adj_quat_to_euler(q, i, j, k, aq, ai, aj, ak, ar);
        },
        {Pt({qe, {0, 1, 2}}), Pt({qf, {2, 1, 0}}), Pt({qe, {1, 2, 0}}), Pt({qf, {0, 1, 0}}),
         Pt({qe, {2, 0, 2}}), Pt({kQc, {1, 0, 2}})});
  s.Add("quat_to_rpy", +[](const Q& q) { return wp::quat_to_rpy(q); },
        +[](const Q& q, const V&, Q& aq, const V& ar) { wp::adj_quat_to_rpy(q, aq, ar); },
        // The last one's pitch sine is clamped (2 (wy - zx) > 1): no pitch gradient.
        {Unit(kQa), Unit(kQb), kQc, {0.1, 0.9, 0.05, 0.9}});
  const std::vector<std::vector<double>> axis_q = {Pt({Unit({0.3, 0.8, -0.5}), kQa}),
                                                   Pt({Unit({-0.6, 0.1, 0.7}), kQb}), Pt({{0, 0, 1}, kQc})};
  s.Add("quat_twist", +[](const V& axis, const Q& q) { return wp::quat_twist(axis, q); },
        +[](const V& axis, const Q& q, const Q&, V& aaxis, Q& aq, const Q& ar) {
          wp::adj_quat_twist(axis, q, aaxis, aq, ar);
        },
        axis_q);
  s.Add("quat_twist_angle", +[](const V& axis, const Q& q) { return wp::quat_twist_angle(axis, q); },
        +[](const V& axis, const Q& q, const T&, V& aaxis, Q& aq, const T& ar) {
          wp::adj_quat_twist_angle(axis, q, aaxis, aq, ar);
        },
        axis_q);
  s.Add("quat_twist_angle_signed", +[](const V& axis, const Q& q) { return wp::quat_twist_angle_signed(axis, q); },
        +[](const V& axis, const Q& q, const T&, V& aaxis, Q& aq, const T& ar) {
          wp::adj_quat_twist_angle_signed(axis, q, aaxis, aq, ar);
        },
        axis_q);
}

void QuatFamilyCases(Suite<double>& s) { QuatCases<double>(s); }

WARPD_ADJOINT_SUITES(AdjointQuatTest, QuatCases)
WARPD_ADJOINT_LOWP_SUITES(AdjointQuatTest, QuatCases)

// Warp's choices where the forward is degenerate.
void QuatFamilyExplicitChecks(std::set<std::string>& covered) {
  const wp::quatd zero{{0, 0, 0, 0}};
  const wp::quatd g{{0.5, -1, 2, 0.25}};
  // normalize and length: no gradient at the zero quaternion.
  wp::quatd adj{{1, 2, 3, 4}};
  wp::adj_normalize(zero, adj, g);
  wp::adj_length(zero, 0.0, adj, 1.0);
  EXPECT_TRUE(wp::eq(adj, (wp::quatd{{1, 2, 3, 4}})));
  // quat_to_axis_angle: none when the imaginary part is zero, even for the angle.
  const wp::quatd ident{{0, 0, 0, -0.5}};
  wp::adj_quat_to_axis_angle(ident, adj, wp::tuple_make(wp::vec3d{{1, 1, 1}}, 1.0));
  EXPECT_TRUE(wp::eq(adj, (wp::quatd{{1, 2, 3, 4}})));
  // At w == 0 the angle 2 atan2(|v|, |w|) takes d|w|/dw = +1: d/dw = -2 / |v|.
  wp::quatd aw{{0, 0, 0, 0}};
  wp::adj_quat_to_axis_angle(wp::quatd{{0, 0.5, 0, 0}}, aw, wp::tuple_make(wp::vec3d{{0, 0, 0}}, 1.0));
  EXPECT_DOUBLE_EQ(aw.c[3], -4.0);
  covered.insert("normalize");
  covered.insert("length");
  covered.insert("quat_to_axis_angle");
}

TEST(AdjointQuatTest, WarpsChoicesAtDegeneratePoints) {
  std::set<std::string> covered;
  QuatFamilyExplicitChecks(covered);
}

}  // namespace warpd_adjoint_test

// Adjoints of the matrix decompositions (warpd/native/adjoint/adj_svd.h):
// the gradient of sum_k w_k output_k (random w, the suite's adj_ret) against
// float64 central differences of the forward at well-conditioned matrices,
// both forms (tuple and output arguments); float32, half and bfloat16
// against float64; and Warp's choices at degenerate points.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "adjoint_cases.h"
#include "adjoint_test_util.h"
#include "gtest/gtest.h"
#include "warpd/native/adjoint/adj_svd.h"

namespace warpd_adjoint_test {
namespace {

// Distinct singular values (about 2.2/1.3/0.7, 3.0/1.3/0.6, 1.8/1.5/1.2),
// determinants of both signs.
const std::vector<std::vector<double>> kSvd3Points = {
    {2.0, 0.3, -0.5, 0.1, -1.2, 0.4, 0.7, 0.2, 0.6},
    {-2.0, -0.3, 0.5, 0.1, -1.2, 0.4, 0.7, 0.2, 0.6},
    {-1.1, 0.6, 0.2, 0.4, 0.9, -1.3, 0.5, -0.8, 2.4},
    {0.3, 1.7, -0.2, 1.1, -0.4, 0.5, -0.6, 0.2, 1.3},
};
const std::vector<std::vector<double>> kSvd2Points = {
    {1.5, 0.4, -0.3, 0.8}, {0.2, -1.1, 0.9, 0.5}, {1.0, 2.0, 0.5, -0.7}};
// Symmetric matrices by (a00, a11, a22, a10, a20, a21); distinct eigenvalues.
const std::vector<std::vector<double>> kSymPoints = {{2.0, -1.0, 0.5, 0.3, -0.4, 0.7},
                                                     {1.0, 3.0, -2.0, 0.8, 0.2, -0.5}};

template <typename T>
wp::mat_t<3, 3, T> Symmetric(const wp::vec_t<6, T>& p) {
  wp::mat_t<3, 3, T> a;
  a.c[0][0] = p.c[0], a.c[1][1] = p.c[1], a.c[2][2] = p.c[2];
  a.c[1][0] = a.c[0][1] = p.c[3];
  a.c[2][0] = a.c[0][2] = p.c[4];
  a.c[2][1] = a.c[1][2] = p.c[5];
  return a;
}

// The adjoint of Symmetric: each off-diagonal parameter moves two entries.
template <typename T>
void AccumulateSymmetric(const wp::mat_t<3, 3, T>& adj_a, wp::vec_t<6, T>& adj_p) {
  const wp::vec_t<6, T> g{{adj_a.c[0][0], adj_a.c[1][1], adj_a.c[2][2], wp::add(adj_a.c[1][0], adj_a.c[0][1]),
                           wp::add(adj_a.c[2][0], adj_a.c[0][2]), wp::add(adj_a.c[2][1], adj_a.c[1][2])}};
  wp::accumulate_adjoint(adj_p, g);
}

template <typename T>
wp::mat_t<3, 3, T> Zero33() {
  wp::mat_t<3, 3, T> z;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) z.c[i][j] = T(0.0f);
  return z;
}

template <typename T>
void DecompCases(Suite<T>& s) {
  using M3 = wp::mat_t<3, 3, T>;
  using V3 = wp::vec_t<3, T>;
  using M2 = wp::mat_t<2, 2, T>;
  using V2 = wp::vec_t<2, T>;
  using V6 = wp::vec_t<6, T>;
  using Svd3 = wp::tuple_t<M3, V3, M3>;
  using Svd2 = wp::tuple_t<M2, V2, M2>;
  using Qr = wp::tuple_t<M3, M3>;
  using Eig = wp::tuple_t<M3, V3>;

  // svd3: the tuple form (takes the result) and the form with outputs.
  s.Add("svd3", +[](const M3& a) { return wp::svd3(a); },
        +[](const M3& a, const Svd3& r, M3& aa, const Svd3& ar) { wp::adj_svd3(a, r, aa, ar); }, kSvd3Points);
  s.Add("svd3",
        +[](const M3& a) {
          Svd3 r;
          wp::svd3(a, wp::tuple_get<0>(r), wp::tuple_get<1>(r), wp::tuple_get<2>(r));
          return r;
        },
        +[](const M3& a, const Svd3& r, M3& aa, const Svd3& ar) {
          wp::adj_svd3(a, wp::tuple_get<0>(r), wp::tuple_get<1>(r), wp::tuple_get<2>(r), aa, wp::tuple_get<0>(ar),
                       wp::tuple_get<1>(ar), wp::tuple_get<2>(ar));
        },
        kSvd3Points);

  s.Add("svd2", +[](const M2& a) { return wp::svd2(a); },
        +[](const M2& a, const Svd2& r, M2& aa, const Svd2& ar) { wp::adj_svd2(a, r, aa, ar); }, kSvd2Points);
  s.Add("svd2",
        +[](const M2& a) {
          Svd2 r;
          wp::svd2(a, wp::tuple_get<0>(r), wp::tuple_get<1>(r), wp::tuple_get<2>(r));
          return r;
        },
        +[](const M2& a, const Svd2& r, M2& aa, const Svd2& ar) {
          wp::adj_svd2(a, wp::tuple_get<0>(r), wp::tuple_get<1>(r), wp::tuple_get<2>(r), aa, wp::tuple_get<0>(ar),
                       wp::tuple_get<1>(ar), wp::tuple_get<2>(ar));
        },
        kSvd2Points);

  s.Add("qr3", +[](const M3& a) { return wp::qr3(a); },
        +[](const M3& a, const Qr& r, M3& aa, const Qr& ar) { wp::adj_qr3(a, r, aa, ar); }, kSvd3Points);
  s.Add("qr3",
        +[](const M3& a) {
          Qr r;
          wp::qr3(a, wp::tuple_get<0>(r), wp::tuple_get<1>(r));
          return r;
        },
        +[](const M3& a, const Qr& r, M3& aa, const Qr& ar) {
          wp::adj_qr3(a, wp::tuple_get<0>(r), wp::tuple_get<1>(r), aa, wp::tuple_get<0>(ar), wp::tuple_get<1>(ar));
        },
        kSvd3Points);

  // eig3 of symmetric matrices, moved symmetrically (Q reads only the lower
  // triangle; the adjoint, as Warp's, is the gradient for symmetric moves).
  s.Add("eig3", +[](const V6& p) { return wp::eig3(Symmetric(p)); },
        +[](const V6& p, const Eig& r, V6& ap, const Eig& ar) {
          M3 aa = Zero33<T>();
          wp::adj_eig3(Symmetric(p), r, aa, ar);
          AccumulateSymmetric(aa, ap);
        },
        kSymPoints);
  s.Add("eig3",
        +[](const V6& p) {
          Eig r;
          wp::eig3(Symmetric(p), wp::tuple_get<0>(r), wp::tuple_get<1>(r));
          return r;
        },
        +[](const V6& p, const Eig& r, V6& ap, const Eig& ar) {
          M3 aa = Zero33<T>();
          wp::adj_eig3(Symmetric(p), wp::tuple_get<0>(r), wp::tuple_get<1>(r), aa, wp::tuple_get<0>(ar),
                       wp::tuple_get<1>(ar));
          AccumulateSymmetric(aa, ap);
        },
        kSymPoints);
  // The eigenvalues alone, each entry of A moved on its own (at symmetric A):
  // d = diag(Q^T A Q) reads the whole of A and its gradient is exact there.
  s.Add("eig3", +[](const M3& a) { return wp::tuple_get<1>(wp::eig3(a)); },
        +[](const M3& a, const V3&, M3& aa, const V3& ad) {
          const Eig r = wp::eig3(a);
          wp::adj_eig3(a, wp::tuple_get<0>(r), wp::tuple_get<1>(r), aa, Zero33<T>(), ad);
        },
        {{2.0, 0.3, -0.4, 0.3, -1.0, 0.7, -0.4, 0.7, 0.5}, {1.0, 0.8, 0.2, 0.8, 3.0, -0.5, 0.2, -0.5, -2.0}});
}

}  // namespace

void DecompFamilyCases(Suite<double>& s) { DecompCases<double>(s); }

// float32's factors come from four Jacobi sweeps (about 1e-6 relative), and
// the singular-vector terms divide by sigma_i^2 - sigma_j^2; half and
// bfloat16 round the factors to 11 and 8 bits.
TEST(AdjointDecompTest, Float64MatchesFiniteDifferences) {
  Suite<double> s;
  DecompCases<double>(s);
}
TEST(AdjointDecompTest, Float32AgreesWithFloat64) {
  Suite<double> ref;
  ref.RoundPointsWith(&RoundAs<float>);
  DecompCases<double>(ref);
  Suite<float> s(&ref, 1e-4);
  DecompCases<float>(s);
}
TEST(AdjointDecompTest, HalfAgreesWithFloat64) {
  Suite<double> ref;
  ref.RoundPointsWith(&RoundAs<wp::half>);
  DecompCases<double>(ref);
  Suite<wp::half> s(&ref, 3e-2);
  DecompCases<wp::half>(s);
}
TEST(AdjointDecompTest, Bfloat16AgreesWithFloat64) {
  Suite<double> ref;
  ref.RoundPointsWith(&RoundAs<wp::bfloat16>);
  DecompCases<double>(ref);
  Suite<wp::bfloat16> s(&ref, 2e-1);
  DecompCases<wp::bfloat16>(s);
}

// Warp's choices where the decompositions are not differentiable.
void DecompExplicitChecks(std::set<std::string>& covered) {
  using wp::mat33d;
  using wp::vec3d;
  const mat33d zero = Zero33<double>();
  // svd3 of diag(2, 2, 1): sigma's gradient is U diag(adj_sigma) V^T, exact
  // even where singular values repeat; U's goes through the clamped
  // 1 / min(sigma_1^2 - sigma_0^2, -1e-12): large and finite, Warp's formula.
  {
    const mat33d a{{{2, 0, 0}, {0, 2, 0}, {0, 0, 1}}};
    mat33d u, v;
    vec3d sigma;
    wp::svd3(a, u, sigma, v);
    EXPECT_NEAR(sigma.c[0], 2, 1e-12);
    EXPECT_NEAR(sigma.c[1], 2, 1e-12);
    const vec3d adj_sigma{{1, 2, 3}};
    mat33d adj = zero;
    wp::adj_svd3(a, u, sigma, v, adj, zero, adj_sigma, zero);
    const mat33d want = wp::mul(u, wp::mul(wp::diag(adj_sigma), wp::transpose(v)));
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_NEAR(adj.c[i][j], want.c[i][j], 1e-12) << i << j;
    // adj_U = e_0 e_1^T: only the (0, 1) pair, clamped to -1e-12 (Warp's
    // F = 1 / min(s1^2 - s0^2, -eps)).
    mat33d adj_u = zero;
    adj_u.c[0][1] = 1;
    mat33d got = zero;
    wp::adj_svd3(a, u, sigma, v, got, adj_u, vec3d{{0, 0, 0}}, zero);
    const double f01 = 1 / std::min(sigma.c[1] * sigma.c[1] - sigma.c[0] * sigma.c[0], -1e-12);
    mat33d f = zero;
    f.c[0][1] = f01, f.c[1][0] = -f01;
    const double f02 = 1 / std::min(sigma.c[2] * sigma.c[2] - sigma.c[0] * sigma.c[0], -1e-12);
    const double f12 = 1 / std::min(sigma.c[2] * sigma.c[2] - sigma.c[1] * sigma.c[1], -1e-12);
    f.c[0][2] = f02, f.c[2][0] = -f02, f.c[1][2] = f12, f.c[2][1] = -f12;
    const mat33d ut = wp::transpose(u);
    const mat33d skew = wp::cw_mul(f, wp::sub(wp::mul(ut, adj_u), wp::mul(wp::transpose(adj_u), u)));
    const mat33d warp = wp::mul(wp::mul(u, wp::mul(skew, wp::diag(sigma))), wp::transpose(v));
    double scale = 0;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        EXPECT_TRUE(std::isfinite(got.c[i][j]));
        scale = std::max(scale, std::fabs(warp.c[i][j]));
      }
    EXPECT_GT(scale, 1e11);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_NEAR(got.c[i][j], warp.c[i][j], 1e-9 * scale) << i << j;
  }
  covered.insert("svd3");
  // svd2 of 2 I (sigma repeated): sigma's gradient exact, U's finite.
  {
    const wp::mat22d a{{{2, 0}, {0, 2}}};
    wp::mat22d u, v;
    wp::vec_t<2, double> sigma;
    wp::svd2(a, u, sigma, v);
    const wp::mat22d z2{{{0, 0}, {0, 0}}};
    wp::mat22d adj = z2;
    wp::adj_svd2(a, u, sigma, v, adj, z2, wp::vec_t<2, double>{{1, 2}}, z2);
    EXPECT_NEAR(adj.c[0][0], 1, 1e-12);
    EXPECT_NEAR(adj.c[1][1], 2, 1e-12);
    EXPECT_NEAR(adj.c[0][1], 0, 1e-12);
    EXPECT_NEAR(adj.c[1][0], 0, 1e-12);
    wp::mat22d got = z2;
    wp::adj_svd2(a, u, sigma, v, got, wp::mat22d{{{0, 1}, {0, 0}}}, wp::vec_t<2, double>{{0, 0}}, z2);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) EXPECT_TRUE(std::isfinite(got.c[i][j]));
    EXPECT_GT(std::fabs(got.c[0][1]) + std::fabs(got.c[1][0]), 1e11);  // 2 / 1e-12, Warp's clamp
  }
  covered.insert("svd2");
  // qr3 of a singular matrix (a zero column: the rotations are exact and
  // R = A): R^-1 is warpd's (and Warp's) 0, no gradient.
  {
    const mat33d a{{{1, 0, 2}, {0, 0, 3}, {0, 0, 1}}};
    mat33d q, r;
    wp::qr3(a, q, r);
    const mat33d ones{{{1, 1, 1}, {1, 1, 1}, {1, 1, 1}}};
    mat33d adj = zero;
    wp::adj_qr3(a, q, r, adj, ones, ones);
    EXPECT_TRUE(wp::eq(wp::inverse(r), zero));
    EXPECT_TRUE(wp::eq(adj, zero));
  }
  covered.insert("qr3");
  // eig3 of I (eigenvalues repeated): with adj_Q = 0 only Q diag(adj_d) Q^T
  // (Warp's shortcut); with adj_Q != 0 the gaps are taken as +1e-6 (Warp
  // divides by the exact 0) and the gradient stays finite.
  {
    const mat33d a{{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}};
    mat33d q;
    vec3d d;
    wp::eig3(a, q, d);
    mat33d adj = zero;
    wp::adj_eig3(a, q, d, adj, zero, vec3d{{1, 2, 3}});
    const mat33d want = wp::mul(q, wp::mul(wp::diag(vec3d{{1, 2, 3}}), wp::transpose(q)));
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_NEAR(adj.c[i][j], want.c[i][j], 1e-12);
    mat33d adj_q = zero;
    adj_q.c[0][1] = 1;
    mat33d got = zero;
    wp::adj_eig3(a, q, d, got, adj_q, vec3d{{0, 0, 0}});
    double largest = 0;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        EXPECT_TRUE(std::isfinite(got.c[i][j]));
        largest = std::max(largest, std::fabs(got.c[i][j]));
      }
    // Each off-diagonal entry of Q^T adj_Q divided by +-1e-6.
    EXPECT_GT(largest, 1e5);
    EXPECT_LT(largest, 1e7);
  }
  covered.insert("eig3");
}

TEST(AdjointDecompTest, WarpsChoicesAtDegeneratePoints) {
  std::set<std::string> covered;
  DecompExplicitChecks(covered);
}

}  // namespace warpd_adjoint_test

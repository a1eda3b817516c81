// Adjoints of Perlin noise (warpd/native/adjoint/adj_noise.h): noise, pnoise
// and curlnoise against central differences of their float32 forwards.
//
// The forwards exist only in float32, so the float64 suite (whose steps are
// 1e-5) does not apply: here the step is 2^-9 and the difference quotient
// divides by the step as float32 represents it; the noise is C2 (smooth
// Hessians for curlnoise), so the truncation error is about 1e-5 relative and
// float32 rounding of the values about 1e-4. Each check also calls the
// adjoint twice and expects the second call to add what the first added.
#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "adjoint_cases.h"
#include "adjoint_test_util.h"
#include "gtest/gtest.h"
#include "warpd/native/adjoint/adj_noise.h"

namespace warpd_adjoint_test {
namespace {

using Forward = std::function<std::vector<double>(const std::vector<float>&)>;
// adj(x, adj_ret, adj_x): the adjoint, accumulating into adj_x.
using Adjoint = std::function<void(const std::vector<float>&, const std::vector<float>&, std::vector<float>&)>;

void CheckGradient(const std::string& name, int outputs, const Forward& f, const Adjoint& adj,
                   const std::vector<std::vector<float>>& points) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(name)));
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (size_t p = 0; p < points.size(); ++p) {
    SCOPED_TRACE(name + " at point " + std::to_string(p));
    const std::vector<float>& x = points[p];
    std::vector<float> w(outputs), start(x.size());
    for (float& v : w) v = unit(rng);
    for (float& v : start) v = unit(rng);
    std::vector<float> once = start;
    adj(x, w, once);
    std::vector<float> twice = once;
    adj(x, w, twice);
    auto objective = [&](const std::vector<float>& at) {
      const std::vector<double> r = f(at);
      double s = 0;
      for (int j = 0; j < outputs; ++j) s += w[j] * r[j];
      return s;
    };
    std::vector<double> fd(x.size());
    double scale = 1;
    for (size_t k = 0; k < x.size(); ++k) {
      const float h = 1.0f / 512;
      std::vector<float> up = x, down = x;
      up[k] += h;
      down[k] -= h;
      fd[k] = (objective(up) - objective(down)) / (static_cast<double>(up[k]) - down[k]);
      scale = std::max(scale, std::fabs(fd[k]));
    }
    for (size_t k = 0; k < x.size(); ++k) {
      const double delta = static_cast<double>(once[k]) - start[k];
      EXPECT_NEAR(delta, fd[k], 2e-3 * scale) << "d/dx" << k << ": adjoint " << delta << ", finite differences "
                                              << fd[k];
      EXPECT_NEAR(static_cast<double>(twice[k]) - once[k], delta, 1e-5 * (1 + std::fabs(twice[k])))
          << "component " << k << " is not accumulated";
    }
  }
}

template <int N>
wp::vec_t<N, float> Vec(const std::vector<float>& x) {
  wp::vec_t<N, float> v;
  for (int k = 0; k < N; ++k) v.c[k] = x[k];
  return v;
}
template <int N>
void AddTo(std::vector<float>& out, const wp::vec_t<N, float>& v) {
  for (int k = 0; k < N; ++k) out[k] = v.c[k];
}
template <int N>
std::vector<double> Doubles(const wp::vec_t<N, float>& v) {
  std::vector<double> out(N);
  for (int k = 0; k < N; ++k) out[k] = v.c[k];
  return out;
}

// Points across several cells, both signs, off the lattice.
std::vector<std::vector<float>> Points(int n) {
  const float coords[] = {0.37f, -1.62f, 2.91f, 13.43f, -7.18f, 0.83f, 5.55f, -0.21f};
  std::vector<std::vector<float>> out;
  for (int p = 0; p < 5; ++p) {
    std::vector<float> x(n);
    for (int k = 0; k < n; ++k) x[k] = coords[(p * 3 + k * 5) % 8] + 0.11f * k;
    out.push_back(x);
  }
  return out;
}

const uint32_t kStates[] = {42u, 2654435761u};

template <int N>
void NoiseChecks() {
  for (uint32_t state : kStates) {
    const std::string tag = std::to_string(N) + "-D, state " + std::to_string(state);
    CheckGradient(
        "noise " + tag, 1,
        [&](const std::vector<float>& x) { return std::vector<double>{wp::noise(state, Vec<N>(x))}; },
        [&](const std::vector<float>& x, const std::vector<float>& w, std::vector<float>& a) {
          wp::vec_t<N, float> adj = Vec<N>(a);
          uint32_t adj_state = 0;
          wp::adj_noise(state, Vec<N>(x), adj_state, adj, w[0]);
          AddTo<N>(a, adj);
        },
        Points(N));
  }
}

// Periods 4 (points on both sides of the wrap at 4) and 3.
template <int N>
std::vector<double> PnoiseAt(uint32_t state, const std::vector<float>& x);
template <>
std::vector<double> PnoiseAt<2>(uint32_t state, const std::vector<float>& x) {
  return {wp::pnoise(state, Vec<2>(x), 4, 3)};
}
template <>
std::vector<double> PnoiseAt<3>(uint32_t state, const std::vector<float>& x) {
  return {wp::pnoise(state, Vec<3>(x), 4, 3, 4)};
}
template <>
std::vector<double> PnoiseAt<4>(uint32_t state, const std::vector<float>& x) {
  return {wp::pnoise(state, Vec<4>(x), 4, 3, 4, 3)};
}
void AdjPnoise(uint32_t state, const std::vector<float>& x, float w, std::vector<float>& a) {
  uint32_t as = 0;
  int32_t p0 = 0, p1 = 0, p2 = 0, p3 = 0;
  if (x.size() == 2) {
    wp::vec2f adj = Vec<2>(a);
    wp::adj_pnoise(state, Vec<2>(x), 4, 3, as, adj, p0, p1, w);
    AddTo<2>(a, adj);
  } else if (x.size() == 3) {
    wp::vec3f adj = Vec<3>(a);
    wp::adj_pnoise(state, Vec<3>(x), 4, 3, 4, as, adj, p0, p1, p2, w);
    AddTo<3>(a, adj);
  } else {
    wp::vec4f adj = Vec<4>(a);
    wp::adj_pnoise(state, Vec<4>(x), 4, 3, 4, 3, as, adj, p0, p1, p2, p3, w);
    AddTo<4>(a, adj);
  }
}

template <int N>
void PnoiseChecks() {
  std::vector<std::vector<float>> points = Points(N);
  std::vector<float> wrap(N, 3.999f);  // the cell whose upper corner wraps to 0
  wrap[0] = 4.001f;
  points.push_back(wrap);
  for (uint32_t state : kStates) {
    CheckGradient(
        "pnoise " + std::to_string(N) + "-D", 1, [&](const std::vector<float>& x) { return PnoiseAt<N>(state, x); },
        [&](const std::vector<float>& x, const std::vector<float>& w, std::vector<float>& a) {
          AdjPnoise(state, x, w[0], a);
        },
        points);
  }
}

// curlnoise with all arguments, and each shorter form (Warp's defaults).
template <int N, int M>
void CurlChecks() {
  using VN = wp::vec_t<N, float>;
  using VM = wp::vec_t<M, float>;
  const uint32_t state = 42u;
  const std::string tag = std::to_string(N) + "-D";
  for (const uint32_t octaves : {1u, 3u}) {
    CheckGradient(
        "curlnoise " + tag + " octaves " + std::to_string(octaves), M,
        [&](const std::vector<float>& x) { return Doubles<M>(wp::curlnoise(state, Vec<N>(x), octaves, 1.7f, 0.6f)); },
        [&](const std::vector<float>& x, const std::vector<float>& w, std::vector<float>& a) {
          VN adj = Vec<N>(a);
          uint32_t as = 0, ao = 0;
          float al = 0, ag = 0;
          wp::adj_curlnoise(state, Vec<N>(x), octaves, 1.7f, 0.6f, as, adj, ao, al, ag, Vec<M>(w));
          EXPECT_EQ(al, 0.0f);  // no gradient for lacunarity and gain (Warp's)
          EXPECT_EQ(ag, 0.0f);
          AddTo<N>(a, adj);
        },
        Points(N));
  }
  CheckGradient(
      "curlnoise " + tag + " (state, x, octaves, lacunarity)", M,
      [&](const std::vector<float>& x) { return Doubles<M>(wp::curlnoise(state, Vec<N>(x), 2u, 1.5f, 0.5f)); },
      [&](const std::vector<float>& x, const std::vector<float>& w, std::vector<float>& a) {
        VN adj = Vec<N>(a);
        uint32_t as = 0, ao = 0;
        float al = 0;
        wp::adj_curlnoise(state, Vec<N>(x), 2u, 1.5f, as, adj, ao, al, Vec<M>(w));
        AddTo<N>(a, adj);
      },
      Points(N));
  CheckGradient(
      "curlnoise " + tag + " (state, x, octaves)", M,
      [&](const std::vector<float>& x) { return Doubles<M>(wp::curlnoise(state, Vec<N>(x), 2u, 2.0f, 0.5f)); },
      [&](const std::vector<float>& x, const std::vector<float>& w, std::vector<float>& a) {
        VN adj = Vec<N>(a);
        uint32_t as = 0, ao = 0;
        wp::adj_curlnoise(state, Vec<N>(x), 2u, as, adj, ao, Vec<M>(w));
        AddTo<N>(a, adj);
      },
      Points(N));
  CheckGradient(
      "curlnoise " + tag + " (state, x)", M,
      [&](const std::vector<float>& x) { return Doubles<M>(wp::curlnoise(state, Vec<N>(x), 1u, 2.0f, 0.5f)); },
      [&](const std::vector<float>& x, const std::vector<float>& w, std::vector<float>& a) {
        VN adj = Vec<N>(a);
        uint32_t as = 0;
        wp::adj_curlnoise(state, Vec<N>(x), as, adj, VM(Vec<M>(w)));
        AddTo<N>(a, adj);
      },
      Points(N));
}

}  // namespace

void NoiseFamilyCases(Suite<double>&) {}

void NoiseFamilyExplicitChecks(std::set<std::string>& covered) {
  // 1-D noise and pnoise (scalar x).
  for (uint32_t state : kStates) {
    CheckGradient(
        "noise 1-D", 1, [&](const std::vector<float>& x) { return std::vector<double>{wp::noise(state, x[0])}; },
        [&](const std::vector<float>& x, const std::vector<float>& w, std::vector<float>& a) {
          uint32_t as = 0;
          wp::adj_noise(state, x[0], as, a[0], w[0]);
        },
        Points(1));
    std::vector<std::vector<float>> points = Points(1);
    points.push_back({4.999f});
    points.push_back({-0.001f});
    CheckGradient(
        "pnoise 1-D", 1, [&](const std::vector<float>& x) { return std::vector<double>{wp::pnoise(state, x[0], 5)}; },
        [&](const std::vector<float>& x, const std::vector<float>& w, std::vector<float>& a) {
          uint32_t as = 0;
          int32_t ap = 0;
          wp::adj_pnoise(state, x[0], 5, as, a[0], ap, w[0]);
        },
        points);
  }
  NoiseChecks<2>();
  NoiseChecks<3>();
  NoiseChecks<4>();
  covered.insert("noise");
  PnoiseChecks<2>();
  PnoiseChecks<3>();
  PnoiseChecks<4>();
  covered.insert("pnoise");
  CurlChecks<2, 2>();
  CurlChecks<3, 3>();
  CurlChecks<4, 3>();
  covered.insert("curlnoise");
}

TEST(AdjointNoiseTest, MatchesFiniteDifferencesOfTheFloat32Forward) {
  std::set<std::string> covered;
  NoiseFamilyExplicitChecks(covered);
}

}  // namespace warpd_adjoint_test

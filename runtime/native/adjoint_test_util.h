// Test harness for the adjoint headers (warpd/native/adjoint/): checks an
// adjoint against float64 central finite differences of its forward function,
// checks that it accumulates, and compares the float32 / half / bfloat16
// instantiations against float64. Test-only; not a runtime header.
//
// A case is registered once, generically in the scalar type T:
//
//   template <typename T>
//   void MyCases(Suite<T>& s) {
//     s.Add("sin", +[](const T& x) { return wp::sin(x); },
//           +[](const T& x, const T& ret, T& adj_x, const T& adj_ret) { wp::adj_sin(x, adj_x, adj_ret); },
//           {{0.3}, {-1.2}});
//   }
//
// Points are the flattened arguments (Flat<> below: vectors by component,
// matrices row-major, quaternions x y z w, transforms p then q, tuples element
// by element). For each point the suite draws a random adj_ret and random
// initial adjoints, calls the adjoint twice and expects
// - the first call's change to equal the finite-difference gradient of
//   dot(adj_ret, f(args)) (Suite<double> only),
// - the second call to add the same change again (accumulation),
// - with a reference suite (Suite<float> etc.), the change to agree with the
//   float64 suite's at the same (pre-rounded) points.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "warpd/native/adjoint/adj_scalar.h"
#include "warpd/native/mat.h"
#include "warpd/native/quat.h"
#include "warpd/native/transform.h"
#include "warpd/native/tuple.h"
#include "warpd/native/vec.h"

namespace warpd_adjoint_test {

// --- Flattening value types to doubles -------------------------------------------

template <typename T, typename Enable = void>
struct Flat;

template <typename T>
struct FlatFloat {
  static constexpr int n = 1;
  static constexpr bool differentiable = true;
  static double get(const T& x, int) { return static_cast<double>(x); }
  static void set(T& x, int, double v) { x = static_cast<T>(v); }
};
template <>
struct Flat<double> : FlatFloat<double> {};
template <>
struct Flat<float> : FlatFloat<float> {};
template <>
struct Flat<wp::half> {
  static constexpr int n = 1;
  static constexpr bool differentiable = true;
  static double get(const wp::half& x, int) { return wp::half_to_float(x); }
  static void set(wp::half& x, int, double v) { x = wp::float_to_half(static_cast<float>(v)); }
};
template <>
struct Flat<wp::bfloat16> {
  static constexpr int n = 1;
  static constexpr bool differentiable = true;
  static double get(const wp::bfloat16& x, int) { return wp::bfloat16_to_float(x); }
  static void set(wp::bfloat16& x, int, double v) { x = wp::float_to_bfloat16(static_cast<float>(v)); }
};
template <typename T>
struct Flat<T, std::enable_if_t<std::is_integral_v<T>>> {
  static constexpr int n = 1;
  static constexpr bool differentiable = false;
  static double get(const T& x, int) { return static_cast<double>(x); }
  static void set(T& x, int, double v) { x = static_cast<T>(v); }
};
template <int N, typename T>
struct Flat<wp::vec_t<N, T>> {
  static constexpr int n = N;
  static constexpr bool differentiable = Flat<T>::differentiable;
  static double get(const wp::vec_t<N, T>& x, int i) { return Flat<T>::get(x.c[i], 0); }
  static void set(wp::vec_t<N, T>& x, int i, double v) { Flat<T>::set(x.c[i], 0, v); }
};
template <int R, int C, typename T>
struct Flat<wp::mat_t<R, C, T>> {
  static constexpr int n = R * C;
  static constexpr bool differentiable = Flat<T>::differentiable;
  static double get(const wp::mat_t<R, C, T>& x, int i) { return Flat<T>::get(x.c[i / C][i % C], 0); }
  static void set(wp::mat_t<R, C, T>& x, int i, double v) { Flat<T>::set(x.c[i / C][i % C], 0, v); }
};
template <typename T>
struct Flat<wp::quat_t<T>> {
  static constexpr int n = 4;
  static constexpr bool differentiable = true;
  static double get(const wp::quat_t<T>& x, int i) { return Flat<T>::get(x.c[i], 0); }
  static void set(wp::quat_t<T>& x, int i, double v) { Flat<T>::set(x.c[i], 0, v); }
};
template <typename T>
struct Flat<wp::transform_t<T>> {
  static constexpr int n = 7;
  static constexpr bool differentiable = true;
  static double get(const wp::transform_t<T>& x, int i) {
    return i < 3 ? Flat<T>::get(x.p.c[i], 0) : Flat<T>::get(x.q.c[i - 3], 0);
  }
  static void set(wp::transform_t<T>& x, int i, double v) {
    if (i < 3) Flat<T>::set(x.p.c[i], 0, v);
    else Flat<T>::set(x.q.c[i - 3], 0, v);
  }
};

// Tuples (results of quat_to_axis_angle, transform_decompose, ...): the
// elements' coordinates in order.
template <>
struct Flat<wp::tuple_t<>> {
  static constexpr int n = 0;
  static constexpr bool differentiable = true;
  static double get(const wp::tuple_t<>&, int) { return 0; }
  static void set(wp::tuple_t<>&, int, double) {}
};
template <typename H, typename... R>
struct Flat<wp::tuple_t<H, R...>> {
  using Tail = Flat<wp::tuple_t<R...>>;
  static constexpr int n = Flat<H>::n + Tail::n;
  static constexpr bool differentiable = Flat<H>::differentiable;
  static double get(const wp::tuple_t<H, R...>& x, int i) {
    return i < Flat<H>::n ? Flat<H>::get(x.head, i) : Tail::get(x.tail, i - Flat<H>::n);
  }
  static void set(wp::tuple_t<H, R...>& x, int i, double v) {
    if (i < Flat<H>::n) Flat<H>::set(x.head, i, v);
    else Tail::set(x.tail, i - Flat<H>::n, v);
  }
};

template <typename T>
std::vector<double> Flatten(const T& x) {
  std::vector<double> out(Flat<T>::n);
  for (int i = 0; i < Flat<T>::n; ++i) out[i] = Flat<T>::get(x, i);
  return out;
}

// --- The suite ---------------------------------------------------------------------

template <typename T>
constexpr bool kIsF64 = std::is_same_v<T, double>;

// Rounds a point's coordinates as T would (identity for double).
template <typename T>
double RoundAs(double v) {
  T x{};
  Flat<T>::set(x, 0, v);
  return Flat<T>::get(x, 0);
}

template <typename T>
class Suite {
 public:
  // Each point's result: the first call's change of every flattened adjoint.
  struct Result {
    std::string name;
    std::vector<std::vector<double>> deltas;
  };

  // `reference`: a Suite<double> that ran the same cases (with points rounded
  // as T rounds them); its results are what this suite is compared against,
  // within `tolerance` relative to the gradient's largest component.
  explicit Suite(const Suite<double>* reference = nullptr, double tolerance = 0)
      : reference_(reference), tolerance_(tolerance) {}

  // Makes this (float64) suite round its points through `round` first.
  void RoundPointsWith(double (*round)(double)) { round_ = round; }

  template <typename Ret, typename... Args>
  void Add(const std::string& name, Ret (*f)(const Args&...),
           std::type_identity_t<void (*)(const Args&..., const Ret&, Args&..., const Ret&)> adj,
           const std::vector<std::vector<double>>& points, double fd_tolerance = 1e-6) {
    Result result{name, {}};
    std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(name) + results_.size()));
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    for (size_t p = 0; p < points.size(); ++p) {
      SCOPED_TRACE(name + " at point " + std::to_string(p));
      std::vector<double> point = points[p];
      if (round_ != nullptr)
        for (double& v : point) v = round_(v);
      std::tuple<Args...> args;
      size_t used = 0;
      std::apply([&](Args&... a) { (Unflatten(a, point, used), ...); }, args);
      ASSERT_EQ(used, point.size()) << "point has the wrong number of coordinates";
      const Ret ret = std::apply(f, args);
      Ret adj_ret{};
      for (int i = 0; i < Flat<Ret>::n; ++i) Flat<Ret>::set(adj_ret, i, unit(rng));
      std::tuple<Args...> adjs;
      std::apply([&](Args&... a) { (RandomAdjoint(a, rng), ...); }, adjs);
      const std::vector<double> before = FlattenAll(adjs);
      CallAdjoint(adj, args, ret, adjs, adj_ret, std::index_sequence_for<Args...>());
      const std::vector<double> once = FlattenAll(adjs);
      CallAdjoint(adj, args, ret, adjs, adj_ret, std::index_sequence_for<Args...>());
      const std::vector<double> twice = FlattenAll(adjs);
      const std::vector<bool> diff = Differentiable<Args...>();
      std::vector<double> delta(once.size());
      for (size_t k = 0; k < once.size(); ++k) {
        delta[k] = diff[k] ? once[k] - before[k] : 0.0;
        if (!diff[k]) continue;
        // Accumulation: the second call adds what the first added. Checked
        // where T's rounding of the sums leaves it visible.
        if (kIsF64<T> || std::is_same_v<T, float>) {
          const double eps = kIsF64<T> ? 1e-12 : 1e-5;
          EXPECT_NEAR(twice[k] - once[k], delta[k], eps * (1 + std::fabs(once[k]) + std::fabs(twice[k])))
              << "component " << k << " is not accumulated (before " << before[k] << ", once "
              << once[k] << ", twice " << twice[k] << ")";
        }
      }
      if constexpr (kIsF64<T>) {
        CheckFiniteDifferences(f, args, adj_ret, delta, fd_tolerance);
      }
      if (reference_ != nullptr) CompareWithReference(delta, results_.size(), p);
      result.deltas.push_back(delta);
    }
    results_.push_back(std::move(result));
    names_.insert(name);
  }

  const std::vector<Result>& results() const { return results_; }
  const std::set<std::string>& names() const { return names_; }

 private:
  template <typename A>
  static void Unflatten(A& a, const std::vector<double>& point, size_t& used) {
    for (int i = 0; i < Flat<A>::n; ++i) {
      if (used < point.size()) Flat<A>::set(a, i, point[used]);
      ++used;
    }
  }

  template <typename A>
  static void RandomAdjoint(A& a, std::mt19937& rng) {
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    for (int i = 0; i < Flat<A>::n; ++i) Flat<A>::set(a, i, Flat<A>::differentiable ? unit(rng) : 0.0);
  }

  template <typename... A>
  static std::vector<double> FlattenAll(const std::tuple<A...>& t) {
    std::vector<double> out;
    std::apply([&](const A&... a) { (AppendFlat(out, a), ...); }, t);
    return out;
  }

  template <typename A>
  static void AppendFlat(std::vector<double>& out, const A& a) {
    for (int i = 0; i < Flat<A>::n; ++i) out.push_back(Flat<A>::get(a, i));
  }

  template <typename... A>
  static std::vector<bool> Differentiable() {
    std::vector<bool> out;
    ((out.insert(out.end(), Flat<A>::n, Flat<A>::differentiable)), ...);
    return out;
  }

  template <typename Adj, typename Ret, typename... Args, size_t... I>
  static void CallAdjoint(Adj adj, const std::tuple<Args...>& args, const Ret& ret,
                          std::tuple<Args...>& adjs, const Ret& adj_ret, std::index_sequence<I...>) {
    adj(std::get<I>(args)..., ret, std::get<I>(adjs)..., adj_ret);
  }

  // d/dx_k of dot(adj_ret, f(x)) by central differences, step 1e-5 (|x_k| + 1).
  template <typename Ret, typename... Args>
  static void CheckFiniteDifferences(Ret (*f)(const Args&...), const std::tuple<Args...>& args,
                                     const Ret& adj_ret, const std::vector<double>& delta,
                                     double tolerance) {
    const std::vector<double> x = FlattenAll(args);
    const std::vector<bool> diff = Differentiable<Args...>();
    const std::vector<double> w = Flatten(adj_ret);
    auto objective = [&](const std::vector<double>& at) {
      std::tuple<Args...> a;
      size_t used = 0;
      std::apply([&](Args&... v) { (Unflatten(v, at, used), ...); }, a);
      const std::vector<double> r = Flatten(std::apply(f, a));
      double s = 0;
      for (size_t j = 0; j < r.size(); ++j) s += w[j] * r[j];
      return s;
    };
    for (size_t k = 0; k < x.size(); ++k) {
      if (!diff[k]) continue;
      const double h = 1e-5 * (std::fabs(x[k]) + 1);
      std::vector<double> up = x, down = x;
      up[k] += h;
      down[k] -= h;
      const double fd = (objective(up) - objective(down)) / (2 * h);
      EXPECT_NEAR(delta[k], fd, tolerance * (1 + std::fabs(fd)))
          << "d/dx" << k << ": adjoint " << delta[k] << ", finite differences " << fd;
    }
  }

  void CompareWithReference(const std::vector<double>& delta, size_t case_index, size_t point) const {
    ASSERT_LT(case_index, reference_->results().size());
    const auto& ref = reference_->results()[case_index];
    ASSERT_LT(point, ref.deltas.size());
    const std::vector<double>& want = ref.deltas[point];
    ASSERT_EQ(want.size(), delta.size());
    double scale = 1;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    for (size_t k = 0; k < want.size(); ++k)
      EXPECT_NEAR(delta[k], want[k], tolerance_ * scale) << "component " << k << " vs float64";
  }

  const Suite<double>* reference_;
  double tolerance_;
  double (*round_)(double) = nullptr;
  std::vector<Result> results_;
  std::set<std::string> names_;
};

// Runs `cases` in float64 against finite differences, then in float32, half
// and bfloat16 against float64 (each at points rounded as that type rounds).
#define WARPD_ADJOINT_SUITES(Family, cases)                                                    \
  TEST(Family, Float64MatchesFiniteDifferences) {                                              \
    ::warpd_adjoint_test::Suite<double> s;                                                     \
    cases<double>(s);                                                                          \
  }                                                                                            \
  TEST(Family, Float32AgreesWithFloat64) {                                                     \
    ::warpd_adjoint_test::Suite<double> ref;                                                   \
    ref.RoundPointsWith(&::warpd_adjoint_test::RoundAs<float>);                                \
    cases<double>(ref);                                                                        \
    ::warpd_adjoint_test::Suite<float> s(&ref, 2e-5);                                          \
    cases<float>(s);                                                                           \
  }

// The half and bfloat16 instantiations, for the families that have them.
#define WARPD_ADJOINT_LOWP_SUITES(Family, cases)                                               \
  TEST(Family, HalfAgreesWithFloat64) {                                                        \
    ::warpd_adjoint_test::Suite<double> ref;                                                   \
    ref.RoundPointsWith(&::warpd_adjoint_test::RoundAs<wp::half>);                             \
    cases<double>(ref);                                                                        \
    ::warpd_adjoint_test::Suite<wp::half> s(&ref, 1e-2);                                       \
    cases<wp::half>(s);                                                                        \
  }                                                                                            \
  TEST(Family, Bfloat16AgreesWithFloat64) {                                                    \
    ::warpd_adjoint_test::Suite<double> ref;                                                   \
    ref.RoundPointsWith(&::warpd_adjoint_test::RoundAs<wp::bfloat16>);                         \
    cases<double>(ref);                                                                        \
    ::warpd_adjoint_test::Suite<wp::bfloat16> s(&ref, 8e-2);                                   \
    cases<wp::bfloat16>(s);                                                                    \
  }

}  // namespace warpd_adjoint_test

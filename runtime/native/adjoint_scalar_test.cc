// Adjoints of the scalar builtins (warpd/native/adjoint/adj_scalar.h) against
// float64 central finite differences, in float32/half/bfloat16 against
// float64, and Warp's subgradients at the non-smooth points.
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "adjoint_cases.h"
#include "adjoint_test_util.h"
#include "gtest/gtest.h"
#include "warpd/native/adjoint/adj_scalar.h"

namespace warpd_adjoint_test {

// One line per builtin: forward, adjoint (with or without the forward result,
// as Warp's takes it), points away from non-smooth ones.
#define UNARY(name, ...)                                                                      \
  s.Add(#name, +[](const T& x) { return wp::name(x); },                                       \
        +[](const T& x, const T&, T& adj_x, const T& adj_ret) { wp::adj_##name(x, adj_x, adj_ret); }, \
        __VA_ARGS__)
#define UNARY_RET(name, ...)                                                                  \
  s.Add(#name, +[](const T& x) { return wp::name(x); },                                       \
        +[](const T& x, const T& ret, T& adj_x, const T& adj_ret) {                           \
          wp::adj_##name(x, ret, adj_x, adj_ret);                                             \
        },                                                                                    \
        __VA_ARGS__)
#define BINARY(name, ...)                                                                     \
  s.Add(#name, +[](const T& a, const T& b) { return wp::name(a, b); },                        \
        +[](const T& a, const T& b, const T&, T& adj_a, T& adj_b, const T& adj_ret) {         \
          wp::adj_##name(a, b, adj_a, adj_b, adj_ret);                                        \
        },                                                                                    \
        __VA_ARGS__)
#define BINARY_RET(name, ...)                                                                 \
  s.Add(#name, +[](const T& a, const T& b) { return wp::name(a, b); },                        \
        +[](const T& a, const T& b, const T& ret, T& adj_a, T& adj_b, const T& adj_ret) {     \
          wp::adj_##name(a, b, ret, adj_a, adj_b, adj_ret);                                   \
        },                                                                                    \
        __VA_ARGS__)
#define TERNARY(name, ...)                                                                    \
  s.Add(#name, +[](const T& a, const T& b, const T& c) { return wp::name(a, b, c); },         \
        +[](const T& a, const T& b, const T& c, const T&, T& adj_a, T& adj_b, T& adj_c,       \
            const T& adj_ret) { wp::adj_##name(a, b, c, adj_a, adj_b, adj_c, adj_ret); },     \
        __VA_ARGS__)

template <typename T>
void ScalarCases(Suite<T>& s) {
  BINARY(add, {{0.3, -1.7}, {2.0, 0.25}});
  BINARY(sub, {{0.3, -1.7}, {2.0, 0.25}});
  BINARY(mul, {{0.3, -1.7}, {2.0, 0.25}, {-3.5, -0.5}});
  BINARY_RET(div, {{0.3, -1.7}, {2.0, 0.25}, {-3.5, 1.5}});
  BINARY_RET(div_approx, {{0.3, -1.7}, {2.0, 0.25}, {-3.5, 1.5}});
  // mod: d/db is 0 by Warp's choice (Subgradients checks it), so only a varies here.
  s.Add("mod", +[](const T& a) { return wp::mod(a, wp::cast<T>(1.5)); },
        +[](const T& a, const T&, T& adj_a, const T& adj_ret) {
          T adj_b = wp::cast<T>(0);
          wp::adj_mod(a, wp::cast<T>(1.5), adj_a, adj_b, adj_ret);
        },
        {{0.3}, {2.0}, {-3.25}});
  UNARY(neg, {{0.3}, {-2.5}});
  UNARY(pos, {{0.3}, {-2.5}});
  UNARY(abs, {{0.3}, {-2.5}});
  BINARY(min, {{0.3, -1.7}, {-2.0, 0.25}});
  BINARY(max, {{0.3, -1.7}, {-2.0, 0.25}});
  TERNARY(clamp, {{0.5, -1.0, 2.0}, {-3.0, -1.0, 2.0}, {3.0, -1.0, 2.0}});
  BINARY(copysign, {{0.75, -1.5}, {-0.75, 2.0}, {1.25, 3.0}, {-1.25, -3.0}});
  UNARY_RET(sqrt, {{0.3}, {2.5}, {9.0}});
  UNARY_RET(cbrt, {{0.3}, {2.5}, {-8.0}});
  UNARY_RET(exp, {{0.3}, {-2.5}, {1.75}});
  UNARY(log, {{0.3}, {2.5}, {9.0}});
  UNARY(log2, {{0.3}, {2.5}, {9.0}});
  UNARY(log10, {{0.3}, {2.5}, {9.0}});
  BINARY_RET(pow, {{0.5, 2.5}, {2.0, -1.5}, {3.0, 0.5}});
  UNARY(sin, {{0.3}, {-2.5}, {4.0}});
  UNARY(cos, {{0.3}, {-2.5}, {4.0}});
  UNARY(tan, {{0.3}, {-1.0}, {2.5}});
  UNARY(asin, {{0.3}, {-0.75}, {0.5}});
  UNARY(acos, {{0.3}, {-0.75}, {0.5}});
  UNARY(atan, {{0.3}, {-2.5}, {4.0}});
  BINARY(atan2, {{0.3, -1.7}, {-2.0, 0.25}, {1.0, 1.0}});
  UNARY(sinh, {{0.3}, {-1.5}, {2.0}});
  UNARY(cosh, {{0.3}, {-1.5}, {2.0}});
  UNARY_RET(tanh, {{0.3}, {-1.5}, {1.0}});
  UNARY(erf, {{0.3}, {-1.5}, {1.0}});
  UNARY(erfc, {{0.3}, {-1.5}, {1.0}});
  UNARY_RET(erfinv, {{0.3}, {-0.5}, {0.75}});
  UNARY_RET(erfcinv, {{0.3}, {1.5}, {0.75}});
  UNARY(degrees, {{0.3}, {-2.5}});
  UNARY(radians, {{30.0}, {-120.0}});
  TERNARY(lerp, {{0.5, -1.0, 0.25}, {-3.0, 2.0, 1.5}});
  TERNARY(smoothstep, {{-1.0, 2.0, 0.5}, {0.0, 1.0, 0.8}, {3.0, 1.0, 1.5}});
  s.Add("where", +[](const wp::int32& c, const T& a, const T& b) { return wp::where(c, a, b); },
        +[](const wp::int32& c, const T& a, const T& b, const T&, wp::int32& adj_c, T& adj_a, T& adj_b,
            const T& adj_ret) { wp::adj_where(c, a, b, adj_c, adj_a, adj_b, adj_ret); },
        {{1, 0.5, -2.0}, {0, 0.5, -2.0}});
  s.Add("select", +[](const bool& c, const T& a, const T& b) { return wp::select(c, a, b); },
        +[](const bool& c, const T& a, const T& b, const T&, bool& adj_c, T& adj_a, T& adj_b,
            const T& adj_ret) { wp::adj_select(c, a, b, adj_c, adj_a, adj_b, adj_ret); },
        {{1, 0.5, -2.0}, {0, 0.5, -2.0}});
  // The float64 constructor: float64(x) is cast<float64>(x).
  s.Add("float64", +[](const T& x) { return wp::cast<wp::float64>(x); },
        +[](const T& x, const wp::float64&, T& adj_x, const wp::float64& adj_ret) {
          wp::adj_cast<wp::float64>(x, adj_x, adj_ret);
        },
        {{0.3}, {-2.5}});
}

#undef UNARY
#undef UNARY_RET
#undef BINARY
#undef BINARY_RET
#undef TERNARY

void ScalarFamilyCases(Suite<double>& s) { ScalarCases<double>(s); }

WARPD_ADJOINT_SUITES(AdjointScalarTest, ScalarCases)
WARPD_ADJOINT_LOWP_SUITES(AdjointScalarTest, ScalarCases)

// --- Warp's choices at non-smooth points, and the integer no-ops --------------------

template <typename T>
void ScalarSubgradients() {
  const T one = wp::cast<T>(1), zero = wp::cast<T>(0);
  auto d = [](T v) { return static_cast<double>(Flat<T>::get(v, 0)); };
  const T nan = wp::cast<T>(std::numeric_limits<double>::quiet_NaN());
  {  // d|x|/dx at 0 (and -0) is +1.
    T adj = zero;
    wp::adj_abs(zero, adj, one);
    EXPECT_EQ(d(adj), 1.0);
    wp::adj_abs(wp::cast<T>(-0.0), adj, one);
    EXPECT_EQ(d(adj), 2.0);
  }
  {  // min/max ties: the gradient goes to b.
    T aa = zero, ab = zero;
    wp::adj_min(one, one, aa, ab, one);
    EXPECT_EQ(d(aa), 0.0);
    EXPECT_EQ(d(ab), 1.0);
    wp::adj_max(one, one, aa, ab, one);
    EXPECT_EQ(d(aa), 0.0);
    EXPECT_EQ(d(ab), 2.0);
  }
  {  // A NaN operand is missing: the gradient goes to the other one.
    T aa = zero, ab = zero;
    wp::adj_min(nan, one, aa, ab, one);
    wp::adj_max(nan, one, aa, ab, one);
    EXPECT_EQ(d(aa), 0.0);
    EXPECT_EQ(d(ab), 2.0);
    wp::adj_min(one, nan, aa, ab, one);
    wp::adj_max(one, nan, aa, ab, one);
    EXPECT_EQ(d(aa), 2.0);
    EXPECT_EQ(d(ab), 2.0);
  }
  {  // clamp(x, lo, hi) = min(max(lo, x), hi): x == lo goes to x, x == hi to hi.
    const T lo = wp::cast<T>(-1), hi = wp::cast<T>(2);
    T ax = zero, alo = zero, ahi = zero;
    wp::adj_clamp(lo, lo, hi, ax, alo, ahi, one);
    EXPECT_EQ(d(ax), 1.0);
    EXPECT_EQ(d(alo), 0.0);
    EXPECT_EQ(d(ahi), 0.0);
    wp::adj_clamp(hi, lo, hi, ax, alo, ahi, one);
    EXPECT_EQ(d(ax), 1.0);
    EXPECT_EQ(d(ahi), 1.0);
    wp::adj_clamp(wp::cast<T>(-5), lo, hi, ax, alo, ahi, one);  // below: lo
    EXPECT_EQ(d(alo), 1.0);
    wp::adj_clamp(wp::cast<T>(5), lo, hi, ax, alo, ahi, one);  // above: hi
    EXPECT_EQ(d(ahi), 2.0);
    EXPECT_EQ(d(ax), 1.0);
  }
  {  // fmod: d/db is left at 0.
    T aa = zero, ab = zero;
    wp::adj_mod(wp::cast<T>(7), wp::cast<T>(2), aa, ab, one);
    EXPECT_EQ(d(aa), 1.0);
    EXPECT_EQ(d(ab), 0.0);
  }
  {  // copysign: by sign bits (signed zeros too); nothing for y.
    T ax = zero, ay = zero;
    wp::adj_copysign(wp::cast<T>(0.0), wp::cast<T>(-0.0), ax, ay, one);
    EXPECT_EQ(d(ax), -1.0);
    wp::adj_copysign(wp::cast<T>(-0.0), wp::cast<T>(-3.0), ax, ay, one);
    EXPECT_EQ(d(ax), 0.0);
    EXPECT_EQ(d(ay), 0.0);
  }
  {  // Infinite derivatives give no gradient.
    T adj = zero;
    wp::adj_acos(one, adj, one);
    wp::adj_asin(wp::cast<T>(-1), adj, one);
    wp::adj_asin(wp::cast<T>(3), adj, one);  // clamped
    T ay = zero, ax = zero;
    wp::adj_atan2(zero, zero, ay, ax, one);
    EXPECT_EQ(d(adj), 0.0);
    EXPECT_EQ(d(ay), 0.0);
    EXPECT_EQ(d(ax), 0.0);
  }
  {  // smoothstep is flat where clamped, at the ends too.
    T a0 = zero, a1 = zero, ax = zero;
    wp::adj_smoothstep(zero, one, zero, a0, a1, ax, one);
    wp::adj_smoothstep(zero, one, one, a0, a1, ax, one);
    wp::adj_smoothstep(zero, one, wp::cast<T>(2), a0, a1, ax, one);
    EXPECT_EQ(d(a0), 0.0);
    EXPECT_EQ(d(a1), 0.0);
    EXPECT_EQ(d(ax), 0.0);
  }
}

TEST(AdjointScalarTest, WarpSubgradientsAtNonSmoothPoints) {
  ScalarSubgradients<double>();
  ScalarSubgradients<float>();
  ScalarSubgradients<wp::half>();
  ScalarSubgradients<wp::bfloat16>();
}

template <typename I>
void IntegerAdjointsAreNoOps() {
  I aa = 3, ab = 4, ac = 5;
  const I a = 7, b = 2, ret = 1;
  wp::adj_add(a, b, aa, ab, ret);
  wp::adj_sub(a, b, aa, ab, ret);
  wp::adj_mul(a, b, aa, ab, ret);
  wp::adj_div(a, b, wp::div(a, b), aa, ab, ret);
  wp::adj_mod(a, b, aa, ab, ret);
  wp::adj_neg(a, aa, ret);
  wp::adj_pos(a, aa, ret);
  wp::adj_abs(a, aa, ret);
  wp::adj_min(a, b, aa, ab, ret);
  wp::adj_max(a, b, aa, ab, ret);
  wp::adj_clamp(a, b, b, aa, ab, ac, ret);
  EXPECT_EQ(aa, 3);
  EXPECT_EQ(ab, 4);
  EXPECT_EQ(ac, 5);
}

TEST(AdjointScalarTest, IntegerAdjointsAreNoOps) {
  IntegerAdjointsAreNoOps<wp::int8>();
  IntegerAdjointsAreNoOps<wp::uint8>();
  IntegerAdjointsAreNoOps<wp::int16>();
  IntegerAdjointsAreNoOps<wp::uint16>();
  IntegerAdjointsAreNoOps<wp::int32>();
  IntegerAdjointsAreNoOps<wp::uint32>();
  IntegerAdjointsAreNoOps<wp::int64>();
  IntegerAdjointsAreNoOps<wp::uint64>();
}

// The scalar constructors: the gradient converts back to the argument's type;
// an integer on either side carries none.
void ConversionChecks(std::set<std::string>& covered) {
  double ad = 0.5;
  wp::adj_cast<wp::float32>(2.0, ad, 0.25f);
  wp::adj_cast<wp::half>(2.0, ad, wp::float_to_half(0.5f));
  wp::adj_cast<wp::bfloat16>(2.0, ad, wp::float_to_bfloat16(0.125f));
  EXPECT_EQ(ad, 0.5 + 0.25 + 0.5 + 0.125);
  float af = 1;
  wp::adj_cast<wp::float64>(1.5f, af, 2.0);
  wp::adj_cast<wp::int32>(1.5f, af, 7);
  EXPECT_EQ(af, 3.0f);
  wp::half ah = wp::float_to_half(1);
  wp::adj_cast<wp::float32>(wp::float_to_half(3), ah, 0.5f);
  EXPECT_EQ(wp::half_to_float(ah), 1.5f);
  wp::int32 ai = 0;
  wp::adj_cast<wp::float32>(3, ai, 4.0f);
  EXPECT_EQ(ai, 0);
  for (const char* name : {"float32", "float16", "half", "bfloat16", "float"}) covered.insert(name);
}

TEST(AdjointScalarTest, Conversions) {
  std::set<std::string> covered;
  ConversionChecks(covered);
}

void ScalarFamilyExplicitChecks(std::set<std::string>& covered) { ConversionChecks(covered); }

}  // namespace warpd_adjoint_test

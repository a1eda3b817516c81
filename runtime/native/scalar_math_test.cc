// Host tests of the scalar and vector math builtins (warpd/native/scalar.h,
// vec.h) against references computed here independently: long double <cmath>
// and bisection for the float functions, exact decoding and rounding by search
// for half, integer arithmetic in __int128 or brute force for the integers.
//
// Semantics checked are Warp 1.19's (see scalar.h): C-style integer div/mod,
// flooring floordiv, fmin/fmax min/max, sign/step/nonzero at 0 and NaN, acos
// and asin clamping, where/select argument order.
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <algorithm>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "warpd/native/vec.h"

namespace {

using wp::half;
typedef long double ld;

const double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::numeric_limits<double>::quiet_NaN();

// --- half references -------------------------------------------------------

// Exact value of half bits (every half is a double).
double DecodeHalf(uint16_t bits) {
  const int exp = (bits >> 10) & 0x1f;
  const int mant = bits & 0x3ff;
  double v;
  if (exp == 31) {
    v = mant ? kNan : kInf;
  } else if (exp == 0) {
    v = std::ldexp(mant, -24);
  } else {
    v = std::ldexp(1024 + mant, exp - 25);
  }
  return (bits & 0x8000) ? -v : v;
}

double HalfValue(uint16_t bits) {
  static const std::vector<double>* table = [] {
    auto* t = new std::vector<double>(65536);
    for (uint32_t b = 0; b <= 0xffff; ++b) (*t)[b] = DecodeHalf(static_cast<uint16_t>(b));
    return t;
  }();
  return (*table)[bits];
}

// The half nearest to x (ties to even), found by binary search over the
// positive halves, which are ordered like their bits.
uint16_t RoundToHalf(double x) {
  if (std::isnan(x)) return 0x7e00;
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (a >= 65520.0) return sign | 0x7c00;
  uint16_t lo = 0, hi = 0x7bff;  // largest half <= a
  while (lo < hi) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (HalfValue(mid) <= a) lo = mid; else hi = static_cast<uint16_t>(mid - 1);
  }
  const double below = a - HalfValue(lo);
  const double above = (lo == 0x7bff ? 65536.0 : HalfValue(static_cast<uint16_t>(lo + 1))) - a;
  uint16_t h = lo;
  if (above < below || (above == below && (lo & 1))) ++h;
  return sign | h;
}

// Spacing of the halves at magnitude |x| (finite).
double HalfUlp(double x) {
  const double a = std::fabs(x);
  if (a < std::ldexp(1.0, -14)) return std::ldexp(1.0, -24);
  return std::ldexp(1.0, std::ilogb(a) - 10);
}

// A half result computed in float32 and rounded once: it must be the half
// nearest to the exact value, except where the exact value lies so close to a
// midpoint between halves that the float32 step may decide the tie.
::testing::AssertionResult HalfMatches(half got, double exact) {
  const uint16_t want = RoundToHalf(exact);
  const double g = HalfValue(got.bits);
  if (std::isnan(exact)) {
    if (std::isnan(g)) return ::testing::AssertionSuccess();
  } else if (got.bits == want) {
    return ::testing::AssertionSuccess();
  } else if (std::isfinite(g) && std::isfinite(exact) &&
             std::fabs(g - exact) <= HalfUlp(exact) * (0.5 + 1.0 / 256)) {
    return ::testing::AssertionSuccess();
  }
  char buf[128];
  std::snprintf(buf, sizeof buf, "got half 0x%04x (%g), want 0x%04x (exact %.17g)", got.bits, g, want, exact);
  return ::testing::AssertionFailure() << buf;
}

half H(uint16_t bits) { return half{bits}; }
bool IsSignalingNan(half h) { return (h.bits & 0x7c00) == 0x7c00 && (h.bits & 0x3ff) != 0 && !(h.bits & 0x200); }
half Hf(double x) { return half{RoundToHalf(x)}; }

// Every half bit pattern, then a spread subset for pairs.
std::vector<uint16_t> AllHalves() {
  std::vector<uint16_t> out;
  for (uint32_t b = 0; b <= 0xffff; ++b) out.push_back(static_cast<uint16_t>(b));
  return out;
}

std::vector<uint16_t> SomeHalves() {
  std::vector<uint16_t> out = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00,
                               0x3800, 0xb800, 0x4000, 0xc000, 0x4200, 0xc500, 0x7bff, 0xfbff,
                               0x7c00, 0xfc00, 0x7e00, 0x3555, 0x4248, 0x5640};
  std::mt19937 rng(7);
  for (int i = 0; i < 42; ++i) out.push_back(static_cast<uint16_t>(rng()));
  return out;
}

// --- float ulps --------------------------------------------------------------

template <typename F>
double UlpError(F got, ld exact) {
  if (std::isnan(exact)) return std::isnan(got) ? 0 : kInf;
  // Beyond F's range the reference is compared after rounding to F.
  const ld rounded = static_cast<ld>(static_cast<F>(exact));
  if (std::isinf(rounded) || std::isinf(got)) return static_cast<ld>(got) == rounded ? 0 : kInf;
  const int digits = std::numeric_limits<F>::digits;
  const int min_exp = std::numeric_limits<F>::min_exponent - 1;  // of the smallest normal
  int e = exact == 0 ? min_exp : std::ilogb(exact);
  if (e < min_exp) e = min_exp;
  const ld ulp = std::ldexp(static_cast<ld>(1), e - digits + 1);
  return static_cast<double>(std::fabs(static_cast<ld>(got) - exact) / ulp);
}

template <typename F>
std::vector<F> FloatInputs() {
  std::vector<F> out = {0, -0.0, 1, -1, 0.5, -0.5, 2, -3, 1e-3, -1e-3, 0.25, 0.75, 1.5, -2.5,
                        3.14159, 10, -10, 100, 1e-30, std::numeric_limits<F>::denorm_min(),
                        std::numeric_limits<F>::min(), std::numeric_limits<F>::max()};
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int i = 0; i < 400; ++i) out.push_back(static_cast<F>(u(rng)));
  for (int i = 0; i < 400; ++i) out.push_back(static_cast<F>(20 * u(rng)));
  for (int i = 0; i < 400; ++i) out.push_back(static_cast<F>(std::exp(60 * u(rng)) * (u(rng) < 0 ? -1 : 1)));
  return out;
}

// --- 1. half arithmetic and math -------------------------------------------

struct HalfBinary {
  const char* name;
  std::function<half(half, half)> f;
  std::function<double(double, double)> exact;
};

TEST(HalfMathTest, BinaryOperationsRoundTheExactResult) {
  const std::vector<HalfBinary> cases = {
      {"add", [](half a, half b) { return wp::add(a, b); }, [](double a, double b) { return a + b; }},
      {"sub", [](half a, half b) { return wp::sub(a, b); }, [](double a, double b) { return a - b; }},
      {"mul", [](half a, half b) { return wp::mul(a, b); }, [](double a, double b) { return a * b; }},
      {"div", [](half a, half b) { return wp::div(a, b); }, [](double a, double b) { return a / b; }},
      {"mod", [](half a, half b) { return wp::mod(a, b); }, [](double a, double b) { return std::fmod(a, b); }},
      {"min", [](half a, half b) { return wp::min(a, b); }, [](double a, double b) { return std::fmin(a, b); }},
      {"max", [](half a, half b) { return wp::max(a, b); }, [](double a, double b) { return std::fmax(a, b); }},
      {"copysign", [](half a, half b) { return wp::copysign(a, b); },
       [](double a, double b) { return std::copysign(a, b); }},
      {"pow", [](half a, half b) { return wp::pow(a, b); },
       [](double a, double b) { return static_cast<double>(std::pow(static_cast<ld>(a), static_cast<ld>(b))); }},
      {"atan2", [](half a, half b) { return wp::atan2(a, b); },
       [](double a, double b) { return static_cast<double>(std::atan2(static_cast<ld>(a), static_cast<ld>(b))); }},
      // Warp floors the quotient after rounding it to half.
      {"floordiv", [](half a, half b) { return wp::floordiv(a, b); },
       [](double a, double b) { return std::floor(HalfValue(RoundToHalf(a / b))); }},
  };
  const std::vector<uint16_t> bs = SomeHalves();
  for (const HalfBinary& c : cases) {
    const bool is_pow = std::string(c.name) == "pow";
    int failures = 0;
    for (uint32_t ab = 0; ab <= 0xffff; ab += 7) {
      for (uint16_t bb : bs) {
        const half a = H(static_cast<uint16_t>(ab)), b = H(bb);
        // pow(1, NaN) and pow(NaN, 0) are 1, but libm gives NaN for signaling
        // NaNs, which half_to_float keeps signaling (hardware would quiet them).
        if (is_pow && (IsSignalingNan(a) || IsSignalingNan(b))) continue;
        ::testing::AssertionResult r = HalfMatches(c.f(a, b), c.exact(HalfValue(a.bits), HalfValue(bb)));
        if (!r && ++failures <= 5) ADD_FAILURE() << c.name << "(0x" << std::hex << ab << ", 0x" << bb << "): " << r.message();
      }
    }
    EXPECT_EQ(failures, 0) << c.name;
  }
}

struct HalfUnary {
  const char* name;
  half (*f)(half);
  std::function<double(double)> exact;
};

#define WP_H1(fn) [](half x) { return wp::fn(x); }
#define LD1(fn) [](double x) { return static_cast<double>(std::fn(static_cast<ld>(x))); }

TEST(HalfMathTest, UnaryFunctionsOnEveryHalf) {
  const double pi = 3.14159265358979323846;
  const std::vector<HalfUnary> cases = {
      {"neg", WP_H1(neg), [](double x) { return -x; }},
      {"pos", WP_H1(pos), [](double x) { return x; }},
      {"abs", WP_H1(abs), [](double x) { return std::fabs(x); }},
      {"sqrt", WP_H1(sqrt), LD1(sqrt)},
      {"cbrt", WP_H1(cbrt), LD1(cbrt)},
      {"sin", WP_H1(sin), LD1(sin)},
      {"cos", WP_H1(cos), LD1(cos)},
      {"tan", WP_H1(tan), LD1(tan)},
      {"asin", WP_H1(asin), [](double x) { return static_cast<double>(std::asin(static_cast<ld>(std::isnan(x) ? -1 : std::fmin(std::fmax(x, -1), 1)))); }},
      {"acos", WP_H1(acos), [](double x) { return static_cast<double>(std::acos(static_cast<ld>(std::isnan(x) ? -1 : std::fmin(std::fmax(x, -1), 1)))); }},
      {"atan", WP_H1(atan), LD1(atan)},
      {"sinh", WP_H1(sinh), LD1(sinh)},
      {"cosh", WP_H1(cosh), LD1(cosh)},
      {"tanh", WP_H1(tanh), LD1(tanh)},
      {"exp", WP_H1(exp), LD1(exp)},
      {"log", WP_H1(log), LD1(log)},
      {"log2", WP_H1(log2), LD1(log2)},
      {"log10", WP_H1(log10), LD1(log10)},
      {"erf", WP_H1(erf), LD1(erf)},
      {"erfc", WP_H1(erfc), LD1(erfc)},
      {"floor", WP_H1(floor), [](double x) { return std::floor(x); }},
      {"ceil", WP_H1(ceil), [](double x) { return std::ceil(x); }},
      {"trunc", WP_H1(trunc), [](double x) { return std::trunc(x); }},
      {"round", WP_H1(round), [](double x) { return std::round(x); }},
      {"rint", WP_H1(rint), [](double x) { return std::nearbyint(x); }},
      {"frac", WP_H1(frac), [](double x) { return x - std::trunc(x); }},
      {"sign", WP_H1(sign), [](double x) { return x < 0 ? -1.0 : 1.0; }},
      {"step", WP_H1(step), [](double x) { return x < 0 ? 1.0 : 0.0; }},
      {"nonzero", WP_H1(nonzero), [](double x) { return x == 0 ? 0.0 : 1.0; }},
      {"degrees", WP_H1(degrees), [pi](double x) { return x * (180 / pi); }},
      {"radians", WP_H1(radians), [pi](double x) { return x * (pi / 180); }},
  };
  for (const HalfUnary& c : cases) {
    int failures = 0;
    for (uint16_t b : AllHalves()) {
      const double x = HalfValue(b);
      ::testing::AssertionResult r = HalfMatches(c.f(H(b)), c.exact(x));
      if (!r && ++failures <= 5) ADD_FAILURE() << c.name << "(0x" << std::hex << b << " = " << x << "): " << r.message();
    }
    EXPECT_EQ(failures, 0) << c.name;
  }
}

TEST(HalfMathTest, NegAndAbsAreExactOnTheSignBit) {
  for (uint16_t b : AllHalves()) {
    ASSERT_EQ(wp::neg(H(b)).bits, b ^ 0x8000);
    ASSERT_EQ(wp::abs(H(b)).bits, b & 0x7fff);
  }
}

TEST(HalfMathTest, ComparisonsAreIeee) {
  for (uint32_t ab = 0; ab <= 0xffff; ab += 3) {
    for (uint16_t bb : SomeHalves()) {
      const double a = HalfValue(static_cast<uint16_t>(ab)), b = HalfValue(bb);
      const half ha = H(static_cast<uint16_t>(ab)), hb = H(bb);
      ASSERT_EQ(wp::eq(ha, hb), a == b) << std::hex << ab << " " << bb;
      ASSERT_EQ(wp::ne(ha, hb), a != b);
      ASSERT_EQ(wp::lt(ha, hb), a < b);
      ASSERT_EQ(wp::le(ha, hb), a <= b);
      ASSERT_EQ(wp::gt(ha, hb), a > b);
      ASSERT_EQ(wp::ge(ha, hb), a >= b);
    }
  }
  EXPECT_TRUE(wp::eq(H(0x0000), H(0x8000)));  // +0 == -0
  EXPECT_FALSE(wp::eq(H(0x7e00), H(0x7e00)));  // NaN != NaN
}

TEST(HalfMathTest, ClampLerpSmoothstep) {
  for (double x : {-3.0, -1.0, 0.0, 0.3, 0.5, 1.0, 2.0, 70000.0}) {
    EXPECT_TRUE(HalfMatches(wp::clamp(Hf(x), Hf(-1), Hf(1)), std::fmin(std::fmax(x, -1), 1))) << x;
  }
  EXPECT_EQ(wp::clamp(H(0x7e00), Hf(-1), Hf(1)).bits, Hf(-1).bits);  // NaN x: the low bound (fmax)
  // Each operation rounds to half, as in Warp.
  const half a = Hf(1.0), b = Hf(3.0), t = Hf(0.1);
  const double t_h = HalfValue(t.bits);
  const double one_minus = HalfValue(RoundToHalf(1 - t_h));
  const double want = HalfValue(RoundToHalf(HalfValue(RoundToHalf(1 * one_minus)) + HalfValue(RoundToHalf(3 * t_h))));
  EXPECT_EQ(HalfValue(wp::lerp(a, b, t).bits), want);
  EXPECT_EQ(HalfValue(wp::smoothstep(Hf(0), Hf(1), Hf(0.5)).bits), 0.5);
  EXPECT_EQ(HalfValue(wp::smoothstep(Hf(0), Hf(1), Hf(-2)).bits), 0.0);
  EXPECT_EQ(HalfValue(wp::smoothstep(Hf(0), Hf(1), Hf(7)).bits), 1.0);
}

TEST(HalfMathTest, CastsToIntegersClamp) {
  EXPECT_EQ(wp::cast<wp::int32>(H(0x7c00)), INT32_MAX);  // +inf
  EXPECT_EQ(wp::cast<wp::int8>(Hf(1000)), 127);
  EXPECT_EQ(wp::cast<wp::uint8>(Hf(-5)), 0);
  EXPECT_EQ(wp::cast<wp::int64>(H(0x7e00)), 0);  // NaN
  EXPECT_EQ(wp::cast<wp::int16>(Hf(-2.75)), -2);
}

// --- 2. float32 / float64 math against long double -------------------------

template <typename F>
struct FloatUnary {
  const char* name;
  F (*f)(F);
  ld (*exact)(ld);
  double max_ulps;
};

ld Clamp1(ld x) { return std::isnan(x) ? -1 : std::fmin(std::fmax(x, static_cast<ld>(-1)), static_cast<ld>(1)); }

template <typename F>
std::vector<FloatUnary<F>> UnaryCases() {
  // The libm functions are held to glibc's accuracy (a wrong mapping is off by
  // far more); the exact ones to 0 ulps.
  const double l = std::is_same<F, float>::value ? 2.0 : 4.0;
  return {
      {"sqrt", [](F x) { return wp::sqrt(x); }, [](ld x) { return std::sqrt(x); }, 0.5},
      {"cbrt", [](F x) { return wp::cbrt(x); }, [](ld x) { return std::cbrt(x); }, l},
      {"sin", [](F x) { return wp::sin(x); }, [](ld x) { return std::sin(x); }, l},
      {"cos", [](F x) { return wp::cos(x); }, [](ld x) { return std::cos(x); }, l},
      {"tan", [](F x) { return wp::tan(x); }, [](ld x) { return std::tan(x); }, l},
      {"asin", [](F x) { return wp::asin(x); }, [](ld x) { return std::asin(Clamp1(x)); }, l},
      {"acos", [](F x) { return wp::acos(x); }, [](ld x) { return std::acos(Clamp1(x)); }, l},
      {"atan", [](F x) { return wp::atan(x); }, [](ld x) { return std::atan(x); }, l},
      {"sinh", [](F x) { return wp::sinh(x); }, [](ld x) { return std::sinh(x); }, l},
      {"cosh", [](F x) { return wp::cosh(x); }, [](ld x) { return std::cosh(x); }, l},
      {"tanh", [](F x) { return wp::tanh(x); }, [](ld x) { return std::tanh(x); }, l},
      {"exp", [](F x) { return wp::exp(x); }, [](ld x) { return std::exp(x); }, l},
      {"log", [](F x) { return wp::log(x); }, [](ld x) { return std::log(x); }, l},
      {"log2", [](F x) { return wp::log2(x); }, [](ld x) { return std::log2(x); }, l},
      {"log10", [](F x) { return wp::log10(x); }, [](ld x) { return std::log10(x); }, l},
      {"erf", [](F x) { return wp::erf(x); }, [](ld x) { return std::erf(x); }, l},
      {"erfc", [](F x) { return wp::erfc(x); }, [](ld x) { return std::erfc(x); }, l},
      {"floor", [](F x) { return wp::floor(x); }, [](ld x) { return std::floor(x); }, 0},
      {"ceil", [](F x) { return wp::ceil(x); }, [](ld x) { return std::ceil(x); }, 0},
      {"trunc", [](F x) { return wp::trunc(x); }, [](ld x) { return std::trunc(x); }, 0},
      {"round", [](F x) { return wp::round(x); }, [](ld x) { return std::round(x); }, 0},
      {"rint", [](F x) { return wp::rint(x); }, [](ld x) { return std::nearbyint(x); }, 0},
      {"abs", [](F x) { return wp::abs(x); }, [](ld x) { return std::fabs(x); }, 0},
      {"frac", [](F x) { return wp::frac(x); }, [](ld x) { return x - std::trunc(x); }, 0},
      {"degrees", [](F x) { return wp::degrees(x); },
       [](ld x) { return x * (180 / 3.14159265358979323846264338327950288L); }, 1.0},
      {"radians", [](F x) { return wp::radians(x); },
       [](ld x) { return x * (3.14159265358979323846264338327950288L / 180); }, 1.0},
      {"sign", [](F x) { return wp::sign(x); }, [](ld x) { return x < 0 ? static_cast<ld>(-1) : static_cast<ld>(1); }, 0},
      {"step", [](F x) { return wp::step(x); }, [](ld x) { return x < 0 ? static_cast<ld>(1) : static_cast<ld>(0); }, 0},
      {"nonzero", [](F x) { return wp::nonzero(x); }, [](ld x) { return x == 0 ? static_cast<ld>(0) : static_cast<ld>(1); }, 0},
  };
}

template <typename F>
void CheckUnary() {
  std::vector<F> inputs = FloatInputs<F>();
  for (F s : {static_cast<F>(kInf), static_cast<F>(-kInf), static_cast<F>(kNan), static_cast<F>(1.0000001), static_cast<F>(-1.5)})
    inputs.push_back(s);
  for (const FloatUnary<F>& c : UnaryCases<F>()) {
    double worst = 0;
    F worst_x = 0;
    for (F x : inputs) {
      const ld want = c.exact(static_cast<ld>(x));
      const F got = c.f(x);
      const double err = UlpError(got, want);
      if (err > worst) { worst = err; worst_x = x; }
    }
    EXPECT_LE(worst, c.max_ulps) << c.name << " worst at x = " << worst_x << " (" << sizeof(F) * 8 << "-bit)";
  }
}

TEST(FloatMathTest, UnaryFunctionsFloat32) { CheckUnary<float>(); }
TEST(FloatMathTest, UnaryFunctionsFloat64) { CheckUnary<double>(); }

// float32 sin and cos on the CPU are warpd's own (trig.h). Two paths:
//   - the table path, over the whole float range (huge arguments, the floats
//     nearest to multiples of pi/2, subnormals): within 0.52 ulp of long
//     double (0.501 measured), glibc's accuracy;
//   - the float path, for |x| <= kFastTrigLimit: within 0.95 ulp (0.924
//     measured over every float of the range).
// wp::sin/cos take the float path where it applies (when the CPU has FMA),
// and sincos_lanes gives every lane exactly what they give.
using ld_fn = ld (*)(ld);

// Worst error in ulps of `f` over `inputs`, and where.
std::pair<double, float> WorstUlps(const std::vector<float>& inputs, float (*f)(float), ld_fn exact) {
  double worst = 0;
  float worst_x = 0;
  for (float x : inputs) {
    const ld want = exact(static_cast<ld>(x));
    const float got = f(x);
    const float rounded = static_cast<float>(want);
    const ld ulp = std::fabs(static_cast<ld>(std::nextafter(rounded, std::numeric_limits<float>::infinity())) -
                             static_cast<ld>(std::nextafter(rounded, -std::numeric_limits<float>::infinity()))) / 2;
    const double err = static_cast<double>(std::fabs(static_cast<ld>(got) - want) / ulp);
    if (err > worst) {
      worst = err;
      worst_x = x;
    }
  }
  return {worst, worst_x};
}

ld ExactSin(ld x) { return std::sin(x); }
ld ExactCos(ld x) { return std::cos(x); }

// Every 4093rd float of both signs up to `limit`, and the floats next to
// multiples of pi/2 below it.
std::vector<float> TrigInputs(float limit) {
  std::vector<float> inputs;
  const uint32_t top = std::bit_cast<uint32_t>(limit);
  for (uint64_t b = 0; b <= top; b += 4093) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
    inputs.push_back(x);
    inputs.push_back(-x);
  }
  for (int k = 1; k < 200000; k += 7) {
    const float near = static_cast<float>(k * 1.57079632679489661923L);
    if (!(std::fabs(near) < limit)) break;
    inputs.push_back(near);
    inputs.push_back(std::nextafter(near, 0.0f));
    inputs.push_back(std::nextafter(near, 1e30f));
  }
  return inputs;
}

TEST(FloatMathTest, Float32SinCosTablePathOverTheWholeRange) {
  std::vector<float> inputs = TrigInputs(std::numeric_limits<float>::max());
  // Huge multiples-of-pi/2 neighbours that glibc's tests know as hard.
  for (float x : {16367173.0f * 1.0f, 1.0e22f, 8.7e37f, 3.4e38f, 1.0e-40f, 1.4e-45f}) inputs.push_back(x);
  for (auto [name, f, exact] : {std::tuple{"sin", +[](float x) { return wp::trig_detail::sin_table(x); }, &ExactSin},
                                std::tuple{"cos", +[](float x) { return wp::trig_detail::cos_table(x); }, &ExactCos}}) {
    auto [worst, at] = WorstUlps(inputs, f, exact);
    EXPECT_LT(worst, 0.52) << name << " is off by " << worst << " ulp at " << at;
  }
}

TEST(FloatMathTest, Float32SinCosFloatPathUpToItsLimit) {
  const std::vector<float> inputs = TrigInputs(wp::kFastTrigLimit);
  ASSERT_GT(inputs.size(), 500000u);
  for (auto [name, f, exact] :
       {std::tuple{"sin", +[](float x) { return wp::trig_detail::sin_fast(wp::trig_detail::reduce_f(x)); }, &ExactSin},
        std::tuple{"cos", +[](float x) { return wp::trig_detail::cos_fast(wp::trig_detail::reduce_f(x)); }, &ExactCos}}) {
    auto [worst, at] = WorstUlps(inputs, f, exact);
    EXPECT_LT(worst, 0.95) << name << " is off by " << worst << " ulp at " << at;
    EXPECT_GT(worst, 0.3) << name << ": the float path cannot be this close (is it the table path?)";
  }
}

TEST(FloatMathTest, Float32SinCosSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(wp::sin(inf)) && std::isnan(wp::sin(-inf)) && std::isnan(wp::cos(inf)));
  EXPECT_TRUE(std::isnan(wp::sin(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(wp::cos(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::signbit(wp::sin(-0.0f)) && wp::sin(-0.0f) == 0.0f);
  EXPECT_FALSE(std::signbit(wp::sin(0.0f)));
  EXPECT_EQ(wp::cos(0.0f), 1.0f);
  EXPECT_EQ(wp::cos(-0.0f), 1.0f);
  const float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(wp::sin(tiny), tiny);
  EXPECT_EQ(wp::sin(-1e-30f), -1e-30f);
  // The float path on its own, for the same values.
  using wp::trig_detail::reduce_f;
  EXPECT_TRUE(std::signbit(wp::trig_detail::sin_fast(reduce_f(-0.0f))));
  EXPECT_EQ(wp::trig_detail::cos_fast(reduce_f(0.0f)), 1.0f);
  EXPECT_EQ(wp::trig_detail::sin_fast(reduce_f(tiny)), tiny);
  EXPECT_EQ(wp::trig_detail::sin_fast(reduce_f(-1e-30f)), -1e-30f);
}

// sincos_lanes gives each lane what the scalar functions give, whether all
// lanes are in the float path's range or some are not (huge, infinite,
// NaN), and when all are small enough to skip the reduction (and when one
// is just past that).
TEST(FloatMathTest, Float32SinCosLanesEqualTheScalarFunctions) {
  constexpr int kN = 64;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> small(-100.0f, 100.0f);
  // All lanes this small take the shortcut without a reduction.
  const float lim = wp::trig_detail::kSmallTrigLimit;
  std::uniform_real_distribution<float> tiny(-lim, lim);
  const float outside[] = {65536.5f, -1e6f, 3.4e38f, std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(), 65536.0f, -65536.0f};
  const float edges[] = {lim, -lim, 0.0f, -0.0f, 1e-30f, -1e-45f, std::nextafter(lim, 1.0f)};
  for (int trial = 0; trial < 400; ++trial) {
    float x[kN], s[kN], c[kN], both_s[kN], both_c[kN];
    for (float& v : x) v = trial < 200 ? small(rng) : tiny(rng);
    if (trial < 200 && trial % 2 == 1) x[rng() % kN] = outside[trial / 2 % std::size(outside)];
    if (trial >= 200 && trial % 3 == 1) x[rng() % kN] = edges[trial / 3 % std::size(edges)];
    wp::sincos_lanes<kN, true, false>(s, nullptr, x);
    wp::sincos_lanes<kN, false, true>(nullptr, c, x);
    wp::sincos_lanes<kN, true, true>(both_s, both_c, x);
    for (int l = 0; l < kN; ++l) {
      const float ws = wp::sin(x[l]), wc = wp::cos(x[l]);
      EXPECT_EQ(std::bit_cast<uint32_t>(s[l]), std::bit_cast<uint32_t>(ws)) << x[l];
      EXPECT_EQ(std::bit_cast<uint32_t>(c[l]), std::bit_cast<uint32_t>(wc)) << x[l];
      EXPECT_EQ(std::bit_cast<uint32_t>(both_s[l]), std::bit_cast<uint32_t>(ws)) << x[l];
      EXPECT_EQ(std::bit_cast<uint32_t>(both_c[l]), std::bit_cast<uint32_t>(wc)) << x[l];
    }
  }
}

// float32 exp on the CPU is warpd's own (exp.h): within 1 ulp (0.78 over
// every float of [-104, 89], scripts/sweep_fast_exp.cc), subnormal results
// and the edges included.
TEST(FloatMathTest, Float32ExpWithinAnUlp) {
  std::vector<float> inputs;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 4093) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
    if (x >= -104.0f && x <= 88.72f) inputs.push_back(x);
  }
  for (float x : {88.7228317f, -87.33654f, -87.3365479f, -103.2789f, -103.972f, 0.3465736f, -0.3465736f}) {
    inputs.push_back(x);
  }
  ASSERT_GT(inputs.size(), 500000u);
  auto [worst, at] = WorstUlps(inputs, [](float x) { return wp::exp(x); }, [](ld x) { return std::exp(x); });
  EXPECT_LT(worst, 1.0) << "exp is off by " << worst << " ulp at " << at;
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(wp::exp(0.0f), 1.0f);
  EXPECT_EQ(wp::exp(-0.0f), 1.0f);
  EXPECT_EQ(wp::exp(inf), inf);
  EXPECT_EQ(wp::exp(89.0f), inf);
  EXPECT_EQ(wp::exp(1e30f), inf);
  EXPECT_EQ(wp::exp(-inf), 0.0f);
  EXPECT_EQ(wp::exp(-104.0f), 0.0f);
  EXPECT_EQ(wp::exp(-1e30f), 0.0f);
  EXPECT_TRUE(std::isnan(wp::exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(wp::exp(-103.2789f), std::numeric_limits<float>::denorm_min());  // about 1.4e-45
  EXPECT_EQ(wp::exp(88.72283f), std::exp(88.72283f));
}

template <typename F>
void CheckBinary() {
  const std::vector<F> xs = FloatInputs<F>();
  std::vector<F> ys = {1, -1, 2, -2, 0.5, 3, -7, 0.1, 10, 1e-5, static_cast<F>(kInf)};
  const double l = sizeof(F) == 4 ? 2.0 : 4.0;
  for (F x : xs) {
    for (F y : ys) {
      const ld lx = x, ly = y;
      EXPECT_LE(UlpError(wp::pow(std::fabs(x), y), std::pow(std::fabs(lx), ly)), l) << x << " " << y;
      EXPECT_LE(UlpError(wp::atan2(x, y), std::atan2(lx, ly)), l) << x << " " << y;
      EXPECT_EQ(UlpError(wp::mod(x, y), std::fmod(lx, ly)), 0) << x << " " << y;
      EXPECT_EQ(UlpError(wp::copysign(x, y), std::copysign(lx, ly)), 0);
      EXPECT_EQ(UlpError(wp::copysign(x, -y), std::copysign(lx, -ly)), 0);
    }
  }
}

TEST(FloatMathTest, BinaryFunctions) {
  CheckBinary<float>();
  CheckBinary<double>();
}

template <typename F>
void CheckFloatSemantics() {
  const F nan = static_cast<F>(kNan), inf = static_cast<F>(kInf);
  // floordiv floors the rounded quotient; mod is fmod (sign of the dividend).
  EXPECT_EQ(wp::floordiv(F(-7), F(2)), F(-4));
  EXPECT_EQ(wp::floordiv(F(7), F(-2)), F(-4));
  EXPECT_EQ(wp::floordiv(F(7), F(2)), F(3));
  EXPECT_EQ(wp::floordiv(F(-0.5), F(1)), F(-1));
  EXPECT_EQ(wp::mod(F(-7), F(2)), F(-1));
  EXPECT_EQ(wp::mod(F(7), F(-2)), F(1));
  EXPECT_EQ(wp::mod(F(5.5), F(2)), F(1.5));
  EXPECT_TRUE(std::isnan(wp::mod(F(1), F(0))));
  EXPECT_EQ(wp::floordiv(F(1), F(0)), inf);
  // min/max/clamp: NaN is missing (fmin/fmax).
  EXPECT_EQ(wp::min(nan, F(1)), F(1));
  EXPECT_EQ(wp::min(F(1), nan), F(1));
  EXPECT_EQ(wp::max(nan, F(-1)), F(-1));
  EXPECT_EQ(wp::max(F(-1), nan), F(-1));
  EXPECT_TRUE(std::isnan(wp::min(nan, nan)));
  EXPECT_EQ(wp::min(F(2), F(-3)), F(-3));
  EXPECT_EQ(wp::max(F(2), F(-3)), F(2));
  EXPECT_EQ(wp::clamp(F(5), F(0), F(1)), F(1));
  EXPECT_EQ(wp::clamp(F(-5), F(0), F(1)), F(0));
  EXPECT_EQ(wp::clamp(F(0.25), F(0), F(1)), F(0.25));
  EXPECT_EQ(wp::clamp(nan, F(0), F(1)), F(0));
  // sign / step / nonzero at 0, -0 and NaN.
  EXPECT_EQ(wp::sign(F(0)), F(1));
  EXPECT_EQ(wp::sign(F(-0.0)), F(1));
  EXPECT_EQ(wp::sign(nan), F(1));
  EXPECT_EQ(wp::sign(F(-2)), F(-1));
  EXPECT_EQ(wp::step(F(-0.0)), F(0));
  EXPECT_EQ(wp::step(F(-1e-30)), F(1));
  EXPECT_EQ(wp::nonzero(F(-0.0)), F(0));
  EXPECT_EQ(wp::nonzero(nan), F(1));
  // frac keeps the sign; acos/asin clamp (NaN goes to the low bound, as in Warp).
  EXPECT_EQ(wp::frac(F(-2.5)), F(-0.5));
  EXPECT_EQ(wp::acos(F(1.0000001)), F(0));
  EXPECT_EQ(wp::asin(F(-3)), static_cast<F>(-1.5707963267948966));
  EXPECT_EQ(wp::acos(nan), static_cast<F>(3.141592653589793));
  // Specials.
  for (F x : {F(0), F(-0.0), F(1), F(-1e30), std::numeric_limits<F>::denorm_min(),
              std::numeric_limits<F>::max()}) {
    EXPECT_FALSE(wp::isnan(x)) << x;
    EXPECT_FALSE(wp::isinf(x)) << x;
    EXPECT_TRUE(wp::isfinite(x)) << x;
  }
  for (F x : {inf, -inf}) {
    EXPECT_FALSE(wp::isnan(x));
    EXPECT_TRUE(wp::isinf(x));
    EXPECT_FALSE(wp::isfinite(x));
  }
  for (F x : {nan, -nan}) {
    EXPECT_TRUE(wp::isnan(x));
    EXPECT_FALSE(wp::isinf(x));
    EXPECT_FALSE(wp::isfinite(x));
  }
  EXPECT_EQ(wp::lerp(F(1), F(3), F(0.5)), F(2));
  EXPECT_EQ(wp::lerp(F(1), F(3), F(0)), F(1));
  EXPECT_EQ(wp::lerp(F(1), F(3), F(1)), F(3));
  EXPECT_EQ(wp::smoothstep(F(0), F(2), F(1)), F(0.5));
  EXPECT_EQ(wp::smoothstep(F(0), F(2), F(0.5)), F(0.25 * 0.25 * (3 - 0.5)));
  EXPECT_EQ(wp::smoothstep(F(2), F(0), F(-1)), F(1));  // reversed edges
}

TEST(FloatMathTest, DivApproxIsExactDivisionOnTheCpu) {
  for (float x : FloatInputs<float>()) {
    EXPECT_EQ(wp::div_approx(x, 3.0f), x / 3.0f);
    EXPECT_EQ(wp::div_approx(static_cast<double>(x), 7.0), static_cast<double>(x) / 7.0);
  }
  EXPECT_EQ(wp::div_approx(Hf(1), Hf(3)).bits, RoundToHalf(1.0 / 3));
  EXPECT_TRUE(wp::eq(wp::div_approx(wp::vec3f{{1, 2, 3}}, 2.0f), wp::vec3f{{0.5f, 1, 1.5f}}));
  EXPECT_TRUE(wp::eq(wp::div_approx(6.0, wp::vec3d{{1, 2, 3}}), wp::vec3d{{6, 3, 2}}));
}

TEST(FloatMathTest, Float32Semantics) { CheckFloatSemantics<float>(); }
TEST(FloatMathTest, Float64Semantics) { CheckFloatSemantics<double>(); }

TEST(FloatMathTest, HalfSpecials) {
  for (uint16_t b : AllHalves()) {
    const double v = HalfValue(b);
    ASSERT_EQ(wp::isnan(H(b)), std::isnan(v)) << std::hex << b;
    ASSERT_EQ(wp::isinf(H(b)), std::isinf(v)) << std::hex << b;
    ASSERT_EQ(wp::isfinite(H(b)), std::isfinite(v)) << std::hex << b;
  }
}

// --- erfinv / erfcinv -------------------------------------------------------

// x with erfc(x) = c for c in (0, 1], by bisection in long double.
ld ErfcinvReference(ld c) {
  ld lo = 0, hi = 110;  // erfcl(110) underflows long double
  for (int i = 0; i < 200; ++i) {
    const ld mid = (lo + hi) / 2;
    if (std::erfc(mid) > c) lo = mid; else hi = mid;
  }
  return (lo + hi) / 2;
}

// x with erf(x) = y for |y| < 1, by bisection in long double (by the series
// sqrt(pi)/2 (y + pi/12 y^3) near 0, where bisection's absolute error matters).
ld ErfinvReference(ld y) {
  if (std::fabs(y) > 0.5L) return std::copysign(ErfcinvReference(1 - std::fabs(y)), y);
  const ld pi = 3.14159265358979323846264338327950288L;
  if (std::fabs(y) < 1e-6L) return std::sqrt(pi) / 2 * (y + pi / 12 * y * y * y);
  ld lo = -1, hi = 1;
  for (int i = 0; i < 200; ++i) {
    const ld mid = (lo + hi) / 2;
    if (std::erf(mid) < y) lo = mid; else hi = mid;
  }
  return (lo + hi) / 2;
}

template <typename F>
std::vector<F> ErfinvInputs() {
  std::vector<F> ys = {0, -0.0, 0.5, -0.5, 0.25, 0.9, -0.99, 1e-10, -1e-30, std::numeric_limits<F>::denorm_min()};
  for (int k = 1; k < std::numeric_limits<F>::digits; ++k) ys.push_back(static_cast<F>(1 - std::ldexp(1.0, -k)));
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int i = 0; i < 3000; ++i) ys.push_back(static_cast<F>(u(rng)));
  return ys;
}

template <typename F>
void CheckErfinv(double max_ulps) {
  double worst = 0;
  F worst_y = 0;
  for (F y : ErfinvInputs<F>()) {
    const double e = UlpError(wp::erfinv(y), ErfinvReference(y));
    if (e > worst) { worst = e; worst_y = y; }
  }
  EXPECT_LE(worst, max_ulps) << "erfinv worst at y = " << worst_y;
  // erfcinv over (0, 2), including the deep tail down to the subnormals.
  std::vector<F> cs;
  for (F y : ErfinvInputs<F>()) cs.push_back(static_cast<F>(1 - y));
  for (int e = -1; e > std::numeric_limits<F>::min_exponent - std::numeric_limits<F>::digits; --e) {
    cs.push_back(static_cast<F>(std::ldexp(1.0, e)));
    cs.push_back(static_cast<F>(std::ldexp(1.7, e)));
    cs.push_back(static_cast<F>(2 - std::ldexp(1.0, e)));
  }
  worst = 0;
  F worst_c = 0;
  for (F c : cs) {
    if (!(c > 0 && c < 2)) continue;
    const ld lc = c;
    const ld want = lc < 0.5L ? ErfcinvReference(lc) : lc <= 1.5L ? ErfinvReference(1 - lc) : -ErfcinvReference(2 - lc);
    const double e = UlpError(wp::erfcinv(c), want);
    if (e > worst) { worst = e; worst_c = c; }
  }
  EXPECT_LE(worst, max_ulps) << "erfcinv worst at c = " << worst_c;
}

TEST(ErfinvTest, Float32AgainstBisection) { CheckErfinv<float>(0.51); }
TEST(ErfinvTest, Float64AgainstBisection) { CheckErfinv<double>(2.0); }

TEST(ErfinvTest, RoundTripsThroughErf) {
  for (double y : ErfinvInputs<double>()) {
    if (std::fabs(y) > 0.9) continue;  // erf flattens: the round trip loses digits there
    EXPECT_NEAR(std::erf(wp::erfinv(y)), y, 4e-16 * std::fmax(std::fabs(y), 1e-300) + 1e-300) << y;
  }
  for (double x = -5.5; x <= 5.5; x += 0.0625) {
    EXPECT_NEAR(wp::erfinv(std::erf(x)), x, 1e-13 * std::exp(x * x)) << x;
    EXPECT_NEAR(wp::erfcinv(std::erfc(x)), x, 1e-13 * std::exp(x * x)) << x;
  }
}

TEST(ErfinvTest, Specials) {
  EXPECT_EQ(wp::erfinv(1.0), kInf);
  EXPECT_EQ(wp::erfinv(-1.0), -kInf);
  EXPECT_EQ(wp::erfinv(1.0f), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(wp::erfinv(1.5)));
  EXPECT_TRUE(std::isnan(wp::erfinv(-1.0000001f)));
  EXPECT_TRUE(std::isnan(wp::erfinv(kNan)));
  EXPECT_TRUE(std::signbit(wp::erfinv(-0.0)));
  EXPECT_EQ(wp::erfcinv(0.0), kInf);
  EXPECT_EQ(wp::erfcinv(2.0), -kInf);
  EXPECT_EQ(wp::erfcinv(1.0), 0.0);
  EXPECT_TRUE(std::isnan(wp::erfcinv(-0.5)));
  EXPECT_TRUE(std::isnan(wp::erfcinv(2.5f)));
  EXPECT_TRUE(HalfMatches(wp::erfinv(Hf(0.5)), static_cast<double>(ErfinvReference(0.5L))));
  EXPECT_TRUE(HalfMatches(wp::erfcinv(Hf(0.25)), static_cast<double>(ErfcinvReference(0.25L))));
  EXPECT_EQ(wp::erfinv(Hf(1)).bits, 0x7c00);
}

// --- 3. Integers -------------------------------------------------------------

template <typename T>
struct IntRef {
  // Reference results computed in __int128 and wrapped to T.
  static T Wrap(__int128 v) { return static_cast<T>(static_cast<uint64_t>(v)); }
  static T Div(__int128 a, __int128 b) { return b == 0 ? 0 : Wrap(a / b); }
  static T Mod(__int128 a, __int128 b) { return b == 0 ? 0 : Wrap(a % b); }
  static T FloorDiv(__int128 a, __int128 b) {
    if (b == 0) return 0;
    __int128 q = a / b;
    if (q * b != a && ((a < 0) != (b < 0))) --q;
    return Wrap(q);
  }
};

template <typename T>
void CheckIntDivision(T a, T b) {
  ASSERT_EQ(wp::div(a, b), IntRef<T>::Div(a, b)) << +a << " / " << +b;
  ASSERT_EQ(wp::mod(a, b), IntRef<T>::Mod(a, b)) << +a << " % " << +b;
  ASSERT_EQ(wp::floordiv(a, b), IntRef<T>::FloorDiv(a, b)) << +a << " // " << +b;
}

template <typename T>
void CheckIntDivisionSampled() {
  const T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  std::vector<T> edge = {0, 1, 2, 3, 7, static_cast<T>(lo), static_cast<T>(hi), static_cast<T>(lo + 1),
                         static_cast<T>(hi - 1), static_cast<T>(hi / 2), static_cast<T>(-1), static_cast<T>(-2),
                         static_cast<T>(-7)};
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200; ++i) edge.push_back(static_cast<T>(rng()));
  for (int i = 0; i < 50; ++i) edge.push_back(static_cast<T>(rng() % 41) - static_cast<T>(20));
  for (T a : edge)
    for (T b : edge) CheckIntDivision(a, b);
}

template <typename T>
void CheckIntDivisionExhaustive8() {
  for (int a = std::numeric_limits<T>::min(); a <= std::numeric_limits<T>::max(); ++a) {
    for (int b = std::numeric_limits<T>::min(); b <= std::numeric_limits<T>::max(); ++b) {
      const int q = b == 0 ? 0 : static_cast<int>(std::floor(static_cast<double>(a) / b));
      ASSERT_EQ(wp::floordiv(static_cast<T>(a), static_cast<T>(b)), static_cast<T>(q)) << a << " // " << b;
      CheckIntDivision(static_cast<T>(a), static_cast<T>(b));
    }
  }
}

TEST(IntMathTest, DivModFloordivExhaustive8Bit) {
  CheckIntDivisionExhaustive8<wp::int8>();
  CheckIntDivisionExhaustive8<wp::uint8>();
}

TEST(IntMathTest, DivModFloordivSampledWide) {
  CheckIntDivisionSampled<wp::int16>();
  CheckIntDivisionSampled<wp::uint16>();
  CheckIntDivisionSampled<wp::int32>();
  CheckIntDivisionSampled<wp::uint32>();
  CheckIntDivisionSampled<wp::int64>();
  CheckIntDivisionSampled<wp::uint64>();
}

// The table in the Warp docs' terms: // floors, % and div keep C's sign.
template <typename T>
void CheckSignedTable() {
  const T mn = std::numeric_limits<T>::min();
  struct Row { T a, b, div, mod, floordiv; };
  const Row rows[] = {
      {-7, 2, -3, -1, -4}, {7, -2, -3, 1, -4}, {-7, -2, 3, -1, 3}, {7, 2, 3, 1, 3},
      {-6, 2, -3, 0, -3}, {-1, 3, 0, -1, -1}, {0, -5, 0, 0, 0}, {5, 0, 0, 0, 0},
      {mn, -1, mn, 0, mn}, {mn, 0, 0, 0, 0}, {mn, 1, mn, 0, mn}, {mn, 2, static_cast<T>(mn / 2), 0, static_cast<T>(mn / 2)},
      {static_cast<T>(mn + 1), 2, static_cast<T>((mn + 1) / 2), -1, static_cast<T>(mn / 2)},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(wp::div(r.a, r.b), r.div) << +r.a << " / " << +r.b;
    EXPECT_EQ(wp::mod(r.a, r.b), r.mod) << +r.a << " % " << +r.b;
    EXPECT_EQ(wp::floordiv(r.a, r.b), r.floordiv) << +r.a << " // " << +r.b;
  }
  EXPECT_EQ(wp::sign(T(0)), T(1));
  EXPECT_EQ(wp::sign(T(-3)), T(-1));
  EXPECT_EQ(wp::sign(mn), T(-1));
  EXPECT_EQ(wp::step(T(-3)), T(1));
  EXPECT_EQ(wp::step(T(0)), T(0));
  EXPECT_EQ(wp::step(T(4)), T(0));
  EXPECT_EQ(wp::nonzero(T(0)), T(0));
  EXPECT_EQ(wp::nonzero(T(-9)), T(1));
  EXPECT_EQ(wp::abs(T(-5)), T(5));
  EXPECT_EQ(wp::abs(mn), mn);  // wraps
  EXPECT_EQ(wp::min(T(-5), T(3)), T(-5));
  EXPECT_EQ(wp::max(T(-5), T(3)), T(3));
  EXPECT_EQ(wp::clamp(T(9), T(-2), T(4)), T(4));
  EXPECT_EQ(wp::clamp(T(-9), T(-2), T(4)), T(-2));
  EXPECT_EQ(wp::pos(T(-9)), T(-9));
  EXPECT_TRUE(wp::unot(T(0)));
  EXPECT_FALSE(wp::unot(T(-1)));
}

template <typename T>
void CheckUnsignedTable() {
  const T mx = std::numeric_limits<T>::max();
  EXPECT_EQ(wp::floordiv(T(7), T(2)), T(3));
  EXPECT_EQ(wp::floordiv(mx, T(0)), T(0));
  EXPECT_EQ(wp::div(T(7), mx), T(0));
  EXPECT_EQ(wp::mod(T(7), mx), T(7));
  EXPECT_EQ(wp::sign(T(0)), T(1));
  EXPECT_EQ(wp::sign(mx), T(1));
  EXPECT_EQ(wp::step(mx), T(0));
  EXPECT_EQ(wp::nonzero(mx), T(1));
  EXPECT_EQ(wp::abs(mx), mx);
  EXPECT_EQ(wp::clamp(mx, T(1), T(4)), T(4));
}

TEST(IntMathTest, SemanticsTableEveryType) {
  CheckSignedTable<wp::int8>();
  CheckSignedTable<wp::int16>();
  CheckSignedTable<wp::int32>();
  CheckSignedTable<wp::int64>();
  CheckUnsignedTable<wp::uint8>();
  CheckUnsignedTable<wp::uint16>();
  CheckUnsignedTable<wp::uint32>();
  CheckUnsignedTable<wp::uint64>();
}

template <typename T>
int PopcountLoop(T x) {
  uint64_t u = static_cast<uint64_t>(x) & (sizeof(T) == 8 ? ~0ull : ((1ull << (8 * sizeof(T))) - 1));
  int n = 0;
  for (int i = 0; i < 64; ++i) n += (u >> i) & 1;
  return n;
}

template <typename T>
void CheckBitCount() {
  std::mt19937_64 rng(9);
  std::vector<T> xs = {0, 1, static_cast<T>(-1), std::numeric_limits<T>::min(), std::numeric_limits<T>::max()};
  for (int i = 0; i < 5000; ++i) xs.push_back(static_cast<T>(rng()));
  for (T x : xs) {
    const wp::int32 got = wp::bit_count(x);
    ASSERT_EQ(got, PopcountLoop(x)) << +x;
  }
}

TEST(IntMathTest, BitCountMatchesALoop) {
  for (uint32_t x = 0; x <= 0xffff; ++x) {
    ASSERT_EQ(wp::bit_count(static_cast<wp::uint16>(x)), PopcountLoop(static_cast<uint16_t>(x)));
    ASSERT_EQ(wp::bit_count(static_cast<wp::int16>(x)), PopcountLoop(static_cast<int16_t>(x)));
  }
  CheckBitCount<wp::int8>();
  CheckBitCount<wp::uint8>();
  CheckBitCount<wp::int32>();
  CheckBitCount<wp::uint32>();
  CheckBitCount<wp::int64>();
  CheckBitCount<wp::uint64>();
  EXPECT_EQ(wp::bit_count(wp::int8(-1)), 8);  // two's complement, no sign extension
  EXPECT_EQ(wp::bit_count(wp::int64(-1)), 64);
}

// --- 4. Utility --------------------------------------------------------------

TEST(UtilityTest, WhereAndSelectArgumentOrder) {
  // where(cond, value_if_true, value_if_false)
  EXPECT_EQ(wp::where(true, 1, 2), 1);
  EXPECT_EQ(wp::where(false, 1, 2), 2);
  EXPECT_EQ(wp::where(wp::int64(5), 1.5f, 2.5f), 1.5f);  // integer conditions: nonzero is true
  EXPECT_EQ(wp::where(wp::uint8(0), 1.5, 2.5), 2.5);
  // select(cond, value_if_false, value_if_true)
  EXPECT_EQ(wp::select(true, 1, 2), 2);
  EXPECT_EQ(wp::select(false, 1, 2), 1);
  EXPECT_EQ(wp::select(wp::int32(-3), 1, 2), 2);
  const wp::vec3f a{{1, 2, 3}}, b{{4, 5, 6}};
  EXPECT_TRUE(wp::eq(wp::where(1, a, b), a));
  EXPECT_TRUE(wp::eq(wp::select(1, a, b), b));
  EXPECT_EQ(wp::where(true, Hf(1), Hf(2)).bits, Hf(1).bits);
}

// --- 5. Vectors --------------------------------------------------------------

TEST(VecMathTest, ComponentWise) {
  typedef wp::vec_t<5, wp::int32> vec5i;
  const vec5i a{{-7, 7, -6, INT32_MIN, 0}}, b{{2, -2, 0, -1, 3}};
  const vec5i m = wp::mod(a, b), n = wp::neg(a), ab = wp::abs(a), sg = wp::sign(a), p = wp::pos(a);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(m.c[i], wp::mod(a.c[i], b.c[i]));
    EXPECT_EQ(n.c[i], wp::neg(a.c[i]));
    EXPECT_EQ(ab.c[i], wp::abs(a.c[i]));
    EXPECT_EQ(sg.c[i], a.c[i] < 0 ? -1 : 1);
    EXPECT_EQ(p.c[i], a.c[i]);
    EXPECT_EQ(wp::bit_and(a, b).c[i], a.c[i] & b.c[i]);
    EXPECT_EQ(wp::bit_or(a, b).c[i], a.c[i] | b.c[i]);
    EXPECT_EQ(wp::bit_xor(a, b).c[i], a.c[i] ^ b.c[i]);
    EXPECT_EQ(wp::invert(a).c[i], ~a.c[i]);
    EXPECT_EQ(wp::lshift(b, vec5i{{1, 2, 3, 4, 5}}).c[i], wp::lshift(b.c[i], i + 1));
    EXPECT_EQ(wp::rshift(a, vec5i{{1, 1, 1, 1, 1}}).c[i], a.c[i] >> 1);
    EXPECT_EQ(wp::div(wp::int32(12), b).c[i], wp::div(12, b.c[i]));  // scalar / vector
  }
  EXPECT_EQ(wp::mod(a, b).c[0], -1);
  EXPECT_EQ(wp::div(wp::int32(12), b).c[2], 0);  // by zero
  EXPECT_EQ(wp::len(a), 5);
  EXPECT_EQ(wp::len(wp::vec2f{{0, 0}}), 2);

  const wp::vec3f v{{-1.5f, 0.0f, 2.0f}};
  EXPECT_TRUE(wp::eq(wp::abs(v), wp::vec3f{{1.5f, 0.0f, 2.0f}}));
  EXPECT_TRUE(wp::eq(wp::sign(v), wp::vec3f{{-1, 1, 1}}));
  EXPECT_TRUE(wp::eq(wp::div(3.0f, wp::vec3f{{1, 2, 4}}), wp::vec3f{{3, 1.5f, 0.75f}}));
  EXPECT_TRUE(wp::eq(wp::mod(wp::vec3f{{-7, 7, 5.5f}}, wp::vec3f{{2, -2, 2}}), wp::vec3f{{-1, 1, 1.5f}}));
  EXPECT_TRUE(wp::eq(wp::lerp(v, wp::vec3f{{0.5f, 2, 0}}, 0.5f), wp::vec3f{{-0.5f, 1, 1}}));
}

TEST(VecMathTest, ReductionsAndPredicates) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const wp::vec4f a{{3, -2, nan, 7}};
  EXPECT_EQ(wp::min(a), -2.0f);  // NaN skipped
  EXPECT_EQ(wp::max(a), 7.0f);
  EXPECT_EQ(wp::min(wp::vec4f{{nan, 5, 1, 2}}), 1.0f);
  EXPECT_TRUE(std::isnan(wp::max(wp::vec2f{{nan, nan}})));
  EXPECT_EQ(wp::min(wp::vec_t<3, wp::int64>{{4, -9, 2}}), -9);
  EXPECT_EQ(wp::max(wp::vec_t<3, wp::uint8>{{4, 200, 2}}), 200);
  EXPECT_TRUE(wp::isnan(a));
  EXPECT_FALSE(wp::isinf(a));
  EXPECT_FALSE(wp::isfinite(a));
  EXPECT_TRUE(wp::isinf(wp::vec3d{{1, -kInf, 0}}));
  EXPECT_TRUE(wp::isfinite(wp::vec3f{{1, -2, 3e38f}}));
  EXPECT_FALSE(wp::isfinite(wp::vec3f{{1, inf, 0}}));
  EXPECT_FALSE(wp::isnan(wp::vec3f{{1, inf, 0}}));
}

TEST(VecMathTest, HalfVectors) {
  typedef wp::vec_t<3, half> vec3h;
  const vec3h a{{Hf(3), Hf(0), Hf(4)}};
  EXPECT_EQ(HalfValue(wp::length(a).bits), 5.0);
  const vec3h n = wp::normalize(a);
  EXPECT_EQ(n.c[0].bits, Hf(0.6).bits);
  EXPECT_EQ(n.c[2].bits, Hf(0.8).bits);
  const vec3h z = wp::normalize(vec3h{{Hf(0), Hf(0), Hf(0)}});
  EXPECT_TRUE(wp::eq(z, vec3h{{Hf(0), Hf(0), Hf(0)}}));
  EXPECT_TRUE(wp::eq(wp::abs(vec3h{{Hf(-1), Hf(2), Hf(-0.5)}}), vec3h{{Hf(1), Hf(2), Hf(0.5)}}));
  EXPECT_EQ(HalfValue(wp::min(vec3h{{Hf(2), Hf(-1), Hf(5)}}).bits), -1.0);
  EXPECT_TRUE(wp::isnan(vec3h{{Hf(1), H(0x7e00), Hf(2)}}));
  EXPECT_TRUE(wp::eq(wp::lerp(a, vec3h{{Hf(5), Hf(2), Hf(0)}}, Hf(0.5)), vec3h{{Hf(4), Hf(1), Hf(2)}}));
}

}  // namespace

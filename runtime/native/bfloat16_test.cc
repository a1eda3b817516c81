// Host tests of bfloat16 (warpd/native/core.h, scalar.h, atomic.h) against
// references computed here independently: every bfloat16 decoded exactly
// from its fields into a double, and float32 -> bfloat16 rounding found by
// comparing exact distances to the two neighbouring bfloat16 values (ties to
// the even one), not by the header's bit arithmetic.
//
// Checked: the conversions both ways (every bfloat16; float32 patterns at,
// beside and between every pair of neighbours, subnormals, the overflow
// boundary, infinities and NaNs), arithmetic rounded once from float32,
// conversions to and from integers and half, classification, comparisons and
// the atomics Warp 1.19 allows on bfloat16 (add, sub, min, max).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "warpd/native/atomic.h"

namespace {

using wp::bfloat16;

const double kInf = std::numeric_limits<double>::infinity();

// Exact value of bfloat16 bits from the fields (1 sign, 8 exponent, 7
// mantissa bits; bias 127; exponent 0: subnormal with scale 2^-133).
double DecodeBf16(uint16_t bits) {
  const int exp = (bits >> 7) & 0xff;
  const int mant = bits & 0x7f;
  double v;
  if (exp == 0xff) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : kInf;
  } else if (exp == 0) {
    v = std::ldexp(mant, -133);
  } else {
    v = std::ldexp(128 + mant, exp - 134);
  }
  return (bits & 0x8000) ? -v : v;
}

float FloatFromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t BitsOfFloat(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// The bfloat16 nearest to a finite, non-NaN x (ties to even; beyond the
// largest finite value by half an ulp or more: infinity), by distances.
uint16_t RoundRef(double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (std::isinf(a)) return sign | 0x7f80;
  // Largest non-negative bfloat16 <= a, by binary search over the ordered
  // magnitudes 0x0000 .. 0x7f7f.
  uint16_t lo = 0, hi = 0x7f7f;
  if (DecodeBf16(hi) <= a) {
    lo = hi;
  } else {
    while (hi - lo > 1) {
      const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
      (DecodeBf16(mid) <= a ? lo : hi) = mid;
    }
  }
  const double below = DecodeBf16(lo);
  // The next value up; past the largest finite one, the rounding boundary is
  // where the next power of two would be (2^128): halfway is max + ulp/2.
  const double above = lo == 0x7f7f ? std::ldexp(1.0, 128) : DecodeBf16(static_cast<uint16_t>(lo + 1));
  const uint16_t up = lo == 0x7f7f ? 0x7f80 : static_cast<uint16_t>(lo + 1);
  const double d_lo = a - below, d_hi = above - a;
  uint16_t r;
  if (d_lo < d_hi) {
    r = lo;
  } else if (d_hi < d_lo) {
    r = up;
  } else {
    r = (lo & 1) ? up : lo;
  }
  return sign | r;
}

bool IsNan16(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

TEST(Bfloat16Test, EveryBfloat16ConvertsToItsExactFloat) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const double want = DecodeBf16(static_cast<uint16_t>(b));
    const float got = wp::bfloat16_to_float(bfloat16{static_cast<uint16_t>(b)});
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << b;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << std::hex << b;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << std::hex << b;
    }
  }
}

TEST(Bfloat16Test, FloatToBfloat16RoundsToNearestEven) {
  // Around every pair of neighbours: the values themselves, the midpoint
  // (a tie), and one float32 ulp either side of it; both signs.
  int ties_checked = 0;
  for (uint32_t hi = 0; hi < 0x7f80; ++hi) {
    for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      for (uint32_t sign : {0u, 0x80000000u}) {
        const uint32_t bits = sign | (hi << 16) | low;
        const float f = FloatFromBits(bits);
        const uint16_t got = wp::float_to_bfloat16(f).bits;
        const uint16_t want = RoundRef(static_cast<double>(f));
        ASSERT_EQ(got, want) << std::hex << "float bits 0x" << bits;
        if (low == 0x8000u) ++ties_checked;
      }
    }
  }
  EXPECT_EQ(ties_checked, 2 * 0x7f80);
  // Random float32 patterns (finite ones against the reference).
  std::mt19937 rng(1234);
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t bits = rng();
    const float f = FloatFromBits(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(wp::float_to_bfloat16(f).bits, RoundRef(static_cast<double>(f))) << std::hex << bits;
  }
}

TEST(Bfloat16Test, SpecialValues) {
  EXPECT_EQ(wp::float_to_bfloat16(0.0f).bits, 0x0000);
  EXPECT_EQ(wp::float_to_bfloat16(-0.0f).bits, 0x8000);
  EXPECT_EQ(wp::float_to_bfloat16(std::numeric_limits<float>::infinity()).bits, 0x7f80);
  EXPECT_EQ(wp::float_to_bfloat16(-std::numeric_limits<float>::infinity()).bits, 0xff80);
  EXPECT_EQ(wp::float_to_bfloat16(1.0f).bits, 0x3f80);
  // The largest float32 is past max + ulp/2: infinity; so is max + ulp/2 itself (a tie, odd below).
  EXPECT_EQ(wp::float_to_bfloat16(std::numeric_limits<float>::max()).bits, 0x7f80);
  EXPECT_EQ(wp::float_to_bfloat16(FloatFromBits(0x7f7f8000u)).bits, 0x7f80);
  EXPECT_EQ(wp::float_to_bfloat16(FloatFromBits(0x7f7f7fffu)).bits, 0x7f7f);
  // Subnormals: float32's smallest rounds to zero; 2^-133 is bfloat16's smallest.
  EXPECT_EQ(wp::float_to_bfloat16(FloatFromBits(0x00000001u)).bits, 0x0000);
  EXPECT_EQ(wp::float_to_bfloat16(std::ldexp(1.0f, -133)).bits, 0x0001);
  EXPECT_EQ(wp::float_to_bfloat16(FloatFromBits(0x00018000u)).bits, 0x0002);  // tie, odd below: up
  EXPECT_EQ(wp::float_to_bfloat16(FloatFromBits(0x00028000u)).bits, 0x0002);  // tie, even below: stays
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(wp::float_to_bfloat16(FloatFromBits(0x007fffffu)).bits, 0x0080);
  // Every NaN stays a NaN, sign kept, even when its payload is only in the low bits.
  for (uint32_t bits : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0x7f80ffffu, 0xffc00001u}) {
    const uint16_t got = wp::float_to_bfloat16(FloatFromBits(bits)).bits;
    EXPECT_TRUE(IsNan16(got)) << std::hex << bits << " -> " << got;
    EXPECT_EQ(got & 0x8000, (bits >> 16) & 0x8000) << std::hex << bits;
  }
}

TEST(Bfloat16Test, ClassificationAndSignOperations) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const bfloat16 x{static_cast<uint16_t>(b)};
    const double v = DecodeBf16(x.bits);
    ASSERT_EQ(wp::isnan(x), std::isnan(v)) << std::hex << b;
    ASSERT_EQ(wp::isinf(x), std::isinf(v)) << std::hex << b;
    ASSERT_EQ(wp::isfinite(x), std::isfinite(v)) << std::hex << b;
    ASSERT_EQ(wp::neg(x).bits, b ^ 0x8000u);
    ASSERT_EQ(wp::abs(x).bits, b & 0x7fffu);
  }
}

// A result computed in float32 and rounded once to bfloat16.
uint16_t Once(double exact_float32_result) { return RoundRef(exact_float32_result); }

TEST(Bfloat16Test, ArithmeticRoundsOnceFromFloat32) {
  std::mt19937 rng(99);
  // Finite values of moderate range (so results stay finite in float32).
  auto pick = [&] {
    for (;;) {
      const uint16_t b = static_cast<uint16_t>(rng());
      const int exp = (b >> 7) & 0xff;
      if (exp > 60 && exp < 190) return bfloat16{b};
    }
  };
  for (int i = 0; i < 200000; ++i) {
    const bfloat16 a = pick(), b = pick();
    const float fa = static_cast<float>(DecodeBf16(a.bits)), fb = static_cast<float>(DecodeBf16(b.bits));
    ASSERT_EQ(wp::add(a, b).bits, Once(static_cast<double>(fa + fb)));
    ASSERT_EQ(wp::sub(a, b).bits, Once(static_cast<double>(fa - fb)));
    ASSERT_EQ(wp::mul(a, b).bits, Once(static_cast<double>(fa * fb)));
    ASSERT_EQ(wp::div(a, b).bits, Once(static_cast<double>(fa / fb)));
    ASSERT_EQ(wp::lt(a, b), DecodeBf16(a.bits) < DecodeBf16(b.bits));
    ASSERT_EQ(wp::eq(a, b), DecodeBf16(a.bits) == DecodeBf16(b.bits));
    const double va = DecodeBf16(a.bits), vb = DecodeBf16(b.bits);
    ASSERT_EQ(DecodeBf16(wp::min(a, b).bits), va < vb ? va : vb);
    ASSERT_EQ(DecodeBf16(wp::max(a, b).bits), va > vb ? va : vb);
  }
  // sqrt of every positive finite value: float32 sqrt is correctly rounded.
  for (uint32_t b = 0x0001; b < 0x7f80; ++b) {
    const bfloat16 x{static_cast<uint16_t>(b)};
    const float s = std::sqrt(static_cast<float>(DecodeBf16(x.bits)));
    ASSERT_EQ(wp::sqrt(x).bits, Once(static_cast<double>(s))) << std::hex << b;
  }
  // -0 == +0; NaN is unordered.
  EXPECT_TRUE(wp::eq(bfloat16{0x0000}, bfloat16{0x8000}));
  EXPECT_FALSE(wp::eq(bfloat16{0x7fc0}, bfloat16{0x7fc0}));
  EXPECT_TRUE(wp::ne(bfloat16{0x7fc0}, bfloat16{0x7fc0}));
}

TEST(Bfloat16Test, Conversions) {
  // Integers: exact while they fit 8 significant bits, rounded to even after.
  EXPECT_EQ(wp::cast<bfloat16>(wp::int32(256)).bits, RoundRef(256));
  EXPECT_EQ(wp::cast<bfloat16>(wp::int32(257)).bits, RoundRef(256));  // tie: even (256)
  EXPECT_EQ(wp::cast<bfloat16>(wp::int32(259)).bits, RoundRef(260));  // tie: even (260)
  EXPECT_EQ(wp::cast<bfloat16>(wp::int64(-1000000)).bits, RoundRef(-1000000));
  for (int v = -70000; v <= 70000; v += 7) ASSERT_EQ(wp::cast<bfloat16>(v).bits, RoundRef(v)) << v;
  // To integers: truncation toward zero; NaN gives 0 and out-of-range values clamp.
  EXPECT_EQ(wp::cast<wp::int32>(wp::float_to_bfloat16(-2.75f)), -2);
  EXPECT_EQ(wp::cast<wp::uint8>(wp::float_to_bfloat16(1000.0f)), 255);
  EXPECT_EQ(wp::cast<wp::int32>(bfloat16{0x7fc0}), 0);
  EXPECT_EQ(wp::cast<wp::int64>(bfloat16{0xff80}), std::numeric_limits<int64_t>::min());
  // float64 -> bfloat16 goes through float32, as Warp's does.
  EXPECT_EQ(wp::cast<bfloat16>(0.1).bits, RoundRef(static_cast<double>(0.1f)));
  EXPECT_EQ(wp::cast<double>(bfloat16{0x3e00}), DecodeBf16(0x3e00));
  // half <-> bfloat16: through float32 (exact), rounded once.
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const wp::half h{static_cast<uint16_t>(b)};
    const float f = wp::half_to_float(h);
    if (std::isnan(f)) {
      ASSERT_TRUE(IsNan16(wp::cast<bfloat16>(h).bits));
      continue;
    }
    ASSERT_EQ(wp::cast<bfloat16>(h).bits, RoundRef(static_cast<double>(f))) << std::hex << b;
  }
  EXPECT_EQ(wp::cast<wp::half>(wp::float_to_bfloat16(1.5f)).bits, wp::float_to_half(1.5f).bits);
  EXPECT_EQ(wp::cast<wp::half>(wp::float_to_bfloat16(1e30f)).bits, 0x7c00);  // beyond half: inf
}

TEST(Bfloat16Test, AtomicsReturnTheOldValueAndAccumulate) {
  bfloat16 x = wp::float_to_bfloat16(1.0f);
  EXPECT_EQ(wp::atomic_add(&x, wp::float_to_bfloat16(2.0f)).bits, 0x3f80);
  EXPECT_EQ(x.bits, wp::float_to_bfloat16(3.0f).bits);
  EXPECT_EQ(wp::atomic_sub(&x, wp::float_to_bfloat16(0.5f)).bits, wp::float_to_bfloat16(3.0f).bits);
  EXPECT_EQ(x.bits, wp::float_to_bfloat16(2.5f).bits);
  EXPECT_EQ(wp::atomic_min(&x, wp::float_to_bfloat16(-4.0f)).bits, wp::float_to_bfloat16(2.5f).bits);
  EXPECT_EQ(x.bits, wp::float_to_bfloat16(-4.0f).bits);
  EXPECT_EQ(wp::atomic_max(&x, wp::float_to_bfloat16(7.0f)).bits, wp::float_to_bfloat16(-4.0f).bits);
  EXPECT_EQ(x.bits, wp::float_to_bfloat16(7.0f).bits);

  // Concurrent adds of 1 from several threads: every intermediate sum up to
  // 256 is exact in bfloat16, so none may be lost.
  bfloat16 sum{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&sum] {
      for (int i = 0; i < 64; ++i) wp::atomic_add(&sum, wp::float_to_bfloat16(1.0f));
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wp::bfloat16_to_float(sum), 256.0f);

  // Component-wise on a vector of bfloat16.
  wp::vec_t<3, bfloat16> v;
  for (int i = 0; i < 3; ++i) v.c[i] = wp::float_to_bfloat16(static_cast<float>(i));
  wp::vec_t<3, bfloat16> d;
  for (int i = 0; i < 3; ++i) d.c[i] = wp::float_to_bfloat16(0.25f);
  wp::atomic_add_n<bfloat16, 3>(&v, d);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(wp::bfloat16_to_float(v.c[i]), static_cast<float>(i) + 0.25f);
}

}  // namespace

// warpd device runtime: float32 sin and cos on the CPU, vectorizable.
//
// libm's sinf and cosf are calls: a loop over thread ids that calls them
// cannot be vectorized. These are inline and straight-line, so clang
// vectorizes them with the loop around them, and every lane computes exactly
// what the scalar code computes: a kernel's results do not depend on which
// of its blocks were vectorized.
//
// wp::sin(x) and wp::cos(x) for a float32 x are defined as:
//   - |x| <= kFastTrigLimit (65536), on a CPU with FMA: the float path
//     below, within 0.924 ulp of the exact value (every float of the
//     range, both signs: scripts/sweep_fast_trig.cc; scalar_math_test.cc
//     samples it);
//   - otherwise (larger, infinite or NaN x, or no FMA): the table path,
//     within 0.502 ulp over the whole float range.
// Scalar code branches between the two. A lane-blocked kernel body
// (compiler/codegen/lane_blocks.h) calls sincos_lanes for kLanes values at
// once: the float path for all lanes, and only when some lane is outside
// the float path's range a second pass that gives every lane the value the
// scalar definition gives. So the float path's speed does not cost the
// large arguments their accuracy, and both ways agree bit for bit.
//
// Float path: q = nearest integer to x * 2/pi; r = x - q * pi/2 as a sum of
// two floats (pi/2 in three float parts, the first product exact by FMA,
// the second split exactly into its rounded value and error, summed with a
// fast two-sum), then
// polynomials for sin and cos on [-pi/4, pi/4] in float (coefficients
// fitted by iteratively reweighted least squares: relative error below
// 4e-9 and 2e-10) with the low part of r folded in.
//
// Table path: x = m * 2^E (m an integer below 2^24). x * 2/pi mod 4 is
// m * ((2^E * 2/pi) mod 4), with that factor read from a table by E as three
// doubles (trig_reduction.h), the first two short enough that m times them is
// exact. This is exact enough for every float, small or huge. The nearest
// integer q of the product is the quadrant and the rest, times pi/2, is in
// [-pi/4, pi/4], where sin and cos are degree-9 and degree-8 polynomials in
// double (coefficients fitted for relative error below 1e-10).
#pragma once

#include "warpd/native/core.h"

// CUDA keeps its device sinf and cosf (scalar.h).
#if !WP_CUDA
#include "warpd/native/trig_reduction.h"

namespace wp {
namespace trig_detail {

#ifdef __FMA__
WP_FUNC float64 mad(float64 a, float64 b, float64 c) { return __builtin_fma(a, b, c); }
#else
WP_FUNC float64 mad(float64 a, float64 b, float64 c) { return a * b + c; }
#endif

// sin(r) and cos(r) for |r| <= pi/4 (plus rounding).
WP_FUNC float64 sin_poly(float64 r) {
  const float64 s = r * r;
  const float64 p =
      mad(s, mad(s, mad(s, 2.7180081382184758e-06, -1.983929781873891e-04), 8.333329247490816e-03),
          -1.6666666640108757e-01);
  return mad(r * s, p, r);
}
WP_FUNC float64 cos_poly(float64 r) {
  const float64 s = r * r;
  const float64 p =
      mad(s, mad(s, mad(s, 2.4382302342087006e-05, -1.3886665351914157e-03), 4.166661970032485e-02),
          -4.9999999686423363e-01);
  return mad(s, p, 1.0);
}

// |x| = (quadrant + r / (pi/2)) mod 4 * (pi/2): r in radians, |r| <= pi/4.
struct reduced {
  float64 r;
  uint32 quadrant;
};

WP_FUNC reduced reduce(float32 x) {
  const uint32 bits = __builtin_bit_cast(uint32, x);
  const uint32 biased = (bits >> 23) & 0xffu;
  const uint32 mantissa = bits & 0x7fffffu;
  const uint32 m = biased != 0 ? (mantissa | 0x800000u) : mantissa;
  // Row E + 149: E = biased - 150 for normal floats, -149 for subnormals.
  // Infinity and NaN (biased 255) read the last row; their result is
  // replaced by NaN.
  uint32 row = biased != 0 ? biased - 1 : 0;
  row = row > 253 ? 253 : row;
  const float64* t = kTwoOverPiMod4[row];
  const float64 md = (float64)(int32)m;
  const float64 p0 = md * t[0];  // exact, a multiple of 2^-27 below 2^26
  const float64 p1 = md * t[1];  // exact, below 2^-3
  const float64 p2 = md * t[2];
  const float64 q = __builtin_rint(p0 + p1);
  // p0 - q is exact (both on p0's grid, the difference below 1).
  const float64 f = ((p0 - q) + p1) + p2;
  return {f * 1.5707963267948966, (uint32)(int64)q};
}

// v, or NaN when x is infinite or NaN: x - x is 0 or NaN. Arithmetic, not
// a select, so clang does not turn it into a branch around the whole
// computation (which would stop the vectorizer); v * 1 keeps -0.
WP_FUNC float32 nan_unless_finite(float32 x, float64 v) { return (float32)v * ((x - x) + 1.0f); }

WP_FUNC float32 sin_table(float32 x) {
  const reduced d = reduce(x);
  const float64 s = sin_poly(d.r), c = cos_poly(d.r);
  float64 v = (d.quadrant & 1u) ? c : s;
  v = (d.quadrant & 2u) ? -v : v;
  v = (__builtin_bit_cast(uint32, x) >> 31) ? -v : v;  // sin(-x) = -sin(x)
  return nan_unless_finite(x, v);
}

WP_FUNC float32 cos_table(float32 x) {
  const reduced d = reduce(x);
  const float64 s = sin_poly(d.r), c = cos_poly(d.r);
  float64 v = (d.quadrant & 1u) ? s : c;
  v = ((d.quadrant + 1u) & 2u) ? -v : v;
  return nan_unless_finite(x, v);
}

#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
inline constexpr bool kHasFastTrig = true;
#else
inline constexpr bool kHasFastTrig = false;  // the float path needs exact FMA
#endif

// The float path (|x| <= kFastTrigLimit only), on |x|: r = hi + lo, and
// the sign of x (sin(-x) = -sin(x), including at -0).
struct reduced_f {
  float32 hi, lo;
  uint32 quadrant;
  uint32 negative;
};

WP_FUNC reduced_f reduce_f(float32 signed_x) {
  const float32 x = __builtin_fabsf(signed_x);
  constexpr float32 kTwoOverPi = 0x1.45f306p-1f;
  constexpr float32 kP1 = 0x1.921fb6p+0f, kP2 = -0x1.777a5cp-25f, kP3 = -0x1.ee59dap-50f;  // sum: pi/2
  const float32 q = __builtin_rintf(x * kTwoOverPi);
  const float32 r1 = __builtin_fmaf(-q, kP1, x);  // exact: q below 2^16, r1 on x's grid
  const float32 ph = q * kP2;
  const float32 pl = __builtin_fmaf(q, kP2, -ph);  // q * kP2 = ph + pl exactly
  const float32 r2 = r1 - ph;
  const float32 e2 = (r1 - r2) - ph;  // r1 - ph = r2 + e2 (fast two-sum; the sweep covers where it is inexact)
  const float32 lo = (e2 - pl) - q * kP3;
  const float32 hi = r2 + lo;
  return {hi, lo - (hi - r2), (uint32)(int32)q, __builtin_bit_cast(uint32, signed_x) >> 31};
}

WP_FUNC float32 sin_poly_f(float32 h, float32 l) {
  const float32 s = h * h;
  const float32 p = __builtin_fmaf(s, __builtin_fmaf(s, -0x1.9943a8p-13f, 0x1.11073ap-7f), -0x1.555546p-3f);
  return h + __builtin_fmaf(h * s, p, l);
}

WP_FUNC float32 cos_poly_f(float32 h, float32 l) {
  const float32 s = h * h;
  const float32 p = __builtin_fmaf(s, __builtin_fmaf(s, 0x1.99eba0p-16f, -0x1.6c0c34p-10f), 0x1.55554ap-5f);
  const float32 hs = 0.5f * s;
  const float32 t = 1.0f - hs;
  const float32 e = (1.0f - t) - hs;  // 1 - hs = t + e exactly
  return t + (__builtin_fmaf(s * s, p, e) - h * l);
}

// For |x| <= kSmallTrigLimit, reduce_f(x) is exactly {|x|, +0, 0, sign}:
// q = rint(|x| * 2/pi) = 0 (the product stays below 0.5), and with q = 0
// every correction term of the reduction is +0 (r1 = |x|, ph = -0, pl = +0,
// so r2 = hi = |x| and lo = +0). Lanes that are all that small skip the
// reduction and get the same bits (scripts/sweep_fast_trig.cc checks every
// such float; glibc's sinf has the same shortcut).
inline constexpr float32 kSmallTrigLimit = 0.78f;  // < pi/4 * (1 - 2^-9)

WP_FUNC reduced_f reduce_small_f(float32 signed_x) {
  return {__builtin_fabsf(signed_x), 0.0f, 0u, __builtin_bit_cast(uint32, signed_x) >> 31};
}

WP_FUNC float32 sin_fast(const reduced_f& d) {
  const float32 s = sin_poly_f(d.hi, d.lo), c = cos_poly_f(d.hi, d.lo);
  const float32 v = (d.quadrant & 1u) ? c : s;
  return ((d.quadrant >> 1) ^ d.negative) & 1u ? -v : v;
}

WP_FUNC float32 cos_fast(const reduced_f& d) {
  const float32 s = sin_poly_f(d.hi, d.lo), c = cos_poly_f(d.hi, d.lo);
  const float32 v = (d.quadrant & 1u) ? s : c;
  return ((d.quadrant + 1u) & 2u) ? -v : v;
}

}  // namespace trig_detail

// Where the float path applies (inclusive; NaN is outside).
inline constexpr float32 kFastTrigLimit = 65536.0f;

WP_FUNC bool fast_trig_applies(float32 x) { return trig_detail::kHasFastTrig && __builtin_fabsf(x) <= kFastTrigLimit; }

WP_FUNC float32 sin(float32 x) {
  if (fast_trig_applies(x)) return trig_detail::sin_fast(trig_detail::reduce_f(x));
  return trig_detail::sin_table(x);
}

WP_FUNC float32 cos(float32 x) {
  if (fast_trig_applies(x)) return trig_detail::cos_fast(trig_detail::reduce_f(x));
  return trig_detail::cos_table(x);
}

namespace trig_detail {

// The float path for N lanes: `Reduce` is reduce_f, or reduce_small_f when
// every lane is small enough for it to give the same result.
template <int N, bool kSin, bool kCos, reduced_f (*Reduce)(float32)>
WP_FUNC void fast_lanes(float32* __restrict s, float32* __restrict c, const float32* __restrict x) {
  for (int l = 0; l < N; ++l) {
    const reduced_f d = Reduce(x[l]);
    if (kSin) s[l] = sin_fast(d);
    if (kCos) c[l] = cos_fast(d);
  }
}

}  // namespace trig_detail

// For N lanes at once: s[l] = sin(x[l]) if kSin, c[l] = cos(x[l]) if kCos,
// exactly as the scalar functions give them (see the top). The outputs must
// not overlap x (the lane-blocked body passes fresh temporaries): when a
// lane is outside the float path's range, the second pass reads x again.
template <int N, bool kSin, bool kCos>
WP_FUNC void sincos_lanes(float32* __restrict s, float32* __restrict c, const float32* __restrict x) {
  bool all_fast = true, all_small = true;
  for (int l = 0; l < N; ++l) {
    all_fast &= fast_trig_applies(x[l]);
    all_small &= __builtin_fabsf(x[l]) <= trig_detail::kSmallTrigLimit;
  }
  if (WP_LIKELY(all_fast)) {
    if (all_small) {  // the reduction is the identity (see reduce_small_f)
      trig_detail::fast_lanes<N, kSin, kCos, trig_detail::reduce_small_f>(s, c, x);
    } else {
      trig_detail::fast_lanes<N, kSin, kCos, trig_detail::reduce_f>(s, c, x);
    }
    return;
  }
  for (int l = 0; l < N; ++l) {
    if (kSin) s[l] = sin(x[l]);
    if (kCos) c[l] = cos(x[l]);
  }
}

}  // namespace wp

#endif  // !WP_CUDA

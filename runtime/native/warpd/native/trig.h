// warpd device runtime: float32 sin and cos on the CPU, without branches.
//
// libm's sinf and cosf are calls: a loop over thread ids that calls them
// cannot be vectorized. These are inline and straight-line (selects, no
// branches, one table read), so clang vectorizes them with the loop around
// them, and every lane computes exactly what the scalar code computes: a
// kernel's results do not depend on which of its blocks were vectorized.
//
// Accuracy: the result is the float32 rounding of a double computation
// accurate to about 2^-33, so it is within 0.502 ulp of the exact value over
// the whole float range (runtime/native/scalar_math_test.cc sweeps it), as
// accurate as glibc's sinf and cosf; it equals them in over 99% of inputs.
//
// Reduction: x = m * 2^E (m an integer below 2^24). x * 2/pi mod 4 is
// m * ((2^E * 2/pi) mod 4), with that factor read from a table by E as three
// doubles (trig_reduction.h), the first two short enough that m times them is
// exact. This is exact enough for every float, small or huge, so there is no
// separate path for large arguments. The nearest integer q of the product is
// the quadrant and the rest, times pi/2, is in [-pi/4, pi/4], where sin and
// cos are degree-9 and degree-8 polynomials in double (coefficients fitted
// for relative error below 1e-10, far below float32's half ulp).
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

}  // namespace trig_detail

WP_FUNC float32 sin(float32 x) {
  const trig_detail::reduced d = trig_detail::reduce(x);
  const float64 s = trig_detail::sin_poly(d.r), c = trig_detail::cos_poly(d.r);
  float64 v = (d.quadrant & 1u) ? c : s;
  v = (d.quadrant & 2u) ? -v : v;
  v = (__builtin_bit_cast(uint32, x) >> 31) ? -v : v;  // sin(-x) = -sin(x)
  return trig_detail::nan_unless_finite(x, v);
}

WP_FUNC float32 cos(float32 x) {
  const trig_detail::reduced d = trig_detail::reduce(x);
  const float64 s = trig_detail::sin_poly(d.r), c = trig_detail::cos_poly(d.r);
  float64 v = (d.quadrant & 1u) ? s : c;
  v = ((d.quadrant + 1u) & 2u) ? -v : v;
  return trig_detail::nan_unless_finite(x, v);
}

}  // namespace wp

#endif  // !WP_CUDA

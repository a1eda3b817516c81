// warpd device runtime: float32 exp on the CPU, without branches.
//
// libm's expf is a call: a loop over thread ids that calls it cannot be
// vectorized. This one is inline and straight-line (selects only), so clang
// vectorizes it with the loop around it, and a vectorized lane computes
// exactly what the scalar code computes.
//
// x is clamped to [-104, 89] (outside it the result is 0 or inf anyway; NaN
// stays NaN), k = nearest integer to x / ln 2, r = x - k ln 2 with ln 2 in
// two float parts (the first product exact by FMA), |r| <= ln 2 / 2, and
// exp(x) = 2^k (1 + r + r^2 q(r)) with q of degree 4 (coefficients fitted by
// iteratively reweighted least squares: relative error below 4e-9). 2^k is
// applied as two exact powers of two, so results in the subnormal range are
// rounded once. Within 1 ulp of the exact value for every float (the worst
// is checked over every float of [-104, 89] by scripts/sweep_fast_exp.cc;
// scalar_math_test.cc samples it).
#pragma once

#include "warpd/native/core.h"

#if !WP_CUDA

namespace wp {
namespace exp_detail {

// 2^e for e in [-126, 127].
WP_FUNC float32 pow2(int32 e) { return __builtin_bit_cast(float32, (uint32)(e + 127) << 23); }

}  // namespace exp_detail

WP_FUNC float32 exp_f32(float32 x) {
  // Comparisons, not fmin/fmax: those would turn NaN into a bound.
  float32 xc = x < -104.0f ? -104.0f : x;
  xc = xc > 89.0f ? 89.0f : xc;
  const float32 kf = __builtin_rintf(xc * 0x1.715476p+0f);
  const float32 r1 = __builtin_fmaf(-kf, 0x1.62e430p-1f, xc);  // exact
  const float32 r = __builtin_fmaf(-kf, -0x1.05c610p-29f, r1);
  const float32 r_lo = __builtin_fmaf(-kf, -0x1.05c610p-29f, r1 - r);  // r1 - r is exact
  float32 q = __builtin_fmaf(r, 0x1.6a244ap-10f, 0x1.1239d4p-7f);
  q = __builtin_fmaf(r, q, 0x1.5558f2p-5f);
  q = __builtin_fmaf(r, q, 0x1.555492p-3f);
  q = __builtin_fmaf(r, q, 0x1.fffffcp-2f);
  const float32 one_r = 1.0f + r;
  const float32 e = (1.0f - one_r) + r;  // 1 + r = one_r + e exactly (|r| < 1)
  const float32 p = one_r + (__builtin_fmaf(r * r, q, e) + r_lo);
  // k as an integer without a float-to-int conversion (undefined for NaN):
  // adding 1.5 * 2^23 puts it in the low mantissa bits.
  const int32 k = (int32)(__builtin_bit_cast(uint32, kf + 0x1.8p23f) - 0x4b400000u);
  const int32 k1 = k >> 1;
  // For NaN, k is garbage and so are the scales, but p is NaN.
  return p * exp_detail::pow2(k1) * exp_detail::pow2(k - k1);
}

}  // namespace wp

#endif  // !WP_CUDA

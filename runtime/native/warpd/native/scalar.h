// warpd device runtime: scalar builtins (arithmetic, math, conversions).
//
// Types: the integer types, half (float16), bfloat16, float32, float64 and
// bool. Every builtin is a named function (wp::add, wp::floor, ...); half and
// bfloat16 have no C++ operators, only these functions, each computed in
// float32 and rounded back (to nearest even) as in Warp.
//
// Semantics follow Warp 1.19:
// - Integers: div and mod truncate toward zero (C: -7 / 2 == -3, -7 % 2 ==
//   -1); floordiv floors (-7 // 2 == -4). Division or modulo by zero is
//   defined as 0 (a CPU SIGFPE would kill the daemon); MIN / -1 and MIN // -1
//   wrap to MIN, MIN % -1 is 0. add/sub/mul/neg/abs wrap.
// - Floats: mod is fmod, floordiv is floor(a / b). min/max/clamp treat NaN as
//   missing (C fmin/fmax): the non-NaN operand wins. sign(x) is -1 for x < 0
//   and 1 otherwise (0 and NaN give 1); step(x) is 1 for x < 0, else 0;
//   nonzero(x) is 0 for x == 0, else 1; frac(x) is x - trunc(x); acos and asin
//   clamp their argument to [-1, 1] (a NaN argument gives acos(-1), asin(-1)).
// - Math maps to CUDA's device functions under NVRTC and to libm through
//   __builtin_* on the CPU, except float32 sin, cos (trig.h) and exp (exp.h)
//   on the CPU (inline, so loops over them vectorize) and erfinv/erfcinv, which libm lacks: solved
//   here by Newton's method in float64 (float32 results correctly rounded in
//   the tests, float64 within 1.5 ulp, down to subnormal erfcinv arguments).
#pragma once

#include "warpd/native/core.h"
#if !WP_CUDA
#include "warpd/native/exp.h"   // float32 exp: inline, vectorizable
#include "warpd/native/trig.h"  // float32 sin and cos: inline, vectorizable
#endif

namespace wp {

// --- Integers -------------------------------------------------------------

#define WP_INT_COMMON(T)                                                                     \
  WP_FUNC T add(T a, T b) { return (T)((uint64)a + (uint64)b); }                            \
  WP_FUNC T sub(T a, T b) { return (T)((uint64)a - (uint64)b); }                            \
  WP_FUNC T mul(T a, T b) { return (T)((uint64)a * (uint64)b); }                            \
  WP_FUNC T neg(T a) { return (T)(0 - (uint64)a); }                                         \
  WP_FUNC T bit_and(T a, T b) { return (T)(a & b); }                                        \
  WP_FUNC T bit_or(T a, T b) { return (T)(a | b); }                                         \
  WP_FUNC T bit_xor(T a, T b) { return (T)(a ^ b); }                                        \
  WP_FUNC T invert(T a) { return (T)(~a); }                                                 \
  WP_FUNC T lshift(T a, T b) { return (T)((uint64)a << ((uint64)b & (sizeof(T) * 8 - 1))); } \
  WP_FUNC T rshift(T a, T b) { return (T)(a >> ((uint64)b & (sizeof(T) * 8 - 1))); }        \
  WP_FUNC T nonzero(T a) { return a == 0 ? (T)0 : (T)1; }                                   \
  WP_FUNC bool unot(T a) { return a == 0; }

#define WP_SIGNED_INT(T, U)                                           \
  WP_FUNC T div(T a, T b) {                                           \
    if (b == 0) return 0;                                             \
    if (b == (T)-1) return (T)(0 - (uint64)a);                        \
    return (T)(a / b);                                                \
  }                                                                   \
  WP_FUNC T mod(T a, T b) {                                           \
    if (b == 0 || b == (T)-1) return 0;                               \
    return (T)(a % b);                                                \
  }                                                                   \
  WP_FUNC T floordiv(T a, T b) {                                      \
    T q = div(a, b);                                                  \
    T r = mod(a, b);                                                  \
    if (r != 0 && ((r < 0) != (b < 0))) q = (T)(q - 1);               \
    return q;                                                         \
  }                                                                   \
  WP_FUNC T abs(T a) { return a < 0 ? (T)(0 - (uint64)a) : a; }     \
  WP_FUNC T sign(T a) { return a < 0 ? (T)-1 : (T)1; }                \
  WP_FUNC T step(T a) { return a < 0 ? (T)1 : (T)0; }                 \
  WP_FUNC int32 bit_count(T a) { return bit_count((U)a); }            \
  WP_INT_COMMON(T)

#define WP_UNSIGNED_INT(T)                                            \
  WP_FUNC T div(T a, T b) { return b == 0 ? (T)0 : (T)(a / b); }     \
  WP_FUNC T mod(T a, T b) { return b == 0 ? (T)0 : (T)(a % b); }     \
  WP_FUNC T floordiv(T a, T b) { return div(a, b); }                  \
  WP_FUNC T abs(T a) { return a; }                                    \
  WP_FUNC T sign(T) { return (T)1; }                                  \
  WP_FUNC T step(T) { return (T)0; }                                  \
  WP_INT_COMMON(T)

// bit_count counts the set bits of the two's-complement representation.
#if WP_CUDA
WP_FUNC int32 bit_count(uint32 a) { return __popc(a); }
WP_FUNC int32 bit_count(uint64 a) { return __popcll(a); }
#else
WP_FUNC int32 bit_count(uint32 a) { return __builtin_popcount(a); }
WP_FUNC int32 bit_count(uint64 a) { return __builtin_popcountll(a); }
#endif
WP_FUNC int32 bit_count(uint8 a) { return bit_count((uint32)a); }
WP_FUNC int32 bit_count(uint16 a) { return bit_count((uint32)a); }

WP_SIGNED_INT(int8, uint8)
WP_UNSIGNED_INT(uint8)
WP_SIGNED_INT(int16, uint16)
WP_UNSIGNED_INT(uint16)
WP_SIGNED_INT(int32, uint32)
WP_UNSIGNED_INT(uint32)
WP_SIGNED_INT(int64, uint64)
WP_UNSIGNED_INT(uint64)
#undef WP_SIGNED_INT
#undef WP_UNSIGNED_INT
#undef WP_INT_COMMON

WP_FUNC bool unot(bool a) { return !a; }
WP_FUNC bool logical_not(bool a) { return !a; }

// --- float32 and float64 ------------------------------------------------------

// min/max with C fmin/fmax semantics (NaN is missing), as Warp 1.19.
#if WP_CUDA
WP_FUNC float32 min(float32 a, float32 b) { return ::fminf(a, b); }
WP_FUNC float64 min(float64 a, float64 b) { return ::fmin(a, b); }
WP_FUNC float32 max(float32 a, float32 b) { return ::fmaxf(a, b); }
WP_FUNC float64 max(float64 a, float64 b) { return ::fmax(a, b); }
#else
WP_FUNC float32 min(float32 a, float32 b) { return a <= b ? a : (b == b ? b : a); }
WP_FUNC float64 min(float64 a, float64 b) { return a <= b ? a : (b == b ? b : a); }
WP_FUNC float32 max(float32 a, float32 b) { return a >= b ? a : (b == b ? b : a); }
WP_FUNC float64 max(float64 a, float64 b) { return a >= b ? a : (b == b ? b : a); }
#endif

#if WP_CUDA
#define WP_MATH1(name, f32, f64)                       \
  WP_FUNC float32 name(float32 x) { return ::f32(x); } \
  WP_FUNC float64 name(float64 x) { return ::f64(x); }
#define WP_MATH2(name, f32, f64)                                    \
  WP_FUNC float32 name(float32 x, float32 y) { return ::f32(x, y); } \
  WP_FUNC float64 name(float64 x, float64 y) { return ::f64(x, y); }
#else
#define WP_MATH1(name, f32, f64)                                 \
  WP_FUNC float32 name(float32 x) { return __builtin_##f32(x); } \
  WP_FUNC float64 name(float64 x) { return __builtin_##f64(x); }
#define WP_MATH2(name, f32, f64)                                              \
  WP_FUNC float32 name(float32 x, float32 y) { return __builtin_##f32(x, y); } \
  WP_FUNC float64 name(float64 x, float64 y) { return __builtin_##f64(x, y); }
#endif

WP_MATH1(sqrt, sqrtf, sqrt)
WP_MATH1(cbrt, cbrtf, cbrt)
#if WP_CUDA
WP_MATH1(sin, sinf, sin)
WP_MATH1(cos, cosf, cos)
#else
WP_FUNC float64 sin(float64 x) { return __builtin_sin(x); }
WP_FUNC float64 cos(float64 x) { return __builtin_cos(x); }
#endif
WP_MATH1(tan, tanf, tan)
WP_MATH1(atan, atanf, atan)
WP_MATH1(sinh, sinhf, sinh)
WP_MATH1(cosh, coshf, cosh)
WP_MATH1(tanh, tanhf, tanh)
#if WP_CUDA
WP_MATH1(exp, expf, exp)
#else
WP_FUNC float32 exp(float32 x) { return exp_f32(x); }  // exp.h: inline, vectorizable
WP_FUNC float64 exp(float64 x) { return __builtin_exp(x); }
#endif
WP_MATH1(log, logf, log)
WP_MATH1(log2, log2f, log2)
WP_MATH1(log10, log10f, log10)
WP_MATH1(erf, erff, erf)
WP_MATH1(erfc, erfcf, erfc)
WP_MATH1(floor, floorf, floor)
WP_MATH1(ceil, ceilf, ceil)
WP_MATH1(trunc, truncf, trunc)
WP_MATH1(round, roundf, round)
WP_MATH1(rint, rintf, rint)
WP_MATH1(abs, fabsf, fabs)
WP_MATH2(pow, powf, pow)
WP_MATH2(atan2, atan2f, atan2)
WP_MATH2(fmod, fmodf, fmod)
WP_MATH2(copysign, copysignf, copysign)
#if WP_CUDA
WP_MATH1(erfinv, erfinvf, erfinv)
WP_MATH1(erfcinv, erfcinvf, erfcinv)
#endif
#undef WP_MATH1
#undef WP_MATH2

#define WP_FLOAT_OPS(T, BITS, ABS_MASK, INF_BITS)                                        \
  WP_FUNC T add(T a, T b) { return a + b; }                                              \
  WP_FUNC T sub(T a, T b) { return a - b; }                                              \
  WP_FUNC T mul(T a, T b) { return a * b; }                                              \
  WP_FUNC T div(T a, T b) { return a / b; }                                              \
  WP_FUNC T neg(T a) { return -a; }                                                      \
  WP_FUNC T mod(T a, T b) { return fmod(a, b); }                                         \
  WP_FUNC T floordiv(T a, T b) { return floor(a / b); }                                  \
  WP_FUNC T clamp(T x, T lo, T hi) { return min(max(lo, x), hi); }                       \
  WP_FUNC T sign(T a) { return a < (T)0 ? (T)-1 : (T)1; }                                \
  WP_FUNC T step(T a) { return a < (T)0 ? (T)1 : (T)0; }                                 \
  WP_FUNC T nonzero(T a) { return a == (T)0 ? (T)0 : (T)1; }                             \
  WP_FUNC T frac(T a) { return a - trunc(a); }                                           \
  WP_FUNC T acos(T a) { return acos_unclamped(min(max(a, (T)-1), (T)1)); }               \
  WP_FUNC T asin(T a) { return asin_unclamped(min(max(a, (T)-1), (T)1)); }               \
  WP_FUNC T degrees(T a) { return (T)((float64)a * 57.29577951308232087679); }           \
  WP_FUNC T radians(T a) { return (T)((float64)a * 0.01745329251994329577); }            \
  WP_FUNC bool isnan(T a) { return (__builtin_bit_cast(BITS, a) & ABS_MASK) > INF_BITS; } \
  WP_FUNC bool isinf(T a) { return (__builtin_bit_cast(BITS, a) & ABS_MASK) == INF_BITS; } \
  WP_FUNC bool isfinite(T a) { return (__builtin_bit_cast(BITS, a) & ABS_MASK) < INF_BITS; }

#if WP_CUDA
WP_FUNC float32 acos_unclamped(float32 x) { return ::acosf(x); }
WP_FUNC float64 acos_unclamped(float64 x) { return ::acos(x); }
WP_FUNC float32 asin_unclamped(float32 x) { return ::asinf(x); }
WP_FUNC float64 asin_unclamped(float64 x) { return ::asin(x); }
#else
WP_FUNC float32 acos_unclamped(float32 x) { return __builtin_acosf(x); }
WP_FUNC float64 acos_unclamped(float64 x) { return __builtin_acos(x); }
WP_FUNC float32 asin_unclamped(float32 x) { return __builtin_asinf(x); }
WP_FUNC float64 asin_unclamped(float64 x) { return __builtin_asin(x); }
#endif

WP_FLOAT_OPS(float32, uint32, 0x7fffffffu, 0x7f800000u)
WP_FLOAT_OPS(float64, uint64, 0x7fffffffffffffffull, 0x7ff0000000000000ull)
#undef WP_FLOAT_OPS

// div_approx: the GPU's approximate division (div.approx.f32; float64 as a
// times an approximate reciprocal); exact division on the CPU, as in Warp.
#if WP_CUDA
WP_FUNC float32 div_approx(float32 a, float32 b) {
  float32 r;
  asm("div.approx.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
WP_FUNC float64 div_approx(float64 a, float64 b) {
  float64 r;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(b));
  return a * r;
}
#else
WP_FUNC float32 div_approx(float32 a, float32 b) { return a / b; }
WP_FUNC float64 div_approx(float64 a, float64 b) { return a / b; }
#endif

#if !WP_CUDA
// erfinv and erfcinv: libm has neither, so solve erf(x) = y (or erfc(x) = c in
// the tails, where 1 - y would lose the digits) by Newton's method in float64
// from an estimate good to about 1e-7. float32 rounds the float64 result.
namespace detail {

// Estimate of x > 0 (or its sign follows y) with erf(x) = y, given
// w = -log((1 - y)(1 + y)) computed without cancellation by the caller.
// Polynomials after M. Giles, "Approximating the erfinv function" (2010);
// beyond their range, the asymptotic erfc(x) ~ exp(-x^2) / (x sqrt(pi)).
WP_FUNC float64 erfinv_estimate(float64 y, float64 w) {
  float64 p;
  if (w < 5.0) {
    w = w - 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
    return p * y;
  }
  if (w < 21.0) {
    w = __builtin_sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
    return p * y;
  }
  // -log(c) = w + log(2) for c = 1 - |y| small, and
  // x^2 = -log(c) - log(x sqrt(pi)) + log(1 - 1 / (2 x^2)) to first order.
  const float64 l = w + 0.6931471805599453;
  float64 x = __builtin_sqrt(l);
  for (int i = 0; i < 3; ++i)
    x = __builtin_sqrt(l - __builtin_log(x * 1.7724538509055159) + __builtin_log1p(-0.5 / (x * x)));
  return y < 0 ? -x : x;
}

// log(erfc(x)) for large x by the asymptotic series
// erfc(x) = exp(-x^2) / (x sqrt(pi)) * sum_n (-1)^n (2n - 1)!! / (2 x^2)^n,
// for x > 26 where erfc(x) is subnormal and libm's erfc has lost its digits.
WP_FUNC float64 log_erfc_asymptotic(float64 x) {
  const float64 u = 0.5 / (x * x);
  const float64 s = 1.0 + u * (-1.0 + u * (3.0 + u * (-15.0 + u * (105.0 - 945.0 * u))));
  return -x * x - __builtin_log(x * 1.7724538509055159) + __builtin_log(s);
}

// erfinv(y) for |y| < 0.5: Newton on erf, accurate near 0.
WP_FUNC float64 erfinv_center(float64 y, int iterations) {
  float64 x = erfinv_estimate(y, -__builtin_log1p(-y * y));
  for (int i = 0; i < iterations; ++i)
    x -= (__builtin_erf(x) - y) / (1.1283791670955126 * __builtin_exp(-x * x));
  return x;
}

// erfcinv(c) for 0 < c <= 0.5: Newton on erfc, numerator and derivative
// scaled by e^64 so that exp(-x^2) stays normal; below 1e-300, on log(erfc).
WP_FUNC float64 erfcinv_tail(float64 c, int iterations) {
  float64 x = erfinv_estimate(1.0 - c, -__builtin_log(c * (2.0 - c)));
  if (c < 1e-300) {  // Newton on log(erfc(x)) = log(c), d/dx ~ -2x - 1/x
    const float64 lc = __builtin_log(c);
    for (int i = 0; i < iterations; ++i) x += (log_erfc_asymptotic(x) - lc) / (2.0 * x + 1.0 / x);
    return x;
  }
  for (int i = 0; i < iterations; ++i) {
    const float64 f = (__builtin_erfc(x) - c) * 6.235149080811617e27;  // e^64
    x += f / (1.1283791670955126 * __builtin_exp(64.0 - x * x));
  }
  return x;
}

WP_FUNC float64 erfinv(float64 y, int iterations) {
  const float64 a = __builtin_fabs(y);
  if (!(a < 1.0)) return a == 1.0 ? __builtin_copysign(__builtin_inf(), y) : __builtin_nan("");
  if (a < 0.5) return erfinv_center(y, iterations);
  return __builtin_copysign(erfcinv_tail(1.0 - a, iterations), y);  // 1 - a is exact
}

WP_FUNC float64 erfcinv(float64 c, int iterations) {
  if (!(c > 0.0 && c < 2.0)) {
    if (c == 0.0) return __builtin_inf();
    if (c == 2.0) return -__builtin_inf();
    return __builtin_nan("");
  }
  if (c <= 0.5) return erfcinv_tail(c, iterations);
  if (c < 1.5) return erfinv_center(1.0 - c, iterations);  // exact for c in [0.5, 1.5]
  return -erfcinv_tail(2.0 - c, iterations);               // exact for c in [1, 2]
}

}  // namespace detail

WP_FUNC float64 erfinv(float64 y) { return detail::erfinv(y, 3); }
WP_FUNC float64 erfcinv(float64 c) { return detail::erfcinv(c, 3); }
WP_FUNC float32 erfinv(float32 y) { return (float32)detail::erfinv((float64)y, 2); }
WP_FUNC float32 erfcinv(float32 c) { return (float32)detail::erfcinv((float64)c, 2); }
#endif  // !WP_CUDA

// --- half and bfloat16 -----------------------------------------------------------

// Each function converts to float32, computes, and rounds once to the 16-bit
// type (T: half or bfloat16; TO/FROM: its float32 conversions).
#define WP_LOWP1(T, TO, FROM, name) \
  WP_FUNC T name(T x) { return FROM(name(TO(x))); }
#define WP_LOWP2(T, TO, FROM, name) \
  WP_FUNC T name(T x, T y) { return FROM(name(TO(x), TO(y))); }
#define WP_LOWP_PRED(T, TO, name, op) \
  WP_FUNC bool name(T x, T y) { return TO(x) op TO(y); }
#define WP_LOWP_ALL(T, TO, FROM)                                                \
  WP_LOWP2(T, TO, FROM, add)                                                    \
  WP_LOWP2(T, TO, FROM, sub)                                                    \
  WP_LOWP2(T, TO, FROM, mul)                                                    \
  WP_LOWP2(T, TO, FROM, div)                                                    \
  WP_LOWP2(T, TO, FROM, div_approx)                                             \
  WP_LOWP2(T, TO, FROM, mod)                                                    \
  WP_LOWP2(T, TO, FROM, min)                                                    \
  WP_LOWP2(T, TO, FROM, max)                                                    \
  WP_LOWP2(T, TO, FROM, pow)                                                    \
  WP_LOWP2(T, TO, FROM, atan2)                                                  \
  WP_LOWP2(T, TO, FROM, fmod)                                                   \
  WP_LOWP2(T, TO, FROM, copysign)                                               \
  WP_LOWP1(T, TO, FROM, sqrt)                                                   \
  WP_LOWP1(T, TO, FROM, cbrt)                                                   \
  WP_LOWP1(T, TO, FROM, sin)                                                    \
  WP_LOWP1(T, TO, FROM, cos)                                                    \
  WP_LOWP1(T, TO, FROM, tan)                                                    \
  WP_LOWP1(T, TO, FROM, asin)                                                   \
  WP_LOWP1(T, TO, FROM, acos)                                                   \
  WP_LOWP1(T, TO, FROM, atan)                                                   \
  WP_LOWP1(T, TO, FROM, sinh)                                                   \
  WP_LOWP1(T, TO, FROM, cosh)                                                   \
  WP_LOWP1(T, TO, FROM, tanh)                                                   \
  WP_LOWP1(T, TO, FROM, exp)                                                    \
  WP_LOWP1(T, TO, FROM, log)                                                    \
  WP_LOWP1(T, TO, FROM, log2)                                                   \
  WP_LOWP1(T, TO, FROM, log10)                                                  \
  WP_LOWP1(T, TO, FROM, erf)                                                    \
  WP_LOWP1(T, TO, FROM, erfc)                                                   \
  WP_LOWP1(T, TO, FROM, erfinv)                                                 \
  WP_LOWP1(T, TO, FROM, erfcinv)                                                \
  WP_LOWP1(T, TO, FROM, floor)                                                  \
  WP_LOWP1(T, TO, FROM, ceil)                                                   \
  WP_LOWP1(T, TO, FROM, trunc)                                                  \
  WP_LOWP1(T, TO, FROM, round)                                                  \
  WP_LOWP1(T, TO, FROM, rint)                                                   \
  WP_LOWP1(T, TO, FROM, frac)                                                   \
  WP_LOWP1(T, TO, FROM, sign)                                                   \
  WP_LOWP1(T, TO, FROM, step)                                                   \
  WP_LOWP1(T, TO, FROM, nonzero)                                                \
  WP_LOWP1(T, TO, FROM, degrees)                                                \
  WP_LOWP1(T, TO, FROM, radians)                                                \
  /* Sign-bit operations are exact on the bits (NaN payloads kept). */         \
  WP_FUNC T neg(T a) { return T{(uint16)(a.bits ^ 0x8000u)}; }                  \
  WP_FUNC T abs(T a) { return T{(uint16)(a.bits & 0x7fffu)}; }                  \
  /* Warp floors the quotient after rounding it to T. */                        \
  WP_FUNC T floordiv(T a, T b) { return floor(div(a, b)); }                     \
  WP_FUNC T clamp(T x, T lo, T hi) { return min(max(lo, x), hi); }              \
  /* IEEE comparisons: NaN is unordered, -0 == +0. */                           \
  WP_LOWP_PRED(T, TO, eq, ==)                                                   \
  WP_LOWP_PRED(T, TO, ne, !=)                                                   \
  WP_LOWP_PRED(T, TO, lt, <)                                                    \
  WP_LOWP_PRED(T, TO, le, <=)                                                   \
  WP_LOWP_PRED(T, TO, gt, >)                                                    \
  WP_LOWP_PRED(T, TO, ge, >=)

WP_LOWP_ALL(half, half_to_float, float_to_half)
WP_LOWP_ALL(bfloat16, bfloat16_to_float, float_to_bfloat16)
#undef WP_LOWP_ALL
#undef WP_LOWP1
#undef WP_LOWP2
#undef WP_LOWP_PRED

// Exponent all ones: half's is 5 bits (0x7c00), bfloat16's 8 (0x7f80).
WP_FUNC bool isnan(half a) { return (a.bits & 0x7fffu) > 0x7c00u; }
WP_FUNC bool isinf(half a) { return (a.bits & 0x7fffu) == 0x7c00u; }
WP_FUNC bool isfinite(half a) { return (a.bits & 0x7fffu) < 0x7c00u; }
WP_FUNC bool isnan(bfloat16 a) { return (a.bits & 0x7fffu) > 0x7f80u; }
WP_FUNC bool isinf(bfloat16 a) { return (a.bits & 0x7fffu) == 0x7f80u; }
WP_FUNC bool isfinite(bfloat16 a) { return (a.bits & 0x7fffu) < 0x7f80u; }

// --- Generic (integers; half and floats have their own overloads above) --------

template <typename T>
WP_FUNC T min(T a, T b) { return a < b ? a : b; }
template <typename T>
WP_FUNC T max(T a, T b) { return a > b ? a : b; }
template <typename T>
WP_FUNC T clamp(T x, T lo, T hi) { return min(max(lo, x), hi); }
template <typename T>
WP_FUNC T pos(T x) { return x; }

template <typename T>
WP_FUNC bool eq(T a, T b) { return a == b; }
template <typename T>
WP_FUNC bool ne(T a, T b) { return a != b; }
template <typename T>
WP_FUNC bool lt(T a, T b) { return a < b; }
template <typename T>
WP_FUNC bool le(T a, T b) { return a <= b; }
template <typename T>
WP_FUNC bool gt(T a, T b) { return a > b; }
template <typename T>
WP_FUNC bool ge(T a, T b) { return a >= b; }
// float32/float64 comparisons are the built-in ones; half and bfloat16 use the overloads.

// Conversions: cast<To>(from). half and bfloat16 go through float32.
template <typename To, typename From>
struct caster {
  WP_FUNC static To apply(From x) { return (To)x; }
};
template <typename From>
struct caster<half, From> {
  WP_FUNC static half apply(From x) { return float_to_half((float32)x); }
};
template <typename To>
struct caster<To, half> {
  WP_FUNC static To apply(half x) { return caster<To, float32>::apply(half_to_float(x)); }
};
template <>
struct caster<half, half> {
  WP_FUNC static half apply(half x) { return x; }
};
template <typename From>
struct caster<bfloat16, From> {
  WP_FUNC static bfloat16 apply(From x) { return float_to_bfloat16((float32)x); }
};
template <typename To>
struct caster<To, bfloat16> {
  WP_FUNC static To apply(bfloat16 x) { return caster<To, float32>::apply(bfloat16_to_float(x)); }
};
template <>
struct caster<bfloat16, bfloat16> {
  WP_FUNC static bfloat16 apply(bfloat16 x) { return x; }
};
// Between the two 16-bit types: through float32 (exact), rounded once.
template <>
struct caster<half, bfloat16> {
  WP_FUNC static half apply(bfloat16 x) { return float_to_half(bfloat16_to_float(x)); }
};
template <>
struct caster<bfloat16, half> {
  WP_FUNC static bfloat16 apply(half x) { return float_to_bfloat16(half_to_float(x)); }
};
// Float to integer conversion of NaN or out-of-range values is undefined in
// C++; Warp's kernels must not crash on it, so clamp first.
#define WP_F2I(F, I, LO, HI)                                          \
  template <>                                                         \
  struct caster<I, F> {                                               \
    WP_FUNC static I apply(F x) {                                     \
      if (!(x == x)) return 0;                                        \
      if (x <= (F)(LO)) return (I)(LO);                               \
      if (x >= (F)(HI)) return (I)(HI);                               \
      return (I)x;                                                    \
    }                                                                 \
  };
#define WP_F2I_ALL(F)                                                 \
  WP_F2I(F, int8, -128, 127)                                          \
  WP_F2I(F, uint8, 0, 255)                                            \
  WP_F2I(F, int16, -32768, 32767)                                     \
  WP_F2I(F, uint16, 0, 65535)                                         \
  WP_F2I(F, int32, -2147483647 - 1, 2147483647)                       \
  WP_F2I(F, uint32, 0, 4294967295u)                                   \
  WP_F2I(F, int64, -9223372036854775807ll - 1, 9223372036854775807ll) \
  WP_F2I(F, uint64, 0, 18446744073709551615ull)
WP_F2I_ALL(float32)
WP_F2I_ALL(float64)
#undef WP_F2I_ALL
#undef WP_F2I

template <typename To, typename From>
WP_FUNC To cast(From x) { return caster<To, From>::apply(x); }

// --- Utility ------------------------------------------------------------------

// where(cond, value_if_true, value_if_false); cond is bool or an integer
// (nonzero is true). select(cond, value_if_false, value_if_true) is the older
// spelling with the values swapped (removed from Warp's language in 1.10).
template <typename C, typename T>
WP_FUNC T where(const C& cond, const T& value_if_true, const T& value_if_false) {
  return (!!cond) ? value_if_true : value_if_false;
}
template <typename C, typename T>
WP_FUNC T select(const C& cond, const T& value_if_false, const T& value_if_true) {
  return (!!cond) ? value_if_true : value_if_false;
}

// lerp(a, b, t) = a (1 - t) + b t and smoothstep(edge0, edge1, x), Float
// scalars; each operation rounds as Warp's does (per operation for half).
template <typename T>
WP_FUNC T lerp(T a, T b, T t) {
  return add(mul(a, sub(cast<T>(1), t)), mul(b, t));
}
template <typename T>
WP_FUNC T smoothstep(T edge0, T edge1, T x) {
  const T u = clamp(div(sub(x, edge0), sub(edge1, edge0)), cast<T>(0), cast<T>(1));
  return mul(mul(u, u), sub(cast<T>(3), mul(cast<T>(2), u)));
}

}  // namespace wp

// warpd device runtime: scalar builtins (arithmetic, math, conversions).
//
// Integer division and modulo by zero are defined (result 0) because a CPU
// SIGFPE would kill the daemon; INT_MIN / -1 wraps. Integer / and % truncate
// toward zero (C semantics), as in Warp.
#pragma once

#include "warpd/native/core.h"

namespace wp {

// Operations shared by signed and unsigned integers.
#define WP_INT_COMMON(T)                                               \
  WP_FUNC T floordiv(T a, T b) { return div(a, b); }                   \
  WP_FUNC T bit_and(T a, T b) { return (T)(a & b); }                   \
  WP_FUNC T bit_or(T a, T b) { return (T)(a | b); }                    \
  WP_FUNC T bit_xor(T a, T b) { return (T)(a ^ b); }                   \
  WP_FUNC T invert(T a) { return (T)(~a); }                            \
  WP_FUNC T lshift(T a, T b) { return (T)((uint64)a << ((uint64)b & (sizeof(T) * 8 - 1))); } \
  WP_FUNC T rshift(T a, T b) { return (T)(a >> ((uint64)b & (sizeof(T) * 8 - 1))); }

#define WP_SIGNED_INT(T)                                               \
  WP_FUNC T div(T a, T b) {                                            \
    if (b == 0) return 0;                                              \
    if (b == (T)-1) return (T)(0 - (uint64)a);                         \
    return a / b;                                                      \
  }                                                                    \
  WP_FUNC T mod(T a, T b) {                                            \
    if (b == 0 || b == (T)-1) return 0;                                \
    return a % b;                                                      \
  }                                                                    \
  WP_FUNC T abs(T a) { return a < 0 ? (T)(0 - (uint64)a) : a; }      \
  WP_FUNC T sign(T a) { return a < 0 ? (T)-1 : (T)1; }                 \
  WP_INT_COMMON(T)

#define WP_UNSIGNED_INT(T)                                             \
  WP_FUNC T div(T a, T b) { return b == 0 ? (T)0 : (T)(a / b); }      \
  WP_FUNC T mod(T a, T b) { return b == 0 ? (T)0 : (T)(a % b); }      \
  WP_FUNC T abs(T a) { return a; }                                     \
  WP_FUNC T sign(T) { return (T)1; }                                   \
  WP_INT_COMMON(T)

WP_SIGNED_INT(int8)
WP_UNSIGNED_INT(uint8)
WP_SIGNED_INT(int16)
WP_UNSIGNED_INT(uint16)
WP_SIGNED_INT(int32)
WP_UNSIGNED_INT(uint32)
WP_SIGNED_INT(int64)
WP_UNSIGNED_INT(uint64)
#undef WP_SIGNED_INT
#undef WP_UNSIGNED_INT
#undef WP_INT_COMMON

// Wrapping add/sub/mul for integers (signed overflow is undefined in C++).
#define WP_INT_ARITH(T)                                                        \
  WP_FUNC T add(T a, T b) { return (T)((uint64)a + (uint64)b); }               \
  WP_FUNC T sub(T a, T b) { return (T)((uint64)a - (uint64)b); }               \
  WP_FUNC T mul(T a, T b) { return (T)((uint64)a * (uint64)b); }               \
  WP_FUNC T neg(T a) { return (T)(0 - (uint64)a); }

WP_INT_ARITH(int8)
WP_INT_ARITH(uint8)
WP_INT_ARITH(int16)
WP_INT_ARITH(uint16)
WP_INT_ARITH(int32)
WP_INT_ARITH(uint32)
WP_INT_ARITH(int64)
WP_INT_ARITH(uint64)
#undef WP_INT_ARITH

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
WP_MATH1(sin, sinf, sin)
WP_MATH1(cos, cosf, cos)
WP_MATH1(tan, tanf, tan)
WP_MATH1(asin, asinf, asin)
WP_MATH1(acos, acosf, acos)
WP_MATH1(atan, atanf, atan)
WP_MATH1(sinh, sinhf, sinh)
WP_MATH1(cosh, coshf, cosh)
WP_MATH1(tanh, tanhf, tanh)
WP_MATH1(exp, expf, exp)
WP_MATH1(log, logf, log)
WP_MATH1(log2, log2f, log2)
WP_MATH1(log10, log10f, log10)
WP_MATH1(floor, floorf, floor)
WP_MATH1(ceil, ceilf, ceil)
WP_MATH1(trunc, truncf, trunc)
WP_MATH1(round, roundf, round)
WP_MATH1(abs, fabsf, fabs)
WP_MATH2(pow, powf, pow)
WP_MATH2(atan2, atan2f, atan2)
WP_MATH2(fmod, fmodf, fmod)
#undef WP_MATH1
#undef WP_MATH2

#define WP_FLOAT_ARITH(T)                                           \
  WP_FUNC T add(T a, T b) { return a + b; }                         \
  WP_FUNC T sub(T a, T b) { return a - b; }                         \
  WP_FUNC T mul(T a, T b) { return a * b; }                         \
  WP_FUNC T div(T a, T b) { return a / b; }                         \
  WP_FUNC T neg(T a) { return -a; }                                 \
  WP_FUNC T mod(T a, T b) { return fmod(a, b); }                    \
  WP_FUNC T floordiv(T a, T b) { return floor(a / b); }             \
  WP_FUNC T sign(T a) { return a < (T)0 ? (T)-1 : (T)1; }

WP_FLOAT_ARITH(float32)
WP_FLOAT_ARITH(float64)
#undef WP_FLOAT_ARITH

template <typename T>
WP_FUNC T min(T a, T b) { return a < b ? a : b; }
template <typename T>
WP_FUNC T max(T a, T b) { return a > b ? a : b; }
template <typename T>
WP_FUNC T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }

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

WP_FUNC bool logical_not(bool a) { return !a; }

// Conversions: cast<To>(from). Half goes through float32.
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
  WP_FUNC static To apply(half x) { return (To)half_to_float(x); }
};
template <>
struct caster<half, half> {
  WP_FUNC static half apply(half x) { return x; }
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

}  // namespace wp

// warpd device runtime: basic types and macros.
//
// Every header under runtime/native compiles on its own, with clang for the CPU
// JIT (freestanding, no libc or libstdc++ headers) and with NVRTC for CUDA. They
// include nothing from the compiler or the server. Generated kernel code
// includes "warpd/native/builtin.h" and nothing else.
#pragma once

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define WP_CUDA 1
#define WP_FUNC __device__ __host__ inline
#define WP_DEVICE_FUNC __device__ inline
#else
#define WP_CUDA 0
#define WP_FUNC inline __attribute__((always_inline))
#define WP_DEVICE_FUNC inline
#endif

#define WP_LIKELY(x) __builtin_expect(!!(x), 1)
#define WP_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace wp {

typedef signed char int8;
typedef unsigned char uint8;
typedef short int16;
typedef unsigned short uint16;
typedef int int32;
typedef unsigned int uint32;
typedef long long int64;
typedef unsigned long long uint64;
typedef float float32;
typedef double float64;

// Warp's block_dim(): the threads per block of a CUDA launch (blockDim.x: 256
// unless the launch's block_dim says otherwise); 1 on the CPU.
WP_FUNC int32 block_dim() {
#if WP_CUDA
  return (int32)blockDim.x;
#else
  return 1;
#endif
}

static_assert(sizeof(int64) == 8 && sizeof(int32) == 4 && sizeof(int16) == 2, "type sizes");
static_assert(sizeof(void*) == 8, "warpd targets 64-bit devices only");

// IEEE half precision, stored as bits. Arithmetic happens in float32: a value
// is converted on load and rounded (to nearest even) on store.
struct half {
  uint16 bits;
};

WP_FUNC float32 half_to_float(half h) {
  uint32 sign = (uint32)(h.bits & 0x8000u) << 16;
  uint32 exp = (h.bits >> 10) & 0x1fu;
  uint32 mant = h.bits & 0x3ffu;
  uint32 out;
  if (exp == 0) {
    if (mant == 0) {
      out = sign;
    } else {  // subnormal half: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      out = sign | ((uint32)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    out = sign | 0x7f800000u | (mant << 13);
  } else {
    out = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return __builtin_bit_cast(float32, out);
}

WP_FUNC half float_to_half(float32 f) {
  uint32 x = __builtin_bit_cast(uint32, f);
  uint32 sign = (x >> 16) & 0x8000u;
  int32 exp = (int32)((x >> 23) & 0xffu) - 127 + 15;
  uint32 mant = x & 0x7fffffu;
  half h;
  if (((x >> 23) & 0xffu) == 0xffu) {  // inf or nan
    h.bits = (uint16)(sign | 0x7c00u | (mant ? 0x200u : 0u));
  } else if (exp >= 31) {  // overflow to inf
    h.bits = (uint16)(sign | 0x7c00u);
  } else if (exp <= 0) {  // subnormal or zero
    if (exp < -10) {
      h.bits = (uint16)sign;
    } else {
      mant |= 0x800000u;
      uint32 shift = (uint32)(14 - exp);
      uint32 v = mant >> shift;
      uint32 rem = mant & ((1u << shift) - 1u);
      uint32 halfway = 1u << (shift - 1u);
      if (rem > halfway || (rem == halfway && (v & 1u))) ++v;
      h.bits = (uint16)(sign | v);
    }
  } else {
    uint32 v = ((uint32)exp << 10) | (mant >> 13);
    uint32 rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (v & 1u))) ++v;  // may carry into exp: correct
    h.bits = (uint16)(sign | v);
  }
  return h;
}

// bfloat16 (Warp's bfloat16: the upper half of a float32), stored as bits.
// Arithmetic happens in float32 like half's: converted on load, rounded to
// nearest even on store. The exponent range is float32's, so float32
// subnormals round to bfloat16 subnormals by the same bit arithmetic and the
// largest values round up to infinity. A NaN stays a NaN (its quiet bit is
// set so that dropping the low payload bits cannot make it an infinity).
struct bfloat16 {
  uint16 bits;
};

WP_FUNC float32 bfloat16_to_float(bfloat16 b) { return __builtin_bit_cast(float32, (uint32)b.bits << 16); }

WP_FUNC bfloat16 float_to_bfloat16(float32 f) {
  uint32 x = __builtin_bit_cast(uint32, f);
  bfloat16 b;
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN
    b.bits = (uint16)((x | 0x00400000u) >> 16);
  } else {
    // Adding 0x7fff plus the kept part's lowest bit rounds to nearest, ties
    // to even; a carry out of the mantissa correctly bumps the exponent.
    b.bits = (uint16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  }
  return b;
}

// Non-finite constants in generated code are written as bit patterns.
WP_FUNC float32 float32_from_bits(uint32 bits) { return __builtin_bit_cast(float32, bits); }
WP_FUNC float64 float64_from_bits(uint64 bits) { return __builtin_bit_cast(float64, bits); }

}  // namespace wp

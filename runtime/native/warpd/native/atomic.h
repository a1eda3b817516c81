// warpd device runtime: atomic read-modify-write on array elements.
//
// Supported element types: int32, uint32, int64, uint64, float32, float64 and
// vectors of them (component-wise; each component is atomic on its own).
#pragma once

#include "warpd/native/vec.h"

namespace wp {

#if WP_CUDA
WP_DEVICE_FUNC int32 atomic_add(int32* p, int32 v) { return atomicAdd(p, v); }
WP_DEVICE_FUNC uint32 atomic_add(uint32* p, uint32 v) { return atomicAdd(p, v); }
WP_DEVICE_FUNC uint64 atomic_add(uint64* p, uint64 v) { return atomicAdd(p, v); }
WP_DEVICE_FUNC int64 atomic_add(int64* p, int64 v) {
  return (int64)atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
WP_DEVICE_FUNC float32 atomic_add(float32* p, float32 v) { return atomicAdd(p, v); }
WP_DEVICE_FUNC float64 atomic_add(float64* p, float64 v) { return atomicAdd(p, v); }
#else
#define WP_ATOMIC_INT(T) \
  inline T atomic_add(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
WP_ATOMIC_INT(int32)
WP_ATOMIC_INT(uint32)
WP_ATOMIC_INT(int64)
WP_ATOMIC_INT(uint64)
#undef WP_ATOMIC_INT

// Floating-point add as a compare-and-swap loop on the bit pattern.
template <typename F, typename Bits>
inline F atomic_add_float(F* p, F v) {
  Bits* bp = (Bits*)p;
  Bits old_bits = __atomic_load_n(bp, __ATOMIC_RELAXED);
  for (;;) {
    F old_val;
    __builtin_memcpy(&old_val, &old_bits, sizeof(F));
    F new_val = old_val + v;
    Bits new_bits;
    __builtin_memcpy(&new_bits, &new_val, sizeof(F));
    if (__atomic_compare_exchange_n(bp, &old_bits, new_bits, true, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      return old_val;
  }
}
inline float32 atomic_add(float32* p, float32 v) { return atomic_add_float<float32, uint32>(p, v); }
inline float64 atomic_add(float64* p, float64 v) { return atomic_add_float<float64, uint64>(p, v); }
#endif

template <int N, typename T>
WP_DEVICE_FUNC vec_t<N, T> atomic_add(vec_t<N, T>* p, const vec_t<N, T>& v) {
  vec_t<N, T> old;
  for (int i = 0; i < N; ++i) old.c[i] = atomic_add(&p->c[i], v.c[i]);
  return old;
}

}  // namespace wp

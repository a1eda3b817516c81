// warpd device runtime: atomic read-modify-write on array elements.
//
// Every atomic returns the element's old value, as Warp's do:
//   atomic_add/sub/min/max(p, v)   int32, uint32, int64, uint64, float32,
//                                  float64 (add/sub also float16)
//   atomic_and/or/xor(p, v)        the four integer types
//   atomic_exch(p, v)              scalars of those types
//   atomic_cas(p, compare, v)      stores v when *p equals compare (bitwise)
// Vectors, matrices, quaternions and transforms go component by component
// (each component atomic on its own, as in Warp): atomic_<op>_n<S, N>.
//
// One compare-and-swap loop on the element's bit pattern implements every
// operation; the hardware's direct instructions serve the common cases
// (integer and float32/float64 add, integer min/max/and/or/xor/exch).
#pragma once

#include "warpd/native/vec.h"

namespace wp {

template <int Bytes>
struct atomic_bits;
template <>
struct atomic_bits<2> {
  typedef uint16 type;
};
template <>
struct atomic_bits<4> {
  typedef uint32 type;
};
template <>
struct atomic_bits<8> {
  typedef uint64 type;
};

// The same bytes as another type of the same size (NVRTC has no
// __builtin_memcpy; both compilers define union punning).
template <typename To, typename From>
WP_FUNC To same_bits(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "same size");
  union {
    From from;
    To to;
  } u;
  u.from = f;
  return u.to;
}

// Compare-and-swap on raw bits: returns the bits seen at p.
#if WP_CUDA
WP_DEVICE_FUNC uint16 atomic_cas_bits(uint16* p, uint16 expected, uint16 desired) {
  return atomicCAS((unsigned short int*)p, (unsigned short int)expected, (unsigned short int)desired);
}
WP_DEVICE_FUNC uint32 atomic_cas_bits(uint32* p, uint32 expected, uint32 desired) {
  return atomicCAS((unsigned int*)p, expected, desired);
}
WP_DEVICE_FUNC uint64 atomic_cas_bits(uint64* p, uint64 expected, uint64 desired) {
  return atomicCAS((unsigned long long*)p, (unsigned long long)expected, (unsigned long long)desired);
}
template <typename B>
WP_DEVICE_FUNC B atomic_load_bits(B* p) {
  return *(volatile B*)p;
}
#else
template <typename B>
inline B atomic_cas_bits(B* p, B expected, B desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;  // on failure, what was seen
}
template <typename B>
inline B atomic_load_bits(B* p) {
  return __atomic_load_n(p, __ATOMIC_RELAXED);
}
#endif

// *p = f(*p) atomically; returns the old value.
template <typename T, typename F>
WP_DEVICE_FUNC T atomic_update(T* p, F f) {
  typedef typename atomic_bits<sizeof(T)>::type B;
  B* bp = (B*)p;
  B old_bits = atomic_load_bits(bp);
  for (;;) {
    T old_val = same_bits<T>(old_bits);
    B new_bits = same_bits<B>(f(old_val));
    B seen = atomic_cas_bits(bp, old_bits, new_bits);
    if (seen == old_bits) return old_val;
    old_bits = seen;
  }
}

// The generic forms, for every scalar type of the table.
template <typename T>
WP_DEVICE_FUNC T atomic_add(T* p, T v) {
  return atomic_update(p, [v](T x) { return add(x, v); });
}
template <typename T>
WP_DEVICE_FUNC T atomic_sub(T* p, T v) {
  return atomic_update(p, [v](T x) { return sub(x, v); });
}
template <typename T>
WP_DEVICE_FUNC T atomic_min(T* p, T v) {
  return atomic_update(p, [v](T x) { return min(x, v); });
}
template <typename T>
WP_DEVICE_FUNC T atomic_max(T* p, T v) {
  return atomic_update(p, [v](T x) { return max(x, v); });
}
template <typename T>
WP_DEVICE_FUNC T atomic_and(T* p, T v) {
  return atomic_update(p, [v](T x) { return (T)(x & v); });
}
template <typename T>
WP_DEVICE_FUNC T atomic_or(T* p, T v) {
  return atomic_update(p, [v](T x) { return (T)(x | v); });
}
template <typename T>
WP_DEVICE_FUNC T atomic_xor(T* p, T v) {
  return atomic_update(p, [v](T x) { return (T)(x ^ v); });
}
template <typename T>
WP_DEVICE_FUNC T atomic_exch(T* p, T v) {
  return atomic_update(p, [v](T) { return v; });
}
template <typename T>
WP_DEVICE_FUNC T atomic_cas(T* p, T compare, T v) {
  typedef typename atomic_bits<sizeof(T)>::type B;
  return same_bits<T>(atomic_cas_bits((B*)p, same_bits<B>(compare), same_bits<B>(v)));
}

// Direct instructions for the common cases (non-template overloads win).
#if WP_CUDA
WP_DEVICE_FUNC int32 atomic_add(int32* p, int32 v) { return atomicAdd(p, v); }
WP_DEVICE_FUNC uint32 atomic_add(uint32* p, uint32 v) { return atomicAdd(p, v); }
WP_DEVICE_FUNC uint64 atomic_add(uint64* p, uint64 v) {
  return atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
WP_DEVICE_FUNC int64 atomic_add(int64* p, int64 v) {
  return (int64)atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
WP_DEVICE_FUNC float32 atomic_add(float32* p, float32 v) { return atomicAdd(p, v); }
WP_DEVICE_FUNC float64 atomic_add(float64* p, float64 v) { return atomicAdd(p, v); }
WP_DEVICE_FUNC int32 atomic_min(int32* p, int32 v) { return atomicMin(p, v); }
WP_DEVICE_FUNC uint32 atomic_min(uint32* p, uint32 v) { return atomicMin(p, v); }
WP_DEVICE_FUNC int32 atomic_max(int32* p, int32 v) { return atomicMax(p, v); }
WP_DEVICE_FUNC uint32 atomic_max(uint32* p, uint32 v) { return atomicMax(p, v); }
#else
#define WP_ATOMIC_INT(T)                                                                  \
  inline T atomic_add(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); } \
  inline T atomic_sub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); } \
  inline T atomic_and(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); } \
  inline T atomic_or(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }   \
  inline T atomic_xor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); } \
  inline T atomic_exch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }
WP_ATOMIC_INT(int32)
WP_ATOMIC_INT(uint32)
WP_ATOMIC_INT(int64)
WP_ATOMIC_INT(uint64)
#undef WP_ATOMIC_INT
#endif

// Component-wise forms for vectors, matrices, quaternions and transforms:
// N components of scalar type S laid out contiguously in V.
#define WP_ATOMIC_N(op)                                                        \
  template <typename S, int N, typename V>                                     \
  WP_DEVICE_FUNC V atomic_##op##_n(V* p, const V& v) {                         \
    static_assert(sizeof(V) == sizeof(S) * N, "contiguous components");        \
    S* ps = (S*)p;                                                             \
    const S* vs = (const S*)&v;                                                \
    V old;                                                                     \
    S* olds = (S*)&old;                                                        \
    for (int i = 0; i < N; ++i) olds[i] = atomic_##op(&ps[i], vs[i]);          \
    return old;                                                                \
  }
WP_ATOMIC_N(add)
WP_ATOMIC_N(sub)
WP_ATOMIC_N(min)
WP_ATOMIC_N(max)
WP_ATOMIC_N(and)
WP_ATOMIC_N(or)
WP_ATOMIC_N(xor)
#undef WP_ATOMIC_N

}  // namespace wp

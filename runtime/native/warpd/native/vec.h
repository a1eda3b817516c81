// warpd device runtime: fixed-length vectors vec_t<N, T> and their builtins.
#pragma once

#include "warpd/native/scalar.h"

namespace wp {

// N may be 0 (an empty slice, v[4:]); C++ has no zero-length arrays, so that
// vector keeps one element no builtin reads (its size is the type table's).
template <int N, typename T>
struct vec_t {
  T c[N > 0 ? N : 1];
};

typedef vec_t<2, float32> vec2f;
typedef vec_t<3, float32> vec3f;
typedef vec_t<4, float32> vec4f;
typedef vec_t<3, float64> vec3d;

template <int N, typename T>
WP_FUNC vec_t<N, T> vec_splat(T x) {
  vec_t<N, T> r;
  for (int i = 0; i < N; ++i) r.c[i] = x;
  return r;
}

#define WP_VEC_BINARY(name)                                          \
  template <int N, typename T>                                       \
  WP_FUNC vec_t<N, T> name(const vec_t<N, T>& a, const vec_t<N, T>& b) { \
    vec_t<N, T> r;                                                   \
    for (int i = 0; i < N; ++i) r.c[i] = name(a.c[i], b.c[i]);       \
    return r;                                                        \
  }
WP_VEC_BINARY(add)
WP_VEC_BINARY(sub)
WP_VEC_BINARY(min)
WP_VEC_BINARY(max)
WP_VEC_BINARY(mod)
WP_VEC_BINARY(bit_and)
WP_VEC_BINARY(bit_or)
WP_VEC_BINARY(bit_xor)
WP_VEC_BINARY(lshift)
WP_VEC_BINARY(rshift)
#undef WP_VEC_BINARY

#define WP_VEC_UNARY(name)                                           \
  template <int N, typename T>                                       \
  WP_FUNC vec_t<N, T> name(const vec_t<N, T>& a) {                   \
    vec_t<N, T> r;                                                   \
    for (int i = 0; i < N; ++i) r.c[i] = name(a.c[i]);               \
    return r;                                                        \
  }
WP_VEC_UNARY(neg)
WP_VEC_UNARY(pos)
WP_VEC_UNARY(abs)
WP_VEC_UNARY(sign)
WP_VEC_UNARY(invert)
#undef WP_VEC_UNARY

template <int N, typename T>
WP_FUNC vec_t<N, T> mul(const vec_t<N, T>& a, T s) {
  vec_t<N, T> r;
  for (int i = 0; i < N; ++i) r.c[i] = mul(a.c[i], s);
  return r;
}

template <int N, typename T>
WP_FUNC vec_t<N, T> mul(T s, const vec_t<N, T>& a) {
  return mul(a, s);
}

// Component-wise product (Warp's cw_mul).
template <int N, typename T>
WP_FUNC vec_t<N, T> cw_mul(const vec_t<N, T>& a, const vec_t<N, T>& b) {
  vec_t<N, T> r;
  for (int i = 0; i < N; ++i) r.c[i] = mul(a.c[i], b.c[i]);
  return r;
}

// Component-wise quotient (Warp's cw_div on vectors): here beside cw_mul, so a
// module that does not include mat.h has it too.
template <int N, typename T>
WP_FUNC vec_t<N, T> cw_div(const vec_t<N, T>& a, const vec_t<N, T>& b) {
  vec_t<N, T> r;
  for (int i = 0; i < N; ++i) r.c[i] = div(a.c[i], b.c[i]);
  return r;
}

template <int N, typename T>
WP_FUNC vec_t<N, T> div(const vec_t<N, T>& a, T s) {
  vec_t<N, T> r;
  for (int i = 0; i < N; ++i) r.c[i] = div(a.c[i], s);
  return r;
}

template <int N, typename T>
WP_FUNC vec_t<N, T> div_approx(const vec_t<N, T>& a, T s) {
  vec_t<N, T> r;
  for (int i = 0; i < N; ++i) r.c[i] = div_approx(a.c[i], s);
  return r;
}

template <int N, typename T>
WP_FUNC vec_t<N, T> div_approx(T s, const vec_t<N, T>& a) {
  vec_t<N, T> r;
  for (int i = 0; i < N; ++i) r.c[i] = div_approx(s, a.c[i]);
  return r;
}

// s / a[i] for each component.
template <int N, typename T>
WP_FUNC vec_t<N, T> div(T s, const vec_t<N, T>& a) {
  vec_t<N, T> r;
  for (int i = 0; i < N; ++i) r.c[i] = div(s, a.c[i]);
  return r;
}

template <int N, typename T>
WP_FUNC T dot(const vec_t<N, T>& a, const vec_t<N, T>& b) {
  T r = mul(a.c[0], b.c[0]);
  for (int i = 1; i < N; ++i) r = add(r, mul(a.c[i], b.c[i]));
  return r;
}

template <typename T>
WP_FUNC vec_t<3, T> cross(const vec_t<3, T>& a, const vec_t<3, T>& b) {
  return vec_t<3, T>{{sub(mul(a.c[1], b.c[2]), mul(a.c[2], b.c[1])),
                      sub(mul(a.c[2], b.c[0]), mul(a.c[0], b.c[2])),
                      sub(mul(a.c[0], b.c[1]), mul(a.c[1], b.c[0]))}};
}

template <int N, typename T>
WP_FUNC T length_sq(const vec_t<N, T>& a) {
  return dot(a, a);
}

template <int N, typename T>
WP_FUNC T length(const vec_t<N, T>& a) {
  return sqrt(dot(a, a));
}

// A zero vector normalizes to zero (as in Warp), never to NaN.
template <int N, typename T>
WP_FUNC vec_t<N, T> normalize(const vec_t<N, T>& a) {
  T l = length(a);
  if (gt(l, cast<T>(0))) return div(a, l);
  return vec_splat<N, T>(cast<T>(0));
}

template <int N, typename T>
WP_FUNC bool eq(const vec_t<N, T>& a, const vec_t<N, T>& b) {
  for (int i = 0; i < N; ++i)
    if (!eq(a.c[i], b.c[i])) return false;
  return true;
}

template <int N, typename T>
WP_FUNC bool ne(const vec_t<N, T>& a, const vec_t<N, T>& b) {
  return !eq(a, b);
}

// Reductions. Float min/max skip NaN components (fmin/fmax), so the result is
// NaN only when every component is.
template <int N, typename T>
WP_FUNC T min(const vec_t<N, T>& a) {
  T r = a.c[0];
  for (int i = 1; i < N; ++i) r = min(r, a.c[i]);
  return r;
}

template <int N, typename T>
WP_FUNC T max(const vec_t<N, T>& a) {
  T r = a.c[0];
  for (int i = 1; i < N; ++i) r = max(r, a.c[i]);
  return r;
}

// Index of the first smallest (argmin) / largest (argmax) element, skipping
// NaN elements; 0 when all are NaN (as in Warp).
template <int N, typename T>
WP_FUNC uint32 argmin(const vec_t<N, T>& v) {
  int best = -1;
  for (int i = 0; i < N; ++i) {
    if (!eq(v.c[i], v.c[i])) continue;  // NaN
    if (best < 0 || lt(v.c[i], v.c[best])) best = i;
  }
  return best < 0 ? 0u : (uint32)best;
}

template <int N, typename T>
WP_FUNC uint32 argmax(const vec_t<N, T>& v) {
  int best = -1;
  for (int i = 0; i < N; ++i) {
    if (!eq(v.c[i], v.c[i])) continue;  // NaN
    if (best < 0 || gt(v.c[i], v.c[best])) best = i;
  }
  return best < 0 ? 0u : (uint32)best;
}

// isnan/isinf: any component; isfinite: every component.
template <int N, typename T>
WP_FUNC bool isnan(const vec_t<N, T>& a) {
  for (int i = 0; i < N; ++i)
    if (isnan(a.c[i])) return true;
  return false;
}

template <int N, typename T>
WP_FUNC bool isinf(const vec_t<N, T>& a) {
  for (int i = 0; i < N; ++i)
    if (isinf(a.c[i])) return true;
  return false;
}

template <int N, typename T>
WP_FUNC bool isfinite(const vec_t<N, T>& a) {
  for (int i = 0; i < N; ++i)
    if (!isfinite(a.c[i])) return false;
  return true;
}

// a (1 - t) + b t, as Warp computes it.
template <int N, typename T>
WP_FUNC vec_t<N, T> lerp(const vec_t<N, T>& a, const vec_t<N, T>& b, T t) {
  return add(mul(a, sub(cast<T>(1), t)), mul(b, t));
}

template <int N, typename T>
WP_FUNC int32 len(const vec_t<N, T>&) {
  return N;
}

template <typename To, int N, typename From>
struct caster<vec_t<N, To>, vec_t<N, From>> {
  WP_FUNC static vec_t<N, To> apply(const vec_t<N, From>& x) {
    vec_t<N, To> r;
    for (int i = 0; i < N; ++i) r.c[i] = cast<To>(x.c[i]);
    return r;
  }
};

}  // namespace wp

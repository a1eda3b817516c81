// warpd device runtime: random numbers (Warp's "Random" builtins rand_init,
// randi, randu, randf, randn, sample_*, poisson).
//
// A random stream is a uint32 state. rand_init(seed[, offset]) makes one; every
// other builtin here advances the state it is given (taken by reference: Warp's
// generated code passes the state variable itself, so successive calls on one
// variable draw successive numbers) and returns a value computed from the new
// state. The state update is the "PCG" integer hash of Jarzynski and Olano,
// "Hash Functions for GPU Rendering", JCGT 9(3), 2020.
//
// The numbers equal Warp 1.19's for the same seeds, offsets and arguments: bit
// for bit where only integer and IEEE float arithmetic is involved (rand_init,
// randi, randu, randf, sample_triangle/square/cube, sample_cdf), and to the
// rounding of the platform's logf/expf/sinf/cosf/acosf/powf elsewhere (randn,
// the ring/disk/sphere/hemisphere samplers, poisson). Generated code must not
// contract a*b+c into fma (warpd's CPU JIT compiles with -ffp-contract=off)
// for the float results to be Warp's own.
//
// Where Warp's formula has undefined behaviour, the result here is defined
// instead, so no input traps:
//   - randi/randu(state, low, high) with high == low return low (Warp divides
//     by zero); with high < low the range wraps modulo 2^32, as in Warp.
//   - poisson() converts its float candidate to uint32 with saturation
//     (NaN -> 0), as CUDA does; Warp on x86 CPUs gives an unspecified value
//     for a lam beyond the uint32 range.
//   - sample_cdf reads element i at data + i * strides[0], so strided views
//     work; Warp indexes data[i] and agrees only for contiguous arrays.
//     An array of length 0 gives 0 without a read.
#pragma once

#include "warpd/native/array.h"
#include "warpd/native/vec.h"

namespace wp {

namespace rand_detail {

// The PCG hash: a bijection of uint32 (multiply-add by an odd constant, a
// data-dependent xorshift that keeps the top four bits, multiply by an odd
// constant, xorshift).
WP_FUNC uint32 pcg_hash(uint32 x) {
  uint32 s = x * 747796405u + 2891336453u;
  uint32 w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}

// float32(pi) and 2 * float32(pi), the angles Warp's samplers use.
constexpr float32 kPi = 3.14159265358979323846f;
constexpr float32 kTwoPi = 2.0f * kPi;

// Added to the uniform value before randn takes its log, so that log never
// sees 0 (randf can return 0); 2^-24 rounded down to three digits, Warp's value.
constexpr float32 kRandnEpsilon = 5.96e-8f;

}  // namespace rand_detail

// --- Streams and uniform numbers ---------------------------------------------

WP_FUNC uint32 rand_init(int32 seed) { return rand_detail::pcg_hash((uint32)seed); }

// Streams for different offsets of one seed are decorrelated by hashing the
// offset before it is added to the seed.
WP_FUNC uint32 rand_init(int32 seed, int32 offset) {
  return rand_detail::pcg_hash((uint32)seed + rand_detail::pcg_hash((uint32)offset));
}

// The next 32 random bits, as a uint32.
WP_FUNC uint32 randu(uint32& state) {
  state = rand_detail::pcg_hash(state);
  return state;
}

// The next 32 random bits, as an int32 (two's complement).
WP_FUNC int32 randi(uint32& state) { return (int32)randu(state); }

// low + (bits mod (high - low)), all modulo 2^32: uniform on [low, high) up to
// the modulo bias when high > low.
WP_FUNC uint32 randu(uint32& state, uint32 low, uint32 high) {
  uint32 bits = randu(state);
  return mod(bits, high - low) + low;
}

// As randu(state, low, high) on the two's-complement bit patterns.
WP_FUNC int32 randi(uint32& state, int32 low, int32 high) {
  uint32 bits = randu(state);
  return (int32)(mod(bits, (uint32)high - (uint32)low) + (uint32)low);
}

// Uniform on [0, 1 - 2^-24] in steps of 2^-24: the top 24 bits of the state
// scaled by 2^-24, so every value is exact.
WP_FUNC float32 randf(uint32& state) {
  uint32 bits = randu(state);
  return (float32)(bits >> 8) * (1.0f / 16777216.0f);
}

// (high - low) * randf(state) + low.
WP_FUNC float32 randf(uint32& state, float32 low, float32 high) {
  return (high - low) * randf(state) + low;
}

// Standard normal by the Box-Muller transform; draws two uniforms, the first
// for the radius and the second for the angle.
WP_FUNC float32 randn(uint32& state) {
  float32 u_radius = randf(state);
  float32 u_angle = randf(state);
  return sqrt(-2.0f * log(u_radius + rand_detail::kRandnEpsilon)) *
         cos(rand_detail::kTwoPi * u_angle);
}

// --- Discrete distributions --------------------------------------------------

// Inverse-transform sampling of a non-decreasing CDF: the first index i with
// cdf[i] >= randf(state), or the last index if there is none. Reads only
// elements [0, shape[0] - 1).
WP_FUNC int32 sample_cdf(uint32& state, const array_t<float32>& cdf) {
  float32 u = randf(state);
  int32 lo = 0;
  int32 hi = cdf.shape[0] - 1;
  while (lo < hi) {
    int32 mid = lo + (hi - lo) / 2;
    float32 v = *(const float32*)((const char*)cdf.data + (int64)mid * cdf.strides[0]);
    if (v < u) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

namespace rand_detail {

// log(Gamma(x)) for x >= 1 in float32: the Stirling series to ten terms at
// x + n >= 7, then the recurrence Gamma(x) = Gamma(x + 1) / x back down
// (SPECFUN's gamma routine, Zhang and Jin, "Computation of Special Functions",
// 1996, as NumPy's random_loggam). Exact 0 at 1 and 2.
WP_FUNC float32 log_gamma(float32 x) {
  if (x == 1.0f || x == 2.0f) return 0.0f;
  // B_2k / (2k (2k - 1)) for k = 1..10: 1/12, -1/360, 1/1260, -1/1680, 1/1188,
  // -691/360360, 1/156, -3617/122400, 43867/244188, -174611/125400.
  // (Each literal is the float32 nearest to the fraction.)
  const float32 series[10] = {8.33333358e-02f,  -2.77777785e-03f, 7.93650805e-04f,
                              -5.95238118e-04f, 8.41750822e-04f,  -1.91752694e-03f,
                              6.41025649e-03f,  -2.95506530e-02f, 1.79644376e-01f,
                              -1.39243221e+00f};
  const float32 log_two_pi = 1.83787704f;  // log(2 pi)
  uint32 n = x < 7.0f ? cast<uint32>(7.0f - x) : 0u;
  float32 z = x + (float32)n;
  float32 inv_z2 = (1.0f / z) * (1.0f / z);
  float32 poly = series[9];
  for (int i = 8; i >= 0; --i) {
    poly *= inv_z2;
    poly += series[i];
  }
  float32 lg = poly / z + 0.5f * log_two_pi + (z - 0.5f) * log(z) - z;
  for (uint32 k = 1; k <= n; ++k) {
    lg -= log(z - 1.0f);
    z -= 1.0f;
  }
  return lg;
}

// Knuth's multiplication method for small lam: the number of uniforms whose
// running product stays above exp(-lam). Returns 0 for a negative or NaN lam.
WP_FUNC uint32 poisson_multiplication(uint32& state, float32 lam) {
  float32 limit = exp(-lam);
  float32 product = 1.0f;
  uint32 count = 0;
  for (;;) {
    product *= randf(state);
    if (!(product > limit)) return count;
    ++count;
  }
}

// Hoermann's transformed rejection with squeeze (PTRS), "The transformed
// rejection method for generating Poisson random variables", Insurance:
// Mathematics and Economics 12, 1993, in float32; for lam >= 10. Each round
// draws two uniforms and accepts with probability above 0.8.
WP_FUNC uint32 poisson_ptrs(uint32& state, float32 lam) {
  float32 slam = sqrt(lam);
  float32 loglam = log(lam);
  float32 b = 0.931f + 2.53f * slam;
  float32 a = -0.059f + 0.02483f * b;
  float32 inv_alpha = 1.1239f + 1.1328f / (b - 3.4f);
  float32 v_r = 0.9277f - 3.6224f / (b - 2.0f);
  for (;;) {
    float32 u = randf(state) - 0.5f;
    float32 v = randf(state);
    float32 us = 0.5f - abs(u);
    // The candidate stays a float until it is known to be non-negative.
    float32 k = floor((2.0f * a / us + b) * u + lam + 0.43f);
    if (us >= 0.07f && v <= v_r) return cast<uint32>(k);
    if (k < 0.0f || (us < 0.013f && v > us)) continue;
    if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <=
        -lam + k * loglam - log_gamma(k + 1.0f)) {
      return cast<uint32>(k);
    }
  }
}

}  // namespace rand_detail

// A Poisson-distributed count with mean lam; 0 for lam == 0, lam < 0 or NaN.
WP_FUNC uint32 poisson(uint32& state, float32 lam) {
  if (lam >= 10.0f) return rand_detail::poisson_ptrs(state, lam);
  if (lam == 0.0f) return 0u;
  return rand_detail::poisson_multiplication(state, lam);
}

// --- Uniform samples of shapes -----------------------------------------------
// Each draws its uniforms in the order of the formulas below.

// Barycentric (u, v) uniform on the triangle u, v >= 0, u + v <= 1.
WP_FUNC vec2f sample_triangle(uint32& state) {
  float32 r = sqrt(randf(state));
  float32 u = 1.0f - r;
  float32 v = randf(state) * r;
  return vec2f{{u, v}};
}

// A point on the unit circle.
WP_FUNC vec2f sample_unit_ring(uint32& state) {
  float32 theta = randf(state, 0.0f, rand_detail::kTwoPi);
  return vec2f{{cos(theta), sin(theta)}};
}

// A point in the unit disk (radius sqrt(u) for a uniform density).
WP_FUNC vec2f sample_unit_disk(uint32& state) {
  float32 r = sqrt(randf(state));
  float32 theta = randf(state, 0.0f, rand_detail::kTwoPi);
  return vec2f{{r * cos(theta), r * sin(theta)}};
}

// A point on the unit sphere: cos(phi) = 1 - 2u is uniform on [-1, 1].
WP_FUNC vec3f sample_unit_sphere_surface(uint32& state) {
  float32 phi = acos(1.0f - 2.0f * randf(state));
  float32 theta = randf(state, 0.0f, rand_detail::kTwoPi);
  float32 sin_phi = sin(phi);
  return vec3f{{cos(theta) * sin_phi, sin(theta) * sin_phi, cos(phi)}};
}

// A point in the unit ball: a direction as above, radius u^(1/3).
WP_FUNC vec3f sample_unit_sphere(uint32& state) {
  float32 phi = acos(1.0f - 2.0f * randf(state));
  float32 theta = randf(state, 0.0f, rand_detail::kTwoPi);
  float32 r = pow(randf(state), 1.0f / 3.0f);
  float32 sin_phi = sin(phi);
  return vec3f{{r * cos(theta) * sin_phi, r * sin(theta) * sin_phi, r * cos(phi)}};
}

// A point on the unit hemisphere z >= 0: cos(phi) = 1 - u is uniform on (0, 1].
WP_FUNC vec3f sample_unit_hemisphere_surface(uint32& state) {
  float32 phi = acos(1.0f - randf(state));
  float32 theta = randf(state, 0.0f, rand_detail::kTwoPi);
  float32 sin_phi = sin(phi);
  return vec3f{{cos(theta) * sin_phi, sin(theta) * sin_phi, cos(phi)}};
}

// A point in the unit half-ball z >= 0.
WP_FUNC vec3f sample_unit_hemisphere(uint32& state) {
  float32 phi = acos(1.0f - randf(state));
  float32 theta = randf(state, 0.0f, rand_detail::kTwoPi);
  float32 r = pow(randf(state), 1.0f / 3.0f);
  float32 sin_phi = sin(phi);
  return vec3f{{r * cos(theta) * sin_phi, r * sin(theta) * sin_phi, r * cos(phi)}};
}

// A point in the square [-0.5, 0.5)^2.
WP_FUNC vec2f sample_unit_square(uint32& state) {
  float32 x = randf(state) - 0.5f;
  float32 y = randf(state) - 0.5f;
  return vec2f{{x, y}};
}

// A point in the cube [-0.5, 0.5)^3.
WP_FUNC vec3f sample_unit_cube(uint32& state) {
  float32 x = randf(state) - 0.5f;
  float32 y = randf(state) - 0.5f;
  float32 z = randf(state) - 0.5f;
  return vec3f{{x, y, z}};
}

// A state that is not a variable of the kernel (an array element, a call's
// result, a literal, a const parameter) is copied, as in Warp: the copy
// advances and the source keeps its value. A variable binds to the
// overloads above (a better match than const&) and advances in place.
#define WP_RAND_COPY_STATE(R, name, PARAMS, ARGS) \
  WP_FUNC R name(const uint32& state_in PARAMS) { \
    uint32 state = state_in;                      \
    return name(state ARGS);                      \
  }
#define WP_COMMA ,
WP_RAND_COPY_STATE(uint32, randu, , )
WP_RAND_COPY_STATE(int32, randi, , )
WP_RAND_COPY_STATE(uint32, randu, WP_COMMA uint32 low WP_COMMA uint32 high, WP_COMMA low WP_COMMA high)
WP_RAND_COPY_STATE(int32, randi, WP_COMMA int32 low WP_COMMA int32 high, WP_COMMA low WP_COMMA high)
WP_RAND_COPY_STATE(float32, randf, , )
WP_RAND_COPY_STATE(float32, randf, WP_COMMA float32 low WP_COMMA float32 high, WP_COMMA low WP_COMMA high)
WP_RAND_COPY_STATE(float32, randn, , )
WP_RAND_COPY_STATE(int32, sample_cdf, WP_COMMA const array_t<float32>& cdf, WP_COMMA cdf)
WP_RAND_COPY_STATE(uint32, poisson, WP_COMMA float32 lam, WP_COMMA lam)
WP_RAND_COPY_STATE(vec2f, sample_triangle, , )
WP_RAND_COPY_STATE(vec2f, sample_unit_ring, , )
WP_RAND_COPY_STATE(vec2f, sample_unit_disk, , )
WP_RAND_COPY_STATE(vec3f, sample_unit_sphere_surface, , )
WP_RAND_COPY_STATE(vec3f, sample_unit_sphere, , )
WP_RAND_COPY_STATE(vec3f, sample_unit_hemisphere_surface, , )
WP_RAND_COPY_STATE(vec3f, sample_unit_hemisphere, , )
WP_RAND_COPY_STATE(vec2f, sample_unit_square, , )
WP_RAND_COPY_STATE(vec3f, sample_unit_cube, , )
#undef WP_COMMA
#undef WP_RAND_COPY_STATE

}  // namespace wp

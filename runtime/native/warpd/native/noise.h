// warpd device runtime: Perlin noise (Warp's noise, pnoise and curlnoise).
//
// Gradient noise on the integer lattice in 1 to 4 dimensions. The gradient at a
// lattice corner (i_0, ..., i_{N-1}) comes from a random stream seeded with a
// hash of the corner and the noise's `state`:
//   h = (i_0 P_0) ^ ... ^ (i_{N-2} P_{N-2}) ^ (i_{N-1} P_{N-1} + state)  (mod 2^32)
// with P = 73856093, 19349663, 53471161, 10000019 (the state joins only the
// last product, as in Warp). In 1-D the gradient is randf(h, -1, 1); in N-D it
// is the normalized sample_unit_square/cube/hypercube of that stream. Each
// corner contributes dot(offset from the corner, gradient), and the 2^N
// contributions are blended with the quintic fade 6t^5 - 15t^4 + 10t^3 along
// axis 0, then 1, ... (the order fixes the rounding). The results equal Warp
// 1.19's bit for bit when multiply-adds are not fused (see rand.h).
//
// Values lie in [-sqrt(N)/2, sqrt(N)/2] and are exactly 0 at lattice points.
// pnoise wraps the lattice index i to i % p with C's remainder, as Warp does:
// it repeats with period p along an axis on x >= 0 (and separately on x < 0).
// A period of 0 maps every index to 0 (Warp divides by zero). Coordinates
// beyond the int32 range, or NaN, are defined (the lattice index saturates
// like CUDA's float-to-int conversion) but meaningless.
//
// curlnoise sums `octaves` octaves of the noise gradient (octave o sampled at
// lacunarity^o * x and weighted by gain^o). In 2-D it returns the rotated
// gradient (-dN/dy, dN/dx); in 3-D and 4-D it returns the curl of the vector
// potential (N1, N2, N3) of three noise fields whose states come from
// chaining rand_init(state, 10019689) and rand_init(state, 13112221), the
// chain continuing across octaves; the 4-D input's 4th coordinate is time.
// Both are divergence-free.
#pragma once

#include "warpd/native/rand.h"
#include "warpd/native/vec.h"

namespace wp {

namespace noise_detail {

// The fade curve 6t^5 - 15t^4 + 10t^3 and its derivative.
WP_FUNC float32 fade(float32 t) { return t * t * t * (t * (t * 6.0f - 15.0f) + 10.0f); }
WP_FUNC float32 fade_derivative(float32 t) { return 30.0f * t * t * (t * (t - 2.0f) + 1.0f); }

WP_FUNC float32 blend(float32 a0, float32 a1, float32 t) { return (a1 - a0) * fade(t) + a0; }

// The lattice cell of x: the index floor(x) and the offset x - floor(x) in [0, 1].
WP_FUNC void cell(float32 x, int32& index, float32& offset) {
  float32 f = floor(x);
  offset = x - f;
  index = cast<int32>(f);
}

template <int N>
WP_FUNC uint32 corner_hash(uint32 state, const int32 (&corner)[N]) {
  const uint32 primes[4] = {73856093u, 19349663u, 53471161u, 10000019u};
  uint32 h = (uint32)corner[N - 1] * primes[N - 1] + state;
  for (int k = N - 2; k >= 0; --k) h ^= (uint32)corner[k] * primes[k];
  return h;
}

template <int N>
WP_FUNC void corner_gradient(uint32 state, const int32 (&corner)[N], float32 (&g)[N]) {
  uint32 stream = corner_hash<N>(state, corner);
  if constexpr (N == 1) {
    g[0] = randf(stream, -1.0f, 1.0f);
  } else {
    for (int k = 0; k < N; ++k) g[k] = randf(stream) - 0.5f;
    float32 len_sq = g[0] * g[0];
    for (int k = 1; k < N; ++k) len_sq += g[k] * g[k];
    float32 len = sqrt(len_sq);
    for (int k = 0; k < N; ++k) g[k] = len > 0.0f ? g[k] / len : 0.0f;
  }
}

// The lattice corners of a cell: lower and upper index per axis (upper is
// lower + 1 for noise, wrapped for pnoise) and the offset in the cell.
template <int N>
struct cell_t {
  int32 lower[N];
  int32 upper[N];
  float32 offset[N];
};

// The contribution of corner c (bit k of c set: the upper index on axis k)
// and, if `gradient` is non-null, its gradient in the input, which is the
// corner's gradient vector.
template <int N>
WP_FUNC float32 corner_value(uint32 state, const cell_t<N>& cl, int c, float32* gradient) {
  int32 corner[N];
  float32 d[N];
  for (int k = 0; k < N; ++k) {
    bool up = ((c >> k) & 1) != 0;
    corner[k] = up ? cl.upper[k] : cl.lower[k];
    d[k] = up ? cl.offset[k] - 1.0f : cl.offset[k];
  }
  float32 g[N];
  corner_gradient<N>(state, corner, g);
  float32 v = d[0] * g[0];
  for (int k = 1; k < N; ++k) v += d[k] * g[k];
  if (gradient != nullptr) {
    for (int k = 0; k < N; ++k) gradient[k] = g[k];
  }
  return v;
}

template <int N>
WP_FUNC float32 perlin(uint32 state, const cell_t<N>& cl) {
  float32 v[1 << N];
  for (int c = 0; c < (1 << N); ++c) v[c] = corner_value<N>(state, cl, c, nullptr);
  // Blend along axis k: entries 2j and 2j + 1 differ only in bit k.
  for (int k = 0; k < N; ++k) {
    for (int j = 0; j < (1 << (N - 1 - k)); ++j) v[j] = blend(v[2 * j], v[2 * j + 1], cl.offset[k]);
  }
  return v[0];
}

// The gradient of perlin() in the input, blended alongside the values by the
// product rule: d blend(a0, a1, t) = (da1 - da0) fade(t) + (a1 - a0) fade'(t) dt + da0,
// dt being the unit vector of axis k.
template <int N>
WP_FUNC vec_t<N, float32> perlin_gradient(uint32 state, const cell_t<N>& cl) {
  float32 v[1 << N];
  float32 dv[1 << N][N];
  for (int c = 0; c < (1 << N); ++c) v[c] = corner_value<N>(state, cl, c, dv[c]);
  for (int k = 0; k < N; ++k) {
    float32 t = cl.offset[k];
    for (int j = 0; j < (1 << (N - 1 - k)); ++j) {
      float32 a0 = v[2 * j];
      float32 a1 = v[2 * j + 1];
      float32 slope = (a1 - a0) * fade_derivative(t);
      for (int m = 0; m < N; ++m) {
        // Warp adds slope * (unit vector of axis k) as a vector term between
        // the other two; keeping the products with 0 reproduces its rounding
        // order, signed zeros and NaNs.
        float32 axis = m == k ? 1.0f : 0.0f;
        dv[j][m] = (dv[2 * j + 1][m] - dv[2 * j][m]) * fade(t) + slope * axis + dv[2 * j][m];
      }
      v[j] = blend(a0, a1, t);
    }
  }
  vec_t<N, float32> r;
  for (int m = 0; m < N; ++m) r.c[m] = dv[0][m];
  return r;
}

template <int N>
WP_FUNC cell_t<N> open_cell(const float32 (&x)[N]) {
  cell_t<N> cl;
  for (int k = 0; k < N; ++k) {
    cell(x[k], cl.lower[k], cl.offset[k]);
    cl.upper[k] = add(cl.lower[k], 1);
  }
  return cl;
}

template <int N>
WP_FUNC cell_t<N> periodic_cell(const float32 (&x)[N], const int32 (&period)[N]) {
  cell_t<N> cl;
  for (int k = 0; k < N; ++k) {
    int32 i;
    cell(x[k], i, cl.offset[k]);
    cl.lower[k] = mod(i, period[k]);
    cl.upper[k] = mod(add(cl.lower[k], 1), period[k]);
  }
  return cl;
}

template <int N>
WP_FUNC void components(const vec_t<N, float32>& v, float32 (&x)[N]) {
  for (int k = 0; k < N; ++k) x[k] = v.c[k];
}

// The noise gradient of one octave at freq * x.
template <int N>
WP_FUNC vec_t<N, float32> octave_gradient(uint32 state, const vec_t<N, float32>& x, float32 freq) {
  float32 p[N];
  for (int k = 0; k < N; ++k) p[k] = freq * x.c[k];
  return perlin_gradient<N>(state, open_cell<N>(p));
}

// Sums of the octave gradients of the three potential fields of 3-D/4-D curl
// noise.
template <int N>
WP_FUNC void curl_potential_gradients(uint32 state, const vec_t<N, float32>& x, uint32 octaves,
                                      float32 lacunarity, float32 gain,
                                      vec_t<N, float32> (&sum)[3]) {
  for (int f = 0; f < 3; ++f) sum[f] = vec_splat<N, float32>(0.0f);
  float32 freq = 1.0f;
  float32 amplitude = 1.0f;
  for (uint32 o = 0; o < octaves; ++o) {
    vec_t<N, float32> g[3];
    g[0] = octave_gradient<N>(state, x, freq);
    state = rand_init((int32)state, 10019689);
    g[1] = octave_gradient<N>(state, x, freq);
    state = rand_init((int32)state, 13112221);
    g[2] = octave_gradient<N>(state, x, freq);
    for (int f = 0; f < 3; ++f) {
      for (int k = 0; k < N; ++k) sum[f].c[k] += amplitude * g[f].c[k];
    }
    amplitude *= gain;
    freq *= lacunarity;
  }
}

}  // namespace noise_detail

// --- noise: Perlin noise -----------------------------------------------------

WP_FUNC float32 noise(uint32 state, float32 x) {
  const float32 p[1] = {x};
  return noise_detail::perlin<1>(state, noise_detail::open_cell<1>(p));
}

WP_FUNC float32 noise(uint32 state, const vec2f& xy) {
  float32 p[2];
  noise_detail::components<2>(xy, p);
  return noise_detail::perlin<2>(state, noise_detail::open_cell<2>(p));
}

WP_FUNC float32 noise(uint32 state, const vec3f& xyz) {
  float32 p[3];
  noise_detail::components<3>(xyz, p);
  return noise_detail::perlin<3>(state, noise_detail::open_cell<3>(p));
}

WP_FUNC float32 noise(uint32 state, const vec4f& xyzt) {
  float32 p[4];
  noise_detail::components<4>(xyzt, p);
  return noise_detail::perlin<4>(state, noise_detail::open_cell<4>(p));
}

// --- pnoise: periodic Perlin noise -------------------------------------------

WP_FUNC float32 pnoise(uint32 state, float32 x, int32 px) {
  const float32 p[1] = {x};
  const int32 period[1] = {px};
  return noise_detail::perlin<1>(state, noise_detail::periodic_cell<1>(p, period));
}

WP_FUNC float32 pnoise(uint32 state, const vec2f& xy, int32 px, int32 py) {
  float32 p[2];
  noise_detail::components<2>(xy, p);
  const int32 period[2] = {px, py};
  return noise_detail::perlin<2>(state, noise_detail::periodic_cell<2>(p, period));
}

WP_FUNC float32 pnoise(uint32 state, const vec3f& xyz, int32 px, int32 py, int32 pz) {
  float32 p[3];
  noise_detail::components<3>(xyz, p);
  const int32 period[3] = {px, py, pz};
  return noise_detail::perlin<3>(state, noise_detail::periodic_cell<3>(p, period));
}

WP_FUNC float32 pnoise(uint32 state, const vec4f& xyzt, int32 px, int32 py, int32 pz, int32 pt) {
  float32 p[4];
  noise_detail::components<4>(xyzt, p);
  const int32 period[4] = {px, py, pz, pt};
  return noise_detail::perlin<4>(state, noise_detail::periodic_cell<4>(p, period));
}

// --- curlnoise: divergence-free noise ----------------------------------------

WP_FUNC vec2f curlnoise(uint32 state, const vec2f& xy, uint32 octaves, float32 lacunarity,
                        float32 gain) {
  vec2f sum = vec_splat<2, float32>(0.0f);
  float32 freq = 1.0f;
  float32 amplitude = 1.0f;
  for (uint32 o = 0; o < octaves; ++o) {
    vec2f g = noise_detail::octave_gradient<2>(state, xy, freq);
    for (int k = 0; k < 2; ++k) sum.c[k] += amplitude * g.c[k];
    amplitude *= gain;
    freq *= lacunarity;
  }
  return vec2f{{-sum.c[1], sum.c[0]}};
}

WP_FUNC vec3f curlnoise(uint32 state, const vec3f& xyz, uint32 octaves, float32 lacunarity,
                        float32 gain) {
  vec3f s[3];
  noise_detail::curl_potential_gradients<3>(state, xyz, octaves, lacunarity, gain, s);
  return vec3f{{s[2].c[1] - s[1].c[2], s[0].c[2] - s[2].c[0], s[1].c[0] - s[0].c[1]}};
}

WP_FUNC vec3f curlnoise(uint32 state, const vec4f& xyzt, uint32 octaves, float32 lacunarity,
                        float32 gain) {
  vec4f s[3];
  noise_detail::curl_potential_gradients<4>(state, xyzt, octaves, lacunarity, gain, s);
  return vec3f{{s[2].c[1] - s[1].c[2], s[0].c[2] - s[2].c[0], s[1].c[0] - s[0].c[1]}};
}

}  // namespace wp

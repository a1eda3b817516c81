// warpd device runtime: reverse-mode adjoints of Perlin noise (noise.h):
// noise, pnoise and curlnoise. Conventions: adj_scalar.h; argument order
// Warp 1.19's (warp/native/noise.h): the forward arguments, one adjoint per
// argument, adj_ret.
//
// - noise, pnoise: adj_x += grad N(x) adj_ret, the gradient that
//   noise_detail::perlin_gradient computes (noise is C2: the quintic fade's
//   first and second derivatives vanish at the cell faces, so the gradient is
//   continuous across cells and periods).
// - curlnoise: the result is a linear map of the octaves' noise gradients, so
//   its adjoint goes through their Hessians: octave o (frequency f_o =
//   lacunarity^o, amplitude a_o = gain^o) contributes a_o f_o H_o(f_o x),
//   with H the Hessian of the noise, computed here by the product rule
//   through the same blends. 2-D: adj_x += sum_o a_o f_o (-H[1][:] ar0 +
//   H[0][:] ar1); 3-D and 4-D: the curl's rows of the three fields'
//   Hessians, the 4-D input's time axis included (its Hessian column).
// - No gradient for the rng state, the periods, octaves, lacunarity or gain
//   (Warp's adjoints take them as constants; lacunarity and gain do change
//   the result, but Warp gives them no gradient and neither does warpd).
// - The shorter curlnoise forms (Warp's defaults: octaves 1, lacunarity 2,
//   gain 0.5) have adjoints of their own arity, with the same defaults; the
//   builtin table names them (.Adj("wp::adj_curlnoise")).
// The values agree with Warp's to float32 rounding, not bit for bit (Warp
// writes its Hessians in closed form, another order of operations).
#pragma once

#include "warpd/native/adjoint/adj_vec.h"
#include "warpd/native/noise.h"

namespace wp {
namespace adj_noise_detail {

using noise_detail::cell_t;

// fade''(t) = 60 t^3 - 90 t^2 + 30 t.
WP_FUNC float32 fade_second(float32 t) { return 60.0f * t * (t * (t * 2.0f - 3.0f) + 1.0f); }

// The Hessian of perlin() in the input: the corners' values d . g are linear
// (gradient g, Hessian 0); each blend along axis k, v = (a1 - a0) fade(t) + a0,
// differentiates twice by the product rule.
template <int N>
WP_FUNC mat_t<N, N, float32> perlin_hessian(uint32 state, const cell_t<N>& cl) {
  float32 v[1 << N];
  float32 dv[1 << N][N];
  float32 hv[1 << N][N][N];
  for (int c = 0; c < (1 << N); ++c) {
    v[c] = noise_detail::corner_value<N>(state, cl, c, dv[c]);
    for (int m = 0; m < N; ++m)
      for (int n = 0; n < N; ++n) hv[c][m][n] = 0.0f;
  }
  for (int k = 0; k < N; ++k) {
    const float32 t = cl.offset[k];
    const float32 f0 = noise_detail::fade(t), f1 = noise_detail::fade_derivative(t), f2 = fade_second(t);
    for (int j = 0; j < (1 << (N - 1 - k)); ++j) {
      const int i0 = 2 * j, i1 = 2 * j + 1;
      const float32 dvk = v[i1] - v[i0];
      float32 nh[N][N];
      float32 nd[N];
      for (int m = 0; m < N; ++m) {
        for (int n = 0; n < N; ++n) {
          float32 h = (hv[i1][m][n] - hv[i0][m][n]) * f0 + hv[i0][m][n];
          if (n == k) h += (dv[i1][m] - dv[i0][m]) * f1;
          if (m == k) h += (dv[i1][n] - dv[i0][n]) * f1;
          if (m == k && n == k) h += dvk * f2;
          nh[m][n] = h;
        }
        nd[m] = (dv[i1][m] - dv[i0][m]) * f0 + dv[i0][m] + (m == k ? dvk * f1 : 0.0f);
      }
      for (int m = 0; m < N; ++m) {
        dv[j][m] = nd[m];
        for (int n = 0; n < N; ++n) hv[j][m][n] = nh[m][n];
      }
      v[j] = dvk * f0 + v[i0];
    }
  }
  mat_t<N, N, float32> r;
  for (int m = 0; m < N; ++m)
    for (int n = 0; n < N; ++n) r.c[m][n] = hv[0][m][n];
  return r;
}

// The Hessian of one octave's noise at freq * x, in x: freq H(freq x) times
// amplitude (the gradient the forward sums is already in the scaled
// coordinate; the chain rule brings one more freq).
template <int N>
WP_FUNC mat_t<N, N, float32> octave_hessian(uint32 state, const vec_t<N, float32>& x, float32 freq) {
  float32 p[N];
  for (int k = 0; k < N; ++k) p[k] = freq * x.c[k];
  return perlin_hessian<N>(state, noise_detail::open_cell<N>(p));
}

// The sums over octaves of a_o f_o H_o for the `fields` noise fields (1 in
// 2-D; 3 in 3-D and 4-D, their states chained as the forward chains them).
template <int N>
WP_FUNC void curl_hessians(uint32 state, const vec_t<N, float32>& x, uint32 octaves, float32 lacunarity,
                           float32 gain, int fields, mat_t<N, N, float32> (&sum)[3]) {
  for (int f = 0; f < 3; ++f)
    for (int m = 0; m < N; ++m)
      for (int n = 0; n < N; ++n) sum[f].c[m][n] = 0.0f;
  float32 freq = 1.0f;
  float32 amplitude = 1.0f;
  for (uint32 o = 0; o < octaves; ++o) {
    const float32 w = amplitude * freq;
    for (int f = 0; f < fields; ++f) {
      if (f == 1) state = rand_init((int32)state, 10019689);
      if (f == 2) state = rand_init((int32)state, 13112221);
      const mat_t<N, N, float32> h = octave_hessian<N>(state, x, freq);
      for (int m = 0; m < N; ++m)
        for (int n = 0; n < N; ++n) sum[f].c[m][n] += w * h.c[m][n];
    }
    amplitude *= gain;
    freq *= lacunarity;
  }
}

// 3-D and 4-D: curl = (S2[1] - S1[2], S0[2] - S2[0], S1[0] - S0[1]) of the
// summed gradients S_f; its adjoint through the rows of their Hessians.
template <int N>
WP_FUNC void adj_curl3(uint32 state, const vec_t<N, float32>& x, uint32 octaves, float32 lacunarity, float32 gain,
                       vec_t<N, float32>& adj_x, const vec3f& adj_ret) {
  mat_t<N, N, float32> h[3];
  curl_hessians<N>(state, x, octaves, lacunarity, gain, 3, h);
  for (int n = 0; n < N; ++n)
    adj_x.c[n] += adj_ret.c[0] * (h[2].c[1][n] - h[1].c[2][n]) + adj_ret.c[1] * (h[0].c[2][n] - h[2].c[0][n]) +
                  adj_ret.c[2] * (h[1].c[0][n] - h[0].c[1][n]);
}

}  // namespace adj_noise_detail

// --- noise --------------------------------------------------------------------

WP_FUNC void adj_noise(uint32 state, float32 x, uint32&, float32& adj_x, float32 adj_ret) {
  const float32 p[1] = {x};
  adj_x += noise_detail::perlin_gradient<1>(state, noise_detail::open_cell<1>(p)).c[0] * adj_ret;
}

template <int N>
WP_FUNC void adj_noise(uint32 state, const vec_t<N, float32>& x, uint32&, vec_t<N, float32>& adj_x,
                       float32 adj_ret) {
  float32 p[N];
  noise_detail::components<N>(x, p);
  const vec_t<N, float32> g = noise_detail::perlin_gradient<N>(state, noise_detail::open_cell<N>(p));
  for (int k = 0; k < N; ++k) adj_x.c[k] += g.c[k] * adj_ret;
}

// --- pnoise -------------------------------------------------------------------

WP_FUNC void adj_pnoise(uint32 state, float32 x, int32 px, uint32&, float32& adj_x, int32&, float32 adj_ret) {
  const float32 p[1] = {x};
  const int32 period[1] = {px};
  adj_x += noise_detail::perlin_gradient<1>(state, noise_detail::periodic_cell<1>(p, period)).c[0] * adj_ret;
}

namespace adj_noise_detail {
template <int N>
WP_FUNC void adj_pnoise(uint32 state, const vec_t<N, float32>& x, const int32 (&period)[N],
                        vec_t<N, float32>& adj_x, float32 adj_ret) {
  float32 p[N];
  noise_detail::components<N>(x, p);
  const vec_t<N, float32> g = noise_detail::perlin_gradient<N>(state, noise_detail::periodic_cell<N>(p, period));
  for (int k = 0; k < N; ++k) adj_x.c[k] += g.c[k] * adj_ret;
}
}  // namespace adj_noise_detail

WP_FUNC void adj_pnoise(uint32 state, const vec2f& xy, int32 px, int32 py, uint32&, vec2f& adj_xy, int32&, int32&,
                        float32 adj_ret) {
  const int32 period[2] = {px, py};
  adj_noise_detail::adj_pnoise<2>(state, xy, period, adj_xy, adj_ret);
}

WP_FUNC void adj_pnoise(uint32 state, const vec3f& xyz, int32 px, int32 py, int32 pz, uint32&, vec3f& adj_xyz,
                        int32&, int32&, int32&, float32 adj_ret) {
  const int32 period[3] = {px, py, pz};
  adj_noise_detail::adj_pnoise<3>(state, xyz, period, adj_xyz, adj_ret);
}

WP_FUNC void adj_pnoise(uint32 state, const vec4f& xyzt, int32 px, int32 py, int32 pz, int32 pt, uint32&,
                        vec4f& adj_xyzt, int32&, int32&, int32&, int32&, float32 adj_ret) {
  const int32 period[4] = {px, py, pz, pt};
  adj_noise_detail::adj_pnoise<4>(state, xyzt, period, adj_xyzt, adj_ret);
}

// --- curlnoise ----------------------------------------------------------------

WP_FUNC void adj_curlnoise(uint32 state, const vec2f& xy, uint32 octaves, float32 lacunarity, float32 gain, uint32&,
                           vec2f& adj_xy, uint32&, float32&, float32&, const vec2f& adj_ret) {
  mat_t<2, 2, float32> h[3];
  adj_noise_detail::curl_hessians<2>(state, xy, octaves, lacunarity, gain, 1, h);
  for (int n = 0; n < 2; ++n) adj_xy.c[n] += -h[0].c[1][n] * adj_ret.c[0] + h[0].c[0][n] * adj_ret.c[1];
}

WP_FUNC void adj_curlnoise(uint32 state, const vec3f& xyz, uint32 octaves, float32 lacunarity, float32 gain,
                           uint32&, vec3f& adj_xyz, uint32&, float32&, float32&, const vec3f& adj_ret) {
  adj_noise_detail::adj_curl3<3>(state, xyz, octaves, lacunarity, gain, adj_xyz, adj_ret);
}

WP_FUNC void adj_curlnoise(uint32 state, const vec4f& xyzt, uint32 octaves, float32 lacunarity, float32 gain,
                           uint32&, vec4f& adj_xyzt, uint32&, float32&, float32&, const vec3f& adj_ret) {
  adj_noise_detail::adj_curl3<4>(state, xyzt, octaves, lacunarity, gain, adj_xyzt, adj_ret);
}

// The shorter forms, with Warp's defaults (gain 0.5, lacunarity 2, octaves 1).
template <int N, int M>
WP_FUNC void adj_curlnoise(uint32 state, const vec_t<N, float32>& x, uint32 octaves, float32 lacunarity,
                           uint32& adj_state, vec_t<N, float32>& adj_x, uint32& adj_octaves, float32& adj_lacunarity,
                           const vec_t<M, float32>& adj_ret) {
  float32 adj_gain = 0.0f;
  adj_curlnoise(state, x, octaves, lacunarity, 0.5f, adj_state, adj_x, adj_octaves, adj_lacunarity, adj_gain,
                adj_ret);
}

template <int N, int M>
WP_FUNC void adj_curlnoise(uint32 state, const vec_t<N, float32>& x, uint32 octaves, uint32& adj_state,
                           vec_t<N, float32>& adj_x, uint32& adj_octaves, const vec_t<M, float32>& adj_ret) {
  float32 adj_lacunarity = 0.0f, adj_gain = 0.0f;
  adj_curlnoise(state, x, octaves, 2.0f, 0.5f, adj_state, adj_x, adj_octaves, adj_lacunarity, adj_gain, adj_ret);
}

template <int N, int M>
WP_FUNC void adj_curlnoise(uint32 state, const vec_t<N, float32>& x, uint32& adj_state, vec_t<N, float32>& adj_x,
                           const vec_t<M, float32>& adj_ret) {
  uint32 adj_octaves = 0;
  float32 adj_lacunarity = 0.0f, adj_gain = 0.0f;
  adj_curlnoise(state, x, 1u, 2.0f, 0.5f, adj_state, adj_x, adj_octaves, adj_lacunarity, adj_gain, adj_ret);
}

}  // namespace wp

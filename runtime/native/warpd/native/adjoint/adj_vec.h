// warpd device runtime: reverse-mode adjoints of the vector builtins (vec.h,
// and the vector norms of mat.h). Conventions: adj_scalar.h.
//
// Element operations go through the scalar adjoints and accumulate_adjoint,
// so integer vectors carry no gradient and half vectors round per operation.
// Warp's choices kept here: length and normalize pass no gradient at the zero
// vector (the forward's own special case); min/max of one vector send it to the
// first smallest/largest element (argmin/argmax); norm_huber's branch is
// |v|^2 <= delta^2 (quadratic, the boundary included) as Warp's, and d/d delta
// is 0 on that side; norm_l1 takes d|x|/dx = 1 at 0. mod on vectors has no
// adjoint: Warp does not differentiate that overload.
#pragma once

#include "warpd/native/adjoint/adj_scalar.h"
#include "warpd/native/mat.h"
#include "warpd/native/vec.h"

namespace wp {

template <int N, typename T>
WP_FUNC void accumulate_adjoint(vec_t<N, T>& adj, const vec_t<N, T>& v) {
  for (int i = 0; i < N; ++i) accumulate_adjoint(adj.c[i], v.c[i]);
}

// --- Element-wise --------------------------------------------------------------

template <int N, typename T>
WP_FUNC void adj_add(const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                     const vec_t<N, T>& adj_ret) {
  accumulate_adjoint(adj_a, adj_ret);
  accumulate_adjoint(adj_b, adj_ret);
}

template <int N, typename T>
WP_FUNC void adj_sub(const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                     const vec_t<N, T>& adj_ret) {
  accumulate_adjoint(adj_a, adj_ret);
  accumulate_adjoint(adj_b, neg(adj_ret));
}

template <int N, typename T>
WP_FUNC void adj_neg(const vec_t<N, T>&, vec_t<N, T>& adj_x, const vec_t<N, T>& adj_ret) {
  accumulate_adjoint(adj_x, neg(adj_ret));
}

template <int N, typename T>
WP_FUNC void adj_pos(const vec_t<N, T>&, vec_t<N, T>& adj_x, const vec_t<N, T>& adj_ret) {
  accumulate_adjoint(adj_x, adj_ret);
}

template <int N, typename T>
WP_FUNC void adj_abs(const vec_t<N, T>& x, vec_t<N, T>& adj_x, const vec_t<N, T>& adj_ret) {
  for (int i = 0; i < N; ++i) adj_abs(x.c[i], adj_x.c[i], adj_ret.c[i]);
}

template <int N, typename T>
WP_FUNC void adj_min(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                     const vec_t<N, T>& adj_ret) {
  for (int i = 0; i < N; ++i) adj_min(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]);
}

template <int N, typename T>
WP_FUNC void adj_max(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                     const vec_t<N, T>& adj_ret) {
  for (int i = 0; i < N; ++i) adj_max(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]);
}

template <int N, typename T>
WP_FUNC void adj_cw_mul(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                        const vec_t<N, T>& adj_ret) {
  accumulate_adjoint(adj_a, cw_mul(b, adj_ret));
  accumulate_adjoint(adj_b, cw_mul(a, adj_ret));
}

// d(a/b)/db = -ret/b, element by element.
template <int N, typename T>
WP_FUNC void adj_cw_div(const vec_t<N, T>&, const vec_t<N, T>& b, const vec_t<N, T>& ret, vec_t<N, T>& adj_a,
                        vec_t<N, T>& adj_b, const vec_t<N, T>& adj_ret) {
  accumulate_adjoint(adj_a, cw_div(adj_ret, b));
  accumulate_adjoint(adj_b, neg(cw_mul(adj_ret, cw_div(ret, b))));
}

// --- With a scalar -------------------------------------------------------------

template <int N, typename T>
WP_FUNC void adj_mul(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s, const vec_t<N, T>& adj_ret) {
  accumulate_adjoint(adj_a, mul(adj_ret, s));
  accumulate_adjoint(adj_s, dot(a, adj_ret));
}

template <int N, typename T>
WP_FUNC void adj_mul(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
  adj_mul(a, s, adj_a, adj_s, adj_ret);
}

// a / s: d/da = 1/s, d/ds = -a/s^2.
template <int N, typename T>
WP_FUNC void adj_div(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s, const vec_t<N, T>& adj_ret) {
  accumulate_adjoint(adj_s, neg(div(dot(a, adj_ret), mul(s, s))));
  accumulate_adjoint(adj_a, div(adj_ret, s));
}

// s / a[i]: d/ds = sum 1/a[i], d/da[i] = -s/a[i]^2.
template <int N, typename T>
WP_FUNC void adj_div(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
  for (int i = 0; i < N; ++i) {
    const T inv = div(cast<T>(1), a.c[i]);
    accumulate_adjoint(adj_a.c[i], neg(mul(mul(mul(s, adj_ret.c[i]), inv), inv)));
    accumulate_adjoint(adj_s, mul(adj_ret.c[i], inv));
  }
}

template <int N, typename T>
WP_FUNC void adj_div_approx(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s,
                            const vec_t<N, T>& adj_ret) {
  accumulate_adjoint(adj_s, neg(div_approx(dot(a, adj_ret), mul(s, s))));
  accumulate_adjoint(adj_a, div_approx(adj_ret, s));
}

template <int N, typename T>
WP_FUNC void adj_div_approx(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a,
                            const vec_t<N, T>& adj_ret) {
  for (int i = 0; i < N; ++i) {
    const T inv = div_approx(cast<T>(1), a.c[i]);
    accumulate_adjoint(adj_a.c[i], neg(mul(mul(mul(s, adj_ret.c[i]), inv), inv)));
    accumulate_adjoint(adj_s, mul(adj_ret.c[i], inv));
  }
}

// a (1 - t) + b t.
template <int N, typename T>
WP_FUNC void adj_lerp(const vec_t<N, T>& a, const vec_t<N, T>& b, T t, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                      T& adj_t, const vec_t<N, T>& adj_ret) {
  accumulate_adjoint(adj_a, mul(adj_ret, sub(cast<T>(1), t)));
  accumulate_adjoint(adj_b, mul(adj_ret, t));
  accumulate_adjoint(adj_t, sub(dot(b, adj_ret), dot(a, adj_ret)));
}

// --- Products and reductions -----------------------------------------------------

template <int N, typename T>
WP_FUNC void adj_dot(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                     T adj_ret) {
  accumulate_adjoint(adj_a, mul(b, adj_ret));
  accumulate_adjoint(adj_b, mul(a, adj_ret));
}

// d(a x b) . g: b x g for a, g x a = -(a x g) for b.
template <typename T>
WP_FUNC void adj_cross(const vec_t<3, T>& a, const vec_t<3, T>& b, vec_t<3, T>& adj_a, vec_t<3, T>& adj_b,
                       const vec_t<3, T>& adj_ret) {
  accumulate_adjoint(adj_a, cross(b, adj_ret));
  accumulate_adjoint(adj_b, neg(cross(a, adj_ret)));
}

template <int N, typename T>
WP_FUNC void adj_length_sq(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
  accumulate_adjoint(adj_a, mul(a, mul(cast<T>(2), adj_ret)));
}

// a / |a|; nothing at the zero vector.
template <int N, typename T>
WP_FUNC void adj_length(const vec_t<N, T>& a, T ret, vec_t<N, T>& adj_a, T adj_ret) {
  if (gt(ret, cast<T>(0))) accumulate_adjoint(adj_a, mul(div(a, ret), adj_ret));
}

// (g - ret (ret . g)) / |a|; nothing at the zero vector (normalize gives 0 there).
template <int N, typename T>
WP_FUNC void adj_normalize(const vec_t<N, T>& a, const vec_t<N, T>& ret, vec_t<N, T>& adj_a,
                           const vec_t<N, T>& adj_ret) {
  const T d = length(a);
  if (!gt(d, cast<T>(0))) return;
  const T inv = div(cast<T>(1), d);
  accumulate_adjoint(adj_a, sub(mul(adj_ret, inv), mul(ret, mul(dot(ret, adj_ret), inv))));
}

template <int N, typename T>
WP_FUNC void adj_min(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
  accumulate_adjoint(adj_a.c[argmin(a)], adj_ret);
}

template <int N, typename T>
WP_FUNC void adj_max(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
  accumulate_adjoint(adj_a.c[argmax(a)], adj_ret);
}

// --- Norms (warp/_src/math.py's functions, differentiated as Warp's codegen does) --

template <int N, typename T>
WP_FUNC void adj_norm_l1(const vec_t<N, T>& v, vec_t<N, T>& adj_v, T adj_ret) {
  for (int i = 0; i < N; ++i) adj_abs(v.c[i], adj_v.c[i], adj_ret);
}

template <int N, typename T>
WP_FUNC void adj_norm_l2(const vec_t<N, T>& v, vec_t<N, T>& adj_v, T adj_ret) {
  adj_length(v, length(v), adj_v, adj_ret);
}

// 0.5 |v|^2 for |v|^2 <= delta^2, else delta (|v| - delta / 2).
template <int N, typename T>
WP_FUNC void adj_norm_huber(const vec_t<N, T>& v, T delta, vec_t<N, T>& adj_v, T& adj_delta, T adj_ret) {
  const T a = dot(v, v);
  if (!gt(a, mul(delta, delta))) {
    accumulate_adjoint(adj_v, mul(v, adj_ret));
    return;
  }
  const T r = sqrt(a);
  accumulate_adjoint(adj_v, mul(v, div(mul(delta, adj_ret), r)));
  accumulate_adjoint(adj_delta, mul(sub(r, delta), adj_ret));
}

// r = delta sqrt(1 + |v|^2 / delta^2): dr/dv = v / r, dr/d delta = delta / r.
template <int N, typename T>
WP_FUNC void adj_norm_pseudo_huber(const vec_t<N, T>& v, T delta, vec_t<N, T>& adj_v, T& adj_delta,
                                   T adj_ret) {
  const T r = norm_pseudo_huber(v, delta);
  accumulate_adjoint(adj_v, mul(v, div(adj_ret, r)));
  accumulate_adjoint(adj_delta, mul(div(delta, r), adj_ret));
}

// v / r with r = norm_pseudo_huber(v, delta).
template <int N, typename T>
WP_FUNC void adj_smooth_normalize(const vec_t<N, T>& v, T delta, vec_t<N, T>& adj_v, T& adj_delta,
                                  const vec_t<N, T>& adj_ret) {
  const T r = norm_pseudo_huber(v, delta);
  T adj_r = cast<T>(0);
  adj_div(v, r, adj_v, adj_r, adj_ret);
  adj_norm_pseudo_huber(v, delta, adj_v, adj_delta, adj_r);
}

}  // namespace wp

// warpd device runtime: reverse-mode adjoints of the quaternion builtins
// (quat.h, Warp's "Quaternion Math" group and the quaternion overloads of the
// operators, dot, length, length_sq, normalize and lerp). Conventions:
// adj_scalar.h.
//
// Every adjoint is the exact derivative of warpd's forward function (the
// chain rule through its operations), so it also holds for non-unit
// quaternions. The forward result is taken only where Warp's adjoint takes
// it: length (reused: a / |a|) and quat_slerp (not needed; recomputed).
//
// Warp 1.19's choices at the degenerate points, kept here:
// - length and normalize pass no gradient at the zero quaternion (normalize's
//   identity fallback is a constant);
// - quat_to_axis_angle passes none when the imaginary part is zero (the axis
//   is the constant 0 there), and differentiates |w| with d|w|/dw = 1 at
//   w = 0 (its axis flip uses w < 0);
// - quat_slerp is differentiated through its construction a * axis_angle(
//   axis, t * angle) of the relative rotation, so it inherits the above;
// - the Euler / roll-pitch-yaw / twist functions (Warp's warp/_src/math.py
//   functions) are differentiated as Warp's codegen does: through the branch
//   the forward took, with the scalar adjoints' choices for atan2 (none at
//   (0, 0)), acos/asin (none where |x| >= 1), abs (+1 at 0) and clamp;
// - quat_from_matrix is differentiated through the branch the forward took
//   and the final normalize.
// quat_from_euler / quat_to_euler take integer axes, whose adjoints are
// no-ops.
#pragma once

#include "warpd/native/adjoint/adj_mat.h"
#include "warpd/native/adjoint/adj_vec.h"
#include "warpd/native/quat.h"
#include "warpd/native/tuple.h"

namespace wp {

template <typename T>
WP_FUNC void accumulate_adjoint(quat_t<T>& adj, const quat_t<T>& v) {
  for (int i = 0; i < 4; ++i) accumulate_adjoint(adj.c[i], v.c[i]);
}

namespace adj_quat_internal {

template <typename T>
WP_FUNC quat_t<T> zero_quat() {
  const T z = cast<T>(0);
  return quat_t<T>{{z, z, z, z}};
}

template <typename T>
WP_FUNC vec_t<3, T> zero_vec3() {
  const T z = cast<T>(0);
  return vec_t<3, T>{{z, z, z}};
}

template <typename T>
WP_FUNC vec_t<3, T> imag(const quat_t<T>& q) {
  return vec_t<3, T>{{q.c[0], q.c[1], q.c[2]}};
}

template <typename T>
WP_FUNC quat_t<T> make_quat(const vec_t<3, T>& v, T w) {
  return quat_t<T>{{v.c[0], v.c[1], v.c[2], w}};
}

// The rotation of v by q (Warp's formula, quat_rotate) and by its conjugate
// (quat_rotate_inv, sign = -1): r = v (2w^2 - 1) + 2 u (u . v) + sign 2w (u x v).
// With g = adj_ret:
//   d/dv = (2w^2 - 1) g + 2 (u . g) u + sign 2w (g x u)
//   d/du = 2 (u . v) g + 2 (u . g) v + sign 2w (v x g)
//   d/dw = 4w (v . g) + sign 2 (u x v) . g
template <typename T>
WP_FUNC void adj_rotate(const quat_t<T>& q, const vec_t<3, T>& v, bool inverse, quat_t<T>& adj_q,
                        vec_t<3, T>& adj_v, const vec_t<3, T>& g) {
  const T two = cast<T>(2);
  const vec_t<3, T> u = imag(q);
  const T w = q.c[3];
  const T c = sub(mul(mul(two, w), w), cast<T>(1));
  const T ug = dot(u, g);
  const T uv = dot(u, v);
  const T e = inverse ? neg(mul(two, w)) : mul(two, w);
  const vec_t<3, T> dv = add(add(mul(g, c), mul(u, mul(two, ug))), mul(cross(g, u), e));
  const vec_t<3, T> du = add(add(mul(g, mul(two, uv)), mul(v, mul(two, ug))), mul(cross(v, g), e));
  T dw = mul(mul(cast<T>(4), w), dot(v, g));
  const T cx = mul(two, dot(cross(u, v), g));
  dw = inverse ? sub(dw, cx) : add(dw, cx);
  accumulate_adjoint(adj_v, dv);
  accumulate_adjoint(adj_q, make_quat(du, dw));
}

}  // namespace adj_quat_internal

// --- Component-wise ----------------------------------------------------------------

template <typename T>
WP_FUNC void adj_add(const quat_t<T>&, const quat_t<T>&, quat_t<T>& adj_a, quat_t<T>& adj_b,
                     const quat_t<T>& adj_ret) {
  accumulate_adjoint(adj_a, adj_ret);
  accumulate_adjoint(adj_b, adj_ret);
}

template <typename T>
WP_FUNC void adj_sub(const quat_t<T>&, const quat_t<T>&, quat_t<T>& adj_a, quat_t<T>& adj_b,
                     const quat_t<T>& adj_ret) {
  accumulate_adjoint(adj_a, adj_ret);
  accumulate_adjoint(adj_b, neg(adj_ret));
}

template <typename T>
WP_FUNC void adj_neg(const quat_t<T>&, quat_t<T>& adj_x, const quat_t<T>& adj_ret) {
  accumulate_adjoint(adj_x, neg(adj_ret));
}

template <typename T>
WP_FUNC void adj_pos(const quat_t<T>&, quat_t<T>& adj_x, const quat_t<T>& adj_ret) {
  accumulate_adjoint(adj_x, adj_ret);
}

template <typename T>
WP_FUNC void adj_mul(const quat_t<T>& a, T s, quat_t<T>& adj_a, T& adj_s, const quat_t<T>& adj_ret) {
  accumulate_adjoint(adj_a, mul(adj_ret, s));
  accumulate_adjoint(adj_s, dot(a, adj_ret));
}

template <typename T>
WP_FUNC void adj_mul(T s, const quat_t<T>& a, T& adj_s, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
  adj_mul(a, s, adj_a, adj_s, adj_ret);
}

// a / s: d/da = 1/s, d/ds = -a/s^2.
template <typename T>
WP_FUNC void adj_div(const quat_t<T>& a, T s, quat_t<T>& adj_a, T& adj_s, const quat_t<T>& adj_ret) {
  accumulate_adjoint(adj_s, neg(div(dot(a, adj_ret), mul(s, s))));
  accumulate_adjoint(adj_a, div(adj_ret, s));
}

// s / a[i]: d/ds = sum 1/a[i], d/da[i] = -s/a[i]^2.
template <typename T>
WP_FUNC void adj_div(T s, const quat_t<T>& a, T& adj_s, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
  for (int i = 0; i < 4; ++i) {
    const T inv = div(cast<T>(1), a.c[i]);
    accumulate_adjoint(adj_a.c[i], neg(mul(mul(mul(s, adj_ret.c[i]), inv), inv)));
    accumulate_adjoint(adj_s, mul(adj_ret.c[i], inv));
  }
}

template <typename T>
WP_FUNC void adj_div_approx(const quat_t<T>& a, T s, quat_t<T>& adj_a, T& adj_s, const quat_t<T>& adj_ret) {
  accumulate_adjoint(adj_s, neg(div_approx(dot(a, adj_ret), mul(s, s))));
  accumulate_adjoint(adj_a, div_approx(adj_ret, s));
}

template <typename T>
WP_FUNC void adj_div_approx(T s, const quat_t<T>& a, T& adj_s, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
  for (int i = 0; i < 4; ++i) {
    const T inv = div_approx(cast<T>(1), a.c[i]);
    accumulate_adjoint(adj_a.c[i], neg(mul(mul(mul(s, adj_ret.c[i]), inv), inv)));
    accumulate_adjoint(adj_s, mul(adj_ret.c[i], inv));
  }
}

// a (1 - t) + b t.
template <typename T>
WP_FUNC void adj_lerp(const quat_t<T>& a, const quat_t<T>& b, T t, quat_t<T>& adj_a, quat_t<T>& adj_b, T& adj_t,
                      const quat_t<T>& adj_ret) {
  accumulate_adjoint(adj_a, mul(adj_ret, sub(cast<T>(1), t)));
  accumulate_adjoint(adj_b, mul(adj_ret, t));
  accumulate_adjoint(adj_t, sub(dot(b, adj_ret), dot(a, adj_ret)));
}

// --- Products and norms --------------------------------------------------------------

// Left and right multiplication are transposed by conjugating the factor:
// adj_a += g b*, adj_b += a* g (for any, also non-unit, quaternions).
template <typename T>
WP_FUNC void adj_mul(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b,
                     const quat_t<T>& adj_ret) {
  accumulate_adjoint(adj_a, mul(adj_ret, quat_inverse(b)));
  accumulate_adjoint(adj_b, mul(quat_inverse(a), adj_ret));
}

template <typename T>
WP_FUNC void adj_dot(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b, T adj_ret) {
  accumulate_adjoint(adj_a, mul(b, adj_ret));
  accumulate_adjoint(adj_b, mul(a, adj_ret));
}

template <typename T>
WP_FUNC void adj_length_sq(const quat_t<T>& a, quat_t<T>& adj_a, T adj_ret) {
  accumulate_adjoint(adj_a, mul(a, mul(cast<T>(2), adj_ret)));
}

// a / |a|; nothing at the zero quaternion.
template <typename T>
WP_FUNC void adj_length(const quat_t<T>& a, T ret, quat_t<T>& adj_a, T adj_ret) {
  if (gt(ret, cast<T>(0))) accumulate_adjoint(adj_a, mul(a, div(adj_ret, ret)));
}

// (g - a (a . g) / |a|^2) / |a|; nothing where the forward falls back to the
// identity (|a| not > 0).
template <typename T>
WP_FUNC void adj_normalize(const quat_t<T>& a, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
  const T l = length(a);
  if (!gt(l, cast<T>(0))) return;
  const T inv = div(cast<T>(1), l);
  accumulate_adjoint(adj_a, sub(mul(adj_ret, inv), mul(a, mul(mul(mul(inv, inv), inv), dot(a, adj_ret)))));
}

// --- Rotations -----------------------------------------------------------------------

template <typename T>
WP_FUNC void adj_quat_inverse(const quat_t<T>&, quat_t<T>& adj_q, const quat_t<T>& adj_ret) {
  accumulate_adjoint(adj_q, quat_inverse(adj_ret));
}

template <typename T>
WP_FUNC void adj_quat_rotate(const quat_t<T>& q, const vec_t<3, T>& v, quat_t<T>& adj_q, vec_t<3, T>& adj_v,
                             const vec_t<3, T>& adj_ret) {
  adj_quat_internal::adj_rotate(q, v, false, adj_q, adj_v, adj_ret);
}

template <typename T>
WP_FUNC void adj_quat_rotate_inv(const quat_t<T>& q, const vec_t<3, T>& v, quat_t<T>& adj_q, vec_t<3, T>& adj_v,
                                 const vec_t<3, T>& adj_ret) {
  adj_quat_internal::adj_rotate(q, v, true, adj_q, adj_v, adj_ret);
}

// (axis sin(angle/2), cos(angle/2)).
template <typename T>
WP_FUNC void adj_quat_from_axis_angle(const vec_t<3, T>& axis, T angle, vec_t<3, T>& adj_axis, T& adj_angle,
                                      const quat_t<T>& adj_ret) {
  const T h = mul(angle, cast<T>(0.5));
  const T s = sin(h), c = cos(h);
  const vec_t<3, T> g = adj_quat_internal::imag(adj_ret);
  accumulate_adjoint(adj_axis, mul(g, s));
  accumulate_adjoint(adj_angle, mul(cast<T>(0.5), sub(mul(c, dot(axis, g)), mul(s, adj_ret.c[3]))));
}

// axis = flip v / |v|, angle = 2 atan2(|v|, |w|) with v the imaginary part
// and flip = -1 when w < 0. Nothing when |v| is 0 (Warp's choice).
template <typename T>
WP_FUNC void adj_quat_to_axis_angle(const quat_t<T>& q, const vec_t<3, T>&, const T&, quat_t<T>& adj_q,
                                    const vec_t<3, T>& adj_axis, const T& adj_angle) {
  const vec_t<3, T> v = adj_quat_internal::imag(q);
  const T w = q.c[3];
  const T l = length(v);
  if (!gt(l, cast<T>(0))) return;
  const bool flip = lt(w, cast<T>(0));
  const T inv = div(cast<T>(1), l);
  // d axis: flip (g / l - v (v . g) / l^3).
  vec_t<3, T> du = sub(mul(adj_axis, inv), mul(v, mul(mul(mul(inv, inv), inv), dot(v, adj_axis))));
  if (flip) du = neg(du);
  // d angle: 2 (|w| dl - l d|w|) / (l^2 + w^2).
  const T aw = abs(w);
  const T d = div(mul(cast<T>(2), adj_angle), add(mul(l, l), mul(w, w)));
  du = add(du, mul(v, mul(mul(d, aw), inv)));
  T dw = neg(mul(d, l));
  if (flip) dw = neg(dw);
  accumulate_adjoint(adj_q, adj_quat_internal::make_quat(du, dw));
}

// The tuple form: adj_ret holds the adjoints of (axis, angle).
template <typename T>
WP_FUNC void adj_quat_to_axis_angle(const quat_t<T>& q, quat_t<T>& adj_q, const tuple_t<vec_t<3, T>, T>& adj_ret) {
  vec_t<3, T> axis;
  T angle;
  quat_to_axis_angle(q, axis, angle);
  adj_quat_to_axis_angle(q, axis, angle, adj_q, tuple_get<0>(adj_ret), tuple_get<1>(adj_ret));
}

// qz(yaw) qy(pitch) qx(roll) with half angles: each partial derivative is a
// combination of the half-angle sines and cosines.
template <typename T>
WP_FUNC void adj_quat_rpy(T roll, T pitch, T yaw, T& adj_roll, T& adj_pitch, T& adj_yaw, const quat_t<T>& adj_ret) {
  const T h = cast<T>(0.5);
  const T cy = cos(mul(yaw, h)), sy = sin(mul(yaw, h));
  const T cr = cos(mul(roll, h)), sr = sin(mul(roll, h));
  const T cp = cos(mul(pitch, h)), sp = sin(mul(pitch, h));
  const quat_t<T> q = quat_rpy(roll, pitch, yaw);
  const T x = q.c[0], y = q.c[1], z = q.c[2], w = q.c[3];
  // d/droll = 0.5 (w, z, -y, -x); d/dyaw = 0.5 (-y, x, w, -z).
  const quat_t<T> d_roll{{mul(h, w), mul(h, z), neg(mul(h, y)), neg(mul(h, x))}};
  const quat_t<T> d_yaw{{neg(mul(h, y)), mul(h, x), mul(h, w), neg(mul(h, z))}};
  const quat_t<T> d_pitch{{mul(h, neg(add(mul(mul(cy, sr), sp), mul(mul(sy, cr), cp)))),
                           mul(h, sub(mul(mul(cy, cr), cp), mul(mul(sy, sr), sp))),
                           mul(h, neg(add(mul(mul(sy, cr), sp), mul(mul(cy, sr), cp)))),
                           mul(h, sub(mul(mul(sy, sr), cp), mul(mul(cy, cr), sp)))}};
  accumulate_adjoint(adj_roll, dot(d_roll, adj_ret));
  accumulate_adjoint(adj_pitch, dot(d_pitch, adj_ret));
  accumulate_adjoint(adj_yaw, dot(d_yaw, adj_ret));
}

// a * axis_angle(axis, t angle) with (axis, angle) = to_axis_angle(a* b): the
// chain rule through that construction. `ret` is unused (Warp's signature).
template <typename T>
WP_FUNC void adj_quat_slerp(const quat_t<T>& a, const quat_t<T>& b, T t, const quat_t<T>&, quat_t<T>& adj_a,
                            quat_t<T>& adj_b, T& adj_t, const quat_t<T>& adj_ret) {
  using namespace adj_quat_internal;
  const quat_t<T> ai = quat_inverse(a);
  const quat_t<T> rel = mul(ai, b);
  vec_t<3, T> axis;
  T angle;
  quat_to_axis_angle(rel, axis, angle);
  const T s = mul(t, angle);
  const quat_t<T> e = quat_from_axis_angle(axis, s);
  quat_t<T> adj_e = zero_quat<T>();
  adj_mul(a, e, adj_a, adj_e, adj_ret);
  vec_t<3, T> adj_axis = zero_vec3<T>();
  T adj_s = cast<T>(0);
  adj_quat_from_axis_angle(axis, s, adj_axis, adj_s, adj_e);
  accumulate_adjoint(adj_t, mul(angle, adj_s));
  const T adj_angle = mul(t, adj_s);
  quat_t<T> adj_rel = zero_quat<T>();
  adj_quat_to_axis_angle(rel, axis, angle, adj_rel, adj_axis, adj_angle);
  quat_t<T> adj_ai = zero_quat<T>();
  adj_mul(ai, b, adj_ai, adj_b, adj_rel);
  adj_quat_inverse(a, adj_a, adj_ai);
}

// --- Matrices ------------------------------------------------------------------------

// Column j is quat_rotate(q, e_j).
template <typename T>
WP_FUNC void adj_quat_to_matrix(const quat_t<T>& q, quat_t<T>& adj_q, const mat_t<3, 3, T>& adj_ret) {
  for (int j = 0; j < 3; ++j) {
    vec_t<3, T> e = adj_quat_internal::zero_vec3<T>();
    e.c[j] = cast<T>(1);
    vec_t<3, T> col{{adj_ret.c[0][j], adj_ret.c[1][j], adj_ret.c[2][j]}};
    vec_t<3, T> unused = adj_quat_internal::zero_vec3<T>();
    adj_quat_internal::adj_rotate(q, e, false, adj_q, unused, col);
  }
}

// Through the branch quat_from_matrix took and its normalize. Each branch has
// one component 0.5 s (s = sqrt(arg), arg = +-m00 +- m11 +- m22 + 1) and
// three of the form (m[r1][c1] +- m[r2][c2]) h with h = 0.5 / s.
template <int R, int C, typename T>
WP_FUNC void adj_quat_from_matrix(const mat_t<R, C, T>& m, mat_t<R, C, T>& adj_m, const quat_t<T>& adj_ret) {
  static_assert((R == 3 && C == 3) || (R == 4 && C == 4), "quat_from_matrix takes a 3x3 or 4x4 matrix");
  // Per branch (trace, then the largest diagonal entry 0, 1, 2): the index of
  // the 0.5 s component, the signs of m00, m11, m22 in arg, and for each
  // component r1 c1 r2 c2 sign (sign 0: the 0.5 s component).
  const int kHalf[4] = {3, 0, 1, 2};
  const int kDiag[4][3] = {{1, 1, 1}, {1, -1, -1}, {-1, 1, -1}, {-1, -1, 1}};
  const int kPairs[4][4][5] = {
      {{2, 1, 1, 2, -1}, {0, 2, 2, 0, -1}, {1, 0, 0, 1, -1}, {0, 0, 0, 0, 0}},
      {{0, 0, 0, 0, 0}, {0, 1, 1, 0, 1}, {2, 0, 0, 2, 1}, {2, 1, 1, 2, -1}},
      {{0, 1, 1, 0, 1}, {0, 0, 0, 0, 0}, {1, 2, 2, 1, 1}, {0, 2, 2, 0, -1}},
      {{2, 0, 0, 2, 1}, {1, 2, 2, 1, 1}, {0, 0, 0, 0, 0}, {1, 0, 0, 1, -1}},
  };
  const T one = cast<T>(1), half_ = cast<T>(0.5);
  const T m00 = m.c[0][0], m11 = m.c[1][1], m22 = m.c[2][2];
  int b = 0;
  if (!ge(add(add(m00, m11), m22), cast<T>(0))) {
    int k = 0;
    if (gt(m11, m00)) k = 1;
    if (gt(m22, k == 0 ? m00 : m11)) k = 2;
    b = k + 1;
  }
  T arg = one;
  for (int i = 0; i < 3; ++i) arg = kDiag[b][i] > 0 ? add(arg, m.c[i][i]) : sub(arg, m.c[i][i]);
  const T s = sqrt(arg);
  const T h = div(half_, s);
  quat_t<T> raw;
  T pair[4];
  for (int c = 0; c < 4; ++c) {
    const int* p = kPairs[b][c];
    if (p[4] == 0) {
      raw.c[c] = mul(half_, s);
      pair[c] = cast<T>(0);
      continue;
    }
    pair[c] = p[4] > 0 ? add(m.c[p[0]][p[1]], m.c[p[2]][p[3]]) : sub(m.c[p[0]][p[1]], m.c[p[2]][p[3]]);
    raw.c[c] = mul(pair[c], h);
  }
  quat_t<T> g = adj_quat_internal::zero_quat<T>();
  adj_normalize(raw, g, adj_ret);
  T adj_h = cast<T>(0);
  for (int c = 0; c < 4; ++c) {
    const int* p = kPairs[b][c];
    if (p[4] == 0) continue;
    adj_h = add(adj_h, mul(g.c[c], pair[c]));
    const T d = mul(g.c[c], h);
    accumulate_adjoint(adj_m.c[p[0]][p[1]], d);
    accumulate_adjoint(adj_m.c[p[2]][p[3]], p[4] > 0 ? d : neg(d));
  }
  // dh/ds = -0.5 / s^2 = -2 h^2; ds/darg = 0.5 / s = h.
  const T adj_s = sub(mul(half_, g.c[kHalf[b]]), mul(mul(mul(cast<T>(2), h), h), adj_h));
  const T adj_arg = mul(adj_s, h);
  for (int i = 0; i < 3; ++i) accumulate_adjoint(adj_m.c[i][i], kDiag[b][i] > 0 ? adj_arg : neg(adj_arg));
}

// --- Euler angles and twist (Warp's warp/_src/math.py functions) ------------------

namespace adj_quat_internal {

// The slot of e that quat_internal::vec3_at reads, or -1 (reads 0).
WP_FUNC int32 vec3_slot(int32 idx) {
  if (idx < 0) idx = add(idx, 3);
  return (idx < 0 || idx > 2) ? -1 : idx;
}

// d axis_quat(axis, a) / da . g: 0.5 (cos(a/2) g[slot] - sin(a/2) g.w).
template <typename T>
WP_FUNC T adj_axis_quat(int32 axis, T a, const quat_t<T>& g) {
  const T h = mul(cast<T>(0.5), a);
  const int slot = axis == 0 ? 0 : (axis == 1 ? 1 : 2);
  return mul(cast<T>(0.5), sub(mul(cos(h), g.c[slot]), mul(sin(h), g.c[3])));
}

// Component of q (x, y, z) for a 1-based axis, as quat_internal::pick: 1 for
// anything but 2 and 3, so the gradient goes to that component.
WP_FUNC int pick_slot(int32 axis1) { return axis1 == 2 ? 1 : (axis1 == 3 ? 2 : 0); }

}  // namespace adj_quat_internal

template <typename T>
WP_FUNC void adj_quat_from_euler(const vec_t<3, T>& e, int32 i, int32 j, int32 k, vec_t<3, T>& adj_e, int32&,
                                 int32&, int32&, const quat_t<T>& adj_ret) {
  using namespace adj_quat_internal;
  const T ei = quat_internal::vec3_at(e, i), ej = quat_internal::vec3_at(e, j), ek = quat_internal::vec3_at(e, k);
  const quat_t<T> qi = quat_internal::axis_quat(i, ei);
  const quat_t<T> qj = quat_internal::axis_quat(j, ej);
  const quat_t<T> qk = quat_internal::axis_quat(k, ek);
  const quat_t<T> qji = mul(qj, qi);
  quat_t<T> adj_qk = zero_quat<T>(), adj_qji = zero_quat<T>(), adj_qj = zero_quat<T>(), adj_qi = zero_quat<T>();
  adj_mul(qk, qji, adj_qk, adj_qji, adj_ret);
  adj_mul(qj, qi, adj_qj, adj_qi, adj_qji);
  const int32 axes[3] = {i, j, k};
  const T angles[3] = {ei, ej, ek};
  const quat_t<T>* adjs[3] = {&adj_qi, &adj_qj, &adj_qk};
  for (int n = 0; n < 3; ++n) {
    const int32 slot = vec3_slot(axes[n]);
    if (slot >= 0) accumulate_adjoint(adj_e.c[slot], adj_axis_quat(axes[n], angles[n], *adjs[n]));
  }
}

// Through quat_to_euler's operations and the branch it took.
template <typename T>
WP_FUNC void adj_quat_to_euler(const quat_t<T>& q, int32 i, int32 j, int32 k, quat_t<T>& adj_q, int32&, int32&,
                               int32&, const vec_t<3, T>& adj_ret) {
  using namespace adj_quat_internal;
  // Forward, as quat_to_euler (q0 = w first, then x, y, z as q1..q3).
  const T qs[4] = {q.c[3], q.c[0], q.c[1], q.c[2]};
  const T pi = cast<T>(3.14159265358979323846), eps = cast<T>(1e-6);
  i = add(i, 1);
  j = add(j, 1);
  k = add(k, 1);
  const bool proper = i == k;
  if (proper) k = sub(sub(6, i), j);
  const T eps_ijk = div(cast<T>(mul(mul(sub(i, j), sub(j, k)), sub(k, i))), cast<T>(2));
  const int si = 1 + pick_slot(i), sj = 1 + pick_slot(j), sk = 1 + pick_slot(k);  // into qs
  const T qi = qs[si], qj = qs[sj], qk = qs[sk];
  T a = qs[0], b = qi, c = qj, d = mul(qk, eps_ijk);
  if (!proper) {
    a = sub(qs[0], qj);
    b = add(qi, mul(qk, eps_ijk));
    c = add(qj, qs[0]);
    d = sub(mul(qk, eps_ijk), qi);
  }
  const T ab = add(mul(a, a), mul(b, b));
  const T n = add(add(ab, mul(c, c)), mul(d, d));
  const T arg = sub(div(mul(cast<T>(2), ab), n), cast<T>(1));
  const T t2 = acos(arg);
  const int branch = lt(abs(t2), eps) ? 0 : (lt(abs(sub(t2, pi)), eps) ? 1 : 2);
  // Which of t1, t2, t3 (tags 1..3) each output slot holds: quat_to_euler's
  // assignments on the tags.
  int ex = 1, ey = 2, ez = 3;
  if (i == 2) {
    ex = 2;
    ey = 1;
  } else if (i == 3) {
    ex = 3;
    ez = 1;
  }
  if (j == 1) {
    ex = 2;
  } else if (j == 2) {
    ey = 2;
  } else {
    ez = 2;
  }
  if (k == 1) {
    ex = 3;
  } else if (k == 2) {
    ey = 3;
  } else {
    ez = 3;
  }
  // Reverse.
  T adj_t[4] = {cast<T>(0), cast<T>(0), cast<T>(0), cast<T>(0)};
  adj_t[ex] = add(adj_t[ex], adj_ret.c[0]);
  adj_t[ey] = add(adj_t[ey], adj_ret.c[1]);
  adj_t[ez] = add(adj_t[ez], adj_ret.c[2]);
  if (!proper) adj_t[3] = mul(adj_t[3], eps_ijk);
  T adj_tp = cast<T>(0), adj_tm = cast<T>(0);
  if (branch == 0) {
    adj_tp = mul(cast<T>(2), adj_t[3]);
  } else if (branch == 1) {
    adj_tm = mul(cast<T>(2), adj_t[3]);
  } else {
    adj_tp = add(adj_t[1], adj_t[3]);
    adj_tm = sub(adj_t[3], adj_t[1]);
  }
  T adj_a = cast<T>(0), adj_b = cast<T>(0), adj_c = cast<T>(0), adj_d = cast<T>(0);
  adj_atan2(b, a, adj_b, adj_a, adj_tp);
  adj_atan2(d, c, adj_d, adj_c, adj_tm);
  T adj_arg = cast<T>(0);
  adj_acos(arg, adj_arg, adj_t[2]);
  // arg = 2 ab / n - 1, n = ab + c^2 + d^2, ab = a^2 + b^2.
  const T adj_n = neg(div(mul(mul(cast<T>(2), ab), adj_arg), mul(n, n)));
  const T adj_ab = add(div(mul(cast<T>(2), adj_arg), n), adj_n);
  const T two = cast<T>(2);
  adj_a = add(adj_a, mul(mul(two, a), adj_ab));
  adj_b = add(adj_b, mul(mul(two, b), adj_ab));
  adj_c = add(adj_c, mul(mul(two, c), adj_n));
  adj_d = add(adj_d, mul(mul(two, d), adj_n));
  T adj_qs[4] = {cast<T>(0), cast<T>(0), cast<T>(0), cast<T>(0)};
  if (proper) {
    adj_qs[0] = add(adj_qs[0], adj_a);
    adj_qs[si] = add(adj_qs[si], adj_b);
    adj_qs[sj] = add(adj_qs[sj], adj_c);
    adj_qs[sk] = add(adj_qs[sk], mul(adj_d, eps_ijk));
  } else {
    // a = q0 - qj, b = qi + qk e, c = qj + q0, d = qk e - qi.
    adj_qs[0] = add(adj_qs[0], add(adj_a, adj_c));
    adj_qs[sj] = add(adj_qs[sj], sub(adj_c, adj_a));
    adj_qs[si] = add(adj_qs[si], sub(adj_b, adj_d));
    adj_qs[sk] = add(adj_qs[sk], mul(add(adj_b, adj_d), eps_ijk));
  }
  accumulate_adjoint(adj_q, quat_t<T>{{adj_qs[1], adj_qs[2], adj_qs[3], adj_qs[0]}});
}

// (atan2(2(wx + yz), 1 - 2(x^2 + y^2)), asin(clamp(2(wy - zx), -1, 1)),
//  atan2(2(wz + xy), 1 - 2(y^2 + z^2))).
template <typename T>
WP_FUNC void adj_quat_to_rpy(const quat_t<T>& q, quat_t<T>& adj_q, const vec_t<3, T>& adj_ret) {
  const T x = q.c[0], y = q.c[1], z = q.c[2], w = q.c[3];
  const T one = cast<T>(1), two = cast<T>(2), four = cast<T>(4);
  T gx = cast<T>(0), gy = cast<T>(0), gz = cast<T>(0), gw = cast<T>(0);
  // roll
  {
    const T t0 = mul(two, add(mul(w, x), mul(y, z)));
    const T t1 = sub(one, mul(two, add(mul(x, x), mul(y, y))));
    T a0 = cast<T>(0), a1 = cast<T>(0);
    adj_atan2(t0, t1, a0, a1, adj_ret.c[0]);
    gw = add(gw, mul(mul(two, x), a0));
    gx = add(gx, sub(mul(mul(two, w), a0), mul(mul(four, x), a1)));
    gy = add(gy, sub(mul(mul(two, z), a0), mul(mul(four, y), a1)));
    gz = add(gz, mul(mul(two, y), a0));
  }
  // pitch
  {
    const T t2 = mul(two, sub(mul(w, y), mul(z, x)));
    const T sp = clamp(t2, neg(one), one);
    T a_sp = cast<T>(0), a2 = cast<T>(0), a_lo = cast<T>(0), a_hi = cast<T>(0);
    adj_asin(sp, a_sp, adj_ret.c[1]);
    adj_clamp(t2, neg(one), one, a2, a_lo, a_hi, a_sp);
    gw = add(gw, mul(mul(two, y), a2));
    gy = add(gy, mul(mul(two, w), a2));
    gz = sub(gz, mul(mul(two, x), a2));
    gx = sub(gx, mul(mul(two, z), a2));
  }
  // yaw
  {
    const T t3 = mul(two, add(mul(w, z), mul(x, y)));
    const T t4 = sub(one, mul(two, add(mul(y, y), mul(z, z))));
    T a3 = cast<T>(0), a4 = cast<T>(0);
    adj_atan2(t3, t4, a3, a4, adj_ret.c[2]);
    gw = add(gw, mul(mul(two, z), a3));
    gz = add(gz, sub(mul(mul(two, w), a3), mul(mul(four, z), a4)));
    gx = add(gx, mul(mul(two, y), a3));
    gy = add(gy, sub(mul(mul(two, x), a3), mul(mul(four, y), a4)));
  }
  accumulate_adjoint(adj_q, quat_t<T>{{gx, gy, gz, gw}});
}

// normalize((axis (u . axis), w)) with u the imaginary part of q.
template <typename T>
WP_FUNC void adj_quat_twist(const vec_t<3, T>& axis, const quat_t<T>& q, vec_t<3, T>& adj_axis, quat_t<T>& adj_q,
                            const quat_t<T>& adj_ret) {
  using namespace adj_quat_internal;
  const vec_t<3, T> u = imag(q);
  const T proj = dot(u, axis);
  const quat_t<T> raw = make_quat(mul(axis, proj), q.c[3]);
  quat_t<T> g = zero_quat<T>();
  adj_normalize(raw, g, adj_ret);
  const vec_t<3, T> ga = imag(g);
  const T adj_proj = dot(ga, axis);
  accumulate_adjoint(adj_axis, add(mul(ga, proj), mul(u, adj_proj)));
  accumulate_adjoint(adj_q, make_quat(mul(axis, adj_proj), g.c[3]));
}

// 2 atan2(|axis . u|, w).
template <typename T>
WP_FUNC void adj_quat_twist_angle(const vec_t<3, T>& axis, const quat_t<T>& q, vec_t<3, T>& adj_axis,
                                  quat_t<T>& adj_q, const T& adj_ret) {
  using namespace adj_quat_internal;
  const vec_t<3, T> u = imag(q);
  const T d = dot(axis, u);
  T adj_s = cast<T>(0), adj_w = cast<T>(0), adj_d = cast<T>(0);
  adj_atan2(abs(d), q.c[3], adj_s, adj_w, mul(cast<T>(2), adj_ret));
  adj_abs(d, adj_d, adj_s);
  accumulate_adjoint(adj_axis, mul(u, adj_d));
  accumulate_adjoint(adj_q, make_quat(mul(axis, adj_d), adj_w));
}

// 2 atan2(axis . u, w).
template <typename T>
WP_FUNC void adj_quat_twist_angle_signed(const vec_t<3, T>& axis, const quat_t<T>& q, vec_t<3, T>& adj_axis,
                                         quat_t<T>& adj_q, const T& adj_ret) {
  using namespace adj_quat_internal;
  const vec_t<3, T> u = imag(q);
  T adj_d = cast<T>(0), adj_w = cast<T>(0);
  adj_atan2(dot(axis, u), q.c[3], adj_d, adj_w, mul(cast<T>(2), adj_ret));
  accumulate_adjoint(adj_axis, mul(u, adj_d));
  accumulate_adjoint(adj_q, make_quat(mul(axis, adj_d), adj_w));
}

}  // namespace wp

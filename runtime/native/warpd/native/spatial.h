// warpd device runtime: Warp's "Spatial Math" builtins (Featherstone-style
// 6D vectors).
//
// A spatial vector is a plain vec_t<6, T> (docs/native_headers.md) holding an
// angular part first and a linear part second: a twist (w, v) or a wrench
// (tau, f). spatial_top returns the first three components, spatial_bottom
// the last three. A spatial matrix is a mat_t<6, 6, T>.
//
// Semantics follow Warp 1.19 (warp/native/spatial.h, warp/_src/math.py).
#pragma once

#include "warpd/native/mat.h"
#include "warpd/native/quat.h"
#include "warpd/native/transform.h"
#include "warpd/native/vec.h"

namespace wp {

typedef vec_t<6, half> spatial_vectorh;
typedef vec_t<6, float32> spatial_vectorf;
typedef vec_t<6, float64> spatial_vectord;
typedef mat_t<6, 6, half> spatial_matrixh;
typedef mat_t<6, 6, float32> spatial_matrixf;
typedef mat_t<6, 6, float64> spatial_matrixd;

// --- Construction and parts ------------------------------------------------------

// Warp's spatial_vector(dtype=T): zero.
template <typename T>
WP_FUNC vec_t<6, T> spatial_vector() {
  const T z = cast<T>(0);
  return vec_t<6, T>{{z, z, z, z, z, z}};
}

// Warp's spatial_vector(w, v): angular part w on top, linear part v below.
template <typename T>
WP_FUNC vec_t<6, T> spatial_vector(const vec_t<3, T>& w, const vec_t<3, T>& v) {
  return vec_t<6, T>{{w.c[0], w.c[1], w.c[2], v.c[0], v.c[1], v.c[2]}};
}

template <typename T>
WP_FUNC vec_t<6, T> spatial_vector(T wx, T wy, T wz, T vx, T vy, T vz) {
  return vec_t<6, T>{{wx, wy, wz, vx, vy, vz}};
}

template <typename T>
WP_FUNC vec_t<3, T> spatial_top(const vec_t<6, T>& a) {
  return vec_t<3, T>{{a.c[0], a.c[1], a.c[2]}};
}

template <typename T>
WP_FUNC vec_t<3, T> spatial_bottom(const vec_t<6, T>& a) {
  return vec_t<3, T>{{a.c[3], a.c[4], a.c[5]}};
}

// The plain 6D dot product (a motion-force pairing when a is a twist and b a
// wrench: power).
template <typename T>
WP_FUNC T spatial_dot(const vec_t<6, T>& a, const vec_t<6, T>& b) {
  return dot(a, b);
}

// --- Cross products ------------------------------------------------------------------

// Motion cross product a x b for twists a = (w_a, v_a), b = (w_b, v_b):
// (w_a x w_b, v_a x w_b + w_a x v_b). It is [w_a^ 0; v_a^ w_a^] b, with x^
// the 3x3 cross-product matrix of x.
template <typename T>
WP_FUNC vec_t<6, T> spatial_cross(const vec_t<6, T>& a, const vec_t<6, T>& b) {
  vec_t<3, T> wa = spatial_top(a), va = spatial_bottom(a);
  vec_t<3, T> wb = spatial_top(b), vb = spatial_bottom(b);
  return spatial_vector(cross(wa, wb), add(cross(va, wb), cross(wa, vb)));
}

// Force cross product a x* b for a twist a and a wrench b = (tau, f):
// (w_a x tau + v_a x f, w_a x f) = [w_a^ v_a^; 0 w_a^] b, the negative
// transpose of spatial_cross's matrix.
template <typename T>
WP_FUNC vec_t<6, T> spatial_cross_dual(const vec_t<6, T>& a, const vec_t<6, T>& b) {
  vec_t<3, T> wa = spatial_top(a), va = spatial_bottom(a);
  vec_t<3, T> wb = spatial_top(b), vb = spatial_bottom(b);
  return spatial_vector(add(cross(wa, wb), cross(va, vb)), cross(wa, vb));
}

// [R 0; S R]: with S = p^ R this maps a twist from a frame to its parent,
// like transform_twist. Any R and S are taken as given.
template <typename T>
WP_FUNC mat_t<6, 6, T> spatial_adjoint(const mat_t<3, 3, T>& r, const mat_t<3, 3, T>& s) {
  mat_t<6, 6, T> m;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      m.c[i][j] = r.c[i][j];
      m.c[i][j + 3] = cast<T>(0);
      m.c[i + 3][j] = s.c[i][j];
      m.c[i + 3][j + 3] = r.c[i][j];
    }
  }
  return m;
}

// --- Changing frames ----------------------------------------------------------------

// Twist x = (w, v) given in the child frame of t = (p, q), expressed in the
// parent frame: w' = q w, v' = q v + p x w'.
template <typename T>
WP_FUNC vec_t<6, T> transform_twist(const transform_t<T>& t, const vec_t<6, T>& x) {
  vec_t<3, T> w = quat_rotate(t.q, spatial_top(x));
  vec_t<3, T> v = add(quat_rotate(t.q, spatial_bottom(x)), cross(t.p, w));
  return spatial_vector(w, v);
}

// Wrench x = (tau, f) in the child frame of t = (p, q), expressed in the
// parent frame: f' = q f, tau' = q tau + p x f'.
template <typename T>
WP_FUNC vec_t<6, T> transform_wrench(const transform_t<T>& t, const vec_t<6, T>& x) {
  vec_t<3, T> f = quat_rotate(t.q, spatial_bottom(x));
  vec_t<3, T> tau = add(quat_rotate(t.q, spatial_top(x)), cross(t.p, f));
  return spatial_vector(tau, f);
}

// Linear velocity of the point at offset r from the twist's origin, for the
// twist qd = (w, v): v + w x r.
template <typename T>
WP_FUNC vec_t<3, T> velocity_at_point(const vec_t<6, T>& qd, const vec_t<3, T>& r) {
  return add(spatial_bottom(qd), cross(spatial_top(qd), r));
}

}  // namespace wp

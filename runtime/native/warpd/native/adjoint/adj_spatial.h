// warpd device runtime: reverse-mode adjoints of the spatial builtins
// (spatial.h, Warp's "Spatial Math" group). Conventions: adj_scalar.h; none
// of these takes the forward result. A spatial vector is a vec_t<6, T>
// (angular part on top), so its adjoint accumulates with adj_vec.h's
// accumulate_adjoint. transform_twist, transform_wrench and velocity_at_point
// (Warp's warp/_src/math.py functions) are differentiated through their
// operations; every function here is smooth.
#pragma once

#include "warpd/native/adjoint/adj_transform.h"
#include "warpd/native/adjoint/adj_vec.h"
#include "warpd/native/spatial.h"

namespace wp {

template <typename T>
WP_FUNC void adj_spatial_top(const vec_t<6, T>&, vec_t<6, T>& adj_a, const vec_t<3, T>& adj_ret) {
  for (int i = 0; i < 3; ++i) accumulate_adjoint(adj_a.c[i], adj_ret.c[i]);
}

template <typename T>
WP_FUNC void adj_spatial_bottom(const vec_t<6, T>&, vec_t<6, T>& adj_a, const vec_t<3, T>& adj_ret) {
  for (int i = 0; i < 3; ++i) accumulate_adjoint(adj_a.c[i + 3], adj_ret.c[i]);
}

template <typename T>
WP_FUNC void adj_spatial_dot(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a, vec_t<6, T>& adj_b,
                             T adj_ret) {
  adj_dot(a, b, adj_a, adj_b, adj_ret);
}

// (w_a x w_b, v_a x w_b + w_a x v_b).
template <typename T>
WP_FUNC void adj_spatial_cross(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a, vec_t<6, T>& adj_b,
                               const vec_t<6, T>& adj_ret) {
  const vec_t<3, T> wa = spatial_top(a), va = spatial_bottom(a);
  const vec_t<3, T> wb = spatial_top(b), vb = spatial_bottom(b);
  const vec_t<3, T> gw = spatial_top(adj_ret), gv = spatial_bottom(adj_ret);
  vec_t<3, T> adj_wa = adj_quat_internal::zero_vec3<T>(), adj_va = adj_quat_internal::zero_vec3<T>();
  vec_t<3, T> adj_wb = adj_quat_internal::zero_vec3<T>(), adj_vb = adj_quat_internal::zero_vec3<T>();
  adj_cross(wa, wb, adj_wa, adj_wb, gw);
  adj_cross(va, wb, adj_va, adj_wb, gv);
  adj_cross(wa, vb, adj_wa, adj_vb, gv);
  accumulate_adjoint(adj_a, spatial_vector(adj_wa, adj_va));
  accumulate_adjoint(adj_b, spatial_vector(adj_wb, adj_vb));
}

// (w_a x w_b + v_a x v_b, w_a x v_b).
template <typename T>
WP_FUNC void adj_spatial_cross_dual(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a,
                                    vec_t<6, T>& adj_b, const vec_t<6, T>& adj_ret) {
  const vec_t<3, T> wa = spatial_top(a), va = spatial_bottom(a);
  const vec_t<3, T> wb = spatial_top(b), vb = spatial_bottom(b);
  const vec_t<3, T> gw = spatial_top(adj_ret), gv = spatial_bottom(adj_ret);
  vec_t<3, T> adj_wa = adj_quat_internal::zero_vec3<T>(), adj_va = adj_quat_internal::zero_vec3<T>();
  vec_t<3, T> adj_wb = adj_quat_internal::zero_vec3<T>(), adj_vb = adj_quat_internal::zero_vec3<T>();
  adj_cross(wa, wb, adj_wa, adj_wb, gw);
  adj_cross(va, vb, adj_va, adj_vb, gw);
  adj_cross(wa, vb, adj_wa, adj_vb, gv);
  accumulate_adjoint(adj_a, spatial_vector(adj_wa, adj_va));
  accumulate_adjoint(adj_b, spatial_vector(adj_wb, adj_vb));
}

// [R 0; S R].
template <typename T>
WP_FUNC void adj_spatial_adjoint(const mat_t<3, 3, T>&, const mat_t<3, 3, T>&, mat_t<3, 3, T>& adj_r,
                                 mat_t<3, 3, T>& adj_s, const mat_t<6, 6, T>& adj_ret) {
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      accumulate_adjoint(adj_r.c[i][j], add(adj_ret.c[i][j], adj_ret.c[i + 3][j + 3]));
      accumulate_adjoint(adj_s.c[i][j], adj_ret.c[i + 3][j]);
    }
}

// w' = q w, v' = q v + p x w'.
template <typename T>
WP_FUNC void adj_transform_twist(const transform_t<T>& t, const vec_t<6, T>& x, transform_t<T>& adj_t,
                                 vec_t<6, T>& adj_x, const vec_t<6, T>& adj_ret) {
  const vec_t<3, T> w = spatial_top(x), v = spatial_bottom(x);
  const vec_t<3, T> w2 = quat_rotate(t.q, w);
  const vec_t<3, T> gw = spatial_top(adj_ret), gv = spatial_bottom(adj_ret);
  // (p x w') . gv: w' gets gv x p, p gets w' x gv.
  const vec_t<3, T> adj_w2 = add(gw, cross(gv, t.p));
  accumulate_adjoint(adj_t.p, cross(w2, gv));
  vec_t<3, T> adj_w = adj_quat_internal::zero_vec3<T>(), adj_v = adj_quat_internal::zero_vec3<T>();
  adj_quat_rotate(t.q, v, adj_t.q, adj_v, gv);
  adj_quat_rotate(t.q, w, adj_t.q, adj_w, adj_w2);
  accumulate_adjoint(adj_x, spatial_vector(adj_w, adj_v));
}

// f' = q f, tau' = q tau + p x f'.
template <typename T>
WP_FUNC void adj_transform_wrench(const transform_t<T>& t, const vec_t<6, T>& x, transform_t<T>& adj_t,
                                  vec_t<6, T>& adj_x, const vec_t<6, T>& adj_ret) {
  const vec_t<3, T> tau = spatial_top(x), f = spatial_bottom(x);
  const vec_t<3, T> f2 = quat_rotate(t.q, f);
  const vec_t<3, T> gt = spatial_top(adj_ret), gf = spatial_bottom(adj_ret);
  const vec_t<3, T> adj_f2 = add(gf, cross(gt, t.p));
  accumulate_adjoint(adj_t.p, cross(f2, gt));
  vec_t<3, T> adj_tau = adj_quat_internal::zero_vec3<T>(), adj_f = adj_quat_internal::zero_vec3<T>();
  adj_quat_rotate(t.q, tau, adj_t.q, adj_tau, gt);
  adj_quat_rotate(t.q, f, adj_t.q, adj_f, adj_f2);
  accumulate_adjoint(adj_x, spatial_vector(adj_tau, adj_f));
}

// v + w x r: w gets r x g, r gets g x w.
template <typename T>
WP_FUNC void adj_velocity_at_point(const vec_t<6, T>& qd, const vec_t<3, T>& r, vec_t<6, T>& adj_qd,
                                   vec_t<3, T>& adj_r, const vec_t<3, T>& adj_ret) {
  const vec_t<3, T> w = spatial_top(qd);
  accumulate_adjoint(adj_qd, spatial_vector(cross(r, adj_ret), adj_ret));
  accumulate_adjoint(adj_r, cross(adj_ret, w));
}

}  // namespace wp

// warpd device runtime: reverse-mode adjoints of the transformation builtins
// (transform.h, Warp's "Transformations" group, the transform overloads of
// add, sub, mul and lerp, and transform_point / transform_vector on 4x4
// matrices). Conventions: adj_scalar.h; none of these takes the forward
// result.
//
// As the forward functions, the rotation is used as given (never
// renormalized), and each adjoint is the exact derivative of warpd's forward
// function, also for a non-unit rotation. Warp 1.19's choices kept here:
// - transform_set_translation / transform_set_rotation write into their
//   first argument and return nothing: adj_<name>(xform, value, adj_xform,
//   adj_value) adds the written part of adj_xform to adj_value and leaves
//   adj_xform as it is (Warp does not clear it);
// - transform_from_matrix / transform_decompose differentiate
//   quat_from_matrix through the branch it took (adj_quat.h);
// - transform_decompose differentiates each column's scale sqrt(sum m_ij^2)
//   with Warp's formula, which is 0/0 (NaN) for a zero column.
#pragma once

#include "warpd/native/adjoint/adj_quat.h"
#include "warpd/native/transform.h"
#include "warpd/native/tuple.h"

namespace wp {

template <typename T>
WP_FUNC void accumulate_adjoint(transform_t<T>& adj, const transform_t<T>& v) {
  accumulate_adjoint(adj.p, v.p);
  accumulate_adjoint(adj.q, v.q);
}

// --- Component-wise ----------------------------------------------------------------

template <typename T>
WP_FUNC void adj_add(const transform_t<T>&, const transform_t<T>&, transform_t<T>& adj_a, transform_t<T>& adj_b,
                     const transform_t<T>& adj_ret) {
  accumulate_adjoint(adj_a, adj_ret);
  accumulate_adjoint(adj_b, adj_ret);
}

template <typename T>
WP_FUNC void adj_sub(const transform_t<T>&, const transform_t<T>&, transform_t<T>& adj_a, transform_t<T>& adj_b,
                     const transform_t<T>& adj_ret) {
  accumulate_adjoint(adj_a, adj_ret);
  accumulate_adjoint(adj_b, neg(adj_ret));
}

template <typename T>
WP_FUNC void adj_mul(const transform_t<T>& a, T s, transform_t<T>& adj_a, T& adj_s, const transform_t<T>& adj_ret) {
  accumulate_adjoint(adj_a, mul(adj_ret, s));
  accumulate_adjoint(adj_s, add(dot(a.p, adj_ret.p), dot(a.q, adj_ret.q)));
}

template <typename T>
WP_FUNC void adj_mul(T s, const transform_t<T>& a, T& adj_s, transform_t<T>& adj_a, const transform_t<T>& adj_ret) {
  adj_mul(a, s, adj_a, adj_s, adj_ret);
}

// a (1 - t) + b t on the seven scalars.
template <typename T>
WP_FUNC void adj_lerp(const transform_t<T>& a, const transform_t<T>& b, T t, transform_t<T>& adj_a,
                      transform_t<T>& adj_b, T& adj_t, const transform_t<T>& adj_ret) {
  accumulate_adjoint(adj_a, mul(adj_ret, sub(cast<T>(1), t)));
  accumulate_adjoint(adj_b, mul(adj_ret, t));
  const T db = add(dot(b.p, adj_ret.p), dot(b.q, adj_ret.q));
  const T da = add(dot(a.p, adj_ret.p), dot(a.q, adj_ret.q));
  accumulate_adjoint(adj_t, sub(db, da));
}

// --- Components ----------------------------------------------------------------------

template <typename T>
WP_FUNC void adj_transform_get_translation(const transform_t<T>&, transform_t<T>& adj_t,
                                           const vec_t<3, T>& adj_ret) {
  accumulate_adjoint(adj_t.p, adj_ret);
}

template <typename T>
WP_FUNC void adj_transform_get_rotation(const transform_t<T>&, transform_t<T>& adj_t, const quat_t<T>& adj_ret) {
  accumulate_adjoint(adj_t.q, adj_ret);
}

template <typename T>
WP_FUNC void adj_transform_set_translation(const transform_t<T>&, const vec_t<3, T>&, const transform_t<T>& adj_t,
                                           vec_t<3, T>& adj_p) {
  accumulate_adjoint(adj_p, adj_t.p);
}

template <typename T>
WP_FUNC void adj_transform_set_rotation(const transform_t<T>&, const quat_t<T>&, const transform_t<T>& adj_t,
                                        quat_t<T>& adj_q) {
  accumulate_adjoint(adj_q, adj_t.q);
}

// --- Rigid-body algebra -----------------------------------------------------------------

// (quat_rotate(a.q, b.p) + a.p, a.q b.q).
template <typename T>
WP_FUNC void adj_transform_multiply(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a,
                                    transform_t<T>& adj_b, const transform_t<T>& adj_ret) {
  adj_quat_rotate(a.q, b.p, adj_a.q, adj_b.p, adj_ret.p);
  accumulate_adjoint(adj_a.p, adj_ret.p);
  adj_mul(a.q, b.q, adj_a.q, adj_b.q, adj_ret.q);
}

template <typename T>
WP_FUNC void adj_mul(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a, transform_t<T>& adj_b,
                     const transform_t<T>& adj_ret) {
  adj_transform_multiply(a, b, adj_a, adj_b, adj_ret);
}

// (-quat_rotate(q*, p), q*).
template <typename T>
WP_FUNC void adj_transform_inverse(const transform_t<T>& t, transform_t<T>& adj_t, const transform_t<T>& adj_ret) {
  const quat_t<T> qi = quat_inverse(t.q);
  quat_t<T> adj_qi = adj_ret.q;
  adj_quat_rotate(qi, t.p, adj_qi, adj_t.p, neg(adj_ret.p));
  adj_quat_inverse(t.q, adj_t.q, adj_qi);
}

template <typename T>
WP_FUNC void adj_transform_point(const transform_t<T>& t, const vec_t<3, T>& x, transform_t<T>& adj_t,
                                 vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
  accumulate_adjoint(adj_t.p, adj_ret);
  adj_quat_rotate(t.q, x, adj_t.q, adj_x, adj_ret);
}

template <typename T>
WP_FUNC void adj_transform_vector(const transform_t<T>& t, const vec_t<3, T>& x, transform_t<T>& adj_t,
                                  vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
  adj_quat_rotate(t.q, x, adj_t.q, adj_x, adj_ret);
}

// --- 4x4 matrices --------------------------------------------------------------------------

// M (x, 1) without the fourth row: adj_M[i][j] += g_i x_j, adj_M[i][3] += g_i.
template <typename T>
WP_FUNC void adj_transform_point(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, mat_t<4, 4, T>& adj_m,
                                 vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      accumulate_adjoint(adj_m.c[i][j], mul(adj_ret.c[i], x.c[j]));
      accumulate_adjoint(adj_x.c[j], mul(m.c[i][j], adj_ret.c[i]));
    }
    accumulate_adjoint(adj_m.c[i][3], adj_ret.c[i]);
  }
}

template <typename T>
WP_FUNC void adj_transform_vector(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, mat_t<4, 4, T>& adj_m,
                                  vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      accumulate_adjoint(adj_m.c[i][j], mul(adj_ret.c[i], x.c[j]));
      accumulate_adjoint(adj_x.c[j], mul(m.c[i][j], adj_ret.c[i]));
    }
}

// [R diag(scale) position; 0 0 0 1] with R = quat_to_matrix(rotation).
template <typename T>
WP_FUNC void adj_transform_compose(const vec_t<3, T>&, const quat_t<T>& rotation, const vec_t<3, T>& scale,
                                   vec_t<3, T>& adj_position, quat_t<T>& adj_rotation, vec_t<3, T>& adj_scale,
                                   const mat_t<4, 4, T>& adj_ret) {
  const mat_t<3, 3, T> r = quat_to_matrix(rotation);
  mat_t<3, 3, T> adj_r;
  for (int i = 0; i < 3; ++i) {
    accumulate_adjoint(adj_position.c[i], adj_ret.c[i][3]);
    for (int j = 0; j < 3; ++j) {
      accumulate_adjoint(adj_scale.c[j], mul(adj_ret.c[i][j], r.c[i][j]));
      adj_r.c[i][j] = mul(adj_ret.c[i][j], scale.c[j]);
    }
  }
  adj_quat_to_matrix(rotation, adj_rotation, adj_r);
}

template <typename T>
WP_FUNC void adj_transform_to_matrix(const transform_t<T>& t, transform_t<T>& adj_t, const mat_t<4, 4, T>& adj_ret) {
  const T one = cast<T>(1);
  const vec_t<3, T> scale{{one, one, one}};
  vec_t<3, T> adj_scale = adj_quat_internal::zero_vec3<T>();
  adj_transform_compose(t.p, t.q, scale, adj_t.p, adj_t.q, adj_scale, adj_ret);
}

// (last column, quat_from_matrix(m)).
template <typename T>
WP_FUNC void adj_transform_from_matrix(const mat_t<4, 4, T>& m, mat_t<4, 4, T>& adj_m,
                                       const transform_t<T>& adj_ret) {
  for (int i = 0; i < 3; ++i) accumulate_adjoint(adj_m.c[i][3], adj_ret.p.c[i]);
  adj_quat_from_matrix(m, adj_m, adj_ret.q);
}

// (position, rotation, scale): scale_j = |column j| of the top-left 3x3, the
// rotation is quat_from_matrix of the columns divided by their scales (a zero
// column as it is).
template <typename T>
WP_FUNC void adj_transform_decompose(const mat_t<4, 4, T>& m, mat_t<4, 4, T>& adj_m,
                                     const tuple_t<vec_t<3, T>, quat_t<T>, vec_t<3, T>>& adj_ret) {
  const vec_t<3, T>& adj_position = tuple_get<0>(adj_ret);
  const quat_t<T>& adj_rotation = tuple_get<1>(adj_ret);
  const vec_t<3, T>& adj_scale = tuple_get<2>(adj_ret);
  mat_t<3, 3, T> r;
  T s[3];
  for (int j = 0; j < 3; ++j) {
    s[j] = sqrt(add(add(mul(m.c[0][j], m.c[0][j]), mul(m.c[1][j], m.c[1][j])), mul(m.c[2][j], m.c[2][j])));
    const bool nonzero = ne(s[j], cast<T>(0));
    for (int i = 0; i < 3; ++i) r.c[i][j] = nonzero ? div(m.c[i][j], s[j]) : m.c[i][j];
  }
  mat_t<3, 3, T> adj_r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) adj_r.c[i][j] = cast<T>(0);
  adj_quat_from_matrix(r, adj_r, adj_rotation);
  for (int j = 0; j < 3; ++j) {
    accumulate_adjoint(adj_m.c[j][3], adj_position.c[j]);
    T adj_s = adj_scale.c[j];
    if (ne(s[j], cast<T>(0))) {
      // r_ij = m_ij / s: d/dm_ij = 1 / s, d/ds = -r_ij / s.
      for (int i = 0; i < 3; ++i) {
        accumulate_adjoint(adj_m.c[i][j], div(adj_r.c[i][j], s[j]));
        adj_s = sub(adj_s, div(mul(adj_r.c[i][j], r.c[i][j]), s[j]));
      }
    } else {
      for (int i = 0; i < 3; ++i) accumulate_adjoint(adj_m.c[i][j], adj_r.c[i][j]);
    }
    // s = sqrt(sum m_ij^2): Warp's adj_sqrt (0.5 / s) and the square's 2 m_ij.
    const T adj_sum = mul(mul(cast<T>(0.5), div(cast<T>(1), s[j])), adj_s);
    for (int i = 0; i < 3; ++i) accumulate_adjoint(adj_m.c[i][j], mul(mul(cast<T>(2), m.c[i][j]), adj_sum));
  }
}

}  // namespace wp

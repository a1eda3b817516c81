// warpd device runtime: rigid transformations transform_t<T> and Warp's
// "Transformations" builtins.
//
// Layout (ABI, docs/native_headers.md): vec_t<3, T> p; quat_t<T> q; i.e. seven
// T, translation first. A transform maps a point x to q x q* + p (rotate, then
// translate). Warp indexes a transform as seven scalars, t[0..2] = p and
// t[3..6] = q (x, y, z, w): transform_get / transform_set.
//
// Semantics follow Warp 1.19 (warp/native/spatial.h, warp/_src/math.py); the
// quaternion is used as given (never renormalized), as in Warp.
#pragma once

#include "warpd/native/mat.h"
#include "warpd/native/quat.h"
#include "warpd/native/vec.h"

namespace wp {

template <typename T>
struct transform_t {
  vec_t<3, T> p;
  quat_t<T> q;
};

typedef transform_t<half> transformh;
typedef transform_t<float32> transformf;
typedef transform_t<float64> transformd;

// --- Construction -------------------------------------------------------------

// Warp's transformation(p, q).
template <typename T>
WP_FUNC transform_t<T> transform_from_values(const vec_t<3, T>& p, const quat_t<T>& q) {
  return transform_t<T>{p, q};
}

// Warp's transformation(p): the rotation defaults to the identity.
template <typename T>
WP_FUNC transform_t<T> transform_from_values(const vec_t<3, T>& p) {
  return transform_t<T>{p, quat_identity<T>()};
}

// Warp's transformation(px, py, pz, qx, qy, qz, qw).
template <typename T>
WP_FUNC transform_t<T> transform_from_values(T px, T py, T pz, T qx, T qy, T qz, T qw) {
  return transform_t<T>{vec_t<3, T>{{px, py, pz}}, quat_t<T>{{qx, qy, qz, qw}}};
}

// Warp's transformation(s): all seven components equal to s (so s = 0 gives
// the zero transform, not the identity).
template <typename T>
WP_FUNC transform_t<T> transform_splat(T s) {
  return transform_t<T>{vec_t<3, T>{{s, s, s}}, quat_t<T>{{s, s, s, s}}};
}

template <typename T = float32>
WP_FUNC transform_t<T> transform_identity() {
  return transform_t<T>{vec_t<3, T>{{cast<T>(0), cast<T>(0), cast<T>(0)}}, quat_identity<T>()};
}

template <typename To, typename From>
struct caster<transform_t<To>, transform_t<From>> {
  WP_FUNC static transform_t<To> apply(const transform_t<From>& t) {
    return transform_t<To>{cast<vec_t<3, To>>(t.p), cast<quat_t<To>>(t.q)};
  }
};

// --- Components -----------------------------------------------------------------

template <typename T>
WP_FUNC vec_t<3, T> transform_get_translation(const transform_t<T>& t) {
  return t.p;
}

template <typename T>
WP_FUNC quat_t<T> transform_get_rotation(const transform_t<T>& t) {
  return t.q;
}

template <typename T>
WP_FUNC void transform_set_translation(transform_t<T>& t, const vec_t<3, T>& p) {
  t.p = p;
}

template <typename T>
WP_FUNC void transform_set_rotation(transform_t<T>& t, const quat_t<T>& q) {
  t.q = q;
}

// Scalar i of the seven (p.x, p.y, p.z, q.x, q.y, q.z, q.w). Codegen checks
// the index first; an index outside [0, 7) still cannot fault here: it reads
// 0 and writes nothing.
template <typename T>
WP_FUNC T transform_get(const transform_t<T>& t, int32 i) {
  if (i >= 0 && i < 3) return t.p.c[i];
  if (i >= 3 && i < 7) return t.q.c[i - 3];
  return cast<T>(0);
}

template <typename T>
WP_FUNC void transform_set(transform_t<T>& t, int32 i, T value) {
  if (i >= 0 && i < 3) {
    t.p.c[i] = value;
  } else if (i >= 3 && i < 7) {
    t.q.c[i - 3] = value;
  }
}

// A reference to scalar i of the seven, for stores (t[i] = x, t[i] += x);
// codegen checks the index first.
template <typename T>
WP_FUNC T& transform_ref(transform_t<T>& t, int32 i) {
  return i < 3 ? t.p.c[i] : t.q.c[i - 3];
}

template <typename T>
WP_FUNC int32 len(const transform_t<T>&) {
  return 7;
}

// --- Component-wise operators (on all seven scalars, as in Warp) ------------------

template <typename T>
WP_FUNC transform_t<T> add(const transform_t<T>& a, const transform_t<T>& b) {
  return transform_t<T>{add(a.p, b.p), add(a.q, b.q)};
}

template <typename T>
WP_FUNC transform_t<T> sub(const transform_t<T>& a, const transform_t<T>& b) {
  return transform_t<T>{sub(a.p, b.p), sub(a.q, b.q)};
}

template <typename T>
WP_FUNC transform_t<T> neg(const transform_t<T>& a) {
  return transform_t<T>{neg(a.p), neg(a.q)};
}

template <typename T>
WP_FUNC transform_t<T> pos(const transform_t<T>& a) {
  return a;
}

template <typename T>
WP_FUNC transform_t<T> mul(const transform_t<T>& a, T s) {
  return transform_t<T>{mul(a.p, s), mul(a.q, s)};
}

template <typename T>
WP_FUNC transform_t<T> mul(T s, const transform_t<T>& a) {
  return mul(a, s);
}

template <typename T>
WP_FUNC bool eq(const transform_t<T>& a, const transform_t<T>& b) {
  return eq(a.p, b.p) && eq(a.q, b.q);
}

template <typename T>
WP_FUNC bool ne(const transform_t<T>& a, const transform_t<T>& b) {
  return !eq(a, b);
}

// a*(1-t) + b*t on the seven scalars (Warp's lerp; the rotation is not
// renormalized).
template <typename T>
WP_FUNC transform_t<T> lerp(const transform_t<T>& a, const transform_t<T>& b, T t) {
  return add(mul(a, sub(cast<T>(1), t)), mul(b, t));
}

// --- Rigid-body algebra -----------------------------------------------------------

// Composition: applying transform_multiply(a, b) is applying b, then a.
template <typename T>
WP_FUNC transform_t<T> transform_multiply(const transform_t<T>& a, const transform_t<T>& b) {
  return transform_t<T>{add(quat_rotate(a.q, b.p), a.p), mul(a.q, b.q)};
}

// Warp's a * b on transforms is transform_multiply.
template <typename T>
WP_FUNC transform_t<T> mul(const transform_t<T>& a, const transform_t<T>& b) {
  return transform_multiply(a, b);
}

// (p, q)^-1 = (-(q* p q), q*): exact for a unit q.
template <typename T>
WP_FUNC transform_t<T> transform_inverse(const transform_t<T>& t) {
  quat_t<T> qi = quat_inverse(t.q);
  return transform_t<T>{neg(quat_rotate(qi, t.p)), qi};
}

template <typename T>
WP_FUNC vec_t<3, T> transform_point(const transform_t<T>& t, const vec_t<3, T>& x) {
  return add(t.p, quat_rotate(t.q, x));
}

// A direction: rotated, not translated.
template <typename T>
WP_FUNC vec_t<3, T> transform_vector(const transform_t<T>& t, const vec_t<3, T>& x) {
  return quat_rotate(t.q, x);
}

// --- 4x4 matrices (mat_t<4, 4, T>::c[row][col]; columns act on column vectors) ---

// Warp's transform_point(mat44, x): M (x, 1), the fourth row ignored (no
// perspective divide).
template <typename T>
WP_FUNC vec_t<3, T> transform_point(const mat_t<4, 4, T>& m, const vec_t<3, T>& x) {
  vec_t<3, T> r;
  for (int i = 0; i < 3; ++i)
    r.c[i] = add(add(add(mul(m.c[i][0], x.c[0]), mul(m.c[i][1], x.c[1])), mul(m.c[i][2], x.c[2])), m.c[i][3]);
  return r;
}

// Warp's transform_vector(mat44, x): M (x, 0), i.e. the top-left 3x3 times x.
template <typename T>
WP_FUNC vec_t<3, T> transform_vector(const mat_t<4, 4, T>& m, const vec_t<3, T>& x) {
  vec_t<3, T> r;
  for (int i = 0; i < 3; ++i) r.c[i] = add(add(mul(m.c[i][0], x.c[0]), mul(m.c[i][1], x.c[1])), mul(m.c[i][2], x.c[2]));
  return r;
}

// Translation * rotation * scale: [R diag(s) p; 0 0 0 1], i.e. column j of R
// scaled by s[j].
template <typename T>
WP_FUNC mat_t<4, 4, T> transform_compose(const vec_t<3, T>& position, const quat_t<T>& rotation,
                                         const vec_t<3, T>& scale) {
  mat_t<3, 3, T> r = quat_to_matrix(rotation);
  mat_t<4, 4, T> m;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) m.c[i][j] = mul(scale.c[j], r.c[i][j]);
    m.c[i][3] = position.c[i];
    m.c[3][i] = cast<T>(0);
  }
  m.c[3][3] = cast<T>(1);
  return m;
}

// [R p; 0 0 0 1] with R = quat_to_matrix(q).
template <typename T>
WP_FUNC mat_t<4, 4, T> transform_to_matrix(const transform_t<T>& t) {
  return transform_compose(t.p, t.q, vec_t<3, T>{{cast<T>(1), cast<T>(1), cast<T>(1)}});
}

// Translation from the last column, rotation from the top-left 3x3 (which
// must be a rotation: scale is not removed, see transform_decompose).
template <typename T>
WP_FUNC transform_t<T> transform_from_matrix(const mat_t<4, 4, T>& m) {
  return transform_t<T>{vec_t<3, T>{{m.c[0][3], m.c[1][3], m.c[2][3]}}, quat_from_matrix(m)};
}

// Inverse of transform_compose for positive scales: the scale is the length
// of each column of the top-left 3x3; a zero column keeps its (zero) entries.
// Warp's builtin returns a (position, rotation, scale) tuple (the form below);
// this one writes them to outputs.
template <typename T>
WP_FUNC void transform_decompose(const mat_t<4, 4, T>& m, vec_t<3, T>& position, quat_t<T>& rotation,
                                 vec_t<3, T>& scale) {
  mat_t<3, 3, T> r;
  for (int j = 0; j < 3; ++j) {
    T s = sqrt(add(add(mul(m.c[0][j], m.c[0][j]), mul(m.c[1][j], m.c[1][j])), mul(m.c[2][j], m.c[2][j])));
    bool nonzero = ne(s, cast<T>(0));
    for (int i = 0; i < 3; ++i) r.c[i][j] = nonzero ? div(m.c[i][j], s) : m.c[i][j];
    scale.c[j] = s;
    position.c[j] = m.c[j][3];
  }
  rotation = quat_from_matrix(r);
}

template <typename T>
WP_FUNC tuple_t<vec_t<3, T>, quat_t<T>, vec_t<3, T>> transform_decompose(const mat_t<4, 4, T>& m) {
  tuple_t<vec_t<3, T>, quat_t<T>, vec_t<3, T>> r;
  transform_decompose(m, tuple_get<0>(r), tuple_get<1>(r), tuple_get<2>(r));
  return r;
}

}  // namespace wp

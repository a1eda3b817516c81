// warpd device runtime: quaternions quat_t<T> and Warp's "Quaternion Math"
// builtins.
//
// Layout (ABI, docs/native_headers.md): T c[4] = x, y, z, w, i.e. the
// imaginary part first and the real part last, as in Warp. Generated code
// indexes components as q.c[i] and builds values with quat_from_values or
// aggregate initialization (quat_t<T>{} is the zero quaternion).
//
// The semantics follow Warp 1.19 (warp/native/quat.h and warp/_src/math.py):
// the same formulas in the same order of operations, so results match Warp's
// bit for bit on the CPU, also for non-unit inputs and in the sign of the
// quaternions returned (checked against warp-lang 1.19 on random inputs;
// quat_test.cc pins the conventions). Where Warp is singular (normalizing a
// zero quaternion, the axis of a zero rotation) the result is Warp's defined
// fallback, never a trap. Angles are in radians.
//
// Element arithmetic goes through wp::add/sub/mul/div and comparisons through
// wp::lt/gt/ge/ne so that half (computed in float32) works like float and
// double. Only floating-point T is meaningful (Warp's Float).
#pragma once

#include "warpd/native/mat.h"
#include "warpd/native/vec.h"

namespace wp {

template <typename T>
struct quat_t {
  T c[4];  // x, y, z, w
};

typedef quat_t<half> quath;
typedef quat_t<float32> quatf;
typedef quat_t<float64> quatd;

// --- Construction -------------------------------------------------------------

template <typename T>
WP_FUNC quat_t<T> quat_from_values(T x, T y, T z, T w) {
  return quat_t<T>{{x, y, z, w}};
}

// Warp's quaternion(ijk, real): imaginary part from a vector.
template <typename T>
WP_FUNC quat_t<T> quat_from_values(const vec_t<3, T>& ijk, T real) {
  return quat_t<T>{{ijk.c[0], ijk.c[1], ijk.c[2], real}};
}

template <typename T = float32>
WP_FUNC quat_t<T> quat_identity() {
  return quat_t<T>{{cast<T>(0), cast<T>(0), cast<T>(0), cast<T>(1)}};
}

// Warp's quaternion(quat, dtype=...): component-wise conversion.
template <typename To, typename From>
struct caster<quat_t<To>, quat_t<From>> {
  WP_FUNC static quat_t<To> apply(const quat_t<From>& q) {
    return quat_t<To>{{cast<To>(q.c[0]), cast<To>(q.c[1]), cast<To>(q.c[2]), cast<To>(q.c[3])}};
  }
};

// --- Component-wise operators ------------------------------------------------

template <typename T>
WP_FUNC quat_t<T> add(const quat_t<T>& a, const quat_t<T>& b) {
  quat_t<T> r;
  for (int i = 0; i < 4; ++i) r.c[i] = add(a.c[i], b.c[i]);
  return r;
}

template <typename T>
WP_FUNC quat_t<T> sub(const quat_t<T>& a, const quat_t<T>& b) {
  quat_t<T> r;
  for (int i = 0; i < 4; ++i) r.c[i] = sub(a.c[i], b.c[i]);
  return r;
}

template <typename T>
WP_FUNC quat_t<T> neg(const quat_t<T>& a) {
  quat_t<T> r;
  for (int i = 0; i < 4; ++i) r.c[i] = neg(a.c[i]);
  return r;
}

// Unary plus (Warp's pos): the value itself.
template <typename T>
WP_FUNC quat_t<T> pos(const quat_t<T>& a) {
  return a;
}

template <typename T>
WP_FUNC quat_t<T> mul(const quat_t<T>& a, T s) {
  quat_t<T> r;
  for (int i = 0; i < 4; ++i) r.c[i] = mul(a.c[i], s);
  return r;
}

template <typename T>
WP_FUNC quat_t<T> mul(T s, const quat_t<T>& a) {
  return mul(a, s);
}

template <typename T>
WP_FUNC quat_t<T> div(const quat_t<T>& a, T s) {
  quat_t<T> r;
  for (int i = 0; i < 4; ++i) r.c[i] = div(a.c[i], s);
  return r;
}

template <typename T>
WP_FUNC quat_t<T> div_approx(const quat_t<T>& a, T s) {
  quat_t<T> r;
  for (int i = 0; i < 4; ++i) r.c[i] = div_approx(a.c[i], s);
  return r;
}

template <typename T>
WP_FUNC quat_t<T> div_approx(T s, const quat_t<T>& a) {
  quat_t<T> r;
  for (int i = 0; i < 4; ++i) r.c[i] = div_approx(s, a.c[i]);
  return r;
}

// Warp's div(scalar, quat) divides the scalar by each component.
template <typename T>
WP_FUNC quat_t<T> div(T s, const quat_t<T>& a) {
  quat_t<T> r;
  for (int i = 0; i < 4; ++i) r.c[i] = div(s, a.c[i]);
  return r;
}

template <typename T>
WP_FUNC bool eq(const quat_t<T>& a, const quat_t<T>& b) {
  for (int i = 0; i < 4; ++i)
    if (!eq(a.c[i], b.c[i])) return false;
  return true;
}

template <typename T>
WP_FUNC bool ne(const quat_t<T>& a, const quat_t<T>& b) {
  return !eq(a, b);
}

// Hamilton product with Warp's (x, y, z, w) storage: for a = (u, s) and
// b = (v, t), a*b = (s v + t u + u x v, s t - u . v). quat_rotate(a*b, x) ==
// quat_rotate(a, quat_rotate(b, x)): b is applied first.
template <typename T>
WP_FUNC quat_t<T> mul(const quat_t<T>& a, const quat_t<T>& b) {
  const T ax = a.c[0], ay = a.c[1], az = a.c[2], aw = a.c[3];
  const T bx = b.c[0], by = b.c[1], bz = b.c[2], bw = b.c[3];
  // Summed left to right in Warp's order, so float results match Warp's.
  return quat_t<T>{{sub(add(add(mul(aw, bx), mul(bw, ax)), mul(ay, bz)), mul(by, az)),
                    sub(add(add(mul(aw, by), mul(bw, ay)), mul(az, bx)), mul(bz, ax)),
                    sub(add(add(mul(aw, bz), mul(bw, az)), mul(ax, by)), mul(bx, ay)),
                    sub(sub(sub(mul(aw, bw), mul(ax, bx)), mul(ay, by)), mul(az, bz))}};
}

template <typename T>
WP_FUNC T dot(const quat_t<T>& a, const quat_t<T>& b) {
  return add(add(add(mul(a.c[0], b.c[0]), mul(a.c[1], b.c[1])), mul(a.c[2], b.c[2])), mul(a.c[3], b.c[3]));
}

template <typename T>
WP_FUNC T length_sq(const quat_t<T>& a) {
  return dot(a, a);
}

template <typename T>
WP_FUNC T length(const quat_t<T>& a) {
  return sqrt(dot(a, a));
}

// A zero-length (or NaN) quaternion normalizes to the identity, as in Warp,
// so a degenerate rotation stays a rotation instead of becoming NaN.
template <typename T>
WP_FUNC quat_t<T> normalize(const quat_t<T>& a) {
  T l = length(a);
  if (gt(l, cast<T>(0))) return mul(a, div(cast<T>(1), l));
  return quat_identity<T>();
}

// Component-wise linear interpolation a*(1-t) + b*t (Warp's lerp; no
// renormalization).
template <typename T>
WP_FUNC quat_t<T> lerp(const quat_t<T>& a, const quat_t<T>& b, T t) {
  return add(mul(a, sub(cast<T>(1), t)), mul(b, t));
}

template <typename T>
WP_FUNC int32 len(const quat_t<T>&) {
  return 4;
}

// isnan / isinf: any component; isfinite: every component (as for vectors).
template <typename T>
WP_FUNC bool isnan(const quat_t<T>& a) {
  return isnan(a.c[0]) || isnan(a.c[1]) || isnan(a.c[2]) || isnan(a.c[3]);
}

template <typename T>
WP_FUNC bool isinf(const quat_t<T>& a) {
  return isinf(a.c[0]) || isinf(a.c[1]) || isinf(a.c[2]) || isinf(a.c[3]);
}

template <typename T>
WP_FUNC bool isfinite(const quat_t<T>& a) {
  return isfinite(a.c[0]) && isfinite(a.c[1]) && isfinite(a.c[2]) && isfinite(a.c[3]);
}

// --- Rotations ------------------------------------------------------------------

// The conjugate; the inverse rotation for a unit quaternion (Warp does not
// divide by the squared length).
template <typename T>
WP_FUNC quat_t<T> quat_inverse(const quat_t<T>& q) {
  return quat_t<T>{{neg(q.c[0]), neg(q.c[1]), neg(q.c[2]), q.c[3]}};
}

// Rotation of `angle` about `axis` (right-handed). The axis is not
// normalized, as in Warp: a non-unit axis gives a non-unit quaternion.
template <typename T>
WP_FUNC quat_t<T> quat_from_axis_angle(const vec_t<3, T>& axis, T angle) {
  T h = mul(angle, cast<T>(0.5));
  T s = sin(h);
  return quat_t<T>{{mul(axis.c[0], s), mul(axis.c[1], s), mul(axis.c[2], s), cos(h)}};
}

// Inverse of quat_from_axis_angle on the short arc: angle in [0, pi] (for a
// unit q), and the axis flips when w < 0 so q and -q give the same rotation.
// The identity gives axis (0, 0, 0) and angle 0 (vec normalize's fallback).
template <typename T>
WP_FUNC void quat_to_axis_angle(const quat_t<T>& q, vec_t<3, T>& axis, T& angle) {
  vec_t<3, T> v{{q.c[0], q.c[1], q.c[2]}};
  axis = lt(q.c[3], cast<T>(0)) ? neg(normalize(v)) : normalize(v);
  angle = mul(cast<T>(2), atan2(length(v), abs(q.c[3])));
}

// wp.expect_near(actual, expected, tolerance) on quaternions: the largest
// absolute difference of the components (print.h has the test).
template <typename T>
WP_FUNC T expect_near_diff(const quat_t<T>& actual, const quat_t<T>& expected) {
  T d = abs(sub(actual.c[0], expected.c[0]));
  for (int i = 1; i < 4; ++i) {
    const T di = abs(sub(actual.c[i], expected.c[i]));
    if (gt(di, d)) d = di;
  }
  return d;
}

// Warp's form without output arguments: (axis, angle).
template <typename T>
WP_FUNC tuple_t<vec_t<3, T>, T> quat_to_axis_angle(const quat_t<T>& q) {
  tuple_t<vec_t<3, T>, T> r;
  quat_to_axis_angle(q, tuple_get<0>(r), tuple_get<1>(r));
  return r;
}

// Roll about x, pitch about y, yaw about z, composed as
// qz(yaw) * qy(pitch) * qx(roll): roll is applied first (Warp's formula).
template <typename T>
WP_FUNC quat_t<T> quat_rpy(T roll, T pitch, T yaw) {
  const T h = cast<T>(0.5);
  T cy = cos(mul(yaw, h)), sy = sin(mul(yaw, h));
  T cr = cos(mul(roll, h)), sr = sin(mul(roll, h));
  T cp = cos(mul(pitch, h)), sp = sin(mul(pitch, h));
  T w = add(mul(mul(cy, cr), cp), mul(mul(sy, sr), sp));
  T x = sub(mul(mul(cy, sr), cp), mul(mul(sy, cr), sp));
  T y = add(mul(mul(cy, cr), sp), mul(mul(sy, sr), cp));
  T z = sub(mul(mul(sy, cr), cp), mul(mul(cy, sr), sp));
  return quat_t<T>{{x, y, z, w}};
}

// v' = v (2w^2 - 1) + 2 u (u . v) + 2 w (u x v) with u = (x, y, z): exactly
// q v q* for a unit q. This is Warp's form, which also fixes what a non-unit
// q does (it is not the normalized rotation).
template <typename T>
WP_FUNC vec_t<3, T> quat_rotate(const quat_t<T>& q, const vec_t<3, T>& v) {
  const T two = cast<T>(2);
  vec_t<3, T> u{{q.c[0], q.c[1], q.c[2]}};
  T c = sub(mul(mul(two, q.c[3]), q.c[3]), cast<T>(1));
  T d = mul(two, dot(u, v));
  T e = mul(q.c[3], two);
  vec_t<3, T> uxv = cross(u, v);
  vec_t<3, T> r;
  for (int i = 0; i < 3; ++i) r.c[i] = add(add(mul(v.c[i], c), mul(u.c[i], d)), mul(uxv.c[i], e));
  return r;
}

// Rotation by the conjugate: as quat_rotate with the cross term negated.
template <typename T>
WP_FUNC vec_t<3, T> quat_rotate_inv(const quat_t<T>& q, const vec_t<3, T>& v) {
  const T two = cast<T>(2);
  vec_t<3, T> u{{q.c[0], q.c[1], q.c[2]}};
  T c = sub(mul(mul(two, q.c[3]), q.c[3]), cast<T>(1));
  T d = mul(two, dot(u, v));
  T e = mul(q.c[3], two);
  vec_t<3, T> uxv = cross(u, v);
  vec_t<3, T> r;
  for (int i = 0; i < 3; ++i) r.c[i] = sub(add(mul(v.c[i], c), mul(u.c[i], d)), mul(uxv.c[i], e));
  return r;
}

// Spherical interpolation from a (t = 0) to b (t = 1) at constant angular
// speed along the shorter arc: a * axis_angle(axis, t * angle) where (axis,
// angle) is the relative rotation a^-1 b (Warp's construction; the shorter
// arc comes from quat_to_axis_angle's |w|).
template <typename T>
WP_FUNC quat_t<T> quat_slerp(const quat_t<T>& a, const quat_t<T>& b, T t) {
  vec_t<3, T> axis;
  T angle;
  quat_to_axis_angle(mul(quat_inverse(a), b), axis, angle);
  return mul(a, quat_from_axis_angle(axis, mul(t, angle)));
}

// --- Matrices (mat_t<R, C, T>::c[row][col], row-major) --------------------------

// Column j is quat_rotate(q, e_j), so mul(quat_to_matrix(q), v) equals
// quat_rotate(q, v) also for non-unit q (as in Warp).
template <typename T>
WP_FUNC mat_t<3, 3, T> quat_to_matrix(const quat_t<T>& q) {
  mat_t<3, 3, T> m;
  for (int j = 0; j < 3; ++j) {
    vec_t<3, T> e{{cast<T>(0), cast<T>(0), cast<T>(0)}};
    e.c[j] = cast<T>(1);
    vec_t<3, T> col = quat_rotate(q, e);
    for (int i = 0; i < 3; ++i) m.c[i][j] = col.c[i];
  }
  return m;
}

// Rotation matrix (top-left 3x3 of m) to unit quaternion. Warp's branches,
// which also fix the sign of the result: w >= 0 when the trace is >= 0, else
// the component of the largest diagonal entry is positive. Choosing the branch
// by the largest entry keeps the square root away from zero, so the result
// stays accurate near 180 degrees. A matrix that is not a rotation gives an
// unspecified quaternion (NaN input gives the identity); nothing traps.
template <int R, int C, typename T>
WP_FUNC quat_t<T> quat_from_matrix(const mat_t<R, C, T>& m) {
  static_assert((R == 3 && C == 3) || (R == 4 && C == 4), "quat_from_matrix takes a 3x3 or 4x4 matrix");
  const T one = cast<T>(1), half_ = cast<T>(0.5);
  const T m00 = m.c[0][0], m01 = m.c[0][1], m02 = m.c[0][2];
  const T m10 = m.c[1][0], m11 = m.c[1][1], m12 = m.c[1][2];
  const T m20 = m.c[2][0], m21 = m.c[2][1], m22 = m.c[2][2];
  T tr = add(add(m00, m11), m22);
  T x, y, z, w, h;
  if (ge(tr, cast<T>(0))) {
    h = sqrt(add(tr, one));
    w = mul(half_, h);
    h = div(half_, h);
    x = mul(sub(m21, m12), h);
    y = mul(sub(m02, m20), h);
    z = mul(sub(m10, m01), h);
  } else {
    int k = 0;
    if (gt(m11, m00)) k = 1;
    if (gt(m22, k == 0 ? m00 : m11)) k = 2;
    if (k == 0) {
      h = sqrt(add(sub(m00, add(m11, m22)), one));
      x = mul(half_, h);
      h = div(half_, h);
      y = mul(add(m01, m10), h);
      z = mul(add(m20, m02), h);
      w = mul(sub(m21, m12), h);
    } else if (k == 1) {
      h = sqrt(add(sub(m11, add(m22, m00)), one));
      y = mul(half_, h);
      h = div(half_, h);
      z = mul(add(m12, m21), h);
      x = mul(add(m01, m10), h);
      w = mul(sub(m02, m20), h);
    } else {
      h = sqrt(add(sub(m22, add(m00, m11)), one));
      z = mul(half_, h);
      h = div(half_, h);
      x = mul(add(m20, m02), h);
      y = mul(add(m12, m21), h);
      w = mul(sub(m10, m01), h);
    }
  }
  return normalize(quat_t<T>{{x, y, z, w}});
}

// --- Euler angles and twist (Warp's warp/_src/math.py functions) ----------------

namespace quat_internal {

// Component idx of e with Warp's vector indexing: a negative index counts
// from the end. An index outside [-3, 3) reads 0 instead of out of bounds.
template <typename T>
WP_FUNC T vec3_at(const vec_t<3, T>& e, int32 idx) {
  if (idx < 0) idx = add(idx, 3);
  if (idx < 0 || idx > 2) return cast<T>(0);
  return e.c[idx];
}

// Elementary rotation of angle `a` about axis 0 (x), 1 (y) or anything else
// (z), mirroring Warp's if/elif/else on the axis index.
template <typename T>
WP_FUNC quat_t<T> axis_quat(int32 axis, T a) {
  T h = mul(cast<T>(0.5), a);
  T s = sin(h), c = cos(h), z = cast<T>(0);
  if (axis == 0) return quat_t<T>{{s, z, z, c}};
  if (axis == 1) return quat_t<T>{{z, s, z, c}};
  return quat_t<T>{{z, z, s, c}};
}

// Value for a 1-based axis index: v2 for 2, v3 for 3, v1 for anything else
// (Warp's fall-through default).
template <typename T>
WP_FUNC T pick(int32 axis1, T v1, T v2, T v3) {
  return axis1 == 2 ? v2 : (axis1 == 3 ? v3 : v1);
}

}  // namespace quat_internal

// Extrinsic rotations about the fixed axes i, then j, then k (0 = x, 1 = y,
// 2 = z), each by the angle stored at that axis' slot of e (e[0] is the angle
// about x, ...): q = q_k(e[k]) * q_j(e[j]) * q_i(e[i]).
template <typename T>
WP_FUNC quat_t<T> quat_from_euler(const vec_t<3, T>& e, int32 i, int32 j, int32 k) {
  using namespace quat_internal;
  quat_t<T> qi = axis_quat(i, vec3_at(e, i));
  quat_t<T> qj = axis_quat(j, vec3_at(e, j));
  quat_t<T> qk = axis_quat(k, vec3_at(e, k));
  return mul(qk, mul(qj, qi));
}

// Euler angles of q for the axis sequence (i, j, k), Warp's implementation of
// the direct method of Bernardes and Viollet (2022). The result is indexed by
// axis like quat_from_euler's input, so for Tait-Bryan sequences (i, j, k
// distinct) quat_from_euler(quat_to_euler(q, i, j, k), i, j, k) == +-q. For
// proper sequences (i == k) the third angle lands in the slot of the unused
// axis, as in Warp. At gimbal lock (middle angle 0 or pi within 1e-6) the
// first angle is 0 and the third carries the whole rotation.
template <typename T>
WP_FUNC vec_t<3, T> quat_to_euler(const quat_t<T>& q, int32 i, int32 j, int32 k) {
  using namespace quat_internal;
  const T q0 = q.c[3], q1 = q.c[0], q2 = q.c[1], q3 = q.c[2];  // scalar first
  const T pi = cast<T>(3.14159265358979323846), eps = cast<T>(1e-6);
  // 1-based indices as in the derivation; wrapping arithmetic because any
  // int32 may come in.
  i = add(i, 1);
  j = add(j, 1);
  k = add(k, 1);
  bool proper = i == k;
  if (proper) k = sub(sub(6, i), j);  // the remaining axis: i + j + k == 6
  // Levi-Civita symbol of (i, j, k): +1 for an even permutation, -1 for odd.
  T eps_ijk = div(cast<T>(mul(mul(sub(i, j), sub(j, k)), sub(k, i))), cast<T>(2));
  T qi = pick(i, q1, q2, q3), qj = pick(j, q1, q2, q3), qk = pick(k, q1, q2, q3);
  T a = q0, b = qi, c = qj, d = mul(qk, eps_ijk);
  if (!proper) {  // rotate the quaternion so the sequence looks proper
    a = sub(q0, qj);
    b = add(qi, mul(qk, eps_ijk));
    c = add(qj, q0);
    d = sub(mul(qk, eps_ijk), qi);
  }
  T ab = add(mul(a, a), mul(b, b));
  T n = add(add(ab, mul(c, c)), mul(d, d));  // Warp's order: acos is ill-conditioned here
  T t2 = acos(sub(div(mul(cast<T>(2), ab), n), cast<T>(1)));
  T tp = atan2(b, a), tm = atan2(d, c);
  T t1 = cast<T>(0), t3;
  if (lt(abs(t2), eps)) {
    t3 = mul(cast<T>(2), tp);
  } else if (lt(abs(sub(t2, pi)), eps)) {
    t3 = mul(cast<T>(2), tm);
  } else {
    t1 = sub(tp, tm);
    t3 = add(tp, tm);
  }
  if (!proper) {
    t2 = sub(t2, mul(pi, cast<T>(0.5)));
    t3 = mul(t3, eps_ijk);
  }
  // Place (t1, t2, t3) by axis, in Warp's order of assignments.
  T ex = t1, ey = t2, ez = t3;
  if (i == 2) {
    ex = t2;
    ey = t1;
  } else if (i == 3) {
    ex = t3;
    ez = t1;
  }
  if (j == 1) {
    ex = t2;
  } else if (j == 2) {
    ey = t2;
  } else {
    ez = t2;
  }
  if (k == 1) {
    ex = t3;
  } else if (k == 2) {
    ey = t3;
  } else {
    ez = t3;
  }
  return vec_t<3, T>{{ex, ey, ez}};
}

// Roll, pitch, yaw of q: the inverse of quat_rpy for pitch in [-pi/2, pi/2]
// (roll and yaw in (-pi, pi]). The pitch sine is clamped so rounding cannot
// push asin out of its domain.
template <typename T>
WP_FUNC vec_t<3, T> quat_to_rpy(const quat_t<T>& q) {
  const T x = q.c[0], y = q.c[1], z = q.c[2], w = q.c[3];
  const T one = cast<T>(1), two = cast<T>(2);
  T roll = atan2(mul(two, add(mul(w, x), mul(y, z))), sub(one, mul(two, add(mul(x, x), mul(y, y)))));
  T sp = clamp(mul(two, sub(mul(w, y), mul(z, x))), neg(one), one);
  T pitch = asin(sp);
  T yaw = atan2(mul(two, add(mul(w, z), mul(x, y))), sub(one, mul(two, add(mul(y, y), mul(z, z)))));
  return vec_t<3, T>{{roll, pitch, yaw}};
}

// Twist part of a swing-twist decomposition q = swing * twist about `axis`
// (expected unit length): the imaginary part projected on the axis, then
// normalized. A q with no rotation about the axis and w == 0 gives the
// identity (normalize's fallback).
template <typename T>
WP_FUNC quat_t<T> quat_twist(const vec_t<3, T>& axis, const quat_t<T>& q) {
  vec_t<3, T> u{{q.c[0], q.c[1], q.c[2]}};
  vec_t<3, T> a = mul(axis, dot(u, axis));
  return normalize(quat_t<T>{{a.c[0], a.c[1], a.c[2], q.c[3]}});
}

// Unsigned twist angle 2 atan2(|axis . u|, w): in [0, pi] when w >= 0, up to
// 2 pi for the other branch of q (Warp does not canonicalize).
template <typename T>
WP_FUNC T quat_twist_angle(const vec_t<3, T>& axis, const quat_t<T>& q) {
  vec_t<3, T> u{{q.c[0], q.c[1], q.c[2]}};
  return mul(cast<T>(2), atan2(abs(dot(axis, u)), q.c[3]));
}

// Signed twist angle 2 atan2(axis . u, w), in [-2 pi, 2 pi].
template <typename T>
WP_FUNC T quat_twist_angle_signed(const vec_t<3, T>& axis, const quat_t<T>& q) {
  vec_t<3, T> u{{q.c[0], q.c[1], q.c[2]}};
  return mul(cast<T>(2), atan2(dot(axis, u), q.c[3]));
}

}  // namespace wp

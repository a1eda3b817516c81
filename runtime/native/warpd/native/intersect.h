// warpd device runtime: intersection helpers of Warp's Geometry group that
// need no object: intersect_tri_tri and closest_point_edge_edge.
//
// intersect_tri_tri(v0, v1, v2, u0, u1, u2) -> int32: 1 when the two
// triangles (closed) share a point, by Moeller's interval test ("A Fast
// Triangle-Triangle Intersection Test", 1997): each triangle's vertices are
// classified against the other's plane (signed distances below 1e-6 count
// as on the plane, as Warp does); triangles that cross both planes meet iff
// their intervals on the planes' common line overlap; coplanar triangles
// are tested in the coordinate plane where they are largest (an edge pair
// crossing, or one triangle's vertex inside the other). Computed in the
// precision of the arguments (vec3f or vec3d).
//
// closest_point_edge_edge(p1, q1, p2, q2, epsilon) -> vec3f (s, t, d): the
// closest points p1 + s (q1 - p1) and p2 + t (q2 - p2) of two segments
// (s, t in [0, 1]) and their distance; an edge whose squared length is <=
// epsilon counts as a point (its weight 0). Parallel edges take s = 0 (then
// t, and s again, clamped), as in Ericson's Real-Time Collision Detection
// (section 5.1.9), which Warp follows.
#pragma once

#include "warpd/native/core.h"
#include "warpd/native/scalar.h"
#include "warpd/native/vec.h"

namespace wp {

template <typename T>
WP_FUNC T tri_abs(T x) {
  return x < T(0) ? -x : x;
}

// The interval [lo, hi] where the line through the plane crossing of a
// triangle meets it: p* are the vertices' projections on the line, d* their
// signed distances to the other plane. False when the triangle is coplanar
// with the other plane (every distance 0).
template <typename T>
WP_FUNC bool tri_interval(T p0, T p1, T p2, T d0, T d1, T d2, T& lo, T& hi) {
  // The lone vertex (on its own side of the plane) is `a`; b and c are the others.
  T pa, pb, pc, da, db, dc;
  if (d0 * d1 > T(0)) {  // 0 and 1 on one side: 2 alone
    pa = p2, pb = p0, pc = p1, da = d2, db = d0, dc = d1;
  } else if (d0 * d2 > T(0)) {  // 1 alone
    pa = p1, pb = p0, pc = p2, da = d1, db = d0, dc = d2;
  } else if (d1 * d2 > T(0) || d0 != T(0)) {  // 0 alone (or the only vertex off the plane)
    pa = p0, pb = p1, pc = p2, da = d0, db = d1, dc = d2;
  } else if (d1 != T(0)) {
    pa = p1, pb = p0, pc = p2, da = d1, db = d0, dc = d2;
  } else if (d2 != T(0)) {
    pa = p2, pb = p0, pc = p1, da = d2, db = d0, dc = d1;
  } else {
    return false;  // coplanar
  }
  // Where the edges a-b and a-c cross the plane.
  const T x = pa + (pb - pa) * da / (da - db);
  const T y = pa + (pc - pa) * da / (da - dc);
  lo = x < y ? x : y;
  hi = x < y ? y : x;
  return true;
}

// Whether 2-D segments (a, b) and (c, d) share a point (closed).
template <typename T>
WP_FUNC bool tri_segments_meet_2d(const T* a, const T* b, const T* c, const T* d) {
  auto orient = [](const T* p, const T* q, const T* r) {
    return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]);
  };
  auto within = [](const T* p, const T* q, const T* r) {  // r on segment pq, given collinear
    return (r[0] >= (p[0] < q[0] ? p[0] : q[0])) && (r[0] <= (p[0] < q[0] ? q[0] : p[0])) &&
           (r[1] >= (p[1] < q[1] ? p[1] : q[1])) && (r[1] <= (p[1] < q[1] ? q[1] : p[1]));
  };
  const T o1 = orient(a, b, c), o2 = orient(a, b, d), o3 = orient(c, d, a), o4 = orient(c, d, b);
  if (((o1 > T(0) && o2 < T(0)) || (o1 < T(0) && o2 > T(0))) && ((o3 > T(0) && o4 < T(0)) || (o3 < T(0) && o4 > T(0))))
    return true;
  return (o1 == T(0) && within(a, b, c)) || (o2 == T(0) && within(a, b, d)) || (o3 == T(0) && within(c, d, a)) ||
         (o4 == T(0) && within(c, d, b));
}

// Whether 2-D point p lies in triangle (a, b, c) (closed; either winding).
template <typename T>
WP_FUNC bool tri_point_inside_2d(const T* p, const T* a, const T* b, const T* c) {
  const T e0 = (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0]);
  const T e1 = (c[0] - b[0]) * (p[1] - b[1]) - (c[1] - b[1]) * (p[0] - b[0]);
  const T e2 = (a[0] - c[0]) * (p[1] - c[1]) - (a[1] - c[1]) * (p[0] - c[0]);
  return (e0 >= T(0) && e1 >= T(0) && e2 >= T(0)) || (e0 <= T(0) && e1 <= T(0) && e2 <= T(0));
}

// Coplanar triangles with normal n: tested in the coordinate plane that
// drops n's largest component.
template <typename T>
WP_FUNC int32 tri_tri_coplanar(const vec_t<3, T>& n, const vec_t<3, T>* v, const vec_t<3, T>* u) {
  const T ax = tri_abs(n.c[0]), ay = tri_abs(n.c[1]), az = tri_abs(n.c[2]);
  const int32 drop = ax > ay ? (ax > az ? 0 : 2) : (ay > az ? 1 : 2);
  const int32 i0 = drop == 0 ? 1 : 0, i1 = drop == 2 ? 1 : 2;
  T a[3][2], b[3][2];
  for (int32 k = 0; k < 3; ++k) {
    a[k][0] = v[k].c[i0];
    a[k][1] = v[k].c[i1];
    b[k][0] = u[k].c[i0];
    b[k][1] = u[k].c[i1];
  }
  for (int32 i = 0; i < 3; ++i)
    for (int32 j = 0; j < 3; ++j)
      if (tri_segments_meet_2d<T>(a[i], a[(i + 1) % 3], b[j], b[(j + 1) % 3])) return 1;
  if (tri_point_inside_2d<T>(a[0], b[0], b[1], b[2]) || tri_point_inside_2d<T>(b[0], a[0], a[1], a[2])) return 1;
  return 0;
}

// The signed distances (scaled by |n|) of `pts` to the plane of triangle
// `tri` (below 1e-6: on it, as Warp counts them); returns its normal n.
template <typename T>
WP_FUNC vec_t<3, T> tri_plane_distances(const vec_t<3, T>* tri, const vec_t<3, T>* pts, T* d) {
  const vec_t<3, T> n = cross(sub(tri[1], tri[0]), sub(tri[2], tri[0]));
  const T off = -dot(n, tri[0]);
  for (int32 k = 0; k < 3; ++k) {
    d[k] = dot(n, pts[k]) + off;
    if (tri_abs(d[k]) < T(1.0e-6)) d[k] = T(0);
  }
  return n;
}

template <typename T>
WP_FUNC int32 tri_tri_intersect(const vec_t<3, T>& v0, const vec_t<3, T>& v1, const vec_t<3, T>& v2,
                                const vec_t<3, T>& u0, const vec_t<3, T>& u1, const vec_t<3, T>& u2) {
  const vec_t<3, T> v[3] = {v0, v1, v2}, u[3] = {u0, u1, u2};
  T dv[3], du[3];
  const vec_t<3, T> n2 = tri_plane_distances<T>(u, v, dv);  // v's vertices against u's plane
  if (dv[0] * dv[1] > T(0) && dv[0] * dv[2] > T(0)) return 0;  // v entirely on one side
  const vec_t<3, T> n1 = tri_plane_distances<T>(v, u, du);  // u's vertices against v's plane
  if (du[0] * du[1] > T(0) && du[0] * du[2] > T(0)) return 0;
  // The planes' common line, projected on its largest axis.
  const vec_t<3, T> line = cross(n1, n2);
  const T lx = tri_abs(line.c[0]), ly = tri_abs(line.c[1]), lz = tri_abs(line.c[2]);
  const int32 axis = lx >= ly ? (lx >= lz ? 0 : 2) : (ly >= lz ? 1 : 2);
  T v_lo, v_hi, u_lo, u_hi;
  if (!tri_interval<T>(v0.c[axis], v1.c[axis], v2.c[axis], dv[0], dv[1], dv[2], v_lo, v_hi))
    return tri_tri_coplanar<T>(n1, v, u);
  if (!tri_interval<T>(u0.c[axis], u1.c[axis], u2.c[axis], du[0], du[1], du[2], u_lo, u_hi))
    return tri_tri_coplanar<T>(n1, v, u);
  return (v_hi < u_lo || u_hi < v_lo) ? 0 : 1;
}

WP_FUNC int32 intersect_tri_tri(const vec3f& v0, const vec3f& v1, const vec3f& v2, const vec3f& u0, const vec3f& u1,
                                const vec3f& u2) {
  return tri_tri_intersect<float32>(v0, v1, v2, u0, u1, u2);
}

WP_FUNC int32 intersect_tri_tri(const vec3d& v0, const vec3d& v1, const vec3d& v2, const vec3d& u0, const vec3d& u1,
                                const vec3d& u2) {
  return tri_tri_intersect<float64>(v0, v1, v2, u0, u1, u2);
}

WP_FUNC float32 edge_clamp01(float32 x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }

WP_FUNC vec3f closest_point_edge_edge(const vec3f& p1, const vec3f& q1, const vec3f& p2, const vec3f& q2,
                                      float32 epsilon) {
  const vec3f d1 = sub(q1, p1), d2 = sub(q2, p2), r = sub(p1, p2);
  const float32 a = dot(d1, d1), e = dot(d2, d2), f = dot(d2, r);
  float32 s = 0.0f, t = 0.0f;
  if (a <= epsilon && e <= epsilon) {
    // two points
  } else if (a <= epsilon) {
    t = edge_clamp01(f / e);
  } else if (e <= epsilon) {
    s = edge_clamp01(-dot(d1, r) / a);
  } else {
    const float32 c = dot(d1, r), b = dot(d1, d2);
    const float32 denom = a * e - b * b;
    s = denom != 0.0f ? edge_clamp01((b * f - c * e) / denom) : 0.0f;
    t = (b * s + f) / e;
    if (t < 0.0f) {
      t = 0.0f;
      s = edge_clamp01(-c / a);
    } else if (t > 1.0f) {
      t = 1.0f;
      s = edge_clamp01((b - c) / a);
    }
  }
  const vec3f c1 = add(p1, mul(d1, s)), c2 = add(p2, mul(d2, t));
  return vec3f{{s, t, length(sub(c2, c1))}};
}

// The adjoint: reverse mode through the branch the forward took (clamps
// pass the adjoint inside their bounds, bounds included, as Warp's clamp).
WP_FUNC void adj_closest_point_edge_edge(const vec3f& p1, const vec3f& q1, const vec3f& p2, const vec3f& q2,
                                         float32 epsilon, vec3f& adj_p1, vec3f& adj_q1, vec3f& adj_p2, vec3f& adj_q2,
                                         float32&, const vec3f& adj_ret) {
  const vec3f d1 = sub(q1, p1), d2 = sub(q2, p2), r = sub(p1, p2);
  const float32 a = dot(d1, d1), e = dot(d2, d2), f = dot(d2, r), c = dot(d1, r), b = dot(d1, d2);
  auto inside = [](float32 x) { return x >= 0.0f && x <= 1.0f; };
  // The forward again, keeping what the reverse sweep needs.
  float32 s = 0.0f, t = 0.0f, s0 = 0.0f, t0 = 0.0f, num = 0.0f, denom = 0.0f;
  int32 branch = 0;  // 0: points; 1: edge 1 a point; 2: edge 2 a point; 3: t < 0; 4: t > 1; 5: general
  if (a <= epsilon && e <= epsilon) {
    branch = 0;
  } else if (a <= epsilon) {
    branch = 1;
    t = edge_clamp01(f / e);
  } else if (e <= epsilon) {
    branch = 2;
    s = edge_clamp01(-c / a);
  } else {
    denom = a * e - b * b;
    num = b * f - c * e;
    s0 = denom != 0.0f ? edge_clamp01(num / denom) : 0.0f;
    t0 = (b * s0 + f) / e;
    if (t0 < 0.0f) {
      branch = 3;
      s = edge_clamp01(-c / a);
    } else if (t0 > 1.0f) {
      branch = 4;
      t = 1.0f;
      s = edge_clamp01((b - c) / a);
    } else {
      branch = 5;
      s = s0;
      t = t0;
    }
  }
  // d = |c2 - c1|, c1 = p1 + s d1, c2 = p2 + t d2.
  float32 gs = adj_ret.c[0], gt = adj_ret.c[1];
  vec3f ad1 = vec_splat<3, float32>(0.0f), ad2 = ad1, ar = ad1;
  const vec3f diff = sub(add(p2, mul(d2, t)), add(p1, mul(d1, s)));
  const float32 len = length(diff);
  if (len > 0.0f) {
    const vec3f g = mul(diff, adj_ret.c[2] / len);  // the adjoint of c2; c1's is -g
    adj_p2 = add(adj_p2, g);
    ad2 = add(ad2, mul(g, t));
    gt += dot(g, d2);
    adj_p1 = sub(adj_p1, g);
    ad1 = sub(ad1, mul(g, s));
    gs -= dot(g, d1);
  }
  float32 aa = 0.0f, ae = 0.0f, af = 0.0f, ac = 0.0f, ab = 0.0f;
  switch (branch) {
    case 1:
      if (inside(f / e)) {
        af += gt / e;
        ae -= gt * f / (e * e);
      }
      break;
    case 2:
    case 3:
      if (inside(-c / a)) {
        ac -= gs / a;
        aa += gs * c / (a * a);
      }
      break;
    case 4:
      if (inside((b - c) / a)) {
        ab += gs / a;
        ac -= gs / a;
        aa -= gs * (b - c) / (a * a);
      }
      break;
    case 5: {
      // t = (b s0 + f) / e, s = s0.
      float32 as0 = gs + gt * b / e;
      ab += gt * s0 / e;
      af += gt / e;
      ae -= gt * t0 / e;
      if (denom != 0.0f && inside(num / denom)) {  // s0 = num / denom
        const float32 an = as0 / denom, ad = -as0 * num / (denom * denom);
        ab += an * f;
        af += an * b;
        ac -= an * e;
        ae -= an * c;
        aa += ad * e;  // denom = a e - b^2
        ae += ad * a;
        ab -= 2.0f * b * ad;
      }
      break;
    }
    default: break;
  }
  ad1 = add(ad1, add(add(mul(d1, 2.0f * aa), mul(r, ac)), mul(d2, ab)));
  ad2 = add(ad2, add(add(mul(d2, 2.0f * ae), mul(r, af)), mul(d1, ab)));
  ar = add(ar, add(mul(d2, af), mul(d1, ac)));
  adj_q1 = add(adj_q1, ad1);
  adj_p1 = sub(adj_p1, ad1);
  adj_q2 = add(adj_q2, ad2);
  adj_p2 = sub(adj_p2, ad2);
  adj_p1 = add(adj_p1, ar);
  adj_p2 = sub(adj_p2, ar);
}

}  // namespace wp

// warpd device runtime: triangle meshes and their queries (Warp's wp.Mesh).
//
// A mesh is `num_tris` triangles over `num_points` vertices: triangle f is
// points[indices[3f]], points[indices[3f + 1]], points[indices[3f + 2]].
// The server keeps a BVH (bvh.h) over the triangles' boxes (tri_lowers,
// tri_uppers, computed by builds and refits from the points), so queries
// visit only the triangles near them.
//
// Kernels name a mesh by its id, resolved through the launch's object table
// (objects.h): an unknown id records FAULT_UNKNOWN_OBJECT and the query
// yields nothing (result false, zero values). The points and indices are
// session arrays the client may rewrite at any time, so every triangle a
// query reads is checked: its face index against num_tris and its three
// vertex indices against num_points (FAULT_OBJECT_INDEX, naming the
// index); tree traversal checks nodes as bvh.h does. No input reads
// outside the mesh's buffers.
//
// Semantics follow Warp 1.19: barycentric (u, v) weigh the first and second
// vertex (the point is u * p + v * q + (1 - u - v) * r); ray hits use the
// watertight ray/triangle test (Woop, Benthin and Wald 2013), `sign` is
// the test's determinant (> 0: the ray meets the face's front, the side its
// counter-clockwise winding faces) and t is in multiples of |dir|, a hit
// needs 0 <= t < max_t; closest-point queries skip slivers (|n| / sum of
// squared edge lengths < 1e-6) and need a distance < max_dist (furthest:
// > min_dist). Signs (< 0 inside): mesh_query_point votes over the closest
// hits of rays along +x, +y and +z; _sign_normal uses the angle-weighted
// pseudo-normal of the closest feature; _sign_winding_number the
// generalized winding number, summed exactly over every triangle (so
// `accuracy` is not needed), inside when above `threshold`.
#pragma once

#include "warpd/native/array.h"
#include "warpd/native/bvh.h"
#include "warpd/native/core.h"
#include "warpd/native/launch.h"
#include "warpd/native/objects.h"
#include "warpd/native/rand.h"
#include "warpd/native/scalar.h"
#include "warpd/native/vec.h"

namespace wp {

// The descriptor of a mesh (the object table's data for OBJECT_MESH).
struct mesh_t {
  bvh_t bvh;                // over the triangles' boxes (item_lowers/uppers)
  const vec3f* points;      // num_points
  const vec3f* velocities;  // num_velocities (0: none)
  const int32* indices;     // 3 * num_tris
  int32 num_points;
  int32 num_velocities;
  int32 num_tris;
  float32 average_edge_length;
  uint64 bvh_id;  // the id of the mesh's tree as a BVH of the session (mesh_get_bvh)
  // The gradient arrays of the points and velocities (Warp's points.grad,
  // velocities.grad; null: none), where the adjoints of reads through
  // mesh_get(id).points / .velocities accumulate.
  vec3f* points_grad;
  vec3f* velocities_grad;
};
static_assert(sizeof(mesh_t) == 144, "mesh_t layout");
// A mesh query holds its tree (q.bvh == &mesh->bvh): the mesh is at the same
// address (checked by clang; NVRTC has no offsetof builtin, the layout is one).
#if !WP_CUDA
static_assert(__builtin_offsetof(mesh_t, bvh) == 0, "mesh_t starts with its tree");
#endif

// Warp's MeshQueryPoint (fields read by kernels by name).
struct mesh_query_point_t {
  bool result;
  float32 sign;
  int32 face;
  float32 u;
  float32 v;
};
static_assert(sizeof(mesh_query_point_t) == 20, "mesh_query_point_t size");

// Warp's MeshQueryRay.
struct mesh_query_ray_t {
  bool result;
  float32 sign;
  int32 face;
  float32 t;
  float32 u;
  float32 v;
  vec3f normal;
};
static_assert(sizeof(mesh_query_ray_t) == 36, "mesh_query_ray_t size");

// Adjoints of query values (adj += v): their float fields; result and face
// carry none.
WP_FUNC void adj_acc(mesh_query_point_t& adj, const mesh_query_point_t& v) {
  adj.sign += v.sign;
  adj.u += v.u;
  adj.v += v.v;
}
WP_FUNC void adj_acc(mesh_query_ray_t& adj, const mesh_query_ray_t& v) {
  adj.sign += v.sign;
  adj.t += v.t;
  adj.u += v.u;
  adj.v += v.v;
  adj.normal = add(adj.normal, v.normal);
}

WP_FUNC const mesh_t* mesh_resolve(launch_ctx* ctx, int32 line, uint64 id) {
  return (const mesh_t*)resolve_object(ctx, line, id, OBJECT_MESH);
}

// The vertices of face f, checked; false (a fault recorded) when f or one of
// its vertex indices is out of range.
WP_FUNC bool mesh_triangle(launch_ctx* ctx, int32 line, const mesh_t* m, int64 f, vec3f& a, vec3f& b, vec3f& c) {
  if (f < 0 || f >= m->num_tris) {
    record_object_index_fault(ctx, line, OBJECT_MESH_FACES, f, m->num_tris);
    return false;
  }
  const int32 i = m->indices[3 * f], j = m->indices[3 * f + 1], k = m->indices[3 * f + 2];
  const uint32 n = (uint32)m->num_points;
  if ((uint32)i >= n || (uint32)j >= n || (uint32)k >= n) {
    const int32 bad = (uint32)i >= n ? i : ((uint32)j >= n ? j : k);
    record_object_index_fault(ctx, line, OBJECT_MESH, bad, m->num_points);
    return false;
  }
  a = m->points[i];
  b = m->points[j];
  c = m->points[k];
  return true;
}

// A traversal of the mesh's tree: pops nodes, checked as bvh.h checks them
// (`ok` false after a fault for a malformed tree).
struct mesh_walk_t {
  const bvh_t* t;
  int32 count;
  bool ok;
  int32 stack[BVH_STACK_SIZE];
};

WP_FUNC void mesh_walk_start(mesh_walk_t& w, const mesh_t* m, int32 root) {
  w.t = &m->bvh;
  w.count = 0;
  w.ok = true;
  const int32 r = root == -1 ? m->bvh.root : root;
  if (r >= 0 && r < m->bvh.num_nodes && m->bvh.num_items > 0) {
    w.stack[0] = r;
    w.count = 1;
  }
}

// The next node (false when done or after a fault for a malformed tree).
WP_FUNC bool mesh_walk_pop(launch_ctx* ctx, int32 line, mesh_walk_t& w, const bvh_node_t*& node) {
  if (w.count <= 0) return false;
  const int32 n = w.stack[--w.count];
  if ((uint32)n >= (uint32)w.t->num_nodes) {
    record_object_index_fault(ctx, line, OBJECT_BVH, n, w.t->num_nodes);
    w.count = 0;
    w.ok = false;
    return false;
  }
  node = &w.t->nodes[n];
  if (bvh_node_is_leaf(*node) &&
      (node->left < 0 || bvh_leaf_end(*node) < node->left || bvh_leaf_end(*node) > w.t->num_items)) {
    record_object_index_fault(ctx, line, OBJECT_BVH, bvh_leaf_end(*node), w.t->num_items);
    w.count = 0;
    w.ok = false;
    return false;
  }
  return true;
}

WP_FUNC bool mesh_walk_push(launch_ctx* ctx, int32 line, mesh_walk_t& w, int32 child) {
  if (w.count >= BVH_STACK_SIZE) {
    record_object_index_fault(ctx, line, OBJECT_BVH, w.count + 1, BVH_STACK_SIZE);
    w.count = 0;
    w.ok = false;
    return false;
  }
  w.stack[w.count++] = child;
  return true;
}

// The face of leaf slot k (checked against the tree's items).
WP_FUNC bool mesh_walk_item(launch_ctx* ctx, int32 line, const mesh_walk_t& w, int32 k, int32& face) {
  const int32 item = w.t->primitives[k];
  if ((uint32)item >= (uint32)w.t->num_items) {
    record_object_index_fault(ctx, line, OBJECT_BVH, item, w.t->num_items);
    return false;
  }
  face = item;
  return true;
}

// Visits the faces of the mesh's tree below `root` (-1: its root) in the
// leaves of the nodes `enter(node)` accepts (each test sees the node's box,
// so it may tighten as faces are visited): `visit(f, a, b, c)` gets each
// face's index and checked vertices, and returns false to stop the walk.
// False after a fault (a malformed tree, a triangle out of range).
template <typename Enter, typename Visit>
WP_FUNC bool mesh_visit(launch_ctx* ctx, int32 line, const mesh_t* m, int32 root, Enter enter, Visit visit) {
  mesh_walk_t w;
  mesh_walk_start(w, m, root);
  const bvh_node_t* node = nullptr;
  while (mesh_walk_pop(ctx, line, w, node)) {
    if (!enter(*node)) continue;
    if (!bvh_node_is_leaf(*node)) {
      if (!mesh_walk_push(ctx, line, w, node->left) || !mesh_walk_push(ctx, line, w, node->right)) return false;
      continue;
    }
    for (int32 k = node->left; k < bvh_leaf_end(*node); ++k) {
      int32 f = 0;
      vec3f a, b, c;
      if (!mesh_walk_item(ctx, line, w, k, f) || !mesh_triangle(ctx, line, m, f, a, b, c)) return false;
      if (!visit(f, a, b, c)) return true;
    }
  }
  return w.ok;
}

// Squared distance from p to the box (0 inside).
WP_FUNC float32 mesh_box_dist_sq(const vec3f& p, const vec3f& lo, const vec3f& hi) {
  float32 d2 = 0.0f;
  for (int32 i = 0; i < 3; ++i) {
    const float32 d = max(max(lo.c[i] - p.c[i], p.c[i] - hi.c[i]), 0.0f);
    d2 += d * d;
  }
  return d2;
}

// Squared distance from p to the box's farthest corner.
WP_FUNC float32 mesh_box_far_sq(const vec3f& p, const vec3f& lo, const vec3f& hi) {
  float32 d2 = 0.0f;
  for (int32 i = 0; i < 3; ++i) {
    const float32 d = max(abs(p.c[i] - lo.c[i]), abs(p.c[i] - hi.c[i]));
    d2 += d * d;
  }
  return d2;
}

// The closest point of triangle (a, b, c) to p as barycentrics (u of a, v of
// b), by the Voronoi regions of the triangle's vertices, edges and face.
WP_FUNC void mesh_closest_on_triangle(const vec3f& a, const vec3f& b, const vec3f& c, const vec3f& p, float32& u,
                                      float32& v) {
  const vec3f ab = sub(b, a), ac = sub(c, a), ap = sub(p, a);
  const float32 d1 = dot(ab, ap), d2 = dot(ac, ap);
  if (d1 <= 0.0f && d2 <= 0.0f) {  // vertex a
    u = 1.0f;
    v = 0.0f;
    return;
  }
  const vec3f bp = sub(p, b);
  const float32 d3 = dot(ab, bp), d4 = dot(ac, bp);
  if (d3 >= 0.0f && d4 <= d3) {  // vertex b
    u = 0.0f;
    v = 1.0f;
    return;
  }
  const float32 vc = d1 * d4 - d3 * d2;
  if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) {  // edge ab
    const float32 s = d1 / (d1 - d3);
    u = 1.0f - s;
    v = s;
    return;
  }
  const vec3f cp = sub(p, c);
  const float32 d5 = dot(ab, cp), d6 = dot(ac, cp);
  if (d6 >= 0.0f && d5 <= d6) {  // vertex c
    u = 0.0f;
    v = 0.0f;
    return;
  }
  const float32 vb = d5 * d2 - d1 * d6;
  if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) {  // edge ac
    const float32 s = d2 / (d2 - d6);
    u = 1.0f - s;
    v = 0.0f;
    return;
  }
  const float32 va = d3 * d6 - d5 * d4;
  if (va <= 0.0f && (d4 - d3) >= 0.0f && (d5 - d6) >= 0.0f) {  // edge bc
    const float32 s = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    u = 0.0f;
    v = 1.0f - s;
    return;
  }
  const float32 inv = 1.0f / (va + vb + vc);  // interior
  const float32 sv = vb * inv, sw = vc * inv;
  u = 1.0f - sv - sw;
  v = sv;
}

WP_FUNC vec3f mesh_bary_point(const vec3f& a, const vec3f& b, const vec3f& c, float32 u, float32 v) {
  return add(add(mul(a, u), mul(b, v)), mul(c, 1.0f - u - v));
}

// Slivers (nearly zero area for their size) are skipped by point queries.
WP_FUNC bool mesh_is_sliver(const vec3f& a, const vec3f& b, const vec3f& c) {
  const vec3f e0 = sub(b, a), e1 = sub(c, a), e2 = sub(c, b);
  return !(length(cross(e0, e1)) / (dot(e0, e0) + dot(e1, e1) + dot(e2, e2)) >= 1.0e-6f);
}

// a * b - c * d with the rounding error of c * d compensated.
WP_FUNC float32 mesh_diff_product(float32 a, float32 b, float32 c, float32 d) {
  const float32 cd = c * d;
#if WP_CUDA
  return fmaf(a, b, -cd) + fmaf(-c, d, cd);
#else
  return __builtin_fmaf(a, b, -cd) + __builtin_fmaf(-c, d, cd);
#endif
}

// The watertight ray/triangle test's constants of one ray (its shear): the
// axis the ray runs along most (kz, the others kx, ky in winding order) and
// the shear that makes the ray that axis. Computed once per ray.
struct mesh_ray_shear_t {
  int32 kx, ky, kz;
  float32 sx, sy, sz;
};

WP_FUNC mesh_ray_shear_t mesh_ray_shear(const vec3f& dir) {
  const float32 ax = abs(dir.c[0]), ay = abs(dir.c[1]), az = abs(dir.c[2]);
  mesh_ray_shear_t k;
  k.kz = ax > ay ? (ax > az ? 0 : 2) : (ay > az ? 1 : 2);
  k.kx = k.kz == 2 ? 0 : k.kz + 1;
  k.ky = k.kx == 2 ? 0 : k.kx + 1;
  if (dir.c[k.kz] < 0.0f) {
    const int32 s = k.kx;
    k.kx = k.ky;
    k.ky = s;
  }
  k.sx = dir.c[k.kx] / dir.c[k.kz];
  k.sy = dir.c[k.ky] / dir.c[k.kz];
  k.sz = 1.0f / dir.c[k.kz];
  return k;
}

// The watertight ray/triangle test: true when the ray start + t * dir meets
// the triangle (edges and vertices included, each point of a shared edge
// hit by exactly one side's test) at t >= 0; u, v barycentrics of a, b;
// sign the determinant. `k` is the ray's mesh_ray_shear(dir).
WP_FUNC bool mesh_ray_triangle(const vec3f& start, const mesh_ray_shear_t& k, const vec3f& a, const vec3f& b,
                               const vec3f& c, float32& t, float32& u, float32& v, float32& sign) {
  const int32 kx = k.kx, ky = k.ky, kz = k.kz;
  const float32 sx = k.sx, sy = k.sy, sz = k.sz;
  const vec3f A = sub(a, start), B = sub(b, start), C = sub(c, start);
  const float32 Ax = A.c[kx] - sx * A.c[kz], Ay = A.c[ky] - sy * A.c[kz];
  const float32 Bx = B.c[kx] - sx * B.c[kz], By = B.c[ky] - sy * B.c[kz];
  const float32 Cx = C.c[kx] - sx * C.c[kz], Cy = C.c[ky] - sy * C.c[kz];
  float32 U = mesh_diff_product(Cx, By, Cy, Bx);
  float32 V = mesh_diff_product(Ax, Cy, Ay, Cx);
  float32 W = mesh_diff_product(Bx, Ay, By, Ax);
  if (U == 0.0f || V == 0.0f || W == 0.0f) {  // on an edge: decide in double precision
    U = (float32)((float64)Cx * (float64)By - (float64)Cy * (float64)Bx);
    V = (float32)((float64)Ax * (float64)Cy - (float64)Ay * (float64)Cx);
    W = (float32)((float64)Bx * (float64)Ay - (float64)By * (float64)Ax);
  }
  if ((U < 0.0f || V < 0.0f || W < 0.0f) && (U > 0.0f || V > 0.0f || W > 0.0f)) return false;
  const float32 det = U + V + W;
  if (det == 0.0f) return false;
  const float32 T = U * (sz * A.c[kz]) + V * (sz * B.c[kz]) + W * (sz * C.c[kz]);
  if ((det < 0.0f && T > 0.0f) || (det > 0.0f && T < 0.0f)) return false;
  const float32 rcp = 1.0f / det;
  u = U * rcp;
  v = V * rcp;
  t = T * rcp;
  sign = det;
  return true;
}

enum mesh_ray_mode : int32 {
  MESH_RAY_CLOSEST = 0,  // the closest hit
  MESH_RAY_ANY = 1,      // stop at the first hit found (result only)
  MESH_RAY_COUNT = 2,    // every hit at t >= 0, counted into *count
};

// The closest hit of a ray at 0 <= t < max_t (in multiples of |dir|), or
// any hit, or the number of hits (mode).
WP_FUNC mesh_query_ray_t mesh_ray_walk(launch_ctx* ctx, int32 line, const mesh_t* m, const vec3f& start,
                                       const vec3f& dir, float32 max_t, int32 root, int32 mode, int32* count) {
  mesh_query_ray_t r{};
  if (m == nullptr) return r;
  if (root != -1 && (uint32)root >= (uint32)m->bvh.num_nodes) {
    record_object_index_fault(ctx, line, OBJECT_BVH, root, m->bvh.num_nodes);
    return r;
  }
  // Nearest child first: an internal node's two children are tested where
  // the node is popped, and the one the ray enters first is visited first;
  // a pending node whose entry lies beyond the closest hit found since is
  // dropped when popped. Every node index, leaf range and face is checked
  // as in mesh_visit.
  const bvh_t& tree = m->bvh;
  const vec3f rcp = bvh_rcp(dir);
  const mesh_ray_shear_t shear = mesh_ray_shear(dir);
  const bool count_all = mode == MESH_RAY_COUNT;
  float32 best = max_t;
  int32 stack[BVH_STACK_SIZE];
  float32 entry[BVH_STACK_SIZE];
  int32 depth = 0;
  const int32 first = root == -1 ? tree.root : root;
  auto box = [&](int32 n, float32& tb) {
    const bvh_node_t& node = tree.nodes[n];
    return bvh_ray_box_robust(start, dir, rcp, node.lower, node.upper, &tb) && (count_all || tb < best);
  };
  auto bad_node = [&](int32 n) {
    record_object_index_fault(ctx, line, OBJECT_BVH, n, tree.num_nodes);
    return mesh_query_ray_t{};
  };
  if (first >= 0 && tree.num_items > 0) {
    if (first >= tree.num_nodes) return bad_node(first);
    float32 tb = 0.0f;
    if (box(first, tb)) {
      stack[0] = first;
      entry[0] = tb;
      depth = 1;
    }
  }
  while (depth > 0) {
    --depth;
    if (!count_all && !(entry[depth] < best)) continue;
    const bvh_node_t& node = tree.nodes[stack[depth]];
    if (!bvh_node_is_leaf(node)) {
      const int32 l = node.left, rr = node.right;
      if ((uint32)l >= (uint32)tree.num_nodes) return bad_node(l);
      if ((uint32)rr >= (uint32)tree.num_nodes) return bad_node(rr);
      float32 tl = 0.0f, tr = 0.0f;
      const bool hl = box(l, tl), hr = box(rr, tr);
      if (depth + int32(hl) + int32(hr) > BVH_STACK_SIZE) {
        record_object_index_fault(ctx, line, OBJECT_BVH, depth + int32(hl) + int32(hr), BVH_STACK_SIZE);
        return mesh_query_ray_t{};
      }
      if (hl && hr) {
        const bool left_first = tl <= tr;
        stack[depth] = left_first ? rr : l;
        entry[depth++] = left_first ? tr : tl;
        stack[depth] = left_first ? l : rr;
        entry[depth++] = left_first ? tl : tr;
      } else if (hl || hr) {
        stack[depth] = hl ? l : rr;
        entry[depth++] = hl ? tl : tr;
      }
      continue;
    }
    const int32 end = bvh_leaf_end(node);
    if (node.left < 0 || end < node.left || end > tree.num_items) {
      record_object_index_fault(ctx, line, OBJECT_BVH, end, tree.num_items);
      return mesh_query_ray_t{};
    }
    for (int32 k = node.left; k < end; ++k) {
      const int32 f = tree.primitives[k];
      if ((uint32)f >= (uint32)tree.num_items) {
        record_object_index_fault(ctx, line, OBJECT_BVH, f, tree.num_items);
        return mesh_query_ray_t{};
      }
      vec3f a, b, c;
      if (!mesh_triangle(ctx, line, m, f, a, b, c)) return mesh_query_ray_t{};
      float32 t, u, v, s;
      if (!mesh_ray_triangle(start, shear, a, b, c, t, u, v, s) || !(t >= 0.0f)) continue;
      if (count_all) {
        ++*count;
        continue;
      }
      if (t < best) {
        best = t;
        r.result = true;
        r.t = t;
        r.u = u;
        r.v = v;
        r.sign = s;
        r.face = f;
        r.normal = normalize(cross(sub(b, a), sub(c, a)));
        if (mode == MESH_RAY_ANY) return r;
      }
    }
  }
  return r;
}

WP_FUNC mesh_query_ray_t mesh_ray_closest(launch_ctx* ctx, int32 line, const mesh_t* m, const vec3f& start,
                                          const vec3f& dir, float32 max_t, int32 root) {
  return mesh_ray_walk(ctx, line, m, start, dir, max_t, root, MESH_RAY_CLOSEST, nullptr);
}

// mesh_query_ray_anyhit(id, start, dir, max_t, root = -1): whether any face
// is hit at 0 <= t < max_t.
WP_FUNC bool mesh_query_ray_anyhit(launch_ctx* ctx, int32 line, uint64 id, const vec3f& start, const vec3f& dir,
                                   float32 max_t, int32 root) {
  return mesh_ray_walk(ctx, line, mesh_resolve(ctx, line, id), start, dir, max_t, root, MESH_RAY_ANY, nullptr)
      .result;
}

// mesh_query_ray_count_intersections(id, start, dir, root = -1): the faces
// the ray meets at t >= 0 (a ray through an edge or vertex counts every face
// whose closed triangle it meets there, as in Warp).
WP_FUNC int32 mesh_query_ray_count_intersections(launch_ctx* ctx, int32 line, uint64 id, const vec3f& start,
                                                 const vec3f& dir, int32 root) {
  int32 n = 0;
  const mesh_query_ray_t r = mesh_ray_walk(ctx, line, mesh_resolve(ctx, line, id), start, dir,
                                           3.402823466e+38f, root, MESH_RAY_COUNT, &n);
  (void)r;
  return faulted(ctx) ? 0 : n;
}

// mesh_query_ray(id, start, dir, max_t, root = -1) -> MeshQueryRay
WP_FUNC mesh_query_ray_t mesh_query_ray(launch_ctx* ctx, int32 line, uint64 id, const vec3f& start, const vec3f& dir,
                                        float32 max_t, int32 root) {
  return mesh_ray_closest(ctx, line, mesh_resolve(ctx, line, id), start, dir, max_t, root);
}

// The out-parameter form: outputs written on a hit only.
WP_FUNC bool mesh_query_ray(launch_ctx* ctx, int32 line, uint64 id, const vec3f& start, const vec3f& dir,
                            float32 max_t, float32& t, float32& u, float32& v, float32& sign, vec3f& normal,
                            int32& face, int32 root) {
  const mesh_query_ray_t r = mesh_query_ray(ctx, line, id, start, dir, max_t, root);
  if (r.result) {
    t = r.t;
    u = r.u;
    v = r.v;
    sign = r.sign;
    normal = r.normal;
    face = r.face;
  }
  return r.result;
}

// A better face for a point query: its distance becomes the bound.
WP_FUNC void mesh_take(mesh_query_point_t& q, float32& best, float32 d2, int32 f, float32 u, float32 v) {
  best = d2;
  q.result = true;
  q.face = f;
  q.u = u;
  q.v = v;
}

// The closest face within max_dist (strictly), slivers skipped: result,
// face, u, v (sign left 0). *dist gets the distance.
WP_FUNC mesh_query_point_t mesh_closest(launch_ctx* ctx, int32 line, const mesh_t* m, const vec3f& p,
                                        float32 max_dist, float32* dist) {
  mesh_query_point_t q{};
  if (m == nullptr) return q;
  float32 best = max_dist * max_dist;
  const bool ok = mesh_visit(
      ctx, line, m, -1, [&](const bvh_node_t& node) { return mesh_box_dist_sq(p, node.lower, node.upper) < best; },
      [&](int32 f, const vec3f& a, const vec3f& b, const vec3f& c) {
        if (mesh_is_sliver(a, b, c)) return true;
        float32 u, v;
        mesh_closest_on_triangle(a, b, c, p, u, v);
        const float32 d2 = length_sq(sub(mesh_bary_point(a, b, c, u, v), p));
        if (d2 < best) mesh_take(q, best, d2, f, u, v);
        return true;
      });
  if (!ok) return mesh_query_point_t{};
  if (dist != nullptr) *dist = sqrt(best);
  return q;
}

// -1 when at least two of the rays along +x, +y, +z from p hit a face's back
// first (p inside a closed, outward-wound mesh), else 1.
WP_FUNC float32 mesh_inside_by_rays(launch_ctx* ctx, int32 line, const mesh_t* m, const vec3f& p) {
  int32 votes = 0;
  for (int32 i = 0; i < 3; ++i) {
    vec3f d = vec_splat<3, float32>(0.0f);
    d.c[i] = 1.0f;
    const mesh_query_ray_t r = mesh_ray_closest(ctx, line, m, p, d, 3.402823466e+38f, -1);
    if (r.result && r.sign < 0.0f) ++votes;
  }
  return votes >= 2 ? -1.0f : 1.0f;
}

// mesh_query_point_no_sign(id, point, max_dist) -> MeshQueryPoint (sign 0)
WP_FUNC mesh_query_point_t mesh_query_point_no_sign(launch_ctx* ctx, int32 line, uint64 id, const vec3f& point,
                                                    float32 max_dist) {
  return mesh_closest(ctx, line, mesh_resolve(ctx, line, id), point, max_dist, nullptr);
}

// mesh_query_point(id, point, max_dist): sign by the votes of three rays.
WP_FUNC mesh_query_point_t mesh_query_point(launch_ctx* ctx, int32 line, uint64 id, const vec3f& point,
                                            float32 max_dist) {
  const mesh_t* m = mesh_resolve(ctx, line, id);
  mesh_query_point_t q = mesh_closest(ctx, line, m, point, max_dist, nullptr);
  if (q.result) q.sign = mesh_inside_by_rays(ctx, line, m, point);
  return q;
}

// -1 (inside) when at least half of n_sample rays from p cross the mesh an
// odd number of times, else 1: ray i goes along (1, 1, 1) plus a
// perturbation per axis uniform in [-scale, scale), drawn from Warp's
// random stream seeded 42 (so the directions are Warp's). n_sample <= 0:
// inside. The loop stops early when the launch is stopping.
WP_FUNC float32 mesh_inside_by_parity(launch_ctx* ctx, int32 line, const mesh_t* m, const vec3f& p, int32 n_sample,
                                      float32 scale) {
  int32 votes = 0;
  uint32 state = rand_init(42);
  for (int32 i = 0; i < n_sample && !should_stop(ctx); ++i) {
    vec3f dir = vec_splat<3, float32>(1.0f);
    for (int32 tries = 0; tries < 64; ++tries) {  // redraw a (near) zero direction, as Warp does
      const float32 x = randf(state, -scale, scale), y = randf(state, -scale, scale), z = randf(state, -scale, scale);
      dir = vec3f{{1.0f + x, 1.0f + y, 1.0f + z}};
      if (!(length_sq(dir) < 1.0e-8f)) break;
    }
    int32 n = 0;
    mesh_ray_walk(ctx, line, m, p, dir, 3.402823466e+38f, -1, MESH_RAY_COUNT, &n);
    if (n % 2 != 0) ++votes;
  }
  return votes * 2 >= n_sample ? -1.0f : 1.0f;
}

// mesh_query_point_sign_parity(id, point, max_dist, n_sample = 1,
// perturbation_scale = 0.1): the closest point as mesh_query_point_no_sign,
// signed by ray parity votes (over the whole mesh).
WP_FUNC mesh_query_point_t mesh_query_point_sign_parity(launch_ctx* ctx, int32 line, uint64 id, const vec3f& point,
                                                        float32 max_dist, int32 n_sample,
                                                        float32 perturbation_scale) {
  const mesh_t* m = mesh_resolve(ctx, line, id);
  mesh_query_point_t q = mesh_closest(ctx, line, m, point, max_dist, nullptr);
  if (q.result) q.sign = mesh_inside_by_parity(ctx, line, m, point, n_sample, perturbation_scale);
  return faulted(ctx) ? mesh_query_point_t{} : q;
}

// The angle of the triangle's corner at `at` between the edges to o1, o2.
WP_FUNC float32 mesh_corner_angle(const vec3f& at, const vec3f& o1, const vec3f& o2) {
  return acos(dot(normalize(sub(o1, at)), normalize(sub(o2, at))));
}

// mesh_query_point_sign_normal(id, point, max_dist, epsilon = 1e-3): the
// sign of (point - closest) against the angle-weighted pseudo-normal of the
// closest features, as Warp 1.19 weighs them: every face whose distance is
// within eps = epsilon * the average edge length of the closest distance
// adds its unit normal times its angle at a vertex (its closest point within
// eps of that vertex), pi on an edge (within eps of it), 2 pi inside. Inside
// (-1) unless the dot product is positive.
WP_FUNC mesh_query_point_t mesh_query_point_sign_normal(launch_ctx* ctx, int32 line, uint64 id, const vec3f& point,
                                                        float32 max_dist, float32 epsilon) {
  const mesh_t* m = mesh_resolve(ctx, line, id);
  float32 dist = 0.0f;
  mesh_query_point_t q = mesh_closest(ctx, line, m, point, max_dist, &dist);
  if (!q.result) return q;
  vec3f a, b, c;
  if (!mesh_triangle(ctx, line, m, q.face, a, b, c)) return mesh_query_point_t{};
  const vec3f closest = mesh_bary_point(a, b, c, q.u, q.v);
  const float32 eps = m->average_edge_length * epsilon;
  const float32 eps_sq = eps * eps;
  const float32 reach = dist + eps;
  vec3f normal = vec_splat<3, float32>(0.0f);
  const bool ok = mesh_visit(
      ctx, line, m, -1,
      [&](const bvh_node_t& node) { return mesh_box_dist_sq(point, node.lower, node.upper) <= reach * reach; },
      [&](int32, const vec3f& p0, const vec3f& p1, const vec3f& p2) {
        if (mesh_is_sliver(p0, p1, p2)) return true;
        float32 u, v;
        mesh_closest_on_triangle(p0, p1, p2, point, u, v);
        const vec3f cf = mesh_bary_point(p0, p1, p2, u, v);
        if (!(length(sub(cf, point)) < reach)) return true;  // farther than the closest features
        const vec3f e0 = sub(p1, p0), e1 = sub(p2, p0), e2 = sub(p2, p1);
        // The squared distance from cf to the line through x along e.
        auto off_line_sq = [&](const vec3f& x, const vec3f& e) {
          const vec3f d = sub(cf, x);
          const float32 t = dot(d, e);
          return (length_sq(d) * dot(e, e) - t * t) / dot(e, e);
        };
        float32 weight;
        if (length_sq(sub(cf, p0)) < eps_sq) {
          weight = mesh_corner_angle(p0, p1, p2);
        } else if (length_sq(sub(cf, p1)) < eps_sq) {
          weight = mesh_corner_angle(p1, p2, p0);
        } else if (length_sq(sub(cf, p2)) < eps_sq) {
          weight = mesh_corner_angle(p2, p0, p1);
        } else if (off_line_sq(p0, e0) < eps_sq || off_line_sq(p1, e2) < eps_sq || off_line_sq(p0, e1) < eps_sq) {
          weight = 3.14159265358979f;  // an edge
        } else {
          weight = 2.0f * 3.14159265358979f;  // the face's interior
        }
        normal = add(normal, mul(normalize(cross(e0, e1)), weight));
        return true;
      });
  if (!ok) return mesh_query_point_t{};
  q.sign = dot(sub(point, closest), normal) > 0.0f ? 1.0f : -1.0f;
  return q;
}

// The solid angle of triangle (a, b, c) seen from p, over 4 pi (Van
// Oosterom and Strackee), signed by the winding.
WP_FUNC float32 mesh_triangle_winding(const vec3f& p, const vec3f& a, const vec3f& b, const vec3f& c) {
  const vec3f x = sub(a, p), y = sub(b, p), z = sub(c, p);
  const float32 lx = length(x), ly = length(y), lz = length(z);
  const float32 num = dot(x, cross(y, z));
  const float32 den = lx * ly * lz + dot(x, y) * lz + dot(y, z) * lx + dot(z, x) * ly;
  return atan2(num, den) * (1.0f / (2.0f * 3.14159265358979f));
}

// mesh_query_point_sign_winding_number(id, point, max_dist, accuracy = 2,
// threshold = 0.5): inside (-1) when the winding number exceeds threshold.
WP_FUNC mesh_query_point_t mesh_query_point_sign_winding_number(launch_ctx* ctx, int32 line, uint64 id,
                                                                const vec3f& point, float32 max_dist,
                                                                float32 accuracy, float32 threshold) {
  (void)accuracy;
  const mesh_t* m = mesh_resolve(ctx, line, id);
  mesh_query_point_t q = mesh_closest(ctx, line, m, point, max_dist, nullptr);
  if (!q.result) return q;
  float32 wn = 0.0f;
  for (int32 f = 0; f < m->num_tris; ++f) {
    vec3f a, b, c;
    if (!mesh_triangle(ctx, line, m, f, a, b, c)) return mesh_query_point_t{};
    wn += mesh_triangle_winding(point, a, b, c);
  }
  q.sign = wn > threshold ? -1.0f : 1.0f;
  return q;
}

// mesh_query_furthest_point_no_sign(id, point, min_dist): the face with the
// point farthest from `point`, farther than min_dist (strictly).
WP_FUNC mesh_query_point_t mesh_query_furthest_point_no_sign(launch_ctx* ctx, int32 line, uint64 id,
                                                             const vec3f& point, float32 min_dist) {
  mesh_query_point_t q{};
  const mesh_t* m = mesh_resolve(ctx, line, id);
  if (m == nullptr) return q;
  float32 best = min_dist * min_dist;
  if (min_dist < 0.0f) best = -1.0f;
  const bool ok = mesh_visit(
      ctx, line, m, -1, [&](const bvh_node_t& node) { return mesh_box_far_sq(point, node.lower, node.upper) > best; },
      [&](int32 f, const vec3f& a, const vec3f& b, const vec3f& c) {
        if (mesh_is_sliver(a, b, c)) return true;
        // The farthest point of a triangle is one of its vertices.
        const float32 da = length_sq(sub(a, point)), db = length_sq(sub(b, point)), dc = length_sq(sub(c, point));
        float32 d2 = da, u = 1.0f, v = 0.0f;
        if (db > d2) {
          d2 = db;
          u = 0.0f;
          v = 1.0f;
        }
        if (dc > d2) {
          d2 = dc;
          u = 0.0f;
          v = 0.0f;
        }
        if (d2 > best) mesh_take(q, best, d2, f, u, v);
        return true;
      });
  return ok ? q : mesh_query_point_t{};
}

// The out-parameter forms of the point queries (outputs written on a hit).
WP_FUNC bool mesh_query_point_out(const mesh_query_point_t& q, float32* inside, int32& face, float32& u, float32& v) {
  if (q.result) {
    if (inside != nullptr) *inside = q.sign;
    face = q.face;
    u = q.u;
    v = q.v;
  }
  return q.result;
}

WP_FUNC bool mesh_query_point(launch_ctx* ctx, int32 line, uint64 id, const vec3f& point, float32 max_dist,
                              float32& inside, int32& face, float32& u, float32& v) {
  return mesh_query_point_out(mesh_query_point(ctx, line, id, point, max_dist), &inside, face, u, v);
}

WP_FUNC bool mesh_query_point_no_sign(launch_ctx* ctx, int32 line, uint64 id, const vec3f& point, float32 max_dist,
                                      int32& face, float32& u, float32& v) {
  return mesh_query_point_out(mesh_query_point_no_sign(ctx, line, id, point, max_dist), nullptr, face, u, v);
}

WP_FUNC bool mesh_query_furthest_point_no_sign(launch_ctx* ctx, int32 line, uint64 id, const vec3f& point,
                                               float32 min_dist, int32& face, float32& u, float32& v) {
  return mesh_query_point_out(mesh_query_furthest_point_no_sign(ctx, line, id, point, min_dist), nullptr, face, u, v);
}

WP_FUNC bool mesh_query_point_sign_normal(launch_ctx* ctx, int32 line, uint64 id, const vec3f& point, float32 max_dist,
                                          float32& inside, int32& face, float32& u, float32& v, float32 epsilon) {
  return mesh_query_point_out(mesh_query_point_sign_normal(ctx, line, id, point, max_dist, epsilon), &inside, face, u,
                              v);
}

WP_FUNC bool mesh_query_point_sign_winding_number(launch_ctx* ctx, int32 line, uint64 id, const vec3f& point,
                                                  float32 max_dist, float32& inside, int32& face, float32& u,
                                                  float32& v, float32 accuracy, float32 threshold) {
  return mesh_query_point_out(
      mesh_query_point_sign_winding_number(ctx, line, id, point, max_dist, accuracy, threshold), &inside, face, u, v);
}

WP_FUNC bool mesh_query_point_sign_parity(launch_ctx* ctx, int32 line, uint64 id, const vec3f& point, float32 max_dist,
                                          float32& inside, int32& face, float32& u, float32& v, int32 n_sample,
                                          float32 perturbation_scale) {
  return mesh_query_point_out(
      mesh_query_point_sign_parity(ctx, line, id, point, max_dist, n_sample, perturbation_scale), &inside, face, u,
      v);
}

// Evaluation and access by face/vertex index (checked; a fault gives zeros).
WP_FUNC vec3f mesh_eval_position(launch_ctx* ctx, int32 line, uint64 id, int32 face, float32 u, float32 v) {
  const mesh_t* m = mesh_resolve(ctx, line, id);
  vec3f a, b, c;
  if (m == nullptr || !mesh_triangle(ctx, line, m, face, a, b, c)) return vec3f{};
  return mesh_bary_point(a, b, c, u, v);
}

WP_FUNC vec3f mesh_eval_face_normal(launch_ctx* ctx, int32 line, uint64 id, int32 face) {
  const mesh_t* m = mesh_resolve(ctx, line, id);
  vec3f a, b, c;
  if (m == nullptr || !mesh_triangle(ctx, line, m, face, a, b, c)) return vec3f{};
  return normalize(cross(sub(b, a), sub(c, a)));
}

// Vertex `index`'s velocity: FAULT_OBJECT_INDEX also when the mesh has no
// velocities (count 0).
WP_FUNC bool mesh_velocity_at(launch_ctx* ctx, int32 line, const mesh_t* m, int32 index, vec3f& out) {
  if ((uint32)index >= (uint32)m->num_velocities) {
    record_object_index_fault(ctx, line, OBJECT_MESH, index, m->num_velocities);
    return false;
  }
  out = m->velocities[index];
  return true;
}

WP_FUNC vec3f mesh_eval_velocity(launch_ctx* ctx, int32 line, uint64 id, int32 face, float32 u, float32 v) {
  const mesh_t* m = mesh_resolve(ctx, line, id);
  if (m == nullptr) return vec3f{};
  if (face < 0 || face >= m->num_tris) {
    record_object_index_fault(ctx, line, OBJECT_MESH_FACES, face, m->num_tris);
    return vec3f{};
  }
  vec3f a, b, c;
  if (!mesh_velocity_at(ctx, line, m, m->indices[3 * face], a) ||
      !mesh_velocity_at(ctx, line, m, m->indices[3 * face + 1], b) ||
      !mesh_velocity_at(ctx, line, m, m->indices[3 * face + 2], c))
    return vec3f{};
  return mesh_bary_point(a, b, c, u, v);
}

// The vertex index at slot `index` of the flattened indices (0 <= index <
// 3 * num_tris, else FAULT_OBJECT_INDEX); false after a fault.
WP_FUNC bool mesh_slot(launch_ctx* ctx, int32 line, const mesh_t* m, int32 index, int32& vertex) {
  if (m == nullptr) return false;
  if (index < 0 || (int64)index >= 3 * (int64)m->num_tris) {
    record_object_index_fault(ctx, line, OBJECT_MESH_SLOTS, index, 3 * (int64)m->num_tris);
    return false;
  }
  vertex = m->indices[index];
  return true;
}

WP_FUNC vec3f mesh_get_point(launch_ctx* ctx, int32 line, uint64 id, int32 index) {
  const mesh_t* m = mesh_resolve(ctx, line, id);
  int32 i = 0;
  if (!mesh_slot(ctx, line, m, index, i)) return vec3f{};
  if ((uint32)i >= (uint32)m->num_points) {
    record_object_index_fault(ctx, line, OBJECT_MESH, i, m->num_points);
    return vec3f{};
  }
  return m->points[i];
}

WP_FUNC vec3f mesh_get_velocity(launch_ctx* ctx, int32 line, uint64 id, int32 index) {
  const mesh_t* m = mesh_resolve(ctx, line, id);
  int32 i = 0;
  vec3f out{};
  if (mesh_slot(ctx, line, m, index, i)) mesh_velocity_at(ctx, line, m, i, out);
  return out;
}

// mesh_get_index(id, index): the vertex index at slot `index` of the
// flattened indices (0 <= index < 3 * num_tris).
WP_FUNC int32 mesh_get_index(launch_ctx* ctx, int32 line, uint64 id, int32 index) {
  int32 i = 0;
  return mesh_slot(ctx, line, mesh_resolve(ctx, line, id), index, i) ? i : 0;
}

// Adjoints (reverse mode), called as wp::mesh_adjoint(ctx).f(forward args
// and outputs..., their adjoints..., adj_ret), as Warp 1.19 differentiates
// them: the closest point's barycentrics (u, v) move with the query point
// (the derivative of its Voronoi region's formula: none at a vertex, the
// edge's direction on an edge, the plane's projection inside), and
// mesh_eval_position / _velocity pass the result's adjoint to (u, v). No
// gradient reaches the mesh's points (Warp's neither). The mesh is looked up
// without a fault (the forward already checked it); faces and vertices out
// of range give no gradient.
struct mesh_adjoint {
  launch_ctx* ctx;
  WP_FUNC explicit mesh_adjoint(launch_ctx* c) : ctx(c) {}

  // The vertices of face f, or false.
  WP_FUNC bool triangle(uint64 id, int32 f, vec3f& a, vec3f& b, vec3f& c, bool velocities = false) const {
    int32 found = OBJECT_NONE;
    const mesh_t* m = (const mesh_t*)find_object(ctx, id, OBJECT_MESH, &found);
    if (m == nullptr || (uint32)f >= (uint32)m->num_tris) return false;
    const vec3f* v = velocities ? m->velocities : m->points;
    const uint32 n = (uint32)(velocities ? m->num_velocities : m->num_points);
    const int32 i = m->indices[3 * f], j = m->indices[3 * f + 1], k = m->indices[3 * f + 2];
    if ((uint32)i >= n || (uint32)j >= n || (uint32)k >= n) return false;
    a = v[i];
    b = v[j];
    c = v[k];
    return true;
  }

  // adj_p += adj_u du/dp + adj_v dv/dp for the closest point of (a, b, c)
  // to p, (u, v) its weights of a and b (mesh_closest_on_triangle's regions).
  WP_FUNC static void closest_uv(const vec3f& a, const vec3f& b, const vec3f& c, const vec3f& p, float32 adj_u,
                                 float32 adj_v, vec3f& adj_p) {
    const vec3f ab = sub(b, a), ac = sub(c, a), bc = sub(c, b);
    const float32 d1 = dot(ab, sub(p, a)), d2 = dot(ac, sub(p, a));
    const float32 d3 = dot(ab, sub(p, b)), d4 = dot(ac, sub(p, b));
    const float32 d5 = dot(ab, sub(p, c)), d6 = dot(ac, sub(p, c));
    if ((d1 <= 0.0f && d2 <= 0.0f) || (d3 >= 0.0f && d4 <= d3)) return;  // vertex a or b
    const float32 vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) {  // edge ab: v = s, u = 1 - s, s = ab.(p - a) / |ab|^2
      adj_p = add(adj_p, mul(ab, (adj_v - adj_u) / dot(ab, ab)));
      return;
    }
    if (d6 >= 0.0f && d5 <= d6) return;  // vertex c
    const float32 vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) {  // edge ac: u = 1 - s, v = 0
      adj_p = sub(adj_p, mul(ac, adj_u / dot(ac, ac)));
      return;
    }
    const float32 va = d3 * d6 - d5 * d4;
    if (va <= 0.0f && (d4 - d3) >= 0.0f && (d5 - d6) >= 0.0f) {  // edge bc: u = 0, v = 1 - s
      adj_p = sub(adj_p, mul(bc, adj_v / dot(bc, bc)));
      return;
    }
    // Interior: v = (ac x n).(p - a) / |n|^2, w = (n x ab).(p - a) / |n|^2, u = 1 - v - w.
    const vec3f n = cross(ab, ac);
    const float32 nn = dot(n, n);
    if (!(nn > 0.0f)) return;
    const vec3f dv = mul(cross(ac, n), 1.0f / nn), dw = mul(cross(n, ab), 1.0f / nn);
    adj_p = add(adj_p, add(mul(dv, adj_v - adj_u), mul(dw, -adj_u)));
  }

  // mesh_query_point(id, point, max_dist, inside, face, u, v) (outputs written on a hit).
  template <typename I, typename F, typename R>
  WP_FUNC void query_point(uint64 id, const vec3f& point, float32, float32&, int32& face, float32&, float32&, I&,
                           vec3f& adj_point, F&, float32&, int32&, float32& adj_u, float32& adj_v, R&) const {
    vec3f a, b, c;
    if (triangle(id, face, a, b, c)) closest_uv(a, b, c, point, adj_u, adj_v, adj_point);
  }

  // mesh_query_point_no_sign(id, point, max_dist, face, u, v).
  template <typename I, typename F, typename R>
  WP_FUNC void query_point_no_sign(uint64 id, const vec3f& point, float32, int32& face, float32&, float32&, I&,
                                   vec3f& adj_point, F&, int32&, float32& adj_u, float32& adj_v, R&) const {
    vec3f a, b, c;
    if (triangle(id, face, a, b, c)) closest_uv(a, b, c, point, adj_u, adj_v, adj_point);
  }

  // mesh_query_point_sign_normal(id, point, max_dist, inside, face, u, v, epsilon).
  template <typename E, typename I, typename F, typename G, typename R>
  WP_FUNC void query_point_1(uint64 id, const vec3f& point, float32, float32&, int32& face, float32&, float32&, E,
                             I&, vec3f& adj_point, F&, float32&, int32&, float32& adj_u, float32& adj_v, G&,
                             R&) const {
    vec3f a, b, c;
    if (triangle(id, face, a, b, c)) closest_uv(a, b, c, point, adj_u, adj_v, adj_point);
  }

  // _sign_winding_number (accuracy, threshold) and _sign_parity (n_sample,
  // perturbation_scale): two trailing parameters.
  template <typename E1, typename E2, typename I, typename F, typename G1, typename G2, typename R>
  WP_FUNC void query_point_2(uint64 id, const vec3f& point, float32, float32&, int32& face, float32&, float32&, E1, E2,
                             I&, vec3f& adj_point, F&, float32&, int32&, float32& adj_u, float32& adj_v, G1&, G2&,
                             R&) const {
    vec3f a, b, c;
    if (triangle(id, face, a, b, c)) closest_uv(a, b, c, point, adj_u, adj_v, adj_point);
  }

  // mesh_query_ray(id, start, dir, max_t, t, u, v, sign, normal, face, root):
  // the hit solves u e1 + v e2 - t dir = start - c (e1 = a - c, e2 = b - c),
  // so with M = [e1 e2 -dir], d(u, v, t)/d start = M^-1 and d/d dir =
  // t M^-1: both adjoints are M^-T (adj_u, adj_v, adj_t), the second times t.
  // sign, normal and face do not move with the ray.
  template <typename I, typename F, typename N, typename J, typename K, typename R>
  WP_FUNC void ray(uint64 id, const vec3f&, const vec3f& dir, float32, float32& t, float32&, float32&, float32&,
                   vec3f&, int32& face, int32, I&, vec3f& adj_start, vec3f& adj_dir, F&, float32& adj_t,
                   float32& adj_u, float32& adj_v, float32&, N&, J&, K&, R&) const {
    ray_hit(id, face, dir, t, adj_t, adj_u, adj_v, adj_start, adj_dir);
  }

  // The query-value forms (MeshQueryPoint / MeshQueryRay results, which the
  // adjoint receives after the forward arguments): the fields read move as
  // the out forms' do; adj_ret holds their adjoints. No hit: no gradient.
  // mesh_query_point / _no_sign(id, point, max_dist).
  template <typename I, typename F, typename A>
  WP_FUNC void point_value(uint64 id, const vec3f& point, float32, const mesh_query_point_t& ret, I&,
                           vec3f& adj_point, F&, const A& adj_ret) const {
    vec3f a, b, c;
    if (ret.result && triangle(id, ret.face, a, b, c)) closest_uv(a, b, c, point, adj_ret.u, adj_ret.v, adj_point);
  }
  // _sign_normal(id, point, max_dist, epsilon).
  template <typename E, typename I, typename F, typename G, typename A>
  WP_FUNC void point_value(uint64 id, const vec3f& point, float32 d, E, const mesh_query_point_t& ret, I& adj_id,
                           vec3f& adj_point, F& adj_d, G&, const A& adj_ret) const {
    point_value(id, point, d, ret, adj_id, adj_point, adj_d, adj_ret);
  }
  // _sign_winding_number(..., accuracy, threshold), _sign_parity(..., n_sample, perturbation_scale).
  template <typename E1, typename E2, typename I, typename F, typename G1, typename G2, typename A>
  WP_FUNC void point_value(uint64 id, const vec3f& point, float32 d, E1, E2, const mesh_query_point_t& ret,
                           I& adj_id, vec3f& adj_point, F& adj_d, G1&, G2&, const A& adj_ret) const {
    point_value(id, point, d, ret, adj_id, adj_point, adj_d, adj_ret);
  }
  // mesh_query_furthest_point_no_sign(id, point, min_dist): a vertex, no gradient.
  template <typename I, typename V, typename F, typename A>
  WP_FUNC void furthest_value(uint64, const vec3f&, float32, const mesh_query_point_t&, I&, V&, F&,
                              const A&) const {}
  // mesh_query_ray(id, start, dir, max_t, root).
  template <typename I, typename F, typename K, typename A>
  WP_FUNC void ray_value(uint64 id, const vec3f&, const vec3f& dir, float32, int32, const mesh_query_ray_t& ret, I&,
                         vec3f& adj_start, vec3f& adj_dir, F&, K&, const A& adj_ret) const {
    if (ret.result) ray_hit(id, ret.face, dir, ret.t, adj_ret.t, adj_ret.u, adj_ret.v, adj_start, adj_dir);
  }

  // The ray's hit on face `face` at t: (adj_t, adj_u, adj_v) into the
  // start's and direction's adjoints (above).
  WP_FUNC void ray_hit(uint64 id, int32 face, const vec3f& dir, float32 t, float32 adj_t, float32 adj_u,
                       float32 adj_v, vec3f& adj_start, vec3f& adj_dir) const {
    vec3f a, b, c;
    if (!triangle(id, face, a, b, c)) return;
    const vec3f e1 = sub(a, c), e2 = sub(b, c), nd = mul(dir, -1.0f);
    const float32 det = dot(e1, cross(e2, nd));
    if (!(det != 0.0f)) return;
    const vec3f y = mul(add(add(mul(cross(e2, nd), adj_u), mul(cross(nd, e1), adj_v)), mul(cross(e1, e2), adj_t)),
                        1.0f / det);
    adj_start = add(adj_start, y);
    adj_dir = add(adj_dir, mul(y, t));
  }

  // mesh_query_furthest_point_no_sign(id, point, min_dist, face, u, v): the
  // furthest point is a vertex, whose weights do not move: no gradient.
  template <typename I, typename F, typename R>
  WP_FUNC void furthest_point(uint64, const vec3f&, float32, int32&, float32&, float32&, I&, vec3f&, F&, int32&,
                              float32&, float32&, R&) const {}

  // mesh_eval_position / _velocity(id, face, u, v): adj_u += (p - r).adj, adj_v += (q - r).adj.
  template <typename I, typename J>
  WP_FUNC void eval(uint64 id, int32 face, float32, float32, I&, J&, float32& adj_u, float32& adj_v,
                    const vec3f& adj_ret, bool velocities) const {
    vec3f a, b, c;
    if (!triangle(id, face, a, b, c, velocities)) return;
    adj_u += dot(sub(a, c), adj_ret);
    adj_v += dot(sub(b, c), adj_ret);
  }
  template <typename I, typename J>
  WP_FUNC void eval_position(uint64 id, int32 face, float32 u, float32 v, I& adj_id, J& adj_face, float32& adj_u,
                             float32& adj_v, const vec3f& adj_ret) const {
    eval(id, face, u, v, adj_id, adj_face, adj_u, adj_v, adj_ret, false);
  }
  template <typename I, typename J>
  WP_FUNC void eval_velocity(uint64 id, int32 face, float32 u, float32 v, I& adj_id, J& adj_face, float32& adj_u,
                             float32& adj_v, const vec3f& adj_ret) const {
    eval(id, face, u, v, adj_id, adj_face, adj_u, adj_v, adj_ret, true);
  }
};

// mesh_query_aabb(id, low, high): the faces whose boxes overlap [low,
// high], advanced by mesh_query_next (a BVH AABB query of the mesh's tree).
WP_FUNC bvh_query_t mesh_query_aabb(launch_ctx* ctx, int32 line, uint64 id, const vec3f& low, const vec3f& high) {
  const mesh_t* m = mesh_resolve(ctx, line, id);
  bvh_query_t q = bvh_query_start(ctx, line, m == nullptr ? nullptr : &m->bvh, BVH_QUERY_AABB, -1, OBJECT_MESH);
  q.a = low;
  q.b = high;
  return q;
}

// mesh_query_sphere(id, center, radius): the faces within `radius` of
// `center` (closed; a negative radius counts as 0), by the distance to
// each face's closest point; advanced by mesh_query_next.
WP_FUNC bvh_query_t mesh_query_sphere(launch_ctx* ctx, int32 line, uint64 id, const vec3f& center, float32 radius) {
  const mesh_t* m = mesh_resolve(ctx, line, id);
  bvh_query_t q =
      bvh_query_start(ctx, line, m == nullptr ? nullptr : &m->bvh, BVH_QUERY_MESH_SPHERE, -1, OBJECT_MESH);
  q.a = center;
  q.b = center;
  q.radius = radius > 0.0f ? radius : 0.0f;
  q.radius_sq = q.radius * q.radius;
  return q;
}

// mesh_query_next(query, index) (also spelled mesh_query_aabb_next): the
// next face of a mesh box or sphere query into `index`; false (index
// unchanged) when exhausted. Dispatches on the kind the query keeps, so an
// erased MeshQuery advances like the query it holds.
WP_FUNC bool mesh_query_next(bvh_query_t& q, int32& index) {
  for (;;) {
    int32 face = 0;
    if (!bvh_query_next(q, face, 3.402823466e+38f)) return false;
    if (q.kind == BVH_QUERY_MESH_SPHERE) {
      const mesh_t* m = (const mesh_t*)q.bvh;  // made by mesh_query_sphere: the tree of a mesh
      vec3f a, b, c;
      if (!mesh_triangle(q.ctx, q.line, m, face, a, b, c)) {
        q.bvh = nullptr;
        return false;
      }
      float32 u, v;
      mesh_closest_on_triangle(a, b, c, q.a, u, v);
      if (!(length_sq(sub(mesh_bary_point(a, b, c, u, v), q.a)) <= q.radius_sq)) continue;
    }
    index = face;
    return true;
  }
}

WP_FUNC bool mesh_query_aabb_next(bvh_query_t& q, int32& index) { return mesh_query_next(q, index); }

// Warp's Mesh value of mesh_get(id): the mesh's arrays as 1-d arrays
// (points, velocities: none is an empty array; indices: 3 per triangle),
// accessed with the bounds checks of any array.
struct mesh_view_t {
  array_t<vec3f> points;
  array_t<vec3f> velocities;
  array_t<int32> indices;
};
static_assert(sizeof(mesh_view_t) == 192, "mesh_view_t size");

// A 1-d array over n elements (clamped to int32 extents: never more than
// the buffer holds).
template <typename T>
WP_FUNC array_t<T> mesh_array_1d(const T* data, int64 n) {
  array_t<T> a{};
  a.data = (T*)data;
  a.shape[0] = data == nullptr || n < 0 ? 0 : (int32)(n < 0x7fffffff ? n : 0x7fffffff);
  a.ndim = 1;
  a.strides[0] = (int64)sizeof(T);
  return a;
}

// mesh_get(id) -> Mesh (empty arrays after a fault).
WP_FUNC mesh_view_t mesh_get(launch_ctx* ctx, int32 line, uint64 id) {
  mesh_view_t v{};
  const mesh_t* m = mesh_resolve(ctx, line, id);
  if (m == nullptr) return v;
  v.points = mesh_array_1d(m->points, m->num_points);
  v.velocities = mesh_array_1d(m->velocities, m->num_velocities);
  v.indices = mesh_array_1d(m->indices, 3 * (int64)m->num_tris);
  return v;
}

// The gradients of mesh_get(id)'s arrays, the adjoint of its value that the
// replay of an adjoint sets (as an array parameter's adjoint is its gradient
// array): points.grad and velocities.grad where the mesh has them, empty
// arrays otherwise (nothing flows); indices have none. The forward checked
// the id: an unknown one gives empty arrays without a fault.
WP_FUNC mesh_view_t mesh_get_grads(launch_ctx* ctx, uint64 id) {
  mesh_view_t v{};
  int32 found = OBJECT_NONE;
  const mesh_t* m = (const mesh_t*)find_object(ctx, id, OBJECT_MESH, &found);
  if (m == nullptr) return v;
  v.points = mesh_array_1d((const vec3f*)m->points_grad, m->num_points);
  v.velocities = mesh_array_1d((const vec3f*)m->velocities_grad, m->num_velocities);
  return v;
}

// mesh_get_group_root(id, group): the root of the subtree of the faces of
// `group` (grouped meshes; all faces are of group 0 otherwise), -1 for none.
WP_FUNC int32 mesh_get_group_root(launch_ctx* ctx, int32 line, uint64 id, int32 group) {
  const mesh_t* m = mesh_resolve(ctx, line, id);
  return bvh_group_root(m == nullptr ? nullptr : &m->bvh, group);
}

// mesh_get_bvh(id): the id of the mesh's tree, which bvh_query_* take (its
// items are the faces); 0 after a fault.
WP_FUNC uint64 mesh_get_bvh(launch_ctx* ctx, int32 line, uint64 id) {
  const mesh_t* m = mesh_resolve(ctx, line, id);
  return m == nullptr ? 0 : m->bvh_id;
}

}  // namespace wp

// warpd device runtime: bounding volume hierarchies and their queries
// (Warp's wp.Bvh; the tree of a wp.Mesh too).
//
// A BVH is a binary tree of axis-aligned boxes over `num_items` items, each
// item a box (item_lowers[i], item_uppers[i]). The server builds it
// (runtime/objects/bvh_build.h: binned SAH or median splits on the CPU);
// the layout is one an LBVH build (Karras) on CUDA can produce as well:
// nodes in one array, any order, each node either internal (two child node
// indices) or a leaf (a range of `primitives`, the item indices in leaf
// order), with a parent array for bottom-up refits.
//
// Kernels name a BVH by its id, resolved through the launch's object table
// (objects.h) when a query is made: an unknown id records
// FAULT_UNKNOWN_OBJECT and the query yields nothing. Traversal checks every
// node index, leaf range and item index it reads against the tree's own
// counts, and uses a bounded stack (the builders keep the depth below
// BVH_STACK_SIZE), so no input reads outside the tree's buffers.
//
// Semantics follow Warp 1.19: AABB queries report items whose boxes overlap
// the query box (closed); ray queries those whose boxes the ray (start,
// dir; not normalized) meets at a parameter t with t < max_dist (Warp's
// slab test, t in multiples of |dir|); sphere queries boxes within radius
// of the center (closed); capsule queries boxes inflated by radius that the
// segment meets with t <= max_dist (the robust slab test).
#pragma once

#include "warpd/native/core.h"
#include "warpd/native/launch.h"
#include "warpd/native/objects.h"
#include "warpd/native/scalar.h"
#include "warpd/native/vec.h"

namespace wp {

// The deepest tree the builders make (root at depth 0) is below this, so
// a traversal never holds more than BVH_STACK_SIZE pending nodes.
constexpr int32 BVH_STACK_SIZE = 64;

// One node: 32 bytes. An internal node's `left` and `right` are child node
// indices (>= 0); a leaf's are the range [left, ~right) of `primitives`
// (right < 0 marks the leaf).
struct bvh_node_t {
  vec3f lower;
  int32 left;
  vec3f upper;
  int32 right;
};
static_assert(sizeof(bvh_node_t) == 32, "bvh_node_t layout");

WP_FUNC bool bvh_node_is_leaf(const bvh_node_t& n) { return n.right < 0; }
WP_FUNC int32 bvh_leaf_end(const bvh_node_t& n) { return ~n.right; }

// The descriptor of a tree (the object table's data for OBJECT_BVH; a
// mesh's descriptor embeds one). Written by builds and refits, in stream
// order; read by the launches of the same stream.
struct bvh_t {
  const bvh_node_t* nodes;   // num_nodes
  const int32* parents;      // num_nodes: each node's parent, -1 for the root
  const int32* primitives;   // num_items: item indices in leaf order
  const vec3f* item_lowers;  // num_items
  const vec3f* item_uppers;  // num_items
  int32 num_nodes;
  int32 num_items;
  int32 root;       // -1 while the tree has no items (or before the first build)
  int32 max_depth;  // < BVH_STACK_SIZE
  // Grouped trees (Warp's groups=): the distinct group ids in increasing
  // order and the node whose subtree holds exactly each group's items;
  // null and 0 for an ungrouped tree.
  const int32* group_ids;    // num_groups
  const int32* group_roots;  // num_groups
  int32 num_groups;
  int32 reserved;
};
static_assert(sizeof(bvh_t) == 80, "bvh_t layout");

enum bvh_query_kind : int32 {
  BVH_QUERY_AABB = 0,
  BVH_QUERY_RAY = 1,
  BVH_QUERY_CAPSULE = 2,
  BVH_QUERY_SPHERE = 3,
  // A mesh's sphere query (mesh_query_sphere): nodes and boxes tested as
  // BVH_QUERY_SPHERE, then each face exactly (mesh.h's mesh_query_next).
  BVH_QUERY_MESH_SPHERE = 4,
};

// Warp's min/max of the slab tests: C's fmin/fmax (a NaN operand is
// ignored), so an axis-parallel ray on a box's face plane, whose slab gives
// 0 * inf = NaN, misses that box as in Warp.
WP_FUNC float32 bvh_min(float32 a, float32 b) { return min(a, b); }
WP_FUNC float32 bvh_max(float32 a, float32 b) { return max(a, b); }

WP_FUNC bool bvh_overlap_aabb(const vec3f& a_lower, const vec3f& a_upper, const vec3f& b_lower,
                              const vec3f& b_upper) {
  return !(a_lower.c[0] > b_upper.c[0] || a_lower.c[1] > b_upper.c[1] || a_lower.c[2] > b_upper.c[2] ||
           a_upper.c[0] < b_lower.c[0] || a_upper.c[1] < b_lower.c[1] || a_upper.c[2] < b_lower.c[2]);
}

// The slab test of a ray (start, 1 / dir) against a box: true when the ray
// meets it at some t >= 0 (or starts inside); *t gets the entry parameter.
WP_FUNC bool bvh_ray_box(const vec3f& start, const vec3f& rcp_dir, const vec3f& lower, const vec3f& upper,
                         float32* t) {
  float32 lmin, lmax;
  {
    const float32 l1 = (lower.c[0] - start.c[0]) * rcp_dir.c[0];
    const float32 l2 = (upper.c[0] - start.c[0]) * rcp_dir.c[0];
    lmin = bvh_min(l1, l2);
    lmax = bvh_max(l1, l2);
  }
  for (int32 i = 1; i < 3; ++i) {
    const float32 l1 = (lower.c[i] - start.c[i]) * rcp_dir.c[i];
    const float32 l2 = (upper.c[i] - start.c[i]) * rcp_dir.c[i];
    lmin = bvh_max(bvh_min(l1, l2), lmin);
    lmax = bvh_min(bvh_max(l1, l2), lmax);
  }
  const bool hit = lmax >= 0.0f && lmax >= lmin;
  if (hit) *t = lmin;
  return hit;
}

// The slab test with axis-parallel directions handled (a zero component
// constrains by the start's coordinate only).
WP_FUNC bool bvh_ray_box_robust(const vec3f& start, const vec3f& dir, const vec3f& rcp_dir, const vec3f& lower,
                                const vec3f& upper, float32* t) {
  float32 lmin = -3.402823466e+38f, lmax = 3.402823466e+38f;
  for (int32 i = 0; i < 3; ++i) {
    if (dir.c[i] == 0.0f) {
      if (start.c[i] < lower.c[i] || start.c[i] > upper.c[i]) return false;
    } else {
      const float32 l1 = (lower.c[i] - start.c[i]) * rcp_dir.c[i];
      const float32 l2 = (upper.c[i] - start.c[i]) * rcp_dir.c[i];
      lmin = bvh_max(bvh_min(l1, l2), lmin);
      lmax = bvh_min(bvh_max(l1, l2), lmax);
    }
  }
  const bool hit = lmax >= 0.0f && lmax >= lmin;
  if (hit) *t = lmin;
  return hit;
}

// Squared distance from `p` to the box, <= r2.
WP_FUNC bool bvh_sphere_box(const vec3f& p, float32 r2, const vec3f& lower, const vec3f& upper) {
  float32 d2 = 0.0f;
  for (int32 i = 0; i < 3; ++i) {
    const float32 d = bvh_max(bvh_max(lower.c[i] - p.c[i], p.c[i] - upper.c[i]), 0.0f);
    d2 += d * d;
  }
  return d2 <= r2;
}

// The traversal state of one query (Warp's BvhQuery): a value of kernels
// and functions only, never an argument or array element. Zero-initialized
// (bvh null) it yields nothing.
struct bvh_query_t {
  const bvh_t* bvh;
  launch_ctx* ctx;  // for the fault of a malformed tree
  int32 line;
  int32 kind;       // bvh_query_kind
  int32 count;      // pending nodes in stack
  int32 prim_cur;   // the leaf being enumerated: [prim_cur, prim_end) of primitives
  int32 prim_end;
  int32 bounds_nr;  // the last item reported
  vec3f a;          // AABB: lower; ray/capsule: start; sphere: center
  vec3f b;          // AABB: upper; ray/capsule: 1 / dir
  vec3f dir;        // capsule: dir
  float32 radius;   // capsule/sphere, >= 0
  float32 radius_sq;
  int32 stack[BVH_STACK_SIZE];
};
// The compiler's type table sizes it (common/types/type.cc).
static_assert(sizeof(bvh_query_t) == 344, "bvh_query_t size");

// The query's test of a box (a node's or an item's).
WP_FUNC bool bvh_query_test(const bvh_query_t& q, const vec3f& lower, const vec3f& upper, float32 max_dist) {
  switch (q.kind) {
    case BVH_QUERY_RAY: {
      float32 t = 3.402823466e+38f;
      return bvh_ray_box(q.a, q.b, lower, upper, &t) && !(t >= max_dist);
    }
    case BVH_QUERY_CAPSULE: {
      float32 t = 3.402823466e+38f;
      const vec3f r = vec_splat<3, float32>(q.radius);
      return bvh_ray_box_robust(q.a, q.dir, q.b, sub(lower, r), add(upper, r), &t) && !(t > max_dist);
    }
    case BVH_QUERY_SPHERE:
    case BVH_QUERY_MESH_SPHERE: return bvh_sphere_box(q.a, q.radius_sq, lower, upper);
    default: return bvh_overlap_aabb(q.a, q.b, lower, upper);
  }
}

// Starts a query of `tree` (already resolved) at `root` (-1: the tree's
// root; else a node index, FAULT_OBJECT_INDEX outside [0, num_nodes)).
WP_FUNC bvh_query_t bvh_query_start(launch_ctx* ctx, int32 line, const bvh_t* tree, int32 kind, int32 root,
                                    int32 object_kind) {
  bvh_query_t q{};
  q.bounds_nr = -1;
  if (tree == nullptr) return q;
  q.ctx = ctx;
  q.line = line;
  q.kind = kind;
  const int32 start = root == -1 ? tree->root : root;
  if (root != -1 && (uint32)root >= (uint32)tree->num_nodes) {
    record_object_index_fault(ctx, line, object_kind, root, tree->num_nodes);
    return q;
  }
  q.bvh = tree;
  if (start >= 0 && start < tree->num_nodes && tree->num_items > 0) {
    q.stack[0] = start;
    q.count = 1;
  }
  return q;
}

WP_FUNC const bvh_t* bvh_resolve(launch_ctx* ctx, int32 line, uint64 id) {
  return (const bvh_t*)resolve_object(ctx, line, id, OBJECT_BVH);
}

// The root of `group`'s subtree in tree t: the node whose subtree holds
// exactly the items of that group (grouped trees); an ungrouped tree's
// items are all of group 0 (its root). -1 when no item is of `group`.
WP_FUNC int32 bvh_group_root(const bvh_t* t, int32 group) {
  if (t == nullptr || t->num_nodes <= 0 || t->root < 0) return -1;
  if (t->group_ids == nullptr) return group == 0 ? t->root : -1;
  int32 lo = 0, hi = t->num_groups;
  while (lo < hi) {
    const int32 mid = lo + (hi - lo) / 2;
    if (t->group_ids[mid] < group) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo >= t->num_groups || t->group_ids[lo] != group) return -1;
  const int32 r = t->group_roots[lo];
  return (uint32)r < (uint32)t->num_nodes ? r : -1;
}

// bvh_get_group_root(id, group): -1 after a fault too.
WP_FUNC int32 bvh_get_group_root(launch_ctx* ctx, int32 line, uint64 id, int32 group) {
  return bvh_group_root(bvh_resolve(ctx, line, id), group);
}

// bvh_query_aabb(id, low, high, root = -1)
WP_FUNC bvh_query_t bvh_query_aabb(launch_ctx* ctx, int32 line, uint64 id, const vec3f& low, const vec3f& high,
                                   int32 root) {
  bvh_query_t q = bvh_query_start(ctx, line, bvh_resolve(ctx, line, id), BVH_QUERY_AABB, root, OBJECT_BVH);
  q.a = low;
  q.b = high;
  return q;
}

WP_FUNC vec3f bvh_rcp(const vec3f& d) { return vec3f{{1.0f / d.c[0], 1.0f / d.c[1], 1.0f / d.c[2]}}; }

// bvh_query_ray(id, start, dir, root = -1)
WP_FUNC bvh_query_t bvh_query_ray(launch_ctx* ctx, int32 line, uint64 id, const vec3f& start, const vec3f& dir,
                                  int32 root) {
  bvh_query_t q = bvh_query_start(ctx, line, bvh_resolve(ctx, line, id), BVH_QUERY_RAY, root, OBJECT_BVH);
  q.a = start;
  q.b = bvh_rcp(dir);
  q.dir = dir;
  return q;
}

// bvh_query_capsule(id, start, dir, radius, root = -1): negative radii clamp to 0.
WP_FUNC bvh_query_t bvh_query_capsule(launch_ctx* ctx, int32 line, uint64 id, const vec3f& start, const vec3f& dir,
                                      float32 radius, int32 root) {
  bvh_query_t q = bvh_query_start(ctx, line, bvh_resolve(ctx, line, id), BVH_QUERY_CAPSULE, root, OBJECT_BVH);
  q.a = start;
  q.b = bvh_rcp(dir);
  q.dir = dir;
  q.radius = radius > 0.0f ? radius : 0.0f;
  q.radius_sq = q.radius * q.radius;
  return q;
}

// bvh_query_sphere(id, center, radius, root = -1): negative radii clamp to 0.
WP_FUNC bvh_query_t bvh_query_sphere(launch_ctx* ctx, int32 line, uint64 id, const vec3f& center, float32 radius,
                                     int32 root) {
  bvh_query_t q = bvh_query_start(ctx, line, bvh_resolve(ctx, line, id), BVH_QUERY_SPHERE, root, OBJECT_BVH);
  q.a = center;
  q.b = center;
  q.radius = radius > 0.0f ? radius : 0.0f;
  q.radius_sq = q.radius * q.radius;
  return q;
}

// Stops the query after recording that the tree broke an invariant (a
// node or item index out of range, a stack overflow): never expected of
// the server's builds, checked so that no tree reads out of bounds.
WP_FUNC bool bvh_query_corrupt(bvh_query_t& q, int64 index, int64 count) {
  record_object_index_fault(q.ctx, q.line, OBJECT_BVH, index, count);
  q.bvh = nullptr;
  q.count = 0;
  q.prim_cur = q.prim_end = 0;
  return false;
}

// bvh_query_next(query, index, max_dist = inf): the next item whose box the
// query meets into `index`; false (index unchanged) when exhausted.
// max_dist bounds ray and capsule queries (in multiples of |dir|); it may
// only shrink during a query.
WP_FUNC bool bvh_query_next(bvh_query_t& q, int32& index, float32 max_dist) {
  const bvh_t* t = q.bvh;
  if (t == nullptr) return false;
  for (;;) {
    if (q.prim_cur < q.prim_end) {
      const int32 k = q.prim_cur++;
      if ((uint32)k >= (uint32)t->num_items) return bvh_query_corrupt(q, k, t->num_items);
      const int32 item = t->primitives[k];
      if ((uint32)item >= (uint32)t->num_items) return bvh_query_corrupt(q, item, t->num_items);
      if (!bvh_query_test(q, t->item_lowers[item], t->item_uppers[item], max_dist)) continue;
      index = item;
      q.bounds_nr = item;
      return true;
    }
    if (q.count <= 0) return false;
    const int32 n = q.stack[--q.count];
    if ((uint32)n >= (uint32)t->num_nodes) return bvh_query_corrupt(q, n, t->num_nodes);
    const bvh_node_t& node = t->nodes[n];
    if (!bvh_query_test(q, node.lower, node.upper, max_dist)) continue;
    if (bvh_node_is_leaf(node)) {
      const int32 begin = node.left, end = bvh_leaf_end(node);
      if (begin < 0 || end < begin || end > t->num_items) return bvh_query_corrupt(q, end, t->num_items);
      if (end - begin == 1) {
        // The leaf's box is its item's box, which just passed.
        const int32 item = t->primitives[begin];
        if ((uint32)item >= (uint32)t->num_items) return bvh_query_corrupt(q, item, t->num_items);
        index = item;
        q.bounds_nr = item;
        return true;
      }
      q.prim_cur = begin;
      q.prim_end = end;
    } else {
      if (q.count + 2 > BVH_STACK_SIZE) return bvh_query_corrupt(q, q.count + 2, BVH_STACK_SIZE);
      q.stack[q.count++] = node.left;
      q.stack[q.count++] = node.right;
    }
  }
}

}  // namespace wp

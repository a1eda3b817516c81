// The builtin table: queries of server-side geometry objects (hash grids,
// BVHs).
//
// Objects are named by uint64 ids that every query resolves through the
// launch's object table (runtime/native/warpd/native/objects.h), so the
// spellings pass the launch context and the call's line (`$L`) for the
// fault an unknown id records. None is differentiable (as in Warp 1.19).
#include "compiler/builtins/table_builder.h"

namespace warpd::builtins::internal {

void AddGeometry(Builder& b) {
  b.Group("Geometry", "warpd/native/hash_grid.h");
  for (const char* t : {"float32", "float16", "float64"}) {
    const std::string query = std::string("hash_grid_query(") + t + ")";
    const std::string head = std::string("id: uint64, point: vec(3, ") + t + "), max_dist: " + t;
    b.Add("hash_grid_query", head, query).NoDiff().Cpp("wp::hash_grid_query(ctx, $L, $0, $1, $2)");
    b.Add("hash_grid_query", head + ", group: int32", query).NoDiff().Cpp("wp::hash_grid_query(ctx, $L, $0, $1, $2, $3)");
  }
  for (const char* t : {"float32", "float16", "float64"}) {
    // The query advances in place; `index` receives the next point.
    b.Add("hash_grid_query_next", std::string("query: out hash_grid_query(") + t + "), index: out int32", "bool")
        .NoDiff()
        .Cpp("wp::hash_grid_query_next");
  }
  b.Add("hash_grid_point_id", "id: uint64, index: int32", "int32").NoDiff().Cpp("wp::hash_grid_point_id(ctx, $L, $0, $1)");

  // BVH queries: each builtin makes a query of its own kind (Warp's
  // _BvhQueryAabb, ...), and bvh_query_next takes each kind; `root` -1 is
  // the tree's root.
  b.Group("Geometry", "warpd/native/bvh.h");
  const std::string v3 = "vec(3, float32)";
  b.Add("bvh_query_aabb", "id: uint64, low: " + v3 + ", high: " + v3 + ", root: int32 = -1", "bvh_query_aabb(float32)")
      .NoDiff()
      .Cpp("wp::bvh_query_aabb(ctx, $L, $0, $1, $2, $3)");
  b.Add("bvh_query_ray", "id: uint64, start: " + v3 + ", dir: " + v3 + ", root: int32 = -1", "bvh_query_ray(float32)")
      .NoDiff()
      .Cpp("wp::bvh_query_ray(ctx, $L, $0, $1, $2, $3)");
  b.Add("bvh_query_capsule",
        "id: uint64, start: " + v3 + ", dir: " + v3 + ", radius: float32, root: int32 = -1",
        "bvh_query_capsule(float32)")
      .NoDiff()
      .Cpp("wp::bvh_query_capsule(ctx, $L, $0, $1, $2, $3, $4)");
  b.Add("bvh_query_sphere", "id: uint64, center: " + v3 + ", radius: float32, root: int32 = -1",
        "bvh_query_sphere(float32)")
      .NoDiff()
      .Cpp("wp::bvh_query_sphere(ctx, $L, $0, $1, $2, $3)");
  for (const char* kind : {"bvh_query_aabb", "bvh_query_ray", "bvh_query_capsule", "bvh_query_sphere"}) {
    // The query advances in place; `index` receives the next item.
    b.Add("bvh_query_next",
          std::string("query: out ") + kind + "(float32), index: out int32, max_dist: float32 = inf", "bool")
        .NoDiff()
        .Cpp("wp::bvh_query_next");
  }
}

}  // namespace warpd::builtins::internal

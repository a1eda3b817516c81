// The builtin table: queries of server-side geometry objects (hash grids,
// BVHs, meshes).
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

  // Intersection helpers (intersect.h): no object, no faults.
  b.Group("Geometry", "warpd/native/intersect.h");
  for (const char* t : {"float32", "float64"}) {
    const std::string v = std::string("vec(3, ") + t + ")";
    b.Add("intersect_tri_tri",
          "v0: " + v + ", v1: " + v + ", v2: " + v + ", u0: " + v + ", u1: " + v + ", u2: " + v, "int32")
        .NoDiff()
        .Cpp("wp::intersect_tri_tri");
  }
  b.Add("closest_point_edge_edge",
        "p1: vec(3, float32), q1: vec(3, float32), p2: vec(3, float32), q2: vec(3, float32), epsilon: float32",
        "vec(3, float32)")
      .Diff()
      .Cpp("wp::closest_point_edge_edge")
      .Adj("wp::adj_closest_point_edge_edge");

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
  // bvh_query is Warp's erased BvhQuery (a variable given queries of two
  // kinds, a parameter annotated wp.BvhQuery): the same native query.
  for (const char* kind : {"bvh_query_aabb", "bvh_query_ray", "bvh_query_capsule", "bvh_query_sphere", "bvh_query"}) {
    // The query advances in place; `index` receives the next item.
    b.Add("bvh_query_next",
          std::string("query: out ") + kind + "(float32), index: out int32, max_dist: float32 = inf", "bool")
        .NoDiff()
        .Cpp("wp::bvh_query_next");
  }

  b.Add("bvh_get_group_root", "id: uint64, group: int32", "int32")
      .NoDiff()
      .Cpp("wp::bvh_get_group_root(ctx, $L, $0, $1)");

  // Mesh queries (mesh.h): results as MeshQueryPoint / MeshQueryRay values
  // whose fields kernels read, and Warp's out-parameter forms (hidden in
  // Warp 1.19's reference, used by older code such as its ray-cast example).
  // The point and ray queries (both forms) and mesh_eval_position /
  // _velocity are differentiable (wp::mesh_adjoint), as in Warp; the value
  // forms' adjoints take the forward result (its face, t).
  b.Group("Geometry", "warpd/native/mesh.h");
  const std::string mid = "id: uint64, point: " + v3 + ", ";
  b.Add("mesh_query_point", mid + "max_dist: float32", "mesh_query_point(float32)")
      .Diff()
      .Cpp("wp::mesh_query_point(ctx, $L, $0, $1, $2)")
      .AdjWithResult("wp::mesh_adjoint(ctx).point_value");
  b.Add("mesh_query_point", mid + "max_dist: float32, inside: out float32, face: out int32, bary_u: out float32, "
        "bary_v: out float32", "bool")
      .Diff()
      .Cpp("wp::mesh_query_point(ctx, $L, $0, $1, $2, $3, $4, $5, $6)")
      .Adj("wp::mesh_adjoint(ctx).query_point");
  b.Add("mesh_query_point_no_sign", mid + "max_dist: float32", "mesh_query_point(float32)")
      .Diff()
      .Cpp("wp::mesh_query_point_no_sign(ctx, $L, $0, $1, $2)")
      .AdjWithResult("wp::mesh_adjoint(ctx).point_value");
  b.Add("mesh_query_point_no_sign",
        mid + "max_dist: float32, face: out int32, bary_u: out float32, bary_v: out float32", "bool")
      .Diff()
      .Cpp("wp::mesh_query_point_no_sign(ctx, $L, $0, $1, $2, $3, $4, $5)")
      .Adj("wp::mesh_adjoint(ctx).query_point_no_sign");
  b.Add("mesh_query_furthest_point_no_sign", mid + "min_dist: float32", "mesh_query_point(float32)")
      .Diff()
      .Cpp("wp::mesh_query_furthest_point_no_sign(ctx, $L, $0, $1, $2)")
      .AdjWithResult("wp::mesh_adjoint(ctx).furthest_value");
  b.Add("mesh_query_furthest_point_no_sign",
        mid + "min_dist: float32, face: out int32, bary_u: out float32, bary_v: out float32", "bool")
      .Diff()
      .Cpp("wp::mesh_query_furthest_point_no_sign(ctx, $L, $0, $1, $2, $3, $4, $5)")
      .Adj("wp::mesh_adjoint(ctx).furthest_point");
  const std::string signed_out = "max_dist: float32, inside: out float32, face: out int32, bary_u: out float32, "
                                 "bary_v: out float32, ";
  b.Add("mesh_query_point_sign_normal", mid + "max_dist: float32, epsilon: float32 = 1.0e-3",
        "mesh_query_point(float32)")
      .Diff()
      .Cpp("wp::mesh_query_point_sign_normal(ctx, $L, $0, $1, $2, $3)")
      .AdjWithResult("wp::mesh_adjoint(ctx).point_value");
  b.Add("mesh_query_point_sign_normal", mid + signed_out + "epsilon: float32 = 1.0e-3", "bool")
      .Diff()
      .Cpp("wp::mesh_query_point_sign_normal(ctx, $L, $0, $1, $2, $3, $4, $5, $6, $7)")
      .Adj("wp::mesh_adjoint(ctx).query_point_1");
  b.Add("mesh_query_point_sign_winding_number",
        mid + "max_dist: float32, accuracy: float32 = 2.0, threshold: float32 = 0.5", "mesh_query_point(float32)")
      .Diff()
      .Cpp("wp::mesh_query_point_sign_winding_number(ctx, $L, $0, $1, $2, $3, $4)")
      .AdjWithResult("wp::mesh_adjoint(ctx).point_value");
  b.Add("mesh_query_point_sign_winding_number",
        mid + signed_out + "accuracy: float32 = 2.0, threshold: float32 = 0.5", "bool")
      .Diff()
      .Cpp("wp::mesh_query_point_sign_winding_number(ctx, $L, $0, $1, $2, $3, $4, $5, $6, $7, $8)")
      .Adj("wp::mesh_adjoint(ctx).query_point_2");
  b.Add("mesh_query_point_sign_parity",
        mid + "max_dist: float32, n_sample: int32 = 1, perturbation_scale: float32 = 0.1",
        "mesh_query_point(float32)")
      .Diff()
      .Cpp("wp::mesh_query_point_sign_parity(ctx, $L, $0, $1, $2, $3, $4)")
      .AdjWithResult("wp::mesh_adjoint(ctx).point_value");
  b.Add("mesh_query_point_sign_parity",
        mid + signed_out + "n_sample: int32 = 1, perturbation_scale: float32 = 0.1", "bool")
      .Diff()
      .Cpp("wp::mesh_query_point_sign_parity(ctx, $L, $0, $1, $2, $3, $4, $5, $6, $7, $8)")
      .Adj("wp::mesh_adjoint(ctx).query_point_2");
  const std::string ray = "id: uint64, start: " + v3 + ", dir: " + v3 + ", max_t: float32, ";
  b.Add("mesh_query_ray", ray + "root: int32 = -1", "mesh_query_ray(float32)")
      .Diff()
      .Cpp("wp::mesh_query_ray(ctx, $L, $0, $1, $2, $3, $4)")
      .AdjWithResult("wp::mesh_adjoint(ctx).ray_value");
  b.Add("mesh_query_ray", ray + "t: out float32, bary_u: out float32, bary_v: out float32, sign: out float32, "
        "normal: out " + v3 + ", face: out int32, root: int32 = -1", "bool")
      .Diff()
      .Cpp("wp::mesh_query_ray(ctx, $L, $*)")
      .Adj("wp::mesh_adjoint(ctx).ray");
  b.Add("mesh_query_ray_anyhit", ray + "root: int32 = -1", "bool")
      .NoDiff()
      .Cpp("wp::mesh_query_ray_anyhit(ctx, $L, $0, $1, $2, $3, $4)");
  b.Add("mesh_query_ray_count_intersections", "id: uint64, start: " + v3 + ", dir: " + v3 + ", root: int32 = -1",
        "int32")
      .NoDiff()
      .Cpp("wp::mesh_query_ray_count_intersections(ctx, $L, $0, $1, $2, $3)");
  b.Add("mesh_query_aabb", "id: uint64, low: " + v3 + ", high: " + v3, "mesh_query_aabb(float32)")
      .NoDiff()
      .Cpp("wp::mesh_query_aabb(ctx, $L, $0, $1, $2)");
  b.Add("mesh_query_sphere", "id: uint64, center: " + v3 + ", radius: float32", "mesh_query_sphere(float32)")
      .NoDiff()
      .Cpp("wp::mesh_query_sphere(ctx, $L, $0, $1, $2)");
  // mesh_query_next and its older name advance a box or sphere query, or
  // Warp's erased MeshQuery (mesh_query), in place; `index` gets the face.
  for (const char* next : {"mesh_query_next", "mesh_query_aabb_next"}) {
    for (const char* kind : {"mesh_query_aabb", "mesh_query_sphere", "mesh_query"}) {
      b.Add(next, std::string("query: out ") + kind + "(float32), index: out int32", "bool")
          .NoDiff()
          .Cpp("wp::mesh_query_next");
    }
  }
  // Not differentiable itself (as in Warp), but reads through its arrays
  // reach the gradients of the mesh's points and velocities.
  b.Add("mesh_get", "id: uint64", "mesh(float32)")
      .NoDiff()
      .Cpp("wp::mesh_get(ctx, $L, $0)")
      .GradArrays("wp::mesh_get_grads(ctx, $0)");
  b.Add("mesh_get_bvh", "id: uint64", "uint64").NoDiff().Cpp("wp::mesh_get_bvh(ctx, $L, $0)");
  b.Add("mesh_get_group_root", "id: uint64, group: int32", "int32")
      .NoDiff()
      .Cpp("wp::mesh_get_group_root(ctx, $L, $0, $1)");
  const std::string eval = "id: uint64, face: int32, bary_u: float32, bary_v: float32";
  b.Add("mesh_eval_position", eval, v3)
      .Diff()
      .Cpp("wp::mesh_eval_position(ctx, $L, $0, $1, $2, $3)")
      .Adj("wp::mesh_adjoint(ctx).eval_position");
  b.Add("mesh_eval_velocity", eval, v3)
      .Diff()
      .Cpp("wp::mesh_eval_velocity(ctx, $L, $0, $1, $2, $3)")
      .Adj("wp::mesh_adjoint(ctx).eval_velocity");
  b.Add("mesh_eval_face_normal", "id: uint64, face: int32", v3).NoDiff().Cpp("wp::mesh_eval_face_normal(ctx, $L, $0, $1)");
  b.Add("mesh_get_point", "id: uint64, index: int32", v3).NoDiff().Cpp("wp::mesh_get_point(ctx, $L, $0, $1)");
  b.Add("mesh_get_velocity", "id: uint64, index: int32", v3).NoDiff().Cpp("wp::mesh_get_velocity(ctx, $L, $0, $1)");
  b.Add("mesh_get_index", "id: uint64, index: int32", "int32").NoDiff().Cpp("wp::mesh_get_index(ctx, $L, $0, $1)");
}

}  // namespace warpd::builtins::internal

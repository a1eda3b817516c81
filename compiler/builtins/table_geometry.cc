// The builtin table: queries of server-side geometry objects (hash grids).
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
}

}  // namespace warpd::builtins::internal

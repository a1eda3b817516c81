// warpd device runtime: hash grid queries (Warp's wp.HashGrid).
//
// A hash grid buckets points into dim_x * dim_y * dim_z cells of width w:
// point p lies in virtual cell floor(p / w) (per axis), which wraps onto a
// physical cell modulo the dims, so a grid covers all of space, and points
// far apart may share a cell (queries over-approximate; callers test the
// distance). The server builds the grid (runtime/objects/hash_grid.h): the
// points' original indices sorted by cell (point_ids), and per cell the
// range [cell_starts[c], cell_ends[c]) of point_ids holding its points; a
// grouped build also sorts each cell's points by group (point_keys).
//
// Kernels name a grid by its id, resolved through the launch's object table
// (objects.h) on every query: an unknown id records FAULT_UNKNOWN_OBJECT
// and the query yields nothing. Every index a query reads is checked
// against the grid's own counts, so no input reads outside its buffers.
//
// Semantics follow Warp 1.19: cell coordinates round toward negative
// infinity; values beyond the int32 cell range clamp to its ends (the top
// one is INT_MAX - 1, so traversal can step one past any end without
// overflow); NaN maps to cell 0. A query visits each physical cell at most
// once per axis pass (a radius wider than the grid visits every cell once).
#pragma once

#include "warpd/native/core.h"
#include "warpd/native/launch.h"
#include "warpd/native/objects.h"
#include "warpd/native/scalar.h"
#include "warpd/native/vec.h"

namespace wp {

enum hash_grid_dtype : int32 {
  HASH_GRID_FLOAT16 = 0,
  HASH_GRID_FLOAT32 = 1,
  HASH_GRID_FLOAT64 = 2,
};

// The descriptor the runtime keeps for a grid (the object table's data for
// OBJECT_HASH_GRID). Written by the grid's builds, in stream order; read by
// the launches of the same stream.
struct hash_grid_t {
  const int32* point_ids;    // num_points: original point indices in cell order
  const int32* cell_starts;  // num_cells
  const int32* cell_ends;    // num_cells
  const uint64* point_keys;  // grouped builds: num_points sorted keys (cell << 32 | group bits); else null
  int32 dim_x, dim_y, dim_z;
  int32 num_points;
  int32 num_cells;  // dim_x * dim_y * dim_z <= INT32_MAX
  int32 dtype;      // hash_grid_dtype: the precision of the points it was made for
  int32 built;      // 0 until the first build: queries then yield nothing
  int32 reserved;
  // 1 / cell width, in each precision as Warp computes it in the grid's
  // (1 / w rounded to the type).
  float64 cell_width_inv_d;
  float32 cell_width_inv_f;
  half cell_width_inv_h;
  uint16 reserved2;
};
static_assert(sizeof(hash_grid_t) == 80, "hash_grid_t layout");

template <typename T>
struct hash_grid_inv;
template <>
struct hash_grid_inv<half> {
  WP_FUNC static half get(const hash_grid_t& g) { return g.cell_width_inv_h; }
};
template <>
struct hash_grid_inv<float32> {
  WP_FUNC static float32 get(const hash_grid_t& g) { return g.cell_width_inv_f; }
};
template <>
struct hash_grid_inv<float64> {
  WP_FUNC static float64 get(const hash_grid_t& g) { return g.cell_width_inv_d; }
};

// A scaled coordinate's virtual cell: floor, clamped to [INT_MIN,
// INT_MAX - 1], NaN -> 0.
WP_FUNC int32 hash_grid_cell_coord(float32 v) {
  const float32 c = floor(v);
  if (c >= 2147483648.0f) return 2147483646;
  if (c >= -2147483648.0f) return (int32)c;
  if (c < -2147483648.0f) return (int32)(-2147483647 - 1);
  return 0;  // NaN
}
WP_FUNC int32 hash_grid_cell_coord(float64 v) {
  const float64 c = floor(v);
  if (c >= 2147483646.0) return 2147483646;
  if (c >= -2147483648.0) return (int32)c;
  if (c < -2147483648.0) return (int32)(-2147483647 - 1);
  return 0;  // NaN
}
WP_FUNC int32 hash_grid_cell_coord(half v) { return hash_grid_cell_coord(half_to_float(v)); }

// The physical cell of virtual cell (x, y, z): each coordinate wrapped
// (non-negative modulo) onto its dim.
WP_FUNC int32 hash_grid_cell(const hash_grid_t& g, int32 x, int32 y, int32 z) {
  int32 cx = x % g.dim_x, cy = y % g.dim_y, cz = z % g.dim_z;
  if (cx < 0) cx += g.dim_x;
  if (cy < 0) cy += g.dim_y;
  if (cz < 0) cz += g.dim_z;
  return (int32)(((int64)cz * g.dim_y + cy) * g.dim_x + cx);
}

// The physical cell of point p (the build uses this too, so builds and
// queries agree bit for bit).
template <typename T>
WP_FUNC int32 hash_grid_point_cell(const hash_grid_t& g, const vec_t<3, T>& p) {
  const T inv = hash_grid_inv<T>::get(g);
  return hash_grid_cell(g, hash_grid_cell_coord(mul(p.c[0], inv)), hash_grid_cell_coord(mul(p.c[1], inv)),
                        hash_grid_cell_coord(mul(p.c[2], inv)));
}

// A grouped build's sort key: the cell in the high bits, the group's bits low.
WP_FUNC uint64 hash_grid_key(int32 cell, int32 group) { return ((uint64)(uint32)cell << 32) | (uint64)(uint32)group; }

// The traversal state of one neighbour query (Warp's HashGridQuery): a
// value of kernels and functions only, never an argument or array element.
// Zero-initialized (grid null) it yields nothing.
template <typename T>
struct hash_grid_query_t {
  const hash_grid_t* grid;
  launch_ctx* ctx;  // polled for a stop while skipping empty cells
  int32 x_start, y_start, z_start;
  int32 x_end, y_end, z_end;
  int32 x, y, z;
  // (x, y, z) wrapped onto the grid (hash_grid_cell's modulos, kept
  // incrementally: a query steps through its cells one at a time).
  int32 wx, wy, wz;
  int32 wx_start, wy_start;
  int32 cell_index;  // next position in point_ids
  int32 cell_end;    // end of the current cell's range
  int32 group;
  int32 filter_by_group;
};
static_assert(sizeof(hash_grid_query_t<float32>) == 88, "hash_grid_query_t size (common/types/type.cc)");

// The last cell of a span: one pass at most (compared in 64 bits).
WP_FUNC int32 hash_grid_span_end(int32 start, int32 end, int32 dim) {
  return (int64)end - (int64)start >= (int64)dim ? start + (dim - 1) : end;
}

// First position in [lo, hi) whose key is >= key.
WP_FUNC int32 hash_grid_lower_bound(const uint64* keys, int32 lo, int32 hi, uint64 key) {
  while (lo < hi) {
    const int32 mid = lo + (hi - lo) / 2;
    if (keys[mid] < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// A coordinate wrapped onto [0, dim) (non-negative modulo).
WP_FUNC int32 hash_grid_wrap(int32 v, int32 dim) {
  const int32 w = v % dim;
  return w < 0 ? w + dim : w;
}

template <typename T>
WP_FUNC void hash_grid_query_set_cell(hash_grid_query_t<T>& q) {
  const hash_grid_t& g = *q.grid;
  const int32 cell = (int32)(((int64)q.wz * g.dim_y + q.wy) * g.dim_x + q.wx);  // hash_grid_cell(g, x, y, z)
  int32 start = g.cell_starts[cell], end = g.cell_ends[cell];
  // The server writes ranges inside [0, num_points]; clamp anyway.
  if (start < 0) start = 0;
  if (end > g.num_points) end = g.num_points;
  if (end < start) end = start;
  if (q.filter_by_group && g.point_keys != nullptr) {
    const uint64 key = hash_grid_key(cell, q.group);
    start = hash_grid_lower_bound(g.point_keys, start, end, key);
    end = hash_grid_lower_bound(g.point_keys, start, end, key + 1);
  }
  q.cell_index = start;
  q.cell_end = end;
}

template <typename T>
WP_FUNC hash_grid_query_t<T> hash_grid_query_make(launch_ctx* ctx, int32 line, uint64 id, const vec_t<3, T>& p,
                                                  T radius, int32 group, bool filter) {
  hash_grid_query_t<T> q{};
  const hash_grid_t* g = (const hash_grid_t*)resolve_object(ctx, line, id, OBJECT_HASH_GRID);
  if (g == nullptr || !g->built || g->num_cells <= 0) return q;
  q.grid = g;
  q.ctx = ctx;
  q.group = group;
  q.filter_by_group = filter ? 1 : 0;
  const T inv = hash_grid_inv<T>::get(*g);
  q.x_start = hash_grid_cell_coord(mul(sub(p.c[0], radius), inv));
  q.y_start = hash_grid_cell_coord(mul(sub(p.c[1], radius), inv));
  q.z_start = hash_grid_cell_coord(mul(sub(p.c[2], radius), inv));
  q.x_end = hash_grid_span_end(q.x_start, hash_grid_cell_coord(mul(add(p.c[0], radius), inv)), g->dim_x);
  q.y_end = hash_grid_span_end(q.y_start, hash_grid_cell_coord(mul(add(p.c[1], radius), inv)), g->dim_y);
  q.z_end = hash_grid_span_end(q.z_start, hash_grid_cell_coord(mul(add(p.c[2], radius), inv)), g->dim_z);
  q.x = q.x_start;
  q.y = q.y_start;
  q.z = q.z_start;
  q.wx = q.wx_start = hash_grid_wrap(q.x, g->dim_x);
  q.wy = q.wy_start = hash_grid_wrap(q.y, g->dim_y);
  q.wz = hash_grid_wrap(q.z, g->dim_z);
  hash_grid_query_set_cell(q);
  return q;
}

// hash_grid_query(id, point, max_dist[, group]): the points of every cell
// within max_dist of point along each axis (a superset of the points within
// max_dist), restricted to `group` when given (grouped builds; an ungrouped
// build ignores it).
template <typename T>
WP_FUNC hash_grid_query_t<T> hash_grid_query(launch_ctx* ctx, int32 line, uint64 id, const vec_t<3, T>& p, T radius) {
  return hash_grid_query_make(ctx, line, id, p, radius, 0, false);
}
template <typename T>
WP_FUNC hash_grid_query_t<T> hash_grid_query(launch_ctx* ctx, int32 line, uint64 id, const vec_t<3, T>& p, T radius,
                                             int32 group) {
  return hash_grid_query_make(ctx, line, id, p, radius, group, true);
}

// The next candidate's original point index into `index`; false (index
// unchanged) when the query is exhausted, or the launch is stopping.
template <typename T>
WP_FUNC bool hash_grid_query_next(hash_grid_query_t<T>& q, int32& index) {
  const hash_grid_t* g = q.grid;
  if (g == nullptr) return false;
  for (uint32 skipped = 1;; ++skipped) {
    if (q.cell_index < q.cell_end) {
      const int32 k = q.cell_index++;
      if ((uint32)k >= (uint32)g->num_points) return false;
      index = g->point_ids[k];
      return true;
    }
    // Spans are at most one pass (hash_grid_span_end), so each wrapped
    // coordinate steps by one and wraps at most once per pass.
    ++q.x;
    if (++q.wx == g->dim_x) q.wx = 0;
    if (q.x > q.x_end) {
      q.x = q.x_start;
      q.wx = q.wx_start;
      ++q.y;
      if (++q.wy == g->dim_y) q.wy = 0;
    }
    if (q.y > q.y_end) {
      q.y = q.y_start;
      q.wy = q.wy_start;
      ++q.z;
      if (++q.wz == g->dim_z) q.wz = 0;
    }
    if (q.z > q.z_end) {
      q.grid = nullptr;
      return false;
    }
    // A wide query over a large, sparse grid may skip many empty cells.
    if ((skipped & 4095u) == 0 && q.ctx != nullptr && should_stop(q.ctx)) {
      q.grid = nullptr;
      return false;
    }
    hash_grid_query_set_cell(q);
  }
}

// hash_grid_point_id(id, index): the original index of the point at
// position `index` of the grid's cell order (threads launched over the
// points visit them cell by cell); -1 before the first build. An index
// outside [0, num_points) records FAULT_OBJECT_INDEX.
WP_FUNC int32 hash_grid_point_id(launch_ctx* ctx, int32 line, uint64 id, int32 index) {
  const hash_grid_t* g = (const hash_grid_t*)resolve_object(ctx, line, id, OBJECT_HASH_GRID);
  if (g == nullptr || !g->built) return -1;
  if ((uint32)index >= (uint32)g->num_points) {
    record_object_index_fault(ctx, line, OBJECT_HASH_GRID, index, g->num_points);
    return -1;
  }
  return g->point_ids[index];
}

}  // namespace wp

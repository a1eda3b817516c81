// warpd device runtime: resolving object ids through the launch's object table.
//
// Kernels hold server-side objects (hash grids; later meshes, BVHs, volumes)
// as plain uint64 ids, which they may compute, store and pass around. An id
// is never a pointer: every query resolves it through ctx->objects, the
// table the runtime built for this launch from the launching session's own
// live objects on the launch's device (docs/launch_abi.md, "Object table").
// An id that is not there with the expected kind (made up, freed, another
// session's, or an object of another kind) records FAULT_UNKNOWN_OBJECT
// naming the id and the user's line, and the query gets null: it then does
// nothing and touches no memory.
#pragma once

#include "warpd/native/core.h"
#include "warpd/native/launch.h"

namespace wp {

// The descriptor of object `id` of kind `kind` in the launch's table, or
// null when there is none; *found gets the kind the id has there
// (OBJECT_NONE when absent). Binary search over the sorted entries.
WP_FUNC const void* find_object(const launch_ctx* ctx, uint64 id, int32 kind, int32* found) {
  *found = OBJECT_NONE;
  if (ctx == nullptr || ctx->objects == nullptr) return nullptr;
  int64 lo = 0, hi = ctx->num_objects;
  while (lo < hi) {
    const int64 mid = lo + (hi - lo) / 2;
    const uint64 at = ctx->objects[mid].id;
    if (at == id) {
      *found = ctx->objects[mid].kind;
      return ctx->objects[mid].kind == kind ? ctx->objects[mid].data : nullptr;
    }
    if (at < id) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return nullptr;
}

// Records FAULT_UNKNOWN_OBJECT for `id` at `line`; true when this call
// claimed the launch's fault.
WP_FUNC bool record_object_fault(launch_ctx* ctx, int32 line, uint64 id, int32 expected, int32 found) {
  if (!claim_fault(ctx)) return false;
  ctx->fault.kind = FAULT_UNKNOWN_OBJECT;
  ctx->fault.line = line;
  ctx->fault.dim = expected;
  ctx->fault.index = (int64)id;
  ctx->fault.extent = found;
  ctx->fault.array_ndim = 0;
  return true;
}

// Records FAULT_OBJECT_INDEX: `index` outside the `count` elements of an
// object of kind `kind`.
WP_FUNC bool record_object_index_fault(launch_ctx* ctx, int32 line, int32 kind, int64 index, int64 count) {
  if (!claim_fault(ctx)) return false;
  ctx->fault.kind = FAULT_OBJECT_INDEX;
  ctx->fault.line = line;
  ctx->fault.dim = kind;
  ctx->fault.index = index;
  ctx->fault.extent = count;
  ctx->fault.array_ndim = 0;
  return true;
}

// The descriptor of object `id` of kind `kind`, or null after recording
// FAULT_UNKNOWN_OBJECT.
WP_FUNC const void* resolve_object(launch_ctx* ctx, int32 line, uint64 id, int32 kind) {
  int32 found = OBJECT_NONE;
  const void* data = find_object(ctx, id, kind, &found);
  if (WP_UNLIKELY(data == nullptr)) record_object_fault(ctx, line, id, kind, found);
  return data;
}

}  // namespace wp

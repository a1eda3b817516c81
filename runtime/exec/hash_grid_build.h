// warpd runtime: the stream command that builds a hash grid
// (runtime/objects/hash_grid.h) from a points array, in stream order, so a
// build sees the writes of the commands before it and the launches after it
// see the build. It may be captured in a graph: each replay sorts the
// points array's current contents again.
//
// PrepareHashGridBuild checks the build (HashGrid::CheckBuild: dtype vec3
// of the grid's precision, groups int32 of the same count, both on
// `device`, radius finite and > 0: INVALID_ARGUMENT) and allocates its
// buffers from `pool` (RESOURCE_EXHAUSTED when they do not fit); a
// mirrored grid's (a GPU's) also its host copies of the points and groups
// from `pool` and its device memory for the point ids from `device_pool`
// (FAILED_PRECONDITION when null).
// Ownership: the command holds the grid, the points and groups arrays and
// the buffers until it is destroyed.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/exec/command.h"
#include "runtime/objects/hash_grid.h"

namespace warpd::runtime {

absl::StatusOr<std::unique_ptr<Command>> PrepareHashGridBuild(std::shared_ptr<HashGrid> grid,
                                                              std::shared_ptr<const Array> points,
                                                              std::shared_ptr<const Array> groups, double radius,
                                                              const std::string& device, SegmentPool& pool,
                                                              SegmentPool* device_pool = nullptr);

}  // namespace warpd::runtime

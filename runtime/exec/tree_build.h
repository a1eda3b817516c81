// warpd runtime: the stream command that builds or refits the tree of a
// BVH (runtime/objects/bvh.h) in stream order, so it reads the item boxes
// the commands before it wrote and the launches after it see the new tree.
// It may be captured in a graph: each replay builds (or refits) from the
// boxes' current contents again.
//
// PrepareTreeBuild checks that the object lives on `device`
// (INVALID_ARGUMENT); new points are checked when the command runs (their
// shape against the mesh's). Ownership: the command holds the object until it is
// destroyed.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/exec/command.h"
#include "runtime/objects/bvh.h"

namespace warpd::runtime {

// arrays: none, or (a mesh's refit only) points and/or velocities with
// their gradients that replace the mesh's (TreeObject::SetArrays; new
// points are refitted to).
absl::StatusOr<std::unique_ptr<Command>> PrepareTreeBuild(std::shared_ptr<TreeObject> object, bool refit,
                                                          BvhSplit split, const std::string& device,
                                                          VertexArrays arrays = {});

}  // namespace warpd::runtime

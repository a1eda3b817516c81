// warpd runtime: BVHs over item boxes (Warp's wp.Bvh), built on the server.
//
// A Bvh holds its lowers and uppers arrays (contiguous vec3f, the same
// count, at most kMaxItems) for its lifetime: queries test the items' boxes
// in them, and builds and refits read them. Its tree buffers (2n - 1 nodes,
// parents, n item indices) and its builds' scratch (BvhBuildScratchBytes)
// are allocated when it is made, from the session's pool, so they count
// against the session's memory like arrays and a build never allocates.
//
//   ASSIGN_OR_RETURN(auto bvh, Bvh::Create("cpu", lowers, uppers, 1, BvhSplit::kSah, pool));
//   bvh->Rebuild(BvhSplit::kSah);   // in stream order: reads lowers/uppers
//   bvh->Refit();                   // after the boxes moved: same tree, new node boxes
//
// A Bvh is made unbuilt (queries yield nothing); the client queues its
// first build right after making it. Errors: INVALID_ARGUMENT (arrays,
// leaf size), RESOURCE_EXHAUSTED (memory). Thread-safety: Create is
// thread-safe; Rebuild and Refit run in the object's stream order only
// (geometry_object.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/memory/segment_pool.h"
#include "runtime/objects/array.h"
#include "runtime/objects/bvh_build.h"
#include "runtime/objects/geometry_object.h"
#include "warpd/native/bvh.h"

namespace warpd::runtime {

// A mesh's points and velocities (null: none, or kept by SetArrays), each
// with its gradient array (null: none), where the adjoints of kernels'
// reads through mesh_get(id).points / .velocities accumulate.
struct VertexArrays {
  std::shared_ptr<const Array> points, points_grad;
  std::shared_ptr<const Array> velocities, velocities_grad;
};

// An object whose tree a BuildTree command rebuilds or refits (a Bvh; a
// Mesh's tree).
class TreeObject : public GeometryObject {
 public:
  using GeometryObject::GeometryObject;
  // Builds the tree again from the current boxes (CANCELLED when *cancel
  // is set meanwhile; the tree then yields nothing until the next build).
  // `parallel`: the device's workers for the build (null: this thread).
  virtual absl::Status Rebuild(BvhSplit split, const std::atomic<bool>* cancel = nullptr,
                               const ParallelFor* parallel = nullptr) = 0;
  // Recomputes the node boxes from the current boxes; a tree never built is
  // built instead.
  virtual absl::Status Refit(const std::atomic<bool>* cancel = nullptr, const ParallelFor* parallel = nullptr) = 0;
  // Replaces the points the tree's boxes come from (then refits) and/or the
  // velocities (a Mesh's; INVALID_ARGUMENT for other trees).
  virtual absl::Status SetArrays(const VertexArrays&) {
    return absl::InvalidArgumentError("only a mesh's points and velocities can be replaced");
  }
};

// The buffers of a tree over n items (BvhNodeCapacity(n) nodes and
// parents, n item indices; grouped trees: also their group ids and roots,
// n each), the scratch memory its builds use and `extra_bytes` of the
// owner's (a Mesh's triangle boxes), from a session's pool, and the build
// and refit of a tree descriptor over them (a Bvh's, a Mesh's).
// From SegmentPool::kLargeBlockBytes in all, the parts are ONE block: a
// memory file of its own, which the pool keeps a while once freed for the
// next block of about its size, so a session that makes a tree and frees
// the last one in a loop gets the same file back every time (as one block
// per part, each of 1 MiB or more at the bench's 408,960 triangles, they
// were more files than that cache keeps, and every tree made a new one).
// Smaller, each part is a block of its own, shared with the session's other
// small blocks (as one block, the tree would be alone in a shared file,
// dropped when it is freed and made again for the next tree).
struct BvhBuffers {
  static absl::StatusOr<BvhBuffers> Allocate(int64_t items, bool grouped, SegmentPool& pool,
                                             uint64_t extra_bytes = 0);
  int64_t items = 0;
  std::vector<std::shared_ptr<CpuBuffer>> blocks;  // one, or one per part
  wp::bvh_node_t* nodes = nullptr;
  int32_t *parents = nullptr, *prims = nullptr;
  int32_t *group_ids = nullptr, *group_roots = nullptr;  // null unless grouped
  std::byte* scratch = nullptr;  // BvhBuildScratchBytes(items, grouped): only builds use it
  std::byte* extra = nullptr;    // extra_bytes, 64-byte aligned (null for none)
  wp::bvh_node_t* node_data() const { return nodes; }
  int32_t* parent_data() const { return parents; }
  int32_t* prim_data() const { return prims; }

  // Points `desc` at these buffers, unbuilt (item boxes are the caller's).
  void Attach(wp::bvh_t& desc) const;
  // Builds the tree of desc's item boxes; `groups` (one per item, grouped
  // buffers only) or null. The tree yields nothing while building and after
  // a failure.
  absl::Status Build(wp::bvh_t& desc, int leaf_size, BvhSplit split, const int32_t* groups,
                     const std::atomic<bool>* cancel, const ParallelFor* parallel = nullptr) const;
  // Recomputes the node boxes of a built tree from its item boxes.
  void Refit(wp::bvh_t& desc) const;
  // Makes the tree yield nothing (until the next build).
  static void Unbuild(wp::bvh_t& desc);
};

// INVALID_ARGUMENT unless `groups` (null: none) is a contiguous int32 array
// of `count` elements on `device` (`what` names the items: "bounds").
absl::Status CheckGroups(const Array* groups, int64_t count, const std::string& device, const char* what);

class Bvh final : public TreeObject {
 public:
  // Items a BVH may hold (int32 node indices for 2n - 1 nodes).
  static constexpr int64_t kMaxItems = (int64_t{1} << 30) - 1;

  // The checks of Create (of arrays on `device`): the number of items, or
  // INVALID_ARGUMENT.
  static absl::StatusOr<int64_t> CheckArrays(const std::string& device, const Array* lowers, const Array* uppers,
                                             int leaf_size, const Array* groups);
  // groups: null, or one int32 per item (a grouped tree: bvh_get_group_root).
  static absl::StatusOr<std::shared_ptr<Bvh>> Create(std::string device, std::shared_ptr<const Array> lowers,
                                                     std::shared_ptr<const Array> uppers, int leaf_size,
                                                     SegmentPool& pool, std::shared_ptr<const Array> groups = nullptr);

  Bvh(std::string device, std::shared_ptr<const Array> lowers, std::shared_ptr<const Array> uppers, int leaf_size,
      BvhBuffers buffers, std::shared_ptr<const Array> groups = nullptr);

  const void* descriptor() const override { return &desc_; }
  uint64_t MetadataBytes() const override { return sizeof(*this); }
  const wp::bvh_t& native() const { return desc_; }
  int leaf_size() const { return leaf_size_; }

  absl::Status Rebuild(BvhSplit split, const std::atomic<bool>* cancel = nullptr,
                       const ParallelFor* parallel = nullptr) override;
  absl::Status Refit(const std::atomic<bool>* cancel = nullptr, const ParallelFor* parallel = nullptr) override;

 private:
  const std::shared_ptr<const Array> lowers_, uppers_, groups_;
  const int leaf_size_;
  const BvhBuffers buffers_;
  BvhSplit split_ = BvhSplit::kSah;  // of the last build
  bool built_ = false;
  wp::bvh_t desc_{};
};

// INVALID_ARGUMENT unless `a` is a contiguous array of vec3f on `device`
// (`what` names it in the message).
absl::Status CheckVec3Array(const Array& a, const std::string& device, const char* what);

}  // namespace warpd::runtime

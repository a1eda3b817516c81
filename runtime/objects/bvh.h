// warpd runtime: BVHs over item boxes (Warp's wp.Bvh), built on the server.
//
// A Bvh holds its lowers and uppers arrays (contiguous vec3f, the same
// count, at most kMaxItems) for its lifetime: queries test the items' boxes
// in them, and builds and refits read them. Its tree buffers (2n - 1 nodes,
// parents, n item indices) are allocated when it is made, from the
// session's pool, so they count against the session's memory like arrays.
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

#include "absl/status/statusor.h"
#include "runtime/memory/segment_pool.h"
#include "runtime/objects/array.h"
#include "runtime/objects/bvh_build.h"
#include "runtime/objects/geometry_object.h"
#include "warpd/native/bvh.h"

namespace warpd::runtime {

// An object whose tree a BuildTree command rebuilds or refits (a Bvh; a
// Mesh's tree).
class TreeObject : public GeometryObject {
 public:
  using GeometryObject::GeometryObject;
  // Builds the tree again from the current boxes (CANCELLED when *cancel
  // is set meanwhile; the tree then yields nothing until the next build).
  virtual absl::Status Rebuild(BvhSplit split, const std::atomic<bool>* cancel = nullptr) = 0;
  // Recomputes the node boxes from the current boxes; a tree never built is
  // built instead.
  virtual absl::Status Refit(const std::atomic<bool>* cancel = nullptr) = 0;
};

// The buffers of a tree over n items, allocated from a session's pool.
struct BvhBuffers {
  static absl::StatusOr<BvhBuffers> Allocate(int64_t items, SegmentPool& pool);
  int64_t items = 0;
  std::shared_ptr<CpuBuffer> nodes, parents, prims;
  wp::bvh_node_t* node_data() const { return reinterpret_cast<wp::bvh_node_t*>(nodes->data()); }
  int32_t* parent_data() const { return reinterpret_cast<int32_t*>(parents->data()); }
  int32_t* prim_data() const { return reinterpret_cast<int32_t*>(prims->data()); }
};

class Bvh final : public TreeObject {
 public:
  // Items a BVH may hold (int32 node indices for 2n - 1 nodes).
  static constexpr int64_t kMaxItems = (int64_t{1} << 30) - 1;

  static absl::StatusOr<std::shared_ptr<Bvh>> Create(std::string device, std::shared_ptr<const Array> lowers,
                                                     std::shared_ptr<const Array> uppers, int leaf_size,
                                                     SegmentPool& pool);

  Bvh(std::string device, std::shared_ptr<const Array> lowers, std::shared_ptr<const Array> uppers, int leaf_size,
      BvhBuffers buffers);

  const void* descriptor() const override { return &desc_; }
  uint64_t MetadataBytes() const override { return sizeof(*this); }
  const wp::bvh_t& native() const { return desc_; }
  int leaf_size() const { return leaf_size_; }

  absl::Status Rebuild(BvhSplit split, const std::atomic<bool>* cancel = nullptr) override;
  absl::Status Refit(const std::atomic<bool>* cancel = nullptr) override;

 private:
  const std::shared_ptr<const Array> lowers_, uppers_;
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

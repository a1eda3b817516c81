#include "runtime/objects/bvh.h"

#include "absl/strings/str_cat.h"

namespace warpd::runtime {

absl::Status CheckVec3Array(const Array& a, const std::string& device, const char* what) {
  if (!types::SameType(a.dtype(), types::Vector(3, types::ScalarKind::kFloat32)) || !a.contiguous()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " should be a contiguous array of type wp.vec3, got ", a.dtype()->ToString(),
                     a.contiguous() ? "" : " (not contiguous)"));
  }
  if (a.device() != device) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must live on '", device, "', not '", a.device(), "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<BvhBuffers> BvhBuffers::Allocate(int64_t items, SegmentPool& pool) {
  BvhBuffers b;
  b.items = items;
  const uint64_t nodes = static_cast<uint64_t>(MaxBvhNodes(items));
  auto n = pool.Allocate(nodes * sizeof(wp::bvh_node_t), "bvh nodes", Fill::kAny);
  if (!n.ok()) return n.status();
  b.nodes = *std::move(n);
  auto p = pool.Allocate(nodes * sizeof(int32_t), "bvh nodes", Fill::kAny);
  if (!p.ok()) return p.status();
  b.parents = *std::move(p);
  auto q = pool.Allocate(static_cast<uint64_t>(items > 0 ? items : 1) * sizeof(int32_t), "bvh items", Fill::kAny);
  if (!q.ok()) return q.status();
  b.prims = *std::move(q);
  return b;
}

absl::StatusOr<std::shared_ptr<Bvh>> Bvh::Create(std::string device, std::shared_ptr<const Array> lowers,
                                                 std::shared_ptr<const Array> uppers, int leaf_size,
                                                 SegmentPool& pool) {
  if (lowers == nullptr || uppers == nullptr) return absl::InvalidArgumentError("a BVH needs lowers and uppers");
  if (absl::Status s = CheckVec3Array(*lowers, device, "lowers"); !s.ok()) return s;
  if (absl::Status s = CheckVec3Array(*uppers, device, "uppers"); !s.ok()) return s;
  const uint64_t n = lowers->layout().num_elements;
  if (uppers->layout().num_elements != n) {
    return absl::InvalidArgumentError(absl::StrCat("The same number of lower and upper bounds must be provided (",
                                                   n, " lowers, ", uppers->layout().num_elements, " uppers)"));
  }
  if (n > static_cast<uint64_t>(kMaxItems)) {
    return absl::InvalidArgumentError(absl::StrCat("a BVH holds at most ", kMaxItems, " items, got ", n));
  }
  if (leaf_size < 1 || leaf_size > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("leaf_size must be greater than or equal to 1 (and at most 64), current value: ", leaf_size));
  }
  auto buffers = BvhBuffers::Allocate(static_cast<int64_t>(n), pool);
  if (!buffers.ok()) return buffers.status();
  return std::make_shared<Bvh>(std::move(device), std::move(lowers), std::move(uppers), leaf_size,
                               *std::move(buffers));
}

Bvh::Bvh(std::string device, std::shared_ptr<const Array> lowers, std::shared_ptr<const Array> uppers,
         int leaf_size, BvhBuffers buffers)
    : TreeObject(wp::OBJECT_BVH, std::move(device)),
      lowers_(std::move(lowers)),
      uppers_(std::move(uppers)),
      leaf_size_(leaf_size),
      buffers_(std::move(buffers)) {
  desc_.nodes = buffers_.node_data();
  desc_.parents = buffers_.parent_data();
  desc_.primitives = buffers_.prim_data();
  desc_.item_lowers = reinterpret_cast<const wp::vec3f*>(lowers_->data());
  desc_.item_uppers = reinterpret_cast<const wp::vec3f*>(uppers_->data());
  desc_.num_items = static_cast<wp::int32>(buffers_.items);
  desc_.num_nodes = 0;  // nothing to traverse until built
  desc_.root = -1;
}

absl::Status Bvh::Rebuild(BvhSplit split, const std::atomic<bool>* cancel) {
  desc_.num_nodes = 0;
  desc_.root = -1;
  built_ = false;
  auto shape = BuildBvhTree(desc_.item_lowers, desc_.item_uppers, buffers_.items, leaf_size_, split,
                            buffers_.node_data(), buffers_.parent_data(), buffers_.prim_data(), cancel);
  if (!shape.ok()) return shape.status();
  split_ = split;
  built_ = true;
  desc_.num_nodes = shape->num_nodes;
  desc_.root = shape->root;
  desc_.max_depth = shape->max_depth;
  return absl::OkStatus();
}

absl::Status Bvh::Refit(const std::atomic<bool>* cancel) {
  if (!built_) return Rebuild(split_, cancel);
  RefitBvhTree(desc_.item_lowers, desc_.item_uppers, buffers_.items, buffers_.prim_data(), buffers_.node_data(),
               desc_.num_nodes);
  return absl::OkStatus();
}

}  // namespace warpd::runtime

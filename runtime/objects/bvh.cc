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

absl::Status CheckGroups(const Array* groups, int64_t count, const std::string& device, const char* what) {
  if (groups == nullptr) return absl::OkStatus();
  if (!types::SameType(groups->dtype(), types::Scalar(types::ScalarKind::kInt32)) || !groups->contiguous()) {
    return absl::InvalidArgumentError(absl::StrCat("groups should be a contiguous array of type wp.int32, got ",
                                                   groups->dtype()->ToString()));
  }
  if (groups->layout().num_elements != static_cast<uint64_t>(count)) {
    return absl::InvalidArgumentError(absl::StrCat("groups must have one entry per ", what, " (", count, "), got ",
                                                   groups->layout().num_elements));
  }
  if (groups->device() != device) {
    return absl::InvalidArgumentError(absl::StrCat("groups must live on '", device, "', not '", groups->device(), "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<BvhBuffers> BvhBuffers::Allocate(int64_t items, bool grouped, SegmentPool& pool,
                                                uint64_t extra_bytes) {
  const uint64_t nodes = static_cast<uint64_t>(BvhNodeCapacity(items));  // a parallel build's scratch too
  const uint64_t slots = static_cast<uint64_t>(items > 0 ? items : 1);
  // The parts: their sizes and where each pointer goes. The scratch is
  // charged here, with the tree, so a build never fails for memory.
  BvhBuffers b;
  b.items = items;
  std::byte* at[7] = {};
  const uint64_t size[7] = {nodes * sizeof(wp::bvh_node_t),
                            nodes * sizeof(int32_t),
                            slots * sizeof(int32_t),
                            grouped ? slots * sizeof(int32_t) : 0,
                            grouped ? slots * sizeof(int32_t) : 0,
                            static_cast<uint64_t>(BvhBuildScratchBytes(items, grouped)),
                            extra_bytes};
  const char* tag[7] = {"bvh nodes", "bvh nodes", "bvh items", "bvh groups", "bvh groups", "bvh scratch", "mesh boxes"};
  uint64_t total = 0;
  for (uint64_t bytes : size) total += (bytes + 63) / 64 * 64;  // 64-byte aligned parts
  if (total >= SegmentPool::kLargeBlockBytes) {
    auto block = pool.Allocate(total, "bvh", Fill::kAny);
    if (!block.ok()) return block.status();
    std::byte* p = (*block)->data();
    for (int k = 0; k < 7; ++k) {
      if (size[k] > 0) at[k] = p;
      p += (size[k] + 63) / 64 * 64;
    }
    b.blocks.push_back(*std::move(block));
  } else {
    for (int k : {6, 0, 1, 2, 3, 4, 5}) {  // the owner's first (a mesh's boxes were, before the tree)
      if (size[k] == 0) continue;
      auto block = pool.Allocate(size[k], tag[k], Fill::kAny);
      if (!block.ok()) return block.status();
      at[k] = (*block)->data();
      b.blocks.push_back(*std::move(block));
    }
  }
  b.nodes = reinterpret_cast<wp::bvh_node_t*>(at[0]);
  b.parents = reinterpret_cast<int32_t*>(at[1]);
  b.prims = reinterpret_cast<int32_t*>(at[2]);
  b.group_ids = reinterpret_cast<int32_t*>(at[3]);
  b.group_roots = reinterpret_cast<int32_t*>(at[4]);
  b.scratch = at[5];
  b.extra = at[6];
  return b;
}

void BvhBuffers::Attach(wp::bvh_t& desc) const {
  desc.nodes = node_data();
  desc.parents = parent_data();
  desc.primitives = prim_data();
  desc.num_items = static_cast<wp::int32>(items);
  if (group_ids != nullptr) {
    desc.group_ids = group_ids;
    desc.group_roots = group_roots;
  }
  Unbuild(desc);
}

void BvhBuffers::Unbuild(wp::bvh_t& desc) {
  desc.num_nodes = 0;  // nothing to traverse
  desc.root = -1;
  desc.num_groups = 0;
}

absl::Status BvhBuffers::Build(wp::bvh_t& desc, int leaf_size, BvhSplit split, const int32_t* groups,
                               const std::atomic<bool>* cancel, const ParallelFor* parallel) const {
  Unbuild(desc);
  BvhGroups g{groups, nullptr, nullptr};
  if (groups != nullptr) {
    if (group_ids == nullptr) return absl::InternalError("a grouped build of an ungrouped tree");
    g.ids = group_ids;
    g.roots = group_roots;
  }
  auto shape = BuildBvhTree(desc.item_lowers, desc.item_uppers, items, leaf_size, split, node_data(), parent_data(),
                            prim_data(), cancel, groups != nullptr ? &g : nullptr, parallel, scratch);
  if (!shape.ok()) return shape.status();
  desc.max_depth = shape->max_depth;
  desc.num_groups = shape->num_groups;
  desc.num_nodes = shape->num_nodes;
  desc.root = shape->root;
  return absl::OkStatus();
}

void BvhBuffers::Refit(wp::bvh_t& desc) const {
  RefitBvhTree(desc.item_lowers, desc.item_uppers, items, prim_data(), node_data(), desc.num_nodes);
}

absl::StatusOr<int64_t> Bvh::CheckArrays(const std::string& device, const Array* lowers, const Array* uppers,
                                         int leaf_size, const Array* groups) {
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
  if (absl::Status s = CheckGroups(groups, static_cast<int64_t>(n), device, "bounds"); !s.ok()) return s;
  return static_cast<int64_t>(n);
}

absl::StatusOr<std::shared_ptr<Bvh>> Bvh::Create(std::string device, std::shared_ptr<const Array> lowers,
                                                 std::shared_ptr<const Array> uppers, int leaf_size,
                                                 SegmentPool& pool, std::shared_ptr<const Array> groups) {
  absl::StatusOr<int64_t> checked = CheckArrays(device, lowers.get(), uppers.get(), leaf_size, groups.get());
  if (!checked.ok()) return checked.status();
  const uint64_t n = static_cast<uint64_t>(*checked);
  auto buffers = BvhBuffers::Allocate(static_cast<int64_t>(n), groups != nullptr, pool);
  if (!buffers.ok()) return buffers.status();
  return std::make_shared<Bvh>(std::move(device), std::move(lowers), std::move(uppers), leaf_size,
                               *std::move(buffers), std::move(groups));
}

Bvh::Bvh(std::string device, std::shared_ptr<const Array> lowers, std::shared_ptr<const Array> uppers,
         int leaf_size, BvhBuffers buffers, std::shared_ptr<const Array> groups)
    : TreeObject(wp::OBJECT_BVH, std::move(device)),
      lowers_(std::move(lowers)),
      uppers_(std::move(uppers)),
      groups_(std::move(groups)),
      leaf_size_(leaf_size),
      buffers_(std::move(buffers)) {
  desc_.item_lowers = reinterpret_cast<const wp::vec3f*>(lowers_->data());
  desc_.item_uppers = reinterpret_cast<const wp::vec3f*>(uppers_->data());
  buffers_.Attach(desc_);
}

absl::Status Bvh::Rebuild(BvhSplit split, const std::atomic<bool>* cancel, const ParallelFor* parallel) {
  built_ = false;
  const int32_t* groups = groups_ != nullptr ? reinterpret_cast<const int32_t*>(groups_->data()) : nullptr;
  if (absl::Status s = buffers_.Build(desc_, leaf_size_, split, groups, cancel, parallel); !s.ok()) return s;
  split_ = split;
  built_ = true;
  return absl::OkStatus();
}

absl::Status Bvh::Refit(const std::atomic<bool>* cancel, const ParallelFor* parallel) {
  if (!built_) return Rebuild(split_, cancel, parallel);
  buffers_.Refit(desc_);
  return absl::OkStatus();
}

}  // namespace warpd::runtime

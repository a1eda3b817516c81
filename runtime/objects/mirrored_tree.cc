#include "runtime/objects/mirrored_tree.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace warpd::runtime {

struct MirroredTree::Parts {
  ArrayMemory* memory = nullptr;
  std::string device;
  // The client's arrays on the device: a mesh's (vertex, indices) or a
  // BVH's (lowers, uppers); groups: null for none.
  VertexArrays vertex;
  std::shared_ptr<const Array> indices, lowers, uppers, groups;
  // Host copies of what the host build reads, and the host tree over them.
  std::optional<HostShadow> points_host, indices_host, lowers_host, uppers_host, groups_host;
  std::shared_ptr<Mesh> mesh;
  std::shared_ptr<Bvh> bvh;
  // The mirror and where its parts lie.
  std::unique_ptr<DeviceMirror> mirror;
  uint64_t desc_at = 0, nodes_at = 0, parents_at = 0, prims_at = 0, boxes_at = 0, group_ids_at = 0,
           group_roots_at = 0;
};

namespace {

// The mirror of a tree over `items` items: descriptor, nodes, parents,
// item order, `box_items` item boxes (a mesh's triangles; 0 for a BVH,
// whose boxes are its arrays), group ids and roots when grouped.
absl::Status MakeMirror(MirroredTree::Parts& p, uint64_t desc_bytes, int64_t items, int64_t box_items, bool grouped,
                        SegmentPool& device_pool, const char* tag) {
  const uint64_t n = static_cast<uint64_t>(std::max<int64_t>(items, 1));
  const uint64_t nodes = static_cast<uint64_t>(BvhNodeCapacity(static_cast<int64_t>(n)));
  MirrorLayout layout;
  p.desc_at = layout.Add(desc_bytes);
  p.nodes_at = layout.Add(nodes * sizeof(wp::bvh_node_t));
  p.parents_at = layout.Add(nodes * sizeof(int32_t));
  p.prims_at = layout.Add(n * sizeof(int32_t));
  p.boxes_at = layout.Add(static_cast<uint64_t>(box_items) * 2 * sizeof(wp::vec3f));
  if (grouped) {
    p.group_ids_at = layout.Add(n * sizeof(int32_t));
    p.group_roots_at = layout.Add(n * sizeof(int32_t));
  }
  WARPD_ASSIGN_OR_RETURN(p.mirror, DeviceMirror::Create(*p.memory, p.device, layout.bytes(), device_pool, tag));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<HostShadow>> ShadowOf(const Array* a, SegmentPool& pool, const char* tag) {
  if (a == nullptr) return std::optional<HostShadow>();
  WARPD_ASSIGN_OR_RETURN(HostShadow shadow, HostShadow::Create(*a, pool, tag));
  return std::optional<HostShadow>(std::move(shadow));
}

std::shared_ptr<const Array> ArrayOf(const std::optional<HostShadow>& shadow) {
  return shadow ? shadow->array() : nullptr;
}

template <typename T>
absl::Span<const std::byte> BytesOf(const T* data, int64_t count) {
  return {reinterpret_cast<const std::byte*>(data), static_cast<size_t>(std::max<int64_t>(count, 0)) * sizeof(T)};
}

template <typename T>
T* DeviceAddress(const std::shared_ptr<const Array>& a) {
  return a != nullptr ? reinterpret_cast<T*>(a->address()) : nullptr;
}

}  // namespace

absl::StatusOr<std::shared_ptr<MirroredTree>> MirroredTree::CreateMesh(
    ArrayMemory& memory, const std::string& device, std::shared_ptr<const Array> points,
    std::shared_ptr<const Array> indices, std::shared_ptr<const Array> velocities, int leaf_size,
    SegmentPool& host_pool, SegmentPool& device_pool, std::shared_ptr<const Array> groups) {
  WARPD_ASSIGN_OR_RETURN(
      const int64_t tris, Mesh::CheckArrays(device, points.get(), indices.get(), velocities.get(), leaf_size,
                                            groups.get()));
  Parts p;
  p.memory = &memory;
  p.device = device;
  WARPD_ASSIGN_OR_RETURN(p.points_host, ShadowOf(points.get(), host_pool, "mesh points (host copy)"));
  WARPD_ASSIGN_OR_RETURN(p.indices_host, ShadowOf(indices.get(), host_pool, "mesh indices (host copy)"));
  WARPD_ASSIGN_OR_RETURN(p.groups_host, ShadowOf(groups.get(), host_pool, "mesh groups (host copy)"));
  WARPD_ASSIGN_OR_RETURN(p.mesh, Mesh::Create("cpu", ArrayOf(p.points_host), ArrayOf(p.indices_host), nullptr,
                                              leaf_size, host_pool, ArrayOf(p.groups_host)));
  WARPD_RETURN_IF_ERROR(MakeMirror(p, sizeof(wp::mesh_t), tris, tris, groups != nullptr, device_pool, "mesh"));
  p.vertex.points = std::move(points);
  p.vertex.velocities = std::move(velocities);
  p.indices = std::move(indices);
  p.groups = std::move(groups);
  auto tree = std::make_shared<MirroredTree>(std::move(p));
  WARPD_RETURN_IF_ERROR(tree->Publish(true));  // unbuilt: a query finds nothing until the first build
  return tree;
}

absl::StatusOr<std::shared_ptr<MirroredTree>> MirroredTree::CreateBvh(
    ArrayMemory& memory, const std::string& device, std::shared_ptr<const Array> lowers,
    std::shared_ptr<const Array> uppers, int leaf_size, SegmentPool& host_pool, SegmentPool& device_pool,
    std::shared_ptr<const Array> groups) {
  WARPD_ASSIGN_OR_RETURN(const int64_t items,
                         Bvh::CheckArrays(device, lowers.get(), uppers.get(), leaf_size, groups.get()));
  Parts p;
  p.memory = &memory;
  p.device = device;
  WARPD_ASSIGN_OR_RETURN(p.lowers_host, ShadowOf(lowers.get(), host_pool, "BVH lowers (host copy)"));
  WARPD_ASSIGN_OR_RETURN(p.uppers_host, ShadowOf(uppers.get(), host_pool, "BVH uppers (host copy)"));
  WARPD_ASSIGN_OR_RETURN(p.groups_host, ShadowOf(groups.get(), host_pool, "BVH groups (host copy)"));
  WARPD_ASSIGN_OR_RETURN(p.bvh, Bvh::Create("cpu", ArrayOf(p.lowers_host), ArrayOf(p.uppers_host), leaf_size,
                                            host_pool, ArrayOf(p.groups_host)));
  WARPD_RETURN_IF_ERROR(MakeMirror(p, sizeof(wp::bvh_t), items, 0, groups != nullptr, device_pool, "BVH"));
  p.lowers = std::move(lowers);
  p.uppers = std::move(uppers);
  p.groups = std::move(groups);
  auto tree = std::make_shared<MirroredTree>(std::move(p));
  WARPD_RETURN_IF_ERROR(tree->Publish(true));
  return tree;
}

MirroredTree::MirroredTree(Parts parts)
    : TreeObject(parts.mesh != nullptr ? wp::OBJECT_MESH : wp::OBJECT_BVH, parts.device),
      p_(std::make_unique<Parts>(std::move(parts))) {}

MirroredTree::~MirroredTree() = default;

const void* MirroredTree::descriptor() const { return p_->mirror->pointer<const void>(p_->desc_at); }

const void* MirroredTree::tree_descriptor() const {
  // wp::mesh_t starts with its tree (mesh.h).
  return is_mesh() ? descriptor() : nullptr;
}

TreeObject& MirroredTree::host_tree() const {
  if (p_->mesh != nullptr) return *p_->mesh;
  return *p_->bvh;
}

absl::Status MirroredTree::Pull() {
  ArrayMemory& m = *p_->memory;
  if (is_mesh()) {
    WARPD_RETURN_IF_ERROR(p_->points_host->Pull(m, *p_->vertex.points));
    WARPD_RETURN_IF_ERROR(p_->indices_host->Pull(m, *p_->indices));
  } else {
    WARPD_RETURN_IF_ERROR(p_->lowers_host->Pull(m, *p_->lowers));
    WARPD_RETURN_IF_ERROR(p_->uppers_host->Pull(m, *p_->uppers));
  }
  if (p_->groups != nullptr) WARPD_RETURN_IF_ERROR(p_->groups_host->Pull(m, *p_->groups));
  return absl::OkStatus();
}

absl::Status MirroredTree::Publish(bool tree) {
  const DeviceMirror& mirror = *p_->mirror;
  const wp::bvh_t& host = is_mesh() ? p_->mesh->native().bvh : p_->bvh->native();
  wp::bvh_t dev = host;
  dev.nodes = mirror.pointer<const wp::bvh_node_t>(p_->nodes_at);
  dev.parents = mirror.pointer<const int32_t>(p_->parents_at);
  dev.primitives = mirror.pointer<const int32_t>(p_->prims_at);
  if (host.group_ids != nullptr) {
    dev.group_ids = mirror.pointer<const int32_t>(p_->group_ids_at);
    dev.group_roots = mirror.pointer<const int32_t>(p_->group_roots_at);
  }
  // Nodes whenever there is a tree (a refit moves their boxes); the rest of
  // the tree after a build.
  if (host.num_nodes > 0) {
    WARPD_RETURN_IF_ERROR(mirror.Upload(p_->nodes_at, BytesOf(host.nodes, host.num_nodes)));
    if (tree) {
      WARPD_RETURN_IF_ERROR(mirror.Upload(p_->parents_at, BytesOf(host.parents, host.num_nodes)));
      WARPD_RETURN_IF_ERROR(mirror.Upload(p_->prims_at, BytesOf(host.primitives, host.num_items)));
      if (host.num_groups > 0) {
        WARPD_RETURN_IF_ERROR(mirror.Upload(p_->group_ids_at, BytesOf(host.group_ids, host.num_groups)));
        WARPD_RETURN_IF_ERROR(mirror.Upload(p_->group_roots_at, BytesOf(host.group_roots, host.num_groups)));
      }
    }
  }
  if (!is_mesh()) {
    dev.item_lowers = DeviceAddress<const wp::vec3f>(p_->lowers);
    dev.item_uppers = DeviceAddress<const wp::vec3f>(p_->uppers);
    return mirror.UploadValue(p_->desc_at, dev);
  }
  const wp::mesh_t& hm = p_->mesh->native();
  // The triangles' boxes, lowers then uppers, back to back (mesh.cc).
  WARPD_RETURN_IF_ERROR(mirror.Upload(p_->boxes_at, BytesOf(hm.bvh.item_lowers, int64_t{2} * hm.num_tris)));
  dev.item_lowers = mirror.pointer<const wp::vec3f>(p_->boxes_at);
  dev.item_uppers = dev.item_lowers + hm.num_tris;
  wp::mesh_t dm = hm;
  dm.bvh = dev;
  const VertexArrays& v = p_->vertex;
  dm.points = DeviceAddress<const wp::vec3f>(v.points);
  dm.indices = DeviceAddress<const wp::int32>(p_->indices);
  dm.velocities = DeviceAddress<const wp::vec3f>(v.velocities);
  dm.num_velocities = v.velocities != nullptr ? static_cast<wp::int32>(v.velocities->layout().num_elements) : 0;
  dm.points_grad = DeviceAddress<wp::vec3f>(v.points_grad);
  dm.velocities_grad = DeviceAddress<wp::vec3f>(v.velocities_grad);
  dm.bvh_id = tree_id_;
  return mirror.UploadValue(p_->desc_at, dm);
}

absl::Status MirroredTree::Rebuild(BvhSplit split, const std::atomic<bool>* cancel, const ParallelFor* parallel) {
  TreeObject& host = host_tree();
  absl::Status s = Pull();
  if (s.ok()) s = host.Rebuild(split, cancel, parallel);
  absl::Status published = Publish(true);
  return s.ok() ? published : s;
}

absl::Status MirroredTree::Refit(const std::atomic<bool>* cancel, const ParallelFor* parallel) {
  TreeObject& host = host_tree();
  const wp::bvh_t& desc = p_->mesh != nullptr ? p_->mesh->native().bvh : p_->bvh->native();
  const bool had_tree = desc.num_nodes > 0;
  absl::Status s = Pull();
  if (s.ok()) s = host.Refit(cancel, parallel);
  // A refit of a tree never built builds it: then its whole tree is new.
  absl::Status published = Publish(!had_tree);
  return s.ok() ? published : s;
}

absl::Status MirroredTree::SetArrays(const VertexArrays& arrays) {
  if (!is_mesh()) return TreeObject::SetArrays(arrays);
  VertexArrays& v = p_->vertex;
  WARPD_RETURN_IF_ERROR(Mesh::CheckNewArrays(arrays, device(), *v.points, v.velocities.get()));
  const VertexArrays previous = v;  // until the descriptor no longer points at them
  if (arrays.velocities != nullptr) {
    v.velocities = arrays.velocities;
    v.velocities_grad = arrays.velocities_grad;
  }
  if (arrays.points != nullptr) {
    v.points = arrays.points;
    v.points_grad = arrays.points_grad;
    return Refit();  // publishes the new arrays with the refitted tree
  }
  return Publish(false);
}

absl::Status MirroredTree::SetGradients(std::shared_ptr<const Array> points_grad,
                                        std::shared_ptr<const Array> velocities_grad) {
  if (!is_mesh()) return absl::InvalidArgumentError("only a mesh has gradient arrays");
  VertexArrays& v = p_->vertex;
  WARPD_RETURN_IF_ERROR(
      Mesh::CheckGradients(device(), *v.points, points_grad.get(), v.velocities.get(), velocities_grad.get()));
  const VertexArrays previous = v;  // until the descriptor no longer points at them
  v.points_grad = std::move(points_grad);
  v.velocities_grad = std::move(velocities_grad);
  return Publish(false);
}

}  // namespace warpd::runtime

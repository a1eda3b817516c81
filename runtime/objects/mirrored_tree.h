// warpd runtime: a Mesh or Bvh on a GPU: built on the host, queried on the
// device (device_mirror.h).
//
// A MirroredTree holds the client's arrays on the device (a mesh's points,
// indices, velocities and their gradients; a BVH's lowers and uppers; the
// groups of either) and a host Mesh or Bvh (mesh.h, bvh.h) over host
// copies of the arrays its build reads (HostShadow). Each build or refit,
// in the object's stream order, downloads those arrays into the copies,
// runs the host object's build or refit on the device's host threads, and
// publishes its tree to the mirror: the nodes, parents and item order (a
// mesh's triangle boxes too) and the native descriptor (wp::mesh_t or
// wp::bvh_t) with every pointer a device address: the tree's buffers in the
// mirror, the client's arrays where they are. A tree that failed to build
// is published unbuilt, so a kernel then finds nothing rather than a stale
// tree.
//
//   ASSIGN_OR_RETURN(auto mesh, MirroredTree::CreateMesh(device, "cuda:0", points, indices, nullptr, 4,
//                                                        host_pool, device_pool));
//   RETURN_IF_ERROR(mesh->Rebuild(BvhSplit::kSah));  // in stream order
//
// The host copies and the host tree are the session's host memory, the
// mirror its device memory: both count against the session's limits.
// Errors: as Mesh::Create / Bvh::Create (arrays), RESOURCE_EXHAUSTED
// (memory), and the device's errors of moving bytes.
// Thread-safety: as TreeObject (builds in stream order).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/objects/bvh.h"
#include "runtime/objects/device_mirror.h"
#include "runtime/objects/mesh.h"

namespace warpd::runtime {

class MirroredTree final : public TreeObject {
 public:
  // As Mesh::Create, for arrays on `device` (whose memory `memory` moves).
  static absl::StatusOr<std::shared_ptr<MirroredTree>> CreateMesh(
      ArrayMemory& memory, const std::string& device, std::shared_ptr<const Array> points,
      std::shared_ptr<const Array> indices, std::shared_ptr<const Array> velocities, int leaf_size,
      SegmentPool& host_pool, SegmentPool& device_pool, std::shared_ptr<const Array> groups = nullptr);
  // As Bvh::Create, for arrays on `device`.
  static absl::StatusOr<std::shared_ptr<MirroredTree>> CreateBvh(
      ArrayMemory& memory, const std::string& device, std::shared_ptr<const Array> lowers,
      std::shared_ptr<const Array> uppers, int leaf_size, SegmentPool& host_pool, SegmentPool& device_pool,
      std::shared_ptr<const Array> groups = nullptr);

  // Made by the Create functions (public for make_shared).
  struct Parts;
  explicit MirroredTree(Parts parts);
  ~MirroredTree() override;

  // The device address of the descriptor in the mirror.
  const void* descriptor() const override;
  uint64_t MetadataBytes() const override { return sizeof(*this); }
  // A mesh's tree: its wp::bvh_t (the first member of wp::mesh_t), in the mirror.
  const void* tree_descriptor() const override;
  uint64_t tree_id() const override { return tree_id_; }
  void set_tree_id(uint64_t id) override { tree_id_ = id; }

  absl::Status Rebuild(BvhSplit split, const std::atomic<bool>* cancel = nullptr,
                       const ParallelFor* parallel = nullptr) override;
  absl::Status Refit(const std::atomic<bool>* cancel = nullptr, const ParallelFor* parallel = nullptr) override;
  // A mesh's new points (then refitted) and/or velocities, as Mesh::SetArrays.
  absl::Status SetArrays(const VertexArrays& arrays) override;
  // A mesh's gradient arrays, as Mesh::SetGradients (published at once).
  absl::Status SetGradients(std::shared_ptr<const Array> points_grad, std::shared_ptr<const Array> velocities_grad);

 private:
  // The host tree the mirror copies.
  TreeObject& host_tree() const;
  // Downloads what the host build reads into the host copies.
  absl::Status Pull();
  // Uploads the host tree (`tree`: its node buffers too; else the
  // descriptor and, for a mesh, the triangle boxes) to the mirror.
  absl::Status Publish(bool tree);
  bool is_mesh() const { return kind() == wp::OBJECT_MESH; }

  std::unique_ptr<Parts> p_;
  uint64_t tree_id_ = 0;
};

}  // namespace warpd::runtime

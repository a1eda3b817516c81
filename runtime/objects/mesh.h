// warpd runtime: triangle meshes (Warp's wp.Mesh), kept on the server and
// queried by kernels through runtime/native/warpd/native/mesh.h.
//
// A Mesh holds its points (contiguous vec3f), indices (contiguous int32, one
// dimension, 3 per triangle) and optional velocities (contiguous vec3f)
// arrays for its lifetime, so the client may move the points and refit.
// Its tree is a BVH (runtime/objects/bvh_build.h) over the triangles' boxes,
// which builds and refits recompute from the points first; the boxes, tree
// buffers and build scratch are allocated when it is made, as one block of
// the session's pool (BvhBuffers).
//
//   ASSIGN_OR_RETURN(auto mesh, Mesh::Create("cpu", points, indices, nullptr, 4, pool));
//   RETURN_IF_ERROR(mesh->Rebuild(BvhSplit::kSah));  // in stream order: reads points and indices
//   ... points move ...
//   RETURN_IF_ERROR(mesh->Refit());
//
// Indices are session data the client may rewrite at any time: builds and
// refits fail (INVALID_ARGUMENT, naming the triangle) on a vertex index out
// of range, and the native queries check every index they read anyway.
// Errors: INVALID_ARGUMENT (arrays, leaf size), RESOURCE_EXHAUSTED (memory).
// Thread-safety: Create is thread-safe; Rebuild and Refit run in the
// object's stream order only (geometry_object.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/memory/segment_pool.h"
#include "runtime/objects/array.h"
#include "runtime/objects/bvh.h"
#include "warpd/native/mesh.h"

namespace warpd::runtime {

class Mesh final : public TreeObject {
 public:
  // Triangles a mesh may hold (its tree's items) and points (int32 indices).
  static constexpr int64_t kMaxTriangles = Bvh::kMaxItems;
  static constexpr int64_t kMaxPoints = (int64_t{1} << 31) - 1;

  // velocities: null for none. leaf_size: triangles per leaf, 1..64.
  // groups: null, or one int32 per triangle (mesh_get_group_root).
  static absl::StatusOr<std::shared_ptr<Mesh>> Create(std::string device, std::shared_ptr<const Array> points,
                                                      std::shared_ptr<const Array> indices,
                                                      std::shared_ptr<const Array> velocities, int leaf_size,
                                                      SegmentPool& pool, std::shared_ptr<const Array> groups = nullptr);

  // The checks of Create (of arrays on `device`): the number of triangles,
  // or INVALID_ARGUMENT.
  static absl::StatusOr<int64_t> CheckArrays(const std::string& device, const Array* points, const Array* indices,
                                             const Array* velocities, int leaf_size, const Array* groups);
  // The checks of SetArrays, for a mesh of `old_points` and `old_velocities`
  // (null: none) on `device`.
  static absl::Status CheckNewArrays(const VertexArrays& arrays, const std::string& device, const Array& old_points,
                                     const Array* old_velocities);
  // The checks of SetGradients (a gradient null: none).
  static absl::Status CheckGradients(const std::string& device, const Array& points, const Array* points_grad,
                                     const Array* velocities, const Array* velocities_grad);

  // `buffers` holds the triangle boxes as its extra bytes (2 * num_tris vec3f).
  Mesh(std::string device, std::shared_ptr<const Array> points, std::shared_ptr<const Array> indices,
       std::shared_ptr<const Array> velocities, int leaf_size, int64_t num_tris, BvhBuffers buffers);

  const void* descriptor() const override { return &desc_; }
  uint64_t MetadataBytes() const override { return sizeof(*this); }
  const wp::mesh_t& native() const { return desc_; }
  // The tree as a BVH of the session (mesh_get_bvh).
  const void* tree_descriptor() const override { return &desc_.bvh; }
  uint64_t tree_id() const override { return desc_.bvh_id; }
  void set_tree_id(uint64_t id) override { desc_.bvh_id = id; }

  absl::Status Rebuild(BvhSplit split, const std::atomic<bool>* cancel = nullptr,
                       const ParallelFor* parallel = nullptr) override;
  absl::Status Refit(const std::atomic<bool>* cancel = nullptr, const ParallelFor* parallel = nullptr) override;
  // Replaces the points (Warp's mesh.points = new, in stream order; then
  // refits) and/or the velocities (mesh.velocities = new): arrays like the
  // old ones (contiguous vec3f, as many; velocities as many as the old
  // velocities, or the points when there were none), held from now on,
  // with their gradients (null: none).
  absl::Status SetArrays(const VertexArrays& arrays) override;
  // Sets the gradients of the current points and velocities (null: none):
  // contiguous vec3f arrays of as many elements on the mesh's device.
  absl::Status SetGradients(std::shared_ptr<const Array> points_grad, std::shared_ptr<const Array> velocities_grad);

 private:
  // Recomputes the triangles' boxes and the average edge length from the
  // current points (on `parallel`'s threads, if given); INVALID_ARGUMENT
  // for an index out of range (the first such triangle).
  absl::Status ComputeBoxes(const ParallelFor* parallel = nullptr);
  // Points desc_ at the current gradient arrays (null: none).
  void AttachGradients();

  std::shared_ptr<const Array> points_;  // replaced by SetPoints (stream order)
  const std::shared_ptr<const Array> indices_;
  std::shared_ptr<const Array> velocities_;  // replaced by SetArrays (stream order)
  std::shared_ptr<const Array> groups_;  // set by Create
  std::shared_ptr<const Array> points_grad_, velocities_grad_;  // null: none
  const int leaf_size_;
  const int64_t num_tris_;
  const BvhBuffers buffers_;  // extra: the boxes, 2 * num_tris vec3f (lowers, then uppers)
  BvhSplit split_ = BvhSplit::kSah;
  bool built_ = false;
  wp::mesh_t desc_{};
};

}  // namespace warpd::runtime

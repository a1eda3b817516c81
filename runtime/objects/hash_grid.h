// warpd runtime: hash grids (Warp's wp.HashGrid), built on the server.
//
// A HashGrid has fixed dims (each >= 1, at most kMaxCells cells in all, as
// Warp 1.19) and a point precision (float16, float32 or float64: its points
// are vec3 of it). Made with its cell table (two int32 per cell) allocated
// from the session's pool, so the table counts against the session's memory
// like an array; a build sorts a points array into the cells
// (runtime/native/warpd/native/hash_grid.h states the semantics).
//
//   ASSIGN_OR_RETURN(auto grid, HashGrid::Create("cpu", {128, 128, 128}, kFloat32, pool));
//   ASSIGN_OR_RETURN(auto buffers, grid->MakeBuildBuffers(points->layout().num_elements, false, pool));
//   grid->Build(*points, nullptr, 8.0, std::move(buffers));   // in stream order
//
// A build's buffers (point order, group keys, scratch) are made before it
// runs (MakeBuildBuffers, when the command is prepared, so a build that does
// not fit fails at submit time); the grid keeps the last build's buffers
// until the next build replaces them.
// Errors: INVALID_ARGUMENT (dims, dtype, a points/groups array that does not
// fit), RESOURCE_EXHAUSTED (memory). Thread-safety: Create and
// MakeBuildBuffers are thread-safe; Build runs in the grid's stream order
// only (geometry_object.h).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/types/type.h"
#include "runtime/memory/segment_pool.h"
#include "runtime/objects/array.h"
#include "runtime/objects/device_mirror.h"
#include "runtime/objects/geometry_object.h"
#include "warpd/native/hash_grid.h"

namespace warpd::runtime {

class HashGrid final : public GeometryObject {
 public:
  // Warp 1.19's bound on dim_x * dim_y * dim_z (int32 cell indices).
  static constexpr int64_t kMaxCells = (int64_t{1} << 31) - 1;
  // Points a build may sort (int32 point indices).
  static constexpr int64_t kMaxPoints = (int64_t{1} << 31) - 1;

  // The buffers of one build of `points` points.
  struct BuildBuffers {
    int64_t points = 0;
    bool grouped = false;
    std::shared_ptr<CpuBuffer> point_ids;   // int32 per point
    std::shared_ptr<CpuBuffer> point_keys;  // uint64 per point, grouped builds only
    std::shared_ptr<CpuBuffer> cells;       // int32 per point: scratch
    // A mirrored grid's (PrepareMirroredBuild): host copies of the points
    // and groups, and the device block the point ids and keys go to.
    std::optional<HostShadow> points_host, groups_host;
    std::unique_ptr<DeviceMirror> device_points;
    uint64_t keys_at = 0;
  };

  static absl::StatusOr<std::shared_ptr<HashGrid>> Create(std::string device, std::array<int64_t, 3> dims,
                                                          types::ScalarKind dtype, SegmentPool& pool);

  // A grid on a device whose memory the host cannot address (a GPU): built
  // on the host as above, then published to a DeviceMirror
  // (device_mirror.h) of `device_pool`: its descriptor, cell tables and
  // each build's point ids and keys, which the device's kernels query.
  static absl::StatusOr<std::shared_ptr<HashGrid>> CreateMirrored(ArrayMemory& memory, std::string device,
                                                                  std::array<int64_t, 3> dims,
                                                                  types::ScalarKind dtype, SegmentPool& host_pool,
                                                                  SegmentPool& device_pool);

  HashGrid(std::string device, std::array<int32_t, 3> dims, types::ScalarKind dtype,
           std::shared_ptr<CpuBuffer> cell_starts, std::shared_ptr<CpuBuffer> cell_ends);

  // The host descriptor, or a mirrored grid's device address of its own.
  const void* descriptor() const override;
  bool mirrored() const { return mirror_ != nullptr; }
  uint64_t MetadataBytes() const override { return sizeof(*this); }
  types::ScalarKind dtype() const { return dtype_; }
  // The element type of the points it takes: vec3 of dtype().
  types::TypeRef point_type() const { return types::Vector(3, dtype_); }
  const wp::hash_grid_t& native() const { return desc_; }

  // INVALID_ARGUMENT unless `points` holds vec3 of dtype() (any shape and
  // strides, read in row-major order), and `groups` (may be null) int32
  // with as many elements, both on this grid's device, and `radius` (the
  // cell width) is finite and > 0.
  absl::Status CheckBuild(const Array& points, const Array* groups, double radius) const;
  // Buffers for a build of `points` points (RESOURCE_EXHAUSTED when the pool
  // refuses).
  static absl::StatusOr<std::shared_ptr<BuildBuffers>> MakeBuildBuffers(int64_t points, bool grouped,
                                                                       SegmentPool& pool);
  // What a mirrored grid's build of `points` (and `groups`) needs besides
  // MakeBuildBuffers': host copies of them, and device memory (from
  // `device_pool`) for the point ids and keys. A no-op for other grids.
  absl::Status PrepareMirroredBuild(BuildBuffers& buffers, const Array& points, const Array* groups,
                                    SegmentPool& host_pool, SegmentPool& device_pool) const;
  // Sorts `points` (and `groups`) into the cells with cell width `radius`;
  // CheckBuild must have accepted them and `buffers` must fit them. CANCELLED
  // (the grid then holds no points) when `*cancel` is set meanwhile.
  absl::Status Build(const Array& points, const Array* groups, double radius, std::shared_ptr<BuildBuffers> buffers,
                     const std::atomic<bool>* cancel = nullptr);

 private:
  // Build on host arrays (CheckBuild passed).
  absl::Status BuildHost(const Array& points, const Array* groups, double radius,
                         std::shared_ptr<BuildBuffers> buffers, const std::atomic<bool>* cancel);
  // A mirrored grid: the descriptor and the last build to the mirror.
  absl::Status Publish();

  const types::ScalarKind dtype_;
  const std::shared_ptr<CpuBuffer> cell_starts_, cell_ends_;
  std::shared_ptr<BuildBuffers> built_;  // the buffers desc_ points into
  wp::hash_grid_t desc_{};
  // Mirrored grids: the device's memory, the mirror (descriptor, then the
  // cell starts and ends), where the starts and ends lie in it.
  ArrayMemory* memory_ = nullptr;
  std::unique_ptr<DeviceMirror> mirror_;
  uint64_t starts_at_ = 0, ends_at_ = 0;
};

}  // namespace warpd::runtime

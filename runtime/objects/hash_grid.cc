#include "runtime/objects/hash_grid.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace warpd::runtime {

namespace {

// Element `flat` (row-major over the shape) of `a`.
const std::byte* ElementAt(const Array& a, uint64_t flat, uint64_t elem_size) {
  if (a.contiguous()) return a.data() + flat * elem_size;
  int64_t offset = 0;
  for (int d = a.ndim() - 1; d >= 0; --d) {
    const uint64_t extent = static_cast<uint64_t>(a.shape()[static_cast<size_t>(d)]);
    offset += static_cast<int64_t>(flat % extent) * a.strides()[static_cast<size_t>(d)];
    flat /= extent;
  }
  return a.data() + offset;
}

int32_t GroupOf(const Array& groups, uint64_t i) {
  int32_t g;
  std::memcpy(&g, ElementAt(groups, i, sizeof(g)), sizeof(g));
  return g;
}

wp::int32 NativeDtype(types::ScalarKind s) {
  switch (s) {
    case types::ScalarKind::kFloat16: return wp::HASH_GRID_FLOAT16;
    case types::ScalarKind::kFloat64: return wp::HASH_GRID_FLOAT64;
    default: return wp::HASH_GRID_FLOAT32;
  }
}

// Each point's cell, as the kernels' queries compute it.
template <typename T>
bool ComputeCells(const wp::hash_grid_t& desc, const Array& points, int32_t* cells, const std::atomic<bool>* cancel) {
  const uint64_t n = points.layout().num_elements;
  for (uint64_t i = 0; i < n; ++i) {
    if ((i & 0xffff) == 0 && cancel != nullptr && cancel->load(std::memory_order_relaxed)) return false;
    wp::vec_t<3, T> p;
    std::memcpy(&p, ElementAt(points, i, sizeof(p)), sizeof(p));
    cells[i] = wp::hash_grid_point_cell(desc, p);
  }
  return true;
}

}  // namespace

absl::StatusOr<std::shared_ptr<HashGrid>> HashGrid::Create(std::string device, std::array<int64_t, 3> dims,
                                                           types::ScalarKind dtype, SegmentPool& pool) {
  if (dtype != types::ScalarKind::kFloat16 && dtype != types::ScalarKind::kFloat32 &&
      dtype != types::ScalarKind::kFloat64) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported dtype ", std::string(types::ScalarName(dtype)),
                                                   " for HashGrid. Supported types: float16, float32, float64"));
  }
  for (int64_t d : dims) {
    if (d <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Hash grid dimensions must be positive, got ", dims[0], " x ", dims[1], " x ", dims[2]));
    }
    if (d > kMaxCells) break;  // the product check below reports it
  }
  const bool too_many = dims[0] > kMaxCells || dims[1] > kMaxCells || dims[2] > kMaxCells ||
                        dims[0] * dims[1] > kMaxCells || dims[0] * dims[1] * dims[2] > kMaxCells;
  if (too_many) {
    return absl::InvalidArgumentError(absl::StrCat("Hash grid cell count exceeds supported limit: ", dims[0], " * ",
                                                   dims[1], " * ", dims[2], " > ", kMaxCells));
  }
  const uint64_t cells = static_cast<uint64_t>(dims[0] * dims[1] * dims[2]);
  auto starts = pool.Allocate(cells * sizeof(int32_t), "hash grid cells");
  if (!starts.ok()) return starts.status();
  auto ends = pool.Allocate(cells * sizeof(int32_t), "hash grid cells");
  if (!ends.ok()) return ends.status();
  return std::make_shared<HashGrid>(std::move(device),
                                    std::array<int32_t, 3>{static_cast<int32_t>(dims[0]), static_cast<int32_t>(dims[1]),
                                                           static_cast<int32_t>(dims[2])},
                                    dtype, *std::move(starts), *std::move(ends));
}

absl::StatusOr<std::shared_ptr<HashGrid>> HashGrid::CreateMirrored(ArrayMemory& memory, std::string device,
                                                                   std::array<int64_t, 3> dims,
                                                                   types::ScalarKind dtype, SegmentPool& host_pool,
                                                                   SegmentPool& device_pool) {
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<HashGrid> grid, Create(device, dims, dtype, host_pool));
  const uint64_t cells = static_cast<uint64_t>(grid->desc_.num_cells);
  MirrorLayout layout;
  layout.Add(sizeof(wp::hash_grid_t));
  grid->starts_at_ = layout.Add(cells * sizeof(int32_t));
  grid->ends_at_ = layout.Add(cells * sizeof(int32_t));
  WARPD_ASSIGN_OR_RETURN(grid->mirror_, DeviceMirror::Create(memory, device, layout.bytes(), device_pool,
                                                              "hash grid"));
  grid->memory_ = &memory;
  WARPD_RETURN_IF_ERROR(grid->Publish());  // unbuilt: queries yield nothing until the first build
  return grid;
}

const void* HashGrid::descriptor() const {
  return mirror_ != nullptr ? mirror_->pointer<const void>(0) : &desc_;
}

HashGrid::HashGrid(std::string device, std::array<int32_t, 3> dims, types::ScalarKind dtype,
                   std::shared_ptr<CpuBuffer> cell_starts, std::shared_ptr<CpuBuffer> cell_ends)
    : GeometryObject(wp::OBJECT_HASH_GRID, std::move(device)),
      dtype_(dtype),
      cell_starts_(std::move(cell_starts)),
      cell_ends_(std::move(cell_ends)) {
  desc_.dim_x = dims[0];
  desc_.dim_y = dims[1];
  desc_.dim_z = dims[2];
  desc_.num_cells = dims[0] * dims[1] * dims[2];
  desc_.cell_starts = reinterpret_cast<const wp::int32*>(cell_starts_->data());
  desc_.cell_ends = reinterpret_cast<const wp::int32*>(cell_ends_->data());
  desc_.dtype = NativeDtype(dtype);
}

absl::Status HashGrid::CheckBuild(const Array& points, const Array* groups, double radius) const {
  if (!types::SameType(points.dtype(), point_type())) {
    return absl::InvalidArgumentError(absl::StrCat("Hash grid points should have type ", point_type()->ToString(),
                                                   ", got ", points.dtype()->ToString()));
  }
  if (!(radius > 0.0) || !std::isfinite(radius)) {
    return absl::InvalidArgumentError(absl::StrCat("Hash grid cell width must be positive, got ", radius));
  }
  if (points.device() != device()) {
    return absl::InvalidArgumentError(absl::StrCat("points must live on the same device as this HashGrid ('",
                                                   device(), "'), not '", points.device(), "'"));
  }
  if (points.layout().num_elements > static_cast<uint64_t>(kMaxPoints)) {
    return absl::InvalidArgumentError(absl::StrCat("a hash grid holds at most ", kMaxPoints, " points, got ",
                                                   points.layout().num_elements));
  }
  if (groups != nullptr) {
    if (!groups->dtype()->is_scalar_of(types::ScalarKind::kInt32)) {
      return absl::InvalidArgumentError(
          absl::StrCat("groups should be an array of type wp.int32, got ", groups->dtype()->ToString()));
    }
    if (groups->device() != device()) {
      return absl::InvalidArgumentError("groups must live on the same device as this HashGrid");
    }
    if (groups->layout().num_elements != points.layout().num_elements) {
      return absl::InvalidArgumentError(absl::StrCat("groups must have the same length as points (",
                                                     points.layout().num_elements, "), got ",
                                                     groups->layout().num_elements));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<HashGrid::BuildBuffers>> HashGrid::MakeBuildBuffers(int64_t points, bool grouped,
                                                                                  SegmentPool& pool) {
  if (points < 0 || points > kMaxPoints) {
    return absl::InvalidArgumentError(absl::StrCat("a hash grid holds 0 to ", kMaxPoints, " points, got ", points));
  }
  auto b = std::make_shared<BuildBuffers>();
  b->points = points;
  b->grouped = grouped;
  if (points == 0) return b;
  const uint64_t n = static_cast<uint64_t>(points);
  auto ids = pool.Allocate(n * sizeof(int32_t), "hash grid points", Fill::kAny);
  if (!ids.ok()) return ids.status();
  b->point_ids = *std::move(ids);
  auto cells = pool.Allocate(n * sizeof(int32_t), "hash grid points", Fill::kAny);
  if (!cells.ok()) return cells.status();
  b->cells = *std::move(cells);
  if (grouped) {
    auto keys = pool.Allocate(n * sizeof(uint64_t), "hash grid points", Fill::kAny);
    if (!keys.ok()) return keys.status();
    b->point_keys = *std::move(keys);
  }
  return b;
}

absl::Status HashGrid::PrepareMirroredBuild(BuildBuffers& buffers, const Array& points, const Array* groups,
                                            SegmentPool& host_pool, SegmentPool& device_pool) const {
  if (mirror_ == nullptr) return absl::OkStatus();
  WARPD_ASSIGN_OR_RETURN(buffers.points_host, HostShadow::Create(points, host_pool, "hash grid points (host copy)"));
  if (groups != nullptr) {
    WARPD_ASSIGN_OR_RETURN(buffers.groups_host, HostShadow::Create(*groups, host_pool, "hash grid groups (host copy)"));
  }
  if (buffers.points == 0) return absl::OkStatus();
  const uint64_t n = static_cast<uint64_t>(buffers.points);
  MirrorLayout layout;
  layout.Add(n * sizeof(int32_t));
  if (buffers.grouped) buffers.keys_at = layout.Add(n * sizeof(uint64_t));
  WARPD_ASSIGN_OR_RETURN(buffers.device_points,
                         DeviceMirror::Create(*memory_, device(), layout.bytes(), device_pool, "hash grid points"));
  return absl::OkStatus();
}

absl::Status HashGrid::Build(const Array& points, const Array* groups, double radius,
                             std::shared_ptr<BuildBuffers> buffers, const std::atomic<bool>* cancel) {
  if (absl::Status s = CheckBuild(points, groups, radius); !s.ok()) return s;
  if (mirror_ == nullptr) return BuildHost(points, groups, radius, std::move(buffers), cancel);
  if (buffers == nullptr || !buffers->points_host || (groups != nullptr) != buffers->groups_host.has_value() ||
      (buffers->points > 0 && buffers->device_points == nullptr)) {
    return absl::InternalError("hash grid build: the buffers of a mirrored grid were not prepared");
  }
  // The last build's device block stays until the descriptor no longer
  // points into it (Publish).
  const std::shared_ptr<BuildBuffers> previous = built_;
  absl::Status s = buffers->points_host->Pull(*memory_, points);
  if (s.ok() && groups != nullptr) s = buffers->groups_host->Pull(*memory_, *groups);
  if (s.ok()) {
    const std::shared_ptr<const Array> host_points = buffers->points_host->array();
    const std::shared_ptr<const Array> host_groups = groups != nullptr ? buffers->groups_host->array() : nullptr;
    s = BuildHost(*host_points, host_groups.get(), radius, std::move(buffers), cancel);
  }
  absl::Status published = Publish();
  return s.ok() ? published : s;
}

absl::Status HashGrid::Publish() {
  wp::hash_grid_t d = desc_;
  d.cell_starts = mirror_->pointer<const wp::int32>(starts_at_);
  d.cell_ends = mirror_->pointer<const wp::int32>(ends_at_);
  d.point_ids = nullptr;
  d.point_keys = nullptr;
  if (desc_.built) {
    const uint64_t cells = static_cast<uint64_t>(desc_.num_cells) * sizeof(int32_t);
    WARPD_RETURN_IF_ERROR(mirror_->Upload(starts_at_, {cell_starts_->data(), cells}));
    WARPD_RETURN_IF_ERROR(mirror_->Upload(ends_at_, {cell_ends_->data(), cells}));
    const uint64_t n = static_cast<uint64_t>(desc_.num_points);
    if (n > 0) {
      const DeviceMirror& points = *built_->device_points;
      WARPD_RETURN_IF_ERROR(
          points.Upload(0, {reinterpret_cast<const std::byte*>(desc_.point_ids), n * sizeof(int32_t)}));
      d.point_ids = points.pointer<const wp::int32>(0);
      if (desc_.point_keys != nullptr) {
        WARPD_RETURN_IF_ERROR(points.Upload(
            built_->keys_at, {reinterpret_cast<const std::byte*>(desc_.point_keys), n * sizeof(uint64_t)}));
        d.point_keys = points.pointer<const wp::uint64>(built_->keys_at);
      }
    }
  }
  return mirror_->UploadValue(0, d);
}

absl::Status HashGrid::BuildHost(const Array& points, const Array* groups, double radius,
                                 std::shared_ptr<BuildBuffers> buffers, const std::atomic<bool>* cancel) {
  const uint64_t n = points.layout().num_elements;
  if (buffers == nullptr || static_cast<uint64_t>(buffers->points) != n || buffers->grouped != (groups != nullptr)) {
    return absl::InternalError("hash grid build: buffers do not fit the points");
  }
  // Until this build completes the grid holds no points (a cancelled build
  // leaves it empty, never half sorted).
  desc_.built = 0;
  desc_.num_points = 0;
  desc_.point_ids = nullptr;
  desc_.point_keys = nullptr;
  built_.reset();
  // 1 / cell width as Warp computes it for each precision: in the type.
  desc_.cell_width_inv_d = 1.0 / radius;
  desc_.cell_width_inv_f = 1.0f / static_cast<float>(radius);
  desc_.cell_width_inv_h = wp::div(wp::float_to_half(1.0f), wp::float_to_half(static_cast<float>(radius)));

  auto* starts = reinterpret_cast<int32_t*>(cell_starts_->data());
  auto* ends = reinterpret_cast<int32_t*>(cell_ends_->data());
  const uint64_t num_cells = static_cast<uint64_t>(desc_.num_cells);
  std::memset(starts, 0, num_cells * sizeof(int32_t));
  std::memset(ends, 0, num_cells * sizeof(int32_t));
  if (n == 0) {
    desc_.built = 1;
    built_ = std::move(buffers);
    return absl::OkStatus();
  }
  auto* cells = reinterpret_cast<int32_t*>(buffers->cells->data());
  auto* ids = reinterpret_cast<int32_t*>(buffers->point_ids->data());
  bool done = false;
  switch (dtype_) {
    case types::ScalarKind::kFloat16: done = ComputeCells<wp::half>(desc_, points, cells, cancel); break;
    case types::ScalarKind::kFloat64: done = ComputeCells<wp::float64>(desc_, points, cells, cancel); break;
    default: done = ComputeCells<wp::float32>(desc_, points, cells, cancel); break;
  }
  if (!done) return absl::CancelledError("hash grid build: cancelled");

  // Counting sort by cell, stable (original order within a cell): count
  // into ends, turn counts into ranges, then place each point at its cell's
  // cursor (ends, advancing from the start).
  for (uint64_t i = 0; i < n; ++i) ++ends[cells[i]];
  int32_t running = 0;
  for (uint64_t c = 0; c < num_cells; ++c) {
    const int32_t count = ends[c];
    starts[c] = running;
    ends[c] = running;
    running += count;
  }
  for (uint64_t i = 0; i < n; ++i) ids[ends[cells[i]]++] = static_cast<int32_t>(i);

  if (groups != nullptr) {
    // Within each cell, by group (the key's order: its bits as uint32), then
    // by original index; keys in the same order.
    auto* keys = reinterpret_cast<uint64_t*>(buffers->point_keys->data());
    for (uint64_t c = 0; c < num_cells; ++c) {
      if (ends[c] - starts[c] > 1) {
        std::sort(ids + starts[c], ids + ends[c], [&](int32_t a, int32_t b) {
          const uint32_t ga = static_cast<uint32_t>(GroupOf(*groups, static_cast<uint64_t>(a)));
          const uint32_t gb = static_cast<uint32_t>(GroupOf(*groups, static_cast<uint64_t>(b)));
          return ga != gb ? ga < gb : a < b;
        });
      }
    }
    for (uint64_t j = 0; j < n; ++j) {
      const int32_t id = ids[j];
      keys[j] = wp::hash_grid_key(cells[id], GroupOf(*groups, static_cast<uint64_t>(id)));
    }
    desc_.point_keys = reinterpret_cast<const wp::uint64*>(keys);
  }
  desc_.point_ids = ids;
  desc_.num_points = static_cast<wp::int32>(n);
  desc_.built = 1;
  built_ = std::move(buffers);
  return absl::OkStatus();
}

}  // namespace warpd::runtime

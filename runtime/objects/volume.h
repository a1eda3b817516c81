// warpd runtime: sparse volumes (Warp's wp.Volume): one NanoVDB grid each.
//
// A Volume owns a copy of one NanoVDB grid (ABI 32, as libnanovdb-dev's
// nanovdb/NanoVDB.h defines it) in a buffer from the session's pool, and a
// native descriptor (runtime/native/warpd/native/volume.h) for kernels. It
// is made from
//  - the bytes of an .nvdb file (FromNvdb): the file's segments are walked
//    with NanoVDB's own io::Header / io::MetaData records, every size checked
//    against the bytes received (nanovdb::io::readGrids trusts them: it
//    allocates whatever a header says), and the grid decompressed (none, ZIP
//    with zlib, BLOSC with libblosc) into a buffer of the checked size;
//  - tiles of 8^3 voxels (FromTiles: Warp's allocate_by_tiles), built with
//    NanoVDB's GridBuilder, every voxel of every tile active and set to the
//    background value.
// The grid is checked once (Check): magic, version 32, sizes, grid type, the
// node sections of the tree (aligned, inside the grid, whole nodes), the
// root table, and every child offset of the root, upper and lower nodes (a
// whole node of the next level, inside that level's section), so a loaded
// grid's topology is sound; the kernels' walk checks every offset again in
// any case (the values may change by volume_store, the topology never does).
//
// Errors: INVALID_ARGUMENT (a file or grid that does not parse or check,
// with what was wrong), UNIMPLEMENTED (a grid type or codec warpd does not
// read), RESOURCE_EXHAUSTED (memory). Thread-safety: the factories are
// thread-safe; the accessors read immutable data (Tiles and Voxels read only
// the topology).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/memory/segment_pool.h"
#include "runtime/objects/device_mirror.h"
#include "runtime/objects/geometry_object.h"
#include "warpd/native/volume.h"

namespace warpd::runtime {

class Volume final : public GeometryObject {
 public:
  // Largest grid warpd loads or builds (also bounded by the session's memory).
  static constexpr uint64_t kMaxGridBytes = uint64_t{1} << 34;
  // Largest number of tiles FromTiles builds.
  static constexpr int64_t kMaxTiles = int64_t{1} << 20;

  // What a grid's file segment says about it.
  struct FileGrid {
    uint32_t index = 0;  // in the file
    uint32_t count = 0;  // grids in the file
  };

  // Grid `grid_index` (0-based, across segments) of an .nvdb file's bytes.
  static absl::StatusOr<std::shared_ptr<Volume>> FromNvdb(std::string device, absl::Span<const uint8_t> file,
                                                         uint32_t grid_index, SegmentPool& pool);

  // One grid's bytes (no file container), copied.
  static absl::StatusOr<std::shared_ptr<Volume>> FromGrid(std::string device, absl::Span<const uint8_t> grid,
                                                         SegmentPool& pool);

  // A grid of value type `type` (a wp::volume_value_type of a value grid, or
  // VOLUME_TILE_INDEX with an empty background for an index volume)
  // whose tiles have the origins `tiles` (multiples of 8 after flooring),
  // every voxel active with `background` (the value's bytes), and the
  // index-to-world map `mat` (row-major 3x3) and `translation`. With
  // VOLUME_VOXEL_INDEX (an empty background), `tiles` are voxels: an index
  // volume whose active voxels are exactly those (Warp's allocate_by_voxels).
  static absl::StatusOr<std::shared_ptr<Volume>> FromTiles(std::string device, int32_t type,
                                                          absl::Span<const std::array<int32_t, 3>> tiles,
                                                          absl::Span<const uint8_t> background,
                                                          const std::array<double, 9>& mat,
                                                          const std::array<double, 3>& translation,
                                                          SegmentPool& pool);

  // Checks a grid's bytes (as above) and fills `desc` (its grid pointer
  // left null). Exposed for tests.
  static absl::Status Check(absl::Span<const uint8_t> grid, wp::volume_t* desc);

  Volume(std::string device, std::shared_ptr<CpuBuffer> buffer, uint64_t bytes, const wp::volume_t& desc);

  // The host descriptor, or a mirrored volume's device address of its own.
  const void* descriptor() const override;
  uint64_t MetadataBytes() const override { return sizeof(*this); }
  const wp::volume_t& native() const { return desc_; }

  // Makes the volume live on a device whose memory the host cannot address
  // (a GPU; `device` names it, as this volume was made for): its grid and
  // descriptor are copied once to a DeviceMirror (device_mirror.h) of
  // `device_pool`, which that device's kernels query and store into (the
  // host copy then keeps the grid's layout, not its values). Before the
  // volume is in any launch table.
  absl::Status Mirror(ArrayMemory& memory, SegmentPool& device_pool);
  bool mirrored() const { return mirror_ != nullptr; }
  // Bytes [offset, offset + out.size()) of the grid, values as kernels left
  // them (a mirrored grid's from the device; the caller orders this after
  // the launches that store). OUT_OF_RANGE past the grid.
  absl::Status ReadBytes(uint64_t offset, absl::Span<std::byte> out) const;

  // Grid metadata (from the grid header, read when the volume was made).
  const std::string& name() const { return name_; }
  uint64_t grid_bytes() const { return desc_.grid_bytes; }
  uint32_t grid_index() const { return grid_index_; }
  uint32_t grid_count() const { return grid_count_; }
  // Warp's type string: "float", "Vec3f", "OnIndex", ...
  const std::string& type_name() const { return type_name_; }
  std::array<float, 9> transform() const;
  std::array<float, 3> translation() const;
  std::array<double, 3> voxel_size() const { return voxel_size_; }
  // NanoVDB's GridType and GridClass numbers and world bounds (min, max).
  uint32_t grid_type() const { return grid_type_; }
  uint32_t grid_class() const { return grid_class_; }
  const std::array<double, 6>& world_bbox() const { return world_bbox_; }
  // The tree's active voxels and internal node counts (lower, upper).
  uint64_t active_voxel_count() const { return active_voxel_count_; }
  std::array<uint32_t, 2> internal_counts() const { return internal_counts_; }
  uint32_t leaf_count() const { return desc_.leaf_count; }
  // Warp's voxel count: every voxel of every leaf of a value grid, the
  // active voxels of an index grid.
  uint64_t voxel_count() const { return voxel_count_; }
  // Blind data arrays (Warp's feature arrays).
  struct BlindData {
    uint64_t offset = 0;  // from the grid's start
    uint64_t bytes = 0;
    uint64_t count = 0;
    uint32_t type = 0;  // NanoVDB GridType of the elements
    std::string name;
  };
  const std::vector<BlindData>& blind_data() const { return blind_; }

  // The grid's bytes in host memory (values as kernels left them, but for
  // a mirrored volume, whose values are on its device: ReadBytes).
  absl::Span<const uint8_t> bytes() const { return {desc_.grid, desc_.grid_bytes}; }
  // Each leaf's origin, 3 int32 per leaf, in leaf order.
  void Tiles(int32_t* out) const;
  // Each voxel's coordinates, 3 int32 per voxel, in the order of
  // volume_lookup_index (voxel_count() of them).
  void Voxels(int32_t* out) const;

 private:
  absl::Status ReadMetadata();

  const std::shared_ptr<CpuBuffer> buffer_;
  wp::volume_t desc_{};
  std::string name_, type_name_;
  uint32_t grid_index_ = 0, grid_count_ = 1;
  std::array<double, 3> voxel_size_{};
  uint32_t grid_type_ = 0, grid_class_ = 0;
  uint64_t active_voxel_count_ = 0;
  std::array<uint32_t, 2> internal_counts_{};
  std::array<double, 6> world_bbox_{};
  uint64_t voxel_count_ = 0;
  std::vector<BlindData> blind_;
  std::unique_ptr<DeviceMirror> mirror_;  // a mirrored volume's: descriptor, then the grid at kMirrorGridAt
  static constexpr uint64_t kMirrorGridAt = MirrorLayout::kAlign;
};

}  // namespace warpd::runtime

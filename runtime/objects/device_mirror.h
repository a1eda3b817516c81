// warpd runtime: the copy, in a GPU's memory, of an object the host builds.
//
// Meshes, BVHs, hash grids and volumes are built by host code (bvh_build.h,
// hash_grid.cc, volume.cc) over host memory. On a device whose memory the
// host cannot address (a GPU), the object builds into host working memory
// as on the CPU and publishes the result to a DeviceMirror: one block of the
// device's memory holding the native descriptor the device's kernels read
// (wp::mesh_t, ...) and the buffers it points to, with every pointer in it
// rewritten to a device address. The object table of a launch on that
// device names the mirror's descriptor (GeometryObject::descriptor()).
//
//   MirrorLayout layout;
//   const uint64_t desc_at = layout.Add(sizeof(wp::hash_grid_t));
//   const uint64_t cells_at = layout.Add(cells * sizeof(int32_t));
//   ASSIGN_OR_RETURN(auto mirror, DeviceMirror::Create(device, "cuda:0", layout.bytes(), pool, "hash grid"));
//   RETURN_IF_ERROR(mirror->Upload(cells_at, AsBytes(starts)));   // then the descriptor
//
// The block is the session's device memory (charged to it like an array's),
// zeroed when made, and lives as long as its DeviceMirror. Uploads and
// downloads run where they are called (Device::Upload / Download): the
// object's build command calls them in the stream order of the object's
// device, after the launches before it finished and before those after it
// start, so a kernel never sees a half-published object.
// Thread-safety: as the object's builds (stream order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/memory/segment_pool.h"
#include "runtime/objects/array.h"
#include "runtime/objects/array_memory.h"

namespace warpd::runtime {

// Offsets of the parts of a mirror block, each aligned to kAlign.
class MirrorLayout {
 public:
  static constexpr uint64_t kAlign = 256;
  // Reserves `bytes` and returns their offset.
  uint64_t Add(uint64_t bytes) {
    const uint64_t at = bytes_;
    bytes_ += (bytes + kAlign - 1) / kAlign * kAlign;
    return at;
  }
  uint64_t bytes() const { return bytes_; }

 private:
  uint64_t bytes_ = 0;
};

class DeviceMirror {
 public:
  // A zeroed block of `bytes` (> 0) on `device`, from `pool` (the session's
  // pool of that device). RESOURCE_EXHAUSTED when the pool or the device
  // refuses.
  // `device` names the device ("cuda:0").
  static absl::StatusOr<std::unique_ptr<DeviceMirror>> Create(ArrayMemory& memory, const std::string& device,
                                                              uint64_t bytes, SegmentPool& pool, std::string_view tag);

  DeviceMirror(ArrayMemory& memory, std::shared_ptr<const Array> block) : memory_(memory), block_(std::move(block)) {}
  DeviceMirror(const DeviceMirror&) = delete;
  DeviceMirror& operator=(const DeviceMirror&) = delete;

  // Byte `offset` of the block as the device's kernels address it.
  uint64_t address(uint64_t offset = 0) const { return block_->address() + offset; }
  template <typename T>
  T* pointer(uint64_t offset) const {
    return reinterpret_cast<T*>(address(offset));
  }

  // Host bytes -> [offset, offset + bytes.size()) of the block.
  absl::Status Upload(uint64_t offset, absl::Span<const std::byte> bytes) const;
  // ... of an object's bytes.
  template <typename T>
  absl::Status UploadValue(uint64_t offset, const T& value) const {
    return Upload(offset, absl::MakeConstSpan(reinterpret_cast<const std::byte*>(&value), sizeof(T)));
  }
  // [offset, offset + out.size()) of the block -> host `out`.
  absl::Status Download(uint64_t offset, absl::Span<std::byte> out) const;

 private:
  ArrayMemory& memory_;
  const std::shared_ptr<const Array> block_;  // uint8, bytes() elements
};

// Host working copies of device arrays, which host builders read in place
// of them: a HostShadow is a contiguous one-dimensional array on device
// "cpu" with the device array's element type and count, in the session's
// host pool, filled from the device array on each Pull (its logical bytes:
// row-major element order, whatever its strides).
class HostShadow {
 public:
  // INVALID_ARGUMENT for an array of another element count than `of`'s
  // (Pull's), RESOURCE_EXHAUSTED when `pool` refuses.
  static absl::StatusOr<HostShadow> Create(const Array& of, SegmentPool& pool, std::string_view tag);
  // `from` (same element type and count as the shadow) -> the shadow.
  absl::Status Pull(ArrayMemory& memory, const Array& from) const;
  const std::shared_ptr<const Array>& array() const { return array_; }

 private:
  std::shared_ptr<const Array> array_;
};

}  // namespace warpd::runtime

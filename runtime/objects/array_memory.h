// warpd runtime: what objects need of the device their memory is on.
//
// Objects built on the host for a GPU (device_mirror.h) allocate device
// memory and move bytes to and from it. Device (runtime/device/device.h)
// implements this interface, so runtime/objects does not depend on the
// device layer above it. Thread-safe, as Device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/memory/buffer.h"
#include "runtime/memory/segment_pool.h"

namespace warpd::runtime {

class Array;  // array.h

class ArrayMemory {
 public:
  virtual ~ArrayMemory() = default;
  // As Device::Allocate, Upload and Download.
  virtual absl::StatusOr<std::shared_ptr<Buffer>> Allocate(uint64_t bytes, std::string_view tag, SegmentPool* pool,
                                                           Fill fill = Fill::kZero) = 0;
  virtual absl::Status Upload(const Array& dst, uint64_t offset, absl::Span<const std::byte> bytes) = 0;
  virtual absl::Status Download(const Array& src, uint64_t offset, absl::Span<std::byte> out) = 0;
};

}  // namespace warpd::runtime

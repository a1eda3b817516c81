// warpd runtime: arrays: a typed, shaped view of one device buffer.
//
// An Array is immutable once made: element type (a scalar or vector
// ir::Type), 1..4 dims, row-major byte strides, and the buffer that holds its
// bytes. Its contents are mutated only by the command stream of its device.
//
//   ASSIGN_OR_RETURN(ArrayLayout layout, MakeArrayLayout(dtype, {3, 4}));
//   ASSIGN_OR_RETURN(auto buffer, session_pool.Allocate(layout.size_bytes, "array"));
//   auto array = std::make_shared<Array>("cpu", layout, std::move(buffer));
//
// Ownership: an Array holds a shared_ptr to its buffer; launches and copies
// hold shared_ptrs to the Array while queued or running, so freeing a handle
// never frees memory under a running command. Thread-safe (immutable).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/types/type.h"
#include "runtime/memory/segment_pool.h"

namespace warpd::runtime {

struct ArrayLayout {
  types::TypeRef dtype = nullptr;  // element type: any value type
  // Owns dtype when it is (or contains) a struct; null otherwise.
  std::shared_ptr<types::TypeTable> dtype_table;
  int ndim = 0;
  std::array<int64_t, 4> shape{};    // unused dims are 0
  std::array<int64_t, 4> strides{};  // bytes, row-major; unused dims are 0
  uint64_t num_elements = 0;
  uint64_t size_bytes = 0;
};

// Checks and lays out an array: dtype must be a value type (not an array, and
// not a struct holding an array anywhere: element bytes come from clients, so
// a descriptor inside them could carry a forged pointer); 1..4 dims,
// each in [0, 2^31-1] (the descriptor holds int32 extents); the byte size is
// computed with overflow checks. INVALID_ARGUMENT otherwise.
absl::StatusOr<ArrayLayout> MakeArrayLayout(types::TypeRef dtype, absl::Span<const int64_t> shape,
                                            std::shared_ptr<types::TypeTable> dtype_table = nullptr);

// Python's tuple spelling of a shape: "(10,)", "(3, 4)".
std::string FormatShape(absl::Span<const int64_t> shape);

class Array {
 public:
  // `buffer` must hold at least layout.size_bytes bytes.
  Array(std::string device, const ArrayLayout& layout, std::shared_ptr<CpuBuffer> buffer)
      : device_(std::move(device)), layout_(layout), buffer_(std::move(buffer)) {}

  const std::string& device() const { return device_; }
  const ArrayLayout& layout() const { return layout_; }
  types::TypeRef dtype() const { return layout_.dtype; }
  int ndim() const { return layout_.ndim; }
  absl::Span<const int64_t> shape() const { return {layout_.shape.data(), size_t(layout_.ndim)}; }
  absl::Span<const int64_t> strides() const {
    return {layout_.strides.data(), size_t(layout_.ndim)};
  }
  uint64_t size_bytes() const { return layout_.size_bytes; }
  // Warp's spelling of the kernel-parameter type this array matches.
  std::string TypeName() const {
    return "array(dtype=" + layout_.dtype->ToString() + ", ndim=" + std::to_string(layout_.ndim) + ")";
  }
  // True when a kernel parameter of type `param` (an array type) accepts this array.
  bool Matches(types::TypeRef param) const {
    return param->is_array() && param->ndim() == layout_.ndim && types::SameType(param->element(), layout_.dtype);
  }
  // Null when size_bytes() == 0.
  std::byte* data() const { return buffer_->data(); }
  const std::shared_ptr<CpuBuffer>& buffer() const { return buffer_; }

  // Writes the 64-byte wp::array_t descriptor (docs/launch_abi.md) to `out`.
  void WriteDescriptor(void* out) const;

  // What the array's bookkeeping occupies beside its data: this object, its
  // buffer's record in the pool, the dtype table of a struct dtype (a client
  // may declare large structs), shared_ptr control blocks. The data itself
  // is charged by the pool, in whole segments.
  uint64_t MetadataBytes() const;

 private:
  const std::string device_;
  const ArrayLayout layout_;
  const std::shared_ptr<CpuBuffer> buffer_;
};

}  // namespace warpd::runtime

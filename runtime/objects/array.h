// warpd runtime: arrays: a typed, shaped view of one device buffer.
//
// An Array is immutable once made: element type (a scalar or vector
// ir::Type), 1..4 dims, byte strides, the buffer that holds its bytes and
// where in it element 0 lies. An array made by CreateArray owns its buffer,
// starts at byte 0 and has row-major strides; a view (array_view.h) shares
// another array's buffer with any byte offset and any non-negative strides
// that keep every element inside it. Its contents are mutated only by the
// command stream of its device.
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
#include "runtime/memory/buffer.h"
#include "runtime/objects/array_members.h"

namespace warpd::runtime {

struct ArrayLayout {
  types::TypeRef dtype = nullptr;  // element type: any value type
  // Owns dtype when it is (or contains) a struct; null otherwise.
  std::shared_ptr<types::TypeTable> dtype_table;
  int ndim = 0;
  std::array<int64_t, 4> shape{};    // unused dims are 0
  std::array<int64_t, 4> strides{};  // bytes, >= 0; unused dims are 0
  uint64_t num_elements = 0;
  // num_elements * the element size: the bytes a transfer of the array
  // moves (array_bytes.h), whatever its strides.
  uint64_t size_bytes = 0;
  // The strides are the row-major strides of the shape (Warp's
  // is_contiguous): the elements are size_bytes back-to-back bytes.
  bool contiguous = true;
};

// INVALID_ARGUMENT unless `dtype` may be an array's element type (see
// MakeArrayLayout); `table` must own it when it is a struct.
absl::Status CheckArrayDtype(types::TypeRef dtype, const types::TypeTable* table, bool allow_array_members = false);

// The row-major byte strides of `shape` for elements of `elem` bytes, as
// MakeArrayLayout lays them out (0 from a dimension outwards when the
// product would pass int64, which only an empty shape can reach).
std::array<int64_t, 4> RowMajorStrides(absl::Span<const int64_t> shape, uint64_t elem);

// Checks and lays out an array: dtype must be a value type (not an array, and
// not a struct holding an array anywhere unless `allow_array_members`: such
// elements hold raw pointers, so only an array the daemon keeps to itself
// may have them, array_members.h); 1..4 dims,
// each in [0, 2^31-1] (the descriptor holds int32 extents); the byte size is
// computed with overflow checks. INVALID_ARGUMENT otherwise.
absl::StatusOr<ArrayLayout> MakeArrayLayout(types::TypeRef dtype, absl::Span<const int64_t> shape,
                                            std::shared_ptr<types::TypeTable> dtype_table = nullptr,
                                            bool allow_array_members = false);

// Python's tuple spelling of a shape: "(10,)", "(3, 4)".
std::string FormatShape(absl::Span<const int64_t> shape);

class Array {
 public:
  // `buffer` (never null) must hold every element: for a row-major layout at
  // offset 0, layout.size_bytes bytes; a view's placement is checked by
  // MakeViewLayout (array_view.h) before it is made.
  // A dtype holding arrays (array_members.h) gets `held`, or new HeldArrays
  // when that is null: a view passes its base's, which it shares.
  Array(std::string device, const ArrayLayout& layout, std::shared_ptr<Buffer> buffer,
        uint64_t byte_offset = 0, std::shared_ptr<HeldArrays> held = nullptr);

  const std::string& device() const { return device_; }
  const ArrayLayout& layout() const { return layout_; }
  types::TypeRef dtype() const { return layout_.dtype; }
  int ndim() const { return layout_.ndim; }
  absl::Span<const int64_t> shape() const { return {layout_.shape.data(), size_t(layout_.ndim)}; }
  absl::Span<const int64_t> strides() const {
    return {layout_.strides.data(), size_t(layout_.ndim)};
  }
  uint64_t size_bytes() const { return layout_.size_bytes; }
  // Whether the elements are size_bytes() back-to-back bytes from data().
  bool contiguous() const { return layout_.contiguous; }
  // Where element 0 lies in buffer(): 0 unless the array is a view.
  uint64_t byte_offset() const { return byte_offset_; }
  // Warp's spelling of the kernel-parameter type this array matches.
  std::string TypeName() const {
    return "array(dtype=" + layout_.dtype->ToString() + ", ndim=" + std::to_string(layout_.ndim) + ")";
  }
  // True when a kernel parameter of type `param` (an array type) accepts this array.
  bool Matches(types::TypeRef param) const {
    return param->is_array() && !param->is_indexed_array() && param->ndim() == layout_.ndim &&
           types::SameType(param->element(), layout_.dtype);
  }
  // Element 0 as a host pointer: null when the buffer is empty (size 0) or
  // is memory the host cannot address (a GPU's: its bytes move through the
  // device, device.h).
  std::byte* data() const {
    std::byte* base = buffer_->host_data();
    return base == nullptr ? nullptr : base + byte_offset_;
  }
  // Element 0 as the device's kernels address it (the descriptor's data);
  // 0 when the buffer is empty.
  uint64_t address() const {
    const uint64_t base = buffer_->address();
    return base == 0 ? 0 : base + byte_offset_;
  }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  // The arrays its elements' descriptors may point to (array_members.h);
  // null unless the dtype holds arrays.
  const std::shared_ptr<HeldArrays>& held() const { return held_; }

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
  const std::shared_ptr<Buffer> buffer_;
  const uint64_t byte_offset_;
  const std::shared_ptr<HeldArrays> held_;
};

}  // namespace warpd::runtime

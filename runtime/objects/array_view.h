// warpd runtime: array views: arrays that share another array's memory.
//
// Warp's Python-scope slicing (`a[1:3]`, `a[:, 1]`, `a[::2]`), reshape,
// flatten, transpose and view(dtype) make arrays that alias their base's
// memory. In warpd such a view is an Array over its base's buffer with a byte
// offset, a shape, byte strides and a dtype of its own (array.h). The client
// computes them; the daemon only checks that the view is safe, whatever the
// request says:
//
//   ViewRequest req;  // column 1 of a (3, 4) float32 array
//   req.offset_bytes = 4;
//   req.shape = shape;      // {3}
//   req.strides = strides;  // {16}
//   ASSIGN_OR_RETURN(ViewPlacement v, MakeViewLayout(*base, req, max_bytes));
//   auto view = std::make_shared<Array>(base->device(), v.layout, base->buffer(), v.byte_offset);
//
// Ownership: the view holds the buffer (a shared_ptr), so it keeps the
// memory alive when its base's handle is freed; nothing points from the
// base to its views.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/objects/array.h"

namespace warpd::runtime {

struct ViewRequest {
  // Where the view's element 0 lies, in bytes from the base's element 0.
  uint64_t offset_bytes = 0;
  absl::Span<const int64_t> shape;    // 1..4 extents in [0, 2^31-1]
  absl::Span<const int64_t> strides;  // bytes, one per extent, each in [0, 2^63-1]
  // The view's element type; null: the base's.
  types::TypeRef dtype = nullptr;
  // Owns `dtype` when it is (or holds) a struct.
  std::shared_ptr<types::TypeTable> dtype_table;
};

struct ViewPlacement {
  ArrayLayout layout;
  uint64_t byte_offset = 0;  // from the start of the base's buffer
};

// Checks a view of `base` and lays it out. INVALID_ARGUMENT, saying what is
// wrong, when
// - the dtype is not an array element type (CheckArrayDtype);
// - shape and strides differ in length, or have not 1..4 entries, or an
//   extent or stride is negative or too large;
// - the offset or a stride is not a multiple of the dtype's alignment (a
//   misaligned element faults on a GPU);
// - an element the view reaches lies outside the base's buffer: every byte
//   in [offset, offset + sum((shape[d] - 1) * strides[d]) + element size)
//   must be in the buffer (for an empty view, the offset must be at most
//   its size), computed without overflow;
// - the view's size in bytes (elements * element size; elements may repeat
//   with a zero stride) is more than `max_bytes`: copies, fills and
//   transfers walk every element, so a view costs no more than the largest
//   array one may make.
// Views may overlap themselves (a zero stride) and may reach any byte of the
// buffer, not only those of `base` (a view of a view can widen again to its
// root array, as in Warp). Thread-safe (a pure function).
absl::StatusOr<ViewPlacement> MakeViewLayout(const Array& base, const ViewRequest& request, uint64_t max_bytes);

}  // namespace warpd::runtime

#include "runtime/objects/array.h"

#include <climits>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/memory/size_math.h"
#include "warpd/native/array.h"

namespace warpd::runtime {

absl::StatusOr<ArrayLayout> MakeArrayLayout(const ir::Type& dtype,
                                            absl::Span<const int64_t> shape) {
  if (!dtype.is_scalar() && !dtype.is_vector()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "array dtype must be a scalar or vector type, got ", dtype.ToString()));
  }
  if (shape.empty() || shape.size() > 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "array shape must have 1 to 4 dimensions, got ", shape.size()));
  }
  ArrayLayout layout;
  layout.dtype = dtype;
  layout.ndim = static_cast<int>(shape.size());
  uint64_t count = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0 || shape[d] > INT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat("array shape ", FormatShape(shape),
                                                     ": dimension ", d, " must be in [0, ",
                                                     INT32_MAX, "]"));
    }
    layout.shape[d] = shape[d];
    auto next = CheckedMul(count, static_cast<uint64_t>(shape[d]));
    if (!next) {
      return absl::InvalidArgumentError(
          absl::StrCat("array shape ", FormatShape(shape), " has too many elements"));
    }
    count = *next;
  }
  const uint64_t elem = dtype.Size();
  auto bytes = CheckedMul(count, elem);
  if (!bytes || *bytes > static_cast<uint64_t>(INT64_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat("array shape ", FormatShape(shape), " of ",
                                                   dtype.ToString(), " is too large"));
  }
  layout.num_elements = count;
  layout.size_bytes = *bytes;
  // Row-major strides. Every partial product is <= size_bytes (or 0 once a
  // zero extent is passed), so none overflows.
  int64_t stride = static_cast<int64_t>(elem);
  for (int d = layout.ndim - 1; d >= 0; --d) {
    layout.strides[d] = stride;
    stride *= layout.shape[d];
  }
  return layout;
}

std::string FormatShape(absl::Span<const int64_t> shape) {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

void Array::WriteDescriptor(void* out) const {
  wp::array_t<unsigned char> desc;
  std::memset(&desc, 0, sizeof(desc));
  desc.data = reinterpret_cast<unsigned char*>(data());
  desc.ndim = layout_.ndim;
  for (int d = 0; d < layout_.ndim; ++d) {
    desc.shape[d] = static_cast<wp::int32>(layout_.shape[d]);
    desc.strides[d] = layout_.strides[d];
  }
  std::memcpy(out, &desc, sizeof(desc));
}

}  // namespace warpd::runtime

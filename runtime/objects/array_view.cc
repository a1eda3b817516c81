#include "runtime/objects/array_view.h"

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/memory/size_math.h"

namespace warpd::runtime {

namespace {

std::string Spelled(absl::Span<const int64_t> values) { return absl::StrCat("(", absl::StrJoin(values, ", "), ")"); }

}  // namespace

absl::StatusOr<ViewPlacement> MakeViewLayout(const Array& base, const ViewRequest& request, uint64_t max_bytes) {
  types::TypeRef dtype = request.dtype != nullptr ? request.dtype : base.dtype();
  std::shared_ptr<types::TypeTable> table =
      request.dtype != nullptr ? request.dtype_table : base.layout().dtype_table;
  // Descriptors (array_members.h) stay where the daemon wrote them: a view
  // of an array whose elements hold some keeps its dtype, and every element
  // it reaches starts on the base's element grid (checked below).
  const bool descriptors = base.dtype()->holds_array();
  if (descriptors && !types::SameType(dtype, base.dtype())) {
    return absl::InvalidArgumentError(absl::StrCat("a view of an array of ", base.dtype()->ToString(),
                                                   " (a struct holding arrays) cannot change its dtype to ",
                                                   dtype->ToString()));
  }
  if (absl::Status s = CheckArrayDtype(dtype, table.get(), /*allow_array_members=*/descriptors); !s.ok()) return s;
  const absl::Span<const int64_t> shape = request.shape;
  const absl::Span<const int64_t> strides = request.strides;
  if (shape.empty() || shape.size() > 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("a view's shape must have 1 to 4 dimensions, got ", shape.size()));
  }
  if (strides.size() != shape.size()) {
    return absl::InvalidArgumentError(absl::StrCat("a view of shape ", FormatShape(shape), " needs ", shape.size(),
                                                   " strides, got ", strides.size()));
  }
  const uint64_t elem = dtype->size();
  const uint64_t align = std::max<uint32_t>(dtype->align(), 1);
  ViewPlacement out;
  ArrayLayout& layout = out.layout;
  layout.dtype = dtype;
  layout.dtype_table = std::move(table);
  layout.ndim = static_cast<int>(shape.size());
  uint64_t count = 1;
  bool count_overflow = false;
  // The byte distance from element 0 to the last element.
  uint64_t last = 0;
  bool reach_overflow = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0 || shape[d] > INT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat("view shape ", FormatShape(shape), ": dimension ", d,
                                                     " must be in [0, ", INT32_MAX, "]"));
    }
    if (strides[d] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("view strides ", Spelled(strides), ": stride ", d,
                                                     " is negative (views with negative steps are not supported)"));
    }
    if (descriptors && static_cast<uint64_t>(strides[d]) % dtype->size() != 0) {
      return absl::InvalidArgumentError(absl::StrCat("view strides ", Spelled(strides), ": stride ", d,
                                                     " is not a multiple of the size of ", dtype->ToString(), " (",
                                                     dtype->size(), " bytes), which a struct holding arrays needs"));
    }
    if (static_cast<uint64_t>(strides[d]) % align != 0) {
      return absl::InvalidArgumentError(absl::StrCat("view strides ", Spelled(strides), ": stride ", d,
                                                     " is not a multiple of the alignment of ", dtype->ToString(),
                                                     " (", align, " bytes)"));
    }
    layout.shape[d] = shape[d];
    layout.strides[d] = strides[d];
    auto next = CheckedMul(count, static_cast<uint64_t>(shape[d]));
    count_overflow |= !next;
    count = next.value_or(0);
    if (shape[d] > 0) {
      auto span = CheckedMul(static_cast<uint64_t>(shape[d] - 1), static_cast<uint64_t>(strides[d]));
      auto sum = span ? CheckedAdd(last, *span) : std::nullopt;
      reach_overflow |= !sum;
      last = sum.value_or(0);
    }
  }
  // A zero extent makes the view empty, even when the other extents'
  // product overflowed before it.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    count = 0;
    count_overflow = false;
  }
  const uint64_t buffer_bytes = base.buffer()->size();
  const std::string where = absl::StrCat("a view of shape ", FormatShape(shape), " and strides ", Spelled(strides),
                                         " at offset ", request.offset_bytes);
  auto offset = CheckedAdd(base.byte_offset(), request.offset_bytes);
  if (!offset || *offset > buffer_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(where, " starts past the end of the base array's memory (",
                                                   buffer_bytes - base.byte_offset(), " bytes from its first element)"));
  }
  if (*offset % align != 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": the offset is not a multiple of the alignment of ",
                                                   dtype->ToString(), " (", align, " bytes)"));
  }
  if (descriptors && *offset % elem != 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": the offset is not a multiple of the size of ",
                                                   dtype->ToString(), " (", elem,
                                                   " bytes), which a struct holding arrays needs"));
  }
  if (count_overflow) {
    return absl::InvalidArgumentError(absl::StrCat(where, " has too many elements"));
  }
  auto bytes = CheckedMul(count, elem);
  if (!bytes || *bytes > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(where, " of ", dtype->ToString(), " spans more than ", max_bytes,
                                                   " bytes, the largest array allowed"));
  }
  if (count > 0) {
    auto end = reach_overflow ? std::nullopt : CheckedAdd(*offset, last);
    if (end) end = CheckedAdd(*end, elem);
    if (!end || *end > buffer_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " reaches past the end of the base array's memory (", buffer_bytes - base.byte_offset(),
                       " bytes from its first element)"));
    }
  }
  layout.num_elements = count;
  layout.size_bytes = *bytes;
  layout.contiguous = RowMajorStrides(shape, elem) == layout.strides;
  out.byte_offset = *offset;
  return out;
}

}  // namespace warpd::runtime

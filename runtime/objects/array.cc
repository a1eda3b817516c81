#include "runtime/objects/array.h"

#include <climits>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/memory/size_math.h"
#include "warpd/native/array.h"

namespace warpd::runtime {
namespace {

// The first member path ("inner.a") of a struct dtype that holds an array;
// empty when there is none. Struct nesting is bounded by the IR limits.
std::string ArrayMemberPath(types::TypeRef t, const std::string& prefix) {
  if (!t->is_struct()) return "";
  for (const types::Member& m : t->members()) {
    std::string path = prefix.empty() ? m.name : absl::StrCat(prefix, ".", m.name);
    if (m.type->is_array()) return path;
    if (std::string inner = ArrayMemberPath(m.type, path); !inner.empty()) return inner;
  }
  return "";
}

}  // namespace

absl::Status CheckArrayDtype(types::TypeRef dtype, const types::TypeTable* table, bool allow_array_members) {
  if (dtype == nullptr || dtype->is_void() || dtype->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "array dtype must be a value type, got ", dtype ? dtype->ToString() : "none"));
  }
  // An array member's descriptor is a raw pointer: only arrays the daemon
  // keeps to itself may hold one (array_members.h).
  if (dtype->holds_array() && !allow_array_members) {
    const std::string path = ArrayMemberPath(dtype, "");
    return absl::InvalidArgumentError(absl::StrCat(
        "array dtype ", dtype->ToString(), " holds an array (member '", path,
        "'): such arrays are made only by CreateArray, in daemon-private memory"));
  }
  if (dtype->contains_struct() && table == nullptr) {
    return absl::InternalError("an array of structs needs the table that owns its dtype");
  }
  return absl::OkStatus();
}

std::array<int64_t, 4> RowMajorStrides(absl::Span<const int64_t> shape, uint64_t elem) {
  // Without a zero extent every partial product is <= the array's byte size.
  // With one, the inner extents may multiply past int64 (shape (0, 2^31-1,
  // 2^31-1, 2^31-1)); such an array addresses nothing, so its strides from
  // there outwards are 0 instead of overflowing.
  std::array<int64_t, 4> strides{};
  uint64_t stride = elem;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    strides[d] = static_cast<int64_t>(stride);
    auto next = CheckedMul(stride, static_cast<uint64_t>(shape[d]));
    stride = next && *next <= static_cast<uint64_t>(INT64_MAX) ? *next : 0;
  }
  return strides;
}

absl::StatusOr<ArrayLayout> MakeArrayLayout(types::TypeRef dtype, absl::Span<const int64_t> shape,
                                            std::shared_ptr<types::TypeTable> dtype_table, bool allow_array_members) {
  if (absl::Status s = CheckArrayDtype(dtype, dtype_table.get(), allow_array_members); !s.ok()) return s;
  if (shape.empty() || shape.size() > 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "array shape must have 1 to 4 dimensions, got ", shape.size()));
  }
  ArrayLayout layout;
  layout.dtype = dtype;
  layout.dtype_table = std::move(dtype_table);
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
  const uint64_t elem = dtype->size();
  auto bytes = CheckedMul(count, elem);
  if (!bytes || *bytes > static_cast<uint64_t>(INT64_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat("array shape ", FormatShape(shape), " of ",
                                                   dtype->ToString(), " is too large"));
  }
  layout.num_elements = count;
  layout.size_bytes = *bytes;
  layout.strides = RowMajorStrides(shape, elem);
  layout.contiguous = true;
  return layout;
}

std::string FormatShape(absl::Span<const int64_t> shape) {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

uint64_t Array::MetadataBytes() const {
  // The buffer object, its free-list/placement record, two control blocks.
  constexpr uint64_t kBufferBytes = 192;
  uint64_t bytes = sizeof(*this) + device_.capacity() + kBufferBytes;
  if (layout_.dtype_table != nullptr) bytes += layout_.dtype_table->MemoryBytes();
  return bytes;
}

Array::Array(std::string device, const ArrayLayout& layout, std::shared_ptr<Buffer> buffer, uint64_t byte_offset,
             std::shared_ptr<HeldArrays> held)
    : device_(std::move(device)),
      layout_(layout),
      buffer_(std::move(buffer)),
      byte_offset_(byte_offset),
      held_(layout.dtype != nullptr && layout.dtype->holds_array()
                ? (held != nullptr ? std::move(held) : std::make_shared<HeldArrays>())
                : nullptr) {}

void Array::WriteDescriptor(void* out) const {
  wp::array_t<unsigned char> desc;
  std::memset(&desc, 0, sizeof(desc));
  desc.data = reinterpret_cast<unsigned char*>(address());
  desc.ndim = layout_.ndim;
  for (int d = 0; d < layout_.ndim; ++d) {
    desc.shape[d] = static_cast<wp::int32>(layout_.shape[d]);
    desc.strides[d] = layout_.strides[d];
  }
  std::memcpy(out, &desc, sizeof(desc));
}

}  // namespace warpd::runtime

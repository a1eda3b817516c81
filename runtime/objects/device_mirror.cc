#include "runtime/objects/device_mirror.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace warpd::runtime {

absl::StatusOr<std::unique_ptr<DeviceMirror>> DeviceMirror::Create(ArrayMemory& memory, const std::string& device,
                                                                   uint64_t bytes, SegmentPool& pool,
                                                                   std::string_view tag) {
  if (bytes == 0) return absl::InvalidArgumentError("a device mirror needs at least one byte");
  WARPD_ASSIGN_OR_RETURN(ArrayLayout layout,
                         MakeArrayLayout(types::Scalar(types::ScalarKind::kUInt8), {static_cast<int64_t>(bytes)}));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, memory.Allocate(bytes, tag, &pool, Fill::kZero));
  return std::make_unique<DeviceMirror>(memory, std::make_shared<Array>(device, layout, std::move(buffer)));
}

absl::Status DeviceMirror::Upload(uint64_t offset, absl::Span<const std::byte> bytes) const {
  if (bytes.empty()) return absl::OkStatus();
  return memory_.Upload(*block_, offset, bytes);
}

absl::Status DeviceMirror::Download(uint64_t offset, absl::Span<std::byte> out) const {
  if (out.empty()) return absl::OkStatus();
  return memory_.Download(*block_, offset, out);
}

absl::StatusOr<HostShadow> HostShadow::Create(const Array& of, SegmentPool& pool, std::string_view tag) {
  const int64_t n = static_cast<int64_t>(of.layout().num_elements);
  WARPD_ASSIGN_OR_RETURN(ArrayLayout layout, MakeArrayLayout(of.dtype(), {n}, of.layout().dtype_table));
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<CpuBuffer> buffer, pool.Allocate(layout.size_bytes, tag, Fill::kAny));
  HostShadow shadow;
  shadow.array_ = std::make_shared<Array>("cpu", layout, std::move(buffer));
  return shadow;
}

absl::Status HostShadow::Pull(ArrayMemory& memory, const Array& from) const {
  if (from.layout().num_elements != array_->layout().num_elements ||
      from.size_bytes() != array_->size_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat("an array of ", from.layout().num_elements,
                                                   " elements does not fit a host copy of ",
                                                   array_->layout().num_elements));
  }
  if (from.size_bytes() == 0) return absl::OkStatus();
  return memory.Download(from, 0, absl::MakeSpan(array_->data(), from.size_bytes()));
}

}  // namespace warpd::runtime

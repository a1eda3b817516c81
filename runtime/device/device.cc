#include "runtime/device/device.h"

#include "absl/strings/str_cat.h"
#include "runtime/device/recorded_work.h"
#include "runtime/memory/size_math.h"
#include "runtime/objects/array.h"

namespace warpd::runtime {

absl::Status Device::CheckRange(const Array& array, uint64_t offset, uint64_t n, const char* op) const {
  if (array.device() != name()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": the array is on device '", array.device(), "', not '", name(), "'"));
  }
  const std::optional<uint64_t> end = CheckedAdd(offset, n);
  if (!end || *end > array.size_bytes()) {
    return absl::OutOfRangeError(absl::StrCat(op, ": ", n, " bytes at offset ", offset,
                                              " run past the end of the array (", array.size_bytes(), " bytes)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<WorkRecorder>> Device::RecordWork() {
  return absl::UnimplementedError(absl::StrCat(info().name, " replays graphs command by command"));
}

absl::StatusOr<std::unique_ptr<WorkRecorder>> Device::BatchWork() {
  return absl::UnimplementedError(absl::StrCat(info().name, " runs a stream's commands one by one"));
}

absl::Status Device::Gemm(const GemmSpec&, int32_t*) {
  return absl::UnimplementedError(absl::StrCat(info().name, " has no device BLAS"));
}

}  // namespace warpd::runtime

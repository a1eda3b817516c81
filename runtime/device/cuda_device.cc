#include "runtime/device/cuda_device.h"

#include "absl/strings/str_cat.h"

namespace warpd::runtime {

CudaDevice::CudaDevice(const cuda::CudaDeviceInfo& gpu) {
  info_.name = absl::StrCat("cuda:", gpu.ordinal);
  info_.alias = gpu.name;
  info_.kind = "cuda";
  info_.arch = gpu.arch();
  info_.uuid = gpu.uuid;
  info_.memory_bytes = gpu.memory_bytes;
  info_.unavailable = kNotYet;
}

absl::Status CudaDevice::NotYet() const {
  return absl::FailedPreconditionError(absl::StrCat("device '", info_.name, "' (", info_.alias, ") cannot run work: ",
                                                    info_.unavailable));
}

absl::StatusOr<std::shared_ptr<CpuBuffer>> CudaDevice::Allocate(uint64_t, std::string_view, SegmentPool*, Fill) {
  return NotYet();
}

absl::Status CudaDevice::RunKernel(const abi::CompiledKernel&, wp::launch_ctx*, const void*, Pass) {
  return NotYet();
}

absl::Status CudaDevice::Upload(const Array&, uint64_t, absl::Span<const std::byte>) { return NotYet(); }

absl::Status CudaDevice::Download(const Array&, uint64_t, absl::Span<std::byte>) { return NotYet(); }

absl::Status CudaDevice::CopyRange(const Array&, uint64_t, const Array&, uint64_t, uint64_t, const std::atomic<bool>*) {
  return NotYet();
}

absl::Status CudaDevice::FillRange(const Array&, uint64_t, uint64_t, std::string_view, const std::atomic<bool>*) {
  return NotYet();
}

}  // namespace warpd::runtime

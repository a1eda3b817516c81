// warpd runtime: a GPU as a Device, listed but not yet able to run work.
//
// The daemon lists every GPU the driver reports ("cuda:N", its name, arch,
// UUID and memory; DeviceInfo::unavailable says why it cannot run work) so
// clients see the node's devices, but CUDA memory, modules and launches are
// later steps (issue 26): Allocate, RunKernel and the data movement fail with
// FAILED_PRECONDITION naming the device and pointing at "cpu". Holds no
// driver resources. Thread-safe (immutable).
#pragma once

#include "runtime/device/cuda/cuda_device_info.h"
#include "runtime/device/device.h"

namespace warpd::runtime {

class CudaDevice final : public Device {
 public:
  // Why a listed GPU cannot run work yet.
  static constexpr const char* kNotYet =
      "CUDA execution is not implemented in this warpd yet: arrays and launches run on \"cpu\"";

  explicit CudaDevice(const cuda::CudaDeviceInfo& gpu);

  const DeviceInfo& info() const override { return info_; }
  abi::Target target() const override { return abi::Target::kCuda; }
  absl::StatusOr<std::shared_ptr<CpuBuffer>> Allocate(uint64_t bytes, std::string_view tag, SegmentPool* pool,
                                                      Fill fill = Fill::kZero) override;
  absl::Status RunKernel(const abi::CompiledKernel& kernel, wp::launch_ctx* ctx, const void* args,
                         Pass pass = Pass::kForward) override;
  absl::Duration launch_time_limit() const override { return absl::ZeroDuration(); }
  // Not yet: FAILED_PRECONDITION, as Allocate (no array can be on it).
  absl::Status Upload(const Array& dst, uint64_t offset, absl::Span<const std::byte> bytes) override;
  absl::Status Download(const Array& src, uint64_t offset, absl::Span<std::byte> out) override;
  absl::Status CopyRange(const Array& dst, uint64_t dst_offset, const Array& src, uint64_t src_offset, uint64_t n,
                    const std::atomic<bool>* cancel = nullptr) override;
  absl::Status FillRange(const Array& array, uint64_t offset, uint64_t n, std::string_view pattern,
                    const std::atomic<bool>* cancel = nullptr) override;

 private:
  absl::Status NotYet() const;

  DeviceInfo info_;
};

}  // namespace warpd::runtime

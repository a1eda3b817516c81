// warpd runtime: a GPU as a Device, listed but not yet able to run work.
//
// The daemon lists every GPU the driver reports ("cuda:N", its name, arch,
// UUID and memory; DeviceInfo::unavailable says why it cannot run work) so
// clients see the node's devices, but CUDA memory, modules and launches are
// later steps (issue 26): Allocate and RunKernel fail with
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

 private:
  absl::Status NotYet() const;

  DeviceInfo info_;
};

}  // namespace warpd::runtime

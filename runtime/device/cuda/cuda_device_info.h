// warpd runtime: what one GPU is, as the CUDA driver describes it.
//
// Queried once per device when the driver loads (QueryDevice); the values
// never change afterwards, so a CudaDeviceInfo is plain, copyable data.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/device/cuda/driver_api.h"

namespace warpd::runtime::cuda {

struct CudaDeviceInfo {
  int ordinal = 0;              // CUDA's ordinal: the N of "cuda:N"
  CUdevice device = 0;          // the driver's handle
  std::string name;             // "NVIDIA H100 80GB HBM3"
  std::string uuid;             // "GPU-5f3e8a1c-...", as nvidia-smi prints it
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  uint64_t memory_bytes = 0;

  // "sm_90": what modules for this device are compiled for.
  std::string arch() const;
};

// The 16 bytes of a UUID as nvidia-smi prints a GPU's:
// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lowercase hex.
std::string FormatGpuUuid(const CUuuid& uuid);

// Asks the driver (initialised) about device `ordinal`. The error names
// the call that failed (CudaError).
absl::StatusOr<CudaDeviceInfo> QueryDevice(const DriverApi& api, int ordinal);

}  // namespace warpd::runtime::cuda

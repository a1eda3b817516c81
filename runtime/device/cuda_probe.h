// warpd runtime: finds NVIDIA GPUs through the driver API, loaded at run time.
//
// libcuda.so.1 is dlopen'ed, never linked, so the daemon builds and runs on
// machines without a driver; then the probe reports no devices and says why.
// The library handle stays open for the life of the process (CUDA devices
// will use it). Thread-safe: the probe runs once; later calls return the
// same result.
#pragma once

#include <string>
#include <vector>

namespace warpd::runtime {

struct CudaDeviceProbe {
  int ordinal = 0;
  std::string name;             // "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;
  uint64_t memory_bytes = 0;
};

struct CudaProbeResult {
  bool driver_loaded = false;
  int driver_version = 0;        // e.g. 12040; 0 when unknown
  std::string driver_version_text;  // "12.4", "" when no driver
  std::string unavailable_reason;   // why there are no devices; "" when there are
  std::vector<CudaDeviceProbe> devices;
};

const CudaProbeResult& ProbeCuda();

}  // namespace warpd::runtime

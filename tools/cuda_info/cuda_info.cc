// warpd-cuda-info: what the NVIDIA driver reports, through warpd's own
// CUDA driver layer (runtime/device/cuda/cuda_driver.h).
//
// Loads libcuda.so.1 as the daemon does, prints the driver version and each
// device (name, arch, SMs, memory, UUID), and retains and releases each
// device's primary context. Built to run on a bare GPU machine (only glibc
// and the NVIDIA driver): absl, libstdc++ and libgcc are linked statically.
// Exit status: 0 every device answered; 3 no driver or no device; 1 the
// driver is unusable (too old, cuInit failed) or a device failed.
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "runtime/device/cuda/cuda_driver.h"

namespace {

using warpd::runtime::cuda::CudaDeviceInfo;
using warpd::runtime::cuda::CudaDriver;
using warpd::runtime::cuda::PrimaryContext;

int Run() {
  const absl::StatusOr<const CudaDriver*>& loaded = CudaDriver::Process();
  if (!loaded.ok()) {
    std::printf("warpd-cuda-info: CUDA unavailable: %s\n", std::string(loaded.status().message()).c_str());
    return loaded.status().code() == absl::StatusCode::kNotFound ? 3 : 1;
  }
  const CudaDriver& driver = **loaded;
  std::printf("warpd-cuda-info: %s, driver for CUDA %s, %zu device(s)\n", driver.path().c_str(),
              driver.version_text().c_str(), driver.devices().size());
  if (driver.devices().empty()) {
    std::printf("warpd-cuda-info: %s\n", driver.no_devices_reason().c_str());
    return 3;
  }
  int failures = 0;
  for (const CudaDeviceInfo& d : driver.devices()) {
    std::printf("cuda:%d  %s  %s  %d SMs  %.1f GiB  %s\n", d.ordinal, d.name.c_str(), d.arch().c_str(), d.sm_count,
                static_cast<double>(d.memory_bytes) / (1 << 30), d.uuid.c_str());
    absl::StatusOr<PrimaryContext> ctx = driver.RetainPrimaryContext(d.ordinal);
    absl::Status released = ctx.ok() ? ctx->Release() : ctx.status();
    if (released.ok()) {
      std::printf("cuda:%d  primary context retained and released\n", d.ordinal);
    } else {
      std::printf("cuda:%d  FAILED: %s\n", d.ordinal, released.ToString().c_str());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    std::fprintf(stderr, "usage: %s   (no arguments; exit 0 ok, 3 no driver or device, 1 failure)\n", argv[0]);
    return 2;
  }
  return Run();
}

#include "server/daemon_state.h"

#include <algorithm>
#include <thread>

#include "runtime/device/cpu_device.h"
#include "runtime/device/cuda_probe.h"
#include "spdlog/spdlog.h"

namespace warpd::server {

namespace {

int HardwareThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace

absl::StatusOr<std::unique_ptr<DaemonState>> DaemonState::Create(const Flags& flags) {
  compiler::Compiler::Options options;
  options.cache_dir = flags.cache_dir;
  options.verify_cuda = flags.verify_cuda;
  absl::StatusOr<std::unique_ptr<compiler::Compiler>> compiler =
      compiler::Compiler::Create(options);
  if (!compiler.ok()) return compiler.status();
  return std::make_unique<DaemonState>(flags, *std::move(compiler));
}

DaemonState::DaemonState(const Flags& flags, std::unique_ptr<compiler::Compiler> compiler)
    : flags_(flags),
      compiler_(std::move(compiler)),
      allocator_(runtime::CpuAllocator::Options{flags.max_array_bytes, 0}),
      // One drain per busy stream; kernels themselves run on the CPU device's
      // own pool, so this needs few threads.
      stream_executor_(std::max(4, HardwareThreads()), "warpd-stream"),
      sessions_(&stream_executor_),
      // RPC work that may block (compiles, synchronizes, transfers).
      rpc_pool_(std::max(8, 2 * HardwareThreads()), "warpd-rpc") {
  devices_.Add(std::make_unique<runtime::CpuDevice>(flags.cpu_threads,
                                                    flags.kernel_timeout));
  const runtime::CudaProbeResult& cuda = runtime::ProbeCuda();
  cuda_driver_ = cuda.driver_version_text;
  if (cuda.devices.empty()) {
    spdlog::info("CUDA: {}; serving the CPU device only", cuda.unavailable_reason);
  } else {
    for (const auto& d : cuda.devices) {
      spdlog::info("CUDA: found cuda:{} {} (sm_{}{}), driver {}; CUDA execution is not "
                   "implemented yet, serving the CPU device only",
                   d.ordinal, d.name, d.cc_major, d.cc_minor, cuda.driver_version_text);
    }
  }
}

}  // namespace warpd::server

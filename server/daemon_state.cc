#include "server/daemon_state.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include <unistd.h>

#include "runtime/device/cpu_device.h"
#include "runtime/device/cuda_probe.h"
#include "server/self_test.h"
#include "spdlog/spdlog.h"

namespace warpd::server {

namespace {

int HardwareThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

// The memory this process may use: physical memory, or less when a cgroup
// (a container's memory limit, cgroup v2) says so.
uint64_t AvailableMemory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  uint64_t bytes = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  uint64_t limit = 0;
  if (cgroup >> limit && limit > 0 && (bytes == 0 || limit < bytes)) bytes = limit;  // "max" does not parse
  return bytes;
}

// --max-memory, or half of the memory this process may use: a tenant asking
// for more gets RESOURCE_EXHAUSTED instead of getting the daemon OOM-killed.
uint64_t MemoryLimit(const Flags& flags) {
  if (flags.max_memory_bytes != 0) return flags.max_memory_bytes;
  return AvailableMemory() / 2;  // 0 (unlimited) only if the size is unknown
}

// `name` in the directory of the running executable.
std::string BesideThisBinary(const std::string& name) {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return name;
  std::string self(buf, static_cast<size_t>(n));
  return self.substr(0, self.rfind('/') + 1) + name;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DaemonState>> DaemonState::Create(const Flags& flags) {
  compiler::Compiler::Options options;
  options.cache_dir = flags.cache_dir;
  options.verify_cuda = flags.verify_cuda;
  options.forced_cpu_target = flags.test_cpu_target;
  options.compile_worker = flags.compile_worker.empty() ? BesideThisBinary("warpd-compile-worker") : flags.compile_worker;
  options.compile_workers = flags.compile_workers;
  options.compile_timeout = flags.compile_timeout;
  options.compile_memory_bytes = flags.compile_memory_bytes;
  options.precompiled_header = flags.compile_pch;
  absl::StatusOr<std::unique_ptr<compiler::Compiler>> compiler =
      compiler::Compiler::Create(options);
  if (!compiler.ok()) return compiler.status();
  const compiler::CpuTarget& target = (*compiler)->cpu_target();
  spdlog::info("CPU kernels: compiling for {} on {}: {}", target.Summary(), target.triple, target.reason);
  spdlog::debug("CPU target: {}", target.Description());
  auto state = std::make_unique<DaemonState>(flags, *std::move(compiler));
  // A daemon that cannot compile must not report healthy and fail every launch.
  absl::StatusOr<runtime::Device*> cpu = state->devices().Find("cpu");
  if (!cpu.ok()) return cpu.status();
  const auto t0 = std::chrono::steady_clock::now();
  if (absl::Status s = RunSelfTest(*state->compiler(), **cpu); !s.ok()) return s;
  spdlog::debug("self-test passed in {:.1f} ms",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return state;
}

DaemonState::DaemonState(const Flags& flags, std::unique_ptr<compiler::Compiler> compiler)
    : flags_(flags),
      allocator_(runtime::CpuAllocator::Options{flags.max_array_bytes, MemoryLimit(flags)}),
      compiler_(std::move(compiler)),
      // One turn per busy stream; kernels themselves run on the CPU device's
      // own pool, so this needs few threads. One group (session) holds at
      // most all but one, so another always finds a thread.
      stream_executor_(runtime::StreamScheduler::Options{.threads = std::max(4, HardwareThreads())}),
      sessions_(&stream_executor_),
      // RPC work that may block (compiles, synchronizes, transfers).
      rpc_pool_(std::max(8, 2 * HardwareThreads()), "warpd-rpc") {
  spdlog::info("CPU array memory limit: {:.1f} GiB ({}; --max-memory)",
               static_cast<double>(allocator_.options().max_total_bytes) / (1 << 30),
               flags.max_memory_bytes != 0 ? "set" : "half of the memory this daemon may use");
  devices_.Add(std::make_unique<runtime::CpuDevice>(flags.cpu_threads, flags.kernel_timeout, &allocator_));
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

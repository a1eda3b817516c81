#include "runtime/device/cpu_device.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "runtime/objects/array.h"
#include "runtime/objects/array_bytes.h"
#include "warpd/native/launch.h"

namespace warpd::runtime {

namespace {

// One worker per online core but one: the thread that launches takes part
// in its launch (thread_pool.h), so a launch runs on as many threads as
// there are cores, none waiting for a core (on 2 cores, a mesh build took
// about 12% less time with one worker than with two); at least one.
int DefaultThreads() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 2 ? static_cast<int>(n - 1) : 1;
}

}  // namespace

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    // x86: "model name : ...". Some other architectures use other keys.
    if (absl::StartsWith(line, "model name") || absl::StartsWith(line, "Model")) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        return std::string(absl::StripAsciiWhitespace(absl::string_view(line).substr(colon + 1)));
      }
    }
  }
  return "";
}

std::string CpuArch() {
  struct utsname u;
  if (uname(&u) != 0) return "unknown";
  return u.machine;
}

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

uint64_t CpuDevice::FreeMemoryBytes() const {
  // "MemAvailable:   123456 kB": what the kernel could give without swapping.
  if (FILE* f = std::fopen("/proc/meminfo", "re")) {
    char line[128];
    unsigned long long kb = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f) != nullptr)
      found = std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
    std::fclose(f);
    if (found) return static_cast<uint64_t>(kb) * 1024;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

CpuDevice::CpuDevice(int num_threads, absl::Duration launch_time_limit)
    : pool_(num_threads > 0 ? num_threads : DefaultThreads(), "warpd-cpu"),
      launch_time_limit_(launch_time_limit) {
  info_.name = "cpu";
  info_.kind = "cpu";
  info_.alias = CpuModelName();
  if (info_.alias.empty()) info_.alias = "CPU";
  info_.arch = CpuArch();
  info_.memory_bytes = PhysicalMemoryBytes();
}

absl::StatusOr<std::shared_ptr<Buffer>> CpuDevice::Allocate(uint64_t bytes, std::string_view tag,
                                                              SegmentPool* pool, Fill fill) {
  if (pool == nullptr) return absl::FailedPreconditionError("no memory pool to allocate CPU memory from");
  return pool->Allocate(bytes, tag, fill);
}

absl::Status CpuDevice::RunKernel(const abi::CompiledModule& module, const abi::CompiledKernel& kernel,
                                  wp::launch_ctx* ctx, const void* args, Pass pass, const LaunchShape&) {
  if (module.target() != abi::Target::kCpu) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel '", kernel.layout.display_name, "' was not compiled for the CPU: it cannot run on cpu"));
  }
  abi::CpuKernelFn entry = pass == Pass::kAdjoint ? kernel.cpu_adjoint : kernel.cpu_entry;
  if (entry == nullptr) return absl::InternalError("the kernel has no CPU entry point for this pass");
  if (ctx->bounds.size == 0) return absl::OkStatus();
  const uint64_t timer = launch_time_limit_ > absl::ZeroDuration()
                             ? watchdog_.Arm(absl::Now() + launch_time_limit_, &ctx->cancel, abi::kCancelTimeout)
                             : 0;
  ParallelFor(ctx->bounds.size, [&](int64_t begin, int64_t end) {
    // A fault or cancel seen by one chunk stops the chunks not yet started.
    if (wp::should_stop(ctx)) return;
    entry(ctx, args, begin, end);
  });
  if (timer != 0) watchdog_.Disarm(timer);
  return absl::OkStatus();
}

absl::Status CpuDevice::Upload(const Array& dst, uint64_t offset, absl::Span<const std::byte> bytes) {
  WARPD_RETURN_IF_ERROR(CheckRange(dst, offset, bytes.size(), "upload"));
  if (!bytes.empty()) WriteArrayBytes(dst, offset, bytes.data(), bytes.size());
  return absl::OkStatus();
}

absl::Status CpuDevice::Download(const Array& src, uint64_t offset, absl::Span<std::byte> out) {
  WARPD_RETURN_IF_ERROR(CheckRange(src, offset, out.size(), "download"));
  if (!out.empty()) ReadArrayBytes(src, offset, out.size(), out.data());
  return absl::OkStatus();
}

absl::Status CpuDevice::CopyRange(const Array& dst, uint64_t dst_offset, const Array& src, uint64_t src_offset, uint64_t n,
                             const std::atomic<bool>* cancel) {
  WARPD_RETURN_IF_ERROR(CheckRange(dst, dst_offset, n, "copy destination"));
  WARPD_RETURN_IF_ERROR(CheckRange(src, src_offset, n, "copy source"));
  if (!CopyArrayBytes(dst, dst_offset, src, src_offset, n, cancel)) return absl::CancelledError("copy: cancelled");
  return absl::OkStatus();
}

absl::Status CpuDevice::FillRange(const Array& array, uint64_t offset, uint64_t n, std::string_view pattern,
                             const std::atomic<bool>* cancel) {
  WARPD_RETURN_IF_ERROR(CheckRange(array, offset, n, "fill"));
  if (n == 0) return absl::OkStatus();
  if (pattern.empty() || n % pattern.size() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("fill: ", n, " bytes are not a whole number of ", pattern.size(), "-byte patterns"));
  }
  if (!FillArrayBytes(array, offset, n, pattern, cancel)) return absl::CancelledError("fill: cancelled");
  return absl::OkStatus();
}

void CpuDevice::ParallelFor(int64_t n, absl::FunctionRef<void(int64_t, int64_t)> fn) {
  // About 8 chunks per worker balances uneven per-thread work; below a
  // minimum grain the chunk bookkeeping would cost more than the work. A
  // multiple of 64 ids: two chunks of a 1-D launch over 4-byte (or larger)
  // elements never write one cache line, and vector loops start aligned.
  constexpr int64_t kMinGrain = 64;
  const int64_t target_chunks = int64_t{8} * (pool_.num_threads() + 1);
  int64_t grain = (n + target_chunks - 1) / target_chunks;
  grain = (grain + kMinGrain - 1) / kMinGrain * kMinGrain;
  pool_.ParallelFor(n, grain, fn);
}

}  // namespace warpd::runtime

// warpd runtime: the devices a daemon runs work on.
//
// A Device describes itself (DeviceInfo, what GetServerInfo reports) and
// offers the execution primitive of its kind: CpuDevice a parallel-for over
// a worker pool (cpu_device.h); a CudaDevice will offer driver streams.
// Devices live as long as the daemon; they are shared by all sessions.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/abi/compiled_module.h"
#include "runtime/memory/segment_pool.h"

namespace warpd::runtime {

struct DeviceInfo {
  std::string name;   // "cpu", "cuda:0"
  std::string alias;  // CPU model or GPU name
  std::string kind;   // "cpu" or "cuda"
  std::string arch;   // "x86_64", "sm_90"
  std::string uuid;
  uint64_t memory_bytes = 0;
  // Why the device cannot run work (arrays, launches); "" when it can. A
  // GPU the driver reports is listed before warpd can run anything on it.
  std::string unavailable;
};


// The operations the rest of the runtime and the server use; nothing
// downcasts to a device kind.
class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  const std::string& name() const { return info().name; }

  // What modules for this device are compiled for.
  virtual abi::Target target() const = 0;

  // Memory the device could still give now (the host's available memory for
  // the CPU), at the time of the call; 0 when it is not known.
  virtual uint64_t FreeMemoryBytes() const { return 0; }

  // Memory of `bytes` for an array on this device, taken from `pool` (the
  // session's; it charges the session's memory account, so the bytes count
  // against every limit above it): zero-filled, or with Fill::kAny possibly
  // holding what the same pool's freed memory held. `tag` labels the memory.
  // FAILED_PRECONDITION when `pool` is null.
  virtual absl::StatusOr<std::shared_ptr<CpuBuffer>> Allocate(uint64_t bytes, std::string_view tag,
                                                              SegmentPool* pool, Fill fill = Fill::kZero) = 0;

  // Runs every thread of the launch `ctx` describes (ctx->bounds) with
  // `kernel`'s entry point for this device and returns when all have run or
  // stopped: once ctx records a fault or a cancel, threads not yet started
  // are skipped. A launch that runs longer than launch_time_limit() is
  // cancelled with ctx->cancel = abi::kCancelTimeout. The caller turns
  // ctx's fault and cancel into a status; this returns an error only when
  // the device cannot run the kernel at all. `pass` picks the entry: the
  // forward one, or the adjoint (CompiledKernel::cpu_adjoint; its argument
  // block holds the adjoints' block after the forward one).
  enum class Pass { kForward, kAdjoint };
  virtual absl::Status RunKernel(const abi::CompiledKernel& kernel, wp::launch_ctx* ctx, const void* args,
                                 Pass pass = Pass::kForward) = 0;
  // Zero: no limit.
  virtual absl::Duration launch_time_limit() const = 0;

  // Calls fn(begin, end) over chunks of `grain` ids covering [0, n) on the
  // host threads that run this device's work, and returns when all have
  // returned: for commands that run host code over device memory (matmul).
  // The CPU device uses its worker pool (shared fairly with launches,
  // thread_pool.h); the default runs everything on the calling thread. fn
  // must be safe to call from several threads at once.
  virtual void HostParallelFor(int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn) {
    if (n > 0) fn(0, n);
  }
};

}  // namespace warpd::runtime

// warpd runtime: the CPU device: a worker pool over all cores.
//
// Kernels run as ParallelFor over linear thread ids, split into chunks that
// the pool's workers (and the launching thread) take in turn. Array bytes
// are host memory: Upload, Download, Copy and Fill are memcpy/memmove/memset
// on the calling thread (runtime/objects/array_bytes.h walks strided views).
// Thread-safe: any number of command streams may launch concurrently.
#pragma once

#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "runtime/device/device.h"
#include "runtime/device/thread_pool.h"
#include "runtime/device/watchdog.h"
#include "runtime/memory/segment_pool.h"

namespace warpd::runtime {

class CpuDevice final : public Device {
 public:
  // num_threads <= 0: one worker per online core but one (the launching
  // thread works too), at least one. A launch running longer
  // than `launch_time_limit` is stopped (zero: no limit).
  explicit CpuDevice(int num_threads = 0, absl::Duration launch_time_limit = absl::ZeroDuration());

  const DeviceInfo& info() const override { return info_; }
  abi::Target target() const override { return abi::Target::kCpu; }
  // The host's MemAvailable (/proc/meminfo), else its free pages.
  uint64_t FreeMemoryBytes() const override;
  absl::StatusOr<std::shared_ptr<Buffer>> Allocate(uint64_t bytes, std::string_view tag,
                                                      SegmentPool* pool, Fill fill = Fill::kZero) override;
  absl::Status RunKernel(const abi::CompiledModule& module, const abi::CompiledKernel& kernel, wp::launch_ctx* ctx,
                         const void* args, Pass pass = Pass::kForward, const LaunchShape& shape = {}) override;
  absl::Duration launch_time_limit() const override { return launch_time_limit_; }

  void HostParallelFor(int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn) override {
    pool_.ParallelFor(n, grain, fn);
  }

  absl::Status Upload(const Array& dst, uint64_t offset, absl::Span<const std::byte> bytes) override;
  absl::Status Download(const Array& src, uint64_t offset, absl::Span<std::byte> out) override;
  absl::Status CopyRange(const Array& dst, uint64_t dst_offset, const Array& src, uint64_t src_offset, uint64_t n,
                    const std::atomic<bool>* cancel = nullptr) override;
  absl::Status FillRange(const Array& array, uint64_t offset, uint64_t n, std::string_view pattern,
                    const std::atomic<bool>* cancel = nullptr) override;

  // Runs fn over [0, n) in chunks sized so every worker gets several.
  void ParallelFor(int64_t n, absl::FunctionRef<void(int64_t, int64_t)> fn);
  int num_threads() const { return pool_.num_threads(); }


 private:
  DeviceInfo info_;
  ThreadPool pool_;
  const absl::Duration launch_time_limit_;
  Watchdog watchdog_;
};

// "model name" from /proc/cpuinfo ("" when unknown), uname machine, RAM.
std::string CpuModelName();
std::string CpuArch();
uint64_t PhysicalMemoryBytes();

}  // namespace warpd::runtime

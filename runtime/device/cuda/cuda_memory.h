// warpd runtime: what a GPU's arrays need, opened once per device.
//
//   absl::StatusOr<std::shared_ptr<CudaMemory>> m = CudaMemory::Open(driver, 0, {});
//   (*m)->pool(), (*m)->stream(), (*m)->staging()
//
// Its primary context, the pool arrays come from (cuda_memory_pool.h, with
// the device's quota), the stream their allocations and frees are ordered
// on, the streams kernels, copies, fills and transfers run on (one per
// operation, stream_pool.h), and the pinned staging ring transfers go
// through (pinned_staging.h), and each session's exportable pool
// (SessionPool: CUDA IPC hands a local client a pool's fd, so a session's
// plain arrays come from a pool of their own). Buffers (cuda_buffer.h) and the
// device hold it; it is destroyed when the last lets go, in an order that
// frees what depends on what: staging ring, pool, streams, context.
// Thread-safe.
#pragma once

#include <memory>

#include "absl/status/status.h"
#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/device/cuda/cuda_context.h"
#include "runtime/device/cuda/cuda_driver.h"
#include "runtime/device/cuda/cuda_memory_pool.h"
#include "runtime/device/cuda/cuda_stream.h"
#include "runtime/device/cuda/pinned_staging.h"
#include "runtime/device/cuda/stream_pool.h"
#include "runtime/memory/memory_account.h"

namespace warpd::runtime::cuda {

class CudaMemory {
 public:
  struct Options {
    CudaMemoryPool::Options pool;
    PinnedStagingRing::Options staging;
    // The most host memory one operation on a strided view stages at once
    // (its span, or a copy's or fill's bytes; cuda_device.h): it is the
    // daemon's, not charged to the session, so it is bounded.
    uint64_t max_staged_bytes = uint64_t{256} << 20;
  };
  // Retains cuda:`ordinal`'s primary context and makes the stream, pool and
  // staging ring on it; the first error (naming the call) otherwise.
  static absl::StatusOr<std::shared_ptr<CudaMemory>> Open(const CudaDriver& driver, int ordinal,
                                                          const Options& options);

  CudaMemory(const CudaMemory&) = delete;
  CudaMemory& operator=(const CudaMemory&) = delete;
  ~CudaMemory();

  // After the context was lost (poisoned): destroys the staging ring, pool
  // and stream (nothing must use them: no buffer, module or operation) and
  // resets the primary context (CudaContext::Recover); the object is then
  // only destroyed.
  absl::Status ResetContext();

  CudaContext& context() const { return *context_; }
  CudaStream& stream() const { return *stream_; }
  // A second stream, for the few bytes that must reach device memory while
  // a kernel's stream is busy: its cancel flag.
  CudaStream& control_stream() const { return *control_; }
  // The streams operations run on, one each (stream_pool.h); stream() orders
  // allocations, frees and the zeroing of new memory.
  StreamPool& streams() const { return *streams_; }
  CudaMemoryPool& pool() const { return *pool_; }
  // The exportable pool of the session whose device account is `account`
  // (Session::DevicePool's), made on first use with the device pool's
  // quota and a release threshold of 0 (a session keeps no freed memory
  // reserved); the device's own pool when the driver cannot export. A pool
  // lives while its buffers do; the entry of a session that is gone is
  // dropped at the next call.
  absl::StatusOr<std::shared_ptr<CudaMemoryPool>> SessionPool(const std::shared_ptr<MemoryAccount>& account)
      ABSL_LOCKS_EXCLUDED(sessions_mu_);
  // Whether the driver refused an exportable pool (no CUDA IPC here).
  bool exports_unsupported() const ABSL_LOCKS_EXCLUDED(sessions_mu_);
  // The pool SessionPool made for `account`, if any (never makes one).
  std::shared_ptr<CudaMemoryPool> FindSessionPool(const MemoryAccount* account) const ABSL_LOCKS_EXCLUDED(sessions_mu_);
  PinnedStagingRing& staging() const { return *staging_; }

 private:
  CudaMemory() = default;

  // Destroyed in reverse: staging, pool, stream, then the context.
  std::unique_ptr<CudaContext> context_;
  std::unique_ptr<CudaStream> stream_;
  std::unique_ptr<CudaStream> control_;
  std::unique_ptr<StreamPool> streams_;
  std::unique_ptr<CudaMemoryPool> pool_;
  std::unique_ptr<PinnedStagingRing> staging_;
  struct SessionEntry {
    std::weak_ptr<MemoryAccount> account;
    std::shared_ptr<CudaMemoryPool> pool;
  };
  mutable absl::Mutex sessions_mu_;
  absl::flat_hash_map<const MemoryAccount*, SessionEntry> sessions_ ABSL_GUARDED_BY(sessions_mu_);
  bool exports_unsupported_ ABSL_GUARDED_BY(sessions_mu_) = false;
};

}  // namespace warpd::runtime::cuda

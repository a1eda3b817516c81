// warpd runtime: a device's stream-ordered memory pool, with a byte quota.
//
//   CudaMemoryPool::Options o;
//   o.quota_bytes = 60ull << 30;          // what warpd may hold on this GPU
//   o.release_threshold = 1ull << 30;     // kept reserved across synchronizations
//   absl::StatusOr<std::unique_ptr<CudaMemoryPool>> pool = CudaMemoryPool::Create(ctx, o);
//   absl::StatusOr<CUdeviceptr> p = (*pool)->Allocate(bytes, stream);   // usable in stream order
//   ... (*pool)->Free(*p, stream);                                      // freed in stream order
//
// A pool of pinned device memory on one GPU (cuMemPoolCreate), made
// exportable through POSIX file descriptors
// (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) when asked (Export), so a local
// client of a session can be handed the pool's fd and a pointer's export
// blob; where the driver cannot (CUDA_ERROR_NOT_SUPPORTED, e.g. without IPC
// support), the pool is made without it and exportable() says so.
// Allocations and frees are stream-ordered (cuMemAllocFromPoolAsync,
// cuMemFreeAsync): the memory may be used by work queued on that stream
// after the allocation, and is reused only after the work queued before the
// free. Freed memory stays reserved by the pool up to the release threshold
// (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD; the driver's default 0 gives it back
// at every synchronization).
//
// Accounting: bytes_in_use counts the bytes allocated and not yet freed (a
// free counts at once, though the memory is reused only in stream order),
// peak_bytes its maximum. With a quota, an allocation that would take
// bytes_in_use past it fails RESOURCE_EXHAUSTED ("cuda:0 memory quota
// exceeded: ...") without calling the driver; the driver's own out of
// memory is RESOURCE_EXHAUSTED too, naming the bytes asked for and in use.
// Zero bytes allocate nothing: 0, which Free accepts. Every call fails fast
// once the context is poisoned (cuda_context.h).
//
// Exporting (CUDA IPC): ExportHandle() gives a new POSIX fd of an
// exportable pool, ExportPointer() the 64 bytes naming one of its
// allocations; a process holding both imports the allocation
// (cuMemPoolImportFromShareableHandle, cuMemPoolImportPointer). Anyone with
// the fd may import any allocation it can name, so a pool whose fd leaves
// the daemon must hold only what its receiver may see: warpd gives each
// session its own exportable pool on a device for its plain arrays
// (CudaMemory::SessionPool) and exports only those.
//
// Several pools of a device share one quota: Create(..., usage) counts
// their bytes together (bytes_in_use, peak_bytes and quota are the
// shared counts; allocations() is this pool's).
//
// Ownership: the device owns its pool (not movable: the accounting is
// locked); it holds a ContextUser, so the CudaContext outlives it. Every
// allocation must be freed before the pool is destroyed (the driver would
// keep leftovers until the context goes); destroying it calls
// cuMemPoolDestroy unless the context is poisoned. Thread-safety: every
// method may be called from any thread; allocations and frees on different
// streams are ordered by those streams only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/device/cuda/cuda_context.h"
#include "runtime/device/cuda/cuda_stream.h"
#include "runtime/device/cuda/driver_api.h"

namespace warpd::runtime::cuda {

class CudaMemoryPool {
 public:
  struct Options {
    // Bytes the pool keeps reserved across synchronizations.
    uint64_t release_threshold = 0;
    // The most bytes in use at once; 0: no quota (the device's memory bounds it).
    uint64_t quota_bytes = 0;
  };

  // The bytes in use in a set of pools, and their quota.
  class Usage;

  // Whether the pool is made exportable: kTry falls back to a pool of this
  // process only where the driver cannot (CUDA_ERROR_NOT_SUPPORTED);
  // kRequire fails there (UNIMPLEMENTED); kNo never asks.
  enum class Export { kNo, kTry, kRequire };

  // cuMemPoolCreate on `ctx`'s device, then its release threshold. With
  // `usage`, the pool counts against it (options.quota_bytes is then
  // ignored); else it gets a count of its own.
  static absl::StatusOr<std::unique_ptr<CudaMemoryPool>> Create(CudaContext& ctx, const Options& options,
                                                                std::shared_ptr<Usage> usage = nullptr,
                                                                Export export_mode = Export::kTry);

  CudaMemoryPool(const CudaMemoryPool&) = delete;
  CudaMemoryPool& operator=(const CudaMemoryPool&) = delete;
  ~CudaMemoryPool();

  // `bytes` of device memory, usable by work queued on `stream` (of this
  // pool's context: INVALID_ARGUMENT otherwise) from now on.
  absl::StatusOr<CUdeviceptr> Allocate(uint64_t bytes, CudaStream& stream) ABSL_LOCKS_EXCLUDED(mu_);
  // Frees `ptr` after the work queued on `stream` so far; INVALID_ARGUMENT
  // for a pointer this pool did not allocate or already freed.
  absl::Status Free(CUdeviceptr ptr, CudaStream& stream) ABSL_LOCKS_EXCLUDED(mu_);

  absl::Status SetReleaseThreshold(uint64_t bytes);
  // Applies to later allocations (lowering it below bytes_in_use frees
  // nothing; it only refuses new allocations). 0: no quota.
  void SetQuota(uint64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);

  uint64_t quota() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t bytes_in_use() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t peak_bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  // Allocations not yet freed.
  size_t allocations() const ABSL_LOCKS_EXCLUDED(mu_);
  // The bytes the driver holds for the pool now, in use or kept
  // (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT).
  absl::StatusOr<uint64_t> ReservedBytes();

  // Whether allocations can be exported to another process (POSIX fds).
  bool exportable() const { return exportable_; }
  // Whether `ptr` is the start of one of this pool's live allocations, and
  // its size (0 when not).
  uint64_t AllocationBytes(CUdeviceptr ptr) const ABSL_LOCKS_EXCLUDED(mu_);
  // A new fd of the pool (the caller closes it); FAILED_PRECONDITION when
  // it is not exportable.
  absl::StatusOr<int> ExportHandle();
  // The export data of allocation `ptr` (its start): INVALID_ARGUMENT for
  // anything but a live allocation of this pool.
  absl::StatusOr<CUmemPoolPtrExportData> ExportPointer(CUdeviceptr ptr);
  // A number no other pool of this process has had (a client caches an
  // imported pool under it).
  uint64_t serial() const { return serial_; }
  const std::shared_ptr<Usage>& usage() const { return usage_; }
  CUmemoryPool get() const { return pool_; }
  CudaContext& context() const { return *user_.context(); }

 private:
  CudaMemoryPool(ContextUser user, CUmemoryPool pool, bool exportable, std::shared_ptr<Usage> usage);

  ContextUser user_;
  const CUmemoryPool pool_;
  const bool exportable_;
  const uint64_t serial_;
  const std::shared_ptr<Usage> usage_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<CUdeviceptr, uint64_t> sizes_ ABSL_GUARDED_BY(mu_);
};

class CudaMemoryPool::Usage {
 public:
  explicit Usage(uint64_t quota) : quota_(quota) {}

 private:
  friend class CudaMemoryPool;
  mutable absl::Mutex mu_;
  uint64_t quota_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t peak_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace warpd::runtime::cuda

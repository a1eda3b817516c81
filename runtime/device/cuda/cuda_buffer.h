// warpd runtime: the device memory of one array on a GPU.
//
//   absl::StatusOr<std::shared_ptr<CudaMemory>> m = CudaMemory::Open(driver, 0, {});
//   absl::StatusOr<std::shared_ptr<CudaBuffer>> b = CudaBuffer::Allocate(*m, bytes, std::move(charge));
//   ... (*b)->address() is a CUdeviceptr; host_data() is null ...
//
// CudaMemory is what a GPU's arrays need, opened once per device: its
// primary context, the pool they come from (cuda_memory_pool.h, with the
// device's quota), the stream their allocations, frees, uploads, downloads,
// copies and fills are ordered on, and the pinned staging ring transfers go
// through (pinned_staging.h). Destroyed when the device and every buffer
// have let go of it, in an order that frees what depends on what: staging
// ring, pool, stream, context.
//
// A CudaBuffer is one allocation from the pool: memory usable by work on
// the memory stream from its allocation on, freed on that stream when the
// last holder (arrays and views share it) lets go, so the free comes after
// every operation queued on it before. It holds the charge its bytes took
// (the session's memory account) and gives it back then. Launches on other
// streams (a later step) must order themselves with the memory stream.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "runtime/device/cuda/cuda_context.h"
#include "runtime/device/cuda/cuda_driver.h"
#include "runtime/device/cuda/cuda_memory_pool.h"
#include "runtime/device/cuda/cuda_stream.h"
#include "runtime/device/cuda/pinned_staging.h"
#include "runtime/memory/buffer.h"
#include "runtime/memory/memory_charge.h"

namespace warpd::runtime::cuda {

class CudaMemory {
 public:
  struct Options {
    CudaMemoryPool::Options pool;
    PinnedStagingRing::Options staging;
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
  CudaMemoryPool& pool() const { return *pool_; }
  PinnedStagingRing& staging() const { return *staging_; }

 private:
  CudaMemory() = default;

  // Destroyed in reverse: staging, pool, stream, then the context.
  std::unique_ptr<CudaContext> context_;
  std::unique_ptr<CudaStream> stream_;
  std::unique_ptr<CudaMemoryPool> pool_;
  std::unique_ptr<PinnedStagingRing> staging_;
};

class CudaBuffer final : public Buffer {
 public:
  // `bytes` from `memory`'s pool on its stream (zero bytes: an empty buffer
  // at address 0), holding `charge` until freed. The pool's errors
  // (RESOURCE_EXHAUSTED past the quota or the device's memory).
  static absl::StatusOr<std::shared_ptr<CudaBuffer>> Allocate(std::shared_ptr<CudaMemory> memory, uint64_t bytes,
                                                              MemoryCharge charge);
  ~CudaBuffer() override;

  CudaMemory& memory() const { return *memory_; }

 private:
  CudaBuffer(std::shared_ptr<CudaMemory> memory, CUdeviceptr ptr, uint64_t bytes, MemoryCharge charge)
      : Buffer(ptr, bytes, /*host_addressable=*/false), memory_(std::move(memory)), charge_(std::move(charge)) {}

  const std::shared_ptr<CudaMemory> memory_;
  MemoryCharge charge_;  // released after the free is queued
};

}  // namespace warpd::runtime::cuda

// warpd runtime: the device memory of one array on a GPU.
//
//   absl::StatusOr<std::shared_ptr<CudaBuffer>> b = CudaBuffer::Allocate(memory, bytes, std::move(charge));
//   ... or from a session's exportable pool: Allocate(memory, bytes, charge, memory->SessionPool(account))
//   ... (*b)->address() is a CUdeviceptr; host_data() is null ...
//
// One allocation from a GPU's pool (cuda_memory.h): memory usable by work on
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
#include "runtime/device/cuda/cuda_memory.h"
#include "runtime/memory/buffer.h"
#include "runtime/memory/memory_charge.h"

namespace warpd::runtime::cuda {

class CudaBuffer final : public Buffer {
 public:
  // `bytes` from `memory`'s pool on its stream (zero bytes: an empty buffer
  // at address 0), holding `charge` until freed. The pool's errors
  // (RESOURCE_EXHAUSTED past the quota or the device's memory).
  // `pool` (one of `memory`'s, which it keeps alive) instead of the device's.
  static absl::StatusOr<std::shared_ptr<CudaBuffer>> Allocate(std::shared_ptr<CudaMemory> memory, uint64_t bytes,
                                                              MemoryCharge charge,
                                                              std::shared_ptr<CudaMemoryPool> pool = nullptr);
  ~CudaBuffer() override;

  CudaMemory& memory() const { return *memory_; }

 private:
  CudaBuffer(std::shared_ptr<CudaMemory> memory, std::shared_ptr<CudaMemoryPool> pool, CUdeviceptr ptr, uint64_t bytes,
             MemoryCharge charge)
      : Buffer(ptr, bytes, /*host_addressable=*/false),
        memory_(std::move(memory)),
        pool_(std::move(pool)),
        charge_(std::move(charge)) {}

  CudaMemoryPool& pool() const { return pool_ != nullptr ? *pool_ : memory_->pool(); }

  const std::shared_ptr<CudaMemory> memory_;
  const std::shared_ptr<CudaMemoryPool> pool_;  // null: the device's
  MemoryCharge charge_;                         // released after the free is queued
};

}  // namespace warpd::runtime::cuda

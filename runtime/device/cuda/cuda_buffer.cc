#include "runtime/device/cuda/cuda_buffer.h"

#include <utility>

#include "common/status_macros.h"

namespace warpd::runtime::cuda {

absl::StatusOr<std::shared_ptr<CudaBuffer>> CudaBuffer::Allocate(std::shared_ptr<CudaMemory> memory, uint64_t bytes,
                                                                 MemoryCharge charge,
                                                                 std::shared_ptr<CudaMemoryPool> pool) {
  CUdeviceptr ptr = 0;
  if (bytes > 0) {
    CudaMemoryPool& from = pool != nullptr ? *pool : memory->pool();
    WARPD_ASSIGN_OR_RETURN(ptr, from.Allocate(bytes, memory->stream()));
  }
  return std::shared_ptr<CudaBuffer>(
      new CudaBuffer(std::move(memory), std::move(pool), ptr, bytes, std::move(charge)));
}

CudaBuffer::~CudaBuffer() {
  // On a poisoned context the pool refuses: the context's reset frees it.
  if (address() != 0) (void)pool().Free(address(), memory_->stream());
}

}  // namespace warpd::runtime::cuda

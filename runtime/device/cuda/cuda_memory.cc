#include "runtime/device/cuda/cuda_memory.h"

#include <utility>

#include "common/status_macros.h"

namespace warpd::runtime::cuda {

absl::StatusOr<std::shared_ptr<CudaMemory>> CudaMemory::Open(const CudaDriver& driver, int ordinal,
                                                             const Options& options) {
  std::shared_ptr<CudaMemory> m(new CudaMemory());
  WARPD_ASSIGN_OR_RETURN(m->context_, CudaContext::Create(driver, ordinal));
  WARPD_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create(*m->context_));
  m->stream_ = std::make_unique<CudaStream>(std::move(stream));
  WARPD_ASSIGN_OR_RETURN(CudaStream control, CudaStream::Create(*m->context_));
  m->control_ = std::make_unique<CudaStream>(std::move(control));
  m->streams_ = std::make_unique<StreamPool>(*m->context_);
  WARPD_ASSIGN_OR_RETURN(m->pool_, CudaMemoryPool::Create(*m->context_, options.pool));
  WARPD_ASSIGN_OR_RETURN(m->staging_, PinnedStagingRing::Create(*m->context_, options.staging));
  return m;
}

absl::Status CudaMemory::ResetContext() {
  staging_.reset();
  pool_.reset();
  streams_.reset();
  control_.reset();
  stream_.reset();
  return context_->Recover();
}

CudaMemory::~CudaMemory() {
  // Frees queued by the last buffers complete before the pool goes.
  if (stream_ != nullptr && !context_->poisoned()) (void)stream_->Synchronize();
}

}  // namespace warpd::runtime::cuda

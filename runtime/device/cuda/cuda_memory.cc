#include "runtime/device/cuda/cuda_memory.h"

#include <utility>

#include "absl/container/flat_hash_map.h"

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
  // The device's pool is never exported (sessions' pools are: SessionPool).
  WARPD_ASSIGN_OR_RETURN(m->pool_, CudaMemoryPool::Create(*m->context_, options.pool, nullptr,
                                                          CudaMemoryPool::Export::kNo));
  WARPD_ASSIGN_OR_RETURN(m->staging_, PinnedStagingRing::Create(*m->context_, options.staging));
  return m;
}

absl::StatusOr<std::shared_ptr<CudaMemoryPool>> CudaMemory::SessionPool(
    const std::shared_ptr<MemoryAccount>& account) {
  absl::MutexLock lock(&sessions_mu_);
  // Sessions that are gone: their entries go (their pools live on in the
  // buffers still holding them).
  absl::erase_if(sessions_, [](const auto& entry) { return entry.second.account.expired(); });
  if (auto it = sessions_.find(account.get()); it != sessions_.end()) return it->second.pool;
  CudaMemoryPool::Options options;  // release threshold 0
  absl::StatusOr<std::unique_ptr<CudaMemoryPool>> made =
      CudaMemoryPool::Create(*context_, options, pool_->usage(), CudaMemoryPool::Export::kRequire);
  std::shared_ptr<CudaMemoryPool> pool;
  if (made.ok()) {
    pool = std::move(*made);
  } else if (made.status().code() == absl::StatusCode::kUnimplemented) {
    exports_unsupported_ = true;
  } else {
    return made.status();
  }
  // Without export support: the device's pool (nothing to export).
  sessions_[account.get()] = SessionEntry{account, pool};
  return pool;
}

bool CudaMemory::exports_unsupported() const {
  absl::MutexLock lock(&sessions_mu_);
  return exports_unsupported_;
}

std::shared_ptr<CudaMemoryPool> CudaMemory::FindSessionPool(const MemoryAccount* account) const {
  absl::MutexLock lock(&sessions_mu_);
  auto it = sessions_.find(account);
  if (it == sessions_.end() || it->second.account.expired()) return nullptr;
  return it->second.pool;
}

absl::Status CudaMemory::ResetContext() {
  {
    absl::MutexLock lock(&sessions_mu_);
    sessions_.clear();
  }
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

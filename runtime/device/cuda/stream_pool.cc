#include "runtime/device/cuda/stream_pool.h"

#include <utility>

namespace warpd::runtime::cuda {

absl::StatusOr<StreamPool::Lease> StreamPool::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      std::unique_ptr<CudaStream> s = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(s));
    }
  }
  absl::StatusOr<CudaStream> made = CudaStream::Create(ctx_);
  if (!made.ok()) return made.status();
  {
    absl::MutexLock lock(&mu_);
    ++created_;
  }
  return Lease(this, std::make_unique<CudaStream>(*std::move(made)));
}

void StreamPool::Return(std::unique_ptr<CudaStream> stream) {
  const bool keep = !ctx_.poisoned();  // a lost context's streams are dropped
  absl::MutexLock lock(&mu_);
  if (keep && idle_.size() < max_idle_) idle_.push_back(std::move(stream));
  // A stream not kept is destroyed with the parameter, after the lock.
}

size_t StreamPool::created() const {
  absl::MutexLock lock(&mu_);
  return created_;
}

size_t StreamPool::idle() const {
  absl::MutexLock lock(&mu_);
  return idle_.size();
}

}  // namespace warpd::runtime::cuda

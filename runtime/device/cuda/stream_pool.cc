#include "runtime/device/cuda/stream_pool.h"

#include <utility>

namespace warpd::runtime::cuda {

absl::StatusOr<StreamPool::Lease> StreamPool::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      Pooled s = std::move(idle_.back());
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
  Pooled item;
  item.stream = std::make_unique<CudaStream>(*std::move(made));
  return Lease(this, std::move(item));
}

absl::StatusOr<std::pair<CudaEvent*, CudaEvent*>> StreamPool::Lease::TimingEvents() {
  for (std::unique_ptr<CudaEvent>* e : {&item_.start, &item_.end}) {
    if (*e != nullptr) continue;
    absl::StatusOr<CudaEvent> made = CudaEvent::Create(item_.stream->context());
    if (!made.ok()) return made.status();
    *e = std::make_unique<CudaEvent>(*std::move(made));
  }
  return std::make_pair(item_.start.get(), item_.end.get());
}

absl::StatusOr<absl::Span<CudaEvent>> StreamPool::Lease::MarkEvents(size_t n) {
  std::vector<CudaEvent>& marks = item_.marks;
  if (marks.size() < n) marks.reserve(n);
  while (marks.size() < n) {
    absl::StatusOr<CudaEvent> made = CudaEvent::Create(item_.stream->context(), CudaEvent::Timing::kOff);
    if (!made.ok()) return made.status();
    marks.push_back(*std::move(made));
  }
  return absl::MakeSpan(marks.data(), n);
}

void StreamPool::Return(Pooled item) {
  if (item.marks.size() > kKeptMarks) item.marks.erase(item.marks.begin() + kKeptMarks, item.marks.end());
  const bool keep = !ctx_.poisoned();  // a lost context's streams are dropped
  absl::MutexLock lock(&mu_);
  if (keep && idle_.size() < max_idle_) idle_.push_back(std::move(item));
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

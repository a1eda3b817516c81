#include "compiler/compile_queue.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

namespace warpd::compiler {

CompileQueue::CompileQueue(int threads) {
  threads = std::max(threads, 1);
  threads_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] { Loop(); });
    pthread_setname_np(threads_.back().native_handle(), "warpd-compile");
  }
}

CompileQueue::~CompileQueue() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void CompileQueue::Schedule(absl::AnyInvocable<void() &&> job) {
  absl::MutexLock lock(&mu_);
  jobs_.push_back(std::move(job));
}

void CompileQueue::Loop() {
  for (;;) {
    absl::AnyInvocable<void() &&> job;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !jobs_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (jobs_.empty()) return;  // stopping, and every job has run
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    std::move(job)();
  }
}

}  // namespace warpd::compiler

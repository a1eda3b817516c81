#include "runtime/device/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <memory>

namespace warpd::runtime {

ThreadPool::ThreadPool(int num_threads, std::string name) {
  num_threads = std::max(num_threads, 1);
  threads_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) {
    threads_.emplace_back([this] { WorkerLoop(); });
    // Linux limits thread names to 15 characters.
    std::string label = (name + "-" + std::to_string(i)).substr(0, 15);
    pthread_setname_np(threads_.back().native_handle(), label.c_str());
  }
}

ThreadPool::~ThreadPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (auto& t : threads_) t.join();
}

void ThreadPool::Schedule(absl::AnyInvocable<void() &&> task) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(task));
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    absl::AnyInvocable<void() &&> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](ThreadPool* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) {
            return p->stopping_ || !p->queue_.empty();
          },
          this));
      if (queue_.empty()) return;  // stopping, and everything scheduled has run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    std::move(task)();
  }
}

namespace {

// One ParallelFor call. Helpers hold it by shared_ptr: one that starts after
// the caller has returned finds no chunk left and touches only this struct.
struct ForJob {
  ForJob(int64_t n, int64_t grain, int64_t chunks, absl::FunctionRef<void(int64_t, int64_t)> fn)
      : n(n), grain(grain), num_chunks(chunks), fn(fn) {}

  // Runs chunks until none are left; fn is used only for a claimed chunk,
  // and the caller waits for every claimed chunk, so fn is still alive.
  void RunChunks() {
    int64_t ran = 0;
    for (;;) {
      const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= num_chunks) break;
      const int64_t begin = c * grain;
      fn(begin, std::min(n, begin + grain));
      ++ran;
    }
    if (ran > 0) {
      absl::MutexLock lock(&mu);
      done += ran;
    }
  }

  const int64_t n, grain, num_chunks;
  const absl::FunctionRef<void(int64_t, int64_t)> fn;
  std::atomic<int64_t> next{0};
  absl::Mutex mu;
  int64_t done ABSL_GUARDED_BY(mu) = 0;
};

}  // namespace

void ThreadPool::ParallelFor(int64_t n, int64_t grain,
                             absl::FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = n / grain + (n % grain != 0);
  if (chunks == 1) {
    fn(0, n);
    return;
  }
  auto job = std::make_shared<ForJob>(n, grain, chunks, fn);
  const int64_t helpers = std::min<int64_t>(chunks - 1, num_threads());
  {
    absl::MutexLock lock(&mu_);
    for (int64_t i = 0; i < helpers; ++i) queue_.push_back([job] { job->RunChunks(); });
  }
  job->RunChunks();
  absl::MutexLock lock(&job->mu);
  job->mu.Await(absl::Condition(
      +[](ForJob* j) ABSL_EXCLUSIVE_LOCKS_REQUIRED(j->mu) { return j->done == j->num_chunks; },
      job.get()));
}

}  // namespace warpd::runtime

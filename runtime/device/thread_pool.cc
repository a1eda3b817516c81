#include "runtime/device/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <memory>

namespace warpd::runtime {

// One ParallelFor call. Workers hold it by shared_ptr: one that tries to
// claim a chunk after the caller has returned finds none left and touches
// only this struct.
struct ThreadPool::ForJob {
  ForJob(int64_t n, int64_t grain, int64_t chunks, absl::FunctionRef<void(int64_t, int64_t)> fn)
      : n(n), grain(grain), num_chunks(chunks), fn(fn) {}

  // A chunk index to run, or -1 when all are claimed.
  int64_t Claim() {
    const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
    return c < num_chunks ? c : -1;
  }

  // fn is used only for a claimed chunk, and the caller waits for every
  // claimed chunk, so fn is still alive.
  void Run(int64_t chunk) {
    const int64_t begin = chunk * grain;
    fn(begin, std::min(n, begin + grain));
  }

  // Counts `k` finished chunks; the last one wakes the caller.
  void Finished(int64_t k) {
    if (done.fetch_add(k, std::memory_order_acq_rel) + k == num_chunks) {
      absl::MutexLock lock(&mu);
      all_done = true;
    }
  }

  const int64_t n, grain, num_chunks;
  const absl::FunctionRef<void(int64_t, int64_t)> fn;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  absl::Mutex mu;
  bool all_done ABSL_GUARDED_BY(mu) = false;
};

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
  num_tasks_.store(queue_.size(), std::memory_order_relaxed);
}

std::shared_ptr<ThreadPool::ForJob> ThreadPool::ClaimNextLocked(int64_t* chunk) {
  while (!jobs_.empty()) {
    if (next_job_ >= jobs_.size()) next_job_ = 0;
    const int64_t c = jobs_[next_job_]->Claim();
    if (c < 0) {
      jobs_.erase(jobs_.begin() + static_cast<std::ptrdiff_t>(next_job_));
      num_jobs_.store(jobs_.size(), std::memory_order_relaxed);
      continue;
    }
    *chunk = c;
    return jobs_[next_job_++];
  }
  return nullptr;
}

void ThreadPool::RemoveJobLocked(const ForJob* job) {
  for (size_t i = 0; i < jobs_.size(); ++i) {
    if (jobs_[i].get() != job) continue;
    jobs_.erase(jobs_.begin() + static_cast<std::ptrdiff_t>(i));
    if (next_job_ > i) --next_job_;
    num_jobs_.store(jobs_.size(), std::memory_order_relaxed);
    return;
  }
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    absl::AnyInvocable<void() &&> task;
    std::shared_ptr<ForJob> job;
    int64_t chunk = -1;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](ThreadPool* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) {
            return p->stopping_ || !p->queue_.empty() || !p->jobs_.empty();
          },
          this));
      if (!queue_.empty()) {
        task = std::move(queue_.front());
        queue_.pop_front();
        num_tasks_.store(queue_.size(), std::memory_order_relaxed);
      } else if (!jobs_.empty()) {
        job = ClaimNextLocked(&chunk);
        if (job == nullptr) continue;  // every job was fully claimed
      } else {
        return;  // stopping, and everything scheduled has run
      }
    }
    if (task) {
      std::move(task)();
      continue;
    }
    // Alone, the job keeps this worker without a trip through the lock per
    // chunk; once another job or a task arrives, the worker goes back to
    // the rotation after this chunk.
    int64_t ran = 0;
    do {
      job->Run(chunk);
      ++ran;
    } while (num_jobs_.load(std::memory_order_relaxed) == 1 &&
             num_tasks_.load(std::memory_order_relaxed) == 0 && (chunk = job->Claim()) >= 0);
    job->Finished(ran);
  }
}

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
  {
    absl::MutexLock lock(&mu_);
    jobs_.push_back(job);
    num_jobs_.store(jobs_.size(), std::memory_order_relaxed);
  }
  // The caller works on its own job only, so its launch never waits for
  // another's chunk.
  int64_t ran = 0;
  for (int64_t c; (c = job->Claim()) >= 0;) {
    job->Run(c);
    ++ran;
  }
  if (ran > 0) job->Finished(ran);
  {
    absl::MutexLock lock(&mu_);
    RemoveJobLocked(job.get());
  }
  absl::MutexLock lock(&job->mu);
  job->mu.Await(absl::Condition(&job->all_done));
}

}  // namespace warpd::runtime

// warpd runtime: a fixed pool of worker threads.
//
// Two uses: Schedule() runs independent tasks (RPC work that may block), and
// ParallelFor() splits [0, n) into chunks that the workers and the calling
// thread take from a shared counter until none are left. The caller always
// takes part (it works on its own job only), so ParallelFor never
// deadlocks, even when called from a worker or when every worker is busy.
//
// Sharing: while several ParallelFor jobs are active (several streams
// launching kernels at once), an idle worker takes ONE chunk from the next
// job in turn, round-robin, so the workers spread over the jobs instead of
// staying with whichever job came first: a small launch of one tenant gets
// helpers while another tenant's huge launch runs. With one active job a
// worker keeps taking its chunks without going through the pool's lock.
// A running chunk is never interrupted: chunks are sized so that a worker
// comes back often (CpuDevice aims at ~8 chunks per worker). Queued
// Schedule() tasks go before chunks.
//
//   ThreadPool pool(8, "cpu");
//   pool.ParallelFor(n, 1024, [&](int64_t begin, int64_t end) { ... });
//
// Thread-safe. The destructor runs the tasks already scheduled, then joins
// the workers; scheduling (or a ParallelFor) during destruction is a bug.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace warpd::runtime {

class ThreadPool {
 public:
  // num_threads >= 1. `name` labels the threads (visible in top -H, gdb).
  ThreadPool(int num_threads, std::string name);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Schedule(absl::AnyInvocable<void() &&> task);

  // Calls fn(begin, end) for consecutive chunks of `grain` ids covering
  // [0, n) (the last may be shorter), concurrently, and returns when all
  // have returned. fn must be safe to call from several threads at once.
  void ParallelFor(int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn);

  int num_threads() const { return static_cast<int>(threads_.size()); }

 private:
  struct ForJob;

  void WorkerLoop();
  // Claims one chunk of the next active job (round-robin), dropping jobs
  // whose chunks are all claimed; null when no job has a chunk left.
  std::shared_ptr<ForJob> ClaimNextLocked(int64_t* chunk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveJobLocked(const ForJob* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> queue_ ABSL_GUARDED_BY(mu_);
  // ParallelFor jobs that may have unclaimed chunks, in arrival order.
  std::vector<std::shared_ptr<ForJob>> jobs_ ABSL_GUARDED_BY(mu_);
  size_t next_job_ ABSL_GUARDED_BY(mu_) = 0;  // round-robin position in jobs_
  // Copies of jobs_.size() and queue_.size(), read without the lock by
  // workers deciding whether to stay with their job.
  std::atomic<size_t> num_jobs_{0};
  std::atomic<size_t> num_tasks_{0};
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace warpd::runtime

// warpd runtime: a fixed pool of worker threads.
//
// Two uses: Schedule() runs independent tasks (command-stream drains, RPC
// work that may block), and ParallelFor() splits [0, n) into chunks that the
// workers and the calling thread take from a shared counter until none are
// left. The caller always takes part, so ParallelFor never deadlocks, even
// when called from a worker or when every worker is busy.
//
//   ThreadPool pool(8, "cpu");
//   pool.ParallelFor(n, 1024, [&](int64_t begin, int64_t end) { ... });
//
// Thread-safe. The destructor runs the tasks already scheduled, then joins
// the workers; scheduling during destruction is a bug.
#pragma once

#include <cstdint>
#include <deque>
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
  void WorkerLoop();

  absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace warpd::runtime

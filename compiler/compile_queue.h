// warpd compiler: the threads that compiles wait on.
//
// A compile waits: for a compile worker process, for clang in it, for the
// JIT. Those waits happen here, on a small fixed set of threads (as many as
// there are compile workers, so each normally has a worker to use), never
// on the thread that asked: the server's RPC threads hand a compile over and
// go back to other requests. Jobs start in the order they were scheduled.
//
//   CompileQueue queue(2);
//   queue.Schedule([] { /* may block */ });
//
// Thread-safe. The destructor runs the jobs already scheduled, then joins
// the threads; scheduling during destruction is a bug.
#pragma once

#include <deque>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace warpd::compiler {

class CompileQueue {
 public:
  // threads >= 1 (less is taken as 1). Threads are named "warpd-compile".
  explicit CompileQueue(int threads);
  ~CompileQueue();
  CompileQueue(const CompileQueue&) = delete;
  CompileQueue& operator=(const CompileQueue&) = delete;

  void Schedule(absl::AnyInvocable<void() &&> job);

  int num_threads() const { return static_cast<int>(threads_.size()); }

 private:
  void Loop();

  absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> jobs_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace warpd::compiler

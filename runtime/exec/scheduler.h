// warpd runtime: the executor that runs command streams, shared fairly
// between groups of streams (tenants).
//
// Every stream belongs to a StreamGroup with an integer weight. A stream with
// work is handed to the scheduler (Wake); an executor thread gives it one
// turn: at least one command, more until the turn's time budget (`slice`) is
// used, then it goes to the back of its group's queue. Which group runs next:
//   - groups are picked by lowest virtual time: the executor time a group has
//     used divided by its weight (weighted fair queuing), so over a window two
//     busy groups get executor time in proportion to their weights; a group
//     that was idle starts at the current virtual time (it cannot bank
//     credit while idle);
//   - within a group, its runnable streams take turns round-robin;
//   - a group holds at most `max_threads_per_group` executor threads at once
//     (default: all but one of the base threads when there are two or
//     more), so another group finds a thread within one turn, even while
//     one tenant's long kernels occupy the rest;
//   - when every thread is in a turn that began more than `grow_after` ago
//     (long kernels of as many groups as there are threads) while a group
//     that may run waits, one more thread starts, up to `max_threads`; an
//     extra thread that finds nothing to do for a second ends.
// A turn is never preempted: a command that runs for a minute holds its
// thread for a minute (the kernel time limit bounds it); the per-group cap
// and the extra threads are what keep the others going meanwhile. Only when
// more groups run long kernels than `max_threads` does a group wait for a
// turn to end.
//
//   StreamScheduler scheduler({.threads = 4});
//   std::shared_ptr<StreamGroup> tenant = scheduler.CreateGroup("alice", 2);
//   auto stream = Stream::Create(device, tenant);  // stream.h
//
// Ownership: groups are shared_ptr (held by their streams and their owner);
// the scheduler must outlive every group. The destructor runs the turns
// already queued, then joins its threads.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace warpd::runtime {

class StreamScheduler;

// Work the scheduler runs in turns (a stream). The task wakes itself
// (StreamGroup::Wake) when it gets work while it is neither queued nor in a
// turn; the scheduler queues it again while its turns report more work.
class Schedulable {
 public:
  virtual ~Schedulable() = default;

 private:
  friend class StreamScheduler;
  // Runs one unit of work, then more while `within_slice()` is true. Returns
  // true when work remains (the task must not wake itself meanwhile); false
  // once it has marked itself idle, after which it may be woken again even
  // before RunTurn has returned (so the tail of a turn that does no more
  // work may overlap the next turn).
  virtual bool RunTurn(absl::FunctionRef<bool()> within_slice) = 0;
};

// A tenant's share of the executor. Made by StreamScheduler::CreateGroup.
// Thread-safe; immutable except for its scheduler-side accounting.
class StreamGroup {
 public:
  ~StreamGroup();
  StreamGroup(const StreamGroup&) = delete;
  StreamGroup& operator=(const StreamGroup&) = delete;

  const std::string& name() const { return name_; }
  int weight() const { return weight_.load(std::memory_order_relaxed); }
  // A new weight (clamped like CreateGroup's), for turns from now on (a
  // tenant's weight changed by a config reload).
  void SetWeight(int weight);
  StreamScheduler& scheduler() const { return *scheduler_; }

  // Queues `task` (which must be idle, see Schedulable) for a turn.
  void Wake(std::shared_ptr<Schedulable> task);

  // Runs a turn of the idle `task` on the calling thread instead, when that
  // delays no one: nothing is queued for a turn anywhere, an executor
  // thread is idle (the caller stands in for it) and the group is under its
  // thread limit. The turn is charged to the group like any other; work
  // left when its slice ends is queued for the executor. Returns false,
  // doing nothing, otherwise (then Wake it). For threads that would
  // otherwise wait for the turn (a local client's synchronize).
  bool TryRunHere(const std::shared_ptr<Schedulable>& task);

 private:
  friend class StreamScheduler;
  StreamGroup(StreamScheduler* scheduler, uint64_t id, std::string name, int weight)
      : scheduler_(scheduler), id_(id), name_(std::move(name)), weight_(weight) {}

  StreamScheduler* const scheduler_;
  const uint64_t id_;
  const std::string name_;
  std::atomic<int> weight_;
};

class StreamScheduler {
 public:
  struct Options {
    int threads = 4;  // >= 1: the base threads, always there
    // Extra threads start while every thread has been in its turn for
    // `grow_after` and a group that may run waits, up to `max_threads` in
    // all (0: 4 * threads; `threads`: a fixed pool).
    int max_threads = 0;
    absl::Duration grow_after = absl::Milliseconds(5);
    // Executor threads one group may hold at once; 0: threads - 1 when
    // threads >= 2, else 1. Clamped to [1, threads].
    int max_threads_per_group = 0;
    // A turn keeps running commands of its stream while less than this has
    // passed since it began (it always runs at least one; zero: exactly one).
    absl::Duration slice = absl::Milliseconds(1);
    // The time used for turns and accounting; tests pass a fake clock. Must
    // be thread-safe and monotonic.
    std::function<absl::Time()> clock = nullptr;
  };

  // What a group has used so far (for metrics and tests).
  struct GroupUsage {
    int running = 0;                 // executor threads it holds now
    int queued = 0;                  // its streams waiting for a turn
    uint64_t turns = 0;              // turns it has had
    absl::Duration busy;             // executor time its turns took
  };

  static constexpr int kMaxWeight = 1000;

  explicit StreamScheduler(Options options);
  ~StreamScheduler();
  StreamScheduler(const StreamScheduler&) = delete;
  StreamScheduler& operator=(const StreamScheduler&) = delete;

  // A new group; `weight` is clamped to [1, kMaxWeight]. `name` is for logs.
  std::shared_ptr<StreamGroup> CreateGroup(std::string name, int weight = 1);

  GroupUsage Usage(const StreamGroup& group) const;
  // Executor threads running now (base and extra), and those of them
  // waiting for work.
  int threads() const;
  int idle_threads() const;
  int max_threads() const { return max_threads_; }
  int max_threads_per_group() const { return max_per_group_; }

 private:
  friend class StreamGroup;

  // Accounting and run queue of one group; every field is guarded by mu_
  // (an annotation cannot name the enclosing object's mutex).
  struct GroupState {
    int weight = 1;
    int running = 0;
    // Virtual time: executor nanoseconds used, divided by the weight.
    int64_t vtime = 0;
    uint64_t turns = 0;
    int64_t busy_ns = 0;
    std::deque<std::shared_ptr<Schedulable>> queue;
    bool active = false;     // in active_
    uint64_t activated = 0;  // order of activation, for ties
  };

  // One executor thread; every field but `thread` is guarded by mu_.
  struct Worker {
    std::thread thread;
    bool in_turn = false;
    absl::Time turn_start;  // real time (not `clock`): when to grow
    bool exited = false;
  };

  void Wake(uint64_t group, std::shared_ptr<Schedulable> task);
  bool TryRunHere(uint64_t group, const std::shared_ptr<Schedulable>& task);
  struct TurnResult {
    bool more = false;    // the task has more work
    int64_t used_ns = 0;  // by `clock`
  };
  // Runs one turn of `task` (of at most a slice), timed.
  TurnResult TimedTurn(Schedulable& task);
  // Charges a finished turn to its group (which held a thread for it) and
  // queues the task again when it has more work.
  void EndTurnLocked(GroupState* g, const std::shared_ptr<Schedulable>& task, TurnResult turn)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveGroup(uint64_t group);
  void StartWorkerLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WorkerLoop(Worker* self);
  // Starts extra threads when every thread is held by a long turn.
  void MonitorLoop();
  // A group could run, no thread is free for it, and one more may start.
  bool WantThreadLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The group to run next (lowest virtual time among those with a queued
  // task and a free thread), or null.
  GroupState* PickLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool CanRunLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration slice_;
  const std::function<absl::Time()> clock_;
  const absl::Duration grow_after_;
  int base_threads_ = 1;
  int max_threads_ = 1;
  int max_per_group_ = 1;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::unique_ptr<GroupState>> groups_ ABSL_GUARDED_BY(mu_);
  std::vector<GroupState*> active_ ABSL_GUARDED_BY(mu_);  // groups with queued tasks
  uint64_t next_group_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t activations_ ABSL_GUARDED_BY(mu_) = 0;
  // Never decreases: the virtual time of the group picked last. A group
  // that becomes active starts no earlier than this.
  int64_t min_vtime_ ABSL_GUARDED_BY(mu_) = 0;
  size_t queued_tasks_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::list<Worker> workers_ ABSL_GUARDED_BY(mu_);  // a list: Worker addresses stay put
  int live_ ABSL_GUARDED_BY(mu_) = 0;  // workers not exited
  int idle_ ABSL_GUARDED_BY(mu_) = 0;  // workers waiting for work
  int running_here_ ABSL_GUARDED_BY(mu_) = 0;  // turns run by TryRunHere now
  uint64_t started_ ABSL_GUARDED_BY(mu_) = 0;  // threads ever started, for names
  std::thread monitor_;
};

}  // namespace warpd::runtime

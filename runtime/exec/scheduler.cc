#include "runtime/exec/scheduler.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include "runtime/device/device_time.h"

namespace warpd::runtime {

namespace {

// A turn costs at least this much virtual time, so turns that take no
// measurable time (skipped commands, a fake clock) still count.
constexpr int64_t kMinChargeNs = 1000;

// An extra thread (beyond the base ones) that waited this long for work ends.
constexpr absl::Duration kExtraThreadIdle = absl::Seconds(1);

}  // namespace

StreamGroup::~StreamGroup() { scheduler_->RemoveGroup(id_); }

void StreamGroup::Wake(std::shared_ptr<Schedulable> task) { scheduler_->Wake(id_, std::move(task)); }

bool StreamGroup::TryRunHere(const std::shared_ptr<Schedulable>& task) { return scheduler_->TryRunHere(id_, task); }

void StreamGroup::SetWeight(int weight) {
  weight = std::clamp(weight, 1, StreamScheduler::kMaxWeight);
  absl::MutexLock lock(&scheduler_->mu_);
  weight_.store(weight, std::memory_order_relaxed);
  // Virtual time already used stays; turns from now on are charged at the
  // new weight.
  scheduler_->groups_.at(id_)->weight = weight;
}

StreamScheduler::StreamScheduler(Options options)
    : slice_(options.slice),
      clock_(options.clock ? std::move(options.clock) : [] { return absl::Now(); }),
      grow_after_(options.grow_after) {
  base_threads_ = std::max(options.threads, 1);
  max_threads_ = std::max(options.max_threads > 0 ? options.max_threads : 4 * base_threads_, base_threads_);
  max_per_group_ = options.max_threads_per_group > 0 ? options.max_threads_per_group
                                                     : (base_threads_ >= 2 ? base_threads_ - 1 : 1);
  max_per_group_ = std::clamp(max_per_group_, 1, base_threads_);
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < base_threads_; ++i) StartWorkerLocked();
  if (max_threads_ > base_threads_) {
    monitor_ = std::thread([this] { MonitorLoop(); });
    pthread_setname_np(monitor_.native_handle(), "warpd-stream-m");
  }
}

StreamScheduler::~StreamScheduler() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (monitor_.joinable()) monitor_.join();
  // No thread starts any more. Workers touch only their own entry's other
  // fields (under mu_), never `thread`, and splicing keeps the entries.
  std::list<Worker> workers;
  {
    absl::MutexLock lock(&mu_);
    workers.splice(workers.begin(), workers_);
  }
  for (Worker& w : workers) w.thread.join();
}

void StreamScheduler::StartWorkerLocked() {
  // Join the threads of extra workers that ended: they have left mu_ for
  // good (`exited` is the last thing they set), so this waits only for
  // their final return.
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (!it->exited) {
      ++it;
      continue;
    }
    it->thread.join();
    it = workers_.erase(it);
  }
  Worker* w = &workers_.emplace_back();
  ++live_;
  w->thread = std::thread([this, w] { WorkerLoop(w); });
  const std::string label = "warpd-stream-" + std::to_string(started_++);
  pthread_setname_np(w->thread.native_handle(), label.substr(0, 15).c_str());
}

int StreamScheduler::threads() const {
  absl::MutexLock lock(&mu_);
  return live_;
}

int StreamScheduler::idle_threads() const {
  absl::MutexLock lock(&mu_);
  return idle_;
}

std::shared_ptr<StreamGroup> StreamScheduler::CreateGroup(std::string name, int weight) {
  weight = std::clamp(weight, 1, kMaxWeight);
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_group_id_++;
  auto state = std::make_unique<GroupState>();
  state->weight = weight;
  groups_.emplace(id, std::move(state));
  return std::shared_ptr<StreamGroup>(new StreamGroup(this, id, std::move(name), weight));
}

void StreamScheduler::RemoveGroup(uint64_t group) {
  absl::MutexLock lock(&mu_);
  // Nothing of the group is queued or running: queued and running tasks
  // (streams) hold their group.
  groups_.erase(group);
}

StreamScheduler::GroupUsage StreamScheduler::Usage(const StreamGroup& group) const {
  absl::MutexLock lock(&mu_);
  GroupUsage usage;
  auto it = groups_.find(group.id_);
  if (it == groups_.end()) return usage;
  const GroupState& g = *it->second;
  usage.running = g.running;
  usage.queued = static_cast<int>(g.queue.size());
  usage.turns = g.turns;
  usage.busy = absl::Nanoseconds(g.busy_ns);
  return usage;
}

void StreamScheduler::Wake(uint64_t group, std::shared_ptr<Schedulable> task) {
  absl::MutexLock lock(&mu_);
  GroupState& g = *groups_.at(group);
  g.queue.push_back(std::move(task));
  ++queued_tasks_;
  if (!g.active) {
    g.active = true;
    g.activated = ++activations_;
    // An idle group does not bank credit: it competes from now on.
    g.vtime = std::max(g.vtime, min_vtime_);
    active_.push_back(&g);
  }
}

bool StreamScheduler::TryRunHere(uint64_t group, const std::shared_ptr<Schedulable>& task) {
  GroupState* g;
  {
    absl::MutexLock lock(&mu_);
    g = groups_.at(group).get();
    if (stopping_ || queued_tasks_ > 0 || idle_ - running_here_ <= 0 || g->running >= max_per_group_) return false;
    ++g->running;
    ++running_here_;
    // As when a worker picks it: no credit banked while idle.
    g->vtime = std::max(g->vtime, min_vtime_);
    min_vtime_ = g->vtime;
  }
  const TurnResult turn = TimedTurn(*task);
  absl::MutexLock lock(&mu_);
  --running_here_;
  EndTurnLocked(g, task, turn);
  return true;
}

StreamScheduler::TurnResult StreamScheduler::TimedTurn(Schedulable& task) {
  // The turn's waits for GPU work are charged at their device time
  // (device_time.h), not the wall time the thread waited.
  DeviceTimeLedger& device_time = ThisThreadDeviceTime();
  device_time = {};
  const absl::Time start = clock_();
  const absl::Time end_of_slice = start + slice_;
  TurnResult r;
  r.more = task.RunTurn([&] { return clock_() < end_of_slice; });
  r.used_ns = device_time.Charge(std::max<int64_t>(absl::ToInt64Nanoseconds(clock_() - start), 0));
  return r;
}

void StreamScheduler::EndTurnLocked(GroupState* g, const std::shared_ptr<Schedulable>& task, TurnResult turn) {
  --g->running;
  ++g->turns;
  g->busy_ns += turn.used_ns;
  g->vtime += std::max(turn.used_ns, kMinChargeNs) / g->weight;
  if (turn.more) {
    g->queue.push_back(task);
    ++queued_tasks_;
    if (!g->active) {
      // Still current (it was charged just now): no catching up needed.
      g->active = true;
      g->activated = ++activations_;
      active_.push_back(g);
    }
  }
}

StreamScheduler::GroupState* StreamScheduler::PickLocked() {
  GroupState* best = nullptr;
  for (GroupState* g : active_) {
    if (g->running >= max_per_group_) continue;
    if (best == nullptr || g->vtime < best->vtime ||
        (g->vtime == best->vtime &&
         (g->running < best->running || (g->running == best->running && g->activated < best->activated)))) {
      best = g;
    }
  }
  return best;
}

bool StreamScheduler::CanRunLocked() const {
  for (const GroupState* g : active_) {
    if (g->running < max_per_group_) return true;
  }
  return false;
}

bool StreamScheduler::WantThreadLocked() const {
  return !stopping_ && idle_ == 0 && live_ < max_threads_ && CanRunLocked();
}

void StreamScheduler::MonitorLoop() {
  absl::MutexLock lock(&mu_);
  for (;;) {
    mu_.Await(absl::Condition(
        +[](StreamScheduler* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
          return s->stopping_ || s->WantThreadLocked();
        },
        this));
    if (stopping_) return;
    // Every thread is busy. One between turns is about to pick (maybe the
    // waiting group), so it counts as a turn beginning now.
    const absl::Time now = absl::Now();
    absl::Time youngest = absl::InfinitePast();
    for (const Worker& w : workers_) {
      if (!w.exited) youngest = std::max(youngest, w.in_turn ? w.turn_start : now);
    }
    const absl::Time grow_at = youngest + grow_after_;
    if (now >= grow_at) {
      StartWorkerLocked();
      continue;
    }
    mu_.AwaitWithDeadline(absl::Condition(
                              +[](StreamScheduler* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
                                return !s->WantThreadLocked();
                              },
                              this),
                          grow_at);
  }
}

void StreamScheduler::WorkerLoop(Worker* self) {
  const absl::Condition ready(
      +[](StreamScheduler* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
        return s->CanRunLocked() || (s->stopping_ && s->queued_tasks_ == 0);
      },
      this);
  for (;;) {
    std::shared_ptr<Schedulable> task;
    GroupState* g;
    {
      absl::MutexLock lock(&mu_);
      ++idle_;
      bool woke = true;
      if (live_ > base_threads_) {
        woke = mu_.AwaitWithTimeout(ready, kExtraThreadIdle);
      } else {
        mu_.Await(ready);
      }
      --idle_;
      g = woke ? PickLocked() : nullptr;
      if (g == nullptr) {
        // Stopping with every queued turn run, or an extra thread with
        // nothing to do (unless others ended meanwhile).
        if (woke || live_ > base_threads_) {
          --live_;
          self->exited = true;
          return;
        }
        continue;
      }
      task = std::move(g->queue.front());
      g->queue.pop_front();
      --queued_tasks_;
      ++g->running;
      self->in_turn = true;
      self->turn_start = absl::Now();
      min_vtime_ = std::max(min_vtime_, g->vtime);
      if (g->queue.empty()) {
        g->active = false;
        active_.erase(std::find(active_.begin(), active_.end(), g));
      }
    }
    const TurnResult turn = TimedTurn(*task);
    {
      absl::MutexLock lock(&mu_);
      self->in_turn = false;
      EndTurnLocked(g, task, turn);
    }
    // The last reference to a stream (and so to its group, its commands and
    // their arrays) may go here, outside the lock.
    task.reset();
  }
}

}  // namespace warpd::runtime

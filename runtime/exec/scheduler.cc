#include "runtime/exec/scheduler.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

namespace warpd::runtime {

namespace {

// A turn costs at least this much virtual time, so turns that take no
// measurable time (skipped commands, a fake clock) still count.
constexpr int64_t kMinChargeNs = 1000;

}  // namespace

StreamGroup::~StreamGroup() { scheduler_->RemoveGroup(id_); }

void StreamGroup::Wake(std::shared_ptr<Schedulable> task) { scheduler_->Wake(id_, std::move(task)); }

StreamScheduler::StreamScheduler(Options options)
    : slice_(options.slice), clock_(options.clock ? std::move(options.clock) : [] { return absl::Now(); }) {
  const int threads = std::max(options.threads, 1);
  max_per_group_ = options.max_threads_per_group > 0 ? options.max_threads_per_group
                                                     : (threads >= 2 ? threads - 1 : 1);
  max_per_group_ = std::clamp(max_per_group_, 1, threads);
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] { WorkerLoop(); });
    std::string label = "warpd-stream-" + std::to_string(i);
    pthread_setname_np(threads_.back().native_handle(), label.substr(0, 15).c_str());
  }
}

StreamScheduler::~StreamScheduler() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (auto& t : threads_) t.join();
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

void StreamScheduler::WorkerLoop() {
  for (;;) {
    std::shared_ptr<Schedulable> task;
    GroupState* g;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](StreamScheduler* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
            return s->CanRunLocked() || (s->stopping_ && s->queued_tasks_ == 0);
          },
          this));
      g = PickLocked();
      if (g == nullptr) return;  // stopping, and every queued turn has run
      task = std::move(g->queue.front());
      g->queue.pop_front();
      --queued_tasks_;
      ++g->running;
      min_vtime_ = std::max(min_vtime_, g->vtime);
      if (g->queue.empty()) {
        g->active = false;
        active_.erase(std::find(active_.begin(), active_.end(), g));
      }
    }
    const absl::Time start = clock_();
    const absl::Time end_of_slice = start + slice_;
    const bool more = task->RunTurn([&] { return clock_() < end_of_slice; });
    const int64_t used = std::max<int64_t>(absl::ToInt64Nanoseconds(clock_() - start), 0);
    {
      absl::MutexLock lock(&mu_);
      --g->running;
      ++g->turns;
      g->busy_ns += used;
      g->vtime += std::max(used, kMinChargeNs) / g->weight;
      if (more) {
        g->queue.push_back(std::move(task));
        ++queued_tasks_;
        if (!g->active) {
          // Still current (it was charged just now): no catching up needed.
          g->active = true;
          g->activated = ++activations_;
          active_.push_back(g);
        }
      }
    }
    // The last reference to a stream (and so to its group, its commands and
    // their arrays) may go here, outside the lock.
    task.reset();
  }
}

}  // namespace warpd::runtime

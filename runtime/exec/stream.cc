#include "runtime/exec/stream.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/abi/compiled_module.h"

namespace warpd::runtime {

std::shared_ptr<Stream> Stream::Create(Device* device, std::shared_ptr<StreamGroup> group, size_t max_queued,
                                       std::shared_ptr<CountQuota> queue_quota,
                                       std::shared_ptr<MemoryAccount> memory) {
  return std::shared_ptr<Stream>(new Stream(device, std::move(group), std::max<size_t>(max_queued, 1),
                                            std::move(queue_quota), std::move(memory)));
}

// The scheduler holds a reference while a turn is queued or running, so
// none is when this runs (and the queue is empty unless the scheduler
// stopped first).
Stream::~Stream() {
  std::multimap<uint64_t, absl::AnyInvocable<void() &&>> waiters;
  {
    absl::MutexLock lock(&mu_);
    ReleaseQueued(queue_.size());
    waiters.swap(reach_waiters_);
  }
  // Streams waiting for this one have nothing left to wait for.
  for (auto& [sequence, done] : waiters) std::move(done)();
}

absl::StatusOr<uint64_t> Stream::Submit(std::vector<std::unique_ptr<Command>> batch, bool run_here,
                                        absl::AnyInvocable<void(absl::Status) &&> then) {
  bool wake = false;
  uint64_t last;
  bool then_now = false;  // an empty batch on an idle stream
  absl::Status then_status;
  {
    absl::MutexLock lock(&mu_);
    // On failure `batch` (and the arrays its commands hold) is dropped
    // after the lock.
    if (absl::Status s = CheckRoomLocked(batch.size()); !s.ok()) return s;
    if (queue_quota_ != nullptr && !batch.empty()) {
      if (absl::Status s = queue_quota_->Acquire(batch.size()); !s.ok()) return QueueQuotaError(s);
    }
    for (auto& c : batch) queue_.push_back(Entry{next_sequence_++, std::move(c)});
    last = next_sequence_ - 1;
    if (!scheduled_ && !parked_ && !queue_.empty()) {
      scheduled_ = true;
      wake = true;
    }
    if (then != nullptr) {
      if (Idle()) {
        then_now = true;
        then_status = std::exchange(error_, absl::OkStatus());
      } else {
        idle_waiters_.push_back(IdleWaiter{true, std::move(then)});
      }
    }
  }
  if (then_now) std::move(then)(std::move(then_status));
  if (wake) {
    std::shared_ptr<Stream> self = shared_from_this();
    if (!run_here || !group_->TryRunHere(self)) group_->Wake(std::move(self));
  }
  return last;
}

absl::Status Stream::CheckRoom(size_t commands) const {
  absl::MutexLock lock(&mu_);
  return CheckRoomLocked(commands);
}

absl::Status Stream::QueueQuotaError(const absl::Status& refusal) {
  return absl::ResourceExhaustedError(absl::StrCat("too much queued work: ", refusal.message(),
                                                   " (synchronize first, or submit fewer commands at a time)"));
}

absl::Status Stream::CheckRoomLocked(size_t commands) const {
  if (commands <= max_queued_ - std::min(queue_.size(), max_queued_)) {
    if (queue_quota_ == nullptr) return absl::OkStatus();
    absl::Status s = queue_quota_->Check(commands);
    return s.ok() ? s : QueueQuotaError(s);
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "too much queued work: the stream on ", device_->name(), " has ", queue_.size(),
      " commands queued, and ", commands, " more would pass its limit of ", max_queued_,
      " (synchronize first, or submit fewer commands at a time)"));
}

bool Stream::RunTurn(absl::FunctionRef<bool()> within_slice) {
  bool ran = false;
  bool more_time = true;
  for (;;) {
    Entry entry;
    bool skip;
    uint64_t cancels;
    // WhenReached callbacks due once this command is done (completed_ moves
    // only here and in Cancel, which each take what falls due).
    std::vector<absl::AnyInvocable<void() &&>> reached;
    {
      absl::ReleasableMutexLock lock(&mu_);
      busy_ = false;
      if (queue_.empty()) {
        scheduled_ = false;
        absl::Status status;
        std::vector<IdleWaiter> waiters = TakeIdleWaitersLocked(&status);
        lock.Release();
        RunIdleWaiters(std::move(waiters), status);
        return false;
      }
      // A wait for another stream that is not met yet parks the stream:
      // no thread is held; the other stream's progress resumes it.
      // (The other stream is asked without this one's lock held: two
      // streams may check each other at once.)
      const Command::Prerequisite* p = queue_.front().command->prerequisite();
      if (error_.ok() && p != nullptr && !queue_.front().ready) {
        const std::weak_ptr<Stream> weak_target = p->stream;
        const uint64_t sequence = p->sequence, front = queue_.front().sequence;
        lock.Release();
        std::shared_ptr<Stream> target = weak_target.lock();
        const bool wait = target != nullptr && target.get() != this && target->completed() < sequence;
        absl::ReleasableMutexLock relock(&mu_);
        // A Cancel meanwhile dropped the queue: look again.
        if (queue_.empty() || queue_.front().sequence != front) continue;
        if (!wait) {
          queue_.front().ready = true;
          continue;
        }
        scheduled_ = false;
        parked_ = true;
        relock.Release();
        target->WhenReached(sequence, [weak = weak_from_this()] {
          if (std::shared_ptr<Stream> self = weak.lock()) self->Resume();
        });
        return false;
      }
      // The scheduler requeues the stream behind the other runnable ones.
      if (ran && !more_time) return true;
      entry = std::move(queue_.front());
      queue_.pop_front();
      ReleaseQueued(1);
      busy_ = true;
      cancels = cancels_;
      skip = !error_.ok();
      if (skip) {
        completed_ = std::max(completed_, entry.sequence);
        reached = TakeReachedLocked();
      } else {
        running_ = entry.command.get();
      }
    }
    if (!skip && batches_ && RunBatch(entry, cancels)) {
      ran = true;
      more_time = within_slice();
      continue;
    }
    if (!skip) {
      absl::Status status = entry.command->Execute(*device_);
      std::string output = entry.command->TakeOutput();
      absl::MutexLock lock(&mu_);
      reached = CompleteLocked(entry.sequence, std::move(status), std::move(output));
    }
    // Dropping the command releases its arrays and module (maybe unmapping
    // memory), so it happens outside the lock, and before the stream counts
    // as idle: whoever waited for it sees the memory released.
    entry.command.reset();
    // Streams waiting for this one resume as soon as it gets there.
    for (auto& r : reached) std::move(r)();
    ran = true;
    more_time = within_slice();
  }
}

std::vector<absl::AnyInvocable<void() &&>> Stream::CompleteLocked(uint64_t sequence, absl::Status status,
                                                                  std::string output) {
  output_.Append(std::move(output));
  running_ = nullptr;
  completed_ = std::max(completed_, sequence);
  if (!status.ok() && error_.ok()) error_ = std::move(status);
  return TakeReachedLocked();
}

std::vector<absl::AnyInvocable<void() &&>> Stream::TakeReachedLocked() {
  std::vector<absl::AnyInvocable<void() &&>> due;
  while (!reach_waiters_.empty() && reach_waiters_.begin()->first <= completed_) {
    due.push_back(std::move(reach_waiters_.begin()->second));
    reach_waiters_.erase(reach_waiters_.begin());
  }
  return due;
}

void Stream::WhenReached(uint64_t sequence, absl::AnyInvocable<void() &&> done) {
  {
    absl::MutexLock lock(&mu_);
    if (completed_ < sequence) {
      reach_waiters_.emplace(sequence, std::move(done));
      return;
    }
  }
  std::move(done)();
}

void Stream::Resume() {
  bool wake = false;
  {
    absl::MutexLock lock(&mu_);
    if (!parked_) return;
    parked_ = false;
    if (!scheduled_ && !queue_.empty()) {
      scheduled_ = true;
      wake = true;
    }
  }
  if (wake) group_->Wake(shared_from_this());
}

std::vector<Stream::IdleWaiter> Stream::TakeIdleWaitersLocked(absl::Status* status) {
  std::vector<IdleWaiter> waiters = std::move(idle_waiters_);
  idle_waiters_.clear();
  // Every SynchronizeAsync registered before now sees the same error, once.
  const bool clears = std::any_of(waiters.begin(), waiters.end(), [](const IdleWaiter& w) { return w.clears; });
  *status = clears ? std::exchange(error_, absl::OkStatus()) : absl::OkStatus();
  return waiters;
}

void Stream::RunIdleWaiters(std::vector<IdleWaiter> waiters, const absl::Status& status) {
  for (auto& w : waiters) std::move(w.done)(w.clears ? status : absl::OkStatus());
}

std::string Stream::TakeOutput() {
  absl::MutexLock lock(&mu_);
  return output_.Take("", absl::StrCat("more than ", kMaxPendingOutput, " bytes were waiting to be read"));
}

absl::Status Stream::Synchronize() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &Stream::Idle));
  return std::exchange(error_, absl::OkStatus());
}

void Stream::AddIdleWaiter(IdleWaiter waiter) {
  absl::Status error;
  {
    absl::MutexLock lock(&mu_);
    if (!Idle()) {
      idle_waiters_.push_back(std::move(waiter));
      return;
    }
    if (waiter.clears) error = std::exchange(error_, absl::OkStatus());
  }
  std::move(waiter.done)(std::move(error));
}

void Stream::SynchronizeAsync(absl::AnyInvocable<void(absl::Status) &&> done) {
  AddIdleWaiter(IdleWaiter{true, std::move(done)});
}

void Stream::WhenIdle(absl::AnyInvocable<void() &&> done) {
  AddIdleWaiter(IdleWaiter{false, [done = std::move(done)](absl::Status) mutable { std::move(done)(); }});
}

void Stream::WaitIdle() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &Stream::Idle));
}

void Stream::Cancel() {
  std::vector<absl::AnyInvocable<void() &&>> reached;
  std::deque<Entry> dropped;
  std::vector<IdleWaiter> waiters;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    dropped.swap(queue_);
    ReleaseQueued(dropped.size());
    if (!dropped.empty()) completed_ = dropped.back().sequence;
    parked_ = false;
    for (auto& r : TakeReachedLocked()) reached.push_back(std::move(r));
    ++cancels_;
    if (running_ != nullptr) running_->Cancel();
    if (batch_cancel_ != nullptr) __atomic_store_n(batch_cancel_, abi::kCancelShutdown, __ATOMIC_RELAXED);
    // Only the running command is waited for. When none runs, the stream may
    // still be queued in the scheduler (maybe behind its group's other
    // streams); that turn will find nothing to do.
    mu_.Await(absl::Condition(this, &Stream::Idle));
    // Waiters left now were registered while commands were queued but not
    // running: this is the moment the stream becomes idle for them.
    waiters = TakeIdleWaitersLocked(&status);
    if (status.ok() && !dropped.empty()) {
      status = absl::CancelledError(
          absl::StrCat("the stream was cancelled; ", dropped.size(), " queued commands did not run"));
    }
    error_ = absl::OkStatus();
    output_.Clear();
  }
  RunIdleWaiters(std::move(waiters), status);
  for (auto& r : reached) std::move(r)();
  dropped.clear();  // outside the lock, see RunTurn
}

uint64_t Stream::completed() const {
  absl::MutexLock lock(&mu_);
  return completed_;
}

uint64_t Stream::submitted() const {
  absl::MutexLock lock(&mu_);
  return next_sequence_ - 1;
}

size_t Stream::queued() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

}  // namespace warpd::runtime

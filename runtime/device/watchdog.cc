#include "runtime/device/watchdog.h"

namespace warpd::runtime {

Watchdog::Watchdog() : thread_([this] { Loop(); }) {}

Watchdog::~Watchdog() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

uint64_t Watchdog::Arm(absl::Time deadline, int32_t* flag, int32_t value) {
  absl::MutexLock lock(&mu_);
  uint64_t token = next_token_++;
  timers_.emplace(token, Timer{deadline, flag, value});
  if (deadline < sleeps_until_) ++wakes_;
  return token;
}

void Watchdog::Disarm(uint64_t token) {
  // The timer thread fires under mu_, so once the entry is gone under the
  // same lock the flag is never touched again.
  absl::MutexLock lock(&mu_);
  timers_.erase(token);
}

void Watchdog::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    absl::Time next = absl::InfiniteFuture();
    const absl::Time now = absl::Now();
    for (auto it = timers_.begin(); it != timers_.end();) {
      if (it->second.deadline <= now) {
        __atomic_store_n(it->second.flag, it->second.value, __ATOMIC_RELAXED);
        it = timers_.erase(it);
      } else {
        next = std::min(next, it->second.deadline);
        ++it;
      }
    }
    // Sleeps until the earliest deadline (a disarmed timer's too: it then
    // finds nothing to fire), a timer due earlier than that, or stop; idle,
    // it never wakes.
    const uint64_t seen = wakes_;
    sleeps_until_ = next;
    auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || wakes_ != seen; };
    mu_.AwaitWithDeadline(absl::Condition(&changed), next);
    sleeps_until_ = absl::InfinitePast();
  }
}

}  // namespace warpd::runtime

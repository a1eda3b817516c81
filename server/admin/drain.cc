#include "server/admin/drain.h"

#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"

namespace warpd::server::admin {

namespace {

// How often a wait looks at `stop` (the streams' idle callbacks wake it
// at once).
constexpr absl::Duration kPoll = absl::Milliseconds(50);

}  // namespace

Drain::~Drain() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

bool Drain::WaitIdle(const SessionManager& sessions, absl::Time deadline, const absl::Notification& stop) {
  struct Pending {
    absl::Mutex mu;
    size_t left ABSL_GUARDED_BY(mu) = 0;
  };
  for (;;) {
    std::vector<std::shared_ptr<runtime::Stream>> streams;
    for (const auto& [token, session] : sessions.Snapshot()) {
      for (auto& s : session->Streams()) streams.push_back(std::move(s));
    }
    auto pending = std::make_shared<Pending>();
    {
      absl::MutexLock lock(&pending->mu);
      pending->left = streams.size();
    }
    // Idle streams call back at once, here; busy ones from the executor
    // when their queue runs dry.
    for (const auto& s : streams) {
      s->WhenIdle([pending] {
        absl::MutexLock lock(&pending->mu);
        --pending->left;
      });
    }
    bool all_at_once;
    {
      absl::MutexLock lock(&pending->mu);
      all_at_once = pending->left == 0;
    }
    if (all_at_once) return true;  // nothing queued or running at this moment
    // Wait for this round, then look again: sessions may have queued more.
    for (;;) {
      if (stop.HasBeenNotified() || absl::Now() >= deadline) return false;
      absl::MutexLock lock(&pending->mu);
      auto done = [p = pending.get()]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu) { return p->left == 0; };
      if (pending->mu.AwaitWithDeadline(absl::Condition(&done), std::min(deadline, absl::Now() + kPoll))) break;
    }
  }
}

absl::Status Drain::Start(absl::Duration timeout, absl::AnyInvocable<void(Result) &&> done) {
  if (started_.exchange(true)) return absl::FailedPreconditionError("the daemon is already draining");
  sessions_->StopOpening("this daemon is draining (warpctl drain): it takes no new sessions and exits once "
                         "its running work is done; connect to another daemon or start it again");
  const size_t open = sessions_->size();
  spdlog::info("draining: no new sessions; waiting up to {} for the work of {} open session(s)",
               absl::FormatDuration(timeout), open);
  thread_ = std::thread([this, timeout, open, done = std::move(done)]() mutable {
    const absl::Time start = absl::Now();
    Result r;
    r.idle = WaitIdle(*sessions_, start + timeout, stop_);
    r.waited = absl::Now() - start;
    r.sessions = open;
    if (r.idle) {
      spdlog::info("drained: no work queued or running after {}; shutting down", absl::FormatDuration(r.waited));
    } else if (!stop_.HasBeenNotified()) {
      spdlog::warn("drain: work still queued or running after {}; shutting down anyway",
                   absl::FormatDuration(r.waited));
    }
    std::move(done)(r);
    if (!stop_.HasBeenNotified()) exit_();
  });
  return absl::OkStatus();
}

}  // namespace warpd::server::admin

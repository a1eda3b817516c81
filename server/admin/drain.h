// warpd server: draining the daemon: take no new sessions, let the work
// that is queued or running finish (for a bounded time), then exit.
//
// Start() stops the session manager from opening sessions (OpenSession:
// UNAVAILABLE with a message saying the daemon is draining), then a thread
// of its own waits until every open session's streams are idle
// (WaitIdle), at most the timeout, calls `done` with what happened and then
// `exit` (main.cc: a SIGTERM to itself, so the daemon shuts down exactly as
// on SIGTERM and exits 0; whatever still runs then gets the usual 5 s and is
// cancelled). Open sessions may keep submitting while the drain waits: the
// wait ends at a moment when nothing is queued or running, or at the
// timeout. Stop() (the daemon shutting down for another reason) ends the
// wait at once.
// Thread-safe; the destructor stops and joins the thread.
#pragma once

#include <atomic>
#include <functional>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/session_manager.h"

namespace warpd::server::admin {

class Drain {
 public:
  struct Result {
    bool idle = false;  // false: the timeout (or Stop) ended the wait
    absl::Duration waited;
    size_t sessions = 0;  // open when the drain began
  };

  Drain(SessionManager* sessions, std::function<void()> exit) : sessions_(sessions), exit_(std::move(exit)) {}
  ~Drain();

  // FAILED_PRECONDITION when a drain already started. `done` runs on the
  // drain's thread before `exit`.
  absl::Status Start(absl::Duration timeout, absl::AnyInvocable<void(Result) &&> done);
  bool started() const { return started_.load(); }
  void Stop() {  // idempotent
    if (!stop_requested_.exchange(true)) stop_.Notify();
  }

  // True once every stream of every session in `sessions` was idle at one
  // moment; false when `deadline` passed or `stop` was notified first.
  static bool WaitIdle(const SessionManager& sessions, absl::Time deadline, const absl::Notification& stop);

 private:
  SessionManager* const sessions_;
  const std::function<void()> exit_;
  std::atomic<bool> started_{false};
  std::atomic<bool> stop_requested_{false};
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace warpd::server::admin

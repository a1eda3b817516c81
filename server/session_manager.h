// warpd server: the open sessions, by token.
//
// A token is 128 random bits (getrandom) in hex; knowing it is what grants
// access to the session. Unknown, empty or closed tokens are UNAUTHENTICATED.
// Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/exec/scheduler.h"
#include "server/session.h"

namespace warpd::server {

class SessionManager {
 public:
  // `executor` runs the sessions' streams and must outlive the manager.
  explicit SessionManager(runtime::StreamScheduler* executor, size_t max_sessions = 4096)
      : executor_(executor), max_sessions_(max_sessions) {}
  ~SessionManager() { CloseAll(); }

  // A new session's token; RESOURCE_EXHAUSTED past max_sessions.
  absl::StatusOr<std::string> Open(const std::string& client_name);
  absl::StatusOr<std::shared_ptr<Session>> Get(const std::string& token) const;
  // Frees everything the session owns.
  absl::Status Close(const std::string& token);
  void CloseAll();
  size_t size() const;

 private:
  runtime::StreamScheduler* const executor_;
  const size_t max_sessions_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warpd::server

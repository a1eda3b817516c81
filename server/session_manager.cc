#include "server/session_manager.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/objects/secure_random.h"

namespace warpd::server {

namespace {

absl::Status UnknownSession() {
  return absl::UnauthenticatedError("unknown or closed session (call OpenSession first)");
}

}  // namespace

absl::StatusOr<std::string> SessionManager::Open(const std::string& client_name) {
  auto session = std::make_shared<Session>(client_name.substr(0, 256), executor_,
                                           runtime::MemoryAccount::Create("session", 0, memory_), pool_options_);
  absl::MutexLock lock(&mu_);
  if (sessions_.size() >= max_sessions_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("too many open sessions (limit ", max_sessions_, ")"));
  }
  for (;;) {
    absl::StatusOr<std::string> token = runtime::SecureRandomHex(16);
    if (!token.ok()) return token.status();
    if (sessions_.try_emplace(*token, session).second) return *token;
  }
}

absl::StatusOr<std::shared_ptr<Session>> SessionManager::Get(const std::string& token) const {
  if (token.empty()) {
    return absl::UnauthenticatedError("request names no session (call OpenSession first)");
  }
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(token);
  if (it == sessions_.end()) return UnknownSession();
  return it->second;
}

absl::Status SessionManager::Close(const std::string& token) {
  std::shared_ptr<Session> session;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(token);
    if (it == sessions_.end()) return UnknownSession();
    session = std::move(it->second);
    sessions_.erase(it);
  }
  session->Close();
  return absl::OkStatus();
}

void SessionManager::CloseAll() {
  std::vector<std::shared_ptr<Session>> all;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [token, s] : sessions_) all.push_back(std::move(s));
    sessions_.clear();
  }
  for (auto& s : all) s->Close();
}

size_t SessionManager::size() const {
  absl::MutexLock lock(&mu_);
  return sessions_.size();
}

}  // namespace warpd::server

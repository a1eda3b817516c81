#include "server/session_manager.h"

#include <pthread.h>

#include <algorithm>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/log_text.h"
#include "runtime/objects/secure_random.h"
#include "server/logging.h"
#include "spdlog/spdlog.h"

namespace warpd::server {

namespace {

absl::Status UnknownSession() {
  return absl::UnauthenticatedError("unknown or closed session (call OpenSession first)");
}

}  // namespace

SessionManager::SessionManager(runtime::StreamScheduler* executor, const runtime::SegmentPoolOptions& pool_options,
                               size_t max_sessions, absl::Duration grace)
    : executor_(executor), pool_options_(pool_options), max_sessions_(max_sessions), grace_(grace) {
  if (grace_ > absl::ZeroDuration()) reaper_ = std::thread([this] { ReaperLoop(); });
}

SessionManager::~SessionManager() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (reaper_.joinable()) reaper_.join();
  CloseAll();
}

absl::StatusOr<std::string> SessionManager::Open(std::shared_ptr<Tenant> tenant, const std::string& client_name,
                                                 std::string credential) {
  {
    absl::MutexLock lock(&mu_);
    if (!refuse_opening_.empty()) return absl::UnavailableError(refuse_opening_);
  }
  if (absl::Status s = tenant->sessions().Acquire(); !s.ok()) return s;
  std::shared_ptr<Session> session;  // destroyed (on failure) after the lock
  absl::MutexLock lock(&mu_);
  if (!refuse_opening_.empty()) {
    tenant->sessions().Release();
    return absl::UnavailableError(refuse_opening_);
  }
  session = std::make_shared<Session>(client_name.substr(0, 256), tenant, GroupFor(*tenant), pool_options_);
  if (sessions_.size() >= max_sessions_) {
    tenant->sessions().Release();
    return absl::ResourceExhaustedError(
        absl::StrCat("too many open sessions on this daemon (limit ", max_sessions_, ", --max-sessions)"));
  }
  for (;;) {
    absl::StatusOr<std::string> token = runtime::SecureRandomHex(16);
    if (!token.ok()) {
      tenant->sessions().Release();
      return token.status();
    }
    if (sessions_.try_emplace(*token, Entry{session, std::move(credential)}).second) return *token;
  }
}

std::shared_ptr<runtime::StreamGroup> SessionManager::GroupFor(const Tenant& tenant) {
  std::weak_ptr<runtime::StreamGroup>& slot = groups_[tenant.name()];
  std::shared_ptr<runtime::StreamGroup> group = slot.lock();
  const int weight = static_cast<int>(tenant.weight());
  if (group == nullptr) {
    group = executor_->CreateGroup(tenant.label(), weight);
    slot = group;
  } else if (group->weight() != weight) {
    group->SetWeight(weight);
  }
  return group;
}

void SessionManager::RefreshWeights() {
  absl::MutexLock lock(&mu_);
  for (auto& [token, e] : sessions_) {
    const int weight = static_cast<int>(e.session->tenant()->weight());
    if (e.session->group().weight() != weight) e.session->group().SetWeight(weight);
  }
}

absl::flat_hash_map<std::string, size_t> SessionManager::CloseRevoked(
    absl::FunctionRef<bool(const Tenant& tenant, std::string_view credential)> accepted) {
  std::vector<std::shared_ptr<Session>> revoked;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (accepted(*it->second.session->tenant(), it->second.credential)) {
        ++it;
        continue;
      }
      revoked.push_back(std::move(it->second.session));
      sessions_.erase(it++);
    }
  }
  absl::flat_hash_map<std::string, size_t> closed;
  for (auto& s : revoked) {
    ++closed[s->tenant()->name()];
    Remove(s);
  }
  return closed;
}

absl::StatusOr<std::shared_ptr<Session>> SessionManager::Get(const std::string& token, const Tenant& caller) const {
  if (token.empty()) {
    return absl::UnauthenticatedError("request names no session (call OpenSession first)");
  }
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(token);
  if (it == sessions_.end() || it->second.session->tenant().get() != &caller) return UnknownSession();
  it->second.session->Touch();
  return it->second.session;
}

void SessionManager::Remove(const std::shared_ptr<Session>& session) {
  session->Close();
  session->tenant()->sessions().Release();
}

absl::Status SessionManager::Close(const std::string& token, const Tenant& caller) {
  std::shared_ptr<Session> session;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(token);
    if (it == sessions_.end() || it->second.session->tenant().get() != &caller) return UnknownSession();
    session = std::move(it->second.session);
    sessions_.erase(it);
  }
  Remove(session);
  return absl::OkStatus();
}

void SessionManager::CloseAll() {
  std::vector<std::shared_ptr<Session>> all;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [token, e] : sessions_) all.push_back(std::move(e.session));
    sessions_.clear();
  }
  for (auto& s : all) Remove(s);
}

std::vector<std::pair<std::string, std::shared_ptr<Session>>> SessionManager::Snapshot() const {
  std::vector<std::pair<std::string, std::shared_ptr<Session>>> out;
  {
    absl::MutexLock lock(&mu_);
    out.reserve(sessions_.size());
    for (const auto& [token, entry] : sessions_) out.emplace_back(token, entry.session);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    const std::string& ta = a.second->tenant()->name();
    const std::string& tb = b.second->tenant()->name();
    if (ta != tb) return ta < tb;
    return a.second->opened_ns() < b.second->opened_ns();
  });
  return out;
}

void SessionManager::StopOpening(std::string message) {
  absl::MutexLock lock(&mu_);
  refuse_opening_ = message.empty() ? "this daemon takes no new sessions" : std::move(message);
}

bool SessionManager::opening_stopped() const {
  absl::MutexLock lock(&mu_);
  return !refuse_opening_.empty();
}

size_t SessionManager::size() const {
  absl::MutexLock lock(&mu_);
  return sessions_.size();
}

size_t SessionManager::ExpireLapsed(absl::Time now) {
  const int64_t deadline = absl::ToUnixNanos(now - grace_);
  std::vector<std::shared_ptr<Session>> lapsed;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      const std::shared_ptr<Session>& s = it->second.session;
      if (s->Lapsed(deadline) || s->tenant()->removed()) {
        lapsed.push_back(std::move(it->second.session));
        sessions_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  for (auto& s : lapsed) {
    LogLimited(spdlog::level::info, s->tenant()->label(), "session closed by the daemon",
               "session of '{}' ({}) closed: {}", LogText(s->client_name()), s->tenant()->label(),
               s->tenant()->removed() ? "its tenant was removed" : "its lease lapsed");
    Remove(s);
  }
  return lapsed.size();
}

void SessionManager::ReaperLoop() {
  pthread_setname_np(pthread_self(), "warpd-leases");
  const absl::Duration period = std::clamp(grace_ / 4, absl::Milliseconds(50), absl::Seconds(5));
  absl::MutexLock lock(&mu_);
  for (;;) {
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), period);
    if (stopping_) return;
    mu_.Unlock();
    ExpireLapsed(absl::Now());
    mu_.Lock();
  }
}

}  // namespace warpd::server

// warpd server: the open sessions, by token, and their leases.
//
// A session token is 128 random bits (getrandom) in hex; it is valid only
// together with the bearer token of the tenant that opened the session: a
// token that is unknown, empty, closed, or another tenant's is
// UNAUTHENTICATED with one and the same message, so a caller learns nothing
// about other tenants' sessions.
//
// Limits: at most max_sessions open in all, and each tenant's own sessions
// quota, so one tenant's flood cannot lock the others out.
//
// Leases: a thread wakes a few times per grace period and closes every
// session whose lease lapsed (Session::Lapsed) or whose tenant was removed
// from the configuration; closing cancels its queued and running work and
// frees its objects (persistent arrays are held by the tenant's store).
//
// Credentials: each session remembers which bearer token opened it (its
// SHA-256, TenantRegistry::CredentialOf). After a config reload,
// CloseRevoked closes the sessions whose token no longer opens their tenant
// (a token_sha256 entry removed, a peer token replaced because a uid left
// the tenant), the same way as a lapsed lease.
// Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "runtime/exec/scheduler.h"
#include "runtime/memory/memory_account.h"
#include "runtime/memory/segment_pool.h"
#include "server/session.h"
#include "server/tenants/tenant.h"

namespace warpd::server {

class SessionManager {
 public:
  // `executor` runs the sessions' streams and must outlive the manager.
  // The sessions of one tenant share one StreamGroup of the executor,
  // weighted by the tenant's weight, so tenants share it by weight and a
  // tenant's sessions take turns within its share. Each session gets a
  // memory account under its tenant's and a pool with `pool_options`.
  // `grace`: how long a session outlives its client (zero: no lease reaper,
  // for tests that drive ExpireLapsed themselves).
  SessionManager(runtime::StreamScheduler* executor, const runtime::SegmentPoolOptions& pool_options,
                 size_t max_sessions = 4096, absl::Duration grace = absl::ZeroDuration());
  ~SessionManager();

  // A new session's token; RESOURCE_EXHAUSTED past max_sessions or the
  // tenant's sessions quota. `credential` is the caller's
  // (TenantRegistry::CredentialOf of the token it authenticated with): the
  // session lives only while that token opens `tenant` (CloseRevoked).
  absl::StatusOr<std::string> Open(std::shared_ptr<Tenant> tenant, const std::string& client_name,
                                   std::string credential);
  // The session `token` names, if `caller` owns it; renews its lease.
  absl::StatusOr<std::shared_ptr<Session>> Get(const std::string& token, const Tenant& caller) const;
  // Frees everything the session owns.
  absl::Status Close(const std::string& token, const Tenant& caller);
  void CloseAll();
  size_t size() const;
  size_t max_sessions() const { return max_sessions_; }

  // Every open session with its token (for status reports; the caller must
  // not hand tokens out), ordered by tenant name then opening time.
  std::vector<std::pair<std::string, std::shared_ptr<Session>>> Snapshot() const;

  // Draining (server/admin/drain.h): from now on Open refuses every new
  // session with UNAVAILABLE and `message`; open sessions are untouched.
  void StopOpening(std::string message);
  bool opening_stopped() const;
  absl::Duration grace() const { return grace_; }

  // Closes the sessions whose lease lapsed before `now` (or whose tenant was
  // removed); returns how many. The reaper thread calls it.
  size_t ExpireLapsed(absl::Time now);

  // Gives every tenant's group its tenant's current weight (after a config
  // reload).
  void RefreshWeights();

  // After a config reload: closes every session whose credential `accepted`
  // refuses for its tenant (its streams are cancelled, its objects freed);
  // returns how many closed, by tenant name (tenants with none are absent).
  // `accepted` runs under the manager's lock and must not call into it.
  absl::flat_hash_map<std::string, size_t> CloseRevoked(
      absl::FunctionRef<bool(const Tenant& tenant, std::string_view credential)> accepted);

 private:
  void Remove(const std::shared_ptr<Session>& session);
  void ReaperLoop();
  // The tenant's group (made on first use; kept while a session or stream
  // holds it), with the tenant's current weight.
  std::shared_ptr<runtime::StreamGroup> GroupFor(const Tenant& tenant) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  runtime::StreamScheduler* const executor_;
  const runtime::SegmentPoolOptions pool_options_;
  const size_t max_sessions_;
  const absl::Duration grace_;
  mutable absl::Mutex mu_;
  struct Entry {
    std::shared_ptr<Session> session;
    std::string credential;  // the SHA-256 (hex) of the token that opened it
  };
  absl::flat_hash_map<std::string, Entry> sessions_ ABSL_GUARDED_BY(mu_);  // by session token
  // By tenant name (one entry per tenant ever seen, so bounded by the
  // configuration).
  absl::flat_hash_map<std::string, std::weak_ptr<runtime::StreamGroup>> groups_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::string refuse_opening_ ABSL_GUARDED_BY(mu_);  // non-empty: StopOpening was called
  std::thread reaper_;
};

}  // namespace warpd::server

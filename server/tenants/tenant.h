// warpd server: a tenant: who a bearer token (or a local user) is, and what
// it may use.
//
// Every session belongs to one tenant. The tenant's quotas bound what all its
// sessions hold together: array memory (a MemoryAccount below the daemon's
// global one, so a charge must fit both), live arrays, open sessions, module
// compiles running at once (more wait in the tenant's own queue, bounded),
// commands queued on its streams, commands held by its captured graphs, and
// the bytes of compiled code it may add to the shared disk kernel cache per
// hour (past that, what it compiles is served from memory only).
// Its weight is its share of the executor when tenants compete.
//
// A config reload updates limits and weight in place (sessions keep their
// tenant); a tenant dropped from the config is marked removed, its tokens
// stop working and the lease reaper closes its sessions.
// Ownership: shared_ptr (sessions and the registry hold it). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "runtime/memory/memory_account.h"
#include "common/count_quota.h"
#include "server/tenants/cache_write_budget.h"

namespace warpd::server {

// 0 means unlimited for every field.
struct TenantLimits {
  uint64_t memory_bytes = 0;
  uint64_t arrays = 0;
  uint64_t sessions = 0;
  uint64_t queued_commands = 0;
  uint64_t compiles = 0;
  uint64_t graph_commands = 0;
  uint64_t cache_bytes_per_hour = 0;  // added to the disk kernel cache
};

class Tenant {
 public:
  Tenant(std::string name, uint32_t weight, const TenantLimits& limits,
         std::shared_ptr<runtime::MemoryAccount> global_memory);

  const std::string& name() const { return name_; }
  // "tenant 'alice'", for messages.
  const std::string& label() const { return label_; }
  uint32_t weight() const { return weight_.load(std::memory_order_relaxed); }
  TenantLimits limits() const;
  void Update(uint32_t weight, const TenantLimits& limits);

  bool removed() const { return removed_.load(std::memory_order_relaxed); }
  // An operator (server/admin/access.h): the daemon's own user without a
  // tenants file, or "admin": true in it. Changes at a reload.
  bool admin() const { return admin_.load(std::memory_order_relaxed); }
  void set_admin(bool admin) { admin_.store(admin, std::memory_order_relaxed); }
  void MarkRemoved() { removed_.store(true, std::memory_order_relaxed); }

  const std::shared_ptr<runtime::MemoryAccount>& memory() const { return memory_; }
  CountQuota& sessions() { return sessions_; }
  CountQuota& arrays() { return arrays_; }
  // Commands queued on all the tenant's streams together (shared with the
  // streams, which may outlive their session for a moment).
  const std::shared_ptr<CountQuota>& queued_commands() const { return queued_commands_; }
  // Commands held by the tenant's captured graphs (each holds its prepared
  // argument blocks until the graph is freed).
  const std::shared_ptr<CountQuota>& graph_commands() const { return graph_commands_; }

  // Compile concurrency. Runs `start` now when fewer than the limit of this
  // tenant's compiles run, else queues it (at most kMaxWaitingCompiles, then
  // RESOURCE_EXHAUSTED). Whoever `start` hands the compile to must call
  // CompileDone() exactly once when it ends, which starts the next waiter.
  absl::Status StartCompile(absl::AnyInvocable<void() &&> start);
  void CompileDone();
  uint64_t compiles_running() const;
  uint64_t compiles_waiting() const;
  static constexpr size_t kMaxWaitingCompiles = 256;

  // Charges the disk cache entry (`bytes`) of a module this tenant's request
  // compiled to its cache_bytes_per_hour budget: true when it fits (save
  // it), false when the budget is spent (serve the module from memory only;
  // a refusal is logged at most every 10 minutes).
  bool ChargeCacheWrite(uint64_t bytes);

 private:
  const std::string name_;
  const std::string label_;
  std::atomic<uint32_t> weight_;
  std::atomic<bool> removed_{false};
  std::atomic<bool> admin_{false};
  std::shared_ptr<runtime::MemoryAccount> memory_;
  CountQuota sessions_;
  CountQuota arrays_;
  const std::shared_ptr<CountQuota> queued_commands_;
  const std::shared_ptr<CountQuota> graph_commands_;
  CacheWriteBudget cache_writes_;
  std::atomic<int64_t> cache_refusal_logged_s_{INT64_MIN};  // when (unix seconds)

  mutable absl::Mutex mu_;
  uint64_t compile_limit_ ABSL_GUARDED_BY(mu_);
  uint64_t compiles_running_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<absl::AnyInvocable<void() &&>> compiles_waiting_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warpd::server

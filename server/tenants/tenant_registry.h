// warpd server: the tenants a daemon serves, and who a caller is.
//
// Two modes:
//   - No tenants file (the default, like Jupyter): one tenant, named after
//     the daemon's user, for that user only. Its token is made at start-up,
//     held in memory, written to a 0600 file for loopback TCP clients
//     (token_file.h) and handed to the daemon's own uid on the login socket
//     (login_socket.h).
//   - --tenants FILE (config.proto's TenantsFile, JSON): tenants with hashed
//     bearer tokens and local uids. Reload() re-reads it (on SIGHUP): tenants
//     keep their identity (and sessions) by name, limits and tokens change,
//     dropped tenants are marked removed. A file that does not load leaves
//     the running config in place.
// Every tenant also has a per-run "peer token" (random, in memory only) that
// the login socket gives to the local users mapped to it. A reload that takes
// any uid away from a tenant gives it a new peer token and refuses the old
// one from then on, so a user who lost the tenant loses the token it was
// given; a reload that keeps or only adds uids keeps the token.
//
// Authenticate maps an `authorization` metadata value to a tenant:
// UNAUTHENTICATED when there is none or it is not a known token. A caller's
// credential is the SHA-256 (hex) of its bearer token (CredentialOf); the
// session manager records it per session, and Accepts tells whether it still
// opens its tenant (after a reload it may not: sessions opened with it close).
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/memory/memory_account.h"
#include "server/tenants/tenant.h"

namespace warpd::server {

class TenantRegistry {
 public:
  struct Options {
    std::string tenants_file;   // empty: the daemon's own user only
    TenantLimits default_limits;  // built-in defaults (a file's default_limits override)
    uint32_t owner_uid = 0;
    std::string owner_name;     // the owner tenant's name (default mode)
  };

  static absl::StatusOr<std::unique_ptr<TenantRegistry>> Create(
      const Options& options, std::shared_ptr<runtime::MemoryAccount> global_memory);

  // What a reload changed beyond limits and weights.
  struct ReloadResult {
    // Tenants that lost a uid and so got a new peer token (the old one is
    // refused from now on).
    std::vector<std::shared_ptr<Tenant>> peer_token_replaced;
  };
  // Re-reads the tenants file; a no-op in default mode. On an error nothing
  // changed.
  absl::StatusOr<ReloadResult> Reload();

  absl::StatusOr<std::shared_ptr<Tenant>> Authenticate(std::string_view authorization) const;
  // The credential an `authorization` metadata value presents: the SHA-256
  // (lower-case hex) of its bearer token; empty when it carries none.
  static std::string CredentialOf(std::string_view authorization);
  // Whether `credential` (CredentialOf) still opens `tenant`: a token of it
  // in the current config (a token_sha256 entry or its current peer token)
  // and the tenant not removed.
  bool Accepts(const Tenant& tenant, std::string_view credential) const;
  // The tenant of a local user (peer uid), or null.
  std::shared_ptr<Tenant> ForUid(uint32_t uid) const;
  // The token the login socket gives the users of `tenant`.
  std::string PeerToken(const Tenant& tenant) const;
  // How `tenant` is reached: its token_sha256 entries (not its login
  // token) and its uids, for status reports.
  struct Access {
    size_t token_hashes = 0;
    std::vector<uint32_t> uids;
  };
  Access AccessOf(const Tenant& tenant) const;
  // Every configured tenant, by name.
  std::vector<std::shared_ptr<Tenant>> All() const;
  // The configured tenant named `name`, or null.
  std::shared_ptr<Tenant> Find(std::string_view name) const;
  bool default_mode() const { return options_.tenants_file.empty(); }
  // The limits a tenant gets when its config names none.
  TenantLimits default_limits() const;

  static absl::Status CheckTenantName(std::string_view name);

 private:
  struct Config;
  TenantRegistry(const Options& options, std::shared_ptr<runtime::MemoryAccount> global_memory)
      : options_(options), global_memory_(std::move(global_memory)) {}
  absl::StatusOr<Config> ReadConfig() const;
  // Installs `config`; `peer_token_replaced` (may be null) gets the tenants
  // that lost a uid.
  absl::Status Apply(Config config, std::vector<std::shared_ptr<Tenant>>* peer_token_replaced);

  const Options options_;
  const std::shared_ptr<runtime::MemoryAccount> global_memory_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Tenant>> by_name_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<Tenant>> by_token_hash_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint32_t, std::shared_ptr<Tenant>> by_uid_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> peer_tokens_ ABSL_GUARDED_BY(mu_);  // tenant -> token
  TenantLimits defaults_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warpd::server

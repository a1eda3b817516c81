// warpd server: the bounds on a local socket's connections (the command
// socket's long-lived ones, the share socket's waiting ones).
//
// A connection holds one slot from accept until it ends. Until its peer has
// authenticated (the command socket's HELLO, the share socket's request
// line) the slot counts against the peer's uid (SO_PEERCRED); once it has,
// against its tenant and against (tenant, uid) instead. So the tenants of
// one uid (a service account whose processes carry different tokens) each
// get their own share, one uid of a tenant cannot take all of the tenant's,
// and no uid can take every slot with connections that never authenticate.
// All slots together stay under `total`.
//
// A refusal is RESOURCE_EXHAUSTED naming the bound, the count and the
// caller's advice ("; use gRPC"). The pre-authentication bound is per uid
// because nothing else is known then: processes of one uid are not
// isolated from each other by the OS anyway (one may signal or trace the
// other), and an honest client authenticates within microseconds of
// connecting, so it holds a pending slot only for that long.
// Thread-safe. The ConnectionSlots must outlive its Slots.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace warpd::server {

class ConnectionSlots {
 public:
  struct Limits {
    int total = 0;            // every connection
    int pending_per_uid = 0;  // not yet authenticated, per peer uid
    int per_tenant = 0;       // authenticated, per tenant
    int per_tenant_uid = 0;   // authenticated, per (tenant, peer uid)
  };

  // One connection's slot, released when destroyed. Move-only; not
  // thread-safe itself (its connection's one thread uses it).
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept { *this = std::move(other); }
    Slot& operator=(Slot&& other) noexcept;
    ~Slot() { Release(); }

    // Moves this pending slot to `tenant`'s count. On RESOURCE_EXHAUSTED
    // (the tenant, or this uid within it, is at its bound) it stays
    // pending. Authenticating twice is FAILED_PRECONDITION.
    absl::Status Authenticate(std::string_view tenant);
    void Release();

    bool held() const { return owner_ != nullptr; }
    uid_t uid() const { return uid_; }
    // Empty while pending.
    const std::string& tenant() const { return tenant_; }

   private:
    friend class ConnectionSlots;
    ConnectionSlots* owner_ = nullptr;
    uid_t uid_ = 0;
    std::string tenant_;
  };

  // `noun` names the connections in messages ("command connections");
  // `advice` ends every refusal ("; use gRPC").
  ConnectionSlots(std::string noun, std::string advice, const Limits& limits);
  ConnectionSlots(const ConnectionSlots&) = delete;
  ConnectionSlots& operator=(const ConnectionSlots&) = delete;

  const Limits& limits() const { return limits_; }

  // A pending slot for a new connection from `uid`, or RESOURCE_EXHAUSTED
  // when all slots are taken or `uid` has pending_per_uid pending ones.
  absl::StatusOr<Slot> Admit(uid_t uid);

  // Counts, for tests and diagnostics.
  int total() const;
  int pending(uid_t uid) const;
  int tenant(std::string_view tenant) const;

 private:
  absl::Status Authenticate(uid_t uid, std::string_view tenant);
  void Release(uid_t uid, const std::string& tenant);

  const std::string noun_;
  const std::string advice_;
  const Limits limits_;
  mutable absl::Mutex mu_;
  int total_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uid_t, int> pending_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> tenants_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::pair<std::string, uid_t>, int> tenant_uids_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warpd::server

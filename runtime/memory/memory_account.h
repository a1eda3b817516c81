// warpd runtime: hierarchical byte budgets for memory (global -> tenant ->
// session).
//
// A MemoryAccount is one node of a tree of budgets. Charging an account
// reserves the bytes in it and in every ancestor, all or nothing: either
// every level has room and all of them count the bytes, or none changes and
// the charge fails with RESOURCE_EXHAUSTED naming the level that refused
// (the one nearest the charged account when several would), e.g.
//   tenant 'alice' memory limit: 3.2 GiB of 4 GiB in use, 1.5 GiB more
//   requested (3435973837 + 1610612736 > 4294967296 bytes)
// The caller's label names the level ("tenant 'alice'", "session", "the
// daemon's CPU"); " memory limit" follows it in messages.
//
//   auto daemon = MemoryAccount::Create("the daemon's CPU", 64 << 30);
//   auto session = MemoryAccount::Create("session", 0, daemon);
//   RETURN_IF_ERROR(session->Charge(n));   // ... and later:
//   session->Release(n);
//
// Limits: 0 is unlimited. set_limit may run at any time (an operator reloads
// the config); a limit lowered below what is in use only refuses new charges,
// nothing already charged is taken back.
//
// Accounting is in whatever unit the caller charges: the memory pools charge
// whole segments (what is really committed), not the bytes clients asked for.
//
// Ownership: accounts are shared_ptr; a child holds its parent, so an
// account lives as long as any descendant or any holder of a charge that
// keeps a reference (a memory segment keeps its account until it is
// unmapped, which may be after the session that made it is gone).
// Thread-safe. Every charge and release of every account takes one lock, so
// a charge across levels is atomic: concurrent charges never overshoot a
// limit, and a charge refused at a higher level never makes another charge
// fail for the moment it was tentatively counted lower down. Pools charge
// per segment, but every queued or captured command (and every array's
// bookkeeping) is charged and released once (memory_charge.h): two short
// critical sections (a walk of at most three levels) per launch, which the
// launch benchmarks of bench/run.py do not tell apart from noise.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace warpd::runtime {

class MemoryAccount {
 public:
  // `label` names the account in errors; `limit` 0 is unlimited; `parent`
  // (may be null) is charged along with this account.
  static std::shared_ptr<MemoryAccount> Create(std::string label, uint64_t limit,
                                               std::shared_ptr<MemoryAccount> parent = nullptr);

  MemoryAccount(const MemoryAccount&) = delete;
  MemoryAccount& operator=(const MemoryAccount&) = delete;

  // Reserves `bytes` here and in every ancestor, or changes nothing and
  // returns RESOURCE_EXHAUSTED (message as above). Charge(0) always succeeds.
  absl::Status Charge(uint64_t bytes);
  // Returns `bytes` charged earlier (to this account) here and in every
  // ancestor. Releasing more than was charged is a bug (checked in debug
  // builds; clamps to zero otherwise).
  void Release(uint64_t bytes);

  // Bytes charged and not released, this account and its descendants.
  uint64_t used() const;
  // The most used() has been since the account was made.
  uint64_t peak() const;
  // 0: unlimited.
  uint64_t limit() const;
  void set_limit(uint64_t limit);

  const std::string& label() const { return label_; }
  const std::shared_ptr<MemoryAccount>& parent() const { return parent_; }

 private:
  MemoryAccount(std::string label, uint64_t limit, std::shared_ptr<MemoryAccount> parent);

  // One lock for every account of the process (see the thread-safety note).
  static absl::Mutex mu_;

  const std::string label_;
  const std::shared_ptr<MemoryAccount> parent_;
  uint64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t peak_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t limit_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warpd::runtime

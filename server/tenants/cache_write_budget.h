// warpd server: a tenant's budget of bytes it may add to the shared disk
// kernel cache per hour (TenantLimits::cache_bytes_per_hour).
//
// A token bucket: it holds at most one hour's budget, starts full, and
// refills continuously at the hourly rate. TryCharge takes a new entry's
// bytes when they fit, else takes nothing and says no; the caller then keeps
// the module in memory only, so a tenant compiling module after module
// cannot fill the disk or push everyone else's entries out of it faster
// than its budget allows. An entry larger than the whole budget never fits.
// The rate may change at run time (a config reload); rate 0 is no limit.
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace warpd::server {

class CacheWriteBudget {
 public:
  // `now` is for tests.
  explicit CacheWriteBudget(uint64_t bytes_per_hour, std::function<absl::Time()> now = &absl::Now);

  // True, taking `bytes`, when they fit in what the budget holds now.
  bool TryCharge(uint64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);

  uint64_t bytes_per_hour() const ABSL_LOCKS_EXCLUDED(mu_);
  // A lower rate also lowers what the bucket holds to at most the new
  // hour's budget; a higher one refills from here at the new rate. From no
  // limit to a limit, the bucket starts full.
  void set_bytes_per_hour(uint64_t bytes_per_hour) ABSL_LOCKS_EXCLUDED(mu_);
  // What TryCharge would accept now (0 when there is no limit: it accepts all).
  uint64_t available() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Refill() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::function<absl::Time()> now_;
  mutable absl::Mutex mu_;
  uint64_t rate_ ABSL_GUARDED_BY(mu_);
  mutable double level_ ABSL_GUARDED_BY(mu_);
  mutable absl::Time last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warpd::server

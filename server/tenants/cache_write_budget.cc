#include "server/tenants/cache_write_budget.h"

#include <algorithm>
#include <utility>

namespace warpd::server {

CacheWriteBudget::CacheWriteBudget(uint64_t bytes_per_hour, std::function<absl::Time()> now)
    : now_(std::move(now)), rate_(bytes_per_hour), level_(static_cast<double>(bytes_per_hour)), last_(now_()) {}

void CacheWriteBudget::Refill() const {
  const absl::Time now = now_();
  if (now > last_) {
    const double hours = absl::ToDoubleHours(now - last_);
    level_ = std::min(static_cast<double>(rate_), level_ + hours * static_cast<double>(rate_));
  }
  last_ = std::max(last_, now);
}

bool CacheWriteBudget::TryCharge(uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  if (rate_ == 0) return true;
  Refill();
  if (static_cast<double>(bytes) > level_) return false;
  level_ -= static_cast<double>(bytes);
  return true;
}

uint64_t CacheWriteBudget::bytes_per_hour() const {
  absl::MutexLock lock(&mu_);
  return rate_;
}

void CacheWriteBudget::set_bytes_per_hour(uint64_t bytes_per_hour) {
  absl::MutexLock lock(&mu_);
  if (rate_ == 0) {
    level_ = static_cast<double>(bytes_per_hour);
    last_ = now_();
  } else {
    Refill();
    level_ = std::min(level_, static_cast<double>(bytes_per_hour));
  }
  rate_ = bytes_per_hour;
}

uint64_t CacheWriteBudget::available() const {
  absl::MutexLock lock(&mu_);
  if (rate_ == 0) return 0;
  Refill();
  return static_cast<uint64_t>(level_);
}

}  // namespace warpd::server

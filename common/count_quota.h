// warpd common: a bounded count of things a tenant holds (sessions, arrays,
// queued commands, graph commands).
//
// Acquire reserves n units all-or-nothing and fails with RESOURCE_EXHAUSTED
// naming the owner, the resource, the use and the limit; Release returns
// them. The limit may change at run time (a config reload): lowering it
// below the current use only refuses new acquisitions. Limit 0: unlimited.
// Thread-safe (lock-free).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace warpd {

class CountQuota {
 public:
  // `resource` names the units in messages: "sessions", "arrays".
  CountQuota(std::string owner, std::string resource, uint64_t limit)
      : owner_(std::move(owner)), resource_(std::move(resource)), limit_(limit) {}

  absl::Status Acquire(uint64_t n = 1) {
    uint64_t current = used_.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t limit = limit_.load(std::memory_order_relaxed);
      if (Exceeds(current, n, limit)) return Refusal(current, n, limit);
      if (used_.compare_exchange_weak(current, current + n, std::memory_order_relaxed)) {
        return absl::OkStatus();
      }
    }
  }
  void Release(uint64_t n = 1) { used_.fetch_sub(n, std::memory_order_relaxed); }

  // The error Acquire(n) would give now, acquiring nothing (a concurrent
  // Acquire may take the room before the caller does).
  absl::Status Check(uint64_t n = 1) const {
    const uint64_t current = used_.load(std::memory_order_relaxed);
    const uint64_t limit = limit_.load(std::memory_order_relaxed);
    return Exceeds(current, n, limit) ? Refusal(current, n, limit) : absl::OkStatus();
  }

  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t limit() const { return limit_.load(std::memory_order_relaxed); }
  void set_limit(uint64_t limit) { limit_.store(limit, std::memory_order_relaxed); }

 private:
  static bool Exceeds(uint64_t current, uint64_t n, uint64_t limit) {
    return limit != 0 && (n > limit || current > limit - n);
  }
  absl::Status Refusal(uint64_t current, uint64_t n, uint64_t limit) const {
    return absl::ResourceExhaustedError(
        absl::StrCat(owner_, " ", resource_, " limit: ", current, " of ", limit, " in use, ", n, " more requested"));
  }

  const std::string owner_;
  const std::string resource_;
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> limit_;
};

// Units of a shared quota held by an object for its lifetime (a graph's
// captured commands): acquired by Take, released by the destructor.
// Move-only; a default-constructed hold holds nothing.
class QuotaHold {
 public:
  QuotaHold() = default;
  static absl::StatusOr<QuotaHold> Take(std::shared_ptr<CountQuota> quota, uint64_t n) {
    if (absl::Status s = quota->Acquire(n); !s.ok()) return s;
    return QuotaHold(std::move(quota), n);
  }
  QuotaHold(QuotaHold&& o) noexcept : quota_(std::move(o.quota_)), n_(std::exchange(o.n_, 0)) {}
  QuotaHold& operator=(QuotaHold&& o) noexcept {
    if (this != &o) {
      Reset();
      quota_ = std::move(o.quota_);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  ~QuotaHold() { Reset(); }

  uint64_t count() const { return n_; }

 private:
  QuotaHold(std::shared_ptr<CountQuota> quota, uint64_t n) : quota_(std::move(quota)), n_(n) {}
  void Reset() {
    if (quota_ != nullptr && n_ != 0) quota_->Release(n_);
    quota_.reset();
    n_ = 0;
  }

  std::shared_ptr<CountQuota> quota_;
  uint64_t n_ = 0;
};

}  // namespace warpd

// warpd runtime: bytes held against a MemoryAccount for an object's lifetime.
//
// The memory pools charge the segments they map; everything else a client's
// request makes the daemon keep (a queued launch's argument block, a graph's
// prepared commands, a module's code, an array's bookkeeping, print output
// waiting to be read) is charged through a MemoryCharge: taken when the
// object is made, released when it is destroyed, so the tenant's and the
// daemon's memory limits bound all of it, not just array data.
//
//   WARPD_ASSIGN_OR_RETURN(MemoryCharge c, MemoryCharge::Take(account, bytes));
//   command->AttachCharge(std::move(c));        // released with the command
//   auto held = WithCharge(std::move(module), std::move(c));  // ... or with
//                                                // the last copy of `held`
//
// Move-only; a default-constructed charge holds nothing. Thread-compatible
// (the account itself is thread-safe).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "runtime/memory/memory_account.h"

namespace warpd::runtime {

class MemoryCharge {
 public:
  MemoryCharge() = default;
  // Charges `bytes` to `account` (and its ancestors), or returns the
  // account's RESOURCE_EXHAUSTED naming the level that refused.
  static absl::StatusOr<MemoryCharge> Take(std::shared_ptr<MemoryAccount> account, uint64_t bytes) {
    if (absl::Status s = account->Charge(bytes); !s.ok()) return s;
    return MemoryCharge(std::move(account), bytes);
  }
  MemoryCharge(MemoryCharge&& o) noexcept : account_(std::move(o.account_)), bytes_(std::exchange(o.bytes_, 0)) {}
  MemoryCharge& operator=(MemoryCharge&& o) noexcept {
    if (this != &o) {
      Reset();
      account_ = std::move(o.account_);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~MemoryCharge() { Reset(); }

  uint64_t bytes() const { return bytes_; }

  // Gives the bytes back now.
  void Reset() {
    if (account_ != nullptr && bytes_ != 0) account_->Release(bytes_);
    account_.reset();
    bytes_ = 0;
  }

 private:
  MemoryCharge(std::shared_ptr<MemoryAccount> account, uint64_t bytes)
      : account_(std::move(account)), bytes_(bytes) {}

  std::shared_ptr<MemoryAccount> account_;
  uint64_t bytes_ = 0;
};

// `object`, sharing ownership with `charge`: the charge is released when
// the last copy of the returned pointer goes (a handle table's entry and
// every command that copied it), after `object`'s own reference.
template <typename T>
std::shared_ptr<T> WithCharge(std::shared_ptr<T> object, MemoryCharge charge) {
  struct Held {
    MemoryCharge charge;  // destroyed after `object` (members go in reverse)
    std::shared_ptr<T> object;
  };
  T* raw = object.get();
  auto held = std::make_shared<Held>(Held{std::move(charge), std::move(object)});
  return std::shared_ptr<T>(std::move(held), raw);
}

}  // namespace warpd::runtime

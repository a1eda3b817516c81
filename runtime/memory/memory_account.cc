#include "runtime/memory/memory_account.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "runtime/memory/human_bytes.h"
#include "runtime/memory/size_math.h"

namespace warpd::runtime {

ABSL_CONST_INIT absl::Mutex MemoryAccount::mu_(absl::kConstInit);

std::shared_ptr<MemoryAccount> MemoryAccount::Create(std::string label, uint64_t limit,
                                                     std::shared_ptr<MemoryAccount> parent) {
  return std::shared_ptr<MemoryAccount>(new MemoryAccount(std::move(label), limit, std::move(parent)));
}

MemoryAccount::MemoryAccount(std::string label, uint64_t limit, std::shared_ptr<MemoryAccount> parent)
    : label_(std::move(label)), parent_(std::move(parent)), limit_(limit) {}

absl::Status MemoryAccount::Charge(uint64_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  // Check every level first, then count at every level: nothing changes
  // unless all have room.
  for (MemoryAccount* a = this; a != nullptr; a = a->parent_.get()) {
    const std::optional<uint64_t> next = CheckedAdd(a->used_, bytes);
    if (next && (a->limit_ == 0 || *next <= a->limit_)) continue;
    if (a->limit_ == 0) {  // only an absurd request overflows an unlimited account
      return absl::ResourceExhaustedError(absl::StrCat(a->label_, " memory: ", bytes,
                                                       " more bytes requested cannot be counted"));
    }
    return absl::ResourceExhaustedError(absl::StrCat(
        a->label_, " memory limit: ", HumanBytes(a->used_), " of ", HumanBytes(a->limit_), " in use, ",
        HumanBytes(bytes), " more requested (", a->used_, " + ", bytes, " > ", a->limit_, " bytes)"));
  }
  for (MemoryAccount* a = this; a != nullptr; a = a->parent_.get()) {
    a->used_ += bytes;
    a->peak_ = std::max(a->peak_, a->used_);
  }
  return absl::OkStatus();
}

void MemoryAccount::Release(uint64_t bytes) {
  if (bytes == 0) return;
  absl::MutexLock lock(&mu_);
  for (MemoryAccount* a = this; a != nullptr; a = a->parent_.get()) {
    assert(a->used_ >= bytes && "released more memory than was charged");
    a->used_ = a->used_ >= bytes ? a->used_ - bytes : 0;
  }
}

uint64_t MemoryAccount::used() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

uint64_t MemoryAccount::peak() const {
  absl::MutexLock lock(&mu_);
  return peak_;
}

uint64_t MemoryAccount::limit() const {
  absl::MutexLock lock(&mu_);
  return limit_;
}

void MemoryAccount::set_limit(uint64_t limit) {
  absl::MutexLock lock(&mu_);
  limit_ = limit;
}

}  // namespace warpd::runtime

#include "runtime/objects/array_members.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/objects/array.h"

namespace warpd::runtime {

absl::Status ForEachArrayMember(types::TypeRef t, uint64_t base,
                                absl::FunctionRef<absl::Status(types::TypeRef, uint64_t)> fn) {
  for (const types::Member& m : t->members()) {
    if (m.type->is_array()) {
      if (absl::Status s = fn(m.type, base + m.offset); !s.ok()) return s;
    } else if (m.type->holds_array()) {
      if (absl::Status s = ForEachArrayMember(m.type, base + m.offset, fn); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status BindArrayMembers(types::TypeRef t, std::byte* value, ArrayLookup lookup, const std::string& device,
                              std::vector<std::shared_ptr<const Array>>* bound,
                              absl::FunctionRef<std::string()> what) {
  return ForEachArrayMember(t, 0, [&](types::TypeRef at, uint64_t off) -> absl::Status {
    if (off + types::kArrayDescriptorSize > t->size()) {
      return absl::InternalError(absl::StrCat(what(), ": an array member lies outside the value"));
    }
    std::byte* slot = value + off;
    uint64_t handle = 0;
    std::memcpy(&handle, slot, sizeof(handle));
    std::memset(slot, 0, types::kArrayDescriptorSize);  // no array: an empty descriptor
    if (handle == 0) return absl::OkStatus();
    absl::StatusOr<std::shared_ptr<const Array>> array = lookup(handle);
    if (!array.ok()) return absl::Status(array.status().code(), absl::StrCat(what(), ": ", array.status().message()));
    const Array& a = **array;
    if (!a.Matches(at)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what(), ": a member expects ", at->ToString(), ", got ", a.TypeName()));
    }
    if (a.device() != device) {
      return absl::InvalidArgumentError(absl::StrCat(what(), ": a member's array is on device '", a.device(),
                                                     "', but the command runs on '", device, "'"));
    }
    a.WriteDescriptor(slot);
    bound->push_back(*std::move(array));
    return absl::OkStatus();
  });
}

void ClearArrayMembers(types::TypeRef dtype, uint64_t offset, std::byte* bytes, uint64_t n) {
  const uint64_t elem = dtype->size();
  if (elem == 0 || n == 0 || !dtype->holds_array()) return;
  std::vector<uint64_t> slots;  // member offsets within one element
  (void)ForEachArrayMember(dtype, 0, [&](types::TypeRef, uint64_t off) {
    slots.push_back(off);
    return absl::OkStatus();
  });
  const uint64_t end = offset + n;
  for (uint64_t e = offset / elem * elem; e < end; e += elem) {
    for (uint64_t off : slots) {
      const uint64_t lo = std::max(e + off, offset);
      const uint64_t hi = std::min(e + off + types::kArrayDescriptorSize, end);
      if (lo < hi) std::memset(bytes + (lo - offset), 0, hi - lo);
    }
  }
}

void HeldArrays::Add(absl::Span<const std::shared_ptr<const Array>> arrays, const Array* self) {
  // What the added arrays hold, read before taking this lock: a view shares
  // its base's HeldArrays (this one, skipped), another array's has its own
  // lock.
  std::vector<std::shared_ptr<const Array>> all;
  for (const std::shared_ptr<const Array>& a : arrays) {
    if (a == nullptr) continue;
    all.push_back(a);
    if (a->held() != nullptr && a->held().get() != this) {
      std::vector<std::shared_ptr<const Array>> inner = a->held()->Snapshot();
      all.insert(all.end(), inner.begin(), inner.end());
    }
  }
  absl::MutexLock lock(&mu_);
  for (std::shared_ptr<const Array>& a : all) {
    // An array sharing this storage (itself, a view of it) is never held:
    // it would keep its own memory alive.
    if (a.get() == self || a->held().get() == this) continue;
    arrays_.try_emplace(a.get(), std::move(a));
  }
}

std::vector<std::shared_ptr<const Array>> HeldArrays::Snapshot() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<const Array>> out;
  out.reserve(arrays_.size());
  for (const auto& [p, a] : arrays_) out.push_back(a);
  return out;
}

size_t HeldArrays::size() const {
  absl::MutexLock lock(&mu_);
  return arrays_.size();
}

void HeldArrays::Clear() {
  absl::flat_hash_map<const Array*, std::shared_ptr<const Array>> gone;
  {
    absl::MutexLock lock(&mu_);
    gone.swap(arrays_);
  }
  // Destroyed outside the lock: a released array may release others.
}

}  // namespace warpd::runtime

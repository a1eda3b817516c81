#include "runtime/objects/array_members.h"

#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "runtime/objects/array.h"
#include "warpd/native/array.h"

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

absl::Status BindArraySlot(types::TypeRef at, std::byte* slot, ArrayLookup lookup, const std::string& device,
                           std::vector<std::shared_ptr<const Array>>* bound, absl::FunctionRef<std::string()> what) {
  // The handles first: the slot becomes the descriptor (an empty one where
  // there is no array: shape 0, so every access is out of bounds).
  uint64_t handles[1 + types::kMaxArrayDims] = {};
  std::memcpy(&handles[0], slot, sizeof(uint64_t));
  if (at->is_indexed_array()) {
    for (int d = 0; d < at->ndim(); ++d) {
      std::memcpy(&handles[1 + d], slot + types::kArrayDescriptorSize + 8 * d, sizeof(uint64_t));
    }
  }
  std::memset(slot, 0, at->size());
  if (handles[0] == 0) return absl::OkStatus();
  auto resolve = [&](uint64_t handle) -> absl::StatusOr<std::shared_ptr<const Array>> {
    absl::StatusOr<std::shared_ptr<const Array>> array = lookup(handle);
    if (!array.ok()) return absl::Status(array.status().code(), absl::StrCat(what(), ": ", array.status().message()));
    if ((*array)->device() != device) {
      return absl::InvalidArgumentError(absl::StrCat(what(), ": an array member's array is on device '",
                                                     (*array)->device(), "', but the command runs on '", device,
                                                     "'"));
    }
    return array;
  };
  WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const Array> data, resolve(handles[0]));
  if (data->ndim() != at->ndim() || !types::SameType(data->dtype(), at->element())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what(), ": a member expects ", at->ToString(), ", got ", data->TypeName()));
  }
  if (!at->is_indexed_array()) {
    data->WriteDescriptor(slot);
    bound->push_back(std::move(data));
    return absl::OkStatus();
  }
  // wp::indexedarray_t: data's descriptor, int32* indices[4], int32 shape[4].
  std::byte* indices = slot + types::kArrayDescriptorSize;
  std::byte* shape = indices + 8 * types::kMaxArrayDims;
  for (int d = 0; d < at->ndim(); ++d) {
    int32_t extent = static_cast<int32_t>(data->shape()[d]);
    if (handles[1 + d] != 0) {
      WARPD_ASSIGN_OR_RETURN(std::shared_ptr<const Array> index, resolve(handles[1 + d]));
      // Read as int32 indices[i], i < its length: back to back.
      if (index->ndim() != 1 || !index->dtype()->is_scalar_of(types::ScalarKind::kInt32) || !index->contiguous()) {
        return absl::InvalidArgumentError(absl::StrCat(what(), ": the index array of dimension ", d,
                                                       " must be a contiguous 1-D int32 array, got ",
                                                       index->TypeName()));
      }
      const uint64_t p = index->address();  // what kernels on its device use
      std::memcpy(indices + 8 * d, &p, sizeof(p));
      extent = static_cast<int32_t>(index->shape()[0]);
      bound->push_back(std::move(index));
    }
    std::memcpy(shape + 4 * d, &extent, sizeof(extent));
  }
  data->WriteDescriptor(slot);
  bound->push_back(std::move(data));
  return absl::OkStatus();
}

absl::Status BindArrayMembers(types::TypeRef t, std::byte* value, ArrayLookup lookup, const std::string& device,
                              std::vector<std::shared_ptr<const Array>>* bound,
                              absl::FunctionRef<std::string()> what) {
  return ForEachArrayMember(t, 0, [&](types::TypeRef at, uint64_t off) -> absl::Status {
    if (off + at->size() > t->size()) {
      return absl::InternalError(absl::StrCat(what(), ": an array member lies outside the value"));
    }
    return BindArraySlot(at, value + off, lookup, device, bound, what);
  });
}

namespace {

// Whether descriptors `x` and `y` describe the same array (the reserved
// word, flags a launch may set, aside).
bool SameArray(const wp::array_t<unsigned char>& x, const wp::array_t<unsigned char>& y) {
  if (x.data != y.data || x.ndim != y.ndim) return false;
  for (int k = 0; k < 4; ++k) {
    if (x.shape[k] != y.shape[k] || x.strides[k] != y.strides[k]) return false;
  }
  return true;
}

}  // namespace

void RevealArrayMembers(types::TypeRef dtype, std::byte* bytes, uint64_t count, absl::Span<const KnownArray> known) {
  const uint64_t elem = dtype->size();
  if (elem == 0 || count == 0 || !dtype->holds_array()) return;
  std::vector<std::pair<types::TypeRef, uint64_t>> slots;  // member type, offset within one element
  (void)ForEachArrayMember(dtype, 0, [&](types::TypeRef at, uint64_t off) {
    slots.emplace_back(at, off);
    return absl::OkStatus();
  });
  // The known arrays' descriptors, by data pointer (views of one array
  // share it); the int32 1-D contiguous ones also as index arrays.
  struct Described {
    wp::array_t<unsigned char> descriptor;
    uint64_t handle;
  };
  absl::flat_hash_map<const void*, std::vector<Described>> by_data;
  absl::flat_hash_map<const void*, uint64_t> index_by_data;
  for (const KnownArray& k : known) {
    if (k.array == nullptr || k.handle == 0) continue;
    Described d{{}, k.handle};
    k.array->WriteDescriptor(&d.descriptor);
    by_data[d.descriptor.data].push_back(d);
    if (k.array->ndim() == 1 && k.array->contiguous() && k.array->dtype()->is_scalar_of(types::ScalarKind::kInt32)) {
      index_by_data.emplace(reinterpret_cast<const void*>(k.array->address()), k.handle);
    }
  }
  auto handle_of = [&](const std::byte* slot) -> uint64_t {
    wp::array_t<unsigned char> x;
    std::memcpy(&x, slot, sizeof(x));
    auto it = by_data.find(x.data);
    if (x.data == nullptr || it == by_data.end()) return 0;
    for (const Described& d : it->second) {
      if (SameArray(x, d.descriptor)) return d.handle;
    }
    return 0;
  };
  for (uint64_t e = 0; e < count; ++e) {
    for (const auto& [at, off] : slots) {
      std::byte* slot = bytes + e * elem + off;
      uint64_t handles[1 + types::kMaxArrayDims] = {handle_of(slot)};
      if (at->is_indexed_array() && handles[0] != 0) {
        for (int d = 0; d < at->ndim(); ++d) {
          const void* p = nullptr;
          std::memcpy(&p, slot + types::kArrayDescriptorSize + 8 * d, sizeof(p));
          auto it = index_by_data.find(p);
          if (p != nullptr && it != index_by_data.end()) handles[1 + d] = it->second;
        }
      }
      std::memset(slot, 0, at->size());
      std::memcpy(slot, &handles[0], sizeof(uint64_t));
      if (at->is_indexed_array()) {
        for (int d = 0; d < at->ndim(); ++d) {
          std::memcpy(slot + types::kArrayDescriptorSize + 8 * d, &handles[1 + d], sizeof(uint64_t));
        }
      }
    }
  }
}

HeldArrays::~HeldArrays() { Clear(); }

absl::Status HeldArrays::Add(absl::Span<const std::shared_ptr<const Array>> arrays, const Array* self) {
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
  // An array sharing this storage (itself, a view of it) is never held: it
  // would keep its own memory alive.
  auto skip = [&](const std::shared_ptr<const Array>& a) { return a.get() == self || a->held().get() == this; };
  if (account_ != nullptr) {
    absl::flat_hash_map<const Array*, bool> fresh;
    for (const auto& a : all)
      if (!skip(a) && !arrays_.contains(a.get())) fresh.try_emplace(a.get(), true);
    if (absl::Status s = account_->Charge(fresh.size() * kEntryBytes); !s.ok()) return s;
  }
  for (std::shared_ptr<const Array>& a : all) {
    if (!skip(a)) arrays_.try_emplace(a.get(), std::move(a));
  }
  return absl::OkStatus();
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
  if (account_ != nullptr) account_->Release(gone.size() * kEntryBytes);
  // Destroyed outside the lock: a released array may release others.
}

}  // namespace warpd::runtime

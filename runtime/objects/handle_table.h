// warpd runtime: a table of objects named by unguessable 64-bit handles.
//
// Each session owns its own tables, so a handle is meaningful only inside the
// session that created it; a handle of another session (or a freed one, or a
// made-up one) is NOT_FOUND, with exactly the same message, so a caller learns
// nothing about other sessions. Handles come from getrandom and are never 0.
//
//   HandleTable<Array> arrays("array");
//   ASSIGN_OR_RETURN(uint64_t h, arrays.Insert(std::move(array)));
//   ASSIGN_OR_RETURN(std::shared_ptr<Array> a, arrays.Get(h));
//
// Ownership: the table holds one shared_ptr per entry; Remove and Clear drop
// it (the object lives on while others still hold it, e.g. a queued launch).
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "runtime/objects/secure_random.h"

namespace warpd::runtime {

template <typename T>
class HandleTable {
 public:
  // `kind` names the objects in messages: "array handle 0x... not found".
  // `max_entries` bounds the table (RESOURCE_EXHAUSTED past it).
  explicit HandleTable(std::string kind, size_t max_entries = size_t{1} << 20)
      : kind_(std::move(kind)), max_entries_(max_entries) {}

  absl::StatusOr<uint64_t> Insert(std::shared_ptr<T> object) {
    absl::MutexLock lock(&mu_);
    if (entries_.size() >= max_entries_) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("too many %ss in this session (limit %d)", kind_, max_entries_));
    }
    for (;;) {
      absl::StatusOr<uint64_t> handle = SecureRandomHandle();
      if (!handle.ok()) return handle.status();
      if (entries_.try_emplace(*handle, object).second) return *handle;
    }
  }

  // Inserts under `handle`, a handle the caller drew (a client naming its
  // object, so that making it costs no round trip): INVALID_ARGUMENT for 0,
  // ALREADY_EXISTS when it is in use.
  absl::Status InsertAs(uint64_t handle, std::shared_ptr<T> object) {
    if (handle == 0) return absl::InvalidArgumentError(absl::StrFormat("a %s handle is never 0", kind_));
    absl::MutexLock lock(&mu_);
    if (entries_.size() >= max_entries_) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("too many %ss in this session (limit %d)", kind_, max_entries_));
    }
    if (!entries_.try_emplace(handle, std::move(object)).second) {
      return absl::AlreadyExistsError(absl::StrFormat("%s handle 0x%016x is already in use", kind_, handle));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::shared_ptr<T>> Get(uint64_t handle) const {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(handle);
    if (it == entries_.end()) return NotFound(handle);
    return it->second;
  }

  // Removes the entry and returns the object it held.
  absl::StatusOr<std::shared_ptr<T>> Remove(uint64_t handle) {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(handle);
    if (it == entries_.end()) return NotFound(handle);
    std::shared_ptr<T> object = std::move(it->second);
    entries_.erase(it);
    return object;
  }

  // Removes every entry; returns the objects so the caller decides where the
  // last references drop (outside any lock).
  std::vector<std::shared_ptr<T>> Clear() {
    absl::MutexLock lock(&mu_);
    std::vector<std::shared_ptr<T>> out;
    out.reserve(entries_.size());
    for (auto& [h, obj] : entries_) out.push_back(std::move(obj));
    entries_.clear();
    return out;
  }

  size_t size() const {
    absl::MutexLock lock(&mu_);
    return entries_.size();
  }

  // Calls fn(handle, object) for every entry, holding the table's lock (fn
  // must not use the table).
  void ForEach(absl::FunctionRef<void(uint64_t, const std::shared_ptr<T>&)> fn) const {
    absl::MutexLock lock(&mu_);
    for (const auto& [handle, object] : entries_) fn(handle, object);
  }

  absl::Status NotFound(uint64_t handle) const {
    return absl::NotFoundError(absl::StrFormat("%s handle 0x%016x not found", kind_, handle));
  }

 private:
  const std::string kind_;
  const size_t max_entries_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<T>> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warpd::runtime

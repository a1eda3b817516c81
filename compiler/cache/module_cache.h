// warpd compiler: the content-addressed module cache.
//
// Keys are SHA-256 hex digests over everything compiled code depends on
// (CacheKey). Two levels:
//   memory: key -> the loaded module, shared by every session that loads it;
//   disk:   <dir>/<key[0:2]>/<key><ext>, written to a temporary name and
//           renamed, so readers never see a partial file and concurrent
//           daemons sharing a directory are safe; see DiskCache for what
//           makes an entry trusted.
// GetOrCreate is single-flight: concurrent requests for one key wait for the
// first one's result instead of compiling again. A failed compile is not
// cached. The memory level keeps at most `capacity` entries, dropping the
// least recently used finished one (its users keep it alive; only the cache
// forgets it). Thread-safe.
#pragma once

#include <cstdint>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace warpd::compiler {

// SHA-256 over the parts, each length-prefixed (so no two part lists collide).
std::string CacheKey(const std::vector<std::string_view>& parts);

template <typename T>
class ModuleCache {
 public:
  using Value = std::shared_ptr<const T>;
  using Factory = std::function<absl::StatusOr<Value>()>;

  static constexpr size_t kDefaultCapacity = 512;

  explicit ModuleCache(std::string dir, size_t capacity = kDefaultCapacity)
      : dir_(std::move(dir)), capacity_(capacity < 1 ? 1 : capacity) {}

  // The cached value for `key`, or the result of `create` (run once per key
  // at a time). *hit is true when the value came from memory.
  absl::StatusOr<Value> GetOrCreate(const std::string& key, const Factory& create, bool* hit) {
    std::shared_future<absl::StatusOr<Value>> future;
    std::promise<absl::StatusOr<Value>> promise;
    bool owner = false;
    {
      absl::MutexLock lock(&mu_);
      auto it = entries_.find(key);
      if (it != entries_.end()) {
        future = it->second.value;
        it->second.last_use = ++clock_;
      } else {
        EvictIfFull();
        future = promise.get_future().share();
        entries_.emplace(key, Entry{future, ++clock_});
        owner = true;
      }
    }
    *hit = !owner;
    if (!owner) return future.get();
    absl::StatusOr<Value> result = create();
    if (!result.ok()) {
      absl::MutexLock lock(&mu_);
      entries_.erase(key);
    }
    promise.set_value(result);
    return result;
  }

  // Drops every memory entry (values stay alive while their users hold them).
  void ClearMemory() {
    absl::MutexLock lock(&mu_);
    entries_.clear();
  }

  size_t size() const {
    absl::MutexLock lock(&mu_);
    return entries_.size();
  }

  std::string dir() const {
    absl::MutexLock lock(&mu_);
    return dir_;
  }
  void set_dir(std::string dir) {
    absl::MutexLock lock(&mu_);
    dir_ = std::move(dir);
  }

 private:
  struct Entry {
    std::shared_future<absl::StatusOr<Value>> value;
    uint64_t last_use;
  };

  // Drops the least recently used finished entry while at capacity (entries
  // still compiling are never dropped: their waiters need them).
  void EvictIfFull() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (entries_.size() >= capacity_) {
      auto victim = entries_.end();
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        bool ready = it->second.value.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
        if (ready && (victim == entries_.end() || it->second.last_use < victim->second.last_use)) victim = it;
      }
      if (victim == entries_.end()) return;  // all in flight: grow past capacity for now
      entries_.erase(victim);
    }
  }

  mutable absl::Mutex mu_;
  std::string dir_ ABSL_GUARDED_BY(mu_);
  const size_t capacity_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t clock_ ABSL_GUARDED_BY(mu_) = 0;
};

// Disk half of the cache. What it holds is loaded as code into the daemon,
// so it is trusted only as far as nobody else can write it:
//   - the directory must belong to the daemon's user and not be writable by
//     group or others (EnsureDir: FAILED_PRECONDITION otherwise);
//   - every entry file must too, and must be a regular file (no symlink);
//   - every entry carries a digest of its key and bytes, written with it and
//     checked on read, so a truncated, modified or swapped file is a miss.
// A rejected entry is logged, removed and compiled again.
// Thread-safe (stateless; a write is a new 0600 file renamed into place).
class DiskCache {
 public:
  // The bytes stored for `key`, or nullopt when absent, untrusted, corrupt or
  // dir is empty.
  static std::optional<std::string> Read(const std::string& dir, const std::string& key, std::string_view ext);
  // Writes atomically (temp file + rename); creates the shard directory (0700).
  static absl::Status Write(const std::string& dir, const std::string& key, std::string_view ext,
                            std::string_view bytes);
  // Removes every cache entry file under dir; returns how many.
  static absl::StatusOr<uint64_t> Clear(const std::string& dir);
  // Creates dir (and parents; a new dir is 0700) and checks it may be
  // trusted: INVALID_ARGUMENT when it cannot be created, FAILED_PRECONDITION
  // when it is not a directory, belongs to another user or is writable by
  // group or others, PERMISSION_DENIED when it is not writable.
  static absl::Status EnsureDir(const std::string& dir);
};

}  // namespace warpd::compiler

// warpd compiler: the content-addressed module cache.
//
// Keys are SHA-256 hex digests over everything compiled code depends on
// (CacheKey). Two levels:
//   memory: key -> the loaded module, shared by every session that loads it
//           (ModuleCache, here);
//   disk:   <dir>/<key[0:2]>/<key><ext>, bounded in size (DiskCache,
//           compiler/cache/disk_cache.h, which says what makes an entry
//           trusted and what is evicted).
// The memory level is single-flight: while a key's value is being created,
// every other request for the key joins that creation instead of creating
// again. GetOrCreateAsync never waits: a request that joins registers a
// callback, run when the creation ends (no thread is held meanwhile);
// GetOrCreate is the blocking form. A failed creation is not cached (its
// waiters get its error). The memory level keeps at most `capacity`
// entries and, with a `size` function, at most `max_bytes` of finished
// values, dropping the least recently used finished ones (their users keep
// them alive; only the cache forgets them: what nobody else holds is freed,
// so the memory modules no session holds stays bounded); entries being
// created are never dropped, so their waiters and later requests still share
// one creation.
// Thread-safe.
//
//   cache.GetOrCreateAsync(key,
//       [](ModuleCache<M>::Completion c) { queue.Schedule([c = std::move(c)]() mutable {
//         std::move(c).Finish(Build()); }); },
//       [](absl::StatusOr<ModuleCache<M>::Value> v, bool hit) { ... });
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace warpd::compiler {

// SHA-256 over the parts, each length-prefixed (so no two part lists collide).
std::string CacheKey(const std::vector<std::string_view>& parts);

template <typename T>
class ModuleCache {
 public:
  using Value = std::shared_ptr<const T>;
  using Result = absl::StatusOr<Value>;
  using Factory = std::function<Result()>;
  // Receives the value (or the creation's error) and whether it came from
  // memory (false only for the request that created it).
  using Done = absl::AnyInvocable<void(Result result, bool hit) &&>;

  // What a creation hands its result to: Finish() stores a success in
  // memory and runs the creator's and every waiter's Done, on the calling
  // thread, outside the cache's lock. Move-only; a Completion destroyed
  // unfinished finishes with ABORTED, so no waiter is left hanging.
  class Completion {
   public:
    Completion(Completion&& other) noexcept
        : cache_(std::exchange(other.cache_, nullptr)), key_(std::move(other.key_)), id_(other.id_),
          done_(std::move(other.done_)) {}
    Completion& operator=(Completion&&) = delete;
    ~Completion() {
      if (cache_ != nullptr) std::move(*this).Finish(absl::AbortedError("a module's creation was abandoned"));
    }
    void Finish(Result result) && {
      ModuleCache* cache = std::exchange(cache_, nullptr);
      cache->Complete(key_, id_, std::move(result), std::move(done_));
    }

   private:
    friend class ModuleCache;
    Completion(ModuleCache* cache, std::string key, uint64_t id, Done done)
        : cache_(cache), key_(std::move(key)), id_(id), done_(std::move(done)) {}
    ModuleCache* cache_;
    std::string key_;
    uint64_t id_;
    Done done_;
  };
  // Starts creating a key's value: must (eventually, on any thread) call
  // Finish on the Completion exactly once. Must not block the caller.
  using AsyncFactory = absl::AnyInvocable<void(Completion completion) &&>;

  static constexpr size_t kDefaultCapacity = 512;
  // A value's size in bytes, for the `max_bytes` bound.
  using Size = std::function<uint64_t(const T&)>;

  explicit ModuleCache(size_t capacity = kDefaultCapacity, uint64_t max_bytes = 0, Size size = nullptr)
      : capacity_(capacity < 1 ? 1 : capacity), max_bytes_(size ? max_bytes : 0), size_(std::move(size)) {}

  // Runs done(value, true) now when `key` is in memory; registers done to
  // run when the key's creation in flight ends; or else calls create (on
  // this thread), whose Completion then runs done(value, false) and every
  // waiter's done. Never waits. The cache must outlive every creation.
  void GetOrCreateAsync(const std::string& key, AsyncFactory create, Done done) {
    bool found = false;
    Value value;
    uint64_t id = 0;
    {
      absl::MutexLock lock(&mu_);
      auto it = entries_.find(key);
      if (it != entries_.end()) {
        it->second.last_use = ++clock_;
        if (!it->second.ready) {
          it->second.waiters.push_back(std::move(done));
          return;
        }
        found = true;
        value = it->second.value;
      } else {
        EvictIfFull();
        id = ++next_id_;
        Entry& entry = entries_[key];
        entry.id = id;
        entry.last_use = ++clock_;
      }
    }
    if (found) {
      std::move(done)(std::move(value), /*hit=*/true);
      return;
    }
    std::move(create)(Completion(this, key, id, std::move(done)));
  }

  // The cached value for `key`, or the result of `create` (run on this
  // thread, once per key at a time; other callers wait for it). *hit is true
  // when the value came from memory.
  Result GetOrCreate(const std::string& key, const Factory& create, bool* hit) {
    absl::Notification ready;
    Result out = absl::UnknownError("unset");
    GetOrCreateAsync(
        key, [&create](Completion c) { std::move(c).Finish(create()); },
        [&](Result result, bool from_memory) {
          out = std::move(result);
          *hit = from_memory;
          ready.Notify();
        });
    ready.WaitForNotification();
    return out;
  }

  // Drops every finished memory entry (values stay alive while their users
  // hold them); creations in flight stay, for their waiters.
  void ClearMemory() {
    absl::MutexLock lock(&mu_);
    for (auto it = entries_.begin(); it != entries_.end();) it = it->second.ready ? Erase(it) : std::next(it);
  }

  // Bytes of the finished values kept (0 without a size function).
  uint64_t bytes() const {
    absl::MutexLock lock(&mu_);
    return bytes_;
  }

  size_t size() const {
    absl::MutexLock lock(&mu_);
    return entries_.size();
  }

 private:
  struct Entry {
    uint64_t id = 0;  // which creation made it (a failed one removes only its own)
    bool ready = false;
    Value value;                 // when ready
    std::vector<Done> waiters;   // while not ready
    uint64_t last_use = 0;
    uint64_t bytes = 0;          // size_(*value), counted in bytes_
  };

  using Iterator = typename std::map<std::string, Entry>::iterator;
  Iterator Erase(Iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    bytes_ -= it->second.bytes;
    return entries_.erase(it);
  }

  void Complete(const std::string& key, uint64_t id, Result result, Done done) {
    std::vector<Done> waiters;
    {
      absl::MutexLock lock(&mu_);
      auto it = entries_.find(key);
      if (it != entries_.end() && it->second.id == id) {
        waiters = std::move(it->second.waiters);
        it->second.waiters.clear();
        if (result.ok()) {
          it->second.ready = true;
          it->second.value = *result;
          if (size_ && *result != nullptr) {
            it->second.bytes = size_(**result);
            bytes_ += it->second.bytes;
            EvictOverBytes(it->first);
          }
        } else {
          Erase(it);
        }
      }
    }
    std::move(done)(result, /*hit=*/false);
    for (Done& w : waiters) std::move(w)(result, /*hit=*/true);
  }

  // Drops the least recently used finished entry while at capacity (entries
  // still being created are never dropped: their waiters need them).
  void EvictIfFull() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (entries_.size() >= capacity_) {
      auto victim = entries_.end();
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->second.ready && (victim == entries_.end() || it->second.last_use < victim->second.last_use)) victim = it;
      }
      if (victim == entries_.end()) return;  // all in flight: grow past capacity for now
      Erase(victim);
    }
  }

  // Drops the least recently used finished entries, other than `keep` (the
  // one just made, which its creator is about to use), while their bytes
  // pass max_bytes_.
  void EvictOverBytes(const std::string& keep) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (max_bytes_ != 0 && bytes_ > max_bytes_) {
      auto victim = entries_.end();
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->second.ready && it->first != keep &&
            (victim == entries_.end() || it->second.last_use < victim->second.last_use)) {
          victim = it;
        }
      }
      if (victim == entries_.end()) return;
      Erase(victim);
    }
  }

  mutable absl::Mutex mu_;
  const size_t capacity_;
  const uint64_t max_bytes_;  // 0: no byte bound
  const Size size_;
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t clock_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace warpd::compiler

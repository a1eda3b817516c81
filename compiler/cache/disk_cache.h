// warpd compiler: the disk level of the module cache, bounded in size.
//
// Layout: <dir>/<key[0:2]>/<key><ext>, where key is a CacheKey (64
// lower-case hex digits) and ext names the kind of code (".o" for CPU
// objects). An entry file is the line "warpd-cache-entry-1", the entry's
// digest (64 hex digits, a newline), then the bytes; the digest covers the
// key and the bytes. A write goes to <key><ext>.tmp.<pid>.<n> beside the
// entry and is renamed into place, so readers never see a partial file and
// daemons sharing a directory are safe.
//
// Trust: what the cache holds is loaded as code into the daemon, so it is
// trusted only as far as nobody else can write it:
//   - the directory must belong to the daemon's user and not be writable by
//     group or others (EnsureDir: FAILED_PRECONDITION otherwise);
//   - every entry file must too, and must be a regular file (no symlink);
//   - the digest is checked on read, so a truncated, modified or swapped
//     file is a miss.
// A rejected entry is logged, removed and compiled again.
//
// Size: the cache holds at most Options::max_bytes (0: no limit) of entry
// files (their sizes, header included). It keeps an index of its entries,
// name -> size and recency, seeded by a scan of the directory when opened
// and refreshed by a rescan every Options::rescan_interval (entries other
// daemons sharing the directory wrote, or removed). Recency is the entry
// file's mtime: a hit (Read, or Touch for a module served from memory) sets
// it to now, so a restarted daemon, and every daemon sharing the directory,
// orders entries alike. After each write (and a hit that found an entry the
// index did not know) the least recently used entries are deleted until the
// total is under the limit; an entry being read or written by this cache is
// never deleted. An entry larger than the whole limit is not written. The
// scan is bounded (Options::max_scan_files), descends only into the
// two-hex-digit shard directories, never follows a symbolic link, counts
// only regular files of this user named like entries, leaves every other
// file alone, and deletes temporary files older than Options::temp_max_age
// (a crashed writer's). Deleting is all eviction does: a daemon that finds a
// file gone compiles the module again.
//
// Ownership: the Compiler holds one per cache directory. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace warpd::compiler {

class DiskCache {
 public:
  struct Options {
    uint64_t max_bytes = 0;  // 0: no limit
    // A temporary file older than this is a crashed writer's (a write takes
    // milliseconds) and is deleted by the scan.
    absl::Duration temp_max_age = absl::Hours(1);
    // How often a write first rescans the directory.
    absl::Duration rescan_interval = absl::Minutes(10);
    // A module served from memory refreshes its entry's recency in the index
    // at once, and the file's mtime at most this often.
    absl::Duration touch_interval = absl::Minutes(1);
    // Directory entries a scan looks at, at most (the rest are not counted
    // until a rescan reaches them; a warning says so).
    uint64_t max_scan_files = uint64_t{1} << 20;
  };

  struct Stats {
    uint64_t bytes = 0;      // entry files in the index, together
    uint64_t entries = 0;
    uint64_t evictions = 0;  // entries this cache deleted to stay under the limit
    uint64_t max_bytes = 0;  // 0: no limit
  };

  // EnsureDir(dir), then scans it and evicts down to the limit. An empty dir
  // is a cache that holds nothing (every Read misses, Write does nothing).
  static absl::StatusOr<std::unique_ptr<DiskCache>> Open(const std::string& dir, const Options& options);

  // Creates dir (and parents; a new dir is 0700) and checks it may be
  // trusted: INVALID_ARGUMENT when it cannot be created, FAILED_PRECONDITION
  // when it is not a directory, belongs to another user or is writable by
  // group or others, PERMISSION_DENIED when it is not writable.
  static absl::Status EnsureDir(const std::string& dir);

  // What an entry of `payload` bytes takes on disk (its header included).
  static uint64_t EntryBytes(uint64_t payload);

  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  const std::string& dir() const { return dir_; }

  // The bytes stored for `key`, or nullopt when absent, untrusted or
  // corrupt. A hit makes the entry the most recently used.
  std::optional<std::string> Read(const std::string& key, std::string_view ext);

  // Writes atomically (temp file + rename; the shard directory is created
  // 0700), then evicts down to the limit. RESOURCE_EXHAUSTED (nothing
  // written) when the entry alone is larger than the limit; INTERNAL when
  // the file cannot be written.
  absl::Status Write(const std::string& key, std::string_view ext, std::string_view bytes);

  // A use of `key` that did not read the file (the module was in memory):
  // makes its entry the most recently used, if the index knows it.
  void Touch(const std::string& key, std::string_view ext);

  // Removes every entry file (and temporary file) under dir; returns how
  // many entries.
  absl::StatusOr<uint64_t> Clear();

  // Scans the directory now (Write does it every rescan_interval) and
  // evicts down to the limit.
  void Rescan();

  Stats stats() const;

 private:
  struct Entry {
    uint64_t bytes = 0;
    int64_t recency = 0;        // ns since the epoch; the file's mtime as last set or seen
    int64_t file_touched = 0;   // when the file's mtime was last set by this cache
  };

  DiskCache(std::string dir, const Options& options) : dir_(std::move(dir)), options_(options) {}

  // A strictly increasing "now", in ns since the epoch.
  int64_t NextRecency() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Upsert(const std::string& name, uint64_t bytes, int64_t recency) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetRecency(Entry& entry, const std::string& name, int64_t recency) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Forget(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes least recently used entries, never pinned ones, until the total
  // is under the limit.
  void Evict() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Pin(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unpin(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string dir_;
  const Options options_;
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);  // by file name
  std::set<std::pair<int64_t, std::string>> by_recency_ ABSL_GUARDED_BY(mu_);
  // Entries being read or written by this cache (by file name): never evicted.
  std::map<std::string, int> pins_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_recency_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_scan_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool scanning_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace warpd::compiler

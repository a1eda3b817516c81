#include "compiler/cache/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/posix_error.h"
#include "common/status_macros.h"
#include "compiler/cache/module_cache.h"
#include "spdlog/spdlog.h"

namespace warpd::compiler {
namespace fs = std::filesystem;

namespace {

// An entry file: this header line, then the entry's digest (64 hex digits
// and a newline), then the bytes. The digest covers the key and the bytes,
// so a truncated, edited or swapped-in file (another key's valid entry) does
// not verify.
constexpr char kEntryMagicText[] = "warpd-cache-entry-1\n";
constexpr std::string_view kEntryMagic = kEntryMagicText;
constexpr uint64_t kHeaderBytes = kEntryMagic.size() + 65;
constexpr uint64_t kMaxEntryBytes = uint64_t{1} << 30;

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// <64 lower-case hex digits>.<1-8 of [a-z0-9]>, as CacheKey and Write make them.
bool IsEntryFileName(std::string_view name) {
  if (name.size() < 66 || name.size() > 73 || name[64] != '.') return false;
  for (size_t i = 0; i < 64; ++i)
    if (!IsLowerHex(name[i])) return false;
  for (size_t i = 65; i < name.size(); ++i)
    if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9'))) return false;
  return true;
}

// A write's temporary file: <entry name>.tmp.<pid>.<n>.
bool IsTempFileName(std::string_view name) {
  const size_t at = name.find(".tmp.");
  return at != std::string_view::npos && IsEntryFileName(name.substr(0, at));
}

bool IsShardName(std::string_view name) { return name.size() == 2 && IsLowerHex(name[0]) && IsLowerHex(name[1]); }

fs::path PathOf(const std::string& dir, const std::string& name) { return fs::path(dir) / name.substr(0, 2) / name; }

// An owned file descriptor (-1: none).
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

// The shard directory of entry `name`, opened without following a symbolic
// link (so no entry is ever read, written or deleted through one); created
// (0700) first when `create`. -1 with errno set when it cannot be opened.
int OpenShard(const std::string& dir, const std::string& name, bool create) {
  const fs::path shard = fs::path(dir) / name.substr(0, 2);
  if (create) mkdir(shard.c_str(), 0700);  // EEXIST is fine
  return open(shard.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

std::string EntryDigest(const std::string& key, std::string_view bytes) {
  return CacheKey({"warpd-cache-entry", key, bytes});
}

int64_t Nanos(const struct timespec& t) { return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec; }

int64_t NowNanos() {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return Nanos(t);
}

// {atime: unchanged, mtime: `nanos`}, for futimens and utimensat.
struct Mtime {
  explicit Mtime(int64_t nanos) {
    times[0].tv_sec = 0;
    times[0].tv_nsec = UTIME_OMIT;
    times[1].tv_sec = nanos / 1000000000;
    times[1].tv_nsec = nanos % 1000000000;
  }
  struct timespec times[2];
};

// Why `st` (of `what` at `path`) is not safe to trust, or "" when it is: it
// must belong to this process's user and not be writable by anyone else.
std::string Untrusted(const struct stat& st, const std::string& what, const std::string& path) {
  if (st.st_uid != geteuid()) {
    return absl::StrCat(what, " '", path, "' belongs to uid ", st.st_uid, ", not to this daemon's user (uid ",
                        geteuid(), ")");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::StrCat(what, " '", path, "' is writable by group or others (mode 0",
                        absl::StrFormat("%o", st.st_mode & 07777), "); fix it with: chmod go-w '", path, "'");
  }
  return "";
}

// Logs why the entry file `name` (in the shard open as shard_fd) is not
// used, and deletes it.
void Discard(int shard_fd, const fs::path& path, const std::string& why) {
  spdlog::warn("kernel cache: ignoring {}: {}; it will be compiled again", path.string(), why);
  unlinkat(shard_fd, path.filename().c_str(), 0);
}

// Calls visit(shard_fd, shard, name, st) for each regular file (lstat: never a
// symbolic link) in each shard directory of `dir` (<dir>/<2 hex digits>/,
// opened without following links), looking at `max_files` directory entries
// at most. Returns false when `dir` cannot be read; sets *truncated when it
// stopped at max_files.
template <typename Visit>
bool ForEachShardFile(const std::string& dir, uint64_t max_files, bool* truncated, int* error, Visit visit) {
  DIR* top = opendir(dir.c_str());
  if (top == nullptr) {
    *error = errno;
    return false;
  }
  absl::Cleanup close_top = [top] { closedir(top); };
  uint64_t seen = 0;
  while (struct dirent* d = readdir(top)) {
    if (!IsShardName(d->d_name)) continue;
    const int shard_fd = openat(dirfd(top), d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (shard_fd < 0) continue;  // a symbolic link, a file, gone
    DIR* shard = fdopendir(shard_fd);
    if (shard == nullptr) {
      close(shard_fd);
      continue;
    }
    absl::Cleanup close_shard = [shard] { closedir(shard); };
    while (struct dirent* f = readdir(shard)) {
      if (++seen > max_files) {
        *truncated = true;
        return true;
      }
      const std::string_view name = f->d_name;
      if (name == "." || name == "..") continue;
      struct stat st;
      if (fstatat(shard_fd, f->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
      visit(shard_fd, std::string_view(d->d_name), name, st);
    }
  }
  return true;
}

}  // namespace

uint64_t DiskCache::EntryBytes(uint64_t payload) { return kHeaderBytes + payload; }

absl::Status DiskCache::EnsureDir(const std::string& dir) {
  std::error_code ec;
  const bool existed = fs::exists(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("cannot create kernel cache directory '", dir, "': ", ec.message()));
  if (!existed) chmod(dir.c_str(), 0700);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return PosixError(absl::StrCat("kernel cache directory '", dir, "'"), errno);
  if (!S_ISDIR(st.st_mode))
    return absl::FailedPreconditionError(absl::StrCat("kernel cache directory '", dir, "' is not a directory"));
  // Objects from this directory are loaded as code into the daemon: trust it
  // only if nobody but the daemon's user can write it (as ssh does for keys).
  if (std::string why = Untrusted(st, "kernel cache directory", dir); !why.empty())
    return absl::FailedPreconditionError(absl::StrCat(why, "; refusing to use it"));
  if (access(dir.c_str(), W_OK) != 0)
    return absl::PermissionDeniedError(absl::StrCat("kernel cache directory '", dir, "' is not writable"));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DiskCache>> DiskCache::Open(const std::string& dir, const Options& options) {
  if (!dir.empty()) WARPD_RETURN_IF_ERROR(EnsureDir(dir));
  std::unique_ptr<DiskCache> cache(new DiskCache(dir, options));
  cache->Rescan();
  return cache;
}

std::optional<std::string> DiskCache::Read(const std::string& key, std::string_view ext) {
  if (dir_.empty()) return std::nullopt;
  const std::string name = key + std::string(ext);
  const fs::path path = PathOf(dir_, name);
  {
    absl::MutexLock lock(&mu_);
    Pin(name);
  }
  bool found = false, gone = false;
  absl::Cleanup done = [&] {
    absl::MutexLock lock(&mu_);
    // A file that is gone (another daemon evicted it) or was discarded
    // leaves the index too.
    if (gone) Forget(name);
    if (found) Evict();  // a hit may have found an entry the index did not count
    Unpin(name);
  };
  const Fd shard(OpenShard(dir_, name, /*create=*/false));
  if (!shard.ok()) {
    gone = errno == ENOENT;
    return std::nullopt;
  }
  const int fd = openat(shard.get(), name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    gone = errno == ENOENT || errno == ELOOP;
    if (errno == ELOOP) Discard(shard.get(), path, "it is a symbolic link");
    return std::nullopt;
  }
  absl::Cleanup close_fd = [fd] { close(fd); };
  struct stat st;
  if (fstat(fd, &st) != 0) return std::nullopt;
  if (!S_ISREG(st.st_mode)) return std::nullopt;
  if (std::string why = Untrusted(st, "entry", path.string()); !why.empty()) {
    Discard(shard.get(), path, why);
    gone = true;
    return std::nullopt;
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxEntryBytes) {
    Discard(shard.get(), path, "it is too large");
    gone = true;
    return std::nullopt;
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = read(fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  data.resize(got);
  if (data.size() < kHeaderBytes || std::string_view(data).substr(0, kEntryMagic.size()) != kEntryMagic ||
      data[kHeaderBytes - 1] != '\n') {
    Discard(shard.get(), path, "it is not a warpd cache entry");
    gone = true;
    return std::nullopt;
  }
  const std::string digest = data.substr(kEntryMagic.size(), 64);
  std::string bytes = data.substr(kHeaderBytes);
  if (digest != EntryDigest(key, bytes)) {
    Discard(shard.get(), path, "its digest does not match (truncated, modified, or another entry's file)");
    gone = true;
    return std::nullopt;
  }
  found = true;
  int64_t recency = 0;
  {
    absl::MutexLock lock(&mu_);
    recency = NextRecency();
    Upsert(name, static_cast<uint64_t>(st.st_size), recency);
    entries_[name].file_touched = recency;
  }
  futimens(fd, Mtime(recency).times);  // the recency other daemons and restarts see
  return bytes;
}

absl::Status DiskCache::Write(const std::string& key, std::string_view ext, std::string_view bytes) {
  if (dir_.empty()) return absl::OkStatus();
  const uint64_t size = EntryBytes(bytes.size());
  if (options_.max_bytes != 0 && size > options_.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("kernel cache: an entry of ", size,
                                                     " bytes is larger than the cache limit (", options_.max_bytes,
                                                     " bytes, --cache-max); not saved"));
  }
  bool rescan = false;
  {
    absl::MutexLock lock(&mu_);
    rescan = !scanning_ && absl::Now() - last_scan_ >= options_.rescan_interval;
  }
  if (rescan) Rescan();
  const std::string name = key + std::string(ext);
  const fs::path final_path = PathOf(dir_, name);
  int64_t recency = 0;
  {
    absl::MutexLock lock(&mu_);
    Pin(name);
    recency = NextRecency();
  }
  absl::Cleanup unpin = [&] {
    absl::MutexLock lock(&mu_);
    Unpin(name);
  };
  const Fd shard(OpenShard(dir_, name, /*create=*/true));
  if (!shard.ok()) {
    return PosixError(absl::StrCat("kernel cache: opening ", final_path.parent_path().string(),
                                   " (it must be a directory, not a symbolic link)"),
                      errno);
  }
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = absl::StrCat(name, ".tmp.", getpid(), ".", counter.fetch_add(1));
  const int fd = openat(shard.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return PosixError(absl::StrCat("kernel cache: creating ", tmp, " in ", dir_), errno);
  const std::string head = absl::StrCat(kEntryMagicText, EntryDigest(key, bytes), "\n");
  bool ok = true;
  for (std::string_view part : {std::string_view(head), bytes}) {
    while (ok && !part.empty()) {
      const ssize_t n = write(fd, part.data(), part.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ok = false;
      else part.remove_prefix(static_cast<size_t>(n));
    }
  }
  futimens(fd, Mtime(recency).times);
  ok = close(fd) == 0 && ok;
  if (!ok) {
    unlinkat(shard.get(), tmp.c_str(), 0);
    return absl::InternalError(absl::StrCat("kernel cache: cannot write ", tmp, " in ", dir_));
  }
  if (renameat(shard.get(), tmp.c_str(), shard.get(), name.c_str()) != 0) {
    unlinkat(shard.get(), tmp.c_str(), 0);
    return absl::InternalError(absl::StrCat("kernel cache: cannot rename into ", final_path.string()));
  }
  absl::MutexLock lock(&mu_);
  Upsert(name, size, recency);
  entries_[name].file_touched = recency;
  Evict();  // still pinned: the new entry stays
  return absl::OkStatus();
}

void DiskCache::Touch(const std::string& key, std::string_view ext) {
  if (dir_.empty()) return;
  const std::string name = key + std::string(ext);
  int64_t set_file = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return;
    const int64_t recency = NextRecency();
    SetRecency(it->second, name, recency);
    if (recency - it->second.file_touched >= absl::ToInt64Nanoseconds(options_.touch_interval)) {
      it->second.file_touched = recency;
      set_file = recency;
    }
  }
  if (set_file == 0) return;
  const Fd shard(OpenShard(dir_, name, /*create=*/false));
  if (shard.ok()) utimensat(shard.get(), name.c_str(), Mtime(set_file).times, AT_SYMLINK_NOFOLLOW);
}

absl::StatusOr<uint64_t> DiskCache::Clear() {
  if (dir_.empty()) return 0;
  std::error_code ec;
  if (!fs::exists(dir_, ec)) return 0;
  uint64_t removed = 0;
  bool truncated = false;
  int error = 0;
  const bool read = ForEachShardFile(dir_, UINT64_MAX, &truncated, &error,
                                     [&](int shard_fd, std::string_view, std::string_view name, const struct stat&) {
    const bool entry = IsEntryFileName(name);
    if (!entry && !IsTempFileName(name)) return;  // not ours: left alone
    if (unlinkat(shard_fd, std::string(name).c_str(), 0) == 0 && entry) ++removed;
  });
  {
    absl::MutexLock lock(&mu_);
    entries_.clear();
    by_recency_.clear();
    bytes_ = 0;
  }
  if (!read) return PosixError(absl::StrCat("clearing kernel cache '", dir_, "'"), error);
  return removed;
}

void DiskCache::Rescan() {
  if (dir_.empty()) return;
  int64_t started = 0;
  {
    absl::MutexLock lock(&mu_);
    if (scanning_) return;
    scanning_ = true;
    last_scan_ = absl::Now();
    started = NowNanos();
  }
  // The walk runs unlocked: reads and writes go on meanwhile.
  std::map<std::string, Entry> found;
  uint64_t temps_removed = 0;
  bool truncated = false;
  int error = 0;
  const uid_t uid = geteuid();
  const bool read = ForEachShardFile(
      dir_, options_.max_scan_files, &truncated, &error,
      [&](int shard_fd, std::string_view shard, std::string_view name, const struct stat& st) {
        if (st.st_uid != uid) return;  // never trusted, never ours to count or delete
        if (IsEntryFileName(name)) {
          if (name.substr(0, 2) != shard) return;  // misplaced: never read, not counted
          found[std::string(name)] = Entry{static_cast<uint64_t>(st.st_size), Nanos(st.st_mtim), 0};
        } else if (IsTempFileName(name) &&
                   started - Nanos(st.st_mtim) > absl::ToInt64Nanoseconds(options_.temp_max_age)) {
          if (unlinkat(shard_fd, std::string(name).c_str(), 0) == 0) ++temps_removed;
        }
      });
  if (!read) spdlog::warn("kernel cache: cannot read {}: {}", dir_, std::strerror(error));
  if (truncated) {
    spdlog::warn("kernel cache: {} holds more than {} files; only those were counted", dir_,
                 options_.max_scan_files);
  }
  if (temps_removed > 0) {
    spdlog::info("kernel cache: removed {} temporary file(s) of interrupted writes", temps_removed);
  }
  absl::MutexLock lock(&mu_);
  scanning_ = false;
  // What this cache wrote or used while the walk ran is newer than what the
  // walk saw (or missing from it): keep that.
  for (auto& [name, entry] : entries_) {
    auto it = found.find(name);
    if (it != found.end()) {
      it->second.recency = std::max(it->second.recency, entry.recency);
      it->second.file_touched = entry.file_touched;
    } else if (entry.recency >= started || pins_.contains(name)) {
      found.emplace(name, entry);
    }
  }
  entries_ = std::move(found);
  by_recency_.clear();
  bytes_ = 0;
  for (const auto& [name, entry] : entries_) {
    by_recency_.emplace(entry.recency, name);
    bytes_ += entry.bytes;
  }
  Evict();
}

DiskCache::Stats DiskCache::stats() const {
  absl::MutexLock lock(&mu_);
  return Stats{bytes_, entries_.size(), evictions_, options_.max_bytes};
}

int64_t DiskCache::NextRecency() {
  last_recency_ = std::max(NowNanos(), last_recency_ + 1);
  return last_recency_;
}

void DiskCache::SetRecency(Entry& entry, const std::string& name, int64_t recency) {
  by_recency_.erase({entry.recency, name});
  entry.recency = recency;
  by_recency_.emplace(recency, name);
}

void DiskCache::Upsert(const std::string& name, uint64_t bytes, int64_t recency) {
  auto [it, fresh] = entries_.try_emplace(name);
  Entry& entry = it->second;
  if (!fresh) {
    bytes_ -= entry.bytes;
    by_recency_.erase({entry.recency, name});
  }
  entry.bytes = bytes;
  entry.recency = recency;
  bytes_ += bytes;
  by_recency_.emplace(recency, name);
}

void DiskCache::Forget(const std::string& name) {
  auto it = entries_.find(name);
  if (it == entries_.end()) return;
  bytes_ -= it->second.bytes;
  by_recency_.erase({it->second.recency, name});
  entries_.erase(it);
}

void DiskCache::Evict() {
  if (options_.max_bytes == 0) return;
  auto it = by_recency_.begin();
  while (bytes_ > options_.max_bytes && it != by_recency_.end()) {
    const std::string name = it->second;
    ++it;  // Forget erases only name's element
    if (pins_.contains(name)) continue;
    const Fd shard(OpenShard(dir_, name, /*create=*/false));
    if (shard.ok() && unlinkat(shard.get(), name.c_str(), 0) == 0) {
      ++evictions_;
    } else if (errno != ENOENT) {  // ENOENT: another daemon removed it first
      spdlog::warn("kernel cache: cannot remove {}: {}", PathOf(dir_, name).string(), std::strerror(errno));
    }
    Forget(name);
  }
}

void DiskCache::Pin(const std::string& name) { ++pins_[name]; }

void DiskCache::Unpin(const std::string& name) {
  auto it = pins_.find(name);
  if (it != pins_.end() && --it->second == 0) pins_.erase(it);
}

}  // namespace warpd::compiler

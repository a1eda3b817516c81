#include "compiler/cache/module_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SHA256.h>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/posix_error.h"
#include "spdlog/spdlog.h"

namespace warpd::compiler {
namespace fs = std::filesystem;

std::string CacheKey(const std::vector<std::string_view>& parts) {
  llvm::SHA256 sha;
  for (std::string_view p : parts) {
    uint64_t n = p.size();
    sha.update(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(&n), sizeof n));
    sha.update(llvm::StringRef(p.data(), p.size()));
  }
  auto digest = sha.final();
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : digest) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

namespace {

// An entry file: this header line, then the entry's digest (64 hex digits
// and a newline), then the bytes. The digest covers the key and the bytes,
// so a truncated, edited or swapped-in file (another key's valid entry) does
// not verify.
constexpr char kEntryMagicText[] = "warpd-cache-entry-1\n";
constexpr std::string_view kEntryMagic = kEntryMagicText;
constexpr uint64_t kMaxEntryBytes = uint64_t{1} << 30;

fs::path EntryPath(const std::string& dir, const std::string& key, std::string_view ext) {
  return fs::path(dir) / key.substr(0, 2) / (key + std::string(ext));
}

std::string EntryDigest(const std::string& key, std::string_view bytes) {
  return CacheKey({"warpd-cache-entry", key, bytes});
}

bool IsEntryName(const std::string& name) {
  // <64 hex digits>.<ext>
  if (name.size() < 66 || name[64] != '.') return false;
  for (int i = 0; i < 64; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

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

void Discard(const fs::path& path, const std::string& why) {
  spdlog::warn("kernel cache: ignoring {}: {}; it will be compiled again", path.string(), why);
  std::error_code ec;
  fs::remove(path, ec);
}

}  // namespace

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

std::optional<std::string> DiskCache::Read(const std::string& dir, const std::string& key, std::string_view ext) {
  if (dir.empty()) return std::nullopt;
  const fs::path path = EntryPath(dir, key, ext);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ELOOP) Discard(path, "it is a symbolic link");
    return std::nullopt;
  }
  absl::Cleanup close_fd = [fd] { close(fd); };
  struct stat st;
  if (fstat(fd, &st) != 0) return std::nullopt;
  if (!S_ISREG(st.st_mode)) return std::nullopt;
  if (std::string why = Untrusted(st, "entry", path.string()); !why.empty()) {
    Discard(path, why);
    return std::nullopt;
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxEntryBytes) {
    Discard(path, "it is too large");
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
  const size_t header = kEntryMagic.size() + 65;
  if (data.size() < header || std::string_view(data).substr(0, kEntryMagic.size()) != kEntryMagic ||
      data[header - 1] != '\n') {
    Discard(path, "it is not a warpd cache entry");
    return std::nullopt;
  }
  const std::string digest = data.substr(kEntryMagic.size(), 64);
  std::string bytes = data.substr(header);
  if (digest != EntryDigest(key, bytes)) {
    Discard(path, "its digest does not match (truncated, modified, or another entry's file)");
    return std::nullopt;
  }
  return bytes;
}

absl::Status DiskCache::Write(const std::string& dir, const std::string& key, std::string_view ext,
                              std::string_view bytes) {
  if (dir.empty()) return absl::OkStatus();
  fs::path final_path = EntryPath(dir, key, ext);
  mkdir(final_path.parent_path().c_str(), 0700);  // EEXIST is fine
  static std::atomic<uint64_t> counter{0};
  fs::path tmp = final_path;
  tmp += absl::StrCat(".tmp.", getpid(), ".", counter.fetch_add(1));
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return PosixError(absl::StrCat("kernel cache: creating ", tmp.string()), errno);
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
  ok = close(fd) == 0 && ok;
  std::error_code ec;
  if (!ok) {
    fs::remove(tmp, ec);
    return absl::InternalError(absl::StrCat("kernel cache: cannot write ", tmp.string()));
  }
  fs::rename(tmp, final_path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return absl::InternalError(absl::StrCat("kernel cache: cannot rename into ", final_path.string()));
  }
  return absl::OkStatus();
}
absl::StatusOr<uint64_t> DiskCache::Clear(const std::string& dir) {
  if (dir.empty()) return 0;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return 0;
  uint64_t removed = 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec) && IsEntryName(it->path().filename().string())) {
      std::error_code rm;
      if (fs::remove(it->path(), rm)) ++removed;
    }
  }
  if (ec) return absl::InternalError(absl::StrCat("clearing kernel cache '", dir, "': ", ec.message()));
  return removed;
}

}  // namespace warpd::compiler

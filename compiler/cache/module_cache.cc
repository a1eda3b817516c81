#include "compiler/cache/module_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SHA256.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

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

fs::path EntryPath(const std::string& dir, const std::string& key, std::string_view ext) {
  return fs::path(dir) / key.substr(0, 2) / (key + std::string(ext));
}

bool IsEntryName(const std::string& name) {
  // <64 hex digits>.<ext>
  if (name.size() < 66 || name[64] != '.') return false;
  for (int i = 0; i < 64; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

}  // namespace

absl::Status DiskCache::EnsureDir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("cannot create kernel cache directory '", dir, "': ", ec.message()));
  if (access(dir.c_str(), W_OK) != 0)
    return absl::PermissionDeniedError(absl::StrCat("kernel cache directory '", dir, "' is not writable"));
  return absl::OkStatus();
}

std::optional<std::string> DiskCache::Read(const std::string& dir, const std::string& key, std::string_view ext) {
  if (dir.empty()) return std::nullopt;
  std::ifstream in(EntryPath(dir, key, ext), std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return std::nullopt;
  return bytes;
}

absl::Status DiskCache::Write(const std::string& dir, const std::string& key, std::string_view ext,
                              std::string_view bytes) {
  if (dir.empty()) return absl::OkStatus();
  fs::path final_path = EntryPath(dir, key, ext);
  std::error_code ec;
  fs::create_directories(final_path.parent_path(), ec);
  if (ec) return absl::InternalError(absl::StrCat("kernel cache: ", ec.message()));
  static std::atomic<uint64_t> counter{0};
  fs::path tmp = final_path;
  tmp += absl::StrCat(".tmp.", getpid(), ".", counter.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return absl::InternalError(absl::StrCat("kernel cache: cannot write ", tmp.string()));
    }
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

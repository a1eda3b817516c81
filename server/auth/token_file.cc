#include "server/auth/token_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/posix_error.h"
#include "runtime/objects/secure_random.h"

namespace warpd::server {

namespace {

// OK when nothing is at `path`, or a regular file of ours is.
absl::Status CheckReplaceable(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return PosixError(absl::StrCat("stat ", path), errno);
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "token file ", path, " exists and is not a regular file of this user; not replacing it"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteTokenFile(const std::string& path, const std::string& token) {
  if (absl::Status s = CheckReplaceable(path); !s.ok()) return s;
  absl::StatusOr<std::string> suffix = runtime::SecureRandomHex(8);
  if (!suffix.ok()) return suffix.status();
  const std::string tmp = absl::StrCat(path, ".", *suffix, ".tmp");
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return PosixError(absl::StrCat("creating ", tmp), errno);
  const std::string text = token + "\n";
  const bool ok = fchmod(fd, 0600) == 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int err = errno;
  close(fd);
  if (!ok) {
    unlink(tmp.c_str());
    return PosixError(absl::StrCat("writing ", tmp), err);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    unlink(tmp.c_str());
    return PosixError(absl::StrCat("renaming the token file to ", path), e);
  }
  return absl::OkStatus();
}

void RemoveTokenFile(const std::string& path, const std::string& token) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  char buf[256];
  const ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  // Another daemon may have replaced it since: leave theirs alone.
  if (n > 0 && std::string(buf, static_cast<size_t>(n)) == token + "\n") unlink(path.c_str());
}

}  // namespace warpd::server

#include "server/listen.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/posix_error.h"
#include "common/status_macros.h"

namespace warpd::server {

absl::Status SetSocketAccess(const std::string& path, mode_t mode, gid_t group) {
  if (group != static_cast<gid_t>(-1) && chown(path.c_str(), static_cast<uid_t>(-1), group) != 0) {
    return PosixError(absl::StrCat("setting the group of ", path), errno);
  }
  if (chmod(path.c_str(), mode) != 0) return PosixError(absl::StrCat("chmod ", path), errno);
  return absl::OkStatus();
}

absl::StatusOr<int> ListenUnixSocket(const std::string& path, mode_t mode, gid_t group) {
  WARPD_RETURN_IF_ERROR(PrepareUnixSocket(path));
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return PosixError("socket(AF_UNIX)", errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // Nobody may connect before the mode is set: bind under a umask that
  // leaves only the owner, then widen to `mode` if asked.
  const mode_t old_umask = umask(0177);
  const int bound = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const int bind_errno = errno;
  umask(old_umask);
  if (bound != 0) {
    close(fd);
    return PosixError(absl::StrCat("bind ", path), bind_errno);
  }
  if (absl::Status s = SetSocketAccess(path, mode, group); !s.ok()) {
    close(fd);
    unlink(path.c_str());
    return s;
  }
  if (listen(fd, 64) != 0) {
    const int err = errno;
    close(fd);
    unlink(path.c_str());
    return PosixError(absl::StrCat("listen ", path), err);
  }
  return fd;
}

std::string UnixSocketPath(const std::string& address) {
  if (!absl::StartsWith(address, "unix:")) return "";
  std::string path = address.substr(5);
  // gRPC also accepts unix:///abs/path.
  if (absl::StartsWith(path, "//")) path = path.substr(2);
  return path;
}

absl::Status PrepareUnixSocket(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("unix socket path '", path, "' is longer than ",
                                                   sizeof(addr.sun_path) - 1, " bytes"));
  }
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return warpd::PosixError(absl::StrCat("stat ", path), errno);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", path, "' exists and is not a socket; not replacing it"));
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return warpd::PosixError("socket(AF_UNIX)", errno);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const bool live = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  if (live) {
    return absl::AlreadyExistsError(
        absl::StrCat("another process is already serving on unix:", path));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return warpd::PosixError(absl::StrCat("removing stale socket ", path), errno);
  }
  return absl::OkStatus();
}

void RemoveUnixSocket(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path.c_str());
}

absl::StatusOr<std::unique_ptr<UnixListener>> UnixListener::Open(const std::string& path, mode_t mode,
                                                                 gid_t group) {
  WARPD_ASSIGN_OR_RETURN(const int fd, ListenUnixSocket(path, mode, group));
  const int stop = eventfd(0, EFD_CLOEXEC);
  if (stop < 0) {
    const int err = errno;
    close(fd);
    RemoveUnixSocket(path);
    return PosixError("eventfd", err);
  }
  return std::unique_ptr<UnixListener>(new UnixListener(path, fd, stop));
}

UnixListener::~UnixListener() {
  close(fd_);
  close(stop_fd_);
  RemoveUnixSocket(path_);
}

void UnixListener::RequestStop() {
  const uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof(one));
}

int UnixListener::Accept(ucred* peer) {
  const int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (conn < 0) {
    if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) usleep(10000);
    return -1;
  }
  socklen_t len = sizeof(*peer);
  if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, peer, &len) != 0 || len != sizeof(*peer)) {
    close(conn);
    return -1;
  }
  return conn;
}

}  // namespace warpd::server

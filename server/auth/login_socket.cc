#include "server/auth/login_socket.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/posix_error.h"
#include "common/status_macros.h"
#include "server/listen.h"
#include "spdlog/spdlog.h"

namespace warpd::server {

absl::StatusOr<std::unique_ptr<LoginSocket>> LoginSocket::Start(const std::string& path, mode_t mode, gid_t group,
                                                                 Answer answer) {
  WARPD_ASSIGN_OR_RETURN(const int fd, ListenUnixSocket(path, mode, group));
  const int stop = eventfd(0, EFD_CLOEXEC);
  if (stop < 0) {
    const int err = errno;
    close(fd);
    unlink(path.c_str());
    return PosixError("eventfd", err);
  }
  return std::unique_ptr<LoginSocket>(new LoginSocket(path, fd, stop, std::move(answer)));
}

LoginSocket::LoginSocket(std::string path, int listen_fd, int stop_fd, Answer answer)
    : path_(std::move(path)), listen_fd_(listen_fd), stop_fd_(stop_fd), answer_(std::move(answer)) {
  thread_ = std::thread([this] { Serve(); });
}

LoginSocket::~LoginSocket() {
  const uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof(one));
  thread_.join();
  close(listen_fd_);
  close(stop_fd_);
  RemoveUnixSocket(path_);
}

void LoginSocket::Serve() {
  pthread_setname_np(pthread_self(), "warpd-login");
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("login socket: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    const int conn = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (conn < 0) {
      // EMFILE and friends: back off a little rather than spin.
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) usleep(10000);
      continue;
    }
    ucred cred{};
    socklen_t len = sizeof(cred);
    std::string line;
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred)) {
      line = "error cannot read the peer's credentials\n";
    } else {
      absl::StatusOr<std::string> token = answer_(cred.uid);
      line = token.ok() ? absl::StrCat("token ", *token, "\n")
                        : absl::StrCat("error ", token.status().message(), "\n");
      spdlog::debug("login socket: uid {} pid {}: {}", cred.uid, cred.pid,
                    token.ok() ? "token given" : std::string(token.status().message()));
    }
    // A fresh socket's buffer holds far more than one line.
    (void)!send(conn, line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    close(conn);
  }
}

}  // namespace warpd::server

#include "server/auth/login_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/log_text.h"
#include "common/posix_error.h"
#include "common/status_macros.h"
#include "server/listen.h"
#include "server/logging.h"
#include "spdlog/spdlog.h"

namespace warpd::server {

absl::StatusOr<std::unique_ptr<LoginSocket>> LoginSocket::Start(const std::string& path, mode_t mode, gid_t group,
                                                                 Answer answer) {
  WARPD_ASSIGN_OR_RETURN(std::unique_ptr<UnixListener> listener, UnixListener::Open(path, mode, group));
  return std::unique_ptr<LoginSocket>(new LoginSocket(std::move(listener), std::move(answer)));
}

LoginSocket::LoginSocket(std::unique_ptr<UnixListener> listener, Answer answer)
    : listener_(std::move(listener)), answer_(std::move(answer)) {
  thread_ = std::thread([this] { Serve(); });
}

LoginSocket::~LoginSocket() {
  listener_->RequestStop();
  thread_.join();
}

void LoginSocket::Serve() {
  pthread_setname_np(pthread_self(), "warpd-login");
  for (;;) {
    pollfd fds[2] = {{listener_->fd(), POLLIN, 0}, {listener_->stop_fd(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("login socket: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    ucred cred{};
    const int conn = listener_->Accept(&cred);
    if (conn < 0) continue;
    absl::StatusOr<std::string> token = answer_(cred.uid);
    const std::string line = token.ok() ? absl::StrCat("token ", *token, "\n")
                                        : absl::StrCat("error ", token.status().message(), "\n");
    LogLimited(spdlog::level::debug, absl::StrCat("uid ", cred.uid), "logins", "login socket: uid {} pid {}: {}",
               cred.uid, cred.pid, token.ok() ? "token given" : LogText(token.status().message()));
    // A fresh socket's buffer holds far more than one line.
    (void)!send(conn, line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    close(conn);
  }
}

}  // namespace warpd::server

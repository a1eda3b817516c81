#include "server/local/share_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/log_text.h"
#include "common/posix_error.h"
#include "common/status_macros.h"
#include "server/listen.h"
#include "server/local/connection_slots.h"
#include "server/logging.h"
#include "spdlog/spdlog.h"

namespace warpd::server {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string ErrorLine(const absl::Status& s) {
  return absl::StrCat("error ", absl::StatusCodeToString(s.code()), " ",
                      absl::StrReplaceAll(s.message(), {{"\n", " "}, {"\r", " "}}), "\n");
}

// One line, with the region's fd attached when there is one. Non-blocking:
// a fresh socket's buffer holds far more than one line.
void Reply(int conn, const std::string& line, int fd) {
  iovec iov{const_cast<char*>(line.data()), line.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  (void)!sendmsg(conn, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
}

struct Waiting {
  int fd;
  uid_t uid;
  int64_t deadline_ms;
  std::string line;
  ConnectionSlots::Slot slot;  // pending: a request is answered the moment it is read
};

}  // namespace

SharedRegion ShareSocket::Parse(std::string_view line, const Answer& answer, std::string* reply) {
  std::vector<absl::string_view> parts = absl::StrSplit(absl::string_view(line.data(), line.size()), ' ');
  uint64_t handle = 0;
  if (parts.size() != 3 || parts[0].empty() || parts[1].empty() || !absl::SimpleAtoi(parts[2], &handle)) {
    *reply = ErrorLine(absl::InvalidArgumentError(
        "a share request is one line: '<bearer token> <session token> <array handle>'"));
    return {};
  }
  absl::StatusOr<SharedRegion> region = answer(std::string_view(parts[0].data(), parts[0].size()),
                                               std::string_view(parts[1].data(), parts[1].size()), handle);
  if (!region.ok()) {
    *reply = ErrorLine(region.status());
    return {};
  }
  *reply = absl::StrCat("ok ", region->offset, " ", region->size, " ", region->segment);
  if (!region->cuda_uuid.empty()) {
    absl::StrAppend(reply, " cuda ", region->cuda_uuid, " ", absl::BytesToHexString(region->cuda_export));
  }
  reply->push_back('\n');
  return *std::move(region);
}

absl::StatusOr<std::unique_ptr<ShareSocket>> ShareSocket::Start(const std::string& path, mode_t mode, gid_t group,
                                                                Answer answer) {
  WARPD_ASSIGN_OR_RETURN(std::unique_ptr<UnixListener> listener, UnixListener::Open(path, mode, group));
  return std::unique_ptr<ShareSocket>(new ShareSocket(std::move(listener), std::move(answer)));
}

ShareSocket::ShareSocket(std::unique_ptr<UnixListener> listener, Answer answer)
    : listener_(std::move(listener)), answer_(std::move(answer)) {
  thread_ = std::thread([this] { Serve(); });
}

ShareSocket::~ShareSocket() {
  listener_->RequestStop();
  thread_.join();
}

void ShareSocket::Serve() {
  pthread_setname_np(pthread_self(), "warpd-share");
  // A request is answered when its line is read, so slots never move to a
  // tenant: only the total and per-uid bounds apply.
  ConnectionSlots slots("share requests waiting", "; try again or use the gRPC transfers",
                        {.total = kMaxWaiting,
                         .pending_per_uid = kMaxWaitingPerUid,
                         .per_tenant = kMaxWaiting,
                         .per_tenant_uid = kMaxWaiting});
  std::vector<Waiting> waiting;
  std::vector<pollfd> fds;
  auto drop = [&](size_t i) {
    close(waiting[i].fd);
    waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
  };
  for (;;) {
    fds.assign({{listener_->fd(), POLLIN, 0}, {listener_->stop_fd(), POLLIN, 0}});
    int64_t next_deadline = -1;
    for (const Waiting& w : waiting) {
      fds.push_back({w.fd, POLLIN, 0});
      if (next_deadline < 0 || w.deadline_ms < next_deadline) next_deadline = w.deadline_ms;
    }
    const int timeout = next_deadline < 0 ? -1 : static_cast<int>(std::max<int64_t>(0, next_deadline - NowMs()));
    if (poll(fds.data(), fds.size(), timeout) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("share socket: poll: {}", std::strerror(errno));
      break;
    }
    if (fds[1].revents != 0) break;
    // Requests first (fds[2 + i] is waiting[i]), from the back so erasing
    // keeps the indices in front valid.
    const int64_t now = NowMs();
    for (size_t i = waiting.size(); i-- > 0;) {
      Waiting& w = waiting[i];
      if (fds[2 + i].revents == 0) {
        if (now >= w.deadline_ms) {
          Reply(w.fd, ErrorLine(absl::DeadlineExceededError("no share request within 2 s")), -1);
          drop(i);
        }
        continue;
      }
      char buf[kMaxLine + 1];
      const ssize_t n = recv(w.fd, buf, kMaxLine + 1 - w.line.size(), MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) {
        drop(i);
        continue;
      }
      w.line.append(buf, static_cast<size_t>(n));
      const size_t end = w.line.find('\n');
      if (end == std::string::npos && w.line.size() <= kMaxLine) continue;
      std::string reply;
      SharedRegion region;
      if (end == std::string::npos) {
        reply = ErrorLine(absl::InvalidArgumentError(absl::StrCat("a share request is at most ", kMaxLine, " bytes")));
      } else {
        region = Parse(std::string_view(w.line).substr(0, end), answer_, &reply);
      }
      Reply(w.fd, reply, region.fd);
      LogLimited(spdlog::level::debug, absl::StrCat("uid ", w.uid), "share requests", "share socket: uid {}: {}", w.uid,
                 LogText(absl::string_view(reply).substr(0, reply.size() - 1)));
      drop(i);
    }
    if (fds[0].revents == 0) continue;
    for (;;) {
      ucred cred{};
      const int conn = listener_->Accept(&cred);
      if (conn < 0) break;
      absl::StatusOr<ConnectionSlots::Slot> slot = slots.Admit(cred.uid);
      if (!slot.ok()) {
        Reply(conn, ErrorLine(slot.status()), -1);
        close(conn);
        continue;
      }
      waiting.push_back({conn, cred.uid, NowMs() + kDeadlineMs, {}, *std::move(slot)});
    }
  }
  for (const Waiting& w : waiting) close(w.fd);
  waiting.clear();  // releases the slots before `slots` goes
}

}  // namespace warpd::server

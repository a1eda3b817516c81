#include "server/local/command_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/cpu_relax.h"
#include "common/log_text.h"
#include "common/status_macros.h"
#include "server/logging.h"
#include "spdlog/spdlog.h"

namespace warpd::server {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

enum class Read { kOk, kClosed, kTimeout, kError };

// Connection threads spinning for their next frame now, and how many may
// (half the cores): a client in a launch + synchronize loop sends its next
// frame within microseconds, and a thread that polls for it meanwhile is
// not put to sleep and woken again (tens of microseconds on a virtual
// machine). Spinning is bounded in time and in threads, and idle
// connections never spin.
std::atomic<int> spinning{0};
int MaxSpinning() {
  static const int n = std::max(1u, std::thread::hardware_concurrency() / 2);
  return n;
}

// Reads exactly `n` bytes from the non-blocking `fd`, waiting in poll;
// `deadline_ms` < 0: no deadline. With `spin_ns` > 0, first polls with
// recv for up to that long (when a spinning slot is free).
Read ReadFull(int fd, char* p, size_t n, int64_t deadline_ms, int64_t spin_ns = 0) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = recv(fd, p + got, n - got, MSG_DONTWAIT);
    if (r > 0) {
      got += static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return Read::kClosed;
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return Read::kError;
    if (spin_ns > 0) {
      const int64_t budget = spin_ns;
      spin_ns = 0;
      if (spinning.fetch_add(1, std::memory_order_relaxed) < MaxSpinning()) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(budget);
        ssize_t r2 = -1;
        do {
          for (int i = 0; i < 32; ++i) CpuRelax();
          r2 = recv(fd, p + got, n - got, MSG_DONTWAIT);
        } while (r2 < 0 && errno == EAGAIN && std::chrono::steady_clock::now() < end);
        spinning.fetch_sub(1, std::memory_order_relaxed);
        if (r2 > 0) {
          got += static_cast<size_t>(r2);
          continue;
        }
        if (r2 == 0) return Read::kClosed;
        if (errno != EAGAIN && errno != EINTR) return Read::kError;
      } else {
        spinning.fetch_sub(1, std::memory_order_relaxed);
      }
    }
    int timeout = -1;
    if (deadline_ms >= 0) {
      timeout = static_cast<int>(std::max<int64_t>(0, deadline_ms - NowMs()));
      if (timeout == 0) return Read::kTimeout;
    }
    pollfd pfd{fd, POLLIN, 0};
    const int pr = poll(&pfd, 1, timeout);
    if (pr == 0) return Read::kTimeout;
    if (pr < 0 && errno != EINTR) return Read::kError;
  }
  return Read::kOk;
}

// Sends header and body in one go where the socket takes them; a peer that
// does not read stalls only its own connection's thread (Stop hangs it up).
bool SendFrame(int fd, uint8_t kind, std::string_view body) {
  char header[CommandSocket::kHeaderBytes] = {};
  const uint32_t n = static_cast<uint32_t>(body.size());
  for (int i = 0; i < 4; ++i) header[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  header[4] = static_cast<char>(kind);
  iovec iov[2] = {{header, sizeof(header)}, {const_cast<char*>(body.data()), body.size()}};
  int count = body.empty() ? 1 : 2;
  iovec* next = iov;
  while (count > 0) {
    msghdr msg{};
    msg.msg_iov = next;
    msg.msg_iovlen = static_cast<size_t>(count);
    const ssize_t sent = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return false;
      pollfd pfd{fd, POLLOUT, 0};
      if (poll(&pfd, 1, -1) < 0 && errno != EINTR) return false;
      if ((pfd.revents & (POLLERR | POLLHUP)) != 0) return false;
      continue;
    }
    size_t left = static_cast<size_t>(sent);
    while (count > 0 && left >= next->iov_len) {
      left -= next->iov_len;
      ++next;
      --count;
    }
    if (count > 0) {
      next->iov_base = static_cast<char*>(next->iov_base) + left;
      next->iov_len -= left;
    }
  }
  return true;
}

bool SendError(int fd, const absl::Status& s) {
  return SendFrame(fd, static_cast<uint8_t>(s.code()), std::string_view(s.message().data(), s.message().size()));
}

// One frame: its kind and body. A malformed header is INVALID_ARGUMENT;
// `closed` is set when the peer hung up cleanly between frames.
absl::Status ReadFrame(int fd, int64_t deadline_ms, uint8_t* kind, std::string* body, bool* closed,
                       int64_t spin_ns = 0) {
  *closed = false;
  unsigned char header[CommandSocket::kHeaderBytes];
  switch (ReadFull(fd, reinterpret_cast<char*>(header), sizeof(header), deadline_ms, spin_ns)) {
    case Read::kOk:
      break;
    case Read::kClosed:
      *closed = true;
      return absl::CancelledError("the client hung up");
    case Read::kTimeout:
      return absl::DeadlineExceededError("no HELLO frame within 2 s");
    case Read::kError:
      return absl::UnavailableError("connection error");
  }
  const uint32_t n = uint32_t{header[0]} | uint32_t{header[1]} << 8 | uint32_t{header[2]} << 16 |
                     uint32_t{header[3]} << 24;
  *kind = header[4];
  if (header[5] != 0 || header[6] != 0 || header[7] != 0) {
    return absl::InvalidArgumentError("malformed frame header (padding bytes must be zero)");
  }
  if (n > CommandSocket::kMaxFrame) {
    return absl::InvalidArgumentError(
        absl::StrCat("a frame body is at most ", CommandSocket::kMaxFrame, " bytes, this one says ", n));
  }
  body->resize(n);
  switch (ReadFull(fd, body->data(), n, deadline_ms)) {
    case Read::kOk:
      return absl::OkStatus();
    case Read::kTimeout:
      return absl::DeadlineExceededError("no HELLO frame within 2 s");
    default:
      return absl::UnavailableError(absl::StrCat("the connection ended inside a frame of ", n, " bytes"));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<CommandSocket>> CommandSocket::Start(const std::string& path, mode_t mode,
                                                                    gid_t group, Open open, absl::Duration spin) {
  WARPD_ASSIGN_OR_RETURN(std::unique_ptr<UnixListener> listener, UnixListener::Open(path, mode, group));
  return std::unique_ptr<CommandSocket>(new CommandSocket(std::move(listener), std::move(open), spin));
}

CommandSocket::CommandSocket(std::unique_ptr<UnixListener> listener, Open open, absl::Duration spin)
    : listener_(std::move(listener)),
      open_(std::move(open)),
      spin_ns_(std::max<int64_t>(0, absl::ToInt64Nanoseconds(spin))),
      slots_("command connections", "; use gRPC",
             {.total = kMaxConnections,
              .pending_per_uid = kMaxPendingPerUid,
              .per_tenant = kMaxConnectionsPerTenant,
              .per_tenant_uid = kMaxConnectionsPerTenantUid}) {
  accept_thread_ = std::thread([this] { Accept(); });
}

CommandSocket::~CommandSocket() {
  Stop();
  std::list<std::unique_ptr<Connection>> connections;
  {
    absl::MutexLock lock(&mu_);
    // Requests still in flight lose their replies (a peer that never reads
    // may hold its thread in a send).
    for (auto& c : connections_) shutdown(c->fd, SHUT_RDWR);
    connections.swap(connections_);
  }
  for (auto& c : connections) {
    c->thread.join();
    close(c->fd);
  }
}

void CommandSocket::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  listener_->RequestStop();
  accept_thread_.join();
  absl::MutexLock lock(&mu_);
  for (auto& c : connections_) {
    if (!busy_.contains(c.get())) shutdown(c->fd, SHUT_RDWR);
  }
}

bool CommandSocket::AwaitRequests(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithDeadline(absl::Condition(this, &CommandSocket::NoRequestsLocked), deadline);
}

int CommandSocket::requests_in_flight() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(busy_.size());
}

bool CommandSocket::BeginRequest(Connection* c) {
  absl::MutexLock lock(&mu_);
  if (stopped_) return false;
  busy_.insert(c);
  return true;
}

bool CommandSocket::EndRequest(Connection* c) {
  absl::MutexLock lock(&mu_);
  busy_.erase(c);
  return !stopped_;
}

int CommandSocket::connections() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(std::count_if(connections_.begin(), connections_.end(),
                                        [](const auto& c) { return !c->done.load(); }));
}

void CommandSocket::ReapLocked() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (!(*it)->done.load(std::memory_order_acquire)) {
      ++it;
      continue;
    }
    (*it)->thread.join();
    close((*it)->fd);
    it = connections_.erase(it);
  }
}

void CommandSocket::Accept() {
  pthread_setname_np(pthread_self(), "warpd-cmd-accept");
  for (;;) {
    pollfd fds[2] = {{listener_->fd(), POLLIN, 0}, {listener_->stop_fd(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("command socket: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    ucred cred{};
    const int conn = listener_->Accept(&cred);
    if (conn < 0) continue;
    absl::MutexLock lock(&mu_);
    ReapLocked();
    absl::StatusOr<ConnectionSlots::Slot> slot = slots_.Admit(cred.uid);
    if (!slot.ok()) {
      (void)SendError(conn, slot.status());
      LogLimited(spdlog::level::debug, absl::StrCat("uid ", cred.uid), "refused command connections",
                 "command socket: uid {}: {}", cred.uid, LogStatus(slot.status()));
      close(conn);
      continue;
    }
    auto c = std::make_unique<Connection>();
    c->fd = conn;
    c->uid = cred.uid;
    c->slot = *std::move(slot);
    Connection* raw = c.get();
    connections_.push_back(std::move(c));
    raw->thread = std::thread([this, raw] { Serve(raw); });
  }
}

void CommandSocket::Serve(Connection* c) {
  pthread_setname_np(pthread_self(), "warpd-cmd");
  const int fd = c->fd;
  std::string body;
  uint8_t kind = 0;
  bool closed = false;
  std::unique_ptr<Handler> handler;
  absl::Status s = ReadFrame(fd, NowMs() + kHelloDeadlineMs, &kind, &body, &closed);
  if (s.ok() && kind != kHello) s = absl::InvalidArgumentError("the first frame must be HELLO");
  if (s.ok()) {
    absl::StatusOr<std::unique_ptr<Handler>> opened = open_(body);
    if (opened.ok()) {
      handler = *std::move(opened);
      // From now on the slot counts against the tenant, not the uid.
      s = c->slot.Authenticate(handler->tenant());
    } else {
      s = opened.status();
    }
  }
  if (!s.ok()) {
    if (!closed) (void)SendError(fd, s);
    LogLimited(spdlog::level::debug, absl::StrCat("uid ", c->uid), "command connection errors",
               "command socket: uid {}: {}", c->uid, LogStatus(s));
    Finish(c);
    return;
  }
  bool open = SendFrame(fd, 0, {});
  while (open) {
    s = ReadFrame(fd, -1, &kind, &body, &closed, spin_ns_);
    if (s.ok() && kind != kSubmit && kind != kSynchronize && kind != kDownload && kind != kCreateView) {
      s = absl::InvalidArgumentError(
          absl::StrCat("unknown frame kind ", kind, " (SUBMIT is 2, SYNCHRONIZE 3, DOWNLOAD 4, CREATE_VIEW 5)"));
    }
    if (!s.ok()) {
      if (!closed) (void)SendError(fd, s);
      if (!closed && !absl::IsUnavailable(s)) {
        LogLimited(spdlog::level::debug, absl::StrCat("uid ", c->uid), "command connection errors",
                   "command socket: uid {}: {}", c->uid, LogStatus(s));
      }
      break;
    }
    if (!BeginRequest(c)) {
      // Like a gRPC call that arrives once shutdown has begun.
      (void)SendError(fd, absl::UnavailableError("warpd is shutting down and takes no new requests"));
      break;
    }
    Reply reply = handler->Handle(static_cast<Kind>(kind), body);
    open = SendFrame(fd, static_cast<uint8_t>(reply.code), reply.body);
    // After Stop, the reply to the request in flight is the last one.
    if (!EndRequest(c)) open = false;
    // A large frame's buffer is not kept for the connection's lifetime.
    if (body.capacity() > (256u << 10)) std::string().swap(body);
  }
  handler.reset();
  Finish(c);
}

void CommandSocket::Finish(Connection* c) {
  // The peer sees the end now; the descriptor is closed once the thread is
  // joined, so its number is never reused while Stop may still use it.
  shutdown(c->fd, SHUT_RDWR);
  c->slot.Release();
  c->done.store(true, std::memory_order_release);
}

}  // namespace warpd::server

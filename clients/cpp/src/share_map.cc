#include "share_map.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "auth.h"

namespace warpd::internal {

Mapping::~Mapping() {
  if (base != nullptr) munmap(base, length);
}

std::optional<std::string> SharePath(const std::string& address) {
  auto path = UnixPath(address);
  if (!path) return std::nullopt;
  std::string share = *path + ".share";
  struct stat st;
  if (stat(share.c_str(), &st) != 0) return std::nullopt;
  return share;
}

absl::StatusOr<ShareReply> ParseShareReply(const std::string& line) {
  absl::string_view text = absl::StripSuffix(line, "\n");
  if (absl::ConsumePrefix(&text, "error ")) {
    return absl::FailedPreconditionError(absl::StrCat("the daemon does not share this array: ", text));
  }
  std::vector<absl::string_view> parts = absl::StrSplit(text, ' ', absl::SkipEmpty());
  ShareReply r;
  uint64_t segment = 0;
  if ((parts.size() != 3 && parts.size() != 4) || parts[0] != "ok" || !absl::SimpleAtoi(parts[1], &r.offset) ||
      !absl::SimpleAtoi(parts[2], &r.size) || (parts.size() == 4 && !absl::SimpleAtoi(parts[3], &segment))) {
    return absl::FailedPreconditionError(absl::StrCat("unexpected answer from the share socket: '", text, "'"));
  }
  return r;
}

absl::StatusOr<std::shared_ptr<Mapping>> MapArray(const std::string& share_path, const std::string& token,
                                                  const std::string& session, uint64_t handle, uint64_t nbytes) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (share_path.size() >= sizeof(addr.sun_path)) return absl::FailedPreconditionError("share socket path too long");
  std::memcpy(addr.sun_path, share_path.c_str(), share_path.size() + 1);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return absl::FailedPreconditionError(absl::StrCat("socket: ", std::strerror(errno)));
  timeval tv{5, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  int fd = -1;
  std::string line;
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    std::string request = absl::StrCat(token, " ", session, " ", handle, "\n");
    if (send(s, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
      while (line.size() < 1024 && (line.empty() || line.back() != '\n')) {
        char buf[1024];
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
        iovec iov{buf, sizeof(buf)};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof(control);
        ssize_t n = recvmsg(s, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0) break;
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
          if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
          size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
          for (size_t k = 0; k < count; ++k) {
            int got;
            std::memcpy(&got, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
            if (fd < 0) {
              fd = got;
            } else {
              close(got);
            }
          }
        }
        if (n == 0) break;
        line.append(buf, static_cast<size_t>(n));
      }
    }
  }
  close(s);
  auto reply = ParseShareReply(line);
  absl::Status st = reply.status();
  if (st.ok() && fd < 0) st = absl::FailedPreconditionError("the share socket sent no file descriptor");
  if (st.ok() && reply->size != nbytes) {
    st = absl::FailedPreconditionError(
        absl::StrCat("the share socket describes ", reply->size, " bytes, the array has ", nbytes));
  }
  if (!st.ok()) {
    if (fd >= 0) close(fd);
    return st;
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t start = reply->offset / page * page;
  const size_t length = static_cast<size_t>(reply->offset + reply->size - start);
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, static_cast<off_t>(start));
  int err = errno;
  close(fd);
  if (base == MAP_FAILED) return absl::FailedPreconditionError(absl::StrCat("mmap: ", std::strerror(err)));
  return std::make_shared<Mapping>(base, length, static_cast<size_t>(reply->offset - start),
                                   static_cast<size_t>(reply->size));
}

}  // namespace warpd::internal

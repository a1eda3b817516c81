#include "compiler/backend/compile_protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/posix_error.h"

namespace warpd::compiler {
namespace {

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

void PutString(std::string* out, std::string_view s) {
  PutU64(out, s.size());
  out->append(s);
}

// Reads the next length-prefixed string from `data` (advanced past it).
bool TakeString(std::string_view* data, std::string* out) {
  if (data->size() < 8) return false;
  const uint64_t n = GetU64(data->data());
  data->remove_prefix(8);
  if (n > data->size()) return false;
  out->assign(data->data(), n);
  data->remove_prefix(n);
  return true;
}

}  // namespace

std::string EncodeCompileRequest(const CompileRequest& r) {
  std::string out;
  PutString(&out, r.target.triple);
  PutString(&out, r.target.cpu);
  PutString(&out, absl::StrJoin(r.target.features, ","));
  PutString(&out, r.unit_name);
  PutString(&out, r.source);
  return out;
}

absl::StatusOr<CompileRequest> DecodeCompileRequest(std::string_view data) {
  CompileRequest r;
  std::string features;
  if (!TakeString(&data, &r.target.triple) || !TakeString(&data, &r.target.cpu) ||
      !TakeString(&data, &features) || !TakeString(&data, &r.unit_name) || !TakeString(&data, &r.source) ||
      !data.empty())
    return absl::InvalidArgumentError("malformed compile request");
  for (absl::string_view f : absl::StrSplit(features, ',', absl::SkipEmpty())) r.target.features.emplace_back(f);
  return r;
}

std::string EncodeCompileReply(const absl::StatusOr<std::string>& result, const std::vector<WorkerLog>& logs) {
  std::string out;
  PutU64(&out, static_cast<uint64_t>(result.status().code()));
  const absl::string_view message = result.status().message();
  PutString(&out, result.ok() ? std::string_view(*result) : std::string_view(message.data(), message.size()));
  const size_t n = std::min(logs.size(), kMaxWorkerLogs);
  PutU64(&out, n);
  for (size_t i = 0; i < n; ++i) {
    PutU64(&out, static_cast<uint64_t>(logs[i].level));
    PutString(&out, std::string_view(logs[i].text).substr(0, kMaxWorkerLogBytes));
  }
  return out;
}

absl::StatusOr<std::string> DecodeCompileReply(std::string_view data, std::vector<WorkerLog>* logs) {
  const absl::Status malformed = absl::InternalError("malformed compile reply");
  if (data.size() < 8) return malformed;
  const uint64_t code = GetU64(data.data());
  data.remove_prefix(8);
  std::string payload;
  if (!TakeString(&data, &payload) || code > 16 || data.size() < 8) return malformed;
  const uint64_t n = GetU64(data.data());
  data.remove_prefix(8);
  if (n > kMaxWorkerLogs) return malformed;
  for (uint64_t i = 0; i < n; ++i) {
    WorkerLog log;
    if (data.size() < 8) return malformed;
    log.level = static_cast<int>(std::min<uint64_t>(GetU64(data.data()), 6));
    data.remove_prefix(8);
    if (!TakeString(&data, &log.text) || log.text.size() > kMaxWorkerLogBytes) return malformed;
    if (logs != nullptr) logs->push_back(std::move(log));
  }
  if (!data.empty()) return malformed;
  if (code == 0) return payload;
  return absl::Status(static_cast<absl::StatusCode>(code), payload);
}

absl::Status WriteFrame(int fd, std::string_view payload) {
  std::string header;
  PutU64(&header, payload.size());
  for (std::string_view part : {std::string_view(header), payload}) {
    while (!part.empty()) {
      ssize_t n = send(fd, part.data(), part.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == ENOTSOCK) n = write(fd, part.data(), part.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EPIPE || errno == ECONNRESET) return absl::UnavailableError("compile worker closed");
        return PosixError("writing to a compile worker", errno);
      }
      part.remove_prefix(static_cast<size_t>(n));
    }
  }
  return absl::OkStatus();
}

namespace {

// Reads exactly `n` bytes into `out` before `deadline`.
absl::Status ReadExactly(int fd, char* out, uint64_t n, absl::Time deadline) {
  while (n > 0) {
    if (deadline != absl::InfiniteFuture()) {
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError("compile worker did not answer in time");
      pollfd p{fd, POLLIN, 0};
      const int ms = static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1 << 30));
      const int r = poll(&p, 1, ms);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return PosixError("poll on a compile worker", errno);
      if (r == 0) continue;  // re-check the deadline
    }
    const ssize_t got = read(fd, out, static_cast<size_t>(std::min<uint64_t>(n, 1 << 20)));
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == ECONNRESET) return absl::UnavailableError("compile worker closed");
      return PosixError("reading from a compile worker", errno);
    }
    if (got == 0) return absl::UnavailableError("compile worker closed");
    out += got;
    n -= static_cast<uint64_t>(got);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadFrame(int fd, uint64_t max_bytes, absl::Time deadline) {
  char header[8];
  if (absl::Status s = ReadExactly(fd, header, 8, deadline); !s.ok()) return s;
  const uint64_t n = GetU64(header);
  if (n > max_bytes) return absl::InvalidArgumentError(absl::StrCat("compile frame of ", n, " bytes is too large"));
  std::string out(n, '\0');
  if (absl::Status s = ReadExactly(fd, out.data(), n, deadline); !s.ok()) return s;
  return out;
}

}  // namespace warpd::compiler

// warpd compiler: the messages between the daemon and its compile workers.
//
// Over a stream socket, each message is one frame: an 8-byte little-endian
// length, then that many bytes. A request is five length-prefixed strings
// (triple, CPU, features joined by ',', unit name, source); a reply is a
// status code and either the object (OK) or the error message, then what the
// worker logged since its last reply (a count, then per message its spdlog
// level and text), for the daemon to log: a worker never writes to its
// stderr. Only the daemon and workers it started speak this; it is not a
// stable format.
//
// Frame I/O retries EINTR; ReadFrame is DEADLINE_EXCEEDED at `deadline`,
// UNAVAILABLE when the peer closed, INVALID_ARGUMENT for a frame over
// `max_bytes`. WriteFrame never raises SIGPIPE. Thread-compatible per fd.
#pragma once

#include <cstdint>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "compiler/backend/cpu_target.h"

namespace warpd::compiler {

struct CompileRequest {
  CpuTarget target;  // reason is not sent
  std::string unit_name;
  std::string source;
};

std::string EncodeCompileRequest(const CompileRequest& request);
absl::StatusOr<CompileRequest> DecodeCompileRequest(std::string_view data);

// A message a worker logged (compile_worker.h).
struct WorkerLog {
  int level = 0;  // spdlog::level::level_enum
  std::string text;
};

// At most this many messages travel with one reply, each cut to kMaxWorkerLogBytes.
constexpr size_t kMaxWorkerLogs = 16;
constexpr size_t kMaxWorkerLogBytes = 4096;

// The worker's answer: the object, or the compile's error status, and its
// log messages (past the limits above: dropped and cut).
std::string EncodeCompileReply(const absl::StatusOr<std::string>& result, const std::vector<WorkerLog>& logs = {});
// `logs` (may be null) receives the messages.
absl::StatusOr<std::string> DecodeCompileReply(std::string_view data, std::vector<WorkerLog>* logs = nullptr);

constexpr uint64_t kMaxCompileFrame = uint64_t{1} << 30;

absl::Status WriteFrame(int fd, std::string_view payload);
absl::StatusOr<std::string> ReadFrame(int fd, uint64_t max_bytes, absl::Time deadline);

}  // namespace warpd::compiler

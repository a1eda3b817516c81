// Zero-copy CPU arrays for a client on the daemon's host: the share socket
// beside the daemon's Unix socket (`<socket>.share`, server/local/share_socket.h)
// hands out the memory file holding an array; the client maps it. The same
// protocol as clients/python/warpd/local_map.py: one line
// "<bearer token> <session token> <handle>\n", answered
// "ok <offset> <size> [<segment>]" with the file's descriptor (SCM_RIGHTS),
// or "error <CODE> <message>".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace warpd::internal {

// Arrays smaller than this keep the gRPC transfers (as in the Python client).
inline constexpr uint64_t kShareMinBytes = 64 << 10;

struct Mapping {
  Mapping(void* base, size_t length, size_t offset, size_t size)
      : base(base), length(length), data(static_cast<char*>(base) + offset), size(size) {}
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  void* base;
  size_t length;
  void* data;
  size_t size;
};

// The share socket beside a unix: address when it exists.
std::optional<std::string> SharePath(const std::string& address);

struct ShareReply {
  uint64_t offset = 0;
  uint64_t size = 0;
};
// Parses an "ok <offset> <size> [<segment>]" line; the daemon's error
// (FAILED_PRECONDITION with its text) for an "error ..." line.
absl::StatusOr<ShareReply> ParseShareReply(const std::string& line);

// Maps `nbytes` of array `handle`. FAILED_PRECONDITION when the daemon will
// not share it (the caller then uses the gRPC transfers).
absl::StatusOr<std::shared_ptr<Mapping>> MapArray(const std::string& share_path, const std::string& token,
                                                  const std::string& session, uint64_t handle, uint64_t nbytes);

}  // namespace warpd::internal

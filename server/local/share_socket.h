// warpd server: the share socket: a local client maps its arrays' memory.
//
// CPU arrays live in memory files (runtime/memory/segment_pool.h). Beside
// each gRPC Unix socket the daemon listens on "<grpc socket path>.share"; a
// client on the same host connects and sends one line (at most 512 bytes):
//   "<bearer token> <session token> <array handle>\n"
// and gets one line back before the daemon closes the connection:
//   "ok <offset> <size> <segment>\n"  with the memory file of the array's
//                                 segment attached (SCM_RIGHTS): the array's
//                                 bytes are [offset, offset + size) of that
//                                 file; <segment> names the file among the
//                                 session's (CpuBuffer::segment_serial), so a
//                                 client may reuse a mapping it still has
//   "ok <offset> <size> <pool> cuda <uuid> <export>\n"
//                                 a GPU array (CUDA IPC): the fd attached is
//                                 a new fd of the session's memory pool on
//                                 the GPU whose UUID is <uuid> ("GPU-..."),
//                                 <export> (hex) names the allocation in it
//                                 for cuMemPoolImportPointer, and the
//                                 array's bytes are [offset, offset + size)
//                                 of that allocation; <pool> names the pool
//                                 among the daemon's (a client imports it
//                                 once)
//   "error <CODE> <message>\n"    CODE as in absl::StatusCodeToString
// Whether the caller may map the array is the answer function's business
// (ShareArrays in share_arrays.h: only the session that owns it). Nothing is
// reachable by name: the fd is the capability.
//
// Hostile peers: every socket is non-blocking; a connection must send its
// line within 2 s; at most kMaxWaiting connections wait at once and
// kMaxWaitingPerUid per peer uid (connection_slots.h; more get an error line
// naming the bound and are closed), so no peer can hold the socket for
// others for long. Nothing but the one line is read. A connection holds its
// slot only until its line arrives: the line is answered at once and the
// connection closed, so no connection outlives its authentication and the
// socket needs no per-tenant bound (the command socket, whose connections
// last, has one).
// Thread-safe: a thread of its own serves it until the object is destroyed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "server/listen.h"

namespace warpd::server {

// What a share request gets: `fd` (kept open by `hold` until the reply is
// sent) and where the array's bytes are in it.
struct SharedRegion {
  int fd = -1;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t segment = 0;  // the file's serial in the session's pool
  std::shared_ptr<const void> hold;
  // A GPU array's: its device's UUID and its allocation's export data;
  // empty for a memory file.
  std::string cuda_uuid;
  std::string cuda_export;
};

class ShareSocket {
 public:
  using Answer = std::function<absl::StatusOr<SharedRegion>(std::string_view bearer_token,
                                                            std::string_view session, uint64_t handle)>;

  static constexpr size_t kMaxLine = 512;
  static constexpr int kMaxWaiting = 64;
  static constexpr int kMaxWaitingPerUid = 8;
  static constexpr int kDeadlineMs = 2000;

  // Binds `path` (ListenUnixSocket rules) with `mode` and `group` and starts serving.
  static absl::StatusOr<std::unique_ptr<ShareSocket>> Start(const std::string& path, mode_t mode, gid_t group,
                                                            Answer answer);
  ~ShareSocket();
  ShareSocket(const ShareSocket&) = delete;
  ShareSocket& operator=(const ShareSocket&) = delete;

  const std::string& path() const { return listener_->path(); }

  // The reply to one request line (without its newline): what Serve sends.
  // Public for tests.
  static SharedRegion Parse(std::string_view line, const Answer& answer, std::string* reply);

 private:
  ShareSocket(std::unique_ptr<UnixListener> listener, Answer answer);
  void Serve();

  const std::unique_ptr<UnixListener> listener_;
  const Answer answer_;
  std::thread thread_;
};

// The share socket beside a gRPC Unix socket path.
inline std::string ShareSocketPath(const std::string& grpc_socket_path) { return grpc_socket_path + ".share"; }

}  // namespace warpd::server

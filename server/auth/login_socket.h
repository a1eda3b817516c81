// warpd server: the login socket: local users get their tenant's token by
// who they are (peer uid), not by what they know.
//
// gRPC does not tell a call which local user is at the other end of a Unix
// socket, so identity by peer uid happens beside it: the daemon listens on
// a second Unix socket, "<grpc socket path>.login". A local process
// connects; the daemon reads the peer's uid from the kernel (SO_PEERCRED,
// which the client cannot forge), and writes one line before closing:
//   "token <hex>\n"      the bearer token of the tenant mapped to that uid
//   "error <message>\n"  no tenant for that uid
// It never reads from the connection, answers at once with a non-blocking
// write, and serves one connection at a time, so a client cannot stall it.
// The socket file is created with the same mode as the gRPC socket (0600, or
// 0660 with --socket-group) and removed on shutdown.
// Thread-safe: a thread of its own serves it until the object is destroyed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/listen.h"

namespace warpd::server {

class LoginSocket {
 public:
  // Returns the token for `uid`, or an error whose message the peer gets.
  using Answer = std::function<absl::StatusOr<std::string>(uint32_t uid)>;

  // Binds `path` (PrepareUnixSocket rules) with `mode`, owned by `group`
  // when it is not -1, and starts serving.
  static absl::StatusOr<std::unique_ptr<LoginSocket>> Start(const std::string& path, mode_t mode, gid_t group,
                                                            Answer answer);
  ~LoginSocket();

  const std::string& path() const { return listener_->path(); }

 private:
  LoginSocket(std::unique_ptr<UnixListener> listener, Answer answer);
  void Serve();

  const std::unique_ptr<UnixListener> listener_;
  const Answer answer_;
  std::thread thread_;
};

// The login socket beside a gRPC Unix socket path.
inline std::string LoginSocketPath(const std::string& grpc_socket_path) { return grpc_socket_path + ".login"; }

}  // namespace warpd::server

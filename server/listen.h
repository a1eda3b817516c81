// warpd server: listening addresses and Unix socket files.
//
// gRPC creates a Unix socket file when it binds and leaves it behind when the
// process exits. Before binding, PrepareUnixSocket removes a stale file left
// by a daemon that died, but refuses to take over a live one; after
// shutdown, RemoveUnixSocket deletes ours.
// Thread-compatible (touches the file system).
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace warpd::server {

// "unix:/path" -> "/path"; "" for TCP addresses.
std::string UnixSocketPath(const std::string& address);

// OK when `path` is free to bind (absent, or a stale socket that was removed).
// ALREADY_EXISTS when a process accepts connections on it; FAILED_PRECONDITION
// when something other than a socket is there; INVALID_ARGUMENT when the
// path is too long for a socket address.
absl::Status PrepareUnixSocket(const std::string& path);

// Gives the socket file at `path` exactly `mode` (not the umask's) and
// group `group` (-1: the daemon's). For the gRPC sockets: gRPC binds its
// own, then main.cc applies the same mode.
absl::Status SetSocketAccess(const std::string& path, mode_t mode, gid_t group);

// A non-blocking listening Unix socket at `path` (PrepareUnixSocket rules)
// that nobody can connect to before it has `mode` and `group`; the caller
// owns the fd and removes the file.
absl::StatusOr<int> ListenUnixSocket(const std::string& path, mode_t mode, gid_t group);

// Deletes `path` if it is a socket. Errors are ignored (best effort at exit).
void RemoveUnixSocket(const std::string& path);

// A listening Unix socket served by a thread of its owner (the login, share
// and command sockets): the socket (ListenUnixSocket), an eventfd that asks
// that thread to stop, and the file, removed when the listener goes. The
// owner polls fd() and stop_fd() (readable once RequestStop was called) and
// joins its thread before destroying the listener.
class UnixListener {
 public:
  static absl::StatusOr<std::unique_ptr<UnixListener>> Open(const std::string& path, mode_t mode, gid_t group);
  ~UnixListener();
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  int stop_fd() const { return stop_fd_; }
  void RequestStop();

  // One waiting connection (non-blocking, close-on-exec) and its peer's
  // credentials (SO_PEERCRED, which the peer cannot forge); -1 when none is
  // waiting or it could not be read (then closed). Out of descriptors, it
  // pauses 10 ms rather than let the caller spin.
  int Accept(ucred* peer);

 private:
  UnixListener(std::string path, int fd, int stop_fd) : path_(std::move(path)), fd_(fd), stop_fd_(stop_fd) {}

  const std::string path_;
  const int fd_;
  const int stop_fd_;
};

}  // namespace warpd::server

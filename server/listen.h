// warpd server: listening addresses and Unix socket files.
//
// gRPC creates a Unix socket file when it binds and leaves it behind when the
// process exits. Before binding, PrepareUnixSocket removes a stale file left
// by a daemon that died, but refuses to take over a live one; after
// shutdown, RemoveUnixSocket deletes ours.
// Thread-compatible (touches the file system).
#pragma once

#include <sys/types.h>

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

}  // namespace warpd::server

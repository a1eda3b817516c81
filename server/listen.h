// warpd server: listening addresses and Unix socket files.
//
// gRPC creates a Unix socket file when it binds and leaves it behind when the
// process exits. Before binding, PrepareUnixSocket removes a stale file left
// by a daemon that died, but refuses to take over a live one; after
// shutdown, RemoveUnixSocket deletes ours.
// Thread-compatible (touches the file system).
#pragma once

#include <string>

#include "absl/status/status.h"

namespace warpd::server {

// "unix:/path" -> "/path"; "" for TCP addresses.
std::string UnixSocketPath(const std::string& address);

// OK when `path` is free to bind (absent, or a stale socket that was removed).
// ALREADY_EXISTS when a process accepts connections on it; FAILED_PRECONDITION
// when something other than a socket is there; INVALID_ARGUMENT when the
// path is too long for a socket address.
absl::Status PrepareUnixSocket(const std::string& path);

// Deletes `path` if it is a socket. Errors are ignored (best effort at exit).
void RemoveUnixSocket(const std::string& path);

}  // namespace warpd::server

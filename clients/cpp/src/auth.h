// How the C++ client finds its bearer token and the daemon's address, as the
// Python client does (clients/python/warpd/auth.py): options, WARPD_TOKEN,
// the login socket beside a Unix socket, the token file for loopback TCP.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace warpd::internal {

// The address to use: `requested`, else $WARPD_ADDRESS, else the default
// local daemon's Unix socket when it exists, else 127.0.0.1:7788.
std::string ResolveAddress(const std::string& requested);
// The socket path of a "unix:" address, or nullopt (TCP).
std::optional<std::string> UnixPath(const std::string& address);
bool IsLoopback(const std::string& address);
std::string DefaultTokenFile();
// The token in `path` when it is this user's regular file that only this
// user can read; nullopt otherwise (`why` says why, when not null).
std::optional<std::string> ReadTokenFile(const std::string& path, std::string* why = nullptr);
// The token the login socket `<socket_path>.login` gives this user.
// PERMISSION_DENIED when the daemon refuses the user, UNAVAILABLE when it
// cannot be reached.
absl::StatusOr<std::string> Login(const std::string& socket_path);

struct FoundToken {
  std::string token;   // empty: none
  std::string source;  // where it came from, or where the client looked (for messages)
};
absl::StatusOr<FoundToken> FindToken(const std::string& address, const std::string& option_token,
                                     const std::string& option_token_file);
// The message for a daemon that answered UNAUTHENTICATED.
std::string RefusalHelp(const std::string& address, const std::string& daemon_message, const std::string& source);

}  // namespace warpd::internal

// warpd server: the token file: how loopback TCP clients of a daemon running
// without a tenants file get its token (as Jupyter does): the daemon writes
// its owner tenant's token to a file only that user can read, and the client
// (same user, same machine) reads it.
//
// The file is written atomically (a temporary file made with O_EXCL and
// O_NOFOLLOW, mode 0600, renamed into place), so nobody ever sees a partial
// token, and a path that is a symlink or belongs to someone else is refused
// rather than followed. RemoveTokenFile deletes it at shutdown if it still
// holds our token.
// Thread-compatible (touches the file system).
#pragma once

#include <string>

#include "absl/status/status.h"

namespace warpd::server {

absl::Status WriteTokenFile(const std::string& path, const std::string& token);
void RemoveTokenFile(const std::string& path, const std::string& token);

}  // namespace warpd::server

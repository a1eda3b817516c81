// warpd server: process-wide logging through spdlog.
//
// SetUpLogging installs the default logger (stderr, timestamped) at a level
// named by --log-level; the rest of the server logs with spdlog::info etc.
// Call once, before any threads start.
#pragma once

#include <string>

namespace warpd::server {

// `level` is one of trace, debug, info, warn, error, critical, off (checked
// by flag parsing; anything else means info).
void SetUpLogging(const std::string& level);

}  // namespace warpd::server

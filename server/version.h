// warpd server: the daemon's version, CMake's project(VERSION).
#pragma once

#ifndef WARPD_VERSION
#define WARPD_VERSION "0.0.0-unknown"
#endif

namespace warpd::server {
inline constexpr const char kVersion[] = WARPD_VERSION;
}  // namespace warpd::server

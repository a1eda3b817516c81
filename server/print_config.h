// warpd server: `warpd --print-config`: the settings a daemon started with
// these flags would run with, defaults resolved (memory limit, paths,
// tenants and their limits), one "key: value" per line. Loading the tenants
// file here also checks it, so an operator can validate a file before
// sending SIGHUP. Thread-compatible.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "server/flags.h"

namespace warpd::server {

absl::StatusOr<std::string> EffectiveConfig(const Flags& flags);

}  // namespace warpd::server

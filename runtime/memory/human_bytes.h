// warpd runtime: byte counts as people read them, for error messages and
// logs: "512 bytes", "600 KiB", "3.2 GiB" (binary units, one decimal at most,
// so the text is approximate; messages that need the exact count print it
// beside). Thread-safe (a pure function).
#pragma once

#include <cstdint>
#include <string>

namespace warpd::runtime {

std::string HumanBytes(uint64_t bytes);

}  // namespace warpd::runtime

// warpd runtime: unguessable random values from the kernel's CSPRNG.
//
// Handles and session tokens are capabilities: knowing one is what grants
// access, so they come from getrandom(2), never from a seeded PRNG.
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace warpd::runtime {

// Fills `out` with `size` random bytes; INTERNAL if the kernel refuses.
absl::Status SecureRandomBytes(void* out, size_t size);

// A random 64-bit value that is never 0 (0 means "no handle" on the wire).
absl::StatusOr<uint64_t> SecureRandomHandle();

// `bytes` random bytes as lower-case hex (2 * bytes characters).
absl::StatusOr<std::string> SecureRandomHex(size_t bytes);

}  // namespace warpd::runtime

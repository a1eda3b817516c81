// The runtime/native headers, embedded into the daemon at build time
// (cmake/embed_files.cmake). Host-side only: device code never includes this.
#pragma once

#include <cstddef>
#include <span>

namespace warpd::native {

struct EmbeddedHeader {
  const char* path;      // include path, e.g. "warpd/native/builtin.h"
  const char* contents;
  size_t size;
};

// All headers, in a fixed order. The compiler hashes them into cache keys.
std::span<const EmbeddedHeader> EmbeddedHeaders();

}  // namespace warpd::native

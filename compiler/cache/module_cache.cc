#include "compiler/cache/module_cache.h"

#include <cstdint>

#include "common/sha256.h"

namespace warpd::compiler {

std::string CacheKey(const std::vector<std::string_view>& parts) {
  Sha256 sha;
  for (std::string_view p : parts) {
    uint64_t n = p.size();
    sha.Update(&n, sizeof n);
    sha.Update(p);
  }
  return HexDigest(sha.Final());
}

}  // namespace warpd::compiler

#include "compiler/cache/module_cache.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SHA256.h>

namespace warpd::compiler {

std::string CacheKey(const std::vector<std::string_view>& parts) {
  llvm::SHA256 sha;
  for (std::string_view p : parts) {
    uint64_t n = p.size();
    sha.update(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(&n), sizeof n));
    sha.update(llvm::StringRef(p.data(), p.size()));
  }
  auto digest = sha.final();
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : digest) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

}  // namespace warpd::compiler

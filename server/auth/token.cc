#include "server/auth/token.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "common/sha256.h"
#include "runtime/objects/secure_random.h"

namespace warpd::server {

absl::StatusOr<std::string> NewToken() { return runtime::SecureRandomHex(32); }

bool IsHexSha256(std::string_view text) {
  if (text.size() != 2 * Sha256::kSize) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string_view BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(absl::string_view(authorization.data(), kScheme.size()),
                              absl::string_view(kScheme.data(), kScheme.size()))) {
    return {};
  }
  std::string_view token = authorization.substr(kScheme.size());
  if (token.size() > 512) return {};
  for (char c : token) {
    if (c <= ' ' || c > '~') return {};
  }
  return token;
}

}  // namespace warpd::server

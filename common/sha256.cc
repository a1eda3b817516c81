#include "common/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

namespace warpd {
namespace {

void Check(int ok, const char* what) {
  if (ok != 1) {
    std::fprintf(stderr, "warpd: OpenSSL %s failed for SHA-256\n", what);
    std::abort();
  }
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr) Check(0, "EVP_MD_CTX_new");
  Check(EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr), "EVP_DigestInit_ex");
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::Update(const void* data, size_t size) {
  if (size == 0) return;  // data may be null for an empty array
  Check(EVP_DigestUpdate(ctx_, data, size), "EVP_DigestUpdate");
}

Sha256::Digest Sha256::Final() {
  Digest out{};
  unsigned int n = 0;
  Check(EVP_DigestFinal_ex(ctx_, out.data(), &n), "EVP_DigestFinal_ex");
  if (n != kSize) Check(0, "EVP_DigestFinal_ex (digest size)");
  return out;
}

std::string HexSha256(std::string_view bytes) {
  Sha256 h;
  h.Update(bytes);
  return HexDigest(h.Final());
}

std::string HexDigest(const Sha256::Digest& d) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * d.size());
  for (uint8_t b : d) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

}  // namespace warpd

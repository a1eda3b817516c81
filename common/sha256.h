// warpd: SHA-256 through OpenSSL's libcrypto: the persistent store's file
// names and checksums, and the hashes bearer tokens are kept as.
//
//   Sha256 h;
//   h.Update(header);
//   h.Update(data);
//   std::array<uint8_t, 32> digest = h.Final();
//   std::string name = HexSha256(entry_name);  // 64 lowercase hex digits
//
// A Sha256 is one digest in progress: not thread-safe, not copyable. The
// free functions are thread-safe. OpenSSL failures (which do not happen for
// SHA-256 short of running out of memory) abort: a digest must never be
// silently wrong.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

typedef struct evp_md_ctx_st EVP_MD_CTX;

namespace warpd {

class Sha256 {
 public:
  static constexpr size_t kSize = 32;
  using Digest = std::array<uint8_t, kSize>;

  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view bytes) { Update(bytes.data(), bytes.size()); }
  // Ends the digest; the object may not be used afterwards.
  Digest Final();

 private:
  EVP_MD_CTX* ctx_;
};

// A digest as 64 lowercase hex digits.
std::string HexDigest(const Sha256::Digest& digest);

// The SHA-256 of `bytes` as 64 lowercase hex digits.
std::string HexSha256(std::string_view bytes);

}  // namespace warpd

#include "runtime/objects/secure_random.h"

#include <sys/random.h>

#include <cerrno>

#include "common/posix_error.h"

namespace warpd::runtime {

absl::Status SecureRandomBytes(void* out, size_t size) {
  auto* p = static_cast<unsigned char*>(out);
  while (size > 0) {
    const ssize_t n = getrandom(p, size, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return PosixError("getrandom", errno);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> SecureRandomHandle() {
  for (;;) {
    uint64_t v = 0;
    if (absl::Status s = SecureRandomBytes(&v, sizeof(v)); !s.ok()) return s;
    if (v != 0) return v;
  }
}

absl::StatusOr<std::string> SecureRandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (absl::Status s = SecureRandomBytes(raw.data(), raw.size()); !s.ok()) return s;
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (unsigned char c : raw) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

}  // namespace warpd::runtime

#include "common/log_text.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"

namespace warpd {

std::string LogText(absl::string_view text, size_t max) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(std::min(text.size(), max) + 8);
  size_t used = 0;  // input bytes shown
  bool after_hex = false;  // the last escape was \xNN
  for (; used < text.size(); ++used) {
    const unsigned char c = static_cast<unsigned char>(text[used]);
    char escaped[4];
    size_t n = 2;
    escaped[0] = '\\';
    switch (c) {
      case '\n': escaped[1] = 'n'; break;
      case '\r': escaped[1] = 'r'; break;
      case '\t': escaped[1] = 't'; break;
      case '\"': escaped[1] = '\"'; break;
      case '\'': escaped[1] = '\''; break;
      case '\\': escaped[1] = '\\'; break;
      default:
        // As in CHexEscape (and C literals), a hex digit right after a \xNN
        // escape is escaped too, so "\xc1F" cannot be misread.
        if (c >= 0x20 && c < 0x7f && !(after_hex && std::isxdigit(c))) {
          escaped[0] = static_cast<char>(c);
          n = 1;
        } else {
          escaped[1] = 'x';
          escaped[2] = kHex[c >> 4];
          escaped[3] = kHex[c & 0xf];
          n = 4;
        }
    }
    if (out.size() + n > max) break;
    out.append(escaped, n);
    after_hex = n == 4;
  }
  if (used < text.size()) absl::StrAppend(&out, "...(+", text.size() - used, " bytes)");
  return out;
}

std::string LogStatus(const absl::Status& status, size_t max) {
  if (status.ok()) return "OK";
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ",
                      LogText(status.message(), max));
}

}  // namespace warpd

#include "compiler/codegen/client_text.h"

namespace warpd::codegen {

std::string CppStringLiteral(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (unsigned char c : text) {
    // '/' and '*' are escaped too, so "*/" and "//" never appear.
    const bool plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '?' && c != '*' && c != '/';
    if (plain) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('\\');
      out.push_back(static_cast<char>('0' + ((c >> 6) & 7)));
      out.push_back(static_cast<char>('0' + ((c >> 3) & 7)));
      out.push_back(static_cast<char>('0' + (c & 7)));
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace warpd::codegen

#include "tools/gpu_check/ptx_entry.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace warpd::gpu_check {
namespace {

// Bytes of a PTX scalar type such as "u64", "b8", "f32".
int TypeBytes(absl::string_view t) {
  if (t.size() < 2) return 0;
  int bits = 0;
  if (!absl::SimpleAtoi(t.substr(1), &bits) || bits % 8 != 0) return 0;
  return bits / 8;
}

}  // namespace

absl::StatusOr<std::vector<uint64_t>> PtxEntryParamBytes(std::string_view ptx_text, std::string_view entry_name) {
  // absl's string_view is its own type in this build.
  const absl::string_view ptx(ptx_text.data(), ptx_text.size());
  const absl::string_view entry(entry_name.data(), entry_name.size());
  const std::string head = absl::StrCat(".entry ", entry, "(");
  size_t at = ptx.find(head);
  if (at == absl::string_view::npos) return absl::NotFoundError(absl::StrCat("PTX has no entry ", entry));
  at += head.size();
  const size_t end = ptx.find(')', at);
  if (end == absl::string_view::npos) return absl::InvalidArgumentError("PTX entry parameter list is not closed");
  std::vector<uint64_t> bytes;
  for (absl::string_view decl : absl::StrSplit(ptx.substr(at, end - at), ',', absl::SkipWhitespace())) {
    decl = absl::StripAsciiWhitespace(decl);
    std::vector<absl::string_view> words = absl::StrSplit(decl, ' ', absl::SkipWhitespace());
    if (words.size() < 3 || words[0] != ".param")
      return absl::InvalidArgumentError(absl::StrCat("unexpected PTX parameter '", decl, "'"));
    // The type is the last word before the name that is not an attribute.
    int type_bytes = 0;
    for (size_t i = 1; i + 1 < words.size(); ++i) {
      absl::string_view w = words[i];
      if (w == ".ptr" || w == ".align" || (i > 1 && words[i - 1] == ".align") || w.rfind(".", 0) != 0) continue;
      if (w == ".global" || w == ".const" || w == ".local" || w == ".shared") continue;
      type_bytes = TypeBytes(w.substr(1));
    }
    if (type_bytes == 0) return absl::InvalidArgumentError(absl::StrCat("no type in PTX parameter '", decl, "'"));
    absl::string_view name = words.back();
    uint64_t count = 1;
    if (size_t open = name.find('['); open != absl::string_view::npos) {
      const size_t close = name.find(']', open);
      if (close == absl::string_view::npos || !absl::SimpleAtoi(name.substr(open + 1, close - open - 1), &count))
        return absl::InvalidArgumentError(absl::StrCat("bad array size in PTX parameter '", decl, "'"));
    }
    bytes.push_back(count * static_cast<uint64_t>(type_bytes));
  }
  return bytes;
}

}  // namespace warpd::gpu_check

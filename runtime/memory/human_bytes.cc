#include "runtime/memory/human_bytes.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace warpd::runtime {

std::string HumanBytes(uint64_t bytes) {
  if (bytes == 1) return "1 byte";
  if (bytes < 1024) return absl::StrCat(bytes, " bytes");
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  constexpr int kLast = 5;
  int unit = 0;
  double value = static_cast<double>(bytes) / 1024;
  while (value >= 1024 && unit < kLast) {
    value /= 1024;
    ++unit;
  }
  std::string text = absl::StrFormat("%.1f", value);
  // 1023.96 KiB rounds to "1024.0": say "1 MiB" instead.
  if (text == "1024.0" && unit < kLast) {
    text = "1.0";
    ++unit;
  }
  if (absl::EndsWith(text, ".0")) text.resize(text.size() - 2);
  return absl::StrCat(text, " ", kUnits[unit]);
}

}  // namespace warpd::runtime

#include "runtime/memory/huge_pages.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace warpd::runtime {
namespace {

constexpr char kThpDir[] = "/sys/kernel/mm/transparent_hugepage/";

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string();
}

std::string_view Bracketed(std::string_view text) {
  const size_t open = text.find('[');
  if (open == std::string_view::npos) return {};
  const size_t close = text.find(']', open + 1);
  if (close == std::string_view::npos) return {};
  return text.substr(open + 1, close - open - 1);
}

ShmemHugePages ModeOf(std::string_view word) {
  if (word == "advise") return ShmemHugePages::kOnAdvice;
  if (word == "always" || word == "within_size" || word == "force") return ShmemHugePages::kAlways;
  return ShmemHugePages::kNone;
}

const std::string& HostText() {
  static const std::string text(Bracketed(ReadSmallFile(std::string(kThpDir) + "shmem_enabled")));
  return text;
}

}  // namespace

ShmemHugePages ParseShmemHugePages(std::string_view shmem_enabled) { return ModeOf(Bracketed(shmem_enabled)); }

ShmemHugePages HostShmemHugePages() {
  static const ShmemHugePages mode = ModeOf(HostText());
  return mode;
}

std::string_view HostShmemHugePagesText() {
  return HostText().empty() ? std::string_view("unknown") : std::string_view(HostText());
}

uint64_t HugePageBytes() {
  static const uint64_t bytes = [] {
    uint64_t v = 0;
    const std::string text = ReadSmallFile(std::string(kThpDir) + "hpage_pmd_size");
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &v) && v >= 4096 && (v & (v - 1)) == 0) return v;
    return uint64_t{2} << 20;
  }();
  return bytes;
}

}  // namespace warpd::runtime

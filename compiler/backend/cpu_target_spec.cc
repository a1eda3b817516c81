// The LLVM-free half of cpu_target.h: a target's names and the test hook's
// forced target. Built into both the full CPU backend and the lean build
// without it (cpu_target_absent.cc).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler/backend/cpu_target.h"

namespace warpd::compiler {

std::string CpuTarget::Description() const {
  return absl::StrCat(triple, " cpu=", cpu, " features=", absl::StrJoin(features, ","));
}

std::string CpuTarget::Summary() const {
  size_t on = std::count_if(features.begin(), features.end(), [](const std::string& f) { return f[0] == '+'; });
  return absl::StrCat(cpu, " (+", on, " -", features.size() - on, " features)");
}

CpuTarget ParseForcedCpuTarget(const std::string& triple, const std::string& spec) {
  CpuTarget t;
  t.triple = triple;
  std::vector<std::string> parts = absl::StrSplit(spec, absl::MaxSplits(':', 1));
  t.cpu = parts[0];
  if (parts.size() > 1)
    for (absl::string_view f : absl::StrSplit(parts[1], ',', absl::SkipEmpty())) t.features.emplace_back(f);
  std::sort(t.features.begin(), t.features.end());
  t.reason = "forced by WARPD_TEST_CPU_TARGET (unchecked)";
  return t;
}

}  // namespace warpd::compiler

#include "compiler/backend/cpu_target.h"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Basic/TargetInfo.h>
#include <clang/Basic/TargetOptions.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/TargetParser/X86TargetParser.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace warpd::compiler {
namespace {

// The LLVM backend's view of a triple: its CPU and feature tables. Null when
// LLVM has no backend for the triple (then nothing is "known").
std::unique_ptr<llvm::MCSubtargetInfo> BackendInfo(const std::string& triple) {
  InitializeNativeLlvm();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (target == nullptr) return nullptr;
  return std::unique_ptr<llvm::MCSubtargetInfo>(target->createMCSubtargetInfo(triple, "", ""));
}

bool ClangAcceptsCpu(const std::string& triple, const std::string& cpu) {
  auto diag_opts = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
  clang::IgnoringDiagConsumer ignore;
  clang::DiagnosticsEngine diags(llvm::makeIntrusiveRefCnt<clang::DiagnosticIDs>(), diag_opts,
                                 &ignore, /*ShouldOwnClient=*/false);
  auto opts = std::make_shared<clang::TargetOptions>();
  opts->Triple = triple;
  opts->CPU = cpu;
  llvm::IntrusiveRefCntPtr<clang::TargetInfo> info(clang::TargetInfo::CreateTargetInfo(diags, opts));
  return info != nullptr && !diags.hasErrorOccurred();
}

// The generic levels to try for an unknown CPU, best first.
std::vector<std::string> FallbackLevels(const llvm::Triple& triple) {
  if (triple.getArch() == llvm::Triple::x86_64) return {"x86-64-v4", "x86-64-v3", "x86-64-v2", "x86-64"};
  return {"generic"};
}

// The features LLVM lists for an x86 level that the host must have. The
// baseline's own features are implied by the triple (every x86-64 has them),
// so only what a level adds over "x86-64" is required.
std::vector<std::string> RequiredFeatures(const llvm::Triple& triple, const std::string& level) {
  if (triple.getArch() != llvm::Triple::x86_64 || level == "x86-64") return {};
  llvm::SmallVector<llvm::StringRef, 64> base, wanted;
  llvm::X86::getFeaturesForCPU("x86-64", base);
  llvm::X86::getFeaturesForCPU(level, wanted);
  std::set<std::string> have(base.begin(), base.end());
  std::vector<std::string> out;
  for (llvm::StringRef f : wanted)
    if (!have.count(f.str())) out.push_back(f.str());
  return out;
}

}  // namespace

void InitializeNativeLlvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

HostCpu DetectHostCpu() {
  HostCpu host;
  host.triple = llvm::sys::getProcessTriple();
  host.name = llvm::sys::getHostCPUName().str();
  for (const auto& f : llvm::sys::getHostCPUFeatures()) host.features[f.first().str()] = f.second;
  return host;
}

bool IsKnownCpu(const std::string& triple, const std::string& cpu) {
  if (cpu.empty()) return false;
  std::unique_ptr<llvm::MCSubtargetInfo> backend = BackendInfo(triple);
  return backend != nullptr && backend->isCPUStringValid(cpu) && ClangAcceptsCpu(triple, cpu);
}

CpuTarget SelectCpuTarget(const HostCpu& host) {
  CpuTarget t;
  t.triple = host.triple;
  const llvm::Triple triple(host.triple);
  std::unique_ptr<llvm::MCSubtargetInfo> backend = BackendInfo(host.triple);

  // Features: exactly those the host reports that the backend knows.
  std::set<std::string> known;
  if (backend != nullptr)
    for (const llvm::SubtargetFeatureKV& kv : backend->getAllProcessorFeatures()) known.insert(kv.Key);
  std::vector<std::string> dropped;
  for (const auto& [name, on] : host.features) {
    if (known.count(name)) {
      t.features.push_back(absl::StrCat(on ? "+" : "-", name));
    } else if (on) {
      dropped.push_back(name);
    }
  }
  std::sort(t.features.begin(), t.features.end());
  const std::string dropped_note =
      dropped.empty() ? "" : absl::StrCat("; dropped features LLVM does not know: ", absl::StrJoin(dropped, ","));

  if (IsKnownCpu(host.triple, host.name)) {
    t.cpu = host.name;
    t.reason = absl::StrCat("host CPU '", host.name, "' is known to LLVM ", LLVM_VERSION_STRING, dropped_note);
    return t;
  }
  const std::string why = host.name.empty() ? "the host CPU name is empty"
                                            : absl::StrCat("host CPU '", host.name, "' is unknown to LLVM ",
                                                           LLVM_VERSION_STRING);
  auto has = [&](const std::string& f) {
    auto it = host.features.find(f);
    return it != host.features.end() && it->second;
  };
  for (const std::string& level : FallbackLevels(triple)) {
    if (!IsKnownCpu(host.triple, level)) continue;
    std::vector<std::string> missing;
    for (const std::string& f : RequiredFeatures(triple, level))
      if (!has(f)) missing.push_back(f);
    if (!missing.empty()) continue;
    t.cpu = level;
    t.reason = absl::StrCat(why, "; using '", level, "', the best level its features allow", dropped_note);
    return t;
  }
  // No level is known (a triple this LLVM cannot target natively): keep the
  // baseline name and no features; the start-up self-test reports the rest.
  t.cpu = FallbackLevels(triple).back();
  t.features.clear();
  t.reason = absl::StrCat(why, "; no generic level is accepted either, trying '", t.cpu, "'");
  return t;
}

}  // namespace warpd::compiler

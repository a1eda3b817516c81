// warpd compiler: which CPU the generated code is compiled for.
//
// The host reports a CPU name and a feature set (llvm::sys::getHostCPUName /
// getHostCPUFeatures). A name the toolchain does not know (a CPU newer than
// LLVM; LLVM then says "generic", which clang refuses as -target-cpu for
// x86) must not make every compile fail, so SelectCpuTarget picks:
//   - the host's own name, when both clang and the LLVM backend accept it;
//   - otherwise the best generic level the host features allow: on x86-64
//     x86-64-v4 / v3 / v2 / x86-64 (each needs every feature LLVM lists for
//     it), elsewhere "generic";
// and in both cases the host features themselves, minus those the backend
// does not know (dropped, not passed through: the backend would only warn).
// The result's Description() is part of every CPU cache key, so an object
// built for one target is never loaded on another.
//
// Usage:
//   CpuTarget t = SelectCpuTarget(DetectHostCpu());
//   spdlog::info("CPU target {} ({})", t.Description(), t.reason);
//
// Thread-safe (pure functions over LLVM's static target tables; the native
// target is registered on first use).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace warpd::compiler {

// What the host says about itself.
struct HostCpu {
  std::string triple;                  // "x86_64-pc-linux-gnu"
  std::string name;                    // as LLVM reports it: "znver3", "generic"
  std::map<std::string, bool> features;  // LLVM feature name -> present
};

// What code is compiled for: `clang -cc1 -triple T -target-cpu C
// -target-feature F...`.
struct CpuTarget {
  std::string triple;
  std::string cpu;
  std::vector<std::string> features;  // "+avx2", "-avx512f"; sorted
  // Why this CPU name was chosen, for the start-up log and error messages.
  std::string reason;

  // "x86_64-pc-linux-gnu cpu=x86-64-v3 features=+adx,+aes,..." (stable; a
  // cache key component).
  std::string Description() const;
  // "x86-64-v3 (+84 -12 features)": for messages.
  std::string Summary() const;
};

// Registers LLVM's native target, asm printer and parser (once; any thread).
void InitializeNativeLlvm();

// The running host, from LLVM's host detection.
HostCpu DetectHostCpu();

// The target for `host` (see the file comment). Never fails: the last
// resort is the triple's baseline ("x86-64" / "generic") with no features.
CpuTarget SelectCpuTarget(const HostCpu& host);

// True when clang's front end and the LLVM backend for `triple` both accept
// `cpu` as -target-cpu.
bool IsKnownCpu(const std::string& triple, const std::string& cpu);

// A target taken as given, unchecked ("cpu" or "cpu:+f1,-f2"), for the test
// hook WARPD_TEST_CPU_TARGET: it lets tests prove that a target the compiler
// rejects stops the daemon at start-up.
CpuTarget ParseForcedCpuTarget(const std::string& triple, const std::string& spec);

}  // namespace warpd::compiler

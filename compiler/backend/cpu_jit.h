// warpd compiler: the CPU backend. clang 19 in-process compiles generated C++
// to an object file in memory; LLVM ORC LLJIT links object files into one
// JITDylib per module.
//
// Generated code is freestanding (it includes only the embedded runtime/native
// headers, served from an in-memory file system), targets one CpuTarget
// (compiler/backend/cpu_target.h: the host CPU, or the best generic level its
// features allow; part of cache keys via TargetDescription()) and resolves
// libm/memcpy from the daemon process.
//
// Thread-safe: compiles run concurrently (each has its own CompilerInstance);
// all LLJIT access is serialized by one mutex, because LLJIT lookups from two
// threads crashed in practice.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "compiler/backend/cpu_target.h"
#include "compiler/backend/native_pch.h"

namespace llvm::orc {
class LLJIT;
class JITDylib;
}  // namespace llvm::orc

namespace warpd::compiler {

class CpuJit;

// Code of one module linked into the JIT. Unloads it when destroyed.
class JitModule {
 public:
  ~JitModule();
  JitModule(const JitModule&) = delete;
  JitModule& operator=(const JitModule&) = delete;

  // Address of a symbol, or NOT_FOUND.
  absl::StatusOr<void*> Lookup(std::string_view symbol);

 private:
  friend class CpuJit;
  JitModule(CpuJit* jit, llvm::orc::JITDylib* dylib) : jit_(jit), dylib_(dylib) {}
  CpuJit* jit_;
  llvm::orc::JITDylib* dylib_;
};

class CpuJit {
 public:
  // Compiles for `target` (default: SelectCpuTarget(DetectHostCpu())) with
  // the precompiled runtime header from `pch` (default: the process's
  // NativePchCache::Shared(); null: none). `pch` must outlive the CpuJit.
  static absl::StatusOr<std::unique_ptr<CpuJit>> Create();
  static absl::StatusOr<std::unique_ptr<CpuJit>> Create(CpuTarget target,
                                                        NativePchCache* pch = &NativePchCache::Shared());
  ~CpuJit();

  const CpuTarget& target() const { return target_; }
  // LLVM version, triple, CPU name and features: what compiled objects
  // depend on.
  const std::string& TargetDescription() const { return target_description_; }
  // Compile options (part of cache keys).
  static std::string_view OptionsDescription();

  // Compiles one translation unit to an ELF object. A compile error is
  // INTERNAL with clang's diagnostics (generated code failing is our bug).
  absl::StatusOr<std::string> CompileToObject(std::string_view source, std::string_view name) const;

  // Links an object file into a new JITDylib. The JitModule must not outlive
  // this CpuJit.
  absl::StatusOr<std::unique_ptr<JitModule>> Load(std::string_view object, std::string_view name);

 private:
  friend class JitModule;
  CpuJit() = default;

  CpuTarget target_;
  std::string target_description_;
  NativePchCache* pch_ = nullptr;
  absl::Mutex mu_;
  std::unique_ptr<llvm::orc::LLJIT> jit_ ABSL_GUARDED_BY(mu_);
  uint64_t next_dylib_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace warpd::compiler

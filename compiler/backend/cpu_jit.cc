#include "compiler/backend/cpu_jit.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/MemoryBuffer.h>

#include "absl/strings/str_cat.h"
#include "compiler/backend/clang_compile.h"

namespace warpd::compiler {
namespace {

// The one place LLVM errors become Status.
absl::Status LlvmError(llvm::Error err, absl::string_view what) {
  std::string msg = llvm::toString(std::move(err));
  return absl::InternalError(absl::StrCat(what, ": ", msg));
}

}  // namespace

std::string_view CpuJit::OptionsDescription() { return CppCompileOptions(); }

absl::StatusOr<std::unique_ptr<CpuJit>> CpuJit::Create() { return Create(SelectCpuTarget(DetectHostCpu())); }

absl::StatusOr<std::unique_ptr<CpuJit>> CpuJit::Create(CpuTarget target, NativePchCache* pch) {
  InitializeNativeLlvm();
  std::unique_ptr<CpuJit> jit(new CpuJit());
  jit->target_ = std::move(target);
  jit->pch_ = pch;
  jit->target_description_ = absl::StrCat("llvm=", LLVM_VERSION_STRING, " ", jit->target_.Description());

  auto built = llvm::orc::LLJITBuilder().create();
  if (!built) return LlvmError(built.takeError(), "creating the ORC JIT");
  absl::MutexLock lock(&jit->mu_);
  jit->jit_ = std::move(*built);
  return jit;
}

CpuJit::~CpuJit() = default;

absl::StatusOr<std::string> CpuJit::CompileToObject(std::string_view source, std::string_view name) const {
  return CompileCppToObject(target_, source, name, pch_);
}

absl::StatusOr<std::unique_ptr<JitModule>> CpuJit::Load(std::string_view object, std::string_view name) {
  absl::MutexLock lock(&mu_);
  auto dylib = jit_->createJITDylib(absl::StrCat("warpd_", std::string(name), "_", next_dylib_++));
  if (!dylib) return LlvmError(dylib.takeError(), "creating a JITDylib");
  // libm (sinf, expf, ...) and memcpy/memset come from the daemon process.
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      jit_->getDataLayout().getGlobalPrefix());
  if (!gen) return LlvmError(gen.takeError(), "resolving process symbols");
  dylib->addGenerator(std::move(*gen));
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), name);
  if (auto err = jit_->addObjectFile(*dylib, std::move(buffer))) {
    auto st = LlvmError(std::move(err), "loading compiled code");
    (void)jit_->getExecutionSession().removeJITDylib(*dylib);
    return st;
  }
  return std::unique_ptr<JitModule>(new JitModule(this, &*dylib));
}

absl::StatusOr<void*> JitModule::Lookup(std::string_view symbol) {
  absl::MutexLock lock(&jit_->mu_);
  auto addr = jit_->jit_->lookup(*dylib_, llvm::StringRef(symbol.data(), symbol.size()));
  if (!addr) {
    std::string msg = llvm::toString(addr.takeError());
    return absl::NotFoundError(absl::StrCat("symbol '", std::string(symbol), "': ", msg));
  }
  return addr->toPtr<void*>();
}

JitModule::~JitModule() {
  absl::MutexLock lock(&jit_->mu_);
  if (auto err = jit_->jit_->getExecutionSession().removeJITDylib(*dylib_)) llvm::consumeError(std::move(err));
}

}  // namespace warpd::compiler

#include "compiler/backend/cpu_jit.h"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "warpd/embedded_headers.h"

namespace warpd::compiler {
namespace {

constexpr char kHeaderRoot[] = "/warpd-native";
constexpr char kSourceRoot[] = "/warpd-src";

// The one place LLVM errors become Status.
absl::Status LlvmError(llvm::Error err, absl::string_view what) {
  std::string msg = llvm::toString(std::move(err));
  return absl::InternalError(absl::StrCat(what, ": ", msg));
}

}  // namespace

std::string_view CpuJit::OptionsDescription() {
  return "-O2 -std=c++17 -ffreestanding -fno-exceptions -fno-rtti -fno-math-errno -ffp-contract=off -fPIC";
}

absl::StatusOr<std::unique_ptr<CpuJit>> CpuJit::Create() { return Create(SelectCpuTarget(DetectHostCpu())); }

absl::StatusOr<std::unique_ptr<CpuJit>> CpuJit::Create(CpuTarget target) {
  InitializeNativeLlvm();
  std::unique_ptr<CpuJit> jit(new CpuJit());
  jit->target_ = std::move(target);
  jit->target_description_ = absl::StrCat("llvm=", LLVM_VERSION_STRING, " ", jit->target_.Description());

  auto built = llvm::orc::LLJITBuilder().create();
  if (!built) return LlvmError(built.takeError(), "creating the ORC JIT");
  absl::MutexLock lock(&jit->mu_);
  jit->jit_ = std::move(*built);
  return jit;
}

CpuJit::~CpuJit() = default;

absl::StatusOr<std::string> CpuJit::CompileToObject(std::string_view source, std::string_view name) const {
  // Headers and source live in an in-memory file system: no install path, and
  // no chance of picking up system headers.
  auto memfs = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  for (const auto& h : native::EmbeddedHeaders())
    memfs->addFile(absl::StrCat(kHeaderRoot, "/", h.path), 0,
                   llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(h.contents, h.size), h.path, false));
  std::string src_path = absl::StrCat(kSourceRoot, "/", std::string(name), ".cc");
  memfs->addFile(src_path, 0, llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(source.data(), source.size()), src_path));

  std::vector<std::string> args = {
      "-triple", target_.triple, "-emit-obj", "-O2", "-std=c++17", "-x", "c++", "-ffreestanding", "-nostdsysteminc",
      "-nobuiltininc", "-fno-rtti", "-ffp-contract=off", "-mrelocation-model", "pic",
      "-pic-level", "2", "-w", "-fgnuc-version=4.2.1", "-target-cpu", target_.cpu, "-I", kHeaderRoot,
      "-main-file-name", src_path, "-o", "-", src_path};
  for (const auto& f : target_.features) {
    args.push_back("-target-feature");
    args.push_back(f);
  }
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());

  std::string diag_text;
  llvm::raw_string_ostream diag_os(diag_text);
  auto diag_opts = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
  auto* printer = new clang::TextDiagnosticPrinter(diag_os, diag_opts.get());
  auto diags = llvm::makeIntrusiveRefCnt<clang::DiagnosticsEngine>(
      llvm::makeIntrusiveRefCnt<clang::DiagnosticIDs>(), diag_opts, printer, /*ShouldOwnClient=*/true);

  auto invocation = std::make_shared<clang::CompilerInvocation>();
  if (!clang::CompilerInvocation::CreateFromArgs(*invocation, argv, *diags)) {
    diag_os.flush();
    return absl::InternalError(absl::StrCat("invalid clang arguments: ", diag_text));
  }
  clang::CompilerInstance ci;
  ci.setInvocation(std::move(invocation));
  ci.setDiagnostics(diags.get());
  ci.createFileManager(memfs);
  ci.createSourceManager(ci.getFileManager());
  ci.setVerboseOutputStream(diag_os);  // "N errors generated" goes with the diagnostics

  llvm::SmallString<0> object;
  ci.setOutputStream(std::make_unique<llvm::raw_svector_ostream>(object));
  llvm::LLVMContext context;
  clang::EmitObjAction action(&context);
  bool ok = ci.ExecuteAction(action);
  diag_os.flush();
  if (!ok || diags->hasErrorOccurred())
    return absl::InternalError(absl::StrCat("generated code for '", std::string(name), "' failed to compile:\n", diag_text));
  return std::string(object.data(), object.size());
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

#include "compiler/backend/clang_compile.h"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "warpd/embedded_headers.h"

namespace warpd::compiler {
namespace {

constexpr char kHeaderRoot[] = "/warpd-native";
constexpr char kSourceRoot[] = "/warpd-src";

}  // namespace

std::string_view CppCompileOptions() {
  return "-O2 -std=c++17 -ffreestanding -fno-exceptions -fno-rtti -fno-math-errno -ffp-contract=off -fPIC";
}

absl::StatusOr<std::string> CompileCppToObject(const CpuTarget& target, std::string_view source,
                                               std::string_view name) {
  // Headers and source live in an in-memory file system: no install path, and
  // no chance of picking up system headers.
  auto memfs = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  for (const auto& h : native::EmbeddedHeaders())
    memfs->addFile(absl::StrCat(kHeaderRoot, "/", h.path), 0,
                   llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(h.contents, h.size), h.path, false));
  std::string src_path = absl::StrCat(kSourceRoot, "/", std::string(name), ".cc");
  memfs->addFile(src_path, 0, llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(source.data(), source.size()), src_path));

  std::vector<std::string> args = {
      "-triple", target.triple, "-emit-obj", "-O2", "-std=c++17", "-x", "c++", "-ffreestanding", "-nostdsysteminc",
      "-nobuiltininc", "-fno-rtti", "-ffp-contract=off", "-mrelocation-model", "pic",
      "-pic-level", "2", "-w", "-fgnuc-version=4.2.1", "-target-cpu", target.cpu, "-I", kHeaderRoot,
      "-main-file-name", src_path, "-o", "-", src_path};
  for (const auto& f : target.features) {
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

}  // namespace warpd::compiler

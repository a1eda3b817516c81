#include "compiler/backend/clang_frontend.h"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <llvm/Support/MemoryBuffer.h>

#include "absl/strings/str_cat.h"
#include "warpd/embedded_headers.h"

namespace warpd::compiler::internal {

llvm::IntrusiveRefCntPtr<llvm::vfs::InMemoryFileSystem> NativeHeaderFileSystem() {
  auto fs = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  for (const auto& h : native::EmbeddedHeaders())
    fs->addFile(absl::StrCat(kHeaderRoot, "/", h.path), 0,
                llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(h.contents, h.size), h.path, false));
  return fs;
}

std::vector<std::string> Cc1BaseArgs(const CpuTarget& target) {
  std::vector<std::string> args = {
      // -vectorize-*: what the clang driver adds at -O2 (cc1 alone does not).
      "-triple", target.triple, "-O2", "-vectorize-loops", "-vectorize-slp", "-std=c++17", "-ffreestanding", "-nostdsysteminc", "-nobuiltininc",
      "-fno-rtti", "-ffp-contract=off", "-mrelocation-model", "pic", "-pic-level", "2", "-w",
      "-fgnuc-version=4.2.1", "-target-cpu", target.cpu, "-I", kHeaderRoot};
  for (const auto& f : target.features) {
    args.push_back("-target-feature");
    args.push_back(f);
  }
  return args;
}

bool RunClang(const std::vector<std::string>& args, llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> fs,
              clang::FrontendAction& action, std::unique_ptr<llvm::raw_pwrite_stream> output,
              std::string* diagnostics) {
  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const auto& a : args) argv.push_back(a.c_str());

  llvm::raw_string_ostream diag_os(*diagnostics);
  auto diag_opts = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
  auto* printer = new clang::TextDiagnosticPrinter(diag_os, diag_opts.get());
  auto diags = llvm::makeIntrusiveRefCnt<clang::DiagnosticsEngine>(
      llvm::makeIntrusiveRefCnt<clang::DiagnosticIDs>(), diag_opts, printer, /*ShouldOwnClient=*/true);

  auto invocation = std::make_shared<clang::CompilerInvocation>();
  if (!clang::CompilerInvocation::CreateFromArgs(*invocation, argv, *diags)) {
    diag_os.flush();
    *diagnostics = absl::StrCat("invalid clang arguments: ", *diagnostics);
    return false;
  }
  clang::CompilerInstance ci;
  ci.setInvocation(std::move(invocation));
  ci.setDiagnostics(diags.get());
  ci.createFileManager(std::move(fs));
  ci.createSourceManager(ci.getFileManager());
  ci.setVerboseOutputStream(diag_os);  // "N errors generated" goes with the diagnostics
  if (output) ci.setOutputStream(std::move(output));
  const bool ok = ci.ExecuteAction(action) && !diags->hasErrorOccurred();
  diag_os.flush();
  return ok;
}

}  // namespace warpd::compiler::internal

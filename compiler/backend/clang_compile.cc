#include "compiler/backend/clang_compile.h"

#include <clang/CodeGen/CodeGenAction.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/backend/clang_frontend.h"

namespace warpd::compiler {
namespace {

// One compile; `pch` null: parse every header.
absl::StatusOr<std::string> Compile(const CpuTarget& target, std::string_view source, std::string_view name,
                                    const NativePch* pch) {
  auto fs = internal::NativeHeaderFileSystem();
  std::string src_path = absl::StrCat(internal::kSourceRoot, "/", std::string(name), ".cc");
  fs->addFile(src_path, 0, llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(source.data(), source.size()), src_path));

  std::vector<std::string> args = internal::Cc1BaseArgs(target);
  args.insert(args.end(), {"-emit-obj", "-main-file-name", src_path});
  if (pch != nullptr) {
    // Shared, not copied: the PCH outlives this compile (the caller holds
    // it). clang checks that the files it was made from are unchanged.
    const std::string prefix_path = absl::StrCat(internal::kPchRoot, "/prefix.h");
    fs->addFile(prefix_path, 0, llvm::MemoryBuffer::getMemBufferCopy(PchPrefixSource(pch->headers), prefix_path));
    const std::string pch_path = absl::StrCat(internal::kPchRoot, "/native.pch");
    fs->addFile(pch_path, 0, llvm::MemoryBuffer::getMemBuffer(pch->data, pch_path, /*RequiresNullTerminator=*/false));
    args.insert(args.end(), {"-include-pch", pch_path});
  }
  args.insert(args.end(), {"-x", "c++", "-o", "-", src_path});

  llvm::SmallString<0> object;
  llvm::LLVMContext context;
  clang::EmitObjAction action(&context);
  std::string diagnostics;
  if (!internal::RunClang(args, fs, action, std::make_unique<llvm::raw_svector_ostream>(object), &diagnostics))
    return absl::InternalError(absl::StrCat("generated code for '", std::string(name), "' failed to compile:\n", diagnostics));
  return std::string(object.data(), object.size());
}

}  // namespace

std::string_view CppCompileOptions() {
  return "-O2 -vectorize-loops -vectorize-slp -std=c++17 -ffreestanding -fno-exceptions -fno-rtti -fno-math-errno -ffp-contract=off -fPIC";
}

absl::StatusOr<std::string> CompileCppToObject(const CpuTarget& target, std::string_view source,
                                               std::string_view name, NativePchCache* pch_cache) {
  std::shared_ptr<const NativePch> pch;
  if (pch_cache != nullptr) {
    const std::vector<std::string> headers = NativePchCache::LeadingHeaders(source);
    if (!headers.empty()) pch = pch_cache->Get(target, headers);
  }
  if (pch == nullptr) return Compile(target, source, name, nullptr);
  absl::StatusOr<std::string> object = Compile(target, source, name, pch.get());
  if (object.ok()) return object;
  // Generated code that fails to compile is a bug either way; the PCH must
  // not be the reason. Without it, the error (if any) reads as usual.
  absl::StatusOr<std::string> plain = Compile(target, source, name, nullptr);
  if (plain.ok()) {
    pch_cache->Disable(*pch, absl::StrCat("a compile failed with it and succeeded without it. ",
                                          std::string(object.status().message().substr(0, 2000))));
  }
  return plain;
}

}  // namespace warpd::compiler

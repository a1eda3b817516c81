// warpd compiler, internal to compiler/backend: what every clang run of the
// CPU backend shares, so that a precompiled header (native_pch.h) and the
// compiles that use it see the same options, files and diagnostics handling.
//
// clang refuses a PCH whose language, target or preprocessor options differ
// from the compile's; building both argument lists from Cc1BaseArgs keeps
// them identical by construction. Everything here is thread-safe (no shared
// state).
#pragma once

#include <llvm/ADT/IntrusiveRefCntPtr.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/backend/cpu_target.h"

namespace clang {
class FrontendAction;
}

namespace warpd::compiler::internal {

// Where the embedded runtime/native headers live in the in-memory file
// system ("-I" root) and where the backend puts its own files.
inline constexpr char kHeaderRoot[] = "/warpd-native";
inline constexpr char kSourceRoot[] = "/warpd-src";
inline constexpr char kPchRoot[] = "/warpd-pch";

// A fresh in-memory file system holding the embedded runtime/native headers
// under kHeaderRoot (no copies: the buffers point at the embedded text) and
// nothing else, so no system header or install path can be reached.
llvm::IntrusiveRefCntPtr<llvm::vfs::InMemoryFileSystem> NativeHeaderFileSystem();

// The cc1 arguments shared by every run for `target`: triple, CPU and
// features, language and code generation options, the header root. Callers
// append the action (-emit-obj, -emit-pch), -x, output and input.
std::vector<std::string> Cc1BaseArgs(const CpuTarget& target);

// Runs `action` on the invocation made from `args`, reading files from `fs`
// only. `output`, when not null, receives what the action writes (the
// object). Returns true when clang reported no error; *diagnostics gets
// clang's messages either way (an argument clang rejects is an error too).
bool RunClang(const std::vector<std::string>& args, llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> fs,
              clang::FrontendAction& action, std::unique_ptr<llvm::raw_pwrite_stream> output,
              std::string* diagnostics);

}  // namespace warpd::compiler::internal

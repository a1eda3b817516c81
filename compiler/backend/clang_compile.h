// warpd compiler: one generated C++ translation unit -> an ELF object, with
// clang 19 as a library (no clang process, no files).
//
// The source and the embedded runtime/native headers are served from an
// in-memory file system, so nothing on disk (no system header, no install
// path) can be reached; code is compiled freestanding for `target`
// (cpu_target.h). Runs inside a compile worker (compile_worker.h) in the
// daemon; CpuJit::CompileToObject calls it in process for tests and tools.
//
// A source that starts with #include "warpd/native/builtin.h" (and maybe
// more runtime/native includes) loads those headers precompiled from `pch`
// (native_pch.h: built on first use per target and include list); null
// `pch` parses them every time. Either way the object is the same. If a
// compile fails with the PCH but succeeds without it, the result is the
// object made without it, and that PCH is no longer used (logged).
// Thread-safe: each call builds its own CompilerInstance.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "compiler/backend/cpu_target.h"
#include "compiler/backend/native_pch.h"

namespace warpd::compiler {

// The compile options, as text for cache keys.
std::string_view CppCompileOptions();

// A compile error is INTERNAL with clang's diagnostics (generated code that
// fails to compile is warpd's bug, or a bad target). `unit_name` names the
// in-memory file: it must be a plain file name warpd chose, never client text.
absl::StatusOr<std::string> CompileCppToObject(const CpuTarget& target, std::string_view source,
                                               std::string_view unit_name,
                                               NativePchCache* pch = &NativePchCache::Shared());

}  // namespace warpd::compiler

// warpd compiler: C++ code generation from the typed IR (compiler/tir).
//
// Emits one translation unit per module that includes
// "warpd/native/builtin.h" (and the native headers its types and builtins
// need) and holds, per struct, its definition with its layout pinned, and, per kernel, its argument struct (with
// static_asserts pinning the launch ABI), its thread body, a CPU entry point
// (under !WP_CUDA) and a CUDA __global__ entry point (under WP_CUDA); user
// functions become static device functions taking the launch context. The same
// text compiles with clang for the CPU and with NVRTC for CUDA.
//
// A visitor prints each TIR instruction as one statement or block: builtin
// calls with the spelling sema took from the builtin table, element
// addresses through wp::address (which bounds-checks and records faults),
// wp::should_stop at every loop back-edge and after user calls. Nothing is
// resolved or reordered here. Thread-safe (pure function).
#pragma once

#include <string>

#include "common/abi/compiled_module.h"
#include "compiler/tir/tir.h"

namespace warpd::codegen {

std::string GenerateModule(const tir::Module& module);

// Entry point symbols of a kernel.
std::string CpuEntrySymbol(const std::string& kernel);
std::string CudaEntrySymbol(const std::string& kernel);

// The most bytes of parameters a CUDA kernel takes by value
// (abi::kMaxCudaParamBytes, which the runtime reads too).
inline constexpr unsigned kMaxCudaParamBytes = abi::kMaxCudaParamBytes;

}  // namespace warpd::codegen

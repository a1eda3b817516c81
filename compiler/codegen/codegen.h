// warpd compiler: C++ code generation from typed IR.
//
// Emits one translation unit per module that includes only
// "warpd/native/builtin.h" and holds, per kernel, its argument struct (with
// static_asserts pinning the launch ABI), its thread body, a CPU entry point
// (under !WP_CUDA) and a CUDA __global__ entry point (under WP_CUDA); user
// functions become static device functions taking the launch context. The same
// text compiles with clang for the CPU and with NVRTC for CUDA.
//
// Builtin calls are spelled from the builtin table (Overload::cpp); array
// accesses go through wp::address, which bounds-checks and records faults;
// every loop checks wp::should_stop at its back-edge. The module must have
// passed sema::Analyze. Thread-safe (pure function).
#pragma once

#include <string>

#include "compiler/ir/ir.h"

namespace warpd::codegen {

std::string GenerateModule(const ir::Module& module);

// Entry point symbols of a kernel.
std::string CpuEntrySymbol(const std::string& kernel);
std::string CudaEntrySymbol(const std::string& kernel);

}  // namespace warpd::codegen

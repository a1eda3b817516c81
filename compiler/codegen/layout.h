// warpd compiler: computes the launch ABI's argument block layout
// (common/abi/compiled_module.h, docs/launch_abi.md) of a checked kernel.
#pragma once

#include "common/abi/compiled_module.h"
#include "compiler/ir/ir.h"

namespace warpd::compiler {

using abi::KernelLayout;
using abi::ParamLayout;

// `kernel` must have passed sema (tid_ndim is read from it).
KernelLayout ComputeLayout(const ir::Module& module, const ir::Function& kernel);

}  // namespace warpd::compiler

// warpd compiler: the launch ABI's argument block layout (docs/launch_abi.md).
//
// A kernel's parameters are laid out in order as the fields of a C struct:
// each at the next offset aligned to its type's alignment, the total rounded
// up to the largest alignment. Arrays take the 64-byte wp::array_t descriptor.
// Codegen emits the same struct with static_asserts on every offset, so the
// server (which packs argument blocks from this layout) and the generated code
// cannot disagree silently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace warpd::compiler {

struct ParamLayout {
  std::string name;
  ir::TypeRef type = nullptr;
  uint32_t offset = 0;
  uint32_t size = 0;
};

struct KernelLayout {
  std::string name;          // IR name: what launches name
  std::string display_name;  // the user's name, for messages
  std::vector<ParamLayout> params;
  uint32_t args_size = 0;   // bytes, a multiple of args_align (0 without params)
  uint32_t args_align = 1;
  // How many targets wp.tid() is unpacked into; 0 or 1 accept any launch dims.
  int tid_ndim = 0;
  // Where the kernel is defined, for messages.
  std::string file;
  int line = 0;
};

// `kernel` must have passed sema (tid_ndim is read from it).
KernelLayout ComputeLayout(const ir::Module& module, const ir::Function& kernel);

}  // namespace warpd::compiler

// warpd: the kernel ABI between the compiler and the runtime.
//
// What a compiled module is to whoever launches it: per kernel, its argument
// block layout (docs/launch_abi.md) and its CPU entry point, or for a CUDA
// module its PTX and entry names. The compiler
// produces CompiledModules (compiler/compiler.h); runtime/exec packs argument
// blocks from the layouts and calls the entries. Neither side needs the
// other's headers: this one depends only on the type table.
//
// A kernel's parameters are laid out in order as the fields of a C struct:
// each at the next offset aligned to its type's alignment, the total rounded
// up to the largest alignment. Arrays take the 64-byte wp::array_t
// descriptor. Codegen emits the same struct with static_asserts on every
// offset, so the server and the generated code cannot disagree silently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/abi/print_table.h"
#include "common/types/type.h"

namespace wp {
struct launch_ctx;
}

namespace warpd::abi {

// What code a device runs, and so what a module is compiled for.
enum class Target { kCpu, kCuda };

// The most bytes of parameters a CUDA kernel takes by value (CUDA 12.1+ on
// Volta and later). A kernel whose argument block and context pointer need
// more takes `const wpa_K*` instead: the runtime copies the block to device
// memory (docs/launch_abi.md).
inline constexpr uint32_t kMaxCudaParamBytes = 32764;

// launch_ctx::cancel values (0: running).
constexpr int32_t kCancelShutdown = 1;  // the stream was cancelled
constexpr int32_t kCancelTimeout = 2;   // the device's launch time limit passed

struct ParamLayout {
  std::string name;
  types::TypeRef type = nullptr;
  uint32_t offset = 0;
  uint32_t size = 0;
  // Arrays: tir::ArrayAccessBits (read, overwritten, accumulated, and
  // kAccessExclusive below).
  uint8_t access = 0;
};

// ParamLayout::access of a backward module's kernel: the kernel accesses the
// array only at the thread's own element, so an adjoint launch may mark its
// gradient exclusive (docs/launch_abi.md) when no other gradient array of
// the launch shares its memory.
inline constexpr uint8_t kAccessExclusive = 8;

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

// CPU entry point: runs threads [begin, end) of the launch described by ctx.
using CpuKernelFn = void (*)(wp::launch_ctx* ctx, const void* args, int64_t begin, int64_t end);

struct CompiledKernel {
  KernelLayout layout;
  CpuKernelFn cpu_entry = nullptr;
  // The adjoint entry (modules compiled with a backward pass; else null):
  // its argument block is the forward block followed, at layout.args_size,
  // by a block of the same layout holding the parameters' adjoints.
  CpuKernelFn cpu_adjoint = nullptr;
  // Why a backward module's kernel has no adjoint (warpd cannot
  // differentiate a builtin it calls yet); empty otherwise.
  std::string adjoint_error;
  // Calls print()/printf()/expect_near(), itself or in a function it calls:
  // its launches get an output buffer (launch_ctx::output).
  bool may_print = false;
  // CUDA modules: the names of the forward and adjoint __global__ entries
  // in the module's image (docs/launch_abi.md; the adjoint's empty when
  // there is none); empty in CPU modules.
  std::string cuda_entry;
  std::string cuda_adjoint;

  // Whether the kernel has its forward (or adjoint) entry in code for `target`.
  bool HasEntry(Target target, bool adjoint) const {
    if (target == Target::kCuda) return !(adjoint ? cuda_adjoint : cuda_entry).empty();
    return (adjoint ? cpu_adjoint : cpu_entry) != nullptr;
  }
};

// Immutable and shared: launches hold a shared_ptr while they run.
class CompiledModule {
 public:
  virtual ~CompiledModule() = default;
  const std::string& cache_key() const { return cache_key_; }
  const std::vector<CompiledKernel>& kernels() const { return kernels_; }
  // nullptr when the module has no kernel of that name.
  const CompiledKernel* FindKernel(const std::string& name) const {
    for (const auto& k : kernels_)
      if (k.layout.name == name) return &k;
    return nullptr;
  }
  // What the module's print calls print (print_table.h); null when nothing.
  const PrintTable* print_table() const { return print_table_.get(); }

  // Memory the module keeps while it is loaded: its code as the JIT maps it
  // and its layouts and types (an estimate from their sizes). The server
  // charges it to every session holding the module.
  uint64_t memory_bytes() const { return memory_bytes_; }
  // What the module was compiled for; CUDA modules also hold their image
  // (PTX for compute_<cuda_arch()>, without a trailing NUL), which each
  // device loads itself.
  Target target() const { return target_; }
  const std::string& cuda_image() const { return cuda_image_; }
  int cuda_arch() const { return cuda_arch_; }

 protected:
  std::string cache_key_;
  std::vector<CompiledKernel> kernels_;
  // Keeps struct types of the kernels' layouts alive after the ir::Module.
  std::shared_ptr<types::TypeTable> types_;
  std::shared_ptr<const PrintTable> print_table_;
  uint64_t memory_bytes_ = 0;
  Target target_ = Target::kCpu;
  std::string cuda_image_;
  int cuda_arch_ = 0;
};

}  // namespace warpd::abi

// warpd runtime: launching a kernel on a stream, grid-stride style.
//
//   absl::StatusOr<LaunchDims> dims = GridStrideDims(launch_size, kernel_block_dim);
//   KernelArgs args;
//   args.Add(launch_ctx);        // by value: copied in
//   args.Add(args_block_ptr);    // a CUdeviceptr
//   absl::Status s = Launch(stream, function, "wpk_saxpy_cuda", *dims, args);
//
// warpd's CUDA entries loop grid-stride over [0, size) (docs/launch_abi.md),
// so any grid covers any size: GridStrideDims picks blocks of the kernel's
// block_dim (256 when it has none) and enough of them for one thread per
// id, at most 2^31 - 1 (CUDA's grid x limit) or a given cap. Launch queues
// cuLaunchKernel with those dimensions and the argument pointer array; the
// driver copies the argument values at the call, so a KernelArgs may go
// once Launch returns. A launch error names the kernel and the device; a
// fault while the kernel runs (an illegal address, ...) comes from the
// stream's next synchronization and poisons the context (cuda_context.h).
// Thread-safety: GridStrideDims is pure; a KernelArgs is used by one thread;
// Launch as the stream's calls (cuda_stream.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/device/cuda/cuda_stream.h"
#include "runtime/device/cuda/driver_api.h"

namespace warpd::runtime::cuda {

inline constexpr unsigned kDefaultBlockDim = 256;
inline constexpr unsigned kMaxBlockDim = 1024;
inline constexpr uint64_t kMaxGridDimX = 2147483647;  // 2^31 - 1

// A one-dimensional launch: `grid` blocks of `block` threads. grid 0 is an
// empty launch (Launch queues nothing).
struct LaunchDims {
  unsigned grid = 0;
  unsigned block = kDefaultBlockDim;
};

// Dimensions covering `threads` thread ids: blocks of `block_dim` threads
// (0: kDefaultBlockDim), ceil(threads / block) of them, at most
// `max_blocks` (0: kMaxGridDimX); grid-stride loops cover the rest.
// INVALID_ARGUMENT for a block_dim past kMaxBlockDim.
absl::StatusOr<LaunchDims> GridStrideDims(uint64_t threads, unsigned block_dim = 0, unsigned max_blocks = 0);

// A kernel's arguments, in parameter order: each value copied into storage
// that keeps its alignment, and the argument pointer array cuLaunchKernel
// takes.
class KernelArgs {
 public:
  // Appends `size` bytes at `data`, aligned to `alignment` (a power of two;
  // at most alignof(std::max_align_t), which larger ones are clamped to).
  void Add(const void* data, size_t size, size_t alignment);
  template <typename T>
  void Add(const T& value) {
    Add(&value, sizeof(T), alignof(T));
  }

  size_t count() const { return offsets_.size(); }
  // One pointer per argument into this object's storage; valid until the
  // next Add or the object's end.
  void** pointers();

 private:
  std::vector<std::max_align_t> storage_;
  size_t used_ = 0;
  std::vector<size_t> offsets_;
  std::vector<void*> pointers_;
};

// Queues `function` (named `kernel` in errors) on `stream` with `dims` and
// `args`, and `shared_bytes` of dynamic shared memory.
absl::Status Launch(CudaStream& stream, CUfunction function, std::string_view kernel, const LaunchDims& dims,
                    KernelArgs& args, unsigned shared_bytes = 0);

}  // namespace warpd::runtime::cuda

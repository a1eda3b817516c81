#include "runtime/device/cuda/cuda_launch.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace warpd::runtime::cuda {

absl::StatusOr<LaunchDims> GridStrideDims(uint64_t threads, unsigned block_dim, unsigned max_blocks) {
  if (block_dim > kMaxBlockDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("a block of ", block_dim, " threads: CUDA allows at most ", kMaxBlockDim));
  }
  LaunchDims dims;
  dims.block = block_dim == 0 ? kDefaultBlockDim : block_dim;
  const uint64_t cap = max_blocks == 0 ? kMaxGridDimX : std::min<uint64_t>(max_blocks, kMaxGridDimX);
  const uint64_t blocks = threads / dims.block + (threads % dims.block != 0 ? 1 : 0);
  dims.grid = static_cast<unsigned>(std::min(blocks, cap));
  return dims;
}

void KernelArgs::Add(const void* data, size_t size, size_t alignment) {
  alignment = std::clamp<size_t>(alignment, 1, alignof(std::max_align_t));
  const size_t offset = (used_ + alignment - 1) / alignment * alignment;
  used_ = offset + size;
  storage_.resize((used_ + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
  if (size > 0) std::memcpy(reinterpret_cast<char*>(storage_.data()) + offset, data, size);
  offsets_.push_back(offset);
}

void** KernelArgs::pointers() {
  pointers_.resize(offsets_.size());
  for (size_t i = 0; i < offsets_.size(); ++i) pointers_[i] = reinterpret_cast<char*>(storage_.data()) + offsets_[i];
  return pointers_.data();
}

absl::Status Launch(CudaStream& stream, CUfunction function, std::string_view kernel, const LaunchDims& dims,
                    KernelArgs& args, unsigned shared_bytes) {
  if (dims.grid == 0) return absl::OkStatus();
  CudaContext& ctx = stream.context();
  void** params = args.pointers();
  return ctx.Call(absl::StrCat("cuLaunchKernel(", absl::string_view(kernel.data(), kernel.size()), ", ", dims.grid,
                               "x", dims.block, ")"),
                  [&] {
                    return ctx.api().cuLaunchKernel(function, dims.grid, 1, 1, dims.block, 1, 1, shared_bytes,
                                                    stream.get(), args.count() > 0 ? params : nullptr, nullptr);
                  });
}

}  // namespace warpd::runtime::cuda

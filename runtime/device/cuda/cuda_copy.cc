#include "runtime/device/cuda/cuda_copy.h"

#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace warpd::runtime::cuda {

absl::Status CopyHostToDevice(CudaStream& stream, CUdeviceptr dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  CudaContext& ctx = stream.context();
  return ctx.Call("cuMemcpyHtoDAsync", [&] { return ctx.api().cuMemcpyHtoDAsync(dst, src, bytes, stream.get()); });
}

absl::Status CopyDeviceToHost(CudaStream& stream, void* dst, CUdeviceptr src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  CudaContext& ctx = stream.context();
  return ctx.Call("cuMemcpyDtoHAsync", [&] { return ctx.api().cuMemcpyDtoHAsync(dst, src, bytes, stream.get()); });
}

absl::Status CopyDeviceToDevice(CudaStream& stream, CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  CudaContext& ctx = stream.context();
  return ctx.Call("cuMemcpyDtoDAsync", [&] { return ctx.api().cuMemcpyDtoDAsync(dst, src, bytes, stream.get()); });
}

absl::Status Fill(CudaStream& stream, CUdeviceptr dst, const void* pattern, size_t pattern_bytes, size_t count) {
  if (pattern == nullptr || pattern_bytes == 0) return absl::InvalidArgumentError("Fill: an empty pattern");
  if (count == 0) return absl::OkStatus();
  CudaContext& ctx = stream.context();
  const auto* p = static_cast<const unsigned char*>(pattern);
  bool bytes_equal = true;
  for (size_t i = 1; i < pattern_bytes; ++i) bytes_equal = bytes_equal && p[i] == p[0];
  if (bytes_equal) {
    const size_t n = pattern_bytes * count;
    if (n / pattern_bytes != count) return absl::InvalidArgumentError("Fill: the size overflows");
    return ctx.Call("cuMemsetD8Async",
                    [&] { return ctx.api().cuMemsetD8Async(dst, p[0], n, stream.get()); });
  }
  bool words_equal = pattern_bytes % 4 == 0;
  for (size_t i = 4; words_equal && i < pattern_bytes; ++i) words_equal = p[i] == p[i % 4];
  if (words_equal && dst % 4 == 0) {
    uint32_t word;
    std::memcpy(&word, p, 4);
    const size_t n = pattern_bytes / 4 * count;
    if (n / (pattern_bytes / 4) != count) return absl::InvalidArgumentError("Fill: the size overflows");
    return ctx.Call("cuMemsetD32Async", [&] { return ctx.api().cuMemsetD32Async(dst, word, n, stream.get()); });
  }
  return absl::UnimplementedError(absl::StrCat("Fill: a ", pattern_bytes,
                                               "-byte pattern that is not one repeated byte or 4-byte word (at a "
                                               "4-byte aligned address) needs a fill kernel"));
}

}  // namespace warpd::runtime::cuda

#include "runtime/device/cuda/cuda_copy.h"

#include "common/status_macros.h"

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

absl::Status CopyPeer(CudaStream& stream, CUdeviceptr dst, CudaStream& src_stream, CUdeviceptr src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  CudaContext& ctx = stream.context();
  CudaContext& src_ctx = src_stream.context();
  absl::StatusOr<ContextUser> source = src_ctx.AddUser();  // the source's poisoned status, if it is
  if (!source.ok()) return source.status();
  CUresult result = kCudaSuccess;
  {
    absl::StatusOr<ScopedCurrent> current = ctx.MakeCurrent();
    if (!current.ok()) return current.status();
    result = ctx.api().cuMemcpyPeerAsync(dst, ctx.handle(), src, src_ctx.handle(), bytes, stream.get());
  }
  if (result == kCudaSuccess) return absl::OkStatus();
  // The copy also fails when the source's context was lost (a kernel there
  // faulted): then it is the source's error, found by a call of its own,
  // and the destination's context is not marked lost for it.
  WARPD_RETURN_IF_ERROR(src_stream.Synchronize());
  return ctx.Check(result, "cuMemcpyPeerAsync");
}

namespace {

bool BytesEqual(const unsigned char* p, size_t n) {
  for (size_t i = 1; i < n; ++i) {
    if (p[i] != p[0]) return false;
  }
  return true;
}

bool WordsEqual(const unsigned char* p, size_t n) {
  if (n % 4 != 0) return false;
  for (size_t i = 4; i < n; ++i) {
    if (p[i] != p[i % 4]) return false;
  }
  return true;
}

}  // namespace

bool FillWritable(CUdeviceptr dst, const void* pattern, size_t pattern_bytes) {
  if (pattern == nullptr || pattern_bytes == 0) return false;
  const auto* p = static_cast<const unsigned char*>(pattern);
  return BytesEqual(p, pattern_bytes) || (WordsEqual(p, pattern_bytes) && dst % 4 == 0);
}

absl::Status Fill(CudaStream& stream, CUdeviceptr dst, const void* pattern, size_t pattern_bytes, size_t count) {
  if (pattern == nullptr || pattern_bytes == 0) return absl::InvalidArgumentError("Fill: an empty pattern");
  if (count == 0) return absl::OkStatus();
  CudaContext& ctx = stream.context();
  const auto* p = static_cast<const unsigned char*>(pattern);
  if (BytesEqual(p, pattern_bytes)) {
    const size_t n = pattern_bytes * count;
    if (n / pattern_bytes != count) return absl::InvalidArgumentError("Fill: the size overflows");
    return ctx.Call("cuMemsetD8Async",
                    [&] { return ctx.api().cuMemsetD8Async(dst, p[0], n, stream.get()); });
  }
  if (WordsEqual(p, pattern_bytes) && dst % 4 == 0) {
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

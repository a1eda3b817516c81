// warpd runtime: copies and fills of device memory, queued on a stream.
//
//   CopyHostToDevice(stream, dst, host, n);     // host -> device
//   CopyDeviceToDevice(stream, dst, src, n);    // same device
//   CopyDeviceToHost(stream, host, src, n);     // device -> host
//   CopyPeer(stream, dst, src_stream, src, n);  // another GPU -> stream's GPU
//   Fill(stream, dst, &value, sizeof(value), count);
//
// Each queues one driver operation on `stream` (cuMemcpy*Async,
// cuMemsetD8Async/D32Async), ordered with the stream's other work; the
// error names the call and the device. Host memory follows the driver's
// rules: pageable memory is read before CopyHostToDevice returns (so it
// may be reused at once) and written before CopyDeviceToHost returns (the
// driver synchronizes); page-locked memory (cuMemHostAlloc, as the staging
// ring's) is read or written when the stream reaches the copy, so it must
// stay until then. Large host copies go through PinnedStagingRing
// (pinned_staging.h), which overlaps the host and device halves. Zero bytes
// queue nothing. Every call fails fast once the context is poisoned.
// CopyPeer copies from another GPU's memory (cuMemcpyPeerAsync: over
// NVLink or PCIe peer to peer where the GPUs can, else the driver stages it
// through host memory); the stream is the destination's, and the source's
// earlier work must be done (warpd's commands return when their work is).
// Thread-safety: as the stream's (cuda_stream.h).
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "runtime/device/cuda/cuda_stream.h"
#include "runtime/device/cuda/driver_api.h"

namespace warpd::runtime::cuda {

absl::Status CopyHostToDevice(CudaStream& stream, CUdeviceptr dst, const void* src, size_t bytes);
absl::Status CopyDeviceToHost(CudaStream& stream, void* dst, CUdeviceptr src, size_t bytes);
absl::Status CopyDeviceToDevice(CudaStream& stream, CUdeviceptr dst, CUdeviceptr src, size_t bytes);
// `src_stream`: an idle stream of the source's context, synchronized to
// tell whose error a failed copy is.
absl::Status CopyPeer(CudaStream& stream, CUdeviceptr dst, CudaStream& src_stream, CUdeviceptr src, size_t bytes);

// Writes `count` copies of the `pattern_bytes`-byte value at `pattern` from
// `dst` on: with cuMemsetD8Async when all its bytes are equal, else with
// cuMemsetD32Async when it repeats one 4-byte word and `dst` is 4-byte
// aligned. Other patterns (a vec3 of distinct floats, ...) need a fill
// kernel: UNIMPLEMENTED. INVALID_ARGUMENT for an empty pattern.
absl::Status Fill(CudaStream& stream, CUdeviceptr dst, const void* pattern, size_t pattern_bytes, size_t count);
// Whether Fill can write `pattern` at `dst` with a memset (one repeated
// byte, or one repeated 4-byte word at a 4-byte aligned address); else it
// answers UNIMPLEMENTED (a fill kernel's job).
bool FillWritable(CUdeviceptr dst, const void* pattern, size_t pattern_bytes);

}  // namespace warpd::runtime::cuda

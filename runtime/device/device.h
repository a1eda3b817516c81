// warpd runtime: the devices a daemon runs work on.
//
// A Device describes itself (DeviceInfo, what GetServerInfo reports) and
// offers the execution primitive of its kind: CpuDevice a parallel-for over
// a worker pool (cpu_device.h); a CudaDevice will offer driver streams.
// It also moves array bytes (Upload, Download, Copy, Fill): the command
// executor, transfers, CreateArray's contents and persistence read and write
// array memory only through these, so a device whose memory the host cannot
// address is one more implementation, not branches in exec/ or server/.
// Devices live as long as the daemon; they are shared by all sessions.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/abi/compiled_module.h"
#include "runtime/memory/segment_pool.h"
#include "runtime/objects/array_memory.h"

namespace warpd::runtime {

class Array;         // runtime/objects/array.h
class WorkRecorder;  // recorded_work.h

// A launch's grid on a GPU (Warp's wp.launch block_dim and max_blocks;
// Device::RunKernel).
struct LaunchShape {
  uint32_t block_dim = 0;   // threads per block; 0: the device's default (256)
  uint32_t max_blocks = 0;  // the most blocks; 0: the device's own bound
  static constexpr uint32_t kMaxBlockDim = 1024;  // CUDA's threads per block
};

struct DeviceInfo {
  std::string name;   // "cpu", "cuda:0"
  std::string alias;  // CPU model or GPU name
  std::string kind;   // "cpu" or "cuda"
  std::string arch;   // "x86_64", "sm_90"
  std::string uuid;
  uint64_t memory_bytes = 0;
  int sm_count = 0;  // a GPU's streaming multiprocessors; 0 for the CPU
  // A GPU's pools: bytes kept reserved across synchronizations.
  uint64_t mempool_release_threshold = 0;
  // Why the device cannot run work (arrays, launches); "" when it can. A
  // GPU the driver reports is listed before warpd can run anything on it.
  std::string unavailable;
};


// One batched GEMM for Device::Gemm: d <- alpha * (a @ b) + beta * d for
// each of `batch` items, a (m, k), b (k, n) and d (m, n) as matrices. Each
// operand is at a device address, row-major (rows `ld` elements apart,
// elements adjacent) or column-major (columns `ld` apart), its batch items
// `batch_stride` elements apart. Extents and leading dimensions fit int32.
struct GemmOperand {
  uint64_t address = 0;
  bool col_major = false;
  int64_t ld = 1;
  int64_t batch_stride = 0;
};
struct GemmSpec {
  enum class Type { kFloat16, kFloat32, kFloat64 };  // float16 computes in float32
  Type type = Type::kFloat32;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  double alpha = 1.0, beta = 0.0;  // beta 0: d is not read
  GemmOperand a, b, d;
};

// The operations the rest of the runtime and the server use; nothing
// downcasts to a device kind. Objects built for a device use its memory
// through ArrayMemory (runtime/objects/array_memory.h).
class Device : public ArrayMemory {
 public:
  ~Device() override = default;
  virtual const DeviceInfo& info() const = 0;
  const std::string& name() const { return info().name; }

  // What modules for this device are compiled for.
  virtual abi::Target target() const = 0;

  // Memory the device could still give now (the host's available memory for
  // the CPU), at the time of the call; 0 when it is not known.
  virtual uint64_t FreeMemoryBytes() const { return 0; }

  // Whether the device can run work now: a GPU whose context a kernel's
  // hardware fault lost cannot until Recover brings it back (the daemon's
  // health service reports each device, server/device_health.h). Recover
  // is OK for a healthy device, else it tries and says what is in the way.
  virtual bool healthy() const { return true; }
  virtual absl::Status Recover() { return absl::OkStatus(); }

  // Memory of `bytes` for an array on this device, taken from `pool` (the
  // session's; it charges the session's memory account, so the bytes count
  // against every limit above it): zero-filled, or with Fill::kAny possibly
  // holding what the same pool's freed memory held. `tag` labels the memory.
  // FAILED_PRECONDITION when `pool` is null.
  absl::StatusOr<std::shared_ptr<Buffer>> Allocate(uint64_t bytes, std::string_view tag, SegmentPool* pool,
                                                   Fill fill = Fill::kZero) override = 0;

  // As Allocate, for memory a local client of the session may map (a plain
  // array's elements, never a descriptor or an object's buffers): on a GPU,
  // from the session's own exportable pool (ExportMemory). The CPU's
  // sharing is the pool's business (segment_pool.h): Allocate.
  virtual absl::StatusOr<std::shared_ptr<Buffer>> AllocateShareable(uint64_t bytes, std::string_view tag,
                                                                    SegmentPool* pool, Fill fill = Fill::kZero) {
    return Allocate(bytes, tag, pool, fill);
  }

  // What a process on this host needs to map `buffer` (CUDA IPC: the fd of
  // its pool, the 64 bytes naming the allocation), when AllocateShareable
  // took it from `owner` (the session's pool for this device); FAILED_
  // PRECONDITION for any other memory, UNIMPLEMENTED where the device
  // cannot export.
  struct MemoryExport {
    int fd = -1;                // the caller's to close
    std::string allocation;     // the allocation's export data (opaque bytes)
    uint64_t pool_serial = 0;   // the pool, among this daemon's
    std::string device_uuid;    // "GPU-...": the device, as any process of the host names it
  };
  virtual absl::StatusOr<MemoryExport> ExportMemory(const Buffer& buffer, const SegmentPool& owner) {
    (void)buffer;
    (void)owner;
    return absl::UnimplementedError(absl::StrCat(name(), " memory is not exported this way"));
  }

  // Runs every thread of the launch `ctx` describes (ctx->bounds) with
  // `kernel`'s entry point for this device (`module`, which holds it, was
  // compiled for this device's target) and returns when all have run or
  // stopped: once ctx records a fault or a cancel, threads not yet started
  // are skipped. A launch that runs longer than launch_time_limit() is
  // cancelled with ctx->cancel = abi::kCancelTimeout. The caller turns
  // ctx's fault and cancel into a status; this returns an error only when
  // the device cannot run the kernel at all. `pass` picks the entry: the
  // forward one, or the adjoint (CompiledKernel::cpu_adjoint, cuda_adjoint;
  // its argument block holds the adjoints' block after the forward one).
  // `shape`: Warp's block_dim and max_blocks of the launch (wp.launch), which
  // a GPU takes for its grid and the CPU ignores, as Warp's CPU does.
  enum class Pass { kForward, kAdjoint };
  using LaunchShape = runtime::LaunchShape;
  virtual absl::Status RunKernel(const abi::CompiledModule& module, const abi::CompiledKernel& kernel,
                                 wp::launch_ctx* ctx, const void* args, Pass pass = Pass::kForward,
                                 const LaunchShape& shape = {}) = 0;
  // Zero: no limit.
  virtual absl::Duration launch_time_limit() const = 0;

  // A recorder of launches, copies and fills to replay as one unit
  // (recorded_work.h); UNIMPLEMENTED (the default) where the device replays
  // them one by one as well.
  virtual absl::StatusOr<std::unique_ptr<WorkRecorder>> RecordWork();
  // A recorder of a stream's queued launches, copies and fills to run once
  // as one unit (recorded_work.h): issued back to back, one wait at the
  // end. UNIMPLEMENTED (the default) where a stream runs its commands one
  // by one (the CPU, whose commands run where they are called).
  virtual absl::StatusOr<std::unique_ptr<WorkRecorder>> BatchWork();
  // Whether BatchWork can succeed here (asked once per stream).
  virtual bool BatchesWork() const { return false; }

  // Runs `spec` on the device's own BLAS and returns when it is done; a
  // non-zero *cancel (relaxed atomics; the caller's Cancel) or the launch
  // time limit (which sets *cancel to abi::kCancelTimeout) ends the wait,
  // as for a kernel. UNIMPLEMENTED (the default) where the host computes
  // matmuls itself (the CPU: exec/matmul.h).
  virtual absl::Status Gemm(const GemmSpec& spec, int32_t* cancel);

  // Calls fn(begin, end) over chunks of `grain` ids covering [0, n) on the
  // host threads that run this device's work, and returns when all have
  // returned: for commands that run host code over device memory (matmul).
  // The CPU device uses its worker pool (shared fairly with launches,
  // thread_pool.h); the default runs everything on the calling thread. fn
  // must be safe to call from several threads at once.
  virtual void HostParallelFor(int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn) {
    if (n > 0) fn(0, n);
  }

  // Moving array bytes. Offsets and lengths count an array's logical bytes
  // (runtime/objects/array_bytes.h): its elements in row-major order, so a
  // strided view reads and writes as the packed array NumPy would make of
  // it. Each returns when the bytes have moved; the caller orders it with
  // the array's other users (the session's stream on the device has drained,
  // or the operation is a command on that stream). Bytes are moved as they
  // are, whatever the dtype: callers keep array descriptors (array_members.h)
  // from being forged or revealed. Errors, before any byte moves:
  // INVALID_ARGUMENT for an array of another device (or a fill whose length
  // is not a multiple of a non-empty pattern), OUT_OF_RANGE for a range not
  // within the array's size_bytes(). Copy and Fill stop early, with
  // CANCELLED, once `*cancel` is set (a strided walk checks it every few
  // thousand runs; the bytes moved until then stay). Zero bytes: OK.

  // All of `src`, an array of device `from` (another device), -> all of
  // `dst` (this device's, the same size), device to device where the two
  // can (GPUs: cuMemcpyPeerAsync); UNIMPLEMENTED where they cannot (the
  // caller moves the bytes through the host then).
  virtual absl::Status CopyFromDevice(const Array& dst, Device& from, const Array& src,
                                      const std::atomic<bool>* cancel) {
    (void)dst;
    (void)from;
    (void)src;
    (void)cancel;
    return absl::UnimplementedError("no device to device copy here");
  }

  // Host `bytes` -> logical bytes [offset, offset + bytes.size()) of `dst`.
  absl::Status Upload(const Array& dst, uint64_t offset, absl::Span<const std::byte> bytes) override = 0;
  // Logical bytes [offset, offset + out.size()) of `src` -> host `out`.
  absl::Status Download(const Array& src, uint64_t offset, absl::Span<std::byte> out) override = 0;
  // Logical bytes [dst_offset, dst_offset + n) of `dst` <- [src_offset,
  // src_offset + n) of `src`, both on this device. Two contiguous ranges
  // may overlap (a memmove); otherwise, as in Warp, overlapping memory gets
  // an unspecified mix.
  virtual absl::Status CopyRange(const Array& dst, uint64_t dst_offset, const Array& src, uint64_t src_offset,
                            uint64_t n, const std::atomic<bool>* cancel = nullptr) = 0;
  // Logical bytes [offset, offset + n) of `array` <- `pattern` repeated:
  // byte offset + i gets pattern[i % pattern.size()]. n must be a multiple
  // of pattern.size() (a fill of elements passes one element).
  virtual absl::Status FillRange(const Array& array, uint64_t offset, uint64_t n, std::string_view pattern,
                            const std::atomic<bool>* cancel = nullptr) = 0;

 protected:
  // The errors above: `array` on this device, [offset, offset + n) within
  // it; `op` names the operation in the message.
  absl::Status CheckRange(const Array& array, uint64_t offset, uint64_t n, const char* op) const;
};

}  // namespace warpd::runtime

// warpd runtime: a GPU as a Device.
//
// The daemon lists every GPU the driver reports ("cuda:N", its name, arch,
// UUID and memory) so clients see the node's devices. A device made with
// the constructor is listed only: DeviceInfo::unavailable says why it
// cannot run work, and every operation fails FAILED_PRECONDITION naming
// the device and pointing at "cpu". That is what the daemon makes without
// --cuda-execution (the CUDA path has not run on a real GPU yet).
//
// A device made by Open has its memory (cuda/cuda_memory.h,
// cuda_buffer.h): Allocate gives stream-ordered device memory, always
// zeroed (the pool is shared by every session, so freed memory may hold
// another's bytes), charged to the session pool's account; Upload and Download go through the pinned
// staging ring; CopyRange and FillRange run on the device. Each runs on a
// stream of its own (cuda/stream_pool.h; allocations, frees and zeroing
// are ordered on the memory stream) and returns once the bytes have moved
// (it synchronizes that stream), so errors surface in the call, and one
// session's long kernel holds up no other operation. Strided views (array_view.h) move through the host:
// the bytes their elements span are staged, packed or unpacked there with
// array_bytes.h, and written back (a strided upload or fill rewrites the
// spanned bytes it did not change, in the stream's order); that host memory
// is the daemon's, so an operation staging more than
// Options::max_staged_bytes (256 MiB) is UNIMPLEMENTED.
//
// RunKernel runs a kernel of a module compiled for CUDA (its PTX, loaded
// on this device the first time a launch needs it and kept, up to
// kMaxLoadedModules, by cache key): the launch context goes to device
// memory beside the kernel's print records (and its argument block when it
// does not fit CUDA's parameter space, docs/launch_abi.md), the entry runs
// grid-stride in blocks of 256 on a stream of its own, and once the stream
// has synchronized the context's fault record and print counters, and the
// records, are read back into `ctx`. While the kernel runs, RunKernel polls
// its stream and watches ctx->cancel: a cancel there (the launch command's
// Cancel), or LaunchOptions::time_limit passing (then ctx->cancel =
// abi::kCancelTimeout, as the CPU device's watchdog sets), is written into
// the device's copy of the context over the control stream, and the
// kernel's threads stop at their next loop back-edge (docs/launch_abi.md).
// A kernel still running LaunchOptions::cancel_grace after that loses the
// device (its context is marked lost, as a hardware fault would): it holds
// the GPU, and nothing short of a context reset takes it off. Not yet:
// object queries (a launch with objects is UNIMPLEMENTED), asynchronous
// per-session streams (every operation waits for its work). Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/device/cuda/cublas.h"
#include "runtime/device/cuda/cuda_buffer.h"
#include "runtime/device/cuda/cuda_module.h"
#include "runtime/device/cuda/cuda_device_info.h"
#include "runtime/device/cuda/cuda_launch.h"
#include "runtime/device/cuda/cuda_driver.h"
#include "runtime/device/cuda/cuda_event.h"
#include "runtime/device/device.h"

namespace warpd::runtime {

// How a CudaDevice bounds its launches (see the file comment).
struct CudaLaunchOptions {
  // A launch running longer is cancelled (zero: no limit; the daemon's
  // --kernel-timeout, as for the CPU device).
  absl::Duration time_limit = absl::ZeroDuration();
  // How long a cancelled kernel has to stop before the device is lost.
  absl::Duration cancel_grace = absl::Seconds(10);
  // A GEMM is queued in chunks of at most this many multiply-adds, each
  // waited for (cuda_gemm.cc): about a tenth of a second of float64 on a
  // small GPU, well within the cancel grace.
  double gemm_chunk_macs = double(uint64_t{1} << 38);
};

class CudaDevice final : public Device {
 public:
  // Why a listed GPU cannot run work yet.
  static constexpr const char* kNotYet =
      "CUDA execution is not enabled on this warpd (the daemon's --cuda-execution, experimental): arrays and "
      "launches run on \"cpu\"";

  // Listed only (see above).
  explicit CudaDevice(const cuda::CudaDeviceInfo& gpu);
  using LaunchOptions = CudaLaunchOptions;
  // With its memory: CudaMemory::Open's errors.
  static absl::StatusOr<std::unique_ptr<CudaDevice>> Open(const cuda::CudaDriver& driver,
                                                          const cuda::CudaDeviceInfo& gpu,
                                                          const cuda::CudaMemory::Options& options,
                                                          const LaunchOptions& launch = {});

  const DeviceInfo& info() const override { return info_; }
  abi::Target target() const override { return abi::Target::kCuda; }
  // The pool's free bytes under its quota, else 0 (not known).
  uint64_t FreeMemoryBytes() const override;
  // False once a kernel's hardware fault (an illegal address, ...) lost
  // the device's CUDA context: every operation then fails
  // FAILED_PRECONDITION naming the first error. Recover resets the primary
  // context and opens the device's memory anew, once no array of the old
  // context, running operation or launch is left (FAILED_PRECONDITION
  // saying what is left otherwise); a failed reset or reopen leaves the
  // device failing every operation with that error, and Recover tries again.
  bool healthy() const override;
  absl::Status Recover() override;
  // `pool` is the session's: only its account is used, charged the bytes.
  absl::StatusOr<std::shared_ptr<Buffer>> Allocate(uint64_t bytes, std::string_view tag, SegmentPool* pool,
                                                   Fill fill = Fill::kZero) override;
  // From the session's exportable pool (cuda/cuda_memory.h SessionPool).
  absl::StatusOr<std::shared_ptr<Buffer>> AllocateShareable(uint64_t bytes, std::string_view tag, SegmentPool* pool,
                                                            Fill fill = Fill::kZero) override;
  absl::StatusOr<MemoryExport> ExportMemory(const Buffer& buffer, const SegmentPool& owner) override;
  // From another GPU of this daemon, contiguous arrays only (cuMemcpyPeerAsync
  // on one of this device's streams); UNIMPLEMENTED otherwise.
  absl::Status CopyFromDevice(const Array& dst, Device& from, const Array& src,
                              const std::atomic<bool>* cancel) override;
  absl::Status RunKernel(const abi::CompiledModule& module, const abi::CompiledKernel& kernel, wp::launch_ctx* ctx,
                         const void* args, Pass pass = Pass::kForward, const LaunchShape& shape = {}) override;
  // Modules kept loaded; past it, a module no launch is using is unloaded.
  static constexpr size_t kMaxLoadedModules = 256;
  size_t loaded_modules() const;
  absl::Duration launch_time_limit() const override { return launch_.time_limit; }
  // Stream capture into a CUDA graph (cuda_work_recorder.cc).
  absl::StatusOr<std::unique_ptr<WorkRecorder>> RecordWork() override;
  absl::StatusOr<std::unique_ptr<WorkRecorder>> BatchWork() override;
  bool BatchesWork() const override { return true; }
  // cuBLAS (cuda/cublas.h; cuda_gemm.cc), one call at a time per device.
  absl::Status Gemm(const GemmSpec& spec, int32_t* cancel) override;
  absl::Status Upload(const Array& dst, uint64_t offset, absl::Span<const std::byte> bytes) override;
  absl::Status Download(const Array& src, uint64_t offset, absl::Span<std::byte> out) override;
  absl::Status CopyRange(const Array& dst, uint64_t dst_offset, const Array& src, uint64_t src_offset, uint64_t n,
                         const std::atomic<bool>* cancel = nullptr) override;
  absl::Status FillRange(const Array& array, uint64_t offset, uint64_t n, std::string_view pattern,
                         const std::atomic<bool>* cancel = nullptr) override;

 private:
  CudaDevice(const cuda::CudaDeviceInfo& gpu, const cuda::CudaDriver* driver, const cuda::CudaMemory::Options& options,
             const LaunchOptions& launch, std::shared_ptr<cuda::CudaMemory> memory);
  friend class CudaRecordedWork;  // cuda_work_recorder.cc
  friend class CudaBatchedWork;
  friend class CudaWorkRecorder;
  friend class CudaWorkIssuer;
  // Waits for the kernels just queued on `stream`, whose launch contexts
  // are at device addresses `device_ctxs`: a non-zero *cancel_cell (read
  // with relaxed atomics; set to abi::kCancelTimeout once `limit` passes,
  // zero: none) is written to each, and a kernel that does not stop within
  // the cancel grace loses the context (see the file comment). `what`
  // names them in errors ("kernel 'inc'").
  //
  // With `marks` (a batch: the event recorded after each kernel run, and
  // the time that run may take), the time limit restarts as each run
  // completes: mark i's budget runs from mark i-1's completion (the first's
  // from the call), and `limit` after the last; once it passes, *late is
  // the index of the mark not reached (marks.size(): none; a run's budget
  // is `limit`, so each run gets as long as one by one).
  struct KernelMark {
    cuda::CudaEvent* done;
    absl::Duration budget;
  };
  absl::Status AwaitWork(cuda::CudaMemory& m, cuda::CudaStream& stream, int32_t* cancel_cell,
                         absl::Span<const cuda::CUdeviceptr> device_ctxs, absl::Duration limit,
                         const std::string& what, absl::Span<const KernelMark> marks = {},
                         size_t* late = nullptr);
  absl::Status NotYet() const;
  // A launch's grid: one thread per id up to this many blocks (32 per SM:
  // a few waves of resident blocks), past it each thread loops over ids
  // (wp::grid_stride), polling for faults and cancels once per 32 of them.
  absl::StatusOr<std::shared_ptr<Buffer>> AllocateFrom(uint64_t bytes, SegmentPool* pool, bool shareable);
  unsigned MaxBlocks() const { return info_.sm_count > 0 ? unsigned(info_.sm_count) * 32 : 0; }
  // The grid of a launch of `threads` ids: the launch's block_dim (else 256)
  // and its max_blocks (else MaxBlocks()).
  absl::StatusOr<cuda::LaunchDims> GridFor(uint64_t threads, const LaunchShape& shape) const {
    return cuda::GridStrideDims(threads, shape.block_dim, shape.max_blocks != 0 ? shape.max_blocks : MaxBlocks());
  }
  // A launch's kernel entry on this device, for RunKernel and the work
  // recorder: the entry's name for `pass` (INVALID_ARGUMENT for a module not
  // compiled for CUDA, INTERNAL without the pass's entry); the argument
  // block's bytes (an adjoint's: both blocks) and whether it goes by pointer
  // (past the parameter space); the parameters after the context: the block
  // by value from `block` (a kernel without parameters takes a placeholder
  // int32 per block), or `block_address`.
  absl::StatusOr<std::string> EntryFor(const abi::CompiledModule& module, const abi::CompiledKernel& kernel,
                                       Pass pass) const;
  static uint64_t BlockBytes(const abi::KernelLayout& layout, bool adjoint) {
    return adjoint ? 2 * uint64_t{layout.args_size} : uint64_t{layout.args_size};
  }
  static bool BlockByPointer(uint64_t block_bytes) { return block_bytes + sizeof(void*) > abi::kMaxCudaParamBytes; }
  static void AddBlockParams(cuda::KernelArgs& params, const abi::KernelLayout& layout, bool adjoint,
                             const void* block, bool by_pointer, cuda::CUdeviceptr block_address);
  // The device's memory now, held for one operation; FAILED_PRECONDITION
  // when it has none (listed only, or lost and not reopened).
  absl::StatusOr<std::shared_ptr<cuda::CudaMemory>> Memory() const;
  // UNIMPLEMENTED past options_.max_staged_bytes of host staging for `op`.
  absl::Status CheckStaged(uint64_t bytes, const char* op) const;
  // Logical bytes of a strided array through a host copy of the bytes it spans.
  // Each runs its work on `stream` (an operation's own, stream_pool.h).
  absl::Status StridedRead(cuda::CudaMemory& m, cuda::CudaStream& stream, const Array& src, uint64_t offset,
                           absl::Span<std::byte> out);
  absl::Status StridedWrite(cuda::CudaMemory& m, cuda::CudaStream& stream, const Array& dst, uint64_t offset,
                            absl::Span<const std::byte> in);
  // Device bytes [dst, dst + n) <- [src, src + n), any overlap allowed.
  absl::Status MoveDeviceBytes(cuda::CudaMemory& m, cuda::CudaStream& stream, uint64_t dst, uint64_t src, uint64_t n);
  // Device bytes [dst, dst + n) <- `pattern` repeated (n a multiple of it).
  absl::Status FillDeviceBytes(cuda::CudaMemory& m, cuda::CudaStream& stream, uint64_t dst, uint64_t n,
                               std::string_view pattern);
  // `module`'s image loaded on this device (once per cache key).
  absl::StatusOr<std::shared_ptr<const cuda::CudaModule>> LoadedModule(cuda::CudaMemory& m,
                                                                       const abi::CompiledModule& module);

  DeviceInfo info_;
  const cuda::CudaDriver* const driver_;  // null: listed only
  const int ordinal_;
  const cuda::CudaMemory::Options options_;
  const LaunchOptions launch_;
  mutable absl::Mutex mu_;
  std::shared_ptr<cuda::CudaMemory> memory_ ABSL_GUARDED_BY(mu_);  // null: listed only, or lost
  absl::Status lost_ ABSL_GUARDED_BY(mu_);  // why the memory could not be reopened
  // The cuBLAS handle of memory_'s context, made by the first Gemm;
  // dropped before a context reset (Recover). Declared after memory_, so
  // destroyed before it.
  absl::Mutex blas_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::unique_ptr<cuda::CublasHandle> blas_ ABSL_GUARDED_BY(blas_mu_);
  mutable absl::Mutex modules_mu_;
  // Destroyed before memory_ (its context must outlive them).
  absl::flat_hash_map<std::string, std::shared_ptr<const cuda::CudaModule>> modules_ ABSL_GUARDED_BY(modules_mu_);
};

}  // namespace warpd::runtime

// warpd runtime: a CUDA stream of one device (RAII).
//
//   absl::StatusOr<CudaStream> stream = CudaStream::Create(ctx);  // a session's stream
//   ... queue copies, launches, event records on stream->get() ...
//   absl::Status done = stream->Synchronize();
//
// A stream of the device's primary context, made non-blocking
// (CU_STREAM_NON_BLOCKING): it never synchronizes with the legacy NULL
// stream, so one session's work does not wait on another's. Work queued on
// it runs in order; Query and Synchronize report the first error of that
// work (a sticky one poisons the context, cuda_context.h). Every call fails
// fast once the context is poisoned.
//
// Ownership: move-only; holds a ContextUser, so the CudaContext must
// outlive it and cannot be reset while it exists. Destroying it destroys
// the stream (cuStreamDestroy: work already queued still completes, as the
// driver promises; nothing is called on a poisoned context).
// Thread-safety: the driver's stream calls are thread-safe, so the methods
// may be called from several threads, but the order of work that threads
// queue concurrently is theirs to arrange; moving or destroying it must not
// race with other calls.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/device/cuda/cuda_context.h"
#include "runtime/device/cuda/driver_api.h"

namespace warpd::runtime::cuda {

class CudaEvent;

class CudaStream {
 public:
  // cuStreamCreate in `ctx`'s primary context.
  static absl::StatusOr<CudaStream> Create(CudaContext& ctx);

  CudaStream(CudaStream&& other) noexcept;
  CudaStream& operator=(CudaStream&& other) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream();

  // Waits for all work queued so far; its first error.
  absl::Status Synchronize();
  // true once all work queued so far has completed, false while some is
  // pending; the error of failed work.
  absl::StatusOr<bool> Query();
  // Work queued after this waits for the work before `event`'s latest
  // record (nothing, if never recorded).
  absl::Status WaitEvent(const CudaEvent& event);

  CUstream get() const { return stream_; }
  CudaContext& context() const { return *user_.context(); }

 private:
  CudaStream(ContextUser user, CUstream stream) : user_(std::move(user)), stream_(stream) {}
  void Destroy();

  ContextUser user_;
  CUstream stream_ = nullptr;  // null once moved from
};

}  // namespace warpd::runtime::cuda

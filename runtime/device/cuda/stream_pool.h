// warpd runtime: the streams a GPU's operations run on, lent one at a time.
//
//   absl::StatusOr<StreamPool::Lease> s = pool.Acquire();
//   ... queue a kernel (or copies) on s->stream(), wait for it ...
//   // the lease's destructor returns the stream for the next operation
//
// Every CudaDevice operation that runs on the GPU (a kernel, a copy, a fill,
// a transfer) takes a stream of its own for its duration, so one session's
// long kernel delays neither another's kernels nor anyone's allocations and
// transfers (which a single device stream would queue behind it), and
// kernels of different sessions run concurrently as the GPU allows. An
// operation returns only once its work is done (cuda_device.h), so nothing
// is ordered across leases and a returned stream is idle.
//
// Idle streams are kept (at most `max_idle`, the rest destroyed on return);
// a new one is made when none is idle. The number lent at once is bounded by
// the threads that run device operations (scheduler and RPC threads).
// Ownership: a CudaMemory member (the streams hold ContextUsers, so the pool
// goes before a context reset); a Lease must not outlive its pool.
// Thread-safe.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "runtime/device/cuda/cuda_context.h"
#include "runtime/device/cuda/cuda_event.h"
#include "runtime/device/cuda/cuda_stream.h"

namespace warpd::runtime::cuda {

class StreamPool {
 public:
  // A pooled stream and the two timing events kept with it (made on first
  // use), so timing an operation (CudaWorkTimer) creates no events.
  struct Pooled {
    std::unique_ptr<CudaStream> stream;
    std::unique_ptr<CudaEvent> start, end;
    // Events without timing that mark where a batch's kernel runs end
    // (CudaDevice::AwaitWork's marks): at most kKeptMarks stay with it.
    std::vector<CudaEvent> marks;
  };
  static constexpr size_t kKeptMarks = 4096;

  class Lease {
   public:
    Lease(Lease&& other) noexcept : pool_(other.pool_), item_(std::move(other.item_)) { other.pool_ = nullptr; }
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease() {
      if (pool_ != nullptr && item_.stream != nullptr) pool_->Return(std::move(item_));
    }
    CudaStream& stream() const { return *item_.stream; }
    // The stream's two timing events (start, end), made on the first call
    // of any lease of this stream; cuEventCreate's error.
    absl::StatusOr<std::pair<CudaEvent*, CudaEvent*>> TimingEvents();
    // `n` events without timing (the stream's, made as needed; those past
    // kKeptMarks go when the stream is returned); cuEventCreate's error.
    absl::StatusOr<absl::Span<CudaEvent>> MarkEvents(size_t n);

   private:
    friend class StreamPool;
    Lease(StreamPool* pool, Pooled item) : pool_(pool), item_(std::move(item)) {}
    StreamPool* pool_;
    Pooled item_;
  };

  explicit StreamPool(CudaContext& ctx, size_t max_idle = 16) : ctx_(ctx), max_idle_(max_idle) {}
  StreamPool(const StreamPool&) = delete;
  StreamPool& operator=(const StreamPool&) = delete;

  // An idle stream, or a new one (cuStreamCreate's error).
  absl::StatusOr<Lease> Acquire() ABSL_LOCKS_EXCLUDED(mu_);
  // Streams made so far (for tests and diagnostics).
  size_t created() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t idle() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Return(Pooled item) ABSL_LOCKS_EXCLUDED(mu_);

  CudaContext& ctx_;
  const size_t max_idle_;
  mutable absl::Mutex mu_;
  std::vector<Pooled> idle_ ABSL_GUARDED_BY(mu_);
  size_t created_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace warpd::runtime::cuda

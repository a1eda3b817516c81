// warpd runtime: a CUDA event of one device (RAII), for ordering streams
// and for measuring device time.
//
//   absl::StatusOr<CudaEvent> start = CudaEvent::Create(ctx), end = CudaEvent::Create(ctx);
//   start->Record(stream); ... queue a turn's work ...; end->Record(stream);
//   end->Synchronize();
//   absl::StatusOr<absl::Duration> t = CudaEvent::Elapsed(*start, *end);  // device time of the turn
//
// An event marks a point in a stream's work: Record places it, Query and
// Synchronize see whether the work before it has completed, and another
// stream can wait for it (CudaStream::WaitEvent). With Timing::kOn (the
// default) completed records carry a device timestamp, and Elapsed measures
// the device time between two of them (resolution about 0.5 us): what the
// scheduler charges a turn, where wall time would measure only the enqueue.
// Timing::kOff events are cheaper, for pure ordering. Every call fails fast
// once the context is poisoned.
//
// Ownership: move-only; holds a ContextUser (the CudaContext outlives it
// and is not reset while it exists). Destroying it while a record is
// pending is allowed (the driver completes it). Thread-safety: as
// CudaStream's.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/device/cuda/cuda_context.h"
#include "runtime/device/cuda/driver_api.h"

namespace warpd::runtime::cuda {

class CudaStream;

class CudaEvent {
 public:
  enum class Timing { kOn, kOff };

  // cuEventCreate in `ctx`'s primary context.
  static absl::StatusOr<CudaEvent> Create(CudaContext& ctx, Timing timing = Timing::kOn);

  CudaEvent(CudaEvent&& other) noexcept;
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent();

  // Records the event after the work queued on `stream` so far (a stream of
  // the same context).
  absl::Status Record(CudaStream& stream);
  // Waits until the work before the latest record has completed (at once
  // if never recorded); its error.
  absl::Status Synchronize();
  // true once the work before the latest record has completed.
  absl::StatusOr<bool> Query();

  // The device time from `start`'s latest record to `end`'s; both must have
  // timing, be recorded and complete (FAILED_PRECONDITION without timing;
  // cuEventElapsedTime's error, e.g. CUDA_ERROR_NOT_READY, otherwise).
  static absl::StatusOr<absl::Duration> Elapsed(const CudaEvent& start, const CudaEvent& end);

  CUevent get() const { return event_; }
  bool timing() const { return timing_ == Timing::kOn; }
  CudaContext& context() const { return *user_.context(); }

 private:
  CudaEvent(ContextUser user, CUevent event, Timing timing)
      : user_(std::move(user)), event_(event), timing_(timing) {}
  void Destroy();

  ContextUser user_;
  CUevent event_ = nullptr;  // null once moved from
  Timing timing_ = Timing::kOn;
};

}  // namespace warpd::runtime::cuda

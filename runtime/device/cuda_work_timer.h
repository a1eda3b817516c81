// warpd runtime: the device time of GPU work a thread waits for, noted for
// the scheduler's charge (device_time.h).
//
//   CudaWorkTimer timer(stream);      // before issuing: a start event
//   ... issue the work on `stream` ...
//   timer.Issued();                    // an end event; the wait starts
//   RETURN_IF_ERROR(device.AwaitWork(...));
//   timer.Done();                      // notes (wait, device time) in the thread's ledger
//
// Events that cannot be made or recorded (a poisoned context) leave the wait
// unmeasured: nothing is noted, so the turn is charged its wall time.
// Thread-safety: one thread, like the stream's use.
#pragma once

#include <optional>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "runtime/device/cuda/cuda_event.h"
#include "runtime/device/cuda/cuda_stream.h"
#include "runtime/device/device_time.h"

namespace warpd::runtime {

class CudaWorkTimer {
 public:
  explicit CudaWorkTimer(cuda::CudaStream& stream) : stream_(stream) {
    absl::StatusOr<cuda::CudaEvent> e = cuda::CudaEvent::Create(stream.context());
    if (e.ok() && e->Record(stream).ok()) start_ = *std::move(e);
  }

  void Issued() {
    waiting_since_ = absl::Now();
    if (!start_) return;
    absl::StatusOr<cuda::CudaEvent> e = cuda::CudaEvent::Create(stream_.context());
    if (e.ok() && e->Record(stream_).ok()) end_ = *std::move(e);
  }

  // The work is complete (its wait returned OK).
  void Done() {
    if (!start_ || !end_) return;
    absl::StatusOr<absl::Duration> device = cuda::CudaEvent::Elapsed(*start_, *end_);
    if (device.ok()) ThisThreadDeviceTime().Add(absl::Now() - waiting_since_, *device);
  }

 private:
  cuda::CudaStream& stream_;
  std::optional<cuda::CudaEvent> start_, end_;
  absl::Time waiting_since_ = absl::Now();
};

}  // namespace warpd::runtime

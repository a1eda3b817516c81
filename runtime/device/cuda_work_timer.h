// warpd runtime: the device time of GPU work a thread waits for, noted for
// the scheduler's charge (device_time.h).
//
//   CudaWorkTimer timer(lease);       // before issuing: a start event on the lease's stream
//   ... issue the work on lease.stream() ...
//   timer.Issued();                    // an end event after the work
//   RETURN_IF_ERROR(device.AwaitWork(...));
//   timer.Done();                      // notes (wait, device time) in the thread's ledger
//
// The events are the stream's own (StreamPool::Lease::TimingEvents), made
// once per pooled stream. Events that cannot be made or recorded (a
// poisoned context) leave the wait unmeasured: nothing is noted, so the
// turn is charged its wall time.
// Thread-safety: one thread, like the lease.
#pragma once

#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "runtime/device/cuda/cuda_event.h"
#include "runtime/device/cuda/cuda_stream.h"
#include "runtime/device/cuda/stream_pool.h"
#include "runtime/device/device_time.h"

namespace warpd::runtime {

class CudaWorkTimer {
 public:
  explicit CudaWorkTimer(cuda::StreamPool::Lease& lease) : stream_(lease.stream()) {
    absl::StatusOr<std::pair<cuda::CudaEvent*, cuda::CudaEvent*>> events = lease.TimingEvents();
    if (events.ok() && events->first->Record(stream_).ok()) events_ = *events;
  }

  // The work is issued: the end event follows it. (The wait is measured
  // from the start event, as the device time is: host time spent issuing
  // is then in one of them only.)
  void Issued() {
    if (events_.second != nullptr && !events_.second->Record(stream_).ok()) events_ = {};
  }

  // The work is complete (its wait returned OK).
  void Done() {
    if (events_.first == nullptr) return;
    absl::StatusOr<absl::Duration> device = cuda::CudaEvent::Elapsed(*events_.first, *events_.second);
    if (device.ok()) ThisThreadDeviceTime().Add(absl::Now() - waiting_since_, *device);
  }

 private:
  cuda::CudaStream& stream_;
  std::pair<cuda::CudaEvent*, cuda::CudaEvent*> events_{nullptr, nullptr};
  const absl::Time waiting_since_ = absl::Now();  // when the start event was recorded
};

}  // namespace warpd::runtime

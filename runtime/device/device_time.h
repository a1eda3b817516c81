// warpd runtime: what a thread's waits for device work stood for on the
// device, so fair share charges device time (DESIGN.md section 6).
//
// A scheduler turn (exec/scheduler.h) runs on one executor thread, and a
// GPU's work blocks that thread until it is done (CudaDevice::AwaitWork).
// The turn's wall time then holds, besides host work, the time the thread
// waited, which also counts other tenants' kernels the GPU ran meanwhile.
// The device notes each wait here: its wall time, and the device time of
// the work waited for, from events recorded around it. The scheduler
// resets the ledger before a turn and charges
//   wall time - waited + device time.
// A wait whose device time could not be measured (no events) is not noted,
// so it is charged as wall time. The CPU device notes nothing.
//
//   DeviceTimeLedger& ledger = ThisThreadDeviceTime();
//   ledger = {};                       // a turn starts
//   ... RunKernel notes ledger.Add(waited, device) ...
//   charge = ledger.Charge(wall);
//
// Thread-safety: one ledger per thread (thread_local).
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/time/time.h"

namespace warpd::runtime {

struct DeviceTimeLedger {
  int64_t waited_ns = 0;  // wall time spent waiting for device work
  int64_t device_ns = 0;  // the device time of that work

  void Add(absl::Duration waited, absl::Duration device) {
    waited_ns += std::max<int64_t>(absl::ToInt64Nanoseconds(waited), 0);
    device_ns += std::max<int64_t>(absl::ToInt64Nanoseconds(device), 0);
  }
  // A turn of `wall_ns` with these waits: the waits at the device's time.
  int64_t Charge(int64_t wall_ns) const { return std::max<int64_t>(wall_ns - waited_ns + device_ns, 0); }
};

// The calling thread's ledger.
DeviceTimeLedger& ThisThreadDeviceTime();

}  // namespace warpd::runtime

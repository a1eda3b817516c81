// warpd runtime: a timer thread that stops launches running past their limit.
//
// Generated kernels check their launch context's `cancel` flag at every loop
// back-edge and before every thread body (docs/launch_abi.md), so storing a
// non-zero value there stops a runaway kernel (an untrusted `while True:`)
// within one loop iteration per thread.
//
//   uint64_t token = watchdog.Arm(absl::Now() + limit, &ctx.cancel, kCancelTimeout);
//   RunKernel(&ctx);
//   watchdog.Disarm(token);  // before ctx goes away
//
// Thread-safe. Disarm() guarantees the watchdog no longer touches the flag.
#pragma once

#include <cstdint>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace warpd::runtime {

class Watchdog {
 public:
  Watchdog();
  ~Watchdog();  // stops the timer thread
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // At `deadline`, atomically stores `value` into *flag unless disarmed first.
  // `flag` must stay valid until Disarm(token) returns.
  uint64_t Arm(absl::Time deadline, int32_t* flag, int32_t value);
  void Disarm(uint64_t token);

 private:
  struct Timer {
    absl::Time deadline;
    int32_t* flag;
    int32_t value;
  };
  void Loop();

  absl::Mutex mu_;
  std::map<uint64_t, Timer> timers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_token_ ABSL_GUARDED_BY(mu_) = 1;
  // When the loop wakes next on its own; a timer due before it wakes the
  // loop (bumping `wakes_`), a later one does not: a launch arms and
  // disarms a timer, and waking a thread each time would cost every launch.
  absl::Time sleeps_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t wakes_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace warpd::runtime

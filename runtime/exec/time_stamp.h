// warpd runtime: the times at which a session's streams reached points of
// their work (Warp's timing events: wp.Event(enable_timing=True) and
// wp.get_event_elapsed_time).
//
// A TimeStamp command stores, when its stream runs it, the time in one of
// its session's TimeSlots; a Synchronize reads slots back. Commands run one
// after another and each returns once its work has finished on the device
// (a GPU's too: exec/launch.h), so the stamp is the time the work queued
// before it finished: the elapsed time between two stamps of one stream is
// that work's time, with the daemon's scheduling in it (microseconds).
//
//   auto slots = std::make_shared<TimeSlots>();
//   batch.push_back(MakeTimeStamp(slots, 3, /*tag=*/17));
//   ... once the stream ran it: slots->Read(3) is {ns > 0, 17}
//
// A slot keeps the last stamp's time and tag: the client tags each record,
// so a slot it reused while an older stamp was still queued (on another
// stream) shows whose time it holds. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "runtime/exec/command.h"

namespace warpd::runtime {

class TimeSlots {
 public:
  // Slots per session: the timing events a client keeps at once.
  static constexpr uint32_t kSlots = 4096;

  struct Entry {
    int64_t ns = 0;    // monotonic clock; 0: never stamped
    uint64_t tag = 0;  // the stamp's, so a reader knows whose time it is
  };
  void Stamp(uint32_t slot, uint64_t tag) ABSL_LOCKS_EXCLUDED(mu_);
  Entry Read(uint32_t slot) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::array<Entry, kSlots> slots_ ABSL_GUARDED_BY(mu_){};
};

// Stamps `slot` (< TimeSlots::kSlots: the caller checks) of `slots` with
// `tag` when run.
std::unique_ptr<Command> MakeTimeStamp(std::shared_ptr<TimeSlots> slots, uint32_t slot, uint64_t tag);

}  // namespace warpd::runtime

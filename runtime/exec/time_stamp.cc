#include "runtime/exec/time_stamp.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"

namespace warpd::runtime {

void TimeSlots::Stamp(uint32_t slot, uint64_t tag) {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  absl::MutexLock lock(&mu_);
  slots_[slot] = Entry{std::max<int64_t>(now, 1), tag};
}

TimeSlots::Entry TimeSlots::Read(uint32_t slot) const {
  absl::MutexLock lock(&mu_);
  return slots_[slot];
}

namespace {

class TimeStamp final : public Command {
 public:
  TimeStamp(std::shared_ptr<TimeSlots> slots, uint32_t slot, uint64_t tag)
      : slots_(std::move(slots)), slot_(slot), tag_(tag) {}
  absl::Status Execute(Device&) override {
    slots_->Stamp(slot_, tag_);
    return absl::OkStatus();
  }
  std::string Describe() const override { return absl::StrCat("time stamp ", slot_); }

 private:
  const std::shared_ptr<TimeSlots> slots_;
  const uint32_t slot_;
  const uint64_t tag_;
};

}  // namespace

std::unique_ptr<Command> MakeTimeStamp(std::shared_ptr<TimeSlots> slots, uint32_t slot, uint64_t tag) {
  return std::make_unique<TimeStamp>(std::move(slots), slot, tag);
}

}  // namespace warpd::runtime

#include "runtime/exec/time_stamp.h"

#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"
#include "runtime/exec/scheduler.h"
#include "runtime/exec/stream.h"

namespace warpd::runtime {
namespace {

// Sleeps for a while: work the stamps around it time.
class Nap final : public Command {
 public:
  explicit Nap(absl::Duration d) : d_(d) {}
  absl::Status Execute(Device&) override {
    absl::SleepFor(d_);
    return absl::OkStatus();
  }
  std::string Describe() const override { return "nap"; }

 private:
  absl::Duration d_;
};

class Fails final : public Command {
 public:
  absl::Status Execute(Device&) override { return absl::InternalError("broken on purpose"); }
  std::string Describe() const override { return "fails"; }
};

TEST(TimeStampTest, StampsTimeTheWorkBetweenThemInStreamOrder) {
  CpuDevice cpu{1};
  StreamScheduler scheduler{{.threads = 1}};
  std::shared_ptr<Stream> stream = Stream::Create(&cpu, scheduler.CreateGroup("t"));
  auto slots = std::make_shared<TimeSlots>();
  EXPECT_EQ(slots->Read(5).ns, 0);  // never stamped
  std::vector<std::unique_ptr<Command>> batch;
  batch.push_back(MakeTimeStamp(slots, 5, 100));
  batch.push_back(std::make_unique<Nap>(absl::Milliseconds(40)));
  batch.push_back(MakeTimeStamp(slots, TimeSlots::kSlots - 1, 101));
  ASSERT_TRUE(stream->Submit(std::move(batch)).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  const TimeSlots::Entry start = slots->Read(5), end = slots->Read(TimeSlots::kSlots - 1);
  EXPECT_EQ(start.tag, 100u);
  EXPECT_EQ(end.tag, 101u);
  EXPECT_GT(start.ns, 0);
  EXPECT_GE(end.ns - start.ns, 40'000'000);  // the nap between them
  EXPECT_LT(end.ns - start.ns, 10'000'000'000);
  // A later stamp replaces the slot's time and tag.
  std::vector<std::unique_ptr<Command>> again;
  again.push_back(MakeTimeStamp(slots, 5, 102));
  ASSERT_TRUE(stream->Submit(std::move(again)).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(slots->Read(5).tag, 102u);
  EXPECT_GE(slots->Read(5).ns, end.ns);
  // After a failed command the stream skips its stamp: the slot keeps the old one.
  std::vector<std::unique_ptr<Command>> failing;
  failing.push_back(std::make_unique<Fails>());
  failing.push_back(MakeTimeStamp(slots, 5, 103));
  ASSERT_TRUE(stream->Submit(std::move(failing)).ok());
  EXPECT_FALSE(stream->Synchronize().ok());
  EXPECT_EQ(slots->Read(5).tag, 102u);
}

}  // namespace
}  // namespace warpd::runtime

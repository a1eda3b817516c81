#include "runtime/exec/stream_wait.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"
#include "runtime/exec/scheduler.h"
#include "runtime/exec/stream.h"

namespace warpd::runtime {
namespace {

// What ran, in order, across streams.
class Log {
 public:
  void Add(const std::string& what) {
    absl::MutexLock lock(&mu_);
    entries_.push_back(what);
  }
  std::vector<std::string> entries() const {
    absl::MutexLock lock(&mu_);
    return entries_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> entries_;
};

class Record final : public Command {
 public:
  Record(Log* log, std::string what) : log_(log), what_(std::move(what)) {}
  absl::Status Execute(Device&) override {
    log_->Add(what_);
    return absl::OkStatus();
  }
  std::string Describe() const override { return "record " + what_; }

 private:
  Log* log_;
  std::string what_;
};

// Runs until the test opens it (holding a scheduler thread meanwhile).
class Gate final : public Command {
 public:
  explicit Gate(absl::Notification* open) : open_(open) {}
  absl::Status Execute(Device&) override {
    open_->WaitForNotification();
    return absl::OkStatus();
  }
  std::string Describe() const override { return "gate"; }

 private:
  absl::Notification* open_;
};

class StreamWaitTest : public ::testing::Test {
 protected:
  std::shared_ptr<Stream> MakeStream() { return Stream::Create(&cpu_, group_); }
  static std::vector<std::unique_ptr<Command>> Batch(std::unique_ptr<Command> a, std::unique_ptr<Command> b = nullptr) {
    std::vector<std::unique_ptr<Command>> out;
    out.push_back(std::move(a));
    if (b != nullptr) out.push_back(std::move(b));
    return out;
  }

  CpuDevice cpu_{1};
  // Two threads, both usable by one group (one session's streams).
  StreamScheduler scheduler_{{.threads = 2, .max_threads_per_group = 2}};
  std::shared_ptr<StreamGroup> group_ = scheduler_.CreateGroup("test");
  Log log_;
};

TEST_F(StreamWaitTest, AWaitingStreamRunsOnlyOnceTheOtherGetsThereAndHoldsNoThread) {
  std::shared_ptr<Stream> a = MakeStream(), b = MakeStream(), c = MakeStream();
  absl::Notification open;
  absl::StatusOr<uint64_t> a_last =
      a->Submit(Batch(std::make_unique<Gate>(&open), std::make_unique<Record>(&log_, "a")));
  ASSERT_TRUE(a_last.ok());
  ASSERT_TRUE(b->Submit(Batch(MakeStreamWait(a, *a_last), std::make_unique<Record>(&log_, "b"))).ok());
  // Two scheduler threads: a's gate holds one; b is parked on no thread, so
  // c runs on the other.
  ASSERT_TRUE(c->Submit(Batch(std::make_unique<Record>(&log_, "c"))).ok());
  c->WaitIdle();
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(log_.entries(), std::vector<std::string>{"c"});
  EXPECT_EQ(b->completed(), 0u);
  open.Notify();
  EXPECT_TRUE(b->Synchronize().ok());
  EXPECT_EQ(log_.entries(), (std::vector<std::string>{"c", "a", "b"}));
  EXPECT_TRUE(a->Synchronize().ok());
}

TEST_F(StreamWaitTest, AWaitAlreadyMetDoesNotPark) {
  std::shared_ptr<Stream> a = MakeStream(), b = MakeStream();
  absl::StatusOr<uint64_t> a_last = a->Submit(Batch(std::make_unique<Record>(&log_, "a")));
  ASSERT_TRUE(a_last.ok());
  EXPECT_TRUE(a->Synchronize().ok());
  ASSERT_TRUE(b->Submit(Batch(MakeStreamWait(a, *a_last), std::make_unique<Record>(&log_, "b"))).ok());
  EXPECT_TRUE(b->Synchronize().ok());
  EXPECT_EQ(log_.entries(), (std::vector<std::string>{"a", "b"}));
}

TEST_F(StreamWaitTest, SubmitsToAParkedStreamQueueBehindTheWait) {
  std::shared_ptr<Stream> a = MakeStream(), b = MakeStream();
  absl::Notification open;
  absl::StatusOr<uint64_t> a_last = a->Submit(Batch(std::make_unique<Gate>(&open)));
  ASSERT_TRUE(a_last.ok());
  ASSERT_TRUE(b->Submit(Batch(MakeStreamWait(a, *a_last))).ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(b->Submit(Batch(std::make_unique<Record>(&log_, "b"))).ok());
  absl::SleepFor(absl::Milliseconds(10));
  EXPECT_TRUE(log_.entries().empty());
  open.Notify();
  EXPECT_TRUE(b->Synchronize().ok());
  EXPECT_EQ(log_.entries().size(), 5u);
}

TEST_F(StreamWaitTest, CancellingEitherStreamLeavesNothingWaitingForever) {
  // The waiting stream cancelled (its session closing): it is idle at once.
  std::shared_ptr<Stream> a = MakeStream(), b = MakeStream();
  absl::Notification open;
  absl::StatusOr<uint64_t> a_last = a->Submit(Batch(std::make_unique<Gate>(&open), std::make_unique<Record>(&log_, "a")));
  ASSERT_TRUE(a_last.ok());
  ASSERT_TRUE(b->Submit(Batch(MakeStreamWait(a, *a_last), std::make_unique<Record>(&log_, "b"))).ok());
  absl::SleepFor(absl::Milliseconds(10));
  b->Cancel();
  EXPECT_EQ(b->queued(), 0u);
  // The target's queue dropped: whoever waited for it goes on.
  std::shared_ptr<Stream> d = MakeStream();
  ASSERT_TRUE(d->Submit(Batch(MakeStreamWait(a, *a_last), std::make_unique<Record>(&log_, "d"))).ok());
  std::thread cancel([&] { a->Cancel(); });  // waits for the running gate
  absl::SleepFor(absl::Milliseconds(10));
  open.Notify();
  cancel.join();
  EXPECT_TRUE(d->Synchronize().ok());
  EXPECT_EQ(log_.entries(), std::vector<std::string>{"d"});  // a's record was dropped, b's never ran
}

TEST_F(StreamWaitTest, AGoneTargetHasNothingToWaitFor) {
  std::shared_ptr<Stream> b = MakeStream();
  std::unique_ptr<Command> wait;
  {
    std::shared_ptr<Stream> a = MakeStream();
    ASSERT_TRUE(a->Submit(Batch(std::make_unique<Record>(&log_, "a"))).ok());
    a->WaitIdle();
    wait = MakeStreamWait(a, 5);  // never reached: a goes first
  }
  ASSERT_TRUE(b->Submit(Batch(std::move(wait), std::make_unique<Record>(&log_, "b"))).ok());
  EXPECT_TRUE(b->Synchronize().ok());
  EXPECT_EQ(log_.entries(), (std::vector<std::string>{"a", "b"}));
}

TEST_F(StreamWaitTest, AStreamThatGoesReleasesWhoeverWaitsForIt) {
  bool called = false;
  {
    std::shared_ptr<Stream> a = MakeStream();
    a->WhenReached(3, [&called] { called = true; });  // never reached
    EXPECT_FALSE(called);
  }
  EXPECT_TRUE(called);
}

}  // namespace
}  // namespace warpd::runtime

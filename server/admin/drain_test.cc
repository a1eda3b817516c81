// Tests of the drain (drain.h): new sessions are refused, the wait ends
// when running and queued commands have run (and not before), at the
// deadline, or at Stop; `exit` runs after `done`.
#include "server/admin/drain.h"

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "runtime/device/cpu_device.h"
#include "runtime/exec/command.h"
#include "runtime/exec/scheduler.h"
#include "runtime/memory/memory_account.h"

namespace warpd::server::admin {
namespace {

class FnCommand final : public runtime::Command {
 public:
  explicit FnCommand(std::function<absl::Status()> fn) : fn_(std::move(fn)) {}
  absl::Status Execute(runtime::Device&) override { return fn_(); }
  std::string Describe() const override { return "test"; }

 private:
  std::function<absl::Status()> fn_;
};

class DrainTest : public ::testing::Test {
 protected:
  // Opens a session and queues `n` commands on its CPU stream; the first
  // waits for `gate`. Each finished command counts in `ran_`.
  void Busy(int n, absl::Notification* gate) {
    absl::StatusOr<std::string> token = sessions_.Open(tenant_, "busy", "cred");
    ASSERT_TRUE(token.ok()) << token.status();
    auto session = sessions_.Get(*token, *tenant_);
    ASSERT_TRUE(session.ok());
    auto stream = (*session)->StreamFor(&cpu_);
    ASSERT_TRUE(stream.ok()) << stream.status();
    std::vector<std::unique_ptr<runtime::Command>> batch;
    for (int i = 0; i < n; ++i) {
      batch.push_back(std::make_unique<FnCommand>([this, gate, i] {
        if (i == 0) gate->WaitForNotification();
        ran_.fetch_add(1);
        return absl::OkStatus();
      }));
    }
    ASSERT_TRUE((*stream)->Submit(std::move(batch)).ok());
  }

  absl::Notification gate;  // outlives the sessions, whose commands wait for it
  std::shared_ptr<Tenant> tenant_ = std::make_shared<Tenant>(
      "t", 1, TenantLimits{}, runtime::MemoryAccount::Create("the daemon", uint64_t{1} << 30));
  runtime::CpuDevice cpu_{1};
  runtime::StreamScheduler scheduler_{runtime::StreamScheduler::Options{.threads = 2}};
  SessionManager sessions_{&scheduler_, runtime::SegmentPoolOptions{}};
  std::atomic<int> ran_{0};
};

TEST_F(DrainTest, WaitIdleWaitsForQueuedWorkAndEndsAtTheDeadline) {
  absl::Notification stop;
  // No sessions, or sessions with no work: idle at once.
  EXPECT_TRUE(Drain::WaitIdle(sessions_, absl::Now() + absl::Seconds(5), stop));
  Busy(3, &gate);
  const absl::Time t0 = absl::Now();
  EXPECT_FALSE(Drain::WaitIdle(sessions_, t0 + absl::Milliseconds(200), stop));
  EXPECT_GE(absl::Now() - t0, absl::Milliseconds(200));
  EXPECT_EQ(ran_.load(), 0);
  std::thread open_gate([&] {
    absl::SleepFor(absl::Milliseconds(100));
    gate.Notify();
  });
  EXPECT_TRUE(Drain::WaitIdle(sessions_, absl::Now() + absl::Seconds(30), stop));
  EXPECT_EQ(ran_.load(), 3);  // every queued command ran before the wait ended
  open_gate.join();
}

TEST_F(DrainTest, StopEndsTheWait) {
  absl::Notification stop;
  Busy(1, &gate);
  std::thread stopper([&] {
    absl::SleepFor(absl::Milliseconds(100));
    stop.Notify();
  });
  const absl::Time t0 = absl::Now();
  EXPECT_FALSE(Drain::WaitIdle(sessions_, t0 + absl::Seconds(60), stop));
  EXPECT_LT(absl::Now() - t0, absl::Seconds(10));
  stopper.join();
  gate.Notify();
}

TEST_F(DrainTest, StartRefusesSessionsWaitsThenExits) {
  absl::Notification done_called, exited;
  std::atomic<bool> exit_after_done{false};
  Busy(2, &gate);
  Drain::Result result;
  {
    Drain drain(&sessions_, [&] {
      exit_after_done = done_called.HasBeenNotified();
      exited.Notify();
    });
    ASSERT_TRUE(drain.Start(absl::Seconds(30), [&](Drain::Result r) {
      result = r;
      done_called.Notify();
    }).ok());
    EXPECT_TRUE(drain.started());
    EXPECT_EQ(drain.Start(absl::Seconds(1), [](Drain::Result) {}).code(), absl::StatusCode::kFailedPrecondition);
    absl::StatusOr<std::string> refused = sessions_.Open(tenant_, "late", "cred");
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_NE(refused.status().message().find("draining"), std::string_view::npos) << refused.status();
    EXPECT_EQ(tenant_->sessions().used(), 1u);  // the refused one took no slot
    EXPECT_FALSE(exited.WaitForNotificationWithTimeout(absl::Milliseconds(200)));  // work still runs
    gate.Notify();
    ASSERT_TRUE(exited.WaitForNotificationWithTimeout(absl::Seconds(30)));
  }
  EXPECT_TRUE(exit_after_done.load());
  EXPECT_TRUE(result.idle);
  EXPECT_EQ(result.sessions, 1u);
  EXPECT_EQ(ran_.load(), 2);
}

}  // namespace
}  // namespace warpd::server::admin

#include "compiler/compile_queue.h"

#include <gtest/gtest.h>

#include <atomic>

#include "absl/synchronization/notification.h"

namespace warpd::compiler {
namespace {

TEST(CompileQueueTest, JobsRunOnTheQueuesThreadsAtOnce) {
  CompileQueue queue(2);
  EXPECT_EQ(queue.num_threads(), 2);
  // Two jobs that each wait for the other can only finish side by side.
  absl::Notification a, b, done_a, done_b;
  queue.Schedule([&] {
    a.Notify();
    b.WaitForNotification();
    done_a.Notify();
  });
  queue.Schedule([&] {
    b.Notify();
    a.WaitForNotification();
    done_b.Notify();
  });
  EXPECT_TRUE(done_a.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(done_b.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST(CompileQueueTest, DestructorRunsWhatWasScheduled) {
  std::atomic<int> ran{0};
  {
    CompileQueue queue(1);
    absl::Notification release;
    queue.Schedule([&] { release.WaitForNotification(); ++ran; });
    for (int i = 0; i < 10; ++i) queue.Schedule([&] { ++ran; });
    release.Notify();
  }
  EXPECT_EQ(ran.load(), 11);
}

TEST(CompileQueueTest, AtLeastOneThread) { EXPECT_EQ(CompileQueue(0).num_threads(), 1); }

}  // namespace
}  // namespace warpd::compiler

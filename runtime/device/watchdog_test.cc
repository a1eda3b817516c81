#include "runtime/device/watchdog.h"

#include <thread>

#include "gtest/gtest.h"

namespace warpd::runtime {
namespace {

int32_t Load(const int32_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

TEST(WatchdogTest, FiresAtDeadline) {
  Watchdog w;
  int32_t flag = 0;
  absl::Time start = absl::Now();
  w.Arm(start + absl::Milliseconds(30), &flag, 2);
  while (Load(&flag) == 0 && absl::Now() - start < absl::Seconds(5)) std::this_thread::yield();
  EXPECT_EQ(Load(&flag), 2);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(30));
}

TEST(WatchdogTest, DisarmedTimerNeverFires) {
  Watchdog w;
  int32_t flag = 0;
  uint64_t t = w.Arm(absl::Now() + absl::Milliseconds(20), &flag, 2);
  w.Disarm(t);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(Load(&flag), 0);
}

TEST(WatchdogTest, EarlierTimerArmedLaterStillFiresFirst) {
  Watchdog w;
  int32_t late = 0, early = 0;
  w.Arm(absl::Now() + absl::Seconds(30), &late, 1);  // the loop now sleeps ~30 s
  w.Arm(absl::Now() + absl::Milliseconds(20), &early, 1);
  absl::Time start = absl::Now();
  while (Load(&early) == 0 && absl::Now() - start < absl::Seconds(5)) std::this_thread::yield();
  EXPECT_EQ(Load(&early), 1);
  EXPECT_EQ(Load(&late), 0);
}

}  // namespace
}  // namespace warpd::runtime
